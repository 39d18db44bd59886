//! Expected endpoints per zone: CPU-proportional targets bounded by the overload threshold
//! (`getAllocations`, `serviceOverloaded`).
//!
//! Follows Kubernetes v1.37.2: `getAllocations` in
//! `staging/src/k8s.io/endpointslice/topologycache/topologycache.go`, `serviceOverloaded` in
//! `topologycache/utils.go`.

use std::collections::BTreeMap;

use serde::Serialize;

/// The most extra load any endpoint should carry: 20% above an even share.
pub const OVERLOAD_THRESHOLD: f64 = 0.2;

/// How many endpoints one zone should get.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ZoneAllocation {
    /// The zone's share of the cluster's allocatable CPU.
    pub ratio: f64,
    /// The target: `ratio × endpoints`, raised to `minimum` when below it.
    pub desired: f64,
    /// The fewest endpoints that keep each one within the threshold:
    /// `ceil(ratio × endpoints / (1 + threshold))`.
    pub minimum: usize,
    /// The most endpoints the zone may hold while every other zone keeps its minimum.
    pub maximum: usize,
}

/// Why no allocation exists for a given number of ready endpoints.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AllocationFailure {
    TooFewEndpoints,
    MinimumExceedsThreshold,
}

/// The allocation of `endpoints` ready endpoints over zones with these CPU ratios.
/// Fails when there are more zones than endpoints, or when the minimums add up to more than
/// the endpoints. Zones are visited in name order.
pub(crate) fn allocate(
    ratios: &BTreeMap<String, f64>,
    endpoints: usize,
) -> Result<BTreeMap<String, ZoneAllocation>, AllocationFailure> {
    if ratios.len() > endpoints {
        return Err(AllocationFailure::TooFewEndpoints);
    }
    let n = endpoints as f64;
    let mut out = BTreeMap::new();
    let mut min_total = 0usize;
    for (zone, &ratio) in ratios {
        let desired = ratio * n;
        let minimum = minimum_for(desired);
        min_total = min_total.saturating_add(minimum);
        if min_total > endpoints {
            return Err(AllocationFailure::MinimumExceedsThreshold);
        }
        out.insert(
            zone.clone(),
            ZoneAllocation {
                ratio,
                desired: desired.max(minimum as f64),
                minimum,
                maximum: 0,
            },
        );
    }
    for a in out.values_mut() {
        a.maximum = a.minimum + (endpoints - min_total);
    }
    Ok(out)
}

/// `ceil(desired / (1 + threshold))`, computed as Kubernetes does (multiplying by the inverse,
/// which matters at exact boundaries).
fn minimum_for(desired: f64) -> usize {
    let m = (desired * (1.0 / (1.0 + OVERLOAD_THRESHOLD))).ceil();
    if m.is_finite() && m > 0.0 { m as usize } else { 0 }
}

/// True when some zone with CPU has no hinted endpoints, or fewer than
/// `ceil(total × ratio / (1 + threshold))` — the check the controller runs when Nodes change
/// to find Services whose hints went stale. No hints at all is never overloaded; hints with no
/// zone ratios always are.
pub fn service_overloaded(hinted: &BTreeMap<String, usize>, ratios: &BTreeMap<String, f64>) -> bool {
    !short_zones(hinted, ratios).is_empty()
}

/// The zones that make [`service_overloaded`] true, in name order.
pub fn short_zones(hinted: &BTreeMap<String, usize>, ratios: &BTreeMap<String, f64>) -> Vec<String> {
    if hinted.is_empty() {
        return Vec::new();
    }
    if ratios.is_empty() {
        return hinted.keys().cloned().collect();
    }
    let total: usize = hinted.values().sum();
    ratios
        .iter()
        .filter(|(zone, ratio)| {
            let have = hinted.get(zone.as_str()).copied().unwrap_or(0);
            have == 0 || have < minimum_for(total as f64 * **ratio)
        })
        .map(|(z, _)| z.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ratios(r: &[(&str, f64)]) -> BTreeMap<String, f64> {
        r.iter().map(|(z, v)| (z.to_string(), *v)).collect()
    }

    #[test]
    fn worked_examples_from_the_spec() {
        let third = 1.0 / 3.0;
        let r = ratios(&[("a", third), ("b", third), ("c", third)]);
        assert_eq!(allocate(&r, 4), Err(AllocationFailure::MinimumExceedsThreshold));
        assert_eq!(allocate(&r, 2), Err(AllocationFailure::TooFewEndpoints));
        let a = allocate(&r, 9).unwrap();
        for z in ["a", "b", "c"] {
            assert_eq!(a[z].minimum, 3);
            assert_eq!(a[z].maximum, 3);
            assert!((a[z].desired - 3.0).abs() < 1e-9);
        }
    }

    #[test]
    fn desired_is_raised_to_the_minimum() {
        let r = ratios(&[("a", 0.45), ("b", 0.55)]);
        let a = allocate(&r, 2).unwrap();
        assert_eq!(a["a"].minimum, 1);
        assert_eq!(a["a"].desired, 1.0);
        assert!((a["b"].desired - 1.1).abs() < 1e-9);
        assert_eq!(a["b"].maximum, 1);
    }

    #[test]
    fn overload_check() {
        let r = ratios(&[("a", 0.5), ("b", 0.5)]);
        let h: BTreeMap<String, usize> = [("a".to_string(), 5)].into();
        assert!(service_overloaded(&h, &r));
        let h: BTreeMap<String, usize> = [("a".to_string(), 5), ("b".to_string(), 5)].into();
        assert!(!service_overloaded(&h, &r));
        // 10 endpoints, half the CPU: at least ceil(5 / 1.2) = 5 each.
        let h: BTreeMap<String, usize> = [("a".to_string(), 6), ("b".to_string(), 4)].into();
        assert_eq!(short_zones(&h, &r), vec!["b".to_string()]);
        assert!(!service_overloaded(&BTreeMap::new(), &r));
        assert!(service_overloaded(&h, &BTreeMap::new()));
    }
}
