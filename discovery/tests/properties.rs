//! Properties of the record set, the incremental deltas and the environment variables.

use std::collections::BTreeSet;
use std::net::IpAddr;

use proptest::prelude::*;
use serde_json::{Value, json};
use svcnet_discovery::{
    Answer, Change, DnsOptions, DnsZone, PodMode, RecordData, RecordSet, RecordType, service_env,
};
use svcnet_model::{EndpointSlice, Pod, Service};

const NAMESPACES: &[&str] = &["a", "b"];
const SERVICES: &[&str] = &["web", "db", "cache", "api"];
const HOSTS: &[&str] = &["h0", "h1", "dup"];
const PORT_NAMES: &[&str] = &["", "http", "grpc", "HTTP"];

fn port() -> impl Strategy<Value = Value> {
    (
        prop::sample::select(PORT_NAMES),
        prop::sample::select(&["TCP", "UDP"][..]),
        1i32..5,
    )
        .prop_map(|(n, proto, p)| {
            let mut v = json!({"protocol": proto, "port": 8000 + p});
            if !n.is_empty() {
                v["name"] = json!(n);
            }
            v
        })
}

fn service() -> impl Strategy<Value = Service> {
    (
        prop::sample::select(NAMESPACES),
        prop::sample::select(SERVICES),
        0u8..5,
        1u8..40,
        prop::collection::vec(port(), 0..3),
    )
        .prop_map(|(ns, name, shape, n, ports)| {
            let spec = match shape {
                0 => json!({"clusterIP": format!("10.96.0.{n}")}),
                1 => json!({"clusterIP": format!("10.96.1.{n}"), "clusterIPs": [format!("10.96.1.{n}"), format!("fd00::{n}")]}),
                2 => json!({"clusterIP": "None"}),
                3 => json!({"type": "ExternalName", "externalName": format!("ext{n}.example.com")}),
                _ => json!({"clusterIP": "None", "clusterIPs": ["None"]}),
            };
            let mut spec = spec;
            spec["ports"] = Value::Array(ports);
            serde_json::from_value(json!({"metadata": {"name": name, "namespace": ns}, "spec": spec})).unwrap()
        })
}

fn endpoint(v6: bool) -> impl Strategy<Value = Value> {
    (
        1u8..30,
        prop::option::of(any::<bool>()),
        prop::option::of(prop::sample::select(HOSTS)),
    )
        .prop_map(move |(n, ready, host)| {
            let addr = if v6 {
                format!("fd00:1::{n:x}")
            } else {
                format!("10.1.0.{n}")
            };
            let mut e = json!({"addresses": [addr], "conditions": {}});
            if let Some(r) = ready {
                e["conditions"]["ready"] = json!(r);
            }
            if let Some(h) = host {
                e["hostname"] = json!(h);
            }
            e
        })
}

fn slice() -> impl Strategy<Value = EndpointSlice> {
    (
        prop::sample::select(NAMESPACES),
        prop::sample::select(SERVICES),
        0u8..3,
        any::<bool>(),
        prop::collection::vec(port(), 0..3),
    )
        .prop_flat_map(|(ns, svc, i, v6, ports)| {
            prop::collection::vec(endpoint(v6), 0..5).prop_map(move |eps| {
                serde_json::from_value(json!({
                    "metadata": {"name": format!("{svc}-{i}"), "namespace": ns,
                                 "labels": {"kubernetes.io/service-name": svc}},
                    "addressType": if v6 { "IPv6" } else { "IPv4" },
                    "endpoints": eps, "ports": ports,
                }))
                .unwrap()
            })
        })
}

fn pod() -> impl Strategy<Value = Pod> {
    (prop::sample::select(NAMESPACES), 0u8..6, 1u8..30, any::<bool>()).prop_map(|(ns, i, n, running)| {
        serde_json::from_value(json!({
            "metadata": {"name": format!("p{i}"), "namespace": ns},
            "status": {"phase": if running { "Running" } else { "Succeeded" }, "podIP": format!("10.1.0.{n}")},
        }))
        .unwrap()
    })
}

fn options() -> impl Strategy<Value = DnsOptions> {
    (
        any::<bool>(),
        any::<bool>(),
        prop::sample::select(&[PodMode::Disabled, PodMode::Verified][..]),
    )
        .prop_map(|(pod_names, ignore, pods)| DnsOptions {
            endpoint_pod_names: pod_names,
            ignore_empty_service: ignore,
            pods,
            ..DnsOptions::default()
        })
}

struct Cluster {
    options: DnsOptions,
    services: Vec<Service>,
    slices: Vec<EndpointSlice>,
    pods: Vec<Pod>,
}

impl std::fmt::Debug for Cluster {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = serde_json::to_string(&json!({"services": self.services, "slices": self.slices})).unwrap();
        write!(f, "{s}")
    }
}

fn cluster() -> impl Strategy<Value = Cluster> {
    (
        options(),
        prop::collection::vec(service(), 0..6),
        prop::collection::vec(slice(), 0..6),
        prop::collection::vec(pod(), 0..3),
    )
        .prop_map(|(options, services, slices, pods)| Cluster {
            options,
            services,
            slices,
            pods,
        })
}

fn zone(c: &Cluster) -> DnsZone {
    DnsZone::from_objects(c.options.clone(), &c.services, &c.slices, &c.pods).unwrap()
}

/// The objects the zone keeps: the last one of each namespace/name.
fn last_by_key<T: Clone>(items: &[T], key: impl Fn(&T) -> (String, String)) -> Vec<T> {
    let mut seen = BTreeSet::new();
    let mut out: Vec<T> = items
        .iter()
        .rev()
        .filter(|i| seen.insert(key(i)))
        .cloned()
        .collect();
    out.reverse();
    out
}

fn addresses(set: &RecordSet, name: &str) -> BTreeSet<IpAddr> {
    set.at(name)
        .iter()
        .filter_map(|r| match r.data() {
            RecordData::A(ip) => Some(IpAddr::V4(*ip)),
            RecordData::Aaaa(ip) => Some(IpAddr::V6(*ip)),
            _ => None,
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Every ready endpoint of a headless Service is in its A/AAAA answer, and no other address.
    #[test]
    fn headless_answers_are_exactly_the_ready_endpoints(c in cluster()) {
        let set = zone(&c).records();
        let services = last_by_key(&c.services, |s| (s.metadata.namespace().into(), s.metadata.name().into()));
        let slices = last_by_key(&c.slices, |s| (s.metadata.namespace().into(), s.metadata.name().into()));
        for svc in services.iter().filter(|s| s.is_headless() && s.type_() != "ExternalName") {
            let (ns, name) = (svc.metadata.namespace(), svc.metadata.name());
            let want: BTreeSet<IpAddr> = slices
                .iter()
                .filter(|s| s.metadata.namespace() == ns && s.service_name() == Some(name))
                .flat_map(|s| s.endpoints())
                .filter(|e| e.conditions.ready != Some(false))
                .flat_map(|e| e.addresses.iter().map(|a| a.parse::<IpAddr>().unwrap()))
                .collect();
            let got = addresses(&set, &format!("{name}.{ns}.svc.cluster.local."));
            prop_assert_eq!(got, want);
        }
    }

    /// SRV targets always resolve to A/AAAA records in the same set.
    #[test]
    fn srv_targets_resolve(c in cluster()) {
        let set = zone(&c).records();
        for r in set.iter() {
            if let RecordData::Srv(srv) = r.data() {
                prop_assert!(srv.priority == 0 && (1..=100).contains(&srv.weight));
                prop_assert!(!addresses(&set, &srv.target).is_empty(), "{} -> {}", r.name(), srv.target);
            }
        }
    }

    /// The record set is sorted, has no repeated (name, type, data) and is lower case.
    #[test]
    fn record_sets_are_sorted_and_unique(c in cluster()) {
        let set = zone(&c).records();
        for w in set.records().windows(2) {
            prop_assert!(w[0] < w[1]);
            prop_assert!((w[0].name(), w[0].record_type(), w[0].data_text()) != (w[1].name(), w[1].record_type(), w[1].data_text()));
        }
        for r in set.iter() {
            prop_assert!(r.name().ends_with('.') && r.name() == r.name().to_ascii_lowercase());
        }
    }

    /// The delta of one EndpointSlice (or Service) change equals the difference of the full
    /// record sets before and after it, and patches the old set into the new one.
    #[test]
    fn deltas_match_full_recomputation(
        c in cluster(), s in slice(), svc in service(), p in pod(), delete in any::<bool>(),
    ) {
        let mut z = zone(&c);
        let before = z.records();
        let d = if delete {
            z.apply(Change::DeleteEndpointSlice { namespace: s.metadata.namespace(), name: s.metadata.name() })
        } else {
            z.apply(Change::EndpointSlice(&s))
        };
        let after = z.records();
        prop_assert_eq!(&d, &before.diff(&after));
        let mut patched = before.clone();
        patched.apply(&d);
        prop_assert_eq!(&patched, &after);
        let d = z.apply(Change::Service(&svc));
        let last = z.records();
        prop_assert_eq!(&d, &after.diff(&last));
        // Pods: an update, then a deletion, then back.
        let mut pz = z.clone();
        let d = pz.apply(Change::Pod(&p));
        let with_pod = pz.records();
        prop_assert_eq!(&d, &last.diff(&with_pod));
        let d = pz.apply(Change::DeletePod { namespace: p.metadata.namespace(), name: p.metadata.name() });
        prop_assert_eq!(&d, &with_pod.diff(&pz.records()));
        // Building from scratch gives the same zone as the changes.
        let mut slices = c.slices.clone();
        if delete {
            slices.retain(|x| (x.metadata.namespace(), x.metadata.name()) != (s.metadata.namespace(), s.metadata.name()));
        } else {
            slices.push(s.clone());
        }
        let mut services = c.services.clone();
        services.push(svc.clone());
        let fresh = DnsZone::from_objects(c.options.clone(), &services, &slices, &c.pods).unwrap().records();
        prop_assert_eq!(fresh, last);
    }

    /// Every name in the set answers its records through a query.
    #[test]
    fn lookups_agree_with_the_record_set(c in cluster()) {
        let z = zone(&c);
        let set = z.records();
        for r in set.iter() {
            let want: Vec<_> = set.at(r.name()).iter().filter(|x| x.record_type() == r.record_type()).cloned().collect();
            prop_assert_eq!(z.lookup(r.name(), r.record_type()), Answer::Records(want));
        }
    }

    /// Environment variable names are valid shell identifiers for valid Service and port names.
    #[test]
    fn env_names_are_shell_identifiers(
        names in prop::collection::vec("[a-z]([-a-z0-9]{0,10}[a-z0-9])?", 1..4),
        ports in prop::collection::vec(("[a-z0-9]([-a-z0-9]{0,6}[a-z0-9])?", 1i32..65536, prop::sample::select(&["TCP", "UDP", "SCTP", ""][..])), 1..4),
        ip in prop::sample::select(&["10.0.0.1", "2001:db8::1"][..]),
        links in any::<bool>(),
    ) {
        let services: Vec<Service> = names
            .iter()
            .map(|n| {
                let ports: Vec<Value> = ports
                    .iter()
                    .map(|(pn, p, proto)| json!({"name": pn, "port": p, "protocol": proto}))
                    .collect();
                serde_json::from_value(json!({"metadata": {"name": n, "namespace": "ns"},
                    "spec": {"clusterIP": ip, "ports": ports}}))
                .unwrap()
            })
            .collect();
        let vars = service_env(&services, "ns", links);
        prop_assert_eq!(vars.is_empty(), !links);
        for v in &vars {
            let mut chars = v.name.chars();
            let first = chars.next().unwrap_or('0');
            prop_assert!(first.is_ascii_alphabetic() || first == '_', "{}", v.name);
            prop_assert!(chars.all(|c| c.is_ascii_alphanumeric() || c == '_'), "{}", v.name);
        }
        let names: BTreeSet<&str> = vars.iter().map(|v| v.name.as_str()).collect();
        prop_assert_eq!(names.len(), vars.len());
    }

    /// Arbitrary text in addresses, names and domains never panics.
    #[test]
    fn any_text_is_a_value(addr in ".{0,20}", name in ".{0,20}", domain in ".{0,20}", ty in ".{0,6}") {
        let svc: Service = serde_json::from_value(json!({"metadata": {"name": name, "namespace": "x"},
            "spec": {"clusterIP": addr, "externalName": name, "ports": [{"name": name, "port": 1}]}})).unwrap();
        let sl: EndpointSlice = serde_json::from_value(json!({"metadata": {"name": "s", "namespace": "x",
            "labels": {"kubernetes.io/service-name": name}}, "addressType": "IPv4",
            "endpoints": [{"addresses": [addr], "hostname": name}]})).unwrap();
        let opts = DnsOptions { pods: PodMode::Insecure, ..DnsOptions::new(domain) };
        if let Ok(z) = DnsZone::from_objects(opts, std::slice::from_ref(&svc), &[sl], &[]) {
            let _ = z.records();
            let _ = z.lookup(&format!("{name}.{addr}"), RecordType::parse(&ty).unwrap_or(RecordType::A));
        }
        let _ = service_env(&[svc], "x", true);
    }
}
