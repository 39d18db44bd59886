//! kube-proxy's nftables object names: `hashAndTruncate` (8 characters of base32(sha256))
//! and comment truncation.
//!
//! Follows Kubernetes v1.37.2: `hashAndTruncate` and `servicePortChainNameBase` in
//! `pkg/proxy/nftables/proxier.go`.

/// knftables' `NameLengthMax`: the longest chain, set or map name.
pub const NAME_LENGTH_MAX: usize = 256;
/// knftables' `CommentLengthMax`: the longest comment.
pub const COMMENT_LENGTH_MAX: usize = 128;
/// The longest name base (`NameLengthMax` minus 16 for a prefix such as `endpoint-`).
const NAME_BASE_LENGTH_MAX: usize = NAME_LENGTH_MAX - 16;

/// The first 8 characters of `base32.StdEncoding(sha256(name))`.
fn hash8(name: &str) -> [u8; 8] {
    const ALPHABET: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
    let d = crate::hash::sha256(name.as_bytes());
    // 8 base32 characters = 40 bits = the first 5 bytes
    let v = u64::from_be_bytes([0, 0, 0, d[0], d[1], d[2], d[3], d[4]]);
    let mut out = [0u8; 8];
    for (i, o) in out.iter_mut().enumerate() {
        *o = ALPHABET[((v >> (35 - 5 * i)) & 31) as usize];
    }
    out
}

/// kube-proxy's `hashAndTruncate`: `XXXXXXXX-name`, cut to 237 bytes plus `...` when
/// longer than 240.
pub(crate) fn hash_and_truncate(name: &str) -> String {
    let mut s = String::with_capacity(name.len() + 9);
    push_hash_and_truncate(&mut s, name);
    s
}

/// Appends [`hash_and_truncate`]`(name)` to `out`.
pub(crate) fn push_hash_and_truncate(out: &mut String, name: &str) {
    let start = out.len();
    // Base32 letters and digits are ASCII: each byte is its own char.
    let h = hash8(name);
    out.reserve(h.len() + 1 + name.len());
    for b in h {
        out.push(char::from(b));
    }
    out.push('-');
    out.push_str(name);
    if out.len() - start > NAME_BASE_LENGTH_MAX {
        let mut cut = start + NAME_BASE_LENGTH_MAX - 3;
        while !out.is_char_boundary(cut) {
            cut -= 1;
        }
        out.truncate(cut);
        out.push_str("...");
    }
}

/// kube-proxy's `truncateNFTablesComment`: at most 128 bytes.
pub(crate) fn truncate_comment(s: &str) -> &str {
    if s.len() <= COMMENT_LENGTH_MAX {
        return s;
    }
    let mut cut = COMMENT_LENGTH_MAX;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    &s[..cut]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kube_proxy_names() {
        assert_eq!(hash_and_truncate("ns1/svc1/tcp/p80"), "ULMVA6XW-ns1/svc1/tcp/p80");
        assert_eq!(
            hash_and_truncate("ns1/svc1/tcp/p80__10.180.0.1/80"),
            "5OJB2KTY-ns1/svc1/tcp/p80__10.180.0.1/80"
        );
        let long = "x".repeat(300);
        let h = hash_and_truncate(&long);
        assert_eq!(h.len(), 240);
        assert!(h.ends_with("..."));
        let mut p = String::from("service-");
        push_hash_and_truncate(&mut p, &long);
        assert_eq!(p, format!("service-{h}"));
        let mut p = String::from("x");
        push_hash_and_truncate(&mut p, &format!("{}é", "y".repeat(227)));
        assert_eq!(
            p,
            format!("x{}", hash_and_truncate(&format!("{}é", "y".repeat(227))))
        );
        assert_eq!(truncate_comment(&"y".repeat(200)).len(), 128);
    }
}
