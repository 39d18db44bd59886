//! Topology-aware routing (`Auto`): CPU-proportional zone hints (`AddHints`).

use std::collections::BTreeMap;

use svcnet_model::{EndpointHints, EndpointSlice, ForZone};

use crate::allocation::{AllocationFailure, ZoneAllocation, allocate, short_zones};
use crate::capacity::{Insufficiency, ZoneCapacity};
use crate::event::{Event, EventType, REASON_ENABLED, message};
use crate::hints::{
    AutoReport, Ctx, Decision, HintMove, RemovalReason, SliceNote, SliceReason, ZoneReport, endpoint_ready,
    first_address, slice_name,
};

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
                    *counts.entry(z).or_insert(0) += n;
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
    'assign: for s in ctx.set.to_create.iter_mut().chain(ctx.set.to_update.iter_mut()) {
        let name = slice_name(s);
        for ep in s.endpoints.iter_mut().flatten() {
            if !endpoint_ready(ep) {
                ep.hints = None;
                continue;
            }
            let Some(zone) = ep.zone.clone().filter(|z| !z.is_empty()) else {
                missing_zone = Some(RemovalReason::EndpointWithoutZone {
                    slice: name,
                    address: first_address(ep),
                });
                break 'assign;
            };
            *counts.entry(zone.clone()).or_insert(0) += 1;
            ep.hints = Some(own_zone_hint(zone));
        }
    }
    if let Some(reason) = missing_zone {
        return ctx.remove_for(reason);
    }

    let (mut giving, mut receiving) = giving_and_receiving(&allocations, &counts);
    let mut moved = Vec::new();
    redistribute(&mut ctx.set, &mut giving, &mut receiving, &mut counts, &mut moved);

    if strict
        && let Err(reason) = raise_to_minimums(&mut ctx.set, &allocations, &mut counts, &mut moved, endpoints)
    {
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
    for ep in ctx
        .set
        .iter()
        .flat_map(|s| s.endpoints())
        .filter(|e| endpoint_ready(e))
    {
        if let Some(z) = ep.zone.as_deref() {
            *local.entry(z).or_insert(0) += 1;
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

fn own_zone_hint(zone: String) -> EndpointHints {
    EndpointHints {
        for_zones: Some(vec![ForZone { name: zone }]),
        for_nodes: None,
    }
}

/// The hints per zone of an unchanged slice, or why the slice must be rewritten: a ready
/// endpoint without a zone hint, a hint to a zone without CPU, or a zone pushed over its
/// maximum by this slice (strict mode: also several zone hints on one endpoint).
fn existing_hints(
    s: &EndpointSlice,
    counted: &BTreeMap<String, usize>,
    allocations: &Allocations,
    strict: bool,
) -> Result<BTreeMap<String, usize>, SliceReason> {
    let mut by_zone: BTreeMap<String, usize> = BTreeMap::new();
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
            *by_zone.entry(z.name.clone()).or_insert(0) += 1;
        }
    }
    for (zone, n) in &by_zone {
        let hinted = n + counted.get(zone).copied().unwrap_or(0);
        let maximum = allocations.get(zone).map_or(0, |a| a.maximum);
        if hinted > maximum {
            return Err(SliceReason::ZoneOverMaximum {
                zone: zone.clone(),
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
    while let (Some((g, give)), Some((r, take))) = (largest(&surplus), largest(&deficit)) {
        if (give < 1.0 && take < 1.0) || give < 0.5 || take < 0.5 {
            break;
        }
        *giving.entry(g.to_owned()).or_insert(0) += 1;
        *receiving.entry(r.to_owned()).or_insert(0) += 1;
        if let Some(v) = surplus.get_mut(g) {
            *v -= 1.0;
        }
        if let Some(v) = deficit.get_mut(r) {
            *v -= 1.0;
        }
    }
    (giving, receiving)
}

/// The zone with the largest positive value; ties go to the first zone by name.
fn largest<'a>(m: &BTreeMap<&'a str, f64>) -> Option<(&'a str, f64)> {
    let mut best: Option<(&str, f64)> = None;
    for (&z, &v) in m {
        if v > best.map_or(0.0, |b| b.1) {
            best = Some((z, v));
        }
    }
    best
}

/// Re-hints ready endpoints of giving zones (in slice order) to receiving zones (first by
/// name with units left; Kubernetes takes whichever its map yields first).
fn redistribute(
    set: &mut crate::hints::SliceSet,
    giving: &mut BTreeMap<String, usize>,
    receiving: &mut BTreeMap<String, usize>,
    counts: &mut BTreeMap<String, usize>,
    moved: &mut Vec<HintMove>,
) {
    for s in set.to_create.iter_mut().chain(set.to_update.iter_mut()) {
        let name = slice_name(s);
        for ep in s.endpoints.iter_mut().flatten() {
            if !endpoint_ready(ep) {
                continue;
            }
            if giving.is_empty() || receiving.is_empty() {
                return;
            }
            let Some(zone) = ep.zone.clone().filter(|z| !z.is_empty()) else {
                continue;
            };
            let Some(left) = giving.get_mut(&zone) else {
                continue;
            };
            let Some((to, room)) = receiving.iter_mut().next() else {
                return;
            };
            let to = to.clone();
            *left -= 1;
            if *left == 0 {
                giving.remove(&zone);
            }
            *room -= 1;
            if *room == 0 {
                receiving.remove(&to);
            }
            if let Some(c) = counts.get_mut(&zone) {
                *c = c.saturating_sub(1);
            }
            *counts.entry(to.clone()).or_insert(0) += 1;
            ep.hints = Some(own_zone_hint(to.clone()));
            moved.push(HintMove {
                slice: name.clone(),
                address: first_address(ep),
                from: zone,
                to,
            });
        }
    }
}

/// Strict mode: moves hints from zones above their minimum (zones without CPU count as having
/// a minimum of zero) to zones below it, largest shortfall first, until every zone has its
/// minimum. Only endpoints of slices being written can move.
fn raise_to_minimums(
    set: &mut crate::hints::SliceSet,
    allocations: &Allocations,
    counts: &mut BTreeMap<String, usize>,
    moved: &mut Vec<HintMove>,
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
                let name = slice_name(s);
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
                    moved.retain(|m| !(m.slice == name && m.address == first_address(ep)));
                    let own = ep.zone.clone().unwrap_or_default();
                    if own != short_zone {
                        moved.push(HintMove {
                            slice: name.clone(),
                            address: first_address(ep),
                            from: own,
                            to: short_zone.clone(),
                        });
                    }
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
