//! The service ports one proxier programs, with the endpoints it uses for each
//! (kube-proxy v1.37.2 `pkg/proxy/serviceport.go` `newBaseServiceInfo`,
//! `pkg/proxy/servicechangetracker.go` `serviceToServiceMap`, `pkg/proxy/topology.go`
//! `CategorizeEndpoints`).

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::ops::Deref;
use std::sync::Arc;

use compact_str::CompactString;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};
use svcnet_model::validation::names::{parse_cidr_sloppy, parse_ip_sloppy};
use svcnet_model::{EndpointSlice, Node, Service};
use svcnet_topology::{
    Categories, IpFamily, LocalNode, NodeTopology, PlainEndpoint, PortPolicy, ProxyEndpoint, SelectOptions,
    ServiceRun, ServiceSlices, SliceIndex, proxied_ports, slice_digest,
};

use super::config::ProxyConfig;
use svcnet_model::hash::{DigestHasher, KeyedMap, KeyedState, keyed_map, short_text_eq as same_name};

/// A service port's protocol: the model's one [`Protocol`](svcnet_model::Protocol).
pub use svcnet_model::Protocol;

/// A service port's name as kube-proxy keys it: (namespace, Service, port name, protocol).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ServicePortName {
    /// The namespace.
    pub namespace: CompactString,
    /// The Service's name.
    pub name: CompactString,
    /// The port's name (empty for a single unnamed port).
    pub port: CompactString,
    /// The protocol.
    pub protocol: Protocol,
}

impl fmt::Display for ServicePortName {
    /// `namespace/name:port`, or `namespace/name` for an unnamed port (`ServicePortName.String`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)?;
        if !self.port.is_empty() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

/// One endpoint of a service port as the proxy uses it (`BaseEndpointInfo`): the canonical
/// address and the slice's port, with its conditions. Displayed as kube-proxy's endpoint string,
/// `ip:port` (`[ip]:port` for IPv6).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// The address (canonical).
    pub ip: IpAddr,
    /// The port.
    pub port: u16,
    /// On this proxy's node.
    pub is_local: bool,
    /// Ready (absent reads as ready).
    pub ready: bool,
    /// Serving (absent reads as serving).
    pub serving: bool,
    /// Terminating (absent reads as not terminating).
    pub terminating: bool,
}

impl Endpoint {
    /// `ip:port` as a socket address.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.ip, self.port)
    }

    fn of_plain(e: &PlainEndpoint) -> Self {
        Endpoint {
            ip: e.ip,
            port: e.port,
            is_local: e.is_local,
            ready: e.ready,
            serving: e.serving,
            terminating: e.terminating,
        }
    }

    fn of(e: &ProxyEndpoint<'_>) -> Self {
        Endpoint {
            ip: e.ip,
            port: e.port,
            is_local: e.is_local,
            ready: e.ready,
            serving: e.serving,
            terminating: e.terminating,
        }
    }
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.addr(), f)
    }
}

/// A list of a service port's endpoints, immutable and shared: a run of endpoints in an
/// allocation that a built model's lists all share (cloning a list copies no endpoint; any
/// list kept keeps that allocation), and an empty list allocates nothing. Dereferences to
/// `[Endpoint]`; built from a `Vec` or an iterator of endpoints.
///
/// ```
/// use svcnet_rules::{Endpoint, EndpointList};
///
/// let ep = Endpoint { ip: "10.0.0.1".parse().unwrap(), port: 80, is_local: false, ready: true,
///     serving: true, terminating: false };
/// let list = EndpointList::from(vec![ep]);
/// let shared = list.clone(); // no copy of the endpoints
/// assert_eq!(shared.len(), 1);
/// assert_eq!(shared[0].to_string(), "10.0.0.1:80");
/// assert!(EndpointList::default().is_empty());
/// ```
#[derive(Clone, Default)]
pub struct EndpointList {
    /// The endpoints this list is a run of (none for an empty list): a [built](ProxyModel::build)
    /// model keeps the endpoints of all its ports in one allocation.
    buf: Option<Arc<Vec<Endpoint>>>,
    /// Where the run starts in `buf`.
    start: usize,
    /// The run's length.
    len: usize,
}

impl EndpointList {
    /// The endpoints of `list` (copied once into the shared allocation; none for an empty one).
    pub fn from_slice(list: &[Endpoint]) -> Self {
        if list.is_empty() {
            EndpointList::default()
        } else {
            EndpointList {
                buf: Some(Arc::new(list.to_vec())),
                start: 0,
                len: list.len(),
            }
        }
    }

    /// The run `range` of `buf` (empty when out of range).
    fn run(buf: &Arc<Vec<Endpoint>>, range: std::ops::Range<usize>) -> Self {
        if range.is_empty() || range.end > buf.len() {
            return EndpointList::default();
        }
        EndpointList {
            buf: Some(Arc::clone(buf)),
            start: range.start,
            len: range.len(),
        }
    }

    /// The endpoints as a slice.
    pub fn as_slice(&self) -> &[Endpoint] {
        self.buf
            .as_deref()
            .and_then(|b| b.get(self.start..self.start + self.len))
            .unwrap_or(&[])
    }
}

impl PartialEq for EndpointList {
    fn eq(&self, other: &Self) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Eq for EndpointList {}

impl std::hash::Hash for EndpointList {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.as_slice().hash(state);
    }
}

impl Deref for EndpointList {
    type Target = [Endpoint];

    fn deref(&self) -> &[Endpoint] {
        self.as_slice()
    }
}

impl AsRef<[Endpoint]> for EndpointList {
    fn as_ref(&self) -> &[Endpoint] {
        self.as_slice()
    }
}

impl fmt::Debug for EndpointList {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.as_slice()).finish()
    }
}

impl From<Vec<Endpoint>> for EndpointList {
    fn from(list: Vec<Endpoint>) -> Self {
        Self::from_slice(&list)
    }
}

impl From<&[Endpoint]> for EndpointList {
    fn from(list: &[Endpoint]) -> Self {
        Self::from_slice(list)
    }
}

impl FromIterator<Endpoint> for EndpointList {
    fn from_iter<I: IntoIterator<Item = Endpoint>>(iter: I) -> Self {
        let list: Vec<Endpoint> = iter.into_iter().collect();
        Self::from_slice(&list)
    }
}

impl<'l> IntoIterator for &'l EndpointList {
    type Item = &'l Endpoint;
    type IntoIter = std::slice::Iter<'l, Endpoint>;

    fn into_iter(self) -> Self::IntoIter {
        self.as_slice().iter()
    }
}

impl PartialEq<[Endpoint]> for EndpointList {
    fn eq(&self, other: &[Endpoint]) -> bool {
        self.as_slice() == other
    }
}

impl PartialEq<Vec<Endpoint>> for EndpointList {
    fn eq(&self, other: &Vec<Endpoint>) -> bool {
        self.as_slice() == other.as_slice()
    }
}

impl Serialize for EndpointList {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.as_slice().serialize(s)
    }
}

impl<'de> Deserialize<'de> for EndpointList {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Vec::<Endpoint>::deserialize(d).map(Self::from)
    }
}

/// Everything a backend needs about one service port of one family (`servicePortInfo` plus
/// the result of `CategorizeEndpoints` for this node).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServicePortInfo {
    /// The service port's name.
    pub name: ServicePortName,
    /// `name` as text (`ns/name:port`), used in comments and chain-name hashes.
    pub name_string: CompactString,
    /// The protocol.
    pub protocol: Protocol,
    /// The ClusterIP of the family.
    pub cluster_ip: IpAddr,
    /// The Service port.
    pub port: u16,
    /// The NodePort, 0 for none.
    pub node_port: u16,
    /// ExternalIPs of the family (canonical).
    pub external_ips: Vec<IpAddr>,
    /// LoadBalancer ingress IPs of the family whose `ipMode` is absent or `VIP`.
    pub load_balancer_vips: Vec<IpAddr>,
    /// `loadBalancerSourceRanges` of the family (networks, masked); empty when one is
    /// zero-masked (allow all).
    pub load_balancer_source_ranges: Vec<IpNet>,
    /// ClientIP session affinity: the timeout in seconds; `None` without affinity.
    pub session_affinity_timeout: Option<u32>,
    /// `externalTrafficPolicy: Local` on an externally accessible Service type.
    pub external_policy_local: bool,
    /// `internalTrafficPolicy: Local`.
    pub internal_policy_local: bool,
    /// The health-check node port (LoadBalancer with eTP Local), 0 for none.
    pub health_check_node_port: u16,
    /// Every endpoint of the port, sorted by endpoint string, one per address.
    pub endpoints: EndpointList,
    /// Endpoints for Cluster-policy traffic (topology applied; terminating fallback), in the
    /// order of `endpoints` (the same shared list when it holds them all).
    pub cluster_endpoints: EndpointList,
    /// Endpoints on this node for Local-policy traffic (terminating fallback), in the order
    /// of `endpoints`.
    pub local_endpoints: EndpointList,
    /// The union of the two that the port uses: the endpoints that get per-endpoint objects,
    /// in the order of `endpoints`.
    pub all_locally_reachable: EndpointList,
    /// Whether the port has a usable endpoint anywhere.
    pub has_endpoints: bool,
    /// A digest of every endpoint's topology hints (zone and node names, as sets). kube-proxy
    /// counts a hint change as an endpoint change (a partial sync rewrites the Service's
    /// chains) even when it changes no selection; this keeps such changes visible.
    pub endpoint_hints_digest: u64,
}

impl ServicePortInfo {
    /// Reachable from outside the cluster: a NodePort, ExternalIPs or LB VIPs.
    pub fn externally_accessible(&self) -> bool {
        self.node_port != 0 || !self.external_ips.is_empty() || !self.load_balancer_vips.is_empty()
    }

    /// Uses cluster endpoints: iTP Cluster, or externally accessible.
    pub fn uses_cluster_endpoints(&self) -> bool {
        !self.internal_policy_local || self.externally_accessible()
    }

    /// Uses local endpoints: iTP Local, or eTP Local and externally accessible.
    pub fn uses_local_endpoints(&self) -> bool {
        self.internal_policy_local || (self.external_policy_local && self.externally_accessible())
    }

    /// Internal traffic can be served (`hasInternalEndpoints`).
    pub fn has_internal_endpoints(&self) -> bool {
        self.has_endpoints && (!self.internal_policy_local || !self.local_endpoints.is_empty())
    }

    /// External traffic can be served (`hasExternalEndpoints`).
    pub fn has_external_endpoints(&self) -> bool {
        self.has_endpoints && (!self.external_policy_local || !self.local_endpoints.is_empty())
    }

    /// The cluster-policy chain/object is written (`usesClusterPolicyChain`).
    pub fn uses_cluster_policy(&self) -> bool {
        !self.cluster_endpoints.is_empty() && self.uses_cluster_endpoints()
    }

    /// The local-policy chain/object is written (`usesLocalPolicyChain`).
    pub fn uses_local_policy(&self) -> bool {
        !self.local_endpoints.is_empty() && self.uses_local_endpoints()
    }

    /// The external-traffic chain is written (`usesExternalTrafficChain`).
    pub fn uses_external_traffic(&self) -> bool {
        self.has_endpoints && self.externally_accessible()
    }

    /// The firewall chain is written (`usesFWChain`).
    pub fn uses_firewall(&self) -> bool {
        self.has_endpoints
            && !self.load_balancer_vips.is_empty()
            && !self.load_balancer_source_ranges.is_empty()
    }
}

/// What the proxier of one IP family on one node programs: its service ports, sorted by name,
/// each with the endpoints it uses.
///
/// ```
/// use svcnet_model::{EndpointSlice, Service};
/// use svcnet_rules::{ProxyConfig, ProxyModel};
///
/// let services: Vec<Service> = vec![serde_json::from_str(r#"{"metadata":{"name":"web","namespace":"shop"},
///     "spec":{"clusterIP":"10.96.0.10","ports":[{"name":"http","port":80}]}}"#).unwrap()];
/// let slices: Vec<EndpointSlice> = vec![serde_json::from_str(r#"{
///     "metadata":{"name":"web-1","namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},
///     "addressType":"IPv4","ports":[{"name":"http","port":8080}],
///     "endpoints":[{"addresses":["10.0.0.01"],"nodeName":"n1"}]}"#).unwrap()];
/// let config = ProxyConfig::new("n1", "192.168.0.2".parse().unwrap());
/// let model = ProxyModel::build(&services, &slices, None, &config);
/// let port = &model.ports[0];
/// assert_eq!(port.name_string, "shop/web:http");
/// assert_eq!(port.cluster_endpoints[0].to_string(), "10.0.0.1:8080");
/// assert!(port.cluster_endpoints[0].is_local);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ProxyModel {
    /// The proxier's family.
    pub family: IpFamily,
    /// The node (name and zone label).
    pub node: NodeTopology,
    /// Every service port programmed, sorted by (namespace, name, port name, protocol).
    ///
    /// The iptables syncs tell changed Services by digests of these taken when a sync first
    /// asks for them: a model whose ports are edited by hand after that must be built anew
    /// (or at least change its number of ports) for a partial sync to see the edit.
    pub ports: Vec<ServicePortInfo>,
    /// Endpoints of all service ports, usable or not (large-cluster mode counts these).
    pub total_endpoints: usize,
    /// A digest of each Service's ports (and slices), for the syncs' change detection.
    #[serde(skip)]
    pub(crate) digests: ServiceDigests,
}

/// One digest per Service of a model's ports (its ports' data, and the digest of its slices
/// when the model was [built](ProxyModel::build) from them), in port order: what a sync
/// compares with the digests of the Services it synced before to tell the changed ones.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Digests {
    /// By Service, in port order.
    pub(crate) digests: Vec<u64>,
    /// The end (exclusive) of each Service's ports in the model's ports.
    pub(crate) ends: Vec<u32>,
}

/// [`Digests`] computed once, on first use, with the digests of the Services' slices taken
/// when the model was [built](ProxyModel::build); not part of the model's value (equal models
/// compare equal however far their digests were computed).
#[derive(Debug, Clone, Default)]
pub(crate) struct ServiceDigests {
    /// The digest of each Service's slices, in port order, with the number of ports they
    /// were taken for (`None` for models built [`ProxyModel::from_index`]).
    slices: Option<(Vec<u64>, usize)>,
    /// The digests, once computed.
    cell: std::sync::OnceLock<Digests>,
}

impl PartialEq for ServiceDigests {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

impl Eq for ServiceDigests {}

/// kube-proxy's `largeClusterEndpointsThreshold`.
pub const LARGE_CLUSTER_ENDPOINTS_THRESHOLD: usize = 1000;

impl ProxyModel {
    /// Builds the model of the proxier of `config`'s family on `config.node_name`. `node` is
    /// that node's Node object, when known (its `topology.kubernetes.io/zone` label drives zone
    /// hints). Services kube-proxy skips are left out (ExternalName, no ClusterIP of the
    /// family), and so are ports with an unknown protocol.
    ///
    /// The digest of each Service's EndpointSlices of the family is taken here too (kube-proxy
    /// counts any change to a slice object as an endpoint change of its Service: a partial
    /// iptables sync rewrites that Service's chains); see [`ProxyModel::slice_digest`].
    pub fn build(
        services: &[Service],
        slices: &[EndpointSlice],
        node: Option<&Node>,
        config: &ProxyConfig,
    ) -> Self {
        // The index takes the digest of each slice it holds as it reads its endpoints; the
        // slices it leaves out (no name or namespace) are digested here.
        let index = SliceIndex::build_digested(slices, config.hash_key);
        let unindexed = unindexed_slice_digests(slices, config.family(), config.hash_key);
        Self::assemble(&index, services, node, config, Some(&unindexed))
    }

    /// [`ProxyModel::build`] without the digests of the Services' slices, for proxiers that
    /// never compare one sync's slices with the next's (nftables, IPVS, and full iptables
    /// syncs): the same ports, endpoints and value, built faster. [`ProxyModel::slice_digest`]
    /// is then `None` for every Service, as for models built [`ProxyModel::from_index`]; a
    /// partial iptables sync from such a model sees only the changes of the ports' data (not
    /// those of slice fields the ports do not read, which kube-proxy counts too).
    ///
    /// ```
    /// use svcnet_model::{EndpointSlice, Service};
    /// use svcnet_rules::{ProxyConfig, ProxyModel};
    ///
    /// let services: Vec<Service> = vec![serde_json::from_str(r#"{"metadata":{"name":"web","namespace":"shop"},
    ///     "spec":{"clusterIP":"10.96.0.10","ports":[{"port":80}]}}"#).unwrap()];
    /// let slices: Vec<EndpointSlice> = vec![serde_json::from_str(r#"{
    ///     "metadata":{"name":"web-1","namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},
    ///     "addressType":"IPv4","ports":[{"port":8080}],"endpoints":[{"addresses":["10.0.0.1"]}]}"#).unwrap()];
    /// let config = ProxyConfig::new("n1", "192.168.0.2".parse().unwrap());
    /// let model = ProxyModel::build_without_slice_digests(&services, &slices, None, &config);
    /// assert_eq!(model, ProxyModel::build(&services, &slices, None, &config));
    /// assert_eq!(model.slice_digest("shop", "web"), None);
    /// ```
    pub fn build_without_slice_digests(
        services: &[Service],
        slices: &[EndpointSlice],
        node: Option<&Node>,
        config: &ProxyConfig,
    ) -> Self {
        let index = SliceIndex::build_keyed(slices, config.hash_key);
        Self::assemble(&index, services, node, config, None)
    }

    /// [`ProxyModel::build`] over slices indexed once (for building many nodes' models).
    pub fn from_index(
        index: &SliceIndex<'_>,
        services: &[Service],
        node: Option<&Node>,
        config: &ProxyConfig,
    ) -> Self {
        Self::assemble(index, services, node, config, None)
    }

    /// The model, with each Service's slice digest (those of `unindexed` added) when
    /// `unindexed` is given.
    fn assemble(
        index: &SliceIndex<'_>,
        services: &[Service],
        node: Option<&Node>,
        config: &ProxyConfig,
        unindexed: Option<&KeyedMap<(&str, &str), u64>>,
    ) -> Self {
        let family = config.family();
        let topology = match node {
            Some(n) => NodeTopology {
                name: config.node_name.clone(),
                zone: NodeTopology::from_node(n).zone,
            },
            None => NodeTopology::new(config.node_name.clone(), ""),
        };
        let options = SelectOptions {
            node_hints: config.node_hints,
        };
        let local = index.local_node(&topology.name);
        // The last Service of a name wins, as in kube-proxy's map.
        // Usually every name is one Service's: then each port reads its own Service, and the
        // map is not looked up again.
        let mut by_name: KeyedMap<(&str, &str), &Service> = keyed_map(services.len(), config.hash_key);
        let mut repeated = false;
        for s in services {
            repeated |= by_name
                .insert((s.metadata.namespace(), s.metadata.name()), s)
                .is_some();
        }
        // Every service port of the family the proxier may handle, in Service input order,
        // each to be read from the last Service of its name. Repeats of a service port (same
        // name and protocol, from one Service or from Services of one name) would all read
        // the same port of the same Service: one of them is kept, once they are sorted by
        // name below, and only then is the port's info built, straight into its place.
        let mut found: Vec<Candidate<'_>> = Vec::with_capacity(services.len());
        // By candidate, what its port's info reads of the Service.
        let mut parts: Vec<Option<ServicePart>> = Vec::with_capacity(services.len());
        for (first, p, f) in proxied_ports(services) {
            if f != family {
                continue;
            }
            let Some(protocol) = Protocol::parse(p.protocol()) else {
                continue;
            };
            let (namespace, name) = (first.metadata.namespace(), first.metadata.name());
            let svc = if repeated {
                let Some(svc) = by_name.get(&(namespace, name)).copied() else {
                    continue;
                };
                svc
            } else {
                first
            };
            // What the port's info reads of its Service is read here, in the Services' order
            // (usually their order in memory), not later in name order, far apart.
            parts.push(service_part(svc, p.name(), p.protocol(), family));
            found.push(Candidate {
                key: PortKey {
                    namespace,
                    name,
                    port: p.name(),
                    protocol,
                },
                protocol: p.protocol(),
            });
        }
        // Freed before the model's large lists are made (which may then reuse its memory).
        drop(by_name);
        // By candidate, its Service's slices, looked up in a loop of their own, in the
        // Services' order: the lookups are independent, so their cache misses overlap (between
        // heavier work, each would wait alone). A Service's ports come together: its slices
        // are looked up once.
        let mut run: Option<((&str, &str), ServiceRun)> = None;
        let runs: Vec<ServiceRun> = found
            .iter()
            .map(|c| {
                let (namespace, name) = (c.key.namespace, c.key.name);
                match run {
                    Some((k, r)) if same_name(k.1, name) && same_name(k.0, namespace) => r,
                    _ => {
                        let r = index.service_run(namespace, name, family);
                        run = Some(((namespace, name), r));
                        r
                    }
                }
            })
            .collect();
        let order = sorted_unique(&found, config.hash_key);
        let mut ports: Vec<ServicePortInfo> = Vec::with_capacity(order.len());
        let mut scratch = Scratch {
            shared: Vec::with_capacity(index.endpoint_count()),
            spans: Vec::with_capacity(order.len()),
            ..Scratch::default()
        };
        let mut total_endpoints = 0;
        // The digest of each Service's slices, in port order.
        let mut slice_sums: Vec<u64> = Vec::with_capacity(if unindexed.is_some() { order.len() } else { 0 });
        let mut last_service: Option<(&str, &str)> = None;
        for &i in &order {
            let (Some(c), Some(part), Some(&slices)) = (
                found.get(i as usize),
                parts.get_mut(i as usize),
                runs.get(i as usize),
            ) else {
                continue;
            };
            let Some(part) = part.take() else { continue };
            let slices = index.service_slices_at(slices);
            let port = svcnet_topology::ServicePortName {
                namespace: c.key.namespace,
                name: c.key.name,
                port: c.key.port,
                protocol: c.protocol,
            };
            let key = (c.key.namespace, c.key.name);
            port_info_into(
                part,
                &port,
                index,
                &slices,
                family,
                &topology,
                local,
                &options,
                &mut scratch,
                &mut ports,
            );
            total_endpoints += scratch.spans.last().map_or(0, |s| s[0].len());
            if let Some(extra) = unindexed
                && last_service != Some(key)
            {
                last_service = Some(key);
                let sum = extra
                    .get(&key)
                    .copied()
                    .unwrap_or(0)
                    .wrapping_add(slices.digest());
                slice_sums.push(sum);
            }
        }
        // One allocation holds every port's endpoints: the list built, not copied (only
        // trimmed when it grew well past its need).
        let mut shared = std::mem::take(&mut scratch.shared);
        if shared.capacity() > shared.len() + shared.len() / 8 {
            shared.shrink_to_fit();
        }
        let shared: Arc<Vec<Endpoint>> = Arc::new(shared);
        for (p, [all, cluster, local, reachable]) in ports.iter_mut().zip(scratch.spans.drain(..)) {
            p.endpoints = EndpointList::run(&shared, all);
            p.cluster_endpoints = EndpointList::run(&shared, cluster);
            p.local_endpoints = EndpointList::run(&shared, local);
            p.all_locally_reachable = EndpointList::run(&shared, reachable);
        }
        let slices = unindexed.map(|_| (slice_sums, ports.len()));
        ProxyModel {
            family,
            node: topology,
            ports,
            total_endpoints,
            digests: ServiceDigests {
                slices,
                ..ServiceDigests::default()
            },
        }
    }

    /// The digest of the EndpointSlices of the family of Service `namespace/name`, as
    /// [`ProxyModel::build`] read them (their sum, so independent of their order): `None` for
    /// a Service without ports in the model and for models built
    /// [`ProxyModel::from_index`].
    pub fn slice_digest(&self, namespace: &str, name: &str) -> Option<u64> {
        let (sums, count) = self.digests.slices.as_ref()?;
        if *count != self.ports.len() {
            return None;
        }
        let mut found = None;
        for_each_service(&self.ports, |key, i| {
            if key == (namespace, name) {
                found = sums.get(i).copied();
            }
        });
        found
    }

    /// The digest of each Service (computed on first use, with the digests of its slices
    /// when the model was built from them; from the ports alone for models made otherwise, or
    /// whose number of ports changed since).
    pub(crate) fn service_digests(&self) -> std::borrow::Cow<'_, Digests> {
        let sums = match &self.digests.slices {
            Some((sums, count)) if *count == self.ports.len() => Some(sums),
            Some(_) => return std::borrow::Cow::Owned(digests(&self.ports, |_| 0)),
            None => None,
        };
        let d = self
            .digests
            .cell
            .get_or_init(|| digests(&self.ports, |i| sums.and_then(|s| s.get(i)).copied().unwrap_or(0)));
        if d.ends.last().map_or(0, |&e| e as usize) == self.ports.len() {
            std::borrow::Cow::Borrowed(d)
        } else {
            std::borrow::Cow::Owned(digests(&self.ports, |_| 0))
        }
    }

    /// kube-proxy's large-cluster mode: more than 1,000 endpoints in all.
    pub fn large_cluster_mode(&self) -> bool {
        self.total_endpoints > LARGE_CLUSTER_ENDPOINTS_THRESHOLD
    }

    /// The service ports of one Service (`namespace/name`).
    pub fn service_ports<'m>(
        &'m self,
        namespace: &'m str,
        name: &'m str,
    ) -> impl Iterator<Item = &'m ServicePortInfo> {
        self.ports
            .iter()
            .filter(move |p| p.name.namespace == namespace && p.name.name == name)
    }
}

/// Calls `f` with the (namespace, name) and ordinal of each Service of `ports` (sorted by
/// name, so each Service's ports run together), in port order.
fn for_each_service<'p>(ports: &'p [ServicePortInfo], mut f: impl FnMut((&'p str, &'p str), usize)) {
    let mut last: Option<(&str, &str)> = None;
    let mut n = 0;
    for p in ports {
        let key = (p.name.namespace.as_str(), p.name.name.as_str());
        if last != Some(key) {
            f(key, n);
            n += 1;
            last = Some(key);
        }
    }
}

/// The digest of each Service's ports (in port order), with `slices(i)`, the digest of the
/// slices of the `i`th Service, mixed in.
fn digests(ports: &[ServicePortInfo], slices: impl Fn(usize) -> u64) -> Digests {
    use std::hash::Hasher;
    let mut out = Digests::default();
    let mut i = 0;
    while let Some(first) = ports.get(i) {
        let key = (first.name.namespace.as_str(), first.name.name.as_str());
        let mut h = DigestHasher::default();
        h.write(key.0.as_bytes());
        h.write_u8(0xff);
        h.write(key.1.as_bytes());
        h.write_u8(0xff);
        h.write_u64(slices(out.digests.len()));
        let mut j = i;
        while let Some(p) = ports.get(j) {
            if (p.name.namespace.as_str(), p.name.name.as_str()) != key {
                break;
            }
            digest_port(p, &mut h);
            j += 1;
        }
        out.digests.push(h.finish());
        out.ends
            .push(u32::try_from(j).expect("invariant: fewer than 2^32 service ports"));
        i = j;
    }
    out
}

/// Mixes every field of a service port into `h` (each endpoint as one or two words).
fn digest_port(p: &ServicePortInfo, h: &mut DigestHasher) {
    use std::hash::Hasher;
    fn ip(h: &mut DigestHasher, ip: &IpAddr) {
        match ip {
            IpAddr::V4(a) => h.write_u64(u64::from(a.to_bits())),
            IpAddr::V6(a) => {
                let b = a.to_bits();
                h.write_u64(1 << 40 | (b >> 64) as u64);
                h.write_u64(b as u64);
            }
        }
    }
    fn endpoints(h: &mut DigestHasher, eps: &[Endpoint]) {
        h.write_usize(eps.len());
        for e in eps {
            let flags = u64::from(e.is_local)
                | u64::from(e.ready) << 1
                | u64::from(e.serving) << 2
                | u64::from(e.terminating) << 3;
            match e.ip {
                IpAddr::V4(a) => h.write_u64(u64::from(a.to_bits()) << 32 | u64::from(e.port) << 8 | flags),
                IpAddr::V6(a) => {
                    let b = a.to_bits();
                    h.write_u64((b >> 64) as u64);
                    h.write_u64(b as u64);
                    h.write_u64(1 << 40 | u64::from(e.port) << 8 | flags);
                }
            }
        }
    }
    h.write(p.name.port.as_bytes());
    h.write_u8(0xff);
    h.write(p.name_string.as_bytes());
    h.write_u8(0xff);
    h.write_u64(
        u64::from(p.protocol as u8)
            | u64::from(p.name.protocol as u8) << 8
            | u64::from(p.port) << 16
            | u64::from(p.node_port) << 32
            | u64::from(p.health_check_node_port) << 48,
    );
    h.write_u64(
        p.session_affinity_timeout.map_or(0, |t| u64::from(t) | 1 << 32)
            | u64::from(p.external_policy_local) << 33
            | u64::from(p.internal_policy_local) << 34
            | u64::from(p.has_endpoints) << 35,
    );
    ip(h, &p.cluster_ip);
    for list in [&p.external_ips, &p.load_balancer_vips] {
        h.write_usize(list.len());
        for a in list {
            ip(h, a);
        }
    }
    h.write_usize(p.load_balancer_source_ranges.len());
    for n in &p.load_balancer_source_ranges {
        ip(h, &n.addr());
        h.write_u8(n.prefix_len());
    }
    h.write_u64(p.endpoint_hints_digest);
    for list in [
        &p.endpoints,
        &p.cluster_endpoints,
        &p.local_endpoints,
        &p.all_locally_reachable,
    ] {
        endpoints(h, list);
    }
}

/// Each Service's slices of `family` that a [`SliceIndex`] leaves out (those without a name
/// or a namespace), digested as one value independent of their order, by (namespace, name).
fn unindexed_slice_digests(
    slices: &[EndpointSlice],
    family: IpFamily,
    hash: KeyedState,
) -> KeyedMap<(&str, &str), u64> {
    let mut sums: KeyedMap<(&str, &str), u64> = keyed_map(0, hash);
    for s in slices {
        if !(s.metadata.name().is_empty() || s.metadata.namespace().is_empty())
            || s.address_type != family.as_str()
        {
            continue;
        }
        let Some(service) = s.service_name().filter(|n| !n.is_empty()) else {
            continue;
        };
        let d = sums.entry((s.metadata.namespace(), service)).or_default();
        *d = d.wrapping_add(slice_digest(s));
    }
    sums
}

/// Each Service's slices of `family`, digested as one value independent of their order, by
/// (namespace, name): what [`ProxyModel::build`] takes for each Service of the model.
#[cfg(test)]
fn slice_digests(
    slices: &[EndpointSlice],
    family: IpFamily,
    hash: KeyedState,
) -> KeyedMap<(&str, &str), u64> {
    let mut sums: KeyedMap<(&str, &str), u64> = keyed_map(slices.len(), hash);
    for s in slices.iter().filter(|s| s.address_type == family.as_str()) {
        let Some(service) = s.service_name().filter(|n| !n.is_empty()) else {
            continue;
        };
        let d = sums.entry((s.metadata.namespace(), service)).or_default();
        *d = d.wrapping_add(slice_digest(s));
    }
    sums
}

/// A service port's name, borrowed, ordered as [`ServicePortName`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct PortKey<'a> {
    namespace: &'a str,
    name: &'a str,
    port: &'a str,
    protocol: Protocol,
}

/// A service port the proxier may handle: its name and its protocol as written.
struct Candidate<'a> {
    key: PortKey<'a>,
    protocol: &'a str,
}

/// The positions of `found` sorted by name, one per name.
#[inline(never)]
fn sorted_unique(found: &[Candidate<'_>], hash: KeyedState) -> Vec<u32> {
    // The first 8 bytes of a name, zero-padded, big-endian: when two differ, they order the
    // names as the full text does.
    fn prefix(s: &str) -> u64 {
        let mut w = [0u8; 8];
        let n = s.len().min(8);
        if let (Some(dst), Some(src)) = (w.get_mut(..n), s.as_bytes().get(..n)) {
            dst.copy_from_slice(src);
        }
        u64::from_be_bytes(w)
    }
    // Namespaces are few: each gets an id as first met (runs of one namespace, the usual
    // input order, look the map up once), then its rank in text order.
    let mut ids: KeyedMap<&str, u32> = keyed_map(64, hash);
    let mut namespaces: Vec<&str> = Vec::new();
    let mut of: Vec<u32> = Vec::with_capacity(found.len());
    // In front of the map, a small table of recent namespaces indexed by a cheap unkeyed
    // hash: a hit (checked against the whole name) spares the map its keyed hash; crafted
    // collisions only send lookups on to the map.
    let mut recent: [(&str, u32); RECENT] = [("", 0); RECENT];
    let mut filled = [false; RECENT];
    for c in found {
        let ns = c.key.namespace;
        let at = recent_slot(ns);
        let id = match (recent.get(at), filled.get(at)) {
            (Some(&(name, id)), Some(true)) if same_name(name, ns) => id,
            _ => {
                let id = *ids.entry(ns).or_insert_with(|| {
                    namespaces.push(ns);
                    (namespaces.len() - 1) as u32
                });
                if let (Some(r), Some(f)) = (recent.get_mut(at), filled.get_mut(at)) {
                    *r = (ns, id);
                    *f = true;
                }
                id
            }
        };
        of.push(id);
    }
    let mut by_text: Vec<u32> = (0..namespaces.len() as u32).collect();
    by_text.sort_unstable_by_key(|&id| namespaces.get(id as usize).copied());
    let mut rank = vec![0u32; namespaces.len()];
    for (r, &id) in (0u32..).zip(&by_text) {
        if let Some(slot) = rank.get_mut(id as usize) {
            *slot = r;
        }
    }
    for id in &mut of {
        *id = rank.get(*id as usize).copied().unwrap_or(0);
    }
    // Counting sort by namespace rank; in each namespace, one integer a port: name prefix,
    // input position (input positions past 32 bits only make the runs below longer).
    // Sorting them sorts by name, except within runs of one name prefix, which are sorted
    // again in full.
    let mut starts = vec![0usize; namespaces.len() + 1];
    for &r in &of {
        if let Some(n) = starts.get_mut(r as usize + 1) {
            *n += 1;
        }
    }
    for i in 1..starts.len() {
        starts[i] += starts[i - 1];
    }
    let mut next = starts.clone();
    let mut order: Vec<u128> = vec![0; found.len()];
    for (i, (c, &r)) in found.iter().zip(&of).enumerate() {
        if let Some(at) = next.get_mut(r as usize)
            && let Some(slot) = order.get_mut(*at)
        {
            *slot = (u128::from(prefix(c.key.name)) << 32) | (i as u128 & 0xffff_ffff);
            *at += 1;
        }
    }
    let big = found.len() > 0xffff_ffff;
    let at = |k: u128| (k & 0xffff_ffff) as usize;
    let name = |k: u128| found.get(at(k)).map(|c| c.key);
    for w in starts.windows(2) {
        let Some(bucket) = order.get_mut(w[0]..w[1]) else {
            continue;
        };
        bucket.sort_unstable();
        let mut start = 0;
        while let Some(&first) = bucket.get(start) {
            let mut end = start + 1;
            while bucket.get(end).is_some_and(|k| k >> 32 == first >> 32) {
                end += 1;
            }
            if (end - start > 1 || big)
                && let Some(run) = bucket.get_mut(start..end)
            {
                run.sort_by(|&a, &b| name(a).cmp(&name(b)).then(at(a).cmp(&at(b))));
            }
            start = end;
        }
    }
    // Of a run of one name, any stands for all (they read the same Service port).
    // Namespaces' buckets hold different names; in one, names of different prefixes differ:
    // only neighbours of one prefix are compared in full.
    let mut out: Vec<u32> = Vec::with_capacity(order.len());
    for w in starts.windows(2) {
        let Some(bucket) = order.get(w[0]..w[1]) else {
            continue;
        };
        let mut prev: Option<u128> = None;
        for &k in bucket {
            if prev.is_none_or(|p| p >> 32 != k >> 32 || name(p) != name(k)) {
                out.push(at(k) as u32);
            }
            prev = Some(k);
        }
    }
    out
}

/// Slots of `sorted_unique`'s table of recent namespaces.
const RECENT: usize = 256;

/// A namespace's slot in `sorted_unique`'s table of recent namespaces: its length and its
/// first and last bytes (up to 8 each), mixed by a folded multiply.
#[inline]
fn recent_slot(s: &str) -> usize {
    let b = s.as_bytes();
    let w8 = |c: Option<&[u8; 8]>| c.map_or(0, |c| u64::from_le_bytes(*c));
    let w4 = |c: Option<&[u8; 4]>| c.map_or(0, |c| u64::from(u32::from_le_bytes(*c)));
    let words = match b.len() {
        8.. => w8(b.first_chunk()) ^ w8(b.last_chunk()).rotate_left(29),
        4..8 => w4(b.first_chunk()) | (w4(b.last_chunk()) << 32),
        _ => b.iter().fold(0u64, |h, &c| (h << 8) | u64::from(c)),
    };
    // Both halves of the 128-bit product: names that differ only in their last bytes (the
    // top bits of the words) still spread over the slots.
    let wide = u128::from(words ^ b.len() as u64) * 0x9e37_79b9_7f4a_7c15;
    ((wide >> 64) as u64 ^ wide as u64) as usize % RECENT
}

/// Buffers reused from one service port to the next.
#[derive(Default)]
struct Scratch<'a> {
    endpoints: Vec<ProxyEndpoint<'a>>,
    /// The port's endpoints, when none has hints.
    plain: Vec<PlainEndpoint>,
    /// The endpoints of every port built so far: each port's, then those of its narrower
    /// lists that are not all of them.
    shared: Vec<Endpoint>,
    /// Per port built, its four lists (endpoints, cluster, local, reachable) as runs of
    /// `shared`.
    spans: Vec<[std::ops::Range<usize>; 4]>,
    /// The port's name as text.
    name: String,
}

fn of_family(ip: IpAddr, family: IpFamily) -> bool {
    IpFamily::of(ip) == family
}

/// The Service's ClusterIP of `family` (`Service::cluster_ip_for_family`, parsed sloppily).
/// Without `ipFamilies`, `clusterIP` is that family's when it parses as an address of it:
/// parsed once.
fn cluster_ip(svc: &Service, family: IpFamily) -> Option<IpAddr> {
    let spec = svc.spec();
    match spec.ip_families.as_deref() {
        None | Some([]) => parse_ip_sloppy(spec.cluster_ip.as_deref()?).filter(|ip| of_family(*ip, family)),
        Some(_) => parse_ip_sloppy(svc.cluster_ip_for_family(family.as_str())?),
    }
}

/// One service port's info, or `None` when kube-proxy would not program it.
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
fn port_info<'a>(
    svc: &Service,
    p: &svcnet_topology::ServicePortName<'_>,
    index: &SliceIndex<'a>,
    slices: &ServiceSlices<'_, 'a>,
    family: IpFamily,
    node: &NodeTopology,
    options: &SelectOptions,
    scratch: &mut Scratch<'a>,
) -> Option<ServicePortInfo> {
    let mut out = Vec::with_capacity(1);
    let local = index.local_node(&node.name);
    let part = service_part(svc, p.port, p.protocol, family)?;
    port_info_into(
        part, p, index, slices, family, node, local, options, scratch, &mut out,
    );
    out.pop()
}

/// What a service port's info reads of its Service (all but its name and endpoints).
struct ServicePart {
    protocol: Protocol,
    cluster_ip: IpAddr,
    port: u16,
    node_port: u16,
    /// External IPs, load-balancer VIPs and source ranges; `None` when all are empty (as
    /// they usually are: the part stays small).
    lists: Option<Box<PartLists>>,
    session_affinity_timeout: Option<u32>,
    external_policy_local: bool,
    internal_policy_local: bool,
    health_check_node_port: u16,
}

/// The lists of a [`ServicePart`].
struct PartLists {
    external_ips: Vec<IpAddr>,
    load_balancer_vips: Vec<IpAddr>,
    source_ranges: Vec<IpNet>,
}

/// What the info of service port (`port`, `protocol_text`) of `svc` reads of the Service, or
/// `None` when kube-proxy would not program the port.
fn service_part(svc: &Service, port: &str, protocol_text: &str, family: IpFamily) -> Option<ServicePart> {
    let spec = svc.spec();
    let protocol = Protocol::parse(protocol_text)?;
    let cluster_ip = cluster_ip(svc, family)?;
    let sp = spec
        .ports()
        .iter()
        .rev()
        .find(|sp| same_short(sp.name(), port) && same_short(sp.protocol(), protocol_text))?;
    let port = u16::try_from(sp.port).ok()?;
    let node_port = sp.node_port.and_then(|n| u16::try_from(n).ok()).unwrap_or(0);
    // The type as given: kube-proxy reads the object as the API server stored it (where an
    // absent type is defaulted to ClusterIP); kube-oracle, like kube-proxy's tests, feeds it
    // undefaulted, and an absent type is then not ClusterIP (`ExternallyAccessible`).
    let typ = spec.type_.as_deref().unwrap_or("");
    // Most Services have neither external IPs nor load-balancer ingress: no list is built.
    let external_ips: Vec<IpAddr> = match spec.external_ips.as_deref() {
        None | Some([]) => Vec::new(),
        Some(list) => list
            .iter()
            .filter_map(|s| parse_ip_sloppy(s))
            .filter(|ip| of_family(*ip, family))
            .collect(),
    };
    let externally_accessible_type = typ == "LoadBalancer"
        || typ == "NodePort"
        || (typ == "ClusterIP" && !spec.external_ips.as_deref().unwrap_or(&[]).is_empty());
    let external_policy_local =
        externally_accessible_type && spec.external_traffic_policy.as_deref() == Some("Local");
    let internal_policy_local = spec.internal_traffic_policy.as_deref() == Some("Local");
    let mut source_ranges: Vec<IpNet> = Vec::new();
    let mut zero = false;
    for r in spec.load_balancer_source_ranges.iter().flatten() {
        let Some((ip, prefix)) = parse_cidr_sloppy(r.trim()) else {
            continue;
        };
        let Ok(net) = IpNet::new(ip, prefix) else { continue };
        if !of_family(net.addr(), family) {
            continue;
        }
        if prefix == 0 {
            zero = true;
        }
        source_ranges.push(net.trunc());
    }
    if zero {
        source_ranges.clear();
    }
    let load_balancer_vips: Vec<IpAddr> = match svc
        .status
        .as_ref()
        .and_then(|s| s.load_balancer.as_ref())
        .and_then(|lb| lb.ingress.as_deref())
    {
        None | Some([]) => Vec::new(),
        Some(ingress) => ingress
            .iter()
            .filter(|ing| ing.ip_mode.as_deref().is_none_or(|m| m == "VIP"))
            .filter_map(|ing| parse_ip_sloppy(ing.ip.as_deref().filter(|s| !s.is_empty())?))
            .filter(|ip| of_family(*ip, family))
            .collect(),
    };
    let session_affinity_timeout = (spec.session_affinity.as_deref() == Some("ClientIP")).then(|| {
        spec.session_affinity_config
            .as_ref()
            .and_then(|c| c.client_ip.as_ref())
            .and_then(|c| c.timeout_seconds)
            .and_then(|t| u32::try_from(t).ok())
            .unwrap_or(10800)
    });
    let health_check_node_port = if typ == "LoadBalancer" && external_policy_local {
        spec.health_check_node_port
            .and_then(|n| u16::try_from(n).ok())
            .unwrap_or(0)
    } else {
        0
    };
    let lists = (!(external_ips.is_empty() && load_balancer_vips.is_empty() && source_ranges.is_empty()))
        .then(|| {
            Box::new(PartLists {
                external_ips,
                load_balancer_vips,
                source_ranges,
            })
        });
    Some(ServicePart {
        protocol,
        cluster_ip,
        port,
        node_port,
        lists,
        session_affinity_timeout,
        external_policy_local,
        internal_policy_local,
        health_check_node_port,
    })
}

/// Appends the info of service port `p` (what it reads of its Service: `part`) to `out`,
/// built in place.
#[inline(never)]
#[allow(clippy::too_many_arguments)]
fn port_info_into<'a>(
    part: ServicePart,
    p: &svcnet_topology::ServicePortName<'_>,
    index: &SliceIndex<'a>,
    slices: &ServiceSlices<'_, 'a>,
    family: IpFamily,
    node: &NodeTopology,
    local: LocalNode,
    options: &SelectOptions,
    scratch: &mut Scratch<'a>,
    out: &mut Vec<ServicePortInfo>,
) {
    let ServicePart {
        protocol,
        cluster_ip,
        port,
        node_port,
        lists,
        session_affinity_timeout,
        external_policy_local,
        internal_policy_local,
        health_check_node_port,
    } = part;
    let (external_ips, load_balancer_vips, source_ranges) = match lists {
        Some(l) => {
            let PartLists {
                external_ips,
                load_balancer_vips,
                source_ranges,
            } = *l;
            (external_ips, load_balancer_vips, source_ranges)
        }
        None => (Vec::new(), Vec::new(), Vec::new()),
    };
    let policy = PortPolicy {
        internal_local: internal_policy_local,
        external_local: external_policy_local,
        externally_accessible: node_port != 0 || !external_ips.is_empty() || !load_balancer_vips.is_empty(),
    };
    // Usually no endpoint has hints: the port is read as plain endpoints (address, port and
    // conditions), else in full, with the hints that categorize it.
    let plain = &mut scratch.plain;
    plain.clear();
    let (has_endpoints, endpoint_hints_digest, lists) =
        if slices.plain_port_endpoints(plain, p.port, p.protocol, local, *options) {
            let eps = &mut scratch.endpoints;
            eps.clear();
            index.service_port_endpoints(eps, p, family, &node.name, *options);
            let cats = Categories::of(eps, &policy, node, options);
            let lists = push_lists(&mut scratch.shared, eps, Endpoint::of, |e| {
                u8::from(cats.in_cluster(e, node)) | (u8::from(cats.in_local(e)) << 1)
            });
            (cats.has_any, hints_digest(eps), lists)
        } else {
            let cats = Categories::of_plain(plain, &policy);
            let lists = push_lists(&mut scratch.shared, plain, Endpoint::of_plain, |e| {
                u8::from(cats.in_cluster_plain(e)) | (u8::from(cats.in_local_plain(e)) << 1)
            });
            (cats.has_any, 0, lists)
        };
    scratch.spans.push(lists);
    let name = ServicePortName {
        namespace: CompactString::from(p.namespace),
        name: CompactString::from(p.name),
        port: CompactString::from(p.port),
        protocol,
    };
    let text = &mut scratch.name;
    text.clear();
    text.push_str(p.namespace);
    text.push('/');
    text.push_str(p.name);
    if !p.port.is_empty() {
        text.push(':');
        text.push_str(p.port);
    }
    let name_string = CompactString::from(text.as_str());
    out.push(ServicePortInfo {
        name_string,
        name,
        protocol,
        cluster_ip,
        port,
        node_port,
        external_ips,
        load_balancer_vips,
        load_balancer_source_ranges: source_ranges,
        session_affinity_timeout,
        external_policy_local,
        internal_policy_local,
        health_check_node_port,
        // Set by the caller, as runs of the model's shared endpoints (`scratch.spans`).
        cluster_endpoints: EndpointList::default(),
        local_endpoints: EndpointList::default(),
        all_locally_reachable: EndpointList::default(),
        endpoints: EndpointList::default(),
        has_endpoints,
        endpoint_hints_digest,
    });
}

/// `a == b` for short texts (port names, protocols) without a call to `memcmp`: lengths
/// first, then texts of up to 8 bytes as one or two overlapping small words.
#[inline]
fn same_short(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let w4 = |c: Option<&[u8; 4]>| c.map(|c| u32::from_le_bytes(*c));
    let w2 = |c: Option<&[u8; 2]>| c.map(|c| u16::from_le_bytes(*c));
    match a.len() {
        0 => true,
        1 => a.first() == b.first(),
        2..4 => w2(a.first_chunk()) == w2(b.first_chunk()) && w2(a.last_chunk()) == w2(b.last_chunk()),
        4..=8 => w4(a.first_chunk()) == w4(b.first_chunk()) && w4(a.last_chunk()) == w4(b.last_chunk()),
        _ => a == b,
    }
}

/// Appends a port's endpoints (`to` makes each one; `place` tells whether it is in the cluster
/// list, 1, and in the local list, 2) to `shared`, then those of its narrower lists that are
/// not all of them: the port's four lists (endpoints, cluster, local, reachable) as runs of
/// `shared`.
fn push_lists<T>(
    shared: &mut Vec<Endpoint>,
    items: &[T],
    to: impl Fn(&T) -> Endpoint,
    place: impl Fn(&T) -> u8,
) -> [std::ops::Range<usize>; 4] {
    let first = shared.len();
    shared.extend(items.iter().map(&to));
    let endpoints = first..shared.len();
    let (mut in_cluster, mut in_local, mut reachable) = (0usize, 0usize, 0usize);
    for t in items {
        let pl = place(t);
        in_cluster += usize::from(pl & 1);
        in_local += usize::from(pl >> 1);
        reachable += usize::from(pl != 0);
    }
    let mut pick = |count: usize, mask: u8| -> std::ops::Range<usize> {
        if count == endpoints.len() {
            return endpoints.clone();
        }
        if count == 0 {
            return 0..0;
        }
        let at = shared.len();
        shared.extend(items.iter().filter(|t| place(t) & mask != 0).map(&to));
        at..shared.len()
    };
    let cluster_endpoints = pick(in_cluster, 1);
    let local_endpoints = pick(in_local, 2);
    // The union holds each of the two: of its size, it is that one.
    let all_locally_reachable = if reachable == in_cluster {
        cluster_endpoints.clone()
    } else if reachable == in_local {
        local_endpoints.clone()
    } else {
        pick(reachable, 3)
    };
    [
        endpoints,
        cluster_endpoints,
        local_endpoints,
        all_locally_reachable,
    ]
}

/// A digest of the endpoints' hints, each endpoint's zone and node names taken as sets.
fn hints_digest(endpoints: &[ProxyEndpoint<'_>]) -> u64 {
    use std::hash::{DefaultHasher, Hash, Hasher};
    if endpoints
        .iter()
        .all(|e| e.zone_hints.is_empty() && e.node_hints.is_empty())
    {
        return 0;
    }
    let mut h = DefaultHasher::new();
    for e in endpoints {
        let mut zones: Vec<&str> = e.zone_hints.iter().map(|z| z.name.as_str()).collect();
        zones.sort_unstable();
        zones.dedup();
        let mut nodes: Vec<&str> = e.node_hints.iter().map(|n| n.name.as_str()).collect();
        nodes.sort_unstable();
        nodes.dedup();
        (zones, nodes).hash(&mut h);
    }
    h.finish()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use svcnet_topology::{NodeView, categorize};

    use super::*;

    /// The model as first written: through a [`NodeView`] and [`categorize`], with a map of
    /// seen names and a sort of the infos. The build must give the same model.
    fn reference(
        index: &SliceIndex<'_>,
        services: &[Service],
        node: Option<&Node>,
        config: &ProxyConfig,
    ) -> ProxyModel {
        let family = config.family();
        let topology = match node {
            Some(n) => NodeTopology {
                name: config.node_name.clone(),
                zone: NodeTopology::from_node(n).zone,
            },
            None => NodeTopology::new(config.node_name.clone(), ""),
        };
        let options = SelectOptions {
            node_hints: config.node_hints,
        };
        let mut by_name: HashMap<(&str, &str), &Service> = HashMap::new();
        for s in services {
            by_name.insert((s.metadata.namespace(), s.metadata.name()), s);
        }
        let view = NodeView::from_index(index, services, topology.clone(), options);
        let mut ports: Vec<ServicePortInfo> = Vec::new();
        let mut total_endpoints = 0;
        let mut seen: HashMap<ServicePortName, usize> = HashMap::new();
        for p in view.ports().filter(|p| p.family == family) {
            let Some(svc) = by_name.get(&(p.name.namespace, p.name.name)).copied() else {
                continue;
            };
            let Some(mut info) = port_info(
                svc,
                &p.name,
                index,
                &index.service(p.name.namespace, p.name.name, family),
                family,
                &topology,
                &options,
                &mut Scratch::default(),
            ) else {
                continue;
            };
            // The endpoints and their categories as the view and `categorize` give them.
            let sel = categorize(p.endpoints, &p.policy, &topology, &options);
            let list = |v: &[&ProxyEndpoint<'_>]| v.iter().map(|e| Endpoint::of(e)).collect::<EndpointList>();
            info.endpoints = p.endpoints.iter().map(Endpoint::of).collect();
            info.cluster_endpoints = sel.cluster.as_deref().map(list).unwrap_or_default();
            info.local_endpoints = sel.local.as_deref().map(list).unwrap_or_default();
            info.all_locally_reachable = list(sel.all_reachable());
            info.has_endpoints = sel.has_any;
            info.endpoint_hints_digest = hints_digest(p.endpoints);
            assert_eq!(info.name_string, info.name.to_string());
            match seen.get(&info.name) {
                Some(&i) => {
                    total_endpoints -= ports[i].endpoints.len();
                    total_endpoints += info.endpoints.len();
                    ports[i] = info;
                }
                None => {
                    seen.insert(info.name.clone(), ports.len());
                    total_endpoints += info.endpoints.len();
                    ports.push(info);
                }
            }
        }
        ports.sort_by(|a, b| a.name.cmp(&b.name));
        ProxyModel {
            family,
            node: topology,
            ports,
            total_endpoints,
            digests: ServiceDigests::default(),
        }
    }

    /// The Services, slices and Nodes of a `v1` `List`.
    fn objects(state: &serde_json::Value) -> (Vec<Service>, Vec<EndpointSlice>, Vec<Node>) {
        let set = svcnet_test_support::objects::object_set(state).expect("a v1 List");
        (set.services, set.endpoint_slices, set.nodes)
    }

    fn check_against_reference(services: &[Service], slices: &[EndpointSlice], nodes: &[Node], what: &str) {
        let index = SliceIndex::build(slices);
        let mut names: Vec<&str> = nodes.iter().map(|n| n.metadata.name()).collect();
        names.push("elsewhere");
        for (i, name) in names.iter().enumerate() {
            let node = nodes.iter().find(|n| n.metadata.name() == *name);
            for ip in ["192.168.0.2", "fd00::2"] {
                let mut config = ProxyConfig::new(*name, ip.parse().unwrap());
                config.node_hints = i % 3 != 1;
                let got = ProxyModel::from_index(&index, services, node, &config);
                let want = reference(&index, services, node, &config);
                assert_eq!(got, want, "{what}, node {name}, {ip}");
                if i == 0 {
                    check_slice_digests(services, slices, node, &config, what);
                }
            }
        }
    }

    /// The slice digest of every Service of the built model is the one of all its slices
    /// of the family (whether the index holds them or not), and none of the model's
    /// Services is left without one.
    fn check_slice_digests(
        services: &[Service],
        slices: &[EndpointSlice],
        node: Option<&Node>,
        config: &ProxyConfig,
        what: &str,
    ) {
        let model = ProxyModel::build(services, slices, node, config);
        let all = slice_digests(slices, config.family(), KeyedState::default());
        let mut seen = 0;
        for_each_service(&model.ports, |(ns, name), _| {
            let want = all.get(&(ns, name)).copied().unwrap_or(0);
            assert_eq!(model.slice_digest(ns, name), Some(want), "{what}: {ns}/{name}");
            seen += 1;
        });
        assert_eq!(
            model.digests.slices.as_ref().map(|(d, _)| d.len()),
            Some(seen),
            "{what}"
        );
    }

    #[test]
    fn the_model_is_the_same_under_every_hash_key() {
        for seed in 1..=10 {
            let case = svcnet_testgen::generate(seed);
            for state in &case.states {
                let (services, slices, nodes) = objects(state);
                let node = nodes.first();
                let name = node.map_or("elsewhere", |n| n.metadata.name());
                let config = ProxyConfig::new(name, "192.168.0.2".parse().unwrap());
                let mut keyed = config.clone();
                keyed.hash_key = KeyedState::new([0x0123_4567_89ab_cdef, 42]);
                assert_ne!(keyed, config);
                let want = ProxyModel::build(&services, &slices, node, &config);
                let got = ProxyModel::build(&services, &slices, node, &keyed);
                assert_eq!(got, want, "seed {seed}");
                for p in &want.ports {
                    let (ns, name) = (p.name.namespace.as_str(), p.name.name.as_str());
                    assert!(want.slice_digest(ns, name).is_some(), "seed {seed}");
                    assert_eq!(
                        got.slice_digest(ns, name),
                        want.slice_digest(ns, name),
                        "seed {seed}"
                    );
                }
                assert_eq!(*got.service_digests(), *want.service_digests(), "seed {seed}");
            }
        }
    }

    #[test]
    fn the_build_is_the_reference_model_on_generated_clusters() {
        let mut ports = 0;
        for seed in 1..=60 {
            let case = svcnet_testgen::generate(seed);
            for (k, state) in case.states.iter().enumerate() {
                let (services, slices, nodes) = objects(state);
                check_against_reference(&services, &slices, &nodes, &format!("seed {seed} state {k}"));
                ports += services.len();
            }
        }
        assert!(ports > 300, "{ports}");
    }

    #[test]
    fn the_build_is_the_reference_model_on_odd_input() {
        // Repeated Services (the last wins, even when it lacks a port or a family or is
        // skipped), repeated ports, repeated and unsorted addresses, names sharing 8-byte
        // prefixes, unknown protocols, ports without numbers.
        let services: Vec<Service> = serde_json::from_value(serde_json::json!([
            {"metadata": {"name": "aaaaaaaa-web", "namespace": "namespace-1"},
             "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "p", "port": 80}, {"name": "q", "port": 81, "protocol": "UDP"},
                                                        {"name": "p", "port": 82}, {"name": "x", "port": 83, "protocol": "ICMP"}]}},
            {"metadata": {"name": "aaaaaaaa-api", "namespace": "namespace-1"},
             "spec": {"clusterIP": "10.96.0.2", "clusterIPs": ["10.96.0.2", "fd00::2"], "ipFamilies": ["IPv4", "IPv6"],
                      "internalTrafficPolicy": "Local", "ports": [{"name": "p", "port": 80}]}},
            {"metadata": {"name": "aaaaaaaa-web", "namespace": "namespace-1"},
             "spec": {"clusterIP": "10.96.0.3", "type": "NodePort", "externalTrafficPolicy": "Local",
                      "ports": [{"name": "p", "port": 90, "nodePort": 30090}]}},
            {"metadata": {"name": "gone", "namespace": "namespace-0"},
             "spec": {"clusterIP": "10.96.0.4", "ports": [{"name": "p", "port": 80}]}},
            {"metadata": {"name": "gone", "namespace": "namespace-0"},
             "spec": {"clusterIP": "None", "ports": [{"name": "p", "port": 80}]}},
            {"metadata": {"name": "undefaulted", "namespace": "namespace-0"},
             "spec": {"ports": [{"port": 80}]}},
            {"metadata": {"name": "v6only", "namespace": "namespace-0"},
             "spec": {"clusterIP": "fd00::7", "ports": [{"name": "p", "port": 80}]}},
            {"metadata": {"name": "v6only", "namespace": "namespace-0"},
             "spec": {"clusterIP": "10.96.0.7", "ports": [{"name": "p", "port": 80}]}}
        ]))
        .unwrap();
        let slice =
            |ns: &str, svc: &str, name: &str, ty: &str, ports: serde_json::Value, eps: serde_json::Value| {
                serde_json::from_value::<EndpointSlice>(serde_json::json!({
                "metadata": {"name": name, "namespace": ns, "labels": {"kubernetes.io/service-name": svc}},
                "addressType": ty, "ports": ports, "endpoints": eps}))
                .unwrap()
            };
        let ports = serde_json::json!([{"name": "p", "port": 8080}, {"name": "q", "port": 53, "protocol": "UDP"},
                                       {"name": "x", "port": 1, "protocol": "ICMP"}, {"name": "p", "port": 0}]);
        let eps = serde_json::json!([
            {"addresses": ["10.0.0.10"], "nodeName": "n1"},
            {"addresses": ["10.0.0.9"], "nodeName": "n2", "conditions": {"ready": false, "serving": true, "terminating": true}},
            {"addresses": ["10.0.0.010"], "nodeName": "n2", "conditions": {"ready": false, "terminating": true}},
            {"addresses": ["10.0.0.1"], "nodeName": "n1", "conditions": {"ready": false, "serving": true, "terminating": true}},
            {"addresses": ["fd00::1"], "nodeName": "n1"},
            {"addresses": ["bogus"]},
            {"addresses": []}
        ]);
        let eps6 = serde_json::json!([
            {"addresses": ["fd00::10"], "nodeName": "n1", "hints": {"forZones": [{"name": "a"}]}},
            {"addresses": ["fd00::9"], "nodeName": "n2", "hints": {"forZones": [{"name": "b"}]}},
            {"addresses": ["fd00::0:9"], "nodeName": "n1", "hints": {"forZones": [{"name": "b"}]}}
        ]);
        let slices = vec![
            slice(
                "namespace-1",
                "aaaaaaaa-web",
                "b",
                "IPv4",
                ports.clone(),
                eps.clone(),
            ),
            slice(
                "namespace-1",
                "aaaaaaaa-web",
                "a",
                "IPv4",
                serde_json::json!([{"name": "p", "port": 9090}]),
                eps.clone(),
            ),
            slice(
                "namespace-1",
                "aaaaaaaa-api",
                "a",
                "IPv4",
                ports.clone(),
                eps.clone(),
            ),
            slice(
                "namespace-1",
                "aaaaaaaa-api",
                "a6",
                "IPv6",
                ports.clone(),
                eps6.clone(),
            ),
            slice("namespace-0", "gone", "g", "IPv4", ports.clone(), eps.clone()),
            slice(
                "namespace-0",
                "undefaulted",
                "u",
                "IPv4",
                serde_json::json!([{"name": "", "port": 80}]),
                eps.clone(),
            ),
            slice("namespace-0", "v6only", "v", "IPv6", ports.clone(), eps6.clone()),
        ];
        let nodes: Vec<Node> = serde_json::from_value(serde_json::json!([
            {"metadata": {"name": "n1", "labels": {"topology.kubernetes.io/zone": "a"}}},
            {"metadata": {"name": "n2", "labels": {"topology.kubernetes.io/zone": "b"}}}
        ]))
        .unwrap();
        check_against_reference(&services, &slices, &nodes, "odd input");
        let config = ProxyConfig::new("n1", "192.168.0.2".parse().unwrap());
        let m = ProxyModel::build(&services, &slices, None, &config);
        let names: Vec<&str> = m.ports.iter().map(|p| p.name_string.as_str()).collect();
        assert_eq!(
            names,
            // Without a ClusterIP, `undefaulted` is left out; the last `gone` is headless.
            [
                "namespace-0/v6only:p",
                "namespace-1/aaaaaaaa-api:p",
                "namespace-1/aaaaaaaa-web:p"
            ]
        );
        // The last `aaaaaaaa-web` wins: port 90, from its only port.
        assert_eq!(m.ports[2].port, 90);
        assert_eq!(
            m.total_endpoints,
            m.ports.iter().map(|p| p.endpoints.len()).sum::<usize>()
        );
    }

    #[test]
    fn slice_digests_change_with_any_slice_content() {
        let s = |eps: serde_json::Value, labels: serde_json::Value| -> EndpointSlice {
            serde_json::from_value(serde_json::json!({
                "metadata": {"name": "web-1", "namespace": "ns", "labels": labels},
                "addressType": "IPv4", "ports": [{"name": "p", "port": 8080}], "endpoints": eps}))
            .unwrap()
        };
        let labels = serde_json::json!({"kubernetes.io/service-name": "web"});
        let base = s(serde_json::json!([{"addresses": ["10.0.0.1"]}]), labels.clone());
        let digest = |slices: &[EndpointSlice]| -> HashMap<(String, String), u64> {
            slice_digests(slices, IpFamily::V4, KeyedState::default())
                .into_iter()
                .map(|((ns, name), d)| ((ns.to_owned(), name.to_owned()), d))
                .collect()
        };
        let d = digest(std::slice::from_ref(&base));
        assert_eq!(d.len(), 1);
        assert_eq!(d, digest(std::slice::from_ref(&base)));
        for other in [
            s(serde_json::json!([{"addresses": ["10.0.0.2"]}]), labels.clone()),
            s(
                serde_json::json!([{"addresses": ["10.0.0.1"], "hints": {"forZones": [{"name": "a"}]}}]),
                labels.clone(),
            ),
            s(
                serde_json::json!([{"addresses": ["10.0.0.1"], "conditions": {"ready": true}}]),
                labels.clone(),
            ),
            s(
                serde_json::json!([{"addresses": ["10.0.0.1"]}]),
                serde_json::json!({"kubernetes.io/service-name": "web", "x": "y"}),
            ),
            s(
                serde_json::json!([{"addresses": ["10.0.0.1"], "nodeName": "n1"}]),
                labels.clone(),
            ),
            s(
                serde_json::json!([{"addresses": ["10.0.0.1"], "zone": "a"}]),
                labels.clone(),
            ),
            s(
                serde_json::json!([{"addresses": ["10.0.0.1"], "hostname": "h"}]),
                labels.clone(),
            ),
            s(
                serde_json::json!([{"addresses": ["10.0.0.1"], "targetRef": {"kind": "Pod", "name": "p"}}]),
                labels.clone(),
            ),
            s(
                serde_json::json!([{"addresses": ["10.0.0.1"], "conditions": {"serving": false}}]),
                labels.clone(),
            ),
            s(
                serde_json::json!([{"addresses": ["10.0.0.1"], "conditions": {"terminating": false}}]),
                labels.clone(),
            ),
            s(
                serde_json::json!([{"addresses": ["10.0.0.1", "10.0.0.2"]}]),
                labels.clone(),
            ),
            s(
                serde_json::json!([{"addresses": ["10.0.0.1"]}, {"addresses": ["10.0.0.2"]}]),
                labels.clone(),
            ),
            s(
                serde_json::json!([{"addresses": ["10.0.0.1"]}, {"addresses": []}]),
                labels.clone(),
            ),
            s(serde_json::json!([]), labels.clone()),
        ] {
            assert_ne!(d, digest(std::slice::from_ref(&other)));
        }
        // Order-independent over a Service's slices.
        let mut second = base.clone();
        second.metadata.name = Some("web-2".into());
        assert_eq!(digest(&[base.clone(), second.clone()]), digest(&[second, base]));
        assert!(digest(&[]).is_empty());
    }

    #[test]
    fn slice_digests_tell_every_address_and_node_name_apart() {
        // Texts of every length class `text_words` has (and their edges): all of them tell
        // apart, and so does each from itself with one byte changed, at every position.
        let slice = |address: &str, node: Option<&str>| -> u64 {
            let mut ep = serde_json::json!({"addresses": [address]});
            if let Some(n) = node {
                ep["nodeName"] = serde_json::json!(n);
            }
            slice_digest(
                &serde_json::from_value(serde_json::json!({
                "metadata": {"name": "web-1", "namespace": "ns", "labels": {"kubernetes.io/service-name": "web"}},
                "addressType": "IPv4", "endpoints": [ep]}))
                .unwrap(),
            )
        };
        let mut bases: HashMap<u64, String> = HashMap::new();
        let mut distinct = |d: u64, what: String| {
            if let Some(before) = bases.insert(d, what.clone()) {
                panic!("{what} and {before} share a digest");
            }
        };
        distinct(slice("10.0.0.1", None), "no node".to_owned());
        for len in (0..=40).chain(250..=260) {
            let base: String = (0..len).map(|i| char::from(b'a' + (i % 23) as u8)).collect();
            let (as_address, as_node) = (slice(&base, Some("n")), slice("10.0.0.1", Some(&base)));
            distinct(as_address, format!("address {base:?}"));
            distinct(as_node, format!("node {base:?}"));
            for at in 0..len {
                let mut b = base.clone().into_bytes();
                b[at] = b'Z';
                let t = String::from_utf8(b).unwrap();
                assert_ne!(slice(&t, Some("n")), as_address, "address {t:?}");
                assert_ne!(slice("10.0.0.1", Some(&t)), as_node, "node {t:?}");
            }
        }
    }

    fn svc(v: serde_json::Value) -> Service {
        serde_json::from_value(v).unwrap()
    }

    fn slice(v: serde_json::Value) -> EndpointSlice {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn service_fields_are_read_for_the_family() {
        let services = vec![svc(serde_json::json!({
            "metadata": {"name": "lb", "namespace": "ns"},
            "spec": {"type": "LoadBalancer", "clusterIP": "172.30.0.041", "clusterIPs": ["172.30.0.041", "fd00::1"],
                     "ipFamilies": ["IPv4", "IPv6"],
                     "externalIPs": ["192.168.99.011", "2001:db8::1"],
                     "loadBalancerSourceRanges": [" 203.0.113.000/025 ", "2001:db8::/64"],
                     "externalTrafficPolicy": "Local", "healthCheckNodePort": 30000,
                     "sessionAffinity": "ClientIP",
                     "ports": [{"name": "p80", "port": 80, "nodePort": 3001, "protocol": "TCP"}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"ip": "5.6.7.8", "ipMode": "Proxy"},
                                                     {"ip": "9.10.11.12", "ipMode": "VIP"}, {"hostname": "x"}]}}
        }))];
        let config = ProxyConfig::new("node", "192.168.0.2".parse().unwrap());
        let m = ProxyModel::build(&services, &[], None, &config);
        assert_eq!(m.ports.len(), 1);
        let p = &m.ports[0];
        assert_eq!(p.cluster_ip.to_string(), "172.30.0.41");
        assert_eq!(p.external_ips, vec!["192.168.99.11".parse::<IpAddr>().unwrap()]);
        assert_eq!(p.load_balancer_vips.len(), 2);
        assert_eq!(
            p.load_balancer_source_ranges,
            vec!["203.0.113.0/25".parse::<IpNet>().unwrap()]
        );
        assert_eq!(p.session_affinity_timeout, Some(10800));
        assert_eq!(p.health_check_node_port, 30000);
        assert!(p.external_policy_local && !p.has_endpoints);
        let v6 = ProxyConfig::new("node", "fd00::2".parse().unwrap());
        let m6 = ProxyModel::build(&services, &[], None, &v6);
        assert_eq!(m6.ports[0].cluster_ip.to_string(), "fd00::1");
        assert_eq!(m6.ports[0].external_ips.len(), 1);
        assert!(m6.ports[0].load_balancer_vips.is_empty());
    }

    #[test]
    fn the_cluster_ip_is_read_as_cluster_ip_for_family_reads_it() {
        let texts = [
            "10.0.0.1",
            "010.0.0.1",
            "fd00::1",
            "::ffff:1.2.3.4",
            "None",
            "",
            "bogus",
            "1.2.3",
            "fd00::01",
        ];
        for text in texts {
            for families in [None, Some(vec!["IPv4"]), Some(vec!["IPv6", "IPv4"]), Some(vec![])] {
                let mut spec = serde_json::json!({"clusterIP": text, "clusterIPs": [text, "10.9.9.9"]});
                if let Some(f) = &families {
                    spec["ipFamilies"] = serde_json::json!(f);
                }
                let s = svc(serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": spec}));
                for family in [IpFamily::V4, IpFamily::V6] {
                    let want = s.cluster_ip_for_family(family.as_str()).and_then(parse_ip_sloppy);
                    assert_eq!(cluster_ip(&s, family), want, "{text:?} {families:?} {family:?}");
                }
            }
        }
    }

    #[test]
    fn recent_slots_are_in_range() {
        // Name equality itself (`short_text_eq`) is tested in svcnet-model.
        for a in [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "abce",
            "ns-1",
            "ns-2",
            "ns-12",
            "ns-13",
            "abcdefgh",
            "abcdefgi",
            "bbcdefgh",
            "kube-system",
            "kube-systen",
            "0123456789abcdef",
            "0123456789abcdeg",
            "1123456789abcdef",
            "0123456789abcdefg",
            "0123456789abcdefh",
        ] {
            assert!(recent_slot(a) < RECENT);
        }
    }

    #[test]
    fn same_short_is_text_equality() {
        let texts = [
            "",
            "a",
            "b",
            "ab",
            "ac",
            "bb",
            "abc",
            "abd",
            "bbc",
            "TCP",
            "UDP",
            "p80",
            "p8080",
            "p8081",
            "q8080",
            "abcdefgh",
            "abcdefgi",
            "bbcdefgh",
            "abcdefghi",
            "abcdefghj",
        ];
        for a in texts {
            for b in texts {
                assert_eq!(same_short(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

    #[test]
    fn zero_source_range_means_allow_all() {
        let services = vec![svc(serde_json::json!({
            "metadata": {"name": "lb", "namespace": "ns"},
            "spec": {"type": "LoadBalancer", "clusterIP": "172.30.0.41",
                     "loadBalancerSourceRanges": ["10.0.0.0/8", "0.0.0.0/0"],
                     "ports": [{"port": 80}]}
        }))];
        let config = ProxyConfig::new("node", "192.168.0.2".parse().unwrap());
        let m = ProxyModel::build(&services, &[], None, &config);
        assert!(m.ports[0].load_balancer_source_ranges.is_empty());
        assert_eq!(m.ports[0].name_string, "ns/lb");
    }

    #[test]
    fn endpoints_are_categorized_for_the_node() {
        let services = vec![svc(serde_json::json!({
            "metadata": {"name": "web", "namespace": "ns"},
            "spec": {"type": "NodePort", "clusterIP": "172.30.0.41", "externalTrafficPolicy": "Local",
                     "ports": [{"name": "p", "port": 80, "nodePort": 30001}]}
        }))];
        let slices = vec![slice(serde_json::json!({
            "metadata": {"name": "web-1", "namespace": "ns", "labels": {"kubernetes.io/service-name": "web"}},
            "addressType": "IPv4", "ports": [{"name": "p", "port": 8080}],
            "endpoints": [{"addresses": ["10.0.0.1"], "nodeName": "me"},
                          {"addresses": ["10.0.0.2"], "nodeName": "other"},
                          {"addresses": ["10.0.0.3"], "nodeName": "other", "conditions": {"ready": false}}]
        }))];
        let config = ProxyConfig::new("me", "192.168.0.2".parse().unwrap());
        let m = ProxyModel::build(&services, &slices, None, &config);
        let p = &m.ports[0];
        assert_eq!(m.total_endpoints, 3);
        assert_eq!(p.cluster_endpoints.len(), 2);
        assert_eq!(p.local_endpoints.len(), 1);
        assert!(p.uses_local_policy() && p.uses_cluster_policy() && p.has_external_endpoints());
        let other = ProxyConfig::new("elsewhere", "192.168.0.3".parse().unwrap());
        let m = ProxyModel::build(&services, &slices, None, &other);
        assert!(!m.ports[0].has_external_endpoints() && m.ports[0].has_internal_endpoints());
    }

    #[test]
    fn skipped_services_are_left_out() {
        let services = vec![
            svc(
                serde_json::json!({"metadata": {"name": "a", "namespace": "ns"}, "spec": {"clusterIP": "", "ports": [{"port": 80}]}}),
            ),
            svc(
                serde_json::json!({"metadata": {"name": "b", "namespace": "ns"}, "spec": {"clusterIP": "None", "ports": [{"port": 80}]}}),
            ),
            svc(serde_json::json!({"metadata": {"name": "c", "namespace": "ns"},
                "spec": {"type": "ExternalName", "clusterIP": "10.0.0.1", "ports": [{"port": 80}]}})),
            svc(
                serde_json::json!({"metadata": {"name": "d", "namespace": "ns"}, "spec": {"clusterIP": "fd00::1", "ports": [{"port": 80}]}}),
            ),
        ];
        let config = ProxyConfig::new("me", "192.168.0.2".parse().unwrap());
        assert!(ProxyModel::build(&services, &[], None, &config).ports.is_empty());
    }
}
