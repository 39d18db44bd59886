//! The `slicer` conformance cases (`slice` and `mirror`) through the CLI, checked as the shared
//! runner (`conformance.py`) checks them (`svcnet_test_support::check::slice`).

mod common;

use svcnet_test_support::case::{Case, SliceExpect};
use svcnet_test_support::check;

/// Checks one `slice` / `mirror` case.
fn check(case: &Case<SliceExpect>, dir: &std::path::Path) -> Result<(), String> {
    let plan = common::run_case_json(case, dir, true)?;
    check::slice(case, &plan)
}

#[test]
fn slicer_cases() {
    common::run_typed_area("slicer", check);
}
