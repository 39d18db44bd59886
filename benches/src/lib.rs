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

    /// The node settings of kube-oracle's benchmark (node-0, 192.168.0.2, cluster CIDR 10.0.0.0/8).
    pub fn config() -> ProxyConfig {
        let mut c = ProxyConfig::new("node-0", "192.168.0.2".parse().expect("ip"));
        c.cluster_cidrs = vec!["10.0.0.0/8".parse().expect("cidr")];
        c.masquerade_mark = "0x4000".into();
        c
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

    /// The settings of kube-proxy's `NewFakeProxier`.
    pub fn config() -> NftConfig {
        let mut c = NftConfig::new("192.168.0.2".parse().unwrap());
        c.masquerade_mark = "0x4000".into();
        c.local_detector = Some(LocalDetector::ClusterCidr("10.0.0.0/8".parse().unwrap()));
        c
    }
}
