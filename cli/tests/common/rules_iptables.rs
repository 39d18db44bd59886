//! The shared runner's iptables comparison (`check_rules` of `conformance.py` for the
//! `iptables-restore` format), ported: kube-proxy v1.37.2's test parser (`ParseIPTablesDump`,
//! `ParseRule`) and normalisation (`sortIPTablesRules`, `assertIPTablesChainEqual`), with the
//! runner's refinements for what kube-proxy leaves to Go's map order.

use std::path::Path;

use serde_json::Value;

use super::{svcnet, write_json};

/// One chain of a parsed dump: name, counters text, deleted (`-X`), rule lines.
#[derive(Debug, Clone)]
pub struct ChainDump {
    name: String,
    counters: String,
    deleted: bool,
    rules: Vec<String>,
}

/// ParseRule's parameters: name -> (takes a value, negatable).
fn param(word: &str) -> Option<(bool, bool)> {
    Some(match word {
        "-A" | "--comment" | "-j" | "--probability" | "--to-destination" | "--name" | "--seconds"
        | "--mode" => (true, false),
        "-p" | "-s" | "--src-type" | "--sport" | "-d" | "--dst-type" | "--dport" | "--match-set"
        | "--mark" | "--ctstate" => (true, true),
        "--random-fully" | "--reap" => (false, false),
        "--rcheck" | "--set" => (false, true),
        _ => return None,
    })
}

/// The words of a rule line: quoted strings (quotes removed) or runs of non-space.
fn words(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = line.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut w = String::new();
        if c == '"' {
            chars.next();
            for c in chars.by_ref() {
                if c == '"' {
                    break;
                }
                w.push(c);
            }
        } else {
            while let Some(&c) = chars.peek() {
                if c.is_whitespace() {
                    break;
                }
                w.push(c);
                chars.next();
            }
        }
        out.push(w);
    }
    out
}

/// `ParseRule(line, false)`: (parameter, negated, value) of the known parameters, or the error.
fn rule_fields(line: &str) -> Result<Vec<(String, bool, Option<String>)>, String> {
    let w = words(line);
    if w.len() < 2 || w[0] != "-A" {
        return Err(format!(
            "bad iptables rule (does not start with \"-A CHAIN\"): {line}"
        ));
    }
    if w.len() < 3 {
        return Err(format!("bad iptables rule (no match rules): {line}"));
    }
    let mut out = Vec::new();
    let mut neg = false;
    let mut i = 0;
    while i < w.len() {
        if w[i] == "-m" && i < w.len() - 1 {
            i += 2;
            continue;
        }
        if w[i] == "!" {
            neg = true;
            i += 1;
            continue;
        }
        if let Some((takes, negatable)) = param(&w[i]) {
            if neg && !negatable {
                return Err(format!("cannot negate parameter {:?}: {line}", w[i]));
            }
            if takes && i == w.len() - 1 {
                return Err(format!("parameter {:?} requires an argument: {line}", w[i]));
            }
            out.push((w[i].clone(), neg, takes.then(|| w[i + 1].clone())));
            i += if takes { 2 } else { 1 };
        } else {
            i += 1;
        }
        neg = false;
    }
    Ok(out)
}

fn comment(line: &str) -> Option<String> {
    rule_fields(line)
        .ok()?
        .into_iter()
        .rev()
        .find(|(p, _, _)| p == "--comment")
        .and_then(|(_, _, v)| v)
}

fn is_chain_decl(line: &str) -> Option<(String, String)> {
    let rest = line.strip_prefix(':')?;
    let (name, tail) = rest.split_once(' ')?;
    if name.contains(' ') {
        return None;
    }
    let counters = tail.strip_prefix("- [")?.strip_suffix(']')?;
    let (p, b) = counters.split_once(':')?;
    if !p.chars().all(|c| c.is_ascii_digit()) || !b.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let n = |s: &str| s.parse::<u64>().unwrap_or(0);
    Some((name.to_owned(), format!("[{}:{}]", n(p), n(b))))
}

/// `ParseIPTablesDump`: tables of chains, in order (the chain details stay private); an error
/// where kube-proxy's test parser refuses the text.
pub fn parse(text: &str) -> Result<Vec<(String, Vec<ChainDump>)>, String> {
    let mut tables: Vec<(String, Vec<ChainDump>)> = Vec::new();
    // (table index, chain index) of the first chain of a name in each table name.
    let mut first: Vec<(String, String, usize, usize)> = Vec::new();
    #[derive(PartialEq)]
    enum State {
        Table,
        Decls,
        Rules,
    }
    let mut state = State::Table;
    for raw in text.trim_matches('\n').split('\n') {
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        loop {
            match state {
                State::Table => {
                    let Some(name) = line.strip_prefix('*') else {
                        return Err(format!(
                            "table {} starts with {line:?}, not a table name",
                            tables.len() + 1
                        ));
                    };
                    tables.push((name.to_owned(), Vec::new()));
                    state = State::Decls;
                }
                State::Decls => {
                    let Some((name, counters)) = is_chain_decl(line) else {
                        state = State::Rules;
                        continue;
                    };
                    let t = tables.len() - 1;
                    let table = tables[t].0.clone();
                    tables[t].1.push(ChainDump {
                        name: name.clone(),
                        counters,
                        deleted: false,
                        rules: Vec::new(),
                    });
                    if !first.iter().any(|(tn, cn, _, _)| *tn == table && *cn == name) {
                        first.push((table, name, t, tables[t].1.len() - 1));
                    }
                }
                State::Rules => {
                    let t = tables.len() - 1;
                    let table = tables[t].0.clone();
                    let find = |name: &str| {
                        first
                            .iter()
                            .find(|(tn, cn, _, _)| *tn == table && cn == name)
                            .map(|(_, _, ti, ci)| (*ti, *ci))
                    };
                    if let Some(rest) = line.strip_prefix("-A ") {
                        let mut parts = line.splitn(3, ' ');
                        let name = parts.nth(1).unwrap_or_default();
                        if line.splitn(3, ' ').count() < 3 {
                            return Err(format!("error parsing rule {line:?}"));
                        }
                        let _ = rest;
                        let (ti, ci) = find(name)
                            .ok_or(format!("error parsing rule {line:?}: no such chain {name:?}"))?;
                        if tables[ti].1[ci].deleted {
                            return Err(format!("cannot add rules to deleted chain {name:?}"));
                        }
                        rule_fields(line)?;
                        tables[ti].1[ci].rules.push(line.to_owned());
                    } else if let Some(name) = line.strip_prefix("-X ") {
                        let (ti, ci) = find(name)
                            .ok_or(format!("error parsing rule {line:?}: no such chain {name:?}"))?;
                        if !tables[ti].1[ci].rules.is_empty() {
                            return Err(format!("cannot delete chain {name:?} after adding rules"));
                        }
                        tables[ti].1[ci].deleted = true;
                    } else if line == "COMMIT" {
                        state = State::Table;
                    } else {
                        return Err(format!("error parsing rule {line:?}"));
                    }
                }
            }
            break;
        }
    }
    if state != State::Table {
        return Err("could not parse iptables data (no COMMIT line?)".to_owned());
    }
    Ok(tables)
}

fn service_of(c: &str) -> &str {
    let cut = [c.find(' '), c.find(':')].into_iter().flatten().min();
    cut.map_or(c, |i| &c[..i])
}

fn port_of(c: Option<&str>) -> Option<String> {
    let head = c?.split(' ').next().unwrap_or("");
    head.split_once(':').map(|(_, p)| p.to_owned())
}

fn chain_order(name: &str) -> (u8, String) {
    let rank = if name == "KUBE-NODEPORTS" {
        0
    } else if name == "KUBE-SERVICES" {
        1
    } else if name.starts_with("KUBE-") {
        2
    } else {
        3
    };
    (rank, name.to_owned())
}

fn sort_rules(rules: &mut [String], keep_last: bool, by_port: bool) {
    let key = |r: &String| {
        let c = comment(r);
        let last = keep_last && c.as_deref().is_some_and(|c| c.contains("must be the last rule"));
        (last, service_of(c.as_deref().unwrap_or("")).to_owned())
    };
    rules.sort_by_key(|r| key(r));
    if keep_last {
        let first = rules.iter().position(|r| key(r).0).unwrap_or(rules.len());
        rules[first..].sort();
    }
    if !by_port {
        return;
    }
    let mut i = 0;
    while i < rules.len() {
        let mut j = i + 1;
        while j < rules.len() && key(&rules[j]) == key(&rules[i]) {
            j += 1;
        }
        let ports: Vec<Option<String>> = rules[i..j]
            .iter()
            .map(|r| port_of(comment(r).as_deref()))
            .collect();
        if j - i > 1 && ports.iter().all(Option::is_some) {
            let mut pairs: Vec<(Option<String>, String)> =
                ports.into_iter().zip(rules[i..j].iter().cloned()).collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            for (slot, (_, r)) in rules[i..j].iter_mut().zip(pairs) {
                *slot = r;
            }
        }
        i = j;
    }
}

/// `norm_ipt`: the canonical lines of an iptables dump.
pub fn normalise(text: &str) -> Result<Vec<String>, String> {
    let mut tables = parse(text)?;
    tables.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out = Vec::new();
    for (name, chains) in &mut tables {
        chains.sort_by_key(|c| chain_order(&c.name));
        for c in chains.iter_mut() {
            let sorted = matches!(
                (name.as_str(), c.name.as_str()),
                ("filter" | "nat", "KUBE-NODEPORTS" | "KUBE-SERVICES")
                    | ("filter", "KUBE-EXTERNAL-SERVICES" | "KUBE-PROXY-FIREWALL")
            );
            if sorted {
                sort_rules(&mut c.rules, name == "nat" && c.name == "KUBE-SERVICES", true);
            }
        }
        out.push(format!("*{name}"));
        out.extend(chains.iter().map(|c| format!(":{} - {}", c.name, c.counters)));
        out.extend(chains.iter().flat_map(|c| c.rules.iter().cloned()));
        out.extend(
            chains
                .iter()
                .filter(|c| c.deleted)
                .map(|c| format!("-X {}", c.name)),
        );
        out.push("COMMIT".to_owned());
    }
    Ok(out)
}

/// `ipt_scope`: the rules of one chain, in order.
pub fn scope(text: &str, table: Option<&str>, chain: &str, expected: bool) -> Result<Vec<String>, String> {
    if expected && !text.lines().any(|l| l.trim().starts_with('*')) {
        return Ok(text
            .lines()
            .map(str::trim)
            .filter(|l| {
                let mut w = l.splitn(3, ' ');
                w.next() == Some("-A") && w.next() == Some(chain)
            })
            .map(str::to_owned)
            .collect());
    }
    let tables = parse(text)?;
    let t = match table {
        Some(name) => tables.iter().find(|t| t.0 == name),
        None => tables.first(),
    }
    .ok_or(format!("no *{} table", table.unwrap_or("")))?;
    Ok(t.1
        .iter()
        .find(|c| c.name == chain)
        .map(|c| c.rules.clone())
        .unwrap_or_default())
}

fn list_diff(got: &[String], want: &[String], what: &str) -> String {
    let missing: Vec<&String> = want.iter().filter(|w| !got.contains(w)).take(3).collect();
    let extra: Vec<&String> = got.iter().filter(|g| !want.contains(g)).take(3).collect();
    format!("{what} differ: missing {missing:?}, extra {extra:?}")
}

/// Checks one `iptables-restore` rules case through the CLI, as `check_rules` does.
pub fn check_case(case: &Value, dir: &Path) -> Result<(), String> {
    let exp = &case["expect"];
    if exp["format"] != "iptables-restore" {
        return Err(format!("not an iptables case: {}", exp["format"]));
    }
    let mut args: Vec<String> = vec!["rules".into()];
    args.extend(
        case["args"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|a| a.as_str().unwrap_or_default().to_owned()),
    );
    for (n, step) in case["prior"].as_array().into_iter().flatten().enumerate() {
        let path = write_json(dir, &format!("prior{n}.json"), &step["input"]);
        let flag = if step["then"] == "age-stale-chains" {
            "--prior-aged"
        } else {
            "--prior"
        };
        args.push(flag.into());
        args.push(path);
    }
    args.push("--print".into());
    args.push("transaction".into());
    args.push(write_json(dir, "input.json", &case["input"]));
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = svcnet(&argv);
    if run.code != 0 {
        return Err(format!("exit {}: {}", run.code, run.stderr.trim()));
    }
    let want_text = exp["text"].as_str().unwrap_or_default();
    let (want, got, what) = match exp.get("scope").filter(|s| !s.is_null()) {
        Some(sc) => {
            let table = sc["table"].as_str();
            let chain = sc["chain"].as_str().unwrap_or_default();
            (
                scope(want_text, table, chain, true)?,
                scope(&run.stdout, table, chain, false).map_err(|e| {
                    format!("output does not parse as kube-proxy's test parser reads it: {e}")
                })?,
                format!("rules of {}/{chain}", table.unwrap_or("")),
            )
        }
        None => (
            normalise(want_text)?,
            normalise(&run.stdout)
                .map_err(|e| format!("output does not parse as kube-proxy's test parser reads it: {e}"))?,
            "iptables-restore rules".to_owned(),
        ),
    };
    if got != want {
        return Err(list_diff(&got, &want, &what));
    }
    Ok(())
}
