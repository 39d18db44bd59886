//! `svcnet dns` and `svcnet env` through the binary: shapes, formats and exit codes.

mod common;

use serde_json::{Value, json};

fn cluster() -> Value {
    json!({"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
         "spec": {"clusterIP": "10.96.0.10", "ports": [{"name": "http", "port": 80, "protocol": "TCP"}]}},
        {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
         "metadata": {"name": "web-1", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
         "addressType": "IPv4", "endpoints": [{"addresses": ["10.1.0.5"], "conditions": {"ready": true}}],
         "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}]},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ignored", "namespace": "shop"}}
    ]})
}

#[test]
fn dns_json_and_zone_text() {
    let dir = common::scratch_dir("dns-cli");
    let input = common::write_json(&dir, "in.json", &cluster());
    let run = common::svcnet(&[
        "dns",
        "--cluster-domain",
        "cluster.local",
        "--ttl",
        "30",
        "--output",
        "json",
        &input,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stderr.contains("ConfigMap"),
        "unknown kinds are warned about: {}",
        run.stderr
    );
    let out = common::first_json(&run.stdout).expect("json");
    let records = out["records"].as_array().expect("records");
    assert!(records.contains(
        &json!({"name": "web.shop.svc.cluster.local.", "type": "A", "ttl": 30, "data": "10.96.0.10"})
    ));
    assert!(records.contains(
        &json!({"name": "dns-version.cluster.local.", "type": "TXT", "ttl": 28800, "data": "\"1.1.0\""})
    ));
    let names: Vec<&str> = records.iter().map(|r| r["name"].as_str().unwrap()).collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "records come sorted by name");

    let run = common::svcnet(&["dns", "--cluster-domain", "cluster.local.", &input]);
    assert_eq!(run.code, 0);
    assert!(
        run.stdout.lines().any(|l| l
            == "_http._tcp.web.shop.svc.cluster.local.\t5\tIN\tSRV\t0 100 80 web.shop.svc.cluster.local.")
    );
    assert!(
        run.stdout
            .lines()
            .any(|l| l == "5.0.1.10.in-addr.arpa.\t5\tIN\tPTR\t10-1-0-5.web.shop.svc.cluster.local.")
    );
    assert!(
        run.stdout.lines().all(|l| l.split('\t').count() == 5),
        "{}",
        run.stdout
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dns_reads_yaml_from_stdin_and_answers_queries() {
    let yaml =
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: db\n  namespace: shop\nspec:\n  clusterIP: None\n";
    let run = common::svcnet_stdin(
        &[
            "dns",
            "--cluster-domain",
            "cluster.local",
            "--query",
            "db.shop.svc.cluster.local",
            "--output",
            "json",
            "-",
        ],
        yaml.as_bytes(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = common::first_json(&run.stdout).expect("json");
    assert_eq!(
        out["rcode"], "NXDOMAIN",
        "a headless Service without endpoints has no name"
    );
    let run = common::svcnet_stdin(
        &[
            "dns",
            "--cluster-domain",
            "cluster.local",
            "--query",
            "shop.svc.cluster.local",
            "--type",
            "srv",
            "-",
        ],
        yaml.as_bytes(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("NOERROR (no data)"), "{}", run.stdout);
    // A Namespace object makes its pod names answer in insecure mode.
    let yaml = "kind: Namespace\nmetadata:\n  name: empty\n";
    let run = common::svcnet_stdin(
        &[
            "dns",
            "--cluster-domain",
            "cluster.local",
            "--pods",
            "insecure",
            "--query",
            "10-0-0-1.empty.pod.cluster.local",
            "-",
        ],
        yaml.as_bytes(),
    );
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(
        run.stdout
            .contains("10-0-0-1.empty.pod.cluster.local.\t5\tIN\tA\t10.0.0.1"),
        "{}",
        run.stdout
    );
    assert!(
        !run.stderr.contains("Namespace"),
        "Namespace objects are read, not warned about"
    );
}

#[test]
fn dns_answers_coredns_by_default_and_rfc_on_request() {
    let dir = common::scratch_dir("dns-answers");
    let input = common::write_json(&dir, "in.json", &cluster());
    let rcode = |extra: &[&str]| {
        let mut args = vec![
            "dns",
            "--cluster-domain",
            "cluster.local",
            "--query",
            "web.shop.svc.cluster.local",
            "--type",
            "TXT",
            "--output",
            "json",
        ];
        args.extend_from_slice(extra);
        args.push(&input);
        let run = common::svcnet(&args);
        assert_eq!(run.code, 0, "{}", run.stderr);
        common::first_json(&run.stdout).expect("json")["rcode"].clone()
    };
    assert_eq!(rcode(&[]), "NXDOMAIN", "CoreDNS answers TXT only at dns-version");
    assert_eq!(rcode(&["--answers", "coredns"]), "NXDOMAIN");
    assert_eq!(rcode(&["--answers", "rfc"]), "NOERROR", "the name exists");
}

#[test]
fn dns_since_prints_the_delta() {
    let dir = common::scratch_dir("dns-cli-since");
    let old = common::write_json(&dir, "old.json", &cluster());
    let mut c = cluster();
    c["items"][1]["endpoints"][0]["addresses"][0] = json!("10.1.0.6");
    let new = common::write_json(&dir, "new.json", &c);
    let run = common::svcnet(&[
        "dns",
        "--cluster-domain",
        "cluster.local",
        "--since",
        &old,
        "--output",
        "json",
        &new,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = common::first_json(&run.stdout).expect("json");
    let names = |k: &str| -> Vec<String> {
        out[k]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        names("removed"),
        [
            "10-1-0-5.web.shop.svc.cluster.local.",
            "10-1-0-5.web.shop.svc.cluster.local.",
            "5.0.1.10.in-addr.arpa."
        ]
    );
    assert_eq!(
        names("added"),
        [
            "10-1-0-6.web.shop.svc.cluster.local.",
            "10-1-0-6.web.shop.svc.cluster.local.",
            "6.0.1.10.in-addr.arpa."
        ]
    );
    let run = common::svcnet(&["dns", "--cluster-domain", "cluster.local", "--since", &old, &old]);
    assert_eq!((run.code, run.stdout.as_str()), (0, ""), "no change, no output");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dns_exit_codes() {
    let dir = common::scratch_dir("dns-cli-codes");
    let input = common::write_json(&dir, "in.json", &cluster());
    for args in [
        vec!["dns", "--ttl", "5", input.as_str()],
        vec![
            "dns",
            "--cluster-domain",
            "cluster.local",
            "--ttl",
            "3601",
            input.as_str(),
        ],
        vec![
            "dns",
            "--cluster-domain",
            "cluster.local",
            "--pods",
            "sometimes",
            input.as_str(),
        ],
        vec!["dns", "--cluster-domain", "a..b", input.as_str()],
        vec![
            "dns",
            "--cluster-domain",
            "cluster.local",
            "--query",
            "x",
            "--type",
            "MX",
            input.as_str(),
        ],
        vec![
            "dns",
            "--cluster-domain",
            "cluster.local",
            "/nonexistent/file.json",
        ],
    ] {
        let run = common::svcnet(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(
            !run.stderr.trim().is_empty() && !run.stderr.contains("panicked"),
            "{args:?}"
        );
    }
    let bad = common::write_json(
        &dir,
        "bad.json",
        &json!({"kind": "EndpointSlice",
        "metadata": {"name": "s", "namespace": "x", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4", "endpoints": [{"addresses": ["10.0.0.1", "not-an-ip"]}]}),
    );
    let run = common::svcnet(&["dns", "--cluster-domain", "cluster.local", &bad]);
    assert_eq!(run.code, 1, "invalid input exits 1");
    assert!(
        run.stderr.contains("not-an-ip") && run.stderr.contains("endpoints[0].addresses[1]"),
        "{}",
        run.stderr
    );
    assert!(
        run.stdout.contains("1.0.0.10.in-addr.arpa."),
        "the valid part is still served"
    );
    let garbage = dir.join("garbage.yaml");
    std::fs::write(&garbage, b"kind: [unclosed\n").unwrap();
    let run = common::svcnet(&[
        "dns",
        "--cluster-domain",
        "cluster.local",
        garbage.to_str().unwrap(),
    ]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("garbage.yaml"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn env_text_json_and_links() {
    let dir = common::scratch_dir("env-cli");
    let mut c = cluster();
    c["items"].as_array_mut().unwrap().push(json!({"kind": "Service",
        "metadata": {"name": "kubernetes", "namespace": "default"},
        "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}}));
    let input = common::write_json(&dir, "in.json", &c);
    let run = common::svcnet(&["env", "--namespace", "shop", &input]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let lines: Vec<&str> = run.stdout.lines().collect();
    assert_eq!(
        lines[0], "KUBERNETES_SERVICE_HOST=10.96.0.1",
        "Services in name order"
    );
    assert!(lines.contains(&"WEB_PORT=tcp://10.96.0.10:80"));
    assert!(lines.contains(&"WEB_SERVICE_PORT_HTTP=80"));

    let run = common::svcnet(&[
        "env",
        "--namespace",
        "shop",
        "--enable-service-links",
        "false",
        "--output",
        "json",
        &input,
    ]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = common::first_json(&run.stdout).expect("json");
    let env = out["env"].as_array().unwrap();
    assert_eq!(env.len(), 8);
    assert!(
        env.iter()
            .all(|v| v["name"].as_str().unwrap().starts_with("KUBERNETES_"))
    );
    assert_eq!(
        env[0],
        json!({"name": "KUBERNETES_SERVICE_HOST", "value": "10.96.0.1"})
    );

    let run = common::svcnet(&[
        "env",
        "--namespace",
        "shop",
        "--enable-service-links",
        "maybe",
        &input,
    ]);
    assert_eq!(run.code, 2);
    let run = common::svcnet(&["env", &input]);
    assert_eq!(run.code, 2, "--namespace is required");
    let _ = std::fs::remove_dir_all(&dir);
}
