//! # svcnet-discovery
//!
//! How Kubernetes Services are found by name: the DNS records a cluster DNS server serves for
//! Services, EndpointSlices and Pods (as CoreDNS's `kubernetes` plugin answers them, following
//! the Kubernetes DNS specification, schema 1.1.0), and the service environment variables
//! the kubelet gives every container.
//!
//! ```text
//!  Services ─┐                 ┌─▶ RecordSet ──▶ zone-file text / JSON
//!  Slices ───┼─▶ Zone (index) ─┼─▶ RecordDelta (one object changed)
//!  Pods ─────┘                 └─▶ Answer (one query: records, NODATA, NXDOMAIN)
//!
//!  Services ──▶ service_env ──▶ [EnvVar] ──▶ container_env (with the container's own)
//! ```
//!
//! - [`dns_records`] computes the whole record set: A/AAAA and SRV for ClusterIP Services
//!   (dual-stack included), per-endpoint names and SRV for headless Services, PTR records,
//!   ExternalName CNAMEs, pod records when enabled, and the `dns-version` TXT record, with
//!   CoreDNS's SRV priority and weight.
//! - [`Zone`] keeps the objects indexed: [`Zone::apply`] returns only the records that change
//!   when one EndpointSlice (or Service, or Pod) changes; [`Zone::lookup`] tells a name that
//!   holds no record of a type (NODATA) from a name that must not exist (NXDOMAIN).
//! - [`service_env`] and [`container_env`] compute the legacy `{SVC}_SERVICE_HOST`, ...
//!   variables and merge them with a container's own.
//!
//! ## Non-features
//! This crate never talks to an API server, never opens a socket and never answers DNS
//! packets; it reads values and returns values. It does not serve SOA/NS records (they
//! belong to the DNS server's own deployment), `externalIPs` or load-balancer addresses
//! (CoreDNS's `k8s_external` plugin), or multi-cluster names. Where the written
//! specification and CoreDNS differ, CoreDNS's answers are followed.
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
//! let srv = records.at("_http._tcp.web.shop.svc.cluster.local.");
//! assert_eq!(srv[0].record_type(), RecordType::Srv);
//! assert_eq!(srv[0].data_text(), "0 100 80 web.shop.svc.cluster.local.");
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
pub use options::{DEFAULT_TTL, DNS_SCHEMA_VERSION, DNS_VERSION_TTL, DnsOptions, MAX_TTL, PodMode};
pub use record::{Record, RecordData, RecordDelta, RecordSet, RecordType, Srv};
pub use zone::{Answer, Change, Zone};

use svcnet_model::{EndpointSlice, Pod, Service};

/// The records a cluster DNS server serves for these objects.
///
/// Fails only when the options are unusable; parts of objects that cannot be used (an
/// address that does not parse, a name that is not a DNS label) are skipped, and
/// [`Zone::issues`] lists them.
pub fn dns_records(
    services: &[Service],
    slices: &[EndpointSlice],
    pods: &[Pod],
    options: &DnsOptions,
) -> Result<RecordSet, DiscoveryError> {
    Ok(Zone::from_objects(options.clone(), services, slices, pods)?.records())
}
