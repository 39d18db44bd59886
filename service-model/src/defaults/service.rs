//! `SetDefaults_Service` and the defaults of its parts.

use crate::Service;

/// Applies the API server's Service defaults in place (idempotent).
pub fn default_service(_svc: &mut Service) {
    // Filled in by the validation work (issue 2).
}
