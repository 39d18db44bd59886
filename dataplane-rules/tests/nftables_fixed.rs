//! The fixed objects of kube-proxy's nftables rule set, compared with kube-proxy v1.37.2's
//! own output (fixtures produced by kube-oracle for an empty cluster).

use svcnet_rules::nftables::{LocalDetector, NftConfig, NftProxier};

fn sorted(text: &str) -> Vec<&str> {
    let mut v: Vec<&str> = text.lines().filter(|l| !l.is_empty()).collect();
    v.sort();
    v
}

fn config() -> NftConfig {
    let mut c = NftConfig::new("192.168.0.2".parse().unwrap());
    c.masquerade_mark = "0x4000".into();
    c.local_detector = Some(LocalDetector::ClusterCidr("10.0.0.0/8".parse().unwrap()));
    c.service_cidrs = vec!["172.30.0.0/16".into()];
    c
}

#[test]
fn empty_cluster_matches_kube_proxy() {
    let mut p = NftProxier::new(config());
    let out = p.sync_full(&[]).unwrap();
    assert_eq!(out.main.num_operations(), 93);
    assert_eq!(
        sorted(&out.main.render()),
        sorted(include_str!("../../testdata/recorded/rules/nft-empty.tx"))
    );
    assert_eq!(
        p.state().dump(),
        include_str!("../../testdata/recorded/rules/nft-empty.state")
    );
}

fn port(name: &str, port_name: &str) -> svcnet_rules::nftables::NftServicePort {
    use svcnet_rules::nftables::{NftEndpoint, NftServicePort, Protocol};
    let ep = NftEndpoint {
        ip: "10.0.0.5".parse().unwrap(),
        port: 80,
        is_local: true,
    };
    NftServicePort {
        namespace: "ns".into(),
        name: name.into(),
        port_name: port_name.into(),
        protocol: Protocol::Tcp,
        cluster_ip: "172.30.0.10".parse().unwrap(),
        port: 80,
        node_port: 0,
        external_ips: vec![],
        load_balancer_vips: vec![],
        source_ranges: vec![],
        affinity_timeout: Some(60),
        internal_policy_local: false,
        external_policy_local: false,
        externally_accessible: false,
        uses_cluster_endpoints: true,
        uses_local_endpoints: false,
        cluster_endpoints: vec![ep],
        local_endpoints: vec![],
        all_locally_reachable: vec![ep],
        has_endpoints: true,
    }
}

#[test]
fn names_the_service_that_breaks_a_limit_and_emits_nothing() {
    use svcnet_rules::nftables::{Limits, NftError};
    let mut p = NftProxier::new(config());
    // a character nft cannot take in an unquoted name
    let err = p.sync_full(&[port("web", "p 1")]).unwrap_err();
    match &err {
        NftError::Limit { service, .. } => assert_eq!(service, "ns/web:p 1"),
        e => panic!("unexpected {e}"),
    }
    assert!(p.state().tables.is_empty(), "nothing is applied");
    // a name longer than the kernel takes: only with a tighter limit, since kube-proxy
    // truncates its own names to 240 + prefix
    let mut p = NftProxier::new(config());
    p.set_limits(Limits {
        max_name: 40,
        ..Limits::default()
    });
    let err = p.sync_full(&[port("web", "http")]).unwrap_err().to_string();
    assert!(err.starts_with("service ns/web:http: object name"), "{err}");
    // too many endpoints for one numgen map
    let mut p = NftProxier::new(config());
    p.set_limits(Limits {
        max_elements: 1,
        ..Limits::default()
    });
    let mut two = port("web", "http");
    two.affinity_timeout = None;
    let ep2 = svcnet_rules::nftables::NftEndpoint {
        ip: "10.0.0.6".parse().unwrap(),
        port: 80,
        is_local: false,
    };
    two.cluster_endpoints.push(ep2);
    two.all_locally_reachable.push(ep2);
    let err = p.sync_full(&[two]).unwrap_err().to_string();
    assert!(err.contains("ns/web:http") && err.contains("numgen"), "{err}");
    // within the limits all is well
    let mut p = NftProxier::new(config());
    assert!(p.sync_full(&[port("web", "http")]).is_ok());
}

#[test]
fn repeated_syncs_count_operations_like_kube_proxy() {
    // TestSyncProxyRulesRepeated's steps (endpoints local)
    use std::collections::BTreeSet;
    let mut p = NftProxier::new(config());
    p.sync_full(&[]).unwrap();
    let mut web = port("web", "http");
    web.affinity_timeout = None;
    let changed: BTreeSet<String> = ["ns/web".to_owned()].into();
    let out = p.sync(std::slice::from_ref(&web), Some(&changed)).unwrap();
    assert_eq!(out.main.num_operations(), 6, "{}", out.main);
    let out = p.sync(&[], Some(&changed)).unwrap();
    assert_eq!(out.main.num_operations(), 4, "{}", out.main);
    p.age_stale_chains();
    let out = p.sync(&[], Some(&BTreeSet::new())).unwrap();
    assert_eq!(out.main.num_operations(), 0, "{}", out.main);
    assert_eq!(out.stale_deletion.map(|t| t.num_operations()), Some(1));
}

#[test]
fn a_refused_sync_makes_the_next_one_full() {
    use std::collections::BTreeSet;
    let mut p = NftProxier::new(config());
    p.sync_full(&[port("web", "http")]).unwrap();
    let changed: BTreeSet<String> = ["ns/bad".to_owned()].into();
    assert!(
        p.sync(&[port("web", "http"), port("bad", "p 1")], Some(&changed))
            .is_err()
    );
    assert!(p.needs_full_sync());
    let out = p.sync(&[port("web", "http")], Some(&changed)).unwrap();
    assert!(out.full);
    let mut q = NftProxier::new(config());
    q.sync_full(&[port("web", "http")]).unwrap();
    assert_eq!(p.state().dump(), q.state().dump());
}

#[test]
fn the_hash_key_changes_no_output() {
    use std::collections::BTreeSet;
    use svcnet_model::hash::KeyedState;
    let ports = vec![port("web", "http"), port("api", "grpc"), port("db", "sql")];
    let run = |mut p: NftProxier| {
        let full = p.sync_full(&ports).unwrap().main.render();
        let changed: BTreeSet<String> = ["ns/api".to_owned()].into();
        let partial = p.sync(&ports[..1], Some(&changed)).unwrap().main.render();
        (full, partial, p.state().dump())
    };
    let fixed = run(NftProxier::new(config()));
    let keyed = run(NftProxier::new(config()).with_hash_key(KeyedState::new([7, 11])));
    assert_eq!(keyed, fixed);
    assert!(
        fixed.0.contains("ns/web") && fixed.2.contains("ns/db"),
        "{}",
        fixed.0
    );
}

#[test]
fn a_services_ports_apart_are_written_together() {
    // Services in order of first appearance, each with all its ports in their order
    let apart = [port("web", "http"), port("api", "grpc"), port("web", "https")];
    let together = [port("web", "http"), port("web", "https"), port("api", "grpc")];
    let run = |ports: &[svcnet_rules::nftables::NftServicePort]| {
        let mut p = NftProxier::new(config());
        let full = p.sync_full(ports).unwrap().main.render();
        (full, p.state().dump())
    };
    let (a, b) = (run(&apart), run(&together));
    assert_eq!(a, b);
    let web = a.0.find("ns/web/tcp/https").unwrap();
    assert!(web < a.0.find("ns/api/tcp/grpc").unwrap(), "{}", a.0);
    // the partial syncs that follow know every port of the Service
    let mut p = NftProxier::new(config());
    p.sync_full(&apart).unwrap();
    let changed: std::collections::BTreeSet<String> = ["ns/web".to_owned()].into();
    let out = p.sync(&apart[1..2], Some(&changed)).unwrap().main.render();
    assert!(
        out.contains("flush chain ip kube-proxy service-") && out.contains("ns/web/tcp/https"),
        "{out}"
    );
}

#[test]
fn limit_breaches_are_reported_in_kube_proxys_order() {
    use svcnet_rules::nftables::{Limits, NftError};
    // `w...` has no endpoint: its element's comment `ns/w...:http` is longer than 70 bytes
    // (found checking the written transaction); `x...` has a chain name longer than 100
    // (found while writing, which comes first whatever the order of the Services)
    let web = "w".repeat(66);
    let mut none = port(&web, "http");
    none.cluster_endpoints.clear();
    none.all_locally_reachable.clear();
    none.has_endpoints = false;
    let long = port(&"x".repeat(90), "http");
    let limits = Limits {
        max_comment: 70,
        max_name: 100,
        ..Limits::default()
    };
    let run = |ports: &[svcnet_rules::nftables::NftServicePort]| {
        let mut p = NftProxier::new(config());
        p.set_limits(limits);
        let err = p.sync_full(ports).unwrap_err();
        assert!(p.state().tables.is_empty(), "nothing is applied");
        match err {
            NftError::Limit { service, what, .. } => (service, what),
            e => panic!("unexpected {e}"),
        }
    };
    let name = format!("ns/{}:http", "x".repeat(90));
    for ports in [vec![none.clone(), long.clone()], vec![long.clone(), none.clone()]] {
        let (service, what) = run(&ports);
        assert_eq!((service.as_str(), what.as_str()), (name.as_str(), "object name"));
    }
    // alone, the comment: the first operation that breaks a limit, after every Service
    // before and after it was written
    let ok = port("db", "sql");
    let (service, what) = run(&[ok.clone(), none.clone(), ok]);
    assert_eq!(service, format!("ns/{web}:http"));
    assert!(what.starts_with("element comment"), "{what}");
}
