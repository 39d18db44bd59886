//! # svcnet-model
//!
//! The Kubernetes objects of Service networking as Rust values: core/v1 `Service`, `Endpoints`,
//! `Pod` and `Node`, discovery/v1 `EndpointSlice`, networking/v1 `ServiceCIDR`, `IPAddress` and
//! `NetworkPolicy`, with serde names and omission rules that round-trip `kubectl get -o json`
//! and `-o yaml` output, the API server's defaulting, and its validation with Kubernetes field
//! paths, error types and messages.
//!
//! ```text
//!  YAML / JSON ──serde──▶ Service, EndpointSlice, ... ──defaults──▶ ──validate──▶ ErrorList
//!                               │
//!                               └──▶ allocators, slicer, topology, rules (other svcnet crates)
//! ```
//!
//! ## Non-features
//! This crate never reads files, talks to an API server or prints: it takes values and returns
//! values. Enum-like fields (`type`, `protocol`, ...) stay strings on the wire types, so that
//! validation can report any value a user wrote; typed accessors parse addresses at the edge and
//! name the field when they fail.
//!
//! ## Example
//! ```
//! use svcnet_model::{Service, ServicePort, ServiceSpec, defaults, validation};
//!
//! let mut svc = Service::default();
//! svc.metadata.name = Some("web".into());
//! svc.metadata.namespace = Some("shop".into());
//! svc.spec = Some(ServiceSpec {
//!     selector: Some([("app".to_string(), "web".to_string())].into()),
//!     ports: Some(vec![ServicePort { port: 0, ..Default::default() }]),
//!     ..Default::default()
//! });
//! defaults::default_service(&mut svc);
//! let errors = validation::validate_service_create(&svc);
//! assert!(errors.iter().any(|e| e.field == "spec.ports[0].port"));
//! ```

mod endpoints;
mod endpointslice;
mod error;
mod intstr;
mod labelselector;
mod meta;
mod netparse;
mod networkpolicy;
mod node;
mod object;
mod pod;
mod quantity;
mod service;
mod servicecidr;

pub mod defaults;
pub mod field;
pub mod reachability;
pub mod validation;

pub use endpoints::*;
pub use endpointslice::*;
pub use error::ModelError;
pub use intstr::IntOrString;
pub use labelselector::*;
pub use meta::*;
pub use networkpolicy::*;
pub use node::*;
pub use object::*;
pub use pod::*;
pub use quantity::Quantity;
pub use service::*;
pub use servicecidr::*;
