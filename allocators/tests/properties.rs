//! Properties over random operation sequences: nothing is handed out twice, Free + Used = size,
//! a refused operation changes nothing, snapshot -> restore is the identity, and the sparse IPv6
//! allocator agrees with the bitmap one wherever both can hold the range.

use std::collections::BTreeSet;
use std::net::IpAddr;

use ipnet::IpNet;
use proptest::prelude::*;
use svcnet_allocators::{
    ClusterIpRange, IpFamily, MultiCidrAllocator, NodePortAllocator, SparseIpv6Range, SplitMix64,
};

#[derive(Debug, Clone)]
enum Op {
    Allocate(u32),
    AllocateNext,
    Release(u32),
}

fn ops(n: usize) -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            3 => any::<u32>().prop_map(Op::Allocate),
            4 => Just(Op::AllocateNext),
            2 => any::<u32>().prop_map(Op::Release),
        ],
        0..n,
    )
}

const CIDRS: &[&str] = &[
    "10.0.0.0/32",
    "10.0.0.0/31",
    "10.0.0.0/30",
    "10.0.0.0/28",
    "10.0.0.0/27",
    "10.0.0.0/25",
    "10.0.0.0/24",
    "fd00::/128",
    "fd00::/127",
    "fd00::/124",
    "fd00::/122",
    "fd00::/120",
];

/// An address at `k` modulo the CIDR's size plus a few, so some fall outside the range.
fn addr(net: &IpNet, k: u32) -> IpAddr {
    let span = (1u128 << (u32::from(net.max_prefix_len() - net.prefix_len())).min(20)) + 4;
    let v = u128::from(k) % span;
    match net.network() {
        IpAddr::V4(a) => IpAddr::V4((u32::from(a).wrapping_add(v as u32)).into()),
        IpAddr::V6(a) => IpAddr::V6((u128::from(a) + v).into()),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn cluster_ip_range_invariants(ci in 0..CIDRS.len(), seed in any::<u64>(), ops in ops(120)) {
        let net: IpNet = CIDRS[ci].parse().unwrap();
        let mut r = ClusterIpRange::new(net);
        let size = r.size();
        let mut rng = SplitMix64::new(seed);
        let mut model = BTreeSet::new();
        for op in ops {
            let before = r.clone();
            match op {
                Op::Allocate(k) => {
                    let ip = addr(&net, k);
                    match r.allocate(ip) {
                        Ok(()) => prop_assert!(model.insert(ip), "{ip} handed out twice"),
                        Err(_) => prop_assert_eq!(&r, &before),
                    }
                }
                Op::AllocateNext => match r.allocate_next(&mut rng) {
                    Ok(ip) => {
                        prop_assert!(r.contains(ip));
                        prop_assert!(model.insert(ip), "{ip} handed out twice");
                        // the lower (static) band is used only once the upper one is full
                        let off = r.band_offset();
                        let upper_taken_before = model
                            .iter()
                            .filter(|m| **m != ip && r.offset_of(**m).is_some_and(|o| o >= off))
                            .count();
                        if upper_taken_before < size - off {
                            prop_assert!(r.offset_of(ip).unwrap() >= off);
                        }
                    }
                    Err(_) => {
                        prop_assert_eq!(model.len(), size);
                        prop_assert_eq!(&r, &before);
                    }
                },
                Op::Release(k) => {
                    let ip = addr(&net, k);
                    r.release(ip);
                    model.remove(&ip);
                }
            }
            prop_assert_eq!(r.free() + r.used(), size);
            prop_assert_eq!(r.used(), model.len());
        }
        prop_assert_eq!(r.iter().collect::<BTreeSet<_>>(), model);
        // snapshot -> restore is the identity, bytes included
        let snap = r.snapshot();
        let back = ClusterIpRange::from_snapshot(&snap).unwrap();
        prop_assert_eq!(&back, &r);
        prop_assert_eq!(back.snapshot(), snap.clone());
        // a snapshot of another network is refused and changes nothing
        let other: IpNet = if net.addr().is_ipv4() { "10.1.0.0/24" } else { "fd01::/120" }.parse().unwrap();
        let mut o = ClusterIpRange::new(other);
        let before = o.clone();
        prop_assert!(o.restore(&snap.range, &snap.data).is_err());
        prop_assert_eq!(o, before);
    }

    #[test]
    fn node_port_invariants(base in 1000u32..2000, size in 1u32..300, seed in any::<u64>(), ops in ops(150)) {
        let mut a = NodePortAllocator::parse(&format!("{base}-{}", base + size - 1)).unwrap();
        let mut rng = SplitMix64::new(seed);
        let mut model = BTreeSet::new();
        let port = |k: u32| (base as i32 - 2) + (k % (size + 4)) as i32;
        for op in ops {
            let before = a.clone();
            match op {
                Op::Allocate(k) => match a.allocate(port(k)) {
                    Ok(()) => prop_assert!(model.insert(port(k))),
                    Err(_) => prop_assert_eq!(&a, &before),
                },
                Op::AllocateNext => match a.allocate_next(&mut rng) {
                    Ok(p) => {
                        prop_assert!(a.range().contains(i64::from(p)));
                        prop_assert!(model.insert(p), "{p} handed out twice");
                    }
                    Err(_) => {
                        prop_assert_eq!(model.len(), size as usize);
                        prop_assert_eq!(&a, &before);
                    }
                },
                Op::Release(k) => {
                    a.release(port(k));
                    model.remove(&port(k));
                }
            }
            prop_assert_eq!(a.free() + a.used(), size as usize);
            prop_assert_eq!(a.used(), model.len());
        }
        prop_assert_eq!(a.iter().collect::<BTreeSet<_>>(), model);
        let snap = a.snapshot();
        prop_assert_eq!(NodePortAllocator::from_snapshot(&snap).unwrap(), a);
    }

    #[test]
    fn multi_cidr_invariants(ci in 2..7usize, seed in any::<u64>(), ops in ops(120)) {
        let net: IpNet = CIDRS[ci].parse().unwrap();
        let mut m = MultiCidrAllocator::new(&[IpFamily::V4]);
        m.add_service_cidr("a", &[CIDRS[ci]], true).unwrap();
        let size = m.free(IpFamily::V4);
        let mut rng = SplitMix64::new(seed);
        let mut model = BTreeSet::new();
        for op in ops {
            let before = m.clone();
            match op {
                Op::Allocate(k) => match m.allocate(IpFamily::V4, addr(&net, k), None) {
                    Ok(()) => prop_assert!(model.insert(addr(&net, k))),
                    Err(_) => prop_assert_eq!(&m, &before),
                },
                Op::AllocateNext => match m.allocate_next(IpFamily::V4, None, &mut rng) {
                    Ok(ip) => {
                        prop_assert!(svcnet_allocators::prefix_contains_ip(&net, ip));
                        prop_assert!(model.insert(ip), "{ip} handed out twice");
                    }
                    Err(_) => {
                        prop_assert_eq!(model.len() as u64, size);
                        prop_assert_eq!(&m, &before);
                    }
                },
                Op::Release(k) => {
                    if m.release(IpFamily::V4, addr(&net, k)).is_ok() {
                        model.remove(&addr(&net, k));
                    } else {
                        prop_assert_eq!(&m, &before);
                    }
                }
            }
            prop_assert_eq!(m.free(IpFamily::V4) + m.used(IpFamily::V4), size);
        }
        prop_assert_eq!(m.iter(IpFamily::V4).collect::<BTreeSet<_>>(), model);
    }

    #[test]
    fn sparse_agrees_with_bitmap(prefix in 112u8..=128, seed in any::<u64>(), ops in ops(200)) {
        let text = format!("fd00:1::/{prefix}");
        let net: IpNet = text.parse().unwrap();
        let mut bitmap = ClusterIpRange::new(net);
        let mut sparse = SparseIpv6Range::parse(&text).unwrap();
        prop_assert_eq!(bitmap.size() as u64, sparse.size());
        prop_assert_eq!(bitmap.band_offset() as u64, sparse.band_offset());
        let mut r1 = SplitMix64::new(seed);
        let mut r2 = SplitMix64::new(seed);
        for op in ops {
            match op {
                Op::Allocate(k) => {
                    let ip = addr(&net, k);
                    prop_assert_eq!(bitmap.allocate(ip), sparse.allocate(ip));
                }
                Op::AllocateNext => {
                    prop_assert_eq!(bitmap.allocate_next(&mut r1), sparse.allocate_next(&mut r2));
                }
                Op::Release(k) => {
                    let ip = addr(&net, k);
                    bitmap.release(ip);
                    sparse.release(ip);
                }
            }
            prop_assert_eq!(bitmap.used() as u64, sparse.used());
        }
        prop_assert_eq!(bitmap.iter().collect::<Vec<_>>(), sparse.iter().collect::<Vec<_>>());
    }
}

fn port_spec() -> impl Strategy<Value = (i32, Option<i32>, bool)> {
    (1i32..6, prop::option::of(30000i32..30040), any::<bool>())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Services come and go; each creation takes all its node ports and ClusterIPs or none,
    /// and no two live Services share a node port or an IP.
    #[test]
    fn service_transactions_all_or_nothing(
        seed in any::<u64>(),
        services in prop::collection::vec(
            (prop::collection::vec(port_spec(), 0..4), any::<bool>(), 0u8..3, any::<bool>()),
            1..40,
        ),
    ) {
        use svcnet_allocators::{allocate_cluster_ips, allocate_node_ports, release_node_ports, ClusterIpRanges};
        use svcnet_model::{Service, ServicePort, ServiceSpec, ObjectMeta};
        let mut ports = NodePortAllocator::parse("30000-30040").unwrap();
        let mut ips = ClusterIpRanges::parse(&["10.0.0.0/29", "fd00::/125"]).unwrap();
        let mut rng = SplitMix64::new(seed);
        let mut live: Vec<Service> = Vec::new();
        for (i, (ps, local, policy, delete_one)) in services.into_iter().enumerate() {
            if delete_one && !live.is_empty() {
                let gone = live.remove(0);
                release_node_ports(&mut ports, &gone);
                svcnet_allocators::release_cluster_ips(&mut ips, &gone);
            }
            let svc = Service {
                metadata: ObjectMeta { namespace: Some("ns".into()), name: Some(format!("s{i}")), ..Default::default() },
                spec: Some(ServiceSpec {
                    type_: Some("LoadBalancer".into()),
                    external_traffic_policy: Some(if local { "Local" } else { "Cluster" }.into()),
                    ip_family_policy: Some(["SingleStack", "PreferDualStack", "RequireDualStack"][policy as usize].into()),
                    ports: Some(ps.iter().map(|(p, np, udp)| ServicePort {
                        port: *p,
                        node_port: *np,
                        protocol: Some(if *udp { "UDP" } else { "TCP" }.into()),
                        ..Default::default()
                    }).collect()),
                    ..Default::default()
                }),
                ..Default::default()
            };
            let (pb, ib) = (ports.clone(), ips.clone());
            let with_ips = match allocate_cluster_ips(&mut ips, &svc, &mut rng) {
                Ok(s) => s,
                Err(_) => { prop_assert_eq!(&ips, &ib); continue; }
            };
            match allocate_node_ports(&mut ports, &with_ips, &mut rng) {
                Ok(s) => live.push(s),
                Err(_) => {
                    prop_assert_eq!(&ports, &pb);
                    svcnet_allocators::release_cluster_ips(&mut ips, &with_ips);
                    prop_assert_eq!(&ips, &ib);
                }
            }
            // no sharing between live Services, and the allocators hold exactly what they use
            let mut seen_ports = BTreeSet::new();
            let mut seen_ips = BTreeSet::new();
            for s in &live {
                let mut mine = BTreeSet::new();
                for p in s.spec().ports() {
                    if let Some(np) = p.node_port { mine.insert(np); }
                }
                if let Some(hc) = s.spec().health_check_node_port { prop_assert!(mine.insert(hc)); }
                for np in mine { prop_assert!(seen_ports.insert(np), "node port {np} shared"); }
                for ip in s.cluster_ip_addrs().unwrap() { prop_assert!(seen_ips.insert(ip), "{ip} shared"); }
            }
            prop_assert_eq!(ports.iter().collect::<BTreeSet<_>>(), seen_ports);
            let held: BTreeSet<IpAddr> = ips.ranges().iter().flat_map(|r| r.iter()).collect();
            prop_assert_eq!(held, seen_ips);
        }
    }
}

#[test]
fn extreme_ranges_do_not_panic() {
    let mut rng = SplitMix64::new(1);
    for cidr in [
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff/128",
        "ffff:ffff:ffff:ffff:ffff:ffff:ffff:fffe/127",
        "ffff:ffff:ffff:ffff::/64",
        "255.255.255.255/32",
        "255.255.255.254/31",
        "255.255.255.0/24",
        "0.0.0.0/0",
        "::/0",
        "0.0.0.0/1",
        "::/1",
    ] {
        let net: IpNet = cidr.parse().unwrap();
        let mut r = ClusterIpRange::new(net);
        let _ = r.allocate_next(&mut rng);
        let _ = r.allocate(net.broadcast());
        let _ = r.allocate(net.network());
        r.release(net.broadcast());
        let _ = ClusterIpRange::from_snapshot(&r.snapshot()).unwrap();
        let mut m = MultiCidrAllocator::new(&[IpFamily::of_net(&net)]);
        m.add_service_cidr("x", &[cidr], true).unwrap();
        let fam = IpFamily::of_net(&net);
        let _ = m.allocate_next(fam, None, &mut rng);
        let _ = m.allocate(fam, net.broadcast(), None);
        let _ = (m.free(fam), m.used(fam), m.can_delete_cidr("x"));
        if let Ok(mut s) = SparseIpv6Range::parse(cidr) {
            let _ = s.allocate_next(&mut rng);
            let _ = s.allocate(net.broadcast());
            assert!(s.used() <= s.size());
        }
    }
}
