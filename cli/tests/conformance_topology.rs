//! The `topology` conformance cases (`hints` and `endpoints`) through the CLI, checked as the
//! shared runner checks them (`svcnet_test_support::check::{hints, endpoints}`).
//!
//! One difference: an expected `hints` entry of `null` (an endpoint that must carry no hint) is
//! read as "absent"; the shared runner crashes on it (`sorted(None)`).

mod common;

use svcnet_test_support::case::{Case, TopologyExpect};
use svcnet_test_support::check;

#[test]
fn topology_cases() {
    common::run_typed_area("topology", |case: &Case<TopologyExpect>, dir| {
        let res = common::run_case_json(case, dir, true)?;
        match case.subcommand.as_str() {
            "hints" => check::hints(&case.expect, &res),
            "endpoints" => check::endpoints(&case.expect, &res),
            other => Err(format!("unexpected subcommand {other:?}")),
        }
    });
}
