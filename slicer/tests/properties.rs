//! Properties of the reconciler over random Pods and existing slices.

mod support;

use std::collections::{BTreeMap, BTreeSet};

use proptest::prelude::*;
use support::*;
use svcnet_model::{EndpointSlice, IntOrString, Pod, Service};
use svcnet_slicer::{
    EndpointId, Family, NodeZones, Options, Plan, PortKey, SeededNames, ServiceSlices, address_types,
    pod_endpoint_ports, pod_is_endpoint_candidate, pod_to_endpoint,
};

/// One random Pod: address index, has IPv6, ready, terminating, node (2 = missing), named port.
#[derive(Debug, Clone)]
struct PodSpec {
    addr: u16,
    v6: bool,
    ready: bool,
    terminating: bool,
    node: u8,
    port: Option<i32>,
}

fn pod_spec() -> impl Strategy<Value = PodSpec> {
    (
        0u16..400,
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.1),
        0u8..3,
        prop::option::weighted(0.8, 8080i32..8083),
    )
        .prop_map(|(addr, v6, ready, terminating, node, port)| PodSpec {
            addr,
            v6,
            ready,
            terminating,
            node,
            port,
        })
}

fn make_pod(i: usize, s: &PodSpec) -> Pod {
    let mut ips = vec![format!("10.0.{}.{}", s.addr / 256, s.addr % 256)];
    if s.v6 {
        ips.push(format!("fd00::{:x}", s.addr));
    }
    let node = ["n1", "n2", "missing"][usize::from(s.node % 3)];
    let mut p = pod(&format!("p{i}"), &ips, node, s.ready, s.port);
    if s.terminating {
        p.metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
    }
    p
}

fn make_service(fam: u8, named: bool, pnr: bool) -> Service {
    let fams: &[&str] = match fam % 3 {
        0 => &["IPv4"],
        1 => &["IPv6"],
        _ => &["IPv4", "IPv6"],
    };
    let target = if named {
        IntOrString::String("http".into())
    } else {
        IntOrString::Int(8080)
    };
    let mut svc = service(fams, target);
    svc.spec_mut().publish_not_ready_addresses = Some(pnr);
    svc
}

fn nodes() -> NodeZones {
    let mut n = NodeZones::new();
    n.insert("n1", Some("zone-a"));
    n.insert("n2", None);
    n
}

/// What must be published: (address type, port key, endpoint identity) of every Pod that
/// qualifies, computed from the public per-Pod functions.
fn expected(svc: &Service, pods: &[Pod]) -> BTreeSet<(String, PortKey, EndpointId)> {
    let pnr = svc.spec().publish_not_ready_addresses == Some(true);
    let nodes = nodes();
    let mut out = BTreeSet::new();
    for p in pods {
        if !pod_is_endpoint_candidate(p, true) {
            continue;
        }
        if !nodes.contains(p.spec().node_name()) && !pnr {
            continue;
        }
        let key = PortKey::of(&pod_endpoint_ports(svc, p));
        for f in address_types(svc) {
            if let Some(ep) = pod_to_endpoint(p, svc, nodes.zone(p.spec().node_name()), f) {
                out.insert((f.address_type().to_owned(), key.clone(), EndpointId::of(&ep)));
            }
        }
    }
    out
}

fn published(slices: &[EndpointSlice]) -> Vec<(String, PortKey, EndpointId)> {
    slices
        .iter()
        .flat_map(|s| {
            s.endpoints()
                .iter()
                .map(move |e| (s.address_type.clone(), PortKey::of(s.ports()), EndpointId::of(e)))
        })
        .collect()
}

fn scenario() -> impl Strategy<Value = (u8, bool, bool, usize, Vec<PodSpec>, Vec<PodSpec>, u8)> {
    (
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        1usize..12,
        prop::collection::vec(pod_spec(), 0..40),
        prop::collection::vec(pod_spec(), 0..40),
        any::<u8>(),
    )
}

/// Damages existing slices the way a cluster can: a slice owned by another Service, a slice of
/// an address type the Service does not use, a duplicated and a stale endpoint, stray hints.
fn perturb(slices: &mut Vec<EndpointSlice>, bits: u8, max: usize) {
    let Some(first) = slices.first().cloned() else {
        return;
    };
    if bits & 1 != 0 {
        let mut foreign = first.clone();
        foreign.metadata.name = Some("foreign".into());
        foreign.metadata.owner_references.as_mut().unwrap()[0].uid = "other".into();
        slices.push(foreign);
    }
    if bits & 2 != 0 {
        let mut fqdn = first.clone();
        fqdn.metadata.name = Some("fqdn".into());
        fqdn.address_type = "FQDN".into();
        slices.push(fqdn);
    }
    let s = &mut slices[0];
    let eps = s.endpoints.get_or_insert_with(Vec::new);
    if bits & 4 != 0 && !eps.is_empty() && eps.len() < max {
        eps.push(eps[0].clone());
    }
    if bits & 8 != 0 && eps.len() < max {
        eps.push(svcnet_model::Endpoint {
            addresses: svcnet_model::smallvec!["192.0.2.1".into()],
            ..Default::default()
        });
    }
    if bits & 16 != 0 && !eps.is_empty() {
        eps[0].hints = Some(Box::default());
    }
    if bits & 32 != 0 {
        s.metadata.labels = Some(labels(&[("stray", "x")]));
    }
}

/// Applies one Pod change (Pod `which` replaced by `change`, or deleted, or `change` added)
/// to `state` incrementally and to a copy of it by a full sync; returns the incremental plan,
/// the full sync's plan and the copy.
fn one_pod_change(
    state: &mut ServiceSlices,
    pods: &mut Vec<Pod>,
    change: &PodSpec,
    which: prop::sample::Index,
    delete: bool,
) -> (Plan, Plan, ServiceSlices) {
    let mut full = state.clone();
    let i = if pods.is_empty() {
        0
    } else {
        which.index(pods.len() + 1)
    };
    let inc = if delete && i < pods.len() {
        let gone = pods.remove(i);
        state.delete_pod("ns", gone.metadata.name(), &mut SeededNames::new(2))
    } else {
        let p = make_pod(i, change);
        if i < pods.len() {
            pods[i] = p.clone()
        } else {
            pods.push(p.clone())
        }
        state.update_pod(&p, &nodes(), &mut SeededNames::new(2))
    };
    let reference = full.sync(pods.iter(), &nodes(), &mut SeededNames::new(2));
    (inc, reference, full)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// After applying the plan every desired endpoint is in exactly one slice of the right
    /// address type and port list, nothing else is published, no slice is over the maximum, no
    /// update rewrites a slice unchanged, and reconciling again plans nothing.
    #[test]
    fn plan_converges((fam, named, pnr, max, old, new, bits) in scenario()) {
        let mut svc = make_service(fam, named, pnr);
        let opts = Options { max_endpoints_per_slice: max, ..Options::default() };
        let old_pods: Vec<Pod> = old.iter().enumerate().map(|(i, s)| make_pod(i, s)).collect();
        let new_pods: Vec<Pod> = new.iter().enumerate().map(|(i, s)| make_pod(i, s)).collect();
        let mut names = SeededNames::new(9);

        let mut state = ServiceSlices::new(&svc, [], opts.clone()).unwrap();
        state.sync(&old_pods, &nodes(), &mut names);
        let mut before = current(&state);
        perturb(&mut before, bits, max);
        if bits & 64 != 0 {
            svc.metadata.labels = Some(labels(&[("team", "x")]));
        }
        let mut state = ServiceSlices::new(&svc, before.clone(), opts.clone()).unwrap();
        let plan = state.sync(&new_pods, &nodes(), &mut names);
        let after = apply(&before, &plan);
        prop_assert_eq!(&after, &current(&state));

        let want = expected(&svc, &new_pods);
        let got = published(&after);
        let got_set: BTreeSet<_> = got.iter().cloned().collect();
        prop_assert_eq!(got.len(), got_set.len(), "an endpoint is published twice");
        prop_assert_eq!(&got_set, &want);
        for s in &after {
            prop_assert!(s.endpoints().len() <= max);
        }
        let old_by_name: BTreeMap<_, _> = before.iter().map(|s| (s.metadata.name.clone(), s)).collect();
        for u in &plan.update {
            let old = old_by_name.get(&u.metadata.name).copied();
            prop_assert!(old.is_some(), "update of an unknown slice");
            if old.unwrap() == &**u {
                // The one no-op update Kubernetes v1.37.2 writes (endpointslice reconciler.go,
                // `reconcile` then `finalize`): with no endpoint desired and a slice of another
                // owner to delete, the owned placeholder is deleted too, a fresh placeholder is
                // created, and `finalize` turns that pair into an update of the old placeholder
                // with the same content.
                let foreign_deleted = plan
                    .delete
                    .iter()
                    .any(|d| d.metadata.owner_references.as_ref().is_some_and(|o| o.iter().all(|r| r.uid != "uid-web")));
                prop_assert!(
                    u.endpoints().is_empty() && want.is_empty() && foreign_deleted,
                    "an update that changes nothing"
                );
            }
        }
        prop_assert!(state.sync(&new_pods, &nodes(), &mut names).is_empty());
    }

    /// A one-pod change applied incrementally gives exactly the plan of the full reconcile, and
    /// touches only the slices that held or gain the pod (plus the placeholder).
    #[test]
    fn incremental_equals_full(
        (fam, named, pnr, max, pods, _, _) in scenario(),
        change in pod_spec(),
        which in any::<prop::sample::Index>(),
        delete in any::<bool>(),
    ) {
        let svc = make_service(fam, named, pnr);
        let opts = Options { max_endpoints_per_slice: max, ..Options::default() };
        let mut pods: Vec<Pod> = pods.iter().enumerate().map(|(i, s)| make_pod(i, s)).collect();
        let mut state = ServiceSlices::new(&svc, [], opts).unwrap();
        state.sync(&pods, &nodes(), &mut SeededNames::new(1));
        let (inc, reference, full) = one_pod_change(&mut state, &mut pods, &change, which, delete);
        prop_assert_eq!(&inc.create, &reference.create);
        prop_assert_eq!(&inc.update, &reference.update);
        prop_assert_eq!(&inc.delete, &reference.delete);
        prop_assert!(inc.writes() <= 2 * address_types(&svc).len(), "{} writes", inc.writes());
        prop_assert_eq!(current(&state), current(&full));
        prop_assert!(state.sync(&pods, &nodes(), &mut SeededNames::new(3)).is_empty());
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A run of one-pod changes, each applied incrementally to the same state (rewriting its
    /// slices in place, as no plan is kept), gives at every step the plan of a full reconcile
    /// from the slices before that step.
    #[test]
    fn incremental_runs_equal_full(
        (fam, named, pnr, max, pods, _, _) in scenario(),
        changes in prop::collection::vec((pod_spec(), any::<prop::sample::Index>(), any::<bool>()), 1..8),
    ) {
        let svc = make_service(fam, named, pnr);
        let opts = Options { max_endpoints_per_slice: max, ..Options::default() };
        let mut pods: Vec<Pod> = pods.iter().enumerate().map(|(i, s)| make_pod(i, s)).collect();
        let mut state = ServiceSlices::new(&svc, [], opts.clone()).unwrap();
        drop(state.sync(&pods, &nodes(), &mut SeededNames::new(1)));
        let mut next = pods.len();
        for (step, (change, which, delete)) in changes.into_iter().enumerate() {
            let before = current(&state);
            let seed = 10 + step as u64;
            let i = which.index(pods.len() + 1);
            let inc = if delete && i < pods.len() {
                let gone = pods.remove(i);
                state.delete_pod("ns", gone.metadata.name(), &mut SeededNames::new(seed))
            } else if i < pods.len() {
                let p = make_pod(i, &change);
                let p = Pod { metadata: pods[i].metadata.clone(), ..p };
                pods[i] = p.clone();
                state.update_pod(&p, &nodes(), &mut SeededNames::new(seed))
            } else {
                let p = make_pod(next, &change);
                next += 1;
                pods.push(p.clone());
                state.update_pod(&p, &nodes(), &mut SeededNames::new(seed))
            };
            let mut full = ServiceSlices::new(&svc, before.clone(), opts.clone()).unwrap();
            let reference = full.sync(&pods, &nodes(), &mut SeededNames::new(seed));
            // Errors name every Pod on a missing Node in a full sync, only the changed one here.
            prop_assert_eq!(&inc.create, &reference.create, "step {}", step);
            prop_assert_eq!(&inc.update, &reference.update, "step {}", step);
            prop_assert_eq!(&inc.delete, &reference.delete, "step {}", step);
            prop_assert_eq!(apply(&before, &inc), current(&state));
            prop_assert_eq!(current(&state), current(&full));
        }
        prop_assert!(state.sync(&pods, &nodes(), &mut SeededNames::new(99)).is_empty());
    }
}

#[test]
fn families_in_order() {
    assert_eq!(Family::ALL, [Family::V4, Family::V6]);
}

/// Gives every endpoint of `slices` whose bit in `odd` is set a form a full reconcile leaves
/// alone but never writes itself: hints, a `deprecatedTopology`, a resource version on its
/// target reference, an empty hostname for none (by the endpoint's position, cycling).
fn make_odd(slices: &mut [EndpointSlice], odd: u64) {
    let mut n = 0u32;
    for s in slices {
        for ep in s.endpoints.iter_mut().flatten() {
            n += 1;
            if odd >> (n % 64) & 1 == 0 {
                continue;
            }
            match n % 4 {
                0 => ep.hints = Some(Box::default()),
                1 => ep.deprecated_topology = Some(Box::new([("k".to_string(), "v".to_string())].into())),
                2 => {
                    if let Some(t) = ep.target_ref.as_mut() {
                        t.resource_version = Some("7".into());
                    }
                }
                _ => {
                    if ep.hostname.is_none() {
                        ep.hostname = Some("".into());
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Found by the `slicer` fuzz target: existing slices whose endpoints differ from the
    /// desired ones only in fields the reconcile does not compare (hints, ...). A full
    /// reconcile leaves such a slice alone, and rewrites every endpoint it keeps in its desired
    /// form when it rewrites the slice; a one-Pod change applied incrementally must do the same.
    #[test]
    fn incremental_equals_full_over_endpoints_in_another_form(
        (fam, named, pnr, max, pods, _, _) in scenario(),
        change in pod_spec(),
        which in any::<prop::sample::Index>(),
        delete in any::<bool>(),
        odd in any::<u64>(),
    ) {
        let svc = make_service(fam, named, pnr);
        let opts = Options { max_endpoints_per_slice: max, ..Options::default() };
        let mut pods: Vec<Pod> = pods.iter().enumerate().map(|(i, s)| make_pod(i, s)).collect();
        let mut first = ServiceSlices::new(&svc, [], opts.clone()).unwrap();
        drop(first.sync(&pods, &nodes(), &mut SeededNames::new(1)));
        let mut existing = current(&first);
        make_odd(&mut existing, odd);
        let mut state = ServiceSlices::new(&svc, existing, opts).unwrap();
        // The reconcile keeps slices that differ only in those fields (hints apart: they are
        // dropped unless the Service asks for them).
        drop(state.sync(&pods, &nodes(), &mut SeededNames::new(1)));
        let (inc, reference, full) = one_pod_change(&mut state, &mut pods, &change, which, delete);
        prop_assert_eq!(&inc.create, &reference.create);
        prop_assert_eq!(&inc.update, &reference.update);
        prop_assert_eq!(&inc.delete, &reference.delete);
        prop_assert_eq!(current(&state), current(&full));
        prop_assert!(state.sync(&pods, &nodes(), &mut SeededNames::new(3)).is_empty());
    }
}
