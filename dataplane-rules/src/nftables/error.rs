//! Errors of the nftables backend.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use super::object::Verb;

/// Why an nftables rule set could not be built or a transaction not applied.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NftError {
    /// An operation refers to an object that does not exist.
    #[error("no such {kind} {name:?}")]
    NotFound {
        /// Object type (`chain`, `set`, `map`, `element`, ...).
        kind: &'static str,
        /// Its name (or an element's key).
        name: String,
    },
    /// A `create` of an object that exists.
    #[error("{kind} {name:?} already exists")]
    Exists {
        /// Object type.
        kind: &'static str,
        /// Its name (or an element's key).
        name: String,
    },
    /// A verb that does not apply to an object type.
    #[error("{verb} is not implemented for {kind}s")]
    Unsupported {
        /// The verb.
        verb: &'static str,
        /// Object type.
        kind: &'static str,
    },
    /// Operation `index` of a transaction failed (the transaction was not applied).
    #[error("operation {index} of the transaction: {source}")]
    Operation {
        /// Zero-based index of the failing operation.
        index: usize,
        /// What failed.
        source: Box<NftError>,
    },
    /// A Service would produce an object the kernel or nft refuses (a name or comment
    /// too long, too many elements); nothing is emitted for the whole rule set.
    #[error("service {service}: {what} {value:?} is {len} long, the limit is {max}")]
    Limit {
        /// The Service port (`namespace/name:port`), or `-` for the fixed objects.
        service: String,
        /// What is too long or too large (`chain name`, `comment`, `elements of ...`).
        what: String,
        /// The offending value (names and comments; empty for counts).
        value: String,
        /// Its length or count.
        len: usize,
        /// The limit.
        max: usize,
    },
}

impl NftError {
    pub(crate) fn not_found(kind: &'static str, name: &str) -> Self {
        NftError::NotFound {
            kind,
            name: name.to_owned(),
        }
    }

    pub(crate) fn exists(kind: &'static str, name: &str) -> Self {
        NftError::Exists {
            kind,
            name: name.to_owned(),
        }
    }

    pub(crate) fn unsupported(verb: Verb, kind: &'static str) -> Self {
        NftError::Unsupported {
            verb: verb.as_str(),
            kind,
        }
    }
}
