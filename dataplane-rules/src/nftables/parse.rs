//! Reading nftables text back into the typed objects: the one-operation-a-line text knftables
//! renders for `nft -f` (kube-proxy's transactions) and knftables' fake `Dump()` prints
//! (`add table/chain/set/map/counter/rule/element ...`), so that rule sets written elsewhere
//! (kube-proxy itself, kube-oracle) can be traced.
//!
//! Follows knftables v0.0.22 (`transaction.go`, `fake.go`), the version Kubernetes v1.37.2 pins.
//!
//! Rule text is kept verbatim: the tracer reads it, and reports what it does not model
//! instead of guessing. Writing the parsed operations again gives the text they were read
//! from (knftables' layout). `nft list ruleset`'s block layout is not read.

use thiserror::Error;

use super::error::NftError;
use super::object::{
    BaseChain, Chain, ChainType, ContainerKind, Counter, Element, Family, Hook, Object, Rule, Set, SetFlag,
    SharedStr, Table, Verb,
};
use super::state::State;
use super::transaction::Transaction;

/// The maps kube-proxy v1.37.2 writes: an element operation without a value (a `delete`)
/// names no container kind, and is taken as a map element for these names when the text
/// did not declare the container.
const KUBE_PROXY_MAPS: &[&str] = &[
    "service-ips",
    "service-nodeports",
    "no-endpoint-services",
    "no-endpoint-nodeports",
    "firewall-ips",
    "localhost-nodeport-reject-ports",
];

/// Why nftables text could not be read or applied. Every variant names the line (1-based)
/// and its text.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ParseError {
    /// The line is not an operation as knftables writes it.
    #[error("line {line}: {why}: {text:?}")]
    Line {
        /// The line number.
        line: usize,
        /// The line.
        text: String,
        /// What is wrong.
        why: &'static str,
    },
    /// The operation is well formed but cannot be applied to the rule set read so far
    /// (a missing chain, set or map; `create` of an existing object; ...).
    #[error("line {line}: {source}: {text:?}")]
    Apply {
        /// The line number.
        line: usize,
        /// The line.
        text: String,
        /// Why it does not apply.
        source: NftError,
    },
}

/// Reads a Go `%q` quoted string at the start of `s`; returns it and the rest.
fn quoted(s: &str) -> Option<(String, &str)> {
    let mut chars = s.strip_prefix('"')?.char_indices();
    let mut out = String::new();
    while let Some((i, c)) = chars.next() {
        match c {
            '"' => return Some((out, s.get(i + 2..)?)),
            '\\' => {
                let (_, e) = chars.next()?;
                let hex = |chars: &mut std::str::CharIndices<'_>, n: usize| -> Option<char> {
                    let mut v = 0u32;
                    for _ in 0..n {
                        v = v * 16 + chars.next()?.1.to_digit(16)?;
                    }
                    char::from_u32(v)
                };
                out.push(match e {
                    '"' => '"',
                    '\\' => '\\',
                    'a' => '\u{7}',
                    'b' => '\u{8}',
                    'f' => '\u{c}',
                    'n' => '\n',
                    'r' => '\r',
                    't' => '\t',
                    'v' => '\u{b}',
                    'x' => hex(&mut chars, 2)?,
                    'u' => hex(&mut chars, 4)?,
                    'U' => hex(&mut chars, 8)?,
                    _ => return None,
                });
            }
            c => out.push(c),
        }
    }
    None
}

/// Splits `rest` into a rule's text and its trailing `comment "..."`.
fn rule_and_comment(rest: &str) -> (String, Option<String>) {
    if rest.ends_with('"') {
        for (i, _) in rest.match_indices(" comment \"") {
            if let Some((c, tail)) = rest.get(i + 9..).and_then(quoted)
                && tail.is_empty()
            {
                return (rest.get(..i).unwrap_or_default().to_owned(), Some(c));
            }
        }
    }
    (rest.to_owned(), None)
}

/// The clauses of `{ a b ; c "d" ; }` as lists of words (quoted words unquoted), or `None`.
fn clauses(body: &str) -> Option<Vec<Vec<String>>> {
    let mut s = body.trim().strip_prefix('{')?.strip_suffix('}')?.trim_start();
    let mut out = Vec::new();
    let mut cur = Vec::new();
    while !s.is_empty() {
        if let Some(rest) = s.strip_prefix(';') {
            if cur.is_empty() {
                return None;
            }
            out.push(std::mem::take(&mut cur));
            s = rest.trim_start();
        } else if s.starts_with('"') {
            let (q, rest) = quoted(s)?;
            cur.push(q);
            s = rest.trim_start();
        } else {
            let end = s.find(|c: char| c.is_whitespace() || c == ';').unwrap_or(s.len());
            cur.push(s.get(..end)?.to_owned());
            s = s.get(end..)?.trim_start();
        }
    }
    cur.is_empty().then_some(out)
}

fn priority(words: &[String]) -> Option<i32> {
    let base = |w: &str| -> Option<i32> {
        Some(match w {
            "raw" => -300,
            "mangle" => -150,
            "dstnat" => -100,
            "filter" => 0,
            "security" => 50,
            "srcnat" => 100,
            n => n.parse().ok()?,
        })
    };
    match words {
        [p] => base(p),
        [p, op, n] => {
            let n: i32 = n.parse().ok()?;
            match op.as_str() {
                "+" => base(p)?.checked_add(n),
                "-" => base(p)?.checked_sub(n),
                _ => None,
            }
        }
        _ => None,
    }
}

fn chain_type(s: &str) -> Option<ChainType> {
    [ChainType::Filter, ChainType::Nat, ChainType::Route]
        .into_iter()
        .find(|t| t.as_str() == s)
}

fn hook(s: &str) -> Option<Hook> {
    [
        Hook::Prerouting,
        Hook::Input,
        Hook::Forward,
        Hook::Output,
        Hook::Postrouting,
    ]
    .into_iter()
    .find(|h| h.as_str() == s)
}

fn set_flag(s: &str) -> Option<SetFlag> {
    [
        SetFlag::Constant,
        SetFlag::Dynamic,
        SetFlag::Interval,
        SetFlag::Timeout,
    ]
    .into_iter()
    .find(|f| f.as_str() == s)
}

fn verb(s: &str) -> Option<Verb> {
    [
        Verb::Add,
        Verb::Create,
        Verb::Insert,
        Verb::Replace,
        Verb::Delete,
        Verb::Destroy,
        Verb::Flush,
        Verb::Reset,
    ]
    .into_iter()
    .find(|v| v.as_str() == s)
}

fn family(s: &str) -> Option<Family> {
    [Family::Ip, Family::Ip6, Family::Inet]
        .into_iter()
        .find(|f| f.as_str() == s)
}

/// The object of one line after `verb kind family table`: `rest` is the text after the
/// table name (empty, or starting with its name). `kinds` resolves an element's container.
fn object(
    kind: &str,
    verb: Verb,
    rest: &str,
    kinds: &dyn Fn(&str) -> ContainerKind,
) -> Result<Object, &'static str> {
    let (name, body) = match rest.split_once(' ') {
        Some((n, b)) => (n, b),
        None => (rest, ""),
    };
    let comment_only = |body: &str| -> Result<Option<String>, &'static str> {
        if body.is_empty() {
            return Ok(None);
        }
        match clauses(body).ok_or("a malformed { ... } body")?.as_slice() {
            [c] if c.len() == 2 && c[0] == "comment" => Ok(c.get(1).cloned()),
            _ => Err("only a comment is read here"),
        }
    };
    Ok(match kind {
        "table" => Object::Table(Table {
            comment: comment_only(rest)?,
        }),
        "counter" => Object::Counter(Counter {
            name: name.to_owned(),
            comment: comment_only(body)?,
        }),
        "chain" => {
            let mut c = Chain::named(name);
            if !body.is_empty() {
                let mut base: (Option<ChainType>, Option<Hook>, Option<i32>) = (None, None, None);
                for cl in clauses(body).ok_or("a malformed chain body")? {
                    match cl.first().map(String::as_str) {
                        Some("comment") if cl.len() == 2 => c.comment = cl.get(1).cloned(),
                        Some("type") if cl.len() >= 6 && cl[2] == "hook" && cl[4] == "priority" => {
                            base = (
                                Some(chain_type(&cl[1]).ok_or("an unknown chain type")?),
                                Some(hook(&cl[3]).ok_or("an unknown hook")?),
                                Some(priority(&cl[5..]).ok_or("an unknown priority")?),
                            );
                        }
                        _ => return Err("a chain clause other than type/hook/priority and comment"),
                    }
                }
                if let (Some(chain_type), Some(hook), Some(priority)) = base {
                    c.base = Some(BaseChain {
                        chain_type,
                        hook,
                        priority,
                    });
                }
            }
            Object::Chain(c)
        }
        "set" | "map" => {
            let mut s = Set::named(name);
            if !body.is_empty() {
                for cl in clauses(body).ok_or("a malformed set body")? {
                    match (cl.first().map(String::as_str), cl.len()) {
                        (Some("type"), n) if n > 1 => s.set_type = cl[1..].join(" "),
                        (Some("flags"), 2) => {
                            s.flags = cl[1]
                                .split(',')
                                .map(set_flag)
                                .collect::<Option<_>>()
                                .ok_or("an unknown set flag")?;
                        }
                        (Some("timeout"), 2) => {
                            s.timeout = Some(
                                cl[1]
                                    .strip_suffix('s')
                                    .and_then(|t| t.parse().ok())
                                    .ok_or("a timeout other than Ns")?,
                            );
                        }
                        (Some("comment"), 2) => s.comment = cl.get(1).cloned(),
                        _ => return Err("a set clause other than type, flags, timeout and comment"),
                    }
                }
            }
            if kind == "set" {
                Object::Set(Box::new(s))
            } else {
                Object::Map(Box::new(s))
            }
        }
        "rule" => {
            let (rule, comment) = if matches!(verb, Verb::Add | Verb::Insert | Verb::Replace) {
                if body.is_empty() {
                    return Err("a rule without text");
                }
                rule_and_comment(body)
            } else {
                (String::new(), None)
            };
            if !matches!(verb, Verb::Add | Verb::Insert) && !body.is_empty() {
                return Err("only add and insert of rules are read");
            }
            Object::Rule(Rule {
                chain: name.into(),
                rule: rule.into(),
                comment,
            })
        }
        "element" => {
            let inner = body
                .strip_prefix("{ ")
                .and_then(|b| b.strip_suffix(" }"))
                .ok_or("an element is written { KEY [comment \"...\"] [: VALUE] }")?;
            let (key, comment, value) = match inner.find(" comment \"") {
                Some(i) => {
                    let (c, tail) = inner
                        .get(i + 9..)
                        .and_then(quoted)
                        .ok_or("an unterminated element comment")?;
                    let value = match tail {
                        "" => None,
                        t => Some(t.strip_prefix(" : ").ok_or("text after an element comment")?),
                    };
                    (inner.get(..i).unwrap_or_default(), Some(c), value)
                }
                None => match inner.split_once(" : ") {
                    Some((k, v)) => (k, None, Some(v)),
                    None => (inner, None, None),
                },
            };
            Object::Element(Element {
                kind: if value.is_some() {
                    ContainerKind::Map
                } else {
                    kinds(name)
                },
                container: name.into(),
                key: key.into(),
                value: value.map(SharedStr::from),
                comment,
            })
        }
        _ => return Err("an object other than table, chain, rule, set, map, element, counter"),
    })
}

/// Reads text of operations, one a line (`#` comments and blank lines skipped), into one
/// transaction per run of lines on the same table. Elements without a value are set
/// elements unless the text declared a map of that name (or it is one of kube-proxy's maps).
///
/// ```
/// use svcnet_rules::nftables::parse_transactions;
/// let text = "add table ip kube-proxy { comment \"rules for kube-proxy\" ; }\n\
///             add chain ip kube-proxy services\n\
///             add rule ip kube-proxy services ip daddr 10.0.0.1 drop comment \"x\"\n";
/// let txs = parse_transactions(text).unwrap();
/// assert_eq!(txs.len(), 1);
/// assert_eq!(txs[0].to_string(), text);
/// ```
pub fn parse_transactions(text: &str) -> Result<Vec<Transaction>, ParseError> {
    Ok(lines(text)?.into_iter().map(|(_, _, t)| t).collect())
}

/// A transaction with the line numbers and texts of its operations.
type Lines = (Vec<usize>, Vec<String>, Transaction);

/// Each transaction with the line numbers and texts of its operations.
fn lines(text: &str) -> Result<Vec<Lines>, ParseError> {
    let mut out: Vec<Lines> = Vec::new();
    let mut maps: std::collections::BTreeMap<String, ContainerKind> = std::collections::BTreeMap::new();
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let l = raw.trim_end();
        if l.trim().is_empty() || l.trim_start().starts_with('#') {
            continue;
        }
        let bad = |why| ParseError::Line {
            line,
            text: raw.to_owned(),
            why,
        };
        let mut w = l.splitn(5, ' ');
        let (Some(v), Some(kind), Some(fam), Some(table)) = (w.next(), w.next(), w.next(), w.next()) else {
            return Err(bad("an operation is VERB OBJECT FAMILY TABLE ..."));
        };
        let rest = w.next().unwrap_or("");
        let v = verb(v).ok_or_else(|| bad("an unknown verb"))?;
        let fam = family(fam).ok_or_else(|| bad("an unknown family"))?;
        let kinds = |name: &str| {
            maps.get(name)
                .copied()
                .unwrap_or(if KUBE_PROXY_MAPS.contains(&name) {
                    ContainerKind::Map
                } else {
                    ContainerKind::Set
                })
        };
        let obj = object(kind, v, rest, &kinds).map_err(bad)?;
        match &obj {
            Object::Set(s) => {
                maps.insert(s.name.clone(), ContainerKind::Set);
            }
            Object::Map(s) => {
                maps.insert(s.name.clone(), ContainerKind::Map);
            }
            _ => {}
        }
        let same = out
            .last()
            .is_some_and(|(_, _, t)| t.family == fam && t.table == table);
        if !same {
            out.push((Vec::new(), Vec::new(), Transaction::new(fam, table)));
        }
        if let Some((ls, texts, t)) = out.last_mut() {
            ls.push(line);
            texts.push(raw.to_owned());
            t.push(v, obj);
        }
    }
    Ok(out)
}

/// Reads a rule set dump (or the transactions that build one) and applies it, operation by
/// operation, to an empty rule set with knftables' fake semantics: the rule set the tracer
/// walks. An operation that does not apply is an error naming its line.
///
/// ```
/// use svcnet_rules::nftables::{Family, parse_state};
/// let text = "add table ip kube-proxy\nadd chain ip kube-proxy a\nadd rule ip kube-proxy a goto b\n";
/// let e = parse_state(text).unwrap_err();
/// assert!(e.to_string().starts_with("line 3: "));
/// let st = parse_state("add table ip kube-proxy\nadd chain ip kube-proxy a\n").unwrap();
/// assert!(st.table(Family::Ip, "kube-proxy").is_some());
/// ```
pub fn parse_state(text: &str) -> Result<State, ParseError> {
    let mut state = State::new();
    apply_text(&mut state, text)?;
    Ok(state)
}

/// Applies text of operations to `state`, one operation at a time (see [`parse_state`]).
pub fn apply_text(state: &mut State, text: &str) -> Result<(), ParseError> {
    for (ls, texts, tx) in lines(text)? {
        for ((line, text), op) in ls.into_iter().zip(texts).zip(tx.operations) {
            let mut one = Transaction::new(tx.family, tx.table.clone());
            one.push(op.verb, op.object);
            state.apply(&one).map_err(|e| ParseError::Apply {
                line,
                text,
                source: match e {
                    NftError::Operation { source, .. } => *source,
                    e => e,
                },
            })?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_object_reads_back_to_its_text() {
        let text = "\
add table ip kube-proxy { comment \"rules for kube-proxy\" ; }
add chain ip kube-proxy filter-forward { type filter hook forward priority 0 ; }
add chain ip kube-proxy reject-chain { comment \"helper for @no-endpoint-services / @no-endpoint-nodeports\" ; }
add chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
add set ip kube-proxy cluster-ips { type ipv4_addr ; comment \"Active ClusterIPs\" ; }
add set ip kube-proxy affinity-X { type ipv4_addr ; flags dynamic,timeout ; timeout 10800s ; }
add map ip kube-proxy service-ips { type ipv4_addr . inet_proto . inet_service : verdict ; comment \"ClusterIP, ExternalIP and LoadBalancer IP traffic\" ; }
add counter ip kube-proxy localhost-nodeport-rejected-tcp
add rule ip kube-proxy reject-chain counter name \"localhost-nodeport-rejected-tcp\" reject
add rule ip kube-proxy filter-forward ip daddr @cluster-ips reject comment \"Reject traffic to invalid ports of ClusterIPs\"
add element ip kube-proxy cluster-ips { 172.30.0.41 }
add element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 comment \"ns1/svc1:p80\" : goto service-ULMVA6XW-ns1/svc1/tcp/p80 }
flush chain ip kube-proxy filter-forward
delete element ip kube-proxy service-ips { 172.30.0.41 . tcp . 80 }
delete chain ip kube-proxy service-ULMVA6XW-ns1/svc1/tcp/p80
";
        let txs = parse_transactions(text).unwrap();
        assert_eq!(txs.len(), 1);
        assert_eq!(txs[0].to_string(), text);
        let del = &txs[0].operations[13];
        assert!(matches!(&del.object, Object::Element(e) if e.kind == ContainerKind::Map));
        let st = parse_state(text).unwrap();
        let t = st.table(Family::Ip, "kube-proxy").unwrap();
        assert!(t.maps["service-ips"].elements.is_empty());
        assert!(t.chains["filter-forward"].rules.is_empty());
        assert_eq!(t.counters.len(), 1);
    }

    #[test]
    fn errors_name_the_line() {
        for (text, line) in [
            ("add table ip kube-proxy\nfrobnicate chain ip kube-proxy a\n", 2),
            ("add table ip\n", 1),
            (
                "add table ip kube-proxy\n\nadd chain ip kube-proxy a { type nat hook nowhere priority 0 ; }\n",
                3,
            ),
            (
                "add table ip kube-proxy\nadd element ip kube-proxy s { 1.2.3.4\n",
                2,
            ),
            (
                "add table ip kube-proxy\nadd set ip kube-proxy s { type ipv4_addr ; size 10 ; }\n",
                2,
            ),
            (
                "add table ip kube-proxy\nadd element ip kube-proxy s { 1.2.3.4 }\n",
                2,
            ),
            (
                "add table ip kube-proxy\nadd chain ip kube-proxy a { comment \"x ; }\n",
                2,
            ),
        ] {
            let e = parse_state(text).unwrap_err();
            assert!(
                e.to_string().starts_with(&format!("line {line}: ")),
                "{text:?}: {e}"
            );
        }
    }

    #[test]
    fn named_priorities_and_quotes() {
        let st = parse_state(
            "add table ip t\nadd chain ip t c { type nat hook prerouting priority dstnat - 10 ; comment \"a \\\"b\\\" \\x01\" ; }\n",
        )
        .unwrap();
        let c = &st.table(Family::Ip, "t").unwrap().chains["c"].chain;
        assert_eq!(c.base.unwrap().priority, -110);
        assert_eq!(c.comment.as_deref(), Some("a \"b\" \u{1}"));
    }
}
