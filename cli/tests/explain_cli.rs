//! `svcnet explain`: the finding codes for the classic "my Service does not work" cases.

mod common;

use serde_json::{Value, json};

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": "shop"}, "spec": spec})
}

fn pod(name: &str, labels: Value, ready: bool, ports: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": "shop", "labels": labels},
           "spec": {"nodeName": "node-a", "containers": [{"name": "c", "ports": ports}]},
           "status": {"phase": "Running", "podIP": "10.0.0.5",
                      "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]}})
}

fn slice(service: &str, ready: bool) -> Value {
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": format!("{service}-x"), "namespace": "shop",
                        "labels": {"kubernetes.io/service-name": service}},
           "addressType": "IPv4",
           "endpoints": [{"addresses": ["10.0.0.5"], "conditions": {"ready": ready}, "nodeName": "node-a"}],
           "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]})
}

fn web(target: Value) -> Value {
    service(
        "web",
        json!({"type": "ClusterIP", "clusterIP": "10.96.0.10", "selector": {"app": "web"},
               "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": target}]}),
    )
}

/// The JSON answer of `svcnet explain SVC --output json EXTRA... INPUT` over `items`.
fn run_explain(items: Vec<Value>, svc: &str, extra: &[&str]) -> Value {
    let dir = common::scratch_dir("explain");
    let input = common::write_json(
        &dir,
        "in.json",
        &json!({"apiVersion": "v1", "kind": "List", "items": items}),
    );
    let mut args = vec!["explain", svc, "--output", "json"];
    args.extend_from_slice(extra);
    args.push(&input);
    let run = common::svcnet(&args);
    let _ = std::fs::remove_dir_all(&dir);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = common::first_json(&run.stdout).expect("json");
    assert_eq!(v["service"], svc);
    v
}

/// The finding codes of `explain`.
fn explain(items: Vec<Value>, svc: &str, extra: &[&str]) -> Vec<String> {
    findings(items, svc, extra).into_iter().map(|f| f.0).collect()
}

/// The Pod `web-1` (`app=web`), ready or not, with container `ports`.
fn web_pod(ready: bool, ports: Value) -> Value {
    pod("web-1", json!({"app": "web"}), ready, ports)
}

/// `svc` with the Pod `web-1` behind it and its EndpointSlice, both ready or both not.
fn backed(svc: Value, ready: bool) -> Vec<Value> {
    let name = svc["metadata"]["name"].as_str().unwrap_or_default().to_owned();
    vec![svc, web_pod(ready, json!([])), slice(&name, ready)]
}

#[test]
fn healthy() {
    let codes = explain(backed(web(json!(8080)), true), "shop/web", &[]);
    assert_eq!(codes, ["Healthy"]);
}

#[test]
fn service_not_found() {
    assert_eq!(explain(vec![], "shop/web", &[]), ["ServiceNotFound"]);
}

#[test]
fn selector_mismatch() {
    let codes = explain(
        vec![
            web(json!(8080)),
            pod("web-1", json!({"app": "webb"}), true, json!([])),
        ],
        "shop/web",
        &[],
    );
    assert_eq!(codes[0], "SelectorMatchesNoPods");
}

#[test]
fn no_ready_pods() {
    let codes = explain(backed(web(json!(8080)), false), "shop/web", &[]);
    assert_eq!(codes, ["NoReadyPods"]);
}

#[test]
fn named_port_mismatch() {
    // The Service targets port "http"; the Pod's container port is named `port_name`.
    let codes = |port_name: &str| {
        let ports = json!([{"name": port_name, "containerPort": 8080}]);
        let items = vec![web(json!("http")), web_pod(true, ports), slice("web", true)];
        explain(items, "shop/web", &[])
    };
    assert_eq!(codes("web"), ["NamedPortNotDeclared"]);
    assert_eq!(codes("http"), ["Healthy"]);
}

#[test]
fn selector_less() {
    let svc = service(
        "legacy",
        json!({"type": "ClusterIP", "clusterIP": "10.96.0.11", "ports": [{"port": 80, "protocol": "TCP"}]}),
    );
    assert_eq!(
        explain(vec![svc.clone()], "shop/legacy", &[]),
        ["NoSelector", "NoEndpointSlices"]
    );
    assert_eq!(
        explain(vec![svc, slice("legacy", true)], "shop/legacy", &[]),
        ["NoSelector", "Healthy"]
    );
}

#[test]
fn external_name() {
    let svc = service(
        "ext",
        json!({"type": "ExternalName", "externalName": "db.example.com"}),
    );
    assert_eq!(explain(vec![svc], "shop/ext", &[]), ["ExternalName"]);
}

#[test]
fn headless() {
    let svc = service(
        "db",
        json!({"type": "ClusterIP", "clusterIP": "None", "selector": {"app": "web"},
               "ports": [{"port": 5432, "protocol": "TCP"}]}),
    );
    let codes = explain(backed(svc, true), "shop/db", &[]);
    assert_eq!(codes, ["Headless", "Healthy"]);
}

#[test]
fn local_policy_without_local_endpoints() {
    let svc = service(
        "web",
        json!({"type": "ClusterIP", "clusterIP": "10.96.0.10", "selector": {"app": "web"},
               "internalTrafficPolicy": "Local",
               "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}),
    );
    let items = backed(svc, true);
    assert_eq!(
        explain(items.clone(), "shop/web", &["--node", "node-b"]),
        ["NoLocalEndpoints"]
    );
    assert_eq!(explain(items, "shop/web", &["--node", "node-a"]), ["Healthy"]);
}

#[test]
fn text_output_reads_as_an_answer() {
    let run = common::svcnet(&[
        "explain",
        "payments/gateway-ext",
        "../examples/clusters/shop.yaml",
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("ExternalName"), "{}", run.stdout);
}

/// The findings of `explain --output json` as (code, message, objects).
fn findings(items: Vec<Value>, svc: &str, extra: &[&str]) -> Vec<(String, String, Vec<String>)> {
    let v = run_explain(items, svc, extra);
    v["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .map(|f| {
            (
                f["code"].as_str().unwrap_or_default().to_owned(),
                f["message"].as_str().unwrap_or_default().to_owned(),
                f["objects"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|o| o.as_str().map(str::to_owned))
                    .collect(),
            )
        })
        .collect()
}

fn node_port_web(etp: &str) -> Value {
    service(
        "web",
        json!({"type": "NodePort", "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
               "selector": {"app": "web"}, "externalTrafficPolicy": etp,
               "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080, "nodePort": 30080}]}),
    )
}

fn node(name: &str, ip: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
           "status": {"addresses": [{"type": "InternalIP", "address": ip}]}})
}

#[test]
fn populated_slices_trace_each_frontend_through_the_node_rules() {
    let items = backed(node_port_web("Cluster"), true);
    let f = findings(
        items,
        "shop/web",
        &[
            "--node",
            "node-b",
            "--node-ip",
            "192.168.0.3",
            "--cluster-cidr",
            "10.0.0.0/8",
        ],
    );
    let codes: Vec<&str> = f.iter().map(|x| x.0.as_str()).collect();
    assert_eq!(codes, ["Healthy", "PacketTrace", "PacketTrace"], "{f:?}");
    let (_, cluster_ip, objects) = &f[1];
    assert!(
        cluster_ip.contains("to the ClusterIP 10.96.0.10:80/TCP (spec.clusterIPs, spec.ports[0] \"http\") is DNATed to one of 10.0.0.5:8080, source address kept"),
        "{cluster_ip}"
    );
    assert!(
        cluster_ip.starts_with("iptables on node node-b: a packet from a pod (10.0.0.1"),
        "{cluster_ip}"
    );
    assert_eq!(
        objects,
        &["Service shop/web", "EndpointSlice shop/web-x", "Node node-b"]
    );
    assert!(
        f[2].1.contains("to the NodePort 192.168.0.3:30080/TCP (spec.ports[0].nodePort) is DNATed to one of 10.0.0.5:8080 and masqueraded"),
        "{}",
        f[2].1
    );
}

/// The message of the first finding that traces the NodePort.
fn node_port_trace(f: &[(String, String, Vec<String>)]) -> &str {
    &f.iter()
        .find(|x| x.1.contains("NodePort"))
        .expect("a NodePort trace")
        .1
}

#[test]
fn local_policy_drops_in_iptables_and_falls_back_in_ipvs() {
    let mut items = backed(node_port_web("Local"), true);
    items.push(node("node-b", "192.168.0.3"));
    // The node IP comes from the Node's InternalIP.
    let ipt = findings(items.clone(), "shop/web", &["--node", "node-b"]);
    let trace = node_port_trace(&ipt);
    assert!(
        trace.ends_with("is dropped by filter KUBE-EXTERNAL-SERVICES"),
        "{trace}"
    );
    let ipvs = findings(items, "shop/web", &["--node", "node-b", "--backend", "ipvs"]);
    assert!(
        ipvs[0].0 == "NoLocalEndpoints" && ipvs[0].1.contains("in IPVS mode"),
        "{ipvs:?}"
    );
    let trace = node_port_trace(&ipvs);
    assert!(
        trace.contains("is DNATed to one of 10.0.0.5:8080, source address kept"),
        "{trace}"
    );
}

#[test]
fn no_trace_without_slices_or_node_address() {
    let codes = explain(
        vec![node_port_web("Cluster"), web_pod(true, json!([]))],
        "shop/web",
        &["--node", "node-b", "--node-ip", "192.168.0.3"],
    );
    assert_eq!(codes, ["NoEndpointSlices"]);
    let codes = explain(
        backed(node_port_web("Cluster"), true),
        "shop/web",
        &["--node", "node-b"],
    );
    assert_eq!(
        codes,
        ["Healthy"],
        "no Node object, no --node-ip: nothing to trace"
    );
}
