//! The IPVS comparison of the shared conformance runner (`compare_ipvs` in `conformance.py`),
//! as kube-proxy v1.37.2's IPVS tests compare: every virtual server exactly (scheduler, flags,
//! timeout, real servers as a set), each listed ipset with exactly the listed entries, each
//! listed iptables chain with as many rules as listed, in order (any order for
//! `KUBE-IPVS-OUT-FILTER`, which kube-proxy fills in map order), each rule holding the listed
//! fields, and the bound addresses as a set.
#![allow(dead_code)]

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use svcnet_test_support::check::subset;

/// Chains whose rules kube-proxy writes in Go map order: compared as sets.
const UNORDERED: [&str; 1] = ["KUBE-IPVS-OUT-FILTER"];

/// `value` as JSON text with object keys sorted (Python's `json.dumps(sort_keys=True)`).
pub fn canonical(value: &Value) -> String {
    fn write(v: &Value, out: &mut String) {
        match v {
            Value::Object(m) => {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String((*k).clone()).to_string());
                    out.push(':');
                    write(&m[*k], out);
                }
                out.push('}');
            }
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(x, out);
                }
                out.push(']');
            }
            other => out.push_str(&other.to_string()),
        }
    }
    let mut s = String::new();
    write(value, &mut s);
    s
}

fn vs_key(v: &Value) -> (String, String, String) {
    (
        v["address"].to_string(),
        v["port"].to_string(),
        v["protocol"].to_string(),
    )
}

fn real_servers(v: &Value) -> Vec<(String, String, String)> {
    let mut out: Vec<(String, String, String)> = v["real_servers"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|r| {
            (
                r["address"].to_string(),
                r["port"].to_string(),
                r["weight"].to_string(),
            )
        })
        .collect();
    out.sort();
    out
}

fn sorted_flags(v: Option<&Value>) -> Vec<String> {
    let mut f: Vec<String> = v
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|x| x.to_string())
        .collect();
    f.sort();
    f
}

/// Compares the JSON output of `svcnet rules --backend ipvs --output json` (`got`) with a
/// case's `expect.data` (`want`); `Err` says what differs first.
pub fn compare_ipvs(got: &Value, want: &Value) -> Result<(), String> {
    if !got.is_object() || !got["virtual_servers"].is_array() {
        return Err("output has no \"virtual_servers\" list".into());
    }
    if let Some(wvs) = want.get("virtual_servers") {
        let g: BTreeMap<_, &Value> = got["virtual_servers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| (vs_key(v), v))
            .collect();
        let w: BTreeMap<_, &Value> = wvs
            .as_array()
            .into_iter()
            .flatten()
            .map(|v| (vs_key(v), v))
            .collect();
        let gk: BTreeSet<_> = g.keys().collect();
        let wk: BTreeSet<_> = w.keys().collect();
        if gk != wk {
            let missing: Vec<_> = wk.difference(&gk).take(3).collect();
            let extra: Vec<_> = gk.difference(&wk).take(3).collect();
            return Err(format!(
                "virtual servers: missing {missing:?}, unexpected {extra:?}"
            ));
        }
        for (k, wv) in &w {
            let gv = g[k];
            for f in ["scheduler", "flags", "timeout"] {
                if let Some(wf) = wv.get(f) {
                    let differ = if f == "flags" {
                        sorted_flags(gv.get(f)) != sorted_flags(Some(wf))
                    } else {
                        gv.get(f) != Some(wf)
                    };
                    if differ {
                        return Err(format!("virtual server {k:?}: {f}={:?}, want {wf}", gv.get(f)));
                    }
                }
            }
            if real_servers(gv) != real_servers(wv) {
                return Err(format!(
                    "virtual server {k:?}: real servers {:?}, want {:?}",
                    real_servers(gv),
                    real_servers(wv)
                ));
            }
        }
    }
    if let Some(sets) = want.get("ipsets").and_then(Value::as_object) {
        for (name, entries) in sets {
            let Some(gs) = got["ipsets"].get(name) else {
                return Err(format!("ipset {name} missing"));
            };
            let mut g: Vec<String> = gs.as_array().into_iter().flatten().map(canonical).collect();
            let mut w: Vec<String> = entries.as_array().into_iter().flatten().map(canonical).collect();
            g.sort();
            w.sort();
            if g != w {
                let missing: Vec<_> = w.iter().filter(|e| !g.contains(e)).take(3).collect();
                let extra: Vec<_> = g.iter().filter(|e| !w.contains(e)).take(3).collect();
                return Err(format!(
                    "entries of ipset {name} differ: missing {missing:?}, unexpected {extra:?}"
                ));
            }
        }
    }
    if let Some(chains) = want.get("iptables_chains").and_then(Value::as_object) {
        for (chain, rules) in chains {
            let mut g: Vec<Value> = got["iptables_chains"][chain]
                .as_array()
                .cloned()
                .unwrap_or_default();
            let mut w: Vec<Value> = rules.as_array().cloned().unwrap_or_default();
            if g.len() != w.len() {
                return Err(format!("chain {chain}: {} rules, want {}", g.len(), w.len()));
            }
            if UNORDERED.contains(&chain.as_str()) {
                let fields: BTreeSet<String> = w
                    .iter()
                    .filter_map(Value::as_object)
                    .flat_map(|o| o.keys().cloned())
                    .collect();
                let proj = |r: &Value| {
                    let m: serde_json::Map<String, Value> = fields
                        .iter()
                        .map(|f| (f.clone(), r.get(f).cloned().unwrap_or(Value::Null)))
                        .collect();
                    canonical(&Value::Object(m))
                };
                g.sort_by_key(|r| proj(r));
                w.sort_by_key(|r| proj(r));
            }
            for (i, (gr, wr)) in g.iter().zip(&w).enumerate() {
                if !subset(wr, gr) {
                    return Err(format!("chain {chain} rule {i}: got {gr}, want {wr}"));
                }
            }
        }
    }
    if let Some(wb) = want.get("bind_addresses") {
        let sorted = |v: &Value| {
            let mut s: Vec<String> = v
                .as_array()
                .into_iter()
                .flatten()
                .map(|x| x.to_string())
                .collect();
            s.sort();
            s
        };
        if sorted(&got["bind_addresses"]) != sorted(wb) {
            return Err(format!(
                "bind addresses {:?}, want {:?}",
                sorted(&got["bind_addresses"]),
                sorted(wb)
            ));
        }
    }
    Ok(())
}
