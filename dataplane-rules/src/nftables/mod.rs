//! kube-proxy v1.37.2's nftables backend: a typed object model in the spirit of
//! knftables (tables, chains, rules, sets, maps, elements, counters), transactions
//! rendered as `nft -f` input, an in-memory rule set that applies them and dumps itself
//! as knftables' fake does.

mod error;
mod input;
mod limits;
mod names;
mod object;
mod proxier;
mod state;
mod transaction;

pub use error::NftError;
pub use input::{LocalDetector, NftConfig, NftEndpoint, NftServicePort, Protocol};
pub use limits::Limits;
pub use names::{COMMENT_LENGTH_MAX, NAME_LENGTH_MAX, hash_and_truncate, truncate_comment};
pub use object::{
    BaseChain, Chain, ChainType, ContainerKind, Counter, Element, Family, Hook, Object, Rule, Set, SetFlag,
    Table, Verb,
};
pub use proxier::{NftProxier, ServiceUpdate, SyncOutput, TABLE};
pub use state::{ChainState, SetState, State, TableState};
pub use transaction::{Operation, Transaction};
