//! The `validation` conformance cases through the CLI, checked as the shared runner checks them.

mod common;

#[test]
fn validation_cases() {
    let cases = common::cases("validation");
    assert_eq!(cases.len(), 91, "the validation area holds 91 cases");
    common::run_typed_area("validation", common::check_validate_case);
}
