//! The per-node proxy model: what kube-proxy v1.37.2 knows about each service port before a
//! backend writes rules for it (`pkg/proxy/serviceport.go`, `servicechangetracker.go`,
//! `endpointslicecache.go`, `topology.go`), and the node's proxy settings.
//!
//! One model per IP family, as kube-proxy runs one proxier per family. Every backend (iptables,
//! nftables, IPVS) builds on it.

mod config;
pub(crate) mod model;

pub use config::{
    HostAddress, HostInterface, LocalDetector, LocalDetectorMode, NodePortAddresses, ProxyConfig,
};
pub use model::{Endpoint, EndpointList, Protocol, ProxyModel, ServicePortInfo, ServicePortName};
