//! discovery/v1: EndpointSlice.
//!
//! Against `k8s.io/api` v0.37.2 `discovery/v1/types.go` (k8s-openapi's generated types).

use k8s_openapi::api::discovery::v1 as k;

use super::{ConversionError, both_ways, object};
use crate::{Endpoint, EndpointConditions, EndpointHints, EndpointPort, EndpointSlice, ForNode, ForZone};

object!(
    /// Fails only on `apiVersion`/`kind` of another type or a bad metadata timestamp.
    EndpointSlice,
    k::EndpointSlice {
        address_type: same,
        endpoints: custom(endpoints_to_k8s, endpoints_from_k8s),
        ports: optvec,
    }
);

// Kubernetes 1.36 made `endpoints` optional in k8s-openapi's EndpointSlice; before, an absent
// list and an empty one are the same value there (svcnet gets an empty list back).
k8s_openapi::k8s_if_ge_1_36! {
    #[allow(clippy::unnecessary_wraps)]
    fn endpoints_to_k8s(v: Option<Vec<Endpoint>>) -> Result<Option<Vec<k::Endpoint>>, ConversionError> {
        Ok(v.map(|v| v.into_iter().map(Into::into).collect()))
    }

    fn endpoints_from_k8s(v: Option<Vec<k::Endpoint>>) -> Option<Vec<Endpoint>> {
        v.map(|v| v.into_iter().map(Into::into).collect())
    }
}

k8s_openapi::k8s_if_le_1_35! {
    #[allow(clippy::unnecessary_wraps)]
    fn endpoints_to_k8s(v: Option<Vec<Endpoint>>) -> Result<Vec<k::Endpoint>, ConversionError> {
        Ok(v.unwrap_or_default().into_iter().map(Into::into).collect())
    }

    fn endpoints_from_k8s(v: Vec<k::Endpoint>) -> Option<Vec<Endpoint>> {
        Some(v.into_iter().map(Into::into).collect())
    }
}

impl From<Endpoint> for k::Endpoint {
    /// `conditions` is always set (Kubernetes always writes it).
    fn from(e: Endpoint) -> Self {
        let Endpoint {
            addresses,
            conditions,
            hostname,
            target_ref,
            deprecated_topology,
            node_name,
            zone,
            hints,
        } = e;
        k::Endpoint {
            addresses: addresses.into_iter().map(Into::into).collect(),
            conditions: Some(conditions.into()),
            hostname: hostname.map(Into::into),
            target_ref: target_ref.map(|t| (*t).into()),
            deprecated_topology: deprecated_topology.map(|t| *t),
            node_name: node_name.map(Into::into),
            zone: zone.map(Into::into),
            hints: hints.map(|h| (*h).into()),
        }
    }
}

impl From<k::Endpoint> for Endpoint {
    /// Absent `conditions` are the empty conditions (all unknown).
    fn from(e: k::Endpoint) -> Self {
        Endpoint {
            addresses: e.addresses.into_iter().map(Into::into).collect(),
            conditions: e.conditions.map(Into::into).unwrap_or_default(),
            hostname: e.hostname.map(Into::into),
            target_ref: e.target_ref.map(|t| Box::new(t.into())),
            deprecated_topology: e.deprecated_topology.map(Box::new),
            node_name: e.node_name.map(Into::into),
            zone: e.zone.map(Into::into),
            hints: e.hints.map(|h| Box::new(h.into())),
        }
    }
}

both_ways!(
    EndpointConditions,
    k::EndpointConditions {
        ready: same,
        serving: same,
        terminating: same,
    }
);

both_ways!(
    EndpointHints,
    k::EndpointHints {
        for_zones: optvec,
        for_nodes: optvec,
    }
);

both_ways!(ForZone, k::ForZone { name: same });

both_ways!(ForNode, k::ForNode { name: same });

both_ways!(
    EndpointPort,
    k::EndpointPort {
        name: same,
        protocol: same,
        port: same,
        app_protocol: same,
    }
);
