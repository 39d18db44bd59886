//! Service port → Pod port resolution (`FindPort`) and the port-list keys slices group by.

use smallvec::SmallVec;
use svcnet_model::{Container, EndpointPort, IntOrString, Pod, Service, ServicePort};

/// Resolves a Service port's `targetPort` for a Pod (`FindPort`): a number is taken as is; a
/// name is looked up among the container ports with that name and the Service port's protocol,
/// first in the regular containers, then in sidecar init containers (`restartPolicy: Always`).
/// `None` when the name matches nothing. An unset `targetPort` means the Service port itself.
pub fn find_port(pod: &Pod, port: &ServicePort) -> Option<i32> {
    match &port.target_port {
        None => Some(port.port),
        Some(IntOrString::Int(n)) => Some(*n),
        Some(IntOrString::String(name)) => {
            let proto = port.protocol();
            let spec = pod.spec();
            let search = |cs: &[Container], sidecars_only: bool| {
                cs.iter()
                    .filter(|c| !sidecars_only || c.restart_policy.as_deref() == Some("Always"))
                    .flat_map(|c| c.ports())
                    .find(|p| {
                        p.name.as_deref() == Some(name.as_str())
                            && p.protocol.as_deref().unwrap_or("TCP") == proto
                    })
                    .map(|p| p.container_port)
            };
            search(spec.containers(), false).or_else(|| search(spec.init_containers(), true))
        }
    }
}

/// How each Service port resolved for one Pod (`None`: not found, the port is left out).
pub(crate) type Resolution = SmallVec<[Option<i32>; 4]>;

/// Resolves every Service port for `pod`.
pub(crate) fn resolve(ports: &[ServicePort], pod: &Pod) -> Resolution {
    ports.iter().map(|p| find_port(pod, p)).collect()
}

/// True when every `targetPort` is a number (or unset): every Pod resolves the same way.
pub(crate) fn all_numeric(ports: &[ServicePort]) -> bool {
    ports
        .iter()
        .all(|p| !matches!(p.target_port, Some(IntOrString::String(_))))
}

/// The EndpointPorts of a resolution (`getEndpointPorts`), in Service port order.
pub(crate) fn endpoint_ports(ports: &[ServicePort], res: &Resolution) -> Vec<EndpointPort> {
    ports
        .iter()
        .zip(res.iter())
        .filter_map(|(sp, r)| {
            r.map(|n| EndpointPort {
                name: Some(sp.name().to_owned()),
                protocol: Some(sp.protocol().to_owned()),
                port: Some(n),
                app_protocol: sp.app_protocol.clone(),
            })
        })
        .collect()
}

/// The EndpointPorts a Pod's endpoint serves for a Service (`getEndpointPorts`).
pub fn pod_endpoint_ports(service: &Service, pod: &Pod) -> Vec<EndpointPort> {
    let ports = service.spec().ports();
    endpoint_ports(ports, &resolve(ports, pod))
}

/// An order-independent key of a port list: the ports sorted. `null` and `[]` give the same key.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct PortKey(pub Vec<EndpointPort>);

impl PortKey {
    /// The key of a port list.
    pub fn of(ports: &[EndpointPort]) -> PortKey {
        let mut v = ports.to_vec();
        v.sort();
        PortKey(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use svcnet_model::{ContainerPort, PodSpec};

    fn cport(name: &str, n: i32, proto: Option<&str>) -> ContainerPort {
        ContainerPort {
            name: Some(name.into()),
            container_port: n,
            protocol: proto.map(Into::into),
            ..Default::default()
        }
    }

    #[test]
    fn named_ports_containers_then_sidecars() {
        let pod = Pod {
            spec: Some(PodSpec {
                containers: Some(vec![Container {
                    name: "a".into(),
                    ports: Some(vec![cport("dns", 53, Some("UDP")), cport("http", 8080, None)]),
                    ..Default::default()
                }]),
                init_containers: Some(vec![
                    Container {
                        name: "init".into(),
                        ports: Some(vec![cport("metrics", 1, None)]),
                        ..Default::default()
                    },
                    Container {
                        name: "sidecar".into(),
                        restart_policy: Some("Always".into()),
                        ports: Some(vec![cport("metrics", 9090, None)]),
                        ..Default::default()
                    },
                ]),
                ..Default::default()
            }),
            ..Default::default()
        };
        let sp = |t: &str, proto: Option<&str>| ServicePort {
            port: 80,
            target_port: Some(IntOrString::String(t.into())),
            protocol: proto.map(Into::into),
            ..Default::default()
        };
        assert_eq!(find_port(&pod, &sp("http", None)), Some(8080));
        assert_eq!(find_port(&pod, &sp("http", Some("UDP"))), None);
        assert_eq!(find_port(&pod, &sp("dns", Some("UDP"))), Some(53));
        assert_eq!(find_port(&pod, &sp("dns", None)), None);
        assert_eq!(find_port(&pod, &sp("metrics", None)), Some(9090));
        assert_eq!(find_port(&pod, &sp("nope", None)), None);
        let numeric = ServicePort {
            port: 80,
            target_port: Some(IntOrString::Int(81)),
            ..Default::default()
        };
        assert_eq!(find_port(&pod, &numeric), Some(81));
    }

    #[test]
    fn port_key_is_order_independent() {
        let a = EndpointPort {
            name: Some("a".into()),
            port: Some(1),
            ..Default::default()
        };
        let b = EndpointPort {
            name: Some("b".into()),
            port: Some(2),
            ..Default::default()
        };
        assert_eq!(PortKey::of(&[a.clone(), b.clone()]), PortKey::of(&[b, a]));
        assert_eq!(PortKey::of(&[]), PortKey::default());
    }
}
