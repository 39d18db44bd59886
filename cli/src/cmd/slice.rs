//! `svcnet slice` (not built yet).

use std::process::ExitCode;

use crate::error::CliError;
use crate::output::Format;

/// Arguments of `svcnet slice`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// Extra arguments, accepted until this subcommand is built.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    pub rest: Vec<String>,
}

/// Runs `svcnet slice`.
pub fn run(_args: Args) -> Result<ExitCode, CliError> {
    Err(CliError::Usage("svcnet slice is not built yet".into()))
}
