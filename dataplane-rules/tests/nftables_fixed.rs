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
        sorted(include_str!("fixtures/nft-empty.tx"))
    );
    assert_eq!(p.state().dump(), include_str!("fixtures/nft-empty.state"));
}
