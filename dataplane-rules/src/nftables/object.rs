//! The nftables objects kube-proxy writes, typed as knftables types them: a table, chains
//! (regular or base chains with type, hook and priority), rules, sets, maps, their
//! elements and named counters.
//!
//! Follows knftables v0.0.22 (`types.go`, `objects.go`), the version Kubernetes v1.37.2 pins.

use serde::{Deserialize, Serialize};
use std::borrow::Borrow;
use std::fmt::{self, Write as _};
use std::ops::Deref;
use std::sync::Arc;

/// An immutable string shared by reference count: chain names, rule text, element keys
/// and values. A transaction and the rule set it is applied to hold the same strings, so
/// applying an operation copies pointers, not text. Compares, hashes, orders, prints and
/// serializes as the `str` it holds (a map keyed by it is looked up with a `&str`).
#[derive(Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SharedStr(Arc<str>);

impl SharedStr {
    /// The text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Deref for SharedStr {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for SharedStr {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for SharedStr {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl From<&str> for SharedStr {
    fn from(s: &str) -> Self {
        SharedStr(Arc::from(s))
    }
}

impl From<String> for SharedStr {
    fn from(s: String) -> Self {
        SharedStr(Arc::from(s))
    }
}

impl From<&String> for SharedStr {
    fn from(s: &String) -> Self {
        SharedStr(Arc::from(s.as_str()))
    }
}

impl From<&SharedStr> for SharedStr {
    fn from(s: &SharedStr) -> Self {
        s.clone()
    }
}

impl From<SharedStr> for String {
    fn from(s: SharedStr) -> Self {
        s.0.as_ref().to_owned()
    }
}

impl PartialEq<str> for SharedStr {
    fn eq(&self, other: &str) -> bool {
        *self.0 == *other
    }
}

impl PartialEq<&str> for SharedStr {
    fn eq(&self, other: &&str) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<String> for SharedStr {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<SharedStr> for str {
    fn eq(&self, other: &SharedStr) -> bool {
        *self == *other.0
    }
}

impl PartialEq<SharedStr> for &str {
    fn eq(&self, other: &SharedStr) -> bool {
        **self == *other.0
    }
}

impl PartialEq<SharedStr> for String {
    fn eq(&self, other: &SharedStr) -> bool {
        **self == *other.0
    }
}

impl fmt::Debug for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.0, f)
    }
}

impl fmt::Display for SharedStr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for SharedStr {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for SharedStr {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(SharedStr::from)
    }
}

/// The address family of a table (`nft` family keyword).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Family {
    /// `ip`: IPv4.
    Ip,
    /// `ip6`: IPv6.
    Ip6,
    /// `inet`: both.
    Inet,
}

impl Family {
    /// The keyword as `nft` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Family::Ip => "ip",
            Family::Ip6 => "ip6",
            Family::Inet => "inet",
        }
    }
}

impl fmt::Display for Family {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Table {
    /// Table comment (`{ comment "..." ; }`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// The type of a base chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChainType {
    /// `filter`.
    Filter,
    /// `nat`.
    Nat,
    /// `route`.
    Route,
}

impl ChainType {
    /// The keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            ChainType::Filter => "filter",
            ChainType::Nat => "nat",
            ChainType::Route => "route",
        }
    }
}

/// The netfilter hook of a base chain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Hook {
    /// `prerouting`.
    Prerouting,
    /// `input`.
    Input,
    /// `forward`.
    Forward,
    /// `output`.
    Output,
    /// `postrouting`.
    Postrouting,
}

impl Hook {
    /// The keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            Hook::Prerouting => "prerouting",
            Hook::Input => "input",
            Hook::Forward => "forward",
            Hook::Output => "output",
            Hook::Postrouting => "postrouting",
        }
    }
}

/// What makes a chain a base chain: type, hook and numeric priority (knftables prints
/// named priorities such as `dstnat - 10` as their number, `-110`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct BaseChain {
    /// Chain type.
    #[serde(rename = "type")]
    pub chain_type: ChainType,
    /// Hook.
    pub hook: Hook,
    /// Priority.
    pub priority: i32,
}

/// A chain; `base` is set for base chains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chain {
    /// Chain name.
    pub name: SharedStr,
    /// Type, hook and priority of a base chain.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base: Option<BaseChain>,
    /// Chain comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl Chain {
    /// A regular chain without comment.
    pub fn named(name: impl Into<SharedStr>) -> Self {
        Chain {
            name: name.into(),
            base: None,
            comment: None,
        }
    }
}

/// A rule: its chain, the rule text (as `knftables.Concat` joins it) and a comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// The chain holding the rule.
    pub chain: SharedStr,
    /// The rule text.
    pub rule: SharedStr,
    /// The rule comment (`comment "..."` after the rule).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// A set flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SetFlag {
    /// `constant`.
    Constant,
    /// `dynamic`.
    Dynamic,
    /// `interval`.
    Interval,
    /// `timeout`.
    Timeout,
}

impl SetFlag {
    /// The keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            SetFlag::Constant => "constant",
            SetFlag::Dynamic => "dynamic",
            SetFlag::Interval => "interval",
            SetFlag::Timeout => "timeout",
        }
    }
}

/// A named set or map (a map's `type` holds `key : value`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Set {
    /// Name.
    pub name: String,
    /// Element type, e.g. `ipv4_addr . inet_proto . inet_service` (or `... : verdict` for maps).
    #[serde(rename = "type")]
    pub set_type: String,
    /// Flags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<SetFlag>,
    /// Element timeout in seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

impl Set {
    /// A set (or map) reference by name only, as delete and flush operations carry it.
    pub fn named(name: impl Into<String>) -> Self {
        Set {
            name: name.into(),
            set_type: String::new(),
            flags: Vec::new(),
            timeout: None,
            comment: None,
        }
    }
}

/// Whether an element belongs to a set or to a map.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ContainerKind {
    /// A set.
    Set,
    /// A map.
    Map,
}

/// A set or map element. Key and value hold their parts already joined with ` . `, as
/// knftables prints them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Element {
    /// Set or map.
    pub kind: ContainerKind,
    /// Set or map name.
    pub container: SharedStr,
    /// The key (`a . b . c`).
    pub key: SharedStr,
    /// The value of a map element (`goto chain`, `drop`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<SharedStr>,
    /// The element comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// A named counter.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counter {
    /// Name.
    pub name: String,
    /// Comment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// Any object of a transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "object", rename_all = "lowercase")]
pub enum Object {
    /// The table.
    Table(Table),
    /// A chain.
    Chain(Chain),
    /// A rule.
    Rule(Rule),
    /// A set (boxed: sets are few, and an operation is as large as its largest object).
    Set(Box<Set>),
    /// A map (boxed, as a set).
    Map(Box<Set>),
    /// An element of a set or map.
    Element(Element),
    /// A named counter.
    Counter(Counter),
}

impl Object {
    /// The object type keyword (`table`, `chain`, ...).
    pub fn kind(&self) -> &'static str {
        match self {
            Object::Table(_) => "table",
            Object::Chain(_) => "chain",
            Object::Rule(_) => "rule",
            Object::Set(_) => "set",
            Object::Map(_) => "map",
            Object::Element(_) => "element",
            Object::Counter(_) => "counter",
        }
    }
}

/// The verb of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Verb {
    /// `add`: create if missing.
    Add,
    /// `create`: create, fail if it exists.
    Create,
    /// `insert`: a rule at the start of its chain.
    Insert,
    /// `replace`: a rule.
    Replace,
    /// `delete`: fail if missing.
    Delete,
    /// `destroy`: delete if present.
    Destroy,
    /// `flush`: empty a chain, set or map.
    Flush,
    /// `reset`: zero a counter.
    Reset,
}

impl Verb {
    /// The keyword.
    pub fn as_str(self) -> &'static str {
        match self {
            Verb::Add => "add",
            Verb::Create => "create",
            Verb::Insert => "insert",
            Verb::Replace => "replace",
            Verb::Delete => "delete",
            Verb::Destroy => "destroy",
            Verb::Flush => "flush",
            Verb::Reset => "reset",
        }
    }

    fn creates(self) -> bool {
        matches!(self, Verb::Add | Verb::Create)
    }
}

/// Writes `s` as Go's `%q` quotes it (what knftables does with comments).
pub(crate) fn write_quoted(out: &mut String, s: &str) {
    out.push('"');
    // the common case: nothing to escape
    if s.bytes()
        .all(|b| (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\')
    {
        out.push_str(s);
        out.push('"');
        return;
    }
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Writes one operation as knftables renders it (one line, with its newline).
#[cfg(test)]
pub(crate) fn write_operation(out: &mut String, verb: Verb, family: Family, table: &str, obj: &Object) {
    write_object(out, &mut Heads::new(family, table), verb, obj);
}

/// Writes one operation of the table of `heads` (one line, with its newline).
pub(crate) fn write_object(out: &mut String, heads: &mut Heads<'_>, verb: Verb, obj: &Object) {
    match obj {
        Object::Table(t) => write_table(out, heads, verb, t),
        Object::Chain(c) => write_chain(out, heads, verb, c),
        Object::Rule(r) => write_rule(out, heads, verb, r),
        Object::Set(s) => write_set(out, heads, verb, false, s),
        Object::Map(s) => write_set(out, heads, verb, true, s),
        Object::Element(e) => write_element(out, heads, verb, e),
        Object::Counter(c) => write_counter(out, heads, verb, c),
    }
}

/// At most how many bytes [`write_object`] writes for `verb obj` in table `table` (exact
/// for everything but quoted comments, counted at their worst, every byte escaped as
/// `\U0010ffff`, and numbers, counted at their widest): a whole transaction's text is
/// then written into one buffer of the right size, never grown and copied.
pub(crate) fn max_line_len(table: &str, verb: Verb, obj: &Object) -> usize {
    // `VERB KIND FAMILY TABLE` (`inet` is the longest family) and the newline
    let head = verb.as_str().len() + obj.kind().len() + "inet".len() + table.len() + 3 + 1;
    let quoted = |c: &Option<String>| c.as_ref().map_or(0, |c| 2 + 10 * c.len());
    let creates = verb.creates();
    head + match obj {
        Object::Table(t) => {
            if creates && t.comment.is_some() {
                " { comment  ; }".len() + quoted(&t.comment)
            } else {
                0
            }
        }
        Object::Chain(c) => {
            1 + c.name.len()
                + if creates && (c.base.is_some() || c.comment.is_some()) {
                    // ` { type filter hook postrouting priority -2147483648 ; comment  ; }`
                    " { type filter hook postrouting priority -2147483648 ; comment  ; }".len()
                        + quoted(&c.comment)
                } else {
                    0
                }
        }
        Object::Rule(r) => {
            1 + r.chain.len()
                + if matches!(verb, Verb::Add | Verb::Insert | Verb::Replace) {
                    1 + r.rule.len()
                        + r.comment.as_ref().map_or(0, |_| " comment ".len())
                        + quoted(&r.comment)
                } else {
                    0
                }
        }
        Object::Set(s) | Object::Map(s) => {
            1 + s.name.len()
                + if creates {
                    " { type  ; flags  ; timeout 18446744073709551615s ; comment  ; }".len()
                        + s.set_type.len()
                        + s.flags.iter().map(|f| f.as_str().len() + 1).sum::<usize>()
                        + quoted(&s.comment)
                } else {
                    0
                }
        }
        Object::Element(e) => {
            1 + e.container.len()
                + " {  }".len()
                + e.key.len()
                + if creates {
                    e.comment.as_ref().map_or(0, |_| " comment ".len())
                        + quoted(&e.comment)
                        + e.value.as_ref().map_or(0, |v| " : ".len() + v.len())
                } else {
                    0
                }
        }
        Object::Counter(c) => {
            1 + c.name.len()
                + if creates && c.comment.is_some() {
                    " { comment  ; }".len() + quoted(&c.comment)
                } else {
                    0
                }
        }
    }
}

const KINDS: [&str; 7] = ["table", "chain", "rule", "set", "map", "element", "counter"];
const VERBS: usize = 8;

/// The `VERB KIND FAMILY TABLE` beginnings of one table's lines, each built once.
pub(crate) struct Heads<'a> {
    family: Family,
    table: &'a str,
    /// By verb and kind; empty until first used.
    cache: [String; VERBS * KINDS.len()],
    uncached: bool,
}

impl<'a> Heads<'a> {
    pub(crate) fn new(family: Family, table: &'a str) -> Self {
        Heads {
            family,
            table,
            cache: std::array::from_fn(|_| String::new()),
            uncached: false,
        }
    }

    /// Heads written as they come, without the cache (for a few lines, building the
    /// cache costs more than it saves).
    pub(crate) fn uncached(family: Family, table: &'a str) -> Self {
        Heads {
            family,
            table,
            cache: std::array::from_fn(|_| String::new()),
            uncached: true,
        }
    }

    /// Appends the beginning of a line (`kind` indexes [`KINDS`]), not cached (a table's
    /// line: one a transaction).
    fn write(&mut self, out: &mut String, verb: Verb, kind: usize) {
        for (i, part) in [verb.as_str(), KINDS[kind], self.family.as_str(), self.table]
            .into_iter()
            .enumerate()
        {
            if i > 0 {
                out.push(' ');
            }
            out.push_str(part);
        }
    }

    /// Appends the beginning of a line and the space after it (one copy of the cached
    /// head, which holds the space).
    fn write_sp(&mut self, out: &mut String, verb: Verb, kind: usize) {
        if self.uncached {
            self.write(out, verb, kind);
            out.push(' ');
            return;
        }
        let head = &mut self.cache[verb as usize * KINDS.len() + kind];
        if head.is_empty() {
            let parts = [verb.as_str(), KINDS[kind], self.family.as_str(), self.table];
            head.reserve_exact(parts.iter().map(|p| p.len() + 1).sum());
            for part in parts {
                head.push_str(part);
                head.push(' ');
            }
        }
        out.push_str(head);
    }
}

/// A table operation (see [`write_object`]).
pub(crate) fn write_table(out: &mut String, heads: &mut Heads<'_>, verb: Verb, t: &Table) {
    heads.write(out, verb, 0);
    if verb.creates()
        && let Some(c) = &t.comment
    {
        out.push_str(" { comment ");
        write_quoted(out, c);
        out.push_str(" ; }");
    }
    out.push('\n');
}

/// A chain operation (see [`write_object`]).
pub(crate) fn write_chain(out: &mut String, heads: &mut Heads<'_>, verb: Verb, c: &Chain) {
    heads.write_sp(out, verb, 1);
    out.push_str(&c.name);
    if verb.creates() && (c.base.is_some() || c.comment.is_some()) {
        out.push_str(" {");
        if let Some(b) = &c.base {
            let _ = write!(
                out,
                " type {} hook {} priority {} ;",
                b.chain_type.as_str(),
                b.hook.as_str(),
                b.priority
            );
        }
        if let Some(cm) = &c.comment {
            out.push_str(" comment ");
            write_quoted(out, cm);
            out.push_str(" ;");
        }
        out.push_str(" }");
    }
    out.push('\n');
}

/// A rule operation (see [`write_object`]).
pub(crate) fn write_rule(out: &mut String, heads: &mut Heads<'_>, verb: Verb, r: &Rule) {
    heads.write_sp(out, verb, 2);
    out.push_str(&r.chain);
    if matches!(verb, Verb::Add | Verb::Insert | Verb::Replace) {
        out.push(' ');
        out.push_str(&r.rule);
        if let Some(cm) = &r.comment {
            out.push_str(" comment ");
            write_quoted(out, cm);
        }
    }
    out.push('\n');
}

/// A set or map operation (see [`write_object`]).
pub(crate) fn write_set(out: &mut String, heads: &mut Heads<'_>, verb: Verb, map: bool, s: &Set) {
    heads.write_sp(out, verb, if map { 4 } else { 3 });
    out.push_str(&s.name);
    if verb.creates() {
        out.push_str(" { type ");
        out.push_str(&s.set_type);
        out.push_str(" ;");
        if !s.flags.is_empty() {
            out.push_str(" flags ");
            for (i, f) in s.flags.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(f.as_str());
            }
            out.push_str(" ;");
        }
        if let Some(t) = s.timeout {
            let _ = write!(out, " timeout {t}s ;");
        }
        if let Some(cm) = &s.comment {
            out.push_str(" comment ");
            write_quoted(out, cm);
            out.push_str(" ;");
        }
        out.push_str(" }");
    }
    out.push('\n');
}

/// An element operation (see [`write_object`]).
pub(crate) fn write_element(out: &mut String, heads: &mut Heads<'_>, verb: Verb, e: &Element) {
    write_element_parts(
        out,
        heads,
        verb,
        &e.container,
        &e.key,
        e.value.as_deref(),
        e.comment.as_deref(),
    );
}

/// An element operation from the element's parts (see [`write_object`]).
#[inline]
pub(crate) fn write_element_parts(
    out: &mut String,
    heads: &mut Heads<'_>,
    verb: Verb,
    container: &str,
    key: &str,
    value: Option<&str>,
    comment: Option<&str>,
) {
    heads.write_sp(out, verb, 5);
    out.push_str(container);
    out.push_str(" { ");
    out.push_str(key);
    if verb.creates() {
        if let Some(cm) = comment {
            out.push_str(" comment ");
            write_quoted(out, cm);
        }
        if let Some(v) = value {
            out.push_str(" : ");
            out.push_str(v);
        }
    }
    out.push_str(" }\n");
}

/// A counter operation (see [`write_object`]).
pub(crate) fn write_counter(out: &mut String, heads: &mut Heads<'_>, verb: Verb, c: &Counter) {
    heads.write_sp(out, verb, 6);
    out.push_str(&c.name);
    if verb.creates()
        && let Some(cm) = &c.comment
    {
        out.push_str(" { comment ");
        write_quoted(out, cm);
        out.push_str(" ; }");
    }
    out.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(verb: Verb, obj: Object) -> String {
        let mut s = String::new();
        write_operation(&mut s, verb, Family::Ip, "kube-proxy", &obj);
        s
    }

    /// Every kind of line, with and without comments, against its bound: exact without
    /// comments (and numbers), never short.
    #[test]
    fn line_length_bounds() {
        let base = Some(BaseChain {
            chain_type: ChainType::Nat,
            hook: Hook::Postrouting,
            priority: -2147483648,
        });
        let set = |comment: Option<String>| Set {
            name: "affinity-X".into(),
            set_type: "ipv4_addr".into(),
            flags: vec![SetFlag::Dynamic, SetFlag::Timeout],
            timeout: Some(u64::MAX),
            comment,
        };
        for comment in [None, Some("a \"b\"\n\u{1}é".to_owned()), Some("plain".to_owned())] {
            let objects = [
                Object::Table(Table {
                    comment: comment.clone(),
                }),
                Object::Chain(Chain {
                    name: "c".into(),
                    base,
                    comment: comment.clone(),
                }),
                Object::Chain(Chain::named("service-ABC")),
                Object::Rule(Rule {
                    chain: "c".into(),
                    rule: "ip daddr @cluster-ips".into(),
                    comment: comment.clone(),
                }),
                Object::Set(Box::new(set(comment.clone()))),
                Object::Map(Box::new(set(comment.clone()))),
                Object::Element(Element {
                    kind: ContainerKind::Map,
                    container: "service-ips".into(),
                    key: "10.0.0.1 . tcp . 80".into(),
                    value: Some("goto service-ABC".into()),
                    comment: comment.clone(),
                }),
                Object::Counter(Counter {
                    name: "n".into(),
                    comment: comment.clone(),
                }),
            ];
            for verb in [Verb::Add, Verb::Delete, Verb::Flush, Verb::Insert] {
                for obj in &objects {
                    let written = line(verb, obj.clone()).len();
                    let bound = max_line_len("kube-proxy", verb, obj);
                    assert!(bound >= written, "{verb:?} {obj:?}: {bound} < {written}");
                    let plain = comment.is_none()
                        && !matches!(obj, Object::Set(_) | Object::Map(_))
                        && !(verb == Verb::Add && matches!(obj, Object::Chain(c) if c.base.is_some()));
                    if plain {
                        // the family `ip` is 2 bytes shorter than `inet`
                        assert_eq!(bound, written + 2, "{verb:?} {obj:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn renders_like_knftables() {
        assert_eq!(
            line(
                Verb::Add,
                Object::Table(Table {
                    comment: Some("rules for kube-proxy".into())
                })
            ),
            "add table ip kube-proxy { comment \"rules for kube-proxy\" ; }\n"
        );
        let base = Chain {
            name: "filter-input".into(),
            base: Some(BaseChain {
                chain_type: ChainType::Filter,
                hook: Hook::Input,
                priority: 0,
            }),
            comment: None,
        };
        assert_eq!(
            line(Verb::Add, Object::Chain(base.clone())),
            "add chain ip kube-proxy filter-input { type filter hook input priority 0 ; }\n"
        );
        assert_eq!(
            line(Verb::Flush, Object::Chain(base)),
            "flush chain ip kube-proxy filter-input\n"
        );
        let set = Set {
            name: "affinity-X".into(),
            set_type: "ipv4_addr".into(),
            flags: vec![SetFlag::Dynamic, SetFlag::Timeout],
            timeout: Some(10800),
            comment: None,
        };
        assert_eq!(
            line(Verb::Add, Object::Set(Box::new(set))),
            "add set ip kube-proxy affinity-X { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }\n"
        );
        let e = Element {
            kind: ContainerKind::Map,
            container: "no-endpoint-services".into(),
            key: "10.0.0.1 . tcp . 80".into(),
            value: Some("goto reject-chain".into()),
            comment: Some("ns/svc:p".into()),
        };
        assert_eq!(
            line(Verb::Add, Object::Element(e.clone())),
            "add element ip kube-proxy no-endpoint-services { 10.0.0.1 . tcp . 80 comment \"ns/svc:p\" : goto reject-chain }\n"
        );
        assert_eq!(
            line(Verb::Delete, Object::Element(e)),
            "delete element ip kube-proxy no-endpoint-services { 10.0.0.1 . tcp . 80 }\n"
        );
        let r = Rule {
            chain: "services".into(),
            rule: "ip daddr @cluster-ips".into(),
            comment: Some("a \"b\"".into()),
        };
        assert_eq!(
            line(Verb::Add, Object::Rule(r)),
            "add rule ip kube-proxy services ip daddr @cluster-ips comment \"a \\\"b\\\"\"\n"
        );
        assert_eq!(
            line(
                Verb::Delete,
                Object::Counter(Counter {
                    name: "c".into(),
                    comment: None
                })
            ),
            "delete counter ip kube-proxy c\n"
        );
    }
}
