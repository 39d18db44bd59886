//! `svcnet explain`: why a Service does (not) work; the analysis is
//! `svcnet_rules::explain`, this module reads, calls and prints.

use std::process::ExitCode;

use svcnet_rules::explain::explain;

use crate::error::CliError;
use crate::input::read_set;
use crate::output::{Format, print_json, print_text};

/// Arguments of `svcnet explain`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The Service, as NAMESPACE/NAME.
    #[arg(value_name = "NS/NAME")]
    pub service: String,
    /// Also check what a Local traffic policy leaves on this node.
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// A file of Services, EndpointSlices, Pods and Nodes (JSON or YAML), or `-` for standard input.
    pub input: String,
}

/// Runs `svcnet explain`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let Some((ns, name)) = args.service.split_once('/') else {
        return Err(CliError::Usage(format!("{:?}: not NAMESPACE/NAME", args.service)));
    };
    let objects = read_set(&args.input)?;
    let e = explain(&objects, ns, name, args.node.as_deref());
    match args.output {
        Format::Json => print_json(&e)?,
        Format::Text => {
            let mut out = format!("Service {}:", e.service);
            for f in &e.findings {
                out.push_str(&format!("\n- {:?}: {}", f.code, f.message));
                if !f.objects.is_empty() {
                    out.push_str(&format!("\n  ({})", f.objects.join(", ")));
                }
            }
            print_text(&out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
