//! The dense fast path (see `sched_core::dense`) against the plugins' own `filter` and
//! `score`: the same pipelines, built once with dense forms and once without, must make the
//! same decisions with the same scores and the same explanations, cycle after cycle.

use proptest::prelude::*;
mod common;
use common::{BuildWorker, Worker};
use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{
    Container, Node, NodeCondition, Pod, Quantity, Taint, TaintEffect, Toleration,
    TolerationOperator,
};
use sched_core::policy::Policy;
use sched_core::snapshot::Snapshot;

fn q(s: &str) -> Quantity {
    s.parse().unwrap()
}

/// Allocatable CPU, memory and pod counts, from empty to beyond the range where the dense
/// scores multiply instead of dividing (2^46 milli-CPU or bytes).
const CPUS: &[&str] = &["0", "100m", "1", "3", "4", "32", "1000", "100000000000"];
const MEMORIES: &[&str] = &["0", "1Mi", "1Gi", "8Gi", "128Gi", "1Pi", "4Ei"];
const POD_SLOTS: &[&str] = &["0", "1", "3", "110"];
const CPU_REQUESTS: &[Option<&str>] = &[None, Some("0"), Some("100m"), Some("1"), Some("3")];
const MEMORY_REQUESTS: &[Option<&str>] =
    &[None, Some("0"), Some("100Mi"), Some("2Gi"), Some("6Gi")];

#[derive(Clone, Debug)]
struct NodeSpec {
    cpu: usize,
    memory: usize,
    pods: usize,
    taint: Option<TaintEffect>,
    cordoned: bool,
    pressure: u8,
    running: Vec<(usize, usize)>,
}

#[derive(Clone, Debug)]
struct PodSpec {
    cpu: usize,
    memory: usize,
    ephemeral: bool,
    tolerate: bool,
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        0..CPUS.len(),
        0..MEMORIES.len(),
        0..POD_SLOTS.len(),
        prop_oneof![
            4 => Just(None),
            1 => Just(Some(TaintEffect::NoSchedule)),
            1 => Just(Some(TaintEffect::PreferNoSchedule)),
            1 => Just(Some(TaintEffect::NoExecute)),
        ],
        prop::bool::weighted(0.1),
        0u8..16,
        prop::collection::vec((0..CPU_REQUESTS.len(), 0..MEMORY_REQUESTS.len()), 0..4),
    )
        .prop_map(
            |(cpu, memory, pods, taint, cordoned, pressure, running)| NodeSpec {
                cpu,
                memory,
                pods,
                taint,
                cordoned,
                pressure,
                running,
            },
        )
}

fn pod_spec() -> impl Strategy<Value = PodSpec> {
    (
        0..CPU_REQUESTS.len(),
        0..MEMORY_REQUESTS.len(),
        prop::bool::weighted(0.1),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(cpu, memory, ephemeral, tolerate)| PodSpec {
            cpu,
            memory,
            ephemeral,
            tolerate,
        })
}

fn pod(name: &str, cpu: usize, memory: usize) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = name.into();
    p.metadata.namespace = "default".into();
    let mut c = Container {
        name: "c".into(),
        ..Default::default()
    };
    if let Some(v) = CPU_REQUESTS[cpu] {
        c.resources.requests.insert("cpu".into(), q(v));
    }
    if let Some(v) = MEMORY_REQUESTS[memory] {
        c.resources.requests.insert("memory".into(), q(v));
    }
    p.spec.containers.push(c);
    p
}

fn cluster(nodes: &[NodeSpec]) -> Snapshot {
    let mut node_list = Vec::new();
    let mut pods = Vec::new();
    for (i, spec) in nodes.iter().enumerate() {
        let mut n = Node::default();
        n.metadata.name = format!("node-{i}");
        for (k, v) in [
            ("cpu", CPUS[spec.cpu]),
            ("memory", MEMORIES[spec.memory]),
            ("pods", POD_SLOTS[spec.pods]),
            ("ephemeral-storage", "10Gi"),
        ] {
            n.status.allocatable.insert(k.into(), q(v));
        }
        n.status.conditions.push(NodeCondition {
            type_: "Ready".into(),
            status: "True".into(),
        });
        for (bit, kind) in [
            (1, "MemoryPressure"),
            (2, "DiskPressure"),
            (4, "PIDPressure"),
        ] {
            // Pressure on about one node in eight per kind.
            if spec.pressure & 8 != 0 && spec.pressure & bit != 0 {
                n.status.conditions.push(NodeCondition {
                    type_: kind.into(),
                    status: "True".into(),
                });
            }
        }
        if let Some(effect) = spec.taint {
            n.spec.taints.push(Taint {
                key: "dedicated".into(),
                value: "gpu".into(),
                effect,
            });
        }
        n.spec.unschedulable = spec.cordoned;
        node_list.push(n);
        for (j, &(cpu, memory)) in spec.running.iter().enumerate() {
            let mut p = pod(&format!("running-{i}-{j}"), cpu, memory);
            p.spec.node_name = format!("node-{i}");
            pods.push(p);
        }
    }
    Snapshot::from_objects(node_list, pods).unwrap()
}

fn new_pod(i: usize, spec: &PodSpec) -> Pod {
    let mut p = pod(&format!("new-{i}"), spec.cpu, spec.memory);
    if spec.ephemeral {
        p.spec.containers[0]
            .resources
            .requests
            .insert("ephemeral-storage".into(), q("1Gi"));
    }
    if spec.tolerate {
        p.spec.tolerations.push(Toleration {
            key: "dedicated".into(),
            operator: TolerationOperator::Exists,
            ..Default::default()
        });
    }
    p
}

/// kube's default policy, and one with the pressure predicates, PodFitsResources on its own
/// and bin packing.
fn policies() -> Vec<Policy> {
    let packing = Policy::from_json(
        r#"{"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "CheckNodeUnschedulable"}, {"name": "PodFitsResources"},
                           {"name": "CheckNodeMemoryPressure"}, {"name": "CheckNodeDiskPressure"},
                           {"name": "CheckNodePIDPressure"}, {"name": "PodToleratesNodeTaints"}],
            "priorities": [{"name": "MostRequestedPriority", "weight": 3},
                           {"name": "BalancedResourceAllocation", "weight": 2},
                           {"name": "TaintTolerationPriority", "weight": 1}]}"#,
    )
    .unwrap();
    vec![Policy::kube_default(), packing]
}

fn scheduler(policy: &Policy, pct: u32, dense: bool, seed: u64) -> Worker {
    let mut policy = policy.clone();
    policy.percentage_of_nodes_to_score = Some(i64::from(pct));
    policy
        .builder()
        .unwrap()
        .threads(1)
        .seed(seed)
        .fast_path(dense)
        .build_worker()
        .unwrap()
}

/// kube-scheduler v1.34's default profile, and one that packs (MostAllocated).
fn configurations() -> Vec<SchedulerConfiguration> {
    let packing = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         profiles:\n- schedulerName: default-scheduler\n  pluginConfig:\n  \
         - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        \
         type: MostAllocated\n",
    )
    .unwrap();
    vec![SchedulerConfiguration::v1_34_default(), packing]
}

fn v1_34_scheduler(config: &SchedulerConfiguration, pct: u32, dense: bool, seed: u64) -> Worker {
    let (_, builder) = config
        .builders(&Registry::v1_34())
        .unwrap()
        .into_iter()
        .next()
        .unwrap();
    builder
        .threads(1)
        .seed(seed)
        .percentage_of_nodes_to_score(pct)
        .fast_path(dense)
        .build_worker()
        .unwrap()
}

/// The pipelines the property compares: the two legacy policies, then the two v1.34
/// configurations.
fn pipeline(which: usize, pct: u32, dense: bool, seed: u64) -> Worker {
    match which {
        0 | 1 => scheduler(&policies()[which], pct, dense, seed),
        _ => v1_34_scheduler(&configurations()[which - 2], pct, dense, seed),
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]
    #[test]
    fn dense_and_general_paths_decide_alike(
        nodes in prop::collection::vec(node_spec(), 1..160),
        pods in prop::collection::vec(pod_spec(), 1..12),
        pct in prop_oneof![Just(0u32), Just(100u32), 1u32..100],
        policy in 0usize..4,
        seed: u64,
    ) {
        let (mut fast, mut slow) = (pipeline(policy, pct, true, seed), pipeline(policy, pct, false, seed));
        let (mut a, mut b) = (cluster(&nodes), cluster(&nodes));
        for (i, spec) in pods.iter().enumerate() {
            let p = new_pod(i, spec);
            match (fast.schedule_and_assume(&p, &mut a), slow.schedule_and_assume(&p, &mut b)) {
                (Ok(x), Ok(y)) => {
                    prop_assert_eq!(&x, &y);
                    let (sx, sy) = (fast.last_scores(), slow.last_scores());
                    prop_assert_eq!(sx.len(), sy.len());
                    for k in 0..sx.len() {
                        prop_assert_eq!(sx.row(k), sy.row(k), "node {}", k);
                    }
                }
                (Err(x), Err(y)) => prop_assert_eq!(x.to_string(), y.to_string()),
                (x, y) => prop_assert!(false, "differ: {:?} vs {:?}", x, y),
            }
            prop_assert_eq!(fast.next_start_index(), slow.next_start_index());
        }
    }
}

/// The benchmark workload itself, for many pods: every decision and every score row equal.
#[test]
fn dense_path_matches_on_the_benchmark_cluster() {
    let (nodes, pods) = sched_core::bench_cluster::benchmark_cluster(600);
    let mut a = Snapshot::from_objects(nodes, pods).unwrap();
    let mut b = a.clone();
    for pct in [100, 0] {
        let policy = Policy::kube_default();
        let (mut fast, mut slow) = (
            scheduler(&policy, pct, true, 9),
            scheduler(&policy, pct, false, 9),
        );
        for i in 0..300 {
            let p = sched_core::bench_cluster::benchmark_pod(i + pct as usize * 1000);
            let x = fast.schedule_and_assume(&p, &mut a).unwrap();
            let y = slow.schedule_and_assume(&p, &mut b).unwrap();
            assert_eq!(x, y, "pod {i}");
            let (sx, sy) = (fast.last_scores(), slow.last_scores());
            for k in 0..sx.len() {
                assert_eq!(sx.row(k), sy.row(k), "pod {i} node {k}");
            }
        }
    }
}

/// Kind 1, the zero-request guard, on both paths: a node whose pods already request more CPU
/// than it has is feasible under v1.34 for a pod that requests no CPU, and not under v1.20's
/// rule (the legacy policy).
#[test]
fn zero_request_guard_on_both_paths() {
    let node = NodeSpec {
        cpu: 2, // 1 CPU
        memory: 3,
        pods: 3,
        taint: None,
        cordoned: false,
        pressure: 0,
        running: vec![(4, 1), (4, 1)], // 3 CPU + 3 CPU of 1
    };
    // 0 CPU and 100Mi of memory.
    let p = pod("new", 1, 2);
    for dense in [true, false] {
        let mut v1_34 = pipeline(2, 100, dense, 1);
        let r = v1_34.schedule(&p, &cluster(std::slice::from_ref(&node)));
        assert_eq!(r.unwrap().node, "node-0", "v1.34, fast path {dense}");
        let mut legacy = pipeline(0, 100, dense, 1);
        let e = legacy
            .schedule(&p, &cluster(std::slice::from_ref(&node)))
            .unwrap_err();
        assert_eq!(
            e.to_string(),
            "0/1 nodes are available: 1 Insufficient cpu.",
            "v1.20, fast path {dense}"
        );
    }
}

/// Kind 2, pod-level resources in the Fit score, on both paths: kube v1.34's NodeResourcesFit
/// (LeastAllocated, in the fused kernel on the fast path) scores the containers' requests,
/// NodeResourcesBalancedAllocation the pod-level ones (kube v1.34.1's recorded scores).
#[test]
fn pod_level_resources_stay_out_of_the_fit_score_on_both_paths() {
    let node = |name: &str, cpu: &str, memory: &str| {
        let mut n = Node::default();
        n.metadata.name = name.into();
        for (k, v) in [("cpu", cpu), ("memory", memory), ("pods", "250")] {
            n.status.allocatable.insert(k.into(), q(v));
        }
        n
    };
    let snapshot = Snapshot::from_objects(
        vec![
            node("node-02", "3920m", "64Gi"),
            node("node-08", "7910m", "32408876Ki"),
        ],
        vec![],
    )
    .unwrap();
    let mut p = Pod::default();
    p.metadata.name = "pending".into();
    p.metadata.namespace = "default".into();
    let mut c = Container {
        name: "main".into(),
        ..Default::default()
    };
    c.resources.requests.insert("cpu".into(), q("250m"));
    c.resources.requests.insert("memory".into(), q("256Mi"));
    p.spec.containers.push(c);
    let mut pod_level = sched_core::model::ResourceRequirements::default();
    pod_level.requests.insert("cpu".into(), q("500m"));
    pod_level.requests.insert("memory".into(), q("512Mi"));
    p.spec.resources = Some(pod_level);
    for dense in [true, false] {
        let mut w = pipeline(2, 100, dense, 1);
        w.schedule(&p, &snapshot).unwrap();
        let table = w.last_scores();
        let column = |name: &str| -> Vec<i64> {
            let k = table
                .priorities()
                .iter()
                .position(|(n, _)| *n == name)
                .unwrap();
            (0..table.len()).map(|i| table.row(i).2[k]).collect()
        };
        assert_eq!(
            column("NodeResourcesFit"),
            vec![96, 97],
            "fast path {dense}"
        );
        assert_eq!(
            column("NodeResourcesBalancedAllocation"),
            vec![94, 97],
            "fast path {dense}"
        );
    }
}

/// A cluster for preemption: the nodes of `nodes` made small, each running pod with a priority (-1, 0
/// or 1, from `prios` in turn), a start time (none, or one of three, equal ones included)
/// and one of two `app` labels that `pdbs` budgets.
fn preemption_cluster(nodes: &[NodeSpec], prios: &[(i8, u8)]) -> Snapshot {
    // Small nodes (up to 4 CPUs, 8Gi), which the running pods fill.
    let nodes: Vec<NodeSpec> = nodes
        .iter()
        .map(|n| NodeSpec {
            cpu: n.cpu % 5,
            memory: n.memory % 4,
            ..n.clone()
        })
        .collect();
    let base = cluster(&nodes);
    let mut pods = Vec::new();
    for (k, info) in base.node_infos().iter().flat_map(|n| n.pods()).enumerate() {
        let mut p = info.pod().clone();
        let (prio, start) = prios[k % prios.len()];
        p.spec.priority = Some(i32::from(prio));
        p.status.start_time = (start % 4 != 0).then(|| format!("2024-01-01T00:00:0{}Z", start % 4));
        p.metadata
            .labels
            .insert("app".into(), format!("a{}", start % 2));
        pods.push(p);
    }
    let nodes = base.node_infos().iter().map(|n| n.node().clone()).collect();
    Snapshot::from_objects(nodes, pods).unwrap()
}

/// The pods on each node, sorted (the dry run on the snapshot may leave them in another
/// order).
fn pod_sets(s: &Snapshot) -> Vec<Vec<String>> {
    s.node_infos()
        .iter()
        .map(|n| {
            let mut v: Vec<String> = n.pods().iter().map(|p| p.key().to_string()).collect();
            v.sort();
            v
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]
    /// Preemption's dry run on the nodes' numbers (the fast path) and on the snapshot with the
    /// pods taken off (without it) find the same candidates, victims, node and reasons, and
    /// leave the snapshot's pods as they were.
    #[test]
    fn preemption_on_numbers_and_on_the_snapshot_decide_alike(
        nodes in prop::collection::vec(node_spec(), 1..30),
        prios in prop::collection::vec((-1i8..=1, 0u8..8), 1..8),
        pods in prop::collection::vec((pod_spec(), 0i32..3), 1..6),
        pdbs in prop::collection::vec(0i32..3, 0..3),
        (policy, pct, absolute, offset) in (0usize..4, 0i32..100, 0i32..6, 0usize..50),
    ) {
        use sched_core::profile::ScheduleError;
        use sched_core::scheduler::Nominator;
        use sched_core::scheduler::preemption::{Environment, preempt};
        let profile = |dense: bool| -> sched_core::profile::Profile {
            let builder = match policy {
                0 | 1 => policies()[policy].builder().unwrap(),
                _ => configurations()[policy - 2]
                    .builders(&Registry::v1_34())
                    .unwrap()
                    .into_iter()
                    .next()
                    .unwrap()
                    .1,
            };
            builder.threads(1).fast_path(dense).build().unwrap()
        };
        let (fast, slow) = (profile(true), profile(false));
        let snapshot = preemption_cluster(&nodes, &prios);
        let pdbs: Vec<_> = pdbs
            .iter()
            .enumerate()
            .map(|(i, &allowed)| {
                serde_json::from_value(serde_json::json!({
                    "metadata": {"name": format!("pdb-{i}"), "namespace": "default"},
                    "spec": {"selector": {"matchLabels": {"app": format!("a{i}")}}},
                    "status": {"disruptionsAllowed": allowed}}))
                .unwrap()
            })
            .collect();
        let nominator = Nominator::new();
        let env = Environment::new(&nominator).pdbs(&pdbs);
        for (i, (spec, prio)) in pods.iter().enumerate() {
            let mut pod = new_pod(i, spec);
            pod.spec.priority = Some(*prio);
            let mut cache = fast.create_cache();
            let Err(ScheduleError::Unschedulable(error)) = fast.schedule(&mut cache, &pod, &snapshot)
            else {
                continue;
            };
            let (mut a, mut b) = (snapshot.clone(), snapshot.clone());
            let x = preempt(&fast, &mut a, &pod, &error, (pct, absolute), &mut |n| offset % n, &env);
            let y = preempt(&slow, &mut b, &pod, &error, (pct, absolute), &mut |n| offset % n, &env);
            prop_assert_eq!(format!("{x:?}"), format!("{y:?}"));
            prop_assert_eq!(pod_sets(&a), pod_sets(&snapshot));
            prop_assert_eq!(pod_sets(&b), pod_sets(&snapshot));
        }
    }
}
