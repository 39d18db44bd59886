//! The `validation` and `networkpolicy` conformance cases run with `--no-defaults` (the
//! validation functions alone, on the objects as given), in-process through
//! [`validation::validate_object`], judged by the shared pass criteria
//! (`svcnet_test_support::check::validate`) the CLI's conformance tests apply to
//! `svcnet validate`. The few cases of these areas that go through the API server's
//! defaulting and strategy run in svcnet-apiserver's tests.

use svcnet_model::validation;
use svcnet_test_support::case::{Case, ValidateExpect, run_area};
use svcnet_test_support::{check, objects};

/// The verdict on the case's (first) object and its `(reason, field)` causes, duplicates kept.
fn validate(case: &Case<ValidateExpect>) -> Result<(bool, Vec<(String, String)>), String> {
    let obj = objects::objects(&case.input)?
        .into_iter()
        .next()
        .ok_or("no object to validate")?;
    let olds = match &case.old {
        Some(old) => objects::objects(old)?,
        None => Vec::new(),
    };
    let old = match &case.old {
        Some(_) => Some(obj.counterpart(&olds).ok_or("no stored object to update")?),
        None => None,
    };
    let errors = validation::validate_object(&obj, old);
    let causes = errors
        .iter()
        .map(|e| (e.type_.reason().to_owned(), e.field.clone()))
        .collect();
    Ok((errors.is_empty(), causes))
}

fn area(name: &str) -> usize {
    run_area(name, |case: &Case<ValidateExpect>| {
        case.has_flag("no-defaults")
            .then(|| validate(case).and_then(|(valid, causes)| check::validate(&case.expect, valid, &causes)))
    })
}

#[test]
fn validation_cases() {
    assert_eq!(area("validation"), 88);
}

#[test]
fn networkpolicy_cases() {
    assert_eq!(area("networkpolicy"), 49);
}
