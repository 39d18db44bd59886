//! `svcnet rules`: the rules kube-proxy v1.37.2 would program on one node, for each backend.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); the rules follow
//! `pkg/proxy/iptables/proxier.go`, `pkg/proxy/nftables/proxier.go` and
//! `pkg/proxy/ipvs/proxier.go`.
//!
//! This module holds what every backend shares: the command line (every flag of cli.md's
//! `rules`), the node settings as a [`ProxyConfig`], the input and its `--prior` history, and
//! the dispatch to the backend's module.

pub(crate) mod iptables;
pub(crate) mod ipvs;
pub(crate) mod nftables;

use std::net::IpAddr;
use std::process::ExitCode;

use svcnet_model::ObjectSet;
use svcnet_rules::{HostAddress, HostInterface, LocalDetectorMode, ProxyConfig};

use crate::error::CliError;
use crate::input::read_set;

/// The backend to compile rules for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// kube-proxy's iptables mode.
    Iptables,
    /// kube-proxy's nftables mode.
    Nftables,
    /// kube-proxy's IPVS mode.
    Ipvs,
}

/// What to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum Print {
    /// What the last sync hands to the kernel.
    #[default]
    Transaction,
    /// The complete rule set after the last sync.
    State,
}

/// `--output` values of `rules` (and `trace`, which takes every flag of `rules`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, clap::ValueEnum)]
pub enum RulesFormat {
    /// Readable text: the transaction or the state as handed to the kernel.
    #[default]
    Text,
    /// Machine-readable JSON: the typed rule set.
    Json,
    /// nftables only: the transaction or the state as one libnftables JSON document
    /// (`nft -j -f` input).
    NftJson,
}

/// `--local-detector` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DetectorArg {
    /// No local-traffic detection.
    None,
    /// By the first cluster CIDR of the family.
    ClusterCidr,
}

/// Arguments of `svcnet rules`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The backend.
    #[arg(long, value_enum)]
    pub backend: Backend,
    /// The node the proxy runs on.
    #[arg(long, value_name = "NAME")]
    pub node: String,
    /// The node's IP; its family picks the proxier (IPv4 or IPv6).
    #[arg(long, value_name = "IP")]
    pub node_ip: IpAddr,
    /// Pod CIDRs, for local-traffic detection (the first of the family is used).
    #[arg(long, value_name = "CIDR[,CIDR]", value_delimiter = ',')]
    pub cluster_cidr: Vec<String>,
    /// Local-traffic detection mode (default: cluster-cidr when a CIDR of the family is given).
    #[arg(long, value_enum, value_name = "MODE")]
    pub local_detector: Option<DetectorArg>,
    /// The masquerade mark text, used as given (e.g. 0x4000).
    #[arg(long, value_name = "MARK", conflicts_with = "masquerade_bit")]
    pub masquerade_mark: Option<String>,
    /// Derive the mark from this bit, as kube-proxy formats it (default 14: 0x00004000).
    #[arg(long, value_name = "N")]
    pub masquerade_bit: Option<u32>,
    /// iptables: accept NodePorts on 127.0.0.0/8 (default true). nftables: the alpha
    /// `KubeProxyNFTablesLocalhostNodePorts` gate, off unless given as true.
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub localhost_nodeports: Option<bool>,
    /// Whether the nfacct counters exist.
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set, default_value_t = true)]
    pub nfacct: bool,
    /// Accepted, no effect: kube-proxy v1.37.2 always masquerades with --random-fully.
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub random_fully: Option<bool>,
    /// nf_conntrack_tcp_be_liberal is set (omits the INVALID drop).
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set, default_value_t = false)]
    pub conntrack_tcp_be_liberal: bool,
    /// NodePort address filter: CIDRs and the keywords primary, localhost, all.
    #[arg(long, value_name = "CIDR,...", value_delimiter = ',')]
    pub nodeport_addresses: Vec<String>,
    /// The node's interface addresses: "IF=ADDR[/PREFIX],...;IF=...".
    #[arg(long, value_name = "SPEC")]
    pub host_addresses: Option<String>,
    /// nftables: the Service CIDRs.
    #[arg(long, value_name = "CIDR,...", value_delimiter = ',')]
    pub service_cidrs: Vec<String>,
    /// IPVS scheduler.
    #[arg(long, value_name = "NAME", default_value = "rr")]
    pub ipvs_scheduler: String,
    /// Masquerade all traffic to Services (`--masquerade-all` alone means true).
    /// `--masquerade-all true|false` is read as `--masquerade-all=true|false` (see
    /// `main::joined_bool_flags`), so the flag alone never swallows INPUT.
    #[arg(long, value_name = "BOOL", num_args = 0..=1, require_equals = true,
          default_missing_value = "true", action = clap::ArgAction::Set, default_value_t = false)]
    pub masquerade_all: bool,
    /// IPVS: name the IPv6 proxier's ipsets `KUBE-...` as kube-proxy's test fake (and so
    /// kube-oracle) does, instead of kube-proxy's own `KUBE-6-...`.
    #[arg(long)]
    pub ipvs_unprefixed_ipv6_sets: bool,
    /// An earlier state synced before INPUT (oldest first; the first is a full sync).
    #[arg(long, value_name = "FILE")]
    pub prior: Vec<String>,
    /// As --prior, followed by more time than the stale-chain grace period.
    #[arg(long, value_name = "FILE")]
    pub prior_aged: Vec<String>,
    /// Print the last sync's transaction or the complete rule set after it.
    #[arg(long, value_enum, default_value_t = Print::Transaction)]
    pub print: Print,
    /// Output format: text, the typed rule set as JSON, or (nftables) libnftables JSON for
    /// `nft -j -f`.
    #[arg(long, value_enum, default_value_t = RulesFormat::Text)]
    pub output: RulesFormat,
    /// nftables: split the printed transaction into chunks of at most N operations, each
    /// preceded by a `# chunk I/N (K operations)` line and run as its own `nft -f` (so one
    /// huge sync is never one huge netlink batch); 0 prints it whole.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub nft_max_operations: usize,
    /// A file of Services, EndpointSlices and Nodes (JSON or YAML), or `-` for standard input.
    pub input: String,
}

/// One state of the history: the objects synced, and whether the stale-chain grace period
/// passed after that sync.
#[derive(Debug)]
pub struct Step {
    /// The objects.
    pub objects: ObjectSet,
    /// `--prior-aged`.
    pub aged: bool,
}

/// The states to sync in turn: the priors (oldest first), then INPUT.
#[derive(Debug)]
pub struct History {
    /// Every state, INPUT last.
    pub steps: Vec<Step>,
}

/// Runs `svcnet rules`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let config = config(&args)?;
    if args.random_fully == Some(false) {
        eprintln!(
            "svcnet: warning: --random-fully false is ignored: kube-proxy v1.37.2 always masquerades with --random-fully"
        );
    }
    if args.output == RulesFormat::NftJson && args.backend != Backend::Nftables {
        return Err(CliError::Usage(
            "--output nft-json: only with --backend nftables".to_owned(),
        ));
    }
    let history = history(&args)?;
    match args.backend {
        Backend::Iptables => iptables::run(&args, &config, &history),
        Backend::Nftables => nftables::run(&args, &config, &history),
        Backend::Ipvs => ipvs::run(&args, &config, &history),
    }
}

/// Reads INPUT and the priors, in the order given on the command line.
pub(crate) fn history(args: &Args) -> Result<History, CliError> {
    let mut steps = Vec::new();
    for (path, aged) in prior_order(args) {
        steps.push(Step {
            objects: read_set(&path)?,
            aged,
        });
    }
    steps.push(Step {
        objects: read_set(&args.input)?,
        aged: false,
    });
    Ok(History { steps })
}

/// `--prior` and `--prior-aged` files in command-line order. clap keeps each flag's values in
/// order but not their interleaving, so the order is read back from the process arguments; it
/// falls back to all `--prior` files first when they cannot be matched.
fn prior_order(args: &Args) -> Vec<(String, bool)> {
    let mut seen: Vec<(String, bool)> = Vec::new();
    let argv: Vec<String> = std::env::args().collect();
    let mut i = 0;
    while let Some(a) = argv.get(i) {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) => (f, Some(v.to_owned())),
            None => (a.as_str(), None),
        };
        let aged = match flag {
            "--prior" => false,
            "--prior-aged" => true,
            "--" => break,
            _ => {
                i += 1;
                continue;
            }
        };
        let value = match inline {
            Some(v) => Some(v),
            None => {
                i += 1;
                argv.get(i).cloned()
            }
        };
        if let Some(v) = value {
            seen.push((v, aged));
        }
        i += 1;
    }
    let plain: Vec<&String> = seen.iter().filter(|(_, a)| !a).map(|(p, _)| p).collect();
    let aged: Vec<&String> = seen.iter().filter(|(_, a)| *a).map(|(p, _)| p).collect();
    let matches = plain
        .iter()
        .map(|s| s.as_str())
        .eq(args.prior.iter().map(String::as_str))
        && aged
            .iter()
            .map(|s| s.as_str())
            .eq(args.prior_aged.iter().map(String::as_str));
    if matches {
        seen
    } else {
        args.prior
            .iter()
            .map(|p| (p.clone(), false))
            .chain(args.prior_aged.iter().map(|p| (p.clone(), true)))
            .collect()
    }
}

fn usage(flag: &str, value: &str, why: impl std::fmt::Display) -> CliError {
    CliError::Usage(format!("--{flag} {value:?}: {why}"))
}

/// The node's settings from the command line.
pub fn config(args: &Args) -> Result<ProxyConfig, CliError> {
    let mut c = ProxyConfig::new(args.node.clone(), args.node_ip);
    for text in args.cluster_cidr.iter().filter(|s| !s.trim().is_empty()) {
        let (ip, prefix) = svcnet_model::validation::names::parse_cidr_sloppy(text.trim())
            .ok_or_else(|| usage("cluster-cidr", text, "not a CIDR"))?;
        c.cluster_cidrs
            .push(ipnet::IpNet::new(ip, prefix).map_err(|e| usage("cluster-cidr", text, e))?);
    }
    c.local_detector = match args.local_detector {
        Some(DetectorArg::None) => LocalDetectorMode::None,
        Some(DetectorArg::ClusterCidr) | None => LocalDetectorMode::ClusterCidr,
    };
    if let Some(m) = &args.masquerade_mark {
        if m.is_empty() {
            return Err(usage("masquerade-mark", m, "empty"));
        }
        c.masquerade_mark = m.clone();
    } else if let Some(bit) = args.masquerade_bit {
        c.masquerade_mark = ProxyConfig::mark_for_bit(bit).map_err(|e| CliError::Usage(e.to_string()))?;
    }
    c.localhost_nodeports = args.localhost_nodeports.unwrap_or(true);
    c.nfacct = args.nfacct;
    c.conntrack_tcp_be_liberal = args.conntrack_tcp_be_liberal;
    let npa: Vec<String> = args
        .nodeport_addresses
        .iter()
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect();
    if !npa.is_empty() {
        c.nodeport_addresses = Some(npa);
        // Checked here so that a bad entry is a command-line error.
        c.nodeport_addresses_for(false)
            .map_err(|e| CliError::Usage(e.to_string()))?;
    }
    if let Some(spec) = &args.host_addresses {
        c.host_addresses = host_addresses(spec)?;
    }
    for text in args.service_cidrs.iter().filter(|s| !s.trim().is_empty()) {
        let (ip, prefix) = svcnet_model::validation::names::parse_cidr_sloppy(text.trim())
            .ok_or_else(|| usage("service-cidrs", text, "not a CIDR"))?;
        c.service_cidrs
            .push(ipnet::IpNet::new(ip, prefix).map_err(|e| usage("service-cidrs", text, e))?);
    }
    c.ipvs_scheduler = args.ipvs_scheduler.clone();
    c.masquerade_all = args.masquerade_all;
    Ok(c)
}

/// Parses `--host-addresses "IF=ADDR[/PREFIX],...;IF=..."`.
pub fn host_addresses(spec: &str) -> Result<Vec<HostInterface>, CliError> {
    let mut out = Vec::new();
    for part in spec.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, addrs) = part
            .split_once('=')
            .ok_or_else(|| usage("host-addresses", part, "expected IF=ADDR[/PREFIX],..."))?;
        let mut addresses = Vec::new();
        for a in addrs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let (ip, prefix) = match a.split_once('/') {
                Some((ip, p)) => (
                    ip,
                    Some(p.parse::<u8>().map_err(|e| usage("host-addresses", a, e))?),
                ),
                None => (a, None),
            };
            let ip = svcnet_model::validation::names::parse_ip_sloppy(ip)
                .ok_or_else(|| usage("host-addresses", a, "not an IP address"))?;
            addresses.push(HostAddress { ip, prefix });
        }
        out.push(HostInterface {
            name: name.trim().to_owned(),
            addresses,
        });
    }
    Ok(out)
}
