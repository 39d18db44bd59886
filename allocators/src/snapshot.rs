//! `RangeAllocation`: the snapshot Kubernetes keeps in etcd for each bitmap allocator.
//!
//! Follows Kubernetes v1.37.2: `Snapshot` / `Restore` of
//! `pkg/registry/core/service/allocator/bitmap.go`, and `RangeAllocation` of
//! `staging/src/k8s.io/api/core/v1/types.go`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::AllocError;

/// core `RangeAllocation`: `range` (a CIDR, or `first-last` for node ports) and `data`, the
/// bitmap bytes (big-endian, minimal; item 0 is the least significant bit of the last byte).
///
/// Serialized as Kubernetes does, with `data` in standard base64:
/// `{"range":"192.168.1.0/24","data":"AgA="}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RangeAllocation {
    /// The range the bitmap covers; empty means "not initialised".
    #[serde(default)]
    pub range: String,
    /// The bitmap bytes.
    #[serde(default, serialize_with = "ser_b64", deserialize_with = "de_b64")]
    pub data: Vec<u8>,
}

impl RangeAllocation {
    /// `data` as standard base64 with padding.
    pub fn data_base64(&self) -> String {
        encode_base64(&self.data)
    }

    /// A snapshot from a range and base64 data.
    pub fn from_base64(range: impl Into<String>, data: &str) -> Result<Self, AllocError> {
        Ok(RangeAllocation {
            range: range.into(),
            data: decode_base64(data)?,
        })
    }
}

fn ser_b64<S: Serializer>(data: &[u8], s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&encode_base64(data))
}

fn de_b64<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
    let text = Option::<String>::deserialize(d)?.unwrap_or_default();
    decode_base64(&text).map_err(serde::de::Error::custom)
}

const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding.
pub(crate) fn encode_base64(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len().div_ceil(3) * 4);
    for chunk in data.chunks(3) {
        let b = [
            chunk.first().copied().unwrap_or(0),
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(char::from(ALPHABET[(n >> (18 - 6 * i) & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// Decodes standard base64 (padding optional, ASCII whitespace ignored).
pub(crate) fn decode_base64(text: &str) -> Result<Vec<u8>, AllocError> {
    let bad = |why: &str| AllocError::invalid("base64 data", text, why);
    let mut out = Vec::with_capacity(text.len() / 4 * 3);
    let (mut acc, mut bits, mut pad) = (0u32, 0u32, 0usize);
    for c in text.bytes().filter(|c| !c.is_ascii_whitespace()) {
        if c == b'=' {
            pad += 1;
            continue;
        }
        if pad > 0 {
            return Err(bad("data after padding"));
        }
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => return Err(bad("not a base64 character")),
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    if pad > 2 || bits >= 6 {
        return Err(bad("truncated"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_round_trip() {
        for data in [
            &b""[..],
            b"\x01",
            b"\x02\x00",
            b"\x02\x01",
            b"\x08\x00",
            b"abc",
            b"abcd",
        ] {
            assert_eq!(decode_base64(&encode_base64(data)).unwrap(), data);
        }
        assert_eq!(encode_base64(&[1]), "AQ==");
        assert_eq!(encode_base64(&[2, 0]), "AgA=");
        assert_eq!(encode_base64(&[8, 0]), "CAA=");
        assert!(decode_base64("A*==").is_err());
        assert!(decode_base64("A").is_err());
    }

    #[test]
    fn json_form() {
        let ra = RangeAllocation {
            range: "192.168.1.0/24".into(),
            data: vec![2, 1],
        };
        let text = serde_json::to_string(&ra).unwrap();
        assert_eq!(text, r#"{"range":"192.168.1.0/24","data":"AgE="}"#);
        let back: RangeAllocation = serde_json::from_str(&text).unwrap();
        assert_eq!(back, ra);
    }
}
