//! DNS records as typed values, record sets, deltas and zone-file text.
//!
//! Follows CoreDNS v1.15.0 `plugin/kubernetes/kubernetes.go` (`Records`, `findServices`,
//! `findPods`) and the Kubernetes DNS specification (schema 1.1.0).

use std::cmp::Ordering;
use std::fmt;
use std::net::{Ipv4Addr, Ipv6Addr};

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

/// The record types a cluster DNS server answers for Services and Pods.
///
/// Declared in the byte order of their names, so that sorting by type sorts by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[non_exhaustive]
pub enum RecordType {
    /// An IPv4 address.
    A,
    /// An IPv6 address.
    #[serde(rename = "AAAA")]
    Aaaa,
    /// An alias (ExternalName Services).
    #[serde(rename = "CNAME")]
    Cname,
    /// A reverse pointer.
    #[serde(rename = "PTR")]
    Ptr,
    /// A service location (port and target).
    #[serde(rename = "SRV")]
    Srv,
    /// Text (the `dns-version` record).
    #[serde(rename = "TXT")]
    Txt,
}

impl RecordType {
    /// The type's mnemonic: `A`, `AAAA`, `CNAME`, `PTR`, `SRV`, `TXT`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::A => "A",
            RecordType::Aaaa => "AAAA",
            RecordType::Cname => "CNAME",
            RecordType::Ptr => "PTR",
            RecordType::Srv => "SRV",
            RecordType::Txt => "TXT",
        }
    }

    /// Parses a mnemonic, case-insensitively.
    pub fn parse(text: &str) -> Option<RecordType> {
        const ALL: [RecordType; 6] = [
            RecordType::A,
            RecordType::Aaaa,
            RecordType::Cname,
            RecordType::Ptr,
            RecordType::Srv,
            RecordType::Txt,
        ];
        ALL.into_iter().find(|t| t.as_str().eq_ignore_ascii_case(text))
    }
}

impl fmt::Display for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The data of an SRV record.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Srv {
    /// Always 0 for Kubernetes records.
    pub priority: u16,
    /// `max(1, floor(100 / k))`, `k` the number of candidates at the name.
    pub weight: u16,
    /// The port number.
    pub port: u16,
    /// The fully qualified target, ending in a dot.
    pub target: String,
}

/// A record's data, typed.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RecordData {
    /// `A`.
    A(Ipv4Addr),
    /// `AAAA`.
    Aaaa(Ipv6Addr),
    /// `CNAME` to a fully qualified name.
    Cname(String),
    /// `PTR` to a fully qualified name.
    Ptr(String),
    /// `SRV`.
    Srv(Srv),
    /// `TXT` with one character string.
    Txt(String),
}

impl RecordData {
    /// The type of this data.
    pub fn record_type(&self) -> RecordType {
        match self {
            RecordData::A(_) => RecordType::A,
            RecordData::Aaaa(_) => RecordType::Aaaa,
            RecordData::Cname(_) => RecordType::Cname,
            RecordData::Ptr(_) => RecordType::Ptr,
            RecordData::Srv(_) => RecordType::Srv,
            RecordData::Txt(_) => RecordType::Txt,
        }
    }
}

impl fmt::Display for RecordData {
    /// The presentation form: `10.0.0.1`, `10::3`, `0 50 80 web.shop.svc.cluster.local.`,
    /// `"1.1.0"`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordData::A(ip) => write!(f, "{ip}"),
            RecordData::Aaaa(ip) => write!(f, "{ip}"),
            RecordData::Cname(t) | RecordData::Ptr(t) => f.write_str(t),
            RecordData::Srv(s) => write!(f, "{} {} {} {}", s.priority, s.weight, s.port, s.target),
            RecordData::Txt(t) => {
                f.write_str("\"")?;
                for c in t.chars() {
                    if c == '"' || c == '\\' {
                        f.write_str("\\")?;
                    }
                    write!(f, "{c}")?;
                }
                f.write_str("\"")
            }
        }
    }
}

/// One resource record: owner name, type, TTL and data.
///
/// Records order by name, then type, then the data's presentation text (byte order), which
/// is the order of a [`RecordSet`]. Two records are equal when all four parts are.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Record {
    name: String,
    ttl: u32,
    data: RecordData,
    text: Box<str>,
}

impl Record {
    /// A record. `name` is stored lower-cased; it should be fully qualified (end in a dot).
    pub fn new(name: impl Into<String>, ttl: u32, data: RecordData) -> Record {
        let mut name = name.into();
        name.make_ascii_lowercase();
        let text = data.to_string().into_boxed_str();
        Record {
            name,
            ttl,
            data,
            text,
        }
    }

    /// The owner name, lower case, ending in a dot.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The record's type.
    pub fn record_type(&self) -> RecordType {
        self.data.record_type()
    }

    /// The TTL in seconds.
    pub fn ttl(&self) -> u32 {
        self.ttl
    }

    /// The typed data.
    pub fn data(&self) -> &RecordData {
        &self.data
    }

    /// The data's presentation text.
    pub fn data_text(&self) -> &str {
        &self.text
    }

    fn key(&self) -> (&str, RecordType, &str) {
        (&self.name, self.record_type(), &self.text)
    }
}

impl Ord for Record {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key()).then(self.ttl.cmp(&other.ttl))
    }
}

impl PartialOrd for Record {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for Record {
    /// One zone-file line: `name<TAB>ttl<TAB>IN<TAB>type<TAB>data`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}\t{}\tIN\t{}\t{}",
            self.name,
            self.ttl,
            self.record_type(),
            self.text
        )
    }
}

impl Serialize for Record {
    /// `{"name":"...","type":"A","ttl":5,"data":"10.0.0.1"}`.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut s = serializer.serialize_struct("Record", 4)?;
        s.serialize_field("name", &self.name)?;
        s.serialize_field("type", &self.record_type())?;
        s.serialize_field("ttl", &self.ttl)?;
        s.serialize_field("data", &*self.text)?;
        s.end()
    }
}

/// A set of records: sorted by name, type and data, never holding the same
/// `(name, type, data)` twice.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecordSet {
    records: Vec<Record>,
}

impl RecordSet {
    /// Sorts `records` and drops repeats of the same `(name, type, data)` (the first TTL stays).
    pub fn from_records(mut records: Vec<Record>) -> RecordSet {
        records.sort_unstable();
        records.dedup_by(|b, a| a.key() == b.key());
        RecordSet { records }
    }

    /// The records, in order.
    pub fn records(&self) -> &[Record] {
        &self.records
    }

    /// The records, in order.
    pub fn iter(&self) -> std::slice::Iter<'_, Record> {
        self.records.iter()
    }

    /// The number of records.
    pub fn len(&self) -> usize {
        self.records.len()
    }

    /// True when there is no record.
    pub fn is_empty(&self) -> bool {
        self.records.is_empty()
    }

    /// The records owned by `name` (any case, with or without the final dot).
    pub fn at(&self, name: &str) -> &[Record] {
        let name = crate::names::fqdn(name);
        let start = self.records.partition_point(|r| r.name.as_str() < name.as_str());
        let len = self.records[start..].partition_point(|r| r.name == name);
        &self.records[start..start + len]
    }

    /// True when `name` owns at least one record.
    pub fn contains_name(&self, name: &str) -> bool {
        !self.at(name).is_empty()
    }

    /// What changes from `self` to `newer`.
    pub fn diff(&self, newer: &RecordSet) -> RecordDelta {
        diff_sorted(&self.records, &newer.records)
    }

    /// The records, in order.
    pub fn into_vec(self) -> Vec<Record> {
        self.records
    }

    /// Applies a delta: drops `removed`, adds `added`.
    pub fn apply(&mut self, delta: &RecordDelta) {
        let removed = RecordSet::from_records(delta.removed.clone());
        let mut kept: Vec<Record> = Vec::with_capacity(self.records.len() + delta.added.len());
        let mut gone = removed.records.iter().peekable();
        for r in self.records.drain(..) {
            while gone.peek().is_some_and(|g| g.key() < r.key()) {
                gone.next();
            }
            if gone.peek().is_some_and(|g| g.key() == r.key()) {
                continue;
            }
            kept.push(r);
        }
        kept.extend(delta.added.iter().cloned());
        *self = RecordSet::from_records(kept);
    }
}

impl<'a> IntoIterator for &'a RecordSet {
    type Item = &'a Record;
    type IntoIter = std::slice::Iter<'a, Record>;
    fn into_iter(self) -> Self::IntoIter {
        self.records.iter()
    }
}

impl fmt::Display for RecordSet {
    /// Zone-file text: one line per record, in order.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for r in &self.records {
            writeln!(f, "{r}")?;
        }
        Ok(())
    }
}

/// The records that change: what to remove and what to add, each sorted.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct RecordDelta {
    /// Records no longer served.
    pub removed: Vec<Record>,
    /// Records newly served.
    pub added: Vec<Record>,
}

impl RecordDelta {
    /// True when nothing changes.
    pub fn is_empty(&self) -> bool {
        self.removed.is_empty() && self.added.is_empty()
    }
}

/// The difference of two sorted, deduplicated record lists.
pub(crate) fn diff_sorted(old: &[Record], new: &[Record]) -> RecordDelta {
    let mut delta = RecordDelta::default();
    let (mut i, mut j) = (0, 0);
    while i < old.len() || j < new.len() {
        match (old.get(i), new.get(j)) {
            (Some(a), Some(b)) => match a.cmp(b) {
                Ordering::Equal => {
                    i += 1;
                    j += 1;
                }
                Ordering::Less => {
                    delta.removed.push(a.clone());
                    i += 1;
                }
                Ordering::Greater => {
                    delta.added.push(b.clone());
                    j += 1;
                }
            },
            (Some(a), None) => {
                delta.removed.push(a.clone());
                i += 1;
            }
            (None, Some(b)) => {
                delta.added.push(b.clone());
                j += 1;
            }
            (None, None) => break,
        }
    }
    delta
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(name: &str, ip: [u8; 4]) -> Record {
        Record::new(name, 5, RecordData::A(Ipv4Addr::from(ip)))
    }

    #[test]
    fn presentation_and_order() {
        let srv = Record::new(
            "_http._tcp.web.shop.svc.cluster.local.",
            5,
            RecordData::Srv(Srv {
                priority: 0,
                weight: 50,
                port: 80,
                target: "web.shop.svc.cluster.local.".into(),
            }),
        );
        assert_eq!(srv.data_text(), "0 50 80 web.shop.svc.cluster.local.");
        let txt = Record::new(
            "dns-version.cluster.local.",
            28800,
            RecordData::Txt("1.\"1".into()),
        );
        assert_eq!(
            txt.to_string(),
            "dns-version.cluster.local.\t28800\tIN\tTXT\t\"1.\\\"1\""
        );
        // Byte order of the text, not numeric order.
        let set = RecordSet::from_records(vec![
            a("X.", [10, 0, 0, 9]),
            a("x.", [10, 0, 0, 10]),
            a("x.", [10, 0, 0, 9]),
        ]);
        let texts: Vec<_> = set.iter().map(Record::data_text).collect();
        assert_eq!(texts, ["10.0.0.10", "10.0.0.9"]);
        assert_eq!(set.at("X").len(), 2);
        assert!(set.at("y.").is_empty());
        let json = serde_json::to_string(&set.records()[0]).unwrap();
        assert_eq!(json, r#"{"name":"x.","type":"A","ttl":5,"data":"10.0.0.10"}"#);
    }

    #[test]
    fn diff_and_apply() {
        let old = RecordSet::from_records(vec![a("a.", [1, 1, 1, 1]), a("b.", [2, 2, 2, 2])]);
        let new = RecordSet::from_records(vec![a("b.", [2, 2, 2, 2]), a("c.", [3, 3, 3, 3])]);
        let d = old.diff(&new);
        assert_eq!(d.removed, vec![a("a.", [1, 1, 1, 1])]);
        assert_eq!(d.added, vec![a("c.", [3, 3, 3, 3])]);
        let mut patched = old.clone();
        patched.apply(&d);
        assert_eq!(patched, new);
        assert!(new.diff(&new).is_empty());
    }
}
