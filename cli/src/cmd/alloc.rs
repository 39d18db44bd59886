//! `svcnet alloc`: runs an allocator operation script (`allocators.md`, section 10) and prints
//! one result per operation: `{"results":[...]}`. The script runner is
//! `svcnet_allocators::script`; this file reads, calls and prints.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); the allocators follow
//! `pkg/registry/core/service/ipallocator` and `portallocator`.

use std::process::ExitCode;

use serde_json::{Value, json};
use svcnet_allocators::SplitMix64;
use svcnet_allocators::script::Model;

use crate::error::CliError;
use crate::input::read_documents;
use crate::output::{Format, print_json, print_text};

/// Arguments of `svcnet alloc`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Seed of the random generator: the same seed gives the same allocations.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output format (default: JSON).
    #[arg(long, value_enum)]
    pub output: Option<Format>,
    /// The operation script (JSON or YAML), or `-` for standard input.
    pub script: String,
}

/// Runs `svcnet alloc`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let docs = read_documents(&args.script)?;
    let doc = docs.into_iter().next().unwrap_or(Value::Null);
    let script = doc.get("input").filter(|v| v.is_object()).unwrap_or(&doc);
    let mut model = match Model::from_script(script) {
        Ok(m) => m,
        Err(msg) => {
            eprintln!("svcnet: {}: {msg}", args.script);
            return Ok(ExitCode::from(1));
        }
    };
    let mut rng = SplitMix64::new(args.seed);
    let empty = Vec::new();
    let ops = script.get("ops").and_then(Value::as_array).unwrap_or(&empty);
    let results: Vec<_> = ops.iter().map(|op| model.run_op(op, &mut rng)).collect();
    let refused = results.iter().any(|r| r.is_error());
    match args.output.unwrap_or(Format::Json) {
        Format::Json => print_json(&json!({ "results": results }))?,
        Format::Text => {
            for (i, (op, r)) in ops.iter().zip(&results).enumerate() {
                let name = op.get("op").and_then(Value::as_str).unwrap_or("?");
                let r = serde_json::to_value(r).map_err(|e| CliError::Output(e.to_string()))?;
                print_text(&format!("{:>4} {name}: {r}", i + 1))?;
            }
        }
    }
    Ok(ExitCode::from(u8::from(refused)))
}
