//! NetworkPolicy validation (`ValidateNetworkPolicy`, `ValidateNetworkPolicyUpdate` of
//! `pkg/apis/networking/validation`) and the label-selector rules it relies on
//! (`ValidateLabelSelector` of apimachinery's `meta/v1/validation`).
//!
//! The CIDR check of `ipBlock` follows the reference snapshot, in which the
//! `StrictIPCIDRValidation` gate is on: beyond the lenient parse, a CIDR with leading zeros, an
//! IPv4-mapped IPv6 address or bits set after the prefix length is refused (one error, the first
//! that applies). Values already stored in the old object are exempt on update.

use crate::field::{BadValue, ErrorList, FieldError, Path, go_quote};
use crate::netparse::{self, GoIp, GoNet};
use crate::validation::{meta, names};
use crate::{
    IntOrString, IpBlock, LabelSelector, LabelSelectorRequirement, NetworkPolicy, NetworkPolicyPeer,
    NetworkPolicyPort, NetworkPolicySpec, policy_type,
};

/// Whether the `StrictIPCIDRValidation` feature gate is on (it is in the reference snapshot).
const STRICT_IP_CIDR_VALIDATION: bool = true;

const SUPPORTED_PROTOCOLS: [&str; 3] = ["TCP", "UDP", "SCTP"];

/// `NetworkPolicyValidationOptions`: the two allowances an update may carry.
#[derive(Debug, Default)]
struct Options {
    /// Skip the label-value check of selector expression values.
    allow_invalid_label_value_in_selector: bool,
    /// CIDR strings stored in the old object, exempt from the syntax check.
    allowed_cidrs: Vec<String>,
}

/// `ValidateNetworkPolicy` (create): metadata (namespaced, name a DNS-1123 subdomain), then the
/// spec. Returns every error found; an empty list means valid.
///
/// ```
/// use svcnet_model::{NetworkPolicy, validation};
/// let np: NetworkPolicy = serde_json::from_str(r#"{
///   "metadata": {"name": "np", "namespace": "shop"},
///   "spec": {"podSelector": {}, "ingress": [{"from": [{}]}]}
/// }"#).unwrap();
/// let errs = validation::validate_network_policy_create(&np);
/// assert_eq!(errs.len(), 1);
/// assert_eq!(errs[0].to_string(), "spec.ingress[0].from[0]: Required value: must specify a peer");
/// ```
pub fn validate_network_policy_create(np: &NetworkPolicy) -> ErrorList {
    let mut errs =
        meta::validate_object_meta(&np.metadata, true, names::name_is_dns_subdomain, &meta::METADATA);
    errs.extend(validate_spec(
        np.spec.as_ref(),
        &Options::default(),
        &Path::new("spec"),
    ));
    errs
}

/// `ValidateNetworkPolicyUpdate` with `ValidationOptionsForNetworking(new, old)`: metadata
/// update rules, then the full spec of `new` with two allowances taken from `old` — selector
/// expression values are not checked when `old.spec.podSelector` itself fails validation, and
/// any `ipBlock` CIDR string present in `old` skips the CIDR syntax check.
pub fn validate_network_policy_update(new: &NetworkPolicy, old: &NetworkPolicy) -> ErrorList {
    let old_spec = old.spec.as_ref();
    let old_selector = old_spec.and_then(|s| s.pod_selector.as_ref());
    let opts = Options {
        allow_invalid_label_value_in_selector: !validate_label_selector(old_selector, false, &Path::new(""))
            .is_empty(),
        allowed_cidrs: stored_cidrs(old_spec),
    };
    let mut errs = meta::validate_object_meta_update(&new.metadata, &old.metadata, &meta::METADATA);
    errs.extend(validate_spec(new.spec.as_ref(), &opts, &Path::new("spec")));
    errs
}

/// Every `cidr` and `except` string of the old object's ingress and egress peers.
fn stored_cidrs(spec: Option<&NetworkPolicySpec>) -> Vec<String> {
    let Some(spec) = spec else { return Vec::new() };
    let ingress_peers = spec
        .ingress
        .iter()
        .flatten()
        .flat_map(|r| r.from.iter().flatten());
    let egress_peers = spec.egress.iter().flatten().flat_map(|r| r.to.iter().flatten());
    let mut out = Vec::new();
    for block in ingress_peers
        .chain(egress_peers)
        .filter_map(|p| p.ip_block.as_ref())
    {
        out.push(block.cidr.clone());
        out.extend(block.except.iter().flatten().cloned());
    }
    out
}

/// `ValidateNetworkPolicySpec`. An absent spec reads as the empty spec the API server decodes.
fn validate_spec(spec: Option<&NetworkPolicySpec>, opts: &Options, path: &Path) -> ErrorList {
    let empty = NetworkPolicySpec::default();
    let spec = spec.unwrap_or(&empty);
    let allow = opts.allow_invalid_label_value_in_selector;
    let mut errs = validate_label_selector(spec.pod_selector.as_ref(), allow, &path.child("podSelector"));
    for (i, rule) in spec.ingress.iter().flatten().enumerate() {
        let rule_path = path.child("ingress").index(i);
        for (j, port) in rule.ports.iter().flatten().enumerate() {
            errs.extend(validate_port(port, &rule_path.child("ports").index(j)));
        }
        for (j, peer) in rule.from.iter().flatten().enumerate() {
            errs.extend(validate_peer(peer, opts, &rule_path.child("from").index(j)));
        }
    }
    for (i, rule) in spec.egress.iter().flatten().enumerate() {
        let rule_path = path.child("egress").index(i);
        for (j, port) in rule.ports.iter().flatten().enumerate() {
            errs.extend(validate_port(port, &rule_path.child("ports").index(j)));
        }
        for (j, peer) in rule.to.iter().flatten().enumerate() {
            errs.extend(validate_peer(peer, opts, &rule_path.child("to").index(j)));
        }
    }
    errs.extend(validate_policy_types(
        spec.policy_types.as_deref().unwrap_or(&[]),
        &path.child("policyTypes"),
    ));
    errs
}

/// The `policyTypes` rules: at most two entries (else one error and nothing more), each
/// `Ingress` or `Egress`.
fn validate_policy_types(types: &[String], path: &Path) -> ErrorList {
    let allowed = [policy_type::INGRESS, policy_type::EGRESS];
    if types.len() > allowed.len() {
        let quoted: Vec<String> = types.iter().map(|t| go_quote(t)).collect();
        let shown = format!("[]networking.PolicyType{{{}}}", quoted.join(", "));
        return vec![FieldError::invalid(
            path,
            BadValue::Raw(shown),
            "may not specify more than two policyTypes",
        )];
    }
    types
        .iter()
        .enumerate()
        .filter(|(_, t)| !allowed.contains(&t.as_str()))
        .map(|(k, t)| FieldError::not_supported(&path.index(k), t, &allowed))
        .collect()
}

/// `ValidateNetworkPolicyPort`.
fn validate_port(port: &NetworkPolicyPort, path: &Path) -> ErrorList {
    let mut errs = Vec::new();
    if let Some(proto) = &port.protocol
        && !SUPPORTED_PROTOCOLS.contains(&proto.as_str())
    {
        errs.push(FieldError::not_supported(
            &path.child("protocol"),
            proto,
            &SUPPORTED_PROTOCOLS,
        ));
    }
    let end_path = path.child("endPort");
    match &port.port {
        Some(IntOrString::Int(number)) => {
            for msg in names::is_valid_port_num(i64::from(*number)) {
                errs.push(FieldError::invalid(&path.child("port"), *number, msg));
            }
            if let Some(end) = port.end_port {
                if end < *number {
                    errs.push(FieldError::invalid(
                        &end_path,
                        end,
                        "must be greater than or equal to `port`",
                    ));
                }
                for msg in names::is_valid_port_num(i64::from(end)) {
                    errs.push(FieldError::invalid(&end_path, end, msg));
                }
            }
        }
        Some(IntOrString::String(name)) => {
            if let Some(end) = port.end_port {
                errs.push(FieldError::invalid(
                    &end_path,
                    end,
                    "may not be specified when `port` is non-numeric",
                ));
            }
            for msg in names::is_valid_port_name(name) {
                errs.push(FieldError::invalid(&path.child("port"), name, msg));
            }
        }
        None => {
            if let Some(end) = port.end_port {
                errs.push(FieldError::invalid(
                    &end_path,
                    end,
                    "may not be specified when `port` is not specified",
                ));
            }
        }
    }
    errs
}

/// `ValidateNetworkPolicyPeer`: each member present is validated, then exactly the member count
/// rules (none → Required; `ipBlock` with anything else → Forbidden).
fn validate_peer(peer: &NetworkPolicyPeer, opts: &Options, path: &Path) -> ErrorList {
    let allow = opts.allow_invalid_label_value_in_selector;
    let mut errs = Vec::new();
    let mut members = 0;
    if let Some(sel) = &peer.pod_selector {
        members += 1;
        errs.extend(validate_label_selector(
            Some(sel),
            allow,
            &path.child("podSelector"),
        ));
    }
    if let Some(sel) = &peer.namespace_selector {
        members += 1;
        errs.extend(validate_label_selector(
            Some(sel),
            allow,
            &path.child("namespaceSelector"),
        ));
    }
    if let Some(block) = &peer.ip_block {
        members += 1;
        errs.extend(validate_ip_block(block, opts, &path.child("ipBlock")));
    }
    if members == 0 {
        errs.push(FieldError::required(path, "must specify a peer"));
    } else if members > 1 && peer.ip_block.is_some() {
        errs.push(FieldError::forbidden(
            path,
            "may not specify both ipBlock and another peer",
        ));
    }
    errs
}

/// `ValidateIPBlock`.
fn validate_ip_block(block: &IpBlock, opts: &Options, path: &Path) -> ErrorList {
    let cidr_path = path.child("cidr");
    if block.cidr.is_empty() {
        return vec![FieldError::required(&cidr_path, "")];
    }
    let mut errs = legacy_cidr_errors(&block.cidr, opts, &cidr_path);
    let Some(net) = netparse::parse_cidr_sloppy(&block.cidr) else {
        return errs;
    };
    for (k, except) in block.except.iter().flatten().enumerate() {
        let except_path = path.child("except").index(k);
        errs.extend(legacy_cidr_errors(except, opts, &except_path));
        let Some(inner) = netparse::parse_cidr_sloppy(except) else {
            continue;
        };
        if !strict_subset(&net, &inner) {
            errs.push(FieldError::invalid(
                &except_path,
                except,
                "must be a strict subset of `cidr`",
            ));
        }
    }
    errs
}

/// The except's network address lies in `outer` and its prefix is strictly longer.
fn strict_subset(outer: &GoNet, inner: &GoNet) -> bool {
    outer.contains(&GoIp(inner.ip)) && outer.ones < inner.ones
}

/// `IsValidCIDRForLegacyField` behind core's wrapper: values stored before are exempt; else one
/// error when the lenient parse fails, or (strict mode) one for the first non-standard form.
fn legacy_cidr_errors(value: &str, opts: &Options, path: &Path) -> ErrorList {
    if opts.allowed_cidrs.iter().any(|c| c == value) {
        return Vec::new();
    }
    let Some(net) = netparse::parse_cidr_sloppy(value) else {
        return vec![FieldError::invalid(
            path,
            value,
            "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)",
        )];
    };
    if !STRICT_IP_CIDR_VALIDATION {
        return Vec::new();
    }
    let detail = if net.leading_zeros {
        "must not have leading 0s in IP or prefix length"
    } else if net.mapped {
        "must not have an IPv4-mapped IPv6 address"
    } else if net.host_bits() {
        "must not have bits set beyond the prefix length"
    } else {
        return Vec::new();
    };
    vec![FieldError::invalid(path, value, detail)]
}

/// `ValidateLabelSelector`: `matchLabels` keys and values (errors at `…matchLabels`), then each
/// `matchExpressions` entry. An absent selector is valid.
fn validate_label_selector(
    selector: Option<&LabelSelector>,
    allow_invalid_values: bool,
    path: &Path,
) -> ErrorList {
    let Some(selector) = selector else {
        return Vec::new();
    };
    let mut errs = meta::validate_labels(selector.match_labels.as_ref(), &path.child("matchLabels"));
    for (i, req) in selector.match_expressions.iter().flatten().enumerate() {
        errs.extend(validate_requirement(
            req,
            allow_invalid_values,
            &path.child("matchExpressions").index(i),
        ));
    }
    errs
}

/// `ValidateLabelSelectorRequirement`: operator and values pairing, key, then (unless allowed)
/// each value.
fn validate_requirement(
    req: &LabelSelectorRequirement,
    allow_invalid_values: bool,
    path: &Path,
) -> ErrorList {
    let mut errs = Vec::new();
    let values = req.values.as_deref().unwrap_or(&[]);
    match req.operator.as_str() {
        "In" | "NotIn" => {
            if values.is_empty() {
                errs.push(FieldError::required(
                    &path.child("values"),
                    "must be specified when `operator` is 'In' or 'NotIn'",
                ));
            }
        }
        "Exists" | "DoesNotExist" => {
            if !values.is_empty() {
                errs.push(FieldError::forbidden(
                    &path.child("values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ));
            }
        }
        other => errs.push(FieldError::invalid(
            &path.child("operator"),
            other,
            "not a valid selector operator",
        )),
    }
    errs.extend(meta::validate_label_name(&req.key, &path.child("key")));
    if !allow_invalid_values {
        for (v, value) in values.iter().enumerate() {
            for msg in names::is_valid_label_value(value) {
                errs.push(FieldError::invalid(&path.child("values").index(v), value, msg));
            }
        }
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::field::ErrorType;

    fn np(spec: NetworkPolicySpec) -> NetworkPolicy {
        let mut np = NetworkPolicy::default();
        np.metadata.name = Some("foo".into());
        np.metadata.namespace = Some("bar".into());
        np.spec = Some(spec);
        np
    }

    fn ingress_peer(peer: NetworkPolicyPeer) -> NetworkPolicySpec {
        NetworkPolicySpec {
            ingress: Some(vec![crate::NetworkPolicyIngressRule {
                ports: None,
                from: Some(vec![peer]),
            }]),
            ..Default::default()
        }
    }

    fn block(cidr: &str, except: &[&str]) -> NetworkPolicyPeer {
        NetworkPolicyPeer {
            ip_block: Some(IpBlock {
                cidr: cidr.into(),
                except: Some(except.iter().map(|s| s.to_string()).collect()),
            }),
            ..Default::default()
        }
    }

    fn summary(errs: &ErrorList) -> Vec<(ErrorType, String)> {
        errs.iter().map(|e| (e.type_, e.field.clone())).collect()
    }

    fn port_errs(port: NetworkPolicyPort) -> Vec<String> {
        validate_port(&port, &Path::new("p"))
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn port_rules() {
        let p = |port: Option<IntOrString>, end: Option<i32>| NetworkPolicyPort {
            protocol: None,
            port,
            end_port: end,
        };
        assert!(port_errs(p(Some(IntOrString::Int(80)), Some(80))).is_empty());
        assert_eq!(
            port_errs(p(Some(IntOrString::Int(80)), Some(0))),
            [
                "p.endPort: Invalid value: 0: must be greater than or equal to `port`",
                "p.endPort: Invalid value: 0: must be between 1 and 65535, inclusive"
            ]
        );
        assert_eq!(port_errs(p(Some(IntOrString::Int(30000)), Some(65537))).len(), 1);
        assert_eq!(port_errs(p(Some(IntOrString::Int(70000)), Some(70001))).len(), 2);
        assert_eq!(
            port_errs(p(None, Some(90))),
            ["p.endPort: Invalid value: 90: may not be specified when `port` is not specified"]
        );
        assert_eq!(port_errs(p(Some("!@#$".into()), None)).len(), 2);
        assert_eq!(port_errs(p(Some("HTTP".into()), None)).len(), 2);
        assert_eq!(port_errs(p(Some("80".into()), None)).len(), 1);
        assert_eq!(port_errs(p(Some("".into()), None)).len(), 2);
        assert!(port_errs(p(Some("dns".into()), None)).is_empty());
        assert_eq!(
            port_errs(p(Some("dns".into()), Some(1))),
            ["p.endPort: Invalid value: 1: may not be specified when `port` is non-numeric"]
        );
        let bad_proto = NetworkPolicyPort {
            protocol: Some("tcp".into()),
            ..Default::default()
        };
        assert_eq!(
            port_errs(bad_proto),
            [r#"p.protocol: Unsupported value: "tcp": supported values: "TCP", "UDP", "SCTP""#]
        );
    }

    #[test]
    fn peer_member_counts() {
        let e = validate_network_policy_create(&np(ingress_peer(NetworkPolicyPeer::default())));
        assert_eq!(
            summary(&e),
            [(ErrorType::Required, "spec.ingress[0].from[0]".to_owned())]
        );
        let mut both = block("10.0.0.0/8", &[]);
        both.namespace_selector = Some(LabelSelector::default());
        let e = validate_network_policy_create(&np(ingress_peer(both)));
        assert_eq!(
            summary(&e),
            [(ErrorType::Forbidden, "spec.ingress[0].from[0]".to_owned())]
        );
        let sels = NetworkPolicyPeer {
            pod_selector: Some(LabelSelector::default()),
            namespace_selector: Some(LabelSelector::default()),
            ip_block: None,
        };
        assert!(validate_network_policy_create(&np(ingress_peer(sels))).is_empty());
    }

    #[test]
    fn ip_block_rules() {
        let errs = |cidr: &str, except: &[&str]| {
            summary(&validate_network_policy_create(&np(ingress_peer(block(
                cidr, except,
            )))))
            .into_iter()
            .map(|(t, f)| format!("{}@{f}", t.reason()))
            .collect::<Vec<_>>()
        };
        let base = "spec.ingress[0].from[0].ipBlock";
        assert!(errs("192.168.0.0/16", &["192.168.1.0/24", "192.168.1.0/24"]).is_empty());
        assert_eq!(errs("", &["bad"]), [format!("FieldValueRequired@{base}.cidr")]);
        assert_eq!(
            errs("192.168.5.6", &["bad"]),
            [format!("FieldValueInvalid@{base}.cidr")]
        );
        assert_eq!(
            errs(
                "192.168.0.0/16",
                &["192.168.0.0/16", "10.0.0.0/8", "192.0.0.0/8", "x"]
            ),
            [
                format!("FieldValueInvalid@{base}.except[0]"),
                format!("FieldValueInvalid@{base}.except[1]"),
                format!("FieldValueInvalid@{base}.except[2]"),
                format!("FieldValueInvalid@{base}.except[3]"),
            ]
        );
        // A family mismatch is just "not contained".
        assert_eq!(errs("10.0.0.0/8", &["fd00::/64"]).len(), 1);
        // Strict mode: one error for the first non-standard form, none for non-canonical IPv6.
        assert_eq!(errs("010.0.0.0/8", &[]).len(), 1);
        assert_eq!(errs("192.168.1.1/24", &[]).len(), 1);
        assert_eq!(errs("::ffff:1.2.3.0/120", &[]).len(), 1);
        assert!(errs("FD00:0:0:0:0:0:0:0/64", &[]).is_empty());
    }

    #[test]
    fn stored_cidrs_are_exempt_on_update() {
        let mut old = np(ingress_peer(block("192.168.1.1/24", &["192.168.1.7/32"])));
        old.metadata.resource_version = Some("1".into());
        let mut new = old.clone();
        // Moved into an egress rule and swapped: still exempt from the syntax check.
        new.spec = Some(NetworkPolicySpec {
            egress: Some(vec![crate::NetworkPolicyEgressRule {
                ports: None,
                to: Some(vec![block("192.168.1.1/24", &["192.168.1.7/32", "010.1.0.0/16"])]),
            }]),
            ..Default::default()
        });
        let errs = validate_network_policy_update(&new, &old);
        // The new except gets its syntax error and is not a subset either.
        assert_eq!(
            summary(&errs),
            [
                (
                    ErrorType::Invalid,
                    "spec.egress[0].to[0].ipBlock.except[1]".to_owned()
                ),
                (
                    ErrorType::Invalid,
                    "spec.egress[0].to[0].ipBlock.except[1]".to_owned()
                ),
            ]
        );
        // On create the stored host-bits form fails.
        assert_eq!(validate_network_policy_create(&old).len(), 1);
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelector {
        LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: key.into(),
                operator: op.into(),
                values: Some(values.iter().map(|s| s.to_string()).collect()),
            }]),
        }
    }

    #[test]
    fn selector_rules() {
        let check = |sel: LabelSelector, allow: bool| {
            summary(&validate_label_selector(Some(&sel), allow, &Path::new("s")))
                .into_iter()
                .map(|(t, f)| format!("{}@{f}", t.reason()))
                .collect::<Vec<_>>()
        };
        assert!(check(expr("key", "In", &["value"]), false).is_empty());
        assert_eq!(
            check(expr("key", "In", &[]), false),
            ["FieldValueRequired@s.matchExpressions[0].values"]
        );
        assert_eq!(
            check(expr("key", "Exists", &["-v"]), false),
            [
                "FieldValueForbidden@s.matchExpressions[0].values",
                "FieldValueInvalid@s.matchExpressions[0].values[0]"
            ]
        );
        assert_eq!(
            check(expr("", "in", &["-v"]), true),
            [
                "FieldValueInvalid@s.matchExpressions[0].operator",
                "FieldValueInvalid@s.matchExpressions[0].key",
                "FieldValueInvalid@s.matchExpressions[0].key",
            ]
        );
        let labels = LabelSelector {
            match_labels: Some([("".to_string(), "bad,value".to_string())].into()),
            match_expressions: None,
        };
        assert_eq!(check(labels, true).len(), 3);
    }

    #[test]
    fn selector_value_allowance_comes_from_old_pod_selector() {
        let mut old = np(NetworkPolicySpec {
            pod_selector: Some(expr("key", "In", &["-bad"])),
            ..Default::default()
        });
        old.metadata.resource_version = Some("1".into());
        let mut new = old.clone();
        new.spec = Some(ingress_peer(NetworkPolicyPeer {
            pod_selector: Some(expr("key", "In", &["-worse"])),
            ..Default::default()
        }));
        assert!(validate_network_policy_update(&new, &old).is_empty());
        // Keys stay strict.
        new.spec = Some(ingress_peer(NetworkPolicyPeer {
            pod_selector: Some(expr("-key", "In", &["-worse"])),
            ..Default::default()
        }));
        assert_eq!(validate_network_policy_update(&new, &old).len(), 1);
        // Without a bad old selector, the values are checked.
        let mut clean_old = old.clone();
        clean_old.spec = None;
        new.spec = Some(ingress_peer(NetworkPolicyPeer {
            pod_selector: Some(expr("key", "In", &["-worse"])),
            ..Default::default()
        }));
        assert_eq!(validate_network_policy_update(&new, &clean_old).len(), 1);
    }

    #[test]
    fn policy_types_rules() {
        let with = |types: &[&str]| {
            validate_network_policy_create(&np(NetworkPolicySpec {
                policy_types: Some(types.iter().map(|s| s.to_string()).collect()),
                ..Default::default()
            }))
        };
        assert!(with(&["Ingress", "Ingress"]).is_empty());
        let three = with(&["Ingress", "Egress", "Foo"]);
        assert_eq!(three.len(), 1);
        assert_eq!(
            three[0].to_string(),
            r#"spec.policyTypes: Invalid value: []networking.PolicyType{"Ingress", "Egress", "Foo"}: may not specify more than two policyTypes"#
        );
        // The list is quoted the way Go's %#v quotes, not Rust's Debug.
        let odd = with(&["Ingress", "Egress", "a\u{1}\u{e9}"]);
        assert!(
            odd[0]
                .to_string()
                .contains(r#"[]networking.PolicyType{"Ingress", "Egress", "a\x01é"}"#),
            "{}",
            odd[0]
        );
        assert_eq!(
            summary(&with(&["ingress", "Foo"])),
            [
                (ErrorType::NotSupported, "spec.policyTypes[0]".to_owned()),
                (ErrorType::NotSupported, "spec.policyTypes[1]".to_owned()),
            ]
        );
    }
}
