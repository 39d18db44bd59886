//! Fast hashing for svcnet's in-memory maps, in two kinds, and a digest.
//!
//! - [`FastHasher`] ([`FastMap`], [`FastSet`]): not keyed, for **internal keys**: values a
//!   crate computes itself (interned ids, indices, chain hashes that are SHA-256 output,
//!   slice digests). Nobody outside chooses them, so flooding resistance buys nothing. Each
//!   8-byte word is added and multiplied; a short tail carries its length in its top byte (so
//!   `"a"` and `"a\0"` differ), and the result is finished with a folded 128-bit multiply so
//!   that both the high bits (hashbrown's tags) and the low bits (its bucket index) depend on
//!   every input bit.
//! - [`KeyedState`] ([`KeyedMap`], [`KeyedSet`]): keyed, for maps keyed by **outside
//!   data**: object names and namespaces, label keys and values, IP addresses read from the
//!   input. Such keys are chosen by whoever writes the objects, so a caller that hashes
//!   untrusted input can pass a secret 128-bit key ([`KeyedState::new`]) and an attacker who
//!   does not know it cannot precompute colliding names. Every word goes through a folded
//!   multiply by a key-derived odd multiplier (not the multiply-add of [`FastHasher`], whose
//!   collisions do not depend on any seed), starting from a key-derived state. The crates are
//!   pure (no global RNG, no OS randomness): [`KeyedState::default`] uses the fixed, documented
//!   [`KeyedState::FIXED_KEY`], so output never depends on the key; iteration order of these
//!   maps is never part of any output.
//! - [`DigestHasher`]: a 64-bit digest of a whole value through its `Hash` (xor and folded
//!   multiply per word, so every changed bit reaches the whole state before the next word).
//!
//! Which maps use which, by crate:
//! - svcnet-topology: the slice index groups slices by (namespace, Service name): keyed.
//! - svcnet-rules: the proxy model's Service and slice lookups by (namespace, name) and its
//!   namespace ranks, the nftables proxier's per-Service records, element and chain stores,
//!   endpoint-chain names by (IP, port) and the parsed rule set's name maps, and the iptables
//!   backend's endpoint chains by socket address: keyed. The iptables chain sets and chain
//!   sequence maps (keys are chain hashes): fast. `svcnet_rules::nftables::FxHasher` and
//!   `FxBuild` are [`FastHasher`] and [`FastBuild`] under their earlier public names.
//! - svcnet-slicer: Node zones by Node name, a Service's slices by name and the names a plan
//!   gives, the controller's slices by (namespace, Service name), mirroring's Services and
//!   Endpoints by (namespace, name), applied plans' slices by name, and port lists (names and
//!   protocols from the input) to their interned ids: keyed. Its own identity hasher (not this
//!   module's) for the maps keyed by the 128-bit endpoint and Pod identities, interned
//!   port-list ids, resolved port numbers and positions it computes, which that hasher passes
//!   through nearly untouched.
//!
//! Keys reach the keyed maps from the caller: `ProxyConfig::hash_key` (svcnet-rules, for the
//! proxy model and the topology index it builds), `SliceIndex::build_keyed` (svcnet-topology),
//! `NftProxier::with_hash_key` (svcnet-rules), `Options::hash_key` and
//! `NodeZones::with_hash_key` (svcnet-slicer). The nftables rule set's name maps, the iptables
//! per-port endpoint index, the slicer's hinting and mirroring lookups and applied plans use
//! the default key.
//!
//! Neither is a cryptographic hash; [`KeyedState`] with a secret key makes flooding a map
//! with colliding keys impractical without the key, it does not make hash values secret.
//!
//! ```
//! use std::hash::BuildHasher;
//! use svcnet_model::hash::{FastMap, KeyedMap, KeyedState};
//!
//! let mut by_id: FastMap<u32, &str> = FastMap::default();
//! by_id.insert(7, "seven");
//! // The embedder's secret (from its own RNG): names from the API now hash under it.
//! let state = KeyedState::new([0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210]);
//! let mut by_name: KeyedMap<&str, u32> = KeyedMap::with_hasher(state);
//! by_name.insert("default/web", 7);
//! assert_eq!(by_name["default/web"], 7);
//! assert_ne!(state.hash_one("web"), KeyedState::default().hash_one("web"));
//! ```

use std::collections::{HashMap, HashSet};
use std::hash::{BuildHasher, BuildHasherDefault, Hasher};

const K: u64 = 0xf135_7aea_2e62_a9c5;
const K2: u64 = 0x9e37_79b9_7f4a_7c15;
const K3: u64 = 0xc2b2_ae3d_27d4_eb4f;

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
    let (chunks, rest) = bytes.as_chunks::<8>();
    for c in chunks {
        add(u64::from_le_bytes(*c));
    }
    if !rest.is_empty() {
        add(tail_word(rest));
    }
}

/// A tail of 1 to 7 bytes as the little-endian word of the bytes zero-padded to 7, with the
/// length in the top byte. Built from overlapping reads (no copy of a variable length, which
/// is a `memcpy` call): where two reads overlap they hold the same bytes, so or-ing them in
/// place gives every byte once.
#[inline]
fn tail_word(rest: &[u8]) -> u64 {
    let n = rest.len();
    debug_assert!((1..8).contains(&n));
    let bytes = if n >= 4 {
        let lo = rest.first_chunk::<4>().map_or(0, |c| u32::from_le_bytes(*c));
        let hi = rest.last_chunk::<4>().map_or(0, |c| u32::from_le_bytes(*c));
        u64::from(lo) | (u64::from(hi) << (8 * (n - 4)))
    } else {
        let at = |i: usize| u64::from(rest.get(i).copied().unwrap_or(0)) << (8 * i);
        at(0) | at(n / 2) | at(n.saturating_sub(1))
    };
    bytes | ((n as u64) << 56)
}

/// `Hasher` for a word-at-a-time state with an `add(word)` step: bytes go in as 8-byte
/// words ([`words`]), integers as one word each.
macro_rules! word_hasher {
    ($t:ty, |$h:ident| $finish:expr) => {
        impl Hasher for $t {
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
                let $h = self;
                $finish
            }
        }
    };
}

/// The hasher of maps with internal keys: multiply-add over words, finished with a folded
/// multiply (cheap, and every output bit depends on every input bit). Not keyed: see the
/// [module docs](self) for when to use [`KeyedState`] instead.
#[derive(Debug, Default, Clone, Copy)]
pub struct FastHasher {
    hash: u64,
}

impl FastHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = self.hash.wrapping_add(word).wrapping_mul(K);
    }
}

word_hasher!(FastHasher, |h| fold(h.hash, K));

/// Builds [`FastHasher`]s.
pub type FastBuild = BuildHasherDefault<FastHasher>;
/// A `HashMap` with internal keys, hashed by [`FastHasher`].
pub type FastMap<K, V> = HashMap<K, V, FastBuild>;
/// A `HashSet` of internal keys, hashed by [`FastHasher`].
pub type FastSet<T> = HashSet<T, FastBuild>;

/// A [`FastMap`] with room for `n` entries.
pub fn fast_map<K, V>(n: usize) -> FastMap<K, V> {
    HashMap::with_capacity_and_hasher(n, FastBuild::default())
}

/// The key of the hasher of maps keyed by outside data: builds [`KeyedHasher`]s. Pass a
/// secret key (from the embedder's own randomness) for flooding resistance; the default is
/// [`KeyedState::FIXED_KEY`]. Only map performance depends on the key, never any output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyedState {
    seed: u64,
    mul: u64,
}

impl KeyedState {
    /// The key of [`KeyedState::default`]: `"svcnet-k"` and `"eyed-map"` as little-endian
    /// words. Public, so it only keeps output deterministic; it resists nothing.
    pub const FIXED_KEY: [u64; 2] = [0x6b2d_7465_6e63_7673, 0x7061_6d2d_6465_7965];

    /// A state for the 128-bit `key`. Any key works, zero included: the hasher's state and
    /// multiplier are derived from it.
    pub const fn new(key: [u64; 2]) -> Self {
        let seed = const_fold(key[0] ^ K, key[1] ^ K2);
        let mul = const_fold(seed ^ K3, key[1].rotate_left(32) ^ K) | 1;
        KeyedState { seed, mul }
    }
}

/// [`fold`], usable in a `const fn`.
const fn const_fold(a: u64, b: u64) -> u64 {
    let wide = (a as u128) * (b as u128);
    (wide as u64) ^ ((wide >> 64) as u64)
}

impl Default for KeyedState {
    fn default() -> Self {
        KeyedState::new(KeyedState::FIXED_KEY)
    }
}

impl BuildHasher for KeyedState {
    type Hasher = KeyedHasher;

    #[inline]
    fn build_hasher(&self) -> KeyedHasher {
        KeyedHasher {
            hash: self.seed,
            mul: self.mul,
        }
    }
}

/// The hasher of maps keyed by outside data, made by a [`KeyedState`]: each word is xored
/// into the state, which is then folded-multiplied by the key-derived multiplier.
#[derive(Debug, Clone, Copy)]
pub struct KeyedHasher {
    hash: u64,
    mul: u64,
}

impl KeyedHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.hash = fold(self.hash ^ word, self.mul);
    }
}

word_hasher!(KeyedHasher, |h| h.hash);

/// A `HashMap` keyed by outside data, hashed under a [`KeyedState`].
pub type KeyedMap<K, V> = HashMap<K, V, KeyedState>;
/// A `HashSet` of outside data, hashed under a [`KeyedState`].
pub type KeyedSet<T> = HashSet<T, KeyedState>;

/// A [`KeyedMap`] with room for `n` entries, hashed under `state`.
pub fn keyed_map<K, V>(n: usize, state: KeyedState) -> KeyedMap<K, V> {
    HashMap::with_capacity_and_hasher(n, state)
}

/// A 64-bit digest of a whole value through its `Hash`: every word is xored into the state
/// and the state replaced by a folded 128-bit multiply (both halves of the product, xored),
/// so a change in any bit of a word reaches every bit of the state, upwards and downwards,
/// before the next word comes in; finished with one more folded multiply. Two values that
/// differ collide with a probability of about 2^-64, with no structured pairs known (a
/// multiply alone only carries differences upwards, so that changes in two neighbouring
/// words could cancel: an earlier step of this hasher, rotate, xor and multiply, gave some
/// two-character edits of a name the same digest). Not keyed: for comparing values a crate
/// computed, not for maps.
#[derive(Debug, Clone, Copy)]
pub struct DigestHasher {
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
        self.hash = fold(self.hash ^ word, K);
    }
}

word_hasher!(DigestHasher, |h| fold(h.hash, K2));

/// `a == b` for short texts such as object and node names, without a call to `memcmp`:
/// lengths first, then texts of 4 to 16 bytes as two overlapping little-endian words each
/// (shorter and longer texts are compared as bytes). Hot loops that compare many short names
/// (the proxy model's Service runs, locality by node name) use it.
///
/// ```
/// use svcnet_model::hash::short_text_eq;
///
/// assert!(short_text_eq("node-12", "node-12"));
/// assert!(!short_text_eq("node-12", "node-13"));
/// assert!(!short_text_eq("ns-1", "ns-10"));
/// ```
#[inline]
pub fn short_text_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let w8 = |c: Option<&[u8; 8]>| c.map(|c| u64::from_le_bytes(*c));
    let w4 = |c: Option<&[u8; 4]>| c.map(|c| u32::from_le_bytes(*c));
    match a.len() {
        8..=16 => w8(a.first_chunk()) == w8(b.first_chunk()) && w8(a.last_chunk()) == w8(b.last_chunk()),
        4..8 => w4(a.first_chunk()) == w4(b.first_chunk()) && w4(a.last_chunk()) == w4(b.last_chunk()),
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use std::hash::Hash;

    use super::*;

    fn digest(v: impl Hash) -> u64 {
        let mut h = DigestHasher::default();
        v.hash(&mut h);
        h.finish()
    }

    /// `short_text_eq` is `==` on names of every length class it reads differently (the
    /// proxy model's namespaces and names, the slice index's node names).
    #[test]
    fn short_text_eq_is_text_equality() {
        let texts = [
            "",
            "a",
            "ab",
            "abc",
            "abcd",
            "abce",
            "ns-1",
            "ns-2",
            "ns-12",
            "ns-13",
            "abcdefgh",
            "abcdefgi",
            "bbcdefgh",
            "kube-system",
            "kube-systen",
            "0123456789abcdef",
            "0123456789abcdeg",
            "1123456789abcdef",
            "0123456789abcdefg",
            "0123456789abcdefh",
            "node-1",
            "node-2",
            "node-12",
            "node-13",
            "node-1x",
            "node-123456789",
            "node-123456780",
            "xode-123456789",
        ];
        for a in texts {
            for b in texts {
                assert_eq!(short_text_eq(a, b), a == b, "{a:?} {b:?}");
            }
        }
    }

    type Key = (&'static str, &'static str);

    const PAIRS: [(Key, Key); 4] = [
        (("ns", "a"), ("ns", "b")),
        (("a", ""), ("", "a")),
        (("a", "b"), ("a\0", "b")),
        (("abcdefgh", ""), ("abcdefgh\0", "")),
    ];

    #[test]
    fn words_are_the_bytes_little_endian_with_the_tail_length_on_top() {
        // The plain reading: 8-byte chunks, then the tail zero-padded with its length in
        // the last byte.
        fn reference(bytes: &[u8]) -> Vec<u64> {
            let mut out = Vec::new();
            for c in bytes.chunks(8) {
                let mut w = [0u8; 8];
                w[..c.len()].copy_from_slice(c);
                if c.len() < 8 {
                    w[7] = c.len() as u8;
                }
                out.push(u64::from_le_bytes(w));
            }
            out
        }
        let text: Vec<u8> = (1..=40u8).map(|b| b.wrapping_mul(37)).collect();
        for n in 0..=text.len() {
            let mut got = Vec::new();
            words(&text[..n], |w| got.push(w));
            assert_eq!(got, reference(&text[..n]), "{n} bytes");
        }
    }

    #[test]
    fn digests_tell_every_one_and_two_character_edit_apart() {
        // Two-character edits in neighbouring words: a digest whose step only carried
        // differences upwards (multiply) let some of these cancel, e.g. these two strings
        // (bytes 15 and 18 apart, in the second and third words).
        assert_ne!(
            digest("-bcdefghijklmnozqrstuvwx"),
            digest("-bcdefghijklmnopqrZtuvwx")
        );
        let base = *b"abcdefghijklmnopqrstuvwx";
        let subs = *b"Z0.-9az/";
        let mut seen = std::collections::HashMap::new();
        let mut edited = |text: [u8; 24]| {
            let d = digest(std::str::from_utf8(&text).unwrap());
            if let Some(other) = seen.insert(d, text) {
                assert_eq!(
                    other,
                    text,
                    "same digest: {:?} {:?}",
                    std::str::from_utf8(&other),
                    std::str::from_utf8(&text)
                );
            }
        };
        edited(base);
        for i in 0..base.len() {
            for &a in &subs {
                let mut one = base;
                one[i] = a;
                edited(one);
                for j in i + 1..base.len() {
                    for &b in &subs {
                        let mut two = one;
                        two[j] = b;
                        edited(two);
                    }
                }
            }
        }
    }

    #[test]
    fn fast_keys_and_digests_tell_values_apart() {
        let b = FastBuild::default();
        let key = |k: (&str, &str)| b.hash_one(k);
        for (x, y) in PAIRS {
            assert_ne!(key(x), key(y), "{x:?} {y:?}");
            assert_ne!(digest(x), digest(y), "{x:?} {y:?}");
        }
        assert_eq!(key(("ns", "a")), key(("ns", "a")));
        assert_eq!(digest(("ns", "a")), digest(("ns", "a")));
        assert_ne!(digest([0u64, 0]), digest([0u64, 0, 0]));
        assert_ne!(digest(Some(true)), digest(Some(false)));
        assert_ne!(digest(Option::<bool>::None), digest(Some(false)));
        let mut m: FastMap<(&str, &str), usize> = fast_map(4);
        m.insert(("ns", "a"), 1);
        m.insert(("ns", "b"), 2);
        assert_eq!(m.get(&("ns", "b")), Some(&2));
        let set: FastSet<u64> = (0..1000).collect();
        assert_eq!(set.len(), 1000);
    }

    /// The tail word built from overlapping reads is the zero-padded copy with the length in
    /// the top byte, for every length and byte position.
    #[test]
    fn tail_words_are_the_padded_bytes_and_the_length() {
        for n in 1..8usize {
            for at in 0..n {
                let mut rest = [0x5au8; 7];
                rest[at] = 0xc3;
                let rest = &rest[..n];
                let mut w = [0u8; 8];
                w[..n].copy_from_slice(rest);
                w[7] = n as u8;
                assert_eq!(tail_word(rest), u64::from_le_bytes(w), "{n} {at}");
            }
        }
    }

    #[test]
    fn keyed_keys_tell_values_apart_under_any_key() {
        for key in [KeyedState::FIXED_KEY, [0, 0], [u64::MAX, 1], [K, K2]] {
            let s = KeyedState::new(key);
            let h = |k: (&str, &str)| s.hash_one(k);
            for (x, y) in PAIRS {
                assert_ne!(h(x), h(y), "{key:?}: {x:?} {y:?}");
            }
            assert_eq!(h(("ns", "a")), h(("ns", "a")));
            let many: HashSet<u64> = (0..10_000u32).map(|i| s.hash_one(format!("svc-{i}"))).collect();
            assert_eq!(many.len(), 10_000, "{key:?}");
        }
    }

    #[test]
    fn the_key_changes_the_hash_and_the_default_is_fixed() {
        let fixed = KeyedState::default();
        assert_eq!(fixed, KeyedState::new(KeyedState::FIXED_KEY));
        let other = KeyedState::new([1, 2]);
        assert_ne!(fixed.hash_one("default/web"), other.hash_one("default/web"));
        assert_ne!(KeyedState::new([1, 2]), KeyedState::new([2, 1]));
        // A multiply-add seeded with the key would collide here under every key: a
        // second word shifted by K times the first word's difference.
        let (a, b) = ([1u64, 0], [0u64, K]);
        let fast = FastBuild::default();
        assert_eq!(fast.hash_one(a), fast.hash_one(b));
        assert_ne!(fixed.hash_one(a), fixed.hash_one(b));
        assert_ne!(other.hash_one(a), other.hash_one(b));
    }
}
