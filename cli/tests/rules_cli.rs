//! `svcnet rules` beyond the conformance cases: the example cluster, partial syncs from the
//! README, JSON output, the settings' errors and the backends not yet written.

mod common;

use serde_json::Value;

fn example(name: &str) -> String {
    format!("{}/../examples/clusters/{name}", env!("CARGO_MANIFEST_DIR"))
}

const NODE: &[&str] = &[
    "rules",
    "--backend",
    "iptables",
    "--node",
    "node-a1",
    "--node-ip",
    "192.168.0.11",
    "--cluster-cidr",
    "10.244.0.0/16",
];

fn run(extra: &[&str]) -> common::Run {
    let mut args: Vec<&str> = NODE.to_vec();
    args.extend_from_slice(extra);
    common::svcnet(&args)
}

#[test]
fn the_example_cluster_gives_a_full_sync() {
    let shop = example("shop.yaml");
    let r = run(&[&shop]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.starts_with("*filter\n") && r.stdout.ends_with("COMMIT\n"));
    // A LoadBalancer with source ranges and eTP Local without a local endpoint on node-a1.
    assert!(r.stdout.contains("-A KUBE-FW-D4LVFIRJ4ZSSG6YW -m comment --comment \"shop/frontend:https loadbalancer IP\" -s 203.0.113.0/24 -j KUBE-EXT-D4LVFIRJ4ZSSG6YW\n"));
    assert!(
        r.stdout
            .contains("\"shop/frontend:https has no local endpoints\"")
    );
    // A Service without endpoints rejects.
    assert!(r.stdout.contains(
        "\"payments/legacy:http has no endpoints\" -m tcp -p tcp -d 10.96.20.10 --dport 80 -j REJECT\n"
    ));
    // The default mark is kube-proxy's bit 14.
    assert!(
        r.stdout
            .contains("-A KUBE-MARK-MASQ -j MARK --or-mark 0x00004000\n")
    );
    let state = run(&["--print", "state", &shop]);
    assert_eq!(state.code, 0, "{}", state.stderr);
    assert!(
        state
            .stdout
            .contains("-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n")
    );
}

#[test]
fn the_readme_partial_sync_rewrites_only_the_changed_service() {
    let r = run(&["--prior", &example("shop.yaml"), &example("shop-rollout.yaml")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let svc_chains: Vec<&str> = r.stdout.lines().filter(|l| l.starts_with(":KUBE-SVC-")).collect();
    assert_eq!(
        svc_chains,
        [
            ":KUBE-SVC-JNP6SJEOHYWMXRYP - [0:0]",
            ":KUBE-SVC-ITBI3OHKD3FRXPDK - [0:0]"
        ]
    );
    assert_eq!(
        r.stdout.lines().filter(|l| l.starts_with("-X KUBE-SEP-")).count(),
        2
    );
    assert!(r.stdout.contains("--to-destination 10.244.3.26:8080"));
    assert!(
        !r.stdout.contains("-A KUBE-SVC-67NZLRHBNDSAWJRO"),
        "unchanged shop/web is not rewritten"
    );
}

#[test]
fn json_output_holds_the_typed_rule_set() {
    let r = run(&["--output", "json", &example("shop.yaml")]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v: Value = serde_json::from_str(r.stdout.trim()).expect("json");
    assert_eq!(v["backend"], "iptables");
    assert_eq!(v["full_sync"], true);
    assert_eq!(v["transaction"]["nat"]["name"], "nat");
    let rules = v["transaction"]["nat"]["lines"].as_array().expect("lines");
    assert!(
        rules
            .iter()
            .any(|l| l["rule"]["target"]["jump"] == "KUBE-NODEPORTS")
    );
    assert!(
        v["iptables_restore"]
            .as_str()
            .is_some_and(|t| t.starts_with("*filter"))
    );
}

#[test]
fn ipv6_nodes_get_the_ipv6_proxier() {
    let r = common::svcnet(&[
        "rules",
        "--backend",
        "iptables",
        "--node",
        "node-a1",
        "--node-ip",
        "fd00:c0a8::b",
        "--cluster-cidr",
        "fd00:10:244::/48",
        &example("shop.yaml"),
    ]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("-d fd00:10:96::a --dport 80"));
    assert!(r.stdout.contains("! -d ::1/128 -j KUBE-NODEPORTS"));
    assert!(!r.stdout.contains("KUBE-FIREWALL"));
}

#[test]
fn bad_settings_exit_2() {
    let shop = example("shop.yaml");
    for bad in [
        vec!["--nodeport-addresses", "bogus", shop.as_str()],
        vec!["--masquerade-bit", "40", shop.as_str()],
        vec!["--host-addresses", "eth0=nope", shop.as_str()],
        vec!["--cluster-cidr", "10.0.0.0/99", shop.as_str()],
    ] {
        let r = run(&bad);
        assert_eq!(r.code, 2, "{bad:?}: {}", r.stdout);
        assert!(r.stderr.starts_with("svcnet: "), "{}", r.stderr);
        assert!(
            r.stderr.contains(bad[0].trim_start_matches("--")),
            "the message names the setting: {}",
            r.stderr
        );
    }
}
