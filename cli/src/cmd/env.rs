//! `svcnet env`: the service environment variables the kubelet injects into a container.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); the variables follow
//! `pkg/kubelet/envvars/envvars.go`.

use std::process::ExitCode;

use serde_json::json;
use svcnet_discovery::service_env;

use crate::error::CliError;
use crate::input::read_set;
use crate::output::{Format, print_json, print_text};

/// Arguments of `svcnet env`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The Pod's namespace.
    #[arg(long, value_name = "NS")]
    pub namespace: String,
    /// The Pod's `enableServiceLinks` (the API default is true).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    pub enable_service_links: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// A file of Kubernetes objects (JSON or YAML), or `-` for standard input.
    pub input: String,
}

/// Runs `svcnet env`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let set = read_set(&args.input)?;
    let vars = service_env(&set.services, &args.namespace, args.enable_service_links);
    match args.output {
        Format::Json => {
            let env: Vec<_> = vars
                .iter()
                .map(|v| json!({"name": v.name, "value": v.value.as_deref().unwrap_or("")}))
                .collect();
            print_json(&json!({ "env": env }))?;
        }
        Format::Text => {
            let lines: Vec<String> = vars
                .iter()
                .map(|v| format!("{}={}", v.name, v.value.as_deref().unwrap_or("")))
                .collect();
            if !lines.is_empty() {
                print_text(&lines.join("\n"))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
