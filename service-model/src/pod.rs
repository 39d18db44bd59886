//! The parts of core/v1 `Pod` that endpoint computation reads.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/api/core/v1/types.go` (`Pod`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{ObjectMeta, Quantity};

/// Values of `status.phase`.
pub mod pod_phase {
    /// Accepted, not all containers running yet.
    pub const PENDING: &str = "Pending";
    /// Bound to a node, containers running.
    pub const RUNNING: &str = "Running";
    /// All containers terminated successfully.
    pub const SUCCEEDED: &str = "Succeeded";
    /// All containers terminated, at least one in failure.
    pub const FAILED: &str = "Failed";
    /// State unknown.
    pub const UNKNOWN: &str = "Unknown";
}

/// core/v1 `Pod` (the fields svcnet reads; others are ignored on input).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Pod {
    /// `v1`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// `Pod`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Name, namespace, labels, deletion timestamp.
    #[serde(default)]
    pub metadata: ObjectMeta,
    /// The pod's spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spec: Option<PodSpec>,
    /// The pod's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<PodStatus>,
}

impl Pod {
    /// The spec, or an empty one.
    pub fn spec(&self) -> PodSpecRef<'_> {
        PodSpecRef(self.spec.as_ref())
    }

    /// `status.phase`, or `""`.
    pub fn phase(&self) -> &str {
        self.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("")
    }

    /// The pod's IPs: `status.podIPs` when set, else `status.podIP`.
    pub fn ips(&self) -> Vec<&str> {
        let Some(st) = &self.status else { return Vec::new() };
        match &st.pod_ips {
            Some(ips) if !ips.is_empty() => ips
                .iter()
                .map(|p| p.ip.as_str())
                .filter(|s| !s.is_empty())
                .collect(),
            _ => st
                .pod_ip
                .as_deref()
                .filter(|s| !s.is_empty())
                .into_iter()
                .collect(),
        }
    }

    /// True when the pod's `Ready` condition is `True`. Only the first condition of type
    /// `Ready` counts, as in Kubernetes' `podutil.IsPodReady`: a later duplicate cannot make a
    /// not-ready pod ready.
    pub fn is_ready(&self) -> bool {
        first_condition_is_true(
            self.status.as_ref().and_then(|s| s.conditions.as_deref()),
            "Ready",
        )
    }

    /// True when a deletion timestamp is set.
    pub fn is_terminating(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }
}

/// Whether the first condition of `type_` says `True`, as Kubernetes' `IsPodReady` and
/// `IsNodeReady` read conditions (a later duplicate is ignored).
pub(crate) fn first_condition_is_true(conditions: Option<&[PodCondition]>, type_: &str) -> bool {
    conditions
        .and_then(|cs| cs.iter().find(|c| c.type_ == type_))
        .is_some_and(|c| c.status == "True")
}

/// Test helper: conditions from `(type, status)` pairs.
#[cfg(test)]
pub(crate) fn conditions(pairs: &[(&str, &str)]) -> Vec<PodCondition> {
    pairs
        .iter()
        .map(|(t, s)| PodCondition {
            type_: (*t).into(),
            status: (*s).into(),
            ..Default::default()
        })
        .collect()
}

/// A borrowed view of an optional `PodSpec` with defaults for absent fields.
#[derive(Debug, Clone, Copy)]
pub struct PodSpecRef<'a>(pub Option<&'a PodSpec>);

impl<'a> PodSpecRef<'a> {
    /// `spec.nodeName`, or `""`.
    pub fn node_name(&self) -> &'a str {
        self.0.and_then(|s| s.node_name.as_deref()).unwrap_or("")
    }

    /// `spec.hostname`, or `""`.
    pub fn hostname(&self) -> &'a str {
        self.0.and_then(|s| s.hostname.as_deref()).unwrap_or("")
    }

    /// `spec.subdomain`, or `""`.
    pub fn subdomain(&self) -> &'a str {
        self.0.and_then(|s| s.subdomain.as_deref()).unwrap_or("")
    }

    /// `spec.containers`, or none.
    pub fn containers(&self) -> &'a [Container] {
        self.0.and_then(|s| s.containers.as_deref()).unwrap_or(&[])
    }

    /// `spec.initContainers`, or none.
    pub fn init_containers(&self) -> &'a [Container] {
        self.0.and_then(|s| s.init_containers.as_deref()).unwrap_or(&[])
    }
}

/// core/v1 `PodSpec` (partial).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodSpec {
    /// The node the pod is bound to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_name: Option<String>,
    /// The pod's hostname (defaults to its name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hostname: Option<String>,
    /// The pod's subdomain: with a headless Service of that name, gives a DNS record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subdomain: Option<String>,
    /// Whether the pod uses the node's network namespace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_network: Option<bool>,
    /// Whether the pod's hostname is its FQDN.
    #[serde(
        rename = "setHostnameAsFQDN",
        default,
        skip_serializing_if = "Option::is_none"
    )]
    pub set_hostname_as_fqdn: Option<bool>,
    /// Whether service environment variables are injected (default true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_service_links: Option<bool>,
    /// The application containers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub containers: Option<Vec<Container>>,
    /// Init containers; those with `restartPolicy: Always` are sidecars.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init_containers: Option<Vec<Container>>,
}

/// core/v1 `Container` (partial).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Container {
    /// The container's name.
    #[serde(default)]
    pub name: String,
    /// The image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// `Always` for a sidecar init container.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
    /// The ports the container exposes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ports: Option<Vec<ContainerPort>>,
    /// The container's own environment variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Resource requests and limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
}

impl Container {
    /// The ports, or none.
    pub fn ports(&self) -> &[ContainerPort] {
        self.ports.as_deref().unwrap_or(&[])
    }
}

/// core/v1 `ResourceRequirements` (requests and limits).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceRequirements {
    /// Requested resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests: Option<BTreeMap<String, Quantity>>,
    /// Resource limits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limits: Option<BTreeMap<String, Quantity>>,
}

/// core/v1 `EnvVar` (name and literal value).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvVar {
    /// The variable's name.
    #[serde(default)]
    pub name: String,
    /// The literal value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// core/v1 `ContainerPort`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContainerPort {
    /// The port's name (an IANA service name), referenced by named `targetPort`s.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The port number in the pod.
    #[serde(default)]
    pub container_port: i32,
    /// `TCP` (default), `UDP` or `SCTP`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// The port on the host, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_port: Option<i32>,
    /// The host IP to bind the host port to.
    #[serde(rename = "hostIP", default, skip_serializing_if = "Option::is_none")]
    pub host_ip: Option<String>,
}

impl ContainerPort {
    /// The protocol as written, treating unset as `TCP` (the API server's default).
    pub fn protocol(&self) -> &str {
        self.protocol.as_deref().unwrap_or(crate::service::protocol::TCP)
    }
}

/// core/v1 `PodStatus` (partial).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodStatus {
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The primary pod IP.
    #[serde(rename = "podIP", default, skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<String>,
    /// All pod IPs, one per family.
    #[serde(rename = "podIPs", default, skip_serializing_if = "Option::is_none")]
    pub pod_ips: Option<Vec<PodIp>>,
    /// The IP of the pod's node.
    #[serde(rename = "hostIP", default, skip_serializing_if = "Option::is_none")]
    pub host_ip: Option<String>,
    /// Conditions (`Ready`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<PodCondition>>,
}

/// core/v1 `PodIP`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PodIp {
    /// The address.
    #[serde(default)]
    pub ip: String,
}

/// core/v1 `PodCondition` (also used for Node conditions, which share the shape svcnet reads).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PodCondition {
    /// The condition's type, e.g. `Ready`.
    #[serde(rename = "type", default)]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(default)]
    pub status: String,
    /// When the condition was last probed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_probe_time: Option<String>,
    /// When the status last changed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// A machine-readable reason.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// A human-readable message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(conditions: &[(&str, &str)]) -> Pod {
        Pod {
            status: Some(PodStatus {
                conditions: Some(super::conditions(conditions)),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn readiness_reads_the_first_ready_condition() {
        assert!(!Pod::default().is_ready());
        assert!(!pod(&[]).is_ready());
        assert!(pod(&[("PodScheduled", "True"), ("Ready", "True")]).is_ready());
        assert!(!pod(&[("ContainersReady", "True"), ("Ready", "False")]).is_ready());
        // A later duplicate does not override the first Ready condition, either way.
        assert!(!pod(&[("Ready", "False"), ("Ready", "True")]).is_ready());
        assert!(pod(&[("Ready", "True"), ("Ready", "False")]).is_ready());
    }

    #[test]
    fn ips_prefer_pod_ips() {
        let mut p = Pod::default();
        assert!(p.ips().is_empty());
        p.status = Some(PodStatus {
            pod_ip: Some("10.0.0.1".into()),
            ..Default::default()
        });
        assert_eq!(p.ips(), ["10.0.0.1"]);
        if let Some(st) = p.status.as_mut() {
            st.pod_ips = Some(vec![
                PodIp {
                    ip: "10.0.0.2".into(),
                },
                PodIp { ip: String::new() },
                PodIp { ip: "fd00::2".into() },
            ]);
        }
        assert_eq!(p.ips(), ["10.0.0.2", "fd00::2"]);
    }
}
