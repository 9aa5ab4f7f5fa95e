//! Small pieces of Kubernetes semantics shared by the node plugins: toleration matching, label
//! key and value validation, integer parsing as Go's `strconv.ParseInt`, QoS class, and
//! extended resource names.

use crate::model::{Pod, Taint, TaintEffect, Toleration, TolerationOperator};

/// kube's `Toleration.ToleratesTaint`: the effect (when set) and key (when set) must match;
/// `Equal` compares values, `Exists` matches any value.
pub(crate) fn tolerates(t: &Toleration, taint: &Taint) -> bool {
    tolerates_parts(t, &taint.key, &taint.value, taint.effect)
}

/// [`tolerates`] for a taint given by its parts (no taint needs to be built).
pub(crate) fn tolerates_parts(t: &Toleration, key: &str, value: &str, effect: TaintEffect) -> bool {
    if let Some(e) = t.effect
        && e != effect
    {
        return false;
    }
    if !t.key.is_empty() && t.key != key {
        return false;
    }
    match t.operator {
        TolerationOperator::Equal => t.value == value,
        TolerationOperator::Exists => true,
    }
}

/// kube's `TolerationsTolerateTaint`: some toleration tolerates the taint.
pub(crate) fn tolerations_tolerate(tolerations: &[Toleration], taint: &Taint) -> bool {
    tolerations.iter().any(|t| tolerates(t, taint))
}

/// Whether a toleration tolerates every taint with `effect`, whatever its key and value
/// (empty key with `Exists`, and an empty or equal effect).
pub(crate) fn tolerates_all_with_effect(t: &Toleration, effect: TaintEffect) -> bool {
    t.key.is_empty()
        && t.operator == TolerationOperator::Exists
        && t.effect.is_none_or(|e| e == effect)
}

/// Go's `strconv.ParseInt(s, 10, 64)`: optional sign, decimal digits, no spaces, in range.
pub(crate) fn parse_int(s: &str) -> Option<i64> {
    // Rust's parser accepts exactly the same language for radix 10: an optional '+' or '-'
    // followed by at least one ASCII digit.
    s.parse::<i64>().ok()
}

fn is_alnum(b: u8) -> bool {
    b.is_ascii_alphanumeric()
}

/// The `qualifiedNameFmt` / label value pattern: `([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]`.
fn matches_name_pattern(s: &str) -> bool {
    let b = s.as_bytes();
    match (b.first(), b.last()) {
        (Some(&f), Some(&l)) => {
            is_alnum(f)
                && is_alnum(l)
                && b.iter()
                    .all(|&c| is_alnum(c) || c == b'-' || c == b'_' || c == b'.')
        }
        _ => false,
    }
}

/// `IsDNS1123Subdomain`: at most 253 characters of dot-separated lowercase labels, each
/// starting and ending with an alphanumeric.
pub(crate) fn is_dns1123_subdomain(s: &str) -> bool {
    if s.is_empty() || s.len() > 253 {
        return false;
    }
    s.split('.').all(|part| {
        let b = part.as_bytes();
        let lower_alnum = |c: u8| c.is_ascii_lowercase() || c.is_ascii_digit();
        match (b.first(), b.last()) {
            (Some(&f), Some(&l)) => {
                lower_alnum(f) && lower_alnum(l) && b.iter().all(|&c| lower_alnum(c) || c == b'-')
            }
            _ => false,
        }
    })
}

/// `IsQualifiedName`: an optional DNS subdomain prefix and `/`, then a name of 1 to 63
/// characters matching the qualified name pattern.
pub(crate) fn is_qualified_name(s: &str) -> bool {
    let mut parts = s.split('/');
    let (prefix, name) = match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => (None, name),
        (Some(prefix), Some(name), None) => (Some(prefix), name),
        _ => return false,
    };
    if let Some(p) = prefix
        && !is_dns1123_subdomain(p)
    {
        return false;
    }
    !name.is_empty() && name.len() <= 63 && matches_name_pattern(name)
}

/// `IsValidLabelValue`: empty, or at most 63 characters matching the name pattern.
pub(crate) fn is_valid_label_value(s: &str) -> bool {
    s.is_empty() || (s.len() <= 63 && matches_name_pattern(s))
}

/// `v1helper.IsExtendedResourceName`: not a native resource (no `/`, or a
/// `kubernetes.io/` prefixed name), not a quota `requests.` name, and a qualified name once
/// prefixed with `requests.`.
pub(crate) fn is_extended_resource_name(name: &str) -> bool {
    if !name.contains('/') || name.contains("kubernetes.io/") || name.starts_with("requests.") {
        return false;
    }
    is_qualified_name(&format!("requests.{name}"))
}

/// Whether the pod is in the BestEffort QoS class: no container or init container sets a
/// positive CPU or memory request or limit (kube's `GetPodQOS`).
pub(crate) fn is_best_effort(pod: &Pod) -> bool {
    !pod.spec
        .containers
        .iter()
        .chain(pod.spec.init_containers.iter())
        .any(|c| {
            c.resources
                .requests
                .iter()
                .chain(c.resources.limits.iter())
                .any(|(name, q)| (name == "cpu" || name == "memory") && q.milli_value() > 0)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn taint(key: &str, value: &str, effect: TaintEffect) -> Taint {
        Taint {
            key: key.into(),
            value: value.into(),
            effect,
        }
    }

    fn tol(
        key: &str,
        op: TolerationOperator,
        value: &str,
        effect: Option<TaintEffect>,
    ) -> Toleration {
        Toleration {
            key: key.into(),
            operator: op,
            value: value.into(),
            effect,
            toleration_seconds: None,
        }
    }

    // kube: pkg/apis/core/v1/helper TestTolerationToleratesTaint (the cases without the
    // comparison operators, which the legacy API does not have).
    #[test]
    fn toleration_tolerates_taint() {
        use TaintEffect::*;
        use TolerationOperator::*;
        let cases = [
            (
                tol("", Exists, "", None),
                taint("foo", "bar", PreferNoSchedule),
                true,
            ),
            (
                tol("", Equal, "", None),
                taint("foo", "bar", NoSchedule),
                false,
            ),
            (
                tol("foo", Exists, "", Some(NoSchedule)),
                taint("foo", "bar", NoSchedule),
                true,
            ),
            (
                tol("foo", Equal, "bar", Some(NoSchedule)),
                taint("foo", "bar", NoSchedule),
                true,
            ),
            (
                tol("foo", Equal, "bar", Some(NoSchedule)),
                taint("foo", "bar", NoExecute),
                false,
            ),
            (
                tol("foo", Equal, "bar", None),
                taint("foo", "bar", NoExecute),
                true,
            ),
            (
                tol("foo", Equal, "bar", Some(NoSchedule)),
                taint("foo", "baz", NoSchedule),
                false,
            ),
            (
                tol("foo", Exists, "", Some(NoSchedule)),
                taint("bar", "baz", NoSchedule),
                false,
            ),
            (
                tol("", Equal, "bar", None),
                taint("any", "bar", NoSchedule),
                true,
            ),
        ];
        for (i, (t, ta, want)) in cases.iter().enumerate() {
            assert_eq!(tolerates(t, ta), *want, "case {i}");
        }
    }

    #[test]
    fn names_and_values_validate_as_kube() {
        assert!(is_qualified_name("foo"));
        assert!(is_qualified_name("example.com/foo"));
        assert!(is_qualified_name("kubernetes.io/hostname"));
        assert!(is_qualified_name("GPU"));
        assert!(!is_qualified_name(""));
        assert!(!is_qualified_name("/foo"));
        assert!(!is_qualified_name("a/b/c"));
        assert!(!is_qualified_name("Example.com/foo"));
        assert!(!is_qualified_name("-foo"));
        assert!(!is_qualified_name(&"a".repeat(64)));
        assert!(is_valid_label_value(""));
        assert!(is_valid_label_value("NVIDIA-GRID-K1"));
        assert!(!is_valid_label_value("invalid value: ___@#$%^"));
        assert!(!is_valid_label_value("bar-"));
        assert!(!is_valid_label_value(&"a".repeat(64)));
    }

    #[test]
    fn parse_int_matches_go() {
        assert_eq!(parse_int("0204"), Some(204));
        assert_eq!(parse_int("+5"), Some(5));
        assert_eq!(parse_int("-5"), Some(-5));
        assert_eq!(parse_int(""), None);
        assert_eq!(parse_int(" 5"), None);
        assert_eq!(parse_int("1_000"), None);
        assert_eq!(parse_int("9223372036854775808"), None);
    }

    #[test]
    fn extended_resource_names() {
        assert!(is_extended_resource_name("example.com/aaa"));
        assert!(is_extended_resource_name("nvidia.com/gpu"));
        assert!(!is_extended_resource_name("kubernetes.io/something"));
        assert!(!is_extended_resource_name(
            "subdomain.kubernetes.io/something"
        ));
        assert!(!is_extended_resource_name("hugepages-2Mi"));
        assert!(!is_extended_resource_name("cpu"));
        assert!(!is_extended_resource_name("requests.example.com/aaa"));
    }
}
