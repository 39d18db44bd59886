//! Reading `iptables-restore` input and `iptables-save` output back into the typed rule set,
//! so that rule sets written elsewhere (kube-proxy itself, kube-oracle, a node) can be traced.
//!
//! Follows Kubernetes v1.37.2: `pkg/util/iptables/testing/parse.go` (the restore grammar kube-proxy
//! writes).
//!
//! kube-proxy's layout (`-m tcp -p tcp`, `--or-mark`, `%0.10f` probabilities) reads back to
//! the same text. A kernel's `iptables-save [-c]` layout (counters, `-p tcp ... -m tcp`,
//! `--set-xmark M/M` and `M/0x0`, 11-decimal probabilities) is read too, into the same
//! meaning (written back in kube-proxy's layout).
//!
//! Every rule is kept. Options kube-proxy does not write become [`Match::Unsupported`] /
//! [`Target::Unsupported`] holding their text, so that the tracer reports them instead of
//! guessing, and writing the rule again gives the text it was read from. What cannot be held
//! is listed in [`Parsed::skipped`] with its line: tables other than `filter` and `nat`
//! (no tracer walks them), and the lines of chains whose name is none of kube-proxy's or
//! kubelet's (a jump to such a chain is kept as [`Target::Unsupported`], so the tracer still
//! stops there).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use indexmap::IndexMap;
use ipnet::IpNet;
use thiserror::Error;

use super::build::{Line, Table, Transaction};
use super::sync::{IptablesState, KernelTable};
use super::types::{Addr, Chain, Comment, Match, Rule, Target, write_probability};
use crate::proxy::Protocol;

/// Chain names kube-proxy (all modes) or kubelet write besides those of [`Chain::parse`].
const MORE_CHAINS: &[&str] = &[
    "KUBE-MARK-DROP",
    "KUBE-KUBELET-CANARY",
    "KUBE-PROXY-CANARY",
    "KUBE-IPVS-FILTER",
    "KUBE-IPVS-OUT-FILTER",
    "KUBE-LOAD-BALANCER",
    "KUBE-NODE-PORT",
    "KUBE-SOURCE-RANGES-FIREWALL",
];

/// The conntrack state lists held as [`Match::Conntrack`].
const CT_STATES: &[&str] = &[
    "NEW",
    "INVALID",
    "ESTABLISHED",
    "RELATED",
    "DNAT",
    "RELATED,ESTABLISHED",
    "RELATED,ESTABLISHED,DNAT",
];

/// The nfacct counters held as [`Match::Nfacct`].
const NFACCT: &[&str] = &[
    super::build::LOCALHOST_NODEPORTS_COUNTER,
    super::build::CT_STATE_INVALID_COUNTER,
];

/// Why rule text could not be read. Every variant names the line (1-based) and its text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ParseError {
    /// A line that is none of `*table`, `:CHAIN ...`, `-A`, `-X`, `-F`, `-N`, `COMMIT`, a
    /// comment or blank, or that comes outside a table.
    #[error("line {line}: {why}: {text:?}")]
    Line {
        /// The line number.
        line: usize,
        /// The line.
        text: String,
        /// What is wrong.
        why: &'static str,
    },
    /// A quoted argument is not closed.
    #[error("line {line}: unterminated quote: {text:?}")]
    Quote {
        /// The line number.
        line: usize,
        /// The line.
        text: String,
    },
    /// The text ends inside a table (no `COMMIT`).
    #[error("line {line}: table {table} has no COMMIT")]
    NoCommit {
        /// The line of `*table`.
        line: usize,
        /// The table.
        table: String,
    },
}

/// A line read but not held by the typed rule set, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The line number (1-based).
    pub line: usize,
    /// The line.
    pub text: String,
    /// Why it is not held.
    pub why: &'static str,
}

/// A parse result and the lines it does not hold.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Parsed<T> {
    /// What was read.
    pub value: T,
    /// Lines read but not held (see the module documentation).
    pub skipped: Vec<Skipped>,
}

/// One token of a rule line: its text as written, and its value (quotes removed).
#[derive(Debug, Clone)]
struct Token<'a> {
    raw: &'a str,
    value: String,
    quoted: bool,
}

/// Splits a line at spaces; `"..."` (with `\"` and `\\` escapes) is one token.
fn tokens(line: &str) -> Option<Vec<Token<'_>>> {
    let mut out = Vec::new();
    let bytes = line.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        if bytes.get(i).is_some_and(u8::is_ascii_whitespace) {
            i += 1;
            continue;
        }
        let start = i;
        let mut value = String::new();
        let mut quoted = false;
        while let Some(&b) = bytes.get(i) {
            if b.is_ascii_whitespace() {
                break;
            }
            if b == b'"' {
                quoted = true;
                i += 1;
                let mut closed = false;
                while let Some(&c) = bytes.get(i) {
                    if c == b'\\' && matches!(bytes.get(i + 1), Some(b'"' | b'\\')) {
                        value.push(char::from(*bytes.get(i + 1)?));
                        i += 2;
                    } else if c == b'"' {
                        i += 1;
                        closed = true;
                        break;
                    } else {
                        let ch = line.get(i..)?.chars().next()?;
                        value.push(ch);
                        i += ch.len_utf8();
                    }
                }
                if !closed {
                    return None;
                }
            } else {
                let ch = line.get(i..)?.chars().next()?;
                value.push(ch);
                i += ch.len_utf8();
            }
        }
        out.push(Token {
            raw: line.get(start..i)?,
            value,
            quoted,
        });
    }
    Some(out)
}

/// A chain name as held: kube-proxy's and kubelet's names, `None` for any other.
fn chain_name(name: &str) -> Option<Chain> {
    Chain::parse(name).or_else(|| MORE_CHAINS.iter().find(|n| **n == name).map(|n| Chain::Fixed(n)))
}

fn addr(s: &str) -> Option<Addr> {
    if s.contains('/') {
        s.parse::<IpNet>().ok().map(Addr::Net)
    } else {
        s.parse::<IpAddr>().ok().map(Addr::Ip)
    }
}

fn protocol(s: &str) -> Option<Protocol> {
    Protocol::parse(&s.to_ascii_uppercase()).filter(|p| p.lower() == s)
}

/// `n` when `text` is 1/n as kube-proxy prints it (`%0.10f`), or as `iptables-save` prints the
/// kernel's 31-bit fixed-point value of it (11 decimals, within 1e-9); else `None`.
fn probability(text: &str) -> Option<u32> {
    let p: f64 = text.parse().ok()?;
    if !(p > 0.0 && p <= 1.0) {
        return None;
    }
    let n = (1.0 / p).round();
    if !(1.0..=f64::from(u32::MAX)).contains(&n) {
        return None;
    }
    let n = n as u32;
    let mut again = String::new();
    write_probability(&mut again, n);
    (again == text || (text.len() == 13 && (p - 1.0 / f64::from(n)).abs() < 1e-9)).then_some(n)
}

/// The mark of `M/M`.
fn mark(text: &str) -> Option<Arc<str>> {
    let (a, b) = text.split_once('/')?;
    (a == b && !a.is_empty()).then(|| Arc::from(a))
}

/// The raw text of `toks` joined as written.
fn join(toks: &[Token<'_>]) -> String {
    toks.iter().map(|t| t.raw).collect::<Vec<_>>().join(" ")
}

/// Reads one match at `toks[i..]` (a `!` before it already taken as `negated`); returns it
/// and how many tokens it took, or `None` when it is not one kube-proxy writes.
fn one_match(toks: &[Token<'_>], i: usize, negated: bool) -> Option<(Match, usize)> {
    let v = |k: usize| toks.get(i + k).map(|t| t.value.as_str());
    let raw_quoted = |k: usize| toks.get(i + k).is_some_and(|t| t.quoted);
    match v(0)? {
        "-s" | "--source" => {
            let a = addr(v(1)?)?;
            Some((Match::Source { negated, addr: a }, 2))
        }
        "-d" | "--destination" => {
            let a = addr(v(1)?)?;
            Some((Match::Destination { negated, addr: a }, 2))
        }
        "-p" | "--protocol" if !negated => Some((Match::ProtocolOnly(protocol(v(1)?)?), 2)),
        "--dport" | "--destination-port" if !negated => {
            Some((Match::DestinationPort(v(1)?.parse().ok()?), 2))
        }
        "-m" | "--match" if !negated => match v(1)? {
            "comment" if v(2)? == "--comment" => {
                let text = v(3)?;
                let c = if raw_quoted(3) {
                    Comment::Around("", Arc::from(text), "")
                } else {
                    Comment::Service(Arc::from(text))
                };
                Some((Match::Comment(c), 4))
            }
            p @ ("tcp" | "udp" | "sctp") if v(2) == Some("-p") && v(3) == Some(p) => {
                Some((Match::Protocol(protocol(p)?), 4))
            }
            // iptables-save of a kernel: `-p tcp ... -m tcp [--dport N]` (the module needs the
            // protocol, so as a match it tests the protocol again).
            p @ ("tcp" | "udp" | "sctp") => Some((Match::ProtocolOnly(protocol(p)?), 2)),
            "addrtype" => match (v(2)?, v(3)?) {
                ("--dst-type", "LOCAL") => Some((Match::DestinationLocal, 4)),
                ("--src-type", "LOCAL") => Some((Match::SourceLocal, 4)),
                _ => None,
            },
            "mark" => {
                let (neg, k) = if v(2)? == "!" { (true, 3) } else { (false, 2) };
                if v(k)? != "--mark" {
                    return None;
                }
                Some((
                    Match::Mark {
                        negated: neg,
                        mark: mark(v(k + 1)?)?,
                    },
                    k + 2,
                ))
            }
            "conntrack" => {
                let (neg, k) = if v(2)? == "!" { (true, 3) } else { (false, 2) };
                if v(k)? != "--ctstate" {
                    return None;
                }
                let s = v(k + 1)?;
                let states = CT_STATES.iter().find(|c| **c == s)?;
                Some((Match::Conntrack { negated: neg, states }, k + 2))
            }
            "nfacct" if v(2)? == "--nfacct-name" => {
                let s = v(3)?;
                Some((Match::Nfacct(NFACCT.iter().find(|c| **c == s)?), 4))
            }
            "statistic" if v(2)? == "--mode" && v(3)? == "random" && v(4)? == "--probability" => {
                Some((Match::Probability(probability(v(5)?)?), 6))
            }
            "recent" if v(2)? == "--name" => {
                let name = chain_name(v(3)?)?;
                match v(4)? {
                    "--set" => Some((Match::RecentSet(name), 5)),
                    "--rcheck" if v(5)? == "--seconds" && v(7) == Some("--reap") => {
                        let seconds = v(6)?.parse().ok()?;
                        Some((Match::RecentCheck { name, seconds }, 8))
                    }
                    _ => None,
                }
            }
            _ => None,
        },
        _ => None,
    }
}

/// Reads the target tokens (from `-j` on).
fn target(toks: &[Token<'_>]) -> Target {
    let v = |k: usize| toks.get(k).map(|t| t.value.as_str());
    let unsupported = || Target::Unsupported(Arc::from(join(toks)));
    if !matches!(v(0), Some("-j" | "--jump")) {
        return unsupported();
    }
    let t = match (v(1), v(2), v(3), toks.len()) {
        (Some("ACCEPT"), _, _, 2) => Some(Target::Accept),
        (Some("DROP"), _, _, 2) => Some(Target::Drop),
        (Some("REJECT"), _, _, 2) => Some(Target::Reject),
        (Some("RETURN"), _, _, 2) => Some(Target::Return),
        (Some("DNAT"), Some("--to-destination"), Some(to), 4) => {
            to.parse::<SocketAddr>().ok().map(Target::Dnat)
        }
        (Some("MARK"), Some("--xor-mark"), Some(m), 4) => Some(Target::XorMark(Arc::from(m))),
        (Some("MARK"), Some("--or-mark"), Some(m), 4) => Some(Target::OrMark(Arc::from(m))),
        // iptables-save of a kernel prints --or-mark M as --set-xmark M/M, --xor-mark M as M/0x0.
        (Some("MARK"), Some("--set-xmark"), Some(vm), 4) => match vm.split_once('/') {
            Some((v, m)) if v == m => Some(Target::OrMark(Arc::from(v))),
            Some((v, "0x0" | "0")) => Some(Target::XorMark(Arc::from(v))),
            _ => None,
        },
        (Some("MASQUERADE"), Some("--random-fully"), _, 3) => Some(Target::MasqueradeRandomFully),
        (Some(name), _, _, 2) => chain_name(name).map(Target::Jump),
        _ => None,
    };
    t.unwrap_or_else(unsupported)
}

/// Reads the options of a rule after `-A CHAIN`.
fn rule(chain: Chain, toks: &[Token<'_>]) -> Rule {
    let jump = toks
        .iter()
        .position(|t| matches!(t.value.as_str(), "-j" | "--jump" | "-g" | "--goto") && !t.quoted);
    let (opts, tgt) = match jump {
        Some(j) => (
            toks.get(..j).unwrap_or_default(),
            toks.get(j..).unwrap_or_default(),
        ),
        None => (toks, &[][..]),
    };
    let mut matches = Vec::new();
    let mut i = 0;
    while i < opts.len() {
        let (negated, at) = if opts.get(i).is_some_and(|t| t.value == "!") {
            (true, i + 1)
        } else {
            (false, i)
        };
        match one_match(opts, at, negated) {
            Some((m, n)) => {
                matches.push(m);
                i = at + n;
            }
            None => {
                // From here to the target: kept as written, reported when traced.
                matches.push(Match::Unsupported(Arc::from(join(
                    opts.get(i..).unwrap_or_default(),
                ))));
                break;
            }
        }
    }
    let target = if tgt.is_empty() { Target::None } else { target(tgt) };
    Rule::new(chain, matches, target)
}

fn table_name(name: &str) -> Option<&'static str> {
    match name {
        "filter" => Some("filter"),
        "nat" => Some("nat"),
        _ => None,
    }
}

/// Reads `iptables-restore` input (kube-proxy's restore payload, or any `iptables-save`
/// output, which is restore input too): the `filter` and `nat` tables with their chain
/// declarations, rules (`-A`) and chain deletions (`-X`), in order. `#` comments and blank
/// lines are ignored; `-N CHAIN` counts as a declaration and `-F CHAIN` is kept as one (both
/// flush). [`Transaction::full`] is `true`: the text does not tell.
///
/// ```
/// use svcnet_rules::iptables::parse_transaction;
/// let text = "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -m comment --comment \"x y\" -j RETURN\nCOMMIT\n";
/// let tx = parse_transaction(text).unwrap().value;
/// assert_eq!(tx.nat.chains.len(), 1);
/// assert!(tx.to_restore_text().ends_with(text));
/// ```
pub fn parse_transaction(text: &str) -> Result<Parsed<Transaction>, ParseError> {
    let empty = |name| Table {
        name,
        chains: Vec::new(),
        lines: Vec::new(),
    };
    let (mut filter, mut nat) = (empty("filter"), empty("nat"));
    let mut skipped = Vec::new();
    // The table being read: its line, its name, and whether it is held.
    let mut current: Option<(usize, String, Option<&'static str>)> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let l = raw.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let bad = |why| ParseError::Line {
            line,
            text: raw.to_owned(),
            why,
        };
        if let Some(name) = l.strip_prefix('*') {
            if current.is_some() {
                return Err(bad("a table starts before the last one's COMMIT"));
            }
            let held = table_name(name);
            if held.is_none() {
                skipped.push(Skipped {
                    line,
                    text: raw.to_owned(),
                    why: "only the filter and nat tables are held",
                });
            }
            current = Some((line, name.to_owned(), held));
            continue;
        }
        let Some((_, _, held)) = &current else {
            return Err(bad("outside a table (no *filter or *nat before it)"));
        };
        if l == "COMMIT" {
            current = None;
            continue;
        }
        let Some(held) = *held else { continue };
        let table = if held == "filter" { &mut filter } else { &mut nat };
        let skip = |skipped: &mut Vec<Skipped>| {
            skipped.push(Skipped {
                line,
                text: raw.to_owned(),
                why: "a chain kube-proxy does not write",
            })
        };
        if let Some(decl) = l.strip_prefix(':') {
            let mut w = decl.split_whitespace();
            let (Some(name), Some(_policy)) = (w.next(), w.next()) else {
                return Err(bad("a chain declaration is :NAME POLICY [PACKETS:BYTES]"));
            };
            match chain_name(name) {
                Some(c) => table.chains.push(c),
                None => skip(&mut skipped),
            }
            continue;
        }
        // `iptables-save -c` puts the counters first: `[PACKETS:BYTES] -A ...`.
        let l = match l.strip_prefix('[').and_then(|r| r.split_once("] ")) {
            Some((counters, rest)) if counters.split(':').all(|c| c.bytes().all(|b| b.is_ascii_digit())) => {
                rest
            }
            _ => l,
        };
        let toks = tokens(l).ok_or_else(|| ParseError::Quote {
            line,
            text: raw.to_owned(),
        })?;
        let (Some(op), Some(name)) = (toks.first(), toks.get(1)) else {
            return Err(bad("not a rule, chain or table line"));
        };
        let chain = chain_name(&name.value);
        match op.value.as_str() {
            "-A" | "--append" => match chain {
                Some(c) => table
                    .lines
                    .push(Line::Rule(rule(c, toks.get(2..).unwrap_or_default()))),
                None => skip(&mut skipped),
            },
            "-X" | "--delete-chain" if toks.len() == 2 => match chain {
                Some(c) => table.lines.push(Line::DeleteChain(c)),
                None => skip(&mut skipped),
            },
            "-N" | "--new-chain" | "-F" | "--flush" if toks.len() == 2 => match chain {
                Some(c) => table.chains.push(c),
                None => skip(&mut skipped),
            },
            _ => return Err(bad("not a rule, chain or table line")),
        }
    }
    if let Some((line, table, _)) = current {
        return Err(ParseError::NoCommit { line, table });
    }
    Ok(Parsed {
        value: Transaction::from_tables(true, filter, nat),
        skipped,
    })
}

/// Applies one table of a restore payload as `iptables-restore --noflush` does: declared
/// chains are created or flushed, rules appended, `-X` chains deleted.
fn apply(chains: &mut IndexMap<Chain, Vec<Rule>>, t: &Table) {
    for c in &t.chains {
        chains.entry(*c).or_default().clear();
    }
    for l in &t.lines {
        match l {
            Line::Rule(r) => chains.entry(r.chain).or_default().push(r.clone()),
            Line::DeleteChain(c) => {
                chains.shift_remove(c);
            }
        }
    }
}

/// Reads `iptables-save` output (or restore input) as the tables it leaves when restored into
/// empty tables: what the tracer walks. Chains keep their order of first mention, so
/// `to_save_text()` of the result gives back `iptables-save` text whose rules are grouped by
/// chain in that order (kube-proxy's and kube-oracle's `--print state`).
///
/// A restore payload alone has no rules in the built-in chains (kube-proxy installs the jumps
/// into `KUBE-SERVICES` and the other chains apart from it): see [`with_jump_rules`].
///
/// ```
/// use svcnet_rules::iptables::parse_state;
/// let text = "*nat\n:PREROUTING - [0:0]\n:KUBE-SERVICES - [0:0]\n\
///             -A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\nCOMMIT\n";
/// let state = parse_state(text).unwrap().value;
/// assert!(state.to_save_text().ends_with(text));
/// ```
pub fn parse_state(text: &str) -> Result<Parsed<IptablesState>, ParseError> {
    let Parsed { value: tx, skipped } = parse_transaction(text)?;
    let mut filter = IndexMap::new();
    let mut nat = IndexMap::new();
    apply(&mut filter, &tx.filter);
    apply(&mut nat, &tx.nat);
    Ok(Parsed {
        value: IptablesState::from_tables(
            KernelTable {
                name: "filter",
                chains: filter,
            },
            KernelTable {
                name: "nat",
                chains: nat,
            },
        ),
        skipped,
    })
}

/// Adds the jump rules kube-proxy installs outside its restore payload
/// ([`jump_rules`](super::jump_rules): `PREROUTING`/`OUTPUT` → `KUBE-SERVICES`, ...) where
/// they are missing, each put first in its chain in kube-proxy's order (`EnsureRule(Prepend)`);
/// returns how many were added. For tracing a restore payload (kube-proxy's `--print
/// transaction`) on its own.
pub fn with_jump_rules(state: &mut IptablesState) -> usize {
    let (mut filter, mut nat) = ((*state.filter).clone(), (*state.nat).clone());
    let mut added = 0;
    for (table, r) in super::sync::jump_rules() {
        let t = if table == "filter" { &mut filter } else { &mut nat };
        let rules = t.chains.entry(r.chain).or_default();
        if !rules.contains(&r) {
            rules.insert(0, r);
            added += 1;
        }
    }
    if added > 0 {
        *state = IptablesState::from_tables(filter, nat);
    }
    added
}

#[cfg(test)]
mod tests {
    use super::*;

    fn one(rule_text: &str) -> Rule {
        let text = format!("*nat\n{rule_text}\nCOMMIT\n");
        let tx = parse_transaction(&text).unwrap().value;
        match tx.nat.lines.first() {
            Some(Line::Rule(r)) => r.clone(),
            l => panic!("{l:?}"),
        }
    }

    #[test]
    fn rules_read_back_to_their_text() {
        for r in [
            "-A KUBE-SERVICES -m comment --comment \"ns1/svc1:p80 cluster IP\" -m tcp -p tcp -d 172.30.0.41 --dport 80 -j KUBE-SVC-XPGD46QRK7WJZT7O",
            "-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -m tcp -p tcp -j DNAT --to-destination 10.180.0.1:80",
            "-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.1:80\" -m statistic --mode random --probability 0.3333333333 -j KUBE-SEP-SXIVWICOYRO3J4NJ",
            "-A KUBE-POSTROUTING -m mark ! --mark 0x4000/0x4000 -j RETURN",
            "-A KUBE-POSTROUTING -j MARK --xor-mark 0x4000",
            "-A KUBE-MARK-MASQ -j MARK --or-mark 0x4000",
            "-A KUBE-POSTROUTING -m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully",
            "-A KUBE-FIREWALL -m comment --comment \"block incoming localnet connections\" -d 127.0.0.0/8 ! -s 127.0.0.0/8 -m conntrack ! --ctstate RELATED,ESTABLISHED,DNAT -j DROP",
            "-A KUBE-FORWARD -m conntrack --ctstate INVALID -m nfacct --nfacct-name ct_state_invalid_dropped_pkts -j DROP",
            "-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.1:80\" -m recent --name KUBE-SEP-SXIVWICOYRO3J4NJ --rcheck --seconds 10800 --reap -j KUBE-SEP-SXIVWICOYRO3J4NJ",
            "-A KUBE-SEP-SXIVWICOYRO3J4NJ -m comment --comment ns1/svc1:p80 -m recent --name KUBE-SEP-SXIVWICOYRO3J4NJ --set -m tcp -p tcp -j DNAT --to-destination [2001:db8::1]:80",
            "-A KUBE-SERVICES -m comment --comment \"kubernetes service nodeports; NOTE: this must be the last rule in this chain\" -m addrtype --dst-type LOCAL -j KUBE-NODEPORTS",
            "-A KUBE-EXT-XPGD46QRK7WJZT7O -m addrtype --src-type LOCAL -j KUBE-MARK-DROP",
            "-A PREROUTING -i eth0 -p tcp -j KUBE-SERVICES",
            "-A KUBE-SERVICES -p tcp -j LOG --log-prefix \"a b\"",
            "-A KUBE-SERVICES -j DOCKER",
            "-A KUBE-SERVICES -p udp",
        ] {
            assert_eq!(one(r).to_string(), r);
        }
        let r = one("-A PREROUTING -p tcp -i eth0 ! -s 10.0.0.0/8 -j KUBE-SERVICES");
        assert_eq!(r.matches.len(), 2);
        assert!(matches!(&r.matches[1], Match::Unsupported(t) if &**t == "-i eth0 ! -s 10.0.0.0/8"));
        assert!(matches!(
            one("-A KUBE-SERVICES -j DOCKER").target,
            Target::Unsupported(_)
        ));
        assert!(matches!(
            one("-A KUBE-SERVICES -m statistic --mode random --probability 0.4000000000 -j ACCEPT").matches
                [0],
            Match::Unsupported(_)
        ));
    }

    #[test]
    fn errors_name_the_line() {
        let e =
            parse_transaction("*nat\n-A KUBE-SERVICES -m comment --comment \"open\nCOMMIT\n").unwrap_err();
        assert_eq!(
            e,
            ParseError::Quote {
                line: 2,
                text: "-A KUBE-SERVICES -m comment --comment \"open".into()
            }
        );
        let e = parse_transaction("-A KUBE-SERVICES -j ACCEPT\n").unwrap_err();
        assert!(matches!(e, ParseError::Line { line: 1, .. }), "{e}");
        let e = parse_transaction("*nat\n:KUBE-SERVICES - [0:0]\n").unwrap_err();
        assert!(matches!(e, ParseError::NoCommit { line: 1, .. }), "{e}");
        let e = parse_transaction("*nat\n-Z KUBE-SERVICES\nCOMMIT\n").unwrap_err();
        assert!(e.to_string().starts_with("line 2: "), "{e}");
        let e = parse_transaction("*nat\n:KUBE-SERVICES\nCOMMIT\n").unwrap_err();
        assert!(matches!(e, ParseError::Line { line: 2, .. }), "{e}");
    }

    #[test]
    fn other_tables_and_chains_are_listed_not_held() {
        let p = parse_state(
            "*mangle\n:KUBE-KUBELET-CANARY - [0:0]\nCOMMIT\n*nat\n:DOCKER - [0:0]\n-A DOCKER -j RETURN\n\
             -A PREROUTING -j DOCKER\nCOMMIT\n",
        )
        .unwrap();
        assert_eq!(
            p.skipped.iter().map(|s| s.line).collect::<Vec<_>>(),
            vec![1, 5, 6]
        );
        let pre = &p.value.nat.chains[&Chain::Fixed("PREROUTING")];
        assert!(matches!(&pre[0].target, Target::Unsupported(t) if &**t == "-j DOCKER"));
    }

    #[test]
    fn restore_semantics_flush_and_delete() {
        let p = parse_state(
            "*nat\n:KUBE-SERVICES - [0:0]\n-A KUBE-SERVICES -j RETURN\n:KUBE-SERVICES - [0:0]\n\
             -A KUBE-MARK-MASQ -j RETURN\n-X KUBE-MARK-MASQ\nCOMMIT\n",
        )
        .unwrap()
        .value;
        // Declarations are applied before the rules (kube-proxy declares every chain first);
        // -X deletes.
        assert_eq!(p.nat.chains.len(), 1);
        assert_eq!(p.nat.chains[&Chain::Fixed("KUBE-SERVICES")].len(), 1);
    }

    #[test]
    fn jump_rules_are_added_once() {
        let mut s = parse_state("*nat\n:KUBE-SERVICES - [0:0]\nCOMMIT\n")
            .unwrap()
            .value;
        let n = with_jump_rules(&mut s);
        assert_eq!(n, super::super::sync::jump_rules().len());
        assert_eq!(with_jump_rules(&mut s), 0);
        assert!(s.to_save_text().contains(
            "-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"
        ));
    }
}
