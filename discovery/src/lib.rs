//! # svcnet-discovery
//!
//! How Kubernetes Services are found by name: the DNS records a cluster DNS server serves for
//! Services, EndpointSlices and Pods (as CoreDNS v1.15.0's `kubernetes` plugin answers them,
//! following the Kubernetes DNS specification, schema 1.1.0), and the service environment
//! variables the kubelet gives every container.
//!
//! ```text
//!  Services ─┐                    ┌─▶ RecordSet ──▶ zone-file text / JSON
//!  Slices ───┼─▶ DnsZone (index) ─┼─▶ RecordDelta (one object changed)
//!  Pods ─────┘                    └─▶ Answer (one query: records, NODATA, NXDOMAIN)
//!
//!  Services ──▶ service_env ──▶ [EnvVar] ──▶ container_env (with the container's own)
//! ```
//!
//! - [`dns_records`] computes the whole record set: A/AAAA and SRV for ClusterIP Services
//!   (dual-stack included), per-endpoint names and SRV for headless Services, PTR records,
//!   ExternalName CNAMEs, pod records when enabled, and the `dns-version` TXT record, with
//!   CoreDNS's SRV priority and weight.
//! - [`DnsZone`] keeps the objects indexed: [`DnsZone::apply`] returns only the records that change
//!   when one EndpointSlice (or Service, or Pod) changes; [`DnsZone::lookup`] tells a name that
//!   holds no record of a type (NODATA) from a name that must not exist (NXDOMAIN).
//! - [`service_env`] and [`container_env`] compute the legacy `{SVC}_SERVICE_HOST`, ...
//!   variables and merge them with a container's own.
//!
//! ## The records, by Service shape
//!
//! With `B` = `<service>.<namespace>.svc.<zone>.`, "ready" = an EndpointSlice endpoint whose
//! `conditions.ready` is true or absent, and `h` = an address's endpoint hostname (the
//! endpoint's `hostname`, else with `endpoint_pod_names` its `targetRef.name`, else the
//! address with `.`/`:` turned into `-`):
//!
//! | shape | `B` | `_port._proto.B` | `h.B` | PTR |
//! |---|---|---|---|---|
//! | ClusterIP (one or two families) | A/AAAA per ClusterIP; SRV per Service port number | SRV per named port, Service port, target `B` | A/AAAA + SRV per ready address | ClusterIP → `B`; ready endpoints → `h.B` |
//! | headless with ready endpoints | A/AAAA per ready address; SRV → endpoint names | SRV per ready address × matching slice port (slice port number) | A/AAAA + SRV | ready endpoints → `h.B` |
//! | headless without ready endpoints | NXDOMAIN | NXDOMAIN | NXDOMAIN | none |
//! | ExternalName | CNAME (none when the name is an IP) | NXDOMAIN | NXDOMAIN | none |
//!
//! `_port._proto.B` also answers A/AAAA, as CoreDNS does: the ClusterIPs, or for a headless
//! Service the ready addresses serving that port. Queries may write the port name without
//! underscores (`http.tcp.B` answers as `_http._tcp.B`) and use `_` as a wildcard
//! (`_._tcp.B`: every TCP port); [`DnsZone::lookup`] answers those forms, the record set lists
//! the `_port._proto` names.
//!
//! SRV priority is 0 and the weight is `max(1, floor(100 / k))`, `k` the number of
//! candidates CoreDNS builds for the name (duplicates and port-less entries included).
//! Every record has the configured TTL (default 5) except `dns-version.<zone>.` TXT
//! `"1.1.0"` (28800). Pod names `<dashed-ip>.<namespace>.pod.<zone>.` exist only with
//! [`PodMode::Verified`] or [`PodMode::Insecure`]: one per IP of every running Pod's
//! `status.podIPs` (CoreDNS v1.15.0 indexes them all), each with its A or AAAA and an SRV
//! `0 100 0 <name>`; with pod names off, nothing under `pod.<zone>` exists (not even
//! `<namespace>.pod.<zone>`). The reverse zone apexes `in-addr.arpa.` and `ip6.arpa.` exist
//! without records. Where the specification and CoreDNS differ (SRV port of headless
//! Services, readiness, the extra names above, weights), the records follow CoreDNS's query
//! answers.
//!
//! ## CoreDNS's answers and the RFC's
//! Where CoreDNS breaks DNS rules, [`DnsZone::lookup`] gives CoreDNS's answer by default (it is
//! what clients see) and the RFC 1034 / 2308 answer with [`AnswerRules::Rfc`]:
//!
//! | query | CoreDNS v1.15.0 (default) | RFC |
//! |---|---|---|
//! | A, SRV, TXT, ... at a reverse name holding a PTR | NXDOMAIN | NODATA |
//! | A, SRV, ... at `dns-version.<zone>` | NXDOMAIN | NODATA |
//! | TXT anywhere but `dns-version` (a Service name whose A answers, say) | NXDOMAIN | NODATA where the name exists |
//! | A/AAAA at an ExternalName whose in-zone target has no such record | NODATA, no CNAME | the CNAME |
//!
//! The record set ([`dns_records`]) is the same under both.
//!
//! ## Service environment variables
//!
//! For each included Service `S` (upper-cased, `-` → `_`) with ClusterIP `ip` and ports
//! `p0, p1, ...`: `S_SERVICE_HOST`, `S_SERVICE_PORT`, `S_SERVICE_PORT_<NAME>` per named
//! port, `S_PORT` (`proto://ip:port` of `p0`, IPv6 bracketed), and per port
//! `S_PORT_<n>_<PROTO>`, `..._PROTO`, `..._PORT`, `..._ADDR`, as the kubelet writes them.
//!
//! ## Non-features
//! This crate never talks to an API server, never opens a socket and never answers DNS
//! packets; it reads values and returns values. It does not serve SOA/NS records (they
//! belong to the DNS server's own deployment), `externalIPs` or load-balancer addresses
//! (CoreDNS's `k8s_external` plugin), or multi-cluster names. Where the written
//! specification and CoreDNS differ, CoreDNS's answers are followed. One documented
//! deviation stays: EndpointSlices of `addressType: FQDN` are ignored (CoreDNS does not
//! filter them).
//!
//! ## Example
//! ```
//! use svcnet_discovery::{DnsOptions, RecordType, dns_records};
//! use svcnet_model::{Service, ServicePort, ServiceSpec};
//!
//! let mut web = Service::default();
//! web.metadata.name = Some("web".into());
//! web.metadata.namespace = Some("shop".into());
//! web.spec = Some(ServiceSpec {
//!     cluster_ip: Some("10.96.0.10".into()),
//!     ports: Some(vec![ServicePort { name: Some("http".into()), port: 80, ..Default::default() }]),
//!     ..Default::default()
//! });
//! let records = dns_records(&[web], &[], &[], &DnsOptions::new("cluster.local")).unwrap();
//! let port = records.at("_http._tcp.web.shop.svc.cluster.local.");
//! assert_eq!(port[0].record_type(), RecordType::A); // the port name answers A, as CoreDNS does
//! assert_eq!(port[1].record_type(), RecordType::Srv);
//! assert_eq!(port[1].data_text(), "0 100 80 web.shop.svc.cluster.local.");
//! assert!(records.to_string().contains("web.shop.svc.cluster.local.\t5\tIN\tA\t10.96.0.10"));
//! ```

mod env;
mod error;
mod names;
mod options;
mod record;
mod zone;

pub use env::{container_env, service_env};
pub use error::DiscoveryError;
pub use options::{
    AnswerRules, DEFAULT_TTL, DNS_SCHEMA_VERSION, DNS_VERSION_TTL, DnsOptions, MAX_TTL, PodMode,
};
pub use record::{Record, RecordData, RecordDelta, RecordSet, RecordType, Srv};
pub use zone::{Answer, Change, DnsZone};

use svcnet_model::{EndpointSlice, Pod, Service};

/// The records a cluster DNS server serves for these objects.
///
/// Fails only when the options are unusable; parts of objects that cannot be used (an
/// address that does not parse, a name that is not a DNS label) are skipped, and
/// [`DnsZone::issues`] lists them.
pub fn dns_records(
    services: &[Service],
    slices: &[EndpointSlice],
    pods: &[Pod],
    options: &DnsOptions,
) -> Result<RecordSet, DiscoveryError> {
    Ok(DnsZone::from_objects(options.clone(), services, slices, pods)?.records())
}

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
