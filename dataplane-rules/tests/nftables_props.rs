//! Invariants of the nftables proxier: partial syncs applied one after the other give
//! the rule set a fresh full sync of the last state gives (but for stale chains, empty
//! and waiting for deletion); a sync without changes writes nothing; chunks of a
//! transaction applied in turn give the same rule set as the whole transaction.

use proptest::prelude::*;
use std::collections::BTreeSet;
use svcnet_rules::nftables::{
    LocalDetector, NftConfig, NftEndpoint, NftProxier, NftServicePort, Protocol, State, TABLE,
};

#[derive(Debug, Clone)]
struct Spec {
    ports: u8,
    node_port: bool,
    external_ip: bool,
    lb: bool,
    source_range: bool,
    affinity: bool,
    etp_local: bool,
    itp_local: bool,
    endpoints: Vec<(u8, bool)>,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        1u8..3,
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        any::<bool>(),
        proptest::collection::vec((1u8..6, any::<bool>()), 0..4),
    )
        .prop_map(
            |(ports, node_port, external_ip, lb, source_range, affinity, etp_local, itp_local, endpoints)| {
                Spec {
                    ports,
                    node_port,
                    external_ip,
                    lb,
                    source_range,
                    affinity,
                    etp_local,
                    itp_local,
                    endpoints,
                }
            },
        )
}

/// Up to 4 Services (some absent) per state.
fn cluster() -> impl Strategy<Value = Vec<Option<Spec>>> {
    proptest::collection::vec(proptest::option::of(spec()), 4)
}

fn ports_of(cluster: &[Option<Spec>]) -> Vec<NftServicePort> {
    let mut out = Vec::new();
    for (i, s) in cluster.iter().enumerate() {
        let Some(s) = s else { continue };
        let mut eps: Vec<NftEndpoint> = Vec::new();
        for (host, local) in &s.endpoints {
            let ip = format!("10.0.{i}.{host}").parse().unwrap();
            if !eps.iter().any(|e| e.ip == ip) {
                eps.push(NftEndpoint {
                    ip,
                    port: 8080,
                    is_local: *local,
                });
            }
        }
        eps.sort_by_key(|e| format!("{}:{}", e.ip, e.port));
        for k in 0..s.ports {
            let externally = s.node_port || s.external_ip || s.lb;
            let etp_local = s.etp_local && externally;
            let uses_cluster = !s.itp_local || externally;
            let uses_local = s.itp_local || etp_local;
            let local: Vec<NftEndpoint> = eps.iter().filter(|e| e.is_local).copied().collect();
            let cluster = if uses_cluster { eps.clone() } else { Vec::new() };
            let local = if uses_local { local } else { Vec::new() };
            let reach: Vec<NftEndpoint> = eps
                .iter()
                .filter(|e| cluster.contains(e) || local.contains(e))
                .copied()
                .collect();
            let has = if uses_cluster {
                !eps.is_empty()
            } else {
                !local.is_empty()
            };
            out.push(NftServicePort {
                namespace: "ns".into(),
                name: format!("svc{i}"),
                port_name: format!("p{k}"),
                protocol: if k == 0 { Protocol::Tcp } else { Protocol::Udp },
                cluster_ip: format!("172.30.0.{}", i + 1).parse().unwrap(),
                port: 80 + u16::from(k),
                node_port: if s.node_port {
                    30000 + 10 * i as u16 + u16::from(k)
                } else {
                    0
                },
                external_ips: if s.external_ip {
                    vec![format!("203.0.113.{}", i + 1).parse().unwrap()]
                } else {
                    vec![]
                },
                load_balancer_vips: if s.lb {
                    vec![format!("198.51.100.{}", i + 1).parse().unwrap()]
                } else {
                    vec![]
                },
                source_ranges: if s.source_range {
                    vec!["192.168.0.0/16".parse().unwrap()]
                } else {
                    vec![]
                },
                affinity_timeout: s.affinity.then_some(10800),
                internal_policy_local: s.itp_local,
                external_policy_local: etp_local,
                externally_accessible: externally,
                uses_cluster_endpoints: uses_cluster,
                uses_local_endpoints: uses_local,
                cluster_endpoints: cluster,
                local_endpoints: local,
                all_locally_reachable: reach,
                has_endpoints: has,
            });
        }
    }
    out
}

fn config() -> NftConfig {
    let mut c = NftConfig::new("192.168.0.2".parse().unwrap());
    c.local_detector = Some(LocalDetector::ClusterCidr("10.0.0.0/8".parse().unwrap()));
    c.service_cidrs = vec!["172.30.0.0/16".into()];
    c
}

fn changed(a: &[Option<Spec>], b: &[Option<Spec>]) -> BTreeSet<String> {
    let pa = ports_of(a);
    let pb = ports_of(b);
    let mut out = BTreeSet::new();
    for i in 0..a.len().max(b.len()) {
        let name = format!("svc{i}");
        let x: Vec<_> = pa.iter().filter(|p| p.name == name).collect();
        let y: Vec<_> = pb.iter().filter(|p| p.name == name).collect();
        if x != y {
            out.insert(format!("ns/{name}"));
        }
    }
    out
}

/// The state without empty service chains (stale ones waiting for deletion).
fn without_stale(s: &State) -> State {
    let mut s = s.clone();
    for t in s.tables.values_mut() {
        t.chains
            .retain(|name, c| !(name.contains('/') && c.rules.is_empty()));
    }
    s
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn partial_syncs_reach_the_full_state(states in proptest::collection::vec(cluster(), 1..5), ages in proptest::collection::vec(any::<bool>(), 5)) {
        let mut p = NftProxier::new(config());
        p.sync_full(&ports_of(&states[0])).unwrap();
        for (i, w) in states.windows(2).enumerate() {
            if ages[i] {
                p.age_stale_chains();
            }
            let out = p.sync(&ports_of(&w[1]), Some(&changed(&w[0], &w[1]))).unwrap();
            prop_assert!(!out.full);
        }
        let last = states.last().unwrap();
        let again = p.sync(&ports_of(last), Some(&BTreeSet::new())).unwrap();
        // a sync without changes only re-flushes stale chains
        prop_assert!(again.main.operations.iter().all(|o| o.verb == svcnet_rules::nftables::Verb::Flush), "{}", again.main);
        let mut q = NftProxier::new(config());
        q.sync_full(&ports_of(last)).unwrap();
        prop_assert_eq!(without_stale(p.state()).dump(), q.state().dump());
        // a later full sync of the same state writes no element
        let full = p.sync_full(&ports_of(last)).unwrap();
        prop_assert!(full.main.operations.iter().all(|o| !matches!(o.object, svcnet_rules::nftables::Object::Element(ref e) if e.container != "nodeport-ips")), "{}", full.main);
    }

    #[test]
    fn chunks_apply_like_the_whole(cluster in cluster(), max in 1usize..40) {
        let mut p = NftProxier::new(config());
        let out = p.sync_full(&ports_of(&cluster)).unwrap();
        let mut s = State::new();
        for c in out.main.chunks(max) {
            prop_assert!(c.num_operations() <= max);
            s.apply(&c).unwrap();
        }
        prop_assert_eq!(s.dump(), p.state().dump());
        prop_assert!(s.table(svcnet_rules::nftables::Family::Ip, TABLE).is_some());
    }
}
