//! ServiceCIDR and IPAddress validation (`pkg/apis/networking/validation`).

use crate::field::{BadValue, ErrorList, FieldError, Path, go_quote};
use crate::validation::meta::{
    METADATA, validate_immutable_field, validate_object_meta, validate_object_meta_update,
};
use crate::validation::names;
use crate::{IpAddress, ParentReference, ServiceCidr};

/// `ValidateServiceCIDR`: cluster-scoped, DNS-subdomain name; one or two CIDRs (one per family),
/// each a canonical network address.
pub fn validate_service_cidr_create(s: &ServiceCidr) -> ErrorList {
    let mut errs = validate_object_meta(&s.metadata, false, names::name_is_dns_subdomain, &METADATA);
    let path = Path::new("spec").child("cidrs");
    let cidrs = s.cidrs();
    if cidrs.is_empty() {
        errs.push(FieldError::required(&path, "at least one CIDR required"));
        return errs;
    }
    if cidrs.len() > 2 {
        errs.push(FieldError::invalid(
            &path,
            spec_value(cidrs),
            "may only hold up to 2 values",
        ));
        return errs;
    }
    for (i, c) in cidrs.iter().enumerate() {
        errs.extend(names::is_valid_canonical_cidr(&path.index(i), c));
    }
    // Two CIDRs of one (known) family; a CIDR that does not parse has no family.
    let family = |c: &String| names::parse_cidr_sloppy(c).map(|(ip, _)| ip.is_ipv4());
    if cidrs.len() == 2
        && let (Some(a), Some(b)) = (family(&cidrs[0]), family(&cidrs[1]))
        && a == b
    {
        let quoted: Vec<String> = cidrs.iter().map(|c| go_quote(c)).collect();
        errs.push(FieldError::invalid(
            &path,
            BadValue::Raw(format!("[]string{{{}}}", quoted.join(", "))),
            "may specify no more than one IP for each IP family, i.e 192.168.0.0/24 and 2001:db8::/64",
        ));
    }
    errs
}

/// The spec as Go prints it in a message (`%#v` of the internal struct, simplified).
fn spec_value(cidrs: &[String]) -> BadValue {
    let quoted: Vec<String> = cidrs.iter().map(|c| go_quote(c)).collect();
    BadValue::Raw(format!(
        "networking.ServiceCIDRSpec{{CIDRs:[]string{{{}}}}}",
        quoted.join(", ")
    ))
}

/// `ValidateServiceCIDRUpdate`: metadata rules; the CIDRs are immutable, except that a
/// single-stack ServiceCIDR may gain a CIDR of the other family (its first CIDR unchanged,
/// the new list valid as on create).
pub fn validate_service_cidr_update(new: &ServiceCidr, old: &ServiceCidr) -> ErrorList {
    const IMMUTABLE: &str = "field is immutable";
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, &METADATA);
    let path = Path::new("spec").child("cidrs");
    let (n, o) = (new.cidrs(), old.cidrs());
    match (o.len(), n.len()) {
        (a, b) if a == b => {
            for (i, (oc, nc)) in o.iter().zip(n.iter()).enumerate() {
                if oc != nc {
                    errs.push(FieldError::invalid(&path.index(i), nc.as_str(), IMMUTABLE));
                }
            }
        }
        (1, 2) => {
            if n[0] != o[0] {
                errs.push(FieldError::invalid(&path.index(0), n[0].as_str(), IMMUTABLE));
            }
            let mut spec_only = new.clone();
            spec_only.metadata = old.metadata.clone();
            errs.extend(
                validate_service_cidr_create(&spec_only)
                    .into_iter()
                    .filter(|e| e.field.starts_with("spec.")),
            );
        }
        _ => {
            let quoted: Vec<String> = n.iter().map(|c| go_quote(c)).collect();
            errs.push(FieldError::invalid(
                &path,
                BadValue::Raw(format!("[]string{{{}}}", quoted.join(", "))),
                IMMUTABLE,
            ));
        }
    }
    errs
}

/// `ValidateServiceCIDRStatusUpdate`: metadata rules only.
pub fn validate_service_cidr_status_update(new: &ServiceCidr, old: &ServiceCidr) -> ErrorList {
    validate_object_meta_update(&new.metadata, &old.metadata, &METADATA)
}

/// `ValidateIPAddressName`: the name must be an IP address in canonical form (no prefix:
/// IPAddress names are never generated).
fn ip_address_name(name: &str, _prefix: bool) -> Vec<String> {
    names::is_valid_canonical_ip(&Path::default(), name)
        .into_iter()
        .map(|e| e.detail)
        .collect()
}

/// `ValidateIPAddress`: the name is an IP address; `spec.parentRef` is required with a valid
/// group, resource, name and namespace.
pub fn validate_ip_address(ip: &IpAddress) -> ErrorList {
    let mut errs = validate_object_meta(&ip.metadata, false, ip_address_name, &METADATA);
    let spec = Path::new("spec");
    match ip.spec.as_ref().and_then(|s| s.parent_ref.as_ref()) {
        None => errs.push(FieldError::required(&spec.child("parentRef"), "")),
        Some(r) => errs.extend(validate_parent_ref(r, &spec.child("parentRef"))),
    }
    errs
}

fn validate_parent_ref(r: &ParentReference, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let group = r.group.as_deref().unwrap_or("");
    if !group.is_empty() {
        for msg in names::is_dns1123_subdomain(group) {
            errs.push(FieldError::invalid(&path.child("group"), group, msg));
        }
    }
    for (field, value, required) in [
        ("resource", r.resource.as_deref().unwrap_or(""), true),
        ("name", r.name.as_deref().unwrap_or(""), true),
        ("namespace", r.namespace.as_deref().unwrap_or(""), false),
    ] {
        if value.is_empty() {
            if required {
                errs.push(FieldError::required(&path.child(field), ""));
            }
            continue;
        }
        for msg in names::is_valid_path_segment_name(value) {
            errs.push(FieldError::invalid(&path.child(field), value, msg));
        }
    }
    errs
}

/// `ValidateIPAddressUpdate`: metadata rules and `spec.parentRef` immutable.
pub fn validate_ip_address_update(new: &IpAddress, old: &IpAddress) -> ErrorList {
    let mut errs = validate_object_meta_update(&new.metadata, &old.metadata, &METADATA);
    let parent = |ip: &IpAddress| ip.spec.as_ref().and_then(|s| s.parent_ref.clone());
    let new_ref = parent(new);
    errs.extend(validate_immutable_field(
        &new_ref,
        &parent(old),
        || match &new_ref {
            None => BadValue::Null,
            Some(r) => BadValue::Raw(format!(
                "networking.ParentReference{{Group:{}, Resource:{}, Namespace:{}, Name:{}}}",
                go_quote(r.group.as_deref().unwrap_or("")),
                go_quote(r.resource.as_deref().unwrap_or("")),
                go_quote(r.namespace.as_deref().unwrap_or("")),
                go_quote(r.name.as_deref().unwrap_or(""))
            )),
        },
        &Path::new("spec").child("parentRef"),
    ));
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{IpAddressSpec, ObjectMeta, ServiceCidrSpec};

    fn cidr(cidrs: &[&str]) -> ServiceCidr {
        ServiceCidr {
            metadata: ObjectMeta {
                name: Some("test-name".into()),
                resource_version: Some("1".into()),
                ..Default::default()
            },
            spec: Some(ServiceCidrSpec {
                cidrs: Some(cidrs.iter().map(|s| s.to_string()).collect()),
            }),
            ..Default::default()
        }
    }

    #[test]
    fn service_cidr_counts() {
        let n = |c: &[&str]| validate_service_cidr_create(&cidr(c)).len();
        assert_eq!(n(&["10.0.0.0/24"]), 0);
        assert_eq!(n(&["10.0.0.0/24", "fd00::/64"]), 0);
        assert_eq!(n(&[]), 1);
        assert_eq!(n(&["10.0.0.0/24", "10.1.0.0/24"]), 1);
        assert_eq!(n(&["10.0.0.0/24", "fd00::/64", "10.1.0.0/24"]), 1);
        assert_eq!(n(&["192.168.007.0/24", "fd00:1234::/64"]), 1);
        assert_eq!(n(&["192.168.0.0/24", "FD00:1234::/64"]), 1);
        // v1.37.2's IsValidCIDR: host bits stop the check; one cause.
        assert_eq!(n(&["FD00:1234::2/64"]), 1);
        // Two bad CIDRs of one family: each, and the family rule.
        assert_eq!(n(&["10.0.0.1/24", "10.1.0.1/24"]), 3);
        let mut c = cidr(&["10.0.0.0/24"]);
        c.metadata.namespace = Some("x".into());
        assert_eq!(validate_service_cidr_create(&c).len(), 1);
    }

    #[test]
    fn service_cidr_update() {
        let old = cidr(&["10.0.0.0/24"]);
        assert!(validate_service_cidr_update(&old, &old).is_empty());
        let e = validate_service_cidr_update(&cidr(&["10.1.0.0/24"]), &old);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "spec.cidrs[0]");
        // A single-stack ServiceCIDR may gain the other family (v1.37.2), not change its own.
        assert!(validate_service_cidr_update(&cidr(&["10.0.0.0/24", "fd00::/64"]), &old).is_empty());
        let e = validate_service_cidr_update(&cidr(&["10.1.0.0/24", "fd00::/64"]), &old);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "spec.cidrs[0]");
        let e = validate_service_cidr_update(&cidr(&["10.0.0.0/24", "10.2.0.0/24"]), &old);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "spec.cidrs");
        let e = validate_service_cidr_update(&old, &cidr(&["10.0.0.0/24", "fd00::/64"]));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "spec.cidrs");
    }

    #[test]
    fn ip_address() {
        let mut ip = IpAddress {
            metadata: ObjectMeta {
                name: Some("10.0.0.1".into()),
                ..Default::default()
            },
            spec: Some(IpAddressSpec {
                parent_ref: Some(ParentReference {
                    group: None,
                    resource: Some("services".into()),
                    namespace: Some("default".into()),
                    name: Some("web".into()),
                }),
            }),
            ..Default::default()
        };
        assert!(validate_ip_address(&ip).is_empty());
        ip.metadata.name = Some("not-an-ip".into());
        assert_eq!(validate_ip_address(&ip).len(), 1);
        ip.metadata.name = Some("2001:DB8::1".into());
        assert_eq!(validate_ip_address(&ip).len(), 1);
        ip.spec = None;
        assert_eq!(validate_ip_address(&ip).len(), 2);
    }
}
