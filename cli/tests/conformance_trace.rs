//! The `trace` conformance cases through the CLI, checked flow by flow as the shared runner
//! checks them: `--from SRC --to DST:PORT/proto --output json`, the outcome exactly, the
//! endpoint set for `dnat`, and `masquerade` for `dnat` and `pass`.

mod common;

use serde_json::Value;

fn check(case: &Value, dir: &std::path::Path) -> Result<(), String> {
    let input = common::write_json(dir, "input.json", &case["input"]);
    let args: Vec<String> = case["args"]
        .as_array()
        .ok_or("no args")?
        .iter()
        .map(|a| a.as_str().unwrap_or_default().to_owned())
        .collect();
    for fl in case["expect"]["flows"].as_array().ok_or("no flows")? {
        let name = fl["name"].as_str().unwrap_or_default();
        let dst = fl["destination"].as_str().ok_or("no destination")?;
        let proto = fl["protocol"].as_str().ok_or("no protocol")?.to_lowercase();
        let port = &fl["port"];
        let to = if dst.contains(':') {
            format!("[{dst}]:{port}/{proto}")
        } else {
            format!("{dst}:{port}/{proto}")
        };
        let mut argv: Vec<&str> = vec!["trace"];
        argv.extend(args.iter().map(String::as_str));
        argv.extend([
            "--from",
            fl["source"].as_str().ok_or("no source")?,
            "--to",
            &to,
            "--output",
            "json",
            &input,
        ]);
        let run = common::svcnet(&argv);
        let t = common::first_json(&run.stdout)
            .ok_or_else(|| format!("flow {name:?}: exit {}: {}", run.code, run.stderr.trim()))?;
        let (want_outcome, want_eps) = match &fl["output"] {
            Value::Array(a) => {
                let mut eps: Vec<String> = a
                    .iter()
                    .map(|e| e.as_str().unwrap_or_default().to_owned())
                    .collect();
                eps.sort();
                (if eps.is_empty() { "pass" } else { "dnat" }.to_owned(), eps)
            }
            v => (v.as_str().unwrap_or_default().to_lowercase(), Vec::new()),
        };
        if t["outcome"] != want_outcome.as_str() {
            return Err(format!(
                "flow {name:?}: outcome {}, want {want_outcome}",
                t["outcome"]
            ));
        }
        if want_outcome == "dnat" {
            let mut got: Vec<String> = t["endpoints"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|e| e.as_str().unwrap_or_default().to_owned())
                .collect();
            got.sort();
            if got != want_eps {
                return Err(format!("flow {name:?}: endpoints {got:?}, want {want_eps:?}"));
            }
        }
        if let Some(m) = fl.get("masq").and_then(Value::as_bool)
            && (want_outcome == "dnat" || want_outcome == "pass")
            && t["masquerade"].as_bool() != Some(m)
        {
            return Err(format!("flow {name:?}: masquerade {}, want {m}", t["masquerade"]));
        }
    }
    Ok(())
}

#[test]
fn trace_cases() {
    common::run_area("trace", check);
}
