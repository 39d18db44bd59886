//! The `allocators` conformance cases (operation scripts), run in-process through the `script`
//! runner ([`Model`]), judged by the shared pass criteria (`svcnet_test_support::check::alloc`)
//! the CLI's conformance tests apply to `svcnet alloc`. The crate's dev-dependency on itself turns
//! the `script` feature on for its tests.

use serde_json::Value;
use svcnet_allocators::SplitMix64;
use svcnet_allocators::script::Model;
use svcnet_test_support::case::{AllocExpect, Case, run_area};
use svcnet_test_support::check;

/// `svcnet alloc --seed N`: one result an op.
fn run(case: &Case<AllocExpect>) -> Result<Vec<Value>, String> {
    let seed: u64 = case
        .arg("seed")
        .unwrap_or("0")
        .parse()
        .map_err(|e| format!("--seed: {e}"))?;
    let script = &case.input;
    let mut model = Model::from_script(script).map_err(|e| e.to_string())?;
    let mut rng = SplitMix64::new(seed);
    script["ops"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|op| serde_json::to_value(model.run_op(op, &mut rng)).map_err(|e| e.to_string()))
        .collect()
}

#[test]
fn allocators_cases() {
    let n = run_area("allocators", |case: &Case<AllocExpect>| {
        Some(run(case).and_then(|results| check::alloc(&case.expect, &results)))
    });
    assert_eq!(n, 34);
}
