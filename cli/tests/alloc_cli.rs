//! `svcnet alloc` end to end: output shape, exit codes, seeds, formats and bad input.

mod common;

use serde_json::{Value, json};

fn run_script(tag: &str, script: &Value, extra: &[&str]) -> common::Run {
    let dir = common::scratch_dir(tag);
    let path = common::write_json(&dir, "script.json", script);
    let mut args = vec!["alloc"];
    args.extend_from_slice(extra);
    args.push(&path);
    let run = common::svcnet(&args);
    let _ = std::fs::remove_dir_all(&dir);
    run
}

fn results(run: &common::Run) -> Vec<Value> {
    common::first_json(&run.stdout).expect("JSON output")["results"]
        .as_array()
        .cloned()
        .expect("results array")
}

#[test]
fn same_seed_same_allocations_and_other_seed_differs() {
    let script = json!({"kind": "cluster-ip", "ranges": ["10.0.0.0/16"],
        "ops": [{"op": "allocate-next"}, {"op": "allocate-next"}, {"op": "allocate-next"}]});
    let a = results(&run_script("seed", &script, &["--seed", "7"]));
    let b = results(&run_script("seed", &script, &["--seed", "7"]));
    let c = results(&run_script("seed", &script, &["--seed", "8"]));
    assert_eq!(a, b);
    assert_ne!(a, c);
    for r in &a {
        assert_eq!(r["ok"], true);
        assert_eq!(r["band"], "upper");
        assert!(r["value"].as_str().unwrap().starts_with("10.0."));
    }
}

#[test]
fn refused_op_exits_1_and_reports_kind() {
    let script = json!({"kind": "node-port", "ranges": ["30000-30001"],
        "ops": [{"op": "allocate", "value": 30000}, {"op": "allocate", "value": 30000},
                {"op": "allocate", "value": 1}, {"op": "bogus"}]});
    let run = run_script("refused", &script, &[]);
    assert_eq!(run.code, 1);
    let r = results(&run);
    assert_eq!(r[0], json!({"ok": true}));
    assert_eq!(r[1]["error"], "allocated");
    assert_eq!(r[2]["error"], "not-in-range");
    assert!(r[2]["message"].as_str().unwrap().contains("30000-30001"));
    assert_eq!(r[3]["error"], "invalid");
}

#[test]
fn all_ok_exits_0() {
    let script = json!({"kind": "cluster-ip", "ranges": ["10.0.0.0/24", "fd00::/120"],
        "ops": [{"op": "allocate", "value": "fd00::5"}, {"op": "used", "family": "IPv6"},
                {"op": "used"}, {"op": "allocate-next", "family": "IPv6"},
                {"op": "snapshot", "family": "IPv6"}, {"op": "offset", "family": "IPv6"}]});
    let run = run_script("ok", &script, &["--output", "json"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let r = results(&run);
    assert_eq!(r[1]["value"], 1);
    assert_eq!(r[2]["value"], 0);
    assert_eq!(r[3]["band"], "upper");
    assert_eq!(r[4]["range"], "fd00::/120");
    assert_eq!(r[5]["value"], 16);
}

#[test]
fn repair_reports_events() {
    let script = json!({"kind": "node-port", "ranges": ["100-200"],
        "ops": [{"op": "allocate", "value": 150},
                {"op": "repair", "services": [
                    {"namespace": "a", "name": "a", "node_ports": [111]},
                    {"namespace": "b", "name": "b", "node_ports": [111, 250]}]}]});
    let r = results(&run_script("repair", &script, &[]));
    let reasons: Vec<&str> = r[1]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    assert_eq!(
        reasons,
        vec![
            "PortNotAllocated",
            "PortAlreadyAllocated",
            "PortOutOfRange",
            "LeakFlagged"
        ]
    );
}

#[test]
fn text_output_is_one_line_per_op() {
    let script = json!({"kind": "multi-cidr", "family": "IPv4",
        "ops": [{"op": "add-cidr", "name": "k", "cidrs": ["10.0.0.0/28"]}, {"op": "free"}]});
    let run = run_script("text", &script, &["--output", "text"]);
    assert_eq!(run.code, 0);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(lines.len(), 2);
    assert!(lines[1].contains("free") && lines[1].contains("14"));
}

#[test]
fn yaml_script_on_stdin() {
    let yaml = b"kind: node-port\nranges: [\"30000-32767\"]\nops:\n  - op: offset\n";
    let run = common::svcnet_stdin(&["alloc", "-"], yaml);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(results(&run)[0]["value"], 86);
}

#[test]
fn bad_scripts() {
    let run = run_script(
        "bad",
        &json!({"kind": "cluster-ip", "ranges": ["10.0.0.0/33"], "ops": []}),
        &[],
    );
    assert_eq!(run.code, 1);
    assert!(run.stderr.contains("10.0.0.0/33"), "{}", run.stderr);
    let run = run_script("bad", &json!({"ranges": [], "ops": []}), &[]);
    assert_eq!(run.code, 1);
    let dir = common::scratch_dir("bad");
    let p = dir.join("broken.json");
    std::fs::write(&p, b"{\"kind\": ").unwrap();
    let run = common::svcnet(&["alloc", p.to_str().unwrap()]);
    assert_eq!(run.code, 2);
    assert!(!run.stderr.contains("panicked"));
    let run = common::svcnet(&["alloc", "/nonexistent/script.json"]);
    assert_eq!(run.code, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn huge_repeats_and_ranges_finish() {
    let script = json!({"kind": "node-port", "ranges": ["30000-30009"],
        "ops": [{"op": "allocate-range", "from": -5, "to": 2_000_000_000},
                {"op": "allocate-next", "repeat": 1_000_000_000_000u64}]});
    let r = results(&run_script("huge", &script, &[]));
    assert_eq!(r[0]["count"], 10);
    assert_eq!(r[1]["count"], 0);
    assert_eq!(r[1]["error"], "full");
    assert_eq!(r[1]["failures"], 1_000_000_000_000u64);
}

#[test]
fn multi_cidr_repair_recreates_and_cleans() {
    let script = json!({"kind": "multi-cidr", "family": "IPv4",
        "service_cidrs": [{"name": "kubernetes", "cidrs": ["10.0.0.0/24"]}],
        "ip_addresses": ["10.0.0.7"],
        "ops": [{"op": "repair", "services": [{"namespace": "a", "name": "a", "cluster_ips": ["10.0.0.9"]}]},
                {"op": "for-each"}]});
    let r = results(&run_script("mcrepair", &script, &[]));
    let reasons: Vec<&str> = r[0]["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, vec!["ClusterIPNotAllocated", "IPAddressNotAllocated"]);
    assert_eq!(r[1]["value"], json!(["10.0.0.9"]));
}

#[test]
fn multi_cidr_family_allocator_ignores_the_other_familys_cidrs() {
    // A dual-stack ServiceCIDR under the IPv4 MetaAllocator: its IPv6 CIDR is not the IPv4
    // allocator's, so an IPv6 address is mismatched-network even though the ServiceCIDR covers it
    // (cidrallocator.go: "skip IP families not supported by this MetaAllocator").
    let script = json!({"kind": "multi-cidr", "family": "IPv4",
        "service_cidrs": [{"name": "kubernetes", "cidrs": ["10.0.0.0/24", "fd00::/120"]}],
        "ops": [{"op": "allocate", "value": "fd00::5"}, {"op": "has", "value": "fd00::5"},
                {"op": "release", "value": "fd00::5"}, {"op": "allocate", "value": "10.0.0.5"},
                {"op": "has", "value": "10.0.0.5"}, {"op": "release", "value": "10.0.0.5"},
                {"op": "cidrs"}]});
    let run = run_script("mc-family", &script, &[]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let r = results(&run);
    assert_eq!(r[0]["error"], "mismatched-network", "{r:?}");
    assert_eq!(r[1], json!({"value": false}));
    assert_eq!(r[2]["error"], "mismatched-network", "{r:?}");
    assert_eq!(r[3], json!({"ok": true}));
    assert_eq!(r[4], json!({"value": true}));
    assert_eq!(r[5], json!({"ok": true}));
    assert_eq!(r[6], json!({"value": [{"cidr": "10.0.0.0/24", "ready": true}]}));
    // The IPv6 allocator of the same objects takes the IPv6 address and refuses the IPv4 one.
    let script = json!({"kind": "multi-cidr", "family": "IPv6",
        "service_cidrs": [{"name": "kubernetes", "cidrs": ["10.0.0.0/24", "fd00::/120"]}],
        "ops": [{"op": "allocate", "value": "fd00::5"}, {"op": "allocate", "value": "10.0.0.5"},
                {"op": "release", "value": "10.0.0.5"}]});
    let r = results(&run_script("mc-family6", &script, &[]));
    assert_eq!(r[0], json!({"ok": true}));
    assert_eq!(r[1]["error"], "mismatched-network", "{r:?}");
    assert_eq!(r[2]["error"], "mismatched-network", "{r:?}");
}
