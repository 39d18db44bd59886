//! Benchmarks of svcnet-rules' iptables backend on the cluster of kube-oracle's
//! `BenchmarkOracleSyncProxyRules` (10,000 ClusterIP Services × 10 ready endpoints over 50
//! nodes, IPv4): a full generation (proxy model + rules + restore text) and a partial sync
//! after one endpoint of one Service changed (rules + text, from the prior tables; the model
//! of the new state built beforehand, as kube-proxy's change trackers keep theirs), and the
//! same partial sync with its payload as segments (rules + segments: not copied into one
//! string). The partial payload is 1,405,333 bytes in 89 segments: one block of 128 service
//! ports rebuilt, the other blocks' `KUBE-SERVICES` lines shared with the prior tables.
//!
//! The full generation is timed twice: with each result freed inside the timed loop, and
//! with the previous sync's result alive during the sync and released after it, untimed
//! (`previous sync kept`), as a proxy holds its last rule set until the next replaces it.
//!
//! The rules + text of a full sync from a prebuilt model are measured three ways: the text
//! as a new `String` (`Transaction::to_restore_text`), written into a `String` kept across
//! syncs (`Transaction::write_to`), and as segments borrowed from the sync's buffers, not
//! copied (`Transaction::segments`, what `write_io` writes).
//!
//! For load-independent instruction counts, `SVCNET_RULES_BENCH_ONCE=1` runs one full
//! generation (and the rules + text of one more from a prebuilt model, each way) and the
//! partial syncs and exits: e.g. `valgrind --tool=callgrind` on the bench binary, reading the
//! inclusive cost of `full_once`, `sync_text_once`, `sync_text_reused_once`,
//! `sync_segments_once`, `partial_once` and `partial_segments_once`.
//!
//! Timed with the allocator in a long-running process' state (`svcnet_benches::heap`):
//! `SVCNET_BENCH_COLD_HEAP=1` times the page faults of a fresh process' allocator too.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, criterion_group, criterion_main};
use svcnet_benches::oracle::{cluster, config};
use svcnet_model::{EndpointSlice, Service};
use svcnet_rules::iptables::{IptablesSettings, IptablesState, Transaction, sync, sync_owned};
use svcnet_rules::{ProxyConfig, ProxyModel};

/// One full generation: model, sync, restore text (a function of its own, so that profilers
/// such as `valgrind --tool=callgrind` report it apart).
#[inline(never)]
fn full_once(
    services: &[Service],
    slices: &[EndpointSlice],
    config: &ProxyConfig,
    settings: &IptablesSettings,
) -> (ProxyModel, Transaction, IptablesState, String) {
    let model = ProxyModel::build(services, slices, None, config);
    let (tx, state) = sync(None, &model, settings);
    let text = tx.to_restore_text();
    (model, tx, state, text)
}

/// One full sync and its restore text from a model built beforehand (the rule compiler's part
/// of [`full_once`], measured alone).
#[inline(never)]
fn sync_text_once(model: &ProxyModel, settings: &IptablesSettings) -> (Transaction, IptablesState, String) {
    let (tx, state) = sync(None, model, settings);
    let text = tx.to_restore_text();
    (tx, state, text)
}

/// [`sync_text_once`] with the text written into a buffer the caller keeps from sync to sync
/// (cleared, its allocation reused), as kube-proxy keeps its `iptablesData` buffer.
#[inline(never)]
fn sync_text_reused_once(
    model: &ProxyModel,
    settings: &IptablesSettings,
    buf: &mut String,
) -> (Transaction, IptablesState, usize) {
    let (tx, state) = sync(None, model, settings);
    buf.clear();
    tx.write_to(buf);
    (tx, state, buf.len())
}

/// One full sync from a model built beforehand, with its payload as segments: borrowed pieces
/// of the buffers the sync rendered (what [`Transaction::write_io`] writes to
/// `iptables-restore`'s input), not copied into one string. Returns (segments, bytes).
#[inline(never)]
fn sync_segments_once(
    model: &ProxyModel,
    settings: &IptablesSettings,
) -> (Transaction, IptablesState, (usize, usize)) {
    let (tx, state) = sync(None, model, settings);
    let segments = tx.segments();
    let n = (segments.len(), segments.byte_len());
    drop(segments);
    (tx, state, n)
}

/// One partial sync from the prior tables, with its payload as segments (no flat copy: they
/// point into the rules the transaction shares with the tables). Returns the transaction, the
/// tables and (segments, bytes).
#[inline(never)]
fn partial_segments_once(
    prior: IptablesState,
    model: &ProxyModel,
    settings: &IptablesSettings,
) -> (Transaction, IptablesState, (usize, usize)) {
    let (tx, state) = sync_owned(Some(prior), model, settings);
    let segments = tx.segments();
    let n = (segments.len(), segments.byte_len());
    drop(segments);
    (tx, state, n)
}

/// One partial sync from the prior tables, with its restore text.
#[inline(never)]
fn partial_once(
    prior: IptablesState,
    model: &ProxyModel,
    settings: &IptablesSettings,
) -> (Transaction, IptablesState, String) {
    let (tx, state) = sync_owned(Some(prior), model, settings);
    let text = tx.to_restore_text();
    (tx, state, text)
}

fn rules(c: &mut Criterion) {
    // The allocator as a long-running proxy has it (`SVCNET_BENCH_COLD_HEAP=1`: cold).
    svcnet_benches::heap::steady_heap();
    let config = config();
    let settings = IptablesSettings::new(&config).expect("settings");
    let (services, slices) = cluster(false);
    let (_, changed) = cluster(true);
    {
        let (_, tx, state, text) = full_once(&services, &slices, &config, &settings);
        let model = ProxyModel::build(&services, &slices, None, &config);
        let (_, _, again) = sync_text_once(&model, &settings);
        assert_eq!(again, text);
        let mut buf = String::new();
        let _ = sync_text_reused_once(&model, &settings, &mut buf);
        assert_eq!(buf, text);
        let (_, _, (n, bytes)) = sync_segments_once(&model, &settings);
        assert_eq!(bytes, text.len());
        eprintln!("full sync as segments: {n} segments, {bytes} bytes");
        let new_model = ProxyModel::build(&services, &changed, None, &config);
        let (ptx, _, ptext) = partial_once(state.clone(), &new_model, &settings);
        eprintln!(
            "full sync: {} bytes, {} rules, {} lines; partial sync: {} bytes, {} rules",
            text.len(),
            tx.rule_count(),
            text.lines().count(),
            ptext.len(),
            ptx.rule_count()
        );
        let (_, _, (n, bytes)) = partial_segments_once(state.clone(), &new_model, &settings);
        assert_eq!(bytes, ptext.len());
        eprintln!("partial sync as segments: {n} segments, {bytes} bytes");
        // `SVCNET_RULES_BENCH_ONCE=1`: only the runs above (for instruction counts).
        if std::env::var_os("SVCNET_RULES_BENCH_ONCE").is_some() {
            return;
        }
    }
    let mut g = c.benchmark_group("rules/iptables 10000 svc x 10 ep");
    g.sample_size(10);
    g.bench_function("full: model + rules + text", |b| {
        // Criterion's `iter` drops each result inside the timed loop: freeing the model, the
        // state and the 32 MB text is timed too (conservative; kube-proxy's Go frees later).
        b.iter(|| full_once(black_box(&services), black_box(&slices), &config, &settings))
    });
    g.bench_function("full: model + rules + text (previous sync kept)", |b| {
        // The previous sync's result alive during the sync and released after it, untimed,
        // as a proxy holds its last rule set until the next replaces it.
        b.iter_custom(|iters| {
            svcnet_benches::timing::previous_kept(iters, || {
                full_once(black_box(&services), black_box(&slices), &config, &settings)
            })
        })
    });
    g.bench_function("model only", |b| {
        b.iter(|| {
            black_box(ProxyModel::build(
                black_box(&services),
                black_box(&slices),
                None,
                &config,
            ))
        })
    });
    let model = ProxyModel::build(&services, &slices, None, &config);
    g.bench_function("full: rules + text (model prebuilt)", |b| {
        b.iter(|| sync_text_once(black_box(&model), &settings))
    });
    // The same with the text written into one String kept across iterations (no 32 MB
    // allocation, page faults or free per sync; the copy into it is timed).
    let mut buf = String::new();
    g.bench_function("full: rules + text into a reused buffer (model prebuilt)", |b| {
        b.iter(|| sync_text_reused_once(black_box(&model), &settings, &mut buf))
    });
    // The payload as borrowed segments, not copied (what `write_io` hands to the writer).
    g.bench_function("full: rules + segments (model prebuilt)", |b| {
        b.iter(|| sync_segments_once(black_box(&model), &settings))
    });
    let (_, state) = sync(None, &model, &settings);
    let new_model = ProxyModel::build(&services, &changed, None, &config);
    // The prior tables are kube-proxy's kernel state: handed over, not copied, in the timing.
    g.bench_function("partial (one endpoint): rules + text", |b| {
        b.iter_batched(
            || state.clone(),
            |prior| partial_once(prior, black_box(&new_model), &settings),
            BatchSize::LargeInput,
        )
    });
    g.bench_function("partial (one endpoint): rules + segments", |b| {
        b.iter_batched(
            || state.clone(),
            |prior| partial_segments_once(prior, black_box(&new_model), &settings),
            BatchSize::LargeInput,
        )
    });
    g.finish();
}

criterion_group!(benches, rules);
criterion_main!(benches);
