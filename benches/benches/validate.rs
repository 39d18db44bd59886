//! Validation throughput over 10,000 varied Services: every type, single- and dual-stack,
//! headless, ExternalName, affinity, load-balancer fields, and about one in eight invalid in
//! some way (so error construction is measured too).
//!
//! `cargo bench -p svcnet-benches --bench validate`; throughput is reported in Services/second.
//!
//! `apiserver_create_10k` is `svcnet validate`'s default mode (defaulting, the storage hooks,
//! the allocator checks that need no allocator state, the REST strategy, validation with
//! merged causes) on the same Services; `apiserver_create_valid_10k` and
//! `default_and_validate_valid_10k` compare the two on the valid ones only.

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use svcnet_allocators::SplitMix64;
use svcnet_model::{
    ClientIpConfig, IntOrString, ObjectMeta, Service, ServicePort, ServiceSpec, SessionAffinityConfig,
    defaults, validation,
};

const SERVICES: usize = 10_000;

/// A small deterministic generator (SplitMix64), so every run measures the same Services.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn service(i: usize, rng: &mut Mix) -> Service {
    let types = [
        "ClusterIP",
        "ClusterIP",
        "NodePort",
        "LoadBalancer",
        "ExternalName",
    ];
    let type_ = types[usize::try_from(rng.below(5)).unwrap_or(0)];
    let n_ports = 1 + rng.below(4);
    let ports = (0..n_ports)
        .map(|p| {
            let p32 = i32::try_from(p).unwrap_or(0);
            ServicePort {
                name: Some(format!("port-{p}")),
                protocol: Some(["TCP", "UDP", "SCTP"][usize::try_from(rng.below(3)).unwrap_or(0)].into()),
                app_protocol: (rng.below(4) == 0).then(|| "kubernetes.io/h2c".to_owned()),
                port: 80 + p32,
                target_port: Some(if rng.below(2) == 0 {
                    IntOrString::Int(8080 + p32)
                } else {
                    IntOrString::String(format!("http-{p}"))
                }),
                node_port: (type_ == "NodePort" || type_ == "LoadBalancer")
                    .then(|| 30000 + i32::try_from((i * 4) % 2700).unwrap_or(0) + p32),
            }
        })
        .collect();
    let third = (i / 256) % 256;
    let fourth = i % 256;
    let mut spec = ServiceSpec {
        type_: Some(type_.to_owned()),
        ports: Some(ports),
        selector: Some([("app".to_string(), format!("app-{}", i % 97))].into()),
        ..Default::default()
    };
    match (type_, rng.below(4)) {
        ("ExternalName", _) => spec.external_name = Some(format!("svc-{i}.example.com")),
        ("ClusterIP", 0) => {
            spec.cluster_ip = Some("None".into());
            spec.cluster_ips = Some(vec!["None".into()]);
        }
        (_, 1) => {
            let v4 = format!("10.96.{third}.{fourth}");
            let v6 = format!("fd00:10:96::{i:x}");
            spec.cluster_ip = Some(v4.clone());
            spec.cluster_ips = Some(vec![v4, v6]);
            spec.ip_families = Some(vec!["IPv4".into(), "IPv6".into()]);
            spec.ip_family_policy = Some("RequireDualStack".into());
        }
        _ => {
            let v4 = format!("10.96.{third}.{fourth}");
            spec.cluster_ip = Some(v4.clone());
            spec.cluster_ips = Some(vec![v4]);
            spec.ip_families = Some(vec!["IPv4".into()]);
            spec.ip_family_policy = Some("SingleStack".into());
        }
    }
    if rng.below(3) == 0 {
        spec.session_affinity = Some("ClientIP".into());
        spec.session_affinity_config = Some(SessionAffinityConfig {
            client_ip: Some(ClientIpConfig {
                timeout_seconds: Some(600),
            }),
        });
    }
    if type_ == "LoadBalancer" {
        spec.load_balancer_source_ranges = Some(vec!["10.0.0.0/8".into(), "192.168.0.0/16".into()]);
        if rng.below(2) == 0 {
            spec.external_traffic_policy = Some("Local".into());
            spec.health_check_node_port = Some(32000 + i32::try_from(i % 700).unwrap_or(0));
        }
    }
    if type_ == "ClusterIP" && rng.below(10) == 0 {
        spec.external_ips = Some(vec![format!("203.0.113.{}", 1 + i % 250)]);
    }
    // About one in eight is broken in one of a few ways.
    match rng.below(64) {
        0 => spec.ports.iter_mut().flatten().for_each(|p| p.port = 0),
        1 => spec.cluster_ips = Some(vec!["10.96.0.1".into(), "not-an-ip".into()]),
        2 => spec.type_ = Some("Weird".into()),
        3 => spec.external_ips = Some(vec!["127.0.0.1".into()]),
        4 => spec.load_balancer_class = Some("a/b/c".into()),
        5 => spec.selector = Some([("bad key!".to_string(), "-".to_string())].into()),
        6 => spec.ip_families = Some(vec!["IPv6".into()]),
        7 => spec.session_affinity = Some("Sticky".into()),
        _ => {}
    }
    let mut svc = Service {
        api_version: Some("v1".into()),
        kind: Some("Service".into()),
        metadata: ObjectMeta {
            name: Some(format!("svc-{i}")),
            namespace: Some(format!("ns-{}", i % 50)),
            resource_version: Some("1".into()),
            labels: Some([("app".to_string(), format!("app-{}", i % 97))].into()),
            ..Default::default()
        },
        spec: Some(spec),
        status: None,
    };
    defaults::default_service(&mut svc);
    svc
}

fn services() -> Vec<Service> {
    let mut rng = Mix(0x5eed);
    (0..SERVICES).map(|i| service(i, &mut rng)).collect()
}

fn bench(c: &mut Criterion) {
    let svcs = services();
    let invalid = svcs
        .iter()
        .filter(|s| !validation::validate_service_create(s).is_empty())
        .count();
    eprintln!("validate: {SERVICES} Services, {invalid} invalid");

    let mut g = c.benchmark_group("validate");
    g.throughput(Throughput::Elements(SERVICES as u64));
    g.bench_function("service_create_10k", |b| {
        b.iter(|| {
            let mut errors = 0usize;
            for s in &svcs {
                errors += validation::validate_service_create(black_box(s)).len();
            }
            errors
        })
    });
    g.bench_function("service_update_10k", |b| {
        b.iter(|| {
            let mut errors = 0usize;
            for s in &svcs {
                errors += validation::validate_service_update(black_box(s), black_box(s)).len();
            }
            errors
        })
    });
    g.bench_function("default_and_validate_10k", |b| {
        b.iter_batched(
            || svcs.clone(),
            |mut all| {
                let mut errors = 0usize;
                for s in &mut all {
                    defaults::default_service(s);
                    errors += validation::validate_service_create(s).len();
                }
                // Returned, so that freeing the Services is not measured.
                (errors, all)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.bench_function("apiserver_create_10k", |b| {
        b.iter_batched(
            || svcs.clone(),
            |mut all| {
                let mut rng = SplitMix64::new(1);
                let mut errors = 0usize;
                for s in &mut all {
                    errors += svcnet_apiserver::create_service(s, None, &mut rng).errors.len();
                }
                (errors, all)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();

    // The valid Services alone, scaled to 10,000: the default mode against defaulting plus
    // validation.
    let valid: Vec<Service> = svcs
        .iter()
        .filter(|s| validation::validate_service_create(s).is_empty())
        .cycle()
        .take(SERVICES)
        .cloned()
        .collect();
    let mut g = c.benchmark_group("validate_valid");
    g.throughput(Throughput::Elements(SERVICES as u64));
    g.bench_function("default_and_validate_valid_10k", |b| {
        b.iter_batched(
            || valid.clone(),
            |mut all| {
                let mut errors = 0usize;
                for s in &mut all {
                    defaults::default_service(s);
                    errors += validation::validate_service_create(s).len();
                }
                // Returned, so that freeing the Services is not measured.
                (errors, all)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.bench_function("apiserver_create_valid_10k", |b| {
        b.iter_batched(
            || valid.clone(),
            |mut all| {
                let mut rng = SplitMix64::new(1);
                let mut errors = 0usize;
                for s in &mut all {
                    errors += svcnet_apiserver::create_service(s, None, &mut rng).errors.len();
                }
                (errors, all)
            },
            criterion::BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
