//! Shared helpers of the CLI's integration tests: running the built `svcnet` binary, and running
//! the conformance cases of the workspace's `testdata/conformance/<area>/` through it (cases,
//! loader and pass criteria from `svcnet-test-support`).
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde::de::DeserializeOwned;
use serde_json::Value;
use svcnet_test_support::case::{Case, ValidateExpect};
use svcnet_test_support::check;

pub mod rules_iptables;

/// What one run of the binary gave.
pub struct Run {
    /// The exit code (-1 when killed by a signal).
    pub code: i32,
    /// Standard output.
    pub stdout: String,
    /// Standard error.
    pub stderr: String,
}

/// Runs `svcnet ARGS...`.
pub fn svcnet(args: &[&str]) -> Run {
    let out = Command::new(env!("CARGO_BIN_EXE_svcnet"))
        .args(args)
        .output()
        .expect("run svcnet");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Runs `svcnet ARGS...` with `stdin` as standard input.
pub fn svcnet_stdin(args: &[&str], stdin: &[u8]) -> Run {
    use std::io::Write;
    use std::process::Stdio;
    let mut child = Command::new(env!("CARGO_BIN_EXE_svcnet"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn svcnet");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(stdin)
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait svcnet");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// A scratch directory of one test, removed (with its files) when dropped; derefs to its
/// path.
pub struct ScratchDir(PathBuf);

impl std::ops::Deref for ScratchDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl AsRef<Path> for ScratchDir {
    fn as_ref(&self) -> &Path {
        &self.0
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh scratch directory for one test (removed when the returned guard is dropped).
pub fn scratch_dir(tag: &str) -> ScratchDir {
    static N: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "svcnet-test-{}-{}-{}",
        std::process::id(),
        tag,
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).expect("create scratch dir");
    ScratchDir(dir)
}

/// Writes `value` as JSON into `dir/name` and returns the path as a string.
pub fn write_json(dir: &Path, name: &str, value: &Value) -> String {
    let p = dir.join(name);
    std::fs::write(&p, serde_json::to_vec(value).expect("encode")).expect("write");
    p.to_string_lossy().into_owned()
}

/// The cases of one area as JSON, sorted by file name: `(file name, case)`
/// (`svcnet_test_support::case::raw_cases`).
pub fn cases(area: &str) -> Vec<(String, Value)> {
    svcnet_test_support::case::raw_cases(area)
}

/// Parses the first JSON document of `out` (the whole text, or its first line).
pub fn first_json(out: &str) -> Option<Value> {
    let t = out.trim();
    serde_json::from_str(t)
        .ok()
        .or_else(|| serde_json::from_str(t.lines().next()?).ok())
}

/// Runs `check` over every case of `area` and fails with the list of failing cases.
pub fn run_area(area: &str, check: impl Fn(&Value, &Path) -> Result<(), String>) {
    let all = cases(area);
    assert!(!all.is_empty(), "no cases for {area}");
    let mut failures = Vec::new();
    for (name, case) in &all {
        let dir = scratch_dir(area);
        if let Err(why) = check(case, &dir) {
            failures.push(format!("{name}: {why}"));
        }
        let _ = std::fs::remove_dir_all(&dir);
    }
    assert!(
        failures.is_empty(),
        "{} of {} {area} cases fail:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
}

/// Runs `check` over every case of `area`, typed with expectation `E`, each with a fresh
/// scratch directory, and fails with the list of failing cases.
pub fn run_typed_area<E: DeserializeOwned>(
    area: &str,
    check: impl Fn(&Case<E>, &Path) -> Result<(), String>,
) {
    let checked = svcnet_test_support::case::run_area(area, |case: &Case<E>| {
        let dir = scratch_dir(area);
        let res = check(case, &dir);
        let _ = std::fs::remove_dir_all(&dir);
        Some(res)
    });
    assert!(checked > 0, "no cases for {area}");
}

/// Checks one `validate` case as the shared runner does (`check::validate`: the status, the
/// exact error count when given, every expected (reason, field) pair among the causes), and
/// that the exit code agrees.
pub fn check_validate_case(case: &Case<ValidateExpect>, dir: &Path) -> Result<(), String> {
    let input = write_json(dir, "input.json", &case.input);
    let mut args: Vec<String> = vec!["validate".into(), "--output".into(), "json".into()];
    if let Some(old) = case.old.as_ref().filter(|o| !o.is_null()) {
        args.push("--old".into());
        args.push(write_json(dir, "old.json", old));
    }
    // The case's cluster, as the shared runner passes it.
    let cluster = case.cluster.clone().unwrap_or_default();
    if !cluster.service_cidrs.is_empty() {
        args.push("--service-cidrs".into());
        args.push(cluster.service_cidrs.join(","));
    }
    if let Some(range) = cluster.node_port_range.filter(|r| !r.is_empty()) {
        args.push("--node-port-range".into());
        args.push(range);
    }
    args.extend(case.args.iter().cloned());
    args.push(input);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = svcnet(&argv);
    if run.code == 2 || run.stdout.trim().is_empty() {
        return Err(format!("exit {}: {}", run.code, run.stderr.trim()));
    }
    let st = first_json(&run.stdout).ok_or("output is not JSON")?;
    let (valid, causes) = check::status_causes(&st);
    check::validate(&case.expect, valid, &causes)?;
    // The exit code agrees with the status.
    let want_code = if valid { 0 } else { 1 };
    if run.code != want_code {
        return Err(format!("exit {}, want {want_code}", run.code));
    }
    Ok(())
}

/// Runs a case's subcommand as the shared runner does (`svcnet SUB [--output json] ARGS... INPUT`,
/// with the case's input written to `dir`) and parses its first JSON document.
pub fn run_case_json<E>(case: &Case<E>, dir: &Path, output_json: bool) -> Result<Value, String> {
    let input = write_json(dir, "input.json", &case.input);
    let mut args: Vec<String> = vec![case.subcommand.clone()];
    if output_json {
        args.extend(["--output".to_owned(), "json".to_owned()]);
    }
    args.extend(case.args.iter().cloned());
    args.push(input);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = svcnet(&argv);
    if run.stdout.trim().is_empty() {
        return Err(format!("exit {}: {}", run.code, run.stderr.trim()));
    }
    first_json(&run.stdout).ok_or_else(|| "output is not JSON".to_owned())
}
