//! EndpointSlices indexed once by Service, for reading nodes' endpoints service port by
//! service port without rescanning every slice.
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/endpointslicecache.go`.

use std::cmp::Ordering;
use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::ops::Range;

use svcnet_model::{EndpointPort, EndpointSlice};

use crate::endpoint::{Ignored, IpFamily, PlainEndpoint, ProxyEndpoint, SelectOptions, ServicePortName};
use svcnet_model::hash::{FastMap, KeyedMap, KeyedState, fast_map, keyed_map, short_text_eq as same_text};

/// (namespace, Service name), borrowed from a slice.
type ServiceKey<'a> = (&'a str, &'a str);

/// A (namespace, Service name) key of the map of the groups whose keyed hashes collide
/// (another group took the hash first): hashed as the pair, compared by lengths and
/// [`fingerprint`]s first.
#[derive(Debug, Clone, Copy)]
struct GroupKey<'a> {
    names: GroupNames<'a>,
}

impl std::hash::Hash for GroupKey<'_> {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        (self.names.namespace, self.names.service).hash(state);
    }
}

impl PartialEq for GroupKey<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.names.same(&other.names)
    }
}

impl Eq for GroupKey<'_> {}

/// A group's (namespace, Service name), with their [`fingerprint`]s: two names up to 16 bytes
/// long are compared without reading their text.
#[derive(Debug, Clone, Copy)]
struct GroupNames<'a> {
    namespace: &'a str,
    service: &'a str,
    /// The fingerprints of the namespace and of the Service's name.
    prints: [u64; 4],
}

impl<'a> GroupNames<'a> {
    #[inline]
    fn new(namespace: &'a str, service: &'a str) -> Self {
        let [a, b] = fingerprint(namespace.as_bytes());
        let [c, d] = fingerprint(service.as_bytes());
        GroupNames {
            namespace,
            service,
            prints: [a, b, c, d],
        }
    }

    #[inline]
    fn same(&self, other: &Self) -> bool {
        let [a, b, c, d] = self.prints;
        let [p, q, r, s] = other.prints;
        let (n, m) = (self.namespace.len(), self.service.len());
        n == other.namespace.len()
            && m == other.service.len()
            && ((a ^ p) | (b ^ q) | (c ^ r) | (d ^ s)) == 0
            && (n <= 16 || self.namespace == other.namespace)
            && (m <= 16 || self.service == other.service)
    }
}

/// The index's (namespace, Service) groups: numbered as met, found by the keyed 64-bit hash
/// of the pair in a small table (16 bytes a slot, which stays in cache), each group's names
/// kept apart to confirm a match. A group whose hash another took first (names chosen to
/// collide would need the key) is found through a map of such groups by name.
#[derive(Debug, Clone)]
struct Groups<'a> {
    hash: KeyedState,
    /// Group number by hash of (namespace, Service name), for the first group of each hash.
    by_hash: FastMap<u64, u32>,
    /// By group number.
    names: Vec<GroupNames<'a>>,
    /// The groups whose hash another group has.
    collided: KeyedMap<GroupKey<'a>, u32>,
}

impl<'a> Groups<'a> {
    fn new(n: usize, hash: KeyedState) -> Self {
        Groups {
            hash,
            by_hash: fast_map(n),
            names: Vec::with_capacity(n),
            collided: keyed_map(0, hash),
        }
    }

    fn len(&self) -> usize {
        self.names.len()
    }

    /// The number of group (`namespace`, `service`), added when new.
    #[inline]
    fn number(&mut self, namespace: &'a str, service: &'a str) -> u32 {
        let h = std::hash::BuildHasher::hash_one(&self.hash, (namespace, service));
        let names = GroupNames::new(namespace, service);
        let next = small(self.names.len());
        match self.by_hash.entry(h) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(next);
                self.names.push(names);
                next
            }
            std::collections::hash_map::Entry::Occupied(o) => {
                let g = *o.get();
                if self.names.get(g as usize).is_some_and(|n| n.same(&names)) {
                    return g;
                }
                let list = &mut self.names;
                *self.collided.entry(GroupKey { names }).or_insert_with(|| {
                    list.push(names);
                    next
                })
            }
        }
    }

    /// The number of group (`namespace`, `service`), if the index has it.
    #[inline]
    fn get(&self, namespace: &str, service: &str) -> Option<usize> {
        let h = std::hash::BuildHasher::hash_one(&self.hash, (namespace, service));
        let g = *self.by_hash.get(&h)? as usize;
        let names = GroupNames::new(namespace, service);
        if self.names.get(g).is_some_and(|n| n.same(&names)) {
            return Some(g);
        }
        self.collided.get(&GroupKey { names }).map(|&g| g as usize)
    }
}

/// Two words that tell apart any two different texts of one length up to 16 bytes: the first
/// and the last 8 bytes (overlapping) of a text of 8 bytes or more, the first and the last 4 of
/// one of 4 to 7, the first, middle and last byte of a shorter one. Longer texts of one length
/// that share these differ in the middle: compare them in full.
#[inline]
pub(crate) fn fingerprint(b: &[u8]) -> [u64; 2] {
    let w8 = |c: Option<&[u8; 8]>| c.map_or(0, |c| u64::from_le_bytes(*c));
    let w4 = |c: Option<&[u8; 4]>| c.map_or(0, |c| u64::from(u32::from_le_bytes(*c)));
    let at = |i: usize| u64::from(b.get(i).copied().unwrap_or(0));
    match b.len() {
        8.. => [w8(b.first_chunk()), w8(b.last_chunk())],
        4..8 => [w4(b.first_chunk()) | (w4(b.last_chunk()) << 32), 0],
        0 => [0, 0],
        n => [at(0) | (at(n / 2) << 8) | (at(n - 1) << 16), 0],
    }
}

/// A usable port of an indexed slice (a name and a valid number), as reading a service port's
/// endpoints matches it: what that needs of the slice's port without reading the slice again.
#[derive(Debug, Clone, Copy)]
struct PortSum {
    /// The name's [`fingerprint`].
    print: [u64; 2],
    /// The name's length.
    len: usize,
    /// Its position in the slice's ports (to read a long name or an odd protocol in full).
    at: usize,
    number: u16,
    /// [`protocol_code`] of its protocol.
    protocol: u8,
}

/// `TCP`, `UDP` and `SCTP` as 1, 2 and 3; any other text as 0 (compared as text).
#[inline]
fn protocol_code(p: &str) -> u8 {
    match p.as_bytes() {
        b"TCP" => 1,
        b"UDP" => 2,
        b"SCTP" => 3,
        _ => 0,
    }
}

/// A service port's name and protocol as [`PortSum`]s are matched against.
#[derive(Clone, Copy)]
struct PortQuery<'q> {
    name: &'q str,
    protocol: &'q str,
    print: [u64; 2],
    code: u8,
}

impl<'q> PortQuery<'q> {
    #[inline]
    fn new(name: &'q str, protocol: &'q str) -> Self {
        PortQuery {
            name,
            protocol,
            print: fingerprint(name.as_bytes()),
            code: protocol_code(protocol),
        }
    }

    /// Whether slice port `p` (of `slice`) is this service port's.
    #[inline]
    fn matches(&self, p: &PortSum, slice: &EndpointSlice) -> bool {
        let [a, b] = self.print;
        let [c, d] = p.print;
        if p.len != self.name.len() || ((a ^ c) | (b ^ d)) != 0 {
            return false;
        }
        let port = slice.ports().get(p.at);
        (p.len <= 16 || port.and_then(|x| x.name.as_deref()) == Some(self.name))
            && if self.code != 0 {
                p.protocol == self.code
            } else {
                port.is_some_and(|x| x.protocol() == self.protocol)
            }
    }
}

/// A slice the proxy reads, with where its parsed addresses sit in the index's `ips` and its
/// usable ports in `ports`.
#[derive(Debug, Clone, Copy)]
struct Entry<'a> {
    slice: &'a EndpointSlice,
    /// Its (namespace, Service) group.
    group: u32,
    /// Its addresses in `ips`, one per endpoint.
    ips: u32,
    ips_end: u32,
    /// Its usable ports in `ports`.
    ports: u32,
    ports_end: u32,
    family: IpFamily,
    /// Its [`slice_digest`](crate::slice_digest) when the index was built with digests, else 0.
    digest: u64,
}

impl Entry<'_> {
    fn ips(&self) -> Range<usize> {
        self.ips as usize..self.ips_end as usize
    }

    fn ports(&self) -> Range<usize> {
        self.ports as usize..self.ports_end as usize
    }
}

/// EndpointSlices as the proxy reads them, indexed once by Service so that views of many
/// nodes can be built from them ([`NodeView::from_index`]) without reading every slice again:
/// the rule compiler builds one view per node on every sync.
///
/// The index borrows the slices: they are grouped by (namespace, Service, family) through a
/// map keyed by borrowed names, each group in slice name order; every endpoint address is
/// parsed once into one flat list; what the proxy leaves out is recorded as it goes. Nothing
/// in it depends on a node.
///
/// ```
/// use svcnet_model::{EndpointSlice, Service};
/// use svcnet_topology::{NodeTopology, NodeView, SelectOptions, SliceIndex};
///
/// let services: Vec<Service> = vec![serde_json::from_str(
///     r#"{"metadata":{"name":"web","namespace":"shop"},"spec":{"clusterIP":"10.96.0.10",
///         "ports":[{"port":80}]}}"#).unwrap()];
/// let slices: Vec<EndpointSlice> = vec![serde_json::from_str(r#"{
///     "metadata":{"name":"web-1","namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},
///     "addressType":"IPv4","ports":[{"name":"","port":8080}],
///     "endpoints":[{"addresses":["10.0.0.1"],"nodeName":"n1"}]}"#).unwrap()];
/// let index = SliceIndex::build(&slices);
/// for node in ["n1", "n2"] {
///     let view = NodeView::from_index(&index, &services, NodeTopology::new(node, ""),
///         SelectOptions::default());
///     let port = view.ports().next().unwrap();
///     assert_eq!(port.endpoints[0].is_local, node == "n1");
/// }
/// ```
///
/// [`NodeView::from_index`]: crate::NodeView::from_index
#[derive(Debug, Clone)]
pub struct SliceIndex<'a> {
    groups: Groups<'a>,
    /// Readable slices in the caller's order.
    entries: Vec<Entry<'a>>,
    /// Indices into `entries` ordered by (group, family, slice name, caller's order).
    sorted: Vec<usize>,
    /// For group `g` and family `f`, `sorted[starts[2g + f]..starts[2g + f + 1]]`.
    starts: Vec<usize>,
    /// The first address of every endpoint of every entry, when it is an IP of the family.
    /// With each, what a plain read of the endpoint needs besides its address: such reads
    /// need not go back to the slices' endpoints.
    ips: Vec<Slot>,
    /// The IPv6 addresses of the slots.
    v6: Vec<Ipv6Addr>,
    /// The usable ports of every entry, in the order of `entries`.
    ports: Vec<PortSum>,
    /// A number for each endpoint node name met (the slots hold these).
    nodes: KeyedMap<&'a str, u32>,
    /// What the proxy leaves out, in the order kube-proxy's per-family caches meet it: IPv4
    /// slices by namespace and name, then IPv6 ones.
    ignored: Vec<(IpFamily, Ignored)>,
}

/// An endpoint's address as the index read it, with its node name, conditions and whether it
/// has hints, as the proxy reads them ([`ServiceSlices::plain_port_endpoints`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Slot {
    /// The first address, when it is an IP of the slice's family: an IPv4 address's bits
    /// (`V4`), or the position of an IPv6 address in the index's `v6` (`V6`).
    addr: u32,
    /// The number of its node name in the index's `nodes` ([`NO_NODE`] without one).
    node: u32,
    /// `READY`, `SERVING`, `TERMINATING` (as read, absent values defaulted), `ZONE_HINTS` and
    /// `NODE_HINTS` (non-empty lists), and `V4` or `V6` when it has an address.
    flags: u8,
}

const READY: u8 = 1;
const SERVING: u8 = 2;
const TERMINATING: u8 = 4;
const ZONE_HINTS: u8 = 8;
const NODE_HINTS: u8 = 16;
const V4: u8 = 32;
const V6: u8 = 64;

/// A slot's node without a name (or a name the index has no number for).
const NO_NODE: u32 = u32::MAX;

/// The proxy's node as one [`SliceIndex`] knows it ([`SliceIndex::local_node`]): a number the
/// index gave the node's name, which tells the endpoints on that node without comparing
/// names. Meaningful only with the index that gave it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LocalNode(u32);

/// Slots of the index's table of recent node names.
const RECENT_NODES: usize = 1024;

/// A node name's slot in the table of recent node names: its length and [`fingerprint`],
/// mixed by a folded multiply (not keyed: a collision only sends the name on to the keyed map).
#[inline]
fn recent_node_slot(b: &[u8]) -> usize {
    let [x, y] = fingerprint(b);
    // Both halves of the 128-bit product, so that every input bit moves the slot (names often
    // differ only in their last bytes, the top bits of the words).
    let wide = u128::from(x ^ y.rotate_left(29) ^ b.len() as u64) * 0x9e37_79b9_7f4a_7c15;
    ((wide >> 64) as u64 ^ wide as u64) as usize % RECENT_NODES
}

/// Numbers node names as the index meets them: a table of recent names (checked against the
/// whole name) in front of a keyed map.
struct NodeNumbers<'a> {
    map: KeyedMap<&'a str, u32>,
    recent: [(&'a str, u32); RECENT_NODES],
}

impl<'a> NodeNumbers<'a> {
    #[inline]
    fn number(&mut self, name: &'a str) -> u32 {
        let at = recent_node_slot(name.as_bytes());
        if let Some(&(known, n)) = self.recent.get(at)
            && n != NO_NODE
            && same_text(known, name)
        {
            return n;
        }
        // Fewer than 2^32 names: every name is an endpoint's (more could not be held).
        let next = u32::try_from(self.map.len()).unwrap_or(NO_NODE);
        let n = *self.map.entry(name).or_insert(next);
        if let Some(r) = self.recent.get_mut(at) {
            *r = (name, n);
        }
        n
    }
}

impl Slot {
    /// The address (`v6`: the index's IPv6 addresses).
    #[inline(always)]
    pub(crate) fn ip(&self, v6: &[Ipv6Addr]) -> Option<IpAddr> {
        if self.flags & V4 != 0 {
            Some(IpAddr::V4(Ipv4Addr::from_bits(self.addr)))
        } else if self.flags & V6 != 0 {
            v6.get(self.addr as usize).map(|a| IpAddr::V6(*a))
        } else {
            None
        }
    }

    /// Whether the endpoint has an address of the slice's family.
    #[inline(always)]
    fn has_ip(&self) -> bool {
        self.flags & (V4 | V6) != 0
    }

    /// The slot of `ep`, with its address `ip` (kept in `v6` when IPv6) and node number.
    #[inline(always)]
    fn of(ep: &svcnet_model::Endpoint, ip: Option<IpAddr>, node: u32, v6: &mut Vec<Ipv6Addr>) -> Self {
        let c = &ep.conditions;
        let bit = |on: bool, flag: u8| if on { flag } else { 0 };
        let mut flags =
            bit(c.is_ready(), READY) | bit(c.is_serving(), SERVING) | bit(c.is_terminating(), TERMINATING);
        if let Some(h) = ep.hints.as_ref() {
            flags |= bit(h.for_zones.as_deref().is_some_and(|z| !z.is_empty()), ZONE_HINTS)
                | bit(h.for_nodes.as_deref().is_some_and(|n| !n.is_empty()), NODE_HINTS);
        }
        let addr = match ip {
            Some(IpAddr::V4(a)) => {
                flags |= V4;
                a.to_bits()
            }
            // Fewer than 2^32 IPv6 endpoints: each is an endpoint of the input.
            Some(IpAddr::V6(a)) => match u32::try_from(v6.len()) {
                Ok(at) => {
                    v6.push(a);
                    flags |= V6;
                    at
                }
                Err(_) => 0,
            },
            None => 0,
        };
        Slot { addr, node, flags }
    }
}

/// A count or position of the index (slices, endpoints, ports) as a `u32`: each stands for
/// an object of the input, and no input holds 2^32 of them (it would not fit in memory).
fn small(n: usize) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

fn family_slot(f: IpFamily) -> usize {
    match f {
        IpFamily::V4 => 0,
        IpFamily::V6 => 1,
    }
}

/// A slice port's number when the proxy accepts it (non-zero, within `u16`).
pub(crate) fn port_number(p: &EndpointPort) -> Option<u16> {
    match p.port.map(u16::try_from) {
        Some(Ok(n)) if n != 0 => Some(n),
        _ => None,
    }
}

impl<'a> SliceIndex<'a> {
    /// Indexes `slices` (slices of no IP family, e.g. `FQDN`, are left out silently, as the
    /// proxy never reads them).
    pub fn build(slices: &'a [EndpointSlice]) -> Self {
        Self::build_keyed(slices, KeyedState::default())
    }

    /// [`SliceIndex::build`] with the Services' (namespace, name) keys hashed under `hash`
    /// (names come from the input: pass a secret key against crafted collisions; see
    /// [`svcnet_model::hash`]). The index is the same under every key.
    pub fn build_keyed(slices: &'a [EndpointSlice], hash: KeyedState) -> Self {
        Self::index(slices, hash, false)
    }

    /// [`SliceIndex::build_keyed`] that also takes the [`slice_digest`](crate::slice_digest) of
    /// every slice it holds, in the pass that reads their endpoints' addresses (see
    /// [`ServiceSlices::digest`]).
    ///
    /// ```
    /// use svcnet_model::EndpointSlice;
    /// use svcnet_model::hash::KeyedState;
    /// use svcnet_topology::{IpFamily, SliceIndex, slice_digest};
    ///
    /// let slices: Vec<EndpointSlice> = vec![serde_json::from_str(r#"{
    ///     "metadata":{"name":"web-1","namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},
    ///     "addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"]}]}"#).unwrap()];
    /// let index = SliceIndex::build_digested(&slices, KeyedState::default());
    /// assert_eq!(index.service("shop", "web", IpFamily::V4).digest(), slice_digest(&slices[0]));
    /// assert_eq!(SliceIndex::build(&slices).service("shop", "web", IpFamily::V4).digest(), 0);
    /// ```
    pub fn build_digested(slices: &'a [EndpointSlice], hash: KeyedState) -> Self {
        Self::index(slices, hash, true)
    }

    /// The index, with each slice's digest when `digests` is set.
    fn index(slices: &'a [EndpointSlice], hash: KeyedState, digests: bool) -> Self {
        let mut groups = Groups::new(slices.len(), hash);
        let mut entries: Vec<Entry<'a>> = Vec::with_capacity(slices.len());
        let endpoints = slices.iter().map(|s| s.endpoints().len()).sum();
        let mut ips: Vec<Slot> = Vec::with_capacity(endpoints);
        let mut v6: Vec<Ipv6Addr> = Vec::new();
        let mut ports: Vec<PortSum> = Vec::with_capacity(slices.len());
        let mut nodes = NodeNumbers {
            map: keyed_map(64, hash),
            recent: [("", NO_NODE); RECENT_NODES],
        };
        // Ignored content with its slice's sort key, sorted stably at the end.
        let mut ignored: Vec<(IpFamily, &'a str, &'a str, Ignored)> = Vec::new();
        // Each slice's Service label, read first in a loop of its own: each read (a map node,
        // then the key's and the value's text) is independent of the next slice's, so their
        // cache misses overlap; in the loop below, between heavier work, each would wait alone.
        let labels: Vec<Option<&'a str>> = slices.iter().map(EndpointSlice::service_name).collect();
        for (s, label) in slices.iter().zip(labels) {
            let Some(family) = IpFamily::parse(&s.address_type) else {
                continue;
            };
            let (ns, name) = (s.metadata.namespace(), s.metadata.name());
            let mut ignore = |what: String, why: &'static str| {
                let slice = format!("{ns}/{name}");
                ignored.push((family, ns, name, Ignored { slice, what, why }));
            };
            let Some(service) = label.filter(|n| !n.is_empty()) else {
                ignore(String::new(), "no kubernetes.io/service-name label");
                continue;
            };
            if ns.is_empty() || name.is_empty() {
                ignore(String::new(), "no name or namespace");
                continue;
            }
            let first = ips.len();
            let mut digest = digests.then(|| crate::digest::slice_head(s));
            for ep in s.endpoints() {
                let text = ep.addresses.first();
                let v4 = text.and_then(|a| dotted_quad(a.as_bytes()));
                let ip = match v4 {
                    Some(v4) => Some(IpAddr::V4(v4)),
                    None => text.and_then(|a| svcnet_model::validation::names::parse_ip_sloppy(a)),
                };
                let node = ep.node_name.as_deref().map_or(NO_NODE, |n| nodes.number(n));
                ips.push(Slot::of(
                    ep,
                    ip.filter(|ip| IpFamily::of(*ip) == family),
                    node,
                    &mut v6,
                ));
                if let Some(h) = digest.as_mut() {
                    crate::digest::endpoint_words(h, ep, v4);
                }
            }
            let digest = digest.map_or(0, |h| std::hash::Hasher::finish(&h));
            let parsed = &ips[first..];
            let first_port = ports.len();
            // kube-proxy meets each bad endpoint once per usable port.
            for (at, p) in s.ports().iter().enumerate() {
                let Some(port_name) = p.name.as_ref() else {
                    ignore(format!("port {:?}", p.port), "port without a name");
                    continue;
                };
                let Some(number) = port_number(p) else {
                    ignore(format!("port {port_name:?}"), "port without a valid number");
                    continue;
                };
                ports.push(PortSum {
                    print: fingerprint(port_name.as_bytes()),
                    len: port_name.len(),
                    at,
                    number,
                    protocol: protocol_code(p.protocol()),
                });
                for (ep, slot) in s.endpoints().iter().zip(parsed) {
                    if slot.has_ip() {
                        continue;
                    }
                    match ep.addresses.first() {
                        None => ignore(String::new(), "endpoint without addresses"),
                        Some(a) if parse_ip(a).is_none() => ignore(a.to_string(), "address is not an IP"),
                        Some(a) => ignore(a.to_string(), "address of the other IP family"),
                    }
                }
            }
            let group = groups.number(ns, service);
            entries.push(Entry {
                slice: s,
                group,
                ips: small(first),
                ips_end: small(ips.len()),
                ports: small(first_port),
                ports_end: small(ports.len()),
                family,
                digest,
            });
        }
        // Counting sort by (group, family), then each run by slice name (stable: input order
        // among equal names, as the proxy's sorted read keeps it).
        let slots = groups.len() * 2;
        let slot = |e: &Entry<'_>| e.group as usize * 2 + family_slot(e.family);
        let mut starts = vec![0usize; slots + 1];
        // Slots, positions and entry numbers below are all this function's own: indexing
        // states that they are in range.
        for e in &entries {
            starts[slot(e) + 1] += 1;
        }
        for i in 1..starts.len() {
            starts[i] += starts[i - 1];
        }
        let mut next = starts.clone();
        let mut sorted = vec![0usize; entries.len()];
        for (i, e) in entries.iter().enumerate() {
            let at = &mut next[slot(e)];
            sorted[*at] = i;
            *at += 1;
        }
        for w in starts.windows(2) {
            if let [a, b] = *w
                && b - a > 1
            {
                let name = |i: &usize| entries[*i].slice.metadata.name();
                sorted[a..b].sort_by(|x, y| name(x).cmp(name(y)).then(x.cmp(y)));
            }
        }
        ignored.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        SliceIndex {
            groups,
            entries,
            sorted,
            starts,
            ips,
            v6,
            ports,
            nodes: nodes.map,
            ignored: ignored.into_iter().map(|(f, _, _, i)| (f, i)).collect(),
        }
    }

    /// The slices of one Service and family, in name order.
    fn run(&self, namespace: &str, service: &str, family: IpFamily) -> impl Iterator<Item = &Entry<'a>> {
        self.run_entries(namespace, service, family)
            .iter()
            .map(|&i| &self.entries[i])
    }

    /// The positions in `entries` of the slices of one Service and family, in name order.
    fn run_entries(&self, namespace: &str, service: &str, family: IpFamily) -> &[usize] {
        let ServiceRun { start, end } = self.service_run(namespace, service, family);
        self.sorted.get(start as usize..end as usize).unwrap_or(&[])
    }

    /// Where the slices of Service `namespace/service` and `family` are in the index, as a
    /// small handle for [`SliceIndex::service_slices_at`] (empty for a Service without any):
    /// for looking many Services up first and reading their slices later.
    ///
    /// ```
    /// use svcnet_model::EndpointSlice;
    /// use svcnet_topology::{IpFamily, SliceIndex};
    ///
    /// let slices: Vec<EndpointSlice> = vec![serde_json::from_str(r#"{
    ///     "metadata":{"name":"web-1","namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},
    ///     "addressType":"IPv4","endpoints":[]}"#).unwrap()];
    /// let index = SliceIndex::build(&slices);
    /// let run = index.service_run("shop", "web", IpFamily::V4);
    /// assert_eq!(index.service_slices_at(run).slices().count(), 1);
    /// ```
    pub fn service_run(&self, namespace: &str, service: &str, family: IpFamily) -> ServiceRun {
        // The Service may be unknown (outside data); its slot and the run's bounds are the
        // index's own.
        match self.groups.get(namespace, service) {
            Some(g) => {
                let slot = g * 2 + family_slot(family);
                ServiceRun {
                    start: small(self.starts[slot]),
                    end: small(self.starts[slot + 1]),
                }
            }
            None => ServiceRun { start: 0, end: 0 },
        }
    }

    /// The slices at `run` ([`SliceIndex::service_run`] of this index), as
    /// [`SliceIndex::service`] gives them.
    pub fn service_slices_at(&self, run: ServiceRun) -> ServiceSlices<'_, 'a> {
        let entries = self
            .sorted
            .get(run.start as usize..run.end as usize)
            .unwrap_or(&[]);
        let one = match entries {
            [i] => self.entries.get(*i).copied(),
            _ => None,
        };
        ServiceSlices {
            index: self,
            entries,
            one,
        }
    }

    /// The slices of Service `namespace/service` and `family` that the index holds (every
    /// slice of the family with the Service's `kubernetes.io/service-name` label, a name and
    /// a namespace), in slice name order (input order among equal names).
    ///
    /// ```
    /// use svcnet_model::EndpointSlice;
    /// use svcnet_topology::{IpFamily, SliceIndex};
    ///
    /// let slices: Vec<EndpointSlice> = vec![serde_json::from_str(r#"{
    ///     "metadata":{"name":"web-1","namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},
    ///     "addressType":"IPv4","endpoints":[]}"#).unwrap()];
    /// let index = SliceIndex::build(&slices);
    /// assert_eq!(index.service_slices("shop", "web", IpFamily::V4).count(), 1);
    /// assert_eq!(index.service_slices("shop", "web", IpFamily::V6).count(), 0);
    /// ```
    pub fn service_slices(
        &self,
        namespace: &str,
        service: &str,
        family: IpFamily,
    ) -> impl Iterator<Item = &'a EndpointSlice> + '_ {
        self.run_entries(namespace, service, family)
            .iter()
            .map(|&i| self.entries[i].slice)
    }

    /// Every slice of `family` in (namespace, name) order, with its Service key and its
    /// parsed addresses.
    pub(crate) fn slices(
        &self,
        family: IpFamily,
    ) -> impl Iterator<Item = (ServiceKey<'a>, &'a EndpointSlice, &[Slot])> {
        // A stable sort keeps the caller's order among equal names.
        let mut of_family: Vec<&Entry<'a>> = self.entries.iter().filter(|e| e.family == family).collect();
        of_family.sort_by(|a, b| {
            let key = |e: &Entry<'a>| (e.slice.metadata.namespace(), e.slice.metadata.name());
            key(a).cmp(&key(b))
        });
        of_family.into_iter().map(|e| {
            let service = (e.slice.metadata.namespace(), e.slice.service_name().unwrap_or(""));
            (service, e.slice, &self.ips[e.ips()])
        })
    }

    /// Slice content the proxy leaves out, with the reason: IPv4 slices in namespace and name
    /// order, then IPv6 ones.
    pub fn ignored(&self) -> impl Iterator<Item = &Ignored> {
        self.ignored.iter().map(|(_, i)| i)
    }

    /// The ignored content of one family's slices.
    pub(crate) fn ignored_of(&self, family: IpFamily) -> impl Iterator<Item = &Ignored> {
        self.ignored
            .iter()
            .filter(move |(f, _)| *f == family)
            .map(|(_, i)| i)
    }

    /// Appends to `out` the endpoints of service port (`port`, `protocol`) of Service
    /// `namespace/service` for the proxier of `family` on `node`, sorted by `IP:port` text and
    /// deduplicated.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn extend_endpoints(
        &self,
        out: &mut Vec<ProxyEndpoint<'a>>,
        node_name: &str,
        options: SelectOptions,
        namespace: &str,
        service: &str,
        port: &str,
        protocol: &str,
        family: IpFamily,
    ) {
        let start = out.len();
        let query = PortQuery::new(port, protocol);
        for e in self.run(namespace, service, family) {
            for p in &self.ports[e.ports()] {
                if query.matches(p, e.slice) {
                    let ips = &self.ips[e.ips()];
                    push_endpoints(out, node_name, options, e.slice, ips, &self.v6, p.number);
                }
            }
        }
        sort_and_dedup(out, start);
    }

    /// Appends to `out` the endpoints of service port `port` (namespace, Service, port name
    /// and protocol) for the proxier of `family` on node `node_name`, as a
    /// [`NodeView`](crate::NodeView) lists them: sorted by `IP:port` text, one per address.
    /// `out` may hold other endpoints already; they are left as they are.
    ///
    /// ```
    /// use svcnet_model::EndpointSlice;
    /// use svcnet_topology::{IpFamily, SelectOptions, ServicePortName, SliceIndex};
    ///
    /// let slices: Vec<EndpointSlice> = vec![serde_json::from_str(r#"{
    ///     "metadata":{"name":"web-1","namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},
    ///     "addressType":"IPv4","ports":[{"name":"","port":8080}],
    ///     "endpoints":[{"addresses":["10.0.0.10"]},{"addresses":["10.0.0.9"],"nodeName":"n1"}]}"#).unwrap()];
    /// let index = SliceIndex::build(&slices);
    /// let port = ServicePortName { namespace: "shop", name: "web", port: "", protocol: "TCP" };
    /// let mut out = Vec::new();
    /// index.service_port_endpoints(&mut out, &port, IpFamily::V4, "n1", SelectOptions::default());
    /// let text: Vec<String> = out.iter().map(|e| e.to_string()).collect();
    /// assert_eq!(text, ["10.0.0.10:8080", "10.0.0.9:8080"]);
    /// assert!(out[1].is_local);
    /// ```
    pub fn service_port_endpoints(
        &self,
        out: &mut Vec<ProxyEndpoint<'a>>,
        port: &ServicePortName<'_>,
        family: IpFamily,
        node_name: &str,
        options: SelectOptions,
    ) {
        self.extend_endpoints(
            out,
            node_name,
            options,
            port.namespace,
            port.name,
            port.port,
            port.protocol,
            family,
        );
    }

    /// [`SliceIndex::service_port_endpoints`] without names and hints: appends to `out` the
    /// endpoints of service port `port` for the proxier of `family` on node `node_name`, in the
    /// same order, as [`PlainEndpoint`]s. Returns `true` when one of them has hints the proxy
    /// reads (zone hints, or node hints under `options.node_hints`): `out` then lacks what
    /// [`Categories::of`](crate::Categories::of) needs, and the caller should read the port
    /// through [`SliceIndex::service_port_endpoints`] instead; with `false`,
    /// [`Categories::of_plain`](crate::Categories::of_plain) categorizes `out`.
    ///
    /// ```
    /// use svcnet_model::EndpointSlice;
    /// use svcnet_topology::{IpFamily, SelectOptions, ServicePortName, SliceIndex};
    ///
    /// let slices: Vec<EndpointSlice> = vec![serde_json::from_str(r#"{
    ///     "metadata":{"name":"web-1","namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},
    ///     "addressType":"IPv4","ports":[{"name":"","port":8080}],
    ///     "endpoints":[{"addresses":["10.0.0.10"]},{"addresses":["10.0.0.9"],"nodeName":"n1"}]}"#).unwrap()];
    /// let index = SliceIndex::build(&slices);
    /// let port = ServicePortName { namespace: "shop", name: "web", port: "", protocol: "TCP" };
    /// let mut out = Vec::new();
    /// let hinted = index.plain_port_endpoints(&mut out, &port, IpFamily::V4, "n1", SelectOptions::default());
    /// assert!(!hinted);
    /// assert_eq!(out[1].ip.to_string(), "10.0.0.9");
    /// assert!(out[1].is_local && !out[0].is_local);
    /// ```
    pub fn plain_port_endpoints(
        &self,
        out: &mut Vec<PlainEndpoint>,
        port: &ServicePortName<'_>,
        family: IpFamily,
        node_name: &str,
        options: SelectOptions,
    ) -> bool {
        self.service(port.namespace, port.name, family)
            .plain_port_endpoints(out, port.port, port.protocol, self.local_node(node_name), options)
    }

    /// Node `node_name` as this index knows it, for [`ServiceSlices::plain_port_endpoints`]
    /// (an empty name is no node: no endpoint is on it).
    ///
    /// ```
    /// use svcnet_model::EndpointSlice;
    /// use svcnet_topology::{IpFamily, SelectOptions, SliceIndex};
    ///
    /// let slices: Vec<EndpointSlice> = vec![serde_json::from_str(r#"{
    ///     "metadata":{"name":"web-1","namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},
    ///     "addressType":"IPv4","ports":[{"name":"","port":8080}],
    ///     "endpoints":[{"addresses":["10.0.0.9"],"nodeName":"n1"}]}"#).unwrap()];
    /// let index = SliceIndex::build(&slices);
    /// let web = index.service("shop", "web", IpFamily::V4);
    /// for (node, local) in [("n1", true), ("n2", false), ("", false)] {
    ///     let mut out = Vec::new();
    ///     web.plain_port_endpoints(&mut out, "", "TCP", index.local_node(node), SelectOptions::default());
    ///     assert_eq!(out[0].is_local, local);
    /// }
    /// ```
    pub fn local_node(&self, node_name: &str) -> LocalNode {
        if node_name.is_empty() {
            return LocalNode(NO_NODE);
        }
        LocalNode(self.nodes.get(node_name).copied().unwrap_or(NO_NODE))
    }

    /// The slices of Service `namespace/service` and `family`, looked up once for reading
    /// several of its ports and its slices.
    ///
    /// ```
    /// use svcnet_model::EndpointSlice;
    /// use svcnet_topology::{IpFamily, SliceIndex};
    ///
    /// let slices: Vec<EndpointSlice> = vec![serde_json::from_str(r#"{
    ///     "metadata":{"name":"web-1","namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},
    ///     "addressType":"IPv4","endpoints":[]}"#).unwrap()];
    /// let index = SliceIndex::build(&slices);
    /// assert_eq!(index.service("shop", "web", IpFamily::V4).slices().count(), 1);
    /// assert_eq!(index.service("shop", "db", IpFamily::V4).slices().count(), 0);
    /// ```
    pub fn service(&self, namespace: &str, service: &str, family: IpFamily) -> ServiceSlices<'_, 'a> {
        self.service_slices_at(self.service_run(namespace, service, family))
    }

    /// The IPv6 addresses the slots of [`SliceIndex::slices`] refer to.
    pub(crate) fn v6_addrs(&self) -> &[Ipv6Addr] {
        &self.v6
    }

    /// How many endpoints the indexed slices hold, usable or not.
    pub fn endpoint_count(&self) -> usize {
        self.ips.len()
    }
}

/// Where one Service's slices of one family are in a [`SliceIndex`]
/// ([`SliceIndex::service_run`]): two numbers, meaningful only with the index that gave them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceRun {
    start: u32,
    end: u32,
}

/// One Service's slices of one family in a [`SliceIndex`] ([`SliceIndex::service`]).
#[derive(Debug, Clone, Copy)]
pub struct ServiceSlices<'i, 'a> {
    index: &'i SliceIndex<'a>,
    /// Positions in the index's entries, in slice name order.
    entries: &'i [usize],
    /// A copy of the entry when there is exactly one (the usual case): read when the Service
    /// is looked up, so that reading its ports later goes straight to their data.
    one: Option<Entry<'a>>,
}

impl<'i, 'a> ServiceSlices<'i, 'a> {
    /// The slices, as [`SliceIndex::service_slices`] lists them.
    pub fn slices(&self) -> impl Iterator<Item = &'a EndpointSlice> + 'i {
        let index = self.index;
        self.entries.iter().map(move |&i| index.entries[i].slice)
    }

    /// The sum of the slices' [digests](crate::slice_digest) (independent of their order) when
    /// the index was [built with them](SliceIndex::build_digested), else 0.
    pub fn digest(&self) -> u64 {
        let index = self.index;
        self.entries
            .iter()
            .fold(0u64, |d, &i| d.wrapping_add(index.entries[i].digest))
    }

    /// [`SliceIndex::plain_port_endpoints`] for this Service's port `port` (its name) of
    /// protocol `protocol`, on node `node` ([`SliceIndex::local_node`] of the same index).
    pub fn plain_port_endpoints(
        &self,
        out: &mut Vec<PlainEndpoint>,
        port: &str,
        protocol: &str,
        node: LocalNode,
        options: SelectOptions,
    ) -> bool {
        let start = out.len();
        let mut hinted = false;
        let query = PortQuery::new(port, protocol);
        let LocalNode(local) = node;
        let mut read = |e: &Entry<'a>| {
            for p in &self.index.ports[e.ports()] {
                if !query.matches(p, e.slice) {
                    continue;
                }
                let number = p.number;
                // What the index took of each slice and endpoint: the slices are not read again.
                let slots = &self.index.ips[e.ips()];
                out.reserve(slots.len());
                let hints = ZONE_HINTS | if options.node_hints { NODE_HINTS } else { 0 };
                let v6 = &self.index.v6;
                for m in slots {
                    let Some(ip) = m.ip(v6) else { continue };
                    hinted |= m.flags & hints != 0;
                    out.push(PlainEndpoint {
                        ip,
                        port: number,
                        is_local: local != NO_NODE && m.node == local,
                        ready: m.flags & READY != 0,
                        serving: m.flags & SERVING != 0,
                        terminating: m.flags & TERMINATING != 0,
                    });
                }
            }
        };
        match &self.one {
            Some(e) => read(e),
            None => self.entries.iter().for_each(|&i| read(&self.index.entries[i])),
        }
        sort_and_dedup(out, start);
        hinted
    }
}

/// Appends the usable endpoints of `slice` (addresses `ips`) on port `number`, as the
/// proxy on `node_name` sees them.
pub(crate) fn push_endpoints<'a>(
    out: &mut Vec<ProxyEndpoint<'a>>,
    node_name: &str,
    options: SelectOptions,
    slice: &'a EndpointSlice,
    ips: &[Slot],
    v6: &[Ipv6Addr],
    number: u16,
) {
    out.reserve(ips.len());
    for (ep, slot) in slice.endpoints().iter().zip(ips) {
        let Some(ip) = slot.ip(v6) else { continue };
        let hints = ep.hints.as_ref();
        let node_hints = if options.node_hints {
            hints.and_then(|h| h.for_nodes.as_deref()).unwrap_or(&[])
        } else {
            &[]
        };
        let ep_node = ep.node_name.as_deref();
        out.push(ProxyEndpoint {
            ip,
            port: number,
            node_name: ep_node,
            zone: ep.zone.as_deref(),
            is_local: !node_name.is_empty() && ep_node.is_some_and(|n| same_text(n, node_name)),
            ready: ep.conditions.is_ready(),
            serving: ep.conditions.is_serving(),
            terminating: ep.conditions.is_terminating(),
            zone_hints: hints.and_then(|h| h.for_zones.as_deref()).unwrap_or(&[]),
            node_hints,
        });
    }
}

/// An address as kube-proxy v1.37.2 reads an endpoint address (`ParseIPSloppy`: leading
/// zeros accepted, IPv4-mapped IPv6 read as IPv4), with a shortcut for the usual dotted
/// quad. The canonical form is the value's `Display`.
#[inline(always)]
fn parse_ip(s: &str) -> Option<IpAddr> {
    match dotted_quad(s.as_bytes()) {
        Some(v4) => Some(IpAddr::V4(v4)),
        None => svcnet_model::validation::names::parse_ip_sloppy(s),
    }
}

/// True when `s` is a dotted quad as IPv4 addresses are printed: what both the standard and
/// the lenient parser read as that IPv4 address.
pub(crate) fn is_dotted_quad(s: &str) -> bool {
    dotted_quad(s.as_bytes()).is_some()
}

/// An address as std reads it (no leading zeros, no IPv4-mapped shortcut), with the
/// dotted-quad shortcut (which accepts only what std accepts, reading it the same way).
pub(crate) fn parse_ip_strict(s: &str) -> Option<IpAddr> {
    match dotted_quad(s.as_bytes()) {
        Some(v4) => Some(IpAddr::V4(v4)),
        None => s.parse().ok(),
    }
}

/// Four decimal octets separated by dots, each 1 to 3 digits, at most 255, without a leading
/// zero: a subset of what the standard parser accepts (anything else is left to it).
///
/// Read octet by octet with slice patterns: each octet is its one, two or three digits
/// (a first digit of `0` stands alone), then a dot, or the end after the fourth.
#[inline(always)]
pub(crate) fn dotted_quad(b: &[u8]) -> Option<Ipv4Addr> {
    if b.len() < 7 || b.len() > 15 {
        return None;
    }
    let d = |c: u8| u32::from(c.wrapping_sub(b'0'));
    let mut bits = 0u32;
    let mut rest = b;
    for k in 0..4 {
        let (value, tail) = match rest {
            [a @ b'1'..=b'9', m @ b'0'..=b'9', z @ b'0'..=b'9', tail @ ..] => {
                (d(*a) * 100 + d(*m) * 10 + d(*z), tail)
            }
            [a @ b'1'..=b'9', z @ b'0'..=b'9', tail @ ..] => (d(*a) * 10 + d(*z), tail),
            [z @ b'0'..=b'9', tail @ ..] => (d(*z), tail),
            _ => return None,
        };
        if value > 255 {
            return None;
        }
        bits = (bits << 8) | value;
        rest = match tail {
            [b'.', next @ ..] if k < 3 => next,
            [] if k == 3 => tail,
            _ => return None,
        };
    }
    Some(Ipv4Addr::from_bits(bits))
}

/// What sorting, deduplicating and categorizing endpoints reads of each: its address, its
/// conditions and whether it is on the proxy's node.
pub(crate) trait Addressed: Copy {
    fn ip(&self) -> IpAddr;
    fn port(&self) -> u16;
    fn terminating(&self) -> bool;
    fn ready(&self) -> bool;
    fn serving(&self) -> bool;
    fn is_local(&self) -> bool;
    fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.ip(), self.port())
    }
}

impl Addressed for ProxyEndpoint<'_> {
    fn ip(&self) -> IpAddr {
        self.ip
    }
    fn port(&self) -> u16 {
        self.port
    }
    fn terminating(&self) -> bool {
        self.terminating
    }
    fn ready(&self) -> bool {
        self.ready
    }
    fn serving(&self) -> bool {
        self.serving
    }
    fn is_local(&self) -> bool {
        self.is_local
    }
}

impl Addressed for PlainEndpoint {
    fn ip(&self) -> IpAddr {
        self.ip
    }
    fn port(&self) -> u16 {
        self.port
    }
    fn terminating(&self) -> bool {
        self.terminating
    }
    fn ready(&self) -> bool {
        self.ready
    }
    fn serving(&self) -> bool {
        self.serving
    }
    fn is_local(&self) -> bool {
        self.is_local
    }
}

/// Sorts endpoints by `IP:port` text and keeps one per address as kube-proxy v1.37.2's
/// `addEndpoints` does: a later copy replaces an earlier one unless it is terminating, so the
/// last non-terminating copy wins, else the first copy.
/// Only `list[start..]` is touched.
pub(crate) fn sort_and_dedup<E: Addressed>(list: &mut Vec<E>, start: usize) {
    let Some(eps) = list.get_mut(start..) else { return };
    // Usually the slices already list each address once, in order: one cheap pass, each
    // address's key computed once (equal addresses are a copy to drop, not an order), that
    // also tells whether all are IPv4.
    let mut prev = 0u64;
    let mut in_order = true;
    let mut all_v4 = true;
    for e in eps.iter() {
        let IpAddr::V4(v4) = e.ip() else {
            all_v4 = false;
            break;
        };
        // Keys are never 0 (each octet's key is), so the first is above `prev`.
        let key = v4_ip_key(v4);
        in_order &= prev < key;
        prev = key;
    }
    if all_v4 {
        if in_order {
            return;
        }
        // Stable, so copies of one address stay in the caller's order.
        eps.sort_by(v4_text_cmp);
    } else {
        if eps
            .windows(2)
            .all(|w| matches!(w, [a, b] if text_cmp(a, b) == Ordering::Less))
        {
            return;
        }
        eps.sort_by_cached_key(|e| AddrText::of(e.addr()));
    }
    let mut kept = 0;
    let mut i = 0;
    while let Some(first) = eps.get(i).copied() {
        let mut chosen = first;
        let mut j = i + 1;
        while let Some(e) = eps.get(j)
            && e.addr() == first.addr()
        {
            if !e.terminating() {
                chosen = *e;
            }
            j += 1;
        }
        // kept <= i: the slot was read already.
        eps[kept] = chosen;
        kept += 1;
        i = j;
    }
    list.truncate(start + kept);
}

/// The order of two IPv4 endpoints' `IP:port` texts: the addresses' keys (`v4_ip_key`), and
/// for one address the ports' (`port_text_key`).
#[inline]
fn v4_text_cmp<E: Addressed>(x: &E, y: &E) -> Ordering {
    match (x.ip(), y.ip()) {
        (IpAddr::V4(a), IpAddr::V4(b)) if a != b => v4_ip_key(a).cmp(&v4_ip_key(b)),
        _ => port_text_key(x.port()).cmp(&port_text_key(y.port())),
    }
}

/// A key whose order is the order of an IPv4 address's text followed by `:`.
///
/// Text order compares the first three octets' digits as strings that end with `.`, which
/// sorts below every digit (so `1.` before `10.`), and the last octet's as strings ending with
/// `:`, which sorts above every digit (so `10:` before `1:`). Each is written as a fixed-width
/// number whose digits are the text's digits, with the end as the lowest (base 11) or highest
/// (base 12) digit, so that comparing the numbers compares the texts: 11 bits an octet.
#[inline]
fn v4_ip_key(v4: Ipv4Addr) -> u64 {
    let [a, b, c, d] = v4.octets();
    let dot = |o: u8| u64::from(DOT_KEYS[usize::from(o)]);
    (dot(a) << 33) | (dot(b) << 22) | (dot(c) << 11) | u64::from(COLON_KEYS[usize::from(d)])
}

/// A key whose order is the order of an IPv4 endpoint's `IP:port` text (0 for IPv6): the
/// address's key, then the port's (the port's text is at the end, which sorts below every
/// digit: base 11 again, five digits, 18 bits).
#[cfg(test)]
fn v4_text_key(e: &ProxyEndpoint<'_>) -> u64 {
    let IpAddr::V4(v4) = e.ip else { return 0 };
    (v4_ip_key(v4) << 18) | port_text_key(e.port)
}

/// The digits of `n` (at most `width` of them), most significant first, as fixed-width
/// base-`base` digits: a decimal digit `d` is `d + shift`, a position past the end is `end`.
const fn digit_key(n: u32, width: u32, base: u32, shift: u32, end: u32) -> u32 {
    let mut len = 1;
    let mut rest = n / 10;
    while rest > 0 {
        len += 1;
        rest /= 10;
    }
    let mut key = 0;
    let mut pos = 0;
    while pos < width {
        let digit = if pos < len {
            let mut div = 1;
            let mut k = 1;
            while k < len - pos {
                div *= 10;
                k += 1;
            }
            n / div % 10 + shift
        } else {
            end
        };
        key = key * base + digit;
        pos += 1;
    }
    key
}

/// An octet's text followed by `.` (below the digits): base 11, end 0, digit `d` as `d + 1`.
const DOT_KEYS: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = digit_key(i as u32, 3, 11, 1, 0) as u16;
        i += 1;
    }
    t
};

/// An octet's text followed by `:` (above the digits): base 12, end 11, digit `d` as `d`.
const COLON_KEYS: [u16; 256] = {
    let mut t = [0u16; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = digit_key(i as u32, 3, 12, 0, 11) as u16;
        i += 1;
    }
    t
};

/// A port's text at the end of the text (the end below the digits): base 11, 5 digits.
fn port_text_key(port: u16) -> u64 {
    let p = u32::from(port);
    let width = match p {
        0..=9 => 1,
        10..=99 => 2,
        100..=999 => 3,
        1000..=9999 => 4,
        _ => 5,
    };
    // The digits shifted up by one (as base 11), then the missing positions as zeros.
    let mut key = 0u64;
    let mut div = [10000u32, 1000, 100, 10, 1].into_iter().skip(5 - width);
    for _ in 0..5 {
        key = key * 11
            + match div.next() {
                Some(d) => u64::from(p / d % 10 + 1),
                None => 0,
            };
    }
    key
}

/// The order of two endpoints' `IP:port` texts, without writing them out for IPv4.
fn text_cmp<E: Addressed>(x: &E, y: &E) -> Ordering {
    match (x.ip(), y.ip()) {
        (IpAddr::V4(a), IpAddr::V4(b)) => {
            for (i, (p, q)) in a.octets().into_iter().zip(b.octets()).enumerate() {
                let next = if i < 3 { b'.' } else { b':' };
                match decimal_cmp(u16::from(p), u16::from(q), Some(next)) {
                    Ordering::Equal => {}
                    o => return o,
                }
            }
            decimal_cmp(x.port(), y.port(), None)
        }
        _ => AddrText::of(x.addr()).cmp(&AddrText::of(y.addr())),
    }
}

/// The text order of two decimal numbers, each followed by byte `next` (`None`: the end).
fn decimal_cmp(a: u16, b: u16, next: Option<u8>) -> Ordering {
    let width = |n: u16| match n {
        0..=9 => 1,
        10..=99 => 2,
        100..=999 => 3,
        1000..=9999 => 4,
        _ => 5,
    };
    // Digit strings of one length compare as the numbers do.
    if a == b || width(a) == width(b) {
        return a.cmp(&b);
    }
    let (da, db) = (Digits::of(a), Digits::of(b));
    match da
        .as_bytes()
        .iter()
        .zip(db.as_bytes())
        .map(|(p, q)| p.cmp(q))
        .find(|o| o.is_ne())
    {
        Some(o) => o,
        // One is a prefix of the other (they differ, so the lengths do): the shorter goes on
        // with `next`, the longer with a digit.
        None => {
            let shorter_first = next.is_none_or(|n| n < b'0');
            if (da.len < db.len) == shorter_first {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
    }
}

/// The decimal digits of a `u16`.
struct Digits {
    bytes: [u8; 5],
    len: usize,
}

impl Digits {
    fn of(n: u16) -> Self {
        let mut d = Digits {
            bytes: [0; 5],
            len: 0,
        };
        let mut started = false;
        for div in [10000u16, 1000, 100, 10, 1] {
            let digit = (n / div % 10) as u8;
            if started || digit != 0 || div == 1 {
                // At most five digits: one per divisor.
                d.bytes[d.len] = b'0' + digit;
                d.len += 1;
                started = true;
            }
        }
        d
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// `IP:port` text as a sort key: the text's bytes, big-endian in four words, zero-padded
/// (no text byte is zero, so a prefix sorts first, as in text order). Built on the stack;
/// compared as four integers (an array would be compared with `memcmp`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct AddrText(u128, u128, u128, u128);

/// The longest text, `[ffff:…:255.255.255.255]:65535`, is 53 bytes.
struct TextBuf {
    bytes: [u8; 64],
    len: usize,
}

impl TextBuf {
    fn push(&mut self, b: u8) {
        // The longest text fits (see above): a longer one is a bug, not input.
        self.bytes[self.len] = b;
        self.len += 1;
    }

    /// Decimal digits of `n`, without leading zeros.
    fn push_number(&mut self, n: u16) {
        for &b in Digits::of(n).as_bytes() {
            self.push(b);
        }
    }
}

impl std::fmt::Write for TextBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for b in s.bytes() {
            self.push(b);
        }
        Ok(())
    }
}

impl AddrText {
    fn of(addr: SocketAddr) -> Self {
        let mut t = TextBuf {
            bytes: [0; 64],
            len: 0,
        };
        match addr.ip() {
            IpAddr::V4(v4) => {
                for (i, octet) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        t.push(b'.');
                    }
                    t.push_number(u16::from(octet));
                }
            }
            IpAddr::V6(v6) => {
                let _ = write!(t, "[{v6}]");
            }
        }
        t.push(b':');
        t.push_number(addr.port());
        let mut words = [0u128; 4];
        for (w, chunk) in words.iter_mut().zip(t.bytes.chunks_exact(16)) {
            let mut b = [0u8; 16];
            b.copy_from_slice(chunk);
            *w = u128::from_be_bytes(b);
        }
        let [a, b, c, d] = words;
        AddrText(a, b, c, d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addr_text_is_the_display_text() {
        for a in [
            "10.0.0.1:80",
            "255.255.255.255:65535",
            "0.0.0.0:1",
            "[fd00::1]:8080",
            "[::ffff:1.2.3.4]:443",
            "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535",
        ] {
            let addr: SocketAddr = a.parse().unwrap();
            let AddrText(a, b, c, d) = AddrText::of(addr);
            let bytes: Vec<u8> = [a, b, c, d].iter().flat_map(|w| w.to_be_bytes()).collect();
            let text = addr.to_string();
            assert_eq!(&bytes[..text.len()], text.as_bytes());
            assert!(bytes[text.len()..].iter().all(|&b| b == 0));
        }
        // Text order, not numeric order.
        let key = |s: &str| AddrText::of(s.parse().unwrap());
        assert!(key("10.0.0.10:80") < key("10.0.0.1:80"));
        assert!(key("10.0.0.1:80") < key("10.0.0.1:8080"));
        assert!(key("[fd00::10]:80") < key("[fd00::1]:80"));
    }

    fn endpoint(ip: IpAddr, port: u16) -> ProxyEndpoint<'static> {
        ProxyEndpoint {
            ip,
            port,
            node_name: None,
            zone: None,
            is_local: false,
            ready: true,
            serving: true,
            terminating: false,
            zone_hints: &[],
            node_hints: &[],
        }
    }

    proptest::proptest! {
        /// The IPv4 shortcut orders exactly as the text does.
        #[test]
        fn text_cmp_is_text_order(a in proptest::prelude::any::<[u8; 4]>(), b in proptest::prelude::any::<[u8; 4]>(),
                                  pa in proptest::prelude::any::<u16>(), pb in proptest::prelude::any::<u16>(),
                                  same in 0usize..4) {
            // Bias towards shared prefixes, where the text order is subtle.
            let mut b = b;
            b[..same].copy_from_slice(&a[..same]);
            let (x, y) = (endpoint(IpAddr::from(a), pa), endpoint(IpAddr::from(b), pb));
            proptest::prop_assert_eq!(text_cmp(&x, &y), x.to_string().cmp(&y.to_string()));
            proptest::prop_assert_eq!(v4_text_key(&x).cmp(&v4_text_key(&y)), x.to_string().cmp(&y.to_string()));
            proptest::prop_assert_eq!(v4_text_cmp(&x, &y), x.to_string().cmp(&y.to_string()));
            proptest::prop_assert_eq!(text_cmp(&x, &x), std::cmp::Ordering::Equal);
        }
    }

    proptest::proptest! {
        /// The dotted-quad shortcut never accepts what the standard parser rejects, never
        /// reads a value differently, and takes every address the standard parser prints;
        /// with it, `parse_ip` reads as the lenient parser does.
        #[test]
        fn dotted_quad_agrees_with_the_standard_parser(text in "[0-9.]{0,17}|[0-9a-f:.x ]{0,12}",
                                                      octets in proptest::prelude::any::<[u8; 4]>()) {
            if let Some(v4) = dotted_quad(text.as_bytes()) {
                proptest::prop_assert_eq!(text.parse::<IpAddr>().ok(), Some(IpAddr::V4(v4)));
            }
            proptest::prop_assert_eq!(parse_ip(&text), svcnet_model::validation::names::parse_ip_sloppy(&text));
            let printed = Ipv4Addr::from(octets).to_string();
            proptest::prop_assert_eq!(dotted_quad(printed.as_bytes()), Some(Ipv4Addr::from(octets)));
        }
    }

    #[test]
    fn v4_text_key_orders_every_octet_and_port_as_text() {
        let all: Vec<u8> = (0..=255).collect();
        for &x in &all {
            for &y in &all {
                for (a, b) in [([x, 0, 0, 1], [y, 0, 0, 1]), ([1, 2, 3, x], [1, 2, 3, y])] {
                    let (p, q) = (endpoint(IpAddr::from(a), 80), endpoint(IpAddr::from(b), 80));
                    assert_eq!(v4_text_cmp(&p, &q), p.to_string().cmp(&q.to_string()));
                    assert_eq!(
                        v4_text_key(&p).cmp(&v4_text_key(&q)),
                        p.to_string().cmp(&q.to_string())
                    );
                }
            }
        }
        let ports = [
            0u16, 1, 8, 9, 10, 79, 80, 99, 100, 443, 800, 8080, 9999, 10000, 65535,
        ];
        for &x in &ports {
            for &y in &ports {
                let (p, q) = (endpoint(ip4(10, 0, 0, 1), x), endpoint(ip4(10, 0, 0, 1), y));
                assert_eq!(v4_text_cmp(&p, &q), p.to_string().cmp(&q.to_string()));
                assert_eq!(
                    v4_text_key(&p).cmp(&v4_text_key(&q)),
                    p.to_string().cmp(&q.to_string())
                );
            }
        }
    }

    #[test]
    fn dotted_quad_edges() {
        for bad in [
            "",
            "1.2.3",
            "1.2.3.4.",
            ".1.2.3",
            "1..2.3",
            "01.2.3.4",
            "1.2.3.256",
            "1.2.3.0000",
            "1.2.3.4 ",
        ] {
            assert_eq!(dotted_quad(bad.as_bytes()), None, "{bad}");
        }
        assert_eq!(dotted_quad(b"0.0.0.0"), Some(Ipv4Addr::UNSPECIFIED));
        assert_eq!(dotted_quad(b"255.255.255.255"), Some(Ipv4Addr::BROADCAST));
        assert_eq!(parse_ip("fd00::1"), "fd00::1".parse().ok());
    }

    #[test]
    fn sort_and_dedup_keeps_the_last_non_terminating_copy_else_the_first() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        // The first endpoint belongs to another service port and stays as it is.
        let mut eps = vec![
            endpoint(ip("10.9.9.9"), 80),
            endpoint(ip("10.0.0.2"), 80),
            endpoint(ip("10.0.0.10"), 80),
            endpoint(ip("10.0.0.2"), 80),
            endpoint(ip("10.0.0.1"), 80),
            endpoint(ip("10.0.0.1"), 80),
            endpoint(ip("10.0.0.3"), 80),
            endpoint(ip("10.0.0.3"), 80),
        ];
        // 10.0.0.2: a local terminating copy after a remote ready one: the ready one wins.
        eps[1].node_name = Some("remote");
        eps[3].is_local = true;
        eps[3].terminating = true;
        eps[3].node_name = Some("local");
        // 10.0.0.1: two non-terminating copies: the last wins.
        eps[4].node_name = Some("first");
        eps[5].node_name = Some("second");
        // 10.0.0.3: both terminating: the first stays.
        eps[6].terminating = true;
        eps[6].node_name = Some("first");
        eps[7].terminating = true;
        eps[7].node_name = Some("second");
        sort_and_dedup(&mut eps, 1);
        let got: Vec<(String, Option<&str>)> = eps.iter().map(|e| (e.to_string(), e.node_name)).collect();
        assert_eq!(
            got,
            [
                ("10.9.9.9:80".to_owned(), None),
                ("10.0.0.10:80".to_owned(), None),
                ("10.0.0.1:80".to_owned(), Some("second")),
                ("10.0.0.2:80".to_owned(), Some("remote")),
                ("10.0.0.3:80".to_owned(), Some("first")),
            ]
        );
    }

    #[test]
    fn endpoint_addresses_are_read_leniently_in_canonical_form() {
        assert_eq!(parse_ip("10.180.00.001"), Some(ip4(10, 180, 0, 1)));
        assert_eq!(parse_ip("fd00:0:0::0001"), "fd00::1".parse().ok());
        assert_eq!(parse_ip("bogus"), None);
    }

    fn ip4(a: u8, b: u8, c: u8, d: u8) -> IpAddr {
        IpAddr::V4(Ipv4Addr::new(a, b, c, d))
    }
}
