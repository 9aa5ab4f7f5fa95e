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
//!
//! Also ported: `TestNodeAffinity`'s PreFilter outcomes (`wantPreFilterResult`,
//! `wantPreFilterStatus`) for the `matchFields` cases, the skips and a case without
//! `matchFields`: the node names a pod is narrowed to ([`Prepared::RunOn`]) and the
//! conflicting-terms rejection, which a v1.20 profile never gives.

use std::collections::BTreeSet;

use super::testutil::*;
use super::{MatchNodeSelector, NodeAffinityPriority};
use crate::framework::{CycleContext, KubeVersion, Predicate, Prepared, Reason};
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

/// kube's PreFilter outcome of NodeAffinity for a pod.
#[derive(Debug, PartialEq)]
enum PreFilter {
    Skip,
    /// No `PreFilterResult`: every node is filtered.
    AllNodes,
    /// `PreFilterResult{NodeNames: ...}`.
    Nodes(Vec<String>),
    /// UnschedulableAndUnresolvable with this message.
    Rejected(String),
}

fn nodes(names: &[&str]) -> PreFilter {
    PreFilter::Nodes(names.iter().map(|n| n.to_string()).collect())
}

fn pre_filter(pod: &Pod, version: KubeVersion) -> PreFilter {
    let snap = snapshot(vec![labeled("node1", &[("foo", "bar")])], vec![]);
    let cx = CycleContext::for_version(pod, &snap, version);
    match MatchNodeSelector::new().prepare(&cx).unwrap() {
        Prepared::Skip => PreFilter::Skip,
        Prepared::Run(_) | Prepared::Pass => PreFilter::AllNodes,
        Prepared::RunOn(_, names) => PreFilter::Nodes(names.into_iter().collect()),
        Prepared::Reject(r) => {
            assert_eq!(r.reason(), Reason::NodeSelectorMismatch);
            PreFilter::Rejected(r.message().to_string())
        }
    }
}

/// Kind 3, NodeAffinity's PreFilterResult: `TestNodeAffinity`'s `wantPreFilterResult` and
/// `wantPreFilterStatus`.
#[test]
fn node_affinity_pre_filter_result() {
    use NodeSelectorOperator::In;
    let two = |a: NodeSelectorTerm, b: NodeSelectorTerm| {
        let mut p = with_required(a);
        if let Some(na) = p
            .spec
            .affinity
            .as_mut()
            .and_then(|a| a.node_affinity.as_mut())
            && let Some(r) = na.required.as_mut()
        {
            r.node_selector_terms.push(b);
        }
        p
    };
    let both = || NodeSelectorTerm {
        match_expressions: vec![req("foo", In, &["bar"])],
        match_fields: vec![req("metadata.name", In, &["node1"])],
    };
    let conflicting = NodeSelectorTerm {
        match_fields: vec![
            req("metadata.name", In, &["node1"]),
            req("metadata.name", In, &["node2"]),
        ],
        ..NodeSelectorTerm::default()
    };
    let mut nil_selector = pod();
    nil_selector.spec.affinity = Some(Affinity {
        node_affinity: Some(NodeAffinity::default()),
        ..Affinity::default()
    });
    let cases: Vec<(&str, Pod, PreFilter)> = vec![
        (
            "Pod with matchExpressions using In operator that matches the existing node",
            with_required(exprs(req("foo", In, &["bar", "value2"]))),
            PreFilter::AllNodes,
        ),
        (
            "Pod with no Affinity will schedule onto a node",
            pod(),
            PreFilter::Skip,
        ),
        (
            "Pod with Affinity but nil NodeSelector will schedule onto a node",
            nil_selector,
            PreFilter::Skip,
        ),
        (
            "Pod with matchFields using In operator that matches the existing node",
            with_required(name_in("node1")),
            nodes(&["node1"]),
        ),
        (
            "Pod with matchFields using In operator that does not match the existing node",
            with_required(name_in("node1")),
            nodes(&["node1"]),
        ),
        (
            "Pod with two terms: matchFields does not match, but matchExpressions matches",
            two(name_in("node1"), exprs(req("foo", In, &["bar"]))),
            PreFilter::AllNodes,
        ),
        (
            "Pod with one term: matchFields does not match, but matchExpressions matches",
            with_required(both()),
            nodes(&["node1"]),
        ),
        (
            "Pod with one term: both matchFields and matchExpressions match",
            with_required(both()),
            nodes(&["node1"]),
        ),
        (
            "Pod with two terms: both matchFields and matchExpressions do not match",
            two(
                name_in("node1"),
                exprs(req("foo", In, &["not-match-to-bar"])),
            ),
            PreFilter::AllNodes,
        ),
        (
            "Pod with two terms of node.Name affinity",
            two(name_in("node1"), name_in("node2")),
            nodes(&["node1", "node2"]),
        ),
        (
            "Pod with two conflicting mach field requirements",
            with_required(conflicting),
            PreFilter::Rejected("pod affinity terms conflict".into()),
        ),
    ];
    let mut ran = 0;
    for (name, pod, want) in cases {
        assert_eq!(pre_filter(&pod, KubeVersion::V1_34), want, "{name}");
        // kube v1.20 had no PreFilterResult: every node is filtered.
        let legacy = pre_filter(&pod, KubeVersion::V1_20);
        if want != PreFilter::Skip {
            assert_eq!(legacy, PreFilter::AllNodes, "v1.20: {name}");
        }
        ran += 1;
    }
    assert_eq!(ran, 11, "cases run");
    // The filter itself still answers for any node it is asked about (kube's Filter).
    let snap = snapshot(vec![labeled("node2", &[])], vec![]);
    let p = with_required(name_in("node1"));
    let cx = CycleContext::new(&p, &snap);
    let Prepared::RunOn(state, names) = MatchNodeSelector::new().prepare(&cx).unwrap() else {
        panic!("narrowed");
    };
    assert_eq!(names, BTreeSet::from(["node1".to_string()]));
    assert_eq!(
        MatchNodeSelector::new().filter(&cx, &state, snap.node(0)),
        Err(Reason::NodeSelectorMismatch)
    );
}
