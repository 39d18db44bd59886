//! The EndpointSlice reconciler, step by step as Kubernetes runs it (`Reconcile`,
//! `reconcileByAddressType`, `reconcileByPortMapping`, the placeholder, `finalize`), over a
//! state that also supports one-pod incremental syncs.
//!
//! Kubernetes walks Go maps and sets in random order; svcnet fixes every order so that the same
//! input gives the same plan: port groups in sorted port-list order, slices in the order they
//! were given (new ones after), desired endpoints in Pod order.

use std::collections::BTreeMap;
use std::sync::Arc;

use smallvec::SmallVec;
use svcnet_model::{Endpoint, EndpointSlice, Pod, Service};

use crate::endpoint::{
    EndpointId, Family, NodeCheck, build_endpoint, check_node, endpoints_equal_beyond_id, hostname_for,
    pod_is_endpoint_candidate, pod_key,
};
use crate::error::SliceError;
use crate::hash::FastMap;
use crate::names::NameSource;
use crate::nodes::NodeZones;
use crate::plan::{Plan, SyncError};
use crate::ports::{PortKey, Resolution, all_numeric, endpoint_ports, resolve};
use crate::service::{Options, ServiceInfo};

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

/// Interned port-list keys.
#[derive(Debug, Clone, Default)]
struct Keys {
    keys: Vec<PortKey>,
    ids: FastMap<PortKey, u32>,
}

impl Keys {
    fn intern(&mut self, k: PortKey) -> u32 {
        if let Some(&i) = self.ids.get(&k) {
            return i;
        }
        let i = u32::try_from(self.keys.len()).unwrap_or(u32::MAX);
        self.keys.push(k.clone());
        self.ids.insert(k, i);
        i
    }

    fn get(&self, id: u32) -> &PortKey {
        static EMPTY: PortKey = PortKey(Vec::new());
        self.keys.get(id as usize).unwrap_or(&EMPTY)
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
            if let Some(slot) = self.eps.get_mut(i) {
                if slot.is_none() {
                    self.remaining += 1;
                }
                *slot = Some((id, ep));
            }
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

    fn pop(&mut self) -> Option<Endpoint> {
        while let Some(slot) = self.eps.get_mut(self.cursor) {
            self.cursor += 1;
            if let Some((_, ep)) = slot.take() {
                self.remaining -= 1;
                return Some(ep);
            }
        }
        None
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
    index: FastMap<EndpointId, (usize, usize)>,
}

impl Direct {
    /// Adds an endpoint; `left` bounds how many more may come (to size new slices).
    fn insert(&mut self, id: EndpointId, ep: Endpoint, max: usize, left: usize) {
        if let Some(&(s, p)) = self.index.get(&id) {
            if let Some(slot) = self.slices.get_mut(s).and_then(|v| v.get_mut(p)) {
                *slot = ep;
            }
            return;
        }
        if self.slices.last().is_none_or(|v| v.len() >= max) {
            self.slices.push(Vec::with_capacity(left.clamp(1, max)));
        }
        let s = self.slices.len() - 1;
        if let Some(v) = self.slices.last_mut() {
            self.index.insert(id, (s, v.len()));
            v.push(ep);
        }
    }
}

/// The writes of one family before they become a [`Plan`]: updates and deletes name existing
/// slices by sequence number.
#[derive(Debug, Default)]
struct Draft {
    create: Vec<EndpointSlice>,
    update: Vec<(u32, EndpointSlice)>,
    delete: Vec<u32>,
    errors: Vec<SyncError>,
}

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
#[derive(Debug, Clone)]
pub struct ServiceSlices {
    info: ServiceInfo,
    options: Options,
    slices: BTreeMap<u32, Entry>,
    by_name: FastMap<String, u32>,
    next_seq: u32,
    keys: Keys,
    /// Pods considered per port group (a group is desired while this is non-zero).
    members: FastMap<u32, usize>,
    pods: FastMap<u128, PodEntry>,
    pending_pods: Vec<(u128, PodEntry)>,
    index: Option<FastMap<(Family, EndpointId), u32>>,
}

impl ServiceSlices {
    /// A state for `service` with its existing slices (those labelled with its name and managed
    /// by the EndpointSlice controller; the caller filters).
    pub fn new(
        service: &Service,
        existing: impl IntoIterator<Item = EndpointSlice>,
        options: Options,
    ) -> Result<ServiceSlices, SliceError> {
        options.check()?;
        let info = ServiceInfo::new(service, &options)?;
        let mut s = ServiceSlices {
            info,
            options,
            slices: BTreeMap::new(),
            by_name: FastMap::default(),
            next_seq: 0,
            keys: Keys::default(),
            members: FastMap::default(),
            pods: FastMap::default(),
            pending_pods: Vec::new(),
            index: None,
        };
        for slice in existing {
            s.insert_entry(Arc::new(slice));
        }
        Ok(s)
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

    fn make_entry(&mut self, slice: Arc<EndpointSlice>) -> Entry {
        let family = Family::from_address_type(&slice.address_type);
        let key = self.keys.intern(PortKey::of(slice.ports()));
        let owned = self.info.owns(&slice);
        let ids = slice.endpoints().iter().map(EndpointId::of).collect();
        Entry {
            slice,
            ids,
            family,
            key,
            owned,
        }
    }

    fn insert_entry(&mut self, slice: Arc<EndpointSlice>) -> u32 {
        let seq = self.next_seq;
        self.next_seq += 1;
        let e = self.make_entry(slice);
        if let Some(n) = e.slice.metadata.name.clone() {
            self.by_name.insert(n, seq);
        }
        self.slices.insert(seq, e);
        seq
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

    /// The endpoint of `pod` for `family`, or an error when its Node is missing (and the
    /// Service does not publish not-ready addresses).
    fn endpoint_for(
        &self,
        pod: &Pod,
        nodes: &NodeZones,
        family: Family,
        hostname: bool,
    ) -> Result<Option<Endpoint>, SyncError> {
        let zone = match check_node(nodes, pod) {
            NodeCheck::Found(z) => z,
            NodeCheck::Missing if self.info.publish_not_ready => None,
            NodeCheck::Missing => {
                return Err(SyncError::NodeNotFound {
                    pod: pod.metadata.name().to_owned(),
                    namespace: self.info.namespace.clone(),
                    service: self.info.name.clone(),
                    node: pod.spec().node_name().to_owned(),
                });
            }
        };
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
        let mut desired: FastMap<(Family, u32), Wanted> = FastMap::default();
        // Groups without an existing slice go straight into new slices.
        let with_slices: Vec<(Family, u32)> = self
            .slices
            .values()
            .filter(|e| e.owned)
            .filter_map(|e| e.family.map(|f| (f, e.key)))
            .collect();
        let max = self.options.max_endpoints_per_slice;
        let mut seen = 0usize;
        let mut members: FastMap<u32, usize> = FastMap::default();
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
            *members.entry(key).or_insert(0) += 1;
            let hostname = hostname_for(pod, &self.info.name, &self.info.namespace);
            let mut entry = PodEntry { key, ids: [None; 2] };
            for &f in &families {
                match self.endpoint_for(pod, nodes, f, hostname) {
                    Ok(Some(ep)) => {
                        let id = EndpointId::of(&ep);
                        entry.ids[f.index()] = Some(id);
                        let w = desired.entry((f, key)).or_insert_with(|| {
                            if with_slices.contains(&(f, key)) {
                                Wanted::Set(DesiredSet::with_capacity(if numeric { n_pods } else { 0 }))
                            } else {
                                Wanted::Direct(Direct::default())
                            }
                        });
                        match w {
                            Wanted::Set(set) => set.insert(id, ep),
                            Wanted::Direct(d) => d.insert(id, ep, max, n_pods + 1 - seen),
                        }
                    }
                    Ok(None) => {}
                    Err(e) => errors.push(e),
                }
            }
            if track_pods {
                pod_entries.push((pod_key(pod.metadata.namespace(), pod.metadata.name()), entry));
            }
        }
        let mut draft = Draft {
            errors,
            ..Draft::default()
        };
        for &f in &families {
            let d = self.reconcile_family(
                f,
                &members,
                |state, key, slices, out| match desired.remove(&(f, key)) {
                    Some(Wanted::Direct(d)) if slices.is_empty() => {
                        for eps in d.slices {
                            let mut s = state.info.new_slice(state.keys.get(key).0.clone(), f);
                            s.endpoints = Some(eps);
                            out.create.push(s);
                        }
                    }
                    Some(Wanted::Direct(d)) => {
                        let mut set = DesiredSet::default();
                        for (id, ep) in d.slices.into_iter().flatten().map(|ep| (EndpointId::of(&ep), ep)) {
                            set.insert(id, ep);
                        }
                        state.group_full(f, key, slices, set, out);
                    }
                    Some(Wanted::Set(set)) => state.group_full(f, key, slices, set, out),
                    None => state.group_full(f, key, slices, DesiredSet::default(), out),
                },
                true,
            );
            draft.create.extend(d.create);
            draft.update.extend(d.update);
            draft.delete.extend(d.delete);
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
                out.create.push(placeholder);
            }
        }

        if !self.info.keep_hints {
            for s in out.create.iter_mut().chain(out.update.iter_mut().map(|(_, s)| s)) {
                strip_hints(s);
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
                        strip_hints(&mut s);
                        extra.push((seq, s));
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
                if let Some(mut s) = out.create.pop() {
                    s.metadata.name = self.slices.get(&seq).and_then(|e| e.slice.metadata.name.clone());
                    out.update.push((seq, s));
                    out.delete.remove(i);
                }
            } else {
                i += 1;
            }
        }
        if self.info.deleting {
            out.create.clear();
        }
        for s in out.create.iter_mut().chain(out.update.iter_mut().map(|(_, s)| s)) {
            self.stamp_trigger_time(s);
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
        let mut updates: Vec<(u32, EndpointSlice)> = Vec::new();
        let mut unchanged: Vec<u32> = Vec::new();
        for &seq in slices {
            let Some(e) = self.slices.get(&seq) else { continue };
            let old = e.slice.endpoints();
            let mut kept: Vec<Endpoint> = Vec::with_capacity(old.len());
            let mut changed = false;
            for (ep, id) in old.iter().zip(&e.ids) {
                if let Some(d) = desired.take(*id) {
                    if !endpoints_equal_beyond_id(&d, ep) {
                        changed = true;
                    }
                    kept.push(d);
                }
            }
            let (labels, labels_changed) = self.info.slice_labels(e.slice.metadata.labels.as_ref());
            if changed || kept.len() != old.len() {
                if kept.is_empty() {
                    out.delete.push(seq);
                } else {
                    let mut s = copy_without_endpoints(&e.slice);
                    s.endpoints = Some(kept);
                    s.metadata.labels = Some(labels);
                    updates.push((seq, s));
                }
            } else if labels_changed {
                let mut s = EndpointSlice::clone(&e.slice);
                s.metadata.labels = Some(labels);
                updates.push((seq, s));
            } else {
                unchanged.push(seq);
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
        let mut updates: Vec<(u32, EndpointSlice)> = Vec::new();
        let mut unchanged: Vec<u32> = Vec::new();
        for &seq in slices {
            if !touched.contains(&seq) {
                unchanged.push(seq);
                continue;
            }
            let Some(e) = self.slices.get(&seq) else { continue };
            // The endpoints were moved out of the state for this sync; they go back unless the
            // slice is rewritten.
            let old = match taken.remove(&seq) {
                Some(v) => v,
                None => e.slice.endpoints().to_vec(),
            };
            let n_old = old.len();
            let mut kept: Vec<Endpoint> = Vec::with_capacity(n_old);
            let mut dropped: Vec<Endpoint> = Vec::new();
            let mut originals: Vec<(usize, Endpoint)> = Vec::new();
            let mut changed = false;
            for (ep, &id) in old.into_iter().zip(&e.ids) {
                if delta.removed.contains(&id) {
                    dropped.push(ep);
                    continue;
                }
                match desired.take(id) {
                    Some(d) => {
                        if !endpoints_equal_beyond_id(&d, &ep) {
                            changed = true;
                        }
                        originals.push((kept.len(), ep));
                        kept.push(d);
                    }
                    None => kept.push(ep),
                }
            }
            let (labels, labels_changed) = self.info.slice_labels(e.slice.metadata.labels.as_ref());
            if changed || kept.len() != n_old {
                if kept.is_empty() {
                    taken.insert(seq, dropped);
                    out.delete.push(seq);
                } else {
                    let mut s = copy_without_endpoints(&e.slice);
                    s.endpoints = Some(kept);
                    s.metadata.labels = Some(labels);
                    updates.push((seq, s));
                }
                continue;
            }
            for (pos, ep) in originals {
                if let Some(slot) = kept.get_mut(pos) {
                    *slot = ep;
                }
            }
            if labels_changed {
                let mut s = copy_without_endpoints(&e.slice);
                s.endpoints = Some(kept.clone());
                s.metadata.labels = Some(labels);
                updates.push((seq, s));
            } else {
                unchanged.push(seq);
            }
            taken.insert(seq, kept);
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
        mut updates: Vec<(u32, EndpointSlice)>,
        mut unchanged: Vec<u32>,
        mut taken: Option<&mut FastMap<u32, Vec<Endpoint>>>,
        out: &mut Draft,
    ) {
        let max = self.options.max_endpoints_per_slice;
        if desired.len() > 0 && !updates.is_empty() {
            let mut order: Vec<usize> = (0..updates.len()).collect();
            order.sort_by_key(|&i| std::cmp::Reverse(updates[i].1.endpoints().len()));
            for i in order {
                let Some((_, s)) = updates.get_mut(i) else {
                    continue;
                };
                let eps = s.endpoints.get_or_insert_with(Vec::new);
                while eps.len() < max {
                    match desired.pop() {
                        Some(ep) => eps.push(ep),
                        None => break,
                    }
                }
            }
        }
        while desired.len() > 0 {
            let mut target: Option<usize> = None;
            if desired.len() < max && !unchanged.is_empty() {
                target = self.slice_to_fill(&unchanged, desired.len(), max);
            }
            let (seq, mut s) = match target {
                Some(i) => {
                    let seq = unchanged.remove(i);
                    let Some(e) = self.slices.get(&seq) else { continue };
                    let mut s = copy_without_endpoints(&e.slice);
                    s.endpoints = Some(match taken.as_deref_mut().and_then(|t| t.remove(&seq)) {
                        Some(v) => v,
                        None => e.slice.endpoints().to_vec(),
                    });
                    (Some(seq), s)
                }
                None => (None, self.info.new_slice(self.keys.get(key).0.clone(), family)),
            };
            let eps = s.endpoints.get_or_insert_with(Vec::new);
            eps.reserve(desired.len().min(max.saturating_sub(eps.len())));
            while eps.len() < max {
                match desired.pop() {
                    Some(ep) => eps.push(ep),
                    None => break,
                }
            }
            match seq {
                Some(seq) => updates.push((seq, s)),
                None => out.create.push(s),
            }
        }
        updates.sort_by_key(|(seq, _)| *seq);
        out.update.extend(updates);
    }

    /// `getSliceToFill`: the unchanged slice that is closest to full once `n` endpoints are
    /// added without going over `max` (the first such on ties).
    fn slice_to_fill(&self, unchanged: &[u32], n: usize, max: usize) -> Option<usize> {
        let mut best: Option<(usize, usize)> = None;
        for (i, seq) in unchanged.iter().enumerate() {
            let len = self.slices.get(seq).map_or(0, |e| e.ids.len());
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
        best.map(|(_, i)| i)
    }

    // ----- incremental ---------------------------------------------------------------------

    fn ensure_index(&mut self) {
        if !self.pending_pods.is_empty() {
            for (k, e) in self.pending_pods.drain(..) {
                self.pods.insert(k, e);
            }
        }
        if self.index.is_some() {
            return;
        }
        let mut ix = FastMap::default();
        for (&seq, e) in &self.slices {
            if let Some(f) = e.family {
                for id in &e.ids {
                    ix.insert((f, *id), seq);
                }
            }
        }
        self.index = Some(ix);
    }

    /// Syncs after one Pod was added or changed (a Pod the Service no longer selects, or one
    /// that no longer qualifies, is removed), applies the plan and returns it. Touches only the
    /// slices that hold or gain the Pod, and gives the plan the full reconcile would give.
    ///
    /// The state must be in step with the Pods: call [`ServiceSlices::sync`] once first (before
    /// that the state knows no Pods), and apply every plan it returns. A Node's zone change or a
    /// Service change needs a full sync.
    pub fn update_pod(&mut self, pod: &Pod, nodes: &NodeZones, names: &mut dyn NameSource) -> Plan {
        self.ensure_index();
        let pk = pod_key(pod.metadata.namespace(), pod.metadata.name());
        let mut errors = Vec::new();
        let mut new: Option<(PodEntry, [Option<Endpoint>; 2])> = None;
        if self.info.selects(pod) && pod_is_endpoint_candidate(pod, true) {
            let key = self.group_of(pod, &mut FastMap::default());
            let hostname = hostname_for(pod, &self.info.name, &self.info.namespace);
            let mut entry = PodEntry { key, ids: [None; 2] };
            let mut eps: [Option<Endpoint>; 2] = [None, None];
            for f in self.info.families.clone() {
                match self.endpoint_for(pod, nodes, f, hostname) {
                    Ok(Some(ep)) => {
                        entry.ids[f.index()] = Some(EndpointId::of(&ep));
                        eps[f.index()] = Some(ep);
                    }
                    Ok(None) => {}
                    Err(e) => errors.push(e),
                }
            }
            new = Some((entry, eps));
        }
        let mut plan = self.apply_pod_change(pk, new, names);
        plan.errors = errors;
        plan
    }

    /// Syncs after one Pod was deleted, as [`ServiceSlices::update_pod`] does.
    pub fn delete_pod(&mut self, namespace: &str, name: &str, names: &mut dyn NameSource) -> Plan {
        self.ensure_index();
        self.apply_pod_change(pod_key(namespace, name), None, names)
    }

    fn apply_pod_change(
        &mut self,
        pk: u128,
        new: Option<(PodEntry, [Option<Endpoint>; 2])>,
        names: &mut dyn NameSource,
    ) -> Plan {
        let old = self.pods.get(&pk).copied();
        if let Some(o) = old
            && let Some(n) = self.members.get_mut(&o.key)
        {
            *n = n.saturating_sub(1);
        }
        if let Some((n, _)) = &new {
            *self.members.entry(n.key).or_insert(0) += 1;
        }
        let mut draft = Draft::default();
        let families = self.info.families.clone();
        let mut new_eps = new.as_ref().map(|(_, e)| e.clone()).unwrap_or_default();
        for f in families {
            let mut deltas: BTreeMap<u32, Delta> = BTreeMap::new();
            let old_id = old.and_then(|o| o.ids[f.index()].map(|id| (o.key, id)));
            let new_id = new
                .as_ref()
                .and_then(|(n, _)| n.ids[f.index()].map(|id| (n.key, id)));
            if let Some((k, id)) = old_id
                && old_id != new_id
            {
                deltas.entry(k).or_default().removed.push(id);
            }
            if let (Some((k, id)), Some(ep)) = (new_id, new_eps[f.index()].take()) {
                deltas.entry(k).or_default().changed.push((id, ep));
            }
            if old.map(|o| o.key) != new.as_ref().map(|(n, _)| n.key) {
                // Membership changed: groups may have become (un)desired.
                for k in old.iter().map(|o| o.key).chain(new.iter().map(|(n, _)| n.key)) {
                    deltas.entry(k).or_default();
                }
            }
            // Move the endpoints of the slices this change touches out of the state, so that
            // rewriting them does not copy every endpoint (they are restored if untouched).
            let mut taken: FastMap<u32, Vec<Endpoint>> = FastMap::default();
            if let Some(ix) = &self.index {
                for (k, d) in &deltas {
                    if self.members.get(k).is_none_or(|n| *n == 0) {
                        continue;
                    }
                    let ids = d.removed.iter().chain(d.changed.iter().map(|(id, _)| id));
                    for id in ids {
                        if let Some(&seq) = ix.get(&(f, *id))
                            && !taken.contains_key(&seq)
                            && let Some(e) = self.slices.get_mut(&seq)
                            && e.key == *k
                        {
                            // In place when no plan shares the slice any more.
                            let body = Arc::make_mut(&mut e.slice);
                            taken.insert(seq, body.endpoints.take().unwrap_or_default());
                        }
                    }
                }
            }
            let d = self.reconcile_family(
                f,
                &self.members,
                |state, key, slices, out| {
                    if let Some(delta) = deltas.remove(&key) {
                        state.group_delta(f, key, slices, delta, &mut taken, out);
                    }
                },
                false,
            );
            for (seq, v) in taken {
                if let Some(e) = self.slices.get_mut(&seq) {
                    Arc::make_mut(&mut e.slice).endpoints = Some(v);
                }
            }
            draft.create.extend(d.create);
            draft.update.extend(d.update);
            draft.delete.extend(d.delete);
        }
        match new {
            Some((n, _)) => {
                self.pods.insert(pk, n);
            }
            None => {
                self.pods.remove(&pk);
            }
        }
        self.commit(draft, names)
    }

    // ----- applying ------------------------------------------------------------------------

    fn to_plan(&self, draft: Draft, names: &mut dyn NameSource) -> (Plan, Vec<(u32, Arc<EndpointSlice>)>) {
        let mut taken: Vec<String> = Vec::new();
        let mut create = draft.create;
        for s in &mut create {
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
            taken.push(name.clone());
            s.metadata.name = Some(name);
        }
        let updates: Vec<(u32, Arc<EndpointSlice>)> = draft
            .update
            .into_iter()
            .map(|(seq, s)| (seq, Arc::new(s)))
            .collect();
        let plan = Plan {
            create: create.into_iter().map(Arc::new).collect(),
            update: updates.iter().map(|(_, s)| Arc::clone(s)).collect(),
            delete: draft
                .delete
                .iter()
                .filter_map(|seq| self.slices.get(seq).map(|e| Arc::clone(&e.slice)))
                .collect(),
            errors: draft.errors,
        };
        (plan, updates)
    }

    /// Names the creates, applies the draft to the state and returns the plan.
    fn commit(&mut self, draft: Draft, names: &mut dyn NameSource) -> Plan {
        let deletes = draft.delete.clone();
        let (plan, updates) = self.to_plan(draft, names);
        // Forget the endpoints of every slice rewritten or removed, then record the new ones.
        for &seq in deletes.iter().chain(updates.iter().map(|(s, _)| s)) {
            if let (Some(ix), Some(e)) = (self.index.as_mut(), self.slices.get(&seq))
                && let Some(f) = e.family
            {
                for id in &e.ids {
                    let k = (f, *id);
                    if ix.get(&k) == Some(&seq) {
                        ix.remove(&k);
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
        let mut touched: Vec<u32> = Vec::new();
        for (seq, s) in updates {
            let e = self.make_entry(s);
            self.slices.insert(seq, e);
            touched.push(seq);
        }
        for s in &plan.create {
            touched.push(self.insert_entry(Arc::clone(s)));
        }
        if let Some(ix) = self.index.as_mut() {
            for seq in touched {
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

fn strip_hints(s: &mut EndpointSlice) {
    for ep in s.endpoints.iter_mut().flatten() {
        ep.hints = None;
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
    Ok(state.plan(pods, nodes, names))
}
