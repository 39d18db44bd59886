//! The ipsets kube-proxy's IPVS proxier keeps (`pkg/proxy/ipvs/ipset.go`, `ipsetInfo`):
//! their names (with the `KUBE-6-` prefix for IPv6), types, comments and entries.
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/ipvs/ipset.go`.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr};

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use super::server::Protocol;
use super::sort::radix_sort_by_key;

/// The type of an ipset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SetType {
    /// `hash:ip`.
    #[serde(rename = "hash:ip")]
    HashIp,
    /// `hash:ip,port`.
    #[serde(rename = "hash:ip,port")]
    HashIpPort,
    /// `hash:ip,port,ip`.
    #[serde(rename = "hash:ip,port,ip")]
    HashIpPortIp,
    /// `hash:ip,port,net`.
    #[serde(rename = "hash:ip,port,net")]
    HashIpPortNet,
    /// `bitmap:port`.
    #[serde(rename = "bitmap:port")]
    BitmapPort,
}

impl SetType {
    /// The ipset type name (`hash:ip,port`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            SetType::HashIp => "hash:ip",
            SetType::HashIpPort => "hash:ip,port",
            SetType::HashIpPortIp => "hash:ip,port,ip",
            SetType::HashIpPortNet => "hash:ip,port,net",
            SetType::BitmapPort => "bitmap:port",
        }
    }
}

impl fmt::Display for SetType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One of the 17 ipsets of IPVS mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum IpSetKind {
    /// `KUBE-LOOP-BACK`: local endpoints, for hairpin masquerading.
    LoopBack,
    /// `KUBE-CLUSTER-IP`: ClusterIP + port.
    ClusterIp,
    /// `KUBE-EXTERNAL-IP`: external IPs of `externalTrafficPolicy: Cluster` Services.
    ExternalIp,
    /// `KUBE-EXTERNAL-IP-LOCAL`: external IPs of `externalTrafficPolicy: Local` Services.
    ExternalIpLocal,
    /// `KUBE-LOAD-BALANCER`: every load-balancer IP + port.
    LoadBalancer,
    /// `KUBE-LOAD-BALANCER-FW`: load-balancer IPs of Services with source ranges.
    LoadBalancerFw,
    /// `KUBE-LOAD-BALANCER-LOCAL`: load-balancer IPs of `externalTrafficPolicy: Local` Services.
    LoadBalancerLocal,
    /// `KUBE-LOAD-BALANCER-SOURCE-IP`: load-balancer IP + port + itself, when a source range
    /// holds the node IP.
    LoadBalancerSourceIp,
    /// `KUBE-LOAD-BALANCER-SOURCE-CIDR`: load-balancer IP + port + each source range.
    LoadBalancerSourceCidr,
    /// `KUBE-NODE-PORT-TCP`: TCP NodePorts.
    NodePortTcp,
    /// `KUBE-NODE-PORT-LOCAL-TCP`: TCP NodePorts of `externalTrafficPolicy: Local` Services.
    NodePortLocalTcp,
    /// `KUBE-NODE-PORT-UDP`: UDP NodePorts.
    NodePortUdp,
    /// `KUBE-NODE-PORT-LOCAL-UDP`: UDP NodePorts of `externalTrafficPolicy: Local` Services.
    NodePortLocalUdp,
    /// `KUBE-NODE-PORT-SCTP-HASH`: node IP + SCTP NodePort.
    NodePortSctp,
    /// `KUBE-NODE-PORT-LOCAL-SCTP-HASH`: node IP + SCTP NodePort of `Local` Services.
    NodePortLocalSctp,
    /// `KUBE-HEALTH-CHECK-NODE-PORT`: health-check NodePorts.
    HealthCheckNodePort,
    /// `KUBE-IPVS-IPS`: the addresses bound to `kube-ipvs0`.
    IpvsIps,
}

impl IpSetKind {
    /// Every set, in kube-proxy's `ipsetInfo` order.
    pub const ALL: [IpSetKind; 17] = [
        IpSetKind::LoopBack,
        IpSetKind::ClusterIp,
        IpSetKind::ExternalIp,
        IpSetKind::ExternalIpLocal,
        IpSetKind::LoadBalancer,
        IpSetKind::LoadBalancerFw,
        IpSetKind::LoadBalancerLocal,
        IpSetKind::LoadBalancerSourceIp,
        IpSetKind::LoadBalancerSourceCidr,
        IpSetKind::NodePortTcp,
        IpSetKind::NodePortLocalTcp,
        IpSetKind::NodePortUdp,
        IpSetKind::NodePortLocalUdp,
        IpSetKind::NodePortSctp,
        IpSetKind::NodePortLocalSctp,
        IpSetKind::HealthCheckNodePort,
        IpSetKind::IpvsIps,
    ];

    /// The set's position in [`IpSetKind::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The IPv4 name (`KUBE-...`).
    pub fn name_v4(self) -> &'static str {
        self.info().0
    }

    /// The IPv6 name: `KUBE-` becomes `KUBE-6-`, cut to ipset's 31 characters
    /// (`KUBE-6-LOAD-BALANCER-SOURCE-CID`), as `NewIPSet` names them.
    pub fn name_v6(self) -> &'static str {
        self.info().1
    }

    /// The name for a family: [`name_v6`](Self::name_v6) when `ipv6`, else [`name_v4`](Self::name_v4).
    pub fn name(self, ipv6: bool) -> &'static str {
        if ipv6 { self.name_v6() } else { self.name_v4() }
    }

    /// The set's type.
    pub fn set_type(self) -> SetType {
        self.info().2
    }

    /// The set's comment (quoted into the iptables rules that match it).
    pub fn comment(self) -> &'static str {
        self.info().3
    }

    /// The protocol of this set's `bitmap:port` entries: the set's own (TCP/UDP NodePort
    /// sets), TCP for the health-check set; `None` for hash sets, whose entries name it.
    pub fn bitmap_protocol(self) -> Option<Protocol> {
        match self {
            IpSetKind::NodePortTcp | IpSetKind::NodePortLocalTcp | IpSetKind::HealthCheckNodePort => {
                Some(Protocol::Tcp)
            }
            IpSetKind::NodePortUdp | IpSetKind::NodePortLocalUdp => Some(Protocol::Udp),
            _ => None,
        }
    }

    fn info(self) -> (&'static str, &'static str, SetType, &'static str) {
        use IpSetKind::*;
        use SetType::*;
        match self {
            LoopBack => (
                "KUBE-LOOP-BACK",
                "KUBE-6-LOOP-BACK",
                HashIpPortIp,
                "Kubernetes endpoints dst ip:port, source ip for solving hairpin purpose",
            ),
            ClusterIp => (
                "KUBE-CLUSTER-IP",
                "KUBE-6-CLUSTER-IP",
                HashIpPort,
                "Kubernetes service cluster ip + port for masquerade purpose",
            ),
            ExternalIp => (
                "KUBE-EXTERNAL-IP",
                "KUBE-6-EXTERNAL-IP",
                HashIpPort,
                "Kubernetes service external ip + port for masquerade and filter purpose",
            ),
            ExternalIpLocal => (
                "KUBE-EXTERNAL-IP-LOCAL",
                "KUBE-6-EXTERNAL-IP-LOCAL",
                HashIpPort,
                "Kubernetes service external ip + port with externalTrafficPolicy=local",
            ),
            LoadBalancer => (
                "KUBE-LOAD-BALANCER",
                "KUBE-6-LOAD-BALANCER",
                HashIpPort,
                "Kubernetes service lb portal",
            ),
            LoadBalancerFw => (
                "KUBE-LOAD-BALANCER-FW",
                "KUBE-6-LOAD-BALANCER-FW",
                HashIpPort,
                "Kubernetes service load balancer ip + port for load balancer with sourceRange",
            ),
            LoadBalancerLocal => (
                "KUBE-LOAD-BALANCER-LOCAL",
                "KUBE-6-LOAD-BALANCER-LOCAL",
                HashIpPort,
                "Kubernetes service load balancer ip + port with externalTrafficPolicy=local",
            ),
            LoadBalancerSourceIp => (
                "KUBE-LOAD-BALANCER-SOURCE-IP",
                "KUBE-6-LOAD-BALANCER-SOURCE-IP",
                HashIpPortIp,
                "Kubernetes service load balancer ip + port + source IP for packet filter purpose",
            ),
            LoadBalancerSourceCidr => (
                "KUBE-LOAD-BALANCER-SOURCE-CIDR",
                "KUBE-6-LOAD-BALANCER-SOURCE-CID",
                HashIpPortNet,
                "Kubernetes service load balancer ip + port + source cidr for packet filter purpose",
            ),
            NodePortTcp => (
                "KUBE-NODE-PORT-TCP",
                "KUBE-6-NODE-PORT-TCP",
                BitmapPort,
                "Kubernetes nodeport TCP port for masquerade purpose",
            ),
            NodePortLocalTcp => (
                "KUBE-NODE-PORT-LOCAL-TCP",
                "KUBE-6-NODE-PORT-LOCAL-TCP",
                BitmapPort,
                "Kubernetes nodeport TCP port with externalTrafficPolicy=local",
            ),
            NodePortUdp => (
                "KUBE-NODE-PORT-UDP",
                "KUBE-6-NODE-PORT-UDP",
                BitmapPort,
                "Kubernetes nodeport UDP port for masquerade purpose",
            ),
            NodePortLocalUdp => (
                "KUBE-NODE-PORT-LOCAL-UDP",
                "KUBE-6-NODE-PORT-LOCAL-UDP",
                BitmapPort,
                "Kubernetes nodeport UDP port with externalTrafficPolicy=local",
            ),
            NodePortSctp => (
                "KUBE-NODE-PORT-SCTP-HASH",
                "KUBE-6-NODE-PORT-SCTP-HASH",
                HashIpPort,
                "Kubernetes nodeport SCTP port for masquerade purpose with type 'hash ip:port'",
            ),
            NodePortLocalSctp => (
                "KUBE-NODE-PORT-LOCAL-SCTP-HASH",
                "KUBE-6-NODE-PORT-LOCAL-SCTP-HAS",
                HashIpPort,
                "Kubernetes nodeport SCTP port with externalTrafficPolicy=local with type 'hash ip:port'",
            ),
            HealthCheckNodePort => (
                "KUBE-HEALTH-CHECK-NODE-PORT",
                "KUBE-6-HEALTH-CHECK-NODE-PORT",
                BitmapPort,
                "Kubernetes health check node port",
            ),
            IpvsIps => (
                "KUBE-IPVS-IPS",
                "KUBE-6-IPVS-IPS",
                HashIp,
                "Addresses on the ipvs interface",
            ),
        }
    }
}

/// One ipset entry. Its text (`Display`) is what `ipset add` takes and what kube-proxy
/// compares: `ip`, `ip,proto:port`, `ip,proto:port,ip`, `ip,proto:port,net`, `port`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum IpSetEntry {
    /// A `hash:ip` entry.
    Ip(IpAddr),
    /// A `hash:ip,port` entry.
    IpPort {
        /// The address.
        ip: IpAddr,
        /// The protocol.
        protocol: Protocol,
        /// The port.
        port: u16,
    },
    /// A `hash:ip,port,ip` entry.
    IpPortIp {
        /// The destination address.
        ip: IpAddr,
        /// The protocol.
        protocol: Protocol,
        /// The port.
        port: u16,
        /// The source address.
        ip2: IpAddr,
    },
    /// A `hash:ip,port,net` entry.
    IpPortNet {
        /// The destination address.
        ip: IpAddr,
        /// The protocol.
        protocol: Protocol,
        /// The port.
        port: u16,
        /// The source network.
        net: IpNet,
    },
    /// A `bitmap:port` entry.
    Port(u16),
}

impl IpSetEntry {
    /// The set type this entry belongs to.
    pub fn set_type(&self) -> SetType {
        match self {
            IpSetEntry::Ip(_) => SetType::HashIp,
            IpSetEntry::IpPort { .. } => SetType::HashIpPort,
            IpSetEntry::IpPortIp { .. } => SetType::HashIpPortIp,
            IpSetEntry::IpPortNet { .. } => SetType::HashIpPortNet,
            IpSetEntry::Port(_) => SetType::BitmapPort,
        }
    }
}

impl fmt::Display for IpSetEntry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IpSetEntry::Ip(ip) => write!(f, "{ip}"),
            IpSetEntry::IpPort { ip, protocol, port } => write!(f, "{ip},{}:{port}", protocol.lower()),
            IpSetEntry::IpPortIp {
                ip,
                protocol,
                port,
                ip2,
            } => {
                write!(f, "{ip},{}:{port},{ip2}", protocol.lower())
            }
            IpSetEntry::IpPortNet {
                ip,
                protocol,
                port,
                net,
            } => {
                write!(f, "{ip},{}:{port},{net}", protocol.lower())
            }
            IpSetEntry::Port(port) => write!(f, "{port}"),
        }
    }
}

/// One ipset with its entries (kept sorted and without duplicates).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpSet {
    /// Which set this is.
    pub kind: IpSetKind,
    /// Its name for the proxier's family.
    pub name: &'static str,
    /// Its entries, in value order, each once.
    pub entries: Vec<IpSetEntry>,
}

impl IpSet {
    /// An empty set of this kind for a family.
    pub fn new(kind: IpSetKind, ipv6: bool) -> Self {
        IpSet {
            kind,
            name: kind.name(ipv6),
            entries: Vec::new(),
        }
    }

    /// Whether the set has no entry (kube-proxy writes no iptables rule for an empty set).
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entries' texts sorted as text: the order of `ipset save` in kube-oracle and
    /// of kube-proxy's fake.
    pub fn sorted_texts(&self) -> Vec<String> {
        let mut v: Vec<String> = self.entries.iter().map(|e| e.to_string()).collect();
        v.sort_unstable();
        v
    }
}

/// The shape of the entries of a set that [`sort_entries`] packs into numbers.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Packing {
    /// IPv4 addresses.
    Ip,
    /// IPv4 address, protocol, port.
    IpPort,
    /// IPv4 address, protocol, port, and the same address again (the loopback set's and the
    /// source-IP set's entries).
    IpPortSame,
}

/// Sorts entries in their (derived) order. The large sets hold IPv4 addresses, IPv4
/// address-port pairs, or IPv4 address-port-address triples whose two addresses are one,
/// only: each such entry is packed into a number that orders as the entry does (the
/// address, then the protocol's rank and the port) and holds all of it, the numbers are
/// sorted (a byte at a time) and written back as entries. Other sets are sorted as they
/// are; sets that are sorted already are left as they are.
fn sort_entries(entries: &mut [IpSetEntry]) {
    if entries.is_sorted() {
        return;
    }
    // the protocols in their order (a protocol missing here falls back to the plain sort)
    let mut protocols = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp];
    protocols.sort_unstable();
    let rank = |p: Protocol| protocols.iter().position(|q| *q == p).map(|r| r as u64);
    let packing = match entries.first() {
        Some(IpSetEntry::Ip(_)) => Packing::Ip,
        Some(IpSetEntry::IpPortIp { .. }) => Packing::IpPortSame,
        _ => Packing::IpPort,
    };
    let triple = |ip: std::net::Ipv4Addr, protocol: Protocol, port: u16| {
        Some(u64::from(u32::from(ip)) << 24 | rank(protocol)? << 16 | u64::from(port))
    };
    let packed: Option<Vec<u64>> = entries
        .iter()
        .map(|e| match (*e, packing) {
            (IpSetEntry::Ip(IpAddr::V4(ip)), Packing::Ip) => Some(u64::from(u32::from(ip))),
            (
                IpSetEntry::IpPort {
                    ip: IpAddr::V4(ip),
                    protocol,
                    port,
                },
                Packing::IpPort,
            ) => triple(ip, protocol, port),
            (
                IpSetEntry::IpPortIp {
                    ip: IpAddr::V4(ip),
                    protocol,
                    port,
                    ip2: IpAddr::V4(ip2),
                },
                Packing::IpPortSame,
            ) if ip2 == ip => triple(ip, protocol, port),
            _ => None,
        })
        .collect();
    let Some(mut packed) = packed else {
        entries.sort_unstable();
        return;
    };
    // (an address and a port with its protocol's rank fill 7 bytes, an address 4)
    radix_sort_by_key(&mut packed, if packing == Packing::Ip { 4 } else { 7 }, |k| *k);
    for (e, k) in entries.iter_mut().zip(packed) {
        let ip = IpAddr::V4(Ipv4Addr::from((k >> 24) as u32));
        let (protocol, port) = (protocols[(k >> 16 & 0xff) as usize], k as u16);
        *e = match packing {
            Packing::Ip => IpSetEntry::Ip(IpAddr::V4(Ipv4Addr::from(k as u32))),
            Packing::IpPort => IpSetEntry::IpPort { ip, protocol, port },
            Packing::IpPortSame => IpSetEntry::IpPortIp {
                ip,
                protocol,
                port,
                ip2: ip,
            },
        };
    }
}

/// The 17 ipsets of IPVS mode, indexed by [`IpSetKind`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpSets {
    /// Whether these are the IPv6 proxier's sets (`KUBE-6-` names, family `inet6`).
    pub ipv6: bool,
    sets: Vec<IpSet>,
}

impl IpSets {
    /// Every set, empty, named for the family.
    pub fn new(ipv6: bool) -> Self {
        IpSets {
            ipv6,
            sets: IpSetKind::ALL.iter().map(|k| IpSet::new(*k, ipv6)).collect(),
        }
    }

    /// Every set, renamed as kube-proxy's test fake names them whatever the family (no
    /// `KUBE-6-` prefix: `NewFakeProxier` passes `isIPv6 = false`).
    pub fn with_unprefixed_names(mut self) -> Self {
        for s in &mut self.sets {
            s.name = s.kind.name_v4();
        }
        self
    }

    /// One set.
    pub fn get(&self, kind: IpSetKind) -> &IpSet {
        &self.sets[kind.index()]
    }

    /// One set, to change.
    pub fn get_mut(&mut self, kind: IpSetKind) -> &mut IpSet {
        &mut self.sets[kind.index()]
    }

    /// Adds an entry (duplicates are removed by [`IpSets::normalize`]).
    pub fn add(&mut self, kind: IpSetKind, entry: IpSetEntry) {
        self.sets[kind.index()].entries.push(entry);
    }

    /// Sorts every set's entries and removes duplicates.
    pub fn normalize(&mut self) {
        for s in &mut self.sets {
            sort_entries(&mut s.entries);
            s.entries.dedup();
        }
    }

    /// Every set, in [`IpSetKind::ALL`] order.
    pub fn iter(&self) -> impl Iterator<Item = &IpSet> {
        self.sets.iter()
    }

    /// The sets in name order (how kube-oracle prints them).
    pub fn by_name(&self) -> Vec<&IpSet> {
        let mut v: Vec<&IpSet> = self.sets.iter().collect();
        v.sort_by_key(|s| s.name);
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ipv6_names_are_prefixed_and_cut_to_31() {
        for k in IpSetKind::ALL {
            let mut want = k.name_v4().replacen("KUBE-", "KUBE-6-", 1);
            want.truncate(31);
            assert_eq!(k.name_v6(), want, "{k:?}");
            assert!(k.name_v4().len() <= 31);
        }
        assert_eq!(
            IpSetKind::LoadBalancerSourceCidr.name(true),
            "KUBE-6-LOAD-BALANCER-SOURCE-CID"
        );
    }

    #[test]
    fn entry_texts() {
        let ip = "10.0.0.1".parse().unwrap();
        assert_eq!(
            IpSetEntry::IpPort {
                ip,
                protocol: Protocol::Udp,
                port: 53
            }
            .to_string(),
            "10.0.0.1,udp:53"
        );
        let ip6: IpAddr = "fd00::1".parse().unwrap();
        assert_eq!(
            IpSetEntry::IpPortIp {
                ip: ip6,
                protocol: Protocol::Tcp,
                port: 80,
                ip2: ip6
            }
            .to_string(),
            "fd00::1,tcp:80,fd00::1"
        );
        let net = "203.0.113.0/25".parse().unwrap();
        assert_eq!(
            IpSetEntry::IpPortNet {
                ip,
                protocol: Protocol::Sctp,
                port: 9,
                net
            }
            .to_string(),
            "10.0.0.1,sctp:9,203.0.113.0/25"
        );
        assert_eq!(IpSetEntry::Port(30001).to_string(), "30001");
    }

    /// The IPv4 keys order as the entries' own order; mixed sets (and triples of two
    /// addresses) fall back to it.
    #[test]
    fn sorts_as_the_entries_order() {
        let mut next = crate::ipvs::sort::xorshift(0x9e37_79b9_7f4a_7c15u64);
        let protocols = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp];
        for round in 0..50 {
            let mut entries: Vec<IpSetEntry> = (0..200)
                .map(|_| {
                    let r = next();
                    // few distinct values: equal addresses and ports are common
                    let ip = IpAddr::from([10, (r % 3) as u8, (r >> 8) as u8 % 4, (r >> 16) as u8]);
                    let port = [80, 443, 8080, 65535][(r >> 24) as usize % 4];
                    let protocol = protocols[(r >> 32) as usize % 3];
                    match round % 4 {
                        0 => IpSetEntry::Ip(ip),
                        1 => IpSetEntry::IpPort { ip, protocol, port },
                        3 => IpSetEntry::IpPortIp {
                            ip,
                            protocol,
                            port,
                            ip2: ip,
                        },
                        // an IPv6 entry among IPv4 ones, or another kind of entry
                        _ if r.is_multiple_of(2) => IpSetEntry::Ip("fd00::1".parse().unwrap()),
                        _ => IpSetEntry::Port(port),
                    }
                })
                .collect();
            if round % 4 == 2 {
                entries.push(IpSetEntry::Ip(IpAddr::from([10, 0, 0, 1])));
            }
            // triples whose second address differs fall back to the plain sort
            if round % 8 == 7 {
                entries.push(IpSetEntry::IpPortIp {
                    ip: IpAddr::from([10, 0, 0, 1]),
                    protocol: Protocol::Tcp,
                    port: 80,
                    ip2: IpAddr::from([10, 0, 0, 2]),
                });
            }
            let mut want = entries.clone();
            want.sort();
            sort_entries(&mut entries);
            assert_eq!(entries, want, "round {round}");
        }
    }

    #[test]
    fn sets_dedupe_and_sort() {
        let mut s = IpSets::new(false);
        s.add(IpSetKind::NodePortTcp, IpSetEntry::Port(31000));
        s.add(IpSetKind::NodePortTcp, IpSetEntry::Port(30000));
        s.add(IpSetKind::NodePortTcp, IpSetEntry::Port(31000));
        s.normalize();
        assert_eq!(
            s.get(IpSetKind::NodePortTcp).entries,
            [IpSetEntry::Port(30000), IpSetEntry::Port(31000)]
        );
        assert_eq!(s.by_name()[0].name, "KUBE-CLUSTER-IP");
    }
}
