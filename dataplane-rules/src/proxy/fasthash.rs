//! Two small non-cryptographic hashers for the model build: one for maps keyed by borrowed
//! names that live for one build, one for the slice digests.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` with [`FastHasher`].
pub(crate) type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// A `FastMap` with room for `n` entries.
pub(crate) fn fast_map<K, V>(n: usize) -> FastMap<K, V> {
    HashMap::with_capacity_and_hasher(n, BuildHasherDefault::default())
}

const K: u64 = 0xf135_7aea_2e62_a9c5;
const K2: u64 = 0x9e37_79b9_7f4a_7c15;

/// The folded 128-bit product: both halves of `a * b`, xored.
#[inline]
fn fold(a: u64, b: u64) -> u64 {
    let wide = u128::from(a) * u128::from(b);
    (wide as u64) ^ ((wide >> 64) as u64)
}

/// 8-byte words, each added in turn; the length of a short tail goes in its top byte, so "a"
/// and "a\0" differ.
#[inline]
fn words(bytes: &[u8], mut add: impl FnMut(u64)) {
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let mut w = [0u8; 8];
        w.copy_from_slice(c);
        add(u64::from_le_bytes(w));
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let mut w = [0u8; 8];
        if let Some(head) = w.get_mut(..rest.len()) {
            head.copy_from_slice(rest);
        }
        w[7] = rest.len() as u8;
        add(u64::from_le_bytes(w));
    }
}

/// Multiply-add over words, finished with a folded multiply (for hash maps: cheap, and both
/// the high and the low bits of the result depend on every input bit).
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct FastHasher {
    hash: u64,
}

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = self.hash.wrapping_add(word).wrapping_mul(K);
    }
}

impl Hasher for FastHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        words(bytes, |w| self.add(w));
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        fold(self.hash, K)
    }
}

/// A digest of a whole object through its `Hash`: every word is mixed in by rotate, xor and
/// multiply (each step a bijection of the state and of the word, so one changed word always
/// changes the digest), and the result is finished with a folded multiply.
#[derive(Debug, Clone, Copy)]
pub(crate) struct DigestHasher {
    hash: u64,
}

impl Default for DigestHasher {
    fn default() -> Self {
        DigestHasher { hash: K2 }
    }
}

impl DigestHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(23) ^ word).wrapping_mul(K);
    }
}

impl Hasher for DigestHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        words(bytes, |w| self.add(w));
    }

    #[inline]
    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u16(&mut self, i: u16) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u32(&mut self, i: u32) {
        self.add(u64::from(i));
    }

    #[inline]
    fn write_u64(&mut self, i: u64) {
        self.add(i);
    }

    #[inline]
    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        fold(self.hash, K2)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, BuildHasherDefault, Hash};

    use super::*;

    fn digest(v: impl Hash) -> u64 {
        let mut h = DigestHasher::default();
        v.hash(&mut h);
        h.finish()
    }

    #[test]
    fn keys_and_digests_tell_values_apart() {
        let b = BuildHasherDefault::<FastHasher>::default();
        let key = |k: (&str, &str)| b.hash_one(k);
        for (x, y) in [
            (("ns", "a"), ("ns", "b")),
            (("a", ""), ("", "a")),
            (("a", "b"), ("a\0", "b")),
            (("abcdefgh", ""), ("abcdefgh\0", "")),
        ] {
            assert_ne!(key(x), key(y));
            assert_ne!(digest(x), digest(y));
        }
        assert_eq!(key(("ns", "a")), key(("ns", "a")));
        assert_eq!(digest(("ns", "a")), digest(("ns", "a")));
        assert_ne!(digest([0u64, 0]), digest([0u64, 0, 0]));
        assert_ne!(digest(Some(true)), digest(Some(false)));
        assert_ne!(digest(Option::<bool>::None), digest(Some(false)));
    }
}
