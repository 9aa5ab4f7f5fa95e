//! The node plugins inside the scheduler: kube's FitError summary and placement.

use super::testutil::*;
use super::*;
use crate::model::{
    Affinity, Node, NodeAffinity, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm,
    PreferredSchedulingTerm, TaintEffect, Toleration, TolerationOperator,
};
use crate::profile::{Profile, ScheduleError};

fn machine(name: &str, cpu: &str, mem: &str, disk: &str) -> Node {
    let mut n = labeled(name, &[("disk", disk)]);
    n.status.allocatable = list(&[("cpu", cpu), ("memory", mem), ("pods", "10")]);
    n
}

fn scheduler() -> Profile {
    Profile::builder()
        .predicate(CheckNodeUnschedulable::new())
        .predicate(GeneralPredicates::new())
        .predicate(NoDiskConflict::new())
        .predicate(PodToleratesNodeTaints::new())
        .priority(NodeAffinityPriority::new(), 1)
        .priority(TaintTolerationPriority::new(), 1)
        .seed(7)
        .build()
        .unwrap()
}

fn cluster() -> Vec<Node> {
    let mut cordoned = machine("node0", "4", "4Gi", "ssd");
    cordoned.spec.unschedulable = true;
    let mut gpu = machine("node1", "4", "4Gi", "ssd");
    gpu.spec.taints = tainted("x", &[("dedicated", "gpu", TaintEffect::NoSchedule)])
        .spec
        .taints;
    vec![
        cordoned,
        gpu,
        machine("node2", "1", "4Gi", "ssd"),
        machine("node3", "4", "4Gi", "hdd"),
        machine("node4", "1", "512Mi", "ssd"),
    ]
}

fn new_pod() -> crate::model::Pod {
    let mut p = pod();
    p.spec.containers = vec![container(&[("cpu", "2"), ("memory", "1Gi")])];
    p.spec.node_selector = [("disk".to_string(), "ssd".to_string())].into();
    p
}

#[test]
fn fit_error_summary_is_kubes() {
    let snap = snapshot(cluster(), vec![]);
    let err = {
        let s = scheduler();
        s.schedule(&mut s.create_cache(), &new_pod(), &snap)
    }
    .unwrap_err();
    let ScheduleError::Unschedulable(fit) = err else {
        panic!("expected a FitError, got {err:?}");
    };
    assert_eq!(
        fit.to_string(),
        "0/5 nodes are available: 1 Insufficient memory, \
         1 node(s) didn't match Pod's node affinity/selector, \
         1 node(s) had untolerated taint(s), \
         1 node(s) were unschedulable, 2 Insufficient cpu."
    );
}

#[test]
fn tolerations_and_preferences_place_the_pod() {
    let snap = snapshot(cluster(), vec![]);
    let mut p = new_pod();
    p.spec.tolerations = vec![Toleration {
        key: "dedicated".into(),
        operator: TolerationOperator::Equal,
        value: "gpu".into(),
        effect: Some(TaintEffect::NoSchedule),
        toleration_seconds: None,
    }];
    // Only node1 fits now.
    let got = {
        let s = scheduler();
        s.schedule(&mut s.create_cache(), &p, &snap)
    }
    .unwrap();
    assert_eq!((got.node.as_str(), got.feasible_nodes), ("node1", 1));

    // With room on node3 and node5 and a preference for node5's label, node5 wins.
    let mut nodes = cluster();
    nodes[3].metadata.labels.insert("disk".into(), "ssd".into());
    let mut fast = machine("node5", "4", "4Gi", "ssd");
    fast.metadata.labels.insert("speed".into(), "fast".into());
    nodes.push(fast);
    let snap = snapshot(nodes, vec![]);
    p.spec.affinity = Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required: None,
            preferred: vec![PreferredSchedulingTerm {
                weight: 10,
                preference: NodeSelectorTerm {
                    match_expressions: vec![NodeSelectorRequirement {
                        key: "speed".into(),
                        operator: NodeSelectorOperator::In,
                        values: vec!["fast".into()],
                    }],
                    match_fields: vec![],
                },
            }],
        }),
        ..Affinity::default()
    });
    let got = {
        let s = scheduler();
        s.schedule(&mut s.create_cache(), &p, &snap)
    }
    .unwrap();
    assert_eq!((got.node.as_str(), got.feasible_nodes), ("node5", 3));
}
