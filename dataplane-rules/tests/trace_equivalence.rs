//! Cross-backend equivalence: for random small clusters (IPv4, IPv6 and dual-stack Services of
//! every type and policy, endpoints in every condition on three nodes in two zones, zone hints,
//! ClientIP affinity) and the packets that matter on one node, the iptables trace, the nftables
//! trace and the IPVS trace (virtual servers with the companion iptables rules and ipsets)
//! each agree with the reference model in that backend's dialect on the outcome, the endpoint
//! set and (for DNAT and pass) masquerading. Each family's proxier is checked on its own.

use std::net::IpAddr;

use proptest::prelude::*;
use serde_json::{Value, json};
use svcnet_model::{EndpointSlice, Node, Service};
use svcnet_rules::iptables::{IptablesSettings, sync};
use svcnet_rules::nftables::{Family, NftConfig, NftProxier, NftServicePort, TABLE};
use svcnet_rules::trace::reference::{Dialect, reference};
use svcnet_rules::trace::{HostAddresses, Outcome, Packet, Trace};
use svcnet_rules::{Protocol, ProxyConfig, ProxyModel};

const NODE: &str = "node-a";
const NODE_IP: &str = "192.168.0.2";
const NODE_IP6: &str = "2001:db8::2";
const NODES: [&str; 3] = ["node-a", "node-b", "node-c"];
const ZONES: [&str; 3] = ["zone-a", "zone-b", "zone-a"];

/// One generated endpoint.
#[derive(Debug, Clone, Copy)]
struct Ep {
    node: u8,
    ready: bool,
    serving: bool,
    terminating: bool,
    /// The zone hint: 0 none, 1 `zone-a`, 2 `zone-b`.
    hint: u8,
}

/// One generated Service with its endpoints.
#[derive(Debug, Clone)]
struct Svc {
    kind: u8, // 0 ClusterIP, 1 NodePort, 2 LoadBalancer
    etp_local: bool,
    itp_local: bool,
    udp: bool,
    external_ip: bool,
    source_ranges: u8, // 0 none, 1 allows the outside client range, 2 allows the node network
    /// 0 IPv4, 1 IPv6, 2 dual-stack (IPv4 first), 3 dual-stack (IPv6 first).
    family: u8,
    /// ClientIP session affinity.
    affinity: bool,
    endpoints: Vec<Ep>,
}

fn ep_strategy() -> impl Strategy<Value = Ep> {
    (0u8..3, any::<bool>(), any::<bool>(), any::<bool>(), 0u8..3).prop_map(
        |(node, ready, serving, terminating, hint)| Ep {
            node,
            ready,
            serving,
            terminating,
            hint,
        },
    )
}

fn svc_strategy() -> impl Strategy<Value = Svc> {
    (
        (0u8..3, any::<bool>(), any::<bool>(), prop::bool::weighted(0.2)),
        (
            prop::bool::weighted(0.3),
            0u8..3,
            0u8..4,
            prop::bool::weighted(0.3),
        ),
        prop::collection::vec(ep_strategy(), 0..4),
    )
        .prop_map(
            |(
                (kind, etp_local, itp_local, udp),
                (external_ip, source_ranges, family, affinity),
                endpoints,
            )| Svc {
                kind,
                etp_local,
                itp_local,
                udp,
                external_ip,
                source_ranges,
                family,
                affinity,
                endpoints,
            },
        )
}

/// The addresses of one family.
struct Fam {
    v6: bool,
}

impl Fam {
    fn cluster_ip(&self, n: usize) -> String {
        if self.v6 {
            format!("fd00:30::{n:x}")
        } else {
            format!("172.30.0.{n}")
        }
    }
    fn external_ip(&self, n: usize) -> String {
        if self.v6 {
            format!("2001:db8:2::{n:x}")
        } else {
            format!("192.0.2.{n}")
        }
    }
    fn lb_ip(&self, n: usize) -> String {
        if self.v6 {
            format!("2001:db8:1::{n:x}")
        } else {
            format!("1.1.1.{n}")
        }
    }
    fn endpoint(&self, node: u8, n: usize, j: usize) -> String {
        if self.v6 {
            format!("fd10:180:{node}::{:x}", n * 10 + j)
        } else {
            format!("10.180.{node}.{}", n * 10 + j)
        }
    }
    fn node_ip(&self) -> &'static str {
        if self.v6 { NODE_IP6 } else { NODE_IP }
    }
    fn ranges(&self, which: u8) -> Option<&'static str> {
        match (which, self.v6) {
            (1, false) => Some("203.0.113.0/25"),
            (2, false) => Some("192.168.0.0/24"),
            (1, true) => Some("2600:5200::/64"),
            (2, true) => Some("2001:db8::/64"),
            _ => None,
        }
    }
    /// Pod, node, outside, outside the client range.
    fn sources(&self) -> [&'static str; 4] {
        if self.v6 {
            ["fd10::2", NODE_IP6, "2600:5200::1", "2600:5201::1"]
        } else {
            ["10.0.0.2", NODE_IP, "203.0.113.2", "203.0.113.130"]
        }
    }
    fn loopback(&self) -> &'static str {
        if self.v6 { "::1" } else { "127.0.0.1" }
    }
}

const V4: Fam = Fam { v6: false };
const V6: Fam = Fam { v6: true };

fn has_family(s: &Svc, v6: bool) -> bool {
    match s.family {
        0 => !v6,
        1 => v6,
        _ => true,
    }
}

fn objects(svcs: &[Svc]) -> (Vec<Service>, Vec<EndpointSlice>) {
    let mut services = Vec::new();
    let mut slices = Vec::new();
    for (i, s) in svcs.iter().enumerate() {
        let n = i + 1;
        let proto = if s.udp { "UDP" } else { "TCP" };
        let fams: Vec<&Fam> = match s.family {
            0 => vec![&V4],
            1 => vec![&V6],
            2 => vec![&V4, &V6],
            _ => vec![&V6, &V4],
        };
        let mut spec = json!({
            "clusterIP": fams[0].cluster_ip(n),
            "clusterIPs": fams.iter().map(|f| f.cluster_ip(n)).collect::<Vec<_>>(),
            "ipFamilies": fams.iter().map(|f| if f.v6 { "IPv6" } else { "IPv4" }).collect::<Vec<_>>(),
            "ipFamilyPolicy": if fams.len() == 2 { "RequireDualStack" } else { "SingleStack" },
            "ports": [{"name": "p", "port": 80, "protocol": proto}],
        });
        let ty = ["ClusterIP", "NodePort", "LoadBalancer"][usize::from(s.kind)];
        spec["type"] = json!(ty);
        if s.kind > 0 {
            spec["ports"][0]["nodePort"] = json!(3000 + n);
            if s.etp_local {
                spec["externalTrafficPolicy"] = json!("Local");
                if s.kind == 2 {
                    spec["healthCheckNodePort"] = json!(30000 + n);
                }
            }
        }
        if s.itp_local {
            spec["internalTrafficPolicy"] = json!("Local");
        }
        if s.affinity {
            spec["sessionAffinity"] = json!("ClientIP");
            spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 60 * n}});
        }
        if s.external_ip {
            spec["externalIPs"] = json!(fams.iter().map(|f| f.external_ip(n)).collect::<Vec<_>>());
        }
        let mut svc = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("svc{n}"), "namespace": "ns"}, "spec": spec});
        if s.kind == 2 {
            let ingress: Vec<Value> = fams.iter().map(|f| json!({"ip": f.lb_ip(n)})).collect();
            svc["status"] = json!({"loadBalancer": {"ingress": ingress}});
            let ranges: Vec<&str> = fams.iter().filter_map(|f| f.ranges(s.source_ranges)).collect();
            if !ranges.is_empty() {
                svc["spec"]["loadBalancerSourceRanges"] = json!(ranges);
            }
        }
        for f in &fams {
            let eps: Vec<Value> = s
                .endpoints
                .iter()
                .enumerate()
                .map(|(j, e)| {
                    let mut v = json!({"addresses": [f.endpoint(e.node, n, j)],
                       "nodeName": NODES[usize::from(e.node)],
                       "zone": ZONES[usize::from(e.node)],
                       "conditions": {"ready": e.ready, "serving": e.serving || e.ready,
                                      "terminating": e.terminating && !e.ready}});
                    if e.hint > 0 {
                        let zone = ["zone-a", "zone-b"][usize::from(e.hint - 1)];
                        v["hints"] = json!({"forZones": [{"name": zone}]});
                    }
                    v
                })
                .collect();
            let fam = if f.v6 { "ipv6" } else { "ipv4" };
            slices.push(
                json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                "metadata": {"name": format!("svc{n}-{fam}"), "namespace": "ns",
                             "labels": {"kubernetes.io/service-name": format!("svc{n}")}},
                "addressType": if f.v6 { "IPv6" } else { "IPv4" }, "endpoints": eps,
                "ports": [{"name": "p", "port": 8080, "protocol": proto}]}),
            );
        }
        services.push(svc);
    }
    (
        services
            .into_iter()
            .map(|v| serde_json::from_value(v).expect("service"))
            .collect(),
        slices
            .into_iter()
            .map(|v| serde_json::from_value(v).expect("slice"))
            .collect(),
    )
}

fn node() -> Node {
    serde_json::from_value(json!({"apiVersion": "v1", "kind": "Node",
        "metadata": {"name": NODE, "labels": {"topology.kubernetes.io/zone": ZONES[0]}}}))
    .expect("node")
}

fn config(f: &Fam) -> ProxyConfig {
    let mut c = ProxyConfig::new(NODE, f.node_ip().parse().expect("ip"));
    c.cluster_cidrs = vec![
        "10.0.0.0/8".parse().expect("cidr"),
        "fd10::/16".parse().expect("cidr"),
    ];
    c.nodeport_addresses = Some(vec!["primary".to_owned()]);
    c
}

/// The packets tried on the node of one family: every destination of every Service (its
/// frontends, another port, its NodePort on the node IP and on loopback, its health-check
/// port, its endpoints) from a pod, the node, outside and outside the client range; the
/// Service's own load-balancer IP and endpoints are sources for the Service's destinations.
fn packets(svcs: &[Svc], f: &Fam) -> Vec<Packet> {
    let mut out = Vec::new();
    let mut push = |s: &str, d: &str, port: u16| {
        for protocol in [Protocol::Tcp, Protocol::Udp] {
            out.push(Packet {
                source: s.parse::<IpAddr>().expect("src"),
                destination: d.parse::<IpAddr>().expect("dst"),
                port,
                protocol,
            });
        }
    };
    for src in f.sources() {
        push(src, f.node_ip(), 9999);
    }
    for (i, s) in svcs.iter().enumerate() {
        let n = i + 1;
        let mut dsts: Vec<(String, u16)> = vec![
            (f.cluster_ip(n), 80),
            (f.cluster_ip(n), 81),
            (f.node_ip().to_owned(), (3000 + n) as u16),
            (f.loopback().to_owned(), (3000 + n) as u16),
            (f.node_ip().to_owned(), (30000 + n) as u16),
            (f.external_ip(n), 80),
            (f.lb_ip(n), 80),
        ];
        let eps: Vec<String> = s
            .endpoints
            .iter()
            .enumerate()
            .map(|(j, e)| f.endpoint(e.node, n, j))
            .collect();
        dsts.extend(eps.iter().map(|e| (e.clone(), 8080)));
        let mut srcs: Vec<String> = f.sources().iter().map(|s| (*s).to_owned()).collect();
        srcs.push(f.lb_ip(n));
        srcs.extend(eps);
        for (d, port) in &dsts {
            for src in &srcs {
                push(src, d, *port);
            }
        }
    }
    out
}

/// Outcome, endpoints, and masquerade where the answer depends on it.
fn key(t: &Trace) -> (Outcome, Vec<String>, Option<bool>) {
    let masq = matches!(t.outcome, Outcome::Dnat | Outcome::Pass).then_some(t.masquerade);
    (t.outcome, t.endpoint_strings(), masq)
}

fn check(svcs: &[Svc]) -> Result<(), String> {
    let (services, slices) = objects(svcs);
    let node = node();
    for f in [&V4, &V6] {
        if !svcs.iter().any(|s| has_family(s, f.v6)) {
            continue;
        }
        check_family(svcs, &services, &slices, &node, f)?;
    }
    Ok(())
}

fn check_family(
    svcs: &[Svc],
    services: &[Service],
    slices: &[EndpointSlice],
    node: &Node,
    f: &Fam,
) -> Result<(), String> {
    let cfg = config(f);
    let host = HostAddresses::of(&cfg);
    let model = ProxyModel::build(services, slices, Some(node), &cfg);
    let settings = IptablesSettings::new(&cfg).map_err(|e| e.to_string())?;
    let (_, ipt) = sync(None, &model, &settings);
    let mut nft = NftProxier::new(NftConfig::from_proxy(&cfg, false).map_err(|e| e.to_string())?);
    let ports: Vec<NftServicePort> = model.ports.iter().map(NftServicePort::from).collect();
    nft.sync_full(&ports).map_err(|e| e.to_string())?;
    let family = if f.v6 { Family::Ip6 } else { Family::Ip };
    let table = nft.state().table(family, TABLE).ok_or("no nftables table")?;
    let ipvs = svcnet_rules::ipvs::build(&model, &cfg, &svcnet_rules::ipvs::IpvsOptions::default())
        .map_err(|e| e.to_string())?;
    let ipvs_tracer = svcnet_rules::trace::ipvs::IpvsTracer::new(&ipvs).map_err(|e| e.to_string())?;
    for p in packets(svcs, f) {
        let a = svcnet_rules::trace::iptables::trace(&ipt, &host, &p).map_err(|e| e.to_string())?;
        let ra = reference(&model, &cfg, &host, Dialect::Iptables, &p).map_err(|e| e.to_string())?;
        if key(&a) != key(&ra) {
            return Err(format!("{p:?}: iptables {:?}, reference {:?}", key(&a), key(&ra)));
        }
        let b = svcnet_rules::trace::nftables::trace(table, &host, &p).map_err(|e| e.to_string())?;
        let rb = reference(&model, &cfg, &host, Dialect::Nftables, &p).map_err(|e| e.to_string())?;
        if key(&b) != key(&rb) {
            return Err(format!("{p:?}: nftables {:?}, reference {:?}", key(&b), key(&rb)));
        }
        let c = ipvs_tracer.trace(&host, &p).map_err(|e| e.to_string())?;
        let rc = reference(&model, &cfg, &host, Dialect::Ipvs, &p).map_err(|e| e.to_string())?;
        if key(&c) != key(&rc) {
            return Err(format!("{p:?}: ipvs {:?}, reference {:?}", key(&c), key(&rc)));
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn iptables_nftables_and_reference_agree(svcs in prop::collection::vec(svc_strategy(), 1..4)) {
        if let Err(e) = check(&svcs) {
            prop_assert!(false, "{}", e);
        }
    }
}

fn one(
    kind: u8,
    etp_local: bool,
    source_ranges: u8,
    endpoints: Vec<(u8, bool, bool, bool, bool)>,
) -> Vec<Svc> {
    vec![Svc {
        kind,
        etp_local,
        itp_local: false,
        udp: false,
        external_ip: false,
        source_ranges,
        family: 0,
        affinity: false,
        endpoints: endpoints
            .into_iter()
            .map(|(node, ready, serving, terminating, _)| Ep {
                node,
                ready,
                serving,
                terminating,
                hint: 0,
            })
            .collect(),
    }]
}

/// Shrunk counterexample: a NodePort without endpoints is rejected by iptables on every local
/// address (127.0.0.1 too), even outside `--nodeport-addresses`.
#[test]
fn regression_iptables_rejects_nodeport_on_any_local_address() {
    check(&one(1, true, 0, vec![])).unwrap();
}

/// Shrunk counterexample: eTP Local without local endpoints: iptables drops NodePort traffic
/// to a local address that serves no NodePort, whatever the source.
#[test]
fn regression_iptables_drops_nodeport_without_local_endpoints_on_any_local_address() {
    check(&one(1, true, 0, vec![(1, true, false, false, false)])).unwrap();
}

/// Shrunk counterexample: nftables drops a source outside loadBalancerSourceRanges before
/// rejecting a LoadBalancer without endpoints; iptables rejects it.
#[test]
fn regression_nftables_firewall_drops_before_reject() {
    check(&one(2, false, 1, vec![])).unwrap();
}

/// Shrunk counterexample (found when IPVS joined the property, kept in both families): with
/// Local policies and no local endpoint, IPVS programs the cluster endpoints (v1.37.2
/// `syncEndpoint`), where iptables and nftables drop.
#[test]
fn regression_ipvs_local_policy_without_local_endpoints_uses_cluster_endpoints() {
    let mut svcs = one(1, true, 0, vec![(1, true, false, false, false)]);
    svcs[0].itp_local = true;
    svcs[0].family = 2;
    check(&svcs).unwrap();
    let (services, slices) = objects(&svcs);
    let cfg = config(&V6);
    let model = ProxyModel::build(&services, &slices, Some(&node()), &cfg);
    let host = HostAddresses::of(&cfg);
    let p = Packet::parse("fd10::2", "[fd00:30::1]:80").unwrap();
    let ipvs = reference(&model, &cfg, &host, Dialect::Ipvs, &p).unwrap();
    assert_eq!(ipvs.endpoint_strings(), ["[fd10:180:1::a]:8080"]);
    let ipt = reference(&model, &cfg, &host, Dialect::Iptables, &p).unwrap();
    assert_eq!(ipt.outcome, Outcome::Drop);
}

/// Dual-stack, zone hints and ClientIP affinity together: the hinted subset is what every
/// backend programs, in each family, and affinity changes no endpoint set.
#[test]
fn regression_dual_stack_hints_and_affinity() {
    let ep = |node, hint| Ep {
        node,
        ready: true,
        serving: true,
        terminating: false,
        hint,
    };
    let svcs = vec![Svc {
        kind: 2,
        etp_local: false,
        itp_local: false,
        udp: true,
        external_ip: true,
        source_ranges: 2,
        family: 3,
        affinity: true,
        endpoints: vec![ep(0, 1), ep(1, 2), ep(2, 1)],
    }];
    check(&svcs).unwrap();
    let (services, slices) = objects(&svcs);
    for f in [&V4, &V6] {
        let cfg = config(f);
        let model = ProxyModel::build(&services, &slices, Some(&node()), &cfg);
        let host = HostAddresses::of(&cfg);
        let p = Packet {
            source: f.sources()[0].parse().unwrap(),
            destination: f.cluster_ip(1).parse().unwrap(),
            port: 80,
            protocol: Protocol::Udp,
        };
        let r = reference(&model, &cfg, &host, Dialect::Nftables, &p).unwrap();
        // zone-a hints: the endpoints on node-a and node-c.
        assert_eq!(r.endpoints.len(), 2, "{f:?}", f = f.v6);
    }
}
