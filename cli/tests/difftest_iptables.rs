//! Differential-test cases recorded from kube-proxy v1.37.2 (kube-oracle) on clusters from
//! `svcnet-testgen` (`scripts/difftest.py --record DIR --seeds ...`), kept under
//! `testdata/conformance/rules-difftest/` so `cargo test` holds them without Go: full syncs and
//! histories of partial syncs (some aged), IPv4 and IPv6 nodes, every Service type. Compared as
//! the rules conformance cases are (`common::rules_iptables`).

mod common;

#[test]
fn recorded_difftest_cases_match_kube_proxy() {
    common::run_area("rules-difftest", |case, dir| {
        assert_eq!(case["expect"]["format"], "iptables-restore");
        common::rules_iptables::check_case(case, dir)
    });
}
