//! The iptables rule set as data: tables, chains, rules with their matches, targets and
//! comments, in kube-proxy v1.37.2's argument order.
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/iptables/proxier.go`.

use std::fmt::{self, Write as _};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use ipnet::IpNet;
use serde::{Serialize, Serializer};

use crate::proxy::Protocol;

/// The kind of a per-service chain (`KUBE-SVC-`, `KUBE-SVL-`, `KUBE-EXT-`, `KUBE-FW-`,
/// `KUBE-SEP-`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ServiceChainKind {
    /// `KUBE-SVC-`: cluster-policy load balancing.
    Svc,
    /// `KUBE-SVL-`: local-policy load balancing.
    Svl,
    /// `KUBE-EXT-`: external destinations.
    Ext,
    /// `KUBE-FW-`: load-balancer source ranges.
    Fw,
    /// `KUBE-SEP-`: one endpoint.
    Sep,
}

impl ServiceChainKind {
    /// The chain-name prefix.
    pub fn prefix(self) -> &'static str {
        match self {
            ServiceChainKind::Svc => "KUBE-SVC-",
            ServiceChainKind::Svl => "KUBE-SVL-",
            ServiceChainKind::Ext => "KUBE-EXT-",
            ServiceChainKind::Fw => "KUBE-FW-",
            ServiceChainKind::Sep => "KUBE-SEP-",
        }
    }
}

/// A chain name. Fixed names are static; per-service names carry their 16-character hash, so
/// a chain name never allocates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Chain {
    /// A fixed chain: kube-proxy's (`KUBE-SERVICES`, ...) or a built-in one (`INPUT`, ...).
    Fixed(&'static str),
    /// A per-service or per-endpoint chain.
    Service(ServiceChainKind, [u8; 16]),
}

/// `KUBE-SERVICES`.
pub const KUBE_SERVICES: Chain = Chain::Fixed("KUBE-SERVICES");
/// `KUBE-EXTERNAL-SERVICES`.
pub const KUBE_EXTERNAL_SERVICES: Chain = Chain::Fixed("KUBE-EXTERNAL-SERVICES");
/// `KUBE-FORWARD`.
pub const KUBE_FORWARD: Chain = Chain::Fixed("KUBE-FORWARD");
/// `KUBE-NODEPORTS`.
pub const KUBE_NODEPORTS: Chain = Chain::Fixed("KUBE-NODEPORTS");
/// `KUBE-PROXY-FIREWALL`.
pub const KUBE_PROXY_FIREWALL: Chain = Chain::Fixed("KUBE-PROXY-FIREWALL");
/// `KUBE-FIREWALL` (kubelet's, written with localhost NodePorts).
pub const KUBE_FIREWALL: Chain = Chain::Fixed("KUBE-FIREWALL");
/// `KUBE-POSTROUTING`.
pub const KUBE_POSTROUTING: Chain = Chain::Fixed("KUBE-POSTROUTING");
/// `KUBE-MARK-MASQ`.
pub const KUBE_MARK_MASQ: Chain = Chain::Fixed("KUBE-MARK-MASQ");

impl Chain {
    /// Writes the name.
    #[inline]
    pub fn write_to(&self, out: &mut String) {
        match self {
            Chain::Fixed(s) => out.push_str(s),
            Chain::Service(..) => {
                let mut buf = [0u8; 32];
                let n = self.fill(&mut buf);
                match name_text(&buf[..n]) {
                    Some(t) => out.push_str(t),
                    None => self.write_slow(out),
                }
            }
        }
    }

    /// Writes the name byte by byte (a hash that is not UTF-8 text, as `char`s).
    #[cold]
    pub(crate) fn write_slow(&self, out: &mut String) {
        match self {
            Chain::Fixed(s) => out.push_str(s),
            Chain::Service(kind, hash) => {
                out.push_str(kind.prefix());
                match std::str::from_utf8(hash) {
                    Ok(h) => out.push_str(h),
                    Err(_) => out.extend(hash.iter().map(|&b| char::from(b))),
                }
            }
        }
    }

    /// Puts a service chain's name at the start of `buf` (32 bytes hold every name) and
    /// returns its length: 0 for a fixed chain.
    #[inline]
    pub(crate) fn fill(&self, buf: &mut [u8; 32]) -> usize {
        match self {
            Chain::Fixed(_) => 0,
            Chain::Service(kind, hash) => {
                // Every prefix is 8 or 9 bytes: written as 9, the last one overwritten for 8.
                let p = kind.prefix().as_bytes();
                let at = p.len();
                let mut head = [b'-'; 9];
                head[..at.min(9)].copy_from_slice(&p[..at.min(9)]);
                buf[..9].copy_from_slice(&head);
                let at = at.min(9);
                buf[at..at + 16].copy_from_slice(hash);
                at + 16
            }
        }
    }
    /// The name's length in bytes.
    #[inline]
    pub(crate) fn text_len(&self) -> usize {
        match self {
            Chain::Fixed(s) => s.len(),
            Chain::Service(kind, hash) => kind.prefix().len() + hash.len(),
        }
    }

    /// Whether kube-proxy treats the chain as a service chain (`isServiceChainName`).
    pub fn is_service_chain(&self) -> bool {
        matches!(self, Chain::Service(..))
    }

    /// Reads a chain name (service chains by their prefix).
    pub fn parse(name: &str) -> Option<Chain> {
        for kind in [
            ServiceChainKind::Svc,
            ServiceChainKind::Svl,
            ServiceChainKind::Ext,
            ServiceChainKind::Fw,
            ServiceChainKind::Sep,
        ] {
            if let Some(rest) = name.strip_prefix(kind.prefix()) {
                let hash: [u8; 16] = rest.as_bytes().try_into().ok()?;
                return Some(Chain::Service(kind, hash));
            }
        }
        FIXED_NAMES.iter().find(|n| **n == name).map(|n| Chain::Fixed(n))
    }
}

/// Bytes of a rendered name as text (`None` for a hash that is not UTF-8, which
/// [`chain_hash`](crate::hash::chain_hash) never makes).
#[inline]
pub(crate) fn name_text(b: &[u8]) -> Option<&str> {
    std::str::from_utf8(b).ok()
}

/// Every fixed chain name the rule sets use.
const FIXED_NAMES: &[&str] = &[
    "KUBE-SERVICES",
    "KUBE-EXTERNAL-SERVICES",
    "KUBE-FORWARD",
    "KUBE-NODEPORTS",
    "KUBE-PROXY-FIREWALL",
    "KUBE-FIREWALL",
    "KUBE-POSTROUTING",
    "KUBE-MARK-MASQ",
    "INPUT",
    "OUTPUT",
    "FORWARD",
    "PREROUTING",
    "POSTROUTING",
];

impl fmt::Display for Chain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(25);
        self.write_to(&mut s);
        f.write_str(&s)
    }
}

impl Serialize for Chain {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// A rule comment. The service port's name is shared, not copied, between its rules.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Comment {
    /// A fixed text.
    Text(&'static str),
    /// The service port name alone (written without quotes).
    Service(Arc<str>),
    /// `"<prefix><service><suffix>"`, e.g. `"S cluster IP"`,
    /// `"masquerade traffic for S external destinations"`.
    Around(&'static str, Arc<str>, &'static str),
    /// `"S traffic not accepted by KUBE-FW-…"`.
    NotAccepted(Arc<str>, Chain),
    /// `"S -> ip:port"`.
    Endpoint(Arc<str>, SocketAddr),
}

impl Comment {
    /// Writes the comment as kube-proxy writes the argument (quoted unless it is the bare
    /// service port name).
    pub fn write_to(&self, out: &mut String) {
        match self {
            Comment::Service(s) => out.push_str(s),
            _ => {
                out.push('"');
                self.write_text(out);
                out.push('"');
            }
        }
    }

    /// Writes the comment's text, unquoted.
    pub fn write_text(&self, out: &mut String) {
        match self {
            Comment::Text(t) => out.push_str(t),
            Comment::Service(s) => out.push_str(s),
            Comment::Around(pre, s, post) => {
                out.push_str(pre);
                out.push_str(s);
                out.push_str(post);
            }
            Comment::NotAccepted(s, chain) => {
                out.push_str(s);
                out.push_str(" traffic not accepted by ");
                chain.write_to(out);
            }
            Comment::Endpoint(s, ep) => {
                out.push_str(s);
                out.push_str(" -> ");
                write_socket(out, *ep);
            }
        }
    }
}

impl Serialize for Comment {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut t = String::new();
        self.write_text(&mut t);
        s.serialize_str(&t)
    }
}

/// An address argument: a bare IP (`-d 172.30.0.41`) or a CIDR (`-d 127.0.0.0/8`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(untagged)]
pub enum Addr {
    /// An address.
    Ip(IpAddr),
    /// A network.
    Net(IpNet),
}

impl Addr {
    pub(crate) fn write_to(&self, out: &mut String) {
        match self {
            Addr::Ip(ip) => write_ip(out, *ip),
            Addr::Net(n) => {
                write_ip(out, n.addr());
                out.push('/');
                push_u32(out, u32::from(n.prefix_len()));
            }
        }
    }
}

/// One match of a rule, written in the order the rule lists them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Match {
    /// `-m comment --comment C`.
    Comment(Comment),
    /// `-m p -p p`.
    Protocol(Protocol),
    /// `-p p` alone (after a `-m` that names another module).
    ProtocolOnly(Protocol),
    /// `[!] -s A`.
    Source {
        /// `!`.
        negated: bool,
        /// The address.
        addr: Addr,
    },
    /// `[!] -d A`.
    Destination {
        /// `!`.
        negated: bool,
        /// The address.
        addr: Addr,
    },
    /// `--dport N`.
    DestinationPort(u16),
    /// `-m addrtype --dst-type LOCAL`.
    DestinationLocal,
    /// `-m addrtype --src-type LOCAL`.
    SourceLocal,
    /// `-m mark [!] --mark M/M`.
    Mark {
        /// `!`.
        negated: bool,
        /// The mark text.
        #[serde(serialize_with = "ser_arc")]
        mark: Arc<str>,
    },
    /// `-m conntrack [!] --ctstate S`.
    Conntrack {
        /// `!`.
        negated: bool,
        /// The states (`INVALID`, `RELATED,ESTABLISHED`, ...).
        states: &'static str,
    },
    /// `-m nfacct --nfacct-name N`.
    Nfacct(&'static str),
    /// `-m statistic --mode random --probability P` with P = 1/n printed as `%0.10f`.
    Probability(u32),
    /// `-m recent --name C --rcheck --seconds N --reap`.
    RecentCheck {
        /// The endpoint chain naming the list.
        name: Chain,
        /// The affinity timeout.
        seconds: u32,
    },
    /// `-m recent --name C --set`.
    RecentSet(Chain),
    /// Match text read from a rule set (see [`parse_transaction`](super::parse_transaction)) that is none of the above,
    /// kept verbatim (from its first unknown option up to the target). Tracing a rule that
    /// reaches it is an error, never a guess.
    #[serde(serialize_with = "ser_arc")]
    Unsupported(Arc<str>),
}

/// What a rule does.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Target {
    /// No `-j` (the rule only counts).
    None,
    /// `-j CHAIN`.
    Jump(Chain),
    /// `-j ACCEPT`.
    Accept,
    /// `-j DROP`.
    Drop,
    /// `-j REJECT`.
    Reject,
    /// `-j RETURN`.
    Return,
    /// `-j DNAT --to-destination ip:port`.
    Dnat(SocketAddr),
    /// `-j MARK --xor-mark M`.
    XorMark(#[serde(serialize_with = "ser_arc")] Arc<str>),
    /// `-j MARK --or-mark M`.
    OrMark(#[serde(serialize_with = "ser_arc")] Arc<str>),
    /// `-j MASQUERADE --random-fully`.
    MasqueradeRandomFully,
    /// Target text read from a rule set (see [`parse_transaction`](super::parse_transaction)) that is none of the
    /// above (`-j LOG ...`, `-g CHAIN`, a jump to a chain kube-proxy does not write), kept
    /// verbatim. Tracing a rule that reaches it is an error, never a guess.
    Unsupported(#[serde(serialize_with = "ser_arc")] Arc<str>),
}

/// One rule: `-A CHAIN matches... target`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub struct Rule {
    /// The chain it is appended to.
    pub chain: Chain,
    /// Its matches, in order.
    pub matches: Vec<Match>,
    /// Its target.
    pub target: Target,
}

impl Rule {
    /// A rule.
    pub fn new(chain: Chain, matches: Vec<Match>, target: Target) -> Self {
        Rule {
            chain,
            matches,
            target,
        }
    }

    /// Writes `-A CHAIN ...` (without a newline).
    pub fn write_to(&self, out: &mut String) {
        out.push_str("-A ");
        self.chain.write_to(out);
        for m in &self.matches {
            write_match(out, m);
        }
        write_target(out, &self.target);
    }

    /// The comment, if the rule has one.
    pub fn comment(&self) -> Option<&Comment> {
        self.matches.iter().find_map(|m| match m {
            Match::Comment(c) => Some(c),
            _ => None,
        })
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::with_capacity(128);
        self.write_to(&mut s);
        f.write_str(&s)
    }
}

pub(crate) fn write_match(out: &mut String, m: &Match) {
    match m {
        Match::Comment(c) => {
            out.push_str(" -m comment --comment ");
            c.write_to(out);
        }
        Match::Protocol(p) => {
            out.push_str(" -m ");
            out.push_str(p.lower());
            out.push_str(" -p ");
            out.push_str(p.lower());
        }
        Match::ProtocolOnly(p) => {
            out.push_str(" -p ");
            out.push_str(p.lower());
        }
        Match::Source { negated, addr } => {
            out.push_str(if *negated { " ! -s " } else { " -s " });
            addr.write_to(out);
        }
        Match::Destination { negated, addr } => {
            out.push_str(if *negated { " ! -d " } else { " -d " });
            addr.write_to(out);
        }
        Match::DestinationPort(p) => {
            out.push_str(" --dport ");
            push_u32(out, u32::from(*p));
        }
        Match::DestinationLocal => out.push_str(" -m addrtype --dst-type LOCAL"),
        Match::SourceLocal => out.push_str(" -m addrtype --src-type LOCAL"),
        Match::Mark { negated, mark } => {
            out.push_str(if *negated {
                " -m mark ! --mark "
            } else {
                " -m mark --mark "
            });
            out.push_str(mark);
            out.push('/');
            out.push_str(mark);
        }
        Match::Conntrack { negated, states } => {
            out.push_str(if *negated {
                " -m conntrack ! --ctstate "
            } else {
                " -m conntrack --ctstate "
            });
            out.push_str(states);
        }
        Match::Nfacct(name) => {
            out.push_str(" -m nfacct --nfacct-name ");
            out.push_str(name);
        }
        Match::Probability(n) => {
            out.push_str(" -m statistic --mode random --probability ");
            write_probability(out, *n);
        }
        Match::RecentCheck { name, seconds } => {
            out.push_str(" -m recent --name ");
            name.write_to(out);
            out.push_str(" --rcheck --seconds ");
            push_u32(out, *seconds);
            out.push_str(" --reap");
        }
        Match::RecentSet(name) => {
            out.push_str(" -m recent --name ");
            name.write_to(out);
            out.push_str(" --set");
        }
        Match::Unsupported(text) => {
            out.push(' ');
            out.push_str(text);
        }
    }
}

pub(crate) fn write_target(out: &mut String, t: &Target) {
    match t {
        Target::None => {}
        Target::Jump(c) => {
            out.push_str(" -j ");
            c.write_to(out);
        }
        Target::Accept => out.push_str(" -j ACCEPT"),
        Target::Drop => out.push_str(" -j DROP"),
        Target::Reject => out.push_str(" -j REJECT"),
        Target::Return => out.push_str(" -j RETURN"),
        Target::Dnat(ep) => {
            out.push_str(" -j DNAT --to-destination ");
            write_socket(out, *ep);
        }
        Target::XorMark(m) => {
            out.push_str(" -j MARK --xor-mark ");
            out.push_str(m);
        }
        Target::OrMark(m) => {
            out.push_str(" -j MARK --or-mark ");
            out.push_str(m);
        }
        Target::MasqueradeRandomFully => out.push_str(" -j MASQUERADE --random-fully"),
        Target::Unsupported(text) => {
            out.push(' ');
            out.push_str(text);
        }
    }
}

fn ser_arc<S: Serializer>(v: &Arc<str>, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(v)
}

/// Writes a decimal number.
pub(crate) fn push_u32(out: &mut String, n: u32) {
    if n < 256 {
        out.push_str(octet(n as u8));
        return;
    }
    let mut buf = [0u8; 10];
    let mut i = buf.len();
    let mut n = n;
    loop {
        i -= 1;
        // A u32 has at most 10 digits.
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for &d in &buf[i..] {
        out.push(char::from(d));
    }
}

/// The decimal texts of 0 to 255, one after another.
const OCTETS: &str = "0123456789101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899100101102103104105106107108109110111112113114115116117118119120121122123124125126127128129130131132133134135136137138139140141142143144145146147148149150151152153154155156157158159160161162163164165166167168169170171172173174175176177178179180181182183184185186187188189190191192193194195196197198199200201202203204205206207208209210211212213214215216217218219220221222223224225226227228229230231232233234235236237238239240241242243244245246247248249250251252253254255";

/// The decimal text of an IPv4 octet (a slice of [`OCTETS`]: no formatting, no check of the
/// text).
#[inline]
fn octet(o: u8) -> &'static str {
    let o = usize::from(o);
    let (start, len) = match o {
        0..10 => (o, 1),
        10..100 => (10 + 2 * (o - 10), 2),
        _ => (190 + 3 * (o - 100), 3),
    };
    OCTETS.get(start..start + len).unwrap_or("")
}

/// Writes an IP as Go's `net.IP.String` does (dotted IPv4, RFC 5952 IPv6).
pub(crate) fn write_ip(out: &mut String, ip: IpAddr) {
    match ip {
        IpAddr::V4(v4) => {
            let [a, b, c, d] = v4.octets();
            out.reserve(15);
            out.push_str(octet(a));
            for o in [b, c, d] {
                out.push('.');
                out.push_str(octet(o));
            }
        }
        IpAddr::V6(v6) => {
            let _ = write!(out, "{v6}");
        }
    }
}

/// Writes `ip:port`, `[ip]:port` for IPv6.
pub(crate) fn write_socket(out: &mut String, ep: SocketAddr) {
    match ep.ip() {
        IpAddr::V4(_) => write_ip(out, ep.ip()),
        IpAddr::V6(_) => {
            out.push('[');
            write_ip(out, ep.ip());
            out.push(']');
        }
    }
    out.push(':');
    push_u32(out, u32::from(ep.port()));
}

/// Writes 1/n as Go's `fmt.Sprintf("%0.10f", 1.0/float64(n))`.
pub(crate) fn write_probability(out: &mut String, n: u32) {
    match probability_text(n) {
        Some(text) => out.push_str(text),
        None => {
            let _ = write!(out, "{:.10}", 1.0 / f64::from(n.max(1)));
        }
    }
}

/// [`write_probability`]'s text for the common small n (Services with up to 64 endpoints),
/// formatted once per process.
pub(crate) fn probability_text(n: u32) -> Option<&'static str> {
    static SMALL: std::sync::OnceLock<Vec<String>> = std::sync::OnceLock::new();
    const CACHED: u32 = 64;
    if n > CACHED {
        return None;
    }
    let table = SMALL.get_or_init(|| (0..=CACHED).map(format_probability).collect());
    table.get(n as usize).map(String::as_str)
}

fn format_probability(n: u32) -> String {
    format!("{:.10}", 1.0 / f64::from(n.max(1)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probabilities_print_as_go_does() {
        let p = |n| {
            let mut s = String::new();
            write_probability(&mut s, n);
            s
        };
        assert_eq!(p(2), "0.5000000000");
        assert_eq!(p(3), "0.3333333333");
        assert_eq!(p(100001), "0.0000099999");
        assert_eq!(p(1), "1.0000000000");
        assert_eq!(p(0), "1.0000000000");
        for n in 0..200 {
            assert_eq!(p(n), format_probability(n));
        }
        assert_eq!(p(64), "0.0156250000");
        assert_eq!(p(65), "0.0153846154");
    }

    #[test]
    fn numbers_and_addresses_print_as_display_does() {
        for n in (0..20_000u32).chain([65_535, 99_999, 100_000, 4_294_967_295]) {
            let mut s = String::new();
            push_u32(&mut s, n);
            assert_eq!(s, n.to_string());
        }
        for o in 0..=255u8 {
            for ip in [[o, 0, 10, 255], [10, o, 1, 0], [0, 0, 0, o]] {
                let ip = IpAddr::from(ip);
                let mut s = String::new();
                write_ip(&mut s, ip);
                assert_eq!(s, ip.to_string());
            }
        }
    }

    #[test]
    fn chain_names_round_trip() {
        let c = Chain::Service(ServiceChainKind::Fw, *b"XPGD46QRK7WJZT7O");
        assert_eq!(c.to_string(), "KUBE-FW-XPGD46QRK7WJZT7O");
        assert_eq!(Chain::parse("KUBE-FW-XPGD46QRK7WJZT7O"), Some(c));
        assert_eq!(Chain::parse("KUBE-SERVICES"), Some(KUBE_SERVICES));
        assert!(Chain::parse("KUBE-SVC-SHORT").is_none());
    }
}
