//! Profiling aid (not a benchmark): builds the oracle cluster's proxy model once, then runs the
//! iptables full sync and its restore text N times (default 1) in a function of its own, for
//! `valgrind --tool=callgrind --toggle-collect=*sync_text_once*`. `SVCNET_IPT_DUMP=FILE` writes
//! the restore text out, `SVCNET_IPT_STATE_DUMP=FILE` the tables after it (`iptables-save`
//! text). `SVCNET_IPT_SPLIT=1` times the sync, the text and freeing both apart
//! (best of N each; with `SVCNET_IPT_REUSE=1` the text is written into one reused `String`,
//! with `SVCNET_IPT_SEGMENTS=1` the payload is only listed as segments, not copied).

use svcnet_benches::oracle::{cluster, config};
use svcnet_rules::ProxyModel;
use svcnet_rules::iptables::{IptablesSettings, IptablesState, Transaction, sync};

#[inline(never)]
fn sync_text_once(model: &ProxyModel, settings: &IptablesSettings) -> (Transaction, IptablesState, String) {
    let (tx, state) = sync(None, model, settings);
    let text = tx.to_restore_text();
    (tx, state, text)
}

fn main() {
    let config = config();
    let settings = IptablesSettings::new(&config).expect("settings");
    let (services, slices) = cluster(false);
    let model = ProxyModel::build(&services, &slices, None, &config);
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let mut best = u128::MAX;
    if std::env::var_os("SVCNET_IPT_SPLIT").is_some() {
        let (mut bs, mut bt, mut bd) = (u128::MAX, u128::MAX, u128::MAX);
        let mut reuse = String::new();
        for _ in 0..n {
            let t = std::time::Instant::now();
            let (tx, state) = sync(None, &model, &settings);
            let a = t.elapsed().as_micros();
            let text = if std::env::var_os("SVCNET_IPT_SEGMENTS").is_some() {
                let segs = tx.segments();
                std::hint::black_box(segs.len());
                String::new()
            } else if std::env::var_os("SVCNET_IPT_REUSE").is_some() {
                reuse.clear();
                tx.write_to(&mut reuse);
                String::new()
            } else {
                tx.to_restore_text()
            };
            let b = t.elapsed().as_micros();
            drop((tx, state, text));
            let c = t.elapsed().as_micros();
            bs = bs.min(a);
            bt = bt.min(b - a);
            bd = bd.min(c - b);
        }
        eprintln!("best sync {bs} us, text {bt} us, drop {bd} us");
        return;
    }
    for _ in 0..n {
        let t = std::time::Instant::now();
        let out = sync_text_once(&model, &settings);
        let el = t.elapsed().as_micros();
        best = best.min(el);
        eprintln!("{} bytes: {} us", out.2.len(), el);
        if let Some(path) = std::env::var_os("SVCNET_IPT_DUMP") {
            std::fs::write(path, &out.2).expect("write the text");
        }
        if let Some(path) = std::env::var_os("SVCNET_IPT_STATE_DUMP") {
            std::fs::write(path, out.1.to_save_text()).expect("write the tables");
        }
        drop(out);
    }
    eprintln!("best {best} us");
}
