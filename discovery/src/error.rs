//! The crate's error type.
//!
//! Part of svcnet's model of cluster DNS (CoreDNS v1.15.0, `plugin/kubernetes`) and kubelet v1.37.2
//! service variables.

use thiserror::Error;

/// What svcnet-discovery refuses or skips.
///
/// [`DnsOptions::validate`](crate::DnsOptions::validate) returns the option errors; the
/// object errors are what [`DnsZone::issues`](crate::DnsZone::issues) reports for parts of objects
/// that were skipped (the rest of the object still counts).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum DiscoveryError {
    /// The cluster domain is not a usable DNS name.
    #[error("cluster domain {value:?}: {reason}")]
    ClusterDomain {
        /// The domain given.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The TTL is outside 0..=3600 (CoreDNS's range).
    #[error("ttl {value}: must be between 0 and 3600, inclusive")]
    Ttl {
        /// The TTL given.
        value: u32,
    },
    /// A field that must hold an IP address holds something else; that address is skipped.
    #[error("{kind} {object}: {field}: {value:?} is not a valid IP address")]
    Address {
        /// `Service`, `EndpointSlice` or `Pod`.
        kind: &'static str,
        /// `namespace/name` of the object.
        object: String,
        /// The field path, e.g. `endpoints[2].addresses[0]`.
        field: String,
        /// The text found.
        value: String,
    },
    /// A name that cannot be one DNS label; the object is skipped.
    #[error("{kind} {object}: {field}: {value:?} {reason}")]
    Label {
        /// `Service`, `EndpointSlice` or `Pod`.
        kind: &'static str,
        /// `namespace/name` of the object.
        object: String,
        /// The field path, e.g. `metadata.name`.
        field: String,
        /// The text found.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
}
