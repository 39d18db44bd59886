//! Mirroring cases after Kubernetes' endpointslicemirroring `TestReconcile` table.

mod support;

use svcnet_model::{
    CoreEndpointPort, Endpoint, EndpointAddress, EndpointConditions, EndpointPort, EndpointSlice,
    EndpointSubset, Endpoints, IntOrString, Service,
};
use svcnet_slicer::{MirrorEvent, MirrorOptions, MirrorPlan, SequentialNames, mirror};

fn svc() -> Service {
    let mut s = support::service(&["IPv4"], IntOrString::Int(80));
    s.metadata.name = Some("test-ep".into());
    s.spec_mut().selector = None;
    s
}

fn port(name: &str, n: i32, proto: &str) -> CoreEndpointPort {
    CoreEndpointPort {
        name: Some(name.into()),
        port: n,
        protocol: Some(proto.into()),
        app_protocol: None,
    }
}

fn addrs(list: &[(&str, &str)]) -> Option<Vec<EndpointAddress>> {
    Some(
        list.iter()
            .map(|(ip, host)| EndpointAddress {
                ip: ip.to_string(),
                hostname: Some(host.to_string()),
                node_name: Some("node-1".into()),
                target_ref: None,
            })
            .collect(),
    )
}

/// The two subsets of the Kubernetes table, with the given addresses.
fn two_subsets(a: &[(&str, &str)], b: &[(&str, &str)]) -> Vec<EndpointSubset> {
    vec![
        EndpointSubset {
            addresses: addrs(a),
            not_ready_addresses: None,
            ports: Some(vec![port("http", 80, "TCP"), port("https", 443, "UDP")]),
        },
        EndpointSubset {
            addresses: addrs(b),
            not_ready_addresses: None,
            ports: Some(vec![port("http", 3000, "TCP"), port("https", 3001, "UDP")]),
        },
    ]
}

fn endpoints(subsets: Vec<EndpointSubset>) -> Endpoints {
    let mut e = Endpoints::default();
    e.metadata.name = Some("test-ep".into());
    e.metadata.namespace = Some("ns".into());
    e.subsets = Some(subsets);
    e
}

fn run(eps: &Endpoints, existing: &[EndpointSlice], max: usize) -> MirrorPlan {
    let opts = MirrorOptions {
        max_endpoints_per_subset: max,
    };
    mirror(
        Some(&svc()),
        Some(eps),
        existing,
        &opts,
        &mut SequentialNames::new(),
    )
}

const A: &[(&str, &str)] = &[("10.0.0.1", "pod-1"), ("10.0.0.2", "pod-2")];
const B: &[(&str, &str)] = &[
    ("10.0.1.1", "pod-11"),
    ("10.0.1.2", "pod-12"),
    ("10.0.1.3", "pod-13"),
];

#[test]
fn no_subsets_and_pending_deletion() {
    assert!(run(&endpoints(vec![]), &[], 1000).plan.is_empty());
    let mut e = endpoints(two_subsets(A, B));
    e.metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
    assert!(run(&e, &[], 1000).plan.is_empty());
}

#[test]
fn existing_slice_with_some_addresses_is_rewritten() {
    let existing = EndpointSlice {
        metadata: svcnet_model::ObjectMeta {
            name: Some("test-ep-1".into()),
            ..Default::default()
        },
        address_type: "IPv4".into(),
        ports: Some(vec![
            EndpointPort {
                name: Some("http".into()),
                port: Some(80),
                protocol: Some("TCP".into()),
                app_protocol: None,
            },
            EndpointPort {
                name: Some("https".into()),
                port: Some(443),
                protocol: Some("UDP".into()),
                app_protocol: None,
            },
        ]),
        endpoints: Some(vec![
            Endpoint {
                addresses: svcnet_model::smallvec!["10.0.0.2".into()],
                hostname: Some("pod-2".into()),
                ..Default::default()
            },
            Endpoint {
                addresses: svcnet_model::smallvec!["10.0.0.1".into(), "10.0.0.3".into()],
                hostname: Some("pod-1".into()),
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    let m = run(&endpoints(two_subsets(A, B)), &[existing], 1000);
    assert_eq!(
        (m.plan.create.len(), m.plan.update.len(), m.plan.delete.len()),
        (1, 1, 0)
    );
    let u = &m.plan.update[0];
    assert_eq!(u.metadata.name.as_deref(), Some("test-ep-1"));
    assert_eq!(u.endpoints().len(), 2);
    assert!(u.endpoints().iter().all(|e| e.conditions
        == EndpointConditions {
            ready: Some(true),
            serving: None,
            terminating: None
        }));
}

#[test]
fn invalid_addresses_and_caps() {
    let m = run(
        &endpoints(two_subsets(
            &[("this-is-not-an-ip1", "pod-1"), ("this-is-not-an-ip12", "pod-2")],
            &[("x", "a"), ("y", "b"), ("z", "c")],
        )),
        &[],
        1000,
    );
    assert!(m.plan.is_empty());
    assert_eq!(m.events, [MirrorEvent::InvalidIpAddress { skipped: 5 }]);

    let m = run(&endpoints(two_subsets(A, B)), &[], 2);
    assert_eq!(m.plan.create.len(), 2);
    let total: usize = m.plan.create.iter().map(|s| s.endpoints().len()).sum();
    assert_eq!(total, 4);
    assert_eq!(
        m.events,
        [MirrorEvent::TooManyAddressesToMirror { max: 2, skipped: 1 }]
    );
    assert_eq!(
        m.events[0].to_string(),
        "A max of 2 addresses can be mirrored to EndpointSlices per Endpoints subset. 1 addresses were skipped"
    );
}

#[test]
fn ipv6_only_and_not_ready() {
    let v6: &[(&str, &str)] = &[("2001:db8:1111:3333:4444:5555:6666:7777", "pod-1")];
    let mut subsets = two_subsets(v6, &[("2001:db8:4444:3333:4444:5555:6666:7777", "pod-12")]);
    subsets[1].not_ready_addresses = addrs(&[("2001:db8:5555::7777", "pod-13")]);
    let m = run(&endpoints(subsets), &[], 1000);
    assert_eq!(m.plan.create.len(), 2);
    assert!(m.plan.create.iter().all(|s| s.address_type == "IPv6"));
    let not_ready: Vec<_> = m
        .plan
        .create
        .iter()
        .flat_map(|s| s.endpoints())
        .filter(|e| e.conditions.ready == Some(false))
        .collect();
    assert_eq!(not_ready.len(), 1);
    assert_eq!(not_ready[0].addresses[..], ["2001:db8:5555::7777"]);
}

mod properties {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;
    use svcnet_slicer::PortKey;

    const IPS: &[&str] = &[
        "10.0.0.1",
        "10.0.0.2",
        "010.0.0.3",
        "fd00::1",
        "fd00::0:2",
        "bogus",
    ];

    fn subset() -> impl Strategy<Value = EndpointSubset> {
        (
            prop::collection::vec((0usize..IPS.len(), any::<bool>()), 0..6),
            prop::collection::btree_set(0i32..3, 0..3),
        )
            .prop_map(|(addrs, ports)| {
                let (ready, not_ready): (Vec<_>, Vec<_>) = addrs.into_iter().partition(|(_, r)| *r);
                let list = |v: Vec<(usize, bool)>| {
                    Some(
                        v.into_iter()
                            .map(|(i, _)| EndpointAddress {
                                ip: IPS[i].to_string(),
                                ..Default::default()
                            })
                            .collect(),
                    )
                };
                EndpointSubset {
                    addresses: list(ready),
                    not_ready_addresses: list(not_ready),
                    ports: Some(
                        ports
                            .into_iter()
                            .map(|p| port(&format!("p{p}"), 8000 + p, "TCP"))
                            .collect(),
                    ),
                }
            })
    }

    fn endpoints_strategy() -> impl Strategy<Value = Endpoints> {
        (prop::collection::vec(subset(), 0..4), any::<bool>()).prop_map(|(subsets, labelled)| {
            let mut e = endpoints(subsets);
            if labelled {
                e.metadata.labels = Some(support::labels(&[("team", "a")]));
                e.metadata.annotations = Some(support::labels(&[("note", "x")]));
            }
            e
        })
    }

    fn apply(existing: &[EndpointSlice], m: &MirrorPlan) -> Vec<EndpointSlice> {
        support::apply(existing, &m.plan)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

        /// Mirroring the result again writes nothing; one slice per (address type, port list),
        /// none above the per-subset maximum.
        #[test]
        fn mirror_converges(before in endpoints_strategy(), now in endpoints_strategy(), max in 1usize..5) {
            let first = run(&before, &[], max);
            let existing = apply(&[], &first);
            let second = run(&now, &existing, max);
            let after = apply(&existing, &second);
            let third = run(&now, &after, max);
            prop_assert!(third.plan.is_empty(), "{:?}", third.plan);
            let keys: BTreeSet<(String, PortKey)> =
                after.iter().map(|s| (s.address_type.clone(), PortKey::of(s.ports()))).collect();
            prop_assert_eq!(keys.len(), after.len());
            for s in &after {
                prop_assert!(!s.endpoints().is_empty());
                prop_assert!(s.endpoints().len() <= max);
            }
        }
    }
}
