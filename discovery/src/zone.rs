//! The cluster zone: Services, EndpointSlices and Pods indexed for record computation,
//! incremental updates and queries.
//!
//! Follows CoreDNS v1.15.0 `plugin/kubernetes/kubernetes.go` and `plugin/kubernetes/object` (the
//! indexed Services, EndpointSlices and Pods) against Kubernetes v1.37.2 objects.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use svcnet_model::{
    CLUSTER_IP_NONE, EndpointSlice, ObjectMeta, Pod, Service, address_type, pod_phase, service_type,
};

use crate::names::{endpoint_hostname, fqdn, label_ok, pod_label, reverse_name};
use crate::options::{DNS_SCHEMA_VERSION, DNS_VERSION_TTL};
use crate::record::{Record, RecordData, RecordDelta, RecordSet, Srv, diff_sorted};
use crate::{DiscoveryError, DnsOptions, PodMode};

mod lookup;

pub use lookup::Answer;

/// `(namespace, name)`.
type Key = (String, String);

/// The port number CoreDNS uses for "no ports declared".
const NO_PORT: i32 = -1;

#[derive(Debug, Clone, PartialEq, Eq)]
struct PortInfo {
    /// Lower case; empty for unnamed ports.
    name: String,
    /// Lower case: `tcp`, `udp`, `sctp`.
    proto: String,
    port: i32,
}

impl PortInfo {
    fn sentinel() -> PortInfo {
        PortInfo {
            name: String::new(),
            proto: String::new(),
            port: NO_PORT,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Shape {
    ClusterIp(Vec<IpAddr>),
    Headless,
    /// The CNAME target, fully qualified; `None` when no record is served.
    External(Option<String>),
    Unallocated,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct SvcInfo {
    /// `name.namespace.svc.zone.`
    base: String,
    shape: Shape,
    /// Never empty: the sentinel stands for "no ports".
    ports: Vec<PortInfo>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Addr {
    ip: IpAddr,
    host: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct SliceInfo {
    /// `(namespace, service-name label)`.
    service: Key,
    /// Ready addresses only.
    addrs: Vec<Addr>,
    /// Never empty: the sentinel stands for "no ports".
    ports: Vec<PortInfo>,
}

/// The pod names of one Pod: one per IP of `status.podIPs` (CoreDNS v1.15.0 indexes them all).
#[derive(Debug, Clone, PartialEq, Eq)]
struct PodInfo {
    names: Vec<(String, IpAddr)>,
}

/// What a query asks of a Service (CoreDNS's `recordRequest`): an endpoint label, or a port
/// name and a protocol with their leading underscores stripped; an empty one matches any.
#[derive(Debug, Clone, Copy, Default)]
struct SvcQuery<'a> {
    endpoint: Option<&'a str>,
    port: &'a str,
    proto: &'a str,
}

impl SvcQuery<'_> {
    fn matches(&self, p: &PortInfo) -> bool {
        (self.port.is_empty() || p.name == self.port) && (self.proto.is_empty() || p.proto == self.proto)
    }
}

/// `stripUnderscore`: one leading underscore goes.
fn strip_underscore(label: &str) -> &str {
    label.strip_prefix('_').unwrap_or(label)
}

/// One answer candidate CoreDNS builds for a Service query (a `msg.Service`).
#[derive(Debug, Clone)]
struct Candidate {
    host: Host,
    port: i32,
    /// The SRV target: the Service name or the endpoint name.
    target: String,
}

#[derive(Debug, Clone)]
enum Host {
    Ip(IpAddr),
    Name(String),
}

/// The records at `owner` for its candidates: A/AAAA per address, SRV with CoreDNS's weight
/// over all candidates (port-less ones included, then dropped), CNAME for a name.
fn candidate_records(owner: &str, ttl: u32, candidates: &[Candidate], out: &mut Vec<Record>) {
    let w = weight(candidates.len());
    for c in candidates {
        match &c.host {
            Host::Ip(ip) => {
                out.push(address_record(owner, ttl, *ip));
                push_srv(out, owner, ttl, w, c.port, &c.target);
            }
            Host::Name(t) => out.push(Record::new(owner, ttl, RecordData::Cname(t.clone()))),
        }
    }
}

/// One change to the objects of a [`DnsZone`], for [`DnsZone::apply`].
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub enum Change<'a> {
    /// A Service was added or updated.
    Service(&'a Service),
    /// An EndpointSlice was added or updated.
    EndpointSlice(&'a EndpointSlice),
    /// A Pod was added or updated.
    Pod(&'a Pod),
    /// A Service was deleted.
    DeleteService {
        /// Its namespace.
        namespace: &'a str,
        /// Its name.
        name: &'a str,
    },
    /// An EndpointSlice was deleted.
    DeleteEndpointSlice {
        /// Its namespace.
        namespace: &'a str,
        /// Its name.
        name: &'a str,
    },
    /// A Pod was deleted.
    DeletePod {
        /// Its namespace.
        namespace: &'a str,
        /// Its name.
        name: &'a str,
    },
}

/// Services, EndpointSlices and Pods of a cluster, indexed for DNS.
///
/// Build it with [`DnsZone::from_objects`], read the whole record set with [`DnsZone::records`],
/// feed it changes with [`DnsZone::apply`] (which returns only the records that change) and ask
/// it single queries with [`DnsZone::lookup`].
///
/// Objects are keyed by namespace and name (an empty namespace is `default`); a later
/// object with the same key replaces an earlier one.
#[derive(Debug, Clone)]
pub struct DnsZone {
    options: DnsOptions,
    /// Lower case, no final dot.
    zone: String,
    services: BTreeMap<Key, SvcInfo>,
    slices: BTreeMap<Key, SliceInfo>,
    /// Service key to the keys of its slices.
    slices_by_service: BTreeMap<Key, BTreeSet<Key>>,
    cluster_ips: BTreeMap<IpAddr, BTreeSet<Key>>,
    endpoint_ips: BTreeMap<IpAddr, BTreeSet<Key>>,
    pods: BTreeMap<Key, PodInfo>,
    /// Pod record name to its address and the Pods giving it (hostNetwork Pods share their
    /// node's IP).
    pod_names: BTreeMap<String, (IpAddr, BTreeSet<Key>)>,
    /// Every Pod held (with or without a record), for `namespaces`.
    pod_keys: BTreeSet<Key>,
    /// How many objects live in each namespace.
    namespaces: BTreeMap<String, usize>,
    /// Namespaces known to exist without objects (Namespace objects).
    declared_namespaces: BTreeSet<String>,
    issues: BTreeMap<(&'static str, Key), Vec<DiscoveryError>>,
}

fn namespace_of(meta: &ObjectMeta) -> &str {
    match meta.namespace() {
        "" => "default",
        ns => ns,
    }
}

/// Objects are keyed case-insensitively, as the names they give are.
fn key_of(meta: &ObjectMeta) -> Key {
    (
        namespace_of(meta).to_ascii_lowercase(),
        meta.name().to_ascii_lowercase(),
    )
}

fn weight(k: usize) -> u16 {
    match k {
        0 => 100,
        k => (100 / k).max(1) as u16,
    }
}

fn address_record(name: &str, ttl: u32, ip: IpAddr) -> Record {
    match ip {
        IpAddr::V4(v4) => Record::new(name, ttl, RecordData::A(v4)),
        IpAddr::V6(v6) => Record::new(name, ttl, RecordData::Aaaa(v6)),
    }
}

/// Pushes one SRV record unless the port is the "no ports" sentinel or out of range.
fn push_srv(out: &mut Vec<Record>, owner: &str, ttl: u32, weight: u16, port: i32, target: &str) {
    if let Ok(port) = u16::try_from(port) {
        let srv = Srv {
            priority: 0,
            weight,
            port,
            target: target.to_owned(),
        };
        out.push(Record::new(owner, ttl, RecordData::Srv(srv)));
    }
}

/// The endpoint branch of `findServices`: every ready address (with hostname `q.endpoint`
/// when one is asked) × every port of its slice that matches; `None` when there is none.
fn endpoint_candidates(
    base: &str,
    ready: &[(&Addr, &[PortInfo])],
    q: &SvcQuery<'_>,
) -> Option<Vec<Candidate>> {
    let mut out = Vec::new();
    for (a, ports) in ready {
        if q.endpoint.is_some_and(|h| h != a.host) {
            continue;
        }
        let target = format!("{}.{base}", a.host);
        out.extend(ports.iter().filter(|p| q.matches(p)).map(|p| Candidate {
            host: Host::Ip(a.ip),
            port: p.port,
            target: target.clone(),
        }));
    }
    (!out.is_empty()).then_some(out)
}

/// The distinct `(name, protocol)` pairs of named ports.
fn named_groups<'a>(ports: impl Iterator<Item = &'a PortInfo>) -> BTreeSet<(&'a str, &'a str)> {
    ports
        .filter(|p| !p.name.is_empty())
        .map(|p| (p.name.as_str(), p.proto.as_str()))
        .collect()
}

impl DnsZone {
    /// An empty zone; fails when the options are not usable.
    pub fn new(options: DnsOptions) -> Result<DnsZone, DiscoveryError> {
        let zone = options.validate()?;
        Ok(DnsZone {
            options,
            zone,
            services: BTreeMap::new(),
            slices: BTreeMap::new(),
            slices_by_service: BTreeMap::new(),
            cluster_ips: BTreeMap::new(),
            endpoint_ips: BTreeMap::new(),
            pods: BTreeMap::new(),
            pod_names: BTreeMap::new(),
            pod_keys: BTreeSet::new(),
            namespaces: BTreeMap::new(),
            declared_namespaces: BTreeSet::new(),
            issues: BTreeMap::new(),
        })
    }

    /// A zone holding these objects.
    pub fn from_objects(
        options: DnsOptions,
        services: &[Service],
        slices: &[EndpointSlice],
        pods: &[Pod],
    ) -> Result<DnsZone, DiscoveryError> {
        let mut z = DnsZone::new(options)?;
        for s in services {
            z.insert_service(s);
        }
        for s in slices {
            z.insert_slice(s);
        }
        for p in pods {
            z.insert_pod(p);
        }
        Ok(z)
    }

    /// The options the zone was built with.
    pub fn options(&self) -> &DnsOptions {
        &self.options
    }

    /// Records that namespace `name` exists (a Namespace object), so that `name.svc.<zone>`
    /// answers NODATA, `name.pod.<zone>` too when pod names are on, and, with
    /// [`PodMode::Insecure`], its pod names answer. A namespace holding any Service, EndpointSlice or Pod exists anyway. No record
    /// of the set depends on this.
    pub fn declare_namespace(&mut self, name: &str) {
        self.declared_namespaces.insert(name.to_ascii_lowercase());
    }

    fn namespace_exists(&self, ns: &str) -> bool {
        self.namespaces.contains_key(ns) || self.declared_namespaces.contains(ns)
    }

    /// What was skipped in the objects held (bad addresses, names that cannot be labels).
    pub fn issues(&self) -> impl Iterator<Item = &DiscoveryError> {
        self.issues.values().flatten()
    }

    /// Every record the zone serves.
    pub fn records(&self) -> RecordSet {
        let mut out = Vec::new();
        out.push(Record::new(
            format!("dns-version.{}.", self.zone),
            DNS_VERSION_TTL,
            RecordData::Txt(DNS_SCHEMA_VERSION.into()),
        ));
        for key in self.services.keys() {
            self.service_records(key, &mut out);
        }
        let ips: BTreeSet<&IpAddr> = self.cluster_ips.keys().chain(self.endpoint_ips.keys()).collect();
        for ip in ips {
            self.ptr_records(*ip, &mut out);
        }
        for name in self.pod_names.keys() {
            self.pod_records(name, &mut out);
        }
        RecordSet::from_records(out)
    }

    /// Applies one change and returns the records that change, computed from the affected
    /// Service's names and the reverse names of the addresses involved only.
    pub fn apply(&mut self, change: Change<'_>) -> RecordDelta {
        let mut services = BTreeSet::new();
        let mut ips = BTreeSet::new();
        let mut pods = BTreeSet::new();
        let pending = match change {
            Change::Service(s) => {
                let key = key_of(&s.metadata);
                self.affected_by_service(&key, &mut services, &mut ips);
                let mut issues = Vec::new();
                let info = self.digest_service(&key, s, &mut issues);
                if let Some(SvcInfo {
                    shape: Shape::ClusterIp(v),
                    ..
                }) = &info
                {
                    ips.extend(v.iter().copied());
                }
                Pending::Service(key, info, issues)
            }
            Change::DeleteService { namespace, name } => {
                let key = (namespace_or_default(namespace), name.to_ascii_lowercase());
                self.affected_by_service(&key, &mut services, &mut ips);
                Pending::RemoveService(key)
            }
            Change::EndpointSlice(s) => {
                let key = key_of(&s.metadata);
                self.affected_by_slice(&key, &mut services, &mut ips);
                let mut issues = Vec::new();
                let info = self.digest_slice(&key, s, &mut issues);
                if let Some(info) = &info {
                    services.insert(info.service.clone());
                    ips.extend(info.addrs.iter().map(|a| a.ip));
                }
                Pending::Slice(key, info, issues)
            }
            Change::DeleteEndpointSlice { namespace, name } => {
                let key = (namespace_or_default(namespace), name.to_ascii_lowercase());
                self.affected_by_slice(&key, &mut services, &mut ips);
                Pending::RemoveSlice(key)
            }
            Change::Pod(p) => {
                let key = key_of(&p.metadata);
                pods.extend(self.pod_name_list(&key));
                let mut issues = Vec::new();
                let digest = self.digest_pod(&key, p, &mut issues);
                if let Some(Some(new)) = &digest {
                    pods.extend(new.names.iter().map(|(n, _)| n.clone()));
                }
                Pending::Pod(key, digest, issues)
            }
            Change::DeletePod { namespace, name } => {
                let key = (namespace_or_default(namespace), name.to_ascii_lowercase());
                pods.extend(self.pod_name_list(&key));
                Pending::RemovePod(key)
            }
        };
        let before = self.partial_records(&services, &ips, &pods);
        match pending {
            Pending::Service(k, info, issues) => self.store_service(k, info, issues),
            Pending::RemoveService(k) => self.remove_service(&k),
            Pending::Slice(k, info, issues) => self.store_slice(k, info, issues),
            Pending::RemoveSlice(k) => self.remove_slice(&k),
            Pending::Pod(k, digest, issues) => self.store_pod(k, digest, issues),
            Pending::RemovePod(k) => self.remove_pod(&k),
        }
        let after = self.partial_records(&services, &ips, &pods);
        diff_sorted(before.records(), after.records())
    }

    // ----- record computation -----

    fn partial_records(
        &self,
        services: &BTreeSet<Key>,
        ips: &BTreeSet<IpAddr>,
        pod_names: &BTreeSet<String>,
    ) -> RecordSet {
        let mut out = Vec::new();
        for k in services {
            self.service_records(k, &mut out);
        }
        for ip in ips {
            self.ptr_records(*ip, &mut out);
        }
        for name in pod_names {
            self.pod_records(name, &mut out);
        }
        RecordSet::from_records(out)
    }

    /// The ready addresses of a Service's slices, each with its slice's ports.
    fn ready(&self, key: &Key) -> Vec<(&Addr, &[PortInfo])> {
        let mut v = Vec::new();
        let Some(keys) = self.slices_by_service.get(key) else {
            return v;
        };
        // Kept as `expect`: no `Result` here (records and lookups are infallible), and
        // `store_slice`/`remove_slice` are the only writers of both maps, in step.
        for k in keys {
            let s = self
                .slices
                .get(k)
                .expect("invariant: the by-Service index names held slices only");
            v.extend(s.addrs.iter().map(|a| (a, s.ports.as_slice())));
        }
        v
    }

    /// The candidates CoreDNS builds for a query at a Service (`findServices`), or `None` when
    /// the name does not exist (NXDOMAIN).
    fn candidates(&self, key: &Key, q: &SvcQuery<'_>) -> Option<Vec<Candidate>> {
        let svc = self.services.get(key)?;
        let base = svc.base.as_str();
        match &svc.shape {
            Shape::External(Some(target)) => {
                // No endpoints, and no port or protocol pseudo-labels.
                if q.endpoint.is_some() || !q.port.is_empty() || !q.proto.is_empty() {
                    return None;
                }
                Some(vec![Candidate {
                    host: Host::Name(target.clone()),
                    port: 0,
                    target: base.to_owned(),
                }])
            }
            Shape::External(None) | Shape::Unallocated => None,
            Shape::ClusterIp(ips) => {
                let ready = self.ready(key);
                if self.options.ignore_empty_service && ready.is_empty() {
                    return None;
                }
                if q.endpoint.is_some() {
                    return endpoint_candidates(base, &ready, q);
                }
                let mut out = Vec::new();
                let mut matched = false;
                for p in svc.ports.iter().filter(|p| q.matches(p)) {
                    matched = true;
                    out.extend(ips.iter().map(|ip| Candidate {
                        host: Host::Ip(*ip),
                        port: p.port,
                        target: base.to_owned(),
                    }));
                }
                matched.then_some(out)
            }
            Shape::Headless => endpoint_candidates(base, &self.ready(key), q),
        }
    }

    /// Every forward record under the Service's base name: the records at the Service name,
    /// at `_<port>._<proto>` of each named port, and at each endpoint name.
    fn service_records(&self, key: &Key, out: &mut Vec<Record>) {
        let Some(svc) = self.services.get(key) else { return };
        let ttl = self.options.ttl;
        let base = svc.base.as_str();
        if let Some(c) = self.candidates(key, &SvcQuery::default()) {
            candidate_records(base, ttl, &c, out);
        }
        let ready = match svc.shape {
            Shape::ClusterIp(_) | Shape::Headless => self.ready(key),
            Shape::External(_) | Shape::Unallocated => return,
        };
        let groups = match svc.shape {
            Shape::ClusterIp(_) => named_groups(svc.ports.iter()),
            _ => named_groups(ready.iter().flat_map(|(_, ps)| ps.iter())),
        };
        for (port, proto) in groups {
            let q = SvcQuery {
                endpoint: None,
                port,
                proto,
            };
            if let Some(c) = self.candidates(key, &q) {
                candidate_records(&format!("_{port}._{proto}.{base}"), ttl, &c, out);
            }
        }
        if matches!(svc.shape, Shape::ClusterIp(_)) && self.options.ignore_empty_service && ready.is_empty() {
            return;
        }
        // Endpoint names, grouped in one pass.
        let mut by_host: BTreeMap<&str, Vec<Candidate>> = BTreeMap::new();
        for (a, ports) in &ready {
            let target = format!("{}.{base}", a.host);
            let list = by_host.entry(a.host.as_str()).or_default();
            list.extend(ports.iter().map(|p| Candidate {
                host: Host::Ip(a.ip),
                port: p.port,
                target: target.clone(),
            }));
        }
        for (host, c) in by_host {
            candidate_records(&format!("{host}.{base}"), ttl, &c, out);
        }
    }

    /// The PTR records at the reverse name of `ip`.
    fn ptr_records(&self, ip: IpAddr, out: &mut Vec<Record>) {
        let ttl = self.options.ttl;
        let name = reverse_name(ip);
        if let Some(svc) = self
            .cluster_ips
            .get(&ip)
            .and_then(|o| o.iter().next())
            .and_then(|k| self.services.get(k))
        {
            out.push(Record::new(name, ttl, RecordData::Ptr(svc.base.clone())));
            return;
        }
        let Some(slices) = self.endpoint_ips.get(&ip) else {
            return;
        };
        for sk in slices {
            let Some(s) = self.slices.get(sk) else { continue };
            for a in s.addrs.iter().filter(|a| a.ip == ip) {
                let target = format!("{}.{}.{}.svc.{}.", a.host, s.service.1, s.service.0, self.zone)
                    .to_ascii_lowercase();
                out.push(Record::new(&name, ttl, RecordData::Ptr(target)));
            }
        }
    }

    /// The records at one pod name: its address, and SRV `0 <weight> 0 <name>` (CoreDNS
    /// answers SRV at pod names with port 0), the weight over the Pods giving the name.
    fn pod_records(&self, name: &str, out: &mut Vec<Record>) {
        if self.options.pods == PodMode::Disabled {
            return;
        }
        let Some((ip, pods)) = self.pod_names.get(name) else {
            return;
        };
        let ttl = self.options.ttl;
        out.push(address_record(name, ttl, *ip));
        // An insecure lookup builds one candidate whatever the Pods.
        let w = match self.options.pods {
            PodMode::Insecure => 100,
            _ => weight(pods.len()),
        };
        push_srv(out, name, ttl, w, 0, name);
    }

    /// The pod names a Pod held gives.
    fn pod_name_list(&self, key: &Key) -> Vec<String> {
        self.pods
            .get(key)
            .map(|p| p.names.iter().map(|(n, _)| n.clone()).collect())
            .unwrap_or_default()
    }

    // ----- index maintenance -----

    fn affected_by_service(&self, key: &Key, services: &mut BTreeSet<Key>, ips: &mut BTreeSet<IpAddr>) {
        services.insert(key.clone());
        if let Some(Shape::ClusterIp(v)) = self.services.get(key).map(|s| &s.shape) {
            ips.extend(v.iter().copied());
        }
    }

    fn affected_by_slice(&self, key: &Key, services: &mut BTreeSet<Key>, ips: &mut BTreeSet<IpAddr>) {
        if let Some(old) = self.slices.get(key) {
            services.insert(old.service.clone());
            ips.extend(old.addrs.iter().map(|a| a.ip));
        }
    }

    fn set_issues(&mut self, kind: &'static str, key: &Key, issues: Vec<DiscoveryError>) {
        if issues.is_empty() {
            self.issues.remove(&(kind, key.clone()));
        } else {
            self.issues.insert((kind, key.clone()), issues);
        }
    }

    fn add_namespace(&mut self, ns: &str) {
        *self.namespaces.entry(ns.to_ascii_lowercase()).or_insert(0) += 1;
    }

    fn drop_namespace(&mut self, ns: &str) {
        let ns = ns.to_ascii_lowercase();
        if let Some(n) = self.namespaces.get_mut(&ns) {
            *n -= 1;
            if *n == 0 {
                self.namespaces.remove(&ns);
            }
        }
    }

    fn check_labels(&self, kind: &'static str, key: &Key, issues: &mut Vec<DiscoveryError>) -> bool {
        let mut ok = true;
        for (field, value) in [("metadata.namespace", &key.0), ("metadata.name", &key.1)] {
            if !label_ok(value) {
                issues.push(DiscoveryError::Label {
                    kind,
                    object: format!("{}/{}", key.0, key.1),
                    field: field.into(),
                    value: value.clone(),
                    reason: "must be a non-empty DNS label of at most 63 characters without dots",
                });
                ok = false;
            }
        }
        ok
    }

    fn digest_service(&self, key: &Key, svc: &Service, issues: &mut Vec<DiscoveryError>) -> Option<SvcInfo> {
        if !self.check_labels("Service", key, issues) {
            return None;
        }
        let spec = svc.spec();
        let base = format!("{}.{}.svc.{}.", key.1, key.0, self.zone).to_ascii_lowercase();
        let mut ports: Vec<PortInfo> = spec
            .ports()
            .iter()
            .map(|p| PortInfo {
                name: p.name().to_ascii_lowercase(),
                proto: p.protocol().to_ascii_lowercase(),
                port: p.port,
            })
            .collect();
        if ports.is_empty() {
            ports.push(PortInfo::sentinel());
        }
        let ips: Vec<(String, &str)> = match (&spec.cluster_ips, &spec.cluster_ip) {
            (Some(v), _) if !v.is_empty() => v
                .iter()
                .enumerate()
                .map(|(i, ip)| (format!("spec.clusterIPs[{i}]"), ip.as_str()))
                .collect(),
            (_, Some(ip)) => vec![("spec.clusterIP".to_owned(), ip.as_str())],
            _ => Vec::new(),
        };
        let shape = if svc.type_() == service_type::EXTERNAL_NAME {
            let target = spec.external_name.as_deref().unwrap_or("");
            let target = target.trim_end_matches('.');
            if target.is_empty() || target.parse::<IpAddr>().is_ok() {
                Shape::External(None)
            } else {
                Shape::External(Some(fqdn(target)))
            }
        } else if ips.first().is_some_and(|(_, ip)| *ip == CLUSTER_IP_NONE) {
            Shape::Headless
        } else {
            let mut parsed = Vec::new();
            for (field, text) in ips {
                if text.is_empty() {
                    continue;
                }
                match text.parse::<IpAddr>() {
                    Ok(ip) => parsed.push(ip.to_canonical()),
                    Err(_) => issues.push(DiscoveryError::Address {
                        kind: "Service",
                        object: format!("{}/{}", key.0, key.1),
                        field,
                        value: text.to_owned(),
                    }),
                }
            }
            parsed.dedup();
            if parsed.is_empty() {
                Shape::Unallocated
            } else {
                Shape::ClusterIp(parsed)
            }
        };
        Some(SvcInfo { base, shape, ports })
    }

    fn insert_service(&mut self, svc: &Service) {
        let key = key_of(&svc.metadata);
        let mut issues = Vec::new();
        let info = self.digest_service(&key, svc, &mut issues);
        self.store_service(key, info, issues);
    }

    fn store_service(&mut self, key: Key, info: Option<SvcInfo>, issues: Vec<DiscoveryError>) {
        self.remove_service(&key);
        if let Some(info) = info {
            if let Shape::ClusterIp(ips) = &info.shape {
                for ip in ips {
                    self.cluster_ips.entry(*ip).or_default().insert(key.clone());
                }
            }
            self.add_namespace(&key.0);
            self.services.insert(key.clone(), info);
        }
        self.set_issues("Service", &key, issues);
    }

    fn remove_service(&mut self, key: &Key) {
        self.issues.remove(&("Service", key.clone()));
        let Some(old) = self.services.remove(key) else {
            return;
        };
        self.drop_namespace(&key.0);
        if let Shape::ClusterIp(ips) = old.shape {
            for ip in ips {
                if let Some(set) = self.cluster_ips.get_mut(&ip) {
                    set.remove(key);
                    if set.is_empty() {
                        self.cluster_ips.remove(&ip);
                    }
                }
            }
        }
    }

    fn digest_slice(
        &self,
        key: &Key,
        slice: &EndpointSlice,
        issues: &mut Vec<DiscoveryError>,
    ) -> Option<SliceInfo> {
        if !self.check_labels("EndpointSlice", key, issues) {
            return None;
        }
        if slice.address_type == address_type::FQDN {
            return None;
        }
        let service_name = slice.service_name().unwrap_or("");
        if !label_ok(service_name) {
            issues.push(DiscoveryError::Label {
                kind: "EndpointSlice",
                object: format!("{}/{}", key.0, key.1),
                field: "metadata.labels[kubernetes.io/service-name]".into(),
                value: service_name.to_owned(),
                reason: "must name a Service (a DNS label)",
            });
            return None;
        }
        let mut ports: Vec<PortInfo> = slice
            .ports()
            .iter()
            .map(|p| PortInfo {
                name: p.name.as_deref().unwrap_or("").to_ascii_lowercase(),
                proto: p.protocol().to_ascii_lowercase(),
                port: p.port.unwrap_or(NO_PORT),
            })
            .collect();
        if ports.is_empty() {
            ports.push(PortInfo::sentinel());
        }
        let mut addrs = Vec::new();
        for (i, ep) in slice.endpoints().iter().enumerate() {
            if !ep.conditions.is_ready() {
                continue;
            }
            for (j, text) in ep.addresses.iter().enumerate() {
                let Ok(ip) = text.parse::<IpAddr>() else {
                    issues.push(DiscoveryError::Address {
                        kind: "EndpointSlice",
                        object: format!("{}/{}", key.0, key.1),
                        field: format!("endpoints[{i}].addresses[{j}]"),
                        value: text.to_string(),
                    });
                    continue;
                };
                let target = ep.target_ref.as_ref().and_then(|t| t.name.as_deref());
                let host = endpoint_hostname(
                    ep.hostname.as_deref(),
                    target,
                    self.options.endpoint_pod_names,
                    text,
                );
                addrs.push(Addr {
                    ip: ip.to_canonical(),
                    host,
                });
            }
        }
        Some(SliceInfo {
            service: (key.0.clone(), service_name.to_ascii_lowercase()),
            addrs,
            ports,
        })
    }

    fn insert_slice(&mut self, slice: &EndpointSlice) {
        let key = key_of(&slice.metadata);
        let mut issues = Vec::new();
        let info = self.digest_slice(&key, slice, &mut issues);
        self.store_slice(key, info, issues);
    }

    fn store_slice(&mut self, key: Key, info: Option<SliceInfo>, issues: Vec<DiscoveryError>) {
        self.remove_slice(&key);
        if let Some(info) = info {
            for a in &info.addrs {
                self.endpoint_ips.entry(a.ip).or_default().insert(key.clone());
            }
            self.slices_by_service
                .entry(info.service.clone())
                .or_default()
                .insert(key.clone());
            self.add_namespace(&key.0);
            self.slices.insert(key.clone(), info);
        }
        self.set_issues("EndpointSlice", &key, issues);
    }

    fn remove_slice(&mut self, key: &Key) {
        self.issues.remove(&("EndpointSlice", key.clone()));
        let Some(old) = self.slices.remove(key) else {
            return;
        };
        self.drop_namespace(&key.0);
        for a in &old.addrs {
            if let Some(set) = self.endpoint_ips.get_mut(&a.ip) {
                set.remove(key);
                if set.is_empty() {
                    self.endpoint_ips.remove(&a.ip);
                }
            }
        }
        if let Some(set) = self.slices_by_service.get_mut(&old.service) {
            set.remove(key);
            if set.is_empty() {
                self.slices_by_service.remove(&old.service);
            }
        }
    }

    fn insert_pod(&mut self, pod: &Pod) {
        let key = key_of(&pod.metadata);
        let mut issues = Vec::new();
        let digest = self.digest_pod(&key, pod, &mut issues);
        self.store_pod(key, digest, issues);
    }

    /// `None` when the Pod is not held at all (bad name); `Some(None)` when it is held
    /// without a record (not running, no IP).
    fn digest_pod(&self, key: &Key, pod: &Pod, issues: &mut Vec<DiscoveryError>) -> Option<Option<PodInfo>> {
        if !self.check_labels("Pod", key, issues) {
            return None;
        }
        let phase = pod.phase();
        let live = pod.metadata.deletion_timestamp.is_none()
            && ![pod_phase::SUCCEEDED, pod_phase::FAILED, pod_phase::UNKNOWN].contains(&phase);
        let status = pod.status.as_ref();
        // Every IP of `status.podIPs` (the API server fills it from a lone `podIP`).
        let mut ips: Vec<(String, &str)> = status
            .and_then(|s| s.pod_ips.as_deref())
            .unwrap_or(&[])
            .iter()
            .enumerate()
            .filter(|(_, p)| !p.ip.is_empty())
            .map(|(i, p)| (format!("status.podIPs[{i}].ip"), p.ip.as_str()))
            .collect();
        if ips.is_empty()
            && let Some(ip) = status
                .and_then(|s| s.pod_ip.as_deref())
                .filter(|ip| !ip.is_empty())
        {
            ips.push(("status.podIP".to_owned(), ip));
        }
        if !live || ips.is_empty() {
            return Some(None);
        }
        let mut names = Vec::new();
        for (field, text) in ips {
            let Ok(ip) = text.parse::<IpAddr>() else {
                issues.push(DiscoveryError::Address {
                    kind: "Pod",
                    object: format!("{}/{}", key.0, key.1),
                    field,
                    value: text.to_owned(),
                });
                continue;
            };
            if let Some(label) = pod_label(text) {
                let name = format!("{label}.{}.pod.{}.", key.0, self.zone);
                if !names.iter().any(|(n, _)| *n == name) {
                    names.push((name, ip.to_canonical()));
                }
            }
        }
        Some((!names.is_empty()).then_some(PodInfo { names }))
    }

    fn store_pod(&mut self, key: Key, digest: Option<Option<PodInfo>>, issues: Vec<DiscoveryError>) {
        self.remove_pod(&key);
        if let Some(info) = digest {
            self.add_namespace(&key.0);
            self.pod_keys.insert(key.clone());
            if let Some(info) = info {
                for (name, ip) in &info.names {
                    self.pod_names
                        .entry(name.clone())
                        .or_insert_with(|| (*ip, BTreeSet::new()))
                        .1
                        .insert(key.clone());
                }
                self.pods.insert(key.clone(), info);
            }
        }
        self.set_issues("Pod", &key, issues);
    }

    fn remove_pod(&mut self, key: &Key) {
        self.issues.remove(&("Pod", key.clone()));
        if let Some(old) = self.pods.remove(key) {
            for (name, _) in &old.names {
                if let Some((_, set)) = self.pod_names.get_mut(name) {
                    set.remove(key);
                    if set.is_empty() {
                        self.pod_names.remove(name);
                    }
                }
            }
        }
        if self.pod_keys.remove(key) {
            self.drop_namespace(&key.0);
        }
    }
}

enum Pending {
    Service(Key, Option<SvcInfo>, Vec<DiscoveryError>),
    RemoveService(Key),
    Slice(Key, Option<SliceInfo>, Vec<DiscoveryError>),
    RemoveSlice(Key),
    Pod(Key, Option<Option<PodInfo>>, Vec<DiscoveryError>),
    RemovePod(Key),
}

fn namespace_or_default(ns: &str) -> String {
    if ns.is_empty() {
        "default".to_owned()
    } else {
        ns.to_ascii_lowercase()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::{AnswerRules, RecordType};

    fn service(ns: &str, name: &str, spec: Value) -> Service {
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns}, "spec": spec})).unwrap()
    }

    fn slice(ns: &str, name: &str, svc: &str, family: &str, endpoints: Value, ports: Value) -> EndpointSlice {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns, "labels": {"kubernetes.io/service-name": svc}},
            "addressType": family, "endpoints": endpoints, "ports": ports,
        }))
        .unwrap()
    }

    fn pod(ns: &str, name: &str, ip: &str, phase: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns},
            "status": {"phase": phase, "podIP": ip},
        }))
        .unwrap()
    }

    fn texts(set: &RecordSet, name: &str) -> Vec<String> {
        set.at(name)
            .iter()
            .map(|r| format!("{} {}", r.record_type(), r.data_text()))
            .collect()
    }

    fn zone(opts: DnsOptions, svcs: &[Service], slices: &[EndpointSlice], pods: &[Pod]) -> DnsZone {
        DnsZone::from_objects(opts, svcs, slices, pods).unwrap()
    }

    const B: &str = "web.ns.svc.cluster.local.";

    fn web() -> Service {
        service(
            "ns",
            "web",
            json!({"clusterIP": "10.0.0.1", "ports": [{"name": "http", "port": 80}]}),
        )
    }

    fn web_slice(ready: bool) -> EndpointSlice {
        slice(
            "ns",
            "web-1",
            "web",
            "IPv4",
            json!([{"addresses": ["10.1.0.1"], "conditions": {"ready": ready},
                    "targetRef": {"kind": "Pod", "name": "web-abc"}}]),
            json!([{"name": "http", "protocol": "TCP", "port": 8080}]),
        )
    }

    #[test]
    fn ignore_empty_service_keeps_the_ptr() {
        let opts = DnsOptions {
            ignore_empty_service: true,
            ..DnsOptions::default()
        };
        let set = zone(opts.clone(), &[web()], &[web_slice(false)], &[]).records();
        assert!(set.at(B).is_empty());
        assert!(set.at(&format!("_http._tcp.{B}")).is_empty());
        assert_eq!(
            texts(&set, "1.0.0.10.in-addr.arpa."),
            ["PTR web.ns.svc.cluster.local."]
        );
        let set = zone(opts, &[web()], &[web_slice(true)], &[]).records();
        assert_eq!(
            texts(&set, B),
            ["A 10.0.0.1", "SRV 0 100 80 web.ns.svc.cluster.local."]
        );
        // The endpoint name of a ClusterIP Service carries the slice port.
        assert_eq!(
            texts(&set, &format!("10-1-0-1.{B}")),
            ["A 10.1.0.1", "SRV 0 100 8080 10-1-0-1.web.ns.svc.cluster.local."]
        );
    }

    #[test]
    fn endpoint_pod_names() {
        let opts = DnsOptions {
            endpoint_pod_names: true,
            ..DnsOptions::default()
        };
        let set = zone(opts, &[web()], &[web_slice(true)], &[]).records();
        assert_eq!(texts(&set, &format!("web-abc.{B}"))[0], "A 10.1.0.1");
        assert_eq!(
            texts(&set, "1.0.1.10.in-addr.arpa."),
            ["PTR web-abc.web.ns.svc.cluster.local."]
        );
    }

    #[test]
    fn one_hostname_two_families() {
        let hl = service(
            "ns",
            "db",
            json!({"clusterIP": "None", "ports": [{"name": "pg", "port": 5432}]}),
        );
        let ep = |a: &str| json!([{"addresses": [a], "hostname": "db-0"}]);
        let ports = json!([{"name": "pg", "protocol": "TCP", "port": 5432}]);
        let s4 = slice("ns", "db-4", "db", "IPv4", ep("10.1.0.5"), ports.clone());
        let s6 = slice("ns", "db-6", "db", "IPv6", ep("fd00::5"), ports);
        let set = zone(DnsOptions::default(), &[hl], &[s4, s6], &[]).records();
        assert_eq!(
            texts(&set, "db-0.db.ns.svc.cluster.local."),
            [
                "A 10.1.0.5",
                "AAAA fd00::5",
                "SRV 0 50 5432 db-0.db.ns.svc.cluster.local."
            ]
        );
        // `_pg._tcp` answers A/AAAA too: the ready addresses serving that port.
        assert_eq!(
            texts(&set, "_pg._tcp.db.ns.svc.cluster.local."),
            [
                "A 10.1.0.5",
                "AAAA fd00::5",
                "SRV 0 50 5432 db-0.db.ns.svc.cluster.local."
            ]
        );
    }

    #[test]
    fn clusterip_ptr_hides_endpoint_ptrs_and_no_ports_means_no_srv() {
        let a = service("ns", "a", json!({"clusterIP": "10.0.0.7"}));
        let s = slice(
            "ns",
            "b-1",
            "b",
            "IPv4",
            json!([{"addresses": ["10.0.0.7"]}]),
            json!(null),
        );
        let set = zone(DnsOptions::default(), &[a], &[s], &[]).records();
        assert_eq!(
            texts(&set, "7.0.0.10.in-addr.arpa."),
            ["PTR a.ns.svc.cluster.local."]
        );
        assert_eq!(texts(&set, "a.ns.svc.cluster.local."), ["A 10.0.0.7"]);
        // The slice's Service does not exist: no forward names, but the slice's PTR would
        // exist were the address not a ClusterIP.
        assert!(set.at("b.ns.svc.cluster.local.").is_empty());
    }

    #[test]
    fn external_names() {
        let ext = service(
            "ns",
            "ext",
            json!({"type": "ExternalName", "externalName": "Example.COM"}),
        );
        let ip = service(
            "ns",
            "ip",
            json!({"type": "ExternalName", "externalName": "1.2.3.4"}),
        );
        let z = zone(DnsOptions::default(), &[ext, ip], &[], &[]);
        let set = z.records();
        assert_eq!(texts(&set, "ext.ns.svc.cluster.local."), ["CNAME example.com."]);
        assert!(set.at("ip.ns.svc.cluster.local.").is_empty());
        let Answer::Records(r) = z.lookup("EXT.ns.svc.cluster.local", RecordType::A) else {
            panic!()
        };
        assert_eq!(r[0].record_type(), RecordType::Cname);
        assert_eq!(
            z.lookup("ext.ns.svc.cluster.local.", RecordType::Srv),
            Answer::NoData
        );
        assert_eq!(
            z.lookup("x.ext.ns.svc.cluster.local.", RecordType::A),
            Answer::NxDomain
        );
    }

    #[test]
    fn in_zone_cnames_are_followed() {
        let inner = service(
            "ns",
            "in",
            json!({"type": "ExternalName", "externalName": "web.ns.svc.cluster.local"}),
        );
        let lp = service(
            "ns",
            "loop",
            json!({"type": "ExternalName", "externalName": "loop.ns.svc.cluster.local"}),
        );
        let z = zone(DnsOptions::default(), &[web(), inner, lp], &[], &[]);
        let Answer::Records(r) = z.lookup("in.ns.svc.cluster.local", RecordType::A) else {
            panic!("no records")
        };
        let got: Vec<String> = r.iter().map(ToString::to_string).collect();
        assert_eq!(
            got,
            [
                "in.ns.svc.cluster.local.\t5\tIN\tCNAME\tweb.ns.svc.cluster.local.",
                "web.ns.svc.cluster.local.\t5\tIN\tA\t10.0.0.1",
            ]
        );
        // CoreDNS drops a CNAME to itself, and answers TXT only at `dns-version`.
        assert_eq!(
            z.lookup("loop.ns.svc.cluster.local", RecordType::A),
            Answer::NoData
        );
        assert_eq!(
            z.lookup("in.ns.svc.cluster.local", RecordType::Txt),
            Answer::NxDomain
        );
        let rfc = DnsOptions {
            answers: AnswerRules::Rfc,
            ..DnsOptions::default()
        };
        let z = zone(
            rfc,
            &[
                web(),
                service(
                    "ns",
                    "in",
                    json!({"type": "ExternalName", "externalName": "web.ns.svc.cluster.local"}),
                ),
                service(
                    "ns",
                    "loop",
                    json!({"type": "ExternalName", "externalName": "loop.ns.svc.cluster.local"}),
                ),
            ],
            &[],
            &[],
        );
        let Answer::Records(r) = z.lookup("loop.ns.svc.cluster.local", RecordType::A) else {
            panic!("no records")
        };
        assert_eq!(r.len(), 1, "a loop ends");
        assert_eq!(
            z.lookup("in.ns.svc.cluster.local", RecordType::Txt),
            Answer::NoData
        );
    }

    #[test]
    fn lookups_tell_nodata_from_nxdomain() {
        let z = zone(DnsOptions::default(), &[web()], &[web_slice(true)], &[]);
        assert_eq!(z.lookup("cluster.local.", RecordType::A), Answer::NoData);
        assert_eq!(z.lookup("svc.cluster.local.", RecordType::A), Answer::NoData);
        assert_eq!(z.lookup("ns.svc.cluster.local.", RecordType::A), Answer::NoData);
        assert_eq!(
            z.lookup("other.svc.cluster.local.", RecordType::A),
            Answer::NxDomain
        );
        assert_eq!(z.lookup(B, RecordType::Aaaa), Answer::NoData);
        assert_eq!(z.lookup(&format!("_tcp.{B}"), RecordType::Srv), Answer::NxDomain);
        assert_eq!(z.lookup(&format!("a.b.c.d.{B}"), RecordType::A), Answer::NxDomain);
        assert_eq!(
            z.lookup("web.ns.svc.example.org.", RecordType::A),
            Answer::NxDomain
        );
        assert!(matches!(
            z.lookup("dns-version.cluster.local", RecordType::Txt),
            Answer::Records(_)
        ));
        assert!(matches!(
            z.lookup("1.0.1.10.in-addr.arpa.", RecordType::Ptr),
            Answer::Records(_)
        ));
        assert_eq!(
            z.lookup("2.0.1.10.in-addr.arpa.", RecordType::Ptr),
            Answer::NxDomain
        );
        assert_eq!(
            z.lookup("10-1-0-1.ns.pod.cluster.local.", RecordType::A),
            Answer::NxDomain
        );
    }

    #[test]
    fn pod_modes() {
        let pods = [
            pod("ns", "a", "10.240.0.1", "Running"),
            pod("ns", "b", "10.240.0.2", "Succeeded"),
            pod("ns", "c", "fd00::9", "Pending"),
        ];
        let verified = DnsOptions {
            pods: PodMode::Verified,
            ..DnsOptions::default()
        };
        let z = zone(verified, &[], &[], &pods);
        let set = z.records();
        assert_eq!(
            texts(&set, "10-240-0-1.ns.pod.cluster.local."),
            ["A 10.240.0.1", "SRV 0 100 0 10-240-0-1.ns.pod.cluster.local."]
        );
        assert!(set.at("10-240-0-2.ns.pod.cluster.local.").is_empty());
        assert_eq!(
            texts(&set, "fd00--9.ns.pod.cluster.local."),
            ["AAAA fd00::9", "SRV 0 100 0 fd00--9.ns.pod.cluster.local."]
        );
        assert_eq!(
            z.lookup("10-240-0-9.ns.pod.cluster.local.", RecordType::A),
            Answer::NxDomain
        );
        let insecure = DnsOptions {
            pods: PodMode::Insecure,
            ..DnsOptions::default()
        };
        let zi = zone(insecure, &[], &[], &pods);
        assert_eq!(zi.records(), set);
        let Answer::Records(r) = zi.lookup("10-240-0-9.ns.pod.cluster.local.", RecordType::A) else {
            panic!()
        };
        assert_eq!(r[0].data_text(), "10.240.0.9");
        assert_eq!(
            zi.lookup("10-240-0-9.nope.pod.cluster.local.", RecordType::A),
            Answer::NxDomain
        );
        assert_eq!(
            zi.lookup("not-an-ip.ns.pod.cluster.local.", RecordType::A),
            Answer::NxDomain
        );
        let set = zone(DnsOptions::default(), &[], &[], &pods).records();
        assert_eq!(set.len(), 1, "only dns-version without pod records");
    }

    #[test]
    fn pods_sharing_an_ip_share_a_name() {
        // hostNetwork Pods on one node carry the node's IP.
        let verified = DnsOptions {
            pods: PodMode::Verified,
            ..DnsOptions::default()
        };
        let mut z = zone(verified, &[], &[], &[pod("NS", "a", "192.168.0.5", "Running")]);
        let name = "192-168-0-5.ns.pod.cluster.local.";
        let before = z.records();
        let d = z.apply(Change::Pod(&pod("ns", "b", "192.168.0.5", "Running")));
        // The address stays; the SRV weight is now shared by two Pods.
        let srv = |r: &Vec<Record>| -> Vec<String> { r.iter().map(|x| x.data_text().to_string()).collect() };
        assert_eq!(srv(&d.removed), [format!("0 100 0 {name}")]);
        assert_eq!(srv(&d.added), [format!("0 50 0 {name}")]);
        assert_eq!(d, before.diff(&z.records()));
        let d = z.apply(Change::DeletePod {
            namespace: "ns",
            name: "A",
        });
        assert_eq!(
            srv(&d.added),
            [format!("0 100 0 {name}")],
            "b still gives the name"
        );
        let d = z.apply(Change::DeletePod {
            namespace: "ns",
            name: "b",
        });
        assert_eq!(d.removed.len(), 2);
        assert_eq!(d.removed[0].name(), name);
        assert_eq!(z.lookup(name, RecordType::A), Answer::NxDomain);
    }

    fn rfc() -> DnsOptions {
        DnsOptions {
            answers: AnswerRules::Rfc,
            ..DnsOptions::default()
        }
    }

    fn dual_pod(ns: &str, name: &str, ips: &[&str]) -> Pod {
        serde_json::from_value(json!({
            "metadata": {"name": name, "namespace": ns},
            "status": {"phase": "Running", "podIP": ips[0],
                       "podIPs": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<_>>()},
        }))
        .unwrap()
    }

    fn records_of(a: Answer) -> Vec<String> {
        match a {
            Answer::Records(r) => r
                .iter()
                .map(|x| format!("{} {} {}", x.name(), x.record_type(), x.data_text()))
                .collect(),
            other => panic!("{other:?}"),
        }
    }

    /// Issue 18, item 4: with pod records disabled, `<ns>.pod.<zone>` does not exist.
    #[test]
    fn pod_namespace_names_need_pod_records() {
        let pods = [pod("min", "a", "10.240.0.1", "Running")];
        let z = zone(DnsOptions::default(), &[], &[], &pods);
        assert_eq!(
            z.lookup("min.pod.cluster.local.", RecordType::A),
            Answer::NxDomain
        );
        assert_eq!(z.lookup("pod.cluster.local.", RecordType::A), Answer::NoData);
        let verified = DnsOptions {
            pods: PodMode::Verified,
            ..DnsOptions::default()
        };
        let z = zone(verified, &[], &[], &pods);
        assert_eq!(z.lookup("min.pod.cluster.local.", RecordType::A), Answer::NoData);
    }

    /// Issue 18, item 5: the reverse zone apexes exist.
    #[test]
    fn reverse_zone_apexes_exist() {
        let z = zone(DnsOptions::default(), &[web()], &[], &[]);
        for apex in ["in-addr.arpa.", "ip6.arpa.", "IN-ADDR.ARPA"] {
            assert_eq!(z.lookup(apex, RecordType::Ptr), Answer::NoData, "{apex}");
            assert_eq!(z.lookup(apex, RecordType::A), Answer::NoData, "{apex}");
        }
        assert_eq!(z.lookup("10.in-addr.arpa.", RecordType::Ptr), Answer::NxDomain);
    }

    /// Issue 18, item 6: every Pod IP has a pod name, not only the primary one.
    #[test]
    fn every_pod_ip_has_a_pod_name() {
        let verified = DnsOptions {
            pods: PodMode::Verified,
            ..DnsOptions::default()
        };
        let p = dual_pod("ns", "a", &["10.244.0.5", "fd00:10:244::5"]);
        let z = zone(verified, &[], &[], &[p]);
        assert_eq!(
            records_of(z.lookup("fd00-10-244--5.ns.pod.cluster.local.", RecordType::Aaaa)),
            ["fd00-10-244--5.ns.pod.cluster.local. AAAA fd00:10:244::5"]
        );
        assert_eq!(
            records_of(z.lookup("10-244-0-5.ns.pod.cluster.local.", RecordType::A)),
            ["10-244-0-5.ns.pod.cluster.local. A 10.244.0.5"]
        );
        let set = z.records();
        assert_eq!(set.at("fd00-10-244--5.ns.pod.cluster.local.").len(), 2);
    }

    /// Issue 18, item 7: port names in queries, with or without underscores, and `_` wildcards.
    #[test]
    fn service_port_names_in_queries() {
        let svc = service(
            "ns",
            "web",
            json!({"clusterIP": "10.0.0.1", "ports": [
                {"name": "http", "port": 80}, {"name": "metrics", "port": 9090},
                {"name": "dns", "port": 53, "protocol": "UDP"}]}),
        );
        let z = zone(DnsOptions::default(), &[svc], &[], &[]);
        let a = |n: &str| z.lookup(&format!("{n}.web.ns.svc.cluster.local."), RecordType::A);
        let srv = |n: &str| z.lookup(&format!("{n}.web.ns.svc.cluster.local."), RecordType::Srv);
        assert_eq!(
            records_of(a("_http._tcp")),
            ["_http._tcp.web.ns.svc.cluster.local. A 10.0.0.1"]
        );
        assert_eq!(
            records_of(a("http.tcp")),
            ["http.tcp.web.ns.svc.cluster.local. A 10.0.0.1"]
        );
        assert_eq!(
            records_of(srv("http.tcp")),
            ["http.tcp.web.ns.svc.cluster.local. SRV 0 100 80 web.ns.svc.cluster.local."]
        );
        assert_eq!(
            records_of(srv("_._tcp")),
            [
                "_._tcp.web.ns.svc.cluster.local. SRV 0 50 80 web.ns.svc.cluster.local.",
                "_._tcp.web.ns.svc.cluster.local. SRV 0 50 9090 web.ns.svc.cluster.local.",
            ]
        );
        assert_eq!(
            records_of(srv("_dns._")),
            ["_dns._.web.ns.svc.cluster.local. SRV 0 100 53 web.ns.svc.cluster.local."]
        );
        assert_eq!(a("_http._udp"), Answer::NxDomain);
        assert_eq!(a("_nope._tcp"), Answer::NxDomain);
        let set = z.records();
        assert_eq!(
            texts(&set, "_http._tcp.web.ns.svc.cluster.local."),
            ["A 10.0.0.1", "SRV 0 100 80 web.ns.svc.cluster.local."]
        );

        // Headless: the ready addresses serving that port.
        let hl = service(
            "ns",
            "db",
            json!({"clusterIP": "None", "ports": [{"name": "pg", "port": 5432}]}),
        );
        let with_port = slice(
            "ns",
            "db-1",
            "db",
            "IPv4",
            json!([{"addresses": ["10.1.0.1"]}]),
            json!([{"name": "pg", "protocol": "TCP", "port": 5432}]),
        );
        let without = slice(
            "ns",
            "db-2",
            "db",
            "IPv4",
            json!([{"addresses": ["10.1.0.2"]}]),
            json!([{"name": "other", "protocol": "TCP", "port": 1}]),
        );
        let z = zone(DnsOptions::default(), &[hl], &[with_port, without], &[]);
        assert_eq!(
            records_of(z.lookup("_pg._tcp.db.ns.svc.cluster.local.", RecordType::A)),
            ["_pg._tcp.db.ns.svc.cluster.local. A 10.1.0.1"]
        );
        assert_eq!(
            records_of(z.lookup("_._tcp.db.ns.svc.cluster.local.", RecordType::A)).len(),
            2
        );
    }

    /// Issue 18, item 8: pod names answer SRV with port 0.
    #[test]
    fn pod_names_answer_srv_with_port_zero() {
        let pods = [pod("ns", "a", "10.240.0.1", "Running")];
        for mode in [PodMode::Verified, PodMode::Insecure] {
            let opts = DnsOptions {
                pods: mode,
                ..DnsOptions::default()
            };
            let z = zone(opts, &[], &[], &pods);
            assert_eq!(
                records_of(z.lookup("10-240-0-1.ns.pod.cluster.local.", RecordType::Srv)),
                ["10-240-0-1.ns.pod.cluster.local. SRV 0 100 0 10-240-0-1.ns.pod.cluster.local."],
                "{mode:?}"
            );
        }
        let insecure = DnsOptions {
            pods: PodMode::Insecure,
            ..DnsOptions::default()
        };
        let z = zone(insecure, &[], &[], &pods);
        assert_eq!(
            records_of(z.lookup("10-240-0-9.ns.pod.cluster.local.", RecordType::Srv)),
            ["10-240-0-9.ns.pod.cluster.local. SRV 0 100 0 10-240-0-9.ns.pod.cluster.local."]
        );
    }

    /// Issue 18, item 9: CoreDNS's answers by default, the RFC-correct ones under an option.
    #[test]
    fn coredns_answers_and_rfc_answers() {
        let ext = service(
            "ns",
            "in",
            json!({"type": "ExternalName", "externalName": "web.ns.svc.cluster.local"}),
        );
        let objects = (vec![web(), ext], vec![web_slice(true)]);
        let core = zone(DnsOptions::default(), &objects.0, &objects.1, &[]);
        let strict = zone(rfc(), &objects.0, &objects.1, &[]);
        let cases = [
            (
                "1.0.1.10.in-addr.arpa.",
                RecordType::A,
                Answer::NxDomain,
                Answer::NoData,
            ),
            (
                "1.0.0.10.in-addr.arpa.",
                RecordType::Srv,
                Answer::NxDomain,
                Answer::NoData,
            ),
            (
                "dns-version.cluster.local.",
                RecordType::A,
                Answer::NxDomain,
                Answer::NoData,
            ),
            (B, RecordType::Txt, Answer::NxDomain, Answer::NoData),
            (
                "svc.cluster.local.",
                RecordType::Txt,
                Answer::NxDomain,
                Answer::NoData,
            ),
            (
                "nope.ns.svc.cluster.local.",
                RecordType::Txt,
                Answer::NxDomain,
                Answer::NxDomain,
            ),
        ];
        for (name, qtype, want_core, want_rfc) in cases {
            assert_eq!(core.lookup(name, qtype), want_core, "coredns {name} {qtype}");
            assert_eq!(strict.lookup(name, qtype), want_rfc, "rfc {name} {qtype}");
        }
        // Both answer what exists.
        for z in [&core, &strict] {
            assert!(matches!(z.lookup(B, RecordType::A), Answer::Records(_)));
            assert!(matches!(
                z.lookup("dns-version.cluster.local.", RecordType::Txt),
                Answer::Records(_)
            ));
        }
        // An ExternalName whose in-zone target has no AAAA: CoreDNS gives an empty NOERROR
        // without the CNAME; RFC 1034 gives the CNAME.
        let name = "in.ns.svc.cluster.local.";
        assert_eq!(core.lookup(name, RecordType::Aaaa), Answer::NoData);
        assert_eq!(
            records_of(strict.lookup(name, RecordType::Aaaa)),
            ["in.ns.svc.cluster.local. CNAME web.ns.svc.cluster.local."]
        );
        assert_eq!(records_of(core.lookup(name, RecordType::A)).len(), 2);
    }

    #[test]
    fn bad_input_is_reported_and_skipped() {
        let bad = slice(
            "ns",
            "web-1",
            "web",
            "IPv4",
            json!([{"addresses": ["10.1.0.1", "nope"]}]),
            json!([{"name": "http", "port": 80}]),
        );
        let svc = service("ns", "a.b", json!({"clusterIP": "10.0.0.1"}));
        let z = zone(DnsOptions::default(), &[web(), svc], &[bad], &[]);
        let issues: Vec<String> = z.issues().map(ToString::to_string).collect();
        assert_eq!(issues.len(), 2, "{issues:?}");
        assert!(
            issues
                .iter()
                .any(|i| i.contains("endpoints[0].addresses[1]") && i.contains("\"nope\""))
        );
        assert!(issues.iter().any(|i| i.contains("metadata.name")));
        assert_eq!(texts(&z.records(), &format!("10-1-0-1.{B}"))[0], "A 10.1.0.1");
        assert!(
            DnsZone::new(DnsOptions {
                ttl: 9999,
                ..DnsOptions::default()
            })
            .is_err()
        );
    }

    #[test]
    fn deltas_equal_full_recomputation() {
        let mut z = zone(DnsOptions::default(), &[web()], &[web_slice(true)], &[]);
        let before = z.records();
        let moved = slice(
            "ns",
            "web-1",
            "web",
            "IPv4",
            json!([{"addresses": ["10.1.0.2"]}]),
            json!(null),
        );
        let d = z.apply(Change::EndpointSlice(&moved));
        let after = z.records();
        assert_eq!(d, before.diff(&after));
        assert!(d.removed.iter().any(|r| r.name() == "1.0.1.10.in-addr.arpa."));
        assert!(d.added.iter().any(|r| r.name() == "2.0.1.10.in-addr.arpa."));
        let d = z.apply(Change::DeleteService {
            namespace: "ns",
            name: "web",
        });
        assert_eq!(d, after.diff(&z.records()));
        assert!(d.added.is_empty());
        let d = z.apply(Change::DeleteEndpointSlice {
            namespace: "ns",
            name: "web-1",
        });
        assert_eq!(d.removed.len(), 1, "only the endpoint PTR was left: {d:?}");
        assert_eq!(z.records().len(), 1);
    }
}
