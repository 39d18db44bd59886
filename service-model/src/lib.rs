//! # svcnet-model
//!
//! The Kubernetes objects of Service networking as Rust values: core/v1 `Service`, `Endpoints`,
//! `Pod` and `Node`, discovery/v1 `EndpointSlice`, networking/v1 `ServiceCIDR`, `IPAddress` and
//! `NetworkPolicy`, with serde names and omission rules that round-trip `kubectl get -o json`
//! and `-o yaml` output, the API server's defaulting, and its validation with Kubernetes field
//! paths, error types and messages; and what NetworkPolicies let through, pod by pod.
//!
//! ```text
//!  YAML / JSON ──serde──▶ Service, EndpointSlice, ... ──defaults──▶ ──validate──▶ ErrorList
//!                               │
//!                               ├──▶ NetworkPolicy + Pod + Namespace ──reachability──▶ PodReachability, Verdict
//!                               │
//!                               └──▶ allocators, slicer, topology, rules (other svcnet crates)
//! ```
//!
//! ## Modules
//! - The crate root: the wire types ([`Service`], [`EndpointSlice`], [`Pod`], [`NetworkPolicy`],
//!   ...), the mixed bag [`Object`] / [`ObjectSet`], and [`ModelError`] for typed accessors
//!   such as [`Service::cluster_ip_addrs`].
//! - [`defaults`]: the API server's defaulting (`default_service`, `default_object`, the
//!   `clusterIP`/`clusterIPs` normalisation).
//! - [`validation`]: create, update and status-update validation of Service, EndpointSlice,
//!   ServiceCIDR, IPAddress and NetworkPolicy; [`validation::names`] holds the name and
//!   address syntaxes.
//! - [`rng`]: [`rng::SplitMix64`], the seeded generator every svcnet crate that draws at random
//!   (allocators, slice names) is fed in examples, tests and the CLI.
//! - `k8s` (feature `k8s-openapi`): `From`/`TryFrom` conversions to and from the k8s-openapi
//!   types kube-rs uses, so a controller hands its objects to svcnet without JSON in between.
//! - [`field`]: field paths and errors, printed as Kubernetes prints them.
//! - [`hash`]: the hashers of svcnet's maps: [`hash::FastHasher`] for keys a crate computes,
//!   [`hash::KeyedState`] (a caller-given key, a fixed one by default) for keys read from input.
//! - [`reachability`]: NetworkPolicy semantics as data — who may reach a pod and whom it may
//!   reach, on which ports ([`reachability::pod_reachability`]), and the verdict on one
//!   connection ([`reachability::check`]).
//!
//! ## Non-features
//! This crate never reads files, talks to an API server or prints: it takes values and returns
//! values. Enum-like fields (`type`, `protocol`, ...) stay strings on the wire types, so that
//! validation can report any value a user wrote; typed accessors parse addresses at the edge and
//! name the field when they fail. Reachability describes what a policy-enforcing CNI plugin
//! would allow; it programs no filter and does not model host networking or Service DNAT.
//! Pods, Nodes and Endpoints are read, not validated.
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
//!
//! Reachability takes the same values; a pod that no policy selects is open both ways:
//! ```
//! use svcnet_model::Pod;
//! use svcnet_model::reachability::{self, Cluster, Peer, Protocol};
//!
//! let mut web = Pod::default();
//! web.metadata.name = Some("web".into());
//! let cluster = Cluster { policies: &[], namespaces: &[], pods: std::slice::from_ref(&web) };
//! let from = Peer::Address("192.0.2.1".parse().unwrap());
//! let verdict = reachability::check(&cluster, &from, &Peer::Pod(&web), Protocol::Tcp, 443);
//! assert!(verdict.allowed && !verdict.ingress.isolated);
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
pub mod hash;
#[cfg(feature = "k8s-openapi")]
pub mod k8s;
pub mod net;
pub mod reachability;
pub mod rng;
pub mod validation;

/// Small-string type of the endpoint fields (inline up to 24 bytes), re-exported for callers.
pub use compact_str::CompactString;
pub use endpoints::{
    CoreEndpointPort, ENDPOINTS_OVER_CAPACITY_ANNOTATION, EndpointAddress, EndpointSubset, Endpoints,
};
pub use endpointslice::{
    Endpoint, EndpointConditions, EndpointHints, EndpointPort, EndpointSlice, ForNode, ForZone, address_type,
    labels,
};
pub use error::ModelError;
pub use intstr::IntOrString;
pub use labelselector::{LabelSelector, LabelSelectorRequirement};
pub use meta::{Condition, ObjectMeta, ObjectReference, OwnerReference, StringMap};
pub use net::{IpFamily, Protocol};
pub use networkpolicy::{
    IpBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicyPeer,
    NetworkPolicyPort, NetworkPolicySpec, policy_type,
};
pub use node::{
    LABEL_CONTROL_PLANE, LABEL_HOSTNAME, LABEL_MASTER, LABEL_TOPOLOGY_REGION, LABEL_TOPOLOGY_ZONE, Node,
    NodeAddress, NodeSpec, NodeStatus, Taint,
};
pub use object::{KNOWN_KINDS, Object, ObjectSet};
pub use pod::{
    Container, ContainerPort, EnvVar, Pod, PodCondition, PodIp, PodSpec, PodSpecRef, PodStatus,
    ResourceRequirements, pod_phase,
};
pub use quantity::Quantity;
pub use service::{
    CLUSTER_IP_NONE, ClientIpConfig, LoadBalancerIngress, LoadBalancerStatus, PortStatus, Service,
    ServicePort, ServiceSpec, ServiceStatus, SessionAffinityConfig, ip_family, ip_family_policy, protocol,
    service_type, session_affinity, traffic_distribution, traffic_policy,
};
pub use servicecidr::{
    DEFAULT_SERVICE_CIDR_NAME, IpAddress, IpAddressSpec, ParentReference, SERVICE_CIDR_CONDITION_READY,
    SERVICE_CIDR_FINALIZER, ServiceCidr, ServiceCidrSpec, ServiceCidrStatus,
};
/// Small-vector type of [`Endpoint::addresses`] (one address inline) and its `smallvec!`
/// constructor macro, re-exported for callers.
pub use smallvec::{SmallVec, smallvec};

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
