//! Benchmarks of the nftables backend at kube-oracle's benchmark size: 10,000 ClusterIP
//! Services (172.30.0.0/16, port p80/TCP) with 10 ready remote endpoints each
//! (10.128.0.0/10), as `BenchmarkOracleSyncProxyRules` builds them:
//!
//! - `full`: a fresh proxier's full sync (the whole transaction, applied to the in-memory
//!   rule set) and its `nft -f` text;
//! - `partial`: endpoint 0 of Service 0 replaced and back, one partial sync each time
//!   (and its text); the transaction has 3 operations.
//!
//! Wall-clock figures move with the machine's load; `examples/nftables_cost.rs` repeats the
//! same work for instruction counts (callgrind, `perf stat`).

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use svcnet_benches::oracle::SERVICES;
use svcnet_benches::oracle_nft::{config, port};
use svcnet_rules::nftables::{NftProxier, NftServicePort, ServiceUpdate};

fn bench(c: &mut Criterion) {
    let ports: Vec<NftServicePort> = (0..SERVICES).map(|i| port(i, false)).collect();
    let mut g = c.benchmark_group("rules_nftables");
    g.sample_size(10);
    g.bench_function("full/10000svc-10ep", |b| {
        // the proxier and its rule set are dropped outside the timed part
        b.iter_with_large_drop(|| {
            let mut p = NftProxier::new(config());
            let out = p.sync_full(black_box(&ports)).unwrap();
            black_box(out.main.render().len());
            (p, out)
        })
    });
    let mut p = NftProxier::new(config());
    p.sync_full(&ports).unwrap();
    let versions = [vec![port(0, true)], vec![port(0, false)]];
    let mut flip = 0usize;
    let svc = format!("{}/{}", ports[0].namespace, ports[0].name);
    let first = p
        .sync_partial(&[ServiceUpdate {
            service: &svc,
            ports: &versions[0],
        }])
        .unwrap();
    eprintln!(
        "one-endpoint transaction: {} operations\n{}",
        first.main.num_operations(),
        first.main
    );
    g.sample_size(100);
    g.bench_function("partial/10000svc-10ep", |b| {
        b.iter(|| {
            flip ^= 1;
            let out = p
                .sync_partial(&[ServiceUpdate {
                    service: &svc,
                    ports: &versions[flip],
                }])
                .unwrap();
            black_box(out.main.render().len())
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
