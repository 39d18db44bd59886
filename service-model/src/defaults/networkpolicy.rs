//! NetworkPolicy defaults (`SetDefaults_NetworkPolicy`, `SetDefaults_NetworkPolicyPort`).
//!
//! Follows Kubernetes v1.37.2: `pkg/apis/networking/v1/defaults.go`.

use crate::{NetworkPolicy, NetworkPolicyPort, policy_type};

/// Applies the API server's NetworkPolicy defaults in place (idempotent).
///
/// - every `ports[*]` entry of every ingress and egress rule without a `protocol` gets `TCP`
///   (an empty string is a value, not an absence, and is left for validation to refuse);
/// - `spec.policyTypes`, when absent or empty, becomes `["Ingress"]`, plus `"Egress"` when
///   `spec.egress` holds at least one rule. A non-empty list is never touched.
///
/// Nothing else is defaulted. An absent `spec` is read as the empty spec the API server
/// would decode, so it ends up holding `policyTypes: ["Ingress"]`.
///
/// ```
/// use svcnet_model::{NetworkPolicy, NetworkPolicySpec, NetworkPolicyEgressRule, defaults};
/// let mut np = NetworkPolicy::default();
/// np.spec = Some(NetworkPolicySpec {
///     egress: Some(vec![NetworkPolicyEgressRule::default()]),
///     ..Default::default()
/// });
/// defaults::default_network_policy(&mut np);
/// let types = np.spec.unwrap().policy_types.unwrap();
/// assert_eq!(types, ["Ingress", "Egress"]);
/// ```
pub fn default_network_policy(np: &mut NetworkPolicy) {
    let spec = np.spec.get_or_insert_with(Default::default);
    for rule in spec.ingress.iter_mut().flatten() {
        default_ports(rule.ports.as_deref_mut());
    }
    for rule in spec.egress.iter_mut().flatten() {
        default_ports(rule.ports.as_deref_mut());
    }
    if spec.policy_types.as_ref().is_none_or(Vec::is_empty) {
        let mut types = vec![policy_type::INGRESS.to_owned()];
        if spec.egress.as_ref().is_some_and(|e| !e.is_empty()) {
            types.push(policy_type::EGRESS.to_owned());
        }
        spec.policy_types = Some(types);
    }
}

fn default_ports(ports: Option<&mut [NetworkPolicyPort]>) {
    for port in ports.into_iter().flatten() {
        if port.protocol.is_none() {
            port.protocol = Some("TCP".to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{NetworkPolicyEgressRule, NetworkPolicyIngressRule, NetworkPolicySpec};

    fn types_after(spec: NetworkPolicySpec) -> Vec<String> {
        let mut np = NetworkPolicy {
            spec: Some(spec),
            ..Default::default()
        };
        default_network_policy(&mut np);
        np.spec.and_then(|s| s.policy_types).unwrap_or_default()
    }

    #[test]
    fn policy_types_follow_set_defaults_network_policy() {
        // The five entries of TestSetDefaultNetworkPolicy.
        assert_eq!(types_after(NetworkPolicySpec::default()), ["Ingress"]);
        assert_eq!(
            types_after(NetworkPolicySpec {
                ingress: Some(vec![]),
                ..Default::default()
            }),
            ["Ingress"]
        );
        assert_eq!(
            types_after(NetworkPolicySpec {
                ingress: Some(vec![NetworkPolicyIngressRule::default()]),
                egress: Some(vec![NetworkPolicyEgressRule::default()]),
                ..Default::default()
            }),
            ["Ingress", "Egress"]
        );
        assert_eq!(
            types_after(NetworkPolicySpec {
                egress: Some(vec![NetworkPolicyEgressRule::default()]),
                ..Default::default()
            }),
            ["Ingress", "Egress"]
        );
        assert_eq!(
            types_after(NetworkPolicySpec {
                egress: Some(vec![NetworkPolicyEgressRule::default()]),
                policy_types: Some(vec!["Egress".into()]),
                ..Default::default()
            }),
            ["Egress"]
        );
        // An empty egress list does not count; an empty policyTypes list is filled.
        assert_eq!(
            types_after(NetworkPolicySpec {
                egress: Some(vec![]),
                policy_types: Some(vec![]),
                ..Default::default()
            }),
            ["Ingress"]
        );
    }

    #[test]
    fn protocol_defaults_to_tcp_but_empty_string_stays() {
        let mut np = NetworkPolicy {
            spec: Some(NetworkPolicySpec {
                ingress: Some(vec![NetworkPolicyIngressRule {
                    ports: Some(vec![
                        NetworkPolicyPort::default(),
                        NetworkPolicyPort {
                            protocol: Some(String::new()),
                            ..Default::default()
                        },
                    ]),
                    from: None,
                }]),
                egress: Some(vec![NetworkPolicyEgressRule {
                    ports: Some(vec![NetworkPolicyPort {
                        protocol: Some("UDP".into()),
                        ..Default::default()
                    }]),
                    to: None,
                }]),
                ..Default::default()
            }),
            ..Default::default()
        };
        default_network_policy(&mut np);
        let spec = np.spec.clone().unwrap_or_default();
        let ing = spec.ingress.unwrap_or_default();
        let ports = ing[0].ports.clone().unwrap_or_default();
        assert_eq!(ports[0].protocol.as_deref(), Some("TCP"));
        assert_eq!(ports[1].protocol.as_deref(), Some(""));
        let eg = spec.egress.unwrap_or_default();
        let eports = eg[0].ports.clone().unwrap_or_default();
        assert_eq!(eports[0].protocol.as_deref(), Some("UDP"));
        let again = {
            let mut n = np.clone();
            default_network_policy(&mut n);
            n
        };
        assert_eq!(again, np);
    }

    #[test]
    fn absent_spec_gets_ingress_type() {
        let mut np = NetworkPolicy::default();
        default_network_policy(&mut np);
        assert_eq!(
            np.spec.and_then(|s| s.policy_types),
            Some(vec!["Ingress".to_owned()])
        );
    }
}
