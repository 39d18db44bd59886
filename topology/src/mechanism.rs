//! Which hinting mechanism applies to a Service: the topology annotation (`Auto`) or
//! `spec.trafficDistribution`, and why.
//!
//! Follows Kubernetes v1.37.2: `hintsEnabled` in `staging/src/k8s.io/endpointslice/utils.go` and
//! the choice in `reconcileByAddressType` of `staging/src/k8s.io/endpointslice/reconciler.go`.

use std::fmt;

use serde::Serialize;
use svcnet_model::Service;

/// The current annotation that turns on topology-aware routing.
pub const ANNOTATION_TOPOLOGY_MODE: &str = "service.kubernetes.io/topology-mode";
/// The deprecated annotation; when present it is read instead of the current one.
pub const ANNOTATION_TOPOLOGY_AWARE_HINTS: &str = "service.kubernetes.io/topology-aware-hints";

/// A `spec.trafficDistribution` value the controller acts on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[non_exhaustive]
pub enum TrafficDistribution {
    /// Prefer endpoints in the client's zone.
    PreferClose,
    /// Prefer endpoints in the client's zone (the newer spelling).
    PreferSameZone,
    /// Prefer endpoints on the client's node, then its zone.
    PreferSameNode,
}

impl TrafficDistribution {
    /// The wire value.
    pub fn as_str(self) -> &'static str {
        match self {
            TrafficDistribution::PreferClose => "PreferClose",
            TrafficDistribution::PreferSameZone => "PreferSameZone",
            TrafficDistribution::PreferSameNode => "PreferSameNode",
        }
    }

    /// Whether endpoints also get `forNodes` hints.
    pub fn node_hints(self) -> bool {
        self == TrafficDistribution::PreferSameNode
    }
}

impl fmt::Display for TrafficDistribution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The mechanism that decides a Service's hints.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub enum Mechanism {
    /// Topology-aware routing by annotation: CPU-proportional zone hints.
    TopologyAuto,
    /// `spec.trafficDistribution`: each ready endpoint hinted to its own zone (and node).
    TrafficDistribution(TrafficDistribution),
    /// Neither: every hint is removed.
    None,
}

/// The annotation as found on the Service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct AnnotationSeen {
    /// Which annotation was read.
    pub key: &'static str,
    /// Its value.
    pub value: String,
    /// True for exactly `Auto` or `auto`.
    pub enabled: bool,
}

/// `spec.trafficDistribution` as found on the Service.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TrafficDistributionSeen {
    /// The value.
    pub value: String,
    /// The value when the controller accepts it (with the feature settings given).
    pub accepted: Option<TrafficDistribution>,
    /// True when it is accepted but the annotation wins.
    pub overridden_by_annotation: bool,
}

/// The mechanism chosen for a Service and what it was chosen from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct MechanismChoice {
    /// The mechanism.
    pub mechanism: Mechanism,
    /// The topology annotation, when present.
    pub annotation: Option<AnnotationSeen>,
    /// `spec.trafficDistribution`, when set.
    pub traffic_distribution: Option<TrafficDistributionSeen>,
}

/// Picks the mechanism as the EndpointSlice reconciler does: the annotation when it is
/// `Auto`/`auto`, else an accepted `trafficDistribution` (`PreferSameZone` and
/// `PreferSameNode` only with `prefer_same_traffic_distribution`), else none.
pub fn choose_mechanism(service: &Service, prefer_same_traffic_distribution: bool) -> MechanismChoice {
    let annotation = [ANNOTATION_TOPOLOGY_AWARE_HINTS, ANNOTATION_TOPOLOGY_MODE]
        .into_iter()
        .find_map(|key| {
            service.metadata.annotation(key).map(|v| AnnotationSeen {
                key,
                value: v.to_owned(),
                enabled: v == "Auto" || v == "auto",
            })
        });
    let auto = annotation.as_ref().is_some_and(|a| a.enabled);
    let traffic_distribution = service.spec().traffic_distribution.as_ref().map(|v| {
        let accepted = match v.as_str() {
            "PreferClose" => Some(TrafficDistribution::PreferClose),
            "PreferSameZone" if prefer_same_traffic_distribution => Some(TrafficDistribution::PreferSameZone),
            "PreferSameNode" if prefer_same_traffic_distribution => Some(TrafficDistribution::PreferSameNode),
            _ => None,
        };
        TrafficDistributionSeen {
            value: v.clone(),
            accepted,
            overridden_by_annotation: accepted.is_some() && auto,
        }
    });
    let mechanism = if auto {
        Mechanism::TopologyAuto
    } else if let Some(td) = traffic_distribution.as_ref().and_then(|t| t.accepted) {
        Mechanism::TrafficDistribution(td)
    } else {
        Mechanism::None
    };
    MechanismChoice {
        mechanism,
        annotation,
        traffic_distribution,
    }
}

impl fmt::Display for MechanismChoice {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (&self.mechanism, &self.annotation) {
            (Mechanism::TopologyAuto, Some(a)) => {
                write!(f, "topology-aware routing ({}={})", a.key, a.value)?
            }
            (Mechanism::TopologyAuto, None) => f.write_str("topology-aware routing")?,
            (Mechanism::TrafficDistribution(td), _) => write!(f, "trafficDistribution {td}")?,
            (Mechanism::None, _) => f.write_str("no hints")?,
        }
        if let Some(a) = self.annotation.as_ref().filter(|a| !a.enabled) {
            write!(f, "; annotation {}={:?} is not Auto", a.key, a.value)?;
        }
        if let Some(t) = &self.traffic_distribution {
            if t.overridden_by_annotation {
                write!(
                    f,
                    "; trafficDistribution {} ignored: the annotation wins",
                    t.value
                )?;
            } else if t.accepted.is_none() {
                write!(
                    f,
                    "; trafficDistribution {:?} is not a value the controller acts on",
                    t.value
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(annotations: &[(&str, &str)], td: Option<&str>) -> Service {
        let mut s = Service::default();
        s.metadata.annotations = Some(
            annotations
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        );
        s.spec_mut().traffic_distribution = td.map(str::to_owned);
        s
    }

    #[test]
    fn annotation_values() {
        for (v, on) in [
            ("Auto", true),
            ("auto", true),
            ("aUto", false),
            ("disabled", false),
            ("enabled", false),
        ] {
            let c = choose_mechanism(&svc(&[(ANNOTATION_TOPOLOGY_MODE, v)], None), true);
            assert_eq!(c.mechanism == Mechanism::TopologyAuto, on, "{v}");
        }
    }

    #[test]
    fn deprecated_annotation_takes_precedence() {
        let s = svc(
            &[
                (ANNOTATION_TOPOLOGY_AWARE_HINTS, "disabled"),
                (ANNOTATION_TOPOLOGY_MODE, "Auto"),
            ],
            None,
        );
        let c = choose_mechanism(&s, true);
        assert_eq!(c.mechanism, Mechanism::None);
        assert_eq!(c.annotation.unwrap().key, ANNOTATION_TOPOLOGY_AWARE_HINTS);
    }

    #[test]
    fn annotation_wins_over_traffic_distribution() {
        let c = choose_mechanism(
            &svc(&[(ANNOTATION_TOPOLOGY_MODE, "Auto")], Some("PreferClose")),
            true,
        );
        assert_eq!(c.mechanism, Mechanism::TopologyAuto);
        assert!(c.traffic_distribution.as_ref().unwrap().overridden_by_annotation);
        assert!(c.to_string().contains("the annotation wins"));
        let c = choose_mechanism(
            &svc(&[(ANNOTATION_TOPOLOGY_MODE, "Disabled")], Some("PreferClose")),
            true,
        );
        assert_eq!(
            c.mechanism,
            Mechanism::TrafficDistribution(TrafficDistribution::PreferClose)
        );
    }

    #[test]
    fn prefer_same_needs_the_feature() {
        let s = svc(&[], Some("PreferSameNode"));
        assert_eq!(choose_mechanism(&s, false).mechanism, Mechanism::None);
        assert_eq!(
            choose_mechanism(&s, true).mechanism,
            Mechanism::TrafficDistribution(TrafficDistribution::PreferSameNode)
        );
        assert_eq!(
            choose_mechanism(&svc(&[], Some("Nearby")), true).mechanism,
            Mechanism::None
        );
    }
}
