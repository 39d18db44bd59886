//! The generic allocation bitmap (`pkg/registry/core/service/allocator/bitmap.go`): items
//! `0..max`, one bit each, with Kubernetes' scan strategies.
//!
//! Follows Kubernetes v1.37.2: `pkg/registry/core/service/allocator/bitmap.go` and `utils.go`.

use rand_core::RngCore;

use crate::AllocError;
use crate::rng::uniform;

/// How [`AllocationBitmap::allocate_next`] picks a free item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanStrategy {
    /// Random start in `[0, max)`, then forward with wrap-around (`randomScanStrategy`).
    RandomScan,
    /// KEP-3070/3668: random scan of the upper, dynamic band `[offset, max)` first; the lower,
    /// static band `[0, offset)` only once the upper one is full
    /// (`randomScanStrategyWithOffset`, the current default).
    RandomScanWithOffset(usize),
    /// Lowest free item first (`contiguousScanStrategy`, old releases).
    ContiguousScan,
}

/// A bitmap of `max` items with a count of the items taken.
///
/// Bits live in `u64` words grown on demand, so a bitmap over a huge range costs memory only up
/// to its highest item ever taken. A restored snapshot may carry bits at or beyond `max` (as in
/// Kubernetes, which keeps them and counts them); scans never hand such items out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllocationBitmap {
    words: Vec<u64>,
    max: usize,
    count: usize,
    range_spec: String,
    strategy: ScanStrategy,
}

impl AllocationBitmap {
    /// A bitmap of `max` items using the band strategy with offset 0, i.e. a plain random scan
    /// (`NewAllocationMap`).
    pub fn new(max: usize, range_spec: impl Into<String>) -> Self {
        Self::with_strategy(max, range_spec, ScanStrategy::RandomScanWithOffset(0))
    }

    /// A bitmap of `max` items preferring the band `[offset, max)` (`NewAllocationMapWithOffset`).
    pub fn with_offset(max: usize, range_spec: impl Into<String>, offset: usize) -> Self {
        Self::with_strategy(max, range_spec, ScanStrategy::RandomScanWithOffset(offset))
    }

    /// A bitmap of `max` items with an explicit strategy.
    pub fn with_strategy(max: usize, range_spec: impl Into<String>, strategy: ScanStrategy) -> Self {
        AllocationBitmap {
            words: Vec::new(),
            max,
            count: 0,
            range_spec: range_spec.into(),
            strategy,
        }
    }

    /// Number of items.
    pub fn max(&self) -> usize {
        self.max
    }

    /// Number of bits set (items taken, plus any restored bits beyond `max`).
    pub fn count(&self) -> usize {
        self.count
    }

    /// Items still free: `max - count`, floored at 0.
    pub fn free(&self) -> usize {
        self.max.saturating_sub(self.count)
    }

    /// The opaque range string stored with snapshots.
    pub fn range_spec(&self) -> &str {
        &self.range_spec
    }

    /// The scan strategy.
    pub fn strategy(&self) -> ScanStrategy {
        self.strategy
    }

    /// The start of the upper (dynamic) band; 0 for strategies without bands.
    pub fn band_offset(&self) -> usize {
        match self.strategy {
            ScanStrategy::RandomScanWithOffset(o) => o,
            _ => 0,
        }
    }

    fn word(&self, w: usize) -> u64 {
        self.words.get(w).copied().unwrap_or(0)
    }

    /// True when item `offset` is taken.
    pub fn has(&self, offset: usize) -> bool {
        self.word(offset / 64) >> (offset % 64) & 1 == 1
    }

    fn set(&mut self, offset: usize) {
        let w = offset / 64;
        if w >= self.words.len() {
            self.words.resize(w + 1, 0);
        }
        // Grown above to hold word `w`.
        self.words[w] |= 1 << (offset % 64);
    }

    /// Takes item `offset`: refused when outside `[0, max)` or already taken.
    pub fn allocate(&mut self, offset: usize) -> Result<(), AllocError> {
        if offset >= self.max {
            return Err(AllocError::OffsetNotInRange {
                offset,
                max: self.max,
            });
        }
        if self.has(offset) {
            return Err(AllocError::OffsetAllocated { offset });
        }
        self.set(offset);
        self.count += 1;
        Ok(())
    }

    /// Takes a free item chosen by the strategy, or `None` when there is none.
    pub fn allocate_next<R: RngCore + ?Sized>(&mut self, rng: &mut R) -> Option<usize> {
        let at = self.pick(rng)?;
        self.set(at);
        self.count += 1;
        Some(at)
    }

    /// The item [`allocate_next`](Self::allocate_next) would take, without taking it.
    fn pick<R: RngCore + ?Sized>(&self, rng: &mut R) -> Option<usize> {
        if self.count >= self.max {
            return None;
        }
        match self.strategy {
            ScanStrategy::ContiguousScan => self.first_clear(0, self.max),
            ScanStrategy::RandomScan => self.scan_band(rng, 0, self.max),
            ScanStrategy::RandomScanWithOffset(o) => {
                let o = o.min(self.max);
                self.scan_band(rng, o, self.max)
                    .or_else(|| self.scan_band(rng, 0, o))
            }
        }
    }

    /// Random start in `[lo, hi)`, first clear bit forward with wrap-around.
    fn scan_band<R: RngCore + ?Sized>(&self, rng: &mut R, lo: usize, hi: usize) -> Option<usize> {
        if lo >= hi {
            return None;
        }
        let start = lo + uniform(rng, (hi - lo) as u64) as usize;
        self.first_clear(start, hi)
            .or_else(|| self.first_clear(lo, start))
    }

    /// The lowest clear bit in `[from, to)`, a word at a time.
    fn first_clear(&self, from: usize, to: usize) -> Option<usize> {
        if from >= to {
            return None;
        }
        let last = (to - 1) / 64;
        let mut w = from / 64;
        let mut free = !self.word(w) & (!0u64 << (from % 64));
        loop {
            if free != 0 {
                let bit = w * 64 + free.trailing_zeros() as usize;
                return (bit < to).then_some(bit);
            }
            w += 1;
            if w > last {
                return None;
            }
            if w >= self.words.len() {
                let bit = w * 64;
                return (bit < to).then_some(bit);
            }
            free = !self.word(w);
        }
    }

    /// Frees item `offset`; freeing a free or out-of-range item does nothing.
    pub fn release(&mut self, offset: usize) {
        if !self.has(offset) {
            return;
        }
        // `has` found the item set, so its word exists.
        self.words[offset / 64] &= !(1 << (offset % 64));
        self.count -= 1;
        // Keep the representation canonical (no zero words at the top), so equal contents
        // compare equal.
        while self.words.last() == Some(&0) {
            self.words.pop();
        }
    }

    /// Frees every item.
    pub fn clear(&mut self) {
        self.words.clear();
        self.count = 0;
    }

    /// The taken items in ascending order (`ForEach`), restored bits beyond `max` included.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| {
            let mut rest = word;
            std::iter::from_fn(move || {
                if rest == 0 {
                    return None;
                }
                let bit = rest.trailing_zeros() as usize;
                rest &= rest - 1;
                Some(w * 64 + bit)
            })
        })
    }

    /// The bitmap as Kubernetes stores it: the big-endian magnitude of the integer whose bit
    /// *i* is item *i*, without leading zero bytes (empty when nothing is taken).
    pub fn snapshot_bytes(&self) -> Vec<u8> {
        let Some(top) = self.words.iter().rposition(|&w| w != 0) else {
            return Vec::new();
        };
        let mut out = Vec::with_capacity((top + 1) * 8);
        for w in self.words[..=top].iter().rev() {
            out.extend_from_slice(&w.to_be_bytes());
        }
        let lead = out.iter().take_while(|&&b| b == 0).count();
        out.drain(..lead);
        out
    }

    /// `(range_spec, bytes)`, as `Snapshot()` returns them.
    pub fn snapshot(&self) -> (String, Vec<u8>) {
        (self.range_spec.clone(), self.snapshot_bytes())
    }

    /// Loads a snapshot: refused when `range_spec` differs from the bitmap's; otherwise the bits
    /// are replaced and the count recomputed. Bits beyond `max` are kept, as Kubernetes does.
    pub fn restore(&mut self, range_spec: &str, data: &[u8]) -> Result<(), AllocError> {
        if range_spec != self.range_spec {
            return Err(AllocError::MismatchedRange {
                given: range_spec.to_owned(),
                current: self.range_spec.clone(),
            });
        }
        // Big-endian bytes, least significant word last: take 8-byte chunks from the end.
        let mut words = Vec::with_capacity(data.len().div_ceil(8));
        let mut chunks = data.rchunks_exact(8);
        for c in &mut chunks {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            words.push(u64::from_be_bytes(b));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            words.push(rest.iter().fold(0u64, |acc, &b| (acc << 8) | u64::from(b)));
        }
        while words.last() == Some(&0) {
            words.pop();
        }
        self.count = words.iter().map(|w| w.count_ones() as usize).sum();
        self.words = words;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::SplitMix64;

    #[test]
    fn allocate_max_and_refusals() {
        let mut b = AllocationBitmap::with_offset(128, "x", 16);
        for i in 0..128 {
            b.allocate(i).unwrap();
        }
        assert_eq!(b.free(), 0);
        assert!(b.allocate_next(&mut SplitMix64::new(1)).is_none());
        assert!(matches!(
            b.allocate(128),
            Err(AllocError::OffsetNotInRange { .. })
        ));
        assert!(matches!(b.allocate(0), Err(AllocError::OffsetAllocated { .. })));
    }

    #[test]
    fn upper_band_first() {
        let mut b = AllocationBitmap::with_offset(128, "x", 16);
        let mut r = SplitMix64::new(9);
        for _ in 0..112 {
            assert!(b.allocate_next(&mut r).unwrap() >= 16);
        }
        assert!(b.allocate_next(&mut r).unwrap() < 16);
        assert_eq!(b.free(), 15);
    }

    #[test]
    fn contiguous_takes_lowest() {
        let mut b = AllocationBitmap::with_strategy(10, "x", ScanStrategy::ContiguousScan);
        let mut r = SplitMix64::new(0);
        b.allocate(0).unwrap();
        assert_eq!(b.allocate_next(&mut r), Some(1));
        b.release(0);
        assert_eq!(b.allocate_next(&mut r), Some(0));
    }

    #[test]
    fn snapshot_encoding() {
        let mut b = AllocationBitmap::new(254, "192.168.1.0/24");
        assert!(b.snapshot_bytes().is_empty());
        b.allocate(9).unwrap();
        assert_eq!(b.snapshot_bytes(), vec![2, 0]);
        b.allocate(0).unwrap();
        assert_eq!(b.snapshot_bytes(), vec![2, 1]);
        b.allocate(200).unwrap();
        let (spec, data) = b.snapshot();
        let mut c = AllocationBitmap::new(254, "192.168.1.0/24");
        c.restore(&spec, &data).unwrap();
        assert_eq!(c, b);
        assert!(c.restore("other", &data).is_err());
    }

    #[test]
    fn restore_keeps_bits_beyond_max() {
        let mut big = AllocationBitmap::new(65535, "r");
        for i in 32..65535 {
            big.allocate(i).unwrap();
        }
        let (_, data) = big.snapshot();
        let mut small = AllocationBitmap::new(10, "r");
        small.restore("r", &data).unwrap();
        assert_eq!(small.count(), 65535 - 32);
        assert!(small.has(40));
        assert!(!small.has(5));
        assert_eq!(small.free(), 0);
    }

    #[test]
    fn iter_is_ascending() {
        let mut b = AllocationBitmap::new(300, "x");
        for i in [299, 0, 64, 63, 128] {
            b.allocate(i).unwrap();
        }
        assert_eq!(b.iter().collect::<Vec<_>>(), vec![0, 63, 64, 128, 299]);
    }

    #[test]
    fn first_clear_across_words_and_lazy_tail() {
        let mut b = AllocationBitmap::with_strategy(1000, "x", ScanStrategy::ContiguousScan);
        for i in 0..130 {
            b.allocate(i).unwrap();
        }
        assert_eq!(b.first_clear(0, 1000), Some(130));
        assert_eq!(b.first_clear(500, 1000), Some(500));
        assert_eq!(b.first_clear(0, 100), None);
    }
}
