//! `resource.Quantity`, kept as its text and parsed on demand.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/apimachinery/pkg/api/resource/quantity.go`.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::ModelError;

/// A Kubernetes quantity such as `4`, `500m`, `1.5`, `2k` or `1Gi`, kept exactly as written.
///
/// ```
/// use svcnet_model::Quantity;
/// assert_eq!(Quantity::from("1500m").millis().unwrap(), 1500);
/// assert_eq!(Quantity::from("2").millis().unwrap(), 2000);
/// assert_eq!(Quantity::from("1Ki").millis().unwrap(), 1_024_000);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Quantity(pub String);

impl From<&str> for Quantity {
    fn from(s: &str) -> Self {
        Quantity(s.to_owned())
    }
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl Quantity {
    /// The value in thousandths (CPU millicores for a cpu quantity), rounded up as Kubernetes'
    /// `MilliValue` does. Errors name the text when it is not a quantity or does not fit.
    pub fn millis(&self) -> Result<i64, ModelError> {
        parse_millis(self.0.trim()).ok_or_else(|| ModelError::Quantity(self.0.clone()))
    }
}

fn parse_millis(s: &str) -> Option<i64> {
    if s.is_empty() {
        return None;
    }
    let (sign, rest) = match s.as_bytes()[0] {
        b'-' => (-1i128, &s[1..]),
        b'+' => (1, &s[1..]),
        _ => (1, s),
    };
    let num_end = rest
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(rest.len());
    let (num, suffix) = rest.split_at(num_end);
    if num.is_empty() || num == "." || num.matches('.').count() > 1 {
        return None;
    }
    let (int_part, frac_part) = num.split_once('.').unwrap_or((num, ""));
    // Value as mantissa * 10^exp10 * 2^exp2.
    let mut mantissa: i128 = 0;
    for c in int_part.chars().chain(frac_part.chars()) {
        mantissa = mantissa
            .checked_mul(10)?
            .checked_add(i128::from(c.to_digit(10)? as u8))?;
        if mantissa > 1i128 << 100 {
            return None;
        }
    }
    // Computed in i64 so that no exponent an i32 can spell overflows it.
    let mut exp10: i64 = -i64::try_from(frac_part.len()).ok()?;
    let mut exp2: u32 = 0;
    match suffix {
        "" => {}
        "n" => exp10 -= 9,
        "u" => exp10 -= 6,
        "m" => exp10 -= 3,
        "k" => exp10 += 3,
        "M" => exp10 += 6,
        "G" => exp10 += 9,
        "T" => exp10 += 12,
        "P" => exp10 += 15,
        "E" => exp10 += 18,
        "Ki" => exp2 = 10,
        "Mi" => exp2 = 20,
        "Gi" => exp2 = 30,
        "Ti" => exp2 = 40,
        "Pi" => exp2 = 50,
        "Ei" => exp2 = 60,
        other => {
            let e = other.strip_prefix(['e', 'E'])?;
            exp10 += i64::from(e.parse::<i32>().ok()?);
        }
    }
    exp10 += 3; // thousandths
    let v = mantissa.checked_mul(1i128.checked_shl(exp2)?)?;
    let v = if v == 0 {
        0
    } else if exp10 >= 0 {
        // Past 10^38 nothing non-zero fits an i128, let alone the i64 result.
        v.checked_mul(10i128.checked_pow(u32::try_from(exp10).ok()?)?)?
    } else {
        match u32::try_from(exp10.unsigned_abs())
            .ok()
            .and_then(|e| 10i128.checked_pow(e))
        {
            // Round up, as MilliValue does.
            Some(div) => v / div + i128::from(v % div != 0),
            // A divisor beyond i128 exceeds every mantissa: a positive fraction of a
            // thousandth, which rounds up to one.
            None => 1,
        }
    };
    i64::try_from(sign * v).ok()
}

impl Serialize for Quantity {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Quantity {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Quantity;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a quantity (string or number)")
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Quantity, E> {
                Ok(Quantity(v.to_string()))
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Quantity, E> {
                Ok(Quantity(v.to_string()))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Quantity, E> {
                Ok(Quantity(v.to_string()))
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Quantity, E> {
                Ok(Quantity(v.to_owned()))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_cpu_forms() {
        for (s, want) in [
            ("1", 1000),
            ("250m", 250),
            ("0.5", 500),
            ("1.0001", 1001),
            ("2k", 2_000_000),
            ("1e3", 1_000_000),
            ("100n", 1),
            ("1Mi", 1_048_576_000),
        ] {
            assert_eq!(Quantity::from(s).millis().unwrap(), want, "{s}");
        }
        for bad in ["", "abc", "1.2.3", "5x", "."] {
            assert!(Quantity::from(bad).millis().is_err(), "{bad}");
        }
    }

    #[test]
    fn extreme_exponents_neither_panic_nor_loop() {
        // These overflowed the exponent arithmetic (a panic in debug builds).
        assert!(Quantity::from("1e2147483647").millis().is_err());
        assert_eq!(Quantity::from("0.1e-2147483648").millis().ok(), Some(1));
        // Zero stays zero whatever the exponent (this used to loop two billion times).
        assert_eq!(Quantity::from("0e2147483647").millis().ok(), Some(0));
        assert_eq!(Quantity::from("0e-100").millis().ok(), Some(0));
        // Tiny values round up (in magnitude) to one thousandth, as before.
        assert_eq!(Quantity::from("1e-50").millis().ok(), Some(1));
        assert_eq!(Quantity::from("-1n").millis().ok(), Some(-1));
        assert_eq!(
            Quantity::from("9e15").millis().ok(),
            Some(9_000_000_000_000_000_000)
        );
        assert!(Quantity::from("1e16").millis().is_err());
        assert!(Quantity::from("1e39").millis().is_err());
        assert!(Quantity::from("1e99999999999").millis().is_err());
    }
}
