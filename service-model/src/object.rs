//! A mixed bag of Kubernetes objects, and the sorting of it by kind.
//!
//! Kinds as Kubernetes v1.37.2 names them (`staging/src/k8s.io/api`).

use crate::{
    EndpointSlice, Endpoints, IpAddress, NetworkPolicy, Node, ObjectMeta, Pod, Service, ServiceCidr,
};

/// One object of a kind svcnet knows.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Object {
    /// core/v1 Service.
    Service(Box<Service>),
    /// discovery/v1 EndpointSlice.
    EndpointSlice(Box<EndpointSlice>),
    /// core/v1 Endpoints.
    Endpoints(Box<Endpoints>),
    /// networking/v1 ServiceCIDR.
    ServiceCidr(Box<ServiceCidr>),
    /// networking/v1 IPAddress.
    IpAddress(Box<IpAddress>),
    /// core/v1 Pod.
    Pod(Box<Pod>),
    /// core/v1 Node.
    Node(Box<Node>),
    /// networking/v1 NetworkPolicy.
    NetworkPolicy(Box<NetworkPolicy>),
}

/// The `kind` names svcnet reads, as they appear on the wire.
pub const KNOWN_KINDS: &[&str] = &[
    "Service",
    "EndpointSlice",
    "Endpoints",
    "ServiceCIDR",
    "IPAddress",
    "Pod",
    "Node",
    "NetworkPolicy",
];

impl Object {
    /// The wire `kind`, e.g. `ServiceCIDR`.
    pub fn kind(&self) -> &'static str {
        match self {
            Object::Service(_) => "Service",
            Object::EndpointSlice(_) => "EndpointSlice",
            Object::Endpoints(_) => "Endpoints",
            Object::ServiceCidr(_) => "ServiceCIDR",
            Object::IpAddress(_) => "IPAddress",
            Object::Pod(_) => "Pod",
            Object::Node(_) => "Node",
            Object::NetworkPolicy(_) => "NetworkPolicy",
        }
    }

    /// The object's metadata.
    pub fn metadata(&self) -> &ObjectMeta {
        match self {
            Object::Service(o) => &o.metadata,
            Object::EndpointSlice(o) => &o.metadata,
            Object::Endpoints(o) => &o.metadata,
            Object::ServiceCidr(o) => &o.metadata,
            Object::IpAddress(o) => &o.metadata,
            Object::Pod(o) => &o.metadata,
            Object::Node(o) => &o.metadata,
            Object::NetworkPolicy(o) => &o.metadata,
        }
    }

    /// The stored object an update of this one starts from, among `stored`: the one of the same
    /// kind, namespace and name, else the only one of the same kind (`None` when neither is
    /// there). This is how `svcnet validate --old` pairs a request with what the server holds.
    pub fn counterpart<'a>(&self, stored: impl IntoIterator<Item = &'a Object>) -> Option<&'a Object> {
        let same_kind: Vec<&Object> = stored.into_iter().filter(|o| o.kind() == self.kind()).collect();
        let m = self.metadata();
        let by_name = same_kind
            .iter()
            .find(|o| o.metadata().name() == m.name() && o.metadata().namespace() == m.namespace())
            .copied();
        match (by_name, same_kind.as_slice()) {
            (Some(o), _) => Some(o),
            (None, [only]) => Some(*only),
            _ => None,
        }
    }
}

/// Objects sorted by kind, each list in input order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectSet {
    /// Services.
    pub services: Vec<Service>,
    /// EndpointSlices.
    pub endpoint_slices: Vec<EndpointSlice>,
    /// Endpoints.
    pub endpoints: Vec<Endpoints>,
    /// ServiceCIDRs.
    pub service_cidrs: Vec<ServiceCidr>,
    /// IPAddresses.
    pub ip_addresses: Vec<IpAddress>,
    /// Pods.
    pub pods: Vec<Pod>,
    /// Nodes.
    pub nodes: Vec<Node>,
    /// NetworkPolicies.
    pub network_policies: Vec<NetworkPolicy>,
}

impl ObjectSet {
    /// Sorts a mixed bag of objects by kind, keeping each kind's input order.
    pub fn sort(objects: impl IntoIterator<Item = Object>) -> Self {
        let mut set = ObjectSet::default();
        for o in objects {
            set.push(o);
        }
        set
    }

    /// Adds one object to the list of its kind.
    pub fn push(&mut self, o: Object) {
        match o {
            Object::Service(x) => self.services.push(*x),
            Object::EndpointSlice(x) => self.endpoint_slices.push(*x),
            Object::Endpoints(x) => self.endpoints.push(*x),
            Object::ServiceCidr(x) => self.service_cidrs.push(*x),
            Object::IpAddress(x) => self.ip_addresses.push(*x),
            Object::Pod(x) => self.pods.push(*x),
            Object::Node(x) => self.nodes.push(*x),
            Object::NetworkPolicy(x) => self.network_policies.push(*x),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obj(kind: &str, ns: &str, name: &str) -> Object {
        let metadata = ObjectMeta {
            namespace: Some(ns.into()),
            name: Some(name.into()),
            ..ObjectMeta::default()
        };
        match kind {
            "Service" => Object::Service(Box::new(Service {
                metadata,
                ..Service::default()
            })),
            _ => Object::Pod(Box::new(Pod {
                metadata,
                ..Pod::default()
            })),
        }
    }

    #[test]
    fn counterpart_by_name_else_the_only_one_of_the_kind() {
        let web = obj("Service", "ns", "web");
        let stored = [obj("Pod", "ns", "web"), obj("Service", "ns", "db")];
        // The only Service stored, whatever its name.
        assert_eq!(web.counterpart(&stored), Some(&stored[1]));
        let stored = [obj("Service", "ns", "db"), obj("Service", "ns", "web")];
        assert_eq!(web.counterpart(&stored), Some(&stored[1]));
        let stored = [obj("Service", "ns", "db"), obj("Service", "other", "web")];
        assert_eq!(web.counterpart(&stored), None);
        assert_eq!(web.counterpart(&[]), None);
    }
}
