//! Real-kernel tests of the nftables backend: svcnet's rule sets and transactions are
//! loaded with the real `nft -f` into a fresh network namespace (and checked first with
//! `nft -c`). Skipped, loudly, when not root or when `nft` / `ip` are missing.

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

fn usable() -> bool {
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    let nft = Command::new("nft")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    let ip = Command::new("ip")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success());
    if !(root && nft && ip) {
        eprintln!("SKIPPED: kernel nftables tests need root, nft and ip (root={root}, nft={nft}, ip={ip})");
        return false;
    }
    true
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

#[test]
fn full_state_and_transactions_load_into_a_real_kernel() {
    if !usable() {
        return;
    }
    let ns = Netns::new("full").expect("ip netns add");
    let mut p = NftProxier::new(config());
    let first = p.sync_full(&cluster(0)).unwrap();
    ns.apply(&first.main).unwrap();
    // an incremental transaction on the live rule set: one endpoint changed
    let changed: BTreeSet<String> = ["ns/clusterip".to_owned()].into();
    let out = p.sync(&cluster(1), Some(&changed)).unwrap();
    assert!(!out.full);
    assert!(out.main.num_operations() <= 10, "{}", out.main);
    ns.apply(&out.main).unwrap();
    // a Service removed: its chain is flushed, later deleted in a separate transaction
    let mut fewer = cluster(1);
    fewer.retain(|p| p.name != "affinity");
    let removed: BTreeSet<String> = ["ns/affinity".to_owned()].into();
    let out = p.sync(&fewer, Some(&removed)).unwrap();
    ns.apply(&out.main).unwrap();
    p.age_stale_chains();
    let out = p.sync(&fewer, Some(&BTreeSet::new())).unwrap();
    let deletion = out.stale_deletion.expect("aged stale chains are deleted");
    ns.apply(&deletion).unwrap();
    ns.apply(&out.main).unwrap();
    let listed = ns.list();
    assert!(listed.contains("table ip kube-proxy"), "{listed}");
    assert!(!listed.contains("ns/affinity/"), "{listed}");
    // a full resync on the live rule set is accepted too
    let again = p.sync_full(&fewer).unwrap();
    ns.apply(&again.main).unwrap();

    // the whole state, as one transaction, into a fresh namespace
    let fresh = Netns::new("state").expect("ip netns add");
    let state = p
        .state()
        .to_transaction(svcnet_rules::nftables::Family::Ip, "kube-proxy");
    fresh.apply(&state).unwrap();
}

#[test]
fn chunked_transaction_loads_into_a_real_kernel() {
    if !usable() {
        return;
    }
    let ns = Netns::new("chunks").expect("ip netns add");
    let mut p = NftProxier::new(config());
    let first = p.sync_full(&cluster(0)).unwrap();
    let chunks = first.chunks(7);
    assert!(chunks.len() > 5);
    for c in &chunks {
        ns.apply(c).unwrap();
    }
    let listed = ns.list();
    assert!(listed.contains("numgen random mod 2"), "{listed}");
}
