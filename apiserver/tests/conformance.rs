//! The `apiserver` conformance cases (kube-apiserver v1.37.2's answers to creates and updates),
//! and the `validation` / `networkpolicy` cases that go through the API server (those without
//! `--no-defaults`), run in-process through [`create`] / [`update`] with the case's cluster,
//! judged by the shared pass criteria (`svcnet_test_support::check::validate`) the CLI's
//! conformance tests apply to `svcnet validate`.

use svcnet_allocators::SplitMix64;
use svcnet_apiserver::{Cluster, create, update};
use svcnet_model::{Object, defaults};
use svcnet_test_support::case::{Case, ValidateExpect, run_area};
use svcnet_test_support::{check, objects};

/// The seed `svcnet validate` hands out dry-run addresses and ports with.
const DRY_RUN_SEED: u64 = 0x5eed;

/// The answer to the case's (first) object: whether it is accepted, and its causes as the
/// `Status` lists them (an internal error is one cause without reason or field).
fn answer(case: &Case<ValidateExpect>) -> Result<(bool, Vec<(String, String)>), String> {
    let config = case.cluster.clone().unwrap_or_default();
    let cidrs: Vec<&str> = config.service_cidrs.iter().map(String::as_str).collect();
    let range = config.node_port_range.as_deref().unwrap_or("30000-32767");
    let mut cluster = Cluster::parse(&cidrs, range).map_err(|e| e.to_string())?;
    let olds = match &case.old {
        Some(old) => objects::objects(old)?,
        None => Vec::new(),
    };
    for o in &olds {
        if let Object::Service(svc) = o {
            let mut stored = svc.as_ref().clone();
            defaults::default_service(&mut stored);
            cluster.record_stored(&stored);
        }
    }
    let mut obj = objects::objects(&case.input)?
        .into_iter()
        .next()
        .ok_or("no object to validate")?;
    let mut rng = SplitMix64::new(DRY_RUN_SEED);
    let answer = match &case.old {
        Some(_) => {
            let old = obj
                .counterpart(&olds)
                .ok_or("no stored object to update")?
                .clone();
            update(&mut obj, &old, Some(&mut cluster), &mut rng)
        }
        None => create(&mut obj, Some(&mut cluster), &mut rng),
    };
    let causes = if answer.is_internal() {
        vec![(String::new(), String::new())]
    } else {
        answer
            .errors
            .iter()
            .map(|e| (e.type_.reason().to_owned(), e.field.clone()))
            .collect()
    };
    Ok((answer.errors.is_empty(), causes))
}

fn area(name: &str) -> usize {
    run_area(name, |case: &Case<ValidateExpect>| {
        (!case.has_flag("no-defaults"))
            .then(|| answer(case).and_then(|(valid, causes)| check::validate(&case.expect, valid, &causes)))
    })
}

#[test]
fn apiserver_cases() {
    assert_eq!(area("apiserver"), 124);
}

#[test]
fn validation_and_networkpolicy_cases_through_the_api_server() {
    assert_eq!(area("validation"), 3);
    assert_eq!(area("networkpolicy"), 3);
}
