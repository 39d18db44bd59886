//! Node accounting: allocatable CPU per zone, as the EndpointSlice controller's topology cache
//! counts it (`SetNodes`).
//!
//! Follows Kubernetes v1.37.2: `SetNodes` in
//! `staging/src/k8s.io/endpointslice/topologycache/topologycache.go`, `isNodeReady` in
//! `topologycache/utils.go`.

use std::collections::BTreeMap;

use serde::Serialize;
use svcnet_model::{LABEL_CONTROL_PLANE, LABEL_MASTER, LABEL_TOPOLOGY_ZONE, Node};

use crate::error::TopologyError;

/// What node accounting made of one Node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "decision", rename_all = "camelCase")]
#[non_exhaustive]
pub enum NodeDecision {
    /// Counted: its allocatable CPU adds to its zone.
    Counted {
        /// The zone label's value.
        zone: String,
        /// Allocatable CPU in millicores.
        cpu_millis: i64,
    },
    /// Skipped: labelled as a control-plane (or master) node.
    ControlPlane {
        /// The label found.
        label: &'static str,
    },
    /// Skipped: its `Ready` condition is not `True`.
    NotReady,
    /// Counting stopped here: a ready worker without a zone label (or with an empty one).
    MissingZone,
    /// Counting stopped here: a ready worker with no allocatable CPU.
    NoCpu,
    /// Not looked at, because counting stopped at an earlier Node.
    NotExamined,
}

/// Why the cluster's Nodes give no usable CPU ratios (hints are then removed everywhere).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "why", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Insufficiency {
    /// A ready worker Node has no zone or no allocatable CPU.
    NodeWithoutZoneOrCpu {
        /// The Node's name.
        node: String,
    },
    /// No ready worker Node has any CPU.
    NoCpu,
    /// Ready worker Nodes are in fewer than two zones.
    FewerThanTwoZones {
        /// The zones found (zero or one).
        zones: Vec<String>,
    },
}

impl std::fmt::Display for Insufficiency {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Insufficiency::NodeWithoutZoneOrCpu { node } => {
                write!(
                    f,
                    "ready worker node {node:?} has no zone label or no allocatable CPU"
                )
            }
            Insufficiency::NoCpu => f.write_str("no ready worker node has allocatable CPU"),
            Insufficiency::FewerThanTwoZones { zones } if zones.is_empty() => {
                f.write_str("no ready worker node in any zone")
            }
            Insufficiency::FewerThanTwoZones { zones } => {
                write!(f, "ready worker nodes in one zone only ({})", zones.join(", "))
            }
        }
    }
}

/// Allocatable CPU per zone of the ready worker Nodes, with what was decided for each Node.
///
/// ```
/// use svcnet_topology::ZoneCapacity;
/// let cap = ZoneCapacity::from_zone_cpu([("a", 1000), ("b", 3000)]);
/// assert_eq!(cap.ratios().get("b"), Some(&0.75));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ZoneCapacity {
    /// One entry per Node given, in input order.
    pub nodes: Vec<NodeAccount>,
    /// Millicores per zone; empty when the information is insufficient.
    pub cpu_by_zone: BTreeMap<String, i64>,
    /// Why there are no ratios, when there are none.
    pub insufficient: Option<Insufficiency>,
    #[serde(skip)]
    ratios: BTreeMap<String, f64>,
}

/// One Node and what node accounting decided for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct NodeAccount {
    /// The Node's name.
    pub node: String,
    /// The decision.
    #[serde(flatten)]
    pub decision: NodeDecision,
}

impl ZoneCapacity {
    /// Counts the Nodes as the topology cache does: control-plane and not-ready Nodes are
    /// skipped; one ready worker without a zone or CPU makes the whole picture insufficient;
    /// fewer than two zones or no CPU at all is insufficient too.
    ///
    /// A CPU quantity that does not parse is an error naming the Node.
    pub fn from_nodes(nodes: &[Node]) -> Result<Self, TopologyError> {
        let mut accounts = Vec::with_capacity(nodes.len());
        let mut cpu_by_zone: BTreeMap<String, i64> = BTreeMap::new();
        let mut stopped: Option<Insufficiency> = None;
        for node in nodes {
            let name = node.metadata.name().to_owned();
            if stopped.is_some() {
                accounts.push(NodeAccount {
                    node: name,
                    decision: NodeDecision::NotExamined,
                });
                continue;
            }
            let decision = if let Some(label) = excluded_label(node) {
                NodeDecision::ControlPlane { label }
            } else if !node.is_ready() {
                NodeDecision::NotReady
            } else {
                let cpu = match node.allocatable("cpu") {
                    Some(q) => q.millis().map_err(|_| TopologyError::InvalidQuantity {
                        node: name.clone(),
                        field: "status.allocatable.cpu",
                        value: q.0.clone(),
                    })?,
                    None => 0,
                };
                match node.zone().filter(|z| !z.is_empty()) {
                    None => NodeDecision::MissingZone,
                    // Validation keeps allocatable quantities non-negative; a negative one is
                    // read as "no CPU" rather than subtracted.
                    Some(_) if cpu <= 0 => NodeDecision::NoCpu,
                    Some(zone) => {
                        match cpu_by_zone.get_mut(zone) {
                            Some(sum) => *sum = sum.saturating_add(cpu),
                            None => {
                                cpu_by_zone.insert(zone.to_owned(), cpu);
                            }
                        }
                        NodeDecision::Counted {
                            zone: zone.to_owned(),
                            cpu_millis: cpu,
                        }
                    }
                }
            };
            if matches!(decision, NodeDecision::MissingZone | NodeDecision::NoCpu) {
                stopped = Some(Insufficiency::NodeWithoutZoneOrCpu { node: name.clone() });
            }
            accounts.push(NodeAccount { node: name, decision });
        }
        let mut cap = Self::finish(cpu_by_zone, stopped);
        cap.nodes = accounts;
        Ok(cap)
    }

    /// Capacity from millicores per zone directly (zones with zero or negative CPU are dropped).
    pub fn from_zone_cpu<Z: Into<String>>(zones: impl IntoIterator<Item = (Z, i64)>) -> Self {
        let mut cpu_by_zone: BTreeMap<String, i64> = BTreeMap::new();
        for (z, cpu) in zones {
            if cpu > 0 {
                let sum = cpu_by_zone.entry(z.into()).or_insert(0);
                *sum = sum.saturating_add(cpu);
            }
        }
        Self::finish(cpu_by_zone, None)
    }

    fn finish(mut cpu_by_zone: BTreeMap<String, i64>, stopped: Option<Insufficiency>) -> Self {
        let total: i128 = cpu_by_zone.values().map(|&c| i128::from(c)).sum();
        let insufficient = if stopped.is_some() {
            stopped
        } else if total <= 0 {
            Some(Insufficiency::NoCpu)
        } else if cpu_by_zone.len() < 2 {
            Some(Insufficiency::FewerThanTwoZones {
                zones: cpu_by_zone.keys().cloned().collect(),
            })
        } else {
            None
        };
        let mut ratios = BTreeMap::new();
        if insufficient.is_some() {
            cpu_by_zone.clear();
        } else {
            for (z, &c) in &cpu_by_zone {
                ratios.insert(z.clone(), c as f64 / total as f64);
            }
        }
        ZoneCapacity {
            nodes: Vec::new(),
            cpu_by_zone,
            insufficient,
            ratios,
        }
    }

    /// Each zone's share of the total CPU; empty when the information is insufficient.
    pub fn ratios(&self) -> &BTreeMap<String, f64> {
        &self.ratios
    }

    /// The zone of the Node with this name, if that Node was counted.
    pub fn zone_of(&self, node: &str) -> Option<&str> {
        self.nodes
            .iter()
            .find(|a| a.node == node)
            .and_then(|a| match &a.decision {
                NodeDecision::Counted { zone, .. } => Some(zone.as_str()),
                _ => None,
            })
    }
}

fn excluded_label(node: &Node) -> Option<&'static str> {
    if node.metadata.label(LABEL_CONTROL_PLANE).is_some() {
        Some(LABEL_CONTROL_PLANE)
    } else if node.metadata.label(LABEL_MASTER).is_some() {
        Some(LABEL_MASTER)
    } else {
        None
    }
}

/// Reads `topology.kubernetes.io/zone` the way the proxy does: missing is the empty string.
pub(crate) fn node_zone_label(node: &Node) -> String {
    node.metadata.label(LABEL_TOPOLOGY_ZONE).unwrap_or("").to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use svcnet_test_support::build::node;

    #[test]
    fn counts_ready_workers_per_zone() {
        let nodes = [
            node("a1", Some("a"), Some("1"), true),
            node("a2", Some("a"), Some("500m"), true),
            node("b1", Some("b"), Some("1500m"), true),
            node("b2", Some("b"), Some("4"), false),
        ];
        let cap = ZoneCapacity::from_nodes(&nodes).unwrap();
        assert_eq!(cap.insufficient, None);
        assert_eq!(cap.cpu_by_zone.get("a"), Some(&1500));
        assert_eq!(cap.ratios().get("b"), Some(&0.5));
        assert_eq!(cap.nodes[3].decision, NodeDecision::NotReady);
        assert_eq!(cap.zone_of("a2"), Some("a"));
    }

    #[test]
    fn one_node_without_zone_discards_everything() {
        let nodes = [
            node("a1", Some("a"), Some("1"), true),
            node("x", None, Some("1"), true),
            node("b1", Some("b"), Some("1"), true),
        ];
        let cap = ZoneCapacity::from_nodes(&nodes).unwrap();
        assert_eq!(
            cap.insufficient,
            Some(Insufficiency::NodeWithoutZoneOrCpu { node: "x".into() })
        );
        assert!(cap.ratios().is_empty() && cap.cpu_by_zone.is_empty());
        assert_eq!(cap.nodes[2].decision, NodeDecision::NotExamined);
    }

    #[test]
    fn zero_cpu_and_single_zone_are_insufficient() {
        let cap = ZoneCapacity::from_nodes(&[node("a", Some("a"), None, true)]).unwrap();
        assert!(matches!(
            cap.insufficient,
            Some(Insufficiency::NodeWithoutZoneOrCpu { .. })
        ));
        let cap = ZoneCapacity::from_nodes(&[
            node("a", Some("a"), Some("1"), true),
            node("b", Some("a"), Some("1"), true),
        ])
        .unwrap();
        assert_eq!(
            cap.insufficient,
            Some(Insufficiency::FewerThanTwoZones {
                zones: vec!["a".into()]
            })
        );
    }

    #[test]
    fn bad_quantity_is_an_error_naming_the_node() {
        let err = ZoneCapacity::from_nodes(&[node("n", Some("a"), Some("lots"), true)]).unwrap_err();
        assert_eq!(
            err.to_string(),
            "node \"n\": status.allocatable.cpu: invalid quantity \"lots\""
        );
    }

    #[test]
    fn control_plane_is_skipped() {
        let mut cp = node("cp", Some("b"), Some("8"), true);
        cp.metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(LABEL_MASTER.into(), String::new());
        let cap = ZoneCapacity::from_nodes(&[node("a", Some("a"), Some("1"), true), cp]).unwrap();
        assert_eq!(
            cap.nodes[1].decision,
            NodeDecision::ControlPlane { label: LABEL_MASTER }
        );
        assert!(cap.insufficient.is_some());
    }
}
