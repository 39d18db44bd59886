//! A plan: the EndpointSlice writes one sync would make, and what it would requeue for.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2): the creates, updates and deletes
//! `staging/src/k8s.io/endpointslice/reconciler.go` (`finalize`) sends to the API server.

use std::fmt;
use std::sync::Arc;

use serde::ser::{Serialize, SerializeStruct, Serializer};
use svcnet_model::EndpointSlice;

/// The writes one sync makes: slices to create, update and delete. Applying them in that order
/// to the existing slices gives the new state.
///
/// The slices are shared (`Arc`) with the [`ServiceSlices`](crate::ServiceSlices) state that
/// produced the plan, so a plan costs no copy of the endpoints; the state rewrites a slice in
/// place on the next change once the caller has dropped the plans that share it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Plan {
    /// New slices (with `generateName` and a generated name).
    pub create: Vec<Arc<EndpointSlice>>,
    /// Existing slices, rewritten (same name).
    pub update: Vec<Arc<EndpointSlice>>,
    /// Existing slices to delete, as they were.
    pub delete: Vec<Arc<EndpointSlice>>,
    /// What Kubernetes would return to requeue the sync; the writes above still stand.
    pub errors: Vec<SyncError>,
}

/// Serializes shared slices as plain slices.
struct Slices<'a>(&'a [Arc<EndpointSlice>]);

impl Serialize for Slices<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_seq(self.0.iter().map(|s| &**s))
    }
}

/// `{"create": [...], "update": [...], "delete": [...]}`; the errors are left out.
impl Serialize for Plan {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut st = serializer.serialize_struct("Plan", 3)?;
        st.serialize_field("create", &Slices(&self.create))?;
        st.serialize_field("update", &Slices(&self.update))?;
        st.serialize_field("delete", &Slices(&self.delete))?;
        st.end()
    }
}

impl Plan {
    /// True when the plan writes nothing.
    pub fn is_empty(&self) -> bool {
        self.create.is_empty() && self.update.is_empty() && self.delete.is_empty()
    }

    /// The number of slices written (created, updated or deleted).
    pub fn writes(&self) -> usize {
        self.create.len() + self.update.len() + self.delete.len()
    }

    /// The requeue error as Kubernetes aggregates it (duplicates dropped; several in brackets),
    /// or `None` when the sync succeeded.
    pub fn error_message(&self) -> Option<String> {
        let mut seen: Vec<String> = Vec::new();
        for e in &self.errors {
            let m = e.to_string();
            if !seen.contains(&m) {
                seen.push(m);
            }
        }
        match seen.len() {
            0 => None,
            1 => seen.pop(),
            _ => Some(format!("[{}]", seen.join(", "))),
        }
    }

    /// Appends another plan's writes and errors.
    pub fn extend(&mut self, other: Plan) {
        self.create.extend(other.create);
        self.update.extend(other.update);
        self.delete.extend(other.delete);
        self.errors.extend(other.errors);
    }
}

/// A condition that makes Kubernetes requeue a sync.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SyncError {
    /// A Pod names a Node that does not exist; the Pod was left out of this sync.
    NodeNotFound {
        /// The Pod's name.
        pod: String,
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        service: String,
        /// The missing Node.
        node: String,
    },
    /// A broken invariant of svcnet itself, never the input's fault; please report it. The
    /// plan it comes with is not to be trusted.
    Internal {
        /// The invariant that broke.
        detail: &'static str,
    },
}

impl SyncError {
    /// The broken invariant, when this is [`SyncError::Internal`].
    pub fn internal(&self) -> Option<&'static str> {
        match self {
            SyncError::Internal { detail } => Some(detail),
            _ => None,
        }
    }
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncError::NodeNotFound {
                pod,
                namespace,
                service,
                node,
            } => write!(
                f,
                "skipping Pod {pod} for Service {namespace}/{service}: Node {node} Not Found"
            ),
            SyncError::Internal { detail } => write!(f, "internal error: {detail}"),
        }
    }
}

impl std::error::Error for SyncError {}
