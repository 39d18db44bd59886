//! `IntOrString`: a port given as a number or as a name.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/apimachinery/pkg/util/intstr/intstr.go`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A value that is either an integer or a string, as `targetPort` and NetworkPolicy ports are.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum IntOrString {
    /// A number, e.g. `8080`.
    Int(i32),
    /// A name, e.g. `http`.
    String(String),
}

impl Default for IntOrString {
    fn default() -> Self {
        IntOrString::Int(0)
    }
}

impl IntOrString {
    /// The number, when this is an `Int`.
    pub fn as_int(&self) -> Option<i32> {
        match self {
            IntOrString::Int(i) => Some(*i),
            IntOrString::String(_) => None,
        }
    }

    /// The name, when this is a `String`.
    pub fn as_str(&self) -> Option<&str> {
        match self {
            IntOrString::String(s) => Some(s),
            IntOrString::Int(_) => None,
        }
    }

    /// True for `Int(0)` and `String("")`: the "unset" values defaulting replaces.
    pub fn is_zero(&self) -> bool {
        matches!(self, IntOrString::Int(0)) || matches!(self, IntOrString::String(s) if s.is_empty())
    }
}

impl fmt::Display for IntOrString {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            IntOrString::Int(i) => write!(f, "{i}"),
            IntOrString::String(s) => f.write_str(s),
        }
    }
}

impl From<i32> for IntOrString {
    fn from(v: i32) -> Self {
        IntOrString::Int(v)
    }
}

impl From<&str> for IntOrString {
    fn from(v: &str) -> Self {
        IntOrString::String(v.to_owned())
    }
}

impl Serialize for IntOrString {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            IntOrString::Int(i) => s.serialize_i32(*i),
            IntOrString::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for IntOrString {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = IntOrString;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an integer or a string")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<IntOrString, E> {
                i32::try_from(v)
                    .map(IntOrString::Int)
                    .map_err(|_| E::custom(format!("integer {v} out of range for int32")))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<IntOrString, E> {
                i32::try_from(v)
                    .map(IntOrString::Int)
                    .map_err(|_| E::custom(format!("integer {v} out of range for int32")))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<IntOrString, E> {
                Ok(IntOrString::String(v.to_owned()))
            }
            fn visit_string<E: serde::de::Error>(self, v: String) -> Result<IntOrString, E> {
                Ok(IntOrString::String(v))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_both_forms() {
        let a: IntOrString = serde_json::from_str("8080").unwrap();
        assert_eq!(a, IntOrString::Int(8080));
        let b: IntOrString = serde_json::from_str("\"http\"").unwrap();
        assert_eq!(b, IntOrString::String("http".into()));
        assert_eq!(serde_json::to_string(&a).unwrap(), "8080");
        assert_eq!(serde_json::to_string(&b).unwrap(), "\"http\"");
        assert!(serde_json::from_str::<IntOrString>("99999999999").is_err());
    }
}
