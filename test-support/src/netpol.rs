//! A direct, naive reading of the NetworkPolicy rules, one connection at a time: the reference
//! the model's reachability is tested against (its property tests and the `netpol` fuzz target).

use std::net::IpAddr;

use ipnet::IpNet;
use svcnet_model::reachability::{Namespace, Protocol};
use svcnet_model::{
    IntOrString, IpBlock, NetworkPolicy, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec, Pod,
    StringMap,
};

fn ns_labels(namespaces: &[Namespace], name: &str) -> StringMap {
    let mut labels = namespaces
        .iter()
        .find(|n| n.name == name)
        .map(|n| n.labels.clone())
        .unwrap_or_default();
    labels.insert("kubernetes.io/metadata.name".into(), name.into());
    labels
}

fn labels_of(pod: &Pod) -> StringMap {
    pod.metadata.labels.clone().unwrap_or_default()
}

fn ips_of(pod: &Pod) -> Vec<IpAddr> {
    pod.ips().iter().filter_map(|s| s.parse().ok()).collect()
}

/// Whether `ip` is in `block`'s CIDR and in none of its exceptions.
pub fn block_has(block: &IpBlock, ip: IpAddr) -> bool {
    let inside = |c: &str| c.parse::<IpNet>().is_ok_and(|n| n.contains(&ip));
    inside(&block.cidr) && !block.except.iter().flatten().any(|e| inside(e))
}

/// The other side of a connection.
pub enum Peer<'a> {
    /// A Pod of the cluster.
    Pod(&'a Pod),
    /// An address outside the cluster's Pods.
    Ip(IpAddr),
}

fn types_of(spec: &NetworkPolicySpec) -> (bool, bool) {
    match &spec.policy_types {
        Some(t) if !t.is_empty() => (t.iter().any(|x| x == "Ingress"), t.iter().any(|x| x == "Egress")),
        _ => (true, spec.egress.as_ref().is_some_and(|e| !e.is_empty())),
    }
}

fn port_ok(ports: &[NetworkPolicyPort], dest: Option<&Pod>, proto: Protocol, port: u16) -> bool {
    if ports.is_empty() {
        return true;
    }
    ports.iter().any(|p| {
        if p.protocol() != proto.as_str() {
            return false;
        }
        match &p.port {
            None => true,
            Some(IntOrString::Int(n)) => match p.end_port {
                None => i32::from(port) == *n,
                Some(e) => *n <= i32::from(port) && i32::from(port) <= e,
            },
            Some(IntOrString::String(name)) => dest.is_some_and(|d| {
                d.spec().containers().iter().flat_map(|c| c.ports()).any(|cp| {
                    cp.name.as_deref() == Some(name.as_str())
                        && cp.protocol() == proto.as_str()
                        && cp.container_port == i32::from(port)
                })
            }),
        }
    })
}

fn peer_ok(peers: &[NetworkPolicyPeer], policy_ns: &str, namespaces: &[Namespace], other: &Peer<'_>) -> bool {
    if peers.is_empty() {
        return true;
    }
    peers.iter().any(|peer| {
        if let Some(b) = &peer.ip_block {
            return match other {
                Peer::Pod(p) => ips_of(p).into_iter().any(|ip| block_has(b, ip)),
                Peer::Ip(ip) => block_has(b, *ip),
            };
        }
        let Peer::Pod(p) = other else { return false };
        if peer.pod_selector.is_none() && peer.namespace_selector.is_none() {
            return false;
        }
        let pns = p.metadata.namespace();
        let ns_match = match &peer.namespace_selector {
            None => pns == policy_ns,
            Some(s) => s.matches(&ns_labels(namespaces, pns)),
        };
        ns_match
            && peer
                .pod_selector
                .as_ref()
                .is_none_or(|s| s.matches(&labels_of(p)))
    })
}

/// Whether `selected`'s side of `ingress`/`egress` lets the connection with `other` through
/// (`proto`/`port` at the destination).
pub fn side_ok(
    policies: &[NetworkPolicy],
    namespaces: &[Namespace],
    selected: &Pod,
    other: &Peer<'_>,
    ingress: bool,
    proto: Protocol,
    port: u16,
) -> bool {
    let mut isolated = false;
    let mut allowed = false;
    for np in policies {
        let spec = np.spec.clone().unwrap_or_default();
        if np.metadata.namespace() != selected.metadata.namespace() {
            continue;
        }
        if !spec
            .pod_selector
            .clone()
            .unwrap_or_default()
            .matches(&labels_of(selected))
        {
            continue;
        }
        let (ti, te) = types_of(&spec);
        if (ingress && !ti) || (!ingress && !te) {
            continue;
        }
        isolated = true;
        let ns = np.metadata.namespace();
        if ingress {
            for r in spec.ingress.iter().flatten() {
                if peer_ok(r.from.as_deref().unwrap_or(&[]), ns, namespaces, other)
                    && port_ok(r.ports.as_deref().unwrap_or(&[]), Some(selected), proto, port)
                {
                    allowed = true;
                }
            }
        } else {
            let dest = match other {
                Peer::Pod(p) => Some(*p),
                Peer::Ip(_) => None,
            };
            for r in spec.egress.iter().flatten() {
                if peer_ok(r.to.as_deref().unwrap_or(&[]), ns, namespaces, other)
                    && port_ok(r.ports.as_deref().unwrap_or(&[]), dest, proto, port)
                {
                    allowed = true;
                }
            }
        }
    }
    !isolated || allowed
}

/// The (protocol, port) pairs differential tests ask about: the ports the generated policies and
/// containers name (53, 80, 81 and a port none names, 82), over each protocol.
pub const QUERIES: [(Protocol, u16); 7] = [
    (Protocol::Tcp, 53),
    (Protocol::Tcp, 80),
    (Protocol::Tcp, 81),
    (Protocol::Tcp, 82),
    (Protocol::Udp, 53),
    (Protocol::Udp, 80),
    (Protocol::Sctp, 80),
];
