//! ClusterIP and NodePort allocators as Kubernetes runs them: bitmap, multi-CIDR, snapshots and repair.
