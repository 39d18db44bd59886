//! How the nftables rules cases are compared, ported from the shared runner's
//! `check_rules` (itself kube-proxy's `sortNFTablesTransaction` in
//! `pkg/proxy/nftables/helpers_test.go`): blank and `#` lines dropped, a stable sort by
//! object type (table, chain, rule, set, map, element, others), object name (the fifth
//! word) and the whole line, except that the rules of one chain keep their order; and a
//! transaction's operation count, one per non-comment line.
#![allow(dead_code)]

fn rank(kind: &str) -> i32 {
    match kind {
        "table" => 10,
        "chain" => 9,
        "rule" => 8,
        "set" => 7,
        "map" => 6,
        "element" => 5,
        _ => 0,
    }
}

/// The lines of an nft dump or transaction in `sortNFTablesTransaction` order.
pub fn norm_nft(text: &str) -> Vec<String> {
    let mut lines: Vec<String> = text
        .split('\n')
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect();
    // A stable sort on a key: (rank desc, kind, name, whole line unless a rule).
    lines.sort_by_cached_key(|l| {
        let w: Vec<&str> = l.split(' ').collect();
        if w.len() < 5 {
            return (0, String::new(), String::new(), l.clone());
        }
        let line = if w[1] == "rule" { String::new() } else { l.clone() };
        (-rank(w[1]), w[1].to_owned(), w[4].to_owned(), line)
    });
    lines
}

/// Whether the text holds an `add table` line.
pub fn has_table(text: &str) -> bool {
    text.lines()
        .any(|l| l.trim().split(' ').take(2).eq(["add", "table"]))
}

/// The rules of one chain, in order (`diffNFTablesChain`).
pub fn scope(text: &str, chain: &str) -> Vec<String> {
    norm_nft(text)
        .into_iter()
        .filter(|l| {
            let w: Vec<&str> = l.split(' ').collect();
            w.len() > 4 && (w[..2] == ["add", "rule"] || w[..2] == ["insert", "rule"]) && w[4] == chain
        })
        .collect()
}

/// `Transaction.NumOperations()` of a printed transaction.
pub fn operations(text: &str) -> usize {
    text.split('\n')
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .count()
}

/// A short description of the first differences between two normalised texts.
pub fn diff(got: &[String], want: &[String], what: &str) -> String {
    let g: std::collections::BTreeSet<&String> = got.iter().collect();
    let w: std::collections::BTreeSet<&String> = want.iter().collect();
    let missing: Vec<&&String> = w.difference(&g).take(5).collect();
    let extra: Vec<&&String> = g.difference(&w).take(5).collect();
    if missing.is_empty() && extra.is_empty() {
        let at = got
            .iter()
            .zip(want)
            .position(|(a, b)| a != b)
            .unwrap_or(got.len().min(want.len()));
        return format!(
            "{what}: same lines, different order or count (first difference at line {at}; {} vs {} lines)",
            got.len(),
            want.len()
        );
    }
    format!("{what} differ:\n  missing: {missing:?}\n  unexpected: {extra:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_like_the_runner() {
        let t = "add rule ip t b x\nadd element ip t s { 2 }\n# c\nadd rule ip t a z\nadd rule ip t b a\nadd table ip t { comment \"c\" ; }\nadd element ip t s { 1 }\n";
        assert_eq!(
            norm_nft(t),
            vec![
                "add table ip t { comment \"c\" ; }",
                "add rule ip t a z",
                "add rule ip t b x",
                "add rule ip t b a",
                "add element ip t s { 1 }",
                "add element ip t s { 2 }"
            ]
        );
        assert_eq!(operations(t), 6);
        assert_eq!(scope(t, "b"), vec!["add rule ip t b x", "add rule ip t b a"]);
    }
}
