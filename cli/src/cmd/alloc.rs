//! `svcnet alloc`: runs an allocator operation script (`allocators.md`, section 10) and prints
//! one result per operation: `{"results":[...]}`.

use std::net::IpAddr;
use std::process::ExitCode;

use ipnet::IpNet;
use serde_json::{Map, Value, json};
use svcnet_allocators::{
    AllocError, ClusterIpRange, ClusterIpRanges, ClusterIpRepair, IpAddressRecord, IpFamily,
    MultiCidrAllocator, NodePortAllocator, NodePortRepair, PortRange, RangeAllocation, RepairEvent,
    SplitMix64, cluster_ip_band_offset, decode_base64, node_port_band_offset, parse_cidr,
};
use svcnet_model::{ObjectMeta, Service, ServicePort, ServiceSpec};

use crate::error::CliError;
use crate::input::read_documents;
use crate::output::{Format, print_json, print_text};

/// Arguments of `svcnet alloc`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Seed of the random generator: the same seed gives the same allocations.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Output format (default: JSON).
    #[arg(long, value_enum)]
    pub output: Option<Format>,
    /// The operation script (JSON or YAML), or `-` for standard input.
    pub script: String,
}

/// Runs `svcnet alloc`.
pub fn run(args: Args) -> Result<ExitCode, CliError> {
    let docs = read_documents(&args.script)?;
    let doc = docs.into_iter().next().unwrap_or(Value::Null);
    let script = doc.get("input").filter(|v| v.is_object()).unwrap_or(&doc);
    let mut model = match Model::from_script(script) {
        Ok(m) => m,
        Err(msg) => {
            eprintln!("svcnet: {}: {msg}", args.script);
            return Ok(ExitCode::from(1));
        }
    };
    let mut rng = SplitMix64::new(args.seed);
    let empty = Vec::new();
    let ops = script.get("ops").and_then(Value::as_array).unwrap_or(&empty);
    let mut results = Vec::with_capacity(ops.len());
    let mut refused = false;
    for op in ops {
        let r = match model.apply(op, &mut rng) {
            Ok(r) => r,
            Err(e) => error_result(&e),
        };
        refused |= r.contains_key("error");
        results.push(Value::Object(r));
    }
    match args.output.unwrap_or(Format::Json) {
        Format::Json => print_json(&json!({ "results": results }))?,
        Format::Text => {
            for (i, (op, r)) in ops.iter().zip(&results).enumerate() {
                let name = op.get("op").and_then(Value::as_str).unwrap_or("?");
                print_text(&format!("{:>4} {name}: {r}", i + 1))?;
            }
        }
    }
    Ok(ExitCode::from(u8::from(refused)))
}

type Res = Map<String, Value>;

fn error_result(e: &AllocError) -> Res {
    let mut m = Map::new();
    m.insert("error".into(), json!(e.kind().as_str()));
    m.insert("message".into(), json!(e.to_string()));
    m
}

fn ok() -> Res {
    let mut m = Map::new();
    m.insert("ok".into(), json!(true));
    m
}

fn value(v: Value) -> Res {
    let mut m = Map::new();
    m.insert("value".into(), v);
    m
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
        Some(f) => IpFamily::parse(f).map(Some),
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

fn repair_result(events: &[RepairEvent]) -> Res {
    let mut m = ok();
    let evs: Vec<Value> = events
        .iter()
        .map(|e| json!({"reason": e.reason, "service": e.service, "value": e.value, "message": e.message}))
        .collect();
    m.insert("events".into(), Value::Array(evs));
    m
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
    fn into_result(self, repeat: bool, within: Option<&str>) -> Res {
        let mut m = Map::new();
        if !repeat {
            if let Some(e) = self.errors.first() {
                return error_result(e);
            }
            m.insert("ok".into(), json!(true));
            if let Some(v) = self.values.first() {
                m.insert("value".into(), v.clone());
            }
        } else {
            m.insert("count".into(), json!(self.values.len()));
            if let Some(first) = self.errors.first() {
                let kind = first.kind();
                let same = self.errors.iter().all(|e| e.kind() == kind);
                let text = if same {
                    kind.as_str().to_owned()
                } else {
                    "mixed".to_owned()
                };
                m.insert("error".into(), json!(text));
                m.insert("message".into(), json!(first.to_string()));
                m.insert(
                    "failures".into(),
                    json!(self.errors.len() as u64 + self.more_full),
                );
            }
        }
        if !self.bands.is_empty() {
            let band = if self.bands.iter().all(|&b| b) {
                "upper"
            } else if self.bands.iter().all(|&b| !b) {
                "lower"
            } else {
                "mixed"
            };
            m.insert("band".into(), json!(band));
        }
        if let Some(w) = within
            && !self.values.is_empty()
        {
            let v = if self.outside { json!("outside") } else { json!(w) };
            m.insert("in".into(), v);
        }
        m
    }
}

enum Model {
    Ip {
        ranges: ClusterIpRanges,
        repair: ClusterIpRepair,
        snapshot: Option<RangeAllocation>,
    },
    Port {
        alloc: NodePortAllocator,
        repair: NodePortRepair,
        snapshot: Option<RangeAllocation>,
    },
    Multi {
        alloc: MultiCidrAllocator,
        family: IpFamily,
    },
}

impl Model {
    fn from_script(s: &Value) -> Result<Model, String> {
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
                    Some(f) => IpFamily::parse(f).map_err(|e| e.to_string())?,
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

    fn apply(&mut self, op: &Value, rng: &mut SplitMix64) -> Result<Res, AllocError> {
        let name = str_field(op, "op")?;
        match name {
            "offset-of" => {
                let r = str_field(op, "range")?;
                let v = match self {
                    Model::Port { .. } => node_port_band_offset(u64::from(r.parse::<PortRange>()?.size)),
                    _ => cluster_ip_band_offset(&parse_cidr(r)?),
                };
                return Ok(value(json!(v)));
            }
            "allocate-next" => return self.allocate_next(op, rng),
            _ => {}
        }
        match self {
            Model::Ip {
                ranges,
                repair,
                snapshot,
            } => ip_op(name, op, ranges, repair, snapshot),
            Model::Port {
                alloc,
                repair,
                snapshot,
            } => port_op(name, op, alloc, repair, snapshot),
            Model::Multi { alloc, family } => multi_op(name, op, alloc, *family),
        }
    }

    fn allocate_next(&mut self, op: &Value, rng: &mut SplitMix64) -> Result<Res, AllocError> {
        let repeat = op.get("repeat").and_then(Value::as_u64);
        let within = op.get("in").and_then(Value::as_str);
        let within_net: Option<IpNet> = within.map(parse_cidr).transpose()?;
        let n = repeat.unwrap_or(1);
        let mut run = NextRun::default();
        for i in 0..n {
            if run
                .errors
                .last()
                .is_some_and(|e| e.kind() == svcnet_allocators::ErrorKind::Full)
            {
                // A full allocator stays full: the remaining attempts fail the same way.
                run.more_full = n - i;
                break;
            }
            let (got, upper) = match self {
                Model::Ip { ranges, .. } => {
                    let fam = family_field(op)?
                        .unwrap_or(ranges.families().first().copied().unwrap_or(IpFamily::V4));
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
                Model::Port { alloc, .. } => match alloc.allocate_next(rng) {
                    Ok(p) => {
                        let upper =
                            i64::from(p) - i64::from(alloc.range().base) >= alloc.band_offset() as i64;
                        run.bands.push(upper);
                        (Ok(json!(p)), None)
                    }
                    Err(e) => (Err(e), None),
                },
                Model::Multi { alloc, family } => {
                    let fam = family_field(op)?.unwrap_or(*family);
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
                if within_net.is_some_and(|w| !w.contains(&ip)) {
                    run.outside = true;
                }
            }
            match got {
                Ok(v) => run.values.push(v),
                Err(e) => run.errors.push(e),
            }
        }
        Ok(run.into_result(repeat.is_some(), within))
    }
}

fn ip_op(
    name: &str,
    op: &Value,
    ranges: &mut ClusterIpRanges,
    repair: &mut ClusterIpRepair,
    snapshot: &mut Option<RangeAllocation>,
) -> Result<Res, AllocError> {
    let primary = ranges.families().first().copied().unwrap_or(IpFamily::V4);
    let fam = family_field(op)?.unwrap_or(primary);
    let one = |ranges: &ClusterIpRanges| -> Result<ClusterIpRange, AllocError> {
        ranges
            .get(fam)
            .cloned()
            .ok_or_else(|| bad("family", &json!(fam.as_str()), "no range of this family"))
    };
    Ok(match name {
        "allocate" => {
            ranges.allocate(ip_value(op)?)?;
            ok()
        }
        "release" => {
            ranges.release(ip_value(op)?);
            ok()
        }
        "release-all" => {
            let mut n = 0;
            for f in ranges.families() {
                if let Some(r) = ranges.get_mut(f) {
                    n += r.used();
                    r.clear();
                }
            }
            value(json!(n))
        }
        "has" => value(json!(ranges.has(ip_value(op)?))),
        "free" => value(json!(one(ranges)?.free())),
        "used" => value(json!(one(ranges)?.used())),
        "for-each" => {
            let r = one(ranges)?;
            value(json!(r.iter().map(|ip| ip.to_string()).collect::<Vec<_>>()))
        }
        "offset" => value(json!(one(ranges)?.band_offset())),
        "snapshot" => {
            let s = one(ranges)?.snapshot();
            let mut m = ok();
            m.insert("range".into(), json!(s.range));
            m.insert("data".into(), json!(s.data_base64()));
            *snapshot = Some(s);
            m
        }
        "restore" => {
            let range = str_field(op, "range")?;
            let data = restore_data(op, snapshot.as_ref())?;
            let net = parse_cidr(range)?;
            let target =
                ranges
                    .get_mut(IpFamily::of_net(&net))
                    .ok_or_else(|| AllocError::MismatchedNetwork {
                        given: range.to_owned(),
                        current: String::new(),
                    })?;
            target.restore(range, &data)?;
            ok()
        }
        "reset" => {
            for f in ranges.families() {
                if let Some(r) = ranges.get_mut(f) {
                    r.clear();
                }
            }
            ok()
        }
        "repair" => {
            let services = repair_services(op)?;
            match repair.run_once(ranges, &services) {
                Ok(rep) => {
                    *ranges = rep.rebuilt;
                    repair_result(&rep.events)
                }
                Err(e) => repair_error(&e),
            }
        }
        other => return Err(unknown(other)),
    })
}

fn port_op(
    name: &str,
    op: &Value,
    alloc: &mut NodePortAllocator,
    repair: &mut NodePortRepair,
    snapshot: &mut Option<RangeAllocation>,
) -> Result<Res, AllocError> {
    let port = |op: &Value| port_value(field(op, "value")?, "value");
    Ok(match name {
        "allocate" => {
            alloc.allocate(port(op)?)?;
            ok()
        }
        "allocate-range" => {
            let from = port_value(field(op, "from")?, "from")?;
            let to = port_value(field(op, "to")?, "to")?;
            // Ports outside the allocator's range always fail: only walk the overlap.
            let pr = alloc.range();
            let lo = i64::from(from).max(i64::from(pr.base));
            let hi = i64::from(to).min(i64::from(pr.base) + i64::from(pr.size) - 1);
            let count = (lo..=hi)
                .filter_map(|p| i32::try_from(p).ok())
                .filter(|&p| alloc.allocate(p).is_ok())
                .count();
            let mut m = Map::new();
            m.insert("count".into(), json!(count));
            m
        }
        "release" => {
            alloc.release(port(op)?);
            ok()
        }
        "release-all" => {
            let n = alloc.used();
            alloc.clear();
            value(json!(n))
        }
        "has" => value(json!(alloc.has(port(op)?))),
        "free" => value(json!(alloc.free())),
        "used" => value(json!(alloc.used())),
        "for-each" => value(json!(alloc.iter().collect::<Vec<_>>())),
        "offset" => value(json!(alloc.band_offset())),
        "snapshot" => {
            let s = alloc.snapshot();
            let mut m = ok();
            m.insert("range".into(), json!(s.range));
            m.insert("data".into(), json!(s.data_base64()));
            *snapshot = Some(s);
            m
        }
        "restore" => {
            let range = str_field(op, "range")?;
            let data = restore_data(op, snapshot.as_ref())?;
            alloc.restore(range, &data)?;
            ok()
        }
        "reset" => {
            alloc.clear();
            ok()
        }
        "repair" => {
            let services = repair_services(op)?;
            match repair.run_once(alloc, &services) {
                Ok(rep) => {
                    *alloc = rep.rebuilt;
                    repair_result(&rep.events)
                }
                Err(e) => repair_error(&e),
            }
        }
        other => return Err(unknown(other)),
    })
}

fn multi_op(
    name: &str,
    op: &Value,
    alloc: &mut MultiCidrAllocator,
    family: IpFamily,
) -> Result<Res, AllocError> {
    // The script's `family` names the MetaAllocator the ops run on (an op may name another):
    // each family's allocator sees only its family's CIDRs.
    let fam = family_field(op)?.unwrap_or(family);
    Ok(match name {
        "allocate" => {
            alloc.allocate(fam, ip_value(op)?, None)?;
            ok()
        }
        "release" => {
            alloc.release(fam, ip_value(op)?)?;
            ok()
        }
        "release-all" => value(json!(alloc.release_all(fam))),
        "has" => value(json!(alloc.has(fam, ip_value(op)?))),
        "free" => value(json!(alloc.free(fam))),
        "used" => value(json!(alloc.used(fam))),
        "for-each" => value(json!(
            alloc.iter(fam).map(|ip| ip.to_string()).collect::<Vec<_>>()
        )),
        "add-cidr" => {
            let cidrs = str_list(op.get("cidrs"));
            let refs: Vec<&str> = cidrs.iter().map(String::as_str).collect();
            let ready = op.get("ready").and_then(Value::as_bool).unwrap_or(true);
            alloc.add_service_cidr(str_field(op, "name")?, &refs, ready)?;
            ok()
        }
        "delete-cidr" => {
            alloc.delete_service_cidr(str_field(op, "name")?);
            ok()
        }
        "can-delete-cidr" => value(json!(alloc.can_delete_cidr(str_field(op, "name")?)?)),
        "repair" => {
            let services = repair_services(op)?;
            let now = op.get("now").and_then(Value::as_i64).unwrap_or(0);
            repair_result(&alloc.repair_ip_addresses(&services, now))
        }
        "cidrs" => value(json!(
            alloc
                .cidrs(fam)
                .iter()
                .map(|(n, ready)| json!({"cidr": n.to_string(), "ready": ready}))
                .collect::<Vec<_>>()
        )),
        other => return Err(unknown(other)),
    })
}

fn unknown(op: &str) -> AllocError {
    bad("op", &json!(op), "unknown or unsupported by this model")
}

fn restore_data(op: &Value, last: Option<&RangeAllocation>) -> Result<Vec<u8>, AllocError> {
    if op.get("from_snapshot").and_then(Value::as_bool) == Some(true) {
        return last
            .map(|s| s.data.clone())
            .ok_or_else(|| bad("from_snapshot", &json!(true), "no snapshot taken yet"));
    }
    decode_base64(op.get("data").and_then(Value::as_str).unwrap_or(""))
}

fn repair_services(op: &Value) -> Result<Vec<Service>, AllocError> {
    op.get("services")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(repair_service)
        .collect()
}

fn repair_error(e: &svcnet_allocators::RepairError) -> Res {
    let mut m = Map::new();
    let kind = match e {
        svcnet_allocators::RepairError::RangeFull { .. } => "full",
        _ => "invalid",
    };
    m.insert("error".into(), json!(kind));
    m.insert("message".into(), json!(e.to_string()));
    m
}
