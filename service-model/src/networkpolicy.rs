//! networking/v1 `NetworkPolicy` types.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/api/networking/v1/types.go`.

use serde::{Deserialize, Serialize};

use crate::{IntOrString, LabelSelector, ObjectMeta};

/// Values of `spec.policyTypes[*]`.
pub mod policy_type {
    /// The policy restricts traffic into selected pods.
    pub const INGRESS: &str = "Ingress";
    /// The policy restricts traffic out of selected pods.
    pub const EGRESS: &str = "Egress";
}

/// networking/v1 `NetworkPolicy`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicy {
    /// `networking.k8s.io/v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `NetworkPolicy`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name, namespace and the rest.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<NetworkPolicySpec>,
}

/// networking/v1 `NetworkPolicySpec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicySpec {
    /// The pods (in the policy's namespace) the policy applies to; empty selects all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_selector: Option<LabelSelector>,
    /// Allowed incoming traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<Vec<NetworkPolicyIngressRule>>,
    /// Allowed outgoing traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress: Option<Vec<NetworkPolicyEgressRule>>,
    /// `Ingress` and/or `Egress`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_types: Option<Vec<String>>,
}

/// networking/v1 `NetworkPolicyIngressRule`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicyIngressRule {
    /// Ports allowed; empty or absent allows all ports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<NetworkPolicyPort>>,
    /// Sources allowed; empty or absent allows all sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Vec<NetworkPolicyPeer>>,
}

/// networking/v1 `NetworkPolicyEgressRule`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicyEgressRule {
    /// Ports allowed; empty or absent allows all ports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<NetworkPolicyPort>>,
    /// Destinations allowed; empty or absent allows all destinations.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<Vec<NetworkPolicyPeer>>,
}

/// networking/v1 `NetworkPolicyPeer`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicyPeer {
    /// Pods matched by labels (in the policy's namespace, or in `namespaceSelector`'s).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_selector: Option<LabelSelector>,
    /// Namespaces matched by labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// A CIDR with exceptions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_block: Option<IpBlock>,
}

/// networking/v1 `IPBlock`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IpBlock {
    /// The CIDR allowed.
    #[serde(default)]
    pub cidr: String,
    /// CIDRs inside `cidr` that are not allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub except: Option<Vec<String>>,
}

/// networking/v1 `NetworkPolicyPort`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicyPort {
    /// `TCP` (default), `UDP` or `SCTP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// A port number or a named container port; absent means all ports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<IntOrString>,
    /// The last port of a range starting at `port`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub end_port: Option<i32>,
}

impl NetworkPolicyPort {
    /// The protocol as written, treating unset as `TCP` (the API server's default).
    pub fn protocol(&self) -> &str {
        self.protocol.as_deref().unwrap_or(crate::service::protocol::TCP)
    }
}

impl NetworkPolicySpec {
    /// The policy types in force: `policyTypes` when non-empty, else what defaulting derives
    /// (`Ingress`, plus `Egress` when there is at least one egress rule).
    pub fn effective_policy_types(&self) -> Vec<&str> {
        match &self.policy_types {
            Some(types) if !types.is_empty() => types.iter().map(String::as_str).collect(),
            _ => {
                let mut types = vec![policy_type::INGRESS];
                if self.egress.as_ref().is_some_and(|e| !e.is_empty()) {
                    types.push(policy_type::EGRESS);
                }
                types
            }
        }
    }

    /// True when the policy isolates its pods for incoming traffic.
    pub fn affects_ingress(&self) -> bool {
        self.effective_policy_types().contains(&policy_type::INGRESS)
    }

    /// True when the policy isolates its pods for outgoing traffic.
    pub fn affects_egress(&self) -> bool {
        self.effective_policy_types().contains(&policy_type::EGRESS)
    }
}
