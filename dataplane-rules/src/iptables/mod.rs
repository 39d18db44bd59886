//! The iptables backend: what kube-proxy v1.37.2's iptables proxier
//! (`pkg/proxy/iptables/proxier.go`) programs, as typed data ([`Transaction`], [`IptablesState`])
//! and as `iptables-restore` / `iptables-save` text.
//!
//! ```
//! use svcnet_model::{EndpointSlice, Service};
//! use svcnet_rules::{ProxyConfig, ProxyModel};
//! use svcnet_rules::iptables::{IptablesSettings, sync};
//!
//! let services: Vec<Service> = vec![serde_json::from_str(r#"{"metadata":{"name":"svc1","namespace":"ns1"},
//!     "spec":{"clusterIP":"172.30.0.41","ports":[{"name":"p80","port":80}]}}"#).unwrap()];
//! let slices: Vec<EndpointSlice> = vec![serde_json::from_str(r#"{
//!     "metadata":{"name":"svc1-1","namespace":"ns1","labels":{"kubernetes.io/service-name":"svc1"}},
//!     "addressType":"IPv4","ports":[{"name":"p80","port":80}],
//!     "endpoints":[{"addresses":["10.180.0.1"]}]}"#).unwrap()];
//! let config = ProxyConfig::new("node-a", "192.168.0.2".parse().unwrap());
//! let model = ProxyModel::build(&services, &slices, None, &config);
//! let settings = IptablesSettings::new(&config).unwrap();
//! let (tx, state) = sync(None, &model, &settings);
//! let text = tx.to_restore_text();
//! assert!(text.contains("-A KUBE-SVC-XPGD46QRK7WJZT7O -m comment --comment \"ns1/svc1:p80 -> 10.180.0.1:80\" -j KUBE-SEP-SXIVWICOYRO3J4NJ\n"));
//! // The state holds the base-chain jumps too.
//! assert!(state.to_save_text().contains("-A PREROUTING -m comment --comment \"kubernetes service portals\" -j KUBE-SERVICES\n"));
//! ```

mod blocks;
mod build;
mod parse;
mod sync;
mod text;
mod types;

pub use blocks::Segments;
pub use build::{
    CT_STATE_INVALID_COUNTER, IptablesSettings, LOCALHOST_NODEPORTS_COUNTER, Line, Scope, ServiceChains,
    Table, Transaction, build_transaction,
};
pub use parse::{ParseError, Parsed, Skipped, parse_state, parse_transaction, with_jump_rules};
pub use sync::{IptablesState, KernelTable, changed_services, jump_rules, sync, sync_owned};
pub use text::Typed;
pub use types::{
    Addr, Chain, Comment, KUBE_EXTERNAL_SERVICES, KUBE_FIREWALL, KUBE_FORWARD, KUBE_MARK_MASQ,
    KUBE_NODEPORTS, KUBE_POSTROUTING, KUBE_PROXY_FIREWALL, KUBE_SERVICES, Match, Rule, ServiceChainKind,
    Target,
};
