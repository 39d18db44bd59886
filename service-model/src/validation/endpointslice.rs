//! EndpointSlice validation.

use crate::EndpointSlice;
use crate::field::ErrorList;

/// `ValidateEndpointSliceCreate`.
pub fn validate_endpoint_slice_create(_s: &EndpointSlice) -> ErrorList {
    Vec::new()
}

/// `ValidateEndpointSliceUpdate`.
pub fn validate_endpoint_slice_update(_new: &EndpointSlice, _old: &EndpointSlice) -> ErrorList {
    Vec::new()
}
