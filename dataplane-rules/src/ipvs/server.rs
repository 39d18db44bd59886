//! IPVS virtual servers and real servers, as kube-proxy's IPVS proxier programs them
//! (`pkg/proxy/ipvs/util/ipvs.go`).
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/ipvs/util/ipvs.go`.

use std::fmt;
use std::net::IpAddr;

use compact_str::CompactString;
use serde::{Deserialize, Serialize};

pub use crate::proxy::Protocol;

/// `ipvsadm`'s service option for a protocol (`-t`, `-u`, `--sctp-service`).
pub(crate) fn ipvsadm_option(p: Protocol) -> &'static str {
    match p {
        Protocol::Tcp => "-t",
        Protocol::Udp => "-u",
        Protocol::Sctp => "--sctp-service",
    }
}

/// Whether a removed real server of this protocol is drained (weight 0 until its
/// connections are gone) rather than deleted at once: TCP only, as
/// `IsRsGracefulTerminationNeeded`.
pub(crate) fn drains(p: Protocol) -> bool {
    p == Protocol::Tcp
}

/// The flags of a virtual server (`IP_VS_SVC_F_*`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Hash, Serialize, Deserialize)]
pub struct ServiceFlags(pub u32);

impl ServiceFlags {
    /// No flag.
    pub const NONE: ServiceFlags = ServiceFlags(0);
    /// Persistent connections: ClientIP session affinity (`FlagPersistent`).
    pub const PERSISTENT: ServiceFlags = ServiceFlags(0x1);
    /// Hashed entry (`FlagHashed`); kube-proxy never sets it.
    pub const HASHED: ServiceFlags = ServiceFlags(0x2);
    /// Scheduler flag 2 (`FlagSourceHash`): hash the source port too; set for the `mh` scheduler.
    pub const SOURCE_HASH: ServiceFlags = ServiceFlags(0x10);

    /// Whether every bit of `other` is set.
    pub fn contains(self, other: ServiceFlags) -> bool {
        self.0 & other.0 == other.0
    }

    /// The flag names kube-oracle and `svcnet rules --output json` print: `persistent`,
    /// `hashed`, `source-hash`, then any other bits as one hexadecimal number (`0x4`).
    pub fn names(self) -> Vec<String> {
        let mut rest = self.0;
        let mut out = Vec::new();
        for (bit, name) in [
            (Self::PERSISTENT.0, "persistent"),
            (Self::HASHED.0, "hashed"),
            (Self::SOURCE_HASH.0, "source-hash"),
        ] {
            if rest & bit != 0 {
                out.push(name.to_owned());
                rest &= !bit;
            }
        }
        if rest != 0 {
            out.push(format!("{rest:#x}"));
        }
        out
    }
}

impl std::ops::BitOr for ServiceFlags {
    type Output = ServiceFlags;
    fn bitor(self, rhs: ServiceFlags) -> ServiceFlags {
        ServiceFlags(self.0 | rhs.0)
    }
}

impl std::ops::BitOrAssign for ServiceFlags {
    fn bitor_assign(&mut self, rhs: ServiceFlags) {
        self.0 |= rhs.0;
    }
}

/// One IPVS destination of a virtual server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RealServer {
    /// The endpoint address.
    pub address: IpAddr,
    /// The endpoint port.
    pub port: u16,
    /// The scheduling weight: 1 for a live endpoint, 0 for one being drained.
    pub weight: i32,
}

impl RealServer {
    /// A real server with weight 1, as kube-proxy adds them.
    pub fn new(address: IpAddr, port: u16) -> Self {
        RealServer {
            address,
            port,
            weight: 1,
        }
    }

    /// The order kube-proxy's fake IPVS keeps destinations in, and `ipvsadm-save` text is
    /// printed in: by the `ip:port` text (`[ip]:port` for IPv6).
    pub fn text_cmp(&self, other: &RealServer) -> std::cmp::Ordering {
        TextOrder::of(self.address, self.port).cmp(&TextOrder::of(other.address, other.port))
    }
}

/// A key that orders `ip:port` pairs as their texts order (`[ip]:port` for IPv6), cheap to
/// build for IPv4. IPv4 text starts with a digit and IPv6 text with `[`, so every IPv4 pair
/// comes first.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum TextOrder {
    /// Each octet's digits and the character after it (`.`, or `:` after the last) in four
    /// bytes (zero-padded), then the port's digits in five (zero-padded). The pieces are
    /// prefix-free, so comparing them in turn compares the texts.
    V4(u128, u64),
    /// The IPv6 text.
    V6(TextKey),
}

impl TextOrder {
    pub(crate) fn of(address: IpAddr, port: u16) -> Self {
        match address {
            IpAddr::V4(a) => {
                let [a, b, c, d] = a.octets().map(usize::from);
                let k = u128::from(OCTET_DOT[a]) << 96
                    | u128::from(OCTET_DOT[b]) << 64
                    | u128::from(OCTET_DOT[c]) << 32
                    | u128::from(OCTET_COLON[d]);
                TextOrder::V4(k, port_digits(port))
            }
            IpAddr::V6(_) => TextOrder::V6(TextKey::of(address, port)),
        }
    }
}

/// How the texts `a:pa` and `b:pb` of two IPv4 real servers order, without building either
/// key: the texts share the octets before the first one that differs, and that octet's
/// digits with the character after it (`.`, or `:` after the last) decide, as in
/// [`TextOrder`]; equal addresses are ordered by the ports' digits.
#[inline]
pub(crate) fn v4_text_cmp(
    a: std::net::Ipv4Addr,
    pa: u16,
    b: std::net::Ipv4Addr,
    pb: u16,
) -> std::cmp::Ordering {
    let (x, y) = (u32::from(a), u32::from(b));
    if x == y {
        return if pa == pb {
            std::cmp::Ordering::Equal
        } else {
            port_digits(pa).cmp(&port_digits(pb))
        };
    }
    // the first octet that differs, 0 to 3
    let i = (x ^ y).leading_zeros() / 8;
    let shift = 24 - 8 * i;
    let (ox, oy) = (usize::from((x >> shift) as u8), usize::from((y >> shift) as u8));
    if i == 3 {
        OCTET_COLON[ox].cmp(&OCTET_COLON[oy])
    } else {
        OCTET_DOT[ox].cmp(&OCTET_DOT[oy])
    }
}

/// [`digits4`] of every octet with `.` after it.
static OCTET_DOT: [u32; 256] = octet_table(b'.');
/// [`digits4`] of every octet with `:` after it.
static OCTET_COLON: [u32; 256] = octet_table(b':');

/// [`digits4`] of every octet with `end` after it.
const fn octet_table(end: u8) -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut n = 0;
    while n < 256 {
        t[n] = digits4(n as u8, end);
        n += 1;
    }
    t
}

/// The decimal digits of `n` then `end`, left-aligned in four bytes (big-endian).
const fn digits4(n: u8, end: u8) -> u32 {
    let (h, t, u) = (n / 100, n / 10 % 10, n % 10);
    let b: [u8; 4] = if n >= 100 {
        [b'0' + h, b'0' + t, b'0' + u, end]
    } else if n >= 10 {
        [b'0' + t, b'0' + u, end, 0]
    } else {
        [b'0' + u, end, 0, 0]
    };
    u32::from_be_bytes(b)
}

/// The decimal digits of a port left-aligned in five bytes, zero-padded (a shorter text that
/// is a prefix of a longer one sorts first, as the zero does).
fn port_digits(mut p: u16) -> u64 {
    let mut d = [0u8; 5];
    let mut n = 0;
    loop {
        d[n] = b'0' + (p % 10) as u8;
        n += 1;
        p /= 10;
        if p == 0 {
            break;
        }
    }
    d[..n].reverse();
    let mut k: u64 = 0;
    for b in d {
        k = (k << 8) | u64::from(b);
    }
    k
}

/// The `ip:port` text of an address and port in a stack buffer, compared as bytes: sorting
/// by it sorts as kube-proxy's string order without allocating.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct TextKey {
    buf: [u8; 48],
    len: u8,
}

impl TextKey {
    pub(crate) fn of(address: IpAddr, port: u16) -> Self {
        let mut k = TextKey { buf: [0; 48], len: 0 };
        match address {
            IpAddr::V4(a) => {
                for (i, o) in a.octets().into_iter().enumerate() {
                    if i > 0 {
                        k.push(b'.');
                    }
                    k.push_num(u32::from(o));
                }
            }
            IpAddr::V6(a) => {
                use fmt::Write;
                k.push(b'[');
                let _ = write!(k, "{a}");
                k.push(b']');
            }
        }
        k.push(b':');
        k.push_num(u32::from(port));
        k
    }

    fn push(&mut self, b: u8) {
        // Sized for the longest key: a longer one is a bug, not input.
        self.buf[usize::from(self.len)] = b;
        self.len += 1;
    }

    fn push_num(&mut self, mut n: u32) {
        let mut digits = [0u8; 10];
        let mut i = digits.len();
        loop {
            i -= 1;
            digits[i] = b'0' + (n % 10) as u8;
            n /= 10;
            if n == 0 {
                break;
            }
        }
        for &d in &digits[i..] {
            self.push(d);
        }
    }

    fn bytes(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }
}

impl fmt::Write for TextKey {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        for b in s.bytes() {
            self.push(b);
        }
        Ok(())
    }
}

impl Ord for TextKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.bytes().cmp(other.bytes())
    }
}

impl PartialOrd for TextKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl fmt::Display for RealServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        HostPort(self.address, self.port).fmt(f)
    }
}

/// One IPVS virtual server (an IPVS "service") with its destinations.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VirtualServer {
    /// The virtual address: a ClusterIP, an external IP, a load-balancer IP or a node IP.
    pub address: IpAddr,
    /// The protocol.
    pub protocol: Protocol,
    /// The virtual port (the Service port, or the NodePort on node addresses).
    pub port: u16,
    /// The scheduler (`--ipvs-scheduler`, `rr` by default).
    pub scheduler: CompactString,
    /// The flags.
    pub flags: ServiceFlags,
    /// The persistence timeout in seconds (ClientIP affinity), 0 without affinity.
    pub timeout: u32,
    /// The destinations, in `ip:port` text order.
    pub real_servers: Vec<RealServer>,
}

impl VirtualServer {
    /// The identity of the virtual server: address, port, protocol.
    pub fn key(&self) -> VirtualServerKey {
        VirtualServerKey {
            address: self.address,
            port: self.port,
            protocol: self.protocol,
        }
    }
}

/// What identifies a virtual server in the kernel: address, port and protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct VirtualServerKey {
    /// The virtual address.
    pub address: IpAddr,
    /// The virtual port.
    pub port: u16,
    /// The protocol.
    pub protocol: Protocol,
}

impl VirtualServerKey {
    /// The order kube-oracle prints virtual servers in: address (as 16 bytes, IPv4 mapped),
    /// then port, then protocol name.
    pub fn output_cmp(&self, other: &VirtualServerKey) -> std::cmp::Ordering {
        self.output_key().cmp(&other.output_key())
    }

    /// A sort key giving the order of [`output_cmp`](Self::output_cmp).
    pub(crate) fn output_key(&self) -> (u128, u16, u8) {
        // By protocol name: SCTP < TCP < UDP.
        let proto = match self.protocol {
            Protocol::Sctp => 0,
            Protocol::Tcp => 1,
            Protocol::Udp => 2,
        };
        (u128::from_be_bytes(v16(self.address)), self.port, proto)
    }
}

impl fmt::Display for VirtualServerKey {
    /// `ip:port/PROTO`, as kube-proxy names a virtual server (`VirtualServer.String`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}/{}",
            HostPort(self.address, self.port),
            self.protocol.as_str()
        )
    }
}

fn v16(a: IpAddr) -> [u8; 16] {
    match a {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    }
}

/// `ip:port`, or `[ip]:port` for IPv6 (Go's `net.JoinHostPort`).
#[derive(Debug, Clone, Copy)]
pub(crate) struct HostPort(pub IpAddr, pub u16);

impl fmt::Display for HostPort {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            IpAddr::V4(a) => write!(f, "{a}:{}", self.1),
            IpAddr::V6(a) => write!(f, "[{a}]:{}", self.1),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flag_names_follow_kube_oracle() {
        assert!(ServiceFlags::NONE.names().is_empty());
        assert_eq!(
            (ServiceFlags::PERSISTENT | ServiceFlags::SOURCE_HASH).names(),
            ["persistent", "source-hash"]
        );
        assert_eq!(ServiceFlags(0x2 | 0x4).names(), ["hashed", "0x4"]);
    }

    #[test]
    fn real_servers_order_by_text() {
        let a = RealServer::new("10.0.0.10".parse().unwrap(), 80);
        let b = RealServer::new("10.0.0.2".parse().unwrap(), 80);
        assert_eq!(a.text_cmp(&b), std::cmp::Ordering::Less);
        let c = RealServer::new("fd00::1".parse().unwrap(), 8080);
        assert_eq!(c.to_string(), "[fd00::1]:8080");
        for (x, y) in [
            ("10.0.0.1", "9.0.0.1"),
            ("fd00::1:2", "fd00::2"),
            ("10.1.0.1", "10.10.0.1"),
        ] {
            let (x, y) = (
                RealServer::new(x.parse().unwrap(), 80),
                RealServer::new(y.parse().unwrap(), 80),
            );
            assert_eq!(x.text_cmp(&y), x.to_string().cmp(&y.to_string()), "{x} {y}");
        }
        let p = RealServer::new("10.0.0.1".parse().unwrap(), 8080);
        let q = RealServer::new("10.0.0.1".parse().unwrap(), 80);
        assert_eq!(p.text_cmp(&q), p.to_string().cmp(&q.to_string()));
    }

    #[test]
    fn text_order_is_text_order() {
        // Octets and ports of every length, next to each other.
        let octets = [0u8, 1, 2, 9, 10, 12, 19, 99, 100, 101, 120, 199, 200, 255];
        let ports = [0u16, 1, 8, 80, 800, 8080, 9, 65535, 6553, 10, 100];
        let mut all: Vec<RealServer> = Vec::new();
        for &a in &octets {
            for &d in &octets {
                for &p in &ports {
                    let ip = std::net::Ipv4Addr::new(a, d, a, d);
                    all.push(RealServer::new(IpAddr::V4(ip), p));
                }
            }
        }
        all.push(RealServer::new("fd00::1".parse().unwrap(), 80));
        all.push(RealServer::new("::".parse().unwrap(), 1));
        for x in &all {
            for y in all.iter().step_by(29) {
                let want = x.to_string().cmp(&y.to_string());
                assert_eq!(x.text_cmp(y), want, "{x} {y}");
                if let (IpAddr::V4(a), IpAddr::V4(b)) = (x.address, y.address) {
                    assert_eq!(v4_text_cmp(a, x.port, b, y.port), want, "{x} {y}");
                }
            }
        }
        // Addresses that differ in one octet only, each octet in turn.
        for i in 0..4 {
            for &a in &octets {
                for &b in &octets {
                    let (mut x, mut y) = ([10u8, 20, 30, 40], [10u8, 20, 30, 40]);
                    x[i] = a;
                    y[i] = b;
                    let (x, y) = (
                        RealServer::new(IpAddr::from(x), 80),
                        RealServer::new(IpAddr::from(y), 8080),
                    );
                    let (IpAddr::V4(xa), IpAddr::V4(ya)) = (x.address, y.address) else {
                        unreachable!()
                    };
                    let want = x.to_string().cmp(&y.to_string());
                    assert_eq!(v4_text_cmp(xa, x.port, ya, y.port), want, "{x} {y}");
                }
            }
        }
    }

    #[test]
    fn virtual_server_names() {
        let k = VirtualServerKey {
            address: "fd00::5".parse().unwrap(),
            port: 53,
            protocol: Protocol::Udp,
        };
        assert_eq!(k.to_string(), "[fd00::5]:53/UDP");
        let a = VirtualServerKey {
            address: "10.0.0.9".parse().unwrap(),
            port: 80,
            protocol: Protocol::Tcp,
        };
        let b = VirtualServerKey {
            address: "10.0.0.10".parse().unwrap(),
            port: 53,
            protocol: Protocol::Tcp,
        };
        assert_eq!(a.output_cmp(&b), std::cmp::Ordering::Less);
        let c = VirtualServerKey {
            port: 80,
            protocol: Protocol::Sctp,
            ..a
        };
        assert_eq!(c.output_cmp(&a), std::cmp::Ordering::Less, "SCTP < TCP by name");
    }
}
