//! The ServiceCIDR deletion guard: whether IPs in use still depend on a ServiceCIDR being
//! deleted, and what the controller does with its finalizer.
//!
//! Follows Kubernetes v1.37.2: `pkg/controller/servicecidrs/servicecidrs_controller.go`
//! (`canDeleteCIDR`, the `Terminating` condition, the finalizer grace period).

use svcnet_model::{Condition, SERVICE_CIDR_CONDITION_READY};

use super::MultiCidrAllocator;
use crate::net::{contains_prefix, prefix_contains_ip};
use crate::{AllocError, IpFamily};

/// Seconds a deleted ServiceCIDR keeps its finalizer after the guard allows deletion.
pub const DELETION_GRACE_SECONDS: u64 = 10;
/// Message of the `Ready=False` condition of a ServiceCIDR whose deletion is blocked.
pub const TERMINATING_MESSAGE: &str =
    "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR";

/// What the deletion guard decides for a ServiceCIDR being deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum DeletionDecision {
    /// IPs in use depend on it alone: it keeps its finalizer and gets this `Ready=False`
    /// condition (reason `Terminating`).
    Blocked(Condition),
    /// Deletion is allowed once the grace period ends, in this many seconds.
    Wait(u64),
    /// The finalizer may be removed now.
    RemoveFinalizer,
}

impl MultiCidrAllocator {
    /// `canDeleteCIDR`: true when every CIDR of ServiceCIDR `name` lies inside another
    /// ServiceCIDR, or no managed IPAddress depends on this ServiceCIDR alone.
    pub fn can_delete_cidr(&self, name: &str) -> Result<bool, AllocError> {
        let obj = self
            .service_cidrs
            .get(name)
            .ok_or_else(|| AllocError::invalid("ServiceCIDR", name, "not found"))?;
        let others = || self.service_cidrs.iter().filter(|(n, _)| n.as_str() != name);
        let has_parent = obj
            .cidrs
            .iter()
            .all(|c| others().any(|(_, o)| o.cidrs.iter().any(|oc| contains_prefix(oc, c))));
        if has_parent {
            return Ok(true);
        }
        for c in &obj.cidrs {
            let family = IpFamily::of_net(c);
            for (ip, r) in &self.addresses {
                if !r.is_managed_of(family) || !prefix_contains_ip(c, *ip) {
                    continue;
                }
                let elsewhere = others().any(|(_, o)| o.cidrs.iter().any(|oc| prefix_contains_ip(oc, *ip)));
                if !elsewhere {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    /// The deletion guard for ServiceCIDR `name`, deleted `seconds_since_deletion` ago.
    pub fn deletion_decision(
        &self,
        name: &str,
        seconds_since_deletion: u64,
    ) -> Result<DeletionDecision, AllocError> {
        if !self.can_delete_cidr(name)? {
            return Ok(DeletionDecision::Blocked(Condition {
                type_: SERVICE_CIDR_CONDITION_READY.into(),
                status: "False".into(),
                reason: "Terminating".into(),
                message: TERMINATING_MESSAGE.into(),
                ..Condition::default()
            }));
        }
        if seconds_since_deletion < DELETION_GRACE_SECONDS {
            return Ok(DeletionDecision::Wait(
                DELETION_GRACE_SECONDS - seconds_since_deletion,
            ));
        }
        Ok(DeletionDecision::RemoveFinalizer)
    }
}
