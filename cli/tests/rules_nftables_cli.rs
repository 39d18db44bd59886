//! `svcnet rules --backend nftables`: the typed JSON output and transaction chunking.

mod common;

use serde_json::json;

fn input(dir: &std::path::Path) -> String {
    common::write_json(
        dir,
        "in.json",
        &json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
             "spec": {"type": "NodePort", "clusterIP": "172.30.0.10", "ports": [{"name": "http", "port": 80, "nodePort": 30080}]}},
            {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
             "metadata": {"name": "web-1", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
             "addressType": "IPv4", "ports": [{"name": "http", "port": 8080}],
             "endpoints": [{"addresses": ["10.0.0.1"], "nodeName": "node-0"}, {"addresses": ["10.0.0.2"], "nodeName": "node-1"}]}
        ]}),
    )
}

const ARGS: [&str; 8] = [
    "rules",
    "--backend",
    "nftables",
    "--node",
    "node-0",
    "--node-ip",
    "192.168.0.2",
    "--masquerade-all",
];

#[test]
fn json_output_is_the_typed_rule_set() {
    let dir = common::scratch_dir("nft-json");
    let inp = input(&dir);
    let mut args = ARGS.to_vec();
    args.extend(["--output", "json", inp.as_str()]);
    let run = common::svcnet(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v: serde_json::Value = serde_json::from_str(&run.stdout).unwrap();
    assert_eq!(v["family"], "ip");
    assert_eq!(v["full"], true);
    let ops = v["transaction"]["operations"].as_array().unwrap();
    assert_eq!(ops.len() as u64, v["operations"].as_u64().unwrap());
    assert!(
        ops.iter()
            .any(|o| o["verb"] == "add" && o["object"] == "element" && o["container"] == "service-nodeports")
    );
    let table = &v["state"][0];
    assert_eq!(table["name"], "kube-proxy");
    assert!(table["chains"]["services"]["rules"].as_array().unwrap().len() >= 2);
    assert!(
        v["text"]["state"]
            .as_str()
            .unwrap()
            .starts_with("add table ip kube-proxy")
    );
}

#[test]
fn transactions_are_chunked_on_request() {
    let dir = common::scratch_dir("nft-chunks");
    let inp = input(&dir);
    let mut args = ARGS.to_vec();
    args.extend(["--nft-max-operations", "10", inp.as_str()]);
    let run = common::svcnet(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let mut chunks = 0;
    let mut in_chunk = 0;
    let mut total = 0;
    for l in run.stdout.lines().filter(|l| !l.trim().is_empty()) {
        if l.starts_with("# chunk ") {
            chunks += 1;
            in_chunk = 0;
        } else {
            in_chunk += 1;
            total += 1;
            assert!(in_chunk <= 10, "{}", run.stdout);
        }
    }
    let whole = common::svcnet(&[&ARGS[..], &[inp.as_str()]].concat());
    let whole_ops = whole.stdout.lines().filter(|l| !l.trim().is_empty()).count();
    assert_eq!(total, whole_ops);
    assert_eq!(chunks, whole_ops.div_ceil(10));
}

#[test]
fn a_service_that_breaks_a_limit_is_named_and_exits_1() {
    let dir = common::scratch_dir("nft-limit");
    let inp = common::write_json(
        &dir,
        "in.json",
        &json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
                "spec": {"clusterIP": "172.30.0.10", "ports": [{"name": "a\"b", "port": 80}]}}),
    );
    let mut args = ARGS.to_vec();
    args.push(inp.as_str());
    let run = common::svcnet(&args);
    assert_eq!(run.code, 1, "{}", run.stdout);
    assert!(run.stderr.contains("shop/web:a\"b"), "{}", run.stderr);
    assert!(run.stdout.trim().is_empty());
}

#[test]
fn nft_json_output_is_a_libnftables_document() {
    let dir = common::scratch_dir("nft-json-doc");
    let inp = input(&dir);
    for print in ["transaction", "state"] {
        let mut args = ARGS.to_vec();
        args.extend(["--print", print, "--output", "nft-json", inp.as_str()]);
        let run = common::svcnet(&args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert_eq!(run.stdout.lines().count(), 1, "one document on one line");
        let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
        let cmds = doc["nftables"].as_array().expect("nftables array");
        assert_eq!(cmds[0], json!({"metainfo": {"json_schema_version": 1}}));
        assert_eq!(
            cmds[1]["add"]["table"],
            json!({"family": "ip", "name": "kube-proxy", "comment": "rules for kube-proxy"})
        );
        // the ClusterIP's element of the service-ips verdict map, typed
        assert!(
            cmds.iter().any(|c| c["add"]["element"]["name"] == "service-ips"
                && c["add"]["element"]["elem"][0][0] == json!({"concat": ["172.30.0.10", "tcp", 80]})),
            "{}",
            run.stdout
        );
    }
    // chunked: one document per chunk
    let mut args = ARGS.to_vec();
    args.extend(["--nft-max-operations", "10", "--output", "nft-json", inp.as_str()]);
    let run = common::svcnet(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.lines().count() > 2);
    for line in run.stdout.lines() {
        let doc: serde_json::Value = serde_json::from_str(line).expect("JSON per line");
        assert!(doc["nftables"].as_array().unwrap().len() <= 11, "{line}");
    }
}

#[test]
fn nft_json_is_for_the_nftables_backend_only() {
    let dir = common::scratch_dir("nft-json-only");
    let inp = input(&dir);
    let run = common::svcnet(&[
        "rules",
        "--backend",
        "iptables",
        "--node",
        "node-0",
        "--node-ip",
        "192.168.0.2",
        "--output",
        "nft-json",
        &inp,
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("nft-json"), "{}", run.stderr);
    let run = common::svcnet(&[
        "trace",
        "--backend",
        "nftables",
        "--node",
        "node-0",
        "--node-ip",
        "192.168.0.2",
        "--from",
        "10.0.0.9",
        "--to",
        "172.30.0.10:80",
        "--output",
        "nft-json",
        &inp,
    ]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

/// Every nftables conformance input converts to libnftables JSON (state and transaction):
/// no rule kube-proxy writes there is left unconverted. (`kernel_nftables_json` loads them.)
#[test]
fn every_conformance_rule_set_has_an_nft_json_form() {
    let mut checked = 0;
    for (name, case) in common::cases("rules") {
        if !name.starts_with("nftables-") {
            continue;
        }
        let dir = common::scratch_dir("nft-json-cases");
        let input = common::write_json(&dir, "input.json", &case["input"]);
        let mut args: Vec<String> = vec!["rules".into()];
        for a in case["args"].as_array().into_iter().flatten() {
            args.push(a.as_str().unwrap_or_default().to_owned());
        }
        for (n, step) in case["prior"].as_array().into_iter().flatten().enumerate() {
            args.push("--prior".into());
            args.push(common::write_json(
                &dir,
                &format!("prior{n}.json"),
                &step["input"],
            ));
        }
        for print in ["state", "transaction"] {
            let mut argv: Vec<&str> = args.iter().map(String::as_str).collect();
            argv.extend(["--print", print, "--output", "nft-json", input.as_str()]);
            let run = common::svcnet(&argv);
            assert_eq!(run.code, 0, "{name} ({print}): {}", run.stderr);
            let doc: serde_json::Value = serde_json::from_str(&run.stdout).expect("JSON");
            assert!(doc["nftables"].is_array(), "{name}");
        }
        let _ = std::fs::remove_dir_all(&dir);
        checked += 1;
    }
    assert!(checked >= 30, "{checked} nftables cases");
}
