//! kube v1.34's NodeResourcesFit scoring-strategy tables
//! (`pkg/scheduler/framework/plugins/noderesources/`), with their exact expected scores and
//! resource weights, against our priorities in a v1.34 cycle ([`CycleContext::new`]):
//!
//! - `least_allocated_test.go` `TestLeastAllocatedScoringStrategy` → [`LeastRequestedPriority`]
//! - `most_allocated_test.go` `TestMostAllocatedScoringStrategy` → [`MostRequestedPriority`]
//! - `requested_to_capacity_ratio_test.go` `TestRequestedToCapacityRatioScoringStrategy`,
//!   `TestResourceBinPackingSingleExtended`, `TestResourceBinPackingMultipleExtended` →
//!   [`RequestedToCapacityRatioPriority`]
//! - `fit_test.go` `TestFitScore` (sidecar cases included) → all three; its two DRA cases
//!   are skipped (see [`fit_score`]).
//!
//! kube has no table for pods with pod-level resources; [`pod_level_resources_stay_out_of_the_fit_score`]
//! takes its expected scores from kube-scheduler v1.34.1's recorded answers (the
//! `kube-reference` crate's `repro-scores-podlevel-fit` and `repro-tie-set-podlevel-fit`).
//!
//! Every other case is ported. How the cases that are not plain scores map onto our model:
//! - "Resources not set, pods scheduled with error" (least, most): kube builds the plugin with
//!   no resources (unreachable from a configuration file, which defaults them) and each Score
//!   returns an Error status with MinNodeScore. We have no per-node error; the port asserts
//!   the scores (MinNodeScore, 0) only.
//! - "resource with negative/zero weight", "resource weight larger than MaxNodeScore" (least,
//!   most): kube's `NewFit` rejects the args with an Invalid error at
//!   `scoringStrategy.resources[i].weight`. The port asserts both that `with_resources`
//!   refuses the weights and (for -1 and 101) that a `KubeSchedulerConfiguration` with them
//!   is rejected at that path; a weight of 0 in a file is defaulted to 1 by kube's v1
//!   defaulting before validation, so the zero-weight case checks `with_resources` only.
//!
//! [`CycleContext::new`]: crate::framework::CycleContext::new

use super::testutil::*;
use super::{
    LeastRequestedPriority, MostRequestedPriority, RequestedToCapacityRatioPriority, ResourceSpec,
    UtilizationShapePoint,
};
use crate::config::SchedulerConfiguration;
use crate::model::{Node, Pod};

/// kube's `extendedRes`.
const EXT: &str = "abc.com/xyz";

/// `st.MakeNode().Name(name).Capacity(list)`: capacity = allocatable.
fn n(name: &str, alloc: &[(&str, &str)]) -> Node {
    node_with(name, alloc)
}

/// `st.MakePod().Node(node).Req(c1).Req(c2)...`: one container per request list.
fn p(node: &str, containers: &[&[(&str, &str)]]) -> Pod {
    pod_on(node, containers.iter().map(|c| container(c)).collect())
}

fn res(specs: &[(&str, i64)]) -> Vec<ResourceSpec> {
    specs
        .iter()
        .map(|(name, w)| ResourceSpec::new(*name, *w))
        .collect()
}

fn default_resources() -> Vec<ResourceSpec> {
    res(&[("cpu", 1), ("memory", 1)])
}

fn extended_resource_set() -> Vec<ResourceSpec> {
    res(&[("cpu", 1), ("memory", 1), (EXT, 1)])
}

const TWO: &[&[(&str, &str)]] = &[
    &[("cpu", "1000"), ("memory", "2000")],
    &[("cpu", "2000"), ("memory", "3000")],
];

/// A table row: name, resources, pod, nodes, existing pods, expected scores.
type Row = (
    &'static str,
    Vec<ResourceSpec>,
    Pod,
    Vec<Node>,
    Vec<Pod>,
    Vec<i64>,
);

/// kube's weight validation: `NewFit` fails with Invalid at `scoringStrategy.resources[i]
/// .weight`; through a configuration file the path is prefixed by the plugin's args.
fn assert_weight_rejected(kind: &str, resources: &[(&str, i64)], index: usize) {
    let specs = res(resources);
    let err = match kind {
        "LeastAllocated" => LeastRequestedPriority::with_resources(&specs).err(),
        _ => MostRequestedPriority::with_resources(&specs).err(),
    };
    assert!(err.is_some(), "{kind} {resources:?}: accepted");
    if resources.iter().any(|&(_, w)| w == 0) {
        // v1 defaulting turns a weight of 0 into 1 before validation.
        return;
    }
    let list: Vec<String> = resources
        .iter()
        .map(|(name, w)| format!("{{name: {name}, weight: {w}}}"))
        .collect();
    let text = format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      \
         scoringStrategy:\n        type: {kind}\n        resources: [{}]\n",
        list.join(", ")
    );
    let e = SchedulerConfiguration::from_text(&text).expect_err("configuration accepted");
    let want = format!("args.scoringStrategy.resources[{index}].weight");
    assert!(
        e.problems().iter().any(|p| p.path().ends_with(&want)),
        "{kind} {resources:?}: no problem at {want}: {e}"
    );
}

#[test]
fn least_allocated_scoring_strategy() {
    let mut ran = 0;
    let rows: Vec<Row> = vec![
        (
            "nothing scheduled, nothing requested",
            default_resources(),
            p("", &[]),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "4000"), ("memory", "10000")]),
            ],
            vec![],
            vec![100, 100],
        ),
        (
            "nothing scheduled, resources requested, differently sized nodes",
            default_resources(),
            p("", TWO),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "6000"), ("memory", "10000")]),
            ],
            vec![],
            vec![37, 50],
        ),
        (
            "Resources not set, pods scheduled with error",
            vec![],
            p("", TWO),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "6000"), ("memory", "10000")]),
            ],
            vec![],
            vec![0, 0],
        ),
        (
            "no resources requested, pods scheduled",
            default_resources(),
            p("", &[]),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "4000"), ("memory", "10000")]),
            ],
            vec![
                p("node1", &[]),
                p("node1", &[]),
                p("node2", &[]),
                p("node2", &[]),
            ],
            vec![100, 100],
        ),
        (
            "no resources requested, pods scheduled with resources",
            default_resources(),
            p("", &[]),
            vec![
                n("node1", &[("cpu", "10000"), ("memory", "20000")]),
                n("node2", &[("cpu", "10000"), ("memory", "20000")]),
            ],
            vec![
                p("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                p("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                p("node2", &[&[("cpu", "3000"), ("memory", "0")]]),
                p("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            vec![70, 57],
        ),
        (
            "resources requested, pods scheduled with resources",
            default_resources(),
            p("", TWO),
            vec![
                n("node1", &[("cpu", "10000"), ("memory", "20000")]),
                n("node2", &[("cpu", "10000"), ("memory", "20000")]),
            ],
            vec![
                p("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                p("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            vec![57, 45],
        ),
        (
            "resources requested, pods scheduled with resources, differently sized nodes",
            default_resources(),
            p("", TWO),
            vec![
                n("node1", &[("cpu", "10000"), ("memory", "20000")]),
                n("node2", &[("cpu", "10000"), ("memory", "50000")]),
            ],
            vec![
                p("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                p("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            vec![57, 60],
        ),
        (
            "requested resources exceed node capacity",
            default_resources(),
            p("", &[&[("cpu", "3000"), ("memory", "0")]]),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "4000"), ("memory", "10000")]),
            ],
            vec![
                p("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                p("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            vec![50, 25],
        ),
        (
            "zero node resources, pods scheduled with resources",
            default_resources(),
            p("", &[]),
            vec![n("node1", &[]), n("node2", &[])],
            vec![
                p("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                p("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            vec![0, 0],
        ),
        (
            "nothing scheduled, resources requested with different weight on CPU and memory, \
             differently sized nodes",
            res(&[("memory", 2), ("cpu", 1)]),
            p("node1", TWO),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "6000"), ("memory", "10000")]),
            ],
            vec![],
            vec![41, 50],
        ),
        (
            "bypass extended resource if the pod does not request",
            extended_resource_set(),
            p("node1", TWO),
            vec![
                n("node1", &[("cpu", "6000"), ("memory", "10000")]),
                n("node2", &[("cpu", "6000"), ("memory", "10000"), (EXT, "4")]),
            ],
            vec![],
            vec![50, 50],
        ),
        (
            "honor extended resource if the pod requests",
            extended_resource_set(),
            p(
                "node1",
                &[&[("cpu", "3000"), ("memory", "5000"), (EXT, "2")]],
            ),
            vec![
                n("node1", &[("cpu", "6000"), ("memory", "10000"), (EXT, "4")]),
                n(
                    "node2",
                    &[("cpu", "6000"), ("memory", "10000"), (EXT, "10")],
                ),
            ],
            vec![],
            vec![50, 60],
        ),
        (
            "if the node doesn't have a resource",
            res(&[(EXT, 2), ("cpu", 1), ("memory", 1)]),
            p("node1", &[&[("cpu", "3000"), ("memory", "4000")]]),
            vec![
                n("node1", &[("cpu", "6000"), ("memory", "10000")]),
                n("node2", &[("cpu", "6000"), ("memory", "10000"), (EXT, "4")]),
            ],
            vec![],
            vec![55, 55],
        ),
    ];
    for (name, resources, mut pod, nodes, pods, want) in rows {
        // The pod being scheduled is not bound (kube scores it as given; `Node` only names it).
        pod.spec.node_name.clear();
        let prio = LeastRequestedPriority::with_resources(&resources).unwrap();
        assert_eq!(run(&prio, &pod, nodes, pods), want, "{name}");
        ran += 1;
    }
    assert_weight_rejected("LeastAllocated", &[("memory", -1), ("cpu", 1)], 0);
    ran += 1;
    assert_weight_rejected("LeastAllocated", &[("memory", 1), ("cpu", 0)], 1);
    ran += 1;
    assert_weight_rejected("LeastAllocated", &[("memory", 1), ("cpu", 101)], 1);
    ran += 1;
    assert_eq!(ran, 16, "cases run");
}

#[test]
fn most_allocated_scoring_strategy() {
    let mut ran = 0;
    let rows: Vec<Row> = vec![
        (
            "nothing scheduled, nothing requested",
            default_resources(),
            p("", &[]),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "4000"), ("memory", "10000")]),
            ],
            vec![],
            vec![0, 0],
        ),
        (
            "nothing scheduled, resources requested, differently sized nodes",
            default_resources(),
            p("", TWO),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "6000"), ("memory", "10000")]),
            ],
            vec![],
            vec![62, 50],
        ),
        (
            "Resources not set, pods scheduled with error",
            vec![],
            p("", TWO),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "6000"), ("memory", "10000")]),
            ],
            vec![],
            vec![0, 0],
        ),
        (
            "no resources requested, pods scheduled with resources",
            default_resources(),
            p("", &[]),
            vec![
                n("node1", &[("cpu", "10000"), ("memory", "20000")]),
                n("node2", &[("cpu", "10000"), ("memory", "20000")]),
            ],
            vec![
                p("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                p("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                p("node2", &[&[("cpu", "3000"), ("memory", "0")]]),
                p("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            vec![30, 42],
        ),
        (
            "resources requested, pods scheduled with resources",
            default_resources(),
            p("", TWO),
            vec![
                n("node1", &[("cpu", "10000"), ("memory", "20000")]),
                n("node2", &[("cpu", "10000"), ("memory", "20000")]),
            ],
            vec![
                p("node1", &[&[("cpu", "3000"), ("memory", "0")]]),
                p("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            vec![42, 55],
        ),
        (
            "resources requested equal node capacity",
            default_resources(),
            p(
                "",
                &[
                    &[("cpu", "2000"), ("memory", "4000")],
                    &[("cpu", "3000"), ("memory", "5000")],
                ],
            ),
            vec![
                n("node1", &[("cpu", "5000"), ("memory", "10000")]),
                n("node2", &[("cpu", "10000"), ("memory", "9000")]),
            ],
            vec![],
            vec![95, 75],
        ),
        (
            "nothing scheduled, resources requested, differently sized nodes (memory weight 2)",
            res(&[("memory", 2), ("cpu", 1)]),
            p("", TWO),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "6000"), ("memory", "10000")]),
            ],
            vec![],
            vec![58, 50],
        ),
        (
            "no resources requested, pods scheduled, nonzero request for resource",
            default_resources(),
            p("", &[&[]]),
            vec![
                n("node1", &[("cpu", "250m"), ("memory", "1000Mi")]),
                n("node2", &[("cpu", "250m"), ("memory", "1000Mi")]),
            ],
            vec![p("node1", &[&[]]), p("node1", &[&[]])],
            vec![80, 30],
        ),
        (
            "bypass extended resource if the pod does not request",
            extended_resource_set(),
            p("", TWO),
            vec![
                n("node1", &[("cpu", "6000"), ("memory", "10000")]),
                n("node2", &[("cpu", "6000"), ("memory", "10000"), (EXT, "4")]),
            ],
            vec![],
            vec![50, 50],
        ),
        (
            "honor extended resource if the pod request",
            extended_resource_set(),
            p("", &[&[("cpu", "3000"), ("memory", "5000"), (EXT, "2")]]),
            vec![
                n("node1", &[("cpu", "6000"), ("memory", "10000"), (EXT, "4")]),
                n(
                    "node2",
                    &[("cpu", "6000"), ("memory", "10000"), (EXT, "10")],
                ),
            ],
            vec![],
            vec![50, 40],
        ),
        (
            "if the node doesn't have a resource",
            res(&[(EXT, 2), ("cpu", 1), ("memory", 1)]),
            p("", &[&[("cpu", "3000"), ("memory", "4000")]]),
            vec![
                n("node1", &[("cpu", "6000"), ("memory", "10000")]),
                n("node2", &[("cpu", "6000"), ("memory", "10000"), (EXT, "4")]),
            ],
            vec![],
            vec![45, 45],
        ),
    ];
    for (name, resources, pod, nodes, pods, want) in rows {
        let prio = MostRequestedPriority::with_resources(&resources).unwrap();
        assert_eq!(run(&prio, &pod, nodes, pods), want, "{name}");
        ran += 1;
    }
    assert_weight_rejected("MostAllocated", &[("memory", -1), ("cpu", 1)], 0);
    ran += 1;
    assert_weight_rejected("MostAllocated", &[("memory", 1), ("cpu", 0)], 1);
    ran += 1;
    assert_weight_rejected("MostAllocated", &[("memory", 101)], 0);
    ran += 1;
    assert_eq!(ran, 14, "cases run");
}

fn shape(points: &[(i32, i32)]) -> Vec<UtilizationShapePoint> {
    points
        .iter()
        .map(|&(u, s)| UtilizationShapePoint::new(i64::from(u), i64::from(s)))
        .collect()
}

#[test]
fn requested_to_capacity_ratio_scoring_strategy() {
    let prio =
        RequestedToCapacityRatioPriority::new(&shape(&[(0, 10), (100, 0)]), &default_resources())
            .unwrap();
    let rows: Vec<Case> = vec![
        (
            "nothing scheduled, nothing requested (default - least requested nodes have priority)",
            p("", &[]),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "4000"), ("memory", "10000")]),
            ],
            vec![p("node1", &[]), p("node1", &[])],
            vec![100, 100],
        ),
        (
            "nothing scheduled, resources requested, differently sized nodes (default - least \
             requested nodes have priority)",
            p("", TWO),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "6000"), ("memory", "10000")]),
            ],
            vec![p("node1", &[]), p("node1", &[])],
            vec![38, 50],
        ),
        (
            "no resources requested, pods scheduled with resources (default - least requested \
             nodes have priority)",
            p("", &[]),
            vec![
                n("node1", &[("cpu", "4000"), ("memory", "10000")]),
                n("node2", &[("cpu", "6000"), ("memory", "10000")]),
            ],
            vec![
                p("node1", &[&[("cpu", "3000"), ("memory", "5000")]]),
                p("node2", &[&[("cpu", "3000"), ("memory", "5000")]]),
            ],
            vec![38, 50],
        ),
    ];
    let mut ran = 0;
    for (name, pod, nodes, pods, want) in rows {
        assert_eq!(run(&prio, &pod, nodes, pods), want, "{name}");
        ran += 1;
    }
    assert_eq!(ran, 3, "cases run");
}

/// kube's test `makeNode(name, milliCPU, memory, extendedResource)` (pods: 100).
fn make_node(name: &str, milli_cpu: i64, memory: i64, ext: &[(&str, &str)]) -> Node {
    let mut node = node(name, milli_cpu, memory);
    let mut extra = list(&[("pods", "100")]);
    extra.extend(list(ext));
    node.status.capacity.extend(extra.clone());
    node.status.allocatable.extend(extra);
    node
}

#[test]
fn resource_bin_packing_single_extended() {
    let prio = RequestedToCapacityRatioPriority::new(
        &shape(&[(0, 0), (100, 1)]),
        &res(&[("intel.com/foo", 1)]),
    )
    .unwrap();
    let nodes = || {
        vec![
            make_node(
                "node1",
                4000,
                10000 * 1024 * 1024,
                &[("intel.com/foo", "8")],
            ),
            make_node(
                "node2",
                4000,
                10000 * 1024 * 1024,
                &[("intel.com/foo", "4")],
            ),
        ]
    };
    let foo2: &[&[(&str, &str)]] = &[&[("intel.com/foo", "2")]];
    let foo4: &[&[(&str, &str)]] = &[&[("intel.com/foo", "4")]];
    let rows: Vec<(&str, Pod, Vec<Pod>, Vec<i64>)> = vec![
        (
            "nothing scheduled, nothing requested",
            p("", &[]),
            vec![],
            vec![0, 0],
        ),
        (
            "resources requested, pods scheduled with less resources",
            p("", foo2),
            vec![p("", &[])],
            vec![2, 5],
        ),
        (
            "resources requested, pods scheduled with resources, on node with existing pod running",
            p("", foo2),
            vec![p("node2", foo2)],
            vec![2, 10],
        ),
        (
            "resources requested, pods scheduled with more resources",
            p("", foo4),
            vec![p("", &[])],
            vec![5, 10],
        ),
    ];
    let mut ran = 0;
    for (name, pod, pods, want) in rows {
        // kube's unbound existing pods are on no node: leave them out of the snapshot.
        let pods = pods
            .into_iter()
            .filter(|p| !p.spec.node_name.is_empty())
            .collect();
        assert_eq!(run(&prio, &pod, nodes(), pods), want, "{name}");
        ran += 1;
    }
    assert_eq!(ran, 4, "cases run");
}

#[test]
fn resource_bin_packing_multiple_extended() {
    let prio = RequestedToCapacityRatioPriority::new(
        &shape(&[(0, 0), (100, 1)]),
        &res(&[("intel.com/foo", 3), ("intel.com/bar", 5)]),
    )
    .unwrap();
    let nodes = || {
        vec![
            make_node(
                "node1",
                4000,
                10000 * 1024 * 1024,
                &[("intel.com/foo", "8"), ("intel.com/bar", "4")],
            ),
            make_node(
                "node2",
                4000,
                10000 * 1024 * 1024,
                &[("intel.com/foo", "4"), ("intel.com/bar", "8")],
            ),
        ]
    };
    let pod1: &[&[(&str, &str)]] = &[&[("intel.com/foo", "2"), ("intel.com/bar", "2")]];
    let pod2: &[&[(&str, &str)]] = &[&[("intel.com/foo", "4"), ("intel.com/bar", "2")]];
    let rows: Vec<(&str, Pod, Vec<Pod>, Vec<i64>)> = vec![
        (
            "nothing scheduled, nothing requested",
            p("", &[]),
            vec![],
            vec![0, 0],
        ),
        (
            "resources requested, pods scheduled with less resources",
            p("", pod1),
            vec![],
            vec![4, 3],
        ),
        (
            "resources requested, pods scheduled with resources, on node with existing pod running",
            p("", pod1),
            vec![p("node2", pod2)],
            vec![4, 7],
        ),
        (
            "resources requested, pods scheduled with more resources",
            p("", pod2),
            vec![],
            vec![5, 5],
        ),
    ];
    let mut ran = 0;
    for (name, pod, pods, want) in rows {
        assert_eq!(run(&prio, &pod, nodes(), pods), want, "{name}");
        ran += 1;
    }
    assert_eq!(ran, 4, "cases run");
}

/// `st.MakePod().Node(node).Req(main).SidecarReq(sidecar)`: a restartable init container.
fn with_sidecar(node: &str, main: &[(&str, &str)], sidecar: &[(&str, &str)]) -> Pod {
    let mut pod = p(node, &[main]);
    let mut s = container(sidecar);
    s.restart_policy = Some("Always".into());
    pod.spec.init_containers = vec![s];
    pod
}

/// `fit_test.go` `TestFitScore`: every case but the two DRA ones ("... LeastAllocated with
/// Extended resources" and its "if PreScore is not called" twin: a DRA-backed extended
/// resource, which we cannot express). The "if PreScore is not called" cases are ported as they
/// are (we always prepare).
#[test]
fn fit_score() {
    enum S {
        Ratio(&'static [(i32, i32)]),
        Most,
        Least,
    }
    let nodes = |cpu2: &str| {
        vec![
            n("node1", &[("cpu", "4000"), ("memory", "10000")]),
            n("node2", &[("cpu", cpu2), ("memory", "10000")]),
        ]
    };
    let existing = || {
        vec![
            p("node1", &[&[("cpu", "2000"), ("memory", "4000")]]),
            p("node2", &[&[("cpu", "1000"), ("memory", "2000")]]),
        ]
    };
    let sidecar_existing = || {
        vec![
            with_sidecar(
                "node1",
                &[("cpu", "1000"), ("memory", "2000")],
                &[("cpu", "1000"), ("memory", "2000")],
            ),
            p("node2", &[&[("cpu", "1000"), ("memory", "2000")]]),
        ]
    };
    let big = || p("", &[&[("cpu", "3000"), ("memory", "5000")]]);
    let small = || p("", &[&[("cpu", "1000"), ("memory", "2000")]]);
    type Row = (&'static str, S, Pod, Vec<Node>, Vec<Pod>, Vec<i64>);
    let cases: Vec<Row> = vec![
        (
            "test case for ScoringStrategy RequestedToCapacityRatio case1",
            S::Ratio(&[(0, 10), (100, 0)]),
            big(),
            nodes("6000"),
            existing(),
            vec![10, 32],
        ),
        (
            "test case for ScoringStrategy RequestedToCapacityRatio case2",
            S::Ratio(&[(0, 0), (100, 10)]),
            big(),
            nodes("6000"),
            existing(),
            vec![95, 68],
        ),
        (
            "test case for ScoringStrategy MostAllocated",
            S::Most,
            small(),
            nodes("6000"),
            existing(),
            vec![67, 36],
        ),
        (
            "test case for ScoringStrategy LeastAllocated",
            S::Least,
            small(),
            nodes("6000"),
            existing(),
            vec![32, 63],
        ),
        (
            "test case for ScoringStrategy RequestedToCapacityRatio case1 if PreScore is not \
             called",
            S::Ratio(&[(0, 10), (100, 0)]),
            big(),
            nodes("6000"),
            existing(),
            vec![10, 32],
        ),
        (
            "test case for ScoringStrategy MostAllocated if PreScore is not called",
            S::Most,
            small(),
            nodes("6000"),
            existing(),
            vec![67, 36],
        ),
        (
            "test case for ScoringStrategy LeastAllocated if PreScore is not called",
            S::Least,
            small(),
            nodes("6000"),
            existing(),
            vec![32, 63],
        ),
        (
            "test case for ScoringStrategy MostAllocated with sidecar container",
            S::Most,
            small(),
            nodes("4000"),
            sidecar_existing(),
            vec![67, 45],
        ),
        (
            "test case for ScoringStrategy LeastAllocated with sidecar container",
            S::Least,
            small(),
            nodes("4000"),
            sidecar_existing(),
            vec![32, 55],
        ),
    ];
    let mut ran = 0;
    for (name, s, pod, nodes, pods, want) in cases {
        let got = match s {
            S::Ratio(points) => run(
                &RequestedToCapacityRatioPriority::new(&shape(points), &default_resources())
                    .unwrap(),
                &pod,
                nodes,
                pods,
            ),
            S::Most => run(
                &MostRequestedPriority::with_resources(&default_resources()).unwrap(),
                &pod,
                nodes,
                pods,
            ),
            S::Least => run(
                &LeastRequestedPriority::with_resources(&default_resources()).unwrap(),
                &pod,
                nodes,
                pods,
            ),
        };
        assert_eq!(got, want, "{name}");
        ran += 1;
    }
    assert_eq!(ran, 9, "cases run");
}

/// Kind 2, pod-level resources in the Fit score: kube v1.34 builds NodeResourcesFit's scorer
/// without pod-level resources, so the scores read the containers' requests, while
/// NodeResourcesBalancedAllocation (and the filter) use the pod-level ones. Expected scores are
/// kube v1.34.1's recorded answers.
#[test]
fn pod_level_resources_stay_out_of_the_fit_score() {
    use super::NodeResourcesBalancedAllocation;
    use crate::framework::CycleContext;
    use crate::model::ResourceRequirements;
    use crate::snapshot::Snapshot;

    let pod_level = |pod: &mut Pod, cpu: &str, memory: &str| {
        pod.spec.resources = Some(ResourceRequirements {
            requests: list(&[("cpu", cpu), ("memory", memory)]),
            ..Default::default()
        });
    };

    // repro-scores-podlevel-fit: containers 250m / 256Mi, pod level 500m / 512Mi.
    let mut pod = p("", &[&[("cpu", "250m"), ("memory", "256Mi")]]);
    pod_level(&mut pod, "500m", "536870912");
    let snapshot = Snapshot::from_objects(
        vec![
            n(
                "node-02",
                &[("cpu", "3920m"), ("memory", "64Gi"), ("pods", "250")],
            ),
            n(
                "node-08",
                &[("cpu", "7910m"), ("memory", "32408876Ki"), ("pods", "250")],
            ),
        ],
        vec![],
    )
    .unwrap();
    let least = LeastRequestedPriority::with_resources(&default_resources()).unwrap();
    assert_eq!(
        run_on(&least, &pod, &snapshot),
        vec![96, 97],
        "LeastAllocated"
    );
    let balanced = NodeResourcesBalancedAllocation::with_resources(&default_resources()).unwrap();
    assert_eq!(
        run_on(&balanced, &pod, &snapshot),
        vec![94, 97],
        "BalancedAllocation reads the pod-level requests"
    );
    // What the context hands each: the containers' requests to the Fit scorers, the pod-level
    // ones to everything else.
    let cx = CycleContext::new(&pod, &snapshot);
    assert_eq!(cx.fit_score_requests(), (250, 256 << 20));
    assert_eq!(cx.non_zero_requests(), (500, 512 << 20));
    // v1.20 has no pod-level resources to leave out: its scorers read what it always did.
    let cx = CycleContext::for_version(&pod, &snapshot, crate::framework::KubeVersion::V1_20);
    assert_eq!(cx.fit_score_requests(), cx.non_zero_requests());

    // repro-tie-set-podlevel-fit: a sidecar and an init container without a memory request
    // (200 MiB as a non-zero request): containers 1500m / 2.5Gi against pod level 750m /
    // 1.75Gi, under RequestedToCapacityRatio.
    let mut main = container(&[("cpu", "750m"), ("memory", "1.5Gi")]);
    main.name = "main".into();
    let mut sidecar = container(&[("cpu", "500m"), ("memory", "1Gi")]);
    sidecar.name = "sidecar".into();
    sidecar.restart_policy = Some("Always".into());
    let mut late = container(&[("cpu", "1")]);
    late.name = "late-init".into();
    let mut pod = pod_on("", vec![main]);
    pod.spec.init_containers = vec![sidecar, late];
    pod_level(&mut pod, "750m", "1879048192");
    let snapshot = Snapshot::from_objects(
        vec![
            n(
                "node-46",
                &[("cpu", "1930m"), ("memory", "8Gi"), ("pods", "29")],
            ),
            n(
                "node-48",
                &[("cpu", "4"), ("memory", "256Gi"), ("pods", "110")],
            ),
        ],
        vec![],
    )
    .unwrap();
    let ratio = RequestedToCapacityRatioPriority::new(
        &shape(&[(0, 0), (50, 7), (100, 3)]),
        &res(&[("cpu", 1), ("memory", 1), ("nvidia.com/gpu", 3)]),
    )
    .unwrap();
    assert_eq!(
        run_on(&ratio, &pod, &snapshot),
        vec![46, 51],
        "RequestedToCapacityRatio"
    );
    assert_eq!(
        run_on(&balanced, &pod, &snapshot),
        vec![91, 90],
        "BalancedAllocation reads the pod-level requests"
    );
    // MostAllocated reads the same containers' requests.
    let most = MostRequestedPriority::with_resources(&default_resources()).unwrap();
    let cx = CycleContext::new(&pod, &snapshot);
    let (cpu, memory) = cx.fit_score_requests();
    assert_eq!((cpu, memory), (1500, 5 << 29));
    assert_eq!(
        run_on(&most, &pod, &snapshot),
        vec![
            (cpu * 100 / 1930 + memory * 100 / (8 << 30)) / 2,
            (cpu * 100 / 4000 + memory * 100 / (256 << 30)) / 2
        ]
    );
}
