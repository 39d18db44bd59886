//! Defaulting as the API server applies it on decode, before validation.
//!
//! Follows Kubernetes v1.37.2: `pkg/apis/core/v1/defaults.go`, `pkg/apis/discovery/v1/defaults.go`,
//! `pkg/apis/networking/v1/defaults.go`.

mod endpointslice;
mod networkpolicy;
mod service;

pub use endpointslice::default_endpoint_slice;
pub use networkpolicy::default_network_policy;
pub use service::{DEFAULT_CLIENT_IP_SERVICE_AFFINITY_SECONDS, default_service, normalize_cluster_ips};

use crate::Object;

/// Applies the defaults of the object's kind in place (kinds without defaulting are untouched).
pub fn default_object(obj: &mut Object) {
    match obj {
        Object::Service(s) => default_service(s),
        Object::EndpointSlice(s) => default_endpoint_slice(s),
        Object::NetworkPolicy(p) => default_network_policy(p),
        _ => {}
    }
}
