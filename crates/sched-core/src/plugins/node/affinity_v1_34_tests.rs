//! kube v1.34's `node_affinity_test.go` (`pkg/scheduler/framework/plugins/nodeaffinity/`):
//! the cases with `addedAffinity` (NodeAffinityArgs), with their exact statuses and scores
//! and v1.34's reason texts ("node(s) didn't match Pod's node affinity/selector",
//! "node(s) didn't match scheduler-enforced node affinity"), against
//! [`MatchNodeSelector::with_added_affinity`] and [`NodeAffinityPriority::with_added_preferred`].
//!
//! Ported: `TestNodeAffinity` "Matches added affinity and Pod's node affinity", "Matches added
//! affinity but not Pod's node affinity", "Doesn't match added affinity";
//! `TestNodeAffinityPriority` "added affinity", "added affinity and pod has default affinity".
//! Nothing with `addedAffinity` is skipped (`Test_isSchedulableAfterNodeChange`'s
//! scheduler-enforced cases are queueing hints, which we do not have).

use super::testutil::*;
use super::{MatchNodeSelector, NodeAffinityPriority};
use crate::model::{
    Affinity, NodeAffinity, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement,
    NodeSelectorTerm, Pod, PreferredSchedulingTerm,
};

fn req(key: &str, op: NodeSelectorOperator, values: &[&str]) -> NodeSelectorRequirement {
    NodeSelectorRequirement {
        key: key.into(),
        operator: op,
        values: values.iter().map(|s| s.to_string()).collect(),
    }
}

fn exprs(r: NodeSelectorRequirement) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_expressions: vec![r],
        ..NodeSelectorTerm::default()
    }
}

fn name_in(name: &str) -> NodeSelectorTerm {
    NodeSelectorTerm {
        match_fields: vec![req("metadata.name", NodeSelectorOperator::In, &[name])],
        ..NodeSelectorTerm::default()
    }
}

fn selector(term: NodeSelectorTerm) -> NodeSelector {
    NodeSelector {
        node_selector_terms: vec![term],
    }
}

fn with_required(term: NodeSelectorTerm) -> Pod {
    let mut p = pod();
    p.spec.affinity = Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required: Some(selector(term)),
            ..NodeAffinity::default()
        }),
        ..Affinity::default()
    });
    p
}

fn with_preferred(terms: Vec<PreferredSchedulingTerm>) -> Pod {
    let mut p = pod();
    p.spec.affinity = Some(Affinity {
        node_affinity: Some(NodeAffinity {
            preferred: terms,
            ..NodeAffinity::default()
        }),
        ..Affinity::default()
    });
    p
}

fn pref(weight: i32, key: &str, value: &str) -> PreferredSchedulingTerm {
    PreferredSchedulingTerm {
        weight,
        preference: exprs(req(key, NodeSelectorOperator::In, &[value])),
    }
}

#[test]
fn node_affinity_added_affinity_filter() {
    use NodeSelectorOperator::In;
    let cases: Vec<(&str, Pod, NodeSelector, Vec<&str>)> = vec![
        (
            "Matches added affinity and Pod's node affinity",
            with_required(exprs(req("zone", In, &["foo"]))),
            selector(name_in("node2")),
            vec![],
        ),
        (
            "Matches added affinity but not Pod's node affinity",
            with_required(exprs(req("zone", In, &["bar"]))),
            selector(name_in("node2")),
            vec!["node(s) didn't match Pod's node affinity/selector"],
        ),
        (
            "Doesn't match added affinity",
            pod(),
            selector(exprs(req("zone", In, &["bar"]))),
            vec!["node(s) didn't match scheduler-enforced node affinity"],
        ),
    ];
    let mut ran = 0;
    for (name, pod, added, want) in cases {
        let p = MatchNodeSelector::new().with_added_affinity(Some(added));
        let snap = snapshot(vec![labeled("node2", &[("zone", "foo")])], vec![]);
        let got = match filter(&p, &pod, &snap, 0) {
            Ok(()) => vec![],
            Err(r) => messages(r, &pod, &snap, 0),
        };
        assert_eq!(got, want, "{name}");
        ran += 1;
    }
    assert_eq!(ran, 3, "cases run");
}

#[test]
fn node_affinity_priority_added_affinity() {
    let label1 = [("foo", "bar")];
    let label2 = [("key", "value")];
    let label5 = [("foo", "bar"), ("key", "value"), ("az", "az1")];
    let affinity1 = || vec![pref(2, "foo", "bar")];
    let mut ran = 0;

    // "added affinity": the pod has no affinity; added = affinity1.
    let p = NodeAffinityPriority::new().with_added_preferred(affinity1());
    let snap = snapshot(
        vec![labeled("node1", &label1), labeled("node2", &label2)],
        vec![],
    );
    assert_eq!(scores(&p, &pod(), &snap), vec![100, 0], "added affinity");
    ran += 1;

    // "added affinity and pod has default affinity"
    let p = NodeAffinityPriority::new().with_added_preferred(vec![pref(3, "key", "value")]);
    let snap = snapshot(
        vec![
            labeled("node1", &label1),
            labeled("node2", &label2),
            labeled("node3", &label5),
        ],
        vec![],
    );
    assert_eq!(
        scores(&p, &with_preferred(affinity1()), &snap),
        vec![40, 60, 100],
        "added affinity and pod has default affinity"
    );
    ran += 1;

    assert_eq!(ran, 2, "cases run");
}
