//! Beyond Kubernetes: an IPv6 ClusterIP range of up to 2^64 addresses whose memory grows with
//! the addresses taken, not with the range.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use std::net::{IpAddr, Ipv6Addr};

use ipnet::{IpNet, Ipv6Net};
use rand_core::RngCore;

use crate::AllocError;
use crate::blocks::SortedBlocks;
use crate::net::cluster_ip_band_offset;
use crate::rng::uniform;

/// An IPv6 range with the legacy bitmap's rules but no 65,536 cap: usable offsets are
/// `0..max` from `network+1`, where `max = 2^hostbits - 1`; prefixes from `/64` to `/128`.
///
/// Taken offsets are kept sorted in blocks of at most 512 (8 to 16 bytes per address taken,
/// whatever the size of the range); lookups are binary searches, and finding the next free
/// offset skips whole runs of taken offsets by binary search too.
/// With the same generator state it hands out exactly what a [`ClusterIpRange`](crate::ClusterIpRange)
/// over the same CIDR would (both draw the same random start and scan the same bands), for
/// every range the bitmap can hold whole (`/112` and longer).
///
/// ```
/// use svcnet_allocators::{SparseIpv6Range, SplitMix64};
///
/// let mut r = SparseIpv6Range::parse("fd00:10:96::/64")?;
/// assert_eq!(r.size(), u64::MAX);
/// let mut rng = SplitMix64::new(1);
/// let ip = r.allocate_next(&mut rng)?;
/// assert!(r.has(ip));
/// assert_eq!(r.used(), 1);
/// # Ok::<(), svcnet_allocators::AllocError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SparseIpv6Range {
    net: Ipv6Net,
    base: u128,
    max: u64,
    offset: u64,
    taken: SortedBlocks,
}

impl SparseIpv6Range {
    /// The shortest prefix accepted.
    pub const MIN_PREFIX: u8 = 64;

    /// A fresh range over `net` (host bits cleared); refused for prefixes shorter than /64.
    pub fn new(net: Ipv6Net) -> Result<Self, AllocError> {
        let net = net.trunc();
        if net.prefix_len() < Self::MIN_PREFIX {
            return Err(AllocError::invalid(
                "cidr",
                net,
                format!(
                    "shortest allowed prefix length for a sparse IPv6 range is {}, got {}",
                    Self::MIN_PREFIX,
                    net.prefix_len()
                ),
            ));
        }
        let hb = 128 - u32::from(net.prefix_len());
        let max = if hb == 64 { u64::MAX } else { (1u64 << hb) - 1 };
        Ok(SparseIpv6Range {
            base: u128::from(net.network()).saturating_add(1),
            max,
            offset: cluster_ip_band_offset(&IpNet::V6(net)).min(max),
            taken: SortedBlocks::default(),
            net,
        })
    }

    /// A fresh range from CIDR text.
    pub fn parse(cidr: &str) -> Result<Self, AllocError> {
        match crate::net::parse_cidr(cidr)? {
            IpNet::V6(n) => Self::new(n),
            IpNet::V4(_) => Err(AllocError::invalid("cidr", cidr, "not an IPv6 CIDR")),
        }
    }

    /// The CIDR.
    pub fn cidr(&self) -> Ipv6Net {
        self.net
    }

    /// Number of usable addresses.
    pub fn size(&self) -> u64 {
        self.max
    }

    /// The KEP-3070 band offset.
    pub fn band_offset(&self) -> u64 {
        self.offset
    }

    /// Addresses taken.
    pub fn used(&self) -> u64 {
        self.taken.len()
    }

    /// Addresses free.
    pub fn free(&self) -> u64 {
        self.max - self.taken.len()
    }

    /// Bytes of heap held by the set of taken addresses (exact: the capacities of its
    /// vectors).
    pub fn heap_bytes(&self) -> usize {
        self.taken.heap_bytes()
    }

    /// The offset of `ip`, when it is a usable address of this range.
    pub fn offset_of(&self, ip: IpAddr) -> Option<u64> {
        let IpAddr::V6(a) = ip else { return None };
        if !self.net.contains(&a) {
            return None;
        }
        let off = u64::try_from(u128::from(a).checked_sub(self.base)?).ok()?;
        (off < self.max).then_some(off)
    }

    fn ip_at(&self, off: u64) -> IpAddr {
        IpAddr::V6(Ipv6Addr::from(self.base + u128::from(off)))
    }

    fn first_free(&self, from: u64, to: u64) -> Option<u64> {
        self.taken.first_absent(from, to)
    }

    fn scan_band<R: RngCore + ?Sized>(&self, rng: &mut R, lo: u64, hi: u64) -> Option<u64> {
        if lo >= hi {
            return None;
        }
        let start = lo + uniform(rng, hi - lo);
        self.first_free(start, hi).or_else(|| self.first_free(lo, start))
    }

    /// Takes `ip`: `not-in-range` outside the usable addresses, `allocated` when taken.
    pub fn allocate(&mut self, ip: IpAddr) -> Result<(), AllocError> {
        let off = self.offset_of(ip).ok_or_else(|| AllocError::IpNotInRange {
            ip,
            range: self.net.to_string(),
        })?;
        if !self.taken.insert(off) {
            return Err(AllocError::IpAllocated { ip });
        }
        Ok(())
    }

    /// Takes a free address, upper band first; `full` when none is left.
    pub fn allocate_next<R: RngCore + ?Sized>(&mut self, rng: &mut R) -> Result<IpAddr, AllocError> {
        if self.taken.len() >= self.max {
            return Err(AllocError::Full);
        }
        let off = self
            .scan_band(rng, self.offset, self.max)
            .or_else(|| self.scan_band(rng, 0, self.offset))
            .ok_or(AllocError::Full)?;
        self.taken.insert(off);
        Ok(self.ip_at(off))
    }

    /// Frees `ip`; addresses outside the range or not taken are ignored.
    pub fn release(&mut self, ip: IpAddr) {
        if let Some(off) = self.offset_of(ip) {
            self.taken.remove(off);
        }
    }

    /// True when `ip` is taken.
    pub fn has(&self, ip: IpAddr) -> bool {
        self.offset_of(ip).is_some_and(|o| self.taken.contains(o))
    }

    /// The taken addresses in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.taken.iter().map(|o| self.ip_at(o))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SplitMix64;

    #[test]
    fn allocate_release_iter() {
        let mut r = SparseIpv6Range::parse("fd00::/120").unwrap();
        assert_eq!(r.size(), 255);
        for s in ["fd00::1", "fd00::3", "fd00::2"] {
            r.allocate(s.parse().unwrap()).unwrap();
        }
        r.release("fd00::2".parse().unwrap());
        assert_eq!(r.used(), 2);
        assert!(r.allocate("fd00::1".parse().unwrap()).is_err());
        assert!(r.allocate("fd00::".parse().unwrap()).is_err());
        r.allocate("fd00::ff".parse().unwrap()).unwrap();
        assert_eq!(
            r.iter().map(|i| i.to_string()).collect::<Vec<_>>(),
            vec!["fd00::1", "fd00::3", "fd00::ff"]
        );
    }

    #[test]
    fn fills_completely() {
        let mut r = SparseIpv6Range::parse("fd00::/122").unwrap();
        let mut rng = SplitMix64::new(2);
        for i in 0..63 {
            let ip = r.allocate_next(&mut rng).unwrap();
            if i < 63 - 16 {
                assert!(r.offset_of(ip).unwrap() >= 16);
            }
        }
        assert_eq!(r.allocate_next(&mut rng), Err(AllocError::Full));
        assert!(r.heap_bytes() >= 63 * 8);
    }

    #[test]
    fn huge_range_and_refusals() {
        let mut r = SparseIpv6Range::parse("fd00::/64").unwrap();
        let top: IpAddr = "fd00::ffff:ffff:ffff:ffff".parse().unwrap();
        r.allocate(top).unwrap();
        assert!(r.allocate("fd00::".parse().unwrap()).is_err());
        assert!(r.allocate("fd00:0:0:1::".parse().unwrap()).is_err());
        assert_eq!(r.free(), u64::MAX - 1);
        assert!(SparseIpv6Range::parse("fd00::/48").is_err());
        assert!(SparseIpv6Range::parse("10.0.0.0/8").is_err());
    }

    #[test]
    fn agrees_with_bitmap_through_a_full_112_and_back() {
        let mut sparse = SparseIpv6Range::parse("fd00:2::/112").unwrap();
        let mut bitmap = crate::ClusterIpRange::parse("fd00:2::/112").unwrap();
        let (mut r1, mut r2) = (SplitMix64::new(9), SplitMix64::new(9));
        loop {
            let (a, b) = (sparse.allocate_next(&mut r1), bitmap.allocate_next(&mut r2));
            assert_eq!(a, b);
            if a.is_err() {
                break;
            }
        }
        assert_eq!(sparse.used(), 65_535);
        for k in (1..65_535u128).step_by(7) {
            let ip = IpAddr::V6(Ipv6Addr::from(0xfd00_0002u128 << 96 | k));
            sparse.release(ip);
            bitmap.release(ip);
        }
        for _ in 0..5000 {
            assert_eq!(sparse.allocate_next(&mut r1), bitmap.allocate_next(&mut r2));
        }
        assert!(sparse.iter().eq(bitmap.iter()));
    }
}
