//! Benchmarks of svcnet-topology: hints for a 5,000-endpoint Service across 3 zones and 1,000
//! Nodes (controller side), and endpoint selection for 10,000 service ports on one node
//! (proxy side), from the slices or from a slice index shared by every node.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use svcnet_model::{
    Endpoint, EndpointConditions, EndpointHints, EndpointPort, EndpointSlice, ForZone, Node, NodeStatus,
    ObjectMeta, PodCondition, Quantity, Service, ServicePort, ServiceSpec,
};
use svcnet_topology::{
    HintsOptions, NodeTopology, NodeView, SelectOptions, SliceIndex, SliceSet, ZoneCapacity, categorize,
    reconcile_hints,
};

const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-c"];

/// 1,000 ready worker Nodes over 3 zones (40% / 35% / 25%), CPU between 2 and 16 cores.
fn nodes() -> Vec<Node> {
    (0..1000)
        .map(|i| {
            let zone = match i % 20 {
                0..=7 => ZONES[0],
                8..=14 => ZONES[1],
                _ => ZONES[2],
            };
            Node {
                metadata: ObjectMeta {
                    name: Some(format!("node-{i}")),
                    labels: Some([("topology.kubernetes.io/zone".to_owned(), zone.to_owned())].into()),
                    ..Default::default()
                },
                status: Some(NodeStatus {
                    allocatable: Some(
                        [("cpu".to_owned(), Quantity(format!("{}m", 2000 + (i % 8) * 2000)))].into(),
                    ),
                    conditions: Some(vec![PodCondition {
                        type_: "Ready".into(),
                        status: "True".into(),
                        ..Default::default()
                    }]),
                    ..Default::default()
                }),
                ..Default::default()
            }
        })
        .collect()
}

/// 5,000 endpoints in 50 slices of 100, placed on the Nodes round-robin (so zones hold them in
/// proportion to Node counts, not CPU: redistribution has work to do); 2% not ready.
fn slices(hinted: bool) -> Vec<EndpointSlice> {
    (0..50)
        .map(|s| {
            let endpoints = (0..100)
                .map(|j| {
                    let i = s * 100 + j;
                    let node = i % 1000;
                    let zone = match node % 20 {
                        0..=7 => ZONES[0],
                        8..=14 => ZONES[1],
                        _ => ZONES[2],
                    };
                    Endpoint {
                        addresses: svcnet_model::smallvec![
                            format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256).into()
                        ],
                        conditions: EndpointConditions {
                            ready: Some(i % 50 != 0),
                            ..Default::default()
                        },
                        node_name: Some(format!("node-{node}").into()),
                        zone: Some(zone.into()),
                        hints: hinted.then(|| {
                            Box::new(EndpointHints {
                                for_zones: Some(vec![ForZone {
                                    name: zone.to_owned(),
                                }]),
                                for_nodes: None,
                            })
                        }),
                        ..Default::default()
                    }
                })
                .collect();
            EndpointSlice {
                metadata: ObjectMeta {
                    name: Some(format!("web-{s}")),
                    namespace: Some("shop".into()),
                    labels: Some([("kubernetes.io/service-name".to_owned(), "web".to_owned())].into()),
                    ..Default::default()
                },
                address_type: "IPv4".into(),
                endpoints: Some(endpoints),
                ports: Some(vec![EndpointPort {
                    name: Some(String::new()),
                    protocol: Some("TCP".into()),
                    port: Some(8080),
                    app_protocol: None,
                }]),
                ..Default::default()
            }
        })
        .collect()
}

fn service(name: &str, annotated: bool) -> Service {
    let mut s = Service::default();
    s.metadata.name = Some(name.to_owned());
    s.metadata.namespace = Some("shop".into());
    if annotated {
        s.metadata.annotations = Some(
            [(
                "service.kubernetes.io/topology-mode".to_owned(),
                "Auto".to_owned(),
            )]
            .into(),
        );
    }
    s.spec = Some(ServiceSpec {
        selector: Some([("app".to_owned(), name.to_owned())].into()),
        ports: Some(vec![ServicePort {
            name: Some(String::new()),
            protocol: Some("TCP".into()),
            port: 80,
            ..Default::default()
        }]),
        ip_families: Some(vec!["IPv4".into()]),
        cluster_ip: Some("10.96.0.10".into()),
        cluster_ips: Some(vec!["10.96.0.10".into()]),
        ..Default::default()
    });
    s
}

fn hints(c: &mut Criterion) {
    let nodes = nodes();
    let svc = service("web", true);
    let opts = HintsOptions::default();
    c.bench_function("hints/node accounting, 1000 nodes", |b| {
        b.iter(|| ZoneCapacity::from_nodes(black_box(&nodes)))
    });
    let cap = ZoneCapacity::from_nodes(&nodes).expect("valid nodes");
    // Each run gets slices of its own, as a controller that hands its slices over does: a
    // `SliceSet` clone would share them, and hinting would then copy every slice it rewrites.
    let fresh_slices = slices(false);
    let fresh = SliceSet::existing(fresh_slices.clone());
    c.bench_function("hints/5000 endpoints, 3 zones, first hinting", |b| {
        b.iter_batched(
            || SliceSet::existing(fresh_slices.clone()),
            |set| reconcile_hints(&svc, "IPv4", set, &cap, false, &opts),
            BatchSize::LargeInput,
        )
    });
    let first = reconcile_hints(&svc, "IPv4", fresh.clone(), &cap, false, &opts);
    let steady_slices: Vec<EndpointSlice> = first.slices.iter().cloned().collect();
    c.bench_function("hints/5000 endpoints, 3 zones, steady state", |b| {
        b.iter_batched(
            || SliceSet::existing(steady_slices.clone()),
            |set| reconcile_hints(&svc, "IPv4", set, &cap, true, &opts),
            BatchSize::LargeInput,
        )
    });
    let stale = slices(true);
    c.bench_function("hints/5000 endpoints, 3 zones, removing hints", |b| {
        let plain = service("web", false);
        b.iter_batched(
            || SliceSet::existing(stale.clone()),
            |set| reconcile_hints(&plain, "IPv4", set, &cap, true, &opts),
            BatchSize::LargeInput,
        )
    });
}

/// 10,000 Services of one port, each with one slice of 4 zone-hinted endpoints, one of them on
/// the benchmarked node.
fn selection(c: &mut Criterion) {
    let services: Vec<Service> = (0..10_000).map(|i| service(&format!("svc-{i}"), false)).collect();
    let slices: Vec<EndpointSlice> = (0..10_000)
        .map(|i| {
            let endpoints = (0..4)
                .map(|j| {
                    let zone = ZONES[j % 3];
                    Endpoint {
                        addresses: svcnet_model::smallvec![
                            format!("10.{}.{}.{}", i / 256 % 256, i % 256, j + 1).into()
                        ],
                        conditions: EndpointConditions::default(),
                        node_name: Some(if j == 0 {
                            "node-0".into()
                        } else {
                            format!("node-{}", i % 999 + 1).into()
                        }),
                        zone: Some(zone.into()),
                        hints: Some(Box::new(EndpointHints {
                            for_zones: Some(vec![ForZone {
                                name: zone.to_owned(),
                            }]),
                            for_nodes: None,
                        })),
                        ..Default::default()
                    }
                })
                .collect();
            EndpointSlice {
                metadata: ObjectMeta {
                    name: Some(format!("svc-{i}-abcde")),
                    namespace: Some("shop".into()),
                    labels: Some([("kubernetes.io/service-name".to_owned(), format!("svc-{i}"))].into()),
                    ..Default::default()
                },
                address_type: "IPv4".into(),
                endpoints: Some(endpoints),
                ports: Some(vec![EndpointPort {
                    name: Some(String::new()),
                    protocol: Some("TCP".into()),
                    port: Some(8080),
                    app_protocol: None,
                }]),
                ..Default::default()
            }
        })
        .collect();
    let node = NodeTopology::new("node-0", "zone-b");
    let opts = SelectOptions::default();
    c.bench_function("select/10000 service ports, build view + select", |b| {
        b.iter(|| {
            let view = NodeView::build(&services, &slices, node.clone(), opts);
            view.selections()
                .map(|(_, s)| s.all_reachable().len())
                .sum::<usize>()
        })
    });
    let index = SliceIndex::build(&slices);
    c.bench_function(
        "select/10000 service ports, view + select from a shared index",
        |b| {
            b.iter(|| {
                let view = NodeView::from_index(&index, &services, node.clone(), opts);
                view.selections()
                    .map(|(_, s)| s.all_reachable().len())
                    .sum::<usize>()
            })
        },
    );
    let view = NodeView::build(&services, &slices, node.clone(), opts);
    c.bench_function("select/10000 service ports, categorize only", |b| {
        b.iter(|| {
            view.ports()
                .map(|p| {
                    categorize(p.endpoints, &p.policy, &node, &opts)
                        .all_reachable()
                        .len()
                })
                .sum::<usize>()
        })
    });
}

criterion_group!(benches, hints, selection);
criterion_main!(benches);
