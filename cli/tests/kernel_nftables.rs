//! Real-kernel tests of the nftables backend.
//!
//! 1. The shared kernel suite (`common/kernel_suite.rs`): `svcnet rules --backend nftables`
//!    output loaded with the real `nft -f` (each text checked first with `nft -c`) into a
//!    node built from network namespaces, checked with real TCP and UDP connections, the
//!    partial sync's transaction applied on top of the live rule set.
//! 2. Transactions of the library's proxier: a full sync, an incremental one on the live
//!    rule set, a Service removal with its stale chain deleted after the grace period in a
//!    separate transaction, a full resync, the whole state loaded into a fresh namespace,
//!    and a full sync split into chunks applied one after the other; `nft -c` accepts each.
//!
//! A `harness = false` test: it prints `SKIPPED` (and counts the checks as skipped, not
//! passed) where it cannot run: not root, or no `ip`, `python3` or `nft`.

#[path = "common/kernel_suite.rs"]
mod kernel_suite;
#[path = "common/netns.rs"]
mod netns;

static NFTABLES: kernel_suite::Backend = kernel_suite::Backend {
    name: "nftables",
    tools: &["nft"],
    extra_args: &[],
    load_state: |node, text| nft_checked(node, text),
    apply_transaction: |node, text| nft_checked(node, text),
};

/// `nft -c -f -` (check only), then `nft -f -`.
fn nft_checked(node: &netns::Node, text: &str) -> Result<(), String> {
    node.exec(&["nft", "-c", "-f", "-"], Some(text))
        .map_err(|e| format!("nft -c refused the text: {e}"))?;
    node.nft(text)
}

fn main() {
    kernel_suite::run(&NFTABLES);
    netns::run_suite(
        "kernel_nftables_transactions",
        &["nft"],
        || Ok(()),
        &[
            ("full_state_and_transactions_load_into_a_real_kernel", |_| {
                full_state_and_transactions()
            }),
            ("chunked_transaction_loads_into_a_real_kernel", |_| {
                chunked_transaction()
            }),
        ],
    );
}

use std::collections::BTreeSet;
use std::process::Command;

use svcnet_rules::nftables::{
    LocalDetector, NftConfig, NftEndpoint, NftProxier, NftServicePort, Protocol, Transaction,
};

/// A network namespace deleted on drop.
struct Netns(String);

impl Netns {
    fn new(tag: &str) -> Option<Netns> {
        let name = format!("svcnet-nft-{tag}-{}", std::process::id());
        let ok = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Netns(name))
    }

    /// `nft ARGS -f FILE` inside the namespace.
    fn nft(&self, args: &[&str], text: &str) -> Result<(), String> {
        let file = std::env::temp_dir().join(format!("{}-{}.nft", self.0, rand_suffix()));
        std::fs::write(&file, text).map_err(|e| e.to_string())?;
        let out = Command::new("ip")
            .args(["netns", "exec", &self.0, "nft"])
            .args(args)
            .arg("-f")
            .arg(&file)
            .output()
            .map_err(|e| e.to_string())?;
        let _ = std::fs::remove_file(&file);
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "nft {args:?} -f failed: {}\n--- input ---\n{}",
                String::from_utf8_lossy(&out.stderr),
                head(text)
            ))
        }
    }

    /// Checks with `nft -c` then applies.
    fn apply(&self, tx: &Transaction) -> Result<(), String> {
        let text = tx.render();
        self.nft(&["-c"], &text)?;
        self.nft(&[], &text)
    }

    fn list(&self) -> String {
        let out = Command::new("ip")
            .args(["netns", "exec", &self.0, "nft", "list", "ruleset"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

fn rand_suffix() -> usize {
    use std::sync::atomic::{AtomicUsize, Ordering};
    static N: AtomicUsize = AtomicUsize::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn head(text: &str) -> String {
    text.lines().take(40).collect::<Vec<_>>().join("\n")
}

fn ep(ip: &str, local: bool) -> NftEndpoint {
    NftEndpoint {
        ip: ip.parse().unwrap(),
        port: 8080,
        is_local: local,
    }
}

/// A service port with the given endpoints; `kind` picks the Service's shape.
fn port(name: &str, n: u8, kind: &str, eps: Vec<NftEndpoint>) -> NftServicePort {
    let (node_port, eip, lb, ranges, affinity, etp_local) = match kind {
        "nodeport" => (30000 + u16::from(n), vec![], vec![], vec![], None, false),
        "lb" => (
            31000 + u16::from(n),
            vec![],
            vec![format!("198.51.100.{n}").parse().unwrap()],
            vec!["192.168.0.0/16".parse().unwrap()],
            None,
            false,
        ),
        "etplocal" => (
            32000 + u16::from(n),
            vec![format!("203.0.113.{n}").parse().unwrap()],
            vec![],
            vec![],
            None,
            true,
        ),
        "affinity" => (0, vec![], vec![], vec![], Some(10800), false),
        _ => (0, vec![], vec![], vec![], None, false),
    };
    let externally = node_port != 0 || !eip.is_empty() || !lb.is_empty();
    let local: Vec<NftEndpoint> = eps.iter().filter(|e| e.is_local).copied().collect();
    NftServicePort {
        namespace: "ns".into(),
        name: name.into(),
        port_name: "p".into(),
        protocol: if n % 3 == 1 { Protocol::Udp } else { Protocol::Tcp },
        cluster_ip: format!("172.30.0.{n}").parse().unwrap(),
        port: 80,
        node_port,
        external_ips: eip,
        load_balancer_vips: lb,
        source_ranges: ranges,
        affinity_timeout: affinity,
        internal_policy_local: false,
        external_policy_local: etp_local,
        externally_accessible: externally,
        uses_cluster_endpoints: true,
        uses_local_endpoints: etp_local,
        cluster_endpoints: eps.clone(),
        local_endpoints: if etp_local { local } else { vec![] },
        all_locally_reachable: eps.clone(),
        has_endpoints: !eps.is_empty(),
    }
}

fn cluster(version: u8) -> Vec<NftServicePort> {
    let second = if version == 0 { "10.1.0.2" } else { "10.1.0.9" };
    vec![
        port(
            "clusterip",
            1,
            "clusterip",
            vec![ep("10.1.0.1", true), ep(second, false)],
        ),
        port("single", 2, "clusterip", vec![ep("10.1.0.3", false)]),
        port("empty", 3, "clusterip", vec![]),
        port("nodeport", 4, "nodeport", vec![ep("10.1.0.4", false)]),
        port("lb", 5, "lb", vec![ep("10.1.0.5", true), ep("10.1.0.6", false)]),
        port(
            "etplocal",
            6,
            "etplocal",
            vec![ep("10.1.0.7", true), ep("10.1.0.8", false)],
        ),
        port(
            "affinity",
            7,
            "affinity",
            vec![ep("10.1.0.10", true), ep("10.1.0.11", false)],
        ),
    ]
}

fn config() -> NftConfig {
    let mut c = NftConfig::new("192.168.0.2".parse().unwrap());
    c.local_detector = Some(LocalDetector::ClusterCidr("10.0.0.0/8".parse().unwrap()));
    c.service_cidrs = vec!["172.30.0.0/16".into()];
    c
}

fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok { Ok(()) } else { Err(what.to_owned()) }
}

fn full_state_and_transactions() -> Result<(), String> {
    let e = |e: svcnet_rules::nftables::NftError| e.to_string();
    let ns = Netns::new("full").ok_or("ip netns add")?;
    let mut p = NftProxier::new(config());
    let first = p.sync_full(&cluster(0)).map_err(e)?;
    ns.apply(&first.main)?;
    // an incremental transaction on the live rule set: one endpoint changed
    let changed: BTreeSet<String> = ["ns/clusterip".to_owned()].into();
    let out = p.sync(&cluster(1), Some(&changed)).map_err(e)?;
    check(
        !out.full && out.main.num_operations() <= 10,
        &format!("a small partial sync:\n{}", out.main),
    )?;
    ns.apply(&out.main)?;
    // a Service removed: its chain is flushed, later deleted in a separate transaction
    let mut fewer = cluster(1);
    fewer.retain(|p| p.name != "affinity");
    let removed: BTreeSet<String> = ["ns/affinity".to_owned()].into();
    let out = p.sync(&fewer, Some(&removed)).map_err(e)?;
    ns.apply(&out.main)?;
    p.age_stale_chains();
    let out = p.sync(&fewer, Some(&BTreeSet::new())).map_err(e)?;
    let deletion = out.stale_deletion.ok_or("aged stale chains are deleted")?;
    ns.apply(&deletion)?;
    ns.apply(&out.main)?;
    let listed = ns.list();
    check(listed.contains("table ip kube-proxy"), &listed)?;
    check(
        !listed.contains("ns/affinity/"),
        &format!("stale chains left:\n{listed}"),
    )?;
    // a full resync on the live rule set is accepted too
    let again = p.sync_full(&fewer).map_err(e)?;
    ns.apply(&again.main)?;
    // the whole state, as one transaction, into a fresh namespace
    let fresh = Netns::new("state").ok_or("ip netns add")?;
    fresh.apply(
        &p.state()
            .to_transaction(svcnet_rules::nftables::Family::Ip, "kube-proxy"),
    )
}

fn chunked_transaction() -> Result<(), String> {
    let ns = Netns::new("chunks").ok_or("ip netns add")?;
    let mut p = NftProxier::new(config());
    let first = p.sync_full(&cluster(0)).map_err(|e| e.to_string())?;
    let chunks = first.chunks(7);
    check(chunks.len() > 5, "several chunks")?;
    for c in &chunks {
        check(c.num_operations() <= 7, "at most 7 operations per chunk")?;
        ns.apply(c)?;
    }
    let listed = ns.list();
    check(listed.contains("numgen random mod 2"), &listed)
}
