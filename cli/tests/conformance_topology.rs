//! The `topology` conformance cases (`hints` and `endpoints`) through the CLI, checked as the
//! shared runner checks them.
//!
//! One difference: an expected `hints` entry of `null` (an endpoint that must carry no hint) is
//! read as "absent"; the shared runner crashes on it (`sorted(None)`).

mod common;

use std::collections::BTreeMap;

use serde_json::Value;

fn run_case(case: &Value, dir: &std::path::Path) -> Result<Value, String> {
    common::run_case_json(case, dir, true)
}

fn strs(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| x.as_str().unwrap_or_default().to_owned())
        .collect();
    out.sort();
    out
}

fn check_hints(case: &Value, res: &Value) -> Result<(), String> {
    let exp = &case["expect"];
    let mut got: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut cross = 0u64;
    for s in res["slices"].as_array().into_iter().flatten() {
        for e in s["endpoints"].as_array().into_iter().flatten() {
            let mut zones: Vec<String> = e["hints"]["forZones"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|z| z["name"].as_str().unwrap_or_default().to_owned())
                .collect();
            for z in &zones {
                *counts.entry(z.clone()).or_insert(0) += 1;
                if e["zone"].as_str() != Some(z.as_str()) {
                    cross += 1;
                }
            }
            zones.sort();
            for a in e["addresses"].as_array().into_iter().flatten() {
                if !zones.is_empty() {
                    got.insert(a.as_str().unwrap_or_default().to_owned(), zones.clone());
                }
            }
        }
    }
    if let Some(want) = exp.get("hints") {
        if want.is_null() {
            if !got.is_empty() {
                return Err(format!("hints {got:?}, want none"));
            }
        } else {
            let want: BTreeMap<String, Vec<String>> = want
                .as_object()
                .into_iter()
                .flatten()
                .filter(|(_, z)| !z.is_null())
                .map(|(a, z)| (a.clone(), strs(z)))
                .collect();
            if got != want {
                return Err(format!("hints {got:?}, want {want:?}"));
            }
        }
    }
    if let Some(want) = exp.get("hint_counts") {
        let want: BTreeMap<String, u64> = want
            .as_object()
            .into_iter()
            .flatten()
            .map(|(z, n)| (z.clone(), n.as_u64().unwrap_or(0)))
            .collect();
        if counts != want {
            return Err(format!("hint counts {counts:?}, want {want:?}"));
        }
    }
    if let Some(want) = exp.get("cross_zone_hints").and_then(Value::as_u64)
        && cross != want
    {
        return Err(format!("cross-zone hints {cross}, want {want}"));
    }
    let updated = res["updated"].as_array().map_or(0, Vec::len) as u64;
    if let Some(want) = exp.get("updates").and_then(Value::as_u64)
        && updated != want
    {
        return Err(format!("updated {updated} slices, want {want}"));
    }
    if let Some(reason) = exp.get("event_reason").and_then(Value::as_str) {
        let typ = exp.get("event_type").and_then(Value::as_str).unwrap_or("Normal");
        let found = res["events"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| e["type"] == typ && e["reason"] == reason);
        if !found {
            return Err(format!("events {}, want {typ} {reason}", res["events"]));
        }
    }
    Ok(())
}

fn check_endpoints(case: &Value, res: &Value) -> Result<(), String> {
    let exp = &case["expect"];
    let s = res["services"]
        .as_array()
        .and_then(|a| a.first())
        .ok_or("no services in output")?;
    for (k, ok) in [
        ("cluster", "cluster"),
        ("local", "local"),
        ("all_reachable", "allReachable"),
        ("has_any", "hasAny"),
    ] {
        let Some(w) = exp.get(k) else { continue };
        let g = &s[ok];
        let same = match w {
            Value::Null => g.is_null(),
            Value::Array(_) => g.is_array() && strs(g) == strs(w),
            other => g == other,
        };
        if !same {
            return Err(format!("{k}={g}, want {w}"));
        }
    }
    Ok(())
}

#[test]
fn topology_cases() {
    common::run_area("topology", |case, dir| {
        let res = run_case(case, dir)?;
        match case["subcommand"].as_str() {
            Some("hints") => check_hints(case, &res),
            Some("endpoints") => check_endpoints(case, &res),
            other => Err(format!("unexpected subcommand {other:?}")),
        }
    });
}
