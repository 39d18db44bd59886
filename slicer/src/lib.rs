//! # svcnet-slicer
//!
//! Pods to endpoints to EndpointSlices, as Kubernetes' EndpointSlice controller computes them,
//! with its minimal-churn reconciler; the mirroring of selector-less Services' `Endpoints` into
//! EndpointSlices; and the legacy `Endpoints` object of a Service.
//!
//! Follows Kubernetes v1.37.2: `pkg/controller/endpointslice/endpointslice_controller.go`,
//! `staging/src/k8s.io/endpointslice/reconciler.go` and `utils.go`,
//! `pkg/controller/endpointslicemirroring/reconciler.go`,
//! `pkg/controller/endpoint/endpoints_controller.go`.
//!
//! ```text
//!  Service + Pods + Nodes ──pod_to_endpoint──▶ endpoints by (address type, port list)
//!                                                 │
//!  existing EndpointSlices ──────────────────────▶ reconcile ──▶ Plan { create, update, delete }
//!                                                 │
//!                          one Pod changed ──▶ ServiceSlices::update_pod ──▶ Plan (one slice)
//!
//!  Service (no selector) + Endpoints + mirrored slices ──mirror──▶ Plan
//!  Service + Pods ──legacy_endpoints──▶ Endpoints (truncated at 1000 addresses)
//! ```
//!
//! The reconciler follows Kubernetes step by step: existing endpoints are kept, updated or
//! removed; slices already being rewritten are topped up first; at most one unchanged slice
//! receives new endpoints, and only when they all fit; new slices take the rest; slices that
//! would be deleted are recycled for slices that would be created; a Service with no endpoints
//! keeps one empty placeholder slice per address type. Where Kubernetes iterates Go maps in
//! random order, svcnet fixes the order, so the same input always gives the same plan.
//!
//! ## Kubernetes v1.37.2, byte for byte
//! Slices come out as kube-controller-manager v1.37.2 writes them, including three details
//! older releases did differently:
//! - endpoint addresses are the Pod IPs in Go's canonical text (`FD00:10:244::A` is written
//!   `fd00:10:244::a`, `010.0.0.1` is written `10.0.0.1`), as `getEndpointAddresses` re-reads them;
//! - a slice's `ports` are in the order the controller's `NewPortMapKey` leaves them: sorted by
//!   the FNV-128a hash of each port's Go dump ([`kubernetes_port_order`]; Service ports
//!   `metrics` 6379→8443 then `db` 443→59355 give `[metrics, db]`). Existing slices the
//!   reconciler rewrites get the same order. The order is computed once per distinct port list;
//! - mirroring keeps `Endpoints` subsets without ports (`RepackSubsets` holds them under a
//!   sentinel port) and writes them into slices whose `ports` is `null`.
//!
//! A [`Plan`] holds its slices as `Arc<EndpointSlice>`, shared with the [`ServiceSlices`] state
//! that made it: a plan copies no endpoints, and once the caller has dropped it, the next
//! one-Pod change rewrites the slice it touches in place (a slice still shared is copied first).
//!
//! ## Non-features
//! This crate never talks to an API server, watches, sleeps or reads a clock: the trigger time
//! and the names of new slices are inputs ([`Options::trigger_time`], a [`NameSource`]).
//! The reconciler alone ([`reconcile`], [`ServiceSlices`]) only removes hints from the slices it
//! writes when the Service does not ask for them. Kubernetes fills hints within the same sync;
//! [`Controller`] does the same: one sync of the EndpointSlice controller, slicing then
//! `svcnet_topology::reconcile_hints` on each address type's creates, updates and unchanged
//! slices, written back into the plan ([`Controller::sync_service`], [`Controller::sync_all`];
//! [`Controller::hint_all`] hints existing slices only). [`mirror_all`] is the mirroring
//! controller's sync of every selector-less Service. `svcnet slice`, `svcnet hints` and
//! `svcnet mirror` call these.
//!
//! ## Example
//! ```
//! use svcnet_model::{Pod, PodIp, PodSpec, PodStatus, Service, ServicePort, ServiceSpec};
//! use svcnet_slicer::{NodeZones, Options, SequentialNames, reconcile};
//!
//! let mut svc = Service::default();
//! svc.metadata.name = Some("web".into());
//! svc.metadata.namespace = Some("shop".into());
//! svc.metadata.uid = Some("uid-1".into());
//! svc.spec = Some(ServiceSpec {
//!     selector: Some([("app".to_string(), "web".to_string())].into()),
//!     ports: Some(vec![ServicePort { port: 80, ..Default::default() }]),
//!     ip_families: Some(vec!["IPv4".into()]),
//!     ..Default::default()
//! });
//! let pods: Vec<Pod> = (1..=3)
//!     .map(|i| {
//!         let mut p = Pod::default();
//!         p.metadata.name = Some(format!("web-{i}"));
//!         p.metadata.namespace = Some("shop".into());
//!         p.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
//!         p.spec = Some(PodSpec { node_name: Some("node-a".into()), ..Default::default() });
//!         p.status = Some(PodStatus {
//!             pod_ips: Some(vec![PodIp { ip: format!("10.0.0.{i}") }]),
//!             ..Default::default()
//!         });
//!         p
//!     })
//!     .collect();
//! let mut nodes = NodeZones::new();
//! nodes.insert("node-a", Some("zone-a"));
//! let plan = reconcile(&svc, &pods, &nodes, [], &Options::default(), &mut SequentialNames::new())?;
//! assert_eq!(plan.create.len(), 1);
//! assert_eq!(plan.create[0].metadata.name.as_deref(), Some("web-1"));
//! assert_eq!(plan.create[0].endpoints().len(), 3);
//! # Ok::<(), svcnet_slicer::SliceError>(())
//! ```

mod controller;
mod endpoint;
mod error;
mod hash;
mod legacy;
mod mirror;
mod names;
mod nodes;
mod plan;
mod ports;
mod reconcile;
mod repack;
mod service;

pub use controller::{
    ClusterSync, Controller, Hinting, MirrorSync, ServiceSync, Skipped, hints_populated, mirror_all,
};
pub use endpoint::{
    EndpointId, Family, PodChange, address_types, pod_change, pod_is_endpoint_candidate, pod_to_endpoint,
};
pub use error::SliceError;
pub use legacy::{ENDPOINTS_MAX_CAPACITY, legacy_endpoints};
pub use mirror::{MirrorEvent, MirrorOptions, MirrorPlan, mirror};
pub use names::{NameSource, SeededNames, SequentialNames, slice_name_prefix};
pub use nodes::NodeZones;
pub use plan::{Plan, SyncError};
pub use ports::{PortKey, kubernetes_port_order, pod_endpoint_ports};
pub use reconcile::{ServiceSlices, reconcile};
pub use service::Options;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
