//! The multi-CIDR ClusterIP allocator (KEP-1880): ServiceCIDR objects define where ClusterIPs
//! may come from, IPAddress objects record what is taken
//! (`pkg/registry/core/service/ipallocator/cidrallocator.go`, `ipallocator.go`), and the
//! ServiceCIDR deletion guard (`pkg/controller/servicecidrs/servicecidrs_controller.go`).
//!
//! Follows Kubernetes v1.37.2: `pkg/registry/core/service/ipallocator/cidrallocator.go` and
//! `ipallocator.go`. The IPAddress repair loop (`repairip.go`) and the deletion guard
//! (`servicecidrs_controller.go`) are methods of the same allocator, in the submodules
//! `repair_ip` and `deletion`.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use indexmap::IndexMap;
use ipnet::IpNet;
use rand_core::RngCore;
use svcnet_model::{
    IpAddress, IpAddressSpec, ObjectMeta, ParentReference, SERVICE_CIDR_CONDITION_READY, ServiceCidr,
};

use crate::net::{cluster_ip_band_offset, from_u128, host_bits, parse_cidr, prefix_contains_ip, to_u128};
use crate::rng::uniform;
use crate::{AllocError, IpFamily};

mod deletion;
mod repair_ip;

pub use deletion::{DELETION_GRACE_SECONDS, DeletionDecision, TERMINATING_MESSAGE};
pub use repair_ip::IP_ADDRESS_GRACE_SECONDS;

/// Label naming the family of an IPAddress object.
pub const LABEL_IP_FAMILY: &str = "ipaddress.kubernetes.io/ip-family";
/// Label naming the controller that manages an IPAddress object.
pub const LABEL_MANAGED_BY: &str = "ipaddress.kubernetes.io/managed-by";
/// The `managed-by` value of IPAddress objects created by the ClusterIP allocator.
pub const IP_ALLOCATOR_CONTROLLER: &str = "ipallocator.k8s.io";

/// The Service an IP is allocated for (`spec.parentRef` of the IPAddress).
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ServiceRef {
    /// Namespace of the Service.
    pub namespace: String,
    /// Name of the Service.
    pub name: String,
}

impl ServiceRef {
    /// A reference to `namespace/name`.
    pub fn new(namespace: impl Into<String>, name: impl Into<String>) -> Self {
        ServiceRef {
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

/// One IPAddress object, reduced to what the allocator reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IpAddressRecord {
    /// `spec.parentRef`.
    pub parent: Option<ParentReference>,
    /// The `managed-by` label.
    pub managed_by: Option<String>,
    /// The `ip-family` label.
    pub family_label: Option<String>,
    /// `metadata.creationTimestamp` in seconds since the Unix epoch, when known.
    pub created_at: Option<i64>,
}

impl IpAddressRecord {
    /// A record as the allocator creates it for `ip`, owned by `owner`.
    pub fn managed(ip: IpAddr, owner: Option<&ServiceRef>) -> Self {
        IpAddressRecord {
            parent: owner.map(|o| ParentReference {
                group: Some(String::new()),
                resource: Some("services".into()),
                namespace: Some(o.namespace.clone()),
                name: Some(o.name.clone()),
            }),
            managed_by: Some(IP_ALLOCATOR_CONTROLLER.into()),
            family_label: Some(IpFamily::of(ip).as_str().into()),
            created_at: None,
        }
    }

    fn parent_service(&self) -> Option<ServiceRef> {
        let p = self.parent.as_ref()?;
        (p.group.as_deref().unwrap_or("").is_empty() && p.resource.as_deref() == Some("services")).then(
            || {
                ServiceRef::new(
                    p.namespace.clone().unwrap_or_default(),
                    p.name.clone().unwrap_or_default(),
                )
            },
        )
    }

    fn labels_ok(&self, ip: IpAddr) -> bool {
        self.managed_by.as_deref() == Some(IP_ALLOCATOR_CONTROLLER)
            && self.family_label.as_deref() == Some(IpFamily::of(ip).as_str())
    }

    fn is_managed_of(&self, family: IpFamily) -> bool {
        self.managed_by.as_deref() == Some(IP_ALLOCATOR_CONTROLLER)
            && self.family_label.as_deref() == Some(family.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct ServiceCidrObject {
    cidrs: Vec<IpNet>,
    ready: bool,
    deleting: bool,
}

/// One per-CIDR allocator (`Allocator` of `ipallocator.go`) and the ServiceCIDRs naming it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct CidrEntry {
    names: BTreeSet<String>,
    ready: bool,
    first: u128,
    last: u128,
    offset: u64,
    size: u64,
}

impl CidrEntry {
    fn new(net: &IpNet) -> Option<Self> {
        let hb = host_bits(net);
        let v4 = matches!(net, IpNet::V4(_));
        if !v4 && net.prefix_len() < 64 {
            return None;
        }
        let size = if hb >= 64 {
            u64::MAX
        } else if v4 {
            (1u64 << hb).saturating_sub(2)
        } else {
            (1u64 << hb) - 1
        };
        let first = to_u128(net.network()).saturating_add(1);
        let bcast = to_u128(net.broadcast());
        Some(CidrEntry {
            names: BTreeSet::new(),
            ready: true,
            first,
            last: if v4 { bcast.saturating_sub(1) } else { bcast },
            offset: cluster_ip_band_offset(net),
            size,
        })
    }
}

/// The multi-CIDR allocator of a cluster: the ServiceCIDRs and IPAddresses of both families.
///
/// Kubernetes runs one `MetaAllocator` per family over shared objects; here one value holds
/// the objects and every verb takes the family of the allocator it stands for. Each family's
/// allocator sees only the CIDRs of its family: a dual-stack ServiceCIDR contributes its IPv4
/// CIDR to the IPv4 allocator and its IPv6 CIDR to the IPv6 one, so asking the IPv4 allocator
/// for an IPv6 address is `mismatched-network` even when the same ServiceCIDR covers it. An IP
/// can be allocated only where a ready ServiceCIDR of the allocator's family covers it (never a
/// network address, never an IPv4 broadcast address); overlapping CIDRs share the same
/// IPAddress records.
///
/// ```
/// use svcnet_allocators::{IpFamily, MultiCidrAllocator, ServiceRef, SplitMix64};
///
/// let mut m = MultiCidrAllocator::new(&[IpFamily::V4]);
/// m.add_service_cidr("kubernetes", &["10.96.0.0/28"], true)?;
/// let web = ServiceRef::new("shop", "web");
/// let ip = m.allocate_next(IpFamily::V4, Some(&web), &mut SplitMix64::new(1))?;
/// assert!(m.has(IpFamily::V4, ip));
/// assert_eq!(m.free(IpFamily::V4), 13);
/// assert!(!m.can_delete_cidr("kubernetes")?);
/// # Ok::<(), svcnet_allocators::AllocError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MultiCidrAllocator {
    families: Vec<IpFamily>,
    service_cidrs: BTreeMap<String, ServiceCidrObject>,
    entries: IndexMap<IpNet, CidrEntry>,
    addresses: BTreeMap<IpAddr, IpAddressRecord>,
}

impl MultiCidrAllocator {
    /// An allocator for a cluster configured with `families` (primary first), with no
    /// ServiceCIDR yet.
    pub fn new(families: &[IpFamily]) -> Self {
        MultiCidrAllocator {
            families: families.to_vec(),
            service_cidrs: BTreeMap::new(),
            entries: IndexMap::new(),
            addresses: BTreeMap::new(),
        }
    }

    /// The configured families, primary first.
    pub fn families(&self) -> &[IpFamily] {
        &self.families
    }

    /// Adds or replaces ServiceCIDR `name` with `cidrs` (its `Ready` condition is `ready`) and
    /// syncs the per-CIDR allocators. Refused, changing nothing, when a CIDR does not parse.
    pub fn add_service_cidr(&mut self, name: &str, cidrs: &[&str], ready: bool) -> Result<(), AllocError> {
        let cidrs = cidrs
            .iter()
            .map(|c| parse_cidr(c))
            .collect::<Result<Vec<_>, _>>()?;
        self.service_cidrs.insert(
            name.to_owned(),
            ServiceCidrObject {
                cidrs,
                ready,
                deleting: false,
            },
        );
        self.sync();
        Ok(())
    }

    /// Adds or replaces a ServiceCIDR object: ready unless its `Ready` condition is not `True`,
    /// being deleted when it has a deletion timestamp.
    pub fn apply_service_cidr(&mut self, obj: &ServiceCidr) -> Result<(), AllocError> {
        let ready = obj
            .status
            .as_ref()
            .and_then(|s| s.conditions.as_ref())
            .and_then(|cs| cs.iter().find(|c| c.type_ == SERVICE_CIDR_CONDITION_READY))
            .is_none_or(|c| c.status == "True");
        let cidrs: Vec<&str> = obj.cidrs().iter().map(String::as_str).collect();
        let name = obj.metadata.name();
        self.add_service_cidr(name, &cidrs, ready)?;
        if obj.metadata.deletion_timestamp.is_some() {
            self.mark_deleting(name);
        }
        Ok(())
    }

    /// Marks ServiceCIDR `name` as being deleted (its allocators stop being ready unless another
    /// ServiceCIDR names the same CIDR and is ready).
    pub fn mark_deleting(&mut self, name: &str) {
        if let Some(o) = self.service_cidrs.get_mut(name) {
            o.deleting = true;
            self.sync();
        }
    }

    /// The ServiceCIDR delete event: drops the object and its references; a per-CIDR allocator
    /// no ServiceCIDR names any more is removed.
    pub fn delete_service_cidr(&mut self, name: &str) {
        let Some(obj) = self.service_cidrs.remove(name) else {
            return;
        };
        for c in &obj.cidrs {
            if let Some(e) = self.entries.get_mut(c) {
                e.names.remove(name);
                if e.names.is_empty() {
                    self.entries.shift_remove(c);
                }
            }
        }
    }

    /// `syncAllocators`: creates missing per-CIDR allocators and updates readiness.
    fn sync(&mut self) {
        for (name, obj) in &self.service_cidrs {
            let ready = obj.ready && !obj.deleting;
            for c in &obj.cidrs {
                if let Some(e) = self.entries.get_mut(c) {
                    e.names.insert(name.clone());
                    if ready {
                        e.ready = true;
                    } else if e.names.len() == 1 {
                        e.ready = false;
                    }
                    continue;
                }
                if let Some(mut e) = CidrEntry::new(c) {
                    e.ready = ready;
                    e.names.insert(name.clone());
                    self.entries.insert(*c, e);
                }
            }
        }
    }

    /// Adds a pre-existing IPAddress record (as read from the API).
    pub fn insert_record(&mut self, ip: IpAddr, record: IpAddressRecord) {
        self.addresses.insert(ip, record);
    }

    /// Adds a pre-existing IPAddress object; its name must be an IP.
    pub fn insert_ip_address(&mut self, obj: &IpAddress) -> Result<(), AllocError> {
        let name = obj.metadata.name();
        let ip: IpAddr = name
            .parse()
            .map_err(|_| AllocError::invalid("IPAddress name", name, "not an IP address"))?;
        self.insert_record(
            ip,
            IpAddressRecord {
                parent: obj.spec.as_ref().and_then(|s| s.parent_ref.clone()),
                managed_by: obj.metadata.label(LABEL_MANAGED_BY).map(str::to_owned),
                family_label: obj.metadata.label(LABEL_IP_FAMILY).map(str::to_owned),
                created_at: obj
                    .metadata
                    .creation_timestamp
                    .as_deref()
                    .and_then(parse_rfc3339_utc),
            },
        );
        Ok(())
    }

    /// The IPAddress objects, ascending by address.
    pub fn ip_address_objects(&self) -> Vec<IpAddress> {
        self.addresses
            .iter()
            .map(|(ip, r)| {
                let mut labels = BTreeMap::new();
                if let Some(f) = &r.family_label {
                    labels.insert(LABEL_IP_FAMILY.to_owned(), f.clone());
                }
                if let Some(m) = &r.managed_by {
                    labels.insert(LABEL_MANAGED_BY.to_owned(), m.clone());
                }
                IpAddress {
                    api_version: Some("networking.k8s.io/v1".into()),
                    kind: Some("IPAddress".into()),
                    metadata: ObjectMeta {
                        name: Some(ip.to_string()),
                        labels: Some(labels),
                        ..ObjectMeta::default()
                    },
                    spec: Some(IpAddressSpec {
                        parent_ref: r.parent.clone(),
                    }),
                }
            })
            .collect()
    }

    /// The record of `ip`, if an IPAddress object exists for it.
    pub fn record(&self, ip: IpAddr) -> Option<&IpAddressRecord> {
        self.addresses.get(&ip)
    }

    /// The per-CIDR allocators of `family` and whether each is ready, in creation order.
    pub fn cidrs(&self, family: IpFamily) -> Vec<(IpNet, bool)> {
        self.entries
            .iter()
            .filter(|(n, _)| IpFamily::of_net(n) == family)
            .map(|(n, e)| (*n, e.ready))
            .collect()
    }

    /// The band offset of the per-CIDR allocator that covers `ip` (any readiness, `ip`'s family).
    pub fn band_of(&self, ip: IpAddr) -> Option<(IpNet, bool)> {
        self.entries
            .iter()
            .find(|(n, _)| prefix_contains_ip(n, ip))
            .map(|(n, e)| (*n, to_u128(ip) >= e.first.saturating_add(u128::from(e.offset))))
    }

    /// `getAllocator`: the first per-CIDR allocator of `family` (ready, when `ready_only`) whose
    /// prefix covers `ip`. CIDRs of the other family are not the family allocator's business.
    fn covering(&self, family: IpFamily, ip: IpAddr, ready_only: bool) -> Option<&CidrEntry> {
        self.entries
            .iter()
            .find(|(n, e)| {
                IpFamily::of_net(n) == family && (!ready_only || e.ready) && prefix_contains_ip(n, ip)
            })
            .map(|(_, e)| e)
    }

    fn mismatched(ip: IpAddr) -> AllocError {
        AllocError::MismatchedNetwork {
            given: ip.to_string(),
            current: "(no ServiceCIDR covers it)".into(),
        }
    }

    /// Takes `ip` for `owner` on the allocator of `family`: `mismatched-network` when no ready
    /// CIDR of `family` covers it (a CIDR of the other family does not count), `allocated` when
    /// an IPAddress exists for it.
    pub fn allocate(
        &mut self,
        family: IpFamily,
        ip: IpAddr,
        owner: Option<&ServiceRef>,
    ) -> Result<(), AllocError> {
        let e = self
            .covering(family, ip, true)
            .ok_or_else(|| Self::mismatched(ip))?;
        let v = to_u128(ip);
        if v < e.first || v > e.last {
            return Err(AllocError::IpNotInRange {
                ip,
                range: String::new(),
            });
        }
        if self.addresses.contains_key(&ip) {
            return Err(AllocError::IpAllocated { ip });
        }
        self.addresses.insert(ip, IpAddressRecord::managed(ip, owner));
        Ok(())
    }

    /// Takes a free IP of `family` for `owner`: per-CIDR allocators are tried in creation
    /// order, skipping those not ready or full; each tries its upper band from a random start,
    /// then its lower band. `full` when nothing is left (or no ServiceCIDR exists).
    pub fn allocate_next<R: RngCore + ?Sized>(
        &mut self,
        family: IpFamily,
        owner: Option<&ServiceRef>,
        rng: &mut R,
    ) -> Result<IpAddr, AllocError> {
        let mut found = None;
        for e in self
            .entries
            .iter()
            .filter(|(n, _)| IpFamily::of_net(n) == family)
            .map(|(_, e)| e)
        {
            if !e.ready {
                continue;
            }
            let band = e.size.saturating_sub(e.offset);
            if band == 0 {
                continue;
            }
            let lo = e.first + u128::from(e.offset);
            let start = lo + u128::from(uniform(rng, band));
            let start = if start > e.last { lo } else { start };
            let mut hit = self
                .first_free(family, start, e.last)
                .or_else(|| self.first_free(family, lo, start - 1));
            if hit.is_none() && e.offset > 0 {
                // The lower (static) band [first, lo - 1], only once the upper one is full.
                let s = e.first + u128::from(uniform(rng, e.offset));
                hit = self
                    .first_free(family, s, lo - 1)
                    .or_else(|| self.first_free(family, e.first, s - 1));
            }
            if let Some(v) = hit {
                found = Some(from_u128(family, v));
                break;
            }
        }
        let ip = found.ok_or(AllocError::Full)?;
        self.addresses.insert(ip, IpAddressRecord::managed(ip, owner));
        Ok(ip)
    }

    /// The lowest address in `[lo, hi]` without an IPAddress object.
    fn first_free(&self, family: IpFamily, lo: u128, hi: u128) -> Option<u128> {
        if lo > hi {
            return None;
        }
        let mut cand = lo;
        for k in self
            .addresses
            .range(from_u128(family, lo)..=from_u128(family, hi))
            .map(|(k, _)| to_u128(*k))
        {
            if k > cand {
                return Some(cand);
            }
            if cand == hi {
                return None;
            }
            cand = k + 1;
        }
        Some(cand)
    }

    /// Frees `ip` on the allocator of `family`: `mismatched-network` when no CIDR of `family`
    /// (ready or not) covers it; otherwise its IPAddress is deleted if it exists.
    pub fn release(&mut self, family: IpFamily, ip: IpAddr) -> Result<(), AllocError> {
        if self.covering(family, ip, false).is_none() {
            return Err(Self::mismatched(ip));
        }
        self.addresses.remove(&ip);
        Ok(())
    }

    /// True when a ready CIDR of `family` covers `ip` and an IPAddress exists for it.
    pub fn has(&self, family: IpFamily, ip: IpAddr) -> bool {
        self.covering(family, ip, true).is_some() && self.addresses.contains_key(&ip)
    }

    /// IPAddress objects of `family` managed by the allocator, ascending.
    pub fn iter(&self, family: IpFamily) -> impl Iterator<Item = IpAddr> + '_ {
        self.addresses
            .iter()
            .filter(move |(_, r)| r.is_managed_of(family))
            .map(|(ip, _)| *ip)
    }

    /// Number of managed IPAddress objects of `family` (any CIDR).
    pub fn used(&self, family: IpFamily) -> u64 {
        self.iter(family).count() as u64
    }

    /// The sizes of the top-level CIDRs of `family` (a CIDR inside another is not counted
    /// twice) minus [`used`](Self::used), floored at 0.
    pub fn free(&self, family: IpFamily) -> u64 {
        let nets: Vec<&IpNet> = self
            .entries
            .keys()
            .filter(|n| IpFamily::of_net(n) == family)
            .collect();
        let mut size = 0u64;
        for (n, e) in self.entries.iter().filter(|(n, _)| IpFamily::of_net(n) == family) {
            let contained = nets
                .iter()
                .any(|p| *p != n && p.prefix_len() <= n.prefix_len() && p.contains(&n.network()));
            if !contained {
                size = size.saturating_add(e.size);
            }
        }
        size.saturating_sub(self.used(family))
    }

    /// Releases every managed IPAddress of `family`; returns how many.
    pub fn release_all(&mut self, family: IpFamily) -> usize {
        let before = self.addresses.len();
        self.addresses.retain(|_, r| !r.is_managed_of(family));
        before - self.addresses.len()
    }

    /// Sets the creation time (seconds since the Unix epoch) of the IPAddress of `ip`, used by
    /// the grace period of [`repair_ip_addresses`](Self::repair_ip_addresses).
    pub fn set_created_at(&mut self, ip: IpAddr, seconds: i64) {
        if let Some(r) = self.addresses.get_mut(&ip) {
            r.created_at = Some(seconds);
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS[.frac](Z|±HH:MM)` to seconds since the Unix epoch.
fn parse_rfc3339_utc(s: &str) -> Option<i64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let t = s.get(r)?;
        t.bytes().all(|c| c.is_ascii_digit()).then(|| t.parse().ok())?
    };
    if b.len() < 20 || b.get(4) != Some(&b'-') || b.get(7) != Some(&b'-') || b.get(13) != Some(&b':') {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, se) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || se > 60 {
        return None;
    }
    let mut rest = s.get(19..)?;
    if let Some(r) = rest.strip_prefix('.') {
        rest = r.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ => {
            let sign = match rest.as_bytes().first()? {
                b'+' => 1,
                b'-' => -1,
                _ => return None,
            };
            let oh: i64 = rest.get(1..3)?.parse().ok()?;
            let om: i64 = rest.get(4..6)?.parse().ok()?;
            sign * (oh * 3600 + om * 60)
        }
    };
    // days from civil (Howard Hinnant's algorithm)
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + h * 3600 + mi * 60 + se - offset)
}

#[cfg(test)]
mod tests {
    use svcnet_model::Service;

    use super::*;
    use crate::{ErrorKind, RepairFinding, SplitMix64};
    use svcnet_test_support::build::service_with_ips;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn shadowed_network_address() {
        let mut m = MultiCidrAllocator::new(&[IpFamily::V4]);
        m.add_service_cidr("a", &["192.168.1.0/24"], true).unwrap();
        assert_eq!(
            m.allocate(IpFamily::V4, ip("192.168.1.0"), None)
                .unwrap_err()
                .kind(),
            crate::ErrorKind::MismatchedNetwork
        );
        m.add_service_cidr("b", &["192.168.0.0/16"], true).unwrap();
        m.allocate(IpFamily::V4, ip("192.168.1.0"), None).unwrap();
        assert!(m.has(IpFamily::V4, ip("192.168.1.0")));
        assert_eq!(m.used(IpFamily::V4), 1);
    }

    #[test]
    fn fill_small_and_lower_band() {
        let mut m = MultiCidrAllocator::new(&[IpFamily::V4]);
        m.add_service_cidr("a", &["192.168.1.0/25"], true).unwrap();
        let mut r = SplitMix64::new(3);
        for _ in 0..110 {
            let got = m.allocate_next(IpFamily::V4, None, &mut r).unwrap();
            assert!(to_u128(got) >= to_u128(ip("192.168.1.17")), "{got}");
        }
        for _ in 0..16 {
            let got = m.allocate_next(IpFamily::V4, None, &mut r).unwrap();
            assert!(to_u128(got) < to_u128(ip("192.168.1.17")), "{got}");
        }
        assert_eq!(m.allocate_next(IpFamily::V4, None, &mut r), Err(AllocError::Full));
        assert_eq!(m.free(IpFamily::V4), 0);
    }

    #[test]
    fn each_family_allocator_ignores_the_other_familys_cidrs() {
        // One dual-stack ServiceCIDR: the IPv4 allocator sees only 10.0.0.0/24, the IPv6 one
        // only fd00::/120 (cidrallocator.go skips CIDRs of the other family).
        let mut m = MultiCidrAllocator::new(&[IpFamily::V4, IpFamily::V6]);
        m.add_service_cidr("kubernetes", &["10.0.0.0/24", "fd00::/120"], true)
            .unwrap();
        let (v4, v6) = (ip("10.0.0.7"), ip("fd00::7"));
        for (family, other) in [(IpFamily::V4, v6), (IpFamily::V6, v4)] {
            let before = m.clone();
            assert_eq!(
                m.allocate(family, other, None).map_err(|e| e.kind()),
                Err(ErrorKind::MismatchedNetwork),
                "{family:?} allocating {other}"
            );
            assert_eq!(
                m.release(family, other).map_err(|e| e.kind()),
                Err(ErrorKind::MismatchedNetwork),
                "{family:?} releasing {other}"
            );
            assert_eq!(m, before);
        }
        m.allocate(IpFamily::V4, v4, None).unwrap();
        m.allocate(IpFamily::V6, v6, None).unwrap();
        assert!(m.has(IpFamily::V4, v4) && m.has(IpFamily::V6, v6));
        assert!(!m.has(IpFamily::V6, v4) && !m.has(IpFamily::V4, v6));
        assert_eq!(
            m.release(IpFamily::V4, v6).map_err(|e| e.kind()),
            Err(ErrorKind::MismatchedNetwork)
        );
        assert!(m.has(IpFamily::V6, v6), "a refused release frees nothing");
        m.release(IpFamily::V6, v6).unwrap();
        assert!(!m.has(IpFamily::V6, v6));
    }

    #[test]
    fn not_ready_is_skipped() {
        let mut m = MultiCidrAllocator::new(&[IpFamily::V4]);
        m.add_service_cidr("a", &["10.0.0.0/28"], false).unwrap();
        assert_eq!(
            m.allocate_next(IpFamily::V4, None, &mut SplitMix64::new(1)),
            Err(AllocError::Full)
        );
        m.add_service_cidr("b", &["10.0.0.0/28"], true).unwrap();
        assert!(
            m.allocate_next(IpFamily::V4, None, &mut SplitMix64::new(1))
                .is_ok()
        );
    }

    #[test]
    fn deletion_guard() {
        let mut m = MultiCidrAllocator::new(&[IpFamily::V4, IpFamily::V6]);
        m.add_service_cidr("kubernetes", &["192.168.0.0/24", "2001:db2::/64"], true)
            .unwrap();
        assert!(m.can_delete_cidr("kubernetes").unwrap());
        m.insert_record(
            ip("192.168.0.24"),
            IpAddressRecord::managed(ip("192.168.0.24"), None),
        );
        assert!(!m.can_delete_cidr("kubernetes").unwrap());
        assert!(matches!(
            m.deletion_decision("kubernetes", 30).unwrap(),
            DeletionDecision::Blocked(_)
        ));
        m.add_service_cidr("big", &["192.168.0.0/16"], true).unwrap();
        assert!(m.can_delete_cidr("kubernetes").unwrap());
        assert_eq!(
            m.deletion_decision("kubernetes", 3).unwrap(),
            DeletionDecision::Wait(7)
        );
        m.delete_service_cidr("kubernetes");
        assert_eq!(m.cidrs(IpFamily::V4).len(), 1);
    }

    #[test]
    fn short_ipv6_prefix_gets_no_allocator() {
        let mut m = MultiCidrAllocator::new(&[IpFamily::V6]);
        m.add_service_cidr("a", &["fd00::/48"], true).unwrap();
        assert!(m.cidrs(IpFamily::V6).is_empty());
        m.add_service_cidr("b", &["fd00::/64"], true).unwrap();
        let got = m
            .allocate_next(IpFamily::V6, None, &mut SplitMix64::new(1))
            .unwrap();
        assert!(m.has(IpFamily::V6, got));
        assert_eq!(m.free(IpFamily::V6), u64::MAX - 1);
    }

    #[test]
    fn rfc3339() {
        assert_eq!(parse_rfc3339_utc("1970-01-01T00:00:00Z"), Some(0));
        assert_eq!(parse_rfc3339_utc("2024-02-29T12:00:00Z"), Some(1_709_208_000));
        assert_eq!(
            parse_rfc3339_utc("2024-02-29T13:00:00.5+01:00"),
            Some(1_709_208_000)
        );
        assert_eq!(parse_rfc3339_utc("yesterday"), None);
    }

    /// Service `ns/name` holding `ips`.
    fn service(name: &str, ips: &[&str]) -> Service {
        service_with_ips("ns", name, ips)
    }

    #[test]
    fn ip_address_repair() {
        let mut m = MultiCidrAllocator::new(&[IpFamily::V4]);
        m.add_service_cidr("kubernetes", &["10.0.0.0/24"], true).unwrap();
        let a = ServiceRef::new("ns", "a");
        let gone = ServiceRef::new("ns", "gone");
        m.allocate(IpFamily::V4, ip("10.0.0.2"), Some(&a)).unwrap();
        m.allocate(IpFamily::V4, ip("10.0.0.3"), Some(&gone)).unwrap();
        m.allocate(IpFamily::V4, ip("10.0.0.4"), Some(&gone)).unwrap();
        m.set_created_at(ip("10.0.0.4"), 990);
        m.allocate(IpFamily::V4, ip("10.0.0.5"), Some(&a)).unwrap();
        let services = vec![
            service("a", &["10.0.0.2"]),
            service("b", &["10.0.0.9"]),
            service("c", &["10.0.0.2"]),
            service("d", &["192.168.0.1"]),
        ];
        let ev = m.repair_ip_addresses(&services, 1000);
        let got: Vec<(&str, String)> = ev.iter().map(|e| (e.reason, e.value.clone())).collect();
        assert_eq!(
            got,
            vec![
                ("ClusterIPNotAllocated", "10.0.0.9".to_string()),
                ("ClusterIPAlreadyAllocated", "10.0.0.2".to_string()),
                ("ClusterIPOutOfRange", "192.168.0.1".to_string()),
                ("IPAddressNotAllocated", "10.0.0.3".to_string()),
                ("LeakFlagged", "10.0.0.4".to_string()),
                ("IPAddressWrongReference", "10.0.0.5".to_string()),
            ]
        );
        assert!(m.has(IpFamily::V4, ip("10.0.0.9")) && m.has(IpFamily::V4, ip("10.0.0.4")));
        assert!(!m.has(IpFamily::V4, ip("10.0.0.3")) && !m.has(IpFamily::V4, ip("10.0.0.5")));
        let ev = m.repair_ip_addresses(&services, 1100);
        assert!(ev.iter().any(|e| e.finding == RepairFinding::LeakCleaned));
        assert!(!m.has(IpFamily::V4, ip("10.0.0.4")));
    }
}
