//! NodePort allocation (`pkg/registry/core/service/portallocator`): the port range, the
//! allocator, and the all-or-nothing operation used while a Service is created or updated.
//!
//! Follows Kubernetes v1.37.2: `pkg/registry/core/service/portallocator/allocator.go` and
//! `operation.go`.

use std::fmt;
use std::str::FromStr;

use rand_core::RngCore;

use crate::net::node_port_band_offset;
use crate::{AllocError, AllocationBitmap, RangeAllocation};

/// An inclusive port range (`k8s.io/apimachinery/pkg/util/net.PortRange`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct PortRange {
    /// The first port.
    pub base: u32,
    /// The number of ports.
    pub size: u32,
}

impl PortRange {
    /// Kubernetes' default NodePort range, `30000-32767`.
    pub const DEFAULT_NODE_PORTS: PortRange = PortRange {
        base: 30000,
        size: 2768,
    };

    /// True when `port` lies in the range.
    pub fn contains(&self, port: i64) -> bool {
        port >= i64::from(self.base) && port < i64::from(self.base) + i64::from(self.size)
    }

    /// The last port (`base + size - 1`); `None` for an empty range, or one (built from the
    /// public fields) whose last port does not fit a `u32`.
    pub fn last(&self) -> Option<u32> {
        self.size.checked_sub(1).and_then(|s| self.base.checked_add(s))
    }
}

impl fmt::Display for PortRange {
    /// Always `first-last` (empty for an empty range), as `PortRange.String()`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.size.checked_sub(1) {
            Some(s) => write!(f, "{}-{}", self.base, u64::from(self.base) + u64::from(s)),
            None => Ok(()),
        }
    }
}

impl FromStr for PortRange {
    type Err = AllocError;

    /// Accepts `N`, `min-max` and `min+offset`, inclusive on both ends (`ParsePortRange`).
    fn from_str(value: &str) -> Result<Self, AllocError> {
        let v = value.trim();
        let bad = |why: &str| AllocError::invalid("port range", value, why);
        if v.is_empty() {
            return Ok(PortRange { base: 0, size: 0 });
        }
        let num = |s: &str| -> Result<u64, AllocError> {
            if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
                return Err(bad("unable to parse port range"));
            }
            s.parse::<u64>().map_err(|_| bad("unable to parse port range"))
        };
        let (low, high) = match (v.find('-'), v.find('+')) {
            (None, None) => {
                let p = num(v)?;
                (p, p)
            }
            (Some(i), None) => (num(&v[..i])?, num(&v[i + 1..])?),
            (None, Some(i)) => {
                let low = num(&v[..i])?;
                (low, low.saturating_add(num(&v[i + 1..])?))
            }
            (Some(_), Some(_)) => return Err(bad("unable to parse port range")),
        };
        if low > 65535 || high > 65535 {
            return Err(bad("the port range cannot be greater than 65535"));
        }
        if high < low {
            return Err(bad("end port cannot be less than start port"));
        }
        Ok(PortRange {
            base: low as u32,
            size: (high - low + 1) as u32,
        })
    }
}

/// The NodePort allocator: a bitmap over a port range with the KEP-3668 band.
///
/// ```
/// use svcnet_allocators::{NodePortAllocator, SplitMix64};
///
/// let mut np = NodePortAllocator::parse("30000-32767")?;
/// assert_eq!(np.band_offset(), 86);
/// let port = np.allocate_next(&mut SplitMix64::new(7))?;
/// assert!(port >= 30086);
/// np.allocate(30000)?;
/// assert_eq!(np.used(), 2);
/// # Ok::<(), svcnet_allocators::AllocError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodePortAllocator {
    range: PortRange,
    bitmap: AllocationBitmap,
}

impl NodePortAllocator {
    /// A fresh allocator over `range`.
    pub fn new(range: PortRange) -> Self {
        let offset = node_port_band_offset(u64::from(range.size)) as usize;
        NodePortAllocator {
            bitmap: AllocationBitmap::with_offset(range.size as usize, range.to_string(), offset),
            range,
        }
    }

    /// A fresh allocator over a range in text form.
    pub fn parse(range: &str) -> Result<Self, AllocError> {
        range.parse().map(Self::new)
    }

    /// An allocator rebuilt from a stored snapshot (`NewFromSnapshot`).
    pub fn from_snapshot(snapshot: &RangeAllocation) -> Result<Self, AllocError> {
        let mut a = Self::parse(&snapshot.range)?;
        a.restore(&snapshot.range, &snapshot.data)?;
        Ok(a)
    }

    /// The port range.
    pub fn range(&self) -> PortRange {
        self.range
    }

    /// The band offset: `allocate_next` prefers `base + offset` and above.
    pub fn band_offset(&self) -> usize {
        self.bitmap.band_offset()
    }

    /// The bitmap underneath.
    pub fn bitmap(&self) -> &AllocationBitmap {
        &self.bitmap
    }

    fn offset_of(&self, port: i64) -> Option<usize> {
        self.range
            .contains(port)
            .then(|| (port - i64::from(self.range.base)) as usize)
    }

    /// Takes `port`: `not-in-range` outside the range, `allocated` when taken.
    pub fn allocate(&mut self, port: i32) -> Result<(), AllocError> {
        let p = i64::from(port);
        let off = self.offset_of(p).ok_or_else(|| AllocError::PortNotInRange {
            port: p,
            range: self.range.to_string(),
        })?;
        self.bitmap
            .allocate(off)
            .map_err(|_| AllocError::PortAllocated { port: p })
    }

    /// Takes a free port, upper band first; `full` when none is left. A range built from
    /// [`PortRange`]'s public fields may reach past `i32::MAX`: a port there is refused
    /// (`invalid`, nothing taken) rather than wrapped to a negative number.
    pub fn allocate_next<R: RngCore + ?Sized>(&mut self, rng: &mut R) -> Result<i32, AllocError> {
        let off = self.bitmap.allocate_next(rng).ok_or(AllocError::Full)?;
        let port = i64::from(self.range.base) + off as i64;
        i32::try_from(port).map_err(|_| {
            self.bitmap.release(off);
            AllocError::invalid("port", port, "a port number must fit a 32-bit integer")
        })
    }

    /// Frees `port`; ports outside the range or not taken are ignored.
    pub fn release(&mut self, port: i32) {
        if let Some(off) = self.offset_of(i64::from(port)) {
            self.bitmap.release(off);
        }
    }

    /// True when `port` is taken.
    pub fn has(&self, port: i32) -> bool {
        self.offset_of(i64::from(port))
            .is_some_and(|o| self.bitmap.has(o))
    }

    /// Free ports.
    pub fn free(&self) -> usize {
        self.bitmap.free()
    }

    /// Taken ports: `size - free`.
    pub fn used(&self) -> usize {
        self.bitmap.max() - self.bitmap.free()
    }

    /// The taken ports in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = i32> + '_ {
        let base = i64::from(self.range.base);
        self.bitmap
            .iter()
            .filter_map(move |o| i32::try_from(base + o as i64).ok())
    }

    /// Frees every port.
    pub fn clear(&mut self) {
        self.bitmap.clear();
    }

    /// The snapshot Kubernetes would store: `first-last` and the bitmap bytes.
    pub fn snapshot(&self) -> RangeAllocation {
        RangeAllocation {
            range: self.range.to_string(),
            data: self.bitmap.snapshot_bytes(),
        }
    }

    /// Loads bitmap bytes taken from an allocator over `range`; refused (unchanged) when the
    /// range differs.
    pub fn restore(&mut self, range: &str, data: &[u8]) -> Result<(), AllocError> {
        let given: PortRange = range.parse()?;
        if given != self.range {
            return Err(AllocError::MismatchedPortRange {
                given: range.to_owned(),
                current: self.range.to_string(),
            });
        }
        self.bitmap.restore(&given.to_string(), data)
    }
}

/// A set of port allocations that stands or falls together (`PortAllocationOperation`).
///
/// Allocations happen at once and are recorded; releases are deferred until
/// [`commit`](Self::commit). Dropping the operation without committing releases everything
/// it allocated ("better to leak than to double-allocate": a deferred release that never
/// happens is a leak that repair reclaims). In dry-run mode the allocator is never touched.
#[derive(Debug)]
pub struct PortOperation<'a> {
    alloc: &'a mut NodePortAllocator,
    allocated: Vec<i32>,
    deferred: Vec<i32>,
    dry_run: bool,
    done: bool,
}

impl<'a> PortOperation<'a> {
    /// Starts an operation on `alloc`.
    pub fn new(alloc: &'a mut NodePortAllocator) -> Self {
        PortOperation {
            alloc,
            allocated: Vec::new(),
            deferred: Vec::new(),
            dry_run: false,
            done: false,
        }
    }

    /// Starts a dry-run operation: nothing is taken or freed.
    pub fn dry_run(alloc: &'a mut NodePortAllocator) -> Self {
        let mut op = Self::new(alloc);
        op.dry_run = true;
        op
    }

    /// Takes `port` now.
    pub fn allocate(&mut self, port: i32) -> Result<(), AllocError> {
        if self.dry_run {
            if !self.alloc.range.contains(i64::from(port)) {
                return Err(AllocError::PortNotInRange {
                    port: i64::from(port),
                    range: self.alloc.range.to_string(),
                });
            }
            if self.alloc.has(port) || self.allocated.contains(&port) {
                return Err(AllocError::PortAllocated {
                    port: i64::from(port),
                });
            }
        } else {
            self.alloc.allocate(port)?;
        }
        self.allocated.push(port);
        Ok(())
    }

    /// Takes a free port now (dry run: invents one past the highest picked so far).
    pub fn allocate_next<R: RngCore + ?Sized>(&mut self, rng: &mut R) -> Result<i32, AllocError> {
        let port = if self.dry_run {
            let mut p = self.allocated.iter().copied().max().unwrap_or(32768);
            loop {
                p = p.checked_add(1).ok_or(AllocError::Full)?;
                if !self.alloc.has(p) && !self.allocated.contains(&p) {
                    break p;
                }
            }
        } else {
            self.alloc.allocate_next(rng)?
        };
        self.allocated.push(port);
        Ok(port)
    }

    /// Frees `port` when the operation commits.
    pub fn release_deferred(&mut self, port: i32) {
        self.deferred.push(port);
    }

    /// The ports allocated so far.
    pub fn allocated(&self) -> &[i32] {
        &self.allocated
    }

    /// Keeps the allocations and performs the deferred releases; returns the ports released.
    pub fn commit(mut self) -> Vec<i32> {
        self.done = true;
        let released = std::mem::take(&mut self.deferred);
        if !self.dry_run {
            for &p in &released {
                self.alloc.release(p);
            }
        }
        released
    }

    /// Gives up: releases everything this operation allocated (also what `drop` does).
    pub fn rollback(mut self) {
        self.undo();
    }

    fn undo(&mut self) {
        if self.done {
            return;
        }
        self.done = true;
        if !self.dry_run {
            for &p in &self.allocated {
                self.alloc.release(p);
            }
        }
    }
}

impl Drop for PortOperation<'_> {
    fn drop(&mut self) {
        self.undo();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SplitMix64;

    #[test]
    fn parse_forms() {
        let pr: PortRange = "30000-32767".parse().unwrap();
        assert_eq!(pr, PortRange::DEFAULT_NODE_PORTS);
        assert_eq!(pr.to_string(), "30000-32767");
        assert_eq!("100+100".parse::<PortRange>().unwrap().to_string(), "100-200");
        assert_eq!("80".parse::<PortRange>().unwrap().size, 1);
        for bad in ["200-100", "x", "1-70000", "-5", "1-2-3", "5+-1", "1-2+3"] {
            assert!(bad.parse::<PortRange>().is_err(), "{bad}");
        }
    }

    #[test]
    fn sizes_and_bounds() {
        let mut a = NodePortAllocator::parse("10000-10200").unwrap();
        assert_eq!(a.free(), 201);
        assert_eq!(a.allocate(1).unwrap_err().kind(), crate::ErrorKind::NotInRange);
        assert_eq!(
            a.allocate(10201).unwrap_err().kind(),
            crate::ErrorKind::NotInRange
        );
        a.allocate(10200).unwrap();
        assert_eq!(a.allocate(10200).unwrap_err().kind(), crate::ErrorKind::Allocated);
        a.release(5);
        assert_eq!(a.used(), 1);
    }

    #[test]
    fn reserved_band() {
        let mut a = NodePortAllocator::parse("30000-30128").unwrap();
        assert_eq!(a.band_offset(), 16);
        let mut r = SplitMix64::new(5);
        for _ in 0..113 {
            assert!(a.allocate_next(&mut r).unwrap() >= 30016);
        }
        assert_eq!(a.free(), 16);
        assert!(a.allocate_next(&mut r).unwrap() < 30016);
    }

    #[test]
    fn operation_rolls_back_unless_committed() {
        let mut a = NodePortAllocator::parse("100-200").unwrap();
        let mut r = SplitMix64::new(1);
        {
            let mut op = PortOperation::new(&mut a);
            op.allocate(150).unwrap();
            op.allocate_next(&mut r).unwrap();
        }
        assert_eq!(a.used(), 0);
        a.allocate(120).unwrap();
        let mut op = PortOperation::new(&mut a);
        op.allocate(150).unwrap();
        op.release_deferred(120);
        assert_eq!(op.commit(), vec![120]);
        assert_eq!(a.iter().collect::<Vec<_>>(), vec![150]);
        let mut dry = PortOperation::dry_run(&mut a);
        assert!(dry.allocate(150).is_err());
        dry.allocate(151).unwrap();
        assert!(dry.allocate(151).is_err());
        drop(dry);
        assert_eq!(a.used(), 1);
    }

    #[test]
    fn snapshot_restore() {
        let mut a = NodePortAllocator::parse("100-200").unwrap();
        a.allocate(111).unwrap();
        let s = a.snapshot();
        assert_eq!(s.data_base64(), "CAA=");
        let mut b = NodePortAllocator::parse("200-300").unwrap();
        assert_eq!(
            b.restore(&s.range, &s.data).unwrap_err().kind(),
            crate::ErrorKind::MismatchedNetwork
        );
        assert_eq!(NodePortAllocator::from_snapshot(&s).unwrap(), a);
    }

    /// Found by the fuzz target `allocators`: a range built from the public fields past
    /// `u32::MAX` overflowed `last()` (a panic with overflow checks), and one past `i32::MAX`
    /// handed out negative ports.
    #[test]
    fn ranges_past_the_integer_limits_are_checked() {
        let top = PortRange {
            base: u32::MAX,
            size: 2,
        };
        assert_eq!(top.last(), None);
        assert_eq!(top.to_string(), "4294967295-4294967296");
        assert!(top.contains(i64::from(u32::MAX)) && !top.contains(-1));
        let mut a = NodePortAllocator::new(PortRange {
            base: i32::MAX as u32,
            size: 2,
        });
        let mut rng = SplitMix64::new(1);
        let mut got = Vec::new();
        for _ in 0..4 {
            let before = a.clone();
            match a.allocate_next(&mut rng) {
                Ok(p) => got.push(p),
                Err(e) => {
                    assert_eq!(e.kind(), crate::ErrorKind::Invalid, "{e}");
                    assert_eq!(a, before);
                }
            }
        }
        assert_eq!(got, [i32::MAX]);
        assert!(a.iter().all(|p| p == i32::MAX));
    }
}
