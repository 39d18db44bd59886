//! The slices of one Service and address type as hinting takes them, and how hinting reads an
//! endpoint and names a slice.

use serde::Serialize;
use svcnet_model::{Endpoint, EndpointSlice};

/// A Service's EndpointSlices of one address type, as the reconciler hands them to hinting:
/// slices it will create, slices it will update, and existing slices it leaves alone.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SliceSet {
    /// New slices.
    pub to_create: Vec<EndpointSlice>,
    /// Existing slices being rewritten.
    pub to_update: Vec<EndpointSlice>,
    /// Existing slices not otherwise touched; hinting may move some to `to_update`.
    pub unchanged: Vec<EndpointSlice>,
}

impl SliceSet {
    /// Existing slices only (all unchanged), as when hints are recomputed for a cluster as it is.
    pub fn existing(slices: Vec<EndpointSlice>) -> Self {
        SliceSet {
            unchanged: slices,
            ..Default::default()
        }
    }

    /// Every slice: creates, then updates, then unchanged.
    pub fn iter(&self) -> impl Iterator<Item = &EndpointSlice> {
        self.to_create
            .iter()
            .chain(&self.to_update)
            .chain(&self.unchanged)
    }
}

/// Ready as the controller reads it: `conditions.ready` set and true (unknown is not ready).
pub(crate) fn endpoint_ready(ep: &Endpoint) -> bool {
    ep.conditions.ready == Some(true)
}

pub(crate) fn first_address(ep: &Endpoint) -> String {
    ep.addresses.first().map(|a| a.to_string()).unwrap_or_default()
}

/// A slice's name for notes: its name, else its `generateName` prefix.
pub(crate) fn slice_name(s: &EndpointSlice) -> String {
    match (&s.metadata.name, &s.metadata.generate_name) {
        (Some(n), _) if !n.is_empty() => n.clone(),
        (_, Some(g)) => g.clone(),
        _ => String::new(),
    }
}
