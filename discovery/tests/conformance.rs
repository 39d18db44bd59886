//! The `discovery` conformance cases (`dns`, `env`), run in-process through [`DnsZone`] and
//! [`service_env`], judged by the shared pass criteria (`svcnet_test_support::check`) the CLI's
//! conformance tests apply to `svcnet dns` and `svcnet env`.

use serde_json::{Value, json};
use svcnet_discovery::{DnsOptions, DnsZone, PodMode, service_env};
use svcnet_test_support::case::{Case, DiscoveryExpect, run_area};
use svcnet_test_support::{check, objects};

/// `svcnet dns --cluster-domain Z [--pods MODE]`: every record of the zone.
fn dns(case: &Case<DiscoveryExpect>) -> Result<Value, String> {
    let mut options = DnsOptions::new(case.arg("cluster-domain").ok_or("no --cluster-domain")?);
    options.pods = match case.arg("pods") {
        None | Some("disabled") => PodMode::Disabled,
        Some("verified") => PodMode::Verified,
        Some("insecure") => PodMode::Insecure,
        Some(other) => return Err(format!("--pods {other}")),
    };
    let set = objects::object_set(&case.input)?;
    let mut zone = DnsZone::from_objects(options, &set.services, &set.endpoint_slices, &set.pods)
        .map_err(|e| e.to_string())?;
    for ns in objects::namespaces(&case.input) {
        zone.declare_namespace(&ns);
    }
    Ok(json!(zone.records()))
}

/// `svcnet env --namespace NS [--enable-service-links BOOL]`: the variables injected.
fn env(case: &Case<DiscoveryExpect>) -> Result<Value, String> {
    let namespace = case.arg("namespace").ok_or("no --namespace")?;
    let links = case.arg("enable-service-links").is_none_or(|b| b == "true");
    let set = objects::object_set(&case.input)?;
    let env: Vec<Value> = service_env(&set.services, namespace, links)
        .iter()
        .map(|v| json!({"name": v.name, "value": v.value.as_deref().unwrap_or("")}))
        .collect();
    Ok(json!({ "env": env }))
}

#[test]
fn discovery_cases() {
    let n = run_area("discovery", |case: &Case<DiscoveryExpect>| {
        Some(match case.subcommand.as_str() {
            "dns" => dns(case).and_then(|out| check::dns(&case.expect, &out)),
            "env" => env(case).and_then(|out| check::env(&case.expect, &out)),
            other => Err(format!("unexpected subcommand {other}")),
        })
    });
    assert_eq!(n, 21);
}
