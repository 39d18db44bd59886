//! discovery/v1: EndpointSlice.
//!
//! Against `k8s.io/api` v0.37.2 `discovery/v1/types.go` (k8s-openapi's generated types).

use k8s_openapi::api::discovery::v1 as k;

use super::{ConversionError, both_ways, check_type_meta, type_meta};
use crate::{Endpoint, EndpointConditions, EndpointHints, EndpointPort, EndpointSlice, ForNode, ForZone};

impl TryFrom<EndpointSlice> for k::EndpointSlice {
    type Error = ConversionError;

    /// Fails only on `apiVersion`/`kind` of another type or a bad metadata timestamp.
    fn try_from(s: EndpointSlice) -> Result<Self, ConversionError> {
        let EndpointSlice {
            api_version,
            kind,
            metadata,
            address_type,
            endpoints,
            ports,
        } = s;
        check_type_meta::<k::EndpointSlice>(api_version, kind)?;
        Ok(k::EndpointSlice {
            metadata: metadata.try_into()?,
            address_type,
            endpoints: endpoints_to_k8s(endpoints.map(|v| v.into_iter().map(Into::into).collect())),
            ports: ports.map(|v| v.into_iter().map(Into::into).collect()),
        })
    }
}

impl From<k::EndpointSlice> for EndpointSlice {
    fn from(s: k::EndpointSlice) -> Self {
        let (api_version, kind) = type_meta::<k::EndpointSlice>();
        EndpointSlice {
            api_version,
            kind,
            metadata: s.metadata.into(),
            address_type: s.address_type,
            endpoints: endpoints_from_k8s(s.endpoints).map(|v| v.into_iter().map(Into::into).collect()),
            ports: s.ports.map(|v| v.into_iter().map(Into::into).collect()),
        }
    }
}

// Kubernetes 1.36 made `endpoints` optional in k8s-openapi's EndpointSlice; before, an absent
// list and an empty one are the same value there (svcnet gets an empty list back).
k8s_openapi::k8s_if_ge_1_36! {
    fn endpoints_to_k8s(v: Option<Vec<k::Endpoint>>) -> Option<Vec<k::Endpoint>> {
        v
    }

    fn endpoints_from_k8s(v: Option<Vec<k::Endpoint>>) -> Option<Vec<k::Endpoint>> {
        v
    }
}

k8s_openapi::k8s_if_le_1_35! {
    fn endpoints_to_k8s(v: Option<Vec<k::Endpoint>>) -> Vec<k::Endpoint> {
        v.unwrap_or_default()
    }

    fn endpoints_from_k8s(v: Vec<k::Endpoint>) -> Option<Vec<k::Endpoint>> {
        Some(v)
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
            target_ref: target_ref.map(Into::into),
            deprecated_topology,
            node_name: node_name.map(Into::into),
            zone: zone.map(Into::into),
            hints: hints.map(Into::into),
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
            target_ref: e.target_ref.map(Into::into),
            deprecated_topology: e.deprecated_topology,
            node_name: e.node_name.map(Into::into),
            zone: e.zone.map(Into::into),
            hints: e.hints.map(Into::into),
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
