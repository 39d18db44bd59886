//! # svcnet-rules
//!
//! The iptables, nftables and IPVS rule sets kube-proxy v1.37.2 would program, as data and as
//! text.
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/iptables/proxier.go`, `pkg/proxy/nftables/proxier.go`,
//! `pkg/proxy/ipvs/proxier.go`, and the shared `pkg/proxy/serviceport.go`, `endpointslicecache.go`
//! and `topology.go`.
//!
//! - [`ProxyModel`]: what the proxier of one IP family on one node knows about each service
//!   port (ClusterIP, NodePort, externalIPs, LoadBalancer VIPs, source ranges, affinity,
//!   traffic policies, health-check node port) with the endpoints it uses there (cluster,
//!   local, all locally reachable), built from Services, EndpointSlices and the node's
//!   [`ProxyConfig`]. Every backend builds on it.
//! - [`nftables`]: kube-proxy's nftables mode: a typed knftables-like object model, the
//!   proxier's full and partial syncs as transactions, the rule set as knftables dumps it.
//! - [`iptables`]: the iptables backend — the restore payload of a full or partial sync as
//!   typed data and as `iptables-restore` text, and the tables it leaves (`iptables-save`).
//!
//! - [`ipvs`]: the IPVS backend — virtual servers with their real servers, the ipsets, the
//!   addresses bound to `kube-ipvs0` and the companion iptables rules, as data and as
//!   `ipvsadm --restore`, `ipset restore` and iptables text.
//!
//! - [`trace`]: packet tracers over those rule sets (iptables tables, the nftables table, IPVS
//!   virtual servers) and a reference model of Service semantics they are checked against.
//! - [`explain`]: why a Service does (not) work, in the order an expert checks.
//! - [`conntrack`]: the conntrack entries to flush between two successive proxy models.
//!
//! Pure: no I/O, no clock, no randomness.
//!
//! ## Where kube-proxy's order or clock shows
//! kube-proxy v1.37.2 walks its service map in Go map order; service ports are taken here in
//! name order (kube-proxy's tests compare after sorting, see `sortIPTablesRules`). Syncs carry
//! no clock: stale chains are deleted at every sync, also in large-cluster mode, as in
//! kube-proxy's test proxier (sync period 0); the hourly full resync never happens. Objects are
//! read as given: an absent Service `type` is not defaulted to `ClusterIP` (kube-proxy reads
//! what the API server stored, where it always is).
//!
//! ## Memory in a long-running process
//! A full sync of a large cluster allocates tens of megabytes (the model, the rule set, its
//! text) and frees them when the next sync's result replaces them. With glibc's allocator at
//! its start-up settings, memory freed past a 128 KiB trim threshold goes back to the kernel
//! and the next sync takes it again one page fault at a time: at 10,000 Services × 10
//! endpoints that can be as much time as the IPVS or nftables sync itself. glibc raises the
//! threshold by itself once the process has freed a large mapped block (up to 32 MiB, as the
//! iptables sync's text is), or it can be set (`mallopt(M_TRIM_THRESHOLD)`,
//! `MALLOC_TRIM_THRESHOLD_`); allocators such as jemalloc or mimalloc keep freed pages for
//! reuse. The benchmarks of this workspace time syncs with the allocator in that steady state.

pub mod conntrack;
mod error;
pub mod explain;
pub(crate) mod hash;
pub mod iptables;
pub mod ipvs;
pub mod nftables;
pub mod proxy;
pub mod trace;

pub use error::RulesError;
pub use proxy::{
    Endpoint, EndpointList, HostAddress, HostInterface, LocalDetector, LocalDetectorMode, NodePortAddresses,
    Protocol, ProxyConfig, ProxyModel, ServicePortInfo, ServicePortName,
};
