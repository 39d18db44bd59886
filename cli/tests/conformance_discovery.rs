//! The `discovery` conformance cases (`dns` and `env`) through the CLI, checked as the shared
//! runner checks them (`svcnet_test_support::check::{dns, env}`).

mod common;

use svcnet_test_support::case::{Case, DiscoveryExpect, cases};
use svcnet_test_support::check;

/// Checks one `dns` or `env` case.
fn check_discovery(case: &Case<DiscoveryExpect>, dir: &std::path::Path) -> Result<(), String> {
    let out = common::run_case_json(case, dir, true)?;
    match case.subcommand.as_str() {
        "dns" => check::dns(&case.expect, &out),
        "env" => check::env(&case.expect, &out),
        other => Err(format!("unknown subcommand {other:?}")),
    }
}

#[test]
fn discovery_cases() {
    common::run_typed_area("discovery", check_discovery);
}

#[test]
fn the_checker_can_fail() {
    // A case whose expectation is wrong must be reported, not silently pass.
    let mut case = cases::<DiscoveryExpect>("discovery")
        .into_iter()
        .find(|(n, _)| n == "dns-version-txt.json")
        .map(|(_, c)| c)
        .expect("case");
    case.expect.records[0].data = "\"1.0.0\"".into();
    let dir = common::scratch_dir("discovery-neg");
    assert!(check_discovery(&case, &dir).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
