//! # svcnet-topology
//!
//! Topology hints and per-node endpoint selection as Kubernetes computes them.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/endpointslice/topologycache/topologycache.go`
//! and `utils.go`, `staging/src/k8s.io/endpointslice/trafficdist/trafficdist.go` (controller
//! side), `pkg/proxy/endpointslicecache.go` and `pkg/proxy/topology.go` (proxy side).
//!
//! Two halves, one on each side of the EndpointSlice:
//!
//! ```text
//!  Nodes ──▶ ZoneCapacity ─┐
//!  Service ─────────────────┼─▶ reconcile_hints ──▶ slices with hints + events + reasons
//!  EndpointSlices ──────────┘         (controller side: topology-mode Auto, trafficDistribution)
//!
//!  EndpointSlices ──▶ SliceIndex (once) ─┐
//!  Services ──▶ PortPolicy ───────────────┼─▶ NodeView (per node) ──▶ categorize ──▶ Selection
//!  Node ──▶ NodeTopology ─────────────────┘     (proxy side: cluster, local, all reachable, has any)
//! ```
//!
//! - **Controller side** ([`reconcile_hints`]): for a Service annotated
//!   `service.kubernetes.io/topology-mode: Auto`, counts ready worker Nodes' allocatable CPU
//!   per zone ([`ZoneCapacity`]), allocates ready endpoints to zones in proportion (each
//!   zone gets at least its share divided by 1.2, so no endpoint carries more than 20% extra
//!   load), keeps the hints of existing slices that still fit, hints new ones to their own
//!   zone and moves the surplus of crowded zones to short ones. When that cannot work, every
//!   hint is removed — and the result says why ([`RemovalReason`]), which Node, endpoint or
//!   count caused it, and which event Kubernetes records. With `spec.trafficDistribution`
//!   (`PreferClose`, `PreferSameZone`, `PreferSameNode`) each ready endpoint is hinted to its
//!   own zone (and node). The annotation wins when both are set.
//! - **Proxy side** ([`SliceIndex`], [`NodeView`], [`categorize`]): what kube-proxy on one
//!   node uses for each
//!   service port: cluster endpoints (narrowed by node or zone hints only when every ready
//!   endpoint carries one and one matches), local endpoints under a `Local` traffic policy,
//!   the fall back to serving-and-terminating endpoints, everything reachable, and whether the
//!   service port has endpoints anywhere. The rule compiler builds on [`Selection`].
//!
//! ## Non-features
//! No I/O: this crate never talks to an API server, never records events, never programs a
//! data plane. It takes objects and returns values. It keeps no memory between calls: the
//! controller's one bit of memory (whether it populated a Service's hints) is an argument and
//! a result. Where Kubernetes iterates a Go map (choosing which short zone an endpoint moves
//! to), this crate takes zones in name order, so the same input always gives the same output.
//!
//! ## Kubernetes' hints, and strict mode
//! By default hints are exactly Kubernetes' (`HintsOptions::default()`), and Kubernetes keeps
//! hints that break two properties one would expect: *every zone with ready worker Nodes gets
//! a hinted endpoint*, and *every such zone gets between its minimum and its maximum*
//! ([`ZoneAllocation`]). Three cases, each with the smallest input we use to show it:
//!
//! | Kubernetes case | CPU per zone | ready endpoints | hinted |
//! |---|---|---|---|
//! | moving stops once no zone has half an endpoint to spare | a 45.5%, b 45.5%, c 9% | a 5, b 5 | a 5, b 5, **c 0** |
//! | targets raised to minimums exceed the endpoints | a 20%, b 20%, c 60% | b 1, c 7 | a 2, **b 1** (min 2), **c 5** (max 4) |
//! | endpoints in a zone without ready worker Nodes stay hinted there | a 50%, b 50% | a 1, b 1, x 2 | **a 1, b 1** (min 2), x 2 |
//!
//! The [`AutoReport`] of such a result names the short zones (`overloaded_zones`) and the
//! hints to zones without CPU (`zones_without_capacity`), so a caller can see why hints were
//! kept anyway: Kubernetes does not re-check after assigning. `HintsOptions { strict: true, .. }`
//! keeps both properties (or removes every hint); [`HintsOptions::strict`] walks through each
//! case.
//!
//! ## Example
//! ```
//! use svcnet_model::{EndpointSlice, Service};
//! use svcnet_topology::*;
//!
//! let svc: Service = serde_json::from_str(r#"{"metadata":{"name":"web","namespace":"shop",
//!     "annotations":{"service.kubernetes.io/topology-mode":"Auto"}},
//!     "spec":{"clusterIP":"10.96.0.10","ports":[{"port":80}]}}"#).unwrap();
//! let slice: EndpointSlice = serde_json::from_str(r#"{
//!     "metadata":{"name":"web-1","namespace":"shop","labels":{"kubernetes.io/service-name":"web"}},
//!     "addressType":"IPv4","ports":[{"name":"","port":8080,"protocol":"TCP"}],"endpoints":[
//!       {"addresses":["10.0.0.1"],"conditions":{"ready":true},"zone":"a","nodeName":"n1"},
//!       {"addresses":["10.0.0.2"],"conditions":{"ready":true},"zone":"a","nodeName":"n1"},
//!       {"addresses":["10.0.0.3"],"conditions":{"ready":true},"zone":"a","nodeName":"n1"},
//!       {"addresses":["10.0.0.4"],"conditions":{"ready":true},"zone":"b","nodeName":"n2"}]}"#).unwrap();
//!
//! // Controller: two zones with equal CPU; zone a gives one endpoint to zone b.
//! let cap = ZoneCapacity::from_zone_cpu([("a", 4000), ("b", 4000)]);
//! let out = reconcile_hints(&svc, "IPv4", SliceSet::existing(vec![slice]), &cap, false,
//!     &HintsOptions::default());
//! let Decision::Hinted(report) = &out.decision else { panic!("{:?}", out.decision) };
//! assert_eq!(report.moved[0].to, "b");
//!
//! // Proxy on node n2 in zone b: the endpoints hinted to b, not zone a's other two.
//! let services = [svc];
//! let slices: Vec<EndpointSlice> = out.slices.iter().cloned().collect();
//! let view = NodeView::build(&services, &slices, NodeTopology::new("n2", "b"),
//!     SelectOptions::default());
//! let (port, sel) = view.selections().next().unwrap();
//! assert_eq!(port.name.to_string(), "shop/web");
//! let cluster: Vec<String> = sel.cluster.unwrap().iter().map(|e| e.to_string()).collect();
//! assert_eq!(cluster, ["10.0.0.1:8080", "10.0.0.4:8080"]);
//! ```

mod allocation;
mod auto;
mod capacity;
mod digest;
mod endpoint;
mod error;
mod event;
mod hints;
mod index;
mod mechanism;
mod proxy;
mod report;
mod select;
mod slice_set;
mod state;
#[cfg(test)]
mod test_support;

pub use allocation::{OVERLOAD_THRESHOLD, ZoneAllocation, service_overloaded, short_zones};
pub use capacity::{Insufficiency, NodeAccount, NodeDecision, ZoneCapacity};
pub use digest::slice_digest;
pub use endpoint::{Ignored, IpFamily, PlainEndpoint, ProxyEndpoint, SelectOptions, ServicePortName};
pub use error::TopologyError;
pub use event::{Event, EventType, REASON_DISABLED, REASON_ENABLED, message};
pub use hints::{HintsOptions, HintsOutcome, reconcile_hints};
pub use index::{LocalNode, ServiceRun, ServiceSlices, SliceIndex};
pub use mechanism::{
    ANNOTATION_TOPOLOGY_AWARE_HINTS, ANNOTATION_TOPOLOGY_MODE, AnnotationSeen, Mechanism, MechanismChoice,
    TrafficDistribution, TrafficDistributionSeen, choose_mechanism,
};
pub use proxy::{EndpointTable, NodeTopology, PortPolicy};
pub use report::{AutoReport, Decision, HintMove, RemovalReason, SliceNote, SliceReason, ZoneReport};
pub use select::{Categories, NodeView, PortEndpoints, Selection, TopologyMode, categorize, proxied_ports};
pub use slice_set::SliceSet;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
