//! Builders shared by the unit tests of hinting.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use svcnet_model::{Endpoint, EndpointSlice, Service};

use crate::mechanism::ANNOTATION_TOPOLOGY_MODE;
use crate::slice_set::SliceSet;

/// A ready (or not) endpoint in a zone (`""` for none) on a node.
pub(crate) fn ep(addr: &str, zone: &str, ready: Option<bool>) -> Endpoint {
    Endpoint {
        node_name: Some(format!("node-{zone}").into()),
        ..svcnet_test_support::build::endpoint(addr, zone, ready)
    }
}

/// IPv4 slice `ns/name` holding `endpoints`.
pub(crate) fn slice(name: &str, endpoints: Vec<Endpoint>) -> EndpointSlice {
    svcnet_test_support::build::endpoint_slice("ns", name, "IPv4", endpoints)
}

pub(crate) fn service(annotation: Option<&str>, td: Option<&str>) -> Service {
    let mut s = Service::default();
    s.metadata.name = Some("svc".into());
    s.metadata.namespace = Some("ns".into());
    if let Some(a) = annotation {
        s.metadata.annotations = Some([(ANNOTATION_TOPOLOGY_MODE.to_owned(), a.to_owned())].into());
    }
    s.spec_mut().traffic_distribution = td.map(str::to_owned);
    s
}

/// `address -> zones hinted`, over every slice of the set.
pub(crate) fn hints_of(set: &SliceSet) -> Vec<(String, Vec<String>)> {
    let mut out: Vec<(String, Vec<String>)> = set
        .iter()
        .flat_map(|s| s.endpoints())
        .map(|e| {
            let zones = e
                .hints
                .as_ref()
                .and_then(|h| h.for_zones.as_ref())
                .map(|z| z.iter().map(|f| f.name.clone()).collect())
                .unwrap_or_default();
            (e.addresses[0].to_string(), zones)
        })
        .collect();
    out.sort();
    out
}
