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
//!
//! IPVS mode ([`Dialect::Ipvs`], `pkg/proxy/ipvs/proxier.go` of v1.37.2) differs more:
//! - no policy drop: a virtual server whose policy is Local gets the local endpoints when
//!   there are some and the cluster endpoints otherwise (`syncEndpoint`, "Allow access from
//!   local PODs even if no local endpoints exist"), and that for every source: pod and node
//!   traffic to an external destination is not short-circuited to the cluster endpoints;
//! - a virtual server without endpoints rejects (IPVS answers ICMP port unreachable);
//! - externalTrafficPolicy Local never masquerades (`KUBE-LOAD-BALANCER-LOCAL` and
//!   `KUBE-NODE-PORT-LOCAL-*` return before `KUBE-MARK-MASQ`), not even node traffic; Cluster
//!   always does; NodePort ports are marked on every local address (the `bitmap:port` sets),
//!   loopback and addresses serving no NodePort included;
//! - a new connection to an address IPVS holds (ClusterIPs, external IPs, load-balancer IPs)
//!   on a port without a virtual server is rejected by `KUBE-IPVS-FILTER`;
//! - `loadBalancerSourceRanges` drop before anything else (as nftables); the node is allowed
//!   when a range holds the node IP and the source is the load-balancer IP itself;
//! - health-check node ports are accepted (TCP and UDP: the set is a `bitmap:port`) on local
//!   addresses only;
//! - hairpin masquerading needs a local endpoint (`KUBE-LOOP-BACK`), and also applies to a pod
//!   connecting to its own address directly.

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
    /// kube-proxy's IPVS mode (virtual servers with the companion iptables rules).
    Ipvs,
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
    if dialect == Dialect::Ipvs {
        return reference_ipvs(model, config, host, packet);
    }
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

/// The IPVS dialect of [`reference`].
fn reference_ipvs(
    model: &ProxyModel,
    config: &ProxyConfig,
    host: &HostAddresses,
    packet: &Packet,
) -> Result<Trace, RulesError> {
    use crate::ipvs::{IpvsOptions, IpvsSettings};
    use crate::proxy::Protocol;

    let (src, dst, port, proto) = (packet.source, packet.destination, packet.port, packet.protocol);
    let ports: Vec<&ServicePortInfo> = model.ports.iter().filter(|p| p.protocol == proto).collect();
    // Only NodePort frontends need the NodePort addresses.
    let node_port_ips = if ports.iter().any(|p| p.node_port != 0 && p.node_port == port) {
        IpvsSettings::from_config(config, &IpvsOptions::default())?.node_port_ips
    } else {
        Vec::new()
    };
    // Addresses IPVS binds to kube-ipvs0 (node addresses among them are local anyway).
    let vip = |ip: IpAddr| {
        model
            .ports
            .iter()
            .any(|p| p.cluster_ip == ip || p.external_ips.contains(&ip) || p.load_balancer_vips.contains(&ip))
    };
    let local = |ip: IpAddr| host.is_local(ip) || vip(ip);
    let loopback = |ip: IpAddr, port: u16| {
        ports.iter().any(|p| {
            p.endpoints
                .iter()
                .any(|e| e.is_local && e.ip == ip && e.port == port)
        })
    };

    // The frontend (virtual server) the packet names, with whether its policy is Local.
    enum Kind {
        Cluster,
        External,
        LoadBalancer,
        NodePort,
    }
    let mut frontend: Option<(&ServicePortInfo, Kind)> = None;
    for sp in &ports {
        let kind = if sp.cluster_ip == dst && sp.port == port {
            Kind::Cluster
        } else if sp.port == port && sp.load_balancer_vips.contains(&dst) {
            Kind::LoadBalancer
        } else if sp.port == port && sp.external_ips.contains(&dst) {
            Kind::External
        } else if sp.node_port != 0 && sp.node_port == port && node_port_ips.contains(&dst) {
            Kind::NodePort
        } else {
            continue;
        };
        frontend = Some((sp, kind));
        break;
    }

    // nat PREROUTING: the masquerade mark.
    let mut mark = false;
    if !src.is_loopback() {
        let mut stop = false;
        for sp in &ports {
            if sp.port != port {
                continue;
            }
            if sp.load_balancer_vips.contains(&dst) && !sp.external_policy_local {
                mark = true;
            }
            if sp.cluster_ip == dst {
                mark |= config.masquerade_all
                    || match config.detector() {
                        LocalDetector::Cidr(c) => !c.contains(&src),
                        LocalDetector::NoOp => false,
                    };
            }
            if sp.external_ips.contains(&dst) {
                mark |= !sp.external_policy_local;
                // `KUBE-SERVICES` accepts external-IP traffic before the NodePort jump.
                stop = true;
            }
        }
        if !config.masquerade_all
            && config.detector() == LocalDetector::NoOp
            && ports.iter().any(|sp| sp.cluster_ip == src && sp.port == port)
        {
            mark = true;
        }
        if !stop && local(dst) && !node_port_ips.is_empty() {
            let np: Vec<&&ServicePortInfo> = ports
                .iter()
                .filter(|sp| sp.node_port != 0 && sp.node_port == port)
                .filter(|_| proto != Protocol::Sctp || node_port_ips.contains(&dst))
                .collect();
            if !np.iter().any(|sp| sp.external_policy_local) && !np.is_empty() {
                mark = true;
            }
        }
    }

    // filter INPUT.
    let mut accepted = false;
    if local(dst) {
        let health = matches!(proto, Protocol::Tcp | Protocol::Udp)
            && model
                .ports
                .iter()
                .any(|p| p.health_check_node_port != 0 && p.health_check_node_port == port);
        let named = matches!(
            frontend,
            Some((_, Kind::Cluster | Kind::LoadBalancer | Kind::External))
        );
        let ipvs_address = vip(dst) && !host.is_local(dst) || model.ports.iter().any(|p| p.cluster_ip == dst);
        if ipvs_address && !named && !health {
            return Ok(verdict(Outcome::Reject));
        }
        if let Some((sp, Kind::LoadBalancer)) = &frontend {
            let ranges = &sp.load_balancer_source_ranges;
            if !ranges.is_empty() {
                let allowed = ranges.iter().any(|r| r.contains(&src))
                    || (ranges.iter().any(|r| r.contains(&config.node_ip)) && src == dst);
                if !allowed {
                    return Ok(verdict(Outcome::Drop));
                }
            }
        }
        accepted = health;
    }

    // The IPVS lookup.
    let Some((sp, kind)) = frontend else {
        let outcome = if accepted { Outcome::Accept } else { Outcome::Pass };
        return Ok(answer(outcome, &[], mark || (src == dst && loopback(dst, port))));
    };
    let only_local = match kind {
        Kind::Cluster => sp.internal_policy_local,
        _ => sp.external_policy_local,
    };
    let eps = if only_local && !sp.local_endpoints.is_empty() {
        &sp.local_endpoints
    } else {
        &sp.cluster_endpoints
    };
    if eps.is_empty() {
        return Ok(verdict(Outcome::Reject));
    }
    let hairpin = eps.iter().any(|e| e.ip == src && loopback(e.ip, e.port));
    Ok(answer(Outcome::Dnat, eps, mark || hairpin))
}
