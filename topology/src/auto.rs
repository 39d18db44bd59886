//! Topology-aware routing (`Auto`): CPU-proportional zone hints (`AddHints`).
//!
//! Follows Kubernetes v1.37.2: `AddHints` in
//! `staging/src/k8s.io/endpointslice/topologycache/topologycache.go`, `redistributeHints` and
//! `getHintsByZone` in `topologycache/utils.go`.

use std::sync::Arc;

use std::collections::BTreeMap;

use svcnet_model::{EndpointHints, EndpointSlice, ForZone};

use crate::allocation::{AllocationFailure, ZoneAllocation, allocate, short_zones};
use crate::capacity::{Insufficiency, ZoneCapacity};
use crate::event::{Event, EventType, REASON_ENABLED, message};
use crate::report::{AutoReport, Decision, HintMove, RemovalReason, SliceNote, SliceReason, ZoneReport};
use crate::slice_set::{SliceSet, endpoint_ready, first_address, slice_name};
use crate::state::Ctx;

type Allocations = BTreeMap<String, ZoneAllocation>;

pub(crate) fn add_hints(ctx: &mut Ctx<'_>, capacity: &ZoneCapacity, strict: bool) -> Decision {
    let endpoints: usize = ctx
        .set
        .iter()
        .map(|s| s.endpoints().iter().filter(|e| endpoint_ready(e)).count())
        .sum();
    let ratios = capacity.ratios();
    let zones = ratios.len();
    if ratios.is_empty() {
        let detail = capacity.insufficient.clone().unwrap_or(Insufficiency::NoCpu);
        return ctx.remove_for(RemovalReason::InsufficientNodeInfo { detail });
    }
    let allocations = match allocate(ratios, endpoints) {
        Ok(a) => a,
        Err(AllocationFailure::TooFewEndpoints) => {
            return ctx.remove_for(RemovalReason::TooFewEndpoints { endpoints, zones });
        }
        Err(AllocationFailure::MinimumExceedsThreshold) => {
            return ctx.remove_for(RemovalReason::MinimumExceedsThreshold { endpoints, zones });
        }
    };

    // Unchanged slices keep their hints only when those still fit.
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    let unchanged = std::mem::take(&mut ctx.set.unchanged);
    for s in unchanged {
        let name = slice_name(&s);
        match existing_hints(&s, &counts, &allocations, strict) {
            Ok(by_zone) => {
                for (z, n) in by_zone {
                    add_count(&mut counts, z, n);
                }
                ctx.notes.push(SliceNote {
                    slice: name,
                    reason: SliceReason::HintsStillValid,
                });
                ctx.set.unchanged.push(s);
            }
            Err(reason) => {
                ctx.notes.push(SliceNote { slice: name, reason });
                ctx.set.to_update.push(s);
            }
        }
    }

    // Every ready endpoint being written starts hinted to its own zone.
    let mut missing_zone = None;
    for s in ctx.set.to_create.iter_mut().chain(ctx.set.to_update.iter_mut()) {
        let s = Arc::make_mut(s);
        let mut without_zone = None;
        for ep in s.endpoints.iter_mut().flatten() {
            if !endpoint_ready(ep) {
                ep.hints = None;
                continue;
            }
            let Some(zone) = ep.zone.as_deref().filter(|z| !z.is_empty()) else {
                without_zone = Some(first_address(ep));
                break;
            };
            add_count(&mut counts, zone, 1);
            set_zone_hint(ep, None);
        }
        if let Some(address) = without_zone {
            missing_zone = Some(RemovalReason::EndpointWithoutZone {
                slice: slice_name(s),
                address,
            });
            break;
        }
    }
    if let Some(reason) = missing_zone {
        return ctx.remove_for(reason);
    }

    if strict {
        adopt_zoneless(&mut ctx.set, &allocations, &mut counts);
    }
    let (mut giving, mut receiving) = giving_and_receiving(&allocations, &counts);
    redistribute(&mut ctx.set, &mut giving, &mut receiving, &mut counts);

    if strict && let Err(reason) = raise_to_minimums(&mut ctx.set, &allocations, &mut counts, endpoints) {
        return ctx.remove_for(reason);
    }

    if counts.is_empty() {
        return ctx.remove_for(RemovalReason::NoHintsAllocated);
    }
    if !ctx.populated {
        ctx.events.push(Event::new(
            EventType::Normal,
            REASON_ENABLED,
            message::HINTS_ENABLED,
            ctx.address_type,
        ));
    }
    ctx.populated = true;

    let mut local: BTreeMap<&str, usize> = BTreeMap::new();
    let mut moved = Vec::new();
    for s in ctx.set.iter() {
        let mut name = None;
        for ep in s.endpoints().iter().filter(|e| endpoint_ready(e)) {
            let own = ep.zone.as_deref().unwrap_or("");
            *local.entry(own).or_insert(0) += 1;
            for z in ep.hints.iter().flat_map(|h| h.for_zones.iter().flatten()) {
                if z.name != own {
                    moved.push(HintMove {
                        slice: name.get_or_insert_with(|| slice_name(s)).clone(),
                        address: first_address(ep),
                        from: own.to_owned(),
                        to: z.name.clone(),
                    });
                }
            }
        }
    }
    let zones = allocations
        .iter()
        .map(|(z, a)| {
            let report = ZoneReport {
                allocation: *a,
                local_endpoints: local.get(z.as_str()).copied().unwrap_or(0),
                hinted: counts.get(z).copied().unwrap_or(0),
            };
            (z.clone(), report)
        })
        .collect();
    let zones_without_capacity = counts
        .iter()
        .filter(|(z, _)| !allocations.contains_key(*z))
        .map(|(z, n)| (z.clone(), *n))
        .collect();
    Decision::Hinted(AutoReport {
        endpoints,
        zones,
        zones_without_capacity,
        moved,
        overloaded_zones: short_zones(&counts, ratios),
    })
}

fn own_zone_hint(zone: String) -> Box<EndpointHints> {
    Box::new(EndpointHints {
        for_zones: Some(vec![ForZone { name: zone }]),
        for_nodes: None,
    })
}

/// Hints `ep` to zone `to`, or to its own zone when `to` is `None`: `forZones: [{name}]` and
/// nothing else. Hints that already say exactly that are left as they are.
fn set_zone_hint(ep: &mut svcnet_model::Endpoint, to: Option<&str>) {
    let Some(zone) = to.or(ep.zone.as_deref()) else {
        return;
    };
    let already = ep.hints.as_ref().is_some_and(|h| {
        h.for_nodes.is_none() && matches!(h.for_zones.as_deref(), Some([only]) if only.name == zone)
    });
    if !already {
        ep.hints = Some(own_zone_hint(zone.to_owned()));
    }
}

/// Adds `n` to the count of `zone`, allocating its name only the first time.
fn add_count(counts: &mut BTreeMap<String, usize>, zone: &str, n: usize) {
    match counts.get_mut(zone) {
        Some(c) => *c += n,
        None => {
            counts.insert(zone.to_owned(), n);
        }
    }
}

/// The hints per zone of an unchanged slice, or why the slice must be rewritten: a ready
/// endpoint without a zone hint, a hint to a zone without CPU, or a zone pushed over its
/// maximum by this slice (strict mode: also several zone hints on one endpoint).
fn existing_hints<'s>(
    s: &'s EndpointSlice,
    counted: &BTreeMap<String, usize>,
    allocations: &Allocations,
    strict: bool,
) -> Result<BTreeMap<&'s str, usize>, SliceReason> {
    let mut by_zone: BTreeMap<&str, usize> = BTreeMap::new();
    for ep in s.endpoints().iter().filter(|e| endpoint_ready(e)) {
        let zones = ep
            .hints
            .as_ref()
            .and_then(|h| h.for_zones.as_deref())
            .unwrap_or(&[]);
        if zones.is_empty() {
            return Err(SliceReason::EndpointWithoutHint {
                address: first_address(ep),
            });
        }
        if strict && zones.len() > 1 {
            return Err(SliceReason::SeveralZoneHints {
                address: first_address(ep),
            });
        }
        for z in zones {
            if !allocations.contains_key(&z.name) {
                return Err(SliceReason::HintForZoneWithoutCapacity {
                    address: first_address(ep),
                    zone: z.name.clone(),
                });
            }
            *by_zone.entry(z.name.as_str()).or_insert(0) += 1;
        }
    }
    for (zone, n) in &by_zone {
        let hinted = n + counted.get(*zone).copied().unwrap_or(0);
        // Every hinted zone was checked to have an allocation above.
        let maximum = allocations[*zone].maximum;
        if hinted > maximum {
            return Err(SliceReason::ZoneOverMaximum {
                zone: (*zone).to_owned(),
                hinted,
                maximum,
            });
        }
    }
    Ok(by_zone)
}

/// Whole endpoints each zone gives away or receives: zones over their target give, zones under
/// it receive, one unit at a time from the largest surplus to the largest deficit, until either
/// side has less than half an endpoint (or both less than one) left.
fn giving_and_receiving(
    allocations: &Allocations,
    counts: &BTreeMap<String, usize>,
) -> (BTreeMap<String, usize>, BTreeMap<String, usize>) {
    let mut surplus: BTreeMap<&str, f64> = BTreeMap::new();
    let mut deficit: BTreeMap<&str, f64> = BTreeMap::new();
    for (zone, a) in allocations {
        let have = counts.get(zone).copied().unwrap_or(0) as f64;
        if have > a.desired {
            surplus.insert(zone, have - a.desired);
        } else if have < a.desired {
            deficit.insert(zone, a.desired - have);
        }
    }
    let mut giving = BTreeMap::new();
    let mut receiving = BTreeMap::new();
    while let (Some((g, give)), Some((r, take))) = (largest(&mut surplus), largest(&mut deficit)) {
        if (*give < 1.0 && *take < 1.0) || *give < 0.5 || *take < 0.5 {
            break;
        }
        *giving.entry(g.to_owned()).or_insert(0) += 1;
        *receiving.entry(r.to_owned()).or_insert(0) += 1;
        *give -= 1.0;
        *take -= 1.0;
    }
    (giving, receiving)
}

/// The zone with the largest positive value, with that value to change in place (no second
/// lookup that could miss); ties go to the first zone by name.
fn largest<'m, 'a>(m: &'m mut BTreeMap<&'a str, f64>) -> Option<(&'a str, &'m mut f64)> {
    let mut best: Option<(&'a str, &'m mut f64)> = None;
    for (&z, v) in m.iter_mut() {
        if *v > best.as_ref().map_or(0.0, |b| *b.1) {
            best = Some((z, v));
        }
    }
    best
}

/// Re-hints ready endpoints of giving zones (in slice order) to receiving zones (first by
/// name with units left; Kubernetes takes whichever its map yields first).
fn redistribute(
    set: &mut SliceSet,
    giving: &mut BTreeMap<String, usize>,
    receiving: &mut BTreeMap<String, usize>,
    counts: &mut BTreeMap<String, usize>,
) {
    for s in set.to_create.iter_mut().chain(set.to_update.iter_mut()) {
        let s = Arc::make_mut(s);
        for ep in s.endpoints.iter_mut().flatten() {
            if !endpoint_ready(ep) {
                continue;
            }
            if giving.is_empty() || receiving.is_empty() {
                return;
            }
            let Some(zone) = ep.zone.as_deref().filter(|z| !z.is_empty()) else {
                continue;
            };
            let Some(left) = giving.get_mut(zone) else {
                continue;
            };
            let Some((to, room)) = receiving.iter_mut().next() else {
                return;
            };
            let to = to.clone();
            *left -= 1;
            if *left == 0 {
                giving.remove(zone);
            }
            *room -= 1;
            if *room == 0 {
                receiving.remove(&to);
            }
            if let Some(c) = counts.get_mut(zone) {
                *c = c.saturating_sub(1);
            }
            add_count(counts, &to, 1);
            ep.hints = Some(own_zone_hint(to));
        }
    }
}

/// Strict mode: endpoints in zones without CPU (hinted to their own zone, which no proxy
/// reads and which the next sync rejects) are hinted to the zone furthest below its target.
fn adopt_zoneless(set: &mut SliceSet, allocations: &Allocations, counts: &mut BTreeMap<String, usize>) {
    for s in set.to_create.iter_mut().chain(set.to_update.iter_mut()) {
        let s = Arc::make_mut(s);
        for ep in s.endpoints.iter_mut().flatten() {
            let Some(own) = ep.zone.as_deref().map(str::to_owned) else {
                continue;
            };
            if !endpoint_ready(ep) || allocations.contains_key(&own) {
                continue;
            }
            let neediest = allocations
                .iter()
                .map(|(z, a)| (z, a.desired - counts.get(z).copied().unwrap_or(0) as f64))
                .fold(None::<(&String, f64)>, |best, c| match best {
                    Some(b) if b.1 >= c.1 => Some(b),
                    _ => Some(c),
                });
            let Some((to, _)) = neediest else { return };
            let to = to.clone();
            if let Some(c) = counts.get_mut(&own) {
                *c = c.saturating_sub(1);
                if *c == 0 {
                    counts.remove(&own);
                }
            }
            *counts.entry(to.clone()).or_insert(0) += 1;
            ep.hints = Some(own_zone_hint(to));
        }
    }
}

/// Strict mode: moves hints from zones above their minimum (zones without CPU count as having
/// a minimum of zero) to zones below it, largest shortfall first, until every zone has its
/// minimum. Only endpoints of slices being written can move.
fn raise_to_minimums(
    set: &mut SliceSet,
    allocations: &Allocations,
    counts: &mut BTreeMap<String, usize>,
    endpoints: usize,
) -> Result<(), RemovalReason> {
    let floor = |z: &str| allocations.get(z).map_or(0, |a| a.minimum);
    let target = |z: &str| allocations.get(z).map_or(0.0, |a| a.desired);
    loop {
        let short = allocations
            .iter()
            .map(|(z, a)| (z, a.minimum.saturating_sub(counts.get(z).copied().unwrap_or(0))))
            .filter(|(_, gap)| *gap > 0)
            .fold(None::<(&String, usize)>, |best, c| match best {
                Some(b) if b.1 >= c.1 => Some(b),
                _ => Some(c),
            });
        let Some((short_zone, _)) = short else {
            return Ok(());
        };
        let short_zone = short_zone.clone();
        // Candidate givers: above their floor, largest surplus over target first.
        let mut givers: Vec<(String, f64)> = counts
            .iter()
            .filter(|(z, n)| **n > floor(z))
            .map(|(z, n)| (z.clone(), *n as f64 - target(z)))
            .collect();
        givers.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        let mut done = false;
        'givers: for (giver, _) in givers {
            for s in set.to_create.iter_mut().chain(set.to_update.iter_mut()) {
                let s = Arc::make_mut(s);
                for ep in s.endpoints.iter_mut().flatten() {
                    let hinted_here = ep
                        .hints
                        .as_ref()
                        .and_then(|h| h.for_zones.as_deref())
                        .is_some_and(|z| z.len() == 1 && z[0].name == giver);
                    if !endpoint_ready(ep) || !hinted_here {
                        continue;
                    }
                    ep.hints = Some(own_zone_hint(short_zone.clone()));
                    if let Some(c) = counts.get_mut(&giver) {
                        *c = c.saturating_sub(1);
                    }
                    *counts.entry(short_zone.clone()).or_insert(0) += 1;
                    done = true;
                    break 'givers;
                }
            }
        }
        if !done {
            let minimum = floor(&short_zone);
            return Err(RemovalReason::BelowMinimum {
                hinted: counts.get(&short_zone).copied().unwrap_or(0),
                zone: short_zone,
                minimum,
                endpoints,
                zones: allocations.len(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use svcnet_model::{EndpointHints, EndpointSlice, ForZone};

    use crate::test_support::*;
    use crate::*;

    fn auto(slices: SliceSet, cap: &ZoneCapacity, strict: bool) -> HintsOutcome {
        let opts = HintsOptions {
            strict,
            ..Default::default()
        };
        reconcile_hints(&service(Some("Auto"), None), "IPv4", slices, cap, false, &opts)
    }

    fn zones(spec: &[(&str, usize)]) -> Vec<svcnet_model::Endpoint> {
        let mut n = 0;
        let mut out = Vec::new();
        for (z, count) in spec {
            for _ in 0..*count {
                n += 1;
                out.push(ep(&format!("10.0.0.{n}"), z, Some(true)));
            }
        }
        out
    }

    fn report(o: &HintsOutcome) -> &AutoReport {
        match &o.decision {
            Decision::Hinted(r) => r,
            other => panic!("not hinted: {other:?}"),
        }
    }

    #[test]
    fn worked_example_nine_endpoints_three_zones() {
        let cap = ZoneCapacity::from_zone_cpu([("a", 1), ("b", 1), ("c", 1)]);
        let out = auto(
            SliceSet::existing(vec![slice("s", zones(&[("a", 4), ("b", 3), ("c", 2)]))]),
            &cap,
            false,
        );
        let r = report(&out);
        assert_eq!(
            r.moved,
            [HintMove {
                slice: "s".into(),
                address: "10.0.0.1".into(),
                from: "a".into(),
                to: "c".into()
            }]
        );
        assert!(r.zones.values().all(|z| z.hinted == 3));
        assert!(r.overloaded_zones.is_empty());
        assert_eq!(out.events[0].reason, REASON_ENABLED);
        assert_eq!(
            out.notes[0].reason,
            SliceReason::EndpointWithoutHint {
                address: "10.0.0.1".into()
            }
        );
        assert!(out.hints_populated);
    }

    #[test]
    fn removal_reasons_and_events() {
        let three = ZoneCapacity::from_zone_cpu([("a", 1), ("b", 1), ("c", 1)]);
        let out = auto(
            SliceSet::existing(vec![slice("s", zones(&[("a", 2), ("b", 2)]))]),
            &three,
            false,
        );
        assert_eq!(
            out.decision,
            Decision::Removed {
                reason: RemovalReason::MinimumExceedsThreshold {
                    endpoints: 4,
                    zones: 3
                }
            }
        );
        assert_eq!(out.events[0].type_, EventType::Warning);
        assert!(
            out.events[0]
                .message
                .starts_with("Unable to allocate minimum required endpoints")
        );

        let out = auto(
            SliceSet::existing(vec![slice("s", zones(&[("a", 2)]))]),
            &three,
            false,
        );
        assert_eq!(
            out.decision,
            Decision::Removed {
                reason: RemovalReason::TooFewEndpoints {
                    endpoints: 2,
                    zones: 3
                }
            }
        );

        let none = ZoneCapacity::from_zone_cpu([("a", 1)]);
        let out = auto(
            SliceSet::existing(vec![slice("s", zones(&[("a", 2)]))]),
            &none,
            false,
        );
        let Decision::Removed { reason } = &out.decision else {
            panic!()
        };
        assert!(reason.detail().contains("one zone only"), "{}", reason.detail());
        assert_eq!(
            out.events[0].message,
            format!("{}, addressType: IPv4", message::INSUFFICIENT_NODE_INFO)
        );

        let two = ZoneCapacity::from_zone_cpu([("a", 1), ("b", 1)]);
        let mut eps = zones(&[("a", 3), ("b", 2)]);
        eps.push(ep("10.9.9.9", "", Some(true)));
        let out = auto(SliceSet::existing(vec![slice("s", eps)]), &two, false);
        assert_eq!(
            out.decision,
            Decision::Removed {
                reason: RemovalReason::EndpointWithoutZone {
                    slice: "s".into(),
                    address: "10.9.9.9".into()
                }
            }
        );
        assert!(hints_of(&out.slices).iter().all(|(_, z)| z.is_empty()));
        assert!(!out.hints_populated);
    }

    #[test]
    fn valid_existing_hints_stay_and_invalid_ones_move() {
        let two = ZoneCapacity::from_zone_cpu([("a", 1), ("b", 1)]);
        let first = auto(
            SliceSet::existing(vec![slice("s", zones(&[("a", 2), ("b", 2)]))]),
            &two,
            false,
        );
        // The hinted slice, seen again: unchanged, no event when the controller remembers.
        let opts = HintsOptions::default();
        let svc = service(Some("Auto"), None);
        let again = reconcile_hints(
            &svc,
            "IPv4",
            SliceSet::existing(first.slices.to_update.clone()),
            &two,
            true,
            &opts,
        );
        assert_eq!(again.slices.unchanged.len(), 1);
        assert_eq!(again.notes[0].reason, SliceReason::HintsStillValid);
        assert!(again.events.is_empty());

        // A hint to a zone without capacity forces a rewrite.
        let mut stale = EndpointSlice::clone(&first.slices.to_update[0]);
        stale.endpoints.as_mut().unwrap()[0].hints = Some(Box::new(EndpointHints {
            for_zones: Some(vec![ForZone { name: "z".into() }]),
            for_nodes: None,
        }));
        let out = reconcile_hints(&svc, "IPv4", SliceSet::existing(vec![stale]), &two, true, &opts);
        assert_eq!(
            out.notes[0].reason,
            SliceReason::HintForZoneWithoutCapacity {
                address: "10.0.0.1".into(),
                zone: "z".into()
            }
        );
        assert_eq!(out.slices.to_update.len(), 1);

        // Two slices each hinting everything to a: the second pushes a over its maximum.
        let mut s1 = slice("s1", zones(&[("a", 2)]));
        let mut s2 = slice(
            "s2",
            vec![ep("10.0.1.1", "b", Some(true)), ep("10.0.1.2", "b", Some(true))],
        );
        for s in [&mut s1, &mut s2] {
            for e in s.endpoints.as_mut().unwrap() {
                e.hints = Some(Box::new(EndpointHints {
                    for_zones: Some(vec![ForZone { name: "a".into() }]),
                    for_nodes: None,
                }));
            }
        }
        let out = reconcile_hints(&svc, "IPv4", SliceSet::existing(vec![s1, s2]), &two, true, &opts);
        assert_eq!(
            out.notes[1].reason,
            SliceReason::ZoneOverMaximum {
                zone: "a".into(),
                hinted: 4,
                maximum: 2
            }
        );
        assert_eq!(
            hints_of(&out.slices)
                .iter()
                .filter(|(_, z)| z == &["b".to_string()])
                .count(),
            2
        );
    }

    #[test]
    fn not_ready_endpoints_lose_their_hints_when_rewritten() {
        let two = ZoneCapacity::from_zone_cpu([("a", 1), ("b", 1)]);
        let mut eps = zones(&[("a", 1), ("b", 1)]);
        let mut sleepy = ep("10.0.0.9", "a", None);
        sleepy.hints = Some(Box::new(EndpointHints {
            for_zones: Some(vec![ForZone { name: "b".into() }]),
            for_nodes: None,
        }));
        eps.push(sleepy);
        let out = auto(
            SliceSet {
                to_update: vec![slice("s", eps).into()],
                ..Default::default()
            },
            &two,
            false,
        );
        assert_eq!(report(&out).endpoints, 2);
        assert!(out.slices.to_update[0].endpoints()[2].hints.is_none());
    }

    /// Kubernetes stops moving hints when no zone has half an endpoint to spare, which can
    /// leave a zone with none: 10 endpoints, CPU 45.5% / 45.5% / 9%, endpoints 5 / 5 / 0.
    #[test]
    fn kubernetes_can_leave_a_zone_short_and_strict_mode_does_not() {
        let cap = ZoneCapacity::from_zone_cpu([("a", 455), ("b", 455), ("c", 90)]);
        let set = || SliceSet::existing(vec![slice("s", zones(&[("a", 5), ("b", 5)]))]);
        let k8s = auto(set(), &cap, false);
        let r = report(&k8s);
        assert_eq!(r.zones["c"].hinted, 0);
        assert_eq!(r.overloaded_zones, ["c"]);
        let strict = auto(set(), &cap, true);
        let r = report(&strict);
        assert_eq!(r.zones["c"].hinted, 1);
        assert!(r.overloaded_zones.is_empty());
        assert_eq!(r.moved.len(), 1);
    }

    /// Kubernetes raises each target to its minimum, so targets can add up to more than the
    /// endpoints: 8 endpoints, CPU 20% / 20% / 60%, endpoints 0 / 1 / 7.
    #[test]
    fn kubernetes_can_leave_a_zone_over_its_maximum_and_strict_mode_does_not() {
        let cap = ZoneCapacity::from_zone_cpu([("a", 100), ("b", 100), ("c", 300)]);
        let set = || SliceSet::existing(vec![slice("s", zones(&[("b", 1), ("c", 7)]))]);
        let hinted = |out: &HintsOutcome| {
            let r = report(out);
            ["a", "b", "c"].map(|z| r.zones[z].hinted)
        };
        let k8s = auto(set(), &cap, false);
        assert_eq!(hinted(&k8s), [2, 1, 5]);
        assert_eq!(report(&k8s).zones["c"].allocation.maximum, 4);
        assert_eq!(report(&k8s).overloaded_zones, ["b"]);
        let strict = auto(set(), &cap, true);
        assert_eq!(hinted(&strict), [2, 2, 4]);
        assert!(report(&strict).overloaded_zones.is_empty());
    }

    /// Kubernetes hints endpoints of a zone without ready worker Nodes to that zone, where
    /// they count for no allocation: CPU 50% / 50%, endpoints a 1, b 1, x 2.
    #[test]
    fn kubernetes_keeps_hints_to_a_zone_without_capacity_and_strict_mode_does_not() {
        let cap = ZoneCapacity::from_zone_cpu([("a", 1), ("b", 1)]);
        let set = || SliceSet::existing(vec![slice("s", zones(&[("a", 1), ("b", 1), ("x", 2)]))]);
        let k8s = auto(set(), &cap, false);
        let r = report(&k8s);
        assert_eq!((r.zones["a"].hinted, r.zones["b"].hinted), (1, 1));
        assert_eq!(r.zones_without_capacity["x"], 2);
        assert_eq!(r.overloaded_zones, ["a", "b"]);
        let strict = auto(set(), &cap, true);
        let r = report(&strict);
        assert_eq!((r.zones["a"].hinted, r.zones["b"].hinted), (2, 2));
        assert!(r.zones_without_capacity.is_empty() && r.overloaded_zones.is_empty());
    }

    #[test]
    fn strict_mode_removes_hints_when_minimums_cannot_be_reached() {
        // Everything pinned in a valid unchanged slice for zone a except one movable endpoint.
        let cap = ZoneCapacity::from_zone_cpu([("a", 455), ("b", 455), ("c", 90)]);
        let mut pinned = slice("pinned", zones(&[("a", 5), ("b", 4)]));
        for e in pinned.endpoints.as_mut().unwrap() {
            let z = e.zone.clone().unwrap().to_string();
            e.hints = Some(Box::new(EndpointHints {
                for_zones: Some(vec![ForZone { name: z }]),
                for_nodes: None,
            }));
        }
        let fresh = slice("fresh", vec![ep("10.1.0.1", "b", Some(true))]);
        let set = SliceSet {
            to_create: vec![fresh.into()],
            unchanged: vec![pinned.into()],
            ..Default::default()
        };
        let out = auto(set, &cap, true);
        let Decision::Hinted(r) = &out.decision else {
            panic!("{:?}", out.decision)
        };
        // The fresh endpoint of b is the one that moves to c.
        assert_eq!(r.zones["c"].hinted, 1);
        assert_eq!(r.moved[0].address, "10.1.0.1");
    }
}
