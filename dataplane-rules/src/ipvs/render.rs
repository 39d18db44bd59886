//! Text forms of an IPVS rule set: `ipvsadm --restore` input, `ipset restore` input, the
//! readable form kube-oracle prints, and the JSON shape of `svcnet rules --output json`.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2).

use std::collections::BTreeMap;
use std::fmt::Write;

use serde::Serialize;

use super::IpvsRuleSet;
use super::ipset::{IpSetEntry, SetType};
use super::server::{HostPort, ServiceFlags, ipvsadm_option};

/// What the iptables part of a text shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IptablesView {
    /// The `iptables-restore` input of the sync.
    Transaction,
    /// The tables after the sync, as `iptables-save` prints them.
    State,
}

impl IpvsRuleSet {
    /// `ipvsadm --restore` input (the `ipvsadm-save -n` form) creating every virtual server
    /// and its real servers in an empty IPVS table: `-A -t ADDR:PORT -s SCHED [-p TIMEOUT]
    /// [-b mh-port]`, then `-a -t ADDR:PORT -r RADDR:RPORT -m -w WEIGHT` per real server.
    pub fn ipvsadm_restore(&self) -> String {
        let mut out = String::with_capacity(self.virtual_servers.len() * 64 * 4);
        for vs in &self.virtual_servers {
            let opt = ipvsadm_option(vs.protocol);
            let hp = HostPort(vs.address, vs.port);
            let _ = write!(out, "-A {opt} {hp} -s {}", vs.scheduler);
            if vs.flags.contains(ServiceFlags::PERSISTENT) {
                let _ = write!(out, " -p {}", vs.timeout);
            }
            if vs.flags.contains(ServiceFlags::SOURCE_HASH) {
                // IP_VS_SVC_F_SCHED2: "port" for the sh and mh schedulers.
                let sched = if vs.scheduler == "sh" {
                    "sh-port"
                } else {
                    "mh-port"
                };
                let _ = write!(out, " -b {sched}");
            }
            out.push('\n');
            for rs in &vs.real_servers {
                let _ = writeln!(out, "-a {opt} {hp} -r {rs} -m -w {}", rs.weight);
            }
        }
        out
    }

    /// `ipset restore` input that gives every set exactly its entries: per set
    /// `create NAME TYPE ... -exist` with kube-proxy's options (family, hashsize 1024,
    /// maxelem 65536; `range 0-65535` for bitmaps), `flush NAME`, then `add NAME ENTRY`.
    pub fn ipset_restore(&self) -> String {
        let family = if self.ipsets.ipv6 { "inet6" } else { "inet" };
        let mut out = String::with_capacity(4096);
        for set in self.ipsets.iter() {
            let t = set.kind.set_type();
            if t == SetType::BitmapPort {
                let _ = writeln!(out, "create {} {t} range 0-65535 -exist", set.name);
            } else {
                let _ = writeln!(
                    out,
                    "create {} {t} family {family} hashsize 1024 maxelem 65536 -exist",
                    set.name
                );
            }
            let _ = writeln!(out, "flush {}", set.name);
            for e in &set.entries {
                let _ = writeln!(out, "add {} {e}", set.name);
            }
        }
        out
    }

    /// The readable form kube-oracle prints: virtual and real servers (`ipvsadm-save` form,
    /// flags as a comment), the ipsets (`ipset save` form, sets and entries in text order),
    /// the addresses bound to `kube-ipvs0`, then the iptables part.
    pub fn text(&self, view: IptablesView) -> String {
        let mut out = String::with_capacity(8192);
        out.push_str("# IPVS (ipvsadm-save form)\n");
        for vs in &self.virtual_servers {
            let opt = ipvsadm_option(vs.protocol);
            let hp = HostPort(vs.address, vs.port);
            let _ = write!(out, "-A {opt} {hp} -s {}", vs.scheduler);
            if vs.timeout != 0 || vs.flags.contains(ServiceFlags::PERSISTENT) {
                let _ = write!(out, " -p {}", vs.timeout);
            }
            let names = vs.flags.names();
            if !names.is_empty() {
                let _ = write!(out, " # flags {}", names.join(","));
            }
            out.push('\n');
            for rs in &vs.real_servers {
                let _ = writeln!(out, "-a {opt} {hp} -r {rs} -m -w {}", rs.weight);
            }
        }
        out.push_str("# ipset (ipset save form)\n");
        for set in self.ipsets.by_name() {
            let _ = writeln!(out, "create {} {}", set.name, set.kind.set_type());
            for e in set.sorted_texts() {
                let _ = writeln!(out, "add {} {e}", set.name);
            }
        }
        out.push_str("# addresses bound to kube-ipvs0\n");
        for a in self.bind_address_texts() {
            out.push_str(&a);
            out.push('\n');
        }
        match view {
            IptablesView::State => {
                out.push_str("# iptables (iptables-save form)\n");
                out.push_str(&self.iptables.state_text());
            }
            IptablesView::Transaction => {
                out.push_str("# iptables-restore input of the last sync\n");
                out.push_str(&self.iptables.restore_text());
            }
        }
        out
    }

    /// The bound addresses as text, in text order.
    pub fn bind_address_texts(&self) -> Vec<String> {
        let mut v: Vec<String> = self.bind_addresses.iter().map(|a| a.to_string()).collect();
        v.sort_unstable();
        v
    }

    /// The JSON shape of `svcnet rules --backend ipvs --output json` (and kube-oracle's):
    /// virtual servers in address order, every ipset by name with its entries in text order,
    /// the iptables rules by chain (nat before filter), the bound addresses, the iptables
    /// restore payload and state as texts, and the `ipvsadm --restore` and `ipset restore`
    /// inputs.
    pub fn to_json(&self) -> IpvsJson {
        let virtual_servers = self
            .virtual_servers
            .iter()
            .map(|vs| VirtualServerJson {
                address: vs.address.to_string(),
                port: vs.port,
                protocol: vs.protocol.as_str(),
                scheduler: vs.scheduler.to_string(),
                flags: vs.flags.names(),
                timeout: vs.timeout,
                real_servers: vs
                    .real_servers
                    .iter()
                    .map(|rs| RealServerJson {
                        address: rs.address.to_string(),
                        port: rs.port,
                        weight: rs.weight,
                    })
                    .collect(),
            })
            .collect();
        let mut ipsets = BTreeMap::new();
        for set in self.ipsets.iter() {
            let mut entries: Vec<(String, IpSetEntryJson)> = set
                .entries
                .iter()
                .map(|e| {
                    (
                        e.to_string(),
                        IpSetEntryJson::new(e, set.kind.bitmap_protocol().map(|p| p.lower())),
                    )
                })
                .collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            ipsets.insert(set.name.to_owned(), entries.into_iter().map(|(_, e)| e).collect());
        }
        let mut iptables_chains = BTreeMap::new();
        for (chain, rules) in self.iptables.chains() {
            let v: Vec<RuleJson> = rules
                .into_iter()
                .map(|r| RuleJson {
                    table: r.table.as_str(),
                    jump: r.jump,
                    match_set: r.match_set,
                    source_address: r.source_address.clone(),
                    rule: r.line.clone(),
                })
                .collect();
            iptables_chains.insert(chain.to_owned(), v);
        }
        IpvsJson {
            virtual_servers,
            ipsets,
            iptables_chains,
            bind_addresses: self.bind_address_texts(),
            iptables_restore: self.iptables.restore_text(),
            iptables_state: self.iptables.state_text(),
            ipvsadm_restore: self.ipvsadm_restore(),
            ipset_restore: self.ipset_restore(),
        }
    }
}

/// The JSON document of an IPVS rule set (cli.md, `rules`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpvsJson {
    /// Every virtual server with its real servers.
    pub virtual_servers: Vec<VirtualServerJson>,
    /// Every ipset by name.
    pub ipsets: BTreeMap<String, Vec<IpSetEntryJson>>,
    /// The iptables rules by chain name.
    pub iptables_chains: BTreeMap<String, Vec<RuleJson>>,
    /// The addresses bound to `kube-ipvs0`.
    pub bind_addresses: Vec<String>,
    /// The `iptables-restore` input of the sync.
    pub iptables_restore: String,
    /// The iptables tables after the sync (`iptables-save` form).
    pub iptables_state: String,
    /// The virtual and real servers as `ipvsadm --restore` input.
    pub ipvsadm_restore: String,
    /// The ipsets as `ipset restore` input.
    pub ipset_restore: String,
}

/// A virtual server in JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VirtualServerJson {
    /// The virtual address.
    pub address: String,
    /// The virtual port.
    pub port: u16,
    /// `TCP`, `UDP` or `SCTP`.
    pub protocol: &'static str,
    /// The scheduler.
    pub scheduler: String,
    /// The flag names (`persistent`, `hashed`, `source-hash`).
    pub flags: Vec<String>,
    /// The persistence timeout in seconds.
    pub timeout: u32,
    /// The real servers.
    pub real_servers: Vec<RealServerJson>,
}

/// A real server in JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RealServerJson {
    /// The address.
    pub address: String,
    /// The port.
    pub port: u16,
    /// The weight.
    pub weight: i32,
}

/// An ipset entry in JSON: the fields of its type, and the type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IpSetEntryJson {
    /// The (first) address.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip: Option<String>,
    /// The port.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// The protocol, lower case.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<&'static str>,
    /// The network of a `hash:ip,port,net` entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub net: Option<String>,
    /// The second address of a `hash:ip,port,ip` entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ip2: Option<String>,
    /// The set type.
    pub set_type: &'static str,
}

impl IpSetEntryJson {
    fn new(e: &IpSetEntry, bitmap_protocol: Option<&'static str>) -> Self {
        let mut j = IpSetEntryJson {
            ip: None,
            port: None,
            protocol: None,
            net: None,
            ip2: None,
            set_type: e.set_type().as_str(),
        };
        match *e {
            IpSetEntry::Ip(ip) => j.ip = Some(ip.to_string()),
            IpSetEntry::IpPort { ip, protocol, port } => {
                j.ip = Some(ip.to_string());
                j.port = Some(port);
                j.protocol = Some(protocol.lower());
            }
            IpSetEntry::IpPortIp {
                ip,
                protocol,
                port,
                ip2,
            } => {
                j.ip = Some(ip.to_string());
                j.port = Some(port);
                j.protocol = Some(protocol.lower());
                j.ip2 = Some(ip2.to_string());
            }
            IpSetEntry::IpPortNet {
                ip,
                protocol,
                port,
                net,
            } => {
                j.ip = Some(ip.to_string());
                j.port = Some(port);
                j.protocol = Some(protocol.lower());
                j.net = Some(net.to_string());
            }
            IpSetEntry::Port(port) => {
                j.port = Some(port);
                j.protocol = bitmap_protocol;
            }
        }
        j
    }
}

/// An iptables rule in JSON, with the fields kube-proxy's IPVS tests compare.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleJson {
    /// `nat` or `filter`.
    pub table: &'static str,
    /// The target.
    pub jump: &'static str,
    /// The matched ipset, empty when none.
    pub match_set: &'static str,
    /// The source match, `!`-prefixed when negated, empty when none.
    pub source_address: String,
    /// The whole rule line.
    pub rule: String,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Endpoint;
    use crate::ipvs::{ClusterIpMasquerade, IpvsSettings, PortInput, Protocol, build_rule_set};
    use std::net::IpAddr;

    fn rules(ipv6: bool, scheduler: &str) -> IpvsRuleSet {
        let (cip, ep, node): (IpAddr, IpAddr, IpAddr) = if ipv6 {
            (
                "fd00:96::a".parse().unwrap(),
                "fd00:244::5".parse().unwrap(),
                "fd00::2".parse().unwrap(),
            )
        } else {
            (
                "10.96.0.10".parse().unwrap(),
                "10.244.0.5".parse().unwrap(),
                "192.168.0.2".parse().unwrap(),
            )
        };
        let eps = [Endpoint {
            ip: ep,
            port: 8080,
            is_local: true,
            ready: true,
            serving: true,
            terminating: false,
        }];
        let port = PortInput {
            cluster_ip: cip,
            port: 80,
            protocol: Protocol::Sctp,
            node_port: 30080,
            health_check_node_port: 0,
            external_ips: &[],
            load_balancer_ips: &[],
            source_ranges: &[],
            affinity_timeout: Some(600),
            internal_local: false,
            external_local: false,
            cluster: &eps,
            local: &eps,
            all: &eps,
        };
        let s = IpvsSettings {
            ipv6,
            node_ip: node,
            scheduler: scheduler.into(),
            mark: "0x4000".into(),
            cluster_ip_masquerade: ClusterIpMasquerade::SourceIsVip,
            interfaces: vec![("eth0".into(), vec![node])],
            node_port_ips: vec![node],
            unprefixed_ipv6_sets: false,
        };
        build_rule_set([port], &s)
    }

    #[test]
    fn ipvsadm_restore_form() {
        let r = rules(true, "mh");
        assert_eq!(
            r.ipvsadm_restore(),
            "-A --sctp-service [fd00::2]:30080 -s mh -p 600 -b mh-port\n\
             -a --sctp-service [fd00::2]:30080 -r [fd00:244::5]:8080 -m -w 1\n\
             -A --sctp-service [fd00:96::a]:80 -s mh -p 600 -b mh-port\n\
             -a --sctp-service [fd00:96::a]:80 -r [fd00:244::5]:8080 -m -w 1\n"
        );
        let r = rules(false, "rr");
        assert!(
            r.ipvsadm_restore()
                .starts_with("-A --sctp-service 10.96.0.10:80 -s rr -p 600\n")
        );
        // kube-oracle's readable form names the flags in a comment.
        assert!(
            r.text(IptablesView::Transaction)
                .contains("-A --sctp-service 10.96.0.10:80 -s rr -p 600 # flags persistent\n")
        );
    }

    #[test]
    fn ipset_restore_form() {
        let r = rules(true, "rr");
        let t = r.ipset_restore();
        assert!(
            t.starts_with(
                "create KUBE-6-LOOP-BACK hash:ip,port,ip family inet6 hashsize 1024 maxelem 65536 -exist\n\
             flush KUBE-6-LOOP-BACK\n\
             add KUBE-6-LOOP-BACK fd00:244::5,sctp:8080,fd00:244::5\n"
            ),
            "{t}"
        );
        assert!(t.contains("add KUBE-6-NODE-PORT-SCTP-HASH fd00::2,sctp:30080\n"));
        assert!(t.contains(
            "create KUBE-6-NODE-PORT-TCP bitmap:port range 0-65535 -exist\nflush KUBE-6-NODE-PORT-TCP\n"
        ));
        assert_eq!(t.matches("create ").count(), 17);
        let j = r.to_json();
        assert_eq!(j.ipset_restore, t);
        assert_eq!(j.ipsets["KUBE-6-IPVS-IPS"].len(), 1);
    }
}
