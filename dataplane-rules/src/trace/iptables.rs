//! The iptables tracer: nat `PREROUTING`, then the filter chains `KUBE-SERVICES`,
//! `KUBE-EXTERNAL-SERVICES`, `KUBE-NODEPORTS` and `KUBE-PROXY-FIREWALL`, each on its own,
//! with the destination rewritten to the first DNAT target.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2), over the tables
//! `pkg/proxy/iptables/proxier.go` writes.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};

use super::{HostAddresses, MAX_DEPTH, Outcome, Packet, Step, Trace, TraceError};
use crate::iptables::{Addr, Chain, IptablesState, KernelTable, Match, Rule, Target};

/// The filter chains walked after nat, in order.
const FILTER_CHAINS: [&str; 4] = [
    "KUBE-SERVICES",
    "KUBE-EXTERNAL-SERVICES",
    "KUBE-NODEPORTS",
    "KUBE-PROXY-FIREWALL",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Verdict {
    Accept,
    Drop,
    Reject,
    Dnat,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Return,
    Terminal(Verdict),
}

struct Walker<'a> {
    table: &'a KernelTable,
    host: &'a HostAddresses,
    packet: Packet,
    mark: bool,
    masquerade: bool,
    dnats: Vec<SocketAddr>,
    walk: Vec<Step>,
}

fn contains(addr: &Addr, ip: IpAddr) -> bool {
    match addr {
        Addr::Ip(a) => *a == ip,
        Addr::Net(n) => n.contains(&ip),
    }
}

impl Walker<'_> {
    fn unsupported(&self, chain: Chain, rule: &Rule, what: &str) -> TraceError {
        TraceError::Unsupported {
            table: self.table.name.to_owned(),
            chain: chain.to_string(),
            rule: rule.to_string(),
            what: what.to_owned(),
        }
    }

    /// Whether every match holds, in order; a match the tracer does not model is an error
    /// once the matches before it hold.
    fn matches(&self, rule: &Rule) -> Result<bool, TraceError> {
        let p = &self.packet;
        for m in &rule.matches {
            let holds = match m {
                Match::Comment(_) | Match::Nfacct(_) | Match::RecentSet(_) | Match::Probability(_) => true,
                Match::Protocol(pr) | Match::ProtocolOnly(pr) => *pr == p.protocol,
                Match::Source { negated, addr } => contains(addr, p.source) != *negated,
                Match::Destination { negated, addr } => contains(addr, p.destination) != *negated,
                Match::DestinationPort(port) => *port == p.port,
                Match::DestinationLocal => self.host.is_local(p.destination),
                Match::SourceLocal => self.host.is_local(p.source),
                Match::Mark { negated, .. } => self.mark != *negated,
                // A new connection: only a plain test for NEW holds.
                Match::Conntrack { negated, states } => !*negated && states.split(',').any(|s| s == "NEW"),
                // No affinity history.
                Match::RecentCheck { .. } => false,
                Match::Unsupported(text) => return Err(self.unsupported(rule.chain, rule, text)),
            };
            if !holds {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn chain(&mut self, chain: Chain, depth: usize) -> Result<Flow, TraceError> {
        if depth > MAX_DEPTH {
            return Err(TraceError::TooDeep {
                chain: chain.to_string(),
                limit: MAX_DEPTH,
            });
        }
        let Some(rules) = self.table.chains.get(&chain) else {
            // A jump to a chain that does not exist (KUBE-MARK-DROP) does nothing.
            return Ok(Flow::Return);
        };
        for rule in rules {
            if !self.matches(rule)? {
                continue;
            }
            let mut text = String::new();
            rule.write_to(&mut text);
            self.walk.push(Step {
                table: self.table.name.to_owned(),
                chain: chain.to_string(),
                rule: text,
            });
            let branch = rule.matches.iter().any(|m| matches!(m, Match::Probability(_)));
            let flow = match &rule.target {
                Target::None | Target::MasqueradeRandomFully => continue,
                Target::OrMark(_) => {
                    self.mark = true;
                    self.masquerade = true;
                    continue;
                }
                Target::XorMark(_) => {
                    self.mark = false;
                    continue;
                }
                Target::Jump(c) => self.chain(*c, depth + 1)?,
                Target::Unsupported(text) => return Err(self.unsupported(chain, rule, text)),
                Target::Accept => Flow::Terminal(Verdict::Accept),
                Target::Drop => Flow::Terminal(Verdict::Drop),
                Target::Reject => Flow::Terminal(Verdict::Reject),
                Target::Return => return Ok(Flow::Return),
                Target::Dnat(to) => {
                    self.dnats.push(*to);
                    Flow::Terminal(Verdict::Dnat)
                }
            };
            match flow {
                // A random branch was followed; the walk goes on to cover the others.
                Flow::Terminal(_) if branch => continue,
                Flow::Terminal(v) => return Ok(Flow::Terminal(v)),
                Flow::Return => continue,
            }
        }
        Ok(Flow::Return)
    }
}

/// Traces `packet` through the tables of `state`, as seen by a node with addresses `host`.
pub fn trace(state: &IptablesState, host: &HostAddresses, packet: &Packet) -> Result<Trace, TraceError> {
    let mut nat = Walker {
        table: &state.nat,
        host,
        packet: *packet,
        mark: false,
        masquerade: false,
        dnats: Vec::new(),
        walk: Vec::new(),
    };
    nat.chain(Chain::Fixed("PREROUTING"), 0)?;
    let mut filtered = *packet;
    if let Some(first) = nat.dnats.first() {
        filtered.destination = first.ip();
    }
    let mut walk = std::mem::take(&mut nat.walk);
    let mut verdict = None;
    for name in FILTER_CHAINS {
        let mut f = Walker {
            table: &state.filter,
            host,
            packet: filtered,
            mark: nat.mark,
            masquerade: false,
            dnats: Vec::new(),
            walk: Vec::new(),
        };
        let flow = f.chain(Chain::Fixed(name), 0)?;
        walk.append(&mut f.walk);
        if let Flow::Terminal(v) = flow {
            verdict = Some(v);
            break;
        }
    }
    let endpoints: BTreeSet<SocketAddr> = nat.dnats.iter().copied().collect();
    let outcome = match verdict {
        Some(Verdict::Accept) => Outcome::Accept,
        Some(Verdict::Drop) => Outcome::Drop,
        Some(Verdict::Reject) => Outcome::Reject,
        Some(Verdict::Dnat) | None if !endpoints.is_empty() => Outcome::Dnat,
        Some(Verdict::Dnat) | None => Outcome::Pass,
    };
    Ok(Trace {
        outcome,
        endpoints: if outcome == Outcome::Dnat {
            endpoints
        } else {
            BTreeSet::new()
        },
        masquerade: nat.masquerade,
        walk,

        notes: Vec::new(),
    })
}
