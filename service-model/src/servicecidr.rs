//! networking/v1 `ServiceCIDR` and `IPAddress`: the multi-CIDR ClusterIP allocator's objects.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/api/networking/v1/types.go` (`ServiceCIDR`,
//! `IPAddress`).

use serde::{Deserialize, Serialize};

use crate::{Condition, ObjectMeta};

/// The name of the ServiceCIDR the API server creates from its `--service-cluster-ip-range`.
pub const DEFAULT_SERVICE_CIDR_NAME: &str = "kubernetes";
/// The finalizer that keeps a ServiceCIDR while IPs in it are in use.
pub const SERVICE_CIDR_FINALIZER: &str = "networking.k8s.io/service-cidr-finalizer";
/// The `Ready` condition type of a ServiceCIDR.
pub const SERVICE_CIDR_CONDITION_READY: &str = "Ready";

/// networking/v1 `ServiceCIDR`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceCidr {
    /// `networking.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `ServiceCIDR`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name and the rest (cluster-scoped).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The ranges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ServiceCidrSpec>,
    /// Conditions (`Ready`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ServiceCidrStatus>,
}

impl ServiceCidr {
    /// `spec.cidrs`, or an empty slice.
    pub fn cidrs(&self) -> &[String] {
        self.spec.as_ref().and_then(|s| s.cidrs.as_deref()).unwrap_or(&[])
    }
}

/// networking/v1 `ServiceCIDRSpec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceCidrSpec {
    /// At most one IPv4 and one IPv6 CIDR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cidrs: Option<Vec<String>>,
}

/// networking/v1 `ServiceCIDRStatus`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceCidrStatus {
    /// Conditions, `Ready` among them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// networking/v1 `IPAddress`: the record of one allocated ClusterIP; its name is the address.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IpAddress {
    /// `networking.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `IPAddress`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The name is the IP address in canonical form.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The object holding the address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<IpAddressSpec>,
}

/// networking/v1 `IPAddressSpec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IpAddressSpec {
    /// The object (a Service) that holds the address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_ref: Option<ParentReference>,
}

/// networking/v1 `ParentReference`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ParentReference {
    /// API group of the parent (`""` for core).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
    /// Resource of the parent, e.g. `services`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource: Option<String>,
    /// Namespace of the parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name of the parent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}
