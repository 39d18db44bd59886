//! A small, fast, non-cryptographic hasher for the maps this crate keys by borrowed names
//! (which a caller cannot choose to collide on purpose to any real effect: the maps live for
//! one call). SipHash, std's default, costs several times more on short names.
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

/// Multiply-add over 8-byte words, finished with a folded multiply so that both the high
/// bits (hashbrown's tags) and the low bits (its bucket index) depend on every input bit.
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
        let mut chunks = bytes.chunks_exact(8);
        for c in &mut chunks {
            let mut w = [0u8; 8];
            w.copy_from_slice(c);
            self.add(u64::from_le_bytes(w));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            if let Some(head) = w.get_mut(..rest.len()) {
                head.copy_from_slice(rest);
            }
            // The top byte is free: the remainder's length keeps "a" apart from "a\0".
            w[7] = rest.len() as u8;
            self.add(u64::from_le_bytes(w));
        }
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
        let wide = u128::from(self.hash) * u128::from(K);
        (wide as u64) ^ ((wide >> 64) as u64)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, BuildHasherDefault};

    use super::*;

    #[test]
    fn names_hash_apart() {
        let b = BuildHasherDefault::<FastHasher>::default();
        let h = |k: (&str, &str)| b.hash_one(k);
        assert_ne!(h(("ns", "a")), h(("ns", "b")));
        assert_ne!(h(("a", "")), h(("", "a")));
        assert_ne!(h(("a", "b")), h(("a\0", "b")));
        assert_ne!(h(("abcdefgh", "")), h(("abcdefgh\0", "")));
        assert_eq!(h(("ns", "a")), h(("ns", "a")));
        let mut m: FastMap<(&str, &str), usize> = fast_map(4);
        m.insert(("ns", "a"), 1);
        m.insert(("ns", "b"), 2);
        assert_eq!(m.get(&("ns", "b")), Some(&2));
    }
}
