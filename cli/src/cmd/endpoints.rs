//! `svcnet endpoints`: the endpoints the proxy on one node uses for each service port.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); the selection follows
//! `pkg/proxy/topology.go`.

use std::fmt::Write as _;
use std::process::ExitCode;

use serde_json::{Value, json};
use svcnet_topology::{NodeTopology, NodeView, ProxyEndpoint, SelectOptions, TopologyMode};

use crate::error::CliError;
use crate::input::read_set;
use crate::output::{Format, print_json, print_text};

/// Arguments of `svcnet endpoints`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The node the proxy runs on (its zone comes from its Node object in INPUT, when present).
    #[arg(long, value_name = "NAME")]
    pub node: String,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// The PreferSameTrafficDistribution feature (read node hints).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set, value_name = "BOOL")]
    pub node_hints: bool,
    /// A file of Services, EndpointSlices and Nodes (JSON or YAML), or `-` for standard input.
    pub input: String,
}

/// Runs `svcnet endpoints`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let set = read_set(&args.input)?;
    let node = match set.nodes.iter().find(|n| n.metadata.name() == args.node) {
        Some(n) => NodeTopology::from_node(n),
        None => {
            eprintln!(
                "svcnet: warning: node {:?} is not in the input; it has no zone, so zone hints never apply",
                args.node
            );
            NodeTopology::new(args.node.clone(), "")
        }
    };
    let options = SelectOptions {
        node_hints: args.node_hints,
    };
    let view = NodeView::build(&set.services, &set.endpoint_slices, node, options);
    let strings = |v: &[&ProxyEndpoint<'_>]| -> Vec<String> {
        let mut s: Vec<String> = v.iter().map(|e| e.to_string()).collect();
        s.sort();
        s
    };
    match args.output {
        Format::Json => {
            let services: Vec<Value> = view
                .selections()
                .map(|(p, sel)| {
                    json!({
                        "servicePort": p.name.to_string(),
                        "ipFamily": p.family,
                        "protocol": p.name.protocol,
                        "port": p.port,
                        "cluster": sel.cluster.as_deref().map(strings),
                        "local": sel.local.as_deref().map(strings),
                        "allReachable": strings(sel.all_reachable()),
                        "hasAny": sel.has_any,
                        "topology": sel.topology,
                        "clusterTerminatingFallback": sel.cluster_terminating_fallback,
                        "localTerminatingFallback": sel.local_terminating_fallback,
                        "policy": p.policy,
                    })
                })
                .collect();
            print_json(&json!({"node": view.node, "services": services, "ignored": view.ignored}))?;
        }
        Format::Text => {
            let mut t = String::new();
            let zone = if view.node.zone.is_empty() {
                "no zone"
            } else {
                view.node.zone.as_str()
            };
            let _ = writeln!(t, "node {} ({zone})", view.node.name);
            let list = |v: Option<Vec<String>>| match v {
                None => "not used".to_owned(),
                Some(v) if v.is_empty() => "none".to_owned(),
                Some(v) => v.join(" "),
            };
            for (p, sel) in view.selections() {
                let mut how = Vec::new();
                match sel.topology {
                    TopologyMode::PreferSameZone => how.push("zone hints applied"),
                    TopologyMode::PreferSameNode => how.push("node hints applied"),
                    // `None`, and any mode a later release adds.
                    _ => {}
                }
                if sel.cluster_terminating_fallback {
                    how.push("cluster falls back to terminating endpoints");
                }
                if sel.local_terminating_fallback {
                    how.push("local falls back to terminating endpoints");
                }
                if !sel.has_any {
                    how.push("no usable endpoint anywhere");
                }
                let how = if how.is_empty() {
                    String::new()
                } else {
                    format!(": {}", how.join("; "))
                };
                let _ = writeln!(
                    t,
                    "{} {} {}/{}{how}",
                    p.name,
                    p.family.as_str(),
                    p.port,
                    p.name.protocol
                );
                let _ = writeln!(
                    t,
                    "  cluster:       {}",
                    list(sel.cluster.as_deref().map(strings))
                );
                let _ = writeln!(t, "  local:         {}", list(sel.local.as_deref().map(strings)));
                let _ = writeln!(t, "  all reachable: {}", list(Some(strings(sel.all_reachable()))));
            }
            for i in &view.ignored {
                let _ = writeln!(t, "ignored: slice {} {}: {}", i.slice, i.what, i.why);
            }
            print_text(t.trim_end_matches('\n'))?;
        }
    }
    Ok(ExitCode::SUCCESS)
}
