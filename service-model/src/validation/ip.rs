//! The IP address and CIDR syntaxes of `k8s.io/apimachinery/pkg/util/validation`, with the API
//! server's exact messages: the address checks take the path and return field errors directly.
//! Re-exported by [`names`](super::names), where callers find them.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/apimachinery/pkg/util/validation/ip.go`.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::field::{ErrorList, FieldError, Path, go_quote};
use crate::netparse;
use crate::validation::fieldpath::FieldPath;

/// Parses an IP the way Go's `ParseIPSloppy` does: IPv4 octets may carry leading zeros (read as
/// decimal), IPv6 groups may be longer than four hex digits when their value fits 16 bits, and
/// an IPv4-mapped IPv6 address is an IPv4 address. `None` when it does not parse.
pub fn parse_ip_sloppy(value: &str) -> Option<IpAddr> {
    if let Some(v4) = short_dotted_quad(value.as_bytes()) {
        return Some(IpAddr::V4(v4));
    }
    netparse::parse_ip_sloppy(value).map(netparse::GoIp::to_std)
}

/// The common case of [`parse_ip_sloppy`], read without the general parser: four
/// dot-separated groups of one to three decimal digits, each at most 255 (read as the general
/// parser reads them, leading zeros included). `None` for anything else.
#[inline]
fn short_dotted_quad(b: &[u8]) -> Option<Ipv4Addr> {
    if b.len() < 7 || b.len() > 15 {
        return None;
    }
    let mut octets = [0u8; 4];
    let mut at = 0;
    for (k, slot) in octets.iter_mut().enumerate() {
        if k > 0 {
            if b.get(at) != Some(&b'.') {
                return None;
            }
            at += 1;
        }
        let mut value: u32 = 0;
        let mut digits = 0;
        while let Some(&c) = b.get(at)
            && c.is_ascii_digit()
        {
            if digits == 3 {
                return None;
            }
            value = value * 10 + u32::from(c - b'0');
            digits += 1;
            at += 1;
        }
        if digits == 0 {
            return None;
        }
        *slot = u8::try_from(value).ok()?;
    }
    (at == b.len()).then(|| Ipv4Addr::from(octets))
}

/// Parses a CIDR the way Go's `ParseCIDRSloppy` does; returns the address as written and the
/// prefix length, both in the family Go's helpers give the network: IPv4 for IPv4 text and for
/// IPv4-mapped IPv6 text with a prefix of at least 96 (the 96 mapping bits are then not
/// counted), else IPv6.
pub fn parse_cidr_sloppy(value: &str) -> Option<(IpAddr, u8)> {
    let net = netparse::parse_cidr_sloppy(value)?;
    let written = netparse::GoIp(net.addr);
    let ip = if net.network_is_v4() {
        written.to_std()
    } else {
        IpAddr::from(written.0)
    };
    Some((ip, net.family_prefix()))
}

/// True when the text parses (sloppily) as an IPv6 address, i.e. not an IPv4 or IPv4-mapped one.
pub fn is_ipv6_string(value: &str) -> bool {
    matches!(parse_ip_sloppy(value), Some(IpAddr::V6(_)))
}

/// True when the text parses (sloppily) as an IPv4 address (IPv4-mapped IPv6 included).
pub fn is_ipv4_string(value: &str) -> bool {
    matches!(parse_ip_sloppy(value), Some(IpAddr::V4(_)))
}

const INVALID_IP: &str = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)";
const INVALID_CIDR: &str = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)";

/// `IsValidIP`: the value must parse as an IP address (leniently, as this snapshot does).
pub fn is_valid_ip(path: &Path, value: &str) -> ErrorList {
    let mut errs = Vec::new();
    check_ip(&mut errs, &FieldPath::from(path), value);
    errs
}

/// [`is_valid_ip`] into `errs`, with the path written out only on error; the address when
/// it parses.
pub(crate) fn check_ip(errs: &mut ErrorList, path: &FieldPath<'_>, value: &str) -> Option<IpAddr> {
    let ip = parse_ip_sloppy(value);
    if ip.is_none() {
        errs.push(FieldError::invalid(&path.path(), value, INVALID_IP));
    }
    ip
}

/// `IsValidIPv4Address`: the value must parse leniently as an IPv4 address (IPv4-mapped
/// IPv6 text counts as IPv4); one error at `path` otherwise.
pub fn is_valid_ipv4_address(path: &Path, value: &str) -> ErrorList {
    if is_ipv4_string(value) {
        Vec::new()
    } else {
        vec![FieldError::invalid(path, value, "must be a valid IPv4 address")]
    }
}

/// `IsValidIPv6Address`: the value must parse leniently as an IPv6 address that is not
/// IPv4-mapped; one error at `path` otherwise.
pub fn is_valid_ipv6_address(path: &Path, value: &str) -> ErrorList {
    if is_ipv6_string(value) {
        Vec::new()
    } else {
        vec![FieldError::invalid(path, value, "must be a valid IPv6 address")]
    }
}

/// `IsValidCIDR`: the value must parse as `address/prefix` (leniently).
pub fn is_valid_cidr(path: &Path, value: &str) -> ErrorList {
    let mut errs = Vec::new();
    check_cidr(&mut errs, &FieldPath::from(path), value);
    errs
}

/// [`is_valid_cidr`] into `errs`, with the path written out only on error.
pub(crate) fn check_cidr(errs: &mut ErrorList, path: &FieldPath<'_>, value: &str) {
    if netparse::parse_cidr_sloppy(value).is_none() {
        errs.push(FieldError::invalid(&path.path(), value, INVALID_CIDR));
    }
}

/// The strict IP form IPAddress names require: the value must parse strictly (no leading
/// zeros, no zone) and be written canonically (RFC 5952 for IPv6). One error at most.
pub fn is_valid_canonical_ip(path: &Path, value: &str) -> ErrorList {
    match value.parse::<IpAddr>() {
        Err(_) => vec![FieldError::invalid(
            path,
            value,
            format!("ParseAddr({}): not a valid IP address", go_quote(value)),
        )],
        Ok(ip) if ip.to_string() != value => {
            vec![FieldError::invalid(
                path,
                value,
                "must be a canonical format IP address",
            )]
        }
        Ok(_) => Vec::new(),
    }
}

/// `IsValidCIDR`: the strict CIDR form ServiceCIDR requires. A value that does not parse at
/// all, has leading zeros, an IPv4-mapped IPv6 address or bits set beyond the prefix length
/// is one error (the first of these found); a value that passes those but is not written
/// canonically (RFC 5952 for IPv6) is one error.
pub fn is_valid_canonical_cidr(path: &Path, value: &str) -> ErrorList {
    let invalid = |detail: String| vec![FieldError::invalid(path, value, detail)];
    if parse_cidr_sloppy(value).is_none() {
        return invalid(INVALID_CIDR.to_owned());
    }
    let strict = value.split_once('/').and_then(|(addr, len)| {
        let ip = addr.parse::<IpAddr>().ok()?;
        let max: u8 = if ip.is_ipv4() { 32 } else { 128 };
        let plain = !len.is_empty()
            && len.bytes().all(|b| b.is_ascii_digit())
            && !(len.len() > 1 && len.starts_with('0'));
        let bits = len.parse::<u8>().ok().filter(|b| plain && *b <= max)?;
        Some((ip, bits))
    });
    let Some((ip, bits)) = strict else {
        return invalid("must not have leading 0s in IP or prefix length".to_owned());
    };
    if let IpAddr::V6(v6) = ip
        && v6.to_ipv4_mapped().is_some()
    {
        return invalid("must not have an IPv4-mapped IPv6 address".to_owned());
    }
    let masked = mask(ip, bits);
    if masked != ip {
        return invalid("must not have bits set beyond the prefix length".to_owned());
    }
    let canonical = format!("{masked}/{bits}");
    if canonical != value {
        return invalid(format!("must be in canonical form ({})", go_quote(&canonical)));
    }
    Vec::new()
}

fn mask(ip: IpAddr, bits: u8) -> IpAddr {
    match ip {
        IpAddr::V4(v4) => {
            let m = u32::MAX.checked_shl(32 - u32::from(bits)).unwrap_or(0);
            IpAddr::V4(Ipv4Addr::from(u32::from(v4) & m))
        }
        IpAddr::V6(v6) => {
            let m = u128::MAX.checked_shl(128 - u32::from(bits)).unwrap_or(0);
            IpAddr::V6(Ipv6Addr::from(u128::from(v6) & m))
        }
    }
}

/// True for an IP in one of the dual-stack pair `cidrs` families: exactly one IPv4 and one
/// IPv6 CIDR (`IsDualStackCIDRStrings`). `None` when one does not parse.
pub fn is_dual_stack_cidrs(cidrs: &[String]) -> Option<bool> {
    let mut v4 = false;
    let mut v6 = false;
    for c in cidrs {
        match parse_cidr_sloppy(c)?.0 {
            IpAddr::V4(_) => v4 = true,
            IpAddr::V6(_) => v6 = true,
        }
    }
    Some(v4 && v6)
}

/// True when `ips` hold at least one IPv4 and one IPv6 address (`IsDualStackIPStrings`).
/// `None` when one does not parse.
pub fn is_dual_stack_ips(ips: &[String]) -> Option<bool> {
    let mut v4 = false;
    let mut v6 = false;
    for ip in ips {
        match parse_ip_sloppy(ip)? {
            IpAddr::V4(_) => v4 = true,
            IpAddr::V6(_) => v6 = true,
        }
    }
    Some(v4 && v6)
}

/// `ValidateNonSpecialIP`: the address must parse and must not be unspecified, loopback,
/// link-local unicast or link-local multicast (one error per category hit).
pub fn validate_non_special_ip(path: &Path, value: &str) -> ErrorList {
    let Some(ip) = parse_ip_sloppy(value) else {
        return vec![FieldError::invalid(path, value, "must be a valid IP address")];
    };
    let mut errs = Vec::new();
    check_non_special_ip(&mut errs, &FieldPath::from(path), value, ip);
    errs
}

/// The categories of [`validate_non_special_ip`] for an address already parsed from `value`,
/// into `errs`.
pub(crate) fn check_non_special_ip(errs: &mut ErrorList, path: &FieldPath<'_>, value: &str, ip: IpAddr) {
    let (unspecified, loopback, ll_unicast, ll_multicast) = match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (
                v4.is_unspecified(),
                v4.is_loopback(),
                v4.is_link_local(),
                o[0] == 224 && o[1] == 0 && o[2] == 0,
            )
        }
        IpAddr::V6(v6) => {
            let s = v6.segments();
            (
                v6.is_unspecified(),
                v6.is_loopback(),
                s[0] & 0xffc0 == 0xfe80,
                s[0] & 0xff0f == 0xff02,
            )
        }
    };
    let checks = [
        (unspecified, "may not be unspecified (0.0.0.0)"),
        (
            loopback,
            "may not be in the loopback range (127.0.0.0/8, ::1/128)",
        ),
        (
            ll_unicast,
            "may not be in the link-local range (169.254.0.0/16, fe80::/10)",
        ),
        (
            ll_multicast,
            "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)",
        ),
    ];
    for (hit, detail) in checks {
        if hit {
            errs.push(FieldError::invalid(&path.path(), value, detail));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dotted_quad_shortcut_reads_as_the_general_parser() {
        for text in [
            "1.2.3.4",
            "10.0.0.010",
            "001.002.003.004",
            "255.255.255.255",
            "256.1.1.1",
            "1.2.3",
            "1.2.3.4.",
            "1..2.3",
            "1.2.3.0004",
            "0000.1.2.3",
            "1.2.3.4 ",
            " 1.2.3.4",
            "1.2.3.-4",
            "::ffff:1.2.3.4",
            "fd00::1",
            "1.2.3.4/8",
            "",
            "1.2.3.a",
        ] {
            let general = netparse::parse_ip_sloppy(text).map(netparse::GoIp::to_std);
            if let Some(v4) = short_dotted_quad(text.as_bytes()) {
                assert_eq!(general, Some(IpAddr::V4(v4)), "{text}");
            }
            assert_eq!(parse_ip_sloppy(text), general, "{text}");
        }
        assert!(short_dotted_quad(b"10.0.0.010").is_some());
    }

    #[test]
    fn sloppy_ips() {
        assert_eq!(parse_ip_sloppy("010.0.0.1"), Some("10.0.0.1".parse().unwrap()));
        assert_eq!(
            parse_ip_sloppy("::ffff:1.2.3.4"),
            Some("1.2.3.4".parse().unwrap())
        );
        assert_eq!(
            parse_ip_sloppy("::ffff:001.2.3.4"),
            Some("1.2.3.4".parse().unwrap())
        );
        assert!(parse_ip_sloppy("1.2.3.256").is_none());
        assert!(parse_ip_sloppy("1.2.3").is_none());
        assert!(parse_ip_sloppy("foo").is_none());
        assert!(parse_ip_sloppy("").is_none());
        assert!(parse_ip_sloppy("1.2.3.+4").is_none());
        assert!(is_ipv6_string("2001:db8::1"));
        assert!(!is_ipv6_string("::ffff:1.2.3.4"));
        // Go's parser takes an IPv6 group of more than four digits when it fits 16 bits.
        assert_eq!(parse_ip_sloppy("00001::"), Some("1::".parse().unwrap()));
        assert!(parse_ip_sloppy("10000::").is_none());
        assert!(parse_ip_sloppy("fe80::1%eth0").is_none());
        assert!(parse_ip_sloppy(" 1.2.3.4").is_none());
    }

    #[test]
    fn sloppy_cidrs_and_families() {
        let v4: IpAddr = "1.2.3.4".parse().unwrap();
        assert_eq!(parse_cidr_sloppy("1.2.3.4/24"), Some((v4, 24)));
        assert_eq!(parse_cidr_sloppy("001.2.3.4/024"), Some((v4, 24)));
        // IPv4-mapped text: an IPv4 network when the prefix keeps the mapping bits...
        assert_eq!(parse_cidr_sloppy("::ffff:1.2.3.4/120"), Some((v4, 24)));
        // ... and an IPv6 one otherwise, which Go accepts as well.
        assert_eq!(
            parse_cidr_sloppy("::ffff:1.2.3.4/64"),
            Some(("::ffff:1.2.3.4".parse().unwrap(), 64))
        );
        assert!(is_valid_cidr(&Path::new("c"), "::ffff:1.2.3.0/64").is_empty());
        assert_eq!(
            is_dual_stack_cidrs(&["10.0.0.0/8".into(), "::ffff:0:0/64".into()]),
            Some(true)
        );
        assert_eq!(
            is_dual_stack_cidrs(&["10.0.0.0/8".into(), "::ffff:10.0.0.0/104".into()]),
            Some(false)
        );
        assert_eq!(is_dual_stack_cidrs(&["10.0.0.0/8".into(), "x".into()]), None);
        assert!(parse_cidr_sloppy("10.0.0.0/4294967297").is_none());
        assert!(parse_cidr_sloppy("10.0.0.0/-1").is_none());
    }

    #[test]
    fn cidrs() {
        let p = Path::new("c");
        assert!(is_valid_cidr(&p, "10.0.0.0/8").is_empty());
        assert!(is_valid_cidr(&p, "192.168.0.1/24").is_empty());
        assert!(is_valid_cidr(&p, "010.0.0.0/8").is_empty());
        assert_eq!(is_valid_cidr(&p, "10.0.0.0").len(), 1);
        assert_eq!(is_valid_cidr(&p, "10.0.0.0/33").len(), 1);
        assert_eq!(is_valid_cidr(&p, "").len(), 1);
        assert!(is_valid_canonical_cidr(&p, "192.168.0.0/24").is_empty());
        assert!(is_valid_canonical_cidr(&p, "fd00:1234::/64").is_empty());
        assert_eq!(is_valid_canonical_cidr(&p, "192.168.007.0/24").len(), 1);
        assert_eq!(is_valid_canonical_cidr(&p, "192.168.0.1/24").len(), 1);
        assert_eq!(is_valid_canonical_cidr(&p, "fd00:1234::2/64").len(), 1);
        assert_eq!(is_valid_canonical_cidr(&p, "FD00:1234::2/64").len(), 1);
        assert_eq!(is_valid_canonical_cidr(&p, "FD00:1234::/64").len(), 1);
        assert_eq!(is_valid_canonical_cidr(&p, "192.168.0.1").len(), 1);
        assert_eq!(is_valid_canonical_cidr(&p, "10.0.0.0/08").len(), 1);
    }

    #[test]
    fn canonical_ips() {
        let p = Path::new("ip");
        assert!(is_valid_canonical_ip(&p, "10.0.0.1").is_empty());
        assert!(is_valid_canonical_ip(&p, "2001:db8::1").is_empty());
        assert_eq!(is_valid_canonical_ip(&p, "2001:DB8::1").len(), 1);
        assert_eq!(is_valid_canonical_ip(&p, "2001:db8:0::1").len(), 1);
        assert_eq!(is_valid_canonical_ip(&p, "010.0.0.1").len(), 1);
        assert_eq!(is_valid_canonical_ip(&p, "10.0.0.0/8").len(), 1);
    }

    #[test]
    fn special_ips() {
        let p = Path::new("ip");
        assert!(validate_non_special_ip(&p, "1.2.3.4").is_empty());
        assert_eq!(validate_non_special_ip(&p, "0.0.0.0").len(), 1);
        assert_eq!(validate_non_special_ip(&p, "127.0.0.1").len(), 1);
        assert_eq!(validate_non_special_ip(&p, "169.254.1.1").len(), 1);
        assert_eq!(validate_non_special_ip(&p, "224.0.0.1").len(), 1);
        assert_eq!(validate_non_special_ip(&p, "::").len(), 1);
        assert_eq!(validate_non_special_ip(&p, "::1").len(), 1);
        assert_eq!(validate_non_special_ip(&p, "fe80::1").len(), 1);
        assert_eq!(validate_non_special_ip(&p, "ff02::1").len(), 1);
        assert_eq!(validate_non_special_ip(&p, "ff12::1").len(), 1);
        assert!(validate_non_special_ip(&p, "ff05::1").is_empty());
    }
}
