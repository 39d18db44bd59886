//! Service validation: `ValidateService`, `ValidateServiceCreate`, `ValidateServiceUpdate` and
//! `ValidateServiceStatusUpdate` of `pkg/apis/core/validation`.

use std::net::IpAddr;

use smallvec::SmallVec;

use crate::field::{BadValue, ErrorList, FieldError, Path, go_quote};
use crate::service::{ip_family, ip_family_policy, service_type, session_affinity, traffic_policy};
use crate::validation::fieldpath::FieldPath;
use crate::validation::meta::{METADATA, labels_into, validate_object_meta, validate_object_meta_update};
use crate::validation::names;
use crate::{IntOrString, LoadBalancerStatus, Service, ServicePort, ServiceSpec};

/// `MaxClientIPServiceAffinitySeconds`: one day.
const MAX_CLIENT_IP_SERVICE_AFFINITY_SECONDS: i32 = 86400;
const ANNOTATION_TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
const ANNOTATION_TOPOLOGY_HINTS: &str = "service.kubernetes.io/topology-aware-hints";
const ANNOTATION_LB_SOURCE_RANGES: &str = "service.beta.kubernetes.io/load-balancer-source-ranges";

const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];
const AFFINITIES: &[&str] = &["ClientIP", "None"];
const TYPES: &[&str] = &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"];
const TRAFFIC_POLICIES: &[&str] = &["Cluster", "Local"];
const FAMILIES: &[&str] = &["IPv4", "IPv6"];
const FAMILY_POLICIES: &[&str] = &["PreferDualStack", "RequireDualStack", "SingleStack"];
const IP_MODES: &[&str] = &["Proxy", "VIP"];

/// The root of every Service spec path.
const SPEC: FieldPath<'static> = FieldPath::Root("spec");

fn s(v: &Option<String>) -> &str {
    v.as_deref().unwrap_or("")
}

fn cluster_ips(spec: &ServiceSpec) -> &[String] {
    spec.cluster_ips.as_deref().unwrap_or(&[])
}

fn ip_families(spec: &ServiceSpec) -> &[String] {
    spec.ip_families.as_deref().unwrap_or(&[])
}

/// `isHeadlessService`: exactly `clusterIPs: [None]`.
fn is_headless(spec: &ServiceSpec) -> bool {
    matches!(cluster_ips(spec), [only] if only == "None")
}

/// `ExternallyAccessible`: LoadBalancer, NodePort, or ClusterIP with external IPs.
fn externally_accessible(spec: &ServiceSpec) -> bool {
    let t = s(&spec.type_);
    t == service_type::LOAD_BALANCER
        || t == service_type::NODE_PORT
        || (t == service_type::CLUSTER_IP && spec.external_ips.as_ref().is_some_and(|v| !v.is_empty()))
}

/// `NeedsHealthCheck`: a LoadBalancer with `externalTrafficPolicy: Local`.
fn needs_health_check(spec: &ServiceSpec) -> bool {
    s(&spec.type_) == service_type::LOAD_BALANCER && s(&spec.external_traffic_policy) == traffic_policy::LOCAL
}

fn is_lb(spec: &ServiceSpec) -> bool {
    s(&spec.type_) == service_type::LOAD_BALANCER
}

/// Go's `%#v` of a `[]string`-like list.
fn go_list(type_name: &str, items: &[String]) -> BadValue {
    let quoted: Vec<String> = items.iter().map(|i| go_quote(i)).collect();
    BadValue::Raw(format!("[]{type_name}{{{}}}", quoted.join(", ")))
}

fn opt_str(v: &Option<String>) -> BadValue {
    v.as_ref().map_or(BadValue::Null, |v| BadValue::Str(v.clone()))
}

/// `ValidateServiceCreate`: every rule of `ValidateService`.
///
/// ```
/// use svcnet_model::{Service, validation};
/// let svc: Service = Default::default();
/// let errors = validation::validate_service_create(&svc);
/// assert!(errors.iter().any(|e| e.to_string() == "metadata.name: Required value: name or generateName is required"));
/// ```
pub fn validate_service_create(svc: &Service) -> ErrorList {
    validate_service(svc)
}

/// `ValidateServiceUpdate`: metadata update rules, the cluster-IP / family / load-balancer
/// class / health-check transition rules, then every rule of `ValidateService` on `new`.
pub fn validate_service_update(new: &Service, old: &Service) -> ErrorList {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, &METADATA);
    let (ns, os) = (new.spec(), old.spec());
    upgrade_downgrade_cluster_ips(&mut errs, os, ns);
    upgrade_downgrade_ip_families(&mut errs, os, ns);
    load_balancer_class(&mut errs, Some(os), ns);
    if needs_health_check(os)
        && needs_health_check(ns)
        && ns.health_check_node_port != os.health_check_node_port
    {
        errs.push(FieldError::forbidden(
            &SPEC.child("healthCheckNodePort").path(),
            "field is immutable",
        ));
    }
    service_into(&mut errs, new);
    errs
}

/// `ValidateServiceStatusUpdate`: metadata update rules and `status.loadBalancer`.
pub fn validate_service_status_update(new: &Service, old: &Service) -> ErrorList {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, &METADATA);
    let empty = LoadBalancerStatus::default();
    let lb = new
        .status
        .as_ref()
        .and_then(|st| st.load_balancer.as_ref())
        .unwrap_or(&empty);
    let status = FieldPath::Root("status");
    load_balancer_status(&mut errs, lb, &status.child("loadBalancer"), new.spec());
    errs
}

/// `ValidateLoadBalancerStatus` (with `LoadBalancerIPMode` on and `AllowServiceLBStatusOnNonLB`
/// off, their defaults).
fn load_balancer_status(
    errs: &mut ErrorList,
    status: &LoadBalancerStatus,
    path: &FieldPath<'_>,
    spec: &ServiceSpec,
) {
    let ingress = status.ingress.as_deref().unwrap_or(&[]);
    let ipath = path.child("ingress");
    if !is_lb(spec) && !ingress.is_empty() {
        errs.push(FieldError::forbidden(
            &ipath.path(),
            "may only be used when `spec.type` is 'LoadBalancer'",
        ));
        return;
    }
    for (i, ing) in ingress.iter().enumerate() {
        let p = ipath.index(i);
        let ip = s(&ing.ip);
        if !ip.is_empty() {
            names::check_ip(errs, &p.child("ip"), ip);
        }
        match &ing.ip_mode {
            None => {
                if !ip.is_empty() {
                    errs.push(FieldError::required(
                        &p.child("ipMode").path(),
                        "must be specified when `ip` is set",
                    ));
                }
            }
            Some(_) if ip.is_empty() => errs.push(FieldError::forbidden(
                &p.child("ipMode").path(),
                "may not be specified when `ip` is not set",
            )),
            Some(mode) if !IP_MODES.contains(&mode.as_str()) => {
                errs.push(FieldError::not_supported(
                    &p.child("ipMode").path(),
                    mode,
                    IP_MODES,
                ));
            }
            Some(_) => {}
        }
        let host = s(&ing.hostname);
        if !host.is_empty() {
            for msg in names::is_dns1123_subdomain(host) {
                errs.push(FieldError::invalid(&p.child("hostname").path(), host, msg));
            }
            if names::parse_ip_sloppy(host).is_some() {
                errs.push(FieldError::invalid(
                    &p.child("hostname").path(),
                    host,
                    "must be a DNS name, not an IP address",
                ));
            }
        }
    }
}

/// `ValidateService`.
fn validate_service(svc: &Service) -> ErrorList {
    let mut errs = Vec::new();
    service_into(&mut errs, svc);
    errs
}

/// `ValidateService` into `errs`.
fn service_into(errs: &mut ErrorList, svc: &Service) {
    errs.append(&mut validate_object_meta(
        &svc.metadata,
        true,
        names::name_is_dns1035_label,
        &METADATA,
    ));

    if let (Some(mode), Some(hints)) = (
        svc.metadata.annotation(ANNOTATION_TOPOLOGY_MODE),
        svc.metadata.annotation(ANNOTATION_TOPOLOGY_HINTS),
    ) && mode != hints
    {
        errs.push(FieldError::invalid(
            &METADATA.child("annotations").key(ANNOTATION_TOPOLOGY_MODE).path(),
            mode,
            format!("must match annotations[{ANNOTATION_TOPOLOGY_HINTS}] when both are specified"),
        ));
    }

    let spec = svc.spec();
    let sp = &SPEC;
    let type_ = s(&spec.type_);
    let headless = is_headless(spec);
    let ports = spec.ports();
    let cips = cluster_ips(spec);

    if ports.is_empty() && !headless && type_ != service_type::EXTERNAL_NAME {
        errs.push(FieldError::required(&sp.child("ports").path(), ""));
    }
    match type_ {
        service_type::LOAD_BALANCER | service_type::NODE_PORT if headless => {
            errs.push(FieldError::invalid(
                &sp.child("clusterIPs").index(0).path(),
                "None",
                format!("may not be set to 'None' for {type_} services"),
            ));
        }
        service_type::EXTERNAL_NAME => {
            if !cips.is_empty() {
                errs.push(FieldError::forbidden(
                    &sp.child("clusterIPs").path(),
                    "may not be set for ExternalName services",
                ));
            }
            if !ip_families(spec).is_empty() {
                errs.push(FieldError::forbidden(
                    &sp.child("ipFamilies").path(),
                    "may not be set for ExternalName services",
                ));
            }
            if spec.ip_family_policy.is_some() {
                errs.push(FieldError::forbidden(
                    &sp.child("ipFamilyPolicy").path(),
                    "may not be set for ExternalName services",
                ));
            }
            let name = s(&spec.external_name);
            let cname = name.strip_suffix('.').unwrap_or(name);
            if cname.is_empty() {
                errs.push(FieldError::required(&sp.child("externalName").path(), ""));
            } else {
                for msg in names::is_dns1123_subdomain(cname) {
                    errs.push(FieldError::invalid(&sp.child("externalName").path(), cname, msg));
                }
            }
        }
        _ => {}
    }

    let mut port_names: SmallVec<[&str; 8]> = SmallVec::new();
    let ports_path = sp.child("ports");
    for (i, port) in ports.iter().enumerate() {
        service_port_into(errs, port, ports.len() > 1, &mut port_names, &ports_path.index(i));
    }

    if let Some(sel) = &spec.selector {
        labels_into(errs, Some(sel), &sp.child("selector"));
    }

    let affinity = s(&spec.session_affinity);
    if affinity.is_empty() {
        errs.push(FieldError::required(&sp.child("sessionAffinity").path(), ""));
    } else if !AFFINITIES.contains(&affinity) {
        errs.push(FieldError::not_supported(
            &sp.child("sessionAffinity").path(),
            affinity,
            AFFINITIES,
        ));
    }
    if affinity == session_affinity::CLIENT_IP {
        client_ip_affinity_config(errs, spec, &sp.child("sessionAffinityConfig"));
    } else if affinity == session_affinity::NONE && spec.session_affinity_config.is_some() {
        errs.push(FieldError::forbidden(
            &sp.child("sessionAffinityConfig").path(),
            "must not be set when session affinity is None",
        ));
    }

    cluster_ips_related_fields(errs, spec);

    let ext_path = sp.child("externalIPs");
    for (i, ip) in spec.external_ips.iter().flatten().enumerate() {
        let p = ext_path.index(i);
        if let Some(addr) = names::check_ip(errs, &p, ip) {
            names::check_non_special_ip(errs, &p, ip, addr);
        }
    }

    if type_.is_empty() {
        errs.push(FieldError::required(&sp.child("type").path(), ""));
    } else if !TYPES.contains(&type_) {
        errs.push(FieldError::not_supported(&sp.child("type").path(), type_, TYPES));
    }

    if type_ == service_type::CLUSTER_IP {
        for (i, port) in ports.iter().enumerate() {
            if port.node_port.unwrap_or(0) != 0 {
                errs.push(FieldError::forbidden(
                    &ports_path.index(i).child("nodePort").path(),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }

    let mut node_ports: SmallVec<[(&str, i32); 8]> = SmallVec::new();
    for (i, port) in ports.iter().enumerate() {
        let np = port.node_port.unwrap_or(0);
        if np == 0 {
            continue;
        }
        let key = (s(&port.protocol), np);
        let seen = node_ports.contains(&key);
        node_ports.push(key);
        if seen {
            errs.push(FieldError::duplicate(
                &ports_path.index(i).child("nodePort").path(),
                np,
            ));
        }
    }

    let mut seen_ports: SmallVec<[(&str, i32); 8]> = SmallVec::new();
    for (i, port) in ports.iter().enumerate() {
        let proto = s(&port.protocol);
        let seen = seen_ports.contains(&(proto, port.port));
        seen_ports.push((proto, port.port));
        if seen {
            errs.push(FieldError::duplicate(
                &ports_path.index(i).path(),
                BadValue::Raw(format!(
                    "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                    go_quote(proto),
                    port.port
                )),
            ));
        }
    }

    source_ranges(errs, svc, spec);

    if spec.allocate_load_balancer_node_ports.is_some() && !is_lb(spec) {
        errs.push(FieldError::forbidden(
            &sp.child("allocateLoadBalancerNodePorts").path(),
            "may only be used when `type` is 'LoadBalancer'",
        ));
    }
    if is_lb(spec) && spec.allocate_load_balancer_node_ports.is_none() {
        errs.push(FieldError::required(
            &Path::new("allocateLoadBalancerNodePorts"),
            "",
        ));
    }

    load_balancer_class(errs, None, spec);
    external_traffic_policy(errs, spec);
    internal_traffic_policy(errs, spec);
    // `validateServiceTrafficDistribution`: PreferSameTrafficDistribution is GA and locked on
    // since 1.35, so v1.37.2 accepts all three values.
    {
        use crate::service::traffic_distribution::{PREFER_CLOSE, PREFER_SAME_NODE, PREFER_SAME_ZONE};
        const SUPPORTED: [&str; 3] = [PREFER_CLOSE, PREFER_SAME_ZONE, PREFER_SAME_NODE];
        if let Some(td) = &spec.traffic_distribution
            && !SUPPORTED.contains(&td.as_str())
        {
            errs.push(FieldError::not_supported(
                &sp.child("trafficDistribution").path(),
                td,
                &SUPPORTED,
            ));
        }
    }
}

/// `validateServicePort`.
fn service_port_into<'a>(
    errs: &mut ErrorList,
    port: &'a ServicePort,
    require_name: bool,
    names_seen: &mut SmallVec<[&'a str; 8]>,
    path: &FieldPath<'_>,
) {
    let name = port.name();
    if require_name && name.is_empty() {
        errs.push(FieldError::required(&path.child("name").path(), ""));
    } else if !name.is_empty() {
        for msg in names::is_dns1123_label(name) {
            errs.push(FieldError::invalid(&path.child("name").path(), name, msg));
        }
        if names_seen.contains(&name) {
            errs.push(FieldError::duplicate(&path.child("name").path(), name));
        } else {
            names_seen.push(name);
        }
    }
    for msg in names::is_valid_port_num(port.port.into()) {
        errs.push(FieldError::invalid(&path.child("port").path(), port.port, msg));
    }
    let proto = s(&port.protocol);
    if proto.is_empty() {
        errs.push(FieldError::required(&path.child("protocol").path(), ""));
    } else if !PROTOCOLS.contains(&proto) {
        errs.push(FieldError::not_supported(
            &path.child("protocol").path(),
            proto,
            PROTOCOLS,
        ));
    }
    validate_port_num_or_name(
        errs,
        port.target_port.as_ref().unwrap_or(&IntOrString::Int(0)),
        &path.child("targetPort"),
    );
    if let Some(app) = &port.app_protocol {
        for msg in names::is_qualified_name(app) {
            errs.push(FieldError::invalid(&path.child("appProtocol").path(), app, msg));
        }
    }
}

/// `ValidatePortNumOrName`: a number in 1..=65535 or an IANA service name.
pub(crate) fn validate_port_num_or_name(errs: &mut ErrorList, port: &IntOrString, path: &FieldPath<'_>) {
    match port {
        IntOrString::Int(n) => {
            for msg in names::is_valid_port_num((*n).into()) {
                errs.push(FieldError::invalid(&path.path(), *n, msg));
            }
        }
        IntOrString::String(name) => {
            for msg in names::is_valid_port_name(name) {
                errs.push(FieldError::invalid(&path.path(), name, msg));
            }
        }
    }
}

/// `validateClientIPAffinityConfig`: config, `clientIP` and `timeoutSeconds` required (the first
/// missing one stops), timeout in 1..=86400.
fn client_ip_affinity_config(errs: &mut ErrorList, spec: &ServiceSpec, path: &FieldPath<'_>) {
    let detail = "when session affinity type is ClientIP";
    let Some(cfg) = &spec.session_affinity_config else {
        errs.push(FieldError::required(&path.path(), detail));
        return;
    };
    let cpath = path.child("clientIP");
    let Some(client) = &cfg.client_ip else {
        errs.push(FieldError::required(&cpath.path(), detail));
        return;
    };
    let tpath = cpath.child("timeoutSeconds");
    let Some(timeout) = client.timeout_seconds else {
        errs.push(FieldError::required(&tpath.path(), detail));
        return;
    };
    if timeout <= 0 || timeout > MAX_CLIENT_IP_SERVICE_AFFINITY_SECONDS {
        errs.push(FieldError::invalid(
            &tpath.path(),
            timeout,
            format!("must be greater than 0 and less than {MAX_CLIENT_IP_SERVICE_AFFINITY_SECONDS}"),
        ));
    }
}

/// `ValidateServiceClusterIPsRelatedFields`: `clusterIP` / `clusterIPs` in step, `ipFamilies`
/// and `ipFamilyPolicy` values, each cluster IP a valid address, at most one per family and
/// of the family `ipFamilies` names. Part of [`validate_service_create`]; the API server's
/// allocator also runs it alone, before allocating, and answers with these errors only.
///
/// ```
/// use svcnet_model::{Service, ServiceSpec, validation};
/// let mut svc = Service::default();
/// svc.spec = Some(ServiceSpec { cluster_ips: Some(vec!["10.0.0.1".into()]), ..Default::default() });
/// let errors = validation::validate_service_cluster_ips_related_fields(&svc);
/// assert_eq!(errors[0].field, "spec.clusterIPs");
/// ```
pub fn validate_service_cluster_ips_related_fields(svc: &Service) -> ErrorList {
    let mut errs = Vec::new();
    cluster_ips_related_fields(&mut errs, svc.spec());
    errs
}

fn cluster_ips_related_fields(errs: &mut ErrorList, spec: &ServiceSpec) {
    if s(&spec.type_) == service_type::EXTERNAL_NAME {
        return;
    }
    let sp = &SPEC;
    let cips_path = sp.child("clusterIPs");
    let fam_path = sp.child("ipFamilies");
    let cips = cluster_ips(spec);
    let families = ip_families(spec);
    let cips_value = || go_list("string", cips);

    let cip = s(&spec.cluster_ip);
    if !cip.is_empty() {
        match cips.first() {
            None => errs.push(FieldError::required(&cips_path.path(), "")),
            Some(first) if first != cip => errs.push(FieldError::invalid(
                &cips_path.path(),
                cips_value(),
                "first value must match `clusterIP`",
            )),
            Some(_) => {}
        }
    } else if !cips.is_empty() {
        errs.push(FieldError::invalid(
            &cips_path.path(),
            cips_value(),
            "must be empty when `clusterIP` is not specified",
        ));
    }

    let mut seen: SmallVec<[&str; 2]> = SmallVec::new();
    for (i, fam) in families.iter().enumerate() {
        if !FAMILIES.contains(&fam.as_str()) {
            errs.push(FieldError::not_supported(
                &fam_path.index(i).path(),
                fam,
                FAMILIES,
            ));
        }
        let dup = seen.contains(&fam.as_str());
        seen.push(fam.as_str());
        if dup {
            errs.push(FieldError::duplicate(&fam_path.index(i).path(), fam));
        }
    }

    if let Some(policy) = &spec.ip_family_policy
        && !FAMILY_POLICIES.contains(&policy.as_str())
    {
        errs.push(FieldError::not_supported(
            &sp.child("ipFamilyPolicy").path(),
            policy,
            FAMILY_POLICIES,
        ));
    }

    // Each address is parsed once; the family checks below read the parsed form.
    let mut parsed: SmallVec<[Option<IpAddr>; 2]> = SmallVec::new();
    let mut has_invalid = false;
    for (i, ip) in cips.iter().enumerate() {
        if i == 0 && ip == "None" {
            if cips.len() > 1 {
                has_invalid = true;
                errs.push(FieldError::invalid(
                    &cips_path.path(),
                    cips_value(),
                    "'None' must be the first and only value",
                ));
            }
            parsed.push(None);
            continue;
        }
        let addr = names::check_ip(errs, &cips_path.index(i), ip);
        has_invalid |= addr.is_none();
        parsed.push(addr);
    }
    if cips.len() > 2 {
        errs.push(FieldError::invalid(
            &cips_path.path(),
            cips_value(),
            "may only hold up to 2 values",
        ));
    }
    if has_invalid {
        return;
    }
    // `IsDualStackIPStrings`: every address parsed (none was invalid), so at least one of
    // each family.
    if cips.len() > 1 {
        let v4 = parsed.iter().flatten().any(IpAddr::is_ipv4);
        let v6 = parsed.iter().flatten().any(IpAddr::is_ipv6);
        if !(v4 && v6) {
            errs.push(FieldError::invalid(
                &cips_path.path(),
                cips_value(),
                "may specify no more than one IP for each IP family",
            ));
        }
    }
    if !is_headless(spec) && !cips.is_empty() && !families.is_empty() {
        for (i, (ip, fam)) in cips.iter().zip(families).enumerate() {
            let v6 = parsed.get(i).copied().flatten().is_some_and(|a| a.is_ipv6());
            if fam == ip_family::IPV4 && v6 {
                errs.push(FieldError::invalid(
                    &cips_path.index(i).path(),
                    ip,
                    format!("expected an IPv4 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
            if fam == ip_family::IPV6 && !v6 {
                errs.push(FieldError::invalid(
                    &cips_path.index(i).path(),
                    ip,
                    format!("expected an IPv6 value as indicated by `ipFamilies[{i}]`"),
                ));
            }
        }
    }
}

/// `loadBalancerSourceRanges`, or the legacy annotation when the field is empty.
fn source_ranges(errs: &mut ErrorList, svc: &Service, spec: &ServiceSpec) {
    let ranges = spec.load_balancer_source_ranges.as_deref().unwrap_or(&[]);
    let lb_only = "may only be used when `type` is 'LoadBalancer'";
    if !ranges.is_empty() {
        let p = SPEC.child("LoadBalancerSourceRanges");
        if !is_lb(spec) {
            errs.push(FieldError::forbidden(&p.path(), lb_only));
        }
        for (i, r) in ranges.iter().enumerate() {
            names::check_cidr(errs, &p.index(i), r.trim());
        }
    } else if let Some(val) = svc.metadata.annotation(ANNOTATION_LB_SOURCE_RANGES) {
        let annotations = METADATA.child("annotations");
        let p = annotations.key(ANNOTATION_LB_SOURCE_RANGES);
        if !is_lb(spec) {
            errs.push(FieldError::forbidden(&p.path(), lb_only));
        }
        let val = val.trim();
        if !val.is_empty() {
            for r in val.split(',') {
                names::check_cidr(errs, &p, r.trim());
            }
        }
    }
}

/// `validateLoadBalancerClassField`: immutable between two LoadBalancers; a qualified name on
/// a LoadBalancer; forbidden elsewhere.
fn load_balancer_class(errs: &mut ErrorList, old: Option<&ServiceSpec>, spec: &ServiceSpec) {
    let p = SPEC.child("loadBalancerClass");
    if let Some(old) = old
        && is_lb(old)
        && is_lb(spec)
        && old.load_balancer_class != spec.load_balancer_class
    {
        errs.push(FieldError::invalid(
            &p.path(),
            opt_str(&spec.load_balancer_class),
            "may not change once set",
        ));
    }
    if let Some(class) = &spec.load_balancer_class {
        if is_lb(spec) {
            for msg in names::is_qualified_name(class) {
                errs.push(FieldError::invalid(&p.path(), class, msg));
            }
        } else {
            errs.push(FieldError::forbidden(
                &p.path(),
                "may only be used when `type` is 'LoadBalancer'",
            ));
        }
    }
}

/// `validateServiceExternalTrafficPolicy`.
fn external_traffic_policy(errs: &mut ErrorList, spec: &ServiceSpec) {
    let sp = &SPEC;
    let etp = s(&spec.external_traffic_policy);
    let p = sp.child("externalTrafficPolicy");
    if !externally_accessible(spec) {
        if !etp.is_empty() {
            errs.push(FieldError::invalid(
                &p.path(),
                etp,
                "may only be set for externally-accessible services",
            ));
        }
    } else if etp.is_empty() {
        errs.push(FieldError::required(&p.path(), ""));
    } else if !TRAFFIC_POLICIES.contains(&etp) {
        errs.push(FieldError::not_supported(&p.path(), etp, TRAFFIC_POLICIES));
    }
    let hc = spec.health_check_node_port.unwrap_or(0);
    let p = sp.child("healthCheckNodePort");
    if !needs_health_check(spec) {
        if hc != 0 {
            errs.push(FieldError::invalid(
                &p.path(),
                hc,
                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'",
            ));
        }
    } else if hc == 0 {
        errs.push(FieldError::required(&p.path(), ""));
    } else {
        for msg in names::is_valid_port_num(hc.into()) {
            errs.push(FieldError::invalid(&p.path(), hc, msg));
        }
    }
}

/// `validateServiceInternalTrafficFieldsValue`.
fn internal_traffic_policy(errs: &mut ErrorList, spec: &ServiceSpec) {
    let p = SPEC.child("internalTrafficPolicy");
    match &spec.internal_traffic_policy {
        None => {
            if matches!(
                s(&spec.type_),
                service_type::NODE_PORT | service_type::LOAD_BALANCER | service_type::CLUSTER_IP
            ) {
                errs.push(FieldError::required(&p.path(), ""));
            }
        }
        Some(itp) if !TRAFFIC_POLICIES.contains(&itp.as_str()) => {
            errs.push(FieldError::not_supported(&p.path(), itp, TRAFFIC_POLICIES));
        }
        Some(_) => {}
    }
}

/// `validateUpgradeDowngradeClusterIPs`.
fn upgrade_downgrade_cluster_ips(errs: &mut ErrorList, old: &ServiceSpec, new: &ServiceSpec) {
    if s(&new.type_) == service_type::EXTERNAL_NAME || s(&old.type_) == service_type::EXTERNAL_NAME {
        return;
    }
    if is_headless(old) && is_headless(new) {
        return;
    }
    let (o, n) = (cluster_ips(old), cluster_ips(new));
    let p = SPEC.child("clusterIPs");
    let value = || go_list("string", n);
    let changed = "may not change once set";
    if o.len() == n.len() {
        for (i, (a, b)) in o.iter().zip(n).enumerate() {
            if a != b {
                errs.push(FieldError::invalid(&p.index(i).path(), value(), changed));
            }
        }
    } else if o.len() > n.len() {
        if n.is_empty() {
            errs.push(FieldError::invalid(
                &p.index(0).path(),
                value(),
                "primary clusterIP can not be unset",
            ));
        }
        if let (Some(a), Some(b)) = (o.first(), n.first())
            && a != b
        {
            errs.push(FieldError::invalid(&p.index(0).path(), value(), changed));
        }
        if n.len() == 1 && s(&new.ip_family_policy) != ip_family_policy::SINGLE_STACK {
            errs.push(FieldError::invalid(
                &SPEC.child("ipFamilyPolicy").path(),
                opt_str(&new.ip_family_policy),
                "must be set to 'SingleStack' when releasing the secondary clusterIP",
            ));
        }
    } else if let (Some(a), Some(b)) = (o.first(), n.first())
        && a != b
    {
        errs.push(FieldError::invalid(&p.index(0).path(), value(), changed));
    }
}

/// `validateUpgradeDowngradeIPFamilies`.
fn upgrade_downgrade_ip_families(errs: &mut ErrorList, old: &ServiceSpec, new: &ServiceSpec) {
    if s(&new.type_) == service_type::EXTERNAL_NAME || s(&old.type_) == service_type::EXTERNAL_NAME {
        return;
    }
    if is_headless(old) != is_headless(new) || is_headless(new) {
        return;
    }
    let (o, n) = (ip_families(old), ip_families(new));
    let fams = SPEC.child("ipFamilies");
    let p = fams.index(0);
    let fam_value = || go_list("core.IPFamily", n);
    let ips_value = || go_list("string", cluster_ips(new));
    let changed = "may not change once set";
    if o.len() == n.len() {
        for (a, b) in o.iter().zip(n) {
            if a != b {
                errs.push(FieldError::invalid(&p.path(), fam_value(), changed));
            }
        }
    } else if o.len() > n.len() {
        if cluster_ips(new).is_empty() {
            errs.push(FieldError::invalid(
                &p.path(),
                fam_value(),
                "primary ipFamily can not be unset",
            ));
        }
        if let (Some(a), Some(b)) = (o.first(), n.first())
            && a != b
        {
            errs.push(FieldError::invalid(&p.path(), ips_value(), changed));
        }
        if n.len() == 1 && s(&new.ip_family_policy) != ip_family_policy::SINGLE_STACK {
            errs.push(FieldError::invalid(
                &SPEC.child("ipFamilyPolicy").path(),
                opt_str(&new.ip_family_policy),
                "must be set to 'SingleStack' when releasing the secondary ipFamily",
            ));
        }
    } else if let (Some(a), Some(b)) = (o.first(), n.first())
        && a != b
    {
        errs.push(FieldError::invalid(&p.path(), ips_value(), changed));
    }
}

/// Counts errors by field, for tests and callers that only need a summary.
#[cfg(test)]
fn fields(errs: &ErrorList) -> std::collections::BTreeMap<String, usize> {
    let mut m = std::collections::BTreeMap::new();
    for e in errs {
        *m.entry(e.field.clone()).or_insert(0) += 1;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ObjectMeta;

    /// The upstream tests' base Service: ClusterIP, one TCP port, selector, affinity None.
    fn base() -> Service {
        Service {
            metadata: ObjectMeta {
                name: Some("valid".into()),
                namespace: Some("valid".into()),
                resource_version: Some("1".into()),
                ..Default::default()
            },
            spec: Some(ServiceSpec {
                selector: Some([("key".to_string(), "val".to_string())].into()),
                session_affinity: Some("None".into()),
                type_: Some("ClusterIP".into()),
                ports: Some(vec![ServicePort {
                    name: Some("p".into()),
                    protocol: Some("TCP".into()),
                    port: 8675,
                    target_port: Some(IntOrString::Int(8675)),
                    ..Default::default()
                }]),
                internal_traffic_policy: Some("Cluster".into()),
                ..Default::default()
            }),
            status: None,
            api_version: None,
            kind: None,
        }
    }

    fn with(f: impl FnOnce(&mut ServiceSpec)) -> Service {
        let mut s = base();
        f(s.spec_mut());
        s
    }

    #[test]
    fn base_is_valid() {
        assert_eq!(validate_service_create(&base()), vec![]);
    }

    #[test]
    fn port_rules() {
        let e = validate_service_create(&with(|s| {
            let mut p = s.ports()[0].clone();
            p.port = 0;
            p.protocol = Some("ICMP".into());
            p.target_port = Some(IntOrString::String("-A--".into()));
            p.app_protocol = Some("a/b/c".into());
            s.ports = Some(vec![p]);
        }));
        let f = fields(&e);
        assert_eq!(f.get("spec.ports[0].port"), Some(&1));
        assert_eq!(f.get("spec.ports[0].protocol"), Some(&1));
        assert_eq!(f.get("spec.ports[0].targetPort"), Some(&4));
        assert_eq!(f.get("spec.ports[0].appProtocol"), Some(&1));
        assert_eq!(
            e[0].to_string(),
            "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive"
        );
        assert_eq!(
            e[1].to_string(),
            "spec.ports[0].protocol: Unsupported value: \"ICMP\": supported values: \"SCTP\", \"TCP\", \"UDP\""
        );
    }

    #[test]
    fn affinity_rules() {
        let e = validate_service_create(&with(|s| s.session_affinity = Some("ClientIP".into())));
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0].to_string(),
            "spec.sessionAffinityConfig: Required value: when session affinity type is ClientIP"
        );
        let e = validate_service_create(&with(|s| {
            s.session_affinity = Some("ClientIP".into());
            s.session_affinity_config = Some(crate::SessionAffinityConfig {
                client_ip: Some(crate::ClientIpConfig {
                    timeout_seconds: Some(86401),
                }),
            });
        }));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "spec.sessionAffinityConfig.clientIP.timeoutSeconds");
    }

    #[test]
    fn cluster_ip_rules() {
        let n = |ip: &str, ips: &[&str], fams: &[&str]| {
            validate_service_create(&with(|s| {
                s.cluster_ip = Some(ip.into());
                s.cluster_ips = Some(ips.iter().map(|x| x.to_string()).collect());
                s.ip_families = Some(fams.iter().map(|x| x.to_string()).collect());
            }))
            .len()
        };
        assert_eq!(n("10.0.0.1", &["10.0.0.1"], &["IPv4"]), 0);
        assert_eq!(n("10.0.0.1", &["10.0.0.1", "2001::1"], &["IPv4", "IPv6"]), 0);
        assert_eq!(n("10.0.0.1", &["10.0.0.1", "10.0.0.2"], &[]), 1);
        assert_eq!(n("10.0.0.1", &["10.0.0.1", "2001::1", "10.0.0.10"], &[]), 1);
        assert_eq!(n("10.0.0.1", &["10.0.0.1"], &["IPv6"]), 1);
        assert_eq!(n("2001::1", &["2001::1"], &["IPv4"]), 1);
        assert_eq!(n("None", &["None", "10.0.0.1"], &[]), 1);
        assert_eq!(n("", &["10.0.0.1"], &[]), 1);
        assert_eq!(n("x", &["x", "y"], &[]), 2);
        assert_eq!(n("10.0.0.1", &["10.0.0.1"], &["IPv4", "IPv4"]), 1);
        assert_eq!(n("10.0.0.1", &["10.0.0.1"], &["IPv5"]), 1);
    }

    #[test]
    fn type_specific_rules() {
        let e = validate_service_create(&with(|s| {
            s.type_ = Some("ExternalName".into());
            s.external_name = Some("foo.example.com.".into());
        }));
        assert_eq!(e, vec![]);
        let e = validate_service_create(&with(|s| {
            s.type_ = Some("ExternalName".into());
            s.cluster_ip = Some("None".into());
            s.cluster_ips = Some(vec!["None".into()]);
            s.ip_family_policy = Some("SingleStack".into());
        }));
        assert_eq!(e.len(), 3, "{e:?}");
        let e = validate_service_create(&with(|s| {
            s.type_ = Some("LoadBalancer".into());
            s.external_traffic_policy = Some("Local".into());
        }));
        let f = fields(&e);
        assert_eq!(f.get("allocateLoadBalancerNodePorts"), Some(&1));
        assert_eq!(f.get("spec.healthCheckNodePort"), Some(&1));
        let e = validate_service_create(&with(|s| {
            s.external_ips = Some(vec!["127.0.0.1".into(), "nope".into(), "0.0.0.0".into()]);
            s.external_traffic_policy = Some("Cluster".into());
        }));
        assert_eq!(e.len(), 3, "{e:?}");
        let e = validate_service_create(&with(|s| {
            s.type_ = Some("Weird".into());
            s.traffic_distribution = Some("PreferNowhere".into());
            s.internal_traffic_policy = Some("Nowhere".into());
        }));
        assert_eq!(e.len(), 3, "{e:?}");
        for td in ["PreferClose", "PreferSameZone", "PreferSameNode"] {
            let e = validate_service_create(&with(|s| s.traffic_distribution = Some(td.into())));
            assert!(e.is_empty(), "v1.37.2 accepts trafficDistribution {td}: {e:?}");
        }
    }

    #[test]
    fn update_rules() {
        let old = with(|s| {
            s.cluster_ip = Some("10.0.0.1".into());
            s.cluster_ips = Some(vec!["10.0.0.1".into(), "2001::1".into()]);
            s.ip_families = Some(vec!["IPv4".into(), "IPv6".into()]);
            s.ip_family_policy = Some("RequireDualStack".into());
        });
        assert_eq!(validate_service_update(&old, &old), vec![]);
        let mut new = old.clone();
        new.spec_mut().cluster_ips = Some(vec!["10.0.0.1".into()]);
        new.spec_mut().ip_families = Some(vec!["IPv4".into()]);
        let e = validate_service_update(&new, &old);
        assert_eq!(e.len(), 2, "{e:?}");
        new.spec_mut().ip_family_policy = Some("SingleStack".into());
        assert_eq!(validate_service_update(&new, &old), vec![]);

        let lb = |class: Option<&str>| {
            with(|s| {
                s.type_ = Some("LoadBalancer".into());
                s.allocate_load_balancer_node_ports = Some(true);
                s.external_traffic_policy = Some("Cluster".into());
                s.load_balancer_class = class.map(Into::into);
            })
        };
        let e = validate_service_update(&lb(Some("a/b")), &lb(None));
        assert_eq!(e.len(), 1);
        let e = validate_service_update(&lb(Some("Bad/Class/x")), &base());
        assert_eq!(e.len(), 2);
    }

    #[test]
    fn quirks() {
        // Source ranges: capital-L path; padded entries are trimmed; the annotation is forbidden
        // (even empty) off a LoadBalancer and a blank one is fine on a LoadBalancer.
        let lb = |f: &dyn Fn(&mut ServiceSpec)| {
            with(|s| {
                s.type_ = Some("LoadBalancer".into());
                s.allocate_load_balancer_node_ports = Some(false);
                s.external_traffic_policy = Some("Cluster".into());
                f(s);
            })
        };
        let e = validate_service_create(&lb(&|s| {
            s.load_balancer_source_ranges = Some(vec![" 10.0.0.0/8 ".into(), "".into()]);
        }));
        assert_eq!(fields(&e).get("spec.LoadBalancerSourceRanges[1]"), Some(&1));
        assert_eq!(e.len(), 1);
        let mut svc = base();
        svc.metadata.annotations = Some([(ANNOTATION_LB_SOURCE_RANGES.to_string(), String::new())].into());
        let e = validate_service_create(&svc);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].type_, crate::field::ErrorType::Forbidden);
        let mut svc = lb(&|_| {});
        svc.metadata.annotations = Some([(ANNOTATION_LB_SOURCE_RANGES.to_string(), "  ".to_string())].into());
        assert_eq!(validate_service_create(&svc), vec![]);

        // Family changes are all reported at ipFamilies[0], one per differing index.
        let dual = |fams: [&str; 2], ips: [&str; 2]| {
            with(|s| {
                s.cluster_ip = Some(ips[0].into());
                s.cluster_ips = Some(ips.iter().map(|x| x.to_string()).collect());
                s.ip_families = Some(fams.iter().map(|x| x.to_string()).collect());
            })
        };
        let old = dual(["IPv4", "IPv6"], ["10.0.0.1", "2001::1"]);
        let new = dual(["IPv6", "IPv4"], ["10.0.0.1", "2001::1"]);
        let e = validate_service_update(&new, &old);
        assert_eq!(fields(&e).get("spec.ipFamilies[0]"), Some(&2), "{e:?}");

        // ExternalName may keep ports; nodePort 1 and port 10250 are accepted; mixed
        // protocols on a LoadBalancer are fine.
        let e = validate_service_create(&with(|s| {
            s.type_ = Some("ExternalName".into());
            s.external_name = Some("db.example.com".into());
            s.internal_traffic_policy = None;
        }));
        assert_eq!(e, vec![]);
        let e = validate_service_create(&lb(&|s| {
            s.ports = Some(vec![
                ServicePort {
                    name: Some("a".into()),
                    protocol: Some("TCP".into()),
                    port: 10250,
                    target_port: Some(IntOrString::Int(10250)),
                    node_port: Some(1),
                    ..Default::default()
                },
                ServicePort {
                    name: Some("b".into()),
                    protocol: Some("UDP".into()),
                    port: 10250,
                    target_port: Some(IntOrString::Int(10250)),
                    node_port: Some(1),
                    ..Default::default()
                },
            ]);
        }));
        assert_eq!(e, vec![]);

        // clusterIP None alone (without clusterIPs) is not headless: ports are still required.
        let e = validate_service_create(&with(|s| {
            s.ports = None;
            s.cluster_ip = Some("None".into());
        }));
        let f = fields(&e);
        assert_eq!(f.get("spec.ports"), Some(&1));
        assert_eq!(f.get("spec.clusterIPs"), Some(&1));
    }

    #[test]
    fn status_rules() {
        let mut new = with(|s| {
            s.type_ = Some("LoadBalancer".into());
            s.allocate_load_balancer_node_ports = Some(true);
            s.external_traffic_policy = Some("Cluster".into());
        });
        new.status = Some(crate::ServiceStatus {
            load_balancer: Some(LoadBalancerStatus {
                ingress: Some(vec![
                    crate::LoadBalancerIngress {
                        ip: Some("1.2.3.4".into()),
                        ..Default::default()
                    },
                    crate::LoadBalancerIngress {
                        hostname: Some("1.2.3.4".into()),
                        ip_mode: Some("Proxy".into()),
                        ..Default::default()
                    },
                ]),
            }),
            conditions: None,
        });
        let e = validate_service_status_update(&new, &new);
        let f = fields(&e);
        assert_eq!(f.get("status.loadBalancer.ingress[0].ipMode"), Some(&1));
        assert_eq!(f.get("status.loadBalancer.ingress[1].ipMode"), Some(&1));
        assert_eq!(f.get("status.loadBalancer.ingress[1].hostname"), Some(&1));
        let plain = base();
        let mut with_ingress = plain.clone();
        with_ingress.status = new.status.clone();
        let e = validate_service_status_update(&with_ingress, &plain);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "status.loadBalancer.ingress");
    }
}
