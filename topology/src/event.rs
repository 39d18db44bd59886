//! The events the EndpointSlice controller records on a Service about topology hints.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/endpointslice/topologycache/event.go`.

use serde::Serialize;

/// The message of an event, as Kubernetes words it (before the `, addressType: ...` suffix).
pub mod message {
    /// A ready endpoint has no zone.
    pub const NO_ZONE_SPECIFIED: &str = "One or more endpoints do not have a zone specified";
    /// No zone received any hint.
    pub const NO_ALLOCATED_HINTS_FOR_ZONES: &str = "No hints allocated for zones";
    /// Hints were added for the first time.
    pub const HINTS_ENABLED: &str = "Topology Aware Hints has been enabled";
    /// The annotation was turned off while hints were populated.
    pub const HINTS_DISABLED: &str = "Topology Aware Hints has been disabled";
    /// Node information is missing or covers fewer than two zones.
    pub const INSUFFICIENT_NODE_INFO: &str =
        "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes";
    /// Nodes are ready in one zone only.
    pub const NODES_READY_IN_ONE_ZONE_ONLY: &str = "Nodes only ready in one zone";
    /// Fewer ready endpoints than zones.
    pub const INSUFFICIENT_NUMBER_OF_ENDPOINTS: &str = "Insufficient number of endpoints";
    /// The per-zone minimums add up to more than the ready endpoints.
    pub const MIN_ALLOCATION_EXCEEDS_OVERLOAD_THRESHOLD: &str =
        "Unable to allocate minimum required endpoints to each zone without exceeding overload threshold";
}

/// The reason of an event that turns hints on.
pub const REASON_ENABLED: &str = "TopologyAwareHintsEnabled";
/// The reason of an event that turns hints off.
pub const REASON_DISABLED: &str = "TopologyAwareHintsDisabled";

/// `Normal` or `Warning`, as core/v1 `Event.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum EventType {
    /// Something went as intended.
    Normal,
    /// Something the Service's owner should look at.
    Warning,
}

/// One event recorded on the Service (type, reason, message), as `EventRecorder.Event` takes them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub struct Event {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: EventType,
    /// `TopologyAwareHintsEnabled` or `TopologyAwareHintsDisabled`.
    pub reason: &'static str,
    /// The message, ending with `, addressType: IPv4` (or `IPv6`).
    pub message: String,
}

impl Event {
    pub(crate) fn new(type_: EventType, reason: &'static str, base: &str, address_type: &str) -> Self {
        Event {
            type_,
            reason,
            message: format!("{base}, addressType: {address_type}"),
        }
    }
}
