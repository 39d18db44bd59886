//! The DNS zone built from scratch versus the same zone reached one change at a time (one
//! Service, EndpointSlice or Pod added, replaced or deleted): each delta is the difference of
//! the full record sets around it and patches one into the other, and the zone at the end
//! equals the zone built from the final objects. Every name answers its lookups.
#![no_main]

use std::collections::BTreeMap;

use arbitrary::{Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use svcnet_discovery::{AnswerRules, Change, DnsOptions, PodMode, RecordType, DnsZone};
use svcnet_fuzz::{dns_pod, dns_service, dns_slice, pick, text};
use svcnet_model::{EndpointSlice, Pod, Service};

type Key = (String, String);

fn key(m: &svcnet_model::ObjectMeta) -> Key {
    (m.namespace().to_owned(), m.name().to_owned())
}

fn run(u: &mut Unstructured<'_>) -> Result<()> {
    let options = DnsOptions {
        cluster_domain: text(
            u,
            &[
                "cluster.local",
                "cluster.local.",
                "Example.COM",
                "a",
                ".",
                "",
                "x..y",
            ],
        )?,
        ttl: if u.ratio(1, 8)? { u.arbitrary()? } else { 5 },
        pods: pick(u, &[PodMode::Disabled, PodMode::Verified, PodMode::Insecure])?,
        endpoint_pod_names: u.arbitrary()?,
        ignore_empty_service: u.arbitrary()?,
        answers: pick(u, &[AnswerRules::CoreDns, AnswerRules::Rfc])?,
    };
    let Ok(mut zone) = DnsZone::new(options.clone()) else {
        return Ok(());
    };
    let mut services: BTreeMap<Key, Service> = BTreeMap::new();
    let mut slices: BTreeMap<Key, EndpointSlice> = BTreeMap::new();
    let mut pods: BTreeMap<Key, Pod> = BTreeMap::new();
    let mut records = zone.records();
    let steps = u.int_in_range(1..=24)?;
    for _ in 0..steps {
        let delta = match u.int_in_range(0..=5)? {
            0 => {
                let s = dns_service(u)?;
                services.insert(key(&s.metadata), s.clone());
                zone.apply(Change::Service(&s))
            }
            1 | 2 => {
                let s = dns_slice(u)?;
                slices.insert(key(&s.metadata), s.clone());
                zone.apply(Change::EndpointSlice(&s))
            }
            3 => {
                let p = dns_pod(u)?;
                pods.insert(key(&p.metadata), p.clone());
                zone.apply(Change::Pod(&p))
            }
            4 => {
                let s = dns_slice(u)?;
                let (ns, name) = key(&s.metadata);
                slices.remove(&(ns.clone(), name.clone()));
                zone.apply(Change::DeleteEndpointSlice {
                    namespace: &ns,
                    name: &name,
                })
            }
            _ => {
                if u.arbitrary()? {
                    let s = dns_service(u)?;
                    let (ns, name) = key(&s.metadata);
                    services.remove(&(ns.clone(), name.clone()));
                    zone.apply(Change::DeleteService {
                        namespace: &ns,
                        name: &name,
                    })
                } else {
                    let p = dns_pod(u)?;
                    let (ns, name) = key(&p.metadata);
                    pods.remove(&(ns.clone(), name.clone()));
                    zone.apply(Change::DeletePod {
                        namespace: &ns,
                        name: &name,
                    })
                }
            }
        };
        let after = zone.records();
        assert_eq!(
            delta,
            records.diff(&after),
            "a delta differs from the difference of full sets"
        );
        let mut patched = records.clone();
        patched.apply(&delta);
        assert_eq!(patched, after, "applying the delta does not give the new set");
        records = after;
    }
    let services: Vec<Service> = services.into_values().collect();
    let slices: Vec<EndpointSlice> = slices.into_values().collect();
    let pods: Vec<Pod> = pods.into_values().collect();
    let fresh = DnsZone::from_objects(options, &services, &slices, &pods).expect("options accepted before");
    assert_eq!(
        fresh.records(),
        records,
        "the zone built from scratch differs from the one built by deltas"
    );
    for r in records.iter() {
        for t in [
            RecordType::A,
            RecordType::Aaaa,
            RecordType::Srv,
            RecordType::Ptr,
            RecordType::Cname,
        ] {
            let _ = zone.lookup(r.name(), t);
        }
        let _ = r.data_text();
    }
    let _ = records.to_string();
    Ok(())
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let _ = run(&mut u);
});
