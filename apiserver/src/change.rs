//! What the API server changed in a request before validating it.
//!
//! Follows Kubernetes v1.37.2: the fields `pkg/registry/core/service/storage/storage.go` and the
//! REST strategies (`strategy.go`) overwrite or drop.

use std::fmt;

/// How a field was changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChangeKind {
    /// The field was cleared (`dropTypeDependentFields`, `dropTopologyOnV1`).
    Dropped,
    /// The field was empty in the request and was given the stored object's value
    /// (`patchAllocatedValues`, the family policy, an unconditional update's resourceVersion).
    FilledFromStored,
    /// A list was cut to its first entry (a `SingleStack` update of a dual-stack Service).
    Trimmed,
    /// The field was set from another field (an EndpointSlice's `nodeName` from its
    /// deprecated topology).
    Moved,
}

impl ChangeKind {
    /// The verb a message starts with: `dropped`, `filled`, `trimmed`, `moved`.
    pub fn verb(self) -> &'static str {
        match self {
            ChangeKind::Dropped => "dropped",
            ChangeKind::FilledFromStored => "filled",
            ChangeKind::Trimmed => "trimmed",
            ChangeKind::Moved => "set",
        }
    }
}

/// One change the API server makes to a request before validation: which field, how, the
/// value involved (as JSON text: the dropped value, or the value filled in) and why.
///
/// ```
/// use svcnet_apiserver::{Change, ChangeKind};
/// let c = Change::new("spec.loadBalancerClass", ChangeKind::Dropped, "\"example.com/lb\"", "type is no longer LoadBalancer");
/// assert_eq!(c.to_string(), "dropped spec.loadBalancerClass (\"example.com/lb\"): type is no longer LoadBalancer");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Change {
    /// The field path, e.g. `spec.ports[0].nodePort`.
    pub field: String,
    /// What happened to it.
    pub kind: ChangeKind,
    /// The value dropped or filled in, as JSON text.
    pub value: String,
    /// Why, in a few words.
    pub reason: &'static str,
}

impl Change {
    /// A change of `field`.
    pub fn new(
        field: impl Into<String>,
        kind: ChangeKind,
        value: impl Into<String>,
        reason: &'static str,
    ) -> Self {
        Change {
            field: field.into(),
            kind,
            value: value.into(),
            reason,
        }
    }
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {}", self.kind.verb(), self.field)?;
        if !self.value.is_empty() {
            write!(f, " ({})", self.value)?;
        }
        write!(f, ": {}", self.reason)
    }
}

/// A string as JSON text.
pub(crate) fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// A list of strings as JSON text.
pub(crate) fn json_list(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| json_str(s)).collect();
    format!("[{}]", inner.join(","))
}
