//! The kubelet's service environment variables, and how they merge with a container's own.
//!
//! Follows Kubernetes v1.37.2: `pkg/kubelet/envvars/envvars.go` and the merge in
//! `pkg/kubelet/kubelet_pods.go` (`makeEnvironmentVariables`).

use std::collections::BTreeMap;

use indexmap::IndexMap;
use svcnet_model::{CLUSTER_IP_NONE, EnvVar, Service};

/// The namespace whose master Services every Pod sees.
const MASTER_NAMESPACE: &str = "default";
/// The master Services (the API server's).
const MASTER_SERVICES: &[&str] = &["kubernetes"];

/// The service environment variables the kubelet gives a container of a Pod in `namespace`.
///
/// Included: the Services with a `spec.clusterIP` (not empty, not `None`) that are either the
/// `kubernetes` Service of `default` (always) or, when `enable_service_links` is true, in
/// `namespace` (where a `kubernetes` Service of the Pod's own namespace replaces the master
/// one). Services come in name order, each with its variables in the kubelet's order; when
/// two Services produce the same name, the one later in name order wins (keeping the
/// position of the first). A Service without ports has no variables. An empty namespace on
/// a Service means `default`.
pub fn service_env(services: &[Service], namespace: &str, enable_service_links: bool) -> Vec<EnvVar> {
    let namespace = if namespace.is_empty() {
        MASTER_NAMESPACE
    } else {
        namespace
    };
    let mut chosen: BTreeMap<&str, &Service> = BTreeMap::new();
    for svc in services {
        let ip = svc.spec().cluster_ip.as_deref().unwrap_or("");
        if ip.is_empty() || ip == CLUSTER_IP_NONE {
            continue;
        }
        let ns = match svc.metadata.namespace() {
            "" => MASTER_NAMESPACE,
            ns => ns,
        };
        let name = svc.metadata.name();
        if ns == MASTER_NAMESPACE && MASTER_SERVICES.contains(&name) {
            chosen.entry(name).or_insert(svc);
        } else if ns == namespace && enable_service_links {
            chosen.insert(name, svc);
        }
    }
    let mut vars: IndexMap<String, String> = IndexMap::new();
    for svc in chosen.values() {
        for (name, value) in service_vars(svc) {
            vars.insert(name, value);
        }
    }
    vars.into_iter()
        .map(|(name, value)| EnvVar {
            name,
            value: Some(value),
        })
        .collect()
}

/// The variables of one Service, in the kubelet's order.
fn service_vars(svc: &Service) -> Vec<(String, String)> {
    let spec = svc.spec();
    let ip = spec.cluster_ip.as_deref().unwrap_or("");
    let ports = spec.ports();
    let Some(first) = ports.first() else {
        return Vec::new();
    };
    let prefix = env_name(svc.metadata.name());
    let host_port = |port: i32| {
        if ip.contains(':') {
            format!("[{ip}]:{port}")
        } else {
            format!("{ip}:{port}")
        }
    };
    let proto_of = |p: &svcnet_model::ServicePort| match p.protocol.as_deref() {
        None | Some("") => "TCP".to_owned(),
        Some(p) => p.to_owned(),
    };
    let mut out = Vec::with_capacity(3 + ports.len() * 5);
    out.push((format!("{prefix}_SERVICE_HOST"), ip.to_owned()));
    out.push((format!("{prefix}_SERVICE_PORT"), first.port.to_string()));
    for p in ports {
        if !p.name().is_empty() {
            out.push((
                format!("{prefix}_SERVICE_PORT_{}", env_name(p.name())),
                p.port.to_string(),
            ));
        }
    }
    for (i, p) in ports.iter().enumerate() {
        let proto = proto_of(p);
        let lower = proto.to_lowercase();
        let url = format!("{lower}://{}", host_port(p.port));
        if i == 0 {
            out.push((format!("{prefix}_PORT"), url.clone()));
        }
        let pp = format!("{prefix}_PORT_{}_{}", p.port, proto.to_uppercase());
        out.push((pp.clone(), url));
        out.push((format!("{pp}_PROTO"), lower));
        out.push((format!("{pp}_PORT"), p.port.to_string()));
        out.push((format!("{pp}_ADDR"), ip.to_owned()));
    }
    out
}

/// The kubelet's mangling: upper case, `-` to `_`, nothing else.
fn env_name(s: &str) -> String {
    s.replace('-', "_").to_uppercase()
}

/// A container's environment: its own variables (`declared`, in order; values may reference
/// earlier declared variables and service variables as `$(NAME)`, `$$` is a literal `$`),
/// then every service variable whose name the container does not declare.
///
/// A name declared twice keeps its first position and its last value. Unknown references
/// stay as written. Variables without a value count as declared with an empty value.
pub fn container_env(declared: &[EnvVar], service: &[EnvVar]) -> Vec<EnvVar> {
    let service_map: BTreeMap<&str, &str> = service
        .iter()
        .map(|v| (v.name.as_str(), v.value.as_deref().unwrap_or("")))
        .collect();
    let mut own: IndexMap<String, String> = IndexMap::new();
    for v in declared {
        let raw = v.value.as_deref().unwrap_or("");
        let value = expand(raw, |name| {
            own.get(name)
                .map(String::as_str)
                .or_else(|| service_map.get(name).copied())
                .map(str::to_owned)
        });
        own.insert(v.name.clone(), value);
    }
    let mut out: Vec<EnvVar> = own
        .iter()
        .map(|(n, v)| EnvVar {
            name: n.clone(),
            value: Some(v.clone()),
        })
        .collect();
    for v in service {
        if !own.contains_key(&v.name) {
            out.push(v.clone());
        }
    }
    out
}

/// Expands `$(NAME)` references with `lookup`; `$$` gives `$`; anything else stays.
fn expand(input: &str, lookup: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        let mut chars = after.chars();
        match chars.next() {
            None => {
                out.push('$');
                rest = after;
            }
            Some('$') => {
                out.push('$');
                rest = &after[1..];
            }
            Some('(') => match after[1..].find(')') {
                Some(end) => {
                    let name = &after[1..1 + end];
                    match lookup(name) {
                        Some(v) => out.push_str(&v),
                        None => {
                            out.push_str("$(");
                            out.push_str(name);
                            out.push(')');
                        }
                    }
                    rest = &after[end + 2..];
                }
                None => {
                    out.push_str("$(");
                    rest = &after[1..];
                }
            },
            Some(c) => {
                out.push('$');
                out.push(c);
                rest = &after[c.len_utf8()..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use svcnet_model::{ServicePort, ServiceSpec};

    fn svc(ns: &str, name: &str, ip: &str, ports: &[(&str, i32, &str)]) -> Service {
        let mut s = Service::default();
        s.metadata.name = Some(name.into());
        s.metadata.namespace = Some(ns.into());
        s.spec = Some(ServiceSpec {
            cluster_ip: Some(ip.into()),
            ports: Some(
                ports
                    .iter()
                    .map(|(n, p, proto)| ServicePort {
                        name: (!n.is_empty()).then(|| n.to_string()),
                        port: *p,
                        protocol: (!proto.is_empty()).then(|| proto.to_string()),
                        ..Default::default()
                    })
                    .collect(),
            ),
            ..Default::default()
        });
        s
    }

    fn get<'a>(vars: &'a [EnvVar], name: &str) -> Option<&'a str> {
        vars.iter()
            .find(|v| v.name == name)
            .and_then(|v| v.value.as_deref())
    }

    #[test]
    fn ipv6_is_bracketed_and_kept_as_written() {
        let vars = service_env(
            &[svc("ns", "super-ipv6", "2001:DB8::", &[("u-d-p", 8084, "UDP")])],
            "ns",
            true,
        );
        assert_eq!(get(&vars, "SUPER_IPV6_SERVICE_HOST"), Some("2001:DB8::"));
        assert_eq!(get(&vars, "SUPER_IPV6_PORT"), Some("udp://[2001:DB8::]:8084"));
        assert_eq!(get(&vars, "SUPER_IPV6_PORT_8084_UDP_ADDR"), Some("2001:DB8::"));
        assert_eq!(get(&vars, "SUPER_IPV6_SERVICE_PORT_U_D_P"), Some("8084"));
        assert_eq!(vars[0].name, "SUPER_IPV6_SERVICE_HOST");
    }

    #[test]
    fn default_protocol_and_collisions() {
        let a = svc("ns", "foo", "1.1.1.1", &[("", 80, "")]);
        let b = svc("ns", "foo-port-80-tcp", "2.2.2.2", &[("", 90, "")]);
        let vars = service_env(&[b, a], "ns", true);
        assert_eq!(get(&vars, "FOO_PORT_80_TCP_PROTO"), Some("tcp"));
        // FOO_PORT_80_TCP_PORT: foo says 80, foo-port-80-tcp (later in name order) says its URL.
        assert_eq!(get(&vars, "FOO_PORT_80_TCP_PORT"), Some("tcp://2.2.2.2:90"));
        assert_eq!(
            vars.iter().filter(|v| v.name == "FOO_PORT_80_TCP_PORT").count(),
            1
        );
        assert!(service_env(&[svc("ns", "x", "1.1.1.1", &[])], "ns", true).is_empty());
    }

    #[test]
    fn expansion_follows_the_kubelet() {
        let look = |n: &str| match n {
            "VAR_A" => Some("A".to_owned()),
            "VAR_B" => Some("B".to_owned()),
            "VAR_EMPTY" => Some(String::new()),
            _ => None,
        };
        let cases = [
            ("$(VAR_A)-$(VAR_A)", "A-A"),
            ("$$(VAR_B)_$(VAR_A)", "$(VAR_B)_A"),
            ("f000-$$VAR_A", "f000-$VAR_A"),
            ("$(VAR_A$(VAR_B))", "$(VAR_A$(VAR_B))"),
            ("foo$(VAR_EMPTY)bar", "foobar"),
            ("foo$(VAR_Awhoops!", "foo$(VAR_Awhoops!"),
            ("$?_boo_$!", "$?_boo_$!"),
            ("$(VAR_DNE)", "$(VAR_DNE)"),
            ("$$$$$$(BIG_MONEY)", "$$$(BIG_MONEY)"),
            ("$$$$$$$(VAR_A)", "$$$A"),
            ("$(VAR_B)_______$(A", "B_______$(A"),
            ("$(VAR_A)foobarzab$", "Afoobarzab$"),
            ("--$($($($($--", "--$($($($($--"),
            ("$(foo$$var)", "$(foo$$var)"),
            ("é$é", "é$é"),
        ];
        for (input, want) in cases {
            assert_eq!(expand(input, look), want, "{input}");
        }
    }

    #[test]
    fn container_variables_win_and_reference_services() {
        let service = service_env(&[svc("ns", "web", "10.0.0.1", &[("", 80, "TCP")])], "ns", true);
        let declared = vec![
            EnvVar {
                name: "WEB_SERVICE_HOST".into(),
                value: Some("override".into()),
            },
            EnvVar {
                name: "URL".into(),
                value: Some("http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)".into()),
            },
        ];
        let env = container_env(&declared, &service);
        assert_eq!(env[0].name, "WEB_SERVICE_HOST");
        assert_eq!(get(&env, "WEB_SERVICE_HOST"), Some("override"));
        assert_eq!(get(&env, "URL"), Some("http://override:80"));
        assert_eq!(env.iter().filter(|v| v.name == "WEB_SERVICE_HOST").count(), 1);
        assert_eq!(get(&env, "WEB_PORT"), Some("tcp://10.0.0.1:80"));
    }
}
