//! The work of the `rules_nftables` bench, repeated, for counting under
//! `perf stat -e instructions:u` or callgrind (counts that other load on the machine does
//! not change, unlike criterion's wall-clock time):
//!
//! ```sh
//! cargo build --release -p svcnet-benches --example nftables_cost
//! perf stat -e instructions:u,task-clock target/release/examples/nftables_cost setup 5
//! perf stat -e instructions:u,task-clock target/release/examples/nftables_cost full 5
//! perf stat -e instructions:u,task-clock target/release/examples/nftables_cost partial 20000
//! ```
//! (`batch N` times the bench's pattern: N batches of 10 full syncs whose results are
//! all kept until the batch ends, as criterion's `iter_with_large_drop` keeps them, so
//! every sync writes into memory fresh from the kernel; it prints the minimum and median
//! per sync and the page faults per sync (Linux, from `/proc/self/stat`). `text` prints the full sync's text, two partial syncs' and the rule set, to compare
//! builds; `time N` prints the minimum and median wall clock of N full syncs with their
//! text, the drop outside, as the bench times them.)
//! `full` is a fresh proxier's full sync of 10,000 ClusterIP Services × 10 endpoints plus
//! its `nft -f` text (the bench's `full/10000svc-10ep`); `partial` is one full sync, then
//! one-endpoint partial syncs and their text (the bench's `partial/10000svc-10ep`); `setup`
//! only builds the service ports, to subtract. Per iteration: (`full` − `setup`) / N, and
//! (`partial N` − `partial 0`) / N.
//!
//! The CLI's path from the proxy model (the bench's `full: model + rules + text` less the
//! model): `model N` builds the model of `oracle::cluster` once (`oracle_nft::proxy_config`'s
//! node) and then does N times what follows it — its ports handed as they are to a fresh
//! proxier (`sync_full_from`, no conversion), the full sync and its text (callgrind:
//! `--toggle-collect='*from_model*'` alone counts everything after the model; a second
//! pattern matching a function called inside it would toggle counting off there);
//! `model-text` prints that text (it equals the start of `text`'s output, up to the partial
//! syncs); `model-time N` prints the minimum and median wall clock of N such runs, after
//! the model and with it, and of the time on the CPU after the model (less sensitive to
//! other load).

use std::hint::black_box;

use svcnet_benches::oracle::cluster;
use svcnet_benches::oracle_nft::{config, port, ports, proxy_config};
use svcnet_model::{Node, ObjectMeta};
use svcnet_rules::nftables::{NftConfig, NftProxier, NftServicePort, ServiceUpdate, SyncOutput};
use svcnet_rules::{ProxyConfig, ProxyModel};

/// The CLI's path after the model: the ports handed to a fresh proxier, its full sync and
/// the text.
#[inline(never)]
fn from_model(model: &ProxyModel, proxy: &ProxyConfig) -> (NftProxier, SyncOutput, String) {
    let mut p = NftProxier::new(NftConfig::from_proxy(proxy, false).unwrap());
    let out = p.sync_full_from(&model.ports).unwrap();
    let text = out.main.render();
    (p, out, text)
}

/// `proxy`'s node as the CLI passes it to the model (its name, no labels).
fn node_of(proxy: &ProxyConfig) -> Node {
    Node {
        metadata: ObjectMeta {
            name: Some(proxy.node_name.clone()),
            ..Default::default()
        },
        ..Default::default()
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args.get(1).map_or("full", String::as_str);
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1);
    if let Some(rest) = mode.strip_prefix("model") {
        let (services, slices) = cluster(false);
        let proxy = proxy_config();
        let node = node_of(&proxy);
        match rest {
            "" => {
                let model = ProxyModel::build_without_slice_digests(&services, &slices, Some(&node), &proxy);
                for _ in 0..n {
                    let r = from_model(black_box(&model), &proxy);
                    black_box(r.2.len());
                    std::mem::forget(r);
                }
            }
            "-text" => {
                let model = ProxyModel::build_without_slice_digests(&services, &slices, Some(&node), &proxy);
                print!("{}", from_model(&model, &proxy).2);
            }
            "-time" => {
                let mut after = Vec::new();
                let mut whole = Vec::new();
                let mut on_cpu = Vec::new();
                for _ in 0..n.max(1) {
                    let start = std::time::Instant::now();
                    let model = ProxyModel::build_without_slice_digests(
                        black_box(&services),
                        &slices,
                        Some(&node),
                        &proxy,
                    );
                    let built = std::time::Instant::now();
                    let cpu = cpu_ns();
                    let r = from_model(&model, &proxy);
                    black_box(r.2.len());
                    let end = std::time::Instant::now();
                    on_cpu.push(cpu_ns().saturating_sub(cpu) as f64 / 1e6);
                    after.push((end - built).as_secs_f64() * 1e3);
                    whole.push((end - start).as_secs_f64() * 1e3);
                    drop((r, model));
                }
                for (what, t) in [
                    ("after the model", &mut after),
                    ("after the model, on the CPU", &mut on_cpu),
                    ("model + rules + text", &mut whole),
                ] {
                    t.sort_by(f64::total_cmp);
                    println!("{what}: min {:.2} ms  median {:.2} ms", t[0], t[t.len() / 2]);
                }
            }
            other => {
                eprintln!("unknown mode model{other:?}: model, model-text or model-time");
                std::process::exit(2);
            }
        }
        return;
    }
    let ports: Vec<NftServicePort> = ports();
    match mode {
        "setup" => {
            black_box(&ports);
        }
        "full" | "full-drop" => {
            for _ in 0..n {
                let mut p = NftProxier::new(config());
                let out = p.sync_full(black_box(&ports)).unwrap();
                black_box(out.main.render().len());
                // dropping is outside the bench's timed part (`full-drop` drops, as the
                // bench does between iterations)
                if mode == "full-drop" {
                    drop((p, out));
                } else {
                    std::mem::forget((p, out));
                }
            }
        }
        "partial" => {
            let mut p = NftProxier::new(config());
            p.sync_full(&ports).unwrap();
            let versions = [vec![port(0, true)], vec![port(0, false)]];
            let svc = format!("{}/{}", ports[0].namespace, ports[0].name);
            for i in 0..n {
                let out = p
                    .sync_partial(&[ServiceUpdate {
                        service: &svc,
                        ports: &versions[i % 2],
                    }])
                    .unwrap();
                black_box(out.main.render().len());
            }
        }
        "batch" => {
            let mut times = Vec::new();
            let faults0 = minor_faults();
            for _ in 0..n.max(1) {
                let mut kept = Vec::with_capacity(10);
                for _ in 0..10 {
                    let start = std::time::Instant::now();
                    let mut p = NftProxier::new(config());
                    let out = p.sync_full(black_box(&ports)).unwrap();
                    black_box(out.main.render().len());
                    times.push(start.elapsed().as_secs_f64() * 1e3);
                    kept.push((p, out));
                }
                drop(kept);
            }
            let faults = minor_faults().saturating_sub(faults0) / times.len() as u64;
            times.sort_by(f64::total_cmp);
            println!(
                "min {:.2} ms  median {:.2} ms  {faults} page faults per sync",
                times[0],
                times[times.len() / 2]
            );
        }
        "time" => {
            // wall clock of the bench's timed part (sync and text; the drop outside), per
            // iteration: minimum and median, less sensitive to other load than a mean
            let mut times: Vec<f64> = (0..n.max(1))
                .map(|_| {
                    let start = std::time::Instant::now();
                    let mut p = NftProxier::new(config());
                    let out = p.sync_full(black_box(&ports)).unwrap();
                    black_box(out.main.render().len());
                    let t = start.elapsed().as_secs_f64() * 1e3;
                    drop((p, out));
                    t
                })
                .collect();
            times.sort_by(f64::total_cmp);
            println!("min {:.2} ms  median {:.2} ms", times[0], times[times.len() / 2]);
        }
        "text" => {
            // the full sync's `nft -f` text, then the one-endpoint partial sync's, then the
            // rule set: for checking that a change leaves the output as it was
            let mut p = NftProxier::new(config());
            let out = p.sync_full(&ports).unwrap();
            print!("{}", out.main.render());
            let versions = [vec![port(0, true)], vec![port(0, false)]];
            let svc = format!("{}/{}", ports[0].namespace, ports[0].name);
            for v in &versions {
                let out = p
                    .sync_partial(&[ServiceUpdate {
                        service: &svc,
                        ports: v,
                    }])
                    .unwrap();
                print!("{}", out.main.render());
            }
            print!("{}", p.state().dump());
        }
        other => {
            eprintln!(
                "unknown mode {other:?}: full, full-drop, partial, setup, batch, time, text, model, model-text \
                 or model-time"
            );
            std::process::exit(2);
        }
    }
}

/// The time this thread has run on a CPU so far, in nanoseconds (Linux, from
/// `/proc/thread-self/schedstat`; 0 where it cannot be read): unlike the wall clock, it
/// leaves out the time other processes held the CPU.
fn cpu_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The process's minor page faults so far (0 where `/proc/self/stat` cannot be read).
fn minor_faults() -> u64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            // the fields after the command name (which is in parentheses); minflt is the 10th
            // field, the 8th after it
            let rest = s.rsplit_once(')')?.1;
            rest.split_whitespace().nth(7)?.parse().ok()
        })
        .unwrap_or(0)
}
