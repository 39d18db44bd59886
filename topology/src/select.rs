//! Proxy side: which endpoints a node uses for a service port (kube-proxy's
//! `CategorizeEndpoints`).
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/topology.go`.

use std::ops::Range;

use serde::Serialize;
use svcnet_model::{EndpointSlice, Service, ServicePort};

use crate::endpoint::{IpFamily, PlainEndpoint, ProxyEndpoint, SelectOptions, ServicePortName};
use crate::index::{Addressed, SliceIndex};
use crate::proxy::{
    Families, NodeTopology, PortPolicy, cluster_ips_unallocated, plain_v4_cluster_ip, service_families,
};

/// How hints narrowed the cluster endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[non_exhaustive]
pub enum TopologyMode {
    /// No narrowing: all ready endpoints.
    #[default]
    None,
    /// Endpoints hinted for this node's zone.
    PreferSameZone,
    /// Endpoints hinted for this node.
    PreferSameNode,
}

/// The endpoints one node uses for one service port.
///
/// Unlike kube-proxy, which returns nil lists when a service port has no endpoints, a list
/// the service port uses is always `Some` (possibly empty); `None` means "not used".
/// Serialized with `allReachable` beside the fields.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Selection<'a> {
    /// Endpoints for Cluster-policy traffic (topology applied); `None` when the service port
    /// never uses Cluster policy.
    pub cluster: Option<Vec<&'a ProxyEndpoint<'a>>>,
    /// Endpoints on this node for Local-policy traffic (topology never applied); `None` when the
    /// service port never uses Local policy.
    pub local: Option<Vec<&'a ProxyEndpoint<'a>>>,
    /// Which list [`Selection::all_reachable`] is.
    reach: Reach<'a>,
    /// Whether the service port has a usable endpoint anywhere in the cluster (it may be true
    /// while `all_reachable()` is empty, e.g. under a Local policy with only remote endpoints).
    pub has_any: bool,
    /// How hints narrowed `cluster`.
    pub topology: TopologyMode,
    /// `cluster` holds serving-and-terminating endpoints because no ready one exists.
    pub cluster_terminating_fallback: bool,
    /// `local` holds serving-and-terminating endpoints because no local ready one exists.
    pub local_terminating_fallback: bool,
}

/// Where a [`Selection`]'s union lives: usually it is one of the two lists, so it is not
/// copied.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reach<'a> {
    Nothing,
    Cluster,
    Local,
    Union(Vec<&'a ProxyEndpoint<'a>>),
}

impl<'a> Selection<'a> {
    /// The union of `cluster` and `local`: everything this node may send traffic to, in the
    /// endpoints' order.
    pub fn all_reachable(&self) -> &[&'a ProxyEndpoint<'a>] {
        match &self.reach {
            Reach::Nothing => &[],
            Reach::Cluster => self.cluster.as_deref().unwrap_or(&[]),
            Reach::Local => self.local.as_deref().unwrap_or(&[]),
            Reach::Union(v) => v,
        }
    }
}

impl Serialize for Selection<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("Selection", 7)?;
        st.serialize_field("cluster", &self.cluster)?;
        st.serialize_field("local", &self.local)?;
        st.serialize_field("allReachable", self.all_reachable())?;
        st.serialize_field("hasAny", &self.has_any)?;
        st.serialize_field("topology", &self.topology)?;
        st.serialize_field("clusterTerminatingFallback", &self.cluster_terminating_fallback)?;
        st.serialize_field("localTerminatingFallback", &self.local_terminating_fallback)?;
        st.end()
    }
}

/// Splits a service port's endpoints into cluster, local and reachable ones for `node`:
///
/// - cluster (when used): ready endpoints, narrowed to those hinted for this node when every
///   ready endpoint has node hints and one names this node, else to those hinted for this
///   node's zone when every ready endpoint has zone hints and one names the zone; when none
///   is left, every serving-and-terminating endpoint;
/// - local (when used): ready endpoints on this node, else serving-and-terminating ones there;
/// - all reachable: the union.
///
/// ```
/// use svcnet_model::ForZone;
/// use svcnet_topology::{NodeTopology, PortPolicy, ProxyEndpoint, SelectOptions, categorize};
/// let zones = [ForZone { name: "a".into() }, ForZone { name: "b".into() }];
/// let ep = |ip: &str, z: usize| ProxyEndpoint {
///     ip: ip.parse().unwrap(), port: 80, node_name: None, zone: Some(zones[z].name.as_str()),
///     is_local: false, ready: true, serving: true, terminating: false,
///     zone_hints: &zones[z..=z], node_hints: &[],
/// };
/// let eps = [ep("10.0.0.1", 0), ep("10.0.0.2", 1)];
/// let sel = categorize(&eps, &PortPolicy::default(), &NodeTopology::new("n1", "b"),
///     &SelectOptions::default());
/// assert_eq!(sel.cluster.unwrap()[0].to_string(), "10.0.0.2:80");
/// assert!(sel.local.is_none() && sel.has_any);
/// ```
pub fn categorize<'a>(
    endpoints: &'a [ProxyEndpoint<'a>],
    policy: &PortPolicy,
    node: &NodeTopology,
    options: &SelectOptions,
) -> Selection<'a> {
    let c = Categories::of(endpoints, policy, node, options);
    let cluster = c.uses_cluster.then(|| {
        endpoints
            .iter()
            .filter(|e| c.in_cluster(e, node))
            .collect::<Vec<_>>()
    });
    let local = c
        .uses_local
        .then(|| endpoints.iter().filter(|e| c.in_local(e)).collect::<Vec<_>>());
    let reach = match (&cluster, &local) {
        (Some(_), None) => Reach::Cluster,
        (None, Some(_)) => Reach::Local,
        // Untouched by topology, cluster holds every ready endpoint, local ones included.
        (Some(_), Some(_)) if c.topology == TopologyMode::None && !c.local_terminating_fallback => {
            Reach::Cluster
        }
        // The endpoints are one per address: the union is a filter.
        (Some(_), Some(_)) => Reach::Union(
            endpoints
                .iter()
                .filter(|e| c.in_cluster(e, node) || c.in_local(e))
                .collect(),
        ),
        (None, None) => Reach::Nothing,
    };
    Selection {
        cluster,
        local,
        reach,
        has_any: c.has_any,
        topology: c.topology,
        cluster_terminating_fallback: c.cluster_terminating_fallback,
        local_terminating_fallback: c.local_terminating_fallback,
    }
}

/// What [`categorize`] decides for a service port, without the lists: which lists are used,
/// how topology narrowed the cluster list, the fallbacks, and whether the port has endpoints
/// anywhere. [`Categories::in_cluster`] and [`Categories::in_local`] tell each endpoint's
/// place, so a caller can build its own lists without the intermediate ones.
///
/// ```
/// use svcnet_topology::{Categories, NodeTopology, PortPolicy, ProxyEndpoint, SelectOptions};
/// let ep = |ip: &str, ready: bool| ProxyEndpoint {
///     ip: ip.parse().unwrap(), port: 80, node_name: None, zone: None, is_local: false,
///     ready, serving: true, terminating: !ready, zone_hints: &[], node_hints: &[],
/// };
/// let eps = [ep("10.0.0.1", false), ep("10.0.0.2", false)];
/// let node = NodeTopology::new("n1", "");
/// let c = Categories::of(&eps, &PortPolicy::default(), &node, &SelectOptions::default());
/// assert!(c.cluster_terminating_fallback && c.has_any);
/// assert!(eps.iter().all(|e| c.in_cluster(e, &node) && !c.in_local(e)));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Categories {
    /// The service port uses Cluster-policy endpoints ([`Selection::cluster`] is `Some`).
    pub uses_cluster: bool,
    /// The service port uses Local-policy endpoints ([`Selection::local`] is `Some`).
    pub uses_local: bool,
    /// How hints narrowed the cluster endpoints.
    pub topology: TopologyMode,
    /// The cluster endpoints are serving-and-terminating ones because no ready one exists.
    pub cluster_terminating_fallback: bool,
    /// The local endpoints are serving-and-terminating ones because no local ready one exists.
    pub local_terminating_fallback: bool,
    /// The service port has a usable endpoint anywhere in the cluster.
    pub has_any: bool,
}

impl Categories {
    /// Categorizes `endpoints` (one per address, as a [`NodeView`] lists them) for `node`, as
    /// [`categorize`] does.
    pub fn of(
        endpoints: &[ProxyEndpoint<'_>],
        policy: &PortPolicy,
        node: &NodeTopology,
        options: &SelectOptions,
    ) -> Self {
        Categories::of_any(endpoints, policy, |c| {
            let mode = topology_mode(endpoints, node, options);
            c.topology = mode;
            endpoints.iter().any(|e| e.ready && available(e, mode, node))
        })
    }

    /// [`Categories::of`] for endpoints without hints the proxy reads, as
    /// [`SliceIndex::plain_port_endpoints`] lists them when it returns `false` (the topology is
    /// then never narrowed). Use [`Categories::in_cluster_plain`] and
    /// [`Categories::in_local_plain`] with it.
    pub fn of_plain(endpoints: &[PlainEndpoint], policy: &PortPolicy) -> Self {
        Categories::of_any(endpoints, policy, |_| endpoints.iter().any(|e| e.ready))
    }

    /// The categorization both kinds of endpoint share. `cluster_ready` is asked only when
    /// the policy uses cluster endpoints and there are endpoints: whether a ready endpoint is
    /// usable cluster-wide (it may narrow `topology` first); when none is, serving and
    /// terminating ones are the fallback. Local traffic falls back to local serving and
    /// terminating endpoints when no local one is ready.
    fn of_any<E: Addressed>(
        endpoints: &[E],
        policy: &PortPolicy,
        cluster_ready: impl FnOnce(&mut Categories) -> bool,
    ) -> Self {
        let mut c = Categories {
            uses_cluster: policy.uses_cluster(),
            uses_local: policy.uses_local(),
            ..Categories::default()
        };
        if endpoints.is_empty() {
            return c;
        }
        let fallback = |e: &E| e.serving() && e.terminating();
        if c.uses_cluster {
            if cluster_ready(&mut c) {
                c.has_any = true;
            } else {
                c.cluster_terminating_fallback = endpoints.iter().any(fallback);
                c.has_any = c.cluster_terminating_fallback;
            }
        }
        if c.uses_local {
            c.has_any |= endpoints.iter().any(|e| e.ready() || fallback(e));
            if !endpoints.iter().any(|e| e.is_local() && e.ready()) {
                c.local_terminating_fallback = endpoints.iter().any(|e| e.is_local() && fallback(e));
            }
        }
        c
    }

    /// [`Categories::in_cluster`] for categories of [`Categories::of_plain`].
    #[inline]
    pub fn in_cluster_plain(&self, e: &PlainEndpoint) -> bool {
        self.uses_cluster
            && if self.cluster_terminating_fallback {
                e.serving && e.terminating
            } else {
                e.ready
            }
    }

    /// [`Categories::in_local`] for categories of [`Categories::of_plain`].
    #[inline]
    pub fn in_local_plain(&self, e: &PlainEndpoint) -> bool {
        self.uses_local
            && e.is_local
            && if self.local_terminating_fallback {
                e.serving && e.terminating
            } else {
                e.ready
            }
    }

    /// Whether `e` is among the cluster endpoints (never, when they are not used).
    #[inline]
    pub fn in_cluster(&self, e: &ProxyEndpoint<'_>, node: &NodeTopology) -> bool {
        self.uses_cluster
            && if self.cluster_terminating_fallback {
                e.serving && e.terminating
            } else {
                e.ready && available(e, self.topology, node)
            }
    }

    /// Whether `e` is among the local endpoints (never, when they are not used).
    #[inline]
    pub fn in_local(&self, e: &ProxyEndpoint<'_>) -> bool {
        self.uses_local
            && e.is_local
            && if self.local_terminating_fallback {
                e.serving && e.terminating
            } else {
                e.ready
            }
    }
}

fn topology_mode(
    endpoints: &[ProxyEndpoint<'_>],
    node: &NodeTopology,
    options: &SelectOptions,
) -> TopologyMode {
    let mut any_ready = false;
    let mut all_node_hints = true;
    let mut for_node = false;
    let mut all_zone_hints = true;
    let mut for_zone = false;
    let read_node_hints = options.node_hints;
    for e in endpoints.iter().filter(|e| e.ready) {
        any_ready = true;
        // Once a mode is ruled out, or known to name this node or zone, only the "every
        // ready endpoint has hints" half still needs looking at.
        if read_node_hints && all_node_hints {
            if e.node_hints.is_empty() {
                all_node_hints = false;
            } else if !for_node && e.hinted_to_node(&node.name) {
                for_node = true;
            }
        }
        if all_zone_hints {
            if e.zone_hints.is_empty() {
                all_zone_hints = false;
            } else if !for_zone && e.hinted_to_zone(&node.zone) {
                for_zone = true;
            }
        }
    }
    if !any_ready {
        TopologyMode::None
    } else if read_node_hints && all_node_hints && for_node {
        TopologyMode::PreferSameNode
    } else if all_zone_hints && for_zone {
        TopologyMode::PreferSameZone
    } else {
        TopologyMode::None
    }
}

#[inline]
fn available(e: &ProxyEndpoint<'_>, mode: TopologyMode, node: &NodeTopology) -> bool {
    match mode {
        TopologyMode::None => true,
        TopologyMode::PreferSameNode => e.hinted_to_node(&node.name),
        TopologyMode::PreferSameZone => e.hinted_to_zone(&node.zone),
    }
}

/// One service port of a [`NodeView`]: its name, family, policies and endpoints, borrowed
/// from the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PortEndpoints<'a> {
    /// The service port.
    pub name: ServicePortName<'a>,
    /// The Service port number.
    pub port: i32,
    /// The proxier's family.
    pub family: IpFamily,
    /// The traffic policies.
    pub policy: PortPolicy,
    /// Its endpoints, sorted by `IP:port` text.
    pub endpoints: &'a [ProxyEndpoint<'a>],
}

/// A service port of a view, with where its endpoints sit in the view's one list.
#[derive(Debug, Clone, PartialEq, Eq)]
struct PortEntry<'a> {
    name: ServicePortName<'a>,
    port: i32,
    family: IpFamily,
    policy: PortPolicy,
    endpoints: Range<usize>,
}

/// Every service port a node's proxy handles, with its endpoints, borrowed from the Services
/// and EndpointSlices it was built from. All endpoints live in one list; [`NodeView::ports`]
/// hands out each service port's part of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeView<'a> {
    /// The node.
    pub node: NodeTopology,
    /// The options used.
    pub options: SelectOptions,
    ports: Vec<PortEntry<'a>>,
    endpoints: Vec<ProxyEndpoint<'a>>,
    /// Slice content left out, with the reason.
    pub ignored: Vec<crate::endpoint::Ignored>,
}

impl<'a> NodeView<'a> {
    /// Builds the view of `node` over these Services and EndpointSlices. Services kube-proxy
    /// skips are skipped (`ShouldSkipService`: ExternalName, `clusterIP` empty or `None`), and
    /// so is each family the Service has no cluster IP of (`GetClusterIPByFamily`).
    ///
    /// A Service with neither `spec.clusterIP` nor `spec.clusterIPs` has not been through the
    /// API server's allocation (an undefaulted manifest, as kube-proxy's own
    /// `CategorizeEndpoints` tests build them): the view answers for it as if its ClusterIPs
    /// were allocated, in each of its families. An explicitly empty or `None` ClusterIP is
    /// skipped, as kube-proxy skips it.
    ///
    /// The slices are indexed by Service once, so the cost grows with the number of slices
    /// and service ports, not their product. To build the views of many nodes, index the
    /// slices once with [`SliceIndex::build`] and use [`NodeView::from_index`].
    pub fn build(
        services: &'a [Service],
        slices: &'a [EndpointSlice],
        node: NodeTopology,
        options: SelectOptions,
    ) -> Self {
        Self::from_index(&SliceIndex::build(slices), services, node, options)
    }

    /// Builds the view of `node` over these Services and the slices of `index`: the same
    /// view as [`NodeView::build`] over those slices.
    pub fn from_index(
        index: &SliceIndex<'a>,
        services: &'a [Service],
        node: NodeTopology,
        options: SelectOptions,
    ) -> Self {
        let mut ports: Vec<PortEntry<'a>> = Vec::with_capacity(services.len());
        let mut endpoints: Vec<ProxyEndpoint<'a>> = Vec::with_capacity(index.endpoint_count());
        for (svc, p, family) in proxied_ports(services) {
            let name = ServicePortName {
                namespace: svc.metadata.namespace(),
                name: svc.metadata.name(),
                port: p.name(),
                protocol: p.protocol(),
            };
            let start = endpoints.len();
            index.service_port_endpoints(&mut endpoints, &name, family, &node.name, options);
            ports.push(PortEntry {
                policy: PortPolicy::for_port(svc, p, family),
                name,
                port: p.port,
                family,
                endpoints: start..endpoints.len(),
            });
        }
        NodeView {
            node,
            options,
            ports,
            endpoints,
            ignored: index.ignored().cloned().collect(),
        }
    }

    /// Service ports in Service input order, then port order, then family order.
    pub fn ports(&self) -> impl ExactSizeIterator<Item = PortEndpoints<'_>> + Clone {
        self.ports.iter().map(|p| PortEndpoints {
            name: p.name,
            port: p.port,
            family: p.family,
            policy: p.policy,
            endpoints: &self.endpoints[p.endpoints.clone()],
        })
    }

    /// Each service port with the endpoints this node uses for it.
    pub fn selections(&self) -> impl Iterator<Item = (PortEndpoints<'_>, Selection<'_>)> {
        self.ports().map(|p| {
            let sel = categorize(p.endpoints, &p.policy, &self.node, &self.options);
            (p, sel)
        })
    }
}

/// Every service port a proxy handles, with the family it handles it in, in a
/// [`NodeView`]'s order (Service input order, then port order, then family order): the
/// Services kube-proxy skips are left out (`ShouldSkipService`), and so is each family a
/// Service has no cluster IP of (`GetClusterIPByFamily`); a Service that has not been through
/// ClusterIP allocation counts as allocated in each of its families (see [`NodeView::build`]).
///
/// ```
/// use svcnet_model::Service;
/// use svcnet_topology::{IpFamily, proxied_ports};
///
/// let services: Vec<Service> = vec![
///     serde_json::from_str(r#"{"metadata":{"name":"web","namespace":"shop"},"spec":{
///         "clusterIPs":["10.96.0.10","fd00::10"],"ipFamilies":["IPv4","IPv6"],
///         "clusterIP":"10.96.0.10","ports":[{"port":80}]}}"#).unwrap(),
///     serde_json::from_str(r#"{"metadata":{"name":"db","namespace":"shop"},"spec":{
///         "clusterIP":"None","ports":[{"port":5432}]}}"#).unwrap(),
/// ];
/// let families: Vec<IpFamily> = proxied_ports(&services).map(|(_, _, f)| f).collect();
/// assert_eq!(families, [IpFamily::V4, IpFamily::V6]);
/// ```
pub fn proxied_ports(services: &[Service]) -> impl Iterator<Item = (&Service, &ServicePort, IpFamily)> {
    ProxiedPorts {
        services: services.iter(),
        svc: None,
        unallocated: false,
        plain_v4: false,
        families: Families::default(),
        ports: &[],
        port: 0,
        family: 0,
    }
}

/// The iterator of [`proxied_ports`]: one Service at a time, its ports, each port's families.
struct ProxiedPorts<'a> {
    services: std::slice::Iter<'a, Service>,
    svc: Option<&'a Service>,
    unallocated: bool,
    /// The Service has only `clusterIP`, a canonical IPv4 address (`plain_v4_cluster_ip`):
    /// its one family is IPv4, its cluster IP of it that address.
    plain_v4: bool,
    families: Families,
    ports: &'a [ServicePort],
    port: usize,
    family: usize,
}

impl<'a> Iterator for ProxiedPorts<'a> {
    type Item = (&'a Service, &'a ServicePort, IpFamily);

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(svc) = self.svc {
                while let Some(p) = self.ports.get(self.port) {
                    while let Some(f) = self.families.get(self.family) {
                        self.family += 1;
                        if self.unallocated
                            || self.plain_v4
                            || svc.cluster_ip_for_family(f.as_str()).is_some()
                        {
                            return Some((svc, p, f));
                        }
                    }
                    self.family = 0;
                    self.port += 1;
                }
            }
            let svc = self.services.next()?;
            self.unallocated = cluster_ips_unallocated(svc);
            if svc.skipped_by_proxy()
                && !(self.unallocated && svc.type_() != svcnet_model::service_type::EXTERNAL_NAME)
            {
                self.svc = None;
                continue;
            }
            self.svc = Some(svc);
            self.plain_v4 = plain_v4_cluster_ip(svc);
            self.families = if self.plain_v4 {
                Families::v4()
            } else {
                service_families(svc)
            };
            self.ports = svc.spec().ports();
            self.port = 0;
            self.family = 0;
        }
    }
}

impl Serialize for NodeView<'_> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        let mut st = s.serialize_struct("NodeView", 4)?;
        st.serialize_field("node", &self.node)?;
        st.serialize_field("options", &self.options)?;
        st.serialize_field("ports", &self.ports().collect::<Vec<_>>())?;
        st.serialize_field("ignored", &self.ignored)?;
        st.end()
    }
}

#[cfg(test)]
mod tests {
    use svcnet_model::{ForNode, ForZone};

    use super::*;

    proptest::proptest! {
        /// Without hints, the plain categories are the categories, endpoint by endpoint.
        #[test]
        fn plain_categories_are_the_categories_without_hints(
            flags in proptest::collection::vec(0u8..16, 0..8),
            internal_local in proptest::prelude::any::<bool>(),
            external_local in proptest::prelude::any::<bool>(),
            externally_accessible in proptest::prelude::any::<bool>(),
        ) {
            let eps: Vec<ProxyEndpoint<'_>> = flags
                .iter()
                .enumerate()
                .map(|(i, f)| ProxyEndpoint {
                    ip: std::net::IpAddr::from([10, 0, 0, i as u8]),
                    port: 80,
                    node_name: Some(if f & 1 != 0 { "me" } else { "other" }),
                    zone: None,
                    is_local: f & 1 != 0,
                    ready: f & 2 != 0,
                    serving: f & 4 != 0,
                    terminating: f & 8 != 0,
                    zone_hints: &[],
                    node_hints: &[],
                })
                .collect();
            let plain: Vec<PlainEndpoint> = eps.iter().map(PlainEndpoint::from).collect();
            let policy = PortPolicy { internal_local, external_local, externally_accessible };
            let node = NodeTopology::new("me", "zone-a");
            for options in [SelectOptions { node_hints: false }, SelectOptions { node_hints: true }] {
                let c = Categories::of(&eps, &policy, &node, &options);
                proptest::prop_assert_eq!(Categories::of_plain(&plain, &policy), c);
                for (e, p) in eps.iter().zip(&plain) {
                    proptest::prop_assert_eq!(c.in_cluster_plain(p), c.in_cluster(e, &node));
                    proptest::prop_assert_eq!(c.in_local_plain(p), c.in_local(e));
                }
            }
        }
    }

    fn ep(
        ip: &str,
        local: bool,
        ready: bool,
        terminating: bool,
        zones: &[&str],
        nodes: &[&str],
    ) -> ProxyEndpoint<'static> {
        let zone_hints: Vec<ForZone> = zones.iter().map(|s| ForZone { name: s.to_string() }).collect();
        let node_hints: Vec<ForNode> = nodes.iter().map(|s| ForNode { name: s.to_string() }).collect();
        ProxyEndpoint {
            ip: ip.parse().unwrap(),
            port: 80,
            node_name: None,
            zone: None,
            is_local: local,
            ready,
            serving: ready || terminating,
            terminating,
            zone_hints: Box::leak(zone_hints.into_boxed_slice()),
            node_hints: Box::leak(node_hints.into_boxed_slice()),
        }
    }

    fn ips(v: &[&ProxyEndpoint<'_>]) -> Vec<String> {
        v.iter().map(|e| e.ip.to_string()).collect()
    }

    const CLUSTER: PortPolicy = PortPolicy {
        internal_local: false,
        external_local: false,
        externally_accessible: false,
    };
    const ITP_LOCAL: PortPolicy = PortPolicy {
        internal_local: true,
        external_local: false,
        externally_accessible: false,
    };
    const ETP_LOCAL: PortPolicy = PortPolicy {
        internal_local: false,
        external_local: true,
        externally_accessible: true,
    };

    fn node() -> NodeTopology {
        NodeTopology::new("node1", "zone-a")
    }

    #[test]
    fn zone_hints_apply_only_when_every_ready_endpoint_has_one() {
        let eps = [
            ep("10.0.0.1", false, true, false, &["zone-a"], &[]),
            ep("10.0.0.2", false, true, false, &["zone-b"], &[]),
            ep("10.0.0.3", false, false, false, &[], &[]),
        ];
        let sel = categorize(&eps, &CLUSTER, &node(), &SelectOptions::default());
        assert_eq!(sel.topology, TopologyMode::PreferSameZone);
        assert_eq!(ips(sel.cluster.as_deref().unwrap()), ["10.0.0.1"]);
        let mut missing = eps;
        missing[1].zone_hints = &[];
        let sel = categorize(&missing, &CLUSTER, &node(), &SelectOptions::default());
        assert_eq!(sel.topology, TopologyMode::None);
        assert_eq!(ips(sel.cluster.as_deref().unwrap()), ["10.0.0.1", "10.0.0.2"]);
        let elsewhere = NodeTopology::new("node1", "zone-c");
        let sel = categorize(&eps, &CLUSTER, &elsewhere, &SelectOptions::default());
        assert_eq!(sel.topology, TopologyMode::None);
    }

    #[test]
    fn node_hints_win_over_zone_hints_when_enabled() {
        let eps = [
            ep("10.0.0.1", true, true, false, &["zone-a"], &["node1"]),
            ep("10.0.0.2", false, true, false, &["zone-a"], &["node2"]),
        ];
        let sel = categorize(&eps, &CLUSTER, &node(), &SelectOptions::default());
        assert_eq!(sel.topology, TopologyMode::PreferSameNode);
        assert_eq!(ips(sel.cluster.as_deref().unwrap()), ["10.0.0.1"]);
        let sel = categorize(&eps, &CLUSTER, &node(), &SelectOptions { node_hints: false });
        assert_eq!(sel.topology, TopologyMode::PreferSameZone);
        assert_eq!(sel.cluster.unwrap().len(), 2);
    }

    #[test]
    fn terminating_fallback_and_has_any() {
        let eps = [
            ep("10.0.0.1", false, false, true, &[], &[]),
            ep("10.0.0.2", false, false, false, &[], &[]),
        ];
        let sel = categorize(&eps, &CLUSTER, &node(), &SelectOptions::default());
        assert!(sel.cluster_terminating_fallback && sel.has_any);
        assert_eq!(ips(sel.all_reachable()), ["10.0.0.1"]);
        let sel = categorize(&eps, &ITP_LOCAL, &node(), &SelectOptions::default());
        assert!(sel.cluster.is_none());
        assert_eq!(sel.local.as_deref().map(<[_]>::len), Some(0));
        assert!(sel.has_any && sel.all_reachable().is_empty());
        let sel = categorize(&[], &ITP_LOCAL, &node(), &SelectOptions::default());
        assert!(!sel.has_any && sel.local == Some(vec![]));
    }

    #[test]
    fn local_ignores_topology_and_the_union_merges() {
        let eps = [
            ep("10.0.0.0", true, true, false, &["zone-a"], &[]),
            ep("10.0.0.1", true, true, false, &["zone-b"], &[]),
            ep("10.0.0.2", false, true, false, &["zone-a"], &[]),
            ep("10.0.0.3", false, true, false, &["zone-b"], &[]),
        ];
        let sel = categorize(&eps, &ETP_LOCAL, &node(), &SelectOptions::default());
        assert_eq!(ips(sel.cluster.as_deref().unwrap()), ["10.0.0.0", "10.0.0.2"]);
        assert_eq!(ips(sel.local.as_deref().unwrap()), ["10.0.0.0", "10.0.0.1"]);
        assert_eq!(ips(sel.all_reachable()), ["10.0.0.0", "10.0.0.1", "10.0.0.2"]);
    }

    #[test]
    fn node_view_reads_slices_like_the_proxy() {
        let svc: Service = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"ports": [{"name": "http", "port": 80, "protocol": "TCP"}], "ipFamilies": ["IPv4"],
                     "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                     "internalTrafficPolicy": "Local"}
        }))
        .unwrap();
        let slice = |name: &str, eps: serde_json::Value| -> EndpointSlice {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": name, "namespace": "ns", "labels": {"kubernetes.io/service-name": "web"}},
                "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
                "endpoints": eps
            }))
            .unwrap()
        };
        let slices = [
            slice(
                "a",
                serde_json::json!([{"addresses": ["10.0.0.10"], "nodeName": "n2"},
                                          {"addresses": ["10.0.0.2"], "nodeName": "n1",
                                           "conditions": {"ready": false, "serving": true, "terminating": true}},
                                          {"addresses": ["fd00::1"], "nodeName": "n1"},
                                          {"addresses": []}]),
            ),
            slice(
                "b",
                serde_json::json!([{"addresses": ["10.0.0.10"], "nodeName": "n1"}]),
            ),
        ];
        let services = [svc];
        let view = NodeView::build(
            &services,
            &slices,
            NodeTopology::new("n1", ""),
            SelectOptions::default(),
        );
        let (p, sel) = view.selections().next().unwrap();
        assert_eq!(p.name.to_string(), "ns/web:http");
        // Sorted as text; the duplicate 10.0.0.10 is kept as the local copy.
        let all: Vec<String> = p.endpoints.iter().map(|e| e.to_string()).collect();
        assert_eq!(all, ["10.0.0.10:8080", "10.0.0.2:8080"]);
        assert!(p.endpoints[0].is_local);
        assert_eq!(ips(sel.local.as_deref().unwrap()), ["10.0.0.10"]);
        assert_eq!(view.ignored.len(), 2);
    }
}
