//! Each construct kube-proxy writes, converted and compared with the JSON nft itself prints
//! for it (`nft -j list ruleset` of nftables 1.0.6 after loading the text with `nft -f`,
//! handles and defaults removed).
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use super::*;
use crate::nftables::object::{BaseChain, Chain, ContainerKind, Counter, Element, Rule, Set, Table};
use serde_json::{Value, json};

fn stmts(rule: &str) -> Value {
    serde_json::to_value(rule_statements(rule).unwrap_or_else(|e| panic!("{rule}: {e}"))).unwrap()
}

fn meta(key: &str) -> Value {
    json!({"meta": {"key": key}})
}

fn pl(protocol: &str, field: &str) -> Value {
    json!({"payload": {"protocol": protocol, "field": field}})
}

fn m(left: Value, op: &str, right: Value) -> Value {
    json!({"match": {"left": left, "right": right, "op": op}})
}

#[test]
fn verdicts_and_jumps() {
    assert_eq!(stmts("jump services"), json!([{"jump": {"target": "services"}}]));
    assert_eq!(
        stmts("goto service-X-ns/svc/tcp/p"),
        json!([{"goto": {"target": "service-X-ns/svc/tcp/p"}}])
    );
    assert_eq!(stmts("accept"), json!([{"accept": null}]));
    assert_eq!(stmts("drop"), json!([{"drop": null}]));
    assert_eq!(stmts("return"), json!([{"return": null}]));
    assert_eq!(stmts("reject"), json!([{"reject": null}]));
}

#[test]
fn ct_state_and_status_use_the_in_operator() {
    assert_eq!(
        stmts("ct state new jump firewall-check"),
        json!([m(json!({"ct": {"key": "state"}}), "in", json!("new")), {"jump": {"target": "firewall-check"}}])
    );
    assert_eq!(
        stmts("ct state established,related accept")[0],
        m(
            json!({"ct": {"key": "state"}}),
            "in",
            json!(["established", "related"])
        )
    );
    assert_eq!(
        stmts(
            "ct status dnat ip saddr . ip daddr . meta l4proto . th dport @hairpin-connections masquerade fully-random"
        ),
        json!([
            m(json!({"ct": {"key": "status"}}), "in", json!("dnat")),
            m(json!({"concat": [pl("ip", "saddr"), pl("ip", "daddr"), meta("l4proto"), pl("th", "dport")]}), "==", json!("@hairpin-connections")),
            {"masquerade": {"flags": ["fully-random"]}}
        ])
    );
}

#[test]
fn addresses_prefixes_sets_and_lookups() {
    assert_eq!(
        stmts("ip daddr @cluster-ips reject"),
        json!([m(pl("ip", "daddr"), "==", json!("@cluster-ips")), {"reject": null}])
    );
    assert_eq!(
        stmts("ip6 daddr { 10.96.0.0/16,fd00::/108 } drop"),
        json!([m(pl("ip6", "daddr"), "==", json!({"set": [
            {"prefix": {"addr": "10.96.0.0", "len": 16}},
            {"prefix": {"addr": "fd00::", "len": 108}}
        ]})), {"drop": null}])
    );
    assert_eq!(
        stmts("ip saddr != { 203.0.113.0/24 , 198.51.100.7 } drop")[0],
        m(
            pl("ip", "saddr"),
            "!=",
            json!({"set": [{"prefix": {"addr": "203.0.113.0", "len": 24}}, "198.51.100.7"]})
        )
    );
    assert_eq!(
        stmts("ip saddr 10.244.0.0/16 goto service-A")[0],
        m(
            pl("ip", "saddr"),
            "==",
            json!({"prefix": {"addr": "10.244.0.0", "len": 16}})
        )
    );
    assert_eq!(
        stmts("ip6 daddr != ::1 accept")[0],
        m(pl("ip6", "daddr"), "!=", json!("::1"))
    );
    assert_eq!(
        stmts("ip daddr 172.30.0.41 tcp dport 80 jump service-X"),
        json!([
            m(pl("ip", "daddr"), "==", json!("172.30.0.41")),
            m(pl("tcp", "dport"), "==", json!(80)),
            {"jump": {"target": "service-X"}}
        ])
    );
    assert_eq!(
        stmts("ip saddr @affinity-X goto endpoint-X")[0],
        m(pl("ip", "saddr"), "==", json!("@affinity-X"))
    );
}

#[test]
fn verdict_maps() {
    assert_eq!(
        stmts("ip daddr . meta l4proto . th dport vmap @service-ips"),
        json!([{"vmap": {"key": {"concat": [pl("ip", "daddr"), meta("l4proto"), pl("th", "dport")]}, "data": "@service-ips"}}])
    );
    assert_eq!(
        stmts("ip daddr @nodeport-ips meta l4proto . th dport vmap @service-nodeports"),
        json!([
            m(pl("ip", "daddr"), "==", json!("@nodeport-ips")),
            {"vmap": {"key": {"concat": [meta("l4proto"), pl("th", "dport")]}, "data": "@service-nodeports"}}
        ])
    );
    assert_eq!(
        stmts("numgen random mod 2 vmap { 0 : goto endpoint-A , 1 : goto endpoint-B }"),
        json!([{"vmap": {"key": {"numgen": {"mode": "random", "mod": 2}}, "data": {"set": [
            [0, {"goto": {"target": "endpoint-A"}}],
            [1, {"goto": {"target": "endpoint-B"}}]
        ]}}}])
    );
}

#[test]
fn fib_meta_and_interfaces() {
    assert_eq!(
        stmts("fib saddr type local mark set mark or 0x00004000"),
        json!([
            m(json!({"fib": {"result": "type", "flags": ["saddr"]}}), "==", json!("local")),
            {"mangle": {"key": meta("mark"), "value": {"|": [meta("mark"), 16384]}}}
        ])
    );
    assert_eq!(
        stmts("fib daddr type local ip daddr != 127.0.0.0/8 meta l4proto . th dport vmap @service-nodeports")
            [1],
        m(
            pl("ip", "daddr"),
            "!=",
            json!({"prefix": {"addr": "127.0.0.0", "len": 8}})
        )
    );
    assert_eq!(
        stmts("iifname cbr0 accept")[0],
        m(meta("iifname"), "==", json!("cbr0"))
    );
    assert_eq!(
        stmts("iifname != veth* accept")[0],
        m(meta("iifname"), "!=", json!("veth*"))
    );
    assert_eq!(
        stmts("meta l4proto tcp accept")[0],
        m(meta("l4proto"), "==", json!("tcp"))
    );
}

#[test]
fn marks_and_masquerade() {
    assert_eq!(
        stmts("mark and 0x00004000 != 0 mark set mark xor 0x00004000 masquerade fully-random"),
        json!([
            m(json!({"&": [meta("mark"), 16384]}), "!=", json!(0)),
            {"mangle": {"key": meta("mark"), "value": {"^": [meta("mark"), 16384]}}},
            {"masquerade": {"flags": ["fully-random"]}}
        ])
    );
    assert_eq!(
        stmts("meta mark set mark and 0x80000000"),
        json!([{"mangle": {"key": meta("mark"), "value": {"&": [meta("mark"), 2147483648u32]}}}])
    );
    assert_eq!(stmts("masquerade"), json!([{"masquerade": null}]));
}

#[test]
fn dnat_forms() {
    assert_eq!(
        stmts("meta l4proto tcp dnat to 10.244.0.15:8080"),
        json!([m(meta("l4proto"), "==", json!("tcp")), {"dnat": {"addr": "10.244.0.15", "port": 8080}}])
    );
    assert_eq!(
        stmts("meta l4proto sctp dnat to [fd00::1]:9000")[1],
        json!({"dnat": {"addr": "fd00::1", "port": 9000}})
    );
    assert_eq!(
        stmts(
            "meta l4proto udp dnat ip addr . port to numgen random mod 2 map { 0 : 10.244.1.13 . 8443 , 1 : 10.244.2.14 . 8443 }"
        )[1],
        json!({"dnat": {"family": "ip", "addr": {"map": {"key": {"numgen": {"mode": "random", "mod": 2}}, "data": {"set": [
            [0, {"concat": ["10.244.1.13", 8443]}],
            [1, {"concat": ["10.244.2.14", 8443]}]
        ]}}}}})
    );
    assert_eq!(
        stmts(
            "meta l4proto tcp dnat ip6 addr . port to numgen random mod 2 map { 0 : fd00::1 . 80 , 1 : fd00::2 . 80 }"
        )[1]["dnat"]["family"],
        json!("ip6")
    );
}

#[test]
fn counters_and_set_updates() {
    assert_eq!(
        stmts("counter name \"localhost-nodeport-rejected-tcp\" reject"),
        json!([{"counter": "localhost-nodeport-rejected-tcp"}, {"reject": null}])
    );
    assert_eq!(stmts("counter accept")[0], json!({"counter": null}));
    assert_eq!(
        stmts("update @affinity-X__10.0.0.1/80 { ip saddr }"),
        json!([{"set": {"op": "update", "elem": pl("ip", "saddr"), "set": "@affinity-X__10.0.0.1/80"}}])
    );
}

#[test]
fn what_is_not_understood_is_an_error_naming_the_rule() {
    for bad in [
        "log prefix \"x\" accept",
        "ip daddr",
        "ip daddr drop",
        "tcp flags syn accept",
        "reject with tcp reset",
        "ip daddr 10.0.0.1 comment \"x\"",
        "numgen random mod 2 vmap { 0 : 10.0.0.1 }",
        "ip daddr { 10.0.0.1",
        "meta foo bar",
        "mark and 0x100000000 != 0 accept",
        "dnat to nowhere",
        "l4proto tcp accept",
        "",
    ] {
        assert!(rule_statements(bad).is_err(), "{bad:?} was converted");
    }
    let mut tx = Transaction::new(Family::Ip, "kube-proxy");
    tx.add_rule("services", "tcp flags syn accept", Some("c"));
    let err = Document::from_transaction(&tx).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("tcp flags syn accept") && text.contains("services"),
        "{text}"
    );
    assert!(matches!(err, JsonError::Rule { .. }));
}

fn tx() -> Transaction {
    Transaction::new(Family::Ip, "kube-proxy")
}

fn doc(t: &Transaction) -> Value {
    serde_json::from_str(&transaction_json(t).unwrap()).unwrap()
}

#[test]
fn tables_chains_and_counters() {
    let mut t = tx();
    t.add_table(Some("rules for kube-proxy"));
    t.add(Object::Chain(Chain {
        name: "nat-prerouting".into(),
        base: Some(BaseChain {
            chain_type: ChainType::Nat,
            hook: Hook::Prerouting,
            priority: -100,
        }),
        comment: None,
    }));
    t.add(Object::Chain(Chain {
        name: "reject-chain".into(),
        base: None,
        comment: Some("helper".into()),
    }));
    t.flush_chain("nat-prerouting");
    t.delete_chain("reject-chain");
    t.add(Object::Counter(Counter {
        name: "c".into(),
        comment: Some("n".into()),
    }));
    t.delete(Object::Counter(Counter {
        name: "c".into(),
        comment: Some("n".into()),
    }));
    t.delete(Object::Table(Table {
        comment: Some("x".into()),
    }));
    assert_eq!(
        doc(&t),
        json!({"nftables": [
            {"metainfo": {"json_schema_version": 1}},
            {"add": {"table": {"family": "ip", "name": "kube-proxy", "comment": "rules for kube-proxy"}}},
            {"add": {"chain": {"family": "ip", "table": "kube-proxy", "name": "nat-prerouting", "type": "nat", "hook": "prerouting", "prio": -100}}},
            {"add": {"chain": {"family": "ip", "table": "kube-proxy", "name": "reject-chain", "comment": "helper"}}},
            {"flush": {"chain": {"family": "ip", "table": "kube-proxy", "name": "nat-prerouting"}}},
            {"delete": {"chain": {"family": "ip", "table": "kube-proxy", "name": "reject-chain"}}},
            {"add": {"counter": {"family": "ip", "table": "kube-proxy", "name": "c", "bytes": null, "comment": "n"}}},
            {"delete": {"counter": {"family": "ip", "table": "kube-proxy", "name": "c", "bytes": null}}},
            {"delete": {"table": {"family": "ip", "name": "kube-proxy"}}}
        ]})
    );
}

#[test]
fn sets_maps_and_elements() {
    let mut t = Transaction::new(Family::Ip6, "kube-proxy");
    t.add_set(Set {
        name: "affinity-X".into(),
        set_type: "ipv6_addr".into(),
        flags: vec![SetFlag::Dynamic, SetFlag::Timeout],
        timeout: Some(10800),
        comment: None,
    });
    t.add_map(Set {
        name: "service-ips".into(),
        set_type: "ipv6_addr . inet_proto . inet_service : verdict".into(),
        flags: vec![],
        timeout: None,
        comment: Some("ClusterIP traffic".into()),
    });
    t.add_element(
        ContainerKind::Map,
        "service-ips",
        "fd00::1 . tcp . 80".into(),
        Some("goto service-A".into()),
        None,
    );
    t.add_element(
        ContainerKind::Map,
        "no-endpoint-services",
        "fd00::2 . udp . 53".into(),
        Some("drop".into()),
        Some("ns/svc:dns".into()),
    );
    t.add_element(ContainerKind::Set, "cluster-ips", "fd00::1".into(), None, None);
    t.delete_element(ContainerKind::Map, "service-ips", "fd00::1 . tcp . 80".into());
    t.flush(Object::Set(Box::new(Set::named("nodeport-ips"))));
    t.delete(Object::Map(Box::new(Set::named(
        "localhost-nodeport-reject-ports",
    ))));
    let d = doc(&t);
    let c = &d["nftables"];
    assert_eq!(
        c[1],
        json!({"add": {"set": {"family": "ip6", "table": "kube-proxy", "name": "affinity-X", "type": "ipv6_addr", "timeout": 10800, "flags": ["dynamic", "timeout"]}}})
    );
    assert_eq!(
        c[2],
        json!({"add": {"map": {"family": "ip6", "table": "kube-proxy", "name": "service-ips",
            "type": ["ipv6_addr", "inet_proto", "inet_service"], "comment": "ClusterIP traffic", "map": "verdict"}}})
    );
    assert_eq!(
        c[3]["add"]["element"]["elem"],
        json!([[{"concat": ["fd00::1", "tcp", 80]}, {"goto": {"target": "service-A"}}]])
    );
    assert_eq!(
        c[4]["add"]["element"]["elem"],
        json!([[{"elem": {"val": {"concat": ["fd00::2", "udp", 53]}, "timeout": null, "expires": null, "comment": "ns/svc:dns", "counter": null}}, {"drop": null}]])
    );
    assert_eq!(c[5]["add"]["element"]["elem"], json!(["fd00::1"]));
    assert_eq!(
        c[6],
        json!({"delete": {"element": {"family": "ip6", "table": "kube-proxy", "name": "service-ips", "elem": [{"concat": ["fd00::1", "tcp", 80]}]}}})
    );
    assert_eq!(
        c[7],
        json!({"flush": {"set": {"family": "ip6", "table": "kube-proxy", "name": "nodeport-ips"}}})
    );
    assert_eq!(
        c[8],
        json!({"delete": {"map": {"family": "ip6", "table": "kube-proxy", "name": "localhost-nodeport-reject-ports"}}})
    );
}

#[test]
fn rules_with_comments_and_insert() {
    let mut t = tx();
    t.add_rule(
        "services",
        "ip daddr @cluster-ips reject",
        Some("a \"quoted\" comment"),
    );
    t.push(
        Verb::Insert,
        Object::Rule(Rule {
            chain: "services".into(),
            rule: "drop".into(),
            comment: None,
        }),
    );
    let d = doc(&t);
    assert_eq!(
        d["nftables"][1],
        json!({"add": {"rule": {"family": "ip", "table": "kube-proxy", "chain": "services",
            "expr": [m(pl("ip", "daddr"), "==", json!("@cluster-ips")), {"reject": null}],
            "comment": "a \"quoted\" comment"}}})
    );
    assert_eq!(
        d["nftables"][2]["insert"]["rule"]["expr"],
        json!([{"drop": null}])
    );
}

#[test]
fn operations_without_a_json_form_are_errors() {
    let rule = Object::Rule(Rule {
        chain: "c".into(),
        rule: "drop".into(),
        comment: None,
    });
    for verb in [Verb::Delete, Verb::Replace, Verb::Create, Verb::Flush] {
        let mut t = tx();
        t.push(verb, rule.clone());
        assert!(
            matches!(Document::from_transaction(&t), Err(JsonError::Operation { .. })),
            "{verb:?} rule"
        );
    }
    let mut t = tx();
    t.push(Verb::Reset, Object::Chain(Chain::named("c")));
    assert!(Document::from_transaction(&t).is_err());
    let mut t = tx();
    t.add_map(Set {
        name: "m".into(),
        set_type: "ipv4_addr : nonsense".into(),
        flags: vec![],
        timeout: None,
        comment: None,
    });
    assert!(matches!(
        Document::from_transaction(&t),
        Err(JsonError::Object { .. })
    ));
    let mut t = tx();
    t.add_element(ContainerKind::Set, "s", "10.0.0.1 .".into(), None, None);
    assert!(matches!(
        Document::from_transaction(&t),
        Err(JsonError::Element { .. })
    ));
    let mut t = tx();
    t.add(Object::Element(Element {
        kind: ContainerKind::Map,
        container: "m".into(),
        key: "tcp . 80".into(),
        value: Some("goto".into()),
        comment: None,
    }));
    assert!(matches!(
        Document::from_transaction(&t),
        Err(JsonError::Element { .. })
    ));
}

#[test]
fn a_state_is_its_add_commands() {
    let mut st = State::new();
    let mut t = tx();
    t.add_table(Some("rules for kube-proxy"));
    t.add_chain("b");
    t.add_chain("a");
    t.add_rule("a", "goto b", None);
    st.apply(&t).unwrap();
    let d: Value = serde_json::from_str(&state_json(&st).unwrap()).unwrap();
    let c = d["nftables"].as_array().unwrap();
    assert_eq!(c.len(), 5);
    assert_eq!(c[2]["add"]["chain"]["name"], "a");
    assert_eq!(c[4]["add"]["rule"]["expr"], json!([{"goto": {"target": "b"}}]));
    assert_eq!(
        state_json(&State::new()).unwrap(),
        r#"{"nftables":[{"metainfo":{"json_schema_version":1}}]}"#
    );
}

#[test]
fn a_partial_sync_is_also_the_crates_own_nftables_document() {
    let mut t = tx();
    t.add_chain("endpoint-X");
    t.flush_chain("endpoint-X");
    t.add_rule(
        "endpoint-X",
        "meta l4proto tcp dnat to 10.0.0.1:80",
        Some("ns/svc:p"),
    );
    t.add_element(
        ContainerKind::Map,
        "service-ips",
        "10.96.0.1 . tcp . 80".into(),
        Some("goto service-X".into()),
        Some("c".into()),
    );
    t.add_element(ContainerKind::Set, "cluster-ips", "10.96.0.1".into(), None, None);
    t.delete_element(ContainerKind::Map, "service-ips", "10.96.0.2 . tcp . 80".into());
    let d = Document::from_transaction(&t).unwrap();
    let nft = d.to_nftables().unwrap();
    assert_eq!(serde_json::to_value(&nft).unwrap(), doc(&t));
    assert_eq!(nft.objects.len(), 7);
    // what the crate's schema cannot hold is an error, never a changed document
    let mut t = tx();
    t.add_map(Set {
        name: "service-ips".into(),
        set_type: "ipv4_addr . inet_proto . inet_service : verdict".into(),
        flags: vec![],
        timeout: None,
        comment: None,
    });
    assert!(matches!(
        Document::from_transaction(&t).unwrap().to_nftables(),
        Err(JsonError::Operation { .. })
    ));
    let mut t = tx();
    t.add_table(Some("rules for kube-proxy"));
    assert!(Document::from_transaction(&t).unwrap().to_nftables().is_err());
    let mut t = tx();
    t.add_element(
        ContainerKind::Map,
        "m",
        "10.0.0.1 . tcp . 80".into(),
        Some("drop".into()),
        None,
    );
    assert!(Document::from_transaction(&t).unwrap().to_nftables().is_err());
    let mut t = tx();
    t.add_table(None);
    t.add_set(Set {
        name: "affinity-X".into(),
        set_type: "ipv4_addr".into(),
        flags: vec![SetFlag::Timeout],
        timeout: Some(60),
        comment: None,
    });
    let d = Document::from_transaction(&t).unwrap();
    assert_eq!(serde_json::to_value(d.to_nftables().unwrap()).unwrap(), doc(&t));
}
