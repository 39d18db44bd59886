//! Randomness: the workspace's seeded generator (from `svcnet_model::rng`) and the uniform draw
//! every allocator uses.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2): Kubernetes draws from Go's global
//! generator.

use rand_core::RngCore;

pub use svcnet_model::rng::SplitMix64;

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
