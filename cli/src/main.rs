//! `svcnet`: computes what Kubernetes Service networking decides, from Kubernetes YAML or JSON.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); each subcommand calls a library crate
//! that follows Kubernetes v1.37.2.
//!
//! Every subcommand reads its input, calls one of the svcnet library crates and prints the
//! result. Exit codes: 0 done (and valid), 1 invalid input or a refused operation, 2 the command
//! line or the input could not be read.

mod cmd;
mod output;

use svcnet_cli::{error, input};

use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Kubernetes Service networking, computed offline.
#[derive(Debug, Parser)]
#[command(name = "svcnet", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Default and validate Services, EndpointSlices, ServiceCIDRs and NetworkPolicies.
    Validate(cmd::validate::Args),
    /// Run an allocator operation script (ClusterIP, NodePort, multi-CIDR).
    Alloc(cmd::alloc::Args),
    /// Plan the EndpointSlices of Services with selectors.
    Slice(cmd::slice::Args),
    /// Plan the EndpointSlices mirrored from selector-less Services' Endpoints.
    Mirror(cmd::mirror::Args),
    /// Fill or remove topology hints on EndpointSlices.
    Hints(cmd::hints::Args),
    /// The endpoints the proxy on one node would use for each service port.
    Endpoints(cmd::endpoints::Args),
    /// The iptables, nftables or IPVS rules kube-proxy would program on one node.
    Rules(cmd::rules::Args),
    /// Follow one packet through the rules kube-proxy would program on one node.
    Trace(cmd::trace::Args),
    /// Why a Service does (not) work, in the order an expert checks.
    Explain(cmd::explain::Args),
    /// The conntrack entries the proxy on one node must flush after a change of state.
    Conntrack(cmd::conntrack::Args),
    /// The DNS records a cluster DNS server serves.
    Dns(cmd::dns::Args),
    /// The service environment variables the kubelet injects into a container.
    Env(cmd::env::Args),
}

/// `--masquerade-all true|false` becomes `--masquerade-all=true|false`: the flag takes an
/// optional value only with `=`, so `--masquerade-all INPUT` keeps INPUT positional while the
/// spelled-out form of the trace cases still works.
fn joined_bool_flags(args: impl Iterator<Item = String>) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut it = args.peekable();
    while let Some(a) = it.next() {
        if a == "--masquerade-all"
            && let Some(v) = it.peek()
            && (v == "true" || v == "false")
        {
            out.push(format!("{a}={v}"));
            it.next();
            continue;
        }
        out.push(a);
    }
    out
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse_from(joined_bool_flags(std::env::args())) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() { 2 } else { 0 };
            let _ = e.print();
            return ExitCode::from(code);
        }
    };
    let result = match cli.command {
        Command::Validate(a) => cmd::validate::run(a),
        Command::Alloc(a) => cmd::alloc::run(a),
        Command::Slice(a) => cmd::slice::run(a),
        Command::Mirror(a) => cmd::mirror::run(a),
        Command::Hints(a) => cmd::hints::run(a),
        Command::Endpoints(a) => cmd::endpoints::run(a),
        Command::Rules(a) => cmd::rules::run(a),
        Command::Trace(a) => cmd::trace::run(a),
        Command::Explain(a) => cmd::explain::run(a),
        Command::Conntrack(a) => cmd::conntrack::run(a),
        Command::Dns(a) => cmd::dns::run(a),
        Command::Env(a) => cmd::env::run(a),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("svcnet: {e}");
            ExitCode::from(2)
        }
    }
}
