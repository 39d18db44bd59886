//! Strategies for Services, EndpointSlices and their parts: some values meaningful, some
//! garbage, and `valid_service` for well-formed Services. Shared by the property tests.

use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use svcnet_model::{
    ClientIpConfig, Condition, Endpoint, EndpointHints, EndpointPort, EndpointSlice, ForZone, IntOrString,
    LoadBalancerIngress, LoadBalancerStatus, ObjectMeta, OwnerReference, PortStatus, Service, ServicePort,
    ServiceSpec, ServiceStatus, SessionAffinityConfig,
};

/// A string that is sometimes meaningful and sometimes garbage.
pub fn text(meaningful: &'static [&'static str]) -> BoxedStrategy<String> {
    prop_oneof![
        3 => proptest::sample::select(meaningful).prop_map(str::to_owned),
        1 => "[a-zA-Z0-9./:_ -]{0,12}",
        1 => any::<String>(),
        1 => Just(String::new()),
    ]
    .boxed()
}

pub fn ip_text() -> BoxedStrategy<String> {
    text(&[
        "10.0.0.1",
        "10.0.0.10",
        "2001:db8::1",
        "fd00::5",
        "None",
        "127.0.0.1",
        "0.0.0.0",
        "::",
        "fe80::1",
        "224.0.0.1",
        "010.0.0.1",
        "::ffff:10.0.0.1",
        "1.2.3.256",
        "example.com",
    ])
}

pub fn cidr_text() -> BoxedStrategy<String> {
    text(&[
        "10.0.0.0/8",
        " 10.0.0.0/8 ",
        "192.168.0.1/24",
        "fd00::/64",
        "1.2.3.4",
        "10.0.0.0/33",
        "",
    ])
}

pub fn name_text() -> BoxedStrategy<String> {
    text(&[
        "web", "a", "1abc", "-x", "x-", "my.name", "UPPER", "a--b", "http", "p-1",
    ])
}

pub fn labels() -> BoxedStrategy<Option<std::collections::BTreeMap<String, String>>> {
    option::of(btree_map(
        text(&[
            "app",
            "example.com/tier",
            "a/b/c",
            "/x",
            "service.kubernetes.io/topology-mode",
        ]),
        text(&["web", "", "-bad", "Auto", "a b"]),
        0..4,
    ))
    .boxed()
}

pub fn annotations() -> BoxedStrategy<Option<std::collections::BTreeMap<String, String>>> {
    option::of(btree_map(
        text(&[
            "service.kubernetes.io/topology-mode",
            "service.kubernetes.io/topology-aware-hints",
            "service.beta.kubernetes.io/load-balancer-source-ranges",
            "Example.COM/Key",
        ]),
        text(&["Auto", "auto", "10.0.0.0/8, 192.168.0.0/16", " ", "nope"]),
        0..4,
    ))
    .boxed()
}

pub fn owner_reference() -> impl Strategy<Value = OwnerReference> {
    (
        text(&["v1", "apps/v1", "a/b/c", ""]),
        text(&["Event", "ReplicaSet", ""]),
        name_text(),
        text(&["uid-1", ""]),
        option::of(any::<bool>()),
        option::of(any::<bool>()),
    )
        .prop_map(
            |(api_version, kind, name, uid, controller, block_owner_deletion)| OwnerReference {
                api_version,
                kind,
                name,
                uid,
                controller,
                block_owner_deletion,
            },
        )
}

pub fn metadata() -> impl Strategy<Value = ObjectMeta> {
    (
        (
            option::of(name_text()),
            option::of(name_text()),
            option::of(name_text()),
            option::of(text(&["uid-1", "uid-2"])),
            option::of(text(&["1", "2"])),
            option::of(any::<i64>()),
        ),
        (
            option::of(text(&["2024-01-01T00:00:00Z"])),
            option::of(text(&["2024-01-02T00:00:00Z"])),
            option::of(any::<i64>()),
            labels(),
            annotations(),
            option::of(vec(owner_reference(), 0..3)),
            option::of(vec(
                text(&[
                    "orphan",
                    "foregroundDeletion",
                    "kubernetes",
                    "example.com/f",
                    "bad",
                ]),
                0..3,
            )),
        ),
    )
        .prop_map(
            |(
                (name, generate_name, namespace, uid, resource_version, generation),
                (creation, deletion, grace, labels, annotations, owner_references, finalizers),
            )| ObjectMeta {
                name,
                generate_name,
                namespace,
                uid,
                resource_version,
                generation,
                creation_timestamp: creation,
                deletion_timestamp: deletion,
                deletion_grace_period_seconds: grace,
                labels,
                annotations,
                owner_references,
                finalizers,
            },
        )
}

pub fn int_or_string() -> impl Strategy<Value = IntOrString> {
    prop_oneof![
        any::<i32>().prop_map(IntOrString::Int),
        (0..70000i32).prop_map(IntOrString::Int),
        text(&["http", "", "HTTP", "a--b", "toolongportname1", "123"]).prop_map(IntOrString::String),
    ]
}

pub fn port_number() -> impl Strategy<Value = i32> {
    prop_oneof![3 => 1..65536i32, 1 => any::<i32>(), 1 => Just(0)]
}

pub fn service_port() -> impl Strategy<Value = ServicePort> {
    (
        option::of(name_text()),
        option::of(text(&["TCP", "UDP", "SCTP", "ICMP", "tcp"])),
        option::of(text(&["http", "kubernetes.io/h2c", "a/b/c", "-bad"])),
        port_number(),
        option::of(int_or_string()),
        option::of(prop_oneof![30000..32768i32, any::<i32>(), Just(0)]),
    )
        .prop_map(
            |(name, protocol, app_protocol, port, target_port, node_port)| ServicePort {
                name,
                protocol,
                app_protocol,
                port,
                target_port,
                node_port,
            },
        )
}

pub fn affinity_config() -> impl Strategy<Value = SessionAffinityConfig> {
    option::of(option::of(prop_oneof![any::<i32>(), 1..86401i32])).prop_map(|c| SessionAffinityConfig {
        client_ip: c.map(|timeout_seconds| ClientIpConfig { timeout_seconds }),
    })
}

pub fn spec() -> impl Strategy<Value = ServiceSpec> {
    let types = text(&["ClusterIP", "NodePort", "LoadBalancer", "ExternalName", "Weird"]);
    (
        (
            option::of(vec(service_port(), 0..4)),
            labels(),
            option::of(ip_text()),
            option::of(vec(ip_text(), 0..4)),
            option::of(types),
            option::of(vec(ip_text(), 0..3)),
            option::of(text(&["None", "ClientIP", "Sticky"])),
        ),
        (
            option::of(ip_text()),
            option::of(vec(cidr_text(), 0..3)),
            option::of(text(&["example.com", "example.com.", "-bad-", "a..b"])),
            option::of(text(&["Cluster", "Local", "Global"])),
            option::of(prop_oneof![30000..32768i32, any::<i32>(), Just(0)]),
            option::of(any::<bool>()),
            option::of(affinity_config()),
        ),
        (
            option::of(vec(text(&["IPv4", "IPv6", "IPv5"]), 0..3)),
            option::of(text(&[
                "SingleStack",
                "PreferDualStack",
                "RequireDualStack",
                "DualStack",
            ])),
            option::of(any::<bool>()),
            option::of(text(&["example.com/lb", "Bad/Class/x", "-"])),
            option::of(text(&["Cluster", "Local", "Nowhere"])),
            option::of(text(&["PreferClose", "PreferSameNode", "Anywhere"])),
        ),
    )
        .prop_map(
            |(
                (ports, selector, cluster_ip, cluster_ips, type_, external_ips, session_affinity),
                (
                    load_balancer_ip,
                    load_balancer_source_ranges,
                    external_name,
                    external_traffic_policy,
                    health_check_node_port,
                    publish_not_ready_addresses,
                    session_affinity_config,
                ),
                (
                    ip_families,
                    ip_family_policy,
                    allocate_load_balancer_node_ports,
                    load_balancer_class,
                    internal_traffic_policy,
                    traffic_distribution,
                ),
            )| ServiceSpec {
                ports,
                selector,
                cluster_ip,
                cluster_ips,
                type_,
                external_ips,
                session_affinity,
                load_balancer_ip,
                load_balancer_source_ranges,
                external_name,
                external_traffic_policy,
                health_check_node_port,
                publish_not_ready_addresses,
                session_affinity_config,
                ip_families,
                ip_family_policy,
                allocate_load_balancer_node_ports,
                load_balancer_class,
                internal_traffic_policy,
                traffic_distribution,
            },
        )
}

pub fn status() -> impl Strategy<Value = ServiceStatus> {
    let ingress = (
        option::of(ip_text()),
        option::of(text(&["lb.example.com", "10.0.0.1", "-bad"])),
        option::of(text(&["VIP", "Proxy", "Other"])),
        option::of(vec(
            (port_number(), text(&["TCP", "UDP"]), option::of(text(&["Err"]))).prop_map(
                |(port, protocol, error)| PortStatus {
                    port,
                    protocol,
                    error,
                },
            ),
            0..2,
        )),
    )
        .prop_map(|(ip, hostname, ip_mode, ports)| LoadBalancerIngress {
            ip,
            hostname,
            ip_mode,
            ports,
        });
    (
        option::of(option::of(vec(ingress, 0..3))),
        option::of(vec(
            (text(&["Ready"]), text(&["True", "False"])).prop_map(|(type_, status)| Condition {
                type_,
                status,
                ..Default::default()
            }),
            0..2,
        )),
    )
        .prop_map(|(lb, conditions)| ServiceStatus {
            load_balancer: lb.map(|ingress| LoadBalancerStatus { ingress }),
            conditions,
        })
}

/// Any Service, including nonsense in every field.
pub fn any_service() -> impl Strategy<Value = Service> {
    (
        option::of(text(&["v1"])),
        option::of(text(&["Service"])),
        metadata(),
        option::of(spec()),
        option::of(status()),
    )
        .prop_map(|(api_version, kind, metadata, spec, status)| Service {
            api_version,
            kind,
            metadata,
            spec,
            status,
        })
}

/// A well-formed Service of any type, before defaulting.
pub fn valid_service() -> impl Strategy<Value = Service> {
    let ports = vec(
        (
            proptest::sample::select(&["TCP", "UDP", "SCTP"][..]),
            option::of(prop_oneof![
                (1..65536i32).prop_map(IntOrString::Int),
                "[a-z][a-z0-9]{0,9}".prop_map(IntOrString::String),
            ]),
            option::of("[a-z][a-z0-9]{0,8}"),
            any::<bool>(),
        ),
        1..4,
    );
    (
        "[a-z]([a-z0-9-]{0,20}[a-z0-9])?",
        "[a-z0-9]{1,12}",
        0..5usize,
        ports,
        0..4usize,
        (
            any::<bool>(),
            1..86401i32,
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        ),
        (
            any::<bool>(),
            any::<bool>(),
            "[a-z]{1,8}",
            1..255u8,
            30000..32000i32,
        ),
    )
        .prop_map(
            |(
                name,
                namespace,
                type_idx,
                ports,
                ip_mode,
                (client_ip, timeout, local, with_class, with_ranges),
                (external, prefer_close, host, octet, hc),
            )| {
                let type_ = ["ClusterIP", "NodePort", "LoadBalancer", "ExternalName", ""][type_idx];
                let mut spec = ServiceSpec {
                    selector: Some([("app".to_string(), name.clone())].into()),
                    type_: (!type_.is_empty()).then(|| type_.to_owned()),
                    ..Default::default()
                };
                let node_ports = matches!(type_, "NodePort" | "LoadBalancer");
                spec.ports = Some(
                    ports
                        .into_iter()
                        .enumerate()
                        .map(|(i, (proto, target, app, with_node_port))| {
                            let i32_i = i32::try_from(i).unwrap_or(0);
                            ServicePort {
                                name: Some(format!("p{i}")),
                                protocol: Some(proto.to_owned()),
                                app_protocol: app,
                                port: 80 + i32_i,
                                target_port: target,
                                node_port: (node_ports && with_node_port).then_some(30000 + i32_i),
                            }
                        })
                        .collect(),
                );
                if type_ == "ExternalName" {
                    spec.external_name = Some(format!("{host}.example.com"));
                } else {
                    let (ip, ips, fams): (&str, Vec<&str>, Vec<&str>) = match ip_mode {
                        0 => ("", vec![], vec![]),
                        1 => ("10.96.0.10", vec!["10.96.0.10"], vec!["IPv4"]),
                        2 => ("fd00::10", vec!["fd00::10", "10.96.0.10"], vec!["IPv6", "IPv4"]),
                        _ if type_.is_empty() || type_ == "ClusterIP" => ("None", vec!["None"], vec!["IPv4"]),
                        _ => ("10.96.0.11", vec!["10.96.0.11"], vec![]),
                    };
                    if !ip.is_empty() {
                        spec.cluster_ip = Some(ip.to_owned());
                        spec.cluster_ips = Some(ips.into_iter().map(str::to_owned).collect());
                        spec.ip_families = Some(fams.into_iter().map(str::to_owned).collect());
                        spec.ip_family_policy = Some("PreferDualStack".to_owned());
                    }
                    if external {
                        spec.external_ips = Some(vec![format!("203.0.113.{octet}")]);
                    }
                }
                if client_ip {
                    spec.session_affinity = Some("ClientIP".into());
                    spec.session_affinity_config = Some(SessionAffinityConfig {
                        client_ip: Some(ClientIpConfig {
                            timeout_seconds: Some(timeout),
                        }),
                    });
                }
                if type_ == "LoadBalancer" {
                    if local {
                        spec.external_traffic_policy = Some("Local".into());
                        spec.health_check_node_port = Some(hc);
                    }
                    if with_class {
                        spec.load_balancer_class = Some(format!("example.com/{host}"));
                    }
                    if with_ranges {
                        spec.load_balancer_source_ranges =
                            Some(vec!["10.0.0.0/8".into(), " 192.168.0.0/16".into()]);
                    }
                }
                if prefer_close {
                    spec.traffic_distribution = Some("PreferClose".into());
                }
                Service {
                    api_version: Some("v1".into()),
                    kind: Some("Service".into()),
                    metadata: ObjectMeta {
                        name: Some(name),
                        namespace: Some(namespace),
                        resource_version: Some("1".into()),
                        ..Default::default()
                    },
                    spec: Some(spec),
                    status: None,
                }
            },
        )
}

pub fn endpoint_slice() -> impl Strategy<Value = EndpointSlice> {
    let endpoint = (
        vec(ip_text(), 0..3),
        option::of(name_text()),
        option::of(name_text()),
        option::of(name_text()),
        labels(),
        option::of(vec(name_text().prop_map(|name| ForZone { name }), 0..10)),
    )
        .prop_map(
            |(addresses, hostname, node_name, zone, deprecated_topology, zones)| Endpoint {
                addresses: addresses.into_iter().map(Into::into).collect(),
                hostname: hostname.map(Into::into),
                node_name: node_name.map(Into::into),
                zone: zone.map(Into::into),
                deprecated_topology: deprecated_topology.map(Box::new),
                hints: zones.map(|z| {
                    Box::new(EndpointHints {
                        for_zones: Some(z),
                        for_nodes: None,
                    })
                }),
                ..Default::default()
            },
        );
    let port = (
        option::of(name_text()),
        option::of(text(&["TCP", "UDP", "ICMP"])),
        option::of(any::<i32>()),
        option::of(text(&["http", "a/b/c"])),
    )
        .prop_map(|(name, protocol, port, app_protocol)| EndpointPort {
            name,
            protocol,
            port,
            app_protocol,
        });
    (
        metadata(),
        text(&["IPv4", "IPv6", "FQDN", "IP"]),
        option::of(vec(endpoint, 0..4)),
        option::of(vec(port, 0..4)),
    )
        .prop_map(|(metadata, address_type, endpoints, ports)| EndpointSlice {
            metadata,
            address_type,
            endpoints,
            ports,
            ..Default::default()
        })
}
