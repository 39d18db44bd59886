//! Name helpers: fully qualified names, reverse names, endpoint and pod labels.
//!
//! Follows CoreDNS v1.15.0 `plugin/kubernetes/kubernetes.go` and `plugin/pkg/dnsutil/reverse.go`,
//! and the Kubernetes DNS specification (schema 1.1.0).

use std::fmt::Write;
use std::net::IpAddr;

/// `name` lower-cased with exactly one final dot.
pub(crate) fn fqdn(name: &str) -> String {
    let mut s = name.trim_end_matches('.').to_ascii_lowercase();
    s.push('.');
    s
}

/// The reverse name of `ip`: `d.c.b.a.in-addr.arpa.` or 32 nibbles then `ip6.arpa.`.
pub(crate) fn reverse_name(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            format!("{}.{}.{}.{}.in-addr.arpa.", o[3], o[2], o[1], o[0])
        }
        IpAddr::V6(v6) => {
            let mut s = String::with_capacity(73);
            for b in v6.octets().iter().rev() {
                let _ = write!(s, "{:x}.{:x}.", b & 0x0f, b >> 4);
            }
            s.push_str("ip6.arpa.");
            s
        }
    }
}

/// Parses a reverse name back into an address (`None` when it is not a complete one).
pub(crate) fn parse_reverse(name: &str) -> Option<IpAddr> {
    let name = name.trim_end_matches('.');
    if let Some(rest) = name.strip_suffix(".in-addr.arpa") {
        let parts: Vec<&str> = rest.split('.').collect();
        if parts.len() != 4 {
            return None;
        }
        let mut o = [0u8; 4];
        for (i, p) in parts.iter().rev().enumerate() {
            if p.is_empty() || p.len() > 3 || (p.len() > 1 && p.starts_with('0')) {
                return None;
            }
            *o.get_mut(i)? = p.parse().ok()?;
        }
        return Some(IpAddr::from(o));
    }
    let rest = name.strip_suffix(".ip6.arpa")?;
    let nibbles: Vec<&str> = rest.split('.').collect();
    if nibbles.len() != 32 {
        return None;
    }
    let mut bytes = [0u8; 16];
    for (i, n) in nibbles.iter().rev().enumerate() {
        if n.len() != 1 {
            return None;
        }
        let v = u8::from_str_radix(n, 16).ok()?;
        let b = bytes.get_mut(i / 2)?;
        *b |= if i % 2 == 0 { v << 4 } else { v };
    }
    Some(IpAddr::from(bytes))
}

/// The endpoint hostname of one address (CoreDNS's order): the endpoint's `hostname`, then
/// (with `pod_names`) the target's name when shorter than 64 bytes, then the address text
/// with `.` or `:` turned into `-` (a trailing `-` gets a `0`).
pub(crate) fn endpoint_hostname(
    hostname: Option<&str>,
    target_name: Option<&str>,
    pod_names: bool,
    address: &str,
) -> String {
    if let Some(h) = hostname.filter(|h| !h.is_empty()) {
        return h.to_ascii_lowercase();
    }
    if pod_names && let Some(t) = target_name.filter(|t| !t.is_empty() && t.len() < 64) {
        return t.to_ascii_lowercase();
    }
    if address.contains('.') {
        return address.replace('.', "-").to_ascii_lowercase();
    }
    let mut h = address.replace(':', "-").to_ascii_lowercase();
    if h.ends_with('-') {
        h.push('0');
    }
    h
}

/// The pod-record label of a pod IP as written, when a query for it finds that IP again:
/// `10.240.0.1` gives `10-240-0-1`; `fd00::9` gives `fd00--9`.
pub(crate) fn pod_label(ip_text: &str) -> Option<String> {
    let label = if ip_text.contains(':') {
        ip_text.replace(':', "-")
    } else {
        ip_text.replace('.', "-")
    };
    let label = label.to_ascii_lowercase();
    (label_ok(&label) && pod_label_ip_text(&label) == ip_text).then_some(label)
}

/// How a query label is read as a pod IP: three dashes and no `--` is IPv4, else IPv6.
pub(crate) fn pod_label_ip_text(label: &str) -> String {
    if label.matches('-').count() == 3 && !label.contains("--") {
        label.replace('-', ".")
    } else {
        label.replace('-', ":")
    }
}

/// True for a non-empty label of at most 63 bytes without dots.
pub(crate) fn label_ok(label: &str) -> bool {
    !label.is_empty() && label.len() <= 63 && !label.contains('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_hostnames() {
        assert_eq!(endpoint_hostname(None, None, false, "10.11.12.13"), "10-11-12-13");
        assert_eq!(endpoint_hostname(None, None, false, "2001:db8::1"), "2001-db8--1");
        assert_eq!(
            endpoint_hostname(None, None, false, "2001:db8:3333:4444:5555:6666::"),
            "2001-db8-3333-4444-5555-6666--0"
        );
        assert_eq!(
            endpoint_hostname(Some("ep1a"), Some("pod"), true, "1.2.3.4"),
            "ep1a"
        );
        assert_eq!(endpoint_hostname(Some(""), Some("pod"), true, "1.2.3.4"), "pod");
        assert_eq!(endpoint_hostname(None, Some("pod"), false, "1.2.3.4"), "1-2-3-4");
        let long = "p".repeat(64);
        assert_eq!(endpoint_hostname(None, Some(&long), true, "1.2.3.4"), "1-2-3-4");
    }

    #[test]
    fn reverse_names_round_trip() {
        let v4: IpAddr = "10.0.0.3".parse().unwrap();
        assert_eq!(reverse_name(v4), "3.0.0.10.in-addr.arpa.");
        let v6: IpAddr = "10::3".parse().unwrap();
        let r = reverse_name(v6);
        assert_eq!(
            r,
            "3.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.1.0.0.ip6.arpa."
        );
        assert_eq!(parse_reverse(&r), Some(v6));
        assert_eq!(parse_reverse("3.0.0.10.in-addr.arpa."), Some(v4));
        assert_eq!(parse_reverse("0.10.in-addr.arpa."), None);
        assert_eq!(parse_reverse("03.0.0.10.in-addr.arpa."), None);
    }

    #[test]
    fn pod_labels() {
        assert_eq!(pod_label("10.240.0.1").as_deref(), Some("10-240-0-1"));
        assert_eq!(pod_label("fd00:10:244:1::9").as_deref(), Some("fd00-10-244-1--9"));
        // Upper-case text is never found again by a (lower-cased) query.
        assert_eq!(pod_label("FD00::9"), None);
        assert_eq!(pod_label_ip_text("1-2-3-4"), "1.2.3.4");
        assert_eq!(pod_label_ip_text("1--2"), "1::2");
    }
}
