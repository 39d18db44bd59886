//! The generated cluster: Services with their EndpointSlices, as plain data that mutates easily
//! and prints as the Kubernetes objects `svcnet rules` (and kube-oracle) read.

use serde_json::{Value, json};

use crate::rng::Rng;

/// An IP family: the model's one [`IpFamily`](svcnet_model::IpFamily).
pub use svcnet_model::IpFamily as Family;

/// The nodes of every generated cluster, with their zones.
pub const NODES: &[(&str, &str)] = &[
    ("node-0", "zone-a"),
    ("node-1", "zone-a"),
    ("node-2", "zone-b"),
    ("node-3", "zone-c"),
];

/// Counters that keep addresses and ports unique across a whole history.
#[derive(Debug, Clone, Default)]
pub struct Alloc {
    service: usize,
    cluster_ip: usize,
    node_port: usize,
    health_port: usize,
    pod: usize,
    external_ip: usize,
    lb_ip: usize,
}

impl Alloc {
    fn cluster_ip(&mut self, f: Family) -> String {
        self.cluster_ip += 1;
        let n = self.cluster_ip;
        match f {
            Family::V4 => format!("10.96.{}.{}", n / 250, n % 250 + 1),
            Family::V6 => format!("fd00:10:96::{:x}", n),
        }
    }

    fn node_port(&mut self) -> u16 {
        self.node_port += 1;
        30000 + self.node_port as u16
    }

    fn health_port(&mut self) -> u16 {
        self.health_port += 1;
        32000 + self.health_port as u16
    }

    /// A fresh pod address on node `node` (an index into [`NODES`]).
    fn pod_ip(&mut self, f: Family, node: usize) -> String {
        self.pod += 1;
        let n = self.pod;
        match f {
            Family::V4 => format!("10.244.{}.{}", node * 16 + n / 250, n % 250 + 1),
            Family::V6 => format!("fd00:10:244:{node}::{:x}", n),
        }
    }

    fn external_ip(&mut self, f: Family) -> String {
        self.external_ip += 1;
        let n = self.external_ip;
        match f {
            Family::V4 => format!("198.51.100.{}", n % 250 + 1),
            Family::V6 => format!("2001:db8:51::{:x}", n),
        }
    }

    fn lb_ip(&mut self, f: Family) -> String {
        self.lb_ip += 1;
        let n = self.lb_ip;
        match f {
            Family::V4 => format!("203.0.113.{}", n % 250 + 1),
            Family::V6 => format!("2001:db8:113::{:x}", n),
        }
    }
}

/// A Service's type, with headless as its own kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// ClusterIP.
    ClusterIp,
    /// ClusterIP `None`.
    Headless,
    /// NodePort.
    NodePort,
    /// LoadBalancer.
    LoadBalancer,
    /// ExternalName (ignored by proxies).
    ExternalName,
}

/// One Service port.
#[derive(Debug, Clone)]
pub struct Port {
    /// Its name ("" when unnamed).
    pub name: String,
    /// The Service port.
    pub port: u16,
    /// TCP, UDP or SCTP.
    pub protocol: &'static str,
    /// The target port number (endpoint slices carry it).
    pub target: u16,
    /// The target port as a name (for named target ports).
    pub target_name: Option<String>,
    /// The NodePort, if any.
    pub node_port: Option<u16>,
}

/// One endpoint.
#[derive(Debug, Clone)]
pub struct Endpoint {
    /// Its address.
    pub address: String,
    /// `conditions.ready`, `serving`, `terminating` (absent when `None`).
    pub ready: Option<bool>,
    /// `conditions.serving`.
    pub serving: Option<bool>,
    /// `conditions.terminating`.
    pub terminating: Option<bool>,
    /// The node index, or none.
    pub node: Option<usize>,
    /// Whether the zone is set (from the node).
    pub zone: bool,
    /// Zone hints.
    pub for_zones: Vec<String>,
    /// Node hints.
    pub for_nodes: Vec<String>,
}

/// One EndpointSlice.
#[derive(Debug, Clone)]
pub struct Slice {
    /// Its name suffix.
    pub suffix: String,
    /// Its address type.
    pub family: Family,
    /// Its endpoints.
    pub endpoints: Vec<Endpoint>,
    /// Its ports: name, number, protocol.
    pub ports: Vec<(String, u16, &'static str)>,
}

/// One Service with its slices.
#[derive(Debug, Clone)]
pub struct Service {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Type.
    pub kind: Kind,
    /// Families in order, with the ClusterIP of each.
    pub cluster_ips: Vec<(Family, String)>,
    /// The ipFamilyPolicy.
    pub family_policy: &'static str,
    /// Ports.
    pub ports: Vec<Port>,
    /// ClientIP affinity timeout, when affinity is on.
    pub affinity: Option<u32>,
    /// externalTrafficPolicy Local.
    pub etp_local: bool,
    /// internalTrafficPolicy Local.
    pub itp_local: bool,
    /// healthCheckNodePort.
    pub health_port: Option<u16>,
    /// externalIPs.
    pub external_ips: Vec<String>,
    /// status.loadBalancer.ingress: ip and ipMode.
    pub ingress: Vec<(String, Option<&'static str>)>,
    /// loadBalancerSourceRanges.
    pub source_ranges: Vec<String>,
    /// trafficDistribution.
    pub traffic_distribution: Option<&'static str>,
    /// The EndpointSlices.
    pub slices: Vec<Slice>,
}

/// A whole cluster state.
#[derive(Debug, Clone)]
pub struct Cluster {
    /// The families Services may use.
    pub families: Vec<Family>,
    /// The Services.
    pub services: Vec<Service>,
}

const NAMESPACES: &[&str] = &["default", "team-a", "payments", "kube-system"];
const APPS: &[&str] = &["web", "api", "dns", "cart", "queue", "db", "auth", "metrics"];
const PORT_NAMES: &[&str] = &["http", "https", "grpc", "dns", "metrics", "p"];
const PROTOCOLS: &[&str] = &["TCP", "UDP", "SCTP"];

/// Generates a Service (with fresh addresses from `alloc`).
pub fn service(rng: &mut Rng, alloc: &mut Alloc, families: &[Family], big: bool) -> Service {
    alloc.service += 1;
    let name = format!("{}-{}", rng.pick(APPS), alloc.service);
    let namespace = rng.pick(NAMESPACES).to_string();
    let kind = match rng.weighted(&[35, 8, 25, 25, 7]) {
        0 => Kind::ClusterIp,
        1 => Kind::Headless,
        2 => Kind::NodePort,
        3 => Kind::LoadBalancer,
        _ => Kind::ExternalName,
    };
    let (fams, family_policy): (Vec<Family>, &'static str) = if families.len() == 2 {
        match rng.below(4) {
            0 => (vec![Family::V4], "SingleStack"),
            1 => (vec![Family::V6], "SingleStack"),
            2 => (
                vec![Family::V4, Family::V6],
                *rng.pick(&["PreferDualStack", "RequireDualStack"]),
            ),
            _ => (
                vec![Family::V6, Family::V4],
                *rng.pick(&["PreferDualStack", "RequireDualStack"]),
            ),
        }
    } else {
        (families.to_vec(), "SingleStack")
    };
    let cluster_ips = fams
        .iter()
        .map(|f| {
            let ip = if kind == Kind::Headless {
                "None".to_string()
            } else {
                alloc.cluster_ip(*f)
            };
            (*f, ip)
        })
        .collect();
    let n_ports = if big { 1 } else { rng.weighted(&[60, 30, 10]) + 1 };
    let mut ports: Vec<Port> = Vec::new();
    let lb_nodeports = kind == Kind::LoadBalancer && rng.chance(85);
    for i in 0..n_ports {
        let protocol = PROTOCOLS[rng.weighted(&[60, 25, 15])];
        let name = if n_ports > 1 || rng.chance(40) {
            format!("{}{}", rng.pick(PORT_NAMES), i)
        } else {
            String::new()
        };
        let port = *rng.pick(&[80u16, 443, 53, 8080, 9090, 6379]) + i as u16;
        let target = if rng.chance(50) {
            port
        } else {
            8000 + rng.below(100) as u16
        };
        let target_name = rng.chance(15).then(|| format!("tgt-{i}"));
        let node_port = (kind == Kind::NodePort || lb_nodeports).then(|| alloc.node_port());
        ports.push(Port {
            name,
            port,
            protocol,
            target,
            target_name,
            node_port,
        });
    }
    let external_kind = matches!(kind, Kind::NodePort | Kind::LoadBalancer);
    let proxied = !matches!(kind, Kind::Headless | Kind::ExternalName);
    let etp_local = external_kind && rng.chance(35);
    let health_port = (kind == Kind::LoadBalancer && etp_local).then(|| alloc.health_port());
    let external_ips = if proxied && rng.chance(20) {
        (0..rng.range(1, 2)).map(|_| alloc.external_ip(fams[0])).collect()
    } else {
        Vec::new()
    };
    let ingress = if kind == Kind::LoadBalancer && rng.chance(85) {
        (0..rng.range(1, 2))
            .map(|_| {
                let f = *rng.pick(&fams);
                let mode = match rng.weighted(&[50, 25, 25]) {
                    0 => None,
                    1 => Some("VIP"),
                    _ => Some("Proxy"),
                };
                (alloc.lb_ip(f), mode)
            })
            .collect()
    } else {
        Vec::new()
    };
    let source_ranges = if kind == Kind::LoadBalancer && rng.chance(30) {
        let mut r = Vec::new();
        for f in &fams {
            r.push(match f {
                Family::V4 => rng
                    .pick(&["203.0.113.0/25", "192.0.2.0/24", "10.0.0.0/8"])
                    .to_string(),
                Family::V6 => rng.pick(&["2001:db8:1::/64", "fd00::/8"]).to_string(),
            });
        }
        r
    } else {
        Vec::new()
    };
    let mut svc = Service {
        namespace,
        name,
        kind,
        cluster_ips,
        family_policy,
        ports,
        affinity: (proxied && rng.chance(20)).then(|| *rng.pick(&[10800u32, 60, 3600])),
        etp_local,
        itp_local: proxied && rng.chance(15),
        health_port,
        external_ips,
        ingress,
        source_ranges,
        traffic_distribution: (proxied && rng.chance(20))
            .then(|| *rng.pick(&["PreferClose", "PreferSameZone", "PreferSameNode"])),
        slices: Vec::new(),
    };
    if kind != Kind::ExternalName {
        let n_slices = if big { 11 } else { rng.weighted(&[10, 60, 30]) };
        for _ in 0..n_slices {
            let f = *rng.pick(&fams);
            let n = if big { 100 } else { rng.range(0, 5) };
            let s = slice(rng, alloc, &svc, f, n);
            svc.slices.push(s);
        }
    }
    svc
}

/// A fresh endpoint on a random node (or none).
pub fn endpoint(rng: &mut Rng, alloc: &mut Alloc, f: Family, hints: bool) -> Endpoint {
    let node = if rng.chance(90) {
        Some(rng.below(NODES.len()))
    } else {
        None
    };
    let (ready, serving, terminating) = match rng.weighted(&[55, 10, 10, 10, 5, 5, 5]) {
        0 => (Some(true), Some(true), Some(false)),
        1 => (Some(false), Some(false), Some(false)),
        2 => (Some(false), Some(true), Some(true)),
        3 => (Some(false), Some(false), Some(true)),
        4 => (None, None, None),
        5 => (Some(true), None, None),
        _ => (Some(false), Some(true), Some(false)),
    };
    let zone = node.is_some() && rng.chance(80);
    let (mut for_zones, mut for_nodes) = (Vec::new(), Vec::new());
    if hints {
        let z = node.map_or("zone-a", |n| NODES[n].1);
        for_zones.push(z.to_string());
        if rng.chance(20) {
            let extra = *rng.pick(&["zone-a", "zone-b", "zone-c"]);
            for_zones.push(extra.to_string());
            for_zones.dedup();
        }
        if rng.chance(40) {
            for_nodes.push(NODES[node.unwrap_or(0)].0.to_string());
        }
    }
    Endpoint {
        address: alloc.pod_ip(f, node.unwrap_or(4)),
        ready,
        serving,
        terminating,
        node,
        zone,
        for_zones,
        for_nodes,
    }
}

/// A fresh slice of `svc` for family `f` with `n` endpoints.
pub fn slice(rng: &mut Rng, alloc: &mut Alloc, svc: &Service, f: Family, n: usize) -> Slice {
    let hints = rng.chance(30);
    let endpoints = (0..n).map(|_| endpoint(rng, alloc, f, hints)).collect();
    let mut ports: Vec<(String, u16, &'static str)> = svc
        .ports
        .iter()
        .map(|p| (p.name.clone(), p.target, p.protocol))
        .collect();
    if ports.len() > 1 && rng.chance(10) {
        ports.remove(rng.below(ports.len()));
    }
    Slice {
        suffix: format!("{:05x}", rng.next_u64() & 0xfffff),
        family: f,
        endpoints,
        ports,
    }
}

impl Service {
    /// The Service object.
    pub fn to_json(&self) -> Value {
        let mut spec = serde_json::Map::new();
        let ty = match self.kind {
            Kind::ClusterIp | Kind::Headless => "ClusterIP",
            Kind::NodePort => "NodePort",
            Kind::LoadBalancer => "LoadBalancer",
            Kind::ExternalName => "ExternalName",
        };
        spec.insert("type".into(), json!(ty));
        if self.kind == Kind::ExternalName {
            spec.insert("externalName".into(), json!(format!("{}.example.com", self.name)));
        } else {
            spec.insert("clusterIP".into(), json!(self.cluster_ips[0].1));
            let mut ips: Vec<&str> = self.cluster_ips.iter().map(|c| c.1.as_str()).collect();
            if self.kind == Kind::Headless {
                ips.truncate(1);
            }
            spec.insert("clusterIPs".into(), json!(ips));
            let fams: Vec<&str> = self.cluster_ips.iter().map(|c| c.0.as_str()).collect();
            spec.insert("ipFamilies".into(), json!(fams));
            spec.insert("ipFamilyPolicy".into(), json!(self.family_policy));
            spec.insert("selector".into(), json!({"app": self.name}));
        }
        let ports: Vec<Value> = self
            .ports
            .iter()
            .map(|p| {
                let mut o = serde_json::Map::new();
                if !p.name.is_empty() {
                    o.insert("name".into(), json!(p.name));
                }
                o.insert("port".into(), json!(p.port));
                match &p.target_name {
                    Some(n) => o.insert("targetPort".into(), json!(n)),
                    None => o.insert("targetPort".into(), json!(p.target)),
                };
                o.insert("protocol".into(), json!(p.protocol));
                if let Some(np) = p.node_port {
                    o.insert("nodePort".into(), json!(np));
                }
                Value::Object(o)
            })
            .collect();
        spec.insert("ports".into(), json!(ports));
        if self.kind != Kind::ExternalName {
            match self.affinity {
                Some(t) => {
                    spec.insert("sessionAffinity".into(), json!("ClientIP"));
                    spec.insert(
                        "sessionAffinityConfig".into(),
                        json!({"clientIP": {"timeoutSeconds": t}}),
                    );
                }
                None => {
                    spec.insert("sessionAffinity".into(), json!("None"));
                }
            }
        }
        if !self.external_ips.is_empty() {
            spec.insert("externalIPs".into(), json!(self.external_ips));
        }
        if matches!(self.kind, Kind::NodePort | Kind::LoadBalancer) {
            let etp = if self.etp_local { "Local" } else { "Cluster" };
            spec.insert("externalTrafficPolicy".into(), json!(etp));
        }
        if let Some(h) = self.health_port {
            spec.insert("healthCheckNodePort".into(), json!(h));
        }
        if self.kind == Kind::LoadBalancer {
            let alloc = self.ports.iter().any(|p| p.node_port.is_some());
            spec.insert("allocateLoadBalancerNodePorts".into(), json!(alloc));
        }
        if !self.source_ranges.is_empty() {
            spec.insert("loadBalancerSourceRanges".into(), json!(self.source_ranges));
        }
        if self.kind != Kind::ExternalName {
            let itp = if self.itp_local { "Local" } else { "Cluster" };
            spec.insert("internalTrafficPolicy".into(), json!(itp));
        }
        if let Some(t) = self.traffic_distribution {
            spec.insert("trafficDistribution".into(), json!(t));
        }
        let mut svc = json!({
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": Value::Object(spec),
        });
        if !self.ingress.is_empty() {
            let ing: Vec<Value> = self
                .ingress
                .iter()
                .map(|(ip, mode)| match mode {
                    Some(m) => json!({"ip": ip, "ipMode": m}),
                    None => json!({"ip": ip}),
                })
                .collect();
            svc["status"] = json!({"loadBalancer": {"ingress": ing}});
        }
        svc
    }

    /// The EndpointSlice objects.
    pub fn slices_json(&self) -> Vec<Value> {
        self.slices
            .iter()
            .map(|s| {
                let eps: Vec<Value> = s
                    .endpoints
                    .iter()
                    .map(|e| {
                        let mut cond = serde_json::Map::new();
                        for (k, v) in [
                            ("ready", e.ready),
                            ("serving", e.serving),
                            ("terminating", e.terminating),
                        ] {
                            if let Some(b) = v {
                                cond.insert(k.into(), json!(b));
                            }
                        }
                        let mut o = json!({"addresses": [e.address], "conditions": Value::Object(cond)});
                        if let Some(n) = e.node {
                            o["nodeName"] = json!(NODES[n].0);
                            if e.zone {
                                o["zone"] = json!(NODES[n].1);
                            }
                        }
                        if !e.for_zones.is_empty() || !e.for_nodes.is_empty() {
                            let mut h = serde_json::Map::new();
                            if !e.for_zones.is_empty() {
                                let z: Vec<Value> = e.for_zones.iter().map(|z| json!({"name": z})).collect();
                                h.insert("forZones".into(), json!(z));
                            }
                            if !e.for_nodes.is_empty() {
                                let n: Vec<Value> = e.for_nodes.iter().map(|n| json!({"name": n})).collect();
                                h.insert("forNodes".into(), json!(n));
                            }
                            o["hints"] = Value::Object(h);
                        }
                        o
                    })
                    .collect();
                let ports: Vec<Value> = s
                    .ports
                    .iter()
                    .map(|(n, p, proto)| json!({"name": n, "port": p, "protocol": proto}))
                    .collect();
                json!({
                    "apiVersion": "discovery.k8s.io/v1",
                    "kind": "EndpointSlice",
                    "metadata": {
                        "name": format!("{}-{}", self.name, s.suffix),
                        "namespace": self.namespace,
                        "labels": {
                            "kubernetes.io/service-name": self.name,
                            "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io",
                        },
                    },
                    "addressType": s.family.as_str(),
                    "endpoints": eps,
                    "ports": ports,
                })
            })
            .collect()
    }
}

impl Cluster {
    /// The state as a `v1` `List`: Nodes, then each Service followed by its slices.
    pub fn to_json(&self) -> Value {
        let mut items: Vec<Value> = NODES
            .iter()
            .map(|(n, z)| {
                json!({"apiVersion": "v1", "kind": "Node",
                       "metadata": {"name": n, "labels": {"topology.kubernetes.io/zone": z, "kubernetes.io/hostname": n}}})
            })
            .collect();
        for s in &self.services {
            items.push(s.to_json());
            items.extend(s.slices_json());
        }
        json!({"apiVersion": "v1", "kind": "List", "items": items})
    }
}
