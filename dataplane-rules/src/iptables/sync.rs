//! Full and partial syncs (KEP-3453) as kube-proxy v1.37.2's iptables proxier runs them, and
//! the tables they leave behind.
//!
//! The tables are kept as the text of the syncs that wrote them: each service port's rendered
//! rules ([`PortText`]) are shared by the transaction, the tables, and every later partial sync
//! in which its Service does not change. A partial sync renders only the changed Services.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;

use super::build::{IptablesSettings, Scratch, Transaction, render_port, tx_text};
use super::text::{PortText, TxText, Typed, Written, fix_probabilities, parse_table, write_decl};
use super::types::*;
use crate::proxy::{ProxyModel, ServicePortInfo};
use svcnet_model::hash::{FastMap, FastSet};

/// The built-in chains of a table, in `iptables-save` order.
fn builtin_chains(table: &str) -> &'static [&'static str] {
    match table {
        "filter" => &["INPUT", "FORWARD", "OUTPUT"],
        "nat" => &["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"],
        _ => &[],
    }
}

/// One table as the kernel holds it: every chain with its rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KernelTable {
    /// `filter` or `nat`.
    pub name: &'static str,
    /// Chains in creation order (built-in chains first) with their rules.
    pub chains: IndexMap<Chain, Vec<Rule>>,
}

impl KernelTable {
    /// Reads one table of `iptables-save` text back.
    fn parse(name: &'static str, text: &str) -> Self {
        let (decls, lines) = parse_table(text);
        let mut chains: IndexMap<Chain, Vec<Rule>> = decls.into_iter().map(|c| (c, Vec::new())).collect();
        for l in lines {
            if let super::build::Line::Rule(r) = l {
                chains.entry(r.chain).or_default().push(r);
            }
        }
        for rules in chains.values_mut() {
            fix_probabilities(rules.iter_mut());
        }
        KernelTable { name, chains }
    }

    /// Writes the table as `iptables-save` does (`*name`, chain lines, rules chain by chain,
    /// `COMMIT`); loadable by `iptables-restore`. Chain lines read `:NAME - [0:0]`, built-in
    /// chains included (their policy left as it is), as kube-proxy's test fake prints them.
    pub fn write_to(&self, out: &mut String) {
        out.push('*');
        out.push_str(self.name);
        out.push('\n');
        for c in self.chains.keys() {
            write_decl(out, *c);
        }
        for rules in self.chains.values() {
            for r in rules {
                r.write_to(out);
                out.push('\n');
            }
        }
        out.push_str("COMMIT\n");
    }
}

/// The rules of a chain that is not a service port's own.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FixedBody {
    /// Rule lines.
    Text(String),
    /// The chain's lines in the last transaction (which declared it).
    Tx,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct FixedChain {
    chain: Chain,
    seq: u64,
    body: FixedBody,
}

/// The tables after a sync, as text pieces.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Tables {
    filter: Vec<FixedChain>,
    nat: Vec<FixedChain>,
    /// The last transaction: its ports are the nat table's service chains.
    tx: Option<Arc<TxText>>,
}

/// A chain of a table being written out.
enum Entry<'a> {
    Fixed(&'a FixedChain),
    Port(&'a PortText, Chain),
}

impl Tables {
    fn fixed(&self, nat: bool) -> &Vec<FixedChain> {
        if nat { &self.nat } else { &self.filter }
    }

    /// Every chain of a table in creation order.
    fn entries(&self, nat: bool) -> Vec<(u64, Entry<'_>)> {
        let mut out: Vec<(u64, Entry<'_>)> =
            self.fixed(nat).iter().map(|f| (f.seq, Entry::Fixed(f))).collect();
        if nat && let Some(tx) = &self.tx {
            for p in tx.ports.iter() {
                for (c, &seq) in p.all_chains().zip(&p.seqs) {
                    out.push((seq, Entry::Port(p, c)));
                }
            }
        }
        out.sort_by_key(|e| e.0);
        out
    }

    fn write_table(&self, nat: bool, out: &mut String) {
        out.push_str(if nat { "*nat\n" } else { "*filter\n" });
        let entries = self.entries(nat);
        for (_, e) in &entries {
            write_decl(
                out,
                match e {
                    Entry::Fixed(f) => f.chain,
                    Entry::Port(_, c) => *c,
                },
            );
        }
        for (_, e) in &entries {
            match e {
                Entry::Fixed(f) => self.write_fixed(nat, f, out),
                Entry::Port(p, c) => p.body.write_chain(*c, out),
            }
        }
        out.push_str("COMMIT\n");
    }

    fn write_fixed(&self, nat: bool, f: &FixedChain, out: &mut String) {
        match (&f.body, &self.tx) {
            (FixedBody::Text(t), _) => out.push_str(t),
            (FixedBody::Tx, Some(tx)) => tx.write_fixed_chain(nat, f.chain, out),
            (FixedBody::Tx, None) => {}
        }
    }

    fn len_hint(&self) -> usize {
        let mut n = 1024;
        if let Some(tx) = &self.tx {
            for p in tx.ports.iter() {
                n += p.head.text.len() + p.filter.text.len() + p.body.text.len() + 32 * p.chains.len();
            }
        }
        n
    }
}

/// The iptables tables of a node after a sync (what `iptables-save` shows), with what the next
/// sync needs to know about the previous one. The typed tables are read from the text on first
/// use.
#[derive(Debug, Clone, Serialize)]
pub struct IptablesState {
    /// The filter table.
    pub filter: Typed<KernelTable>,
    /// The nat table.
    pub nat: Typed<KernelTable>,
    #[serde(skip)]
    tables: Arc<Tables>,
    /// The synced model's slice digests by Service.
    #[serde(skip)]
    slices: HashMap<(String, String), u64>,
    /// The node zone of the synced model (a change forces a full sync).
    #[serde(skip)]
    zone: String,
    /// The creation order the next new chain gets.
    #[serde(skip)]
    next_seq: u64,
}

impl PartialEq for IptablesState {
    fn eq(&self, other: &Self) -> bool {
        self.zone == other.zone && self.slices == other.slices && self.to_save_text() == other.to_save_text()
    }
}

impl Eq for IptablesState {}

impl IptablesState {
    /// Tables read from elsewhere (e.g. [`parse_state`](super::parse_state)), with no sync
    /// history: a later [`sync`] from them is a partial sync that knows of no Service.
    pub fn from_tables(filter: KernelTable, nat: KernelTable) -> Self {
        let mut seq = 0u64;
        let mut fixed = |t: &KernelTable| -> Vec<FixedChain> {
            t.chains
                .iter()
                .map(|(chain, rules)| {
                    let mut text = String::new();
                    for r in rules {
                        r.write_to(&mut text);
                        text.push('\n');
                    }
                    seq += 1;
                    FixedChain {
                        chain: *chain,
                        seq,
                        body: FixedBody::Text(text),
                    }
                })
                .collect()
        };
        let tables = Tables {
            filter: fixed(&filter),
            nat: fixed(&nat),
            tx: None,
        };
        IptablesState {
            filter: Typed::ready(filter),
            nat: Typed::ready(nat),
            tables: Arc::new(tables),
            slices: HashMap::new(),
            zone: String::new(),
            next_seq: seq + 1,
        }
    }

    fn with_tables(
        tables: Tables,
        slices: HashMap<(String, String), u64>,
        zone: String,
        next_seq: u64,
    ) -> Self {
        let tables = Arc::new(tables);
        let (f, n) = (tables.clone(), tables.clone());
        IptablesState {
            filter: Typed::new(move || {
                let mut s = String::new();
                f.write_table(false, &mut s);
                KernelTable::parse("filter", &s)
            }),
            nat: Typed::new(move || {
                let mut s = String::with_capacity(n.len_hint());
                n.write_table(true, &mut s);
                KernelTable::parse("nat", &s)
            }),
            tables,
            slices,
            zone,
            next_seq,
        }
    }

    /// The tables as `iptables-save` prints them (filter, then nat).
    pub fn to_save_text(&self) -> String {
        let mut out = String::with_capacity(self.tables.len_hint());
        self.tables.write_table(false, &mut out);
        self.tables.write_table(true, &mut out);
        out
    }

    /// The service chains of the nat table (`iptables-save -t nat`, `GetChainsFromTable`).
    pub fn nat_chains(&self) -> HashSet<Chain> {
        self.tables
            .entries(true)
            .into_iter()
            .map(|(_, e)| match e {
                Entry::Fixed(f) => f.chain,
                Entry::Port(_, c) => c,
            })
            .collect()
    }

    /// How many rules the tables hold.
    pub fn rule_count(&self) -> usize {
        let mut n = 0;
        for nat in [false, true] {
            for (_, e) in self.tables.entries(nat) {
                n += match e {
                    Entry::Fixed(f) => match &f.body {
                        FixedBody::Text(t) => t.lines().count(),
                        FixedBody::Tx => self.tables.tx.as_ref().map_or(0, |tx| {
                            let mut s = String::new();
                            tx.write_fixed_chain(nat, f.chain, &mut s);
                            s.lines().count()
                        }),
                    },
                    Entry::Port(p, c) => p.body.count(Some(c)),
                };
            }
        }
        n
    }
}

/// The jump rules kube-proxy installs outside the restore, at full syncs
/// (`iptablesJumpChains`, then `iptablesKubeletJumpChains`): (table, from, to, comment, NEW only).
const JUMPS: &[(&str, &str, Chain, &str, bool)] = &[
    (
        "filter",
        "INPUT",
        KUBE_EXTERNAL_SERVICES,
        "kubernetes externally-visible service portals",
        true,
    ),
    (
        "filter",
        "FORWARD",
        KUBE_EXTERNAL_SERVICES,
        "kubernetes externally-visible service portals",
        true,
    ),
    (
        "filter",
        "INPUT",
        KUBE_NODEPORTS,
        "kubernetes health check service ports",
        false,
    ),
    (
        "filter",
        "FORWARD",
        KUBE_SERVICES,
        "kubernetes service portals",
        true,
    ),
    (
        "filter",
        "OUTPUT",
        KUBE_SERVICES,
        "kubernetes service portals",
        true,
    ),
    (
        "filter",
        "FORWARD",
        KUBE_FORWARD,
        "kubernetes forwarding rules",
        false,
    ),
    (
        "filter",
        "INPUT",
        KUBE_PROXY_FIREWALL,
        "kubernetes load balancer firewall",
        true,
    ),
    (
        "filter",
        "OUTPUT",
        KUBE_PROXY_FIREWALL,
        "kubernetes load balancer firewall",
        true,
    ),
    (
        "filter",
        "FORWARD",
        KUBE_PROXY_FIREWALL,
        "kubernetes load balancer firewall",
        true,
    ),
    (
        "nat",
        "OUTPUT",
        KUBE_SERVICES,
        "kubernetes service portals",
        false,
    ),
    (
        "nat",
        "PREROUTING",
        KUBE_SERVICES,
        "kubernetes service portals",
        false,
    ),
    (
        "nat",
        "POSTROUTING",
        KUBE_POSTROUTING,
        "kubernetes postrouting rules",
        false,
    ),
    ("filter", "INPUT", KUBE_FIREWALL, "", false),
    ("filter", "OUTPUT", KUBE_FIREWALL, "", false),
];

/// The jump rules of a full sync, as (table, rule), in the order kube-proxy ensures them.
pub fn jump_rules() -> Vec<(&'static str, Rule)> {
    JUMPS
        .iter()
        .map(|&(table, from, to, comment, new_only)| {
            let mut m = Vec::new();
            if new_only {
                m.push(Match::Conntrack {
                    negated: false,
                    states: "NEW",
                });
            }
            if !comment.is_empty() {
                m.push(Match::Comment(Comment::Text(comment)));
            }
            (table, Rule::new(Chain::Fixed(from), m, Target::Jump(to)))
        })
        .collect()
}

/// The Services whose proxy-relevant data (service ports or their endpoints) differ between
/// two synced models: kube-proxy's `UpdatedServices` of its service and endpoint change trackers.
pub fn changed_services(
    before: &HashMap<(String, String), Vec<ServicePortInfo>>,
    after: &HashMap<(String, String), Vec<ServicePortInfo>>,
) -> HashSet<(String, String)> {
    let mut out = HashSet::new();
    for (k, v) in after {
        if before.get(k) != Some(v) {
            out.insert(k.clone());
        }
    }
    for k in before.keys() {
        if !after.contains_key(k) {
            out.insert(k.clone());
        }
    }
    out
}

/// One sync of the iptables proxier: a full sync when there is no prior state (kube-proxy's
/// first sync) or the node's zone changed, else a partial sync writing only the chains of
/// changed Services. Returns the restore payload and the tables after it.
///
/// The result is a pure function of (prior state, model, settings): applying the transaction
/// to the prior tables gives the returned tables. [`sync_owned`] does the same taking the
/// prior state by value.
pub fn sync(
    prior: Option<&IptablesState>,
    model: &ProxyModel,
    settings: &IptablesSettings,
) -> (Transaction, IptablesState) {
    sync_owned(prior.cloned(), model, settings)
}

/// The group of ports of one Service starting at `i`: its end and (namespace, name).
fn group<T>(ports: &[T], i: usize, key: impl Fn(&T) -> (&str, &str)) -> usize {
    let Some(first) = ports.get(i) else { return i };
    let k = key(first);
    i + ports[i..].iter().take_while(|p| key(p) == k).count()
}

fn model_key(p: &ServicePortInfo) -> (&str, &str) {
    (p.name.namespace.as_str(), p.name.name.as_str())
}

fn text_key(p: &Arc<PortText>) -> (&str, &str) {
    p.info.as_ref().map_or(("", ""), model_key)
}

/// [`sync`], taking the prior state by value.
pub fn sync_owned(
    prior: Option<IptablesState>,
    model: &ProxyModel,
    settings: &IptablesSettings,
) -> (Transaction, IptablesState) {
    let full = prior.as_ref().is_none_or(|p| p.zone != model.node.zone);
    // In large-cluster mode kube-proxy deletes stale chains at most once per sync period
    // (`lastIPTablesCleanup`). Syncs here carry no clock: as in kube-proxy's test proxier (sync
    // period 0, which kube-oracle runs), the period has always passed, so every sync cleans up.
    let (old, mut slices, mut zone, mut next_seq) = match prior {
        Some(p) => {
            let IptablesState {
                tables,
                slices,
                zone,
                next_seq,
                ..
            } = p;
            (Arc::unwrap_or_clone(tables), slices, zone, next_seq)
        }
        None => {
            let mut t = Tables::default();
            let mut seq = 0;
            for (name, list) in [("filter", &mut t.filter), ("nat", &mut t.nat)] {
                for b in builtin_chains(name) {
                    list.push(FixedChain {
                        chain: Chain::Fixed(b),
                        seq,
                        body: FixedBody::Text(String::new()),
                    });
                    seq += 1;
                }
            }
            (t, HashMap::new(), String::new(), seq)
        }
    };
    let Tables {
        mut filter,
        mut nat,
        tx: old_tx,
    } = old;
    if full {
        for (table, rule) in jump_rules() {
            let list = if table == "nat" { &mut nat } else { &mut filter };
            if let Target::Jump(to) = rule.target
                && !list.iter().any(|f| f.chain == to)
            {
                list.push(FixedChain {
                    chain: to,
                    seq: next_seq,
                    body: FixedBody::Text(String::new()),
                });
                next_seq += 1;
            }
            let line = format!("{rule}\n");
            if let Some(f) = list.iter_mut().find(|f| f.chain == rule.chain) {
                match &mut f.body {
                    FixedBody::Text(t) => {
                        if !t
                            .lines()
                            .any(|l| l.len() + 1 == line.len() && line.starts_with(l))
                        {
                            t.insert_str(0, &line);
                        }
                    }
                    FixedBody::Tx => {}
                }
            }
        }
    }
    // The fixed chains this sync declares (created or flushed); chains it leaves alone keep
    // their rules from the transaction that wrote them.
    let mut text = tx_text(settings, Arc::new(Vec::new()), Written::All, Vec::new());
    for (list, decls, nat_table) in [
        (&mut filter, &text.filter_decls, false),
        (&mut nat, &text.nat_decls, true),
    ] {
        for f in list.iter_mut() {
            if f.body == FixedBody::Tx && !decls.contains(&f.chain) {
                let mut t = String::new();
                if let Some(tx) = &old_tx {
                    tx.write_fixed_chain(nat_table, f.chain, &mut t);
                }
                f.body = FixedBody::Text(t);
            }
        }
        for c in decls {
            match list.iter_mut().find(|f| f.chain == *c) {
                Some(f) => f.body = FixedBody::Tx,
                None => {
                    list.push(FixedChain {
                        chain: *c,
                        seq: next_seq,
                        body: FixedBody::Tx,
                    });
                    next_seq += 1;
                }
            }
        }
    }

    let slice_changed = update_slices(&mut slices, &model.slice_digests);
    let large = model.large_cluster_mode();
    let mut scratch = Scratch::default();
    let old_ports: &[Arc<PortText>] = old_tx.as_ref().map_or(&[], |t| t.ports.as_slice());
    let mut ports: Vec<Arc<PortText>> = Vec::with_capacity(model.ports.len());
    let mut written: Vec<u32> = Vec::new();
    let mut stale: Vec<Chain> = Vec::new();
    let render = |port: &ServicePortInfo, scratch: &mut Scratch| {
        let mut p = render_port(port, settings, large, true, scratch);
        p.info = Some(port.clone());
        p
    };
    if full {
        // Chains already in the table keep their place; the others are deleted.
        let existing: FastMap<Chain, u64> = old_ports
            .iter()
            .flat_map(|p| p.all_chains().zip(p.seqs.iter().copied()))
            .collect();
        for port in &model.ports {
            let mut p = render(port, &mut scratch);
            p.seqs = p
                .chains
                .iter()
                .map(|c| {
                    existing.get(c).copied().unwrap_or_else(|| {
                        next_seq += 1;
                        next_seq - 1
                    })
                })
                .collect();
            ports.push(Arc::new(p));
        }
        if !existing.is_empty() {
            let active: FastSet<Chain> = ports.iter().flat_map(|p| p.chains.iter().copied()).collect();
            stale.extend(existing.keys().filter(|c| !active.contains(c)).copied());
        }
        assign_extra(&mut ports, 0..model.ports.len(), &existing, &mut next_seq);
    } else {
        // Both port lists are sorted by Service: walked side by side.
        let (mut i, mut o) = (0, 0);
        let mut fresh: Vec<usize> = Vec::new();
        let mut existing: FastMap<Chain, u64> = FastMap::default();
        loop {
            let new_key = model.ports.get(i).map(model_key);
            let old_key = old_ports.get(o).map(text_key);
            match (new_key, old_key) {
                (None, None) => break,
                (Some(n), Some(k)) if n == k => {
                    let (ie, oe) = (group(&model.ports, i, model_key), group(old_ports, o, text_key));
                    let (new_ps, old_ps) = (&model.ports[i..ie], &old_ports[o..oe]);
                    let same = new_ps.len() == old_ps.len()
                        && new_ps.iter().zip(old_ps).all(|(a, b)| b.info.as_ref() == Some(a))
                        && slice_changed
                            .binary_search_by(|(a, b)| (a.as_str(), b.as_str()).cmp(&n))
                            .is_err();
                    if same {
                        for p in old_ps {
                            if p.extra.is_empty() {
                                ports.push(p.clone());
                            } else {
                                // Chains made by a rule alone are not active: deleted now.
                                stale.extend(p.extra.iter().copied());
                                let mut q = PortText::clone(p);
                                q.extra.clear();
                                q.seqs.truncate(q.chains.len());
                                ports.push(Arc::new(q));
                            }
                        }
                    } else {
                        existing.clear();
                        existing.extend(
                            old_ps
                                .iter()
                                .flat_map(|p| p.all_chains().zip(p.seqs.iter().copied())),
                        );
                        let start = ports.len();
                        for port in new_ps {
                            let mut p = render(port, &mut scratch);
                            p.seqs = p
                                .chains
                                .iter()
                                .map(|c| {
                                    existing.get(c).copied().unwrap_or_else(|| {
                                        next_seq += 1;
                                        next_seq - 1
                                    })
                                })
                                .collect();
                            written.push(
                                u32::try_from(ports.len()).expect("invariant: fewer than 2^32 service ports"),
                            );
                            ports.push(Arc::new(p));
                        }
                        let active: FastSet<Chain> = ports[start..]
                            .iter()
                            .flat_map(|p| p.chains.iter().copied())
                            .collect();
                        stale.extend(existing.keys().filter(|c| !active.contains(c)).copied());
                        let end = ports.len();
                        assign_extra(&mut ports, start..end, &existing, &mut next_seq);
                        fresh.push(start);
                    }
                    i = ie;
                    o = oe;
                }
                (Some(n), k) if k.is_none_or(|k| n < k) => {
                    let ie = group(&model.ports, i, model_key);
                    let start = ports.len();
                    for port in &model.ports[i..ie] {
                        let mut p = render(port, &mut scratch);
                        p.seqs = (0..p.chains.len())
                            .map(|_| {
                                next_seq += 1;
                                next_seq - 1
                            })
                            .collect();
                        written.push(
                            u32::try_from(ports.len()).expect("invariant: fewer than 2^32 service ports"),
                        );
                        ports.push(Arc::new(p));
                    }
                    let end = ports.len();
                    assign_extra(&mut ports, start..end, &FastMap::default(), &mut next_seq);
                    i = ie;
                }
                _ => {
                    // A Service gone: all its chains are deleted.
                    let oe = group(old_ports, o, text_key);
                    for p in &old_ports[o..oe] {
                        stale.extend(p.all_chains());
                    }
                    o = oe;
                }
            }
        }
    }
    stale.sort_unstable();
    stale.dedup();
    text.ports = Arc::new(ports);
    text.written = if full {
        Written::All
    } else {
        Written::Some(written)
    };
    text.stale = stale;
    let text = Arc::new(text);
    if zone != model.node.zone {
        zone.clone_from(&model.node.zone);
    }
    let tables = Tables {
        filter,
        nat,
        tx: Some(text.clone()),
    };
    (
        Transaction::new(full, text),
        IptablesState::with_tables(tables, slices, zone, next_seq),
    )
}

/// Gives the chains the new ports in `range` write without declaring a place after every
/// declared chain (as a restore creates them: at their first rule).
fn assign_extra(
    ports: &mut [Arc<PortText>],
    range: std::ops::Range<usize>,
    existing: &FastMap<Chain, u64>,
    next_seq: &mut u64,
) {
    for p in &mut ports[range] {
        if p.extra.is_empty() {
            continue;
        }
        if let Some(p) = Arc::get_mut(p) {
            for c in &p.extra {
                let seq = existing.get(c).copied().unwrap_or_else(|| {
                    *next_seq += 1;
                    *next_seq - 1
                });
                p.seqs.push(seq);
            }
        }
    }
}

/// Brings `known` (slice digests by Service) up to `now`; returns the Services whose slices
/// changed at all, sorted.
fn update_slices(
    known: &mut HashMap<(String, String), u64>,
    now: &HashMap<(String, String), u64>,
) -> Vec<(String, String)> {
    let mut changed = Vec::new();
    for (k, d) in now {
        match known.get_mut(k) {
            Some(old) if *old == *d => {}
            Some(old) => {
                *old = *d;
                changed.push(k.clone());
            }
            None => {
                known.insert(k.clone(), *d);
                changed.push(k.clone());
            }
        }
    }
    if known.len() != now.len() {
        known.retain(|k, _| {
            let keep = now.contains_key(k);
            if !keep {
                changed.push(k.clone());
            }
            keep
        });
    }
    changed.sort_unstable();
    changed
}
