//! discovery/v1 `EndpointSlice`: a shard of a Service's endpoints.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/api/discovery/v1/types.go`.

use compact_str::CompactString;
use serde::{Deserialize, Serialize};
use smallvec::SmallVec;

use crate::{ObjectMeta, ObjectReference};

/// Values of `addressType`.
pub mod address_type {
    /// IPv4 addresses.
    pub const IPV4: &str = "IPv4";
    /// IPv6 addresses.
    pub const IPV6: &str = "IPv6";
    /// Fully qualified domain names (deprecated).
    pub const FQDN: &str = "FQDN";
}

/// Well-known labels on EndpointSlices.
pub mod labels {
    /// The Service a slice belongs to.
    pub const SERVICE_NAME: &str = "kubernetes.io/service-name";
    /// The controller that manages a slice.
    pub const MANAGED_BY: &str = "endpointslice.kubernetes.io/managed-by";
    /// The value of `MANAGED_BY` for the EndpointSlice controller.
    pub const CONTROLLER_NAME: &str = "endpointslice-controller.k8s.io";
    /// The value of `MANAGED_BY` for the mirroring controller.
    pub const MIRRORING_CONTROLLER_NAME: &str = "endpointslicemirroring-controller.k8s.io";
    /// Set on slices of headless Services.
    pub const HEADLESS: &str = "service.kubernetes.io/headless";
}

/// discovery/v1 `EndpointSlice`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSlice {
    /// `discovery.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `EndpointSlice`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name, namespace, labels (`kubernetes.io/service-name`) and owner.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// `IPv4`, `IPv6` or `FQDN`.
    #[serde(default)]
    pub address_type: String,
    /// The endpoints; `null` and `[]` both mean none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<Vec<Endpoint>>,
    /// The ports every endpoint of this slice serves; `null` means "all ports" (no ports known).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<EndpointPort>>,
}

impl EndpointSlice {
    /// The endpoints, or an empty slice.
    pub fn endpoints(&self) -> &[Endpoint] {
        self.endpoints.as_deref().unwrap_or(&[])
    }

    /// The ports, or an empty slice.
    pub fn ports(&self) -> &[EndpointPort] {
        self.ports.as_deref().unwrap_or(&[])
    }

    /// The Service this slice is labelled with (`kubernetes.io/service-name`).
    pub fn service_name(&self) -> Option<&str> {
        self.metadata.label(labels::SERVICE_NAME)
    }
}

/// discovery/v1 `Endpoint`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// The endpoint's addresses (one, by convention), of the slice's address type.
    ///
    /// Inline for the usual single address: the address lives inside the endpoint (no heap
    /// allocation per endpoint, and a pass over many endpoints reads each address without
    /// following a pointer to wherever deserialization left it); a second address spills to
    /// the heap. The list takes 32 bytes against a `Vec`'s 24 (the endpoint 136 against 128).
    /// On the wire it is the same list as a `Vec`: absent reads as empty, `null` is an error,
    /// order is kept.
    #[serde(default)]
    pub addresses: SmallVec<[CompactString; 1]>,
    /// Ready, serving, terminating.
    #[serde(default)]
    pub conditions: EndpointConditions,
    /// The endpoint's hostname (a DNS label).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<CompactString>,
    /// The object behind the endpoint, usually a Pod. Boxed, as the field is large and the
    /// proxy never reads it: endpoints stay small (fewer cache lines a pass over them reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<Box<ObjectReference>>,
    /// Deprecated topology labels (v1beta1); kept for round trips. Boxed, as it is rarely set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecated_topology: Option<Box<crate::StringMap>>,
    /// The node hosting the endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<CompactString>,
    /// The zone the endpoint is in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub zone: Option<CompactString>,
    /// Topology hints for consumers. Boxed, as most endpoints have none: endpoints stay small.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hints: Option<Box<EndpointHints>>,
}

/// discovery/v1 `EndpointConditions`. Each is tri-state: `None` means unknown.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointConditions {
    /// Ready to receive traffic (unknown is read as ready).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready: Option<bool>,
    /// Serving, whether or not terminating (unknown is read as serving, as kube-proxy reads it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serving: Option<bool>,
    /// Terminating (unknown is read as not terminating).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terminating: Option<bool>,
}

impl EndpointConditions {
    /// `ready`, reading unknown as true, as consumers are told to (kube-proxy v1.37.2,
    /// `pkg/proxy/endpointslicecache.go` `addEndpoints`).
    pub fn is_ready(&self) -> bool {
        self.ready.unwrap_or(true)
    }

    /// `serving`, reading unknown as true: kube-proxy v1.37.2 (`addEndpoints`) reads an
    /// absent `serving` as serving; it does not follow `ready`.
    pub fn is_serving(&self) -> bool {
        self.serving.unwrap_or(true)
    }

    /// `terminating`, reading unknown as false.
    pub fn is_terminating(&self) -> bool {
        self.terminating.unwrap_or(false)
    }
}

/// discovery/v1 `EndpointHints`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointHints {
    /// Zones that should consume this endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_zones: Option<Vec<ForZone>>,
    /// Nodes that should consume this endpoint.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub for_nodes: Option<Vec<ForNode>>,
}

/// discovery/v1 `ForZone`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ForZone {
    /// The zone's name.
    #[serde(default)]
    pub name: String,
}

/// discovery/v1 `ForNode`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ForNode {
    /// The node's name.
    #[serde(default)]
    pub name: String,
}

/// discovery/v1 `EndpointPort`. Every field is optional on the wire.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointPort {
    /// The port's name, matching the Service port's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `TCP`, `UDP` or `SCTP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The port number; `None` means "all ports".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i32>,
    /// The application protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<String>,
}

impl EndpointPort {
    /// The protocol as written, treating unset as `TCP` (the API server's default).
    pub fn protocol(&self) -> &str {
        self.protocol.as_deref().unwrap_or(crate::service::protocol::TCP)
    }

    /// The protocol, typed; `None` for a value that is not `TCP`, `UDP` or `SCTP`.
    pub fn protocol_typed(&self) -> Option<crate::net::Protocol> {
        crate::net::Protocol::parse(self.protocol())
    }
}

#[cfg(test)]
mod condition_tests {
    use super::EndpointConditions;

    #[test]
    fn absent_conditions_read_as_kube_proxy_reads_them() {
        let none = EndpointConditions::default();
        assert!(none.is_ready() && none.is_serving() && !none.is_terminating());
        // An absent `serving` is serving even when not ready (it does not follow `ready`).
        let not_ready = EndpointConditions {
            ready: Some(false),
            ..EndpointConditions::default()
        };
        assert!(!not_ready.is_ready());
        assert!(not_ready.is_serving());
        let not_serving = EndpointConditions {
            serving: Some(false),
            terminating: Some(true),
            ..EndpointConditions::default()
        };
        assert!(!not_serving.is_serving() && not_serving.is_terminating());
    }
}

#[cfg(test)]
mod address_tests {
    use compact_str::CompactString;
    use serde::{Deserialize, Serialize};

    use super::Endpoint;

    /// The field as it was (a `Vec`), to hold the inline list to the same wire behaviour.
    #[derive(Debug, Deserialize, Serialize)]
    struct AsVec {
        #[serde(default)]
        addresses: Vec<CompactString>,
    }

    #[test]
    fn addresses_read_and_write_as_a_vec_would() {
        let cases = [
            r#"{}"#,
            r#"{"addresses":[]}"#,
            r#"{"addresses":["10.0.0.1"]}"#,
            r#"{"addresses":["10.0.0.2","10.0.0.1","10.0.0.3"]}"#,
            r#"{"addresses":null}"#,
            r#"{"addresses":"10.0.0.1"}"#,
            r#"{"addresses":[1]}"#,
        ];
        for json in cases {
            let vec: Result<AsVec, _> = serde_json::from_str(json);
            let ep: Result<Endpoint, _> = serde_json::from_str(json);
            match (vec, ep) {
                (Ok(v), Ok(e)) => {
                    assert_eq!(e.addresses[..], v.addresses[..], "{json}");
                    let want = serde_json::to_value(&v).expect("serialize");
                    let got = serde_json::to_value(&e).expect("serialize");
                    assert_eq!(got["addresses"], want["addresses"], "{json}");
                }
                (Err(v), Err(e)) => assert_eq!(e.to_string(), v.to_string(), "{json}"),
                (v, e) => panic!("{json}: Vec gives {v:?}, the endpoint {e:?}"),
            }
            let vec: Result<AsVec, _> = serde_saphyr::from_str(json);
            let ep: Result<Endpoint, _> = serde_saphyr::from_str(json);
            match (vec, ep) {
                (Ok(v), Ok(e)) => assert_eq!(e.addresses[..], v.addresses[..], "yaml {json}"),
                (Err(v), Err(e)) => assert_eq!(e.to_string(), v.to_string(), "yaml {json}"),
                (v, e) => panic!("yaml {json}: Vec gives {v:?}, the endpoint {e:?}"),
            }
        }
    }

    #[test]
    fn one_address_stays_inline() {
        let e: Endpoint = serde_json::from_str(r#"{"addresses":["10.0.0.1"]}"#).expect("parse");
        assert!(!e.addresses.spilled());
        let e: Endpoint = serde_json::from_str(r#"{"addresses":["10.0.0.1","10.0.0.2"]}"#).expect("parse");
        assert!(e.addresses.spilled());
        assert_eq!(e.addresses[..], ["10.0.0.1", "10.0.0.2"]);
    }
}
