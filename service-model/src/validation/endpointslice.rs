//! EndpointSlice validation (`pkg/apis/discovery/validation`).

use std::collections::BTreeSet;

use crate::endpointslice::address_type;
use crate::field::{BadValue, ErrorList, FieldError, Path};
use crate::validation::meta::{METADATA, validate_immutable_field, validate_labels, validate_object_meta};
use crate::validation::names;
use crate::{Endpoint, EndpointHints, EndpointPort, EndpointSlice};

const MAX_TOPOLOGY_LABELS: usize = 16;
const MAX_ADDRESSES: usize = 100;
const MAX_PORTS: usize = 20000;
const MAX_ENDPOINTS: usize = 1000;
const MAX_ZONE_HINTS: usize = 8;
const ZONE_LABEL: &str = "topology.kubernetes.io/zone";

const ADDRESS_TYPES: &[&str] = &["FQDN", "IPv4", "IPv6"];
const PROTOCOLS: &[&str] = &["SCTP", "TCP", "UDP"];

/// `ValidateEndpointSliceCreate`: metadata (DNS-subdomain name, namespace required), the
/// address type, every endpoint (addresses of that type, node name, topology, hostname, zone
/// hints) and every port (name, protocol, appProtocol).
pub fn validate_endpoint_slice_create(s: &EndpointSlice) -> ErrorList {
    let mut errs = validate_object_meta(&s.metadata, true, names::name_is_dns_subdomain, &METADATA);
    let at = s.address_type.as_str();
    let atp = Path::new("addressType");
    if at.is_empty() {
        errs.push(FieldError::required(&atp, ""));
    } else if !ADDRESS_TYPES.contains(&at) {
        errs.push(FieldError::not_supported(&atp, at, ADDRESS_TYPES));
    }
    errs.extend(validate_endpoints(s.endpoints(), at, &Path::new("endpoints")));
    errs.extend(validate_ports(s.ports(), &Path::new("ports")));
    errs
}

/// `ValidateEndpointSliceUpdate`: the create rules on `new`, and `addressType` immutable.
/// (As upstream, metadata transitions are left to the generic update path.)
pub fn validate_endpoint_slice_update(new: &EndpointSlice, old: &EndpointSlice) -> ErrorList {
    let mut errs = validate_endpoint_slice_create(new);
    errs.extend(validate_immutable_field(
        &new.address_type,
        &old.address_type,
        || BadValue::Str(new.address_type.clone()),
        &Path::new("addressType"),
    ));
    errs
}

fn validate_endpoints(endpoints: &[Endpoint], at: &str, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if endpoints.len() > MAX_ENDPOINTS {
        errs.push(FieldError::too_many(path, endpoints.len(), MAX_ENDPOINTS));
        return errs;
    }
    for (i, ep) in endpoints.iter().enumerate() {
        let ip = path.index(i);
        let ap = ip.child("addresses");
        if ep.addresses.is_empty() {
            errs.push(FieldError::required(&ap, "must contain at least 1 address"));
        } else if ep.addresses.len() > MAX_ADDRESSES {
            errs.push(FieldError::too_many(&ap, ep.addresses.len(), MAX_ADDRESSES));
        }
        for (j, addr) in ep.addresses.iter().enumerate() {
            let p = ap.index(j);
            match at {
                address_type::IPV4 => {
                    errs.extend(names::is_valid_ipv4_address(&p, addr));
                    errs.extend(endpoint_ip(&p, addr));
                }
                address_type::IPV6 => {
                    errs.extend(names::is_valid_ipv6_address(&p, addr));
                    errs.extend(endpoint_ip(&p, addr));
                }
                address_type::FQDN => errs.extend(names::is_fully_qualified_domain_name(&p, addr)),
                _ => {}
            }
        }
        if let Some(node) = ep.node_name.as_deref() {
            for msg in names::is_dns1123_subdomain(node) {
                errs.push(FieldError::invalid(&ip.child("nodeName"), node, msg));
            }
        }
        let tp = ip.child("deprecatedTopology");
        if let Some(topo) = &ep.deprecated_topology {
            if topo.len() > MAX_TOPOLOGY_LABELS {
                errs.push(FieldError::too_many(&tp, topo.len(), MAX_TOPOLOGY_LABELS));
            }
            errs.extend(validate_labels(Some(topo), &tp));
            if topo.contains_key(ZONE_LABEL) {
                errs.push(FieldError::internal(
                    &tp.key(ZONE_LABEL),
                    "reserved key was not removed in conversion",
                ));
            }
        }
        if let Some(host) = ep.hostname.as_deref() {
            for msg in names::is_dns1123_label(host) {
                errs.push(FieldError::invalid(&ip.child("hostname"), host, msg));
            }
        }
        if let Some(hints) = &ep.hints {
            errs.extend(validate_hints(hints, &ip.child("hints")));
        }
    }
    errs
}

/// `ValidateEndpointIP`: an address that parses must not be special; one that does not parse
/// has already been reported.
fn endpoint_ip(path: &Path, addr: &str) -> ErrorList {
    if names::parse_ip_sloppy(addr).is_none() {
        return Vec::new();
    }
    names::validate_non_special_ip(path, addr)
}

fn validate_hints(hints: &EndpointHints, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    let zp = path.child("forZones");
    let zones = hints.for_zones.as_deref().unwrap_or(&[]);
    if zones.len() > MAX_ZONE_HINTS {
        errs.push(FieldError::too_many(&zp, zones.len(), MAX_ZONE_HINTS));
        return errs;
    }
    let mut seen = BTreeSet::new();
    for (i, z) in zones.iter().enumerate() {
        let p = zp.index(i).child("name");
        if !seen.insert(z.name.as_str()) {
            errs.push(FieldError::duplicate(&p, &z.name));
        }
        for msg in names::is_valid_label_value(&z.name) {
            errs.push(FieldError::invalid(&p, &z.name, msg));
        }
    }
    errs
}

fn validate_ports(ports: &[EndpointPort], path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if ports.len() > MAX_PORTS {
        errs.push(FieldError::too_many(path, ports.len(), MAX_PORTS));
        return errs;
    }
    let mut seen = BTreeSet::new();
    for (i, port) in ports.iter().enumerate() {
        let p = path.index(i);
        let name = port.name.as_deref().unwrap_or("");
        if !name.is_empty() {
            for msg in names::is_dns1123_label(name) {
                errs.push(FieldError::invalid(&p.child("name"), name, msg));
            }
        }
        if !seen.insert(name) {
            errs.push(FieldError::duplicate(&p.child("name"), name));
        }
        match port.protocol.as_deref() {
            None => errs.push(FieldError::required(&p.child("protocol"), "")),
            Some(proto) if !PROTOCOLS.contains(&proto) => {
                errs.push(FieldError::not_supported(&p.child("protocol"), proto, PROTOCOLS));
            }
            Some(_) => {}
        }
        if let Some(app) = &port.app_protocol {
            for msg in names::is_qualified_name(app) {
                errs.push(FieldError::invalid(&p.child("appProtocol"), app, msg));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ForZone, ObjectMeta};

    fn slice(at: &str, addrs: &[&str]) -> EndpointSlice {
        EndpointSlice {
            metadata: ObjectMeta {
                name: Some("hello".into()),
                namespace: Some("default".into()),
                resource_version: Some("1".into()),
                ..Default::default()
            },
            address_type: at.into(),
            endpoints: Some(vec![Endpoint {
                addresses: addrs.iter().map(|a| (*a).into()).collect(),
                ..Default::default()
            }]),
            ports: Some(vec![EndpointPort {
                name: Some("http".into()),
                protocol: Some("TCP".into()),
                ..Default::default()
            }]),
            ..Default::default()
        }
    }

    #[test]
    fn addresses() {
        let n = |at: &str, a: &[&str]| validate_endpoint_slice_create(&slice(at, a)).len();
        assert_eq!(n("IPv4", &["10.1.2.3"]), 0);
        assert_eq!(n("IPv4", &["2001:db8::1"]), 1);
        assert_eq!(n("IPv4", &["123.456.789.012"]), 1);
        assert_eq!(n("IPv4", &["127.0.0.1"]), 1);
        assert_eq!(n("IPv6", &["fe80::1", "10.0.0.1"]), 2);
        assert_eq!(
            n(
                "FQDN",
                &["foo.example.com", "Foo.example.com", "*.example.com", "a"]
            ),
            3
        );
        assert_eq!(n("IPv4", &[]), 1);
        assert_eq!(n("IP", &["whatever"]), 1);
        assert_eq!(n("", &["whatever"]), 1);
        let many: Vec<String> = (0..101).map(|i| format!("10.0.0.{}", i % 250 + 1)).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        assert_eq!(n("IPv4", &many), 1);
    }

    #[test]
    fn endpoint_fields() {
        let mut s = slice("IPv4", &["10.0.0.1"]);
        if let Some(ep) = s.endpoints.as_mut().and_then(|e| e.first_mut()) {
            ep.node_name = Some("Bad_Node".into());
            ep.hostname = Some("a.b".into());
            ep.deprecated_topology = Some(Box::new([(ZONE_LABEL.to_string(), "z".to_string())].into()));
            ep.hints = Some(Box::new(EndpointHints {
                for_zones: Some(vec![
                    ForZone { name: "a".into() },
                    ForZone { name: "a".into() },
                    ForZone { name: "-".into() },
                ]),
                for_nodes: None,
            }));
        }
        let e = validate_endpoint_slice_create(&s);
        let fields: Vec<&str> = e.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "endpoints[0].nodeName",
                "endpoints[0].deprecatedTopology[topology.kubernetes.io/zone]",
                "endpoints[0].hostname",
                "endpoints[0].hints.forZones[1].name",
                "endpoints[0].hints.forZones[2].name"
            ]
        );
    }

    #[test]
    fn ports_and_update() {
        let mut s = slice("IPv4", &["10.0.0.1"]);
        s.ports = Some(vec![
            EndpointPort::default(),
            EndpointPort {
                name: Some(String::new()),
                protocol: Some("ICMP".into()),
                app_protocol: Some("a/b/c".into()),
                ..Default::default()
            },
        ]);
        let e = validate_endpoint_slice_create(&s);
        let fields: Vec<&str> = e.iter().map(|e| e.field.as_str()).collect();
        assert_eq!(
            fields,
            [
                "ports[0].protocol",
                "ports[1].name",
                "ports[1].protocol",
                "ports[1].appProtocol"
            ]
        );
        let old = slice("IPv4", &["10.0.0.1"]);
        assert!(validate_endpoint_slice_update(&old, &old).is_empty());
        let new = slice("IPv6", &["2001:db8::1"]);
        let e = validate_endpoint_slice_update(&new, &old);
        assert_eq!(e.len(), 1);
        assert_eq!(
            e[0].to_string(),
            "addressType: Invalid value: \"IPv6\": field is immutable"
        );
    }
}
