//! The rule set as the kernel would hold it: transactions applied to an in-memory table
//! with knftables' fake semantics (atomic: all or nothing), dumped as knftables'
//! `Fake.Dump()` prints it (one `add` line per object).
//!
//! Follows knftables v0.0.22 (`fake.go`), the version Kubernetes v1.37.2 pins.
//!
//! Objects are kept in hash maps by name (applying a transaction does no ordered
//! inserts); everything that prints or serializes the rule set sorts by name, as the
//! fake does.

use super::error::NftError;
use super::object::{
    Chain, ContainerKind, Counter, Element, Family, Heads, Object, Rule, Set, SharedStr, Table, Verb,
    write_chain, write_counter, write_element_parts, write_rule, write_set, write_table,
};
use super::transaction::Transaction;
use serde::{Deserialize, Serialize, Serializer};
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};
use svcnet_model::hash::KeyedState;

/// Objects by name (chains, sets, maps, counters; elements by key). The names come from
/// Services and from rule text read back, so they are hashed with the keyed hasher
/// ([`KeyedState`], its default fixed key: see [`svcnet_model::hash`]). Iteration order is
/// unspecified: sort by name where order matters. Keys are [`SharedStr`]s (shared with
/// the objects and the transactions that added them); look them up with a `&str`.
pub type NameMap<V> = HashMap<SharedStr, V, KeyedState>;

/// The entries of `m` sorted by name.
fn sorted<V>(m: &NameMap<V>) -> Vec<(&SharedStr, &V)> {
    let mut v: Vec<(&SharedStr, &V)> = m.iter().collect();
    v.sort_unstable_by(|a, b| a.0.cmp(b.0));
    v
}

/// Serializes a [`NameMap`] as a map sorted by name.
fn serialize_sorted<S: Serializer, V: Serialize>(m: &NameMap<V>, s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(sorted(m))
}

/// A chain and its rules.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChainState {
    /// The chain as created.
    pub chain: Chain,
    /// Its rules in order.
    pub rules: Vec<Rule>,
}

/// A set or map element as the rule set holds it, under its key in
/// [`SetState::elements`]: its value and comment (its kind and container are those of the
/// set or map holding it, so an entry is 40 bytes, not an [`Element`]'s 80).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElementState {
    /// The value of a map element (`goto chain`, `drop`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<SharedStr>,
    /// The element comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl ElementState {
    /// The element of `kind` in `container` with key `key` (as an operation adds it).
    pub fn to_element(&self, kind: ContainerKind, container: &SharedStr, key: &SharedStr) -> Element {
        Element {
            kind,
            container: container.clone(),
            key: key.clone(),
            value: self.value.clone(),
            comment: self.comment.clone(),
        }
    }
}

/// A set or map and its elements (by key). Serialized within its [`TableState`] (which
/// gives every element its kind and container, as an [`Element`] serializes).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SetState {
    /// The set or map as created.
    pub set: Set,
    /// Elements by key (an [`Element`] read back from JSON keeps its value and comment).
    pub elements: NameMap<ElementState>,
}

/// The sets (`kind` set) or maps of a table, serialized as a map sorted by name whose
/// elements serialize as [`Element`]s do (kind, container, key, value, comment).
fn serialize_containers<S: Serializer>(
    m: &NameMap<SetState>,
    kind: ContainerKind,
    s: S,
) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct ElementView<'a> {
        kind: ContainerKind,
        container: &'a str,
        key: &'a str,
        #[serde(skip_serializing_if = "Option::is_none")]
        value: Option<&'a str>,
        #[serde(skip_serializing_if = "Option::is_none")]
        comment: Option<&'a str>,
    }
    struct Elements<'a>(&'a SetState, ContainerKind);
    impl Serialize for Elements<'_> {
        fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            let container = self.0.set.name.as_str();
            s.collect_map(sorted(&self.0.elements).into_iter().map(|(k, e)| {
                (
                    k,
                    ElementView {
                        kind: self.1,
                        container,
                        key: k,
                        value: e.value.as_deref(),
                        comment: e.comment.as_deref(),
                    },
                )
            }))
        }
    }
    #[derive(Serialize)]
    struct SetView<'a> {
        set: &'a Set,
        elements: Elements<'a>,
    }
    s.collect_map(sorted(m).into_iter().map(|(name, c)| {
        (
            name,
            SetView {
                set: &c.set,
                elements: Elements(c, kind),
            },
        )
    }))
}

fn serialize_sets<S: Serializer>(m: &NameMap<SetState>, s: S) -> Result<S::Ok, S::Error> {
    serialize_containers(m, ContainerKind::Set, s)
}

fn serialize_maps<S: Serializer>(m: &NameMap<SetState>, s: S) -> Result<S::Ok, S::Error> {
    serialize_containers(m, ContainerKind::Map, s)
}

/// One table with everything in it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableState {
    /// The table as created.
    pub table: Table,
    /// Chains by name.
    #[serde(serialize_with = "serialize_sorted")]
    pub chains: NameMap<ChainState>,
    /// Sets by name.
    #[serde(serialize_with = "serialize_sets")]
    pub sets: NameMap<SetState>,
    /// Maps by name.
    #[serde(serialize_with = "serialize_maps")]
    pub maps: NameMap<SetState>,
    /// Counters by name.
    #[serde(serialize_with = "serialize_sorted")]
    pub counters: NameMap<Counter>,
}

impl TableState {
    fn new(table: Table) -> Self {
        TableState {
            table,
            chains: NameMap::default(),
            sets: NameMap::default(),
            maps: NameMap::default(),
            counters: NameMap::default(),
        }
    }

    fn container(&mut self, kind: ContainerKind, name: &str) -> Result<&mut SetState, NftError> {
        let (m, what) = match kind {
            ContainerKind::Set => (&mut self.sets, "set"),
            ContainerKind::Map => (&mut self.maps, "map"),
        };
        m.get_mut(name).ok_or_else(|| NftError::not_found(what, name))
    }

    fn check_chain(&self, name: &str) -> Result<(), NftError> {
        if self.chains.contains_key(name) {
            Ok(())
        } else {
            Err(NftError::not_found("chain", name))
        }
    }

    /// knftables' `checkRuleRefs`: every `@set`, `vmap @map` and `goto`/`jump` target exists
    /// (called only for rules that [`may_reference`] something: the others, most of them,
    /// skip the word scan).
    fn check_rule_refs(&self, rule: &str) -> Result<(), NftError> {
        let mut prev = "";
        let mut words = rule.split(' ').peekable();
        while let Some(w) = words.next() {
            if let Some(name) = w.strip_prefix('@')
                && !w.contains(',')
            {
                let found = if prev == "map" || prev == "vmap" {
                    self.maps.contains_key(name)
                } else {
                    self.sets.contains_key(name) || self.maps.contains_key(name)
                };
                if !found {
                    return Err(NftError::not_found(
                        if prev == "map" || prev == "vmap" {
                            "map"
                        } else {
                            "set"
                        },
                        name,
                    ));
                }
            } else if (w == "goto" || w == "jump")
                && let Some(next) = words.peek()
            {
                self.check_chain(next)?;
            }
            prev = w;
        }
        Ok(())
    }
}

/// Whether `rule` holds `@`, `goto` or `jump` (without them it references nothing).
/// 32 bytes at a time, written so that the compiler uses vector compares; only the bytes
/// that are `@`, `g` or `j` are then looked at one by one.
fn may_reference(rule: &str) -> bool {
    let b = rule.as_bytes();
    let at = |i: usize| match b[i] {
        b'@' => true,
        b'g' => b[i..].starts_with(b"goto"),
        b'j' => b[i..].starts_with(b"jump"),
        _ => false,
    };
    let (blocks, tail) = b.as_chunks::<32>();
    // the last bytes padded with zeros (which match nothing)
    let mut last = [0u8; 32];
    last[..tail.len()].copy_from_slice(tail);
    for (k, block) in blocks.iter().chain([&last]).enumerate() {
        let mut m = [0u8; 32];
        for (m, &c) in m.iter_mut().zip(block) {
            *m = u8::from(c == b'@') | u8::from(c == b'g') | u8::from(c == b'j');
        }
        let (lo, hi) = m.split_at(16);
        for (half, bytes) in [lo, hi].into_iter().enumerate() {
            let mut bits = u128::from_le_bytes(bytes.try_into().unwrap_or_default());
            while bits != 0 {
                if at(32 * k + 16 * half + (bits.trailing_zeros() / 8) as usize) {
                    return true;
                }
                bits &= bits - 1;
            }
        }
    }
    false
}

/// How to undo one applied operation (the index of the operation, and whether what it
/// replaced or removed was saved; one is recorded for almost every operation, so it is
/// small, 8 bytes, and has nothing to drop).
#[derive(Debug, Clone, Copy)]
enum Undo {
    Table(bool),
    Chain(u32, bool),
    /// (the chain's rules are saved)
    Rules(u32),
    PopRule(u32),
    Set(u32, bool),
    /// (the set's elements are saved)
    Elements(u32),
    Element(u32, bool),
    Counter(u32, bool),
}

impl Undo {
    fn saved(self) -> bool {
        match self {
            Undo::Rules(_) | Undo::Elements(_) => true,
            Undo::Table(s)
            | Undo::Chain(_, s)
            | Undo::Set(_, s)
            | Undo::Element(_, s)
            | Undo::Counter(_, s) => s,
            Undo::PopRule(_) => false,
        }
    }
}

/// What an operation replaced or removed, to put back when undoing it.
#[derive(Debug)]
enum Saved {
    Table(Box<TableState>),
    Chain(ChainState),
    Rules(Vec<Rule>),
    Set(Box<SetState>),
    Elements(NameMap<ElementState>),
    Element(ElementState),
    Counter(Counter),
}

/// The undo record of a transaction: one [`Undo`] per applied operation that changed
/// something, and, in the same order, what the ones marked saved replaced.
#[derive(Debug, Default)]
struct Undos {
    log: Vec<Undo>,
    saved: Vec<Saved>,
}

impl Undos {
    fn push(&mut self, u: Undo) {
        self.log.push(u);
    }

    /// Records `u`, which replaced or removed `s`.
    fn save(&mut self, u: Undo, s: Saved) {
        self.log.push(u);
        self.saved.push(s);
    }

    /// The last record, with what it saved.
    fn pop(&mut self) -> Option<(Undo, Option<Saved>)> {
        let u = self.log.pop()?;
        let s = if u.saved() { self.saved.pop() } else { None };
        Some((u, s))
    }
}

/// How many objects a large transaction adds, to size the maps once.
struct SizeHint<'a> {
    chains: usize,
    /// Element `add`s by container name (of the first few containers).
    elements: Vec<(&'a str, usize)>,
}

/// Whether two names are equal, comparing where they point first (the names of a
/// transaction's elements are usually shared).
fn same_name(a: &str, b: &str) -> bool {
    std::ptr::eq(a, b) || a == b
}

impl<'a> SizeHint<'a> {
    /// Below this many operations, maps grow as they go.
    const MIN_OPERATIONS: usize = 256;
    /// The most containers counted (the element store's are 8).
    const MAX_CONTAINERS: usize = 16;

    /// No hint: maps grow as they go.
    fn none() -> Self {
        SizeHint {
            chains: 0,
            elements: Vec::new(),
        }
    }

    fn of(tx: &'a Transaction) -> Self {
        let mut hint = Self::none();
        if tx.operations.len() < Self::MIN_OPERATIONS {
            return hint;
        }
        for op in &tx.operations {
            if !matches!(op.verb, Verb::Add | Verb::Create) {
                continue;
            }
            match &op.object {
                Object::Chain(_) => hint.chains += 1,
                Object::Element(e) => {
                    let name = e.container.as_str();
                    match hint.elements.iter().position(|(c, _)| same_name(c, name)) {
                        Some(i) => hint.elements[i].1 += 1,
                        None if hint.elements.len() < Self::MAX_CONTAINERS => hint.elements.push((name, 1)),
                        None => {}
                    }
                }
                _ => {}
            }
        }
        hint
    }

    /// The number of element `add`s into `container`, the first time only.
    fn take_elements(&mut self, container: &str) -> Option<usize> {
        if self.elements.is_empty() {
            return None;
        }
        let i = self.elements.iter().position(|(c, _)| same_name(c, container))?;
        Some(self.elements.swap_remove(i).1)
    }
}

/// A transaction being applied in pieces (see [`State::apply_more`]): what to undo, how
/// far it got, and the failure that stopped it.
#[derive(Debug)]
pub(crate) struct Applying {
    key: (Family, String),
    undo: Undos,
    applied: usize,
    failed: Option<NftError>,
}

impl Applying {
    /// Nothing of `tx` applied yet; `tx` may still grow (operations are only appended).
    pub(crate) fn new(tx: &Transaction) -> Self {
        Applying {
            key: (tx.family, tx.table.clone()),
            undo: Undos {
                log: Vec::with_capacity(tx.operations.capacity()),
                saved: Vec::new(),
            },
            applied: 0,
            failed: None,
        }
    }
}

/// The rule set: tables by family and name. Serialized as a list of tables, each with
/// its `family` and `name`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct State {
    /// Tables by (family, name).
    pub tables: BTreeMap<(Family, String), TableState>,
}

impl Serialize for State {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Named<'a> {
            family: Family,
            name: &'a str,
            #[serde(flatten)]
            table: &'a TableState,
        }
        s.collect_seq(self.tables.iter().map(|((family, name), table)| Named {
            family: *family,
            name,
            table,
        }))
    }
}

impl State {
    /// An empty rule set.
    pub fn new() -> Self {
        State::default()
    }

    /// The table `family name`, if it exists.
    pub fn table(&self, family: Family, name: &str) -> Option<&TableState> {
        self.tables
            .iter()
            .find(|((f, n), _)| *f == family && n == name)
            .map(|(_, t)| t)
    }

    /// Applies a transaction atomically: on error nothing changes. Semantics of
    /// knftables' fake: `add` of an existing object is a no-op, `create` fails on it,
    /// `delete`/`flush` fail on a missing one, element `add` replaces an element with the
    /// same key, rules and map values must reference existing chains, sets and maps.
    /// The cost grows with the transaction, not with the rule set: each operation
    /// records how to undo itself, and a failure replays the record backwards.
    pub fn apply(&mut self, tx: &Transaction) -> Result<(), NftError> {
        if tx.is_empty() {
            return Ok(());
        }
        let mut a = Applying::new(tx);
        let mut hint = SizeHint::of(tx);
        self.apply_ops(&mut a, tx, &mut hint, &[]);
        self.finish(a, tx, true)
    }

    /// Applies the operations of `tx` that `a` has not applied yet (the transaction was
    /// built further since): while the proxier writes a large transaction, each piece
    /// is applied while its objects are still in the cache. After a failure nothing more
    /// is applied (and what was applied has been undone): [`State::finish`] reports it.
    pub(crate) fn apply_more(&mut self, a: &mut Applying, tx: &Transaction) {
        self.apply_ops(a, tx, &mut SizeHint::none(), &[]);
    }

    /// [`State::apply_more`], told that the rules at indices `plain` (ascending, among the
    /// operations not applied yet) reference no set, map or chain: their text is not
    /// scanned for references (the proxier's DNAT rules, one per service chain, hold only
    /// addresses, ports and keywords).
    pub(crate) fn apply_more_plain(&mut self, a: &mut Applying, tx: &Transaction, plain: &[usize]) {
        self.apply_ops(a, tx, &mut SizeHint::none(), plain);
    }

    /// Ends an application started with [`Applying::new`]: keeps what was applied if
    /// `keep` and nothing failed, otherwise undoes it; the first failure, if any.
    pub(crate) fn finish(&mut self, a: Applying, tx: &Transaction, keep: bool) -> Result<(), NftError> {
        let Applying {
            key,
            mut undo,
            failed,
            ..
        } = a;
        if !keep {
            while let Some((u, saved)) = undo.pop() {
                self.undo(&key, tx, u, saved);
            }
        }
        match failed {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// Makes room in table `family name` for `chains` more chains and, in each
    /// `(kind, container, n)`, `n` more elements (before a large transaction applied in
    /// pieces, which gives no [`SizeHint`]).
    pub(crate) fn reserve(
        &mut self,
        family: Family,
        name: &str,
        chains: usize,
        elements: &[(ContainerKind, &str, usize)],
    ) {
        let Some(t) = self.tables.get_mut(&(family, name.to_owned())) else {
            return;
        };
        t.chains.reserve(chains);
        for (kind, c, n) in elements {
            if let Ok(c) = t.container(*kind, c) {
                c.elements.reserve(*n);
            }
        }
    }

    fn apply_ops(&mut self, a: &mut Applying, tx: &Transaction, hint: &mut SizeHint<'_>, plain: &[usize]) {
        if a.failed.is_some() {
            return;
        }
        // the rules known to reference nothing, in order
        let mut plain = plain.iter().copied().peekable();
        let key = &a.key;
        let undo = &mut a.undo;
        // the table, looked up once until an operation on the table itself
        let mut table: Option<&mut TableState> = None;
        // the name of the chain the previous operation created (still empty): flushing it
        // next (as the proxier does with every chain it adds) changes nothing, and is not
        // looked up
        let mut fresh: Option<*const u8> = None;
        for (i, op) in tx.operations.iter().enumerate().skip(a.applied) {
            let created = fresh.take();
            let is_plain = plain.next_if_eq(&i).is_some();
            // (undo records hold an operation's index in 32 bits)
            let Ok(index) = u32::try_from(i) else {
                while let Some((u, saved)) = undo.pop() {
                    self.undo(key, tx, u, saved);
                }
                a.failed = Some(NftError::Limit {
                    service: "-".into(),
                    what: "operations of a transaction".into(),
                    value: String::new(),
                    len: tx.operations.len(),
                    max: u32::MAX as usize,
                });
                return;
            };
            let r = match &op.object {
                Object::Table(t) => {
                    table = None;
                    self.apply_table_op(key, op.verb, t, undo)
                }
                Object::Chain(c) if op.verb == Verb::Flush && created == Some(c.name.as_ptr()) => Ok(()),
                obj => {
                    if table.is_none() {
                        table = self.tables.get_mut(key);
                    }
                    match table.as_deref_mut() {
                        Some(t) => {
                            let r = Self::apply_op(t, index, op.verb, obj, undo, hint, is_plain);
                            if let Object::Chain(c) = obj
                                && matches!(undo.log.last(), Some(Undo::Chain(j, false)) if *j == index)
                            {
                                fresh = Some(c.name.as_ptr());
                            }
                            r
                        }
                        None => Err(NftError::not_found("table", &key.1)),
                    }
                }
            };
            if let Err(e) = r {
                while let Some((u, saved)) = undo.pop() {
                    self.undo(key, tx, u, saved);
                }
                a.failed = Some(NftError::Operation {
                    index: i,
                    source: Box::new(e),
                });
                return;
            }
        }
        a.applied = tx.operations.len();
    }

    fn undo(&mut self, key: &(Family, String), tx: &Transaction, u: Undo, saved: Option<Saved>) {
        if let Undo::Table(_) = u {
            match saved {
                Some(Saved::Table(t)) => {
                    self.tables.insert(key.clone(), *t);
                }
                _ => {
                    self.tables.remove(key);
                }
            }
            return;
        }
        let Some(t) = self.tables.get_mut(key) else { return };
        let op = |i: u32| &tx.operations[i as usize];
        match u {
            Undo::Table(_) => {}
            Undo::Chain(i, _) => {
                let Object::Chain(c) = &op(i).object else { return };
                match saved {
                    Some(Saved::Chain(old)) => {
                        t.chains.insert(c.name.clone(), old);
                    }
                    _ => {
                        t.chains.remove(&c.name);
                    }
                }
            }
            Undo::Rules(i) => {
                if let Object::Chain(c) = &op(i).object
                    && let Some(cs) = t.chains.get_mut(&c.name)
                    && let Some(Saved::Rules(rules)) = saved
                {
                    cs.rules = rules;
                }
            }
            Undo::PopRule(i) => {
                let o = op(i);
                if let Object::Rule(r) = &o.object
                    && let Some(c) = t.chains.get_mut(&r.chain)
                {
                    if o.verb == Verb::Insert {
                        c.rules.remove(0);
                    } else {
                        c.rules.pop();
                    }
                }
            }
            Undo::Set(i, _) => {
                let (m, s) = match &op(i).object {
                    Object::Set(s) => (&mut t.sets, s),
                    Object::Map(s) => (&mut t.maps, s),
                    _ => return,
                };
                match saved {
                    Some(Saved::Set(old)) => {
                        m.insert(SharedStr::from(&s.name), *old);
                    }
                    _ => {
                        m.remove(s.name.as_str());
                    }
                }
            }
            Undo::Elements(i) => {
                let (kind, s) = match &op(i).object {
                    Object::Set(s) => (ContainerKind::Set, s),
                    Object::Map(s) => (ContainerKind::Map, s),
                    _ => return,
                };
                if let Ok(c) = t.container(kind, &s.name)
                    && let Some(Saved::Elements(elements)) = saved
                {
                    c.elements = elements;
                }
            }
            Undo::Element(i, _) => {
                let Object::Element(e) = &op(i).object else { return };
                if let Ok(c) = t.container(e.kind, &e.container) {
                    match saved {
                        Some(Saved::Element(old)) => {
                            c.elements.insert(e.key.clone(), old);
                        }
                        _ => {
                            c.elements.remove(&e.key);
                        }
                    }
                }
            }
            Undo::Counter(i, _) => {
                let Object::Counter(c) = &op(i).object else { return };
                match saved {
                    Some(Saved::Counter(old)) => {
                        t.counters.insert(SharedStr::from(&c.name), old);
                    }
                    _ => {
                        t.counters.remove(c.name.as_str());
                    }
                }
            }
        }
    }

    /// An operation on the table itself.
    fn apply_table_op(
        &mut self,
        key: &(Family, String),
        verb: Verb,
        t: &Table,
        undo: &mut Undos,
    ) -> Result<(), NftError> {
        {
            let exists = self.tables.contains_key(key);
            match verb {
                Verb::Add | Verb::Create => {
                    if exists && verb == Verb::Create {
                        return Err(NftError::exists("table", &key.1));
                    }
                    if !exists {
                        self.tables.insert(key.clone(), TableState::new(t.clone()));
                        undo.push(Undo::Table(false));
                    }
                }
                Verb::Flush => {
                    let Some(old) = self.tables.insert(key.clone(), TableState::new(t.clone())) else {
                        self.tables.remove(key);
                        return Err(NftError::not_found("table", &key.1));
                    };
                    undo.save(Undo::Table(true), Saved::Table(Box::new(old)));
                }
                Verb::Delete | Verb::Destroy => match self.tables.remove(key) {
                    Some(old) => undo.save(Undo::Table(true), Saved::Table(Box::new(old))),
                    None if verb == Verb::Delete => return Err(NftError::not_found("table", &key.1)),
                    None => {}
                },
                v => return Err(NftError::unsupported(v, "table")),
            }
        }
        Ok(())
    }

    /// An operation on an object of `table` (`i`: its index in the transaction).
    #[allow(clippy::too_many_arguments)]
    fn apply_op(
        table: &mut TableState,
        i: u32,
        verb: Verb,
        obj: &Object,
        undo: &mut Undos,
        hint: &mut SizeHint<'_>,
        plain: bool,
    ) -> Result<(), NftError> {
        match obj {
            Object::Table(_) => {}
            Object::Chain(c) => match verb {
                Verb::Add | Verb::Create => {
                    if hint.chains > 0 {
                        table.chains.reserve(std::mem::take(&mut hint.chains));
                    }
                    match table.chains.entry(c.name.clone()) {
                        Entry::Occupied(_) => {
                            if verb == Verb::Create {
                                return Err(NftError::exists("chain", &c.name));
                            }
                        }
                        Entry::Vacant(v) => {
                            v.insert(ChainState {
                                chain: c.clone(),
                                rules: Vec::new(),
                            });
                            undo.push(Undo::Chain(i, false));
                        }
                    }
                }
                Verb::Flush => match table.chains.get_mut(&c.name) {
                    Some(cs) => {
                        if !cs.rules.is_empty() {
                            undo.save(Undo::Rules(i), Saved::Rules(std::mem::take(&mut cs.rules)));
                        }
                    }
                    None => return Err(NftError::not_found("chain", &c.name)),
                },
                Verb::Delete | Verb::Destroy => match table.chains.remove(&c.name) {
                    Some(old) => undo.save(Undo::Chain(i, true), Saved::Chain(old)),
                    None if verb == Verb::Delete => return Err(NftError::not_found("chain", &c.name)),
                    None => {}
                },
                v => return Err(NftError::unsupported(v, "chain")),
            },
            Object::Rule(r) => match verb {
                Verb::Add | Verb::Insert => {
                    // (a missing chain is reported before a missing reference)
                    debug_assert!(!(plain && may_reference(&r.rule)), "{}", r.rule);
                    if !plain && may_reference(&r.rule) {
                        table.check_chain(&r.chain)?;
                        table.check_rule_refs(&r.rule)?;
                    }
                    let rules = &mut table
                        .chains
                        .get_mut(&r.chain)
                        .ok_or_else(|| NftError::not_found("chain", &r.chain))?
                        .rules;
                    // most chains (a Service's) hold one rule: room for one, not four
                    rules.reserve_exact(usize::from(rules.is_empty()));
                    if verb == Verb::Add {
                        rules.push(r.clone());
                    } else {
                        rules.insert(0, r.clone());
                    }
                    undo.push(Undo::PopRule(i));
                }
                v => {
                    table.check_chain(&r.chain)?;
                    return Err(NftError::unsupported(v, "rule"));
                }
            },
            Object::Set(s) | Object::Map(s) => {
                let (kind, what) = if matches!(obj, Object::Set(_)) {
                    (ContainerKind::Set, "set")
                } else {
                    (ContainerKind::Map, "map")
                };
                let m = match kind {
                    ContainerKind::Set => &mut table.sets,
                    ContainerKind::Map => &mut table.maps,
                };
                match verb {
                    Verb::Add | Verb::Create => {
                        if m.contains_key(s.name.as_str()) {
                            if verb == Verb::Create {
                                return Err(NftError::exists(what, &s.name));
                            }
                        } else {
                            m.insert(
                                SharedStr::from(&s.name),
                                SetState {
                                    set: Set::clone(s),
                                    elements: NameMap::default(),
                                },
                            );
                            undo.push(Undo::Set(i, false));
                        }
                    }
                    Verb::Flush => match m.get_mut(s.name.as_str()) {
                        Some(ss) => {
                            if !ss.elements.is_empty() {
                                undo.save(
                                    Undo::Elements(i),
                                    Saved::Elements(std::mem::take(&mut ss.elements)),
                                );
                            }
                        }
                        None => return Err(NftError::not_found(what, &s.name)),
                    },
                    Verb::Delete | Verb::Destroy => match m.remove(s.name.as_str()) {
                        Some(old) => undo.save(Undo::Set(i, true), Saved::Set(Box::new(old))),
                        None if verb == Verb::Delete => return Err(NftError::not_found(what, &s.name)),
                        None => {}
                    },
                    v => return Err(NftError::unsupported(v, what)),
                }
            }
            Object::Element(e) => {
                if e.kind == ContainerKind::Map
                    && matches!(verb, Verb::Add | Verb::Create)
                    && let Some(v) = &e.value
                    && let Some(target) = v.strip_prefix("goto ").or_else(|| v.strip_prefix("jump "))
                    // (a target with a space is not a chain name, and not checked: looked
                    // for only when no chain has the name, which is rare)
                    && !table.chains.contains_key(target)
                    && !target.contains(' ')
                {
                    return Err(NftError::not_found("chain", target));
                }
                let c = table.container(e.kind, &e.container)?;
                match verb {
                    Verb::Add | Verb::Create => {
                        if let Some(n) = hint.take_elements(&e.container) {
                            c.elements.reserve(n);
                        }
                        if verb == Verb::Create && c.elements.contains_key(&e.key) {
                            return Err(NftError::exists("element", &e.key));
                        }
                        let old = c.elements.insert(
                            e.key.clone(),
                            ElementState {
                                value: e.value.clone(),
                                comment: e.comment.clone(),
                            },
                        );
                        match old {
                            Some(old) => undo.save(Undo::Element(i, true), Saved::Element(old)),
                            None => undo.push(Undo::Element(i, false)),
                        }
                    }
                    Verb::Delete | Verb::Destroy => match c.elements.remove(&e.key) {
                        Some(old) => undo.save(Undo::Element(i, true), Saved::Element(old)),
                        None if verb == Verb::Delete => return Err(NftError::not_found("element", &e.key)),
                        None => {}
                    },
                    v => return Err(NftError::unsupported(v, "element")),
                }
            }
            Object::Counter(c) => match verb {
                Verb::Add | Verb::Create => {
                    if table.counters.contains_key(c.name.as_str()) {
                        if verb == Verb::Create {
                            return Err(NftError::exists("counter", &c.name));
                        }
                    } else {
                        table.counters.insert(SharedStr::from(&c.name), c.clone());
                        undo.push(Undo::Counter(i, false));
                    }
                }
                Verb::Reset => {
                    if !table.counters.contains_key(c.name.as_str()) {
                        return Err(NftError::not_found("counter", &c.name));
                    }
                }
                Verb::Delete | Verb::Destroy => match table.counters.remove(c.name.as_str()) {
                    Some(old) => undo.save(Undo::Counter(i, true), Saved::Counter(old)),
                    None if verb == Verb::Delete => return Err(NftError::not_found("counter", &c.name)),
                    None => {}
                },
                v => return Err(NftError::unsupported(v, "counter")),
            },
        }
        Ok(())
    }

    /// The rule set as knftables' fake `Dump()` prints it: per table, the table, its
    /// chains, sets, maps and counters (each sorted by name), the rules of each chain
    /// (chains sorted), then the elements of each set and map (sorted by key, as
    /// kube-oracle prints them).
    pub fn dump(&self) -> String {
        let mut out = String::new();
        for ((family, name), t) in &self.tables {
            t.dump_into(&mut out, *family, name);
        }
        out
    }

    /// The whole rule set as one transaction of `add` operations (what `dump` prints),
    /// for loading it into an empty kernel table.
    pub fn to_transaction(&self, family: Family, table: &str) -> Transaction {
        let mut tx = Transaction::new(family, table);
        let Some(t) = self.table(family, table) else {
            return tx;
        };
        let sorted = t.sorted();
        tx.operations.reserve(sorted.len());
        tx.add(Object::Table(t.table.clone()));
        for c in &sorted.chains {
            tx.add(Object::Chain(c.chain.clone()));
        }
        for s in &sorted.sets {
            tx.add(Object::Set(Box::new(s.set.clone())));
        }
        for s in &sorted.maps {
            tx.add(Object::Map(Box::new(s.set.clone())));
        }
        for c in &sorted.counters {
            tx.add(Object::Counter((*c).clone()));
        }
        for c in &sorted.chains {
            for r in &c.rules {
                tx.add(Object::Rule(r.clone()));
            }
        }
        for (kind, s) in sorted
            .sets
            .iter()
            .map(|s| (ContainerKind::Set, s))
            .chain(sorted.maps.iter().map(|s| (ContainerKind::Map, s)))
        {
            let container = SharedStr::from(&s.set.name);
            for (k, e) in sorted_elements(s) {
                tx.add(Object::Element(e.to_element(kind, &container, k)));
            }
        }
        tx
    }
}

/// A table's objects in dump order.
struct Sorted<'a> {
    chains: Vec<&'a ChainState>,
    sets: Vec<&'a SetState>,
    maps: Vec<&'a SetState>,
    counters: Vec<&'a Counter>,
    /// How many elements the sets and maps hold.
    elements: usize,
}

/// The elements of `s` sorted by key.
fn sorted_elements(s: &SetState) -> Vec<(&SharedStr, &ElementState)> {
    sorted(&s.elements)
}

impl Sorted<'_> {
    /// How many `add` operations dump the table.
    fn len(&self) -> usize {
        1 + self.chains.len()
            + self.sets.len()
            + self.maps.len()
            + self.counters.len()
            + self.chains.iter().map(|c| c.rules.len()).sum::<usize>()
            + self.elements
    }
}

impl TableState {
    fn sorted(&self) -> Sorted<'_> {
        let values = |m| -> Vec<_> { sorted(m).into_iter().map(|(_, v)| v).collect() };
        let sets: Vec<&SetState> = values(&self.sets);
        let maps: Vec<&SetState> = values(&self.maps);
        let elements = sets
            .iter()
            .chain(maps.iter())
            .map(|s| s.elements.len())
            .sum::<usize>();
        Sorted {
            chains: sorted(&self.chains).into_iter().map(|(_, c)| c).collect(),
            sets,
            maps,
            counters: sorted(&self.counters).into_iter().map(|(_, c)| c).collect(),
            elements,
        }
    }

    /// Appends the table's `add` lines (see [`State::dump`]).
    fn dump_into(&self, out: &mut String, f: Family, n: &str) {
        let sorted = self.sorted();
        out.reserve(sorted.len() * 128);
        let h = &mut Heads::new(f, n);
        write_table(out, h, Verb::Add, &self.table);
        for c in &sorted.chains {
            write_chain(out, h, Verb::Add, &c.chain);
        }
        for s in &sorted.sets {
            write_set(out, h, Verb::Add, false, &s.set);
        }
        for s in &sorted.maps {
            write_set(out, h, Verb::Add, true, &s.set);
        }
        for c in &sorted.counters {
            write_counter(out, h, Verb::Add, c);
        }
        for c in &sorted.chains {
            for r in &c.rules {
                write_rule(out, h, Verb::Add, r);
            }
        }
        for s in sorted.sets.iter().chain(sorted.maps.iter()) {
            for (k, e) in sorted_elements(s) {
                write_element_parts(
                    out,
                    h,
                    Verb::Add,
                    &s.set.name,
                    k,
                    e.value.as_deref(),
                    e.comment.as_deref(),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tx() -> Transaction {
        Transaction::new(Family::Ip, "kube-proxy")
    }

    #[test]
    fn a_failure_undoes_every_kind_of_change() {
        let mut st = State::new();
        let mut t = tx();
        t.add_table(Some("c"));
        for c in ["a", "b", "gone"] {
            t.add_chain(c);
        }
        t.add_rule("a", "goto b", None);
        t.add_rule("a", "counter", None);
        for (name, kind) in [("s", ContainerKind::Set), ("m", ContainerKind::Map)] {
            let set = Set {
                name: name.into(),
                set_type: "ipv4_addr".into(),
                flags: vec![],
                timeout: None,
                comment: None,
            };
            match kind {
                ContainerKind::Set => t.add_set(set),
                ContainerKind::Map => t.add_map(set),
            }
        }
        t.add_element(ContainerKind::Set, "s", "10.0.0.1".into(), None, None);
        t.add_element(
            ContainerKind::Map,
            "m",
            "10.0.0.1".into(),
            Some("goto b".into()),
            None,
        );
        t.add_counter("n");
        st.apply(&t).unwrap();
        let before = st.clone();
        let mut bad = tx();
        bad.add_element(
            ContainerKind::Map,
            "m",
            "10.0.0.1".into(),
            Some("goto a".into()),
            None,
        );
        bad.add_element(ContainerKind::Set, "s", "10.0.0.2".into(), None, None);
        bad.flush_chain("a");
        bad.add_rule("a", "drop", None);
        bad.delete_chain("gone");
        bad.flush(Object::Set(Box::new(Set::named("s"))));
        bad.delete(Object::Map(Box::new(Set::named("m"))));
        bad.delete(Object::Counter(Counter {
            name: "n".into(),
            comment: None,
        }));
        bad.add_chain("new");
        bad.add_counter("new");
        bad.delete_chain("missing");
        assert!(matches!(
            st.apply(&bad),
            Err(NftError::Operation { index: 10, .. })
        ));
        assert_eq!(st, before);
        // the table itself: deleted, then a failure
        let mut bad = tx();
        bad.delete(Object::Table(Table { comment: None }));
        bad.add_chain("x");
        assert!(st.apply(&bad).is_err());
        assert_eq!(st, before);
        // applied in pieces, then given up
        let mut t = tx();
        t.add_chain("c");
        let mut a = Applying::new(&t);
        st.apply_more(&mut a, &t);
        t.add_rule("c", "drop", None);
        st.apply_more(&mut a, &t);
        assert_ne!(st, before);
        st.finish(a, &t, false).unwrap();
        assert_eq!(st, before);
    }

    #[test]
    fn finds_references() {
        for (rule, want) in [
            ("", false),
            ("goto", true),
            ("jump", true),
            ("@", true),
            ("gotx jumx numgen random", false),
            (
                "meta l4proto tcp dnat ip addr . port to numgen random mod 2 map { 0 : 10.0.0.1 . 80 }",
                false,
            ),
            ("ip daddr . meta l4proto . th dport vmap @service-ips", true),
            (
                "numgen random mod 2 vmap { 0 : goto endpoint-A , 1 : goto endpoint-B }",
                true,
            ),
            ("0123456jump", true),
            ("01234567goto", true),
            ("0123456go", false),
            ("0123456gotojump@", true),
            ("xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx@", true),
        ] {
            assert_eq!(may_reference(rule), want, "{rule:?}");
            assert_eq!(
                may_reference(rule),
                rule.contains('@') || rule.contains("goto") || rule.contains("jump")
            );
        }
    }

    #[test]
    fn applies_and_dumps() {
        let mut st = State::new();
        let mut t = tx();
        t.add_table(Some("rules for kube-proxy"));
        t.add_chain("b");
        t.add_chain("a");
        t.add_rule("a", "goto b", None);
        t.add_set(Set {
            name: "s".into(),
            set_type: "ipv4_addr".into(),
            flags: vec![],
            timeout: None,
            comment: None,
        });
        t.add_element(ContainerKind::Set, "s", "10.0.0.2".into(), None, None);
        t.add_element(ContainerKind::Set, "s", "10.0.0.10".into(), None, None);
        st.apply(&t).unwrap();
        assert_eq!(
            st.dump(),
            "add table ip kube-proxy { comment \"rules for kube-proxy\" ; }\n\
             add chain ip kube-proxy a\n\
             add chain ip kube-proxy b\n\
             add set ip kube-proxy s { type ipv4_addr ; }\n\
             add rule ip kube-proxy a goto b\n\
             add element ip kube-proxy s { 10.0.0.10 }\n\
             add element ip kube-proxy s { 10.0.0.2 }\n"
        );
        // atomic: a failing transaction changes nothing
        let before = st.clone();
        let mut bad = tx();
        bad.flush_chain("a");
        bad.delete_chain("zzz");
        assert!(st.apply(&bad).is_err());
        assert_eq!(st, before);
        let mut bad = tx();
        bad.add_rule("a", "goto nowhere", None);
        assert!(st.apply(&bad).is_err());
        let mut bad = tx();
        bad.delete_element(ContainerKind::Set, "s", "1.1.1.1".into());
        assert!(st.apply(&bad).is_err());
        // a map value's goto target must be a chain, unless it holds a space
        let mut small = State::new();
        let mut t = tx();
        t.add_table(None);
        t.add_chain("a");
        t.add_map(Set {
            name: "m".into(),
            set_type: "ipv4_addr : verdict".into(),
            flags: vec![],
            timeout: None,
            comment: None,
        });
        small.apply(&t).unwrap();
        for (value, ok) in [
            ("goto nowhere", false),
            ("jump nowhere", false),
            ("goto a", true),
            ("goto no where", true),
            ("drop", true),
        ] {
            let mut t = tx();
            t.add_element(
                ContainerKind::Map,
                "m",
                "10.0.0.9".into(),
                Some(value.into()),
                None,
            );
            let mut copy = small.clone();
            match copy.apply(&t) {
                Ok(()) => assert!(ok, "{value}"),
                Err(e) => {
                    assert!(!ok, "{value}: {e}");
                    assert!(e.to_string().contains("nowhere"), "{e}");
                    assert_eq!(copy, small);
                }
            }
        }
        // a chain created and flushed at once is empty, and its rules land in it
        let mut t = tx();
        t.add_chain("fresh");
        t.flush_chain("fresh");
        t.add_rule("fresh", "drop", None);
        t.flush_chain("fresh");
        t.add_rule("fresh", "accept", None);
        let mut copy = small.clone();
        copy.apply(&t).unwrap();
        let rules = &copy.table(Family::Ip, "kube-proxy").unwrap().chains["fresh"].rules;
        assert_eq!(
            rules.iter().map(|r| r.rule.as_str()).collect::<Vec<_>>(),
            ["accept"]
        );
        // to_transaction reproduces the state
        let mut again = State::new();
        again.apply(&st.to_transaction(Family::Ip, "kube-proxy")).unwrap();
        assert_eq!(again, st);
    }

    /// Undo records stay 8 bytes and stored elements 40; a table serializes its elements
    /// as [`Element`]s serialize (kind, container, key, value, comment), and reads them back.
    #[test]
    fn compact_records_and_element_json() {
        assert_eq!(std::mem::size_of::<Undo>(), 8);
        assert_eq!(std::mem::size_of::<ElementState>(), 40);
        let mut t = tx();
        t.add_table(None);
        t.add_chain("c");
        t.add_set(Set {
            name: "s".into(),
            set_type: "ipv4_addr".into(),
            flags: vec![],
            timeout: None,
            comment: None,
        });
        t.add_map(Set {
            name: "m".into(),
            set_type: "ipv4_addr : verdict".into(),
            flags: vec![],
            timeout: None,
            comment: None,
        });
        let set_elem = Element {
            kind: ContainerKind::Set,
            container: "s".into(),
            key: "10.0.0.1".into(),
            value: None,
            comment: None,
        };
        let map_elem = Element {
            kind: ContainerKind::Map,
            container: "m".into(),
            key: "10.0.0.2".into(),
            value: Some("goto c".into()),
            comment: Some("ns/svc".into()),
        };
        t.add(Object::Element(set_elem.clone()));
        t.add(Object::Element(map_elem.clone()));
        let mut st = State::new();
        st.apply(&t).unwrap();
        let v = serde_json::to_value(&st).unwrap();
        let table = &v[0];
        assert_eq!(
            table["sets"]["s"]["elements"]["10.0.0.1"],
            serde_json::to_value(&set_elem).unwrap()
        );
        assert_eq!(
            table["maps"]["m"]["elements"]["10.0.0.2"],
            serde_json::to_value(&map_elem).unwrap()
        );
        assert_eq!(table["maps"]["m"]["set"]["name"], "m");
        let back: TableState = serde_json::from_value(table.clone()).unwrap();
        assert_eq!(&back, st.table(Family::Ip, "kube-proxy").unwrap());
    }
}
