//! A node with more taints than a 16-bit index counts (70,000): the FitError names the taint
//! kube v1.20.2 names, the first NoSchedule or NoExecute taint in the node's order that the
//! pod does not tolerate (`v1helper.FindMatchingUntoleratedTaint` in the TaintToleration
//! filter), on the fast path and on the plugins' own `filter` alike.

use sched_core::model::{
    Node, NodeCondition, Pod, Quantity, Taint, TaintEffect, Toleration, TolerationOperator,
};
use sched_core::policy::Policy;
use sched_core::profile::ScheduleError;
use sched_core::snapshot::Snapshot;

const TAINTS: usize = 70_000;
/// Where the untolerated taint is: past 65,535, the last index a `u16` holds.
const LATE: usize = 66_000;

fn q(s: &str) -> Quantity {
    s.parse().unwrap()
}

fn taint(key: String, value: String, effect: TaintEffect) -> Taint {
    Taint { key, value, effect }
}

/// A ready node with room for the pod and these taints.
fn node(taints: Vec<Taint>) -> Node {
    let mut n = Node::default();
    n.metadata.name = "crowded".into();
    for (k, v) in [("cpu", "4"), ("memory", "8Gi"), ("pods", "110")] {
        n.status.allocatable.insert(k.into(), q(v));
    }
    n.status.conditions.push(NodeCondition {
        type_: "Ready".into(),
        status: "True".into(),
    });
    n.spec.taints = taints;
    n
}

fn pod(tolerations: Vec<Toleration>) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = "p".into();
    p.metadata.namespace = "default".into();
    p.spec.containers.push(Default::default());
    p.spec.tolerations = tolerations;
    p
}

/// The FitError text of scheduling `pod` on `node` with kube's default Policy (v1.20.2), on
/// the fast path or through every plugin's `filter`.
fn fit_error(node: &Node, pod: &Pod, fast_path: bool) -> String {
    let snapshot = Snapshot::from_objects(vec![node.clone()], vec![]).unwrap();
    let profile = Policy::kube_default()
        .builder()
        .unwrap()
        .fast_path(fast_path)
        .threads(1)
        .seed(1)
        .build()
        .unwrap();
    let mut cache = profile.create_cache();
    match profile.schedule(&mut cache, pod, &snapshot) {
        Err(ScheduleError::Unschedulable(fit)) => fit.to_string(),
        other => panic!("expected a FitError, got {other:?}"),
    }
}

#[test]
fn a_pod_without_tolerations_is_told_the_first_hard_taint_past_index_65535() {
    // PreferNoSchedule taints everywhere (the filter ignores them), a NoSchedule taint at
    // LATE and a NoExecute one after it: kube names the NoSchedule one.
    let mut taints: Vec<Taint> = (0..TAINTS)
        .map(|i| {
            taint(
                format!("soft-{i}"),
                format!("v{i}"),
                TaintEffect::PreferNoSchedule,
            )
        })
        .collect();
    taints[LATE] = taint("gpu".into(), "a100".into(), TaintEffect::NoSchedule);
    taints[LATE + 2_000] = taint("maintenance".into(), "true".into(), TaintEffect::NoExecute);
    let node = node(taints);
    let pod = pod(Vec::new());
    for fast_path in [true, false] {
        assert_eq!(
            fit_error(&node, &pod, fast_path),
            "0/1 nodes are available: 1 node(s) had taint {gpu: a100}, that the pod didn't tolerate.",
            "fast path {fast_path}"
        );
    }
}

#[test]
fn a_pod_tolerating_all_but_one_taint_is_told_that_one() {
    // 70,000 NoSchedule taints the pod tolerates, but for a NoExecute one at LATE.
    let mut taints: Vec<Taint> = (0..TAINTS)
        .map(|i| {
            taint(
                format!("team-{i}"),
                format!("t{i}"),
                TaintEffect::NoSchedule,
            )
        })
        .collect();
    taints[LATE] = taint("gpu".into(), "a100".into(), TaintEffect::NoExecute);
    let node = node(taints);
    let pod = pod(vec![Toleration {
        operator: TolerationOperator::Exists,
        effect: Some(TaintEffect::NoSchedule),
        ..Default::default()
    }]);
    for fast_path in [true, false] {
        assert_eq!(
            fit_error(&node, &pod, fast_path),
            "0/1 nodes are available: 1 node(s) had taint {gpu: a100}, that the pod didn't tolerate.",
            "fast path {fast_path}"
        );
    }
}
