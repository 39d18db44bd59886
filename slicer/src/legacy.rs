//! The legacy core/v1 `Endpoints` object of a Service (Kubernetes' Endpoints controller).
//!
//! Follows Kubernetes v1.37.2: `pkg/controller/endpoint/endpoints_controller.go`.

use svcnet_model::{
    CoreEndpointPort, ENDPOINTS_OVER_CAPACITY_ANNOTATION, EndpointAddress, EndpointSubset, Endpoints,
    ObjectReference, Pod, Service, labels as slice_labels,
};

use crate::endpoint::{is_ipv6_text, pod_is_endpoint_candidate, pod_ready, should_set_hostname};
use crate::ports::find_port;
use crate::repack::repack_subsets;
use crate::service::selector_matches;

/// The most addresses an `Endpoints` object holds before it is truncated.
pub const ENDPOINTS_MAX_CAPACITY: usize = 1000;

/// The `Endpoints` object Kubernetes' Endpoints controller writes for a Service with a selector,
/// or `None` for Services it leaves alone (no selector, or `ExternalName`).
///
/// Each Pod (in the Service's namespace, matching its selector, with an IP, not finished, and
/// not terminating unless the Service publishes not-ready addresses) gives one address of the
/// Service's primary IP family per resolved port; ready Pods (all Pods with
/// `publishNotReadyAddresses`) go to `addresses`, others to `notReadyAddresses`. The subsets are
/// repacked, and above 1000 addresses the object is truncated — ready addresses first, each
/// subset keeping its share — and annotated `endpoints.kubernetes.io/over-capacity: truncated`.
pub fn legacy_endpoints<'a>(service: &Service, pods: impl IntoIterator<Item = &'a Pod>) -> Option<Endpoints> {
    let spec = service.spec();
    if service.type_() == svcnet_model::service_type::EXTERNAL_NAME {
        return None;
    }
    let selector = spec.selector.as_ref()?;
    let pnr = spec.publish_not_ready_addresses.unwrap_or(false);
    let mut subsets: Vec<EndpointSubset> = Vec::new();
    for pod in pods {
        if pod.metadata.namespace() != service.metadata.namespace()
            || !selector_matches(selector, pod.metadata.labels.as_ref())
            || !pod_is_endpoint_candidate(pod, pnr)
        {
            continue;
        }
        let Some(mut addr) = pod_address(service, pod) else {
            continue;
        };
        if should_set_hostname(pod, service) {
            addr.hostname = Some(pod.spec().hostname().to_owned());
        }
        let ready = pnr || pod_ready(pod);
        let mut add = |ports: Vec<CoreEndpointPort>| {
            let (a, n) = if ready {
                (Some(vec![addr.clone()]), None)
            } else {
                (None, Some(vec![addr.clone()]))
            };
            subsets.push(EndpointSubset {
                addresses: a,
                not_ready_addresses: n,
                ports: Some(ports),
            });
        };
        if spec.ports().is_empty() {
            if service.is_headless() {
                add(Vec::new());
            }
            continue;
        }
        for sp in spec.ports() {
            if let Some(n) = find_port(pod, sp) {
                add(vec![CoreEndpointPort {
                    name: Some(sp.name().to_owned()),
                    port: n,
                    protocol: Some(sp.protocol().to_owned()),
                    app_protocol: sp.app_protocol.clone(),
                }]);
            }
        }
    }
    // Headless Services without ports keep their port-less subsets as they are.
    let mut subsets = if spec.ports().is_empty() {
        subsets
    } else {
        repack_subsets(&subsets)
    };
    let mut ep = Endpoints {
        api_version: Some("v1".into()),
        kind: Some("Endpoints".into()),
        ..Default::default()
    };
    ep.metadata.name = service.metadata.name.clone();
    ep.metadata.namespace = service.metadata.namespace.clone();
    let mut labels = service.metadata.labels.clone().unwrap_or_default();
    let ip = spec.cluster_ip.as_deref().unwrap_or("");
    if ip.is_empty() || ip == svcnet_model::CLUSTER_IP_NONE {
        labels.insert(slice_labels::HEADLESS.to_owned(), String::new());
    } else {
        labels.remove(slice_labels::HEADLESS);
    }
    ep.metadata.labels = Some(labels);
    if truncate(&mut subsets) {
        ep.metadata.annotations = Some(
            [(
                ENDPOINTS_OVER_CAPACITY_ANNOTATION.to_owned(),
                "truncated".to_owned(),
            )]
            .into(),
        );
    }
    ep.subsets = Some(subsets);
    Some(ep)
}

/// The Pod's address in the Service's primary family (`podToEndpointAddressForService`).
fn pod_address(service: &Service, pod: &Pod) -> Option<EndpointAddress> {
    let spec = service.spec();
    let want_v6 = match spec.ip_families.as_deref().and_then(<[String]>::first) {
        Some(f) => f == "IPv6",
        None => {
            let ip = spec.cluster_ip.as_deref().unwrap_or("");
            if !ip.is_empty() && ip != svcnet_model::CLUSTER_IP_NONE {
                is_ipv6_text(ip)
            } else {
                is_ipv6_text(
                    pod.status
                        .as_ref()
                        .and_then(|s| s.pod_ip.as_deref())
                        .unwrap_or(""),
                )
            }
        }
    };
    let ip = pod
        .status
        .as_ref()?
        .pod_ips
        .iter()
        .flatten()
        .find(|p| is_ipv6_text(&p.ip) == want_v6)?
        .ip
        .clone();
    Some(EndpointAddress {
        ip,
        hostname: None,
        node_name: Some(pod.spec().node_name().to_owned()),
        target_ref: Some(ObjectReference {
            kind: Some("Pod".into()),
            namespace: pod.metadata.namespace.as_deref().map(Into::into),
            name: pod.metadata.name.as_deref().map(Into::into),
            uid: pod.metadata.uid.as_deref().map(Into::into),
            ..Default::default()
        }),
    })
}

/// `truncateEndpoints`: cuts the subsets down to the capacity, keeping ready addresses first and
/// giving each subset its proportional share (rounded up). True when something was cut.
fn truncate(subsets: &mut [EndpointSubset]) -> bool {
    let len = |v: &Option<Vec<EndpointAddress>>| v.as_ref().map_or(0, Vec::len);
    let total_ready: usize = subsets.iter().map(|s| len(&s.addresses)).sum();
    let total_not_ready: usize = subsets.iter().map(|s| len(&s.not_ready_addresses)).sum();
    if total_ready + total_not_ready <= ENDPOINTS_MAX_CAPACITY {
        return false;
    }
    let truncate_ready = total_ready > ENDPOINTS_MAX_CAPACITY;
    let (max, num_total) = if truncate_ready {
        (ENDPOINTS_MAX_CAPACITY, total_ready)
    } else {
        (ENDPOINTS_MAX_CAPACITY - total_ready, total_not_ready)
    };
    let mut can_be_added = max;
    for s in subsets.iter_mut() {
        let in_subset = if truncate_ready {
            len(&s.addresses)
        } else {
            len(&s.not_ready_addresses)
        };
        // ceil(in_subset / num_total * max), in integers.
        let share = (in_subset * max).div_ceil(num_total.max(1));
        let to_add = share.min(can_be_added);
        if truncate_ready {
            if let Some(a) = s.addresses.as_mut() {
                a.truncate(to_add);
            }
            s.not_ready_addresses = None;
            can_be_added -= len(&s.addresses);
        } else {
            if let Some(a) = s.not_ready_addresses.as_mut() {
                a.truncate(to_add);
            }
            can_be_added -= len(&s.not_ready_addresses);
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    fn subset(ready: usize, not_ready: usize) -> EndpointSubset {
        let a = |n: usize, off: usize| {
            (0..n)
                .map(|i| EndpointAddress {
                    ip: format!("10.{}.{}.{}", off, i / 256, i % 256),
                    ..Default::default()
                })
                .collect::<Vec<_>>()
        };
        EndpointSubset {
            addresses: Some(a(ready, 0)),
            not_ready_addresses: Some(a(not_ready, 1)),
            ports: None,
        }
    }

    #[test]
    fn truncation_shares() {
        let mut s = vec![subset(600, 100), subset(300, 100)];
        assert!(truncate(&mut s));
        let n: usize = s
            .iter()
            .map(|x| {
                x.addresses.as_ref().map_or(0, Vec::len) + x.not_ready_addresses.as_ref().map_or(0, Vec::len)
            })
            .sum();
        assert_eq!(n, 1000);
        assert_eq!(s[0].addresses.as_ref().unwrap().len(), 600);
        assert_eq!(s[0].not_ready_addresses.as_ref().unwrap().len(), 50);
        let mut s = vec![subset(800, 0), subset(800, 0)];
        assert!(truncate(&mut s));
        assert_eq!(s[0].addresses.as_ref().unwrap().len(), 500);
        let mut s = vec![subset(10, 10)];
        assert!(!truncate(&mut s));
    }
}
