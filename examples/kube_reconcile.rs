//! A kube-rs style reconcile step on k8s-openapi objects: the Service, its Pods, the Nodes and
//! the EndpointSlices a reflector store would hold go in as k8s-openapi values (built in memory
//! here: no cluster, no network), svcnet-slicer plans the EndpointSlices, and the writes come
//! back as k8s-openapi values, ready for `Api::<EndpointSlice>::create/replace/delete`.
//!
//! Run with `cargo run -p svcnet-examples --features k8s-openapi --example kube_reconcile`.
use std::collections::BTreeMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::{
    Node, NodeSpec, Pod, PodCondition, PodIP, PodSpec, PodStatus, Service, ServicePort, ServiceSpec,
};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use svcnet_slicer::{NodeZones, Options, SeededNames, reconcile};

/// What one reconcile of a Service asks the API server to do.
#[derive(Debug, Default)]
struct Writes {
    create: Vec<EndpointSlice>,
    update: Vec<EndpointSlice>,
    delete: Vec<EndpointSlice>,
}

/// Why a reconcile failed: the controller would requeue the Service.
#[derive(Debug)]
enum ReconcileError {
    Slice(svcnet_slicer::SliceError),
    Convert(svcnet_model::k8s::ConversionError),
}

impl std::fmt::Display for ReconcileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReconcileError::Slice(e) => write!(f, "planning the slices: {e}"),
            ReconcileError::Convert(e) => write!(f, "converting a planned slice: {e}"),
        }
    }
}

impl std::error::Error for ReconcileError {}

impl From<svcnet_slicer::SliceError> for ReconcileError {
    fn from(e: svcnet_slicer::SliceError) -> Self {
        ReconcileError::Slice(e)
    }
}

impl From<svcnet_model::k8s::ConversionError> for ReconcileError {
    fn from(e: svcnet_model::k8s::ConversionError) -> Self {
        ReconcileError::Convert(e)
    }
}

/// The reconcile step: the Service and what the stores hold, in k8s-openapi types; the
/// EndpointSlice writes, in k8s-openapi types.
fn reconcile_service(
    service: &Arc<Service>,
    pods: &[Arc<Pod>],
    nodes: &[Arc<Node>],
    slices: &[Arc<EndpointSlice>],
    names: &mut SeededNames,
) -> Result<Writes, ReconcileError> {
    let service = svcnet_model::Service::from(Service::clone(service));
    let pods: Vec<svcnet_model::Pod> = pods.iter().map(|p| Pod::clone(p).into()).collect();
    let nodes: Vec<svcnet_model::Node> = nodes.iter().map(|n| Node::clone(n).into()).collect();
    let existing = slices
        .iter()
        .map(|s| svcnet_model::EndpointSlice::from(EndpointSlice::clone(s)));
    let plan = reconcile(
        &service,
        &pods,
        &NodeZones::from_nodes(&nodes),
        existing,
        &Options::default(),
        names,
    )?;
    let back = |v: Vec<Arc<svcnet_model::EndpointSlice>>| {
        v.into_iter()
            .map(|s| EndpointSlice::try_from(Arc::unwrap_or_clone(s)))
            .collect::<Result<Vec<_>, _>>()
    };
    Ok(Writes {
        create: back(plan.create)?,
        update: back(plan.update)?,
        delete: back(plan.delete)?,
    })
}

fn meta(name: &str, labels: &[(&str, &str)]) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.into()),
        namespace: Some("shop".into()),
        uid: Some(format!("uid-{name}")),
        labels: Some(
            labels
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        ..Default::default()
    }
}

fn pod(i: usize, ready: bool) -> Arc<Pod> {
    Arc::new(Pod {
        metadata: meta(&format!("web-{i}"), &[("app", "web")]),
        spec: Some(PodSpec {
            node_name: Some(format!("node-{}", i % 2)),
            ..Default::default()
        }),
        status: Some(PodStatus {
            phase: Some("Running".into()),
            pod_ip: Some(format!("10.244.0.{}", i + 10)),
            pod_ips: Some(vec![PodIP {
                ip: format!("10.244.0.{}", i + 10),
            }]),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: if ready { "True" } else { "False" }.into(),
                ..Default::default()
            }]),
            ..Default::default()
        }),
    })
}

fn node(i: usize, zone: &str) -> Arc<Node> {
    Arc::new(Node {
        metadata: ObjectMeta {
            name: Some(format!("node-{i}")),
            labels: Some(BTreeMap::from([(
                "topology.kubernetes.io/zone".to_string(),
                zone.to_string(),
            )])),
            ..Default::default()
        },
        spec: Some(NodeSpec::default()),
        status: None,
    })
}

fn main() -> Result<(), ReconcileError> {
    let service = Arc::new(Service {
        metadata: meta("web", &[]),
        spec: Some(ServiceSpec {
            selector: Some(BTreeMap::from([("app".to_string(), "web".to_string())])),
            cluster_ip: Some("10.96.0.20".into()),
            cluster_ips: Some(vec!["10.96.0.20".into()]),
            ip_families: Some(vec!["IPv4".into()]),
            ports: Some(vec![ServicePort {
                name: Some("http".into()),
                port: 80,
                protocol: Some("TCP".into()),
                target_port: Some(IntOrString::Int(8080)),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        status: None,
    });
    let nodes = [node(0, "zone-a"), node(1, "zone-b")];
    let mut pods: Vec<Arc<Pod>> = (0..3).map(|i| pod(i, true)).collect();
    let mut names = SeededNames::new(1);

    // First reconcile: nothing exists yet, one slice is created.
    let first = reconcile_service(&service, &pods, &nodes, &[], &mut names)?;
    for s in &first.create {
        let n = s.endpoints.as_ref().map_or(0, Vec::len);
        println!(
            "create EndpointSlice {} ({} endpoints)",
            s.metadata.name.as_deref().unwrap_or("?"),
            n
        );
    }
    assert_eq!(first.create.len(), 1);

    // The API server stored it; web-1 stops being ready: the next reconcile rewrites that slice.
    let stored: Vec<Arc<EndpointSlice>> = first.create.into_iter().map(Arc::new).collect();
    pods[1] = pod(1, false);
    let second = reconcile_service(&service, &pods, &nodes, &stored, &mut names)?;
    for s in &second.update {
        let ready = s
            .endpoints
            .iter()
            .flatten()
            .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
            .count();
        println!(
            "update EndpointSlice {} ({ready} ready)",
            s.metadata.name.as_deref().unwrap_or("?")
        );
    }
    assert_eq!(
        (second.create.len(), second.update.len(), second.delete.len()),
        (0, 1, 0)
    );

    // Nothing changed since: nothing to write.
    let stored: Vec<Arc<EndpointSlice>> = second.update.into_iter().map(Arc::new).collect();
    let third = reconcile_service(&service, &pods, &nodes, &stored, &mut names)?;
    assert!(third.create.is_empty() && third.update.is_empty() && third.delete.is_empty());
    println!("in sync: no writes");
    Ok(())
}
