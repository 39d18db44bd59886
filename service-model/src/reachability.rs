//! NetworkPolicy reachability: which peers may reach a pod, and which it may reach, on which
//! ports — what a CNI plugin enforcing networking.k8s.io/v1 NetworkPolicy allows, as data.
//!
//! Follows the NetworkPolicy semantics of Kubernetes v1.37.2
//! (`staging/src/k8s.io/api/networking/v1/types.go`) as the upstream network-policy e2e probes
//! check them (`test/e2e/network/netpol`).
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
//! use svcnet_model::reachability::{self, Cluster, Peer, Protocol};
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
//! let v = reachability::check(&cluster, &Peer::Pod(&client), &Peer::Pod(&web), Protocol::Tcp, 80);
//! assert!(!v.allowed);
//! ```

use std::collections::BTreeMap;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::netparse;
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

/// A transport protocol a NetworkPolicy port can name: the model's one protocol type.
pub use crate::net::Protocol;

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
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
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
#[non_exhaustive]
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
pub enum Peer<'a> {
    /// A pod (policies apply to it; selectors and ipBlocks match it).
    Pod(&'a Pod),
    /// An address outside the cluster's pods (only ipBlocks match it; no policy applies to it).
    Address(IpAddr),
}

/// The decision of one direction for one connection.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
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
#[non_exhaustive]
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
    from: &Peer<'_>,
    to: &Peer<'_>,
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
    ips: Vec<netparse::GoIp>,
}

impl<'a> PodView<'a> {
    fn new(pod: &'a Pod) -> Self {
        PodView {
            pod,
            namespace: ns_of(&pod.metadata),
            labels: pod.metadata.labels.as_ref().unwrap_or(empty_labels()),
            ips: pod
                .ips()
                .into_iter()
                .filter_map(netparse::parse_ip_sloppy)
                .collect(),
        }
    }
}

/// One end of a connection, read.
enum End<'a> {
    Pod(PodView<'a>),
    Address(netparse::GoIp),
}

/// A parsed `ipBlock`: the CIDR and the excepts that parse, with the text for the output.
struct Block<'p> {
    text: &'p IpBlock,
    net: Option<netparse::GoNet>,
    except: Vec<netparse::GoNet>,
}

impl<'p> Block<'p> {
    fn new(text: &'p IpBlock) -> Self {
        Block {
            text,
            net: netparse::parse_cidr_sloppy(&text.cidr),
            except: text
                .except
                .iter()
                .flatten()
                .filter_map(|e| netparse::parse_cidr_sloppy(e))
                .collect(),
        }
    }

    fn contains(&self, ip: &netparse::GoIp) -> bool {
        self.net.as_ref().is_some_and(|n| n.contains(ip)) && !self.except.iter().any(|e| e.contains(ip))
    }
}

/// One peer of a rule. With none of the three set it matches nothing (validation refuses it).
struct RulePeer<'p> {
    pods: Option<&'p LabelSelector>,
    namespaces: Option<&'p LabelSelector>,
    block: Option<Block<'p>>,
}

/// One rule of a policy, direction-neutral. No peers: every peer.
struct Rule<'p> {
    ports: &'p [NetworkPolicyPort],
    peers: Vec<RulePeer<'p>>,
}

impl<'p> Rule<'p> {
    fn new(ports: Option<&'p [NetworkPolicyPort]>, peers: Option<&'p [NetworkPolicyPeer]>) -> Self {
        Rule {
            ports: ports.unwrap_or(&[]),
            peers: peers
                .unwrap_or(&[])
                .iter()
                .map(|p| RulePeer {
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
    let Some(protocol) = Protocol::parse(entry.protocol()) else {
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
        .filter(|cp| cp.name.as_deref() == Some(name) && Protocol::parse(cp.protocol()) == Some(protocol))
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

    fn end<'p>(&self, e: &Peer<'p>) -> End<'p> {
        match e {
            Peer::Pod(p) => End::Pod(PodView::new(p)),
            Peer::Address(ip) => End::Address(netparse::GoIp::from_std(*ip)),
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
    fn peer_matches_pod(&self, peer: &RulePeer<'_>, policy_ns: &str, other: &PodView<'_>) -> bool {
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
