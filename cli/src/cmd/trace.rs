//! `svcnet trace`: follows one packet through the rules that `svcnet rules` would generate for
//! the node, and prints the walk and the outcome.

use std::process::ExitCode;

use svcnet_rules::nftables::Family;
use svcnet_rules::trace::{self, HostAddresses, Packet, Trace};

use crate::cmd::rules::{self, Backend, RulesFormat};
use crate::error::CliError;
use crate::output::{print_json, print_text};

/// Arguments of `svcnet trace`: every setting of `svcnet rules`, and the packet.
#[derive(Debug, clap::Args)]
#[group(skip)]
pub struct Args {
    /// The packet's source address.
    #[arg(long, value_name = "SRC")]
    pub from: String,
    /// The packet's destination: `ADDR:PORT[/PROTO]` or `[ADDR6]:PORT[/PROTO]` (protocol tcp when absent).
    #[arg(long, value_name = "DST:PORT/PROTO")]
    pub to: String,
    /// The node's proxy settings and the cluster state, as for `svcnet rules`.
    #[command(flatten)]
    pub rules: rules::Args,
}

/// Runs `svcnet trace`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    if args.rules.output == RulesFormat::NftJson {
        return Err(CliError::Usage(
            "--output nft-json: only for `svcnet rules --backend nftables`".to_owned(),
        ));
    }
    let packet = Packet::parse(&args.from, &args.to).map_err(|e| CliError::Usage(e.to_string()))?;
    let config = rules::config(&args.rules)?;
    if packet.destination.is_ipv4() != config.node_ip.is_ipv4() {
        return Err(CliError::Usage(format!(
            "--to {}: not of the family of --node-ip {}",
            args.to, config.node_ip
        )));
    }
    let history = rules::history(&args.rules)?;
    let host = HostAddresses::of(&config);
    let result = match args.rules.backend {
        Backend::Iptables => {
            let (_, state) = rules::iptables::replay(&config, &history)?;
            trace::iptables::trace(&state, &host, &packet)
        }
        Backend::Nftables => {
            let Some((proxier, _)) = rules::nftables::replay(&args.rules, &config, &history)? else {
                return Ok(ExitCode::from(1));
            };
            let family = if config.node_ip.is_ipv4() {
                Family::Ip
            } else {
                Family::Ip6
            };
            let Some(table) = proxier.state().table(family, svcnet_rules::nftables::TABLE) else {
                return Err(CliError::Usage(
                    "the nftables sync left no kube-proxy table".to_owned(),
                ));
            };
            trace::nftables::trace(table, &host, &packet)
        }
        Backend::Ipvs => {
            let options = svcnet_rules::ipvs::IpvsOptions {
                unprefixed_ipv6_sets: args.rules.ipvs_unprefixed_ipv6_sets,
            };
            let rules = rules::ipvs::rule_set(&config, &history, &options)?;
            Ok(trace::ipvs::trace(&rules, &packet))
        }
    };
    let t = match result {
        Ok(t) => t,
        Err(e) => {
            eprintln!("svcnet: trace: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    match args.rules.output {
        RulesFormat::Json => print_json(&t)?,
        RulesFormat::Text | RulesFormat::NftJson => print_text(&text(&t, &packet))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// The walk, one matched rule a line, then the answer.
fn text(t: &Trace, p: &Packet) -> String {
    let mut out = format!(
        "packet {} -> {}:{}/{}\n",
        p.source,
        p.destination,
        p.port,
        p.protocol.lower()
    );
    for s in &t.walk {
        out.push_str(&format!("  {} {}: {}\n", s.table, s.chain, s.rule));
    }
    let answer = match t.outcome {
        trace::Outcome::Dnat => format!("dnat to one of {}", t.endpoint_strings().join(", ")),
        trace::Outcome::Pass => "pass: the rules leave the packet alone".to_owned(),
        o => o.as_str().to_owned(),
    };
    for n in &t.notes {
        out.push_str(&format!("  note: {n}\n"));
    }
    out.push_str(&format!(
        "outcome: {answer}{}",
        if t.masquerade { " (masqueraded)" } else { "" }
    ));
    out
}
