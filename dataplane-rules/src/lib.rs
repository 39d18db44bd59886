//! The iptables, nftables and IPVS rule sets kube-proxy would program, as data and as text.
pub mod ipvs;
