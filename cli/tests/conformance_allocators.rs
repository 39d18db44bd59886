//! The `allocators` conformance cases (op scripts) through the CLI, checked as the shared
//! runner checks them: one result per op, and every key of each expected result equal.

mod common;

use serde_json::Value;

fn check_alloc(case: &Value, dir: &std::path::Path) -> Result<(), String> {
    let input = common::write_json(dir, "input.json", &case["input"]);
    let mut args: Vec<String> = vec!["alloc".into()];
    for a in case["args"].as_array().into_iter().flatten() {
        args.push(a.as_str().unwrap_or_default().to_owned());
    }
    args.push(input);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = common::svcnet(&argv);
    if run.stdout.trim().is_empty() {
        return Err(format!("exit {}: {}", run.code, run.stderr.trim()));
    }
    let out = common::first_json(&run.stdout).ok_or("output is not JSON")?;
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
