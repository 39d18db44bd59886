//! `svcnet conntrack`: the UDP conntrack entries to flush between two states of a node.

mod common;

use serde_json::{Value, json};

fn state(ips: &[&str], v6: bool) -> Value {
    let (cluster_ip, family) = if v6 {
        ("fd00:96::a", "IPv6")
    } else {
        ("10.96.0.10", "IPv4")
    };
    json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service",
         "metadata": {"name": "dns", "namespace": "kube-system"},
         "spec": {"type": "NodePort", "clusterIP": cluster_ip, "clusterIPs": [cluster_ip], "ipFamilies": [family],
                  "ports": [{"name": "dns", "port": 53, "protocol": "UDP", "nodePort": 30053},
                            {"name": "dns-tcp", "port": 53, "protocol": "TCP"}]}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "dns-1", "namespace": "kube-system",
                      "labels": {"kubernetes.io/service-name": "dns"}},
         "addressType": family,
         "endpoints": ips.iter().map(|a| json!({"addresses": [a], "nodeName": "node-b"})).collect::<Vec<_>>(),
         "ports": [{"name": "dns", "port": 5353, "protocol": "UDP"},
                   {"name": "dns-tcp", "port": 5353, "protocol": "TCP"}]}]})
}

fn run(prior: &Value, now: &Value, node_ip: &str, json_out: bool) -> common::Run {
    let dir = common::scratch_dir("conntrack");
    let prior = common::write_json(&dir, "prior.json", prior);
    let now = common::write_json(&dir, "now.json", now);
    let mut args = vec![
        "conntrack",
        "--node",
        "node-a",
        "--node-ip",
        node_ip,
        "--prior",
        &prior,
    ];
    if json_out {
        args.extend(["--output", "json"]);
    }
    args.push(&now);
    common::svcnet(&args)
}

#[test]
fn a_removed_udp_endpoint_is_flushed_on_each_frontend() {
    let r = run(
        &state(&["10.0.0.1", "10.0.0.2"], false),
        &state(&["10.0.0.2"], false),
        "192.168.0.2",
        false,
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let commands: Vec<&str> = r.stdout.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(
        commands,
        [
            "conntrack -D -p udp --orig-port-dst 30053 --reply-src 10.0.0.1 --reply-port-src 5353",
            "conntrack -D -p udp --orig-dst 10.96.0.10 --orig-port-dst 53 --reply-src 10.0.0.1 --reply-port-src 5353",
        ],
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .starts_with("# kube-system/dns:dns: the endpoint was removed"),
        "{}",
        r.stdout
    );
}

#[test]
fn json_lists_the_filters_and_ipv6_names_the_family() {
    let r = run(&state(&[], true), &state(&["fd10::1"], true), "2001:db8::2", true);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(&r.stdout).expect("json");
    assert_eq!(v["family"], "IPv6");
    let filters = v["filters"].as_array().expect("filters");
    assert_eq!(filters.len(), 2, "{v}");
    assert!(
        filters
            .iter()
            .all(|f| f["endpoint"].is_null() && f["protocol"] == "UDP")
    );
    assert!(
        filters
            .iter()
            .any(|f| f["originalDestination"] == "fd00:96::a" && f["originalPort"] == 53)
    );
    let text = run(
        &state(&[], true),
        &state(&["fd10::1"], true),
        "2001:db8::2",
        false,
    );
    assert!(
        text.stdout
            .contains("conntrack -D -f ipv6 -p udp --orig-dst fd00:96::a --orig-port-dst 53\n"),
        "{}",
        text.stdout
    );
}

#[test]
fn nothing_changed_nothing_to_flush() {
    let s = state(&["10.0.0.1"], false);
    let r = run(&s, &s, "192.168.0.2", false);
    assert_eq!(
        (r.code, r.stdout.trim()),
        (0, "# nothing to flush"),
        "{}",
        r.stderr
    );
    let r = common::svcnet(&[
        "conntrack",
        "--node",
        "node-a",
        "--node-ip",
        "192.168.0.2",
        "x.json",
    ]);
    assert_eq!(r.code, 2, "--prior is required");
}
