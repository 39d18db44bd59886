//! What the nftables backend reads: the node's settings and, per service port, the
//! proxy's view of it (addresses, policies, affinity, categorized endpoints).
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/nftables/proxier.go` (`servicePortInfo`) and
//! `pkg/proxy/serviceport.go`.

use super::object::Family;
use crate::RulesError;
pub use crate::proxy::Protocol;
use crate::proxy::{Endpoint, ProxyConfig, ServicePortInfo};
use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// The node-wide settings of kube-proxy's nftables proxier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NftConfig {
    /// `ip` (IPv4 proxier) or `ip6` (IPv6 proxier).
    pub family: Family,
    /// The node IP of this family (the firewall's allow-from-node check).
    pub node_ip: IpAddr,
    /// The masquerade mark text (`0x4000`, or `0x00004000` from the bit).
    pub masquerade_mark: String,
    /// `--masquerade-all`.
    pub masquerade_all: bool,
    /// Local-traffic detection, `None` for the no-op detector.
    pub local_detector: Option<LocalDetector>,
    /// The node IPs that accept NodePort traffic, or `None` when the NodePort address
    /// filter matches all addresses (`0.0.0.0/0`).
    pub nodeport_ips: Option<Vec<IpAddr>>,
    /// The Service CIDRs of this family, as given (drop of unallocated ClusterIPs).
    pub service_cidrs: Vec<String>,
    /// The `KubeProxyNFTablesLocalhostNodePorts` gate (alpha, off by default).
    pub localhost_nodeports: bool,
    /// With the gate: whether loopback is listed explicitly in the NodePort addresses
    /// (the userspace proxy then serves TCP, and only UDP and SCTP are rejected).
    pub localhost_nodeport_proxy: bool,
    /// The largest number of operations one emitted transaction chunk may hold
    /// (see [`Transaction::chunks`](super::Transaction::chunks)). Default 1,000.
    pub max_operations_per_chunk: usize,
}

impl NftConfig {
    /// The nftables proxier's settings from the node's proxy settings: NodePort addresses
    /// default to `primary` (kube-proxy's nftables default), resolved against the host's
    /// addresses; the localhost-NodePorts gate stays off (alpha in 1.37) unless
    /// `localhost_nodeports_gate` is set.
    pub fn from_proxy(config: &ProxyConfig, localhost_nodeports_gate: bool) -> Result<Self, RulesError> {
        let npa = config.nodeport_addresses_for(true)?;
        let family = if config.node_ip.is_ipv4() {
            Family::Ip
        } else {
            Family::Ip6
        };
        let local_detector = match config.detector() {
            crate::proxy::LocalDetector::Cidr(c) => Some(LocalDetector::ClusterCidr(c)),
            _ => None,
        };
        let v4 = family == Family::Ip;
        Ok(NftConfig {
            family,
            node_ip: config.node_ip,
            masquerade_mark: config.masquerade_mark.clone(),
            masquerade_all: config.masquerade_all,
            local_detector,
            nodeport_ips: (!npa.match_all).then(|| npa.node_ips(&config.host_addresses)),
            service_cidrs: config
                .service_cidrs
                .iter()
                .filter(|c| matches!(c, IpNet::V4(_)) == v4)
                .map(ToString::to_string)
                .collect(),
            localhost_nodeports: localhost_nodeports_gate,
            localhost_nodeport_proxy: localhost_nodeports_gate && explicit_loopback(config, v4),
            max_operations_per_chunk: 1000,
        })
    }

    /// Defaults for a node: kube-proxy's default mark (`0x00004000`), no detector,
    /// NodePorts on `node_ip` only (`primary`), no Service CIDRs, gate off.
    pub fn new(node_ip: IpAddr) -> Self {
        NftConfig {
            family: if node_ip.is_ipv4() {
                Family::Ip
            } else {
                Family::Ip6
            },
            node_ip,
            masquerade_mark: "0x00004000".into(),
            masquerade_all: false,
            local_detector: None,
            nodeport_ips: Some(vec![node_ip]),
            service_cidrs: Vec::new(),
            localhost_nodeports: false,
            localhost_nodeport_proxy: false,
            max_operations_per_chunk: 1000,
        }
    }
}

/// How traffic from local pods is recognised (`IfLocalNFT` / `IfNotLocalNFT`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LocalDetector {
    /// By the pod CIDR of this family: `ip saddr CIDR`.
    ClusterCidr(IpNet),
    /// By a bridge interface: `iifname NAME`.
    Bridge(String),
    /// By an interface name prefix: `iifname PREFIX*`.
    InterfacePrefix(String),
}

impl LocalDetector {
    /// The match for traffic from a local pod.
    pub fn if_local(&self) -> String {
        match self {
            LocalDetector::ClusterCidr(c) => format!("{} saddr {c}", ip_word(c)),
            LocalDetector::Bridge(b) => format!("iifname {b}"),
            LocalDetector::InterfacePrefix(p) => format!("iifname {p}*"),
        }
    }

    /// The match for traffic not from a local pod.
    pub fn if_not_local(&self) -> String {
        match self {
            LocalDetector::ClusterCidr(c) => format!("{} saddr != {c}", ip_word(c)),
            LocalDetector::Bridge(b) => format!("iifname != {b}"),
            LocalDetector::InterfacePrefix(p) => format!("iifname != {p}*"),
        }
    }
}

/// `NodePortAddresses.ContainsExplicitLoopback`: a NodePort address entry of the family
/// whose network is loopback (`localhost`, `127.0.0.0/8`, `::1/128`), not a catch-all
/// that merely contains it.
fn explicit_loopback(config: &ProxyConfig, v4: bool) -> bool {
    let entries: &[String] = config.nodeport_addresses.as_deref().unwrap_or(&[]);
    entries.iter().any(|e| match e.trim() {
        "localhost" => true,
        "primary" | "all" => false,
        text => svcnet_model::validation::names::parse_cidr_sloppy(text)
            .and_then(|(ip, prefix)| IpNet::new(ip, prefix).ok())
            .is_some_and(|n| n.addr().is_ipv4() == v4 && n.trunc().addr().is_loopback()),
    })
}

fn ip_word(c: &IpNet) -> &'static str {
    if matches!(c, IpNet::V4(_)) { "ip" } else { "ip6" }
}

/// An endpoint as the rules use it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NftEndpoint {
    /// Address (canonical).
    pub ip: IpAddr,
    /// Port.
    pub port: u16,
    /// Whether it runs on this node.
    pub is_local: bool,
}

/// One service port as the nftables proxier sees it. Endpoint lists are in endpoint
/// order (sorted by `ip:port` text), as `CategorizeEndpoints` returns them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NftServicePort {
    /// Namespace of the Service.
    pub namespace: String,
    /// Name of the Service.
    pub name: String,
    /// Port name (may be empty).
    pub port_name: String,
    /// Protocol.
    pub protocol: Protocol,
    /// The ClusterIP of the proxier's family.
    pub cluster_ip: IpAddr,
    /// The Service port.
    pub port: u16,
    /// The NodePort, 0 for none.
    pub node_port: u16,
    /// External IPs of this family (empty with `AllowServiceExternalIPs` off).
    pub external_ips: Vec<IpAddr>,
    /// LoadBalancer ingress IPs of this family in VIP mode.
    pub load_balancer_vips: Vec<IpAddr>,
    /// `loadBalancerSourceRanges` of this family, canonical, empty when one is zero-masked.
    pub source_ranges: Vec<IpNet>,
    /// ClientIP affinity timeout in seconds, `None` without affinity.
    pub affinity_timeout: Option<u32>,
    /// iTP=Local.
    pub internal_policy_local: bool,
    /// eTP=Local (and externally accessible).
    pub external_policy_local: bool,
    /// Has a NodePort, external IPs or LB VIPs.
    pub externally_accessible: bool,
    /// `UsesClusterEndpoints()`.
    pub uses_cluster_endpoints: bool,
    /// `UsesLocalEndpoints()`.
    pub uses_local_endpoints: bool,
    /// Cluster endpoints.
    pub cluster_endpoints: Vec<NftEndpoint>,
    /// Local endpoints.
    pub local_endpoints: Vec<NftEndpoint>,
    /// Every endpoint reachable from this node through the rules.
    pub all_locally_reachable: Vec<NftEndpoint>,
    /// Whether there is any usable endpoint.
    pub has_endpoints: bool,
}

impl From<&Endpoint> for NftEndpoint {
    fn from(e: &Endpoint) -> Self {
        NftEndpoint {
            ip: e.ip,
            port: e.port,
            is_local: e.is_local,
        }
    }
}

/// An endpoint as the nftables rules read it: its address, port and whether it runs on
/// this node. Implemented by [`NftEndpoint`] and by the proxy model's [`Endpoint`], so that
/// the proxier reads either without a copy.
pub trait NftEndpointView {
    /// Address (canonical).
    fn ip(&self) -> IpAddr;
    /// Port.
    fn port(&self) -> u16;
    /// Whether it runs on this node.
    fn is_local(&self) -> bool;
}

impl NftEndpointView for NftEndpoint {
    #[inline]
    fn ip(&self) -> IpAddr {
        self.ip
    }
    #[inline]
    fn port(&self) -> u16 {
        self.port
    }
    #[inline]
    fn is_local(&self) -> bool {
        self.is_local
    }
}

impl NftEndpointView for Endpoint {
    #[inline]
    fn ip(&self) -> IpAddr {
        self.ip
    }
    #[inline]
    fn port(&self) -> u16 {
        self.port
    }
    #[inline]
    fn is_local(&self) -> bool {
        self.is_local
    }
}

/// One service port as the nftables proxier reads it (the fields of [`NftServicePort`],
/// borrowed). Implemented by [`NftServicePort`] and by the proxy model's
/// [`ServicePortInfo`]: [`NftProxier::sync_full_from`](super::NftProxier::sync_full_from)
/// and [`NftProxier::sync_from`](super::NftProxier::sync_from) take a model's ports as they
/// are, with no conversion.
pub trait NftPort {
    /// The endpoints' type.
    type Endpoint: NftEndpointView;
    /// Namespace of the Service.
    fn namespace(&self) -> &str;
    /// Name of the Service.
    fn name(&self) -> &str;
    /// Port name (may be empty).
    fn port_name(&self) -> &str;
    /// Protocol.
    fn protocol(&self) -> Protocol;
    /// The ClusterIP of the proxier's family.
    fn cluster_ip(&self) -> IpAddr;
    /// The Service port.
    fn port(&self) -> u16;
    /// The NodePort, 0 for none.
    fn node_port(&self) -> u16;
    /// External IPs of this family.
    fn external_ips(&self) -> &[IpAddr];
    /// LoadBalancer ingress IPs of this family in VIP mode.
    fn load_balancer_vips(&self) -> &[IpAddr];
    /// `loadBalancerSourceRanges` of this family, empty when one is zero-masked.
    fn source_ranges(&self) -> &[IpNet];
    /// ClientIP affinity timeout in seconds, `None` without affinity.
    fn affinity_timeout(&self) -> Option<u32>;
    /// iTP=Local.
    fn internal_policy_local(&self) -> bool;
    /// eTP=Local (and externally accessible).
    fn external_policy_local(&self) -> bool;
    /// Has a NodePort, external IPs or LB VIPs.
    fn externally_accessible(&self) -> bool;
    /// `UsesClusterEndpoints()`.
    fn uses_cluster_endpoints(&self) -> bool;
    /// `UsesLocalEndpoints()`.
    fn uses_local_endpoints(&self) -> bool;
    /// Cluster endpoints, in endpoint order.
    fn cluster_endpoints(&self) -> &[Self::Endpoint];
    /// Local endpoints, in endpoint order.
    fn local_endpoints(&self) -> &[Self::Endpoint];
    /// Every endpoint reachable from this node through the rules, in endpoint order.
    fn all_locally_reachable(&self) -> &[Self::Endpoint];
    /// Whether there is any usable endpoint.
    fn has_endpoints(&self) -> bool;

    /// `namespace/name:port` (or `namespace/name`), kube-proxy's ServicePortName text.
    fn name_string(&self) -> String {
        if self.port_name().is_empty() {
            format!("{}/{}", self.namespace(), self.name())
        } else {
            format!("{}/{}:{}", self.namespace(), self.name(), self.port_name())
        }
    }

    /// The port as an owned [`NftServicePort`].
    fn to_nft_port(&self) -> NftServicePort {
        let eps = |v: &[Self::Endpoint]| {
            v.iter()
                .map(|e| NftEndpoint {
                    ip: e.ip(),
                    port: e.port(),
                    is_local: e.is_local(),
                })
                .collect::<Vec<_>>()
        };
        NftServicePort {
            namespace: self.namespace().to_owned(),
            name: self.name().to_owned(),
            port_name: self.port_name().to_owned(),
            protocol: self.protocol(),
            cluster_ip: self.cluster_ip(),
            port: self.port(),
            node_port: self.node_port(),
            external_ips: self.external_ips().to_vec(),
            load_balancer_vips: self.load_balancer_vips().to_vec(),
            source_ranges: self.source_ranges().to_vec(),
            affinity_timeout: self.affinity_timeout(),
            internal_policy_local: self.internal_policy_local(),
            external_policy_local: self.external_policy_local(),
            externally_accessible: self.externally_accessible(),
            uses_cluster_endpoints: self.uses_cluster_endpoints(),
            uses_local_endpoints: self.uses_local_endpoints(),
            cluster_endpoints: eps(self.cluster_endpoints()),
            local_endpoints: eps(self.local_endpoints()),
            all_locally_reachable: eps(self.all_locally_reachable()),
            has_endpoints: self.has_endpoints(),
        }
    }
}

impl NftPort for NftServicePort {
    type Endpoint = NftEndpoint;
    #[inline]
    fn namespace(&self) -> &str {
        &self.namespace
    }
    #[inline]
    fn name(&self) -> &str {
        &self.name
    }
    #[inline]
    fn port_name(&self) -> &str {
        &self.port_name
    }
    #[inline]
    fn protocol(&self) -> Protocol {
        self.protocol
    }
    #[inline]
    fn cluster_ip(&self) -> IpAddr {
        self.cluster_ip
    }
    #[inline]
    fn port(&self) -> u16 {
        self.port
    }
    #[inline]
    fn node_port(&self) -> u16 {
        self.node_port
    }
    #[inline]
    fn external_ips(&self) -> &[IpAddr] {
        &self.external_ips
    }
    #[inline]
    fn load_balancer_vips(&self) -> &[IpAddr] {
        &self.load_balancer_vips
    }
    #[inline]
    fn source_ranges(&self) -> &[IpNet] {
        &self.source_ranges
    }
    #[inline]
    fn affinity_timeout(&self) -> Option<u32> {
        self.affinity_timeout
    }
    #[inline]
    fn internal_policy_local(&self) -> bool {
        self.internal_policy_local
    }
    #[inline]
    fn external_policy_local(&self) -> bool {
        self.external_policy_local
    }
    #[inline]
    fn externally_accessible(&self) -> bool {
        self.externally_accessible
    }
    #[inline]
    fn uses_cluster_endpoints(&self) -> bool {
        self.uses_cluster_endpoints
    }
    #[inline]
    fn uses_local_endpoints(&self) -> bool {
        self.uses_local_endpoints
    }
    #[inline]
    fn cluster_endpoints(&self) -> &[NftEndpoint] {
        &self.cluster_endpoints
    }
    #[inline]
    fn local_endpoints(&self) -> &[NftEndpoint] {
        &self.local_endpoints
    }
    #[inline]
    fn all_locally_reachable(&self) -> &[NftEndpoint] {
        &self.all_locally_reachable
    }
    #[inline]
    fn has_endpoints(&self) -> bool {
        self.has_endpoints
    }
    fn to_nft_port(&self) -> NftServicePort {
        self.clone()
    }
}

impl NftPort for ServicePortInfo {
    type Endpoint = Endpoint;
    #[inline]
    fn namespace(&self) -> &str {
        &self.name.namespace
    }
    #[inline]
    fn name(&self) -> &str {
        &self.name.name
    }
    #[inline]
    fn port_name(&self) -> &str {
        &self.name.port
    }
    #[inline]
    fn protocol(&self) -> Protocol {
        self.protocol
    }
    #[inline]
    fn cluster_ip(&self) -> IpAddr {
        self.cluster_ip
    }
    #[inline]
    fn port(&self) -> u16 {
        self.port
    }
    #[inline]
    fn node_port(&self) -> u16 {
        self.node_port
    }
    #[inline]
    fn external_ips(&self) -> &[IpAddr] {
        &self.external_ips
    }
    #[inline]
    fn load_balancer_vips(&self) -> &[IpAddr] {
        &self.load_balancer_vips
    }
    #[inline]
    fn source_ranges(&self) -> &[IpNet] {
        &self.load_balancer_source_ranges
    }
    #[inline]
    fn affinity_timeout(&self) -> Option<u32> {
        self.session_affinity_timeout
    }
    #[inline]
    fn internal_policy_local(&self) -> bool {
        self.internal_policy_local
    }
    #[inline]
    fn external_policy_local(&self) -> bool {
        self.external_policy_local
    }
    #[inline]
    fn externally_accessible(&self) -> bool {
        ServicePortInfo::externally_accessible(self)
    }
    #[inline]
    fn uses_cluster_endpoints(&self) -> bool {
        ServicePortInfo::uses_cluster_endpoints(self)
    }
    #[inline]
    fn uses_local_endpoints(&self) -> bool {
        ServicePortInfo::uses_local_endpoints(self)
    }
    #[inline]
    fn cluster_endpoints(&self) -> &[Endpoint] {
        self.cluster_endpoints.as_slice()
    }
    #[inline]
    fn local_endpoints(&self) -> &[Endpoint] {
        self.local_endpoints.as_slice()
    }
    #[inline]
    fn all_locally_reachable(&self) -> &[Endpoint] {
        self.all_locally_reachable.as_slice()
    }
    #[inline]
    fn has_endpoints(&self) -> bool {
        self.has_endpoints
    }
}

impl From<&ServicePortInfo> for NftServicePort {
    fn from(p: &ServicePortInfo) -> Self {
        p.to_nft_port()
    }
}

impl NftServicePort {
    /// `namespace/name:port` (or `namespace/name`), kube-proxy's ServicePortName text.
    pub fn name_string(&self) -> String {
        NftPort::name_string(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nftables::NftProxier;
    use crate::proxy::ProxyModel;
    use std::collections::BTreeSet;

    /// A model's ports synced as they are (`sync_full_from`, `sync_from`) write what their
    /// conversions to `NftServicePort` write (`sync_full`, `sync`): the same transactions
    /// and rule set, through full and partial syncs, on generated clusters on every node.
    #[test]
    fn model_ports_sync_as_their_conversions() {
        let mut compared = 0;
        for seed in 1..=40 {
            let case = svcnet_testgen::generate(seed);
            let states: Vec<_> = case
                .states
                .iter()
                .map(|s| svcnet_test_support::objects::object_set(s).expect("a v1 List"))
                .collect();
            let mut names: Vec<&str> = states[0].nodes.iter().map(|n| n.metadata.name()).collect();
            names.push("elsewhere");
            for name in names {
                for ip in ["192.168.0.2", "fd00::2"] {
                    let mut config = ProxyConfig::new(name, ip.parse().unwrap());
                    config.cluster_cidrs = vec![
                        if ip.contains(':') {
                            "fd00:10::/64"
                        } else {
                            "10.0.0.0/8"
                        }
                        .parse()
                        .unwrap(),
                    ];
                    let nft = NftConfig::from_proxy(&config, seed % 2 == 0).unwrap();
                    let (mut direct, mut converted) = (NftProxier::new(nft.clone()), NftProxier::new(nft));
                    for (k, set) in states.iter().enumerate() {
                        let node = set.nodes.iter().find(|n| n.metadata.name() == name);
                        let model = ProxyModel::build(&set.services, &set.endpoint_slices, node, &config);
                        let ports: Vec<NftServicePort> =
                            model.ports.iter().map(NftServicePort::from).collect();
                        for (p, c) in model.ports.iter().zip(&ports) {
                            assert_eq!(&p.to_nft_port(), c);
                            assert_eq!(NftPort::name_string(p), c.name_string());
                            assert_eq!(c.name_string(), p.name_string.as_str());
                        }
                        // every other sync partial, naming every Service of the model and one
                        // that is gone
                        let changed: Option<BTreeSet<String>> = (k % 2 == 1).then(|| {
                            let mut c: BTreeSet<String> = ports
                                .iter()
                                .map(|p| format!("{}/{}", p.namespace, p.name))
                                .collect();
                            c.insert("gone/service".into());
                            c
                        });
                        let want = converted.sync(&ports, changed.as_ref());
                        let got = direct.sync_from(&model.ports, changed.as_ref());
                        let what = format!("seed {seed} state {k} node {name} {ip}");
                        match (got, want) {
                            (Ok(g), Ok(w)) => {
                                assert_eq!(g.main.render(), w.main.render(), "{what}");
                                assert_eq!(g, w, "{what}");
                            }
                            (g, w) => assert_eq!(g.err(), w.err(), "{what}"),
                        }
                        assert_eq!(direct.state().dump(), converted.state().dump(), "{what}");
                        compared += model.ports.len();
                    }
                }
            }
        }
        assert!(compared > 1000, "{compared}");
    }
}
