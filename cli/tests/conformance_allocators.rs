//! The `allocators` conformance cases (op scripts) through the CLI, checked as the shared
//! runner checks them (`svcnet_test_support::check::alloc`): one result per op, and every key
//! of each expected result equal.

mod common;

use svcnet_test_support::case::{AllocExpect, Case};
use svcnet_test_support::check;

fn check_alloc(case: &Case<AllocExpect>, dir: &std::path::Path) -> Result<(), String> {
    let out = common::run_case_json(case, dir, false)?;
    let got = out["results"].as_array().cloned().unwrap_or_default();
    check::alloc(&case.expect, &got)
}

#[test]
fn allocators_cases() {
    common::run_typed_area("allocators", check_alloc);
}
