//! One-pod incremental syncs of a Service's slices: the index of which slice holds each Pod's
//! endpoints, kept up to date so that a Pod update or delete touches only its own slices and
//! gives the plan a full sync would give.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2: the controller always runs a full
//! `Reconcile` of `staging/src/k8s.io/endpointslice/reconciler.go`).

use std::collections::BTreeMap;
use std::sync::Arc;

use svcnet_model::{Endpoint, Pod};

use super::{Delta, Draft, PodEntry, ServiceSlices};
use crate::endpoint::{EndpointId, hostname_for, pod_is_endpoint_candidate, pod_key};
use crate::hash::FastMap;
use crate::names::NameSource;
use crate::nodes::NodeZones;
use crate::plan::Plan;

impl ServiceSlices {
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
        errors.append(&mut plan.errors);
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
        // The Pod's endpoints are written anew or recorded again below.
        for f in families.iter().copied() {
            for id in [old, new.as_ref().map(|(n, _)| *n)]
                .into_iter()
                .flatten()
                .filter_map(|e| e.ids[f.index()])
            {
                self.unlike.remove(&(f, id));
            }
        }
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
                // An endpoint no slice of its group holds goes into the unchanged slice that
                // `getSliceToFill` picks: move that one's endpoints out too.
                for (k, d) in &deltas {
                    if self.members.get(k).is_none_or(|n| *n == 0) {
                        continue;
                    }
                    let in_group = |id: &EndpointId| {
                        ix.get(&(f, *id))
                            .and_then(|seq| self.slices.get(seq))
                            .is_some_and(|e| e.key == *k)
                    };
                    let homeless = d.changed.iter().filter(|(id, _)| !in_group(id)).count();
                    if homeless == 0
                        || d.removed.iter().any(in_group)
                        || d.changed.iter().any(|(id, _)| in_group(id))
                    {
                        continue;
                    }
                    match self.fill_candidate(f, *k, homeless) {
                        Ok(Some(seq)) => {
                            if let Some(e) = self.slices.get_mut(&seq) {
                                let body = Arc::make_mut(&mut e.slice);
                                taken.insert(seq, body.endpoints.take().unwrap_or_default());
                            }
                        }
                        Ok(None) => {}
                        Err(e) => draft.errors.push(e),
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
            draft.absorb(d);
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
}
