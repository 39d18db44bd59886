//! One trait over the allocators: the operations every one of them answers, whatever it
//! allocates (an IP address of one family, or a node port).
//!
//! Follows Kubernetes v1.37.2: the `Interface` of
//! `pkg/registry/core/service/ipallocator/interfaces.go` and of
//! `pkg/registry/core/service/allocator/interfaces.go`.

use std::net::IpAddr;

use rand_core::RngCore;

use crate::cluster_ip::ClusterIpRange;
use crate::error::AllocError;
#[cfg(feature = "script")]
use crate::multi_cidr::MultiCidrAllocator;
#[cfg(feature = "script")]
use crate::net::IpFamily;
use crate::ports::NodePortAllocator;

/// The operations every allocator answers: take a given value or a random free one, give one
/// back, ask about one, count, list and empty.
///
/// ```
/// use svcnet_allocators::{Allocator, NodePortAllocator, SplitMix64};
///
/// fn fill<A: Allocator>(a: &mut A, rng: &mut SplitMix64) -> u64 {
///     while a.allocate_next(rng).is_ok() {}
///     a.used()
/// }
/// let mut ports = NodePortAllocator::parse("30000-30009")?;
/// assert_eq!(fill(&mut ports, &mut SplitMix64::new(1)), 10);
/// assert_eq!(ports.release_all(), 10);
/// # Ok::<(), svcnet_allocators::AllocError>(())
/// ```
pub trait Allocator {
    /// What is allocated: an IP address or a port number.
    type Item: Copy;

    /// Takes `item`; an error when it is outside the range or taken.
    fn allocate(&mut self, item: Self::Item) -> Result<(), AllocError>;
    /// Takes a free item chosen with `rng`, as Kubernetes chooses it.
    fn allocate_next(&mut self, rng: &mut dyn RngCore) -> Result<Self::Item, AllocError>;
    /// Gives `item` back (releasing a free item is not an error).
    fn release(&mut self, item: Self::Item) -> Result<(), AllocError>;
    /// True when `item` is taken.
    fn has(&self, item: Self::Item) -> bool;
    /// The number of free items.
    fn free(&self) -> u64;
    /// The number of items taken.
    fn used(&self) -> u64;
    /// Gives every item back; returns how many were taken.
    fn release_all(&mut self) -> u64;
    /// The items taken, in order.
    fn items(&self) -> Vec<Self::Item>;
}

impl Allocator for ClusterIpRange {
    type Item = IpAddr;

    fn allocate(&mut self, ip: IpAddr) -> Result<(), AllocError> {
        ClusterIpRange::allocate(self, ip)
    }
    fn allocate_next(&mut self, rng: &mut dyn RngCore) -> Result<IpAddr, AllocError> {
        ClusterIpRange::allocate_next(self, rng)
    }
    fn release(&mut self, ip: IpAddr) -> Result<(), AllocError> {
        ClusterIpRange::release(self, ip);
        Ok(())
    }
    fn has(&self, ip: IpAddr) -> bool {
        ClusterIpRange::has(self, ip)
    }
    fn free(&self) -> u64 {
        ClusterIpRange::free(self) as u64
    }
    fn used(&self) -> u64 {
        ClusterIpRange::used(self) as u64
    }
    fn release_all(&mut self) -> u64 {
        let n = ClusterIpRange::used(self) as u64;
        self.clear();
        n
    }
    fn items(&self) -> Vec<IpAddr> {
        self.iter().collect()
    }
}

impl Allocator for NodePortAllocator {
    type Item = i32;

    fn allocate(&mut self, port: i32) -> Result<(), AllocError> {
        NodePortAllocator::allocate(self, port)
    }
    fn allocate_next(&mut self, rng: &mut dyn RngCore) -> Result<i32, AllocError> {
        NodePortAllocator::allocate_next(self, rng)
    }
    fn release(&mut self, port: i32) -> Result<(), AllocError> {
        NodePortAllocator::release(self, port);
        Ok(())
    }
    fn has(&self, port: i32) -> bool {
        NodePortAllocator::has(self, port)
    }
    fn free(&self) -> u64 {
        NodePortAllocator::free(self) as u64
    }
    fn used(&self) -> u64 {
        NodePortAllocator::used(self) as u64
    }
    fn release_all(&mut self) -> u64 {
        let n = NodePortAllocator::used(self) as u64;
        self.clear();
        n
    }
    fn items(&self) -> Vec<i32> {
        self.iter().collect()
    }
}

/// One family of a [`MultiCidrAllocator`], as the MetaAllocator of that family: addresses
/// taken without an owner. Used by the script runner (feature `script`).
#[cfg(feature = "script")]
#[derive(Debug)]
pub(crate) struct FamilyAllocator<'a> {
    /// The allocator.
    pub allocator: &'a mut MultiCidrAllocator,
    /// The family operated on.
    pub family: IpFamily,
}

#[cfg(feature = "script")]
impl Allocator for FamilyAllocator<'_> {
    type Item = IpAddr;

    fn allocate(&mut self, ip: IpAddr) -> Result<(), AllocError> {
        self.allocator.allocate(self.family, ip, None)
    }
    fn allocate_next(&mut self, rng: &mut dyn RngCore) -> Result<IpAddr, AllocError> {
        self.allocator.allocate_next(self.family, None, rng)
    }
    fn release(&mut self, ip: IpAddr) -> Result<(), AllocError> {
        self.allocator.release(self.family, ip)
    }
    fn has(&self, ip: IpAddr) -> bool {
        self.allocator.has(self.family, ip)
    }
    fn free(&self) -> u64 {
        self.allocator.free(self.family)
    }
    fn used(&self) -> u64 {
        self.allocator.used(self.family)
    }
    fn release_all(&mut self) -> u64 {
        self.allocator.release_all(self.family) as u64
    }
    fn items(&self) -> Vec<IpAddr> {
        self.allocator.iter(self.family).collect()
    }
}
