//! metav1 and apimachinery types: ObjectMeta, OwnerReference, Condition, LabelSelector,
//! IntOrString, Quantity, and core/v1 ObjectReference.
//!
//! Against `k8s.io/apimachinery` v0.37.2 `pkg/apis/meta/v1/types.go` (k8s-openapi's generated
//! types).

use k8s_openapi::api::core::v1 as k;
use k8s_openapi::apimachinery::pkg::api::resource as kres;
use k8s_openapi::apimachinery::pkg::apis::meta::v1 as kmeta;
use k8s_openapi::apimachinery::pkg::util::intstr as kintstr;

use super::{ConversionError, both_ways, time, time_text};
use crate::{
    Condition, IntOrString, LabelSelector, LabelSelectorRequirement, ObjectMeta, ObjectReference,
    OwnerReference, Quantity,
};

impl TryFrom<ObjectMeta> for kmeta::ObjectMeta {
    type Error = ConversionError;

    /// Fails on a creation or deletion timestamp that is not RFC 3339.
    fn try_from(m: ObjectMeta) -> Result<Self, ConversionError> {
        let ObjectMeta {
            name,
            generate_name,
            namespace,
            uid,
            resource_version,
            generation,
            creation_timestamp,
            deletion_timestamp,
            deletion_grace_period_seconds,
            labels,
            annotations,
            owner_references,
            finalizers,
        } = m;
        Ok(kmeta::ObjectMeta {
            name,
            generate_name,
            namespace,
            uid,
            resource_version,
            generation,
            creation_timestamp: time(creation_timestamp, "metadata.creationTimestamp")?,
            deletion_timestamp: time(deletion_timestamp, "metadata.deletionTimestamp")?,
            deletion_grace_period_seconds,
            labels,
            annotations,
            owner_references: owner_references.map(|v| v.into_iter().map(Into::into).collect()),
            finalizers,
            ..Default::default()
        })
    }
}

impl From<kmeta::ObjectMeta> for ObjectMeta {
    /// Drops `managedFields` and `selfLink`, which svcnet does not model.
    fn from(m: kmeta::ObjectMeta) -> Self {
        let kmeta::ObjectMeta {
            name,
            generate_name,
            namespace,
            uid,
            resource_version,
            generation,
            creation_timestamp,
            deletion_timestamp,
            deletion_grace_period_seconds,
            labels,
            annotations,
            owner_references,
            finalizers,
            ..
        } = m;
        ObjectMeta {
            name,
            generate_name,
            namespace,
            uid,
            resource_version,
            generation,
            creation_timestamp: creation_timestamp.map(time_text),
            deletion_timestamp: deletion_timestamp.map(time_text),
            deletion_grace_period_seconds,
            labels,
            annotations,
            owner_references: owner_references.map(|v| v.into_iter().map(Into::into).collect()),
            finalizers,
        }
    }
}

both_ways!(
    OwnerReference,
    kmeta::OwnerReference {
        api_version: same,
        kind: same,
        name: same,
        uid: same,
        controller: same,
        block_owner_deletion: same,
    }
);

both_ways!(
    ObjectReference,
    k::ObjectReference {
        kind: opt,
        namespace: opt,
        name: opt,
        uid: opt,
        api_version: opt,
        resource_version: opt,
        field_path: opt,
    }
);

both_ways!(
    LabelSelector,
    kmeta::LabelSelector {
        match_labels: same,
        match_expressions: optvec,
    }
);

both_ways!(
    LabelSelectorRequirement,
    kmeta::LabelSelectorRequirement {
        key: same,
        operator: same,
        values: same,
    }
);

impl TryFrom<Condition> for kmeta::Condition {
    type Error = ConversionError;

    /// Fails when `lastTransitionTime` is unset (metav1 requires it) or not RFC 3339.
    fn try_from(c: Condition) -> Result<Self, ConversionError> {
        let Condition {
            type_,
            status,
            observed_generation,
            last_transition_time,
            reason,
            message,
        } = c;
        let last_transition_time =
            time(last_transition_time, "lastTransitionTime")?.ok_or_else(|| ConversionError::Missing {
                field: "lastTransitionTime".into(),
            })?;
        Ok(kmeta::Condition {
            type_,
            status,
            observed_generation,
            last_transition_time,
            reason,
            message,
        })
    }
}

impl From<kmeta::Condition> for Condition {
    fn from(c: kmeta::Condition) -> Self {
        Condition {
            type_: c.type_,
            status: c.status,
            observed_generation: c.observed_generation,
            last_transition_time: Some(time_text(c.last_transition_time)),
            reason: c.reason,
            message: c.message,
        }
    }
}

impl From<IntOrString> for kintstr::IntOrString {
    fn from(v: IntOrString) -> Self {
        match v {
            IntOrString::Int(i) => kintstr::IntOrString::Int(i),
            IntOrString::String(s) => kintstr::IntOrString::String(s),
        }
    }
}

impl From<kintstr::IntOrString> for IntOrString {
    fn from(v: kintstr::IntOrString) -> Self {
        match v {
            kintstr::IntOrString::Int(i) => IntOrString::Int(i),
            kintstr::IntOrString::String(s) => IntOrString::String(s),
        }
    }
}

impl From<Quantity> for kres::Quantity {
    fn from(q: Quantity) -> Self {
        kres::Quantity(q.0)
    }
}

impl From<kres::Quantity> for Quantity {
    fn from(q: kres::Quantity) -> Self {
        Quantity(q.0)
    }
}
