//! Benchmarks of the per-node proxy model (`svcnet_rules::ProxyModel::build`) that every
//! backend starts from, on the cluster of kube-oracle's `BenchmarkOracleSyncProxyRules`:
//! 10,000 ClusterIP Services × 10 ready endpoints over 50 nodes, IPv4, one TCP port each.
//! Also its two halves: indexing the slices (`SliceIndex::build`) and the per-node model
//! over that index (`ProxyModel::from_index`).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use svcnet_model::{
    Endpoint, EndpointConditions, EndpointPort, EndpointSlice, ObjectMeta, Service, ServicePort, ServiceSpec,
};
use svcnet_rules::{ProxyConfig, ProxyModel};
use svcnet_topology::SliceIndex;

const SERVICES: usize = 10_000;
const ENDPOINTS: usize = 10;

/// kube-oracle's `BenchCluster`: Service i in `ns-(i%100)`, ClusterIP 172.30.x.y, one TCP port
/// p80; its slice holds 10 ready endpoints `10.(128+..).x.y` on `node-(n%50)`.
fn cluster() -> (Vec<Service>, Vec<EndpointSlice>) {
    let mut services = Vec::with_capacity(SERVICES);
    let mut slices = Vec::with_capacity(SERVICES);
    for i in 0..SERVICES {
        let (ns, name) = (format!("ns-{}", i % 100), format!("svc-{i}"));
        services.push(Service {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ns.clone()),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                type_: Some("ClusterIP".into()),
                cluster_ip: Some(format!("172.30.{}.{}", (i >> 8) & 255, i & 255)),
                ports: Some(vec![ServicePort {
                    name: Some("p80".into()),
                    port: 80,
                    protocol: Some("TCP".into()),
                    ..Default::default()
                }]),
                ..Default::default()
            }),
            ..Default::default()
        });
        let endpoints = (0..ENDPOINTS)
            .map(|j| {
                let n = i * ENDPOINTS + j;
                Endpoint {
                    addresses: vec![
                        format!("10.{}.{}.{}", 128 + ((n >> 16) & 63), (n >> 8) & 255, n & 255).into(),
                    ],
                    conditions: EndpointConditions {
                        ready: Some(true),
                        ..Default::default()
                    },
                    node_name: Some(format!("node-{}", n % 50).into()),
                    ..Default::default()
                }
            })
            .collect();
        slices.push(EndpointSlice {
            metadata: ObjectMeta {
                name: Some(format!("{name}-1")),
                namespace: Some(ns),
                labels: Some([("kubernetes.io/service-name".to_owned(), name)].into()),
                ..Default::default()
            },
            address_type: "IPv4".into(),
            endpoints: Some(endpoints),
            ports: Some(vec![EndpointPort {
                name: Some("p80".into()),
                port: Some(80),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        });
    }
    (services, slices)
}

fn config() -> ProxyConfig {
    let mut c = ProxyConfig::new("node-0", "192.168.0.2".parse().expect("ip"));
    c.cluster_cidrs = vec!["10.0.0.0/8".parse().expect("cidr")];
    c.masquerade_mark = "0x4000".into();
    c
}

fn proxy_model(c: &mut Criterion) {
    let config = config();
    let (services, slices) = cluster();
    {
        let model = ProxyModel::build(&services, &slices, None, &config);
        eprintln!(
            "model: {} service ports, {} endpoints",
            model.ports.len(),
            model.total_endpoints
        );
    }
    let mut g = c.benchmark_group("proxy model 10000 svc x 10 ep");
    g.sample_size(20);
    g.bench_function("build", |b| {
        b.iter(|| ProxyModel::build(black_box(&services), black_box(&slices), None, &config))
    });
    g.bench_function("slice index", |b| {
        b.iter(|| SliceIndex::build(black_box(&slices)))
    });
    let index = SliceIndex::build(&slices);
    g.bench_function("from index", |b| {
        b.iter(|| ProxyModel::from_index(black_box(&index), black_box(&services), None, &config))
    });
    g.finish();
}

criterion_group!(benches, proxy_model);
criterion_main!(benches);
