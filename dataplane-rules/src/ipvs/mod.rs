//! kube-proxy's IPVS mode (v1.37.2, `pkg/proxy/ipvs`) as data: virtual servers with their
//! real servers, the 17 ipsets, the addresses bound to the `kube-ipvs0` dummy interface, and
//! the companion iptables rules — then rendered as `ipvsadm --restore` input, `ipset
//! restore` input, iptables restore/save text, a readable text and JSON.
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/ipvs/proxier.go`, `ipset.go` and `util/ipvs.go`.
//!
//! Every IPVS sync is a full sync: the rule set depends only on the current cluster state
//! and the node's settings, never on earlier syncs (a real server that leaves is deleted at
//! once unless it still has connections, which only a live kernel knows; see
//! [`IpvsRuleSet::drain_from`] for what kube-proxy does then).

mod build;
mod ipset;
mod iptables;
mod render;
mod server;
mod sort;

pub use build::{IpvsOptions, IpvsSettings, PortInput, build, build_rule_set};
pub use ipset::{IpSet, IpSetEntry, IpSetKind, IpSets, SetType};
pub use iptables::{
    BlockedFromNode, ClusterIpMasquerade, FILTER_CHAINS, IptablesPart, IptablesSettings, JUMPS, NAT_CHAINS,
    Rule, Table,
};
pub use render::{IpSetEntryJson, IptablesView, IpvsJson, RealServerJson, RuleJson, VirtualServerJson};
pub use server::{Protocol, RealServer, ServiceFlags, VirtualServer, VirtualServerKey};

use std::net::IpAddr;

use serde::Serialize;

/// The name of the dummy interface IPVS mode binds service addresses to.
pub const DUMMY_DEVICE: &str = "kube-ipvs0";

/// Everything IPVS mode programs on one node for one IP family.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct IpvsRuleSet {
    /// Whether this is the IPv6 proxier's rule set.
    pub ipv6: bool,
    /// The virtual servers, in address, port, protocol order.
    pub virtual_servers: Vec<VirtualServer>,
    /// The ipsets.
    pub ipsets: IpSets,
    /// The addresses bound to `kube-ipvs0`, in value order.
    pub bind_addresses: Vec<IpAddr>,
    /// The iptables rules.
    pub iptables: IptablesPart,
}

impl IpvsRuleSet {
    /// The virtual server with this key, if any.
    pub fn virtual_server(&self, key: VirtualServerKey) -> Option<&VirtualServer> {
        self.virtual_servers
            .binary_search_by(|v| v.key().output_cmp(&key))
            .ok()
            .map(|i| &self.virtual_servers[i])
    }

    /// Graceful termination, as kube-proxy's `GracefulTerminationManager` does it: real
    /// servers of `prior` that this rule set no longer has, on a TCP virtual server that is
    /// still here, stay with weight 0 while `has_connections` says they still carry
    /// connections (`ActiveConn + InactiveConn > 0`); the others are gone. UDP and SCTP real
    /// servers are deleted at once. With no connections anywhere (`|_, _| false`, what
    /// kube-proxy's test fakes report) the rule set is unchanged.
    pub fn drain_from(
        &mut self,
        prior: &IpvsRuleSet,
        mut has_connections: impl FnMut(&VirtualServer, &RealServer) -> bool,
    ) {
        for vs in &mut self.virtual_servers {
            if !server::drains(vs.protocol) {
                continue;
            }
            let Some(old) = prior.virtual_server(vs.key()) else {
                continue;
            };
            let mut added = false;
            for rs in &old.real_servers {
                let kept = vs
                    .real_servers
                    .iter()
                    .any(|r| r.address == rs.address && r.port == rs.port);
                if !kept && has_connections(old, rs) {
                    vs.real_servers.push(RealServer { weight: 0, ..*rs });
                    added = true;
                }
            }
            if added {
                vs.real_servers.sort_by(|a, b| a.text_cmp(b));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vs(proto: Protocol, rs: &[(&str, i32)]) -> VirtualServer {
        VirtualServer {
            address: "10.96.0.1".parse().unwrap(),
            protocol: proto,
            port: 80,
            scheduler: "rr".into(),
            flags: ServiceFlags::NONE,
            timeout: 0,
            real_servers: rs
                .iter()
                .map(|(a, w)| RealServer {
                    address: a.parse().unwrap(),
                    port: 8080,
                    weight: *w,
                })
                .collect(),
        }
    }

    fn set(vss: Vec<VirtualServer>) -> IpvsRuleSet {
        let sets = IpSets::new(false);
        let m = ClusterIpMasquerade::SourceIsVip;
        let iptables = IptablesPart::build(
            &sets,
            &[],
            &IptablesSettings {
                ipv6: false,
                mark: "0x4000",
                cluster_ip_masquerade: &m,
            },
        );
        IpvsRuleSet {
            ipv6: false,
            virtual_servers: vss,
            ipsets: sets,
            bind_addresses: vec![],
            iptables,
        }
    }

    #[test]
    fn removed_tcp_real_servers_with_connections_drain_at_weight_zero() {
        let prior = set(vec![vs(
            Protocol::Tcp,
            &[("10.0.0.1", 1), ("10.0.0.2", 1), ("10.0.0.3", 1)],
        )]);
        let mut next = set(vec![vs(Protocol::Tcp, &[("10.0.0.1", 1)])]);
        next.drain_from(&prior, |_, rs| rs.address.to_string() == "10.0.0.2");
        let got: Vec<(String, i32)> = next.virtual_servers[0]
            .real_servers
            .iter()
            .map(|r| (r.address.to_string(), r.weight))
            .collect();
        assert_eq!(got, [("10.0.0.1".to_owned(), 1), ("10.0.0.2".to_owned(), 0)]);
        // Without connections (kube-proxy's fakes), nothing is kept.
        let mut next = set(vec![vs(Protocol::Tcp, &[("10.0.0.1", 1)])]);
        next.drain_from(&prior, |_, _| false);
        assert_eq!(next.virtual_servers[0].real_servers.len(), 1);
    }

    #[test]
    fn udp_real_servers_never_drain() {
        let prior = set(vec![vs(Protocol::Udp, &[("10.0.0.1", 1), ("10.0.0.2", 1)])]);
        let mut next = set(vec![vs(Protocol::Udp, &[("10.0.0.1", 1)])]);
        next.drain_from(&prior, |_, _| true);
        assert_eq!(next.virtual_servers[0].real_servers.len(), 1);
    }
}
