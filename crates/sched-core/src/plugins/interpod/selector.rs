//! Label selectors over pod labels, with Kubernetes' semantics (`k8s.io/apimachinery/pkg/labels`).
//!
//! Two forms:
//! - [`matches()`] / [`matches_opt`] evaluate a [`LabelSelector`] against a label map of strings.
//!   Used where only one pod is checked (an existing pod's term against the pod being scheduled).
//! - [`CompiledSelector`] resolves the selector once against the snapshot's [`Interner`](crate::snapshot::Interner), then
//!   matches interned [`LabelIds`](crate::snapshot::LabelIds) with integer comparisons and no allocation. Used when a
//!   selector is checked against many pods.
//!
//! Semantics, as `metav1.LabelSelectorAsSelector`: a missing selector (`None`) matches nothing;
//! an empty one (no `matchLabels`, no `matchExpressions`) matches everything; requirements are
//! ANDed; `NotIn` and `DoesNotExist` hold for pods without the label.

use std::collections::BTreeMap;

use crate::model::{LabelSelector, LabelSelectorOperator};
pub use crate::snapshot::CompiledSelector;

/// A label selector Kubernetes would reject (`metav1.LabelSelectorAsSelector` fails).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidSelector(pub String);

/// Whether `sel` matches `labels`. An empty selector matches everything.
pub fn matches(sel: &LabelSelector, labels: &BTreeMap<String, String>) -> bool {
    sel.matches(labels)
}

/// Like [`matches()`], where a missing selector matches nothing.
pub fn matches_opt(sel: Option<&LabelSelector>, labels: &BTreeMap<String, String>) -> bool {
    sel.is_some_and(|s| matches(s, labels))
}

/// Whether the selector has no requirements (then it matches everything).
pub fn is_empty(sel: &LabelSelector) -> bool {
    sel.match_labels.is_empty() && sel.match_expressions.is_empty()
}

/// Checks a selector as `metav1.LabelSelectorAsSelector` does: keys must be qualified names,
/// values valid label values, `In`/`NotIn` need values and `Exists`/`DoesNotExist` take none.
pub fn validate(sel: &LabelSelector) -> Result<(), InvalidSelector> {
    for (k, v) in &sel.match_labels {
        validate_key(k)?;
        validate_value(k, v)?;
    }
    for r in &sel.match_expressions {
        validate_key(&r.key)?;
        match r.operator {
            LabelSelectorOperator::In | LabelSelectorOperator::NotIn => {
                if r.values.is_empty() {
                    return Err(InvalidSelector(format!(
                        "values: Invalid value: []: for 'in', 'notin' operators, values set can't be empty (key {:?})",
                        r.key
                    )));
                }
                for v in &r.values {
                    validate_value(&r.key, v)?;
                }
            }
            LabelSelectorOperator::Exists | LabelSelectorOperator::DoesNotExist => {
                if !r.values.is_empty() {
                    return Err(InvalidSelector(format!(
                        "values: Invalid value: {:?}: values set must be empty for exists and does not exist (key {:?})",
                        r.values, r.key
                    )));
                }
            }
        }
    }
    Ok(())
}

fn validate_key(key: &str) -> Result<(), InvalidSelector> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let name_ok = !name.is_empty() && name.len() <= 63 && is_label_token(name);
    let prefix_ok = prefix.is_none_or(is_dns_subdomain);
    if name_ok && prefix_ok && key.matches('/').count() <= 1 {
        Ok(())
    } else {
        Err(InvalidSelector(format!(
            "key: Invalid value: {key:?}: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character, with an optional DNS subdomain prefix and '/'"
        )))
    }
}

fn validate_value(key: &str, value: &str) -> Result<(), InvalidSelector> {
    if value.len() <= 63 && (value.is_empty() || is_label_token(value)) {
        Ok(())
    } else {
        Err(InvalidSelector(format!(
            "values[0][{key}]: Invalid value: {value:?}: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        )))
    }
}

/// `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`, non-empty.
fn is_label_token(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// RFC 1123 subdomain: at most 253 characters, dot-separated lowercase alphanumeric labels
/// that may contain '-' inside.
fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && is_lower_alnum(b[0])
                && is_lower_alnum(b[b.len() - 1])
                && b.iter().all(|&c| is_lower_alnum(c) || c == b'-')
        })
}

fn is_lower_alnum(c: u8) -> bool {
    c.is_ascii_lowercase() || c.is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::LabelSelectorRequirement;
    use crate::snapshot::{Interner, LabelIds};

    fn sel(json: serde_json::Value) -> LabelSelector {
        serde_json::from_value(json).unwrap()
    }

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn string_and_compiled_forms_agree() {
        let mut interner = Interner::default();
        let pods = [
            labels(&[("service", "securityscan")]),
            labels(&[("service", "antivirus"), ("env", "prod")]),
            labels(&[("env", "")]),
            labels(&[]),
        ];
        let ids: Vec<LabelIds> = pods
            .iter()
            .map(|l| LabelIds::intern(&mut interner, l))
            .collect();
        let selectors = [
            sel(serde_json::json!({})),
            sel(serde_json::json!({"matchLabels": {"service": "securityscan"}})),
            sel(serde_json::json!({"matchExpressions": [
                {"key": "service", "operator": "In", "values": ["securityscan", "value2"]}]})),
            sel(serde_json::json!({"matchExpressions": [
                {"key": "service", "operator": "NotIn", "values": ["securityscan"]}]})),
            sel(serde_json::json!({"matchExpressions": [
                {"key": "env", "operator": "Exists"},
                {"key": "wrongkey", "operator": "DoesNotExist"}]})),
            sel(serde_json::json!({"matchExpressions": [
                {"key": "never-seen", "operator": "NotIn", "values": ["x"]}]})),
            sel(serde_json::json!({"matchLabels": {"service": "never-seen"}})),
        ];
        let expected = [
            [true, true, true, true],
            [true, false, false, false],
            [true, false, false, false],
            [false, true, true, true],
            [false, true, true, false],
            [true, true, true, true],
            [false, false, false, false],
        ];
        for (s, want) in selectors.iter().zip(expected) {
            let c = CompiledSelector::compile(Some(s), &interner);
            for (i, l) in pods.iter().enumerate() {
                assert_eq!(matches(s, l), want[i], "{s:?} on {l:?}");
                assert_eq!(c.matches(&ids[i]), want[i], "compiled {s:?} on {l:?}");
            }
        }
        assert!(!matches_opt(None, &pods[0]));
        assert!(!CompiledSelector::compile(None, &interner).matches(&ids[0]));
    }

    #[test]
    fn and_and_emptiness() {
        let interner = Interner::default();
        let mut s = CompiledSelector::from_map(&BTreeMap::new(), &interner);
        assert!(s.is_empty());
        s.and(&CompiledSelector::nothing());
        assert!(s.is_empty());
        s.and(&CompiledSelector::from_map(
            &labels(&[("a", "b")]),
            &interner,
        ));
        assert!(!s.is_empty());
        assert!(!CompiledSelector::nothing().is_empty());
    }

    #[test]
    fn validation_follows_kube() {
        let bad_value = sel(serde_json::json!({"matchExpressions": [
            {"key": "service", "operator": "In", "values": ["{{.bad-value.}}"]}]}));
        assert!(validate(&bad_value).is_err());
        let no_values = LabelSelector {
            match_expressions: vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: LabelSelectorOperator::In,
                values: vec![],
            }],
            ..Default::default()
        };
        assert!(validate(&no_values).is_err());
        let exists_with_values = LabelSelector {
            match_expressions: vec![LabelSelectorRequirement {
                key: "a".into(),
                operator: LabelSelectorOperator::Exists,
                values: vec!["x".into()],
            }],
            ..Default::default()
        };
        assert!(validate(&exists_with_values).is_err());
        assert!(validate(&sel(serde_json::json!({"matchLabels": {"Bad Key": "v"}}))).is_err());
        assert!(
            validate(&sel(
                serde_json::json!({"matchLabels": {"UPPER.example/k": "v"}})
            ))
            .is_err()
        );
        for ok in [
            serde_json::json!({}),
            serde_json::json!({"matchLabels": {"app.kubernetes.io/name": "web", "x": ""}}),
            serde_json::json!({"matchExpressions": [{"key": "a_b.c-d", "operator": "Exists"}]}),
        ] {
            assert!(validate(&sel(ok)).is_ok());
        }
    }
}
