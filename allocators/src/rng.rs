//! Randomness: a small seeded generator and the uniform draw every allocator uses.

use rand_core::RngCore;

/// SplitMix64: a tiny, fast, seedable generator (Steele, Lea and Flood, 2014).
///
/// Not for cryptography. The same seed gives the same sequence on every platform, which is
/// what makes `svcnet alloc --seed N` reproducible. Any other [`RngCore`] works as well.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    /// A generator starting from `seed`.
    pub fn new(seed: u64) -> Self {
        SplitMix64 { state: seed }
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

/// A draw in `[0, n)` (Lemire's multiply-shift; `n` must be > 0, 0 gives 0).
///
/// Every allocator draws its random start through this one function, so two allocators fed
/// the same generator state pick the same start for the same band size.
pub(crate) fn uniform<R: RngCore + ?Sized>(rng: &mut R, n: u64) -> u64 {
    ((u128::from(rng.next_u64()) * u128::from(n)) >> 64) as u64
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
    fn uniform_stays_below_n() {
        let mut r = SplitMix64::new(3);
        for n in [1u64, 2, 3, 10, 1 << 20, u64::MAX] {
            for _ in 0..100 {
                assert!(uniform(&mut r, n) < n);
            }
        }
        assert_eq!(uniform(&mut r, 0), 0);
    }
}
