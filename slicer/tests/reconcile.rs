//! Scenario tests of the reconciler, the incremental path, mirroring and legacy Endpoints.

mod support;

use support::*;
use svcnet_model::{
    CoreEndpointPort, EndpointAddress, EndpointHints, EndpointSubset, Endpoints, ForZone, IntOrString, Pod,
};
use svcnet_slicer::{
    MirrorEvent, MirrorOptions, NodeZones, Options, SeededNames, SequentialNames, ServiceSlices, SliceError,
    legacy_endpoints, mirror, reconcile,
};

fn nodes() -> NodeZones {
    let mut n = NodeZones::new();
    n.insert("n1", Some("zone-a"));
    n.insert("n2", Some("zone-b"));
    n
}

fn v4(i: usize) -> Vec<String> {
    vec![format!("10.{}.{}.{}", i / 65536, (i / 256) % 256, i % 256)]
}

fn pods(n: usize) -> Vec<Pod> {
    (0..n)
        .map(|i| {
            pod(
                &format!("p{i}"),
                &v4(i),
                if i % 2 == 0 { "n1" } else { "n2" },
                true,
                None,
            )
        })
        .collect()
}

fn counts<S: std::ops::Deref<Target = svcnet_model::EndpointSlice>>(slices: &[S]) -> Vec<usize> {
    let mut c: Vec<usize> = slices.iter().map(|s| s.endpoints().len()).collect();
    c.sort_unstable();
    c
}

#[test]
fn from_scratch_then_steady() {
    let svc = service(&["IPv4"], IntOrString::Int(8080));
    let ps = pods(250);
    let mut state = ServiceSlices::new(&svc, [], Options::default()).unwrap();
    let plan = state.sync(&ps, &nodes(), &mut SeededNames::new(1));
    assert_eq!(
        (plan.create.len(), plan.update.len(), plan.delete.len()),
        (3, 0, 0)
    );
    assert_eq!(counts(&state.slices().collect::<Vec<_>>()), [50, 100, 100]);
    let s = &plan.create[0];
    assert_eq!(s.metadata.generate_name.as_deref(), Some("web-"));
    assert!(s.metadata.name.as_deref().unwrap().starts_with("web-"));
    assert_eq!(s.metadata.label("kubernetes.io/service-name"), Some("web"));
    assert_eq!(
        s.metadata.label("endpointslice.kubernetes.io/managed-by"),
        Some("endpointslice-controller.k8s.io")
    );
    assert_eq!(s.metadata.label("service.kubernetes.io/headless"), None);
    let owner = &s.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!((owner.kind.as_str(), owner.uid.as_str()), ("Service", "uid-web"));
    assert_eq!(s.ports()[0].port, Some(8080));
    assert_eq!(s.ports()[0].name.as_deref(), Some("http"));
    assert_eq!(s.endpoints()[0].zone.as_deref(), Some("zone-a"));
    // Same input, same names; reconciling the result again writes nothing.
    let again = reconcile(
        &svc,
        &ps,
        &nodes(),
        [],
        &Options::default(),
        &mut SeededNames::new(1),
    )
    .unwrap();
    assert_eq!(again.create, plan.create);
    assert!(state.sync(&ps, &nodes(), &mut SeededNames::new(1)).is_empty());
}

#[test]
fn one_pod_changes_touch_one_slice() {
    let svc = service(&["IPv4"], IntOrString::Int(8080));
    let mut ps = pods(250);
    let mut state = ServiceSlices::new(&svc, [], Options::default()).unwrap();
    state.sync(&ps, &nodes(), &mut SeededNames::new(1));
    let mut names = SeededNames::new(2);

    // Readiness flips: the slice holding the pod is rewritten, nothing else.
    let mut p = ps[7].clone();
    p.status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
    let plan = state.update_pod(&p, &nodes(), &mut names);
    assert_eq!(
        (plan.create.len(), plan.update.len(), plan.delete.len()),
        (0, 1, 0)
    );
    let ep = plan.update[0]
        .endpoints()
        .iter()
        .find(|e| e.addresses[..] == v4(7))
        .unwrap();
    assert_eq!(ep.conditions.ready, Some(false));
    ps[7] = p;

    // A deleted pod leaves its slice; a new one goes to the fullest slice with room.
    let plan = state.delete_pod("ns", "p3", &mut names);
    assert_eq!(
        (plan.create.len(), plan.update.len(), plan.delete.len()),
        (0, 1, 0)
    );
    ps.retain(|p| p.metadata.name.as_deref() != Some("p3"));
    let newcomer = pod("new", &v4(9999), "n1", true, None);
    let plan = state.update_pod(&newcomer, &nodes(), &mut names);
    assert_eq!(
        (plan.create.len(), plan.update.len(), plan.delete.len()),
        (0, 1, 0)
    );
    assert_eq!(plan.update[0].endpoints().len(), 100);
    ps.push(newcomer);
    assert!(state.sync(&ps, &nodes(), &mut names).is_empty());
}

#[test]
fn a_pod_given_twice_counts_once_with_its_last_state() {
    let svc = service(&["IPv4"], IntOrString::Int(8080));
    let mut ps = pods(250);
    let mut again = ps[7].clone();
    again.status.as_mut().unwrap().conditions = None;
    ps.push(again);
    ps.push(ps[120].clone());
    let opts = Options::default();
    let plan = reconcile(&svc, &ps, &nodes(), [], &opts, &mut SequentialNames::new()).unwrap();
    assert_eq!(counts(&plan.create), [50, 100, 100]);
    let first = &plan.create[0].endpoints()[7];
    assert_eq!(first.target_ref.as_ref().unwrap().name.as_deref(), Some("p7"));
    assert_eq!(
        first.conditions.ready,
        Some(false),
        "the later copy replaces it in place"
    );
    // The same through an existing slice (the matching path).
    let existing = owned(&plan.create);
    let replan = reconcile(&svc, &ps, &nodes(), existing, &opts, &mut SequentialNames::new()).unwrap();
    assert!(replan.is_empty());
}

#[test]
fn a_pod_name_given_twice_with_other_addresses_is_two_endpoints() {
    // Identity is addresses, hostname and target together: the same name with another IP is
    // another endpoint, in plans and in synced state alike.
    let svc = service(&["IPv4"], IntOrString::Int(8080));
    let mut ps = pods(150);
    let mut moved = ps[3].clone();
    moved.status.as_mut().unwrap().pod_ips = Some(vec![svcnet_model::PodIp {
        ip: v4(9000).remove(0),
    }]);
    moved.status.as_mut().unwrap().pod_ip = None;
    ps.push(moved);
    ps.push(ps[140].clone());
    let opts = Options::default();
    let plan = reconcile(&svc, &ps, &nodes(), [], &opts, &mut SequentialNames::new()).unwrap();
    assert_eq!(counts(&plan.create), [51, 100]);
    let p3: Vec<_> = plan
        .create
        .iter()
        .flat_map(|s| s.endpoints())
        .filter(|e| e.target_ref.as_ref().unwrap().name.as_deref() == Some("p3"))
        .map(|e| e.addresses.clone())
        .collect();
    assert_eq!(p3.len(), 2);
    let mut state = ServiceSlices::new(&svc, [], opts).unwrap();
    let synced = state.sync(&ps, &nodes(), &mut SequentialNames::new());
    assert_eq!(counts(&synced.create), [51, 100]);
}

#[test]
fn last_pod_gone_leaves_placeholder() {
    let svc = service(&["IPv4"], IntOrString::Int(8080));
    let ps = pods(1);
    let mut state = ServiceSlices::new(&svc, [], Options::default()).unwrap();
    state.sync(&ps, &nodes(), &mut SeededNames::new(1));
    let plan = state.delete_pod("ns", "p0", &mut SeededNames::new(2));
    assert_eq!(
        (plan.create.len(), plan.update.len(), plan.delete.len()),
        (0, 1, 0)
    );
    assert!(plan.update[0].ports().is_empty());
    assert!(plan.update[0].endpoints().is_empty());
    assert!(state.sync([], &nodes(), &mut SeededNames::new(3)).is_empty());
    // And the first pod back reuses the placeholder.
    let plan = state.update_pod(&ps[0], &nodes(), &mut SeededNames::new(4));
    assert_eq!(
        (plan.create.len(), plan.update.len(), plan.delete.len()),
        (0, 1, 0)
    );
    assert_eq!(plan.update[0].endpoints().len(), 1);
}

#[test]
fn named_ports_group_pods() {
    let svc = service(&["IPv4"], IntOrString::String("http".into()));
    let mut ps: Vec<Pod> = (0..300)
        .map(|i| pod(&format!("p{i}"), &v4(i), "n1", true, Some(8080 + (i % 5) as i32)))
        .collect();
    // A pod without the named port is published with no ports, in a slice of its own.
    ps.push(pod("bare", &v4(1000), "n1", true, None));
    let plan = reconcile(
        &svc,
        &ps,
        &nodes(),
        [],
        &Options::default(),
        &mut SequentialNames::new(),
    )
    .unwrap();
    assert_eq!(counts(&plan.create), [1, 60, 60, 60, 60, 60]);
    let bare = plan.create.iter().find(|s| s.endpoints().len() == 1).unwrap();
    assert!(bare.ports().is_empty());
}

#[test]
fn dual_stack_and_missing_nodes() {
    let mut svc = service(&["IPv4", "IPv6"], IntOrString::Int(80));
    let ps = vec![
        pod("a", &["10.0.0.1".into(), "fd00::1".into()], "n1", true, None),
        pod("b", &["10.0.0.2".into()], "gone", true, None),
    ];
    let plan = reconcile(
        &svc,
        &ps,
        &nodes(),
        [],
        &Options::default(),
        &mut SequentialNames::new(),
    )
    .unwrap();
    let fams: Vec<&str> = plan.create.iter().map(|s| s.address_type.as_str()).collect();
    assert_eq!(fams, ["IPv4", "IPv6"]);
    assert_eq!(counts(&plan.create), [1, 1]);
    let msg = plan.error_message().unwrap();
    assert_eq!(msg, "skipping Pod b for Service ns/web: Node gone Not Found");

    svc.spec_mut().publish_not_ready_addresses = Some(true);
    let plan = reconcile(
        &svc,
        &ps,
        &nodes(),
        [],
        &Options::default(),
        &mut SequentialNames::new(),
    )
    .unwrap();
    assert_eq!(plan.error_message(), None);
    let v4 = plan.create.iter().find(|s| s.address_type == "IPv4").unwrap();
    assert_eq!(v4.endpoints().len(), 2);
    assert!(v4.endpoints().iter().any(|e| e.zone.is_none()));
}

#[test]
fn labels_reserved_and_user() {
    let mut svc = service(&["IPv4"], IntOrString::Int(80));
    let ps = pods(150);
    let mut state = ServiceSlices::new(&svc, [], Options::default()).unwrap();
    state.sync(&ps, &nodes(), &mut SeededNames::new(1));
    let existing = current(&state);

    svc.metadata.labels = Some(labels(&[("kubernetes.io/service-name", "other")]));
    let plan = reconcile(
        &svc,
        &ps,
        &nodes(),
        existing.clone(),
        &Options::default(),
        &mut SeededNames::new(1),
    )
    .unwrap();
    assert!(plan.is_empty(), "reserved labels write nothing");

    svc.metadata.labels = Some(labels(&[("team", "a")]));
    let plan = reconcile(
        &svc,
        &ps,
        &nodes(),
        existing,
        &Options::default(),
        &mut SeededNames::new(1),
    )
    .unwrap();
    assert_eq!(plan.update.len(), 2);
    assert!(plan.update.iter().all(|s| s.metadata.label("team") == Some("a")));
}

#[test]
fn deleting_service_creates_nothing_and_trigger_time_is_stamped() {
    let mut svc = service(&["IPv4"], IntOrString::Int(80));
    let opts = Options {
        trigger_time: Some("2024-05-01T10:00:00.123456789Z".into()),
        ..Options::default()
    };
    let plan = reconcile(&svc, &pods(3), &nodes(), [], &opts, &mut SequentialNames::new()).unwrap();
    assert_eq!(
        plan.create[0]
            .metadata
            .annotation("endpoints.kubernetes.io/last-change-trigger-time"),
        Some("2024-05-01T10:00:00.123456789Z")
    );
    svc.metadata.deletion_timestamp = Some("2024-05-01T10:00:00Z".into());
    let plan = reconcile(&svc, &pods(3), &nodes(), [], &opts, &mut SequentialNames::new()).unwrap();
    assert!(plan.create.is_empty());
}

#[test]
fn hints_removed_unless_asked_for() {
    let mut svc = service(&["IPv4"], IntOrString::Int(80));
    let ps = pods(3);
    let mut first = reconcile(
        &svc,
        &ps,
        &nodes(),
        [],
        &Options::default(),
        &mut SequentialNames::new(),
    )
    .unwrap();
    std::sync::Arc::make_mut(&mut first.create[0])
        .endpoints
        .as_mut()
        .unwrap()[0]
        .hints = Some(Box::new(EndpointHints {
        for_zones: Some(vec![ForZone {
            name: "zone-a".into(),
        }]),
        for_nodes: None,
    }));
    let existing = owned(&first.create);
    let plan = reconcile(
        &svc,
        &ps,
        &nodes(),
        existing.clone(),
        &Options::default(),
        &mut SequentialNames::new(),
    )
    .unwrap();
    assert_eq!(plan.update.len(), 1);
    assert!(plan.update[0].endpoints().iter().all(|e| e.hints.is_none()));
    svc.spec_mut().traffic_distribution = Some("PreferClose".into());
    let plan = reconcile(
        &svc,
        &ps,
        &nodes(),
        existing,
        &Options::default(),
        &mut SequentialNames::new(),
    )
    .unwrap();
    assert!(plan.is_empty());
}

#[test]
fn refusals() {
    let svc = service(&["IPv4"], IntOrString::Int(80));
    assert_eq!(
        Options::with_max(1001).unwrap_err(),
        SliceError::MaxEndpointsOutOfRange { value: 1001 }
    );
    let mut no_sel = svc.clone();
    no_sel.spec_mut().selector = None;
    assert!(matches!(
        ServiceSlices::new(&no_sel, [], Options::default()),
        Err(SliceError::NoSelector { .. })
    ));
}

fn endpoints_obj(addrs: &[&str]) -> Endpoints {
    let mut e = Endpoints::default();
    e.metadata.name = Some("web".into());
    e.metadata.namespace = Some("ns".into());
    e.subsets = Some(vec![EndpointSubset {
        addresses: Some(
            addrs
                .iter()
                .map(|ip| EndpointAddress {
                    ip: ip.to_string(),
                    ..Default::default()
                })
                .collect(),
        ),
        not_ready_addresses: None,
        ports: Some(vec![CoreEndpointPort {
            name: Some("http".into()),
            port: 80,
            protocol: Some("TCP".into()),
            ..Default::default()
        }]),
    }]);
    e
}

#[test]
fn mirroring_rules() {
    let mut svc = service(&["IPv4"], IntOrString::Int(80));
    svc.spec_mut().selector = None;
    let mut names = SequentialNames::new();
    let opts = MirrorOptions::default();

    let eps = endpoints_obj(&["10.0.0.1", "fd00::0:1", "bogus"]);
    let m = mirror(Some(&svc), Some(&eps), &[], &opts, &mut names);
    assert_eq!(m.plan.create.len(), 2);
    let v6 = m.plan.create.iter().find(|s| s.address_type == "IPv6").unwrap();
    assert_eq!(v6.endpoints()[0].addresses[..], ["fd00::1"], "re-stringified");
    assert_eq!(m.events, [MirrorEvent::InvalidIpAddress { skipped: 1 }]);
    let existing = owned(&m.plan.create);
    assert!(
        mirror(Some(&svc), Some(&eps), &existing, &opts, &mut names)
            .plan
            .is_empty()
    );

    // A label on the Endpoints is mirrored: the slices are rewritten in place.
    let mut labelled = eps.clone();
    labelled.metadata.labels = Some(labels(&[("team", "a")]));
    let m = mirror(Some(&svc), Some(&labelled), &existing, &opts, &mut names);
    assert_eq!((m.plan.create.len(), m.plan.update.len()), (0, 2));

    // Skip-mirror, a selector, or no Endpoints: mirrored slices go away.
    let mut skip = eps.clone();
    skip.metadata.labels = Some(labels(&[("endpointslice.kubernetes.io/skip-mirror", "true")]));
    assert_eq!(
        mirror(Some(&svc), Some(&skip), &existing, &opts, &mut names)
            .plan
            .delete
            .len(),
        2
    );
    assert_eq!(
        mirror(Some(&svc), None, &existing, &opts, &mut names)
            .plan
            .delete
            .len(),
        2
    );

    // Over the per-subset maximum: capped, with an event.
    let many: Vec<String> = (0..12).map(|i| format!("10.0.1.{i}")).collect();
    let refs: Vec<&str> = many.iter().map(String::as_str).collect();
    let small = MirrorOptions {
        max_endpoints_per_subset: 10,
    };
    let m = mirror(Some(&svc), Some(&endpoints_obj(&refs)), &[], &small, &mut names);
    assert_eq!(m.plan.create[0].endpoints().len(), 10);
    assert_eq!(
        m.events,
        [MirrorEvent::TooManyAddressesToMirror { max: 10, skipped: 2 }]
    );
}

#[test]
fn legacy_endpoints_object() {
    let svc = service(&["IPv4"], IntOrString::Int(8080));
    let mut ps = pods(4);
    ps[1].status.as_mut().unwrap().conditions.as_mut().unwrap()[0].status = "False".into();
    ps[2].metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
    let e = legacy_endpoints(&svc, &ps).unwrap();
    let subsets = e.subsets.unwrap();
    assert_eq!(subsets.len(), 1);
    assert_eq!(subsets[0].addresses.as_ref().unwrap().len(), 2);
    assert_eq!(subsets[0].not_ready_addresses.as_ref().unwrap().len(), 1);
    assert_eq!(subsets[0].ports.as_ref().unwrap()[0].port, 8080);
    assert!(e.metadata.annotations.is_none());

    let e = legacy_endpoints(&svc, &pods(1001)).unwrap();
    let n: usize = e
        .subsets()
        .iter()
        .map(|s| s.addresses.as_ref().map_or(0, Vec::len))
        .sum();
    assert_eq!(n, 1000);
    assert_eq!(
        e.metadata.annotation("endpoints.kubernetes.io/over-capacity"),
        Some("truncated")
    );
    let mut headless = svc.clone();
    headless.spec_mut().cluster_ip = Some("None".into());
    let e = legacy_endpoints(&headless, &pods(1)).unwrap();
    assert_eq!(e.metadata.label("service.kubernetes.io/headless"), Some(""));
}

/// Issue 18, items 1 and 2: what kube-controller-manager v1.37.2 writes that svcnet copied.
#[test]
fn v1_37_canonical_addresses_and_hash_ordered_ports() {
    // Service ports `metrics` (6379→8443) then `db` (443→59355): the controller writes
    // `[metrics, db]`, the order `NewPortMapKey`'s hash sort leaves them in.
    let mut svc = service(&["IPv4", "IPv6"], IntOrString::Int(8443));
    svc.spec_mut().ports = Some(vec![
        svcnet_model::ServicePort {
            name: Some("metrics".into()),
            protocol: Some("TCP".into()),
            port: 6379,
            target_port: Some(IntOrString::Int(8443)),
            ..Default::default()
        },
        svcnet_model::ServicePort {
            name: Some("db".into()),
            protocol: Some("TCP".into()),
            port: 443,
            target_port: Some(IntOrString::Int(59355)),
            ..Default::default()
        },
    ]);
    // The API server keeps Pod IPs as written: upper-case IPv6 reaches the controller.
    let p = pod(
        "web-0",
        &["10.0.0.7".to_string(), "FD00:10:244::A".to_string()],
        "n1",
        true,
        None,
    );
    let plan = reconcile(
        &svc,
        std::slice::from_ref(&p),
        &nodes(),
        [],
        &Options::default(),
        &mut SequentialNames::new(),
    )
    .unwrap();
    assert_eq!(plan.create.len(), 2);
    for s in &plan.create {
        let names: Vec<&str> = s.ports().iter().filter_map(|p| p.name.as_deref()).collect();
        assert_eq!(names, ["metrics", "db"], "{}", s.address_type);
    }
    let v6 = plan.create.iter().find(|s| s.address_type == "IPv6").unwrap();
    assert_eq!(v6.endpoints()[0].addresses[..], ["fd00:10:244::a"]);

    // An existing slice stored as `[db, metrics]` is written back as `[metrics, db]` when it
    // changes: the controller sorts the cached slice's ports in place while keying it.
    let mut existing: Vec<_> = owned(&plan.create);
    for s in &mut existing {
        s.ports.as_mut().unwrap().reverse();
    }
    let mut not_ready = p.clone();
    not_ready.status.as_mut().unwrap().conditions = None;
    let plan = reconcile(
        &svc,
        std::slice::from_ref(&not_ready),
        &nodes(),
        existing.clone(),
        &Options::default(),
        &mut SequentialNames::new(),
    )
    .unwrap();
    assert_eq!(plan.update.len(), 2);
    for s in &plan.update {
        let names: Vec<&str> = s.ports().iter().filter_map(|p| p.name.as_deref()).collect();
        assert_eq!(names, ["metrics", "db"]);
    }
    // Unchanged, the reversed slices are the same group: nothing is written.
    let plan = reconcile(
        &svc,
        std::slice::from_ref(&p),
        &nodes(),
        existing,
        &Options::default(),
        &mut SequentialNames::new(),
    )
    .unwrap();
    assert!(plan.is_empty(), "{plan:?}");
}

/// Issue 18, item 3: a port-less Endpoints subset is mirrored into a `ports: null` slice.
#[test]
fn mirroring_keeps_portless_subsets() {
    let mut svc = service(&["IPv4"], IntOrString::Int(80));
    svc.spec_mut().selector = None;
    let mut eps = endpoints_obj(&[]);
    eps.subsets = Some(vec![EndpointSubset {
        addresses: Some(vec![EndpointAddress {
            ip: "10.20.0.1".into(),
            ..Default::default()
        }]),
        ..Default::default()
    }]);
    let mut names = SequentialNames::new();
    let m = mirror(Some(&svc), Some(&eps), &[], &MirrorOptions::default(), &mut names);
    assert_eq!(m.plan.create.len(), 1);
    let s = &m.plan.create[0];
    assert_eq!(s.address_type, "IPv4");
    assert_eq!(s.ports, None);
    assert_eq!(s.endpoints()[0].addresses[..], ["10.20.0.1"]);
    let json = serde_json::to_value(&**s).unwrap();
    assert_eq!(json["ports"], serde_json::Value::Null);
    // Mirrored again, the slice matches: no writes.
    let existing = owned(&m.plan.create);
    let again = mirror(
        Some(&svc),
        Some(&eps),
        &existing,
        &MirrorOptions::default(),
        &mut names,
    );
    assert!(again.plan.is_empty(), "{again:?}");
}

/// Found by the `slicer` fuzz target: a slice the full reconcile left alone holds an endpoint
/// in a form the controller never writes (here a stray `deprecatedTopology` and empty hints),
/// which the reconcile does not compare. When another Pod's change rewrites that slice, the
/// full reconcile writes every endpoint it keeps in its desired form; the one-Pod path used to
/// keep the stray form and so planned a different update.
#[test]
fn one_pod_rewrite_writes_kept_endpoints_in_their_desired_form() {
    let svc = service(&["IPv4"], IntOrString::Int(8080));
    let mut ps = pods(3);
    let mut first = ServiceSlices::new(&svc, [], Options::default()).unwrap();
    drop(first.sync(&ps, &nodes(), &mut SeededNames::new(1)));
    let mut existing = current(&first);
    for ep in existing[0].endpoints.iter_mut().flatten().take(2) {
        ep.deprecated_topology = Some(Box::new([("k".to_string(), "v".to_string())].into()));
        ep.hints = Some(Box::default());
    }
    let mut state = ServiceSlices::new(&svc, existing, Options::default()).unwrap();
    drop(state.sync(&ps, &nodes(), &mut SeededNames::new(1)));
    assert!(
        current(&state)[0]
            .endpoints()
            .iter()
            .any(|e| e.deprecated_topology.is_some()),
        "the full reconcile keeps the slice as it is"
    );
    let mut full = state.clone();

    // Pod p2 stops being ready: its slice is rewritten.
    ps[2] = pod("p2", &v4(2), "n1", false, None);
    let inc = state.update_pod(&ps[2], &nodes(), &mut SeededNames::new(2));
    let reference = full.sync(&ps, &nodes(), &mut SeededNames::new(2));
    assert_eq!(inc.update, reference.update);
    assert_eq!(inc.update.len(), 1);
    assert!(
        inc.update[0]
            .endpoints()
            .iter()
            .all(|e| e.deprecated_topology.is_none() && e.hints.is_none())
    );
    assert_eq!(current(&state), current(&full));
}

/// The hash key of the name-keyed maps changes no plan: from scratch, and again over the
/// slices it wrote with some Pods gone (slices found by name, a name taken by another plan).
#[test]
fn plans_are_the_same_under_another_hash_key() {
    let svc = service(&["IPv4"], IntOrString::Int(8080));
    let key = svcnet_model::hash::KeyedState::new([0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210]);
    let keyed = Options {
        hash_key: key,
        ..Options::default()
    };
    let keyed_nodes = {
        let mut n = NodeZones::with_hash_key(key);
        n.insert("n1", Some("zone-a"));
        n.insert("n2", Some("zone-b"));
        n
    };
    let plan = |nodes: &NodeZones, opts: &Options, ps: &[Pod], existing: Vec<svcnet_model::EndpointSlice>| {
        reconcile(&svc, ps, nodes, existing, opts, &mut SeededNames::new(7)).unwrap()
    };
    let ps = pods(250);
    let first = plan(&nodes(), &Options::default(), &ps, Vec::new());
    assert_eq!(plan(&keyed_nodes, &keyed, &ps, Vec::new()), first);
    let existing: Vec<_> = first.create.iter().map(|s| (**s).clone()).collect();
    let fewer = &ps[..130];
    let second = plan(&nodes(), &Options::default(), fewer, existing.clone());
    assert!(!second.is_empty());
    assert_eq!(plan(&keyed_nodes, &keyed, fewer, existing), second);
}
