//! kube-proxy v1.37.2's nftables backend.
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/nftables/proxier.go`, with knftables v0.0.22 (`types.go`,
//! `transaction.go`, `fake.go`) as v1.37.2 pins it.
//!
//! - Object model in the spirit of knftables: [`Table`], [`Chain`] (base chains with type,
//!   hook and priority), [`Rule`], [`Set`] (also maps), [`Element`], [`Counter`]; a
//!   [`Transaction`] of [`Operation`]s (`add`, `create`, `insert`, `flush`, `delete`, ...)
//!   rendered one line per operation exactly as knftables renders it for `nft -f`, counted
//!   as `NumOperations()` counts, and split into chunks of at most N operations.
//! - [`State`]: the rule set a kernel holds, applying transactions atomically with
//!   knftables' fake semantics and dumping itself as the fake's `Dump()` does.
//! - [`NftProxier`]: `syncProxyRules` without I/O. Full syncs write the fixed objects and
//!   every Service; partial syncs only the Services that changed; set and map elements go
//!   through an element store that writes only differences; unused chains are flushed and,
//!   once aged past the grace period, deleted in a separate transaction. Input: one
//!   service port per port of a Service, read through [`NftPort`]: the shared proxy
//!   model's `ServicePortInfo` as it is ([`NftProxier::sync_full_from`],
//!   [`NftProxier::sync_from`]) or an owned [`NftServicePort`]; and the node's
//!   [`NftConfig`] (from its `ProxyConfig`).
//! - [`Limits`]: kernel and nft limits checked before anything is emitted; a breach is an
//!   [`NftError::Limit`] naming the Service, and nothing is applied.
//!
//! - With the `nft-json` feature, [`json`]: transactions and rule sets as libnftables JSON
//!   documents (`nft -j -f` input), rules converted to typed statements through the
//!   `nftables` crate's schema.
//!
//! Kubernetes references: `pkg/proxy/nftables/proxier.go` (v1.37.2), knftables v0.0.22
//! (`transaction.go`, `objects.go`, `fake.go`).

mod error;
mod fxhash;
mod input;
#[cfg(feature = "nft-json")]
pub mod json;
mod limits;
mod names;
mod object;
mod parse;
mod proxier;
mod state;
mod text;
mod transaction;

pub use error::NftError;
pub use fxhash::{FxBuild, FxHasher};
pub use input::{LocalDetector, NftConfig, NftEndpoint, NftEndpointView, NftPort, NftServicePort, Protocol};
pub use limits::Limits;
pub use names::{COMMENT_LENGTH_MAX, NAME_LENGTH_MAX};
pub use object::{
    BaseChain, Chain, ChainType, ContainerKind, Counter, Element, Family, Hook, Object, Rule, Set, SetFlag,
    SharedStr, Table, Verb,
};
pub use parse::{ParseError, apply_text, parse_state, parse_transactions};
pub use proxier::{NftProxier, ServiceUpdate, SyncOutput, TABLE};
pub use state::{ChainState, ElementState, NameMap, SetState, State, TableState};
pub use transaction::{Operation, Transaction};
