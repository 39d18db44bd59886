//! Kubernetes-style field errors: a path, a type, the bad value and a detail.
//!
//! Follows Kubernetes v1.37.2:
//! `staging/src/k8s.io/apimachinery/pkg/util/validation/field/errors.go` and `path.go`.
//!
//! ```
//! use svcnet_model::field::{FieldError, Path};
//! let p = Path::new("spec").child("ports").index(0).child("port");
//! let e = FieldError::invalid(&p, 0, "must be between 1 and 65535, inclusive");
//! assert_eq!(e.to_string(), "spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive");
//! ```

use std::fmt;

use compact_str::CompactString;
use serde::{Deserialize, Serialize};

/// The kind of a field error, as `field.ErrorType` names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum ErrorType {
    /// `FieldValueNotFound`.
    NotFound,
    /// `FieldValueRequired`.
    Required,
    /// `FieldValueDuplicate`.
    Duplicate,
    /// `FieldValueInvalid`.
    Invalid,
    /// `FieldValueNotSupported`.
    NotSupported,
    /// `FieldValueForbidden`.
    Forbidden,
    /// `FieldValueTooLong`.
    TooLong,
    /// `FieldValueTooMany`.
    TooMany,
    /// `InternalError`.
    Internal,
    /// `FieldValueTypeInvalid`.
    TypeInvalid,
}

impl ErrorType {
    /// The reason string used in a `Status` cause, e.g. `FieldValueInvalid`.
    pub fn reason(self) -> &'static str {
        match self {
            ErrorType::NotFound => "FieldValueNotFound",
            ErrorType::Required => "FieldValueRequired",
            ErrorType::Duplicate => "FieldValueDuplicate",
            ErrorType::Invalid => "FieldValueInvalid",
            ErrorType::NotSupported => "FieldValueNotSupported",
            ErrorType::Forbidden => "FieldValueForbidden",
            ErrorType::TooLong => "FieldValueTooLong",
            ErrorType::TooMany => "FieldValueTooMany",
            ErrorType::Internal => "InternalError",
            ErrorType::TypeInvalid => "FieldValueTypeInvalid",
        }
    }

    /// The human text that starts a message, e.g. `Invalid value`.
    pub fn text(self) -> &'static str {
        match self {
            ErrorType::NotFound => "Not found",
            ErrorType::Required => "Required value",
            ErrorType::Duplicate => "Duplicate value",
            ErrorType::Invalid => "Invalid value",
            ErrorType::NotSupported => "Unsupported value",
            ErrorType::Forbidden => "Forbidden",
            ErrorType::TooLong => "Too long",
            ErrorType::TooMany => "Too many",
            ErrorType::Internal => "Internal error",
            ErrorType::TypeInvalid => "Invalid value",
        }
    }
}

/// The offending value carried by an error, printed as Kubernetes prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub enum BadValue {
    /// No value (printed `null`).
    Null,
    /// A string (printed quoted).
    Str(String),
    /// An integer (printed bare).
    Int(i64),
    /// A boolean (printed bare).
    Bool(bool),
    /// Any other value, already rendered as Kubernetes would print it.
    Raw(String),
}

impl fmt::Display for BadValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BadValue::Null => f.write_str("null"),
            BadValue::Str(s) => f.write_str(&go_quote(s)),
            BadValue::Int(i) => write!(f, "{i}"),
            BadValue::Bool(b) => write!(f, "{b}"),
            BadValue::Raw(s) => f.write_str(s),
        }
    }
}

/// Quotes a string as Go's `strconv.Quote` (and so `%q`) does: `"` and `\\` escaped, the usual
/// C escapes for control characters, `\xNN` for other ASCII controls, and `\uNNNN` (or
/// `\UNNNNNNNN` beyond the BMP) for other characters Go does not print: controls, spaces other
/// than U+0020, line and paragraph separators, format characters and private-use characters.
/// (Unassigned code points, which Go also escapes, are printed as they are.)
pub fn go_quote(s: &str) -> String {
    use std::fmt::Write;
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() || not_printed_by_go(c) => {
                if u32::from(c) < 0x1_0000 {
                    let _ = write!(out, "\\u{:04x}", u32::from(c));
                } else {
                    let _ = write!(out, "\\U{:08x}", u32::from(c));
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Characters outside Go's `unicode.IsPrint` beyond the controls: the space separators other
/// than U+0020 (Zs), U+2028 and U+2029 (Zl, Zp), the format characters (Cf) and the private-use
/// areas (Co), as of Unicode 15.
fn not_printed_by_go(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00A0
            | 0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x1680
            | 0x180E
            | 0x2000..=0x200F
            | 0x2028..=0x202F
            | 0x205F..=0x206F
            | 0x3000
            | 0xE000..=0xF8FF
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
            | 0xF0000..=0xFFFFD
            | 0x10_0000..=0x10_FFFD
    )
}

impl From<&str> for BadValue {
    fn from(v: &str) -> Self {
        BadValue::Str(v.to_owned())
    }
}
impl From<String> for BadValue {
    fn from(v: String) -> Self {
        BadValue::Str(v)
    }
}
impl From<&String> for BadValue {
    fn from(v: &String) -> Self {
        BadValue::Str(v.clone())
    }
}
impl From<i32> for BadValue {
    fn from(v: i32) -> Self {
        BadValue::Int(v.into())
    }
}
impl From<i64> for BadValue {
    fn from(v: i64) -> Self {
        BadValue::Int(v)
    }
}
impl From<usize> for BadValue {
    fn from(v: usize) -> Self {
        BadValue::Int(i64::try_from(v).unwrap_or(i64::MAX))
    }
}
impl From<bool> for BadValue {
    fn from(v: bool) -> Self {
        BadValue::Bool(v)
    }
}

/// A field path such as `spec.ports[0].port` or `metadata.annotations[key]`.
///
/// Paths up to 24 bytes live inline, so building the paths of a valid object allocates
/// nothing in most cases; the text is copied out only when an error is made.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Path(CompactString);

impl Path {
    /// A root path (`spec`, `metadata`, ...).
    pub fn new(root: &str) -> Self {
        Path(CompactString::new(root))
    }

    /// The path of field `name` under this one (`spec` → `spec.ports`); from an empty path,
    /// `name` alone.
    pub fn child(&self, name: &str) -> Self {
        if self.0.is_empty() {
            return Path(CompactString::new(name));
        }
        let mut p = CompactString::with_capacity(self.0.len() + 1 + name.len());
        p.push_str(&self.0);
        p.push('.');
        p.push_str(name);
        Path(p)
    }

    /// The path of element `i` of this list (`spec.ports` → `spec.ports[0]`).
    pub fn index(&self, i: usize) -> Self {
        use std::fmt::Write;
        let mut p = CompactString::with_capacity(self.0.len() + 6);
        p.push_str(&self.0);
        let _ = write!(p, "[{i}]");
        Path(p)
    }

    /// The path of entry `key` of this map, unquoted (`metadata.annotations` →
    /// `metadata.annotations[example.com/x]`), as Kubernetes writes it.
    pub fn key(&self, key: &str) -> Self {
        let mut p = CompactString::with_capacity(self.0.len() + 2 + key.len());
        p.push_str(&self.0);
        p.push('[');
        p.push_str(key);
        p.push(']');
        Path(p)
    }

    /// The path as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Path {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One validation failure.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FieldError {
    /// What kind of failure.
    pub type_: ErrorType,
    /// The field path.
    pub field: String,
    /// The offending value.
    pub bad_value: BadValue,
    /// Why it is wrong.
    pub detail: String,
}

impl FieldError {
    fn new(type_: ErrorType, path: &Path, bad_value: BadValue, detail: impl Into<String>) -> Self {
        FieldError {
            type_,
            field: path.0.to_string(),
            bad_value,
            detail: detail.into(),
        }
    }

    /// `field.Required`: a missing value. Printed `<field>: Required value[: detail]`; no
    /// value is shown.
    pub fn required(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Required, path, BadValue::Str(String::new()), detail)
    }

    /// `field.Invalid`: a value that is malformed or out of range, with why in `detail`.
    /// Printed `<field>: Invalid value: <value>[: detail]`.
    pub fn invalid(path: &Path, value: impl Into<BadValue>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Invalid, path, value.into(), detail)
    }

    /// `field.Duplicate`: a value that must be unique appears again. Printed
    /// `<field>: Duplicate value: <value>`.
    pub fn duplicate(path: &Path, value: impl Into<BadValue>) -> Self {
        Self::new(ErrorType::Duplicate, path, value.into(), "")
    }

    /// `field.NotFound`: a reference to something that does not exist. Printed
    /// `<field>: Not found: <value>`.
    pub fn not_found(path: &Path, value: impl Into<BadValue>) -> Self {
        Self::new(ErrorType::NotFound, path, value.into(), "")
    }

    /// `field.NotSupported`: the detail lists the supported values, quoted, as Kubernetes does.
    pub fn not_supported<S: AsRef<str>>(path: &Path, value: impl Into<BadValue>, supported: &[S]) -> Self {
        let detail = if supported.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = supported.iter().map(|s| go_quote(s.as_ref())).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        Self::new(ErrorType::NotSupported, path, value.into(), detail)
    }

    /// `field.Forbidden`: a field that may not be set (or changed) here, with why in `detail`.
    /// Printed `<field>: Forbidden[: detail]`; no value is shown.
    pub fn forbidden(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Forbidden, path, BadValue::Str(String::new()), detail)
    }

    /// `field.TooLong` with the maximum length in bytes.
    pub fn too_long(path: &Path, value: impl Into<BadValue>, max: usize) -> Self {
        let unit = if max == 1 { "byte" } else { "bytes" };
        Self::new(
            ErrorType::TooLong,
            path,
            value.into(),
            format!("may not be more than {max} {unit}"),
        )
    }

    /// `field.TooMany` with the actual and maximum counts.
    pub fn too_many(path: &Path, actual: usize, max: usize) -> Self {
        Self::new(
            ErrorType::TooMany,
            path,
            BadValue::from(actual),
            format!("must have at most {max} items"),
        )
    }

    /// `field.TypeInvalid`: a value of the wrong type. Printed like `Invalid`.
    pub fn type_invalid(path: &Path, value: impl Into<BadValue>, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::TypeInvalid, path, value.into(), detail)
    }

    /// `field.InternalError`: not the input's fault (e.g. comparing objects of two kinds).
    /// Printed `<field>: Internal error[: detail]`.
    pub fn internal(path: &Path, detail: impl Into<String>) -> Self {
        Self::new(ErrorType::Internal, path, BadValue::Null, detail)
    }

    /// The message without the field, as a `Status` cause carries it
    /// (`Invalid value: 0: must be between 1 and 65535, inclusive`).
    pub fn body(&self) -> String {
        let mut s = match self.type_ {
            ErrorType::Required | ErrorType::Forbidden | ErrorType::TooLong | ErrorType::Internal => {
                self.type_.text().to_owned()
            }
            _ => format!("{}: {}", self.type_.text(), self.bad_value),
        };
        if !self.detail.is_empty() {
            s.push_str(": ");
            s.push_str(&self.detail);
        }
        s
    }
}

impl fmt::Display for FieldError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

impl std::error::Error for FieldError {}

/// A list of field errors; empty means valid.
pub type ErrorList = Vec<FieldError>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote("a\"b\\c"), r#""a\"b\\c""#);
        assert_eq!(go_quote("\n\t\u{1}\u{7f}\u{85}é"), "\"\\n\\t\\x01\\x7f\\u0085é\"");
        // Characters Go's IsPrint refuses beyond the controls are escaped too.
        assert_eq!(
            go_quote("a\u{a0}b\u{200b}c\u{feff}\u{2028}\u{e000}\u{f0000}"),
            "\"a\\u00a0b\\u200bc\\ufeff\\u2028\\ue000\\U000f0000\""
        );
        // Printable non-ASCII stays as it is, spaces included only for U+0020.
        assert_eq!(go_quote("日本 ü \u{1f600}"), "\"日本 ü \u{1f600}\"");
    }

    #[test]
    fn messages() {
        let p = Path::new("spec").child("type");
        assert_eq!(
            FieldError::not_supported(&p, "X", &["ClusterIP", "NodePort"]).to_string(),
            "spec.type: Unsupported value: \"X\": supported values: \"ClusterIP\", \"NodePort\""
        );
        assert_eq!(
            FieldError::required(&p, "").to_string(),
            "spec.type: Required value"
        );
        assert_eq!(
            FieldError::forbidden(&p, "nope").to_string(),
            "spec.type: Forbidden: nope"
        );
        assert_eq!(
            FieldError::too_many(&p, 3, 2).to_string(),
            "spec.type: Too many: 3: must have at most 2 items"
        );
        assert_eq!(
            FieldError::duplicate(&p, 5).to_string(),
            "spec.type: Duplicate value: 5"
        );
        assert_eq!(
            FieldError::too_long(&p, "", 1).to_string(),
            "spec.type: Too long: may not be more than 1 byte"
        );
        assert_eq!(
            FieldError::internal(&p.key("k"), "boom").to_string(),
            "spec.type[k]: Internal error: boom"
        );
    }
}
