//! Sorting by integer keys a byte at a time (least significant first), for the long lists
//! of a sync (virtual servers, bound addresses, set entries): a few linear passes instead
//! of a comparison sort's many compares.

/// Below this length a comparison sort is as cheap.
const SMALL: usize = 64;

/// Sorts `items` stably by `key`, which must be below `2^(8 * bytes)` (`bytes` at most 8):
/// one pass counts every byte of every key, then one pass per byte position where the keys
/// differ moves the items into a second buffer and back.
pub(crate) fn radix_sort_by_key<T: Copy>(items: &mut [T], bytes: usize, key: impl Fn(&T) -> u64) {
    let n = items.len();
    if n < SMALL {
        items.sort_by_key(|t| key(t));
        return;
    }
    let bytes = bytes.min(8);
    let mut counts = [[0usize; 256]; 8];
    for t in items.iter() {
        let k = key(t);
        for (b, c) in counts.iter_mut().take(bytes).enumerate() {
            c[(k >> (8 * b)) as u8 as usize] += 1;
        }
    }
    let mut buf: Vec<T> = items.to_vec();
    // whether the items in their order so far are in `buf` (else in `items`)
    let mut in_buf = false;
    for (b, c) in counts.iter_mut().take(bytes).enumerate() {
        // every key has the same byte here: nothing moves
        if c.contains(&n) {
            continue;
        }
        let mut start = 0;
        for x in c.iter_mut() {
            let count = *x;
            *x = start;
            start += count;
        }
        let shift = 8 * b as u32;
        if in_buf {
            scatter(&buf, items, c, shift, &key);
        } else {
            scatter(items, &mut buf, c, shift, &key);
        }
        in_buf = !in_buf;
    }
    if in_buf {
        items.copy_from_slice(&buf);
    }
}

/// Moves each item of `from` to the next free place of its bucket (the byte of its key at
/// `shift`) in `to`; `next` holds where each bucket's next item goes.
fn scatter<T: Copy>(from: &[T], to: &mut [T], next: &mut [usize; 256], shift: u32, key: &impl Fn(&T) -> u64) {
    for t in from {
        let d = (key(t) >> shift) as u8 as usize;
        // the buckets' starts come from the counts of these same items: every place is in
        // range and taken once
        if let Some(slot) = to.get_mut(next[d]) {
            *slot = *t;
        }
        next[d] += 1;
    }
}

/// A xorshift generator from `seed` (not zero), for the IPVS tests' random inputs.
#[cfg(test)]
pub(crate) fn xorshift(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_as_a_stable_sort_does() {
        let mut next = crate::ipvs::sort::xorshift(0x9e37_79b9_7f4a_7c15u64);
        for (len, bytes, mask) in [
            (0usize, 4usize, u64::MAX),
            (10, 4, 0xffff_ffff),
            (300, 4, 0xffff_ffff),
            (1000, 7, 0xff_ffff_ffff_ffff),
            (1000, 7, 0x00_00ff_0000_00ff),
            (5000, 2, 0xff),
            (2000, 8, u64::MAX),
            (700, 1, 0),
        ] {
            // (key, position): a stable sort keeps positions rising within a key
            let mut items: Vec<(u64, usize)> = (0..len).map(|i| (next() & mask, i)).collect();
            let mut want = items.clone();
            want.sort_by_key(|t| t.0);
            radix_sort_by_key(&mut items, bytes, |t| t.0);
            assert_eq!(items, want, "{len} {bytes} {mask:#x}");
        }
    }
}
