//! SHA-256 (FIPS 180-4) and the chain-name hash kube-proxy v1.37.2 builds from it
//! (`pkg/proxy/iptables/proxier.go` `portProtoHash`, `servicePortEndpointChainName`; the same
//! recipe in nftables): the first 16 characters of the standard base32 encoding of the SHA-256
//! of the input. Buffering and padding are done here; the block compression is the `sha2`
//! crate's (RustCrypto), which uses the CPU's SHA extensions (x86 SHA-NI, ARMv8 SHA2) where
//! it finds them at run time and its portable code elsewhere. Checked against the FIPS test
//! vectors and kube-proxy's chain names.

const H0: [u32; 8] = [
    0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
];

/// An incremental SHA-256.
#[derive(Debug, Clone)]
pub struct Sha256 {
    state: [u32; 8],
    block: [u8; 64],
    filled: usize,
    length: u64,
}

impl Default for Sha256 {
    fn default() -> Self {
        Sha256 {
            state: H0,
            block: [0; 64],
            filled: 0,
            length: 0,
        }
    }
}

impl Sha256 {
    /// A fresh hash.
    pub fn new() -> Self {
        Self::default()
    }

    /// Feeds bytes.
    pub fn update(&mut self, mut data: &[u8]) {
        self.length = self.length.wrapping_add(data.len() as u64);
        while !data.is_empty() {
            let take = (64 - self.filled).min(data.len());
            let (head, rest) = data.split_at(take);
            self.block[self.filled..self.filled + take].copy_from_slice(head);
            self.filled += take;
            data = rest;
            if self.filled == 64 {
                let block = self.block;
                compress(&mut self.state, &block);
                self.filled = 0;
            }
        }
    }

    /// The 32-byte digest.
    pub fn finish(mut self) -> [u8; 32] {
        let bits = self.length.wrapping_mul(8);
        // 0x80, zeros up to 56 bytes into a block, the bit length: fed in one piece.
        let zeros = (119 - self.filled) % 64;
        let mut pad = [0u8; 72];
        pad[0] = 0x80;
        // zeros < 64: the padding fits in `pad`.
        pad[1 + zeros..9 + zeros].copy_from_slice(&bits.to_be_bytes());
        self.update(&pad[..9 + zeros]);
        let mut out = [0u8; 32];
        for (chunk, word) in out.chunks_exact_mut(4).zip(self.state) {
            chunk.copy_from_slice(&word.to_be_bytes());
        }
        out
    }
}

/// One block of the SHA-256 compression (`sha2` picks hardware or software at run time).
#[inline]
fn compress(state: &mut [u32; 8], block: &[u8; 64]) {
    sha2::block_api::compress256(state, std::slice::from_ref(block));
}

/// The SHA-256 of `data`.
pub fn sha256(data: &[u8]) -> [u8; 32] {
    digest(&[data])
}

/// The SHA-256 of the parts fed one after another.
fn digest(parts: &[&[u8]]) -> [u8; 32] {
    match one_block(parts) {
        // Short inputs (every chain name's): one padded block, compressed once.
        Some(block) => {
            let mut state = H0;
            compress(&mut state, &block);
            let mut out = [0u8; 32];
            for (chunk, word) in out.chunks_exact_mut(4).zip(state) {
                chunk.copy_from_slice(&word.to_be_bytes());
            }
            out
        }
        None => {
            let mut h = Sha256::new();
            for p in parts {
                h.update(p);
            }
            h.finish()
        }
    }
}

/// The parts, fed one after another, as one padded SHA-256 block, when they fit in one (55
/// bytes at most).
#[inline]
pub(crate) fn one_block(parts: &[&[u8]]) -> Option<[u8; 64]> {
    let total: usize = parts.iter().map(|p| p.len()).sum();
    if total > 55 {
        return None;
    }
    let mut block = [0u8; 64];
    let mut at = 0;
    for p in parts {
        // total <= 55: every part fits before the padding.
        block[at..at + p.len()].copy_from_slice(p);
        at += p.len();
    }
    block[at] = 0x80;
    block[56..64].copy_from_slice(&((total as u64) * 8).to_be_bytes());
    Some(block)
}

const BASE32: &[u8; 32] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

/// The base32 characters of every 10-bit value, two by two.
const BASE32_PAIRS: [[u8; 2]; 1024] = {
    let mut t = [[0u8; 2]; 1024];
    let mut i = 0;
    while i < 1024 {
        t[i] = [BASE32[i >> 5], BASE32[i & 31]];
        i += 1;
    }
    t
};

/// The first 16 characters of the base32 encoding of a digest whose first words are `state`'s
/// (16 characters of 5 bits: the first 80 bits, words 0, 1 and half of 2), two characters
/// (10 bits) at a time from two 40-bit halves.
#[inline]
fn base32_head(state: &[u32; 8]) -> [u8; 16] {
    let hi = (u64::from(state[0]) << 8) | u64::from(state[1] >> 24);
    let lo = (u64::from(state[1] & 0x00ff_ffff) << 16) | u64::from(state[2] >> 16);
    let mut out = [0u8; 16];
    for (half, bits) in [hi, lo].into_iter().enumerate() {
        for k in 0..4 {
            let pair = BASE32_PAIRS[((bits >> (30 - 10 * k)) & 1023) as usize];
            let at = 8 * half + 2 * k;
            out[at] = pair[0];
            out[at + 1] = pair[1];
        }
    }
    out
}

/// The first 16 characters of the standard base32 encoding of the SHA-256 of the parts, fed
/// one after another: kube-proxy's chain-name hash (16 characters use the first 10 bytes).
pub fn chain_hash(parts: &[&[u8]]) -> [u8; 16] {
    match one_block(parts) {
        Some(block) => chain_hash_block(&block),
        None => {
            let d = digest(parts);
            let mut state = [0u32; 8];
            for (word, chunk) in state.iter_mut().zip(d.chunks_exact(4)) {
                *word = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
            }
            base32_head(&state)
        }
    }
}

/// [`chain_hash`] of an input given as its padded block (see [`one_block`]).
#[inline]
pub(crate) fn chain_hash_block(block: &[u8; 64]) -> [u8; 16] {
    let mut state = H0;
    compress(&mut state, block);
    base32_head(&state)
}

/// [`chain_hash_block`] of each block, in order, appended to `out`.
pub(crate) fn chain_hash_blocks(blocks: &[[u8; 64]], out: &mut Vec<[u8; 16]>) {
    out.reserve(blocks.len());
    out.extend(blocks.iter().map(chain_hash_block));
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(d: &[u8]) -> String {
        d.iter().map(|b| format!("{b:02x}")).collect()
    }

    #[test]
    fn fips_vectors() {
        assert_eq!(
            hex(&sha256(b"")),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            hex(&sha256(b"abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(
            hex(&sha256(
                b"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"
            )),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"
        );
        let million = vec![b'a'; 1_000_000];
        let mut h = Sha256::new();
        for chunk in million.chunks(997) {
            h.update(chunk);
        }
        assert_eq!(
            hex(&h.finish()),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        );
    }

    #[test]
    fn padding_at_every_length() {
        // Inputs of 0..=130 bytes end in every position of a block; checked against the
        // byte-at-a-time padding of FIPS 180-4 §5.1.1.
        for n in 0..=130usize {
            let data: Vec<u8> = (0..n).map(|i| (i * 7 + 3) as u8).collect();
            let mut slow = Sha256::new();
            slow.update(&data);
            let bits = (n as u64) * 8;
            slow.update(&[0x80]);
            while slow.filled != 56 {
                slow.update(&[0]);
            }
            slow.update(&bits.to_be_bytes());
            assert_eq!(slow.filled, 0);
            let mut expected = [0u8; 32];
            for (chunk, word) in expected.chunks_exact_mut(4).zip(slow.state) {
                chunk.copy_from_slice(&word.to_be_bytes());
            }
            assert_eq!(sha256(&data), expected, "length {n}");
        }
    }

    #[test]
    fn chain_hash_at_every_length() {
        // The one-block path (up to 55 bytes) and the general one agree at and around the edge.
        for n in 0..=130usize {
            let data: Vec<u8> = (0..n).map(|i| (i * 13 + 1) as u8).collect();
            let (a, b) = data.split_at(n / 3);
            // the streaming hash (the one-block path is not taken there)
            let mut h = Sha256::new();
            h.update(&data);
            let d = h.finish();
            let mut want = [0u8; 16];
            let bits: Vec<u8> = d
                .iter()
                .take(10)
                .flat_map(|byte| (0..8).rev().map(move |i| (byte >> i) & 1))
                .collect();
            for (slot, five) in want.iter_mut().zip(bits.chunks(5)) {
                let v = five.iter().fold(0usize, |acc, b| acc * 2 + usize::from(*b));
                *slot = BASE32[v];
            }
            assert_eq!(chain_hash(&[a, b]), want, "length {n}");
        }
    }

    /// The chain hash the slow way: the streaming hash, its first 80 bits in base32 bit by bit.
    fn slow_chain_hash(data: &[u8]) -> [u8; 16] {
        let mut h = Sha256::new();
        h.update(data);
        let d = h.finish();
        let bits: Vec<u8> = d
            .iter()
            .take(10)
            .flat_map(|byte| (0..8).rev().map(move |i| (byte >> i) & 1))
            .collect();
        let mut out = [0u8; 16];
        for (slot, five) in out.iter_mut().zip(bits.chunks(5)) {
            *slot = BASE32[five.iter().fold(0usize, |acc, b| acc * 2 + usize::from(*b))];
        }
        out
    }

    #[test]
    fn blocks_hash_as_their_parts() {
        // Every one-block length, split in three parts, many blocks at once, in order.
        let inputs: Vec<Vec<u8>> = (0..=55usize)
            .flat_map(|n| (0..3u8).map(move |k| (0..n).map(|i| (i as u8).wrapping_mul(31) ^ k).collect()))
            .collect();
        let blocks: Vec<[u8; 64]> = inputs
            .iter()
            .map(|d| {
                let (a, rest) = d.split_at(d.len() / 3);
                let (b, c) = rest.split_at(rest.len() / 2);
                one_block(&[a, b, c]).unwrap()
            })
            .collect();
        let mut got = Vec::new();
        chain_hash_blocks(&blocks, &mut got);
        let want: Vec<[u8; 16]> = inputs.iter().map(|d| slow_chain_hash(d)).collect();
        assert_eq!(got, want);
        assert!(one_block(&[&[0u8; 50], &[0u8; 6]]).is_none());
    }

    proptest::proptest! {
        /// Random messages of one block or more: the chain hash is the streaming hash's.
        #[test]
        fn chain_hashes_are_the_streaming_hashes(
            msgs in proptest::collection::vec(proptest::collection::vec(proptest::num::u8::ANY, 0..=80), 0..12)
        ) {
            let short: Vec<&Vec<u8>> = msgs.iter().filter(|m| m.len() <= 55).collect();
            let blocks: Vec<[u8; 64]> = short.iter().map(|m| one_block(&[m]).unwrap()).collect();
            let mut got = Vec::new();
            chain_hash_blocks(&blocks, &mut got);
            let want: Vec<[u8; 16]> = short.iter().map(|m| slow_chain_hash(m)).collect();
            proptest::prop_assert_eq!(got, want);
            for m in &msgs {
                proptest::prop_assert_eq!(chain_hash(&[m]), slow_chain_hash(m));
            }
        }
    }

    #[test]
    fn kube_proxy_chain_names() {
        assert_eq!(&chain_hash(&[b"ns1/svc1:p80", b"tcp"]), b"XPGD46QRK7WJZT7O");
        assert_eq!(
            &chain_hash(&[b"ns1/svc1:p80tcp10.180.0.1:80"]),
            b"SXIVWICOYRO3J4NJ"
        );
    }
}
