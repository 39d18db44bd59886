//! The cluster a request is answered for: its service CIDRs and NodePort range, and what is
//! already allocated in them (a dry-run allocation state over svcnet-allocators).
//!
//! Follows Kubernetes v1.37.2: `pkg/registry/core/service/ipallocator` and `portallocator`, as
//! `pkg/registry/core/service/storage/alloc.go` drives them.

use std::net::IpAddr;

use ipnet::IpNet;
use rand_core::RngCore;
use svcnet_allocators::{AllocError, IpFamily, MultiCidrAllocator, NodePortAllocator, PortRange, ServiceRef};
use svcnet_model::{CLUSTER_IP_NONE, Service};

use crate::error::ApiServerError;

/// The name of the ServiceCIDR the API server creates from its `--service-cluster-ip-range`.
const DEFAULT_SERVICE_CIDR: &str = "kubernetes";

/// A cluster's Service ranges and what is taken in them.
///
/// Built from the service CIDRs (primary family first, as `--service-cluster-ip-range`) and
/// the NodePort range (`--service-node-port-range`). Like a real cluster, the first address of
/// the primary CIDR belongs to the `default/kubernetes` Service. Each request answered with
/// [`create`](crate::create) / [`update`](crate::update) that passes keeps what it took, so a
/// list of Services is answered as if applied in order; a refused request takes nothing.
///
/// ```
/// use svcnet_apiserver::Cluster;
/// let cluster = Cluster::parse(&["10.96.0.0/16", "fd00::/108"], "30000-32767")?;
/// assert!(cluster.ip_in_use("10.96.0.1".parse().unwrap()));
/// assert_eq!(cluster.node_port_range().to_string(), "30000-32767");
/// # Ok::<(), svcnet_apiserver::ApiServerError>(())
/// ```
#[derive(Debug, Clone)]
pub struct Cluster {
    cidrs: Vec<IpNet>,
    families: Vec<IpFamily>,
    ips: Option<MultiCidrAllocator>,
    ports: NodePortAllocator,
}

impl Default for Cluster {
    /// No service CIDRs known (cluster IPs are not checked against ranges or use) and the
    /// default NodePort range, 30000-32767.
    fn default() -> Self {
        Cluster {
            cidrs: Vec::new(),
            families: Vec::new(),
            ips: None,
            ports: NodePortAllocator::new(PortRange::DEFAULT_NODE_PORTS),
        }
    }
}

impl Cluster {
    /// A cluster with `service_cidrs` (none: cluster IPs unchecked; at most one per family,
    /// primary first) and `node_ports`.
    pub fn new(service_cidrs: &[IpNet], node_ports: PortRange) -> Result<Self, ApiServerError> {
        let bad = |value: &IpNet, reason: &str| ApiServerError::ServiceCidr {
            value: value.to_string(),
            reason: reason.to_owned(),
        };
        if service_cidrs.len() > 2 {
            return Err(bad(
                &service_cidrs[2],
                "at most two service CIDRs, one per IP family",
            ));
        }
        let families: Vec<IpFamily> = service_cidrs.iter().map(IpFamily::of_net).collect();
        if families.len() == 2 && families[0] == families[1] {
            return Err(bad(
                &service_cidrs[1],
                "the second service CIDR must be of the other IP family",
            ));
        }
        let mut ips = None;
        if !service_cidrs.is_empty() {
            let mut m = MultiCidrAllocator::new(&families);
            let texts: Vec<String> = service_cidrs.iter().map(ToString::to_string).collect();
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            m.add_service_cidr(DEFAULT_SERVICE_CIDR, &refs, true)
                .map_err(|e| bad(&service_cidrs[0], &e.to_string()))?;
            // The API server's own Service holds the first address of the primary range.
            if let Some(first) = first_address(&service_cidrs[0]) {
                let _ = m.allocate(
                    IpFamily::of(first),
                    first,
                    Some(&ServiceRef::new("default", "kubernetes")),
                );
            }
            ips = Some(m);
        }
        Ok(Cluster {
            cidrs: service_cidrs.iter().map(IpNet::trunc).collect(),
            families,
            ips,
            ports: NodePortAllocator::new(node_ports),
        })
    }

    /// [`Cluster::new`] from text: CIDRs such as `10.96.0.0/12` and a range such as
    /// `30000-32767`.
    pub fn parse(service_cidrs: &[&str], node_ports: &str) -> Result<Self, ApiServerError> {
        let mut nets = Vec::with_capacity(service_cidrs.len());
        for c in service_cidrs {
            let net: IpNet =
                c.trim()
                    .parse()
                    .map_err(|e: ipnet::AddrParseError| ApiServerError::ServiceCidr {
                        value: (*c).to_owned(),
                        reason: e.to_string(),
                    })?;
            nets.push(net);
        }
        let range: PortRange = node_ports
            .parse()
            .map_err(|e: AllocError| ApiServerError::NodePortRange {
                value: node_ports.to_owned(),
                reason: e.to_string(),
            })?;
        if range.size == 0 {
            return Err(ApiServerError::NodePortRange {
                value: node_ports.to_owned(),
                reason: "the range is empty".into(),
            });
        }
        Self::new(&nets, range)
    }

    /// The configured IP families, primary first; `None` when no service CIDR is known.
    pub fn families(&self) -> Option<&[IpFamily]> {
        (!self.families.is_empty()).then_some(self.families.as_slice())
    }

    /// The service CIDRs, primary first.
    pub fn service_cidrs(&self) -> &[IpNet] {
        &self.cidrs
    }

    /// The NodePort range.
    pub fn node_port_range(&self) -> PortRange {
        self.ports.range()
    }

    /// True when `ip` is taken.
    pub fn ip_in_use(&self, ip: IpAddr) -> bool {
        self.ips.as_ref().is_some_and(|m| m.has(IpFamily::of(ip), ip))
    }

    /// True when node port `port` is taken.
    pub fn node_port_in_use(&self, port: i32) -> bool {
        self.ports.has(port)
    }

    /// Takes what a stored Service holds (its cluster IPs, node ports and health-check node
    /// port), ignoring what is outside the ranges or taken already: the state an update is
    /// answered against.
    pub fn record_stored(&mut self, svc: &Service) {
        let spec = svc.spec();
        if let Some(m) = self.ips.as_mut() {
            let owner = ServiceRef::new(svc.metadata.namespace(), svc.metadata.name());
            for ip in spec.cluster_ips.iter().flatten() {
                if ip != CLUSTER_IP_NONE
                    && let Ok(addr) = ip.parse::<IpAddr>()
                {
                    let _ = m.allocate(IpFamily::of(addr), addr, Some(&owner));
                }
            }
        }
        for p in spec.ports() {
            if let Some(np) = p.node_port.filter(|n| *n != 0) {
                let _ = self.ports.allocate(np);
            }
        }
        if let Some(hc) = spec.health_check_node_port.filter(|n| *n != 0) {
            let _ = self.ports.allocate(hc);
        }
    }

    /// Takes `ip`; the error is the allocator's message as the API server prints it.
    pub(crate) fn take_ip(&mut self, ip: IpAddr, owner: &ServiceRef) -> Result<bool, String> {
        let Some(m) = self.ips.as_mut() else {
            return Ok(false);
        };
        // The Service's own address (a stored Service updated, or listed twice) is not in use
        // by another.
        let own = m.record(ip).and_then(|r| r.parent.as_ref()).is_some_and(|p| {
            p.namespace.as_deref().unwrap_or("") == owner.namespace
                && p.name.as_deref() == Some(owner.name.as_str())
        });
        if own {
            return Ok(false);
        }
        match m.allocate(IpFamily::of(ip), ip, Some(owner)) {
            Ok(()) => Ok(true),
            Err(e) => Err(ip_error_text(&e, ip, &self.cidrs)),
        }
    }

    /// Takes a free IP of `family`; `None` when no CIDR is known.
    pub(crate) fn take_next_ip(
        &mut self,
        family: IpFamily,
        owner: &ServiceRef,
        rng: &mut dyn RngCore,
    ) -> Option<Result<IpAddr, AllocError>> {
        let m = self.ips.as_mut()?;
        Some(m.allocate_next(family, Some(owner), rng))
    }

    pub(crate) fn has_ip_state(&self) -> bool {
        self.ips.is_some()
    }

    pub(crate) fn release_ip(&mut self, ip: IpAddr) {
        if let Some(m) = self.ips.as_mut() {
            let _ = m.release(IpFamily::of(ip), ip);
        }
    }

    /// Takes node port `port`; the error is the port allocator's message.
    pub(crate) fn take_port(&mut self, port: i32) -> Result<(), String> {
        self.ports.allocate(port).map_err(|e| match e {
            AllocError::PortNotInRange { range, .. } => {
                format!("provided port is not in the valid range. The range of valid ports is {range}")
            }
            AllocError::PortAllocated { .. } => "provided port is already allocated".to_owned(),
            other => other.to_string(),
        })
    }

    pub(crate) fn take_next_port(&mut self, rng: &mut dyn RngCore) -> Result<i32, AllocError> {
        self.ports.allocate_next(rng)
    }

    pub(crate) fn release_port(&mut self, port: i32) {
        self.ports.release(port);
    }
}

/// The first usable address of a CIDR (the one after the network address).
fn first_address(net: &IpNet) -> Option<IpAddr> {
    net.trunc().hosts().find(|ip| *ip != net.network())
}

/// An IP allocator error as `ipallocator` prints it.
fn ip_error_text(e: &AllocError, ip: IpAddr, cidrs: &[IpNet]) -> String {
    match e {
        AllocError::IpAllocated { .. } => "provided IP is already allocated".to_owned(),
        AllocError::MismatchedNetwork { .. } => {
            "the provided network does not match the current range".to_owned()
        }
        AllocError::IpNotInRange { .. } => {
            let range = cidrs
                .iter()
                .find(|c| c.contains(&ip))
                .map(ToString::to_string)
                .unwrap_or_default();
            format!("the provided IP ({ip}) is not in the valid range. The range of valid IPs is {range}")
        }
        AllocError::NotReady => "allocator not ready".to_owned(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_and_the_kubernetes_service() {
        let mut c = Cluster::parse(&["0.0.0.0/2", "2001::/64"], "1-40000").unwrap();
        assert_eq!(c.families(), Some(&[IpFamily::V4, IpFamily::V6][..]));
        assert!(c.ip_in_use("0.0.0.1".parse().unwrap()));
        let web = ServiceRef::new("default", "web");
        assert_eq!(
            c.take_ip("0.0.0.1".parse().unwrap(), &web).unwrap_err(),
            "provided IP is already allocated"
        );
        assert_eq!(
            c.take_ip("192.168.10.10".parse().unwrap(), &web).unwrap_err(),
            "the provided network does not match the current range"
        );
        assert_eq!(c.take_ip("1.2.3.4".parse().unwrap(), &web), Ok(true));
        assert_eq!(
            c.take_port(40001).unwrap_err(),
            "provided port is not in the valid range. The range of valid ports is 1-40000"
        );
        assert!(c.take_port(30080).is_ok());
        assert_eq!(
            c.take_port(30080).unwrap_err(),
            "provided port is already allocated"
        );
        assert!(Cluster::parse(&["10.0.0.0/8", "11.0.0.0/8"], "30000-32767").is_err());
        assert!(Cluster::parse(&["nope"], "30000-32767").is_err());
        assert!(Cluster::parse(&[], "x-y").is_err());
    }
}
