//! The name and value syntaxes of `k8s.io/apimachinery/pkg/util/validation`, with the API
//! server's exact messages.
//!
//! The string checks (`is_dns1123_label`, `is_qualified_name`, ...) return one message per
//! problem found (an empty list means valid); a caller turns each message into one
//! `FieldValueInvalid` at its own path, as Kubernetes does. The address checks
//! (`is_valid_ip`, `is_valid_cidr`, ...), which take the path and return field errors directly,
//! live in their own module (Kubernetes' `ip.go`) and are re-exported here.
//!
//! ```
//! use svcnet_model::validation::names;
//! assert!(names::is_dns1123_label("my-name").is_empty());
//! assert_eq!(names::is_valid_port_num(0), vec!["must be between 1 and 65535, inclusive"]);
//! ```

use crate::field::{ErrorList, FieldError, Path};

pub(crate) use super::ip::{check_cidr, check_ip, check_non_special_ip};
pub use super::ip::{
    is_dual_stack_cidrs, is_dual_stack_ips, is_ipv4_string, is_ipv6_string, is_valid_canonical_cidr,
    is_valid_canonical_ip, is_valid_cidr, is_valid_ip, is_valid_ipv4_address, is_valid_ipv6_address,
    parse_cidr_sloppy, parse_ip_sloppy, validate_non_special_ip,
};

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

#[cfg(test)]
mod tests {
    use super::*;

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
    fn generate_name_prefix() {
        assert!(name_is_dns1035_label("web-", true).is_empty());
        assert!(!name_is_dns1035_label("web-", false).is_empty());
        assert!(!name_is_dns1035_label("-123", true).is_empty());
        assert!(name_is_dns_subdomain("x-", true).is_empty());
        assert!(!name_is_dns_subdomain("-", true).is_empty());
    }
}
