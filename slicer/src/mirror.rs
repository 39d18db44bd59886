//! Mirroring: the EndpointSlices of a selector-less Service, copied from its `Endpoints`
//! (Kubernetes' EndpointSliceMirroring controller).
//!
//! Follows Kubernetes v1.37.2:
//! `pkg/controller/endpointslicemirroring/endpointslicemirroring_controller.go`, `reconciler.go`,
//! `reconciler_helpers.go` and `utils.go`.

use std::borrow::Borrow;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::net::IpAddr;
use std::sync::Arc;

use svcnet_model::{
    EndpointAddress, EndpointConditions, EndpointPort, EndpointSlice, Endpoints, OwnerReference, Service,
    StringMap, labels as slice_labels,
};

use crate::endpoint::{EndpointId, Family, endpoints_equal_beyond_id};
use crate::names::{NameSource, slice_name_prefix};
use crate::plan::Plan;
use crate::ports::{PortKey, kubernetes_port_order};
use crate::repack::repack_subsets;
use crate::service::empty_slice;

/// The label that turns mirroring off for an `Endpoints` object (value `true`).
const SKIP_MIRROR: &str = "endpointslice.kubernetes.io/skip-mirror";
/// The annotation of leader-election records kept in `Endpoints` objects.
const LEADER: &str = "control-plane.alpha.kubernetes.io/leader";
const TRIGGER_TIME: &str = "endpoints.kubernetes.io/last-change-trigger-time";
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// Mirroring settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MirrorOptions {
    /// The most addresses mirrored per `Endpoints` subset (Kubernetes: 1000).
    pub max_endpoints_per_subset: usize,
}

impl Default for MirrorOptions {
    fn default() -> Self {
        MirrorOptions {
            max_endpoints_per_subset: 1000,
        }
    }
}

/// A warning event the mirroring controller records on the `Endpoints` object.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum MirrorEvent {
    /// Addresses that are not IPs were skipped (`InvalidIPAddress`).
    InvalidIpAddress {
        /// How many.
        skipped: usize,
    },
    /// Addresses beyond the per-subset maximum were skipped (`TooManyAddressesToMirror`).
    TooManyAddressesToMirror {
        /// The per-subset maximum.
        max: usize,
        /// Addresses skipped in all (invalid ones included).
        skipped: usize,
    },
}

impl MirrorEvent {
    /// The event's reason.
    pub fn reason(&self) -> &'static str {
        match self {
            MirrorEvent::InvalidIpAddress { .. } => "InvalidIPAddress",
            MirrorEvent::TooManyAddressesToMirror { .. } => "TooManyAddressesToMirror",
        }
    }
}

impl fmt::Display for MirrorEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MirrorEvent::InvalidIpAddress { skipped } => write!(
                f,
                "Skipped {skipped} invalid IP addresses when mirroring to EndpointSlices"
            ),
            MirrorEvent::TooManyAddressesToMirror { max, skipped } => write!(
                f,
                "A max of {max} addresses can be mirrored to EndpointSlices per Endpoints subset. {skipped} addresses were skipped"
            ),
        }
    }
}

/// A mirroring plan and the events recorded while computing it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct MirrorPlan {
    /// The slice writes.
    pub plan: Plan,
    /// Warning events on the `Endpoints` object.
    pub events: Vec<MirrorEvent>,
}

/// Parses an IP as Go's `ParseIPSloppy` does (IPv4 octets may carry leading zeros) and gives its
/// family and canonical text (an IPv4-mapped IPv6 address is IPv4).
fn parse_ip_sloppy(s: &str) -> Option<(Family, String)> {
    Some(match svcnet_model::validation::names::parse_ip_sloppy(s)? {
        IpAddr::V4(v4) => (Family::V4, v4.to_string()),
        IpAddr::V6(v6) => (Family::V6, v6.to_string()),
    })
}

fn address_to_endpoint(a: &EndpointAddress, ready: bool) -> Option<(Family, svcnet_model::Endpoint)> {
    let (family, text) = parse_ip_sloppy(&a.ip)?;
    Some((
        family,
        svcnet_model::Endpoint {
            addresses: svcnet_model::smallvec![text.into()],
            conditions: EndpointConditions {
                ready: Some(ready),
                ..Default::default()
            },
            hostname: a.hostname.as_deref().filter(|h| !h.is_empty()).map(Into::into),
            target_ref: a.target_ref.clone().map(Box::new),
            node_name: a.node_name.as_deref().map(Into::into),
            ..Default::default()
        },
    ))
}

fn without(map: Option<&StringMap>, keys: &[&str]) -> StringMap {
    map.into_iter()
        .flatten()
        .filter(|(k, _)| !keys.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Desired endpoints of one (family, port list) key, in insertion order.
#[derive(Default)]
struct Desired {
    /// `None` for a subset without ports (the slice says `ports: null`).
    ports: Option<Vec<EndpointPort>>,
    eps: Vec<Option<svcnet_model::Endpoint>>,
    index: HashMap<EndpointId, usize>,
}

impl Desired {
    fn insert(&mut self, ep: svcnet_model::Endpoint) {
        let id = EndpointId::of(&ep);
        match self.index.get(&id) {
            Some(&i) => {
                // The index holds positions in `eps`.
                self.eps[i] = Some(ep);
            }
            None => {
                self.index.insert(id, self.eps.len());
                self.eps.push(Some(ep));
            }
        }
    }

    fn get(&self, id: &EndpointId) -> Option<&svcnet_model::Endpoint> {
        self.index
            .get(id)
            .and_then(|&i| self.eps.get(i))
            .and_then(Option::as_ref)
    }

    fn len(&self) -> usize {
        self.index.len()
    }
}

/// Mirrors a selector-less Service's `Endpoints` into EndpointSlices, as Kubernetes'
/// EndpointSliceMirroring controller does, given the slices it mirrored before (labelled with
/// the Service's name and managed by `endpointslicemirroring-controller.k8s.io`).
///
/// Every mirrored slice is deleted when there is nothing to mirror: no `Endpoints`, no Service,
/// a Service with a selector, or an `Endpoints` labelled `endpointslice.kubernetes.io/skip-mirror:
/// "true"` or carrying a leader-election annotation.
pub fn mirror(
    service: Option<&Service>,
    endpoints: Option<&Endpoints>,
    existing: &[EndpointSlice],
    options: &MirrorOptions,
    names: &mut dyn NameSource,
) -> MirrorPlan {
    mirror_any(service, endpoints, existing, options, names)
}

/// As [`mirror`], with the existing slices shared: the plan's deletes share them too.
pub(crate) fn mirror_shared(
    service: Option<&Service>,
    endpoints: Option<&Endpoints>,
    existing: &[Arc<EndpointSlice>],
    options: &MirrorOptions,
    names: &mut dyn NameSource,
) -> MirrorPlan {
    mirror_any(service, endpoints, existing, options, names)
}

fn mirror_any<S>(
    service: Option<&Service>,
    endpoints: Option<&Endpoints>,
    existing: &[S],
    options: &MirrorOptions,
    names: &mut dyn NameSource,
) -> MirrorPlan
where
    S: Borrow<EndpointSlice> + Clone + Into<Arc<EndpointSlice>>,
{
    let delete_all = || MirrorPlan {
        plan: Plan {
            delete: existing.iter().cloned().map(Into::into).collect(),
            ..Plan::default()
        },
        events: Vec::new(),
    };
    let Some(eps) = endpoints else { return delete_all() };
    let skip = eps.metadata.label(SKIP_MIRROR) == Some("true") || eps.metadata.annotation(LEADER).is_some();
    let Some(svc) = service else { return delete_all() };
    if skip || svc.spec().selector.is_some() {
        return delete_all();
    }

    // Desired state, from the canonical subsets.
    let max = options.max_endpoints_per_subset;
    let mut desired: BTreeMap<(Family, PortKey), Desired> = BTreeMap::new();
    let mut invalid = 0usize;
    let mut skipped = 0usize;
    for subset in repack_subsets(eps.subsets()) {
        // A subset without ports (kept by `RepackSubsets` under its sentinel) is mirrored into
        // a slice without ports. Ports come in the order `NewPortMapKey` leaves them.
        let ports: Option<Vec<EndpointPort>> = subset.ports.as_ref().map(|ps| {
            let mut v: Vec<EndpointPort> = ps
                .iter()
                .map(|p| EndpointPort {
                    name: Some(p.name.clone().unwrap_or_default()),
                    protocol: Some(p.protocol().to_owned()),
                    port: Some(p.port),
                    app_protocol: p.app_protocol.clone(),
                })
                .collect();
            kubernetes_port_order(&mut v);
            v
        });
        let key = PortKey::of(ports.as_deref().unwrap_or(&[]));
        for f in Family::ALL {
            desired.entry((f, key.clone())).or_default().ports = ports.clone();
        }
        let ready = subset.addresses.iter().flatten().map(|a| (a, true));
        let not_ready = subset.not_ready_addresses.iter().flatten().map(|a| (a, false));
        let total = subset.addresses.as_ref().map_or(0, Vec::len)
            + subset.not_ready_addresses.as_ref().map_or(0, Vec::len);
        let mut added = 0usize;
        for (a, r) in ready.chain(not_ready) {
            if added >= max {
                break;
            }
            match address_to_endpoint(a, r) {
                Some((f, ep)) => {
                    desired.entry((f, key.clone())).or_default().insert(ep);
                    added += 1;
                }
                None => invalid += 1,
            }
        }
        skipped += total - added;
    }
    let mut events = Vec::new();
    if invalid > 0 {
        events.push(MirrorEvent::InvalidIpAddress { skipped: invalid });
    }
    if skipped > invalid {
        events.push(MirrorEvent::TooManyAddressesToMirror { max, skipped });
    }

    // Existing state by (address type, port list).
    let mut by_key: BTreeMap<(String, PortKey), Vec<usize>> = BTreeMap::new();
    for (i, s) in existing.iter().map(Borrow::borrow).enumerate() {
        by_key
            .entry((s.address_type.clone(), PortKey::of(s.ports())))
            .or_default()
            .push(i);
    }

    let want_annotations = without(eps.metadata.annotations.as_ref(), &[TRIGGER_TIME, LAST_APPLIED]);
    let want_labels: StringMap = eps.metadata.labels.clone().unwrap_or_default();
    let mut create: Vec<EndpointSlice> = Vec::new();
    let mut update: Vec<EndpointSlice> = Vec::new();
    let mut delete: Vec<usize> = Vec::new();
    for ((family, key), d) in &desired {
        let have = by_key
            .remove(&(family.address_type().to_owned(), key.clone()))
            .unwrap_or_default();
        if d.len() == 0 {
            delete.extend(have);
            continue;
        }
        let mut name = None;
        if let Some((&first, rest)) = have.split_first() {
            delete.extend_from_slice(rest);
            let Some(s) = existing.get(first).map(Borrow::borrow) else {
                continue;
            };
            let have_labels = without(
                s.metadata.labels.as_ref(),
                &[slice_labels::MANAGED_BY, slice_labels::SERVICE_NAME],
            );
            let have_annotations = s.metadata.annotations.clone().unwrap_or_default();
            if matches_exactly(s, d, max)
                && have_labels == want_labels
                && have_annotations == want_annotations
            {
                continue;
            }
            name = s.metadata.name.clone();
        }
        let mut slice = new_mirrored_slice(eps, d.ports.clone(), *family, name, &want_annotations);
        let list = slice.endpoints.get_or_insert_with(Vec::new);
        list.extend(d.eps.iter().flatten().take(max).cloned());
        if slice.metadata.name.is_some() {
            update.push(slice);
        } else {
            create.push(slice);
        }
    }
    for (_, idx) in by_key {
        delete.extend(idx);
    }

    // Recycle: creates become updates of slices of the same address type that would be deleted.
    let mut delete_slices: Vec<S> = delete.iter().filter_map(|&i| existing.get(i).cloned()).collect();
    for f in Family::ALL {
        let at = f.address_type();
        loop {
            let c = create.iter().position(|s| s.address_type == at);
            let d = delete_slices.iter().position(|s| s.borrow().address_type == at);
            let (Some(c), Some(d)) = (c, d) else { break };
            let mut s = create.remove(c);
            let gone = delete_slices.remove(d);
            s.metadata.name.clone_from(&gone.borrow().metadata.name);
            update.push(s);
        }
    }
    if eps.metadata.deletion_timestamp.is_some() {
        create.clear();
    }
    let mut taken: Vec<String> = existing
        .iter()
        .filter_map(|s| s.borrow().metadata.name.clone())
        .collect();
    for s in &mut create {
        let prefix = s.metadata.generate_name.clone().unwrap_or_default();
        let mut n = names.generate(&prefix);
        let mut k = 0u32;
        while taken.contains(&n) {
            k += 1;
            n = if k > 64 {
                format!("{prefix}{k}")
            } else {
                names.generate(&prefix)
            };
        }
        taken.push(n.clone());
        s.metadata.name = Some(n);
    }
    MirrorPlan {
        plan: Plan {
            create: create.into_iter().map(Arc::new).collect(),
            update: update.into_iter().map(Arc::new).collect(),
            delete: delete_slices.into_iter().map(Into::into).collect(),
            errors: Vec::new(),
        },
        events,
    }
}

/// `totalChanges` is zero: every existing endpoint is desired and equal, and nothing is missing.
/// True when the slice holds only desired endpoints, unchanged, and as many as a written slice
/// would hold (at most `max`: two subsets whose ports share one key can desire more).
fn matches_exactly(s: &EndpointSlice, d: &Desired, max: usize) -> bool {
    let mut matched = 0usize;
    for ep in s.endpoints() {
        match d.get(&EndpointId::of(ep)) {
            Some(want) if endpoints_equal_beyond_id(want, ep) && EndpointId::same_identity(want, ep) => {
                matched += 1
            }
            _ => return false,
        }
    }
    matched == d.len().min(max)
}

fn new_mirrored_slice(
    eps: &Endpoints,
    ports: Option<Vec<EndpointPort>>,
    family: Family,
    name: Option<String>,
    annotations: &StringMap,
) -> EndpointSlice {
    let mut labels = eps.metadata.labels.clone().unwrap_or_default();
    labels.insert(
        slice_labels::SERVICE_NAME.to_owned(),
        eps.metadata.name().to_owned(),
    );
    labels.insert(
        slice_labels::MANAGED_BY.to_owned(),
        slice_labels::MIRRORING_CONTROLLER_NAME.to_owned(),
    );
    let mut s = empty_slice(family, Vec::new());
    s.ports = ports;
    s.metadata.namespace = eps.metadata.namespace.clone();
    s.metadata.labels = Some(labels);
    s.metadata.annotations = (!annotations.is_empty()).then(|| annotations.clone());
    s.metadata.owner_references = Some(vec![OwnerReference {
        api_version: "v1".into(),
        kind: "Endpoints".into(),
        name: eps.metadata.name().to_owned(),
        uid: eps.metadata.uid.clone().unwrap_or_default(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }]);
    match name {
        Some(n) => s.metadata.name = Some(n),
        None => s.metadata.generate_name = Some(slice_name_prefix(eps.metadata.name())),
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sloppy_ips() {
        assert_eq!(
            parse_ip_sloppy("010.0.0.1"),
            Some((Family::V4, "10.0.0.1".into()))
        );
        assert_eq!(
            parse_ip_sloppy("::ffff:1.2.3.4"),
            Some((Family::V4, "1.2.3.4".into()))
        );
        assert_eq!(
            parse_ip_sloppy("2001:db8:0:0::1"),
            Some((Family::V6, "2001:db8::1".into()))
        );
        assert_eq!(parse_ip_sloppy("1.2.3"), None);
        assert_eq!(parse_ip_sloppy("256.0.0.1"), None);
        assert_eq!(parse_ip_sloppy("foo"), None);
    }

    /// Found by the `slicer` fuzz target: two subsets whose ports both drop out (no ports, and
    /// a port numbered 0) share one slice; with more addresses than a slice takes, a second
    /// mirror of the first one's result must plan nothing.
    #[test]
    fn two_portless_subsets_over_the_cap_mirror_once() {
        let eps: Endpoints = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "ns"},
            "subsets": [
                {"addresses": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}]},
                {"addresses": [{"ip": "10.0.0.3"}],
                 "ports": [{"name": "http", "port": 0, "protocol": "UDP"}]}
            ]
        }))
        .unwrap();
        let svc: Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"ports": [{"port": 80}]}
        }))
        .unwrap();
        let opts = MirrorOptions {
            max_endpoints_per_subset: 2,
        };
        let first = mirror(
            Some(&svc),
            Some(&eps),
            &[],
            &opts,
            &mut crate::SeededNames::new(1),
        );
        let written: Vec<EndpointSlice> = first.plan.create.iter().map(|s| (**s).clone()).collect();
        assert!(!written.is_empty());
        let again = mirror(
            Some(&svc),
            Some(&eps),
            &written,
            &opts,
            &mut crate::SeededNames::new(2),
        );
        assert!(again.plan.is_empty(), "{:?}", again.plan);
    }
}
