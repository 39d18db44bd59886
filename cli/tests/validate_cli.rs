//! `svcnet validate` end to end: input forms, `--old`, `--status`, `--no-defaults`, text and
//! JSON output, exit codes 0/1/2, and no panic on malformed input.

mod common;

use common::{scratch_dir, svcnet, svcnet_stdin};
use serde_json::{Value, json};

const WEB_YAML: &str = "\
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector:
    app: web
  ports:
  - name: http
    port: 80
";

const BAD_PORT_YAML: &str = "\
apiVersion: v1
kind: Service
metadata:
  name: broken
  namespace: shop
spec:
  ports:
  - port: 0
";

fn write(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write");
    p.to_string_lossy().into_owned()
}

fn json_lines(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON: {l}: {e}")))
        .collect()
}

/// The `(reason, field)` pairs of a `Status`' causes.
fn causes(st: &Value) -> Vec<(String, String)> {
    svcnet_test_support::check::status_causes(st).1
}

#[test]
fn valid_yaml_file_exits_0_with_text() {
    let dir = scratch_dir("validate");
    let f = write(&dir, "web.yaml", WEB_YAML);
    let run = svcnet(&["validate", &f]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.trim(),
        "Service shop/web: valid\n1 valid, 0 invalid, 0 skipped"
    );
}

#[test]
fn invalid_service_exits_1_and_prints_kubernetes_text() {
    let dir = scratch_dir("validate");
    let f = write(&dir, "bad.yaml", BAD_PORT_YAML);
    let run = svcnet(&["validate", &f]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert!(
        run.stdout.contains(
            "Service shop/broken: spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"
        ),
        "{}",
        run.stdout
    );
    // Defaulting made the target port 0 too, which is reported on its own line.
    assert!(
        run.stdout.contains("spec.ports[0].targetPort: Invalid value: 0"),
        "{}",
        run.stdout
    );
}

#[test]
fn json_output_is_a_kubernetes_status() {
    let dir = scratch_dir("validate");
    let f = write(&dir, "bad.yaml", BAD_PORT_YAML);
    let run = svcnet(&["validate", "--output", "json", &f]);
    assert_eq!(run.code, 1);
    let lines = json_lines(&run.stdout);
    assert_eq!(lines.len(), 1);
    let st = &lines[0];
    assert_eq!(st["kind"], "Status");
    assert_eq!(st["apiVersion"], "v1");
    assert_eq!(st["status"], "Failure");
    assert_eq!(st["reason"], "Invalid");
    assert_eq!(st["code"], 422);
    assert_eq!(st["details"]["kind"], "Service");
    assert_eq!(st["details"]["name"], "broken");
    let first = &st["details"]["causes"][0];
    assert_eq!(first["reason"], "FieldValueInvalid");
    assert_eq!(first["field"], "spec.ports[0].port");
    assert_eq!(
        first["message"],
        "Invalid value: 0: must be between 1 and 65535, inclusive"
    );
    assert!(
        st["message"]
            .as_str()
            .unwrap_or("")
            .starts_with("Service \"broken\" is invalid: [spec.ports[0].port: Invalid value: 0"),
        "{}",
        st["message"]
    );
}

#[test]
fn a_list_and_multi_document_yaml_give_one_status_per_object() {
    let dir = scratch_dir("validate");
    let web: Value = json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
    });
    let slice: Value = json!({
        "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
        "metadata": {"name": "web-abc", "namespace": "shop"},
        "addressType": "IPv4",
        "endpoints": [{"addresses": ["127.0.0.1"]}]
    });
    let list = json!({"apiVersion": "v1", "kind": "List", "items": [web, slice]});
    let f = common::write_json(&dir, "list.json", &list);
    let run = svcnet(&["validate", "--output", "json", &f]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let lines = json_lines(&run.stdout);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0]["status"], "Success");
    assert_eq!(lines[1]["status"], "Failure");
    assert_eq!(lines[1]["details"]["group"], "discovery.k8s.io");
    assert_eq!(
        causes(&lines[1]),
        vec![(
            "FieldValueInvalid".to_owned(),
            "endpoints[0].addresses[0]".to_owned()
        )]
    );

    let multi = format!("{WEB_YAML}---\n{BAD_PORT_YAML}---\n");
    let f = write(&dir, "multi.yaml", &multi);
    let run = svcnet(&["validate", &f]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout.starts_with("Service shop/web: valid\n"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("Service shop/broken: spec.ports[0].port"),
        "{}",
        run.stdout
    );
}

#[test]
fn standard_input() {
    let run = svcnet_stdin(&["validate", "-"], WEB_YAML.as_bytes());
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.trim(),
        "Service shop/web: valid\n1 valid, 0 invalid, 0 skipped"
    );
    let run = svcnet_stdin(&["validate", "--output", "json", "-"], BAD_PORT_YAML.as_bytes());
    assert_eq!(run.code, 1);
    assert_eq!(json_lines(&run.stdout)[0]["status"], "Failure");
}

#[test]
fn no_defaults_reports_what_defaulting_would_fill() {
    let dir = scratch_dir("validate");
    let f = write(&dir, "web.yaml", WEB_YAML);
    let run = svcnet(&["validate", "--no-defaults", "--output", "json", &f]);
    assert_eq!(run.code, 1);
    let got = causes(&json_lines(&run.stdout)[0]);
    for want in [
        ("FieldValueRequired", "spec.ports[0].protocol"),
        ("FieldValueInvalid", "spec.ports[0].targetPort"),
        ("FieldValueRequired", "spec.sessionAffinity"),
        ("FieldValueRequired", "spec.type"),
    ] {
        assert!(
            got.contains(&(want.0.to_owned(), want.1.to_owned())),
            "missing {want:?} in {got:?}"
        );
    }
}

#[test]
fn updates_with_old() {
    let dir = scratch_dir("validate");
    let old = write(
        &dir,
        "old.yaml",
        &WEB_YAML.replace(
            "  namespace: shop\n",
            "  namespace: shop\n  resourceVersion: \"7\"\n",
        ),
    );
    let same = svcnet(&["validate", "--old", &old, &old]);
    assert_eq!(same.code, 0, "{}{}", same.stdout, same.stderr);

    // Changing the cluster IP once set is refused; the IP is the old one plus a new one.
    let with_ip = |ip: &str| {
        WEB_YAML.replace(
            "  namespace: shop\n",
            "  namespace: shop\n  resourceVersion: \"7\"\n",
        ) + &format!("  clusterIP: {ip}\n  clusterIPs: [{ip}]\n")
    };
    let old = write(&dir, "old-ip.yaml", &with_ip("10.96.0.10"));
    let new = write(&dir, "new-ip.yaml", &with_ip("10.96.0.11"));
    let run = svcnet(&["validate", "--output", "json", "--old", &old, &new]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        causes(&json_lines(&run.stdout)[0]),
        vec![("FieldValueInvalid".to_owned(), "spec.clusterIPs[0]".to_owned())]
    );

    // Old clients send only clusterIP: with defaulting on, clusterIPs follows it.
    let singular = write(
        &dir,
        "singular.yaml",
        &(WEB_YAML.replace(
            "  namespace: shop\n",
            "  namespace: shop\n  resourceVersion: \"7\"\n",
        ) + "  clusterIP: 10.96.0.10\n"),
    );
    let run = svcnet(&["validate", "--old", &old, &singular]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let run = svcnet(&["validate", "--no-defaults", "--old", &old, &singular]);
    assert_eq!(run.code, 1);

    // An --old file without a matching object is a usage error.
    let other = write(
        &dir,
        "other.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: node-1\n",
    );
    let run = svcnet(&["validate", "--old", &other, &new]);
    assert_eq!(run.code, 2, "{}{}", run.stdout, run.stderr);
    assert!(run.stderr.starts_with("svcnet: --old"), "{}", run.stderr);
}

#[test]
fn status_updates() {
    let dir = scratch_dir("validate");
    let lb = "\
apiVersion: v1
kind: Service
metadata:
  name: lb
  namespace: shop
  resourceVersion: \"3\"
spec:
  type: LoadBalancer
  selector:
    app: lb
  ports:
  - port: 443
status:
  loadBalancer:
    ingress:
    - ip: 203.0.113.9
";
    let f = write(&dir, "lb.yaml", lb);
    let run = svcnet(&["validate", "--status", "--old", &f, &f]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let run = svcnet(&[
        "validate",
        "--status",
        "--no-defaults",
        "--output",
        "json",
        "--old",
        &f,
        &f,
    ]);
    assert_eq!(run.code, 1);
    assert_eq!(
        causes(&json_lines(&run.stdout)[0]),
        vec![(
            "FieldValueRequired".to_owned(),
            "status.loadBalancer.ingress[0].ipMode".to_owned()
        )]
    );
    // --status needs --old: a command-line error.
    let run = svcnet(&["validate", "--status", &f]);
    assert_eq!(run.code, 2);
}

#[test]
fn other_kinds() {
    let dir = scratch_dir("validate");
    let f = write(
        &dir,
        "cidr.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: ServiceCIDR\nmetadata:\n  name: extra\nspec:\n  cidrs: [\"10.0.0.1/24\"]\n",
    );
    let run = svcnet(&["validate", &f]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains("ServiceCIDR extra: spec.cidrs[0]: Invalid value: \"10.0.0.1/24\""),
        "{}",
        run.stdout
    );
    let f = write(
        &dir,
        "ip.yaml",
        "apiVersion: networking.k8s.io/v1\nkind: IPAddress\nmetadata:\n  name: 10.96.0.10\nspec:\n  parentRef:\n    resource: services\n    namespace: shop\n    name: web\n",
    );
    let run = svcnet(&["validate", &f]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // Kinds svcnet reads but does not validate exit 0, are counted by kind in one summary line
    // of the text, and are a Success in JSON (unchanged).
    let f = write(
        &dir,
        "node.yaml",
        "apiVersion: v1\nkind: Node\nmetadata:\n  name: n1\n---\napiVersion: v1\nkind: Pod\nmetadata:\n  name: web-0\n  namespace: shop\n---\napiVersion: v1\nkind: Endpoints\nmetadata:\n  name: web\n  namespace: shop\n",
    );
    let run = svcnet(&["validate", &f]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let kinds = "(svcnet validates Service, EndpointSlice, ServiceCIDR, IPAddress and NetworkPolicy)";
    assert_eq!(
        run.stdout.lines().collect::<Vec<_>>(),
        vec![
            format!("skipped, not validated: 1 Node, 1 Pod, 1 Endpoints {kinds}"),
            "0 valid, 0 invalid, 3 skipped".to_owned(),
        ]
    );
    let run = svcnet(&["validate", "--output", "json", &f]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    let statuses = json_lines(&run.stdout);
    assert_eq!(statuses.len(), 3, "{}", run.stdout);
    for (st, kind) in statuses.iter().zip(["Node", "Pod", "Endpoints"]) {
        assert_eq!(st["status"], "Success", "{st}");
        assert_eq!(st["details"]["kind"], kind, "{st}");
    }
    assert_eq!(
        statuses[1],
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
               "details": {"name": "web-0", "kind": "Pod"}})
    );
}

#[test]
fn unreadable_and_malformed_input_exit_2_without_panicking() {
    let dir = scratch_dir("validate");
    let inputs: &[&[u8]] = &[
        b"",
        b"{",
        b"[1, 2",
        b"kind: Service\nspec: [",
        b"kind: Service\nspec:\n  ports: 80\n",
        b"kind: Service\nspec:\n  ports:\n  - port: 99999999999\n",
        b"kind: Service\nmetadata: 7\n",
        b"\xff\xfe\x00",
        b"- a\n- b\n",
        b"42",
        b"kind: List\nitems: 3\n",
        b"apiVersion: v1\nkind: Service\nmetadata:\n  name: \"\\u0000\"\n",
        b"---\n---\n",
        b"kind: Service\nspec:\n  ports:\n  - targetPort: {a: 1}\n",
    ];
    for (i, bytes) in inputs.iter().enumerate() {
        let p = dir.join(format!("in{i}"));
        std::fs::write(&p, bytes).expect("write");
        let run = svcnet(&["validate", p.to_str().unwrap_or_default()]);
        assert!((0..=2).contains(&run.code), "input {i}: exit {}", run.code);
        assert!(!run.stderr.contains("panicked"), "input {i}: {}", run.stderr);
        assert!(
            !run.stderr.contains("RUST_BACKTRACE"),
            "input {i}: {}",
            run.stderr
        );
        if run.code == 2 {
            assert!(run.stderr.starts_with("svcnet: "), "input {i}: {}", run.stderr);
        }
    }
    let run = svcnet(&["validate", "/nonexistent/svcnet.yaml"]);
    assert_eq!(run.code, 2);
    let run = svcnet(&["validate", "--output", "xml", "-"]);
    assert_eq!(run.code, 2);
}

const REUSED_NODE_PORT_YAML: &str = "\
apiVersion: v1
kind: Service
metadata:
  name: dns
  namespace: shop
spec:
  type: NodePort
  selector:
    app: dns
  ports:
  - name: tcp
    protocol: TCP
    port: 53
    nodePort: 30053
  - name: udp
    protocol: UDP
    port: 53
    nodePort: 30053
  - name: metrics
    protocol: SCTP
    port: 9153
    nodePort: 30053
";

#[test]
fn node_port_reused_across_port_numbers_is_refused_by_the_allocator() {
    let dir = scratch_dir("validate");
    let f = write(&dir, "dns.yaml", REUSED_NODE_PORT_YAML);
    let run = svcnet(&["validate", &f]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    assert_eq!(
        run.stdout.lines().collect::<Vec<_>>(),
        vec![
            "Service shop/dns: refused by the Service allocator, before validation:",
            "Service shop/dns: spec.ports[2].nodePort: Invalid value: 30053: provided port is already allocated",
            "0 valid, 1 invalid, 0 skipped",
        ]
    );
    // The validation functions alone accept it: they only refuse one node port twice for
    // one protocol.
    let run = svcnet(&["validate", "--no-defaults", "--output", "json", &f]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    let st = &json_lines(&run.stdout)[0];
    assert!(!causes(st).iter().any(|(_, f)| f.ends_with("nodePort")), "{st}");
    // Outside the NodePort range given.
    let run = svcnet(&[
        "validate",
        "--node-port-range",
        "31000-32000",
        "--output",
        "json",
        &f,
    ]);
    assert_eq!(run.code, 1);
    let st = &json_lines(&run.stdout)[0];
    assert_eq!(
        st["details"]["causes"][0]["message"],
        "Invalid value: 30053: provided port is not in the valid range. The range of valid ports is 31000-32000"
    );
}

const LB_STORED_JSON: &str = r#"{"apiVersion": "v1", "kind": "Service",
  "metadata": {"name": "web", "namespace": "shop", "resourceVersion": "41"},
  "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "clusterIP": "10.96.0.10",
    "clusterIPs": ["10.96.0.10"], "ipFamilies": ["IPv4"], "ipFamilyPolicy": "SingleStack",
    "ports": [{"name": "http", "port": 80, "targetPort": 8080, "nodePort": 30080}],
    "loadBalancerClass": "example.com/lb", "allocateLoadBalancerNodePorts": true}}"#;

const LB_TO_CLUSTER_IP_YAML: &str = "\
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  type: ClusterIP
  selector:
    app: web
  ports:
  - name: http
    port: 80
    targetPort: 8080
  loadBalancerClass: example.com/lb
";

#[test]
fn update_says_what_the_server_changed() {
    let dir = scratch_dir("validate");
    let old = write(&dir, "old.json", LB_STORED_JSON);
    let new = write(&dir, "new.yaml", LB_TO_CLUSTER_IP_YAML);
    let run = svcnet(&["validate", "--old", &old, &new]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    for line in [
        "Service shop/web: the API server filled metadata.resourceVersion (\"41\"): an update without one is unconditional",
        "Service shop/web: the API server filled spec.clusterIP (\"10.96.0.10\"): the request leaves it empty; the stored object has it",
        "Service shop/web: the API server dropped spec.loadBalancerClass (\"example.com/lb\"): type is no longer LoadBalancer",
        "Service shop/web: valid",
    ] {
        assert!(
            run.stdout.lines().any(|l| l == line),
            "missing {line:?} in\n{}",
            run.stdout
        );
    }
    let run = svcnet(&["validate", "--old", &old, "--output", "json", &new]);
    let st = &json_lines(&run.stdout)[0];
    assert_eq!(st["status"], "Success");
    let changes = st["changes"].as_array().expect("changes");
    assert!(
        changes.contains(&json!({"field": "spec.loadBalancerClass", "action": "dropped",
            "value": "example.com/lb", "reason": "type is no longer LoadBalancer",
            "message": "dropped spec.loadBalancerClass (\"example.com/lb\"): type is no longer LoadBalancer"})),
        "{st}"
    );
    // The validation functions alone refuse it.
    let run = svcnet(&["validate", "--no-defaults", "--old", &old, &new]);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(
        run.stdout.contains("spec.loadBalancerClass: Forbidden"),
        "{}",
        run.stdout
    );
}

#[test]
fn cluster_ips_against_the_ranges_and_the_other_services() {
    let dir = scratch_dir("validate");
    let two = "\
apiVersion: v1
kind: Service
metadata: {name: a, namespace: shop}
spec: {clusterIP: 10.96.0.10, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: b, namespace: shop}
spec: {clusterIP: 10.96.0.10, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: c, namespace: shop}
spec: {clusterIP: 10.200.0.1, ports: [{port: 80}]}
---
apiVersion: v1
kind: Service
metadata: {name: d, namespace: shop}
spec: {clusterIP: 10.96.0.1, ports: [{port: 80}]}
";
    let f = write(&dir, "two.yaml", two);
    let run = svcnet(&["validate", "--service-cidrs", "10.96.0.0/16", &f]);
    assert_eq!(run.code, 1, "{}{}", run.stdout, run.stderr);
    let want = [
        "Service shop/a: valid",
        "Service shop/b: spec.clusterIPs: Invalid value: [\"10.96.0.10\"]: failed to allocate IP 10.96.0.10: provided IP is already allocated",
        "Service shop/c: spec.clusterIPs: Invalid value: [\"10.200.0.1\"]: failed to allocate IP 10.200.0.1: the provided network does not match the current range",
        // The first address belongs to default/kubernetes.
        "Service shop/d: spec.clusterIPs: Invalid value: [\"10.96.0.1\"]: failed to allocate IP 10.96.0.1: provided IP is already allocated",
        "1 valid, 3 invalid, 0 skipped",
    ];
    for line in want {
        assert!(
            run.stdout.lines().any(|l| l == line),
            "missing {line:?} in\n{}",
            run.stdout
        );
    }
    // Without the ranges, only what needs no allocator state is checked.
    let run = svcnet(&["validate", &f]);
    assert_eq!(run.code, 0, "{}{}", run.stdout, run.stderr);
    // A flag that does not parse is a usage error.
    for bad in [["--service-cidrs", "10.96.0.0/99"], ["--node-port-range", "a-b"]] {
        let run = svcnet(&["validate", bad[0], bad[1], &f]);
        assert_eq!(run.code, 2, "{bad:?}: {}", run.stdout);
        assert!(run.stderr.contains(bad[0]), "{}", run.stderr);
    }
}
