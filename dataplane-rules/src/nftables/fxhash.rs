//! The public names of the workspace's fast, non-keyed hasher as this module first
//! published it: [`FxHasher`] is [`svcnet_model::hash::FastHasher`] and [`FxBuild`] its
//! `BuildHasher`. The nftables backend's own maps are keyed by names from the input and use
//! [`svcnet_model::hash::KeyedState`] instead (see that module for which maps use which).
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

/// The workspace's fast, non-keyed hasher ([`svcnet_model::hash::FastHasher`]), under the name
/// this module first gave its own Fx hasher. For keys a program computes itself; keys read
/// from input belong in maps with [`svcnet_model::hash::KeyedState`].
pub use svcnet_model::hash::FastHasher as FxHasher;

/// Builds [`FxHasher`]s ([`svcnet_model::hash::FastBuild`]).
pub type FxBuild = svcnet_model::hash::FastBuild;

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    fn h(s: &str) -> u64 {
        FxBuild::default().hash_one(s)
    }

    #[test]
    fn distinguishes_keys() {
        assert_ne!(h("10.0.0.1"), h("10.0.0.2"));
        assert_ne!(h("ab"), h("ba"));
        assert_eq!(h("service-ABC"), h("service-ABC"));
        let _: FxHasher = FxHasher::default();
    }
}
