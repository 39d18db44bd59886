//! Conntrack cleanup as data: from two successive proxy models of one node, the conntrack
//! entries a proxy must flush, as filters another program applies (`conntrack -D ...`).
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/conntrack/cleanup.go`.
//!
//! UDP has no connection teardown, so its conntrack entries outlive a change of endpoints:
//! - entries DNATed to an endpoint the Service port no longer has would keep sending traffic to
//!   it (this covers a Service that lost its last endpoint);
//! - entries to a Service port's frontends created while it had no endpoint carry no DNAT and
//!   would keep bypassing the new endpoints.
//!
//! ```
//! use svcnet_rules::{ProxyConfig, ProxyModel};
//! use svcnet_rules::conntrack::stale_entries;
//! let config = ProxyConfig::new("node-a", "192.168.0.2".parse().unwrap());
//! let empty = ProxyModel::build(&[], &[], None, &config);
//! assert!(stale_entries(&empty, &empty).is_empty());
//! ```

use std::collections::BTreeSet;
use std::net::{IpAddr, SocketAddr};

use serde::Serialize;

use crate::proxy::{Protocol, ProxyModel, ServicePortInfo, ServicePortName};

/// One conntrack filter: entries matching every field that is set are to be deleted.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ConntrackFilter {
    /// The protocol (`-p`).
    pub protocol: Protocol,
    /// The original destination address (`--orig-dst`); `None` for a NodePort on any address.
    pub original_destination: Option<IpAddr>,
    /// The original destination port (`--orig-port-dst`).
    pub original_port: u16,
    /// The endpoint the entry was DNATed to (`--reply-src`, `--reply-port-src`); `None`: any.
    pub endpoint: Option<SocketAddr>,
    /// The service port this is for.
    pub service: String,
    /// Why.
    pub reason: &'static str,
}

impl ConntrackFilter {
    /// The filter as a conntrack-tools command line that deletes the entries it matches:
    /// `conntrack -D [-f ipv6] -p udp [--orig-dst IP] --orig-port-dst PORT [--reply-src IP
    /// --reply-port-src PORT]` (an entry DNATed to an endpoint has the endpoint as its reply
    /// source). `ipv6`: the proxier's family (conntrack-tools reads IPv4 unless told).
    ///
    /// ```
    /// use svcnet_rules::Protocol;
    /// use svcnet_rules::conntrack::ConntrackFilter;
    /// let f = ConntrackFilter {
    ///     protocol: Protocol::Udp,
    ///     original_destination: Some("10.96.0.10".parse().unwrap()),
    ///     original_port: 53,
    ///     endpoint: Some("10.244.1.5:5353".parse().unwrap()),
    ///     service: "kube-system/dns:dns".to_owned(),
    ///     reason: "the endpoint was removed from the service port",
    /// };
    /// assert_eq!(
    ///     f.command_line(false),
    ///     "conntrack -D -p udp --orig-dst 10.96.0.10 --orig-port-dst 53 --reply-src 10.244.1.5 --reply-port-src 5353"
    /// );
    /// ```
    pub fn command_line(&self, ipv6: bool) -> String {
        let mut out = String::from("conntrack -D");
        if ipv6 {
            out.push_str(" -f ipv6");
        }
        out.push_str(" -p ");
        out.push_str(self.protocol.lower());
        if let Some(d) = self.original_destination {
            out.push_str(&format!(" --orig-dst {d}"));
        }
        out.push_str(&format!(" --orig-port-dst {}", self.original_port));
        if let Some(e) = self.endpoint {
            out.push_str(&format!(" --reply-src {} --reply-port-src {}", e.ip(), e.port()));
        }
        out
    }
}

/// The frontends of a service port: ClusterIP, externalIPs and LoadBalancer IPs with the
/// service port, and the NodePort on any address.
fn frontends(sp: &ServicePortInfo) -> Vec<(Option<IpAddr>, u16)> {
    let mut out = vec![(Some(sp.cluster_ip), sp.port)];
    out.extend(sp.external_ips.iter().map(|ip| (Some(*ip), sp.port)));
    out.extend(sp.load_balancer_vips.iter().map(|ip| (Some(*ip), sp.port)));
    if sp.node_port != 0 {
        out.push((None, sp.node_port));
    }
    out
}

fn port<'m>(model: &'m ProxyModel, name: &ServicePortName) -> Option<&'m ServicePortInfo> {
    model.ports.iter().find(|p| &p.name == name)
}

/// The conntrack entries to flush after the node's proxy moved from `old` to `new`, sorted.
pub fn stale_entries(old: &ProxyModel, new: &ProxyModel) -> Vec<ConntrackFilter> {
    let mut out: BTreeSet<ConntrackFilter> = BTreeSet::new();
    for o in old.ports.iter().filter(|p| p.protocol == Protocol::Udp) {
        let n = port(new, &o.name);
        let kept: BTreeSet<SocketAddr> = n
            .map(|n| n.endpoints.iter().map(|e| e.addr()).collect())
            .unwrap_or_default();
        for e in &o.endpoints {
            if kept.contains(&e.addr()) {
                continue;
            }
            for (dst, p) in frontends(o) {
                out.insert(ConntrackFilter {
                    protocol: Protocol::Udp,
                    original_destination: dst,
                    original_port: p,
                    endpoint: Some(e.addr()),
                    service: o.name.to_string(),
                    reason: "the endpoint was removed from the service port",
                });
            }
        }
    }
    for n in new
        .ports
        .iter()
        .filter(|p| p.protocol == Protocol::Udp && p.has_endpoints)
    {
        if port(old, &n.name).is_some_and(|o| o.has_endpoints) {
            continue;
        }
        for (dst, p) in frontends(n) {
            out.insert(ConntrackFilter {
                protocol: Protocol::Udp,
                original_destination: dst,
                original_port: p,
                endpoint: None,
                service: n.name.to_string(),
                reason: "the service port had no endpoint: its entries carry no DNAT",
            });
        }
    }
    out.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ProxyConfig;
    use svcnet_model::{EndpointSlice, Service};

    fn model(eps: &[&str]) -> ProxyModel {
        let svc: Service = serde_json::from_str(
            r#"{"metadata":{"name":"dns","namespace":"kube-system"},"spec":{"type":"NodePort","clusterIP":"10.96.0.10",
                "ports":[{"name":"dns","port":53,"protocol":"UDP","nodePort":30053}]}}"#,
        )
        .unwrap();
        let slice: EndpointSlice = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "dns-1", "namespace": "kube-system",
                         "labels": {"kubernetes.io/service-name": "dns"}},
            "addressType": "IPv4",
            "endpoints": eps.iter().map(|a| serde_json::json!({"addresses": [a]})).collect::<Vec<_>>(),
            "ports": [{"name": "dns", "port": 5353, "protocol": "UDP"}]}))
        .unwrap();
        let config = ProxyConfig::new("node-a", "192.168.0.2".parse().unwrap());
        ProxyModel::build(&[svc], &[slice], None, &config)
    }

    #[test]
    fn removed_endpoints_are_flushed_on_every_frontend() {
        let f = stale_entries(&model(&["10.0.0.1", "10.0.0.2"]), &model(&["10.0.0.2"]));
        let ep: SocketAddr = "10.0.0.1:5353".parse().unwrap();
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f.iter().all(|x| x.endpoint == Some(ep)));
        assert!(
            f.iter()
                .any(|x| x.original_destination.is_none() && x.original_port == 30053)
        );
        assert!(
            f.iter()
                .any(|x| x.original_destination == Some("10.96.0.10".parse().unwrap())
                    && x.original_port == 53)
        );
    }

    #[test]
    fn a_port_that_gains_its_first_endpoint_is_flushed() {
        let f = stale_entries(&model(&[]), &model(&["10.0.0.1"]));
        assert_eq!(f.len(), 2, "{f:?}");
        assert!(f.iter().all(|x| x.endpoint.is_none()));
        assert!(stale_entries(&model(&["10.0.0.1"]), &model(&["10.0.0.1"])).is_empty());
    }
}
