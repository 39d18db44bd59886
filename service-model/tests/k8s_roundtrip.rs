//! svcnet → k8s-openapi → svcnet round trips (feature `k8s-openapi`):
//! - every object of the conformance inputs (`testdata/conformance/*/`) and of the example
//!   cluster (`examples/clusters/`) comes back unchanged;
//! - generated objects of every kind come back unchanged, or the conversion names the field
//!   k8s-openapi cannot hold (a time that is not RFC 3339, an unset required field). Services,
//!   EndpointSlices and NetworkPolicies come from the strategies the validation properties use
//!   (`tests/strategies/`), the other kinds from strategies here.
#![cfg(feature = "k8s-openapi")]

mod strategies;

use std::fmt::Debug;
use std::path::{Path, PathBuf};

use k8s_openapi::api::{core::v1 as core, discovery::v1 as discovery, networking::v1 as networking};
use proptest::collection::{btree_map, vec};
use proptest::option;
use proptest::prelude::*;
use serde::de::DeserializeOwned;
use serde_json::Value;
use strategies::networkpolicy::policy;
use strategies::service::{any_service, endpoint_slice, metadata};
use svcnet_model::k8s::ConversionError;
use svcnet_model::*;

/// `x` → `K` → back, compared with `x` whose `apiVersion`/`kind` are those of `K`.
fn round_trip<T, K>(mut x: T, set_type: impl Fn(&mut T)) -> Result<(), String>
where
    T: Clone + Debug + PartialEq + TryInto<K, Error = ConversionError> + From<K>,
{
    let k: K = x.clone().try_into().map_err(|e: ConversionError| e.to_string())?;
    let back = T::from(k);
    set_type(&mut x);
    if back == x {
        Ok(())
    } else {
        Err(format!("changed:\n  was {x:?}\n  got {back:?}"))
    }
}

macro_rules! set_type {
    ($av:expr, $kind:expr) => {
        |o: &mut _| {
            let o: &mut _ = o;
            set_type_meta(o, $av, $kind)
        }
    };
}

trait TypeMeta {
    fn type_meta(&mut self) -> (&mut Option<String>, &mut Option<String>);
}

macro_rules! type_meta_impl {
    ($($t:ty),*) => {$(
        impl TypeMeta for $t {
            fn type_meta(&mut self) -> (&mut Option<String>, &mut Option<String>) {
                (&mut self.api_version, &mut self.kind)
            }
        }
    )*};
}
type_meta_impl!(
    Service,
    Endpoints,
    Pod,
    Node,
    EndpointSlice,
    NetworkPolicy,
    ServiceCidr,
    IpAddress
);

fn set_type_meta<T: TypeMeta>(o: &mut T, api_version: &str, kind: &str) {
    let (a, k) = o.type_meta();
    *a = Some(api_version.into());
    *k = Some(kind.into());
}

fn parse<T: DeserializeOwned>(v: &Value) -> T {
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{e}: {v}"))
}

/// One object through its k8s-openapi type; the kind it was, or an error naming the object.
fn object_round_trip(v: &Value) -> Result<&'static str, String> {
    let kind = v.get("kind").and_then(Value::as_str).unwrap_or("");
    let r = match kind {
        "Service" => round_trip::<Service, core::Service>(parse(v), set_type!("v1", "Service")),
        "Endpoints" => round_trip::<Endpoints, core::Endpoints>(parse(v), set_type!("v1", "Endpoints")),
        "Pod" => round_trip::<Pod, core::Pod>(parse(v), set_type!("v1", "Pod")),
        "Node" => round_trip::<Node, core::Node>(parse(v), set_type!("v1", "Node")),
        "EndpointSlice" => round_trip::<EndpointSlice, discovery::EndpointSlice>(
            parse(v),
            set_type!("discovery.k8s.io/v1", "EndpointSlice"),
        ),
        "NetworkPolicy" => round_trip::<NetworkPolicy, networking::NetworkPolicy>(
            parse(v),
            set_type!("networking.k8s.io/v1", "NetworkPolicy"),
        ),
        "ServiceCIDR" => round_trip::<ServiceCidr, networking::ServiceCIDR>(
            parse(v),
            set_type!("networking.k8s.io/v1", "ServiceCIDR"),
        ),
        "IPAddress" => round_trip::<IpAddress, networking::IPAddress>(
            parse(v),
            set_type!("networking.k8s.io/v1", "IPAddress"),
        ),
        other => return Err(format!("unexpected kind {other:?}")),
    };
    r.map(|()| KNOWN_KINDS.iter().copied().find(|k| *k == kind).unwrap_or("?"))
}

fn objects_of(doc: &Value, out: &mut Vec<Value>) {
    if doc.get("kind").and_then(Value::as_str) == Some("List") {
        for item in doc.get("items").and_then(Value::as_array).into_iter().flatten() {
            objects_of(item, out);
        }
    } else if doc.is_object() {
        out.push(doc.clone());
    }
}

fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == ext))
        .collect();
    v.sort();
    v
}

#[test]
fn every_conformance_input_and_example_object_survives() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut objects: Vec<(String, Value)> = Vec::new();
    let areas = root.join("testdata/conformance");
    for area in std::fs::read_dir(&areas)
        .expect("conformance dir")
        .filter_map(Result::ok)
    {
        if area.file_name() == "allocators" || !area.path().is_dir() {
            continue; // operation scripts, not Kubernetes objects; or a file (CORRECTIONS)
        }
        for f in files(&area.path(), "json") {
            let case: Value =
                serde_json::from_str(&std::fs::read_to_string(&f).expect("read")).expect("json");
            for key in ["input", "old"] {
                let mut found = Vec::new();
                if let Some(doc) = case.get(key) {
                    objects_of(doc, &mut found);
                }
                objects.extend(found.into_iter().map(|o| (format!("{}:{key}", f.display()), o)));
            }
        }
    }
    for f in files(&root.join("examples/clusters"), "yaml") {
        let docs: Vec<Value> =
            serde_saphyr::from_multiple(&std::fs::read_to_string(&f).expect("read")).expect("yaml");
        for d in docs {
            let mut found = Vec::new();
            objects_of(&d, &mut found);
            objects.extend(found.into_iter().map(|o| (f.display().to_string(), o)));
        }
    }
    let mut failures = Vec::new();
    let mut kinds = std::collections::BTreeMap::new();
    for (from, o) in &objects {
        match object_round_trip(o) {
            Ok(kind) => *kinds.entry(kind).or_insert(0) += 1,
            Err(e) => failures.push(format!("{from} {}: {e}", o["metadata"]["name"])),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} objects:\n{}",
        failures.len(),
        objects.len(),
        failures.join("\n")
    );
    // The inputs hold every kind k8s-openapi has a type for but IPAddress (tested below).
    for kind in [
        "Service",
        "EndpointSlice",
        "Endpoints",
        "ServiceCIDR",
        "Pod",
        "Node",
        "NetworkPolicy",
    ] {
        assert!(
            kinds.get(kind).copied().unwrap_or(0) > 0,
            "no {kind} in the inputs: {kinds:?}"
        );
    }
    assert!(objects.len() > 3000, "{} objects", objects.len());
}

#[test]
fn ip_address_round_trips_and_names_what_k8s_openapi_requires() {
    let v: Value = serde_json::json!({"apiVersion": "networking.k8s.io/v1", "kind": "IPAddress",
        "metadata": {"name": "10.96.0.10", "labels": {"ipaddress.kubernetes.io/ip-family": "IPv4"},
            "creationTimestamp": "2025-01-02T03:04:05Z"},
        "spec": {"parentRef": {"group": "", "resource": "services", "namespace": "shop", "name": "web"}}});
    assert_eq!(object_round_trip(&v), Ok("IPAddress"));
    let mut no_name: IpAddress = parse(&v);
    if let Some(r) = no_name.spec.as_mut().and_then(|s| s.parent_ref.as_mut()) {
        r.name = None;
    }
    let e = networking::IPAddress::try_from(no_name).unwrap_err();
    assert_eq!(e.field(), "spec.parentRef.name");
    let e = networking::IPAddress::try_from(IpAddress::default()).unwrap_err();
    assert_eq!(e.field(), "spec");
}

#[test]
fn conversion_errors_name_the_field() {
    let svc = Service {
        api_version: Some("v2".into()),
        ..Default::default()
    };
    let e = core::Service::try_from(svc).unwrap_err();
    assert_eq!(
        (e.field(), e.to_string().contains("\"v2\"")),
        ("apiVersion", true)
    );

    let slice = EndpointSlice {
        kind: Some("Endpoints".into()),
        ..Default::default()
    };
    assert_eq!(
        discovery::EndpointSlice::try_from(slice).unwrap_err().field(),
        "kind"
    );

    let mut pod = Pod::default();
    pod.metadata.deletion_timestamp = Some("soon".into());
    assert_eq!(
        core::Pod::try_from(pod).unwrap_err().field(),
        "metadata.deletionTimestamp"
    );

    let cidr = ServiceCidr {
        status: Some(ServiceCidrStatus {
            conditions: Some(vec![
                Condition {
                    last_transition_time: Some("2025-01-01T00:00:00Z".into()),
                    ..Default::default()
                },
                Condition::default(),
            ]),
        }),
        ..Default::default()
    };
    let e = networking::ServiceCIDR::try_from(cidr).unwrap_err();
    assert_eq!(e.field(), "status.conditions[1].lastTransitionTime");
    assert!(matches!(e, ConversionError::Missing { .. }));

    let node = Node {
        status: Some(NodeStatus {
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                last_probe_time: Some("2025-01-01T00:00:00Z".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert_eq!(
        core::Node::try_from(node).unwrap_err().field(),
        "status.conditions[0].lastProbeTime"
    );
}

#[test]
fn k8s_openapi_fields_svcnet_does_not_model_are_dropped_not_misread() {
    let pod = core::Pod {
        metadata: Default::default(),
        spec: Some(core::PodSpec {
            containers: vec![],
            service_account_name: Some("robot".into()),
            node_name: Some("n1".into()),
            ..Default::default()
        }),
        status: None,
    };
    let p = Pod::from(pod);
    assert_eq!(p.api_version.as_deref(), Some("v1"));
    assert_eq!(p.kind.as_deref(), Some("Pod"));
    let spec = p.spec.expect("spec");
    assert_eq!((spec.node_name.as_deref(), spec.containers), (Some("n1"), None));
}

// ---- generated objects ----

fn time_text() -> BoxedStrategy<String> {
    prop_oneof![
        4 => (2000u32..2100, 1u32..13, 1u32..29, 0u32..24, 0u32..60, 0u32..60).prop_map(
            |(y, mo, d, h, mi, s)| format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
        ),
        1 => "[a-z0-9:-]{0,8}",
    ]
    .boxed()
}

fn word() -> BoxedStrategy<String> {
    prop_oneof!["[a-z0-9.-]{0,10}", any::<String>()].boxed()
}

fn type_meta(
    api_version: &'static str,
    kind: &'static str,
) -> impl Strategy<Value = (Option<String>, Option<String>)> {
    (
        option::of(prop_oneof![4 => Just(api_version.to_owned()), 1 => Just("v9".to_owned())]),
        option::of(prop_oneof![4 => Just(kind.to_owned()), 1 => Just("Other".to_owned())]),
    )
}

fn object_reference() -> impl Strategy<Value = ObjectReference> {
    vec(option::of("[a-z]{0,6}"), 7).prop_map(|v| {
        let mut it = v.into_iter().map(|s| s.map(CompactString::from));
        let mut next = || it.next().flatten();
        ObjectReference {
            kind: next(),
            namespace: next(),
            name: next(),
            uid: next(),
            api_version: next(),
            resource_version: next(),
            field_path: next(),
        }
    })
}

fn condition() -> impl Strategy<Value = Condition> {
    (
        word(),
        word(),
        option::of(any::<i64>()),
        option::of(time_text()),
        word(),
        word(),
    )
        .prop_map(
            |(type_, status, observed_generation, last_transition_time, reason, message)| Condition {
                type_,
                status,
                observed_generation,
                last_transition_time,
                reason,
                message,
            },
        )
}

fn pod_condition() -> impl Strategy<Value = PodCondition> {
    (
        word(),
        word(),
        option::of(time_text()),
        option::of(time_text()),
        option::of(word()),
        option::of(word()),
    )
        .prop_map(
            |(type_, status, last_probe_time, last_transition_time, reason, message)| PodCondition {
                type_,
                status,
                last_probe_time,
                last_transition_time,
                reason,
                message,
            },
        )
}

fn endpoints() -> impl Strategy<Value = Endpoints> {
    let address = (
        word(),
        option::of(word()),
        option::of(word()),
        option::of(object_reference()),
    )
        .prop_map(|(ip, hostname, node_name, target_ref)| EndpointAddress {
            ip,
            hostname,
            node_name,
            target_ref,
        })
        .boxed();
    let port = (
        option::of(word()),
        any::<i32>(),
        option::of(word()),
        option::of(word()),
    )
        .prop_map(|(name, port, protocol, app_protocol)| CoreEndpointPort {
            name,
            port,
            protocol,
            app_protocol,
        });
    let subset = (
        option::of(vec(address.clone(), 0..2)),
        option::of(vec(address, 0..2)),
        option::of(vec(port, 0..2)),
    )
        .prop_map(|(addresses, not_ready_addresses, ports)| EndpointSubset {
            addresses,
            not_ready_addresses,
            ports,
        });
    (
        type_meta("v1", "Endpoints"),
        metadata(),
        option::of(vec(subset, 0..2)),
    )
        .prop_map(|((api_version, kind), metadata, subsets)| Endpoints {
            api_version,
            kind,
            metadata,
            subsets,
        })
}

fn quantities() -> impl Strategy<Value = Option<std::collections::BTreeMap<String, Quantity>>> {
    option::of(btree_map("[a-z]{1,6}", word().prop_map(Quantity), 0..3))
}

fn pod() -> impl Strategy<Value = Pod> {
    let container_port = (
        option::of(word()),
        any::<i32>(),
        option::of(word()),
        option::of(any::<i32>()),
        option::of(word()),
    )
        .prop_map(
            |(name, container_port, protocol, host_port, host_ip)| ContainerPort {
                name,
                container_port,
                protocol,
                host_port,
                host_ip,
            },
        );
    let container = (
        word(),
        option::of(word()),
        option::of(word()),
        option::of(vec(container_port, 0..2)),
        option::of(vec(
            (word(), option::of(word())).prop_map(|(name, value)| EnvVar { name, value }),
            0..2,
        )),
        option::of(
            (quantities(), quantities())
                .prop_map(|(requests, limits)| ResourceRequirements { requests, limits }),
        ),
    )
        .prop_map(|(name, image, restart_policy, ports, env, resources)| Container {
            name,
            image,
            restart_policy,
            ports,
            env,
            resources,
        })
        .boxed();
    let spec = (
        (option::of(word()), option::of(word()), option::of(word())),
        (
            option::of(any::<bool>()),
            option::of(any::<bool>()),
            option::of(any::<bool>()),
        ),
        // k8s-openapi requires `containers`: absent and empty are one there (svcnet gets absent).
        prop_oneof![Just(None), vec(container.clone(), 1..3).prop_map(Some)],
        option::of(vec(container, 0..2)),
    )
        .prop_map(
            |(
                (node_name, hostname, subdomain),
                (host_network, set_hostname_as_fqdn, enable_service_links),
                containers,
                init_containers,
            )| PodSpec {
                node_name,
                hostname,
                subdomain,
                host_network,
                set_hostname_as_fqdn,
                enable_service_links,
                containers,
                init_containers,
            },
        );
    let status = (
        option::of(word()),
        option::of(word()),
        option::of(vec(word().prop_map(|ip| PodIp { ip }), 0..3)),
        option::of(word()),
        option::of(vec(pod_condition(), 0..3)),
    )
        .prop_map(|(phase, pod_ip, pod_ips, host_ip, conditions)| PodStatus {
            phase,
            pod_ip,
            pod_ips,
            host_ip,
            conditions,
        });
    (
        type_meta("v1", "Pod"),
        metadata(),
        option::of(spec),
        option::of(status),
    )
        .prop_map(|((api_version, kind), metadata, spec, status)| Pod {
            api_version,
            kind,
            metadata,
            spec,
            status,
        })
}

fn node() -> impl Strategy<Value = Node> {
    let taint =
        (word(), option::of(word()), word()).prop_map(|(key, value, effect)| Taint { key, value, effect });
    let spec = (
        option::of(word()),
        option::of(vec(word(), 0..2)),
        option::of(any::<bool>()),
        option::of(word()),
        option::of(vec(taint, 0..2)),
    )
        .prop_map(
            |(pod_cidr, pod_cidrs, unschedulable, provider_id, taints)| NodeSpec {
                pod_cidr,
                pod_cidrs,
                unschedulable,
                provider_id,
                taints,
            },
        );
    let address = (word(), word()).prop_map(|(type_, address)| NodeAddress { type_, address });
    let status = (
        quantities(),
        quantities(),
        option::of(vec(pod_condition(), 0..3)),
        option::of(vec(address, 0..2)),
    )
        .prop_map(|(allocatable, capacity, conditions, addresses)| NodeStatus {
            allocatable,
            capacity,
            conditions,
            addresses,
        });
    (
        type_meta("v1", "Node"),
        metadata(),
        option::of(spec),
        option::of(status),
    )
        .prop_map(|((api_version, kind), metadata, spec, status)| Node {
            api_version,
            kind,
            metadata,
            spec,
            status,
        })
}

fn service_cidr() -> impl Strategy<Value = ServiceCidr> {
    (
        type_meta("networking.k8s.io/v1", "ServiceCIDR"),
        metadata(),
        option::of(option::of(vec(word(), 0..3)).prop_map(|cidrs| ServiceCidrSpec { cidrs })),
        option::of(
            option::of(vec(condition(), 0..2)).prop_map(|conditions| ServiceCidrStatus { conditions }),
        ),
    )
        .prop_map(|((api_version, kind), metadata, spec, status)| ServiceCidr {
            api_version,
            kind,
            metadata,
            spec,
            status,
        })
}

fn ip_address() -> impl Strategy<Value = IpAddress> {
    let parent = (
        option::of(word()),
        option::of(word()),
        option::of(word()),
        option::of(word()),
    )
        .prop_map(|(group, resource, namespace, name)| ParentReference {
            group,
            resource,
            namespace,
            name,
        });
    (
        type_meta("networking.k8s.io/v1", "IPAddress"),
        metadata(),
        option::of(option::of(parent).prop_map(|parent_ref| IpAddressSpec { parent_ref })),
    )
        .prop_map(|((api_version, kind), metadata, spec)| IpAddress {
            api_version,
            kind,
            metadata,
            spec,
        })
}

/// True when `text` is a time k8s-openapi holds and gives back as it was.
fn canonical_time(text: &str) -> bool {
    text.parse::<k8s_openapi::jiff::Timestamp>()
        .is_ok_and(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string() == text)
}

/// The value of a field path in an object's JSON (`status.conditions[1].lastTransitionTime`).
fn lookup<'a>(v: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = v;
    for part in path.split('.') {
        let (name, index) = match part.split_once('[') {
            Some((n, i)) => (n, i.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        cur = cur.get(name)?;
        if let Some(i) = index {
            cur = cur.get(i)?;
        }
    }
    Some(cur)
}

/// The property: the object comes back as it was, or the conversion refuses it naming a field
/// whose value k8s-openapi cannot hold (and every time it accepted was canonical).
fn check<T, K>(x: T, set_type: impl Fn(&mut T)) -> Result<(), TestCaseError>
where
    T: Clone + Debug + PartialEq + serde::Serialize + TryInto<K, Error = ConversionError> + From<K>,
{
    let json = serde_json::to_value(&x).map_err(|e| TestCaseError::fail(e.to_string()))?;
    match x.clone().try_into() {
        Ok(k) => {
            let mut want = x;
            set_type(&mut want);
            let got = T::from(k);
            // Accepted times that were not in Kubernetes' form come back normalised.
            if got != want {
                let text = serde_json::to_string(&json).unwrap_or_default();
                let odd_time = text
                    .split('"')
                    .filter(|s| s.len() >= 10 && s.as_bytes()[4] == b'-' && s.contains('T'))
                    .any(|s| !canonical_time(s));
                prop_assert!(odd_time, "changed:\n  was {want:?}\n  got {got:?}");
            }
        }
        Err(e) => {
            let field = e.field().to_owned();
            let value = lookup(&json, &field);
            match &e {
                ConversionError::Missing { .. } => prop_assert!(value.is_none(), "{e}: but it is {value:?}"),
                ConversionError::Time { value: text, .. } => {
                    prop_assert_eq!(value.and_then(Value::as_str), Some(text.as_str()));
                    prop_assert!(text.parse::<k8s_openapi::jiff::Timestamp>().is_err(), "{e}");
                }
                ConversionError::TypeMeta {
                    value: text,
                    expected,
                    ..
                } => {
                    prop_assert_eq!(value.and_then(Value::as_str), Some(text.as_str()));
                    prop_assert_ne!(text, expected);
                }
                ConversionError::NoSuchField { value: text, .. } => {
                    prop_assert_eq!(value.and_then(Value::as_str), Some(text.as_str()));
                }
                other => prop_assert!(false, "unexpected {other}"),
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn generated_services_survive(x in any_service()) {
        check::<_, core::Service>(x, set_type!("v1", "Service"))?;
    }

    #[test]
    fn generated_endpoint_slices_survive(x in endpoint_slice()) {
        check::<_, discovery::EndpointSlice>(x, set_type!("discovery.k8s.io/v1", "EndpointSlice"))?;
    }

    #[test]
    fn generated_endpoints_survive(x in endpoints()) {
        check::<_, core::Endpoints>(x, set_type!("v1", "Endpoints"))?;
    }

    #[test]
    fn generated_pods_survive(x in pod()) {
        check::<_, core::Pod>(x, set_type!("v1", "Pod"))?;
    }

    #[test]
    fn generated_nodes_survive(x in node()) {
        check::<_, core::Node>(x, set_type!("v1", "Node"))?;
    }

    #[test]
    fn generated_network_policies_survive(x in policy()) {
        check::<_, networking::NetworkPolicy>(x, set_type!("networking.k8s.io/v1", "NetworkPolicy"))?;
    }

    #[test]
    fn generated_service_cidrs_survive(x in service_cidr()) {
        check::<_, networking::ServiceCIDR>(x, set_type!("networking.k8s.io/v1", "ServiceCIDR"))?;
    }

    #[test]
    fn generated_ip_addresses_survive(x in ip_address()) {
        check::<_, networking::IPAddress>(x, set_type!("networking.k8s.io/v1", "IPAddress"))?;
    }
}
