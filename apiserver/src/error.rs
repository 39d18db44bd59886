//! The crate's error type: a cluster description that cannot be used.
//!
//! Part of svcnet's model of Kubernetes v1.37.2's API server (`pkg/registry`).

use thiserror::Error;

/// Why a [`Cluster`](crate::Cluster) could not be built.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ApiServerError {
    /// A service CIDR does not parse.
    #[error("service CIDR {value:?}: {reason}")]
    ServiceCidr {
        /// The text given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
    /// The NodePort range does not parse.
    #[error("node port range {value:?}: {reason}")]
    NodePortRange {
        /// The text given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
}
