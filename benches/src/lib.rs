//! Synthetic clusters at scale, shared by the criterion benchmarks and the cost examples.

/// kube-oracle's `BenchmarkOracleSyncProxyRules` cluster as Kubernetes objects, and the node
/// settings, for the proxy model, iptables and IPVS benchmarks.
pub mod oracle {
    use svcnet_model::{
        Endpoint, EndpointConditions, EndpointPort, EndpointSlice, ObjectMeta, Service, ServicePort,
        ServiceSpec,
    };
    use svcnet_rules::ProxyConfig;

    /// Services in kube-oracle's benchmark.
    pub const SERVICES: usize = 10_000;
    /// Endpoints per Service.
    pub const ENDPOINTS: usize = 10;

    /// kube-oracle's `BenchCluster`: Service i in `ns-(i%100)`, ClusterIP 172.30.x.y, one TCP port
    /// p80; its slice holds 10 ready endpoints `10.(128+..).x.y` on `node-(n%50)`. `changed`
    /// replaces the first endpoint of the first Service.
    pub fn cluster(changed: bool) -> (Vec<Service>, Vec<EndpointSlice>) {
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
                    let mut n = i * ENDPOINTS + j;
                    if changed && i == 0 && j == 0 {
                        n = SERVICES * ENDPOINTS + 1;
                    }
                    Endpoint {
                        addresses: svcnet_model::smallvec![
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

    /// The node settings of kube-oracle's benchmark (node-0, 192.168.0.2, cluster CIDR 10.0.0.0/8).
    pub fn config() -> ProxyConfig {
        let mut c = ProxyConfig::new("node-0", "192.168.0.2".parse().expect("ip"));
        c.cluster_cidrs = vec!["10.0.0.0/8".parse().expect("cidr")];
        c.masquerade_mark = "0x4000".into();
        c
    }

    /// [`cluster`] as objects deserialized from JSON values, one object at a time, as a
    /// controller's objects arrive: their small allocations (addresses, names) end up
    /// scattered among freed temporaries, unlike [`cluster`]'s. `rules_ipvs`' `full (objects
    /// from JSON)` and the `json_cost` example take it.
    pub fn cluster_from_json() -> (Vec<Service>, Vec<EndpointSlice>) {
        use serde_json::json;
        let mut svcs = Vec::with_capacity(SERVICES);
        let mut slices = Vec::with_capacity(SERVICES);
        for i in 0..SERVICES {
            let (ns, name) = (format!("ns-{}", i % 100), format!("svc-{i}"));
            let svc = json!({
                "metadata": {"namespace": ns, "name": name},
                "spec": {"type": "ClusterIP", "clusterIP": format!("172.30.{}.{}", (i >> 8) & 255, i & 255),
                         "ports": [{"name": "p80", "port": 80, "protocol": "TCP"}]}
            });
            let eps: Vec<_> = (0..ENDPOINTS)
                .map(|j| {
                    let n = i * ENDPOINTS + j;
                    json!({
                        "addresses": [format!("10.{}.{}.{}", 128 + ((n >> 16) & 63), (n >> 8) & 255, n & 255)],
                        "conditions": {"ready": true},
                        "nodeName": format!("node-{}", n % 50),
                    })
                })
                .collect();
            let slice = json!({
                "metadata": {"namespace": ns, "name": format!("{name}-1"),
                             "labels": {"kubernetes.io/service-name": name}},
                "addressType": "IPv4",
                "endpoints": eps,
                "ports": [{"name": "p80", "port": 80, "protocol": "TCP"}]
            });
            svcs.push(serde_json::from_value(svc).expect("service"));
            slices.push(serde_json::from_value(slice).expect("slice"));
        }
        (svcs, slices)
    }
}

/// The same cluster as the nftables proxier's input (service ports with their endpoints).
pub mod oracle_nft {
    use svcnet_rules::nftables::{LocalDetector, NftConfig, NftEndpoint, NftServicePort, Protocol};

    use super::oracle::{ENDPOINTS, SERVICES};

    /// Endpoint number `n`: `10.(128+..).x.y:80`, remote.
    pub fn endpoint(n: usize) -> NftEndpoint {
        let ip = format!("10.{}.{}.{}", 128 + ((n >> 16) & 63), (n >> 8) & 255, n & 255);
        NftEndpoint {
            ip: ip.parse().unwrap(),
            port: 80,
            is_local: false,
        }
    }

    /// Service `i`'s port with its endpoints; `changed` replaces the first endpoint of Service 0.
    pub fn port(i: usize, changed: bool) -> NftServicePort {
        let mut eps: Vec<NftEndpoint> = (0..ENDPOINTS)
            .map(|j| {
                let n = if changed && i == 0 && j == 0 {
                    SERVICES * ENDPOINTS + 1
                } else {
                    i * ENDPOINTS + j
                };
                endpoint(n)
            })
            .collect();
        eps.sort_by_cached_key(|e| format!("{}:{}", e.ip, e.port));
        NftServicePort {
            namespace: format!("ns-{}", i % 100),
            name: format!("svc-{i}"),
            port_name: "p80".into(),
            protocol: Protocol::Tcp,
            cluster_ip: format!("172.30.{}.{}", (i >> 8) & 255, i & 255).parse().unwrap(),
            port: 80,
            node_port: 0,
            external_ips: vec![],
            load_balancer_vips: vec![],
            source_ranges: vec![],
            affinity_timeout: None,
            internal_policy_local: false,
            external_policy_local: false,
            externally_accessible: false,
            uses_cluster_endpoints: true,
            uses_local_endpoints: false,
            cluster_endpoints: eps.clone(),
            local_endpoints: vec![],
            all_locally_reachable: eps,
            has_endpoints: true,
        }
    }

    /// Every Service's port ([`port`]), in the proxy model's order (namespace, name, port
    /// name: `ns-0/svc-0`, `ns-0/svc-100`, ...), so that a full sync of them writes the
    /// Services in the order a sync of the model built from
    /// [`oracle::cluster`](super::oracle::cluster) writes them.
    pub fn ports() -> Vec<NftServicePort> {
        let mut ports: Vec<NftServicePort> = (0..SERVICES).map(|i| port(i, false)).collect();
        ports.sort_by(|a, b| {
            (&a.namespace, &a.name, &a.port_name).cmp(&(&b.namespace, &b.name, &b.port_name))
        });
        ports
    }

    /// The settings of kube-proxy's `NewFakeProxier`.
    pub fn config() -> NftConfig {
        let mut c = NftConfig::new("192.168.0.2".parse().unwrap());
        c.masquerade_mark = "0x4000".into();
        c.local_detector = Some(LocalDetector::ClusterCidr("10.0.0.0/8".parse().unwrap()));
        c
    }

    /// The node of [`config`] as the proxy model's settings, for building the same service
    /// ports from [`oracle::cluster`](super::oracle::cluster)'s objects: `oracle::config()`
    /// (192.168.0.2, cluster CIDR 10.0.0.0/8, mark `0x4000`) on `NewFakeProxier`'s host name
    /// `test-hostname`, which holds none of the endpoints (all are remote, as in [`port`];
    /// on `node-0` one endpoint in 50 would be local and get a hairpin element).
    /// `NftConfig::from_proxy(&proxy_config(), false)` equals [`config`].
    pub fn proxy_config() -> svcnet_rules::ProxyConfig {
        let mut c = super::oracle::config();
        c.node_name = "test-hostname".into();
        c
    }
}

/// The varied Services of the validation benchmark and its cost example.
pub mod validation {
    use svcnet_model::rng::{RngCore, SplitMix64};
    use svcnet_model::{
        ClientIpConfig, IntOrString, ObjectMeta, Service, ServicePort, ServiceSpec, SessionAffinityConfig,
        defaults,
    };

    /// How many Services the validation benchmarks check.
    pub const SERVICES: usize = 10_000;

    /// The workspace's SplitMix64 with the helpers below, so every run measures the same Services.
    struct Mix(SplitMix64);

    impl Mix {
        fn next(&mut self) -> u64 {
            self.0.next_u64()
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

    /// The 10,000 varied Services (every type, single- and dual-stack, about one in eight invalid).
    pub fn services() -> Vec<Service> {
        let mut rng = Mix(SplitMix64::new(0x5eed));
        (0..SERVICES).map(|i| service(i, &mut rng)).collect()
    }
}

/// The allocator's state during a benchmark: that of a long-running proxy, not of a fresh
/// process.
///
/// A full sync at kube-oracle's size allocates tens of megabytes and frees them when the next
/// sync replaces its result. With glibc's default settings, freed memory beyond a trim
/// threshold (128 KiB at start) goes back to the kernel, and the next sync takes it again one
/// page fault at a time: thousands of faults per sync, several milliseconds on this kind of
/// virtual machine. glibc raises that threshold by itself (to twice the size of the largest
/// block it has unmapped, up to 64 MiB) once a process has freed a large block, as a
/// long-running proxy soon has; the iptables sync's 32 MB text does it on its first free.
/// Go's runtime, which kube-proxy's benchmark runs on, keeps its heap between iterations too.
///
/// [`steady_heap`](crate::heap::steady_heap) puts the process in that state before timing, so that every backend's
/// full-sync bench measures the work and not the kernel's page zeroing:
/// it allocates and frees one 32 MiB block (nothing else; without effect on other
/// allocators). Set `SVCNET_BENCH_COLD_HEAP=1` to skip it and measure from a fresh process'
/// allocator, faults included.
pub mod heap {
    /// The block's size: under glibc's largest dynamic mmap threshold (32 MiB on 64-bit), with
    /// room for its header and page rounding (a mapped block of exactly 32 MiB does not count).
    const BLOCK: usize = (32 << 20) - (64 << 10);

    /// Frees one block of 32 MiB (see the [module](self) documentation), unless
    /// `SVCNET_BENCH_COLD_HEAP` is set. Returns whether it did.
    ///
    /// ```
    /// let steady = svcnet_benches::heap::steady_heap();
    /// assert_eq!(steady, std::env::var_os("SVCNET_BENCH_COLD_HEAP").is_none());
    /// ```
    pub fn steady_heap() -> bool {
        if std::env::var_os("SVCNET_BENCH_COLD_HEAP").is_some() {
            eprintln!("SVCNET_BENCH_COLD_HEAP: the allocator starts cold (page faults timed)");
            return false;
        }
        let block: Vec<u8> = Vec::with_capacity(BLOCK);
        drop(std::hint::black_box(block));
        true
    }
}

/// Timing of syncs as a proxy runs them, for criterion's `iter_custom`.
pub mod timing {
    use std::time::{Duration, Instant};

    /// Runs `sync` `iters` times and returns the time spent in it, with the previous run's
    /// result alive during each run and released after it, untimed: as a proxy holds its last
    /// rule set until the next one replaces it (neither every result kept, so that the heap
    /// grows, nor each freed inside the timed part).
    ///
    /// ```
    /// let timed = svcnet_benches::timing::previous_kept(3, || vec![0u8; 1024]);
    /// assert!(timed.as_secs() < 60);
    /// ```
    pub fn previous_kept<T>(iters: u64, mut sync: impl FnMut() -> T) -> Duration {
        let mut timed = Duration::ZERO;
        let mut previous = None;
        for _ in 0..iters {
            let start = Instant::now();
            let result = sync();
            timed += start.elapsed();
            drop(previous.replace(result));
        }
        timed
    }
}
