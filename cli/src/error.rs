//! The CLI's errors: everything here exits 2.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use thiserror::Error;

/// Why a command could not run.
#[derive(Debug, Error)]
pub enum CliError {
    /// A file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The input could not be parsed or decoded.
    #[error("{path}: {detail}")]
    Parse {
        /// The file.
        path: String,
        /// Where and what.
        detail: String,
    },
    /// The command line is inconsistent in a way clap cannot see.
    #[error("{0}")]
    Usage(String),
    /// Output could not be written or encoded.
    #[error("writing output: {0}")]
    Output(String),
}
