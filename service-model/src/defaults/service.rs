//! `SetDefaults_Service` (`pkg/apis/core/v1/defaults.go`, Kubernetes v1.37.2) and the defaults of
//! its parts.

use crate::service::{protocol, service_type, session_affinity, traffic_policy};
use crate::{ClientIpConfig, IntOrString, Service, SessionAffinityConfig};

/// `DefaultClientIPServiceAffinitySeconds`: 3 hours.
pub const DEFAULT_CLIENT_IP_SERVICE_AFFINITY_SECONDS: i32 = 10800;

/// `ipMode` given to load-balancer ingress points that carry an IP.
const IP_MODE_VIP: &str = "VIP";

/// Applies the API server's Service defaults in place (idempotent: applying them twice gives
/// the same Service as applying them once).
///
/// In order: `sessionAffinity` → `None` (dropping any `sessionAffinityConfig`) or, for
/// `ClientIP`, a complete config with a 10800 s timeout; `type` → `ClusterIP`; each port's
/// `protocol` → `TCP` and an unset `targetPort` → `port`; `externalTrafficPolicy` → `Cluster`
/// for externally accessible Services; `internalTrafficPolicy` → `Cluster` except for
/// `ExternalName`; `allocateLoadBalancerNodePorts` → `true` and ingress `ipMode` → `VIP` for
/// `LoadBalancer`. Cluster IPs, families and node ports are the allocators' business.
///
/// ```
/// use svcnet_model::{Service, ServicePort, ServiceSpec, defaults};
/// let mut svc = Service::default();
/// svc.spec = Some(ServiceSpec {
///     ports: Some(vec![ServicePort { port: 80, ..Default::default() }]),
///     ..Default::default()
/// });
/// defaults::default_service(&mut svc);
/// let spec = svc.spec.as_ref().unwrap();
/// assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
/// assert_eq!(spec.ports()[0].protocol.as_deref(), Some("TCP"));
/// assert_eq!(spec.ports()[0].target_port, Some(80.into()));
/// ```
pub fn default_service(svc: &mut Service) {
    let spec = svc.spec.get_or_insert_with(Default::default);

    if spec.session_affinity.as_deref().unwrap_or("").is_empty() {
        spec.session_affinity = Some(session_affinity::NONE.to_owned());
    }
    match spec.session_affinity.as_deref() {
        Some(session_affinity::NONE) => spec.session_affinity_config = None,
        Some(session_affinity::CLIENT_IP) => {
            let complete = spec
                .session_affinity_config
                .as_ref()
                .and_then(|c| c.client_ip.as_ref())
                .is_some_and(|c| c.timeout_seconds.is_some());
            if !complete {
                spec.session_affinity_config = Some(SessionAffinityConfig {
                    client_ip: Some(ClientIpConfig {
                        timeout_seconds: Some(DEFAULT_CLIENT_IP_SERVICE_AFFINITY_SECONDS),
                    }),
                });
            }
        }
        _ => {}
    }

    if spec.type_.as_deref().unwrap_or("").is_empty() {
        spec.type_ = Some(service_type::CLUSTER_IP.to_owned());
    }

    for port in spec.ports.iter_mut().flatten() {
        if port.protocol.as_deref().unwrap_or("").is_empty() {
            port.protocol = Some(protocol::TCP.to_owned());
        }
        if port.target_port.as_ref().is_none_or(IntOrString::is_zero) {
            port.target_port = Some(IntOrString::Int(port.port));
        }
    }

    let type_ = spec.type_.as_deref().unwrap_or("");
    let externally_accessible = type_ == service_type::LOAD_BALANCER
        || type_ == service_type::NODE_PORT
        || (type_ == service_type::CLUSTER_IP && spec.external_ips.as_ref().is_some_and(|v| !v.is_empty()));
    if externally_accessible && spec.external_traffic_policy.as_deref().unwrap_or("").is_empty() {
        spec.external_traffic_policy = Some(traffic_policy::CLUSTER.to_owned());
    }

    if spec.internal_traffic_policy.is_none()
        && matches!(
            type_,
            service_type::CLUSTER_IP | service_type::NODE_PORT | service_type::LOAD_BALANCER
        )
    {
        spec.internal_traffic_policy = Some(traffic_policy::CLUSTER.to_owned());
    }

    let is_lb = type_ == service_type::LOAD_BALANCER;
    if is_lb && spec.allocate_load_balancer_node_ports.is_none() {
        spec.allocate_load_balancer_node_ports = Some(true);
    }

    if is_lb {
        let ingress = svc
            .status
            .as_mut()
            .and_then(|s| s.load_balancer.as_mut())
            .and_then(|lb| lb.ingress.as_mut());
        for ing in ingress.into_iter().flatten() {
            if ing.ip.as_deref().is_some_and(|ip| !ip.is_empty()) && ing.ip_mode.is_none() {
                ing.ip_mode = Some(IP_MODE_VIP.to_owned());
            }
        }
    }
}

/// The registry's `normalizeClusterIPs` (a strategy step, not defaulting): keeps `clusterIP`
/// and `clusterIPs` in step the way an old client that only knows `clusterIP` expects.
///
/// On create (`old` is `None`), a `clusterIP` without `clusterIPs` gives `clusterIPs:
/// [clusterIP]`. On update, `clusterIPs` dropped by a client that kept `clusterIP` are restored
/// from `old`; a cleared `clusterIP` with untouched `clusterIPs` clears them too; a changed
/// `clusterIP` with untouched `clusterIPs` replaces them with `[clusterIP]`.
///
/// ```
/// use svcnet_model::{Service, ServiceSpec, defaults};
/// let mut svc = Service::default();
/// svc.spec = Some(ServiceSpec { cluster_ip: Some("None".into()), ..Default::default() });
/// defaults::normalize_cluster_ips(&mut svc, None);
/// assert_eq!(svc.spec.unwrap().cluster_ips, Some(vec!["None".to_string()]));
/// ```
pub fn normalize_cluster_ips(svc: &mut Service, old: Option<&Service>) {
    let spec = svc.spec.get_or_insert_with(Default::default);
    let cip = spec.cluster_ip.clone().unwrap_or_default();
    let ips_empty = spec.cluster_ips.as_ref().is_none_or(Vec::is_empty);
    let Some(old) = old else {
        if !cip.is_empty() && ips_empty {
            spec.cluster_ips = Some(vec![cip]);
        }
        return;
    };
    let old_spec = old.spec();
    let old_cip = old_spec.cluster_ip.as_deref().unwrap_or("");
    let old_ips = old_spec.cluster_ips.as_deref().unwrap_or(&[]);
    if !old_ips.is_empty() && ips_empty && old_cip == cip {
        spec.cluster_ips = Some(old_ips.to_vec());
    }
    if old_cip != cip {
        let same_ips = spec.cluster_ips.as_deref().unwrap_or(&[]) == old_ips;
        if same_ips {
            spec.cluster_ips = if !old_cip.is_empty() && cip.is_empty() {
                None
            } else {
                Some(vec![cip])
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{LoadBalancerIngress, LoadBalancerStatus, ServicePort, ServiceSpec, ServiceStatus};

    fn svc(spec: ServiceSpec) -> Service {
        Service {
            spec: Some(spec),
            ..Default::default()
        }
    }

    #[test]
    fn minimal_cluster_ip() {
        let mut s = svc(ServiceSpec {
            ports: Some(vec![ServicePort {
                port: 80,
                target_port: Some(IntOrString::String(String::new())),
                ..Default::default()
            }]),
            ..Default::default()
        });
        default_service(&mut s);
        let spec = s.spec();
        assert_eq!(spec.session_affinity.as_deref(), Some("None"));
        assert_eq!(spec.type_.as_deref(), Some("ClusterIP"));
        assert_eq!(spec.ports()[0].target_port, Some(IntOrString::Int(80)));
        assert_eq!(spec.internal_traffic_policy.as_deref(), Some("Cluster"));
        assert_eq!(spec.external_traffic_policy, None);
        assert_eq!(spec.allocate_load_balancer_node_ports, None);
    }

    #[test]
    fn affinity() {
        let mut s = svc(ServiceSpec {
            session_affinity_config: Some(SessionAffinityConfig::default()),
            ..Default::default()
        });
        default_service(&mut s);
        assert_eq!(s.spec().session_affinity_config, None);
        let mut s = svc(ServiceSpec {
            session_affinity: Some("ClientIP".into()),
            session_affinity_config: Some(SessionAffinityConfig {
                client_ip: Some(ClientIpConfig::default()),
            }),
            ..Default::default()
        });
        default_service(&mut s);
        let t = s
            .spec()
            .session_affinity_config
            .as_ref()
            .and_then(|c| c.client_ip.as_ref());
        assert_eq!(t.and_then(|c| c.timeout_seconds), Some(10800));
        let mut s = svc(ServiceSpec {
            session_affinity: Some("ClientIP".into()),
            session_affinity_config: Some(SessionAffinityConfig {
                client_ip: Some(ClientIpConfig {
                    timeout_seconds: Some(5),
                }),
            }),
            ..Default::default()
        });
        default_service(&mut s);
        let t = s
            .spec()
            .session_affinity_config
            .as_ref()
            .and_then(|c| c.client_ip.as_ref());
        assert_eq!(t.and_then(|c| c.timeout_seconds), Some(5));
    }

    #[test]
    fn load_balancer_and_external() {
        let mut s = svc(ServiceSpec {
            type_: Some("LoadBalancer".into()),
            ..Default::default()
        });
        s.status = Some(ServiceStatus {
            load_balancer: Some(LoadBalancerStatus {
                ingress: Some(vec![
                    LoadBalancerIngress {
                        ip: Some("1.2.3.4".into()),
                        ..Default::default()
                    },
                    LoadBalancerIngress {
                        hostname: Some("lb.example.com".into()),
                        ..Default::default()
                    },
                ]),
            }),
            conditions: None,
        });
        default_service(&mut s);
        assert_eq!(s.spec().external_traffic_policy.as_deref(), Some("Cluster"));
        assert_eq!(s.spec().allocate_load_balancer_node_ports, Some(true));
        let ing = s
            .status
            .as_ref()
            .and_then(|st| st.load_balancer.as_ref())
            .and_then(|lb| lb.ingress.clone())
            .unwrap_or_default();
        assert_eq!(ing[0].ip_mode.as_deref(), Some("VIP"));
        assert_eq!(ing[1].ip_mode, None);

        let mut s = svc(ServiceSpec {
            external_ips: Some(vec!["1.2.3.4".into()]),
            ..Default::default()
        });
        default_service(&mut s);
        assert_eq!(s.spec().external_traffic_policy.as_deref(), Some("Cluster"));

        let mut s = svc(ServiceSpec {
            type_: Some("ExternalName".into()),
            ..Default::default()
        });
        default_service(&mut s);
        assert_eq!(s.spec().internal_traffic_policy, None);
        assert_eq!(s.spec().external_traffic_policy, None);
    }

    #[test]
    fn normalizes_cluster_ips() {
        let with_ip = |ip: Option<&str>, ips: Option<Vec<&str>>| {
            svc(ServiceSpec {
                cluster_ip: ip.map(Into::into),
                cluster_ips: ips.map(|v| v.into_iter().map(Into::into).collect()),
                ..Default::default()
            })
        };
        let ips = |s: &Service| s.spec().cluster_ips.clone();
        let mut s = with_ip(Some("10.0.0.1"), None);
        normalize_cluster_ips(&mut s, None);
        assert_eq!(ips(&s), Some(vec!["10.0.0.1".to_string()]));
        let old = with_ip(Some("10.0.0.1"), Some(vec!["10.0.0.1", "2001::1"]));
        let mut s = with_ip(Some("10.0.0.1"), None);
        normalize_cluster_ips(&mut s, Some(&old));
        assert_eq!(ips(&s), ips(&old));
        let mut s = with_ip(None, Some(vec!["10.0.0.1", "2001::1"]));
        normalize_cluster_ips(&mut s, Some(&old));
        assert_eq!(ips(&s), None);
        let mut s = with_ip(Some("10.0.0.2"), Some(vec!["10.0.0.1", "2001::1"]));
        normalize_cluster_ips(&mut s, Some(&old));
        assert_eq!(ips(&s), Some(vec!["10.0.0.2".to_string()]));
    }

    #[test]
    fn idempotent() {
        let mut s = svc(ServiceSpec {
            type_: Some("NodePort".into()),
            session_affinity: Some("ClientIP".into()),
            ports: Some(vec![ServicePort {
                port: 53,
                protocol: Some("UDP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        });
        default_service(&mut s);
        let once = s.clone();
        default_service(&mut s);
        assert_eq!(s, once);
    }
}
