//! `svcnet validate` on NetworkPolicies: alone, in Lists, in multi-document YAML beside
//! Services, from standard input, with defaulting and as updates.

mod common;

use serde_json::{Value, json};

fn statuses(stdout: &str) -> Vec<Value> {
    stdout
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("one JSON Status per line"))
        .collect()
}

fn causes(st: &Value) -> Vec<(String, String, String)> {
    st["details"]["causes"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let s = |k: &str| c[k].as_str().unwrap_or("").to_owned();
            (s("reason"), s("field"), s("message"))
        })
        .collect()
}

fn policy(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": spec
    })
}

#[test]
fn single_valid_policy_text_and_json() {
    let dir = common::scratch_dir("np-cli");
    let file = common::write_json(
        &dir,
        "np.json",
        &policy(
            "web",
            json!({"podSelector": {"matchLabels": {"app": "web"}},
                   "ingress": [{"ports": [{"port": 80}], "from": [{"podSelector": {}}]}]}),
        ),
    );
    let run = common::svcnet(&["validate", &file]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert_eq!(
        run.stdout.trim(),
        "NetworkPolicy shop/web: valid\n1 valid, 0 invalid, 0 skipped"
    );
    let run = common::svcnet(&["validate", "--output", "json", &file]);
    assert_eq!(run.code, 0);
    let st = statuses(&run.stdout);
    assert_eq!(st.len(), 1);
    assert_eq!(st[0]["status"], "Success");
    assert_eq!(st[0]["details"]["kind"], "NetworkPolicy");
    assert_eq!(st[0]["details"]["group"], "networking.k8s.io");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn invalid_policy_reports_kubernetes_messages() {
    let dir = common::scratch_dir("np-cli");
    let file = common::write_json(
        &dir,
        "np.json",
        &policy(
            "bad",
            json!({"ingress": [{"from": [{}], "ports": [{"protocol": "ICMP", "port": 80, "endPort": 79}]}],
                   "policyTypes": ["Ingress", "Egress", "Other"]}),
        ),
    );
    let run = common::svcnet(&["validate", "--output", "json", &file]);
    assert_eq!(run.code, 1);
    let st = statuses(&run.stdout);
    assert_eq!(st[0]["status"], "Failure");
    assert_eq!(st[0]["code"], 422);
    let got = causes(&st[0]);
    let fields: Vec<&str> = got.iter().map(|c| c.1.as_str()).collect();
    assert_eq!(
        fields,
        [
            "spec.ingress[0].ports[0].protocol",
            "spec.ingress[0].ports[0].endPort",
            "spec.ingress[0].from[0]",
            "spec.policyTypes"
        ]
    );
    assert_eq!(got[0].0, "FieldValueNotSupported");
    assert_eq!(
        got[0].2,
        r#"Unsupported value: "ICMP": supported values: "TCP", "UDP", "SCTP""#
    );
    assert_eq!(
        got[1].2,
        "Invalid value: 79: must be greater than or equal to `port`"
    );
    assert_eq!(got[2].2, "Required value: must specify a peer");
    let run = common::svcnet(&["validate", &file]);
    assert_eq!(run.code, 1);
    assert!(
        run.stdout
            .contains("NetworkPolicy shop/bad: spec.ingress[0].from[0]: Required value: must specify a peer"),
        "{}",
        run.stdout
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn multi_document_yaml_beside_a_service() {
    let dir = common::scratch_dir("np-cli");
    let yaml = r#"
apiVersion: v1
kind: Service
metadata:
  name: web
  namespace: shop
spec:
  selector:
    app: web
  ports:
  - port: 80
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: allow-web
  namespace: shop
spec:
  podSelector:
    matchLabels:
      app: web
  ingress:
  - from:
    - ipBlock:
        cidr: 10.0.0.0/8
        except: ["10.0.0.0/8"]
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: deny-all
  namespace: shop
spec:
  podSelector: {}
  policyTypes: ["Ingress", "Egress"]
"#;
    let path = dir.join("all.yaml");
    std::fs::write(&path, yaml).expect("write yaml");
    let path = path.to_string_lossy().into_owned();
    let run = common::svcnet(&["validate", "--output", "json", &path]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let st = statuses(&run.stdout);
    assert_eq!(st.len(), 3);
    let np: Vec<&Value> = st
        .iter()
        .filter(|s| s["details"]["kind"] == "NetworkPolicy")
        .collect();
    assert_eq!(np.len(), 2);
    let allow = np
        .iter()
        .find(|s| s["details"]["name"] == "allow-web")
        .expect("allow-web");
    assert_eq!(
        causes(allow),
        [(
            "FieldValueInvalid".to_owned(),
            "spec.ingress[0].from[0].ipBlock.except[0]".to_owned(),
            r#"Invalid value: "10.0.0.0/8": must be a strict subset of `cidr`"#.to_owned()
        )]
    );
    let deny = np
        .iter()
        .find(|s| s["details"]["name"] == "deny-all")
        .expect("deny-all");
    assert_eq!(deny["status"], "Success");
    assert!(st.iter().any(|s| s["details"]["kind"] == "Service"));
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn list_from_standard_input_with_defaulting() {
    let list = json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            // Without a protocol and without policyTypes: valid, before and after defaulting.
            policy("a", json!({"egress": [{"ports": [{"port": 53}]}], "policyTypes": []})),
            // An empty protocol is not filled by defaulting and stays invalid.
            policy("b", json!({"ingress": [{"ports": [{"protocol": "", "port": "dns"}]}]})),
        ]
    });
    let bytes = serde_json::to_vec(&list).expect("encode");
    let run = common::svcnet_stdin(&["validate", "--output", "json", "-"], &bytes);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let st = statuses(&run.stdout);
    assert_eq!(st.len(), 2);
    assert_eq!(st[0]["details"]["name"], "a");
    assert_eq!(st[0]["status"], "Success");
    let b = causes(&st[1]);
    assert_eq!(b.len(), 1);
    assert_eq!(b[0].1, "spec.ingress[0].ports[0].protocol");
    let run = common::svcnet_stdin(&["validate", "--no-defaults", "--output", "json", "-"], &bytes);
    assert_eq!(statuses(&run.stdout)[0]["status"], "Success");
}

#[test]
fn update_keeps_stored_cidrs_and_refuses_renames() {
    let dir = common::scratch_dir("np-cli");
    let mut old = policy(
        "web",
        json!({"ingress": [{"from": [{"ipBlock": {"cidr": "192.168.1.1/24"}}]}]}),
    );
    old["metadata"]["resourceVersion"] = json!("1");
    let old_file = common::write_json(&dir, "old.json", &old);
    // Create refuses the host bits; an update that keeps the stored value accepts them.
    let run = common::svcnet(&["validate", "--output", "json", &old_file]);
    assert_eq!(run.code, 1);
    assert_eq!(
        causes(&statuses(&run.stdout)[0])[0].2,
        r#"Invalid value: "192.168.1.1/24": must not have bits set beyond the prefix length"#
    );
    let mut new = old.clone();
    new["spec"]["egress"] = json!([{"to": [{"ipBlock": {"cidr": "192.168.1.1/24"}}]}]);
    let new_file = common::write_json(&dir, "new.json", &new);
    let run = common::svcnet(&["validate", "--output", "json", "--old", &old_file, &new_file]);
    assert_eq!(run.code, 0, "{}", run.stdout);
    let mut renamed = new.clone();
    renamed["metadata"]["name"] = json!("other");
    let renamed_file = common::write_json(&dir, "renamed.json", &renamed);
    let run = common::svcnet(&["validate", "--output", "json", "--old", &old_file, &renamed_file]);
    assert_eq!(run.code, 1);
    let got = causes(&statuses(&run.stdout)[0]);
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].1, "metadata.name");
    let _ = std::fs::remove_dir_all(&dir);
}
