//! Full and partial syncs (KEP-3453) as kube-proxy v1.37.2's iptables proxier runs them, and
//! the tables they leave behind.
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/iptables/proxier.go` (`syncProxyRules`).
//!
//! The tables are kept as the text of the syncs that wrote them: each service port's rendered
//! rules ([`PortText`]) are shared by the transaction, the tables, and every later partial sync
//! in which its Service does not change. The ports are held in blocks of whole Services with
//! their lines of the all-services chains concatenated ([`Block`]); a partial sync tells the
//! changed Services by the model's per-Service digests, renders only those, rebuilds only their
//! blocks and takes every other block over as it is, so its payload (which rewrites
//! `KUBE-SERVICES` in full, as kube-proxy's does) is a few dozen shared segments.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use indexmap::IndexMap;
use serde::Serialize;

use super::blocks::{BLOCK_PORTS, Block, ListBuilder, PortList, ServiceRec};
use super::build::{
    IptablesSettings, Place, Scratch, SharedText, Transaction, body_estimate, render_port, render_port_into,
    text_of, tx_text,
};
use super::text::{
    Lines, Many, PortText, Run, Seqs, SharedBuffers, Text, TxText, Typed, Written, fix_probabilities,
    parse_table, write_decl,
};
use super::types::*;
use crate::proxy::model::Digests;
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
    /// The settings it was synced with.
    settings: Option<IptablesSettings>,
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
                for (c, seq) in p.chain_seqs() {
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
    /// The node zone of the synced model (a change forces a full sync).
    #[serde(skip)]
    zone: String,
    /// The creation order the next new chain gets.
    #[serde(skip)]
    next_seq: u64,
}

impl PartialEq for IptablesState {
    fn eq(&self, other: &Self) -> bool {
        self.zone == other.zone
            && self.synced() == other.synced()
            && self.to_save_text() == other.to_save_text()
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
            settings: None,
        };
        IptablesState {
            filter: Typed::ready(filter),
            nat: Typed::ready(nat),
            tables: Arc::new(tables),
            zone: String::new(),
            next_seq: seq + 1,
        }
    }

    fn with_tables(tables: Tables, zone: String, next_seq: u64) -> Self {
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
            zone,
            next_seq,
        }
    }

    /// The Services synced, with their digests.
    fn synced(&self) -> Vec<(&str, u64)> {
        let mut out = Vec::new();
        if let Some(tx) = &self.tables.tx {
            for b in &tx.ports.blocks {
                out.extend(b.services.iter().map(|s| &*s.key).zip(b.digests.iter().copied()));
            }
        }
        out
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
    let (old, mut zone, mut next_seq) = match prior {
        Some(p) => {
            let IptablesState {
                tables,
                zone,
                next_seq,
                ..
            } = p;
            (Arc::unwrap_or_clone(tables), zone, next_seq)
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
            (t, String::new(), seq)
        }
    };
    let Tables {
        mut filter,
        mut nat,
        tx: old_tx,
        settings: old_settings,
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
    let mut text = match (&old_tx, &old_settings) {
        // The rules around the service ports depend on the settings alone: those of the last
        // sync, when its settings were these.
        (Some(t), Some(s)) if s == settings => TxText {
            ports: PortList::default(),
            shared: Vec::new(),
            written: Written::All,
            filter_decls: t.filter_decls.clone(),
            filter_pre: t.filter_pre.clone(),
            filter_post: t.filter_post.clone(),
            nat_decls: t.nat_decls.clone(),
            nat_pre: t.nat_pre.clone(),
            nat_post: t.nat_post.clone(),
            stale: Vec::new(),
        },
        _ => tx_text(settings, PortList::default(), Written::All, Vec::new()),
    };
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

    let large = model.large_cluster_mode();
    let digests = model.service_digests();
    let mut scratch = Scratch::default();
    let empty = PortList::default();
    let old_list: &PortList = old_tx.as_ref().map_or(&empty, |t| &t.ports);
    let mut written: Vec<u32> = Vec::new();
    let mut stale: Vec<Chain> = Vec::new();
    let ports = if full {
        full_ports(
            model,
            &digests,
            old_list,
            settings,
            large,
            &mut next_seq,
            &mut stale,
        )
    } else {
        let mut w = Walk {
            model,
            digests: &digests,
            settings,
            large,
            scratch: &mut scratch,
            out: ListBuilder::with_capacity(old_list.blocks.len() + 2),
            written: &mut written,
            stale: &mut stale,
            next_seq: &mut next_seq,
            existing: FastMap::default(),
            i: 0,
        };
        for ob in &old_list.blocks {
            w.block(ob);
        }
        while w.i < digests.digests.len() {
            w.insert();
        }
        (w.out.finish(), Vec::new())
    };
    let (ports, shared) = ports;
    stale.sort_unstable();
    stale.dedup();
    text.ports = ports;
    text.shared = shared;
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
        settings: Some(settings.clone()),
    };
    (
        Transaction::new(full, text),
        IptablesState::with_tables(tables, zone, next_seq),
    )
}

/// Gives the chains a new port writes without declaring a place after every declared chain
/// (as a restore creates them: at their first rule).
fn assign_extra(p: &mut PortText, existing: &FastMap<Chain, u64>, next_seq: &mut u64) {
    if p.extra.is_empty() {
        return;
    }
    let mut list: Vec<u64> = p.chain_seqs().take(p.chains.len()).map(|(_, s)| s).collect();
    for c in &p.extra {
        let seq = existing.get(c).copied().unwrap_or_else(|| {
            *next_seq += 1;
            *next_seq - 1
        });
        list.push(seq);
    }
    p.seqs = Seqs::List(list);
}

/// The creation order of each declared chain of `p`: its place in the tables when it is
/// there already, else the next one.
fn assign_seqs(p: &mut PortText, existing: &FastMap<Chain, u64>, next_seq: &mut u64) {
    let start = *next_seq;
    // A list only once a chain is found in the tables: new chains are consecutive.
    let mut list: Option<Vec<u64>> = None;
    for (i, c) in p.chains.iter().enumerate() {
        match existing.get(c) {
            Some(&seq) => list
                .get_or_insert_with(|| {
                    let mut l = Vec::with_capacity(p.chains.len());
                    l.extend(start..start + i as u64);
                    l
                })
                .push(seq),
            None => {
                if let Some(l) = &mut list {
                    l.push(*next_seq);
                }
                *next_seq += 1;
            }
        }
    }
    p.seqs = match list {
        Some(l) => Seqs::List(l),
        None => Seqs::From(start),
    };
}

/// A Service's key as blocks hold it: `namespace\0name` (ordered as (namespace, name)),
/// written in `buf` (reused) and shared from there (one allocation).
fn service_key(p: &ServicePortInfo, buf: &mut String) -> Arc<str> {
    buf.clear();
    buf.push_str(&p.name.namespace);
    buf.push('\0');
    buf.push_str(&p.name.name);
    Arc::from(buf.as_str())
}

/// (namespace, name) of a block's Service key.
fn split_key(k: &str) -> (&str, &str) {
    k.split_once('\0').unwrap_or((k, ""))
}

/// The ports of a full sync: every port rendered; chains already in the tables keep their
/// place, the others are deleted.
fn full_ports(
    model: &ProxyModel,
    digests: &Digests,
    old: &PortList,
    settings: &IptablesSettings,
    large: bool,
    next_seq: &mut u64,
    stale: &mut Vec<Chain>,
) -> (PortList, Vec<SharedBuffers>) {
    let existing: FastMap<Chain, u64> = old.iter().flat_map(|p| p.chain_seqs()).collect();
    let mut scratch = Scratch::default();
    let mut ports: Vec<PortText> = Vec::with_capacity(model.ports.len());
    // The ports' own chains are rendered into buffers of about `SHARED` bytes, each shared by
    // the ports rendered into it (a few allocations in all, rather than some per port).
    const SHARED: usize = 256 * 1024;
    // Rendered as bytes, each buffer checked as text once, when complete; the declarations
    // into a buffer of their own beside each (so that both read as runs of the payload), the
    // ports' chains and runs into lists beside them.
    type Full = (String, String, Vec<Chain>, Vec<Run>);
    let mut buffers: Vec<Full> = Vec::new();
    let mut places: Vec<(usize, Place)> = Vec::with_capacity(model.ports.len());
    let mut shared = SharedText {
        rules: Lines {
            text: Vec::new(),
            runs: Vec::with_capacity(16),
        },
        head: Lines::with_capacity(512, 4),
        ..SharedText::default()
    };
    for port in &model.ports {
        let need = body_estimate(port);
        if shared.rules.text.len() + need > shared.rules.text.capacity() {
            let cap = need.max(SHARED);
            let full = std::mem::replace(&mut shared.rules.text, Vec::with_capacity(cap));
            let decls = std::mem::replace(&mut shared.decls, Vec::with_capacity(cap / 4));
            let chains = std::mem::replace(&mut shared.chains, Vec::with_capacity(cap / 256));
            let runs = std::mem::replace(&mut shared.runs, Vec::with_capacity(cap / 256));
            if !full.is_empty() || !decls.is_empty() || !chains.is_empty() {
                buffers.push((text_of(full), text_of(decls), chains, runs));
            }
        }
        let (p, place) = render_port_into(port, settings, large, &mut scratch, &mut shared);
        places.push((buffers.len(), place));
        ports.push(p);
    }
    buffers.push((
        text_of(shared.rules.text),
        text_of(shared.decls),
        shared.chains,
        shared.runs,
    ));
    type Lists = (Arc<Vec<Chain>>, Arc<Vec<Run>>);
    let lists: Vec<Lists> = buffers
        .iter_mut()
        .map(|b| {
            (
                Arc::new(std::mem::take(&mut b.2)),
                Arc::new(std::mem::take(&mut b.3)),
            )
        })
        .collect();
    let buffers: Vec<SharedBuffers> = buffers
        .into_iter()
        .map(|(rules, decls, _, _)| SharedBuffers {
            rules: Arc::new(rules),
            decls: Arc::new(decls),
        })
        .collect();
    for (p, &(b, at)) in ports.iter_mut().zip(&places) {
        if let (Some(buf), Some((chains, runs))) = (buffers.get(b), lists.get(b)) {
            p.head.text = Text::Shared(buf.rules.clone(), at.head, at.body);
            p.body.text = Text::Shared(buf.rules.clone(), at.body, at.body_end);
            p.decls = Text::Shared(buf.decls.clone(), at.decls, at.decls_end);
            p.chains = Many::Shared(chains.clone(), at.chains, at.chains_end);
            p.body.runs = Many::Shared(runs.clone(), at.runs, at.head_runs);
            p.head.runs = Many::Shared(runs.clone(), at.head_runs, at.runs_end);
        }
        assign_seqs(p, &existing, next_seq);
    }
    if !existing.is_empty() {
        let active: FastSet<Chain> = ports.iter().flat_map(|p| p.chains.iter().copied()).collect();
        stale.extend(existing.keys().filter(|c| !active.contains(c)).copied());
    }
    for p in &mut ports {
        assign_extra(p, &existing, next_seq);
    }
    let mut out = ListBuilder::with_capacity(model.ports.len() / BLOCK_PORTS + 2);
    let mut ports = ports.into_iter();
    let mut start = 0usize;
    let mut key_buf = String::new();
    for (&d, &end) in digests.digests.iter().zip(&digests.ends) {
        let end = end as usize;
        let key = model
            .ports
            .get(start)
            .map_or_else(|| Arc::from(""), |p| service_key(p, &mut key_buf));
        for p in ports.by_ref().take(end - start) {
            out.port(Arc::new(p));
        }
        out.end_service(
            ServiceRec {
                key,
                ports: u32::try_from(end - start).expect("invariant: fewer than 2^32 service ports"),
            },
            d,
        );
        start = end;
    }
    (out.finish(), buffers)
}

/// A partial sync's walk over the prior blocks and the model's Services (both sorted by
/// Service): blocks whose Services all kept their digests are taken over whole; the others
/// are rebuilt, rendering the changed and new Services.
struct Walk<'a, 'm> {
    model: &'m ProxyModel,
    digests: &'a Digests,
    settings: &'a IptablesSettings,
    large: bool,
    scratch: &'a mut Scratch,
    out: ListBuilder,
    written: &'a mut Vec<u32>,
    stale: &'a mut Vec<Chain>,
    next_seq: &'a mut u64,
    existing: FastMap<Chain, u64>,
    /// The next Service of the model.
    i: usize,
}

impl<'m> Walk<'_, 'm> {
    /// The ports of the model's Service `i`.
    fn ports(&self, i: usize) -> &'m [ServicePortInfo] {
        let start = match i.checked_sub(1) {
            Some(j) => self.digests.ends.get(j).map_or(0, |&e| e as usize),
            None => 0,
        };
        let end = self.digests.ends.get(i).map_or(start, |&e| e as usize);
        self.model.ports.get(start..end).unwrap_or(&[])
    }

    fn key(&self, i: usize) -> (&'m str, &'m str) {
        self.ports(i)
            .first()
            .map_or(("", ""), |p| (p.name.namespace.as_str(), p.name.name.as_str()))
    }

    fn block(&mut self, ob: &Arc<Block>) {
        let n = ob.services.len();
        if !ob.has_extra
            && n > 0
            && self.digests.digests.get(self.i..self.i + n) == Some(ob.digests.as_slice())
        {
            self.out.block(ob);
            self.i += n;
            return;
        }
        let mut at = 0usize;
        for (k, rec) in ob.services.iter().enumerate() {
            let end = at + rec.ports as usize;
            let old_ps = ob.ports.get(at..end).unwrap_or(&[]);
            at = end;
            let d = ob.digests.get(k).copied();
            if d.is_some() && self.digests.digests.get(self.i).copied() == d {
                // The same Service (its name is in the digest), unchanged.
                self.keep(old_ps);
                self.out.end_service(rec.clone(), d.unwrap_or(0));
                self.i += 1;
                continue;
            }
            let key = split_key(&rec.key);
            while self.i < self.digests.digests.len() && self.key(self.i) < key {
                self.insert();
            }
            if self.i < self.digests.digests.len() && self.key(self.i) == key {
                let d = self.digests.digests.get(self.i).copied().unwrap_or(0);
                if ob.digests.get(k) == Some(&d) {
                    self.keep(old_ps);
                } else {
                    self.change(old_ps);
                }
                let ports = u32::try_from(self.ports(self.i).len())
                    .expect("invariant: fewer than 2^32 service ports");
                self.out.end_service(
                    ServiceRec {
                        key: rec.key.clone(),
                        ports,
                    },
                    d,
                );
                self.i += 1;
            } else {
                // A Service gone: all its chains are deleted.
                for p in old_ps {
                    self.stale.extend(p.all_chains());
                }
            }
        }
    }

    /// An unchanged Service: its ports as they are.
    fn keep(&mut self, old_ps: &[Arc<PortText>]) {
        for p in old_ps {
            if p.extra.is_empty() {
                self.out.port(p.clone());
            } else {
                // Chains made by a rule alone are not active: deleted now.
                self.stale.extend(p.extra.iter().copied());
                let mut q = PortText::clone(p);
                q.extra.clear();
                q.seqs.truncate(q.chains.len());
                self.out.port(Arc::new(q));
            }
        }
    }

    fn render(&mut self, port: &ServicePortInfo) -> PortText {
        render_port(port, self.settings, self.large, true, self.scratch)
    }

    /// A changed Service: rendered, its chains keeping their places.
    fn change(&mut self, old_ps: &[Arc<PortText>]) {
        self.existing.clear();
        self.existing.extend(old_ps.iter().flat_map(|p| p.chain_seqs()));
        let mut new_ps: Vec<PortText> = Vec::new();
        for port in self.ports(self.i) {
            let mut p = self.render(port);
            assign_seqs(&mut p, &self.existing, self.next_seq);
            new_ps.push(p);
        }
        let active: FastSet<Chain> = new_ps.iter().flat_map(|p| p.chains.iter().copied()).collect();
        self.stale
            .extend(self.existing.keys().filter(|c| !active.contains(c)).copied());
        for mut p in new_ps {
            assign_extra(&mut p, &self.existing, self.next_seq);
            self.written
                .push(u32::try_from(self.out.len()).expect("invariant: fewer than 2^32 service ports"));
            self.out.port(Arc::new(p));
        }
    }

    /// A new Service (the model's next): rendered, its chains created.
    fn insert(&mut self) {
        let ports = self.ports(self.i);
        let d = self.digests.digests.get(self.i).copied().unwrap_or(0);
        let none = FastMap::default();
        let mut new_ps: Vec<PortText> = Vec::with_capacity(ports.len());
        for port in ports {
            let mut p = self.render(port);
            p.seqs = Seqs::From(*self.next_seq);
            *self.next_seq += p.chains.len() as u64;
            new_ps.push(p);
        }
        for mut p in new_ps {
            assign_extra(&mut p, &none, self.next_seq);
            self.written
                .push(u32::try_from(self.out.len()).expect("invariant: fewer than 2^32 service ports"));
            self.out.port(Arc::new(p));
        }
        let key = ports
            .first()
            .map_or_else(|| Arc::from(""), |p| service_key(p, &mut String::new()));
        self.out.end_service(
            ServiceRec {
                key,
                ports: u32::try_from(ports.len()).expect("invariant: fewer than 2^32 service ports"),
            },
            d,
        );
        self.i += 1;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use svcnet_model::{EndpointSlice, Node, Service};

    use super::*;
    use crate::iptables::build::{Scope, build_transaction};
    use crate::proxy::ProxyConfig;

    /// The Services, slices and Nodes of a `v1` `List`.
    fn objects(state: &serde_json::Value) -> (Vec<Service>, Vec<EndpointSlice>, Vec<Node>) {
        let set = svcnet_test_support::objects::object_set(state).expect("a v1 List");
        (set.services, set.endpoint_slices, set.nodes)
    }

    /// The Services a partial sync from `before` to `after` must rewrite, found the slow way:
    /// their ports compared in full, their slices' digests compared.
    fn changed(before: &ProxyModel, after: &ProxyModel) -> HashSet<(String, String)> {
        let by_service = |m: &ProxyModel| {
            let mut out: HashMap<(String, String), Vec<ServicePortInfo>> = HashMap::new();
            for p in &m.ports {
                out.entry((p.name.namespace.to_string(), p.name.name.to_string()))
                    .or_default()
                    .push(p.clone());
            }
            out
        };
        let mut out = changed_services(&by_service(before), &by_service(after));
        for p in &after.ports {
            let k = (p.name.namespace.to_string(), p.name.name.to_string());
            if before.slice_digest(&k.0, &k.1) != after.slice_digest(&k.0, &k.1) {
                out.insert(k);
            }
        }
        out
    }

    fn chains(s: &IptablesState) -> BTreeMap<String, Vec<String>> {
        let mut out = BTreeMap::new();
        for t in [&s.filter, &s.nat] {
            for (c, rules) in &t.chains {
                out.insert(
                    format!("{} {c}", t.name),
                    rules.iter().map(|r| r.to_string()).collect(),
                );
            }
        }
        out
    }

    /// Over generated histories (a full sync, then partial syncs; blocks of a few ports here):
    /// the segments of every payload concatenate to the text the per-port writers give; a
    /// partial payload is the one the typed build writes for the Services that changed (found
    /// by comparing the models in full); the tables are those of a full sync of the same state.
    #[test]
    fn partial_syncs_over_blocks_write_what_the_flat_writers_and_the_typed_build_write() {
        let (mut partials, mut blocks_kept) = (0, 0);
        for seed in 1..=120u64 {
            let case = svcnet_testgen::generate(seed);
            for (node, ip) in [("node-0", "192.168.0.10"), ("node-2", "fd00:c0a8::12")] {
                let mut config = ProxyConfig::new(node, ip.parse().unwrap());
                config.masquerade_all = seed % 7 == 0;
                let settings = IptablesSettings::new(&config).unwrap();
                let mut prior: Option<(IptablesState, ProxyModel)> = None;
                for (k, state) in case.states.iter().enumerate() {
                    let what = format!("seed {seed} {node} state {k}");
                    let (services, slices, nodes) = objects(state);
                    let n = nodes.iter().find(|n| n.metadata.name() == node);
                    let model = ProxyModel::build(&services, &slices, n, &config);
                    let (tx, next) = sync(prior.as_ref().map(|p| &p.0), &model, &settings);
                    let mut flat = String::new();
                    tx.text.write_filter(&mut flat);
                    tx.text.write_nat(&mut flat);
                    let segs = tx.segments();
                    let joined: String = segs.iter().collect();
                    assert_eq!(joined, flat, "{what}");
                    assert_eq!(segs.byte_len(), flat.len(), "{what}");
                    assert_eq!(tx.to_restore_text(), flat, "{what}");
                    if tx.full {
                        assert_eq!(tx.text.len_hint(), flat.len(), "{what}");
                    }
                    let mut io = Vec::new();
                    tx.write_io(&mut io).unwrap();
                    assert_eq!(io, flat.as_bytes(), "{what}");
                    if let Some((before, before_model)) = &prior
                        && !tx.full
                    {
                        partials += 1;
                        let set = changed(before_model, &model);
                        let existing = before.nat_chains();
                        let reference =
                            build_transaction(&model, &settings, Scope::Partial(&set), Some(&existing));
                        let mut want = String::new();
                        reference.text.write_filter(&mut want);
                        reference.text.write_nat(&mut want);
                        assert_eq!(flat, want, "{what}");
                        let old: Vec<*const Block> = match &before.tables.tx {
                            Some(t) => t.ports.blocks.iter().map(Arc::as_ptr).collect(),
                            None => Vec::new(),
                        };
                        blocks_kept += tx
                            .text
                            .ports
                            .blocks
                            .iter()
                            .filter(|b| old.contains(&Arc::as_ptr(b)))
                            .count();
                    }
                    let (_, fresh) = sync(None, &model, &settings);
                    assert_eq!(chains(&next), chains(&fresh), "{what}");
                    // Every block but the last is about full, of whole Services.
                    if let Some(t) = &next.tables.tx {
                        for b in &t.ports.blocks {
                            let n: u32 = b.services.iter().map(|s| s.ports).sum();
                            assert_eq!(n as usize, b.ports.len(), "{what}");
                            assert_eq!(b.services.len(), b.digests.len(), "{what}");
                        }
                    }
                    prior = Some((next, model));
                }
            }
        }
        assert!(partials > 100, "{partials}");
        assert!(blocks_kept > 100, "{blocks_kept}");
    }
}
