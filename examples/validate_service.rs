//! Defaults and validates Services as the API server would, printing each error as Kubernetes
//! prints it: a valid web Service, a broken one, and an update that changes a cluster IP.
//!
//! `cargo run -p svcnet-examples --example validate_service`

use svcnet_model::field::ErrorList;
use svcnet_model::{IntOrString, Service, ServicePort, ServiceSpec, defaults, validation};

fn service(name: &str, ports: Vec<ServicePort>) -> Service {
    let mut svc = Service::default();
    svc.metadata.name = Some(name.into());
    svc.metadata.namespace = Some("shop".into());
    svc.metadata.resource_version = Some("1".into());
    svc.spec = Some(ServiceSpec {
        selector: Some([("app".to_string(), name.to_string())].into()),
        ports: Some(ports),
        ..Default::default()
    });
    svc
}

fn report(what: &str, errors: &ErrorList) {
    if errors.is_empty() {
        println!("{what}: valid");
    }
    for e in errors {
        println!("{what}: {e}");
    }
}

fn main() {
    // A minimal Service: defaulting fills type, protocol, targetPort, affinity and policies.
    let mut web = service(
        "web",
        vec![ServicePort {
            name: Some("http".into()),
            port: 80,
            ..Default::default()
        }],
    );
    defaults::default_service(&mut web);
    let spec = web.spec();
    println!(
        "defaulted: type={} protocol={} targetPort={} sessionAffinity={} internalTrafficPolicy={}",
        spec.type_.as_deref().unwrap_or(""),
        spec.ports()[0].protocol(),
        spec.ports()[0].target_port.clone().unwrap_or_default(),
        spec.session_affinity.as_deref().unwrap_or(""),
        spec.internal_traffic_policy.as_deref().unwrap_or(""),
    );
    report("create shop/web", &validation::validate_service_create(&web));

    // Two unnamed ports, a bad port number and a bad named target port.
    let mut broken = service(
        "1-broken",
        vec![
            ServicePort {
                port: 0,
                ..Default::default()
            },
            ServicePort {
                port: 443,
                target_port: Some(IntOrString::String("HTTPS--".into())),
                ..Default::default()
            },
        ],
    );
    defaults::default_service(&mut broken);
    report(
        "create shop/1-broken",
        &validation::validate_service_create(&broken),
    );

    // Once allocated, a cluster IP may not change.
    let mut old = web.clone();
    let spec = old.spec_mut();
    spec.cluster_ip = Some("10.96.0.10".into());
    spec.cluster_ips = Some(vec!["10.96.0.10".into()]);
    let mut new = old.clone();
    let spec = new.spec_mut();
    spec.cluster_ip = Some("10.96.0.11".into());
    spec.cluster_ips = Some(vec!["10.96.0.11".into()]);
    report(
        "update shop/web",
        &validation::validate_service_update(&new, &old),
    );
}
