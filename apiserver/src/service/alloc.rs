//! The allocator step of the Service create and update paths: the families and family policy
//! settled first (`initIPFamilyFields`), then cluster IPs, node ports and the health-check node
//! port taken from the cluster, and given back when the request fails.
//!
//! Follows Kubernetes v1.37.2: `pkg/registry/core/service/storage/alloc.go`.

use std::net::IpAddr;

use rand_core::RngCore;
use smallvec::SmallVec;
use svcnet_allocators::{IpFamily, ServiceRef};
use svcnet_model::field::{BadValue, ErrorList, FieldError, Path};
use svcnet_model::{
    CLUSTER_IP_NONE, Service, ServiceSpec, ip_family, ip_family_policy, service_type, validation,
};

use super::{
    cluster_ips, families, family_name, family_of, hc_node_port, needs_hc_node_port, node_port, other_family,
    policy, s, should_allocate_node_ports, type_of,
};
use crate::change::{Change, ChangeKind, json_list, json_str};
use crate::cluster::Cluster;

/// What one request took from the cluster, given back when the request fails.
#[derive(Default)]
pub(super) struct Taken {
    pub(super) ips: Vec<IpAddr>,
    pub(super) ports: Vec<i32>,
}

impl Taken {
    pub(super) fn rollback(self, cluster: &mut Option<&mut Cluster>) {
        if let Some(c) = cluster.as_deref_mut() {
            for ip in self.ips {
                c.release_ip(ip);
            }
            for p in self.ports {
                c.release_port(p);
            }
        }
    }
}

/// The allocator of one request: the cluster (when known), what this request took, and the
/// node ports this object asked for (so reuse within the object is caught without a cluster).
pub(super) struct Alloc<'c, 'r> {
    pub(super) cluster: Option<&'c mut Cluster>,
    pub(super) rng: &'r mut dyn RngCore,
    pub(super) taken: Taken,
    pub(super) local_ports: SmallVec<[i32; 8]>,
    pub(super) owner: Option<ServiceRef>,
}

impl Alloc<'_, '_> {
    fn owner(&mut self, svc_ns: &str, svc_name: &str) -> ServiceRef {
        self.owner
            .get_or_insert_with(|| ServiceRef::new(svc_ns, svc_name))
            .clone()
    }

    fn take_port(&mut self, port: i32) -> Result<(), String> {
        match self.cluster.as_deref_mut() {
            Some(c) => {
                c.take_port(port)?;
                self.taken.ports.push(port);
            }
            None => {
                if self.local_ports.contains(&port) {
                    return Err("provided port is already allocated".to_owned());
                }
                self.local_ports.push(port);
            }
        }
        Ok(())
    }

    /// A free node port, or 0 without a cluster.
    fn take_next_port(&mut self) -> Result<i32, String> {
        match self.cluster.as_deref_mut() {
            Some(c) => {
                let p = c.take_next_port(self.rng).map_err(|e| e.to_string())?;
                self.taken.ports.push(p);
                Ok(p)
            }
            None => Ok(0),
        }
    }

    fn configured(&self) -> Option<Vec<IpFamily>> {
        self.cluster
            .as_deref()
            .and_then(Cluster::families)
            .map(<[IpFamily]>::to_vec)
    }
}

fn policy_value(spec: &ServiceSpec) -> BadValue {
    BadValue::Str(policy(spec).to_owned())
}

/// `isMatchingPreferDualStackClusterIPFields`: an update that leaves a PreferDualStack
/// Service's IPs and families as they are needs no family work.
fn matching_prefer_dual(ns: &ServiceSpec, os: Option<&ServiceSpec>) -> bool {
    let Some(os) = os else { return false };
    if ns.ip_family_policy.is_none() || type_of(os) != type_of(ns) {
        return false;
    }
    if !matches!(
        type_of(ns),
        service_type::CLUSTER_IP | service_type::NODE_PORT | service_type::LOAD_BALANCER
    ) {
        return false;
    }
    if policy(ns) != ip_family_policy::PREFER_DUAL_STACK {
        return false;
    }
    if os.ip_family_policy.is_some() && policy(os) != ip_family_policy::PREFER_DUAL_STACK {
        return false;
    }
    cluster_ips(os) == cluster_ips(ns) && families(os) == families(ns)
}

/// `initIPFamilyFields`: the family policy and families the allocator settles before taking
/// IPs, and its refusals.
fn init_ip_family_fields(
    svc: &mut Service,
    old: Option<&Service>,
    configured: Option<&[IpFamily]>,
    changes: &mut Vec<Change>,
) -> Result<(), ErrorList> {
    let os = old.map(Service::spec);
    if type_of(svc.spec()) == service_type::EXTERNAL_NAME || matching_prefer_dual(svc.spec(), os) {
        return Ok(());
    }
    {
        let ns = svc.spec_mut();
        if ns.ip_family_policy.is_none() {
            if let Some(op) = os.and_then(|o| o.ip_family_policy.clone()) {
                changes.push(Change::new(
                    "spec.ipFamilyPolicy",
                    ChangeKind::FilledFromStored,
                    json_str(&op),
                    "the request leaves it empty; the stored object has it",
                ));
                ns.ip_family_policy = Some(op);
            } else if s(&ns.cluster_ip) == CLUSTER_IP_NONE
                && ns.selector.as_ref().is_none_or(|m| m.is_empty())
            {
                ns.ip_family_policy = Some(ip_family_policy::REQUIRE_DUAL_STACK.into());
            } else {
                ns.ip_family_policy = Some(ip_family_policy::SINGLE_STACK.into());
            }
        }
    }
    let el = validation::validate_service_cluster_ips_related_fields(svc);
    if !el.is_empty() {
        return Err(el);
    }
    let mut el = ErrorList::new();
    let pol_path = Path::new("spec").child("ipFamilyPolicy");
    let ns = svc.spec_mut();
    if let Some(os) = os {
        if policy(ns) == ip_family_policy::SINGLE_STACK {
            if cluster_ips(os) == cluster_ips(ns) && cluster_ips(ns).len() > 1 {
                let dropped = cluster_ips(ns)[1].clone();
                if let Some(v) = ns.cluster_ips.as_mut() {
                    v.truncate(1);
                }
                changes.push(Change::new(
                    "spec.clusterIPs[1]",
                    ChangeKind::Trimmed,
                    json_str(&dropped),
                    "ipFamilyPolicy is SingleStack: the secondary cluster IP is released",
                ));
            }
            if families(os) == families(ns) && families(ns).len() > 1 {
                let dropped = families(ns)[1].clone();
                if let Some(v) = ns.ip_families.as_mut() {
                    v.truncate(1);
                }
                changes.push(Change::new(
                    "spec.ipFamilies[1]",
                    ChangeKind::Trimmed,
                    json_str(&dropped),
                    "ipFamilyPolicy is SingleStack: the secondary family is released",
                ));
            }
        } else {
            if !cluster_ips(ns).is_empty() && cluster_ips(ns).len() < cluster_ips(os).len() {
                el.push(FieldError::invalid(
                    &pol_path,
                    policy_value(ns),
                    "must be 'SingleStack' to release the secondary cluster IP",
                ));
            }
            if !families(ns).is_empty() && families(ns).len() < families(os).len() {
                el.push(FieldError::invalid(
                    &pol_path,
                    policy_value(ns),
                    "must be 'SingleStack' to release the secondary IP family",
                ));
            }
        }
    }
    if policy(ns) == ip_family_policy::SINGLE_STACK {
        if cluster_ips(ns).len() == 2 {
            el.push(FieldError::invalid(
                &pol_path,
                policy_value(ns),
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified",
            ));
        }
        if families(ns).len() == 2 {
            el.push(FieldError::invalid(
                &pol_path,
                policy_value(ns),
                "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified",
            ));
        }
    }
    let n_ips = cluster_ips(ns).len();
    for i in 0..n_ips {
        let ip = &cluster_ips(ns)[i];
        if ip == CLUSTER_IP_NONE {
            break;
        }
        if i >= families(ns).len() {
            let fam = family_of(ip);
            let ok = match (configured, fam) {
                (None, Some(_)) => true,
                (Some(c), Some(f)) => c.contains(&f),
                (_, None) => false,
            };
            if ok {
                let name = fam.map_or("unknown", family_name);
                ns.ip_families.get_or_insert_with(Vec::new).push(name.to_owned());
            } else {
                let name = fam.map_or("unknown", family_name);
                el.push(FieldError::invalid(
                    &Path::new("spec").child("clusterIPs").index(i),
                    BadValue::Raw(json_list(cluster_ips(ns))),
                    format!("{name} is not configured on this cluster"),
                ));
            }
        }
    }
    if !el.is_empty() {
        return Err(el);
    }
    let primary = configured.and_then(|c| c.first().copied()).map(family_name);
    if s(&ns.cluster_ip) == CLUSTER_IP_NONE && ns.selector.as_ref().is_none_or(|m| m.is_empty()) {
        if families(ns).is_empty()
            && let Some(p) = primary
        {
            ns.ip_families = Some(vec![p.to_owned()]);
        }
        if families(ns).len() == 1 && policy(ns) != ip_family_policy::SINGLE_STACK {
            let other = other_family(&families(ns)[0]);
            ns.ip_families.get_or_insert_with(Vec::new).push(other.to_owned());
        }
        return Ok(());
    }
    if let Some(c) = configured {
        if policy(ns) == ip_family_policy::REQUIRE_DUAL_STACK && c.len() < 2 {
            el.push(FieldError::invalid(
                &pol_path,
                policy_value(ns),
                "this cluster is not configured for dual-stack services",
            ));
        }
        for (i, f) in families(ns).iter().enumerate() {
            if !c.iter().any(|cf| cf.as_str() == f) {
                el.push(FieldError::invalid(
                    &Path::new("spec").child("ipFamilies").index(i),
                    f.as_str(),
                    "not configured on this cluster",
                ));
            }
        }
        if !el.is_empty() {
            return Err(el);
        }
        if families(ns).is_empty()
            && let Some(p) = primary
        {
            ns.ip_families = Some(vec![p.to_owned()]);
        }
        if policy(ns) != ip_family_policy::SINGLE_STACK && families(ns).len() == 1 && c.len() == 2 {
            let other = other_family(&families(ns)[0]);
            ns.ip_families.get_or_insert_with(Vec::new).push(other.to_owned());
        }
    }
    Ok(())
}

/// `allocateCreate`: families, cluster IPs, node ports, health-check node port.
pub(super) fn allocate_create(
    svc: &mut Service,
    al: &mut Alloc<'_, '_>,
    changes: &mut Vec<Change>,
) -> Result<(), ErrorList> {
    let configured = al.configured();
    init_ip_family_fields(svc, None, configured.as_deref(), changes)?;
    alloc_cluster_ips(svc, al, None)?;
    alloc_node_ports(svc, al)?;
    if needs_hc_node_port(svc.spec()) {
        alloc_hc_node_port(svc, al)?;
    }
    Ok(())
}

/// `allocateUpdate`: families, cluster IPs on upgrade or from ExternalName, new node ports,
/// a newly needed health-check node port.
pub(super) fn allocate_update(
    svc: &mut Service,
    old: &Service,
    al: &mut Alloc<'_, '_>,
    changes: &mut Vec<Change>,
) -> Result<(), ErrorList> {
    let configured = al.configured();
    init_ip_family_fields(svc, Some(old), configured.as_deref(), changes)?;
    update_cluster_ips(svc, old, al)?;
    let os = old.spec();
    if matches!(
        type_of(svc.spec()),
        service_type::NODE_PORT | service_type::LOAD_BALANCER
    ) {
        update_node_ports(svc, old, al)?;
    }
    if !needs_hc_node_port(os) && needs_hc_node_port(svc.spec()) {
        alloc_hc_node_port(svc, al)?;
    }
    Ok(())
}

fn update_cluster_ips(svc: &mut Service, old: &Service, al: &mut Alloc<'_, '_>) -> Result<(), ErrorList> {
    let (ns, os) = (svc.spec(), old.spec());
    if matching_prefer_dual(ns, Some(os)) {
        return Ok(());
    }
    let old_ext = type_of(os) == service_type::EXTERNAL_NAME;
    let new_ext = type_of(ns) == service_type::EXTERNAL_NAME;
    if old_ext && !new_ext {
        return alloc_cluster_ips(svc, al, None);
    }
    if cluster_ips(os).first().is_some_and(|ip| ip == CLUSTER_IP_NONE) || new_ext {
        return Ok(());
    }
    if families(os).len() == 1 && families(ns).len() == 2 {
        return alloc_cluster_ips(svc, al, Some(1));
    }
    Ok(())
}

/// `allocClusterIPs` (all families, or only index `only` on a dual-stack upgrade).
fn alloc_cluster_ips(
    svc: &mut Service,
    al: &mut Alloc<'_, '_>,
    only: Option<usize>,
) -> Result<(), ErrorList> {
    let spec = svc.spec();
    if type_of(spec) == service_type::EXTERNAL_NAME
        || cluster_ips(spec).first().is_some_and(|ip| ip == CLUSTER_IP_NONE)
    {
        return Ok(());
    }
    if !al.cluster.as_deref().is_some_and(Cluster::has_ip_state) {
        return Ok(());
    }
    let owner = al.owner(svc.metadata.namespace(), svc.metadata.name());
    let spec = svc.spec_mut();
    let fams: Vec<String> = families(spec).to_vec();
    let ips = spec.cluster_ips.get_or_insert_with(Vec::new);
    while ips.len() < fams.len() {
        ips.push(String::new());
    }
    let path = Path::new("spec").child("clusterIPs");
    for (i, fam) in fams.iter().enumerate() {
        if only.is_some_and(|o| o != i) {
            continue;
        }
        let requested = ips[i].clone();
        let Some(cluster) = al.cluster.as_deref_mut() else {
            return Ok(());
        };
        if requested.is_empty() {
            let f = if fam == ip_family::IPV6 {
                IpFamily::V6
            } else {
                IpFamily::V4
            };
            match cluster.take_next_ip(f, &owner, al.rng) {
                Some(Ok(ip)) => {
                    al.taken.ips.push(ip);
                    ips[i] = ip.to_string();
                }
                Some(Err(svcnet_allocators::AllocError::Full)) => {
                    return Err(vec![FieldError::internal(
                        &Path::default(),
                        format!(
                            "failed to allocate a serviceIP for Service {:?}: range is full",
                            svc.metadata.name()
                        ),
                    )]);
                }
                Some(Err(e)) => {
                    return Err(vec![FieldError::invalid(
                        &path,
                        BadValue::Raw(json_list(ips)),
                        format!("failed to allocate IP: {e}"),
                    )]);
                }
                None => {}
            }
        } else {
            let Ok(addr) = requested.parse::<IpAddr>() else {
                return Err(vec![FieldError::internal(
                    &Path::default(),
                    format!("failed to parse service IP {requested:?}"),
                )]);
            };
            match cluster.take_ip(addr, &owner) {
                Ok(true) => al.taken.ips.push(addr),
                Ok(false) => {}
                Err(msg) => {
                    return Err(vec![FieldError::invalid(
                        &path,
                        BadValue::Raw(json_list(ips)),
                        format!("failed to allocate IP {requested}: {msg}"),
                    )]);
                }
            }
        }
    }
    if let Some(first) = ips.first().cloned() {
        spec.cluster_ip = Some(first);
    }
    Ok(())
}

fn node_port_error(i: usize, port: i32, msg: String) -> ErrorList {
    vec![FieldError::invalid(
        &Path::new("spec").child("ports").index(i).child("nodePort"),
        port,
        msg,
    )]
}

/// `initNodePorts`: ports of one port number share one node port (TCP and UDP of a DNS
/// port); a node port asked for by two port numbers is refused as already allocated.
fn alloc_node_ports(svc: &mut Service, al: &mut Alloc<'_, '_>) -> Result<(), ErrorList> {
    let spec = svc.spec_mut();
    if !matches!(
        type_of(spec),
        service_type::NODE_PORT | service_type::LOAD_BALANCER
    ) {
        return Ok(());
    }
    let should = should_allocate_node_ports(spec);
    let mut by_port: SmallVec<[(i32, i32); 8]> = SmallVec::new();
    let n = spec.ports().len();
    for i in 0..n {
        let (port_num, np) = {
            let p = &spec.ports()[i];
            (p.port, node_port(p))
        };
        if np == 0 && !should {
            continue;
        }
        let allocated = by_port
            .iter()
            .find(|(p, _)| *p == port_num)
            .map_or(0, |(_, n)| *n);
        if allocated == 0 {
            let requested = spec
                .ports()
                .iter()
                .find(|p| p.port == port_num && node_port(p) != 0)
                .map_or(0, node_port);
            let got = if requested != 0 {
                al.take_port(requested)
                    .map_err(|m| node_port_error(i, requested, m))?;
                requested
            } else {
                al.take_next_port().map_err(|m| {
                    vec![FieldError::internal(
                        &Path::default(),
                        format!("failed to allocate a nodePort: {m}"),
                    )]
                })?
            };
            if got != 0 {
                if let Some(p) = spec.ports.as_mut().and_then(|v| v.get_mut(i)) {
                    p.node_port = Some(got);
                }
                by_port.push((port_num, got));
            }
        } else if np != allocated {
            if np == 0 {
                if let Some(p) = spec.ports.as_mut().and_then(|v| v.get_mut(i)) {
                    p.node_port = Some(allocated);
                }
            } else {
                al.take_port(np).map_err(|m| node_port_error(i, np, m))?;
            }
        }
    }
    Ok(())
}

/// `updateNodePorts`: node ports the stored object did not hold are taken; a port the
/// request leaves at 0 gets a new one when ports are allocated.
fn update_node_ports(svc: &mut Service, old: &Service, al: &mut Alloc<'_, '_>) -> Result<(), ErrorList> {
    let old_numbers: Vec<i32> = old
        .spec()
        .ports()
        .iter()
        .map(node_port)
        .filter(|n| *n != 0)
        .collect();
    let spec = svc.spec_mut();
    let should = should_allocate_node_ports(spec);
    let mut allocated_here: Vec<i32> = Vec::new();
    let mut seen: Vec<(String, i32)> = Vec::new();
    let n = spec.ports().len();
    for i in 0..n {
        let (np, proto) = {
            let p = &spec.ports()[i];
            (node_port(p), p.protocol().to_owned())
        };
        if np == 0 && !should {
            continue;
        }
        let mut np = np;
        if np != 0 {
            if !old_numbers.contains(&np) && !allocated_here.contains(&np) {
                al.take_port(np).map_err(|m| node_port_error(i, np, m))?;
                allocated_here.push(np);
            }
        } else {
            np = al.take_next_port().map_err(|m| {
                vec![FieldError::internal(
                    &Path::default(),
                    format!("failed to allocate a nodePort: {m}"),
                )]
            })?;
            if np != 0
                && let Some(p) = spec.ports.as_mut().and_then(|v| v.get_mut(i))
            {
                p.node_port = Some(np);
            }
        }
        if np != 0 && seen.iter().any(|(pr, n)| *pr == proto && *n == np) {
            return Err(vec![FieldError::internal(
                &Path::default(),
                format!("duplicate nodePort: {{{proto} {np}}}"),
            )]);
        }
        seen.push((proto, np));
    }
    Ok(())
}

/// `allocHealthCheckNodePort`: its failures are internal errors, as the API server returns them.
fn alloc_hc_node_port(svc: &mut Service, al: &mut Alloc<'_, '_>) -> Result<(), ErrorList> {
    let spec = svc.spec_mut();
    let hc = hc_node_port(spec);
    if hc != 0 {
        al.take_port(hc).map_err(|m| {
            vec![FieldError::internal(
                &Path::default(),
                format!("failed to allocate requested HealthCheck NodePort {hc}: {m}"),
            )]
        })?;
    } else {
        let got = al.take_next_port().map_err(|m| {
            vec![FieldError::internal(
                &Path::default(),
                format!("failed to allocate a HealthCheck NodePort 0: {m}"),
            )]
        })?;
        if got != 0 {
            spec.health_check_node_port = Some(got);
        }
    }
    Ok(())
}
