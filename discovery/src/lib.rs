//! The DNS records and service environment variables that make Kubernetes Services discoverable.
