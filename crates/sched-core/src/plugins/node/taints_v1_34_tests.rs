//! kube's `TestTaintTolerationScore`
//! (`pkg/scheduler/framework/plugins/tainttoleration/taint_toleration_test.go`) against
//! [`TaintTolerationPriority`] in a v1.34 cycle, with its exact expected scores.
//!
//! Ported: the five cases without toleration comparison operators.
//!
//! Skipped (not in v1.34, and not expressible: our tolerations have only `Equal` and
//! `Exists`): "Numeric Gt operator: pod with Gt toleration prefers nodes with matching SLA
//! taint", "Numeric Lt operator: pod with Lt toleration prefers nodes with matching SLA taint",
//! "Score ignores parse errors from numeric PreferNoSchedule taint value" — all three need the
//! `Gt`/`Lt` toleration operators of the TaintTolerationComparisonOperators feature, which the
//! newest stored test enables and v1.34 does not have.

use super::TaintTolerationPriority;
use super::testutil::*;
use crate::model::{Node, Pod, TaintEffect, Toleration, TolerationOperator};

fn tol(key: &str, value: &str, effect: TaintEffect) -> Toleration {
    Toleration {
        key: key.into(),
        operator: TolerationOperator::Equal,
        value: value.into(),
        effect: Some(effect),
        toleration_seconds: None,
    }
}

#[test]
fn taint_toleration_score() {
    use TaintEffect::{NoSchedule, PreferNoSchedule};
    let cases: Vec<(&str, Pod, Vec<Node>, Vec<i64>)> = vec![
        (
            "node with taints tolerated by the pod, gets a higher score than those node with \
             intolerable taints",
            with_tolerations(vec![tol("foo", "bar", PreferNoSchedule)]),
            vec![
                tainted("nodeA", &[("foo", "bar", PreferNoSchedule)]),
                tainted("nodeB", &[("foo", "blah", PreferNoSchedule)]),
            ],
            vec![100, 0],
        ),
        (
            "the nodes that all of their taints are tolerated by the pod, get the same score, no \
             matter how many tolerable taints a node has",
            with_tolerations(vec![
                tol("cpu-type", "arm64", PreferNoSchedule),
                tol("disk-type", "ssd", PreferNoSchedule),
            ]),
            vec![
                tainted("nodeA", &[]),
                tainted("nodeB", &[("cpu-type", "arm64", PreferNoSchedule)]),
                tainted(
                    "nodeC",
                    &[
                        ("cpu-type", "arm64", PreferNoSchedule),
                        ("disk-type", "ssd", PreferNoSchedule),
                    ],
                ),
            ],
            vec![100, 100, 100],
        ),
        (
            "the more intolerable taints a node has, the lower score it gets.",
            with_tolerations(vec![tol("foo", "bar", PreferNoSchedule)]),
            vec![
                tainted("nodeA", &[]),
                tainted("nodeB", &[("cpu-type", "arm64", PreferNoSchedule)]),
                tainted(
                    "nodeC",
                    &[
                        ("cpu-type", "arm64", PreferNoSchedule),
                        ("disk-type", "ssd", PreferNoSchedule),
                    ],
                ),
            ],
            vec![100, 50, 0],
        ),
        (
            "only taints and tolerations that have effect PreferNoSchedule are checked by \
             taints-tolerations priority function",
            with_tolerations(vec![
                tol("cpu-type", "arm64", NoSchedule),
                tol("disk-type", "ssd", NoSchedule),
            ]),
            vec![
                tainted("nodeA", &[]),
                tainted("nodeB", &[("cpu-type", "arm64", NoSchedule)]),
                tainted(
                    "nodeC",
                    &[
                        ("cpu-type", "arm64", PreferNoSchedule),
                        ("disk-type", "ssd", PreferNoSchedule),
                    ],
                ),
            ],
            vec![100, 100, 0],
        ),
        (
            "Default behaviour No taints and tolerations, lands on node with no taints",
            with_tolerations(vec![]),
            vec![
                tainted("nodeA", &[]),
                tainted("nodeB", &[("cpu-type", "arm64", PreferNoSchedule)]),
            ],
            vec![100, 0],
        ),
    ];
    let p = TaintTolerationPriority::new();
    let mut ran = 0;
    for (name, pod, nodes, want) in cases {
        let snap = snapshot(nodes, vec![]);
        assert_eq!(scores(&p, &pod, &snap), want, "{name}");
        ran += 1;
    }
    assert_eq!(ran, 5, "cases run");
}
