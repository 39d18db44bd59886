//! NetworkPolicy reachability: which peers may reach a pod, and which it may reach, on which
//! ports — what a CNI plugin enforcing networking.k8s.io/v1 NetworkPolicy allows, as data.
//!
//! ```text
//!  NetworkPolicy[] + Namespace[] + Pod[] ──▶ pod_reachability(pod) ──▶ PodReachability
//!                                                                     ├─ ingress: Reach { policies, pods, blocks }
//!                                                                     └─ egress:  Reach { policies, pods, blocks }
//!                                        ──▶ check(from, to, protocol, port) ──▶ Verdict
//! ```
//!
//! Semantics (the standard ones of the NetworkPolicy API):
//! - A policy applies to the pods of its own namespace that its `podSelector` selects, for each
//!   direction listed in `policyTypes` (when that list is absent or empty: `Ingress`, plus `Egress`
//!   when there are egress rules, as the API server defaults it).
//! - A pod selected by no policy for a direction is not isolated in that direction: everything is
//!   allowed. A pod selected by at least one is isolated: only what some rule of some selecting
//!   policy allows gets through (rules add up; there is no deny rule).
//! - A connection from A to B is allowed when A's egress allows B **and** B's ingress allows A.
//! - A rule without peers (`from`/`to` absent or empty) matches every peer; without `ports`, every
//!   protocol and port. A peer with `podSelector` matches pods of the policy's namespace; with
//!   `namespaceSelector`, pods of the matching namespaces (both: pods matching both); with
//!   `ipBlock`, any address inside `cidr` and outside every `except` — pod addresses included.
//! - A port entry without `protocol` means TCP; without `port`, every port of the protocol; a
//!   numeric `port` with `endPort` is the inclusive range. A named port is resolved against the
//!   container ports of the *destination* pod (the selected pod for ingress, the peer for egress):
//!   it matches the numbers of the container ports carrying that name and protocol. It matches
//!   nothing at a destination that is not a pod.
//! - Namespaces carry the label `kubernetes.io/metadata.name: <name>` that the API server sets on
//!   every namespace; a namespace not listed has that label only. A pod or policy without a
//!   namespace is in `default`.
//!
//! Non-features: host-network pods, node-local traffic and Services (DNAT happens before policy)
//! are not modelled; address families are not told apart (a pod matches an `ipBlock` when any of
//! its addresses does). A policy that fails validation is read as far as it makes sense (an
//! unknown protocol or operator matches nothing).
//!
//! ```
//! use svcnet_model::reachability::{self, Cluster, Endpoint, Protocol};
//! use svcnet_model::{NetworkPolicy, NetworkPolicySpec, Pod};
//!
//! // A policy that isolates every pod of `shop` for ingress and allows nothing.
//! let mut deny = NetworkPolicy::default();
//! deny.metadata.name = Some("deny-all".into());
//! deny.metadata.namespace = Some("shop".into());
//! deny.spec = Some(NetworkPolicySpec::default());
//!
//! let mut web = Pod::default();
//! web.metadata.name = Some("web".into());
//! web.metadata.namespace = Some("shop".into());
//! let mut client = web.clone();
//! client.metadata.name = Some("client".into());
//!
//! let pods = [web.clone(), client.clone()];
//! let policies = [deny];
//! let cluster = Cluster { policies: &policies, namespaces: &[], pods: &pods };
//! let reach = reachability::pod_reachability(&cluster, &web);
//! assert!(reach.ingress.isolated() && reach.ingress.pods.is_empty());
//! let v = reachability::check(&cluster, &Endpoint::Pod(&client), &Endpoint::Pod(&web), Protocol::Tcp, 80);
//! assert!(!v.allowed);
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::{
    IntOrString, IpBlock, LabelSelector, NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort, Pod, StringMap,
};

/// The label the API server puts on every namespace, holding the namespace's name.
pub const NAMESPACE_NAME_LABEL: &str = "kubernetes.io/metadata.name";

/// A namespace and its labels, what `namespaceSelector`s are matched against.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Namespace {
    /// The namespace's name.
    pub name: String,
    /// Its labels (`kubernetes.io/metadata.name` is added when missing).
    #[serde(default)]
    pub labels: StringMap,
}

/// A transport protocol a NetworkPolicy port can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Protocol {
    /// `TCP`.
    #[serde(rename = "TCP")]
    Tcp,
    /// `UDP`.
    #[serde(rename = "UDP")]
    Udp,
    /// `SCTP`.
    #[serde(rename = "SCTP")]
    Sctp,
}

impl Protocol {
    /// The three protocols, in Kubernetes' order.
    pub const ALL: [Protocol; 3] = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp];

    /// Reads `TCP`, `UDP` or `SCTP` (case-sensitive, as the API is).
    pub fn parse(s: &str) -> Option<Protocol> {
        match s {
            "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }

    /// The API spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An inclusive range of ports of one protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct PortRange {
    /// The protocol.
    pub protocol: Protocol,
    /// The first port.
    pub first: u16,
    /// The last port (≥ `first`).
    pub last: u16,
}

/// A set of allowed (protocol, port) pairs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PortSet {
    /// Every protocol and port, including traffic without ports (a rule without `ports`).
    pub all: bool,
    /// When not `all`: sorted ranges, disjoint and not adjacent within a protocol.
    pub ranges: Vec<PortRange>,
}

impl PortSet {
    /// The set of everything.
    pub fn everything() -> PortSet {
        PortSet {
            all: true,
            ranges: Vec::new(),
        }
    }

    /// True when nothing is allowed.
    pub fn is_empty(&self) -> bool {
        !self.all && self.ranges.is_empty()
    }

    /// Whether `port` of `protocol` is in the set.
    pub fn contains(&self, protocol: Protocol, port: u16) -> bool {
        self.all
            || self
                .ranges
                .iter()
                .any(|r| r.protocol == protocol && r.first <= port && port <= r.last)
    }

    /// Adds a range, keeping the ranges sorted and merged.
    pub fn insert(&mut self, range: PortRange) {
        if self.all || range.first > range.last {
            return;
        }
        self.ranges.push(range);
        self.normalize();
    }

    /// Adds every pair of `other`.
    pub fn union(&mut self, other: &PortSet) {
        if self.all {
            return;
        }
        if other.all {
            *self = PortSet::everything();
            return;
        }
        self.ranges
            .extend(other.ranges.iter().copied().filter(|r| r.first <= r.last));
        self.normalize();
    }

    fn normalize(&mut self) {
        self.ranges.sort();
        let mut out: Vec<PortRange> = Vec::with_capacity(self.ranges.len());
        for r in self.ranges.drain(..) {
            match out.last_mut() {
                Some(prev)
                    if prev.protocol == r.protocol && u32::from(r.first) <= u32::from(prev.last) + 1 =>
                {
                    prev.last = prev.last.max(r.last);
                }
                _ => out.push(r),
            }
        }
        self.ranges = out;
    }
}

/// The cluster a question is asked about. Every slice may be empty.
#[derive(Debug, Clone, Copy)]
pub struct Cluster<'a> {
    /// The NetworkPolicies, in any namespace.
    pub policies: &'a [NetworkPolicy],
    /// The namespaces with their labels (unlisted ones have only their name label).
    pub namespaces: &'a [Namespace],
    /// The pods that can be peers, with labels, addresses and container ports.
    pub pods: &'a [Pod],
}

/// A pod of the cluster and the ports allowed with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodPorts {
    /// The peer's namespace.
    pub namespace: String,
    /// The peer's name.
    pub name: String,
    /// The ports allowed (never empty in a [`Reach`]).
    pub ports: PortSet,
}

/// An address range and the ports allowed with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockPorts {
    /// The CIDR as the policy wrote it (`0.0.0.0/0` and `::/0` stand for "any peer").
    pub cidr: String,
    /// The excepted CIDRs as written.
    pub except: Vec<String>,
    /// The ports allowed. For egress, named ports are left out (they resolve only at pods,
    /// which appear in [`Reach::pods`]).
    pub ports: PortSet,
}

/// What one direction of one pod allows.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reach {
    /// The policies selecting the pod for this direction, as `namespace/name`, in input order.
    /// Empty: the pod is not isolated and `pods` / `blocks` say "everything".
    pub policies: Vec<String>,
    /// The cluster's pods that are allowed peers, in input order, with their ports.
    pub pods: Vec<PodPorts>,
    /// The address ranges allowed, one entry per `ipBlock` of a matching rule (or `0.0.0.0/0`
    /// and `::/0` for a rule open to every peer), in policy order.
    pub blocks: Vec<BlockPorts>,
}

impl Reach {
    /// True when some policy selects the pod for this direction.
    pub fn isolated(&self) -> bool {
        !self.policies.is_empty()
    }

    /// The ports allowed with the pod `namespace/name`, if any.
    pub fn pod(&self, namespace: &str, name: &str) -> Option<&PortSet> {
        self.pods
            .iter()
            .find(|p| p.namespace == namespace && p.name == name)
            .map(|p| &p.ports)
    }
}

/// Both directions of one pod.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodReachability {
    /// The pod's namespace.
    pub namespace: String,
    /// The pod's name.
    pub name: String,
    /// Who may connect to the pod.
    pub ingress: Reach,
    /// Whom the pod may connect to.
    pub egress: Reach,
}

/// One end of a connection.
#[derive(Debug, Clone, Copy)]
pub enum Endpoint<'a> {
    /// A pod (policies apply to it; selectors and ipBlocks match it).
    Pod(&'a Pod),
    /// An address outside the cluster's pods (only ipBlocks match it; no policy applies to it).
    Address(IpAddr),
}

/// The decision of one direction for one connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    /// Whether some policy selects the pod for this direction.
    pub isolated: bool,
    /// Whether this direction lets the connection through.
    pub allowed: bool,
    /// The isolating policies (`namespace/name`) with a rule allowing the connection.
    pub allowed_by: Vec<String>,
}

/// The answer to "may `from` connect to `to` on this port?".
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    /// Egress of the source and ingress of the destination both allow it.
    pub allowed: bool,
    /// The source's egress side.
    pub egress: Decision,
    /// The destination's ingress side.
    pub ingress: Decision,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Dir {
    Ingress,
    Egress,
}

/// What the policies of `cluster` allow into and out of `pod` (which need not be one of
/// `cluster.pods`; peers are always taken from `cluster.pods`).
pub fn pod_reachability(cluster: &Cluster<'_>, pod: &Pod) -> PodReachability {
    let ctx = Context::new(cluster);
    ctx.pod_reachability(&ctx.view(pod))
}

/// [`pod_reachability`] for every pod of the cluster, in input order. Cheaper than calling
/// [`pod_reachability`] per pod: the policies and pods are read once.
pub fn cluster_reachability(cluster: &Cluster<'_>) -> Vec<PodReachability> {
    let ctx = Context::new(cluster);
    ctx.pods.iter().map(|view| ctx.pod_reachability(view)).collect()
}

/// Whether a connection from `from` to `to` on `protocol`/`port` is allowed, and by what.
pub fn check(
    cluster: &Cluster<'_>,
    from: &Endpoint<'_>,
    to: &Endpoint<'_>,
    protocol: Protocol,
    port: u16,
) -> Verdict {
    let ctx = Context::new(cluster);
    let from_end = ctx.end(from);
    let to_end = ctx.end(to);
    let egress = match &from_end {
        End::Pod(src) => ctx.decide(src, &to_end, Dir::Egress, protocol, port),
        End::Address(_) => open_decision(),
    };
    let ingress = match &to_end {
        End::Pod(dst) => ctx.decide(dst, &from_end, Dir::Ingress, protocol, port),
        End::Address(_) => open_decision(),
    };
    Verdict {
        allowed: egress.allowed && ingress.allowed,
        egress,
        ingress,
    }
}

fn open_decision() -> Decision {
    Decision {
        isolated: false,
        allowed: true,
        allowed_by: Vec::new(),
    }
}

/// The namespace of a pod or policy, `default` when unset.
fn ns_of(meta: &crate::ObjectMeta) -> &str {
    match meta.namespace() {
        "" => "default",
        ns => ns,
    }
}

fn empty_labels() -> &'static StringMap {
    static EMPTY: StringMap = StringMap::new();
    &EMPTY
}

/// A pod read once: namespace, labels and parsed addresses.
struct PodView<'a> {
    pod: &'a Pod,
    namespace: &'a str,
    labels: &'a StringMap,
    ips: Vec<cidr::GoIp>,
}

impl<'a> PodView<'a> {
    fn new(pod: &'a Pod) -> Self {
        PodView {
            pod,
            namespace: ns_of(&pod.metadata),
            labels: pod.metadata.labels.as_ref().unwrap_or(empty_labels()),
            ips: pod.ips().into_iter().filter_map(cidr::parse_ip_sloppy).collect(),
        }
    }
}

/// One end of a connection, read.
enum End<'a> {
    Pod(PodView<'a>),
    Address(cidr::GoIp),
}

/// A parsed `ipBlock`: the CIDR and the excepts that parse, with the text for the output.
struct Block<'p> {
    text: &'p IpBlock,
    net: Option<cidr::GoNet>,
    except: Vec<cidr::GoNet>,
}

impl<'p> Block<'p> {
    fn new(text: &'p IpBlock) -> Self {
        Block {
            text,
            net: cidr::parse_cidr_sloppy(&text.cidr),
            except: text
                .except
                .iter()
                .flatten()
                .filter_map(|e| cidr::parse_cidr_sloppy(e))
                .collect(),
        }
    }

    fn contains(&self, ip: &cidr::GoIp) -> bool {
        self.net.as_ref().is_some_and(|n| n.contains(ip)) && !self.except.iter().any(|e| e.contains(ip))
    }
}

/// One peer of a rule. With none of the three set it matches nothing (validation refuses it).
struct Peer<'p> {
    pods: Option<&'p LabelSelector>,
    namespaces: Option<&'p LabelSelector>,
    block: Option<Block<'p>>,
}

/// One rule of a policy, direction-neutral. No peers: every peer.
struct Rule<'p> {
    ports: &'p [NetworkPolicyPort],
    peers: Vec<Peer<'p>>,
}

impl<'p> Rule<'p> {
    fn new(ports: Option<&'p [NetworkPolicyPort]>, peers: Option<&'p [NetworkPolicyPeer]>) -> Self {
        Rule {
            ports: ports.unwrap_or(&[]),
            peers: peers
                .unwrap_or(&[])
                .iter()
                .map(|p| Peer {
                    pods: p.pod_selector.as_ref(),
                    namespaces: p.namespace_selector.as_ref(),
                    block: p.ip_block.as_ref().map(Block::new),
                })
                .collect(),
        }
    }

    /// The ports the rule allows at `dest` (the destination pod, when it is one).
    fn ports_at(&self, dest: Option<&Pod>) -> PortSet {
        if self.ports.is_empty() {
            return PortSet::everything();
        }
        let mut set = PortSet::default();
        for entry in self.ports {
            port_entry_set(entry, dest, &mut set);
        }
        set
    }
}

/// A policy read once. A direction the policy does not isolate has no rule list.
struct Policy<'p> {
    key: String,
    namespace: &'p str,
    selector: Option<&'p LabelSelector>,
    ingress: Option<Vec<Rule<'p>>>,
    egress: Option<Vec<Rule<'p>>>,
}

impl<'p> Policy<'p> {
    fn new(np: &'p NetworkPolicy) -> Self {
        let namespace = ns_of(&np.metadata);
        let key = format!("{namespace}/{}", np.metadata.name());
        let Some(spec) = &np.spec else {
            // The empty spec: isolates every pod for ingress and allows nothing.
            return Policy {
                key,
                namespace,
                selector: None,
                ingress: Some(Vec::new()),
                egress: None,
            };
        };
        let ingress = spec.affects_ingress().then(|| {
            spec.ingress
                .iter()
                .flatten()
                .map(|r| Rule::new(r.ports.as_deref(), r.from.as_deref()))
                .collect()
        });
        let egress = spec.affects_egress().then(|| {
            spec.egress
                .iter()
                .flatten()
                .map(|r| Rule::new(r.ports.as_deref(), r.to.as_deref()))
                .collect()
        });
        Policy {
            key,
            namespace,
            selector: spec.pod_selector.as_ref(),
            ingress,
            egress,
        }
    }

    fn rules(&self, dir: Dir) -> Option<&[Rule<'p>]> {
        match dir {
            Dir::Ingress => self.ingress.as_deref(),
            Dir::Egress => self.egress.as_deref(),
        }
    }
}

/// The numbers a port entry stands for at `dest` (the destination pod, when it is one).
fn port_entry_set(entry: &NetworkPolicyPort, dest: Option<&Pod>, out: &mut PortSet) {
    let Some(protocol) = Protocol::parse(entry.protocol.as_deref().unwrap_or("TCP")) else {
        return;
    };
    match &entry.port {
        None => out.insert(PortRange {
            protocol,
            first: 1,
            last: u16::MAX,
        }),
        Some(IntOrString::Int(p)) => {
            let last = entry.end_port.unwrap_or(*p);
            let first = (*p).max(1);
            let last = last.min(i32::from(u16::MAX));
            if let (Ok(first), Ok(last)) = (u16::try_from(first), u16::try_from(last)) {
                out.insert(PortRange {
                    protocol,
                    first,
                    last,
                });
            }
        }
        Some(IntOrString::String(name)) => {
            let Some(dest) = dest else { return };
            for number in named_port_numbers(dest, name, protocol) {
                out.insert(PortRange {
                    protocol,
                    first: number,
                    last: number,
                });
            }
        }
    }
}

/// The container port numbers of `pod` named `name` with `protocol` (application containers
/// and restartable init containers, as named-port resolution reads them).
fn named_port_numbers(pod: &Pod, name: &str, protocol: Protocol) -> Vec<u16> {
    let spec = pod.spec();
    let sidecars = spec
        .init_containers()
        .iter()
        .filter(|c| c.restart_policy.as_deref() == Some("Always"));
    spec.containers()
        .iter()
        .chain(sidecars)
        .flat_map(|c| c.ports())
        .filter(|cp| {
            cp.name.as_deref() == Some(name)
                && Protocol::parse(cp.protocol.as_deref().unwrap_or("TCP")) == Some(protocol)
        })
        .filter_map(|cp| u16::try_from(cp.container_port).ok().filter(|n| *n > 0))
        .collect()
}

/// The cluster read once.
struct Context<'a> {
    policies: Vec<Policy<'a>>,
    pods: Vec<PodView<'a>>,
    /// Labels of the listed namespaces and of every pod's namespace, name label included.
    ns_labels: BTreeMap<&'a str, StringMap>,
}

impl<'a> Context<'a> {
    fn new(cluster: &Cluster<'a>) -> Self {
        let mut ns_labels: BTreeMap<&'a str, StringMap> = BTreeMap::new();
        for ns in cluster.namespaces {
            let mut labels = ns.labels.clone();
            labels.insert(NAMESPACE_NAME_LABEL.to_owned(), ns.name.clone());
            ns_labels.insert(ns.name.as_str(), labels);
        }
        let pods: Vec<PodView<'a>> = cluster.pods.iter().map(PodView::new).collect();
        for view in &pods {
            ns_labels
                .entry(view.namespace)
                .or_insert_with(|| name_only_labels(view.namespace));
        }
        Context {
            policies: cluster.policies.iter().map(Policy::new).collect(),
            pods,
            ns_labels,
        }
    }

    fn view<'p>(&self, pod: &'p Pod) -> PodView<'p> {
        PodView::new(pod)
    }

    fn end<'p>(&self, e: &Endpoint<'p>) -> End<'p> {
        match e {
            Endpoint::Pod(p) => End::Pod(PodView::new(p)),
            Endpoint::Address(ip) => End::Address(cidr::GoIp::from_std(*ip)),
        }
    }

    fn namespace_matches(&self, sel: &LabelSelector, ns: &str) -> bool {
        match self.ns_labels.get(ns) {
            Some(labels) => sel.matches(labels),
            None => sel.matches(&name_only_labels(ns)),
        }
    }

    /// The policies selecting `pod` for `dir`.
    fn selecting(&self, pod: &PodView<'_>, dir: Dir) -> Vec<&Policy<'a>> {
        self.policies
            .iter()
            .filter(|p| p.namespace == pod.namespace && p.rules(dir).is_some())
            .filter(|p| p.selector.is_none_or(|s| s.matches(pod.labels)))
            .collect()
    }

    /// Whether `peer` (of a policy in `policy_ns`) matches the pod `other`.
    fn peer_matches_pod(&self, peer: &Peer<'_>, policy_ns: &str, other: &PodView<'_>) -> bool {
        if let Some(block) = &peer.block {
            return other.ips.iter().any(|ip| block.contains(ip));
        }
        if peer.pods.is_none() && peer.namespaces.is_none() {
            return false;
        }
        let ns_ok = match peer.namespaces {
            None => other.namespace == policy_ns,
            Some(sel) => self.namespace_matches(sel, other.namespace),
        };
        ns_ok && peer.pods.is_none_or(|s| s.matches(other.labels))
    }

    fn rule_matches(&self, rule: &Rule<'_>, policy_ns: &str, other: &End<'_>) -> bool {
        rule.peers.is_empty()
            || rule.peers.iter().any(|peer| match other {
                End::Pod(p) => self.peer_matches_pod(peer, policy_ns, p),
                End::Address(ip) => peer.block.as_ref().is_some_and(|b| b.contains(ip)),
            })
    }

    fn pod_reachability(&self, pod: &PodView<'_>) -> PodReachability {
        PodReachability {
            namespace: pod.namespace.to_owned(),
            name: pod.pod.metadata.name().to_owned(),
            ingress: self.reach(pod, Dir::Ingress),
            egress: self.reach(pod, Dir::Egress),
        }
    }

    fn reach(&self, pod: &PodView<'_>, dir: Dir) -> Reach {
        let policies = self.selecting(pod, dir);
        if policies.is_empty() {
            return Reach {
                policies: Vec::new(),
                pods: self
                    .pods
                    .iter()
                    .map(|p| PodPorts {
                        namespace: p.namespace.to_owned(),
                        name: p.pod.metadata.name().to_owned(),
                        ports: PortSet::everything(),
                    })
                    .collect(),
                blocks: any_blocks(PortSet::everything()),
            };
        }
        let mut pods = Vec::new();
        for other in &self.pods {
            let dest = if dir == Dir::Ingress { pod.pod } else { other.pod };
            let mut ports = PortSet::default();
            for policy in &policies {
                for rule in policy.rules(dir).unwrap_or(&[]) {
                    if rule.peers.is_empty()
                        || rule
                            .peers
                            .iter()
                            .any(|p| self.peer_matches_pod(p, policy.namespace, other))
                    {
                        ports.union(&rule.ports_at(Some(dest)));
                    }
                }
            }
            if !ports.is_empty() {
                pods.push(PodPorts {
                    namespace: other.namespace.to_owned(),
                    name: other.pod.metadata.name().to_owned(),
                    ports,
                });
            }
        }
        let dest = if dir == Dir::Ingress { Some(pod.pod) } else { None };
        let mut blocks = Vec::new();
        for policy in &policies {
            for rule in policy.rules(dir).unwrap_or(&[]) {
                let ports = rule.ports_at(dest);
                if ports.is_empty() {
                    continue;
                }
                if rule.peers.is_empty() {
                    blocks.extend(any_blocks(ports));
                    continue;
                }
                for b in rule.peers.iter().filter_map(|p| p.block.as_ref()) {
                    blocks.push(BlockPorts {
                        cidr: b.text.cidr.clone(),
                        except: b.text.except.clone().unwrap_or_default(),
                        ports: ports.clone(),
                    });
                }
            }
        }
        Reach {
            policies: policies.iter().map(|p| p.key.clone()).collect(),
            pods,
            blocks,
        }
    }

    /// One direction of one connection: `pod` is the selected end, `other` the peer.
    fn decide(
        &self,
        pod: &PodView<'_>,
        other: &End<'_>,
        dir: Dir,
        protocol: Protocol,
        port: u16,
    ) -> Decision {
        let policies = self.selecting(pod, dir);
        if policies.is_empty() {
            return open_decision();
        }
        let dest = match (dir, other) {
            (Dir::Ingress, _) => Some(pod.pod),
            (Dir::Egress, End::Pod(p)) => Some(p.pod),
            (Dir::Egress, End::Address(_)) => None,
        };
        let allowed_by: Vec<String> = policies
            .iter()
            .filter(|policy| {
                policy.rules(dir).unwrap_or(&[]).iter().any(|rule| {
                    self.rule_matches(rule, policy.namespace, other)
                        && rule.ports_at(dest).contains(protocol, port)
                })
            })
            .map(|policy| policy.key.clone())
            .collect();
        Decision {
            isolated: true,
            allowed: !allowed_by.is_empty(),
            allowed_by,
        }
    }
}

fn name_only_labels(ns: &str) -> StringMap {
    [(NAMESPACE_NAME_LABEL.to_owned(), ns.to_owned())].into()
}

fn any_blocks(ports: PortSet) -> Vec<BlockPorts> {
    ["0.0.0.0/0", "::/0"]
        .into_iter()
        .map(|c| BlockPorts {
            cidr: c.to_owned(),
            except: Vec::new(),
            ports: ports.clone(),
        })
        .collect()
}

/// Addresses and CIDRs read the way the API server's lenient parser (`ParseIPSloppy`,
/// `ParseCIDRSloppy`) reads them, with Go `net.IPNet` containment. Shared with validation.
pub(crate) mod cidr {
    use std::net::IpAddr;

    /// An address as 16 bytes (IPv4 in its IPv4-mapped form), as Go's `net.IP` holds it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) struct GoIp(pub(crate) [u8; 16]);

    const V4_PREFIX: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

    impl GoIp {
        pub(crate) fn from_std(ip: IpAddr) -> GoIp {
            match ip {
                IpAddr::V4(v4) => GoIp(v4.to_ipv6_mapped().octets()),
                IpAddr::V6(v6) => GoIp(v6.octets()),
            }
        }

        /// The 4-byte form when the address is IPv4 or IPv4-mapped (Go's `To4`).
        fn to4(self) -> Option<[u8; 4]> {
            if self.0[..12] == V4_PREFIX {
                Some([self.0[12], self.0[13], self.0[14], self.0[15]])
            } else {
                None
            }
        }
    }

    /// A parsed CIDR: the masked network and the prefix as `ParseCIDRSloppy` returns them,
    /// plus what the strict check looks at.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub(crate) struct GoNet {
        /// Whether the address part was IPv4 text (4-byte network and mask).
        pub(crate) v4: bool,
        /// The network address (host bits cleared), 16-byte form.
        pub(crate) ip: [u8; 16],
        /// The prefix length as written.
        pub(crate) ones: u8,
        /// Leading zeros in an IPv4 octet, an over-long IPv6 group or the prefix length.
        pub(crate) leading_zeros: bool,
        /// IPv6 text holding an IPv4-mapped address.
        pub(crate) mapped: bool,
        /// Bits set beyond the prefix length.
        pub(crate) host_bits: bool,
    }

    fn mask_bytes(ones: u8, len: usize) -> [u8; 16] {
        let mut m = [0u8; 16];
        let mut left = usize::from(ones);
        for b in m.iter_mut().take(len) {
            let n = left.min(8);
            *b = if n == 0 { 0 } else { 0xffu8 << (8 - n) };
            left -= n;
        }
        m
    }

    impl GoNet {
        /// Go's `(*IPNet).Contains`.
        pub(crate) fn contains(&self, ip: &GoIp) -> bool {
            // The network number and mask as Go's networkNumberAndMask derives them.
            let (nn, mask): (Vec<u8>, Vec<u8>) = if self.v4 {
                (self.ip[12..].to_vec(), mask_bytes(self.ones, 4)[..4].to_vec())
            } else {
                let full = mask_bytes(self.ones, 16);
                match GoIp(self.ip).to4() {
                    Some(four) => (four.to_vec(), full[12..].to_vec()),
                    None => (self.ip.to_vec(), full.to_vec()),
                }
            };
            let addr: Vec<u8> = match ip.to4() {
                Some(four) => four.to_vec(),
                None => ip.0.to_vec(),
            };
            addr.len() == nn.len() && nn.iter().zip(&mask).zip(&addr).all(|((n, m), a)| n & m == a & m)
        }
    }

    /// Decimal digits at the start of `s`: (value, digits used), Go's `dtoi` (fails past 0xFFFFFF).
    fn dtoi(s: &[u8]) -> Option<(u32, usize)> {
        let mut n: u32 = 0;
        let mut i = 0;
        while i < s.len() && s[i].is_ascii_digit() {
            n = n * 10 + u32::from(s[i] - b'0');
            if n >= 0xFF_FFFF {
                return None;
            }
            i += 1;
        }
        if i == 0 { None } else { Some((n, i)) }
    }

    /// Hex digits at the start of `s`: (value, digits used), Go's `xtoi`.
    fn xtoi(s: &[u8]) -> Option<(u32, usize)> {
        let mut n: u32 = 0;
        let mut i = 0;
        while i < s.len() {
            let d = match s[i] {
                c @ b'0'..=b'9' => c - b'0',
                c @ b'a'..=b'f' => c - b'a' + 10,
                c @ b'A'..=b'F' => c - b'A' + 10,
                _ => break,
            };
            n = n * 16 + u32::from(d);
            if n >= 0xFF_FFFF {
                return None;
            }
            i += 1;
        }
        if i == 0 { None } else { Some((n, i)) }
    }

    /// Dotted-quad IPv4 with decimal octets (leading zeros allowed and flagged).
    fn parse_v4(s: &[u8], zeros: &mut bool) -> Option<[u8; 4]> {
        let mut out = [0u8; 4];
        let mut rest = s;
        for (i, slot) in out.iter_mut().enumerate() {
            if rest.is_empty() {
                return None;
            }
            if i > 0 {
                if rest[0] != b'.' {
                    return None;
                }
                rest = &rest[1..];
            }
            let (n, used) = dtoi(rest)?;
            if n > 0xFF {
                return None;
            }
            if used > 1 && rest[0] == b'0' {
                *zeros = true;
            }
            *slot = u8::try_from(n).ok()?;
            rest = &rest[used..];
        }
        if rest.is_empty() { Some(out) } else { None }
    }

    /// IPv6 text, with one `::` and an optional trailing dotted quad.
    fn parse_v6(s: &[u8], zeros: &mut bool) -> Option<[u8; 16]> {
        let mut ip = [0u8; 16];
        let mut ellipsis: Option<usize> = None;
        let mut rest = s;
        if rest.len() >= 2 && rest[0] == b':' && rest[1] == b':' {
            ellipsis = Some(0);
            rest = &rest[2..];
            if rest.is_empty() {
                return Some(ip);
            }
        }
        let mut i = 0usize;
        while i < 16 {
            let (n, used) = xtoi(rest)?;
            if n > 0xFFFF {
                return None;
            }
            if used < rest.len() && rest[used] == b'.' {
                if ellipsis.is_none() && i != 12 {
                    return None;
                }
                if i + 4 > 16 {
                    return None;
                }
                let four = parse_v4(rest, zeros)?;
                ip[i..i + 4].copy_from_slice(&four);
                rest = &[];
                i += 4;
                break;
            }
            if used > 4 {
                *zeros = true;
            }
            ip[i] = u8::try_from(n >> 8).ok()?;
            ip[i + 1] = u8::try_from(n & 0xff).ok()?;
            i += 2;
            rest = &rest[used..];
            if rest.is_empty() {
                break;
            }
            if rest[0] != b':' || rest.len() == 1 {
                return None;
            }
            rest = &rest[1..];
            if rest[0] == b':' {
                if ellipsis.is_some() {
                    return None;
                }
                ellipsis = Some(i);
                rest = &rest[1..];
                if rest.is_empty() {
                    break;
                }
            }
        }
        if !rest.is_empty() {
            return None;
        }
        if i < 16 {
            let e = ellipsis?;
            let n = 16 - i;
            for j in (e..i).rev() {
                ip[j + n] = ip[j];
            }
            for b in ip.iter_mut().skip(e).take(n) {
                *b = 0;
            }
        } else if ellipsis.is_some() {
            return None;
        }
        Some(ip)
    }

    /// Go's `ParseIPSloppy`.
    pub(crate) fn parse_ip_sloppy(s: &str) -> Option<GoIp> {
        let mut zeros = false;
        let b = s.as_bytes();
        if let Some(four) = parse_v4(b, &mut zeros) {
            return Some(GoIp::from_std(IpAddr::from(four)));
        }
        parse_v6(b, &mut zeros).map(GoIp)
    }

    /// Go's `ParseCIDRSloppy`, keeping what the strict check needs.
    pub(crate) fn parse_cidr_sloppy(s: &str) -> Option<GoNet> {
        let slash = s.find('/')?;
        let (addr, mask) = (&s.as_bytes()[..slash], &s.as_bytes()[slash + 1..]);
        let mut leading_zeros = false;
        let (v4, ip) = match parse_v4(addr, &mut leading_zeros) {
            Some(four) => (true, GoIp::from_std(IpAddr::from(four)).0),
            None => (false, parse_v6(addr, &mut leading_zeros)?),
        };
        let (n, used) = dtoi(mask)?;
        let bits = if v4 { 32 } else { 128 };
        if used != mask.len() || n > bits {
            return None;
        }
        if used > 1 && mask[0] == b'0' {
            leading_zeros = true;
        }
        let ones = u8::try_from(n).ok()?;
        let mut masked = ip;
        let m = if v4 {
            let m4 = mask_bytes(ones, 4);
            let mut m = [0xffu8; 16];
            m[12..].copy_from_slice(&m4[..4]);
            m
        } else {
            mask_bytes(ones, 16)
        };
        for (b, mb) in masked.iter_mut().zip(m) {
            *b &= mb;
        }
        let mapped = !v4 && ip[..12] == V4_PREFIX;
        Some(GoNet {
            v4,
            ip: masked,
            ones,
            leading_zeros,
            mapped,
            host_bits: masked != ip,
        })
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        fn net(s: &str) -> GoNet {
            parse_cidr_sloppy(s).unwrap_or_else(|| panic!("{s} should parse"))
        }

        fn ip(s: &str) -> GoIp {
            parse_ip_sloppy(s).unwrap_or_else(|| panic!("{s} should parse"))
        }

        #[test]
        fn sloppy_parse_accepts_what_go_accepts() {
            for ok in [
                "10.0.0.0/8",
                "010.0.0.0/8",
                "10.0.0.0/08",
                "192.168.1.1/24",
                "::/0",
                "fd00::/64",
                "FD00:0:0:0:0:0:0:0/64",
                "::ffff:1.2.3.0/120",
                "1:2:3:4:5:6:7::/128",
                "0.0.0.0/0",
            ] {
                assert!(parse_cidr_sloppy(ok).is_some(), "{ok}");
            }
            for bad in [
                "",
                " ",
                "192.168.5.6",
                "fd00:192:168::",
                "300.300.300.300/8",
                "10.0.0.0/33",
                "::/129",
                "10.0.0.0/",
                "10.0.0/8",
                "1::2::3/64",
                "1:2:3:4:5:6:7:8::/64",
                "10.0.0.0/+8",
                "fe80::1%eth0/64",
                "10.0.0.0/8 ",
            ] {
                assert!(parse_cidr_sloppy(bad).is_none(), "{bad:?}");
            }
        }

        #[test]
        fn strict_flags() {
            assert!(net("010.0.0.0/8").leading_zeros);
            assert!(net("10.0.0.0/08").leading_zeros);
            assert!(!net("10.0.0.0/8").leading_zeros);
            assert!(net("00001::/16").leading_zeros);
            assert!(net("::ffff:1.2.3.0/120").mapped);
            assert!(net("192.168.1.1/24").host_bits);
            assert!(!net("192.168.1.0/24").host_bits);
            assert!(!net("fd00::/8").host_bits);
        }

        #[test]
        fn containment_follows_go() {
            let n = net("192.168.0.0/16");
            assert!(n.contains(&ip("192.168.3.4")));
            assert!(!n.contains(&ip("192.169.0.1")));
            assert!(!n.contains(&ip("fd00::1")));
            // An IPv4-mapped IPv6 address is read as IPv4.
            assert!(n.contains(&ip("::ffff:192.168.1.1")));
            // An IPv4-mapped network behaves like its IPv4 form.
            let mapped = net("::ffff:10.0.0.0/104");
            assert!(mapped.contains(&ip("10.1.2.3")));
            assert!(!mapped.contains(&ip("11.1.2.3")));
            let v6 = net("fd00::/8");
            assert!(v6.contains(&ip("fd12::1")));
            assert!(!v6.contains(&ip("10.0.0.1")));
            assert!(net("0.0.0.0/0").contains(&ip("1.2.3.4")));
            assert!(!net("0.0.0.0/0").contains(&ip("::1")));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn port_set_merges_and_contains() {
        let mut s = PortSet::default();
        assert!(s.is_empty());
        s.insert(PortRange {
            protocol: Protocol::Tcp,
            first: 80,
            last: 80,
        });
        s.insert(PortRange {
            protocol: Protocol::Tcp,
            first: 81,
            last: 90,
        });
        s.insert(PortRange {
            protocol: Protocol::Udp,
            first: 53,
            last: 53,
        });
        assert_eq!(s.ranges.len(), 2);
        assert!(s.contains(Protocol::Tcp, 85));
        assert!(!s.contains(Protocol::Udp, 85));
        assert!(!s.contains(Protocol::Tcp, 91));
        let mut all = PortSet::everything();
        all.union(&s);
        assert!(all.all && all.ranges.is_empty());
        s.union(&PortSet::everything());
        assert!(s.all);
    }
}
