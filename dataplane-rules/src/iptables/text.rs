//! The rule set as text first: each service port's rules are rendered once into its own
//! buffer ([`PortText`]), tagged by chain, and shared (not copied) between a transaction, the
//! tables it leaves and the next partial sync. The typed rules ([`Rule`], [`Table`](super::Table),
//! [`KernelTable`](super::KernelTable)) are read back from that text only when asked ([`Typed`]).
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); the text is
//! `pkg/proxy/iptables/proxier.go`'s.

use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::ops::Deref;
use std::sync::{Arc, OnceLock};

use serde::{Serialize, Serializer};

use super::blocks::PortList;
use super::build::{CT_STATE_INVALID_COUNTER, LOCALHOST_NODEPORTS_COUNTER, Line};
use super::types::*;
use crate::proxy::Protocol;

/// Typed data built on first use from the text it was rendered to: derefs to `T`.
pub struct Typed<T> {
    cell: OnceLock<T>,
    make: Arc<dyn Fn() -> T + Send + Sync>,
}

impl<T> Typed<T> {
    /// Typed data made by `make` when first read.
    pub(crate) fn new(make: impl Fn() -> T + Send + Sync + 'static) -> Self {
        Typed {
            cell: OnceLock::new(),
            make: Arc::new(make),
        }
    }
}

impl<T: Clone + Send + Sync + 'static> Typed<T> {
    /// Typed data that is already built (read from text elsewhere).
    pub(crate) fn ready(value: T) -> Self {
        let cell = OnceLock::new();
        let copy = value.clone();
        let _ = cell.set(value);
        Typed {
            cell,
            make: Arc::new(move || copy.clone()),
        }
    }
}

impl<T> Deref for Typed<T> {
    type Target = T;
    fn deref(&self) -> &T {
        self.cell.get_or_init(|| (self.make)())
    }
}

impl<T: Clone> Clone for Typed<T> {
    fn clone(&self) -> Self {
        Typed {
            cell: self.cell.clone(),
            make: self.make.clone(),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Typed<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt(f)
    }
}

impl<T: PartialEq> PartialEq for Typed<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Eq> Eq for Typed<T> {}

impl<T: Serialize> Serialize for Typed<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        (**self).serialize(s)
    }
}

/// A run of consecutive rule lines of one chain, ending at `end` in the text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Run {
    pub(crate) chain: Chain,
    pub(crate) end: u32,
    pub(crate) lines: u32,
}

/// Text a port holds alone, or a range of a buffer it shares with the ports rendered with it
/// (a full sync renders its ports into a few large buffers rather than one per port).
#[derive(Debug, Clone)]
pub(crate) enum Text {
    Own(String),
    /// `(buffer, start, end)`: a range on line ends (ASCII rule text).
    Shared(Arc<String>, u32, u32),
}

impl Default for Text {
    fn default() -> Self {
        Text::Own(String::new())
    }
}

impl Deref for Text {
    type Target = str;
    #[inline]
    fn deref(&self) -> &str {
        match self {
            Text::Own(s) => s,
            Text::Shared(s, a, b) => s.get(*a as usize..*b as usize).unwrap_or(""),
        }
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl Eq for Text {}

/// A list a port holds alone, or a range of a list it shares with the ports rendered with it
/// (as [`Text`]: a full sync keeps its ports' chains and runs in a few lists).
#[derive(Clone)]
pub(crate) enum Many<T> {
    Own(Vec<T>),
    /// `(list, start, end)`.
    Shared(Arc<Vec<T>>, u32, u32),
}

impl<T> Default for Many<T> {
    fn default() -> Self {
        Many::Own(Vec::new())
    }
}

impl<T> Deref for Many<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        match self {
            Many::Own(v) => v,
            Many::Shared(v, a, b) => v.get(*a as usize..*b as usize).unwrap_or(&[]),
        }
    }
}

impl<T: PartialEq> PartialEq for Many<T> {
    fn eq(&self, other: &Self) -> bool {
        **self == **other
    }
}

impl<T: Eq> Eq for Many<T> {}

impl<T: fmt::Debug> fmt::Debug for Many<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Rule lines (`-A ...\n`) with the chain of each run of them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Lines<T = String, R = Vec<Run>> {
    pub(crate) text: T,
    pub(crate) runs: R,
}

impl Lines {
    pub(crate) fn with_capacity(bytes: usize, runs: usize) -> Self {
        Lines {
            text: String::with_capacity(bytes),
            runs: Vec::with_capacity(runs),
        }
    }

    /// Starts a rule: `-A CHAIN`.
    #[inline]
    pub(crate) fn begin(&mut self, chain: Chain) {
        self.text.push_str("-A ");
        chain.write_to(&mut self.text);
    }

    /// Ends the rule begun on `chain`.
    #[inline]
    pub(crate) fn end(&mut self, chain: Chain) {
        self.text.push('\n');
        let end = u32::try_from(self.text.len()).unwrap_or(u32::MAX);
        match self.runs.last_mut() {
            Some(r) if r.chain == chain => {
                r.end = end;
                r.lines += 1;
            }
            _ => self.runs.push(Run { chain, end, lines: 1 }),
        }
    }

    /// A whole rule.
    pub(crate) fn rule(&mut self, chain: Chain, matches: &[Match], target: &Target) {
        self.begin(chain);
        for m in matches {
            write_match(&mut self.text, m);
        }
        write_target(&mut self.text, target);
        self.end(chain);
    }
}

impl<T> Lines<T> {
    /// Records lines of `chain` ending at `end` in the text, appended by the caller (as
    /// [`end`](Lines::end) does line by line).
    #[inline]
    pub(crate) fn add_run(&mut self, chain: Chain, end: usize, lines: u32) {
        let end = u32::try_from(end).unwrap_or(u32::MAX);
        match self.runs.last_mut() {
            Some(r) if r.chain == chain => {
                r.end = end;
                r.lines += lines;
            }
            _ => self.runs.push(Run { chain, end, lines }),
        }
    }
}

impl<T: Deref<Target = str>, R: Deref<Target = [Run]>> Lines<T, R> {
    /// The text of each run, with its chain.
    pub(crate) fn runs(&self) -> impl Iterator<Item = (Chain, &str)> {
        let mut start = 0usize;
        self.runs.iter().map(move |r| {
            let end = r.end as usize;
            // Runs end where `end` left the text: in order, on line ends.
            let t = &self.text[start..end];
            start = end;
            (r.chain, t)
        })
    }

    /// Writes the lines of `chain`.
    pub(crate) fn write_chain(&self, chain: Chain, out: &mut String) {
        for (c, t) in self.runs() {
            if c == chain {
                out.push_str(t);
            }
        }
    }

    /// How many lines of `chain` (every line with `None`).
    pub(crate) fn count(&self, chain: Option<Chain>) -> usize {
        self.runs
            .iter()
            .filter(|r| chain.is_none_or(|c| c == r.chain))
            .map(|r| r.lines as usize)
            .sum()
    }
}

/// One service port's rules as text: the filter rules and the nat rules every sync writes
/// (`head`: `KUBE-SERVICES`, `KUBE-NODEPORTS`), then its own chains' rules (`body`, written by
/// full syncs and syncs where its Service changed).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PortText {
    pub(crate) filter: Lines,
    pub(crate) head: Lines<Text, Many<Run>>,
    pub(crate) body: Lines<Text, Many<Run>>,
    /// The chains declared (and kept active), in declaration order.
    pub(crate) chains: Many<Chain>,
    /// Their declaration lines, rendered with the rules (empty when they were not: written
    /// from `chains` then).
    pub(crate) decls: Text,
    /// Chains the body writes to without declaring them (kube-proxy would too).
    pub(crate) extra: Vec<Chain>,
    /// The creation order of `chains`, then `extra`, in the tables (set by syncs).
    pub(crate) seqs: Seqs,
}

/// The creation order of a port's chains in the tables.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Seqs {
    /// Consecutive, from this one (every chain new to the tables: no list to allocate).
    From(u64),
    /// Each chain's, in order.
    List(Vec<u64>),
}

impl Default for Seqs {
    fn default() -> Self {
        Seqs::List(Vec::new())
    }
}

impl Seqs {
    /// Keeps the first `n`.
    pub(crate) fn truncate(&mut self, n: usize) {
        if let Seqs::List(l) = self {
            l.truncate(n);
        }
    }
}

impl PortText {
    /// Writes the declarations of `chains`.
    pub(crate) fn write_decls(&self, out: &mut String) {
        if self.decls.is_empty() {
            for c in self.chains.iter() {
                write_decl(out, *c);
            }
        } else {
            out.push_str(&self.decls);
        }
    }

    /// The length of the declarations of `chains`.
    pub(crate) fn decls_len(&self) -> usize {
        if self.decls.is_empty() {
            self.chains.iter().map(|c| decl_len(*c)).sum()
        } else {
            self.decls.len()
        }
    }

    /// `chains` then `extra`.
    pub(crate) fn all_chains(&self) -> impl Iterator<Item = Chain> + '_ {
        self.chains.iter().chain(&self.extra).copied()
    }

    /// [`all_chains`](Self::all_chains) with their creation order (those that have one).
    pub(crate) fn chain_seqs(&self) -> impl Iterator<Item = (Chain, u64)> + '_ {
        let (from, list) = match &self.seqs {
            Seqs::From(s) => (Some(*s), &[][..]),
            Seqs::List(l) => (None, l.as_slice()),
        };
        let n = if from.is_some() {
            self.chains.len() + self.extra.len()
        } else {
            list.len()
        };
        self.all_chains().take(n).enumerate().map(move |(i, c)| {
            let seq = match from {
                Some(s) => s + i as u64,
                None => list.get(i).copied().unwrap_or(0),
            };
            (c, seq)
        })
    }
}

/// Which ports of a transaction write their own chains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Written {
    All,
    /// Indices, ascending.
    Some(Vec<u32>),
}

/// The buffers a full sync rendered its ports into (see
/// [`SharedText`](super::build::SharedText)): every port's `head` and own chains' rules, in
/// order, and their declarations.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SharedBuffers {
    pub(crate) rules: Arc<String>,
    pub(crate) decls: Arc<String>,
}

/// A restore payload as text pieces.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TxText {
    pub(crate) ports: PortList,
    /// With every port written (a full sync's), the buffers holding, one after another, all
    /// the ports' `head` and own chains' rules and all their declarations (empty when the
    /// ports' text is not laid out so: it is then written port by port).
    pub(crate) shared: Vec<SharedBuffers>,
    pub(crate) written: Written,
    pub(crate) filter_decls: Vec<Chain>,
    pub(crate) filter_pre: Lines,
    pub(crate) filter_post: Lines,
    pub(crate) nat_decls: Vec<Chain>,
    pub(crate) nat_pre: Lines,
    pub(crate) nat_post: Lines,
    pub(crate) stale: Vec<Chain>,
}

/// The length of a chain declaration line.
#[inline]
pub(crate) fn decl_len(c: Chain) -> usize {
    ":".len() + c.text_len() + " - [0:0]\n".len()
}

pub(crate) fn write_decl(out: &mut String, c: Chain) {
    out.push(':');
    c.write_to(out);
    out.push_str(" - [0:0]\n");
}

impl TxText {
    /// Whether every port is written and [`shared`](Self::shared) holds their text in order.
    pub(crate) fn laid_out(&self) -> bool {
        !self.shared.is_empty() && matches!(self.written, Written::All)
    }

    /// Each port with whether it writes its chains.
    pub(crate) fn ports_written(&self) -> impl Iterator<Item = (&PortText, bool)> {
        let mut next = 0usize;
        self.ports.iter().enumerate().map(move |(i, p)| {
            let w = match &self.written {
                Written::All => true,
                Written::Some(ix) => {
                    if ix.get(next).is_some_and(|&j| j as usize == i) {
                        next += 1;
                        true
                    } else {
                        false
                    }
                }
            };
            (&**p, w)
        })
    }

    /// The exact length of the full payload ([`write_filter`](Self::write_filter) then
    /// [`write_nat`](Self::write_nat)), so that it is written into one allocation.
    pub(crate) fn len_hint(&self) -> usize {
        let decls = |cs: &[Chain]| cs.iter().map(|c| decl_len(*c)).sum::<usize>();
        let mut n = "*filter\n".len() + "COMMIT\n".len() + "*nat\n".len() + "COMMIT\n".len();
        n += decls(&self.filter_decls) + decls(&self.nat_decls) + decls(&self.stale);
        n += self.filter_pre.text.len() + self.filter_post.text.len();
        n += self.nat_pre.text.len() + self.nat_post.text.len();
        n += self
            .stale
            .iter()
            .map(|c| "-X \n".len() + c.text_len())
            .sum::<usize>();
        match &self.written {
            // Every port's lines: summed by the blocks.
            Written::All => {
                for b in &self.ports.blocks {
                    n += b.filter.len() + b.head.len() + b.body_len;
                }
            }
            Written::Some(_) => {
                for (p, w) in self.ports_written() {
                    n += p.filter.text.len() + p.head.text.len();
                    if w {
                        n += p.body.text.len() + p.decls_len();
                    }
                }
            }
        }
        n
    }

    pub(crate) fn write_filter(&self, out: &mut String) {
        out.push_str("*filter\n");
        for c in &self.filter_decls {
            write_decl(out, *c);
        }
        out.push_str(&self.filter_pre.text);
        for p in self.ports.iter() {
            out.push_str(&p.filter.text);
        }
        out.push_str(&self.filter_post.text);
        out.push_str("COMMIT\n");
    }

    pub(crate) fn write_nat(&self, out: &mut String) {
        out.push_str("*nat\n");
        for c in &self.nat_decls {
            write_decl(out, *c);
        }
        let laid_out = self.laid_out();
        if laid_out {
            for b in &self.shared {
                out.push_str(&b.decls);
            }
        } else {
            for (p, w) in self.ports_written() {
                if w {
                    p.write_decls(out);
                }
            }
        }
        for c in &self.stale {
            write_decl(out, *c);
        }
        out.push_str(&self.nat_pre.text);
        if laid_out {
            for b in &self.shared {
                out.push_str(&b.rules);
            }
        } else {
            for (p, w) in self.ports_written() {
                out.push_str(&p.head.text);
                if w {
                    out.push_str(&p.body.text);
                }
            }
        }
        for c in &self.stale {
            out.push_str("-X ");
            c.write_to(out);
            out.push('\n');
        }
        out.push_str(&self.nat_post.text);
        out.push_str("COMMIT\n");
    }

    /// Writes the lines of an aggregate (non-service) chain of the filter (`nat == false`) or
    /// nat table.
    pub(crate) fn write_fixed_chain(&self, nat: bool, chain: Chain, out: &mut String) {
        let (pre, post) = if nat {
            (&self.nat_pre, &self.nat_post)
        } else {
            (&self.filter_pre, &self.filter_post)
        };
        pre.write_chain(chain, out);
        for p in self.ports.iter() {
            if nat {
                p.head.write_chain(chain, out);
            } else {
                p.filter.write_chain(chain, out);
            }
        }
        post.write_chain(chain, out);
    }

    pub(crate) fn rule_count(&self) -> usize {
        let mut n = self.filter_pre.count(None)
            + self.filter_post.count(None)
            + self.nat_pre.count(None)
            + self.nat_post.count(None);
        for (p, w) in self.ports_written() {
            n += p.filter.count(None) + p.head.count(None);
            if w {
                n += p.body.count(None);
            }
        }
        n
    }
}

// ---------------------------------------------------------------------------------------
// Reading the text back into typed rules.

/// The fixed comment texts the rule sets write.
const TEXTS: &[&str] = &[
    "kubernetes service traffic requiring SNAT",
    "block incoming localnet connections",
    "kubernetes service nodeports; NOTE: this must be the last rule in this chain",
    "kubernetes forwarding rules",
    "kubernetes forwarding conntrack rule",
    "kubernetes externally-visible service portals",
    "kubernetes health check service ports",
    "kubernetes service portals",
    "kubernetes load balancer firewall",
    "kubernetes postrouting rules",
];

/// The `(prefix, suffix)` around a service port name in comments.
const AROUND: &[(&str, &str)] = &[
    ("masquerade traffic for ", " external destinations"),
    ("pod traffic for ", " external destinations"),
    ("masquerade LOCAL traffic for ", " external destinations"),
    ("route LOCAL traffic for ", " external destinations"),
    ("other traffic to ", " will be dropped by KUBE-PROXY-FIREWALL"),
    ("", " has no endpoints"),
    ("", " has no local endpoints"),
    ("", " cluster IP"),
    ("", " external IP"),
    ("", " loadbalancer IP"),
    ("", " health check node port"),
];

const STATES: &[&str] = &[
    "INVALID",
    "NEW",
    "RELATED,ESTABLISHED",
    "RELATED,ESTABLISHED,DNAT",
];
const COUNTERS: &[&str] = &[LOCALHOST_NODEPORTS_COUNTER, CT_STATE_INVALID_COUNTER];

fn parse_comment(token: &str) -> Comment {
    let Some(text) = token.strip_prefix('"').and_then(|t| t.strip_suffix('"')) else {
        return Comment::Service(Arc::from(token));
    };
    if let Some(t) = TEXTS.iter().find(|t| **t == text) {
        return Comment::Text(t);
    }
    if let Some((s, rest)) = text.split_once(" traffic not accepted by ")
        && let Some(c) = Chain::parse(rest)
    {
        return Comment::NotAccepted(Arc::from(s), c);
    }
    if let Some((s, ep)) = text.split_once(" -> ")
        && let Ok(ep) = ep.parse::<SocketAddr>()
    {
        return Comment::Endpoint(Arc::from(s), ep);
    }
    for (pre, post) in AROUND {
        if let Some(s) = text.strip_prefix(pre).and_then(|t| t.strip_suffix(post))
            && !s.is_empty()
        {
            return Comment::Around(pre, Arc::from(s), post);
        }
    }
    Comment::Around("", Arc::from(text), "")
}

/// Splits a rule line into arguments (a quoted comment is one).
fn tokens(line: &str) -> Vec<&str> {
    let mut out = Vec::with_capacity(16);
    let mut rest = line;
    loop {
        rest = rest.trim_start_matches(' ');
        if rest.is_empty() {
            break;
        }
        let end = if rest.starts_with('"') {
            rest.get(1..)
                .and_then(|r| r.find('"'))
                .map_or(rest.len(), |i| i + 2)
        } else {
            rest.find(' ').unwrap_or(rest.len())
        };
        let (t, r) = rest.split_at(end.min(rest.len()));
        out.push(t);
        rest = r;
    }
    out
}

fn protocol(s: &str) -> Option<Protocol> {
    match s {
        "tcp" => Some(Protocol::Tcp),
        "udp" => Some(Protocol::Udp),
        "sctp" => Some(Protocol::Sctp),
        _ => None,
    }
}

fn addr(s: &str) -> Option<Addr> {
    if s.contains('/') {
        s.parse().ok().map(Addr::Net)
    } else {
        s.parse::<IpAddr>().ok().map(Addr::Ip)
    }
}

/// Reads one `-A CHAIN ...` line as written by [`Rule::write_to`]. Probabilities are read
/// as the nearest `n`; [`fix_probabilities`] sets the exact ones.
pub(crate) fn parse_rule(line: &str) -> Option<Rule> {
    let t = tokens(line);
    let mut it = t.into_iter().peekable();
    if it.next()? != "-A" {
        return None;
    }
    let chain = Chain::parse(it.next()?)?;
    let mut matches = Vec::new();
    let mut target = Target::None;
    while let Some(tok) = it.next() {
        let negated = tok == "!";
        let tok = if negated { it.next()? } else { tok };
        match tok {
            "-s" => matches.push(Match::Source {
                negated,
                addr: addr(it.next()?)?,
            }),
            "-d" => matches.push(Match::Destination {
                negated,
                addr: addr(it.next()?)?,
            }),
            "-p" => matches.push(Match::ProtocolOnly(protocol(it.next()?)?)),
            "--dport" => matches.push(Match::DestinationPort(it.next()?.parse().ok()?)),
            "-m" => {
                let module = it.next()?;
                match module {
                    "comment" => {
                        it.next()?; // --comment
                        matches.push(Match::Comment(parse_comment(it.next()?)));
                    }
                    "addrtype" => {
                        let which = it.next()?;
                        it.next()?; // LOCAL
                        matches.push(if which == "--dst-type" {
                            Match::DestinationLocal
                        } else {
                            Match::SourceLocal
                        });
                    }
                    "mark" => {
                        let mut n = false;
                        let mut a = it.next()?;
                        if a == "!" {
                            n = true;
                            a = it.next()?;
                        }
                        let _ = a; // --mark
                        let m = it.next()?;
                        let half = m.len() / 2;
                        matches.push(Match::Mark {
                            negated: n,
                            mark: Arc::from(m.get(..half)?),
                        });
                    }
                    "conntrack" => {
                        let mut n = false;
                        let mut a = it.next()?;
                        if a == "!" {
                            n = true;
                            a = it.next()?;
                        }
                        let _ = a; // --ctstate
                        let s = it.next()?;
                        let states = STATES.iter().find(|x| **x == s)?;
                        matches.push(Match::Conntrack { negated: n, states });
                    }
                    "nfacct" => {
                        it.next()?;
                        let s = it.next()?;
                        matches.push(Match::Nfacct(COUNTERS.iter().find(|x| **x == s)?));
                    }
                    "statistic" => {
                        // --mode random --probability P
                        it.next()?;
                        it.next()?;
                        it.next()?;
                        let p: f64 = it.next()?.parse().ok()?;
                        let n = if p > 0.0 { (1.0 / p).round() } else { 1.0 };
                        matches.push(Match::Probability(n as u32));
                    }
                    "recent" => {
                        it.next()?; // --name
                        let name = Chain::parse(it.next()?)?;
                        if it.next()? == "--set" {
                            matches.push(Match::RecentSet(name));
                        } else {
                            it.next()?; // --seconds
                            let seconds = it.next()?.parse().ok()?;
                            it.next()?; // --reap
                            matches.push(Match::RecentCheck { name, seconds });
                        }
                    }
                    p => {
                        let p = protocol(p)?;
                        it.next()?; // -p
                        it.next()?;
                        matches.push(Match::Protocol(p));
                    }
                }
            }
            "-j" => {
                target = match it.next()? {
                    "ACCEPT" => Target::Accept,
                    "DROP" => Target::Drop,
                    "REJECT" => Target::Reject,
                    "RETURN" => Target::Return,
                    "DNAT" => {
                        it.next()?;
                        Target::Dnat(it.next()?.parse().ok()?)
                    }
                    "MARK" => {
                        let how = it.next()?;
                        let m: Arc<str> = Arc::from(it.next()?);
                        if how == "--xor-mark" {
                            Target::XorMark(m)
                        } else {
                            Target::OrMark(m)
                        }
                    }
                    "MASQUERADE" => {
                        it.next()?;
                        Target::MasqueradeRandomFully
                    }
                    c => Target::Jump(Chain::parse(c)?),
                };
            }
            _ => return None,
        }
    }
    Some(Rule::new(chain, matches, target))
}

/// Sets the exact `n` of each probability: a chain's cascade over `n` endpoints has `n - 1`
/// probability rules, `1/n`, `1/(n-1)`, ... `1/2` (printed with 10 decimals, which cannot tell
/// large `n` apart).
pub(crate) fn fix_probabilities<'a>(rules: impl Iterator<Item = &'a mut Rule>) {
    let mut cascade: Vec<&mut u32> = Vec::new();
    for r in rules {
        for m in &mut r.matches {
            if let Match::Probability(n) = m {
                cascade.push(n);
            }
        }
    }
    let total = cascade.len();
    for (k, n) in cascade.into_iter().enumerate() {
        *n = u32::try_from(total + 1 - k).unwrap_or(u32::MAX);
    }
}

/// Reads a table of restore or save text: `(chain declarations, lines)`. Lines that do not
/// read back are left out.
pub(crate) fn parse_table(text: &str) -> (Vec<Chain>, Vec<Line>) {
    let mut decls = Vec::new();
    let mut lines = Vec::new();
    for l in text.lines() {
        if let Some(d) = l.strip_prefix(':') {
            if let Some(c) = d.split(' ').next().and_then(Chain::parse) {
                decls.push(c);
            }
        } else if let Some(c) = l.strip_prefix("-X ") {
            if let Some(c) = Chain::parse(c) {
                lines.push(Line::DeleteChain(c));
            }
        } else if l.starts_with("-A ")
            && let Some(r) = parse_rule(l)
        {
            lines.push(Line::Rule(r));
        }
    }
    (decls, lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_read_back_as_written() {
        let s: Arc<str> = Arc::from("ns/svc:p");
        let sep = Chain::Service(ServiceChainKind::Sep, *b"SXIVWICOYRO3J4NJ");
        let rules = [
            Rule::new(
                KUBE_SERVICES,
                vec![
                    Match::Comment(Comment::Around("", s.clone(), " cluster IP")),
                    Match::Protocol(Protocol::Tcp),
                    Match::Destination {
                        negated: false,
                        addr: Addr::Ip("172.30.0.1".parse().unwrap()),
                    },
                    Match::DestinationPort(80),
                ],
                Target::Jump(sep),
            ),
            Rule::new(
                sep,
                vec![
                    Match::Comment(Comment::Service(s.clone())),
                    Match::RecentSet(sep),
                    Match::Protocol(Protocol::Sctp),
                ],
                Target::Dnat("[fd00::1]:80".parse().unwrap()),
            ),
            Rule::new(
                sep,
                vec![
                    Match::Comment(Comment::Endpoint(s.clone(), "10.0.0.1:80".parse().unwrap())),
                    Match::RecentCheck {
                        name: sep,
                        seconds: 10800,
                    },
                    Match::Mark {
                        negated: true,
                        mark: Arc::from("0x4000"),
                    },
                    Match::Conntrack {
                        negated: true,
                        states: "RELATED,ESTABLISHED,DNAT",
                    },
                    Match::Source {
                        negated: true,
                        addr: Addr::Net("10.0.0.0/8".parse().unwrap()),
                    },
                    Match::Nfacct(CT_STATE_INVALID_COUNTER),
                    Match::SourceLocal,
                    Match::DestinationLocal,
                    Match::ProtocolOnly(Protocol::Udp),
                    Match::Probability(3),
                ],
                Target::XorMark(Arc::from("0x4000")),
            ),
            Rule::new(
                KUBE_SERVICES,
                vec![Match::Comment(Comment::NotAccepted(s.clone(), sep))],
                Target::None,
            ),
            Rule::new(
                KUBE_SERVICES,
                vec![Match::Comment(Comment::Text("kubernetes service portals"))],
                Target::MasqueradeRandomFully,
            ),
            Rule::new(KUBE_MARK_MASQ, vec![], Target::OrMark(Arc::from("0x4000"))),
        ];
        for r in rules {
            assert_eq!(parse_rule(&r.to_string()).as_ref(), Some(&r), "{r}");
        }
        for (pre, post) in AROUND {
            let c = Comment::Around(pre, s.clone(), post);
            let r = Rule::new(KUBE_SERVICES, vec![Match::Comment(c)], Target::Reject);
            assert_eq!(parse_rule(&r.to_string()).as_ref(), Some(&r), "{r}");
        }
        assert!(parse_rule("-A KUBE-SERVICES --bogus").is_none());
    }

    #[test]
    fn probabilities_are_set_by_their_place() {
        let rules: Vec<Rule> = (0..200_000u32)
            .map(|i| {
                Rule::new(
                    KUBE_SERVICES,
                    vec![Match::Probability(200_001 - i)],
                    Target::Accept,
                )
            })
            .collect();
        let text: String = rules.iter().map(|r| format!("{r}\n")).collect();
        let (_, lines) = parse_table(&text);
        let mut back: Vec<Rule> = lines
            .into_iter()
            .filter_map(|l| match l {
                Line::Rule(r) => Some(r),
                Line::DeleteChain(_) => None,
            })
            .collect();
        fix_probabilities(back.iter_mut());
        assert_eq!(back, rules);
    }
}
