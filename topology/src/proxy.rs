//! The proxy's view of endpoints: EndpointSlices turned into one deduplicated, sorted endpoint
//! list per service port (kube-proxy's `EndpointSliceCache`), and each service port's traffic
//! policies.

use std::collections::BTreeMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};

use serde::{Serialize, Serializer};
use svcnet_model::{EndpointSlice, Node, Service, ServicePort};

use crate::capacity::node_zone_label;

/// An IP family: which addresses a proxier handles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum IpFamily {
    /// IPv4.
    #[serde(rename = "IPv4")]
    V4,
    /// IPv6.
    #[serde(rename = "IPv6")]
    V6,
}

impl IpFamily {
    /// `IPv4` or `IPv6`: the Service `ipFamilies` value and the slice `addressType`.
    pub fn as_str(self) -> &'static str {
        match self {
            IpFamily::V4 => "IPv4",
            IpFamily::V6 => "IPv6",
        }
    }

    /// The family of an address.
    pub fn of(ip: IpAddr) -> Self {
        if ip.is_ipv4() { IpFamily::V4 } else { IpFamily::V6 }
    }

    fn parse(s: &str) -> Option<Self> {
        match s {
            "IPv4" => Some(IpFamily::V4),
            "IPv6" => Some(IpFamily::V6),
            _ => None,
        }
    }
}

/// A service port as the proxy names it: namespace, Service, port name and protocol.
/// Displayed as kube-proxy prints it: `ns/name:port`, or `ns/name` for an unnamed port.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServicePortName {
    /// The namespace.
    pub namespace: String,
    /// The Service's name.
    pub name: String,
    /// The port's name (empty for a single unnamed port).
    pub port: String,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: String,
}

impl fmt::Display for ServicePortName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)?;
        if !self.port.is_empty() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

impl Serialize for ServicePortName {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One endpoint as the proxy on a node sees it (kube-proxy's `BaseEndpointInfo`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProxyEndpoint {
    /// The first address of the slice endpoint.
    pub ip: IpAddr,
    /// The slice's port number.
    pub port: u16,
    /// The node hosting it, when known.
    pub node_name: Option<String>,
    /// Its zone, when known.
    pub zone: Option<String>,
    /// Whether it runs on this proxy's node.
    pub is_local: bool,
    /// Ready (unknown reads as ready).
    pub ready: bool,
    /// Serving (unknown reads as true, as kube-proxy reads it).
    pub serving: bool,
    /// Terminating (unknown reads as not terminating).
    pub terminating: bool,
    /// Zones named by `hints.forZones`, sorted, without duplicates.
    pub zone_hints: Vec<String>,
    /// Nodes named by `hints.forNodes` (read only with PreferSameTrafficDistribution).
    pub node_hints: Vec<String>,
}

impl ProxyEndpoint {
    /// `IP:port` (`[IPv6]:port`): the proxy's identity of the endpoint.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.ip, self.port)
    }
}

impl fmt::Display for ProxyEndpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.addr())
    }
}

/// Switches of the proxy side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectOptions {
    /// The PreferSameTrafficDistribution feature: read node hints and prefer same-node
    /// endpoints. On by default.
    pub node_hints: bool,
}

impl Default for SelectOptions {
    fn default() -> Self {
        SelectOptions { node_hints: true }
    }
}

/// The node a proxy runs on: its name (for `isLocal`) and its zone label (for zone hints).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct NodeTopology {
    /// The node's name.
    pub name: String,
    /// The `topology.kubernetes.io/zone` label; empty when absent.
    pub zone: String,
}

impl NodeTopology {
    /// A node with a name and a zone (`""` for none).
    pub fn new(name: impl Into<String>, zone: impl Into<String>) -> Self {
        NodeTopology {
            name: name.into(),
            zone: zone.into(),
        }
    }

    /// The node as the proxy reads its own Node object.
    pub fn from_node(node: &Node) -> Self {
        NodeTopology {
            name: node.metadata.name().to_owned(),
            zone: node_zone_label(node),
        }
    }
}

/// A slice endpoint the proxy does not use, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Ignored {
    /// `namespace/name` of the slice.
    pub slice: String,
    /// The address, or the port, concerned.
    pub what: String,
    /// Why.
    pub why: &'static str,
}

/// Every service port's endpoints for one node and one IP family.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EndpointTable {
    ports: BTreeMap<ServicePortName, Vec<ProxyEndpoint>>,
    /// Slices, ports and endpoints left out, with the reason.
    pub ignored: Vec<Ignored>,
}

impl EndpointTable {
    /// Builds the table as kube-proxy's `EndpointSliceCache` does for the proxier of `family`
    /// on node `node_name`: slices need a `kubernetes.io/service-name` label, a namespace and a
    /// name and the family's address type; ports need a name and a non-zero number; endpoints
    /// need an address of the family. Endpoints are keyed by `IP:port` (a duplicate local copy
    /// wins over a remote one) and sorted by that text. Slices are read in name order.
    pub fn build(
        slices: &[EndpointSlice],
        node_name: &str,
        family: IpFamily,
        options: &SelectOptions,
    ) -> Self {
        let mut table = EndpointTable::default();
        let mut ordered: Vec<&EndpointSlice> = slices.iter().collect();
        ordered.sort_by(|a, b| {
            (a.metadata.namespace(), a.metadata.name()).cmp(&(b.metadata.namespace(), b.metadata.name()))
        });
        let mut by_port: BTreeMap<ServicePortName, BTreeMap<String, ProxyEndpoint>> = BTreeMap::new();
        for s in ordered {
            if s.address_type != family.as_str() {
                continue;
            }
            let id = format!("{}/{}", s.metadata.namespace(), s.metadata.name());
            let Some(service) = s.service_name().filter(|n| !n.is_empty()) else {
                table.ignore(&id, "", "no kubernetes.io/service-name label");
                continue;
            };
            if s.metadata.namespace().is_empty() || s.metadata.name().is_empty() {
                table.ignore(&id, "", "no name or namespace");
                continue;
            }
            for p in s.ports() {
                let Some(port_name) = p.name.as_ref() else {
                    table.ignore(&id, &format!("port {:?}", p.port), "port without a name");
                    continue;
                };
                let number = match p.port.map(u16::try_from) {
                    Some(Ok(n)) if n != 0 => n,
                    _ => {
                        table.ignore(&id, &format!("port {port_name:?}"), "port without a valid number");
                        continue;
                    }
                };
                let spn = ServicePortName {
                    namespace: s.metadata.namespace().to_owned(),
                    name: service.to_owned(),
                    port: port_name.clone(),
                    protocol: p.protocol.clone().unwrap_or_else(|| "TCP".to_owned()),
                };
                let set = by_port.entry(spn).or_default();
                for ep in s.endpoints() {
                    let Some(first) = ep.addresses.first() else {
                        table.ignore(&id, "", "endpoint without addresses");
                        continue;
                    };
                    let Ok(ip) = first.parse::<IpAddr>() else {
                        table.ignore(&id, first, "address is not an IP");
                        continue;
                    };
                    if IpFamily::of(ip) != family {
                        table.ignore(&id, first, "address of the other IP family");
                        continue;
                    }
                    let is_local = !node_name.is_empty() && ep.node_name.as_deref() == Some(node_name);
                    let hints = ep.hints.as_ref();
                    let mut zone_hints: Vec<String> = hints
                        .and_then(|h| h.for_zones.as_ref())
                        .into_iter()
                        .flatten()
                        .map(|z| z.name.clone())
                        .collect();
                    zone_hints.sort();
                    zone_hints.dedup();
                    let mut node_hints: Vec<String> = if options.node_hints {
                        hints
                            .and_then(|h| h.for_nodes.as_ref())
                            .into_iter()
                            .flatten()
                            .map(|n| n.name.clone())
                            .collect()
                    } else {
                        Vec::new()
                    };
                    node_hints.sort();
                    node_hints.dedup();
                    let pe = ProxyEndpoint {
                        ip,
                        port: number,
                        node_name: ep.node_name.clone(),
                        zone: ep.zone.clone(),
                        is_local,
                        ready: ep.conditions.ready.unwrap_or(true),
                        serving: ep.conditions.serving.unwrap_or(true),
                        terminating: ep.conditions.terminating.unwrap_or(false),
                        zone_hints,
                        node_hints,
                    };
                    let key = pe.to_string();
                    if is_local || !set.contains_key(&key) {
                        set.insert(key, pe);
                    }
                }
            }
        }
        for (spn, set) in by_port {
            if !set.is_empty() {
                table.ports.insert(spn, set.into_values().collect());
            }
        }
        table
    }

    fn ignore(&mut self, slice: &str, what: &str, why: &'static str) {
        self.ignored.push(Ignored {
            slice: slice.to_owned(),
            what: what.to_owned(),
            why,
        });
    }

    /// The endpoints of a service port, sorted by `IP:port` text; empty when it has none.
    pub fn get(&self, port: &ServicePortName) -> &[ProxyEndpoint] {
        self.ports.get(port).map_or(&[], Vec::as_slice)
    }

    /// Removes and returns the endpoints of a service port.
    pub fn take(&mut self, port: &ServicePortName) -> Option<Vec<ProxyEndpoint>> {
        self.ports.remove(port)
    }

    /// Every service port with endpoints.
    pub fn iter(&self) -> impl Iterator<Item = (&ServicePortName, &[ProxyEndpoint])> {
        self.ports.iter().map(|(k, v)| (k, v.as_slice()))
    }
}

/// A service port's traffic policies as the proxy reads them for one IP family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PortPolicy {
    /// `internalTrafficPolicy: Local`.
    pub internal_local: bool,
    /// `externalTrafficPolicy: Local` on a NodePort or LoadBalancer Service.
    pub external_local: bool,
    /// Reachable from outside: a node port, a VIP-mode load-balancer IP of the family, or an
    /// external IP of the family.
    pub externally_accessible: bool,
}

impl PortPolicy {
    /// The policies of `port` of `service` for the proxier of `family`.
    pub fn for_port(service: &Service, port: &ServicePort, family: IpFamily) -> Self {
        let spec = service.spec();
        let typ = service.type_();
        let external_local = (typ == "NodePort" || typ == "LoadBalancer")
            && spec.external_traffic_policy.as_deref() == Some("Local");
        let internal_local = spec.internal_traffic_policy.as_deref() == Some("Local");
        let of_family = |s: &str| {
            s.trim()
                .parse::<IpAddr>()
                .is_ok_and(|ip| IpFamily::of(ip) == family)
        };
        let external_ips = spec.external_ips.iter().flatten().any(|ip| of_family(ip));
        let lb_vips = service
            .status
            .as_ref()
            .and_then(|s| s.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.as_ref())
            .into_iter()
            .flatten()
            .any(|ing| {
                let vip_mode = ing.ip_mode.as_deref().is_none_or(|m| m == "VIP");
                vip_mode
                    && ing
                        .ip
                        .as_deref()
                        .is_some_and(|ip| !ip.is_empty() && of_family(ip))
            });
        PortPolicy {
            internal_local,
            external_local,
            externally_accessible: port.node_port.is_some_and(|n| n != 0) || lb_vips || external_ips,
        }
    }

    /// Cluster endpoints are used for internal traffic under `Cluster`, and for any external
    /// traffic (even under `Local`, for traffic from the node itself).
    pub fn uses_cluster(&self) -> bool {
        !self.internal_local || self.externally_accessible
    }

    /// Local endpoints are used for internal traffic under `Local`, and for external traffic
    /// under `Local`.
    pub fn uses_local(&self) -> bool {
        self.internal_local || (self.external_local && self.externally_accessible)
    }
}

/// The IP families a proxy handles a Service in: `spec.ipFamilies`, else the families of its
/// cluster IPs, else IPv4.
pub(crate) fn service_families(service: &Service) -> Vec<IpFamily> {
    let mut out: Vec<IpFamily> = service
        .spec()
        .ip_families
        .iter()
        .flatten()
        .filter_map(|f| IpFamily::parse(f))
        .collect();
    if out.is_empty() {
        out = service
            .cluster_ip_addrs()
            .unwrap_or_default()
            .into_iter()
            .map(IpFamily::of)
            .collect();
    }
    if out.is_empty() {
        out.push(IpFamily::V4);
    }
    out.dedup();
    out
}
