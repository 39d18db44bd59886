//! ClusterIP and NodePort allocation as Kubernetes runs it: the allocation bitmap, the legacy
//! ClusterIP range, the multi-CIDR (ServiceCIDR / IPAddress) allocator, NodePorts, snapshots
//! and the repair loops, as pure values.
//!
//! Follows Kubernetes v1.37.2: `pkg/registry/core/service/allocator/bitmap.go`,
//! `pkg/registry/core/service/ipallocator/bitmap.go` and `cidrallocator.go`,
//! `pkg/registry/core/service/portallocator/allocator.go`, the `controller/repair.go` of both,
//! and `pkg/registry/core/service/storage/alloc.go`.
//!
//! # Overview
//!
//! ```text
//!   ServiceCIDRs ─┐                      ┌─> IPAddress records
//!   --service-    ├─> ClusterIP allocator ┤
//!   cluster-ip-   │   (bitmap | multi-CIDR)└─> RangeAllocation snapshot
//!   range ────────┘          ▲
//!                            │ allocate_cluster_ips / allocate_node_ports (all or nothing)
//!   Service ─────────────────┘
//!   Services + stored state ─> ClusterIpRepair / NodePortRepair ─> rebuilt state + findings
//! ```
//!
//! - [`AllocationBitmap`]: items `0..max` with Kubernetes' scan strategies, including the
//!   KEP-3070/3668 band strategy (dynamic allocations prefer the upper band).
//! - [`ClusterIpRange`] / [`ClusterIpRanges`]: the legacy bitmap allocator per family, with
//!   Kubernetes' size rules (network and IPv4 broadcast reserved, IPv6 capped at 65,536 slots)
//!   and [`RangeAllocation`] snapshots byte-identical to what the API server stores.
//! - [`NodePortAllocator`] and [`PortOperation`]: node ports and the all-or-nothing transaction.
//! - [`MultiCidrAllocator`]: ServiceCIDRs, readiness, overlaps, IPAddress records, and the
//!   ServiceCIDR deletion guard.
//! - [`allocate_cluster_ips`] / [`allocate_node_ports`], [`update_cluster_ips`] /
//!   [`update_node_ports`]: what Service creation and update take, per `ipFamilyPolicy`, all
//!   or nothing.
//! - [`ClusterIpRepair`] / [`NodePortRepair`]: the repair loops, with leak grace counting.
//! - [`SparseIpv6Range`]: beyond Kubernetes, an IPv6 range up to a /64 whose memory grows with
//!   what is taken.
//!
//! Every refused operation returns an [`AllocError`] and leaves the allocator as it was.
//! Randomness comes in as an argument ([`rand_core::RngCore`]); [`SplitMix64`] is a small seeded
//! generator, so the same seed gives the same allocations.
//!
//! # Non-features
//!
//! - Never talks to an API server or etcd: state goes in and out as values (snapshots,
//!   IPAddress records); compare-and-swap and informers are the caller's business.
//! - No clock, no global RNG, no threads, no locks: callers serialise access.
//! - Values drawn at random are not bit-identical to Go's `math/rand`; only the properties
//!   (range, bands, no double allocation) are.
//!
//! # Example
//!
//! ```
//! use svcnet_allocators::{ClusterIpRange, RangeAllocation, SplitMix64};
//!
//! let mut rng = SplitMix64::new(42);
//! let mut range = ClusterIpRange::parse("10.96.0.0/24")?;
//! let ip = range.allocate_next(&mut rng)?;
//! assert!(range.has(ip));
//! range.allocate("10.96.0.10".parse().unwrap())?;
//!
//! // What the API server would store, and back.
//! let snap: RangeAllocation = range.snapshot();
//! let restored = ClusterIpRange::from_snapshot(&snap)?;
//! assert_eq!(restored, range);
//! assert_eq!(restored.used(), 2);
//! # Ok::<(), svcnet_allocators::AllocError>(())
//! ```

mod allocator;
mod bitmap;
mod blocks;
mod cluster_ip;
mod error;
mod multi_cidr;
mod net;
mod ports;
mod repair;
mod rng;
#[cfg(feature = "script")]
pub mod script;
mod service;
mod snapshot;
mod sparse;

pub use allocator::Allocator;
pub use bitmap::{AllocationBitmap, ScanStrategy};
pub use cluster_ip::{
    ClusterIpRange, ClusterIpRanges, IPV6_BITMAP_CAP, LEGACY_MAX_HOST_BITS, validate_legacy_range,
};
pub use error::{AllocError, ErrorKind};
pub use multi_cidr::{
    DELETION_GRACE_SECONDS, DeletionDecision, IP_ADDRESS_GRACE_SECONDS, IP_ALLOCATOR_CONTROLLER,
    IpAddressRecord, LABEL_IP_FAMILY, LABEL_MANAGED_BY, MultiCidrAllocator, ServiceRef, TERMINATING_MESSAGE,
};
pub use net::{IpFamily, prefix_contains_ip};
pub use ports::{NodePortAllocator, PortOperation, PortRange};
pub use repair::{
    ClusterIpRepair, NodePortRepair, REPAIRS_BEFORE_LEAK_CLEANUP, RepairError, RepairEvent, RepairFinding,
    RepairReport,
};
pub use rng::SplitMix64;
pub use service::{
    ClusterIpAllocator, ServiceAllocError, allocate_cluster_ips, allocate_node_ports, needs_health_check,
    release_cluster_ips, release_node_ports, update_cluster_ips, update_node_ports,
};
pub use snapshot::RangeAllocation;
pub use sparse::SparseIpv6Range;

pub use rand_core;

/// The README's examples, compiled and run as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
