//! The `discovery` conformance cases (`dns` and `env`) through the CLI, checked as the shared
//! runner checks them.

mod common;

use std::collections::BTreeSet;

use serde_json::Value;

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `(name, TYPE, data)` lower-cased as the runner compares them.
fn record_key(r: &Value) -> (String, String, String) {
    (
        text(&r["name"]).to_lowercase(),
        text(&r["type"]).to_uppercase(),
        text(&r["data"]).to_lowercase(),
    )
}

fn run_case(case: &Value, dir: &std::path::Path) -> Result<Value, String> {
    common::run_case_json(case, dir, true)
}

fn check_dns(case: &Value, out: &Value) -> Result<(), String> {
    let exp = &case["expect"];
    let got: BTreeSet<_> = out["records"]
        .as_array()
        .into_iter()
        .flatten()
        .map(record_key)
        .collect();
    let want: BTreeSet<_> = exp["records"]
        .as_array()
        .into_iter()
        .flatten()
        .map(record_key)
        .collect();
    let missing: Vec<_> = want.difference(&got).collect();
    if !missing.is_empty() {
        return Err(format!("missing records {:?}", &missing[..missing.len().min(3)]));
    }
    if exp["complete"].as_bool() == Some(true) {
        let names: BTreeSet<&String> = want.iter().map(|w| &w.0).collect();
        let extra: Vec<_> = got.difference(&want).filter(|g| names.contains(&g.0)).collect();
        if !extra.is_empty() {
            return Err(format!("unexpected records {:?}", &extra[..extra.len().min(3)]));
        }
    }
    let absent: BTreeSet<String> = exp["absent"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| text(a).to_lowercase())
        .collect();
    let present: Vec<_> = got.iter().filter(|g| absent.contains(&g.0)).collect();
    if !present.is_empty() {
        return Err(format!(
            "records at names that must not exist: {:?}",
            &present[..present.len().min(3)]
        ));
    }
    Ok(())
}

fn check_env(case: &Value, out: &Value) -> Result<(), String> {
    let exp = &case["expect"];
    let pair = |v: &Value| (text(&v["name"]), text(&v["value"]));
    let got: BTreeSet<_> = out["env"].as_array().into_iter().flatten().map(pair).collect();
    let want: BTreeSet<_> = exp["env"].as_array().into_iter().flatten().map(pair).collect();
    let missing: Vec<_> = want.difference(&got).collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing variables {:?}",
            &missing[..missing.len().min(3)]
        ));
    }
    if exp["complete"].as_bool() == Some(true) {
        let extra: Vec<_> = got.difference(&want).collect();
        if !extra.is_empty() {
            return Err(format!("unexpected variables {:?}", &extra[..extra.len().min(3)]));
        }
    }
    Ok(())
}

/// Checks one `dns` or `env` case.
fn check_discovery(case: &Value, dir: &std::path::Path) -> Result<(), String> {
    let out = run_case(case, dir)?;
    match case["subcommand"].as_str() {
        Some("dns") => check_dns(case, &out),
        Some("env") => check_env(case, &out),
        other => Err(format!("unknown subcommand {other:?}")),
    }
}

#[test]
fn discovery_cases() {
    common::run_area("discovery", check_discovery);
}

#[test]
fn the_checker_can_fail() {
    // A case whose expectation is wrong must be reported, not silently pass.
    let mut case = common::cases("discovery")
        .into_iter()
        .find(|(n, _)| n == "dns-version-txt.json")
        .map(|(_, c)| c)
        .expect("case");
    case["expect"]["records"][0]["data"] = Value::String("\"1.0.0\"".into());
    let dir = common::scratch_dir("discovery-neg");
    assert!(check_discovery(&case, &dir).is_err());
    let _ = std::fs::remove_dir_all(&dir);
}
