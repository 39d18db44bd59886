//! networking/v1: NetworkPolicy, ServiceCIDR and IPAddress.
//!
//! Against `k8s.io/api` v0.37.2 `networking/v1/types.go` (k8s-openapi's generated types).

use k8s_openapi::api::networking::v1 as k;

use super::{ConversionError, both_ways, object, try_list};
use crate::{
    IpAddress, IpAddressSpec, IpBlock, NetworkPolicy, NetworkPolicyEgressRule, NetworkPolicyIngressRule,
    NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec, ParentReference, ServiceCidr, ServiceCidrSpec,
    ServiceCidrStatus,
};

// ---- NetworkPolicy ----

object!(NetworkPolicy, k::NetworkPolicy { spec: opt });

both_ways!(
    NetworkPolicySpec,
    k::NetworkPolicySpec {
        pod_selector: opt,
        ingress: optvec,
        egress: optvec,
        policy_types: same,
    }
);

both_ways!(
    NetworkPolicyIngressRule,
    k::NetworkPolicyIngressRule {
        ports: optvec,
        from: optvec,
    }
);

both_ways!(
    NetworkPolicyEgressRule,
    k::NetworkPolicyEgressRule {
        ports: optvec,
        to: optvec,
    }
);

both_ways!(
    NetworkPolicyPeer,
    k::NetworkPolicyPeer {
        pod_selector: opt,
        namespace_selector: opt,
        ip_block: opt,
    }
);

both_ways!(
    IpBlock,
    k::IPBlock {
        cidr: same,
        except: same,
    }
);

both_ways!(
    NetworkPolicyPort,
    k::NetworkPolicyPort {
        protocol: same,
        port: opt,
        end_port: same,
    }
);

// ---- ServiceCIDR ----

object!(
    /// Fails also on a status condition without `lastTransitionTime` (metav1 requires it).
    ServiceCidr,
    k::ServiceCIDR {
        spec: opt,
        status: tryopt,
    }
);

both_ways!(ServiceCidrSpec, k::ServiceCIDRSpec { cidrs: same });

impl TryFrom<ServiceCidrStatus> for k::ServiceCIDRStatus {
    type Error = ConversionError;

    fn try_from(s: ServiceCidrStatus) -> Result<Self, ConversionError> {
        let ServiceCidrStatus { conditions } = s;
        Ok(k::ServiceCIDRStatus {
            conditions: try_list(conditions, "conditions", TryInto::try_into)?,
        })
    }
}

impl From<k::ServiceCIDRStatus> for ServiceCidrStatus {
    fn from(s: k::ServiceCIDRStatus) -> Self {
        ServiceCidrStatus {
            conditions: s.conditions.map(|v| v.into_iter().map(Into::into).collect()),
        }
    }
}

// ---- IPAddress ----

object!(
    /// Fails also when `spec.parentRef` or its `name` or `resource` is unset, or (Kubernetes
    /// 1.36 and later) `spec`: the k8s-openapi type requires them.
    IpAddress,
    k::IPAddress {
        spec: custom(ip_address_spec_to_k8s, ip_address_spec_from_k8s),
    }
);

// Kubernetes 1.36 made an IPAddress's `spec` required in k8s-openapi; before, it is optional.
k8s_openapi::k8s_if_ge_1_36! {
    fn ip_address_spec_to_k8s(spec: Option<IpAddressSpec>) -> Result<k::IPAddressSpec, ConversionError> {
        spec.ok_or_else(|| ConversionError::Missing { field: "spec".into() })?
            .try_into()
            .map_err(|e: ConversionError| e.under("spec"))
    }

    fn ip_address_spec_from_k8s(spec: k::IPAddressSpec) -> Option<IpAddressSpec> {
        Some(spec.into())
    }
}

k8s_openapi::k8s_if_le_1_35! {
    fn ip_address_spec_to_k8s(spec: Option<IpAddressSpec>) -> Result<Option<k::IPAddressSpec>, ConversionError> {
        spec.map(k::IPAddressSpec::try_from)
            .transpose()
            .map_err(|e| e.under("spec"))
    }

    fn ip_address_spec_from_k8s(spec: Option<k::IPAddressSpec>) -> Option<IpAddressSpec> {
        spec.map(Into::into)
    }
}

impl TryFrom<IpAddressSpec> for k::IPAddressSpec {
    type Error = ConversionError;

    fn try_from(s: IpAddressSpec) -> Result<Self, ConversionError> {
        let IpAddressSpec { parent_ref } = s;
        let parent_ref = parent_ref.ok_or_else(|| ConversionError::Missing {
            field: "parentRef".into(),
        })?;
        Ok(k::IPAddressSpec {
            parent_ref: parent_ref
                .try_into()
                .map_err(|e: ConversionError| e.under("parentRef"))?,
        })
    }
}

impl From<k::IPAddressSpec> for IpAddressSpec {
    fn from(s: k::IPAddressSpec) -> Self {
        IpAddressSpec {
            parent_ref: Some(s.parent_ref.into()),
        }
    }
}

impl TryFrom<ParentReference> for k::ParentReference {
    type Error = ConversionError;

    fn try_from(r: ParentReference) -> Result<Self, ConversionError> {
        let ParentReference {
            group,
            resource,
            namespace,
            name,
        } = r;
        let missing = |f: &str| ConversionError::Missing { field: f.into() };
        Ok(k::ParentReference {
            group,
            resource: resource.ok_or_else(|| missing("resource"))?,
            namespace,
            name: name.ok_or_else(|| missing("name"))?,
        })
    }
}

impl From<k::ParentReference> for ParentReference {
    fn from(r: k::ParentReference) -> Self {
        ParentReference {
            group: r.group,
            resource: Some(r.resource),
            namespace: r.namespace,
            name: Some(r.name),
        }
    }
}
