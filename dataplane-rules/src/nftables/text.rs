//! A text buffer for the rule text and element keys the proxier writes: bytes appended
//! without per-character checks (numbers and IPv4 addresses through digit tables, a few
//! bytes at a time), turned into a [`SharedStr`] once per finished string.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); it prints numbers and addresses
//! exactly as Go's `strconv` and `net.IP.String()` (and Rust's `Display`) print them.

#[cfg(test)]
use super::input::NftEndpoint;
use super::input::NftEndpointView;
use super::object::SharedStr;
use std::net::{IpAddr, Ipv4Addr};

/// Every number below 1000 in decimal, its digits left-aligned and followed by a `.`
/// (what an address octet needs), with the number of digits (one load gives both: no
/// comparisons to count them).
#[derive(Clone, Copy)]
struct Digits {
    bytes: [u8; 4],
    len: u8,
}

const DIGITS: [Digits; 1000] = {
    let mut t = [Digits {
        bytes: [0; 4],
        len: 0,
    }; 1000];
    let mut i = 0;
    while i < 1000 {
        let (a, b, c) = ((i / 100) as u8, ((i / 10) % 10) as u8, (i % 10) as u8);
        t[i] = if i >= 100 {
            Digits {
                bytes: [b'0' + a, b'0' + b, b'0' + c, b'.'],
                len: 3,
            }
        } else if i >= 10 {
            Digits {
                bytes: [b'0' + b, b'0' + c, b'.', 0],
                len: 2,
            }
        } else {
            Digits {
                bytes: [b'0' + c, b'.', 0, 0],
                len: 1,
            }
        };
        i += 1;
    }
    t
};

/// A piece of text (a number, an address, a map entry) built in a fixed-size array:
/// each write copies four bytes and advances by the real size, and the piece is appended
/// to a [`Text`] as one fixed-size copy. (The array is borrowed so that the length stays
/// in a register.)
struct Piece<'a, const N: usize> {
    bytes: &'a mut [u8; N],
    len: usize,
}

impl<'a, const N: usize> Piece<'a, N> {
    #[inline(always)]
    fn new(bytes: &'a mut [u8; N]) -> Self {
        Piece { bytes, len: 0 }
    }

    /// Copies the four bytes of `t`, keeping `n` of them (`N` leaves room for the rest).
    #[inline(always)]
    fn put4(&mut self, t: [u8; 4], n: usize) {
        if let Some(dst) = self.bytes.get_mut(self.len..self.len + 4) {
            dst.copy_from_slice(&t);
            self.len += n;
        }
    }

    /// `n` (below 1000) in decimal, and `dot` (0 or 1) dots after it.
    #[inline(always)]
    fn num(&mut self, n: usize, dot: usize) {
        let d = DIGITS[n];
        self.put4(d.bytes, usize::from(d.len) + dot);
    }

    #[inline(always)]
    fn put3(&mut self, s: &[u8; 3]) {
        self.put4([s[0], s[1], s[2], 0], 3);
    }

    /// `n` in decimal (at most 5 digits).
    #[inline(always)]
    fn dec16(&mut self, n: u16) {
        let n = usize::from(n);
        if n < 1000 {
            self.num(n, 0);
        } else {
            self.num(n / 1000, 0);
            let lo = n % 1000;
            self.put4(
                [
                    b'0' + (lo / 100) as u8,
                    b'0' + (lo / 10 % 10) as u8,
                    b'0' + (lo % 10) as u8,
                    0,
                ],
                3,
            );
        }
    }

    /// `n` in decimal (at most 20 digits).
    fn dec(&mut self, n: u64) {
        if let Ok(n) = u16::try_from(n) {
            return self.dec16(n);
        }
        let mut buf = [0u8; 20];
        let mut i = buf.len();
        let mut n = n;
        while n > 0 {
            i -= 1;
            buf[i] = b'0' + (n % 10) as u8;
            n /= 10;
        }
        for b in &buf[i..] {
            self.put4([*b, 0, 0, 0], 1);
        }
    }

    /// An IPv4 address as `Display` prints it (at most 15 bytes).
    #[inline(always)]
    fn v4(&mut self, ip: Ipv4Addr) {
        let [a, b, c, d] = ip.octets().map(usize::from);
        // each of the first three with its dot
        self.num(a, 1);
        self.num(b, 1);
        self.num(c, 1);
        self.num(d, 0);
    }
}

/// Text built as bytes (cheaper than `String::push` per character) and turned into a
/// [`SharedStr`] once; only `&str`s and ASCII digits go in, so it is always UTF-8.
#[derive(Debug, Clone, Default)]
pub(crate) struct Text(pub(crate) Vec<u8>);

impl Text {
    pub(crate) fn with_capacity(n: usize) -> Self {
        Text(Vec::with_capacity(n))
    }

    /// Empties the buffer (keeping its capacity).
    pub(crate) fn clear(&mut self) -> &mut Self {
        self.0.clear();
        self
    }

    /// The text so far as a [`SharedStr`] (the buffer stays as it is).
    pub(crate) fn shared(&self) -> SharedStr {
        match std::str::from_utf8(&self.0) {
            Ok(s) => SharedStr::from(s),
            Err(_) => SharedStr::from(String::from_utf8_lossy(&self.0).into_owned()),
        }
    }

    /// `parts` joined, as a [`SharedStr`] (written as a `String` in the buffer's room:
    /// `&str`s only, so no UTF-8 check of the result); the buffer is left empty.
    pub(crate) fn shared_concat(&mut self, parts: &[&str]) -> SharedStr {
        self.0.clear();
        // (empty, so the conversion cannot fail)
        let mut s = String::from_utf8(std::mem::take(&mut self.0)).unwrap_or_default();
        for p in parts {
            s.push_str(p);
        }
        let out = SharedStr::from(s.as_str());
        s.clear();
        self.0 = s.into_bytes();
        out
    }

    pub(crate) fn str(&mut self, s: &str) -> &mut Self {
        self.0.extend_from_slice(s.as_bytes());
        self
    }

    /// Appends what `f` writes into an `N`-byte piece (one fixed-size copy, then the
    /// length set).
    #[inline(always)]
    fn piece<const N: usize>(&mut self, f: impl FnOnce(&mut Piece<'_, N>)) -> &mut Self {
        let mut bytes = [0u8; N];
        let mut p = Piece::new(&mut bytes);
        f(&mut p);
        let end = self.0.len() + p.len;
        self.0.extend_from_slice(&bytes);
        self.0.truncate(end);
        self
    }

    /// `n` in decimal.
    pub(crate) fn dec(&mut self, n: impl Into<u64>) -> &mut Self {
        let n: u64 = n.into();
        self.piece::<24>(|p| p.dec(n))
    }

    /// An address as `Display` prints it.
    pub(crate) fn ip(&mut self, ip: IpAddr) -> &mut Self {
        match ip {
            IpAddr::V4(v4) => self.piece::<20>(|p| p.v4(v4)),
            IpAddr::V6(v6) => {
                let _ = std::io::Write::write_fmt(&mut self.0, format_args!("{v6}"));
                self
            }
        }
    }

    /// `ip:port` as `SocketAddr`'s `Display` prints it (`[v6]:port`).
    pub(crate) fn socket(&mut self, ip: IpAddr, port: u16) -> &mut Self {
        if ip.is_ipv6() {
            self.0.push(b'[');
            self.ip(ip);
            self.0.push(b']');
        } else {
            self.ip(ip);
        }
        self.0.push(b':');
        self.dec(port)
    }

    /// The entries of a numgen DNAT map: `0 : ADDR . PORT , 1 : ADDR . PORT ...`.
    pub(crate) fn map_entries<E: NftEndpointView>(&mut self, eps: &[E]) -> &mut Self {
        let v4 = eps.len() <= 1 << 16 && eps.iter().all(|ep| ep.ip().is_ipv4());
        if v4 {
            // Each entry (`, I : A.B.C.D . P`: at most 34 bytes, and 3 written past its
            // end) is written in place, in a 40-byte window of the buffer grown once by
            // what the entries may take (the last window ends 6 bytes past 34 per
            // entry), which is then cut to what they took.
            let start = self.0.len();
            self.0.resize(start + eps.len() * 34 + 6, 0);
            let mut at = start;
            for (i, ep) in eps.iter().enumerate() {
                let (IpAddr::V4(ip), Some(window)) = (
                    ep.ip(),
                    self.0.get_mut(at..).and_then(|b| b.first_chunk_mut::<40>()),
                ) else {
                    continue;
                };
                let mut p = Piece::new(window);
                if i > 0 {
                    p.put3(b" , ");
                }
                p.dec16(i as u16);
                p.put3(b" : ");
                p.v4(ip);
                p.put3(b" . ");
                p.dec16(ep.port());
                at += p.len;
            }
            self.0.truncate(at);
            return self;
        }
        for (i, ep) in eps.iter().enumerate() {
            if i > 0 {
                self.str(" , ");
            }
            self.dec(i as u64)
                .str(" : ")
                .ip(ep.ip())
                .str(" . ")
                .dec(ep.port());
        }
        self
    }

    /// The text as a `String` (tests).
    #[cfg(test)]
    pub(crate) fn finish(self) -> String {
        String::from_utf8(self.0).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_numbers_and_addresses_as_display_does() {
        for ip in [
            "0.0.0.0",
            "10.128.0.1",
            "9.99.100.255",
            "255.255.255.255",
            "100.10.1.0",
            "fd00::1",
            "::ffff:1.2.3.4",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            let mut t = Text::with_capacity(0);
            t.ip(ip);
            assert_eq!(t.finish(), ip.to_string());
            let mut t = Text::with_capacity(0);
            t.socket(ip, 8080);
            assert_eq!(t.finish(), std::net::SocketAddr::new(ip, 8080).to_string());
            let eps: Vec<NftEndpoint> = [80, 65535, 1000, 999, 1, 1001, 0, 100, 10, 9, 99]
                .into_iter()
                .map(|port| NftEndpoint {
                    ip,
                    port,
                    is_local: false,
                })
                .collect();
            let mut t = Text::with_capacity(0);
            t.str("{ ").map_entries(&eps).str(" }");
            let want: Vec<String> = eps
                .iter()
                .enumerate()
                .map(|(i, ep)| format!("{i} : {ip} . {}", ep.port))
                .collect();
            assert_eq!(t.finish(), format!("{{ {} }}", want.join(" , ")));
        }
        for n in [
            0u64,
            7,
            10,
            80,
            99,
            100,
            255,
            256,
            999,
            1000,
            1001,
            10_000,
            65535,
            999_999,
            1_000_000,
            u64::MAX,
        ] {
            let mut t = Text::with_capacity(0);
            t.dec(n);
            assert_eq!(t.finish(), n.to_string());
        }
        for n in 0..=70_000u64 {
            let mut t = Text::with_capacity(0);
            t.dec(n).str("x");
            assert_eq!(t.finish(), format!("{n}x"));
        }
        let eps: Vec<NftEndpoint> = (0..1100u32)
            .map(|n| NftEndpoint {
                ip: IpAddr::from((0x0a80_0000 + n * 997).to_be_bytes()),
                port: (n * 61) as u16,
                is_local: false,
            })
            .collect();
        let mut t = Text::with_capacity(0);
        t.map_entries(&eps);
        let want: Vec<String> = eps
            .iter()
            .enumerate()
            .map(|(i, ep)| format!("{i} : {} . {}", ep.ip, ep.port))
            .collect();
        assert_eq!(t.finish(), want.join(" , "));
        for b in 0..=255u8 {
            for ip in [
                IpAddr::from([b, 0, 255 - b, b / 3]),
                IpAddr::from([b / 2, b, b, 255 - b]),
            ] {
                let mut t = Text::with_capacity(0);
                t.ip(ip).str("x");
                assert_eq!(t.finish(), format!("{ip}x"));
            }
        }
    }
}
