//! Service validation (`ValidateService*`).

use crate::Service;
use crate::field::ErrorList;

/// `ValidateServiceCreate`.
pub fn validate_service_create(_svc: &Service) -> ErrorList {
    Vec::new()
}

/// `ValidateServiceUpdate`.
pub fn validate_service_update(_new: &Service, _old: &Service) -> ErrorList {
    Vec::new()
}

/// `ValidateServiceStatusUpdate`.
pub fn validate_service_status_update(_new: &Service, _old: &Service) -> ErrorList {
    Vec::new()
}
