//! The `apiserver` conformance cases through the CLI, checked as the shared runner checks them:
//! what kube-apiserver v1.37.2 answered to each create or update, with the case's cluster
//! passed as `--service-cidrs` / `--node-port-range`.

mod common;

#[test]
fn apiserver_cases() {
    let cases = common::cases("apiserver");
    assert_eq!(cases.len(), 124, "the apiserver area holds 124 cases");
    common::run_typed_area("apiserver", common::check_validate_case);
}
