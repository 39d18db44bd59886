//! `svcnet conntrack`: the conntrack entries the proxy on one node must flush when the cluster
//! state moves from `--prior` to INPUT (`svcnet_rules::conntrack::stale_entries`), as
//! `conntrack -D` command lines or JSON filters.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); the entries follow
//! `pkg/proxy/conntrack/cleanup.go`.

use std::net::IpAddr;
use std::process::ExitCode;

use serde::Serialize;
use svcnet_model::ObjectSet;
use svcnet_rules::conntrack::{ConntrackFilter, stale_entries};
use svcnet_rules::{ProxyConfig, ProxyModel};

use crate::error::CliError;
use crate::input::read_set;
use crate::output::{Format, print_json, print_text};

/// Arguments of `svcnet conntrack`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The node the proxy runs on.
    #[arg(long, value_name = "NAME")]
    pub node: String,
    /// The node's IP; its family picks the proxier (IPv4 or IPv6).
    #[arg(long, value_name = "IP")]
    pub node_ip: IpAddr,
    /// The state synced before INPUT (Services, EndpointSlices, Nodes).
    #[arg(long, value_name = "FILE")]
    pub prior: String,
    /// Output format: `conntrack -D` command lines, or the filters as JSON.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// The state now: a file of Services, EndpointSlices and Nodes (JSON or YAML), or `-` for
    /// standard input.
    pub input: String,
}

/// The JSON answer.
#[derive(Debug, Serialize)]
struct Answer<'a> {
    node: &'a str,
    family: &'static str,
    filters: &'a [ConntrackFilter],
}

fn model(objects: &ObjectSet, config: &ProxyConfig) -> ProxyModel {
    let node = objects
        .nodes
        .iter()
        .rev()
        .find(|n| n.metadata.name() == config.node_name);
    ProxyModel::build(&objects.services, &objects.endpoint_slices, node, config)
}

/// Runs `svcnet conntrack`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let config = ProxyConfig::new(args.node.clone(), args.node_ip);
    let old = model(&read_set(&args.prior)?, &config);
    let new = model(&read_set(&args.input)?, &config);
    let filters = stale_entries(&old, &new);
    let ipv6 = args.node_ip.is_ipv6();
    match args.output {
        Format::Json => print_json(&Answer {
            node: &args.node,
            family: if ipv6 { "IPv6" } else { "IPv4" },
            filters: &filters,
        })?,
        Format::Text => {
            if filters.is_empty() {
                print_text("# nothing to flush")?;
            } else {
                let mut out = String::new();
                for f in &filters {
                    if !out.is_empty() {
                        out.push('\n');
                    }
                    out.push_str(&format!(
                        "# {}: {}\n{}",
                        f.service,
                        f.reason,
                        f.command_line(ipv6)
                    ));
                }
                print_text(&out)?;
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
