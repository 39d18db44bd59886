//! The nftables `rules` conformance cases through the CLI, compared as the shared
//! runner's `check_rules` compares them (kube-proxy's `sortNFTablesTransaction`, the
//! scoped chain comparison, and the last transaction's operation count).

mod common;
#[path = "common/nft.rs"]
mod nft;

use serde_json::Value;
use std::path::Path;

fn run_rules(case: &Value, dir: &Path, print: &str) -> Result<String, String> {
    let input = common::write_json(dir, "input.json", &case["input"]);
    let mut args: Vec<String> = vec!["rules".into()];
    for a in case["args"].as_array().into_iter().flatten() {
        args.push(a.as_str().unwrap_or_default().to_owned());
    }
    for (n, step) in case["prior"].as_array().into_iter().flatten().enumerate() {
        let p = common::write_json(dir, &format!("prior{n}.json"), &step["input"]);
        let flag = if step["then"] == "age-stale-chains" {
            "--prior-aged"
        } else {
            "--prior"
        };
        args.push(flag.into());
        args.push(p);
    }
    args.push("--print".into());
    args.push(print.into());
    args.push(input);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = common::svcnet(&argv);
    if run.code != 0 {
        return Err(format!("exit {}: {}", run.code, run.stderr.trim()));
    }
    Ok(run.stdout)
}

fn check(case: &Value, dir: &Path) -> Result<(), String> {
    let exp = &case["expect"];
    if exp["format"] != "nft" {
        return Err(format!("unexpected format {}", exp["format"]));
    }
    let out = run_rules(case, dir, "state")?;
    if !nft::has_table(&out) {
        return Err("no \"add table\" in the rule set".into());
    }
    let want_text = exp["text"].as_str().unwrap_or_default();
    let (got, want, what) = match exp.get("scope").and_then(|s| s["chain"].as_str()) {
        Some(chain) => (
            nft::scope(&out, chain),
            nft::scope(want_text, chain),
            format!("rules of chain {chain}"),
        ),
        None => (
            nft::norm_nft(&out),
            nft::norm_nft(want_text),
            "nftables rule sets".to_owned(),
        ),
    };
    if got != want {
        return Err(nft::diff(&got, &want, &what));
    }
    if exp.get("transaction").is_some() || exp.get("last_transaction_operations").is_some() {
        let tx = run_rules(case, dir, "transaction")?;
        if let Some(w) = exp["transaction"].as_str() {
            let (g, w) = (nft::norm_nft(&tx), nft::norm_nft(w));
            if g != w {
                return Err(nft::diff(&g, &w, "last transactions"));
            }
        }
        if let Some(n) = exp["last_transaction_operations"].as_u64()
            && nft::operations(&tx) as u64 != n
        {
            return Err(format!(
                "{} operations in the last transaction, want {n}",
                nft::operations(&tx)
            ));
        }
    }
    Ok(())
}

#[test]
fn nftables_cases() {
    let all: Vec<_> = common::cases("rules")
        .into_iter()
        .filter(|(n, _)| n.starts_with("nftables-"))
        .collect();
    assert_eq!(
        all.len(),
        36,
        "the 36 nftables cases are kept in testdata/conformance/rules"
    );
    let mut failures = Vec::new();
    for (name, case) in &all {
        let dir = common::scratch_dir("rules-nft");
        if let Err(why) = check(case, &dir) {
            failures.push(format!("{name}: {why}"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(
        failures.is_empty(),
        "{} of {} nftables cases fail:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}
