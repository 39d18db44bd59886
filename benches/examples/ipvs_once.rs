//! Profiling aid (not a benchmark): the IPVS full sync of the oracle cluster (what
//! `rules_ipvs`'s `full/10000svc-10ep` measures: `ProxyModel::build_without_slice_digests`,
//! `ipvs::build` and the companion iptables restore text) in a function of its own, for
//! `valgrind --tool=callgrind --toggle-collect='*full_once*'`. `ipvs_once N` runs it N times
//! and prints the best wall time; `ipvs_once N from-model` times only `ipvs::build` and the
//! text over a model built once (toggle `*from_model_once*`). `SVCNET_IPVS_DUMP=FILE` writes
//! the `ipvsadm --restore`, `ipset restore` and iptables restore texts of the last run out.

use svcnet_benches::oracle::{cluster, config};
use svcnet_model::{EndpointSlice, Service};
use svcnet_rules::ipvs::{self, IpvsOptions, IpvsRuleSet};
use svcnet_rules::{ProxyConfig, ProxyModel};

#[inline(never)]
fn full_once(
    services: &[Service],
    slices: &[EndpointSlice],
    config: &ProxyConfig,
    options: &IpvsOptions,
) -> (IpvsRuleSet, String) {
    let model = ProxyModel::build_without_slice_digests(services, slices, None, config);
    let rules = ipvs::build(&model, config, options).expect("rules");
    let text = rules.iptables.restore_text();
    (rules, text)
}

#[inline(never)]
fn from_model_once(model: &ProxyModel, config: &ProxyConfig, options: &IpvsOptions) -> (IpvsRuleSet, String) {
    let rules = ipvs::build(model, config, options).expect("rules");
    let text = rules.iptables.restore_text();
    (rules, text)
}

fn main() {
    let config = config();
    let options = IpvsOptions::default();
    let (services, slices) = cluster(false);
    let n: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1);
    let from_model = std::env::args().nth(2).as_deref() == Some("from-model");
    let model =
        from_model.then(|| ProxyModel::build_without_slice_digests(&services, &slices, None, &config));
    let mut best = u128::MAX;
    for i in 0..n {
        let t = std::time::Instant::now();
        let out = match &model {
            Some(m) => from_model_once(m, &config, &options),
            None => full_once(&services, &slices, &config, &options),
        };
        let el = t.elapsed().as_micros();
        best = best.min(el);
        if i + 1 == n
            && let Some(path) = std::env::var_os("SVCNET_IPVS_DUMP")
        {
            let all = format!(
                "{}\n---\n{}\n---\n{}",
                out.0.ipvsadm_restore(),
                out.0.ipset_restore(),
                out.1
            );
            std::fs::write(path, all).expect("write the texts");
        }
        drop(out);
    }
    eprintln!("best {best} us");
}
