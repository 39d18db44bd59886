//! Conversions between svcnet-model's types and the [`k8s_openapi`] types kube-rs hands a
//! controller (feature `k8s-openapi`, off by default).
//!
//! | svcnet-model | k8s-openapi |
//! |---|---|
//! | [`Service`](crate::Service) | `api::core::v1::Service` |
//! | [`Endpoints`](crate::Endpoints) | `api::core::v1::Endpoints` |
//! | [`Pod`](crate::Pod) | `api::core::v1::Pod` |
//! | [`Node`](crate::Node) | `api::core::v1::Node` |
//! | [`EndpointSlice`](crate::EndpointSlice) | `api::discovery::v1::EndpointSlice` |
//! | [`NetworkPolicy`](crate::NetworkPolicy) | `api::networking::v1::NetworkPolicy` |
//! | [`ServiceCidr`](crate::ServiceCidr) | `api::networking::v1::ServiceCIDR` |
//! | [`IpAddress`](crate::IpAddress) | `api::networking::v1::IPAddress` |
//!
//! and every type inside them (ObjectMeta, LabelSelector, IntOrString, Quantity, ...).
//!
//! ## Directions
//! - **k8s-openapi → svcnet** is `From`: nothing can fail. Fields svcnet does not model (a Pod's
//!   volumes, `managedFields`, a Node's images, ...) are dropped; `apiVersion` and `kind` are
//!   set from the k8s-openapi type; times are written as Kubernetes writes them
//!   (`2006-01-02T15:04:05Z`, whole seconds, UTC).
//! - **svcnet → k8s-openapi** is `From` for the parts where nothing can fail and `TryFrom` with
//!   a [`ConversionError`] naming the field for the objects and the parts that hold a time or a
//!   field the k8s-openapi type requires: a time that is not RFC 3339, an `apiVersion` or
//!   `kind` other than the type's, a required field that is unset (a metav1 `Condition`'s
//!   `lastTransitionTime`, an IPAddress's `spec.parentRef` with its `name` and `resource`), or a
//!   Node condition's `lastProbeTime` (Node conditions have none).
//!
//! An object svcnet read from `kubectl get -o json` survives svcnet → k8s-openapi → svcnet
//! unchanged, but for `apiVersion`/`kind` (set when missing), times (normalised to whole
//! seconds in UTC) and a Pod's `spec.containers` (empty and absent are one in k8s-openapi; svcnet
//! gets absent back).
//!
//! ## Kubernetes version
//! k8s-openapi selects the Kubernetes version of its types by a cargo feature that only the
//! final binary may enable (`v1_33` … `v1_37`, or `latest`, today `v1_37`); a library such as
//! svcnet-model must not. svcnet targets Kubernetes **v1.37** and is built and tested with
//! `k8s-openapi = { version = "0.29", features = ["latest"] }`. The conversions compile against
//! every version k8s-openapi 0.29 offers (v1.33 … v1.37), so a controller picks its version by
//! enabling that feature on its own k8s-openapi dependency:
//!
//! ```toml
//! [dependencies]
//! svcnet-model = { version = "0.1", features = ["k8s-openapi"] }
//! k8s-openapi = { version = "0.29", features = ["v1_35"] }
//! ```
//!
//! Where k8s-openapi's types differ between versions, the conversions follow the version chosen:
//! before v1.36 an EndpointSlice's `endpoints` is a required list (an absent list comes back
//! empty) and an IPAddress's `spec` is optional (from v1.36 on, an unset `spec` is refused).
//!
//! ## Example
//! ```
//! use k8s_openapi::api::core::v1 as core;
//! use svcnet_model::{Service, defaults, validation};
//!
//! let from_kube = core::Service {
//!     metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
//!         name: Some("web".into()),
//!         namespace: Some("shop".into()),
//!         ..Default::default()
//!     },
//!     spec: Some(core::ServiceSpec {
//!         ports: Some(vec![core::ServicePort { port: 80, ..Default::default() }]),
//!         ..Default::default()
//!     }),
//!     status: None,
//! };
//! let mut svc = Service::from(from_kube);
//! defaults::default_service(&mut svc);
//! assert!(validation::validate_service_create(&svc).is_empty());
//! let back = core::Service::try_from(svc)?;
//! assert_eq!(back.spec.unwrap().ports.unwrap()[0].protocol.as_deref(), Some("TCP"));
//! # Ok::<(), svcnet_model::k8s::ConversionError>(())
//! ```

mod core;
mod discovery;
mod meta;
mod networking;

use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use thiserror::Error;

/// Why an svcnet value has no k8s-openapi counterpart; `field` is the Kubernetes field path
/// (`status.conditions[0].lastTransitionTime`).
#[derive(Debug, Clone, PartialEq, Eq, Error)]
#[non_exhaustive]
pub enum ConversionError {
    /// The k8s-openapi type requires the field, and it is not set.
    #[error("{field}: Required value: the k8s-openapi type has no value for an unset field")]
    Missing {
        /// The field.
        field: String,
    },
    /// A time that is not RFC 3339 (`2006-01-02T15:04:05Z`).
    #[error("{field}: Invalid value: {value:?}: not an RFC 3339 time")]
    Time {
        /// The field.
        field: String,
        /// The text found.
        value: String,
    },
    /// `apiVersion` or `kind` names another type than the k8s-openapi type converted to.
    #[error("{field}: Invalid value: {value:?}: the k8s-openapi type is {expected}")]
    TypeMeta {
        /// `apiVersion` or `kind`.
        field: String,
        /// The text found.
        value: String,
        /// What the k8s-openapi type carries.
        expected: &'static str,
    },
    /// A field the k8s-openapi type does not have (a Node condition's `lastProbeTime`).
    #[error("{field}: Invalid value: {value:?}: the k8s-openapi type has no such field")]
    NoSuchField {
        /// The field.
        field: String,
        /// The value that would be lost.
        value: String,
    },
}

impl ConversionError {
    /// The field the error is about.
    pub fn field(&self) -> &str {
        match self {
            ConversionError::Missing { field }
            | ConversionError::Time { field, .. }
            | ConversionError::TypeMeta { field, .. }
            | ConversionError::NoSuchField { field, .. } => field,
        }
    }

    /// The same error about `prefix.<field>` (`prefix[<i>]` style prefixes work too).
    pub(crate) fn under(mut self, prefix: impl fmt::Display) -> Self {
        let field = match &mut self {
            ConversionError::Missing { field }
            | ConversionError::Time { field, .. }
            | ConversionError::TypeMeta { field, .. }
            | ConversionError::NoSuchField { field, .. } => field,
        };
        *field = if field.starts_with('[') {
            format!("{prefix}{field}")
        } else {
            format!("{prefix}.{field}")
        };
        self
    }
}

/// Converts every element, naming the index of the first that fails.
pub(crate) fn try_list<A, B>(
    list: Option<Vec<A>>,
    name: &str,
    f: impl Fn(A) -> Result<B, ConversionError>,
) -> Result<Option<Vec<B>>, ConversionError> {
    list.map(|v| {
        v.into_iter()
            .enumerate()
            .map(|(i, x)| f(x).map_err(|e| e.under(format_args!("{name}[{i}]"))))
            .collect()
    })
    .transpose()
}

/// Parses an RFC 3339 time for `field`.
pub(crate) fn time(value: Option<String>, field: &str) -> Result<Option<Time>, ConversionError> {
    value
        .map(|v| {
            v.parse::<k8s_openapi::jiff::Timestamp>()
                .map(Time)
                .map_err(|_| ConversionError::Time {
                    field: field.to_owned(),
                    value: v,
                })
        })
        .transpose()
}

/// A time as Kubernetes writes it: whole seconds, UTC, `Z`.
pub(crate) fn time_text(t: Time) -> String {
    k8s_openapi::jiff::fmt::strtime::format("%Y-%m-%dT%H:%M:%SZ", t.0).unwrap_or_else(|_| t.0.to_string())
}

/// Checks `apiVersion` and `kind` against the k8s-openapi type `K`.
pub(crate) fn check_type_meta<K: k8s_openapi::Resource>(
    api_version: Option<String>,
    kind: Option<String>,
) -> Result<(), ConversionError> {
    if let Some(v) = api_version
        && v != K::API_VERSION
    {
        return Err(ConversionError::TypeMeta {
            field: "apiVersion".into(),
            value: v,
            expected: K::API_VERSION,
        });
    }
    if let Some(k) = kind
        && k != K::KIND
    {
        return Err(ConversionError::TypeMeta {
            field: "kind".into(),
            value: k,
            expected: K::KIND,
        });
    }
    Ok(())
}

/// `apiVersion` and `kind` of the k8s-openapi type `K`, as svcnet holds them.
pub(crate) fn type_meta<K: k8s_openapi::Resource>() -> (Option<String>, Option<String>) {
    (Some(K::API_VERSION.to_owned()), Some(K::KIND.to_owned()))
}

/// One field's conversion, by how its svcnet and k8s-openapi types relate.
macro_rules! conv {
    (same, $v:expr) => {
        $v
    };
    (into, $v:expr) => {
        ::core::convert::Into::into($v)
    };
    (opt, $v:expr) => {
        $v.map(::core::convert::Into::into)
    };
    (vec, $v:expr) => {
        $v.into_iter().map(::core::convert::Into::into).collect()
    };
    (optvec, $v:expr) => {
        $v.map(|v| v.into_iter().map(::core::convert::Into::into).collect())
    };
    (optmap, $v:expr) => {
        $v.map(|m| {
            m.into_iter()
                .map(|(k, v)| (k, ::core::convert::Into::into(v)))
                .collect()
        })
    };
}

/// `From` both ways, field by field. The svcnet side is destructured exhaustively, so a field
/// added to svcnet-model cannot be forgotten here; k8s-openapi fields svcnet does not model are
/// left at their defaults one way and dropped the other.
macro_rules! both_ways {
    ($svc:path, $k8s:path { $($f:ident: $how:ident),* $(,)? }) => {
        impl From<$svc> for $k8s {
            #[allow(clippy::needless_update)]
            fn from(x: $svc) -> Self {
                let $svc { $($f),* } = x;
                $k8s { $($f: $crate::k8s::conv!($how, $f),)* ..Default::default() }
            }
        }
        impl From<$k8s> for $svc {
            fn from(x: $k8s) -> Self {
                let $k8s { $($f,)* .. } = x;
                $svc { $($f: $crate::k8s::conv!($how, $f)),* }
            }
        }
    };
}

/// The `TryFrom` to k8s-openapi of one field of a top-level object: a [`conv!`] kind, `tryopt`
/// (an optional part that can fail, its errors put under the field's name) or
/// `custom(to, from)` (`to` returns a `Result`).
macro_rules! field_to_k8s {
    (tryopt, $f:ident) => {
        $f.map(::core::convert::TryFrom::try_from)
            .transpose()
            .map_err(|e: $crate::k8s::ConversionError| e.under(stringify!($f)))?
    };
    (custom($to:path, $from:path), $f:ident) => {
        $to($f)?
    };
    ($how:ident, $f:ident) => {
        $crate::k8s::conv!($how, $f)
    };
}

/// The `From` k8s-openapi of one field of a top-level object (see [`field_to_k8s!`]).
macro_rules! field_from_k8s {
    (tryopt, $f:ident) => {
        $f.map(::core::convert::Into::into)
    };
    (custom($to:path, $from:path), $f:ident) => {
        $from($f)
    };
    ($how:ident, $f:ident) => {
        $crate::k8s::conv!($how, $f)
    };
}

/// The two conversions of a top-level object, written once for every kind: toward
/// k8s-openapi, `apiVersion` and `kind` are checked against the k8s-openapi type and
/// `metadata` goes through the ObjectMeta conversion (`TryFrom`: its times can be malformed);
/// from k8s-openapi, `apiVersion` and `kind` are set from the type and `metadata` converts
/// with `From`. The other fields go by [`field_to_k8s!`] and [`field_from_k8s!`]. Attributes
/// given first (doc comments) go on `try_from`.
macro_rules! object {
    ($(#[$attr:meta])* $svc:ident, $k8s:path { $($f:ident: $how:ident $(($to:path, $from:path))?),* $(,)? }) => {
        impl TryFrom<$svc> for $k8s {
            type Error = $crate::k8s::ConversionError;

            $(#[$attr])*
            fn try_from(x: $svc) -> Result<Self, $crate::k8s::ConversionError> {
                let $svc { api_version, kind, metadata, $($f),* } = x;
                $crate::k8s::check_type_meta::<$k8s>(api_version, kind)?;
                let out = Self {
                    metadata: metadata.try_into()?,
                    $($f: $crate::k8s::field_to_k8s!($how $(($to, $from))?, $f),)*
                };
                Ok(out)
            }
        }

        impl From<$k8s> for $svc {
            fn from(x: $k8s) -> Self {
                let (api_version, kind) = $crate::k8s::type_meta::<$k8s>();
                let $k8s { metadata, $($f),* } = x;
                $svc {
                    api_version,
                    kind,
                    metadata: metadata.into(),
                    $($f: $crate::k8s::field_from_k8s!($how $(($to, $from))?, $f),)*
                }
            }
        }
    };
}

pub(crate) use both_ways;
pub(crate) use conv;
pub(crate) use field_from_k8s;
pub(crate) use field_to_k8s;
pub(crate) use object;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn errors_name_the_nested_field() {
        let e = ConversionError::Missing {
            field: "lastTransitionTime".into(),
        }
        .under("[2]")
        .under("conditions")
        .under("status");
        assert_eq!(e.field(), "status.conditions[2].lastTransitionTime");
        assert!(
            e.to_string()
                .starts_with("status.conditions[2].lastTransitionTime: Required value")
        );
    }

    #[test]
    fn times_round_trip_in_kubernetes_form() {
        let t = time(Some("2024-05-01T10:00:00Z".into()), "x").unwrap().unwrap();
        assert_eq!(time_text(t), "2024-05-01T10:00:00Z");
        let t = time(Some("2024-05-01T12:00:00.5+02:00".into()), "x")
            .unwrap()
            .unwrap();
        assert_eq!(time_text(t), "2024-05-01T10:00:00Z");
        let e = time(Some("yesterday".into()), "metadata.creationTimestamp").unwrap_err();
        assert_eq!(e.field(), "metadata.creationTimestamp");
    }
}
