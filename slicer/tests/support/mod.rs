//! Builders shared by the slicer's integration tests.
#![allow(dead_code)]

use std::collections::BTreeMap;

use svcnet_model::{
    Container, ContainerPort, EndpointSlice, IntOrString, Pod, PodCondition, PodIp, PodSpec, PodStatus,
    Service, ServicePort, ServiceSpec,
};
use svcnet_slicer::{Plan, ServiceSlices};

pub fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Service `ns/web` selecting `app=web`, one port 80 → `target`.
pub fn service(families: &[&str], target: IntOrString) -> Service {
    let mut s = Service::default();
    s.metadata.name = Some("web".into());
    s.metadata.namespace = Some("ns".into());
    s.metadata.uid = Some("uid-web".into());
    s.spec = Some(ServiceSpec {
        selector: Some(labels(&[("app", "web")])),
        ports: Some(vec![ServicePort {
            name: Some("http".into()),
            protocol: Some("TCP".into()),
            port: 80,
            target_port: Some(target),
            ..Default::default()
        }]),
        ip_families: Some(families.iter().map(|f| f.to_string()).collect()),
        cluster_ip: Some("10.96.0.10".into()),
        ..Default::default()
    });
    s
}

/// A Pod `ns/<name>` labelled `app=web`.
pub fn pod(name: &str, ips: &[String], node: &str, ready: bool, http_port: Option<i32>) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = Some(name.into());
    p.metadata.namespace = Some("ns".into());
    p.metadata.uid = Some(format!("uid-{name}"));
    p.metadata.labels = Some(labels(&[("app", "web")]));
    p.spec = Some(PodSpec {
        node_name: Some(node.into()),
        containers: Some(vec![Container {
            name: "c".into(),
            ports: http_port.map(|n| {
                vec![ContainerPort {
                    name: Some("http".into()),
                    container_port: n,
                    ..Default::default()
                }]
            }),
            ..Default::default()
        }]),
        ..Default::default()
    });
    p.status = Some(PodStatus {
        phase: Some("Running".into()),
        pod_ip: ips.first().cloned(),
        pod_ips: Some(ips.iter().map(|ip| PodIp { ip: ip.clone() }).collect()),
        conditions: Some(vec![PodCondition {
            type_: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            ..Default::default()
        }]),
        ..Default::default()
    });
    p
}

/// The slices after applying `plan` to `before` (matching updates and deletes by name).
pub fn apply(before: &[EndpointSlice], plan: &Plan) -> Vec<EndpointSlice> {
    let mut out: Vec<EndpointSlice> = before
        .iter()
        .filter(|s| !plan.delete.iter().any(|d| d.metadata.name == s.metadata.name))
        .map(|s| {
            plan.update
                .iter()
                .find(|u| u.metadata.name == s.metadata.name)
                .map_or_else(|| s.clone(), |u| EndpointSlice::clone(u))
        })
        .collect();
    out.extend(plan.create.iter().map(|s| EndpointSlice::clone(s)));
    out
}

/// Plain copies of a plan's shared slices.
pub fn owned(slices: &[std::sync::Arc<EndpointSlice>]) -> Vec<EndpointSlice> {
    slices.iter().map(|s| EndpointSlice::clone(s)).collect()
}

pub fn current(state: &ServiceSlices) -> Vec<EndpointSlice> {
    state.slices().cloned().collect()
}
