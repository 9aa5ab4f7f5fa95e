//! kube's preemption node choice, ported: `TestPickOneNodeForPreemption` (generic_scheduler
//! of kube-scheduler v1.19, the version whose table was read for this port; the same rules
//! are what the preemption module implements for both paths). Nodes allocate
//! 500m CPU and 1000 MiB; containers are small (100m, 200 MiB), medium (x2), large (x3) and very
//! large (x5); priorities neg -100, low 0, mid 100, high 1000, very high 10000; start times
//! default to 2019-01-01T01:01:01Z. `expected` lists every acceptable node, as kube's does.

use sched_core::framework::{Reason, ResourceSet};
use sched_core::model::{Node, Pod};
use sched_core::plugins::node::PodFitsResources;
use sched_core::profile::{FitError, NodeFailure, Profile, ProfileBuilder};
use sched_core::scheduler::preemption::{Candidate, preempt};
use sched_core::snapshot::Snapshot;

const NEG: i32 = -100;
const LOW: i32 = 0;
const MID: i32 = 100;
const HIGH: i32 = 1000;
const VERY_HIGH: i32 = 10000;

#[derive(Clone, Copy)]
enum Size {
    Small = 1,
    Medium = 2,
    Large = 3,
    VeryLarge = 5,
}
use Size::*;

fn node(name: &str) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "500m", "memory": "1000Mi", "pods": "100"}}
    }))
    .unwrap()
}

fn pod(name: &str, size: Size, priority: i32, node: &str, day: u32) -> Pod {
    let n = size as u32;
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node, "priority": priority, "containers": [{"name": "c",
            "resources": {"requests": {"cpu": format!("{}m", 100 * n), "memory": format!("{}Mi", 200 * n)}}}]},
        "status": {"startTime": format!("2019-01-{day:02}T01:01:01Z")}
    }))
    .unwrap()
}

fn fit_only() -> Profile {
    ProfileBuilder::new()
        .predicate(PodFitsResources::new())
        .build()
        .unwrap()
}

/// The node kube's selectNodesForPreemption + pickOneNodeForPreemption choose among all
/// `nodes` for `preemptor`.
fn pick(nodes: &[&str], preemptor: Pod, pods: Vec<Pod>) -> Option<Candidate> {
    let mut snapshot =
        Snapshot::from_objects(nodes.iter().map(|n| node(n)).collect(), pods).unwrap();
    // Every node as a candidate (resolvable), as the ported test passes them all.
    let error = FitError {
        pod: preemptor.key(),
        num_all_nodes: nodes.len(),
        failures: nodes
            .iter()
            .map(|n| NodeFailure {
                node: n.to_string(),
                codes: vec![(
                    "PodFitsResources".into(),
                    Reason::Insufficient(ResourceSet::default()),
                )],
                messages: vec![],
            })
            .collect(),
    };
    let before: Vec<usize> = snapshot
        .node_infos()
        .iter()
        .map(|i| i.pods().len())
        .collect();
    let c = preempt(
        &fit_only(),
        &mut snapshot,
        &preemptor,
        &error,
        (100, 100),
        &|_| false,
    );
    let after: Vec<usize> = snapshot
        .node_infos()
        .iter()
        .map(|i| i.pods().len())
        .collect();
    assert_eq!(before, after, "the snapshot is restored");
    c
}

fn preemptor(size: Size, priority: i32) -> Pod {
    let mut p = pod("preemptor", size, priority, "", 1);
    p.spec.node_name.clear();
    p.status.start_time = None;
    p
}

/// (name, nodes, preemptor, pods, acceptable nodes).
type Case = (
    &'static str,
    Vec<&'static str>,
    Pod,
    Vec<Pod>,
    Vec<&'static str>,
);

#[test]
fn kube_pick_one_node_for_preemption() {
    let cases: Vec<Case> = vec![
        (
            "No node needs preemption",
            vec!["machine1"],
            preemptor(Large, HIGH),
            vec![pod("m1.1", Small, MID, "machine1", 1)],
            vec!["machine1"],
        ),
        (
            "a pod that fits on both machines when lower priority pods are preempted",
            vec!["machine1", "machine2"],
            preemptor(Large, HIGH),
            vec![
                pod("m1.1", Large, MID, "machine1", 1),
                pod("m2.1", Large, MID, "machine2", 1),
            ],
            vec!["machine1", "machine2"],
        ),
        (
            "a pod that fits on a machine with no preemption",
            vec!["machine1", "machine2", "machine3"],
            preemptor(Large, HIGH),
            vec![
                pod("m1.1", Large, MID, "machine1", 1),
                pod("m2.1", Large, MID, "machine2", 1),
            ],
            vec!["machine3"],
        ),
        (
            "machine with min highest priority pod is picked",
            vec!["machine1", "machine2", "machine3"],
            preemptor(VeryLarge, HIGH),
            vec![
                pod("m1.1", Medium, MID, "machine1", 1),
                pod("m1.2", Large, MID, "machine1", 1),
                pod("m2.1", Medium, MID, "machine2", 1),
                pod("m2.2", Medium, LOW, "machine2", 1),
                pod("m3.1", Medium, LOW, "machine3", 1),
                pod("m3.2", Medium, LOW, "machine3", 1),
            ],
            vec!["machine3"],
        ),
        (
            "when highest priorities are the same, minimum sum of priorities is picked",
            vec!["machine1", "machine2", "machine3"],
            preemptor(VeryLarge, HIGH),
            vec![
                pod("m1.1", Medium, MID, "machine1", 1),
                pod("m1.2", Large, MID, "machine1", 1),
                pod("m2.1", Large, MID, "machine2", 1),
                pod("m2.2", Medium, LOW, "machine2", 1),
                pod("m3.1", Medium, MID, "machine3", 1),
                pod("m3.2", Medium, MID, "machine3", 1),
            ],
            vec!["machine2"],
        ),
        (
            "when highest priority and sum are the same, minimum number of pods is picked",
            vec!["machine1", "machine2", "machine3"],
            preemptor(VeryLarge, HIGH),
            vec![
                pod("m1.1", Small, MID, "machine1", 1),
                pod("m1.2", Small, NEG, "machine1", 1),
                pod("m1.3", Small, MID, "machine1", 1),
                pod("m1.4", Small, NEG, "machine1", 1),
                pod("m2.1", Large, MID, "machine2", 1),
                pod("m2.2", Medium, NEG, "machine2", 1),
                pod("m3.1", Medium, MID, "machine3", 1),
                pod("m3.2", Small, NEG, "machine3", 1),
                pod("m3.3", Small, LOW, "machine3", 1),
            ],
            vec!["machine2"],
        ),
        (
            "sum of adjusted priorities is considered",
            vec!["machine1", "machine2", "machine3"],
            preemptor(VeryLarge, HIGH),
            vec![
                pod("m1.1", Small, MID, "machine1", 1),
                pod("m1.2", Small, NEG, "machine1", 1),
                pod("m1.3", Small, NEG, "machine1", 1),
                pod("m2.1", Large, MID, "machine2", 1),
                pod("m2.2", Medium, NEG, "machine2", 1),
                pod("m3.1", Medium, MID, "machine3", 1),
                pod("m3.2", Small, NEG, "machine3", 1),
                pod("m3.3", Small, LOW, "machine3", 1),
            ],
            vec!["machine2"],
        ),
        (
            "non-overlapping lowest high priority, sum priorities, and number of pods",
            vec!["machine1", "machine2", "machine3", "machine4"],
            preemptor(VeryLarge, VERY_HIGH),
            vec![
                pod("m1.1", Small, MID, "machine1", 1),
                pod("m1.2", Small, LOW, "machine1", 1),
                pod("m1.3", Small, LOW, "machine1", 1),
                pod("m2.1", Large, HIGH, "machine2", 1),
                pod("m3.1", Medium, MID, "machine3", 1),
                pod("m3.2", Small, LOW, "machine3", 1),
                pod("m3.3", Small, LOW, "machine3", 1),
                pod("m3.4", Medium, LOW, "machine3", 1),
                pod("m4.1", Medium, MID, "machine4", 1),
                pod("m4.2", Small, MID, "machine4", 1),
                pod("m4.3", Small, MID, "machine4", 1),
                pod("m4.4", Small, NEG, "machine4", 1),
            ],
            vec!["machine1"],
        ),
        (
            "same priority, same number of victims, different start time for each machine's pod",
            vec!["machine1", "machine2", "machine3"],
            preemptor(VeryLarge, HIGH),
            vec![
                pod("m1.1", Medium, MID, "machine1", 3),
                pod("m1.2", Medium, MID, "machine1", 3),
                pod("m2.1", Medium, MID, "machine2", 4),
                pod("m2.2", Medium, MID, "machine2", 4),
                pod("m3.1", Medium, MID, "machine3", 2),
                pod("m3.2", Medium, MID, "machine3", 2),
            ],
            vec!["machine2"],
        ),
        (
            "same priority, same number of victims, different start time for all pods",
            vec!["machine1", "machine2", "machine3"],
            preemptor(VeryLarge, HIGH),
            vec![
                pod("m1.1", Medium, MID, "machine1", 5),
                pod("m1.2", Medium, MID, "machine1", 3),
                pod("m2.1", Medium, MID, "machine2", 6),
                pod("m2.2", Medium, MID, "machine2", 2),
                pod("m3.1", Medium, MID, "machine3", 4),
                pod("m3.2", Medium, MID, "machine3", 7),
            ],
            vec!["machine3"],
        ),
        (
            "different priority, same number of victims, different start time for all pods",
            vec!["machine1", "machine2", "machine3"],
            preemptor(VeryLarge, HIGH),
            vec![
                pod("m1.1", Medium, LOW, "machine1", 5),
                pod("m1.2", Medium, MID, "machine1", 3),
                pod("m2.1", Medium, MID, "machine2", 7),
                pod("m2.2", Medium, LOW, "machine2", 2),
                pod("m3.1", Medium, LOW, "machine3", 4),
                pod("m3.2", Medium, MID, "machine3", 6),
            ],
            vec!["machine2"],
        ),
    ];
    let n = cases.len();
    for (name, nodes, preemptor, pods, expected) in cases {
        let got = pick(&nodes, preemptor, pods).unwrap_or_else(|| panic!("{name}: no candidate"));
        assert!(
            expected.contains(&got.node.as_str()),
            "{name}: picked {}",
            got.node
        );
    }
    assert_eq!(n, 11);
}

/// kube's TestPreempt "basic preemption logic": the victims themselves.
#[test]
fn kube_basic_preemption_victims() {
    let c = pick(
        &["machine1", "machine2", "machine3"],
        preemptor(VeryLarge, HIGH),
        vec![
            pod("m1.1", Small, LOW, "machine1", 1),
            pod("m1.2", Small, LOW, "machine1", 1),
            pod("m2.1", Large, HIGH, "machine2", 1),
            pod("m3.1", Medium, MID, "machine3", 1),
        ],
    )
    .unwrap();
    assert_eq!(c.node, "machine1");
    let mut victims = c.victims.clone();
    victims.sort();
    assert_eq!(victims, ["default/m1.1", "default/m1.2"]);
}
