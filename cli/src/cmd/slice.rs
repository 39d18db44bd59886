//! `svcnet slice`: the EndpointSlice plan of every Service with a selector in the input.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); slicing follows
//! `staging/src/k8s.io/endpointslice/reconciler.go`.

use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use svcnet_model::{ENDPOINTS_OVER_CAPACITY_ANNOTATION, EndpointSlice, Endpoints, ObjectSet};
use svcnet_slicer::{Controller, Hinting, NodeZones, Options, Plan, SeededNames, legacy_endpoints};
use svcnet_topology::{HintsOptions, ZoneCapacity};

use crate::error::CliError;
use crate::input::read_set;
use crate::output::{Format, print_json, print_text};

/// Arguments of `svcnet slice`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The most endpoints per slice (1..=1000), as kube-controller-manager's flag.
    #[arg(long, value_name = "N", default_value_t = 100)]
    pub max_endpoints_per_slice: i64,
    /// Seed of the generator that names new slices (same seed, same names).
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub seed: u64,
    /// The `endpoints.kubernetes.io/last-change-trigger-time` to stamp on written slices.
    #[arg(long, value_name = "RFC3339")]
    pub trigger_time: Option<String>,
    /// Also print the legacy `Endpoints` object of each Service (JSON key `endpoints`).
    #[arg(long)]
    pub legacy_endpoints: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// Services, Pods, Nodes and existing EndpointSlices (JSON or YAML), or `-` for stdin.
    pub input: String,
}

/// Runs `svcnet slice`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut options = Options::with_max(args.max_endpoints_per_slice)
        .map_err(|e| CliError::Usage(format!("--max-endpoints-per-slice: {e}")))?;
    options.trigger_time = args.trigger_time.clone();
    let mut set = read_set(&args.input)?;
    let (plan, after, events) = plan_all(&mut set, &options, args.seed);
    if !args.legacy_endpoints {
        print_plan(&plan, &after, &events, args.output)?;
        return Ok(ExitCode::SUCCESS);
    }
    let legacy: Vec<Endpoints> = set
        .services
        .iter()
        .filter_map(|svc| legacy_endpoints(svc, &set.pods))
        .collect();
    match args.output {
        Format::Json => {
            let mut v = plan_json(&plan, &after, &events);
            v["endpoints"] = json!(legacy);
            print_json(&v)?;
        }
        Format::Text => {
            print_plan(&plan, &after, &events, args.output)?;
            for e in &legacy {
                let ready: usize = e
                    .subsets()
                    .iter()
                    .map(|s| s.addresses.as_ref().map_or(0, Vec::len))
                    .sum();
                let not_ready: usize = e
                    .subsets()
                    .iter()
                    .map(|s| s.not_ready_addresses.as_ref().map_or(0, Vec::len))
                    .sum();
                let truncated = e
                    .metadata
                    .annotation(ENDPOINTS_OVER_CAPACITY_ANNOTATION)
                    .is_some();
                print_text(&format!(
                    "endpoints {}/{}: {} subsets, {ready} ready, {not_ready} not ready{}",
                    e.metadata.namespace(),
                    e.metadata.name(),
                    e.subsets().len(),
                    if truncated { " (truncated)" } else { "" }
                ))?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// Plans every Service that has a selector (and is not `ExternalName`), slicing and hints in
/// one sync ([`Controller::sync_all`]); gives the plan, the slices of those Services after it,
/// and the hint events.
fn plan_all(
    set: &mut ObjectSet,
    options: &Options,
    seed: u64,
) -> (Plan, Vec<Arc<EndpointSlice>>, Vec<Value>) {
    let nodes = NodeZones::from_nodes(&set.nodes);
    let capacity = match ZoneCapacity::from_nodes(&set.nodes) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("svcnet: warning: topology hints not computed: {e}");
            None
        }
    };
    let controller = Controller {
        nodes: &nodes,
        options,
        hinting: capacity.as_ref().map(|capacity| Hinting {
            capacity,
            options: HintsOptions::default(),
        }),
    };
    let slices = std::mem::take(&mut set.endpoint_slices)
        .into_iter()
        .map(Arc::new)
        .collect();
    let done = controller.sync_all(&set.services, &set.pods, slices, &mut SeededNames::new(seed));
    for e in &done.errors {
        eprintln!("svcnet: warning: {e}");
    }
    let events = done
        .hints
        .iter()
        .flat_map(|(_, o)| o.events.iter().filter_map(|e| serde_json::to_value(e).ok()))
        .collect();
    (done.plan, done.slices, events)
}

/// Prints a plan, the slices after it is applied (and events, for mirroring) as JSON or text.
pub(crate) fn print_plan(
    plan: &Plan,
    after: &[Arc<EndpointSlice>],
    events: &[Value],
    format: Format,
) -> Result<(), CliError> {
    let error = plan.error_message();
    match format {
        Format::Json => print_json(&plan_json(plan, after, events)),
        Format::Text => {
            for (verb, list) in [
                ("create", &plan.create),
                ("update", &plan.update),
                ("delete", &plan.delete),
            ] {
                for s in list {
                    print_text(&describe(verb, s))?;
                }
            }
            print_text(&format!(
                "{} to create, {} to update, {} to delete; {} slices after",
                plan.create.len(),
                plan.update.len(),
                plan.delete.len(),
                after.len()
            ))?;
            for e in events {
                print_text(&format!(
                    "event {} {}: {}",
                    e["type"].as_str().unwrap_or(""),
                    e["reason"].as_str().unwrap_or(""),
                    e["message"].as_str().unwrap_or("")
                ))?;
            }
            if let Some(e) = error {
                print_text(&format!("error (the sync would be retried): {e}"))?;
            }
            Ok(())
        }
    }
}

/// Shared slices as plain references, for serializing.
fn plain(list: &[Arc<EndpointSlice>]) -> Vec<&EndpointSlice> {
    list.iter().map(|s| &**s).collect()
}

/// The JSON form of a plan: `create`, `update`, `delete`, `error`, plus `counts`, the `slices`
/// after the plan, and `events` when there are any.
fn plan_json(plan: &Plan, after: &[Arc<EndpointSlice>], events: &[Value]) -> Value {
    let mut v = json!({
        "create": plain(&plan.create),
        "update": plain(&plan.update),
        "delete": plain(&plan.delete),
        "error": plan.error_message(),
        "counts": {
            "create": plan.create.len(),
            "update": plan.update.len(),
            "delete": plan.delete.len(),
        },
        "slices": plain(after),
    });
    if !events.is_empty() {
        v["events"] = Value::Array(events.to_vec());
    }
    // The API server never omits an EndpointSlice's `ports`: a slice without ports (a mirrored
    // port-less subset) reads `"ports": null`.
    for list in ["create", "update", "delete", "slices"] {
        if let Some(Value::Array(slices)) = v.get_mut(list) {
            for s in slices.iter_mut().filter_map(Value::as_object_mut) {
                s.entry("ports").or_insert(Value::Null);
            }
        }
    }
    v
}

fn describe(verb: &str, s: &EndpointSlice) -> String {
    let ports: Vec<String> = s
        .ports()
        .iter()
        .map(|p| {
            let n = p.port.map_or("*".to_owned(), |n| n.to_string());
            let proto = p.protocol();
            match p.name.as_deref() {
                Some(name) if !name.is_empty() => format!("{name}:{n}/{proto}"),
                _ => format!("{n}/{proto}"),
            }
        })
        .collect();
    let ready = s.endpoints().iter().filter(|e| e.conditions.is_ready()).count();
    format!(
        "{verb} {}/{} {} ports=[{}] endpoints={} ready={}",
        s.metadata.namespace(),
        s.metadata.name(),
        s.address_type,
        ports.join(","),
        s.endpoints().len(),
        ready
    )
}
