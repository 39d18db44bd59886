//! The iptables rules IPVS mode adds (`writeIptablesRules`, `acceptIPVSTraffic`,
//! `createAndLinkKubeChain` in `pkg/proxy/ipvs/proxier.go`): the restore payload of one sync
//! and the jumps from the built-in chains that kube-proxy ensures beside it.
//!
//! Follows Kubernetes v1.37.2: `pkg/proxy/ipvs/proxier.go`.

use std::fmt::Write;
use std::net::IpAddr;

use serde::{Deserialize, Serialize};

use super::ipset::{IpSetKind, IpSets};
use super::server::Protocol;

/// An iptables table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Table {
    /// `nat`.
    Nat,
    /// `filter`.
    Filter,
}

impl Table {
    /// The table's name.
    pub fn as_str(self) -> &'static str {
        match self {
            Table::Nat => "nat",
            Table::Filter => "filter",
        }
    }
}

/// One iptables rule, with the fields kube-proxy's IPVS tests look at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rule {
    /// The table.
    pub table: Table,
    /// The chain.
    pub chain: &'static str,
    /// The whole line, `-A CHAIN ...`, as written.
    pub line: String,
    /// The target (`-j`).
    pub jump: &'static str,
    /// The ipset matched (`--match-set`), empty when none.
    pub match_set: &'static str,
    /// The source match (`-s`), `!`-prefixed when negated, empty when none.
    pub source_address: String,
}

/// The chains IPVS mode declares in its restore payload, per table, in kube-proxy's order
/// (`iptablesChains`).
pub const NAT_CHAINS: [&str; 5] = [
    "KUBE-SERVICES",
    "KUBE-POSTROUTING",
    "KUBE-NODE-PORT",
    "KUBE-LOAD-BALANCER",
    "KUBE-MARK-MASQ",
];
/// The filter chains IPVS mode declares (`iptablesChains`).
pub const FILTER_CHAINS: [&str; 6] = [
    "KUBE-FORWARD",
    "KUBE-NODE-PORT",
    "KUBE-PROXY-FIREWALL",
    "KUBE-SOURCE-RANGES-FIREWALL",
    "KUBE-IPVS-FILTER",
    "KUBE-IPVS-OUT-FILTER",
];

/// The jumps from built-in chains kube-proxy ensures (prepends) at every sync, in its order
/// (`iptablesJumpChain`): table, from, to, comment.
pub const JUMPS: [(Table, &str, &str, &str); 9] = [
    (
        Table::Nat,
        "OUTPUT",
        "KUBE-SERVICES",
        "kubernetes service portals",
    ),
    (
        Table::Nat,
        "PREROUTING",
        "KUBE-SERVICES",
        "kubernetes service portals",
    ),
    (
        Table::Nat,
        "POSTROUTING",
        "KUBE-POSTROUTING",
        "kubernetes postrouting rules",
    ),
    (
        Table::Filter,
        "FORWARD",
        "KUBE-FORWARD",
        "kubernetes forwarding rules",
    ),
    (
        Table::Filter,
        "INPUT",
        "KUBE-NODE-PORT",
        "kubernetes health check rules",
    ),
    (
        Table::Filter,
        "INPUT",
        "KUBE-PROXY-FIREWALL",
        "kube-proxy firewall rules",
    ),
    (
        Table::Filter,
        "FORWARD",
        "KUBE-PROXY-FIREWALL",
        "kube-proxy firewall rules",
    ),
    (
        Table::Filter,
        "INPUT",
        "KUBE-IPVS-FILTER",
        "kubernetes ipvs access filter",
    ),
    (
        Table::Filter,
        "OUTPUT",
        "KUBE-IPVS-OUT-FILTER",
        "kubernetes ipvs access filter",
    ),
];

/// The built-in chains of each table as kube-proxy's iptables fake lists them.
const NAT_BUILTIN: [&str; 4] = ["PREROUTING", "INPUT", "OUTPUT", "POSTROUTING"];
const FILTER_BUILTIN: [&str; 3] = ["INPUT", "FORWARD", "OUTPUT"];

/// A load-balancer IP:port that nodes may not reach (it has source ranges, none holding the
/// node IP): one `KUBE-IPVS-OUT-FILTER` DROP rule each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockedFromNode {
    /// The load-balancer IP.
    pub ip: IpAddr,
    /// The protocol.
    pub protocol: Protocol,
    /// The Service port.
    pub port: u16,
}

/// How IPVS mode's iptables rules masquerade ClusterIP traffic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ClusterIpMasquerade {
    /// `masqueradeAll`: mark every packet to a ClusterIP.
    All,
    /// A local-traffic detector: mark traffic whose source is not the pod CIDR.
    NotFrom(String),
    /// No detector: mark node-originated traffic whose source is a service VIP (`src,dst`).
    SourceIsVip,
}

/// The settings the iptables part depends on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IptablesSettings<'a> {
    /// The IP family: IPv6 when true.
    pub ipv6: bool,
    /// The masquerade mark text (`0x4000`, `0x00004000`).
    pub mark: &'a str,
    /// How ClusterIP traffic is masqueraded.
    pub cluster_ip_masquerade: &'a ClusterIpMasquerade,
}

/// IPVS mode's iptables rules: the restore payload of a sync (nat then filter) and the
/// jumps from the built-in chains.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IptablesPart {
    /// The nat rules, in write order.
    pub nat: Vec<Rule>,
    /// The filter rules, in write order.
    pub filter: Vec<Rule>,
    /// The jumps from the built-in chains, in the order they end up in each chain.
    pub jumps: Vec<Rule>,
}

struct Writer {
    rules: Vec<Rule>,
    table: Table,
}

impl Writer {
    fn add(&mut self, chain: &'static str, args: &str, jump: &'static str, match_set: &'static str) {
        self.add_src(chain, args, jump, match_set, String::new());
    }

    fn add_src(
        &mut self,
        chain: &'static str,
        args: &str,
        jump: &'static str,
        ms: &'static str,
        src: String,
    ) {
        let mut line = String::with_capacity(chain.len() + args.len() + 4);
        line.push_str("-A ");
        line.push_str(chain);
        line.push(' ');
        line.push_str(args);
        self.rules.push(Rule {
            table: self.table,
            chain,
            line,
            jump,
            match_set: ms,
            source_address: src,
        });
    }
}

/// One generic set rule: set, table, from chain, target, match type, protocol match.
type SetRule = (
    IpSetKind,
    Table,
    &'static str,
    &'static str,
    &'static str,
    Option<Protocol>,
);

/// Which sets get a generic rule, and how (`ipsetWithIptablesChain`).
const SET_RULES: [SetRule; 12] = [
    (
        IpSetKind::LoopBack,
        Table::Nat,
        "KUBE-POSTROUTING",
        "MASQUERADE",
        "dst,dst,src",
        None,
    ),
    (
        IpSetKind::LoadBalancer,
        Table::Nat,
        "KUBE-SERVICES",
        "KUBE-LOAD-BALANCER",
        "dst,dst",
        None,
    ),
    (
        IpSetKind::LoadBalancerLocal,
        Table::Nat,
        "KUBE-LOAD-BALANCER",
        "RETURN",
        "dst,dst",
        None,
    ),
    (
        IpSetKind::NodePortLocalTcp,
        Table::Nat,
        "KUBE-NODE-PORT",
        "RETURN",
        "dst",
        Some(Protocol::Tcp),
    ),
    (
        IpSetKind::NodePortTcp,
        Table::Nat,
        "KUBE-NODE-PORT",
        "KUBE-MARK-MASQ",
        "dst",
        Some(Protocol::Tcp),
    ),
    (
        IpSetKind::NodePortLocalUdp,
        Table::Nat,
        "KUBE-NODE-PORT",
        "RETURN",
        "dst",
        Some(Protocol::Udp),
    ),
    (
        IpSetKind::NodePortUdp,
        Table::Nat,
        "KUBE-NODE-PORT",
        "KUBE-MARK-MASQ",
        "dst",
        Some(Protocol::Udp),
    ),
    (
        IpSetKind::NodePortLocalSctp,
        Table::Nat,
        "KUBE-NODE-PORT",
        "RETURN",
        "dst,dst",
        Some(Protocol::Sctp),
    ),
    (
        IpSetKind::NodePortSctp,
        Table::Nat,
        "KUBE-NODE-PORT",
        "KUBE-MARK-MASQ",
        "dst,dst",
        Some(Protocol::Sctp),
    ),
    (
        IpSetKind::LoadBalancerFw,
        Table::Filter,
        "KUBE-PROXY-FIREWALL",
        "KUBE-SOURCE-RANGES-FIREWALL",
        "dst,dst",
        None,
    ),
    (
        IpSetKind::LoadBalancerSourceCidr,
        Table::Filter,
        "KUBE-SOURCE-RANGES-FIREWALL",
        "RETURN",
        "dst,dst,src",
        None,
    ),
    (
        IpSetKind::LoadBalancerSourceIp,
        Table::Filter,
        "KUBE-SOURCE-RANGES-FIREWALL",
        "RETURN",
        "dst,dst,src",
        None,
    ),
];

impl IptablesPart {
    /// The rules of one sync, in kube-proxy's write order.
    pub fn build(sets: &IpSets, blocked: &[BlockedFromNode], s: &IptablesSettings<'_>) -> Self {
        let mut nat = Writer {
            rules: Vec::with_capacity(24),
            table: Table::Nat,
        };
        let mut filter = Writer {
            rules: Vec::with_capacity(24 + blocked.len()),
            table: Table::Filter,
        };
        let name = |k: IpSetKind| sets.get(k).name;
        let comment = |k: IpSetKind| k.comment();
        let empty = |k: IpSetKind| sets.get(k).is_empty();

        let lo = if s.ipv6 { "::1/128" } else { "127.0.0.0/8" };
        nat.add_src(
            "KUBE-SERVICES",
            &format!("-s {lo} -j RETURN"),
            "RETURN",
            "",
            lo.to_owned(),
        );

        for (kind, table, from, to, match_type, proto) in SET_RULES {
            if empty(kind) {
                continue;
            }
            let mut args = String::with_capacity(160);
            if let Some(p) = proto {
                let _ = write!(args, "-p {} ", p.lower());
            }
            let _ = write!(
                args,
                "-m comment --comment \"{}\" -m set --match-set {} {match_type} -j {to}",
                comment(kind),
                name(kind)
            );
            let w = if table == Table::Nat {
                &mut nat
            } else {
                &mut filter
            };
            w.add(from, &args, to, name(kind));
        }

        if !empty(IpSetKind::ClusterIp) {
            let head = format!(
                "-m comment --comment \"{}\" -m set --match-set {}",
                comment(IpSetKind::ClusterIp),
                name(IpSetKind::ClusterIp)
            );
            let (args, src) = match s.cluster_ip_masquerade {
                ClusterIpMasquerade::All => (format!("{head} dst,dst -j KUBE-MARK-MASQ"), String::new()),
                ClusterIpMasquerade::NotFrom(cidr) => (
                    format!("{head} dst,dst ! -s {cidr} -j KUBE-MARK-MASQ"),
                    format!("!{cidr}"),
                ),
                ClusterIpMasquerade::SourceIsVip => {
                    (format!("{head} src,dst -j KUBE-MARK-MASQ"), String::new())
                }
            };
            nat.add_src(
                "KUBE-SERVICES",
                &args,
                "KUBE-MARK-MASQ",
                name(IpSetKind::ClusterIp),
                src,
            );
        }

        for (kind, masq) in [(IpSetKind::ExternalIp, true), (IpSetKind::ExternalIpLocal, false)] {
            if empty(kind) {
                continue;
            }
            let head = format!(
                "-m comment --comment \"{}\" -m set --match-set {} dst,dst",
                comment(kind),
                name(kind)
            );
            if masq {
                nat.add(
                    "KUBE-SERVICES",
                    &format!("{head} -j KUBE-MARK-MASQ"),
                    "KUBE-MARK-MASQ",
                    name(kind),
                );
            }
            nat.add(
                "KUBE-SERVICES",
                &format!("{head} -m physdev ! --physdev-is-in -m addrtype ! --src-type LOCAL -j ACCEPT"),
                "ACCEPT",
                name(kind),
            );
            nat.add(
                "KUBE-SERVICES",
                &format!("{head} -m addrtype --dst-type LOCAL -j ACCEPT"),
                "ACCEPT",
                name(kind),
            );
        }

        nat.add(
            "KUBE-SERVICES",
            "-m addrtype --dst-type LOCAL -j KUBE-NODE-PORT",
            "KUBE-NODE-PORT",
            "",
        );
        nat.add("KUBE-LOAD-BALANCER", "-j KUBE-MARK-MASQ", "KUBE-MARK-MASQ", "");
        filter.add("KUBE-SOURCE-RANGES-FIREWALL", "-j DROP", "DROP", "");

        for b in blocked {
            filter.add_src(
                "KUBE-IPVS-OUT-FILTER",
                &format!(
                    "-s {ip} -m ipvs --vaddr {ip} --vproto {} --vport {} -j DROP",
                    b.protocol.lower(),
                    b.port,
                    ip = b.ip
                ),
                "DROP",
                "",
                b.ip.to_string(),
            );
        }

        for kind in [IpSetKind::ClusterIp, IpSetKind::LoadBalancer] {
            if !empty(kind) {
                nat.add(
                    "KUBE-SERVICES",
                    &format!("-m set --match-set {} dst,dst -j ACCEPT", name(kind)),
                    "ACCEPT",
                    name(kind),
                );
            }
        }

        let mark = s.mark;
        filter.add(
            "KUBE-FORWARD",
            &format!(
                "-m comment --comment \"kubernetes forwarding rules\" -m mark --mark {mark}/{mark} -j ACCEPT"
            ),
            "ACCEPT",
            "",
        );
        filter.add(
            "KUBE-FORWARD",
            "-m comment --comment \"kubernetes forwarding conntrack rule\" -m conntrack --ctstate RELATED,ESTABLISHED -j ACCEPT",
            "ACCEPT",
            "",
        );
        let hc = IpSetKind::HealthCheckNodePort;
        filter.add(
            "KUBE-NODE-PORT",
            &format!(
                "-m comment --comment \"{}\" -m set --match-set {} dst -j ACCEPT",
                comment(hc),
                name(hc)
            ),
            "ACCEPT",
            name(hc),
        );
        for (kind, m) in [
            (IpSetKind::LoadBalancer, "dst,dst"),
            (IpSetKind::ClusterIp, "dst,dst"),
            (IpSetKind::ExternalIp, "dst,dst"),
            (IpSetKind::ExternalIpLocal, "dst,dst"),
            (IpSetKind::HealthCheckNodePort, "dst"),
        ] {
            filter.add(
                "KUBE-IPVS-FILTER",
                &format!("-m set --match-set {} {m} -j RETURN", name(kind)),
                "RETURN",
                name(kind),
            );
        }
        filter.add(
            "KUBE-IPVS-FILTER",
            &format!(
                "-m conntrack --ctstate NEW -m set --match-set {} dst -j REJECT",
                name(IpSetKind::IpvsIps)
            ),
            "REJECT",
            name(IpSetKind::IpvsIps),
        );

        nat.add(
            "KUBE-POSTROUTING",
            &format!("-m mark ! --mark {mark}/{mark} -j RETURN"),
            "RETURN",
            "",
        );
        nat.add(
            "KUBE-POSTROUTING",
            &format!("-j MARK --xor-mark {mark}"),
            "MARK",
            "",
        );
        nat.add(
            "KUBE-POSTROUTING",
            "-m comment --comment \"kubernetes service traffic requiring SNAT\" -j MASQUERADE --random-fully",
            "MASQUERADE",
            "",
        );
        nat.add("KUBE-MARK-MASQ", &format!("-j MARK --or-mark {mark}"), "MARK", "");

        IptablesPart {
            nat: nat.rules,
            filter: filter.rules,
            jumps: jump_rules(),
        }
    }

    /// The `iptables-restore --noflush` input of the sync: nat first, then filter, each
    /// table's chain lines, its rules and `COMMIT`.
    pub fn restore_text(&self) -> String {
        let mut out = String::with_capacity(256 + (self.nat.len() + self.filter.len()) * 120);
        for (table, chains, rules) in [
            (Table::Nat, &NAT_CHAINS[..], &self.nat),
            (Table::Filter, &FILTER_CHAINS[..], &self.filter),
        ] {
            out.push('*');
            out.push_str(table.as_str());
            out.push('\n');
            for c in chains {
                let _ = writeln!(out, ":{c} - [0:0]");
            }
            for r in rules.iter() {
                out.push_str(&r.line);
                out.push('\n');
            }
            out.push_str("COMMIT\n");
        }
        out
    }

    /// The tables after the sync as `iptables-save` prints them (filter, then nat): the
    /// built-in chains, kube-proxy's chains, the jumps ensured into the built-in chains and
    /// the restored rules — what kube-proxy's iptables fake holds.
    pub fn state_text(&self) -> String {
        let mut out = String::with_capacity(512 + (self.nat.len() + self.filter.len()) * 120);
        for (table, builtin, chains, rules) in [
            (
                Table::Filter,
                &FILTER_BUILTIN[..],
                &FILTER_CHAINS[..],
                &self.filter,
            ),
            (Table::Nat, &NAT_BUILTIN[..], &NAT_CHAINS[..], &self.nat),
        ] {
            out.push('*');
            out.push_str(table.as_str());
            out.push('\n');
            for c in builtin.iter().chain(chains.iter()) {
                let _ = writeln!(out, ":{c} - [0:0]");
            }
            for c in builtin.iter().chain(chains.iter()) {
                for r in self.jumps.iter().chain(rules.iter()) {
                    if r.table == table && r.chain == *c {
                        out.push_str(&r.line);
                        out.push('\n');
                    }
                }
            }
            out.push_str("COMMIT\n");
        }
        out
    }

    /// Every rule of the state by chain name, nat rules before filter rules of the same
    /// name, each chain in order (how kube-proxy's IPVS tests read them).
    pub fn chains(&self) -> Vec<(&'static str, Vec<&Rule>)> {
        let mut out: Vec<(&'static str, Vec<&Rule>)> = Vec::new();
        for (table, builtin, chains, rules) in [
            (Table::Nat, &NAT_BUILTIN[..], &NAT_CHAINS[..], &self.nat),
            (
                Table::Filter,
                &FILTER_BUILTIN[..],
                &FILTER_CHAINS[..],
                &self.filter,
            ),
        ] {
            for c in builtin.iter().chain(chains.iter()) {
                let found: Vec<&Rule> = self
                    .jumps
                    .iter()
                    .chain(rules.iter())
                    .filter(|r| r.table == table && r.chain == *c)
                    .collect();
                if found.is_empty() {
                    continue;
                }
                match out.iter_mut().find(|(n, _)| n == c) {
                    Some((_, v)) => v.extend(found),
                    None => out.push((c, found)),
                }
            }
        }
        out
    }
}

/// The ensured jumps as they stand in each built-in chain: each is prepended, so a later
/// jump into the same chain comes first.
fn jump_rules() -> Vec<Rule> {
    let mut out: Vec<Rule> = Vec::with_capacity(JUMPS.len());
    for (table, from, to, comment) in JUMPS {
        let rule = Rule {
            table,
            chain: from,
            // kube-proxy passes the comment as one argument; the fake joins arguments with
            // spaces, unquoted.
            line: format!("-A {from} -m comment --comment {comment} -j {to}"),
            jump: to,
            match_set: "",
            source_address: String::new(),
        };
        let first = out
            .iter()
            .position(|r| r.table == table && r.chain == from)
            .unwrap_or(out.len());
        out.insert(first, rule);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ipvs::ipset::IpSetEntry;

    fn settings(m: &ClusterIpMasquerade) -> IptablesSettings<'_> {
        IptablesSettings {
            ipv6: false,
            mark: "0x4000",
            cluster_ip_masquerade: m,
        }
    }

    #[test]
    fn empty_sets_write_only_the_fixed_rules() {
        let sets = IpSets::new(false);
        let m = ClusterIpMasquerade::SourceIsVip;
        let p = IptablesPart::build(&sets, &[], &settings(&m));
        let text = p.restore_text();
        assert!(text.starts_with("*nat\n:KUBE-SERVICES - [0:0]\n"), "{text}");
        assert!(text.contains("-A KUBE-SERVICES -s 127.0.0.0/8 -j RETURN\n"));
        assert!(
            !text.contains("KUBE-MARK-MASQ -m"),
            "no set rule for an empty set"
        );
        assert!(text.ends_with("-A KUBE-IPVS-FILTER -m conntrack --ctstate NEW -m set --match-set KUBE-IPVS-IPS dst -j REJECT\nCOMMIT\n"));
    }

    #[test]
    fn cluster_ip_masquerade_variants() {
        let mut sets = IpSets::new(false);
        let ip = "10.0.0.1".parse().unwrap();
        sets.add(
            IpSetKind::ClusterIp,
            IpSetEntry::IpPort {
                ip,
                protocol: Protocol::Tcp,
                port: 80,
            },
        );
        for (m, want) in [
            (ClusterIpMasquerade::All, "dst,dst -j KUBE-MARK-MASQ"),
            (
                ClusterIpMasquerade::NotFrom("10.244.0.0/16".into()),
                "dst,dst ! -s 10.244.0.0/16 -j KUBE-MARK-MASQ",
            ),
            (ClusterIpMasquerade::SourceIsVip, "src,dst -j KUBE-MARK-MASQ"),
        ] {
            let p = IptablesPart::build(&sets, &[], &settings(&m));
            assert!(
                p.restore_text()
                    .contains(&format!("--match-set KUBE-CLUSTER-IP {want}\n")),
                "{m:?}"
            );
        }
    }

    #[test]
    fn jumps_are_prepended() {
        let j = jump_rules();
        let input: Vec<&str> = j.iter().filter(|r| r.chain == "INPUT").map(|r| r.jump).collect();
        assert_eq!(
            input,
            ["KUBE-IPVS-FILTER", "KUBE-PROXY-FIREWALL", "KUBE-NODE-PORT"]
        );
        let fwd: Vec<&str> = j
            .iter()
            .filter(|r| r.chain == "FORWARD")
            .map(|r| r.jump)
            .collect();
        assert_eq!(fwd, ["KUBE-PROXY-FIREWALL", "KUBE-FORWARD"]);
    }
}
