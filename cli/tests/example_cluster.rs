//! The bundled example cluster: it reads, round-trips through the typed model, and validates.

mod common;

use serde_json::Value;
use svcnet_model::{EndpointSlice, Endpoints, NetworkPolicy, Node, Pod, Service, ServiceCidr};

fn shop_path() -> String {
    format!("{}/../examples/clusters/shop.yaml", env!("CARGO_MANIFEST_DIR"))
}

fn round_trip<T: serde::de::DeserializeOwned + serde::Serialize + PartialEq + std::fmt::Debug>(v: &Value) {
    let first: T = serde_json::from_value(v.clone()).expect("decode");
    let again: T =
        serde_json::from_value(serde_json::to_value(&first).expect("encode")).expect("decode again");
    assert_eq!(first, again);
    // Nothing the example says is lost: the re-encoded object equals the input.
    assert_eq!(&serde_json::to_value(&first).expect("encode"), v);
}

#[test]
fn shop_round_trips_through_the_model() {
    let text = std::fs::read_to_string(shop_path()).expect("read shop.yaml");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).expect("parse shop.yaml");
    let mut kinds = std::collections::BTreeSet::new();
    for d in docs.iter().filter(|d| !d.is_null()) {
        let kind = d["kind"].as_str().expect("kind");
        kinds.insert(kind.to_owned());
        match kind {
            "Service" => round_trip::<Service>(d),
            "EndpointSlice" => round_trip::<EndpointSlice>(d),
            "Endpoints" => round_trip::<Endpoints>(d),
            "Pod" => round_trip::<Pod>(d),
            "Node" => round_trip::<Node>(d),
            "ServiceCIDR" => round_trip::<ServiceCidr>(d),
            "NetworkPolicy" => round_trip::<NetworkPolicy>(d),
            other => panic!("unexpected kind {other}"),
        }
    }
    assert!(kinds.len() >= 7, "{kinds:?}");
}

#[test]
fn shop_validates() {
    let run = common::svcnet(&["validate", &shop_path()]);
    assert_eq!(run.code, 0, "stdout:\n{}\nstderr:\n{}", run.stdout, run.stderr);
    assert!(run.stdout.contains("Service shop/web: valid"), "{}", run.stdout);
    // Kinds svcnet reads but does not validate: no line each, one summary line by kind, and
    // the count on the last line.
    assert!(!run.stdout.contains("not validated ("), "{}", run.stdout);
    assert!(!run.stdout.contains("Pod shop/web-0"), "{}", run.stdout);
    let kinds = "(svcnet validates Service, EndpointSlice, ServiceCIDR, IPAddress and NetworkPolicy)";
    let lines: Vec<&str> = run.stdout.lines().collect();
    let n = lines.len();
    assert!(n >= 2, "{}", run.stdout);
    assert_eq!(
        lines[n - 2],
        format!("skipped, not validated: 5 Nodes, 16 Pods, 1 Endpoints {kinds}")
    );
    assert_eq!(lines[n - 1], "19 valid, 0 invalid, 22 skipped");
    assert!(!run.stdout.contains("Pod shop/web-0: valid"), "{}", run.stdout);
    assert!(!run.stdout.contains("Node node-a1: valid"), "{}", run.stdout);
}

#[test]
fn unknown_fields_are_ignored() {
    let v: Value = serde_json::json!({
        "kind": "Service", "metadata": {"name": "x", "managedFields": [{"manager": "kubectl"}]},
        "spec": {"ports": [{"port": 80, "futureField": true}], "someNewThing": {"a": 1}}
    });
    let svc: Service = serde_json::from_value(v).expect("unknown fields ignored");
    assert_eq!(svc.spec().ports()[0].port, 80);
}

#[test]
fn shop_slices_are_in_steady_state() {
    // The example's EndpointSlices are what the controller (with hinting) would write: a sync
    // plans nothing.
    let run = common::svcnet(&["slice", "--output", "json", &shop_path()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let plan = common::first_json(&run.stdout).expect("json");
    for k in ["create", "update", "delete"] {
        assert_eq!(plan[k].as_array().map(Vec::len), Some(0), "{k}: {}", plan[k]);
    }
}

#[test]
fn slice_fills_prefer_close_hints_within_the_sync() {
    let input = serde_json::json!({"kind": "List", "items": [
        {"kind": "Service", "metadata": {"name": "web", "namespace": "shop"},
         "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.5", "ipFamilies": ["IPv4"],
                  "trafficDistribution": "PreferClose",
                  "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}},
        {"kind": "Node", "metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "z1"}},
         "status": {"allocatable": {"cpu": "2"}, "conditions": [{"type": "Ready", "status": "True"}]}},
        {"kind": "Pod", "metadata": {"name": "web-0", "namespace": "shop", "labels": {"app": "web"}},
         "spec": {"nodeName": "n1"},
         "status": {"phase": "Running", "podIP": "10.0.0.5",
                    "conditions": [{"type": "Ready", "status": "True"}]}}
    ]});
    let dir = common::scratch_dir("hints-in-slice");
    let path = common::write_json(&dir, "in.json", &input);
    let run = common::svcnet(&["slice", "--output", "json", &path]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let plan = common::first_json(&run.stdout).expect("json");
    let created = plan["create"].as_array().expect("create");
    assert_eq!(created.len(), 1, "{plan}");
    let ep = &created[0]["endpoints"][0];
    assert_eq!(ep["zone"], "z1");
    assert_eq!(ep["hints"]["forZones"][0]["name"], "z1", "{ep}");
}

#[test]
fn bundled_alloc_scripts_run() {
    let dir = format!("{}/../examples/alloc", env!("CARGO_MANIFEST_DIR"));
    // The ClusterIP script has two operations that are refused on purpose: exit 1.
    let run = common::svcnet(&["alloc", "--seed", "1", &format!("{dir}/cluster-ip.json")]);
    assert_eq!(run.code, 1, "{}", run.stderr);
    let out = common::first_json(&run.stdout).expect("json");
    assert_eq!(out["results"][1]["error"], "allocated");
    assert_eq!(out["results"][6]["value"], 10);
    let run = common::svcnet(&["alloc", "--seed", "1", &format!("{dir}/node-port.json")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let out = common::first_json(&run.stdout).expect("json");
    assert_eq!(out["results"][4]["value"], 16);
}
