//! `svcnet dns`: the records a cluster DNS server serves for Services, EndpointSlices and Pods.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); the records follow CoreDNS v1.15.0
//! `plugin/kubernetes`.

use std::process::ExitCode;

use serde_json::{Value, json};
use svcnet_discovery::{Answer, AnswerRules, DnsOptions, DnsZone, PodMode, RecordType};
use svcnet_model::ObjectSet;

use crate::error::CliError;
use crate::input::{decode_object, flatten, read_documents};
use crate::output::{Format, print_json, print_text};

/// `--pods` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Pods {
    /// No pod names.
    Disabled,
    /// Names of running Pods, one per Pod IP.
    Verified,
    /// Any dashed IP in an existing namespace (the record set lists what `verified` lists).
    Insecure,
}

/// `--answers` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Answers {
    /// CoreDNS v1.15.0's answers, including where they break DNS rules.
    Coredns,
    /// The RFC 1034 / 2308 answers where CoreDNS's differ.
    Rfc,
}

/// Arguments of `svcnet dns`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The cluster domain (zone), e.g. `cluster.local`.
    #[arg(long, value_name = "Z")]
    pub cluster_domain: String,
    /// TTL of every record but `dns-version`.
    #[arg(long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(0..=3600))]
    pub ttl: u32,
    /// Pod records.
    #[arg(long, value_enum, default_value_t = Pods::Disabled)]
    pub pods: Pods,
    /// Fall back to an endpoint's `targetRef.name` for its hostname.
    #[arg(long)]
    pub endpoint_pod_names: bool,
    /// A ClusterIP Service without ready endpoints has no forward names.
    #[arg(long)]
    pub ignore_empty_service: bool,
    /// `--query` answers where CoreDNS breaks DNS rules: CoreDNS's (default) or the RFC's.
    #[arg(long, value_enum, default_value_t = Answers::Coredns)]
    pub answers: Answers,
    /// Answer one query instead of printing the record set.
    #[arg(long, value_name = "NAME")]
    pub query: Option<String>,
    /// The record type of `--query`.
    #[arg(long = "type", value_name = "TYPE", default_value = "A", requires = "query")]
    pub qtype: String,
    /// Print only what changed since the objects in OLD: `{"removed":[...],"added":[...]}`,
    /// or `-`/`+` zone lines.
    #[arg(long, value_name = "OLD", conflicts_with = "query")]
    pub since: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// A file of Kubernetes objects (JSON or YAML), or `-` for standard input.
    pub input: String,
}

/// Runs `svcnet dns`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let options = DnsOptions {
        cluster_domain: args.cluster_domain.clone(),
        ttl: args.ttl,
        pods: match args.pods {
            Pods::Disabled => PodMode::Disabled,
            Pods::Verified => PodMode::Verified,
            Pods::Insecure => PodMode::Insecure,
        },
        endpoint_pod_names: args.endpoint_pod_names,
        ignore_empty_service: args.ignore_empty_service,
        answers: match args.answers {
            Answers::Coredns => AnswerRules::CoreDns,
            Answers::Rfc => AnswerRules::Rfc,
        },
    };
    let zone = read_zone(&args.input, &options)?;
    let mut clean = true;
    for issue in zone.issues() {
        eprintln!("svcnet: {}: {issue} (skipped)", args.input);
        clean = false;
    }
    if let Some(old) = &args.since {
        let delta = read_zone(old, &options)?.records().diff(&zone.records());
        match args.output {
            Format::Json => print_json(&delta)?,
            Format::Text => {
                let lines: Vec<String> = (delta.removed.iter().map(|r| format!("- {r}")))
                    .chain(delta.added.iter().map(|r| format!("+ {r}")))
                    .collect();
                if !lines.is_empty() {
                    print_text(&lines.join("\n"))?;
                }
            }
        }
        return Ok(if clean {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        });
    }
    match &args.query {
        Some(name) => {
            let qtype = RecordType::parse(&args.qtype).ok_or_else(|| {
                CliError::Usage(format!(
                    "--type {:?}: must be one of A, AAAA, CNAME, PTR, SRV, TXT",
                    args.qtype
                ))
            })?;
            print_answer(name, qtype, &zone.lookup(name, qtype), args.output)?;
        }
        None => {
            let records = zone.records();
            match args.output {
                Format::Json => print_json(&records)?,
                Format::Text => print_text(records.to_string().trim_end())?,
            }
        }
    }
    Ok(if clean {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Reads a file into a zone. Namespace objects are not decoded by `input`; they are read
/// here, for which names exist.
fn read_zone(path: &str, options: &DnsOptions) -> Result<DnsZone, CliError> {
    let mut set = ObjectSet::default();
    let mut namespaces = Vec::new();
    for (value, origin) in flatten(read_documents(path)?) {
        if value.get("kind").and_then(Value::as_str) == Some("Namespace") {
            if let Some(name) = value.pointer("/metadata/name").and_then(Value::as_str) {
                namespaces.push(name.to_owned());
            }
            continue;
        }
        if let Some(object) = decode_object(path, &origin, value)? {
            set.push(object);
        }
    }
    let mut zone = DnsZone::from_objects(options.clone(), &set.services, &set.endpoint_slices, &set.pods)
        .map_err(|e| CliError::Usage(format!("--cluster-domain/--ttl: {e}")))?;
    for ns in &namespaces {
        zone.declare_namespace(ns);
    }
    Ok(zone)
}

fn print_answer(name: &str, qtype: RecordType, answer: &Answer, format: Format) -> Result<(), CliError> {
    let (rcode, records) = match answer {
        Answer::Records(r) => ("NOERROR", r.as_slice()),
        Answer::NoData => ("NOERROR", &[][..]),
        Answer::NxDomain => ("NXDOMAIN", &[][..]),
        // An answer kind this CLI does not know yet: the server failed to answer.
        _ => ("SERVFAIL", &[][..]),
    };
    match format {
        Format::Json => print_json(&json!({
            "name": name,
            "type": qtype.as_str(),
            "rcode": rcode,
            "answer": records,
        })),
        Format::Text => {
            let mut text = format!(";; {name} {qtype}: {rcode}");
            if records.is_empty() && rcode == "NOERROR" {
                text.push_str(" (no data)");
            }
            for r in records {
                text.push('\n');
                text.push_str(&r.to_string());
            }
            print_text(&text)
        }
    }
}
