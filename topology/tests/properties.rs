//! Properties of hinting (controller side) and endpoint selection (proxy side).

use std::collections::BTreeMap;
use std::sync::LazyLock;

use proptest::prelude::*;
use svcnet_model::{Endpoint, EndpointConditions, EndpointSlice, ForNode, ForZone, ObjectMeta, Service};
use svcnet_topology::*;

const ZONES: [&str; 5] = ["z0", "z1", "z2", "z3", "zx"];

/// CPU per zone, endpoints as (zone index, ready, slice index), and where each slice goes
/// (0 create, 1 update, 2 unchanged).
type Cluster = (Vec<i64>, Vec<(usize, bool, usize)>, Vec<u8>);

/// Zones with CPU (2 to 4 of z0..z3), and endpoints: (zone index, ready, slice index).
/// Zone index 4 (`zx`) has no CPU: endpoints there sit in a zone without ready nodes.
fn cluster() -> impl Strategy<Value = Cluster> {
    (
        prop::collection::vec(100i64..5000, 2..=4),
        prop::collection::vec((0usize..5, prop::bool::weighted(0.85), 0usize..4), 0..48),
        prop::collection::vec(0u8..3, 4),
    )
}

fn build(cpu: &[i64], eps: &[(usize, bool, usize)], placement: &[u8]) -> (ZoneCapacity, SliceSet) {
    let cap = ZoneCapacity::from_zone_cpu(cpu.iter().enumerate().map(|(i, c)| (ZONES[i], *c)));
    let mut slices: Vec<Vec<Endpoint>> = vec![Vec::new(); 4];
    for (n, &(z, ready, s)) in eps.iter().enumerate() {
        // Keep zones to those with CPU, plus the capacity-less one.
        let zone = if z < cpu.len() || z == 4 {
            ZONES[z]
        } else {
            ZONES[0]
        };
        slices[s].push(Endpoint {
            addresses: svcnet_model::smallvec![format!("10.0.{}.{}", n / 250, n % 250).into()],
            conditions: EndpointConditions {
                ready: Some(ready),
                ..Default::default()
            },
            zone: Some(zone.into()),
            node_name: Some(format!("node-{zone}").into()),
            ..Default::default()
        });
    }
    let mut set = SliceSet::default();
    for (i, eps) in slices.into_iter().enumerate() {
        let s = EndpointSlice {
            metadata: ObjectMeta {
                name: Some(format!("s{i}")),
                namespace: Some("ns".into()),
                ..Default::default()
            },
            address_type: "IPv4".into(),
            endpoints: Some(eps),
            ..Default::default()
        };
        match placement[i] {
            0 => set.to_create.push(s.into()),
            1 => set.to_update.push(s.into()),
            _ => set.unchanged.push(s.into()),
        }
    }
    (cap, set)
}

fn auto_service() -> Service {
    let mut s = Service::default();
    s.metadata.name = Some("svc".into());
    s.metadata.namespace = Some("ns".into());
    s.metadata.annotations = Some([(ANNOTATION_TOPOLOGY_MODE.to_owned(), "Auto".to_owned())].into());
    s
}

fn ready_zone_hints(set: &SliceSet) -> Vec<usize> {
    set.iter()
        .flat_map(|s| s.endpoints())
        .filter(|e| e.conditions.ready == Some(true))
        .map(|e| {
            e.hints
                .as_ref()
                .and_then(|h| h.for_zones.as_ref())
                .map_or(0, Vec::len)
        })
        .collect()
}

fn hinted_by_zone(set: &SliceSet) -> BTreeMap<String, usize> {
    let mut m = BTreeMap::new();
    for e in set
        .iter()
        .flat_map(|s| s.endpoints())
        .filter(|e| e.conditions.ready == Some(true))
    {
        for z in e.hints.iter().flat_map(|h| h.for_zones.iter().flatten()) {
            *m.entry(z.name.clone()).or_insert(0) += 1;
        }
    }
    m
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Every ready endpoint gets exactly one zone hint, or none does (hints on not-ready
    /// endpoints do not count). Holds in both modes.
    #[test]
    fn one_zone_hint_per_ready_endpoint_or_none((cpu, eps, placement) in cluster(), strict in any::<bool>()) {
        let (cap, set) = build(&cpu, &eps, &placement);
        let opts = HintsOptions { strict, ..Default::default() };
        let out = reconcile_hints(&auto_service(), "IPv4", set, &cap, false, &opts);
        let counts = ready_zone_hints(&out.slices);
        match out.decision {
            Decision::Hinted(_) => prop_assert!(counts.iter().all(|&n| n == 1), "{counts:?}"),
            Decision::Removed { .. } => prop_assert!(counts.iter().all(|&n| n == 0), "{counts:?}"),
            other => prop_assert!(false, "unexpected {other:?}"),
        }
    }

    /// Strict mode: whenever hints are kept, every zone with ready nodes has hinted endpoints,
    /// and at least its share of the CPU divided by 1 + threshold (the controller's overload
    /// check passes), and no more than its maximum. Kubernetes' own assignment (the default)
    /// breaks this in the three cases `HintsOptions::strict` documents: moving stops at
    /// fractions, targets raised to minimums exceed the endpoints, endpoints in zones without
    /// ready worker nodes.
    #[test]
    fn strict_hints_keep_every_zone_within_the_threshold((cpu, eps, placement) in cluster()) {
        let (cap, set) = build(&cpu, &eps, &placement);
        let opts = HintsOptions { strict: true, ..Default::default() };
        let out = reconcile_hints(&auto_service(), "IPv4", set, &cap, false, &opts);
        if let Decision::Hinted(report) = &out.decision {
            let hinted = hinted_by_zone(&out.slices);
            for (zone, z) in &report.zones {
                prop_assert!(hinted.get(zone).copied().unwrap_or(0) >= 1, "zone {zone} has no endpoints");
                prop_assert_eq!(hinted.get(zone).copied().unwrap_or(0), z.hinted);
                prop_assert!(z.hinted >= z.allocation.minimum, "zone {zone}: {} < {}", z.hinted, z.allocation.minimum);
                prop_assert!(z.hinted <= z.allocation.maximum, "zone {zone}: {} > {}", z.hinted, z.allocation.maximum);
            }
            prop_assert!(!service_overloaded(&hinted, cap.ratios()), "{hinted:?}");
            prop_assert!(report.overloaded_zones.is_empty());
        }
    }

    /// Kubernetes mode may stop short of a zone's minimum, but never silently: every zone left
    /// below its minimum (or with nothing) is named in the report, exactly as the controller's
    /// overload check finds it.
    #[test]
    fn kubernetes_mode_reports_every_short_zone((cpu, eps, placement) in cluster()) {
        let (cap, set) = build(&cpu, &eps, &placement);
        let out = reconcile_hints(&auto_service(), "IPv4", set, &cap, false, &HintsOptions::default());
        if let Decision::Hinted(report) = &out.decision {
            let hinted = hinted_by_zone(&out.slices);
            prop_assert_eq!(&report.overloaded_zones, &short_zones(&hinted, cap.ratios()));
            for (zone, z) in &report.zones {
                if z.hinted == 0 {
                    prop_assert!(report.overloaded_zones.contains(zone));
                }
            }
        }
    }

    /// Hinting its own output again changes nothing: no slice moves, no event. Kubernetes
    /// itself is not stable in two cases, left out in Kubernetes mode: a ready endpoint in a
    /// zone without ready worker nodes (hinted to its own zone, a hint the next sync rejects),
    /// and a redistribution that stops short (one zone stays over its maximum, so the next
    /// sync rewrites the slice again). Strict mode is always stable.
    #[test]
    fn hinting_is_stable((cpu, eps, placement) in cluster(), strict in any::<bool>()) {
        let (cap, set) = build(&cpu, &eps, &placement);
        let opts = HintsOptions { strict, ..Default::default() };
        let first = reconcile_hints(&auto_service(), "IPv4", set, &cap, false, &opts);
        if let Decision::Hinted(r) = &first.decision
            && !strict
            && (!r.zones_without_capacity.is_empty() || !r.overloaded_zones.is_empty())
        {
            return Ok(());
        }
        let all: Vec<EndpointSlice> = first.slices.iter().cloned().collect();
        let again = reconcile_hints(&auto_service(), "IPv4", SliceSet::existing(all), &cap, first.hints_populated, &opts);
        prop_assert!(again.slices.to_update.is_empty(), "{:?}", again.notes);
        let removed = matches!(first.decision, Decision::Removed { .. });
        prop_assert!(removed || again.events.is_empty());
        prop_assert_eq!(first.decision, again.decision);
    }
}

/// Endpoint conditions as the EndpointSlice controller writes them (ready implies serving),
/// plus the all-unknown form, which reads as ready and serving.
fn conditions() -> impl Strategy<Value = (bool, bool, bool)> {
    prop_oneof![
        Just((true, true, false)),
        Just((false, false, false)),
        Just((false, true, true)),
        Just((false, false, true)),
    ]
}

/// Zone hints the proxy-side properties draw from (the first three zones).
static FOR_ZONES: LazyLock<Vec<ForZone>> = LazyLock::new(|| {
    ZONES[..3]
        .iter()
        .map(|z| ForZone {
            name: (*z).to_owned(),
        })
        .collect()
});

/// Node hints the proxy-side properties draw from: this node and two others.
static FOR_NODES: LazyLock<Vec<ForNode>> = LazyLock::new(|| {
    ["me", "x", "y"]
        .iter()
        .map(|n| ForNode {
            name: (*n).to_owned(),
        })
        .collect()
});

fn proxy_endpoints() -> impl Strategy<Value = Vec<ProxyEndpoint<'static>>> {
    prop::collection::vec(
        (
            conditions(),
            any::<bool>(),
            prop::option::of(0usize..3),
            prop::option::of(0usize..3),
        ),
        0..12,
    )
    .prop_map(|v| {
        v.into_iter()
            .enumerate()
            .map(
                |(i, ((ready, serving, terminating), local, zone_hint, node_hint))| ProxyEndpoint {
                    ip: format!("10.1.0.{i}").parse().unwrap(),
                    port: 80,
                    node_name: Some(if local { "me" } else { "other" }),
                    zone: None,
                    is_local: local,
                    ready,
                    serving,
                    terminating,
                    zone_hints: zone_hint.map_or(&[][..], |z| &FOR_ZONES[z..=z]),
                    node_hints: node_hint.map_or(&[][..], |n| &FOR_NODES[n..=n]),
                },
            )
            .collect()
    })
}

fn policy() -> impl Strategy<Value = PortPolicy> {
    (any::<bool>(), any::<bool>(), any::<bool>()).prop_map(
        |(internal_local, external_local, externally_accessible)| PortPolicy {
            internal_local,
            external_local,
            externally_accessible,
        },
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Selection never returns an endpoint that is not serving.
    #[test]
    fn selection_only_returns_serving_endpoints(eps in proxy_endpoints(), policy in policy(), node_hints in any::<bool>()) {
        let node = NodeTopology::new("me", "z0");
        let sel = categorize(&eps, &policy, &node, &SelectOptions { node_hints });
        for e in sel.cluster.iter().flatten().chain(sel.local.iter().flatten()).chain(sel.all_reachable()) {
            prop_assert!(e.serving, "{e:?}");
        }
        prop_assert_eq!(sel.cluster.is_some(), policy.uses_cluster());
        prop_assert_eq!(sel.local.is_some(), policy.uses_local());
        if !sel.all_reachable().is_empty() {
            prop_assert!(sel.has_any);
        }
    }

    /// Under a Local policy only local endpoints are returned for Local traffic; an internal-only
    /// Service with internalTrafficPolicy Local reaches only local endpoints at all.
    #[test]
    fn local_policy_returns_only_local_endpoints(eps in proxy_endpoints(), policy in policy()) {
        let node = NodeTopology::new("me", "z0");
        let sel = categorize(&eps, &policy, &node, &SelectOptions::default());
        for e in sel.local.iter().flatten() {
            prop_assert!(e.is_local);
        }
        if policy.internal_local && !policy.externally_accessible {
            prop_assert!(sel.cluster.is_none());
            prop_assert!(sel.all_reachable().iter().all(|e| e.is_local));
        }
    }
}

/// What a node's view holds, as plain text: per service port (name, family, port, policy
/// flags, endpoints), and the ignored slice content.
type ViewText = (
    Vec<(String, IpFamily, i32, PortPolicy, Vec<String>)>,
    Vec<(String, String, String)>,
);

fn endpoint_text(addr: String, e: &svcnet_model::Endpoint, local: bool, node_hints: bool) -> String {
    let mut zones: Vec<&str> = e
        .hints
        .iter()
        .flat_map(|h| h.for_zones.iter().flatten())
        .map(|z| z.name.as_str())
        .collect();
    zones.sort();
    zones.dedup();
    let mut nodes: Vec<&str> = e
        .hints
        .iter()
        .filter(|_| node_hints)
        .flat_map(|h| h.for_nodes.iter().flatten())
        .map(|n| n.name.as_str())
        .collect();
    nodes.sort();
    nodes.dedup();
    let c = &e.conditions;
    format!(
        "{addr} node={:?} zone={:?} local={local} ready={} serving={} terminating={} zones={zones:?} nodes={nodes:?}",
        e.node_name,
        e.zone,
        c.ready.unwrap_or(true),
        c.serving.unwrap_or(true),
        c.terminating.unwrap_or(false),
    )
}

fn proxy_text(e: &ProxyEndpoint<'_>) -> String {
    let mut zones: Vec<&str> = e.zone_hints.iter().map(|z| z.name.as_str()).collect();
    zones.sort();
    zones.dedup();
    let mut nodes: Vec<&str> = e.node_hints.iter().map(|n| n.name.as_str()).collect();
    nodes.sort();
    nodes.dedup();
    format!(
        "{} node={:?} zone={:?} local={} ready={} serving={} terminating={} zones={zones:?} nodes={nodes:?}",
        e.addr(),
        e.node_name.map(str::to_owned),
        e.zone.map(str::to_owned),
        e.is_local,
        e.ready,
        e.serving,
        e.terminating,
    )
}

/// The proxy's reading written the slow, obvious way: for each family, every slice in name
/// order into a map per service port keyed by `IP:port` text (a local copy overwrites), then
/// each Service port looked up in it.
fn reference_view(services: &[Service], slices: &[EndpointSlice], node: &str, node_hints: bool) -> ViewText {
    type Table = BTreeMap<(String, String, String, String), BTreeMap<String, String>>;
    let mut tables: Vec<(IpFamily, Table)> = Vec::new();
    let mut ignored = Vec::new();
    for family in [IpFamily::V4, IpFamily::V6] {
        let mut ordered: Vec<&EndpointSlice> = slices.iter().collect();
        ordered.sort_by_key(|s| (s.metadata.namespace().to_owned(), s.metadata.name().to_owned()));
        let mut table = Table::new();
        for s in ordered.into_iter().filter(|s| s.address_type == family.as_str()) {
            let id = format!("{}/{}", s.metadata.namespace(), s.metadata.name());
            let mut ignore = |what: String, why: &str| ignored.push((id.clone(), what, why.to_owned()));
            let Some(service) = s.service_name().filter(|n| !n.is_empty()) else {
                ignore(String::new(), "no kubernetes.io/service-name label");
                continue;
            };
            if s.metadata.namespace().is_empty() || s.metadata.name().is_empty() {
                ignore(String::new(), "no name or namespace");
                continue;
            }
            for p in s.ports() {
                let Some(port_name) = p.name.clone() else {
                    ignore(format!("port {:?}", p.port), "port without a name");
                    continue;
                };
                let number = match p.port.map(u16::try_from) {
                    Some(Ok(n)) if n != 0 => n,
                    _ => {
                        ignore(format!("port {port_name:?}"), "port without a valid number");
                        continue;
                    }
                };
                let key = (
                    s.metadata.namespace().to_owned(),
                    service.to_owned(),
                    port_name,
                    p.protocol().to_owned(),
                );
                let set = table.entry(key).or_default();
                for e in s.endpoints() {
                    let Some(first) = e.addresses.first() else {
                        ignore(String::new(), "endpoint without addresses");
                        continue;
                    };
                    let Some(ip) = svcnet_model::validation::names::parse_ip_sloppy(first) else {
                        ignore(first.to_string(), "address is not an IP");
                        continue;
                    };
                    if IpFamily::of(ip) != family {
                        ignore(first.to_string(), "address of the other IP family");
                        continue;
                    }
                    let addr = std::net::SocketAddr::new(ip, number).to_string();
                    let local = !node.is_empty() && e.node_name.as_deref() == Some(node);
                    // kube-proxy v1.37.2's addEndpoints: a later copy replaces an earlier one
                    // unless it is terminating.
                    if !e.conditions.is_terminating() || !set.contains_key(&addr) {
                        set.insert(addr.clone(), endpoint_text(addr, e, local, node_hints));
                    }
                }
            }
        }
        tables.push((family, table));
    }
    let mut ports = Vec::new();
    for svc in services {
        let spec = svc.spec();
        let unallocated =
            spec.cluster_ip.is_none() && spec.cluster_ips.as_deref().is_none_or(<[_]>::is_empty);
        if svc.skipped_by_proxy() && !(unallocated && svc.type_() != "ExternalName") {
            continue;
        }
        let mut families: Vec<IpFamily> = svc
            .spec()
            .ip_families
            .iter()
            .flatten()
            .filter_map(|f| [IpFamily::V4, IpFamily::V6].into_iter().find(|x| x.as_str() == f))
            .collect();
        if families.is_empty() {
            families = svc
                .cluster_ip_addrs()
                .unwrap_or_default()
                .into_iter()
                .map(IpFamily::of)
                .collect();
        }
        if families.is_empty() {
            families.push(IpFamily::V4);
        }
        families.dedup();
        families.retain(|f| unallocated || svc.cluster_ip_for_family(f.as_str()).is_some());
        for p in svc.spec().ports() {
            for &family in &families {
                let key = (
                    svc.metadata.namespace().to_owned(),
                    svc.metadata.name().to_owned(),
                    p.name().to_owned(),
                    p.protocol().to_owned(),
                );
                let table = tables.iter().find(|(f, _)| *f == family).map(|(_, t)| t);
                let eps = table
                    .and_then(|t| t.get(&key))
                    .map(|set| set.values().cloned().collect())
                    .unwrap_or_default();
                let name = ServicePortName {
                    namespace: &key.0,
                    name: &key.1,
                    port: &key.2,
                    protocol: &key.3,
                };
                ports.push((
                    name.to_string(),
                    family,
                    p.port,
                    PortPolicy::for_port(svc, p, family),
                    eps,
                ));
            }
        }
    }
    (ports, ignored)
}

fn view_text(view: &NodeView<'_>) -> ViewText {
    let ports = view
        .ports()
        .map(|p| {
            (
                p.name.to_string(),
                p.family,
                p.port,
                p.policy,
                p.endpoints.iter().map(proxy_text).collect(),
            )
        })
        .collect();
    let ignored = view
        .ignored
        .iter()
        .map(|i| (i.slice.clone(), i.what.clone(), i.why.to_owned()))
        .collect();
    (ports, ignored)
}

/// A small, messy cluster for the proxy side: Services over two namespaces and three names
/// (some dual-stack, some repeated), slices with duplicate names and addresses, unnamed and
/// zero ports, bad and other-family addresses, missing labels.
fn proxy_cluster() -> impl Strategy<Value = (Vec<Service>, Vec<EndpointSlice>)> {
    let service = (0usize..2, 0usize..3, 0usize..3, prop::collection::vec((0usize..3, 0usize..2), 1..3), 0usize..4).prop_map(
        |(ns, name, fam, ports, ips)| {
            let families: &[&str] = [&["IPv4"][..], &["IPv6"], &["IPv4", "IPv6"]][fam];
            // Cluster IPs: one per family, none (not allocated), headless, or only the first.
            let cluster_ips: Vec<&str> = match ips {
                0 => families.iter().map(|f| if *f == "IPv4" { "10.96.0.1" } else { "fd00::1" }).collect(),
                1 => vec![""],
                2 => vec!["None"],
                _ => families.iter().take(1).map(|f| if *f == "IPv4" { "10.96.0.1" } else { "fd00::1" }).collect(),
            };
            serde_json::from_value::<Service>(serde_json::json!({
                "metadata": {"name": format!("s{name}"), "namespace": format!("ns{ns}")},
                "spec": {"ipFamilies": families, "clusterIP": cluster_ips[0], "clusterIPs": cluster_ips, "ports": ports.iter().enumerate().map(|(i, (n, proto))| serde_json::json!({
                    "name": (["", "http", "dns"][*n]), "port": 80 + i, "protocol": (["TCP", "UDP"][*proto])
                })).collect::<Vec<_>>()}
            }))
            .unwrap()
        },
    );
    let endpoint = (0usize..7, 0usize..3, 0usize..4, 0usize..3, 0usize..4).prop_map(|(addr, node, cond, zone, hint)| {
        let address = ["10.0.0.1", "10.0.0.010", "10.0.0.2", "fd00::1", "fd00::a", "bogus", "10.0.0.10"][addr];
        let (ready, serving, terminating) = [(None, None, None), (Some(true), Some(true), Some(false)),
            (Some(false), Some(true), Some(true)), (Some(false), Some(false), Some(false))][cond];
        let mut hints = serde_json::json!({});
        if hint & 1 == 1 {
            hints["forZones"] = serde_json::json!([{"name": (["a", "b", "c"][zone])}, {"name": "a"}]);
        }
        if hint & 2 == 2 {
            hints["forNodes"] = serde_json::json!([{"name": (["me", "n1", "n2"][node])}]);
        }
        serde_json::json!({"addresses": if addr == 5 && node == 2 { serde_json::json!([]) } else { serde_json::json!([address]) },
            "conditions": {"ready": ready, "serving": serving, "terminating": terminating},
            "nodeName": (["me", "n1", "n2"][node]), "zone": (["a", "b", "c"][zone]), "hints": hints})
    });
    let slice = (0usize..2, 0usize..4, 0usize..3, 0usize..2, prop::collection::vec((0usize..4, 0usize..2, 0usize..3), 0..3),
        prop::collection::vec(endpoint, 0..5)).prop_map(|(ns, name, svc, fam, ports, eps)| {
        let mut labels = serde_json::json!({"kubernetes.io/service-name": format!("s{svc}")});
        if name == 3 && svc == 2 {
            labels = serde_json::json!({});
        }
        serde_json::from_value::<EndpointSlice>(serde_json::json!({
            "metadata": {"name": format!("e{name}"), "namespace": format!("ns{ns}"), "labels": labels},
            "addressType": (["IPv4", "IPv6"][fam]),
            "ports": ports.iter().map(|(n, proto, num)| serde_json::json!({
                "name": ([Some(""), Some("http"), Some("dns"), None][*n]), "protocol": (["TCP", "UDP"][*proto]),
                "port": ([8080, 53, 0][*num])})).collect::<Vec<_>>(),
            "endpoints": eps
        }))
        .unwrap()
    });
    (
        prop::collection::vec(service, 0..5),
        prop::collection::vec(slice, 0..10),
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The indexed view equals the obvious per-family, per-port reading of every slice.
    #[test]
    fn node_view_matches_a_plain_reading((services, slices) in proxy_cluster(), node_hints in any::<bool>()) {
        let view = NodeView::build(&services, &slices, NodeTopology::new("me", "a"), SelectOptions { node_hints });
        prop_assert_eq!(view_text(&view), reference_view(&services, &slices, "me", node_hints));
        // One index serves every node.
        let index = SliceIndex::build(&slices);
        for node in ["me", "n1"] {
            let shared = NodeView::from_index(&index, &services, NodeTopology::new(node, "b"), SelectOptions { node_hints });
            prop_assert_eq!(view_text(&shared), reference_view(&services, &slices, node, node_hints));
        }
    }
}
