//! Benchmarks of the nftables backend at kube-oracle's benchmark size: 10,000 ClusterIP
//! Services (172.30.0.0/16, port p80/TCP) with 10 ready remote endpoints each
//! (10.128.0.0/10), as `BenchmarkOracleSyncProxyRules` builds them:
//!
//! - `full/10000svc-10ep`: a fresh proxier's full sync (the whole transaction, applied to
//!   the in-memory rule set) and its `nft -f` text, from service ports built beforehand
//!   (`oracle_nft::port`): neither the proxy model nor its conversion is timed;
//! - `full: model + rules + text`: what `svcnet rules --backend nftables` does for one
//!   full sync, from the Kubernetes objects (`oracle::cluster`'s Services and
//!   EndpointSlices): the proxy model built (`ProxyModel::build_without_slice_digests`,
//!   as the CLI builds it for nftables, which never reads slice digests), its service ports
//!   handed as they are to a fresh proxier (`sync_full_from`; `NftConfig::from_proxy` of
//!   `oracle_nft::proxy_config`, the same node as `oracle_nft::config`), the full sync and
//!   its text. Before timing, its text is checked to equal the first one's (whose ports
//!   are in the model's order for that). Every result of a sample stays alive until the
//!   sample ends (dropped untimed), so the heap grows through the sample and each sync
//!   also pays for fresh pages;
//! - `full: model + rules + text (previous sync kept)`: the same sync, with only the
//!   previous sync's result alive during it, released after it (untimed), as a proxy
//!   holds its last rule set until the next one replaces it;
//! - `partial`: endpoint 0 of Service 0 replaced and back, one partial sync each time
//!   (and its text); the transaction has 3 operations.
//!
//! Wall-clock figures move with the machine's load; `examples/nftables_cost.rs` repeats the
//! same work for instruction counts (callgrind, `perf stat`).
//!
//! Timed with the allocator in a long-running process' state (`svcnet_benches::heap`):
//! `SVCNET_BENCH_COLD_HEAP=1` times the page faults of a fresh process' allocator too.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use svcnet_benches::oracle::cluster;
use svcnet_benches::oracle_nft::{config, port, ports, proxy_config};
use svcnet_model::{Node, ObjectMeta};
use svcnet_rules::nftables::{NftConfig, NftProxier, NftServicePort, ServiceUpdate};
use svcnet_rules::{ProxyConfig, ProxyModel};

/// What [`model_to_text`] returns: the model, the proxier, its sync's output and text.
type ModelAndText = (ProxyModel, NftProxier, svcnet_rules::nftables::SyncOutput, String);

/// The CLI's path for one full sync, from the objects to the text: the model, its ports
/// handed to a fresh proxier, the sync and its text (the model, the proxier and its output
/// are returned, to be dropped outside the timed part, as the other full bench drops its
/// proxier and output).
fn model_to_text(
    services: &[svcnet_model::Service],
    slices: &[svcnet_model::EndpointSlice],
    node: &Node,
    proxy: &ProxyConfig,
) -> ModelAndText {
    let model = ProxyModel::build_without_slice_digests(services, slices, Some(node), proxy);
    let mut p = NftProxier::new(NftConfig::from_proxy(proxy, false).unwrap());
    let out = p.sync_full_from(&model.ports).unwrap();
    let text = out.main.render();
    (model, p, out, text)
}

fn bench(c: &mut Criterion) {
    // The allocator as a long-running proxy has it (`SVCNET_BENCH_COLD_HEAP=1`: cold).
    svcnet_benches::heap::steady_heap();
    let ports: Vec<NftServicePort> = ports();
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
    let (services, slices) = cluster(false);
    let proxy = proxy_config();
    assert_eq!(NftConfig::from_proxy(&proxy, false).unwrap(), config());
    let node = Node {
        metadata: ObjectMeta {
            name: Some(proxy.node_name.clone()),
            ..Default::default()
        },
        ..Default::default()
    };
    let prebuilt = NftProxier::new(config()).sync_full(&ports).unwrap().main.render();
    let (.., from_model) = model_to_text(&services, &slices, &node, &proxy);
    assert!(
        prebuilt == from_model,
        "the two full benches render different texts"
    );
    drop((prebuilt, from_model));
    g.bench_function("full: model + rules + text", |b| {
        b.iter_with_large_drop(|| {
            let r = model_to_text(black_box(&services), black_box(&slices), &node, &proxy);
            black_box(r.3.len());
            r
        })
    });
    g.bench_function("full: model + rules + text (previous sync kept)", |b| {
        b.iter_custom(|iters| {
            svcnet_benches::timing::previous_kept(iters, || {
                let r = model_to_text(black_box(&services), black_box(&slices), &node, &proxy);
                black_box(r.3.len());
                r
            })
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
