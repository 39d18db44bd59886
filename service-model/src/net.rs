//! The workspace's one network vocabulary: [`IpFamily`] and [`Protocol`] (parsed and printed as
//! the Kubernetes API spells them), and Kubernetes' lenient address parsers (Go's
//! `ParseIPSloppy` / `ParseCIDRSloppy` of `k8s.io/utils/net`, as Kubernetes v1.37.2 reads
//! endpoint addresses and ClusterIPs).

use std::fmt;
use std::net::IpAddr;
use std::str::FromStr;

use ipnet::IpNet;
use serde::{Deserialize, Serialize};

use crate::endpointslice::address_type;

pub use crate::validation::names::{is_ipv4_string, is_ipv6_string, parse_cidr_sloppy, parse_ip_sloppy};

/// Parses a CIDR strictly (address/prefix-length; surrounding whitespace ignored) and clears
/// its host bits: the network it names. `None` when it does not parse.
pub fn parse_network(s: &str) -> Option<IpNet> {
    s.trim().parse::<IpNet>().ok().map(|n| n.trunc())
}

/// A value that is not one of a small set of API spellings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not a valid {what}: must be one of {allowed}")]
pub struct ParseNameError {
    /// What was read (`IP family`, `protocol`).
    pub what: &'static str,
    /// The text found.
    pub value: String,
    /// The accepted spellings.
    pub allowed: &'static str,
}

/// An IP family: `IPv4` or `IPv6` (a Service's `ipFamilies` value, and an EndpointSlice's
/// `addressType` for addresses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum IpFamily {
    /// IPv4.
    #[serde(rename = "IPv4")]
    V4,
    /// IPv6.
    #[serde(rename = "IPv6")]
    V6,
}

impl IpFamily {
    /// Both families, IPv4 first.
    pub const ALL: [IpFamily; 2] = [IpFamily::V4, IpFamily::V6];

    /// The family of an address.
    pub fn of(ip: IpAddr) -> Self {
        match ip {
            IpAddr::V4(_) => IpFamily::V4,
            IpAddr::V6(_) => IpFamily::V6,
        }
    }

    /// The family of a CIDR.
    pub fn of_net(net: &IpNet) -> Self {
        match net {
            IpNet::V4(_) => IpFamily::V4,
            IpNet::V6(_) => IpFamily::V6,
        }
    }

    /// `IPv4` or `IPv6`, as Kubernetes spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            IpFamily::V4 => "IPv4",
            IpFamily::V6 => "IPv6",
        }
    }

    /// The EndpointSlice `addressType` of this family's slices.
    pub fn address_type(self) -> &'static str {
        match self {
            IpFamily::V4 => address_type::IPV4,
            IpFamily::V6 => address_type::IPV6,
        }
    }

    /// The family of an `addressType` value; `None` for `FQDN`, the deprecated `IP` and others.
    pub fn from_address_type(s: &str) -> Option<Self> {
        match s {
            address_type::IPV4 => Some(IpFamily::V4),
            address_type::IPV6 => Some(IpFamily::V6),
            _ => None,
        }
    }

    /// Reads `IPv4` / `IPv6` (case-sensitive, as the API is).
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "IPv4" => Some(IpFamily::V4),
            "IPv6" => Some(IpFamily::V6),
            _ => None,
        }
    }

    /// The number of address bits: 32 or 128.
    pub fn bits(self) -> u32 {
        match self {
            IpFamily::V4 => 32,
            IpFamily::V6 => 128,
        }
    }

    /// 0 for IPv4, 1 for IPv6: an index into per-family arrays.
    pub fn index(self) -> usize {
        match self {
            IpFamily::V4 => 0,
            IpFamily::V6 => 1,
        }
    }
}

impl fmt::Display for IpFamily {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for IpFamily {
    type Err = ParseNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        IpFamily::parse(s).ok_or_else(|| ParseNameError {
            what: "IP family",
            value: s.to_owned(),
            allowed: "IPv4, IPv6",
        })
    }
}

/// A transport protocol of a Service, EndpointSlice or NetworkPolicy port.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Protocol {
    /// `TCP` (the default of an unset `protocol`).
    #[default]
    #[serde(rename = "TCP")]
    Tcp,
    /// `UDP`.
    #[serde(rename = "UDP")]
    Udp,
    /// `SCTP`.
    #[serde(rename = "SCTP")]
    Sctp,
}

impl Protocol {
    /// The three protocols, in Kubernetes' order.
    pub const ALL: [Protocol; 3] = [Protocol::Tcp, Protocol::Udp, Protocol::Sctp];

    /// Reads `TCP`, `UDP` or `SCTP` (case-sensitive, as the API is).
    pub fn parse(s: &str) -> Option<Protocol> {
        match s {
            "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }

    /// The API spelling: `TCP`, `UDP` or `SCTP`.
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Tcp => "TCP",
            Protocol::Udp => "UDP",
            Protocol::Sctp => "SCTP",
        }
    }

    /// `tcp`, `udp` or `sctp`, as rules, DNS names and chain-name hashes write it.
    pub fn lower(self) -> &'static str {
        match self {
            Protocol::Tcp => "tcp",
            Protocol::Udp => "udp",
            Protocol::Sctp => "sctp",
        }
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Protocol {
    type Err = ParseNameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Protocol::parse(s).ok_or_else(|| ParseNameError {
            what: "protocol",
            value: s.to_owned(),
            allowed: "TCP, UDP, SCTP",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for f in IpFamily::ALL {
            assert_eq!(f.to_string().parse::<IpFamily>(), Ok(f));
            assert_eq!(IpFamily::from_address_type(f.address_type()), Some(f));
            let json = serde_json::to_string(&f).unwrap();
            assert_eq!(json, format!("\"{f}\""));
            assert_eq!(serde_json::from_str::<IpFamily>(&json).unwrap(), f);
        }
        for p in Protocol::ALL {
            assert_eq!(p.to_string().parse::<Protocol>(), Ok(p));
            assert_eq!(p.lower(), p.as_str().to_ascii_lowercase());
            assert_eq!(serde_json::to_string(&p).unwrap(), format!("\"{p}\""));
        }
        assert!("ipv4".parse::<IpFamily>().is_err());
        let e = "tcp".parse::<Protocol>().unwrap_err();
        assert_eq!(
            e.to_string(),
            "\"tcp\" is not a valid protocol: must be one of TCP, UDP, SCTP"
        );
        assert_eq!(Protocol::default(), Protocol::Tcp);
    }

    #[test]
    fn the_lenient_parser_reads_leading_zeros() {
        assert_eq!(
            parse_ip_sloppy("10.180.00.001"),
            Some("10.180.0.1".parse().unwrap())
        );
        assert_eq!(IpFamily::of("fd00::1".parse().unwrap()), IpFamily::V6);
    }
}
