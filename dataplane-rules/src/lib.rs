//! # svcnet-rules
//!
//! The iptables, nftables and IPVS rule sets kube-proxy v1.37.2 would program, as data and as
//! text.
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
//! Pure: no I/O, no clock, no randomness.

mod error;
pub mod explain;
pub mod hash;
pub mod iptables;
pub mod ipvs;
pub mod nftables;
pub mod proxy;
pub mod trace;

pub use error::RulesError;
pub use proxy::{
    Endpoint, HostAddress, HostInterface, LocalDetector, LocalDetectorMode, NodePortAddresses, Protocol,
    ProxyConfig, ProxyModel, ServicePortInfo, ServicePortName,
};
