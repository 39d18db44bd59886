//! `svcnet slice` and `svcnet mirror` through the binary: shapes, text, exit codes.

mod common;

use serde_json::{Value, json};

fn input(pods: usize, node: &str) -> Value {
    let mut items = vec![
        json!({"apiVersion":"v1","kind":"Service","metadata":{"name":"web","namespace":"ns","uid":"u1"},
               "spec":{"selector":{"app":"web"},"ports":[{"name":"http","port":80,"targetPort":8080}],
                       "ipFamilies":["IPv4"],"clusterIP":"10.96.0.1"}}),
        json!({"apiVersion":"v1","kind":"Node","metadata":{"name":"n1","labels":{"topology.kubernetes.io/zone":"z1"}}}),
    ];
    for i in 0..pods {
        items.push(json!({"apiVersion":"v1","kind":"Pod",
            "metadata":{"name":format!("p{i}"),"namespace":"ns","labels":{"app":"web"}},
            "spec":{"nodeName":node},
            "status":{"podIP":format!("10.0.0.{i}"),"podIPs":[{"ip":format!("10.0.0.{i}")}],
                      "conditions":[{"type":"Ready","status":"True"}]}}));
    }
    json!({"apiVersion":"v1","kind":"List","items":items})
}

#[test]
fn json_plan_shape_and_determinism() {
    let dir = common::scratch_dir("slice-cli");
    let f = common::write_json(&dir, "in.json", &input(5, "n1"));
    let args = [
        "slice",
        "--max-endpoints-per-slice",
        "2",
        "--output",
        "json",
        f.as_str(),
    ];
    let run = common::svcnet(&args);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = common::first_json(&run.stdout).unwrap();
    assert_eq!(v["create"].as_array().unwrap().len(), 3);
    assert_eq!(v["update"], json!([]));
    assert_eq!(v["delete"], json!([]));
    assert_eq!(v["error"], Value::Null);
    assert_eq!(v["counts"], json!({"create": 3, "update": 0, "delete": 0}));
    assert_eq!(v["slices"].as_array().unwrap().len(), 3);
    let s = &v["create"][0];
    assert_eq!(s["metadata"]["generateName"], "web-");
    assert!(s["metadata"]["name"].as_str().unwrap().starts_with("web-"));
    assert_eq!(s["endpoints"][0]["zone"], "z1");
    assert_eq!(s["ports"][0], json!({"name":"http","port":8080,"protocol":"TCP"}));
    // Same input and seed, same output; another seed, other names.
    assert_eq!(common::svcnet(&args).stdout, run.stdout);
    let mut other = args.to_vec();
    other.splice(1..1, ["--seed", "5"]);
    let v2 = common::first_json(&common::svcnet(&other).stdout).unwrap();
    assert_ne!(v2["create"][0]["metadata"]["name"], s["metadata"]["name"]);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn missing_node_reports_error_and_text_output() {
    let dir = common::scratch_dir("slice-cli");
    let f = common::write_json(&dir, "in.json", &input(1, "nowhere"));
    let run = common::svcnet(&["slice", "--output", "json", &f]);
    assert_eq!(run.code, 0);
    let v = common::first_json(&run.stdout).unwrap();
    assert_eq!(
        v["error"],
        "skipping Pod p0 for Service ns/web: Node nowhere Not Found"
    );
    assert_eq!(v["create"][0]["endpoints"], json!([]), "placeholder");
    let text = common::svcnet(&["slice", &f]).stdout;
    assert!(text.contains("create ns/web-"), "{text}");
    assert!(text.contains("endpoints=0"), "{text}");
    assert!(text.contains("Node nowhere Not Found"), "{text}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn bad_flags_and_files_exit_2() {
    let dir = common::scratch_dir("slice-cli");
    let f = common::write_json(&dir, "in.json", &input(1, "n1"));
    let run = common::svcnet(&["slice", "--max-endpoints-per-slice", "1001", &f]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("between 1 and 1000"), "{}", run.stderr);
    let run = common::svcnet(&["mirror", "--max-endpoints-per-slice", "0", &f]);
    assert_eq!(run.code, 2);
    let run = common::svcnet(&["slice", "/nonexistent/in.json"]);
    assert_eq!(run.code, 2);
    assert!(!run.stderr.contains("panicked"));
    let run = common::svcnet_stdin(&["slice", "--output", "json", "-"], b"\xff\xfe{{{");
    assert_eq!(run.code, 2);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn stdin_yaml_and_mirror_events() {
    let yaml = b"apiVersion: v1
kind: Service
metadata: {name: ext, namespace: ns, uid: u2}
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: ext, namespace: ns}
subsets:
- addresses: [{ip: 192.168.0.1}, {ip: not-an-ip}]
  ports: [{name: '', port: 8080, protocol: TCP}]
";
    let run = common::svcnet_stdin(&["mirror", "--output", "json", "-"], yaml);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = common::first_json(&run.stdout).unwrap();
    assert_eq!(v["create"].as_array().unwrap().len(), 1);
    let s = &v["create"][0];
    assert_eq!(
        s["metadata"]["labels"]["endpointslice.kubernetes.io/managed-by"],
        "endpointslicemirroring-controller.k8s.io"
    );
    assert_eq!(s["metadata"]["ownerReferences"][0]["kind"], "Endpoints");
    assert_eq!(v["events"][0]["reason"], "InvalidIPAddress");
    // `slice` leaves selector-less Services alone.
    let run = common::svcnet_stdin(&["slice", "--output", "json", "-"], yaml);
    let v = common::first_json(&run.stdout).unwrap();
    assert_eq!(v["create"], json!([]));
}

#[test]
fn mirror_writes_portless_subsets_as_ports_null() {
    // Issue 18, item 3: kube-controller-manager v1.37.2 mirrors this into an IPv4 slice
    // holding 10.20.0.1 with `ports: null`.
    let yaml = b"apiVersion: v1
kind: Service
metadata: {name: ext, namespace: ns, uid: u2}
spec:
  ports: [{port: 80}]
---
apiVersion: v1
kind: Endpoints
metadata: {name: ext, namespace: ns}
subsets:
- addresses: [{ip: 10.20.0.1}]
";
    let run = common::svcnet_stdin(&["mirror", "--output", "json", "-"], yaml);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = common::first_json(&run.stdout).unwrap();
    let created = v["create"].as_array().unwrap();
    assert_eq!(created.len(), 1);
    let s = &created[0];
    assert_eq!(s["addressType"], "IPv4");
    assert_eq!(s["endpoints"][0]["addresses"], json!(["10.20.0.1"]));
    let obj = s.as_object().unwrap();
    assert_eq!(obj.get("ports"), Some(&serde_json::Value::Null), "{s}");
}

#[test]
fn legacy_endpoints_flag() {
    let dir = common::scratch_dir("slice-cli");
    let f = common::write_json(&dir, "in.json", &input(3, "n1"));
    let run = common::svcnet(&["slice", "--legacy-endpoints", "--output", "json", &f]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let v = common::first_json(&run.stdout).unwrap();
    let e = &v["endpoints"][0];
    assert_eq!(e["kind"], "Endpoints");
    assert_eq!(e["subsets"][0]["addresses"].as_array().unwrap().len(), 3);
    assert_eq!(e["subsets"][0]["ports"][0]["port"], 8080);
    let text = common::svcnet(&["slice", "--legacy-endpoints", &f]).stdout;
    assert!(
        text.contains("endpoints ns/web: 1 subsets, 3 ready, 0 not ready"),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
