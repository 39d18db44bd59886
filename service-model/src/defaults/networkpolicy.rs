//! NetworkPolicy defaults.

use crate::NetworkPolicy;

/// Applies the API server's NetworkPolicy defaults in place (idempotent).
pub fn default_network_policy(_np: &mut NetworkPolicy) {
    // Filled in by the NetworkPolicy work (issue 7).
}
