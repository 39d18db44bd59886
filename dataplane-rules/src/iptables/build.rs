//! One sync of kube-proxy v1.37.2's iptables proxier (`pkg/proxy/iptables/proxier.go`
//! `syncProxyRules`, `writeServiceToEndpointRules`): the restore payload as data.

use std::collections::{HashMap, HashSet};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::Serialize;
use svcnet_topology::IpFamily;

use super::types::*;
use crate::error::RulesError;
use crate::hash::{FxHashMap, FxHashSet, chain_hash};
use crate::proxy::{Endpoint, LocalDetector, ProxyConfig, ProxyModel, ServicePortInfo};

/// nfacct counter of localhost NodePort packets.
pub const LOCALHOST_NODEPORTS_COUNTER: &str = "localhost_nps_accepted_pkts";
/// nfacct counter of dropped INVALID packets.
pub const CT_STATE_INVALID_COUNTER: &str = "ct_state_invalid_dropped_pkts";

/// A line of a table's rule section: a rule or the deletion of a chain (`-X`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Line {
    /// `-A ...`.
    Rule(Rule),
    /// `-X CHAIN`.
    DeleteChain(Chain),
}

/// One table of a restore payload: its chain declarations (`:NAME - [0:0]`, which create or
/// flush the chain) and its lines, in order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Table {
    /// `filter` or `nat`.
    pub name: &'static str,
    /// The chains declared, in order.
    pub chains: Vec<Chain>,
    /// Rules and deletions, in order.
    pub lines: Vec<Line>,
}

impl Table {
    fn new(name: &'static str) -> Self {
        Table {
            name,
            chains: Vec::new(),
            lines: Vec::new(),
        }
    }

    fn rule(&mut self, chain: Chain, matches: Vec<Match>, target: Target) {
        self.lines.push(Line::Rule(Rule::new(chain, matches, target)));
    }

    /// The rules, without deletions.
    pub fn rules(&self) -> impl Iterator<Item = &Rule> {
        self.lines.iter().filter_map(|l| match l {
            Line::Rule(r) => Some(r),
            Line::DeleteChain(_) => None,
        })
    }

    /// The chains deleted.
    pub fn deleted(&self) -> impl Iterator<Item = Chain> + '_ {
        self.lines.iter().filter_map(|l| match l {
            Line::DeleteChain(c) => Some(*c),
            Line::Rule(_) => None,
        })
    }

    /// Writes the table as iptables-restore input (`*name` ... `COMMIT`).
    pub fn write_to(&self, out: &mut String) {
        out.push('*');
        out.push_str(self.name);
        out.push('\n');
        for c in &self.chains {
            out.push(':');
            c.write_to(out);
            out.push_str(" - [0:0]\n");
        }
        for l in &self.lines {
            match l {
                Line::Rule(r) => r.write_to(out),
                Line::DeleteChain(c) => {
                    out.push_str("-X ");
                    c.write_to(out);
                }
            }
            out.push('\n');
        }
        out.push_str("COMMIT\n");
    }
}

/// kube-proxy's restore payload of one sync (`iptables-restore --noflush --counters`): the
/// filter table, then the nat table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Transaction {
    /// Whether this was a full sync.
    pub full: bool,
    /// The filter table.
    pub filter: Table,
    /// The nat table.
    pub nat: Table,
}

impl Transaction {
    /// The payload as `iptables-restore` reads it.
    pub fn to_restore_text(&self) -> String {
        let mut out = String::with_capacity(256 + 160 * (self.filter.lines.len() + self.nat.lines.len()));
        self.write_to(&mut out);
        out
    }

    /// Appends the payload to `out`.
    pub fn write_to(&self, out: &mut String) {
        self.filter.write_to(out);
        self.nat.write_to(out);
    }

    /// How many rules (not deletions) the payload holds.
    pub fn rule_count(&self) -> usize {
        self.filter.rules().count() + self.nat.rules().count()
    }
}

/// The per-service chain names of a service port, hashed once.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceChains {
    /// `KUBE-SVC-…`.
    pub svc: Chain,
    /// `KUBE-SVL-…`.
    pub svl: Chain,
    /// `KUBE-EXT-…`.
    pub ext: Chain,
    /// `KUBE-FW-…`.
    pub fw: Chain,
}

impl ServiceChains {
    /// The chains of a service port (`portProtoHash`).
    pub fn of(port: &ServicePortInfo) -> Self {
        let h = chain_hash(&[port.name_string.as_bytes(), port.protocol.lower().as_bytes()]);
        ServiceChains {
            svc: Chain::Service(ServiceChainKind::Svc, h),
            svl: Chain::Service(ServiceChainKind::Svl, h),
            ext: Chain::Service(ServiceChainKind::Ext, h),
            fw: Chain::Service(ServiceChainKind::Fw, h),
        }
    }
}

/// The endpoint chain of an endpoint of a service port (`servicePortEndpointChainName`).
pub fn endpoint_chain(port: &ServicePortInfo, ep: &Endpoint) -> Chain {
    let mut text = String::with_capacity(48);
    write_socket(&mut text, ep.addr());
    Chain::Service(
        ServiceChainKind::Sep,
        chain_hash(&[
            port.name_string.as_bytes(),
            port.protocol.lower().as_bytes(),
            text.as_bytes(),
        ]),
    )
}

/// The node's settings as the iptables proxier reads them (`NewProxier`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IptablesSettings {
    family: IpFamily,
    mark: Arc<str>,
    detector: LocalDetector,
    localhost_nodeports: bool,
    nfacct: bool,
    conntrack_liberal: bool,
    masquerade_all: bool,
    nodeport_match_all: bool,
    nodeport_ips: Vec<IpAddr>,
    node_ip: IpAddr,
}

impl IptablesSettings {
    /// Resolves `config` for the iptables proxier (NodePort addresses default to all).
    pub fn new(config: &ProxyConfig) -> Result<Self, RulesError> {
        let npa = config.nodeport_addresses_for(false)?;
        Ok(IptablesSettings {
            family: config.family(),
            mark: Arc::from(config.masquerade_mark.as_str()),
            detector: config.detector(),
            localhost_nodeports: config.localhost_nodeports_for(&npa),
            nfacct: config.nfacct,
            conntrack_liberal: config.conntrack_tcp_be_liberal,
            masquerade_all: config.masquerade_all,
            nodeport_match_all: npa.match_all,
            nodeport_ips: if npa.match_all {
                Vec::new()
            } else {
                npa.node_ips(&config.host_addresses)
            },
            node_ip: config.node_ip,
        })
    }

    /// Whether KUBE-FIREWALL's localhost rule is written (IPv4 with localhost NodePorts).
    pub fn writes_kube_firewall(&self) -> bool {
        self.family == IpFamily::V4 && self.localhost_nodeports
    }

    /// The masquerade mark text.
    pub fn mark(&self) -> &Arc<str> {
        &self.mark
    }
}

/// What to write for each service: everything (a full sync), or only the chains of the
/// Services named (a partial sync; the others' rules are computed and dropped).
#[derive(Debug, Clone, Copy)]
pub enum Scope<'a> {
    /// A full sync.
    Full,
    /// A partial sync writing the chains of these Services (namespace, name).
    Partial(&'a HashSet<(String, String)>),
}

/// Builds the restore payload of one sync. `existing_nat_chains`: the service chains the nat
/// table holds before the sync (those no longer used are deleted); `None` skips the scan
/// (large-cluster mode between cleanups).
pub fn build_transaction(
    model: &ProxyModel,
    settings: &IptablesSettings,
    scope: Scope<'_>,
    existing_nat_chains: Option<&HashSet<Chain>>,
) -> Transaction {
    build_with_chains(
        model,
        settings,
        scope,
        existing_nat_chains.map(|s| s.iter().copied()),
        None,
    )
    .0
}

/// The chains each Service (namespace, name) keeps active, as a sync leaves them.
pub(crate) type ActiveChains = HashMap<(String, String), Vec<Chain>>;

/// [`build_transaction`], also returning each Service's active chains. `known`: the active
/// chains of the previous sync, reused for the Services a partial sync does not rewrite (their
/// rules are not built at all: kube-proxy builds and discards them, with the same result).
pub(crate) fn build_with_chains(
    model: &ProxyModel,
    settings: &IptablesSettings,
    scope: Scope<'_>,
    existing_nat_chains: Option<impl Iterator<Item = Chain>>,
    known: Option<&ActiveChains>,
) -> (Transaction, ActiveChains) {
    let mut filter = Table::new("filter");
    let mut nat = Table::new("nat");
    let mark = settings.mark.clone();
    filter.chains.extend([
        KUBE_SERVICES,
        KUBE_EXTERNAL_SERVICES,
        KUBE_FORWARD,
        KUBE_NODEPORTS,
        KUBE_PROXY_FIREWALL,
    ]);
    nat.chains
        .extend([KUBE_SERVICES, KUBE_NODEPORTS, KUBE_POSTROUTING, KUBE_MARK_MASQ]);
    nat.rule(
        KUBE_POSTROUTING,
        vec![Match::Mark {
            negated: true,
            mark: mark.clone(),
        }],
        Target::Return,
    );
    nat.rule(KUBE_POSTROUTING, Vec::new(), Target::XorMark(mark.clone()));
    nat.rule(
        KUBE_POSTROUTING,
        vec![Match::Comment(Comment::Text(
            "kubernetes service traffic requiring SNAT",
        ))],
        Target::MasqueradeRandomFully,
    );
    nat.rule(KUBE_MARK_MASQ, Vec::new(), Target::OrMark(mark.clone()));
    if settings.writes_kube_firewall() {
        filter.chains.push(KUBE_FIREWALL);
        filter.rule(
            KUBE_FIREWALL,
            vec![
                Match::Comment(Comment::Text("block incoming localnet connections")),
                Match::Destination {
                    negated: false,
                    addr: Addr::Net(IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::new(127, 0, 0, 0), 8))),
                },
                Match::Source {
                    negated: true,
                    addr: Addr::Net(IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::new(127, 0, 0, 0), 8))),
                },
                Match::Conntrack {
                    negated: true,
                    states: "RELATED,ESTABLISHED,DNAT",
                },
            ],
            Target::Drop,
        );
    }

    let large = model.large_cluster_mode();
    let mut active: FxHashSet<Chain> = FxHashSet::with_capacity_and_hasher(
        model
            .ports
            .iter()
            .map(|p| 2 + p.all_locally_reachable.len())
            .sum(),
        Default::default(),
    );
    let mut by_service: ActiveChains = HashMap::with_capacity(model.ports.len());
    let mut i = 0;
    while let Some(first) = model.ports.get(i) {
        // The ports of one Service are adjacent (the model is sorted by name).
        let key = (first.name.namespace.clone(), first.name.name.clone());
        let mut j = i;
        while model
            .ports
            .get(j)
            .is_some_and(|p| p.name.namespace == key.0 && p.name.name == key.1)
        {
            j += 1;
        }
        let write_chains = match scope {
            Scope::Full => true,
            Scope::Partial(changed) => changed.contains(&key),
        };
        let reuse = if write_chains {
            None
        } else {
            known.and_then(|k| k.get(&key))
        };
        let mut chains_of_service: Vec<Chain> = Vec::new();
        for port in model.ports.get(i..j).unwrap_or(&[]) {
            service_port_rules(
                port,
                settings,
                large,
                &mut filter,
                &mut nat,
                write_chains,
                reuse.is_none(),
                &mut chains_of_service,
            );
        }
        if let Some(known) = reuse {
            chains_of_service.clone_from(known);
        }
        active.extend(chains_of_service.iter().copied());
        by_service.insert(key, chains_of_service);
        i = j;
    }

    if let Some(existing) = existing_nat_chains {
        let mut stale: Vec<Chain> = existing
            .filter(|c| c.is_service_chain() && !active.contains(c))
            .collect();
        stale.sort();
        for c in stale {
            nat.chains.push(c);
            nat.lines.push(Line::DeleteChain(c));
        }
    }

    let last = Comment::Text("kubernetes service nodeports; NOTE: this must be the last rule in this chain");
    if settings.nodeport_match_all {
        let mut m = vec![Match::Comment(last), Match::DestinationLocal];
        if settings.family == IpFamily::V6 {
            m.push(Match::Destination {
                negated: true,
                addr: Addr::Net(IpNet::V6(Ipv6Net::new_assert(Ipv6Addr::LOCALHOST, 128))),
            });
        } else if !settings.localhost_nodeports {
            m.push(Match::Destination {
                negated: true,
                addr: Addr::Net(IpNet::V4(Ipv4Net::new_assert(Ipv4Addr::new(127, 0, 0, 0), 8))),
            });
        }
        nat.rule(KUBE_SERVICES, m, Target::Jump(KUBE_NODEPORTS));
    } else {
        for ip in &settings.nodeport_ips {
            if ip.is_loopback() && (settings.family == IpFamily::V6 || !settings.localhost_nodeports) {
                continue;
            }
            nat.rule(
                KUBE_SERVICES,
                vec![
                    Match::Comment(last.clone()),
                    Match::Destination {
                        negated: false,
                        addr: Addr::Ip(*ip),
                    },
                ],
                Target::Jump(KUBE_NODEPORTS),
            );
        }
    }

    if !settings.conntrack_liberal {
        let mut m = vec![Match::Conntrack {
            negated: false,
            states: "INVALID",
        }];
        if settings.nfacct {
            m.push(Match::Nfacct(CT_STATE_INVALID_COUNTER));
        }
        filter.rule(KUBE_FORWARD, m, Target::Drop);
    }
    filter.rule(
        KUBE_FORWARD,
        vec![
            Match::Comment(Comment::Text("kubernetes forwarding rules")),
            Match::Mark { negated: false, mark },
        ],
        Target::Accept,
    );
    filter.rule(
        KUBE_FORWARD,
        vec![
            Match::Comment(Comment::Text("kubernetes forwarding conntrack rule")),
            Match::Conntrack {
                negated: false,
                states: "RELATED,ESTABLISHED",
            },
        ],
        Target::Accept,
    );
    (
        Transaction {
            full: matches!(scope, Scope::Full),
            filter,
            nat,
        },
        by_service,
    )
}

/// The rules of one service port (the body of `syncProxyRules`' service loop).
#[allow(clippy::too_many_arguments)]
fn service_port_rules(
    port: &ServicePortInfo,
    settings: &IptablesSettings,
    large: bool,
    filter: &mut Table,
    nat_out: &mut Table,
    write_chains: bool,
    compute_chains: bool,
    active: &mut Vec<Chain>,
) {
    let s: Arc<str> = Arc::from(port.name_string.as_str());
    let proto = port.protocol;
    let chains = ServiceChains::of(port);
    let has_endpoints = port.has_endpoints;
    let has_internal = port.has_internal_endpoints();
    let has_external = port.has_external_endpoints();
    let internal_chain = if port.internal_policy_local {
        chains.svl
    } else {
        chains.svc
    };
    let external_policy_chain = if port.external_policy_local {
        chains.svl
    } else {
        chains.svc
    };
    let uses_fw = port.uses_firewall();
    let lb_chain = if uses_fw { chains.fw } else { chains.ext };
    let (internal_filter, external_filter) = if !has_endpoints {
        let c = Comment::Around("", s.clone(), " has no endpoints");
        ((c.clone(), Target::Reject), (c, Target::Reject))
    } else {
        let c = Comment::Around("", s.clone(), " has no local endpoints");
        ((c.clone(), Target::Drop), (c, Target::Drop))
    };
    let cluster_ip = Addr::Ip(port.cluster_ip);
    let dst = |addr: Addr| Match::Destination { negated: false, addr };

    // 1. ClusterIP.
    if has_internal {
        nat_out.rule(
            KUBE_SERVICES,
            vec![
                Match::Comment(Comment::Around("", s.clone(), " cluster IP")),
                Match::Protocol(proto),
                dst(cluster_ip),
                Match::DestinationPort(port.port),
            ],
            Target::Jump(internal_chain),
        );
    } else {
        filter.rule(
            KUBE_SERVICES,
            vec![
                Match::Comment(internal_filter.0.clone()),
                Match::Protocol(proto),
                dst(cluster_ip),
                Match::DestinationPort(port.port),
            ],
            internal_filter.1.clone(),
        );
    }
    // 2. External IPs.
    for ip in &port.external_ips {
        if has_endpoints {
            nat_out.rule(
                KUBE_SERVICES,
                vec![
                    Match::Comment(Comment::Around("", s.clone(), " external IP")),
                    Match::Protocol(proto),
                    dst(Addr::Ip(*ip)),
                    Match::DestinationPort(port.port),
                ],
                Target::Jump(chains.ext),
            );
        }
        if !has_external {
            filter.rule(
                KUBE_EXTERNAL_SERVICES,
                vec![
                    Match::Comment(external_filter.0.clone()),
                    Match::Protocol(proto),
                    dst(Addr::Ip(*ip)),
                    Match::DestinationPort(port.port),
                ],
                external_filter.1.clone(),
            );
        }
    }
    // 3. Load-balancer VIPs.
    for ip in &port.load_balancer_vips {
        if has_endpoints {
            nat_out.rule(
                KUBE_SERVICES,
                vec![
                    Match::Comment(Comment::Around("", s.clone(), " loadbalancer IP")),
                    Match::Protocol(proto),
                    dst(Addr::Ip(*ip)),
                    Match::DestinationPort(port.port),
                ],
                Target::Jump(lb_chain),
            );
        }
        if uses_fw {
            filter.rule(
                KUBE_PROXY_FIREWALL,
                vec![
                    Match::Comment(Comment::NotAccepted(s.clone(), chains.fw)),
                    Match::Protocol(proto),
                    dst(Addr::Ip(*ip)),
                    Match::DestinationPort(port.port),
                ],
                Target::Drop,
            );
        }
    }
    if !has_external {
        for ip in &port.load_balancer_vips {
            filter.rule(
                KUBE_EXTERNAL_SERVICES,
                vec![
                    Match::Comment(external_filter.0.clone()),
                    Match::Protocol(proto),
                    dst(Addr::Ip(*ip)),
                    Match::DestinationPort(port.port),
                ],
                external_filter.1.clone(),
            );
        }
    }
    // 4. NodePort.
    if port.node_port != 0 {
        if has_endpoints {
            if settings.localhost_nodeports && settings.family == IpFamily::V4 && settings.nfacct {
                nat_out.rule(
                    KUBE_NODEPORTS,
                    vec![
                        Match::Comment(Comment::Service(s.clone())),
                        Match::Protocol(proto),
                        dst(Addr::Net(IpNet::V4(Ipv4Net::new_assert(
                            Ipv4Addr::new(127, 0, 0, 0),
                            8,
                        )))),
                        Match::DestinationPort(port.node_port),
                        Match::Nfacct(LOCALHOST_NODEPORTS_COUNTER),
                    ],
                    Target::Jump(chains.ext),
                );
            }
            nat_out.rule(
                KUBE_NODEPORTS,
                vec![
                    Match::Comment(Comment::Service(s.clone())),
                    Match::Protocol(proto),
                    Match::DestinationPort(port.node_port),
                ],
                Target::Jump(chains.ext),
            );
        }
        if !has_external {
            filter.rule(
                KUBE_EXTERNAL_SERVICES,
                vec![
                    Match::Comment(external_filter.0.clone()),
                    Match::DestinationLocal,
                    Match::Protocol(proto),
                    Match::DestinationPort(port.node_port),
                ],
                external_filter.1.clone(),
            );
        }
    }
    // 5. Health-check node port.
    if port.health_check_node_port != 0 {
        filter.rule(
            KUBE_NODEPORTS,
            vec![
                Match::Comment(Comment::Around("", s.clone(), " health check node port")),
                Match::Protocol(crate::proxy::Protocol::Tcp),
                Match::DestinationPort(port.health_check_node_port),
            ],
            Target::Accept,
        );
    }

    // 6. From here on, a partial sync drops the output of unchanged services: their active
    // chains are known from the previous sync, or computed without their rules.
    if !write_chains {
        if compute_chains {
            if port.uses_external_traffic() {
                active.push(chains.ext);
            }
            if uses_fw {
                active.push(chains.fw);
            }
            if port.uses_cluster_policy() {
                active.push(chains.svc);
            }
            if port.uses_local_policy() {
                active.push(chains.svl);
            }
            active.extend(
                port.all_locally_reachable
                    .iter()
                    .map(|ep| endpoint_chain(port, ep)),
            );
        }
        return;
    }
    let nat = nat_out;

    // 7. Internal masquerade.
    if has_internal {
        let args = vec![
            Match::Comment(Comment::Around("", s.clone(), " cluster IP")),
            Match::Protocol(proto),
            dst(cluster_ip),
            Match::DestinationPort(port.port),
        ];
        if settings.masquerade_all {
            nat.rule(internal_chain, args, Target::Jump(KUBE_MARK_MASQ));
        } else if let LocalDetector::Cidr(cidr) = settings.detector {
            let mut args = args;
            args.push(Match::Source {
                negated: true,
                addr: Addr::Net(cidr),
            });
            nat.rule(internal_chain, args, Target::Jump(KUBE_MARK_MASQ));
        }
    }
    // 8. External-traffic chain.
    if port.uses_external_traffic() {
        nat.chains.push(chains.ext);
        active.push(chains.ext);
        if !port.external_policy_local {
            nat.rule(
                chains.ext,
                vec![Match::Comment(Comment::Around(
                    "masquerade traffic for ",
                    s.clone(),
                    " external destinations",
                ))],
                Target::Jump(KUBE_MARK_MASQ),
            );
        } else {
            if let LocalDetector::Cidr(cidr) = settings.detector {
                nat.rule(
                    chains.ext,
                    vec![
                        Match::Comment(Comment::Around(
                            "pod traffic for ",
                            s.clone(),
                            " external destinations",
                        )),
                        Match::Source {
                            negated: false,
                            addr: Addr::Net(cidr),
                        },
                    ],
                    Target::Jump(chains.svc),
                );
            }
            nat.rule(
                chains.ext,
                vec![
                    Match::Comment(Comment::Around(
                        "masquerade LOCAL traffic for ",
                        s.clone(),
                        " external destinations",
                    )),
                    Match::SourceLocal,
                ],
                Target::Jump(KUBE_MARK_MASQ),
            );
            nat.rule(
                chains.ext,
                vec![
                    Match::Comment(Comment::Around(
                        "route LOCAL traffic for ",
                        s.clone(),
                        " external destinations",
                    )),
                    Match::SourceLocal,
                ],
                Target::Jump(chains.svc),
            );
        }
        if has_external {
            nat.rule(chains.ext, Vec::new(), Target::Jump(external_policy_chain));
        }
    }
    // 9. Firewall chain.
    if uses_fw {
        nat.chains.push(chains.fw);
        active.push(chains.fw);
        let lb = Comment::Around("", s.clone(), " loadbalancer IP");
        let mut allow_from_node = false;
        for cidr in &port.load_balancer_source_ranges {
            nat.rule(
                chains.fw,
                vec![
                    Match::Comment(lb.clone()),
                    Match::Source {
                        negated: false,
                        addr: Addr::Net(*cidr),
                    },
                ],
                Target::Jump(chains.ext),
            );
            if cidr.contains(&settings.node_ip) {
                allow_from_node = true;
            }
        }
        if allow_from_node {
            for ip in &port.load_balancer_vips {
                nat.rule(
                    chains.fw,
                    vec![
                        Match::Comment(lb.clone()),
                        Match::Source {
                            negated: false,
                            addr: Addr::Ip(*ip),
                        },
                    ],
                    Target::Jump(chains.ext),
                );
            }
        }
        nat.rule(
            chains.fw,
            vec![Match::Comment(Comment::Around(
                "other traffic to ",
                s.clone(),
                " will be dropped by KUBE-PROXY-FIREWALL",
            ))],
            Target::None,
        );
    }
    // 10. Policy chains. Each endpoint chain name is hashed once.
    let seps = EndpointChains::of(port);
    if port.uses_cluster_policy() {
        nat.chains.push(chains.svc);
        active.push(chains.svc);
        endpoint_rules(nat, &s, port, chains.svc, &port.cluster_endpoints, large, &seps);
    }
    if port.uses_local_policy() {
        nat.chains.push(chains.svl);
        active.push(chains.svl);
        endpoint_rules(nat, &s, port, chains.svl, &port.local_endpoints, large, &seps);
    }
    // 11. Endpoint chains.
    for (ep, &chain) in port.all_locally_reachable.iter().zip(&seps.chains) {
        nat.chains.push(chain);
        active.push(chain);
        let comment = || (!large).then(|| Match::Comment(Comment::Service(s.clone())));
        let mut m: Vec<Match> = comment().into_iter().collect();
        m.push(Match::Source {
            negated: false,
            addr: Addr::Ip(ep.ip),
        });
        nat.rule(chain, m, Target::Jump(KUBE_MARK_MASQ));
        let mut m: Vec<Match> = comment().into_iter().collect();
        if port.session_affinity_timeout.is_some() {
            m.push(Match::RecentSet(chain));
        }
        m.push(Match::Protocol(proto));
        nat.rule(chain, m, Target::Dnat(ep.addr()));
    }
}

/// The endpoint chains of a port's locally reachable endpoints (every endpoint a policy chain
/// jumps to is one of them), hashed once.
struct EndpointChains {
    addrs: Vec<SocketAddr>,
    chains: Vec<Chain>,
    index: Option<FxHashMap<SocketAddr, Chain>>,
}

impl EndpointChains {
    fn of(port: &ServicePortInfo) -> Self {
        let addrs: Vec<SocketAddr> = port.all_locally_reachable.iter().map(Endpoint::addr).collect();
        let chains: Vec<Chain> = port
            .all_locally_reachable
            .iter()
            .map(|ep| endpoint_chain(port, ep))
            .collect();
        // Large lists are looked up by address; short ones by a scan.
        let index = (addrs.len() > 16).then(|| addrs.iter().copied().zip(chains.iter().copied()).collect());
        EndpointChains { addrs, chains, index }
    }

    fn get(&self, addr: SocketAddr) -> Option<Chain> {
        match &self.index {
            Some(m) => m.get(&addr).copied(),
            None => self
                .addrs
                .iter()
                .position(|a| *a == addr)
                .and_then(|i| self.chains.get(i).copied()),
        }
    }
}

/// `writeServiceToEndpointRules`: affinity checks, then the probability cascade.
fn endpoint_rules(
    nat: &mut Table,
    s: &Arc<str>,
    port: &ServicePortInfo,
    chain: Chain,
    endpoints: &[Endpoint],
    large: bool,
    seps: &EndpointChains,
) {
    let comment = |ep: SocketAddr| (!large).then(|| Match::Comment(Comment::Endpoint(s.clone(), ep)));
    let sep: Vec<Chain> = endpoints
        .iter()
        .map(|ep| seps.get(ep.addr()).unwrap_or_else(|| endpoint_chain(port, ep)))
        .collect();
    if let Some(seconds) = port.session_affinity_timeout {
        for (ep, c) in endpoints.iter().zip(&sep) {
            let mut m: Vec<Match> = comment(ep.addr()).into_iter().collect();
            m.push(Match::RecentCheck { name: *c, seconds });
            nat.rule(chain, m, Target::Jump(*c));
        }
    }
    let n = endpoints.len();
    for (i, (ep, c)) in endpoints.iter().zip(&sep).enumerate() {
        let mut m: Vec<Match> = comment(ep.addr()).into_iter().collect();
        if i + 1 < n {
            m.push(Match::Probability(u32::try_from(n - i).unwrap_or(u32::MAX)));
        }
        nat.rule(chain, m, Target::Jump(*c));
    }
}
