//! Real-kernel test of the iptables backend: `svcnet rules --backend iptables` output loaded with
//! the real `iptables-restore` (`--noflush` for the partial sync) into a node built from network
//! namespaces, checked with real TCP and UDP connections (`common/kernel_suite.rs`).
//!
//! A `harness = false` test: it prints `SKIPPED` (and counts the checks as skipped, not passed)
//! where it cannot run: not root, or no `ip`, `python3` or `iptables-restore`.

#[path = "common/kernel_suite.rs"]
mod kernel_suite;
#[path = "common/netns.rs"]
mod netns;

static IPTABLES: kernel_suite::Backend = kernel_suite::Backend {
    name: "iptables",
    tools: &["iptables-restore"],
    // kube-proxy creates its nfacct counters over netlink before it restores rules that name
    // them; this node has no such counters, so the rules must not use them.
    extra_args: &["--nfacct", "false"],
    load_state: |node, text| node.iptables_restore(text, false),
    apply_transaction: |node, text| node.iptables_restore(text, true),
};

fn main() {
    kernel_suite::run(&IPTABLES);
}
