//! Address arithmetic and the range-size rules of `k8s.io/utils/net`, plus the band offsets of
//! KEP-3070 (ClusterIP) and KEP-3668 (NodePort).
//!
//! Follows Kubernetes v1.37.2: `k8s.io/utils/net` (`net.go`, `ipnet.go`, as v1.37.2 pins it) and
//! `calculateRangeOffset` in `pkg/registry/core/service/ipallocator/bitmap.go` and
//! `pkg/registry/core/service/portallocator/allocator.go`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use ipnet::IpNet;

use crate::AllocError;

/// An IP family: the model's one [`IpFamily`](svcnet_model::IpFamily).
pub use svcnet_model::IpFamily;

/// Reads `IPv4` / `IPv6`, refusing anything else with the allocators' error.
#[cfg(feature = "script")]
pub(crate) fn parse_family(s: &str) -> Result<IpFamily, AllocError> {
    IpFamily::parse(s).ok_or_else(|| AllocError::invalid("ip family", s, "must be IPv4 or IPv6"))
}

/// The address as an unsigned integer.
pub(crate) fn to_u128(ip: IpAddr) -> u128 {
    match ip {
        IpAddr::V4(a) => u128::from(u32::from(a)),
        IpAddr::V6(a) => u128::from(a),
    }
}

/// The integer as an address of `family` (truncated to 32 bits for IPv4).
pub(crate) fn from_u128(family: IpFamily, v: u128) -> IpAddr {
    match family {
        IpFamily::V4 => IpAddr::V4(Ipv4Addr::from(v as u32)),
        IpFamily::V6 => IpAddr::V6(Ipv6Addr::from(v)),
    }
}

/// Host bits of a CIDR.
pub(crate) fn host_bits(net: &IpNet) -> u32 {
    IpFamily::of_net(net).bits() - u32::from(net.prefix_len())
}

/// `RangeSize` of `k8s.io/utils/net`: `2^hostbits`; 0 when the host bits reach 31 (IPv4) or 127
/// (IPv6); saturating at `i64::MAX` from 63 host bits on.
pub(crate) fn range_size(net: &IpNet) -> u64 {
    let hb = host_bits(net);
    let zero_from = match net {
        IpNet::V4(_) => 31,
        IpNet::V6(_) => 127,
    };
    if hb >= zero_from {
        0
    } else if hb >= 63 {
        i64::MAX as u64
    } else {
        1u64 << hb
    }
}

/// The KEP-3070 band offset of a ClusterIP range: `clamp(size / 16, 16, 256)`, 0 when the
/// CIDR holds 16 addresses or fewer (`calculateRangeOffset`).
pub(crate) fn cluster_ip_band_offset(cidr: &IpNet) -> u64 {
    band_offset(range_size(cidr), 16, 256, 16)
}

/// The KEP-3668 band offset of a NodePort range of `size` ports: `clamp(size / 32, 16, 128)`,
/// 0 when the range holds 16 ports or fewer.
pub(crate) fn node_port_band_offset(size: u64) -> u64 {
    band_offset(size, 16, 128, 32)
}

fn band_offset(size: u64, min: u64, max: u64, step: u64) -> u64 {
    if size <= min {
        return 0;
    }
    (size / step).clamp(min, max)
}

/// True when `ip` is a usable address of `net` for the multi-CIDR allocator
/// (`PrefixContainsIP`): inside the prefix, not its network address and, for IPv4, not its
/// broadcast address.
pub fn prefix_contains_ip(net: &IpNet, ip: IpAddr) -> bool {
    if !net.contains(&ip) || net.network() == ip {
        return false;
    }
    !(matches!(net, IpNet::V4(_)) && net.broadcast() == ip)
}

/// True when `outer` contains all of `inner` (`ContainsPrefix`): same family, a prefix no longer
/// than `inner`'s, and `inner`'s network inside `outer`.
pub(crate) fn contains_prefix(outer: &IpNet, inner: &IpNet) -> bool {
    IpFamily::of_net(outer) == IpFamily::of_net(inner)
        && outer.prefix_len() <= inner.prefix_len()
        && outer.contains(&inner.network())
}

/// Parses a CIDR the way the allocators take it ([`svcnet_model::net::parse_network`]:
/// address/prefix, host bits cleared), refusing anything else with the allocators' error.
pub(crate) fn parse_cidr(s: &str) -> Result<IpNet, AllocError> {
    svcnet_model::net::parse_network(s)
        .ok_or_else(|| AllocError::invalid("cidr", s, "not a CIDR (address/prefix-length)"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn off(s: &str) -> u64 {
        cluster_ip_band_offset(&s.parse().unwrap())
    }

    #[test]
    fn cluster_ip_offsets_match_kubernetes_table() {
        for (cidr, want) in [
            ("192.168.1.1/32", 0),
            ("192.168.1.1/30", 0),
            ("192.168.1.1/28", 0),
            ("192.168.1.1/27", 16),
            ("192.168.1.1/25", 16),
            ("192.168.1.1/24", 16),
            ("192.168.1.1/22", 64),
            ("192.168.1.1/20", 256),
            ("192.168.1.1/8", 256),
            ("0.0.0.0/0", 0),
            ("fd00::1/128", 0),
            ("fd00::1/124", 0),
            ("fd00::1/122", 16),
            ("fd00::1/118", 64),
            ("fd00::1/12", 256),
            ("::/0", 0),
        ] {
            assert_eq!(off(cidr), want, "{cidr}");
        }
    }

    #[test]
    fn node_port_offsets_match_kubernetes_table() {
        for (size, want) in [
            (10, 0),
            (16, 0),
            (128, 16),
            (129, 16),
            (2048, 64),
            (2768, 86),
            (4096, 128),
            (8192, 128),
        ] {
            assert_eq!(node_port_band_offset(size), want, "{size}");
        }
    }

    #[test]
    fn prefix_containment() {
        let n: IpNet = "192.168.0.0/24".parse().unwrap();
        assert!(!prefix_contains_ip(&n, "192.168.0.0".parse().unwrap()));
        assert!(!prefix_contains_ip(&n, "192.168.0.255".parse().unwrap()));
        assert!(prefix_contains_ip(&n, "192.168.0.1".parse().unwrap()));
        let n6: IpNet = "2001:db2::/64".parse().unwrap();
        assert!(prefix_contains_ip(
            &n6,
            "2001:db2::ffff:ffff:ffff:ffff".parse().unwrap()
        ));
        assert!(!prefix_contains_ip(&n6, "2001:db2::".parse().unwrap()));
    }
}
