//! Slices a Service's Pods into EndpointSlices, then follows one Pod change incrementally.
//!
//! Run with `cargo run -p svcnet-examples --example slice_service`.
use svcnet_model::{
    IntOrString, Pod, PodCondition, PodIp, PodSpec, PodStatus, Service, ServicePort, ServiceSpec,
};
use svcnet_slicer::{NodeZones, Options, SeededNames, ServiceSlices};

fn pod(i: usize, ready: bool) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(format!("web-{i}"));
    p.metadata.namespace = Some("shop".into());
    p.metadata.labels = Some([("app".to_string(), "web".to_string())].into());
    p.spec = Some(PodSpec {
        node_name: Some(format!("node-{}", i % 3)),
        ..Default::default()
    });
    p.status = Some(PodStatus {
        pod_ips: Some(vec![PodIp {
            ip: format!("10.244.{}.{}", i / 250, i % 250 + 1),
        }]),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    p
}

fn main() -> Result<(), svcnet_slicer::SliceError> {
    let mut svc = Service::default();
    svc.metadata.name = Some("web".into());
    svc.metadata.namespace = Some("shop".into());
    svc.metadata.uid = Some("5f1c0e1a".into());
    svc.spec = Some(ServiceSpec {
        selector: Some([("app".to_string(), "web".to_string())].into()),
        ports: Some(vec![ServicePort {
            name: Some("http".into()),
            port: 80,
            target_port: Some(IntOrString::Int(8080)),
            ..Default::default()
        }]),
        ip_families: Some(vec!["IPv4".into()]),
        cluster_ip: Some("10.96.12.34".into()),
        ..Default::default()
    });
    let mut nodes = NodeZones::new();
    for (n, z) in [("node-0", "zone-a"), ("node-1", "zone-b"), ("node-2", "zone-c")] {
        nodes.insert(n, Some(z));
    }
    let pods: Vec<Pod> = (0..250).map(|i| pod(i, true)).collect();

    // A full sync from nothing: 250 endpoints in slices of at most 100.
    let mut names = SeededNames::new(42);
    let mut state = ServiceSlices::new(&svc, [], Options::default())?;
    let plan = state.sync(&pods, &nodes, &mut names);
    for s in &plan.create {
        println!("create {} ({} endpoints)", s.metadata.name(), s.endpoints().len());
    }

    // The plan shares its slices with the state; once it is dropped, the state rewrites the
    // slice a change touches in place instead of copying it.
    drop(plan);

    // Pod web-7 stops being ready: only the slice that holds it is rewritten.
    let plan = state.update_pod(&pod(7, false), &nodes, &mut names);
    for s in &plan.update {
        let ready = s.endpoints().iter().filter(|e| e.conditions.is_ready()).count();
        println!(
            "update {} ({ready}/{} ready)",
            s.metadata.name(),
            s.endpoints().len()
        );
    }

    // Pod web-3 goes away: again one slice.
    let plan = state.delete_pod("shop", "web-3", &mut names);
    println!("after deleting web-3: {} write(s)", plan.writes());
    Ok(())
}
