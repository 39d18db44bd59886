//! Structured Services, Pods, Nodes and EndpointSlices → slicer reconcile, the one-Pod
//! incremental path, mirroring, topology hints and per-node selection. Besides "no panic":
//! every endpoint that should be published is in exactly one slice, nothing else is, no slice
//! is over the limit, a second sync plans nothing, and an incremental one-Pod change plans
//! exactly what a full reconcile plans.
#![no_main]

use std::collections::BTreeSet;

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use serde_json::json;
use svcnet_fuzz::{nodes as gen_nodes, pick, pod as gen_pod, service as gen_service};
use svcnet_model::{EndpointSlice, Endpoints, Pod, Service};
use svcnet_slicer::{
    EndpointId, MirrorOptions, NodeZones, Options, Plan, PortKey, SeededNames, ServiceSlices, address_types,
    mirror, pod_endpoint_ports, pod_is_endpoint_candidate, pod_to_endpoint,
};
use svcnet_topology::{
    HintsOptions, NodeTopology, NodeView, SelectOptions, SliceSet, ZoneCapacity, reconcile_hints,
};

fn apply(before: &[EndpointSlice], plan: &Plan) -> Vec<EndpointSlice> {
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

fn current(state: &ServiceSlices) -> Vec<EndpointSlice> {
    state.slices().cloned().collect()
}

fn expected(svc: &Service, pods: &[Pod], nodes: &NodeZones) -> BTreeSet<(String, PortKey, EndpointId)> {
    let pnr = svc.spec().publish_not_ready_addresses == Some(true);
    let mut out = BTreeSet::new();
    for p in pods {
        let selected = p
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("app"))
            .is_some_and(|v| v == "web");
        if !selected || !pod_is_endpoint_candidate(p, true) {
            continue;
        }
        if !nodes.contains(p.spec().node_name()) && !pnr {
            continue;
        }
        let key = PortKey::of(&pod_endpoint_ports(svc, p));
        for f in address_types(svc) {
            if let Some(ep) = pod_to_endpoint(p, svc, nodes.zone(p.spec().node_name()), f) {
                out.insert((f.address_type().to_owned(), key.clone(), EndpointId::of(&ep)));
            }
        }
    }
    out
}

fn published(slices: &[EndpointSlice]) -> Vec<(String, PortKey, EndpointId)> {
    slices
        .iter()
        .flat_map(|s| {
            s.endpoints()
                .iter()
                .map(move |e| (s.address_type.clone(), PortKey::of(s.ports()), EndpointId::of(e)))
        })
        .collect()
}

/// Damages existing slices the way a cluster can (as the slicer's proptests do).
fn perturb(slices: &mut Vec<EndpointSlice>, bits: u8, max: usize) {
    let Some(first) = slices.first().cloned() else {
        return;
    };
    if bits & 1 != 0 {
        let mut foreign = first.clone();
        foreign.metadata.name = Some("foreign".into());
        if let Some(o) = foreign
            .metadata
            .owner_references
            .as_mut()
            .and_then(|o| o.first_mut())
        {
            o.uid = "other".into();
        }
        slices.push(foreign);
    }
    if bits & 2 != 0 {
        let mut fqdn = first.clone();
        fqdn.metadata.name = Some("fqdn".into());
        fqdn.address_type = "FQDN".into();
        slices.push(fqdn);
    }
    let s = &mut slices[0];
    let eps = s.endpoints.get_or_insert_with(Vec::new);
    if bits & 4 != 0 && !eps.is_empty() && eps.len() < max {
        eps.push(eps[0].clone());
    }
    if bits & 8 != 0 && eps.len() < max {
        eps.push(svcnet_model::Endpoint {
            addresses: svcnet_model::smallvec!["192.0.2.1".into()],
            ..Default::default()
        });
    }
    if bits & 16 != 0 && !eps.is_empty() {
        eps[0].hints = Some(Box::default());
    }
    if bits & 32 != 0 {
        s.metadata.labels = Some([("stray".to_string(), "x".to_string())].into());
    }
}

fn pods(u: &mut Unstructured<'_>, from: usize) -> Result<Vec<Pod>> {
    let n = u.int_in_range(0..=30)?;
    (0..n).map(|i| gen_pod(u, from + i)).collect()
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let svc = gen_service(u, true)?;
    let node_objs = gen_nodes(u)?;
    let nodes = NodeZones::from_nodes(&node_objs);
    let max = u.int_in_range(1..=12)?;
    let opts = Options {
        max_endpoints_per_slice: max,
        ..Options::default()
    };
    let old_pods = pods(u, 0)?;
    let mut new_pods = pods(u, 0)?;
    let bits: u8 = u.arbitrary()?;
    let mut names = SeededNames::new(u.arbitrary()?);

    // Existing slices: a previous sync over other Pods, then damaged.
    let Ok(mut first) = ServiceSlices::new(&svc, [], opts.clone()) else {
        return Ok(());
    };
    drop(first.sync(&old_pods, &nodes, &mut names));
    let mut before = current(&first);
    perturb(&mut before, bits, max);

    // Full reconcile.
    let mut state = ServiceSlices::new(&svc, before.clone(), opts.clone()).expect("same service");
    let plan = state.sync(&new_pods, &nodes, &mut names);
    let _ = plan.error_message();
    let after = apply(&before, &plan);
    assert_eq!(after, current(&state), "the plan does not lead to the state");
    let want = expected(&svc, &new_pods, &nodes);
    let got = published(&after);
    let got_set: BTreeSet<_> = got.iter().cloned().collect();
    assert_eq!(got.len(), got_set.len(), "an endpoint is published twice");
    if got_set != want {
        let dump = json!({"service": svc, "nodes": node_objs, "max": max, "before": before, "pods": new_pods,
            "missing": format!("{:?}", want.difference(&got_set).collect::<Vec<_>>()),
            "extra": format!("{:?}", got_set.difference(&want).collect::<Vec<_>>())});
        panic!("published endpoints differ from the Pods': {dump}");
    }
    for s in &after {
        assert!(s.endpoints().len() <= max, "slice over the limit");
    }
    assert!(
        state.sync(&new_pods, &nodes, &mut names).is_empty(),
        "second sync plans writes"
    );

    // One Pod changes: incremental equals full.
    let mut full = state.clone();
    let i = u.int_in_range(0..=new_pods.len())?;
    let delete = u.arbitrary::<bool>()?;
    let seed = u.arbitrary()?;
    let inc = if delete && i < new_pods.len() {
        let gone = new_pods.remove(i);
        state.delete_pod("ns", gone.metadata.name(), &mut SeededNames::new(seed))
    } else {
        let p = gen_pod(u, i)?;
        if i < new_pods.len() {
            new_pods[i] = p.clone();
        } else {
            new_pods.push(p.clone());
        }
        state.update_pod(&p, &nodes, &mut SeededNames::new(seed))
    };
    let reference = full.sync(&new_pods, &nodes, &mut SeededNames::new(seed));
    assert_eq!(inc.create, reference.create, "incremental creates differ");
    assert_eq!(inc.update, reference.update, "incremental updates differ");
    assert_eq!(inc.delete, reference.delete, "incremental deletes differ");
    assert_eq!(current(&state), current(&full), "incremental state differs");

    // Topology hints over the planned slices, then every node's selection.
    let cap = ZoneCapacity::from_nodes(&node_objs)
        .unwrap_or_else(|_| ZoneCapacity::from_zone_cpu([("a", 1000), ("b", 2000)]));
    let hint_opts = HintsOptions {
        strict: u.arbitrary()?,
        prefer_same_traffic_distribution: u.arbitrary()?,
        ..HintsOptions::default()
    };
    let populated = u.arbitrary()?;
    let mut hinted = Vec::new();
    for f in address_types(&svc) {
        let at = f.address_type();
        let of = |v: &[std::sync::Arc<EndpointSlice>]| -> Vec<std::sync::Arc<EndpointSlice>> {
            v.iter().filter(|s| s.address_type == at).cloned().collect()
        };
        let touched: BTreeSet<_> = plan.update.iter().map(|s| s.metadata.name.clone()).collect();
        let set = SliceSet {
            to_create: of(&plan.create),
            to_update: of(&plan.update),
            unchanged: before
                .iter()
                .filter(|s| s.address_type == at && !touched.contains(&s.metadata.name))
                .filter(|s| !plan.delete.iter().any(|d| d.metadata.name == s.metadata.name))
                .cloned()
                .map(std::sync::Arc::new)
                .collect(),
        };
        let n_in = set.iter().count();
        let out = reconcile_hints(&svc, at, set, &cap, populated, &hint_opts);
        assert_eq!(out.slices.iter().count(), n_in, "hinting lost or made slices");
        let _ = format!("{:?}", out.decision);
        for e in &out.events {
            let _ = e.message.len();
        }
        hinted.extend(out.slices.iter().cloned());
    }
    let services = [svc.clone()];
    let node_hints = u.arbitrary()?;
    for (name, zone) in [("n1", "a"), ("n2", "b"), ("n3", ""), ("elsewhere", "c")] {
        let view = NodeView::build(
            &services,
            &hinted,
            NodeTopology::new(name, zone),
            SelectOptions { node_hints },
        );
        for (_port, sel) in view.selections() {
            let all = sel.all_reachable();
            for list in [sel.cluster.as_deref(), sel.local.as_deref()]
                .into_iter()
                .flatten()
            {
                for e in list {
                    assert!(
                        all.iter().any(|a| std::ptr::eq(*a, *e)),
                        "a selected endpoint is not reachable"
                    );
                }
            }
        }
    }

    // Mirroring: the same Service without a selector, its Endpoints made from the Pods.
    let mut plain = svc.clone();
    plain.spec_mut().selector = None;
    let mut subsets = Vec::new();
    for chunk in new_pods.chunks(u.int_in_range(1..=8)?) {
        let ips = |ready: bool| {
            chunk
                .iter()
                .filter(|p| p.status.as_ref().and_then(|s| s.pod_ip.as_ref()).is_some())
                .filter(|p| (p.metadata.name().len() % 2 == 0) == ready)
                .map(|p| json!({"ip": p.status.as_ref().unwrap().pod_ip, "nodeName": p.spec().node_name()}))
                .collect::<Vec<_>>()
        };
        subsets.push(json!({
            "addresses": ips(true),
            "notReadyAddresses": ips(false),
            "ports": [{"name": pick(u, &["", "http", "dns"])?, "port": svcnet_fuzz::port_number(u)?,
                       "protocol": pick(u, &["TCP", "UDP", "SCTP", "bogus"])?}],
        }));
    }
    let eps: Endpoints = serde_json::from_value(json!({
        "metadata": {"name": "web", "namespace": "ns"},
        "subsets": subsets,
    }))
    .expect("endpoints json");
    let mopts = MirrorOptions {
        max_endpoints_per_subset: u.int_in_range(1..=20)?,
    };
    let m = mirror(Some(&plain), Some(&eps), &[], &mopts, &mut SeededNames::new(7));
    for s in &m.plan.create {
        assert!(s.endpoints().len() <= 1000, "mirrored slice over the limit");
    }
    let mirrored = apply(&[], &m.plan);
    let again = mirror(
        Some(&plain),
        Some(&eps),
        &mirrored,
        &mopts,
        &mut SeededNames::new(8),
    );
    assert!(
        again.plan.is_empty(),
        "mirroring again plans writes: {:?}",
        again.plan
    );
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
