//! One endpoint as the proxy on a node reads it, the service port it belongs to, the proxy
//! side's switches, and a slice endpoint the proxy leaves out.
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/endpoint.go` (`BaseEndpointInfo`) and
//! `pkg/proxy/types.go` (`ServicePortName`).

use std::fmt;
use std::net::{IpAddr, SocketAddr};

use serde::{Serialize, Serializer};
use svcnet_model::{ForNode, ForZone};

/// An IP family: which addresses a proxier handles (the model's one `IpFamily`).
pub use svcnet_model::IpFamily;

/// A service port as the proxy names it: namespace, Service, port name and protocol, borrowed
/// from the Service (or the EndpointSlice) it was read from.
/// Displayed as kube-proxy prints it: `ns/name:port`, or `ns/name` for an unnamed port.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ServicePortName<'a> {
    /// The namespace.
    pub namespace: &'a str,
    /// The Service's name.
    pub name: &'a str,
    /// The port's name (empty for a single unnamed port).
    pub port: &'a str,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: &'a str,
}

impl fmt::Display for ServicePortName<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)?;
        if !self.port.is_empty() {
            write!(f, ":{}", self.port)?;
        }
        Ok(())
    }
}

impl Serialize for ServicePortName<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

/// One endpoint as the proxy on a node sees it (kube-proxy's `BaseEndpointInfo`). Its text
/// fields borrow from the EndpointSlice it was read from, so building one allocates nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProxyEndpoint<'a> {
    /// The first address of the slice endpoint.
    pub ip: IpAddr,
    /// The slice's port number.
    pub port: u16,
    /// The node hosting it, when known.
    pub node_name: Option<&'a str>,
    /// Its zone, when known.
    pub zone: Option<&'a str>,
    /// Whether it runs on this proxy's node.
    pub is_local: bool,
    /// Ready (unknown reads as ready).
    pub ready: bool,
    /// Serving (unknown reads as true, as kube-proxy reads it).
    pub serving: bool,
    /// Terminating (unknown reads as not terminating).
    pub terminating: bool,
    /// Zones named by `hints.forZones`, as the slice lists them (duplicates are harmless:
    /// only "none" and "names this zone" matter). Serialized as a list of names.
    #[serde(serialize_with = "zone_names")]
    pub zone_hints: &'a [ForZone],
    /// Nodes named by `hints.forNodes`, as the slice lists them (read only with
    /// PreferSameTrafficDistribution; empty otherwise). Serialized as a list of names.
    #[serde(serialize_with = "node_names")]
    pub node_hints: &'a [ForNode],
}

fn zone_names<S: Serializer>(v: &&[ForZone], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|z| z.name.as_str()))
}

fn node_names<S: Serializer>(v: &&[ForNode], s: S) -> Result<S::Ok, S::Error> {
    s.collect_seq(v.iter().map(|n| n.name.as_str()))
}

/// An endpoint as [`ProxyEndpoint`] has it, without its node, zone and hints: what a proxy
/// needs of the endpoints of a service port none of whose endpoints has hints
/// ([`SliceIndex::plain_port_endpoints`](crate::SliceIndex::plain_port_endpoints)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PlainEndpoint {
    /// The address (canonical).
    pub ip: IpAddr,
    /// The port.
    pub port: u16,
    /// On the proxy's node.
    pub is_local: bool,
    /// Ready (absent reads as ready).
    pub ready: bool,
    /// Serving (absent reads as serving).
    pub serving: bool,
    /// Terminating (absent reads as not terminating).
    pub terminating: bool,
}

impl From<&ProxyEndpoint<'_>> for PlainEndpoint {
    fn from(e: &ProxyEndpoint<'_>) -> Self {
        PlainEndpoint {
            ip: e.ip,
            port: e.port,
            is_local: e.is_local,
            ready: e.ready,
            serving: e.serving,
            terminating: e.terminating,
        }
    }
}

impl ProxyEndpoint<'_> {
    /// `IP:port` (`[IPv6]:port`): the proxy's identity of the endpoint.
    pub fn addr(&self) -> SocketAddr {
        SocketAddr::new(self.ip, self.port)
    }

    /// Whether a zone hint names `zone`.
    pub fn hinted_to_zone(&self, zone: &str) -> bool {
        self.zone_hints.iter().any(|z| z.name == zone)
    }

    /// Whether a node hint names `node`.
    pub fn hinted_to_node(&self, node: &str) -> bool {
        self.node_hints.iter().any(|n| n.name == node)
    }
}

impl fmt::Display for ProxyEndpoint<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.addr())
    }
}

/// Switches of the proxy side.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SelectOptions {
    /// The PreferSameTrafficDistribution feature: read node hints and prefer same-node
    /// endpoints. On by default.
    pub node_hints: bool,
}

impl Default for SelectOptions {
    fn default() -> Self {
        SelectOptions { node_hints: true }
    }
}

/// A slice endpoint the proxy does not use, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Ignored {
    /// `namespace/name` of the slice.
    pub slice: String,
    /// The address, or the port, concerned.
    pub what: String,
    /// Why.
    pub why: &'static str,
}
