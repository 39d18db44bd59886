//! Controller side: filling or removing the topology hints of one Service's EndpointSlices of
//! one address type, with every decision explained.
//!
//! Follows Kubernetes v1.37.2: the hints step of `reconcileByAddressType` in
//! `staging/src/k8s.io/endpointslice/reconciler.go`, and
//! `staging/src/k8s.io/endpointslice/trafficdist/trafficdist.go`.

use std::sync::Arc;

use serde::Serialize;
use svcnet_model::{Endpoint, EndpointHints, ForNode, ForZone, Service};

use crate::auto;
use crate::capacity::ZoneCapacity;
use crate::event::Event;
use crate::mechanism::{Mechanism, MechanismChoice, TrafficDistribution, choose_mechanism};
use crate::report::{Decision, SliceNote, SliceReason};
use crate::slice_set::{SliceSet, endpoint_ready, first_address, slice_name};
use crate::state::Ctx;

/// Switches of hinting.
///
/// With the defaults, hints are what Kubernetes writes, including in the cases where
/// Kubernetes keeps hints that leave a zone short (see [`HintsOptions::strict`]):
///
/// ```
/// use svcnet_model::{EndpointSlice, Service};
/// use svcnet_topology::*;
///
/// let svc: Service = serde_json::from_str(r#"{"metadata":{"name":"web","namespace":"shop",
///     "annotations":{"service.kubernetes.io/topology-mode":"Auto"}}}"#).unwrap();
/// // 10 ready endpoints: 5 in zone a, 5 in zone b, none in zone c.
/// let endpoints: Vec<String> = (1..=10)
///     .map(|i| format!(r#"{{"addresses":["10.0.0.{i}"],"conditions":{{"ready":true}},
///         "zone":"{}"}}"#, if i <= 5 { "a" } else { "b" }))
///     .collect();
/// let slice: EndpointSlice = serde_json::from_str(&format!(r#"{{"metadata":{{"name":"web-1",
///     "namespace":"shop"}},"addressType":"IPv4","endpoints":[{}]}}"#, endpoints.join(",")))
///     .unwrap();
/// // Zone c has ready worker Nodes with 9% of the CPU.
/// let cap = ZoneCapacity::from_zone_cpu([("a", 455), ("b", 455), ("c", 90)]);
/// let hint = |strict| {
///     let opts = HintsOptions { strict, ..Default::default() };
///     reconcile_hints(&svc, "IPv4", SliceSet::existing(vec![slice.clone()]), &cap, false, &opts)
/// };
///
/// // Kubernetes: a and b have 0.45 endpoint to spare each, less than half, so nothing
/// // moves; the hints are kept, zone c gets none, and the report names it.
/// let Decision::Hinted(k8s) = hint(false).decision else { panic!() };
/// assert_eq!(k8s.zones["c"].hinted, 0);
/// assert_eq!(k8s.overloaded_zones, ["c"]);
///
/// // Strict: one endpoint of zone a is hinted to zone c, which reaches its minimum.
/// let Decision::Hinted(strict) = hint(true).decision else { panic!() };
/// assert_eq!((strict.zones["a"].hinted, strict.zones["c"].hinted), (4, 1));
/// assert!(strict.overloaded_zones.is_empty());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HintsOptions {
    /// The PreferSameTrafficDistribution feature: accept `PreferSameZone` and `PreferSameNode`.
    /// On by default.
    pub prefer_same_traffic_distribution: bool,
    /// Off by default: hints are assigned exactly as Kubernetes assigns them. Then two
    /// properties one would expect of topology-aware hints do not always hold:
    ///
    /// - every zone with ready worker Nodes gets at least one hinted endpoint;
    /// - every such zone gets between its minimum and its maximum ([`ZoneAllocation`](crate::ZoneAllocation): the
    ///   minimum is ⌈CPU share × ready endpoints ÷ 1.2⌉, so no endpoint carries more than 20%
    ///   above an even share).
    ///
    /// Kubernetes keeps the hints anyway in these cases (the [`AutoReport`](crate::AutoReport) names the zones left
    /// below their minimum in `overloaded_zones`, and hints to zones without CPU in
    /// `zones_without_capacity`):
    ///
    /// 1. **Redistribution stops at fractions.** Endpoints move one at a time from the zone
    ///    furthest above its target to the zone furthest below it, and the moving stops as
    ///    soon as either gap is under half an endpoint (or both are under one). CPU a 45.5%,
    ///    b 45.5%, c 9%; 10 ready endpoints, 5 in a and 5 in b: targets 4.55, 4.55 and 1 (c's
    ///    0.9 raised to its minimum); a and b each have 0.45 to spare, so nothing moves and
    ///    zone c gets **no** endpoint (the example above). Proxies in zone c find no endpoint
    ///    hinted to their zone, ignore the hints and use every endpoint.
    /// 2. **Targets raised to minimums add up to more than the endpoints**, so no surplus
    ///    covers every deficit. CPU a 20%, b 20%, c 60%; 8 ready endpoints, 1 in b and 7 in c:
    ///    targets 2, 2 and 4.8, minimums = maximums 2, 2 and 4. Two endpoints move from c to a,
    ///    then c has 0.2 to spare and the moving stops: a 2, **b 1** (below its minimum 2),
    ///    **c 5** (above its maximum 4).
    /// 3. **Endpoints in a zone without ready worker Nodes** (its Nodes not ready, control
    ///    plane only, or no Node carrying that zone) are hinted to their own zone, which takes
    ///    part in no allocation: they neither move nor count. CPU a 50%, b 50%; ready
    ///    endpoints 1 in a, 1 in b, 2 in zone x: minimums 2 and 2, yet **a and b keep 1
    ///    each**. A hint to x does not let an unchanged slice keep its hints, so every later
    ///    sync rewrites the slice, with the same result.
    ///
    /// Strict mode (`true`) keeps moving hints until every zone with CPU has its minimum
    /// (none above its maximum), or removes every hint ([`RemovalReason::BelowMinimum`](crate::RemovalReason::BelowMinimum)) when
    /// unchanged slices pin too many hints for that; it hints endpoints of zones without
    /// ready worker Nodes to the zone furthest below its target; and it keeps an existing
    /// slice only when each ready endpoint has exactly one zone hint. In the three examples
    /// it gives a 4 b 5 c 1; a 2 b 2 c 4; and a 2 b 2.
    pub strict: bool,
}

impl Default for HintsOptions {
    fn default() -> Self {
        HintsOptions {
            prefer_same_traffic_distribution: true,
            strict: false,
        }
    }
}

/// Everything hinting decided for one Service and address type.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct HintsOutcome {
    /// The address type.
    pub address_type: String,
    /// The mechanism and what it was chosen from.
    pub choice: MechanismChoice,
    /// The decision.
    pub decision: Decision,
    /// The slices with hints filled or removed; `unchanged` holds only slices left as they were.
    pub slices: SliceSet,
    /// Events recorded on the Service.
    pub events: Vec<Event>,
    /// What happened to each unchanged slice that moved (and each one kept, under `Auto`).
    pub notes: Vec<SliceNote>,
    /// The controller's memory after this call: whether this Service has annotation-driven
    /// hints (pass it to the next call for the same Service).
    pub hints_populated: bool,
}

/// Fills or removes the hints of one Service's slices of one address type, as the
/// EndpointSlice reconciler does after computing which slices to create and update.
///
/// `hints_populated` is the controller's memory: whether an earlier call put annotation-driven
/// hints on this Service (it decides the `TopologyAwareHintsEnabled` and
/// `TopologyAwareHintsDisabled` events).
///
/// ```
/// use svcnet_model::{EndpointSlice, Service};
/// use svcnet_topology::{Decision, HintsOptions, SliceSet, ZoneCapacity, reconcile_hints};
///
/// let svc: Service = serde_json::from_str(
///     r#"{"metadata":{"name":"web","namespace":"shop",
///        "annotations":{"service.kubernetes.io/topology-mode":"Auto"}}}"#).unwrap();
/// let slice: EndpointSlice = serde_json::from_str(r#"{"metadata":{"name":"web-1"},
///     "addressType":"IPv4","endpoints":[
///       {"addresses":["10.0.0.1"],"conditions":{"ready":true},"zone":"a"},
///       {"addresses":["10.0.0.2"],"conditions":{"ready":true},"zone":"b"}]}"#).unwrap();
/// let cap = ZoneCapacity::from_zone_cpu([("a", 1000), ("b", 1000)]);
/// let out = reconcile_hints(&svc, "IPv4", SliceSet::existing(vec![slice]), &cap, false,
///     &HintsOptions::default());
/// assert!(matches!(out.decision, Decision::Hinted(_)));
/// assert_eq!(out.slices.to_update.len(), 1);
/// assert_eq!(out.events[0].reason, "TopologyAwareHintsEnabled");
/// ```
pub fn reconcile_hints(
    service: &Service,
    address_type: &str,
    slices: SliceSet,
    capacity: &ZoneCapacity,
    hints_populated: bool,
    options: &HintsOptions,
) -> HintsOutcome {
    let choice = choose_mechanism(service, options.prefer_same_traffic_distribution);
    let mut ctx = Ctx {
        address_type,
        set: slices,
        events: Vec::new(),
        notes: Vec::new(),
        populated: hints_populated,
    };
    let decision = match choice.mechanism {
        Mechanism::TopologyAuto => auto::add_hints(&mut ctx, capacity, options.strict),
        Mechanism::TrafficDistribution(td) => {
            ctx.forget_populated();
            reconcile_traffic_distribution(&mut ctx, td);
            Decision::TrafficDistribution { value: td }
        }
        Mechanism::None => {
            ctx.forget_populated();
            ctx.remove_hints();
            Decision::Cleared
        }
    };
    HintsOutcome {
        address_type: address_type.to_owned(),
        choice,
        decision,
        slices: ctx.set,
        events: ctx.events,
        notes: ctx.notes,
        hints_populated: ctx.populated,
    }
}

fn reconcile_traffic_distribution(ctx: &mut Ctx<'_>, td: TrafficDistribution) {
    let node_hints = td.node_hints();
    let unchanged = std::mem::take(&mut ctx.set.unchanged);
    for s in unchanged {
        match s.endpoints().iter().find_map(|e| needs_update(e, node_hints)) {
            Some(reason) => {
                ctx.notes.push(SliceNote {
                    slice: slice_name(&s),
                    reason,
                });
                ctx.set.to_update.push(s);
            }
            None => ctx.set.unchanged.push(s),
        }
    }
    for s in ctx.set.to_create.iter_mut().chain(ctx.set.to_update.iter_mut()) {
        let s = Arc::make_mut(s);
        for ep in s.endpoints.iter_mut().flatten() {
            if !endpoint_ready(ep) {
                continue;
            }
            let for_zones = ep.zone.as_ref().map(|z| vec![ForZone { name: z.to_string() }]);
            let for_nodes = ep
                .node_name
                .as_ref()
                .filter(|_| node_hints)
                .map(|n| vec![ForNode { name: n.to_string() }]);
            ep.hints = if for_zones.is_some() || for_nodes.is_some() {
                Some(Box::new(EndpointHints { for_zones, for_nodes }))
            } else {
                None
            };
        }
    }
}

/// Why an unchanged slice needs its trafficDistribution hints rewritten, if it does.
fn needs_update(ep: &Endpoint, node_hints: bool) -> Option<SliceReason> {
    if !endpoint_ready(ep) {
        return None;
    }
    let zones = ep
        .hints
        .as_ref()
        .and_then(|h| h.for_zones.as_deref())
        .unwrap_or(&[]);
    let nodes = ep
        .hints
        .as_ref()
        .and_then(|h| h.for_nodes.as_deref())
        .unwrap_or(&[]);
    // The address is copied only for a slice that needs rewriting.
    let address = || first_address(ep);
    match &ep.zone {
        Some(z) if zones.len() != 1 || zones.first().is_none_or(|f| f.name != z) => {
            return Some(SliceReason::HintMissingOrWrong { address: address() });
        }
        None if !zones.is_empty() => return Some(SliceReason::StaleHint { address: address() }),
        _ => {}
    }
    match ep.node_name.as_ref().filter(|_| node_hints) {
        Some(n) if nodes.len() != 1 || nodes.first().is_none_or(|f| f.name != n) => {
            Some(SliceReason::HintMissingOrWrong { address: address() })
        }
        None if !nodes.is_empty() => Some(SliceReason::StaleHint { address: address() }),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_support::*;

    fn cap() -> ZoneCapacity {
        ZoneCapacity::from_zone_cpu([("a", 1000), ("b", 1000)])
    }

    #[test]
    fn prefer_close_hints_each_ready_endpoint_to_its_own_zone() {
        let s = slice(
            "s1",
            vec![
                ep("10.0.0.1", "a", Some(true)),
                ep("10.0.0.2", "b", Some(false)),
                ep("10.0.0.3", "", Some(true)),
            ],
        );
        let out = reconcile_hints(
            &service(None, Some("PreferClose")),
            "IPv4",
            SliceSet::existing(vec![s]),
            &cap(),
            false,
            &HintsOptions::default(),
        );
        assert_eq!(
            out.decision,
            Decision::TrafficDistribution {
                value: TrafficDistribution::PreferClose
            }
        );
        assert_eq!(
            hints_of(&out.slices),
            [
                ("10.0.0.1".into(), vec!["a".into()]),
                ("10.0.0.2".into(), vec![]),
                ("10.0.0.3".into(), vec![])
            ]
        );
        assert_eq!(
            out.notes[0].reason,
            SliceReason::HintMissingOrWrong {
                address: "10.0.0.1".into()
            }
        );
        assert!(out.events.is_empty());
        // Run again on the result: nothing left to change.
        let again = reconcile_hints(
            &service(None, Some("PreferClose")),
            "IPv4",
            SliceSet::existing(out.slices.to_update),
            &cap(),
            false,
            &HintsOptions::default(),
        );
        assert!(again.slices.to_update.is_empty() && again.notes.is_empty());
    }

    #[test]
    fn prefer_same_node_adds_node_hints() {
        let s = slice("s1", vec![ep("10.0.0.1", "a", Some(true))]);
        let out = reconcile_hints(
            &service(None, Some("PreferSameNode")),
            "IPv4",
            SliceSet::existing(vec![s]),
            &cap(),
            false,
            &HintsOptions::default(),
        );
        let h = out.slices.to_update[0].endpoints()[0].hints.clone().unwrap();
        assert_eq!(h.for_nodes.unwrap()[0].name, "node-a");
        assert_eq!(h.for_zones.unwrap()[0].name, "a");
    }

    #[test]
    fn no_mechanism_clears_hints_and_says_so_once() {
        let mut s = slice("s1", vec![ep("10.0.0.1", "a", Some(true))]);
        let clean = slice("s2", vec![ep("10.0.0.2", "b", Some(true))]);
        s.endpoints.as_mut().unwrap()[0].hints = Some(Box::new(EndpointHints {
            for_zones: Some(vec![ForZone { name: "a".into() }]),
            for_nodes: None,
        }));
        let out = reconcile_hints(
            &service(Some("Disabled"), None),
            "IPv4",
            SliceSet::existing(vec![s, clean]),
            &cap(),
            true,
            &HintsOptions::default(),
        );
        assert_eq!(out.decision, Decision::Cleared);
        assert_eq!(out.slices.to_update.len(), 1);
        assert_eq!(out.slices.unchanged.len(), 1);
        assert_eq!(out.notes[0].reason, SliceReason::HintsRemoved);
        assert_eq!(out.events.len(), 1);
        assert_eq!(
            out.events[0].message,
            "Topology Aware Hints has been disabled, addressType: IPv4"
        );
        assert!(!out.hints_populated);
    }
}
