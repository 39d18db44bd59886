//! Cross-backend equivalence: for random small clusters and random packets, the iptables trace,
//! the nftables trace and the reference model (in each backend's dialect) agree on the outcome,
//! the endpoint set and (for DNAT and pass) masquerading. The IPVS tracer (virtual servers
//! only) gives the reference's endpoint set for every packet to a ClusterIP that the reference
//! DNATs.

use std::net::IpAddr;

use proptest::prelude::*;
use serde_json::{Value, json};
use svcnet_model::{EndpointSlice, Service};
use svcnet_rules::iptables::{IptablesSettings, sync};
use svcnet_rules::nftables::{Family, NftConfig, NftProxier, NftServicePort, TABLE};
use svcnet_rules::trace::reference::{Dialect, reference};
use svcnet_rules::trace::{HostAddresses, Outcome, Packet, Trace};
use svcnet_rules::{Protocol, ProxyConfig, ProxyModel};

const NODE: &str = "node-a";
const NODE_IP: &str = "192.168.0.2";

/// One generated Service with its endpoints.
#[derive(Debug, Clone)]
struct Svc {
    kind: u8, // 0 ClusterIP, 1 NodePort, 2 LoadBalancer
    etp_local: bool,
    itp_local: bool,
    udp: bool,
    external_ip: bool,
    source_ranges: u8, // 0 none, 1 allows 203.0.113.0/25, 2 allows the node network
    endpoints: Vec<(u8, bool, bool, bool, bool)>, // (node 0..3, ready?, serving?, terminating?, present-ready)
}

fn svc_strategy() -> impl Strategy<Value = Svc> {
    (
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.2),
        prop::bool::weighted(0.3),
        0u8..3,
        prop::collection::vec(
            (0u8..3, any::<bool>(), any::<bool>(), any::<bool>(), any::<bool>()),
            0..4,
        ),
    )
        .prop_map(
            |(kind, etp_local, itp_local, udp, external_ip, source_ranges, endpoints)| Svc {
                kind,
                etp_local,
                itp_local,
                udp,
                external_ip,
                source_ranges,
                endpoints,
            },
        )
}

fn objects(svcs: &[Svc]) -> (Vec<Service>, Vec<EndpointSlice>) {
    let mut services = Vec::new();
    let mut slices = Vec::new();
    for (i, s) in svcs.iter().enumerate() {
        let n = i + 1;
        let proto = if s.udp { "UDP" } else { "TCP" };
        let mut spec = json!({
            "clusterIP": format!("172.30.0.{n}"),
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
        if s.external_ip {
            spec["externalIPs"] = json!([format!("192.0.2.{n}")]);
        }
        let mut svc = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("svc{n}"), "namespace": "ns"}, "spec": spec});
        if s.kind == 2 {
            svc["status"] = json!({"loadBalancer": {"ingress": [{"ip": format!("1.1.1.{n}")}]}});
            match s.source_ranges {
                1 => svc["spec"]["loadBalancerSourceRanges"] = json!(["203.0.113.0/25"]),
                2 => svc["spec"]["loadBalancerSourceRanges"] = json!(["192.168.0.0/24"]),
                _ => {}
            }
        }
        let eps: Vec<Value> = s
            .endpoints
            .iter()
            .enumerate()
            .map(|(j, &(node, ready, serving, terminating, _))| {
                json!({"addresses": [format!("10.180.{node}.{}", n * 10 + j)],
                       "nodeName": format!("node-{}", ["a", "b", "c"][usize::from(node)]),
                       "conditions": {"ready": ready, "serving": serving || ready, "terminating": terminating && !ready}})
            })
            .collect();
        slices.push(
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": format!("svc{n}-1"), "namespace": "ns",
                         "labels": {"kubernetes.io/service-name": format!("svc{n}")}},
            "addressType": "IPv4", "endpoints": eps,
            "ports": [{"name": "p", "port": 8080, "protocol": proto}]}),
        );
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

fn config() -> ProxyConfig {
    let mut c = ProxyConfig::new(NODE, NODE_IP.parse().expect("ip"));
    c.cluster_cidrs = vec!["10.0.0.0/8".parse().expect("cidr")];
    c.nodeport_addresses = Some(vec!["primary".to_owned()]);
    c
}

fn packets(svcs: &[Svc]) -> Vec<Packet> {
    let mut dsts: Vec<(String, u16)> = vec![(NODE_IP.to_owned(), 9999)];
    for (i, s) in svcs.iter().enumerate() {
        let n = i + 1;
        dsts.push((format!("172.30.0.{n}"), 80));
        dsts.push((format!("172.30.0.{n}"), 81));
        dsts.push((NODE_IP.to_owned(), (3000 + n) as u16));
        dsts.push(("127.0.0.1".to_owned(), (3000 + n) as u16));
        dsts.push((NODE_IP.to_owned(), (30000 + n) as u16));
        dsts.push((format!("192.0.2.{n}"), 80));
        dsts.push((format!("1.1.1.{n}"), 80));
        for (j, e) in s.endpoints.iter().enumerate() {
            let _ = e;
            dsts.push((format!("10.180.{}.{}", e.0, n * 10 + j), 8080));
        }
    }
    let mut srcs: Vec<String> = ["10.0.0.2", NODE_IP, "203.0.113.2", "203.0.113.130"]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
    for (i, s) in svcs.iter().enumerate() {
        srcs.push(format!("1.1.1.{}", i + 1));
        for (j, e) in s.endpoints.iter().enumerate() {
            srcs.push(format!("10.180.{}.{}", e.0, (i + 1) * 10 + j));
        }
    }
    let mut out = Vec::new();
    for (d, port) in &dsts {
        for s in &srcs {
            for protocol in [Protocol::Tcp, Protocol::Udp] {
                out.push(Packet {
                    source: s.parse::<IpAddr>().expect("src"),
                    destination: d.parse::<IpAddr>().expect("dst"),
                    port: *port,
                    protocol,
                });
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
    let cfg = config();
    let host = HostAddresses::of(&cfg);
    let (services, slices) = objects(svcs);
    let model = ProxyModel::build(&services, &slices, None, &cfg);
    let settings = IptablesSettings::new(&cfg).map_err(|e| e.to_string())?;
    let (_, ipt) = sync(None, &model, &settings);
    let mut nft = NftProxier::new(NftConfig::from_proxy(&cfg, false).map_err(|e| e.to_string())?);
    let ports: Vec<NftServicePort> = model.ports.iter().map(NftServicePort::from).collect();
    nft.sync_full(&ports).map_err(|e| e.to_string())?;
    let table = nft.state().table(Family::Ip, TABLE).ok_or("no nftables table")?;
    let ipvs = svcnet_rules::ipvs::build(&model, &cfg, &svcnet_rules::ipvs::IpvsOptions::default())
        .map_err(|e| e.to_string())?;
    let ipvs_tracer = svcnet_rules::trace::ipvs::IpvsTracer::new(&ipvs).map_err(|e| e.to_string())?;
    for p in packets(svcs) {
        let a = svcnet_rules::trace::iptables::trace(&ipt, &host, &p).map_err(|e| e.to_string())?;
        let b = svcnet_rules::trace::nftables::trace(table, &host, &p).map_err(|e| e.to_string())?;
        let ra = reference(&model, &cfg, &host, Dialect::Iptables, &p).map_err(|e| e.to_string())?;
        let rb = reference(&model, &cfg, &host, Dialect::Nftables, &p).map_err(|e| e.to_string())?;
        if key(&a) != key(&ra) {
            return Err(format!("{p:?}: iptables {:?}, reference {:?}", key(&a), key(&ra)));
        }
        if key(&b) != key(&rb) {
            return Err(format!("{p:?}: nftables {:?}, reference {:?}", key(&b), key(&rb)));
        }
        let c = ipvs_tracer.trace(&host, &p).map_err(|e| e.to_string())?;
        let rc = reference(&model, &cfg, &host, Dialect::Ipvs, &p).map_err(|e| e.to_string())?;
        if key(&c) != key(&rc) {
            return Err(format!(
                "{p:?}: ipvs {:?}, reference {:?}\nwalk {:#?}",
                key(&c),
                key(&rc),
                c.walk
            ));
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
        endpoints,
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
