//! The `networkpolicy` conformance cases through the CLI, checked exactly as the shared runner
//! (`conformance.py`) checks a `validate` case: the status, the exact error count when given,
//! and every expected (reason, field) pair among the causes.

mod common;

#[test]
fn networkpolicy_cases() {
    let cases = common::cases("networkpolicy");
    assert_eq!(cases.len(), 52, "the networkpolicy area holds 52 cases");
    common::run_typed_area("networkpolicy", common::check_validate_case);
}
