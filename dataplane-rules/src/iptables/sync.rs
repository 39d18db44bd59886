//! Full and partial syncs (KEP-3453) as kube-proxy v1.37.2's iptables proxier runs them, and
//! the tables they leave behind.

use std::collections::{HashMap, HashSet};

use indexmap::IndexMap;
use serde::Serialize;

use super::build::{ActiveChains, IptablesSettings, Line, Scope, Transaction, build_with_chains};
use super::types::*;
use crate::proxy::{ProxyModel, ServicePortInfo};

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
    fn new(name: &'static str) -> Self {
        let mut chains = IndexMap::new();
        for b in builtin_chains(name) {
            chains.insert(Chain::Fixed(b), Vec::new());
        }
        KernelTable { name, chains }
    }

    fn ensure_chain(&mut self, c: Chain) {
        self.chains.entry(c).or_default();
    }

    /// `EnsureRule(Prepend, ...)`: inserts the rule first unless it is there already.
    fn ensure_rule_first(&mut self, r: Rule) {
        let rules = self.chains.entry(r.chain).or_default();
        if !rules.contains(&r) {
            rules.insert(0, r);
        }
    }

    /// Applies one table of a restore payload with `--noflush`: declared chains are created or
    /// flushed, rules appended, `-X` chains deleted.
    fn apply(&mut self, t: &super::build::Table) {
        self.chains.reserve(t.chains.len());
        for c in &t.chains {
            self.chains.entry(*c).or_default().clear();
        }
        // Rules come in runs of one chain: the chain is looked up once per run.
        let mut last: Option<(Chain, usize)> = None;
        for l in &t.lines {
            match l {
                Line::Rule(r) => {
                    let at = match last {
                        Some((c, at)) if c == r.chain => at,
                        _ => {
                            let entry = self.chains.entry(r.chain);
                            let at = entry.index();
                            entry.or_default();
                            last = Some((r.chain, at));
                            at
                        }
                    };
                    if let Some((_, rules)) = self.chains.get_index_mut(at) {
                        rules.push(r.clone());
                    }
                }
                Line::DeleteChain(c) => {
                    self.chains.shift_remove(c);
                    last = None;
                }
            }
        }
    }

    /// Writes the table as `iptables-save` does (`*name`, chain lines, rules chain by chain,
    /// `COMMIT`); loadable by `iptables-restore`. Chain lines read `:NAME - [0:0]`, built-in
    /// chains included (their policy left as it is), as kube-proxy's test fake prints them.
    pub fn write_to(&self, out: &mut String) {
        out.push('*');
        out.push_str(self.name);
        out.push('\n');
        for c in self.chains.keys() {
            out.push(':');
            c.write_to(out);
            out.push_str(" - [0:0]\n");
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

/// The iptables tables of a node after a sync (what `iptables-save` shows), with what the next
/// sync needs to know about the previous one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IptablesState {
    /// The filter table.
    pub filter: KernelTable,
    /// The nat table.
    pub nat: KernelTable,
    /// The synced model's service ports by Service, to tell changed Services.
    #[serde(skip)]
    services: HashMap<(String, String), Vec<ServicePortInfo>>,
    /// The chains each Service kept active in the last sync.
    #[serde(skip)]
    active: ActiveChains,
    /// The synced model's slice digests by Service.
    #[serde(skip)]
    slices: HashMap<(String, String), u64>,
    /// The node zone of the synced model (a change forces a full sync).
    #[serde(skip)]
    zone: String,
}

impl IptablesState {
    /// Tables read from elsewhere (e.g. [`parse_state`](super::parse_state)), with no sync
    /// history: a later [`sync`] from them is a partial sync that knows of no Service.
    pub fn from_tables(filter: KernelTable, nat: KernelTable) -> Self {
        IptablesState {
            filter,
            nat,
            services: HashMap::new(),
            active: ActiveChains::default(),
            slices: HashMap::new(),
            zone: String::new(),
        }
    }

    /// The tables as `iptables-save` prints them (filter, then nat).
    pub fn to_save_text(&self) -> String {
        let mut out = String::with_capacity(
            256 + 160
                * self
                    .filter
                    .chains
                    .values()
                    .chain(self.nat.chains.values())
                    .map(Vec::len)
                    .sum::<usize>(),
        );
        self.filter.write_to(&mut out);
        self.nat.write_to(&mut out);
        out
    }

    /// The service chains of the nat table (`iptables-save -t nat`, `GetChainsFromTable`).
    pub fn nat_chains(&self) -> HashSet<Chain> {
        self.nat.chains.keys().copied().collect()
    }

    /// How many rules the tables hold.
    pub fn rule_count(&self) -> usize {
        self.filter
            .chains
            .values()
            .chain(self.nat.chains.values())
            .map(Vec::len)
            .sum()
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

fn by_service(model: &ProxyModel) -> HashMap<(String, String), Vec<ServicePortInfo>> {
    let mut out: HashMap<(String, String), Vec<ServicePortInfo>> = HashMap::new();
    for p in &model.ports {
        out.entry((p.name.namespace.clone(), p.name.name.clone()))
            .or_default()
            .push(p.clone());
    }
    out
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
/// to the prior tables gives the returned tables. [`sync_owned`] does the same without copying
/// the prior tables.
pub fn sync(
    prior: Option<&IptablesState>,
    model: &ProxyModel,
    settings: &IptablesSettings,
) -> (Transaction, IptablesState) {
    sync_owned(prior.cloned(), model, settings)
}

/// [`sync`], taking the prior state by value (the tables are updated in place).
pub fn sync_owned(
    prior: Option<IptablesState>,
    model: &ProxyModel,
    settings: &IptablesSettings,
) -> (Transaction, IptablesState) {
    let full = prior.as_ref().is_none_or(|p| p.zone != model.node.zone);
    let first = prior.is_none();
    // In large-cluster mode kube-proxy deletes stale chains at most once per sync period
    // (`lastIPTablesCleanup`). Syncs here carry no clock: as in kube-proxy's test proxier (sync
    // period 0, which kube-oracle runs), the period has always passed, so every sync cleans up.
    let mut state = prior.unwrap_or_else(|| IptablesState {
        filter: KernelTable::new("filter"),
        nat: KernelTable::new("nat"),
        services: HashMap::new(),
        active: HashMap::new(),
        slices: HashMap::new(),
        zone: String::new(),
    });
    if full {
        for (table, rule) in jump_rules() {
            let t = if table == "nat" {
                &mut state.nat
            } else {
                &mut state.filter
            };
            if let Target::Jump(to) = rule.target {
                t.ensure_chain(to);
            }
            t.ensure_rule_first(rule);
        }
    }
    // The synced ports and slice digests are brought up to the model in place (only changed
    // Services are copied), telling the changed Services on the way.
    let mut changed = update_services(&mut state.services, model);
    update_slices(&mut state.slices, &model.slice_digests, &mut changed);
    // The nat table's chains before the sync, read in place (no set of them is built).
    let existing = Some(state.nat.chains.keys().copied());
    let (tx, active) = if full {
        build_with_chains(model, settings, Scope::Full, existing, None)
    } else {
        let mut previous = std::mem::take(&mut state.active);
        let known = (!first).then_some(&mut previous);
        build_with_chains(model, settings, Scope::Partial(&changed), existing, known)
    };
    state.filter.apply(&tx.filter);
    state.nat.apply(&tx.nat);
    state.active = active;
    if state.zone != model.node.zone {
        state.zone.clone_from(&model.node.zone);
    }
    (tx, state)
}

/// Brings `known` (service ports by Service) up to the model and returns the Services whose
/// ports changed, as [`changed_services`] tells them; unchanged Services are neither copied nor
/// freed.
fn update_services(
    known: &mut HashMap<(String, String), Vec<ServicePortInfo>>,
    model: &ProxyModel,
) -> HashSet<(String, String)> {
    fn service_of(p: &ServicePortInfo) -> (&str, &str) {
        (p.name.namespace.as_str(), p.name.name.as_str())
    }
    let grouped = model
        .ports
        .windows(2)
        .all(|w| matches!(w, [a, b] if service_of(a) <= service_of(b)));
    if !grouped {
        // Ports of one Service apart: rebuilt from scratch.
        let services = by_service(model);
        let changed = changed_services(known, &services);
        *known = services;
        return changed;
    }
    let mut changed = HashSet::new();
    let mut groups = 0;
    let mut i = 0;
    while let Some(first) = model.ports.get(i) {
        let j = i + model
            .ports
            .get(i..)
            .unwrap_or(&[])
            .iter()
            .take_while(|p| service_of(p) == service_of(first))
            .count();
        let ports = model.ports.get(i..j).unwrap_or(&[]);
        groups += 1;
        let key = (first.name.namespace.clone(), first.name.name.clone());
        match known.get_mut(&key) {
            Some(v) if v.as_slice() == ports => {}
            Some(v) => {
                v.clear();
                v.extend_from_slice(ports);
                changed.insert(key);
            }
            None => {
                known.insert(key.clone(), ports.to_vec());
                changed.insert(key);
            }
        }
        i = j;
    }
    if known.len() != groups {
        let present: HashSet<(&str, &str)> = model.ports.iter().map(service_of).collect();
        known.retain(|k, _| {
            let keep = present.contains(&(k.0.as_str(), k.1.as_str()));
            if !keep {
                changed.insert(k.clone());
            }
            keep
        });
    }
    changed
}

/// Brings `known` (slice digests by Service) up to `now`, adding the Services whose slices
/// changed at all to `changed`.
fn update_slices(
    known: &mut HashMap<(String, String), u64>,
    now: &HashMap<(String, String), u64>,
    changed: &mut HashSet<(String, String)>,
) {
    for (k, d) in now {
        match known.get_mut(k) {
            Some(old) if *old == *d => {}
            Some(old) => {
                *old = *d;
                changed.insert(k.clone());
            }
            None => {
                known.insert(k.clone(), *d);
                changed.insert(k.clone());
            }
        }
    }
    if known.len() != now.len() {
        known.retain(|k, _| {
            let keep = now.contains_key(k);
            if !keep {
                changed.insert(k.clone());
            }
            keep
        });
    }
}
