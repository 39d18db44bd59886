//! The `validation` conformance cases through the CLI, checked as the shared runner checks them.

mod common;

use serde_json::Value;

/// Checks one `validate` case; shared by the validation and networkpolicy areas.
pub fn check_validate(case: &Value, dir: &std::path::Path) -> Result<(), String> {
    let input = common::write_json(dir, "input.json", &case["input"]);
    let mut args: Vec<String> = vec!["validate".into(), "--output".into(), "json".into()];
    if let Some(old) = case.get("old").filter(|o| !o.is_null()) {
        args.push("--old".into());
        args.push(common::write_json(dir, "old.json", old));
    }
    for a in case["args"].as_array().into_iter().flatten() {
        args.push(a.as_str().unwrap_or_default().to_owned());
    }
    args.push(input);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = common::svcnet(&argv);
    if run.code == 2 || run.stdout.trim().is_empty() {
        return Err(format!("exit {}: {}", run.code, run.stderr.trim()));
    }
    let st = common::first_json(&run.stdout).ok_or("output is not JSON")?;
    let valid = st["status"] == "Success";
    let causes: Vec<(String, String)> = st["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            (
                c["reason"].as_str().unwrap_or("").to_owned(),
                c["field"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let exp = &case["expect"];
    if Some(valid) != exp["valid"].as_bool() {
        return Err(format!("valid={valid}, want {}; got {causes:?}", exp["valid"]));
    }
    if let Some(n) = exp.get("error_count").and_then(Value::as_u64)
        && causes.len() as u64 != n
    {
        return Err(format!("{} errors, want {n}: {causes:?}", causes.len()));
    }
    for e in exp["errors"].as_array().into_iter().flatten() {
        let want = (
            e["type"].as_str().unwrap_or("").to_owned(),
            e["field"].as_str().unwrap_or("").to_owned(),
        );
        if !causes.contains(&want) {
            return Err(format!("missing {want:?}; got {causes:?}"));
        }
    }
    Ok(())
}

#[test]
fn validation_cases() {
    common::run_area("validation", check_validate);
}
