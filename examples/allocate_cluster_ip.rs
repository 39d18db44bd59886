//! Allocate ClusterIPs and node ports for a dual-stack Service the way kube-apiserver does,
//! store the RangeAllocation snapshots, and run the repair loop once.
//!
//! `cargo run -p svcnet-examples --example allocate_cluster_ip`

use svcnet_allocators::{
    ClusterIpRanges, ClusterIpRepair, IpFamily, NodePortAllocator, PortRange, SplitMix64,
    allocate_cluster_ips, allocate_node_ports,
};
use svcnet_model::Service;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // --service-cluster-ip-range=10.96.0.0/16,fd00:10:96::/112 --service-node-port-range=30000-32767
    let mut ips = ClusterIpRanges::parse(&["10.96.0.0/16", "fd00:10:96::/112"])?;
    let mut ports = NodePortAllocator::new(PortRange::DEFAULT_NODE_PORTS);
    let mut rng = SplitMix64::new(2024);

    let web: Service = serde_json::from_value(serde_json::json!({
        "apiVersion": "v1", "kind": "Service",
        "metadata": {"namespace": "shop", "name": "web"},
        "spec": {
            "type": "LoadBalancer",
            "externalTrafficPolicy": "Local",
            "ipFamilyPolicy": "PreferDualStack",
            "selector": {"app": "web"},
            "ports": [
                {"name": "http", "port": 80, "protocol": "TCP"},
                {"name": "dns", "port": 53, "protocol": "UDP"},
                {"name": "dns-tcp", "port": 53, "protocol": "TCP"}
            ]
        }
    }))?;

    // Both steps are all or nothing: on error the allocators are exactly as before.
    let web = allocate_cluster_ips(&mut ips, &web, &mut rng)?;
    let web = match allocate_node_ports(&mut ports, &web, &mut rng) {
        Ok(s) => s,
        Err(e) => {
            svcnet_allocators::release_cluster_ips(&mut ips, &web);
            return Err(e.into());
        }
    };
    let spec = web.spec();
    println!(
        "clusterIPs:  {:?}",
        spec.cluster_ips.as_deref().unwrap_or_default()
    );
    println!(
        "ipFamilies:  {:?}",
        spec.ip_families.as_deref().unwrap_or_default()
    );
    for p in spec.ports() {
        println!(
            "nodePort:    {:<8} {}/{} -> {:?}",
            p.name(),
            p.port,
            p.protocol(),
            p.node_port
        );
    }
    println!("healthCheckNodePort: {:?}", spec.health_check_node_port);

    // What the API server keeps in etcd (RangeAllocation, data in base64).
    for r in ips.ranges() {
        let snap = r.snapshot();
        println!(
            "snapshot {}: range={} data={} bytes ({} base64 chars)",
            r.family(),
            snap.range,
            snap.data.len(),
            snap.data_base64().len()
        );
    }
    let snap = ports.snapshot();
    println!(
        "snapshot nodeports: range={} data={} bytes",
        snap.range,
        snap.data.len()
    );

    // Someone allocated an IP and crashed before creating the Service: repair finds the leak,
    // keeps it for two runs, and frees it on the third.
    let leaked = ips.allocate_next(IpFamily::V4, &mut rng)?;
    let mut repair = ClusterIpRepair::new();
    for run in 1..=3 {
        let report = repair.run_once(&ips, std::slice::from_ref(&web))?;
        ips = report.rebuilt;
        let what: Vec<String> = report
            .events
            .iter()
            .map(|e| format!("{} {}", e.reason, e.value))
            .collect();
        println!(
            "repair run {run}: {leaked} still held: {}; {what:?}",
            ips.has(leaked)
        );
    }
    Ok(())
}
