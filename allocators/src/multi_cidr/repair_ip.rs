//! The IPAddress repair loop of the multi-CIDR allocator: ClusterIPs without their IPAddress,
//! IPAddresses without their Service, duplicates and wrong labels.
//!
//! Follows Kubernetes v1.37.2: `pkg/registry/core/service/ipallocator/controller/repairip.go`.

use std::collections::BTreeMap;
use std::net::IpAddr;

use svcnet_model::Service;

use super::{IP_ALLOCATOR_CONTROLLER, IpAddressRecord, MultiCidrAllocator, ServiceRef};
use crate::net::prefix_contains_ip;
use crate::repair::event;
use crate::{IpFamily, RepairEvent, RepairFinding};

/// Seconds an IPAddress may point at a Service that does not exist yet before repair deletes
/// it (the API server's request timeout).
pub const IP_ADDRESS_GRACE_SECONDS: i64 = 60;

impl MultiCidrAllocator {
    /// One full pass of the IPAddress repair loop (`RepairIPAddress`), at time `now` (seconds
    /// since the Unix epoch):
    ///
    /// - each ClusterIP of each Service: outside every ServiceCIDR is reported; a missing
    ///   IPAddress is created; one pointing at something else than a Service, or at a Service
    ///   that does not exist, is recreated for this Service; one held by another Service that
    ///   lists the same IP is reported as a duplicate; wrong labels are fixed;
    /// - each IPAddress managed by the allocator: deleted when it points at no Service, at a
    ///   Service that does not list it, or at a missing Service and is older than
    ///   [`IP_ADDRESS_GRACE_SECONDS`] (or of unknown age).
    ///
    /// IPAddresses managed by other controllers are never touched.
    pub fn repair_ip_addresses(&mut self, services: &[Service], now: i64) -> Vec<RepairEvent> {
        let mut events = Vec::new();
        let by_ref: BTreeMap<ServiceRef, &Service> = services
            .iter()
            .map(|s| (ServiceRef::new(s.metadata.namespace(), s.metadata.name()), s))
            .collect();
        let lists = |svc: &Service, ip: IpAddr| svc.cluster_ip_addrs().is_ok_and(|v| v.contains(&ip));
        for svc in services {
            let spec = svc.spec();
            let primary = spec.cluster_ip.as_deref().unwrap_or("");
            if primary.is_empty() || primary == svcnet_model::CLUSTER_IP_NONE {
                continue;
            }
            let me = ServiceRef::new(svc.metadata.namespace(), svc.metadata.name());
            let key = svc.metadata.key();
            let texts: Vec<&str> = match spec.cluster_ips.as_deref().filter(|v| !v.is_empty()) {
                Some(v) => v.iter().map(String::as_str).collect(),
                None => vec![primary],
            };
            for text in texts {
                let Ok(ip) = text.parse::<IpAddr>() else {
                    events.push(event(
                        RepairFinding::NotValid,
                        "ClusterIPNotValid",
                        &key,
                        text,
                        format!("Cluster IP {text} is not a valid IP; please recreate Service"),
                    ));
                    continue;
                };
                let fam = IpFamily::of(ip);
                let covered = self
                    .service_cidrs
                    .values()
                    .any(|o| o.cidrs.iter().any(|c| prefix_contains_ip(c, ip)));
                if !covered {
                    events.push(event(
                        RepairFinding::OutOfRange,
                        "ClusterIPOutOfRange",
                        &key,
                        ip,
                        format!("Cluster IP [{fam}]: {ip} is not within any configured Service CIDR; please recreate service"),
                    ));
                    continue;
                }
                let Some(rec) = self.addresses.get(&ip).cloned() else {
                    events.push(event(
                        RepairFinding::NotAllocated,
                        "ClusterIPNotAllocated",
                        &key,
                        ip,
                        format!("Cluster IP [{fam}]: {ip} is not allocated; repairing"),
                    ));
                    self.addresses.insert(ip, IpAddressRecord::managed(ip, Some(&me)));
                    continue;
                };
                let wrong =
                    format!("the ClusterIP [{fam}]: {ip} for Service {key} has a wrong reference; repairing");
                match rec.parent_service() {
                    None => {
                        events.push(event(RepairFinding::WrongReference, "ClusterIPNotAllocated", &key, ip, wrong));
                        self.addresses.insert(ip, IpAddressRecord::managed(ip, Some(&me)));
                        continue;
                    }
                    Some(owner) if owner != me => match by_ref.get(&owner) {
                        None => {
                            events.push(event(RepairFinding::WrongReference, "ClusterIPNotAllocated", &key, ip, wrong));
                            self.addresses.insert(ip, IpAddressRecord::managed(ip, Some(&me)));
                            continue;
                        }
                        Some(other) if lists(other, ip) => events.push(event(
                            RepairFinding::AlreadyAllocated,
                            "ClusterIPAlreadyAllocated",
                            &key,
                            ip,
                            format!("Cluster IP [{fam}]:{ip} was assigned to multiple services; please recreate service"),
                        )),
                        Some(_) => {}
                    },
                    Some(_) => {}
                }
                if !rec.labels_ok(ip) {
                    let owner = rec.parent_service().filter(|o| by_ref.contains_key(o));
                    let mut fresh = IpAddressRecord::managed(ip, Some(owner.as_ref().unwrap_or(&me)));
                    fresh.created_at = rec.created_at;
                    self.addresses.insert(ip, fresh);
                }
            }
        }
        let managed: Vec<(IpAddr, IpAddressRecord)> = self
            .addresses
            .iter()
            .filter(|(_, r)| r.managed_by.as_deref() == Some(IP_ALLOCATOR_CONTROLLER))
            .map(|(ip, r)| (*ip, r.clone()))
            .collect();
        for (ip, rec) in managed {
            let Some(owner) = rec.parent_service() else {
                events.push(event(
                    RepairFinding::WrongReference,
                    "IPAddressNotAllocated",
                    "",
                    ip,
                    format!(
                        "IPAddress {ip} appears to have been modified, not referencing a Service: cleaning up"
                    ),
                ));
                self.addresses.remove(&ip);
                continue;
            };
            let owner_key = format!("{}/{}", owner.namespace, owner.name);
            match by_ref.get(&owner) {
                None => {
                    let age = rec.created_at.map(|c| now.saturating_sub(c));
                    if age.is_none_or(|a| a > IP_ADDRESS_GRACE_SECONDS) {
                        events.push(event(
                            RepairFinding::LeakCleaned,
                            "IPAddressNotAllocated",
                            &owner_key,
                            ip,
                            format!(
                                "IPAddress: {ip} for Service {owner_key} appears to have leaked: cleaning up"
                            ),
                        ));
                        self.addresses.remove(&ip);
                    } else {
                        events.push(event(
                            RepairFinding::LeakFlagged,
                            "LeakFlagged",
                            &owner_key,
                            ip,
                            format!("IPAddress: {ip} for Service {owner_key} has no Service yet; checking again after the grace period"),
                        ));
                    }
                }
                Some(svc) if !lists(svc, ip) => {
                    events.push(event(
                        RepairFinding::WrongReference,
                        "IPAddressWrongReference",
                        &owner_key,
                        ip,
                        format!("IPAddress: {ip} for Service {owner_key} has a wrong reference; cleaning up"),
                    ));
                    self.addresses.remove(&ip);
                }
                Some(_) => {}
            }
        }
        events
    }
}
