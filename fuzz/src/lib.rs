//! Builders shared by the fuzz targets: Kubernetes objects made from a fuzzer's bytes through
//! `arbitrary::Unstructured`, drawing names, addresses and ports from small pools so that
//! objects meet (same names, same addresses) often enough to exercise the interesting paths.
#![allow(missing_docs)]

use arbitrary::{Result, Unstructured};
use serde_json::{Value, json};
use svcnet_model::{EndpointSlice, Pod, Service};

/// Picks one of `items`.
pub fn pick<T: Copy>(u: &mut Unstructured<'_>, items: &[T]) -> Result<T> {
    Ok(*u.choose(items)?)
}

/// A string from a pool of typical and odd values, or (rarely) arbitrary text.
pub fn text(u: &mut Unstructured<'_>, pool: &[&str]) -> Result<String> {
    if u.ratio(1, 16)? {
        let s: String = u.arbitrary()?;
        Ok(s.chars().take(80).collect())
    } else {
        Ok(pick(u, pool)?.to_owned())
    }
}

/// A port number: usually a small set, sometimes anything an i32 holds.
pub fn port_number(u: &mut Unstructured<'_>) -> Result<i64> {
    Ok(match u.int_in_range(0..=7)? {
        0 => i64::from(u.arbitrary::<i32>()?),
        1 => pick(
            u,
            &[0, 1, 65535, 65536, -1, i64::from(i32::MAX), i64::from(i32::MIN)],
        )?,
        _ => 8080 + i64::from(u.int_in_range(0..=3u8)?),
    })
}

/// A CPU quantity as a Node's `status.allocatable.cpu` may hold it.
pub fn cpu_quantity(u: &mut Unstructured<'_>) -> Result<String> {
    Ok(match u.int_in_range(0..=5)? {
        0 => pick(u, &["1", "2", "4", "500m", "1500m", "0", "0.5", "2k", "100n"])?.to_owned(),
        1 => {
            let n: u64 = u.arbitrary()?;
            let suffix = pick(
                u,
                &[
                    "", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Ei", "n", "u", "e3", "e18", "e-3",
                    "E9",
                ],
            )?;
            format!("{n}{suffix}")
        }
        2 => format!(
            "{}.{}{}",
            u.arbitrary::<u32>()?,
            u.arbitrary::<u16>()?,
            pick(u, &["", "m", "e2", "e-2147483648", "e2147483647"])?
        ),
        3 => format!("-{}", u.int_in_range(0..=9000u32)?),
        _ => format!("{}", u.int_in_range(1..=64u32)?),
    })
}

/// An IP address for pool index `i`: IPv4 or IPv6, sometimes in an odd spelling.
pub fn address(u: &mut Unstructured<'_>, i: u16, v6: bool) -> Result<String> {
    let odd = u.ratio(1, 24)?;
    Ok(match (v6, odd) {
        (false, false) => format!("10.0.{}.{}", i / 256, i % 256),
        (true, false) => format!("fd00::{i:x}"),
        (_, true) => pick(
            u,
            &[
                "010.0.0.1",
                "::ffff:10.0.0.1",
                "10.0.0",
                "not-an-ip",
                "",
                "FD00::1",
                "fe80::1%eth0",
                "0.0.0.0",
                "::",
            ],
        )?
        .to_owned(),
    })
}

/// A Service `ns/web` (selector `app=web`) with 1–3 ports and the fields the slicer, topology
/// and proxy read.
pub fn service(u: &mut Unstructured<'_>, with_selector: bool) -> Result<Service> {
    let fams: &[&str] = pick(
        u,
        &[&["IPv4"][..], &["IPv6"], &["IPv4", "IPv6"], &["IPv6", "IPv4"]],
    )?;
    let nports = u.int_in_range(1..=3)?;
    let mut ports = Vec::new();
    for _ in 0..nports {
        let mut p = json!({
            "port": if u.ratio(1, 8)? { port_number(u)? } else { 80 + i64::from(u.int_in_range(0..=2u8)?) },
            "protocol": pick(u, &["TCP", "TCP", "UDP", "SCTP"])?,
        });
        let name = pick(u, &["", "http", "dns", "grpc"])?;
        if !name.is_empty() {
            p["name"] = json!(name);
        }
        match u.int_in_range(0..=3)? {
            0 => {}
            1 => p["targetPort"] = json!(pick(u, &["http", "dns", "missing", ""])?),
            _ => p["targetPort"] = json!(port_number(u)?),
        }
        ports.push(p);
    }
    let mut spec = json!({
        "ports": ports,
        "ipFamilies": fams,
        "clusterIP": if u.ratio(1, 8)? { "None" } else { "10.96.0.10" },
        "publishNotReadyAddresses": u.arbitrary::<bool>()?,
        "type": pick(u, &["ClusterIP", "NodePort", "LoadBalancer"])?,
        "internalTrafficPolicy": pick(u, &["Cluster", "Local"])?,
        "externalTrafficPolicy": pick(u, &["Cluster", "Local"])?,
    });
    if with_selector {
        spec["selector"] = json!({"app": "web"});
    }
    let td = pick(
        u,
        &["", "", "PreferClose", "PreferSameZone", "PreferSameNode", "Bogus"],
    )?;
    if !td.is_empty() {
        spec["trafficDistribution"] = json!(td);
    }
    let mut meta = json!({"name": "web", "namespace": "ns", "uid": "uid-web"});
    match u.int_in_range(0..=3)? {
        0 => meta["annotations"] = json!({"service.kubernetes.io/topology-mode": "Auto"}),
        1 => {
            meta["annotations"] =
                json!({"service.kubernetes.io/topology-aware-hints": pick(u, &["auto", "Auto", "disabled"])?})
        }
        _ => {}
    }
    if u.ratio(1, 8)? {
        meta["labels"] = json!({"team": "x"});
    }
    Ok(serde_json::from_value(json!({"metadata": meta, "spec": spec})).expect("service json"))
}

/// A Pod `ns/p<i>` labelled `app=web` (or not), on one of a few nodes.
pub fn pod(u: &mut Unstructured<'_>, i: usize) -> Result<Pod> {
    let addr = u.int_in_range(0..=399u16)?;
    let mut ips = vec![address(u, addr, false)?];
    match u.int_in_range(0..=3)? {
        0 => ips.push(address(u, addr, true)?),
        1 => ips = vec![address(u, addr, true)?],
        _ => {}
    }
    let node = pick(u, &["n1", "n2", "n3", "missing", ""])?;
    let ready = u.arbitrary::<bool>()?;
    let mut containers = vec![];
    let nc = u.int_in_range(0..=2)?;
    for c in 0..nc {
        let mut ports = vec![];
        for _ in 0..u.int_in_range(0..=2)? {
            ports.push(json!({
                "name": pick(u, &["http", "dns", "grpc", "HTTP"])?,
                "containerPort": port_number(u)?,
                "protocol": pick(u, &["TCP", "UDP", "SCTP"])?,
            }));
        }
        containers.push(json!({"name": format!("c{c}"), "ports": ports}));
    }
    let mut meta = json!({"name": format!("p{i}"), "namespace": "ns", "uid": format!("uid-p{i}")});
    if !u.ratio(1, 10)? {
        meta["labels"] = json!({"app": "web"});
    }
    if u.ratio(1, 10)? {
        meta["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    }
    let mut spec = json!({"nodeName": node, "containers": containers});
    if u.ratio(1, 6)? {
        spec["hostname"] = json!(pick(u, &["h0", "h1", "Bad_Host"])?);
        spec["subdomain"] = json!("web");
    }
    let conditions = vec![json!({"type": "Ready", "status": if ready { "True" } else { "False" }})];
    let v = json!({
        "metadata": meta,
        "spec": spec,
        "status": {
            "phase": pick(u, &["Running", "Running", "Running", "Pending", "Succeeded", "Failed"])?,
            "podIP": ips[0],
            "podIPs": ips.iter().map(|ip| json!({"ip": ip})).collect::<Vec<Value>>(),
            "conditions": conditions,
        },
    });
    Ok(serde_json::from_value(v).expect("pod json"))
}

/// Nodes `n1`..`n3` with zones, readiness and CPU.
pub fn nodes(u: &mut Unstructured<'_>) -> Result<Vec<svcnet_model::Node>> {
    let mut out = Vec::new();
    for name in ["n1", "n2", "n3"] {
        if u.ratio(1, 8)? {
            continue;
        }
        let mut labels = serde_json::Map::new();
        let zone = pick(u, &["a", "a", "b", "c", ""])?;
        if !zone.is_empty() {
            labels.insert("topology.kubernetes.io/zone".into(), json!(zone));
        }
        if u.ratio(1, 10)? {
            labels.insert("node-role.kubernetes.io/control-plane".into(), json!(""));
        }
        let ready = !u.ratio(1, 8)?;
        let v = json!({
            "metadata": {"name": name, "labels": labels},
            "status": {
                "allocatable": {"cpu": cpu_quantity(u)?},
                "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}],
            },
        });
        out.push(serde_json::from_value(v).expect("node json"));
    }
    Ok(out)
}

/// An EndpointSlice of a Service in namespace `a` or `b` (for DNS).
pub fn dns_slice(u: &mut Unstructured<'_>) -> Result<EndpointSlice> {
    let ns = pick(u, &["a", "b"])?;
    let svc = pick(u, &["web", "db", "cache"])?;
    let i = u.int_in_range(0..=2u8)?;
    let v6 = u.arbitrary::<bool>()?;
    let mut eps = Vec::new();
    for _ in 0..u.int_in_range(0..=5)? {
        let n = u.int_in_range(1..=30u16)?;
        let mut e = json!({"addresses": [address(u, n, v6)?], "conditions": {}});
        match u.int_in_range(0..=2)? {
            0 => {}
            1 => e["conditions"]["ready"] = json!(true),
            _ => e["conditions"]["ready"] = json!(false),
        }
        if u.ratio(1, 3)? {
            e["hostname"] = json!(text(u, &["h0", "h1", "dup", "Bad.Name", ""])?);
        }
        if u.ratio(1, 4)? {
            e["targetRef"] = json!({"kind": "Pod", "name": text(u, &["p0", "p1", "pod.x"])?});
        }
        eps.push(e);
    }
    let v = json!({
        "metadata": {"name": format!("{svc}-{i}"), "namespace": ns,
                     "labels": {"kubernetes.io/service-name": svc}},
        "addressType": if u.ratio(1, 12)? { "FQDN" } else if v6 { "IPv6" } else { "IPv4" },
        "endpoints": eps,
        "ports": dns_ports(u)?,
    });
    Ok(serde_json::from_value(v).expect("slice json"))
}

fn dns_ports(u: &mut Unstructured<'_>) -> Result<Vec<Value>> {
    let mut ports = Vec::new();
    for _ in 0..u.int_in_range(0..=2)? {
        let mut p = json!({"protocol": pick(u, &["TCP", "UDP", "SCTP"])?});
        if u.ratio(7, 8)? {
            p["port"] = json!(if u.ratio(1, 8)? {
                port_number(u)?
            } else {
                8000 + i64::from(u.int_in_range(1..=4u8)?)
            });
        }
        let n = text(u, &["", "http", "grpc", "HTTP", "a_b"])?;
        if !n.is_empty() {
            p["name"] = json!(n);
        }
        ports.push(p);
    }
    Ok(ports)
}

/// A Service in namespace `a` or `b` of one DNS shape (ClusterIP, dual-stack, headless,
/// ExternalName).
pub fn dns_service(u: &mut Unstructured<'_>) -> Result<Service> {
    let ns = pick(u, &["a", "b"])?;
    let name = pick(u, &["web", "db", "cache", "Bad_Name"])?;
    let n = u.int_in_range(1..=40u8)?;
    let mut spec = match u.int_in_range(0..=5)? {
        0 => json!({"clusterIP": format!("10.96.0.{n}")}),
        1 => {
            json!({"clusterIP": format!("10.96.1.{n}"), "clusterIPs": [format!("10.96.1.{n}"), format!("fd00::{n}")]})
        }
        2 => json!({"clusterIP": "None"}),
        3 => {
            json!({"type": "ExternalName", "externalName": text(u, &["ext.example.com", "10.0.0.1", "", "a..b", "x"])?})
        }
        4 => json!({"clusterIP": "None", "clusterIPs": ["None"]}),
        _ => json!({"clusterIP": text(u, &["garbage", "", "10.96.0.300", "fd00::1"])?}),
    };
    spec["ports"] = Value::Array(dns_ports(u)?);
    Ok(
        serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns}, "spec": spec}))
            .expect("svc json"),
    )
}

/// A Pod in namespace `a` or `b` with an address (for DNS pod records).
pub fn dns_pod(u: &mut Unstructured<'_>) -> Result<Pod> {
    let ns = pick(u, &["a", "b"])?;
    let i = u.int_in_range(0..=5u8)?;
    let n = u.int_in_range(1..=30u16)?;
    let v6 = u.arbitrary::<bool>()?;
    let running = !u.ratio(1, 4)?;
    Ok(serde_json::from_value(json!({
        "metadata": {"name": format!("p{i}"), "namespace": ns},
        "status": {"phase": if running { "Running" } else { "Succeeded" }, "podIP": address(u, n, v6)?},
    }))
    .expect("pod json"))
}
