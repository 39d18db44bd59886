//! `svcnet hints`: fill or remove the topology hints of every Service's EndpointSlices, as the
//! EndpointSlice controller does, and explain each decision.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); hinting follows
//! `staging/src/k8s.io/endpointslice/topologycache/topologycache.go` and
//! `trafficdist/trafficdist.go`.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::{Value, json};
use svcnet_model::{EndpointSlice, Service, labels};
use svcnet_slicer::{Controller, Hinting, NodeZones, Options, Skipped};
use svcnet_topology::{Decision, HintsOptions, HintsOutcome, ZoneCapacity};

use crate::error::CliError;
use crate::input::read_set;
use crate::output::{Format, print_json, print_text};

/// Arguments of `svcnet hints`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// Keep moving hints until every zone has its minimum share (or remove them all), instead
    /// of stopping where Kubernetes stops.
    #[arg(long)]
    pub strict: bool,
    /// The PreferSameTrafficDistribution feature (accept PreferSameZone / PreferSameNode).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub prefer_same_traffic_distribution: bool,
    /// A file of Services, Nodes and EndpointSlices (JSON or YAML), or `-` for standard input.
    /// Every EndpointSlice counts as an existing slice of the Service it is labelled with. Zone
    /// hints already on a Service's slices count as hints the controller put there (so no
    /// "enabled" event is repeated), unless the Service's trafficDistribution explains them.
    pub input: String,
}

/// One Service and address type, hinted.
struct Done<'a> {
    service: &'a Service,
    outcome: &'a HintsOutcome,
}

/// Runs `svcnet hints`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let set = read_set(&args.input)?;
    let capacity = match ZoneCapacity::from_nodes(&set.nodes) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("svcnet: {}: {e}", args.input);
            return Ok(ExitCode::from(1));
        }
    };
    let options = HintsOptions {
        prefer_same_traffic_distribution: args.prefer_same_traffic_distribution,
        strict: args.strict,
    };
    let controller = Controller {
        nodes: &NodeZones::new(),
        options: &Options::default(),
        hinting: Some(Hinting {
            capacity: &capacity,
            options,
        }),
    };
    let slices: Vec<Arc<EndpointSlice>> = set.endpoint_slices.into_iter().map(Arc::new).collect();
    let result = controller.hint_all(&set.services, slices);
    let services = &set.services;
    let skipped: Vec<Value> = result
        .skipped
        .iter()
        .filter_map(|s| match *s {
            Skipped::NoSelector { service } => Some(json!({
                "service": services[service].metadata.key(),
                "why": "no selector: the EndpointSlice controller does not manage its slices",
            })),
            Skipped::ForeignSlice { service, slice } => {
                let s = &result.slices[slice];
                Some(json!({
                    "service": services[service].metadata.key(),
                    "slice": s.metadata.name(),
                    "why": format!("managed by {:?}, not the EndpointSlice controller",
                                   s.metadata.label(labels::MANAGED_BY).unwrap_or_default()),
                }))
            }
            _ => None,
        })
        .collect();
    let updated: Vec<&str> = result.plan.update.iter().map(|s| s.metadata.name()).collect();
    let done: Vec<Done<'_>> = result
        .hints
        .iter()
        .map(|(k, outcome)| Done {
            service: &services[*k],
            outcome,
        })
        .collect();
    let slices: Vec<&EndpointSlice> = result.slices.iter().map(|s| &**s).collect();
    match args.output {
        Format::Json => {
            let events: Vec<Value> = done
                .iter()
                .flat_map(|d| {
                    d.outcome.events.iter().map(|e| {
                        json!({"type": e.type_, "reason": e.reason, "message": e.message,
                               "service": d.service.metadata.key()})
                    })
                })
                .collect();
            let services: Vec<Value> = done
                .iter()
                .map(|d| {
                    json!({
                        "service": d.service.metadata.key(),
                        "addressType": d.outcome.address_type,
                        "mechanism": d.outcome.choice,
                        "explanation": d.outcome.choice.to_string(),
                        "decision": d.outcome.decision,
                        "removal": removal_detail(d.outcome),
                        "notes": d.outcome.notes,
                        "hintsPopulated": d.outcome.hints_populated,
                    })
                })
                .collect();
            print_json(&json!({
                "slices": slices,
                "updated": updated,
                "events": events,
                "services": services,
                "skipped": skipped,
                "capacity": capacity,
            }))?;
        }
        Format::Text => print_text(text(&done, &skipped, &capacity).trim_end_matches('\n'))?,
    }
    Ok(ExitCode::SUCCESS)
}

fn removal_detail(o: &HintsOutcome) -> Option<String> {
    match &o.decision {
        Decision::Removed { reason } => Some(reason.detail()),
        _ => None,
    }
}

fn text(done: &[Done<'_>], skipped: &[Value], capacity: &ZoneCapacity) -> String {
    let mut t = String::new();
    match &capacity.insufficient {
        None => {
            let zones: Vec<String> = capacity
                .cpu_by_zone
                .iter()
                .map(|(z, c)| format!("{z}={c}m"))
                .collect();
            let _ = writeln!(t, "nodes: allocatable CPU by zone: {}", zones.join(", "));
        }
        Some(why) => {
            let _ = writeln!(t, "nodes: insufficient for topology-aware routing: {why}");
        }
    }
    for d in done {
        let o = &d.outcome;
        let _ = writeln!(
            t,
            "{} ({}): {}",
            d.service.metadata.key(),
            o.address_type,
            o.choice
        );
        match &o.decision {
            Decision::Hinted(r) => {
                let _ = writeln!(t, "  hints kept for {} ready endpoints", r.endpoints);
                let _ = writeln!(
                    t,
                    "  {:<16} {:>7} {:>8} {:>4} {:>4} {:>6} {:>7}",
                    "zone", "cpu", "desired", "min", "max", "local", "hinted"
                );
                for (z, zr) in &r.zones {
                    let a = &zr.allocation;
                    let _ = writeln!(
                        t,
                        "  {:<16} {:>6.1}% {:>8.2} {:>4} {:>4} {:>6} {:>7}",
                        z,
                        a.ratio * 100.0,
                        a.desired,
                        a.minimum,
                        a.maximum,
                        zr.local_endpoints,
                        zr.hinted
                    );
                }
                for (z, n) in &r.zones_without_capacity {
                    let _ = writeln!(
                        t,
                        "  {n} endpoints keep hints to zone {z}, which has no ready worker node"
                    );
                }
                for m in &r.moved {
                    let _ = writeln!(
                        t,
                        "  moved {} (slice {}) from zone {} to zone {}",
                        m.address, m.slice, m.from, m.to
                    );
                }
                if !r.overloaded_zones.is_empty() {
                    let _ = writeln!(
                        t,
                        "  warning: zones below their minimum share (Kubernetes stops moving hints here): {}",
                        r.overloaded_zones.join(", ")
                    );
                }
            }
            Decision::Removed { reason } => {
                let _ = writeln!(t, "  hints removed: {reason} ({})", reason.detail());
            }
            Decision::TrafficDistribution { value } => {
                let _ = writeln!(
                    t,
                    "  each ready endpoint hinted to its own zone{}",
                    if value.node_hints() { " and node" } else { "" }
                );
            }
            Decision::Cleared => {
                let _ = writeln!(t, "  no mechanism applies: hints removed");
            }
            _ => {}
        }
        for n in &o.notes {
            let _ = writeln!(t, "  slice {}: {}", n.slice, n.reason);
        }
        for e in &o.events {
            let _ = writeln!(t, "  event {:?} {}: {}", e.type_, e.reason, e.message);
        }
    }
    for s in skipped {
        let what = match s["slice"].as_str() {
            Some(slice) => format!("slice {slice}"),
            None => "service".to_owned(),
        };
        let _ = writeln!(
            t,
            "{}: {what} skipped, {}",
            s["service"].as_str().unwrap_or(""),
            s["why"].as_str().unwrap_or("")
        );
    }
    t
}
