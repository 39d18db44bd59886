//! Dev-only: a seeded generator of clusters and sync histories for differential tests of
//! `svcnet rules` against kube-proxy (kube-oracle).
//!
//! [`generate`] turns a seed into a [`Case`]: a node and its kube-proxy settings (the rules
//! command line without `--backend`), and a history of cluster states (Nodes, Services of every
//! type and policy, EndpointSlices with endpoints in every condition, local and remote, with
//! zone and node hints, dual-stack, externalIPs, LoadBalancer ingress with `ipMode`, source
//! ranges). The last state is the input; earlier ones are `--prior` (or `--prior-aged`) states,
//! each a few changes away from the one before, so partial syncs get exercised. Every Service
//! gets its own NodePorts and ClusterIPs.
//!
//! ```
//! let case = svcnet_testgen::generate(42);
//! assert!(!case.states.is_empty());
//! assert_eq!(case.args[0], "--node");
//! assert_eq!(case, svcnet_testgen::generate(42));
//! ```

mod cluster;
mod history;
mod rng;

pub use cluster::{Cluster, Family, NODES};
pub use rng::Rng;

use serde_json::Value;

/// One generated differential-test case.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The seed it came from.
    pub seed: u64,
    /// The `rules` arguments other than `--backend`, history and input.
    pub args: Vec<String>,
    /// The cluster states, oldest first; the last is the input.
    pub states: Vec<Value>,
    /// For each state but the last: whether it is followed by more than the stale-chain grace
    /// period (`--prior-aged`).
    pub aged: Vec<bool>,
    /// What the case exercises, in words.
    pub covers: Vec<String>,
}

/// The case of `seed`.
pub fn generate(seed: u64) -> Case {
    let mut rng = Rng::new(seed);
    let families = match rng.weighted(&[60, 15, 25]) {
        0 => vec![Family::V4],
        1 => vec![Family::V6],
        _ => vec![Family::V4, Family::V6],
    };
    let node = rng.below(NODES.len());
    let node_family = *rng.pick(&families);
    let (args, mut covers) = settings(&mut rng, node, node_family);
    let (states, aged, more) = history::history(&mut rng, &families);
    covers.extend(more);
    Case {
        seed,
        args,
        states: states.iter().map(Cluster::to_json).collect(),
        aged,
        covers,
    }
}

fn node_ip(node: usize, f: Family) -> String {
    match f {
        Family::V4 => format!("192.168.0.{}", node + 10),
        Family::V6 => format!("fd00:c0a8::{:x}", node + 10),
    }
}

/// The node and kube-proxy settings.
fn settings(rng: &mut Rng, node: usize, f: Family) -> (Vec<String>, Vec<String>) {
    let mut a: Vec<String> = Vec::new();
    let mut covers = vec![format!("node {} ({})", NODES[node].0, f.as_str())];
    let push = |a: &mut Vec<String>, k: &str, v: &str| {
        a.push(k.to_string());
        a.push(v.to_string());
    };
    push(&mut a, "--node", NODES[node].0);
    push(&mut a, "--node-ip", &node_ip(node, f));
    if rng.chance(75) {
        push(&mut a, "--cluster-cidr", "10.244.0.0/16,fd00:10:244::/56");
        if rng.chance(15) {
            push(&mut a, "--local-detector", "none");
            covers.push("no local-traffic detector".into());
        }
    } else {
        covers.push("no cluster CIDR".into());
    }
    match rng.below(4) {
        0 | 1 => push(&mut a, "--masquerade-mark", "0x4000"),
        2 => {
            let bit = *rng.pick(&["14", "12", "0"]);
            push(&mut a, "--masquerade-bit", bit)
        }
        _ => {}
    }
    let host = format!(
        "lo=127.0.0.1/8,::1/128;eth0={}/24,{}/64",
        node_ip(node, Family::V4),
        node_ip(node, Family::V6)
    );
    if rng.chance(85) {
        push(&mut a, "--host-addresses", &host);
    }
    for flag in ["--localhost-nodeports", "--nfacct", "--conntrack-tcp-be-liberal"] {
        if rng.chance(40) {
            let v = if rng.chance(50) { "true" } else { "false" };
            push(&mut a, flag, v);
            covers.push(format!("{flag} {v}"));
        }
    }
    if rng.chance(30) {
        let v = rng.pick(&[
            "primary",
            "192.168.0.0/24",
            "127.0.0.0/8,192.168.0.0/16",
            "fd00:c0a8::/64",
            "127.0.0.1/32",
            "0.0.0.0/0,::/0",
        ]);
        push(&mut a, "--nodeport-addresses", v);
        covers.push(format!("--nodeport-addresses {v}"));
    }
    if rng.chance(15) {
        push(&mut a, "--service-cidrs", "10.96.0.0/16,fd00:10:96::/112");
    }
    if rng.chance(10) {
        a.push("--masquerade-all".into());
        covers.push("--masquerade-all".into());
    }
    (a, covers)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodeports_and_cluster_ips_are_unique_in_every_state() {
        for seed in 0..200 {
            let case = generate(seed);
            assert_eq!(case.aged.len() + 1, case.states.len());
            for state in &case.states {
                let mut node_ports = Vec::new();
                let mut ips = Vec::new();
                for item in state["items"].as_array().unwrap() {
                    if item["kind"] != "Service" {
                        continue;
                    }
                    for p in item["spec"]["ports"].as_array().unwrap() {
                        if let Some(n) = p["nodePort"].as_u64() {
                            node_ports.push(n);
                        }
                    }
                    for ip in item["spec"]["clusterIPs"].as_array().into_iter().flatten() {
                        if ip != "None" {
                            ips.push(ip.as_str().unwrap().to_string());
                        }
                    }
                }
                let (n, i) = (node_ports.len(), ips.len());
                node_ports.sort();
                node_ports.dedup();
                ips.sort();
                ips.dedup();
                assert_eq!(n, node_ports.len(), "seed {seed}: shared NodePort");
                assert_eq!(i, ips.len(), "seed {seed}: shared ClusterIP");
            }
        }
    }

    #[test]
    fn seeds_cover_the_features() {
        let mut text = String::new();
        for seed in 0..100 {
            for s in &generate(seed).states {
                text += &s.to_string();
            }
        }
        for want in [
            "\"LoadBalancer\"",
            "\"NodePort\"",
            "\"ExternalName\"",
            "\"None\"",
            "\"SCTP\"",
            "\"UDP\"",
            "\"ClientIP\"",
            "\"externalTrafficPolicy\":\"Local\"",
            "\"internalTrafficPolicy\":\"Local\"",
            "\"ipMode\":\"Proxy\"",
            "loadBalancerSourceRanges",
            "externalIPs",
            "forZones",
            "forNodes",
            "\"terminating\":true",
            "\"IPv6\"",
            "PreferSameNode",
        ] {
            assert!(text.contains(want), "no {want} in 100 seeds");
        }
    }
}
