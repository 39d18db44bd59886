//! EndpointSlice defaults (`pkg/apis/discovery/v1/defaults.go`, Kubernetes v1.37.2).

use crate::EndpointSlice;
use crate::service::protocol;

/// Applies the API server's EndpointSlice defaults in place (idempotent): every port's `name`
/// defaults to `""` and its `protocol` to `TCP`.
pub fn default_endpoint_slice(slice: &mut EndpointSlice) {
    for port in slice.ports.iter_mut().flatten() {
        if port.name.is_none() {
            port.name = Some(String::new());
        }
        if port.protocol.is_none() {
            port.protocol = Some(protocol::TCP.to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EndpointPort;

    #[test]
    fn fills_name_and_protocol() {
        let mut s = EndpointSlice {
            ports: Some(vec![EndpointPort::default()]),
            ..Default::default()
        };
        default_endpoint_slice(&mut s);
        let once = s.clone();
        assert_eq!(s.ports()[0].name.as_deref(), Some(""));
        assert_eq!(s.ports()[0].protocol.as_deref(), Some("TCP"));
        default_endpoint_slice(&mut s);
        assert_eq!(s, once);
    }
}
