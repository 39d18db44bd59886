//! `svcnet rules --backend ipvs` text forms and flags. The text fixtures under
//! `testdata/recorded/ipvs/` were printed by kube-oracle (kube-proxy v1.37.2's IPVS proxier on its
//! test fakes) for the input of case `ipvs-nodeport-ipv4-udp`, with the case's settings.

mod common;

use serde_json::Value;

fn case(name: &str) -> Value {
    common::cases("rules")
        .into_iter()
        .find(|(n, _)| n == name)
        .expect("case")
        .1
}

fn run(case: &Value, extra: &[&str]) -> common::Run {
    let dir = common::scratch_dir("rules-ipvs-cli");
    let input = common::write_json(&dir, "input.json", &case["input"]);
    let mut args: Vec<String> = vec!["rules".into()];
    args.extend(
        case["args"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| a.as_str().unwrap_or_default().to_owned()),
    );
    args.extend(extra.iter().map(|s| (*s).to_owned()));
    args.push(input);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let r = common::svcnet(&argv);
    let _ = std::fs::remove_dir_all(&dir);
    r
}

fn fixture(name: &str) -> String {
    let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../testdata/recorded/ipvs")
        .join(name);
    std::fs::read_to_string(p).expect("fixture")
}

#[test]
fn text_is_kube_oracles() {
    let c = case("ipvs-nodeport-ipv4-udp.json");
    let r = run(&c, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, fixture("nodeport-ipv4-udp.transaction.txt"));
    let r = run(&c, &["--print", "state"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.stdout, fixture("nodeport-ipv4-udp.state.txt"));
}

#[test]
fn json_carries_the_iptables_texts() {
    let c = case("ipvs-nodeport-ipv4-udp.json");
    let r = run(&c, &["--output", "json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j = common::first_json(&r.stdout).expect("json");
    let restore = j["iptables_restore"].as_str().expect("restore");
    assert!(restore.starts_with("*nat\n:KUBE-SERVICES - [0:0]\n"), "{restore}");
    assert!(
        j["iptables_state"]
            .as_str()
            .expect("state")
            .starts_with("*filter\n:INPUT - [0:0]\n")
    );
    assert_eq!(j["ipsets"].as_object().expect("ipsets").len(), 17);
    assert_eq!(j["bind_addresses"], serde_json::json!(["10.20.30.41"]));
}

#[test]
fn ipv6_sets_are_prefixed_unless_asked_otherwise() {
    let c = case("ipvs-gen-ipv6-1075.json");
    let r = run(&c, &["--output", "json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j = common::first_json(&r.stdout).expect("json");
    let names: Vec<&String> = j["ipsets"].as_object().expect("ipsets").keys().collect();
    assert!(names.iter().all(|n| n.starts_with("KUBE-6-")), "{names:?}");
    assert!(
        names.iter().any(|n| *n == "KUBE-6-LOAD-BALANCER-SOURCE-CID"),
        "cut to 31 characters"
    );
    assert!(
        j["iptables_restore"]
            .as_str()
            .expect("restore")
            .contains("--match-set KUBE-6-CLUSTER-IP dst,dst")
    );

    let r = run(&c, &["--ipvs-unprefixed-ipv6-sets"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("create KUBE-CLUSTER-IP hash:ip,port\n"));
    assert!(!r.stdout.contains("KUBE-6-"));
}

#[test]
fn unreadable_input_is_exit_2() {
    let dir = common::scratch_dir("rules-ipvs-cli");
    let p = dir.join("bad.yaml");
    std::fs::write(&p, b"kind: [unclosed").expect("write");
    let r = common::svcnet(&[
        "rules",
        "--backend",
        "ipvs",
        "--node",
        "n",
        "--node-ip",
        "10.0.0.1",
        p.to_str().expect("path"),
    ]);
    assert_eq!(r.code, 2, "{}", r.stdout);
    assert!(!r.stderr.contains("panicked"));
    let _ = std::fs::remove_dir_all(&dir);
}
