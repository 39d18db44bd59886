//! The Service create and update paths of the API server (`pkg/registry/core/service`):
//! the storage hooks (`beginCreate` / `beginUpdate`: `patchAllocatedValues`,
//! `normalizeClusterIPs`, the allocator, which lives in the submodule `alloc`), then the REST
//! strategy (`PrepareForCreate` / `PrepareForUpdate`), then validation.
//!
//! Follows Kubernetes v1.37.2: `pkg/registry/core/service/storage/storage.go`, `alloc.go` and
//! `pkg/registry/core/service/strategy.go`.

use std::net::IpAddr;

use rand_core::RngCore;
use smallvec::SmallVec;
use svcnet_allocators::IpFamily;
use svcnet_model::{
    CLUSTER_IP_NONE, Service, ServiceSpec, defaults, ip_family, ip_family_policy, service_type,
    traffic_policy, validation,
};

use crate::change::{Change, ChangeKind, json_list, json_str};
use crate::cluster::Cluster;
use crate::request::{Answer, Step, merge_duplicates};

mod alloc;

use alloc::{Alloc, Taken, allocate_create, allocate_update};

fn s(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("")
}

fn type_of(spec: &ServiceSpec) -> &str {
    s(&spec.type_)
}

fn cluster_ips(spec: &ServiceSpec) -> &[String] {
    spec.cluster_ips.as_deref().unwrap_or(&[])
}

fn families(spec: &ServiceSpec) -> &[String] {
    spec.ip_families.as_deref().unwrap_or(&[])
}

fn policy(spec: &ServiceSpec) -> &str {
    s(&spec.ip_family_policy)
}

fn needs_cluster_ip(spec: &ServiceSpec) -> bool {
    type_of(spec) != service_type::EXTERNAL_NAME
}

/// `needsNodePort` of the strategy: NodePort and LoadBalancer.
fn strategy_needs_node_port(spec: &ServiceSpec) -> bool {
    matches!(
        type_of(spec),
        service_type::NODE_PORT | service_type::LOAD_BALANCER
    )
}

/// `needsNodePort` of the storage hooks: NodePort, and LoadBalancer unless
/// `allocateLoadBalancerNodePorts` is false.
fn storage_needs_node_port(spec: &ServiceSpec) -> bool {
    match type_of(spec) {
        service_type::NODE_PORT => true,
        service_type::LOAD_BALANCER => spec.allocate_load_balancer_node_ports != Some(false),
        _ => false,
    }
}

/// `shouldAllocateNodePorts`.
fn should_allocate_node_ports(spec: &ServiceSpec) -> bool {
    match type_of(spec) {
        service_type::NODE_PORT => true,
        service_type::LOAD_BALANCER => spec.allocate_load_balancer_node_ports.unwrap_or(false),
        _ => false,
    }
}

/// `needsHCNodePort` / `NeedsHealthCheck`: a LoadBalancer with `externalTrafficPolicy: Local`.
fn needs_hc_node_port(spec: &ServiceSpec) -> bool {
    type_of(spec) == service_type::LOAD_BALANCER && s(&spec.external_traffic_policy) == traffic_policy::LOCAL
}

/// `ExternallyAccessible`.
fn externally_accessible(spec: &ServiceSpec) -> bool {
    match type_of(spec) {
        service_type::LOAD_BALANCER | service_type::NODE_PORT => true,
        service_type::CLUSTER_IP => spec.external_ips.as_ref().is_some_and(|v| !v.is_empty()),
        _ => false,
    }
}

fn node_port(p: &svcnet_model::ServicePort) -> i32 {
    p.node_port.unwrap_or(0)
}

fn hc_node_port(spec: &ServiceSpec) -> i32 {
    spec.health_check_node_port.unwrap_or(0)
}

fn family_of(ip: &str) -> Option<IpFamily> {
    ip.parse::<IpAddr>().ok().map(IpFamily::of)
}

fn family_name(f: IpFamily) -> &'static str {
    f.as_str()
}

fn other_family(f: &str) -> &'static str {
    if f == ip_family::IPV4 {
        ip_family::IPV6
    } else {
        ip_family::IPV4
    }
}

/// Answers a create of `svc`: defaulting, `normalizeClusterIPs`, the allocator
/// (`initIPFamilyFields`, cluster IPs, node ports), `PrepareForCreate`, then
/// `ValidateServiceCreate` with identical causes merged.
pub fn create_service(svc: &mut Service, cluster: Option<&mut Cluster>, rng: &mut dyn RngCore) -> Answer {
    defaults::default_service(svc);
    let mut changes = Vec::new();
    normalize_create(svc);
    let mut al = Alloc {
        cluster,
        rng,
        taken: Taken::default(),
        local_ports: SmallVec::new(),
        owner: None,
    };
    if let Err(errors) = allocate_create(svc, &mut al, &mut changes) {
        al.taken.rollback(&mut al.cluster);
        return Answer {
            errors,
            changes,
            step: Step::Allocator,
        };
    }
    // PrepareForCreate: status is the controllers' to set (not listed as a change: a dump of
    // live objects carries one, and no apply sets it).
    svc.status = None;
    let mut errors = validation::validate_service_create(svc);
    merge_duplicates(&mut errors);
    if !errors.is_empty() {
        al.taken.rollback(&mut al.cluster);
    }
    Answer {
        errors,
        changes,
        step: Step::Validation,
    }
}

/// Answers an update of `stored` to `svc`: defaulting; an unconditional update gets the
/// stored `resourceVersion`; `defaultOnRead` of the stored object, `patchAllocatedValues`
/// (cluster IPs, node ports and the health-check node port the request omits are carried
/// over), `normalizeClusterIPs`, the allocator; `PrepareForUpdate` (status from the stored
/// object, `dropTypeDependentFields`); then `ValidateServiceUpdate` with identical causes
/// merged.
pub fn update_service(
    svc: &mut Service,
    stored: &Service,
    cluster: Option<&mut Cluster>,
    rng: &mut dyn RngCore,
) -> Answer {
    defaults::default_service(svc);
    let mut old = stored.clone();
    defaults::default_service(&mut old);
    let primary = cluster
        .as_deref()
        .and_then(Cluster::families)
        .and_then(|f| f.first().copied())
        .map_or(ip_family::IPV4, family_name);
    default_on_read(&mut old, primary);
    let mut changes = Vec::new();
    crate::request::fill_resource_version(&mut svc.metadata, &old.metadata, &mut changes);
    patch_allocated_values(svc, &old, &mut changes);
    defaults::normalize_cluster_ips(svc, Some(&old));
    let mut al = Alloc {
        cluster,
        rng,
        taken: Taken::default(),
        local_ports: SmallVec::new(),
        owner: None,
    };
    if let Err(errors) = allocate_update(svc, &old, &mut al, &mut changes) {
        al.taken.rollback(&mut al.cluster);
        return Answer {
            errors,
            changes,
            step: Step::Allocator,
        };
    }
    svc.status = old.status.clone();
    drop_type_dependent_fields(svc, &old, &mut changes);
    let mut errors = validation::validate_service_update(svc, &old);
    merge_duplicates(&mut errors);
    if !errors.is_empty() {
        al.taken.rollback(&mut al.cluster);
    }
    Answer {
        errors,
        changes,
        step: Step::Validation,
    }
}

/// `normalizeClusterIPs` on create, without copying when nothing changes.
fn normalize_create(svc: &mut Service) {
    let spec = svc.spec_mut();
    if spec.cluster_ips.as_ref().is_none_or(Vec::is_empty)
        && let Some(ip) = spec.cluster_ip.as_ref().filter(|ip| !ip.is_empty())
    {
        spec.cluster_ips = Some(vec![ip.clone()]);
    }
}

/// `defaultOnReadService` of a stored object: `clusterIPs` from `clusterIP`, families and
/// policy from the cluster IPs when missing, no internal traffic policy on ExternalName.
fn default_on_read(old: &mut Service, primary: &str) {
    defaults::normalize_cluster_ips(old, None);
    let spec = old.spec_mut();
    if type_of(spec) == service_type::EXTERNAL_NAME {
        spec.internal_traffic_policy = None;
        return;
    }
    if !families(spec).is_empty() {
        return;
    }
    if s(&spec.cluster_ip) == CLUSTER_IP_NONE {
        // The primary family is the cluster's; without one, IPv4 stands in.
        if spec.selector.as_ref().is_none_or(|m| m.is_empty()) {
            spec.ip_family_policy = Some(ip_family_policy::REQUIRE_DUAL_STACK.into());
            spec.ip_families = Some(vec![primary.into(), other_family(primary).into()]);
        } else {
            spec.ip_family_policy = Some(ip_family_policy::SINGLE_STACK.into());
            spec.ip_families = Some(vec![primary.into()]);
        }
        return;
    }
    let fams: Vec<String> = cluster_ips(spec)
        .iter()
        .map(|ip| {
            if ip.contains(':') {
                ip_family::IPV6
            } else {
                ip_family::IPV4
            }
            .to_owned()
        })
        .collect();
    match fams.len() {
        1 => spec.ip_family_policy = Some(ip_family_policy::SINGLE_STACK.into()),
        2 => spec.ip_family_policy = Some(ip_family_policy::REQUIRE_DUAL_STACK.into()),
        _ => {}
    }
    spec.ip_families = Some(fams);
}

/// `patchAllocatedValues`: what the request leaves empty and the stored object allocated.
fn patch_allocated_values(svc: &mut Service, old: &Service, changes: &mut Vec<Change>) {
    let os = old.spec();
    let ns = svc.spec_mut();
    let stored = "the request leaves it empty; the stored object has it";
    if needs_cluster_ip(os) && needs_cluster_ip(ns) {
        if s(&ns.cluster_ip).is_empty() && !s(&os.cluster_ip).is_empty() {
            ns.cluster_ip = os.cluster_ip.clone();
            changes.push(Change::new(
                "spec.clusterIP",
                ChangeKind::FilledFromStored,
                json_str(s(&os.cluster_ip)),
                stored,
            ));
        }
        if cluster_ips(ns).is_empty() && !cluster_ips(os).is_empty() {
            ns.cluster_ips = os.cluster_ips.clone();
            changes.push(Change::new(
                "spec.clusterIPs",
                ChangeKind::FilledFromStored,
                json_list(cluster_ips(os)),
                stored,
            ));
        }
    }
    if storage_needs_node_port(os) && storage_needs_node_port(ns) {
        let used = |spec: &ServiceSpec| -> Vec<i32> {
            spec.ports().iter().map(node_port).filter(|n| *n != 0).collect()
        };
        let old_used = used(os);
        let new_used = used(ns);
        let both: Vec<i32> = old_used
            .iter()
            .copied()
            .filter(|p| new_used.contains(p))
            .collect();
        let mut filled = Vec::new();
        for (i, p) in ns.ports.iter_mut().flatten().enumerate() {
            if node_port(p) != 0 {
                continue;
            }
            // By name, as the API server's map of the old ports does (the last of a name wins).
            let old_val = os
                .ports()
                .iter()
                .rev()
                .find(|o| o.name() == p.name())
                .map_or(0, node_port);
            if !both.contains(&old_val) && old_val != 0 {
                p.node_port = Some(old_val);
                filled.push((i, old_val));
            }
        }
        for (i, v) in filled {
            changes.push(Change::new(
                format!("spec.ports[{i}].nodePort"),
                ChangeKind::FilledFromStored,
                v.to_string(),
                "the request leaves it empty; the stored port of this name has it",
            ));
        }
    }
    if needs_hc_node_port(os) && needs_hc_node_port(ns) && hc_node_port(ns) == 0 && hc_node_port(os) != 0 {
        ns.health_check_node_port = os.health_check_node_port;
        changes.push(Change::new(
            "spec.healthCheckNodePort",
            ChangeKind::FilledFromStored,
            hc_node_port(os).to_string(),
            stored,
        ));
    }
}

/// `dropTypeDependentFields` of `PrepareForUpdate`.
fn drop_type_dependent_fields(svc: &mut Service, old: &Service, changes: &mut Vec<Change>) {
    let os = old.spec();
    let new_type = type_of(svc.spec()).to_owned();
    let ns = svc.spec_mut();
    if needs_cluster_ip(os) && !needs_cluster_ip(ns) {
        let why = "type ExternalName takes no cluster IP";
        if s(&ns.cluster_ip) == s(&os.cluster_ip) && cluster_ips(ns) == cluster_ips(os) {
            if !s(&ns.cluster_ip).is_empty() {
                changes.push(Change::new(
                    "spec.clusterIP",
                    ChangeKind::Dropped,
                    json_str(s(&ns.cluster_ip)),
                    why,
                ));
            }
            if !cluster_ips(ns).is_empty() {
                changes.push(Change::new(
                    "spec.clusterIPs",
                    ChangeKind::Dropped,
                    json_list(cluster_ips(ns)),
                    why,
                ));
            }
            ns.cluster_ip = None;
            ns.cluster_ips = None;
        }
        if ns.ip_families == os.ip_families || (families(ns).is_empty() && families(os).is_empty()) {
            if !families(ns).is_empty() {
                changes.push(Change::new(
                    "spec.ipFamilies",
                    ChangeKind::Dropped,
                    json_list(families(ns)),
                    why,
                ));
            }
            ns.ip_families = None;
        }
        if policy(ns) == policy(os) {
            if !policy(ns).is_empty() {
                changes.push(Change::new(
                    "spec.ipFamilyPolicy",
                    ChangeKind::Dropped,
                    json_str(policy(ns)),
                    why,
                ));
            }
            ns.ip_family_policy = None;
        }
    }
    if strategy_needs_node_port(os) && !strategy_needs_node_port(ns) {
        let old_ports: Vec<i32> = os.ports().iter().map(node_port).filter(|n| *n != 0).collect();
        let same = ns
            .ports()
            .iter()
            .map(node_port)
            .filter(|n| *n != 0)
            .all(|n| old_ports.contains(&n));
        if same {
            for (i, p) in ns.ports.iter_mut().flatten().enumerate() {
                if node_port(p) != 0 {
                    changes.push(Change::new(
                        format!("spec.ports[{i}].nodePort"),
                        ChangeKind::Dropped,
                        node_port(p).to_string(),
                        type_takes_no_node_ports(&new_type),
                    ));
                }
                p.node_port = None;
            }
        }
    }
    if needs_hc_node_port(os) && !needs_hc_node_port(ns) && hc_node_port(ns) == hc_node_port(os) {
        if hc_node_port(ns) != 0 {
            changes.push(Change::new(
                "spec.healthCheckNodePort",
                ChangeKind::Dropped,
                hc_node_port(ns).to_string(),
                "no longer a LoadBalancer with externalTrafficPolicy Local",
            ));
        }
        ns.health_check_node_port = None;
    }
    let was_lb = type_of(os) == service_type::LOAD_BALANCER;
    let is_lb = new_type == service_type::LOAD_BALANCER;
    if was_lb
        && !is_lb
        && let (Some(n), Some(o)) = (
            ns.allocate_load_balancer_node_ports,
            os.allocate_load_balancer_node_ports,
        )
        && n == o
    {
        changes.push(Change::new(
            "spec.allocateLoadBalancerNodePorts",
            ChangeKind::Dropped,
            n.to_string(),
            "type is no longer LoadBalancer",
        ));
        ns.allocate_load_balancer_node_ports = None;
    }
    if was_lb
        && !is_lb
        && ns.load_balancer_class == os.load_balancer_class
        && let Some(c) = ns.load_balancer_class.take()
    {
        changes.push(Change::new(
            "spec.loadBalancerClass",
            ChangeKind::Dropped,
            json_str(&c),
            "type is no longer LoadBalancer",
        ));
    }
    if externally_accessible(os)
        && !externally_accessible(ns)
        && s(&ns.external_traffic_policy) == s(&os.external_traffic_policy)
    {
        if !s(&ns.external_traffic_policy).is_empty() {
            changes.push(Change::new(
                "spec.externalTrafficPolicy",
                ChangeKind::Dropped,
                json_str(s(&ns.external_traffic_policy)),
                "the Service is no longer externally accessible",
            ));
        }
        ns.external_traffic_policy = None;
    }
    if !is_lb
        && let Some(st) = svc.status.as_mut()
        && st
            .load_balancer
            .as_ref()
            .is_some_and(|lb| *lb != Default::default())
    {
        changes.push(Change::new(
            "status.loadBalancer",
            ChangeKind::Dropped,
            "",
            "type is not LoadBalancer",
        ));
        st.load_balancer = Some(Default::default());
    }
}

fn type_takes_no_node_ports(t: &str) -> &'static str {
    match t {
        service_type::EXTERNAL_NAME => "type ExternalName takes no node ports",
        _ => "type ClusterIP takes no node ports",
    }
}

#[cfg(test)]
mod tests {
    use svcnet_allocators::SplitMix64;

    use super::*;

    fn svc(json: &str) -> Service {
        serde_json::from_str(json).expect("service JSON")
    }

    fn fields(a: &Answer) -> Vec<&str> {
        a.errors.iter().map(|e| e.field.as_str()).collect()
    }

    #[test]
    fn node_port_shared_by_one_port_number_only() {
        let mut rng = SplitMix64::new(1);
        let ok = r#"{"metadata":{"name":"dns","namespace":"d"},"spec":{"type":"NodePort","selector":{"a":"b"},
            "ports":[{"name":"t","protocol":"TCP","port":53,"nodePort":30053},{"name":"u","protocol":"UDP","port":53,"nodePort":30053}]}}"#;
        let a = create_service(&mut svc(ok), None, &mut rng);
        assert!(a.is_valid(), "{:?}", a.errors);
        let bad = ok.replace(
            r#""port":53,"nodePort":30053}]"#,
            r#""port":54,"nodePort":30053}]"#,
        );
        let a = create_service(&mut svc(&bad), None, &mut rng);
        assert_eq!(a.step, Step::Allocator);
        assert_eq!(fields(&a), ["spec.ports[1].nodePort"]);
        // A port of the same number without a node port shares the first one's.
        let share = ok.replace(
            r#""protocol":"UDP","port":53,"nodePort":30053"#,
            r#""protocol":"UDP","port":53"#,
        );
        let mut s = svc(&share);
        assert!(create_service(&mut s, None, &mut rng).is_valid());
        assert_eq!(s.spec().ports()[1].node_port, Some(30053));
    }

    #[test]
    fn family_policy_against_families_and_ips() {
        let mut rng = SplitMix64::new(1);
        let two = r#"{"metadata":{"name":"w","namespace":"d"},"spec":{"selector":{"a":"b"},"ports":[{"port":80}],
            "ipFamilyPolicy":"SingleStack","ipFamilies":["IPv4","IPv6"]}}"#;
        let a = create_service(&mut svc(two), None, &mut rng);
        assert_eq!(a.step, Step::Allocator);
        assert_eq!(fields(&a), ["spec.ipFamilyPolicy"]);
        // A single-stack cluster refuses RequireDualStack and an unconfigured family.
        let mut cluster = Cluster::parse(&["10.96.0.0/16"], "30000-32767").unwrap();
        let req = r#"{"metadata":{"name":"w","namespace":"d"},"spec":{"selector":{"a":"b"},"ports":[{"port":80}],
            "ipFamilyPolicy":"RequireDualStack"}}"#;
        let a = create_service(&mut svc(req), Some(&mut cluster), &mut rng);
        assert_eq!(fields(&a), ["spec.ipFamilyPolicy"]);
        // On a dual-stack cluster both families are filled and both IPs taken.
        let mut cluster = Cluster::parse(&["10.96.0.0/16", "fd00::/108"], "30000-32767").unwrap();
        let mut s = svc(req);
        assert!(create_service(&mut s, Some(&mut cluster), &mut rng).is_valid());
        assert_eq!(s.spec().ip_families.as_deref().map(<[String]>::len), Some(2));
        assert_eq!(s.spec().cluster_ips.as_deref().map(<[String]>::len), Some(2));
    }

    #[test]
    fn a_refused_request_takes_nothing() {
        let mut rng = SplitMix64::new(1);
        let mut cluster = Cluster::parse(&["10.96.0.0/16"], "30000-32767").unwrap();
        // Valid for the allocator, refused by validation (port 0): its IP and port go back.
        let bad = r#"{"metadata":{"name":"w","namespace":"d"},"spec":{"type":"NodePort","clusterIP":"10.96.0.10",
            "ports":[{"port":80,"nodePort":30080},{"name":"x","port":0}]}}"#;
        let a = create_service(&mut svc(bad), Some(&mut cluster), &mut rng);
        assert_eq!(a.step, Step::Validation);
        assert!(!a.is_valid());
        assert!(!cluster.ip_in_use("10.96.0.10".parse().unwrap()));
        assert!(!cluster.node_port_in_use(30080));
        let good = bad.replace(r#",{"name":"x","port":0}"#, "");
        assert!(create_service(&mut svc(&good), Some(&mut cluster), &mut rng).is_valid());
        assert!(cluster.ip_in_use("10.96.0.10".parse().unwrap()));
        assert!(cluster.node_port_in_use(30080));
    }

    #[test]
    fn update_carries_over_and_drops() {
        let mut rng = SplitMix64::new(1);
        let stored = svc(
            r#"{"metadata":{"name":"w","namespace":"d","resourceVersion":"3"},"spec":{"type":"LoadBalancer",
            "selector":{"a":"b"},"clusterIP":"10.0.0.5","externalTrafficPolicy":"Local","healthCheckNodePort":30100,
            "ports":[{"name":"http","port":80,"nodePort":30080}]}}"#,
        );
        // Omitting the allocated values: carried over.
        let mut same = svc(
            r#"{"metadata":{"name":"w","namespace":"d","resourceVersion":"3"},"spec":{"type":"LoadBalancer",
            "selector":{"a":"b"},"externalTrafficPolicy":"Local","ports":[{"name":"http","port":80}]}}"#,
        );
        let a = update_service(&mut same, &stored, None, &mut rng);
        assert!(a.is_valid(), "{:?}", a.errors);
        let changed: Vec<&str> = a.changes.iter().map(|c| c.field.as_str()).collect();
        assert_eq!(
            changed,
            [
                "spec.clusterIP",
                "spec.clusterIPs",
                "spec.ports[0].nodePort",
                "spec.healthCheckNodePort",
                "spec.ipFamilyPolicy"
            ]
        );
        // To ClusterIP keeping what the load balancer had: dropped.
        let mut to_cip = svc(
            r#"{"metadata":{"name":"w","namespace":"d","resourceVersion":"3"},"spec":{"type":"ClusterIP",
            "selector":{"a":"b"},"clusterIP":"10.0.0.5","externalTrafficPolicy":"Local","healthCheckNodePort":30100,
            "ports":[{"name":"http","port":80,"nodePort":30080}]}}"#,
        );
        let a = update_service(&mut to_cip, &stored, None, &mut rng);
        assert!(a.is_valid(), "{:?}", a.errors);
        let dropped: Vec<&str> = a
            .changes
            .iter()
            .filter(|c| c.kind == ChangeKind::Dropped)
            .map(|c| c.field.as_str())
            .collect();
        assert_eq!(
            dropped,
            [
                "spec.ports[0].nodePort",
                "spec.healthCheckNodePort",
                "spec.externalTrafficPolicy"
            ]
        );
    }

    #[test]
    fn releasing_the_secondary_ip_needs_single_stack() {
        let mut rng = SplitMix64::new(1);
        let stored = svc(
            r#"{"metadata":{"name":"w","namespace":"d","resourceVersion":"1"},"spec":{"selector":{"a":"b"},
            "clusterIP":"10.0.0.5","clusterIPs":["10.0.0.5","fd00::5"],"ipFamilies":["IPv4","IPv6"],
            "ipFamilyPolicy":"RequireDualStack","ports":[{"port":80}]}}"#,
        );
        let mut new = svc(
            r#"{"metadata":{"name":"w","namespace":"d","resourceVersion":"1"},"spec":{"selector":{"a":"b"},
            "clusterIP":"10.0.0.5","clusterIPs":["10.0.0.5"],"ipFamilies":["IPv4"],
            "ipFamilyPolicy":"RequireDualStack","ports":[{"port":80}]}}"#,
        );
        let a = update_service(&mut new.clone(), &stored, None, &mut rng);
        assert_eq!(a.step, Step::Allocator);
        assert_eq!(fields(&a), ["spec.ipFamilyPolicy", "spec.ipFamilyPolicy"]);
        new.spec_mut().ip_family_policy = Some("SingleStack".into());
        assert!(update_service(&mut new, &stored, None, &mut rng).is_valid());
    }
}
