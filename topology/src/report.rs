//! What hinting decided and why: the decision, the allocation behind kept hints, why hints were
//! removed, and what happened to each slice.
//!
//! Follows Kubernetes v1.37.2: the events and reasons of
//! `staging/src/k8s.io/endpointslice/topologycache/topologycache.go` and `event.go`; the report
//! itself is svcnet's own.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::allocation::ZoneAllocation;
use crate::capacity::Insufficiency;
use crate::event::{Event, EventType, REASON_DISABLED, message};
use crate::mechanism::TrafficDistribution;

/// What hinting decided.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "outcome", rename_all = "camelCase")]
#[non_exhaustive]
pub enum Decision {
    /// Topology-aware routing: hints kept or assigned.
    Hinted(AutoReport),
    /// Topology-aware routing: every hint removed, for this reason.
    Removed {
        /// Why.
        reason: RemovalReason,
    },
    /// `trafficDistribution`: each ready endpoint hinted to its own zone (and node).
    TrafficDistribution {
        /// The value acted on.
        value: TrafficDistribution,
    },
    /// No mechanism applies: every hint removed.
    Cleared,
}

/// The allocation behind hints that were kept.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct AutoReport {
    /// Ready endpoints counted (all slices of this address type).
    pub endpoints: usize,
    /// Per zone with CPU: its allocation and what it ended with.
    pub zones: BTreeMap<String, ZoneReport>,
    /// Hints to zones that have no ready worker Nodes (endpoints there keep their own zone).
    pub zones_without_capacity: BTreeMap<String, usize>,
    /// Ready endpoints hinted to another zone than their own (moved now or kept from before),
    /// in slice order: creates, updates, unchanged.
    pub moved: Vec<HintMove>,
    /// Zones below their minimum (the controller's overload check); empty unless Kubernetes'
    /// redistribution stopped short (never in strict mode).
    pub overloaded_zones: Vec<String>,
}

/// One zone of an [`AutoReport`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ZoneReport {
    /// CPU ratio, desired, minimum and maximum.
    #[serde(flatten)]
    pub allocation: ZoneAllocation,
    /// Ready endpoints whose own zone this is.
    pub local_endpoints: usize,
    /// Endpoints hinted to this zone.
    pub hinted: usize,
}

/// An endpoint hinted to another zone than its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct HintMove {
    /// The slice.
    pub slice: String,
    /// The endpoint's first address.
    pub address: String,
    /// Its own zone.
    pub from: String,
    /// The zone it now serves.
    pub to: String,
}

/// Why topology-aware hints were removed; each has the warning event Kubernetes records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
#[non_exhaustive]
pub enum RemovalReason {
    /// Node accounting gave no ratios.
    InsufficientNodeInfo {
        /// The precise cause.
        detail: Insufficiency,
    },
    /// Fewer ready endpoints than zones.
    TooFewEndpoints {
        /// Ready endpoints.
        endpoints: usize,
        /// Zones with CPU.
        zones: usize,
    },
    /// The zones' minimums add up to more than the ready endpoints.
    MinimumExceedsThreshold {
        /// Ready endpoints.
        endpoints: usize,
        /// Zones with CPU.
        zones: usize,
    },
    /// A ready endpoint being hinted has no zone.
    EndpointWithoutZone {
        /// The slice.
        slice: String,
        /// The endpoint's first address.
        address: String,
    },
    /// No zone received any hint.
    NoHintsAllocated,
    /// Strict mode: a zone could not be brought up to its minimum.
    BelowMinimum {
        /// The zone.
        zone: String,
        /// Endpoints it could get.
        hinted: usize,
        /// Its minimum.
        minimum: usize,
        /// Ready endpoints.
        endpoints: usize,
        /// Zones with CPU.
        zones: usize,
    },
}

impl RemovalReason {
    /// The event Kubernetes records (a warning) for this address type.
    pub fn event(&self, address_type: &str) -> Event {
        Event::new(
            EventType::Warning,
            REASON_DISABLED,
            &self.to_string(),
            address_type,
        )
    }
}

impl fmt::Display for RemovalReason {
    /// The event message, without the address type.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RemovalReason::InsufficientNodeInfo { .. } => f.write_str(message::INSUFFICIENT_NODE_INFO),
            RemovalReason::TooFewEndpoints { endpoints, zones } => write!(
                f,
                "{} ({endpoints} endpoints, {zones} zones)",
                message::INSUFFICIENT_NUMBER_OF_ENDPOINTS
            ),
            RemovalReason::MinimumExceedsThreshold { endpoints, zones }
            | RemovalReason::BelowMinimum { endpoints, zones, .. } => write!(
                f,
                "{} ({endpoints} endpoints, {zones} zones)",
                message::MIN_ALLOCATION_EXCEEDS_OVERLOAD_THRESHOLD
            ),
            RemovalReason::EndpointWithoutZone { .. } => f.write_str(message::NO_ZONE_SPECIFIED),
            RemovalReason::NoHintsAllocated => f.write_str(message::NO_ALLOCATED_HINTS_FOR_ZONES),
        }
    }
}

impl RemovalReason {
    /// A longer explanation than the event message, naming the Node, zone or endpoint.
    pub fn detail(&self) -> String {
        match self {
            RemovalReason::InsufficientNodeInfo { detail } => detail.to_string(),
            RemovalReason::TooFewEndpoints { endpoints, zones } => {
                format!("{endpoints} ready endpoints cannot cover {zones} zones")
            }
            RemovalReason::MinimumExceedsThreshold { endpoints, zones } => format!(
                "giving each of {zones} zones its minimum share within 20% overload needs more than {endpoints} ready endpoints"
            ),
            RemovalReason::EndpointWithoutZone { slice, address } => {
                format!("ready endpoint {address} in slice {slice} has no zone")
            }
            RemovalReason::NoHintsAllocated => "no zone received a hint".to_owned(),
            RemovalReason::BelowMinimum {
                zone,
                hinted,
                minimum,
                ..
            } => format!("zone {zone} can get only {hinted} of the {minimum} endpoints it needs"),
        }
    }
}

/// What happened to one slice, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SliceNote {
    /// The slice's name.
    pub slice: String,
    /// What and why.
    #[serde(flatten)]
    pub reason: SliceReason,
}

/// What happened to a slice during hinting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "note", rename_all = "camelCase")]
#[non_exhaustive]
pub enum SliceReason {
    /// An unchanged slice whose hints are still valid stays unchanged.
    HintsStillValid,
    /// An unchanged slice moved to the updates: a ready endpoint has no zone hint.
    EndpointWithoutHint {
        /// The endpoint's first address.
        address: String,
    },
    /// Moved to the updates: a hint names a zone without ready worker Nodes.
    HintForZoneWithoutCapacity {
        /// The endpoint's first address.
        address: String,
        /// The zone hinted.
        zone: String,
    },
    /// Moved to the updates: its hints would push a zone over its maximum.
    ZoneOverMaximum {
        /// The zone.
        zone: String,
        /// Hints to it counting this slice.
        hinted: usize,
        /// Its maximum.
        maximum: usize,
    },
    /// Strict mode: moved to the updates, a ready endpoint has several zone hints.
    SeveralZoneHints {
        /// The endpoint's first address.
        address: String,
    },
    /// Moved to the updates: it carried hints that are being removed.
    HintsRemoved,
    /// trafficDistribution: moved to the updates, a ready endpoint's hint is missing or wrong.
    HintMissingOrWrong {
        /// The endpoint's first address.
        address: String,
    },
    /// trafficDistribution: moved to the updates, a ready endpoint has a hint it should not.
    StaleHint {
        /// The endpoint's first address.
        address: String,
    },
}

impl fmt::Display for SliceReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SliceReason::HintsStillValid => f.write_str("unchanged, its hints still fit"),
            SliceReason::EndpointWithoutHint { address } => {
                write!(f, "rewritten: ready endpoint {address} has no zone hint")
            }
            SliceReason::HintForZoneWithoutCapacity { address, zone } => write!(
                f,
                "rewritten: endpoint {address} is hinted to zone {zone}, which has no ready worker node"
            ),
            SliceReason::ZoneOverMaximum {
                zone,
                hinted,
                maximum,
            } => write!(
                f,
                "rewritten: its hints would give zone {zone} {hinted} endpoints, over its maximum of {maximum}"
            ),
            SliceReason::SeveralZoneHints { address } => {
                write!(f, "rewritten: ready endpoint {address} has several zone hints")
            }
            SliceReason::HintsRemoved => f.write_str("rewritten: its hints are removed"),
            SliceReason::HintMissingOrWrong { address } => {
                write!(
                    f,
                    "rewritten: ready endpoint {address} lacks its own zone (or node) hint"
                )
            }
            SliceReason::StaleHint { address } => {
                write!(
                    f,
                    "rewritten: ready endpoint {address} has a hint it should not have"
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_read_well() {
        let r = RemovalReason::TooFewEndpoints {
            endpoints: 2,
            zones: 3,
        };
        assert_eq!(
            r.to_string(),
            "Insufficient number of endpoints (2 endpoints, 3 zones)"
        );
        assert_eq!(
            r.event("IPv6").message,
            "Insufficient number of endpoints (2 endpoints, 3 zones), addressType: IPv6"
        );
        assert!(
            SliceReason::ZoneOverMaximum {
                zone: "a".into(),
                hinted: 4,
                maximum: 3
            }
            .to_string()
            .contains("maximum of 3")
        );
    }
}
