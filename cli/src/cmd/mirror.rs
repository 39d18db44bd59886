//! `svcnet mirror`: the EndpointSlices mirrored from selector-less Services' Endpoints.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); mirroring follows
//! `pkg/controller/endpointslicemirroring/reconciler.go`.

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use svcnet_model::EndpointSlice;
use svcnet_slicer::{MirrorOptions, SeededNames, mirror_all};

use crate::cmd::slice::print_plan;
use crate::error::CliError;
use crate::input::read_set;
use crate::output::Format;

/// Arguments of `svcnet mirror`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The most addresses mirrored per Endpoints subset (Kubernetes uses 1000).
    #[arg(
        long,
        alias = "max-endpoints-per-subset",
        value_name = "N",
        default_value_t = 1000
    )]
    pub max_endpoints_per_slice: i64,
    /// Seed of the generator that names new slices (same seed, same names).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// Services, Endpoints and existing mirrored EndpointSlices (JSON or YAML), or `-` for stdin.
    pub input: String,
}

/// Runs `svcnet mirror`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    if !(1..=1000).contains(&args.max_endpoints_per_slice) {
        return Err(CliError::Usage(format!(
            "--max-endpoints-per-slice: invalid value {}: must be between 1 and 1000, inclusive",
            args.max_endpoints_per_slice
        )));
    }
    let options = MirrorOptions {
        max_endpoints_per_subset: usize::try_from(args.max_endpoints_per_slice).unwrap_or(1000),
    };
    let set = read_set(&args.input)?;
    let slices: Vec<Arc<EndpointSlice>> = set.endpoint_slices.into_iter().map(Arc::new).collect();
    let done = mirror_all(
        &set.services,
        &set.endpoints,
        &slices,
        &options,
        &mut SeededNames::new(args.seed),
    );
    let events: Vec<Value> = done
        .events
        .iter()
        .map(|(ns, name, e)| {
            json!({"type": "Warning", "reason": e.reason(), "message": e.to_string(), "object": format!("{ns}/{name}")})
        })
        .collect();
    print_plan(&done.plan, &done.slices, &events, args.output)?;
    Ok(ExitCode::SUCCESS)
}
