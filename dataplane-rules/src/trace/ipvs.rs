//! The IPVS tracer: the virtual server the packet's destination, port and protocol name, and
//! its real servers. The companion iptables rules (masquerading, LoadBalancer source ranges,
//! the no-local-endpoint drops) are matched against ipsets; this tracer does not walk them and
//! says so in [`Trace::notes`] rather than guessing.

use std::collections::BTreeSet;
use std::net::SocketAddr;

use super::{Outcome, Packet, Step, Trace};
use crate::ipvs::{IpvsRuleSet, VirtualServerKey};

/// What the tracer leaves to the companion iptables rules.
pub const NOT_WALKED: &str = "ipvs: masquerading, loadBalancerSourceRanges and externalTrafficPolicy drops are decided by the companion iptables rules and ipsets, which this tracer does not walk; masquerade is reported false";

/// Traces `packet` through the virtual servers of `rules`.
pub fn trace(rules: &IpvsRuleSet, packet: &Packet) -> Trace {
    let key = VirtualServerKey {
        address: packet.destination,
        port: packet.port,
        protocol: packet.protocol,
    };
    let mut walk = Vec::new();
    let mut endpoints = BTreeSet::new();
    let outcome = match rules.virtual_server(key) {
        None => Outcome::Pass,
        Some(vs) => {
            walk.push(Step {
                table: "ipvs".to_owned(),
                chain: "virtual-server".to_owned(),
                rule: format!(
                    "{} {} -s {}",
                    packet.protocol.lower(),
                    SocketAddr::new(vs.address, vs.port),
                    vs.scheduler
                ),
            });
            for rs in vs.real_servers.iter().filter(|r| r.weight > 0) {
                walk.push(Step {
                    table: "ipvs".to_owned(),
                    chain: "real-server".to_owned(),
                    rule: format!("{} -w {}", SocketAddr::new(rs.address, rs.port), rs.weight),
                });
                endpoints.insert(SocketAddr::new(rs.address, rs.port));
            }
            // No schedulable real server: IPVS answers ICMP port unreachable (`ip_vs_leave`).
            if endpoints.is_empty() {
                Outcome::Reject
            } else {
                Outcome::Dnat
            }
        }
    };
    Trace {
        outcome,
        endpoints,
        masquerade: false,
        walk,
        notes: vec![NOT_WALKED.to_owned()],
    }
}
