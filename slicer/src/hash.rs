//! Small, fast, deterministic hashing: the 128-bit identity hash of endpoints and Pods, and the
//! hasher of the crate's internal maps (their keys are already hashes, or short strings).
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2): Kubernetes keys endpoints by a hash of
//! their fields (`staging/src/k8s.io/endpointslice/util/endpointset.go`); this hash is not that
//! one.

use std::hash::{BuildHasherDefault, Hasher};

const K1: u64 = 0x9E37_79B9_7F4A_7C15;
const K2: u64 = 0xC2B2_AE3D_27D4_EB4F;
const K3: u64 = 0x1656_67B1_9E37_79F9;

/// Multiplies and folds the 128-bit product: the core of many fast hashes.
#[inline]
fn fold_mul(x: u64, k: u64) -> u64 {
    let m = u128::from(x) * u128::from(k);
    (m as u64) ^ ((m >> 64) as u64)
}

/// 1 to 8 bytes as one word, without a byte-by-byte copy: two overlapping 4-byte reads, or
/// the first, middle and last byte (together with the length, which goes into the hash
/// separately, every byte counts once).
#[inline]
fn tail_word(rest: &[u8]) -> u64 {
    let n = rest.len();
    if n >= 4 {
        let lo = rest.first_chunk::<4>().map_or(0, |c| u32::from_le_bytes(*c));
        let hi = rest.last_chunk::<4>().map_or(0, |c| u32::from_le_bytes(*c));
        (u64::from(hi) << 32) | u64::from(lo)
    } else {
        let b = |i: usize| u64::from(rest.get(i).copied().unwrap_or(0));
        (b(0) << 16) | (b(n / 2) << 8) | b(n.saturating_sub(1))
    }
}

/// Up to 16 bytes as two words, without a byte-by-byte copy: two overlapping 8-byte reads
/// (9 to 16 bytes), two overlapping 4-byte reads (4 to 8) or three single bytes (1 to 3). With
/// the length, which goes into the hash separately, the words give back every byte.
#[inline]
fn short_words(s: &[u8]) -> (u64, u64) {
    let n = s.len();
    if n > 8 {
        let lo = s.first_chunk::<8>().map_or(0, |c| u64::from_le_bytes(*c));
        let hi = s.last_chunk::<8>().map_or(0, |c| u64::from_le_bytes(*c));
        (lo, hi)
    } else if n > 0 {
        (tail_word(s), 0)
    } else {
        (0, 0)
    }
}

/// A two-lane 64-bit hash giving a 128-bit value. Each field's length goes in with its bytes,
/// so a sequence of fields hashes differently from any other split of the same bytes.
///
/// Each lane takes 16 bytes per multiply (the data on both sides of the product, as wyhash and
/// rapidhash do), so a field of up to 16 bytes costs one step. The two lanes use the words and
/// the length in different positions, so an input that defeats one lane's mixing does not defeat
/// the other's. It is a fast identity hash, not a defence against crafted collisions.
pub(crate) struct Hash128 {
    a: u64,
    b: u64,
}

impl Hash128 {
    pub fn new() -> Self {
        Hash128 { a: K1, b: K2 }
    }

    #[inline]
    fn block(&mut self, w0: u64, w1: u64, len: u64) {
        self.a = fold_mul(self.a ^ w0 ^ K3, w1 ^ K1 ^ len);
        self.b = fold_mul(self.b ^ w1 ^ K1, w0 ^ K2 ^ len.rotate_left(32));
    }

    /// Adds one field.
    #[inline(always)]
    pub fn field(&mut self, s: &[u8]) {
        if s.len() <= 16 {
            let (w0, w1) = short_words(s);
            self.block(w0, w1, s.len() as u64);
        } else {
            self.long_field(s);
        }
    }

    /// A field of more than 16 bytes: whole 16-byte blocks, then the last 16 bytes (overlapping
    /// the previous block).
    #[inline(never)]
    fn long_field(&mut self, s: &[u8]) {
        let len = s.len() as u64;
        // The blocks that end before the last 16 bytes start.
        let (blocks, _) = s.as_chunks::<16>();
        for c in blocks.iter().take((s.len() - 1) / 16) {
            let (w0, w1) = short_words(c);
            self.block(w0, w1, len);
        }
        if let Some(last) = s.last_chunk::<16>() {
            let (w0, w1) = short_words(last);
            self.block(w0, w1, len);
        }
    }

    pub fn finish(&self) -> u128 {
        let a = fold_mul(self.a ^ self.b.rotate_left(17), K3);
        let b = fold_mul(self.b ^ a, K1);
        (u128::from(a) << 64) | u128::from(b)
    }
}

/// The hasher of internal maps: folds whatever it is given with a multiply; keys that are
/// already hashes (identities) go through nearly untouched.
#[derive(Default, Clone, Copy)]
pub(crate) struct FastHasher(u64);

impl Hasher for FastHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        // The length goes in too, so that a short tail read as one word stays unambiguous.
        self.0 = fold_mul(self.0 ^ bytes.len() as u64, K1);
        let (chunks, rest) = bytes.as_chunks::<8>();
        for c in chunks {
            self.0 = fold_mul(self.0 ^ u64::from_le_bytes(*c), K1);
        }
        if !rest.is_empty() {
            self.0 = fold_mul(self.0 ^ tail_word(rest), K1);
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.0 = fold_mul(self.0 ^ u64::from(i), K1);
    }

    fn write_u32(&mut self, i: u32) {
        self.0 = fold_mul(self.0 ^ u64::from(i), K1);
    }

    fn write_u64(&mut self, i: u64) {
        self.0 = fold_mul(self.0 ^ i, K1);
    }

    fn write_u128(&mut self, i: u128) {
        self.0 ^= (i as u64) ^ ((i >> 64) as u64).rotate_left(32);
    }

    fn write_usize(&mut self, i: usize) {
        self.write_u64(i as u64);
    }
}

/// The [`FastHasher`] hash of some bytes.
pub(crate) fn hash64(bytes: &[u8]) -> u64 {
    let mut h = FastHasher::default();
    h.write(bytes);
    h.finish()
}

/// Builds [`FastHasher`]s.
pub(crate) type FastBuild = BuildHasherDefault<FastHasher>;
/// A `HashMap` with the fast hasher.
pub(crate) type FastMap<K, V> = std::collections::HashMap<K, V, FastBuild>;
/// A `HashSet` with the fast hasher.
pub(crate) type FastSet<K> = std::collections::HashSet<K, FastBuild>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_delimited() {
        let h = |fs: &[&str]| {
            let mut h = Hash128::new();
            fs.iter().for_each(|f| h.field(f.as_bytes()));
            h.finish()
        };
        assert_ne!(h(&["ab", "c"]), h(&["a", "bc"]));
        assert_ne!(h(&["", "x"]), h(&["x", ""]));
        assert_eq!(h(&["10.0.0.1", "p"]), h(&["10.0.0.1", "p"]));
        assert_ne!(h(&["10.0.0.1"]), h(&["10.0.0.2"]));
    }

    #[test]
    fn every_byte_counts() {
        // Any one byte changed, at any length, changes both hashes.
        for n in 1..=24usize {
            let base: Vec<u8> = (0..n).map(|i| b'a' + i as u8).collect();
            let one = |b: &[u8]| {
                let mut h = Hash128::new();
                h.field(b);
                h.finish()
            };
            let fast = |b: &[u8]| {
                let mut h = FastHasher::default();
                h.write(b);
                h.finish()
            };
            for i in 0..n {
                let mut v = base.clone();
                v[i] ^= 0x20;
                assert_ne!(one(&base), one(&v), "len {n}, byte {i}");
                assert_ne!(fast(&base), fast(&v), "len {n}, byte {i}");
            }
        }
    }
}
