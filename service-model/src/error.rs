//! The model crate's error type.
//!
//! Part of svcnet's model of Kubernetes v1.37.2's objects (`staging/src/k8s.io/api`).

use thiserror::Error;

/// Errors from reading typed values out of the wire types.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ModelError {
    /// A field that must hold an IP address holds something else.
    #[error("{field}: {value:?} is not a valid IP address")]
    Ip {
        /// The field path.
        field: String,
        /// The text found.
        value: String,
    },
    /// A field that must hold a CIDR holds something else.
    #[error("{field}: {value:?} is not a valid CIDR")]
    Cidr {
        /// The field path.
        field: String,
        /// The text found.
        value: String,
    },
    /// A quantity that does not parse or does not fit in 64 bits of thousandths.
    #[error("{0:?} is not a valid quantity")]
    Quantity(String),
}
