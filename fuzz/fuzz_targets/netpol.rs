//! NetworkPolicy validation (create and update) and reachability: nothing panics, defaulting is
//! idempotent, and for valid policies `check` and `cluster_reachability` agree with a naive
//! evaluator that reads the rules directly for every pod pair, port and outside address.
#![no_main]

use std::net::IpAddr;

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use svcnet_fuzz::{pick, text};
use svcnet_model::reachability::{self, Cluster, Namespace, Peer as Endpoint};
use svcnet_model::{IpBlock, NetworkPolicy, Pod, defaults, validation};
// The naive evaluator, shared with the model's property tests.
use svcnet_test_support::netpol::{Peer, QUERIES, block_has, side_ok};

// --- Generators --------------------------------------------------------------------------------

fn labels(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut m = serde_json::Map::new();
    if u.arbitrary()? {
        m.insert("app".into(), json!(pick(u, &["web", "db"])?));
    }
    if u.arbitrary()? {
        m.insert("tier".into(), json!(pick(u, &["fe", "be"])?));
    }
    if u.ratio(1, 16)? {
        m.insert(
            text(u, &["bad key!", "a/b/c", ""])?,
            json!(text(u, &["-x", "ok"])?),
        );
    }
    Ok(Value::Object(m))
}

fn selector(u: &mut Unstructured<'_>, ns: bool) -> Result<Value> {
    Ok(match u.int_in_range(0..=3)? {
        0 => json!({}),
        1 if ns => {
            json!({"matchLabels": {pick(u, &["env", "kubernetes.io/metadata.name"])?: pick(u, &["x", "y", "a", "b"])?}})
        }
        1 => json!({"matchLabels": {pick(u, &["app", "tier"])?: pick(u, &["web", "db", "fe", "be"])?}}),
        _ => {
            let mut exprs = Vec::new();
            for _ in 0..u.int_in_range(0..=2)? {
                let op = text(u, &["In", "NotIn", "Exists", "DoesNotExist"])?;
                let mut e = json!({"key": pick(u, &["app", "tier", "env"])?, "operator": op});
                if matches!(op.as_str(), "In" | "NotIn") || u.ratio(1, 8)? {
                    e["values"] = json!([pick(u, &["web", "db", "fe", "x"])?]);
                }
                exprs.push(e);
            }
            json!({"matchLabels": labels(u)?, "matchExpressions": exprs})
        }
    })
}

fn cidr(u: &mut Unstructured<'_>) -> Result<String> {
    text(
        u,
        &[
            "10.0.0.0/29",
            "10.0.0.0/30",
            "10.0.0.4/30",
            "0.0.0.0/0",
            "fd00::/125",
            "10.0.0.1/32",
            "10.0.0.2/31",
            "::/0",
            "10.0.0.1/24",
            "10.0.0.0/33",
            "fd00::/129",
        ],
    )
}

fn peer(u: &mut Unstructured<'_>) -> Result<Value> {
    Ok(match u.int_in_range(0..=4)? {
        0 => json!({"podSelector": selector(u, false)?}),
        1 => json!({"namespaceSelector": selector(u, true)?}),
        2 => json!({"podSelector": selector(u, false)?, "namespaceSelector": selector(u, true)?}),
        3 => {
            let mut b = json!({"cidr": cidr(u)?});
            if u.arbitrary()? {
                b["except"] = json!([cidr(u)?]);
            }
            json!({"ipBlock": b})
        }
        _ => json!({}),
    })
}

fn port(u: &mut Unstructured<'_>) -> Result<Value> {
    let mut p = json!({});
    if u.arbitrary()? {
        p["protocol"] = json!(text(u, &["TCP", "UDP", "SCTP", "tcp"])?);
    }
    match u.int_in_range(0..=3)? {
        0 => {}
        1 => p["port"] = json!(text(u, &["http", "dns", "", "bad_name"])?),
        2 => p["port"] = json!(i64::from(u.arbitrary::<i32>()?)),
        _ => p["port"] = json!(pick(u, &[53, 80, 81])?),
    }
    if u.ratio(1, 3)? {
        p["endPort"] = json!(if u.ratio(1, 4)? {
            i64::from(u.arbitrary::<i32>()?)
        } else {
            pick(u, &[80, 82, 65535])?
        });
    }
    Ok(p)
}

fn list(u: &mut Unstructured<'_>, f: fn(&mut Unstructured<'_>) -> Result<Value>) -> Result<Option<Value>> {
    if u.ratio(1, 4)? {
        return Ok(None);
    }
    let n = u.int_in_range(0..=2)?;
    Ok(Some(Value::Array((0..n).map(|_| f(u)).collect::<Result<_>>()?)))
}

fn rule(u: &mut Unstructured<'_>, peers: &str) -> Result<Value> {
    let mut r = json!({});
    if let Some(p) = list(u, port)? {
        r["ports"] = p;
    }
    if let Some(p) = list(u, peer)? {
        r[peers] = p;
    }
    Ok(r)
}

fn policy(u: &mut Unstructured<'_>, i: usize) -> Result<NetworkPolicy> {
    let mut spec = json!({"podSelector": selector(u, false)?});
    if !u.ratio(1, 4)? {
        spec["ingress"] = Value::Array(
            (0..u.int_in_range(0..=2)?)
                .map(|_| rule(u, "from"))
                .collect::<Result<_>>()?,
        );
    }
    if u.arbitrary()? {
        spec["egress"] = Value::Array(
            (0..u.int_in_range(0..=2)?)
                .map(|_| rule(u, "to"))
                .collect::<Result<_>>()?,
        );
    }
    match u.int_in_range(0..=5)? {
        0 => spec["policyTypes"] = json!([]),
        1 => spec["policyTypes"] = json!(["Ingress"]),
        2 => spec["policyTypes"] = json!(["Egress"]),
        3 => spec["policyTypes"] = json!(["Ingress", "Egress"]),
        4 if u.ratio(1, 4)? => spec["policyTypes"] = json!([text(u, &["ingress", "Both"])?]),
        _ => {}
    }
    let name = if u.ratio(1, 16)? {
        text(u, &["Bad_Name", ""])?
    } else {
        format!("np{i}")
    };
    Ok(serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": pick(u, &["a", "b"])?},
        "spec": spec,
    }))
    .expect("policy json"))
}

fn pod(u: &mut Unstructured<'_>, i: usize) -> Result<Pod> {
    let mut ports = Vec::new();
    if u.arbitrary()? {
        ports.push(json!({"name": "http", "containerPort": pick(u, &[80, 81])?}));
    }
    if u.arbitrary()? {
        ports.push(json!({"name": "dns", "containerPort": 53, "protocol": "UDP"}));
    }
    let ip = if u.arbitrary()? {
        format!("fd00::{}", i + 1)
    } else {
        format!("10.0.0.{}", i + 1)
    };
    Ok(serde_json::from_value(json!({
        "metadata": {"name": format!("p{i}"), "namespace": pick(u, &["a", "b"])?, "labels": labels(u)?},
        "spec": {"containers": [{"name": "c", "ports": ports}]},
        "status": {"podIPs": [{"ip": ip}]},
    }))
    .expect("pod json"))
}

const OUTSIDE: [&str; 4] = ["10.0.0.3", "192.0.2.1", "fd00::2", "10.0.0.7"];

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let n = u.int_in_range(0..=4)?;
    let mut policies = Vec::new();
    let mut valid = true;
    for i in 0..n {
        let raw = policy(u, i)?;
        for e in validation::validate_network_policy_create(&raw) {
            let _ = e.to_string();
        }
        let mut np = raw.clone();
        defaults::default_network_policy(&mut np);
        let mut again = np.clone();
        defaults::default_network_policy(&mut again);
        assert_eq!(again, np, "NetworkPolicy defaulting is not idempotent");
        let errors = validation::validate_network_policy_create(&np);
        valid &= errors.is_empty();
        let _ = validation::validate_network_policy_update(&np, &raw);
        if let Some(prev) = policies.last() {
            let _ = validation::validate_network_policy_update(&np, prev);
        }
        policies.push(np);
    }
    let pods: Vec<Pod> = (0..u.int_in_range(1..=5)?)
        .map(|i| pod(u, i))
        .collect::<Result<_>>()?;
    let mut namespaces = vec![Namespace {
        name: "a".into(),
        labels: [("env".to_string(), pick(u, &["x", "y"])?.to_string())].into(),
    }];
    if u.arbitrary()? {
        namespaces.push(Namespace {
            name: "b".into(),
            labels: [("env".to_string(), pick(u, &["x", "y"])?.to_string())].into(),
        });
    }
    let cluster = Cluster {
        policies: &policies,
        namespaces: &namespaces,
        pods: &pods,
    };
    let all = reachability::cluster_reachability(&cluster);
    assert_eq!(all.len(), pods.len());
    for (si, src) in pods.iter().enumerate() {
        assert_eq!(reachability::pod_reachability(&cluster, src), all[si]);
        for (di, dst) in pods.iter().enumerate() {
            for (proto, port) in QUERIES {
                let v = reachability::check(&cluster, &Endpoint::Pod(src), &Endpoint::Pod(dst), proto, port);
                assert_eq!(v.allowed, v.egress.allowed && v.ingress.allowed);
                if !valid {
                    continue;
                }
                let eg = side_ok(&policies, &namespaces, src, &Peer::Pod(dst), false, proto, port);
                let ing = side_ok(&policies, &namespaces, dst, &Peer::Pod(src), true, proto, port);
                assert_eq!(v.egress.allowed, eg, "egress {si} -> {di} {proto} {port}");
                assert_eq!(v.ingress.allowed, ing, "ingress {si} -> {di} {proto} {port}");
                let data_in = all[di]
                    .ingress
                    .pod(src.metadata.namespace(), src.metadata.name())
                    .is_some_and(|ps| ps.contains(proto, port));
                let data_out = all[si]
                    .egress
                    .pod(dst.metadata.namespace(), dst.metadata.name())
                    .is_some_and(|ps| ps.contains(proto, port));
                assert_eq!(data_in, ing, "ingress data {si} -> {di} {proto} {port}");
                assert_eq!(data_out, eg, "egress data {si} -> {di} {proto} {port}");
            }
        }
        for t in OUTSIDE {
            let ip: IpAddr = t.parse().expect("address");
            for (proto, port) in QUERIES {
                let vin =
                    reachability::check(&cluster, &Endpoint::Address(ip), &Endpoint::Pod(src), proto, port);
                let vout =
                    reachability::check(&cluster, &Endpoint::Pod(src), &Endpoint::Address(ip), proto, port);
                if !valid {
                    continue;
                }
                let ing = side_ok(&policies, &namespaces, src, &Peer::Ip(ip), true, proto, port);
                assert_eq!(vin.allowed, ing, "ingress from {t} to {si} {proto} {port}");
                let eg = side_ok(&policies, &namespaces, src, &Peer::Ip(ip), false, proto, port);
                assert_eq!(vout.allowed, eg, "egress from {si} to {t} {proto} {port}");
                let by_blocks = all[si].ingress.blocks.iter().any(|b| {
                    let blk = IpBlock {
                        cidr: b.cidr.clone(),
                        except: Some(b.except.clone()),
                    };
                    block_has(&blk, ip) && b.ports.contains(proto, port)
                });
                assert_eq!(by_blocks, ing, "ingress blocks from {t} to {si} {proto} {port}");
            }
        }
    }
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
