//! The EndpointSlice create and update paths (`pkg/registry/discovery/endpointslice`):
//! defaulting, `PrepareForCreate` / `PrepareForUpdate` (a v1 request loses
//! `deprecatedTopology`; its `kubernetes.io/hostname` becomes `nodeName` on update when the
//! stored slice named that node), then validation.
//!
//! Follows Kubernetes v1.37.2: `pkg/registry/discovery/endpointslice/strategy.go`.

use svcnet_model::{EndpointSlice, defaults, validation};

use crate::change::{Change, ChangeKind};
use crate::request::{Answer, Step, fill_resource_version, merge_duplicates};

const LABEL_HOSTNAME: &str = "kubernetes.io/hostname";

/// Answers a create of `slice`.
pub fn create_endpoint_slice(slice: &mut EndpointSlice) -> Answer {
    defaults::default_endpoint_slice(slice);
    let mut changes = Vec::new();
    drop_topology_on_v1(slice, None, &mut changes);
    let mut errors = validation::validate_endpoint_slice_create(slice);
    merge_duplicates(&mut errors);
    Answer {
        errors,
        changes,
        step: Step::Validation,
    }
}

/// Answers an update of `stored` to `slice`.
pub fn update_endpoint_slice(slice: &mut EndpointSlice, stored: &EndpointSlice) -> Answer {
    defaults::default_endpoint_slice(slice);
    let mut old = stored.clone();
    defaults::default_endpoint_slice(&mut old);
    let mut changes = Vec::new();
    fill_resource_version(&mut slice.metadata, &old.metadata, &mut changes);
    drop_topology_on_v1(slice, Some(&old), &mut changes);
    let mut errors = validation::validate_endpoint_slice_update(slice, &old);
    merge_duplicates(&mut errors);
    Answer {
        errors,
        changes,
        step: Step::Validation,
    }
}

/// `dropTopologyOnV1`. A `discovery.k8s.io/v1beta1` request keeps the field (that version is
/// no longer served, but svcnet reads what it is given).
fn drop_topology_on_v1(slice: &mut EndpointSlice, old: Option<&EndpointSlice>, changes: &mut Vec<Change>) {
    if slice.api_version.as_deref() == Some("discovery.k8s.io/v1beta1") {
        return;
    }
    if let Some(o) = old
        && o.endpoints == slice.endpoints
    {
        return;
    }
    let prev: Vec<&str> = old
        .map(|o| {
            o.endpoints
                .iter()
                .flatten()
                .filter_map(|e| e.deprecated_topology.as_ref()?.get(LABEL_HOSTNAME))
                .map(String::as_str)
                .filter(|n| !n.is_empty())
                .collect()
        })
        .unwrap_or_default();
    for (i, ep) in slice.endpoints.iter_mut().flatten().enumerate() {
        let Some(topo) = ep.deprecated_topology.take() else {
            continue;
        };
        if let Some(host) = topo.get(LABEL_HOSTNAME)
            && ep.node_name.is_none()
            && prev.contains(&host.as_str())
            && svcnet_model::validation::names::is_dns1123_subdomain(host).is_empty()
        {
            ep.node_name = Some(host.as_str().into());
            changes.push(Change::new(
                format!("endpoints[{i}].nodeName"),
                ChangeKind::Moved,
                crate::change::json_str(host),
                "from deprecatedTopology[kubernetes.io/hostname], the stored slice's node",
            ));
        }
        if topo.is_empty() {
            continue;
        }
        let text = topo
            .iter()
            .map(|(k, v)| format!("{}:{}", crate::change::json_str(k), crate::change::json_str(v)))
            .collect::<Vec<_>>()
            .join(",");
        changes.push(Change::new(
            format!("endpoints[{i}].deprecatedTopology"),
            ChangeKind::Dropped,
            format!("{{{text}}}"),
            "a discovery.k8s.io/v1 request does not carry it",
        ));
    }
}
