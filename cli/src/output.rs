//! Output helpers shared by the subcommands.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use std::io::Write;

use serde::Serialize;

use crate::error::CliError;

/// Writes `value` as one line of JSON on standard output.
pub fn print_json<T: Serialize + ?Sized>(value: &T) -> Result<(), CliError> {
    let text = serde_json::to_string(value).map_err(|e| CliError::Output(e.to_string()))?;
    print_text(&text)
}

/// Writes `text` and a newline on standard output; a closed pipe ends quietly.
pub fn print_text(text: &str) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match writeln!(out, "{text}").and_then(|_| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(CliError::Output(e.to_string())),
    }
}

/// `--output` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Format {
    /// Readable text.
    #[default]
    Text,
    /// Machine-readable JSON.
    Json,
}
