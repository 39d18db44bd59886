//! The settings of the DNS computation, named after CoreDNS's `kubernetes` plugin options.
//!
//! Follows CoreDNS v1.15.0 `plugin/kubernetes/setup.go` (the Corefile options) for clusters running
//! Kubernetes v1.37.2.

use serde::{Deserialize, Serialize};

use crate::DiscoveryError;

/// Which pod names exist (CoreDNS's `pods` option).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PodMode {
    /// No pod names (the default).
    #[default]
    Disabled,
    /// `<dashed-ip>.<ns>.pod.<zone>` for every IP of every running Pod (CoreDNS v1.15.0 indexes
    /// all of `status.podIPs`).
    Verified,
    /// Any `<dashed-ip>.<ns>.pod.<zone>` in an existing namespace answers its IP; the record
    /// set holds what `Verified` holds, [`DnsZone::lookup`](crate::DnsZone::lookup) answers the rest.
    Insecure,
}

/// Which answers [`DnsZone::lookup`](crate::DnsZone::lookup) gives where CoreDNS breaks DNS rules.
///
/// | query | `CoreDns` (default: what clients of CoreDNS v1.15.0 see) | `Rfc` (RFC 1034 / 2308) |
/// |---|---|---|
/// | a type other than PTR at a reverse name that holds a PTR | NXDOMAIN | NODATA |
/// | a type other than TXT at `dns-version.<zone>` | NXDOMAIN | NODATA |
/// | TXT at any other name (a Service name whose A answers, say) | NXDOMAIN | NODATA where the name exists |
/// | A/AAAA at an ExternalName whose in-zone target has no record of the type (or does not exist) | NODATA, without the CNAME | the CNAME |
/// | A/AAAA at an ExternalName pointing at itself | NODATA | the CNAME |
///
/// Everything else is answered the same way in both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerRules {
    /// CoreDNS v1.15.0's answers, rule-breaking ones included.
    #[default]
    CoreDns,
    /// The answers RFC 1034 and RFC 2308 call for.
    Rfc,
}

/// Settings of the record computation.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct DnsOptions {
    /// The cluster domain (zone), e.g. `cluster.local`; a final dot is optional.
    pub cluster_domain: String,
    /// TTL of every record but `dns-version` (0..=3600; CoreDNS's default is 5).
    pub ttl: u32,
    /// Pod records.
    pub pods: PodMode,
    /// Fall back to the endpoint's `targetRef.name` for its hostname.
    pub endpoint_pod_names: bool,
    /// A ClusterIP Service without any ready address has no forward names.
    pub ignore_empty_service: bool,
    /// CoreDNS's answers or the RFC-correct ones where they differ (lookups only; the record
    /// set is the same).
    #[serde(default)]
    pub answers: AnswerRules,
}

impl Default for DnsOptions {
    fn default() -> Self {
        DnsOptions {
            cluster_domain: "cluster.local".into(),
            ttl: DEFAULT_TTL,
            pods: PodMode::Disabled,
            endpoint_pod_names: false,
            ignore_empty_service: false,
            answers: AnswerRules::CoreDns,
        }
    }
}

/// CoreDNS's default TTL.
pub const DEFAULT_TTL: u32 = 5;
/// The largest TTL CoreDNS accepts.
pub const MAX_TTL: u32 = 3600;
/// The TTL of the `dns-version` TXT record.
pub const DNS_VERSION_TTL: u32 = 28800;
/// The schema version the records follow.
pub const DNS_SCHEMA_VERSION: &str = "1.1.0";

impl DnsOptions {
    /// Options for `cluster_domain`, everything else at CoreDNS's defaults.
    pub fn new(cluster_domain: impl Into<String>) -> DnsOptions {
        DnsOptions {
            cluster_domain: cluster_domain.into(),
            ..DnsOptions::default()
        }
    }

    /// Checks the settings and returns the zone, lower case, without the final dot.
    pub fn validate(&self) -> Result<String, DiscoveryError> {
        if self.ttl > MAX_TTL {
            return Err(DiscoveryError::Ttl { value: self.ttl });
        }
        let bad = |reason| DiscoveryError::ClusterDomain {
            value: self.cluster_domain.clone(),
            reason,
        };
        let zone = self
            .cluster_domain
            .strip_suffix('.')
            .unwrap_or(&self.cluster_domain);
        if zone.is_empty() {
            return Err(bad("must not be empty"));
        }
        if zone.len() > 253 {
            return Err(bad("must be no more than 253 characters"));
        }
        for label in zone.split('.') {
            if label.is_empty() {
                return Err(bad("must not hold an empty label"));
            }
            if label.len() > 63 {
                return Err(bad("labels must be no more than 63 characters"));
            }
            if !label
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            {
                return Err(bad("labels may hold only letters, digits, '-' and '_'"));
            }
        }
        Ok(zone.to_ascii_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation() {
        assert_eq!(
            DnsOptions::new("Cluster.Local.").validate().unwrap(),
            "cluster.local"
        );
        assert!(matches!(
            DnsOptions::new("").validate(),
            Err(DiscoveryError::ClusterDomain { .. })
        ));
        assert!(DnsOptions::new("a..b").validate().is_err());
        assert!(DnsOptions::new("a b").validate().is_err());
        let o = DnsOptions {
            ttl: 3601,
            ..DnsOptions::default()
        };
        assert_eq!(o.validate(), Err(DiscoveryError::Ttl { value: 3601 }));
    }
}
