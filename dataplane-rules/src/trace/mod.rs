//! Packet tracing: what the rules of one node do with the first packet of a new connection.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2), over the rules of
//! `pkg/proxy/iptables/proxier.go`, `pkg/proxy/nftables/proxier.go` and
//! `pkg/proxy/ipvs/proxier.go`.
//!
//! The tracers walk svcnet's own typed rule sets ([`iptables`] walks the tables of an
//! [`IptablesState`](crate::iptables::IptablesState); [`nftables`] walks a
//! [`TableState`](crate::nftables::TableState); [`ipvs::trace_rules`] walks an
//! [`IpvsRuleSet`](crate::ipvs::IpvsRuleSet): its companion iptables rules with ipset
//! membership, then its virtual servers) the way kube-proxy v1.37.2's test tracers walk theirs: every packet takes the PREROUTING-side hooks, `ct state new` always holds,
//! random load balancing is expanded (the answer is the *set* of endpoints), and any match or
//! target kube-proxy does not write is reported as [`TraceError::Unsupported`], never guessed.
//!
//! ```
//! use svcnet_rules::trace::{Outcome, Packet};
//! let p = Packet::parse("10.0.0.2", "172.30.0.41:80/tcp").unwrap();
//! assert_eq!(p.port, 80);
//! assert_eq!(Outcome::Pass.as_str(), "pass");
//! ```

pub mod iptables;
pub mod ipvs;
pub mod nftables;
pub mod reference;

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};

use serde::Serialize;
use thiserror::Error;

use crate::proxy::{Protocol, ProxyConfig};

/// The first packet of a new connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    /// Source address.
    pub source: IpAddr,
    /// Destination address.
    pub destination: IpAddr,
    /// Destination port.
    pub port: u16,
    /// Protocol.
    pub protocol: Protocol,
}

impl Packet {
    /// Reads a source address and a destination written `ADDR:PORT[/PROTO]` or
    /// `[ADDR6]:PORT[/PROTO]` (protocol `tcp` when absent, any case).
    pub fn parse(source: &str, to: &str) -> Result<Self, TraceError> {
        let bad = |why: &'static str| TraceError::Packet {
            value: format!("{source} -> {to}"),
            why,
        };
        let source: IpAddr = source
            .trim()
            .parse()
            .map_err(|_| bad("the source is not an IP address"))?;
        let (addr, proto) = match to.rsplit_once('/') {
            Some((a, p)) => (a, p),
            None => (to, "tcp"),
        };
        let protocol = Protocol::parse(&proto.to_ascii_uppercase())
            .ok_or(bad("the protocol is not tcp, udp or sctp"))?;
        let sa: SocketAddr = addr
            .parse()
            .map_err(|_| bad("the destination is not ADDR:PORT or [ADDR6]:PORT"))?;
        Ok(Packet {
            source,
            destination: sa.ip(),
            port: sa.port(),
            protocol,
        })
    }
}

/// The node's own addresses: sources among them are locally generated traffic, and they are
/// what `addrtype LOCAL` / `fib ... type local` match.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostAddresses {
    /// Every address of the node.
    pub addresses: BTreeSet<IpAddr>,
}

impl HostAddresses {
    /// The node IP and every address of `--host-addresses`.
    pub fn of(config: &ProxyConfig) -> Self {
        let mut addresses: BTreeSet<IpAddr> = config
            .host_addresses
            .iter()
            .flat_map(|i| i.addresses.iter().map(|a| a.ip))
            .collect();
        addresses.insert(config.node_ip);
        HostAddresses { addresses }
    }

    /// Whether `ip` is one of the node's addresses (loopback always is).
    pub fn is_local(&self, ip: IpAddr) -> bool {
        ip.is_loopback() || self.addresses.contains(&ip)
    }
}

/// What the rules do with the packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Outcome {
    /// DNAT to one of [`Trace::endpoints`].
    Dnat,
    /// No rule decided anything.
    Pass,
    /// Rejected.
    Reject,
    /// Dropped.
    Drop,
    /// Accepted by a filter rule.
    Accept,
}

impl Outcome {
    /// The lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Dnat => "dnat",
            Outcome::Pass => "pass",
            Outcome::Reject => "reject",
            Outcome::Drop => "drop",
            Outcome::Accept => "accept",
        }
    }
}

/// One rule the packet matched.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Step {
    /// The table (`nat`, `filter`, or the nftables table name).
    pub table: String,
    /// The chain.
    pub chain: String,
    /// The rule, as the backend writes it.
    pub rule: String,
}

/// The answer of a tracer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Trace {
    /// What happens to the packet.
    pub outcome: Outcome,
    /// The endpoints the packet can be DNATed to (empty unless the outcome is `dnat`).
    #[serde(serialize_with = "ser_endpoints")]
    pub endpoints: BTreeSet<SocketAddr>,
    /// Whether any path of the walk marked the packet for masquerading.
    pub masquerade: bool,
    /// The rules matched, in walk order.
    pub walk: Vec<Step>,
    /// What the tracer did not model for this answer (empty when it modelled everything).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl Trace {
    /// The endpoints as sorted `IP:port` strings (IPv6 as `[addr]:port`).
    pub fn endpoint_strings(&self) -> Vec<String> {
        let mut v: Vec<String> = self.endpoints.iter().map(ToString::to_string).collect();
        v.sort();
        v
    }
}

fn ser_endpoints<S: serde::Serializer>(e: &BTreeSet<SocketAddr>, s: S) -> Result<S::Ok, S::Error> {
    let mut v: Vec<String> = e.iter().map(ToString::to_string).collect();
    v.sort();
    s.collect_seq(v)
}

/// Why a packet could not be traced.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The packet is malformed.
    #[error("packet {value:?}: {why}")]
    Packet {
        /// The text given.
        value: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A rule uses something the tracer does not model.
    #[error("unsupported in {table} {chain}: {what:?} in rule {rule:?}")]
    Unsupported {
        /// The table.
        table: String,
        /// The chain.
        chain: String,
        /// The rule text.
        rule: String,
        /// The part that is not understood.
        what: String,
    },
    /// Chains jump into each other too deeply (a loop).
    #[error("chain {chain}: jumps nest deeper than {limit}")]
    TooDeep {
        /// The chain reached at the limit.
        chain: String,
        /// The limit.
        limit: usize,
    },
    /// The rule set has no table the tracer needs.
    #[error("no table {0} in the rule set")]
    NoTable(String),
}

/// How deep jumps may nest.
pub const MAX_DEPTH: usize = 32;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packets_parse_v4_v6_and_default_protocol() {
        let p = Packet::parse("2001:db8::1", "[fd00::10]:443/UDP").unwrap();
        assert_eq!(p.destination, "fd00::10".parse::<IpAddr>().unwrap());
        assert_eq!((p.port, p.protocol), (443, Protocol::Udp));
        assert_eq!(
            Packet::parse("10.0.0.1", "10.0.0.2:80").unwrap().protocol,
            Protocol::Tcp
        );
        assert!(Packet::parse("10.0.0.1", "10.0.0.2:80/icmp").is_err());
        assert!(Packet::parse("nope", "10.0.0.2:80").is_err());
        assert!(Packet::parse("10.0.0.1", "10.0.0.2").is_err());
    }
}
