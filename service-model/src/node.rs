//! The parts of core/v1 `Node` that topology and rule generation read.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/api/core/v1/types.go` (`Node`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{ObjectMeta, PodCondition, Quantity};

/// The well-known zone label.
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
/// The well-known region label.
pub const LABEL_TOPOLOGY_REGION: &str = "topology.kubernetes.io/region";
/// The label that marks a control-plane node.
pub const LABEL_CONTROL_PLANE: &str = "node-role.kubernetes.io/control-plane";
/// The legacy label that marks a master node.
pub const LABEL_MASTER: &str = "node-role.kubernetes.io/master";
/// The well-known hostname label.
pub const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";

/// core/v1 `Node` (the fields svcnet reads).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Node {
    /// `v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `Node`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name and labels (zone, role).
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The node's spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<NodeSpec>,
    /// The node's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<NodeStatus>,
}

impl Node {
    /// The zone label's value, if any.
    pub fn zone(&self) -> Option<&str> {
        self.metadata.label(LABEL_TOPOLOGY_ZONE)
    }

    /// True when the `Ready` condition is `True`. Only the first condition of type `Ready`
    /// counts, as in Kubernetes' `IsNodeReady`.
    pub fn is_ready(&self) -> bool {
        crate::pod::first_condition_is_true(
            self.status.as_ref().and_then(|s| s.conditions.as_deref()),
            "Ready",
        )
    }

    /// True when labelled control-plane or master.
    pub fn is_control_plane(&self) -> bool {
        self.metadata.label(LABEL_CONTROL_PLANE).is_some() || self.metadata.label(LABEL_MASTER).is_some()
    }

    /// `status.allocatable[name]`, if set.
    pub fn allocatable(&self, name: &str) -> Option<&Quantity> {
        self.status.as_ref()?.allocatable.as_ref()?.get(name)
    }
}

/// core/v1 `NodeSpec` (partial).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSpec {
    /// The pod range of the node.
    #[serde(rename = "podCIDR", default, skip_serializing_if = "Option::is_none")]
    pub pod_cidr: Option<String>,
    /// The pod ranges of the node, one per family.
    #[serde(rename = "podCIDRs", default, skip_serializing_if = "Option::is_none")]
    pub pod_cidrs: Option<Vec<String>>,
    /// Whether new pods may be scheduled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unschedulable: Option<bool>,
    /// The cloud provider's ID for the node.
    #[serde(rename = "providerID", default, skip_serializing_if = "Option::is_none")]
    pub provider_id: Option<String>,
    /// Taints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub taints: Option<Vec<Taint>>,
}

/// core/v1 `Taint`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    /// The taint's key.
    #[serde(default)]
    pub key: String,
    /// The taint's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`.
    #[serde(default)]
    pub effect: String,
}

/// core/v1 `NodeStatus` (partial).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeStatus {
    /// Resources available to pods (`cpu`, `memory`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocatable: Option<BTreeMap<String, Quantity>>,
    /// Total resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<BTreeMap<String, Quantity>>,
    /// Conditions (`Ready`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<PodCondition>>,
    /// The node's addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addresses: Option<Vec<NodeAddress>>,
}

/// core/v1 `NodeAddress`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeAddress {
    /// `InternalIP`, `ExternalIP`, `Hostname`, ...
    #[serde(rename = "type", default)]
    pub type_: String,
    /// The address.
    #[serde(default)]
    pub address: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(conditions: &[(&str, &str)]) -> Node {
        Node {
            status: Some(NodeStatus {
                conditions: Some(crate::pod::conditions(conditions)),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn readiness_reads_the_first_ready_condition() {
        assert!(!Node::default().is_ready());
        assert!(node(&[("MemoryPressure", "False"), ("Ready", "True")]).is_ready());
        assert!(!node(&[("Ready", "Unknown")]).is_ready());
        assert!(!node(&[("Ready", "False"), ("Ready", "True")]).is_ready());
        assert!(node(&[("Ready", "True"), ("Ready", "False")]).is_ready());
    }
}
