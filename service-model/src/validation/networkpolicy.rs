//! NetworkPolicy validation.

use crate::NetworkPolicy;
use crate::field::ErrorList;

/// `ValidateNetworkPolicy` (create).
pub fn validate_network_policy_create(_np: &NetworkPolicy) -> ErrorList {
    Vec::new()
}

/// `ValidateNetworkPolicyUpdate`.
pub fn validate_network_policy_update(_new: &NetworkPolicy, _old: &NetworkPolicy) -> ErrorList {
    Vec::new()
}
