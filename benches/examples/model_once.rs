//! Profiling aid (not a benchmark): one `ProxyModel::build` on the oracle cluster, in a
//! function of its own for `valgrind --tool=callgrind`. `model_once N` builds N times and
//! prints the best wall time; `model_once N plain` builds without slice digests
//! (`ProxyModel::build_without_slice_digests`, as the IPVS and nftables paths may).

use svcnet_benches::oracle::{cluster, config};
use svcnet_model::{EndpointSlice, Service};
use svcnet_rules::{ProxyConfig, ProxyModel};

#[inline(never)]
fn build_once(
    services: &[Service],
    slices: &[EndpointSlice],
    config: &ProxyConfig,
    plain: bool,
) -> ProxyModel {
    if plain {
        ProxyModel::build_without_slice_digests(services, slices, None, config)
    } else {
        ProxyModel::build(services, slices, None, config)
    }
}

fn main() {
    let config = config();
    let (services, slices) = cluster(false);
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let plain = std::env::args().nth(2).as_deref() == Some("plain");
    let mut best = u128::MAX;
    for _ in 0..n {
        let t = std::time::Instant::now();
        let m = build_once(&services, &slices, &config, plain);
        let el = t.elapsed().as_micros();
        best = best.min(el);
        eprintln!(
            "ports {} endpoints {}: {} us",
            m.ports.len(),
            m.total_endpoints,
            el
        );
        drop(m);
    }
    eprintln!("best {best} us");
}
