//! IPVS mode at scale: the full rule set (virtual servers, real servers, ipsets, bound
//! addresses, companion iptables rules and their restore payload) for 10,000 ClusterIP
//! Services × 10 endpoints on one node — the cluster kube-oracle's
//! `BenchmarkOracleSyncProxyRules` syncs (172.30.0.0/16 ClusterIPs, port p80/TCP, one slice
//! of ten ready endpoints from 10.128.0.0/10 spread over 50 nodes per Service).
//!
//! - `full`: Services + EndpointSlices → per-node proxy model → IPVS rule set → restore
//!   payload, what kube-proxy's IPVS `syncProxyRules` does after its informers fed it. The
//!   objects are `svcnet_benches::oracle::cluster`'s, built as structs (as kube-oracle builds
//!   its Go objects, and as the iptables and nftables full benches take them).
//!   Each result is dropped inside the timed loop.
//! - `full (previous sync kept)`: the same, with the previous sync's result alive during
//!   the sync and released after it, untimed, as a proxy holds its last rule set until the
//!   next one replaces it.
//! - `full (objects from JSON)`: the same, over the same cluster deserialized from JSON
//!   values (`svcnet_benches::oracle::cluster_from_json`). Deserializing leaves the objects' small allocations
//!   (addresses, names) scattered among freed temporaries, and the model's reads of them
//!   miss the caches more often: the same work takes markedly longer.
//! - `from-model`: the IPVS rule set and restore payload from a built proxy model.
//! - `render`: `ipvsadm --restore` + `ipset restore` texts, and the readable text.
//!
//! Side by side with kube-proxy v1.37.2 (its IPVS `syncProxyRules` on the test fakes):
//! `KUBE_ORACLE_BENCH_SIZES=10000x10 .../kube-oracle/bin/ipvs.test -test.run '^$' -test.bench SyncProxyRules -test.benchtime 3x`
//!
//! Timed with the allocator in a long-running process' state (`svcnet_benches::heap`):
//! `SVCNET_BENCH_COLD_HEAP=1` times the page faults of a fresh process' allocator too.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use svcnet_rules::ipvs::{self, IptablesView, IpvsOptions};
use svcnet_rules::{ProxyConfig, ProxyModel};

fn bench(c: &mut Criterion) {
    // The allocator as a long-running proxy has it (`SVCNET_BENCH_COLD_HEAP=1`: cold).
    svcnet_benches::heap::steady_heap();
    let (svcs, slices) = svcnet_benches::oracle::cluster_from_json();
    let config = ProxyConfig::new("node-0", "100.101.102.103".parse().expect("ip"));
    let options = IpvsOptions::default();
    let mut g = c.benchmark_group("rules_ipvs");
    g.sample_size(20);
    let (osvcs, oslices) = svcnet_benches::oracle::cluster(false);
    g.bench_function("full/10000svc-10ep", |b| {
        b.iter(|| {
            // As `svcnet rules --backend ipvs` builds it: IPVS never reads slice digests.
            let model = ProxyModel::build_without_slice_digests(&osvcs, &oslices, None, &config);
            let rules = ipvs::build(&model, &config, &options).expect("rules");
            black_box(rules.iptables.restore_text());
            rules
        })
    });
    g.bench_function("full (previous sync kept)/10000svc-10ep", |b| {
        // The previous sync's result alive during the sync and released after it, untimed,
        // as a proxy holds its last rule set until the next replaces it.
        b.iter_custom(|iters| {
            svcnet_benches::timing::previous_kept(iters, || {
                let model = ProxyModel::build_without_slice_digests(&osvcs, &oslices, None, &config);
                let rules = ipvs::build(&model, &config, &options).expect("rules");
                black_box(rules.iptables.restore_text());
                (model, rules)
            })
        })
    });
    g.bench_function("full (objects from JSON)/10000svc-10ep", |b| {
        b.iter(|| {
            // As `svcnet rules --backend ipvs` builds it: IPVS never reads slice digests.
            let model = ProxyModel::build_without_slice_digests(&svcs, &slices, None, &config);
            let rules = ipvs::build(&model, &config, &options).expect("rules");
            black_box(rules.iptables.restore_text());
            rules
        })
    });
    let model = ProxyModel::build(&svcs, &slices, None, &config);
    g.bench_function("from-model/10000svc-10ep", |b| {
        b.iter(|| {
            let rules = ipvs::build(&model, &config, &options).expect("rules");
            black_box(rules.iptables.restore_text());
            rules
        })
    });
    let rules = ipvs::build(&model, &config, &options).expect("rules");
    assert_eq!(rules.virtual_servers.len(), 10_000);
    assert_eq!(rules.virtual_servers[0].real_servers.len(), 10);
    g.bench_function("render/10000svc-10ep/ipvsadm+ipset", |b| {
        b.iter(|| {
            (
                black_box(rules.ipvsadm_restore()),
                black_box(rules.ipset_restore()),
            )
        })
    });
    g.bench_function("render/10000svc-10ep/text", |b| {
        b.iter(|| black_box(rules.text(IptablesView::Transaction)))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
