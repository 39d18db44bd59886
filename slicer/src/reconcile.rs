//! The EndpointSlice reconciler, step by step as Kubernetes runs it (`Reconcile`,
//! `reconcileByAddressType`, `reconcileByPortMapping`, the placeholder, `finalize`), over a
//! state that also supports one-pod incremental syncs (the submodule `incremental`).
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/endpointslice/reconciler.go` and `utils.go`.
//!
//! Kubernetes walks Go maps and sets in random order; svcnet fixes every order so that the same
//! input gives the same plan: port groups in sorted port-list order, slices in the order they
//! were given (new ones after), desired endpoints in Pod order.

use std::collections::BTreeMap;
use std::sync::Arc;

use smallvec::SmallVec;
use svcnet_model::{Endpoint, EndpointPort, EndpointSlice, Pod, Service};

use crate::endpoint::{
    EndpointId, Family, NodeCheck, build_endpoint, check_node, endpoint_addresses, endpoint_with,
    endpoints_equal_beyond_id, hostname_for, pod_is_endpoint_candidate, pod_key,
};
use crate::error::SliceError;
use crate::hash::{FastMap, FastSet, hash64};
use crate::names::NameSource;
use crate::nodes::NodeZones;
use crate::plan::{Plan, SyncError};
use crate::ports::{PortKey, Resolution, all_numeric, endpoint_ports, kubernetes_port_order, resolve};
use crate::service::{Options, ServiceInfo};
use svcnet_model::hash::{KeyedMap, KeyedSet};

mod incremental;

const TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";

/// One existing slice, with what the reconciler derives from it.
#[derive(Debug, Clone)]
struct Entry {
    /// Shared with the plans that wrote it; rewritten in place once they are dropped.
    slice: Arc<EndpointSlice>,
    /// The identity of each endpoint, in order.
    ids: Vec<EndpointId>,
    family: Option<Family>,
    key: u32,
    owned: bool,
}

/// Interned port-list keys, each with its ports in the order new slices carry them. The keys
/// hold port names and protocols from the input, so they are looked up under the keyed hasher.
#[derive(Debug, Clone, Default)]
struct Keys {
    keys: Vec<PortKey>,
    /// The ports of each key in Kubernetes' order ([`kubernetes_port_order`]), computed once
    /// per distinct port list; `None` when that is the key's own order (fewer than two ports).
    ordered: Vec<Option<Vec<EndpointPort>>>,
    ids: KeyedMap<PortKey, u32>,
}

impl Keys {
    fn intern(&mut self, k: PortKey) -> u32 {
        if let Some(&i) = self.ids.get(&k) {
            return i;
        }
        // Fewer than 2^32 distinct port lists: each comes from a Service port or a slice.
        // Kept as `expect` (no `Result` here, and it cannot fail): every key is a `Vec` the
        // state holds, so 2^32 of them do not fit in memory.
        let i = u32::try_from(self.keys.len()).expect("invariant: fewer than 2^32 port-list keys");
        self.ordered.push((k.0.len() > 1).then(|| {
            let mut ordered = k.0.clone();
            kubernetes_port_order(&mut ordered);
            ordered
        }));
        self.keys.push(k.clone());
        self.ids.insert(k, i);
        i
    }

    fn get(&self, id: u32) -> &PortKey {
        // Ids come from `intern` only: indexing states the invariant.
        &self.keys[id as usize]
    }

    /// The ports of a new slice of group `id`.
    fn slice_ports(&self, id: u32) -> Vec<EndpointPort> {
        match self.ordered.get(id as usize) {
            Some(Some(ordered)) => ordered.clone(),
            _ => self.get(id).0.clone(),
        }
    }

    /// Sorts group ids by their port lists.
    fn sort(&self, ids: &mut [u32]) {
        ids.sort_by(|a, b| self.get(*a).cmp(self.get(*b)));
    }
}

/// What the state remembers about one Pod: its port group and its endpoint per family.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PodEntry {
    key: u32,
    ids: [Option<EndpointId>; 2],
}

/// Desired endpoints of one (family, port group), in insertion order, by identity.
#[derive(Debug, Default)]
struct DesiredSet {
    eps: Vec<Option<(EndpointId, Endpoint)>>,
    index: FastMap<EndpointId, usize>,
    remaining: usize,
    cursor: usize,
}

impl DesiredSet {
    fn with_capacity(n: usize) -> Self {
        DesiredSet {
            eps: Vec::with_capacity(n),
            index: FastMap::with_capacity_and_hasher(n, Default::default()),
            remaining: 0,
            cursor: 0,
        }
    }

    fn insert(&mut self, id: EndpointId, ep: Endpoint) {
        if let Some(&i) = self.index.get(&id) {
            // The index holds positions in `eps`.
            let slot = &mut self.eps[i];
            if slot.is_none() {
                self.remaining += 1;
            }
            *slot = Some((id, ep));
            return;
        }
        self.index.insert(id, self.eps.len());
        self.eps.push(Some((id, ep)));
        self.remaining += 1;
    }

    fn take(&mut self, id: EndpointId) -> Option<Endpoint> {
        let i = *self.index.get(&id)?;
        let (_, ep) = self.eps.get_mut(i)?.take()?;
        self.remaining -= 1;
        Some(ep)
    }

    fn pop(&mut self) -> Option<(EndpointId, Endpoint)> {
        while let Some(slot) = self.eps.get_mut(self.cursor) {
            self.cursor += 1;
            if let Some(pair) = slot.take() {
                self.remaining -= 1;
                return Some(pair);
            }
        }
        None
    }

    /// The endpoint wanted for `id`, if still wanted.
    fn get(&self, id: EndpointId) -> Option<&Endpoint> {
        let i = *self.index.get(&id)?;
        self.eps.get(i)?.as_ref().map(|(_, ep)| ep)
    }

    /// True when `id` is still wanted.
    fn contains(&self, id: EndpointId) -> bool {
        self.index
            .get(&id)
            .and_then(|&i| self.eps.get(i))
            .is_some_and(Option::is_some)
    }

    fn len(&self) -> usize {
        self.remaining
    }
}

/// The desired endpoints of a group: a set to match against existing slices, or, for a group
/// with no existing slice, the new slices directly (what step 3 would build from the set).
enum Wanted {
    Set(DesiredSet),
    Direct(Direct),
}

/// New slices filled in insertion order, each up to the maximum; an endpoint whose identity is
/// already present replaces the earlier one in place.
#[derive(Default)]
struct Direct {
    slices: Vec<Vec<Endpoint>>,
    /// The identities per slice, kept only when the state records the result.
    ids: Option<Vec<Vec<EndpointId>>>,
    /// The low 64 bits of every identity added (or, when identities are not kept, a hash of
    /// each Pod's name): a compact filter (a quarter of the size of a map from identity to
    /// position), as a repeated identity is rare (a Pod given twice).
    seen: FastSet<u64>,
    /// Identity to position, built at the first repeat the filter reports.
    exact: Option<FastMap<EndpointId, (usize, usize)>>,
}

impl Direct {
    fn new(track_ids: bool, expected: usize) -> Self {
        Direct {
            slices: Vec::new(),
            ids: track_ids.then(Vec::new),
            seen: FastSet::with_capacity_and_hasher(expected, Default::default()),
            exact: None,
        }
    }

    /// Where the endpoint with identity `id` is, if it was added.
    fn find(&mut self, id: EndpointId) -> Option<(usize, usize)> {
        let slices = &self.slices;
        let exact = self.exact.get_or_insert_with(|| {
            let mut m = FastMap::default();
            for (s, v) in slices.iter().enumerate() {
                for (p, ep) in v.iter().enumerate() {
                    m.entry(EndpointId::of(ep)).or_insert((s, p));
                }
            }
            m
        });
        exact.get(&id).copied()
    }

    /// Builds an endpoint with `make` straight into the last slice (a new one when it is full);
    /// `left` bounds how many more may come (to size new slices). An endpoint whose identity was
    /// added before replaces the earlier one in place.
    ///
    /// Returns the endpoint's identity when it was computed: always when identities are kept.
    /// Otherwise repeats are looked for by `name_key`, a hash of the Pod's name (all the Pods
    /// are in the Service's namespace, and an identity includes the name), and the identity is
    /// computed only for a name seen before.
    #[inline]
    fn push_new(
        &mut self,
        max: usize,
        left: usize,
        name_key: u64,
        make: impl FnOnce() -> Endpoint,
    ) -> Option<EndpointId> {
        if self.slices.last().is_none_or(|v| v.len() >= max) {
            let cap = left.clamp(1, max);
            self.slices.push(Vec::with_capacity(cap));
            if let Some(ids) = &mut self.ids {
                ids.push(Vec::with_capacity(cap));
            }
        }
        let s = self.slices.len() - 1;
        let v = self.slices.last_mut()?;
        // Extending by one builds the value after the room is reserved, which saves one of the
        // moves of the large value that a push makes (measured: memcpy 12% → 5% of the time).
        v.extend(std::iter::once_with(make));
        let p = v.len() - 1;
        let new = v.last()?;
        let tracking = self.ids.is_some();
        let mut id = tracking.then(|| EndpointId::of(new));
        let filter_key = id.map_or(name_key, |id| id.0 as u64);
        let repeat = !self.seen.insert(filter_key);
        if repeat || self.exact.is_some() {
            let this = *id.get_or_insert_with(|| EndpointId::of(new));
            if repeat
                && let Some(at) = self.find(this)
                && at != (s, p)
            {
                // The same endpoint again (a Pod given twice): it takes the earlier one's place.
                let dup = self.slices.get_mut(s).and_then(Vec::pop);
                if let (Some(ep), Some(slot)) = (dup, self.slices.get_mut(at.0).and_then(|v| v.get_mut(at.1)))
                {
                    *slot = ep;
                }
                if self.slices.last().is_some_and(Vec::is_empty) {
                    self.slices.pop();
                    if let Some(ids) = &mut self.ids {
                        ids.pop();
                    }
                }
                return id;
            }
            if let Some(exact) = &mut self.exact {
                exact.insert(this, (s, p));
            }
        }
        if let (Some(ids), Some(id)) = (self.ids.as_mut().and_then(|i| i.last_mut()), id) {
            ids.push(id);
        }
        id
    }
}

/// A slice to write, with the identities of its endpoints when they are known (so that
/// recording it in the state does not hash every endpoint again).
#[derive(Debug)]
struct Written {
    slice: EndpointSlice,
    ids: Option<Vec<EndpointId>>,
}

impl Written {
    fn new(slice: EndpointSlice, ids: Option<Vec<EndpointId>>) -> Self {
        Written { slice, ids }
    }

    /// Appends an endpoint.
    fn push(&mut self, id: EndpointId, ep: Endpoint) {
        self.slice.endpoints.get_or_insert_with(Vec::new).push(ep);
        if let Some(ids) = &mut self.ids {
            ids.push(id);
        }
    }

    fn len(&self) -> usize {
        self.slice.endpoints().len()
    }
}

/// The writes of one family before they become a [`Plan`]: updates and deletes name existing
/// slices by sequence number.
#[derive(Debug, Default)]
struct Draft {
    create: Vec<Written>,
    update: Vec<(u32, Written)>,
    delete: Vec<u32>,
    /// Requeue conditions, and [`SyncError::Internal`] when an invariant of this state broke
    /// (the plan is then not to be trusted; [`reconcile`] turns it into an error).
    errors: Vec<SyncError>,
    /// Changes to [`ServiceSlices::unlike`], in order: `Some` records the desired form of an
    /// endpoint a slice keeps in another form, `None` forgets it.
    unlike: Vec<((Family, EndpointId), Option<Endpoint>)>,
    /// The plan is a full reconcile: `unlike` replaces the record instead of editing it.
    unlike_reset: bool,
}

impl Draft {
    /// Adds the writes and errors of `other` (another address type's).
    fn absorb(&mut self, other: Draft) {
        self.create.extend(other.create);
        self.update.extend(other.update);
        self.delete.extend(other.delete);
        self.errors.extend(other.errors);
        self.unlike.extend(other.unlike);
    }
}

/// The invariant [`ServiceSlices::fill`] relies on: the slices it is given as unchanged are
/// held by the state.
const UNCHANGED_HELD: &str = "an unchanged slice the filler was given is not held by the state";

/// The changes one Pod brings to one port group.
#[derive(Debug, Default)]
struct Delta {
    removed: SmallVec<[EndpointId; 2]>,
    changed: Vec<(EndpointId, Endpoint)>,
}

/// The EndpointSlices of one Service, kept in step with its Pods.
///
/// [`ServiceSlices::sync`] runs Kubernetes' full reconcile over every Pod and applies the plan
/// to the state; [`ServiceSlices::update_pod`] and [`ServiceSlices::delete_pod`] then handle one
/// Pod at a time, touching only the slices that hold (or gain) its endpoints — with the result
/// the full reconcile would give for the same change.
///
/// Cloning the state shares its slices (as plans do); either copy copies a slice only when it
/// rewrites it.
#[derive(Debug, Clone)]
pub struct ServiceSlices {
    info: ServiceInfo,
    options: Options,
    slices: BTreeMap<u32, Entry>,
    by_name: KeyedMap<String, u32>,
    next_seq: u32,
    keys: Keys,
    /// Pods considered per port group (a group is desired while this is non-zero).
    members: FastMap<u32, usize>,
    pods: FastMap<u128, PodEntry>,
    pending_pods: Vec<(u128, PodEntry)>,
    index: Option<FastMap<(Family, EndpointId), u32>>,
    /// The desired form of endpoints that a slice left unchanged holds in another form that
    /// differs beyond its hints (an unset string where the Pod gives an empty one, a stray
    /// `deprecatedTopology`, a target reference's resource version, ...). A full reconcile
    /// that rewrites such a slice writes every endpoint in its desired form; a one-Pod sync
    /// that rewrites it takes the desired form from here (or drops the hints) to write the same.
    unlike: FastMap<(Family, EndpointId), Endpoint>,
}

impl ServiceSlices {
    /// A state for `service` with its existing slices (those labelled with its name and managed
    /// by the EndpointSlice controller; the caller filters).
    pub fn new(
        service: &Service,
        existing: impl IntoIterator<Item = EndpointSlice>,
        options: Options,
    ) -> Result<ServiceSlices, SliceError> {
        Self::with_shared(service, existing.into_iter().map(Arc::new), options)
    }

    /// As [`ServiceSlices::new`], with the existing slices already shared: nothing is copied,
    /// and a slice is copied later only if it is rewritten while still shared.
    pub fn with_shared(
        service: &Service,
        existing: impl IntoIterator<Item = Arc<EndpointSlice>>,
        options: Options,
    ) -> Result<ServiceSlices, SliceError> {
        options.check()?;
        let info = ServiceInfo::new(service, &options)?;
        let hash_key = options.hash_key;
        let mut s = ServiceSlices {
            info,
            options,
            slices: BTreeMap::new(),
            by_name: KeyedMap::with_hasher(hash_key),
            next_seq: 0,
            keys: Keys {
                ids: KeyedMap::with_hasher(hash_key),
                ..Keys::default()
            },
            members: FastMap::default(),
            pods: FastMap::default(),
            pending_pods: Vec::new(),
            index: None,
            unlike: FastMap::default(),
        };
        for slice in existing {
            s.insert_entry(slice, None);
        }
        Ok(s)
    }

    /// The current slices, shared, in order (given ones first, then created ones); the state
    /// is consumed, so a plan it made is then the only other holder of the slices it wrote.
    pub fn into_slices(self) -> Vec<Arc<EndpointSlice>> {
        self.slices.into_values().map(|e| e.slice).collect()
    }

    /// The Service's namespace and name.
    pub fn service_key(&self) -> (&str, &str) {
        (&self.info.namespace, &self.info.name)
    }

    /// The current slices, in order (given ones first, then created ones).
    pub fn slices(&self) -> impl Iterator<Item = &EndpointSlice> {
        self.slices.values().map(|e| &*e.slice)
    }

    /// The number of current slices.
    pub fn len(&self) -> usize {
        self.slices.len()
    }

    /// True when there is no slice.
    pub fn is_empty(&self) -> bool {
        self.slices.is_empty()
    }

    /// The entry of a slice; `ids` are its endpoints' identities when already known.
    fn make_entry(&mut self, slice: Arc<EndpointSlice>, ids: Option<Vec<EndpointId>>) -> Entry {
        let family = Family::from_address_type(&slice.address_type);
        let key = self.keys.intern(PortKey::of(slice.ports()));
        let owned = self.info.owns(&slice);
        let ids = match ids {
            Some(ids) => {
                debug_assert!(
                    ids.iter()
                        .copied()
                        .eq(slice.endpoints().iter().map(EndpointId::of))
                );
                ids
            }
            None => slice.endpoints().iter().map(EndpointId::of).collect(),
        };
        Entry {
            slice,
            ids,
            family,
            key,
            owned,
        }
    }

    fn insert_entry(&mut self, slice: Arc<EndpointSlice>, ids: Option<Vec<EndpointId>>) -> u32 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let e = self.make_entry(slice, ids);
        if let Some(n) = e.slice.metadata.name.clone() {
            self.by_name.insert(n, seq);
        }
        self.slices.insert(seq, e);
        seq
    }

    /// Gives a rewritten existing slice its ports in Kubernetes' order: the controller sorts
    /// an owned slice's ports in place while keying it (`NewPortMapKey`), so every copy it
    /// writes back carries that order, whatever order the slice was stored in.
    fn reorder_ports(&self, key: u32, s: &mut EndpointSlice) {
        if let Some(ports) = s.ports.as_mut()
            && ports.len() > 1
        {
            *ports = self.keys.slice_ports(key);
        }
    }

    // ----- desired state -------------------------------------------------------------------

    /// The port group of a Pod, cached per resolution.
    fn group_of(&mut self, pod: &Pod, cache: &mut FastMap<Resolution, u32>) -> u32 {
        let res = resolve(&self.info.ports, pod);
        if let Some(&k) = cache.get(&res) {
            return k;
        }
        let ports = endpoint_ports(&self.info.ports, &res);
        let k = self.keys.intern(PortKey::of(&ports));
        cache.insert(res, k);
        k
    }

    /// The zone of `pod`'s Node, or an error when its Node is missing (and the Service does
    /// not publish not-ready addresses).
    #[inline]
    fn zone_for<'n>(&self, pod: &Pod, nodes: &'n NodeZones) -> Result<Option<&'n str>, SyncError> {
        match check_node(nodes, pod) {
            NodeCheck::Found(z) => Ok(z),
            NodeCheck::Missing if self.info.publish_not_ready => Ok(None),
            NodeCheck::Missing => Err(self.node_not_found(pod)),
        }
    }

    #[cold]
    #[inline(never)]
    fn node_not_found(&self, pod: &Pod) -> SyncError {
        SyncError::NodeNotFound {
            pod: pod.metadata.name().to_owned(),
            namespace: self.info.namespace.clone(),
            service: self.info.name.clone(),
            node: pod.spec().node_name().to_owned(),
        }
    }

    /// The endpoint of `pod` for `family`, or an error when its Node is missing (and the
    /// Service does not publish not-ready addresses).
    fn endpoint_for(
        &self,
        pod: &Pod,
        nodes: &NodeZones,
        family: Family,
        hostname: bool,
    ) -> Result<Option<Endpoint>, SyncError> {
        let zone = self.zone_for(pod, nodes)?;
        Ok(build_endpoint(
            pod,
            self.info.publish_not_ready,
            hostname,
            zone,
            family,
        ))
    }

    // ----- full sync -----------------------------------------------------------------------

    /// Runs the full reconcile for the Service's Pods (those in its namespace matching its
    /// selector are used; others are ignored), applies the plan to this state and returns it.
    pub fn sync<'a>(
        &mut self,
        pods: impl IntoIterator<Item = &'a Pod>,
        nodes: &NodeZones,
        names: &mut dyn NameSource,
    ) -> Plan {
        let (draft, members, pod_entries) = self.plan_full(pods, nodes, true);
        self.members = members;
        self.pods.clear();
        self.pending_pods = pod_entries;
        // The endpoint index is rebuilt on the next one-pod change: before this sync the
        // slices may hold anything (duplicates included), which the index does not follow.
        self.index = None;
        self.commit(draft, names)
    }

    /// Computes the full reconcile's plan without applying it.
    pub fn plan<'a>(
        &mut self,
        pods: impl IntoIterator<Item = &'a Pod>,
        nodes: &NodeZones,
        names: &mut dyn NameSource,
    ) -> Plan {
        let (draft, _, _) = self.plan_full(pods, nodes, false);
        self.to_plan(draft, names).0
    }

    #[allow(clippy::type_complexity)]
    fn plan_full<'a>(
        &mut self,
        pods: impl IntoIterator<Item = &'a Pod>,
        nodes: &NodeZones,
        track_pods: bool,
    ) -> (Draft, FastMap<u32, usize>, Vec<(u128, PodEntry)>) {
        let families = self.info.families.clone();
        let pods: Vec<&Pod> = pods.into_iter().collect();
        let n_pods = pods.len();
        // Per port group (by interned key), per family.
        let mut desired: Vec<[Option<Wanted>; 2]> = Vec::new();
        // Groups without an existing slice go straight into new slices.
        let with_slices: Vec<(Family, u32)> = self
            .slices
            .values()
            .filter(|e| e.owned)
            .filter_map(|e| e.family.map(|f| (f, e.key)))
            .collect();
        let max = self.options.max_endpoints_per_slice;
        let mut seen = 0usize;
        let mut counts: Vec<usize> = Vec::new();
        let mut pod_entries: Vec<(u128, PodEntry)> =
            Vec::with_capacity(if track_pods { pods.len() } else { 0 });
        let mut errors: Vec<SyncError> = Vec::new();
        let mut cache: FastMap<Resolution, u32> = FastMap::default();
        let numeric = all_numeric(&self.info.ports);
        let mut numeric_key: Option<u32> = None;
        for pod in pods {
            seen += 1;
            if !self.info.selects(pod) || !pod_is_endpoint_candidate(pod, true) {
                continue;
            }
            let key = match (numeric, numeric_key) {
                (true, Some(k)) => k,
                _ => {
                    let k = self.group_of(pod, &mut cache);
                    if numeric {
                        numeric_key = Some(k);
                    }
                    k
                }
            };
            let k = key as usize;
            if counts.len() <= k {
                counts.resize(k + 1, 0);
                desired.resize_with(k + 1, Default::default);
            }
            counts[k] += 1;
            let hostname = hostname_for(pod, &self.info.name, &self.info.namespace);
            let mut entry = PodEntry { key, ids: [None; 2] };
            let zone = self.zone_for(pod, nodes);
            // Plans look for repeated Pods by name; the state uses full identities instead.
            let name_key = if track_pods {
                0
            } else {
                hash64(pod.metadata.name().as_bytes())
            };
            for &f in &families {
                let z = match &zone {
                    Ok(z) => *z,
                    Err(e) => {
                        errors.push(e.clone());
                        continue;
                    }
                };
                let Some(addresses) = endpoint_addresses(pod, f) else {
                    continue;
                };
                let make = || endpoint_with(pod, addresses, self.info.publish_not_ready, hostname, z);
                let w = desired[k][f.index()].get_or_insert_with(|| {
                    if with_slices.contains(&(f, key)) {
                        Wanted::Set(DesiredSet::with_capacity(if numeric { n_pods } else { 0 }))
                    } else {
                        Wanted::Direct(Direct::new(track_pods, if numeric { n_pods } else { 0 }))
                    }
                });
                entry.ids[f.index()] = match w {
                    Wanted::Set(set) => {
                        let ep = make();
                        let id = EndpointId::of(&ep);
                        set.insert(id, ep);
                        Some(id)
                    }
                    Wanted::Direct(d) => d.push_new(max, n_pods + 1 - seen, name_key, make),
                };
            }
            if track_pods {
                pod_entries.push((pod_key(pod.metadata.namespace(), pod.metadata.name()), entry));
            }
        }
        let members: FastMap<u32, usize> = counts
            .iter()
            .enumerate()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| (k as u32, *n))
            .collect();
        let mut draft = Draft {
            errors,
            unlike_reset: true,
            ..Draft::default()
        };
        for &f in &families {
            let d = self.reconcile_family(
                f,
                &members,
                |state, key, slices, out| match desired
                    .get_mut(key as usize)
                    .and_then(|w| w[f.index()].take())
                {
                    Some(Wanted::Direct(d)) if slices.is_empty() => {
                        let mut ids = d.ids.map(Vec::into_iter);
                        for eps in d.slices {
                            let mut s = state.info.new_slice(state.keys.slice_ports(key), f);
                            s.endpoints = Some(eps);
                            out.create
                                .push(Written::new(s, ids.as_mut().and_then(Iterator::next)));
                        }
                    }
                    Some(Wanted::Direct(d)) => {
                        let mut set = DesiredSet::default();
                        for ep in d.slices.into_iter().flatten() {
                            set.insert(EndpointId::of(&ep), ep);
                        }
                        state.group_full(f, key, slices, set, out);
                    }
                    Some(Wanted::Set(set)) => state.group_full(f, key, slices, set, out),
                    None => state.group_full(f, key, slices, DesiredSet::default(), out),
                },
                true,
            );
            draft.absorb(d);
        }
        // Slices of an address type the Service no longer has go last, never recycled.
        for (&seq, e) in &self.slices {
            if !e.family.is_some_and(|f| families.contains(&f)) {
                draft.delete.push(seq);
            }
        }
        (draft, members, pod_entries)
    }

    /// `reconcileByAddressType`, with the per-group work given by `group` (full or incremental).
    /// `full` also moves unchanged slices that carry hints into the updates.
    fn reconcile_family(
        &self,
        family: Family,
        members: &FastMap<u32, usize>,
        mut group: impl FnMut(&Self, u32, &[u32], &mut Draft),
        full: bool,
    ) -> Draft {
        let mut out = Draft::default();
        let mut existing = 0usize;
        let mut by_key: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
        for (&seq, e) in &self.slices {
            if e.family != Some(family) {
                continue;
            }
            existing += 1;
            if e.owned {
                by_key.entry(e.key).or_default().push(seq);
            } else {
                out.delete.push(seq);
            }
        }
        let mut desired_keys: Vec<u32> = members.iter().filter(|(_, n)| **n > 0).map(|(k, _)| *k).collect();
        self.keys.sort(&mut desired_keys);
        for &k in &desired_keys {
            let slices = by_key.get(&k).map(Vec::as_slice).unwrap_or(&[]);
            group(self, k, slices, &mut out);
        }
        let mut gone: Vec<u32> = by_key
            .keys()
            .copied()
            .filter(|k| members.get(k).is_none_or(|n| *n == 0))
            .collect();
        self.keys.sort(&mut gone);
        for k in gone {
            out.delete.extend(by_key.get(&k).into_iter().flatten().copied());
        }

        // Placeholder: a Service with no endpoints keeps exactly one empty slice.
        if existing == out.delete.len() && out.create.is_empty() {
            let placeholder = self.info.new_slice(Vec::new(), family);
            let same = match out.delete.as_slice() {
                [only] => self
                    .slices
                    .get(only)
                    .is_some_and(|e| e.ids.is_empty() && placeholder_equal(&e.slice, &placeholder)),
                _ => false,
            };
            if same {
                out.delete.clear();
            } else {
                out.create.push(Written::new(placeholder, Some(Vec::new())));
            }
        }

        if !self.info.keep_hints {
            // New slices hold only endpoints built from Pods, which carry no hints; updates may
            // keep existing endpoints.
            for (_, w) in &mut out.update {
                strip_hints(&mut w.slice);
            }
            if full {
                let mut extra = Vec::new();
                for (&seq, e) in &self.slices {
                    if e.family != Some(family)
                        || out.delete.contains(&seq)
                        || out.update.iter().any(|(s, _)| *s == seq)
                    {
                        continue;
                    }
                    if e.slice.endpoints().iter().any(|ep| ep.hints.is_some()) {
                        let mut s = EndpointSlice::clone(&e.slice);
                        self.reorder_ports(e.key, &mut s);
                        strip_hints(&mut s);
                        extra.push((seq, Written::new(s, Some(e.ids.clone()))));
                    }
                }
                out.update.extend(extra);
            }
        }

        // finalize: turn creates into updates of slices that would otherwise be deleted.
        let mut i = 0;
        while i < out.delete.len() && !out.create.is_empty() {
            let seq = out.delete[i];
            let recyclable = self
                .slices
                .get(&seq)
                .is_some_and(|e| e.owned && e.family == Some(family));
            if recyclable {
                if let Some(mut w) = out.create.pop() {
                    w.slice.metadata.name = self.slices.get(&seq).and_then(|e| e.slice.metadata.name.clone());
                    out.update.push((seq, w));
                    out.delete.remove(i);
                }
            } else {
                i += 1;
            }
        }
        if self.info.deleting {
            out.create.clear();
        }
        for w in out.create.iter_mut().chain(out.update.iter_mut().map(|(_, w)| w)) {
            self.stamp_trigger_time(&mut w.slice);
        }
        out
    }

    fn stamp_trigger_time(&self, s: &mut EndpointSlice) {
        let ann = s.metadata.annotations.get_or_insert_with(Default::default);
        match &self.options.trigger_time {
            Some(t) => {
                ann.insert(TRIGGER_TIME.to_owned(), t.clone());
            }
            None => {
                ann.remove(TRIGGER_TIME);
            }
        }
        if ann.is_empty() {
            s.metadata.annotations = None;
        }
    }

    /// `reconcileByPortMapping`, step 1 over every existing endpoint.
    fn group_full(&self, family: Family, key: u32, slices: &[u32], mut desired: DesiredSet, out: &mut Draft) {
        let mut updates: Vec<(u32, Written)> = Vec::new();
        let mut unchanged: Vec<u32> = Vec::new();
        for &seq in slices {
            let Some(e) = self.slices.get(&seq) else { continue };
            let old = e.slice.endpoints();
            let mut kept: Vec<Endpoint> = Vec::with_capacity(old.len());
            let mut kept_ids: Vec<EndpointId> = Vec::with_capacity(old.len());
            let mut changed = false;
            for (ep, id) in old.iter().zip(&e.ids) {
                if let Some(d) = desired.take(*id) {
                    if !endpoints_equal_beyond_id(&d, ep) || !EndpointId::same_identity(&d, ep) {
                        changed = true;
                    }
                    kept.push(d);
                    kept_ids.push(*id);
                }
            }
            let (labels, labels_changed) = self.info.slice_labels(e.slice.metadata.labels.as_ref());
            if changed || kept.len() != old.len() {
                if kept.is_empty() {
                    out.delete.push(seq);
                } else {
                    let mut s = copy_without_endpoints(&e.slice);
                    self.reorder_ports(e.key, &mut s);
                    s.endpoints = Some(kept);
                    s.metadata.labels = Some(labels);
                    updates.push((seq, Written::new(s, Some(kept_ids))));
                }
            } else {
                // The slice keeps its endpoints as they are: remember the desired form of
                // those that differ beyond their hints, for a later one-Pod rewrite.
                for ((d, ep), id) in kept.into_iter().zip(old).zip(&e.ids) {
                    if !equal_but_hints(&d, ep) {
                        out.unlike.push(((family, *id), Some(d)));
                    }
                }
                if labels_changed {
                    let mut s = EndpointSlice::clone(&e.slice);
                    self.reorder_ports(e.key, &mut s);
                    s.metadata.labels = Some(labels);
                    updates.push((seq, Written::new(s, Some(e.ids.clone()))));
                } else {
                    unchanged.push(seq);
                }
            }
        }
        self.fill(family, key, desired, updates, unchanged, None, out);
    }

    /// `reconcileByPortMapping`, step 1 for a steady group that only `delta` changes.
    fn group_delta(
        &self,
        family: Family,
        key: u32,
        slices: &[u32],
        delta: Delta,
        taken: &mut FastMap<u32, Vec<Endpoint>>,
        out: &mut Draft,
    ) {
        let index = self.index.as_ref();
        let mut touched: SmallVec<[u32; 4]> = SmallVec::new();
        let mut find = |id: &EndpointId| {
            if let Some(&seq) = index.and_then(|ix| ix.get(&(family, *id)))
                && slices.contains(&seq)
                && !touched.contains(&seq)
            {
                touched.push(seq);
            }
        };
        delta.removed.iter().for_each(&mut find);
        delta.changed.iter().for_each(|(id, _)| find(id));
        touched.sort_unstable();

        let mut desired = DesiredSet::default();
        for (id, ep) in delta.changed {
            desired.insert(id, ep);
        }
        let mut updates: Vec<(u32, Written)> = Vec::new();
        let mut unchanged: Vec<u32> = Vec::new();
        for &seq in slices {
            if !touched.contains(&seq) {
                unchanged.push(seq);
                continue;
            }
            let Some(e) = self.slices.get(&seq) else { continue };
            // The endpoints were moved out of the state for this sync; they go back unless the
            // slice is rewritten, and a rewrite edits them in place.
            let mut eps = match taken.remove(&seq) {
                Some(v) => v,
                None => e.slice.endpoints().to_vec(),
            };
            // Where the Pod's endpoints sit: positions to drop, and positions whose endpoint
            // the desired one replaces (the first occurrence of a desired identity).
            let mut drop_at: SmallVec<[usize; 2]> = SmallVec::new();
            let mut replace_at: SmallVec<[(usize, EndpointId); 2]> = SmallVec::new();
            for (i, id) in e.ids.iter().enumerate() {
                if delta.removed.contains(id) {
                    drop_at.push(i);
                } else if desired.contains(*id) && !replace_at.iter().any(|(_, r)| r == id) {
                    replace_at.push((i, *id));
                }
            }
            let changed = replace_at.iter().any(|&(i, id)| {
                desired.get(id).zip(eps.get(i)).is_some_and(|(d, old)| {
                    !endpoints_equal_beyond_id(d, old) || !EndpointId::same_identity(d, old)
                })
            });
            let (labels, labels_changed) = self.info.slice_labels(e.slice.metadata.labels.as_ref());
            if changed || !drop_at.is_empty() {
                if drop_at.len() == eps.len() {
                    taken.insert(seq, eps);
                    out.delete.push(seq);
                    continue;
                }
                let mut ids = e.ids.clone();
                // A full reconcile rewrites every endpoint it keeps in its desired form: the
                // Pod's own, and for the others the recorded form, or the same without hints.
                for (slot, id) in eps.iter_mut().zip(&ids) {
                    if let Some(d) = self.unlike.get(&(family, *id)) {
                        *slot = d.clone();
                        out.unlike.push(((family, *id), None));
                    } else {
                        slot.hints = None;
                    }
                }
                for &(i, id) in &replace_at {
                    if let (Some(d), Some(slot)) = (desired.take(id), eps.get_mut(i)) {
                        *slot = d;
                    }
                }
                for &i in drop_at.iter().rev() {
                    if i < eps.len() {
                        eps.remove(i);
                    }
                    if i < ids.len() {
                        ids.remove(i);
                    }
                }
                let mut s = copy_without_endpoints(&e.slice);
                self.reorder_ports(e.key, &mut s);
                s.endpoints = Some(eps);
                s.metadata.labels = Some(labels);
                updates.push((seq, Written::new(s, Some(ids))));
                continue;
            }
            // The slice keeps the Pod's endpoint as it is: record its desired form where it
            // differs beyond the hints, as a full reconcile leaves it.
            for &(i, id) in &replace_at {
                if let Some(d) = desired.take(id)
                    && let Some(old) = eps.get(i)
                    && !equal_but_hints(&d, old)
                {
                    out.unlike.push(((family, id), Some(d)));
                }
            }
            if labels_changed {
                let mut s = copy_without_endpoints(&e.slice);
                self.reorder_ports(e.key, &mut s);
                s.endpoints = Some(eps.clone());
                s.metadata.labels = Some(labels);
                updates.push((seq, Written::new(s, Some(e.ids.clone()))));
            } else {
                unchanged.push(seq);
            }
            taken.insert(seq, eps);
        }
        unchanged.sort_unstable();
        self.fill(family, key, desired, updates, unchanged, Some(taken), out);
    }

    /// Steps 2 and 3 of `reconcileByPortMapping`: top up the slices already being updated
    /// (fullest first), then put what is left in one unchanged slice it fits in entirely, or in
    /// new slices.
    /// `taken` holds endpoints moved out of the state for this sync (incremental use).
    #[allow(clippy::too_many_arguments)]
    fn fill(
        &self,
        family: Family,
        key: u32,
        mut desired: DesiredSet,
        mut updates: Vec<(u32, Written)>,
        mut unchanged: Vec<u32>,
        mut taken: Option<&mut FastMap<u32, Vec<Endpoint>>>,
        out: &mut Draft,
    ) {
        let max = self.options.max_endpoints_per_slice;
        if desired.len() > 0 && !updates.is_empty() {
            let mut order: Vec<usize> = (0..updates.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(updates[i].1.len()));
            for i in order {
                let Some((_, w)) = updates.get_mut(i) else {
                    continue;
                };
                while w.len() < max {
                    match desired.pop() {
                        Some((id, ep)) => w.push(id, ep),
                        None => break,
                    }
                }
            }
        }
        while desired.len() > 0 {
            let mut target: Option<usize> = None;
            if desired.len() < max && !unchanged.is_empty() {
                match self.slice_to_fill(&unchanged, desired.len(), max) {
                    Ok(t) => target = t,
                    Err(e) => {
                        // A broken invariant: report it, and fill new slices only.
                        out.errors.push(e);
                        unchanged.clear();
                    }
                }
            }
            let held = target.map(|i| {
                let seq = unchanged.remove(i);
                (seq, self.slices.get(&seq))
            });
            let (seq, mut w) = match held {
                // `slice_to_fill` checked every unchanged slice is held: this arm only keeps a
                // future bug from panicking.
                Some((_, None)) => {
                    out.errors.push(SyncError::Internal {
                        detail: UNCHANGED_HELD,
                    });
                    continue;
                }
                Some((seq, Some(e))) => {
                    let mut s = copy_without_endpoints(&e.slice);
                    self.reorder_ports(e.key, &mut s);
                    s.endpoints = Some(match taken.as_deref_mut().and_then(|t| t.remove(&seq)) {
                        Some(v) => v,
                        None => e.slice.endpoints().to_vec(),
                    });
                    (Some(seq), Written::new(s, Some(e.ids.clone())))
                }
                None => {
                    let s = self.info.new_slice(self.keys.slice_ports(key), family);
                    (None, Written::new(s, Some(Vec::new())))
                }
            };
            let room = desired.len().min(max.saturating_sub(w.len()));
            w.slice.endpoints.get_or_insert_with(Vec::new).reserve(room);
            if let Some(ids) = &mut w.ids {
                ids.reserve(room);
            }
            while w.len() < max {
                match desired.pop() {
                    Some((id, ep)) => w.push(id, ep),
                    None => break,
                }
            }
            match seq {
                Some(seq) => updates.push((seq, w)),
                None => out.create.push(w),
            }
        }
        updates.sort_by_key(|(seq, _)| *seq);
        out.update.extend(updates);
    }

    /// The slice [`ServiceSlices::slice_to_fill`] would pick for `n` new endpoints of group
    /// `key` when no slice of the group is rewritten.
    fn fill_candidate(&self, family: Family, key: u32, n: usize) -> Result<Option<u32>, SyncError> {
        let max = self.options.max_endpoints_per_slice;
        if n >= max {
            return Ok(None);
        }
        let group: Vec<u32> = self
            .slices
            .iter()
            .filter(|(_, e)| e.owned && e.family == Some(family) && e.key == key)
            .map(|(&seq, _)| seq)
            .collect();
        Ok(self
            .slice_to_fill(&group, n, max)?
            .and_then(|i| group.get(i).copied()))
    }

    /// `getSliceToFill`: the unchanged slice that is closest to full once `n` endpoints are
    /// added without going over `max` (the first such on ties). Fails with
    /// [`SyncError::Internal`] when a slice of `unchanged` is not held (a bug of this crate).
    fn slice_to_fill(&self, unchanged: &[u32], n: usize, max: usize) -> Result<Option<usize>, SyncError> {
        let mut best: Option<(usize, usize)> = None;
        for (i, seq) in unchanged.iter().enumerate() {
            let Some(e) = self.slices.get(seq) else {
                return Err(SyncError::Internal {
                    detail: UNCHANGED_HELD,
                });
            };
            let len = e.ids.len();
            let Some(diff) = max.checked_sub(n + len) else {
                continue;
            };
            if best.is_none_or(|(d, _)| diff < d) {
                best = Some((diff, i));
                if diff == 0 {
                    break;
                }
            }
        }
        Ok(best.map(|(_, i)| i))
    }

    // ----- applying ------------------------------------------------------------------------

    /// Names the creates and turns the draft into a plan; also gives the updates and the
    /// identities known for the creates, for [`ServiceSlices::commit`].
    #[allow(clippy::type_complexity)]
    fn to_plan(
        &self,
        draft: Draft,
        names: &mut dyn NameSource,
    ) -> (
        Plan,
        Vec<(u32, Arc<EndpointSlice>, Option<Vec<EndpointId>>)>,
        Vec<Option<Vec<EndpointId>>>,
    ) {
        // Names given in this plan (a set: a 10,000-Pod Service creates 100 slices).
        let mut taken: KeyedSet<String> =
            KeyedSet::with_capacity_and_hasher(draft.create.len(), self.options.hash_key);
        let mut create = Vec::with_capacity(draft.create.len());
        let mut create_ids = Vec::with_capacity(draft.create.len());
        for Written { slice: mut s, ids } in draft.create {
            let prefix = s.metadata.generate_name.clone().unwrap_or_default();
            let mut attempt = 0u32;
            let name = loop {
                let n = names.generate(&prefix);
                if !self.by_name.contains_key(&n) && !taken.contains(&n) {
                    break n;
                }
                attempt += 1;
                if attempt > 64 {
                    let mut k = 0u64;
                    let fallback = loop {
                        let c = format!("{n}-{k}");
                        if !self.by_name.contains_key(&c) && !taken.contains(&c) {
                            break c;
                        }
                        k += 1;
                    };
                    break fallback;
                }
            };
            taken.insert(name.clone());
            s.metadata.name = Some(name);
            create.push(Arc::new(s));
            create_ids.push(ids);
        }
        let updates: Vec<(u32, Arc<EndpointSlice>, Option<Vec<EndpointId>>)> = draft
            .update
            .into_iter()
            .map(|(seq, w)| (seq, Arc::new(w.slice), w.ids))
            .collect();
        let plan = Plan {
            create,
            update: updates.iter().map(|(_, s, _)| Arc::clone(s)).collect(),
            delete: draft
                .delete
                .iter()
                .filter_map(|seq| self.slices.get(seq).map(|e| Arc::clone(&e.slice)))
                .collect(),
            errors: draft.errors,
        };
        (plan, updates, create_ids)
    }

    /// Names the creates, applies the draft to the state and returns the plan.
    fn commit(&mut self, mut draft: Draft, names: &mut dyn NameSource) -> Plan {
        if draft.unlike_reset {
            self.unlike.clear();
        }
        for &seq in &draft.delete {
            if let Some(e) = self.slices.get(&seq)
                && let Some(f) = e.family
            {
                for id in &e.ids {
                    self.unlike.remove(&(f, *id));
                }
            }
        }
        for (k, d) in std::mem::take(&mut draft.unlike) {
            match d {
                Some(d) => {
                    self.unlike.insert(k, d);
                }
                None => {
                    self.unlike.remove(&k);
                }
            }
        }
        let deletes = draft.delete.clone();
        let (plan, updates, create_ids) = self.to_plan(draft, names);
        // Keep the endpoint index in step: forget the identities a slice loses, then record
        // the ones it gains. A rewrite edits a slice in one place (an endpoint replaced, dropped
        // or appended), so only the span between the unchanged head and tail is looked at.
        let mut gained: Vec<(u32, Family, Vec<EndpointId>)> = Vec::new();
        if let Some(ix) = self.index.as_mut() {
            for &seq in &deletes {
                if let Some(e) = self.slices.get(&seq)
                    && let Some(f) = e.family
                {
                    forget(ix, f, &e.ids, seq);
                }
            }
            for (seq, _, ids) in &updates {
                if let Some(e) = self.slices.get(seq)
                    && let Some(f) = e.family
                {
                    match ids {
                        Some(new) => {
                            let (old_mid, new_mid) = changed_spans(&e.ids, new);
                            forget(ix, f, old_mid, *seq);
                            gained.push((*seq, f, new_mid.to_vec()));
                        }
                        None => forget(ix, f, &e.ids, *seq),
                    }
                }
            }
        }
        for seq in deletes {
            if let Some(e) = self.slices.remove(&seq)
                && let Some(n) = e.slice.metadata.name.as_deref()
            {
                self.by_name.remove(n);
            }
        }
        let mut all_ids: Vec<u32> = Vec::new();
        for (seq, s, ids) in updates {
            let known = ids.is_some();
            let e = self.make_entry(s, ids);
            self.slices.insert(seq, e);
            if !known {
                all_ids.push(seq);
            }
        }
        for (s, ids) in plan.create.iter().zip(create_ids) {
            all_ids.push(self.insert_entry(Arc::clone(s), ids));
        }
        if let Some(ix) = self.index.as_mut() {
            for (seq, f, ids) in gained {
                for id in ids {
                    ix.insert((f, id), seq);
                }
            }
            for seq in all_ids {
                if let Some(e) = self.slices.get(&seq)
                    && let Some(f) = e.family
                {
                    for id in &e.ids {
                        ix.insert((f, *id), seq);
                    }
                }
            }
        }
        plan
    }
}

/// Removes `ids` of slice `seq` from the index (those the index gives to another slice stay).
fn forget(ix: &mut FastMap<(Family, EndpointId), u32>, f: Family, ids: &[EndpointId], seq: u32) {
    for id in ids {
        let k = (f, *id);
        if ix.get(&k) == Some(&seq) {
            ix.remove(&k);
        }
    }
}

/// The parts of `old` and `new` between their common head and common tail.
fn changed_spans<'a>(old: &'a [EndpointId], new: &'a [EndpointId]) -> (&'a [EndpointId], &'a [EndpointId]) {
    let head = old.iter().zip(new).take_while(|(a, b)| a == b).count();
    let (old, new) = (&old[head..], &new[head..]);
    let tail = old
        .iter()
        .rev()
        .zip(new.iter().rev())
        .take_while(|(a, b)| a == b)
        .count();
    (&old[..old.len() - tail], &new[..new.len() - tail])
}

/// A slice with everything but its endpoints copied.
fn copy_without_endpoints(s: &EndpointSlice) -> EndpointSlice {
    EndpointSlice {
        api_version: s.api_version.clone(),
        kind: s.kind.clone(),
        metadata: s.metadata.clone(),
        address_type: s.address_type.clone(),
        endpoints: None,
        ports: s.ports.clone(),
    }
}

/// Equal in every field but the hints: what a slice holds is what a full reconcile would write
/// once the hints are dropped.
fn equal_but_hints(a: &Endpoint, b: &Endpoint) -> bool {
    a.addresses == b.addresses
        && a.conditions == b.conditions
        && a.hostname == b.hostname
        && a.target_ref == b.target_ref
        && a.deprecated_topology == b.deprecated_topology
        && a.node_name == b.node_name
        && a.zone == b.zone
}

fn strip_hints(s: &mut EndpointSlice) {
    for ep in s.endpoints.iter_mut().flatten() {
        if ep.hints.is_some() {
            ep.hints = None;
        }
    }
}

/// The placeholder comparison: namespace, labels, address type, and no ports or endpoints
/// (`null` and `[]` alike). Names, owners and the rest of the metadata are not compared.
fn placeholder_equal(a: &EndpointSlice, placeholder: &EndpointSlice) -> bool {
    a.metadata.namespace() == placeholder.metadata.namespace()
        && a.metadata.labels.clone().unwrap_or_default()
            == placeholder.metadata.labels.clone().unwrap_or_default()
        && a.address_type == placeholder.address_type
        && a.ports().is_empty()
        && a.endpoints().is_empty()
}

/// Plans the EndpointSlices of one Service: the full reconcile of Kubernetes' EndpointSlice
/// controller over `pods` (those in the Service's namespace matching its selector are used),
/// `nodes` and the Service's `existing` slices. New slices are named by `names`.
pub fn reconcile<'a>(
    service: &Service,
    pods: impl IntoIterator<Item = &'a Pod>,
    nodes: &NodeZones,
    existing: impl IntoIterator<Item = EndpointSlice>,
    options: &Options,
    names: &mut dyn NameSource,
) -> Result<Plan, SliceError> {
    let mut state = ServiceSlices::new(service, existing, options.clone())?;
    checked(state.plan(pods, nodes, names))
}

/// `plan`, or [`SliceError::Internal`] when planning met a broken invariant (the first one).
pub(crate) fn checked(plan: Plan) -> Result<Plan, SliceError> {
    match plan.errors.iter().find_map(SyncError::internal) {
        Some(detail) => Err(SliceError::Internal { detail }),
        None => Ok(plan),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state() -> ServiceSlices {
        let service: Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "shop"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80}]}
        }))
        .unwrap();
        ServiceSlices::new(&service, [], Options::default()).unwrap()
    }

    const MESSAGE: &str = "internal error: an unchanged slice the filler was given is not held by the state";

    /// An unchanged slice the state does not hold (a bug of this crate) is reported as
    /// `SyncError::Internal`, not a panic; the endpoints still go into new slices.
    #[test]
    fn an_unchanged_slice_that_is_not_held_is_an_internal_error() {
        let mut state = state();
        let err = state.slice_to_fill(&[7], 1, 100).unwrap_err();
        assert_eq!(
            err,
            SyncError::Internal {
                detail: UNCHANGED_HELD
            }
        );
        assert_eq!(err.to_string(), MESSAGE);

        let key = state.keys.intern(PortKey::of(&[]));
        let ep: Endpoint = serde_json::from_value(serde_json::json!({"addresses": ["10.0.0.1"]})).unwrap();
        let mut desired = DesiredSet::default();
        desired.insert(EndpointId::of(&ep), ep);
        let mut out = Draft::default();
        state.fill(Family::V4, key, desired, Vec::new(), vec![7], None, &mut out);
        assert_eq!(
            out.errors,
            [SyncError::Internal {
                detail: UNCHANGED_HELD
            }]
        );
        assert_eq!(out.create.len(), 1);
        assert!(out.update.is_empty());
    }

    /// `reconcile`, the crate's `Result` entry point, returns `SliceError::Internal` for a plan
    /// that met a broken invariant, and the plan otherwise.
    #[test]
    fn a_plan_with_an_internal_error_is_an_error() {
        let mut plan = Plan::default();
        plan.errors.push(SyncError::NodeNotFound {
            pod: "p".into(),
            namespace: "shop".into(),
            service: "web".into(),
            node: "n".into(),
        });
        assert_eq!(checked(plan.clone()), Ok(plan.clone()));
        plan.errors.push(SyncError::Internal {
            detail: UNCHANGED_HELD,
        });
        let err = checked(plan).unwrap_err();
        assert_eq!(
            err,
            SliceError::Internal {
                detail: UNCHANGED_HELD
            }
        );
        assert_eq!(err.to_string(), MESSAGE);
    }
}
