//! The IPVS `rules` conformance cases (`testdata/conformance/rules/ipvs-*.json`) through the CLI,
//! checked as the shared runner's `check_rules` checks them: `svcnet rules ARGS [--prior F]...
//! --output json INPUT`, then the comparison of kube-proxy's IPVS tests
//! (`common/ipvs_compare.rs`).
//!
//! Correction to the shared copies: the IPv6 cases (`ipvs-gen-ipv6-1075`,
//! `ipvs-gen-dualstack-1078`, `ipvs-gen-partial-1004`) were recorded from kube-proxy's test fake,
//! which names the ipsets of the IPv6 proxier `KUBE-...` (`NewFakeProxier` passes
//! `isIPv6 = false` to `NewIPSet`); kube-proxy v1.37.2 itself (`NewProxier`) names them
//! `KUBE-6-...`. The project's copies expect the `KUBE-6-` names.

mod common;
#[path = "common/ipvs_compare.rs"]
mod ipvs_compare;

use std::path::Path;

use serde_json::Value;

fn check(case: &Value, dir: &Path) -> Result<(), String> {
    let exp = &case["expect"];
    if exp["format"] != "ipvs-json" {
        return Err(format!("not an IPVS case: format {}", exp["format"]));
    }
    let mut args: Vec<String> = vec!["rules".into()];
    args.extend(
        case["args"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| a.as_str().unwrap_or_default().to_owned()),
    );
    for (n, step) in case["prior"].as_array().into_iter().flatten().enumerate() {
        let f = common::write_json(dir, &format!("prior{n}.json"), &step["input"]);
        let flag = if step["then"] == "age-stale-chains" {
            "--prior-aged"
        } else {
            "--prior"
        };
        args.push(flag.into());
        args.push(f);
    }
    args.push("--output".into());
    args.push("json".into());
    args.push(common::write_json(dir, "input.json", &case["input"]));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = common::svcnet(&argv);
    if run.code != 0 {
        return Err(format!("exit {}: {}", run.code, run.stderr.trim()));
    }
    let got =
        common::first_json(&run.stdout).ok_or_else(|| format!("output is not JSON: {:.100}", run.stdout))?;
    ipvs_compare::compare_ipvs(&got, exp.get("data").unwrap_or(&Value::Null))
}

#[test]
fn ipvs_rules_cases_pass() {
    let all: Vec<(String, Value)> = common::cases("rules")
        .into_iter()
        .filter(|(n, _)| n.starts_with("ipvs-"))
        .collect();
    assert_eq!(all.len(), 23, "the 23 IPVS cases");
    let mut failures = Vec::new();
    for (name, case) in &all {
        let dir = common::scratch_dir("rules-ipvs");
        if let Err(why) = check(case, &dir) {
            failures.push(format!("{name}: {why}"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(
        failures.is_empty(),
        "{} of {} IPVS cases fail:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

/// The comparison can fail: a changed weight, a missing ipset entry, a reordered chain and a
/// missing bound address are each caught.
#[test]
fn the_comparison_catches_differences() {
    let (_, case) = common::cases("rules")
        .into_iter()
        .find(|(n, _)| n == "ipvs-gen-mixed-1013.json")
        .expect("case");
    let want = &case["expect"]["data"];
    let mut got = want.clone();
    assert_eq!(ipvs_compare::compare_ipvs(&got, want), Ok(()));

    got["virtual_servers"][0]["real_servers"][0]["weight"] = 0.into();
    assert!(ipvs_compare::compare_ipvs(&got, want).is_err());

    let mut got = want.clone();
    got["ipsets"]["KUBE-CLUSTER-IP"].as_array_mut().unwrap().pop();
    assert!(ipvs_compare::compare_ipvs(&got, want).is_err());

    let mut got = want.clone();
    got["iptables_chains"]["KUBE-SERVICES"]
        .as_array_mut()
        .unwrap()
        .swap(0, 1);
    assert!(ipvs_compare::compare_ipvs(&got, want).is_err());

    let mut got = want.clone();
    got["bind_addresses"].as_array_mut().unwrap().pop();
    assert!(ipvs_compare::compare_ipvs(&got, want).is_err());

    let mut got = want.clone();
    got["virtual_servers"][0]["flags"] = serde_json::json!(["hashed"]);
    assert!(ipvs_compare::compare_ipvs(&got, want).is_err());
}
