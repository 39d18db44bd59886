//! Reachability against a direct, naive reading of the NetworkPolicy rules
//! (`svcnet_test_support::netpol`, shared with the `netpol` fuzz target), on random small
//! clusters, plus a few hand-written scenarios.

use std::net::IpAddr;

use proptest::prelude::*;
use svcnet_model::reachability::{self, Cluster, Namespace, Peer as Endpoint, Protocol};
use svcnet_model::{
    Container, ContainerPort, IntOrString, IpBlock, LabelSelector, LabelSelectorRequirement, NetworkPolicy,
    NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort,
    NetworkPolicySpec, Pod, PodIp, PodSpec, PodStatus, StringMap,
};
use svcnet_test_support::netpol::{Peer, QUERIES, block_has, side_ok};

// ---------------------------------------------------------------------------------------------
// Random small clusters.

const NAMESPACES: [&str; 2] = ["a", "b"];

fn small_labels() -> impl Strategy<Value = StringMap> {
    (
        prop::option::of(prop::sample::select(vec!["web", "db"])),
        prop::option::of(prop::sample::select(vec!["fe", "be"])),
    )
        .prop_map(|(app, tier)| {
            let mut m = StringMap::new();
            if let Some(a) = app {
                m.insert("app".into(), a.into());
            }
            if let Some(t) = tier {
                m.insert("tier".into(), t.into());
            }
            m
        })
}

fn selector() -> impl Strategy<Value = LabelSelector> {
    let expr = (
        prop::sample::select(vec!["app", "tier", "env"]),
        prop::sample::select(vec!["In", "NotIn", "Exists", "DoesNotExist"]),
        prop::sample::select(vec!["web", "db", "fe", "x"]),
    )
        .prop_map(|(k, op, v)| LabelSelectorRequirement {
            key: k.into(),
            operator: op.into(),
            values: matches!(op, "In" | "NotIn").then(|| vec![v.to_owned()]),
        });
    let one_label = (
        prop::sample::select(vec!["app", "tier"]),
        prop::sample::select(vec!["web", "db", "fe", "be"]),
    )
        .prop_map(|(k, v)| LabelSelector {
            match_labels: Some([(k.to_string(), v.to_string())].into()),
            match_expressions: None,
        });
    let mixed = (
        prop::option::of(small_labels()),
        prop::option::of(prop::collection::vec(expr, 0..2)),
    )
        .prop_map(|(ml, me)| LabelSelector {
            match_labels: ml,
            match_expressions: me,
        });
    prop_oneof![2 => Just(LabelSelector::default()), 3 => one_label, 2 => mixed]
}

fn ns_selector() -> impl Strategy<Value = LabelSelector> {
    prop_oneof![
        Just(LabelSelector::default()),
        prop::sample::select(vec!["x", "y"]).prop_map(|v| LabelSelector {
            match_labels: Some([("env".to_string(), v.to_string())].into()),
            match_expressions: None,
        }),
        prop::sample::select(vec!["a", "b"]).prop_map(|v| LabelSelector {
            match_labels: Some([("kubernetes.io/metadata.name".to_string(), v.to_string())].into()),
            match_expressions: None,
        }),
    ]
}

fn ip_block() -> impl Strategy<Value = IpBlock> {
    prop_oneof![
        (prop::sample::select(vec![
            "10.0.0.0/29",
            "10.0.0.0/30",
            "10.0.0.4/30",
            "0.0.0.0/0",
            "fd00::/125"
        ]),)
            .prop_map(|(c,)| IpBlock {
                cidr: c.into(),
                except: None
            }),
        prop::sample::select(vec!["10.0.0.1/32", "10.0.0.2/31", "10.0.0.4/30"]).prop_map(|e| IpBlock {
            cidr: "10.0.0.0/29".into(),
            except: Some(vec![e.into()]),
        }),
    ]
}

fn peer() -> impl Strategy<Value = NetworkPolicyPeer> {
    prop_oneof![
        selector().prop_map(|s| NetworkPolicyPeer {
            pod_selector: Some(s),
            ..Default::default()
        }),
        ns_selector().prop_map(|s| NetworkPolicyPeer {
            namespace_selector: Some(s),
            ..Default::default()
        }),
        (selector(), ns_selector()).prop_map(|(p, n)| NetworkPolicyPeer {
            pod_selector: Some(p),
            namespace_selector: Some(n),
            ..Default::default()
        }),
        ip_block().prop_map(|b| NetworkPolicyPeer {
            ip_block: Some(b),
            ..Default::default()
        }),
    ]
}

fn port() -> impl Strategy<Value = NetworkPolicyPort> {
    (
        prop::option::of(prop::sample::select(vec!["TCP", "UDP"])),
        prop_oneof![
            Just(None),
            prop::sample::select(vec![53, 80, 81]).prop_map(|p| Some(IntOrString::Int(p))),
            prop::sample::select(vec!["http", "dns"]).prop_map(|n| Some(IntOrString::String(n.into()))),
        ],
        prop::option::of(prop::sample::select(vec![80, 82])),
    )
        .prop_map(|(proto, port, end)| {
            let end_port = match port {
                Some(IntOrString::Int(_)) => end,
                _ => None,
            };
            NetworkPolicyPort {
                protocol: proto.map(str::to_owned),
                port,
                end_port,
            }
        })
}

fn opt_list<T: std::fmt::Debug + Clone>(
    s: impl Strategy<Value = T>,
) -> impl Strategy<Value = Option<Vec<T>>> {
    prop::option::of(prop::collection::vec(s, 0..3))
}

fn policy() -> impl Strategy<Value = (usize, NetworkPolicy)> {
    let ingress = opt_list(
        (opt_list(port()), opt_list(peer()))
            .prop_map(|(ports, from)| NetworkPolicyIngressRule { ports, from }),
    );
    let egress = opt_list(
        (opt_list(port()), opt_list(peer())).prop_map(|(ports, to)| NetworkPolicyEgressRule { ports, to }),
    );
    let types = prop_oneof![
        Just(None),
        Just(Some(vec![])),
        Just(Some(vec!["Ingress".to_string()])),
        Just(Some(vec!["Egress".to_string()])),
        Just(Some(vec!["Ingress".to_string(), "Egress".to_string()])),
    ];
    (0..2usize, selector(), ingress, egress, types).prop_map(|(ns, sel, ingress, egress, types)| {
        let mut np = NetworkPolicy::default();
        np.metadata.namespace = Some(NAMESPACES[ns].into());
        np.spec = Some(NetworkPolicySpec {
            pod_selector: Some(sel),
            ingress,
            egress,
            policy_types: types,
        });
        (ns, np)
    })
}

type PodGen = (usize, StringMap, Option<i32>, bool, bool);

fn pod() -> impl Strategy<Value = PodGen> {
    (
        0..2usize,
        small_labels(),
        prop::option::of(prop::sample::select(vec![80, 81])),
        any::<bool>(),
        any::<bool>(),
    )
}

fn build_pods(specs: Vec<PodGen>) -> Vec<Pod> {
    specs
        .into_iter()
        .enumerate()
        .map(|(i, (ns, labels, http, dns, v6))| {
            let mut ports = Vec::new();
            if let Some(number) = http {
                ports.push(ContainerPort {
                    name: Some("http".into()),
                    container_port: number,
                    ..Default::default()
                });
            }
            if dns {
                ports.push(ContainerPort {
                    name: Some("dns".into()),
                    container_port: 53,
                    protocol: Some("UDP".into()),
                    ..Default::default()
                });
            }
            let ip = if v6 {
                format!("fd00::{}", i + 1)
            } else {
                format!("10.0.0.{}", i + 1)
            };
            let mut p = Pod::default();
            p.metadata.name = Some(format!("p{i}"));
            p.metadata.namespace = Some(NAMESPACES[ns].into());
            p.metadata.labels = Some(labels);
            p.spec = Some(PodSpec {
                containers: Some(vec![Container {
                    name: "c".into(),
                    ports: Some(ports),
                    ..Default::default()
                }]),
                ..Default::default()
            });
            p.status = Some(PodStatus {
                pod_ips: Some(vec![PodIp { ip }]),
                ..Default::default()
            });
            p
        })
        .collect()
}

fn namespaces() -> impl Strategy<Value = Vec<Namespace>> {
    (
        prop::sample::select(vec!["x", "y"]),
        prop::sample::select(vec!["x", "y"]),
        any::<bool>(),
    )
        .prop_map(|(ea, eb, list_b)| {
            let mut v = vec![Namespace {
                name: "a".into(),
                labels: [("env".to_string(), ea.to_string())].into(),
            }];
            // Sometimes `b` is left out: it then has only its name label.
            if list_b {
                v.push(Namespace {
                    name: "b".into(),
                    labels: [("env".to_string(), eb.to_string())].into(),
                });
            }
            v
        })
}

const OUTSIDE: [&str; 3] = ["10.0.0.3", "192.0.2.1", "fd00::2"];

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn reachability_agrees_with_naive_evaluation(
        policies in prop::collection::vec(policy(), 0..4),
        pod_specs in prop::collection::vec(pod(), 2..6),
        namespaces in namespaces(),
    ) {
        let policies: Vec<NetworkPolicy> = policies
            .into_iter()
            .enumerate()
            .map(|(i, (_, mut np))| {
                np.metadata.name = Some(format!("np{i}"));
                np
            })
            .collect();
        let pods = build_pods(pod_specs);
        let cluster = Cluster { policies: &policies, namespaces: &namespaces, pods: &pods };
        let all = reachability::cluster_reachability(&cluster);
        prop_assert_eq!(all.len(), pods.len());
        for (si, src) in pods.iter().enumerate() {
            for (di, dst) in pods.iter().enumerate() {
                for (proto, port) in QUERIES {
                    let eg = side_ok(&policies, &namespaces, src, &Peer::Pod(dst), false, proto, port);
                    let ing = side_ok(&policies, &namespaces, dst, &Peer::Pod(src), true, proto, port);
                    let v = reachability::check(&cluster, &Endpoint::Pod(src), &Endpoint::Pod(dst), proto, port);
                    prop_assert_eq!(v.egress.allowed, eg, "egress {} -> {} {} {}", si, di, proto, port);
                    prop_assert_eq!(v.ingress.allowed, ing, "ingress {} -> {} {} {}", si, di, proto, port);
                    prop_assert_eq!(v.allowed, eg && ing);
                    // The data answers the same.
                    let data_in = all[di].ingress.pod(src.metadata.namespace(), src.metadata.name())
                        .is_some_and(|ps| ps.contains(proto, port));
                    let data_out = all[si].egress.pod(dst.metadata.namespace(), dst.metadata.name())
                        .is_some_and(|ps| ps.contains(proto, port));
                    prop_assert_eq!(data_in, ing, "ingress data {} -> {} {} {}", si, di, proto, port);
                    prop_assert_eq!(data_out, eg, "egress data {} -> {} {} {}", si, di, proto, port);
                }
            }
            // Addresses outside the pods: only ipBlocks (and open rules) let them in or out.
            for text in OUTSIDE {
                let ip: IpAddr = text.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
                for (proto, port) in QUERIES {
                    let ing = side_ok(&policies, &namespaces, src, &Peer::Ip(ip), true, proto, port);
                    let v = reachability::check(&cluster, &Endpoint::Address(ip), &Endpoint::Pod(src), proto, port);
                    prop_assert_eq!(v.allowed, ing, "ingress from {} to {} {} {}", text, si, proto, port);
                    let eg = side_ok(&policies, &namespaces, src, &Peer::Ip(ip), false, proto, port);
                    let v = reachability::check(&cluster, &Endpoint::Pod(src), &Endpoint::Address(ip), proto, port);
                    prop_assert_eq!(v.allowed, eg, "egress from {} to {} {} {}", si, text, proto, port);
                    // The block list answers the same for ingress.
                    let by_blocks = all[si].ingress.blocks.iter().any(|b| {
                        let blk = IpBlock { cidr: b.cidr.clone(), except: Some(b.except.clone()) };
                        block_has(&blk, ip) && b.ports.contains(proto, port)
                    });
                    prop_assert_eq!(by_blocks, ing, "ingress blocks from {} to {} {} {}", text, si, proto, port);
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Scenarios.

fn mk_pod(ns: &str, name: &str, labels: &[(&str, &str)], ip: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.metadata.namespace = Some(ns.into());
    p.metadata.labels = Some(
        labels
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
    );
    p.spec = Some(PodSpec {
        containers: Some(vec![Container {
            name: "c".into(),
            ports: Some(vec![ContainerPort {
                name: Some("http".into()),
                container_port: 8080,
                ..Default::default()
            }]),
            ..Default::default()
        }]),
        ..Default::default()
    });
    p.status = Some(PodStatus {
        pod_ip: Some(ip.into()),
        ..Default::default()
    });
    p
}

fn from_json(v: serde_json::Value) -> NetworkPolicy {
    serde_json::from_value(v).unwrap_or_default()
}

#[test]
fn allow_from_frontend_on_named_port() {
    let np = from_json(serde_json::json!({
        "metadata": {"name": "api-allow", "namespace": "shop"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "api"}},
            "ingress": [{
                "from": [{"podSelector": {"matchLabels": {"app": "web"}}},
                         {"namespaceSelector": {"matchLabels": {"team": "ops"}}}],
                "ports": [{"port": "http"}]
            }]
        }
    }));
    let api = mk_pod("shop", "api", &[("app", "api")], "10.1.0.1");
    let web = mk_pod("shop", "web", &[("app", "web")], "10.1.0.2");
    let other = mk_pod("shop", "batch", &[("app", "batch")], "10.1.0.3");
    let mon = mk_pod("monitoring", "prom", &[], "10.2.0.1");
    // Same labels as `web`, another namespace: a bare podSelector peer does not reach it.
    let stranger = mk_pod("elsewhere", "web", &[("app", "web")], "10.3.0.1");
    let pods = [api.clone(), web.clone(), other.clone(), mon.clone(), stranger];
    let namespaces = [Namespace {
        name: "monitoring".into(),
        labels: [("team".to_string(), "ops".to_string())].into(),
    }];
    let policies = [np];
    let cluster = Cluster {
        policies: &policies,
        namespaces: &namespaces,
        pods: &pods,
    };
    let r = reachability::pod_reachability(&cluster, &api);
    assert_eq!(r.ingress.policies, ["shop/api-allow"]);
    assert!(!r.egress.isolated());
    let names: Vec<&str> = r.ingress.pods.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["web", "prom"]);
    // "http" resolves to the api pod's container port 8080.
    let web_ports = r.ingress.pod("shop", "web").cloned().unwrap_or_default();
    assert!(web_ports.contains(Protocol::Tcp, 8080));
    assert!(!web_ports.contains(Protocol::Tcp, 80));
    let ok = reachability::check(
        &cluster,
        &Endpoint::Pod(&web),
        &Endpoint::Pod(&api),
        Protocol::Tcp,
        8080,
    );
    assert!(ok.allowed);
    assert_eq!(ok.ingress.allowed_by, ["shop/api-allow"]);
    let no = reachability::check(
        &cluster,
        &Endpoint::Pod(&other),
        &Endpoint::Pod(&api),
        Protocol::Tcp,
        8080,
    );
    assert!(!no.allowed && no.ingress.isolated);
    // The api pod's egress is open.
    let out = reachability::check(
        &cluster,
        &Endpoint::Pod(&api),
        &Endpoint::Pod(&other),
        Protocol::Udp,
        9,
    );
    assert!(out.allowed);
}

#[test]
fn egress_ipblock_with_except_and_port_range() {
    let np = from_json(serde_json::json!({
        "metadata": {"name": "egress", "namespace": "shop"},
        "spec": {
            "podSelector": {},
            "policyTypes": ["Egress"],
            "egress": [{
                "to": [{"ipBlock": {"cidr": "192.168.0.0/16", "except": ["192.168.1.0/24"]}}],
                "ports": [{"protocol": "TCP", "port": 32000, "endPort": 32768}]
            }]
        }
    }));
    let a = mk_pod("shop", "a", &[], "10.1.0.1");
    let pods = [a.clone()];
    let policies = [np];
    let cluster = Cluster {
        policies: &policies,
        namespaces: &[],
        pods: &pods,
    };
    let to = |ip: &str, port| {
        let ip: IpAddr = ip.parse().unwrap_or(IpAddr::from([0, 0, 0, 0]));
        reachability::check(
            &cluster,
            &Endpoint::Pod(&a),
            &Endpoint::Address(ip),
            Protocol::Tcp,
            port,
        )
        .allowed
    };
    assert!(to("192.168.2.7", 32000));
    assert!(to("192.168.2.7", 32768));
    assert!(!to("192.168.2.7", 32769));
    assert!(!to("192.168.1.7", 32100));
    assert!(!to("10.0.0.1", 32100));
    let r = reachability::pod_reachability(&cluster, &a);
    assert!(r.egress.isolated() && !r.ingress.isolated());
    assert_eq!(r.egress.blocks.len(), 1);
    assert_eq!(r.egress.blocks[0].except, ["192.168.1.0/24"]);
    assert!(r.egress.pods.is_empty());
}

#[test]
fn egress_named_port_resolves_at_the_destination() {
    let np = from_json(serde_json::json!({
        "metadata": {"name": "to-http", "namespace": "shop"},
        "spec": {
            "podSelector": {"matchLabels": {"app": "client"}},
            "policyTypes": ["Egress"],
            "egress": [{"ports": [{"port": "http"}]}]
        }
    }));
    let client = mk_pod("shop", "client", &[("app", "client")], "10.1.0.1");
    let mut server = mk_pod("shop", "server", &[("app", "server")], "10.1.0.2");
    if let Some(spec) = server.spec.as_mut() {
        spec.containers = Some(vec![Container {
            name: "c".into(),
            ports: Some(vec![ContainerPort {
                name: Some("http".into()),
                container_port: 9090,
                ..Default::default()
            }]),
            ..Default::default()
        }]);
    }
    let pods = [client.clone(), server.clone()];
    let policies = [np];
    let cluster = Cluster {
        policies: &policies,
        namespaces: &[],
        pods: &pods,
    };
    let go = |port| {
        reachability::check(
            &cluster,
            &Endpoint::Pod(&client),
            &Endpoint::Pod(&server),
            Protocol::Tcp,
            port,
        )
        .allowed
    };
    assert!(go(9090));
    assert!(!go(8080));
    let r = reachability::pod_reachability(&cluster, &client);
    let to_server = r.egress.pod("shop", "server").cloned().unwrap_or_default();
    assert_eq!(
        to_server.ranges,
        [reachability::PortRange {
            protocol: Protocol::Tcp,
            first: 9090,
            last: 9090
        }]
    );
    // The client itself: its own "http" is 8080.
    let to_self = r.egress.pod("shop", "client").cloned().unwrap_or_default();
    assert!(to_self.contains(Protocol::Tcp, 8080) && !to_self.contains(Protocol::Tcp, 9090));
    // Outside the cluster a named port matches nothing.
    let out = reachability::check(
        &cluster,
        &Endpoint::Pod(&client),
        &Endpoint::Address(IpAddr::from([192, 0, 2, 1])),
        Protocol::Tcp,
        8080,
    );
    assert!(!out.allowed && out.egress.isolated);
}
