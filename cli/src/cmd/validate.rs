//! `svcnet validate`: defaulting and validation, printed as Kubernetes `Status` objects.

use std::process::ExitCode;

use serde_json::{Value, json};
use svcnet_model::field::FieldError;
use svcnet_model::{Object, defaults, validation};

use crate::error::CliError;
use crate::input::{Located, read_objects};
use crate::output::{Format, print_json, print_text};

/// Arguments of `svcnet validate`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Validate an update from the object(s) in OLD (same kind; matched by kind, namespace and name).
    #[arg(long, value_name = "OLD")]
    pub old: Option<String>,
    /// Skip the API server's defaulting (and its clusterIP/clusterIPs normalisation).
    #[arg(long)]
    pub no_defaults: bool,
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
    let mut objects = read_objects(&args.input)?;
    let mut olds = match &args.old {
        Some(p) => read_objects(p)?,
        None => Vec::new(),
    };
    if !args.no_defaults {
        for l in objects.iter_mut().chain(olds.iter_mut()) {
            defaults::default_object(&mut l.object);
        }
    }
    if args.old.is_some() && olds.is_empty() {
        return Err(CliError::Usage(
            "--old: the file holds no object svcnet validates".into(),
        ));
    }
    let mut all_valid = true;
    for l in &objects {
        let old = args.old.as_ref().map(|_| find_old(&l.object, &olds));
        let old = match old {
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
        let mut obj = l.object.clone();
        if !args.no_defaults
            && let Object::Service(svc) = &mut obj
        {
            let old_svc = match old {
                Some(Object::Service(o)) => Some(o.as_ref()),
                _ => None,
            };
            defaults::normalize_cluster_ips(svc, old_svc);
        }
        let errors = match old {
            Some(o) if args.status => validation::validate_object_status(&obj, o),
            _ => validation::validate_object(&obj, old),
        };
        all_valid &= errors.is_empty();
        match args.output {
            Format::Json => print_json(&status(&l.object, &errors))?,
            Format::Text => print_errors(l, validation::is_validated(&obj), &errors)?,
        }
    }
    Ok(if all_valid {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

fn find_old<'a>(obj: &Object, olds: &'a [Located]) -> Option<&'a Object> {
    let same_kind: Vec<&Object> = olds
        .iter()
        .map(|l| &l.object)
        .filter(|o| o.kind() == obj.kind())
        .collect();
    let m = obj.metadata();
    let by_name = same_kind
        .iter()
        .find(|o| o.metadata().name() == m.name() && o.metadata().namespace() == m.namespace())
        .copied();
    match (by_name, same_kind.as_slice()) {
        (Some(o), _) => Some(o),
        (None, [only]) => Some(*only),
        _ => None,
    }
}

fn group_of(obj: &Object) -> &'static str {
    match obj {
        Object::EndpointSlice(_) => "discovery.k8s.io",
        Object::ServiceCidr(_) | Object::IpAddress(_) | Object::NetworkPolicy(_) => "networking.k8s.io",
        _ => "",
    }
}

/// The Kubernetes `Status` a create or update would return.
fn status(obj: &Object, errors: &[FieldError]) -> Value {
    let name = obj.metadata().name();
    let mut details = json!({ "name": name, "kind": obj.kind() });
    if !group_of(obj).is_empty() {
        details["group"] = json!(group_of(obj));
    }
    if errors.is_empty() {
        return json!({ "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details });
    }
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
}

/// `kinds` as "A, B and C".
fn join_kinds(kinds: &[&str]) -> String {
    match kinds {
        [] => String::new(),
        [only] => (*only).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

fn print_errors(l: &Located, validated: bool, errors: &[FieldError]) -> Result<(), CliError> {
    let m = l.object.metadata();
    let who = if m.namespace().is_empty() {
        format!("{} {}", l.object.kind(), m.name())
    } else {
        format!("{} {}/{}", l.object.kind(), m.namespace(), m.name())
    };
    if !validated && errors.is_empty() {
        return print_text(&format!(
            "{who}: not validated (svcnet validates {})",
            join_kinds(validation::VALIDATED_KINDS)
        ));
    }
    if errors.is_empty() {
        return print_text(&format!("{who}: valid"));
    }
    for e in errors {
        print_text(&format!("{who}: {e}"))?;
    }
    Ok(())
}
