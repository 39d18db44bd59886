//! The conformance cases kept under the workspace's `testdata/conformance/<area>/`, one JSON file
//! a case: [`Case`] holds what every area has (name, provenance, the CLI verb and flags the shared
//! runner uses, the input objects), with the expectation typed per area ([`AllocExpect`],
//! [`ValidateExpect`], [`SliceExpect`], [`TopologyExpect`], [`DiscoveryExpect`],
//! [`TraceExpect`], [`RulesExpect`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

/// One conformance case: `{"case","from","subcommand","args","input","old"?,"cluster"?,"expect"}`
/// (and, in the `rules` areas, `prior`, `history`, `covers` and `corrected`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case<E> {
    /// The case's name.
    pub case: String,
    /// Where the case comes from (a Kubernetes test, a replay, a recording).
    pub from: String,
    /// A remark on the case.
    #[serde(default)]
    pub note: Option<String>,
    /// The `svcnet` verb the shared runner calls (`validate`, `alloc`, `slice`, ...).
    pub subcommand: String,
    /// The verb's flags, as the shared runner passes them.
    #[serde(default)]
    pub args: Vec<String>,
    /// The cluster the request meets (`--service-cidrs`, `--node-port-range`).
    #[serde(default)]
    pub cluster: Option<ClusterConfig>,
    /// The input: a `v1` `List` of objects (an operation script for `alloc`).
    pub input: Value,
    /// The stored objects an update starts from.
    #[serde(default)]
    pub old: Option<Value>,
    /// `rules`: earlier syncs, each `{"input", "then"?}`, before the one checked.
    #[serde(default)]
    pub prior: Vec<Value>,
    /// `rules`: what each earlier sync changed, in words.
    #[serde(default)]
    pub history: Vec<String>,
    /// `rules`: what the case covers, in words.
    #[serde(default)]
    pub covers: Vec<String>,
    /// `rules`: why the project's copy differs from the recording (see `CORRECTIONS`).
    #[serde(default)]
    pub corrected: Option<String>,
    /// What the answer must hold.
    pub expect: E,
}

impl<E> Case<E> {
    /// The value of flag `--name` in [`Case::args`] (`name` without the dashes).
    pub fn arg(&self, name: &str) -> Option<&str> {
        let flag = format!("--{name}");
        let i = self.args.iter().position(|a| *a == flag)?;
        self.args.get(i + 1).map(String::as_str)
    }

    /// Whether the bare flag `--name` is among [`Case::args`].
    pub fn has_flag(&self, name: &str) -> bool {
        let flag = format!("--{name}");
        self.args.contains(&flag)
    }
}

/// A case's `cluster`.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterConfig {
    /// The service CIDRs, primary first.
    #[serde(default, rename = "serviceCIDRs")]
    pub service_cidrs: Vec<String>,
    /// The NodePort range, `FROM-TO`.
    #[serde(default)]
    pub node_port_range: Option<String>,
}

/// `allocators`: one result a script op, each key of each expected result equal in the answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllocExpect {
    /// The expected results, op by op (a subset of the keys of each answer).
    pub results: Vec<Map<String, Value>>,
}

/// `validation`, `networkpolicy`, `apiserver`: the verdict and its causes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ValidateExpect {
    /// Whether the request is accepted.
    pub valid: bool,
    /// The exact number of causes, when given.
    #[serde(default)]
    pub error_count: Option<usize>,
    /// Causes that must be among the answer's.
    #[serde(default)]
    pub errors: Vec<ExpectedError>,
}

/// One expected cause.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExpectedError {
    /// The cause's reason (`FieldValueInvalid`, ...).
    #[serde(rename = "type")]
    pub type_: String,
    /// The field path.
    pub field: String,
    /// kube-apiserver's message (informative; not compared).
    #[serde(default)]
    pub message: Option<String>,
}

/// `slicer` (`slice`, `mirror`): counts and properties of the plan and the slices after it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SliceExpect {
    /// Slices created.
    #[serde(default)]
    pub creates: Option<usize>,
    /// Slices updated.
    #[serde(default)]
    pub updates: Option<usize>,
    /// Slices deleted.
    #[serde(default)]
    pub deletes: Option<usize>,
    /// Endpoint counts of the slices after the plan (any order).
    #[serde(default)]
    pub endpoints_per_slice: Option<Vec<usize>>,
    /// Whether the sync reports an error.
    #[serde(default)]
    pub error: Option<bool>,
    /// The address types of the slices after the plan (as a set).
    #[serde(default)]
    pub address_types: Option<Vec<String>>,
    /// The port lists of the slices after the plan (any order).
    #[serde(default)]
    pub slice_ports: Option<Vec<Value>>,
    /// The port numbers among the slices after the plan (as a set).
    #[serde(default)]
    pub slice_port_numbers: Option<Vec<i64>>,
    /// Labels every written slice carries.
    #[serde(default)]
    pub slice_labels: Option<BTreeMap<String, Value>>,
    /// The `foo` label every written slice carries.
    #[serde(default)]
    pub slice_label_foo: Option<Value>,
    /// Whether every endpoint after the plan is ready.
    #[serde(default)]
    pub all_endpoints_ready: Option<bool>,
    /// Endpoints after the plan whose addresses were in no slice before.
    #[serde(default)]
    pub endpoints_added: Option<usize>,
    /// By address type: endpoints (matched by `addresses`) whose keys the answer's hold.
    #[serde(default)]
    pub endpoints: Option<BTreeMap<String, Vec<Value>>>,
    /// A remark.
    #[serde(default)]
    pub note: Option<String>,
}

/// `topology` (`hints`, `endpoints`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopologyExpect {
    /// `hints`: zones hinted by address (`null`: no endpoint carries a hint; a `null` zone list:
    /// that address carries none).
    #[serde(default, deserialize_with = "present")]
    pub hints: Option<Option<BTreeMap<String, Option<Vec<String>>>>>,
    /// `hints`: hinted endpoints by zone.
    #[serde(default)]
    pub hint_counts: Option<BTreeMap<String, u64>>,
    /// `hints`: hints to a zone other than the endpoint's.
    #[serde(default)]
    pub cross_zone_hints: Option<u64>,
    /// `hints`: slices updated.
    #[serde(default)]
    pub updates: Option<usize>,
    /// `hints`: an event reason that must be among the events.
    #[serde(default)]
    pub event_reason: Option<String>,
    /// `hints`: that event's type (default `Normal`).
    #[serde(default)]
    pub event_type: Option<String>,
    /// `endpoints`: the cluster-traffic endpoints (`null`: not used).
    #[serde(default, deserialize_with = "present")]
    pub cluster: Option<Option<Vec<String>>>,
    /// `endpoints`: the local-traffic endpoints (`null`: not used).
    #[serde(default, deserialize_with = "present")]
    pub local: Option<Option<Vec<String>>>,
    /// `endpoints`: every endpoint reachable.
    #[serde(default, deserialize_with = "present")]
    pub all_reachable: Option<Option<Vec<String>>>,
    /// `endpoints`: whether any endpoint is usable.
    #[serde(default)]
    pub has_any: Option<bool>,
    /// A remark.
    #[serde(default)]
    pub note: Option<String>,
}

/// `discovery` (`dns`, `env`).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DiscoveryExpect {
    /// `dns`: records that must be served.
    #[serde(default)]
    pub records: Vec<DnsRecord>,
    /// No other record at the names of [`DiscoveryExpect::records`] (no other variable, `env`).
    #[serde(default)]
    pub complete: bool,
    /// `dns`: names with no record at all.
    #[serde(default)]
    pub absent: Vec<String>,
    /// `env`: variables that must be set.
    #[serde(default)]
    pub env: Vec<EnvPair>,
}

/// One DNS record, compared case-insensitively.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DnsRecord {
    /// The owner name.
    pub name: String,
    /// The type (`A`, `SRV`, ...).
    #[serde(rename = "type")]
    pub type_: String,
    /// The data in zone-file text.
    pub data: String,
}

/// One environment variable.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EnvPair {
    /// The name.
    pub name: String,
    /// The value.
    pub value: String,
}

/// `trace`: flows through the rules and where each ends.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceExpect {
    /// The flows.
    pub flows: Vec<Flow>,
}

/// One traced flow.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Flow {
    /// The flow's name.
    pub name: String,
    /// Source address.
    pub source: String,
    /// Destination address.
    pub destination: String,
    /// Destination port.
    pub port: u16,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: String,
    /// The endpoints the flow may reach, or a verdict (`DROP`, `REJECT`, ...).
    pub output: FlowOutput,
    /// Whether the flow is masqueraded.
    pub masq: bool,
}

/// Where a traced flow ends.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum FlowOutput {
    /// The endpoints (`ip:port`) the flow may reach.
    Endpoints(Vec<String>),
    /// A verdict.
    Verdict(String),
}

/// `rules`: the rule text or data kube-proxy v1.37.2 programs.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RulesExpect {
    /// `iptables-restore`, `nft` or `ipvs-json`.
    pub format: String,
    /// The expected text (iptables, nftables).
    #[serde(default)]
    pub text: Option<String>,
    /// The expected data (ipvs).
    #[serde(default)]
    pub data: Option<Value>,
    /// What part of the answer is compared.
    #[serde(default)]
    pub scope: Option<Value>,
    /// The expected transaction of the last sync.
    #[serde(default)]
    pub transaction: Option<String>,
    /// The operation count of the last sync's transaction.
    #[serde(default)]
    pub last_transaction_operations: Option<u64>,
}

/// `Some(x)` for a key that is present, `null` included (`Some(None)`).
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(d: D) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// The workspace's `testdata/` folder.
pub fn testdata_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata")
}

/// The folder of one conformance area.
pub fn area_dir(area: &str) -> PathBuf {
    testdata_dir().join("conformance").join(area)
}

/// The case files of `area`, sorted by file name: `(file name, JSON)`.
pub fn raw_cases(area: &str) -> Vec<(String, Value)> {
    let dir = area_dir(area);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let text = std::fs::read_to_string(dir.join(&n)).unwrap_or_else(|e| panic!("{n}: {e}"));
            let v: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{area}/{n}: {e}"));
            (n, v)
        })
        .collect()
}

/// The cases of `area` typed with expectation `E`, sorted by file name.
pub fn cases<E: DeserializeOwned>(area: &str) -> Vec<(String, Case<E>)> {
    raw_cases(area)
        .into_iter()
        .map(|(n, v)| {
            let case = serde_json::from_value(v).unwrap_or_else(|e| panic!("{area}/{n}: {e}"));
            (n, case)
        })
        .collect()
}

/// Runs `check` over every case of `area` (those `check` answers `None` for are not its
/// concern) and panics with the list of the failing ones. Gives how many cases were checked.
pub fn run_area<E: DeserializeOwned>(
    area: &str,
    check: impl Fn(&Case<E>) -> Option<Result<(), String>>,
) -> usize {
    let all = cases::<E>(area);
    assert!(!all.is_empty(), "no cases for {area}");
    let mut failures = Vec::new();
    let mut checked = 0;
    for (name, case) in &all {
        match check(case) {
            None => {}
            Some(Ok(())) => checked += 1,
            Some(Err(why)) => {
                checked += 1;
                failures.push(format!("{name}: {why}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {checked} {area} cases fail:\n{}",
        failures.len(),
        failures.join("\n")
    );
    checked
}
