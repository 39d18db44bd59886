//! `svcnet rules`: the rule set kube-proxy v1.37.2 would program on one node, for one
//! backend, after a history of cluster states (`--prior`, `--prior-aged`).

pub mod nftables;

use std::net::IpAddr;
use std::process::ExitCode;

use ipnet::IpNet;
use svcnet_model::ObjectSet;
use svcnet_rules::{HostAddress, HostInterface, LocalDetectorMode, ProxyConfig};

use crate::error::CliError;
use crate::input::read_set;
use crate::output::Format;

/// The backend whose rules are printed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Backend {
    /// iptables-restore.
    Iptables,
    /// nftables (`nft -f`).
    Nftables,
    /// IPVS.
    Ipvs,
}

/// What to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Print {
    /// What would be handed to the kernel for the last sync.
    Transaction,
    /// The complete rule set after the last sync.
    State,
}

/// Local-traffic detection mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Detector {
    /// No detector rules.
    None,
    /// By the pod CIDR (`--cluster-cidr`).
    ClusterCidr,
}

/// Arguments of `svcnet rules`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The rule backend.
    #[arg(long, value_enum)]
    pub backend: Backend,
    /// The node the proxy runs on.
    #[arg(long, value_name = "NAME")]
    pub node: String,
    /// The node's IP; its family picks the IPv4 or IPv6 proxier.
    #[arg(long, value_name = "IP")]
    pub node_ip: IpAddr,
    /// Pod CIDRs (local-traffic detection by the first of the node's family).
    #[arg(long, value_name = "CIDR[,CIDR]", value_delimiter = ',')]
    pub cluster_cidr: Vec<IpNet>,
    /// Local-traffic detection mode (default: cluster-cidr when a CIDR is given).
    #[arg(long, value_enum)]
    pub local_detector: Option<Detector>,
    /// The masquerade mark text, used as given.
    #[arg(long, value_name = "MARK")]
    pub masquerade_mark: Option<String>,
    /// The masquerade bit (the mark is formatted as kube-proxy formats it).
    #[arg(long, value_name = "N")]
    pub masquerade_bit: Option<u32>,
    /// iptables: NodePorts on 127.0.0.0/8; nftables: the alpha KubeProxyNFTablesLocalhostNodePorts gate (default off).
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub localhost_nodeports: Option<bool>,
    /// Whether nfacct counters exist (iptables).
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub nfacct: Option<bool>,
    /// Accepted, no effect: kube-proxy v1.37.2 always masquerades fully-random.
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub random_fully: Option<bool>,
    /// The nf_conntrack_tcp_be_liberal sysctl is set (iptables).
    #[arg(long, value_name = "BOOL", action = clap::ArgAction::Set)]
    pub conntrack_tcp_be_liberal: Option<bool>,
    /// NodePort address filter (`primary`, `localhost`, `all` or CIDRs).
    #[arg(long, value_name = "CIDR,...", value_delimiter = ',')]
    pub nodeport_addresses: Vec<String>,
    /// The node's interface addresses: `IF=ADDR[/PREFIX],...;IF=...`.
    #[arg(long, value_name = "SPEC")]
    pub host_addresses: Option<String>,
    /// nftables: the Service CIDRs whose unallocated ClusterIPs are dropped.
    #[arg(long, value_name = "CIDR,...", value_delimiter = ',')]
    pub service_cidrs: Vec<IpNet>,
    /// IPVS scheduler.
    #[arg(long, value_name = "NAME")]
    pub ipvs_scheduler: Option<String>,
    /// Masquerade all traffic to Services.
    #[arg(long)]
    pub masquerade_all: bool,
    /// An earlier state synced before INPUT (oldest first; the first is a full sync).
    #[arg(long, value_name = "FILE")]
    pub prior: Vec<String>,
    /// Like --prior, followed by more time than the stale-chain grace period.
    #[arg(long, value_name = "FILE")]
    pub prior_aged: Vec<String>,
    /// What to print.
    #[arg(long, value_enum, default_value_t = Print::Transaction)]
    pub print: Print,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// nftables: split each printed transaction into chunks of at most N operations
    /// (each chunk its own `nft -f` run, preceded by a `# chunk` comment line); 0 = one piece.
    #[arg(long, value_name = "N", default_value_t = 0)]
    pub nft_max_operations: usize,
    /// A file of Services, EndpointSlices, Nodes and ServiceCIDRs (JSON or YAML), or `-`.
    pub input: String,
}

/// One synced state of the history.
pub struct Step {
    /// Its objects.
    pub set: ObjectSet,
    /// Whether the stale-chain grace period passes after it.
    pub aged: bool,
}

/// The `--prior` / `--prior-aged` files in command-line order (clap keeps the two lists
/// apart, so their interleaving is read back from the raw arguments).
fn prior_order(args: &Args) -> Vec<(String, bool)> {
    let raw: Vec<String> = std::env::args().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < raw.len() {
        let a = &raw[i];
        if a == "--" {
            break;
        }
        if a == "--prior" || a == "--prior-aged" {
            if let Some(v) = raw.get(i + 1) {
                out.push((v.clone(), a == "--prior-aged"));
            }
            i += 2;
            continue;
        }
        if let Some(v) = a.strip_prefix("--prior-aged=") {
            out.push((v.to_owned(), true));
        } else if let Some(v) = a.strip_prefix("--prior=") {
            out.push((v.to_owned(), false));
        }
        i += 1;
    }
    if out.len() != args.prior.len() + args.prior_aged.len() {
        out = args
            .prior
            .iter()
            .map(|p| (p.clone(), false))
            .chain(args.prior_aged.iter().map(|p| (p.clone(), true)))
            .collect();
    }
    out
}

fn host_addresses(spec: &str) -> Result<Vec<HostInterface>, CliError> {
    let bad = |why: &str| CliError::Usage(format!("--host-addresses {spec:?}: {why}"));
    let mut out = Vec::new();
    for part in spec.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let (name, addrs) = part
            .split_once('=')
            .ok_or_else(|| bad("expected IF=ADDR[/PREFIX],..."))?;
        let mut addresses = Vec::new();
        for a in addrs.split(',').map(str::trim).filter(|a| !a.is_empty()) {
            let (ip, prefix) = match a.split_once('/') {
                Some((ip, p)) => (ip, Some(p.parse::<u8>().map_err(|_| bad("bad prefix length"))?)),
                None => (a, None),
            };
            let ip: IpAddr = ip.parse().map_err(|_| bad("bad address"))?;
            addresses.push(HostAddress { ip, prefix });
        }
        out.push(HostInterface {
            name: name.trim().to_owned(),
            addresses,
        });
    }
    Ok(out)
}

/// The node's proxy settings from the command line.
pub fn proxy_config(args: &Args) -> Result<ProxyConfig, CliError> {
    let mut c = ProxyConfig::new(args.node.clone(), args.node_ip);
    c.cluster_cidrs = args.cluster_cidr.clone();
    c.local_detector = match args.local_detector {
        Some(Detector::None) => LocalDetectorMode::None,
        _ => LocalDetectorMode::ClusterCidr,
    };
    if let Some(m) = &args.masquerade_mark {
        c.masquerade_mark = m.clone();
    } else if let Some(b) = args.masquerade_bit {
        c.masquerade_mark = ProxyConfig::mark_for_bit(b).map_err(|e| CliError::Usage(e.to_string()))?;
    }
    if let Some(v) = args.localhost_nodeports {
        c.localhost_nodeports = v;
    }
    if let Some(v) = args.nfacct {
        c.nfacct = v;
    }
    if let Some(v) = args.conntrack_tcp_be_liberal {
        c.conntrack_tcp_be_liberal = v;
    }
    if args.random_fully == Some(false) {
        eprintln!(
            "svcnet: warning: --random-fully false is ignored: kube-proxy v1.37.2 always masquerades fully-random"
        );
    }
    if !args.nodeport_addresses.is_empty() {
        c.nodeport_addresses = Some(args.nodeport_addresses.clone());
    }
    if let Some(h) = &args.host_addresses {
        c.host_addresses = host_addresses(h)?;
    }
    c.service_cidrs = args.service_cidrs.clone();
    if let Some(s) = &args.ipvs_scheduler {
        c.ipvs_scheduler = s.clone();
    }
    c.masquerade_all = args.masquerade_all;
    Ok(c)
}

/// Runs `svcnet rules`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let config = proxy_config(&args)?;
    let mut steps = Vec::new();
    for (file, aged) in prior_order(&args) {
        steps.push(Step {
            set: read_set(&file)?,
            aged,
        });
    }
    steps.push(Step {
        set: read_set(&args.input)?,
        aged: false,
    });
    match args.backend {
        Backend::Nftables => nftables::run(&args, &config, &steps),
        other => Err(CliError::Usage(format!(
            "--backend {other:?} is not available in this build"
        ))),
    }
}
