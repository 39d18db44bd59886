//! Dev-only support for svcnet's tests (never published, only a dev-dependency).
//!
//! - [`case`]: the conformance cases of `testdata/conformance/<area>/` as typed structs, and
//!   their loader ([`case::cases`], [`case::run_area`]).
//! - [`check`]: the pass criteria of each area, as the shared runner applies them, over the
//!   JSON a verb answers with: the CLI tests and the libraries' in-process runners share them.
//! - [`objects`]: a case's `input` (a `v1` `List`) decoded into model objects.
//! - [`build`]: builders of the Services, Pods, Nodes and EndpointSlices tests keep writing.
//! - [`netpol`]: a direct, naive reading of the NetworkPolicy rules, for differential tests
//!   (the model's property tests and the `netpol` fuzz target).
//!
//! It depends on `svcnet-model` only, so any crate's unit or integration tests can use it
//! without linking a second copy of their own crate (except `svcnet-model`'s unit tests).
//!
//! ```
//! use svcnet_test_support::case::{self, ValidateExpect};
//!
//! let cases = case::cases::<ValidateExpect>("validation");
//! assert!(!cases.is_empty());
//! ```

pub mod build;
pub mod case;
pub mod check;
pub mod netpol;
pub mod objects;
