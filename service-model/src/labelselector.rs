//! metav1 `LabelSelector`, shared by NetworkPolicy and other selectors.

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

    /// Whether `labels` satisfy every requirement. An unknown operator matches nothing,
    /// as Kubernetes refuses to convert such a selector.
    pub fn matches(&self, labels: &StringMap) -> bool {
        if let Some(ml) = &self.match_labels {
            if ml.iter().any(|(k, v)| labels.get(k) != Some(v)) {
                return false;
            }
        }
        for req in self.match_expressions.iter().flatten() {
            let values = req.values.as_deref().unwrap_or(&[]);
            let got = labels.get(&req.key);
            let ok = match req.operator.as_str() {
                "In" => got.is_some_and(|v| values.contains(v)),
                "NotIn" => got.is_none_or(|v| !values.contains(v)),
                "Exists" => got.is_some(),
                "DoesNotExist" => got.is_none(),
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
}
