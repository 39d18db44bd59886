//! Defaults and validates a Service, printing each error as Kubernetes would.
use svcnet_model::{Service, ServicePort, ServiceSpec, defaults, validation};

fn main() {
    let mut svc = Service::default();
    svc.metadata.name = Some("web".into());
    svc.metadata.namespace = Some("shop".into());
    svc.spec = Some(ServiceSpec {
        selector: Some([("app".to_string(), "web".to_string())].into()),
        ports: Some(vec![ServicePort {
            port: 80,
            ..Default::default()
        }]),
        ..Default::default()
    });
    defaults::default_service(&mut svc);
    let errors = validation::validate_service_create(&svc);
    if errors.is_empty() {
        println!("shop/web is valid");
    }
    for e in errors {
        println!("{e}");
    }
}
