//! `svcnet explain`: why a Service does (not) work; the analysis is
//! `svcnet_rules::explain`, this module reads, calls and prints.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use std::net::IpAddr;
use std::process::ExitCode;

use svcnet_rules::ProxyConfig;
use svcnet_rules::explain::{self, explain, explain_on_node};

use crate::cmd::rules::Backend;
use crate::error::CliError;
use crate::input::read_set;
use crate::output::{Format, print_json, print_text};

/// Arguments of `svcnet explain`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The Service, as NAMESPACE/NAME.
    #[arg(value_name = "NS/NAME")]
    pub service: String,
    /// Also check what a Local traffic policy leaves on this node, and trace packets to the
    /// Service through the node's rules (when its IP is known).
    #[arg(long, value_name = "NAME")]
    pub node: Option<String>,
    /// The node's IP, for the trace (default: the Node's first InternalIP in INPUT).
    #[arg(long, value_name = "IP", requires = "node")]
    pub node_ip: Option<IpAddr>,
    /// The proxy mode whose rules are traced.
    #[arg(long, value_enum, default_value_t = Backend::Iptables)]
    pub backend: Backend,
    /// Pod CIDRs: which sources are pods (the first of the family is used).
    #[arg(long, value_name = "CIDR[,CIDR]", value_delimiter = ',')]
    pub cluster_cidr: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// A file of Services, EndpointSlices, Pods and Nodes (JSON or YAML), or `-` for standard input.
    pub input: String,
}

/// Runs `svcnet explain`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let Some((ns, name)) = args.service.split_once('/') else {
        return Err(CliError::Usage(format!("{:?}: not NAMESPACE/NAME", args.service)));
    };
    let mut cidrs = Vec::new();
    for c in &args.cluster_cidr {
        cidrs.push(
            c.trim()
                .parse()
                .map_err(|_| CliError::Usage(format!("--cluster-cidr {c:?}: not a CIDR")))?,
        );
    }
    let objects = read_set(&args.input)?;
    let node_ip = args.node_ip.or_else(|| {
        let node = args.node.as_deref()?;
        objects
            .nodes
            .iter()
            .rev()
            .find(|n| n.metadata.name() == node)?
            .status
            .as_ref()?
            .addresses
            .as_ref()?
            .iter()
            .filter(|a| a.type_ == "InternalIP")
            .find_map(|a| a.address.trim().parse::<IpAddr>().ok())
    });
    let e = match (args.node.as_deref(), node_ip) {
        (Some(node), Some(ip)) => {
            let mut config = ProxyConfig::new(node, ip);
            config.cluster_cidrs = cidrs;
            let backend = match args.backend {
                Backend::Iptables => explain::Backend::Iptables,
                Backend::Nftables => explain::Backend::Nftables,
                Backend::Ipvs => explain::Backend::Ipvs,
            };
            explain_on_node(&objects, ns, name, &config, backend)
        }
        (node, _) => explain(&objects, ns, name, node),
    };
    match args.output {
        Format::Json => print_json(&e)?,
        Format::Text => {
            let mut out = format!("Service {}:", e.service);
            for f in &e.findings {
                out.push_str(&format!("\n- {:?}: {}", f.code, f.message));
                if !f.objects.is_empty() {
                    out.push_str(&format!("\n  ({})", f.objects.join(", ")));
                }
            }
            print_text(&out)?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
