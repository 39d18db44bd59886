//! Allocator operation sequences (bitmap ClusterIP ranges, NodePorts, multi-CIDR, sparse IPv6,
//! snapshot/restore) against a reference model (a set of what is held): nothing is handed out
//! twice, a refused operation changes nothing, and counts agree with the model.
#![no_main]

use std::collections::BTreeSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use arbitrary::{Result, Unstructured};
use ipnet::IpNet;
use libfuzzer_sys::fuzz_target;
use svcnet_allocators::{
    ClusterIpRange, IpFamily, MultiCidrAllocator, NodePortAllocator, PortRange, RangeAllocation,
    SparseIpv6Range, SplitMix64, prefix_contains_ip,
};
use svcnet_fuzz::pick;

/// A network: a base address (often at the ends of the address space) and a prefix that keeps
/// bitmaps small.
fn net(u: &mut Unstructured<'_>, v6: bool) -> Result<IpNet> {
    Ok(if v6 {
        let base = match u.int_in_range(0..=3)? {
            0 => u128::MAX,
            1 => 0,
            2 => 0xfd00u128 << 112,
            _ => u.arbitrary::<u128>()?,
        };
        let p = u.int_in_range(96..=128u8)?;
        IpNet::new(IpAddr::V6(Ipv6Addr::from(base)), p).unwrap().trunc()
    } else {
        let base = match u.int_in_range(0..=3)? {
            0 => u32::MAX,
            1 => 0,
            2 => 0x0a00_0000,
            _ => u.arbitrary::<u32>()?,
        };
        let p = u.int_in_range(14..=32u8)?;
        IpNet::new(IpAddr::V4(Ipv4Addr::from(base)), p).unwrap().trunc()
    })
}

/// An address near `net` (inside mostly, around its ends sometimes, anywhere rarely).
fn near(u: &mut Unstructured<'_>, net: &IpNet) -> Result<IpAddr> {
    let (lo, hi, v6) = match net {
        IpNet::V4(n) => (
            u128::from(u32::from(n.network())),
            u128::from(u32::from(n.broadcast())),
            false,
        ),
        IpNet::V6(n) => (u128::from(n.network()), u128::from(n.broadcast()), true),
    };
    let v = match u.int_in_range(0..=7)? {
        0 => lo.wrapping_sub(u128::from(u.int_in_range(0..=2u8)?)),
        1 => hi.wrapping_add(u128::from(u.int_in_range(0..=2u8)?)),
        2 => u.arbitrary::<u128>()?,
        _ => lo.wrapping_add(u128::from(u.arbitrary::<u16>()?) % (hi - lo).saturating_add(1).min(1 << 16)),
    };
    Ok(if v6 {
        IpAddr::V6(Ipv6Addr::from(v))
    } else {
        IpAddr::V4(Ipv4Addr::from(v as u32))
    })
}

fn cluster_ip(u: &mut Unstructured<'_>) -> Result<()> {
    let v6 = u.arbitrary()?;
    let n = net(u, v6)?;
    let mut r = ClusterIpRange::new(n);
    let size = r.size();
    let mut rng = SplitMix64::new(u.arbitrary()?);
    let mut model = BTreeSet::new();
    while !u.is_empty() {
        let before = r.clone();
        match u.int_in_range(0..=5)? {
            0 | 1 => {
                let ip = near(u, &n)?;
                match r.allocate(ip) {
                    Ok(()) => assert!(model.insert(ip), "{ip} handed out twice"),
                    Err(_) => assert_eq!(r, before, "a refused allocate changed the range"),
                }
            }
            2 | 3 => match r.allocate_next(&mut rng) {
                Ok(ip) => {
                    assert!(r.contains(ip) && prefix_contains_ip(&n, ip));
                    assert!(model.insert(ip), "{ip} handed out twice");
                }
                Err(_) => {
                    assert_eq!(model.len(), size, "allocate_next refused with room left");
                    assert_eq!(r, before);
                }
            },
            4 => {
                let ip = near(u, &n)?;
                r.release(ip);
                model.remove(&ip);
            }
            _ => {
                let snap = r.snapshot();
                let back = ClusterIpRange::from_snapshot(&snap).expect("own snapshot");
                assert_eq!(back, r);
                assert_eq!(back.snapshot(), snap);
                // Arbitrary snapshot bytes: refused and unchanged, or taken whole.
                let data: Vec<u8> = u.arbitrary()?;
                let range = if u.arbitrary()? {
                    snap.range.clone()
                } else {
                    u.arbitrary::<String>()?
                };
                let mut t = r.clone();
                match t.restore(&range, &data) {
                    Ok(()) => assert!(t.used() <= t.size()),
                    Err(_) => assert_eq!(t, r, "a refused restore changed the range"),
                }
                let _ = ClusterIpRange::from_snapshot(&RangeAllocation { range, data });
            }
        }
        assert_eq!(r.free() + r.used(), size);
        assert_eq!(r.used(), model.len());
    }
    assert_eq!(r.iter().collect::<BTreeSet<_>>(), model);
    Ok(())
}

fn node_ports(u: &mut Unstructured<'_>) -> Result<()> {
    let spec = match u.int_in_range(0..=3)? {
        0 => u.arbitrary::<String>()?,
        1 => format!("{}-{}", u.arbitrary::<i64>()?, u.arbitrary::<i64>()?),
        2 => format!(
            "{}+{}",
            u.int_in_range(0..=70000u32)?,
            u.int_in_range(0..=70000u32)?
        ),
        _ => {
            let base = u.int_in_range(0..=65535u32)?;
            format!("{base}-{}", base + u.int_in_range(0..=300u32)?)
        }
    };
    let mut a = if u.ratio(1, 4)? {
        // The range's fields are public: any base, a size a bitmap can hold.
        let base = pick(
            u,
            &[
                0,
                1,
                65535,
                i32::MAX as u32 - 3,
                i32::MAX as u32,
                u32::MAX - 2,
                u32::MAX,
            ],
        )?;
        NodePortAllocator::new(PortRange {
            base,
            size: u.int_in_range(0..=8)?,
        })
    } else {
        let Ok(a) = NodePortAllocator::parse(&spec) else {
            return Ok(());
        };
        a
    };
    let _ = (a.range().last(), a.range().to_string());
    let range = a.range();
    let size = a.free() + a.used();
    let mut rng = SplitMix64::new(u.arbitrary()?);
    let mut model = BTreeSet::new();
    let port = |u: &mut Unstructured<'_>| -> Result<i32> {
        Ok(if u.ratio(1, 8)? {
            u.arbitrary()?
        } else {
            (range.base as i64 - 2 + i64::from(u.arbitrary::<u16>()?) % (i64::from(range.size) + 4)) as i32
        })
    };
    while !u.is_empty() {
        let before = a.clone();
        match u.int_in_range(0..=4)? {
            0 | 1 => {
                let p = port(u)?;
                match a.allocate(p) {
                    Ok(()) => assert!(model.insert(p), "port {p} handed out twice"),
                    Err(_) => assert_eq!(a, before),
                }
            }
            2 => match a.allocate_next(&mut rng) {
                Ok(p) => {
                    assert!(range.contains(i64::from(p)), "port {p} outside {range:?}");
                    assert!(model.insert(p), "port {p} handed out twice");
                }
                Err(e) => {
                    if matches!(e, svcnet_allocators::AllocError::Full) {
                        assert_eq!(model.len(), size);
                    }
                    assert_eq!(a, before, "a refused allocate_next changed the allocator");
                }
            },
            3 => {
                let p = port(u)?;
                a.release(p);
                model.remove(&p);
            }
            _ => {
                let snap = a.snapshot();
                // A range built past 65535 from the public fields cannot be parsed back.
                if range.last().is_some_and(|l| l <= 65535) {
                    assert_eq!(NodePortAllocator::from_snapshot(&snap).expect("own snapshot"), a);
                }
                let data: Vec<u8> = u.arbitrary()?;
                let mut t = a.clone();
                if t.restore(&snap.range, &data).is_err() {
                    assert_eq!(t, a);
                }
            }
        }
        assert_eq!(a.free() + a.used(), size);
        assert_eq!(a.used(), model.len());
    }
    assert_eq!(a.iter().collect::<BTreeSet<_>>(), model);
    Ok(())
}

fn multi_cidr(u: &mut Unstructured<'_>) -> Result<()> {
    let families: &[IpFamily] = pick(
        u,
        &[
            &[IpFamily::V4][..],
            &[IpFamily::V6],
            &[IpFamily::V4, IpFamily::V6],
        ],
    )?;
    let mut m = MultiCidrAllocator::new(families);
    let mut nets: Vec<IpNet> = Vec::new();
    for _ in 0..u.int_in_range(1..=3)? {
        let v6 = u.arbitrary()?;
        let n = if !nets.is_empty() && u.ratio(1, 3)? {
            // A CIDR inside, around or equal to one already there.
            let o = *u.choose(&nets)?;
            let p = (i16::from(o.prefix_len()) + i16::from(u.int_in_range(-2..=2i8)?))
                .clamp(0, i16::from(o.max_prefix_len())) as u8;
            IpNet::new(o.addr(), p.max(if o.addr().is_ipv4() { 14 } else { 96 }))
                .unwrap()
                .trunc()
        } else {
            net(u, v6)?
        };
        nets.push(n);
    }
    let mut rng = SplitMix64::new(u.arbitrary()?);
    let mut model: BTreeSet<IpAddr> = BTreeSet::new();
    let names = ["a", "b", "c"];
    while !u.is_empty() {
        let before = m.clone();
        let n = *u.choose(&nets)?;
        match u.int_in_range(0..=9)? {
            0 => {
                let name = pick(u, &names)?;
                let k = u.int_in_range(1..=2)?;
                let mut cidrs: Vec<String> = Vec::new();
                for _ in 0..k {
                    cidrs.push(if u.ratio(1, 10)? {
                        u.arbitrary()?
                    } else {
                        u.choose(&nets)?.to_string()
                    });
                }
                let refs: Vec<&str> = cidrs.iter().map(String::as_str).collect();
                if m.add_service_cidr(name, &refs, u.arbitrary()?).is_err() {
                    assert_eq!(m, before, "a refused ServiceCIDR changed the allocator");
                }
            }
            1 => m.mark_deleting(pick(u, &names)?),
            2 => m.delete_service_cidr(pick(u, &names)?),
            3 => {
                let name = pick(u, &names)?;
                let _ = m.can_delete_cidr(name);
                let _ = m.deletion_decision(name, u.arbitrary()?);
            }
            4 | 5 => {
                let ip = near(u, &n)?;
                // Each family's allocator sees only the CIDRs of its family (cidrallocator.go).
                let fam = if u.arbitrary()? {
                    IpFamily::of(ip)
                } else {
                    pick(u, &[IpFamily::V4, IpFamily::V6])?
                };
                match m.allocate(fam, ip, None) {
                    Ok(()) => {
                        assert_eq!(
                            fam,
                            IpFamily::of(ip),
                            "{ip} allocated by the other family's allocator"
                        );
                        assert!(model.insert(ip), "{ip} handed out twice");
                        assert!(m.has(fam, ip));
                    }
                    Err(_) => assert_eq!(m, before, "a refused allocate changed the allocator"),
                }
            }
            6 | 7 => {
                let fam = pick(u, &[IpFamily::V4, IpFamily::V6])?;
                match m.allocate_next(fam, None, &mut rng) {
                    Ok(ip) => {
                        assert_eq!(ip.is_ipv4(), fam == IpFamily::V4);
                        assert!(model.insert(ip), "{ip} handed out twice");
                        assert!(m.has(fam, ip), "allocated outside every ready ServiceCIDR");
                    }
                    Err(_) => assert_eq!(m, before, "a refused allocate_next changed the allocator"),
                }
            }
            8 => {
                let ip = near(u, &n)?;
                match m.release(IpFamily::of(ip), ip) {
                    Ok(()) => {
                        model.remove(&ip);
                    }
                    Err(_) => assert_eq!(m, before, "a refused release changed the allocator"),
                }
            }
            _ => {
                for f in [IpFamily::V4, IpFamily::V6] {
                    let _ = (m.free(f), m.cidrs(f));
                }
                let _ = m.ip_address_objects();
            }
        }
        let held: BTreeSet<IpAddr> = m.iter(IpFamily::V4).chain(m.iter(IpFamily::V6)).collect();
        assert_eq!(held, model, "the allocator's addresses differ from the model");
    }
    Ok(())
}

fn sparse(u: &mut Unstructured<'_>) -> Result<()> {
    let base = match u.int_in_range(0..=2)? {
        0 => u128::MAX,
        1 => 0xfd00u128 << 112,
        _ => u.arbitrary::<u128>()?,
    };
    let small = u.arbitrary::<bool>()?;
    let p = if small {
        u.int_in_range(112..=128u8)?
    } else {
        u.int_in_range(56..=128u8)?
    };
    let n = IpNet::new(IpAddr::V6(Ipv6Addr::from(base)), p).unwrap().trunc();
    let IpNet::V6(n6) = n else { unreachable!() };
    let Ok(mut s) = SparseIpv6Range::new(n6) else {
        assert!(p < 64, "a /{p} was refused");
        return Ok(());
    };
    let mut bitmap = small.then(|| ClusterIpRange::new(n));
    let seed = u.arbitrary()?;
    let (mut r1, mut r2) = (SplitMix64::new(seed), SplitMix64::new(seed));
    let mut model = BTreeSet::new();
    while !u.is_empty() {
        let before = s.clone();
        match u.int_in_range(0..=3)? {
            0 => {
                let ip = near(u, &n)?;
                let got = s.allocate(ip);
                if let Some(b) = &mut bitmap {
                    assert_eq!(b.allocate(ip), got, "sparse and bitmap disagree");
                }
                match got {
                    Ok(()) => assert!(model.insert(ip), "{ip} handed out twice"),
                    Err(_) => assert_eq!(s, before),
                }
            }
            1 | 2 => {
                let got = s.allocate_next(&mut r1);
                if let Some(b) = &mut bitmap {
                    assert_eq!(b.allocate_next(&mut r2), got, "sparse and bitmap disagree");
                }
                match got {
                    Ok(ip) => {
                        assert!(prefix_contains_ip(&n, ip));
                        assert!(model.insert(ip), "{ip} handed out twice");
                    }
                    Err(_) => {
                        assert_eq!(model.len() as u64, s.size());
                        assert_eq!(s, before);
                    }
                }
            }
            _ => {
                let ip = near(u, &n)?;
                s.release(ip);
                if let Some(b) = &mut bitmap {
                    b.release(ip);
                }
                model.remove(&ip);
            }
        }
        assert_eq!(s.used(), model.len() as u64);
        assert_eq!(s.free() + s.used(), s.size());
    }
    assert_eq!(s.iter().collect::<BTreeSet<_>>(), model);
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = match u.int_in_range(0..=3u8) {
        Ok(0) => cluster_ip(&mut u),
        Ok(1) => node_ports(&mut u),
        Ok(2) => multi_cidr(&mut u),
        Ok(_) => sparse(&mut u),
        Err(_) => Ok(()),
    };
});
