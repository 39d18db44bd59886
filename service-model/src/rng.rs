//! The one seeded generator of the svcnet workspace.
//!
//! Kubernetes draws random ClusterIPs, NodePorts and name suffixes; svcnet takes randomness as an
//! argument ([`rand_core::RngCore`]) instead. [`SplitMix64`] is the small seeded generator the
//! allocators, the slicer's name source and the CLI's `--seed` use, so that the same seed gives
//! the same allocations and the same names everywhere. Any other `RngCore` works as well.

/// SplitMix64: a tiny, fast, seedable generator (Steele, Lea and Flood, 2014).
///
/// Not for cryptography. The same seed gives the same sequence on every platform.
///
/// ```
/// use svcnet_model::rng::{RngCore, SplitMix64};
///
/// let (mut a, mut b) = (SplitMix64::new(7), SplitMix64::new(7));
/// assert_eq!(a.next_u64(), b.next_u64());
/// assert_ne!(SplitMix64::new(1).next_u64(), SplitMix64::new(2).next_u64());
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

/// The generator trait every svcnet crate takes, re-exported for callers.
pub use rand_core::RngCore;

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
    }
}

impl Default for SplitMix64 {
    /// The generator seeded with 0.
    fn default() -> Self {
        SplitMix64::new(0)
    }
}

impl RngCore for SplitMix64 {
    fn next_u32(&mut self) -> u32 {
        (self.next_u64() >> 32) as u32
    }

    fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        rand_core::impls::fill_bytes_via_next(self, dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence() {
        let mut a = SplitMix64::new(7);
        let mut b = SplitMix64::new(7);
        for _ in 0..100 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        assert_ne!(SplitMix64::new(1).next_u64(), SplitMix64::new(2).next_u64());
    }

    #[test]
    fn matches_the_published_splitmix64_sequence() {
        // Reference values of SplitMix64 seeded with 1234567 (Vigna's splitmix64.c).
        let mut r = SplitMix64::new(1_234_567);
        assert_eq!(r.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(r.next_u64(), 3_203_168_211_198_807_973);
    }
}
