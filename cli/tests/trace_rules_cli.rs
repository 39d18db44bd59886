//! `svcnet trace --packets` and `--rules`: every trace conformance case passes when its flows
//! are traced in one call, against svcnet's own rules, against the `--print state` text of
//! `svcnet rules` read back with `--rules`, and (iptables) against the restore payload of
//! `--print transaction` alone; malformed rule text is an error naming its line.

mod common;

use serde_json::{Value, json};

/// The flows of a case as a `--packets` file.
fn packets(case: &Value) -> Value {
    let flows = case["expect"]["flows"].as_array().cloned().unwrap_or_default();
    Value::Array(
        flows
            .iter()
            .map(|f| {
                json!({"name": f["name"], "source": f["source"], "destination": f["destination"],
                       "port": f["port"], "protocol": f["protocol"]})
            })
            .collect(),
    )
}

/// Compares a `{"flows":[...]}` answer with the case's expectations (masq for DNAT and pass).
fn compare(case: &Value, got: &Value, what: &str) -> Result<(), String> {
    let want = case["expect"]["flows"].as_array().ok_or("no flows")?;
    let got = got["flows"]
        .as_array()
        .ok_or_else(|| format!("{what}: no flows in {got}"))?;
    if want.len() != got.len() {
        return Err(format!("{what}: {} answers for {} flows", got.len(), want.len()));
    }
    for (w, g) in want.iter().zip(got) {
        let name = w["name"].as_str().unwrap_or_default();
        let mut output = w["output"].clone();
        if let Value::Array(a) = &mut output {
            a.sort_by(|x, y| x.as_str().cmp(&y.as_str()));
        }
        if g["name"] != w["name"] || g["output"] != output {
            return Err(format!(
                "{what}: flow {name:?}: output {}, want {output}",
                g["output"]
            ));
        }
        if output.is_array() && g["masq"] != w["masq"] {
            return Err(format!(
                "{what}: flow {name:?}: masq {}, want {}",
                g["masq"], w["masq"]
            ));
        }
    }
    Ok(())
}

fn check(case: &Value, dir: &std::path::Path) -> Result<(), String> {
    let input = common::write_json(dir, "input.json", &case["input"]);
    let flows = common::write_json(dir, "flows.json", &packets(case));
    let args: Vec<String> = case["args"]
        .as_array()
        .ok_or("no args")?
        .iter()
        .map(|a| a.as_str().unwrap_or_default().to_owned())
        .collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let trace = |extra: &[&str], what: &str| -> Result<(), String> {
        let mut argv = vec!["trace"];
        argv.extend(&args);
        argv.extend(["--packets", &flows, "--output", "json"]);
        argv.extend(extra);
        let run = common::svcnet(&argv);
        let got = common::first_json(&run.stdout)
            .ok_or_else(|| format!("{what}: exit {}: {}", run.code, run.stderr.trim()))?;
        compare(case, &got, what)?;
        if run.code != 0 {
            return Err(format!("{what}: exit {}", run.code));
        }
        Ok(())
    };
    trace(&[&input], "own rules")?;
    let backend = args.get(1).copied().unwrap_or_default();
    let prints: &[&str] = if backend == "iptables" {
        &["state", "transaction"]
    } else {
        &["state"]
    };
    for print in prints {
        let mut argv = vec!["rules"];
        argv.extend(&args);
        argv.extend(["--print", print, &input]);
        let run = common::svcnet(&argv);
        if run.code != 0 {
            return Err(format!(
                "rules --print {print}: exit {}: {}",
                run.code, run.stderr
            ));
        }
        let file = dir.join(format!("{print}.txt"));
        std::fs::write(&file, &run.stdout).map_err(|e| e.to_string())?;
        let file = file.to_string_lossy().into_owned();
        trace(&["--rules", &file], &format!("--rules of --print {print}"))?;
    }
    Ok(())
}

#[test]
fn trace_cases_in_one_call_and_through_rule_text() {
    common::run_area("trace", check);
}

const NODE: [&str; 6] = ["trace", "--backend", "iptables", "--node", "n", "--node-ip"];

#[test]
fn rule_text_errors_and_unsupported_rules() {
    let dir = common::scratch_dir("trace-rules");
    let write = |name: &str, text: &str| {
        let p = dir.join(name);
        std::fs::write(&p, text).expect("write");
        p.to_string_lossy().into_owned()
    };
    let bad = write(
        "bad.txt",
        "*nat\n:KUBE-SERVICES - [0:0]\n-Q KUBE-SERVICES\nCOMMIT\n",
    );
    let mut argv = NODE.to_vec();
    argv.extend([
        "192.168.0.2",
        "--from",
        "10.0.0.1",
        "--to",
        "172.30.0.1:80",
        "--rules",
        &bad,
    ]);
    let run = common::svcnet(&argv);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("line 3"), "{}", run.stderr);

    let odd = write(
        "odd.txt",
        "*nat\n:PREROUTING - [0:0]\n-A PREROUTING -i eth0 -j ACCEPT\nCOMMIT\n",
    );
    let mut argv = NODE.to_vec();
    argv.extend([
        "192.168.0.2",
        "--from",
        "10.0.0.1",
        "--to",
        "172.30.0.1:80",
        "--rules",
        &odd,
    ]);
    let run = common::svcnet(&argv);
    assert_eq!(run.code, 1, "{}", run.stderr);
    assert!(
        run.stderr.contains("unsupported") && run.stderr.contains("-i eth0"),
        "{}",
        run.stderr
    );

    let flows = write(
        "flows.json",
        r#"[{"name":"a","source":"10.0.0.1","destination":"172.30.0.1","port":80,"protocol":"TCP"},
            {"name":"b","source":"10.0.0.1","destination":"fd00::1","port":80}]"#,
    );
    let mut argv = NODE.to_vec();
    argv.extend([
        "192.168.0.2",
        "--packets",
        &flows,
        "--rules",
        &odd,
        "--output",
        "json",
    ]);
    let run = common::svcnet(&argv);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let v = common::first_json(&run.stdout).expect("json");
    assert!(
        v["flows"][0]["error"]
            .as_str()
            .is_some_and(|e| e.contains("-i eth0")),
        "{v}"
    );
    assert!(
        v["flows"][1]["error"]
            .as_str()
            .is_some_and(|e| e.contains("family")),
        "{v}"
    );

    // Without --rules, INPUT is required.
    let mut argv = NODE.to_vec();
    argv.extend(["192.168.0.2", "--from", "10.0.0.1", "--to", "172.30.0.1:80"]);
    let run = common::svcnet(&argv);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("INPUT"), "{}", run.stderr);

    let mut argv = vec!["trace", "--backend", "nftables", "--node", "n", "--node-ip"];
    let nbad = write(
        "bad.nft",
        "add table ip kube-proxy\nadd chain ip kube-proxy a\nadd rule ip kube-proxy a jump b\n",
    );
    argv.extend([
        "192.168.0.2",
        "--from",
        "10.0.0.1",
        "--to",
        "172.30.0.1:80",
        "--rules",
        &nbad,
    ]);
    let run = common::svcnet(&argv);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("line 3"), "{}", run.stderr);
    let _ = std::fs::remove_dir_all(&dir);
}
