//! Builders of the objects tests keep writing by hand: Services, Pods, Nodes, EndpointSlices.
//! Each gives a minimal object; tests change what they need on the result.

use svcnet_model::{
    Endpoint, EndpointConditions, EndpointSlice, LABEL_TOPOLOGY_ZONE, Node, NodeStatus, ObjectMeta, Pod,
    PodCondition, PodIp, PodSpec, PodStatus, Quantity, Service, ServiceSpec, StringMap,
};

/// A label (or annotation) map from pairs.
pub fn labels(pairs: &[(&str, &str)]) -> StringMap {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

/// Metadata with a namespace (none when `""`) and a name.
pub fn meta(namespace: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        namespace: (!namespace.is_empty()).then(|| namespace.to_owned()),
        name: Some(name.to_owned()),
        ..ObjectMeta::default()
    }
}

/// Service `namespace/name` with `spec`.
pub fn service(namespace: &str, name: &str, spec: ServiceSpec) -> Service {
    Service {
        metadata: meta(namespace, name),
        spec: Some(spec),
        ..Service::default()
    }
}

/// Service `namespace/name` holding `ips` as its ClusterIPs (the first one its `clusterIP`).
pub fn service_with_ips(namespace: &str, name: &str, ips: &[&str]) -> Service {
    service(
        namespace,
        name,
        ServiceSpec {
            cluster_ip: ips.first().map(|s| (*s).to_owned()),
            cluster_ips: Some(ips.iter().map(|s| (*s).to_owned()).collect()),
            ..ServiceSpec::default()
        },
    )
}

/// A `Ready` condition, `True` or `False`.
pub fn ready_condition(ready: bool) -> PodCondition {
    PodCondition {
        type_: "Ready".into(),
        status: if ready { "True" } else { "False" }.into(),
        ..PodCondition::default()
    }
}

/// Node `name` in `zone` (no zone label when `None`) with `cpu` allocatable (none when
/// `None`), `Ready` or not.
pub fn node(name: &str, zone: Option<&str>, cpu: Option<&str>, ready: bool) -> Node {
    Node {
        metadata: ObjectMeta {
            labels: Some(
                zone.map(|z| labels(&[(LABEL_TOPOLOGY_ZONE, z)]))
                    .unwrap_or_default(),
            ),
            ..meta("", name)
        },
        status: Some(NodeStatus {
            allocatable: cpu.map(|c| [("cpu".to_owned(), Quantity::from(c))].into()),
            conditions: Some(vec![ready_condition(ready)]),
            ..NodeStatus::default()
        }),
        ..Node::default()
    }
}

/// Pod `namespace/name` on `node` (unscheduled when `""`) with `ips` (the first one its
/// `podIP`), `Running`, `Ready` or not.
pub fn pod(namespace: &str, name: &str, ips: &[&str], node: &str, ready: bool) -> Pod {
    Pod {
        metadata: meta(namespace, name),
        spec: Some(PodSpec {
            node_name: (!node.is_empty()).then(|| node.to_owned()),
            ..PodSpec::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".into()),
            pod_ip: ips.first().map(|s| (*s).to_owned()),
            pod_ips: Some(ips.iter().map(|ip| PodIp { ip: (*ip).to_owned() }).collect()),
            conditions: Some(vec![ready_condition(ready)]),
            ..PodStatus::default()
        }),
        ..Pod::default()
    }
}

/// An endpoint at `address`, ready or not (`None`: unknown), in `zone` (none when `""`).
pub fn endpoint(address: &str, zone: &str, ready: Option<bool>) -> Endpoint {
    Endpoint {
        addresses: svcnet_model::smallvec![address.into()],
        conditions: EndpointConditions {
            ready,
            ..EndpointConditions::default()
        },
        zone: (!zone.is_empty()).then(|| zone.into()),
        ..Endpoint::default()
    }
}

/// EndpointSlice `namespace/name` of `address_type` holding `endpoints` (no labels, no ports).
pub fn endpoint_slice(
    namespace: &str,
    name: &str,
    address_type: &str,
    endpoints: Vec<Endpoint>,
) -> EndpointSlice {
    EndpointSlice {
        metadata: meta(namespace, name),
        address_type: address_type.into(),
        endpoints: Some(endpoints),
        ..EndpointSlice::default()
    }
}
