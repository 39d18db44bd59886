//! The DNS records of a small cluster, what changes when one EndpointSlice changes, a few
//! queries, and the environment variables a Pod sees.
//!
//! `cargo run -p svcnet-examples --example dns_records`

use serde_json::json;
use svcnet_discovery::{Answer, Change, DnsOptions, DnsZone, RecordType, service_env};
use svcnet_model::{EndpointSlice, Service};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let web: Service = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {"clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10", "fd00:96::10"],
                 "ports": [{"name": "http", "port": 80, "protocol": "TCP", "targetPort": 8080}]}
    }))?;
    let db: Service = serde_json::from_value(json!({
        "metadata": {"name": "db", "namespace": "shop"},
        "spec": {"clusterIP": "None", "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]}
    }))?;
    let db_slice = |ready: bool| -> Result<EndpointSlice, serde_json::Error> {
        serde_json::from_value(json!({
            "metadata": {"name": "db-x1", "namespace": "shop",
                         "labels": {"kubernetes.io/service-name": "db"}},
            "addressType": "IPv4",
            "endpoints": [
                {"addresses": ["10.1.0.7"], "hostname": "db-0", "conditions": {"ready": true}},
                {"addresses": ["10.1.0.8"], "hostname": "db-1", "conditions": {"ready": ready}}
            ],
            "ports": [{"name": "pg", "port": 5432, "protocol": "TCP"}]
        }))
    };

    let services = [web, db];
    let mut zone = DnsZone::from_objects(
        DnsOptions::new("cluster.local"),
        &services,
        &[db_slice(false)?],
        &[],
    )?;
    println!("; the zone");
    print!("{}", zone.records());

    println!("\n; db-1 becomes ready");
    let delta = zone.apply(Change::EndpointSlice(&db_slice(true)?));
    for r in &delta.removed {
        println!("- {r}");
    }
    for r in &delta.added {
        println!("+ {r}");
    }

    println!("\n; queries");
    for (name, ty) in [
        ("_pg._tcp.db.shop.svc.cluster.local", RecordType::Srv),
        ("web.shop.svc.cluster.local", RecordType::Aaaa),
        ("shop.svc.cluster.local", RecordType::A),
        ("nope.shop.svc.cluster.local", RecordType::A),
    ] {
        match zone.lookup(name, ty) {
            Answer::Records(records) => records.iter().for_each(|r| println!("{r}")),
            Answer::NoData => println!("{name} {ty}: the name exists, no {ty} record"),
            Answer::NxDomain => println!("{name} {ty}: NXDOMAIN"),
            other => println!("{name} {ty}: {other:?}"),
        }
    }

    println!("\n; the environment of a Pod in shop");
    for v in service_env(&services, "shop", true) {
        println!("{}={}", v.name, v.value.unwrap_or_default());
    }
    Ok(())
}
