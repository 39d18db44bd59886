//! Serde round trips: every object of the validation fixtures parses, serializes and parses
//! again to an equal value, and re-encodes to the JSON it came from; unknown fields are ignored.

use std::path::Path;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use svcnet_model::{EndpointSlice, IpAddress, Service, ServiceCidr};

/// The validation fixtures, kept as data under the workspace's `testdata/`.
fn fixture_objects() -> Vec<(String, Value)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/conformance/validation");
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .expect("fixture directory")
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    names.sort();
    let mut out = Vec::new();
    for p in names {
        let case: Value = serde_json::from_str(&std::fs::read_to_string(&p).expect("read")).expect("json");
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        for key in ["input", "old"] {
            if let Some(v) = case.get(key).filter(|v| !v.is_null()) {
                out.push((format!("{name}:{key}"), v.clone()));
            }
        }
    }
    out
}

/// What the model writes for an input: `null`s dropped (they mean "unset"), and an endpoint's
/// `conditions` and `addresses` and a slice's `addressType` always present (as `kubectl get -o
/// json` prints them).
fn expected_encoding(v: &Value) -> Value {
    let mut v = without_nulls(v);
    if v["kind"] == "EndpointSlice"
        && let Some(m) = v.as_object_mut()
    {
        m.entry("addressType").or_insert_with(|| json!(""));
    }
    if let Some(eps) = v.get_mut("endpoints").and_then(Value::as_array_mut) {
        for ep in eps.iter_mut().filter_map(Value::as_object_mut) {
            ep.entry("conditions").or_insert_with(|| json!({}));
            ep.entry("addresses").or_insert_with(|| json!([]));
        }
    }
    v
}

/// Drops `null`s (empty maps and lists are kept by the model).
fn without_nulls(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(_, v)| !v.is_null())
                .map(|(k, v)| (k.clone(), without_nulls(v)))
                .collect(),
        ),
        Value::Array(a) => Value::Array(a.iter().map(without_nulls).collect()),
        other => other.clone(),
    }
}

fn round_trip<T: DeserializeOwned + Serialize + PartialEq + std::fmt::Debug>(name: &str, v: &Value) {
    let first: T = serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{name}: decode: {e}"));
    let text = serde_json::to_string(&first).unwrap_or_else(|e| panic!("{name}: encode: {e}"));
    let again: T = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: decode again: {e}"));
    assert_eq!(first, again, "{name}");
    let reencoded: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        reencoded,
        expected_encoding(v),
        "{name}: re-encoding lost or added something"
    );
}

#[test]
fn fixture_objects_round_trip() {
    let objects = fixture_objects();
    assert!(objects.len() >= 91, "only {} fixture objects", objects.len());
    let mut kinds = std::collections::BTreeSet::new();
    for (name, v) in &objects {
        let kind = v["kind"].as_str().unwrap_or_default();
        kinds.insert(kind.to_owned());
        match kind {
            "Service" => round_trip::<Service>(name, v),
            "EndpointSlice" => round_trip::<EndpointSlice>(name, v),
            "ServiceCIDR" => round_trip::<ServiceCidr>(name, v),
            "IPAddress" => round_trip::<IpAddress>(name, v),
            other => panic!("{name}: unexpected kind {other}"),
        }
    }
    assert!(kinds.len() >= 3, "{kinds:?}");
}

#[test]
fn a_kubectl_style_service_round_trips() {
    let v = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": "gateway",
            "namespace": "payments",
            "uid": "8d5f1c2e-0000-4000-8000-000000000001",
            "resourceVersion": "4711",
            "generation": 3,
            "creationTimestamp": "2024-05-01T10:00:00Z",
            "labels": {"app": "gateway"},
            "annotations": {"service.kubernetes.io/topology-mode": "Auto"},
            "finalizers": ["service.kubernetes.io/load-balancer-cleanup"]
        },
        "spec": {
            "type": "LoadBalancer",
            "clusterIP": "10.96.0.20",
            "clusterIPs": ["10.96.0.20", "fd00:10:96::20"],
            "ipFamilies": ["IPv4", "IPv6"],
            "ipFamilyPolicy": "PreferDualStack",
            "ports": [
                {"name": "https", "protocol": "TCP", "appProtocol": "https", "port": 443, "targetPort": "https", "nodePort": 30443},
                {"name": "dns", "protocol": "UDP", "port": 53, "targetPort": 5353, "nodePort": 30053}
            ],
            "selector": {"app": "gateway"},
            "sessionAffinity": "ClientIP",
            "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 600}},
            "externalIPs": ["203.0.113.7"],
            "loadBalancerIP": "203.0.113.8",
            "loadBalancerSourceRanges": ["198.51.100.0/24"],
            "loadBalancerClass": "example.com/lb",
            "allocateLoadBalancerNodePorts": true,
            "externalTrafficPolicy": "Local",
            "healthCheckNodePort": 31000,
            "internalTrafficPolicy": "Cluster",
            "publishNotReadyAddresses": false,
            "trafficDistribution": "PreferClose"
        },
        "status": {
            "loadBalancer": {"ingress": [
                {"ip": "203.0.113.8", "ipMode": "VIP", "ports": [{"port": 443, "protocol": "TCP"}]},
                {"hostname": "lb.example.com"}
            ]},
            "conditions": [{"type": "LoadBalancerReady", "status": "True", "lastTransitionTime": "2024-05-01T10:01:00Z", "reason": "Ready", "message": ""}]
        }
    });
    round_trip::<Service>("gateway", &v);
    let svc: Service = serde_json::from_value(v).expect("decode");
    assert!(svcnet_model::validation::validate_service_create(&svc).is_empty());
}

#[test]
fn unknown_fields_are_ignored() {
    let v = json!({
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "x", "namespace": "y", "managedFields": [{"manager": "kubectl"}], "selfLink": "/x"},
        "spec": {"ports": [{"port": 80, "futureField": true}], "someNewThing": {"a": 1}},
        "status": {"somethingElse": []},
        "extra": 1
    });
    let svc: Service = serde_json::from_value(v).expect("unknown fields ignored");
    assert_eq!(svc.spec().ports()[0].port, 80);
    let back = serde_json::to_value(&svc).expect("encode");
    assert!(back["spec"].get("someNewThing").is_none());
    let slice: EndpointSlice = serde_json::from_value(json!({
        "kind": "EndpointSlice", "addressType": "IPv4", "metadata": {"name": "s"},
        "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true, "newCondition": false}, "shiny": 1}]
    }))
    .expect("unknown fields ignored");
    assert_eq!(
        slice.endpoints()[0].addresses.to_vec(),
        vec!["10.0.0.1".to_string()]
    );
}
