//! core/v1: Service, Endpoints, Pod and Node.
//!
//! Against `k8s.io/api` v0.37.2 `core/v1/types.go` (k8s-openapi's generated types).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1 as k;

use super::{ConversionError, both_ways, object, time, time_text, try_list};
use crate::{
    ClientIpConfig, Container, ContainerPort, CoreEndpointPort, EndpointAddress, EndpointSubset, Endpoints,
    EnvVar, LoadBalancerIngress, LoadBalancerStatus, Node, NodeAddress, NodeSpec, NodeStatus, Pod,
    PodCondition, PodIp, PodSpec, PodStatus, PortStatus, ResourceRequirements, Service, ServicePort,
    ServiceSpec, ServiceStatus, SessionAffinityConfig, Taint,
};

// ---- Service ----

object!(
    Service,
    k::Service {
        spec: opt,
        status: tryopt,
    }
);

both_ways!(
    ServiceSpec,
    k::ServiceSpec {
        ports: optvec,
        selector: same,
        cluster_ip: same,
        cluster_ips: same,
        type_: same,
        external_ips: same,
        session_affinity: same,
        load_balancer_ip: same,
        load_balancer_source_ranges: same,
        external_name: same,
        external_traffic_policy: same,
        health_check_node_port: same,
        publish_not_ready_addresses: same,
        session_affinity_config: opt,
        ip_families: same,
        ip_family_policy: same,
        allocate_load_balancer_node_ports: same,
        load_balancer_class: same,
        internal_traffic_policy: same,
        traffic_distribution: same,
    }
);

both_ways!(
    ServicePort,
    k::ServicePort {
        name: same,
        protocol: same,
        app_protocol: same,
        port: same,
        target_port: opt,
        node_port: same,
    }
);

both_ways!(SessionAffinityConfig, k::SessionAffinityConfig { client_ip: opt });

both_ways!(
    ClientIpConfig,
    k::ClientIPConfig {
        timeout_seconds: same
    }
);

impl TryFrom<ServiceStatus> for k::ServiceStatus {
    type Error = ConversionError;

    fn try_from(s: ServiceStatus) -> Result<Self, ConversionError> {
        let ServiceStatus {
            load_balancer,
            conditions,
        } = s;
        Ok(k::ServiceStatus {
            load_balancer: load_balancer.map(Into::into),
            conditions: try_list(conditions, "conditions", TryInto::try_into)?,
        })
    }
}

impl From<k::ServiceStatus> for ServiceStatus {
    fn from(s: k::ServiceStatus) -> Self {
        ServiceStatus {
            load_balancer: s.load_balancer.map(Into::into),
            conditions: s.conditions.map(|v| v.into_iter().map(Into::into).collect()),
        }
    }
}

both_ways!(LoadBalancerStatus, k::LoadBalancerStatus { ingress: optvec });

both_ways!(
    LoadBalancerIngress,
    k::LoadBalancerIngress {
        ip: same,
        hostname: same,
        ip_mode: same,
        ports: optvec,
    }
);

both_ways!(
    PortStatus,
    k::PortStatus {
        port: same,
        protocol: same,
        error: same,
    }
);

// ---- Endpoints ----

object!(Endpoints, k::Endpoints { subsets: optvec });

both_ways!(
    EndpointSubset,
    k::EndpointSubset {
        addresses: optvec,
        not_ready_addresses: optvec,
        ports: optvec,
    }
);

both_ways!(
    EndpointAddress,
    k::EndpointAddress {
        ip: same,
        hostname: same,
        node_name: same,
        target_ref: opt,
    }
);

both_ways!(
    CoreEndpointPort,
    k::EndpointPort {
        name: same,
        port: same,
        protocol: same,
        app_protocol: same,
    }
);

// ---- Pod ----

object!(
    Pod,
    k::Pod {
        spec: opt,
        status: tryopt,
    }
);

impl From<PodSpec> for k::PodSpec {
    /// Absent `containers` become an empty list (k8s-openapi requires the field).
    fn from(s: PodSpec) -> Self {
        let PodSpec {
            node_name,
            hostname,
            subdomain,
            host_network,
            set_hostname_as_fqdn,
            enable_service_links,
            containers,
            init_containers,
        } = s;
        k::PodSpec {
            node_name,
            hostname,
            subdomain,
            host_network,
            set_hostname_as_fqdn,
            enable_service_links,
            containers: containers
                .unwrap_or_default()
                .into_iter()
                .map(Into::into)
                .collect(),
            init_containers: init_containers.map(|v| v.into_iter().map(Into::into).collect()),
            ..Default::default()
        }
    }
}

impl From<k::PodSpec> for PodSpec {
    /// An empty `containers` list becomes absent; everything svcnet does not read is dropped.
    fn from(s: k::PodSpec) -> Self {
        PodSpec {
            node_name: s.node_name,
            hostname: s.hostname,
            subdomain: s.subdomain,
            host_network: s.host_network,
            set_hostname_as_fqdn: s.set_hostname_as_fqdn,
            enable_service_links: s.enable_service_links,
            containers: (!s.containers.is_empty())
                .then(|| s.containers.into_iter().map(Into::into).collect()),
            init_containers: s.init_containers.map(|v| v.into_iter().map(Into::into).collect()),
        }
    }
}

both_ways!(
    Container,
    k::Container {
        name: same,
        image: same,
        restart_policy: same,
        ports: optvec,
        env: optvec,
        resources: opt,
    }
);

both_ways!(
    ContainerPort,
    k::ContainerPort {
        name: same,
        container_port: same,
        protocol: same,
        host_port: same,
        host_ip: same,
    }
);

both_ways!(
    EnvVar,
    k::EnvVar {
        name: same,
        value: same
    }
);

both_ways!(
    ResourceRequirements,
    k::ResourceRequirements {
        requests: optmap,
        limits: optmap,
    }
);

impl TryFrom<PodStatus> for k::PodStatus {
    type Error = ConversionError;

    fn try_from(s: PodStatus) -> Result<Self, ConversionError> {
        let PodStatus {
            phase,
            pod_ip,
            pod_ips,
            host_ip,
            conditions,
        } = s;
        Ok(k::PodStatus {
            phase,
            pod_ip,
            pod_ips: pod_ips.map(|v| v.into_iter().map(Into::into).collect()),
            host_ip,
            conditions: try_list(conditions, "conditions", TryInto::try_into)?,
            ..Default::default()
        })
    }
}

impl From<k::PodStatus> for PodStatus {
    fn from(s: k::PodStatus) -> Self {
        PodStatus {
            phase: s.phase,
            pod_ip: s.pod_ip,
            pod_ips: s.pod_ips.map(|v| v.into_iter().map(Into::into).collect()),
            host_ip: s.host_ip,
            conditions: s.conditions.map(|v| v.into_iter().map(Into::into).collect()),
        }
    }
}

both_ways!(PodIp, k::PodIP { ip: same });

impl TryFrom<PodCondition> for k::PodCondition {
    type Error = ConversionError;

    /// Fails on a probe or transition time that is not RFC 3339.
    fn try_from(c: PodCondition) -> Result<Self, ConversionError> {
        let PodCondition {
            type_,
            status,
            last_probe_time,
            last_transition_time,
            reason,
            message,
        } = c;
        Ok(k::PodCondition {
            type_,
            status,
            last_probe_time: time(last_probe_time, "lastProbeTime")?,
            last_transition_time: time(last_transition_time, "lastTransitionTime")?,
            reason,
            message,
            ..Default::default()
        })
    }
}

impl From<k::PodCondition> for PodCondition {
    fn from(c: k::PodCondition) -> Self {
        PodCondition {
            type_: c.type_,
            status: c.status,
            last_probe_time: c.last_probe_time.map(time_text),
            last_transition_time: c.last_transition_time.map(time_text),
            reason: c.reason,
            message: c.message,
        }
    }
}

// ---- Node ----

object!(
    Node,
    k::Node {
        spec: opt,
        status: tryopt,
    }
);

both_ways!(
    NodeSpec,
    k::NodeSpec {
        pod_cidr: same,
        pod_cidrs: same,
        unschedulable: same,
        provider_id: same,
        taints: optvec,
    }
);

both_ways!(
    Taint,
    k::Taint {
        key: same,
        value: same,
        effect: same,
    }
);

impl TryFrom<NodeStatus> for k::NodeStatus {
    type Error = ConversionError;

    fn try_from(s: NodeStatus) -> Result<Self, ConversionError> {
        let NodeStatus {
            allocatable,
            capacity,
            conditions,
            addresses,
        } = s;
        let quantities = |m: Option<BTreeMap<String, crate::Quantity>>| {
            m.map(|m| m.into_iter().map(|(k, v)| (k, v.into())).collect())
        };
        Ok(k::NodeStatus {
            allocatable: quantities(allocatable),
            capacity: quantities(capacity),
            conditions: try_list(conditions, "conditions", node_condition)?,
            addresses: addresses.map(|v| v.into_iter().map(Into::into).collect()),
            ..Default::default()
        })
    }
}

impl From<k::NodeStatus> for NodeStatus {
    fn from(s: k::NodeStatus) -> Self {
        type Quantities = Option<BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>;
        let quantities = |m: Quantities| m.map(|m| m.into_iter().map(|(k, v)| (k, v.into())).collect());
        NodeStatus {
            allocatable: quantities(s.allocatable),
            capacity: quantities(s.capacity),
            conditions: s.conditions.map(|v| {
                v.into_iter()
                    .map(|c| PodCondition {
                        type_: c.type_,
                        status: c.status,
                        last_probe_time: None,
                        last_transition_time: c.last_transition_time.map(time_text),
                        reason: c.reason,
                        message: c.message,
                    })
                    .collect()
            }),
            addresses: s.addresses.map(|v| v.into_iter().map(Into::into).collect()),
        }
    }
}

/// A Node condition held in svcnet's shared condition type: it has no `lastProbeTime`.
fn node_condition(c: PodCondition) -> Result<k::NodeCondition, ConversionError> {
    let PodCondition {
        type_,
        status,
        last_probe_time,
        last_transition_time,
        reason,
        message,
    } = c;
    if let Some(v) = last_probe_time {
        return Err(ConversionError::NoSuchField {
            field: "lastProbeTime".into(),
            value: v,
        });
    }
    Ok(k::NodeCondition {
        type_,
        status,
        last_transition_time: time(last_transition_time, "lastTransitionTime")?,
        reason,
        message,
        ..Default::default()
    })
}

both_ways!(
    NodeAddress,
    k::NodeAddress {
        type_: same,
        address: same,
    }
);
