//! `svcnet mirror`: the EndpointSlices mirrored from selector-less Services' Endpoints.

use std::process::ExitCode;

use serde_json::{Value, json};
use svcnet_model::{EndpointSlice, labels};
use svcnet_slicer::{MirrorOptions, Plan, SeededNames, mirror};

use crate::cmd::slice::{labelled_for, print_plan};
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
    let mut names = SeededNames::new(args.seed);
    // Every Endpoints object, then every Service named by a mirrored slice only.
    let mut keys: Vec<(String, String)> = Vec::new();
    for e in &set.endpoints {
        let k = (e.metadata.namespace().to_owned(), e.metadata.name().to_owned());
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let mirrored = |s: &&EndpointSlice| {
        s.metadata
            .label(labels::MANAGED_BY)
            .is_none_or(|m| m == labels::MIRRORING_CONTROLLER_NAME)
    };
    for s in set.endpoint_slices.iter().filter(mirrored) {
        if let Some(name) = s.service_name() {
            let k = (s.metadata.namespace().to_owned(), name.to_owned());
            if !keys.contains(&k) {
                keys.push(k);
            }
        }
    }
    let mut plan = Plan::default();
    let mut after: Vec<EndpointSlice> = Vec::new();
    let mut events: Vec<Value> = Vec::new();
    for (ns, name) in keys {
        let same = |m: &svcnet_model::ObjectMeta| m.namespace() == ns && m.name() == name;
        let svc = set.services.iter().find(|s| same(&s.metadata));
        let eps = set.endpoints.iter().find(|e| same(&e.metadata));
        let existing: Vec<_> = set
            .endpoint_slices
            .iter()
            .filter(mirrored)
            .filter(|s| labelled_for(s, &ns, &name))
            .cloned()
            .collect();
        let m = mirror(svc, eps, &existing, &options, &mut names);
        after.extend(applied(&existing, &m.plan));
        plan.extend(m.plan);
        events.extend(m.events.iter().map(|e| {
            json!({"type": "Warning", "reason": e.reason(), "message": e.to_string(), "object": format!("{ns}/{name}")})
        }));
    }
    print_plan(&plan, &after, &events, args.output)?;
    Ok(ExitCode::SUCCESS)
}

/// The slices after `plan` is applied to `existing`.
fn applied(existing: &[EndpointSlice], plan: &Plan) -> Vec<EndpointSlice> {
    let name = |s: &EndpointSlice| s.metadata.name.clone();
    let mut out: Vec<EndpointSlice> = existing
        .iter()
        .filter(|s| !plan.delete.iter().any(|d| name(d) == name(s)))
        .map(|s| {
            plan.update
                .iter()
                .find(|u| name(u) == name(s))
                .map_or(s, |u| &**u)
                .clone()
        })
        .collect();
    out.extend(plan.create.iter().map(|s| EndpointSlice::clone(s)));
    out
}
