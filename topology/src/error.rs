//! The errors of this crate.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use thiserror::Error;

/// Input that svcnet-topology refuses, naming the object, the field and the value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TopologyError {
    /// A Node's allocatable CPU is not a quantity (the API server never stores such a Node).
    #[error("node {node:?}: {field}: invalid quantity {value:?}")]
    InvalidQuantity {
        /// The Node's name.
        node: String,
        /// The field path, `status.allocatable.cpu`.
        field: &'static str,
        /// The text found there.
        value: String,
    },
}
