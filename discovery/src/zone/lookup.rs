//! Answering one DNS query from the zone: the name's own records, NODATA or NXDOMAIN, and the
//! CNAME chain of an ExternalName Service followed as CoreDNS follows it (or as the RFCs say).
//!
//! Follows CoreDNS v1.15.0 `plugin/kubernetes/kubernetes.go` (`Records`, `findServices`,
//! `findPods`) and `plugin/backend_lookup.go` (`A`, the CNAME handling) against Kubernetes
//! v1.37.2 objects.

use std::collections::BTreeSet;
use std::net::IpAddr;

use super::{DnsZone, SvcQuery, address_record, candidate_records, push_srv, strip_underscore};
use crate::names::{fqdn, parse_reverse, pod_label_ip_text};
use crate::options::{DNS_SCHEMA_VERSION, DNS_VERSION_TTL};
use crate::record::{Record, RecordData};
use crate::{AnswerRules, PodMode, RecordType};

/// What a DNS server answers for one query.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Answer {
    /// The name exists and holds these records of the type asked (for A/AAAA at an
    /// ExternalName Service, its CNAME).
    Records(Vec<Record>),
    /// The name exists but holds no record of the type asked (NOERROR, empty answer).
    NoData,
    /// The name does not exist.
    NxDomain,
}

impl DnsZone {
    /// Answers one query: `name` in any case, with or without the final dot.
    ///
    /// A name that holds records of the type asked answers them. Names that exist without
    /// such records answer NODATA: the zone apex, `svc.<zone>`, `pod.<zone>`, the reverse
    /// zone apexes `in-addr.arpa.` and `ip6.arpa.`, `<ns>.svc.<zone>` of existing namespaces,
    /// `<ns>.pod.<zone>` of existing namespaces when pod names are on, and every owner name of
    /// the record set asked for another type. Every other name is NXDOMAIN, including empty
    /// non-terminals such as `_tcp.<service>...` and `10.in-addr.arpa.` (as CoreDNS answers
    /// them) and names with more than two labels left of a Service's name.
    ///
    /// Names CoreDNS answers without listing them in any record set are answered too: a
    /// port name with or without underscores (`http.tcp.<service>...` answers as
    /// `_http._tcp.<service>...`), `_` as a wildcard (`_._tcp.<service>...` covers every TCP
    /// port), and with [`PodMode::Insecure`] any `<dashed-ip>.<ns>.pod.<zone>` of an existing
    /// namespace.
    ///
    /// An A or AAAA query at an ExternalName Service answers its CNAME followed, when the
    /// target lies in the zone, by the target's own answer. Where CoreDNS breaks DNS rules
    /// (other types at reverse names and at `dns-version`, TXT queries, ExternalNames whose
    /// in-zone target has no such record) [`DnsOptions::answers`](crate::DnsOptions::answers)
    /// picks CoreDNS's answer (the default) or the RFC-correct one; see
    /// [`AnswerRules`](crate::AnswerRules). CoreDNS's wildcard queries (`*`, `any`) are not
    /// answered.
    pub fn lookup(&self, name: &str, qtype: RecordType) -> Answer {
        let name = fqdn(name);
        let first = self.lookup_one(&name, qtype);
        let Answer::Records(records) = first else {
            return first;
        };
        if self.options.answers == AnswerRules::CoreDns {
            let mut seen = BTreeSet::from([name.clone()]);
            let records = self.coredns_chain(&name, records, qtype, &mut seen);
            return if records.is_empty() {
                Answer::NoData
            } else {
                Answer::Records(records)
            };
        }
        // RFC: the CNAME is the answer; follow in-zone chains a few steps, as a resolver
        // inside the server would.
        let mut records = records;
        let mut seen = BTreeSet::from([name]);
        let mut next = cname_target(&records, qtype);
        while let Some(target) = next.filter(|t| seen.len() <= 8 && seen.insert(t.clone())) {
            next = None;
            if let Answer::Records(more) = self.lookup_one(&target, qtype) {
                next = cname_target(&more, qtype);
                records.extend(more);
            }
        }
        Answer::Records(records)
    }

    /// CoreDNS's CNAME handling for A/AAAA (`plugin.A`): a CNAME to itself (or to a name below
    /// itself) is dropped; one to an in-zone name is kept only when the rest of the chain ends
    /// in records of the type; one out of the zone is kept (CoreDNS would ask upstream).
    fn coredns_chain(
        &self,
        name: &str,
        records: Vec<Record>,
        qtype: RecordType,
        seen: &mut BTreeSet<String>,
    ) -> Vec<Record> {
        let Some(target) = cname_target(&records, qtype) else {
            return records;
        };
        if target == name || target.ends_with(&format!(".{name}")) {
            return Vec::new();
        }
        if seen.len() > 7 || !seen.insert(target.clone()) {
            return Vec::new();
        }
        let zone_dot = format!("{}.", self.zone);
        if target != zone_dot && !target.ends_with(&format!(".{zone_dot}")) {
            return records;
        }
        match self.lookup_one(&target, qtype) {
            Answer::Records(next) => {
                let next = self.coredns_chain(&target, next, qtype, seen);
                if next.is_empty() {
                    return Vec::new();
                }
                let mut records = records;
                records.extend(next);
                records
            }
            Answer::NoData | Answer::NxDomain => Vec::new(),
        }
    }

    /// One name, without following CNAMEs; `name` is lower case with its final dot.
    fn lookup_one(&self, name: &str, qtype: RecordType) -> Answer {
        let rfc = self.options.answers == AnswerRules::Rfc;
        let mut found = Vec::new();
        if name == "in-addr.arpa." || name == "ip6.arpa." {
            return Answer::NoData;
        }
        if let Some(ip) = parse_reverse(name) {
            self.ptr_records(ip, &mut found);
            return match (found.is_empty(), qtype) {
                (true, _) => Answer::NxDomain,
                (false, RecordType::Ptr) => answer(found, qtype),
                (false, _) if rfc => Answer::NoData,
                (false, _) => Answer::NxDomain,
            };
        }
        let zone_dot = format!("{}.", self.zone);
        let rel = if name == zone_dot {
            ""
        } else if let Some(r) = name.strip_suffix(&format!(".{zone_dot}")) {
            r
        } else {
            return Answer::NxDomain;
        };
        let labels: Vec<&str> = if rel.is_empty() {
            Vec::new()
        } else {
            rel.split('.').collect()
        };
        if qtype == RecordType::Txt && labels != ["dns-version"] && !rfc {
            // CoreDNS serves TXT at `dns-version` only: NXDOMAIN everywhere else.
            return Answer::NxDomain;
        }
        match labels.as_slice() {
            [] => Answer::NoData,
            ["dns-version"] => {
                if qtype != RecordType::Txt {
                    return if rfc { Answer::NoData } else { Answer::NxDomain };
                }
                found.push(Record::new(
                    name,
                    DNS_VERSION_TTL,
                    RecordData::Txt(DNS_SCHEMA_VERSION.into()),
                ));
                answer(found, qtype)
            }
            ["svc"] | ["pod"] => Answer::NoData,
            [ns, "svc"] => {
                if self.namespace_exists(ns) {
                    Answer::NoData
                } else {
                    Answer::NxDomain
                }
            }
            [ns, "pod"] => {
                if self.options.pods != PodMode::Disabled && self.namespace_exists(ns) {
                    Answer::NoData
                } else {
                    Answer::NxDomain
                }
            }
            [rest @ .., svc, ns, "svc"] if rest.len() <= 2 => {
                let query = match rest {
                    [] => SvcQuery::default(),
                    [endpoint] => SvcQuery {
                        endpoint: Some(endpoint),
                        ..SvcQuery::default()
                    },
                    [port, proto] => SvcQuery {
                        endpoint: None,
                        port: strip_underscore(port),
                        proto: strip_underscore(proto),
                    },
                    _ => return Answer::NxDomain,
                };
                let key = ((*ns).to_owned(), (*svc).to_owned());
                match self.candidates(&key, &query) {
                    Some(c) => {
                        candidate_records(name, self.options.ttl, &c, &mut found);
                        answer(found, qtype)
                    }
                    None => Answer::NxDomain,
                }
            }
            [label, ns, "pod"] => match self.options.pods {
                PodMode::Disabled => Answer::NxDomain,
                PodMode::Verified => {
                    self.pod_records(name, &mut found);
                    answer(found, qtype)
                }
                PodMode::Insecure => {
                    if !self.namespace_exists(ns) {
                        return Answer::NxDomain;
                    }
                    match pod_label_ip_text(label).parse::<IpAddr>() {
                        Ok(ip) => {
                            let ttl = self.options.ttl;
                            found.push(address_record(name, ttl, ip.to_canonical()));
                            push_srv(&mut found, name, ttl, 100, 0, name);
                            answer(found, qtype)
                        }
                        Err(_) => Answer::NxDomain,
                    }
                }
            },
            _ => Answer::NxDomain,
        }
    }
}

/// The target of the last CNAME of an A/AAAA answer, to follow.
fn cname_target(records: &[Record], qtype: RecordType) -> Option<String> {
    if !matches!(qtype, RecordType::A | RecordType::Aaaa) {
        return None;
    }
    records.iter().rev().find_map(|r| match r.data() {
        RecordData::Cname(t) => Some(t.clone()),
        _ => None,
    })
}

fn answer(found: Vec<Record>, qtype: RecordType) -> Answer {
    if found.is_empty() {
        return Answer::NxDomain;
    }
    let cname = found.iter().any(|r| r.record_type() == RecordType::Cname);
    let mut matching: Vec<Record> = found
        .into_iter()
        .filter(|r| {
            r.record_type() == qtype
                || (cname
                    && matches!(qtype, RecordType::A | RecordType::Aaaa)
                    && r.record_type() == RecordType::Cname)
        })
        .collect();
    if matching.is_empty() {
        return Answer::NoData;
    }
    matching.sort_unstable();
    matching.dedup_by(|b, a| a.name() == b.name() && a.data() == b.data());
    Answer::Records(matching)
}
