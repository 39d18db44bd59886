//! EndpointSlices indexed once by Service, for reading a node's endpoints service port by
//! service port without rescanning every slice.
//!
//! The index borrows everything: slices are grouped by (namespace, Service, family) through
//! a map keyed by borrowed names, every endpoint address is parsed once into one flat list,
//! and what the proxy leaves out is recorded as it goes.

use std::cmp::Ordering;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;

use svcnet_model::{EndpointPort, EndpointSlice};

use crate::proxy::{Ignored, IpFamily, ProxyEndpoint, SelectOptions};

/// (namespace, Service name), borrowed from a slice.
type ServiceKey<'a> = (&'a str, &'a str);

/// A slice the proxy reads, with where its parsed addresses sit in [`SliceIndex::ips`].
#[derive(Debug, Clone)]
struct Entry<'a> {
    /// Position in the caller's list.
    order: usize,
    group: usize,
    family: IpFamily,
    slice: &'a EndpointSlice,
    ips: Range<usize>,
}

/// Every readable slice, grouped by Service and family, each group in slice name order.
#[derive(Debug)]
pub(crate) struct SliceIndex<'a> {
    options: SelectOptions,
    groups: HashMap<ServiceKey<'a>, usize>,
    /// Entries ordered by (group, family, slice name).
    entries: Vec<Entry<'a>>,
    /// For group `g` and family `f`, `entries[starts[2g + f]..starts[2g + f + 1]]`.
    starts: Vec<usize>,
    /// The first address of every endpoint of every entry, when it is an IP of the family.
    ips: Vec<Option<IpAddr>>,
    /// What the proxy leaves out, in the order kube-proxy's per-family caches meet it: IPv4
    /// slices by namespace and name, then IPv6 ones.
    pub(crate) ignored: Vec<(IpFamily, Ignored)>,
}

fn family_slot(f: IpFamily) -> usize {
    match f {
        IpFamily::V4 => 0,
        IpFamily::V6 => 1,
    }
}

/// A slice port's number when the proxy accepts it (non-zero, within `u16`).
pub(crate) fn port_number(p: &EndpointPort) -> Option<u16> {
    match p.port.map(u16::try_from) {
        Some(Ok(n)) if n != 0 => Some(n),
        _ => None,
    }
}

impl<'a> SliceIndex<'a> {
    /// Indexes `slices` for the proxy.
    pub(crate) fn build(slices: &'a [EndpointSlice], options: SelectOptions) -> Self {
        let mut groups: HashMap<ServiceKey<'a>, usize> = HashMap::with_capacity(slices.len());
        let mut entries: Vec<Entry<'a>> = Vec::with_capacity(slices.len());
        let mut ips: Vec<Option<IpAddr>> =
            Vec::with_capacity(slices.iter().map(|s| s.endpoints().len()).sum());
        // Ignored content with its slice's sort key, sorted stably at the end.
        let mut ignored: Vec<(IpFamily, &'a str, &'a str, Ignored)> = Vec::new();
        for (order, s) in slices.iter().enumerate() {
            let Some(family) = IpFamily::parse(&s.address_type) else {
                continue;
            };
            let (ns, name) = (s.metadata.namespace(), s.metadata.name());
            let mut ignore = |what: String, why: &'static str| {
                let slice = format!("{ns}/{name}");
                ignored.push((family, ns, name, Ignored { slice, what, why }));
            };
            let Some(service) = s.service_name().filter(|n| !n.is_empty()) else {
                ignore(String::new(), "no kubernetes.io/service-name label");
                continue;
            };
            if ns.is_empty() || name.is_empty() {
                ignore(String::new(), "no name or namespace");
                continue;
            }
            let first = ips.len();
            ips.extend(s.endpoints().iter().map(|ep| {
                let ip = ep.addresses.first()?.parse::<IpAddr>().ok()?;
                (IpFamily::of(ip) == family).then_some(ip)
            }));
            let parsed = ips.get(first..).unwrap_or(&[]);
            // kube-proxy meets each bad endpoint once per usable port.
            for p in s.ports() {
                let Some(port_name) = p.name.as_ref() else {
                    ignore(format!("port {:?}", p.port), "port without a name");
                    continue;
                };
                if port_number(p).is_none() {
                    ignore(format!("port {port_name:?}"), "port without a valid number");
                    continue;
                }
                for (ep, ip) in s.endpoints().iter().zip(parsed) {
                    if ip.is_some() {
                        continue;
                    }
                    match ep.addresses.first() {
                        None => ignore(String::new(), "endpoint without addresses"),
                        Some(a) if a.parse::<IpAddr>().is_err() => ignore(a.clone(), "address is not an IP"),
                        Some(a) => ignore(a.clone(), "address of the other IP family"),
                    }
                }
            }
            let next = groups.len();
            let group = *groups.entry((ns, service)).or_insert(next);
            entries.push(Entry {
                order,
                group,
                family,
                slice: s,
                ips: first..ips.len(),
            });
        }
        // Counting sort by (group, family), then each run by slice name (stable: input order
        // among equal names, as the proxy's sorted read keeps it).
        let slots = groups.len() * 2;
        let slot = |e: &Entry<'_>| e.group * 2 + family_slot(e.family);
        let mut starts = vec![0usize; slots + 1];
        for e in &entries {
            if let Some(c) = starts.get_mut(slot(e) + 1) {
                *c += 1;
            }
        }
        for i in 1..starts.len() {
            let before = starts.get(i - 1).copied().unwrap_or(0);
            if let Some(c) = starts.get_mut(i) {
                *c += before;
            }
        }
        let mut next = starts.clone();
        let mut ordered: Vec<Option<Entry<'a>>> = vec![None; entries.len()];
        for e in entries {
            if let Some(at) = next.get_mut(slot(&e)) {
                if let Some(cell) = ordered.get_mut(*at) {
                    *cell = Some(e);
                }
                *at += 1;
            }
        }
        let mut entries: Vec<Entry<'a>> = ordered.into_iter().flatten().collect();
        for w in starts.windows(2) {
            if let [a, b] = *w
                && b - a > 1
                && let Some(run) = entries.get_mut(a..b)
            {
                run.sort_by(|x, y| x.slice.metadata.name().cmp(y.slice.metadata.name()));
            }
        }
        ignored.sort_by(|a, b| (a.0, a.1, a.2).cmp(&(b.0, b.1, b.2)));
        SliceIndex {
            options,
            groups,
            entries,
            starts,
            ips,
            ignored: ignored.into_iter().map(|(f, _, _, i)| (f, i)).collect(),
        }
    }

    /// The slices of one Service and family, in name order.
    fn run(&self, namespace: &str, service: &str, family: IpFamily) -> &[Entry<'a>] {
        let Some(&g) = self.groups.get(&(namespace, service)) else {
            return &[];
        };
        let slot = g * 2 + family_slot(family);
        match (self.starts.get(slot), self.starts.get(slot + 1)) {
            (Some(&a), Some(&b)) => self.entries.get(a..b).unwrap_or(&[]),
            _ => &[],
        }
    }

    /// Every slice of `family` in (namespace, name) order, with its Service key and its
    /// parsed addresses.
    pub(crate) fn slices(
        &self,
        family: IpFamily,
    ) -> impl Iterator<Item = (ServiceKey<'a>, &'a EndpointSlice, &[Option<IpAddr>])> {
        let mut of_family: Vec<&Entry<'a>> = self.entries.iter().filter(|e| e.family == family).collect();
        of_family.sort_by(|a, b| {
            let key = |e: &Entry<'a>| (e.slice.metadata.namespace(), e.slice.metadata.name(), e.order);
            key(a).cmp(&key(b))
        });
        of_family.into_iter().map(|e| {
            let service = (e.slice.metadata.namespace(), e.slice.service_name().unwrap_or(""));
            (service, e.slice, self.ips.get(e.ips.clone()).unwrap_or(&[]))
        })
    }

    /// The endpoints of service port (`port`, `protocol`) of Service `namespace/service` for
    /// the proxier of `family` on node `node_name`, sorted by `IP:port` text and deduplicated.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn endpoints(
        &self,
        node_name: &str,
        namespace: &str,
        service: &str,
        port: &str,
        protocol: &str,
        family: IpFamily,
        scratch: &mut Vec<(AddrText, usize)>,
    ) -> Vec<ProxyEndpoint<'a>> {
        let run = self.run(namespace, service, family);
        let mut out = Vec::new();
        for e in run {
            for p in e.slice.ports() {
                if p.name.as_deref() != Some(port) || p.protocol.as_deref().unwrap_or("TCP") != protocol {
                    continue;
                }
                let Some(number) = port_number(p) else { continue };
                let ips = self.ips.get(e.ips.clone()).unwrap_or(&[]);
                if out.capacity() == 0 {
                    out.reserve(ips.len());
                }
                self.push_endpoints(&mut out, node_name, e.slice, ips, number);
            }
        }
        sort_and_dedup(&mut out, scratch);
        out
    }

    /// Appends the usable endpoints of `slice` (addresses `ips`) on port `number`, as the
    /// proxy on `node_name` sees them.
    pub(crate) fn push_endpoints(
        &self,
        out: &mut Vec<ProxyEndpoint<'a>>,
        node_name: &str,
        slice: &'a EndpointSlice,
        ips: &[Option<IpAddr>],
        number: u16,
    ) {
        for (ep, ip) in slice.endpoints().iter().zip(ips) {
            let Some(ip) = *ip else { continue };
            let hints = ep.hints.as_ref();
            let node_hints = if self.options.node_hints {
                hints.and_then(|h| h.for_nodes.as_deref()).unwrap_or(&[])
            } else {
                &[]
            };
            out.push(ProxyEndpoint {
                ip,
                port: number,
                node_name: ep.node_name.as_deref(),
                zone: ep.zone.as_deref(),
                is_local: !node_name.is_empty() && ep.node_name.as_deref() == Some(node_name),
                ready: ep.conditions.ready.unwrap_or(true),
                serving: ep.conditions.serving.unwrap_or(true),
                terminating: ep.conditions.terminating.unwrap_or(false),
                zone_hints: hints.and_then(|h| h.for_zones.as_deref()).unwrap_or(&[]),
                node_hints,
            });
        }
    }
}

/// Sorts endpoints by `IP:port` text and keeps one per address: the last local copy when
/// there is one, else the first copy (kube-proxy's map, where a local copy overwrites).
pub(crate) fn sort_and_dedup(eps: &mut Vec<ProxyEndpoint<'_>>, scratch: &mut Vec<(AddrText, usize)>) {
    if eps.len() < 2 {
        return;
    }
    scratch.clear();
    scratch.extend(eps.iter().enumerate().map(|(i, e)| (AddrText::of(e.addr()), i)));
    scratch.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(a.1.cmp(&b.1)));
    let mut keep: Vec<ProxyEndpoint<'_>> = Vec::with_capacity(eps.len());
    let mut i = 0;
    while let Some((key, first)) = scratch.get(i) {
        let mut chosen = *first;
        let mut j = i + 1;
        while let Some((k, at)) = scratch.get(j)
            && k == key
        {
            if eps.get(*at).is_some_and(|e| e.is_local) {
                chosen = *at;
            }
            j += 1;
        }
        if let Some(e) = eps.get(chosen) {
            keep.push(*e);
        }
        i = j;
    }
    *eps = keep;
}

/// `IP:port` text on the stack, ordered as the text is: the proxy's sort key.
#[derive(Clone, Copy)]
pub(crate) struct AddrText {
    buf: [u8; 56],
    len: usize,
}

impl AddrText {
    fn of(addr: SocketAddr) -> Self {
        let mut t = AddrText { buf: [0; 56], len: 0 };
        match addr.ip() {
            IpAddr::V4(v4) => {
                for (i, octet) in v4.octets().into_iter().enumerate() {
                    if i > 0 {
                        t.push(b'.');
                    }
                    t.push_number(u32::from(octet));
                }
            }
            IpAddr::V6(v6) => {
                let _ = write!(t, "[{v6}]");
            }
        }
        t.push(b':');
        t.push_number(u32::from(addr.port()));
        t
    }

    fn push(&mut self, b: u8) {
        if let Some(slot) = self.buf.get_mut(self.len) {
            *slot = b;
            self.len += 1;
        }
    }

    fn push_number(&mut self, n: u32) {
        let mut digits = [0u8; 10];
        let mut k = digits.len();
        let mut n = n;
        loop {
            k -= 1;
            if let Some(d) = digits.get_mut(k) {
                *d = b'0' + (n % 10) as u8;
            }
            n /= 10;
            if n == 0 || k == 0 {
                break;
            }
        }
        for &d in digits.get(k..).unwrap_or(&[]) {
            self.push(d);
        }
    }

    fn as_bytes(&self) -> &[u8] {
        self.buf.get(..self.len).unwrap_or(&[])
    }
}

impl std::fmt::Write for AddrText {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        for b in s.bytes() {
            self.push(b);
        }
        Ok(())
    }
}

impl PartialEq for AddrText {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for AddrText {}

impl PartialOrd for AddrText {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for AddrText {
    fn cmp(&self, other: &Self) -> Ordering {
        self.as_bytes().cmp(other.as_bytes())
    }
}

impl std::fmt::Debug for AddrText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&String::from_utf8_lossy(self.as_bytes()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addr_text_is_the_display_text() {
        for a in [
            "10.0.0.1:80",
            "255.255.255.255:65535",
            "0.0.0.0:1",
            "[fd00::1]:8080",
            "[::ffff:1.2.3.4]:443",
            "[ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff]:65535",
        ] {
            let addr: SocketAddr = a.parse().unwrap();
            assert_eq!(AddrText::of(addr).as_bytes(), addr.to_string().as_bytes());
        }
    }
}
