//! core/v1 `Service`: the object every other part of svcnet starts from.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/api/core/v1/types.go` (`Service`).

use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use crate::{Condition, IntOrString, ModelError, ObjectMeta, StringMap};

/// Values of `spec.type`.
pub mod service_type {
    /// A virtual IP reachable inside the cluster (the default).
    pub const CLUSTER_IP: &str = "ClusterIP";
    /// A ClusterIP plus a port on every node.
    pub const NODE_PORT: &str = "NodePort";
    /// A NodePort plus an external load balancer.
    pub const LOAD_BALANCER: &str = "LoadBalancer";
    /// A DNS alias (CNAME) to `spec.externalName`; no proxying.
    pub const EXTERNAL_NAME: &str = "ExternalName";
}

/// Values of `spec.ipFamilyPolicy`.
pub mod ip_family_policy {
    /// One IP family.
    pub const SINGLE_STACK: &str = "SingleStack";
    /// Two families where the cluster has them, else one.
    pub const PREFER_DUAL_STACK: &str = "PreferDualStack";
    /// Two families, or the Service is refused.
    pub const REQUIRE_DUAL_STACK: &str = "RequireDualStack";
}

/// Values of `spec.ipFamilies[*]` and of an IP's family.
pub mod ip_family {
    /// IPv4.
    pub const IPV4: &str = "IPv4";
    /// IPv6.
    pub const IPV6: &str = "IPv6";
}

/// Values of a port's `protocol`.
pub mod protocol {
    /// TCP (the default).
    pub const TCP: &str = "TCP";
    /// UDP.
    pub const UDP: &str = "UDP";
    /// SCTP.
    pub const SCTP: &str = "SCTP";
}

/// Values of `spec.externalTrafficPolicy` and `spec.internalTrafficPolicy`.
pub mod traffic_policy {
    /// Any ready endpoint in the cluster.
    pub const CLUSTER: &str = "Cluster";
    /// Only endpoints on the receiving node.
    pub const LOCAL: &str = "Local";
}

/// Values of `spec.sessionAffinity`.
pub mod session_affinity {
    /// No affinity (the default).
    pub const NONE: &str = "None";
    /// Stick a client IP to one endpoint.
    pub const CLIENT_IP: &str = "ClientIP";
}

/// Values of `spec.trafficDistribution`.
pub mod traffic_distribution {
    /// Prefer topologically close endpoints (same zone).
    pub const PREFER_CLOSE: &str = "PreferClose";
    /// Prefer endpoints in the same zone.
    pub const PREFER_SAME_ZONE: &str = "PreferSameZone";
    /// Prefer endpoints on the same node.
    pub const PREFER_SAME_NODE: &str = "PreferSameNode";
}

/// The literal `clusterIP: None` that makes a Service headless.
pub const CLUSTER_IP_NONE: &str = "None";

/// core/v1 `Service`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Service {
    /// `v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `Service`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name, namespace, labels and the rest.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The desired state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<ServiceSpec>,
    /// The observed state (load balancer ingress, conditions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<ServiceStatus>,
}

/// core/v1 `ServiceSpec`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceSpec {
    /// The ports the Service exposes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<ServicePort>>,
    /// Label selector of the backing pods; absent for selector-less Services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<StringMap>,
    /// The primary cluster IP, `None` for headless, empty to allocate.
    #[serde(rename = "clusterIP", default, skip_serializing_if = "Option::is_none")]
    pub cluster_ip: Option<String>,
    /// All cluster IPs, one per family; `[0]` equals `clusterIP`.
    #[serde(rename = "clusterIPs", default, skip_serializing_if = "Option::is_none")]
    pub cluster_ips: Option<Vec<String>>,
    /// `ClusterIP`, `NodePort`, `LoadBalancer` or `ExternalName`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Extra IPs the Service answers on.
    #[serde(rename = "externalIPs", default, skip_serializing_if = "Option::is_none")]
    pub external_ips: Option<Vec<String>>,
    /// `None` or `ClientIP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_affinity: Option<String>,
    /// Deprecated: the requested load balancer IP.
    #[serde(rename = "loadBalancerIP", default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_ip: Option<String>,
    /// Client CIDRs allowed through the load balancer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_source_ranges: Option<Vec<String>>,
    /// The DNS name an `ExternalName` Service aliases.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_name: Option<String>,
    /// `Cluster` or `Local`, for external traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_traffic_policy: Option<String>,
    /// The health check node port for `externalTrafficPolicy: Local` load balancers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health_check_node_port: Option<i32>,
    /// Publish endpoints whether or not they are ready.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish_not_ready_addresses: Option<bool>,
    /// Session affinity settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_affinity_config: Option<SessionAffinityConfig>,
    /// `IPv4` and/or `IPv6`, in order of preference.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_families: Option<Vec<String>>,
    /// `SingleStack`, `PreferDualStack` or `RequireDualStack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_family_policy: Option<String>,
    /// Whether a LoadBalancer Service gets node ports.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocate_load_balancer_node_ports: Option<bool>,
    /// The load balancer implementation to use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer_class: Option<String>,
    /// `Cluster` or `Local`, for traffic from inside the cluster.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub internal_traffic_policy: Option<String>,
    /// `PreferClose`, `PreferSameZone` or `PreferSameNode`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub traffic_distribution: Option<String>,
}

/// core/v1 `ServicePort`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServicePort {
    /// The port's name; required when there is more than one port.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// `TCP`, `UDP` or `SCTP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The application protocol (e.g. `http`, `kubernetes.io/h2c`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub app_protocol: Option<String>,
    /// The port the Service listens on.
    #[serde(default)]
    pub port: i32,
    /// The pod port: a number or a container port name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_port: Option<IntOrString>,
    /// The node port, for NodePort and LoadBalancer Services.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_port: Option<i32>,
}

/// core/v1 `SessionAffinityConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionAffinityConfig {
    /// ClientIP affinity settings.
    #[serde(rename = "clientIP", default, skip_serializing_if = "Option::is_none")]
    pub client_ip: Option<ClientIpConfig>,
}

/// core/v1 `ClientIPConfig`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClientIpConfig {
    /// Seconds a client sticks to an endpoint (1..=86400; default 10800).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout_seconds: Option<i32>,
}

/// core/v1 `ServiceStatus`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ServiceStatus {
    /// The load balancer's current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub load_balancer: Option<LoadBalancerStatus>,
    /// Standard conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// core/v1 `LoadBalancerStatus`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerStatus {
    /// The load balancer's ingress points.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress: Option<Vec<LoadBalancerIngress>>,
}

/// core/v1 `LoadBalancerIngress`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LoadBalancerIngress {
    /// An IP of the load balancer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// A DNS name of the load balancer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// `VIP` or `Proxy`: how traffic reaches the node.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ip_mode: Option<String>,
    /// Per-port status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<PortStatus>>,
}

/// core/v1 `PortStatus`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PortStatus {
    /// The port number.
    #[serde(default)]
    pub port: i32,
    /// The protocol.
    #[serde(default)]
    pub protocol: String,
    /// An error in CamelCase, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl Service {
    /// The spec, or an empty one.
    pub fn spec(&self) -> &ServiceSpec {
        static EMPTY: ServiceSpec = ServiceSpec::EMPTY;
        self.spec.as_ref().unwrap_or(&EMPTY)
    }

    /// The spec, created empty when absent.
    pub fn spec_mut(&mut self) -> &mut ServiceSpec {
        self.spec.get_or_insert_with(ServiceSpec::default)
    }

    /// `spec.type`, treating unset as `ClusterIP`.
    pub fn type_(&self) -> &str {
        self.spec().type_.as_deref().unwrap_or(service_type::CLUSTER_IP)
    }

    /// True for a headless Service: its primary cluster IP — `clusterIP`, or `clusterIPs[0]`
    /// when `clusterIP` is unset or empty — is `None`.
    ///
    /// For a Service the API server has accepted (normalised so that `clusterIP` equals
    /// `clusterIPs[0]`, and validated so that `None` stands alone) this is what Kubernetes'
    /// controllers test (`spec.clusterIP == None`) and what its validation's
    /// `isHeadlessService` tests (`clusterIPs == [None]`). They differ only on input the API
    /// server refuses: with `clusterIPs: [None, 10.0.0.1]` this method says headless where
    /// validation does not (validation reports the second entry).
    ///
    /// A Service whose cluster IP is merely not allocated yet (empty) is not headless here.
    /// Kubernetes' `IsServiceIPSet` ("has a usable cluster IP") is false for both; the
    /// EndpointSlice controller and kube-proxy use that, so a caller that means "no cluster
    /// IP to route to" should also check [`Service::cluster_ip_addrs`].
    pub fn is_headless(&self) -> bool {
        let spec = self.spec();
        let primary = match spec.cluster_ip.as_deref() {
            Some(ip) if !ip.is_empty() => Some(ip),
            _ => spec
                .cluster_ips
                .as_deref()
                .and_then(<[String]>::first)
                .map(String::as_str),
        };
        primary == Some(CLUSTER_IP_NONE)
    }

    /// Kubernetes' `IsServiceIPSet`: `spec.clusterIP` is neither empty nor `None`.
    pub fn is_cluster_ip_set(&self) -> bool {
        self.spec()
            .cluster_ip
            .as_deref()
            .is_some_and(|ip| !ip.is_empty() && ip != CLUSTER_IP_NONE)
    }

    /// kube-proxy's `ShouldSkipService` (v1.37.2, `pkg/proxy/util/utils.go`): a Service
    /// without a set `spec.clusterIP` (empty or `None`) or of type `ExternalName` is not
    /// proxied at all.
    pub fn skipped_by_proxy(&self) -> bool {
        !self.is_cluster_ip_set() || self.type_() == service_type::EXTERNAL_NAME
    }

    /// kube-proxy's `GetClusterIPByFamily` (v1.37.2, `pkg/proxy/util/utils.go`) for family
    /// `IPv4` or `IPv6`: with `spec.ipFamilies` set, the `spec.clusterIPs` entry at the index
    /// of that family; without, `spec.clusterIP` when it is of that family (read leniently).
    /// `None` when the Service has no cluster IP of the family (kube-proxy's `""`). The text
    /// is returned as written.
    pub fn cluster_ip_for_family(&self, family: &str) -> Option<&str> {
        let spec = self.spec();
        match spec.ip_families.as_deref() {
            None | Some([]) => {
                let ip = spec.cluster_ip.as_deref()?;
                if ip.is_empty() || ip == CLUSTER_IP_NONE {
                    return None;
                }
                let v6 = crate::validation::names::is_ipv6_string(ip);
                (v6 == (family == "IPv6")).then_some(ip)
            }
            Some(families) => {
                let idx = families.iter().position(|f| f == family)?;
                spec.cluster_ips
                    .as_deref()?
                    .get(idx)
                    .map(String::as_str)
                    .filter(|ip| !ip.is_empty())
            }
        }
    }

    /// The Service's cluster IPs, parsed: `clusterIPs` when set, else `clusterIP`.
    /// Headless and unallocated Services give an empty list; a bad address is an error naming
    /// its field and value.
    pub fn cluster_ip_addrs(&self) -> Result<Vec<IpAddr>, ModelError> {
        let spec = self.spec();
        match (&spec.cluster_ips, &spec.cluster_ip) {
            (Some(ips), _) if !ips.is_empty() => ips
                .iter()
                .enumerate()
                .filter(|(_, ip)| !ip.is_empty() && ip.as_str() != CLUSTER_IP_NONE)
                .map(|(i, ip)| parse_ip(&format!("spec.clusterIPs[{i}]"), ip))
                .collect(),
            (_, Some(ip)) if !ip.is_empty() && ip != CLUSTER_IP_NONE => {
                Ok(vec![parse_ip("spec.clusterIP", ip)?])
            }
            _ => Ok(Vec::new()),
        }
    }
}

impl ServiceSpec {
    /// An empty spec, usable in constants.
    pub const EMPTY: ServiceSpec = ServiceSpec {
        ports: None,
        selector: None,
        cluster_ip: None,
        cluster_ips: None,
        type_: None,
        external_ips: None,
        session_affinity: None,
        load_balancer_ip: None,
        load_balancer_source_ranges: None,
        external_name: None,
        external_traffic_policy: None,
        health_check_node_port: None,
        publish_not_ready_addresses: None,
        session_affinity_config: None,
        ip_families: None,
        ip_family_policy: None,
        allocate_load_balancer_node_ports: None,
        load_balancer_class: None,
        internal_traffic_policy: None,
        traffic_distribution: None,
    };

    /// The ports, or an empty slice.
    pub fn ports(&self) -> &[ServicePort] {
        self.ports.as_deref().unwrap_or(&[])
    }
}

impl ServicePort {
    /// The name, or `""`.
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }

    /// The protocol, treating unset as `TCP`.
    pub fn protocol(&self) -> &str {
        self.protocol.as_deref().unwrap_or(protocol::TCP)
    }
}

/// Parses an IP address found at `field`, naming the field and value on failure.
pub(crate) fn parse_ip(field: &str, value: &str) -> Result<IpAddr, ModelError> {
    value.parse().map_err(|_| ModelError::Ip {
        field: field.to_owned(),
        value: value.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn proxy_skips_and_cluster_ip_by_family() {
        let svc = |v: serde_json::Value| -> Service { serde_json::from_value(v).unwrap() };
        let empty = svc(serde_json::json!({"spec": {"clusterIP": ""}}));
        assert!(empty.skipped_by_proxy() && empty.cluster_ip_for_family("IPv4").is_none());
        let headless = svc(serde_json::json!({"spec": {"clusterIP": "None"}}));
        assert!(headless.skipped_by_proxy());
        let ext = svc(serde_json::json!({"spec": {"clusterIP": "10.0.0.1", "type": "ExternalName"}}));
        assert!(ext.skipped_by_proxy());
        let v4 = svc(serde_json::json!({"spec": {"clusterIP": "172.30.0.041"}}));
        assert!(!v4.skipped_by_proxy());
        assert_eq!(v4.cluster_ip_for_family("IPv4"), Some("172.30.0.041"));
        assert_eq!(v4.cluster_ip_for_family("IPv6"), None);
        let dual = svc(serde_json::json!({"spec": {"clusterIP": "fd00::1",
            "clusterIPs": ["fd00::1", ""], "ipFamilies": ["IPv6", "IPv4"]}}));
        assert_eq!(dual.cluster_ip_for_family("IPv6"), Some("fd00::1"));
        assert_eq!(dual.cluster_ip_for_family("IPv4"), None);
        let one = svc(
            serde_json::json!({"spec": {"clusterIP": "10.0.0.1", "ipFamilies": ["IPv4", "IPv6"],
            "clusterIPs": ["10.0.0.1"]}}),
        );
        assert_eq!(one.cluster_ip_for_family("IPv6"), None);
    }

    use super::*;

    fn svc(cluster_ip: Option<&str>, cluster_ips: Option<&[&str]>) -> Service {
        Service {
            spec: Some(ServiceSpec {
                cluster_ip: cluster_ip.map(Into::into),
                cluster_ips: cluster_ips.map(|v| v.iter().map(|s| (*s).to_owned()).collect()),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn headless_reads_the_primary_cluster_ip() {
        assert!(!Service::default().is_headless());
        // Normalised forms: both fields agree.
        assert!(svc(Some("None"), Some(&["None"])).is_headless());
        assert!(!svc(Some("10.0.0.1"), Some(&["10.0.0.1"])).is_headless());
        // Only one of the two written: the API server fills clusterIPs from clusterIP.
        assert!(svc(Some("None"), None).is_headless());
        assert!(svc(None, Some(&["None"])).is_headless());
        assert!(svc(Some(""), Some(&["None"])).is_headless());
        assert!(!svc(None, Some(&[])).is_headless());
        assert!(!svc(Some(""), None).is_headless());
        // clusterIP wins over a disagreeing clusterIPs (input the API server refuses).
        assert!(!svc(Some("10.0.0.1"), Some(&["None"])).is_headless());
    }

    #[test]
    fn cluster_ip_addrs_name_the_bad_field() {
        let ok = svc(Some("10.0.0.1"), Some(&["10.0.0.1", "fd00::1"]));
        assert_eq!(ok.cluster_ip_addrs().map(|v| v.len()).ok(), Some(2));
        assert_eq!(
            svc(Some("None"), Some(&["None"])).cluster_ip_addrs().ok(),
            Some(vec![])
        );
        let bad = svc(Some("10.0.0.1"), Some(&["10.0.0.1", "nope"]));
        let e = bad.cluster_ip_addrs().map_err(|e| e.to_string());
        assert!(
            matches!(&e, Err(m) if m.contains("spec.clusterIPs[1]") && m.contains("nope")),
            "{e:?}"
        );
    }
}
