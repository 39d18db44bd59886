//! Pod → discovery/v1 `Endpoint`, as the EndpointSlice controller builds it, and the identity
//! and comparison rules the reconciler uses to match desired endpoints with existing ones.
//!
//! Follows Kubernetes v1.37.2: `podToEndpoint` in `staging/src/k8s.io/endpointslice/utils.go`,
//! `EndpointsEqualBeyondHash` in `staging/src/k8s.io/endpointslice/util/controller_utils.go`, and
//! `util/endpointset.go`.

use std::net::Ipv6Addr;

use smallvec::SmallVec;
use svcnet_model::{
    CompactString, Endpoint, EndpointConditions, ObjectReference, Pod, PodIp, Service, pod_phase,
};

use crate::hash::Hash128;
use crate::nodes::{NodeLookup, NodeZones};

/// The two address families the controller writes slices for: the model's one
/// [`IpFamily`](svcnet_model::IpFamily), under the name this crate used first.
pub use svcnet_model::IpFamily as Family;

/// True when `ip` is an IPv6 address in Go's sense: it parses as IPv6 and is not an
/// IPv4-mapped address. Anything else (IPv4 text, garbage) counts as IPv4.
pub(crate) fn is_ipv6_text(ip: &str) -> bool {
    // Every IPv6 text has a colon within its first five bytes (a group is at most four hex
    // digits); skip the parser for the common IPv4 case.
    if !ip.as_bytes().iter().take(5).any(|&b| b == b':') {
        return false;
    }
    match ip.parse::<Ipv6Addr>() {
        Ok(a) => a.to_ipv4_mapped().is_none(),
        Err(_) => false,
    }
}

/// The address types the controller maintains for a Service (`getAddressTypesForService`):
/// `spec.ipFamilies` when set, else the family of a real ClusterIP, else both.
pub fn address_types(service: &Service) -> SmallVec<[Family; 2]> {
    let spec = service.spec();
    let mut out: SmallVec<[Family; 2]> = SmallVec::new();
    for f in spec.ip_families.as_deref().unwrap_or(&[]) {
        if let Some(fam) = Family::parse(f)
            && !out.contains(&fam)
        {
            out.push(fam);
        }
    }
    if !out.is_empty() {
        out.sort();
        return out;
    }
    match spec.cluster_ip.as_deref() {
        Some(ip) if !ip.is_empty() && ip != svcnet_model::CLUSTER_IP_NONE => {
            out.push(if is_ipv6_text(ip) { Family::V6 } else { Family::V4 });
        }
        _ => out.extend(Family::ALL),
    }
    out
}

/// True when a Pod belongs in endpoints at all (`ShouldPodBeInEndpoints`): not `Succeeded` or
/// `Failed`, and it has an IP. Terminating Pods are included when `include_terminating`.
pub fn pod_is_endpoint_candidate(pod: &Pod, include_terminating: bool) -> bool {
    let phase = pod.phase();
    if phase == pod_phase::SUCCEEDED || phase == pod_phase::FAILED {
        return false;
    }
    let has_ip = pod.status.as_ref().is_some_and(|s| {
        s.pod_ip.as_deref().is_some_and(|ip| !ip.is_empty())
            || s.pod_ips.as_ref().is_some_and(|ips| !ips.is_empty())
    });
    if !has_ip {
        return false;
    }
    include_terminating || pod.metadata.deletion_timestamp.is_none()
}

/// The Pod's `Ready` condition is `True` (the first `Ready` condition decides).
pub(crate) fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .and_then(|cs| cs.iter().find(|c| c.type_ == "Ready"))
        .is_some_and(|c| c.status == "True")
}

/// True when the endpoint of `pod` carries the Pod's hostname (`ShouldSetHostname`).
pub(crate) fn should_set_hostname(pod: &Pod, service: &Service) -> bool {
    hostname_for(pod, service.metadata.name(), service.metadata.namespace())
}

/// [`should_set_hostname`] for a Service known by name and namespace.
pub(crate) fn hostname_for(pod: &Pod, name: &str, namespace: &str) -> bool {
    let spec = pod.spec();
    !spec.hostname().is_empty() && spec.subdomain() == name && namespace == pod.metadata.namespace()
}

/// The Pod's endpoint for one address family (`podToEndpoint`), or `None` when the Pod has no
/// IP of that family. The zone comes from `node_zone` (the zone label of the Pod's Node).
pub fn pod_to_endpoint(
    pod: &Pod,
    service: &Service,
    node_zone: Option<&str>,
    family: Family,
) -> Option<Endpoint> {
    let publish_not_ready = service.spec().publish_not_ready_addresses.unwrap_or(false);
    let hostname = should_set_hostname(pod, service);
    build_endpoint(pod, publish_not_ready, hostname, node_zone, family)
}

pub(crate) fn build_endpoint(
    pod: &Pod,
    publish_not_ready: bool,
    set_hostname: bool,
    node_zone: Option<&str>,
    family: Family,
) -> Option<Endpoint> {
    let addresses = endpoint_addresses(pod, family)?;
    Some(endpoint_with(
        pod,
        addresses,
        publish_not_ready,
        set_hostname,
        node_zone,
    ))
}

/// True when `ip` needs no parsing to be written as Go writes it back: it has no colon (so it
/// is not IPv6 text) and no octet starting with a zero followed by more (`010.0.0.1`), the one
/// way IPv4 text Go's `ParseIPSloppy` accepts differs from its canonical form. Text that is not
/// an IP at all may pass too; it is kept as written either way. Checks up to 16 bytes at once
/// (a byte-wise test on one `u128`), so the usual IPv4 address costs a few instructions.
#[inline]
fn ipv4_text_kept_as_is(ip: &[u8]) -> bool {
    const ONES: u128 = u128::MAX / 255; // 0x0101...01
    const LOW7: u128 = ONES * 0x7f;
    if ip.len() > 16 {
        return false;
    }
    let mut buf = [0u8; 16];
    if let Some(dst) = buf.get_mut(..ip.len()) {
        dst.copy_from_slice(ip);
    }
    let v = u128::from_le_bytes(buf);
    // The high bit of each byte that is zero in `x`.
    let zero = |x: u128| !(((x & LOW7) + LOW7) | x | LOW7);
    let eq = |c: u8| zero(v ^ (ONES * u128::from(c)));
    let dots = eq(b'.');
    let nonzero = !zero(v) & !LOW7;
    // A `0` at the start or after a dot, followed by a byte that is neither a dot nor the end.
    let lead_zero = eq(b'0') & ((dots << 8) | 0x80) & (nonzero >> 8) & !(dots >> 8);
    eq(b':') == 0 && lead_zero == 0
}

/// A Pod IP's family and the text the controller writes for it (`getEndpointAddresses` in
/// v1.37.2): the IP is parsed as Go's `ParseIPSloppy` does and written back in Go's canonical
/// form, so `FD00:10:244::A` becomes `fd00:10:244::a`, `010.0.0.1` becomes `10.0.0.1` and the
/// IPv4-mapped `::ffff:1.1.1.1` is the IPv4 address `1.1.1.1`. Text that does not parse
/// (which the API server never stores in a Pod's status) stays as written, in IPv4 slices.
///
/// IPv6 text has a colon; other text is IPv4 or does not parse, and of IPv4 text only leading
/// zeros change, so the usual IPv4 address is neither parsed nor copied
/// ([`ipv4_text_kept_as_is`]).
#[inline]
pub(crate) fn canonical_pod_ip(ip: &str) -> (Family, std::borrow::Cow<'_, str>) {
    use std::borrow::Cow;
    use std::net::IpAddr;
    if ipv4_text_kept_as_is(ip.as_bytes()) {
        return (Family::V4, Cow::Borrowed(ip));
    }
    match svcnet_model::validation::names::parse_ip_sloppy(ip) {
        Some(IpAddr::V4(a)) => (Family::V4, Cow::Owned(a.to_string())),
        Some(IpAddr::V6(a)) => {
            let text = a.to_string();
            if text == ip {
                (Family::V6, Cow::Borrowed(ip))
            } else {
                (Family::V6, Cow::Owned(text))
            }
        }
        None => (Family::V4, Cow::Borrowed(ip)),
    }
}

/// The Pod's addresses of `family` in canonical text ([`canonical_pod_ip`]), sorted, or `None`
/// when it has none of that family.
pub(crate) fn endpoint_addresses(pod: &Pod, family: Family) -> Option<SmallVec<[CompactString; 1]>> {
    let status = pod.status.as_ref()?;
    // The API server's v1 conversion fills `podIPs` from a lone `podIP`; read such a Pod the same.
    let from_pod_ip;
    let ips: &[PodIp] = match status.pod_ips.as_deref() {
        Some(ips) if !ips.is_empty() => ips,
        _ => {
            from_pod_ip = [PodIp {
                ip: status.pod_ip.clone().filter(|ip| !ip.is_empty())?,
            }];
            &from_pod_ip
        }
    };
    let mine = |ip: &PodIp| -> Option<CompactString> {
        let (f, text) = canonical_pod_ip(&ip.ip);
        (f == family).then(|| match text {
            std::borrow::Cow::Borrowed(t) => CompactString::from(t),
            std::borrow::Cow::Owned(t) => CompactString::from(t),
        })
    };
    let addresses: SmallVec<[CompactString; 1]> = match ips {
        // The usual case: one IP per family.
        [one] => smallvec::smallvec![mine(one)?],
        [a, b] => match (mine(a), mine(b)) {
            (Some(a), None) | (None, Some(a)) => smallvec::smallvec![a],
            (None, None) => return None,
            (Some(a), Some(b)) => {
                let mut v: SmallVec<[CompactString; 1]> = smallvec::smallvec![a, b];
                v.sort();
                v
            }
        },
        _ => {
            let mut v: SmallVec<[CompactString; 1]> = ips.iter().filter_map(mine).collect();
            if v.is_empty() {
                return None;
            }
            v.sort();
            v
        }
    };
    Some(addresses)
}

/// The Pod's endpoint with the given `addresses`. Inlined, so that a caller that reserves the
/// endpoint's place first builds it with one move fewer.
#[inline(always)]
pub(crate) fn endpoint_with(
    pod: &Pod,
    addresses: SmallVec<[CompactString; 1]>,
    publish_not_ready: bool,
    set_hostname: bool,
    node_zone: Option<&str>,
) -> Endpoint {
    let serving = pod_ready(pod);
    let terminating = pod.metadata.deletion_timestamp.is_some();
    let ready = publish_not_ready || (serving && !terminating);
    let spec = pod.spec();
    let node_name = spec.node_name();
    Endpoint {
        addresses,
        conditions: EndpointConditions {
            ready: Some(ready),
            serving: Some(serving),
            terminating: Some(terminating),
        },
        hostname: set_hostname.then(|| spec.hostname().into()),
        target_ref: Some(Box::new(ObjectReference {
            kind: Some(CompactString::const_new("Pod")),
            namespace: pod.metadata.namespace.as_deref().map(Into::into),
            name: pod.metadata.name.as_deref().map(Into::into),
            uid: pod.metadata.uid.as_deref().map(Into::into),
            api_version: None,
            resource_version: None,
            field_path: None,
        })),
        deprecated_topology: None,
        node_name: (!node_name.is_empty()).then(|| node_name.into()),
        zone: node_zone.filter(|z| !z.is_empty()).map(Into::into),
        hints: None,
    }
}

/// How a Pod update matters to endpoints (`podEndpointsChanged`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct PodChange {
    /// The Pod's endpoints may differ: deletion timestamp, readiness or IPs changed.
    pub endpoints: bool,
    /// The Services selecting the Pod may differ: labels, hostname or subdomain changed.
    pub membership: bool,
}

impl PodChange {
    /// True when the update needs a sync of some Service.
    pub fn any(self) -> bool {
        self.endpoints || self.membership
    }
}

/// Which parts of an update from `old` to `new` matter to endpoints, as the controllers decide
/// whether to sync. Node name, name, namespace and UID do not change once a Pod has an IP.
pub fn pod_change(old: &Pod, new: &Pod) -> PodChange {
    let (o, n) = (old.spec(), new.spec());
    let membership = old.metadata.labels != new.metadata.labels
        || o.hostname() != n.hostname()
        || o.subdomain() != n.subdomain();
    let ips = |p: &Pod| -> Vec<String> {
        p.status
            .as_ref()
            .and_then(|s| s.pod_ips.as_ref())
            .map(|v| v.iter().map(|i| i.ip.clone()).collect())
            .unwrap_or_default()
    };
    let endpoints = old.metadata.deletion_timestamp != new.metadata.deletion_timestamp
        || pod_ready(old) != pod_ready(new)
        || ips(old) != ips(new);
    PodChange {
        endpoints,
        membership,
    }
}

/// What a node lookup for a Pod gave.
pub(crate) enum NodeCheck<'a> {
    /// The node exists; its zone, if labelled.
    Found(Option<&'a str>),
    /// The node is missing.
    Missing,
}

#[inline]
pub(crate) fn check_node<'a>(nodes: &'a NodeZones, pod: &Pod) -> NodeCheck<'a> {
    match nodes.lookup(pod.spec().node_name()) {
        NodeLookup::Found(z) => NodeCheck::Found(z),
        NodeLookup::Missing => NodeCheck::Missing,
    }
}

/// The identity of an endpoint: a 128-bit hash of its sorted addresses, its hostname and
/// its target's namespace and name, as Kubernetes' `EndpointSet` keys endpoints. Two endpoints
/// with the same identity are "the same endpoint"; other fields may differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct EndpointId(pub u128);

impl EndpointId {
    /// The identity of `ep`.
    pub fn of(ep: &Endpoint) -> EndpointId {
        let mut h = Hash128::new();
        let tr = ep.target_ref.as_ref();
        let ns = tr.and_then(|t| t.namespace.as_deref()).unwrap_or("");
        let name = tr.and_then(|t| t.name.as_deref()).unwrap_or("");
        let hostname = ep.hostname.as_deref().unwrap_or("");
        h.field(&(ep.addresses.len() as u64).to_le_bytes());
        if ep.addresses.len() <= 1 || ep.addresses.windows(2).all(|w| w[0] <= w[1]) {
            for a in &ep.addresses {
                h.field(a.as_bytes());
            }
        } else {
            let mut sorted: SmallVec<[&str; 4]> = ep.addresses.iter().map(CompactString::as_str).collect();
            sorted.sort_unstable();
            for a in sorted {
                h.field(a.as_bytes());
            }
        }
        h.field(hostname.as_bytes());
        h.field(ns.as_bytes());
        h.field(name.as_bytes());
        EndpointId(h.finish())
    }

    /// True when `a` and `b` agree on every field the identity hashes (addresses in any
    /// order, hostname, target namespace and name). Two endpoints whose identities are equal
    /// are confirmed with this before they are taken for the same endpoint, so a hash
    /// collision rewrites a slice instead of keeping the wrong endpoint.
    pub fn same_identity(a: &Endpoint, b: &Endpoint) -> bool {
        fn target(e: &Endpoint) -> (&str, &str) {
            let tr = e.target_ref.as_ref();
            (
                tr.and_then(|t| t.namespace.as_deref()).unwrap_or(""),
                tr.and_then(|t| t.name.as_deref()).unwrap_or(""),
            )
        }
        fn sorted(e: &Endpoint) -> SmallVec<[&str; 4]> {
            let mut v: SmallVec<[&str; 4]> = e.addresses.iter().map(CompactString::as_str).collect();
            v.sort_unstable();
            v
        }
        let addresses_equal =
            a.addresses == b.addresses || (a.addresses.len() == b.addresses.len() && sorted(a) == sorted(b));
        addresses_equal
            && a.hostname.as_deref().unwrap_or("") == b.hostname.as_deref().unwrap_or("")
            && target(a) == target(b)
    }
}

/// A 128-bit key for a Pod's namespace and name.
pub(crate) fn pod_key(namespace: &str, name: &str) -> u128 {
    let mut h = Hash128::new();
    h.field(namespace.as_bytes());
    h.field(name.as_bytes());
    h.finish()
}

fn opt_str_eq(a: &Option<CompactString>, b: &Option<CompactString>) -> bool {
    a.as_deref().unwrap_or("") == b.as_deref().unwrap_or("")
}

/// Object references equal field by field, ignoring `resourceVersion` (an absent string equals
/// an empty one, as in Go).
fn target_ref_eq(a: &Option<Box<ObjectReference>>, b: &Option<Box<ObjectReference>>) -> bool {
    match (a, b) {
        (None, None) => true,
        (Some(a), Some(b)) => {
            opt_str_eq(&a.kind, &b.kind)
                && opt_str_eq(&a.namespace, &b.namespace)
                && opt_str_eq(&a.name, &b.name)
                && opt_str_eq(&a.uid, &b.uid)
                && opt_str_eq(&a.api_version, &b.api_version)
                && opt_str_eq(&a.field_path, &b.field_path)
        }
        _ => false,
    }
}

/// `EndpointsEqualBeyondHash`: the fields not covered by [`EndpointId`] are equal — node name,
/// zone, the three conditions (unset differs from false) and the target reference (ignoring its
/// resource version). Hints are not compared.
pub(crate) fn endpoints_equal_beyond_id(a: &Endpoint, b: &Endpoint) -> bool {
    a.node_name == b.node_name
        && a.zone == b.zone
        && a.conditions.ready == b.conditions.ready
        && a.conditions.serving == b.conditions.serving
        && a.conditions.terminating == b.conditions.terminating
        && target_ref_eq(&a.target_ref, &b.target_ref)
}

#[cfg(test)]
mod tests {
    use super::*;
    use svcnet_model::{PodCondition, PodIp, PodSpec, PodStatus, ServiceSpec};

    #[test]
    fn same_identity_confirms_a_matching_id() {
        let ep = |addrs: &[&str], host: Option<&str>| Endpoint {
            addresses: addrs.iter().map(|a| CompactString::from(*a)).collect(),
            hostname: host.map(CompactString::from),
            ..Default::default()
        };
        let a = ep(&["10.0.0.1", "10.0.0.2"], Some("h"));
        assert!(EndpointId::same_identity(
            &a,
            &ep(&["10.0.0.2", "10.0.0.1"], Some("h"))
        ));
        assert!(!EndpointId::same_identity(
            &a,
            &ep(&["10.0.0.1", "10.0.0.3"], Some("h"))
        ));
        assert!(!EndpointId::same_identity(
            &a,
            &ep(&["10.0.0.1", "10.0.0.2"], None)
        ));
        assert!(!EndpointId::same_identity(&a, &ep(&["10.0.0.1"], Some("h"))));
    }

    fn pod(ips: &[&str]) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = Some("p".into());
        p.metadata.namespace = Some("ns".into());
        p.spec = Some(PodSpec {
            node_name: Some("n1".into()),
            hostname: Some("h".into()),
            subdomain: Some("svc".into()),
            ..Default::default()
        });
        p.status = Some(PodStatus {
            pod_ip: ips.first().map(|s| s.to_string()),
            pod_ips: Some(ips.iter().map(|s| PodIp { ip: s.to_string() }).collect()),
            conditions: Some(vec![PodCondition {
                type_: "Ready".into(),
                status: "True".into(),
                ..Default::default()
            }]),
            ..Default::default()
        });
        p
    }

    fn svc() -> Service {
        let mut s = Service::default();
        s.metadata.name = Some("svc".into());
        s.metadata.namespace = Some("ns".into());
        s.spec = Some(ServiceSpec::default());
        s
    }

    #[test]
    fn families_and_canonical_addresses() {
        // v1.37.2 re-reads every Pod IP and writes it in Go's canonical form
        // (`getEndpointAddresses`; TestReconcile1Pod/ipv6).
        let p = pod(&["1.2.3.4", "1234::5678:0000:0000:9abc:def0", "::ffff:1.1.1.1"]);
        let v4 = pod_to_endpoint(&p, &svc(), Some("z"), Family::V4).unwrap();
        assert_eq!(v4.addresses[..], vec!["1.1.1.1", "1.2.3.4"]);
        let v6 = pod_to_endpoint(&p, &svc(), None, Family::V6).unwrap();
        assert_eq!(v6.addresses[..], vec!["1234::5678:0:0:9abc:def0"]);
        assert_eq!(v4.zone.as_deref(), Some("z"));
        assert_eq!(v4.hostname.as_deref(), Some("h"));
        assert_eq!(v4.conditions.ready, Some(true));
        assert!(pod_to_endpoint(&pod(&["1.2.3.4"]), &svc(), None, Family::V6).is_none());
        let upper = pod(&["FD00:10:244::A", "010.001.000.009"]);
        let v6 = pod_to_endpoint(&upper, &svc(), None, Family::V6).unwrap();
        assert_eq!(v6.addresses[..], vec!["fd00:10:244::a"]);
        let v4 = pod_to_endpoint(&upper, &svc(), None, Family::V4).unwrap();
        assert_eq!(v4.addresses[..], vec!["10.1.0.9"]);
    }

    #[test]
    fn two_ips_split_by_family_or_sorted() {
        let addrs =
            |ips: &[&str], f| pod_to_endpoint(&pod(ips), &svc(), None, f).map(|e| e.addresses.to_vec());
        assert_eq!(addrs(&["fd00::1", "10.0.0.1"], Family::V4).unwrap(), ["10.0.0.1"]);
        assert_eq!(addrs(&["fd00::1", "10.0.0.1"], Family::V6).unwrap(), ["fd00::1"]);
        assert_eq!(
            addrs(&["10.0.0.2", "10.0.0.1"], Family::V4).unwrap(),
            ["10.0.0.1", "10.0.0.2"]
        );
        assert_eq!(addrs(&["10.0.0.2", "10.0.0.1"], Family::V6), None);
        assert_eq!(addrs(&["10.0.0.1"], Family::V6), None);
        assert_eq!(addrs(&[], Family::V4), None);
    }

    #[test]
    fn terminating_not_ready_unless_published() {
        let mut p = pod(&["1.2.3.4"]);
        p.metadata.deletion_timestamp = Some("2024-01-01T00:00:00Z".into());
        let ep = pod_to_endpoint(&p, &svc(), None, Family::V4).unwrap();
        assert_eq!(ep.conditions.ready, Some(false));
        assert_eq!(ep.conditions.serving, Some(true));
        assert_eq!(ep.conditions.terminating, Some(true));
        let mut s = svc();
        s.spec_mut().publish_not_ready_addresses = Some(true);
        let ep = pod_to_endpoint(&p, &s, None, Family::V4).unwrap();
        assert_eq!(ep.conditions.ready, Some(true));
    }

    #[test]
    fn candidates() {
        let mut p = pod(&["1.2.3.4"]);
        assert!(pod_is_endpoint_candidate(&p, true));
        p.status.as_mut().unwrap().phase = Some("Succeeded".into());
        assert!(!pod_is_endpoint_candidate(&p, true));
        let mut p = pod(&[]);
        p.status.as_mut().unwrap().pod_ips = None;
        assert!(!pod_is_endpoint_candidate(&p, true));
    }

    #[test]
    fn a_lone_pod_ip_reads_as_pod_ips() {
        let mut p = pod(&[]);
        let st = p.status.as_mut().unwrap();
        st.pod_ips = None;
        st.pod_ip = Some("10.9.8.7".into());
        let e = pod_to_endpoint(&p, &svc(), None, Family::V4).expect("endpoint from podIP");
        assert_eq!(e.addresses[..], vec!["10.9.8.7".to_string()]);
        assert!(pod_to_endpoint(&p, &svc(), None, Family::V6).is_none());
    }

    #[test]
    fn identity_ignores_conditions_and_address_order() {
        let mut a = pod_to_endpoint(&pod(&["1.2.3.4"]), &svc(), None, Family::V4).unwrap();
        let mut b = a.clone();
        b.conditions.ready = Some(false);
        assert_eq!(EndpointId::of(&a), EndpointId::of(&b));
        assert!(!endpoints_equal_beyond_id(&a, &b));
        a.addresses = smallvec::smallvec!["b".into(), "a".into()];
        b.addresses = smallvec::smallvec!["a".into(), "b".into()];
        assert_eq!(EndpointId::of(&a), EndpointId::of(&b));
        b.hostname = None;
        assert_ne!(EndpointId::of(&a), EndpointId::of(&b));
    }

    #[test]
    fn pod_changes() {
        let a = pod(&["1.2.3.4"]);
        assert!(!pod_change(&a, &a).any());
        let mut b = a.clone();
        b.status.as_mut().unwrap().conditions = None;
        assert_eq!(
            pod_change(&a, &b),
            PodChange {
                endpoints: true,
                membership: false
            }
        );
        let mut c = a.clone();
        c.metadata.labels = Some([("x".to_string(), "y".to_string())].into());
        assert_eq!(
            pod_change(&a, &c),
            PodChange {
                endpoints: false,
                membership: true
            }
        );
        let d = pod(&["1.2.3.5"]);
        assert!(pod_change(&a, &d).endpoints);
    }

    #[test]
    fn canonical_pod_ip_text() {
        for (ip, fam, text) in [
            ("10.0.0.1", Family::V4, "10.0.0.1"),
            ("0.0.0.0", Family::V4, "0.0.0.0"),
            ("10.0.0.10", Family::V4, "10.0.0.10"),
            ("010.0.0.1", Family::V4, "10.0.0.1"),
            ("1.2.3.04", Family::V4, "1.2.3.4"),
            ("1.02.3.4", Family::V4, "1.2.3.4"),
            ("::ffff:1.1.1.1", Family::V4, "1.1.1.1"),
            ("FD00::A", Family::V6, "fd00::a"),
            ("2001:db8:0:0::1", Family::V6, "2001:db8::1"),
            ("fd00::1", Family::V6, "fd00::1"),
            ("256.0.0.1", Family::V4, "256.0.0.1"),
            ("garbage", Family::V4, "garbage"),
            ("01x.0.0.1", Family::V4, "01x.0.0.1"),
        ] {
            let (f, t) = canonical_pod_ip(ip);
            assert_eq!((f, t.as_ref()), (fam, text), "{ip}");
        }
        assert!(matches!(
            canonical_pod_ip("10.1.2.3").1,
            std::borrow::Cow::Borrowed(_)
        ));
    }

    #[test]
    fn ipv4_text_kept_as_is_finds_colons_and_leading_zeros() {
        for (ip, kept) in [
            ("10.0.0.1", true),
            ("0.0.0.0", true),
            ("100.200.10.0", true),
            ("255.255.255.255", true),
            ("10.0.0.10", true),
            ("010.0.0.1", false),
            ("10.00.0.1", false),
            ("10.0.0.01", false),
            ("::1", false),
            ("fd00::1", false),
            ("1.2.3.4:", false),
            ("0123456789012345", false),
            ("01234567890123456", false),
        ] {
            assert_eq!(ipv4_text_kept_as_is(ip.as_bytes()), kept, "{ip}");
        }
    }

    #[test]
    fn ipv6_text_is_told_apart() {
        for (ip, v6) in [
            ("::1", true),
            ("fd00::1", true),
            ("abcd:ef01::2", true),
            ("1234:5678:9abc:def0:1234:5678:9abc:def0", true),
            ("::ffff:1.2.3.4", false),
            ("10.0.0.1", false),
            ("12345::1", false),
            ("garbage", false),
            ("", false),
        ] {
            assert_eq!(is_ipv6_text(ip), v6, "{ip}");
        }
    }

    #[test]
    fn address_types_rules() {
        let mut s = svc();
        assert_eq!(address_types(&s).as_slice(), &[Family::V4, Family::V6]);
        s.spec_mut().cluster_ip = Some("fd00::1".into());
        assert_eq!(address_types(&s).as_slice(), &[Family::V6]);
        s.spec_mut().ip_families = Some(vec!["IPv4".into()]);
        assert_eq!(address_types(&s).as_slice(), &[Family::V4]);
    }
}
