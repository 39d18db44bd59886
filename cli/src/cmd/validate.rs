//! `svcnet validate`: what kube-apiserver v1.37.2 answers to a create or update (or, with
//! `--no-defaults`, what the validation functions alone say), printed as Kubernetes `Status`
//! objects.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2); the answers follow
//! `pkg/registry/core/service/storage/storage.go`, `pkg/registry/core/service/strategy.go` and
//! `pkg/apis/core/validation/validation.go`.

use std::process::ExitCode;

use serde_json::{Value, json};
use svcnet_allocators::SplitMix64;
use svcnet_apiserver::{Answer, Change, Cluster, Step};
use svcnet_model::field::FieldError;
use svcnet_model::{Object, defaults, validation};

use crate::error::CliError;
use crate::input::{Located, read_objects};
use crate::output::{Format, print_json, print_text};

/// Seed of the generator that hands out the addresses and ports of a dry run.
const DRY_RUN_SEED: u64 = 0x5eed;

/// Arguments of `svcnet validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Validate an update from the object(s) in OLD, as the server stores them (same kind;
    /// matched by kind, namespace and name).
    #[arg(long, value_name = "OLD")]
    pub old: Option<String>,
    /// The validation functions alone, on the objects as given: no defaulting, no REST
    /// strategy, no allocator, duplicate causes kept.
    #[arg(long)]
    pub no_defaults: bool,
    /// The cluster's service CIDRs, primary first (one per family): requested ClusterIPs must
    /// lie in them and not be in use.
    #[arg(long, value_name = "CIDR[,CIDR]", value_delimiter = ',')]
    pub service_cidrs: Vec<String>,
    /// The cluster's NodePort range: requested node ports must lie in it and not be in use.
    #[arg(long, value_name = "FROM-TO", default_value = "30000-32767")]
    pub node_port_range: String,
    /// With --old: validate a status update (Service `status.loadBalancer`) instead of a spec
    /// update.
    #[arg(long, requires = "old")]
    pub status: bool,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Text)]
    pub output: Format,
    /// A file of Kubernetes objects (JSON or YAML), or `-` for standard input.
    pub input: String,
}

/// Runs `svcnet validate`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let cidrs: Vec<&str> = args
        .service_cidrs
        .iter()
        .map(|s| s.trim())
        .filter(|s| !s.is_empty())
        .collect();
    let mut cluster = Cluster::parse(&cidrs, &args.node_port_range)
        .map_err(|e| CliError::Usage(format!("--service-cidrs / --node-port-range: {e}")))?;
    let objects = read_objects(&args.input)?;
    let olds = match &args.old {
        Some(p) => read_objects(p)?,
        None => Vec::new(),
    };
    if args.old.is_some() && olds.is_empty() {
        return Err(CliError::Usage(
            "--old: the file holds no object svcnet validates".into(),
        ));
    }
    // What the stored objects hold is in use.
    for o in &olds {
        if let Object::Service(svc) = &o.object {
            let mut stored = svc.as_ref().clone();
            defaults::default_service(&mut stored);
            cluster.record_stored(&stored);
        }
    }
    let mut rng = SplitMix64::new(DRY_RUN_SEED);
    let mut tally = Tally::default();
    for l in &objects {
        let old = match args
            .old
            .as_ref()
            .map(|_| l.object.counterpart(olds.iter().map(|o| &o.object)))
        {
            Some(None) => {
                return Err(CliError::Usage(format!(
                    "--old: no {} named {:?} to compare {} with",
                    l.object.kind(),
                    l.object.metadata().name(),
                    l.origin
                )));
            }
            Some(Some(o)) => Some(o),
            None => None,
        };
        let validated = validation::is_validated(&l.object);
        let answer = if args.no_defaults {
            pure_validation(&l.object, old, args.status)
        } else if args.status {
            status_update(&l.object, old)
        } else {
            let mut obj = l.object.clone();
            match old {
                Some(o) => svcnet_apiserver::update(&mut obj, o, Some(&mut cluster), &mut rng),
                None => svcnet_apiserver::create(&mut obj, Some(&mut cluster), &mut rng),
            }
        };
        tally.count(&l.object, validated, &answer);
        match args.output {
            Format::Json => print_json(&status(&l.object, &answer))?,
            Format::Text if validated || !answer.is_valid() => print_answer(l, &answer)?,
            Format::Text => {}
        }
    }
    if args.output == Format::Text {
        tally.print()?;
    }
    Ok(if tally.invalid == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// `--no-defaults`: the validation functions on the object as given, duplicates kept.
fn pure_validation(obj: &Object, old: Option<&Object>, status: bool) -> Answer {
    let errors = match old {
        Some(o) if status => validation::validate_object_status(obj, o),
        _ => validation::validate_object(obj, old),
    };
    Answer::from_validation(errors)
}

/// `--status`: defaulting, then the status-update validation (the status strategy keeps the
/// stored spec), identical causes merged.
fn status_update(obj: &Object, old: Option<&Object>) -> Answer {
    let mut new = obj.clone();
    defaults::default_object(&mut new);
    let mut errors = match old {
        Some(o) => {
            let mut stored = o.clone();
            defaults::default_object(&mut stored);
            validation::validate_object_status(&new, &stored)
        }
        None => validation::validate_object(&new, None),
    };
    svcnet_apiserver::merge_duplicates(&mut errors);
    Answer::from_validation(errors)
}

/// Counts of the verdicts, and of the objects skipped by kind, for the text summary.
#[derive(Default)]
struct Tally {
    valid: usize,
    invalid: usize,
    skipped: Vec<(&'static str, usize)>,
}

impl Tally {
    fn count(&mut self, obj: &Object, validated: bool, answer: &Answer) {
        if !answer.is_valid() {
            self.invalid += 1;
        } else if validated {
            self.valid += 1;
        } else {
            let kind = obj.kind();
            match self.skipped.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, n)) => *n += 1,
                None => self.skipped.push((kind, 1)),
            }
        }
    }

    fn print(&self) -> Result<(), CliError> {
        if !self.skipped.is_empty() {
            let groups: Vec<String> = self
                .skipped
                .iter()
                .map(|(k, n)| format!("{n} {}", plural(k, *n)))
                .collect();
            print_text(&format!(
                "skipped, not validated: {} (svcnet validates {})",
                groups.join(", "),
                join_kinds(validation::VALIDATED_KINDS)
            ))?;
        }
        let skipped: usize = self.skipped.iter().map(|(_, n)| n).sum();
        print_text(&format!(
            "{} valid, {} invalid, {skipped} skipped",
            self.valid, self.invalid
        ))
    }
}

fn plural(kind: &str, n: usize) -> String {
    if n == 1 || kind.ends_with('s') {
        kind.to_owned()
    } else {
        format!("{kind}s")
    }
}

fn group_of(obj: &Object) -> &'static str {
    match obj {
        Object::EndpointSlice(_) => "discovery.k8s.io",
        Object::ServiceCidr(_) | Object::IpAddress(_) | Object::NetworkPolicy(_) => "networking.k8s.io",
        _ => "",
    }
}

/// One strategy change as JSON: `{"field","action","value","reason","message"}`.
fn change_json(c: &Change) -> Value {
    let value: Value = serde_json::from_str(&c.value).unwrap_or(Value::Null);
    json!({
        "field": c.field,
        "action": c.kind.verb(),
        "value": value,
        "reason": c.reason,
        "message": c.to_string(),
    })
}

/// The Kubernetes `Status` the request would get, plus `changes` when the server changed the
/// request before answering (kinds svcnet does not validate are a plain Success).
fn status(obj: &Object, answer: &Answer) -> Value {
    let errors = &answer.errors;
    let name = obj.metadata().name();
    let mut details = json!({ "name": name, "kind": obj.kind() });
    if !group_of(obj).is_empty() {
        details["group"] = json!(group_of(obj));
    }
    let mut st = if errors.is_empty() {
        json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details })
    } else if answer.is_internal() {
        let msg = errors
            .iter()
            .map(|e| e.detail.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        details["causes"] = json!([{ "message": msg }]);
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": format!("Internal error occurred: {msg}"),
            "reason": "InternalError",
            "details": details,
            "code": 500
        })
    } else {
        let causes: Vec<Value> = errors
            .iter()
            .map(|e| json!({ "reason": e.type_.reason(), "message": e.body(), "field": e.field }))
            .collect();
        details["causes"] = Value::Array(causes);
        let list: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let joined = if list.len() == 1 {
            list[0].clone()
        } else {
            format!("[{}]", list.join(", "))
        };
        json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": format!("{} {:?} is invalid: {}", obj.kind(), name, joined),
            "reason": "Invalid",
            "details": details,
            "code": 422
        })
    };
    if !answer.changes.is_empty() {
        st["changes"] = Value::Array(answer.changes.iter().map(change_json).collect());
    }
    st
}

/// `kinds` as "A, B and C".
fn join_kinds(kinds: &[&str]) -> String {
    match kinds {
        [] => String::new(),
        [only] => (*only).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn who(l: &Located) -> String {
    let m = l.object.metadata();
    if m.namespace().is_empty() {
        format!("{} {}", l.object.kind(), m.name())
    } else {
        format!("{} {}/{}", l.object.kind(), m.namespace(), m.name())
    }
}

fn print_answer(l: &Located, answer: &Answer) -> Result<(), CliError> {
    let who = who(l);
    for c in &answer.changes {
        print_text(&format!("{who}: the API server {c}"))?;
    }
    if answer.errors.is_empty() {
        return print_text(&format!("{who}: valid"));
    }
    if answer.step == Step::Allocator {
        print_text(&format!(
            "{who}: refused by the Service allocator, before validation:"
        ))?;
    }
    for e in &answer.errors {
        print_error(&who, e)?;
    }
    Ok(())
}

fn print_error(who: &str, e: &FieldError) -> Result<(), CliError> {
    if e.field.is_empty() {
        print_text(&format!("{who}: Internal error occurred: {}", e.detail))
    } else {
        print_text(&format!("{who}: {e}"))
    }
}
