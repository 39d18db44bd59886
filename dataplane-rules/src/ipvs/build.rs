//! Building the IPVS rule set of one node (`syncProxyRules` of `pkg/proxy/ipvs/proxier.go`).
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/ipvs/proxier.go`.

use std::net::IpAddr;

use compact_str::CompactString;
use ipnet::IpNet;

use super::ipset::{IpSetEntry, IpSetKind, IpSets};
use crate::RulesError;
use crate::proxy::{Endpoint, LocalDetector, ProxyConfig, ProxyModel};

use super::iptables::{BlockedFromNode, ClusterIpMasquerade, IptablesPart, IptablesSettings};
use super::server::{Protocol, RealServer, ServiceFlags, TextOrder, VirtualServer, v4_text_cmp};
use super::sort::radix_sort_by_key;
use super::{DUMMY_DEVICE, IpvsRuleSet};

/// The node settings IPVS mode depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpvsSettings {
    /// Whether this is the IPv6 proxier.
    pub ipv6: bool,
    /// The node IP (source ranges that hold it let the node reach a load balancer).
    pub node_ip: IpAddr,
    /// The scheduler (`--ipvs-scheduler`, default `rr`).
    pub scheduler: CompactString,
    /// The masquerade mark text.
    pub mark: String,
    /// How ClusterIP traffic is masqueraded.
    pub cluster_ip_masquerade: ClusterIpMasquerade,
    /// The node's interfaces and their addresses (what netlink lists), `kube-ipvs0` included
    /// when it already holds addresses.
    pub interfaces: Vec<(String, Vec<IpAddr>)>,
    /// The addresses NodePort virtual servers are created on (from `--nodeport-addresses` and
    /// `interfaces`).
    pub node_port_ips: Vec<IpAddr>,
    /// Name IPv6 sets as kube-proxy's test fake does (`KUBE-...`, no `KUBE-6-` prefix).
    /// Off by default: kube-proxy v1.37.2's `NewProxier` names them `KUBE-6-...`.
    pub unprefixed_ipv6_sets: bool,
}

/// What IPVS mode needs of one service port, as the per-node proxy model gives it.
#[derive(Debug, Clone, Copy)]
pub struct PortInput<'a> {
    /// The ClusterIP of the proxier's family.
    pub cluster_ip: IpAddr,
    /// The Service port.
    pub port: u16,
    /// The protocol.
    pub protocol: Protocol,
    /// The NodePort, 0 when none.
    pub node_port: u16,
    /// The health-check NodePort, 0 when none.
    pub health_check_node_port: u16,
    /// The external IPs of the family.
    pub external_ips: &'a [IpAddr],
    /// The load-balancer VIPs of the family.
    pub load_balancer_ips: &'a [IpAddr],
    /// The load-balancer source ranges (empty: allow all).
    pub source_ranges: &'a [IpNet],
    /// The ClientIP affinity timeout in seconds, `None` without affinity.
    pub affinity_timeout: Option<u32>,
    /// `internalTrafficPolicy: Local`.
    pub internal_local: bool,
    /// `externalTrafficPolicy: Local` on an externally accessible Service.
    pub external_local: bool,
    /// The cluster endpoints.
    pub cluster: &'a [Endpoint],
    /// The local endpoints.
    pub local: &'a [Endpoint],
    /// Every endpoint of the port whatever its conditions (the local ones are hairpinned).
    pub all: &'a [Endpoint],
}

/// Whether netlink would list `a` as a node address of the proxier's family: same family,
/// not loopback, not IPv6 link-local (`isValidForSet`).
fn valid_for_set(a: IpAddr, ipv6: bool) -> bool {
    match a {
        IpAddr::V4(v4) => !ipv6 && !v4.is_loopback(),
        IpAddr::V6(v6) => {
            if v6.to_ipv4_mapped().is_some() {
                return !ipv6 && !v6.to_ipv4_mapped().is_some_and(|v| v.is_loopback());
            }
            ipv6 && !v6.is_loopback() && !v6.is_unicast_link_local()
        }
    }
}

/// The addresses NodePort virtual servers go on. With `cidrs` empty for the family or
/// holding a zero CIDR ("match all"), every address of every interface but `kube-ipvs0`
/// that is of the family and neither loopback nor IPv6 link-local; else each interface
/// address inside one of the family's CIDRs, loopback left out. In value order, each once.
pub(crate) fn node_port_addresses(
    ipv6: bool,
    cidrs: &[IpNet],
    interfaces: &[(String, Vec<IpAddr>)],
) -> Vec<IpAddr> {
    let fam: Vec<IpNet> = cidrs
        .iter()
        .copied()
        .filter(|c| matches!(c, IpNet::V6(_)) == ipv6)
        .collect();
    let match_all = fam.is_empty() || fam.iter().any(|c| c.prefix_len() == 0);
    let mut out: Vec<IpAddr> = Vec::new();
    for (name, addrs) in interfaces {
        for &a in addrs {
            let take = if match_all {
                name != DUMMY_DEVICE && valid_for_set(a, ipv6)
            } else {
                !a.is_loopback() && fam.iter().any(|c| c.contains(&a))
            };
            if take {
                out.push(a);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

/// Whether endpoint `a` comes before `b` in `ip:port` text order (IPv4 pairs are compared
/// without building their text keys).
#[inline]
fn text_before(a: &Endpoint, b: &Endpoint) -> bool {
    match (&a.ip, &b.ip) {
        (IpAddr::V4(x), IpAddr::V4(y)) => v4_text_cmp(*x, a.port, *y, b.port).is_lt(),
        _ => TextOrder::of(a.ip, a.port) < TextOrder::of(b.ip, b.port),
    }
}

/// The real servers of endpoints: weight 1, in `ip:port` text order, each once. The proxy
/// model's lists are in that order already (checked, then copied as they are); `scratch`
/// is reused between calls to sort the others.
fn real_servers(eps: &[Endpoint], scratch: &mut Vec<(TextOrder, RealServer)>) -> Vec<RealServer> {
    if eps.windows(2).all(|w| text_before(&w[0], &w[1])) {
        return eps.iter().map(|e| RealServer::new(e.ip, e.port)).collect();
    }
    sorted_real_servers(eps, scratch)
}

/// [`real_servers`] of endpoints out of order (or repeated).
#[cold]
fn sorted_real_servers(eps: &[Endpoint], scratch: &mut Vec<(TextOrder, RealServer)>) -> Vec<RealServer> {
    scratch.clear();
    scratch.extend(
        eps.iter()
            .map(|e| (TextOrder::of(e.ip, e.port), RealServer::new(e.ip, e.port))),
    );
    scratch.sort_by_key(|a| a.0);
    scratch.dedup_by(|a, b| a.0 == b.0);
    scratch.iter().map(|(_, r)| *r).collect()
}

/// Gives the virtual servers at `pending` (index, uses the local endpoints) their real servers,
/// each list built once: the first virtual server that takes it gets it, the others a copy.
fn fill_real_servers(
    vss: &mut [VirtualServer],
    pending: &[(usize, bool)],
    p: &PortInput<'_>,
    scratch: &mut Vec<(TextOrder, RealServer)>,
) {
    for local in [false, true] {
        let mut users = pending.iter().filter(|(_, l)| *l == local).map(|(i, _)| *i);
        let Some(first) = users.next() else {
            continue;
        };
        let list = real_servers(if local { p.local } else { p.cluster }, scratch);
        // `pending` holds indices of `vss`.
        for i in users {
            vss[i].real_servers = list.clone();
        }
        vss[first].real_servers = list;
    }
}

/// Sorts addresses (IPv4 ones, the usual case, as their numbers: the same order, and a
/// quarter of the memory to move around).
fn sort_addresses(addrs: &mut [IpAddr]) {
    let v4: Option<Vec<u32>> = addrs
        .iter()
        .map(|a| match a {
            IpAddr::V4(v4) => Some(u32::from(*v4)),
            IpAddr::V6(_) => None,
        })
        .collect();
    match v4 {
        Some(mut numbers) => {
            radix_sort_by_key(&mut numbers, 4, |n| u64::from(*n));
            for (a, n) in addrs.iter_mut().zip(numbers) {
                *a = IpAddr::V4(n.into());
            }
        }
        None => addrs.sort_unstable(),
    }
}

/// Sorts virtual servers by [`VirtualServerKey::output_key`](super::server::VirtualServerKey)
/// and, between equal keys, the later one first (the one programmed last comes first).
/// When every address is IPv4 (the key's 16 bytes are then the IPv4-mapped address), the
/// key is packed into one number (address, port, protocol rank), the numbers are sorted
/// stably from the last server to the first (a byte at a time), and the servers are moved into place by
/// following the permutation's cycles (no second list of servers is built).
fn sort_by_output_key(vss: &mut [VirtualServer]) {
    if u32::try_from(vss.len()).is_err() || !vss.iter().all(|v| v.address.is_ipv4()) {
        vss.reverse();
        vss.sort_by_cached_key(|v| v.key().output_key());
        return;
    }
    let last = vss.len().saturating_sub(1);
    // in reversed order, so that the stable sort puts the later of two equal keys first
    let mut keys: Vec<(u64, u32)> = vss
        .iter()
        .enumerate()
        .rev()
        .map(|(i, v)| {
            let (address, port, protocol) = v.key().output_key();
            // (the low 32 bits of an IPv4-mapped address are the IPv4 address)
            let packed = u64::from(address as u32) << 24 | u64::from(port) << 8 | u64::from(protocol);
            // (the length fits in a u32, checked above)
            (packed, (last - i) as u32)
        })
        .collect();
    radix_sort_by_key(&mut keys, 7, |k| k.0);
    // The server for position `j` is at `last - keys[j].1`; a position done is marked
    // with `u32::MAX`.
    let done = u32::MAX;
    for start in 0..keys.len() {
        if keys[start].1 == done {
            continue;
        }
        let mut j = start;
        loop {
            let src = last - keys[j].1 as usize;
            keys[j].1 = done;
            if src == start {
                break;
            }
            vss.swap(j, src);
            j = src;
        }
    }
}

/// Builds the rule set from the service ports (in any order; where two ports program one
/// virtual server, the later one wins, as it would in kube-proxy's map order).
pub fn build_rule_set<'a>(ports: impl IntoIterator<Item = PortInput<'a>>, s: &IpvsSettings) -> IpvsRuleSet {
    let ipv6 = s.ipv6;
    let mut sets = IpSets::new(ipv6);
    if s.unprefixed_ipv6_sets {
        sets = sets.with_unprefixed_names();
    }
    let mut node_addrs: Vec<IpAddr> = s
        .interfaces
        .iter()
        .filter(|(n, _)| n != DUMMY_DEVICE)
        .flat_map(|(_, a)| a.iter().copied())
        .filter(|a| valid_for_set(*a, ipv6))
        .collect();
    node_addrs.sort_unstable();
    node_addrs.dedup();
    let is_node_addr = |a: &IpAddr| node_addrs.binary_search(a).is_ok();

    let ports = ports.into_iter();
    // every port has a ClusterIP: a virtual server, a bound address and a set entry each
    let n = ports.size_hint().0;
    let mut vss: Vec<VirtualServer> = Vec::with_capacity(n);
    let mut pending: Vec<(usize, bool)> = Vec::new();
    let mut scratch: Vec<(TextOrder, RealServer)> = Vec::new();
    let mut binds: Vec<IpAddr> = Vec::with_capacity(n);
    sets.get_mut(IpSetKind::ClusterIp).entries.reserve(n);
    let mut blocked: Vec<BlockedFromNode> = Vec::new();
    let base_flags = if s.scheduler == "mh" {
        ServiceFlags::SOURCE_HASH
    } else {
        ServiceFlags::NONE
    };

    for p in ports {
        let proto = p.protocol;
        for e in p.all {
            let (ip, port) = (e.ip, e.port);
            if e.is_local && port != 0 {
                sets.add(
                    IpSetKind::LoopBack,
                    IpSetEntry::IpPortIp {
                        ip,
                        protocol: proto,
                        port,
                        ip2: ip,
                    },
                );
            }
        }
        let (flags, timeout) = match p.affinity_timeout {
            Some(t) => (base_flags | ServiceFlags::PERSISTENT, t),
            None => (base_flags, 0),
        };
        // Virtual servers get their real servers once the port is done.
        pending.clear();
        let mut vs = |address: IpAddr, port: u16, only_local: bool| {
            pending.push((vss.len(), only_local && !p.local.is_empty()));
            vss.push(VirtualServer {
                address,
                protocol: proto,
                port,
                scheduler: s.scheduler.clone(),
                flags,
                timeout,
                real_servers: Vec::new(),
            });
        };

        'port: {
            let ci = p.cluster_ip;
            sets.add(
                IpSetKind::ClusterIp,
                IpSetEntry::IpPort {
                    ip: ci,
                    protocol: proto,
                    port: p.port,
                },
            );
            vs(ci, p.port, p.internal_local);
            binds.push(ci);

            for &ip in p.external_ips {
                let kind = if p.external_local {
                    IpSetKind::ExternalIpLocal
                } else {
                    IpSetKind::ExternalIp
                };
                sets.add(
                    kind,
                    IpSetEntry::IpPort {
                        ip,
                        protocol: proto,
                        port: p.port,
                    },
                );
                vs(ip, p.port, p.external_local);
                if !is_node_addr(&ip) {
                    binds.push(ip);
                }
            }

            for &ip in p.load_balancer_ips {
                let entry = IpSetEntry::IpPort {
                    ip,
                    protocol: proto,
                    port: p.port,
                };
                sets.add(IpSetKind::LoadBalancer, entry);
                if p.external_local {
                    sets.add(IpSetKind::LoadBalancerLocal, entry);
                }
                if !p.source_ranges.is_empty() {
                    sets.add(IpSetKind::LoadBalancerFw, entry);
                    let mut from_node = false;
                    for &net in p.source_ranges {
                        sets.add(
                            IpSetKind::LoadBalancerSourceCidr,
                            IpSetEntry::IpPortNet {
                                ip,
                                protocol: proto,
                                port: p.port,
                                net,
                            },
                        );
                        from_node |= net.contains(&s.node_ip);
                    }
                    if from_node {
                        sets.add(
                            IpSetKind::LoadBalancerSourceIp,
                            IpSetEntry::IpPortIp {
                                ip,
                                protocol: proto,
                                port: p.port,
                                ip2: ip,
                            },
                        );
                    } else {
                        blocked.push(BlockedFromNode {
                            ip,
                            protocol: proto,
                            port: p.port,
                        });
                    }
                }
                vs(ip, p.port, p.external_local);
                if !is_node_addr(&ip) {
                    binds.push(ip);
                }
            }

            if p.node_port != 0 {
                // No node address: kube-proxy skips the rest of the port, health check included.
                if s.node_port_ips.is_empty() {
                    break 'port;
                }
                let np = p.node_port;
                let (all, local) = match proto {
                    Protocol::Tcp => (IpSetKind::NodePortTcp, IpSetKind::NodePortLocalTcp),
                    Protocol::Udp => (IpSetKind::NodePortUdp, IpSetKind::NodePortLocalUdp),
                    Protocol::Sctp => (IpSetKind::NodePortSctp, IpSetKind::NodePortLocalSctp),
                };
                let mut add = |kind: IpSetKind| {
                    if proto == Protocol::Sctp {
                        for &ip in &s.node_port_ips {
                            sets.add(
                                kind,
                                IpSetEntry::IpPort {
                                    ip,
                                    protocol: proto,
                                    port: np,
                                },
                            );
                        }
                    } else {
                        sets.add(kind, IpSetEntry::Port(np));
                    }
                };
                add(all);
                if p.external_local {
                    add(local);
                }
                for &ip in &s.node_port_ips {
                    vs(ip, np, p.external_local);
                }
            }

            if p.health_check_node_port != 0 {
                sets.add(
                    IpSetKind::HealthCheckNodePort,
                    IpSetEntry::Port(p.health_check_node_port),
                );
            }
        }
        fill_real_servers(&mut vss, &pending, &p, &mut scratch);
    }

    // One virtual server per key: the last one programmed wins.
    sort_by_output_key(&mut vss);
    vss.dedup_by(|later, first| later.key() == first.key());

    sort_addresses(&mut binds);
    binds.dedup();
    sets.get_mut(IpSetKind::IpvsIps).entries.reserve(binds.len());
    for &a in &binds {
        sets.add(IpSetKind::IpvsIps, IpSetEntry::Ip(a));
    }
    sets.normalize();

    // Addresses already on kube-ipvs0 that netlink does not list for this family stay bound.
    let mut bind_addresses = binds;
    for (name, addrs) in &s.interfaces {
        if name == DUMMY_DEVICE {
            bind_addresses.extend(addrs.iter().copied().filter(|a| !valid_for_set(*a, ipv6)));
        }
    }
    bind_addresses.sort_unstable();
    bind_addresses.dedup();

    let iptables = IptablesPart::build(
        &sets,
        &blocked,
        &IptablesSettings {
            ipv6,
            mark: &s.mark,
            cluster_ip_masquerade: &s.cluster_ip_masquerade,
        },
    );
    IpvsRuleSet {
        ipv6,
        virtual_servers: vss,
        ipsets: sets,
        bind_addresses,
        iptables,
    }
}

/// Options of the IPVS backend beyond [`ProxyConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct IpvsOptions {
    /// Name IPv6 sets as kube-proxy's test fake does (`KUBE-...`, as kube-oracle prints them)
    /// instead of kube-proxy v1.37.2's `KUBE-6-...`.
    pub unprefixed_ipv6_sets: bool,
}

impl IpvsSettings {
    /// The IPVS settings of a node's proxy configuration: its scheduler and mark, the ClusterIP
    /// masquerade rule (masquerade-all, else the local detector's CIDR, else `src,dst`), its
    /// interfaces, and the NodePort addresses (IPVS default: all).
    pub fn from_config(config: &ProxyConfig, options: &IpvsOptions) -> Result<Self, RulesError> {
        let ipv6 = config.node_ip.is_ipv6();
        let interfaces: Vec<(String, Vec<IpAddr>)> = config
            .host_addresses
            .iter()
            .map(|i| (i.name.clone(), i.addresses.iter().map(|a| a.ip).collect()))
            .collect();
        let npa = config.nodeport_addresses_for(false)?;
        let node_port_ips = node_port_addresses(ipv6, &npa.cidrs, &interfaces);
        let cluster_ip_masquerade = if config.masquerade_all {
            ClusterIpMasquerade::All
        } else {
            match config.detector() {
                LocalDetector::Cidr(c) => ClusterIpMasquerade::NotFrom(c.to_string()),
                _ => ClusterIpMasquerade::SourceIsVip,
            }
        };
        Ok(IpvsSettings {
            ipv6,
            node_ip: config.node_ip,
            scheduler: CompactString::from(config.ipvs_scheduler.as_str()),
            mark: config.masquerade_mark.clone(),
            cluster_ip_masquerade,
            interfaces,
            node_port_ips,
            unprefixed_ipv6_sets: options.unprefixed_ipv6_sets,
        })
    }
}

/// kube-proxy's IPVS rule set for the proxier of one node and family: every service port of
/// the model, programmed as `syncProxyRules` does.
///
/// ```
/// use svcnet_rules::{ProxyConfig, ProxyModel, ipvs};
/// use svcnet_model::{Service, EndpointSlice};
///
/// let svc: Service = serde_json::from_str(r#"{"metadata":{"namespace":"shop","name":"web"},
///   "spec":{"clusterIP":"10.96.0.10","ports":[{"name":"http","port":80,"protocol":"TCP"}]}}"#).unwrap();
/// let slice: EndpointSlice = serde_json::from_str(r#"{"metadata":{"namespace":"shop","name":"web-1",
///   "labels":{"kubernetes.io/service-name":"web"}},"addressType":"IPv4",
///   "endpoints":[{"addresses":["10.0.0.1"],"nodeName":"node-a"}],
///   "ports":[{"name":"http","port":8080,"protocol":"TCP"}]}"#).unwrap();
/// let config = ProxyConfig::new("node-a", "192.168.0.2".parse().unwrap());
/// let model = ProxyModel::build(&[svc], &[slice], None, &config);
/// let rules = ipvs::build(&model, &config, &ipvs::IpvsOptions::default()).unwrap();
/// assert_eq!(rules.ipvsadm_restore(), "-A -t 10.96.0.10:80 -s rr\n-a -t 10.96.0.10:80 -r 10.0.0.1:8080 -m -w 1\n");
/// assert_eq!(rules.bind_addresses, ["10.96.0.10".parse::<std::net::IpAddr>().unwrap()]);
/// ```
pub fn build(
    model: &ProxyModel,
    config: &ProxyConfig,
    options: &IpvsOptions,
) -> Result<IpvsRuleSet, RulesError> {
    let settings = IpvsSettings::from_config(config, options)?;
    Ok(build_rule_set(model.ports.iter().map(PortInput::of), &settings))
}

impl<'a> PortInput<'a> {
    /// The view of one service port of the proxy model.
    pub fn of(p: &'a crate::proxy::ServicePortInfo) -> Self {
        PortInput {
            cluster_ip: p.cluster_ip,
            port: p.port,
            protocol: p.protocol,
            node_port: p.node_port,
            health_check_node_port: p.health_check_node_port,
            external_ips: &p.external_ips,
            load_balancer_ips: &p.load_balancer_vips,
            source_ranges: &p.load_balancer_source_ranges,
            affinity_timeout: p.session_affinity_timeout,
            internal_local: p.internal_policy_local,
            external_local: p.external_policy_local,
            cluster: &p.cluster_endpoints,
            local: &p.local_endpoints,
            all: &p.endpoints,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::{IpSetKind, IptablesView, Protocol};

    /// Real servers come out in `ip:port` text order, each once, whether the endpoints
    /// were in that order (copied as they are) or not (sorted).
    #[test]
    fn real_servers_in_text_order_each_once() {
        let mut next = crate::ipvs::sort::xorshift(0x2545_f491_4f6c_dd1du64);
        let mut scratch = Vec::new();
        for round in 0..200 {
            let mut eps: Vec<Endpoint> = (0..(round % 13))
                .map(|_| {
                    let r = next();
                    let address = if round % 5 == 4 && r.is_multiple_of(3) {
                        IpAddr::from([0xfd00, 0, 0, 0, 0, 0, (r >> 8) as u16 % 3, (r >> 16) as u16 % 20])
                    } else {
                        IpAddr::from([
                            10,
                            (r % 2) as u8,
                            (r >> 8) as u8 % 3,
                            [1, 2, 9, 10, 19, 100, 200][(r >> 16) as usize % 7],
                        ])
                    };
                    let mut e = ep("0.0.0.0", [80, 8080, 9, 443][(r >> 24) as usize % 4], false);
                    e.ip = address;
                    e
                })
                .collect();
            if round % 2 == 0 {
                // the model's order: by text, each once
                eps.sort_by_key(|e| e.to_string());
                eps.dedup_by_key(|e| e.to_string());
            }
            let mut want: Vec<RealServer> = eps.iter().map(|e| RealServer::new(e.ip, e.port)).collect();
            want.sort_by_key(|r| r.to_string());
            want.dedup();
            assert_eq!(real_servers(&eps, &mut scratch), want, "round {round}");
        }
    }

    /// Addresses sort as `IpAddr`s do, all IPv4 or mixed.
    #[test]
    fn addresses_sort_as_ip_addrs() {
        let mut addrs: Vec<IpAddr> = (0..500u32)
            .map(|n| IpAddr::from((n.wrapping_mul(2_654_435_761) % 100_000).to_be_bytes()))
            .collect();
        for mixed in [false, true] {
            if mixed {
                addrs.push(ip("fd00::1"));
                addrs.push(ip("::1"));
            }
            let mut want = addrs.clone();
            want.sort();
            sort_addresses(&mut addrs);
            assert_eq!(addrs, want);
            addrs.reverse();
        }
    }

    /// The packed sort gives the order (and, between equal keys, the reversed order of
    /// position) of the plain sort by key of the reversed list; mixed families fall back
    /// to it.
    #[test]
    fn virtual_servers_sort_by_output_key_stably() {
        let mut next = crate::ipvs::sort::xorshift(0x2545_f491_4f6c_dd1du64);
        let protocols = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp];
        for round in 0..40 {
            let mut vss: Vec<VirtualServer> = (0..300u32)
                .map(|n| {
                    let r = next();
                    let address = if round % 4 == 3 && r.is_multiple_of(50) {
                        ip("fd00::1")
                    } else {
                        IpAddr::from([10, (r % 2) as u8, (r >> 8) as u8 % 3, (r >> 16) as u8 % 5])
                    };
                    VirtualServer {
                        address,
                        protocol: protocols[(r >> 24) as usize % 3],
                        port: [80, 443, 8080, 65535][(r >> 32) as usize % 4],
                        scheduler: "rr".into(),
                        flags: ServiceFlags::NONE,
                        // tells apart servers with equal keys
                        timeout: n,
                        real_servers: Vec::new(),
                    }
                })
                .collect();
            let mut want = vss.clone();
            want.reverse();
            want.sort_by_cached_key(|v| v.key().output_key());
            sort_by_output_key(&mut vss);
            assert_eq!(vss, want, "round {round}");
        }
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    fn settings(node_port_ips: Vec<IpAddr>) -> IpvsSettings {
        IpvsSettings {
            ipv6: false,
            node_ip: ip("100.101.102.103"),
            scheduler: "rr".into(),
            mark: "0x4000".into(),
            cluster_ip_masquerade: ClusterIpMasquerade::SourceIsVip,
            interfaces: vec![("eth0".into(), vec![ip("100.101.102.103")])],
            node_port_ips,
            unprefixed_ipv6_sets: false,
        }
    }

    fn ep(a: &str, port: u16, is_local: bool) -> Endpoint {
        Endpoint {
            ip: ip(a),
            port,
            is_local,
            ready: true,
            serving: true,
            terminating: false,
        }
    }

    fn port<'a>(eps: &'a [Endpoint], all: &'a [Endpoint]) -> PortInput<'a> {
        PortInput {
            cluster_ip: ip("10.20.30.41"),
            port: 80,
            protocol: Protocol::Udp,
            node_port: 3001,
            health_check_node_port: 0,
            external_ips: &[],
            load_balancer_ips: &[],
            source_ranges: &[],
            affinity_timeout: None,
            internal_local: false,
            external_local: false,
            cluster: eps,
            local: &[],
            all,
        }
    }

    /// kube-proxy's TestNodePortIPv4 "UDP service with node port, has endpoints".
    #[test]
    fn udp_node_port() {
        let eps = [ep("10.180.0.1", 80, false)];
        let all = eps;
        let rs = build_rule_set([port(&eps, &all)], &settings(vec![ip("100.101.102.103")]));
        let keys: Vec<String> = rs.virtual_servers.iter().map(|v| v.key().to_string()).collect();
        assert_eq!(keys, ["10.20.30.41:80/UDP", "100.101.102.103:3001/UDP"]);
        assert!(rs.virtual_servers.iter().all(|v| v.real_servers.len() == 1));
        assert_eq!(
            rs.ipsets.get(IpSetKind::NodePortUdp).entries,
            [IpSetEntry::Port(3001)]
        );
        assert_eq!(rs.bind_addresses, [ip("10.20.30.41")]);
        let text = rs.text(IptablesView::Transaction);
        assert!(
            text.contains(
                "-A -u 100.101.102.103:3001 -s rr\n-a -u 100.101.102.103:3001 -r 10.180.0.1:80 -m -w 1\n"
            ),
            "{text}"
        );
        assert!(text.contains("--match-set KUBE-CLUSTER-IP src,dst -j KUBE-MARK-MASQ"));
    }

    /// No node address: no NodePort virtual server, and the health-check port is skipped too.
    #[test]
    fn no_node_address_skips_the_rest_of_the_port() {
        let mut p = port(&[], &[]);
        p.health_check_node_port = 32000;
        let rs = build_rule_set([p], &settings(vec![]));
        assert_eq!(rs.virtual_servers.len(), 1);
        assert!(rs.ipsets.get(IpSetKind::NodePortUdp).is_empty());
        assert!(rs.ipsets.get(IpSetKind::HealthCheckNodePort).is_empty());
    }

    /// eTP=Local with no local endpoint falls back to the cluster endpoints; with one, only it.
    #[test]
    fn local_policy_falls_back_to_cluster_endpoints() {
        let cluster = [ep("10.0.0.1", 80, false), ep("10.0.0.2", 80, true)];
        let local = [ep("10.0.0.2", 80, true)];
        let all = cluster;
        let mut p = port(&cluster, &all);
        p.external_local = true;
        let s = settings(vec![ip("100.101.102.103")]);
        let rs = build_rule_set([p], &s);
        let np = rs.virtual_servers.iter().find(|v| v.port == 3001).unwrap();
        assert_eq!(np.real_servers.len(), 2);
        p.local = &local;
        let rs = build_rule_set([p], &s);
        let np = rs.virtual_servers.iter().find(|v| v.port == 3001).unwrap();
        assert_eq!(np.real_servers, [RealServer::new(ip("10.0.0.2"), 80)]);
        assert_eq!(rs.ipsets.get(IpSetKind::LoopBack).entries.len(), 1);
        assert_eq!(
            rs.ipsets.get(IpSetKind::NodePortLocalUdp).entries,
            [IpSetEntry::Port(3001)]
        );
    }

    #[test]
    fn load_balancer_source_ranges() {
        let lbs = [ip("203.0.113.9"), ip("100.101.102.103")];
        let ranges: [IpNet; 1] = ["203.0.113.0/25".parse().unwrap()];
        let mut p = port(&[], &[]);
        p.load_balancer_ips = &lbs;
        p.source_ranges = &ranges;
        p.affinity_timeout = Some(600);
        let mut s = settings(vec![ip("100.101.102.103")]);
        s.scheduler = "mh".into();
        let rs = build_rule_set([p], &s);
        assert_eq!(rs.ipsets.get(IpSetKind::LoadBalancerSourceCidr).entries.len(), 2);
        assert!(rs.ipsets.get(IpSetKind::LoadBalancerSourceIp).is_empty());
        let drops: Vec<&str> = rs
            .iptables
            .filter
            .iter()
            .filter(|r| r.chain == "KUBE-IPVS-OUT-FILTER")
            .map(|r| r.line.as_str())
            .collect();
        assert_eq!(drops.len(), 2);
        assert!(drops.contains(&"-A KUBE-IPVS-OUT-FILTER -s 203.0.113.9 -m ipvs --vaddr 203.0.113.9 --vproto udp --vport 80 -j DROP"));
        // The LB IP that is a node address gets its virtual server but no binding.
        assert_eq!(rs.bind_addresses, [ip("10.20.30.41"), ip("203.0.113.9")]);
        let vs = rs.virtual_servers.iter().find(|v| v.address == lbs[0]).unwrap();
        assert_eq!(
            (vs.flags.names(), vs.timeout),
            (vec!["persistent".to_owned(), "source-hash".to_owned()], 600)
        );
    }

    #[test]
    fn node_port_addresses_match_all_or_cidrs() {
        let ifs = vec![
            ("lo".to_owned(), vec![ip("127.0.0.1"), ip("::1")]),
            (
                "eth0".to_owned(),
                vec![ip("192.168.0.2"), ip("fe80::1"), ip("fd00::2")],
            ),
            ("kube-ipvs0".to_owned(), vec![ip("10.96.0.1")]),
        ];
        assert_eq!(node_port_addresses(false, &[], &ifs), [ip("192.168.0.2")]);
        assert_eq!(node_port_addresses(true, &[], &ifs), [ip("fd00::2")]);
        let all: Vec<IpNet> = vec!["0.0.0.0/0".parse().unwrap()];
        assert_eq!(node_port_addresses(false, &all, &ifs), [ip("192.168.0.2")]);
        let cidrs: Vec<IpNet> = vec!["10.96.0.0/16".parse().unwrap(), "127.0.0.0/8".parse().unwrap()];
        assert_eq!(node_port_addresses(false, &cidrs, &ifs), [ip("10.96.0.1")]);
    }
}
