//! metav1 `LabelSelector`, shared by NetworkPolicy and other selectors.
//!
//! Follows Kubernetes v1.37.2: `staging/src/k8s.io/apimachinery/pkg/apis/meta/v1/types.go` and
//! `helpers.go` (`LabelSelectorAsSelector`).

use serde::{Deserialize, Serialize};

use crate::StringMap;

/// metav1 `LabelSelector`: `matchLabels` and `matchExpressions`, ANDed together.
/// An empty selector matches everything; an absent one (`None` where optional) matches nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Exact key/value matches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_labels: Option<StringMap>,
    /// Set-based requirements.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub match_expressions: Option<Vec<LabelSelectorRequirement>>,
}

/// metav1 `LabelSelectorRequirement`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// The label key.
    #[serde(default)]
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`.
    #[serde(default)]
    pub operator: String,
    /// The values for `In` / `NotIn`; empty for `Exists` / `DoesNotExist`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub values: Option<Vec<String>>,
}

impl LabelSelector {
    /// True when the selector has no requirement at all (it selects everything).
    pub fn is_empty(&self) -> bool {
        self.match_labels.as_ref().is_none_or(|m| m.is_empty())
            && self.match_expressions.as_ref().is_none_or(|e| e.is_empty())
    }

    /// Whether `labels` satisfy every requirement. A requirement Kubernetes refuses to convert
    /// into a selector (an unknown operator, `In`/`NotIn` without values, `Exists`/`DoesNotExist`
    /// with values) matches nothing.
    pub fn matches(&self, labels: &StringMap) -> bool {
        if let Some(ml) = &self.match_labels
            && ml.iter().any(|(k, v)| labels.get(k) != Some(v))
        {
            return false;
        }
        for req in self.match_expressions.iter().flatten() {
            let values = req.values.as_deref().unwrap_or(&[]);
            let got = labels.get(&req.key);
            let ok = match req.operator.as_str() {
                "In" => got.is_some_and(|v| values.contains(v)),
                "NotIn" => !values.is_empty() && got.is_none_or(|v| !values.contains(v)),
                "Exists" => values.is_empty() && got.is_some(),
                "DoesNotExist" => values.is_empty() && got.is_none(),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(kv: &[(&str, &str)]) -> StringMap {
        kv.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn empty_selects_all_and_expressions_and() {
        let all = LabelSelector::default();
        assert!(all.matches(&labels(&[])));
        let sel = LabelSelector {
            match_labels: Some(labels(&[("app", "web")])),
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "tier".into(),
                operator: "NotIn".into(),
                values: Some(vec!["db".into()]),
            }]),
        };
        assert!(sel.matches(&labels(&[("app", "web")])));
        assert!(!sel.matches(&labels(&[("app", "web"), ("tier", "db")])));
        assert!(!sel.matches(&labels(&[("app", "api")])));
    }

    #[test]
    fn unconvertible_requirements_match_nothing() {
        let req = |op: &str, values: Option<Vec<String>>| LabelSelector {
            match_labels: None,
            match_expressions: Some(vec![LabelSelectorRequirement {
                key: "k".into(),
                operator: op.into(),
                values,
            }]),
        };
        let l = labels(&[("k", "v")]);
        assert!(!req("NotIn", None).matches(&labels(&[])));
        assert!(!req("In", Some(vec![])).matches(&l));
        assert!(!req("Exists", Some(vec!["v".into()])).matches(&l));
        assert!(!req("in", Some(vec!["v".into()])).matches(&l));
        assert!(req("Exists", None).matches(&l));
        assert!(req("DoesNotExist", Some(vec![])).matches(&labels(&[])));
        assert!(req("NotIn", Some(vec!["x".into()])).matches(&l));
    }
}
