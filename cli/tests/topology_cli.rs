//! `svcnet hints` and `svcnet endpoints` beyond the conformance cases: explanations, text
//! output, strict mode, errors and exit codes.

mod common;

use serde_json::{Value, json};

fn node(name: &str, zone: &str, cpu: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
           "status": {"allocatable": {"cpu": cpu}, "conditions": [{"type": "Ready", "status": "True"}]}})
}

fn service(annotations: Value, spec_extra: Value) -> Value {
    let mut spec = json!({"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "protocol": "TCP"}],
                          "ipFamilies": ["IPv4"], "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"]});
    if let (Some(s), Some(extra)) = (spec.as_object_mut(), spec_extra.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": "web", "namespace": "shop", "annotations": annotations}, "spec": spec})
}

fn slice(name: &str, endpoints: Value) -> Value {
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": name, "namespace": "shop",
                        "labels": {"kubernetes.io/service-name": "web",
                                   "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}},
           "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
           "endpoints": endpoints})
}

fn ep(ip: &str, zone: &str, node: &str, hint: Option<&str>) -> Value {
    let mut e = json!({"addresses": [ip], "conditions": {"ready": true}, "zone": zone, "nodeName": node});
    if let Some(h) = hint {
        e["hints"] = json!({"forZones": [{"name": h}]});
    }
    e
}

fn list(items: Vec<Value>) -> Value {
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

fn run_json(args: &[&str], input: &Value) -> (i32, Value, String) {
    let dir = common::scratch_dir("topology-cli");
    let path = common::write_json(&dir, "in.json", input);
    let mut argv: Vec<&str> = args.to_vec();
    argv.push(&path);
    let r = common::svcnet(&argv);
    let _ = std::fs::remove_dir_all(&dir);
    (
        r.code,
        common::first_json(&r.stdout).unwrap_or(Value::Null),
        r.stdout + &r.stderr,
    )
}

/// 10 endpoints, CPU 45.5% / 45.5% / 9%, endpoints 5 / 5 / 0: Kubernetes leaves zone c short.
fn short_zone_cluster() -> Value {
    let mut eps = Vec::new();
    for i in 0..10 {
        let z = if i < 5 { "a" } else { "b" };
        eps.push(ep(&format!("10.0.0.{i}"), z, &format!("n-{z}"), None));
    }
    list(vec![
        service(json!({"service.kubernetes.io/topology-mode": "Auto"}), json!({})),
        node("n-a", "a", "455m"),
        node("n-b", "b", "455m"),
        node("n-c", "c", "90m"),
        slice("web-1", Value::Array(eps)),
    ])
}

#[test]
fn hints_explain_a_short_zone_and_strict_mode_fixes_it() {
    let input = short_zone_cluster();
    let (code, out, _) = run_json(&["hints", "--output", "json"], &input);
    assert_eq!(code, 0);
    let svc = &out["services"][0];
    assert_eq!(svc["decision"]["outcome"], "hinted");
    assert_eq!(svc["decision"]["overloadedZones"], json!(["c"]));
    assert_eq!(svc["decision"]["zones"]["c"]["hinted"], 0);
    assert_eq!(out["updated"], json!(["web-1"]));

    let (code, out, _) = run_json(&["hints", "--strict", "--output", "json"], &input);
    assert_eq!(code, 0);
    assert_eq!(out["services"][0]["decision"]["overloadedZones"], json!([]));
    assert_eq!(out["services"][0]["decision"]["zones"]["c"]["hinted"], 1);

    let (_, _, text) = run_json(&["hints"], &input);
    assert!(text.contains("zones below their minimum share"), "{text}");
    assert!(
        text.contains("ready endpoint 10.0.0.0 has no zone hint"),
        "{text}"
    );
}

#[test]
fn hints_removal_names_the_cause_and_the_event() {
    let input = list(vec![
        service(json!({"service.kubernetes.io/topology-mode": "Auto"}), json!({})),
        node("n-a", "a", "1"),
        json!({"kind": "Node", "metadata": {"name": "zoneless"},
               "status": {"allocatable": {"cpu": "1"}, "conditions": [{"type": "Ready", "status": "True"}]}}),
        slice(
            "web-1",
            json!([
                ep("10.0.0.1", "a", "n-a", Some("a")),
                ep("10.0.0.2", "b", "n-b", Some("b"))
            ]),
        ),
    ]);
    let (code, out, _) = run_json(&["hints", "--output", "json"], &input);
    assert_eq!(code, 0);
    assert_eq!(
        out["events"][0],
        json!({"type": "Warning", "reason": "TopologyAwareHintsDisabled", "service": "shop/web",
               "message": "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes, addressType: IPv4"})
    );
    let removal = out["services"][0]["removal"].as_str().unwrap_or_default();
    assert!(removal.contains("\"zoneless\""), "{removal}");
    assert!(out["slices"][0]["endpoints"][0].get("hints").is_none());
    assert_eq!(out["services"][0]["notes"][0]["note"], "hintsRemoved");
    let (_, _, text) = run_json(&["hints"], &input);
    assert!(
        text.contains("hints removed: Insufficient Node information"),
        "{text}"
    );
}

#[test]
fn hints_turned_off_say_so() {
    let input = list(vec![
        service(json!({}), json!({})),
        node("n-a", "a", "1"),
        node("n-b", "b", "1"),
        slice(
            "web-1",
            json!([
                ep("10.0.0.1", "a", "n-a", Some("a")),
                ep("10.0.0.2", "b", "n-b", Some("b"))
            ]),
        ),
        slice("other", json!([ep("10.0.9.1", "a", "n-a", Some("a"))])),
    ]);
    let mut input = input;
    input["items"][4]["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"] = json!("someone-else");
    let (code, out, _) = run_json(&["hints", "--output", "json"], &input);
    assert_eq!(code, 0);
    assert_eq!(
        out["events"][0]["message"],
        "Topology Aware Hints has been disabled, addressType: IPv4"
    );
    assert_eq!(out["updated"], json!(["web-1"]));
    // A slice another controller manages is left alone.
    assert_eq!(
        out["slices"][1]["endpoints"][0]["hints"]["forZones"][0]["name"],
        "a"
    );
}

#[test]
fn hints_reject_a_bad_cpu_quantity() {
    let input = list(vec![
        service(json!({"service.kubernetes.io/topology-mode": "Auto"}), json!({})),
        node("n-a", "a", "lots"),
    ]);
    let (code, _, all) = run_json(&["hints", "--output", "json"], &input);
    assert_eq!(code, 1);
    assert!(
        all.contains("node \"n-a\": status.allocatable.cpu: invalid quantity \"lots\""),
        "{all}"
    );
}

#[test]
fn hints_read_yaml_from_stdin() {
    let yaml = "apiVersion: v1\nkind: Service\nmetadata: {name: web, namespace: shop}\nspec:\n  selector: {app: web}\n  trafficDistribution: PreferClose\n---\napiVersion: discovery.k8s.io/v1\nkind: EndpointSlice\nmetadata:\n  name: web-1\n  namespace: shop\n  labels: {kubernetes.io/service-name: web, endpointslice.kubernetes.io/managed-by: endpointslice-controller.k8s.io}\naddressType: IPv4\nendpoints:\n- addresses: [10.0.0.1]\n  conditions: {ready: true}\n  zone: a\n";
    let r = common::svcnet_stdin(&["hints", "--output", "json", "-"], yaml.as_bytes());
    assert_eq!(r.code, 0, "{}", r.stderr);
    let out = common::first_json(&r.stdout).unwrap();
    assert_eq!(
        out["slices"][0]["endpoints"][0]["hints"]["forZones"][0]["name"],
        "a"
    );
    assert_eq!(out["services"][0]["decision"]["outcome"], "trafficDistribution");
}

#[test]
fn endpoints_use_node_hints_and_explain() {
    let mut e1 = ep("10.0.0.1", "a", "n1", Some("a"));
    e1["hints"]["forNodes"] = json!([{"name": "n1"}]);
    let mut e2 = ep("10.0.0.2", "a", "n2", Some("a"));
    e2["hints"]["forNodes"] = json!([{"name": "n2"}]);
    let input = list(vec![
        service(json!({}), json!({"trafficDistribution": "PreferSameNode"})),
        node("n1", "a", "1"),
        slice("web-1", json!([e1, e2])),
    ]);
    let (code, out, _) = run_json(&["endpoints", "--node", "n1", "--output", "json"], &input);
    assert_eq!(code, 0);
    let s = &out["services"][0];
    assert_eq!(s["servicePort"], "shop/web:http");
    assert_eq!(s["cluster"], json!(["10.0.0.1:8080"]));
    assert_eq!(s["local"], Value::Null);
    assert_eq!(s["topology"], "PreferSameNode");
    let (_, out, _) = run_json(
        &[
            "endpoints",
            "--node",
            "n1",
            "--node-hints",
            "false",
            "--output",
            "json",
        ],
        &input,
    );
    assert_eq!(
        out["services"][0]["cluster"],
        json!(["10.0.0.1:8080", "10.0.0.2:8080"])
    );
    let (_, _, text) = run_json(&["endpoints", "--node", "n1"], &input);
    assert!(
        text.contains("shop/web:http IPv4 80/TCP: node hints applied"),
        "{text}"
    );
    assert!(text.contains("local:         not used"), "{text}");
}

#[test]
fn endpoints_for_an_unknown_node_warn_and_ignore_zone_hints() {
    let input = list(vec![
        service(json!({}), json!({})),
        slice(
            "web-1",
            json!([
                ep("10.0.0.1", "a", "n1", Some("a")),
                ep("10.0.0.2", "b", "n2", Some("b"))
            ]),
        ),
    ]);
    let (code, out, all) = run_json(&["endpoints", "--node", "ghost", "--output", "json"], &input);
    assert_eq!(code, 0);
    assert!(all.contains("node \"ghost\" is not in the input"), "{all}");
    assert_eq!(
        out["services"][0]["cluster"],
        json!(["10.0.0.1:8080", "10.0.0.2:8080"])
    );
}

#[test]
fn command_line_and_input_errors_exit_2() {
    let r = common::svcnet(&["endpoints", "--output", "json", "/nonexistent"]);
    assert_eq!(r.code, 2);
    let r = common::svcnet(&["hints", "/nonexistent/file.json"]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("/nonexistent/file.json"), "{}", r.stderr);
    let r = common::svcnet_stdin(&["endpoints", "--node", "n", "-"], b"{not json");
    assert_eq!(r.code, 2);
    assert!(!r.stderr.contains("panicked"));
}

/// Issue 17 §1: kube-proxy v1.37.2 (checked with kube-oracle) programs svc1 with the two ready
/// endpoints 10.180.0.1:80 and 10.180.0.2:80 and nothing for `noip`: endpoint addresses are read
/// leniently and used in canonical form, the non-terminating copy of a duplicate address wins
/// (even over a local terminating one), and a Service without a cluster IP is skipped.
#[test]
fn endpoints_follow_kube_proxy_on_lenient_duplicate_and_unset_cluster_ip_input() {
    let slice = |name: &str, svc: &str, eps: Value| {
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
               "metadata": {"name": name, "namespace": "ns1", "labels": {"kubernetes.io/service-name": svc}},
               "addressType": "IPv4", "ports": [{"name": "p80", "port": 80, "protocol": "TCP"}], "endpoints": eps})
    };
    let svc = |name: &str, ip: &str| {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": "ns1"},
               "spec": {"clusterIP": ip, "ports": [{"name": "p80", "port": 80, "protocol": "TCP"}]}})
    };
    let input = json!({"apiVersion": "v1", "kind": "List", "items": [
        svc("svc1", "172.30.0.41"),
        svc("noip", ""),
        slice("svc1-a", "svc1", json!([
            {"addresses": ["10.180.00.001"], "conditions": {"ready": true}},
            {"addresses": ["10.180.0.2"], "nodeName": "node-a",
             "conditions": {"ready": false, "serving": true, "terminating": true}}])),
        slice("svc1-b", "svc1", json!([{"addresses": ["10.180.0.2"], "nodeName": "node-b", "conditions": {"ready": true}}])),
        slice("noip-a", "noip", json!([{"addresses": ["10.180.0.9"], "conditions": {"ready": true}}])),
    ]});
    let dir = common::scratch_dir("issue17");
    let path = dir.join("input.json");
    std::fs::write(&path, input.to_string()).unwrap();
    let run = common::svcnet(&[
        "endpoints",
        "--node",
        "node-a",
        "--output",
        "json",
        path.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out: Value = serde_json::from_str(&run.stdout).unwrap();
    let services = out["services"].as_array().unwrap();
    assert_eq!(services.len(), 1, "{out}");
    assert_eq!(services[0]["servicePort"], "ns1/svc1:p80");
    assert_eq!(services[0]["cluster"], json!(["10.180.0.1:80", "10.180.0.2:80"]));
    assert_eq!(services[0]["clusterTerminatingFallback"], false);
    assert_eq!(out["ignored"], json!([]));
}

/// `svcnet slice` (slicing and hints in one sync) and `svcnet hints` (hints on existing slices)
/// give a `PreferSameZone` Service the same hints: the slices `slice` writes are left alone by
/// `hints`, and `hints` on the same slices without hints writes what `slice` wrote.
#[test]
fn slice_and_hints_agree_on_prefer_same_zone() {
    let mut items = vec![
        service(
            json!({}),
            json!({"trafficDistribution": "PreferSameZone", "ports": [{"name": "http", "port": 80, "targetPort": 8080, "protocol": "TCP"}]}),
        ),
        node("n-a", "a", "2"),
        node("n-b", "b", "2"),
    ];
    items[0]["metadata"]["uid"] = json!("u1");
    for (i, n) in ["n-a", "n-a", "n-b"].iter().enumerate() {
        items.push(json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": format!("p{i}"), "namespace": "shop", "labels": {"app": "web"}},
            "spec": {"nodeName": n},
            "status": {"podIP": format!("10.0.0.{i}"), "podIPs": [{"ip": format!("10.0.0.{i}")}],
                       "conditions": [{"type": "Ready", "status": "True"}]}}));
    }
    let (code, sliced, out) = run_json(&["slice", "--output", "json"], &list(items.clone()));
    assert_eq!(code, 0, "{out}");
    let written = sliced["slices"].as_array().cloned().unwrap_or_default();
    assert_eq!(written.len(), 1, "{out}");
    let zones = |s: &Value| -> Vec<Value> {
        s["endpoints"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|e| e["hints"]["forZones"].clone())
            .collect()
    };
    assert_eq!(
        zones(&written[0]),
        [
            json!([{"name": "a"}]),
            json!([{"name": "a"}]),
            json!([{"name": "b"}])
        ],
        "{out}"
    );

    // The slices `slice` wrote, given to `hints`: nothing to change.
    let mut with_slices = items.clone();
    let mut s = written[0].clone();
    s["apiVersion"] = json!("discovery.k8s.io/v1");
    s["kind"] = json!("EndpointSlice");
    with_slices.push(s.clone());
    let (code, hinted, out) = run_json(&["hints", "--output", "json"], &list(with_slices));
    assert_eq!(code, 0, "{out}");
    assert_eq!(hinted["updated"], json!([]), "{out}");

    // The same slice without hints: `hints` writes what `slice` wrote.
    for e in s["endpoints"].as_array_mut().into_iter().flatten() {
        e.as_object_mut().map(|o| o.remove("hints"));
    }
    let mut unhinted = items;
    unhinted.push(s);
    let (code, hinted, out) = run_json(&["hints", "--output", "json"], &list(unhinted.clone()));
    assert_eq!(code, 0, "{out}");
    assert_eq!(hinted["updated"].as_array().map(Vec::len), Some(1), "{out}");
    assert_eq!(zones(&hinted["slices"][0]), zones(&written[0]), "{out}");
    // And `slice` on that input rewrites the slice with the same hints.
    let (code, resliced, out) = run_json(&["slice", "--output", "json"], &list(unhinted));
    assert_eq!(code, 0, "{out}");
    assert_eq!(resliced["counts"]["update"], json!(1), "{out}");
    assert_eq!(zones(&resliced["slices"][0]), zones(&written[0]), "{out}");
}
