//! The slicer's errors.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use thiserror::Error;

/// Why the slicer refused to plan.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum SliceError {
    /// `maxEndpointsPerSlice` outside 1..=1000.
    #[error("max endpoints per slice: invalid value {value}: must be between 1 and 1000, inclusive")]
    MaxEndpointsOutOfRange {
        /// The value given.
        value: i64,
    },
    /// The Service has no selector: its slices are mirrored from its Endpoints instead.
    #[error(
        "Service {namespace}/{name}: spec.selector is not set; its EndpointSlices are mirrored from its Endpoints"
    )]
    NoSelector {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
    },
    /// The Service is of type ExternalName and has no endpoints.
    #[error("Service {namespace}/{name}: spec.type is ExternalName; it has no endpoints")]
    ExternalName {
        /// The Service's namespace.
        namespace: String,
        /// The Service's name.
        name: String,
    },
    /// A broken invariant of svcnet itself, never the input's fault; please report it.
    #[error("internal error: {detail}")]
    Internal {
        /// The invariant that broke.
        detail: &'static str,
    },
}
