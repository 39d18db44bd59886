//! Topology hints and per-node endpoint selection as Kubernetes computes them.
