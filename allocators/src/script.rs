//! Operation scripts (feature `script`): a model (cluster-ip, node-port or multi-cidr) built
//! from a script's `input`, typed operations read from its `ops`, and the runner that applies
//! them one by one, each giving a result (`svcnet alloc` prints them).
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2): the op-script format of `svcnet alloc`.

use std::net::IpAddr;

use ipnet::IpNet;
use rand_core::RngCore;
use serde::Serialize;
use serde_json::{Value, json};
use svcnet_model::{ObjectMeta, Service, ServicePort, ServiceSpec};

use crate::allocator::{Allocator, FamilyAllocator};
use crate::cluster_ip::{ClusterIpRange, ClusterIpRanges};
use crate::error::{AllocError, ErrorKind};
use crate::multi_cidr::{IpAddressRecord, MultiCidrAllocator};
use crate::net::{IpFamily, cluster_ip_band_offset, node_port_band_offset, parse_cidr, parse_family};
use crate::ports::{NodePortAllocator, PortRange};
use crate::repair::{ClusterIpRepair, NodePortRepair, RepairError, RepairEvent};
use crate::snapshot::{RangeAllocation, decode_base64};

/// A script that cannot start: its `input` names no model, or a bad one.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScriptError(pub String);

/// A value an operation names: an address (IP models) or a port (node-port model).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Item {
    /// An IP address.
    Ip(IpAddr),
    /// A port number.
    Port(i32),
}

/// Where `restore` takes the bitmap from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreData {
    /// The last `snapshot` taken by the script.
    LastSnapshot,
    /// Bytes given in the op (base64 in the script).
    Bytes(Vec<u8>),
}

/// One operation of a script, typed for the model it runs on.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum Op {
    /// The upper band's offset for a range (`range`, CIDR or port range).
    OffsetOf {
        /// The range, as given.
        range: String,
    },
    /// Take a random free value (`repeat` times, and check each falls `in` a CIDR).
    AllocateNext {
        /// The family (IP models).
        family: Option<IpFamily>,
        /// How many times; `None` gives one result of a single attempt.
        repeat: Option<u64>,
        /// A CIDR each address should fall in, as given, and parsed.
        within: Option<(String, IpNet)>,
    },
    /// Take a given value.
    Allocate(Item),
    /// Take every free port of `from..=to` (node-port model).
    AllocateRange {
        /// First port.
        from: i32,
        /// Last port.
        to: i32,
    },
    /// Give a value back.
    Release(Item),
    /// Give every value back; gives how many were taken.
    ReleaseAll,
    /// Whether a value is taken.
    Has(Item),
    /// Free values.
    Free,
    /// Values taken.
    Used,
    /// Values taken, in order.
    ForEach,
    /// The upper band's offset.
    Offset,
    /// Store the bitmap (kept for `restore` with `from_snapshot`).
    Snapshot,
    /// Rebuild from a stored bitmap.
    Restore {
        /// The range the bitmap is of, as given.
        range: String,
        /// The bitmap.
        data: RestoreData,
    },
    /// Empty the allocator.
    Reset,
    /// One run of the repair loop over `services`.
    Repair {
        /// The Services.
        services: Vec<Service>,
        /// Now, in seconds since the Unix epoch (multi-cidr grace periods).
        now: i64,
    },
    /// Add a ServiceCIDR (multi-cidr model).
    AddCidr {
        /// Its name.
        name: String,
        /// Its CIDRs.
        cidrs: Vec<String>,
        /// Whether it is Ready.
        ready: bool,
    },
    /// Delete a ServiceCIDR.
    DeleteCidr {
        /// Its name.
        name: String,
    },
    /// Whether a ServiceCIDR could be deleted.
    CanDeleteCidr {
        /// Its name.
        name: String,
    },
    /// The family's CIDRs and whether each is ready.
    Cidrs,
}

/// One repair finding, in a result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct EventResult {
    /// Kubernetes' message.
    pub message: String,
    /// The event reason.
    pub reason: &'static str,
    /// `namespace/name`.
    pub service: String,
    /// The IP or port.
    pub value: String,
}

/// The result of one operation; absent fields are left out (JSON keys in name order).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
#[non_exhaustive]
pub struct OpResult {
    /// `lower`, `upper` or `mixed`: the bands of the values allocated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub band: Option<&'static str>,
    /// Values allocated by a repeated `allocate-next` or an `allocate-range`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<u64>,
    /// A snapshot's bitmap, base64.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub data: Option<String>,
    /// The error kind (`full`, `not-in-range`, ..., `mixed` over a repeated op).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Repair findings.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub events: Option<Vec<EventResult>>,
    /// Failed attempts of a repeated op.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub failures: Option<u64>,
    /// The CIDR every value fell in, or `outside`.
    #[serde(rename = "in", skip_serializing_if = "Option::is_none")]
    pub within: Option<String>,
    /// The error message.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Success without a value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ok: Option<bool>,
    /// A snapshot's range.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<String>,
    /// The value asked for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
}

impl OpResult {
    /// True when the operation was refused.
    pub fn is_error(&self) -> bool {
        self.error.is_some()
    }

    fn ok() -> Self {
        OpResult {
            ok: Some(true),
            ..Self::default()
        }
    }

    fn value(v: Value) -> Self {
        OpResult {
            value: Some(v),
            ..Self::default()
        }
    }

    /// The result of a refused operation.
    pub fn error(e: &AllocError) -> Self {
        OpResult {
            error: Some(e.kind().as_str().to_owned()),
            message: Some(e.to_string()),
            ..Self::default()
        }
    }
}

/// The model a script runs on, with its state.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
#[non_exhaustive]
pub enum Model {
    /// `cluster-ip`: one range per family, as the legacy ClusterIP allocator.
    Ip {
        /// The ranges.
        ranges: ClusterIpRanges,
        /// The repair loop's memory.
        repair: ClusterIpRepair,
        /// The last snapshot.
        snapshot: Option<RangeAllocation>,
    },
    /// `node-port`.
    Port {
        /// The allocator.
        alloc: NodePortAllocator,
        /// The repair loop's memory.
        repair: NodePortRepair,
        /// The last snapshot.
        snapshot: Option<RangeAllocation>,
    },
    /// `multi-cidr`: ServiceCIDRs and IPAddresses.
    Multi {
        /// The allocator.
        alloc: MultiCidrAllocator,
        /// The family the ops run on unless they name one.
        family: IpFamily,
    },
}

fn bad(what: &str, v: &Value, why: &str) -> AllocError {
    let text = match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    AllocError::Invalid {
        field: what.to_owned(),
        value: text,
        reason: why.to_owned(),
    }
}

fn field<'a>(op: &'a Value, name: &str) -> Result<&'a Value, AllocError> {
    op.get(name)
        .filter(|v| !v.is_null())
        .ok_or_else(|| bad(name, &Value::Null, "missing"))
}

fn str_field<'a>(op: &'a Value, name: &str) -> Result<&'a str, AllocError> {
    let v = field(op, name)?;
    v.as_str().ok_or_else(|| bad(name, v, "must be a string"))
}

fn ip_value(op: &Value) -> Result<IpAddr, AllocError> {
    let s = str_field(op, "value")?;
    s.parse()
        .map_err(|_| bad("value", &json!(s), "not an IP address"))
}

fn port_value(v: &Value, name: &str) -> Result<i32, AllocError> {
    let n = match v {
        Value::Number(n) => n.as_i64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    n.and_then(|n| i32::try_from(n).ok())
        .ok_or_else(|| bad(name, v, "not a port number"))
}

fn family_field(op: &Value) -> Result<Option<IpFamily>, AllocError> {
    match op.get("family").and_then(Value::as_str) {
        Some(f) => parse_family(f).map(Some),
        None => Ok(None),
    }
}

fn str_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|x| match x {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect()
        })
        .unwrap_or_default()
}

/// A Service for a `repair` op: a full Service object, or the short form
/// `{namespace, name, cluster_ips?, node_ports?, health_check_node_port?}`.
fn repair_service(v: &Value) -> Result<Service, AllocError> {
    if v.get("spec").is_some() || v.get("kind").is_some() {
        return serde_json::from_value(v.clone()).map_err(|e| bad("services[]", v, &e.to_string()));
    }
    let text = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    let ips = str_list(v.get("cluster_ips"));
    let mut ports = Vec::new();
    for p in v
        .get("node_ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        ports.push(ServicePort {
            port: 80 + ports.len() as i32,
            node_port: Some(port_value(p, "node_ports[]")?),
            ..ServicePort::default()
        });
    }
    let hc = match v.get("health_check_node_port") {
        Some(p) if !p.is_null() => Some(port_value(p, "health_check_node_port")?),
        _ => None,
    };
    Ok(Service {
        metadata: ObjectMeta {
            namespace: text("namespace"),
            name: text("name"),
            ..ObjectMeta::default()
        },
        spec: Some(ServiceSpec {
            cluster_ip: ips.first().cloned(),
            cluster_ips: (!ips.is_empty()).then_some(ips),
            ports: (!ports.is_empty()).then_some(ports),
            health_check_node_port: hc,
            ..ServiceSpec::default()
        }),
        ..Service::default()
    })
}

fn repair_services(op: &Value) -> Result<Vec<Service>, AllocError> {
    op.get("services")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(repair_service)
        .collect()
}

fn repair_result(events: &[RepairEvent]) -> OpResult {
    let evs = events
        .iter()
        .map(|e| EventResult {
            message: e.message.clone(),
            reason: e.reason,
            service: e.service.clone(),
            value: e.value.clone(),
        })
        .collect();
    OpResult {
        events: Some(evs),
        ..OpResult::ok()
    }
}

fn repair_error(e: &RepairError) -> OpResult {
    let kind = match e {
        RepairError::RangeFull { .. } => "full",
        _ => "invalid",
    };
    OpResult {
        error: Some(kind.to_owned()),
        message: Some(e.to_string()),
        ..OpResult::default()
    }
}

fn unknown(op: &str) -> AllocError {
    bad("op", &json!(op), "unknown or unsupported by this model")
}

/// Outcome of a run of `allocate-next`.
#[derive(Default)]
struct NextRun {
    values: Vec<Value>,
    errors: Vec<AllocError>,
    /// Failures after the range was found full, not run one by one (nothing could change).
    more_full: u64,
    bands: Vec<bool>,
    outside: bool,
}

impl NextRun {
    fn into_result(self, repeat: bool, within: Option<&str>) -> OpResult {
        let mut m = OpResult::default();
        if !repeat {
            if let Some(e) = self.errors.first() {
                return OpResult::error(e);
            }
            m.ok = Some(true);
            m.value = self.values.first().cloned();
        } else {
            m.count = Some(self.values.len() as u64);
            if let Some(first) = self.errors.first() {
                let kind = first.kind();
                let same = self.errors.iter().all(|e| e.kind() == kind);
                m.error = Some(if same { kind.as_str() } else { "mixed" }.to_owned());
                m.message = Some(first.to_string());
                m.failures = Some(self.errors.len() as u64 + self.more_full);
            }
        }
        if !self.bands.is_empty() {
            m.band = Some(if self.bands.iter().all(|&b| b) {
                "upper"
            } else if self.bands.iter().all(|&b| !b) {
                "lower"
            } else {
                "mixed"
            });
        }
        if let Some(w) = within
            && !self.values.is_empty()
        {
            m.within = Some(if self.outside { "outside" } else { w }.to_owned());
        }
        m
    }
}

impl Model {
    /// Builds the model a script's `input` describes (`kind`, `ranges`, `family`,
    /// `service_cidrs`, `ip_addresses`).
    pub fn from_script(s: &Value) -> Result<Model, ScriptError> {
        Self::build(s).map_err(ScriptError)
    }

    fn build(s: &Value) -> Result<Model, String> {
        let kind = s
            .get("kind")
            .and_then(Value::as_str)
            .ok_or("input.kind is missing (cluster-ip, node-port or multi-cidr)")?;
        let ranges = str_list(s.get("ranges"));
        match kind {
            "cluster-ip" => {
                let refs: Vec<&str> = ranges.iter().map(String::as_str).collect();
                let ranges = ClusterIpRanges::parse(&refs).map_err(|e| e.to_string())?;
                Ok(Model::Ip {
                    ranges,
                    repair: ClusterIpRepair::new(),
                    snapshot: None,
                })
            }
            "node-port" => {
                let [one] = ranges.as_slice() else {
                    return Err("a node-port script needs exactly one range".into());
                };
                Ok(Model::Port {
                    alloc: NodePortAllocator::parse(one).map_err(|e| e.to_string())?,
                    repair: NodePortRepair::new(),
                    snapshot: None,
                })
            }
            "multi-cidr" => {
                let family = match s.get("family").and_then(Value::as_str) {
                    Some(f) => parse_family(f).map_err(|e| e.to_string())?,
                    None => IpFamily::V4,
                };
                let mut alloc = MultiCidrAllocator::new(&[family]);
                for sc in s
                    .get("service_cidrs")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    let name = sc.get("name").and_then(Value::as_str).unwrap_or("");
                    let cidrs = str_list(sc.get("cidrs"));
                    let refs: Vec<&str> = cidrs.iter().map(String::as_str).collect();
                    let ready = sc.get("ready").and_then(Value::as_bool).unwrap_or(true);
                    alloc
                        .add_service_cidr(name, &refs, ready)
                        .map_err(|e| format!("service_cidrs {name}: {e}"))?;
                }
                for ip in str_list(s.get("ip_addresses")) {
                    let addr: IpAddr = ip
                        .parse()
                        .map_err(|_| format!("ip_addresses: {ip:?} is not an IP address"))?;
                    alloc.insert_record(addr, IpAddressRecord::managed(addr, None));
                }
                Ok(Model::Multi { alloc, family })
            }
            other => Err(format!(
                "input.kind {other:?} is not one of cluster-ip, node-port, multi-cidr"
            )),
        }
    }

    /// Reads one op of the script for this model. The family an op names (IP models) is
    /// returned beside it; `None` means the model's default.
    pub fn parse_op(&self, op: &Value) -> Result<(Op, Option<IpFamily>), AllocError> {
        let name = str_field(op, "op")?;
        let ip_model = !matches!(self, Model::Port { .. });
        match name {
            "offset-of" => {
                let range = str_field(op, "range")?.to_owned();
                return Ok((Op::OffsetOf { range }, None));
            }
            "allocate-next" => {
                let within = match op.get("in").and_then(Value::as_str) {
                    Some(w) => Some((w.to_owned(), parse_cidr(w)?)),
                    None => None,
                };
                let family = if ip_model { family_field(op)? } else { None };
                let repeat = op.get("repeat").and_then(Value::as_u64);
                return Ok((
                    Op::AllocateNext {
                        family,
                        repeat,
                        within,
                    },
                    family,
                ));
            }
            _ => {}
        }
        if !ip_model {
            let port = |op: &Value| port_value(field(op, "value")?, "value").map(Item::Port);
            let typed = match name {
                "allocate" => Op::Allocate(port(op)?),
                "allocate-range" => {
                    let from = port_value(field(op, "from")?, "from")?;
                    let to = port_value(field(op, "to")?, "to")?;
                    Op::AllocateRange { from, to }
                }
                "release" => Op::Release(port(op)?),
                "has" => Op::Has(port(op)?),
                other => self.common_op(other, op)?,
            };
            return Ok((typed, None));
        }
        // IP models: the family an op names comes first.
        let family = family_field(op)?;
        let ip = |op: &Value| ip_value(op).map(Item::Ip);
        let typed = match (name, self) {
            ("allocate", _) => Op::Allocate(ip(op)?),
            ("release", _) => Op::Release(ip(op)?),
            ("has", _) => Op::Has(ip(op)?),
            ("add-cidr", Model::Multi { .. }) => {
                let cidrs = str_list(op.get("cidrs"));
                let ready = op.get("ready").and_then(Value::as_bool).unwrap_or(true);
                let name = str_field(op, "name")?.to_owned();
                Op::AddCidr { name, cidrs, ready }
            }
            ("delete-cidr", Model::Multi { .. }) => Op::DeleteCidr {
                name: str_field(op, "name")?.to_owned(),
            },
            ("can-delete-cidr", Model::Multi { .. }) => Op::CanDeleteCidr {
                name: str_field(op, "name")?.to_owned(),
            },
            ("cidrs", Model::Multi { .. }) => Op::Cidrs,
            ("offset" | "snapshot" | "restore" | "reset", Model::Multi { .. }) => return Err(unknown(name)),
            (other, _) => self.common_op(other, op)?,
        };
        Ok((typed, family))
    }

    /// Ops every model reads alike.
    fn common_op(&self, name: &str, op: &Value) -> Result<Op, AllocError> {
        Ok(match name {
            "release-all" => Op::ReleaseAll,
            "free" => Op::Free,
            "used" => Op::Used,
            "for-each" => Op::ForEach,
            "offset" => Op::Offset,
            "snapshot" => Op::Snapshot,
            "restore" => {
                let range = str_field(op, "range")?.to_owned();
                let data = if op.get("from_snapshot").and_then(Value::as_bool) == Some(true) {
                    RestoreData::LastSnapshot
                } else {
                    RestoreData::Bytes(decode_base64(
                        op.get("data").and_then(Value::as_str).unwrap_or(""),
                    )?)
                };
                Op::Restore { range, data }
            }
            "reset" => Op::Reset,
            "repair" => {
                let services = repair_services(op)?;
                let now = op.get("now").and_then(Value::as_i64).unwrap_or(0);
                Op::Repair { services, now }
            }
            other => return Err(unknown(other)),
        })
    }

    /// Reads and applies one op of the script; a refused or unreadable op gives an error
    /// result.
    pub fn run_op(&mut self, op: &Value, rng: &mut dyn RngCore) -> OpResult {
        match self
            .parse_op(op)
            .and_then(|(op, family)| self.apply(&op, family, rng))
        {
            Ok(r) => r,
            Err(e) => OpResult::error(&e),
        }
    }

    /// Applies one typed op; `family` is the family it names (IP models).
    pub fn apply(
        &mut self,
        op: &Op,
        family: Option<IpFamily>,
        rng: &mut dyn RngCore,
    ) -> Result<OpResult, AllocError> {
        match op {
            Op::OffsetOf { range } => {
                let v = match self {
                    Model::Port { .. } => node_port_band_offset(u64::from(range.parse::<PortRange>()?.size)),
                    _ => cluster_ip_band_offset(&parse_cidr(range)?),
                };
                return Ok(OpResult::value(json!(v)));
            }
            Op::AllocateNext {
                family,
                repeat,
                within,
            } => return Ok(self.allocate_next(*family, *repeat, within.as_ref(), rng)),
            _ => {}
        }
        match self {
            Model::Ip {
                ranges,
                repair,
                snapshot,
            } => ip_op(op, family, ranges, repair, snapshot),
            Model::Port {
                alloc,
                repair,
                snapshot,
            } => port_op(op, alloc, repair, snapshot),
            Model::Multi { alloc, family: f } => multi_op(op, alloc, family.unwrap_or(*f)),
        }
    }

    fn allocate_next(
        &mut self,
        family: Option<IpFamily>,
        repeat: Option<u64>,
        within: Option<&(String, IpNet)>,
        rng: &mut dyn RngCore,
    ) -> OpResult {
        let n = repeat.unwrap_or(1);
        let mut run = NextRun::default();
        for i in 0..n {
            if run.errors.last().is_some_and(|e| e.kind() == ErrorKind::Full) {
                // A full allocator stays full: the remaining attempts fail the same way.
                run.more_full = n - i;
                break;
            }
            let (got, upper) = match self {
                Model::Ip { ranges, .. } => {
                    let fam = family.unwrap_or(ranges.families().first().copied().unwrap_or(IpFamily::V4));
                    match ranges.allocate_next(fam, rng) {
                        Ok(ip) => {
                            let r = ranges.get(fam);
                            let upper = r
                                .and_then(|r| r.offset_of(ip).map(|o| o >= r.band_offset()))
                                .unwrap_or(false);
                            (Ok(json!(ip.to_string())), Some((ip, upper)))
                        }
                        Err(e) => (Err(e), None),
                    }
                }
                Model::Port { alloc, .. } => match Allocator::allocate_next(alloc, rng) {
                    Ok(p) => {
                        let upper =
                            i64::from(p) - i64::from(alloc.range().base) >= alloc.band_offset() as i64;
                        run.bands.push(upper);
                        (Ok(json!(p)), None)
                    }
                    Err(e) => (Err(e), None),
                },
                Model::Multi { alloc, family: f } => {
                    let fam = family.unwrap_or(*f);
                    match alloc.allocate_next(fam, None, rng) {
                        Ok(ip) => {
                            let upper = alloc.band_of(ip).map(|(_, u)| u).unwrap_or(false);
                            (Ok(json!(ip.to_string())), Some((ip, upper)))
                        }
                        Err(e) => (Err(e), None),
                    }
                }
            };
            if let Some((ip, upper)) = upper {
                run.bands.push(upper);
                if within.is_some_and(|(_, w)| !w.contains(&ip)) {
                    run.outside = true;
                }
            }
            match got {
                Ok(v) => run.values.push(v),
                Err(e) => run.errors.push(e),
            }
        }
        run.into_result(repeat.is_some(), within.map(|(w, _)| w.as_str()))
    }
}

fn restore_bytes(data: &RestoreData, last: Option<&RangeAllocation>) -> Result<Vec<u8>, AllocError> {
    match data {
        RestoreData::LastSnapshot => last
            .map(|s| s.data.clone())
            .ok_or_else(|| bad("from_snapshot", &json!(true), "no snapshot taken yet")),
        RestoreData::Bytes(b) => Ok(b.clone()),
    }
}

fn snapshot_result(s: &RangeAllocation) -> OpResult {
    OpResult {
        range: Some(s.range.clone()),
        data: Some(s.data_base64()),
        ..OpResult::ok()
    }
}

/// The counting ops every allocator answers through [`Allocator`].
fn count_op<A: Allocator>(op: &Op, a: &mut A, show: impl Fn(A::Item) -> Value) -> Option<OpResult> {
    Some(match op {
        Op::Free => OpResult::value(json!(a.free())),
        Op::Used => OpResult::value(json!(a.used())),
        Op::ForEach => OpResult::value(Value::Array(a.items().into_iter().map(show).collect())),
        _ => return None,
    })
}

fn ip_op(
    op: &Op,
    family: Option<IpFamily>,
    ranges: &mut ClusterIpRanges,
    repair: &mut ClusterIpRepair,
    snapshot: &mut Option<RangeAllocation>,
) -> Result<OpResult, AllocError> {
    let primary = ranges.families().first().copied().unwrap_or(IpFamily::V4);
    let fam = family.unwrap_or(primary);
    let one = |ranges: &mut ClusterIpRanges| -> Result<ClusterIpRange, AllocError> {
        ranges
            .get(fam)
            .cloned()
            .ok_or_else(|| bad("family", &json!(fam.as_str()), "no range of this family"))
    };
    Ok(match op {
        Op::Allocate(Item::Ip(ip)) => {
            ranges.allocate(*ip)?;
            OpResult::ok()
        }
        Op::Release(Item::Ip(ip)) => {
            ranges.release(*ip);
            OpResult::ok()
        }
        Op::ReleaseAll => {
            let mut n = 0;
            for f in ranges.families() {
                if let Some(r) = ranges.get_mut(f) {
                    n += Allocator::release_all(r);
                }
            }
            OpResult::value(json!(n))
        }
        Op::Has(Item::Ip(ip)) => OpResult::value(json!(ranges.has(*ip))),
        Op::Free | Op::Used | Op::ForEach => {
            let mut r = one(ranges)?;
            count_op(op, &mut r, |ip| json!(ip.to_string())).unwrap_or_default()
        }
        Op::Offset => OpResult::value(json!(one(ranges)?.band_offset())),
        Op::Snapshot => {
            let s = one(ranges)?.snapshot();
            let r = snapshot_result(&s);
            *snapshot = Some(s);
            r
        }
        Op::Restore { range, data } => {
            let data = restore_bytes(data, snapshot.as_ref())?;
            let net = parse_cidr(range)?;
            let target =
                ranges
                    .get_mut(IpFamily::of_net(&net))
                    .ok_or_else(|| AllocError::MismatchedNetwork {
                        given: range.clone(),
                        current: String::new(),
                    })?;
            target.restore(range, &data)?;
            OpResult::ok()
        }
        Op::Reset => {
            for f in ranges.families() {
                if let Some(r) = ranges.get_mut(f) {
                    r.clear();
                }
            }
            OpResult::ok()
        }
        Op::Repair { services, .. } => match repair.run_once(ranges, services) {
            Ok(rep) => {
                *ranges = rep.rebuilt;
                repair_result(&rep.events)
            }
            Err(e) => repair_error(&e),
        },
        other => return Err(unknown(op_name(other))),
    })
}

fn port_op(
    op: &Op,
    alloc: &mut NodePortAllocator,
    repair: &mut NodePortRepair,
    snapshot: &mut Option<RangeAllocation>,
) -> Result<OpResult, AllocError> {
    if let Some(r) = count_op(op, alloc, |p| json!(p)) {
        return Ok(r);
    }
    Ok(match op {
        Op::Allocate(Item::Port(p)) => {
            alloc.allocate(*p)?;
            OpResult::ok()
        }
        Op::AllocateRange { from, to } => {
            // Ports outside the allocator's range always fail: only walk the overlap.
            let pr = alloc.range();
            let lo = i64::from(*from).max(i64::from(pr.base));
            let hi = i64::from(*to).min(i64::from(pr.base) + i64::from(pr.size) - 1);
            let count = (lo..=hi)
                .filter_map(|p| i32::try_from(p).ok())
                .filter(|&p| alloc.allocate(p).is_ok())
                .count();
            OpResult {
                count: Some(count as u64),
                ..OpResult::default()
            }
        }
        Op::Release(Item::Port(p)) => {
            alloc.release(*p);
            OpResult::ok()
        }
        Op::ReleaseAll => OpResult::value(json!(Allocator::release_all(alloc))),
        Op::Has(Item::Port(p)) => OpResult::value(json!(alloc.has(*p))),
        Op::Offset => OpResult::value(json!(alloc.band_offset())),
        Op::Snapshot => {
            let s = alloc.snapshot();
            let r = snapshot_result(&s);
            *snapshot = Some(s);
            r
        }
        Op::Restore { range, data } => {
            let data = restore_bytes(data, snapshot.as_ref())?;
            alloc.restore(range, &data)?;
            OpResult::ok()
        }
        Op::Reset => {
            alloc.clear();
            OpResult::ok()
        }
        Op::Repair { services, .. } => match repair.run_once(alloc, services) {
            Ok(rep) => {
                *alloc = rep.rebuilt;
                repair_result(&rep.events)
            }
            Err(e) => repair_error(&e),
        },
        other => return Err(unknown(op_name(other))),
    })
}

fn multi_op(op: &Op, alloc: &mut MultiCidrAllocator, fam: IpFamily) -> Result<OpResult, AllocError> {
    // The script's `family` names the MetaAllocator the ops run on (an op may name another):
    // each family's allocator sees only its family's CIDRs.
    let mut view = FamilyAllocator {
        allocator: alloc,
        family: fam,
    };
    if let Some(r) = count_op(op, &mut view, |ip| json!(ip.to_string())) {
        return Ok(r);
    }
    Ok(match op {
        Op::Allocate(Item::Ip(ip)) => {
            view.allocate(*ip)?;
            OpResult::ok()
        }
        Op::Release(Item::Ip(ip)) => {
            view.release(*ip)?;
            OpResult::ok()
        }
        Op::ReleaseAll => OpResult::value(json!(view.release_all())),
        Op::Has(Item::Ip(ip)) => OpResult::value(json!(view.has(*ip))),
        Op::AddCidr { name, cidrs, ready } => {
            let refs: Vec<&str> = cidrs.iter().map(String::as_str).collect();
            alloc.add_service_cidr(name, &refs, *ready)?;
            OpResult::ok()
        }
        Op::DeleteCidr { name } => {
            alloc.delete_service_cidr(name);
            OpResult::ok()
        }
        Op::CanDeleteCidr { name } => OpResult::value(json!(alloc.can_delete_cidr(name)?)),
        Op::Repair { services, now } => repair_result(&alloc.repair_ip_addresses(services, *now)),
        Op::Cidrs => OpResult::value(json!(
            alloc
                .cidrs(fam)
                .iter()
                .map(|(n, ready)| json!({"cidr": n.to_string(), "ready": ready}))
                .collect::<Vec<_>>()
        )),
        other => return Err(unknown(op_name(other))),
    })
}

/// The script name of an op.
fn op_name(op: &Op) -> &'static str {
    match op {
        Op::OffsetOf { .. } => "offset-of",
        Op::AllocateNext { .. } => "allocate-next",
        Op::Allocate(_) => "allocate",
        Op::AllocateRange { .. } => "allocate-range",
        Op::Release(_) => "release",
        Op::ReleaseAll => "release-all",
        Op::Has(_) => "has",
        Op::Free => "free",
        Op::Used => "used",
        Op::ForEach => "for-each",
        Op::Offset => "offset",
        Op::Snapshot => "snapshot",
        Op::Restore { .. } => "restore",
        Op::Reset => "reset",
        Op::Repair { .. } => "repair",
        Op::AddCidr { .. } => "add-cidr",
        Op::DeleteCidr { .. } => "delete-cidr",
        Op::CanDeleteCidr { .. } => "can-delete-cidr",
        Op::Cidrs => "cidrs",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SplitMix64;

    #[test]
    fn ops_are_typed_for_their_model() {
        let ports = Model::from_script(&json!({"kind": "node-port", "ranges": ["30000-30009"]})).unwrap();
        let (op, _) = ports
            .parse_op(&json!({"op": "allocate", "value": "30001"}))
            .unwrap();
        assert_eq!(op, Op::Allocate(Item::Port(30001)));
        // A model's unknown op is refused before its fields are read.
        let ips = Model::from_script(&json!({"kind": "cluster-ip", "ranges": ["10.0.0.0/28"]})).unwrap();
        let e = ips.parse_op(&json!({"op": "allocate-range"})).unwrap_err();
        assert!(e.to_string().contains("unknown or unsupported"), "{e}");
        let (op, fam) = ips
            .parse_op(&json!({"op": "has", "value": "10.0.0.1", "family": "IPv4"}))
            .unwrap();
        assert_eq!(
            (op, fam),
            (Op::Has(Item::Ip("10.0.0.1".parse().unwrap())), Some(IpFamily::V4))
        );
    }

    #[test]
    fn a_script_runs_op_by_op() {
        let mut m = Model::from_script(&json!({"kind": "node-port", "ranges": ["30000-30001"]})).unwrap();
        let mut rng = SplitMix64::new(0);
        let r = m.run_op(&json!({"op": "allocate-next", "repeat": 3}), &mut rng);
        assert_eq!(
            (r.count, r.failures, r.error.as_deref()),
            (Some(2), Some(1), Some("full"))
        );
        let r = m.run_op(&json!({"op": "release-all"}), &mut rng);
        assert_eq!(r.value, Some(json!(2)));
        assert!(m.run_op(&json!({"op": "nope"}), &mut rng).is_error());
    }
}
