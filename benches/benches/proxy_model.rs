//! Benchmarks of the per-node proxy model (`svcnet_rules::ProxyModel::build`) that every
//! backend starts from, on the cluster of kube-oracle's `BenchmarkOracleSyncProxyRules`:
//! 10,000 ClusterIP Services × 10 ready endpoints over 50 nodes, IPv4, one TCP port each.
//! Also its two halves: indexing the slices (`SliceIndex::build`) and the per-node model
//! over that index (`ProxyModel::from_index`).
//!
//! Timed with the allocator in a long-running process' state (`svcnet_benches::heap`):
//! `SVCNET_BENCH_COLD_HEAP=1` times the page faults of a fresh process' allocator too.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use svcnet_benches::oracle::{cluster, config};
use svcnet_rules::ProxyModel;
use svcnet_topology::SliceIndex;

fn proxy_model(c: &mut Criterion) {
    // The allocator as a long-running proxy has it (`SVCNET_BENCH_COLD_HEAP=1`: cold).
    svcnet_benches::heap::steady_heap();
    let config = config();
    let (services, slices) = cluster(false);
    {
        let model = ProxyModel::build(&services, &slices, None, &config);
        eprintln!(
            "model: {} service ports, {} endpoints",
            model.ports.len(),
            model.total_endpoints
        );
    }
    let mut g = c.benchmark_group("proxy model 10000 svc x 10 ep");
    g.sample_size(20);
    g.bench_function("build", |b| {
        b.iter(|| ProxyModel::build(black_box(&services), black_box(&slices), None, &config))
    });
    g.bench_function("build without slice digests", |b| {
        b.iter(|| {
            ProxyModel::build_without_slice_digests(black_box(&services), black_box(&slices), None, &config)
        })
    });
    g.bench_function("slice index", |b| {
        b.iter(|| SliceIndex::build(black_box(&slices)))
    });
    let index = SliceIndex::build(&slices);
    g.bench_function("from index", |b| {
        b.iter(|| ProxyModel::from_index(black_box(&index), black_box(&services), None, &config))
    });
    g.finish();
}

criterion_group!(benches, proxy_model);
criterion_main!(benches);
