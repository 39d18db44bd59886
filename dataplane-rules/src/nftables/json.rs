//! `nft -j` output: transactions and rule sets as libnftables JSON documents, for programs
//! that apply rules through libnftables' JSON API (`nft -j -f FILE`, `nft_run_cmd_from_buffer`
//! with JSON input) instead of `nft -f` text.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2): libnftables' JSON schema, for the rule
//! sets `pkg/proxy/nftables/proxier.go` writes as text.
//!
//! Built from the `nftables` crate's schema types (feature `nft-json`): every rule body is
//! parsed from the text kube-proxy writes into typed [`Statement`]s (matches on
//! `ip`/`ip6`/`th`/`tcp`/`udp`/`sctp` fields, `meta`, `ct`, `fib`, `numgen`, concatenations,
//! anonymous sets and verdict maps, `@set` lookups, `vmap`, `dnat`/`snat` (also through
//! `numgen ... map`), `masquerade`, `reject`, `counter`, `mark set`, `update @set`, verdicts).
//! Anything the converter does not understand is a [`JsonError`] naming the rule: nothing is
//! silently dropped.
//!
//! The crate's schema (0.6) lacks a few things kube-proxy's rule set needs, so the objects that
//! carry them wrap the crate's structs (flattened) and add the missing keys:
//! - a map's data type `verdict` (the crate's `SetType` has no such type): [`SetBody::Definition`];
//! - comments on tables, chains and counters: [`Commented`];
//! - set flags in a fixed order (the crate keeps them in a `HashSet`): [`SetBody::Definition`];
//! - verdicts as map values, written `{"drop": null}` as nft reads them (the crate's
//!   `Verdict` expression writes `"drop"`, which nft refuses): elements hold [`SetItem`]s;
//! - set and map references for `delete` and `flush` (the crate's `Set` requires a type).
//!
//! What nft does with the document, checked against nftables 1.0.6 (Debian 12) and the
//! parser of later releases:
//! - the set flag `dynamic` (kube-proxy's affinity sets) is written as given. nft 1.0.6's JSON
//!   parser refuses it (later releases read it): leaving it out is no way around that, since
//!   re-adding an existing dynamic set without the flag fails in the kernel (`File exists`),
//!   which every partial sync that rewrites a Service with session affinity does;
//! - comments of tables and chains are read by nft 1.0.7 and later, ignored by 1.0.6; comments
//!   of sets and maps are written but ignored by nft's JSON parser (up to at least 1.1);
//!   comments of rules, elements and counters are kept by every version.

use std::borrow::Cow;
use std::collections::HashSet;
use std::net::IpAddr;
use std::str::FromStr;

use nftables::expr::{
    BinaryOperation, CT, Elem, Expression, Fib, FibFlag, FibResult, Meta, MetaKey, NamedExpression, NgMode,
    Numgen, Payload, PayloadField, Prefix, SetItem,
};
use nftables::schema::{
    self, FlushObject, MetainfoObject, NfCmd, NfListObject, NfObject, Nftables, ResetObject, SetType,
    SetTypeValue,
};
use nftables::stmt::{
    self, AnonymousCounter, JumpTarget, Mangle, Match, NAT, NATFamily, NATFlag, Operator, SetOp, Statement,
    VerdictMap,
};
use nftables::types::{NfChainType, NfFamily, NfHook};
use serde::Serialize;
use serde::ser::{SerializeMap, Serializer};

use super::object::{ChainType, Family, Hook, Object, SetFlag, Verb};
use super::state::State;
use super::transaction::Transaction;

/// Why a transaction or rule set has no JSON form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JsonError {
    /// A rule whose text the converter does not understand.
    #[error("rule {rule:?} in chain {chain}: {reason}")]
    Rule {
        /// The chain holding the rule.
        chain: String,
        /// The rule text.
        rule: String,
        /// What was not understood.
        reason: String,
    },
    /// A set or map element whose key or value the converter does not understand.
    #[error("element {key:?} of {container}: {reason}")]
    Element {
        /// The set or map.
        container: String,
        /// The element key (and value, if any).
        key: String,
        /// What was not understood.
        reason: String,
    },
    /// A set, map or other object with a property JSON cannot hold.
    #[error("{kind} {name}: {reason}")]
    Object {
        /// The object type (`set`, `map`, ...).
        kind: &'static str,
        /// Its name.
        name: String,
        /// What cannot be written.
        reason: String,
    },
    /// An operation libnftables' JSON cannot express for this object model (e.g. deleting a
    /// rule, which needs the kernel's rule handle).
    #[error("`{verb} {kind}` has no libnftables JSON form: {reason}")]
    Operation {
        /// The verb.
        verb: &'static str,
        /// The object type.
        kind: &'static str,
        /// Why.
        reason: &'static str,
    },
    /// The document could not be encoded.
    #[error("encoding the JSON document: {0}")]
    Encode(String),
}

/// A libnftables JSON document: `{"nftables": [{"metainfo": ...}, COMMAND, ...]}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Document {
    /// The commands, in order.
    pub commands: Vec<Command>,
}

/// One command: `{"VERB": {"KIND": {...}}}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// The verb (`add`, `create`, `insert`, `delete`, `destroy`, `flush`, `reset`).
    pub verb: Verb,
    /// The object.
    pub object: Body,
}

/// The object of a command, as libnftables' JSON schema names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Body {
    /// A table.
    Table(Commented<schema::Table<'static>>),
    /// A chain.
    Chain(Commented<schema::Chain<'static>>),
    /// A rule with typed statements.
    Rule(schema::Rule<'static>),
    /// A set.
    Set(SetBody),
    /// A map.
    Map(SetBody),
    /// Elements of a set or map.
    Element(ElementBody),
    /// A named counter.
    Counter(Commented<schema::Counter<'static>>),
}

/// An object of the `nftables` crate with the `comment` its schema type lacks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Commented<T> {
    /// The object.
    #[serde(flatten)]
    pub object: T,
    /// Its comment.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
}

/// A set or map: the crate's [`schema::Set`] (its `flags` left empty), plus a map's data
/// type and the flags in order; or, for `delete` and `flush`, a reference by name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum SetBody {
    /// `add` / `create`.
    Definition {
        /// The set.
        #[serde(flatten)]
        set: Box<schema::Set<'static>>,
        /// A map's data type.
        #[serde(skip_serializing_if = "Option::is_none")]
        map: Option<MapData>,
        /// The flags, in the order given.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        flags: Vec<schema::SetFlag>,
    },
    /// `delete` / `flush`: family, table and name.
    Reference {
        /// The table's family.
        family: NfFamily,
        /// The table.
        table: String,
        /// The set or map.
        name: String,
    },
}

/// The data type of a map.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MapData {
    /// `verdict`.
    Verdict,
    /// A data type the crate knows.
    Type(SetTypeValue<'static>),
}

impl Serialize for MapData {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            MapData::Verdict => s.serialize_str("verdict"),
            MapData::Type(t) => t.serialize(s),
        }
    }
}

/// Elements of a set or map (`{"family", "table", "name", "elem": [...]}`); a map element is
/// a `[key, value]` pair, its verdict written as a statement (`{"goto": {"target": ...}}`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ElementBody {
    /// The table's family.
    pub family: NfFamily,
    /// The table.
    pub table: String,
    /// The set or map.
    pub name: String,
    /// The elements.
    pub elem: Vec<SetItem<'static>>,
}

fn metainfo() -> NfListObject<'static> {
    NfListObject::MetainfoObject(MetainfoObject {
        version: None,
        release_name: None,
        json_schema_version: Some(1),
    })
}

impl Body {
    /// The object type keyword.
    pub fn kind(&self) -> &'static str {
        match self {
            Body::Table(_) => "table",
            Body::Chain(_) => "chain",
            Body::Rule(_) => "rule",
            Body::Set(_) => "set",
            Body::Map(_) => "map",
            Body::Element(_) => "element",
            Body::Counter(_) => "counter",
        }
    }
}

impl Command {
    /// The command as the `nftables` crate's [`NfCmd`], if its schema can hold it.
    pub fn to_nf_cmd(&self) -> Result<NfCmd<'static>, JsonError> {
        let err = |reason: &'static str| JsonError::Operation {
            verb: self.verb.as_str(),
            kind: self.object.kind(),
            reason,
        };
        const NO_COMMENT: &str = "the nftables crate's schema has no comment for it";
        let obj = match &self.object {
            Body::Table(t) if t.comment.is_none() => NfListObject::Table(t.object.clone()),
            Body::Chain(c) if c.comment.is_none() => NfListObject::Chain(c.object.clone()),
            Body::Counter(c) if c.comment.is_none() => NfListObject::Counter(c.object.clone()),
            Body::Table(_) | Body::Chain(_) | Body::Counter(_) => return Err(err(NO_COMMENT)),
            Body::Rule(r) => NfListObject::Rule(r.clone()),
            Body::Set(SetBody::Definition {
                set,
                map: None,
                flags,
            }) => {
                let mut s = (**set).clone();
                s.flags = (!flags.is_empty()).then(|| flags.iter().copied().collect());
                NfListObject::Set(Box::new(s))
            }
            Body::Map(SetBody::Definition {
                set,
                map: Some(MapData::Type(data)),
                flags,
            }) => {
                let s = (**set).clone();
                NfListObject::Map(Box::new(schema::Map {
                    family: s.family,
                    table: s.table,
                    name: s.name,
                    handle: None,
                    set_type: s.set_type,
                    map: data.clone(),
                    policy: s.policy,
                    flags: (!flags.is_empty()).then(|| flags.iter().copied().collect()),
                    elem: None,
                    timeout: s.timeout,
                    gc_interval: s.gc_interval,
                    size: s.size,
                    comment: s.comment,
                }))
            }
            Body::Map(SetBody::Definition {
                map: Some(MapData::Verdict),
                ..
            }) => {
                return Err(err("the nftables crate's schema has no `verdict` data type"));
            }
            Body::Set(SetBody::Definition { .. }) | Body::Map(SetBody::Definition { .. }) => {
                return Err(err("a set with a data type, or a map without one"));
            }
            Body::Set(SetBody::Reference { .. }) | Body::Map(SetBody::Reference { .. }) => {
                return Err(err("the nftables crate's set and map types require a data type"));
            }
            Body::Element(e) => {
                let mut elem = Vec::with_capacity(e.elem.len());
                for item in &e.elem {
                    elem.push(match item {
                        SetItem::Element(x) => x.clone(),
                        SetItem::Mapping(k, v) => Expression::List(vec![k.clone(), v.clone()]),
                        SetItem::MappingStatement(k, Statement::Goto(t)) => {
                            Expression::List(vec![k.clone(), Expression::Verdict(nftables::expr::Verdict::Goto(t.clone()))])
                        }
                        SetItem::MappingStatement(k, Statement::Jump(t)) => {
                            Expression::List(vec![k.clone(), Expression::Verdict(nftables::expr::Verdict::Jump(t.clone()))])
                        }
                        SetItem::MappingStatement(..) => {
                            return Err(err(
                                "the nftables crate writes an accept/drop/return value as a string, which nft refuses",
                            ));
                        }
                    });
                }
                NfListObject::Element(schema::Element {
                    family: e.family,
                    table: Cow::Owned(e.table.clone()),
                    name: Cow::Owned(e.name.clone()),
                    elem: Cow::Owned(elem),
                })
            }
        };
        Ok(match self.verb {
            Verb::Add => NfCmd::Add(obj),
            Verb::Create => NfCmd::Create(obj),
            Verb::Insert => NfCmd::Insert(obj),
            Verb::Delete => NfCmd::Delete(obj),
            Verb::Flush => NfCmd::Flush(match obj {
                NfListObject::Table(t) => FlushObject::Table(t),
                NfListObject::Chain(c) => FlushObject::Chain(c),
                _ => return Err(err("not flushable through the crate's schema")),
            }),
            Verb::Reset => NfCmd::Reset(match obj {
                NfListObject::Counter(c) => ResetObject::Counter(c),
                _ => return Err(err("not resettable through the crate's schema")),
            }),
            Verb::Replace | Verb::Destroy => return Err(err("the nftables crate has no such command")),
        })
    }
}

impl Serialize for Command {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry(self.verb.as_str(), &self.object)?;
        m.end()
    }
}

impl Serialize for Document {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        #[serde(untagged)]
        enum Item<'a> {
            Meta(NfListObject<'static>),
            Command(&'a Command),
        }
        struct Items<'a>(&'a [Command]);
        impl Serialize for Items<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.collect_seq(std::iter::once(Item::Meta(metainfo())).chain(self.0.iter().map(Item::Command)))
            }
        }
        let mut m = s.serialize_map(Some(1))?;
        m.serialize_entry("nftables", &Items(&self.commands))?;
        m.end()
    }
}

impl Document {
    /// The commands of a transaction, in order.
    ///
    /// ```
    /// use svcnet_rules::nftables::{Family, Transaction, json::Document};
    /// let mut tx = Transaction::new(Family::Ip, "kube-proxy");
    /// tx.add_table(Some("rules for kube-proxy"));
    /// tx.add_chain("services");
    /// tx.add_rule("services", "ip daddr 10.0.0.1 tcp dport 80 drop", None);
    /// let json = Document::from_transaction(&tx).unwrap().to_json().unwrap();
    /// assert!(json.starts_with(r#"{"nftables":[{"metainfo":{"json_schema_version":1}},{"add":{"table""#));
    /// assert!(json.contains(r#"{"match":{"left":{"payload":{"protocol":"tcp","field":"dport"}},"right":80,"op":"=="}}"#));
    /// ```
    pub fn from_transaction(tx: &Transaction) -> Result<Document, JsonError> {
        let mut commands = Vec::with_capacity(tx.operations.len());
        for op in &tx.operations {
            commands.push(command(op.verb, tx.family, &tx.table, &op.object)?);
        }
        Ok(Document { commands })
    }

    /// The whole rule set as `add` commands (what [`State::dump`] prints), table by table.
    pub fn from_state(state: &State) -> Result<Document, JsonError> {
        let mut commands = Vec::new();
        for (family, name) in state.tables.keys() {
            let tx = state.to_transaction(*family, name);
            commands.extend(Document::from_transaction(&tx)?.commands);
        }
        Ok(Document { commands })
    }

    /// The document as one line of JSON (`nft -j -f` input).
    pub fn to_json(&self) -> Result<String, JsonError> {
        serde_json::to_string(self).map_err(|e| JsonError::Encode(e.to_string()))
    }

    /// The document as the `nftables` crate's own [`Nftables`] (e.g. for
    /// `nftables::helper::apply_ruleset`), where the crate's schema can hold every command:
    /// typically a partial sync's transaction (chains, rules, elements with `goto`/`jump`
    /// values). A full rule set has verdict maps and comments on its table and chains, which
    /// the schema (0.6) cannot hold: those commands are a [`JsonError::Operation`] naming what
    /// is missing, never silently changed. Serialised, the result equals [`Document::to_json`].
    pub fn to_nftables(&self) -> Result<Nftables<'static>, JsonError> {
        let mut objects = vec![NfObject::ListObject(metainfo())];
        for c in &self.commands {
            objects.push(NfObject::CmdObject(c.to_nf_cmd()?));
        }
        Ok(Nftables {
            objects: Cow::Owned(objects),
        })
    }

    /// The document as JSON indented for people.
    pub fn to_json_pretty(&self) -> Result<String, JsonError> {
        serde_json::to_string_pretty(self).map_err(|e| JsonError::Encode(e.to_string()))
    }
}

/// A transaction as one line of libnftables JSON.
pub fn transaction_json(tx: &Transaction) -> Result<String, JsonError> {
    Document::from_transaction(tx)?.to_json()
}

/// A rule set as one line of libnftables JSON (`add` commands).
pub fn state_json(state: &State) -> Result<String, JsonError> {
    Document::from_state(state)?.to_json()
}

fn nf_family(f: Family) -> NfFamily {
    match f {
        Family::Ip => NfFamily::IP,
        Family::Ip6 => NfFamily::IP6,
        Family::Inet => NfFamily::INet,
    }
}

fn unsupported(verb: Verb, kind: &'static str, reason: &'static str) -> JsonError {
    JsonError::Operation {
        verb: verb.as_str(),
        kind,
        reason,
    }
}

fn creates(verb: Verb) -> bool {
    matches!(verb, Verb::Add | Verb::Create)
}

/// One operation as a command.
fn command(verb: Verb, family: Family, table: &str, obj: &Object) -> Result<Command, JsonError> {
    let nf = nf_family(family);
    let tname = || Cow::Owned(table.to_owned());
    let kind = obj.kind();
    let generic_ok = matches!(verb, Verb::Add | Verb::Create | Verb::Delete | Verb::Destroy);
    let object = match obj {
        Object::Table(t) => {
            if !(generic_ok || verb == Verb::Flush) {
                return Err(unsupported(verb, kind, "not a table operation"));
            }
            Body::Table(Commented {
                object: schema::Table {
                    family: nf,
                    name: tname(),
                    handle: None,
                },
                comment: t.comment.clone().filter(|_| creates(verb)),
            })
        }
        Object::Chain(c) => {
            if !(generic_ok || verb == Verb::Flush) {
                return Err(unsupported(verb, kind, "not a chain operation"));
            }
            let base = c.base.filter(|_| creates(verb));
            Body::Chain(Commented {
                object: schema::Chain {
                    family: nf,
                    table: tname(),
                    name: Cow::Owned(c.name.to_string()),
                    newname: None,
                    handle: None,
                    _type: base.map(|b| match b.chain_type {
                        ChainType::Filter => NfChainType::Filter,
                        ChainType::Nat => NfChainType::NAT,
                        ChainType::Route => NfChainType::Route,
                    }),
                    hook: base.map(|b| match b.hook {
                        Hook::Prerouting => NfHook::Prerouting,
                        Hook::Input => NfHook::Input,
                        Hook::Forward => NfHook::Forward,
                        Hook::Output => NfHook::Output,
                        Hook::Postrouting => NfHook::Postrouting,
                    }),
                    prio: base.map(|b| b.priority),
                    dev: None,
                    policy: None,
                },
                comment: c.comment.clone().filter(|_| creates(verb)),
            })
        }
        Object::Rule(r) => {
            match verb {
                Verb::Add | Verb::Insert => {}
                Verb::Create => return Err(unsupported(verb, kind, "nft has no create command for rules")),
                Verb::Replace | Verb::Delete | Verb::Destroy => {
                    return Err(unsupported(
                        verb,
                        kind,
                        "it needs the rule's kernel handle, which the object model does not hold",
                    ));
                }
                _ => return Err(unsupported(verb, kind, "not a rule operation")),
            }
            let expr = rule_statements(&r.rule).map_err(|reason| JsonError::Rule {
                chain: r.chain.to_string(),
                rule: r.rule.to_string(),
                reason,
            })?;
            Body::Rule(schema::Rule {
                family: nf,
                table: tname(),
                chain: Cow::Owned(r.chain.to_string()),
                expr: Cow::Owned(expr),
                handle: None,
                index: None,
                comment: r.comment.clone().map(Cow::Owned),
            })
        }
        Object::Set(s) | Object::Map(s) => {
            let is_map = matches!(obj, Object::Map(_));
            let body = if creates(verb) {
                set_definition(nf, table, s, is_map)?
            } else if matches!(verb, Verb::Delete | Verb::Destroy | Verb::Flush) {
                SetBody::Reference {
                    family: nf,
                    table: table.to_owned(),
                    name: s.name.clone(),
                }
            } else {
                return Err(unsupported(verb, kind, "not a set or map operation"));
            };
            if is_map { Body::Map(body) } else { Body::Set(body) }
        }
        Object::Element(e) => {
            if !generic_ok {
                return Err(unsupported(verb, kind, "not an element operation"));
            }
            let err = |reason: String| JsonError::Element {
                container: e.container.to_string(),
                key: match &e.value {
                    Some(v) => format!("{} : {v}", e.key),
                    None => e.key.to_string(),
                },
                reason,
            };
            let key = element_key(&e.key).map_err(&err)?;
            let key = match (&e.comment, creates(verb)) {
                (Some(c), true) => Expression::Named(NamedExpression::Elem(Elem {
                    val: Box::new(key),
                    timeout: None,
                    expires: None,
                    comment: Some(Cow::Owned(c.clone())),
                    counter: None,
                })),
                _ => key,
            };
            let item = match (&e.value, creates(verb)) {
                (Some(v), true) => element_value(key, v).map_err(&err)?,
                _ => SetItem::Element(key),
            };
            Body::Element(ElementBody {
                family: nf,
                table: table.to_owned(),
                name: e.container.to_string(),
                elem: vec![item],
            })
        }
        Object::Counter(c) => {
            if !(generic_ok || verb == Verb::Reset) {
                return Err(unsupported(verb, kind, "not a counter operation"));
            }
            Body::Counter(Commented {
                object: schema::Counter {
                    family: nf,
                    table: tname(),
                    name: Cow::Owned(c.name.clone()),
                    handle: None,
                    packets: None,
                    bytes: None,
                },
                comment: c.comment.clone().filter(|_| creates(verb)),
            })
        }
    };
    Ok(Command { verb, object })
}

fn set_definition(
    nf: NfFamily,
    table: &str,
    s: &super::object::Set,
    is_map: bool,
) -> Result<SetBody, JsonError> {
    let kind = if is_map { "map" } else { "set" };
    let err = |reason: String| JsonError::Object {
        kind,
        name: s.name.clone(),
        reason,
    };
    let (key, data) = match s.set_type.split_once(" : ") {
        Some((k, d)) => (k, Some(d)),
        None => (s.set_type.as_str(), None),
    };
    let set_type = type_value(key).map_err(&err)?;
    let map = match (is_map, data) {
        (true, Some("verdict")) => Some(MapData::Verdict),
        (true, Some(d)) => Some(MapData::Type(type_value(d).map_err(&err)?)),
        (true, None) => return Err(err("a map type needs `KEY : DATA`".into())),
        (false, Some(_)) => return Err(err("a set type has no `: DATA` part".into())),
        (false, None) => None,
    };
    let timeout = match s.timeout {
        Some(t) => Some(u32::try_from(t).map_err(|_| err(format!("timeout {t}s is too large")))?),
        None => None,
    };
    let flags = s
        .flags
        .iter()
        .map(|f| match f {
            SetFlag::Constant => schema::SetFlag::Constant,
            SetFlag::Interval => schema::SetFlag::Interval,
            SetFlag::Timeout => schema::SetFlag::Timeout,
            SetFlag::Dynamic => schema::SetFlag::Dynamic,
        })
        .collect();
    Ok(SetBody::Definition {
        set: Box::new(schema::Set {
            family: nf,
            table: Cow::Owned(table.to_owned()),
            name: Cow::Owned(s.name.clone()),
            handle: None,
            set_type,
            policy: None,
            flags: None,
            elem: None,
            timeout,
            gc_interval: None,
            size: None,
            comment: s.comment.clone().map(Cow::Owned),
        }),
        map,
        flags,
    })
}

fn type_value(text: &str) -> Result<SetTypeValue<'static>, String> {
    let mut parts = Vec::new();
    for p in text.split(" . ") {
        let p = p.trim();
        parts.push(SetType::from_str(p).map_err(|_| format!("unknown data type `{p}`"))?);
    }
    Ok(match parts.as_slice() {
        [one] => SetTypeValue::Single(*one),
        _ => SetTypeValue::Concatenated(Cow::Owned(parts)),
    })
}

/// The key of an element (`10.0.0.1 . tcp . 80`).
fn element_key(text: &str) -> Result<Expression<'static>, String> {
    let mut p = Parser::new(text)?;
    let v = p.value_concat(false)?;
    p.finish()?;
    Ok(v)
}

/// A map element's `key : value`: a verdict (`goto chain`, `drop`, ...) or a value.
fn element_value(key: Expression<'static>, text: &str) -> Result<SetItem<'static>, String> {
    let mut p = Parser::new(text)?;
    let item = match p.verdict()? {
        Some(v) => SetItem::MappingStatement(key, v),
        None => SetItem::Mapping(key, p.value_concat(false)?),
    };
    p.finish()?;
    Ok(item)
}

/// The typed statements of a rule's text.
fn rule_statements(text: &str) -> Result<Vec<Statement<'static>>, String> {
    let mut p = Parser::new(text)?;
    let mut out = Vec::new();
    while p.peek().is_some() {
        out.push(p.statement()?);
    }
    if out.is_empty() {
        return Err("empty rule".into());
    }
    Ok(out)
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String),
    Quoted(String),
    Sym(char),
}

impl std::fmt::Display for Tok {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Tok::Word(w) => f.write_str(w),
            Tok::Quoted(q) => write!(f, "{q:?}"),
            Tok::Sym(c) => write!(f, "{c}"),
        }
    }
}

fn tokenize(text: &str) -> Result<Vec<Tok>, String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut Vec<Tok>| {
        if !word.is_empty() {
            out.push(Tok::Word(std::mem::take(word)));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => flush(&mut word, &mut out),
            '{' | '}' | ',' => {
                flush(&mut word, &mut out);
                out.push(Tok::Sym(c));
            }
            '"' => {
                flush(&mut word, &mut out);
                let mut q = String::new();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(e) => q.push(e),
                            None => return Err("unterminated quoted string".into()),
                        },
                        Some(c) => q.push(c),
                        None => return Err("unterminated quoted string".into()),
                    }
                }
                out.push(Tok::Quoted(q));
            }
            c => word.push(c),
        }
    }
    flush(&mut word, &mut out);
    Ok(out)
}

/// Words that start a statement: never read as a match's value.
const STATEMENT_WORDS: &[&str] = &[
    "accept",
    "drop",
    "return",
    "continue",
    "jump",
    "goto",
    "reject",
    "masquerade",
    "dnat",
    "snat",
    "counter",
    "update",
    "log",
    "comment",
    "vmap",
    "map",
    "set",
    "limit",
    "queue",
    "notrack",
];

/// A recursive-descent reader of the nft rule syntax kube-proxy writes.
struct Parser {
    toks: Vec<Tok>,
    pos: usize,
}

type Res<T> = Result<T, String>;

fn num(n: u64) -> Res<Expression<'static>> {
    u32::try_from(n)
        .map(Expression::Number)
        .map_err(|_| format!("number {n} does not fit 32 bits"))
}

fn parse_number(w: &str) -> Option<u64> {
    if let Some(hex) = w.strip_prefix("0x").or_else(|| w.strip_prefix("0X")) {
        u64::from_str_radix(hex, 16).ok()
    } else if w.bytes().all(|b| b.is_ascii_digit()) && !w.is_empty() {
        w.parse().ok()
    } else {
        None
    }
}

fn meta_key(w: &str) -> Option<MetaKey> {
    Some(match w {
        "l4proto" => MetaKey::L4proto,
        "protocol" => MetaKey::Protocol,
        "nfproto" => MetaKey::Nfproto,
        "mark" => MetaKey::Mark,
        "iif" => MetaKey::Iif,
        "iifname" => MetaKey::Iifname,
        "iiftype" => MetaKey::Iiftype,
        "oif" => MetaKey::Oif,
        "oifname" => MetaKey::Oifname,
        "oiftype" => MetaKey::Oiftype,
        "pkttype" => MetaKey::Pkttype,
        "length" => MetaKey::Length,
        "skuid" => MetaKey::Skuid,
        "skgid" => MetaKey::Skgid,
        "priority" => MetaKey::Priority,
        _ => return None,
    })
}

fn payload(protocol: &str, field: &str) -> Expression<'static> {
    Expression::Named(NamedExpression::Payload(Payload::PayloadField(PayloadField {
        protocol: Cow::Owned(protocol.to_owned()),
        field: Cow::Owned(field.to_owned()),
    })))
}

fn verdict_stmt(word: &str, target: Option<String>) -> Statement<'static> {
    match (word, target) {
        ("jump", Some(t)) => Statement::Jump(JumpTarget {
            target: Cow::Owned(t),
        }),
        ("goto", Some(t)) => Statement::Goto(JumpTarget {
            target: Cow::Owned(t),
        }),
        ("accept", _) => Statement::Accept(None),
        ("drop", _) => Statement::Drop(None),
        ("return", _) => Statement::Return(None),
        _ => Statement::Continue(None),
    }
}

impl Parser {
    fn new(text: &str) -> Res<Parser> {
        Ok(Parser {
            toks: tokenize(text)?,
            pos: 0,
        })
    }

    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }

    fn peek_word(&self) -> Option<&str> {
        match self.peek() {
            Some(Tok::Word(w)) => Some(w),
            _ => None,
        }
    }

    fn peek_word_at(&self, ahead: usize) -> Option<&str> {
        match self.toks.get(self.pos + ahead) {
            Some(Tok::Word(w)) => Some(w),
            _ => None,
        }
    }

    fn next(&mut self) -> Option<Tok> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn here(&self) -> String {
        match self.peek() {
            Some(t) => format!("`{t}` (word {})", self.pos + 1),
            None => "the end of the text".into(),
        }
    }

    fn word(&mut self, what: &str) -> Res<String> {
        match self.next() {
            Some(Tok::Word(w)) => Ok(w),
            Some(t) => Err(format!("expected {what}, found `{t}` (word {})", self.pos)),
            None => Err(format!("expected {what} at the end of the text")),
        }
    }

    fn expect_word(&mut self, w: &str) -> Res<()> {
        if self.peek_word() == Some(w) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected `{w}`, found {}", self.here()))
        }
    }

    fn expect_sym(&mut self, c: char) -> Res<()> {
        if self.peek() == Some(&Tok::Sym(c)) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!("expected `{c}`, found {}", self.here()))
        }
    }

    fn finish(&self) -> Res<()> {
        match self.peek() {
            None => Ok(()),
            Some(_) => Err(format!("unexpected {}", self.here())),
        }
    }

    /// One statement.
    fn statement(&mut self) -> Res<Statement<'static>> {
        let Some(w) = self.peek_word().map(str::to_owned) else {
            return Err(format!("expected a statement, found {}", self.here()));
        };
        match w.as_str() {
            "accept" | "drop" | "return" | "continue" | "jump" | "goto" => {
                Ok(self.verdict()?.unwrap_or(Statement::Continue(None)))
            }
            "reject" => {
                self.pos += 1;
                if self.peek_word() == Some("with") {
                    return Err("`reject with ...` is not converted".into());
                }
                Ok(Statement::Reject(None))
            }
            "masquerade" => {
                self.pos += 1;
                let flags = self.nat_flags()?;
                Ok(Statement::Masquerade(flags.map(|f| NAT {
                    addr: None,
                    family: None,
                    port: None,
                    flags: Some(f),
                })))
            }
            "dnat" | "snat" => self.nat(&w),
            "counter" => {
                self.pos += 1;
                if self.peek_word() == Some("name") {
                    self.pos += 1;
                    let name = match self.next() {
                        Some(Tok::Quoted(q)) | Some(Tok::Word(q)) => q,
                        _ => return Err("expected a counter name after `counter name`".into()),
                    };
                    return Ok(Statement::Counter(stmt::Counter::Named(Cow::Owned(name))));
                }
                if self.peek_word() == Some("packets") {
                    self.pos += 1;
                    let p = self.word("a packet count")?;
                    self.expect_word("bytes")?;
                    let b = self.word("a byte count")?;
                    let (Ok(packets), Ok(bytes)) = (p.parse::<usize>(), b.parse::<usize>()) else {
                        return Err(format!("bad counter values `{p}` / `{b}`"));
                    };
                    return Ok(Statement::Counter(stmt::Counter::Anonymous(Some(
                        AnonymousCounter {
                            packets: Some(packets),
                            bytes: Some(bytes),
                        },
                    ))));
                }
                Ok(Statement::Counter(stmt::Counter::Anonymous(None)))
            }
            "update" | "add" if self.peek_word_at(1).is_some_and(|n| n.starts_with('@')) => {
                self.pos += 1;
                let set = self.word("a set")?;
                self.expect_sym('{')?;
                let elem = self.lhs()?;
                self.expect_sym('}')?;
                Ok(Statement::Set(stmt::Set {
                    op: if w == "update" { SetOp::Update } else { SetOp::Add },
                    elem,
                    set: Cow::Owned(set),
                }))
            }
            "comment" => Err("a comment inside the rule text (comments are the rule's own field)".into()),
            _ => self.match_or_map(),
        }
    }

    /// A verdict (`accept`, `drop`, `return`, `continue`, `jump X`, `goto X`), if one is next.
    fn verdict(&mut self) -> Res<Option<Statement<'static>>> {
        let Some(w) = self.peek_word().map(str::to_owned) else {
            return Ok(None);
        };
        match w.as_str() {
            "accept" | "drop" | "return" | "continue" => {
                self.pos += 1;
                Ok(Some(verdict_stmt(&w, None)))
            }
            "jump" | "goto" => {
                self.pos += 1;
                let target = self.word("a chain")?;
                Ok(Some(verdict_stmt(&w, Some(target))))
            }
            _ => Ok(None),
        }
    }

    /// `random`, `fully-random`, `persistent`, comma-separated, if any.
    fn nat_flags(&mut self) -> Res<Option<HashSet<NATFlag>>> {
        let mut flags = HashSet::new();
        loop {
            let f = match self.peek_word() {
                Some("random") => NATFlag::Random,
                Some("fully-random") => NATFlag::FullyRandom,
                Some("persistent") => NATFlag::Persistent,
                _ => break,
            };
            self.pos += 1;
            flags.insert(f);
            if self.peek() == Some(&Tok::Sym(',')) {
                self.pos += 1;
            } else {
                break;
            }
        }
        Ok((!flags.is_empty()).then_some(flags))
    }

    /// `dnat|snat [ip|ip6] to ADDR[:PORT]` or `dnat|snat ip|ip6 addr . port to EXPR map { K : ADDR . PORT , ... }`.
    fn nat(&mut self, which: &str) -> Res<Statement<'static>> {
        self.pos += 1;
        let family = match self.peek_word() {
            Some("ip") => Some(NATFamily::IP),
            Some("ip6") => Some(NATFamily::IP6),
            _ => None,
        };
        if family.is_some() {
            self.pos += 1;
        }
        let nat = if self.peek_word() == Some("addr") {
            self.pos += 1;
            self.expect_word(".")?;
            self.expect_word("port")?;
            self.expect_word("to")?;
            let key = self.lhs()?;
            self.expect_word("map")?;
            self.expect_sym('{')?;
            let mut items = Vec::new();
            loop {
                let k = self.value_concat(false)?;
                self.expect_word(":")?;
                let v = self.value_concat(false)?;
                items.push(SetItem::Mapping(k, v));
                match self.next() {
                    Some(Tok::Sym(',')) => continue,
                    Some(Tok::Sym('}')) => break,
                    _ => return Err(format!("expected `,` or `}}` in the {which} map")),
                }
            }
            NAT {
                addr: Some(Expression::Named(NamedExpression::Map(Box::new(
                    nftables::expr::Map {
                        key,
                        data: Expression::Named(NamedExpression::Set(items)),
                    },
                )))),
                family,
                port: None,
                flags: None,
            }
        } else {
            self.expect_word("to")?;
            let target = self.word("an address")?;
            let (addr, port) =
                split_addr_port(&target).ok_or_else(|| format!("bad {which} target `{target}`"))?;
            NAT {
                addr: Some(Expression::String(Cow::Owned(addr.to_string()))),
                family,
                port: port.map(|p| Expression::Number(u32::from(p))),
                flags: None,
            }
        };
        let flags = self.nat_flags()?;
        let nat = NAT { flags, ..nat };
        Ok(if which == "dnat" {
            Statement::DNAT(Some(nat))
        } else {
            Statement::SNAT(Some(nat))
        })
    }

    /// A match (`LHS [OP] RHS`), a verdict map (`LHS vmap ...`) or a mangle (`LHS set VALUE`).
    fn match_or_map(&mut self) -> Res<Statement<'static>> {
        let left = self.lhs()?;
        let bitmask = matches!(&left, Expression::Named(NamedExpression::CT(ct)) if ct.key == "state" || ct.key == "status");
        match self.peek_word() {
            Some("set") => {
                self.pos += 1;
                let value = self.operand()?;
                return Ok(Statement::Mangle(Mangle { key: left, value }));
            }
            Some("vmap") => {
                self.pos += 1;
                let data = self.vmap_data()?;
                return Ok(Statement::VerdictMap(VerdictMap { key: left, data }));
            }
            Some("map") => return Err("a `map` lookup outside `dnat`/`snat` is not converted".into()),
            _ => {}
        }
        let op = match self.peek_word() {
            Some("==") | Some("eq") => Some(Operator::EQ),
            Some("!=") | Some("ne") => Some(Operator::NEQ),
            // the crate's `LT` variant is written `>` and `GT` `<`
            Some("<") | Some("lt") => Some(Operator::GT),
            Some(">") | Some("gt") => Some(Operator::LT),
            Some("<=") | Some("le") => Some(Operator::LEQ),
            Some(">=") | Some("ge") => Some(Operator::GEQ),
            _ => None,
        };
        if op.is_some() {
            self.pos += 1;
        }
        let right = self.rhs(bitmask)?;
        // nft reads a bare flag value of a bitmask type (`ct state new`) as "any of these
        // bits" and lists it with the `in` operator; an explicit `==` is exact equality.
        let op = op.unwrap_or(if bitmask { Operator::IN } else { Operator::EQ });
        Ok(Statement::Match(Match { left, right, op }))
    }

    /// The right side of a match: `@set`, `{ ... }`, a value or a concatenation of values,
    /// or (for flags) a comma-separated list.
    fn rhs(&mut self, keywords_ok: bool) -> Res<Expression<'static>> {
        match self.peek() {
            Some(Tok::Word(w)) if w.starts_with('@') && w.len() > 1 => {
                let w = w.clone();
                self.pos += 1;
                Ok(Expression::String(Cow::Owned(w)))
            }
            Some(Tok::Sym('{')) => {
                self.pos += 1;
                let mut items = Vec::new();
                loop {
                    items.push(SetItem::Element(self.value_concat(false)?));
                    match self.next() {
                        Some(Tok::Sym(',')) => continue,
                        Some(Tok::Sym('}')) => break,
                        _ => return Err("expected `,` or `}` in an anonymous set".into()),
                    }
                }
                Ok(Expression::Named(NamedExpression::Set(items)))
            }
            _ => {
                let first = self.value_concat(keywords_ok)?;
                if self.peek() != Some(&Tok::Sym(',')) {
                    return Ok(first);
                }
                let mut list = vec![first];
                while self.peek() == Some(&Tok::Sym(',')) {
                    self.pos += 1;
                    list.push(self.value_concat(keywords_ok)?);
                }
                Ok(Expression::List(list))
            }
        }
    }

    /// `@map` or `{ K : VERDICT , ... }`.
    fn vmap_data(&mut self) -> Res<Expression<'static>> {
        match self.next() {
            Some(Tok::Word(w)) if w.starts_with('@') && w.len() > 1 => Ok(Expression::String(Cow::Owned(w))),
            Some(Tok::Sym('{')) => {
                let mut items = Vec::new();
                loop {
                    let k = self.value_concat(false)?;
                    self.expect_word(":")?;
                    let v = self
                        .verdict()?
                        .ok_or_else(|| format!("expected a verdict in the vmap, found {}", self.here()))?;
                    items.push(SetItem::MappingStatement(k, v));
                    match self.next() {
                        Some(Tok::Sym(',')) => continue,
                        Some(Tok::Sym('}')) => break,
                        _ => return Err("expected `,` or `}` in the vmap".into()),
                    }
                }
                Ok(Expression::Named(NamedExpression::Set(items)))
            }
            _ => Err(format!(
                "expected `@map` or `{{` after `vmap` at word {}",
                self.pos
            )),
        }
    }

    /// A left side: primaries (each with an optional `and`/`or`/`xor` operand) joined by `.`.
    fn lhs(&mut self) -> Res<Expression<'static>> {
        let mut parts = vec![self.primary_binop()?];
        while self.peek_word() == Some(".") {
            self.pos += 1;
            parts.push(self.primary_binop()?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Expression::Named(NamedExpression::Concat(parts))
        })
    }

    /// The value of `set`: a primary with an optional operand, or a value.
    fn operand(&mut self) -> Res<Expression<'static>> {
        match self.peek_word() {
            Some(w) if self.is_primary(w) => self.primary_binop(),
            _ => self.value(false),
        }
    }

    fn is_primary(&self, w: &str) -> bool {
        matches!(
            w,
            "ip" | "ip6"
                | "th"
                | "tcp"
                | "udp"
                | "sctp"
                | "udplite"
                | "dccp"
                | "meta"
                | "ct"
                | "fib"
                | "numgen"
        ) || (meta_key(w).is_some()
            && !matches!(w, "protocol" | "length" | "priority" | "l4proto" | "nfproto"))
    }

    fn primary_binop(&mut self) -> Res<Expression<'static>> {
        let p = self.primary()?;
        let op = match self.peek_word() {
            Some("and") | Some("&") => "and",
            Some("or") | Some("|") => "or",
            Some("xor") | Some("^") => "xor",
            _ => return Ok(p),
        };
        self.pos += 1;
        let v = self.value(false)?;
        Ok(Expression::BinaryOperation(Box::new(match op {
            "and" => BinaryOperation::AND(p, v),
            "or" => BinaryOperation::OR(vec![p, v]),
            _ => BinaryOperation::XOR(p, v),
        })))
    }

    /// A packet, meta, conntrack, fib or numgen expression.
    fn primary(&mut self) -> Res<Expression<'static>> {
        let at = self.here();
        let w = self.word("an expression")?;
        match w.as_str() {
            "ip" | "ip6" => {
                let f = self.word(&format!("a field of `{w}`"))?;
                let ok = match w.as_str() {
                    "ip" => matches!(
                        f.as_str(),
                        "saddr" | "daddr" | "protocol" | "length" | "ttl" | "dscp"
                    ),
                    _ => matches!(
                        f.as_str(),
                        "saddr" | "daddr" | "nexthdr" | "length" | "hoplimit" | "dscp"
                    ),
                };
                if !ok {
                    return Err(format!("unknown field `{w} {f}`"));
                }
                Ok(payload(&w, &f))
            }
            "th" | "tcp" | "udp" | "sctp" | "udplite" | "dccp" => {
                let f = self.word(&format!("a field of `{w}`"))?;
                if !matches!(f.as_str(), "sport" | "dport") {
                    return Err(format!("unknown field `{w} {f}`"));
                }
                Ok(payload(&w, &f))
            }
            "meta" => {
                let k = self.word("a meta key")?;
                let key = meta_key(&k).ok_or_else(|| format!("unknown meta key `{k}`"))?;
                Ok(Expression::Named(NamedExpression::Meta(Meta { key })))
            }
            "ct" => {
                let k = self.word("a ct key")?;
                if !matches!(
                    k.as_str(),
                    "state"
                        | "status"
                        | "mark"
                        | "direction"
                        | "zone"
                        | "l3proto"
                        | "protocol"
                        | "expiration"
                ) {
                    return Err(format!("unknown ct key `{k}`"));
                }
                Ok(Expression::Named(NamedExpression::CT(CT {
                    key: Cow::Owned(k),
                    family: None,
                    dir: None,
                })))
            }
            "fib" => {
                let mut flags = HashSet::new();
                loop {
                    let f = self.word("a fib flag")?;
                    flags.insert(match f.as_str() {
                        "saddr" => FibFlag::Saddr,
                        "daddr" => FibFlag::Daddr,
                        "mark" => FibFlag::Mark,
                        "iif" => FibFlag::Iif,
                        "oif" => FibFlag::Oif,
                        _ => return Err(format!("unknown fib flag `{f}`")),
                    });
                    if self.peek_word() == Some(".") {
                        self.pos += 1;
                    } else {
                        break;
                    }
                }
                let r = self.word("a fib result")?;
                let result = match r.as_str() {
                    "type" => FibResult::Type,
                    "oif" => FibResult::Oif,
                    "oifname" => FibResult::Oifname,
                    _ => return Err(format!("unknown fib result `{r}`")),
                };
                Ok(Expression::Named(NamedExpression::Fib(Fib { result, flags })))
            }
            "numgen" => {
                let m = self.word("a numgen mode")?;
                let mode = match m.as_str() {
                    "random" => NgMode::Random,
                    "inc" => NgMode::Inc,
                    _ => return Err(format!("unknown numgen mode `{m}`")),
                };
                self.expect_word("mod")?;
                let n = self.word("a modulus")?;
                let ng_mod = parse_number(&n)
                    .and_then(|n| u32::try_from(n).ok())
                    .ok_or_else(|| format!("bad numgen modulus `{n}`"))?;
                let offset = if self.peek_word() == Some("offset") {
                    self.pos += 1;
                    let o = self.word("an offset")?;
                    Some(
                        parse_number(&o)
                            .and_then(|n| u32::try_from(n).ok())
                            .ok_or_else(|| format!("bad numgen offset `{o}`"))?,
                    )
                } else {
                    None
                };
                Ok(Expression::Named(NamedExpression::Numgen(Numgen {
                    mode,
                    ng_mod,
                    offset,
                })))
            }
            other => match meta_key(other) {
                // `mark`, `iifname`, ...: meta keys nft writes without `meta`
                Some(key) if self.is_primary(other) => {
                    Ok(Expression::Named(NamedExpression::Meta(Meta { key })))
                }
                _ => Err(format!("unknown expression at {at}")),
            },
        }
    }

    /// Values joined by `.`.
    fn value_concat(&mut self, keywords_ok: bool) -> Res<Expression<'static>> {
        let mut parts = vec![self.value(keywords_ok)?];
        while self.peek_word() == Some(".") {
            self.pos += 1;
            parts.push(self.value(keywords_ok)?);
        }
        Ok(if parts.len() == 1 {
            parts.remove(0)
        } else {
            Expression::Named(NamedExpression::Concat(parts))
        })
    }

    /// One value: a number, an address or prefix, a symbol (`tcp`, `new`, `local`, an
    /// interface name) or a quoted string.
    fn value(&mut self, keywords_ok: bool) -> Res<Expression<'static>> {
        let at = self.here();
        match self.next() {
            Some(Tok::Quoted(q)) => Ok(Expression::String(Cow::Owned(q))),
            Some(Tok::Word(w)) => {
                if let Some(n) = parse_number(&w) {
                    return num(n);
                }
                if let Some((ip, len)) = w.split_once('/') {
                    let addr: IpAddr = ip.parse().map_err(|_| format!("bad prefix at {at}"))?;
                    let len: u32 = len.parse().map_err(|_| format!("bad prefix length at {at}"))?;
                    if len > if addr.is_ipv4() { 32 } else { 128 } {
                        return Err(format!("bad prefix length at {at}"));
                    }
                    return Ok(Expression::Named(NamedExpression::Prefix(Prefix {
                        addr: Box::new(Expression::String(Cow::Owned(addr.to_string()))),
                        len,
                    })));
                }
                if w.parse::<IpAddr>().is_ok() {
                    return Ok(Expression::String(Cow::Owned(w)));
                }
                let symbol = w
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '*' | '.'))
                    && w.chars().next().is_some_and(|c| c.is_ascii_alphanumeric());
                if !symbol || w == "." || (!keywords_ok && STATEMENT_WORDS.contains(&w.as_str())) {
                    return Err(format!("expected a value, found {at}"));
                }
                Ok(Expression::String(Cow::Owned(w)))
            }
            _ => Err(format!("expected a value, found {at}")),
        }
    }
}

/// `ADDR`, `ADDR:PORT` (IPv4) or `[ADDR]:PORT` (IPv6).
fn split_addr_port(s: &str) -> Option<(IpAddr, Option<u16>)> {
    if let Ok(ip) = s.parse::<IpAddr>() {
        return Some((ip, None));
    }
    if let Some(rest) = s.strip_prefix('[') {
        let (ip, port) = rest.split_once("]:")?;
        return Some((ip.parse().ok()?, Some(port.parse().ok()?)));
    }
    let (ip, port) = s.rsplit_once(':')?;
    let ip: std::net::Ipv4Addr = ip.parse().ok()?;
    Some((IpAddr::V4(ip), Some(port.parse().ok()?)))
}

#[cfg(test)]
mod tests;
