//! Topology-aware routing end to end: hint a Service's endpoints to zones in proportion to
//! each zone's CPU, then see which endpoints the proxy on one node would use.
//!
//! `cargo run -p svcnet-examples --example topology_hints`

use svcnet_model::{EndpointSlice, Node, Service};
use svcnet_topology::{
    Decision, HintsOptions, NodeTopology, NodeView, SelectOptions, SliceSet, ZoneCapacity, reconcile_hints,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Three zones; zone-c has half the CPU of the others.
    let nodes: Vec<Node> = [
        ("node-a", "zone-a", "8"),
        ("node-b", "zone-b", "8"),
        ("node-c", "zone-c", "4"),
    ]
    .iter()
    .map(|(name, zone, cpu)| {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": name, "labels": {"topology.kubernetes.io/zone": zone}},
            "status": {"allocatable": {"cpu": cpu}, "conditions": [{"type": "Ready", "status": "True"}]}
        }))
    })
    .collect::<Result<_, _>>()?;
    let service: Service = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "namespace": "shop",
                     "annotations": {"service.kubernetes.io/topology-mode": "Auto"}},
        "spec": {"selector": {"app": "web"}, "clusterIP": "10.96.0.10", "ports": [{"name": "http", "port": 80}]}
    }))?;
    // Ten endpoints, most of them in zone-a.
    let zones = [
        "zone-a", "zone-a", "zone-a", "zone-a", "zone-a", "zone-b", "zone-b", "zone-b", "zone-c", "zone-c",
    ];
    let endpoints: Vec<serde_json::Value> = zones
        .iter()
        .enumerate()
        .map(|(i, z)| {
            serde_json::json!({"addresses": [format!("10.0.0.{}", i + 1)], "conditions": {"ready": true},
                               "zone": z, "nodeName": format!("node-{}", &z[5..])})
        })
        .collect();
    let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web-abcde", "namespace": "shop", "labels": {"kubernetes.io/service-name": "web"}},
        "addressType": "IPv4",
        "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
        "endpoints": endpoints
    }))?;

    // Controller side.
    let capacity = ZoneCapacity::from_nodes(&nodes)?;
    let out = reconcile_hints(
        &service,
        "IPv4",
        SliceSet::existing(vec![slice]),
        &capacity,
        false,
        &HintsOptions::default(),
    );
    println!("mechanism: {}", out.choice);
    match &out.decision {
        Decision::Hinted(report) => {
            for (zone, z) in &report.zones {
                println!(
                    "  {zone}: {:.0}% of CPU, {} endpoints in the zone, {} hinted (minimum {}, maximum {})",
                    z.allocation.ratio * 100.0,
                    z.local_endpoints,
                    z.hinted,
                    z.allocation.minimum,
                    z.allocation.maximum
                );
            }
            for m in &report.moved {
                println!("  {} moves from {} to {}", m.address, m.from, m.to);
            }
        }
        Decision::Removed { reason } => println!("  hints removed: {reason} ({})", reason.detail()),
        other => println!("  {other:?}"),
    }
    for e in &out.events {
        println!("  event {:?} {}: {}", e.type_, e.reason, e.message);
    }

    // Proxy side: the node in zone-c.
    let hinted: Vec<EndpointSlice> = out.slices.iter().cloned().collect();
    let services = [service];
    let view = NodeView::build(
        &services,
        &hinted,
        NodeTopology::new("node-c", "zone-c"),
        SelectOptions::default(),
    );
    for (port, sel) in view.selections() {
        let cluster: Vec<String> = sel
            .cluster
            .unwrap_or_default()
            .iter()
            .map(|e| e.to_string())
            .collect();
        println!(
            "{} on node-c ({:?}): {}",
            port.name,
            sel.topology,
            cluster.join(" ")
        );
    }
    Ok(())
}
