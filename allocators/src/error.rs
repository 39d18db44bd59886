//! The allocators' error type and the short kinds the op-script runner prints.
//!
//! Follows Kubernetes v1.37.2: the errors of `pkg/registry/core/service/ipallocator/interfaces.go`
//! and `pkg/registry/core/service/portallocator/allocator.go` (`ErrFull`, `ErrAllocated`,
//! `ErrNotInRange`...).

use std::net::IpAddr;

use thiserror::Error;

/// Why an allocator refused an operation. A refused operation never changes the allocator.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum AllocError {
    /// Nothing is left to hand out (`ErrFull`).
    #[error("range is full")]
    Full,
    /// The IP lies outside the usable part of the range (`ErrNotInRange`).
    #[error("provided IP {ip} is not in the valid range. The range of valid IPs is {range}")]
    IpNotInRange {
        /// The IP asked for.
        ip: IpAddr,
        /// The allocator's range.
        range: String,
    },
    /// The port lies outside the allocator's port range (`ErrNotInRange`).
    #[error("provided port {port} is not in the valid range. The range of valid ports is {range}")]
    PortNotInRange {
        /// The port asked for.
        port: i64,
        /// The allocator's port range.
        range: String,
    },
    /// A bitmap offset lies outside `[0, max)`.
    #[error("offset {offset} out of range [0,{max}]")]
    OffsetNotInRange {
        /// The offset asked for.
        offset: usize,
        /// The number of items of the bitmap.
        max: usize,
    },
    /// The IP is already taken (`ErrAllocated`).
    #[error("provided IP {ip} is already allocated")]
    IpAllocated {
        /// The IP asked for.
        ip: IpAddr,
    },
    /// The port is already taken (`ErrAllocated`).
    #[error("provided port {port} is already allocated")]
    PortAllocated {
        /// The port asked for.
        port: i64,
    },
    /// A bitmap offset is already taken.
    #[error("offset {offset} is already allocated")]
    OffsetAllocated {
        /// The offset asked for.
        offset: usize,
    },
    /// A snapshot or IP belongs to another network than the allocator's (`ErrMismatchedNetwork`).
    #[error("the provided network {given} does not match the current range {current}")]
    MismatchedNetwork {
        /// The range given.
        given: String,
        /// The allocator's range (empty when no range covers the value).
        current: String,
    },
    /// A snapshot belongs to another port range (`ErrMismatchedNetwork` of the port allocator).
    #[error("the provided port range {given} does not match the current port range {current}")]
    MismatchedPortRange {
        /// The range given.
        given: String,
        /// The allocator's range.
        current: String,
    },
    /// The range string of a generic bitmap snapshot differs from the bitmap's.
    #[error("the provided range {given} does not match the current range {current}")]
    MismatchedRange {
        /// The range given.
        given: String,
        /// The bitmap's range.
        current: String,
    },
    /// The allocator may not allocate yet (`ErrNotReady`): its ServiceCIDR is not ready.
    #[error("allocator not ready")]
    NotReady,
    /// An unparsable or unsupported value.
    #[error("invalid {field} {value:?}: {reason}")]
    Invalid {
        /// What the value is (`cidr`, `port range`, `ip`, ...).
        field: String,
        /// The value given.
        value: String,
        /// What is wrong with it.
        reason: String,
    },
}

/// The short error kinds of the op-script vocabulary (`allocators.md`, section 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `full`.
    Full,
    /// `not-in-range`.
    NotInRange,
    /// `allocated`.
    Allocated,
    /// `mismatched-network`.
    MismatchedNetwork,
    /// `not-ready`.
    NotReady,
    /// `invalid`.
    Invalid,
}

impl ErrorKind {
    /// The kind as the op-script runner prints it.
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Full => "full",
            ErrorKind::NotInRange => "not-in-range",
            ErrorKind::Allocated => "allocated",
            ErrorKind::MismatchedNetwork => "mismatched-network",
            ErrorKind::NotReady => "not-ready",
            ErrorKind::Invalid => "invalid",
        }
    }
}

impl std::fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AllocError {
    /// The kind of this error, as Kubernetes' error values group them.
    pub fn kind(&self) -> ErrorKind {
        match self {
            AllocError::Full => ErrorKind::Full,
            AllocError::IpNotInRange { .. }
            | AllocError::PortNotInRange { .. }
            | AllocError::OffsetNotInRange { .. } => ErrorKind::NotInRange,
            AllocError::IpAllocated { .. }
            | AllocError::PortAllocated { .. }
            | AllocError::OffsetAllocated { .. } => ErrorKind::Allocated,
            AllocError::MismatchedNetwork { .. }
            | AllocError::MismatchedPortRange { .. }
            | AllocError::MismatchedRange { .. } => ErrorKind::MismatchedNetwork,
            AllocError::NotReady => ErrorKind::NotReady,
            AllocError::Invalid { .. } => ErrorKind::Invalid,
        }
    }

    pub(crate) fn invalid(field: &str, value: impl ToString, reason: impl ToString) -> Self {
        AllocError::Invalid {
            field: field.to_owned(),
            value: value.to_string(),
            reason: reason.to_string(),
        }
    }
}
