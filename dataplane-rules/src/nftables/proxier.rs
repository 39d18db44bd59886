//! kube-proxy v1.37.2's nftables `syncProxyRules` as a pure state machine: service ports
//! in, transactions out, the rule set kept in an in-memory [`State`].
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/nftables/proxier.go`.
//!
//! Full syncs write everything (after `setupNFTables`' fixed objects); partial syncs
//! write only the chains of the Services that changed. Set and map elements go through
//! an element store that writes only differences, in both kinds of sync. Chains no
//! longer used are flushed at once and deleted, in a separate transaction, by the first
//! sync after they aged past the grace period ([`NftProxier::age_stale_chains`]).

use super::error::NftError;
use super::input::{NftConfig, NftEndpointView, NftPort, NftServicePort, Protocol};
use super::limits::Limits;
use super::names::{hash_and_truncate, push_hash_and_truncate, truncate_comment};
use super::object::{
    BaseChain, Chain, ChainType, ContainerKind, Counter, Family, Hook, Object, Set, SetFlag, SharedStr, Table,
};
use super::state::{Applying, State};
use super::text::Text;
use super::transaction::Transaction;
use compact_str::CompactString;
use indexmap::IndexMap;
use smallvec::SmallVec;
use std::collections::hash_map::Entry as MapEntry;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fmt::Write as _;
use std::hash::BuildHasher;
use std::net::IpAddr;
use svcnet_model::hash::KeyedState;

/// kube-proxy's table name.
pub const TABLE: &str = "kube-proxy";

const BASE_CHAINS: [(&str, ChainType, Hook, i32); 8] = [
    (
        "filter-prerouting-pre-dnat",
        ChainType::Filter,
        Hook::Prerouting,
        -110,
    ),
    ("filter-output-pre-dnat", ChainType::Filter, Hook::Output, -110),
    ("filter-input", ChainType::Filter, Hook::Input, 0),
    ("filter-forward", ChainType::Filter, Hook::Forward, 0),
    ("filter-output", ChainType::Filter, Hook::Output, 0),
    ("nat-prerouting", ChainType::Nat, Hook::Prerouting, -100),
    ("nat-output", ChainType::Nat, Hook::Output, -100),
    ("nat-postrouting", ChainType::Nat, Hook::Postrouting, 100),
];

/// (destination, source, extra match) of the jumps from the base chains, in order.
const JUMP_CHAINS: [(&str, &str, &str); 11] = [
    ("nodeport-endpoints-check", "filter-input", "ct state new "),
    ("service-endpoints-check", "filter-input", "ct state new "),
    ("service-endpoints-check", "filter-forward", "ct state new "),
    ("service-endpoints-check", "filter-output", "ct state new "),
    ("firewall-check", "filter-prerouting-pre-dnat", "ct state new "),
    ("firewall-check", "filter-output-pre-dnat", "ct state new "),
    ("services", "nat-output", ""),
    ("services", "nat-prerouting", ""),
    ("masquerading", "nat-postrouting", ""),
    ("cluster-ips-check", "filter-forward", "ct state new "),
    ("cluster-ips-check", "filter-output", "ct state new "),
];

const CLUSTER_IPS: usize = 0;
const SERVICE_IPS: usize = 1;
const FIREWALL_IPS: usize = 2;
const NO_ENDPOINT_SERVICES: usize = 3;
const NO_ENDPOINT_NODEPORTS: usize = 4;
const SERVICE_NODEPORTS: usize = 5;
const HAIRPIN: usize = 6;
const LOCALHOST_REJECTS: usize = 7;

/// The element containers kept by the element store, in kube-proxy's cleanup order.
const CONTAINERS: [(ContainerKind, &str); 8] = [
    (ContainerKind::Set, "cluster-ips"),
    (ContainerKind::Map, "service-ips"),
    (ContainerKind::Map, "firewall-ips"),
    (ContainerKind::Map, "no-endpoint-services"),
    (ContainerKind::Map, "no-endpoint-nodeports"),
    (ContainerKind::Map, "service-nodeports"),
    (ContainerKind::Set, "hairpin-connections"),
    (ContainerKind::Map, "localhost-nodeport-reject-ports"),
];

const ALL_PROTOCOLS: [Protocol; 3] = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp];

#[derive(Debug, Clone, Default)]
struct Entry {
    /// The map value (`None` for a set element; compared as `""`).
    value: Option<SharedStr>,
    /// How many Services currently hold this key.
    refs: u32,
}

/// What one Service wrote last: element keys, chains, affinity sets. (A ClusterIP Service
/// with one port writes two keys and one chain: they are kept inline.)
#[derive(Debug, Clone, Default)]
struct ServiceRecord {
    keys: SmallVec<[(u8, SharedStr); 2]>,
    chains: SmallVec<[SharedStr; 1]>,
    /// (Boxed: most Services have none, and the record of every Service is kept: 8
    /// bytes instead of a `Vec`'s 24.)
    #[allow(clippy::box_collection)]
    affinity_sets: Option<Box<Vec<String>>>,
}

impl ServiceRecord {
    fn affinity_sets(&self) -> &[String] {
        self.affinity_sets.as_deref().map_or(&[], Vec::as_slice)
    }
}

/// The result of one sync.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SyncOutput {
    /// Whether this was a full sync.
    pub full: bool,
    /// The transaction deleting aged stale chains, run before the main one, if any.
    pub stale_deletion: Option<Transaction>,
    /// The main transaction (what kube-proxy's tests count the operations of).
    pub main: Transaction,
}

impl SyncOutput {
    /// The transactions to run, in order, each split into chunks of at most
    /// `max_operations` operations.
    pub fn chunks(&self, max_operations: usize) -> Vec<Transaction> {
        let mut out = Vec::new();
        if let Some(t) = &self.stale_deletion {
            out.extend(t.chunks(max_operations));
        }
        out.extend(self.main.chunks(max_operations));
        out
    }
}

/// One Service's new service ports (empty when the Service is gone).
#[derive(Debug, Clone, Copy)]
pub struct ServiceUpdate<'a> {
    /// `namespace/name`.
    pub service: &'a str,
    /// All its service ports of this family.
    pub ports: &'a [NftServicePort],
}

/// kube-proxy's nftables proxier for one IP family, without I/O: it keeps the rule set it
/// has written ([`NftProxier::state`]) and answers each sync with transactions.
///
/// ```
/// use svcnet_rules::nftables::{NftConfig, NftProxier};
/// let mut p = NftProxier::new(NftConfig::new("192.168.0.2".parse().unwrap()));
/// let out = p.sync_full(&[]).unwrap();
/// assert!(out.main.render().starts_with("add table ip kube-proxy"));
/// assert!(p.state().dump().contains("add chain ip kube-proxy services\n"));
/// ```
#[derive(Debug, Clone)]
pub struct NftProxier {
    config: NftConfig,
    limits: Limits,
    state: State,
    /// The key of every map keyed by names (Services, chains, sets, element keys, endpoint
    /// addresses): see [`NftProxier::with_hash_key`].
    hash: KeyedState,
    stores: Vec<HashMap<SharedStr, Entry, KeyedState>>,
    /// The names of [`CONTAINERS`], shared by every element written.
    containers: [SharedStr; CONTAINERS.len()],
    /// By `namespace/name` (inline up to 24 bytes: most names need no allocation).
    services: HashMap<CompactString, ServiceRecord, KeyedState>,
    stale_chains: BTreeMap<String, bool>,
    flushed: bool,
    need_full_sync: bool,
    /// A buffer for the text hashed into chain names.
    scratch: String,
    /// A buffer for the text of element keys and rules.
    text: Text,
    /// The indices of the DNAT rules written into a full sync's transaction since it was
    /// last applied (they reference nothing: see [`State::apply_more_plain`]).
    plain_rules: Vec<usize>,
}

impl NftProxier {
    /// A proxier that has not synced yet (its first sync is full) on an empty kernel.
    pub fn new(config: NftConfig) -> Self {
        Self::with_state(config, State::new())
    }

    /// A proxier starting on a kernel that already holds `state` (kube-proxy restarted):
    /// its first, full sync writes only what is missing or different.
    pub fn with_state(config: NftConfig, state: State) -> Self {
        NftProxier {
            config,
            limits: Limits::default(),
            state,
            hash: KeyedState::default(),
            stores: vec![HashMap::default(); CONTAINERS.len()],
            containers: CONTAINERS.map(|(_, name)| SharedStr::from(name)),
            services: HashMap::default(),
            stale_chains: BTreeMap::new(),
            flushed: false,
            need_full_sync: true,
            scratch: String::new(),
            text: Text::with_capacity(0),
            plain_rules: Vec::new(),
        }
    }

    /// The same proxier with its maps keyed by names (Service names, chain and set names,
    /// element keys, endpoint addresses: all derived from the input) hashed under `hash`
    /// instead of [`KeyedState::default`]'s fixed key: an embedder that reads untrusted
    /// objects passes a secret key against crafted hash collisions (see
    /// [`svcnet_model::hash`]). Output is the same under every key.
    pub fn with_hash_key(mut self, hash: KeyedState) -> Self {
        fn rekey<K: Eq + std::hash::Hash, V>(
            m: HashMap<K, V, KeyedState>,
            hash: KeyedState,
        ) -> HashMap<K, V, KeyedState> {
            let mut out = HashMap::with_capacity_and_hasher(m.len(), hash);
            out.extend(m);
            out
        }
        self.hash = hash;
        self.stores = self.stores.into_iter().map(|m| rekey(m, hash)).collect();
        self.services = rekey(self.services, hash);
        self
    }

    /// Replaces the limits checked before emitting.
    pub fn set_limits(&mut self, limits: Limits) {
        self.limits = limits;
    }

    /// The settings.
    pub fn config(&self) -> &NftConfig {
        &self.config
    }

    /// Changes the Service CIDRs (`OnServiceCIDRsChanged`); used from the next full sync.
    pub fn set_service_cidrs(&mut self, cidrs: Vec<String>) {
        self.config.service_cidrs = cidrs;
    }

    /// Asks for a full next sync (`OnTopologyChange`).
    pub fn request_full_sync(&mut self) {
        self.need_full_sync = true;
    }

    /// Whether the next sync is full.
    pub fn needs_full_sync(&self) -> bool {
        self.need_full_sync
    }

    /// The rule set as the kernel holds it after the last sync.
    pub fn state(&self) -> &State {
        &self.state
    }

    /// Stale chains waiting for deletion, and whether each has aged past the grace period.
    pub fn stale_chains(&self) -> &BTreeMap<String, bool> {
        &self.stale_chains
    }

    /// Lets the grace period (1 s) pass for every stale chain recorded so far: the next
    /// sync deletes them in a separate transaction.
    pub fn age_stale_chains(&mut self) {
        for aged in self.stale_chains.values_mut() {
            *aged = true;
        }
    }

    /// Syncs `ports` (every service port of this family) after the Services named in
    /// `changed` (`namespace/name`) changed; `None` or a pending full sync means a full
    /// sync. Services that have no port in `ports` any more are removed.
    pub fn sync(
        &mut self,
        ports: &[NftServicePort],
        changed: Option<&BTreeSet<String>>,
    ) -> Result<SyncOutput, NftError> {
        self.sync_from(ports, changed)
    }

    /// [`NftProxier::sync`] of service ports of any [`NftPort`] type: a proxy model's
    /// `ports` ([`ServicePortInfo`](crate::ServicePortInfo)) as they are, with no
    /// conversion to [`NftServicePort`].
    pub fn sync_from<P: NftPort>(
        &mut self,
        ports: &[P],
        changed: Option<&BTreeSet<String>>,
    ) -> Result<SyncOutput, NftError> {
        match changed {
            Some(changed) if !self.need_full_sync => {
                let mut by_service: IndexMap<String, Vec<NftServicePort>> = IndexMap::new();
                for name in changed {
                    by_service.entry(name.clone()).or_default();
                }
                for p in ports {
                    let key = service_key(p);
                    if let Some(v) = by_service.get_mut(&key) {
                        v.push(p.to_nft_port());
                    }
                }
                let updates: Vec<ServiceUpdate<'_>> = by_service
                    .iter()
                    .map(|(k, v)| ServiceUpdate { service: k, ports: v })
                    .collect();
                self.sync_partial(&updates)
            }
            _ => self.sync_full_from(ports),
        }
    }

    /// A full sync of every service port.
    pub fn sync_full(&mut self, ports: &[NftServicePort]) -> Result<SyncOutput, NftError> {
        self.sync_full_from(ports)
    }

    /// [`NftProxier::sync_full`] of service ports of any [`NftPort`] type: a proxy model's
    /// `ports` ([`ServicePortInfo`](crate::ServicePortInfo)) as they are, with no
    /// conversion to [`NftServicePort`] (the same text, without copying every port's
    /// names and endpoint lists first).
    ///
    /// ```
    /// use svcnet_rules::nftables::{NftConfig, NftProxier};
    /// use svcnet_rules::{ProxyConfig, ProxyModel};
    /// let config = ProxyConfig::new("node-a", "192.168.0.2".parse().unwrap());
    /// let model = ProxyModel::build(&[], &[], None, &config);
    /// let mut p = NftProxier::new(NftConfig::from_proxy(&config, false).unwrap());
    /// let out = p.sync_full_from(&model.ports).unwrap();
    /// assert!(out.main.render().starts_with("add table ip kube-proxy"));
    /// ```
    pub fn sync_full_from<P: NftPort>(&mut self, ports: &[P]) -> Result<SyncOutput, NftError> {
        let r = self.full_inner(ports);
        if r.is_err() {
            // the element store may be half updated: the next sync re-reads the kernel
            self.need_full_sync = true;
        }
        r
    }

    fn full_inner<P: NftPort>(&mut self, ports: &[P]) -> Result<SyncOutput, NftError> {
        let stale_deletion = self.delete_aged_chains();
        let mut tx = Transaction::new(self.config.family, TABLE);
        // about six operations per service port (two elements, a chain added and flushed,
        // its rules), and the setup's
        tx.operations.reserve(ports.len() * 6 + 128);
        self.setup(&mut tx)?;
        // readOrReset: the element store re-reads what the kernel holds
        for (i, (kind, name)) in CONTAINERS.iter().enumerate() {
            let store = &mut self.stores[i];
            store.clear();
            let t = self.state.table(self.config.family, TABLE);
            let c = t.and_then(|t| match kind {
                ContainerKind::Set => t.sets.get(*name),
                ContainerKind::Map => t.maps.get(*name),
            });
            if let Some(c) = c {
                for (k, e) in &c.elements {
                    store.insert(
                        k.clone(),
                        Entry {
                            value: e.value.clone(),
                            refs: 0,
                        },
                    );
                }
            }
        }
        // most Services write one element into each of these
        self.stores[CLUSTER_IPS].reserve(ports.len());
        self.stores[SERVICE_IPS].reserve(ports.len());
        let mut existing_chains: Vec<SharedStr> = self
            .state
            .table(self.config.family, TABLE)
            .map(|t| t.chains.keys().filter(|c| c.contains('/')).cloned().collect())
            .unwrap_or_default();
        existing_chains.sort_unstable();
        let mut existing_affinity: Vec<SharedStr> = self
            .state
            .table(self.config.family, TABLE)
            .map(|t| {
                t.sets
                    .keys()
                    .filter(|s| s.starts_with("affinity-"))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        existing_affinity.sort_unstable();
        self.services.clear();
        self.services.reserve(ports.len());
        // From here on the transaction is applied as it is written (each Service's
        // operations while they are still in the cache), and undone if anything fails:
        // as if it had been checked and applied at the end.
        let mut state = std::mem::take(&mut self.state);
        let mut applying = Applying::new(&tx);
        self.plain_rules.clear();
        state.apply_more(&mut applying, &tx);
        // most Services write a chain and one element into each of these
        state.reserve(
            self.config.family,
            TABLE,
            ports.len(),
            &[
                (CONTAINERS[CLUSTER_IPS].0, CONTAINERS[CLUSTER_IPS].1, ports.len()),
                (CONTAINERS[SERVICE_IPS].0, CONTAINERS[SERVICE_IPS].1, ports.len()),
            ],
        );
        // the limits of the operations, checked in pieces as they are written: the first
        // breach, and how far the checks got
        let mut limit: (Option<NftError>, usize) = (None, 0);
        let written = self.write_full(
            &mut tx,
            ports,
            &existing_chains,
            &existing_affinity,
            &mut state,
            &mut applying,
            &mut limit,
        );
        // (in the order of writing, counting, then checking the whole transaction)
        let checked = written
            .and_then(|()| self.check_counts())
            .and_then(|()| match limit {
                (Some(e), _) => Err(e),
                (None, upto) => self.limits.check_operations(&tx.operations[upto..]),
            });
        if let Err(e) = checked {
            let _ = state.finish(applying, &tx, false);
            self.state = state;
            return Err(e);
        }
        state.apply_more(&mut applying, &tx);
        let applied = state.finish(applying, &tx, true);
        self.state = state;
        if let Err(e) = applied {
            self.stale_chains.clear();
            self.need_full_sync = true;
            return Err(e);
        }
        self.need_full_sync = false;
        Ok(SyncOutput {
            full: true,
            stale_deletion,
            main: tx,
        })
    }

    /// The Services and the cleanup of a full sync, applied to `state` as they are
    /// written (see [`NftProxier::full_inner`]); `limit` gets the first operation that
    /// breaks a limit and how far the operations were checked.
    #[allow(clippy::too_many_arguments)]
    fn write_full<P: NftPort>(
        &mut self,
        tx: &mut Transaction,
        ports: &[P],
        existing_chains: &[SharedStr],
        existing_affinity: &[SharedStr],
        state: &mut State,
        applying: &mut Applying,
        limit: &mut (Option<NftError>, usize),
    ) -> Result<(), NftError> {
        // ports grouped by Service, Services in order of first appearance. A Service's
        // ports usually come one after another: then each run of ports is a group, and
        // the ports are written in their order. That holds unless two runs are of the
        // same Service, which their hashes, sorted, show (a collision between different
        // Services only costs the grouping below, which is right in every case).
        let same = |a: &P, b: &P| a.name() == b.name() && a.namespace() == b.namespace();
        // Ports sorted by Service (as a model's are: by namespace, then name) hold each
        // Service's ports in one run; otherwise the runs' hashes are compared.
        let sorted = ports
            .windows(2)
            .all(|w| (w[0].namespace(), w[0].name()) <= (w[1].namespace(), w[1].name()));
        let runs = sorted || {
            let mut run_hashes: Vec<u64> = Vec::with_capacity(ports.len());
            for (i, p) in ports.iter().enumerate() {
                if i == 0 || !same(&ports[i - 1], p) {
                    run_hashes.push(self.hash.hash_one((p.namespace(), p.name())));
                }
            }
            run_hashes.sort_unstable();
            run_hashes.windows(2).all(|w| w[0] != w[1])
        };
        // the order to write the ports in, when it is not theirs
        let order: Option<Vec<usize>> = (!runs).then(|| self.grouped(ports));
        let port_at = |k: usize| &ports[order.as_ref().map_or(k, |o| o[k])];
        // Applied and checked every few Services (their operations, a few kilobytes, are
        // still in the cache; each application looks the table up once).
        const APPLY_EVERY: usize = 8;
        let mut apply = |p: &mut Self, tx: &Transaction| {
            state.apply_more_plain(applying, tx, &p.plain_rules);
            p.plain_rules.clear();
            if limit.0.is_none() {
                if let Err(e) = p.limits.check_operations(&tx.operations[limit.1..]) {
                    limit.0 = Some(e);
                }
                limit.1 = tx.operations.len();
            }
        };
        let mut written = 0;
        let mut at = 0;
        while at < ports.len() {
            let mut end = at + 1;
            while end < ports.len() && same(port_at(at), port_at(end)) {
                end += 1;
            }
            let mut rec = ServiceRecord::default();
            for k in at..end {
                self.write_port(tx, port_at(k), &mut rec)?;
            }
            written += 1;
            if written % APPLY_EVERY == 0 || end == ports.len() {
                apply(self, tx);
            }
            let svc = port_at(at);
            // `namespace/name` starts the text its last port's chain names were hashed
            // from (still in the scratch buffer): no joining and checking again
            let len = svc.namespace().len() + 1 + svc.name().len();
            let name = match self.scratch.get(..len) {
                Some(n) => CompactString::new(n),
                None => service_name(svc.namespace(), svc.name()),
            };
            debug_assert_eq!(name, service_name(svc.namespace(), svc.name()));
            self.services.insert(name, rec);
            at = end;
        }
        if !existing_chains.is_empty() {
            let mut active: HashSet<&str, KeyedState> = HashSet::with_hasher(self.hash);
            active.extend(
                self.services
                    .values()
                    .flat_map(|r| r.chains.iter().map(SharedStr::as_str)),
            );
            let mut newly_stale = Vec::new();
            for c in existing_chains {
                if active.contains(c.as_str()) {
                    self.stale_chains.remove(c.as_str());
                } else {
                    tx.flush_chain(c);
                    newly_stale.push(c.clone());
                }
            }
            drop(active);
            for c in newly_stale {
                self.stale_chains.insert(c.into(), false);
            }
        }
        if !existing_affinity.is_empty() {
            let mut active_sets: HashSet<&str, KeyedState> = HashSet::with_hasher(self.hash);
            active_sets.extend(
                self.services
                    .values()
                    .flat_map(|r| r.affinity_sets().iter().map(String::as_str)),
            );
            for s in existing_affinity {
                if !active_sets.contains(s.as_str()) {
                    tx.delete(Object::Set(Box::new(Set::named(s.as_str()))));
                }
            }
        }
        for (i, (kind, _)) in CONTAINERS.iter().enumerate() {
            if i == LOCALHOST_REJECTS && !self.config.localhost_nodeports {
                continue;
            }
            let mut leftover: Vec<SharedStr> = self.stores[i]
                .iter()
                .filter(|(_, e)| e.refs == 0)
                .map(|(k, _)| k.clone())
                .collect();
            leftover.sort();
            for k in leftover {
                self.stores[i].remove(&k);
                tx.delete_element(*kind, &self.containers[i], k);
            }
        }
        Ok(())
    }

    /// The indices of `ports` grouped by Service, Services in order of first appearance
    /// (a Service's ports keep their order).
    fn grouped<P: NftPort>(&self, ports: &[P]) -> Vec<usize> {
        let mut first: HashMap<(&str, &str), u32, KeyedState> =
            HashMap::with_capacity_and_hasher(ports.len(), self.hash);
        let group_of: Vec<u32> = ports
            .iter()
            .map(|p| {
                let next = first.len() as u32;
                *first.entry((p.namespace(), p.name())).or_insert(next)
            })
            .collect();
        let mut order: Vec<usize> = (0..ports.len()).collect();
        // (stable: a Service's ports keep their order)
        order.sort_by_key(|&i| group_of[i]);
        order
    }

    /// A partial sync: only the given Services changed (each with all its current
    /// service ports; none when it was deleted). Falls back to a full sync when one is
    /// pending — but then only the given ports are known, so call [`NftProxier::sync`]
    /// or [`NftProxier::sync_full`] with every port when [`NftProxier::needs_full_sync`].
    pub fn sync_partial(&mut self, updates: &[ServiceUpdate<'_>]) -> Result<SyncOutput, NftError> {
        if self.need_full_sync {
            let all: Vec<NftServicePort> = updates.iter().flat_map(|u| u.ports.iter().cloned()).collect();
            return self.sync_full(&all);
        }
        let r = self.partial_inner(updates);
        if r.is_err() {
            self.need_full_sync = true;
        }
        r
    }

    fn partial_inner(&mut self, updates: &[ServiceUpdate<'_>]) -> Result<SyncOutput, NftError> {
        let stale_deletion = self.delete_aged_chains();
        let mut tx = Transaction::new(self.config.family, TABLE);
        let mut old_keys: Vec<(u8, SharedStr)> = Vec::new();
        let mut candidates: BTreeSet<String> = self.stale_chains.keys().cloned().collect();
        let mut old_sets: Vec<String> = Vec::new();
        let mut new_chains: HashSet<SharedStr, KeyedState> = HashSet::with_hasher(self.hash);
        let mut new_sets: HashSet<String, KeyedState> = HashSet::with_hasher(self.hash);
        for u in updates {
            if let Some(old) = self.services.remove(u.service) {
                for (c, k) in &old.keys {
                    if let Some(e) = self.stores[*c as usize].get_mut(k) {
                        e.refs = e.refs.saturating_sub(1);
                    }
                }
                old_keys.extend(old.keys);
                candidates.extend(old.chains.into_iter().map(String::from));
                old_sets.extend(old.affinity_sets.map(|s| *s).unwrap_or_default());
            }
        }
        for u in updates {
            if u.ports.is_empty() {
                continue;
            }
            let mut rec = ServiceRecord::default();
            for p in u.ports {
                self.write_port(&mut tx, p, &mut rec)?;
            }
            new_chains.extend(rec.chains.iter().cloned());
            new_sets.extend(rec.affinity_sets().iter().cloned());
            self.services.insert(CompactString::from(u.service), rec);
        }
        // (a partial sync's transaction is applied whole, every rule checked)
        self.plain_rules.clear();
        let table = self.state.table(self.config.family, TABLE);
        for c in &candidates {
            let exists = table.is_some_and(|t| t.chains.contains_key(c.as_str()));
            if !exists {
                continue;
            }
            if new_chains.contains(c.as_str()) {
                self.stale_chains.remove(c);
            } else {
                tx.flush_chain(c);
                self.stale_chains.insert(c.clone(), false);
            }
        }
        old_sets.sort();
        old_sets.dedup();
        for s in &old_sets {
            let exists = table.is_some_and(|t| t.sets.contains_key(s.as_str()));
            if exists && !new_sets.contains(s) {
                tx.delete(Object::Set(Box::new(Set::named(s.as_str()))));
            }
        }
        old_keys.sort();
        old_keys.dedup();
        for (c, k) in old_keys {
            let c = c as usize;
            if self.stores[c].get(&k).is_some_and(|e| e.refs == 0) {
                self.stores[c].remove(&k);
                tx.delete_element(CONTAINERS[c].0, &self.containers[c], k);
            }
        }
        self.check_counts()?;
        self.run_main(tx, stale_deletion, false)
    }

    fn delete_aged_chains(&mut self) -> Option<Transaction> {
        let aged: Vec<String> = self
            .stale_chains
            .iter()
            .filter(|(_, a)| **a)
            .map(|(c, _)| c.clone())
            .collect();
        if aged.is_empty() {
            return None;
        }
        let mut tx = Transaction::new(self.config.family, TABLE);
        for c in &aged {
            self.stale_chains.remove(c);
            tx.delete_chain(c);
        }
        if self.state.apply(&tx).is_err() {
            // kube-proxy: "will retry later", and the sync becomes a full one
            self.need_full_sync = true;
        }
        Some(tx)
    }

    fn run_main(
        &mut self,
        tx: Transaction,
        stale_deletion: Option<Transaction>,
        full: bool,
    ) -> Result<SyncOutput, NftError> {
        self.limits.check_transaction(&tx)?;
        if let Err(e) = self.state.apply(&tx) {
            self.stale_chains.clear();
            self.need_full_sync = true;
            return Err(e);
        }
        self.need_full_sync = false;
        Ok(SyncOutput {
            full,
            stale_deletion,
            main: tx,
        })
    }

    fn check_counts(&self) -> Result<(), NftError> {
        for (i, store) in self.stores.iter().enumerate() {
            if store.len() > self.limits.max_elements {
                return Err(NftError::Limit {
                    service: "-".into(),
                    what: format!("elements of {}", CONTAINERS[i].1),
                    value: String::new(),
                    len: store.len(),
                    max: self.limits.max_elements,
                });
            }
        }
        Ok(())
    }

    fn ipx(&self) -> &'static str {
        match self.config.family {
            Family::Ip6 => "ip6",
            _ => "ip",
        }
    }

    fn masquerade_rule(&self) -> String {
        format!("mark set mark or {}", self.config.masquerade_mark)
    }

    /// `setupNFTables`.
    fn setup(&mut self, tx: &mut Transaction) -> Result<(), NftError> {
        let ipx = self.ipx();
        let addr = if ipx == "ip6" { "ipv6_addr" } else { "ipv4_addr" };
        let (lo, not_lo) = if ipx == "ip6" {
            ("ip6 daddr ::1", "ip6 daddr != ::1")
        } else {
            ("ip daddr 127.0.0.0/8", "ip daddr != 127.0.0.0/8")
        };
        let cfg = &self.config;
        tx.add(Object::Table(Table {
            comment: Some("rules for kube-proxy".into()),
        }));
        if !self.flushed {
            for (name, ..) in BASE_CHAINS {
                tx.add_chain(name);
                tx.delete_chain(name);
            }
            self.flushed = true;
        }
        for (name, chain_type, hook, priority) in BASE_CHAINS {
            tx.add(Object::Chain(Chain {
                name: name.into(),
                base: Some(BaseChain {
                    chain_type,
                    hook,
                    priority,
                }),
                comment: None,
            }));
            tx.flush_chain(name);
        }
        let mut created: Vec<&str> = Vec::new();
        let ensure = |tx: &mut Transaction, c: &'static str, created: &mut Vec<&str>| {
            if !created.contains(&c) {
                created.push(c);
                tx.add_chain(c);
                tx.flush_chain(c);
            }
        };
        for (dst, src, extra) in JUMP_CHAINS {
            ensure(tx, dst, &mut created);
            tx.add_rule(src, format!("{extra}jump {dst}"), None);
        }
        for c in ["services", "cluster-ips-check", "masquerading"] {
            ensure(tx, c, &mut created);
        }
        let set = |name: &str, t: String, comment: &str| Set {
            name: name.into(),
            set_type: t,
            flags: Vec::new(),
            timeout: None,
            comment: Some(comment.into()),
        };
        tx.add_set(set(
            "hairpin-connections",
            format!("{addr} . {addr} . inet_proto . inet_service"),
            "service hairpin connections",
        ));
        let m = &cfg.masquerade_mark;
        tx.add_rule(
            "masquerading",
            format!("mark and {m} != 0 mark set mark xor {m} masquerade fully-random"),
            None,
        );
        tx.add_rule(
            "masquerading",
            format!("ct status dnat {ipx} saddr . {ipx} daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random"),
            None,
        );
        tx.add_set(set("cluster-ips", addr.into(), "Active ClusterIPs"));
        tx.add_rule(
            "cluster-ips-check",
            format!("{ipx} daddr @cluster-ips reject"),
            Some("Reject traffic to invalid ports of ClusterIPs"),
        );
        if !cfg.service_cidrs.is_empty() {
            tx.add_rule(
                "cluster-ips-check",
                format!("{ipx} daddr {{ {} }} drop", cfg.service_cidrs.join(",")),
                Some("Drop traffic to unallocated ClusterIPs"),
            );
        }
        tx.add_set(set(
            "nodeport-ips",
            addr.into(),
            "IPs that accept NodePort traffic",
        ));
        match &cfg.nodeport_ips {
            None => tx.delete(Object::Set(Box::new(Set::named("nodeport-ips")))),
            Some(ips) => {
                tx.flush(Object::Set(Box::new(Set::named("nodeport-ips"))));
                for ip in ips {
                    if ip.is_loopback() {
                        continue;
                    }
                    tx.add_element(
                        ContainerKind::Set,
                        "nodeport-ips",
                        ip.to_string().into(),
                        None,
                        None,
                    );
                }
            }
        }
        tx.add_map(set(
            "no-endpoint-services",
            format!("{addr} . inet_proto . inet_service : verdict"),
            "vmap to drop or reject packets to services with no endpoints",
        ));
        tx.add_map(set(
            "no-endpoint-nodeports",
            "inet_proto . inet_service : verdict".into(),
            "vmap to drop or reject packets to service nodeports with no endpoints",
        ));
        tx.add(Object::Chain(Chain {
            name: "reject-chain".into(),
            base: None,
            comment: Some("helper for @no-endpoint-services / @no-endpoint-nodeports".into()),
        }));
        tx.flush_chain("reject-chain");
        tx.add_rule("reject-chain", "reject", None);
        tx.add_rule(
            "service-endpoints-check",
            format!("{ipx} daddr . meta l4proto . th dport vmap @no-endpoint-services"),
            None,
        );
        if cfg.nodeport_ips.is_none() {
            tx.add_rule(
                "nodeport-endpoints-check",
                format!("{not_lo} meta l4proto . th dport vmap @no-endpoint-nodeports"),
                None,
            );
        } else {
            tx.add_rule(
                "nodeport-endpoints-check",
                format!("{ipx} daddr @nodeport-ips meta l4proto . th dport vmap @no-endpoint-nodeports"),
                None,
            );
        }
        let rejected = self.localhost_reject_protocols();
        tx.add_map(set(
            "localhost-nodeport-reject-ports",
            "inet_proto . inet_service : verdict".into(),
            "localhost NodePorts rejected by kube-proxy",
        ));
        if !rejected.is_empty() {
            for p in rejected {
                let counter = format!("localhost-nodeport-rejected-{}", p.lower());
                tx.add(Object::Counter(Counter {
                    name: counter.clone(),
                    comment: None,
                }));
                let chain = format!("localhost-nodeport-reject-{}", p.lower());
                tx.add_chain(&chain);
                tx.flush_chain(&chain);
                tx.add_rule(&chain, format!("counter name \"{counter}\" reject"), None);
            }
            tx.add_rule(
                "nodeport-endpoints-check",
                format!("{lo} meta l4proto . th dport vmap @localhost-nodeport-reject-ports"),
                None,
            );
        } else {
            tx.delete(Object::Map(Box::new(Set::named(
                "localhost-nodeport-reject-ports",
            ))));
        }
        for p in ALL_PROTOCOLS {
            if rejected.contains(&p) {
                continue;
            }
            let chain = format!("localhost-nodeport-reject-{}", p.lower());
            tx.add_chain(&chain);
            tx.delete_chain(&chain);
            let counter = Counter {
                name: format!("localhost-nodeport-rejected-{}", p.lower()),
                comment: None,
            };
            tx.add(Object::Counter(counter.clone()));
            tx.delete(Object::Counter(counter));
        }
        tx.add_map(set(
            "firewall-ips",
            format!("{addr} . inet_proto . inet_service : verdict"),
            "destinations that are subject to LoadBalancerSourceRanges",
        ));
        tx.add_rule(
            "firewall-check",
            format!("{ipx} daddr . meta l4proto . th dport vmap @firewall-ips"),
            None,
        );
        tx.add_map(set(
            "service-ips",
            format!("{addr} . inet_proto . inet_service : verdict"),
            "ClusterIP, ExternalIP and LoadBalancer IP traffic",
        ));
        tx.add_map(set(
            "service-nodeports",
            "inet_proto . inet_service : verdict".into(),
            "NodePort traffic",
        ));
        let masq = self.masquerade_rule();
        if cfg.masquerade_all {
            tx.add_rule(
                "services",
                format!("{ipx} daddr @cluster-ips {masq}"),
                Some("masquerade all clusterIP traffic"),
            );
        } else if let Some(d) = &cfg.local_detector {
            tx.add_rule(
                "services",
                format!("{ipx} daddr @cluster-ips {} {masq}", d.if_not_local()),
                Some("masquerade clusterIP traffic from outside cluster"),
            );
        }
        tx.add_rule(
            "services",
            format!("{ipx} daddr . meta l4proto . th dport vmap @service-ips"),
            None,
        );
        if cfg.nodeport_ips.is_none() {
            tx.add_rule(
                "services",
                format!("fib daddr type local {not_lo} meta l4proto . th dport vmap @service-nodeports"),
                None,
            );
        } else {
            tx.add_rule(
                "services",
                format!("{ipx} daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports"),
                None,
            );
        }
        self.limits.check_transaction(tx)
    }

    fn localhost_reject_protocols(&self) -> &'static [Protocol] {
        if !self.config.localhost_nodeports {
            &[]
        } else if self.config.localhost_nodeport_proxy {
            &[Protocol::Udp, Protocol::Sctp]
        } else {
            &ALL_PROTOCOLS
        }
    }

    fn ensure_elem(
        &mut self,
        tx: &mut Transaction,
        rec: &mut ServiceRecord,
        c: usize,
        key: SharedStr,
        value: Option<SharedStr>,
        comment: Option<&str>,
    ) {
        let kind = CONTAINERS[c].0;
        let container = &self.containers[c];
        let held = rec.keys.iter().any(|(rc, k)| *rc as usize == c && *k == key);
        let store = &mut self.stores[c];
        match store.entry(key) {
            MapEntry::Occupied(o) => {
                let key = o.key().clone();
                let e = o.into_mut();
                if e.value.as_deref().unwrap_or("") != value.as_deref().unwrap_or("") {
                    e.value.clone_from(&value);
                    tx.delete_element(kind, container, key.clone());
                    tx.add_element(kind, container, key.clone(), value, comment.map(str::to_owned));
                }
                if !held {
                    e.refs += 1;
                    rec.keys.push((c as u8, key));
                }
            }
            MapEntry::Vacant(v) => {
                // (the references are all taken first, one after the other, before the
                // writes into the store's table: an atomic increment waits for the
                // writes before it)
                let key = v.key().clone();
                let for_tx = (!held).then(|| key.clone());
                let container = container.clone();
                let stored = value.clone();
                v.insert(Entry {
                    value: stored,
                    refs: 1,
                });
                match for_tx {
                    None => tx.add_element(kind, container, key, value, comment.map(str::to_owned)),
                    Some(k) => {
                        tx.add_element(kind, container, k, value, comment.map(str::to_owned));
                        rec.keys.push((c as u8, key));
                    }
                }
            }
        }
    }

    fn ensure_chain(tx: &mut Transaction, rec: &mut ServiceRecord, chain: SharedStr) {
        if rec.chains.contains(&chain) {
            return;
        }
        rec.chains.push(chain.clone());
        tx.add_chain(chain.clone());
        tx.flush_chain(chain);
    }

    /// One service port, in `syncProxyRules`' order.
    fn write_port<P: NftPort>(
        &mut self,
        tx: &mut Transaction,
        sp: &P,
        rec: &mut ServiceRecord,
    ) -> Result<(), NftError> {
        let proto = sp.protocol().lower();
        // `ns/name/proto/port`, in a buffer kept between ports
        let mut hashed = std::mem::take(&mut self.scratch);
        hashed.clear();
        for (i, part) in [sp.namespace(), sp.name(), proto, sp.port_name()]
            .into_iter()
            .enumerate()
        {
            if i > 0 {
                hashed.push('/');
            }
            hashed.push_str(part);
        }
        // the service chain's name, and the hashed base of every name (after `service-`),
        // built in the text buffer and shared from there
        let mut text = std::mem::take(&mut self.text);
        text.0.clear();
        // (empty, so the conversion cannot fail)
        let mut name = String::from_utf8(std::mem::take(&mut text.0)).unwrap_or_default();
        name.push_str("service-");
        push_hash_and_truncate(&mut name, &hashed);
        let cluster_chain = SharedStr::from(name.as_str());
        text.0 = name.into_bytes();
        self.scratch = hashed;
        let r = self.write_port_rules(tx, sp, rec, cluster_chain, &mut text);
        self.text = text;
        r
    }

    /// The elements, chains and rules of one service port whose service chain is named
    /// `cluster_chain`; `text` is a buffer for keys and rules.
    fn write_port_rules<P: NftPort>(
        &mut self,
        tx: &mut Transaction,
        sp: &P,
        rec: &mut ServiceRecord,
        cluster_chain_name: SharedStr,
        text: &mut Text,
    ) -> Result<(), NftError> {
        // (the name itself is handed to its last user, the DNAT rule: one reference
        // count update fewer)
        let cluster_chain = &cluster_chain_name;
        let ipx = self.ipx();
        let proto = sp.protocol().lower();
        let name_string = || sp.name_string();
        let base = &cluster_chain.as_str()["service-".len()..];
        self.limits.check_prefixed(
            &name_string,
            &["service-", "local-", "external-", "firewall-"],
            base,
        )?;
        // the other chains are rare: named when used
        let local_chain = || prefixed("local-", base);
        let external_chain = || prefixed("external-", base);
        let fw_chain = || prefixed("firewall-", base);
        let affinity = sp.affinity_timeout();
        // endpoint chains and affinity sets, by endpoint address
        let ep_base = |ep: &P::Endpoint| {
            let ip = ep.ip().to_string().replace(':', ".");
            hash_and_truncate(&format!(
                "{}/{}/{}/{}__{}/{}",
                sp.namespace(),
                sp.name(),
                proto,
                sp.port_name(),
                ip,
                ep.port()
            ))
        };
        let mut ep_names: HashMap<(IpAddr, u16), String, KeyedState> = HashMap::with_hasher(self.hash);
        if affinity.is_some() {
            for ep in sp.all_locally_reachable() {
                let b = ep_base(ep);
                self.limits.check_names(
                    &name_string(),
                    &[&format!("endpoint-{b}"), &format!("affinity-{b}")],
                )?;
                ep_names.insert((ep.ip(), ep.port()), b);
            }
        }
        for ep in sp.all_locally_reachable() {
            if affinity.is_some() {
                let b = &ep_names[&(ep.ip(), ep.port())];
                Self::ensure_chain(tx, rec, format!("endpoint-{b}").into());
                let set = format!("affinity-{b}");
                let sets = rec.affinity_sets.get_or_insert_default();
                if !sets.contains(&set) {
                    sets.push(set);
                }
            }
            if ep.is_local() {
                text.clear()
                    .ip(ep.ip())
                    .str(" . ")
                    .ip(ep.ip())
                    .str(" . ")
                    .str(proto)
                    .str(" . ")
                    .dec(ep.port());
                let key = text.shared();
                self.ensure_elem(tx, rec, HAIRPIN, key, None, None);
            }
        }
        let uses_cluster_chain = !sp.cluster_endpoints().is_empty() && sp.uses_cluster_endpoints();
        if uses_cluster_chain {
            Self::ensure_chain(tx, rec, cluster_chain.clone());
        }
        let uses_local_chain = !sp.local_endpoints().is_empty() && sp.uses_local_endpoints();
        if uses_local_chain {
            Self::ensure_chain(tx, rec, local_chain().into());
        }
        let has_endpoints = sp.has_endpoints();
        let internal_local = sp.internal_policy_local();
        let has_internal = if internal_local {
            has_endpoints && !sp.local_endpoints().is_empty()
        } else {
            has_endpoints
        };
        let external_local = sp.external_policy_local();
        let has_external = if external_local {
            has_endpoints && !sp.local_endpoints().is_empty()
        } else {
            has_endpoints
        };
        let uses_external_chain = has_endpoints && sp.externally_accessible();
        if uses_external_chain {
            Self::ensure_chain(tx, rec, external_chain().into());
        }
        let internal_verdict = if !has_endpoints {
            "goto reject-chain"
        } else {
            "drop"
        };
        let external_verdict = internal_verdict;
        let goto = |chain: &str| SharedStr::from(prefixed("goto ", chain));
        let port = sp.port();
        // `ADDR . PROTO . PORT`
        let ip_key = |ip: IpAddr| {
            let mut k = Text::with_capacity(48);
            k.ip(ip).str(" . ").str(proto).str(" . ").dec(port);
            k.shared()
        };
        let cip = text.clear().ip(sp.cluster_ip()).shared();
        // (the address is in the buffer already)
        let cip_key = text.str(" . ").str(proto).str(" . ").dec(port).shared();
        self.ensure_elem(tx, rec, CLUSTER_IPS, cip, None, None);
        if has_internal {
            let value = text.shared_concat(&[
                if internal_local {
                    "goto local-"
                } else {
                    "goto service-"
                },
                base,
            ]);
            self.ensure_elem(tx, rec, SERVICE_IPS, cip_key, Some(value), None);
        } else {
            let n = name_string();
            self.ensure_elem(
                tx,
                rec,
                NO_ENDPOINT_SERVICES,
                cip_key,
                Some(SharedStr::from(internal_verdict)),
                Some(truncate_comment(&n)),
            );
        }
        for eip in sp.external_ips() {
            if has_endpoints {
                self.ensure_elem(
                    tx,
                    rec,
                    SERVICE_IPS,
                    ip_key(*eip),
                    Some(goto(&external_chain())),
                    None,
                );
            }
            if !has_external {
                let n = name_string();
                self.ensure_elem(
                    tx,
                    rec,
                    NO_ENDPOINT_SERVICES,
                    ip_key(*eip),
                    Some(SharedStr::from(external_verdict)),
                    Some(truncate_comment(&n)),
                );
            }
        }
        let uses_fw = !sp.load_balancer_vips().is_empty() && !sp.source_ranges().is_empty();
        if uses_fw {
            Self::ensure_chain(tx, rec, fw_chain().into());
        }
        for lb in sp.load_balancer_vips() {
            if has_endpoints {
                self.ensure_elem(
                    tx,
                    rec,
                    SERVICE_IPS,
                    ip_key(*lb),
                    Some(goto(&external_chain())),
                    None,
                );
            }
            if uses_fw {
                self.ensure_elem(tx, rec, FIREWALL_IPS, ip_key(*lb), Some(goto(&fw_chain())), None);
            }
        }
        if !has_external {
            for lb in sp.load_balancer_vips() {
                let n = name_string();
                self.ensure_elem(
                    tx,
                    rec,
                    NO_ENDPOINT_SERVICES,
                    ip_key(*lb),
                    Some(SharedStr::from(external_verdict)),
                    Some(truncate_comment(&n)),
                );
            }
        }
        if sp.node_port() != 0 {
            let np = sp.node_port();
            if self.localhost_reject_protocols().contains(&sp.protocol()) {
                self.ensure_elem(
                    tx,
                    rec,
                    LOCALHOST_REJECTS,
                    format!("{proto} . {np}").into(),
                    Some(format!("goto localhost-nodeport-reject-{proto}").into()),
                    None,
                );
            }
            if has_endpoints {
                self.ensure_elem(
                    tx,
                    rec,
                    SERVICE_NODEPORTS,
                    format!("{proto} . {np}").into(),
                    Some(goto(&external_chain())),
                    None,
                );
            }
            if !has_external {
                let n = name_string();
                self.ensure_elem(
                    tx,
                    rec,
                    NO_ENDPOINT_NODEPORTS,
                    format!("{proto} . {np}").into(),
                    Some(SharedStr::from(external_verdict)),
                    Some(truncate_comment(&n)),
                );
            }
        }
        let local_chain = if uses_local_chain || internal_local || external_local {
            local_chain()
        } else {
            String::new()
        };
        let external_chain = if uses_external_chain {
            external_chain()
        } else {
            String::new()
        };
        let fw_chain = if uses_fw { fw_chain() } else { String::new() };
        let external_policy_chain: &str = if external_local {
            &local_chain
        } else {
            cluster_chain
        };

        // rules of the chains of a written service
        if uses_external_chain {
            let masq = self.masquerade_rule();
            if !sp.external_policy_local() {
                tx.add_rule(&external_chain, masq.clone(), Some("masquerade"));
            } else {
                if let Some(d) = &self.config.local_detector {
                    tx.add_rule(
                        &external_chain,
                        format!("{} goto {cluster_chain}", d.if_local()),
                        Some("short-circuit pod traffic"),
                    );
                }
                tx.add_rule(
                    &external_chain,
                    format!("fib saddr type local {masq}"),
                    Some("masquerade local traffic"),
                );
                tx.add_rule(
                    &external_chain,
                    format!("fib saddr type local goto {cluster_chain}"),
                    Some("short-circuit local traffic"),
                );
            }
            if has_external {
                tx.add_rule(&external_chain, format!("goto {external_policy_chain}"), None);
            }
        }
        if uses_fw {
            let mut sources = String::new();
            let mut allow_from_node = false;
            for (i, r) in sp.source_ranges().iter().enumerate() {
                if i > 0 {
                    sources.push_str(" , ");
                }
                let _ = write!(sources, "{}", r.trunc());
                if r.contains(&self.config.node_ip) {
                    allow_from_node = true;
                }
            }
            if allow_from_node {
                for lb in sp.load_balancer_vips() {
                    let _ = write!(sources, " , {lb}");
                }
            }
            tx.add_rule(&fw_chain, format!("{ipx} saddr != {{ {sources} }} drop"), None);
        }
        match affinity {
            Some(timeout) => {
                let addr = if ipx == "ip6" { "ipv6_addr" } else { "ipv4_addr" };
                for ep in sp.all_locally_reachable() {
                    tx.add_set(Set {
                        name: format!("affinity-{}", ep_names[&(ep.ip(), ep.port())]),
                        set_type: addr.into(),
                        flags: vec![SetFlag::Dynamic, SetFlag::Timeout],
                        timeout: Some(u64::from(timeout)),
                        comment: None,
                    });
                }
                if uses_cluster_chain {
                    self.write_jumps(tx, &name_string, cluster_chain, sp.cluster_endpoints(), &ep_names)?;
                }
                if uses_local_chain {
                    self.write_jumps(tx, &name_string, &local_chain, sp.local_endpoints(), &ep_names)?;
                }
                for ep in sp.all_locally_reachable() {
                    let b = &ep_names[&(ep.ip(), ep.port())];
                    let chain = format!("endpoint-{b}");
                    tx.add_rule(&chain, format!("update @affinity-{b} {{ {ipx} saddr }}"), None);
                    tx.add_rule(
                        &chain,
                        format!(
                            "meta l4proto {proto} dnat to {}",
                            std::net::SocketAddr::new(ep.ip(), ep.port())
                        ),
                        None,
                    );
                }
            }
            None => {
                if uses_cluster_chain {
                    self.write_dnats(
                        tx,
                        &name_string,
                        cluster_chain_name,
                        proto,
                        sp.cluster_endpoints(),
                        text,
                    )?;
                }
                if uses_local_chain {
                    let local_chain = SharedStr::from(local_chain.as_str());
                    self.write_dnats(tx, &name_string, local_chain, proto, sp.local_endpoints(), text)?;
                }
            }
        }
        Ok(())
    }

    /// The DNAT rule of `chain` (noted in [`NftProxier::plain_rules`]: it references no
    /// set, map or chain).
    fn write_dnats<E: NftEndpointView>(
        &mut self,
        tx: &mut Transaction,
        svc: &dyn Fn() -> String,
        chain: SharedStr,
        proto: &str,
        eps: &[E],
        r: &mut Text,
    ) -> Result<(), NftError> {
        if let [ep] = eps {
            r.clear()
                .str("meta l4proto ")
                .str(proto)
                .str(" dnat to ")
                .socket(ep.ip(), ep.port());
            self.plain_rules.push(tx.operations.len());
            tx.add_rule(chain, r.shared(), None);
            return Ok(());
        }
        self.limits.check_anonymous(svc, eps.len())?;
        r.clear()
            .str("meta l4proto ")
            .str(proto)
            .str(" dnat ")
            .str(self.ipx())
            .str(" addr . port to numgen random mod ")
            .dec(eps.len() as u64)
            .str(" map { ");
        r.map_entries(eps).str(" }");
        self.plain_rules.push(tx.operations.len());
        tx.add_rule(chain, r.shared(), None);
        Ok(())
    }

    fn write_jumps<E: NftEndpointView>(
        &self,
        tx: &mut Transaction,
        svc: &dyn Fn() -> String,
        chain: &str,
        eps: &[E],
        names: &HashMap<(IpAddr, u16), String, KeyedState>,
    ) -> Result<(), NftError> {
        self.limits.check_anonymous(svc, eps.len())?;
        let ipx = self.ipx();
        let mut vmap = String::new();
        let _ = write!(vmap, "numgen random mod {} vmap {{ ", eps.len());
        for (i, ep) in eps.iter().enumerate() {
            let Some(b) = names.get(&(ep.ip(), ep.port())) else {
                continue;
            };
            tx.add_rule(
                chain,
                format!("{ipx} saddr @affinity-{b} goto endpoint-{b}"),
                None,
            );
            if i > 0 {
                vmap.push_str(" , ");
            }
            let _ = write!(vmap, "{i} : goto endpoint-{b}");
        }
        vmap.push_str(" }");
        tx.add_rule(chain, vmap, None);
        Ok(())
    }
}

/// `prefix` followed by `name`, in a string of exactly that size.
fn prefixed(prefix: &str, name: &str) -> String {
    let mut s = String::with_capacity(prefix.len() + name.len());
    s.push_str(prefix);
    s.push_str(name);
    s
}

/// `namespace/name` (joined in a buffer on the stack when short: the result holds it inline).
fn service_name(namespace: &str, name: &str) -> CompactString {
    let len = namespace.len() + 1 + name.len();
    let mut buf = [0u8; 24];
    if let Some(b) = buf.get_mut(..len) {
        let (ns, rest) = b.split_at_mut(namespace.len());
        ns.copy_from_slice(namespace.as_bytes());
        rest[0] = b'/';
        rest[1..].copy_from_slice(name.as_bytes());
        if let Ok(s) = std::str::from_utf8(b) {
            return CompactString::new(s);
        }
    }
    let mut key = CompactString::with_capacity(len);
    key.push_str(namespace);
    key.push('/');
    key.push_str(name);
    key
}

fn service_key<P: NftPort>(p: &P) -> String {
    format!("{}/{}", p.namespace(), p.name())
}
