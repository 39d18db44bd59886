//! One request, any kind: the answer type, the dispatch by kind and the steps every kind
//! shares (merging identical causes, the resourceVersion of an unconditional update).
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/apiserver/pkg/registry/rest/create.go` and
//! `update.go` (`BeforeCreate`, `BeforeUpdate`).

use rand_core::RngCore;
use svcnet_model::field::{ErrorList, FieldError, Path};
use svcnet_model::{Object, ObjectMeta, defaults, validation};

use crate::change::{Change, ChangeKind, json_str};
use crate::cluster::Cluster;
use crate::endpointslice::{create_endpoint_slice, update_endpoint_slice};
use crate::service::{create_service, update_service};

/// Which step of the API server gave the answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Step {
    /// The Service allocator refused the request before validation ran
    /// (`pkg/registry/core/service/storage/alloc.go`).
    Allocator,
    /// Validation ran (an empty error list: the request is accepted).
    Validation,
}

/// What the API server answers to one request.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Answer {
    /// The causes of the refusal, as the Status lists them; empty when accepted.
    pub errors: ErrorList,
    /// What the server changed in the request before answering (drops, values carried over
    /// from the stored object, trims), in the order it made them.
    pub changes: Vec<Change>,
    /// Which step answered.
    pub step: Step,
}

impl Answer {
    /// The answer of validation alone: `errors` as the causes, nothing changed (for callers
    /// that run `svcnet_model::validation` themselves, as `svcnet validate --no-defaults` does).
    pub fn from_validation(errors: ErrorList) -> Answer {
        Answer {
            errors,
            changes: Vec::new(),
            step: Step::Validation,
        }
    }

    /// True when the request is accepted.
    pub fn is_valid(&self) -> bool {
        self.errors.is_empty()
    }

    /// True when the refusal is an internal error (HTTP 500) rather than an invalid object.
    pub fn is_internal(&self) -> bool {
        !self.errors.is_empty()
            && self
                .errors
                .iter()
                .all(|e| e.type_ == svcnet_model::field::ErrorType::Internal && e.field.is_empty())
    }
}

/// Answers a create of `obj` as kube-apiserver v1.37.2 would: defaulting, the REST strategy,
/// the Service allocator (against `cluster` when given: ranges and what is in use; without
/// it, only the checks that need no allocator state), then validation with identical causes
/// merged. `obj` is left as the server would have stored it (when valid).
///
/// Kinds the API server validates without a special strategy here (ServiceCIDR, IPAddress,
/// NetworkPolicy) are defaulted and validated; Pods, Nodes and Endpoints are not validated
/// and answer valid.
///
/// ```
/// use svcnet_apiserver::{Cluster, Step, create};
/// use svcnet_allocators::SplitMix64;
/// use svcnet_model::Object;
///
/// let svc: svcnet_model::Service = serde_json::from_str(r#"{
///   "metadata": {"name": "dns", "namespace": "default"},
///   "spec": {"type": "NodePort", "selector": {"app": "dns"}, "ports": [
///     {"name": "a", "protocol": "TCP", "port": 53, "nodePort": 30053},
///     {"name": "b", "protocol": "UDP", "port": 54, "nodePort": 30053}]}}"#).unwrap();
/// let mut cluster = Cluster::parse(&["10.96.0.0/16"], "30000-32767").unwrap();
/// let answer = create(&mut Object::Service(Box::new(svc)), Some(&mut cluster), &mut SplitMix64::new(1));
/// assert_eq!(answer.step, Step::Allocator);
/// assert_eq!(answer.errors[0].to_string(),
///     "spec.ports[1].nodePort: Invalid value: 30053: provided port is already allocated");
/// ```
pub fn create(obj: &mut Object, cluster: Option<&mut Cluster>, rng: &mut dyn RngCore) -> Answer {
    match obj {
        Object::Service(svc) => create_service(svc, cluster, rng),
        Object::EndpointSlice(slice) => create_endpoint_slice(slice),
        other => {
            defaults::default_object(other);
            let mut errors = validation::validate_object(other, None);
            merge_duplicates(&mut errors);
            Answer {
                errors,
                changes: Vec::new(),
                step: Step::Validation,
            }
        }
    }
}

/// Answers an update of `stored` (the object as the server holds it) to `obj`, as
/// [`create`] does for a create. An update without `metadata.resourceVersion` is an
/// unconditional update: it gets the stored one. A `stored` of another kind answers one
/// internal error.
pub fn update(
    obj: &mut Object,
    stored: &Object,
    cluster: Option<&mut Cluster>,
    rng: &mut dyn RngCore,
) -> Answer {
    match (obj, stored) {
        (Object::Service(svc), Object::Service(old)) => update_service(svc, old, cluster, rng),
        (Object::EndpointSlice(slice), Object::EndpointSlice(old)) => update_endpoint_slice(slice, old),
        (o, s) if o.kind() != s.kind() => Answer {
            errors: vec![FieldError::internal(
                &Path::new("kind"),
                format!("cannot validate an update of a {} to a {}", s.kind(), o.kind()),
            )],
            changes: Vec::new(),
            step: Step::Validation,
        },
        (o, s) => {
            defaults::default_object(o);
            let mut old = s.clone();
            defaults::default_object(&mut old);
            let mut changes = Vec::new();
            if let Some(meta) = meta_mut(o) {
                fill_resource_version(meta, old.metadata(), &mut changes);
            }
            let mut errors = validation::validate_object(o, Some(&old));
            merge_duplicates(&mut errors);
            Answer {
                errors,
                changes,
                step: Step::Validation,
            }
        }
    }
}

fn meta_mut(o: &mut Object) -> Option<&mut ObjectMeta> {
    match o {
        Object::Service(x) => Some(&mut x.metadata),
        Object::EndpointSlice(x) => Some(&mut x.metadata),
        Object::Endpoints(x) => Some(&mut x.metadata),
        Object::ServiceCidr(x) => Some(&mut x.metadata),
        Object::IpAddress(x) => Some(&mut x.metadata),
        Object::Pod(x) => Some(&mut x.metadata),
        Object::Node(x) => Some(&mut x.metadata),
        Object::NetworkPolicy(x) => Some(&mut x.metadata),
        _ => None,
    }
}

/// The stand-in for a stored object's resourceVersion when the object given has none.
const STORED_RESOURCE_VERSION: &str = "1";

/// An unconditional update (no `resourceVersion`) gets the stored object's.
pub(crate) fn fill_resource_version(meta: &mut ObjectMeta, stored: &ObjectMeta, changes: &mut Vec<Change>) {
    if meta.resource_version.as_deref().unwrap_or("").is_empty() {
        let rv = stored
            .resource_version
            .clone()
            .filter(|v| !v.is_empty())
            .unwrap_or_else(|| STORED_RESOURCE_VERSION.to_owned());
        changes.push(Change::new(
            "metadata.resourceVersion",
            ChangeKind::FilledFromStored,
            json_str(&rv),
            "an update without one is unconditional",
        ));
        meta.resource_version = Some(rv);
    }
}

/// Drops causes identical to an earlier one (same type, field, value and detail), keeping
/// the first of each: the API server returns each distinct cause once.
///
/// ```
/// use svcnet_model::field::{FieldError, Path};
/// let e = FieldError::required(&Path::new("spec").child("type"), "");
/// let mut list = vec![e.clone(), e.clone()];
/// svcnet_apiserver::merge_duplicates(&mut list);
/// assert_eq!(list, vec![e]);
/// ```
pub fn merge_duplicates(errors: &mut ErrorList) {
    if errors.len() < 2 {
        return;
    }
    let mut i = 1;
    while i < errors.len() {
        if errors[..i].contains(&errors[i]) {
            errors.remove(i);
        } else {
            i += 1;
        }
    }
}
