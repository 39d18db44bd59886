//! The topology area's `endpoints` conformance cases, run in-process through [`NodeView`]
//! (the endpoints the proxy on one node uses), judged by the shared pass criteria
//! (`svcnet_test_support::check::endpoints`) the CLI's conformance tests apply to
//! `svcnet endpoints`. The area's `hints` cases run in the slicer's tests (hints are the
//! EndpointSlice controller's, which lives there).

use serde_json::{Value, json};
use svcnet_test_support::case::{Case, TopologyExpect, run_area};
use svcnet_test_support::{check, objects};
use svcnet_topology::{NodeTopology, NodeView, ProxyEndpoint, SelectOptions};

fn strings(v: &[&ProxyEndpoint<'_>]) -> Vec<String> {
    v.iter().map(|e| e.to_string()).collect()
}

/// `svcnet endpoints --node NODE`: the selection of every service port.
fn endpoints(case: &Case<TopologyExpect>) -> Result<Value, String> {
    let node_name = case.arg("node").ok_or("no --node")?;
    let set = objects::object_set(&case.input)?;
    let node = set
        .nodes
        .iter()
        .find(|n| n.metadata.name() == node_name)
        .map_or_else(
            || NodeTopology::new(node_name.to_owned(), ""),
            NodeTopology::from_node,
        );
    let view = NodeView::build(
        &set.services,
        &set.endpoint_slices,
        node,
        SelectOptions::default(),
    );
    let services: Vec<Value> = view
        .selections()
        .map(|(_, sel)| {
            json!({
                "cluster": sel.cluster.as_deref().map(strings),
                "local": sel.local.as_deref().map(strings),
                "allReachable": strings(sel.all_reachable()),
                "hasAny": sel.has_any,
            })
        })
        .collect();
    Ok(json!({ "services": services }))
}

#[test]
fn topology_endpoints_cases() {
    let n = run_area("topology", |case: &Case<TopologyExpect>| {
        (case.subcommand == "endpoints")
            .then(|| endpoints(case).and_then(|res| check::endpoints(&case.expect, &res)))
    });
    assert_eq!(n, 17);
}
