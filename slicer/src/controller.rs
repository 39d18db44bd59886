//! One sync of the EndpointSlice controller over a cluster's objects, slicing and topology hints
//! together, as kube-controller-manager v1.37.2 runs them (`endpointslice_controller.go`
//! `syncService`: the reconciler, then `topologycache` / `trafficdist` on the same slices); the
//! hints-only pass over existing slices; and the mirroring controller's sync of every
//! selector-less Service (`endpointslicemirroring_controller.go`).
//!
//! Follows Kubernetes v1.37.2: `pkg/controller/endpointslice/endpointslice_controller.go`,
//! `staging/src/k8s.io/endpointslice/reconciler.go`,
//! `staging/src/k8s.io/endpointslice/topologycache/topologycache.go`,
//! `staging/src/k8s.io/endpointslice/trafficdist/trafficdist.go`,
//! `pkg/controller/endpointslicemirroring/endpointslicemirroring_controller.go`.
//!
//! Slices go in and come out as `Arc<EndpointSlice>`: a slice that nothing rewrites is never
//! copied, and slices are grouped by Service once, not scanned per Service.

use std::collections::VecDeque;
use std::mem;
use std::sync::Arc;

use svcnet_model::{EndpointSlice, Endpoints, Pod, Service, address_type, labels};
use svcnet_topology::{
    HintsOptions, HintsOutcome, Mechanism, SliceSet, ZoneCapacity, choose_mechanism, reconcile_hints,
};

use crate::error::SliceError;
use crate::hash::{FastMap, FastSet};
use crate::mirror::{MirrorEvent, MirrorOptions, mirror_shared};
use crate::names::NameSource;
use crate::nodes::NodeZones;
use crate::plan::Plan;
use crate::reconcile::{ServiceSlices, checked};
use crate::service::Options;
use svcnet_model::hash::{KeyedMap, KeyedSet, KeyedState};

/// True when the EndpointSlice controller reads `slice` as its own: its
/// `endpointslice.kubernetes.io/managed-by` label names the controller, or is absent (inputs
/// written by hand often omit it).
pub(crate) fn managed_by_controller(slice: &EndpointSlice) -> bool {
    slice
        .metadata
        .label(labels::MANAGED_BY)
        .is_none_or(|m| m == labels::CONTROLLER_NAME)
}

/// True when the mirroring controller reads `slice` as its own: its `managed-by` label names
/// the mirroring controller, or is absent.
pub(crate) fn managed_by_mirroring(slice: &EndpointSlice) -> bool {
    slice
        .metadata
        .label(labels::MANAGED_BY)
        .is_none_or(|m| m == labels::MIRRORING_CONTROLLER_NAME)
}

/// Slices grouped by the Service they are labelled with (`kubernetes.io/service-name`), built
/// once and looked up per Service. A slice belongs to Service `ns/name` when it carries the
/// label `name` and lives in `ns`, or has no namespace (an input written by hand).
#[derive(Debug, Clone, Default)]
pub(crate) struct SlicesByService<'a> {
    exact: KeyedMap<(&'a str, &'a str), Vec<usize>>,
    any_namespace: KeyedMap<&'a str, Vec<usize>>,
}

impl<'a> SlicesByService<'a> {
    /// Groups `slices`, hashing names under `key`; positions count from 0 in the order given.
    pub fn new(slices: impl IntoIterator<Item = &'a EndpointSlice>, key: KeyedState) -> Self {
        let mut g = SlicesByService {
            exact: KeyedMap::with_hasher(key),
            any_namespace: KeyedMap::with_hasher(key),
        };
        for (i, s) in slices.into_iter().enumerate() {
            let Some(name) = s.service_name() else { continue };
            let ns = s.metadata.namespace();
            if ns.is_empty() {
                g.any_namespace.entry(name).or_default().push(i);
            } else {
                g.exact.entry((ns, name)).or_default().push(i);
            }
        }
        g
    }

    /// The positions of the slices labelled for Service `namespace/name`, in the order given.
    pub fn labelled(&self, namespace: &str, name: &str) -> Vec<usize> {
        let exact = self.exact.get(&(namespace, name)).map_or(&[][..], Vec::as_slice);
        let any = self.any_namespace.get(name).map_or(&[][..], Vec::as_slice);
        if any.is_empty() {
            return exact.to_vec();
        }
        let mut out = Vec::with_capacity(exact.len() + any.len());
        let (mut i, mut j) = (0, 0);
        while i < exact.len() || j < any.len() {
            match (exact.get(i), any.get(j)) {
                (Some(&a), Some(&b)) if a < b => {
                    out.push(a);
                    i += 1;
                }
                (Some(&a), None) => {
                    out.push(a);
                    i += 1;
                }
                (_, Some(&b)) => {
                    out.push(b);
                    j += 1;
                }
                (None, None) => break,
            }
        }
        out
    }
}

/// Whether the controller populated a Service's hints earlier (its one bit of memory), read
/// from the slices when the caller does not keep it: zone hints found on them count as its own,
/// unless the Service's `trafficDistribution` explains them.
pub fn hints_populated<'s>(
    service: &Service,
    slices: impl IntoIterator<Item = &'s EndpointSlice>,
    options: &HintsOptions,
) -> bool {
    let mechanism = choose_mechanism(service, options.prefer_same_traffic_distribution).mechanism;
    !matches!(mechanism, Mechanism::TrafficDistribution(_))
        && slices.into_iter().any(|s| {
            s.endpoints().iter().any(|e| {
                e.hints
                    .as_ref()
                    .is_some_and(|h| h.for_zones.as_ref().is_some_and(|z| !z.is_empty()))
            })
        })
}

/// Topology hinting within a sync: the zones' capacity and the switches.
#[derive(Debug, Clone, Copy)]
pub struct Hinting<'a> {
    /// Allocatable CPU per zone.
    pub capacity: &'a ZoneCapacity,
    /// Switches of hinting.
    pub options: HintsOptions,
}

/// What one sync did to one Service.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServiceSync {
    /// The writes, hints included (creates, then updates, then deletes).
    pub plan: Plan,
    /// The Service's slices once the plan is applied: the given ones in order (rewritten ones
    /// replaced), then the created ones.
    pub slices: Vec<Arc<EndpointSlice>>,
    /// Hinting's outcome per address type it ran for (IPv4, then IPv6). Their `slices` are
    /// empty: the slices are in `plan` and `slices`.
    pub hints: Vec<HintsOutcome>,
    /// Whether the controller's hints are populated after the sync (its memory for the next).
    pub hints_populated: bool,
}

/// A Service the controller skipped, or a slice it left alone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Skipped {
    /// The Service has no selector: the EndpointSlice controller does not manage its slices.
    NoSelector {
        /// The Service's position.
        service: usize,
    },
    /// A slice labelled for the Service is managed by another controller.
    ForeignSlice {
        /// The Service's position.
        service: usize,
        /// The slice's position.
        slice: usize,
    },
}

/// What one sync did to every Service of a cluster.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ClusterSync {
    /// Every Service's writes, Service by Service.
    pub plan: Plan,
    /// The slices after the plan. From [`Controller::sync_all`]: the slices of the Services
    /// synced, Service by Service. From [`Controller::hint_all`]: every given slice, in order,
    /// the rewritten ones replaced.
    pub slices: Vec<Arc<EndpointSlice>>,
    /// Hinting's outcomes, each with the position of its Service.
    pub hints: Vec<(usize, HintsOutcome)>,
    /// Services that could not be synced (other than those without a selector or of type
    /// ExternalName, which the controller skips silently).
    pub errors: Vec<SliceError>,
    /// Services and slices [`Controller::hint_all`] left alone.
    pub skipped: Vec<Skipped>,
}

/// One sync of the EndpointSlice controller: what every Service's sync shares.
///
/// ```
/// use std::sync::Arc;
/// use svcnet_model::{Node, Pod, Service};
/// use svcnet_slicer::{Controller, Hinting, NodeZones, Options, SequentialNames};
/// use svcnet_topology::{HintsOptions, ZoneCapacity};
///
/// let svc: Service = serde_json::from_str(r#"{"metadata":{"name":"web","namespace":"shop","uid":"u1"},
///     "spec":{"selector":{"app":"web"},"ports":[{"port":80}],"ipFamilies":["IPv4"],
///     "trafficDistribution":"PreferSameZone"}}"#).unwrap();
/// let pod: Pod = serde_json::from_str(r#"{"metadata":{"name":"web-1","namespace":"shop",
///     "labels":{"app":"web"}},"spec":{"nodeName":"n1"},
///     "status":{"podIPs":[{"ip":"10.0.0.1"}],"conditions":[{"type":"Ready","status":"True"}]}}"#).unwrap();
/// let node: Node = serde_json::from_str(r#"{"metadata":{"name":"n1",
///     "labels":{"topology.kubernetes.io/zone":"a"}},"status":{"allocatable":{"cpu":"2"},
///     "conditions":[{"type":"Ready","status":"True"}]}}"#).unwrap();
///
/// let all_nodes = [node];
/// let nodes = NodeZones::from_nodes(&all_nodes);
/// let capacity = ZoneCapacity::from_nodes(&all_nodes).unwrap();
/// let options = Options::default();
/// let controller = Controller {
///     nodes: &nodes,
///     options: &options,
///     hinting: Some(Hinting { capacity: &capacity, options: HintsOptions::default() }),
/// };
/// let done = controller.sync_service(&svc, [&pod], Vec::new(), None, &mut SequentialNames::new())?;
/// assert_eq!(done.plan.create.len(), 1);
/// // Sliced and hinted in one sync: the endpoint is hinted to its own zone.
/// let ep = &done.slices[0].endpoints()[0];
/// assert_eq!(ep.hints.as_ref().unwrap().for_zones.as_ref().unwrap()[0].name, "a");
/// assert!(Arc::ptr_eq(&done.slices[0], &done.plan.create[0]));
/// # Ok::<(), svcnet_slicer::SliceError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Controller<'a> {
    /// The Nodes' zones.
    pub nodes: &'a NodeZones,
    /// The slicer's options.
    pub options: &'a Options,
    /// Topology hinting, or `None` to leave hints as the slicer writes them.
    pub hinting: Option<Hinting<'a>>,
}

impl Controller<'_> {
    /// One sync of `service`: slices from `pods` (those of its namespace matching its
    /// selector), `existing` (its slices: those whose `kubernetes.io/service-name` label names it
    /// and that the EndpointSlice controller manages), then hints on the same slices. `populated` is
    /// the controller's memory of having populated hints; `None` reads it from `existing`
    /// ([`hints_populated`]).
    ///
    /// Slices are copied only where they are rewritten while the caller still holds them.
    pub fn sync_service<'p>(
        &self,
        service: &Service,
        pods: impl IntoIterator<Item = &'p Pod>,
        existing: Vec<Arc<EndpointSlice>>,
        populated: Option<bool>,
        names: &mut dyn NameSource,
    ) -> Result<ServiceSync, SliceError> {
        let populated = populated.unwrap_or_else(|| {
            self.hinting
                .is_some_and(|h| hints_populated(service, existing.iter().map(|s| &**s), &h.options))
        });
        let mut state = ServiceSlices::with_shared(service, existing, self.options.clone())?;
        let plan = checked(state.sync(pods, self.nodes, names))?;
        let mut out = ServiceSync {
            plan,
            slices: state.into_slices(),
            hints: Vec::new(),
            hints_populated: populated,
        };
        if let Some(h) = &self.hinting {
            hint(service, &mut out, h);
        }
        Ok(out)
    }

    /// Hints on `existing` only (the slices as they are, no slicing): what the controller's
    /// hinting writes when the endpoints have not changed. Without [`Controller::hinting`] the
    /// slices come back as they are.
    pub fn hint_service(
        &self,
        service: &Service,
        existing: Vec<Arc<EndpointSlice>>,
        populated: Option<bool>,
    ) -> ServiceSync {
        let populated = populated.unwrap_or_else(|| {
            self.hinting
                .is_some_and(|h| hints_populated(service, existing.iter().map(|s| &**s), &h.options))
        });
        let mut out = ServiceSync {
            plan: Plan::default(),
            slices: existing,
            hints: Vec::new(),
            hints_populated: populated,
        };
        if let Some(h) = &self.hinting {
            hint(service, &mut out, h);
        }
        out
    }

    /// One sync of every Service with a selector (not of type ExternalName): each takes the
    /// slices of `slices` labelled for it and managed by the controller.
    pub fn sync_all(
        &self,
        services: &[Service],
        pods: &[Pod],
        slices: Vec<Arc<EndpointSlice>>,
        names: &mut dyn NameSource,
    ) -> ClusterSync {
        let groups = SlicesByService::new(slices.iter().map(|s| &**s), self.options.hash_key);
        let mine: Vec<Vec<usize>> = services
            .iter()
            .map(|svc| {
                let mut v = groups.labelled(svc.metadata.namespace(), svc.metadata.name());
                v.retain(|&i| slices.get(i).is_some_and(|s| managed_by_controller(s)));
                v
            })
            .collect();
        drop(groups);
        // A slice is handed over at its last use, so the sync holds the only reference.
        let mut uses = vec![0usize; slices.len()];
        for &i in mine.iter().flatten() {
            uses[i] += 1;
        }
        let mut slots: Vec<Option<Arc<EndpointSlice>>> = slices.into_iter().map(Some).collect();
        let mut out = ClusterSync::default();
        for ((k, svc), mine) in services.iter().enumerate().zip(mine) {
            let existing: Vec<Arc<EndpointSlice>> = mine
                .iter()
                .filter_map(|&i| {
                    uses[i] -= 1;
                    if uses[i] == 0 {
                        slots[i].take()
                    } else {
                        slots[i].clone()
                    }
                })
                .collect();
            match self.sync_service(svc, pods, existing, None, names) {
                Ok(done) => {
                    out.plan.extend(done.plan);
                    out.slices.extend(done.slices);
                    out.hints.extend(done.hints.into_iter().map(|o| (k, o)));
                }
                Err(SliceError::NoSelector { .. } | SliceError::ExternalName { .. }) => {}
                Err(e) => out.errors.push(e),
            }
        }
        out
    }

    /// Hints on every Service's existing slices (no slicing), as [`Controller::hint_service`]
    /// does for one. Services without a selector are skipped, and so are slices managed by
    /// another controller; both are listed in [`ClusterSync::skipped`]. The result's `slices`
    /// are all of `slices`, in order, the rewritten ones replaced.
    pub fn hint_all(&self, services: &[Service], slices: Vec<Arc<EndpointSlice>>) -> ClusterSync {
        let groups = SlicesByService::new(slices.iter().map(|s| &**s), self.options.hash_key);
        let labelled: Vec<Vec<usize>> = services
            .iter()
            .map(|svc| groups.labelled(svc.metadata.namespace(), svc.metadata.name()))
            .collect();
        drop(groups);
        let mut slots: Vec<Option<Arc<EndpointSlice>>> = slices.into_iter().map(Some).collect();
        let mut out = ClusterSync::default();
        for ((k, svc), labelled) in services.iter().enumerate().zip(labelled) {
            if svc.spec().selector.is_none() {
                out.skipped.push(Skipped::NoSelector { service: k });
                continue;
            }
            let mut owned = Vec::with_capacity(labelled.len());
            for i in labelled {
                match slots.get(i).and_then(Option::as_deref) {
                    Some(s) if managed_by_controller(s) => owned.push(i),
                    Some(_) => out.skipped.push(Skipped::ForeignSlice { service: k, slice: i }),
                    None => {}
                }
            }
            let existing: Vec<Arc<EndpointSlice>> = owned.iter().filter_map(|&i| slots[i].take()).collect();
            let done = self.hint_service(svc, existing, None);
            debug_assert_eq!(done.slices.len(), owned.len());
            for (&i, s) in owned.iter().zip(done.slices) {
                slots[i] = Some(s);
            }
            out.plan.extend(done.plan);
            out.hints.extend(done.hints.into_iter().map(|o| (k, o)));
        }
        out.slices = slots.into_iter().flatten().collect();
        out
    }
}

/// Runs hinting over one Service's sync, per address type, and writes the result into its plan
/// and slices.
fn hint(service: &Service, sync: &mut ServiceSync, hinting: &Hinting<'_>) {
    let mut slots: Vec<Option<Arc<EndpointSlice>>> =
        mem::take(&mut sync.slices).into_iter().map(Some).collect();
    // The plan's slices are the state's own (`ServiceSlices` shares them): found by identity.
    let position: FastMap<*const EndpointSlice, usize> = slots
        .iter()
        .enumerate()
        .filter_map(|(i, s)| s.as_ref().map(|s| (Arc::as_ptr(s), i)))
        .collect();
    let plan = &mut sync.plan;
    for at in [address_type::IPV4, address_type::IPV6] {
        let (create, create_rest): (Vec<_>, Vec<_>) = mem::take(&mut plan.create)
            .into_iter()
            .partition(|s| s.address_type == at);
        let (update, update_rest): (Vec<_>, Vec<_>) = mem::take(&mut plan.update)
            .into_iter()
            .partition(|s| s.address_type == at);
        let written: FastSet<usize> = create
            .iter()
            .chain(&update)
            .filter_map(|s| position.get(&Arc::as_ptr(s)).copied())
            .collect();
        let unchanged: Vec<usize> = (0..slots.len())
            .filter(|i| !written.contains(i) && slots[*i].as_ref().is_some_and(|s| s.address_type == at))
            .collect();
        if create.is_empty() && update.is_empty() && unchanged.is_empty() {
            plan.create = create_rest;
            plan.update = update_rest;
            continue;
        }
        // Where each slice handed to hinting goes back, by name (hinting may move an unchanged
        // slice to the updates).
        let mut back: KeyedMap<String, VecDeque<usize>> = KeyedMap::default();
        for &i in written.iter().chain(&unchanged) {
            if let Some(s) = &slots[i] {
                back.entry(s.metadata.name().to_owned()).or_default().push_back(i);
            }
        }
        for v in back.values_mut() {
            v.make_contiguous().sort_unstable();
        }
        // Drop the slices' other reference, so hinting takes them without a copy.
        for &i in &written {
            slots[i] = None;
        }
        // Shared, not copied: hinting copies only a slice it rewrites while another holder
        // (the caller) still has it.
        let set = SliceSet {
            to_create: create,
            to_update: update,
            unchanged: unchanged.iter().filter_map(|&i| slots[i].take()).collect(),
        };
        let mut outcome = reconcile_hints(
            service,
            at,
            set,
            hinting.capacity,
            sync.hints_populated,
            &hinting.options,
        );
        sync.hints_populated = outcome.hints_populated;
        let result = mem::take(&mut outcome.slices);
        sync.hints.push(outcome);
        let mut put = |s: Arc<EndpointSlice>| {
            if let Some(i) = back.get_mut(s.metadata.name()).and_then(VecDeque::pop_front) {
                slots[i] = Some(s);
            } else {
                debug_assert!(false, "hinting returned a slice it was not given");
            }
        };
        plan.create = create_rest;
        for s in result.to_create {
            put(Arc::clone(&s));
            plan.create.push(s);
        }
        plan.update = update_rest;
        for s in result.to_update {
            put(Arc::clone(&s));
            plan.update.push(s);
        }
        for s in result.unchanged {
            put(s);
        }
    }
    debug_assert!(slots.iter().all(Option::is_some));
    sync.slices = slots.into_iter().flatten().collect();
}

/// What the mirroring controller's sync did to every selector-less Service.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct MirrorSync {
    /// Every Service's writes.
    pub plan: Plan,
    /// The mirrored slices once the plan is applied, Service by Service.
    pub slices: Vec<Arc<EndpointSlice>>,
    /// Warnings, each with the namespace and name of its Endpoints.
    pub events: Vec<(String, String, MirrorEvent)>,
}

/// The Service and the Endpoints of one name.
type Objects<'a> = (Option<&'a Service>, Option<&'a Endpoints>);

/// One sync of the mirroring controller over a cluster: every `Endpoints` object, then every
/// Service named by a mirrored slice only (those slices are deleted), each mirrored by
/// [`mirror`](crate::mirror) against the slices labelled for it and managed by the mirroring
/// controller (`endpointslice.kubernetes.io/managed-by: endpointslicemirroring-controller.k8s.io`).
pub fn mirror_all(
    services: &[Service],
    endpoints: &[Endpoints],
    slices: &[Arc<EndpointSlice>],
    options: &MirrorOptions,
    names: &mut dyn NameSource,
) -> MirrorSync {
    let groups = SlicesByService::new(slices.iter().map(|s| &**s), KeyedState::default());
    let mut seen: KeyedSet<(&str, &str)> = KeyedSet::default();
    let mut keys: Vec<(&str, &str)> = Vec::new();
    let mirrored = slices
        .iter()
        .filter(|s| managed_by_mirroring(s))
        .filter_map(|s| s.service_name().map(|n| (s.metadata.namespace(), n)));
    for k in endpoints
        .iter()
        .map(|e| (e.metadata.namespace(), e.metadata.name()))
        .chain(mirrored)
    {
        if seen.insert(k) {
            keys.push(k);
        }
    }
    let mut by_key: KeyedMap<(&str, &str), Objects<'_>> = KeyedMap::default();
    for s in services {
        by_key
            .entry((s.metadata.namespace(), s.metadata.name()))
            .or_default()
            .0
            .get_or_insert(s);
    }
    for e in endpoints {
        by_key
            .entry((e.metadata.namespace(), e.metadata.name()))
            .or_default()
            .1
            .get_or_insert(e);
    }
    let mut out = MirrorSync::default();
    for (ns, name) in keys {
        let (svc, eps) = by_key.get(&(ns, name)).copied().unwrap_or_default();
        let existing: Vec<Arc<EndpointSlice>> = groups
            .labelled(ns, name)
            .into_iter()
            .filter_map(|i| slices.get(i))
            .filter(|s| managed_by_mirroring(s))
            .cloned()
            .collect();
        let m = mirror_shared(svc, eps, &existing, options, names);
        out.slices.extend(applied(existing, &m.plan));
        out.plan.extend(m.plan);
        out.events
            .extend(m.events.into_iter().map(|e| (ns.to_owned(), name.to_owned(), e)));
    }
    out
}

/// The slices after `plan` is applied to `existing`: deletes dropped, updates replacing the
/// slice of the same name, creates appended.
fn applied(existing: Vec<Arc<EndpointSlice>>, plan: &Plan) -> Vec<Arc<EndpointSlice>> {
    let deleted: KeyedSet<&str> = plan.delete.iter().map(|s| s.metadata.name()).collect();
    let mut updated: KeyedMap<&str, &Arc<EndpointSlice>> = KeyedMap::default();
    for u in &plan.update {
        updated.entry(u.metadata.name()).or_insert(u);
    }
    let mut out: Vec<Arc<EndpointSlice>> = existing
        .into_iter()
        .filter(|s| !deleted.contains(s.metadata.name()))
        .map(|s| updated.get(s.metadata.name()).map_or(s, |u| Arc::clone(u)))
        .collect();
    out.extend(plan.create.iter().cloned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn service() -> Service {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"app": "web"}, "trafficDistribution": "PreferClose",
                "ports": [{"port": 80}]}
        }))
        .unwrap()
    }

    fn slice(name: &str, hinted: bool) -> Arc<EndpointSlice> {
        let hints = hinted.then(|| serde_json::json!({"forZones": [{"name": "a"}]}));
        Arc::new(
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "shop",
                    "labels": {"kubernetes.io/service-name": "web"}},
                "addressType": "IPv4",
                "endpoints": [{"addresses": ["10.0.0.1"], "conditions": {"ready": true},
                    "zone": "a", "hints": hints}]
            }))
            .unwrap(),
        )
    }

    /// Hinting shares the slices it is handed: one it leaves alone comes back as the caller's
    /// own `Arc`, and one it rewrites is a copy, the caller's left as it was.
    #[test]
    fn hinting_copies_only_the_slices_it_rewrites() {
        let (nodes, options) = (NodeZones::default(), Options::default());
        let capacity = ZoneCapacity::from_zone_cpu([("a", 1000)]);
        let controller = Controller {
            nodes: &nodes,
            options: &options,
            hinting: Some(Hinting {
                capacity: &capacity,
                options: HintsOptions::default(),
            }),
        };
        let (kept, stale) = (slice("web-1", true), slice("web-2", false));
        let out = controller.hint_service(&service(), vec![Arc::clone(&kept), Arc::clone(&stale)], None);
        assert!(
            Arc::ptr_eq(&out.slices[0], &kept),
            "an unchanged slice was copied"
        );
        assert!(!Arc::ptr_eq(&out.slices[1], &stale));
        assert!(out.slices[1].endpoints()[0].hints.is_some());
        assert!(
            stale.endpoints()[0].hints.is_none(),
            "the caller's slice was changed"
        );
    }
}
