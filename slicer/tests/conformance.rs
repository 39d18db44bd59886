//! The `slicer` conformance cases (`slice`, `mirror`) and the topology area's `hints` cases, run
//! in-process through the [`Controller`] and [`mirror_all`], judged by the shared pass criteria
//! (`svcnet_test_support::check`) the CLI's conformance tests apply to `svcnet slice`,
//! `svcnet mirror` and `svcnet hints`.

use std::sync::Arc;

use serde_json::{Value, json};
use svcnet_model::EndpointSlice;
use svcnet_slicer::{Controller, Hinting, MirrorOptions, NodeZones, Options, Plan, SeededNames, mirror_all};
use svcnet_test_support::case::{Case, SliceExpect, TopologyExpect, run_area};
use svcnet_test_support::{check, objects};
use svcnet_topology::{HintsOptions, ZoneCapacity};

fn max_per_slice<E>(case: &Case<E>, default: i64) -> Result<i64, String> {
    case.arg("max-endpoints-per-slice")
        .map_or(Ok(default), |n| n.parse().map_err(|e| format!("{n}: {e}")))
}

fn shared(list: Vec<EndpointSlice>) -> Vec<Arc<EndpointSlice>> {
    list.into_iter().map(Arc::new).collect()
}

/// A plan as `svcnet slice --output json` prints it (the keys the checks read).
fn plan_json(plan: &Plan) -> Value {
    let plain = |l: &[Arc<EndpointSlice>]| l.iter().map(|s| json!(**s)).collect::<Vec<_>>();
    json!({
        "create": plain(&plan.create),
        "update": plain(&plan.update),
        "delete": plain(&plan.delete),
        "error": plan.error_message(),
    })
}

/// `svcnet slice`: every Service planned in one sync, hints included when the Nodes allow.
fn slice(case: &Case<SliceExpect>) -> Result<Value, String> {
    let options = Options::with_max(max_per_slice(case, 100)?).map_err(|e| e.to_string())?;
    let mut set = objects::object_set(&case.input)?;
    let nodes = NodeZones::from_nodes(&set.nodes);
    let capacity = ZoneCapacity::from_nodes(&set.nodes).ok();
    let controller = Controller {
        nodes: &nodes,
        options: &options,
        hinting: capacity.as_ref().map(|capacity| Hinting {
            capacity,
            options: HintsOptions::default(),
        }),
    };
    let slices = shared(std::mem::take(&mut set.endpoint_slices));
    let done = controller.sync_all(&set.services, &set.pods, slices, &mut SeededNames::new(0));
    Ok(plan_json(&done.plan))
}

/// `svcnet mirror`: the slices mirrored from selector-less Services' Endpoints.
fn mirror(case: &Case<SliceExpect>) -> Result<Value, String> {
    let max = max_per_slice(case, 1000)?;
    let options = MirrorOptions {
        max_endpoints_per_subset: usize::try_from(max).map_err(|e| e.to_string())?,
    };
    let set = objects::object_set(&case.input)?;
    let slices = shared(set.endpoint_slices);
    let done = mirror_all(
        &set.services,
        &set.endpoints,
        &slices,
        &options,
        &mut SeededNames::new(0),
    );
    Ok(plan_json(&done.plan))
}

#[test]
fn slicer_cases() {
    let n = run_area("slicer", |case: &Case<SliceExpect>| {
        let plan = match case.subcommand.as_str() {
            "slice" => slice(case),
            "mirror" => mirror(case),
            other => Err(format!("unexpected subcommand {other}")),
        };
        Some(plan.and_then(|p| check::slice(case, &p)))
    });
    assert_eq!(n, 25);
}

/// `svcnet hints`: the hints of every Service's slices, filled or removed in one pass.
fn hints(case: &Case<TopologyExpect>) -> Result<Value, String> {
    let set = objects::object_set(&case.input)?;
    let capacity = ZoneCapacity::from_nodes(&set.nodes).map_err(|e| e.to_string())?;
    let controller = Controller {
        nodes: &NodeZones::new(),
        options: &Options::default(),
        hinting: Some(Hinting {
            capacity: &capacity,
            options: HintsOptions::default(),
        }),
    };
    let result = controller.hint_all(&set.services, shared(set.endpoint_slices));
    let events: Vec<Value> = result
        .hints
        .iter()
        .flat_map(|(_, o)| {
            o.events
                .iter()
                .map(|e| json!({"type": e.type_, "reason": e.reason}))
        })
        .collect();
    let updated: Vec<&str> = result.plan.update.iter().map(|s| s.metadata.name()).collect();
    let slices: Vec<&EndpointSlice> = result.slices.iter().map(|s| &**s).collect();
    Ok(json!({ "slices": slices, "updated": updated, "events": events }))
}

#[test]
fn topology_hints_cases() {
    let n = run_area("topology", |case: &Case<TopologyExpect>| {
        (case.subcommand == "hints").then(|| hints(case).and_then(|res| check::hints(&case.expect, &res)))
    });
    assert_eq!(n, 12);
}
