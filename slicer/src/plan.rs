//! A plan: the EndpointSlice writes one sync would make, and what it would requeue for.

use std::fmt;

use serde::Serialize;
use svcnet_model::EndpointSlice;

/// The writes one sync makes: slices to create, update and delete. Applying them in that order
/// to the existing slices gives the new state.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// New slices (with `generateName` and a generated name).
    pub create: Vec<EndpointSlice>,
    /// Existing slices, rewritten (same name).
    pub update: Vec<EndpointSlice>,
    /// Existing slices to delete, as they were.
    pub delete: Vec<EndpointSlice>,
    /// What Kubernetes would return to requeue the sync; the writes above still stand.
    #[serde(skip)]
    pub errors: Vec<SyncError>,
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
        }
    }
}

impl std::error::Error for SyncError {}
