//! The real-kernel suite shared by the backends' kernel tests (`kernel_iptables.rs`,
//! `kernel_nftables.rs`, ...): one small cluster, the rules `svcnet rules --backend B` computes
//! for it loaded into a node built from network namespaces (`netns.rs`), and checks made with
//! real TCP and UDP connections. A backend supplies how to load a full state and how to apply
//! a transaction on top ([`Backend`]); [`run`] does the rest.
//!
//! Include it beside `netns.rs` in a `harness = false` test:
//!
//! ```ignore
//! #[path = "common/netns.rs"]
//! mod netns;
//! #[path = "common/kernel_suite.rs"]
//! mod kernel_suite;
//! fn main() {
//!     kernel_suite::run(&kernel_suite::Backend {
//!         name: "nftables",
//!         tools: &["nft"],
//!         extra_args: &[],
//!         load_state: |node, text| node.nft(text),
//!         apply_transaction: |node, text| node.nft(text),
//!     });
//! }
//! ```
//!
//! `SVCNET_RULES_BIN=PATH` runs another program with svcnet's `rules` command line instead of
//! the built `svcnet` (e.g. kube-oracle's `svcnet-shim`, to check the harness itself against
//! real kube-proxy output).
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::Command;

use crate::netns::{CLIENT_IP, Check, NODE_IP, Node, Probe, all_answered, answered};
use serde_json::{Value, json};

/// What a backend's kernel test supplies.
pub struct Backend {
    /// The `--backend` value.
    pub name: &'static str,
    /// Programs the backend needs besides `ip` and `python3` (missing ones skip the suite).
    pub tools: &'static [&'static str],
    /// Arguments added to every `svcnet rules` call.
    pub extra_args: &'static [&'static str],
    /// Loads a `--print state` text into an empty node.
    pub load_state: fn(&Node, &str) -> Result<(), String>,
    /// Applies a `--print transaction` text on top of what is loaded.
    pub apply_transaction: fn(&Node, &str) -> Result<(), String>,
}

/// The node the rules are computed for.
const NODE: &str = "node-a";
/// Another node, whose endpoints are remote.
const OTHER: &str = "node-b";
/// Every pod's TCP and UDP server ports.
const TCP_PORT: u16 = 8080;
const UDP_PORT: u16 = 5353;
/// Attempts per spread check: with 3 endpoints, the chance that one is never picked in 40
/// random picks is 3 * (2/3)^40, about 3e-7.
const SPREAD: usize = 40;

/// The pods: name, address, node.
const PODS: &[(&str, &str, &str)] = &[
    ("a1", "10.244.1.11", NODE),
    ("a2", "10.244.1.12", NODE),
    ("a3", "10.244.1.13", NODE),
    ("t1", "10.244.1.14", NODE),
    ("b1", "10.244.2.11", OTHER),
    ("b2", "10.244.2.12", OTHER),
    ("client", "10.244.1.200", NODE),
];

fn pod_ip(name: &str) -> &'static str {
    PODS.iter().find(|p| p.0 == name).map(|p| p.1).expect("pod")
}

fn pod_node(name: &str) -> &'static str {
    PODS.iter().find(|p| p.0 == name).map(|p| p.2).expect("pod")
}

/// An endpoint's conditions.
#[derive(Clone, Copy)]
enum Cond {
    Ready,
    ServingTerminating,
    Terminating,
}

fn service(name: &str, ip: &str, port: u16, proto: &str, extra: Value) -> Value {
    let mut spec = json!({
        "type": "ClusterIP",
        "clusterIP": ip,
        "clusterIPs": [ip],
        "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack",
        "selector": {"app": name},
        "ports": [{"port": port, "targetPort": if proto == "UDP" { UDP_PORT } else { TCP_PORT }, "protocol": proto}],
        "sessionAffinity": "None",
        "internalTrafficPolicy": "Cluster",
    });
    if let (Some(s), Some(e)) = (spec.as_object_mut(), extra.as_object()) {
        for (k, v) in e {
            if k == "nodePort" {
                s["ports"][0]["nodePort"] = v.clone();
            } else {
                s.insert(k.clone(), v.clone());
            }
        }
    }
    json!({"apiVersion": "v1", "kind": "Service",
           "metadata": {"name": name, "namespace": "default"}, "spec": spec})
}

fn slice(service: &str, proto: &str, endpoints: &[(&str, Cond)]) -> Value {
    let eps: Vec<Value> = endpoints
        .iter()
        .map(|(pod, cond)| {
            let (ready, serving, terminating) = match cond {
                Cond::Ready => (true, true, false),
                Cond::ServingTerminating => (false, true, true),
                Cond::Terminating => (false, false, true),
            };
            json!({"addresses": [pod_ip(pod)],
                   "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
                   "nodeName": pod_node(pod)})
        })
        .collect();
    let port = if proto == "UDP" { UDP_PORT } else { TCP_PORT };
    json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
           "metadata": {"name": format!("{service}-abcde"), "namespace": "default",
                        "labels": {"kubernetes.io/service-name": service}},
           "addressType": "IPv4", "endpoints": eps,
           "ports": [{"name": "", "port": port, "protocol": proto}]})
}

/// The cluster; `web` holds the endpoints of the Service the partial sync changes.
fn cluster(web: &[(&str, Cond)]) -> Value {
    use Cond::*;
    let items = vec![
        service("web", "10.96.0.10", 80, "TCP", json!({})),
        slice("web", "TCP", web),
        service(
            "np",
            "10.96.0.11",
            80,
            "TCP",
            json!({"type": "NodePort", "nodePort": 30080, "externalTrafficPolicy": "Cluster"}),
        ),
        slice("np", "TCP", &[("a1", Ready), ("b1", Ready)]),
        service(
            "empty",
            "10.96.0.12",
            80,
            "TCP",
            json!({"type": "NodePort", "nodePort": 30082, "externalTrafficPolicy": "Cluster"}),
        ),
        slice("empty", "TCP", &[]),
        service(
            "sticky",
            "10.96.0.13",
            80,
            "TCP",
            json!({"sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}}}),
        ),
        slice("sticky", "TCP", &[("a1", Ready), ("a2", Ready), ("b1", Ready)]),
        service("dns", "10.96.0.14", 53, "UDP", json!({})),
        slice("dns", "UDP", &[("a1", Ready), ("a2", Ready), ("b1", Ready)]),
        service(
            "local",
            "10.96.0.15",
            80,
            "TCP",
            json!({"type": "NodePort", "nodePort": 30081, "externalTrafficPolicy": "Local", "healthCheckNodePort": 32000}),
        ),
        slice(
            "local",
            "TCP",
            &[("a1", Ready), ("a2", Ready), ("b1", Ready), ("b2", Ready)],
        ),
        service("term", "10.96.0.16", 80, "TCP", json!({})),
        slice("term", "TCP", &[("t1", ServingTerminating), ("b2", Terminating)]),
    ];
    json!({"apiVersion": "v1", "kind": "List", "items": items})
}

fn first_web() -> Vec<(&'static str, Cond)> {
    vec![("a1", Cond::Ready), ("a2", Cond::Ready), ("b1", Cond::Ready)]
}

fn second_web() -> Vec<(&'static str, Cond)> {
    vec![("a1", Cond::Ready), ("a2", Cond::Ready), ("a3", Cond::Ready)]
}

/// The program that answers `rules`.
fn rules_bin() -> String {
    std::env::var("SVCNET_RULES_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_svcnet").to_owned())
}

/// Runs `rules --backend iptables` for this node on `input` after the `prior` states.
fn rules(
    backend: &Backend,
    dir: &std::path::Path,
    print: &str,
    prior: &[&Value],
    input: &Value,
) -> Result<String, String> {
    let write = |name: &str, v: &Value| -> Result<String, String> {
        let p = dir.join(name);
        std::fs::write(&p, serde_json::to_vec_pretty(v).map_err(|e| e.to_string())?)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(p.to_string_lossy().into_owned())
    };
    let mut args: Vec<String> = [
        "rules",
        "--backend",
        backend.name,
        "--node",
        NODE,
        "--node-ip",
        NODE_IP,
        "--cluster-cidr",
        "10.244.0.0/16",
        "--masquerade-mark",
        "0x4000",
        "--host-addresses",
        "lo=127.0.0.1/8;eth0=192.168.0.2/24",
    ]
    .iter()
    .chain(backend.extra_args)
    .map(|s| s.to_string())
    .collect();
    for (i, p) in prior.iter().enumerate() {
        args.push("--prior".into());
        args.push(write(&format!("prior{i}.json"), p)?);
    }
    args.extend(["--print".into(), print.into(), write("input.json", input)?]);
    let out = Command::new(rules_bin())
        .args(&args)
        .output()
        .map_err(|e| format!("{}: {e}", rules_bin()))?;
    if !out.status.success() {
        return Err(format!(
            "`{} {}` failed: {}",
            rules_bin(),
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The node with the first rule set loaded, shared by the checks.
pub struct Fixture {
    backend: &'static Backend,
    node: Node,
    dir: PathBuf,
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Fixture {
    /// Adds the node's rules to a failure message.
    fn explain(&self, e: String) -> String {
        format!("{e}\n--- node rules ---\n{}", self.node.dump())
    }
}

fn setup(backend: &'static Backend) -> Result<Fixture, String> {
    let dir = std::env::temp_dir().join(format!("svcnet-kernel-{}-{}", backend.name, std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let mut node = Node::new()?;
    for (name, ip, _) in PODS {
        node.add_pod(name, ip, &[TCP_PORT], &[UDP_PORT])?;
    }
    let fx = Fixture { backend, node, dir };
    let state = rules(backend, &fx.dir, "state", &[], &cluster(&first_web()))?;
    (backend.load_state)(&fx.node, &state).map_err(|e| format!("{e}\n--- rules ---\n{state}"))?;
    Ok(fx)
}

fn expect_names(what: &str, probes: &[Probe], want: &[&str]) -> Result<(), String> {
    all_answered(what, probes)?;
    let got = answered(probes);
    if got != want {
        return Err(format!("{what}: answered by {got:?}, want exactly {want:?}"));
    }
    Ok(())
}

fn clusterip_spreads(fx: &mut Fixture) -> Result<(), String> {
    let p = fx.node.probe_pod("client", "tcp", "10.96.0.10", 80, SPREAD)?;
    expect_names("ClusterIP 10.96.0.10:80 from a pod", &p, &["a1", "a2", "b1"]).map_err(|e| fx.explain(e))?;
    // From the node itself (OUTPUT chain) as well.
    let p = fx.node.probe_node("tcp", "10.96.0.10", 80, SPREAD)?;
    expect_names("ClusterIP 10.96.0.10:80 from the node", &p, &["a1", "a2", "b1"]).map_err(|e| fx.explain(e))
}

fn nodeport_external(fx: &mut Fixture) -> Result<(), String> {
    let p = fx.node.probe_client("tcp", NODE_IP, 30080, SPREAD)?;
    expect_names("NodePort 30080 from the external client", &p, &["a1", "b1"]).map_err(|e| fx.explain(e))?;
    // externalTrafficPolicy Cluster masquerades: the pods see the node, not the client.
    if let Some(Probe::Answer { source, .. }) = p
        .iter()
        .find(|p| matches!(p, Probe::Answer { source, .. } if source == CLIENT_IP))
    {
        return Err(fx.explain(format!(
            "NodePort 30080 (policy Cluster) was not masqueraded: a pod saw {source}"
        )));
    }
    Ok(())
}

fn no_endpoints_reject(fx: &mut Fixture) -> Result<(), String> {
    let checks = [
        (
            "ClusterIP 10.96.0.12:80 from a pod",
            fx.node.probe_pod("client", "tcp", "10.96.0.12", 80, 3)?,
        ),
        (
            "NodePort 30082 from the external client",
            fx.node.probe_client("tcp", NODE_IP, 30082, 3)?,
        ),
    ];
    for (what, p) in checks {
        if p.iter().any(|p| *p != Probe::Refused) {
            return Err(fx.explain(format!(
                "{what} (no endpoints): want every attempt refused at once, got {p:?}"
            )));
        }
    }
    Ok(())
}

fn affinity_pins(fx: &mut Fixture) -> Result<(), String> {
    let p = fx.node.probe_pod("client", "tcp", "10.96.0.13", 80, 20)?;
    all_answered("ClusterIP 10.96.0.13:80 (ClientIP affinity)", &p).map_err(|e| fx.explain(e))?;
    let got = answered(&p);
    if got.len() != 1 {
        return Err(fx.explain(format!(
            "ClientIP affinity: one client reached {got:?}, want one endpoint"
        )));
    }
    // Another client still spreads over the endpoints (each source is pinned on its own), and the
    // first stays where it was.
    let again = fx.node.probe_pod("client", "tcp", "10.96.0.13", 80, 5)?;
    if answered(&again) != got {
        return Err(fx.explain(format!(
            "ClientIP affinity moved: {got:?} then {:?}",
            answered(&again)
        )));
    }
    Ok(())
}

fn udp_answers(fx: &mut Fixture) -> Result<(), String> {
    let p = fx.node.probe_pod("client", "udp", "10.96.0.14", 53, SPREAD)?;
    expect_names("UDP ClusterIP 10.96.0.14:53", &p, &["a1", "a2", "b1"]).map_err(|e| fx.explain(e))
}

fn etp_local(fx: &mut Fixture) -> Result<(), String> {
    let p = fx.node.probe_client("tcp", NODE_IP, 30081, SPREAD)?;
    expect_names(
        "NodePort 30081 (externalTrafficPolicy Local) from the external client",
        &p,
        &["a1", "a2"],
    )
    .map_err(|e| fx.explain(e))?;
    // Local policy keeps the client's address.
    if let Some(bad) = p
        .iter()
        .find(|p| !matches!(p, Probe::Answer { source, .. } if source == CLIENT_IP))
    {
        return Err(fx.explain(format!(
            "externalTrafficPolicy Local did not keep the client address: {bad:?}"
        )));
    }
    // Inside the cluster the ClusterIP still reaches every endpoint.
    let p = fx.node.probe_pod("client", "tcp", "10.96.0.15", 80, SPREAD)?;
    expect_names(
        "ClusterIP 10.96.0.15:80 of the Local service",
        &p,
        &["a1", "a2", "b1", "b2"],
    )
    .map_err(|e| fx.explain(e))
}

fn serving_terminating(fx: &mut Fixture) -> Result<(), String> {
    let p = fx.node.probe_pod("client", "tcp", "10.96.0.16", 80, 10)?;
    expect_names(
        "ClusterIP 10.96.0.16:80 (only serving+terminating endpoints)",
        &p,
        &["t1"],
    )
    .map_err(|e| fx.explain(e))
}

fn partial_sync(fx: &mut Fixture) -> Result<(), String> {
    let before = cluster(&first_web());
    let after = cluster(&second_web());
    let tx = rules(fx.backend, &fx.dir, "transaction", &[&before], &after)?;
    (fx.backend.apply_transaction)(&fx.node, &tx)
        .map_err(|e| fx.explain(format!("{e}\n--- transaction ---\n{tx}")))?;
    let p = fx.node.probe_pod("client", "tcp", "10.96.0.10", 80, SPREAD)?;
    expect_names(
        "ClusterIP 10.96.0.10:80 after the partial sync",
        &p,
        &["a1", "a2", "a3"],
    )
    .map_err(|e| fx.explain(format!("{e}\n--- transaction ---\n{tx}")))?;
    // The other Services are untouched.
    let p = fx.node.probe_pod("client", "udp", "10.96.0.14", 53, 10)?;
    all_answered("UDP ClusterIP 10.96.0.14:53 after the partial sync", &p).map_err(|e| fx.explain(e))
}

/// One flow the tracer is asked about, and the answer the kernel checks above observe:
/// the endpoints that answer (sorted), or `REJECT`; and, where a check looks at the client
/// address, whether the packet is masqueraded.
struct Expect {
    name: &'static str,
    source: &'static str,
    destination: &'static str,
    port: u16,
    protocol: &'static str,
    output: &'static [&'static str],
    masq: Option<bool>,
}

/// The flows of every kernel check, as the tracer must answer them on the same rules.
const TRACED: &[Expect] = &[
    Expect {
        name: "ClusterIP from a pod",
        source: "10.244.1.200",
        destination: "10.96.0.10",
        port: 80,
        protocol: "TCP",
        output: &["10.244.1.11:8080", "10.244.1.12:8080", "10.244.2.11:8080"],
        masq: Some(false),
    },
    Expect {
        name: "ClusterIP from the node",
        source: NODE_IP,
        destination: "10.96.0.10",
        port: 80,
        protocol: "TCP",
        output: &["10.244.1.11:8080", "10.244.1.12:8080", "10.244.2.11:8080"],
        masq: None,
    },
    Expect {
        name: "NodePort from the external client",
        source: CLIENT_IP,
        destination: NODE_IP,
        port: 30080,
        protocol: "TCP",
        output: &["10.244.1.11:8080", "10.244.2.11:8080"],
        masq: Some(true),
    },
    Expect {
        name: "ClusterIP without endpoints",
        source: "10.244.1.200",
        destination: "10.96.0.12",
        port: 80,
        protocol: "TCP",
        output: &["REJECT"],
        masq: None,
    },
    Expect {
        name: "NodePort without endpoints",
        source: CLIENT_IP,
        destination: NODE_IP,
        port: 30082,
        protocol: "TCP",
        output: &["REJECT"],
        masq: None,
    },
    Expect {
        name: "ClientIP affinity (first packet)",
        source: "10.244.1.200",
        destination: "10.96.0.13",
        port: 80,
        protocol: "TCP",
        output: &["10.244.1.11:8080", "10.244.1.12:8080", "10.244.2.11:8080"],
        masq: Some(false),
    },
    Expect {
        name: "UDP ClusterIP",
        source: "10.244.1.200",
        destination: "10.96.0.14",
        port: 53,
        protocol: "UDP",
        output: &["10.244.1.11:5353", "10.244.1.12:5353", "10.244.2.11:5353"],
        masq: Some(false),
    },
    Expect {
        name: "eTP Local NodePort from outside",
        source: CLIENT_IP,
        destination: NODE_IP,
        port: 30081,
        protocol: "TCP",
        output: &["10.244.1.11:8080", "10.244.1.12:8080"],
        masq: Some(false),
    },
    Expect {
        name: "ClusterIP of the Local service",
        source: "10.244.1.200",
        destination: "10.96.0.15",
        port: 80,
        protocol: "TCP",
        output: &[
            "10.244.1.11:8080",
            "10.244.1.12:8080",
            "10.244.2.11:8080",
            "10.244.2.12:8080",
        ],
        masq: Some(false),
    },
    Expect {
        name: "only serving+terminating endpoints",
        source: "10.244.1.200",
        destination: "10.96.0.16",
        port: 80,
        protocol: "TCP",
        output: &["10.244.1.14:8080"],
        masq: Some(false),
    },
];

/// After the partial sync: the changed Service's endpoints.
const TRACED_AFTER: &[Expect] = &[Expect {
    name: "ClusterIP after the partial sync",
    source: "10.244.1.200",
    destination: "10.96.0.10",
    port: 80,
    protocol: "TCP",
    output: &["10.244.1.11:8080", "10.244.1.12:8080", "10.244.1.13:8080"],
    masq: Some(false),
}];

/// Traces the kernel checks' flows with `svcnet trace --packets` on the same cluster and
/// settings, and compares with what the kernel shows (needs no root: it runs everywhere).
fn tracer_agrees(backend: &Backend) -> Result<(), String> {
    let dir = std::env::temp_dir().join(format!("svcnet-trace-{}-{}", backend.name, std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let write = |name: &str, v: &Value| -> Result<String, String> {
        let p = dir.join(name);
        std::fs::write(&p, serde_json::to_vec_pretty(v).map_err(|e| e.to_string())?)
            .map_err(|e| format!("{}: {e}", p.display()))?;
        Ok(p.to_string_lossy().into_owned())
    };
    let before = cluster(&first_web());
    let after = cluster(&second_web());
    let runs: [(&[Expect], Option<&Value>, &Value); 2] =
        [(TRACED, None, &before), (TRACED_AFTER, Some(&before), &after)];
    let mut problems = Vec::new();
    for (i, (flows, prior, input)) in runs.into_iter().enumerate() {
        let packets: Vec<Value> = flows
            .iter()
            .map(|f| json!({"name": f.name, "source": f.source, "destination": f.destination, "port": f.port, "protocol": f.protocol}))
            .collect();
        let mut args: Vec<String> = [
            "trace",
            "--backend",
            backend.name,
            "--node",
            NODE,
            "--node-ip",
            NODE_IP,
            "--cluster-cidr",
            "10.244.0.0/16",
            "--masquerade-mark",
            "0x4000",
            "--host-addresses",
            "lo=127.0.0.1/8;eth0=192.168.0.2/24",
        ]
        .iter()
        .chain(backend.extra_args)
        .map(|s| s.to_string())
        .collect();
        if let Some(p) = prior {
            args.extend(["--prior".to_owned(), write(&format!("trace-prior{i}.json"), p)?]);
        }
        args.extend([
            "--packets".to_owned(),
            write(&format!("trace-packets{i}.json"), &Value::Array(packets))?,
            "--output".to_owned(),
            "json".to_owned(),
            write(&format!("trace-input{i}.json"), input)?,
        ]);
        let out = Command::new(env!("CARGO_BIN_EXE_svcnet"))
            .args(&args)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "`svcnet {}` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        let answer: Value = serde_json::from_slice(&out.stdout).map_err(|e| format!("trace output: {e}"))?;
        let got = answer["flows"].as_array().cloned().unwrap_or_default();
        for f in flows {
            let Some(a) = got.iter().find(|a| a["name"] == f.name) else {
                problems.push(format!("{}: no answer", f.name));
                continue;
            };
            let mut output: Vec<String> = match &a["output"] {
                Value::Array(v) => v.iter().filter_map(|x| x.as_str().map(str::to_owned)).collect(),
                Value::String(s) => vec![s.clone()],
                other => vec![other.to_string()],
            };
            output.sort();
            if output != f.output {
                problems.push(format!(
                    "{}: traced {output:?}, the kernel shows {:?}",
                    f.name, f.output
                ));
            }
            if let Some(m) = f.masq
                && a["masq"] != m
            {
                problems.push(format!(
                    "{}: traced masq {}, the kernel shows {m}",
                    f.name, a["masq"]
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("\n"))
    }
}

/// Runs the suite for `backend` (see the module docs); exits non-zero when a check fails.
///
/// First, without root: the tracer, asked about every flow the kernel checks make, must
/// predict what the kernel shows (`tracer_predicts_the_kernel_checks`).
pub fn run(backend: &'static Backend) {
    match tracer_agrees(backend) {
        Ok(()) => println!("test tracer_predicts_the_kernel_checks ... ok"),
        Err(e) => {
            println!("test tracer_predicts_the_kernel_checks ... FAILED\n{e}");
            std::process::exit(1);
        }
    }
    let checks: &[Check<Fixture>] = &[
        ("clusterip_spreads_across_ready_endpoints", clusterip_spreads),
        ("nodeport_answers_external_client", nodeport_external),
        ("service_without_endpoints_rejects_at_once", no_endpoints_reject),
        ("client_ip_affinity_pins_a_client", affinity_pins),
        ("udp_clusterip_answers", udp_answers),
        (
            "external_traffic_policy_local_reaches_only_local_endpoints",
            etp_local,
        ),
        ("serving_terminating_endpoints_still_answer", serving_terminating),
        ("partial_sync_applied_on_top_moves_traffic", partial_sync),
    ];
    let suite = format!("kernel_{}", backend.name);
    crate::netns::run_suite(&suite, backend.tools, || setup(backend), checks);
}
