//! Defaulting as the API server applies it on decode, before validation.

mod networkpolicy;
mod service;

pub use networkpolicy::default_network_policy;
pub use service::default_service;

use crate::Object;

/// Applies the defaults of the object's kind in place (kinds without defaulting are untouched).
pub fn default_object(obj: &mut Object) {
    match obj {
        Object::Service(s) => default_service(s),
        Object::NetworkPolicy(p) => default_network_policy(p),
        _ => {}
    }
}
