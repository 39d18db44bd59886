//! The nftables tracer: the filter prerouting hook before DNAT, nat prerouting, filter forward
//! and input (with the destination rewritten to the first DNAT target), then nat postrouting
//! once per DNAT target for the masquerade decision. Rules are read from their text as
//! kube-proxy v1.37.2 writes them; anything else is [`TraceError::Unsupported`].
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2), over the rule set
//! `pkg/proxy/nftables/proxier.go` writes.

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};

use super::{HostAddresses, MAX_DEPTH, Outcome, Packet, Step, Trace, TraceError};
use crate::nftables::{ChainType, Hook, SetState, TableState};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Verdict {
    Accept,
    Drop,
    Reject,
    Return,
    Jump(String),
    Goto(String),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Terminal {
    Accept,
    Drop,
    Reject,
    Dnat,
    Masquerade,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    /// The chain ran out of rules: the caller goes on.
    Return,
    /// The current chain stops (`return`, or after a `goto`): its caller goes on.
    Stop,
    /// A terminal action.
    Terminal(Terminal),
}

/// What a matched rule does, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Action {
    MarkOr,
    MarkXor,
    Verdict(Verdict),
    Fork(Vec<Verdict>),
    Dnat(Vec<SocketAddr>),
    Masquerade,
}

#[derive(Debug, Clone, Copy)]
struct Ctx {
    source: IpAddr,
    destination: IpAddr,
    port: u16,
    proto: &'static str,
    dnat_done: bool,
    mark: bool,
}

struct Walker<'a> {
    table: &'a TableState,
    host: &'a HostAddresses,
    ctx: Ctx,
    masquerade: bool,
    dnats: Vec<SocketAddr>,
    walk: Vec<Step>,
}

fn verdict(text: &str) -> Option<Verdict> {
    let mut w = text.split_whitespace();
    let v = match (w.next()?, w.next()) {
        ("accept", None) => Verdict::Accept,
        ("drop", None) => Verdict::Drop,
        ("reject", None) => Verdict::Reject,
        ("return", None) => Verdict::Return,
        ("jump", Some(c)) => Verdict::Jump(c.to_owned()),
        ("goto", Some(c)) => Verdict::Goto(c.to_owned()),
        _ => return None,
    };
    w.next().is_none().then_some(v)
}

/// One part of a key or element: an address, CIDR, protocol or port, compared as values.
fn part_matches(element: &str, value: &str) -> bool {
    let element = element.trim();
    if element == value {
        return true;
    }
    if let Ok(ip) = value.parse::<IpAddr>() {
        if let Ok(e) = element.parse::<IpAddr>() {
            return e == ip;
        }
        if let Ok(n) = element.parse::<ipnet::IpNet>() {
            return n.contains(&ip);
        }
    }
    false
}

fn key_matches(element: &str, key: &[String]) -> bool {
    let parts: Vec<&str> = element.split(" . ").collect();
    parts.len() == key.len() && parts.iter().zip(key).all(|(e, k)| part_matches(e, k))
}

/// The elements of an anonymous set or map starting at `toks[i] == "{"`; returns them and the
/// index after the closing brace.
fn anonymous(toks: &[&str], i: usize) -> Option<(Vec<String>, usize)> {
    let end = toks[i..].iter().position(|t| *t == "}")? + i;
    let body = toks[i + 1..end].join(" ");
    let elems = body
        .split(',')
        .map(|e| e.trim().to_owned())
        .filter(|e| !e.is_empty())
        .collect();
    Some((elems, end + 1))
}

impl Walker<'_> {
    fn unsupported(&self, chain: &str, rule: &str, what: &str) -> TraceError {
        TraceError::Unsupported {
            table: crate::nftables::TABLE.to_owned(),
            chain: chain.to_owned(),
            rule: rule.to_owned(),
            what: what.to_owned(),
        }
    }

    fn set(&self, name: &str) -> Option<&SetState> {
        self.table.sets.get(name).or_else(|| self.table.maps.get(name))
    }

    /// The value of one selector at `toks[i..]` and how many tokens it takes.
    fn selector(&self, toks: &[&str], i: usize) -> Option<(String, usize)> {
        let c = &self.ctx;
        let a = *toks.get(i)?;
        let b = toks.get(i + 1).copied().unwrap_or("");
        Some(match (a, b) {
            ("ip" | "ip6", "saddr") => (c.source.to_string(), 2),
            ("ip" | "ip6", "daddr") => (c.destination.to_string(), 2),
            ("meta", "l4proto") => (c.proto.to_owned(), 2),
            ("th" | "tcp" | "udp" | "sctp", "dport") => (c.port.to_string(), 2),
            ("fib", "saddr" | "daddr") if toks.get(i + 2) == Some(&"type") => {
                let ip = if b == "saddr" { c.source } else { c.destination };
                let t = if self.host.is_local(ip) {
                    "local"
                } else {
                    "unicast"
                };
                (t.to_owned(), 3)
            }
            _ => return None,
        })
    }

    /// Evaluates one rule: `None` when it does not match, else its actions.
    fn rule(&self, chain: &str, text: &str) -> Result<Option<Vec<Action>>, TraceError> {
        let toks: Vec<&str> = text.split_whitespace().collect();
        let bad = |what: &str| self.unsupported(chain, text, what);
        let mut actions = Vec::new();
        let mut i = 0;
        while i < toks.len() {
            let t = toks[i];
            match t {
                "ct" => {
                    let holds = match (toks.get(i + 1).copied(), toks.get(i + 2).copied()) {
                        (Some("state"), Some(s)) => s.split(',').any(|s| s == "new"),
                        (Some("status"), Some("dnat")) => self.ctx.dnat_done,
                        _ => return Err(bad(t)),
                    };
                    if !holds {
                        return Ok(None);
                    }
                    i += 3;
                }
                "counter" => {
                    i += if toks.get(i + 1) == Some(&"name") { 3 } else { 1 };
                }
                "mark" => match toks.get(i + 1..i + 5) {
                    Some(["set", "mark", "or", _]) => {
                        actions.push(Action::MarkOr);
                        i += 5;
                    }
                    Some(["set", "mark", "xor", _]) => {
                        actions.push(Action::MarkXor);
                        i += 5;
                    }
                    Some(["and", _, "!=", "0"]) => {
                        if !self.ctx.mark {
                            return Ok(None);
                        }
                        i += 5;
                    }
                    _ => return Err(bad("mark")),
                },
                "accept" | "drop" | "reject" | "return" => {
                    actions.push(Action::Verdict(verdict(t).ok_or_else(|| bad(t))?));
                    i += 1;
                }
                "jump" | "goto" => {
                    let c = toks.get(i + 1).ok_or_else(|| bad(t))?;
                    actions.push(Action::Verdict(
                        verdict(&format!("{t} {c}")).ok_or_else(|| bad(t))?,
                    ));
                    i += 2;
                }
                "masquerade" => {
                    actions.push(Action::Masquerade);
                    i += 1;
                    while matches!(toks.get(i), Some(&("fully-random" | "random" | "persistent"))) {
                        i += 1;
                    }
                }
                "update" => {
                    // `update @affinity-X { ip saddr }`: records history, matches always.
                    if !toks.get(i + 1).is_some_and(|s| s.starts_with('@')) || toks.get(i + 2) != Some(&"{") {
                        return Err(bad(t));
                    }
                    let (_, next) = anonymous(&toks, i + 2).ok_or_else(|| bad(t))?;
                    i = next;
                }
                "dnat" => {
                    if toks.get(i + 1) == Some(&"to") {
                        let to: SocketAddr = toks
                            .get(i + 2)
                            .and_then(|s| s.parse().ok())
                            .ok_or_else(|| bad("dnat to"))?;
                        actions.push(Action::Dnat(vec![to]));
                        i += 3;
                    } else {
                        // dnat ip addr . port to numgen random mod N map { k : ip . port , ... }
                        match toks.get(i + 1..i + 10) {
                            Some([_, "addr", ".", "port", "to", "numgen", "random", "mod", _]) => {}
                            _ => return Err(bad("dnat")),
                        }
                        if toks.get(i + 10..i + 12) != Some(&["map", "{"]) {
                            return Err(bad("dnat map"));
                        }
                        let (elems, next) = anonymous(&toks, i + 11).ok_or_else(|| bad("dnat map"))?;
                        let mut tos = Vec::new();
                        for e in elems {
                            let (_, v) = e.split_once(" : ").ok_or_else(|| bad("dnat map element"))?;
                            let (ip, port) = v.split_once(" . ").ok_or_else(|| bad("dnat map element"))?;
                            let ip: IpAddr = ip.trim().parse().map_err(|_| bad("dnat map address"))?;
                            let port: u16 = port.trim().parse().map_err(|_| bad("dnat map port"))?;
                            tos.push(SocketAddr::new(ip, port));
                        }
                        actions.push(Action::Dnat(tos));
                        i = next;
                    }
                }
                "numgen" => {
                    // numgen random mod N vmap { k : verdict , ... }: every element is visited.
                    if toks
                        .get(i + 1..i + 6)
                        .is_none_or(|w| w[0] != "random" || w[1] != "mod" || w[3] != "vmap" || w[4] != "{")
                    {
                        return Err(bad("numgen"));
                    }
                    let (elems, next) = anonymous(&toks, i + 5).ok_or_else(|| bad("numgen"))?;
                    let mut vs = Vec::new();
                    for e in elems {
                        let (_, v) = e.split_once(" : ").ok_or_else(|| bad("numgen element"))?;
                        vs.push(verdict(v).ok_or_else(|| bad(v))?);
                    }
                    actions.push(Action::Fork(vs));
                    i = next;
                }
                _ => {
                    // A key (selectors joined by `.`), then `vmap`, a set, or a value.
                    let mut key = Vec::new();
                    loop {
                        let (v, n) = self.selector(&toks, i).ok_or_else(|| bad(toks[i]))?;
                        key.push(v);
                        i += n;
                        if toks.get(i) == Some(&".") {
                            i += 1;
                        } else {
                            break;
                        }
                    }
                    let mut negated = false;
                    match toks.get(i) {
                        Some(&"!=") => {
                            negated = true;
                            i += 1;
                        }
                        Some(&"==") => i += 1,
                        _ => {}
                    }
                    let rhs = *toks.get(i).ok_or_else(|| bad("a test without a value"))?;
                    if rhs == "vmap" {
                        let m = toks.get(i + 1).ok_or_else(|| bad("vmap"))?;
                        let found = if let Some(name) = m.strip_prefix('@') {
                            i += 2;
                            let map = self.set(name).ok_or_else(|| bad(m))?;
                            map.elements
                                .iter()
                                .find(|(k, _)| key_matches(k, &key))
                                .and_then(|(_, e)| e.value.as_deref().map(str::to_owned))
                        } else if *m == "{" {
                            let (elems, next) = anonymous(&toks, i + 1).ok_or_else(|| bad("vmap"))?;
                            i = next;
                            elems.into_iter().find_map(|e| {
                                let (k, v) = e.split_once(" : ")?;
                                key_matches(k, &key).then(|| v.to_owned())
                            })
                        } else {
                            return Err(bad(m));
                        };
                        match found {
                            Some(v) => actions.push(Action::Verdict(verdict(&v).ok_or_else(|| bad(&v))?)),
                            None => return Ok(None),
                        }
                        continue;
                    }
                    let hit = if let Some(name) = rhs.strip_prefix('@') {
                        i += 1;
                        // A set that is not there (a dynamic affinity set) holds nothing.
                        self.set(name)
                            .is_some_and(|s| s.elements.keys().any(|k| key_matches(k, &key)))
                    } else if rhs == "{" {
                        let (elems, next) = anonymous(&toks, i).ok_or_else(|| bad("{"))?;
                        i = next;
                        elems.iter().any(|e| key_matches(e, &key))
                    } else {
                        i += 1;
                        key.len() == 1 && part_matches(rhs, &key[0])
                    };
                    if hit == negated {
                        return Ok(None);
                    }
                }
            }
        }
        Ok(Some(actions))
    }

    fn chain(&mut self, name: &str, depth: usize) -> Result<Flow, TraceError> {
        if depth > MAX_DEPTH {
            return Err(TraceError::TooDeep {
                chain: name.to_owned(),
                limit: MAX_DEPTH,
            });
        }
        let Some(chain) = self.table.chains.get(name) else {
            return Err(self.unsupported(name, "", "a jump to a chain that does not exist"));
        };
        for rule in &chain.rules {
            let Some(actions) = self.rule(name, &rule.rule)? else {
                continue;
            };
            self.walk.push(Step {
                table: crate::nftables::TABLE.to_owned(),
                chain: name.to_owned(),
                rule: rule.rule.to_string(),
            });
            for a in actions {
                let flow = match a {
                    Action::MarkOr => {
                        self.ctx.mark = true;
                        self.masquerade = true;
                        continue;
                    }
                    Action::MarkXor => {
                        self.ctx.mark = false;
                        continue;
                    }
                    Action::Dnat(to) => {
                        self.dnats.extend(to);
                        return Ok(Flow::Terminal(Terminal::Dnat));
                    }
                    Action::Masquerade => {
                        self.masquerade = true;
                        return Ok(Flow::Terminal(Terminal::Masquerade));
                    }
                    Action::Verdict(v) => self.verdict(&v, depth)?,
                    Action::Fork(vs) => {
                        // Every element is visited; the last one's flow continues the walk.
                        let mut last = Flow::Return;
                        for v in &vs {
                            last = self.verdict(v, depth)?;
                        }
                        last
                    }
                };
                match flow {
                    Flow::Terminal(t) => return Ok(Flow::Terminal(t)),
                    Flow::Stop => return Ok(Flow::Return),
                    Flow::Return => {}
                }
            }
        }
        Ok(Flow::Return)
    }

    /// Applies a verdict; `Flow::Return` means the calling chain goes on.
    fn verdict(&mut self, v: &Verdict, depth: usize) -> Result<Flow, TraceError> {
        Ok(match v {
            Verdict::Accept => Flow::Terminal(Terminal::Accept),
            Verdict::Drop => Flow::Terminal(Terminal::Drop),
            Verdict::Reject => Flow::Terminal(Terminal::Reject),
            Verdict::Return => Flow::Stop,
            Verdict::Jump(c) => self.chain(c, depth + 1)?,
            // A goto returns to the caller's caller: this chain stops here.
            Verdict::Goto(c) => match self.chain(c, depth + 1)? {
                Flow::Terminal(t) => Flow::Terminal(t),
                Flow::Return | Flow::Stop => Flow::Stop,
            },
        })
    }
}

/// The base chains of `table` with this type and hook, by priority.
fn base_chains(table: &TableState, ty: ChainType, hook: Hook) -> Vec<&str> {
    let mut v: Vec<(i32, &str)> = table
        .chains
        .values()
        .filter_map(|c| {
            let b = c.chain.base.as_ref()?;
            (b.chain_type == ty && b.hook == hook).then_some((b.priority, c.chain.name.as_str()))
        })
        .collect();
    v.sort();
    v.into_iter().map(|(_, n)| n).collect()
}

/// Traces `packet` through `table` (kube-proxy's `kube-proxy` table of the packet's family),
/// as seen by a node with addresses `host`.
pub fn trace(table: &TableState, host: &HostAddresses, packet: &Packet) -> Result<Trace, TraceError> {
    let mut w = Walker {
        table,
        host,
        ctx: Ctx {
            source: packet.source,
            destination: packet.destination,
            port: packet.port,
            proto: packet.protocol.lower(),
            dnat_done: false,
            mark: false,
        },
        masquerade: false,
        dnats: Vec::new(),
        walk: Vec::new(),
    };
    let finish = |w: Walker<'_>, outcome: Outcome| Trace {
        outcome,
        endpoints: BTreeSet::new(),
        masquerade: w.masquerade,
        walk: w.walk,

        notes: Vec::new(),
    };
    // 1. filter prerouting before DNAT (LoadBalancer source ranges).
    for c in base_chains(table, ChainType::Filter, Hook::Prerouting) {
        match w.chain(c, 0)? {
            Flow::Terminal(Terminal::Drop) => return Ok(finish(w, Outcome::Drop)),
            Flow::Terminal(Terminal::Reject) => return Ok(finish(w, Outcome::Reject)),
            _ => {}
        }
    }
    // 2. nat prerouting.
    for c in base_chains(table, ChainType::Nat, Hook::Prerouting) {
        if let Flow::Terminal(_) = w.chain(c, 0)? {
            break;
        }
    }
    let dnats = std::mem::take(&mut w.dnats);
    if let Some(first) = dnats.first() {
        w.ctx.destination = first.ip();
        w.ctx.dnat_done = true;
    }
    // 3. filter forward, then input.
    for hook in [Hook::Forward, Hook::Input] {
        for c in base_chains(table, ChainType::Filter, hook) {
            match w.chain(c, 0)? {
                Flow::Terminal(Terminal::Drop) => return Ok(finish(w, Outcome::Drop)),
                Flow::Terminal(Terminal::Reject) => return Ok(finish(w, Outcome::Reject)),
                _ => {}
            }
        }
    }
    // 4. nat postrouting, once per DNAT target (hairpin is per endpoint).
    let targets: Vec<Option<SocketAddr>> = if dnats.is_empty() {
        vec![None]
    } else {
        dnats.iter().copied().map(Some).collect()
    };
    let base = w.ctx;
    for t in targets {
        w.ctx = base;
        if let Some(t) = t {
            w.ctx.destination = t.ip();
            w.ctx.port = t.port();
        }
        for c in base_chains(table, ChainType::Nat, Hook::Postrouting) {
            if let Flow::Terminal(_) = w.chain(c, 0)? {
                break;
            }
        }
    }
    let endpoints: BTreeSet<SocketAddr> = dnats.into_iter().collect();
    let outcome = if endpoints.is_empty() {
        Outcome::Pass
    } else {
        Outcome::Dnat
    };
    Ok(Trace {
        outcome,
        endpoints,
        masquerade: w.masquerade,
        walk: w.walk,

        notes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::nftables::{BaseChain, Chain, Object, State, Transaction};

    fn table(rules: &[(&str, &str)]) -> State {
        let mut t = Transaction::new(crate::nftables::Family::Ip, TABLE_NAME);
        t.add_table(None);
        t.add(Object::Chain(Chain {
            name: "nat-prerouting".into(),
            base: Some(BaseChain {
                chain_type: ChainType::Nat,
                hook: Hook::Prerouting,
                priority: -100,
            }),
            comment: None,
        }));
        for c in ["a", "b", "c"] {
            t.add_chain(c);
        }
        for (c, r) in rules {
            t.add_rule(*c, *r, None);
        }
        let mut st = State::new();
        st.apply(&t).unwrap();
        st
    }

    const TABLE_NAME: &str = crate::nftables::TABLE;

    fn run(rules: &[(&str, &str)]) -> Result<Trace, TraceError> {
        let st = table(rules);
        let t = st.table(crate::nftables::Family::Ip, TABLE_NAME).unwrap();
        let host = HostAddresses::default();
        let p = Packet::parse("10.0.0.2", "172.30.0.1:80/tcp").unwrap();
        trace(t, &host, &p)
    }

    #[test]
    fn goto_returns_to_the_callers_caller() {
        let t = run(&[
            ("nat-prerouting", "jump a"),
            ("nat-prerouting", "meta l4proto tcp dnat to 10.1.0.1:80"),
            ("a", "goto b"),
            ("a", "meta l4proto tcp dnat to 10.1.0.9:80"),
            ("b", "ip daddr 172.30.0.1 mark set mark or 0x4000"),
        ])
        .unwrap();
        assert_eq!(t.outcome, Outcome::Dnat);
        assert_eq!(t.endpoint_strings(), ["10.1.0.1:80"]);
        assert!(t.masquerade);
    }

    #[test]
    fn numgen_visits_every_element() {
        let t = run(&[
            ("nat-prerouting", "numgen random mod 2 vmap { 0 : goto a , 1 : goto b }"),
            ("a", "meta l4proto tcp dnat to 10.1.0.1:80"),
            ("b", "meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.1.0.2 . 80 , 1 : 10.1.0.3 . 80 }"),
        ])
        .unwrap();
        assert_eq!(
            t.endpoint_strings(),
            ["10.1.0.1:80", "10.1.0.2:80", "10.1.0.3:80"]
        );
    }

    #[test]
    fn unknown_syntax_is_reported_not_guessed() {
        let e = run(&[("nat-prerouting", "meta skuid 0 drop")]).unwrap_err();
        assert!(
            matches!(e, TraceError::Unsupported { ref what, .. } if what == "meta"),
            "{e}"
        );
        let e = run(&[("nat-prerouting", "limit rate 1/second accept")]).unwrap_err();
        assert!(matches!(e, TraceError::Unsupported { .. }), "{e}");
    }

    #[test]
    fn negated_sets_and_protocols() {
        let t = run(&[
            ("nat-prerouting", "ip saddr != { 10.0.0.0/8 } drop"),
            ("nat-prerouting", "meta l4proto udp dnat to 10.1.0.9:80"),
            (
                "nat-prerouting",
                "ip saddr 10.0.0.0/8 meta l4proto tcp dnat to 10.1.0.1:80",
            ),
        ])
        .unwrap();
        assert_eq!(t.endpoint_strings(), ["10.1.0.1:80"]);
    }
}
