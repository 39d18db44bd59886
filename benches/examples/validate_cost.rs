//! The work of one validation mode over the 10,000 Services of the `validate` bench, repeated,
//! for counting under `perf stat -e instructions:u` (a count that other load on the machine does
//! not change, unlike criterion's wall-clock time):
//!
//! ```sh
//! cargo build --release -p svcnet-benches --example validate_cost
//! perf stat -e instructions:u target/release/examples/validate_cost create 20
//! perf stat -e instructions:u target/release/examples/validate_cost none 20
//! ```
//! Each mode matches one function of the bench:
//!
//! | mode | bench | Services |
//! |---|---|---|
//! | `create` | `service_create_10k` (`validate_service_create` alone) | all |
//! | `default_and_validate` | `default_and_validate_10k` | all |
//! | `apiserver` | `apiserver_create_10k` (`create_service` without cluster state) | all |
//! | `pure` | `default_and_validate_valid_10k` | valid only |
//! | `apiserver_valid` | `apiserver_create_valid_10k` | valid only |
//!
//! Every mode copies its 10,000 Services once a round (`create` too, so that all subtract
//! alike); `none` does only that, and builds the Services, to subtract:
//! (count(mode) - count(none)) / (rounds x 10,000) is the cost of one Service.

use std::hint::black_box;

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

fn main() {
    let mut args = std::env::args().skip(1);
    let mode = args.next().unwrap_or_else(|| "pure".into());
    let rounds: usize = args.next().and_then(|n| n.parse().ok()).unwrap_or(10);
    let all = services();
    let valid: Vec<Service> = all
        .iter()
        .filter(|s| validation::validate_service_create(s).is_empty())
        .cycle()
        .take(SERVICES)
        .cloned()
        .collect();
    let input = if matches!(mode.as_str(), "pure" | "apiserver_valid") {
        &valid
    } else {
        &all
    };
    let mut rng = SplitMix64::new(1);
    let mut errors = 0usize;
    for _ in 0..rounds {
        let mut copy = input.clone();
        for s in &mut copy {
            match mode.as_str() {
                "create" => errors += validation::validate_service_create(black_box(s)).len(),
                "pure" | "default_and_validate" => {
                    defaults::default_service(s);
                    errors += validation::validate_service_create(black_box(s)).len();
                }
                "apiserver" | "apiserver_valid" => {
                    errors += svcnet_apiserver::create_service(black_box(s), None, &mut rng)
                        .errors
                        .len();
                }
                _ => {}
            }
        }
        black_box(&copy);
    }
    println!("{mode}: {rounds} x {SERVICES} Services, {errors} errors");
}
