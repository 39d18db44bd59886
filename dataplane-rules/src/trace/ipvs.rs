//! The IPVS tracer. [`trace_rules`] walks what kube-proxy's IPVS mode programs, in the order
//! the kernel runs it for a packet arriving at the node:
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2), over what `pkg/proxy/ipvs/proxier.go`
//! programs.
//!
//! 1. nat `PREROUTING` (→ `KUBE-SERVICES`, `KUBE-LOAD-BALANCER`, `KUBE-NODE-PORT`,
//!    `KUBE-MARK-MASQ`), with `-m set --match-set` tested against the rule set's ipsets; a
//!    nat `ACCEPT` ends the nat walk.
//! 2. filter `INPUT` when the destination is local to the node (its addresses and the ones
//!    bound to `kube-ipvs0`): `KUBE-IPVS-FILTER` (REJECT for a new connection to an IPVS
//!    address on a port no virtual server has), `KUBE-PROXY-FIREWALL` →
//!    `KUBE-SOURCE-RANGES-FIREWALL` (DROP outside `loadBalancerSourceRanges`), `KUBE-NODE-PORT`
//!    (ACCEPT for health-check node ports); else filter `FORWARD` (its `KUBE-PROXY-FIREWALL`
//!    jump; `KUBE-FORWARD` is not walked, as the iptables tracer does not walk it: it only
//!    accepts marked or established traffic). A DROP or REJECT ends the trace; an ACCEPT ends
//!    the filter walk only (IPVS's LOCAL_IN hook runs after filter INPUT).
//! 3. the IPVS lookup (LOCAL_IN): the virtual server of the destination, port and protocol;
//!    its real servers of positive weight are the DNAT set; a virtual server without one
//!    answers ICMP port unreachable (`ip_vs_leave`), reported as REJECT.
//! 4. nat `POSTROUTING` (`KUBE-POSTROUTING`) once per chosen endpoint (or once for the
//!    untouched packet): a `MASQUERADE` reached (the masquerade mark, or the hairpin
//!    `KUBE-LOOP-BACK` set) makes `masquerade` true.
//!
//! Like the other tracers, every packet takes the PREROUTING-side path whatever its source
//! (filter `OUTPUT`'s `KUBE-IPVS-OUT-FILTER` is not walked: its drops of load-balancer IPs from
//! the node are the same sources the source-range firewall drops on the input path).
//! [`trace`] is the lookup of step 3 alone.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};

use ipnet::IpNet;

use super::{HostAddresses, MAX_DEPTH, Outcome, Packet, Step, Trace, TraceError};
use crate::ipvs::{IpSet, IpSetEntry, IpvsRuleSet, Rule, Table, VirtualServerKey};
use crate::proxy::Protocol;

/// What [`trace`] (the lookup alone) leaves to the companion iptables rules.
pub const NOT_WALKED: &str = "ipvs: masquerading, loadBalancerSourceRanges and externalTrafficPolicy drops are decided by the companion iptables rules and ipsets, which this tracer does not walk; masquerade is reported false";

/// The virtual-server lookup: walk steps, endpoints and outcome (`Pass` without a virtual
/// server).
fn lookup(rules: &IpvsRuleSet, packet: &Packet, walk: &mut Vec<Step>) -> (Outcome, BTreeSet<SocketAddr>) {
    let key = VirtualServerKey {
        address: packet.destination,
        port: packet.port,
        protocol: packet.protocol,
    };
    let mut endpoints = BTreeSet::new();
    let Some(vs) = rules.virtual_server(key) else {
        return (Outcome::Pass, endpoints);
    };
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
        (Outcome::Reject, endpoints)
    } else {
        (Outcome::Dnat, endpoints)
    }
}

/// Traces `packet` through the virtual servers of `rules` only (no iptables rule, no ipset):
/// the lookup of [`trace_rules`]' step 3, with [`NOT_WALKED`] in the notes.
pub fn trace(rules: &IpvsRuleSet, packet: &Packet) -> Trace {
    let mut walk = Vec::new();
    let (outcome, endpoints) = lookup(rules, packet, &mut walk);
    Trace {
        outcome,
        endpoints,
        masquerade: false,
        walk,
        notes: vec![NOT_WALKED.to_owned()],
    }
}

/// One `-m set` direction flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dir {
    Src,
    Dst,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum M<'a> {
    Source {
        negated: bool,
        net: IpNet,
    },
    Protocol(Protocol),
    Set {
        negated: bool,
        name: &'a str,
        dirs: Vec<Dir>,
    },
    AddrType {
        negated: bool,
        source: bool,
    },
    /// `-m physdev ! --physdev-is-in`: no traced packet comes in through a bridge port.
    PhysdevIsIn {
        negated: bool,
    },
    Mark {
        negated: bool,
    },
    CtState {
        negated: bool,
        new: bool,
    },
    /// `-m ipvs --vaddr A --vproto P --vport N`: a packet IPVS handles for that virtual server.
    Ipvs {
        negated: bool,
        vaddr: IpNet,
        protocol: Protocol,
        port: u16,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum T<'a> {
    Jump(&'a str),
    Accept,
    Drop,
    Reject,
    Return,
    OrMark,
    XorMark,
    Masquerade,
}

struct Parsed<'a> {
    matches: Vec<M<'a>>,
    target: T<'a>,
}

/// Splits a rule line into words, a double-quoted string being one word.
fn words(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = line.trim_start();
    while !rest.is_empty() {
        let end = if let Some(q) = rest.strip_prefix('"') {
            q.find('"').map_or(rest.len(), |i| i + 2)
        } else {
            rest.find(char::is_whitespace).unwrap_or(rest.len())
        };
        out.push(&rest[..end]);
        rest = rest[end..].trim_start();
    }
    out
}

fn unsupported(rule: &Rule, what: impl Into<String>) -> TraceError {
    TraceError::Unsupported {
        table: rule.table.as_str().to_owned(),
        chain: rule.chain.to_owned(),
        rule: rule.line.clone(),
        what: what.into(),
    }
}

fn parse_net(s: &str) -> Option<IpNet> {
    s.parse::<IpNet>()
        .ok()
        .or_else(|| s.parse::<IpAddr>().ok().map(IpNet::from))
}

/// Reads the matches and target of one rule kube-proxy's IPVS mode writes.
fn parse(rule: &Rule) -> Result<Parsed<'_>, TraceError> {
    let w = words(&rule.line);
    let mut i = 0;
    if w.first() == Some(&"-A") {
        i = 2;
    }
    let mut matches = Vec::new();
    let mut target = None;
    let mut negated = false;
    let word = |i: usize| {
        w.get(i)
            .copied()
            .ok_or_else(|| unsupported(rule, "a truncated option"))
    };
    while i < w.len() {
        let t = w[i];
        match t {
            "!" => {
                negated = true;
                i += 1;
                continue;
            }
            "-m" => {
                // Module names only introduce their options.
                i += 2;
                continue;
            }
            "-s" => {
                let v = word(i + 1)?;
                let net = parse_net(v).ok_or_else(|| unsupported(rule, format!("-s {v}")))?;
                matches.push(M::Source { negated, net });
                i += 2;
            }
            "-p" => {
                let v = word(i + 1)?;
                let p = Protocol::parse(&v.to_ascii_uppercase())
                    .ok_or_else(|| unsupported(rule, format!("-p {v}")))?;
                if negated {
                    return Err(unsupported(rule, "! -p"));
                }
                matches.push(M::Protocol(p));
                i += 2;
            }
            "--comment" => {
                // A quoted comment is one word; the built-in chains' jumps carry theirs
                // unquoted, up to the next option.
                i += 1;
                if w.get(i).is_some_and(|c| c.starts_with('"')) {
                    i += 1;
                } else {
                    while w.get(i).is_some_and(|c| !c.starts_with('-') && *c != "!") {
                        i += 1;
                    }
                }
            }
            "--match-set" => {
                let name = word(i + 1)?;
                let flags = word(i + 2)?;
                let mut dirs = Vec::new();
                for f in flags.split(',') {
                    dirs.push(match f {
                        "src" => Dir::Src,
                        "dst" => Dir::Dst,
                        _ => return Err(unsupported(rule, format!("--match-set {name} {flags}"))),
                    });
                }
                matches.push(M::Set { negated, name, dirs });
                i += 3;
            }
            "--src-type" | "--dst-type" => {
                let v = word(i + 1)?;
                if v != "LOCAL" {
                    return Err(unsupported(rule, format!("{t} {v}")));
                }
                matches.push(M::AddrType {
                    negated,
                    source: t == "--src-type",
                });
                i += 2;
            }
            "--vaddr" => {
                let (a, pr, pt) = (word(i + 1)?, word(i + 2)?, word(i + 3)?);
                let (b, c) = (word(i + 4)?, word(i + 5)?);
                let bad = || unsupported(rule, format!("--vaddr {a} {pr} {pt} {b} {c}"));
                if pr != "--vproto" || b != "--vport" {
                    return Err(bad());
                }
                matches.push(M::Ipvs {
                    negated,
                    vaddr: parse_net(a).ok_or_else(bad)?,
                    protocol: Protocol::parse(&pt.to_ascii_uppercase()).ok_or_else(bad)?,
                    port: c.parse().map_err(|_| bad())?,
                });
                i += 6;
            }
            "--physdev-is-in" => {
                matches.push(M::PhysdevIsIn { negated });
                i += 1;
            }
            "--mark" => {
                word(i + 1)?;
                matches.push(M::Mark { negated });
                i += 2;
            }
            "--ctstate" => {
                let v = word(i + 1)?;
                matches.push(M::CtState {
                    negated,
                    new: v.split(',').any(|s| s == "NEW"),
                });
                i += 2;
            }
            "-j" => {
                let v = word(i + 1)?;
                let rest = w.get(i + 2..).unwrap_or(&[]);
                target = Some(match (v, rest.first().copied()) {
                    ("ACCEPT", _) => T::Accept,
                    ("DROP", _) => T::Drop,
                    ("REJECT", _) => T::Reject,
                    ("RETURN", _) => T::Return,
                    ("MASQUERADE", _) => T::Masquerade,
                    ("MARK", Some("--or-mark")) => T::OrMark,
                    ("MARK", Some("--xor-mark")) => T::XorMark,
                    (c, None) if c.starts_with("KUBE-") => T::Jump(c),
                    _ => return Err(unsupported(rule, format!("-j {}", w[i + 1..].join(" ")))),
                });
                break;
            }
            other => return Err(unsupported(rule, other)),
        }
        negated = false;
    }
    let target = target.ok_or_else(|| unsupported(rule, "no target"))?;
    Ok(Parsed { matches, target })
}

/// Whether `set` holds the packet's values in the directions `dirs`.
fn set_holds(set: &IpSet, dirs: &[Dir], p: &Packet) -> Option<bool> {
    let ip = |d: Dir| if d == Dir::Src { p.source } else { p.destination };
    // Only destination ports are known (a new connection's source port is arbitrary).
    let port_ok = |d: Dir| (d == Dir::Dst).then_some(());
    Some(match dirs {
        [d] => match set.entries.first()? {
            IpSetEntry::Ip(_) => set.entries.iter().any(|e| *e == IpSetEntry::Ip(ip(*d))),
            // bitmap:port reads TCP and UDP ports only (`ip_set_get_ip_port`).
            IpSetEntry::Port(_) => {
                port_ok(*d)?;
                matches!(p.protocol, Protocol::Tcp | Protocol::Udp)
                    && set.entries.contains(&IpSetEntry::Port(p.port))
            }
            _ => return None,
        },
        [a, b] => {
            port_ok(*b)?;
            let want = IpSetEntry::IpPort {
                ip: ip(*a),
                protocol: p.protocol,
                port: p.port,
            };
            set.entries.iter().all(|e| matches!(e, IpSetEntry::IpPort { .. })) && set.entries.contains(&want)
        }
        [a, b, c] => {
            port_ok(*b)?;
            let (x, z) = (ip(*a), ip(*c));
            set.entries.iter().any(|e| match e {
                IpSetEntry::IpPortIp {
                    ip,
                    protocol,
                    port,
                    ip2,
                } => *ip == x && *protocol == p.protocol && *port == p.port && *ip2 == z,
                IpSetEntry::IpPortNet {
                    ip,
                    protocol,
                    port,
                    net,
                } => *ip == x && *protocol == p.protocol && *port == p.port && net.contains(&z),
                _ => false,
            })
        }
        _ => return None,
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Return,
    Accept,
    Drop,
    Reject,
}

/// The rules of one chain, each with what the tracer read of it.
type ChainRules<'a> = Vec<(&'a Rule, Parsed<'a>)>;

/// IPVS mode's iptables rules read once, by table and chain, for tracing many packets.
pub struct IpvsTracer<'a> {
    rules: &'a IpvsRuleSet,
    chains: Vec<(Table, &'a str, ChainRules<'a>)>,
}

impl<'a> IpvsTracer<'a> {
    /// Reads every rule of `rules` (an error names a rule the tracer does not understand).
    pub fn new(rules: &'a IpvsRuleSet) -> Result<Self, TraceError> {
        let mut chains: Vec<(Table, &'a str, ChainRules<'a>)> = Vec::new();
        let i = &rules.iptables;
        for rule in i.jumps.iter().chain(i.nat.iter()).chain(i.filter.iter()) {
            let parsed = parse(rule)?;
            for m in &parsed.matches {
                if let M::Set { name, .. } = m
                    && !rules.ipsets.iter().any(|s| s.name == *name)
                {
                    return Err(unsupported(rule, format!("no ipset {name}")));
                }
            }
            match chains
                .iter_mut()
                .find(|(t, c, _)| *t == rule.table && *c == rule.chain)
            {
                Some((_, _, v)) => v.push((rule, parsed)),
                None => chains.push((rule.table, rule.chain, vec![(rule, parsed)])),
            }
        }
        Ok(IpvsTracer { rules, chains })
    }

    /// [`trace_rules`] with the rules read already.
    pub fn trace(&self, host: &HostAddresses, packet: &Packet) -> Result<Trace, TraceError> {
        trace_prepared(self, host, packet)
    }
}

struct Walker<'a> {
    tracer: &'a IpvsTracer<'a>,
    rules: &'a IpvsRuleSet,
    table: Table,
    local: &'a dyn Fn(IpAddr) -> bool,
    packet: Packet,
    mark: bool,
    masquerade: bool,
    walk: Vec<Step>,
}

impl Walker<'_> {
    fn matches(&self, rule: &Rule, parsed: &Parsed<'_>) -> Result<bool, TraceError> {
        let p = &self.packet;
        for m in &parsed.matches {
            let ok = match m {
                M::Source { negated, net } => net.contains(&p.source) != *negated,
                M::Protocol(pr) => *pr == p.protocol,
                M::Set { negated, name, dirs } => {
                    let set = self
                        .rules
                        .ipsets
                        .iter()
                        .find(|s| s.name == *name)
                        .ok_or_else(|| unsupported(rule, format!("no ipset {name}")))?;
                    let held = if set.entries.is_empty() {
                        false
                    } else {
                        set_holds(set, dirs, p).ok_or_else(|| {
                            unsupported(
                                rule,
                                format!("--match-set {name} on a {} set", set.kind.set_type()),
                            )
                        })?
                    };
                    held != *negated
                }
                M::AddrType { negated, source } => {
                    (self.local)(if *source { p.source } else { p.destination }) != *negated
                }
                M::PhysdevIsIn { negated } => *negated,
                M::Mark { negated } => self.mark != *negated,
                // A new connection: only a plain test for NEW holds.
                M::CtState { negated, new } => !*negated && *new,
                M::Ipvs {
                    negated,
                    vaddr,
                    protocol,
                    port,
                } => {
                    let handled = vaddr.contains(&p.destination)
                        && *protocol == p.protocol
                        && *port == p.port
                        && self
                            .rules
                            .virtual_server(VirtualServerKey {
                                address: p.destination,
                                port: p.port,
                                protocol: p.protocol,
                            })
                            .is_some();
                    handled != *negated
                }
            };
            if !ok {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn chain(&mut self, chain: &str, depth: usize) -> Result<Flow, TraceError> {
        if depth > MAX_DEPTH {
            return Err(TraceError::TooDeep {
                chain: chain.to_owned(),
                limit: MAX_DEPTH,
            });
        }
        let tracer = self.tracer;
        let table = self.table;
        let Some((_, _, rules)) = tracer.chains.iter().find(|(t, c, _)| *t == table && *c == chain) else {
            return Ok(Flow::Return);
        };
        for (rule, parsed) in rules {
            if !self.matches(rule, parsed)? {
                continue;
            }
            self.walk.push(Step {
                table: self.table.as_str().to_owned(),
                chain: chain.to_owned(),
                rule: rule.line.clone(),
            });
            let flow = match parsed.target {
                T::OrMark => {
                    self.mark = true;
                    continue;
                }
                T::XorMark => {
                    self.mark = false;
                    continue;
                }
                T::Masquerade => {
                    self.masquerade = true;
                    return Ok(Flow::Accept);
                }
                // `KUBE-FORWARD` only accepts marked or established traffic: not walked.
                T::Jump("KUBE-FORWARD") => continue,
                T::Jump(c) => self.chain(c, depth + 1)?,
                T::Accept => Flow::Accept,
                T::Drop => Flow::Drop,
                T::Reject => Flow::Reject,
                T::Return => return Ok(Flow::Return),
            };
            if flow != Flow::Return {
                return Ok(flow);
            }
        }
        Ok(Flow::Return)
    }
}

/// Traces `packet` through everything IPVS mode programs on the node with addresses `host`:
/// the companion iptables rules with their ipsets, then the virtual servers (see the module
/// documentation for the order). An error names a rule the tracer does not understand.
///
/// ```
/// use svcnet_rules::{ProxyConfig, ProxyModel, ipvs};
/// use svcnet_rules::trace::{HostAddresses, Outcome, Packet, ipvs::trace_rules};
/// use svcnet_model::{Service, EndpointSlice};
///
/// let svc: Service = serde_json::from_str(r#"{"metadata":{"namespace":"shop","name":"web"},
///   "spec":{"clusterIP":"10.96.0.10","ports":[{"name":"http","port":80,"protocol":"TCP"}]}}"#).unwrap();
/// let slice: EndpointSlice = serde_json::from_str(r#"{"metadata":{"namespace":"shop","name":"web-1",
///   "labels":{"kubernetes.io/service-name":"web"}},"addressType":"IPv4",
///   "endpoints":[{"addresses":["10.0.0.1"],"nodeName":"node-a"}],
///   "ports":[{"name":"http","port":8080,"protocol":"TCP"}]}"#).unwrap();
/// let mut config = ProxyConfig::new("node-a", "192.168.0.2".parse().unwrap());
/// config.cluster_cidrs = vec!["10.0.0.0/8".parse().unwrap()];
/// let model = ProxyModel::build(&[svc], &[slice], None, &config);
/// let rules = ipvs::build(&model, &config, &ipvs::IpvsOptions::default()).unwrap();
/// let host = HostAddresses::of(&config);
/// // From outside the pod network: DNAT and masquerade.
/// let t = trace_rules(&rules, &host, &Packet::parse("203.0.113.2", "10.96.0.10:80").unwrap()).unwrap();
/// assert_eq!((t.outcome, t.endpoint_strings(), t.masquerade), (Outcome::Dnat, vec!["10.0.0.1:8080".to_owned()], true));
/// // Another port on the ClusterIP: KUBE-IPVS-FILTER rejects it.
/// let t = trace_rules(&rules, &host, &Packet::parse("10.0.0.9", "10.96.0.10:81").unwrap()).unwrap();
/// assert_eq!(t.outcome, Outcome::Reject);
/// ```
pub fn trace_rules(rules: &IpvsRuleSet, host: &HostAddresses, packet: &Packet) -> Result<Trace, TraceError> {
    IpvsTracer::new(rules)?.trace(host, packet)
}

fn trace_prepared(
    tracer: &IpvsTracer<'_>,
    host: &HostAddresses,
    packet: &Packet,
) -> Result<Trace, TraceError> {
    let rules = tracer.rules;
    let local = |ip: IpAddr| host.is_local(ip) || rules.bind_addresses.binary_search(&ip).is_ok();
    let mut w = Walker {
        tracer,
        rules,
        table: Table::Nat,
        local: &local,
        packet: *packet,
        mark: false,
        masquerade: false,
        walk: Vec::new(),
    };
    w.chain("PREROUTING", 0)?;
    let mark = w.mark;
    let mut walk = std::mem::take(&mut w.walk);

    let mut f = Walker {
        tracer,
        rules,
        table: Table::Filter,
        local: &local,
        packet: *packet,
        mark,
        masquerade: false,
        walk: Vec::new(),
    };
    let flow = f.chain(
        if local(packet.destination) {
            "INPUT"
        } else {
            "FORWARD"
        },
        0,
    )?;
    walk.append(&mut f.walk);
    let verdict = |outcome| Trace {
        outcome,
        endpoints: BTreeSet::new(),
        masquerade: false,
        walk: Vec::new(),
        notes: Vec::new(),
    };
    match flow {
        Flow::Drop => {
            return Ok(Trace {
                walk,
                ..verdict(Outcome::Drop)
            });
        }
        Flow::Reject => {
            return Ok(Trace {
                walk,
                ..verdict(Outcome::Reject)
            });
        }
        Flow::Accept | Flow::Return => {}
    }
    let (mut outcome, endpoints) = if local(packet.destination) {
        lookup(rules, packet, &mut walk)
    } else {
        (Outcome::Pass, BTreeSet::new())
    };
    if outcome == Outcome::Pass && flow == Flow::Accept {
        outcome = Outcome::Accept;
    }
    if outcome == Outcome::Reject {
        return Ok(Trace {
            walk,
            ..verdict(Outcome::Reject)
        });
    }

    // nat POSTROUTING, once per destination the packet can leave with.
    let mut masquerade = false;
    let dests: Vec<(IpAddr, u16)> = if endpoints.is_empty() {
        vec![(packet.destination, packet.port)]
    } else {
        endpoints.iter().map(|e| (e.ip(), e.port())).collect()
    };
    for (ip, port) in dests {
        let mut post = Walker {
            tracer,
            rules,
            table: Table::Nat,
            local: &local,
            packet: Packet {
                destination: ip,
                port,
                ..*packet
            },
            mark,
            masquerade: false,
            walk: Vec::new(),
        };
        post.chain("POSTROUTING", 0)?;
        masquerade |= post.masquerade;
        walk.append(&mut post.walk);
    }
    Ok(Trace {
        outcome,
        endpoints,
        masquerade,
        walk,
        notes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::{ProxyConfig, ProxyModel};

    fn lb_rules() -> (IpvsRuleSet, HostAddresses) {
        let svc: svcnet_model::Service = serde_json::from_str(
            r#"{"metadata":{"namespace":"ns","name":"lb"},"spec":{"type":"LoadBalancer",
            "clusterIP":"172.30.0.1","externalTrafficPolicy":"Local","healthCheckNodePort":30000,
            "loadBalancerSourceRanges":["203.0.113.0/25"],
            "ports":[{"name":"p","port":80,"protocol":"TCP","nodePort":3001}]},
            "status":{"loadBalancer":{"ingress":[{"ip":"1.1.1.1"}]}}}"#,
        )
        .unwrap();
        let slice: svcnet_model::EndpointSlice = serde_json::from_str(
            r#"{"metadata":{"namespace":"ns","name":"lb-1","labels":{"kubernetes.io/service-name":"lb"}},
            "addressType":"IPv4","ports":[{"name":"p","port":8080,"protocol":"TCP"}],
            "endpoints":[{"addresses":["10.180.0.1"],"nodeName":"node-a"},{"addresses":["10.180.1.1"],"nodeName":"node-b"}]}"#,
        )
        .unwrap();
        let mut config = ProxyConfig::new("node-a", "192.168.0.2".parse().unwrap());
        config.cluster_cidrs = vec!["10.0.0.0/8".parse().unwrap()];
        let model = ProxyModel::build(&[svc], &[slice], None, &config);
        let rules = crate::ipvs::build(&model, &config, &crate::ipvs::IpvsOptions::default()).unwrap();
        (rules, HostAddresses::of(&config))
    }

    fn run(src: &str, to: &str) -> (Outcome, Vec<String>, bool) {
        let (rules, host) = lb_rules();
        let t = trace_rules(&rules, &host, &Packet::parse(src, to).unwrap()).unwrap();
        (t.outcome, t.endpoint_strings(), t.masquerade)
    }

    #[test]
    fn load_balancer_source_ranges_drop_in_the_firewall_chain() {
        assert_eq!(run("203.0.113.130", "1.1.1.1:80").0, Outcome::Drop);
        let ok = run("203.0.113.2", "1.1.1.1:80");
        assert_eq!(ok, (Outcome::Dnat, vec!["10.180.0.1:8080".to_owned()], false));
    }

    #[test]
    fn local_policy_node_ports_are_not_masqueraded_and_health_checks_accepted() {
        // eTP Local: local endpoints for every source, no mark (KUBE-NODE-PORT-LOCAL-TCP).
        assert_eq!(
            run("192.168.0.2", "192.168.0.2:3001"),
            (Outcome::Dnat, vec!["10.180.0.1:8080".to_owned()], false)
        );
        assert_eq!(run("203.0.113.2", "192.168.0.2:30000").0, Outcome::Accept);
        assert_eq!(run("203.0.113.2", "192.168.0.2:30000/udp").0, Outcome::Accept);
        assert_eq!(run("203.0.113.2", "192.168.0.2:30000/sctp").0, Outcome::Pass);
    }

    #[test]
    fn hairpin_to_a_local_endpoint_masquerades() {
        assert_eq!(
            run("10.180.0.1", "172.30.0.1:80"),
            (
                Outcome::Dnat,
                vec!["10.180.0.1:8080".to_owned(), "10.180.1.1:8080".to_owned()],
                true
            )
        );
        assert!(!run("10.180.1.1", "172.30.0.1:80").2);
    }

    #[test]
    fn words_keep_quoted_comments_whole() {
        assert_eq!(
            words(r#"-A X -m comment --comment "a b" -j Y"#),
            ["-A", "X", "-m", "comment", "--comment", "\"a b\"", "-j", "Y"]
        );
    }

    #[test]
    fn unknown_options_are_unsupported() {
        let rule = Rule {
            table: Table::Nat,
            chain: "KUBE-SERVICES",
            line: "-A KUBE-SERVICES -m statistic --probability 0.5 -j RETURN".to_owned(),
            jump: "RETURN",
            match_set: "",
            source_address: String::new(),
        };
        assert!(matches!(parse(&rule), Err(TraceError::Unsupported { .. })));
    }
}
