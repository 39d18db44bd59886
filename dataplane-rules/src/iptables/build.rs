//! One sync of kube-proxy v1.37.2's iptables proxier (`pkg/proxy/iptables/proxier.go`
//! `syncProxyRules`, `writeServiceToEndpointRules`): the restore payload as data.

use std::cell::OnceCell;
use std::collections::HashSet;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use ipnet::{IpNet, Ipv4Net, Ipv6Net};
use serde::Serialize;
use svcnet_topology::IpFamily;

use super::blocks::PortList;
use super::text::{
    Lines, Many, PortText, Run, Seqs, Text, TxText, Typed, Written, decl_len, fix_probabilities, parse_table,
};
use super::types::*;
use crate::error::RulesError;
use crate::hash::{chain_hash, chain_hash_blocks};
use crate::proxy::{Endpoint, LocalDetector, ProxyConfig, ProxyModel, ServicePortInfo};
use svcnet_model::hash::{FastSet, KeyedMap};

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
    /// Reads one table of the restore text back (`*name` ... `COMMIT`).
    pub(crate) fn parse(name: &'static str, text: &str) -> Self {
        let (chains, mut lines) = parse_table(text);
        // Each chain's probability cascade is set from its place.
        let mut order: Vec<Chain> = Vec::new();
        for l in &lines {
            if let Line::Rule(r) = l
                && !order.contains(&r.chain)
                && r.matches.iter().any(|m| matches!(m, Match::Probability(_)))
            {
                order.push(r.chain);
            }
        }
        for c in order {
            fix_probabilities(lines.iter_mut().filter_map(|l| match l {
                Line::Rule(r) if r.chain == c => Some(r),
                _ => None,
            }));
        }
        Table { name, chains, lines }
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
/// filter table, then the nat table. Rendered as text when built; the typed tables are read
/// back from it on first use.
#[derive(Clone, PartialEq, Eq, Serialize)]
pub struct Transaction {
    /// Whether this was a full sync.
    pub full: bool,
    /// The filter table.
    pub filter: Typed<Table>,
    /// The nat table.
    pub nat: Typed<Table>,
    #[serde(skip)]
    pub(crate) text: Arc<TxText>,
}

impl std::fmt::Debug for Transaction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transaction")
            .field("full", &self.full)
            .field("filter", &self.filter)
            .field("nat", &self.nat)
            .finish()
    }
}

impl Transaction {
    pub(crate) fn new(full: bool, text: Arc<TxText>) -> Self {
        let (f, n) = (text.clone(), text.clone());
        Transaction {
            full,
            filter: Typed::new(move || {
                let mut s = String::new();
                f.write_filter(&mut s);
                Table::parse("filter", &s)
            }),
            nat: Typed::new(move || {
                let mut s = String::new();
                n.write_nat(&mut s);
                Table::parse("nat", &s)
            }),
            text,
        }
    }

    /// A transaction made of typed tables (read from text elsewhere, e.g.
    /// [`parse_transaction`](super::parse_transaction)); its text is rendered from them.
    pub fn from_tables(full: bool, filter: Table, nat: Table) -> Self {
        fn lines_of(t: &Table) -> Lines {
            let mut out = Lines::with_capacity(0, 0);
            for l in &t.lines {
                match l {
                    Line::Rule(r) => {
                        r.write_to(&mut out.text);
                        out.end(r.chain);
                    }
                    Line::DeleteChain(c) => {
                        out.text.push_str("-X ");
                        c.write_to(&mut out.text);
                        out.text.push('\n');
                    }
                }
            }
            out
        }
        let text = TxText {
            ports: PortList::default(),
            shared: Vec::new(),
            written: Written::All,
            filter_decls: filter.chains.clone(),
            filter_pre: lines_of(&filter),
            filter_post: Lines::with_capacity(0, 0),
            nat_decls: nat.chains.clone(),
            nat_pre: lines_of(&nat),
            nat_post: Lines::with_capacity(0, 0),
            stale: Vec::new(),
        };
        Transaction {
            full,
            filter: Typed::ready(filter),
            nat: Typed::ready(nat),
            text: Arc::new(text),
        }
    }

    /// The payload as `iptables-restore` reads it.
    pub fn to_restore_text(&self) -> String {
        // A full payload's length is known exactly; a partial one's segments reserve theirs.
        let mut out = String::with_capacity(if self.full { self.text.len_hint() } else { 0 });
        self.write_to(&mut out);
        out
    }

    /// Appends the payload to `out`.
    pub fn write_to(&self, out: &mut String) {
        if self.full {
            self.text.write_filter(out);
            self.text.write_nat(out);
        } else {
            // A partial payload is mostly whole blocks of the all-services chains.
            self.segments().append_to(out);
        }
    }

    /// How many rules (not deletions) the payload holds.
    pub fn rule_count(&self) -> usize {
        self.text.rule_count()
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
pub(crate) fn endpoint_chain(port: &ServicePortInfo, ep: &Endpoint) -> Chain {
    let mut text = String::with_capacity(48);
    endpoint_chain_with(port, ep, &mut text)
}

/// [`endpoint_chain`] with a scratch buffer.
fn endpoint_chain_with(port: &ServicePortInfo, ep: &Endpoint, text: &mut String) -> Chain {
    text.clear();
    write_socket(text, ep.addr());
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
    let large = model.large_cluster_mode();
    let mut scratch = Scratch::default();
    let mut ports = Vec::with_capacity(model.ports.len());
    let mut written = Vec::new();
    let mut i = 0;
    while let Some(first) = model.ports.get(i) {
        let j = i + model.ports[i..]
            .iter()
            .take_while(|p| p.name.namespace == first.name.namespace && p.name.name == first.name.name)
            .count();
        let write = match scope {
            Scope::Full => true,
            Scope::Partial(changed) => {
                changed.contains(&(first.name.namespace.to_string(), first.name.name.to_string()))
            }
        };
        for (k, port) in model.ports[i..j].iter().enumerate() {
            if write {
                written.push(u32::try_from(i + k).expect("invariant: fewer than 2^32 service ports"));
            }
            ports.push(Arc::new(render_port(port, settings, large, write, &mut scratch)));
        }
        i = j;
    }
    let stale = match existing_nat_chains {
        Some(existing) => {
            let active: FastSet<Chain> = ports.iter().flat_map(|p| p.chains.iter().copied()).collect();
            let mut stale: Vec<Chain> = existing
                .iter()
                .copied()
                .filter(|c| c.is_service_chain() && !active.contains(c))
                .collect();
            stale.sort_unstable();
            stale
        }
        None => Vec::new(),
    };
    let full = matches!(scope, Scope::Full);
    let written = if full {
        Written::All
    } else {
        Written::Some(written)
    };
    Transaction::new(
        full,
        Arc::new(tx_text(settings, PortList::from_ports(ports), written, stale)),
    )
}

/// The fixed parts of a payload around the ports' rules.
pub(crate) fn tx_text(
    settings: &IptablesSettings,
    ports: PortList,
    written: Written,
    stale: Vec<Chain>,
) -> TxText {
    let mark = settings.mark.clone();
    let mut filter_decls = vec![
        KUBE_SERVICES,
        KUBE_EXTERNAL_SERVICES,
        KUBE_FORWARD,
        KUBE_NODEPORTS,
        KUBE_PROXY_FIREWALL,
    ];
    let nat_decls = vec![KUBE_SERVICES, KUBE_NODEPORTS, KUBE_POSTROUTING, KUBE_MARK_MASQ];
    let mut nat_pre = Lines::default();
    nat_pre.rule(
        KUBE_POSTROUTING,
        &[Match::Mark {
            negated: true,
            mark: mark.clone(),
        }],
        &Target::Return,
    );
    nat_pre.rule(KUBE_POSTROUTING, &[], &Target::XorMark(mark.clone()));
    nat_pre.rule(
        KUBE_POSTROUTING,
        &[Match::Comment(Comment::Text(
            "kubernetes service traffic requiring SNAT",
        ))],
        &Target::MasqueradeRandomFully,
    );
    nat_pre.rule(KUBE_MARK_MASQ, &[], &Target::OrMark(mark.clone()));
    let mut filter_pre = Lines::default();
    if settings.writes_kube_firewall() {
        filter_decls.push(KUBE_FIREWALL);
        filter_pre.rule(
            KUBE_FIREWALL,
            &[
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
            &Target::Drop,
        );
    }

    let mut nat_post = Lines::default();
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
        nat_post.rule(KUBE_SERVICES, &m, &Target::Jump(KUBE_NODEPORTS));
    } else {
        for ip in &settings.nodeport_ips {
            if ip.is_loopback() && (settings.family == IpFamily::V6 || !settings.localhost_nodeports) {
                continue;
            }
            nat_post.rule(
                KUBE_SERVICES,
                &[
                    Match::Comment(last.clone()),
                    Match::Destination {
                        negated: false,
                        addr: Addr::Ip(*ip),
                    },
                ],
                &Target::Jump(KUBE_NODEPORTS),
            );
        }
    }

    let mut filter_post = Lines::default();
    if !settings.conntrack_liberal {
        let mut m = vec![Match::Conntrack {
            negated: false,
            states: "INVALID",
        }];
        if settings.nfacct {
            m.push(Match::Nfacct(CT_STATE_INVALID_COUNTER));
        }
        filter_post.rule(KUBE_FORWARD, &m, &Target::Drop);
    }
    filter_post.rule(
        KUBE_FORWARD,
        &[
            Match::Comment(Comment::Text("kubernetes forwarding rules")),
            Match::Mark { negated: false, mark },
        ],
        &Target::Accept,
    );
    filter_post.rule(
        KUBE_FORWARD,
        &[
            Match::Comment(Comment::Text("kubernetes forwarding conntrack rule")),
            Match::Conntrack {
                negated: false,
                states: "RELATED,ESTABLISHED",
            },
        ],
        &Target::Accept,
    );
    TxText {
        ports,
        shared: Vec::new(),
        written,
        filter_decls,
        filter_pre,
        filter_post,
        nat_decls,
        nat_pre,
        nat_post,
        stale,
    }
}

/// Buffers reused from one port to the next.
#[derive(Debug, Default)]
pub(crate) struct Scratch {
    text: String,
    /// The cluster IP rule's matches of the port being rendered.
    cluster_ip: String,
    /// Its endpoint chains' comment match.
    sep_comment: String,
    seps: Vec<Chain>,
    /// Each endpoint's `ip:port` (`[ip]:port`), rendered once per port; `spans` tells where
    /// each lies.
    sock: Vec<u8>,
    spans: Vec<EpSpan>,
    /// Where the policy chains' (cluster, local) rules end in the port's text, and how many.
    policy: [(usize, u32); 2],
    /// The rules written before the policy chains' (masquerade, external, firewall chains).
    pre: Lines,
    /// The endpoints' hash inputs (one padded SHA-256 block each) and their hashes.
    blocks: Vec<[u8; 64]>,
    hashes: Vec<[u8; 16]>,
    index: KeyedMap<SocketAddr, usize>,
}

/// Where an endpoint's pieces lie in [`Scratch::sock`] and in the port's text.
#[derive(Debug, Clone, Copy)]
struct EpSpan {
    /// The socket text's start.
    start: usize,
    /// The address' start and end (inside the brackets for IPv6).
    ip: (usize, usize),
    /// The socket text's end.
    socket_end: usize,
    /// The socket text in a buffer (IPv4).
    fixed: Option<Fixed>,
    /// The end of the chain's rules in the port's text.
    rules_end: usize,
}

/// An IPv4 endpoint's `ip:port` at the start of a buffer: copied as the whole buffer and cut
/// to length (one fixed-size copy, rather than a call for a copy of a length known late).
#[derive(Debug, Clone, Copy)]
struct Fixed {
    buf: [u8; 32],
    /// The address' length.
    ip: usize,
    /// The socket's length.
    socket: usize,
}

impl Fixed {
    fn push_ip(&self, t: &mut Vec<u8>) {
        push_fixed(t, &self.buf, self.ip);
    }

    fn push_socket(&self, t: &mut Vec<u8>) {
        push_fixed(t, &self.buf, self.socket);
    }
}

/// Appends the first `len` bytes of `buf` (all of it copied, the rest cut off).
#[inline(always)]
fn push_fixed<const N: usize>(t: &mut Vec<u8>, buf: &[u8; N], len: usize) {
    let at = t.len();
    t.extend_from_slice(buf);
    t.truncate(at + len.min(N));
}

/// Text rendered as bytes (`&str` pieces and ASCII) as a `String`: checked once, here.
pub(crate) fn text_of(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(text) => text,
        // Never: the bytes are `&str` pieces and ASCII.
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// Appends a chain's declaration line (`:NAME - [0:0]`).
#[inline]
fn push_decl(t: &mut Vec<u8>, c: Chain) {
    t.push(b':');
    match c {
        Chain::Fixed(name) => t.extend_from_slice(name.as_bytes()),
        Chain::Service(..) => {
            let mut buf = [0u8; 32];
            let n = c.fill(&mut buf);
            push_fixed(t, &buf, n);
        }
    }
    t.extend_from_slice(b" - [0:0]\n");
}

/// A service port's name: text, and shared (as the typed comments hold it) when first asked.
struct Name<'a> {
    text: &'a str,
    shared: OnceCell<Arc<str>>,
}

impl Name<'_> {
    fn shared(&self) -> Arc<str> {
        self.shared.get_or_init(|| Arc::from(self.text)).clone()
    }
}

impl std::ops::Deref for Name<'_> {
    type Target = str;
    fn deref(&self) -> &str {
        self.text
    }
}

/// Renders one service port (the body of `syncProxyRules`' service loop). Without `body`,
/// only the rules every sync writes and the port's chain names.
pub(crate) fn render_port(
    port: &ServicePortInfo,
    settings: &IptablesSettings,
    large: bool,
    body: bool,
    scratch: &mut Scratch,
) -> PortText {
    let eps = port.all_locally_reachable.len();
    let mut out = new_port(port);
    let mut lines: Lines<Vec<u8>> = if body {
        Lines {
            text: Vec::with_capacity(200 + 340 * eps),
            runs: Vec::with_capacity(4 + 2 * eps),
        }
    } else {
        Lines::default()
    };
    let mut head = Lines::with_capacity(
        160 * (1 + port.external_ips.len() + port.load_balancer_vips.len()),
        2,
    );
    service_port_rules(
        port, settings, large, &mut out, &mut head, &mut lines, body, false, scratch,
    );
    out.head = Lines {
        text: Text::Own(head.text),
        runs: Many::Own(head.runs),
    };
    if body {
        let mut d = Vec::with_capacity(out.chains.iter().map(|c| decl_len(*c)).sum());
        port_decls(&out.chains, &mut d);
        out.decls = Text::Own(text_of(d));
    }
    out.body = Lines {
        text: Text::Own(text_of(lines.text)),
        runs: Many::Own(lines.runs),
    };
    out
}

/// A port's text with room for its rules, nothing written.
fn new_port(port: &ServicePortInfo) -> PortText {
    PortText {
        filter: Lines::default(),
        head: Lines::default(),
        body: Lines::default(),
        chains: Many::Own(Vec::with_capacity(2 + port.all_locally_reachable.len())),
        decls: Text::default(),
        extra: Vec::new(),
        seqs: Seqs::default(),
    }
}

/// About how many bytes a port's own chains (rules and declarations) take.
pub(crate) fn body_estimate(port: &ServicePortInfo) -> usize {
    let eps = port.all_locally_reachable.len();
    400 + 420 * eps
}

/// Where [`render_port_into`] wrote a port's pieces in the shared buffers and lists (start
/// and end of each).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Place {
    /// Its `head` lines, then its own chains' rules, in the rules buffer.
    pub(crate) head: u32,
    pub(crate) body: u32,
    pub(crate) body_end: u32,
    /// Its declarations, in the declarations buffer.
    pub(crate) decls: u32,
    pub(crate) decls_end: u32,
    /// Its chains, in the chain list.
    pub(crate) chains: u32,
    pub(crate) chains_end: u32,
    /// Its own chains' runs, then its `head` runs, in the run list.
    pub(crate) runs: u32,
    pub(crate) head_runs: u32,
    pub(crate) runs_end: u32,
}

/// Buffers shared by the ports of a full sync: every port's `head` and own chains' rules, one
/// port after another (as the nat table's rules of a full payload run), and their chain
/// declarations likewise. `head.runs` and `rules.runs` are left empty.
#[derive(Debug, Default)]
pub(crate) struct SharedText {
    pub(crate) rules: Lines<Vec<u8>>,
    pub(crate) decls: Vec<u8>,
    /// Every port's chains, one port after another.
    pub(crate) chains: Vec<Chain>,
    /// Every port's own chains' runs (each from the start of its rules), then its `head` runs,
    /// likewise.
    pub(crate) runs: Vec<Run>,
    /// The `head` lines of the port being rendered.
    pub(crate) head: Lines,
    /// The chains of the port being rendered.
    pub(crate) port_chains: Vec<Chain>,
}

/// Renders one service port with its rules and declarations appended to `shared`. The port's
/// `head`, `body` and `decls` texts are left empty: they are the ranges of the buffers
/// returned, set once the buffers are complete.
pub(crate) fn render_port_into(
    port: &ServicePortInfo,
    settings: &IptablesSettings,
    large: bool,
    scratch: &mut Scratch,
    shared: &mut SharedText,
) -> (PortText, Place) {
    let mut out = new_port(port);
    let SharedText {
        rules,
        decls,
        chains,
        runs,
        head,
        port_chains,
    } = shared;
    rules.runs.clear();
    head.text.clear();
    head.runs.clear();
    port_chains.clear();
    out.chains = Many::Own(std::mem::take(port_chains));
    let start = rules.text.len();
    let body_start = service_port_rules(port, settings, large, &mut out, head, rules, true, true, scratch);
    let end = rules.text.len();
    let decls_start = decls.len();
    port_decls(&out.chains, decls);
    let decls_end = decls.len();
    let base = u32::try_from(body_start).unwrap_or(u32::MAX);
    let (runs_start, chains_start) = (runs.len(), chains.len());
    runs.extend(rules.runs.drain(..).map(|r| Run {
        end: r.end - base,
        ..r
    }));
    let head_runs = runs.len();
    runs.extend_from_slice(&head.runs);
    chains.extend_from_slice(&out.chains);
    if let Many::Own(v) = std::mem::take(&mut out.chains) {
        *port_chains = v;
    }
    let at = |n: usize| u32::try_from(n).unwrap_or(u32::MAX);
    let place = Place {
        head: at(start),
        body: at(body_start),
        body_end: at(end),
        decls: at(decls_start),
        decls_end: at(decls_end),
        chains: at(chains_start),
        chains_end: at(chains.len()),
        runs: at(runs_start),
        head_runs: at(head_runs),
        runs_end: at(runs.len()),
    };
    (out, place)
}

/// Renders the declarations of a port's chains, as bytes.
fn port_decls(chains: &[Chain], d: &mut Vec<u8>) {
    d.reserve(chains.iter().map(|c| decl_len(*c)).sum());
    for c in chains {
        match c {
            // An endpoint chain's line, of fixed length: one copy.
            Chain::Service(ServiceChainKind::Sep, h) => {
                let mut line = *b":KUBE-SEP-0123456789ABCDEF - [0:0]\n";
                line[10..26].copy_from_slice(h);
                d.extend_from_slice(&line);
            }
            _ => push_decl(d, *c),
        }
    }
}

/// The rules of one service port (the body of `syncProxyRules`' service loop): the filter
/// rules into `out`, the nat rules every sync writes into `head`, the port's own chains' rules
/// appended to `body` (after a copy of `head`'s text with `head_first`). Returns where the own
/// chains' rules start in `body`.
#[allow(clippy::too_many_arguments)]
fn service_port_rules(
    port: &ServicePortInfo,
    settings: &IptablesSettings,
    large: bool,
    out: &mut PortText,
    head: &mut Lines,
    body: &mut Lines<Vec<u8>>,
    write_chains: bool,
    head_first: bool,
    scratch: &mut Scratch,
) -> usize {
    let s = Name {
        text: port.name_string.as_str(),
        shared: OnceCell::new(),
    };
    let proto = port.protocol;
    let chains = ServiceChains::of(port);
    // The chains declared, in order (into the list `out` has).
    let mut chain_list = match std::mem::take(&mut out.chains) {
        Many::Own(v) => v,
        shared => shared.to_vec(),
    };
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
    // The comment and target of the filter rules of traffic with no (local) endpoint.
    let no_endpoints = || {
        if !has_endpoints {
            (
                Comment::Around("", s.shared(), " has no endpoints"),
                Target::Reject,
            )
        } else {
            (
                Comment::Around("", s.shared(), " has no local endpoints"),
                Target::Drop,
            )
        }
    };
    let cluster_ip = Addr::Ip(port.cluster_ip);
    let dst = |addr: Addr| Match::Destination { negated: false, addr };

    // 1. ClusterIP. The rule's matches (`"S cluster IP"`, protocol, address, port) are
    // rendered once, for it and the internal masquerade rule.
    if has_internal {
        let m = &mut scratch.cluster_ip;
        m.clear();
        m.push_str(" -m comment --comment \"");
        m.push_str(&s);
        m.push_str(" cluster IP\"");
        write_match(m, &Match::Protocol(proto));
        m.push_str(" -d ");
        write_ip(m, port.cluster_ip);
        m.push_str(" --dport ");
        push_u32(m, u32::from(port.port));
        let t = &mut head.text;
        t.push_str("-A KUBE-SERVICES");
        t.push_str(m);
        t.push_str(" -j ");
        internal_chain.write_to(t);
        head.end(KUBE_SERVICES);
    } else {
        out.filter.rule(
            KUBE_SERVICES,
            &[
                Match::Comment(no_endpoints().0),
                Match::Protocol(proto),
                dst(cluster_ip),
                Match::DestinationPort(port.port),
            ],
            &no_endpoints().1,
        );
    }
    // 2. External IPs.
    for ip in &port.external_ips {
        if has_endpoints {
            head.rule(
                KUBE_SERVICES,
                &[
                    Match::Comment(Comment::Around("", s.shared(), " external IP")),
                    Match::Protocol(proto),
                    dst(Addr::Ip(*ip)),
                    Match::DestinationPort(port.port),
                ],
                &Target::Jump(chains.ext),
            );
        }
        if !has_external {
            out.filter.rule(
                KUBE_EXTERNAL_SERVICES,
                &[
                    Match::Comment(no_endpoints().0),
                    Match::Protocol(proto),
                    dst(Addr::Ip(*ip)),
                    Match::DestinationPort(port.port),
                ],
                &no_endpoints().1,
            );
        }
    }
    // 3. Load-balancer VIPs.
    for ip in &port.load_balancer_vips {
        if has_endpoints {
            head.rule(
                KUBE_SERVICES,
                &[
                    Match::Comment(Comment::Around("", s.shared(), " loadbalancer IP")),
                    Match::Protocol(proto),
                    dst(Addr::Ip(*ip)),
                    Match::DestinationPort(port.port),
                ],
                &Target::Jump(lb_chain),
            );
        }
        if uses_fw {
            out.filter.rule(
                KUBE_PROXY_FIREWALL,
                &[
                    Match::Comment(Comment::NotAccepted(s.shared(), chains.fw)),
                    Match::Protocol(proto),
                    dst(Addr::Ip(*ip)),
                    Match::DestinationPort(port.port),
                ],
                &Target::Drop,
            );
        }
    }
    if !has_external {
        for ip in &port.load_balancer_vips {
            out.filter.rule(
                KUBE_EXTERNAL_SERVICES,
                &[
                    Match::Comment(no_endpoints().0),
                    Match::Protocol(proto),
                    dst(Addr::Ip(*ip)),
                    Match::DestinationPort(port.port),
                ],
                &no_endpoints().1,
            );
        }
    }
    // 4. NodePort.
    if port.node_port != 0 {
        if has_endpoints {
            if settings.localhost_nodeports && settings.family == IpFamily::V4 && settings.nfacct {
                head.rule(
                    KUBE_NODEPORTS,
                    &[
                        Match::Comment(Comment::Service(s.shared())),
                        Match::Protocol(proto),
                        dst(Addr::Net(IpNet::V4(Ipv4Net::new_assert(
                            Ipv4Addr::new(127, 0, 0, 0),
                            8,
                        )))),
                        Match::DestinationPort(port.node_port),
                        Match::Nfacct(LOCALHOST_NODEPORTS_COUNTER),
                    ],
                    &Target::Jump(chains.ext),
                );
            }
            head.rule(
                KUBE_NODEPORTS,
                &[
                    Match::Comment(Comment::Service(s.shared())),
                    Match::Protocol(proto),
                    Match::DestinationPort(port.node_port),
                ],
                &Target::Jump(chains.ext),
            );
        }
        if !has_external {
            out.filter.rule(
                KUBE_EXTERNAL_SERVICES,
                &[
                    Match::Comment(no_endpoints().0),
                    Match::DestinationLocal,
                    Match::Protocol(proto),
                    Match::DestinationPort(port.node_port),
                ],
                &no_endpoints().1,
            );
        }
    }
    // 5. Health-check node port.
    if port.health_check_node_port != 0 {
        out.filter.rule(
            KUBE_NODEPORTS,
            &[
                Match::Comment(Comment::Around("", s.shared(), " health check node port")),
                Match::Protocol(crate::proxy::Protocol::Tcp),
                Match::DestinationPort(port.health_check_node_port),
            ],
            &Target::Accept,
        );
    }

    // 6. From here on, a partial sync leaves unchanged services out: only their chain names
    // are computed.
    if !write_chains {
        if port.uses_external_traffic() {
            chain_list.push(chains.ext);
        }
        if uses_fw {
            chain_list.push(chains.fw);
        }
        if port.uses_cluster_policy() {
            chain_list.push(chains.svc);
        }
        if port.uses_local_policy() {
            chain_list.push(chains.svl);
        }
        for ep in &port.all_locally_reachable {
            chain_list.push(endpoint_chain_with(port, ep, &mut scratch.text));
        }
        out.chains = Many::Own(chain_list);
        return body.text.len();
    }

    // Steps 7 to 9 are rendered into a scratch buffer, then appended to the port's text.
    let dest = body;
    let mut pre = std::mem::take(&mut scratch.pre);
    pre.text.clear();
    pre.runs.clear();
    let body = &mut pre;
    // 7. Internal masquerade (the cluster IP rule's matches, rendered in step 1).
    if has_internal {
        // Everything (masquerade-all), or what does not come from the pod CIDR.
        let masquerade = match settings.detector {
            _ if settings.masquerade_all => Some(None),
            LocalDetector::Cidr(cidr) => Some(Some(cidr)),
            _ => None,
        };
        if let Some(cidr) = masquerade {
            let t = &mut body.text;
            t.push_str("-A ");
            internal_chain.write_to(t);
            t.push_str(&scratch.cluster_ip);
            if let Some(cidr) = cidr {
                t.push_str(" ! -s ");
                Addr::Net(cidr).write_to(t);
            }
            t.push_str(" -j KUBE-MARK-MASQ");
            body.end(internal_chain);
        }
    }
    // 8. External-traffic chain.
    if port.uses_external_traffic() {
        chain_list.push(chains.ext);
        if !port.external_policy_local {
            body.rule(
                chains.ext,
                &[Match::Comment(Comment::Around(
                    "masquerade traffic for ",
                    s.shared(),
                    " external destinations",
                ))],
                &Target::Jump(KUBE_MARK_MASQ),
            );
        } else {
            if let LocalDetector::Cidr(cidr) = settings.detector {
                body.rule(
                    chains.ext,
                    &[
                        Match::Comment(Comment::Around(
                            "pod traffic for ",
                            s.shared(),
                            " external destinations",
                        )),
                        Match::Source {
                            negated: false,
                            addr: Addr::Net(cidr),
                        },
                    ],
                    &Target::Jump(chains.svc),
                );
            }
            body.rule(
                chains.ext,
                &[
                    Match::Comment(Comment::Around(
                        "masquerade LOCAL traffic for ",
                        s.shared(),
                        " external destinations",
                    )),
                    Match::SourceLocal,
                ],
                &Target::Jump(KUBE_MARK_MASQ),
            );
            body.rule(
                chains.ext,
                &[
                    Match::Comment(Comment::Around(
                        "route LOCAL traffic for ",
                        s.shared(),
                        " external destinations",
                    )),
                    Match::SourceLocal,
                ],
                &Target::Jump(chains.svc),
            );
        }
        if has_external {
            body.rule(chains.ext, &[], &Target::Jump(external_policy_chain));
        }
    }
    // 9. Firewall chain.
    if uses_fw {
        chain_list.push(chains.fw);
        let lb = Comment::Around("", s.shared(), " loadbalancer IP");
        let mut allow_from_node = false;
        for cidr in &port.load_balancer_source_ranges {
            body.rule(
                chains.fw,
                &[
                    Match::Comment(lb.clone()),
                    Match::Source {
                        negated: false,
                        addr: Addr::Net(*cidr),
                    },
                ],
                &Target::Jump(chains.ext),
            );
            if cidr.contains(&settings.node_ip) {
                allow_from_node = true;
            }
        }
        if allow_from_node {
            for ip in &port.load_balancer_vips {
                body.rule(
                    chains.fw,
                    &[
                        Match::Comment(lb.clone()),
                        Match::Source {
                            negated: false,
                            addr: Addr::Ip(*ip),
                        },
                    ],
                    &Target::Jump(chains.ext),
                );
            }
        }
        body.rule(
            chains.fw,
            &[Match::Comment(Comment::Around(
                "other traffic to ",
                s.shared(),
                " will be dropped by KUBE-PROXY-FIREWALL",
            ))],
            &Target::None,
        );
    }
    if head_first {
        dest.text.extend_from_slice(head.text.as_bytes());
    }
    let body_start = dest.text.len();
    let base = body_start;
    dest.text.extend_from_slice(pre.text.as_bytes());
    for r in &pre.runs {
        dest.add_run(r.chain, base + r.end as usize, r.lines);
    }
    scratch.pre = pre;
    let body = dest;
    // 10. Policy chains, rendered with the endpoint chains (each name hashed once), straight
    // into the port's text.
    let cluster = port.uses_cluster_policy().then_some(chains.svc);
    let local = port.uses_local_policy().then_some(chains.svl);
    endpoint_chains(port, large, [cluster, local], scratch, &mut body.text);
    let scratch = &*scratch;
    for (chain, (end, lines)) in [cluster, local].into_iter().zip(scratch.policy) {
        if let Some(chain) = chain {
            chain_list.push(chain);
            if lines > 0 {
                body.add_run(chain, end, lines);
            }
        }
    }
    // 11. Endpoint chains: their rules, rendered after the policy chains'.
    chain_list.extend_from_slice(&scratch.seps);
    for (sp, &chain) in scratch.spans.iter().zip(&scratch.seps) {
        body.add_run(chain, sp.rules_end, 2);
    }
    // A masquerade rule for an internal chain that is not declared (kube-proxy writes it all
    // the same): the chain is created by the rule.
    if body.runs.first().is_some_and(|r| r.chain == internal_chain) && !chain_list.contains(&internal_chain) {
        out.extra.push(internal_chain);
    }
    out.chains = Many::Own(chain_list);
    body_start
}

/// The endpoint chains of a port's locally reachable endpoints (every endpoint a policy chain
/// jumps to is one of them), hashed once, into `scratch.seps` (and `scratch.index` by address
/// for long lists), with their text: each endpoint's `ip:port` into `scratch.sock`, then the
/// policy chains' rules and every endpoint chain's two rules appended to `t`, the port's text,
/// as bytes (pieces of `&str` and ASCII: text whatever the names).
fn endpoint_chains(
    port: &ServicePortInfo,
    large: bool,
    policy: [Option<Chain>; 2],
    scratch: &mut Scratch,
    t: &mut Vec<u8>,
) {
    scratch.seps.clear();
    scratch.spans.clear();
    scratch.index.clear();
    scratch.blocks.clear();
    scratch.hashes.clear();
    scratch.sock.clear();
    scratch.sep_comment.clear();
    scratch.sep_comment.push_str(" -m comment --comment ");
    scratch.sep_comment.push_str(&port.name_string);
    let name = port.name_string.as_bytes();
    let proto = port.protocol.lower().as_bytes();
    // Every endpoint's hash input starts with the port's name and protocol: one padded
    // block made once, the socket text written into a copy of it for each endpoint.
    let prefix = name.len() + proto.len();
    let mut template = [0u8; 64];
    if let Some(t) = template.get_mut(..prefix) {
        let (a, b) = t.split_at_mut(name.len());
        a.copy_from_slice(name);
        b.copy_from_slice(proto);
    }
    let sock = &mut scratch.sock;
    let mut one_block = true;
    let mut ip6 = String::new();
    for ep in &port.all_locally_reachable {
        // `ip:port` (`[ip]:port`), as the hash reads it and the DNAT rule writes it
        let start = sock.len();
        let (ip_start, ip_end, fixed) = match ep.ip {
            IpAddr::V4(v4) => {
                // `ip:port` at most 21 characters: written into a buffer, copied whole.
                let mut buf = [0u8; 32];
                let n = ipv4_bytes(v4, &mut buf);
                buf[n] = b':';
                let m = put_port(&mut buf, n + 1, ep.port);
                push_fixed(sock, &buf, m);
                (
                    start,
                    start + n,
                    Some(Fixed {
                        buf,
                        ip: n,
                        socket: m,
                    }),
                )
            }
            IpAddr::V6(_) => {
                ip6.clear();
                write_ip(&mut ip6, ep.ip);
                sock.push(b'[');
                sock.extend_from_slice(ip6.as_bytes());
                sock.push(b']');
                let ip = (start + 1, sock.len() - 1);
                sock.push(b':');
                let mut digits = [0u8; 5];
                let n = u16_bytes(ep.port, &mut digits);
                sock.extend_from_slice(&digits[5 - n..]);
                (ip.0, ip.1, None)
            }
        };
        let socket_end = sock.len();
        let socket = sock.get(start..socket_end).unwrap_or(&[]);
        let total = prefix + socket.len();
        if one_block && total <= 55 {
            let mut block = template;
            block[prefix..total].copy_from_slice(socket);
            block[total] = 0x80;
            block[56..64].copy_from_slice(&((total as u64) * 8).to_be_bytes());
            scratch.blocks.push(block);
        } else {
            one_block = false;
        }
        scratch.spans.push(EpSpan {
            start,
            ip: (ip_start, ip_end),
            socket_end,
            fixed,
            rules_end: 0,
        });
    }
    if one_block {
        chain_hash_blocks(&scratch.blocks, &mut scratch.hashes);
    } else {
        // A name too long for one block: hashed part by part.
        for sp in &scratch.spans {
            let socket = scratch.sock.get(sp.start..sp.socket_end).unwrap_or(&[]);
            scratch.hashes.push(chain_hash(&[name, proto, socket]));
        }
    }
    scratch.seps.extend(
        scratch
            .hashes
            .iter()
            .map(|h| Chain::Service(ServiceChainKind::Sep, *h)),
    );
    if port.all_locally_reachable.len() > 16 {
        scratch
            .index
            .extend(port.all_locally_reachable.iter().map(Endpoint::addr).zip(0..));
    }
    // The policy chains' rules (cluster, local).
    for (k, (chain, eps)) in policy
        .into_iter()
        .zip([&port.cluster_endpoints, &port.local_endpoints])
        .enumerate()
    {
        let lines = match chain {
            Some(chain) => policy_rules(t, port, chain, eps, large, scratch),
            None => 0,
        };
        scratch.policy[k] = (t.len(), lines);
    }
    // The endpoint chains' rules (what comes after `-A CHAIN`: the comment, unless large).
    let comment: &[u8] = if large {
        b""
    } else {
        scratch.sep_comment.as_bytes()
    };
    let dnat: &[u8] = match port.protocol {
        crate::proxy::Protocol::Tcp => b" -m tcp -p tcp -j DNAT --to-destination ",
        crate::proxy::Protocol::Udp => b" -m udp -p udp -j DNAT --to-destination ",
        crate::proxy::Protocol::Sctp => b" -m sctp -p sctp -j DNAT --to-destination ",
    };
    let affinity = port.session_affinity_timeout.is_some();
    let sock = &scratch.sock;
    for (sp, h) in scratch.spans.iter_mut().zip(&scratch.hashes) {
        t.extend_from_slice(b"-A KUBE-SEP-");
        t.extend_from_slice(h);
        t.extend_from_slice(comment);
        t.extend_from_slice(b" -s ");
        match &sp.fixed {
            Some(f) => f.push_ip(t),
            None => t.extend_from_slice(sock.get(sp.ip.0..sp.ip.1).unwrap_or(&[])),
        }
        t.extend_from_slice(b" -j KUBE-MARK-MASQ\n-A KUBE-SEP-");
        t.extend_from_slice(h);
        t.extend_from_slice(comment);
        if affinity {
            t.extend_from_slice(b" -m recent --name KUBE-SEP-");
            t.extend_from_slice(h);
            t.extend_from_slice(b" --set");
        }
        t.extend_from_slice(dnat);
        match &sp.fixed {
            Some(f) => f.push_socket(t),
            None => t.extend_from_slice(sock.get(sp.start..sp.socket_end).unwrap_or(&[])),
        }
        t.push(b'\n');
        sp.rules_end = t.len();
    }
}

/// `writeServiceToEndpointRules` for one policy chain, as bytes appended to `t` (the port's
/// text; the endpoints' socket texts are in `scratch.sock`, as `scratch.spans` tell):
/// affinity checks, then the probability cascade. Returns how many rules.
fn policy_rules(
    t: &mut Vec<u8>,
    port: &ServicePortInfo,
    chain: Chain,
    endpoints: &[Endpoint],
    large: bool,
    scratch: &Scratch,
) -> u32 {
    let all = &port.all_locally_reachable;
    // The place of endpoint `k` of `endpoints` among the locally reachable ones (every
    // endpoint a policy chain jumps to is one of them), most often the same place.
    let place = |k: usize, ep: &Endpoint| -> Option<usize> {
        let addr = ep.addr();
        if all.get(k).is_some_and(|e| e.addr() == addr) {
            return Some(k);
        }
        if scratch.index.is_empty() {
            all.iter().position(|e| e.addr() == addr)
        } else {
            scratch.index.get(&addr).copied()
        }
    };
    // Text that is not at hand (rare): rendered here.
    let mut other = String::new();
    // `-A CHAIN` and the comment up to the endpoint, written once, copied for each rule.
    let head_start = t.len();
    t.extend_from_slice(b"-A ");
    match chain {
        Chain::Service(kind, h) => {
            t.extend_from_slice(kind.prefix().as_bytes());
            t.extend_from_slice(&h);
        }
        Chain::Fixed(name) => t.extend_from_slice(name.as_bytes()),
    }
    if !large {
        t.extend_from_slice(b" -m comment --comment \"");
        t.extend_from_slice(port.name_string.as_bytes());
        t.extend_from_slice(b" -> ");
    }
    let head = (head_start, t.len());
    // The head in a buffer when it fits (every one without a comment does).
    let mut head_buf = [0u8; 64];
    let short = match t.get(head.0..head.1) {
        Some(h) if h.len() <= head_buf.len() => {
            head_buf[..h.len()].copy_from_slice(h);
            true
        }
        _ => false,
    };
    let mut lines = 0u32;
    let mut first = true;
    // Each rule: the head (written above for the first), the socket in the comment, `middle`,
    // then the endpoint chain, or `-j` and it.
    let mut rule = |t: &mut Vec<u8>, k: usize, ep: &Endpoint, middle: &[u8], tail: &[u8]| {
        if !first {
            if short {
                push_fixed(t, &head_buf, head.1 - head.0);
            } else {
                t.extend_from_within(head.0..head.1);
            }
        }
        first = false;
        let at = place(k, ep).filter(|&i| i < scratch.hashes.len());
        if !large {
            match at.and_then(|i| scratch.spans.get(i)) {
                Some(sp) => match &sp.fixed {
                    Some(f) => f.push_socket(t),
                    None => t.extend_from_slice(scratch.sock.get(sp.start..sp.socket_end).unwrap_or(&[])),
                },
                None => {
                    other.clear();
                    write_socket(&mut other, ep.addr());
                    t.extend_from_slice(other.as_bytes());
                }
            }
            t.push(b'"');
        }
        t.extend_from_slice(middle);
        let mut name = |t: &mut Vec<u8>| match at.and_then(|i| scratch.hashes.get(i)) {
            Some(h) => {
                t.extend_from_slice(b"KUBE-SEP-");
                t.extend_from_slice(h);
            }
            None => {
                other.clear();
                endpoint_chain(port, ep).write_to(&mut other);
                t.extend_from_slice(other.as_bytes());
            }
        };
        if tail.is_empty() {
            t.extend_from_slice(b" -j ");
            name(t);
        } else {
            name(t);
            t.extend_from_slice(tail);
            name(t);
        }
        t.push(b'\n');
        lines += 1;
    };
    if let Some(seconds) = port.session_affinity_timeout {
        let mut digits = String::with_capacity(48);
        digits.push_str(" --rcheck --seconds ");
        push_u32(&mut digits, seconds);
        digits.push_str(" --reap -j ");
        for (k, ep) in endpoints.iter().enumerate() {
            rule(t, k, ep, b" -m recent --name ", digits.as_bytes());
        }
    }
    let n = endpoints.len();
    let mut p = [0u8; 64];
    let stat = b" -m statistic --mode random --probability ";
    p[..stat.len()].copy_from_slice(stat);
    let mut other_p = String::new();
    for (k, ep) in endpoints.iter().enumerate() {
        if k + 1 < n {
            let left = u32::try_from(n - k).unwrap_or(u32::MAX);
            match probability_text(left).map(str::as_bytes) {
                // `0.dddddddddd`: 12 characters.
                Some(text) if text.len() == 12 => {
                    p[stat.len()..stat.len() + 12].copy_from_slice(text);
                    rule(t, k, ep, &p[..stat.len() + 12], b"");
                }
                _ => {
                    other_p.clear();
                    other_p.push_str(" -m statistic --mode random --probability ");
                    write_probability(&mut other_p, left);
                    rule(t, k, ep, other_p.as_bytes(), b"");
                }
            }
        } else {
            rule(t, k, ep, b"", b"");
        }
    }
    if first {
        // No rule: no head either.
        t.truncate(head.0);
    }
    lines
}

/// Writes an IPv4 address as dotted decimal (at most 15 bytes) at the start of `buf`; returns
/// its length.
#[inline]
fn ipv4_bytes(ip: Ipv4Addr, buf: &mut [u8; 32]) -> usize {
    let mut at = 0;
    for (k, o) in ip.octets().into_iter().enumerate() {
        if k > 0 {
            buf[at] = b'.';
            at += 1;
        }
        let (h, t, u) = (o / 100, (o / 10) % 10, o % 10);
        if h > 0 {
            buf[at] = b'0' + h;
            at += 1;
        }
        if h > 0 || t > 0 {
            buf[at] = b'0' + t;
            at += 1;
        }
        buf[at] = b'0' + u;
        at += 1;
    }
    at
}

/// Writes a port number's digits at `buf[at..]` (`at` at most 16); returns their end.
#[inline]
fn put_port(buf: &mut [u8; 32], at: usize, n: u16) -> usize {
    let digits = match n {
        0..10 => 1,
        10..100 => 2,
        100..1000 => 3,
        1000..10000 => 4,
        _ => 5,
    };
    let mut v = n;
    for k in (0..digits).rev() {
        if let Some(b) = buf.get_mut(at + k) {
            *b = b'0' + (v % 10) as u8;
        }
        v /= 10;
    }
    at + digits
}

/// Writes a port number's digits at the end of `buf`; returns how many.
#[inline]
fn u16_bytes(n: u16, buf: &mut [u8; 5]) -> usize {
    let mut n = n;
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 || i == 0 {
            break;
        }
    }
    buf.len() - i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoint_texts_print_as_display_does() {
        let ports = (0..=10_000u16).chain([65_535, 54_321, 10_001, 99, 100, 999, 1000]);
        for (k, port) in ports.enumerate() {
            let o = (k % 256) as u8;
            let ip = Ipv4Addr::new(o, 255 - o, (k / 256) as u8, 10);
            let mut buf = [0u8; 32];
            let n = ipv4_bytes(ip, &mut buf);
            buf[n] = b':';
            let m = put_port(&mut buf, n + 1, port);
            let f = Fixed {
                buf,
                ip: n,
                socket: m,
            };
            let mut t = b"x".to_vec();
            f.push_socket(&mut t);
            f.push_ip(&mut t);
            assert_eq!(
                String::from_utf8(t).unwrap(),
                format!("x{}{ip}", SocketAddr::from((ip, port)))
            );
            let mut digits = [0u8; 5];
            let d = u16_bytes(port, &mut digits);
            assert_eq!(&digits[5 - d..], port.to_string().as_bytes());
        }
    }
}
