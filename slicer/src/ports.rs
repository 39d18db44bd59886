//! Service port → Pod port resolution (`FindPort`) and the port-list keys slices group by.
//!
//! Follows Kubernetes v1.37.2: `FindPort` in `staging/src/k8s.io/endpointslice/utils.go` and
//! `NewPortMapKey` in `staging/src/k8s.io/endpointslice/util/controller_utils.go`.

use smallvec::SmallVec;
use svcnet_model::{Container, EndpointPort, IntOrString, Pod, Service, ServicePort};

/// Resolves a Service port's `targetPort` for a Pod (`FindPort`): a number is taken as is; a
/// name is looked up among the container ports with that name and the Service port's protocol,
/// first in the regular containers, then in sidecar init containers (`restartPolicy: Always`).
/// `None` when the name matches nothing. An unset `targetPort` means the Service port itself.
pub(crate) fn find_port(pod: &Pod, port: &ServicePort) -> Option<i32> {
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
                    .find(|p| p.name.as_deref() == Some(name.as_str()) && p.protocol() == proto)
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

/// The text Kubernetes hashes for one EndpointPort: Go's `dump.ForHash` (spew's `%#v` with
/// pointer addresses off) of a `discovery/v1.EndpointPort`, whose four fields are pointers.
/// For `metrics` 8443/TCP without an application protocol:
/// `(v1.EndpointPort){Name:(*string)metrics Protocol:(*v1.Protocol)TCP Port:(*int32)8443 AppProtocol:(*string)<nil>}`.
fn hash_dump(p: &EndpointPort, out: &mut String) {
    fn field(out: &mut String, label: &str, ty: &str, value: Option<&str>) {
        out.push_str(label);
        out.push_str(":(*");
        out.push_str(ty);
        out.push(')');
        out.push_str(value.unwrap_or("<nil>"));
    }
    let port = p.port.map(|n| n.to_string());
    out.push_str("(v1.EndpointPort){");
    field(out, "Name", "string", p.name.as_deref());
    out.push(' ');
    field(out, "Protocol", "v1.Protocol", p.protocol.as_deref());
    out.push(' ');
    field(out, "Port", "int32", port.as_deref());
    out.push(' ');
    field(out, "AppProtocol", "string", p.app_protocol.as_deref());
    out.push('}');
}

/// FNV-1a, 128 bits (Go's `hash/fnv.New128a`), big-endian as Go's `Sum` writes it.
fn fnv128a(bytes: &[u8]) -> u128 {
    const OFFSET: u128 = 0x6c62_272e_07bb_0142_62b8_2175_6295_c58d;
    const PRIME: u128 = 0x0000_0000_0100_0000_0000_0000_0000_013b;
    bytes
        .iter()
        .fold(OFFSET, |h, &b| (h ^ u128::from(b)).wrapping_mul(PRIME))
}

/// The hash Kubernetes orders a port by (`DeepHashObjectToString`: FNV-128a over
/// [`hash_dump`]). Its hex text compares as the number does.
pub(crate) fn port_hash(p: &EndpointPort) -> u128 {
    let mut text = String::with_capacity(112);
    hash_dump(p, &mut text);
    fnv128a(text.as_bytes())
}

/// Puts ports in the order the EndpointSlice controllers write them: `NewPortMapKey` sorts the
/// list in place by each port's hash (`port_hash`) while building the group key, and that sorted
/// list becomes the slice's `ports` (`[metrics 6379→8443, db 443→59355]` stays in that order,
/// `[db, metrics]` is turned around). Equal hashes are equal ports (the sort is total because
/// ties fall back to the ports' own order). Costs one hash per port; lists of fewer than two
/// ports are left alone.
pub fn kubernetes_port_order(ports: &mut [EndpointPort]) {
    if ports.len() < 2 {
        return;
    }
    let mut keyed: SmallVec<[(u128, EndpointPort); 4]> = ports
        .iter_mut()
        .map(|p| (port_hash(p), std::mem::take(p)))
        .collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)));
    for (slot, (_, p)) in ports.iter_mut().zip(keyed) {
        *slot = p;
    }
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

    fn eport(name: &str, n: i32, proto: &str, app: Option<&str>) -> EndpointPort {
        EndpointPort {
            name: Some(name.into()),
            port: Some(n),
            protocol: Some(proto.into()),
            app_protocol: app.map(Into::into),
        }
    }

    #[test]
    fn port_hash_is_go_fnv128a_of_the_spew_dump() {
        // Expected values printed by Go 1.26 with k8s.io/utils/dump.ForHash and hash/fnv over
        // k8s.io/api/discovery/v1.EndpointPort values (the input NewPortMapKey hashes).
        let metrics = eport("metrics", 8443, "TCP", None);
        let mut text = String::new();
        hash_dump(&metrics, &mut text);
        assert_eq!(
            text,
            "(v1.EndpointPort){Name:(*string)metrics Protocol:(*v1.Protocol)TCP Port:(*int32)8443 AppProtocol:(*string)<nil>}"
        );
        assert_eq!(port_hash(&metrics), 0x33d263c05495d568689d32815529fc2b);
        assert_eq!(
            port_hash(&eport("db", 59355, "TCP", None)),
            0x647ced9dc3071c9b23e8fc15fd7b8f5c
        );
        assert_eq!(
            port_hash(&eport("x", 1, "UDP", Some("kubernetes.io/h2c"))),
            0xce7f90541f279e954edaa42a60434315
        );
        assert_eq!(
            port_hash(&EndpointPort::default()),
            0xad866eb7cd5162a9e20434ebd9deeacd
        );
    }

    #[test]
    fn ports_take_the_controllers_hash_order() {
        let metrics = eport("metrics", 8443, "TCP", None);
        let db = eport("db", 59355, "TCP", None);
        let x = eport("x", 1, "UDP", Some("kubernetes.io/h2c"));
        for start in [
            vec![db.clone(), metrics.clone(), x.clone()],
            vec![x.clone(), db.clone(), metrics.clone()],
            vec![metrics.clone(), x.clone(), db.clone()],
        ] {
            let mut v = start;
            kubernetes_port_order(&mut v);
            assert_eq!(v, [metrics.clone(), db.clone(), x.clone()]);
        }
        let mut one = vec![db.clone()];
        kubernetes_port_order(&mut one);
        assert_eq!(one, [db]);
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
