//! NetworkPolicy manifests as `kubectl get -o json` prints them read into the types and written
//! back unchanged.

use serde_json::{Value, json};
use svcnet_model::{IntOrString, NetworkPolicy, validation};

fn round_trip(manifest: Value) -> NetworkPolicy {
    let np: NetworkPolicy = serde_json::from_value(manifest.clone()).expect("manifest decodes");
    let back = serde_json::to_value(&np).expect("policy encodes");
    assert_eq!(back, manifest);
    np
}

#[test]
fn documentation_example_round_trips() {
    // The example of the Kubernetes NetworkPolicy concept page, as stored (defaults applied).
    let np = round_trip(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": "test-network-policy",
            "namespace": "default",
            "uid": "0b6c1f4e-7d1a-4a38-9d4a-1f6f0e1f2d3c",
            "resourceVersion": "4711",
            "generation": 1,
            "creationTimestamp": "2024-01-02T03:04:05Z"
        },
        "spec": {
            "podSelector": {"matchLabels": {"role": "db"}},
            "policyTypes": ["Ingress", "Egress"],
            "ingress": [{
                "from": [
                    {"ipBlock": {"cidr": "172.17.0.0/16", "except": ["172.17.1.0/24"]}},
                    {"namespaceSelector": {"matchLabels": {"project": "myproject"}}},
                    {"podSelector": {"matchLabels": {"role": "frontend"}}}
                ],
                "ports": [{"protocol": "TCP", "port": 6379}]
            }],
            "egress": [{
                "to": [{"ipBlock": {"cidr": "10.0.0.0/24"}}],
                "ports": [{"protocol": "TCP", "port": 32000, "endPort": 32768}]
            }]
        }
    }));
    assert!(validation::validate_network_policy_create(&np).is_empty());
    let spec = np.spec.unwrap_or_default();
    let egress = spec.egress.unwrap_or_default();
    let port = &egress[0].ports.as_deref().unwrap_or_default()[0];
    assert_eq!(port.port, Some(IntOrString::Int(32000)));
    assert_eq!(port.end_port, Some(32768));
}

#[test]
fn selectors_named_ports_and_empty_lists_round_trip() {
    let np = round_trip(json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "mixed", "namespace": "shop", "labels": {"team": "a"}},
        "spec": {
            "podSelector": {},
            "ingress": [
                {},
                {"from": [], "ports": []},
                {"from": [{
                    "namespaceSelector": {"matchExpressions": [
                        {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["a", "b"]}
                    ]},
                    "podSelector": {"matchExpressions": [{"key": "debug", "operator": "DoesNotExist"}]}
                }],
                 "ports": [{"port": "http"}, {"protocol": "UDP"}]}
            ],
            "policyTypes": ["Ingress"]
        }
    }));
    assert!(validation::validate_network_policy_create(&np).is_empty());
    // `"80"` stays a name (and is refused as one).
    let named: NetworkPolicy = serde_json::from_value(json!({
        "metadata": {"name": "n", "namespace": "shop"},
        "spec": {"ingress": [{"ports": [{"port": "80"}]}]}
    }))
    .expect("decodes");
    let errs = validation::validate_network_policy_create(&named);
    assert_eq!(errs.len(), 1);
    assert_eq!(errs[0].field, "spec.ingress[0].ports[0].port");
}
