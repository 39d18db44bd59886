//! Strategies for NetworkPolicies and their parts (`policy`: anything, `valid_policy`: only
//! well-formed parts). Shared by the property tests.

use proptest::prelude::*;
use svcnet_model::{
    IntOrString, IpBlock, LabelSelector, LabelSelectorRequirement, NetworkPolicy, NetworkPolicyEgressRule,
    NetworkPolicyIngressRule, NetworkPolicyPeer, NetworkPolicyPort, NetworkPolicySpec, StringMap,
};

/// A string that is sometimes well-formed for the field and sometimes anything at all.
pub fn text(good: &'static [&'static str]) -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(good).prop_map(str::to_owned),
        1 => any::<String>(),
        1 => "[a-zA-Z0-9./:_-]{0,20}",
    ]
}

pub fn label_map() -> impl Strategy<Value = StringMap> {
    prop::collection::btree_map(
        text(&["app", "example.com/tier", "k8s.io/name", "", "a/b/c", "-bad"]),
        text(&["web", "db", "", "some value", "-x"]),
        0..3,
    )
}

pub fn selector() -> impl Strategy<Value = LabelSelector> {
    let req = (
        text(&["app", "tier", "x.io/y"]),
        text(&["In", "NotIn", "Exists", "DoesNotExist", "in", ""]),
        prop::option::of(prop::collection::vec(text(&["web", "db", "", "-v"]), 0..3)),
    )
        .prop_map(|(key, operator, values)| LabelSelectorRequirement {
            key,
            operator,
            values,
        });
    (
        prop::option::of(label_map()),
        prop::option::of(prop::collection::vec(req, 0..3)),
    )
        .prop_map(|(match_labels, match_expressions)| LabelSelector {
            match_labels,
            match_expressions,
        })
}

pub fn cidr() -> impl Strategy<Value = String> {
    text(&[
        "10.0.0.0/8",
        "10.1.0.0/16",
        "192.168.0.0/16",
        "192.168.1.1/24",
        "fd00::/64",
        "fd00:1::/80",
        "::ffff:10.0.0.0/104",
        "010.0.0.0/8",
        "0.0.0.0/0",
        "",
        "1.2.3.4",
    ])
}

pub fn peer() -> impl Strategy<Value = NetworkPolicyPeer> {
    (
        prop::option::of(selector()),
        prop::option::of(selector()),
        prop::option::of(
            (cidr(), prop::option::of(prop::collection::vec(cidr(), 0..3)))
                .prop_map(|(cidr, except)| IpBlock { cidr, except }),
        ),
    )
        .prop_map(|(pod_selector, namespace_selector, ip_block)| NetworkPolicyPeer {
            pod_selector,
            namespace_selector,
            ip_block,
        })
}

pub fn port() -> impl Strategy<Value = NetworkPolicyPort> {
    (
        prop::option::of(text(&["TCP", "UDP", "SCTP", "tcp", ""])),
        prop::option::of(prop_oneof![
            prop_oneof![Just(80), Just(0), Just(65535), Just(65536), any::<i32>()].prop_map(IntOrString::Int),
            text(&["http", "dns", "80", "HTTP", "a--b", ""]).prop_map(IntOrString::String),
        ]),
        prop::option::of(prop_oneof![Just(80), Just(90), Just(70000), any::<i32>()]),
    )
        .prop_map(|(protocol, port, end_port)| NetworkPolicyPort {
            protocol,
            port,
            end_port,
        })
}

pub fn list<T: std::fmt::Debug>(s: impl Strategy<Value = T>) -> impl Strategy<Value = Option<Vec<T>>> {
    prop::option::of(prop::collection::vec(s, 0..3))
}

pub fn policy() -> impl Strategy<Value = NetworkPolicy> {
    let ingress =
        list((list(port()), list(peer())).prop_map(|(ports, from)| NetworkPolicyIngressRule { ports, from }));
    let egress =
        list((list(port()), list(peer())).prop_map(|(ports, to)| NetworkPolicyEgressRule { ports, to }));
    let spec = (
        prop::option::of(selector()),
        ingress,
        egress,
        list(text(&["Ingress", "Egress", "ingress", ""])),
    )
        .prop_map(
            |(pod_selector, ingress, egress, policy_types)| NetworkPolicySpec {
                pod_selector,
                ingress,
                egress,
                policy_types,
            },
        );
    (
        prop::option::of(text(&["np", "allow-web", "Bad_Name", ""])),
        prop::option::of(text(&["default", "shop", "Bad_NS", ""])),
        prop::option::of(Just("1".to_owned())),
        prop::option::of(label_map()),
        prop::option::of(spec),
    )
        .prop_map(|(name, namespace, rv, labels, spec)| {
            let mut np = NetworkPolicy::default();
            np.metadata.name = name;
            np.metadata.namespace = namespace;
            np.metadata.resource_version = rv;
            np.metadata.labels = labels;
            np.spec = spec;
            np
        })
}

/// Policies built only from well-formed parts: every one should pass validation.
pub fn valid_policy() -> impl Strategy<Value = NetworkPolicy> {
    fn ok(values: &'static [&'static str]) -> impl Strategy<Value = String> {
        prop::sample::select(values).prop_map(str::to_owned)
    }
    let labels = prop::collection::btree_map(
        ok(&["app", "example.com/tier", "k8s.io/name", "A_b.c"]),
        ok(&["web", "db", "", "v1.2_x"]),
        0..3,
    );
    let req = prop_oneof![
        (
            ok(&["app", "x.io/y"]),
            ok(&["In", "NotIn"]),
            prop::collection::vec(ok(&["web", "", "a.b"]), 1..3)
        )
            .prop_map(|(key, operator, values)| LabelSelectorRequirement {
                key,
                operator,
                values: Some(values)
            }),
        (
            ok(&["app", "x.io/y"]),
            ok(&["Exists", "DoesNotExist"]),
            prop::option::of(Just(Vec::new()))
        )
            .prop_map(|(key, operator, values)| LabelSelectorRequirement {
                key,
                operator,
                values
            }),
    ];
    let selector = (
        prop::option::of(labels),
        prop::option::of(prop::collection::vec(req, 0..3)),
    )
        .prop_map(|(match_labels, match_expressions)| LabelSelector {
            match_labels,
            match_expressions,
        })
        .boxed();
    let block = prop_oneof![
        (
            Just("10.0.0.0/8"),
            prop::collection::vec(ok(&["10.1.0.0/16", "10.0.0.0/9", "10.2.3.4/32"]), 0..3)
        ),
        (
            Just("fd00::/64"),
            prop::collection::vec(ok(&["fd00::/65", "fd00::1/128", "FD00:0:0:0:1::/80"]), 0..3)
        ),
        (
            Just("0.0.0.0/0"),
            prop::collection::vec(ok(&["169.254.0.0/16"]), 0..2)
        ),
    ]
    .prop_map(|(cidr, except)| IpBlock {
        cidr: cidr.to_owned(),
        except: Some(except),
    });
    let peer = prop_oneof![
        selector.clone().prop_map(|s| NetworkPolicyPeer {
            pod_selector: Some(s),
            ..Default::default()
        }),
        selector.clone().prop_map(|s| NetworkPolicyPeer {
            namespace_selector: Some(s),
            ..Default::default()
        }),
        (selector.clone(), selector.clone()).prop_map(|(p, n)| NetworkPolicyPeer {
            pod_selector: Some(p),
            namespace_selector: Some(n),
            ip_block: None,
        }),
        block.prop_map(|b| NetworkPolicyPeer {
            ip_block: Some(b),
            ..Default::default()
        }),
    ]
    .boxed();
    let port = prop_oneof![
        prop::option::of(ok(&["TCP", "UDP", "SCTP"])).prop_map(|protocol| NetworkPolicyPort {
            protocol,
            port: None,
            end_port: None
        }),
        (
            prop::option::of(ok(&["TCP", "UDP"])),
            1..=65535i32,
            prop::option::of(0..=1000i32)
        )
            .prop_map(|(protocol, p, extra)| NetworkPolicyPort {
                protocol,
                port: Some(IntOrString::Int(p)),
                end_port: extra.map(|e| (p + e).min(65535)),
            }),
        ok(&["http", "dns", "metrics-2"]).prop_map(|n| NetworkPolicyPort {
            protocol: None,
            port: Some(IntOrString::String(n)),
            end_port: None,
        }),
    ]
    .boxed();
    let ingress = list(
        (list(port.clone()), list(peer.clone()))
            .prop_map(|(ports, from)| NetworkPolicyIngressRule { ports, from }),
    );
    let egress = list((list(port), list(peer)).prop_map(|(ports, to)| NetworkPolicyEgressRule { ports, to }));
    let types = prop::option::of(prop::collection::vec(ok(&["Ingress", "Egress"]), 0..=2));
    (
        ok(&["np", "allow-web", "a.b-c"]),
        ok(&["default", "shop"]),
        prop::option::of(selector),
        ingress,
        egress,
        types,
    )
        .prop_map(|(name, ns, pod_selector, ingress, egress, policy_types)| {
            let mut np = NetworkPolicy::default();
            np.metadata.name = Some(name);
            np.metadata.namespace = Some(ns);
            np.metadata.resource_version = Some("1".into());
            np.spec = Some(NetworkPolicySpec {
                pod_selector,
                ingress,
                egress,
                policy_types,
            });
            np
        })
}
