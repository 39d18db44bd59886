//! ServiceCIDR and IPAddress validation.

use crate::field::ErrorList;
use crate::{IpAddress, ServiceCidr};

/// `ValidateServiceCIDR`.
pub fn validate_service_cidr_create(_s: &ServiceCidr) -> ErrorList {
    Vec::new()
}

/// `ValidateServiceCIDRUpdate`.
pub fn validate_service_cidr_update(_new: &ServiceCidr, _old: &ServiceCidr) -> ErrorList {
    Vec::new()
}

/// `ValidateIPAddress`.
pub fn validate_ip_address(_ip: &IpAddress) -> ErrorList {
    Vec::new()
}
