//! Validation as the API server runs it for create, update and status update.
//!
//! Each function returns every error found (an empty list means valid), with Kubernetes field
//! paths, error types and messages.

mod endpointslice;
pub(crate) mod fieldpath;
mod ip;
pub(crate) mod meta;
pub mod names;
mod networkpolicy;
mod service;
mod servicecidr;

pub use endpointslice::{validate_endpoint_slice_create, validate_endpoint_slice_update};
pub use networkpolicy::{validate_network_policy_create, validate_network_policy_update};
pub use service::{
    validate_service_cluster_ips_related_fields, validate_service_create, validate_service_status_update,
    validate_service_update,
};
pub use servicecidr::{
    validate_ip_address, validate_ip_address_update, validate_service_cidr_create,
    validate_service_cidr_status_update, validate_service_cidr_update,
};

use crate::Object;
use crate::field::{ErrorList, FieldError, Path};

/// The kinds this module validates, in the order Kubernetes' API groups list them. Other kinds
/// svcnet reads (Pod, Node, Endpoints) are not validated: [`validate_object`] gives them an
/// empty list.
pub const VALIDATED_KINDS: &[&str] = &[
    "Service",
    "EndpointSlice",
    "ServiceCIDR",
    "IPAddress",
    "NetworkPolicy",
];

/// Whether [`validate_object`] checks objects of `obj`'s kind (see [`VALIDATED_KINDS`]); an
/// empty error list for any other kind means "not looked at", not "valid".
pub fn is_validated(obj: &Object) -> bool {
    VALIDATED_KINDS.contains(&obj.kind())
}

/// Validates `obj` as a create, or as an update of `old` when given.
///
/// An `old` of another kind yields one `InternalError`. Kinds that svcnet reads but the API
/// server does not validate here (Pod, Node, Endpoints) give an empty list.
pub fn validate_object(obj: &Object, old: Option<&Object>) -> ErrorList {
    match (obj, old) {
        (Object::Service(s), None) => validate_service_create(s),
        (Object::Service(s), Some(Object::Service(o))) => validate_service_update(s, o),
        (Object::EndpointSlice(s), None) => validate_endpoint_slice_create(s),
        (Object::EndpointSlice(s), Some(Object::EndpointSlice(o))) => validate_endpoint_slice_update(s, o),
        (Object::ServiceCidr(s), None) => validate_service_cidr_create(s),
        (Object::ServiceCidr(s), Some(Object::ServiceCidr(o))) => validate_service_cidr_update(s, o),
        (Object::IpAddress(s), None) => validate_ip_address(s),
        (Object::IpAddress(s), Some(Object::IpAddress(o))) => validate_ip_address_update(s, o),
        (Object::NetworkPolicy(s), None) => validate_network_policy_create(s),
        (Object::NetworkPolicy(s), Some(Object::NetworkPolicy(o))) => validate_network_policy_update(s, o),
        (o, Some(old)) if o.kind() != old.kind() => vec![FieldError::internal(
            &Path::new("kind"),
            format!("cannot validate an update of a {} to a {}", old.kind(), o.kind()),
        )],
        _ => Vec::new(),
    }
}

/// Validates `obj` as a status update of `old` (`ValidateServiceStatusUpdate`,
/// `ValidateServiceCIDRStatusUpdate`); kinds without a status rule set are validated as a
/// plain update.
pub fn validate_object_status(obj: &Object, old: &Object) -> ErrorList {
    match (obj, old) {
        (Object::Service(s), Object::Service(o)) => validate_service_status_update(s, o),
        (Object::ServiceCidr(s), Object::ServiceCidr(o)) => validate_service_cidr_status_update(s, o),
        _ => validate_object(obj, Some(old)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dispatch_by_kind() {
        let svc = Object::Service(Box::default());
        let node = Object::Node(Box::default());
        assert!(!validate_object(&svc, None).is_empty());
        assert!(validate_object(&node, None).is_empty());
        let e = validate_object(&svc, Some(&node));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].type_, crate::field::ErrorType::Internal);
        assert!(is_validated(&svc) && !is_validated(&node));
        assert!(!is_validated(&Object::Pod(Box::default())));
        assert!(!is_validated(&Object::Endpoints(Box::default())));
        assert!(is_validated(&Object::NetworkPolicy(Box::default())));
        let cidr = Object::ServiceCidr(Box::default());
        // A status update only checks metadata: the missing CIDRs are not reported.
        let status = validate_object_status(&cidr, &cidr);
        assert!(
            status.iter().all(|e| e.field.starts_with("metadata")),
            "{status:?}"
        );
        assert!(
            validate_object(&cidr, None)
                .iter()
                .any(|e| e.field == "spec.cidrs")
        );
    }
}
