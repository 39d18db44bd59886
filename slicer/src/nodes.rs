//! The Nodes the slicer looks Pods' zones up in.
//!
//! svcnet's own (no Go counterpart in Kubernetes v1.37.2): the zone label is read as
//! `podToEndpoint` in `staging/src/k8s.io/endpointslice/utils.go` reads it.

use svcnet_model::Node;

use svcnet_model::hash::{KeyedMap, KeyedState};

/// Node names with their zone label (`topology.kubernetes.io/zone`), for endpoint zones and for
/// noticing Pods on Nodes that do not exist.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeZones {
    zones: KeyedMap<String, Option<String>>,
}

pub(crate) enum NodeLookup<'a> {
    Found(Option<&'a str>),
    Missing,
}

impl NodeZones {
    /// No nodes.
    pub fn new() -> Self {
        Self::default()
    }

    /// No nodes; Node names are hashed under `key` (see [`Options::hash_key`]) instead of the
    /// fixed default key. Lookups give the same answers under every key.
    ///
    /// [`Options::hash_key`]: crate::Options::hash_key
    pub fn with_hash_key(key: KeyedState) -> Self {
        NodeZones {
            zones: KeyedMap::with_hasher(key),
        }
    }

    /// The zones of `nodes`.
    pub fn from_nodes<'a>(nodes: impl IntoIterator<Item = &'a Node>) -> Self {
        let mut z = Self::new();
        for n in nodes {
            z.insert(n.metadata.name(), n.zone());
        }
        z
    }

    /// Adds or replaces one node.
    pub fn insert(&mut self, name: &str, zone: Option<&str>) {
        self.zones
            .insert(name.to_owned(), zone.filter(|z| !z.is_empty()).map(str::to_owned));
    }

    /// Removes one node.
    pub fn remove(&mut self, name: &str) {
        self.zones.remove(name);
    }

    /// True when the node exists.
    pub fn contains(&self, name: &str) -> bool {
        self.zones.contains_key(name)
    }

    /// The zone of an existing node (`None` when it has no zone label or does not exist).
    pub fn zone(&self, name: &str) -> Option<&str> {
        self.zones.get(name).and_then(|z| z.as_deref())
    }

    #[inline]
    pub(crate) fn lookup(&self, name: &str) -> NodeLookup<'_> {
        match self.zones.get(name) {
            Some(z) => NodeLookup::Found(z.as_deref()),
            None => NodeLookup::Missing,
        }
    }
}
