//! `RepackSubsets`: the canonical layout of an `Endpoints` object's subsets.
//!
//! Follows Kubernetes v1.37.2: `pkg/api/v1/endpoints/util.go`.

use indexmap::IndexMap;
use svcnet_model::{CoreEndpointPort, EndpointAddress, EndpointSubset};

/// A port's identity in repacking: name, number, protocol, application protocol.
type PortId = (String, i32, String, Option<String>);

fn port_id(p: &CoreEndpointPort) -> PortId {
    (
        p.name.clone().unwrap_or_default(),
        p.port,
        p.protocol.clone().unwrap_or_default(),
        p.app_protocol.clone(),
    )
}

fn uid(a: &EndpointAddress) -> Option<&str> {
    a.target_ref.as_ref().map(|t| t.uid.as_deref().unwrap_or(""))
}

/// Orders addresses by IP, then by target UID (no target first), as Kubernetes does.
fn address_order(a: &EndpointAddress, b: &EndpointAddress) -> std::cmp::Ordering {
    a.ip.as_bytes()
        .cmp(b.ip.as_bytes())
        .then_with(|| uid(a).cmp(&uid(b)))
}

/// Expands subsets to (address, port) pairs and packs them again so that each subset holds the
/// addresses that serve exactly the same ports: addresses are de-duplicated by IP and target
/// UID, an address not ready on some port is not ready there, addresses sort by IP and UID.
///
/// A subset without ports is not dropped: as in Kubernetes, its addresses are kept under a
/// sentinel port (number -1) that never appears in the output, so they come out in a subset
/// with `ports: None` — or, when exactly the same addresses serve real ports, in that subset.
/// Ports numbered 0 or less are treated like the sentinel. Subsets and their ports come out in
/// a fixed order (Kubernetes orders them by an FNV hash; the content is the same).
pub(crate) fn repack_subsets(subsets: &[EndpointSubset]) -> Vec<EndpointSubset> {
    let sentinel = CoreEndpointPort {
        port: -1,
        ..Default::default()
    };
    let mut addrs: IndexMap<(String, Option<String>), EndpointAddress> = IndexMap::new();
    let mut ports: IndexMap<PortId, (CoreEndpointPort, IndexMap<usize, bool>)> = IndexMap::new();
    for s in subsets {
        let subset_ports = match s.ports.as_deref() {
            Some(ps) if !ps.is_empty() => ps,
            _ => std::slice::from_ref(&sentinel),
        };
        for p in subset_ports {
            let lists = [
                (s.addresses.as_deref(), true),
                (s.not_ready_addresses.as_deref(), false),
            ];
            for (list, ready) in lists {
                for a in list.into_iter().flatten() {
                    let key = (a.ip.clone(), uid(a).map(str::to_owned));
                    let entry = addrs.entry(key);
                    let idx = entry.index();
                    entry.or_insert_with(|| a.clone());
                    let set = &mut ports
                        .entry(port_id(p))
                        .or_insert_with(|| (p.clone(), IndexMap::new()))
                        .1;
                    match set.get_mut(&idx) {
                        Some(was_ready) => *was_ready = *was_ready && ready,
                        None => {
                            set.insert(idx, ready);
                        }
                    }
                }
            }
        }
    }
    let mut groups: IndexMap<Vec<(usize, bool)>, Vec<CoreEndpointPort>> = IndexMap::new();
    for (_, (port, set)) in ports {
        let mut key: Vec<(usize, bool)> = set.into_iter().collect();
        key.sort_unstable();
        let group = groups.entry(key).or_default();
        if port.port > 0 {
            group.push(port);
        }
    }
    let mut out: Vec<EndpointSubset> = groups
        .into_iter()
        .map(|(members, mut ps)| {
            let mut ready = Vec::new();
            let mut not_ready = Vec::new();
            for (i, r) in members {
                if let Some((_, a)) = addrs.get_index(i) {
                    if r {
                        ready.push(a.clone());
                    } else {
                        not_ready.push(a.clone());
                    }
                }
            }
            ready.sort_by(address_order);
            not_ready.sort_by(address_order);
            ps.sort_by_key(port_id);
            EndpointSubset {
                addresses: (!ready.is_empty()).then_some(ready),
                not_ready_addresses: (!not_ready.is_empty()).then_some(not_ready),
                ports: (!ps.is_empty()).then_some(ps),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        let pa: Vec<PortId> = a.ports.iter().flatten().map(port_id).collect();
        let pb: Vec<PortId> = b.ports.iter().flatten().map(port_id).collect();
        pa.cmp(&pb)
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(ip: &str) -> EndpointAddress {
        EndpointAddress {
            ip: ip.into(),
            ..Default::default()
        }
    }

    fn port(name: &str, n: i32) -> CoreEndpointPort {
        CoreEndpointPort {
            name: Some(name.into()),
            port: n,
            protocol: Some("TCP".into()),
            ..Default::default()
        }
    }

    #[test]
    fn merges_same_addresses_and_same_ports() {
        let subsets = vec![
            EndpointSubset {
                addresses: Some(vec![addr("10.0.0.2"), addr("10.0.0.1")]),
                ports: Some(vec![port("a", 80)]),
                ..Default::default()
            },
            EndpointSubset {
                addresses: Some(vec![addr("10.0.0.1"), addr("10.0.0.2")]),
                ports: Some(vec![port("b", 81)]),
                ..Default::default()
            },
            EndpointSubset {
                addresses: Some(vec![addr("10.0.0.9")]),
                ..Default::default()
            },
        ];
        let out = repack_subsets(&subsets);
        assert_eq!(out.len(), 2);
        // The subset without ports is kept under the sentinel, with no ports of its own.
        assert_eq!(out[0].ports, None);
        let ips: Vec<&str> = out[0].addresses.iter().flatten().map(|a| a.ip.as_str()).collect();
        assert_eq!(ips, ["10.0.0.9"]);
        assert_eq!(out[1].ports.as_ref().unwrap().len(), 2);
        let ips: Vec<&str> = out[1].addresses.iter().flatten().map(|a| a.ip.as_str()).collect();
        assert_eq!(ips, ["10.0.0.1", "10.0.0.2"]);
    }

    #[test]
    fn portless_addresses_join_the_subset_with_the_same_addresses() {
        let subsets = vec![
            EndpointSubset {
                addresses: Some(vec![addr("10.0.0.1")]),
                ports: Some(vec![port("a", 80)]),
                ..Default::default()
            },
            EndpointSubset {
                addresses: Some(vec![addr("10.0.0.1")]),
                ports: Some(Vec::new()),
                ..Default::default()
            },
        ];
        let out = repack_subsets(&subsets);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ports.as_ref().map(Vec::len), Some(1));
        let only = vec![EndpointSubset {
            addresses: Some(vec![addr("10.20.0.1")]),
            ..Default::default()
        }];
        let out = repack_subsets(&only);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].ports, None);
        assert_eq!(out[0].addresses.as_ref().map(Vec::len), Some(1));
    }

    #[test]
    fn not_ready_wins() {
        let subsets = vec![EndpointSubset {
            addresses: Some(vec![addr("10.0.0.1")]),
            not_ready_addresses: Some(vec![addr("10.0.0.1")]),
            ports: Some(vec![port("a", 80)]),
        }];
        let out = repack_subsets(&subsets);
        assert_eq!(out.len(), 1);
        assert!(out[0].addresses.is_none());
        assert_eq!(out[0].not_ready_addresses.as_ref().unwrap().len(), 1);
    }
}
