//! The `allocators` conformance cases (op scripts) through the CLI, checked as the shared
//! runner checks them: one result per op, and every key of each expected result equal.

mod common;

use serde_json::Value;

fn check_alloc(case: &Value, dir: &std::path::Path) -> Result<(), String> {
    let out = common::run_case_json(case, dir, false)?;
    let got = out["results"].as_array().cloned().unwrap_or_default();
    let want = case["expect"]["results"].as_array().cloned().unwrap_or_default();
    if got.len() != want.len() {
        return Err(format!("{} results, want {}", got.len(), want.len()));
    }
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        for (k, v) in w.as_object().into_iter().flatten() {
            if g.get(k) != Some(v) {
                return Err(format!("op {i}: {k}={:?}, want {v}", g.get(k)));
            }
        }
    }
    Ok(())
}

#[test]
fn allocators_cases() {
    common::run_area("allocators", check_alloc);
}
