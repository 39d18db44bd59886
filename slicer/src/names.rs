//! Names for new slices: the API server appends a random suffix to `generateName`; svcnet takes
//! the suffix from a caller-supplied, deterministic source.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/apiserver/pkg/storage/names/generate.go` (the
//! suffix's alphabet and length); the source is svcnet's own.

use svcnet_model::rng::{RngCore, SplitMix64};

/// The characters Kubernetes' name generator draws suffixes from (no vowels, no confusables).
const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Kubernetes caps the base of a generated name so that base + suffix fit in 63 characters.
const MAX_BASE: usize = 58;
const SUFFIX_LEN: usize = 5;

/// Where names of new objects come from.
pub trait NameSource {
    /// A new name for an object with `generateName` = `prefix`. Called again when the name is
    /// already taken.
    fn generate(&mut self, prefix: &str) -> String;
}

/// Kubernetes-style names (`prefix` cut to 58 characters, then 5 characters from the generator's
/// alphabet) drawn from a random generator: the default, [`SplitMix64`], is seeded, so the same
/// seed gives the same names. Any other [`RngCore`] works through [`SeededNames::from_rng`].
///
/// ```
/// use svcnet_model::rng::SplitMix64;
/// use svcnet_slicer::{NameSource, SeededNames};
///
/// let a = SeededNames::new(7).generate("web-");
/// assert_eq!(a, SeededNames::from_rng(SplitMix64::new(7)).generate("web-"));
/// assert!(a.starts_with("web-") && a.len() == 9);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeededNames<R = SplitMix64> {
    rng: R,
}

impl SeededNames {
    /// A source drawing from [`SplitMix64`] seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        SeededNames::from_rng(SplitMix64::new(seed))
    }
}

impl<R: RngCore> SeededNames<R> {
    /// A source drawing from `rng`.
    pub fn from_rng(rng: R) -> Self {
        SeededNames { rng }
    }

    /// The generator, to hand on or inspect.
    pub fn into_rng(self) -> R {
        self.rng
    }
}

impl Default for SeededNames {
    fn default() -> Self {
        SeededNames::new(0)
    }
}

impl<R: RngCore> NameSource for SeededNames<R> {
    fn generate(&mut self, prefix: &str) -> String {
        let mut base: String = prefix.chars().take(MAX_BASE).collect();
        let mut r = self.rng.next_u64();
        for _ in 0..SUFFIX_LEN {
            let i = (r % ALPHABET.len() as u64) as usize;
            r /= ALPHABET.len() as u64;
            base.push(char::from(ALPHABET[i]));
        }
        base
    }
}

/// Sequential names: `prefix` followed by 1, 2, 3, ... Handy in tests and examples.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SequentialNames {
    next: u64,
}

impl SequentialNames {
    /// Starts at 1.
    pub fn new() -> Self {
        Self::default()
    }
}

impl NameSource for SequentialNames {
    fn generate(&mut self, prefix: &str) -> String {
        self.next += 1;
        format!("{prefix}{}", self.next)
    }
}

impl<F: FnMut(&str) -> String> NameSource for F {
    fn generate(&mut self, prefix: &str) -> String {
        self(prefix)
    }
}

/// True when `s` is a valid DNS subdomain (RFC 1123): at most 253 characters of dot-separated
/// labels of lowercase alphanumerics and `-`, each starting and ending alphanumeric.
fn is_dns_subdomain(s: &str) -> bool {
    if s.is_empty() || s.len() > 253 {
        return false;
    }
    s.split('.').all(|label| {
        let b = label.as_bytes();
        let alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(&f), Some(&l)) => alnum(f) && alnum(l) && b.iter().all(|&c| alnum(c) || c == b'-'),
            _ => false,
        }
    })
}

/// The `generateName` of a Service's slices (`getEndpointSlicePrefix`): `<name>-` when that is a
/// valid name prefix, else the bare name.
pub fn slice_name_prefix(service_name: &str) -> String {
    // As a prefix, the trailing dash stands for the characters still to come.
    let masked = format!("{service_name}a");
    if is_dns_subdomain(&masked) {
        format!("{service_name}-")
    } else {
        service_name.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeded_names_repeat_and_look_like_kubernetes() {
        let mut a = SeededNames::new(7);
        let mut b = SeededNames::new(7);
        let n1 = a.generate("web-");
        assert_eq!(n1, b.generate("web-"));
        assert_eq!(n1.len(), 9);
        assert!(n1[4..].bytes().all(|c| ALPHABET.contains(&c)));
        assert_ne!(n1, a.generate("web-"));
        let long = "x".repeat(70);
        assert_eq!(a.generate(&long).len(), 63);
        // The names of a seed are part of the CLI's output (`--seed`): pin the first one.
        assert_eq!(SeededNames::new(1).generate("web-"), PINNED_SEED_1);
    }

    /// `SeededNames::new(1).generate("web-")`, as the first SplitMix64 draw of seed 1 spells it.
    const PINNED_SEED_1: &str = "web-hvls4";

    #[test]
    fn prefixes() {
        assert_eq!(slice_name_prefix("foo"), "foo-");
        assert_eq!(slice_name_prefix("Foo"), "Foo");
        assert_eq!(slice_name_prefix(&"a".repeat(253)), "a".repeat(253));
        assert_eq!(SequentialNames::new().generate("s-"), "s-1");
    }
}
