//! Proptest strategies shared by the property tests of this crate: each test binary takes what
//! it needs (`mod strategies;`).
#![allow(dead_code)]

pub mod networkpolicy;
pub mod service;
