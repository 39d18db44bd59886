//! Allocating for one Service, all or nothing: its ClusterIPs per `ipFamilyPolicy` and its node
//! ports (`pkg/registry/core/service/storage/alloc.go`).
//!
//! Follows Kubernetes v1.37.2: `pkg/registry/core/service/storage/alloc.go`.

use std::net::IpAddr;

use rand_core::RngCore;
use svcnet_model::{Service, ip_family_policy, service_type, traffic_policy};
use thiserror::Error;

use crate::{
    AllocError, ClusterIpRanges, IpFamily, MultiCidrAllocator, NodePortAllocator, PortOperation, ServiceRef,
};

/// Why a Service could not get its addresses or ports. Nothing was allocated when this is
/// returned.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ServiceAllocError {
    /// A field of the Service is refused (Kubernetes `FieldValueInvalid`).
    #[error("{field}: Invalid value: {value}: {message}")]
    Invalid {
        /// The field path, e.g. `spec.ports[0].nodePort`.
        field: String,
        /// The value, as Kubernetes prints it.
        value: String,
        /// Why.
        message: String,
    },
    /// Dynamic allocation failed (Kubernetes `InternalError`).
    #[error("Internal error occurred: {message}")]
    Internal {
        /// Kubernetes' message, e.g. `failed to allocate a serviceIP: range is full`.
        message: String,
        /// The allocator's error.
        source: AllocError,
    },
}

/// A ClusterIP allocator of a cluster, legacy bitmap or multi-CIDR, seen through the verbs
/// Service creation needs.
pub trait ClusterIpAllocator {
    /// The configured families, primary (default) first.
    fn configured_families(&self) -> Vec<IpFamily>;
    /// Takes `ip` for `owner`.
    fn allocate_ip(&mut self, ip: IpAddr, owner: &ServiceRef) -> Result<(), AllocError>;
    /// Takes a free IP of `family` for `owner`.
    fn allocate_next_ip(
        &mut self,
        family: IpFamily,
        owner: &ServiceRef,
        rng: &mut dyn RngCore,
    ) -> Result<IpAddr, AllocError>;
    /// Frees `ip` (errors are ignored, as Kubernetes ignores them on rollback).
    fn release_ip(&mut self, ip: IpAddr);
}

impl ClusterIpAllocator for ClusterIpRanges {
    fn configured_families(&self) -> Vec<IpFamily> {
        self.families()
    }
    fn allocate_ip(&mut self, ip: IpAddr, _owner: &ServiceRef) -> Result<(), AllocError> {
        self.allocate(ip)
    }
    fn allocate_next_ip(
        &mut self,
        family: IpFamily,
        _owner: &ServiceRef,
        rng: &mut dyn RngCore,
    ) -> Result<IpAddr, AllocError> {
        self.allocate_next(family, rng)
    }
    fn release_ip(&mut self, ip: IpAddr) {
        self.release(ip);
    }
}

impl ClusterIpAllocator for MultiCidrAllocator {
    fn configured_families(&self) -> Vec<IpFamily> {
        self.families().to_vec()
    }
    fn allocate_ip(&mut self, ip: IpAddr, owner: &ServiceRef) -> Result<(), AllocError> {
        self.allocate(IpFamily::of(ip), ip, Some(owner))
    }
    fn allocate_next_ip(
        &mut self,
        family: IpFamily,
        owner: &ServiceRef,
        rng: &mut dyn RngCore,
    ) -> Result<IpAddr, AllocError> {
        self.allocate_next(family, Some(owner), rng)
    }
    fn release_ip(&mut self, ip: IpAddr) {
        let _ = self.release(IpFamily::of(ip), ip);
    }
}

fn invalid(field: &str, value: impl ToString, message: impl ToString) -> ServiceAllocError {
    ServiceAllocError::Invalid {
        field: field.to_owned(),
        value: value.to_string(),
        message: message.to_string(),
    }
}

fn family_of_text(ip: &str) -> Option<IpFamily> {
    ip.parse::<IpAddr>().ok().map(IpFamily::of)
}

/// Fills `ipFamilyPolicy`, `ipFamilies`, `clusterIPs` and `clusterIP` of a Service being created
/// and takes its ClusterIPs, all or nothing (`initIPFamilyFields` + `allocClusterIPs`).
///
/// Families are served in `ipFamilies` order. When the second family fails, the IP already
/// taken for the first is released before the error is returned. (Kubernetes returns without
/// releasing it and relies on the repair loop to reclaim the leak a few minutes later.)
/// ExternalName and headless Services get no IP.
pub fn allocate_cluster_ips<A: ClusterIpAllocator + ?Sized>(
    alloc: &mut A,
    service: &Service,
    rng: &mut dyn RngCore,
) -> Result<Service, ServiceAllocError> {
    let mut svc = service.clone();
    if svc.type_() == service_type::EXTERNAL_NAME {
        return Ok(svc);
    }
    let configured = alloc.configured_families();
    let dual = configured.len() > 1;
    let owner = ServiceRef::new(svc.metadata.namespace(), svc.metadata.name());
    let spec = svc.spec_mut();
    if spec.cluster_ips.as_ref().is_none_or(Vec::is_empty)
        && let Some(ip) = spec.cluster_ip.clone().filter(|s| !s.is_empty())
    {
        spec.cluster_ips = Some(vec![ip]);
    }
    let headless = spec.cluster_ip.as_deref() == Some(svcnet_model::CLUSTER_IP_NONE)
        || spec
            .cluster_ips
            .as_ref()
            .and_then(|v| v.first())
            .map(String::as_str)
            == Some(svcnet_model::CLUSTER_IP_NONE);
    let selectorless = spec.selector.as_ref().is_none_or(|s| s.is_empty());
    let policy = spec
        .ip_family_policy
        .get_or_insert_with(|| {
            if headless && selectorless {
                ip_family_policy::REQUIRE_DUAL_STACK.to_owned()
            } else {
                ip_family_policy::SINGLE_STACK.to_owned()
            }
        })
        .clone();
    let ips: Vec<String> = spec.cluster_ips.clone().unwrap_or_default();
    let mut families: Vec<IpFamily> = Vec::new();
    for (i, f) in spec.ip_families.iter().flatten().enumerate() {
        let fam = IpFamily::parse(f)
            .ok_or_else(|| invalid(&format!("spec.ipFamilies[{i}]"), f, "must be IPv4 or IPv6"))?;
        families.push(fam);
    }
    if policy == ip_family_policy::SINGLE_STACK {
        if ips.len() == 2 {
            return Err(invalid(
                "spec.ipFamilyPolicy",
                &policy,
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
            ));
        }
        if families.len() == 2 {
            return Err(invalid(
                "spec.ipFamilyPolicy",
                &policy,
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ));
        }
    }
    for (i, ip) in ips.iter().enumerate() {
        if ip == svcnet_model::CLUSTER_IP_NONE {
            break;
        }
        if i < families.len() || ip.is_empty() {
            continue;
        }
        let fam = family_of_text(ip)
            .ok_or_else(|| invalid(&format!("spec.clusterIPs[{i}]"), ip, "must be a valid IP address"))?;
        if !configured.contains(&fam) {
            return Err(invalid(
                &format!("spec.clusterIPs[{i}]"),
                ip,
                format!("{fam} is not configured on this cluster"),
            ));
        }
        families.push(fam);
    }
    let other = |f: IpFamily| {
        if f == IpFamily::V4 {
            IpFamily::V6
        } else {
            IpFamily::V4
        }
    };
    let default = configured.first().copied().unwrap_or(IpFamily::V4);
    if headless && selectorless {
        if families.is_empty() {
            families.push(default);
        }
        if policy != ip_family_policy::SINGLE_STACK && families.len() == 1 {
            families.push(other(families[0]));
        }
    } else {
        if policy == ip_family_policy::REQUIRE_DUAL_STACK && !dual {
            return Err(invalid(
                "spec.ipFamilyPolicy",
                &policy,
                "this cluster is not configured for dual-stack services",
            ));
        }
        for (i, f) in families.iter().enumerate() {
            if !configured.contains(f) {
                return Err(invalid(
                    &format!("spec.ipFamilies[{i}]"),
                    f,
                    "not configured on this cluster",
                ));
            }
        }
        if families.is_empty() {
            families.push(default);
        }
        if policy != ip_family_policy::SINGLE_STACK && families.len() == 1 && dual {
            families.push(other(families[0]));
        }
    }
    spec.ip_families = Some(families.iter().map(|f| f.as_str().to_owned()).collect());
    if headless {
        return Ok(svc);
    }
    let mut taken: Vec<IpAddr> = Vec::new();
    let mut result: Vec<String> = Vec::new();
    for (i, fam) in families.iter().enumerate() {
        let want = ips.get(i).map(String::as_str).unwrap_or("");
        let got = if want.is_empty() {
            alloc
                .allocate_next_ip(*fam, &owner, rng)
                .map_err(|e| ServiceAllocError::Internal {
                    message: format!("failed to allocate a serviceIP: {e}"),
                    source: e,
                })
        } else {
            match want.parse::<IpAddr>() {
                Ok(ip) => alloc.allocate_ip(ip, &owner).map(|_| ip).map_err(|e| {
                    invalid(
                        "spec.clusterIPs",
                        format!("{ips:?}"),
                        format!("failed to allocate IP {want}: {e}"),
                    )
                }),
                Err(_) => Err(invalid(
                    &format!("spec.clusterIPs[{i}]"),
                    want,
                    "must be a valid IP address",
                )),
            }
        };
        match got {
            Ok(ip) => {
                taken.push(ip);
                result.push(ip.to_string());
            }
            Err(e) => {
                for ip in taken {
                    alloc.release_ip(ip);
                }
                return Err(e);
            }
        }
    }
    let spec = svc.spec_mut();
    spec.cluster_ip = result.first().cloned();
    spec.cluster_ips = Some(result);
    Ok(svc)
}

/// Updates the ClusterIPs of a Service from `old` to `new`, all or nothing (`updateClusterIPs`):
///
/// - to `ExternalName`: every IP of `old` is released;
/// - from `ExternalName` (or from a Service that had none): allocated as on creation;
/// - headless: nothing;
/// - a policy that asks for two families on a dual-stack cluster, where `old` has one IP:
///   the secondary is allocated (the given `clusterIPs[1]`, or a free one);
/// - `SingleStack` where `old` has two IPs: the secondary is released;
/// - `PreferDualStack` with unchanged IPs and families: never upgraded nor downgraded.
///
/// `clusterIPs[0]` cannot change. Releases happen only when everything else succeeded.
pub fn update_cluster_ips<A: ClusterIpAllocator + ?Sized>(
    alloc: &mut A,
    old: &Service,
    new: &Service,
    rng: &mut dyn RngCore,
) -> Result<Service, ServiceAllocError> {
    let old_ips: Vec<IpAddr> = old.cluster_ip_addrs().unwrap_or_default();
    if new.type_() == service_type::EXTERNAL_NAME {
        for ip in old_ips {
            alloc.release_ip(ip);
        }
        return Ok(new.clone());
    }
    if old.type_() == service_type::EXTERNAL_NAME || (old_ips.is_empty() && !old.is_headless()) {
        return allocate_cluster_ips(alloc, new, rng);
    }
    let mut svc = new.clone();
    if old.is_headless() || svc.is_headless() {
        return Ok(svc);
    }
    let old_texts: Vec<String> = old_ips.iter().map(IpAddr::to_string).collect();
    let old_families: Vec<String> = old_ips
        .iter()
        .map(|ip| IpFamily::of(*ip).as_str().to_owned())
        .collect();
    let configured = alloc.configured_families();
    let spec = svc.spec_mut();
    let given: Vec<String> = spec
        .cluster_ips
        .clone()
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            spec.cluster_ip
                .iter()
                .filter(|s| !s.is_empty())
                .cloned()
                .collect()
        });
    if let Some(first) = given.first()
        && first.parse::<IpAddr>().ok() != old_ips.first().copied()
    {
        return Err(invalid("spec.clusterIPs[0]", first, "may not change once set"));
    }
    let policy = spec
        .ip_family_policy
        .clone()
        .or_else(|| old.spec().ip_family_policy.clone())
        .unwrap_or_else(|| ip_family_policy::SINGLE_STACK.to_owned());
    spec.ip_family_policy = Some(policy.clone());
    let given_families = spec.ip_families.clone().unwrap_or_default();
    let unchanged = (given.is_empty() || given == old_texts)
        && (given_families.is_empty() || given_families == old_families);
    let mut ips: Vec<String> = if given.is_empty() {
        old_texts.clone()
    } else {
        given.clone()
    };
    let mut release = Vec::new();
    let wants_two = policy == ip_family_policy::REQUIRE_DUAL_STACK
        || (policy == ip_family_policy::PREFER_DUAL_STACK && !unchanged)
        || given_families.len() == 2
        || given.len() == 2;
    if policy == ip_family_policy::REQUIRE_DUAL_STACK && configured.len() < 2 {
        return Err(invalid(
            "spec.ipFamilyPolicy",
            &policy,
            "this cluster is not configured for dual-stack services",
        ));
    }
    if policy == ip_family_policy::SINGLE_STACK {
        if given.len() == 2 || given_families.len() == 2 {
            return Err(invalid(
                "spec.ipFamilyPolicy",
                &policy,
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs or IP families are specified",
            ));
        }
        if let Some(second) = old_ips.get(1) {
            release.push(*second);
            ips.truncate(1);
        }
    } else if let [only] = old_ips.as_slice()
        && wants_two
        && configured.len() > 1
    {
        let first = IpFamily::of(*only);
        let fam = if first == IpFamily::V4 {
            IpFamily::V6
        } else {
            IpFamily::V4
        };
        let owner = ServiceRef::new(svc.metadata.namespace(), svc.metadata.name());
        let got = match given.get(1).filter(|s| !s.is_empty()) {
            Some(text) => {
                let ip: IpAddr = text
                    .parse()
                    .map_err(|_| invalid("spec.clusterIPs[1]", text, "must be a valid IP address"))?;
                alloc.allocate_ip(ip, &owner).map(|_| ip).map_err(|e| {
                    invalid(
                        "spec.clusterIPs",
                        format!("{given:?}"),
                        format!("failed to allocate IP {text}: {e}"),
                    )
                })?
            }
            None => alloc
                .allocate_next_ip(fam, &owner, rng)
                .map_err(|e| ServiceAllocError::Internal {
                    message: format!("failed to allocate a serviceIP: {e}"),
                    source: e,
                })?,
        };
        ips.truncate(1);
        ips.push(got.to_string());
    }
    let families: Vec<String> = ips
        .iter()
        .filter_map(|t| family_of_text(t))
        .map(|f| f.as_str().to_owned())
        .collect();
    let spec = svc.spec_mut();
    spec.cluster_ip = ips.first().cloned();
    spec.cluster_ips = Some(ips);
    spec.ip_families = Some(families);
    for ip in release {
        alloc.release_ip(ip);
    }
    Ok(svc)
}

/// Releases every ClusterIP of a Service being deleted.
pub fn release_cluster_ips<A: ClusterIpAllocator + ?Sized>(alloc: &mut A, service: &Service) {
    if let Ok(ips) = service.cluster_ip_addrs() {
        for ip in ips {
            alloc.release_ip(ip);
        }
    }
}

fn should_allocate_node_ports(svc: &Service) -> bool {
    match svc.type_() {
        service_type::NODE_PORT => true,
        service_type::LOAD_BALANCER => svc.spec().allocate_load_balancer_node_ports.unwrap_or(true),
        _ => false,
    }
}

/// True when a Service needs a health-check node port: a LoadBalancer with
/// `externalTrafficPolicy: Local`.
pub fn needs_health_check(svc: &Service) -> bool {
    svc.type_() == service_type::LOAD_BALANCER
        && svc.spec().external_traffic_policy.as_deref() == Some(traffic_policy::LOCAL)
}

/// Fills the node ports (and `healthCheckNodePort`) of a Service being created, all or nothing
/// (`initNodePorts` + `allocHealthCheckNodePort`).
///
/// Ports sharing a `port` number share one node port; a requested node port is taken as given;
/// `0` gets a free one when the type allocates node ports. On any failure every port taken so
/// far is released and the allocator is as it was.
pub fn allocate_node_ports(
    alloc: &mut NodePortAllocator,
    service: &Service,
    rng: &mut dyn RngCore,
) -> Result<Service, ServiceAllocError> {
    let mut svc = service.clone();
    let auto = should_allocate_node_ports(&svc);
    let health = needs_health_check(&svc);
    let mut op = PortOperation::new(alloc);
    let mut by_port: Vec<(i32, i32)> = Vec::new();
    let ports = svc.spec().ports().to_vec();
    let mut out = ports.clone();
    for (i, p) in ports.iter().enumerate() {
        let np = p.node_port.unwrap_or(0);
        if np == 0 && !auto {
            continue;
        }
        let field = format!("spec.ports[{i}].nodePort");
        match by_port.iter().find(|(port, _)| *port == p.port).map(|(_, n)| *n) {
            None => {
                let requested = ports
                    .iter()
                    .find(|q| q.port == p.port && q.node_port.unwrap_or(0) != 0)
                    .and_then(|q| q.node_port);
                let got = match requested {
                    Some(r) => op.allocate(r).map(|_| r).map_err(|e| invalid(&field, r, e))?,
                    None => op.allocate_next(rng).map_err(|e| ServiceAllocError::Internal {
                        message: format!("failed to allocate a nodePort: {e}"),
                        source: e,
                    })?,
                };
                // `out` is a copy of `ports`, which `i` indexes.
                out[i].node_port = Some(got);
                by_port.push((p.port, got));
            }
            Some(shared) if np != shared => {
                if np == 0 {
                    out[i].node_port = Some(shared);
                } else {
                    op.allocate(np).map_err(|e| invalid(&field, np, e))?;
                }
            }
            Some(_) => {}
        }
    }
    if health {
        allocate_health_check_port(&mut op, &mut svc, rng)?;
    }
    op.commit();
    if !out.is_empty() {
        svc.spec_mut().ports = Some(out);
    }
    Ok(svc)
}

/// Takes the Service's requested health check node port, or the next free one (written back
/// into the Service), within the transaction `op`.
fn allocate_health_check_port(
    op: &mut PortOperation<'_>,
    svc: &mut Service,
    rng: &mut dyn RngCore,
) -> Result<(), ServiceAllocError> {
    let hc = svc.spec().health_check_node_port.unwrap_or(0);
    if hc != 0 {
        op.allocate(hc).map_err(|e| ServiceAllocError::Internal {
            message: format!("failed to allocate requested HealthCheck NodePort {hc}: {e}"),
            source: e,
        })?;
    } else {
        let got = op.allocate_next(rng).map_err(|e| ServiceAllocError::Internal {
            message: format!("failed to allocate a HealthCheck NodePort {hc}: {e}"),
            source: e,
        })?;
        svc.spec_mut().health_check_node_port = Some(got);
    }
    Ok(())
}

fn port_numbers(svc: &Service) -> Vec<i32> {
    svc.spec()
        .ports()
        .iter()
        .filter_map(|p| p.node_port.filter(|&n| n != 0))
        .collect()
}

/// Updates the node ports of a Service from `old` to `new`, all or nothing
/// (`txnUpdateNodePorts`): new explicit node ports are taken, `0` gets a free one, node ports
/// `old` held and `new` does not are released, and the health-check port is taken or released
/// when the need for one starts or stops. A change to `ClusterIP` or `ExternalName` releases
/// every node port of `old`. On error nothing is taken and nothing released.
pub fn update_node_ports(
    alloc: &mut NodePortAllocator,
    old: &Service,
    new: &Service,
    rng: &mut dyn RngCore,
) -> Result<Service, ServiceAllocError> {
    let mut svc = new.clone();
    let mut op = PortOperation::new(alloc);
    let had = matches!(old.type_(), service_type::NODE_PORT | service_type::LOAD_BALANCER);
    let has = matches!(svc.type_(), service_type::NODE_PORT | service_type::LOAD_BALANCER);
    if had
        && matches!(
            svc.type_(),
            service_type::CLUSTER_IP | service_type::EXTERNAL_NAME
        )
    {
        for p in port_numbers(old) {
            op.release_deferred(p);
        }
    }
    if has {
        let old_ports = port_numbers(old);
        let auto = should_allocate_node_ports(&svc);
        let mut taken_now: Vec<i32> = Vec::new();
        let mut seen: Vec<(String, i32)> = Vec::new();
        let mut ports = svc.spec().ports().to_vec();
        for (i, p) in ports.iter_mut().enumerate() {
            let np = p.node_port.unwrap_or(0);
            if np == 0 && !auto {
                continue;
            }
            let got = if np != 0 {
                if !old_ports.contains(&np) && !taken_now.contains(&np) {
                    op.allocate(np)
                        .map_err(|e| invalid(&format!("spec.ports[{i}].nodePort"), np, e))?;
                    taken_now.push(np);
                }
                np
            } else {
                let n = op.allocate_next(rng).map_err(|e| ServiceAllocError::Internal {
                    message: format!("failed to allocate a nodePort: {e}"),
                    source: e,
                })?;
                p.node_port = Some(n);
                n
            };
            let key = (p.protocol().to_owned(), got);
            if seen.contains(&key) {
                return Err(invalid(
                    &format!("spec.ports[{i}].nodePort"),
                    got,
                    format!("duplicate nodePort: {}/{got}", key.0),
                ));
            }
            seen.push(key);
        }
        if !ports.is_empty() {
            svc.spec_mut().ports = Some(ports);
        }
        let now = port_numbers(&svc);
        for p in old_ports {
            if !now.contains(&p) {
                op.release_deferred(p);
            }
        }
    }
    match (needs_health_check(old), needs_health_check(&svc)) {
        (false, true) => allocate_health_check_port(&mut op, &mut svc, rng)?,
        (true, false) => {
            if let Some(hc) = old.spec().health_check_node_port.filter(|&n| n != 0) {
                op.release_deferred(hc);
            }
            svc.spec_mut().health_check_node_port = None;
        }
        _ => {}
    }
    op.commit();
    Ok(svc)
}

/// Releases every node port of a Service being deleted, and its health-check port when it
/// needs one.
pub fn release_node_ports(alloc: &mut NodePortAllocator, service: &Service) {
    for p in service.spec().ports() {
        if let Some(np) = p.node_port.filter(|&n| n != 0) {
            alloc.release(np);
        }
    }
    if needs_health_check(service)
        && let Some(hc) = service.spec().health_check_node_port.filter(|&n| n != 0)
    {
        alloc.release(hc);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SplitMix64;
    use svcnet_model::{ServicePort, ServiceSpec};

    /// Service `ns/web` with `spec`.
    fn svc(spec: ServiceSpec) -> Service {
        svcnet_test_support::build::service("ns", "web", spec)
    }

    #[test]
    fn dual_stack_all_or_nothing() {
        let mut a = ClusterIpRanges::parse(&["10.0.0.0/30", "fd00::/126"]).unwrap();
        let mut rng = SplitMix64::new(1);
        let s = svc(ServiceSpec {
            ip_family_policy: Some("RequireDualStack".into()),
            ..ServiceSpec::default()
        });
        let got = allocate_cluster_ips(&mut a, &s, &mut rng).unwrap();
        assert_eq!(got.spec().cluster_ips.as_ref().unwrap().len(), 2);
        assert_eq!(
            got.spec().ip_families.as_ref().unwrap(),
            &vec!["IPv4".to_string(), "IPv6".to_string()]
        );
        // fill the IPv6 side, then a dual-stack request must leave IPv4 untouched
        while a.allocate_next(IpFamily::V6, &mut rng).is_ok() {}
        let before = a.clone();
        let err = allocate_cluster_ips(&mut a, &s, &mut rng).unwrap_err();
        assert!(matches!(err, ServiceAllocError::Internal { .. }));
        assert_eq!(a, before);
    }

    #[test]
    fn family_rules() {
        let mut single = ClusterIpRanges::parse(&["10.0.0.0/24"]).unwrap();
        let mut rng = SplitMix64::new(1);
        let req = svc(ServiceSpec {
            ip_family_policy: Some("RequireDualStack".into()),
            ..ServiceSpec::default()
        });
        assert!(matches!(
            allocate_cluster_ips(&mut single, &req, &mut rng),
            Err(ServiceAllocError::Invalid { .. })
        ));
        let prefer = svc(ServiceSpec {
            ip_family_policy: Some("PreferDualStack".into()),
            ..ServiceSpec::default()
        });
        let got = allocate_cluster_ips(&mut single, &prefer, &mut rng).unwrap();
        assert_eq!(got.spec().cluster_ips.as_ref().unwrap().len(), 1);
        let v6 = svc(ServiceSpec {
            cluster_ip: Some("fd00::1".into()),
            ..ServiceSpec::default()
        });
        assert!(allocate_cluster_ips(&mut single, &v6, &mut rng).is_err());
        let explicit = svc(ServiceSpec {
            cluster_ip: Some("10.0.0.9".into()),
            ..ServiceSpec::default()
        });
        let got = allocate_cluster_ips(&mut single, &explicit, &mut rng).unwrap();
        assert_eq!(got.spec().cluster_ip.as_deref(), Some("10.0.0.9"));
        assert!(allocate_cluster_ips(&mut single, &explicit, &mut rng).is_err());
    }

    #[test]
    fn node_ports_shared_and_health_check() {
        let mut a = NodePortAllocator::parse("30000-30100").unwrap();
        let mut rng = SplitMix64::new(1);
        let port = |port, proto: &str, np| ServicePort {
            port,
            protocol: Some(proto.into()),
            node_port: np,
            ..ServicePort::default()
        };
        let s = svc(ServiceSpec {
            type_: Some("LoadBalancer".into()),
            external_traffic_policy: Some("Local".into()),
            ports: Some(vec![
                port(53, "TCP", None),
                port(53, "UDP", None),
                port(80, "TCP", Some(30050)),
            ]),
            ..ServiceSpec::default()
        });
        let got = allocate_node_ports(&mut a, &s, &mut rng).unwrap();
        let ps = got.spec().ports();
        assert_eq!(ps[0].node_port, ps[1].node_port);
        assert_eq!(ps[2].node_port, Some(30050));
        assert!(got.spec().health_check_node_port.is_some());
        assert_eq!(a.used(), 3);
        // a second Service asking for 30050 fails and takes nothing
        let before = a.clone();
        let again = svc(ServiceSpec {
            type_: Some("NodePort".into()),
            ports: Some(vec![port(81, "TCP", None), port(80, "TCP", Some(30050))]),
            ..ServiceSpec::default()
        });
        let err = allocate_node_ports(&mut a, &again, &mut rng).unwrap_err();
        assert!(
            matches!(err, ServiceAllocError::Invalid { ref field, .. } if field == "spec.ports[1].nodePort")
        );
        assert_eq!(a, before);
        release_node_ports(&mut a, &got);
        assert_eq!(a.used(), 0);
    }

    #[test]
    fn update_node_ports_swaps_and_releases() {
        let mut a = NodePortAllocator::parse("30000-30100").unwrap();
        let mut rng = SplitMix64::new(4);
        let port = |port, np| ServicePort {
            port,
            node_port: np,
            ..ServicePort::default()
        };
        let old = svc(ServiceSpec {
            type_: Some("NodePort".into()),
            ports: Some(vec![port(80, None), port(443, Some(30010))]),
            ..ServiceSpec::default()
        });
        let old = allocate_node_ports(&mut a, &old, &mut rng).unwrap();
        let kept = old.spec().ports()[0].node_port;
        // keep 80's node port, move 443 to 30020, add 8080, become Local LoadBalancer
        let new = svc(ServiceSpec {
            type_: Some("LoadBalancer".into()),
            external_traffic_policy: Some("Local".into()),
            ports: Some(vec![port(80, kept), port(443, Some(30020)), port(8080, None)]),
            ..ServiceSpec::default()
        });
        let got = update_node_ports(&mut a, &old, &new, &mut rng).unwrap();
        assert!(!a.has(30010));
        assert!(a.has(30020) && a.has(kept.unwrap()));
        assert!(got.spec().health_check_node_port.is_some());
        assert_eq!(a.used(), 4);
        // a refused update changes nothing
        let before = a.clone();
        let clash = svc(ServiceSpec {
            type_: Some("NodePort".into()),
            ports: Some(vec![port(80, Some(30020)), port(81, Some(30020))]),
            ..ServiceSpec::default()
        });
        assert!(update_node_ports(&mut a, &got, &clash, &mut rng).is_err());
        assert_eq!(a, before);
        // back to ClusterIP: everything goes
        let plain = svc(ServiceSpec {
            ports: Some(vec![port(80, None)]),
            ..ServiceSpec::default()
        });
        update_node_ports(&mut a, &got, &plain, &mut rng).unwrap();
        assert_eq!(a.used(), 0);
    }

    #[test]
    fn update_upgrades_and_downgrades() {
        let mut a = ClusterIpRanges::parse(&["10.0.0.0/28", "fd00::/124"]).unwrap();
        let mut rng = SplitMix64::new(8);
        let single = svc(ServiceSpec::default());
        let single = allocate_cluster_ips(&mut a, &single, &mut rng).unwrap();
        assert_eq!(single.spec().cluster_ips.as_ref().unwrap().len(), 1);
        // PreferDualStack on its own, nothing else changed: upgraded because the policy changed
        let mut up = single.clone();
        up.spec_mut().ip_family_policy = Some("RequireDualStack".into());
        let up = update_cluster_ips(&mut a, &single, &up, &mut rng).unwrap();
        assert_eq!(up.spec().cluster_ips.as_ref().unwrap().len(), 2);
        assert_eq!(
            up.spec().ip_families.as_ref().unwrap(),
            &vec!["IPv4".to_string(), "IPv6".to_string()]
        );
        assert_eq!(a.get(IpFamily::V6).unwrap().used(), 1);
        // PreferDualStack with the same IPs and families stays as it is
        let mut same = up.clone();
        same.spec_mut().ip_family_policy = Some("PreferDualStack".into());
        let same = update_cluster_ips(&mut a, &up, &same, &mut rng).unwrap();
        assert_eq!(same.spec().cluster_ips, up.spec().cluster_ips);
        // downgrade releases the secondary
        let mut down = same.clone();
        down.spec_mut().ip_family_policy = Some("SingleStack".into());
        down.spec_mut().cluster_ips = None;
        down.spec_mut().ip_families = None;
        let down = update_cluster_ips(&mut a, &same, &down, &mut rng).unwrap();
        assert_eq!(down.spec().cluster_ips.as_ref().unwrap().len(), 1);
        assert_eq!(a.get(IpFamily::V6).unwrap().used(), 0);
        // the primary cannot change; ExternalName releases everything
        let mut moved = down.clone();
        moved.spec_mut().cluster_ips = Some(vec!["10.0.0.14".into()]);
        let before = a.clone();
        assert!(update_cluster_ips(&mut a, &down, &moved, &mut rng).is_err());
        assert_eq!(a, before);
        let mut ext = down.clone();
        ext.spec_mut().type_ = Some("ExternalName".into());
        update_cluster_ips(&mut a, &down, &ext, &mut rng).unwrap();
        assert_eq!(a.get(IpFamily::V4).unwrap().used(), 0);
    }
}
