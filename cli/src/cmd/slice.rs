//! `svcnet slice`: the EndpointSlice plan of every Service with a selector in the input.

use std::collections::{BTreeMap, BTreeSet};
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use svcnet_model::{
    ENDPOINTS_OVER_CAPACITY_ANNOTATION, EndpointSlice, Endpoints, ObjectSet, Service, address_type,
};
use svcnet_slicer::{NodeZones, Options, Plan, SeededNames, ServiceSlices, SliceError, legacy_endpoints};
use svcnet_topology::{HintsOptions, Mechanism, SliceSet, ZoneCapacity, choose_mechanism, reconcile_hints};

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

/// True when `slice` is labelled as a slice of the Service `ns/name`.
pub(crate) fn labelled_for(slice: &EndpointSlice, ns: &str, name: &str) -> bool {
    slice.service_name() == Some(name)
        && (slice.metadata.namespace().is_empty() || slice.metadata.namespace() == ns)
}

/// Runs `svcnet slice`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let mut options = Options::with_max(args.max_endpoints_per_slice)
        .map_err(|e| CliError::Usage(format!("--max-endpoints-per-slice: {e}")))?;
    options.trigger_time = args.trigger_time.clone();
    let set = read_set(&args.input)?;
    let (plan, after, events) = plan_all(&set, &options, args.seed);
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

/// Plans every Service that has a selector (and is not `ExternalName`); also gives the slices of
/// those Services once the plan is applied, and the hint events.
///
/// As the EndpointSlice controller does within one sync, the slicer's plan then goes through
/// topology hinting (svcnet-topology): hints are filled for `topology-mode: Auto` and
/// `trafficDistribution`, removed otherwise, and that may move unchanged slices into updates.
fn plan_all(set: &ObjectSet, options: &Options, seed: u64) -> (Plan, Vec<EndpointSlice>, Vec<Value>) {
    let nodes = NodeZones::from_nodes(&set.nodes);
    let capacity = match ZoneCapacity::from_nodes(&set.nodes) {
        Ok(c) => Some(c),
        Err(e) => {
            eprintln!("svcnet: warning: topology hints not computed: {e}");
            None
        }
    };
    let mut names = SeededNames::new(seed);
    let mut plan = Plan::default();
    let mut after = Vec::new();
    let mut events = Vec::new();
    for svc in &set.services {
        let (ns, name) = (svc.metadata.namespace(), svc.metadata.name());
        let existing: Vec<EndpointSlice> = set
            .endpoint_slices
            .iter()
            .filter(|s| labelled_for(s, ns, name))
            .cloned()
            .collect();
        let populated = hints_populated(svc, &existing);
        match ServiceSlices::new(svc, existing, options.clone()) {
            Ok(mut state) => {
                let mut p = state.sync(&set.pods, &nodes, &mut names);
                let mut mine: Vec<EndpointSlice> = state.slices().cloned().collect();
                if let Some(capacity) = &capacity {
                    events.extend(apply_hints(svc, &mut p, &mut mine, capacity, populated));
                }
                plan.extend(p);
                after.extend(mine);
            }
            Err(SliceError::NoSelector { .. } | SliceError::ExternalName { .. }) => {}
            Err(e) => eprintln!("svcnet: warning: {e}"),
        }
    }
    (plan, after, events)
}

/// The controller's memory of annotation-driven hints is not in the input: hints found on the
/// existing slices count as its own, unless trafficDistribution explains them.
fn hints_populated(svc: &Service, existing: &[EndpointSlice]) -> bool {
    // PreferSameTrafficDistribution is GA and locked on since 1.35.
    let mechanism = choose_mechanism(svc, true).mechanism;
    !matches!(mechanism, Mechanism::TrafficDistribution(_))
        && existing.iter().any(|s| {
            s.endpoints().iter().any(|e| {
                e.hints
                    .as_ref()
                    .is_some_and(|h| h.for_zones.as_ref().is_some_and(|z| !z.is_empty()))
            })
        })
}

/// Runs hinting over one Service's plan, per address type, and writes the result back into the
/// plan and the Service's slices after it. Returns the events hinting would emit.
fn apply_hints(
    svc: &Service,
    plan: &mut Plan,
    after: &mut [EndpointSlice],
    capacity: &ZoneCapacity,
    mut populated: bool,
) -> Vec<Value> {
    let mut events = Vec::new();
    for at in [address_type::IPV4, address_type::IPV6] {
        let of_type = |list: &[Arc<EndpointSlice>]| -> Vec<EndpointSlice> {
            list.iter()
                .filter(|s| s.address_type == at)
                .map(|s| (**s).clone())
                .collect()
        };
        let to_create = of_type(&plan.create);
        let to_update = of_type(&plan.update);
        let written: BTreeSet<&str> = to_create
            .iter()
            .chain(&to_update)
            .map(|s| s.metadata.name())
            .collect();
        let unchanged: Vec<EndpointSlice> = after
            .iter()
            .filter(|s| s.address_type == at && !written.contains(s.metadata.name()))
            .cloned()
            .collect();
        if to_create.is_empty() && to_update.is_empty() && unchanged.is_empty() {
            continue;
        }
        let set = SliceSet {
            to_create,
            to_update,
            unchanged,
        };
        let outcome = reconcile_hints(svc, at, set, capacity, populated, &HintsOptions::default());
        populated = outcome.hints_populated;
        events.extend(outcome.events.iter().filter_map(|e| serde_json::to_value(e).ok()));
        let result = outcome.slices;
        plan.create.retain(|s| s.address_type != at);
        plan.create.extend(result.to_create.iter().cloned().map(Arc::new));
        plan.update.retain(|s| s.address_type != at);
        plan.update.extend(result.to_update.iter().cloned().map(Arc::new));
        let by_name: BTreeMap<&str, &EndpointSlice> = result.iter().map(|s| (s.metadata.name(), s)).collect();
        for s in after.iter_mut().filter(|s| s.address_type == at) {
            if let Some(new) = by_name.get(s.metadata.name()) {
                *s = (*new).clone();
            }
        }
    }
    events
}

/// Prints a plan, the slices after it is applied (and events, for mirroring) as JSON or text.
pub(crate) fn print_plan(
    plan: &Plan,
    after: &[EndpointSlice],
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
fn plan_json(plan: &Plan, after: &[EndpointSlice], events: &[Value]) -> Value {
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
        "slices": after,
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
            let proto = p.protocol.as_deref().unwrap_or("TCP");
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
