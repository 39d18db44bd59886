//! The proxy side of `explain`: once a Service has EndpointSlices, what the rules of one node
//! do with a packet to each of its frontends — built for the node as `svcnet rules` builds
//! them, and walked by the backend's tracer ([`crate::trace`]).
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use std::net::IpAddr;

use ipnet::IpNet;
use svcnet_model::ObjectSet;

use super::{Code, Finding, finding};
use crate::iptables::{IptablesSettings, sync};
use crate::ipvs::{IpvsOptions, build as ipvs_build};
use crate::nftables::{Family, NftConfig, NftProxier, TABLE};
use crate::proxy::{LocalDetector, ProxyConfig, ProxyModel, ServicePortInfo};
use crate::trace::ipvs::IpvsTracer;
use crate::trace::{HostAddresses, Outcome, Packet, Trace};

/// Which of kube-proxy's modes programs the node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Backend {
    /// iptables mode.
    #[default]
    Iptables,
    /// nftables mode.
    Nftables,
    /// IPVS mode (virtual servers and the companion iptables rules).
    Ipvs,
}

impl Backend {
    /// The mode's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Backend::Iptables => "iptables",
            Backend::Nftables => "nftables",
            Backend::Ipvs => "ipvs",
        }
    }
}

/// One packet to try, with what it stands for.
struct Probe {
    packet: Packet,
    /// "a pod ... to ClusterIP ...".
    what: String,
    /// The source Pod, when one was used.
    pod: Option<String>,
}

/// An address a client outside the cluster could have (documentation ranges).
fn outside(v6: bool) -> IpAddr {
    if v6 {
        IpAddr::V6(std::net::Ipv6Addr::new(0x2001, 0xdb8, 0xffff, 0, 0, 0, 0, 1))
    } else {
        IpAddr::V4(std::net::Ipv4Addr::new(203, 0, 113, 1))
    }
}

/// The first host address of a network.
fn first_host(n: &IpNet) -> IpAddr {
    match n {
        IpNet::V4(n) => IpAddr::V4(std::net::Ipv4Addr::from(u32::from(n.network()).saturating_add(1))),
        IpNet::V6(n) => IpAddr::V6(std::net::Ipv6Addr::from(
            u128::from(n.network()).saturating_add(1),
        )),
    }
}

/// The source of in-cluster traffic: a Pod on the node (its IP of the family; one that is not
/// an endpoint of the port when there is one, so that no hairpin is shown), else the first
/// address of the pod CIDR, else the node itself.
fn pod_source(
    objects: &ObjectSet,
    config: &ProxyConfig,
    sp: &ServicePortInfo,
) -> (IpAddr, String, Option<String>) {
    let v6 = config.node_ip.is_ipv6();
    let mut found: Option<(IpAddr, String)> = None;
    for p in &objects.pods {
        if p.spec().node_name() != config.node_name {
            continue;
        }
        if let Some(ip) = p
            .ips()
            .iter()
            .filter_map(|s| s.parse::<IpAddr>().ok())
            .find(|ip| ip.is_ipv6() == v6)
        {
            let obj = format!("Pod {}/{}", p.metadata.namespace(), p.metadata.name());
            let endpoint = sp.endpoints.iter().any(|e| e.ip == ip);
            if found.is_none() || !endpoint {
                found = Some((ip, obj));
            }
            if !endpoint {
                break;
            }
        }
    }
    if let Some((ip, obj)) = found {
        let text = format!("pod {} ({ip})", obj.trim_start_matches("Pod "));
        return (ip, text, Some(obj));
    }
    match config.detector() {
        LocalDetector::Cidr(c) => {
            let ip = first_host(&c);
            (ip, format!("a pod ({ip}, in the cluster CIDR {c})"), None)
        }
        LocalDetector::NoOp => (
            config.node_ip,
            format!("node {} itself ({})", config.node_name, config.node_ip),
            None,
        ),
    }
}

fn probes(objects: &ObjectSet, config: &ProxyConfig, sp: &ServicePortInfo, index: &str) -> Vec<Probe> {
    let v6 = config.node_ip.is_ipv6();
    let proto = sp.protocol.as_str();
    let (src, src_text, pod) = pod_source(objects, config, sp);
    let out_ip = outside(v6);
    let sock = |ip: IpAddr, port: u16| {
        if ip.is_ipv6() {
            format!("[{ip}]:{port}/{proto}")
        } else {
            format!("{ip}:{port}/{proto}")
        }
    };
    let packet = |source: IpAddr, destination: IpAddr, port: u16| Packet {
        source,
        destination,
        port,
        protocol: sp.protocol,
    };
    let mut v = vec![Probe {
        packet: packet(src, sp.cluster_ip, sp.port),
        what: format!(
            "from {src_text} to the ClusterIP {} (spec.clusterIPs, {index} {:?})",
            sock(sp.cluster_ip, sp.port),
            sp.name.port
        ),
        pod,
    }];
    if sp.node_port != 0 {
        v.push(Probe {
            packet: packet(out_ip, config.node_ip, sp.node_port),
            what: format!(
                "from outside ({out_ip}) to the NodePort {} ({index}.nodePort)",
                sock(config.node_ip, sp.node_port)
            ),
            pod: None,
        });
    }
    for ip in &sp.external_ips {
        v.push(Probe {
            packet: packet(out_ip, *ip, sp.port),
            what: format!(
                "from outside ({out_ip}) to the external IP {} (spec.externalIPs)",
                sock(*ip, sp.port)
            ),
            pod: None,
        });
    }
    for ip in &sp.load_balancer_vips {
        v.push(Probe {
            packet: packet(out_ip, *ip, sp.port),
            what: format!(
                "from outside ({out_ip}) to the load-balancer IP {} (status.loadBalancer.ingress)",
                sock(*ip, sp.port)
            ),
            pod: None,
        });
    }
    v
}

fn outcome_text(t: &Trace) -> String {
    let last = t
        .walk
        .last()
        .map(|s| format!(" by {} {}", s.table, s.chain))
        .unwrap_or_default();
    match t.outcome {
        Outcome::Dnat => format!(
            "is DNATed to one of {}{}",
            t.endpoint_strings().join(", "),
            if t.masquerade {
                " and masqueraded (the endpoint sees the node's address)"
            } else {
                ", source address kept"
            }
        ),
        Outcome::Reject => format!("is rejected{last}"),
        Outcome::Drop => format!("is dropped{last}"),
        Outcome::Accept => format!("is accepted{last}"),
        Outcome::Pass => "is left alone: no rule of the node handles it".to_owned(),
    }
}

/// The rules of the node, ready to trace.
enum Rules {
    Iptables(Box<crate::iptables::IptablesState>),
    Nftables(Box<NftProxier>),
    Ipvs(Box<crate::ipvs::IpvsRuleSet>),
}

fn build(model: &ProxyModel, config: &ProxyConfig, backend: Backend) -> Result<Rules, String> {
    Ok(match backend {
        Backend::Iptables => {
            let settings = IptablesSettings::new(config).map_err(|e| e.to_string())?;
            Rules::Iptables(Box::new(sync(None, model, &settings).1))
        }
        Backend::Nftables => {
            let mut p = NftProxier::new(NftConfig::from_proxy(config, false).map_err(|e| e.to_string())?);
            p.sync_full_from(&model.ports).map_err(|e| e.to_string())?;
            Rules::Nftables(Box::new(p))
        }
        Backend::Ipvs => Rules::Ipvs(Box::new(
            ipvs_build(model, config, &IpvsOptions::default()).map_err(|e| e.to_string())?,
        )),
    })
}

fn run(rules: &Rules, host: &HostAddresses, v6: bool, p: &Packet) -> Result<Trace, String> {
    match rules {
        Rules::Iptables(s) => crate::trace::iptables::trace(s, host, p).map_err(|e| e.to_string()),
        Rules::Nftables(n) => {
            let family = if v6 { Family::Ip6 } else { Family::Ip };
            let table = n
                .state()
                .table(family, TABLE)
                .ok_or_else(|| "the nftables sync left no kube-proxy table".to_owned())?;
            crate::trace::nftables::trace(table, host, p).map_err(|e| e.to_string())
        }
        Rules::Ipvs(r) => IpvsTracer::new(r)
            .and_then(|t| t.trace(host, p))
            .map_err(|e| e.to_string()),
    }
}

/// One [`Code::PacketTrace`] finding per frontend of Service `ns/name` on the node of
/// `config`: a packet from a pod on the node to each ClusterIP:port, and from outside to each
/// NodePort, external IP and load-balancer IP, traced through the rules `backend` programs.
pub(crate) fn trace_findings(
    objects: &ObjectSet,
    ns: &str,
    name: &str,
    config: &ProxyConfig,
    backend: Backend,
    base_objects: &[String],
) -> Vec<Finding> {
    let node_obj = objects
        .nodes
        .iter()
        .rev()
        .find(|n| n.metadata.name() == config.node_name);
    let model = ProxyModel::build(&objects.services, &objects.endpoint_slices, node_obj, config);
    let ports: Vec<(usize, &ServicePortInfo)> = model
        .service_ports(ns, name)
        .map(|sp| {
            let i = objects
                .services
                .iter()
                .find(|s| s.metadata.namespace() == ns && s.metadata.name() == name)
                .and_then(|s| {
                    s.spec()
                        .ports()
                        .iter()
                        .position(|p| p.name() == sp.name.port && p.protocol() == sp.protocol.as_str())
                })
                .unwrap_or(0);
            (i, sp)
        })
        .collect();
    let mut objs: Vec<String> = base_objects.to_vec();
    objs.push(format!("Node {}", config.node_name));
    if ports.is_empty() {
        return vec![finding(
            Code::PacketTrace,
            format!(
                "kube-proxy on node {} ({} mode, {}) programs no port of this Service: it has no ClusterIP of the node's family or no port with a known protocol",
                config.node_name,
                backend.as_str(),
                if config.node_ip.is_ipv6() { "IPv6" } else { "IPv4" }
            ),
            objs,
        )];
    }
    let rules = match build(&model, config, backend) {
        Ok(r) => r,
        Err(e) => {
            return vec![finding(
                Code::PacketTrace,
                format!(
                    "the {} rules of node {} could not be built: {e}",
                    backend.as_str(),
                    config.node_name
                ),
                objs,
            )];
        }
    };
    let host = HostAddresses::of(config);
    let v6 = config.node_ip.is_ipv6();
    let mut out = Vec::new();
    for (i, sp) in ports {
        let index = format!("spec.ports[{i}]");
        for probe in probes(objects, config, sp, &index) {
            let message = match run(&rules, &host, v6, &probe.packet) {
                Ok(t) => format!(
                    "{} on node {}: a packet {} {}",
                    backend.as_str(),
                    config.node_name,
                    probe.what,
                    outcome_text(&t)
                ),
                Err(e) => format!(
                    "{} on node {}: a packet {} could not be traced: {e}",
                    backend.as_str(),
                    config.node_name,
                    probe.what
                ),
            };
            let mut o = objs.clone();
            o.extend(probe.pod);
            out.push(finding(Code::PacketTrace, message, o));
        }
    }
    out
}
