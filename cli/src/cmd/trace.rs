//! `svcnet trace`: follows packets through the rules that `svcnet rules` would generate for
//! the node (or through rule text given with `--rules`), and prints the walk and the outcome.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use std::net::IpAddr;
use std::process::ExitCode;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use svcnet_rules::Protocol;
use svcnet_rules::iptables::IptablesState;
use svcnet_rules::ipvs::IpvsRuleSet;
use svcnet_rules::nftables::{Family, State};
use svcnet_rules::trace::{self, HostAddresses, Outcome, Packet, Trace, TraceError};

use crate::cmd::rules::{self, Backend, RulesFormat};
use crate::error::CliError;
use crate::input::read_bytes;
use crate::output::{print_json, print_text};

/// Arguments of `svcnet trace`: every setting of `svcnet rules`, and the packet(s).
#[derive(Debug, clap::Args)]
#[group(skip)]
#[command(mut_arg("input", |a| a.required(false).default_value("").hide_default_value(true)))]
pub struct Args {
    /// The packet's source address.
    #[arg(
        long,
        value_name = "SRC",
        required_unless_present = "packets",
        requires = "to"
    )]
    pub from: Option<String>,
    /// The packet's destination: `ADDR:PORT[/PROTO]` or `[ADDR6]:PORT[/PROTO]` (protocol tcp when absent).
    #[arg(long, value_name = "DST:PORT/PROTO", requires = "from")]
    pub to: Option<String>,
    /// Many packets: a JSON array of `{"name","source","destination","port","protocol"}`
    /// (`-` is standard input); the answer is `{"flows":[{"name","output","masq"}...]}`.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["from", "to"])]
    pub packets: Option<String>,
    /// Trace this rule text instead of svcnet's own rules: iptables-save or iptables-restore
    /// text (iptables), or knftables operations, a dump or `nft -f` transactions (nftables).
    /// INPUT is then not needed.
    #[arg(long = "rules", value_name = "FILE")]
    pub rules_file: Option<String>,
    /// The node's proxy settings and the cluster state, as for `svcnet rules`.
    #[command(flatten)]
    pub rules: rules::Args,
}

/// One packet of a `--packets` file.
#[derive(Debug, Deserialize)]
struct Flow {
    #[serde(default)]
    name: Option<String>,
    source: String,
    destination: String,
    port: u16,
    #[serde(default)]
    protocol: Option<String>,
}

/// The answer for one flow of a `--packets` file, in the shape of the trace conformance cases.
#[derive(Debug, Serialize)]
struct FlowAnswer {
    name: String,
    /// Sorted endpoints, or `"REJECT"` / `"DROP"` / `"ACCEPT"`; null when the trace failed.
    output: Value,
    masq: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    notes: Vec<String>,
}

/// The rule set packets are traced through.
enum RuleSet {
    Iptables(IptablesState),
    Nftables(State, Family),
    Ipvs(IpvsRuleSet),
}

impl RuleSet {
    fn trace(&self, host: &HostAddresses, p: &Packet) -> Result<Trace, TraceError> {
        match self {
            RuleSet::Iptables(s) => trace::iptables::trace(s, host, p),
            RuleSet::Nftables(st, family) => match st.table(*family, svcnet_rules::nftables::TABLE) {
                Some(t) => trace::nftables::trace(t, host, p),
                None => Err(TraceError::NoTable(format!(
                    "{family} {}",
                    svcnet_rules::nftables::TABLE
                ))),
            },
            RuleSet::Ipvs(r) => trace::ipvs::trace_rules(r, host, p),
        }
    }
}

/// Runs `svcnet trace`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    if args.rules.output == RulesFormat::NftJson {
        return Err(CliError::Usage(
            "--output nft-json: only for `svcnet rules --backend nftables`".to_owned(),
        ));
    }
    let config = rules::config(&args.rules)?;
    let family = if config.node_ip.is_ipv4() {
        Family::Ip
    } else {
        Family::Ip6
    };
    let mut notes = Vec::new();
    let set = match &args.rules_file {
        Some(path) => parsed(args.rules.backend, path, &mut notes)?,
        None => {
            if args.rules.input.is_empty() {
                return Err(CliError::Usage(
                    "INPUT is required (the cluster state), unless --rules gives the rule text".to_owned(),
                ));
            }
            let history = rules::history(&args.rules)?;
            match args.rules.backend {
                Backend::Iptables => RuleSet::Iptables(rules::iptables::replay(&config, &history)?.1),
                Backend::Nftables => {
                    let Some((proxier, _)) = rules::nftables::replay(&args.rules, &config, &history)? else {
                        return Ok(ExitCode::from(1));
                    };
                    RuleSet::Nftables(proxier.state().clone(), family)
                }
                Backend::Ipvs => {
                    let options = svcnet_rules::ipvs::IpvsOptions {
                        unprefixed_ipv6_sets: args.rules.ipvs_unprefixed_ipv6_sets,
                    };
                    RuleSet::Ipvs(rules::ipvs::rule_set(&config, &history, &options)?)
                }
            }
        }
    };
    let host = HostAddresses::of(&config);
    if let Some(path) = &args.packets {
        return batch(&args, path, &set, &host, &notes, config.node_ip);
    }
    let (from, to) = match (&args.from, &args.to) {
        (Some(f), Some(t)) => (f, t),
        _ => {
            return Err(CliError::Usage(
                "--from and --to, or --packets, are required".to_owned(),
            ));
        }
    };
    let packet = Packet::parse(from, to).map_err(|e| CliError::Usage(e.to_string()))?;
    if packet.destination.is_ipv4() != config.node_ip.is_ipv4() {
        return Err(CliError::Usage(format!(
            "--to {to}: not of the family of --node-ip {}",
            config.node_ip
        )));
    }
    let mut t = match set.trace(&host, &packet) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("svcnet: trace: {e}");
            return Ok(ExitCode::from(1));
        }
    };
    t.notes.extend(notes);
    match args.rules.output {
        RulesFormat::Json => print_json(&t)?,
        RulesFormat::Text | RulesFormat::NftJson => print_text(&text(&t, &packet))?,
    }
    Ok(ExitCode::SUCCESS)
}

/// Reads the rule text of `--rules` for the backend.
fn parsed(backend: Backend, path: &str, notes: &mut Vec<String>) -> Result<RuleSet, CliError> {
    let bytes = read_bytes(path)?;
    let text = String::from_utf8(bytes).map_err(|e| CliError::Parse {
        path: path.to_owned(),
        detail: format!("not UTF-8 text: {e}"),
    })?;
    let parse_err = |detail: String| CliError::Parse {
        path: path.to_owned(),
        detail,
    };
    match backend {
        Backend::Iptables => {
            let p = svcnet_rules::iptables::parse_state(&text).map_err(|e| parse_err(e.to_string()))?;
            for s in &p.skipped {
                notes.push(format!(
                    "{path}: line {}: not traced ({}): {}",
                    s.line, s.why, s.text
                ));
            }
            let mut state = p.value;
            let prerouting = svcnet_rules::iptables::Chain::Fixed("PREROUTING");
            if state.nat.chains.get(&prerouting).is_none_or(Vec::is_empty) {
                let n = svcnet_rules::iptables::with_jump_rules(&mut state);
                notes.push(format!(
                    "{path}: nat PREROUTING has no rules (a restore payload): added the {n} jump rules kube-proxy installs apart from it"
                ));
            }
            Ok(RuleSet::Iptables(state))
        }
        Backend::Nftables => {
            let state = svcnet_rules::nftables::parse_state(&text).map_err(|e| parse_err(e.to_string()))?;
            // The table of the text: the node's family is checked when tracing.
            let family = state
                .tables
                .keys()
                .find(|(_, n)| n == svcnet_rules::nftables::TABLE)
                .map(|(f, _)| *f)
                .ok_or_else(|| parse_err(format!("no table {}", svcnet_rules::nftables::TABLE)))?;
            Ok(RuleSet::Nftables(state, family))
        }
        Backend::Ipvs => Err(CliError::Usage(
            "--rules: only iptables and nftables rule text can be read".to_owned(),
        )),
    }
}

/// `--packets`: every flow of the file, one answer each, in order.
fn batch(
    args: &Args,
    path: &str,
    set: &RuleSet,
    host: &HostAddresses,
    notes: &[String],
    node_ip: IpAddr,
) -> Result<ExitCode, CliError> {
    let bytes = read_bytes(path)?;
    let flows: Vec<Flow> = serde_json::from_slice(&bytes).map_err(|e| CliError::Parse {
        path: path.to_owned(),
        detail: format!("not a JSON array of {{name, source, destination, port, protocol}}: {e}"),
    })?;
    let mut answers = Vec::with_capacity(flows.len());
    let mut failed = false;
    for (i, f) in flows.iter().enumerate() {
        let name = f.name.clone().unwrap_or_else(|| format!("flow {}", i + 1));
        let result = packet(f, node_ip).and_then(|p| set.trace(host, &p));
        answers.push(match result {
            Ok(t) => FlowAnswer {
                name,
                output: match t.outcome {
                    Outcome::Dnat | Outcome::Pass => Value::from(t.endpoint_strings()),
                    o => Value::from(o.as_str().to_ascii_uppercase()),
                },
                masq: t.masquerade,
                error: None,
                notes: t.notes,
            },
            Err(e) => {
                failed = true;
                FlowAnswer {
                    name,
                    output: Value::Null,
                    masq: false,
                    error: Some(e.to_string()),
                    notes: Vec::new(),
                }
            }
        });
    }
    for n in notes {
        eprintln!("svcnet: trace: note: {n}");
    }
    #[derive(Serialize)]
    struct Answer {
        flows: Vec<FlowAnswer>,
    }
    match args.rules.output {
        RulesFormat::Json => print_json(&Answer { flows: answers })?,
        RulesFormat::Text | RulesFormat::NftJson => {
            let mut out = String::new();
            for a in &answers {
                let what = match (&a.error, &a.output) {
                    (Some(e), _) => format!("error: {e}"),
                    (None, Value::Array(v)) if v.is_empty() => "pass".to_owned(),
                    (None, Value::Array(v)) => format!(
                        "dnat to one of {}",
                        v.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")
                    ),
                    (None, v) => v.as_str().unwrap_or_default().to_ascii_lowercase(),
                };
                out.push_str(&format!(
                    "{}: {what}{}\n",
                    a.name,
                    if a.masq { " (masqueraded)" } else { "" }
                ));
            }
            print_text(out.trim_end())?;
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The packet of a `--packets` flow.
fn packet(f: &Flow, node_ip: IpAddr) -> Result<Packet, TraceError> {
    let bad = |why: &'static str| TraceError::Packet {
        value: format!("{} -> {}:{}", f.source, f.destination, f.port),
        why,
    };
    let source: IpAddr = f
        .source
        .trim()
        .parse()
        .map_err(|_| bad("the source is not an IP address"))?;
    let destination: IpAddr = f
        .destination
        .trim()
        .parse()
        .map_err(|_| bad("the destination is not an IP address"))?;
    let protocol = match &f.protocol {
        None => Protocol::Tcp,
        Some(p) => {
            Protocol::parse(&p.to_ascii_uppercase()).ok_or(bad("the protocol is not tcp, udp or sctp"))?
        }
    };
    if destination.is_ipv4() != node_ip.is_ipv4() {
        return Err(bad("the destination is not of the family of --node-ip"));
    }
    Ok(Packet {
        source,
        destination,
        port: f.port,
        protocol,
    })
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
