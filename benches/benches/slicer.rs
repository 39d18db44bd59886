//! Benchmarks of svcnet-slicer: a 10,000-pod Service from scratch (as a plan, and as the state a
//! controller keeps), the same after a one-pod change (incremental: a readiness flip, and a Pod
//! added or deleted), and 10,000 small Services.
//!
//! The from-scratch bench times computing the plan; freeing the returned plan (10,000 endpoints
//! of owned strings) is the caller's and is left out with `iter_with_large_drop`. The one-pod
//! change drops each plan before the next change, as a controller does once the writes are sent:
//! the plan shares its slices with the state, so dropping it is cheap, and the next change
//! rewrites the slice in place.
use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use svcnet_model::{
    IntOrString, Pod, PodCondition, PodIp, PodSpec, PodStatus, Service, ServicePort, ServiceSpec,
};
use svcnet_slicer::{NodeZones, Options, SeededNames, ServiceSlices, reconcile};

fn service(name: &str) -> Service {
    let mut s = Service::default();
    s.metadata.name = Some(name.into());
    s.metadata.namespace = Some("bench".into());
    s.metadata.uid = Some(format!("uid-{name}"));
    s.spec = Some(ServiceSpec {
        selector: Some([("app".to_string(), name.to_string())].into()),
        ports: Some(vec![ServicePort {
            name: Some("http".into()),
            protocol: Some("TCP".into()),
            port: 80,
            target_port: Some(IntOrString::Int(8080)),
            ..Default::default()
        }]),
        ip_families: Some(vec!["IPv4".into()]),
        cluster_ip: Some("10.96.0.10".into()),
        ..Default::default()
    });
    s
}

fn pod(app: &str, i: usize, ready: bool) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(format!("{app}-{i}"));
    p.metadata.namespace = Some("bench".into());
    p.metadata.uid = Some(format!("uid-{app}-{i}"));
    p.metadata.labels = Some([("app".to_string(), app.to_string())].into());
    p.spec = Some(PodSpec {
        node_name: Some(format!("node-{}", i % 50)),
        ..Default::default()
    });
    let ip = format!("10.{}.{}.{}", (i >> 16) & 255, (i >> 8) & 255, i & 255);
    p.status = Some(PodStatus {
        phase: Some("Running".into()),
        pod_ip: Some(ip.clone()),
        pod_ips: Some(vec![PodIp { ip }]),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    p
}

fn nodes() -> NodeZones {
    let mut n = NodeZones::new();
    for i in 0..50 {
        n.insert(&format!("node-{i}"), Some(["zone-a", "zone-b", "zone-c"][i % 3]));
    }
    n
}

fn bench(c: &mut Criterion) {
    let nodes = nodes();
    let opts = Options::default();

    let big = service("big");
    let pods: Vec<Pod> = (0..10_000).map(|i| pod("big", i, true)).collect();
    c.bench_function("slice 10k-pod service from scratch", |b| {
        b.iter_with_large_drop(|| {
            reconcile(&big, &pods, &nodes, [], &opts, &mut SeededNames::new(1)).unwrap()
        })
    });

    // The same through the state a controller keeps: it also records every endpoint's identity
    // and every Pod, for the one-pod changes that follow.
    c.bench_function("slice 10k-pod service from scratch, kept as state", |b| {
        b.iter_with_large_drop(|| {
            let mut state = ServiceSlices::new(&big, [], opts.clone()).unwrap();
            let plan = state.sync(&pods, &nodes, &mut SeededNames::new(1));
            (state, plan)
        })
    });

    let mut state = ServiceSlices::new(&big, [], opts.clone()).unwrap();
    state.sync(&pods, &nodes, &mut SeededNames::new(1));
    let flipped = [pod("big", 4242, false), pod("big", 4242, true)];
    let mut names = SeededNames::new(2);
    let mut k = 0usize;
    // Warm the incremental index once.
    let _ = state.update_pod(&flipped[1], &nodes, &mut names);
    c.bench_function("slice 10k-pod service, one-pod change", |b| {
        b.iter(|| {
            k ^= 1;
            let plan = state.update_pod(&flipped[k], &nodes, &mut names);
            debug_assert_eq!(plan.writes(), 1);
            black_box(plan.writes())
        })
    });

    // A new Pod joins (filling the slice with room) and leaves again.
    let extra = pod("big", 10_000, true);
    let mut joined = false;
    c.bench_function("slice 10k-pod service, one pod added or deleted", |b| {
        b.iter(|| {
            joined = !joined;
            let plan = if joined {
                state.update_pod(&extra, &nodes, &mut names)
            } else {
                state.delete_pod("bench", "big-10000", &mut names)
            };
            debug_assert_eq!(plan.writes(), 1);
            black_box(plan.writes())
        })
    });

    let small: Vec<(Service, Vec<Pod>)> = (0..10_000)
        .map(|s| {
            let name = format!("svc-{s}");
            let ps = (0..3).map(|i| pod(&name, s * 3 + i, true)).collect();
            (service(&name), ps)
        })
        .collect();
    c.bench_function("slice 10k small services (3 pods each)", |b| {
        b.iter(|| {
            let mut names = SeededNames::new(3);
            let mut writes = 0;
            for (svc, ps) in &small {
                writes += reconcile(svc, ps, &nodes, [], &opts, &mut names)
                    .unwrap()
                    .writes();
            }
            black_box(writes)
        })
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
