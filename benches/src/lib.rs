//! Synthetic clusters at scale, shared by the criterion benchmarks.
