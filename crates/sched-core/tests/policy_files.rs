//! Policy files as real clusters wrote them: repeated entries, many mistakes at once, a
//! KubeSchedulerConfiguration in the wrong place, a byte order mark.

use std::path::PathBuf;

use sched_core::policy::{
    KNOWN_PREDICATES, KNOWN_PRIORITIES, MAX_LISTED_PROBLEMS, Policy, PolicyError, PriorityArgs,
};

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
    // A line per problem, then the known predicates once.
    assert_eq!(text.lines().count(), 7, "{text}");
    assert_eq!(
        text.lines().nth(1),
        Some(
            "  - `predicates[1].name`: unknown predicate \"PodFitsResource\" (did you mean \"PodFitsResources\"?)"
        )
    );
    assert_eq!(
        text.lines().last(),
        Some(known_predicates_line().as_str()),
        "{text}"
    );
    assert!(
        text.contains("did you mean `alwaysCheckAllPredicates`?"),
        "{text}"
    );
}

fn known_predicates_line() -> String {
    format!(
        "known predicates: {}; a custom predicate needs an `argument` (labelsPresence or serviceAffinity)",
        KNOWN_PREDICATES.join(", ")
    )
}

fn known_priorities_line() -> String {
    format!(
        "known priorities: {}; a custom priority needs an `argument` (labelPreference, serviceAntiAffinity or requestedToCapacityRatioArguments)",
        KNOWN_PRIORITIES.join(", ")
    )
}

/// A Policy of `n` unknown predicates and `n` unknown priorities, after a misspelt one of each.
fn many_unknown_names(n: usize) -> String {
    let mut predicates = vec![r#"{"name": "PodFitsResource"}"#.to_string()];
    predicates.extend((0..n).map(|i| format!(r#"{{"name": "UnknownPredicate{i}"}}"#)));
    let mut priorities = vec![r#"{"name": "LeastRequestedPriorty", "weight": 1}"#.to_string()];
    priorities.extend((0..n).map(|i| format!(r#"{{"name": "UnknownPriority{i}", "weight": 1}}"#)));
    format!(
        r#"{{"kind": "Policy", "apiVersion": "v1", "predicates": [{}], "priorities": [{}]}}"#,
        predicates.join(", "),
        priorities.join(", ")
    )
}

#[test]
fn many_unknown_names_list_the_known_ones_once_and_the_problems_up_to_a_cap() {
    let n = 3_000;
    let err = Policy::from_json(&many_unknown_names(n)).unwrap_err();
    // Every problem is kept, with its path, in document order.
    let problems = err.problems();
    assert_eq!(problems.len(), 2 * (n + 1));
    assert!(matches!(
        &problems[0],
        PolicyError::UnknownPredicate { path, name, .. } if path == "predicates[0]" && name == "PodFitsResource"
    ));
    assert!(matches!(
        &problems[n],
        PolicyError::UnknownPredicate { path, name, .. } if *path == format!("predicates[{n}]") && *name == format!("UnknownPredicate{}", n - 1)
    ));
    assert!(matches!(
        &problems[2 * n + 1],
        PolicyError::UnknownPriority { path, name, .. } if *path == format!("priorities[{n}]") && *name == format!("UnknownPriority{}", n - 1)
    ));

    let text = err.to_string();
    let lines: Vec<&str> = text.lines().collect();
    let rest = problems.len() - MAX_LISTED_PROBLEMS;
    assert_eq!(
        lines[0],
        format!("{} problems in the policy:", problems.len())
    );
    // Suggestions still come with each misspelt name.
    assert_eq!(
        lines[1],
        "  - `predicates[0].name`: unknown predicate \"PodFitsResource\" (did you mean \"PodFitsResources\"?)"
    );
    assert_eq!(
        lines[2],
        "  - `predicates[1].name`: unknown predicate \"UnknownPredicate0\""
    );
    assert_eq!(
        lines[MAX_LISTED_PROBLEMS],
        format!(
            "  - `predicates[{0}].name`: unknown predicate \"UnknownPredicate{1}\"",
            MAX_LISTED_PROBLEMS - 1,
            MAX_LISTED_PROBLEMS - 2
        )
    );
    assert_eq!(
        lines[MAX_LISTED_PROBLEMS + 1],
        format!("  - ... and {rest} more problems")
    );
    // The known names come once per list, last, even for the list whose problems were not
    // listed one by one.
    assert_eq!(lines[MAX_LISTED_PROBLEMS + 2], known_predicates_line());
    assert_eq!(lines[MAX_LISTED_PROBLEMS + 3], known_priorities_line());
    assert_eq!(lines.len(), MAX_LISTED_PROBLEMS + 4);
    for name in KNOWN_PREDICATES.iter().chain(KNOWN_PRIORITIES) {
        let quoted = format!("\"{name}\"");
        let listed =
            text.matches(&format!(" {name},")).count() + text.matches(&format!(" {name};")).count();
        assert_eq!(listed, 1, "{name} listed {listed} times");
        assert!(
            !text.contains(&quoted) || *name == "PodFitsResources",
            "{name} named as a problem"
        );
    }
    // About 60 bytes a problem, plus the two lists of known names.
    assert!(
        text.len() < 100 * MAX_LISTED_PROBLEMS + 2_000,
        "{} bytes",
        text.len()
    );
}

#[test]
fn a_message_grows_with_the_problems_listed_not_with_the_problems() {
    let small = Policy::from_json(&many_unknown_names(2_000))
        .unwrap_err()
        .to_string();
    let large = Policy::from_json(&many_unknown_names(20_000))
        .unwrap_err()
        .to_string();
    assert!(large.ends_with(&known_priorities_line()), "{large}");
    assert!(
        large.contains("  - ... and 39002 more problems\n"),
        "{large}"
    );
    assert!(
        small.contains("  - ... and 3002 more problems\n"),
        "{small}"
    );
    // Only the counts' digits differ.
    assert!(
        large.len() - small.len() < 10,
        "{} vs {}",
        large.len(),
        small.len()
    );
}

#[test]
fn a_problem_list_under_the_cap_is_listed_whole() {
    let err = Policy::from_json(&many_unknown_names(10)).unwrap_err();
    let text = err.to_string();
    assert_eq!(err.problems().len(), 22);
    assert!(!text.contains("more problem"), "{text}");
    // A line per problem, the header and the two lists of known names.
    assert_eq!(text.lines().count(), 1 + 22 + 2, "{text}");
    assert!(
        text.contains("  - `priorities[0].name`: unknown priority \"LeastRequestedPriorty\" (did you mean \"LeastRequestedPriority\"?)\n"),
        "{text}"
    );
    assert!(
        text.contains("  - `priorities[10].name`: unknown priority \"UnknownPriority9\"\n"),
        "{text}"
    );
}

#[test]
fn a_huge_decoder_message_is_cut_short() {
    let weight = "9".repeat(100_000);
    let err = Policy::from_json(&format!(
        r#"{{"priorities": [{{"name": "LeastRequestedPriority", "weight": "{weight}"}}]}}"#
    ))
    .unwrap_err();
    assert!(
        matches!(&err, PolicyError::InvalidValue { path, .. } if path == "priorities[0].weight"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(text.len() < 1_000, "{} bytes", text.len());
    assert!(text.contains("bytes)"), "{text}");
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

#[test]
fn many_unknown_keys_are_each_reported_once() {
    let n = 20_000;
    let entries: Vec<String> = (0..n)
        .map(|i| format!(r#"{{"name": "HostName", "Argument{i}": {{}}}}"#))
        .collect();
    let err =
        Policy::from_json(&format!(r#"{{"predicates": [{}]}}"#, entries.join(", "))).unwrap_err();
    let problems = err.problems();
    assert_eq!(problems.len(), n);
    for (i, p) in problems.iter().enumerate() {
        assert!(
            matches!(p, PolicyError::UnknownField { path, field, .. } if *path == format!("predicates[{i}]") && *field == format!("Argument{i}")),
            "{p:?}"
        );
    }
    let text = err.to_string();
    assert!(
        text.ends_with(&format!(
            "\n  - ... and {} more problems",
            n - MAX_LISTED_PROBLEMS
        )),
        "{}",
        &text[text.len() - 200..]
    );
}
