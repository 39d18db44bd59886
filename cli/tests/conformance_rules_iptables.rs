//! The iptables rules conformance cases (`testdata/conformance/rules/iptables-*.json`) through the
//! CLI, compared as the shared runner compares them (`common::rules_iptables`, a port of
//! `check_rules`).

mod common;

use common::rules_iptables::{check_case, normalise, parse};

#[test]
fn iptables_rules_cases() {
    common::run_area("rules", |case, dir| {
        if case["expect"]["format"] != "iptables-restore" {
            return Ok(());
        }
        check_case(case, dir)
    });
}

#[test]
fn the_comparator_parser_refuses_what_kube_proxy_refuses() {
    assert!(parse("*nat\n:A - [0:0]\n-A B -j X\nCOMMIT\n").is_err());
    assert!(parse("*nat\n:A - [0:0]\n-A A -j\nCOMMIT\n").is_err());
    assert!(parse("*nat\n:A - [0:0]\n-A A -j X\n").is_err());
    assert!(parse("*nat\n:A - [0:0]\n-A A -j X\n-X A\nCOMMIT\n").is_err());
    assert!(parse("*nat\n:A - [0:0]\n-A A ! -j X\nCOMMIT\n").is_err());
    assert!(parse("*nat\n:A - [0:0]\n-A A -m comment --comment \"a b\" -j X\nCOMMIT\n").is_ok());
}

#[test]
fn the_comparator_sorts_services_and_keeps_the_last_rule_last() {
    let text = "*nat\n:KUBE-SERVICES - [0:0]\n:KUBE-NODEPORTS - [0:0]\n\
        -A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -j KUBE-NODEPORTS\n\
        -A KUBE-SERVICES -m comment --comment \"ns/b:p cluster IP\" -j X\n\
        -A KUBE-SERVICES -m comment --comment \"ns/a:q cluster IP\" -j X\n\
        -A KUBE-SERVICES -m comment --comment \"ns/a:p cluster IP\" -j X\nCOMMIT\n";
    let n = normalise(text).unwrap();
    assert_eq!(n[1], ":KUBE-NODEPORTS - [0:0]");
    assert!(n[3].contains("ns/a:p"));
    assert!(n[4].contains("ns/a:q"));
    assert!(n[5].contains("ns/b:p"));
    assert!(n[6].contains("must be the last rule"));
}
