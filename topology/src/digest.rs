//! Digests of EndpointSlices: what tells a proxy which Services' slices changed between two
//! syncs (any change to a slice object counts, as in kube-proxy v1.37.2's
//! `pkg/proxy/endpointschangetracker.go`).

use std::hash::{Hash, Hasher};
use std::net::Ipv4Addr;

use svcnet_model::hash::DigestHasher;
use svcnet_model::{Endpoint, EndpointConditions, EndpointPort, EndpointSlice, ObjectMeta};

use crate::index::dotted_quad;

/// A digest of every field of `s`: equal slices have equal digests, and a change to any field
/// changes it (but for collisions of a 64-bit digest). Not stable across versions of this crate:
/// compare digests taken by one build only. kube-proxy counts any change to a slice object as an
/// endpoint change of its Service; the iptables proxier's partial syncs tell such changes by
/// these digests ([`SliceIndex::build_digested`] takes them while indexing).
///
/// The usual fields are mixed in one by one, in few words (which of them are present as one
/// word of flags, with the counts of labels and ports; the same for each port and each
/// endpoint; an endpoint's one address in one word when it reads as a dotted quad as printed),
/// the fields a slice usually lacks through `Hash`.
///
/// ```
/// use svcnet_model::EndpointSlice;
/// use svcnet_topology::slice_digest;
///
/// let a: EndpointSlice = serde_json::from_str(r#"{"metadata":{"name":"web-1"},
///     "addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"]}]}"#).unwrap();
/// let mut b = a.clone();
/// assert_eq!(slice_digest(&a), slice_digest(&b));
/// b.endpoints.as_mut().unwrap()[0].node_name = Some("n1".into());
/// assert_ne!(slice_digest(&a), slice_digest(&b));
/// ```
///
/// [`SliceIndex::build_digested`]: crate::SliceIndex::build_digested
pub fn slice_digest(s: &EndpointSlice) -> u64 {
    let mut h = slice_head(s);
    for e in s.endpoints() {
        let v4 = e.addresses.first().and_then(|a| dotted_quad(a.as_bytes()));
        endpoint_words(&mut h, e, v4);
    }
    h.finish()
}

/// The digest of a slice's own fields and of its number of endpoints: [`slice_digest`] goes on
/// with [`endpoint_words`] for each endpoint.
pub(crate) fn slice_head(s: &EndpointSlice) -> DigestHasher {
    // Every field is named: a field added to the slice types must be added here.
    let EndpointSlice {
        api_version,
        kind,
        metadata,
        address_type,
        endpoints,
        ports,
    } = s;
    let mut h = DigestHasher::default();
    let ObjectMeta {
        name,
        generate_name,
        namespace,
        uid,
        resource_version,
        generation,
        creation_timestamp,
        deletion_timestamp,
        deletion_grace_period_seconds,
        labels,
        annotations,
        owner_references,
        finalizers,
    } = metadata;
    // The fields a slice usually has, each behind a bit of one word (with the number of
    // labels and of ports); the rest, rarely set, through `Hash` behind one more bit.
    let rare_meta = api_version.is_some()
        || kind.is_some()
        || generate_name.is_some()
        || uid.is_some()
        || resource_version.is_some()
        || generation.is_some()
        || creation_timestamp.is_some()
        || deletion_timestamp.is_some()
        || deletion_grace_period_seconds.is_some()
        || annotations.is_some()
        || owner_references.is_some()
        || finalizers.is_some();
    let label_count = labels.as_ref().map_or(0, |l| l.len() as u64 & 0xffff);
    let port_count = ports.as_ref().map_or(0, |p| p.len() as u64 & 0xffff);
    h.write_u64(
        u64::from(name.is_some())
            | u64::from(namespace.is_some()) << 1
            | u64::from(labels.is_some()) << 2
            | u64::from(ports.is_some()) << 3
            | u64::from(rare_meta) << 4
            | label_count << 8
            | port_count << 24,
    );
    // Each text's length goes before its words (see `text_words`).
    let (name, namespace) = (opt_text(name), opt_text(namespace));
    h.write_u64(text_len(name) | text_len(namespace) << 8 | text_len(address_type) << 16);
    text_words(&mut h, name);
    text_words(&mut h, namespace);
    text_words(&mut h, address_type);
    for (k, v) in labels.iter().flatten() {
        h.write_u64(text_len(k) | text_len(v) << 8);
        text_words(&mut h, k);
        text_words(&mut h, v);
    }
    for p in ports.iter().flatten() {
        let EndpointPort {
            name,
            protocol,
            port,
            app_protocol,
        } = p;
        let (name, protocol, app_protocol) = (opt_text(name), opt_text(protocol), opt_text(app_protocol));
        h.write_u64(
            u64::from(p.name.is_some())
                | u64::from(p.protocol.is_some()) << 1
                | u64::from(port.is_some()) << 2
                | u64::from(p.app_protocol.is_some()) << 3
                | text_len(name) << 8
                | text_len(protocol) << 16
                | text_len(app_protocol) << 24
                | u64::from(port.unwrap_or(0) as u32) << 32,
        );
        text_words(&mut h, name);
        text_words(&mut h, protocol);
        text_words(&mut h, app_protocol);
    }
    if rare_meta {
        (
            api_version,
            kind,
            generate_name,
            uid,
            resource_version,
            generation,
            creation_timestamp,
            deletion_timestamp,
            deletion_grace_period_seconds,
            annotations,
            owner_references,
            finalizers,
        )
            .hash(&mut h);
    }
    match endpoints {
        None => h.write_u64(u64::MAX),
        Some(list) => h.write_usize(list.len()),
    }
    h
}

/// Mixes endpoint `e` into a slice's digest; `v4` is its first address read as a dotted quad
/// as printed (`dotted_quad`), which its 32 bits then stand for (the text is the address's
/// `Display`).
#[inline(always)]
pub(crate) fn endpoint_words(h: &mut DigestHasher, e: &Endpoint, v4: Option<Ipv4Addr>) {
    // Every field is named: a field added to the endpoint type must be added here.
    let Endpoint {
        addresses,
        conditions,
        hostname,
        target_ref,
        deprecated_topology,
        node_name,
        zone,
        hints,
    } = e;
    let EndpointConditions {
        ready,
        serving,
        terminating,
    } = conditions;
    let tri = |b: &Option<bool>| b.map_or(0u64, |v| 1 + u64::from(v));
    let rare = hostname.is_some()
        || target_ref.is_some()
        || deprecated_topology.is_some()
        || zone.is_some()
        || hints.is_some();
    let node = node_name.as_ref().map_or("", |n| n.as_str());
    // One word of flags with the node name's length (saturated: its words are read back by
    // it), and either the one address as a dotted quad (bit 8) or the number of addresses
    // and the first one's length, its words following.
    let flags = tri(ready)
        | tri(serving) << 2
        | tri(terminating) << 4
        | u64::from(node_name.is_some()) << 6
        | u64::from(rare) << 7
        | text_len(node) << 16;
    match (v4, addresses.as_slice()) {
        (Some(ip), [_]) => h.write_u64(flags | 1 << 8 | u64::from(ip.to_bits()) << 32),
        _ => {
            let (first, more) = match addresses.split_first() {
                Some((a, more)) => (a.as_str(), more),
                None => ("", &[][..]),
            };
            h.write_u64(flags | text_len(first) << 24 | (addresses.len() as u64 & 0xffff_ffff) << 32);
            text_words(h, first);
            for a in more {
                a.as_str().hash(h);
            }
        }
    }
    text_words(h, node);
    if rare {
        (hostname, target_ref, deprecated_topology, zone, hints).hash(h);
    }
}

/// An optional text, empty when absent (a word of flags tells the two apart).
fn opt_text(t: &Option<String>) -> &str {
    t.as_deref().unwrap_or("")
}

/// A text's length for [`text_words`], saturated at 255 (one byte of a word).
#[inline]
fn text_len(text: &str) -> u64 {
    text.len().min(255) as u64
}

/// Mixes `text` into `h` after its [`text_len`] was: in as few words as that length allows,
/// which it tells apart (each text is read back from its words given the length): up to 8
/// bytes one word, up to 16 two (the bytes little-endian, zero-padded), up to 254 the bytes as
/// `Hasher::write` takes them; a longer text through its `Hash`, which ends itself.
#[inline(always)]
fn text_words(h: &mut DigestHasher, text: &str) {
    use std::hash::{Hash, Hasher};
    let b = text.as_bytes();
    let n = b.len();
    let word = |c: Option<&[u8; 8]>| c.map_or(0, |c| u64::from_le_bytes(*c));
    let half = |c: Option<&[u8; 4]>| c.map_or(0, |c| u64::from(u32::from_le_bytes(*c)));
    let byte = |i: usize| b.get(i).map_or(0, |&c| u64::from(c) << (8 * i));
    // Overlapping reads hold the same bytes where they overlap.
    if (9..=16).contains(&n) {
        h.write_u64(word(b.first_chunk()));
        h.write_u64(word(b.last_chunk()) >> (8 * (16 - n)));
    } else if (4..8).contains(&n) {
        h.write_u64(half(b.first_chunk()) | half(b.last_chunk()) << (8 * (n - 4)));
    } else if n == 8 {
        h.write_u64(word(b.first_chunk()));
    } else if n < 4 {
        if n > 0 {
            h.write_u64(byte(0) | byte(n / 2) | byte(n - 1));
        }
    } else if n < 255 {
        h.write(b);
    } else {
        text.hash(h);
    }
}
