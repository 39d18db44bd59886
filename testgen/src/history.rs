//! Histories: a first cluster and a few later states, each a few changes away from the one
//! before (Services added, removed or changed; endpoints added, removed or changing condition).

use crate::cluster::{Alloc, Cluster, Family, endpoint, service, slice};
use crate::rng::Rng;

/// The states (oldest first), whether each but the last is aged, and what the history covers.
pub fn history(rng: &mut Rng, families: &[Family]) -> (Vec<Cluster>, Vec<bool>, Vec<String>) {
    let mut alloc = Alloc::default();
    let big = rng.chance(2);
    let n = rng.range(1, 8);
    let mut first = Cluster {
        families: families.to_vec(),
        services: (0..n)
            .map(|_| service(rng, &mut alloc, families, false))
            .collect(),
    };
    let mut covers = vec![format!("{n} Services")];
    if big {
        first.services.push(service(rng, &mut alloc, families, true));
        covers.push("more than 1000 endpoints (large-cluster mode)".into());
    }
    let steps = rng.weighted(&[40, 30, 20, 10]);
    if steps > 0 {
        covers.push(format!("{steps} partial syncs"));
    }
    let mut states = vec![first];
    let mut aged = Vec::new();
    for _ in 0..steps {
        let mut next = states.last().expect("a state").clone();
        for _ in 0..rng.range(1, 3) {
            mutate(rng, &mut alloc, &mut next);
        }
        aged.push(rng.chance(20));
        states.push(next);
    }
    (states, aged, covers)
}

/// One change to the cluster.
fn mutate(rng: &mut Rng, alloc: &mut Alloc, c: &mut Cluster) {
    let fams = c.families.clone();
    if c.services.is_empty() {
        c.services.push(service(rng, alloc, &fams, false));
        return;
    }
    let i = rng.below(c.services.len());
    match rng.weighted(&[10, 10, 25, 15, 15, 10, 5, 5, 5]) {
        0 => c.services.push(service(rng, alloc, &fams, false)),
        1 => {
            c.services.remove(i);
        }
        2 => {
            // An endpoint changes condition.
            let s = &mut c.services[i];
            if let Some(sl) = pick_slice(rng, s.slices.len()).map(|k| &mut s.slices[k])
                && !sl.endpoints.is_empty()
            {
                let k = rng.below(sl.endpoints.len());
                let e = &mut sl.endpoints[k];
                match rng.below(3) {
                    0 => e.ready = Some(!e.ready.unwrap_or(true)),
                    1 => {
                        e.ready = Some(false);
                        e.terminating = Some(true);
                        e.serving = Some(rng.chance(50));
                    }
                    _ => {
                        e.ready = Some(true);
                        e.serving = Some(true);
                        e.terminating = Some(false);
                    }
                }
            }
        }
        3 => {
            // An endpoint goes away.
            let s = &mut c.services[i];
            if let Some(sl) = pick_slice(rng, s.slices.len()).map(|k| &mut s.slices[k])
                && !sl.endpoints.is_empty()
            {
                let k = rng.below(sl.endpoints.len());
                sl.endpoints.remove(k);
            }
        }
        4 => {
            // An endpoint comes.
            let s = &mut c.services[i];
            match pick_slice(rng, s.slices.len()) {
                Some(k) => {
                    let f = s.slices[k].family;
                    let hints = s.slices[k]
                        .endpoints
                        .first()
                        .is_some_and(|e| !e.for_zones.is_empty());
                    let e = endpoint(rng, alloc, f, hints);
                    s.slices[k].endpoints.push(e);
                }
                None if s.kind != crate::cluster::Kind::ExternalName => {
                    let f = s.cluster_ips[0].0;
                    let sl = slice(rng, alloc, s, f, 1);
                    s.slices.push(sl);
                }
                None => {}
            }
        }
        5 => {
            let s = &mut c.services[i];
            s.affinity = match s.affinity {
                Some(_) => None,
                None => Some(10800),
            };
        }
        6 => {
            let s = &mut c.services[i];
            if matches!(s.kind, crate::cluster::Kind::NodePort) {
                s.etp_local = !s.etp_local;
            } else {
                s.itp_local = !s.itp_local;
            }
        }
        7 => {
            // A Service is replaced by a new one with the same name (new addresses).
            let (ns, name) = (c.services[i].namespace.clone(), c.services[i].name.clone());
            let mut s = service(rng, alloc, &fams, false);
            s.namespace = ns;
            s.name = name;
            c.services[i] = s;
        }
        _ => {
            // A slice goes away.
            let s = &mut c.services[i];
            if let Some(k) = pick_slice(rng, s.slices.len()) {
                s.slices.remove(k);
            }
        }
    }
}

fn pick_slice(rng: &mut Rng, n: usize) -> Option<usize> {
    (n > 0).then(|| rng.below(n))
}
