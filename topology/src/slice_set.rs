//! The slices of one Service and address type as hinting takes them, and how hinting reads an
//! endpoint and names a slice.
//!
//! Follows Kubernetes v1.37.2: `SliceInfo` in
//! `staging/src/k8s.io/endpointslice/topologycache/sliceinfo.go`, `EndpointReady` in
//! `topologycache/utils.go`.

use std::sync::Arc;

use serde::Serialize;
use svcnet_model::{Endpoint, EndpointSlice};

/// A Service's EndpointSlices of one address type, as the reconciler hands them to hinting:
/// slices it will create, slices it will update, and existing slices it leaves alone.
///
/// The slices are shared (`Arc`): hinting copies a slice only when it rewrites one that someone
/// else still holds, so a caller may keep its own references to the slices it hands over.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SliceSet {
    /// New slices.
    pub to_create: Vec<Arc<EndpointSlice>>,
    /// Existing slices being rewritten.
    pub to_update: Vec<Arc<EndpointSlice>>,
    /// Existing slices not otherwise touched; hinting may move some to `to_update`.
    pub unchanged: Vec<Arc<EndpointSlice>>,
}

impl SliceSet {
    /// Existing slices only (all unchanged), as when hints are recomputed for a cluster as it is.
    /// Takes owned slices or shared ones (`EndpointSlice` or `Arc<EndpointSlice>`).
    pub fn existing<S: Into<Arc<EndpointSlice>>>(slices: impl IntoIterator<Item = S>) -> Self {
        SliceSet {
            unchanged: slices.into_iter().map(Into::into).collect(),
            ..Default::default()
        }
    }

    /// Every slice: creates, then updates, then unchanged.
    pub fn iter(&self) -> impl Iterator<Item = &EndpointSlice> {
        self.to_create
            .iter()
            .chain(&self.to_update)
            .chain(&self.unchanged)
            .map(|s| &**s)
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
