//! One module per subcommand, each with its `Args` and `run`.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

pub mod alloc;
pub mod conntrack;
pub mod dns;
pub mod endpoints;
pub mod env;
pub mod explain;
pub mod hints;
pub mod mirror;
pub mod rules;
pub mod slice;
pub mod trace;
pub mod validate;
