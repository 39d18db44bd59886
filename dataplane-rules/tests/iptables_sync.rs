//! Invariants of the iptables syncs over generated clusters.

use std::collections::BTreeMap;

use proptest::prelude::*;
use serde_json::{Value, json};
use svcnet_model::{EndpointSlice, Service};
use svcnet_rules::iptables::{IptablesSettings, IptablesState, sync};
use svcnet_rules::{ProxyConfig, ProxyModel};

/// A small cluster: Services of every type and policy, slices with endpoints in every condition.
fn cluster() -> impl Strategy<Value = (Vec<Service>, Vec<EndpointSlice>)> {
    let service = (0usize..4, 0usize..4, any::<bool>(), any::<bool>(), any::<bool>(), 0usize..3).prop_map(
        |(name, typ, etp_local, itp_local, affinity, extra)| {
            let typ = ["ClusterIP", "NodePort", "LoadBalancer", "ClusterIP"][typ];
            let mut spec = json!({
                "type": typ, "clusterIP": format!("172.30.0.{}", name + 1),
                "ports": [{"name": "p80", "port": 80, "protocol": "TCP"}, {"name": "p53", "port": 53, "protocol": "UDP"}],
            });
            if typ != "ClusterIP" {
                spec["ports"][0]["nodePort"] = json!(30000 + name as i64);
                spec["externalTrafficPolicy"] = json!(if etp_local { "Local" } else { "Cluster" });
            }
            if typ == "LoadBalancer" && etp_local {
                spec["healthCheckNodePort"] = json!(31000 + name as i64);
            }
            if itp_local {
                spec["internalTrafficPolicy"] = json!("Local");
            }
            if affinity {
                spec["sessionAffinity"] = json!("ClientIP");
                spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 600}});
            }
            if extra == 1 {
                spec["externalIPs"] = json!([format!("192.168.99.{}", name + 1)]);
            }
            if extra == 2 {
                spec["loadBalancerSourceRanges"] = json!(["192.168.0.0/24", "203.0.113.0/25"]);
            }
            let status = if typ == "LoadBalancer" {
                json!({"loadBalancer": {"ingress": [{"ip": format!("1.2.3.{}", name + 1)}]}})
            } else {
                json!({})
            };
            serde_json::from_value::<Service>(json!({
                "metadata": {"name": format!("svc{name}"), "namespace": "ns"}, "spec": spec, "status": status
            }))
            .unwrap()
        },
    );
    let endpoint = (1u8..6, 0usize..3, 0usize..4).prop_map(|(ip, node, cond)| {
        let conditions = [
            json!({}),
            json!({"ready": false, "serving": true, "terminating": true}),
            json!({"ready": false, "serving": false, "terminating": true}),
            json!({"ready": false}),
        ][cond]
            .clone();
        json!({"addresses": [format!("10.180.0.{ip}")], "nodeName": (["node-a", "node-b", "node-c"][node]),
               "conditions": conditions})
    });
    let slice = (0usize..4, prop::collection::vec(endpoint, 0..4)).prop_map(|(svc, eps)| {
        serde_json::from_value::<EndpointSlice>(json!({
            "metadata": {"name": format!("svc{svc}-x"), "namespace": "ns",
                         "labels": {"kubernetes.io/service-name": format!("svc{svc}")}},
            "addressType": "IPv4",
            "ports": [{"name": "p80", "port": 80, "protocol": "TCP"}, {"name": "p53", "port": 53, "protocol": "UDP"}],
            "endpoints": eps
        }))
        .unwrap()
    });
    (
        prop::collection::vec(service, 0..4),
        prop::collection::vec(slice, 0..4),
    )
}

fn config() -> ProxyConfig {
    let mut c = ProxyConfig::new("node-a", "192.168.0.2".parse().unwrap());
    c.cluster_cidrs = vec!["10.0.0.0/8".parse().unwrap()];
    c.masquerade_mark = "0x4000".into();
    c
}

/// The tables as chain -> rules, chain order aside.
fn tables(s: &IptablesState) -> BTreeMap<String, Vec<String>> {
    let mut out = BTreeMap::new();
    for t in [&s.filter, &s.nat] {
        for (c, rules) in &t.chains {
            out.insert(
                format!("{} {c}", t.name),
                rules.iter().map(|r| r.to_string()).collect(),
            );
        }
    }
    out
}

fn model(c: &(Vec<Service>, Vec<EndpointSlice>), config: &ProxyConfig) -> ProxyModel {
    ProxyModel::build(&c.0, &c.1, None, config)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// A partial sync on top of the previous tables leaves the same tables as a full sync of
    /// the new state on a fresh node; and it writes no chain of an unchanged Service.
    #[test]
    fn partial_sync_reaches_the_full_sync_state(before in cluster(), after in cluster()) {
        let config = config();
        let settings = IptablesSettings::new(&config).unwrap();
        let (_, s1) = sync(None, &model(&before, &config), &settings);
        let (tx, s2) = sync(Some(&s1), &model(&after, &config), &settings);
        prop_assert!(!tx.full);
        let (_, full) = sync(None, &model(&after, &config), &settings);
        prop_assert_eq!(tables(&s2), tables(&full));
        // Syncing the same state again writes no service chain at all.
        let (again, s3) = sync(Some(&s2), &model(&after, &config), &settings);
        prop_assert!(again.nat.chains.iter().all(|c| !c.is_service_chain()), "{}", again.to_restore_text());
        prop_assert_eq!(tables(&s3), tables(&s2));
        // The payloads' segments are their text, as the typed tables write it.
        for t in [&tx, &again] {
            let joined: String = t.segments().iter().collect();
            let mut typed = String::new();
            t.filter.write_to(&mut typed);
            t.nat.write_to(&mut typed);
            prop_assert_eq!(&joined, &typed);
            prop_assert_eq!(&joined, &t.to_restore_text());
            let mut io = Vec::new();
            t.write_io(&mut io).unwrap();
            prop_assert_eq!(io, joined.into_bytes());
        }
    }

    /// Every restore payload parses: chains are declared before their rules, jumps go to
    /// declared or existing chains, and no deleted chain is used.
    #[test]
    fn payload_jumps_reach_existing_chains(c in cluster()) {
        let config = config();
        let settings = IptablesSettings::new(&config).unwrap();
        let (tx, state) = sync(None, &model(&c, &config), &settings);
        for t in [&state.filter, &state.nat] {
            for rules in t.chains.values() {
                for r in rules {
                    if let svcnet_rules::iptables::Target::Jump(to) = r.target {
                        prop_assert!(t.chains.contains_key(&to), "{} jumps to a missing chain", r);
                    }
                }
            }
        }
        let text = tx.to_restore_text();
        prop_assert!(text.starts_with("*filter\n") && text.ends_with("COMMIT\n"));
    }
}

#[test]
fn a_one_endpoint_change_rewrites_only_that_service() {
    let svc = |n: usize| -> Value {
        json!({"metadata": {"name": format!("s{n}"), "namespace": "ns"},
               "spec": {"clusterIP": format!("172.30.0.{}", n + 1), "ports": [{"name": "p", "port": 80}]}})
    };
    let slice = |n: usize, ips: &[&str]| -> Value {
        json!({"metadata": {"name": format!("s{n}-1"), "namespace": "ns", "labels": {"kubernetes.io/service-name": format!("s{n}")}},
               "addressType": "IPv4", "ports": [{"name": "p", "port": 80}],
               "endpoints": ips.iter().map(|ip| json!({"addresses": [ip]})).collect::<Vec<_>>()})
    };
    let services: Vec<Service> = (0..3).map(|n| serde_json::from_value(svc(n)).unwrap()).collect();
    let before: Vec<EndpointSlice> = vec![
        serde_json::from_value(slice(0, &["10.0.0.1"])).unwrap(),
        serde_json::from_value(slice(1, &["10.0.1.1", "10.0.1.2"])).unwrap(),
    ];
    let mut after = before.clone();
    after[1] = serde_json::from_value(slice(1, &["10.0.1.1", "10.0.1.3"])).unwrap();
    let config = config();
    let settings = IptablesSettings::new(&config).unwrap();
    let (_, s1) = sync(
        None,
        &ProxyModel::build(&services, &before, None, &config),
        &settings,
    );
    let (tx, _) = sync(
        Some(&s1),
        &ProxyModel::build(&services, &after, None, &config),
        &settings,
    );
    let text = tx.to_restore_text();
    // s1's chains (masquerade and two endpoints) and the new endpoint's chain are written,
    // the stale endpoint chain is deleted.
    assert_eq!(text.matches("-A KUBE-SVC-").count(), 3, "{text}");
    assert!(text.contains("-j DNAT --to-destination 10.0.1.3:80"), "{text}");
    assert!(!text.contains("ns/s0:p ->"), "{text}");
    assert_eq!(text.matches("\n-X KUBE-SEP-").count(), 1, "{text}");
}
