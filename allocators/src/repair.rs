//! The repair loops (`ipallocator/controller/repair.go`, `portallocator/controller/repair.go`):
//! rebuild the allocation state from the Services that exist, report what was wrong, and free
//! leaked values only after they stayed leaked for three consecutive runs.
//!
//! Follows Kubernetes v1.37.2: `pkg/registry/core/service/ipallocator/controller/repair.go` and
//! `repairip.go`, `pkg/registry/core/service/portallocator/controller/repair.go`.

use std::collections::BTreeMap;
use std::fmt::Display;
use std::net::IpAddr;

use svcnet_model::{Service, protocol};
use thiserror::Error;

use crate::{AllocError, ClusterIpRanges, ErrorKind, IpFamily, NodePortAllocator};

/// Runs a leaked value survives before it is freed (`numRepairsBeforeLeakCleanup`).
pub const REPAIRS_BEFORE_LEAK_CLEANUP: u32 = 3;

/// What a repair run found about one value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RepairFinding {
    /// In use by a Service but not recorded as allocated; now recorded.
    NotAllocated,
    /// In use by more than one Service; the first Service keeps it.
    AlreadyAllocated,
    /// In use but outside the range; not recorded.
    OutOfRange,
    /// Not a valid IP.
    NotValid,
    /// An IP of a family the cluster has no range for.
    UnknownFamily,
    /// Recorded but used by no Service: kept for now, counted.
    LeakFlagged,
    /// Recorded, used by no Service for the third run in a row (bitmap), or an IPAddress
    /// whose Service is gone past the grace period (multi-CIDR): freed.
    LeakCleaned,
    /// An IPAddress points at something other than the Service using the IP, or at a Service
    /// that does not use it: recreated or deleted.
    WrongReference,
}

/// One finding of a repair run, with the Kubernetes event reason where there is one.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepairEvent {
    /// What was found.
    pub finding: RepairFinding,
    /// The Kubernetes event reason (`ClusterIPNotAllocated`, `PortAlreadyAllocated`, ...), or a
    /// descriptive name for leak bookkeeping, which Kubernetes only logs.
    pub reason: &'static str,
    /// `namespace/name` of the Service, empty for leaks.
    pub service: String,
    /// The IP or port, as text.
    pub value: String,
    /// A message in Kubernetes' words.
    pub message: String,
}

/// The result of one repair run: the rebuilt allocator (what to store) and the findings.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RepairReport<T> {
    /// The allocation state to write back.
    pub rebuilt: T,
    /// What was found, Services in list order, then leaks in ascending order.
    pub events: Vec<RepairEvent>,
}

/// Why a repair run stopped without a result (nothing is written, counters are unchanged).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum RepairError {
    /// The range cannot hold every value in use.
    #[error("the range {range} is full; you must widen it in order to create new services")]
    RangeFull {
        /// The range.
        range: String,
    },
    /// An allocator error repair cannot handle.
    #[error("unable to allocate {value} for service {service}: {source}")]
    Unexpected {
        /// The value.
        value: String,
        /// `namespace/name`.
        service: String,
        /// The error.
        source: AllocError,
    },
}

trait Target: Clone {
    type Value: Ord + Copy + Display;
    fn fresh(&self) -> Self;
    fn take(&mut self, v: Self::Value) -> Result<(), AllocError>;
    fn holds(&self, v: Self::Value) -> bool;
    fn free_value(&mut self, v: Self::Value);
    fn values(&self) -> Vec<Self::Value>;
    fn range_text(&self, v: Self::Value) -> String;
}

impl Target for ClusterIpRanges {
    type Value = IpAddr;
    fn fresh(&self) -> Self {
        let mut c = self.clone();
        for f in c.families() {
            if let Some(r) = c.get_mut(f) {
                r.clear();
            }
        }
        c
    }
    fn take(&mut self, v: IpAddr) -> Result<(), AllocError> {
        self.allocate(v)
    }
    fn holds(&self, v: IpAddr) -> bool {
        self.has(v)
    }
    fn free_value(&mut self, v: IpAddr) {
        self.release(v);
    }
    fn values(&self) -> Vec<IpAddr> {
        self.ranges().iter().flat_map(|r| r.iter()).collect()
    }
    fn range_text(&self, v: IpAddr) -> String {
        self.get(IpFamily::of(v))
            .map(|r| r.cidr().to_string())
            .unwrap_or_default()
    }
}

impl Target for NodePortAllocator {
    type Value = i32;
    fn fresh(&self) -> Self {
        NodePortAllocator::new(self.range())
    }
    fn take(&mut self, v: i32) -> Result<(), AllocError> {
        self.allocate(v)
    }
    fn holds(&self, v: i32) -> bool {
        self.has(v)
    }
    fn free_value(&mut self, v: i32) {
        self.release(v);
    }
    fn values(&self) -> Vec<i32> {
        self.iter().collect()
    }
    fn range_text(&self, _v: i32) -> String {
        self.range().to_string()
    }
}

struct Names {
    not_allocated: &'static str,
    already: &'static str,
    out_of_range: &'static str,
    what: &'static str,
}

const IP_NAMES: Names = Names {
    not_allocated: "ClusterIPNotAllocated",
    already: "ClusterIPAlreadyAllocated",
    out_of_range: "ClusterIPOutOfRange",
    what: "Cluster IP",
};

const PORT_NAMES: Names = Names {
    not_allocated: "PortNotAllocated",
    already: "PortAlreadyAllocated",
    out_of_range: "PortOutOfRange",
    what: "Port",
};

pub(crate) fn event(
    finding: RepairFinding,
    reason: &'static str,
    service: &str,
    value: impl Display,
    message: String,
) -> RepairEvent {
    RepairEvent {
        finding,
        reason,
        service: service.to_owned(),
        value: value.to_string(),
        message,
    }
}

fn run<T: Target>(
    leaks: &mut BTreeMap<T::Value, u32>,
    stored: &T,
    services: &[Service],
    uses: Vec<(usize, Result<T::Value, RepairEvent>)>,
    names: &Names,
) -> Result<RepairReport<T>, RepairError> {
    let mut left = stored.clone();
    let mut rebuilt = stored.fresh();
    let mut new_leaks = leaks.clone();
    let mut events = Vec::new();
    for (idx, used) in uses {
        let key = || services.get(idx).map(|s| s.metadata.key()).unwrap_or_default();
        let v = match used {
            Ok(v) => v,
            Err(ev) => {
                events.push(ev);
                continue;
            }
        };
        match rebuilt.take(v) {
            Ok(()) => {
                if left.holds(v) {
                    left.free_value(v);
                } else {
                    events.push(event(
                        RepairFinding::NotAllocated,
                        names.not_allocated,
                        &key(),
                        v,
                        format!("{} {v} is not allocated; repairing", names.what),
                    ));
                }
                new_leaks.remove(&v);
            }
            Err(e) => match e.kind() {
                ErrorKind::Allocated => events.push(event(
                    RepairFinding::AlreadyAllocated,
                    names.already,
                    &key(),
                    v,
                    format!(
                        "{} {v} was assigned to multiple services; please recreate service",
                        names.what
                    ),
                )),
                ErrorKind::NotInRange => events.push(event(
                    RepairFinding::OutOfRange,
                    names.out_of_range,
                    &key(),
                    v,
                    format!(
                        "{} {v} is not within the configured range {}; please recreate service",
                        names.what,
                        rebuilt.range_text(v)
                    ),
                )),
                ErrorKind::Full => {
                    return Err(RepairError::RangeFull {
                        range: rebuilt.range_text(v),
                    });
                }
                _ => {
                    return Err(RepairError::Unexpected {
                        value: v.to_string(),
                        service: key(),
                        source: e,
                    });
                }
            },
        }
    }
    for v in left.values() {
        let count = new_leaks
            .get(&v)
            .copied()
            .unwrap_or(REPAIRS_BEFORE_LEAK_CLEANUP - 1);
        if count > 0 {
            new_leaks.insert(v, count - 1);
            let _ = rebuilt.take(v);
            events.push(event(
                RepairFinding::LeakFlagged,
                "LeakFlagged",
                "",
                v,
                format!("{} {v} may have leaked: flagging for later clean up", names.what),
            ));
        } else {
            new_leaks.remove(&v);
            events.push(event(
                RepairFinding::LeakCleaned,
                "LeakCleaned",
                "",
                v,
                format!("{} {v} appears to have leaked: cleaning up", names.what),
            ));
        }
    }
    *leaks = new_leaks;
    Ok(RepairReport { rebuilt, events })
}

/// The ClusterIP repair loop of the legacy bitmap allocators. Keep one value across runs: it
/// holds the leak counters.
///
/// ```
/// use svcnet_allocators::{ClusterIpRanges, ClusterIpRepair};
///
/// let mut stored = ClusterIpRanges::parse(&["10.0.0.0/24"])?;
/// stored.allocate("10.0.0.7".parse().unwrap())?; // used by no Service
/// let mut repair = ClusterIpRepair::new();
/// for _ in 0..2 {
///     stored = repair.run_once(&stored, &[]).unwrap().rebuilt;
///     assert!(stored.has("10.0.0.7".parse().unwrap()));
/// }
/// stored = repair.run_once(&stored, &[]).unwrap().rebuilt;
/// assert!(!stored.has("10.0.0.7".parse().unwrap()));
/// # Ok::<(), svcnet_allocators::AllocError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ClusterIpRepair {
    leaks: BTreeMap<IpAddr, u32>,
}

impl ClusterIpRepair {
    /// A repair loop with no leak seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The leak counters: runs left before each suspected leak is freed.
    pub fn leaks(&self) -> &BTreeMap<IpAddr, u32> {
        &self.leaks
    }

    /// One run over `stored` (the allocation state as stored) and every Service.
    pub fn run_once(
        &mut self,
        stored: &ClusterIpRanges,
        services: &[Service],
    ) -> Result<RepairReport<ClusterIpRanges>, RepairError> {
        let families = stored.families();
        let mut uses = Vec::new();
        for (idx, svc) in services.iter().enumerate() {
            let spec = svc.spec();
            let primary = spec.cluster_ip.as_deref().unwrap_or("");
            if primary.is_empty() || primary == svcnet_model::CLUSTER_IP_NONE {
                continue;
            }
            let key = || svc.metadata.key();
            let listed = spec.cluster_ips.as_deref().filter(|v| !v.is_empty());
            let ips: Box<dyn Iterator<Item = &str>> = match listed {
                Some(v) => Box::new(v.iter().map(String::as_str)),
                None => Box::new(std::iter::once(primary)),
            };
            for text in ips {
                let item = match text.parse::<IpAddr>() {
                    Err(_) => Err(event(
                        RepairFinding::NotValid,
                        "ClusterIPNotValid",
                        &key(),
                        text,
                        format!("Cluster IP {text} is not a valid IP; please recreate service"),
                    )),
                    Ok(ip) if !families.contains(&IpFamily::of(ip)) => Err(event(
                        RepairFinding::UnknownFamily,
                        "ClusterIPNotAllocated",
                        &key(),
                        ip,
                        format!(
                            "Cluster IP [{}]: {ip} is of ip family that is no longer configured on cluster; please recreate service",
                            IpFamily::of(ip)
                        ),
                    )),
                    Ok(ip) => Ok(ip),
                };
                uses.push((idx, item));
            }
        }
        run(&mut self.leaks, stored, services, uses, &IP_NAMES)
    }
}

/// The NodePort repair loop. Keep one value across runs: it holds the leak counters.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodePortRepair {
    leaks: BTreeMap<i32, u32>,
}

/// The node ports a Service holds, as repair counts them (`collectServiceNodePorts`): every
/// non-zero `nodePort`; the same node port with the same protocol twice is listed twice (the
/// second is a duplicate), with another protocol once; the health-check port unless it is
/// already listed for a non-TCP protocol only.
pub(crate) fn service_node_ports(svc: &Service) -> Vec<i32> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<i32, Vec<&str>> = BTreeMap::new();
    for p in svc.spec().ports() {
        let np = p.node_port.unwrap_or(0);
        if np == 0 {
            continue;
        }
        let proto = p.protocol();
        match seen.get_mut(&np) {
            None => {
                seen.insert(np, vec![proto]);
                out.push(np);
            }
            Some(ps) if ps.contains(&proto) => out.push(np),
            Some(ps) => ps.push(proto),
        }
    }
    let hc = svc.spec().health_check_node_port.unwrap_or(0);
    if hc != 0 && seen.get(&hc).is_none_or(|ps| ps.contains(&protocol::TCP)) {
        out.push(hc);
    }
    out
}

impl NodePortRepair {
    /// A repair loop with no leak seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The leak counters: runs left before each suspected leak is freed.
    pub fn leaks(&self) -> &BTreeMap<i32, u32> {
        &self.leaks
    }

    /// One run over `stored` (the allocation state as stored) and every Service.
    pub fn run_once(
        &mut self,
        stored: &NodePortAllocator,
        services: &[Service],
    ) -> Result<RepairReport<NodePortAllocator>, RepairError> {
        let mut uses = Vec::new();
        for (idx, svc) in services.iter().enumerate() {
            for p in service_node_ports(svc) {
                uses.push((idx, Ok(p)));
            }
        }
        run(&mut self.leaks, stored, services, uses, &PORT_NAMES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use svcnet_model::{ServicePort, ServiceSpec};
    use svcnet_test_support::build::service_with_ips;

    /// Service `name/name` holding `ips`.
    fn svc(name: &str, ips: &[&str]) -> Service {
        service_with_ips(name, name, ips)
    }

    #[test]
    fn with_existing() {
        let stored = ClusterIpRanges::parse(&["192.168.1.0/24"]).unwrap();
        let services = vec![
            svc("one", &["192.168.1.1"]),
            svc("two", &["192.168.1.100"]),
            svc("three", &["192.168.0.1"]),
            svc("four", &[""]),
            svc("five", &["192.168.1.1"]),
            svc("six", &["None"]),
            svc("seven", &["fd00::1"]),
            svc("eight", &["bogus"]),
        ];
        let mut rep = ClusterIpRepair::new();
        let out = rep.run_once(&stored, &services).unwrap();
        let r = out.rebuilt.get(IpFamily::V4).unwrap();
        assert_eq!(r.free(), 252);
        let findings: Vec<_> = out.events.iter().map(|e| e.finding).collect();
        assert_eq!(
            findings,
            vec![
                RepairFinding::NotAllocated,
                RepairFinding::NotAllocated,
                RepairFinding::OutOfRange,
                RepairFinding::AlreadyAllocated,
                RepairFinding::UnknownFamily,
                RepairFinding::NotValid,
            ]
        );
    }

    #[test]
    fn leak_is_freed_on_third_run_and_reset_by_use() {
        let mut stored = ClusterIpRanges::parse(&["192.168.1.0/24"]).unwrap();
        let ip: IpAddr = "192.168.1.10".parse().unwrap();
        stored.allocate(ip).unwrap();
        let mut rep = ClusterIpRepair::new();
        stored = rep.run_once(&stored, &[]).unwrap().rebuilt;
        assert!(stored.has(ip));
        // seen in use again: counter forgotten
        stored = rep
            .run_once(&stored, &[svc("a", &["192.168.1.10"])])
            .unwrap()
            .rebuilt;
        assert!(rep.leaks().is_empty());
        for _ in 0..2 {
            stored = rep.run_once(&stored, &[]).unwrap().rebuilt;
            assert!(stored.has(ip));
        }
        stored = rep.run_once(&stored, &[]).unwrap().rebuilt;
        assert!(!stored.has(ip));
    }

    #[test]
    fn node_port_collection() {
        let port = |np, proto: &str| ServicePort {
            port: 80,
            protocol: Some(proto.into()),
            node_port: Some(np),
            ..Default::default()
        };
        let s = Service {
            spec: Some(ServiceSpec {
                ports: Some(vec![
                    port(111, "TCP"),
                    port(111, "UDP"),
                    port(111, "TCP"),
                    port(0, "TCP"),
                    port(122, "UDP"),
                ]),
                health_check_node_port: Some(122),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(service_node_ports(&s), vec![111, 111, 122]);
        let stored = NodePortAllocator::parse("100-200").unwrap();
        let out = NodePortRepair::new().run_once(&stored, &[s]).unwrap();
        assert_eq!(out.rebuilt.iter().collect::<Vec<_>>(), vec![111, 122]);
        assert_eq!(
            out.events
                .iter()
                .filter(|e| e.reason == "PortAlreadyAllocated")
                .count(),
            1
        );
    }
}
