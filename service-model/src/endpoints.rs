//! core/v1 `Endpoints`: the legacy, unsharded endpoint list of a Service.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/api/core/v1/types.go` (`Endpoints`,
//! `EndpointSubset`).

use serde::{Deserialize, Serialize};

use crate::{ObjectMeta, ObjectReference};

/// The annotation set on an `Endpoints` object truncated to 1000 addresses.
pub const ENDPOINTS_OVER_CAPACITY_ANNOTATION: &str = "endpoints.kubernetes.io/over-capacity";

/// core/v1 `Endpoints`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoints {
    /// `v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `Endpoints`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name (equal to the Service's), namespace, labels.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// Groups of addresses sharing a port set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subsets: Option<Vec<EndpointSubset>>,
}

impl Endpoints {
    /// The subsets, or an empty slice.
    pub fn subsets(&self) -> &[EndpointSubset] {
        self.subsets.as_deref().unwrap_or(&[])
    }
}

/// core/v1 `EndpointSubset`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointSubset {
    /// Ready addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<EndpointAddress>>,
    /// Addresses not ready to receive traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_ready_addresses: Option<Vec<EndpointAddress>>,
    /// The ports every address serves.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<CoreEndpointPort>>,
}

/// core/v1 `EndpointAddress`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EndpointAddress {
    /// The IP address.
    #[serde(default)]
    pub ip: String,
    /// The hostname.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The node hosting this address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The object behind this address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_ref: Option<ObjectReference>,
}

/// core/v1 `EndpointPort` (named `CoreEndpointPort` here to stand apart from discovery's).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CoreEndpointPort {
    /// The port's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The port number.
    #[serde(default)]
    pub port: i32,
    /// `TCP`, `UDP` or `SCTP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The application protocol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<String>,
}

impl CoreEndpointPort {
    /// The protocol as written, treating unset as `TCP` (the API server's default).
    pub fn protocol(&self) -> &str {
        self.protocol.as_deref().unwrap_or(crate::service::protocol::TCP)
    }
}
