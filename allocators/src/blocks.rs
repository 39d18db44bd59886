//! A set of `u64` kept as sorted blocks of at most [`BLOCK`] values, with the first value of
//! every block in a separate array for a cache-friendly search. Memory is 8 to 16 bytes per value
//! plus a few bytes per block, and every operation is a couple of binary searches and one short
//! `memmove`.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2): the storage behind the sparse IPv6
//! range (`sparse.rs`).

/// Largest number of values in one block.
const BLOCK: usize = 512;

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct SortedBlocks {
    firsts: Vec<u64>,
    blocks: Vec<Vec<u64>>,
    len: u64,
}

impl SortedBlocks {
    pub(crate) fn len(&self) -> u64 {
        self.len
    }

    /// Index of the block that holds, or would hold, `v` (0 when `v` is below every block).
    fn locate(&self, v: u64) -> usize {
        self.firsts.partition_point(|&f| f <= v).saturating_sub(1)
    }

    pub(crate) fn contains(&self, v: u64) -> bool {
        self.blocks
            .get(self.locate(v))
            .is_some_and(|b| b.binary_search(&v).is_ok())
    }

    /// Adds `v`; false when it was already present.
    pub(crate) fn insert(&mut self, v: u64) -> bool {
        if self.blocks.is_empty() {
            self.firsts.push(v);
            self.blocks.push(vec![v]);
            self.len = 1;
            return true;
        }
        let mut b = self.locate(v);
        let Some(block) = self.blocks.get(b) else {
            return false;
        };
        if block.binary_search(&v).is_ok() {
            return false;
        }
        if block.len() >= BLOCK {
            self.split(b);
            if self.firsts.get(b + 1).is_some_and(|&f| f <= v) {
                b += 1;
            }
        }
        let Some(block) = self.blocks.get_mut(b) else {
            return false;
        };
        let pos = block.binary_search(&v).unwrap_or_else(|p| p);
        block.insert(pos, v);
        if pos == 0
            && let Some(f) = self.firsts.get_mut(b)
        {
            *f = v;
        }
        self.len += 1;
        true
    }

    fn split(&mut self, b: usize) {
        let Some(block) = self.blocks.get_mut(b) else {
            return;
        };
        let mut right = Vec::with_capacity(BLOCK);
        right.extend_from_slice(&block[BLOCK / 2..]);
        block.truncate(BLOCK / 2);
        self.firsts.insert(b + 1, right[0]);
        self.blocks.insert(b + 1, right);
    }

    /// Removes `v`; false when it was absent.
    pub(crate) fn remove(&mut self, v: u64) -> bool {
        let b = self.locate(v);
        let Some(block) = self.blocks.get_mut(b) else {
            return false;
        };
        let Ok(pos) = block.binary_search(&v) else {
            return false;
        };
        block.remove(pos);
        if block.is_empty() {
            self.blocks.remove(b);
            self.firsts.remove(b);
        } else if pos == 0 {
            let first = block[0];
            // `firsts` runs beside `blocks`: block `b` has its entry.
            self.firsts[b] = first;
        }
        self.len -= 1;
        true
    }

    /// The lowest value in `[from, to)` that is not in the set.
    pub(crate) fn first_absent(&self, from: u64, to: u64) -> Option<u64> {
        if from >= to {
            return None;
        }
        let mut cand = from;
        let mut b = self.locate(cand);
        while let Some(block) = self.blocks.get(b) {
            let Ok(i) = block.binary_search(&cand) else {
                break;
            };
            // The run of consecutive values starting at `cand` ends at the last `k` with
            // `tail[k] == cand + k` (true up to some k, false after): binary search for it.
            let tail = &block[i..];
            let (mut lo, mut hi) = (0usize, tail.len());
            while hi - lo > 1 {
                let mid = lo + (hi - lo) / 2;
                if tail[mid] - cand == mid as u64 {
                    lo = mid;
                } else {
                    hi = mid;
                }
            }
            cand = tail[lo].checked_add(1)?;
            if i + lo + 1 < block.len() {
                break;
            }
            b += 1;
            if self.firsts.get(b) != Some(&cand) {
                break;
            }
        }
        (cand < to).then_some(cand)
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.blocks.iter().flatten().copied()
    }

    /// Bytes of heap held (capacities, not lengths).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.firsts.capacity() * 8
            + self.blocks.capacity() * std::mem::size_of::<Vec<u64>>()
            + self.blocks.iter().map(|b| b.capacity() * 8).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn matches_a_btreeset() {
        let mut s = SortedBlocks::default();
        let mut m = BTreeSet::new();
        let mut x = 12345u64;
        for i in 0..20_000u64 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let v = (x >> 33) % 5000;
            if i % 3 == 0 {
                assert_eq!(s.remove(v), m.remove(&v));
            } else {
                assert_eq!(s.insert(v), m.insert(v));
            }
            if i % 97 == 0 {
                let from = (x >> 20) % 5000;
                let want = (from..5001).find(|c| !m.contains(c)).filter(|&c| c < 5001);
                assert_eq!(s.first_absent(from, 5001), want, "from {from}");
            }
        }
        assert_eq!(s.len(), m.len() as u64);
        assert!(s.iter().eq(m.iter().copied()));
        for v in 0..5000 {
            assert_eq!(s.contains(v), m.contains(&v));
        }
    }

    #[test]
    fn long_runs_cross_blocks() {
        let mut s = SortedBlocks::default();
        for v in 10..3000 {
            s.insert(v);
        }
        assert!(s.blocks.len() > 2);
        assert_eq!(s.first_absent(10, 10_000), Some(3000));
        assert_eq!(s.first_absent(0, 10_000), Some(0));
        assert_eq!(s.first_absent(500, 3000), None);
        s.remove(1500);
        assert_eq!(s.first_absent(11, 10_000), Some(1500));
        s.insert(u64::MAX);
        assert_eq!(s.first_absent(u64::MAX, u64::MAX), None);
    }
}
