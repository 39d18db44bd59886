//! The `slicer` conformance cases (`slice` and `mirror`) through the CLI, checked as the shared
//! runner (`conformance.py`) checks them.

mod common;

use std::collections::BTreeMap;

use serde_json::Value;

fn arr(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

fn endpoints_of<'a>(slices: impl IntoIterator<Item = &'a Value>) -> Vec<Value> {
    slices.into_iter().flat_map(|s| arr(&s["endpoints"])).collect()
}

/// `json.dumps(x, sort_keys=True)`-like canonical text (serde_json maps are sorted).
fn canon(v: &Value) -> String {
    serde_json::to_string(v).unwrap_or_default()
}

fn port_list_key(ports: &Value) -> String {
    let mut ps: Vec<String> = arr(ports).iter().map(canon).collect();
    ps.sort();
    format!("[{}]", ps.join(","))
}

fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Number(n) => n.as_f64().is_some_and(|f| f != 0.0),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
    }
}

/// Checks one `slice` / `mirror` case.
fn check(case: &Value, dir: &std::path::Path) -> Result<(), String> {
    let plan = common::run_case_json(case, dir, true)?;
    let exp = &case["expect"];
    let (c, u, d) = (arr(&plan["create"]), arr(&plan["update"]), arr(&plan["delete"]));
    for (k, got) in [("creates", &c), ("updates", &u), ("deletes", &d)] {
        if let Some(n) = exp.get(k).and_then(Value::as_u64)
            && got.len() as u64 != n
        {
            return Err(format!("{k}={}, want {n}", got.len()));
        }
    }
    let before: BTreeMap<String, Value> = arr(&case["input"]["items"])
        .into_iter()
        .filter(|i| i["kind"] == "EndpointSlice")
        .map(|i| (i["metadata"]["name"].as_str().unwrap_or("").to_owned(), i))
        .collect();
    let mut existing = before.clone();
    for s in &d {
        existing.remove(s["metadata"]["name"].as_str().unwrap_or(""));
    }
    for s in &u {
        existing.insert(s["metadata"]["name"].as_str().unwrap_or("").to_owned(), s.clone());
    }
    let after: Vec<Value> = existing.values().cloned().chain(c.iter().cloned()).collect();
    let changed: Vec<Value> = u.iter().chain(c.iter()).cloned().collect();

    if let Some(want) = exp.get("endpoints_per_slice") {
        let mut counts: Vec<u64> = after.iter().map(|s| arr(&s["endpoints"]).len() as u64).collect();
        counts.sort_unstable();
        let mut want: Vec<u64> = arr(want).iter().filter_map(Value::as_u64).collect();
        want.sort_unstable();
        if counts != want {
            return Err(format!("endpoints per slice {counts:?}, want {want:?}"));
        }
    }
    if let Some(want) = exp.get("error")
        && truthy(&plan["error"]) != truthy(want)
    {
        return Err(format!("error={}, want {want}", plan["error"]));
    }
    if let Some(want) = exp.get("address_types") {
        let mut got: Vec<String> = after
            .iter()
            .filter_map(|s| s["addressType"].as_str().map(str::to_owned))
            .collect();
        got.sort();
        got.dedup();
        let mut want: Vec<String> = arr(want)
            .iter()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect();
        want.sort();
        if got != want {
            return Err(format!("address types {got:?}, want {want:?}"));
        }
    }
    if let Some(want) = exp.get("slice_ports") {
        let mut got: Vec<String> = after.iter().map(|s| port_list_key(&s["ports"])).collect();
        got.sort();
        let mut want: Vec<String> = arr(want).iter().map(port_list_key).collect();
        want.sort();
        if got != want {
            return Err(format!("slice ports {got:?}, want {want:?}"));
        }
    }
    if let Some(want) = exp.get("slice_port_numbers") {
        let mut got: Vec<i64> = after
            .iter()
            .flat_map(|s| arr(&s["ports"]))
            .filter_map(|p| p["port"].as_i64())
            .collect();
        got.sort_unstable();
        got.dedup();
        let mut want: Vec<i64> = arr(want).iter().filter_map(Value::as_i64).collect();
        want.sort_unstable();
        if got != want {
            return Err(format!("slice port numbers {got:?}, want {want:?}"));
        }
    }
    if let Some(want) = exp.get("slice_labels").and_then(Value::as_object) {
        for s in &changed {
            for (k, v) in want {
                if &s["metadata"]["labels"][k] != v {
                    return Err(format!(
                        "slice {} label {k}={}, want {v}",
                        s["metadata"]["name"], s["metadata"]["labels"][k]
                    ));
                }
            }
        }
    }
    if let Some(want) = exp.get("slice_label_foo") {
        for s in &changed {
            if &s["metadata"]["labels"]["foo"] != want {
                return Err("slice label foo missing or wrong".into());
            }
        }
    }
    if let Some(want) = exp.get("all_endpoints_ready").and_then(Value::as_bool) {
        let ready = endpoints_of(&after)
            .iter()
            .all(|e| e["conditions"]["ready"] == Value::Bool(true));
        if ready != want {
            return Err(format!("all endpoints ready={ready}, want {want}"));
        }
    }
    if let Some(want) = exp.get("endpoints_added").and_then(Value::as_u64) {
        let old: Vec<Value> = endpoints_of(before.values())
            .iter()
            .map(|e| e["addresses"].clone())
            .collect();
        let added = endpoints_of(&after)
            .iter()
            .filter(|e| !old.contains(&e["addresses"]))
            .count() as u64;
        if added != want {
            return Err(format!("endpoints added {added}, want {want}"));
        }
    }
    if let Some(want) = exp.get("endpoints").and_then(Value::as_object) {
        for (family, wants) in want {
            let got = endpoints_of(after.iter().filter(|s| &s["addressType"] == family));
            for w in arr(wants) {
                let Some(m) = got.iter().find(|g| g["addresses"] == w["addresses"]) else {
                    return Err(format!("no {family} endpoint {}", w["addresses"]));
                };
                if !common::subset(&w, m) {
                    return Err(format!("endpoint {}: got {m}, want {w}", w["addresses"]));
                }
            }
        }
    }
    Ok(())
}

#[test]
fn slicer_cases() {
    common::run_area("slicer", check);
}
