//! Rule text read back: for random clusters, the text svcnet writes (iptables-save and
//! iptables-restore text, the nftables dump and transaction) parses into rule sets that write
//! the same text again, and that trace every packet exactly as the rule sets the text came
//! from (outcome, endpoints, masquerade and the walk).

use std::net::IpAddr;

use proptest::prelude::*;
use serde_json::{Value, json};
use svcnet_model::{EndpointSlice, Service};
use svcnet_rules::iptables::{self, IptablesSettings, sync};
use svcnet_rules::nftables::{self, Family, NftConfig, NftProxier, NftServicePort, TABLE};
use svcnet_rules::trace::{HostAddresses, Packet, TraceError};
use svcnet_rules::{Protocol, ProxyConfig, ProxyModel};

const NODE_IP: &str = "192.168.0.2";

/// (type 0..3, eTP Local, iTP Local, affinity, source range, endpoints (node 0..3, ready, serving)).
type Svc = (u8, bool, bool, bool, bool, Vec<(u8, bool, bool)>);

fn objects(svcs: &[Svc]) -> (Vec<Service>, Vec<EndpointSlice>) {
    let mut services = Vec::new();
    let mut slices = Vec::new();
    for (i, (kind, etp, itp, affinity, ranges, eps)) in svcs.iter().enumerate() {
        let n = i + 1;
        let ty = ["ClusterIP", "NodePort", "LoadBalancer"][usize::from(*kind)];
        let mut spec = json!({"type": ty, "clusterIP": format!("172.30.0.{n}"),
            "externalIPs": [format!("192.0.2.{n}")],
            "ports": [{"name": "p", "port": 80, "protocol": "TCP"},
                      {"name": "q", "port": 53, "protocol": "UDP"}]});
        if *kind > 0 {
            spec["ports"][0]["nodePort"] = json!(3000 + n);
            spec["ports"][1]["nodePort"] = json!(4000 + n);
            if *etp {
                spec["externalTrafficPolicy"] = json!("Local");
                spec["healthCheckNodePort"] = json!(30000 + n);
            }
        }
        if *itp {
            spec["internalTrafficPolicy"] = json!("Local");
        }
        if *affinity {
            spec["sessionAffinity"] = json!("ClientIP");
            spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 60}});
        }
        if *kind == 2 && *ranges {
            spec["loadBalancerSourceRanges"] = json!(["203.0.113.0/25"]);
        }
        let mut svc = json!({"apiVersion": "v1", "kind": "Service",
            "metadata": {"name": format!("svc{n}"), "namespace": "ns"}, "spec": spec});
        if *kind == 2 {
            svc["status"] = json!({"loadBalancer": {"ingress": [{"ip": format!("1.1.1.{n}")}]}});
        }
        let eps: Vec<Value> = eps
            .iter()
            .enumerate()
            .map(|(j, &(node, ready, serving))| {
                json!({"addresses": [format!("10.180.{node}.{}", n * 10 + j)],
                       "nodeName": format!("node-{node}"),
                       "conditions": {"ready": ready, "serving": serving || ready, "terminating": !ready}})
            })
            .collect();
        slices.push(
            json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": format!("svc{n}-1"), "namespace": "ns",
                         "labels": {"kubernetes.io/service-name": format!("svc{n}")}},
            "addressType": "IPv4", "endpoints": eps,
            "ports": [{"name": "p", "port": 8080, "protocol": "TCP"},
                      {"name": "q", "port": 5353, "protocol": "UDP"}]}),
        );
        services.push(svc);
    }
    (
        services
            .into_iter()
            .map(|v| serde_json::from_value(v).expect("service"))
            .collect(),
        slices
            .into_iter()
            .map(|v| serde_json::from_value(v).expect("slice"))
            .collect(),
    )
}

fn packets(svcs: &[Svc]) -> Vec<Packet> {
    let mut dsts: Vec<(String, u16)> = vec![(NODE_IP.to_owned(), 9999)];
    for (i, s) in svcs.iter().enumerate() {
        let n = i + 1;
        for port in [80, 53, 81] {
            dsts.push((format!("172.30.0.{n}"), port));
            dsts.push((format!("192.0.2.{n}"), port));
            dsts.push((format!("1.1.1.{n}"), port));
        }
        for port in [3000 + n, 4000 + n, 30000 + n] {
            dsts.push((NODE_IP.to_owned(), port as u16));
            dsts.push(("127.0.0.1".to_owned(), port as u16));
        }
        for (j, e) in s.5.iter().enumerate() {
            dsts.push((format!("10.180.{}.{}", e.0, n * 10 + j), 8080));
        }
    }
    let srcs = ["10.0.0.2", NODE_IP, "203.0.113.2", "203.0.113.130", "10.180.0.10"];
    let mut out = Vec::new();
    for (d, port) in &dsts {
        for s in srcs {
            for protocol in [Protocol::Tcp, Protocol::Udp] {
                out.push(Packet {
                    source: s.parse::<IpAddr>().expect("src"),
                    destination: d.parse::<IpAddr>().expect("dst"),
                    port: *port,
                    protocol,
                });
            }
        }
    }
    out
}

fn config() -> ProxyConfig {
    let mut c = ProxyConfig::new("node-0", NODE_IP.parse().expect("ip"));
    c.cluster_cidrs = vec!["10.0.0.0/8".parse().expect("cidr")];
    c
}

fn check(svcs: &[Svc]) -> Result<(), String> {
    let cfg = config();
    let host = HostAddresses::of(&cfg);
    let (services, slices) = objects(svcs);
    let model = ProxyModel::build(&services, &slices, None, &cfg);
    let settings = IptablesSettings::new(&cfg).map_err(|e| e.to_string())?;

    // iptables: the state and the transaction read back to their text.
    let (tx, ipt) = sync(None, &model, &settings);
    let save = ipt.to_save_text();
    let parsed = iptables::parse_state(&save).map_err(|e| e.to_string())?;
    if !parsed.skipped.is_empty() {
        return Err(format!("iptables: skipped {:?}", parsed.skipped));
    }
    let back = parsed.value;
    if back.to_save_text() != save {
        return Err(format!(
            "iptables save text differs:\n{save}\n---\n{}",
            back.to_save_text()
        ));
    }
    let restore = tx.to_restore_text();
    let ptx = iptables::parse_transaction(&restore).map_err(|e| e.to_string())?;
    if ptx.value.to_restore_text() != restore {
        return Err("iptables restore text differs".to_owned());
    }
    // The restore payload alone, with kube-proxy's jump rules, traces as the state does.
    let mut from_tx = iptables::parse_state(&restore).map_err(|e| e.to_string())?.value;
    iptables::with_jump_rules(&mut from_tx);

    // nftables: the dump and the transaction read back to their text.
    let mut nft = NftProxier::new(NftConfig::from_proxy(&cfg, false).map_err(|e| e.to_string())?);
    let ports: Vec<NftServicePort> = model.ports.iter().map(NftServicePort::from).collect();
    let out = nft.sync_full(&ports).map_err(|e| e.to_string())?;
    let dump = nft.state().dump();
    let nst = nftables::parse_state(&dump).map_err(|e| e.to_string())?;
    if nst.dump() != dump {
        return Err("nftables dump differs".to_owned());
    }
    let txt: String = out.chunks(0).iter().map(ToString::to_string).collect();
    let ntx = nftables::parse_transactions(&txt).map_err(|e| e.to_string())?;
    if ntx.iter().map(ToString::to_string).collect::<String>() != txt {
        return Err("nftables transaction text differs".to_owned());
    }
    let from_ntx = nftables::parse_state(&txt).map_err(|e| e.to_string())?;
    if from_ntx.dump() != dump {
        return Err("nftables transactions do not build the dumped state".to_owned());
    }

    let table = nft.state().table(Family::Ip, TABLE).ok_or("no table")?;
    let ptable = nst.table(Family::Ip, TABLE).ok_or("no parsed table")?;
    for p in packets(svcs) {
        let a = svcnet_rules::trace::iptables::trace(&ipt, &host, &p).map_err(|e| e.to_string())?;
        let b = svcnet_rules::trace::iptables::trace(&back, &host, &p).map_err(|e| e.to_string())?;
        let c = svcnet_rules::trace::iptables::trace(&from_tx, &host, &p).map_err(|e| e.to_string())?;
        if a != b {
            return Err(format!("{p:?}: iptables {a:?}\nparsed {b:?}"));
        }
        if (a.outcome, &a.endpoints, a.masquerade) != (c.outcome, &c.endpoints, c.masquerade) {
            return Err(format!("{p:?}: iptables {a:?}\nfrom the restore text {c:?}"));
        }
        let a = svcnet_rules::trace::nftables::trace(table, &host, &p).map_err(|e| e.to_string())?;
        let b = svcnet_rules::trace::nftables::trace(ptable, &host, &p).map_err(|e| e.to_string())?;
        if a != b {
            return Err(format!("{p:?}: nftables {a:?}\nparsed {b:?}"));
        }
    }
    Ok(())
}

fn svc() -> impl Strategy<Value = Svc> {
    (
        0u8..3,
        any::<bool>(),
        any::<bool>(),
        prop::bool::weighted(0.3),
        any::<bool>(),
        prop::collection::vec((0u8..3, any::<bool>(), any::<bool>()), 0..4),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]
    #[test]
    fn parsed_text_writes_and_traces_as_the_original(svcs in prop::collection::vec(svc(), 1..4)) {
        if let Err(e) = check(&svcs) {
            prop_assert!(false, "{}", e);
        }
    }
}

#[test]
fn a_rule_the_tracer_does_not_model_is_reported_not_dropped() {
    let text = "*nat\n:PREROUTING - [0:0]\n:KUBE-SERVICES - [0:0]\n\
                -A PREROUTING -j KUBE-SERVICES\n\
                -A KUBE-SERVICES -p tcp -i eth0 -j DNAT --to-destination 10.0.0.9:80\n\
                -A KUBE-SERVICES -p udp -j LOG\nCOMMIT\n";
    let st = iptables::parse_state(text).expect("parses").value;
    assert!(st.to_save_text().ends_with(text));
    let host = HostAddresses::default();
    let trace =
        |to: &str| svcnet_rules::trace::iptables::trace(&st, &host, &Packet::parse("10.0.0.2", to).unwrap());
    // tcp reaches the unknown `-i eth0`; udp does not match it and reaches the unknown target.
    let e = trace("172.30.0.1:80/tcp").unwrap_err();
    assert!(
        matches!(&e, TraceError::Unsupported { what, .. } if what == "-i eth0"),
        "{e}"
    );
    let e = trace("172.30.0.1:80/udp").unwrap_err();
    assert!(
        matches!(&e, TraceError::Unsupported { what, .. } if what == "-j LOG"),
        "{e}"
    );
    // sctp matches neither rule.
    assert!(trace("172.30.0.1:80/sctp").is_ok());

    let st = nftables::parse_state(
        "add table ip kube-proxy\nadd chain ip kube-proxy nat-prerouting { type nat hook prerouting priority -100 ; }\n\
         add rule ip kube-proxy nat-prerouting iifname eth0 drop\n",
    )
    .expect("parses");
    let t = st.table(Family::Ip, TABLE).expect("table");
    let e =
        svcnet_rules::trace::nftables::trace(t, &host, &Packet::parse("10.0.0.2", "172.30.0.1:80").unwrap())
            .unwrap_err();
    assert!(matches!(e, TraceError::Unsupported { .. }), "{e}");
}

/// Words the parsers look for, to build near-valid garbage from.
const WORDS: &[&str] = &[
    "*nat",
    "*filter",
    "COMMIT",
    ":KUBE-SERVICES",
    "-",
    "[0:0]",
    "-A",
    "-X",
    "-N",
    "KUBE-SERVICES",
    "-m",
    "comment",
    "--comment",
    "\"a",
    "b\"",
    "\"",
    "!",
    "-s",
    "-d",
    "10.0.0.0/8",
    "1.2.3.4",
    "-p",
    "tcp",
    "--dport",
    "80",
    "statistic",
    "--mode",
    "random",
    "--probability",
    "0.5000000000",
    "mark",
    "--mark",
    "0x4000/0x4000",
    "recent",
    "--name",
    "--rcheck",
    "--seconds",
    "--reap",
    "-j",
    "DNAT",
    "--to-destination",
    "1.2.3.4:80",
    "MARK",
    "--or-mark",
    "\n",
    "add",
    "delete",
    "flush",
    "table",
    "chain",
    "rule",
    "set",
    "map",
    "element",
    "ip",
    "kube-proxy",
    "{",
    "}",
    ";",
    ":",
    "type",
    "hook",
    "priority",
    "nat",
    "prerouting",
    "-100",
    "goto",
    "jump",
    "verdict",
    "flags",
    "timeout",
    "10s",
    "\\\"",
    "é",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, failure_persistence: None, ..ProptestConfig::default() })]
    /// Whatever the text, the parsers answer (a rule set or an error naming a line) and never
    /// panic; what they accept traces without panicking too.
    #[test]
    fn parsers_never_panic(words in prop::collection::vec(prop::sample::select(WORDS), 0..60),
                           noise in ".{0,80}") {
        let text = format!("{}\n{noise}", words.join(" "));
        let host = HostAddresses::default();
        let p = Packet::parse("10.0.0.2", "1.2.3.4:80").expect("packet");
        if let Ok(st) = iptables::parse_state(&text) {
            let _ = svcnet_rules::trace::iptables::trace(&st.value, &host, &p);
        }
        let _ = iptables::parse_transaction(&noise);
        if let Ok(st) = nftables::parse_state(&text) {
            for t in st.tables.values() {
                let _ = svcnet_rules::trace::nftables::trace(t, &host, &p);
            }
        }
        let _ = nftables::parse_transactions(&noise);
    }
}

/// `iptables-save -c` of a kernel that restored svcnet's `--print state` (kube-proxy's
/// `TestExternalTrafficPolicyLocal` state, `--nfacct false`; iptables v1.8.9 nf_tables, in a
/// network namespace): its own layout (`-p tcp ... -m tcp --dport`, `/32`, `--set-xmark`,
/// 11-decimal probabilities, counters) traces exactly as the text it was loaded from.
#[test]
fn kernel_iptables_save_traces_as_the_text_it_was_loaded_from() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/recorded/rules/");
    let read = |f: &str| std::fs::read_to_string(format!("{dir}{f}")).expect("fixture");
    let kernel = iptables::parse_state(&read("iptables-save-kernel-etp-local.txt")).expect("kernel text");
    let mine = iptables::parse_state(&read("iptables-state-svcnet-etp-local.txt")).expect("svcnet text");
    assert!(kernel.skipped.is_empty() && mine.skipped.is_empty());
    let mut host = HostAddresses::default();
    for a in ["192.168.0.2", "192.168.1.2", "192.168.99.11"] {
        host.addresses.insert(a.parse().expect("ip"));
    }
    let mut n = 0;
    for src in ["10.0.0.2", "192.168.0.2", "203.0.113.2", "10.180.0.1", "1.2.3.4"] {
        for to in [
            "172.30.0.41:80/tcp",
            "172.30.0.41:80/udp",
            "172.30.0.41:81/tcp",
            "192.168.99.11:80/tcp",
            "1.2.3.4:80/tcp",
            "192.168.0.2:3001/tcp",
            "127.0.0.1:3001/tcp",
            "192.168.0.2:30000/tcp",
            "10.180.0.1:80/tcp",
        ] {
            let p = Packet::parse(src, to).expect("packet");
            let a = svcnet_rules::trace::iptables::trace(&kernel.value, &host, &p).expect("kernel trace");
            let b = svcnet_rules::trace::iptables::trace(&mine.value, &host, &p).expect("svcnet trace");
            assert_eq!(
                (a.outcome, &a.endpoints, a.masquerade, a.walk.len()),
                (b.outcome, &b.endpoints, b.masquerade, b.walk.len()),
                "{src} -> {to}"
            );
            n += usize::from(!a.endpoints.is_empty());
        }
    }
    assert!(n > 10, "only {n} packets were DNATed");
}

/// kube-proxy v1.37.2's own text (kube-oracle, the `TestExternalTrafficPolicyLocal` state):
/// each file reads back to its text, and the rule sets trace alike (iptables state, restore
/// payload with the jump rules, and svcnet's state; nftables dump and transaction; and the two
/// backends DNAT alike).
#[test]
fn kube_oracle_text_reads_back_and_traces_alike() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../testdata/recorded/rules/");
    let read = |f: &str| std::fs::read_to_string(format!("{dir}{f}")).expect("fixture");
    let with_newline = |t: String| if t.ends_with('\n') { t } else { t + "\n" };
    let state_text = with_newline(read("iptables-state-kube-oracle-etp-local.txt"));
    let state = iptables::parse_state(&state_text).expect("state").value;
    assert_eq!(state.to_save_text(), state_text);
    let restore_text = with_newline(read("iptables-restore-kube-oracle-etp-local.txt"));
    let tx = iptables::parse_transaction(&restore_text).expect("restore").value;
    assert_eq!(tx.to_restore_text(), restore_text);
    let mut restored = iptables::parse_state(&restore_text).expect("restore").value;
    assert!(iptables::with_jump_rules(&mut restored) > 0);
    let mine = iptables::parse_state(&read("iptables-state-svcnet-etp-local.txt"))
        .expect("svcnet")
        .value;

    let dump_text = read("nft-state-kube-oracle-etp-local.txt");
    let dump = nftables::parse_state(&dump_text).expect("dump");
    assert_eq!(dump.dump(), dump_text);
    let tx_text = read("nft-tx-kube-oracle-etp-local.txt");
    let txs = nftables::parse_transactions(&tx_text).expect("transaction");
    assert_eq!(txs.iter().map(ToString::to_string).collect::<String>(), tx_text);
    let built = nftables::parse_state(&tx_text).expect("transaction applies");
    assert_eq!(built.dump(), dump_text);
    let table = dump.table(Family::Ip, TABLE).expect("table");

    let mut host = HostAddresses::default();
    for a in ["192.168.0.2", "192.168.1.2", "192.168.99.11"] {
        host.addresses.insert(a.parse().expect("ip"));
    }
    let mut dnat = 0;
    for src in ["10.0.0.2", "192.168.0.2", "203.0.113.2", "10.180.2.1", "1.2.3.4"] {
        for to in [
            "172.30.0.41:80/tcp",
            "172.30.0.41:81/tcp",
            "192.168.99.11:80/tcp",
            "1.2.3.4:80/tcp",
            "192.168.0.2:3001/tcp",
            "127.0.0.1:3001/tcp",
            "192.168.0.2:30000/tcp",
        ] {
            let p = Packet::parse(src, to).expect("packet");
            let key = |t: svcnet_rules::trace::Trace| (t.outcome, t.endpoints, t.masquerade);
            let ipt = |s: &iptables::IptablesState| {
                key(svcnet_rules::trace::iptables::trace(s, &host, &p).expect("iptables trace"))
            };
            let a = ipt(&state);
            assert_eq!(a, ipt(&restored), "{src} -> {to}: restore payload");
            assert_eq!(a, ipt(&mine), "{src} -> {to}: svcnet");
            let b = key(svcnet_rules::trace::nftables::trace(table, &host, &p).expect("nft trace"));
            // (Loopback NodePorts: iptables DNATs them, nftables rejects them.)
            if a.0 == svcnet_rules::trace::Outcome::Dnat && !to.starts_with("127.") {
                dnat += 1;
                assert_eq!((a.0, &a.1), (b.0, &b.1), "{src} -> {to}: nftables");
            }
        }
    }
    assert!(dnat > 10, "only {dnat} packets were DNATed");
}
