//! Policy files as real clusters wrote them: repeated entries, many mistakes at once, a
//! KubeSchedulerConfiguration in the wrong place, a byte order mark.

use std::path::PathBuf;

use sched_core::policy::{Policy, PolicyError, PriorityArgs};

fn read(name: &str) -> Vec<u8> {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/policy")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn repeated_entries_merge_as_kube_v1_20_merges_them() {
    let policy = Policy::from_slice(&read("repeated-entries.json")).unwrap();
    let plan = policy.plan().unwrap();
    let predicates: Vec<&str> = plan.predicates().iter().map(|p| p.name()).collect();
    for name in ["MatchInterPodAffinity", "PodToleratesNodeTaints", "Region"] {
        assert_eq!(
            predicates.iter().filter(|n| **n == name).count(),
            1,
            "{name} in {predicates:?}"
        );
    }
    let least = plan
        .priorities()
        .iter()
        .filter(|p| p.name == "LeastRequestedPriority")
        .map(|p| p.weight)
        .collect::<Vec<_>>();
    assert_eq!(least, [3], "the last weight wins");
    let zones = plan
        .priorities()
        .iter()
        .filter(|p| matches!(&p.argument, PriorityArgs::ServiceAntiAffinity { label } if label == "zone"))
        .count();
    assert_eq!(
        zones, 2,
        "a repeated serviceAntiAffinity entry counts again"
    );
    policy.compile().unwrap();
}

#[test]
fn five_mistakes_are_reported_together_in_document_order() {
    let err = Policy::from_slice(&read("five-mistakes.json")).unwrap_err();
    let problems = err.problems();
    let paths: Vec<String> = problems.iter().map(PolicyError::path).collect();
    assert_eq!(
        paths,
        [
            "predicates[1]",
            "predicates[3].argument.labelsPresence.labels",
            "priorities[0]",
            "priorities[2].weight",
            "alwaysCheckAllPredicate",
        ]
    );
    assert!(matches!(problems[0], PolicyError::UnknownPredicate { .. }));
    assert!(matches!(problems[1], PolicyError::InvalidArgument { .. }));
    assert!(matches!(problems[2], PolicyError::NonPositiveWeight { .. }));
    assert!(matches!(problems[3], PolicyError::InvalidValue { .. }));
    assert!(matches!(
        problems[4],
        PolicyError::UnknownField {
            suggestion: Some("alwaysCheckAllPredicates"),
            ..
        }
    ));
    let text = err.to_string();
    assert!(
        text.starts_with("5 problems in the policy:\n  - "),
        "{text}"
    );
    assert_eq!(text.lines().count(), 6, "{text}");
    assert!(
        text.contains("did you mean `alwaysCheckAllPredicates`?"),
        "{text}"
    );
}

#[test]
fn a_kube_scheduler_configuration_is_named() {
    let err = Policy::from_slice(&read("kube-scheduler-config.json")).unwrap_err();
    assert!(matches!(err, PolicyError::NotAPolicy { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.starts_with("this is a KubeSchedulerConfiguration (kind \"KubeSchedulerConfiguration\", apiVersion \"kubescheduler.config.k8s.io/v1beta1\")"),
        "{text}"
    );
}

#[test]
fn byte_order_mark_and_encodings() {
    let bytes = read("bom.json");
    assert_eq!(&bytes[..3], b"\xEF\xBB\xBF");
    let policy = Policy::from_slice(&bytes).unwrap();
    assert_eq!(policy.predicates.as_ref().map(Vec::len), Some(2));
    let text = String::from_utf8(bytes.clone()).unwrap();
    assert_eq!(Policy::from_json(&text).unwrap(), policy);
    let utf16: Vec<u8> = "\u{feff}{}"
        .encode_utf16()
        .flat_map(|u| u.to_be_bytes())
        .collect();
    assert_eq!(
        Policy::from_slice(&utf16).unwrap_err(),
        PolicyError::Utf16 { big_endian: true }
    );
    let mut bad = b"{\n  \"kind\": \"Pol".to_vec();
    bad.push(0xFF);
    bad.extend(b"icy\"}");
    assert_eq!(
        Policy::from_slice(&bad).unwrap_err(),
        PolicyError::InvalidUtf8 {
            offset: 16,
            line: 2
        }
    );
}

#[test]
fn a_huge_name_is_cut_short() {
    let name = "N".repeat(100_000);
    let err =
        Policy::from_json(&format!(r#"{{"predicates": [{{"name": "{name}"}}]}}"#)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, PolicyError::UnknownPredicate { .. }));
    assert!(text.len() < 2_000, "{} bytes", text.len());
    assert!(text.contains("(100000 bytes)"), "{text}");
}
