//! `svcnet rules --backend nftables`: kube-proxy v1.37.2's nftables proxier replayed over
//! the history of states, as kube-oracle replays it: the first sync full, later ones
//! partial (only the Services whose service ports or endpoints changed are rewritten)
//! unless the node's zone label changed; `--prior-aged` lets the stale-chain grace period
//! pass after its sync.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); the rules follow
//! `pkg/proxy/nftables/proxier.go`.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;
use std::process::ExitCode;

use serde_json::json;
use svcnet_model::{Node, ObjectMeta};
use svcnet_rules::nftables::{NftConfig, NftProxier, SyncOutput};
use svcnet_rules::{ProxyConfig, ProxyModel};

use super::{Args, History, Print, RulesFormat, Step};
use crate::error::CliError;
use crate::output::{print_json, print_text};

const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

/// What kube-proxy's change trackers compare for one Service: its service ports
/// (`ServiceChangeTracker`: the port map) and its EndpointSlices (`EndpointSliceCache`:
/// whole objects). A Service whose fingerprint changed is rewritten by the next partial
/// sync.
fn fingerprints(model: &ProxyModel, step: &Step) -> HashMap<String, String> {
    let mut out: HashMap<String, String> = HashMap::new();
    for p in &model.ports {
        let s = out
            .entry(format!("{}/{}", p.name.namespace, p.name.name))
            .or_default();
        let _ = write!(
            s,
            "P{:?}|{}|{}|{}|{:?}|{:?}|{:?}|{:?}|{}|{}|{};",
            p.name,
            p.cluster_ip,
            p.port,
            p.node_port,
            p.load_balancer_vips,
            p.session_affinity_timeout,
            p.external_ips,
            p.load_balancer_source_ranges,
            p.health_check_node_port,
            p.external_policy_local,
            p.internal_policy_local
        );
    }
    // EndpointSlices: kube-proxy's EndpointSliceCache marks a Service changed whenever one
    // of its slices of the proxier's address type is added, removed or differs in any way
    // (`esDataChanged` compares whole objects), even if its endpoints stay the same.
    let family = model.family.as_str();
    let mut slices: Vec<(String, &str, String)> = Vec::new();
    for slice in &step.objects.endpoint_slices {
        let service = slice
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("kubernetes.io/service-name"))
            .map(String::as_str)
            .unwrap_or("");
        let (ns, name) = (slice.metadata.namespace(), slice.metadata.name());
        if slice.address_type != family || service.is_empty() || ns.is_empty() || name.is_empty() {
            continue;
        }
        let text = serde_json::to_string(slice).unwrap_or_default();
        slices.push((format!("{ns}/{service}"), name, text));
    }
    slices.sort();
    for (key, name, text) in slices {
        let s = out.entry(key).or_default();
        let _ = write!(s, "S{name}={text};");
    }
    out
}

fn changed(prev: &HashMap<String, String>, cur: &HashMap<String, String>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    for (k, v) in cur {
        if prev.get(k) != Some(v) {
            out.insert(k.clone());
        }
    }
    for k in prev.keys() {
        if !cur.contains_key(k) {
            out.insert(k.clone());
        }
    }
    out
}

/// `--service-cidrs` plus the ServiceCIDR objects of the state, without repeats.
fn service_cidrs(config: &ProxyConfig, step: &Step) -> Vec<String> {
    let mut all: Vec<String> = config.service_cidrs.iter().map(ToString::to_string).collect();
    for sc in &step.objects.service_cidrs {
        for c in sc
            .spec
            .as_ref()
            .and_then(|s| s.cidrs.as_ref())
            .into_iter()
            .flatten()
        {
            all.push(c.clone());
        }
    }
    let mut seen = BTreeSet::new();
    all.retain(|c| seen.insert(c.clone()));
    all
}

/// `--localhost-nodeports` is, for nftables, the alpha `KubeProxyNFTablesLocalhostNodePorts`
/// gate: off unless the flag is given as true (without the flag, iptables' default `true`
/// does not turn the gate on).
fn localhost_nodeports_gate(args: &Args) -> bool {
    args.localhost_nodeports == Some(true)
}

/// The nftables proxier after replaying the history, with the last sync's output (`None`
/// when a sync failed: the error is printed).
pub fn replay(
    args: &Args,
    config: &ProxyConfig,
    history: &History,
) -> Result<Option<(NftProxier, Option<SyncOutput>)>, CliError> {
    let steps = &history.steps;
    let gate = localhost_nodeports_gate(args);
    let base = NftConfig::from_proxy(config, gate).map_err(|e| CliError::Usage(e.to_string()))?;
    let v4 = config.node_ip.is_ipv4();
    let mut proxier = NftProxier::new(base);
    let mut zone: Option<String> = None; // the node's zone label as last seen (NodeTopologyConfig)
    let mut prev: HashMap<String, String> = HashMap::new();
    let mut last: Option<SyncOutput> = None;
    for step in steps {
        if let Some(node) = step
            .objects
            .nodes
            .iter()
            .find(|n| n.metadata.name() == config.node_name)
        {
            let z = node
                .metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(ZONE_LABEL))
                .cloned();
            if z != zone {
                zone = z;
                proxier.request_full_sync();
            }
        }
        let cidrs: Vec<String> = service_cidrs(config, step)
            .into_iter()
            .filter(|c| {
                c.parse::<ipnet::IpNet>()
                    .is_ok_and(|n| matches!(n, ipnet::IpNet::V4(_)) == v4)
            })
            .collect();
        proxier.set_service_cidrs(cidrs);
        let node = Node {
            metadata: ObjectMeta {
                name: Some(config.node_name.clone()),
                labels: zone.as_ref().map(|z| [(ZONE_LABEL.to_owned(), z.clone())].into()),
                ..Default::default()
            },
            ..Default::default()
        };
        let model = ProxyModel::build_without_slice_digests(
            &step.objects.services,
            &step.objects.endpoint_slices,
            Some(&node),
            config,
        );
        let cur = fingerprints(&model, step);
        let diff = changed(&prev, &cur);
        let out = match proxier.sync_from(&model.ports, Some(&diff)) {
            Ok(o) => o,
            Err(e) => {
                eprintln!("svcnet: rules: the nftables sync failed: {e}");
                return Ok(None);
            }
        };
        if step.aged {
            proxier.age_stale_chains();
        }
        prev = cur;
        last = Some(out);
    }
    Ok(Some((proxier, last)))
}

/// Runs the nftables backend over the history and prints the last sync.
pub fn run(args: &Args, config: &ProxyConfig, history: &History) -> Result<ExitCode, CliError> {
    let Some((proxier, last)) = replay(args, config, history)? else {
        return Ok(ExitCode::from(1));
    };
    let Some(out) = last else {
        return Ok(ExitCode::SUCCESS);
    };
    let transaction_text = || {
        if args.nft_max_operations == 0 {
            return out.main.render();
        }
        let chunks = out.main.chunks(args.nft_max_operations);
        let mut t = String::new();
        for (i, c) in chunks.iter().enumerate() {
            let _ = writeln!(
                t,
                "# chunk {}/{} ({} operations)",
                i + 1,
                chunks.len(),
                c.num_operations()
            );
            c.render_into(&mut t);
        }
        t
    };
    match args.output {
        RulesFormat::NftJson => return nft_json(args, &out, &proxier),
        RulesFormat::Json => print_json(&json!({
            "backend": "nftables",
            "kube_proxy": "v1.37.2",
            "family": out.main.family,
            "table": out.main.table,
            "full": out.full,
            "operations": out.main.num_operations(),
            "transaction": out.main,
            "stale_deletion": out.stale_deletion,
            "state": proxier.state(),
            "text": {"transaction": transaction_text(), "state": proxier.state().dump()},
        }))?,
        RulesFormat::Text => match args.print {
            Print::Transaction => print_text(&transaction_text())?,
            Print::State => print_text(&proxier.state().dump())?,
        },
    }
    Ok(ExitCode::SUCCESS)
}

/// `--output nft-json`: the transaction (one document per chunk with
/// `--nft-max-operations`, one per line) or the state as libnftables JSON.
#[cfg(feature = "nft-json")]
fn nft_json(args: &Args, out: &SyncOutput, proxier: &NftProxier) -> Result<ExitCode, CliError> {
    use svcnet_rules::nftables::json::Document;
    let docs = match args.print {
        Print::State => Document::from_state(proxier.state()).map(|d| vec![d]),
        Print::Transaction if args.nft_max_operations == 0 => {
            Document::from_transaction(&out.main).map(|d| vec![d])
        }
        Print::Transaction => out
            .main
            .chunks(args.nft_max_operations)
            .iter()
            .map(Document::from_transaction)
            .collect(),
    };
    let docs = match docs {
        Ok(d) => d,
        Err(e) => {
            eprintln!("svcnet: rules: no libnftables JSON for the rule set: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    for d in docs {
        print_text(&d.to_json().map_err(|e| CliError::Output(e.to_string()))?)?;
    }
    Ok(ExitCode::SUCCESS)
}

/// `--output nft-json` without the `nft-json` feature.
#[cfg(not(feature = "nft-json"))]
fn nft_json(_: &Args, _: &SyncOutput, _: &NftProxier) -> Result<ExitCode, CliError> {
    Err(CliError::Usage(
        "--output nft-json: this svcnet was built without the nft-json feature".to_owned(),
    ))
}
