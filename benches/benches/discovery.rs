//! Benchmarks of svcnet-discovery: the record set of a 10,000-Service cluster, and the delta
//! when one EndpointSlice changes.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use svcnet_discovery::{Change, DnsOptions, DnsZone, dns_records, service_env};
use svcnet_model::{
    EndpointConditions, EndpointPort, EndpointSlice, ObjectMeta, ObjectReference, Service, ServicePort,
    ServiceSpec,
};

const SERVICES: usize = 10_000;
const NAMESPACES: usize = 100;
const ENDPOINTS_PER_SERVICE: usize = 3;

fn meta(ns: &str, name: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some(ns.into()),
        ..Default::default()
    }
}

/// Service `i`: 80% ClusterIP (one in ten dual-stack), 15% headless, 5% ExternalName; two
/// named ports each.
fn service(i: usize) -> Service {
    let ns = format!("ns-{}", i % NAMESPACES);
    let mut spec = ServiceSpec {
        ports: Some(vec![
            ServicePort {
                name: Some("http".into()),
                port: 80,
                protocol: Some("TCP".into()),
                ..Default::default()
            },
            ServicePort {
                name: Some("metrics".into()),
                port: 9090,
                protocol: Some("TCP".into()),
                ..Default::default()
            },
        ]),
        ..Default::default()
    };
    match i % 20 {
        0 => {
            spec.type_ = Some("ExternalName".into());
            spec.external_name = Some(format!("svc{i}.example.com"));
        }
        1..=3 => {
            spec.cluster_ip = Some("None".into());
            spec.cluster_ips = Some(vec!["None".into()]);
        }
        k => {
            let v4 = format!("10.{}.{}.{}", 96 + i / 65536, (i / 256) % 256, i % 256);
            spec.cluster_ip = Some(v4.clone());
            spec.cluster_ips = Some(if k == 4 {
                vec![v4, format!("fd00:96::{i:x}")]
            } else {
                vec![v4]
            });
        }
    }
    Service {
        metadata: meta(&ns, &format!("svc-{i}")),
        spec: Some(spec),
        ..Default::default()
    }
}

/// The one EndpointSlice of Service `i`; `generation` moves the last endpoint and flips the
/// readiness of the first.
fn slice(i: usize, generation: usize) -> EndpointSlice {
    let ns = format!("ns-{}", i % NAMESPACES);
    let name = format!("svc-{i}");
    let mut m = meta(&ns, &format!("{name}-abcde"));
    m.labels = Some([("kubernetes.io/service-name".to_string(), name.clone())].into());
    let endpoints = (0..ENDPOINTS_PER_SERVICE)
        .map(|e| {
            let n = i * ENDPOINTS_PER_SERVICE
                + e
                + if e == ENDPOINTS_PER_SERVICE - 1 {
                    generation
                } else {
                    0
                };
            svcnet_model::Endpoint {
                addresses: svcnet_model::smallvec![
                    format!("172.{}.{}.{}", 16 + n / 65536, (n / 256) % 256, n % 256).into()
                ],
                conditions: EndpointConditions {
                    ready: Some(!(e == 0 && generation % 2 == 1)),
                    ..Default::default()
                },
                hostname: (i % 20 == 1).then(|| format!("{name}-{e}").into()),
                target_ref: Some(Box::new(ObjectReference {
                    kind: Some("Pod".into()),
                    name: Some(format!("{name}-pod-{e}").into()),
                    ..Default::default()
                })),
                ..Default::default()
            }
        })
        .collect();
    EndpointSlice {
        metadata: m,
        address_type: "IPv4".into(),
        endpoints: Some(endpoints),
        ports: Some(vec![
            EndpointPort {
                name: Some("http".into()),
                protocol: Some("TCP".into()),
                port: Some(8080),
                app_protocol: None,
            },
            EndpointPort {
                name: Some("metrics".into()),
                protocol: Some("TCP".into()),
                port: Some(9090),
                app_protocol: None,
            },
        ]),
        ..Default::default()
    }
}

fn bench(c: &mut Criterion) {
    let services: Vec<Service> = (0..SERVICES).map(service).collect();
    let slices: Vec<EndpointSlice> = (0..SERVICES)
        .filter(|i| i % 20 != 0)
        .map(|i| slice(i, 0))
        .collect();
    let options = DnsOptions::new("cluster.local");
    let set = dns_records(&services, &slices, &[], &options).expect("records");
    eprintln!(
        "10,000 Services, {} EndpointSlices: {} records",
        slices.len(),
        set.len()
    );

    let mut g = c.benchmark_group("discovery");
    g.sample_size(10);
    g.bench_function("record_set_10k_services", |b| {
        b.iter_with_large_drop(|| {
            dns_records(black_box(&services), black_box(&slices), &[], &options).expect("records")
        })
    });
    let zone = DnsZone::from_objects(options.clone(), &services, &slices, &[]).expect("zone");
    g.bench_function("zone_records_10k_services", |b| {
        b.iter_with_large_drop(|| black_box(&zone).records())
    });
    g.bench_function("zone_text_10k_services", |b| {
        b.iter_with_large_drop(|| black_box(&set).to_string())
    });
    g.finish();

    let mut zone = zone;
    // A ClusterIP Service's slice and a headless Service's slice, alternating between two
    // generations so that every apply is a real change.
    for (label, i) in [
        ("one_slice_delta_clusterip", 1005usize),
        ("one_slice_delta_headless", 1001),
    ] {
        let versions = [slice(i, 0), slice(i, 1)];
        let mut n = 0usize;
        c.bench_function(&format!("discovery/{label}"), |b| {
            b.iter(|| {
                n += 1;
                let d = zone.apply(Change::EndpointSlice(&versions[n % 2]));
                assert!(!d.is_empty());
                d
            })
        });
    }
    c.bench_function("discovery/service_env_10k_services_one_namespace", |b| {
        b.iter(|| service_env(black_box(&services), "ns-7", true))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
