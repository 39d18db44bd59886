//! Reading input: every malformed input exits 2 with a message naming where, never a panic.

mod common;

use common::{scratch_dir, svcnet, svcnet_stdin};

fn assert_clean_exit_2(run: &common::Run, needle: &str) {
    assert_eq!(run.code, 2, "stdout: {}\nstderr: {}", run.stdout, run.stderr);
    assert!(run.stderr.starts_with("svcnet: "), "{}", run.stderr);
    assert!(run.stderr.contains(needle), "want {needle:?} in {}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(!run.stderr.contains("RUST_BACKTRACE"), "{}", run.stderr);
}

#[test]
fn missing_file() {
    let run = svcnet(&["validate", "/nonexistent/svcnet/input.yaml"]);
    assert_clean_exit_2(&run, "/nonexistent/svcnet/input.yaml");
}

#[test]
fn bad_yaml_names_line_and_column() {
    let run = svcnet_stdin(
        &["validate", "-"],
        b"kind: Service\nmetadata:\n  name: [unclosed\n",
    );
    assert_clean_exit_2(&run, "<stdin>");
    assert!(run.stderr.contains("line"), "{}", run.stderr);
}

#[test]
fn bad_json_names_line_and_column() {
    let dir = scratch_dir("input");
    let p = dir.join("bad.json");
    std::fs::write(&p, "{\n  \"kind\": \"Service\",\n  \"metadata\": }\n").unwrap();
    let run = svcnet(&["validate", p.to_str().unwrap()]);
    assert_clean_exit_2(&run, "line 3");
}

#[test]
fn wrong_field_type_names_document_and_object() {
    let yaml = b"kind: Service\nmetadata: {name: a}\n---\nkind: Service\nmetadata: {name: b, namespace: x}\nspec:\n  ports: [{port: eighty}]\n";
    let run = svcnet_stdin(&["validate", "-"], yaml);
    assert_clean_exit_2(&run, "document 2 (Service x/b)");
}

#[test]
fn binary_garbage() {
    let bytes: Vec<u8> = (0..=255u8).rev().cycle().take(4096).collect();
    let run = svcnet_stdin(&["validate", "-"], &bytes);
    assert_clean_exit_2(&run, "<stdin>");
}

#[test]
fn scalar_document_is_not_an_object() {
    let run = svcnet_stdin(&["validate", "-"], b"just a string\n");
    assert_clean_exit_2(&run, "expected a Kubernetes object");
}

#[test]
fn unknown_kinds_are_ignored_with_a_warning() {
    let yaml = b"kind: ConfigMap\nmetadata: {name: c}\n---\nkind: Service\nmetadata: {name: s, namespace: d}\nspec:\n  ports: [{port: 80}]\n";
    let run = svcnet_stdin(&["validate", "-"], yaml);
    assert_ne!(run.code, 2, "{}", run.stderr);
    assert!(run.stderr.contains("ConfigMap"), "{}", run.stderr);
    assert!(run.stdout.contains("Service d/s"), "{}", run.stdout);
}

#[test]
fn list_and_multi_document_inputs() {
    let list = br#"{"apiVersion":"v1","kind":"List","items":[
        {"kind":"Service","metadata":{"name":"a","namespace":"n"},"spec":{"ports":[{"port":80}]}},
        {"kind":"Service","metadata":{"name":"b","namespace":"n"},"spec":{"ports":[{"port":81}]}}]}"#;
    let run = svcnet_stdin(&["validate", "--output", "json", "-"], list);
    assert_ne!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stdout.lines().count(), 2, "{}", run.stdout);
    for line in run.stdout.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(v["kind"], "Status");
    }
}

#[test]
fn bad_command_line_exits_2() {
    let run = svcnet(&["validate", "--output", "xml", "x"]);
    assert_eq!(run.code, 2);
    let run = svcnet(&["no-such-command"]);
    assert_eq!(run.code, 2);
}
