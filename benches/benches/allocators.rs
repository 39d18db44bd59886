//! Benchmarks of svcnet-allocators: AllocateNext on a /12 at 90%, Allocate+Release pairs,
//! snapshot/restore of a full /16, repair of 50,000 Services, and the memory of the sparse /64
//! allocator after 1M allocations (printed once, in bytes).

use std::hint::black_box;
use std::net::IpAddr;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use svcnet_allocators::{
    ClusterIpRange, ClusterIpRanges, ClusterIpRepair, NodePortAllocator, SparseIpv6Range, SplitMix64,
};
use svcnet_model::{ObjectMeta, Service, ServiceSpec};

/// A /12 with 90% of its addresses taken (random positions, via `allocate_next`).
fn slash12_at_90() -> ClusterIpRange {
    let mut r = ClusterIpRange::parse("10.0.0.0/12").expect("cidr");
    let mut rng = SplitMix64::new(12);
    let target = r.size() * 9 / 10;
    while r.used() < target {
        r.allocate_next(&mut rng).expect("free");
    }
    r
}

fn allocate_next(c: &mut Criterion) {
    let mut g = c.benchmark_group("allocate_next");
    let mut r = slash12_at_90();
    let mut rng = SplitMix64::new(1);
    g.bench_function("cluster_ip_/12_90pct_full (allocate_next + release)", |b| {
        b.iter(|| {
            let ip = r.allocate_next(&mut rng).expect("free");
            r.release(black_box(ip));
        })
    });
    let mut np = NodePortAllocator::parse("30000-32767").expect("range");
    while np.used() < 2768 * 9 / 10 {
        np.allocate_next(&mut rng).expect("free");
    }
    g.bench_function("node_port_default_90pct_full (allocate_next + release)", |b| {
        b.iter(|| {
            let p = np.allocate_next(&mut rng).expect("free");
            np.release(black_box(p));
        })
    });
    let mut sparse = SparseIpv6Range::parse("fd00:10:96::/64").expect("cidr");
    for _ in 0..100_000 {
        sparse.allocate_next(&mut rng).expect("free");
    }
    g.bench_function("sparse_/64_100k_taken (allocate_next + release)", |b| {
        b.iter(|| {
            let ip = sparse.allocate_next(&mut rng).expect("free");
            sparse.release(black_box(ip));
        })
    });
    g.finish();
}

fn allocate_release(c: &mut Criterion) {
    let mut r = ClusterIpRange::parse("10.96.0.0/16").expect("cidr");
    let mut rng = SplitMix64::new(2);
    for _ in 0..32_000 {
        r.allocate_next(&mut rng).expect("free");
    }
    let free: Vec<IpAddr> = (1u32..65_535)
        .map(|i| IpAddr::V4((0x0A60_0000u32 + i).into()))
        .filter(|ip| !r.has(*ip))
        .collect();
    let mut i = 0usize;
    c.bench_function("allocate+release pair (/16 half full)", |b| {
        b.iter(|| {
            let ip = free[i % free.len()];
            i += 1;
            r.allocate(black_box(ip)).expect("free");
            r.release(ip);
        })
    });
}

fn snapshot_restore(c: &mut Criterion) {
    let mut full = ClusterIpRange::parse("10.96.0.0/16").expect("cidr");
    let mut rng = SplitMix64::new(3);
    while full.allocate_next(&mut rng).is_ok() {}
    let snap = full.snapshot();
    assert_eq!(snap.data.len(), 8192);
    let mut g = c.benchmark_group("snapshot_/16_full");
    g.bench_function("snapshot", |b| b.iter(|| black_box(full.snapshot())));
    g.bench_function("restore (from_snapshot)", |b| {
        b.iter(|| black_box(ClusterIpRange::from_snapshot(black_box(&snap)).expect("restore")))
    });
    g.bench_function("snapshot_base64", |b| {
        b.iter(|| black_box(full.snapshot().data_base64()))
    });
    g.finish();
}

fn services(n: usize) -> Vec<Service> {
    (0..n)
        .map(|i| {
            let ip = IpAddr::V4((0x0A00_0000u32 + 1 + (i as u32) * 7).into()).to_string();
            Service {
                metadata: ObjectMeta {
                    namespace: Some(format!("ns{}", i % 100)),
                    name: Some(format!("svc{i}")),
                    ..ObjectMeta::default()
                },
                spec: Some(ServiceSpec {
                    cluster_ip: Some(ip.clone()),
                    cluster_ips: Some(vec![ip]),
                    ..ServiceSpec::default()
                }),
                ..Service::default()
            }
        })
        .collect()
}

fn repair(c: &mut Criterion) {
    let svcs = services(50_000);
    let mut stored = ClusterIpRanges::parse(&["10.0.0.0/12"]).expect("cidr");
    for s in &svcs {
        for ip in s.cluster_ip_addrs().expect("ips") {
            stored.allocate(ip).expect("free");
        }
    }
    // a few leaks and a few missing records, as a real cluster has
    let mut rng = SplitMix64::new(4);
    for _ in 0..100 {
        let _ = stored.allocate_next(svcnet_allocators::IpFamily::V4, &mut rng);
    }
    c.bench_function("repair_50k_services_/12", |b| {
        b.iter_batched(
            ClusterIpRepair::new,
            |mut rep| black_box(rep.run_once(&stored, &svcs).expect("repair")),
            BatchSize::SmallInput,
        )
    });
}

fn resident_bytes() -> Option<u64> {
    let statm = std::fs::read_to_string("/proc/self/statm").ok()?;
    let pages: u64 = statm.split_whitespace().nth(1)?.parse().ok()?;
    Some(pages * 4096)
}

fn sparse_memory(c: &mut Criterion) {
    let before = resident_bytes();
    let mut r = SparseIpv6Range::parse("fd00:10:96::/64").expect("cidr");
    let mut rng = SplitMix64::new(5);
    for _ in 0..1_000_000 {
        r.allocate_next(&mut rng).expect("free");
    }
    let after = resident_bytes();
    let delta = match (before, after) {
        (Some(b), Some(a)) => a.saturating_sub(b).to_string(),
        _ => "n/a".into(),
    };
    println!(
        "sparse /64 after 1,000,000 allocate_next: used={} heap_bytes={} ({:.1} bytes/address) rss_delta_bytes={} (a bitmap would need 2^64 bits)",
        r.used(),
        r.heap_bytes(),
        r.heap_bytes() as f64 / r.used() as f64,
        delta
    );
    black_box(&r);
    c.bench_function("sparse_/64_1M_allocate_next (whole fill)", |b| {
        b.iter_batched(
            || SparseIpv6Range::parse("fd00:10:96::/64").expect("cidr"),
            |mut r| {
                let mut rng = SplitMix64::new(6);
                for _ in 0..1_000_000 {
                    r.allocate_next(&mut rng).expect("free");
                }
                r
            },
            BatchSize::LargeInput,
        )
    });
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = sparse_memory, allocate_next, allocate_release, snapshot_restore, repair
}
criterion_main!(benches);
