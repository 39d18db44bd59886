//! `explain`: why a Service does (not) work, answered in the order an expert checks — does the
//! Service exist, is it an ExternalName or headless, does it have a selector, which Pods it
//! selects, whether they declare its named target ports and are ready, whether EndpointSlices
//! exist and hold ready endpoints, and (for one node) whether a Local traffic policy leaves
//! that node without endpoints.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2), over the rules and models that follow
//! Kubernetes v1.37.2.
//!
//! ```
//! use svcnet_model::ObjectSet;
//! use svcnet_rules::explain::{Code, explain};
//! let e = explain(&ObjectSet::default(), "shop", "web", None);
//! assert_eq!(e.findings[0].code, Code::ServiceNotFound);
//! ```

mod node;

pub use node::Backend;

use serde::Serialize;
use svcnet_model::{EndpointSlice, IntOrString, ObjectSet, Pod, Service};

use crate::proxy::ProxyConfig;

/// What a finding says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[non_exhaustive]
pub enum Code {
    /// No Service of that name.
    ServiceNotFound,
    /// `type: ExternalName`: a DNS CNAME, no proxying and no endpoints.
    ExternalName,
    /// `clusterIP: None`: DNS answers with the endpoints themselves; no proxy rules.
    Headless,
    /// No selector: endpoints are managed by hand (EndpointSlices or Endpoints).
    NoSelector,
    /// The selector matches no Pod of the namespace.
    SelectorMatchesNoPods,
    /// A named `targetPort` is declared by none of the selected Pods.
    NamedPortNotDeclared,
    /// None of the selected Pods is ready.
    NoReadyPods,
    /// No EndpointSlice belongs to the Service.
    NoEndpointSlices,
    /// The EndpointSlices hold no ready endpoint.
    NoReadyEndpoints,
    /// A Local traffic policy and no ready endpoint on the node.
    NoLocalEndpoints,
    /// Nothing wrong found.
    Healthy,
    /// What the node's rules do with a packet to one of the Service's frontends (see
    /// [`explain_on_node`]).
    PacketTrace,
}

/// One finding, with the objects (and fields) involved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Finding {
    /// What it is.
    pub code: Code,
    /// An expert's sentence.
    pub message: String,
    /// `Kind ns/name` of every object involved.
    pub objects: Vec<String>,
}

/// The answer for one Service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Explanation {
    /// `ns/name`.
    pub service: String,
    /// Findings in the order they were checked.
    pub findings: Vec<Finding>,
}

fn pod_ready(p: &Pod) -> Result<(), String> {
    if p.metadata.deletion_timestamp.is_some() {
        return Err("is terminating (metadata.deletionTimestamp is set)".to_owned());
    }
    match p.phase() {
        "Succeeded" | "Failed" => return Err(format!("has finished (status.phase {})", p.phase())),
        "" | "Running" => {}
        other => return Err(format!("is not running (status.phase {other})")),
    }
    if p.ips().is_empty() {
        return Err("has no IP yet (status.podIP is empty)".to_owned());
    }
    let ready = p
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .find(|c| c.type_ == "Ready");
    match ready {
        Some(c) if c.status == "True" => Ok(()),
        Some(c) => Err(format!("is not ready (status.conditions Ready is {})", c.status)),
        None => Err("is not ready (status.conditions has no Ready condition)".to_owned()),
    }
}

fn declares_port(p: &Pod, name: &str) -> bool {
    p.spec
        .as_ref()
        .and_then(|s| s.containers.as_ref())
        .into_iter()
        .flatten()
        .flat_map(|c| c.ports.iter().flatten())
        .any(|cp| cp.name.as_deref() == Some(name))
}

fn slices_of<'a>(objects: &'a ObjectSet, ns: &str, name: &str) -> Vec<&'a EndpointSlice> {
    objects
        .endpoint_slices
        .iter()
        .filter(|s| {
            s.metadata.namespace() == ns
                && s.metadata
                    .labels
                    .as_ref()
                    .and_then(|l| l.get("kubernetes.io/service-name"))
                    .is_some_and(|n| n == name)
        })
        .collect()
}

/// `(address, node)` of every ready endpoint of `slices` (absent `ready` counts as ready).
fn ready_endpoints(slices: &[&EndpointSlice]) -> Vec<(String, Option<String>)> {
    slices
        .iter()
        .flat_map(|s| s.endpoints.iter().flatten())
        .filter(|e| e.conditions.ready != Some(false))
        .filter_map(|e| {
            Some((
                e.addresses.first()?.to_string(),
                e.node_name.as_ref().map(ToString::to_string),
            ))
        })
        .collect()
}

fn finding(code: Code, message: String, objects: Vec<String>) -> Finding {
    Finding {
        code,
        message,
        objects,
    }
}

/// Explains Service `ns/name` over `objects` (Services, EndpointSlices, Pods, Nodes); with
/// `node`, also whether a Local traffic policy leaves that node without endpoints.
pub fn explain(objects: &ObjectSet, ns: &str, name: &str, node: Option<&str>) -> Explanation {
    let key = format!("{ns}/{name}");
    let svc_obj = format!("Service {key}");
    let mut findings = Vec::new();
    let Some(svc) = objects
        .services
        .iter()
        .find(|s| s.metadata.namespace() == ns && s.metadata.name() == name)
    else {
        findings.push(finding(
            Code::ServiceNotFound,
            format!("there is no Service {name} in namespace {ns}"),
            vec![svc_obj],
        ));
        return Explanation {
            service: key,
            findings,
        };
    };
    explain_service(objects, svc, ns, name, node, &svc_obj, &mut findings);
    Explanation {
        service: key,
        findings,
    }
}

/// [`explain`] for the node of `config`, and then, when the Service has EndpointSlices (and is
/// neither ExternalName nor headless), what that node's rules (`backend`) do with a packet to
/// each of its frontends: from a pod on the node (a Pod of the input on that node, else the
/// first address of the cluster CIDR, else the node itself) to each ClusterIP:port, and from
/// outside to each NodePort, external IP and load-balancer IP, one [`Code::PacketTrace`]
/// finding each.
///
/// ```
/// use svcnet_model::ObjectSet;
/// use svcnet_rules::ProxyConfig;
/// use svcnet_rules::explain::{Backend, Code, explain_on_node};
/// let mut objects = ObjectSet::default();
/// objects.services.push(serde_json::from_str(r#"{"metadata":{"namespace":"shop","name":"web"},
///   "spec":{"clusterIP":"10.96.0.10","clusterIPs":["10.96.0.10"],
///   "ports":[{"name":"http","port":80,"protocol":"TCP"}]}}"#).unwrap());
/// objects.endpoint_slices.push(serde_json::from_str(r#"{"metadata":{"namespace":"shop","name":"web-1",
///   "labels":{"kubernetes.io/service-name":"web"}},"addressType":"IPv4",
///   "endpoints":[{"addresses":["10.244.0.7"],"nodeName":"node-a"}],
///   "ports":[{"name":"http","port":8080,"protocol":"TCP"}]}"#).unwrap());
/// let mut config = ProxyConfig::new("node-a", "192.168.0.2".parse().unwrap());
/// config.cluster_cidrs = vec!["10.244.0.0/16".parse().unwrap()];
/// let e = explain_on_node(&objects, "shop", "web", &config, Backend::Iptables);
/// let t = e.findings.iter().find(|f| f.code == Code::PacketTrace).unwrap();
/// assert!(t.message.contains("is DNATed to one of 10.244.0.7:8080"), "{}", t.message);
/// ```
pub fn explain_on_node(
    objects: &ObjectSet,
    ns: &str,
    name: &str,
    config: &ProxyConfig,
    backend: Backend,
) -> Explanation {
    let mut e = explain(objects, ns, name, Some(&config.node_name));
    if backend == Backend::Ipvs {
        // IPVS programs the cluster endpoints when a Local policy finds none on the node
        // (kube-proxy v1.37.2 `syncEndpoint`): nothing is dropped.
        for f in e.findings.iter_mut().filter(|f| f.code == Code::NoLocalEndpoints) {
            if let Some((head, _)) = f.message.split_once(": traffic of that policy") {
                f.message = format!(
                    "{head}: in IPVS mode kube-proxy then sends that traffic to the cluster-wide endpoints instead of dropping it (from outside, the replies carry the endpoints' addresses and are lost)"
                );
            }
        }
    }
    let Some(svc) = objects
        .services
        .iter()
        .find(|s| s.metadata.namespace() == ns && s.metadata.name() == name)
    else {
        return e;
    };
    let spec = svc.spec();
    if spec.type_.as_deref() == Some("ExternalName") || spec.cluster_ip.as_deref() == Some("None") {
        return e;
    }
    let slices = slices_of(objects, ns, name);
    if slices.is_empty() {
        return e;
    }
    let mut objs = vec![format!("Service {ns}/{name}")];
    objs.extend(
        slices
            .iter()
            .map(|s| format!("EndpointSlice {ns}/{}", s.metadata.name())),
    );
    e.findings
        .extend(node::trace_findings(objects, ns, name, config, backend, &objs));
    e
}

fn explain_service(
    objects: &ObjectSet,
    svc: &Service,
    ns: &str,
    name: &str,
    node: Option<&str>,
    svc_obj: &str,
    findings: &mut Vec<Finding>,
) {
    let spec = svc.spec.clone().unwrap_or_default();
    if spec.type_.as_deref() == Some("ExternalName") {
        findings.push(finding(
            Code::ExternalName,
            format!(
                "spec.type is ExternalName: DNS answers {name}.{ns} with a CNAME to {:?}; kube-proxy programs nothing and there are no endpoints",
                spec.external_name.as_deref().unwrap_or("")
            ),
            vec![svc_obj.to_owned()],
        ));
        return;
    }
    if spec.cluster_ip.as_deref() == Some("None") {
        findings.push(finding(
            Code::Headless,
            "spec.clusterIP is None (headless): no virtual IP and no proxy rules; DNS answers with the ready endpoints' addresses".to_owned(),
            vec![svc_obj.to_owned()],
        ));
    }
    let slices = slices_of(objects, ns, name);
    let slice_objs: Vec<String> = slices
        .iter()
        .map(|s| format!("EndpointSlice {ns}/{}", s.metadata.name()))
        .collect();
    let selector = spec.selector.clone().unwrap_or_default();
    if selector.is_empty() {
        let ready = ready_endpoints(&slices);
        findings.push(finding(
            Code::NoSelector,
            format!(
                "spec.selector is empty: the endpoints are managed by hand ({} EndpointSlice(s), {} ready endpoint(s))",
                slices.len(),
                ready.len()
            ),
            std::iter::once(svc_obj.to_owned()).chain(slice_objs.iter().cloned()).collect(),
        ));
        if slices.is_empty() {
            let mirrored = objects
                .endpoints
                .iter()
                .any(|e| e.metadata.namespace() == ns && e.metadata.name() == name);
            let (message, objs) = if mirrored {
                (
                    format!(
                        "no EndpointSlice carries the label kubernetes.io/service-name for this Service, but Endpoints {ns}/{name} exists: the EndpointSlice mirroring controller turns it into slices (svcnet mirror); until then kube-proxy sees no endpoints"
                    ),
                    vec![svc_obj.to_owned(), format!("Endpoints {ns}/{name}")],
                )
            } else {
                (
                    "no EndpointSlice carries the label kubernetes.io/service-name for this Service: create one (or an Endpoints object to be mirrored)".to_owned(),
                    vec![svc_obj.to_owned()],
                )
            };
            findings.push(finding(Code::NoEndpointSlices, message, objs));
        } else if ready.is_empty() {
            findings.push(finding(
                Code::NoReadyEndpoints,
                "the EndpointSlices hold no ready endpoint (endpoints[].conditions.ready)".to_owned(),
                slice_objs.clone(),
            ));
        }
        finish(objects, &spec, &slices, &slice_objs, node, svc_obj, findings);
        return;
    }
    let pods: Vec<&Pod> = objects
        .pods
        .iter()
        .filter(|p| {
            p.metadata.namespace() == ns
                && selector
                    .iter()
                    .all(|(k, v)| p.metadata.labels.as_ref().and_then(|l| l.get(k)) == Some(v))
        })
        .collect();
    let sel_text: Vec<String> = selector.iter().map(|(k, v)| format!("{k}={v}")).collect();
    if pods.is_empty() {
        findings.push(finding(
            Code::SelectorMatchesNoPods,
            format!(
                "spec.selector {} matches no Pod in namespace {ns}: check the Pods' metadata.labels",
                sel_text.join(",")
            ),
            vec![svc_obj.to_owned()],
        ));
        if slices.is_empty() {
            findings.push(finding(
                Code::NoEndpointSlices,
                "no EndpointSlice belongs to the Service".to_owned(),
                vec![svc_obj.to_owned()],
            ));
        }
        return;
    }
    let pod_objs: Vec<String> = pods
        .iter()
        .map(|p| format!("Pod {ns}/{}", p.metadata.name()))
        .collect();
    let mut broken = false;
    for (i, port) in spec.ports.iter().flatten().enumerate() {
        if let Some(IntOrString::String(tp)) = &port.target_port
            && !pods.iter().any(|p| declares_port(p, tp))
        {
            broken = true;
            findings.push(finding(
                Code::NamedPortNotDeclared,
                format!(
                    "spec.ports[{i}].targetPort is the name {tp:?}, which no selected Pod declares in spec.containers[].ports[].name: the port gets no endpoints"
                ),
                std::iter::once(svc_obj.to_owned()).chain(pod_objs.iter().cloned()).collect(),
            ));
        }
    }
    let publish = spec.publish_not_ready_addresses == Some(true);
    let not_ready: Vec<(String, String)> = pods
        .iter()
        .filter_map(|p| {
            pod_ready(p)
                .err()
                .map(|why| (format!("Pod {ns}/{}", p.metadata.name()), why))
        })
        .collect();
    if !publish && not_ready.len() == pods.len() {
        broken = true;
        let detail: Vec<String> = not_ready.iter().map(|(o, w)| format!("{o} {w}")).collect();
        findings.push(finding(
            Code::NoReadyPods,
            format!(
                "the selector matches {} Pod(s) and none is ready: {}",
                pods.len(),
                detail.join("; ")
            ),
            pod_objs.clone(),
        ));
    }
    if slices.is_empty() {
        findings.push(finding(
            Code::NoEndpointSlices,
            "no EndpointSlice belongs to the Service: the EndpointSlice controller has not written any (is it running?)".to_owned(),
            vec![svc_obj.to_owned()],
        ));
        return;
    }
    if !broken && ready_endpoints(&slices).is_empty() && !publish {
        findings.push(finding(
            Code::NoReadyEndpoints,
            "the Pods look ready but the EndpointSlices hold no ready endpoint: they are stale".to_owned(),
            slice_objs.clone(),
        ));
        return;
    }
    if broken {
        return;
    }
    finish(objects, &spec, &slices, &slice_objs, node, svc_obj, findings);
}

/// The proxy-side checks once endpoints exist, then `Healthy` when nothing was found.
fn finish(
    objects: &ObjectSet,
    spec: &svcnet_model::ServiceSpec,
    slices: &[&EndpointSlice],
    slice_objs: &[String],
    node: Option<&str>,
    svc_obj: &str,
    findings: &mut Vec<Finding>,
) {
    let ready = ready_endpoints(slices);
    if ready.is_empty() {
        return;
    }
    if let Some(node) = node {
        let local = ready.iter().filter(|(_, n)| n.as_deref() == Some(node)).count();
        let etp = spec.external_traffic_policy.as_deref() == Some("Local")
            && matches!(spec.type_.as_deref(), Some("NodePort" | "LoadBalancer"));
        let itp = spec.internal_traffic_policy.as_deref() == Some("Local");
        let node_known = objects.nodes.is_empty() || objects.nodes.iter().any(|n| n.metadata.name() == node);
        if (etp || itp) && local == 0 && node_known {
            let which = match (etp, itp) {
                (true, true) => "spec.externalTrafficPolicy and spec.internalTrafficPolicy are",
                (true, false) => "spec.externalTrafficPolicy is",
                _ => "spec.internalTrafficPolicy is",
            };
            findings.push(finding(
                Code::NoLocalEndpoints,
                format!("{which} Local and node {node} has no ready endpoint: traffic of that policy arriving at {node} is dropped"),
                std::iter::once(svc_obj.to_owned())
                    .chain(slice_objs.iter().cloned())
                    .chain(std::iter::once(format!("Node {node}")))
                    .collect(),
            ));
            return;
        }
    }
    if findings
        .iter()
        .any(|f| f.code != Code::Headless && f.code != Code::NoSelector)
    {
        return;
    }
    let addrs: Vec<&str> = ready.iter().map(|(a, _)| a.as_str()).collect();
    findings.push(finding(
        Code::Healthy,
        format!(
            "{} ready endpoint(s) in {} EndpointSlice(s): {}; if connections still fail, trace a packet on the client's node (svcnet trace)",
            ready.len(),
            slices.len(),
            addrs.join(", ")
        ),
        std::iter::once(svc_obj.to_owned()).chain(slice_objs.iter().cloned()).collect(),
    ));
}
