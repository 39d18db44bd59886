//! Profiling aid (not a benchmark): the oracle cluster (10,000 Services × 10 endpoints) as
//! objects deserialized from JSON, as `rules_ipvs`' `full (objects from JSON)` takes them.
//! `json_cost N` prints the best of N wall times of: reading the 10,000 EndpointSlices from
//! one JSON text (`read_slices`), the proxy model without slice digests over the objects read
//! from JSON values (`build_model`), and that model's full IPVS rule set with its restore
//! payload (`full_ipvs`). Each step is a function of its own for
//! `valgrind --tool=callgrind --toggle-collect='*read_slices*'` (or `*build_model*`).

use std::hint::black_box;
use std::time::Instant;

use svcnet_model::{EndpointSlice, Service};
use svcnet_rules::ipvs::{self, IpvsOptions};
use svcnet_rules::{ProxyConfig, ProxyModel};

#[inline(never)]
fn read_slices(text: &str) -> Vec<EndpointSlice> {
    serde_json::from_str(text).expect("slices")
}

#[inline(never)]
fn build_model(services: &[Service], slices: &[EndpointSlice], config: &ProxyConfig) -> ProxyModel {
    ProxyModel::build_without_slice_digests(services, slices, None, config)
}

#[inline(never)]
fn full_ipvs(services: &[Service], slices: &[EndpointSlice], config: &ProxyConfig) -> usize {
    let model = build_model(services, slices, config);
    let rules = ipvs::build(&model, config, &IpvsOptions::default()).expect("rules");
    black_box(rules.iptables.restore_text()).len()
}

fn best<T>(n: usize, mut f: impl FnMut() -> T) -> u128 {
    let mut best = u128::MAX;
    for _ in 0..n {
        let t = Instant::now();
        let out = f();
        best = best.min(t.elapsed().as_micros());
        drop(black_box(out));
    }
    best
}

fn main() {
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let (services, slices) = svcnet_benches::oracle::cluster_from_json();
    let config = ProxyConfig::new("node-0", "100.101.102.103".parse().expect("ip"));
    let text = serde_json::to_string(&slices).expect("json");
    let read = best(n, || read_slices(&text));
    let model = best(n, || build_model(&services, &slices, &config));
    let full = best(n, || full_ipvs(&services, &slices, &config));
    eprintln!("best of {n}: read_slices {read} us, build_model {model} us, full_ipvs {full} us");
}
