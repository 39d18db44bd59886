//! The settings of the proxy on one node, named after kube-proxy v1.37.2's options
//! (`cmd/kube-proxy/app/server_linux.go`, `pkg/proxy/util/nodeport_addresses.go`,
//! `pkg/proxy/util/localdetector.go`).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::{Deserialize, Serialize};
use svcnet_model::hash::KeyedState;
use svcnet_topology::IpFamily;

use crate::error::RulesError;

/// How local (pod) traffic is told from other traffic (`--detect-local-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum LocalDetectorMode {
    /// No detection: the rules that need it are left out.
    None,
    /// By the first cluster CIDR of the family (kube-proxy's Linux default).
    #[default]
    ClusterCidr,
}

/// The local-traffic detector of one proxier (`LocalTrafficDetector`), resolved for its family.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum LocalDetector {
    /// Not implemented: the pod short-circuit and internal masquerade rules are omitted.
    NoOp,
    /// Traffic from this CIDR is local (`-s CIDR` / `! -s CIDR`).
    Cidr(IpNet),
}

impl LocalDetector {
    /// Whether the detector writes rules (`IsImplemented`).
    pub fn is_implemented(&self) -> bool {
        matches!(self, LocalDetector::Cidr(_))
    }
}

/// One address of a host interface: an address with its prefix length (`192.168.0.2/24`) or a
/// bare address (`100.101.102.103`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HostAddress {
    /// The address.
    pub ip: IpAddr,
    /// The prefix length, when given.
    pub prefix: Option<u8>,
}

/// A network interface of the node with its addresses.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct HostInterface {
    /// The interface name (`eth0`).
    pub name: String,
    /// Its addresses.
    pub addresses: Vec<HostAddress>,
}

/// The NodePort address filter of one proxier (kube-proxy's `NodePortAddresses`): the CIDRs of
/// its family, after keywords are expanded.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct NodePortAddresses {
    /// The CIDRs of the family (just the zero CIDR when it matches all).
    pub cidrs: Vec<IpNet>,
    /// A zero CIDR was given (or none of the family): every local address.
    pub match_all: bool,
    /// An IPv4 CIDR holds a loopback address (`ContainsIPv4Loopback`).
    pub contains_ipv4_loopback: bool,
}

impl NodePortAddresses {
    /// The node's addresses inside the CIDRs (`GetNodeIPs`), deduplicated and in text order
    /// (kube-proxy's order is Go map order).
    pub fn node_ips(&self, interfaces: &[HostInterface]) -> Vec<IpAddr> {
        let mut out: Vec<IpAddr> = Vec::new();
        for cidr in &self.cidrs {
            for a in interfaces.iter().flat_map(|i| &i.addresses) {
                if cidr.contains(&a.ip) && !out.contains(&a.ip) {
                    out.push(a.ip);
                }
            }
        }
        out.sort_by_cached_key(|ip| ip.to_string());
        out
    }
}

/// The settings of the proxy on one node: every setting of `svcnet rules` (cli.md), named after
/// kube-proxy's options. [`ProxyConfig::new`] gives kube-proxy's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ProxyConfig {
    /// The node's name (`--hostname-override`): endpoints with this `nodeName` are local.
    pub node_name: String,
    /// The node's IP; its family is the proxier's family.
    pub node_ip: IpAddr,
    /// `--cluster-cidr`: pod CIDRs, for local-traffic detection (the first of the family).
    pub cluster_cidrs: Vec<IpNet>,
    /// `--detect-local-mode`.
    pub local_detector: LocalDetectorMode,
    /// The masquerade mark text, used as given (`0x4000` in kube-proxy's tests; kube-proxy
    /// itself formats `1 << masqueradeBit`, see [`ProxyConfig::mark_for_bit`]).
    pub masquerade_mark: String,
    /// `iptables.localhostNodePorts` (default true): NodePorts on 127.0.0.0/8.
    pub localhost_nodeports: bool,
    /// Whether the nfacct counters exist.
    pub nfacct: bool,
    /// Whether `nf_conntrack_tcp_be_liberal` is set (omits the INVALID drop).
    pub conntrack_tcp_be_liberal: bool,
    /// `--nodeport-addresses`, as given: CIDRs and the keywords `primary`, `localhost`, `all`.
    /// `None`: the backend's default (all for iptables and IPVS, `primary` for nftables).
    pub nodeport_addresses: Option<Vec<String>>,
    /// The node's network interfaces and addresses.
    pub host_addresses: Vec<HostInterface>,
    /// The Service CIDRs (nftables: unallocated ClusterIPs are dropped).
    pub service_cidrs: Vec<IpNet>,
    /// The IPVS scheduler (`rr`).
    pub ipvs_scheduler: String,
    /// `masqueradeAll`: masquerade all traffic to ClusterIPs.
    pub masquerade_all: bool,
    /// The PreferSameTrafficDistribution feature gate (GA, on): read node hints.
    pub node_hints: bool,
    /// The key of the maps the model build keys by names from the input (Services and slices
    /// by namespace and name, namespaces): [`KeyedState::default`]'s fixed key unless set. An
    /// embedder that reads untrusted objects sets a secret one against crafted hash collisions
    /// (see [`svcnet_model::hash`]); the model is the same under every key. Not serialized.
    #[serde(skip)]
    pub hash_key: KeyedState,
}

impl ProxyConfig {
    /// kube-proxy's defaults for a node: mark bit 14 (`0x00004000`), cluster-CIDR detection
    /// (no CIDR yet), localhost NodePorts on, nfacct counters present, conntrack not liberal,
    /// the backend's NodePort addresses, interfaces `lo` (127.0.0.1/8, ::1/128) and `eth0`
    /// (the node IP), scheduler `rr`.
    pub fn new(node_name: impl Into<String>, node_ip: IpAddr) -> Self {
        ProxyConfig {
            node_name: node_name.into(),
            node_ip,
            cluster_cidrs: Vec::new(),
            local_detector: LocalDetectorMode::ClusterCidr,
            masquerade_mark: Self::mark_for_bit(14).expect("invariant: bit 14 is a valid mark bit"),
            localhost_nodeports: true,
            nfacct: true,
            conntrack_tcp_be_liberal: false,
            nodeport_addresses: None,
            host_addresses: Self::default_host_addresses(node_ip),
            service_cidrs: Vec::new(),
            ipvs_scheduler: "rr".to_owned(),
            masquerade_all: false,
            node_hints: true,
            hash_key: KeyedState::default(),
        }
    }

    /// The interfaces kube-oracle assumes when none are given: `lo` with 127.0.0.1/8 and
    /// ::1/128, `eth0` with the node IP.
    pub fn default_host_addresses(node_ip: IpAddr) -> Vec<HostInterface> {
        vec![
            HostInterface {
                name: "lo".to_owned(),
                addresses: vec![
                    HostAddress {
                        ip: IpAddr::V4(Ipv4Addr::LOCALHOST),
                        prefix: Some(8),
                    },
                    HostAddress {
                        ip: IpAddr::V6(Ipv6Addr::LOCALHOST),
                        prefix: Some(128),
                    },
                ],
            },
            HostInterface {
                name: "eth0".to_owned(),
                addresses: vec![HostAddress {
                    ip: node_ip,
                    prefix: None,
                }],
            },
        ]
    }

    /// The mark kube-proxy derives from `--iptables-masquerade-bit` (`NewProxier`:
    /// Go's `%#08x` of `1 << bit`, i.e. `0x` and at least 8 hex digits): bit 14 gives
    /// `0x00004000`. An error for a bit above 31.
    pub fn mark_for_bit(bit: u32) -> Result<String, RulesError> {
        if bit > 31 {
            return Err(RulesError::Setting {
                setting: "masquerade-bit",
                value: bit.to_string(),
                why: "must be between 0 and 31",
            });
        }
        Ok(format!("0x{:08x}", 1u64 << bit))
    }

    /// The proxier's IP family: the node IP's.
    pub fn family(&self) -> IpFamily {
        IpFamily::of(self.node_ip)
    }

    /// The local-traffic detector for the family (`getLocalDetectors`): the first cluster CIDR
    /// of the family, or none.
    pub fn detector(&self) -> LocalDetector {
        match self.local_detector {
            LocalDetectorMode::None => LocalDetector::NoOp,
            LocalDetectorMode::ClusterCidr => self
                .cluster_cidrs
                .iter()
                .find(|c| IpFamily::of(c.addr()) == self.family())
                .map_or(LocalDetector::NoOp, |c| LocalDetector::Cidr(c.trunc())),
        }
    }

    /// The NodePort address filter for the family (`NewNodePortAddresses` after
    /// `cmd/kube-proxy` expanded the keywords). `default_primary`: the backend's default when
    /// no addresses are set is `primary` (nftables) rather than all (iptables, IPVS).
    pub fn nodeport_addresses_for(&self, default_primary: bool) -> Result<NodePortAddresses, RulesError> {
        let family = self.family();
        let mut cidrs: Vec<IpNet> = Vec::new();
        let given: Vec<String> = match &self.nodeport_addresses {
            Some(v) if !v.is_empty() => v.clone(),
            _ if default_primary => vec!["primary".to_owned()],
            _ => Vec::new(),
        };
        for entry in &given {
            match entry.trim() {
                "primary" => cidrs.push(IpNet::from(self.node_ip)),
                "localhost" => {
                    cidrs.push(IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::new(127, 0, 0, 0), 8)));
                    cidrs.push(IpNet::V6(Ipv6Net::new_assert(Ipv6Addr::LOCALHOST, 128)));
                }
                "all" => {
                    cidrs.push(IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::UNSPECIFIED, 0)));
                    cidrs.push(IpNet::V6(Ipv6Net::new_assert(Ipv6Addr::UNSPECIFIED, 0)));
                }
                text => {
                    let (ip, prefix) = svcnet_model::validation::names::parse_cidr_sloppy(text).ok_or(
                        RulesError::Setting {
                            setting: "nodeport-addresses",
                            value: text.to_owned(),
                            why: "not a CIDR or one of primary, localhost, all",
                        },
                    )?;
                    let net = IpNet::new(ip, prefix).map_err(|_| RulesError::Setting {
                        setting: "nodeport-addresses",
                        value: text.to_owned(),
                        why: "bad prefix length",
                    })?;
                    cidrs.push(net);
                }
            }
        }
        cidrs.retain(|c| IpFamily::of(c.addr()) == family);
        if cidrs.is_empty() {
            cidrs.push(match family {
                IpFamily::V4 => IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::UNSPECIFIED, 0)),
                IpFamily::V6 => IpNet::V6(Ipv6Net::new_assert(Ipv6Addr::UNSPECIFIED, 0)),
            });
        }
        let loopback4 = Ipv4Addr::new(127, 0, 0, 1);
        let contains_ipv4_loopback = cidrs.iter().any(|c| match c {
            IpNet::V4(n) => n.network().is_loopback() || n.contains(&loopback4),
            IpNet::V6(_) => false,
        });
        let mut out = Vec::new();
        let mut match_all = false;
        for c in cidrs {
            let c = c.trunc();
            if c.prefix_len() == 0 {
                out = vec![c];
                match_all = true;
                break;
            }
            out.push(c);
        }
        Ok(NodePortAddresses {
            cidrs: out,
            match_all,
            contains_ipv4_loopback,
        })
    }

    /// Whether the iptables localhost-NodePort rules are written: the setting, forced off
    /// unless the NodePort addresses hold an IPv4 loopback address (`NewProxier`), and only
    /// for IPv4.
    pub fn localhost_nodeports_for(&self, npa: &NodePortAddresses) -> bool {
        self.localhost_nodeports && npa.contains_ipv4_loopback && self.family() == IpFamily::V4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mark_for_bit_formats_as_go_does() {
        assert_eq!(ProxyConfig::mark_for_bit(14).unwrap(), "0x00004000");
        assert_eq!(ProxyConfig::mark_for_bit(0).unwrap(), "0x00000001");
        assert_eq!(ProxyConfig::mark_for_bit(31).unwrap(), "0x80000000");
        assert!(ProxyConfig::mark_for_bit(32).is_err());
    }

    #[test]
    fn nodeport_addresses_expand_and_filter_by_family() {
        let mut c = ProxyConfig::new("n", "192.168.0.2".parse().unwrap());
        let all = c.nodeport_addresses_for(false).unwrap();
        assert!(all.match_all && all.contains_ipv4_loopback);
        c.nodeport_addresses = Some(vec!["192.168.0.0/24".into(), "fd00::/64".into()]);
        let npa = c.nodeport_addresses_for(false).unwrap();
        assert!(!npa.match_all && !npa.contains_ipv4_loopback);
        assert_eq!(npa.cidrs, vec!["192.168.0.0/24".parse::<IpNet>().unwrap()]);
        assert!(!c.localhost_nodeports_for(&npa));
        c.nodeport_addresses = Some(vec!["primary".into(), "127.0.0.1/32".into()]);
        let npa = c.nodeport_addresses_for(false).unwrap();
        assert!(npa.contains_ipv4_loopback && c.localhost_nodeports_for(&npa));
        let ips = npa.node_ips(&c.host_addresses);
        assert_eq!(
            ips,
            vec![
                "127.0.0.1".parse::<IpAddr>().unwrap(),
                "192.168.0.2".parse().unwrap()
            ]
        );
        c.nodeport_addresses = Some(vec!["bogus".into()]);
        assert!(c.nodeport_addresses_for(false).is_err());
        // nftables' default is the node IP.
        c.nodeport_addresses = None;
        let npa = c.nodeport_addresses_for(true).unwrap();
        assert_eq!(npa.cidrs, vec!["192.168.0.2/32".parse::<IpNet>().unwrap()]);
    }

    #[test]
    fn detector_takes_the_first_cidr_of_the_family() {
        let mut c = ProxyConfig::new("n", "fd00::2".parse().unwrap());
        c.cluster_cidrs = vec![
            "10.0.0.0/8".parse().unwrap(),
            "fd00:10::/56".parse().unwrap(),
            "fd00:20::/56".parse().unwrap(),
        ];
        assert_eq!(c.detector(), LocalDetector::Cidr("fd00:10::/56".parse().unwrap()));
        c.local_detector = LocalDetectorMode::None;
        assert_eq!(c.detector(), LocalDetector::NoOp);
    }
}
