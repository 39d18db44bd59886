//! The crate's errors.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use thiserror::Error;

/// Why rules could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RulesError {
    /// A setting of [`ProxyConfig`](crate::ProxyConfig) is unusable.
    #[error("setting {setting}: {value:?}: {why}")]
    Setting {
        /// The setting (named after the command-line flag).
        setting: &'static str,
        /// The value given.
        value: String,
        /// What is wrong with it.
        why: &'static str,
    },
}
