//! The reference model: what Kubernetes' Service rules decide for a packet, computed from the
//! [`ProxyModel`] alone (no rules), for comparison with the tracers.
//!
//! Where kube-proxy's backends legitimately differ, the [`Dialect`] says which one is meant:
//! - another port or protocol on an allocated ClusterIP: iptables leaves it alone, nftables
//!   rejects it (`cluster-ips-check`);
//! - hairpin masquerading: iptables marks a packet whose source is any chosen endpoint;
//!   nftables v1.37.2 only a local one (`hairpin-connections` holds local endpoints);
//! - LoadBalancer source ranges: nftables drops a disallowed source before anything else,
//!   even when the Service has no endpoints (iptables rejects those first);
//! - a Service's `healthCheckNodePort`: iptables accepts it in filter `KUBE-NODEPORTS`;
//!   nftables has no such rule;
//! - NodePort addresses: with none configured, iptables serves NodePorts on every local
//!   address, nftables on the node IP only; iptables rejects (no endpoints) or drops (eTP
//!   Local, none local) NodePort traffic to any local address, even outside the NodePort
//!   addresses.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};

use super::{HostAddresses, Outcome, Packet, Trace};
use crate::RulesError;
use crate::proxy::{Endpoint, LocalDetector, ProxyConfig, ProxyModel, ServicePortInfo};

/// Which backend's documented behaviour the reference model follows where they differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// kube-proxy's iptables mode.
    Iptables,
    /// kube-proxy's nftables mode.
    Nftables,
}

fn answer(outcome: Outcome, eps: &[Endpoint], masquerade: bool) -> Trace {
    let endpoints: BTreeSet<SocketAddr> = if outcome == Outcome::Dnat {
        eps.iter().map(Endpoint::addr).collect()
    } else {
        BTreeSet::new()
    };
    Trace {
        outcome,
        endpoints,
        masquerade,
        walk: Vec::new(),

        notes: Vec::new(),
    }
}

fn verdict(outcome: Outcome) -> Trace {
    answer(outcome, &[], false)
}

fn dnat(eps: &[Endpoint], masq: bool, source: IpAddr, dialect: Dialect) -> Trace {
    if eps.is_empty() {
        // A policy chain with no endpoint: nothing DNATs; the filter rules decide (DROP).
        return verdict(Outcome::Drop);
    }
    let hairpin = eps
        .iter()
        .any(|e| e.ip == source && (dialect == Dialect::Iptables || e.is_local));
    answer(Outcome::Dnat, eps, masq || hairpin)
}

/// The outcome of `packet` on the node of `config`, from `model` alone.
pub fn reference(
    model: &ProxyModel,
    config: &ProxyConfig,
    host: &HostAddresses,
    dialect: Dialect,
    packet: &Packet,
) -> Result<Trace, RulesError> {
    let src = packet.source;
    let from_pod = match config.detector() {
        LocalDetector::Cidr(c) => c.contains(&src),
        LocalDetector::NoOp => false,
    };
    let from_node = host.is_local(src);
    let npa = config.nodeport_addresses_for(dialect == Dialect::Nftables)?;
    let nodeport_ips: Vec<IpAddr> = if npa.match_all {
        Vec::new()
    } else {
        npa.node_ips(&config.host_addresses)
    };
    let is_nodeport_ip = |ip: IpAddr| {
        if npa.match_all {
            host.is_local(ip) && !ip.is_loopback()
        } else {
            nodeport_ips.contains(&ip) && !ip.is_loopback()
        }
    };
    let ports: Vec<&ServicePortInfo> = model
        .ports
        .iter()
        .filter(|p| p.protocol == packet.protocol)
        .collect();
    for sp in &ports {
        if packet.destination == sp.cluster_ip && packet.port == sp.port {
            if !sp.has_endpoints {
                return Ok(verdict(Outcome::Reject));
            }
            if !sp.has_internal_endpoints() {
                return Ok(verdict(Outcome::Drop));
            }
            let eps = if sp.internal_policy_local {
                &sp.local_endpoints
            } else {
                &sp.cluster_endpoints
            };
            let masq = config.masquerade_all
                || matches!(config.detector(), LocalDetector::Cidr(c) if !c.contains(&src));
            return Ok(dnat(eps, masq, src, dialect));
        }
        let lb = sp.load_balancer_vips.contains(&packet.destination);
        let external = packet.port == sp.port && (sp.external_ips.contains(&packet.destination) || lb);
        let nodeport_port = sp.node_port != 0 && packet.port == sp.node_port;
        let nodeport = nodeport_port && is_nodeport_ip(packet.destination);
        if !(external || nodeport) {
            // iptables' filter rules for NodePorts without (local) endpoints match any local
            // destination (`-m addrtype --dst-type LOCAL`), whatever the NodePort addresses.
            if dialect == Dialect::Iptables && nodeport_port && host.is_local(packet.destination) {
                if !sp.has_endpoints {
                    return Ok(verdict(Outcome::Reject));
                }
                if !sp.has_external_endpoints() {
                    return Ok(verdict(Outcome::Drop));
                }
            }
            continue;
        }
        // nftables checks source ranges in the pre-DNAT filter hook, before anything else and
        // whether or not there are endpoints; iptables rejects a Service without endpoints
        // first and writes its firewall chain only when there are endpoints.
        let firewall = external
            && lb
            && !sp.load_balancer_source_ranges.is_empty()
            && (dialect == Dialect::Nftables || sp.has_endpoints);
        if !sp.has_endpoints && !firewall {
            return Ok(verdict(Outcome::Reject));
        }
        if firewall {
            let ranges = &sp.load_balancer_source_ranges;
            let allowed = ranges.iter().any(|r| r.contains(&src))
                || (ranges.iter().any(|r| r.contains(&config.node_ip))
                    && sp.load_balancer_vips.contains(&src));
            if !allowed {
                return Ok(verdict(Outcome::Drop));
            }
            if !sp.has_endpoints {
                return Ok(verdict(Outcome::Reject));
            }
        }
        if !sp.external_policy_local {
            return Ok(dnat(&sp.cluster_endpoints, true, src, dialect));
        }
        if from_pod {
            return Ok(dnat(&sp.cluster_endpoints, false, src, dialect));
        }
        if from_node {
            return Ok(dnat(&sp.cluster_endpoints, true, src, dialect));
        }
        return Ok(dnat(&sp.local_endpoints, false, src, dialect));
    }
    if dialect == Dialect::Nftables && model.ports.iter().any(|p| p.cluster_ip == packet.destination) {
        return Ok(verdict(Outcome::Reject));
    }
    if dialect == Dialect::Iptables
        && model
            .ports
            .iter()
            .any(|p| p.health_check_node_port != 0 && p.health_check_node_port == packet.port)
        && packet.protocol == crate::proxy::Protocol::Tcp
    {
        return Ok(verdict(Outcome::Accept));
    }
    Ok(verdict(Outcome::Pass))
}
