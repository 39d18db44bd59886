//! Real-kernel tests of `svcnet rules --backend nftables --output nft-json`: the libnftables
//! JSON is loaded with the real `nft -j -f` into a fresh network namespace, the equivalent
//! `nft -f` text into another, and the two kernels' `nft list ruleset` must be equal (the
//! same kernel state), for
//! 1. the bundled example cluster (`examples/clusters/shop.yaml`): the state and the full
//!    sync's transaction, and that transaction in chunks (`--nft-max-operations`, one JSON
//!    document per chunk, applied one after the other);
//! 2. every nftables conformance input without history: the state, the transaction, and the
//!    transaction in chunks;
//! 3. every nftables conformance input with history: the state before the last sync loaded
//!    (text in one namespace, JSON in the other), then the last sync's incremental
//!    transaction applied on top (text, respectively JSON).
//!
//! nft's JSON parser ignores some comments (nftables 1.0.6: those of tables, chains, sets and
//! maps; later releases still those of sets and maps): the listings are compared without those
//! comment lines, and a probe decides whether table and chain comments count.
//!
//! nftables 1.0.6's JSON parser also refuses the set flag `dynamic` (kube-proxy's affinity
//! sets), which svcnet writes. Where the probe finds it refused, the test removes the flag before
//! loading a document into a fresh namespace (nft then sets it from the set's `update` rule, so
//! the kernel state is the same), says so, and skips, loudly, the incremental transactions that
//! re-add a dynamic set already in the kernel: without the flag the kernel refuses those
//! (`File exists`), so they have no JSON form such an nft accepts.
//!
//! A `harness = false` test: it prints `SKIPPED` (and counts the checks as skipped, not
//! passed) where it cannot run: not root, or no `ip`, `python3` or `nft`.

mod common;
#[path = "common/netns.rs"]
mod netns;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::Value;

/// What the installed nft's JSON parser keeps.
struct Probe {
    /// Whether `{"add": {"table": {..., "comment": "c"}}}` gives the table its comment.
    keeps_table_comments: bool,
    /// Whether a set with `"flags": ["dynamic", "timeout"]` is accepted.
    reads_dynamic: bool,
}

fn main() {
    netns::run_suite(
        "kernel_nftables_json",
        &["nft"],
        probe,
        &[
            ("shop_example_json_loads_as_the_text_does", shop),
            ("conformance_full_syncs_json_loads_as_the_text_does", full_syncs),
            (
                "conformance_incremental_json_applies_on_a_loaded_state",
                incremental,
            ),
        ],
    );
}

/// A network namespace deleted on drop (named so that the suite's leak check sees it).
struct Netns(String);

impl Netns {
    fn new() -> Result<Netns, String> {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!(
            "svk{}-{}-json",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        );
        run(&["ip", "netns", "add", &name], None)?;
        Ok(Netns(name))
    }

    /// `nft [-j] -f -` with `input` inside the namespace.
    fn nft(&self, json: bool, input: &str) -> Result<(), String> {
        let mut args = vec!["ip", "netns", "exec", &self.0, "nft"];
        if json {
            args.push("-j");
        }
        args.extend(["-f", "-"]);
        run(&args, Some(input)).map(drop).map_err(|e| {
            format!(
                "{e}\n--- input ({}) ---\n{}",
                if json { "JSON" } else { "text" },
                input.chars().take(3000).collect::<String>()
            )
        })
    }

    fn list(&self) -> Result<String, String> {
        run(&["ip", "netns", "exec", &self.0, "nft", "list", "ruleset"], None)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn run(args: &[&str], stdin: Option<&str>) -> Result<String, String> {
    use std::io::Write;
    let mut child = Command::new(args[0])
        .args(&args[1..])
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("{}: {e}", args.join(" ")))?;
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().ok_or("no stdin")?;
        pipe.write_all(text.as_bytes())
            .map_err(|e| format!("writing stdin: {e}"))?;
    }
    let out = child.wait_with_output().map_err(|e| e.to_string())?;
    if !out.status.success() {
        return Err(format!(
            "`{}` failed: {}",
            args[..args.len().min(6)].join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

fn probe() -> Result<Probe, String> {
    let ns = Netns::new()?;
    ns.nft(
        true,
        r#"{"nftables":[{"add":{"table":{"family":"ip","name":"probe","comment":"c"}}}]}"#,
    )?;
    let keeps_table_comments = ns.list()?.contains("comment \"c\"");
    if !keeps_table_comments {
        eprintln!(
            "note: this nft's JSON parser ignores table and chain comments: the listings are compared without them"
        );
    }
    let reads_dynamic = ns
        .nft(
            true,
            r#"{"nftables":[{"add":{"set":{"family":"ip","table":"probe","name":"s","type":"ipv4_addr","flags":["dynamic","timeout"],"timeout":60}}}]}"#,
        )
        .is_ok();
    if !reads_dynamic {
        eprintln!(
            "note: this nft's JSON parser refuses the set flag `dynamic`: it is removed before loading, and incremental transactions that re-add a dynamic set are skipped"
        );
    }
    Ok(Probe {
        keeps_table_comments,
        reads_dynamic,
    })
}

/// The document as this nft can load it, and the names of the sets whose `dynamic` flag was
/// removed (see the module documentation).
fn loadable(json: &str, probe: &Probe) -> Result<(String, Vec<String>), String> {
    if probe.reads_dynamic {
        return Ok((json.to_owned(), Vec::new()));
    }
    let mut doc: Value = serde_json::from_str(json).map_err(|e| format!("not JSON: {e}"))?;
    let mut stripped = Vec::new();
    for cmd in doc["nftables"].as_array_mut().into_iter().flatten() {
        for verb in ["add", "create"] {
            let Some(set) = cmd.get_mut(verb).and_then(|o| o.get_mut("set")) else {
                continue;
            };
            let name = set["name"].as_str().unwrap_or_default().to_owned();
            if let Some(flags) = set.get_mut("flags").and_then(Value::as_array_mut) {
                let before = flags.len();
                flags.retain(|f| f != "dynamic");
                if flags.len() != before {
                    stripped.push(name);
                }
            }
        }
    }
    Ok((doc.to_string(), stripped))
}

/// The listing without the comment lines nft's JSON parser does not keep: those of sets and
/// maps always, those of tables and chains unless the probe saw them kept.
fn normalise(listing: &str, probe: &Probe) -> String {
    let mut out = String::new();
    let mut in_set = false;
    for line in listing.lines() {
        let t = line.trim();
        if t.starts_with("set ") || t.starts_with("map ") {
            in_set = true;
        } else if t.starts_with("chain ") || t.starts_with("table ") || t == "}" {
            in_set = false;
        }
        let own_comment = t.starts_with("comment \"") && t.ends_with('"');
        if own_comment && (in_set || !probe.keeps_table_comments) {
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    out
}

/// Loads `base` then `top` as text into one namespace and as JSON into another; the two
/// listings must be equal.
fn same_kernel_state(
    probe: &Probe,
    what: &str,
    base: Option<(&str, &str)>,
    text: &str,
    json: &str,
) -> Result<(), String> {
    let (a, b) = (Netns::new()?, Netns::new()?);
    if let Some((bt, bj)) = base {
        a.nft(false, bt).map_err(|e| format!("{what}: base text: {e}"))?;
        b.nft(true, bj).map_err(|e| format!("{what}: base JSON: {e}"))?;
    }
    a.nft(false, text).map_err(|e| format!("{what}: text: {e}"))?;
    b.nft(true, json).map_err(|e| format!("{what}: JSON: {e}"))?;
    let (la, lb) = (normalise(&a.list()?, probe), normalise(&b.list()?, probe));
    if !la.contains("table ") {
        return Err(format!("{what}: nothing loaded:\n{la}"));
    }
    if la != lb {
        let at = la.lines().zip(lb.lines()).position(|(x, y)| x != y).unwrap_or(0);
        let ctx = |s: &str| {
            s.lines()
                .skip(at.saturating_sub(3))
                .take(8)
                .collect::<Vec<_>>()
                .join("\n")
        };
        return Err(format!(
            "{what}: the kernel holds different rule sets (first difference at line {at}):\n--- from text ---\n{}\n--- from JSON ---\n{}",
            ctx(&la),
            ctx(&lb)
        ));
    }
    Ok(())
}

/// `svcnet rules ARGS --print PRINT --output OUTPUT INPUT`.
fn svcnet_rules(args: &[String], print: &str, output: &str, input: &str) -> Result<String, String> {
    let mut argv: Vec<&str> = vec!["rules"];
    argv.extend(args.iter().map(String::as_str));
    argv.extend(["--print", print, "--output", output, input]);
    let run = common::svcnet(&argv);
    if run.code != 0 {
        return Err(format!(
            "svcnet {}: exit {}: {}",
            argv.join(" "),
            run.code,
            run.stderr.trim()
        ));
    }
    Ok(run.stdout)
}

/// The state and the transaction of one sync, text against JSON.
fn check_sync(probe: &Probe, what: &str, args: &[String], input: &str) -> Result<(), String> {
    for print in ["state", "transaction"] {
        let text = svcnet_rules(args, print, "text", input)?;
        let (json, _) = loadable(&svcnet_rules(args, print, "nft-json", input)?, probe)?;
        same_kernel_state(probe, &format!("{what} ({print})"), None, &text, &json)?;
    }
    Ok(())
}

fn shop(probe: &mut Probe) -> Result<(), String> {
    let input = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/clusters/shop.yaml");
    let args: Vec<String> = [
        "--backend",
        "nftables",
        "--node",
        "node-a1",
        "--node-ip",
        "192.168.0.10",
        "--cluster-cidr",
        "10.244.0.0/16",
    ]
    .map(String::from)
    .to_vec();
    let input = input.to_string_lossy();
    check_sync(probe, "shop.yaml", &args, &input)?;
    if !check_chunks(probe, "shop.yaml", &args, &input)? {
        eprintln!(
            "\n*** SKIPPED comparing the kernel state after shop.yaml's chunked JSON (each chunk was accepted): this nft's JSON parser cannot express the set flag `dynamic`\n"
        );
    }
    Ok(())
}

/// The full sync's transaction in chunks of at most 7 operations (`--nft-max-operations`),
/// each its own `nft -j -f`, against the whole text. `Ok(false)`: every chunk was accepted,
/// but the states were not compared, since the `dynamic` flag had to be removed (nft derives
/// it from an `update` rule of the same batch only, and a chunk may hold the set without it).
fn check_chunks(probe: &Probe, what: &str, args: &[String], input: &str) -> Result<bool, String> {
    let mut chunked = args.to_vec();
    chunked.extend(["--nft-max-operations".into(), "7".into()]);
    let text = svcnet_rules(args, "transaction", "text", input)?;
    let docs = svcnet_rules(&chunked, "transaction", "nft-json", input)?;
    let (a, b) = (Netns::new()?, Netns::new()?);
    a.nft(false, &text)?;
    let (mut n, mut stripped) = (0, false);
    for line in docs.lines() {
        let (json, s) = loadable(line, probe)?;
        stripped |= !s.is_empty();
        b.nft(true, &json)
            .map_err(|e| format!("{what}: chunk {}: {e}", n + 1))?;
        n += 1;
    }
    if n < 2 {
        return Err(format!("{what}: only {n} chunks"));
    }
    if stripped {
        return Ok(false);
    }
    let (la, lb) = (normalise(&a.list()?, probe), normalise(&b.list()?, probe));
    if la != lb {
        return Err(format!(
            "{what}: the chunked JSON gives another rule set:\n--- text ---\n{la}\n--- JSON chunks ---\n{lb}"
        ));
    }
    Ok(true)
}

fn case_args(case: &Value) -> Vec<String> {
    case["args"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|a| a.as_str().unwrap_or_default().to_owned())
        .collect()
}

fn nft_cases() -> Vec<(String, Value)> {
    common::cases("rules")
        .into_iter()
        .filter(|(n, _)| n.starts_with("nftables-"))
        .collect()
}

fn full_syncs(probe: &mut Probe) -> Result<(), String> {
    let (mut n, mut chunks_compared, mut chunks_skipped) = (0, 0, Vec::new());
    for (name, case) in nft_cases() {
        if case["prior"].as_array().is_some_and(|p| !p.is_empty()) {
            continue;
        }
        let dir = common::scratch_dir("kernel-nft-json");
        let input = common::write_json(&dir, "input.json", &case["input"]);
        check_sync(probe, &name, &case_args(&case), &input)?;
        if check_chunks(probe, &name, &case_args(&case), &input)? {
            chunks_compared += 1;
        } else {
            chunks_skipped.push(name);
        }
        let _ = std::fs::remove_dir_all(&dir);
        n += 1;
    }
    if !chunks_skipped.is_empty() {
        eprintln!(
            "\n*** SKIPPED comparing the kernel state after the chunked JSON of {} case(s) (each chunk was accepted): this nft's JSON parser cannot express the set flag `dynamic`: {}\n",
            chunks_skipped.len(),
            chunks_skipped.join(", ")
        );
    }
    if n < 20 || chunks_compared < 5 {
        return Err(format!(
            "only {n} cases without history, {chunks_compared} chunked transactions compared"
        ));
    }
    Ok(())
}

fn incremental(probe: &mut Probe) -> Result<(), String> {
    let (mut n, mut skipped) = (0, Vec::new());
    for (name, case) in nft_cases() {
        let Some(prior) = case["prior"].as_array().filter(|p| !p.is_empty()) else {
            continue;
        };
        let dir = common::scratch_dir("kernel-nft-json");
        let mut flags: Vec<(String, String)> = Vec::new();
        for (i, step) in prior.iter().enumerate() {
            let p = common::write_json(&dir, &format!("prior{i}.json"), &step["input"]);
            let flag = if step["then"] == "age-stale-chains" {
                "--prior-aged"
            } else {
                "--prior"
            };
            flags.push((flag.to_owned(), p));
        }
        let input = common::write_json(&dir, "input.json", &case["input"]);
        // the state before the last sync: the history without its last step, which becomes INPUT
        let mut before = case_args(&case);
        for (f, p) in &flags[..flags.len() - 1] {
            before.extend([f.clone(), p.clone()]);
        }
        let last_prior = &flags[flags.len() - 1].1;
        let base_text = svcnet_rules(&before, "state", "text", last_prior)?;
        let (base_json, base_dynamic) =
            loadable(&svcnet_rules(&before, "state", "nft-json", last_prior)?, probe)?;
        let mut after = case_args(&case);
        for (f, p) in &flags {
            after.extend([f.clone(), p.clone()]);
        }
        let text = svcnet_rules(&after, "transaction", "text", &input)?;
        let (json, readded) = loadable(&svcnet_rules(&after, "transaction", "nft-json", &input)?, probe)?;
        if readded.iter().any(|s| base_dynamic.contains(s)) {
            skipped.push(name);
            continue;
        }
        same_kernel_state(
            probe,
            &format!("{name} (incremental)"),
            Some((&base_text, &base_json)),
            &text,
            &json,
        )?;
        let _ = std::fs::remove_dir_all(&dir);
        n += 1;
    }
    if !skipped.is_empty() {
        eprintln!(
            "\n*** SKIPPED {} incremental case(s): their transaction re-adds a dynamic set, which this nft's JSON parser cannot express: {}\n",
            skipped.len(),
            skipped.join(", ")
        );
    }
    if n < 3 {
        return Err(format!(
            "only {n} cases with history checked ({} skipped)",
            skipped.len()
        ));
    }
    Ok(())
}
