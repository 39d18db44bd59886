//! Addresses and CIDRs read the way the API server's lenient parsers read them: Go 1.16's
//! `net.ParseIP` / `net.ParseCIDR` as Kubernetes keeps them (`ParseIPSloppy`,
//! `ParseCIDRSloppy` of `k8s.io/utils/net`), with Go's 16-byte address form and `net.IPNet`
//! containment.
//!
//! One parser for the whole crate: validation (`names`, NetworkPolicy `ipBlock`s) and
//! reachability both read addresses here. What the lenient parse accepts beyond the strict
//! one: decimal IPv4 octets and prefix lengths with leading zeros, IPv6 groups with more than
//! four hex digits (as long as the value fits 16 bits), and IPv4-mapped IPv6 text. Zones
//! (`%eth0`), signs, spaces and octal or hex IPv4 forms are refused, as Go refuses them.

use std::net::IpAddr;

/// An address as 16 bytes (IPv4 in its IPv4-mapped form), as Go's `net.IP` holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GoIp(pub(crate) [u8; 16]);

const V4_PREFIX: [u8; 12] = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff];

impl GoIp {
    /// The 16-byte form of a std address (IPv4 becomes IPv4-mapped).
    pub(crate) fn from_std(ip: IpAddr) -> GoIp {
        match ip {
            IpAddr::V4(v4) => GoIp(v4.to_ipv6_mapped().octets()),
            IpAddr::V6(v6) => GoIp(v6.octets()),
        }
    }

    /// The address as a std value: IPv4 when it is IPv4 or IPv4-mapped (as Go's `To4`
    /// reads it), else IPv6.
    pub(crate) fn to_std(self) -> IpAddr {
        match self.to4() {
            Some(four) => IpAddr::from(four),
            None => IpAddr::from(self.0),
        }
    }

    /// The 4-byte form when the address is IPv4 or IPv4-mapped (Go's `To4`).
    fn to4(self) -> Option<[u8; 4]> {
        if self.0[..12] == V4_PREFIX {
            Some([self.0[12], self.0[13], self.0[14], self.0[15]])
        } else {
            None
        }
    }
}

/// A parsed CIDR: the masked network and the prefix as `ParseCIDRSloppy` returns them,
/// plus what the strict check looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GoNet {
    /// Whether the address part was IPv4 text (4-byte network and mask).
    pub(crate) v4: bool,
    /// The network address (host bits cleared), 16-byte form.
    pub(crate) ip: [u8; 16],
    /// The prefix length as written.
    pub(crate) ones: u8,
    /// Leading zeros in an IPv4 octet, an over-long IPv6 group or the prefix length.
    pub(crate) leading_zeros: bool,
    /// IPv6 text holding an IPv4-mapped address.
    pub(crate) mapped: bool,
    /// The address as written (16-byte form), before masking.
    pub(crate) addr: [u8; 16],
}

fn mask_bytes(ones: u8, len: usize) -> [u8; 16] {
    let mut m = [0u8; 16];
    let mut left = usize::from(ones);
    for b in m.iter_mut().take(len) {
        let n = left.min(8);
        *b = if n == 0 { 0 } else { 0xffu8 << (8 - n) };
        left -= n;
    }
    m
}

impl GoNet {
    /// Bits set beyond the prefix length in the address as written.
    pub(crate) fn host_bits(&self) -> bool {
        self.ip != self.addr
    }

    /// Whether Go's helpers (`IsIPv4CIDR`, `IsIPv6CIDR`) count the network as IPv4: the
    /// masked network address is IPv4 or IPv4-mapped. An IPv4-mapped CIDR with a prefix
    /// shorter than 96 loses the mapping bits and counts as IPv6.
    pub(crate) fn network_is_v4(&self) -> bool {
        GoIp(self.ip).to4().is_some()
    }

    /// The prefix length counted in the bits of the network's family ([`Self::network_is_v4`]):
    /// for IPv6 text holding an IPv4 network, the 96 mapping bits are not counted.
    pub(crate) fn family_prefix(&self) -> u8 {
        if self.network_is_v4() && !self.v4 {
            self.ones.saturating_sub(96)
        } else {
            self.ones
        }
    }

    /// Go's `(*IPNet).Contains`.
    pub(crate) fn contains(&self, ip: &GoIp) -> bool {
        // The network number and mask as Go's networkNumberAndMask derives them.
        let (nn, mask): (Vec<u8>, Vec<u8>) = if self.v4 {
            (self.ip[12..].to_vec(), mask_bytes(self.ones, 4)[..4].to_vec())
        } else {
            let full = mask_bytes(self.ones, 16);
            match GoIp(self.ip).to4() {
                Some(four) => (four.to_vec(), full[12..].to_vec()),
                None => (self.ip.to_vec(), full.to_vec()),
            }
        };
        let addr: Vec<u8> = match ip.to4() {
            Some(four) => four.to_vec(),
            None => ip.0.to_vec(),
        };
        addr.len() == nn.len() && nn.iter().zip(&mask).zip(&addr).all(|((n, m), a)| n & m == a & m)
    }
}

/// Decimal digits at the start of `s`: (value, digits used), Go's `dtoi` (fails past 0xFFFFFF).
fn dtoi(s: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut i = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        n = n * 10 + u32::from(s[i] - b'0');
        if n >= 0xFF_FFFF {
            return None;
        }
        i += 1;
    }
    if i == 0 { None } else { Some((n, i)) }
}

/// Hex digits at the start of `s`: (value, digits used), Go's `xtoi`.
fn xtoi(s: &[u8]) -> Option<(u32, usize)> {
    let mut n: u32 = 0;
    let mut i = 0;
    while i < s.len() {
        let d = match s[i] {
            c @ b'0'..=b'9' => c - b'0',
            c @ b'a'..=b'f' => c - b'a' + 10,
            c @ b'A'..=b'F' => c - b'A' + 10,
            _ => break,
        };
        n = n * 16 + u32::from(d);
        if n >= 0xFF_FFFF {
            return None;
        }
        i += 1;
    }
    if i == 0 { None } else { Some((n, i)) }
}

/// Dotted-quad IPv4 with decimal octets (leading zeros allowed and flagged).
fn parse_v4(s: &[u8], zeros: &mut bool) -> Option<[u8; 4]> {
    let mut out = [0u8; 4];
    let mut rest = s;
    for (i, slot) in out.iter_mut().enumerate() {
        if rest.is_empty() {
            return None;
        }
        if i > 0 {
            if rest[0] != b'.' {
                return None;
            }
            rest = &rest[1..];
        }
        let (n, used) = dtoi(rest)?;
        if n > 0xFF {
            return None;
        }
        if used > 1 && rest[0] == b'0' {
            *zeros = true;
        }
        *slot = u8::try_from(n).ok()?;
        rest = &rest[used..];
    }
    if rest.is_empty() { Some(out) } else { None }
}

/// IPv6 text, with one `::` and an optional trailing dotted quad.
fn parse_v6(s: &[u8], zeros: &mut bool) -> Option<[u8; 16]> {
    let mut ip = [0u8; 16];
    let mut ellipsis: Option<usize> = None;
    let mut rest = s;
    if rest.len() >= 2 && rest[0] == b':' && rest[1] == b':' {
        ellipsis = Some(0);
        rest = &rest[2..];
        if rest.is_empty() {
            return Some(ip);
        }
    }
    let mut i = 0usize;
    while i < 16 {
        let (n, used) = xtoi(rest)?;
        if n > 0xFFFF {
            return None;
        }
        if used < rest.len() && rest[used] == b'.' {
            if ellipsis.is_none() && i != 12 {
                return None;
            }
            if i + 4 > 16 {
                return None;
            }
            let four = parse_v4(rest, zeros)?;
            ip[i..i + 4].copy_from_slice(&four);
            rest = &[];
            i += 4;
            break;
        }
        if used > 4 {
            *zeros = true;
        }
        ip[i] = u8::try_from(n >> 8).ok()?;
        ip[i + 1] = u8::try_from(n & 0xff).ok()?;
        i += 2;
        rest = &rest[used..];
        if rest.is_empty() {
            break;
        }
        if rest[0] != b':' || rest.len() == 1 {
            return None;
        }
        rest = &rest[1..];
        if rest[0] == b':' {
            if ellipsis.is_some() {
                return None;
            }
            ellipsis = Some(i);
            rest = &rest[1..];
            if rest.is_empty() {
                break;
            }
        }
    }
    if !rest.is_empty() {
        return None;
    }
    if i < 16 {
        let e = ellipsis?;
        let n = 16 - i;
        for j in (e..i).rev() {
            ip[j + n] = ip[j];
        }
        for b in ip.iter_mut().skip(e).take(n) {
            *b = 0;
        }
    } else if ellipsis.is_some() {
        return None;
    }
    Some(ip)
}

/// Go's `ParseIPSloppy`.
pub(crate) fn parse_ip_sloppy(s: &str) -> Option<GoIp> {
    let mut zeros = false;
    let b = s.as_bytes();
    if let Some(four) = parse_v4(b, &mut zeros) {
        return Some(GoIp::from_std(IpAddr::from(four)));
    }
    parse_v6(b, &mut zeros).map(GoIp)
}

/// Go's `ParseCIDRSloppy`, keeping what the strict check needs.
pub(crate) fn parse_cidr_sloppy(s: &str) -> Option<GoNet> {
    let slash = s.find('/')?;
    let (addr, mask) = (&s.as_bytes()[..slash], &s.as_bytes()[slash + 1..]);
    let mut leading_zeros = false;
    let (v4, ip) = match parse_v4(addr, &mut leading_zeros) {
        Some(four) => (true, GoIp::from_std(IpAddr::from(four)).0),
        None => (false, parse_v6(addr, &mut leading_zeros)?),
    };
    let (n, used) = dtoi(mask)?;
    let bits = if v4 { 32 } else { 128 };
    if used != mask.len() || n > bits {
        return None;
    }
    if used > 1 && mask[0] == b'0' {
        leading_zeros = true;
    }
    let ones = u8::try_from(n).ok()?;
    let mut masked = ip;
    let m = if v4 {
        let m4 = mask_bytes(ones, 4);
        let mut m = [0xffu8; 16];
        m[12..].copy_from_slice(&m4[..4]);
        m
    } else {
        mask_bytes(ones, 16)
    };
    for (b, mb) in masked.iter_mut().zip(m) {
        *b &= mb;
    }
    let mapped = !v4 && ip[..12] == V4_PREFIX;
    Some(GoNet {
        v4,
        ip: masked,
        ones,
        leading_zeros,
        mapped,
        addr: ip,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(s: &str) -> GoNet {
        parse_cidr_sloppy(s).unwrap_or_else(|| panic!("{s} should parse"))
    }

    fn ip(s: &str) -> GoIp {
        parse_ip_sloppy(s).unwrap_or_else(|| panic!("{s} should parse"))
    }

    #[test]
    fn sloppy_parse_accepts_what_go_accepts() {
        for ok in [
            "10.0.0.0/8",
            "010.0.0.0/8",
            "10.0.0.0/08",
            "192.168.1.1/24",
            "::/0",
            "fd00::/64",
            "FD00:0:0:0:0:0:0:0/64",
            "::ffff:1.2.3.0/120",
            "1:2:3:4:5:6:7::/128",
            "0.0.0.0/0",
        ] {
            assert!(parse_cidr_sloppy(ok).is_some(), "{ok}");
        }
        for bad in [
            "",
            " ",
            "192.168.5.6",
            "fd00:192:168::",
            "300.300.300.300/8",
            "10.0.0.0/33",
            "::/129",
            "10.0.0.0/",
            "10.0.0/8",
            "1::2::3/64",
            "1:2:3:4:5:6:7:8::/64",
            "10.0.0.0/+8",
            "fe80::1%eth0/64",
            "10.0.0.0/8 ",
        ] {
            assert!(parse_cidr_sloppy(bad).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn strict_flags() {
        assert!(net("010.0.0.0/8").leading_zeros);
        assert!(net("10.0.0.0/08").leading_zeros);
        assert!(!net("10.0.0.0/8").leading_zeros);
        assert!(net("00001::/16").leading_zeros);
        assert!(net("::ffff:1.2.3.0/120").mapped);
        assert!(net("192.168.1.1/24").host_bits());
        assert!(!net("192.168.1.0/24").host_bits());
        assert!(!net("fd00::/8").host_bits());
    }

    #[test]
    fn containment_follows_go() {
        let n = net("192.168.0.0/16");
        assert!(n.contains(&ip("192.168.3.4")));
        assert!(!n.contains(&ip("192.169.0.1")));
        assert!(!n.contains(&ip("fd00::1")));
        // An IPv4-mapped IPv6 address is read as IPv4.
        assert!(n.contains(&ip("::ffff:192.168.1.1")));
        // An IPv4-mapped network behaves like its IPv4 form.
        let mapped = net("::ffff:10.0.0.0/104");
        assert!(mapped.contains(&ip("10.1.2.3")));
        assert!(!mapped.contains(&ip("11.1.2.3")));
        let v6 = net("fd00::/8");
        assert!(v6.contains(&ip("fd12::1")));
        assert!(!v6.contains(&ip("10.0.0.1")));
        assert!(net("0.0.0.0/0").contains(&ip("1.2.3.4")));
        assert!(!net("0.0.0.0/0").contains(&ip("::1")));
    }

    #[test]
    fn network_family_and_prefix() {
        assert!(net("10.0.0.0/8").network_is_v4());
        assert_eq!(net("10.0.0.0/8").family_prefix(), 8);
        assert!(net("::ffff:10.0.0.0/104").network_is_v4());
        assert_eq!(net("::ffff:10.0.0.0/104").family_prefix(), 8);
        // Below 96 bits the mapping prefix is masked away: an IPv6 network.
        assert!(!net("::ffff:10.0.0.0/95").network_is_v4());
        assert_eq!(net("::ffff:10.0.0.0/95").family_prefix(), 95);
        assert!(!net("fd00::/8").network_is_v4());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, ..Default::default() })]

        /// On text std accepts, the lenient parser reads the same address (IPv4-mapped as IPv4).
        #[test]
        fn agrees_with_std_on_strict_text(raw in proptest::prelude::any::<[u8; 16]>(), v4 in proptest::prelude::any::<bool>()) {
            let std_ip = if v4 {
                IpAddr::from([raw[0], raw[1], raw[2], raw[3]])
            } else {
                IpAddr::from(raw)
            };
            let want = GoIp::from_std(std_ip);
            proptest::prop_assert_eq!(parse_ip_sloppy(&std_ip.to_string()), Some(want));
            if let IpAddr::V6(v6) = std_ip {
                // The fully expanded, upper-case form reads the same.
                let long: Vec<String> = v6.segments().iter().map(|g| format!("{g:04X}")).collect();
                proptest::prop_assert_eq!(parse_ip_sloppy(&long.join(":")), Some(want));
            }
            proptest::prop_assert_eq!(want.to_std(), match std_ip {
                IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(std_ip, IpAddr::V4),
                v4 => v4,
            });
            let bits = if v4 { 32 } else { 128 };
            for len in [0u8, 1, bits / 2, bits - 1, bits] {
                let n = parse_cidr_sloppy(&format!("{std_ip}/{len}"));
                // (Go's containment tells an IPv4-mapped address from an IPv6 network whose
                // prefix drops the mapping bits; random bytes almost never make one.)
                let mapped = !v4 && want.to4().is_some();
                proptest::prop_assert!(n.is_some_and(|n| (mapped || n.contains(&want)) && n.ones == len));
            }
        }
    }
}
