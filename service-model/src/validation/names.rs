//! The name and value syntaxes of `k8s.io/apimachinery/pkg/util/validation`, with the API
//! server's exact messages.
//!
//! The string checks (`is_dns1123_label`, `is_qualified_name`, ...) return one message per
//! problem found (an empty list means valid); a caller turns each message into one
//! `FieldValueInvalid` at its own path, as Kubernetes does. The address checks
//! (`is_valid_ip`, `is_valid_cidr`, ...) take the path and return field errors directly.
//!
//! ```
//! use svcnet_model::validation::names;
//! assert!(names::is_dns1123_label("my-name").is_empty());
//! assert_eq!(names::is_valid_port_num(0), vec!["must be between 1 and 65535, inclusive"]);
//! ```

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use crate::field::{ErrorList, FieldError, Path, go_quote};
use crate::netparse;
use crate::validation::fieldpath::FieldPath;

/// Maximum length of a DNS-1123 label (`DNS1123LabelMaxLength`).
pub const DNS1123_LABEL_MAX_LENGTH: usize = 63;
/// Maximum length of a DNS-1123 subdomain (`DNS1123SubdomainMaxLength`).
pub const DNS1123_SUBDOMAIN_MAX_LENGTH: usize = 253;
/// Maximum length of a DNS-1035 label (`DNS1035LabelMaxLength`).
pub const DNS1035_LABEL_MAX_LENGTH: usize = 63;
/// Maximum length of a label value and of a qualified name's name part.
pub const LABEL_VALUE_MAX_LENGTH: usize = 63;

const DNS1123_LABEL_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?";
const DNS1123_LABEL_ERR: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";
const DNS1035_LABEL_FMT: &str = "[a-z]([-a-z0-9]*[a-z0-9])?";
const DNS1035_LABEL_ERR: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character";
const QUALIFIED_NAME_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const QUALIFIED_NAME_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_FMT: &str = "(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";

/// `MaxLenError`: "must be no more than N characters".
pub fn max_len_error(length: usize) -> String {
    format!("must be no more than {length} characters")
}

/// `RegexError`: a message naming the pattern and, when given, examples.
pub fn regex_error(msg: &str, fmt: &str, examples: &[&str]) -> String {
    if examples.is_empty() {
        return format!("{msg} (regex used for validation is '{fmt}')");
    }
    let mut s = format!("{msg} (e.g. ");
    for (i, e) in examples.iter().enumerate() {
        if i > 0 {
            s.push_str(" or ");
        }
        s.push('\'');
        s.push_str(e);
        s.push_str("', ");
    }
    s.push_str("regex used for validation is '");
    s.push_str(fmt);
    s.push_str("')");
    s
}

/// `EmptyError`: "must be non-empty".
pub fn empty_error() -> &'static str {
    "must be non-empty"
}

/// `InclusiveRangeError`: "must be between LO and HI, inclusive".
pub fn inclusive_range_error(lo: i64, hi: i64) -> String {
    format!("must be between {lo} and {hi}, inclusive")
}

fn is_lower_alnum(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit()
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?` with `first` replacing the first class.
fn matches_label(s: &[u8], first: fn(u8) -> bool) -> bool {
    match (s.first(), s.last()) {
        (Some(&f), Some(&l)) => {
            first(f) && is_lower_alnum(l) && s.iter().all(|&b| is_lower_alnum(b) || b == b'-')
        }
        _ => false,
    }
}

fn matches_dns1123_label(s: &str) -> bool {
    matches_label(s.as_bytes(), is_lower_alnum)
}

/// Every `.`-separated label a DNS-1123 label, in one pass: a label starts and ends with an
/// alphanumeric, so a `.` must follow one and a `-` may not follow a `.` (or start the name).
fn matches_dns1123_subdomain(s: &str) -> bool {
    let mut prev = b'.';
    for &c in s.as_bytes() {
        match c {
            b'.' if !is_lower_alnum(prev) => return false,
            b'-' if prev == b'.' => return false,
            b'.' | b'-' => {}
            c if is_lower_alnum(c) => {}
            _ => return false,
        }
        prev = c;
    }
    is_lower_alnum(prev)
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn matches_qualified_name_part(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(f), Some(l)) => {
            f.is_ascii_alphanumeric()
                && l.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

/// `IsDNS1123Label`: a lowercase RFC 1123 label of at most 63 characters.
pub fn is_dns1123_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_LABEL_MAX_LENGTH));
    }
    if !matches_dns1123_label(value) {
        if matches_dns1123_subdomain(value) {
            errs.push("must not contain dots".to_owned());
        } else {
            errs.push(regex_error(
                DNS1123_LABEL_ERR,
                DNS1123_LABEL_FMT,
                &["my-name", "123-abc"],
            ));
        }
    }
    errs
}

/// `IsDNS1123Subdomain`: dot-separated RFC 1123 labels, at most 253 characters in all.
pub fn is_dns1123_subdomain(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1123_SUBDOMAIN_MAX_LENGTH {
        errs.push(max_len_error(DNS1123_SUBDOMAIN_MAX_LENGTH));
    }
    if !matches_dns1123_subdomain(value) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `IsDNS1035Label`: like a DNS-1123 label but starting with a letter.
pub fn is_dns1035_label(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > DNS1035_LABEL_MAX_LENGTH {
        errs.push(max_len_error(DNS1035_LABEL_MAX_LENGTH));
    }
    if !matches_label(value.as_bytes(), |b| b.is_ascii_lowercase()) {
        errs.push(regex_error(
            DNS1035_LABEL_ERR,
            DNS1035_LABEL_FMT,
            &["my-name", "abc-123"],
        ));
    }
    errs
}

/// `IsQualifiedName`: an optional DNS-subdomain prefix and `/`, then a name part of at most
/// 63 characters (label keys, annotation keys, `appProtocol`, `loadBalancerClass`, finalizers).
pub fn is_qualified_name(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    // `strings.Split(value, "/")`: one part, two, or more (refused). A byte scan, as the
    // values are short.
    let slash = |v: &str| v.bytes().position(|b| b == b'/');
    let parts = match slash(value) {
        None => (Some(value), None),
        Some(i) => {
            let (prefix, rest) = (&value[..i], &value[i + 1..]);
            if slash(rest).is_some() {
                (None, None)
            } else {
                (Some(prefix), Some(rest))
            }
        }
    };
    let name = match parts {
        (Some(name), None) => name,
        (Some(prefix), Some(name)) => {
            if prefix.is_empty() {
                errs.push(format!("prefix part {}", empty_error()));
            } else {
                for m in is_dns1123_subdomain(prefix) {
                    errs.push(format!("prefix part {m}"));
                }
            }
            name
        }
        _ => {
            errs.push(format!(
                "a qualified name {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    QUALIFIED_NAME_ERR,
                    QUALIFIED_NAME_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            ));
            return errs;
        }
    };
    if name.is_empty() {
        errs.push(format!("name part {}", empty_error()));
    } else if name.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(format!("name part {}", max_len_error(LABEL_VALUE_MAX_LENGTH)));
    }
    if !matches_qualified_name_part(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                QUALIFIED_NAME_ERR,
                QUALIFIED_NAME_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `IsValidLabelValue`: empty, or a qualified name's name part; at most 63 characters.
pub fn is_valid_label_value(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > LABEL_VALUE_MAX_LENGTH {
        errs.push(max_len_error(LABEL_VALUE_MAX_LENGTH));
    }
    if !value.is_empty() && !matches_qualified_name_part(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            LABEL_VALUE_FMT,
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// `IsValidPortName`: an IANA_SVC_NAME (1-15 of `[-a-z0-9]`, at least one letter, no leading,
/// trailing or doubled `-`).
pub fn is_valid_port_name(port: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let b = port.as_bytes();
    if b.len() > 15 {
        errs.push(max_len_error(15));
    }
    if b.is_empty() || !b.iter().all(|&c| is_lower_alnum(c) || c == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".to_owned());
    }
    if !b.iter().any(u8::is_ascii_lowercase) {
        errs.push("must contain at least one letter (a-z)".to_owned());
    }
    if b.windows(2).any(|w| w == b"--") {
        errs.push("must not contain consecutive hyphens".to_owned());
    }
    if b.first() == Some(&b'-') || b.last() == Some(&b'-') {
        errs.push("must not begin or end with a hyphen".to_owned());
    }
    errs
}

/// `IsValidPortNum`: 1..=65535.
pub fn is_valid_port_num(port: i64) -> Vec<String> {
    if (1..=65535).contains(&port) {
        Vec::new()
    } else {
        vec![inclusive_range_error(1, 65535)]
    }
}

/// `IsInRange`: `lo..=hi`.
pub fn is_in_range(value: i64, lo: i64, hi: i64) -> Vec<String> {
    if (lo..=hi).contains(&value) {
        Vec::new()
    } else {
        vec![inclusive_range_error(lo, hi)]
    }
}

/// `IsFullyQualifiedDomainName`: one optional trailing `.`, then a DNS-1123 subdomain of at
/// least two labels. Stops at the first problem.
pub fn is_fully_qualified_domain_name(path: &Path, name: &str) -> ErrorList {
    if name.is_empty() {
        return vec![FieldError::required(path, "")];
    }
    let name = name.strip_suffix('.').unwrap_or(name);
    let errs = is_dns1123_subdomain(name);
    if !errs.is_empty() {
        return vec![FieldError::invalid(path, name, errs.join(","))];
    }
    if name.split('.').count() < 2 {
        return vec![FieldError::invalid(
            path,
            name,
            "should be a domain with at least two segments separated by dots",
        )];
    }
    for label in name.split('.') {
        let errs = is_dns1123_label(label);
        if !errs.is_empty() {
            return vec![FieldError::invalid(path, label, errs.join(","))];
        }
    }
    Vec::new()
}

/// `IsValidPathSegmentName`: not `.` or `..`, and no `/` or `%`.
pub fn is_valid_path_segment_name(name: &str) -> Vec<String> {
    if name == "." || name == ".." {
        return vec![format!("may not be '{name}'")];
    }
    let mut errs = Vec::new();
    for illegal in ["/", "%"] {
        if name.contains(illegal) {
            errs.push(format!("may not contain '{illegal}'"));
        }
    }
    errs
}

// ---------------------------------------------------------------------------------------------
// Names of objects (`ValidateNameFunc`): `prefix` is true for `generateName`.

/// A trailing `-` is tolerated in a `generateName` prefix: replace it (and, as upstream does,
/// the character before it) by a letter before checking.
fn mask_trailing_dash(name: &str) -> std::borrow::Cow<'_, str> {
    let b = name.as_bytes();
    if b.len() > 1 && b.last() == Some(&b'-') {
        let mut v = b[..b.len() - 2].to_vec();
        v.push(b'a');
        std::borrow::Cow::Owned(String::from_utf8_lossy(&v).into_owned())
    } else {
        std::borrow::Cow::Borrowed(name)
    }
}

/// `NameIsDNSSubdomain`: the name rule of most kinds (EndpointSlice, NetworkPolicy,
/// ServiceCIDR, ...). With `prefix` (a `generateName`), a trailing `-` is allowed.
pub fn name_is_dns_subdomain(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_subdomain(&mask_trailing_dash(name))
    } else {
        is_dns1123_subdomain(name)
    }
}

/// `NameIsDNSLabel`: a DNS-1123 label (namespaces). With `prefix` (a `generateName`), a
/// trailing `-` is allowed.
pub fn name_is_dns_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1123_label(&mask_trailing_dash(name))
    } else {
        is_dns1123_label(name)
    }
}

/// `NameIsDNS1035Label`: a DNS-1035 label, starting with a letter (Service names). With
/// `prefix` (a `generateName`), a trailing `-` is allowed.
pub fn name_is_dns1035_label(name: &str, prefix: bool) -> Vec<String> {
    if prefix {
        is_dns1035_label(&mask_trailing_dash(name))
    } else {
        is_dns1035_label(name)
    }
}

/// `ValidateNamespaceName`: a DNS-1123 label.
pub fn validate_namespace_name(name: &str, prefix: bool) -> Vec<String> {
    name_is_dns_label(name, prefix)
}

// ---------------------------------------------------------------------------------------------
// IP addresses and CIDRs.

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
    fn dns1123_label() {
        assert!(is_dns1123_label("a").is_empty());
        assert!(is_dns1123_label("123-abc").is_empty());
        assert_eq!(is_dns1123_label("a.b"), vec!["must not contain dots"]);
        let e = is_dns1123_label("-a");
        assert_eq!(e.len(), 1);
        assert!(e[0].starts_with("a lowercase RFC 1123 label must consist"));
        assert!(e[0].ends_with(
            "(e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
        ));
        assert_eq!(is_dns1123_label(&"a".repeat(64)).len(), 1);
        assert_eq!(is_dns1123_label(&"A".repeat(64)).len(), 2);
        assert_eq!(is_dns1123_label("").len(), 1);
    }

    #[test]
    fn one_pass_subdomain_match_agrees_with_label_split() {
        // Every string of up to 5 characters over an alphabet that hits each rule.
        let alphabet = ['a', '1', '-', '.', 'X', '/'];
        let mut words = vec![String::new()];
        for _ in 0..5 {
            let longer: Vec<String> = words
                .iter()
                .filter(|w| w.len() == words.last().map_or(0, String::len))
                .flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}")))
                .collect();
            words.extend(longer);
        }
        for w in &words {
            let by_split = w.split('.').all(matches_dns1123_label);
            assert_eq!(matches_dns1123_subdomain(w), by_split, "{w:?}");
            let parts: Vec<&str> = w.split('/').collect();
            let refused = is_qualified_name(w)
                .iter()
                .any(|m| m.starts_with("a qualified name"));
            assert_eq!(refused, parts.len() > 2, "{w:?}");
            assert_eq!(
                is_valid_port_name(w).iter().any(|m| m.contains("consecutive")),
                w.contains("--"),
                "{w:?}"
            );
        }
    }

    #[test]
    fn dns1123_subdomain_and_1035() {
        assert!(is_dns1123_subdomain("example.com").is_empty());
        assert!(!is_dns1123_subdomain("example..com").is_empty());
        assert!(!is_dns1123_subdomain("a.").is_empty());
        assert!(is_dns1035_label("abc-123").is_empty());
        assert!(!is_dns1035_label("1abc").is_empty());
        assert!(!is_dns1035_label("").is_empty());
    }

    #[test]
    fn qualified_names() {
        for ok in [
            "simple",
            "now-with-dashes",
            "1-starts-with-num",
            "1234",
            "simple/simple",
            "example.com/Now_with.Dots",
            "a/b",
        ] {
            assert!(is_qualified_name(ok).is_empty(), "{ok}");
        }
        for bad in [
            "",
            "/simple",
            "a/",
            "a/b/c",
            "nospecialchars%^=@",
            "-dash",
            "end-",
            "Bad!/x",
            &"a".repeat(64),
        ] {
            assert!(!is_qualified_name(bad).is_empty(), "{bad}");
        }
        assert_eq!(
            is_qualified_name("a/b/c")[0]
                .split(' ')
                .take(3)
                .collect::<Vec<_>>(),
            ["a", "qualified", "name"]
        );
        assert_eq!(is_qualified_name("/x"), vec!["prefix part must be non-empty"]);
    }

    #[test]
    fn label_values() {
        assert!(is_valid_label_value("").is_empty());
        assert!(is_valid_label_value("a_b.c-d").is_empty());
        assert_eq!(is_valid_label_value("a,b").len(), 1);
        assert_eq!(is_valid_label_value(&format!("-{}", "a".repeat(63))).len(), 2);
    }

    #[test]
    fn port_names() {
        assert!(is_valid_port_name("http").is_empty());
        assert!(is_valid_port_name("a-1").is_empty());
        assert_eq!(is_valid_port_name("").len(), 2);
        assert_eq!(is_valid_port_name("123").len(), 1);
        assert_eq!(is_valid_port_name("a--b").len(), 1);
        assert_eq!(is_valid_port_name("-a").len(), 1);
        assert_eq!(is_valid_port_name("abcdefghijklmnop").len(), 1);
        assert_eq!(is_valid_port_name("HTTP").len(), 2);
    }

    #[test]
    fn fqdn() {
        let p = Path::new("x");
        assert!(is_fully_qualified_domain_name(&p, "a.b").is_empty());
        assert!(is_fully_qualified_domain_name(&p, "a.b.").is_empty());
        assert_eq!(is_fully_qualified_domain_name(&p, "a").len(), 1);
        assert_eq!(is_fully_qualified_domain_name(&p, "*.a.b").len(), 1);
        assert_eq!(is_fully_qualified_domain_name(&p, "").len(), 1);
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

    #[test]
    fn generate_name_prefix() {
        assert!(name_is_dns1035_label("web-", true).is_empty());
        assert!(!name_is_dns1035_label("web-", false).is_empty());
        assert!(!name_is_dns1035_label("-123", true).is_empty());
        assert!(name_is_dns_subdomain("x-", true).is_empty());
        assert!(!name_is_dns_subdomain("-", true).is_empty());
    }
}
