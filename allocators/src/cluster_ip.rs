//! The legacy ClusterIP allocator: one bitmap over one CIDR
//! (`pkg/registry/core/service/ipallocator/bitmap.go`, type `Range`), and a pair of them for a
//! dual-stack cluster.
//!
//! Follows Kubernetes v1.37.2: `pkg/registry/core/service/ipallocator/bitmap.go`.

use std::net::IpAddr;

use ipnet::IpNet;
use rand_core::RngCore;

use crate::net::{cluster_ip_band_offset, from_u128, host_bits, parse_cidr, range_size, to_u128};
use crate::{AllocError, AllocationBitmap, IpFamily, RangeAllocation};

/// The most items an IPv6 bitmap range holds (Kubernetes caps IPv6 bitmaps at 65,536 slots).
pub const IPV6_BITMAP_CAP: u64 = 65_536;

/// A ClusterIP range backed by a bitmap, as `kube-apiserver` runs it without the
/// MultiCIDRServiceAllocator feature.
///
/// Usable addresses are `network+1 .. network+1+max`: the network address is never handed out,
/// nor the IPv4 broadcast address, and IPv6 ranges are capped at 65,535 usable addresses.
///
/// ```
/// use svcnet_allocators::{ClusterIpRange, SplitMix64};
///
/// let mut r = ClusterIpRange::parse("192.168.1.0/24")?;
/// assert_eq!(r.free(), 254);
/// let ip = r.allocate_next(&mut SplitMix64::new(1))?;
/// assert!(r.has(ip));
/// assert_eq!(r.snapshot().range, "192.168.1.0/24");
/// # Ok::<(), svcnet_allocators::AllocError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterIpRange {
    cidr: IpNet,
    base: u128,
    bitmap: AllocationBitmap,
}

/// Number of usable items of a legacy range (`Range` size rules).
pub(crate) fn legacy_max(cidr: &IpNet) -> u64 {
    let size = range_size(cidr);
    let max = match cidr {
        IpNet::V6(_) => size.min(IPV6_BITMAP_CAP),
        IpNet::V4(_) => size.saturating_sub(1),
    };
    max.saturating_sub(1)
}

impl ClusterIpRange {
    /// A fresh, empty range over `cidr` (host bits are cleared).
    pub fn new(cidr: IpNet) -> Self {
        let cidr = cidr.trunc();
        let max = usize::try_from(legacy_max(&cidr)).unwrap_or(usize::MAX);
        let offset = usize::try_from(cluster_ip_band_offset(&cidr)).unwrap_or(0);
        ClusterIpRange {
            base: to_u128(cidr.network()).saturating_add(1),
            bitmap: AllocationBitmap::with_offset(max, cidr.to_string(), offset),
            cidr,
        }
    }

    /// A fresh range from CIDR text.
    pub fn parse(cidr: &str) -> Result<Self, AllocError> {
        parse_cidr(cidr).map(Self::new)
    }

    /// A range rebuilt from a stored snapshot (`NewFromSnapshot`).
    pub fn from_snapshot(snapshot: &RangeAllocation) -> Result<Self, AllocError> {
        let mut r = Self::parse(&snapshot.range)?;
        r.restore(&snapshot.range, &snapshot.data)?;
        Ok(r)
    }

    /// The CIDR.
    pub fn cidr(&self) -> IpNet {
        self.cidr
    }

    /// The IP family.
    pub fn family(&self) -> IpFamily {
        IpFamily::of_net(&self.cidr)
    }

    /// Number of usable addresses.
    pub fn size(&self) -> usize {
        self.bitmap.max()
    }

    /// The KEP-3070 band offset: `allocate_next` prefers offsets at or above it.
    pub fn band_offset(&self) -> usize {
        self.bitmap.band_offset()
    }

    /// The bitmap underneath.
    pub fn bitmap(&self) -> &AllocationBitmap {
        &self.bitmap
    }

    /// The item offset of `ip`, when `ip` is a usable address of this range.
    pub fn offset_of(&self, ip: IpAddr) -> Option<usize> {
        if !self.cidr.contains(&ip) {
            return None;
        }
        let off = to_u128(ip).checked_sub(self.base)?;
        let off = usize::try_from(off).ok()?;
        (off < self.bitmap.max()).then_some(off)
    }

    /// The address at item `offset`.
    pub fn ip_at(&self, offset: usize) -> Option<IpAddr> {
        let v = self.base.checked_add(offset as u128)?;
        if self.family() == IpFamily::V4 && v > u128::from(u32::MAX) {
            return None;
        }
        Some(from_u128(self.family(), v))
    }

    /// True when `ip` is a usable address of this range.
    pub fn contains(&self, ip: IpAddr) -> bool {
        self.offset_of(ip).is_some()
    }

    fn not_in_range(&self, ip: IpAddr) -> AllocError {
        AllocError::IpNotInRange {
            ip,
            range: self.cidr.to_string(),
        }
    }

    /// Takes `ip`: `not-in-range` outside the usable addresses, `allocated` when taken.
    pub fn allocate(&mut self, ip: IpAddr) -> Result<(), AllocError> {
        let off = self.offset_of(ip).ok_or_else(|| self.not_in_range(ip))?;
        self.bitmap
            .allocate(off)
            .map_err(|_| AllocError::IpAllocated { ip })
    }

    /// What `allocate` would say, without taking anything (the dry-run view).
    pub fn check_allocate(&self, ip: IpAddr) -> Result<(), AllocError> {
        match self.offset_of(ip) {
            None => Err(self.not_in_range(ip)),
            Some(off) if self.bitmap.has(off) => Err(AllocError::IpAllocated { ip }),
            Some(_) => Ok(()),
        }
    }

    /// Takes a free address, upper band first; `full` when none is left.
    pub fn allocate_next<R: RngCore + ?Sized>(&mut self, rng: &mut R) -> Result<IpAddr, AllocError> {
        let off = self.bitmap.allocate_next(rng).ok_or(AllocError::Full)?;
        match self.ip_at(off) {
            Some(ip) => Ok(ip),
            None => {
                self.bitmap.release(off);
                Err(AllocError::Full)
            }
        }
    }

    /// Frees `ip`; addresses outside the range or not taken are ignored.
    pub fn release(&mut self, ip: IpAddr) {
        if let Some(off) = self.offset_of(ip) {
            self.bitmap.release(off);
        }
    }

    /// True when `ip` is taken.
    pub fn has(&self, ip: IpAddr) -> bool {
        self.offset_of(ip).is_some_and(|o| self.bitmap.has(o))
    }

    /// Free addresses.
    pub fn free(&self) -> usize {
        self.bitmap.free()
    }

    /// Taken addresses: `size - free`.
    pub fn used(&self) -> usize {
        self.bitmap.max() - self.bitmap.free()
    }

    /// The taken addresses in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = IpAddr> + '_ {
        self.bitmap.iter().filter_map(|o| self.ip_at(o))
    }

    /// Frees every address.
    pub fn clear(&mut self) {
        self.bitmap.clear();
    }

    /// The snapshot Kubernetes would store: the canonical CIDR and the bitmap bytes.
    pub fn snapshot(&self) -> RangeAllocation {
        RangeAllocation {
            range: self.cidr.to_string(),
            data: self.bitmap.snapshot_bytes(),
        }
    }

    /// Loads bitmap bytes taken from a range over `range` (CIDR text); `mismatched-network`
    /// when it is another network or mask. The allocator is unchanged on error.
    pub fn restore(&mut self, range: &str, data: &[u8]) -> Result<(), AllocError> {
        let net = parse_cidr(range)?;
        if net != self.cidr {
            return Err(AllocError::MismatchedNetwork {
                given: range.to_owned(),
                current: self.cidr.to_string(),
            });
        }
        self.bitmap.restore(&net.to_string(), data)
    }
}

/// The legacy allocators of a cluster: one [`ClusterIpRange`] per configured family, the
/// primary (default) family first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterIpRanges {
    ranges: Vec<ClusterIpRange>,
}

impl ClusterIpRanges {
    /// One range (single-stack cluster).
    pub fn single(range: ClusterIpRange) -> Self {
        ClusterIpRanges { ranges: vec![range] }
    }

    /// A dual-stack pair; refused when both ranges are of the same family.
    pub fn dual(primary: ClusterIpRange, secondary: ClusterIpRange) -> Result<Self, AllocError> {
        if primary.family() == secondary.family() {
            return Err(AllocError::invalid(
                "service cluster IP ranges",
                format!("{},{}", primary.cidr(), secondary.cidr()),
                "dual-stack ranges must be of different IP families",
            ));
        }
        Ok(ClusterIpRanges {
            ranges: vec![primary, secondary],
        })
    }

    /// From one or two CIDR strings, as `--service-cluster-ip-range` takes them.
    pub fn parse(cidrs: &[&str]) -> Result<Self, AllocError> {
        match cidrs {
            [one] => Ok(Self::single(ClusterIpRange::parse(one)?)),
            [a, b] => Self::dual(ClusterIpRange::parse(a)?, ClusterIpRange::parse(b)?),
            _ => Err(AllocError::invalid(
                "service cluster IP ranges",
                cidrs.join(","),
                "give one CIDR, or two of different families",
            )),
        }
    }

    /// The configured families, primary first.
    pub fn families(&self) -> Vec<IpFamily> {
        self.ranges.iter().map(ClusterIpRange::family).collect()
    }

    /// The ranges, primary first.
    pub fn ranges(&self) -> &[ClusterIpRange] {
        &self.ranges
    }

    /// The range of `family`.
    pub fn get(&self, family: IpFamily) -> Option<&ClusterIpRange> {
        self.ranges.iter().find(|r| r.family() == family)
    }

    /// The range of `family`, mutably.
    pub fn get_mut(&mut self, family: IpFamily) -> Option<&mut ClusterIpRange> {
        self.ranges.iter_mut().find(|r| r.family() == family)
    }

    fn no_family(ip: IpAddr) -> AllocError {
        AllocError::IpNotInRange {
            ip,
            range: format!("(no {} range configured)", IpFamily::of(ip)),
        }
    }

    /// Takes `ip` in the range of its family.
    pub fn allocate(&mut self, ip: IpAddr) -> Result<(), AllocError> {
        self.get_mut(IpFamily::of(ip))
            .ok_or_else(|| Self::no_family(ip))?
            .allocate(ip)
    }

    /// Takes a free address of `family`.
    pub fn allocate_next<R: RngCore + ?Sized>(
        &mut self,
        family: IpFamily,
        rng: &mut R,
    ) -> Result<IpAddr, AllocError> {
        self.get_mut(family)
            .ok_or_else(|| AllocError::invalid("ip family", family, "no range of this family is configured"))?
            .allocate_next(rng)
    }

    /// Frees `ip`; a no-op outside every range.
    pub fn release(&mut self, ip: IpAddr) {
        if let Some(r) = self.get_mut(IpFamily::of(ip)) {
            r.release(ip);
        }
    }

    /// True when `ip` is taken.
    pub fn has(&self, ip: IpAddr) -> bool {
        self.get(IpFamily::of(ip)).is_some_and(|r| r.has(ip))
    }
}

/// Host bits above which the legacy bitmap is refused by `kube-apiserver`'s flag validation
/// (`validateMaxCIDRRange`): 20.
pub const LEGACY_MAX_HOST_BITS: u32 = 20;

/// `kube-apiserver`'s check of `--service-cluster-ip-range` in bitmap mode: at most 20 host
/// bits (IPv4 `/12`, IPv6 `/108`).
pub fn validate_legacy_range(cidr: &IpNet) -> Result<(), AllocError> {
    let hb = host_bits(cidr);
    if hb > LEGACY_MAX_HOST_BITS {
        let bits = hb + u32::from(cidr.prefix_len());
        return Err(AllocError::invalid(
            "service-cluster-ip-range",
            cidr,
            format!(
                "specified service-cluster-ip-range is too large; for {bits}-bit addresses, the mask must be >= {}",
                bits - LEGACY_MAX_HOST_BITS
            ),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SplitMix64;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn sizes() {
        for (cidr, free) in [
            ("192.168.1.0/24", 254),
            ("192.168.1.0/25", 126),
            ("192.168.1.240/30", 2),
            ("192.168.1.0/31", 0),
            ("192.168.1.0/32", 0),
            ("10.0.0.0/15", 131_070),
            ("0.0.0.0/1", 0),
            ("2001:db8:1::/48", 65_535),
            ("2001:db8::/112", 65_535),
            ("2001:db8::/108", 65_535),
            ("2001:db8::/120", 255),
            ("2001:db8::/127", 1),
            ("2001:db8::/128", 0),
        ] {
            assert_eq!(ClusterIpRange::parse(cidr).unwrap().free(), free, "{cidr}");
        }
    }

    #[test]
    fn small_range_hands_out_both() {
        let mut r = ClusterIpRange::parse("192.168.1.240/30").unwrap();
        let mut rng = SplitMix64::new(1);
        let mut got = vec![
            r.allocate_next(&mut rng).unwrap(),
            r.allocate_next(&mut rng).unwrap(),
        ];
        got.sort();
        assert_eq!(got, vec![ip("192.168.1.241"), ip("192.168.1.242")]);
        assert_eq!(r.allocate_next(&mut rng), Err(AllocError::Full));
    }

    #[test]
    fn not_in_range_cases() {
        let mut r = ClusterIpRange::parse("2001:db8:1::/48").unwrap();
        for bad in ["2001:db8:1::", "2001:db8:1::1:0", "2001:db8::1", "10.0.0.1"] {
            assert_eq!(
                r.allocate(ip(bad)).unwrap_err().kind(),
                crate::ErrorKind::NotInRange
            );
        }
        r.allocate(ip("2001:db8:1::ffff")).unwrap();
        let mut v4 = ClusterIpRange::parse("192.168.1.0/24").unwrap();
        assert!(v4.allocate(ip("192.168.1.255")).is_err());
        assert!(v4.allocate(ip("192.168.1.0")).is_err());
        v4.release(ip("10.0.0.1"));
    }

    #[test]
    fn restore_checks_network() {
        let mut r = ClusterIpRange::parse("192.168.1.0/24").unwrap();
        r.allocate(ip("192.168.1.10")).unwrap();
        let snap = r.snapshot();
        assert_eq!(snap.data, vec![2, 0]);
        let mut other = ClusterIpRange::parse("192.168.2.0/24").unwrap();
        let before = other.clone();
        assert_eq!(
            other.restore(&snap.range, &snap.data).unwrap_err().kind(),
            crate::ErrorKind::MismatchedNetwork
        );
        assert_eq!(other, before);
        let back = ClusterIpRange::from_snapshot(&snap).unwrap();
        assert_eq!(back, r);
    }

    #[test]
    fn legacy_flag_limit() {
        assert!(validate_legacy_range(&"10.0.0.0/12".parse().unwrap()).is_ok());
        assert!(validate_legacy_range(&"10.0.0.0/11".parse().unwrap()).is_err());
        assert!(validate_legacy_range(&"fd00::/108".parse().unwrap()).is_ok());
        assert!(validate_legacy_range(&"fd00::/107".parse().unwrap()).is_err());
    }
}
