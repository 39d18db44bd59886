//! The pass criteria of each conformance area, as the shared runner (`conformance.py`) applies
//! them, over the JSON a verb answers with (the shape `svcnet ... --output json` prints). The CLI
//! tests and the libraries' in-process runners both call these, so they judge alike.
//!
//! Every function answers `Err(why)` for a failing case.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use crate::case::{AllocExpect, Case, DiscoveryExpect, SliceExpect, TopologyExpect, ValidateExpect};

/// True when every key of `want` is in `got` with an equal (recursively subset) value.
pub fn subset(want: &Value, got: &Value) -> bool {
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            w.iter().all(|(k, v)| g.get(k).is_some_and(|gv| subset(v, gv)))
        }
        (Value::Object(_), _) => false,
        _ => want == got,
    }
}

/// `validate`: the verdict, the exact cause count when given, and every expected
/// `(reason, field)` among the `causes`.
pub fn validate(exp: &ValidateExpect, valid: bool, causes: &[(String, String)]) -> Result<(), String> {
    if valid != exp.valid {
        return Err(format!("valid={valid}, want {}; got {causes:?}", exp.valid));
    }
    if let Some(n) = exp.error_count
        && causes.len() != n
    {
        return Err(format!("{} errors, want {n}: {causes:?}", causes.len()));
    }
    for e in &exp.errors {
        let want = (e.type_.clone(), e.field.clone());
        if !causes.contains(&want) {
            return Err(format!("missing {want:?}; got {causes:?}"));
        }
    }
    Ok(())
}

/// The `(reason, field)` pairs of a Kubernetes `Status`' causes, and whether it is a Success.
pub fn status_causes(status: &Value) -> (bool, Vec<(String, String)>) {
    let causes = status["details"]["causes"]
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
    (status["status"] == "Success", causes)
}

/// `alloc`: one result an op, every key of each expected result equal.
pub fn alloc(exp: &AllocExpect, results: &[Value]) -> Result<(), String> {
    if results.len() != exp.results.len() {
        return Err(format!("{} results, want {}", results.len(), exp.results.len()));
    }
    for (i, (g, w)) in results.iter().zip(&exp.results).enumerate() {
        for (k, v) in w {
            if g.get(k) != Some(v) {
                return Err(format!("op {i}: {k}={:?}, want {v}", g.get(k)));
            }
        }
    }
    Ok(())
}

fn arr(v: &Value) -> Vec<Value> {
    v.as_array().cloned().unwrap_or_default()
}

fn endpoints_of<'a>(slices: impl IntoIterator<Item = &'a Value>) -> Vec<Value> {
    slices.into_iter().flat_map(|s| arr(&s["endpoints"])).collect()
}

/// Canonical text of a JSON value (serde_json maps are sorted, as `sort_keys=True`).
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

fn name_of(s: &Value) -> String {
    s["metadata"]["name"].as_str().unwrap_or("").to_owned()
}

/// `slice` / `mirror`: `plan` is `{"create","update","delete","error"}` (slices as JSON); the
/// slices after it are the case's input slices with the plan applied.
pub fn slice(case: &Case<SliceExpect>, plan: &Value) -> Result<(), String> {
    let exp = &case.expect;
    let (c, u, d) = (arr(&plan["create"]), arr(&plan["update"]), arr(&plan["delete"]));
    for (k, got, want) in [
        ("creates", &c, exp.creates),
        ("updates", &u, exp.updates),
        ("deletes", &d, exp.deletes),
    ] {
        if let Some(n) = want
            && got.len() != n
        {
            return Err(format!("{k}={}, want {n}", got.len()));
        }
    }
    let before: BTreeMap<String, Value> = arr(&case.input["items"])
        .into_iter()
        .filter(|i| i["kind"] == "EndpointSlice")
        .map(|i| (name_of(&i), i))
        .collect();
    let mut existing = before.clone();
    for s in &d {
        existing.remove(&name_of(s));
    }
    for s in &u {
        existing.insert(name_of(s), s.clone());
    }
    let after: Vec<Value> = existing.values().cloned().chain(c.iter().cloned()).collect();
    let changed: Vec<&Value> = u.iter().chain(c.iter()).collect();

    if let Some(want) = &exp.endpoints_per_slice {
        let mut counts: Vec<usize> = after.iter().map(|s| arr(&s["endpoints"]).len()).collect();
        counts.sort_unstable();
        let mut want = want.clone();
        want.sort_unstable();
        if counts != want {
            return Err(format!("endpoints per slice {counts:?}, want {want:?}"));
        }
    }
    if let Some(want) = exp.error
        && truthy(&plan["error"]) != want
    {
        return Err(format!("error={}, want {want}", plan["error"]));
    }
    if let Some(want) = &exp.address_types {
        let got: BTreeSet<String> = after
            .iter()
            .filter_map(|s| s["addressType"].as_str().map(str::to_owned))
            .collect();
        let want: BTreeSet<String> = want.iter().cloned().collect();
        if got != want {
            return Err(format!("address types {got:?}, want {want:?}"));
        }
    }
    if let Some(want) = &exp.slice_ports {
        let mut got: Vec<String> = after.iter().map(|s| port_list_key(&s["ports"])).collect();
        got.sort();
        let mut want: Vec<String> = want.iter().map(port_list_key).collect();
        want.sort();
        if got != want {
            return Err(format!("slice ports {got:?}, want {want:?}"));
        }
    }
    if let Some(want) = &exp.slice_port_numbers {
        let got: BTreeSet<i64> = after
            .iter()
            .flat_map(|s| arr(&s["ports"]))
            .filter_map(|p| p["port"].as_i64())
            .collect();
        let want: BTreeSet<i64> = want.iter().copied().collect();
        if got != want {
            return Err(format!("slice port numbers {got:?}, want {want:?}"));
        }
    }
    if let Some(want) = &exp.slice_labels {
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
    if let Some(want) = &exp.slice_label_foo {
        for s in &changed {
            if &s["metadata"]["labels"]["foo"] != want {
                return Err("slice label foo missing or wrong".into());
            }
        }
    }
    if let Some(want) = exp.all_endpoints_ready {
        let ready = endpoints_of(&after)
            .iter()
            .all(|e| e["conditions"]["ready"] == Value::Bool(true));
        if ready != want {
            return Err(format!("all endpoints ready={ready}, want {want}"));
        }
    }
    if let Some(want) = exp.endpoints_added {
        let old: Vec<Value> = endpoints_of(before.values())
            .iter()
            .map(|e| e["addresses"].clone())
            .collect();
        let added = endpoints_of(&after)
            .iter()
            .filter(|e| !old.contains(&e["addresses"]))
            .count();
        if added != want {
            return Err(format!("endpoints added {added}, want {want}"));
        }
    }
    if let Some(want) = &exp.endpoints {
        for (family, wants) in want {
            let got = endpoints_of(after.iter().filter(|s| s["addressType"] == family.as_str()));
            for w in wants {
                let Some(m) = got.iter().find(|g| g["addresses"] == w["addresses"]) else {
                    return Err(format!("no {family} endpoint {}", w["addresses"]));
                };
                if !subset(w, m) {
                    return Err(format!("endpoint {}: got {m}, want {w}", w["addresses"]));
                }
            }
        }
    }
    Ok(())
}

fn sorted_strs(v: &Value) -> Vec<String> {
    let mut out: Vec<String> = v
        .as_array()
        .into_iter()
        .flatten()
        .map(|x| x.as_str().unwrap_or_default().to_owned())
        .collect();
    out.sort();
    out
}

/// `hints`: `res` is `{"slices","updated","events"}` (slices and events as JSON).
///
/// An expected `hints` entry of `null` (an endpoint that must carry no hint) reads as "absent";
/// the shared runner crashes on it (`sorted(None)`).
pub fn hints(exp: &TopologyExpect, res: &Value) -> Result<(), String> {
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
    match &exp.hints {
        None => {}
        Some(None) if !got.is_empty() => return Err(format!("hints {got:?}, want none")),
        Some(None) => {}
        Some(Some(want)) => {
            let want: BTreeMap<String, Vec<String>> = want
                .iter()
                .filter_map(|(a, z)| {
                    let mut z = z.clone()?;
                    z.sort();
                    Some((a.clone(), z))
                })
                .collect();
            if got != want {
                return Err(format!("hints {got:?}, want {want:?}"));
            }
        }
    }
    if let Some(want) = &exp.hint_counts
        && &counts != want
    {
        return Err(format!("hint counts {counts:?}, want {want:?}"));
    }
    if let Some(want) = exp.cross_zone_hints
        && cross != want
    {
        return Err(format!("cross-zone hints {cross}, want {want}"));
    }
    let updated = res["updated"].as_array().map_or(0, Vec::len);
    if let Some(want) = exp.updates
        && updated != want
    {
        return Err(format!("updated {updated} slices, want {want}"));
    }
    if let Some(reason) = &exp.event_reason {
        let typ = exp.event_type.as_deref().unwrap_or("Normal");
        let found = res["events"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|e| e["type"] == typ && e["reason"] == reason.as_str());
        if !found {
            return Err(format!("events {}, want {typ} {reason}", res["events"]));
        }
    }
    Ok(())
}

/// `endpoints`: `res` is `{"services": [{"cluster","local","allReachable","hasAny"}, ...]}`; the
/// first service port is compared (endpoint lists as sets).
pub fn endpoints(exp: &TopologyExpect, res: &Value) -> Result<(), String> {
    let s = res["services"]
        .as_array()
        .and_then(|a| a.first())
        .ok_or("no services in output")?;
    for (k, key, want) in [
        ("cluster", "cluster", &exp.cluster),
        ("local", "local", &exp.local),
        ("all_reachable", "allReachable", &exp.all_reachable),
    ] {
        let Some(want) = want else { continue };
        let g = &s[key];
        let same = match want {
            None => g.is_null(),
            Some(w) => {
                let mut w = w.clone();
                w.sort();
                g.is_array() && sorted_strs(g) == w
            }
        };
        if !same {
            return Err(format!("{k}={g}, want {want:?}"));
        }
    }
    if let Some(want) = exp.has_any
        && s["hasAny"] != want
    {
        return Err(format!("has_any={}, want {want}", s["hasAny"]));
    }
    Ok(())
}

fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// `dns`: `out` is `{"records": [{"name","type","data"}, ...]}`; records compare as
/// `(name, TYPE, data)` without regard to case.
pub fn dns(exp: &DiscoveryExpect, out: &Value) -> Result<(), String> {
    let got: BTreeSet<(String, String, String)> = out["records"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                text(&r["name"]).to_lowercase(),
                text(&r["type"]).to_uppercase(),
                text(&r["data"]).to_lowercase(),
            )
        })
        .collect();
    let want: BTreeSet<(String, String, String)> = exp
        .records
        .iter()
        .map(|r| {
            (
                r.name.to_lowercase(),
                r.type_.to_uppercase(),
                r.data.to_lowercase(),
            )
        })
        .collect();
    let missing: Vec<_> = want.difference(&got).collect();
    if !missing.is_empty() {
        return Err(format!("missing records {:?}", &missing[..missing.len().min(3)]));
    }
    if exp.complete {
        let names: BTreeSet<&String> = want.iter().map(|w| &w.0).collect();
        let extra: Vec<_> = got.difference(&want).filter(|g| names.contains(&g.0)).collect();
        if !extra.is_empty() {
            return Err(format!("unexpected records {:?}", &extra[..extra.len().min(3)]));
        }
    }
    let absent: BTreeSet<String> = exp.absent.iter().map(|a| a.to_lowercase()).collect();
    let present: Vec<_> = got.iter().filter(|g| absent.contains(&g.0)).collect();
    if !present.is_empty() {
        return Err(format!(
            "records at names that must not exist: {:?}",
            &present[..present.len().min(3)]
        ));
    }
    Ok(())
}

/// `env`: `out` is `{"env": [{"name","value"}, ...]}`.
pub fn env(exp: &DiscoveryExpect, out: &Value) -> Result<(), String> {
    let got: BTreeSet<(String, String)> = out["env"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|v| (text(&v["name"]), text(&v["value"])))
        .collect();
    let want: BTreeSet<(String, String)> = exp
        .env
        .iter()
        .map(|v| (v.name.clone(), v.value.clone()))
        .collect();
    let missing: Vec<_> = want.difference(&got).collect();
    if !missing.is_empty() {
        return Err(format!(
            "missing variables {:?}",
            &missing[..missing.len().min(3)]
        ));
    }
    if exp.complete {
        let extra: Vec<_> = got.difference(&want).collect();
        if !extra.is_empty() {
            return Err(format!("unexpected variables {:?}", &extra[..extra.len().min(3)]));
        }
    }
    Ok(())
}
