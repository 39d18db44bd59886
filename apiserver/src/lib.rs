//! # svcnet-apiserver
//!
//! What kube-apiserver v1.37.2 answers to a create or an update, as pure functions: the
//! question a CI job asks before `kubectl apply` — *will the server accept this?*
//!
//! ```text
//!  request ──defaulting──▶ storage hooks ──▶ allocator ──▶ REST strategy ──▶ validation ──▶ Answer
//!                          (carry over        (families,    (drop fields     (identical
//!                           clusterIPs,        IPs, node     the new type     causes
//!                           nodePorts, ...)    ports)        may not carry)   merged)
//! ```
//!
//! The validation functions of `svcnet_model::validation` answer what Kubernetes'
//! validation functions say. The API server says something else in a quarter of real cases:
//! an update starts from the stored object (omitted cluster IPs, node ports and the
//! health-check node port are carried over, the stored family policy is adopted, an
//! unconditional update gets the stored resourceVersion); the REST strategy drops the
//! fields a type change leaves behind and an EndpointSlice's `deprecatedTopology`; the
//! allocator refuses what validation allows (family policy against families and IPs,
//! releasing a secondary cluster IP, one node port for two port numbers, addresses and
//! ports outside the cluster's ranges or in use); and identical causes are returned once.
//!
//! - [`create`] / [`update`]: one request of any kind; [`Answer`] holds the causes, the
//!   [`Change`]s the server made, and the [`Step`] that answered.
//! - [`create_service`] / [`update_service`], [`create_endpoint_slice`] /
//!   [`update_endpoint_slice`]: the same per kind.
//! - [`Cluster`]: service CIDRs and the NodePort range, and what is taken in them (a dry-run
//!   allocation state over `svcnet-allocators`); without one, only the allocator checks that
//!   need no state run.
//!
//! Feature gates are at their v1.37 defaults. No I/O, no clock; randomness (for the
//! addresses and ports a dry run hands out) comes in as an argument.
//!
//! ## Example
//! A LoadBalancer → ClusterIP update that keeps `loadBalancerClass`: validation alone
//! refuses it, the server drops the class and accepts it.
//! ```
//! use svcnet_allocators::SplitMix64;
//! use svcnet_apiserver::{Cluster, update_service};
//! use svcnet_model::{Service, validation};
//!
//! let stored: Service = serde_json::from_str(r#"{"metadata": {"name": "web", "namespace": "shop", "resourceVersion": "7"},
//!   "spec": {"type": "LoadBalancer", "selector": {"app": "web"}, "clusterIP": "10.96.0.10",
//!     "ports": [{"port": 80, "nodePort": 30080}], "loadBalancerClass": "example.com/lb"}}"#).unwrap();
//! let mut new: Service = serde_json::from_str(r#"{"metadata": {"name": "web", "namespace": "shop", "resourceVersion": "7"},
//!   "spec": {"type": "ClusterIP", "selector": {"app": "web"}, "clusterIP": "10.96.0.10",
//!     "ports": [{"port": 80, "nodePort": 30080}], "loadBalancerClass": "example.com/lb"}}"#).unwrap();
//! let answer = update_service(&mut new, &stored, None, &mut SplitMix64::new(1));
//! assert!(answer.is_valid());
//! let said: Vec<String> = answer.changes.iter().map(ToString::to_string).collect();
//! assert!(said.contains(&"dropped spec.loadBalancerClass (\"example.com/lb\"): type is no longer LoadBalancer".to_string()));
//! ```

mod change;
mod cluster;
mod endpointslice;
mod error;
mod request;
mod service;

pub use change::{Change, ChangeKind};
pub use cluster::Cluster;
pub use endpointslice::{create_endpoint_slice, update_endpoint_slice};
pub use error::ApiServerError;
pub use request::{Answer, Step, create, merge_duplicates, update};
pub use service::{create_service, update_service};
