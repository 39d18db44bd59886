//! The proxy's view of endpoints: EndpointSlices turned into one deduplicated, sorted endpoint
//! list per service port (kube-proxy's `EndpointSliceCache`), and each service port's traffic
//! policies.
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/endpointslicecache.go` and `pkg/proxy/serviceport.go`
//! (`newBaseServiceInfo`).

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::Serialize;
use svcnet_model::{EndpointSlice, Node, Service, ServicePort};

use crate::capacity::node_zone_label;
use crate::endpoint::{Ignored, IpFamily, ProxyEndpoint, SelectOptions, ServicePortName};
use crate::index::{SliceIndex, port_number, push_endpoints, sort_and_dedup};

/// `spec.clusterIP` of a headless Service.
const CLUSTER_IP_NONE: &str = "None";

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

/// Every service port's endpoints for one node and one IP family, borrowed from the slices.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct EndpointTable<'a> {
    ports: BTreeMap<ServicePortName<'a>, Vec<ProxyEndpoint<'a>>>,
    /// Slices, ports and endpoints left out, with the reason.
    pub ignored: Vec<Ignored>,
}

impl<'a> EndpointTable<'a> {
    /// Builds the table as kube-proxy's `EndpointSliceCache` does for the proxier of `family`
    /// on node `node_name`: slices need a `kubernetes.io/service-name` label, a namespace and a
    /// name and the family's address type; ports need a name and a non-zero number; endpoints
    /// need an address of the family. Endpoints are keyed by `IP:port` (a duplicate local copy
    /// wins over a remote one) and sorted by that text. Slices are read in name order.
    pub fn build(
        slices: &'a [EndpointSlice],
        node_name: &str,
        family: IpFamily,
        options: &SelectOptions,
    ) -> Self {
        let index = SliceIndex::build(slices);
        let mut ports: BTreeMap<ServicePortName<'a>, Vec<ProxyEndpoint<'a>>> = BTreeMap::new();
        for (service, slice, ips) in index.slices(family) {
            for p in slice.ports() {
                let (Some(port), Some(number)) = (p.name.as_deref(), port_number(p)) else {
                    continue;
                };
                let name = ServicePortName {
                    namespace: service.0,
                    name: service.1,
                    port,
                    protocol: p.protocol(),
                };
                let list = ports.entry(name).or_default();
                push_endpoints(list, node_name, *options, slice, ips, index.v6_addrs(), number);
            }
        }
        ports.retain(|_, list| {
            sort_and_dedup(list, 0);
            !list.is_empty()
        });
        let ignored = index.ignored_of(family).cloned().collect();
        EndpointTable { ports, ignored }
    }

    /// The endpoints of a service port, sorted by `IP:port` text; empty when it has none.
    pub fn get(&self, port: &ServicePortName<'a>) -> &[ProxyEndpoint<'a>] {
        self.ports.get(port).map_or(&[], Vec::as_slice)
    }

    /// Every service port with endpoints.
    pub fn iter(&self) -> impl Iterator<Item = (&ServicePortName<'a>, &[ProxyEndpoint<'a>])> {
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
/// cluster IPs, else IPv4; a family repeated right after itself counts once.
pub(crate) fn service_families(service: &Service) -> Families {
    let mut out = Families::default();
    for f in service.spec().ip_families.iter().flatten() {
        if let Some(f) = IpFamily::parse(f) {
            out.push(f);
        }
    }
    if out.iter().next().is_none() {
        // The families of `cluster_ip_addrs()`, none if one of them does not parse (read
        // without building the list).
        let spec = service.spec();
        let texts: &[String] = match (&spec.cluster_ips, &spec.cluster_ip) {
            (Some(ips), _) if !ips.is_empty() => ips,
            (_, Some(ip)) => std::slice::from_ref(ip),
            _ => &[],
        };
        let mut of_ips = Families::default();
        for t in texts
            .iter()
            .filter(|t| !t.is_empty() && t.as_str() != CLUSTER_IP_NONE)
        {
            match crate::index::parse_ip_strict(t) {
                Some(ip) => of_ips.push(IpFamily::of(ip)),
                None => {
                    of_ips = Families::default();
                    break;
                }
            }
        }
        out = of_ips;
    }
    if out.iter().next().is_none() {
        out.push(IpFamily::V4);
    }
    out
}

/// True when a Service has neither `spec.ipFamilies` nor `spec.clusterIPs`, and its
/// `spec.clusterIP` is a dotted quad as IPv4 addresses are printed (which every parser reads
/// alike): its families are then IPv4 alone ([`service_families`]), and its cluster IP of
/// IPv4 is `spec.clusterIP` (`Service::cluster_ip_for_family`), without parsing it again.
pub(crate) fn plain_v4_cluster_ip(service: &Service) -> bool {
    let spec = service.spec();
    spec.ip_families.as_deref().is_none_or(<[_]>::is_empty)
        && spec.cluster_ips.as_deref().is_none_or(<[_]>::is_empty)
        && spec
            .cluster_ip
            .as_deref()
            .is_some_and(crate::index::is_dotted_quad)
}

/// A short list of families, on the stack unless a (malformed) Service names more than two.
#[derive(Debug, Default)]
pub(crate) struct Families {
    head: [Option<IpFamily>; 2],
    tail: Vec<IpFamily>,
}

impl Families {
    /// IPv4 alone.
    pub(crate) fn v4() -> Self {
        Families {
            head: [Some(IpFamily::V4), None],
            tail: Vec::new(),
        }
    }

    fn push(&mut self, f: IpFamily) {
        if self.iter().last() == Some(f) {
            return;
        }
        match self.head.iter_mut().find(|s| s.is_none()) {
            Some(slot) => *slot = Some(f),
            None => self.tail.push(f),
        }
    }

    /// The `i`th family.
    pub(crate) fn get(&self, i: usize) -> Option<IpFamily> {
        match self.head.get(i) {
            Some(f) => *f,
            None => self.tail.get(i - self.head.len()).copied(),
        }
    }

    /// The families in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = IpFamily> + '_ {
        self.head.iter().flatten().chain(&self.tail).copied()
    }
}

/// True when a Service has neither `spec.clusterIP` nor `spec.clusterIPs`: it has not been
/// through the API server's allocation (an undefaulted manifest). Distinct from a ClusterIP
/// written as `""` or `None`, which kube-proxy skips.
pub(crate) fn cluster_ips_unallocated(service: &Service) -> bool {
    let spec = service.spec();
    spec.cluster_ip.is_none() && spec.cluster_ips.as_deref().is_none_or(<[_]>::is_empty)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Where the shortcut applies, it gives what the full reading gives: IPv4 alone, with
    /// `spec.clusterIP` as its cluster IP; and it applies to the usual Service.
    #[test]
    fn plain_v4_cluster_ips_read_as_the_full_reading_does() {
        let texts = [
            "10.0.0.1",
            "010.0.0.1",
            "10.0.0.01",
            "1.2.3.4",
            "255.255.255.255",
            "0.0.0.0",
            "1.2.3.256",
            "fd00::1",
            "::ffff:1.2.3.4",
            "None",
            "",
            "bogus",
            "1.2.3",
            " 1.2.3.4",
        ];
        let mut applied = 0;
        for text in texts {
            for extra in [
                serde_json::json!({}),
                serde_json::json!({"clusterIPs": [text]}),
                serde_json::json!({"clusterIPs": []}),
                serde_json::json!({"ipFamilies": []}),
                serde_json::json!({"ipFamilies": ["IPv6"], "clusterIPs": ["fd00::1"]}),
            ] {
                let mut spec = extra.clone();
                spec["clusterIP"] = serde_json::json!(text);
                let svc: Service = serde_json::from_value(
                    serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": spec}),
                )
                .unwrap();
                if !plain_v4_cluster_ip(&svc) {
                    continue;
                }
                applied += 1;
                let families: Vec<IpFamily> = service_families(&svc).iter().collect();
                assert_eq!(families, [IpFamily::V4], "{text:?} {extra}");
                assert_eq!(svc.cluster_ip_for_family("IPv4"), Some(text), "{text:?} {extra}");
                assert_eq!(svc.cluster_ip_for_family("IPv6"), None, "{text:?} {extra}");
                assert!(!cluster_ips_unallocated(&svc) && !svc.skipped_by_proxy());
            }
        }
        // Four canonical addresses, each alone or with an empty `clusterIPs` or `ipFamilies`.
        assert_eq!(applied, 12);
    }
}
