//! What the reconciler needs to know about a Service: identity, labels, owner, families.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/endpointslice/utils.go` (`newEndpointSlice`,
//! `setEndpointSliceLabels`, `ownedBy`).

use smallvec::SmallVec;
use svcnet_model::hash::KeyedState;
use svcnet_model::{
    EndpointSlice, OwnerReference, Pod, Service, StringMap, labels as slice_labels, traffic_distribution,
};

use crate::endpoint::{Family, address_types};
use crate::error::SliceError;
use crate::names::slice_name_prefix;

/// The Service label marking a headless Service's slices.
const HEADLESS: &str = slice_labels::HEADLESS;
/// The annotations that turn on topology-aware hints (the deprecated one wins when both are set).
const TOPOLOGY_AWARE_HINTS: &str = "service.kubernetes.io/topology-aware-hints";
const TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";

/// Reconciler settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Options {
    /// The most endpoints one slice holds (Kubernetes' `--max-endpoints-per-slice`, 1..=1000,
    /// default 100).
    pub max_endpoints_per_slice: usize,
    /// The `endpoints.kubernetes.io/last-change-trigger-time` to stamp on written slices
    /// (RFC 3339 with nanoseconds, UTC); `None` removes the annotation from written slices.
    pub trigger_time: Option<String>,
    /// Whether `trafficDistribution: PreferSameZone` / `PreferSameNode` count as set (the
    /// `PreferSameTrafficDistribution` feature: GA and locked on since Kubernetes 1.35, so
    /// `true` by default). Only decides whether hints are kept.
    pub prefer_same_traffic_distribution: bool,
    /// The key of the maps the slicer keys by names from the input (a Service's slices by
    /// name, the names a plan gives, and [`Controller`](crate::Controller)'s lookups of slices
    /// by Service): [`KeyedState::default`]'s fixed key unless set. An embedder that reads
    /// untrusted objects sets a secret one against crafted hash collisions (see
    /// [`svcnet_model::hash`]); plans are the same under every key. [`NodeZones`] takes its
    /// own ([`NodeZones::with_hash_key`]).
    ///
    /// [`NodeZones`]: crate::NodeZones
    /// [`NodeZones::with_hash_key`]: crate::NodeZones::with_hash_key
    ///
    /// ```
    /// use svcnet_model::hash::KeyedState;
    /// use svcnet_slicer::{NodeZones, Options};
    ///
    /// // The embedder's secret, from its own randomness.
    /// let key = KeyedState::new([0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210]);
    /// let options = Options { hash_key: key, ..Options::default() };
    /// let mut nodes = NodeZones::with_hash_key(key);
    /// nodes.insert("node-1", Some("zone-a"));
    /// assert_eq!(nodes.zone("node-1"), Some("zone-a"));
    /// assert_eq!(options.max_endpoints_per_slice, 100);
    /// ```
    pub hash_key: KeyedState,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_endpoints_per_slice: 100,
            trigger_time: None,
            prefer_same_traffic_distribution: true,
            hash_key: KeyedState::default(),
        }
    }
}

impl Options {
    /// Options with the given maximum, checked.
    pub fn with_max(max: i64) -> Result<Options, SliceError> {
        let o = Options {
            max_endpoints_per_slice: usize::try_from(max).unwrap_or(0),
            ..Options::default()
        };
        if !(1..=1000).contains(&max) {
            return Err(SliceError::MaxEndpointsOutOfRange { value: max });
        }
        Ok(o)
    }

    pub(crate) fn check(&self) -> Result<(), SliceError> {
        if (1..=1000).contains(&self.max_endpoints_per_slice) {
            Ok(())
        } else {
            Err(SliceError::MaxEndpointsOutOfRange {
                value: i64::try_from(self.max_endpoints_per_slice).unwrap_or(i64::MAX),
            })
        }
    }
}

/// True for the label keys the controller owns on slices.
pub(crate) fn is_reserved_label(key: &str) -> bool {
    key == slice_labels::SERVICE_NAME || key == slice_labels::MANAGED_BY || key == HEADLESS
}

/// An EndpointSlice of `family` with `ports`, no endpoints and no metadata yet.
pub(crate) fn empty_slice(family: Family, ports: Vec<svcnet_model::EndpointPort>) -> EndpointSlice {
    EndpointSlice {
        api_version: Some("discovery.k8s.io/v1".into()),
        kind: Some("EndpointSlice".into()),
        address_type: family.address_type().to_owned(),
        endpoints: Some(Vec::new()),
        ports: Some(ports),
        ..Default::default()
    }
}

/// True when `selector` (a Service's `spec.selector`) selects a Pod with `labels`.
pub(crate) fn selector_matches(selector: &StringMap, labels: Option<&StringMap>) -> bool {
    selector
        .iter()
        .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
}

/// The facts about a Service the reconciler reads, computed once.
#[derive(Debug, Clone)]
pub(crate) struct ServiceInfo {
    pub ports: Vec<svcnet_model::ServicePort>,
    pub name: String,
    pub namespace: String,
    pub uid: String,
    pub user_labels: StringMap,
    pub headless: bool,
    pub prefix: String,
    pub families: SmallVec<[Family; 2]>,
    pub publish_not_ready: bool,
    pub deleting: bool,
    pub keep_hints: bool,
    /// `spec.selector` as pairs (walked per Pod, faster than the map).
    pub selector: Vec<(String, String)>,
}

impl ServiceInfo {
    pub fn new(service: &Service, options: &Options) -> Result<ServiceInfo, SliceError> {
        let m = &service.metadata;
        let spec = service.spec();
        if service.type_() == svcnet_model::service_type::EXTERNAL_NAME {
            return Err(SliceError::ExternalName {
                namespace: m.namespace().to_owned(),
                name: m.name().to_owned(),
            });
        }
        let Some(selector) = spec.selector.clone() else {
            return Err(SliceError::NoSelector {
                namespace: m.namespace().to_owned(),
                name: m.name().to_owned(),
            });
        };
        let user_labels: StringMap = m
            .labels
            .iter()
            .flatten()
            .filter(|(k, _)| !is_reserved_label(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let ip = spec.cluster_ip.as_deref().unwrap_or("");
        let hints_annotation = m
            .annotation(TOPOLOGY_AWARE_HINTS)
            .or_else(|| m.annotation(TOPOLOGY_MODE))
            .is_some_and(|v| v == "Auto" || v == "auto");
        let td_valid = match spec.traffic_distribution.as_deref() {
            Some(traffic_distribution::PREFER_CLOSE) => true,
            Some(traffic_distribution::PREFER_SAME_ZONE) | Some(traffic_distribution::PREFER_SAME_NODE) => {
                options.prefer_same_traffic_distribution
            }
            _ => false,
        };
        Ok(ServiceInfo {
            ports: spec.ports().to_vec(),
            name: m.name().to_owned(),
            namespace: m.namespace().to_owned(),
            uid: m.uid.clone().unwrap_or_default(),
            user_labels,
            headless: ip.is_empty() || ip == svcnet_model::CLUSTER_IP_NONE,
            prefix: slice_name_prefix(m.name()),
            families: address_types(service),
            publish_not_ready: spec.publish_not_ready_addresses.unwrap_or(false),
            deleting: m.deletion_timestamp.is_some(),
            keep_hints: hints_annotation || td_valid,
            selector: selector.into_iter().collect(),
        })
    }

    /// True when the Service selects `pod` (same namespace, selector matches its labels).
    pub fn selects(&self, pod: &Pod) -> bool {
        let labels = pod.metadata.labels.as_ref();
        pod.metadata.namespace() == self.namespace
            && self
                .selector
                .iter()
                .all(|(k, v)| labels.and_then(|l| l.get(k)) == Some(v))
    }

    pub fn owner_reference(&self) -> OwnerReference {
        OwnerReference {
            api_version: "v1".into(),
            kind: "Service".into(),
            name: self.name.clone(),
            uid: self.uid.clone(),
            controller: Some(true),
            block_owner_deletion: Some(true),
        }
    }

    /// `ownedBy`: some owner reference is this Service (kind, apiVersion and UID).
    pub fn owns(&self, slice: &EndpointSlice) -> bool {
        slice
            .metadata
            .owner_references
            .iter()
            .flatten()
            .any(|o| o.uid == self.uid && o.kind == "Service" && o.api_version == "v1")
    }

    /// `setEndpointSliceLabels`: the labels a slice should carry, and whether its non-reserved
    /// labels differ from the Service's.
    pub fn slice_labels(&self, current: Option<&StringMap>) -> (StringMap, bool) {
        let mut n = 0usize;
        let mut same = true;
        for (k, v) in current.iter().flat_map(|m| m.iter()) {
            if is_reserved_label(k) {
                continue;
            }
            n += 1;
            if self.user_labels.get(k) != Some(v) {
                same = false;
            }
        }
        let changed = !same || n != self.user_labels.len();
        (self.labels(), changed)
    }

    /// The full label set of this Service's slices.
    pub fn labels(&self) -> StringMap {
        let mut l = self.user_labels.clone();
        if self.headless {
            l.insert(HEADLESS.to_owned(), String::new());
        }
        l.insert(slice_labels::SERVICE_NAME.to_owned(), self.name.clone());
        l.insert(
            slice_labels::MANAGED_BY.to_owned(),
            slice_labels::CONTROLLER_NAME.to_owned(),
        );
        l
    }

    /// `newEndpointSlice`: an empty slice of this Service with the given ports.
    pub fn new_slice(&self, ports: Vec<svcnet_model::EndpointPort>, family: Family) -> EndpointSlice {
        let mut s = empty_slice(family, ports);
        s.metadata.generate_name = Some(self.prefix.clone());
        s.metadata.namespace = Some(self.namespace.clone());
        s.metadata.owner_references = Some(vec![self.owner_reference()]);
        s.metadata.labels = Some(self.labels());
        s
    }
}
