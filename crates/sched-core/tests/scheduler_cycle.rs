//! The scheduling cycle engine: queue timing in simulated time, binding failures, and a
//! model-based property test (random events, binds, bind failures and deletions against a
//! reference model of the truth).

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use proptest::prelude::*;
use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{Node, Pod, PodKey};
use sched_core::scheduler::{ClusterEvent, ObjectKey, QueueName, Scheduler, SchedulerEvent, Step};
use sched_core::snapshot::Snapshot;

fn node(name: &str, cpu: u32) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu.to_string(), "memory": "64Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap()
}

fn pod(name: &str, milli_cpu: u32, priority: i32, gated: bool) -> Pod {
    let mut v = serde_json::json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"priority": priority, "containers": [{"name": "c", "image": "pause",
            "resources": {"requests": {"cpu": format!("{milli_cpu}m"), "memory": "64Mi"}}}]}
    });
    if gated {
        v["spec"]["schedulingGates"] = serde_json::json!([{"name": "example.com/quota"}]);
    }
    serde_json::from_value(v).unwrap()
}

fn scheduler(nodes: Vec<Node>) -> Scheduler {
    let snapshot = Snapshot::from_objects(nodes, vec![]).unwrap();
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         podInitialBackoffSeconds: 1\npodMaxBackoffSeconds: 10\n",
    )
    .unwrap();
    Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 7).unwrap()
}

/// The engine with kube v1.32's queue (no `SchedulerPopFromBackoffQ`).
fn scheduler_v1_32_queue(nodes: Vec<Node>) -> Scheduler {
    let sch = scheduler(nodes);
    let settings = sch.queue().settings().without_pop_from_backoff();
    sch.with_queue_settings(settings)
}

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

#[test]
fn higher_priority_pods_are_scheduled_first() {
    let mut sch = scheduler(vec![node("n1", 4)]);
    sch.apply(ClusterEvent::add(pod("low", 100, 1, false)), s(0));
    sch.apply(ClusterEvent::add(pod("high", 100, 100, false)), s(1));
    let mut order = Vec::new();
    while let Step::Bind { pod, .. } = sch.schedule_one(s(2)) {
        sch.finish_binding(&pod, Ok(()), s(1));
        order.push(pod);
    }
    assert_eq!(order, ["default/high", "default/low"]);
}

#[test]
fn an_unschedulable_pod_waits_for_a_node_that_can_take_it() {
    let mut sch = scheduler(vec![node("small", 1)]);
    sch.apply(ClusterEvent::add(pod("big", 2000, 0, false)), s(0));
    match sch.schedule_one(s(0)) {
        Step::Unschedulable { pod, error, .. } => {
            assert_eq!(pod, "default/big");
            // kube v1.34's text: PostFilter's message follows (DynamicResources has no claim
            // to deallocate; the node is smaller than the pod, so preemption cannot help).
            assert_eq!(
                error.to_string(),
                "0/1 nodes are available: 1 Insufficient cpu. no new claims to deallocate, \
                 preemption: 0/1 nodes are available: 1 Preemption is not helpful for \
                 scheduling."
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        sch.queue().position("default/big"),
        Some(QueueName::Unschedulable)
    );
    // Nothing can happen by itself before the 5-minute limit.
    assert!(matches!(sch.schedule_one(s(10)), Step::Idle { until: Some(t) } if t > s(300)));
    // A node label change does not help an Insufficient cpu pod; a new node does.
    let mut relabelled = node("small", 1);
    relabelled.metadata.labels.insert("x".into(), "y".into());
    sch.apply(ClusterEvent::update(relabelled), s(11));
    assert_eq!(
        sch.queue().position("default/big"),
        Some(QueueName::Unschedulable)
    );
    sch.apply(ClusterEvent::add(node("large", 8)), s(12));
    assert_eq!(sch.queue().position("default/big"), Some(QueueName::Active));
    match sch.schedule_one(s(12)) {
        Step::Bind { node, .. } => assert_eq!(node, "large"),
        other => panic!("{other:?}"),
    }
}

/// Two 800m pods on a 1-CPU node: the first is placed, the second does not fit beside it
/// (assumed), then the first's bind fails at 0.5 s. Returns both keys; both back off.
fn a_bind_fails_beside_a_rejected_pod(sch: &mut Scheduler) -> (PodKey, PodKey) {
    sch.apply(ClusterEvent::add(pod("a", 800, 0, false)), s(0));
    sch.apply(ClusterEvent::add(pod("b", 800, 0, false)), s(0));
    let Step::Bind { pod: first, .. } = sch.schedule_one(s(0)) else {
        panic!()
    };
    let Step::Unschedulable { pod: second, .. } = sch.schedule_one(s(0)) else {
        panic!()
    };
    assert_eq!(sch.snapshot().pod_count(), 1);
    sch.finish_binding(&first, Err("conflict".into()), Duration::from_millis(500));
    // Forgotten exactly; the first backs off after its error, the second was woken by the
    // freed resources but backs off after its rejection.
    assert_eq!(sch.snapshot().pod_count(), 0);
    assert_eq!(sch.queue().position(&first), Some(QueueName::Backoff));
    assert_eq!(sch.queue().position(&second), Some(QueueName::Backoff));
    (first, second)
}

#[test]
fn a_failed_bind_forgets_the_pod_and_backs_off() {
    // kube v1.32's queue; v1.34's is below.
    let mut sch = scheduler_v1_32_queue(vec![node("n1", 1)]);
    let (first, second) = a_bind_fails_beside_a_rejected_pod(&mut sch);
    let half = Duration::from_millis(500);
    // The first backs off 1 s from 0.5 s; the second's backoff (1 s after its attempt at
    // 0 s) ends first.
    let events = sch.drain_events();
    assert!(events.contains(&SchedulerEvent::BindingFailed {
        pod: first.clone(),
        node: "n1".into(),
        message: "conflict".into()
    }));
    assert!(matches!(sch.schedule_one(half), Step::Idle { until: Some(t) } if t == s(1)));
    let Step::Bind { pod, .. } = sch.schedule_one(s(1)) else {
        panic!()
    };
    assert_eq!(pod, second);
    sch.finish_binding(&pod, Ok(()), s(1));
    // The informer reports the pod bound: confirmed, not added twice.
    let mut bound = sch.snapshot().get("n1").unwrap().pods()[0].pod().clone();
    bound.spec.node_name = "n1".into();
    sch.apply(ClusterEvent::update(bound), s(3));
    assert_eq!(sch.snapshot().pod_count(), 1);
}

#[test]
fn a_failed_bind_backs_off_while_a_rejected_pod_is_popped_from_backoff_q() {
    let mut sch = scheduler(vec![node("n1", 1)]);
    let (first, second) = a_bind_fails_beside_a_rejected_pod(&mut sch);
    let half = Duration::from_millis(500);
    // activeQ is empty: the second, rejected by a plugin, is popped from backoffQ at once
    // (kube's SchedulerPopFromBackoffQ) and fits now that the first is forgotten.
    let Step::Bind { pod, .. } = sch.schedule_one(half) else {
        panic!()
    };
    assert_eq!(pod, second);
    sch.finish_binding(&pod, Ok(()), half);
    // The first failed with an error: it waits out its backoff, 0.5 s + 1 s ending in the
    // window of 1 s, so until 2 s.
    assert!(matches!(sch.schedule_one(half), Step::Idle { until: Some(t) } if t == s(2)));
    assert!(matches!(
        sch.schedule_one(s(2)),
        Step::Unschedulable { ref pod, .. } if *pod == first
    ));
}

#[test]
fn gated_pods_and_other_schedulers_pods_are_not_scheduled() {
    let mut sch = scheduler(vec![node("n1", 4)]);
    let gated = pod("gated", 100, 0, true);
    sch.apply(ClusterEvent::add(gated.clone()), s(0));
    let mut other = pod("volcano-job", 100, 0, false);
    other.spec.scheduler_name = "volcano".into();
    sch.apply(ClusterEvent::add(other), s(0));
    assert!(matches!(sch.schedule_one(s(0)), Step::Idle { until: None }));
    assert_eq!(sch.queue().position("default/volcano-job"), None);
    let mut released = gated;
    released.spec.scheduling_gates.clear();
    sch.apply(ClusterEvent::update(released), s(5));
    assert!(matches!(sch.schedule_one(s(5)), Step::Bind { .. }));
}

#[test]
fn deleted_pods_leave_the_queue_and_free_their_node() {
    let mut sch = scheduler(vec![node("n1", 1)]);
    sch.apply(ClusterEvent::add(pod("a", 800, 0, false)), s(0));
    sch.apply(ClusterEvent::add(pod("b", 800, 0, false)), s(0));
    let Step::Bind { pod: a, .. } = sch.schedule_one(s(0)) else {
        panic!()
    };
    sch.finish_binding(&a, Ok(()), s(0));
    assert!(matches!(sch.schedule_one(s(0)), Step::Unschedulable { .. }));
    sch.apply(ClusterEvent::Delete(ObjectKey::pod(a)), s(1));
    assert_eq!(sch.snapshot().pod_count(), 0);
    // b was rejected for cpu; a deleted bound pod helps it. Its 1 s backoff ends in the
    // window of 1 s, so it backs off until 2 s, but activeQ is empty: it is popped at once.
    assert_eq!(sch.queue().position("default/b"), Some(QueueName::Backoff));
    assert!(matches!(sch.schedule_one(s(1)), Step::Bind { .. }));
}

// ---------------------------------------------------------------------------------------
// Model-based property test

/// Holds pods of priority 2 at Permit for up to 3 s.
struct WaitForPriority2;

impl sched_core::scheduler::PermitPlugin for WaitForPriority2 {
    fn name(&self) -> &str {
        "WaitForPriority2"
    }
    fn permit(&self, pod: &Pod, _node: &str) -> sched_core::scheduler::PermitDecision {
        if pod.spec.priority == Some(2) {
            sched_core::scheduler::PermitDecision::Wait(Duration::from_secs(3))
        } else {
            sched_core::scheduler::PermitDecision::Allow
        }
    }
}

/// Counts each pod's reserves and unreserves.
#[derive(Clone, Default)]
struct PodLedger(std::sync::Arc<std::sync::Mutex<BTreeMap<PodKey, (usize, usize)>>>);

impl PodLedger {
    fn counts(&self) -> BTreeMap<PodKey, (usize, usize)> {
        self.0.lock().unwrap().clone()
    }
}

impl sched_core::scheduler::ReservePlugin for PodLedger {
    fn name(&self) -> &str {
        "PodLedger"
    }
    fn reserve(&self, pod: &Pod, _node: &str) -> Result<(), sched_core::scheduler::ReserveError> {
        self.0.lock().unwrap().entry(pod.key()).or_default().0 += 1;
        Ok(())
    }
    fn unreserve(&self, pod: &Pod, _node: &str) {
        self.0.lock().unwrap().entry(pod.key()).or_default().1 += 1;
    }
}

#[derive(Clone, Debug)]
enum Action {
    AddPod {
        id: u8,
        milli_cpu: u32,
        priority: i32,
        gated: bool,
        /// The pod mounts claim `c<id>` (WaitForFirstConsumer, one local PV per node).
        claim: bool,
    },
    Ungate {
        id: u8,
    },
    DeletePod {
        id: u8,
    },
    AddNode {
        id: u8,
        cpu: u32,
    },
    DeleteNode {
        id: u8,
    },
    Schedule {
        advance_ms: u32,
    },
    FinishBind {
        ok: bool,
    },
    /// The Permit plugin allows the first waiting pod.
    Allow,
    Confirm,
    /// Deletes the first pod in a stage: 0 held at Permit, 1 allowed, 2 being bound, 3 bound
    /// and not confirmed, 4 pending.
    DeleteInStage {
        stage: u8,
    },
    /// Another scheduler binds the first pod held at Permit (0), allowed (1) or being bound
    /// (2) to another node where it fits: the informer reports it there.
    BindElsewhere {
        stage: u8,
    },
}

fn actions() -> impl Strategy<Value = Vec<Action>> {
    let a = prop_oneof![
        (
            0u8..12,
            100u32..3000,
            0i32..3,
            prop::bool::weighted(0.15),
            prop::bool::weighted(0.3)
        )
            .prop_map(|(id, milli_cpu, priority, gated, claim)| Action::AddPod {
                id,
                milli_cpu,
                priority,
                gated,
                claim,
            }),
        (0u8..12).prop_map(|id| Action::Ungate { id }),
        (0u8..12).prop_map(|id| Action::DeletePod { id }),
        (0u8..4, 1u32..5).prop_map(|(id, cpu)| Action::AddNode { id, cpu }),
        (0u8..4).prop_map(|id| Action::DeleteNode { id }),
        (0u32..15_000).prop_map(|advance_ms| Action::Schedule { advance_ms }),
        (0u32..15_000).prop_map(|advance_ms| Action::Schedule { advance_ms }),
        any::<bool>().prop_map(|ok| Action::FinishBind { ok }),
        Just(Action::Confirm),
        Just(Action::Allow),
        (0u8..5).prop_map(|stage| Action::DeleteInStage { stage }),
        (0u8..3).prop_map(|stage| Action::BindElsewhere { stage }),
    ];
    prop::collection::vec(a, 1..80)
}

/// What is true in the cluster, kept by hand.
#[derive(Default, Debug)]
struct Truth {
    pods: BTreeMap<PodKey, Pod>,
    pending: BTreeSet<PodKey>,
    binding: BTreeMap<PodKey, String>,
    bound: BTreeMap<PodKey, String>,
    confirmed: BTreeSet<PodKey>,
    /// Pods held at Permit (assumed), and those allowed but not yet handed out.
    waiting: BTreeMap<PodKey, String>,
    allowed: BTreeMap<PodKey, String>,
    /// Pods being bound (or bound) to a node that was deleted since: not in the snapshot,
    /// even if a node of the same name comes back.
    orphaned: BTreeSet<PodKey>,
    nodes: BTreeMap<String, u32>,
    /// Pods that mount their claim, and the claims whose pod was ever bound (their PV stays
    /// bound to them, as in kube, after the pod goes).
    with_claim: BTreeSet<PodKey>,
    claim_kept: BTreeSet<PodKey>,
}

/// The storage of the property test: a WaitForFirstConsumer class, one local PV per node id
/// (`pv-node-<k>`, only on `node-<k>`), and claims `c0` to `c11`.
fn storage_events() -> Vec<ClusterEvent> {
    use sched_core::model::{PersistentVolume, PersistentVolumeClaim, StorageClass};
    let class: StorageClass = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer"
    }))
    .unwrap();
    let mut events = vec![ClusterEvent::add(class)];
    for k in 0..4 {
        let pv: PersistentVolume = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("pv-node-{k}")},
            "spec": {
                "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                "storageClassName": "local", "local": {"path": "/mnt"},
                "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "kubernetes.io/hostname", "operator": "In",
                     "values": [format!("node-{k}")]}
                ]}]}}
            },
            "status": {"phase": "Available"}
        }))
        .unwrap();
        events.push(ClusterEvent::add(pv));
    }
    for id in 0..12 {
        let claim: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("c{id}"), "namespace": "default"},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                     "resources": {"requests": {"storage": "1Gi"}}},
            "status": {"phase": "Pending"}
        }))
        .unwrap();
        events.push(ClusterEvent::add(claim));
    }
    events
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn the_cycle_never_binds_twice_nor_loses_a_pod(actions in actions()) {
        // Pods of priority 2 wait at Permit (up to 3 s) until allowed.
        let ledger = PodLedger::default();
        let mut sch = scheduler(vec![node("node-0", 2)])
            .with_permit(WaitForPriority2)
            .with_reserve(ledger.clone());
        // Per pod: the binds that succeeded.
        let mut bound_ok: BTreeMap<PodKey, usize> = BTreeMap::new();
        let mut t = Truth::default();
        t.nodes.insert("node-0".into(), 2);
        let mut now = Duration::ZERO;
        for e in storage_events() {
            sch.apply(e, now);
        }
        for a in &actions {
            match a {
                Action::AddPod { id, milli_cpu, priority, gated, claim } => {
                    let name = format!("p{id}");
                    let key = PodKey::new("default", &name);
                    if t.pods.contains_key(&key) {
                        continue;
                    }
                    let mut p = pod(&name, *milli_cpu, *priority, *gated);
                    if *claim {
                        p = serde_json::from_value({
                            let mut v = serde_json::to_value(&p).unwrap();
                            v["spec"]["volumes"] = serde_json::json!([
                                {"name": "data", "persistentVolumeClaim": {"claimName": format!("c{id}")}}
                            ]);
                            v
                        })
                        .unwrap();
                        t.with_claim.insert(key.clone());
                    } else {
                        t.with_claim.remove(&key);
                    }
                    t.pods.insert(key.clone(), p.clone());
                    t.pending.insert(key);
                    sch.apply(ClusterEvent::add(p), now);
                }
                Action::Ungate { id } => {
                    let key = PodKey::from(format!("default/p{id}"));
                    if let Some(p) = t.pods.get_mut(&key)
                        && t.pending.contains(&key)
                        && !p.spec.scheduling_gates.is_empty()
                    {
                        p.spec.scheduling_gates.clear();
                        sch.apply(ClusterEvent::update(p.clone()), now);
                    }
                }
                Action::DeletePod { .. } | Action::DeleteInStage { .. } => {
                    let key = match a {
                        Action::DeletePod { id } => PodKey::from(format!("default/p{id}")),
                        Action::DeleteInStage { stage } => {
                            let bound: BTreeSet<&PodKey> = t.bound.keys()
                                .filter(|k| !t.confirmed.contains(*k)).collect();
                            let first = match stage {
                                0 => t.waiting.keys().next(),
                                1 => t.allowed.keys().next(),
                                2 => t.binding.keys().next(),
                                3 => bound.into_iter().next(),
                                _ => t.pending.iter().next(),
                            };
                            let Some(k) = first else { continue };
                            k.clone()
                        }
                        _ => unreachable!(),
                    };
                    if t.pods.remove(&key).is_some() {
                        t.pending.remove(&key);
                        t.binding.remove(&key);
                        t.bound.remove(&key);
                        t.confirmed.remove(&key);
                        t.orphaned.remove(&key);
                        t.waiting.remove(&key);
                        t.allowed.remove(&key);
                        sch.apply(ClusterEvent::Delete(ObjectKey::pod(key)), now);
                    }
                }
                Action::AddNode { id, cpu } => {
                    let name = format!("node-{id}");
                    if !t.nodes.contains_key(&name) {
                        t.nodes.insert(name.clone(), *cpu);
                        sch.apply(ClusterEvent::add(node(&name, *cpu)), now);
                    }
                }
                Action::DeleteNode { id } => {
                    let name = format!("node-{id}");
                    if t.nodes.remove(&name).is_some() {
                        // Its bound pods go with it (kube garbage-collects them); pods being
                        // bound there wait for their bind's result.
                        let gone: Vec<PodKey> = t.bound.iter()
                            .filter(|(_, n)| **n == name).map(|(k, _)| k.clone()).collect();
                        for k in gone {
                            t.bound.remove(&k);
                            t.confirmed.remove(&k);
                            t.orphaned.remove(&k);
                            t.pods.remove(&k);
                        }
                        for (k, n) in t.binding.iter().chain(&t.waiting).chain(&t.allowed) {
                            if *n == name {
                                t.orphaned.insert(k.clone());
                            }
                        }
                        sch.apply(ClusterEvent::Delete(ObjectKey::Node(name)), now);
                    }
                }
                Action::Schedule { advance_ms } => {
                    now += Duration::from_millis(u64::from(*advance_ms));
                    match sch.schedule_one(now) {
                        Step::Bind { pod, node, .. } if t.allowed.contains_key(&pod) => {
                            prop_assert_eq!(t.allowed.remove(&pod), Some(node.clone()));
                            t.binding.insert(pod, node);
                        }
                        Step::Waiting { pod, node, .. } => {
                            prop_assert!(t.pending.remove(&pod), "{} held while not pending", pod);
                            prop_assert!(t.nodes.contains_key(&node));
                            t.waiting.insert(pod, node);
                        }
                        Step::Rejected { pod, .. } => {
                            // A Permit wait that timed out.
                            prop_assert!(t.waiting.remove(&pod).is_some(), "{} rejected while not waiting", pod);
                            t.orphaned.remove(&pod);
                            t.pending.insert(pod);
                        }
                        Step::Bind { pod, node, .. } => {
                            prop_assert!(t.pending.remove(&pod), "{} bound while not pending", pod);
                            prop_assert!(!t.bound.contains_key(&pod) && !t.binding.contains_key(&pod));
                            prop_assert!(t.nodes.contains_key(&node));
                            prop_assert!(!t.bound.contains_key(&pod));
                            t.binding.insert(pod, node);
                        }
                        Step::Unschedulable { pod, .. } | Step::Failed { pod, .. } => {
                            prop_assert!(t.pending.contains(&pod));
                        }
                        Step::Preempt {
            pod, node, victims, ..
        } => {
                            prop_assert!(t.pending.contains(&pod));
                            prop_assert!(!victims.is_empty());
                            let prio = t.pods[&pod].spec.priority;
                            for v in victims {
                                // Only bound pods of lower priority on that node.
                                prop_assert_eq!(t.bound.get(&v), Some(&node), "victim {}", v);
                                prop_assert!(t.pods[&v].spec.priority < prio);
                                // The caller deletes them.
                                t.bound.remove(&v);
                                t.confirmed.remove(&v);
                                t.orphaned.remove(&v);
                                t.pods.remove(&v);
                                sch.apply(ClusterEvent::Delete(ObjectKey::pod(v)), now);
                            }
                        }
                        Step::Idle { .. } => {}
                        other => prop_assert!(false, "{:?}", other),
                    }
                }
                Action::FinishBind { ok } => {
                    let Some((key, node)) = t.binding.iter().next().map(|(k, n)| (k.clone(), n.clone())) else {
                        continue;
                    };
                    t.binding.remove(&key);
                    if *ok {
                        *bound_ok.entry(key.clone()).or_default() += 1;
                        if t.with_claim.contains(&key) {
                            t.claim_kept.insert(key.clone());
                        }
                        t.bound.insert(key.clone(), node);
                        sch.finish_binding(&key, Ok(()), now);
                    } else {
                        t.orphaned.remove(&key);
                        t.pending.insert(key.clone());
                        sch.finish_binding(&key, Err("refused".into()), now);
                    }
                }
                Action::Allow => {
                    if let Some((key, node)) = t.waiting.iter().next().map(|(k, n)| (k.clone(), n.clone())) {
                        prop_assert!(sch.allow(&key, "WaitForPriority2"));
                        t.waiting.remove(&key);
                        t.allowed.insert(key, node);
                    }
                }
                Action::BindElsewhere { stage } => {
                    let first = match stage {
                        0 => t.waiting.iter().next(),
                        1 => t.allowed.iter().next(),
                        _ => t.binding.iter().next(),
                    };
                    let Some((key, placed)) = first.map(|(k, n)| (k.clone(), n.clone())) else {
                        continue;
                    };
                    let cpu = sched_core::model::pod_requests(&t.pods[&key]).milli_cpu;
                    let free = |name: &String| {
                        let used: i64 = sch.snapshot().get(name).map_or(0, |info| {
                            info.pods().iter().map(|p| {
                                sched_core::model::pod_requests(p.pod()).milli_cpu
                            }).sum()
                        });
                        i64::from(t.nodes[name]) * 1000 - used
                    };
                    let Some(other) = t.nodes.keys()
                        .find(|n| **n != placed && free(n) >= cpu).cloned() else {
                        continue;
                    };
                    t.waiting.remove(&key);
                    t.allowed.remove(&key);
                    t.binding.remove(&key);
                    t.orphaned.remove(&key);
                    // Its claim is not bound here: the other scheduler's volumes are not
                    // modelled, so the pod leaves the volume checks.
                    t.with_claim.remove(&key);
                    t.bound.insert(key.clone(), other.clone());
                    t.confirmed.insert(key.clone());
                    let mut p = t.pods[&key].clone();
                    p.spec.node_name = other;
                    sch.apply(ClusterEvent::update(p), now);
                }
                Action::Confirm => {
                    let Some((key, node)) = t.bound.iter()
                        .find(|(k, n)| {
                            !t.confirmed.contains(*k)
                                && !t.orphaned.contains(*k)
                                && t.nodes.contains_key(*n)
                        })
                        .map(|(k, n)| (k.clone(), n.clone())) else { continue; };
                    let mut p = t.pods[&key].clone();
                    p.spec.node_name = node;
                    t.confirmed.insert(key);
                    sch.apply(ClusterEvent::update(p), now);
                }
            }
            // Every Reserve has exactly one unreserve or one successful bind, or its pod is
            // still placed and not bound (held, allowed, or its bind running).
            for (key, (reserves, unreserves)) in ledger.counts() {
                let open = usize::from(
                    t.waiting.contains_key(&key)
                        || t.allowed.contains_key(&key)
                        || t.binding.contains_key(&key),
                );
                let ok = bound_ok.get(&key).copied().unwrap_or(0);
                prop_assert_eq!(
                    reserves,
                    unreserves + ok + open,
                    "{}: {} reserves, {} unreserves, {} binds, {} open after {:?}",
                    key, reserves, unreserves, ok, open, a
                );
            }
            sch.snapshot().check_claim_index().map_err(TestCaseError::fail)?;
            // The snapshot holds exactly the pods bound or being bound on nodes that exist.
            let placed: BTreeMap<&PodKey, &String> = t
                .binding
                .iter()
                .chain(&t.bound)
                .chain(&t.waiting)
                .chain(&t.allowed)
                .filter(|(k, n)| t.nodes.contains_key(*n) && !t.orphaned.contains(*k))
                .collect();
            prop_assert_eq!(sch.snapshot().pod_count(), placed.len());
            for (k, n) in &placed {
                prop_assert_eq!(sch.snapshot().node_of(k), Some(n.as_str()), "pod {}", k);
            }
            // Every pending pod is queued exactly once; nothing else is.
            prop_assert_eq!(sch.queue().len(), t.pending.len());
            for k in &t.pending {
                prop_assert!(sch.queue().position(k).is_some(), "{} lost", k);
            }
            // Only pending pods are nominated (a nomination goes when its pod is placed or
            // deleted).
            for (k, _) in sch.nominator().iter() {
                prop_assert!(t.pending.contains(k), "{} nominated but not pending", k);
            }
            // Volumes: a placed pod with a claim holds its node's PV (VolumeBinding's Reserve
            // assumed it), no PV serves two placed pods, and a pending pod whose claim was
            // never bound holds no PV (every unreserve gave it back).
            // (As the profile's VolumeBinding sees the PVs: with what its Reserve assumed.)
            let storage = sch.snapshot().storage();
            let binder = sch
                .profile("default-scheduler")
                .and_then(|p| p.volume_binder())
                .expect("VolumeBinding");
            let claim_of = |pv: &str| {
                storage
                    .pv_seen_by(binder, pv)
                    .and_then(|pv| pv.spec.claim_ref.as_ref())
                    .map(|r| r.name.clone())
            };
            for (k, n) in &placed {
                if t.with_claim.contains(*k) {
                    let id = k.trim_start_matches("default/p");
                    let pv = format!("pv-{n}");
                    prop_assert_eq!(claim_of(&pv), Some(format!("c{id}")), "{} on {}", k, n);
                }
            }
            for k in &t.pending {
                if t.with_claim.contains(k) && !t.claim_kept.contains(k) {
                    let claim = format!("c{}", k.trim_start_matches("default/p"));
                    for node in 0..4 {
                        let pv = format!("pv-node-{node}");
                        prop_assert_ne!(claim_of(&pv), Some(claim.clone()), "{} pending", k);
                    }
                }
            }
            // No node holds more than it allocates.
            for info in sch.snapshot().node_infos() {
                let used: i64 = info.pods().iter().map(|p| {
                    sched_core::model::pod_requests(p.pod()).milli_cpu
                }).sum();
                prop_assert!(used <= i64::from(t.nodes[info.name()]) * 1000, "{} over", info.name());
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// Reserve and Permit

use sched_core::scheduler::{PermitDecision, PermitPlugin, ReservePlugin};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Counts reserves and unreserves; refuses pods whose name starts with "no-".
#[derive(Clone, Default)]
struct Ledger(Arc<(AtomicUsize, AtomicUsize)>);

impl ReservePlugin for Ledger {
    fn name(&self) -> &str {
        "Ledger"
    }
    fn reserve(&self, pod: &Pod, _node: &str) -> Result<(), sched_core::scheduler::ReserveError> {
        self.0.0.fetch_add(1, Ordering::SeqCst);
        if pod.metadata.name.starts_with("no-") {
            return Err("over quota".into());
        }
        Ok(())
    }
    fn unreserve(&self, _pod: &Pod, _node: &str) {
        self.0.1.fetch_add(1, Ordering::SeqCst);
    }
}

/// Holds pods of a gang until told; rejects pods named "reject-*".
struct Gang(Mutex<Vec<PodKey>>);

impl PermitPlugin for Gang {
    fn name(&self) -> &str {
        "Gang"
    }
    fn permit(&self, pod: &Pod, _node: &str) -> PermitDecision {
        self.0.lock().unwrap().push(pod.key());
        if pod.metadata.name.starts_with("reject-") {
            PermitDecision::Reject("gang incomplete".into())
        } else if pod.metadata.name.starts_with("gang-") {
            PermitDecision::Wait(Duration::from_secs(30))
        } else {
            PermitDecision::Allow
        }
    }
}

fn hooked() -> (Scheduler, Ledger) {
    let ledger = Ledger::default();
    let sch = scheduler(vec![node("n1", 4)])
        .with_reserve(ledger.clone())
        .with_permit(Gang(Mutex::new(Vec::new())));
    (sch, ledger)
}

#[test]
fn a_reserve_error_unreserves_forgets_and_backs_off() {
    let (mut sch, ledger) = hooked();
    sch.apply(ClusterEvent::add(pod("no-room", 100, 0, false)), s(0));
    match sch.schedule_one(s(0)) {
        Step::Rejected {
            pod,
            plugin,
            reason,
        } => {
            assert_eq!(
                (pod.as_str(), plugin.as_str(), reason.as_str()),
                ("default/no-room", "Ledger", "over quota")
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(sch.snapshot().pod_count(), 0);
    assert_eq!(
        sch.queue().position("default/no-room"),
        Some(QueueName::Backoff)
    );
    assert_eq!(
        (
            ledger.0.0.load(Ordering::SeqCst),
            ledger.0.1.load(Ordering::SeqCst)
        ),
        (1, 1)
    );
}

#[test]
fn a_permit_wait_holds_the_pod_until_allowed() {
    let (mut sch, _) = hooked();
    sch.apply(ClusterEvent::add(pod("gang-0", 100, 0, false)), s(0));
    match sch.schedule_one(s(0)) {
        Step::Waiting { pod, node, until } => {
            assert_eq!(
                (pod.as_str(), node.as_str(), until),
                ("default/gang-0", "n1", s(30))
            );
        }
        other => panic!("{other:?}"),
    }
    // Held assumed: its resources count, nothing to bind yet.
    assert_eq!(sch.snapshot().pod_count(), 1);
    assert!(matches!(sch.schedule_one(s(1)), Step::Idle { until: Some(t) } if t == s(30)));
    assert!(!sch.allow("default/gang-0", "Other"));
    assert!(sch.allow("default/gang-0", "Gang"));
    match sch.schedule_one(s(2)) {
        Step::Bind { pod, node, .. } => {
            assert_eq!((pod.as_str(), node.as_str()), ("default/gang-0", "n1"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_permit_wait_times_out_and_a_rejection_unschedules() {
    let (mut sch, ledger) = hooked();
    sch.apply(ClusterEvent::add(pod("gang-1", 100, 0, false)), s(0));
    assert!(matches!(sch.schedule_one(s(0)), Step::Waiting { .. }));
    match sch.schedule_one(s(30)) {
        Step::Rejected {
            pod,
            plugin,
            reason,
        } => {
            assert_eq!(pod, "default/gang-1");
            assert_eq!(plugin, "Gang");
            assert_eq!(reason, "rejected due to timeout after waiting at permit");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(sch.snapshot().pod_count(), 0);
    assert_eq!(
        sch.queue().position("default/gang-1"),
        Some(QueueName::Unschedulable)
    );
    sch.apply(ClusterEvent::add(pod("reject-0", 100, 0, false)), s(31));
    assert!(
        matches!(sch.schedule_one(s(31)), Step::Rejected { ref reason, .. } if reason == "gang incomplete")
    );
    assert_eq!(
        sch.queue().position("default/reject-0"),
        Some(QueueName::Unschedulable)
    );
    // Two reserved, two unreserved.
    assert_eq!(
        (
            ledger.0.0.load(Ordering::SeqCst),
            ledger.0.1.load(Ordering::SeqCst)
        ),
        (2, 2)
    );
    // A failed bind unreserves as well.
    sch.apply(ClusterEvent::add(pod("plain", 100, 0, false)), s(32));
    // (gang-1 was woken by the resources reject-0 freed and waits again at Permit.)
    let pod = loop {
        match sch.schedule_one(s(32)) {
            Step::Bind { pod, .. } => break pod,
            Step::Waiting { .. } | Step::Rejected { .. } => {}
            other => panic!("{other:?}"),
        }
    };
    assert_eq!(pod, "default/plain");
    let before = ledger.0.1.load(Ordering::SeqCst);
    sch.finish_binding(&pod, Err("conflict".into()), s(32));
    assert_eq!(ledger.0.1.load(Ordering::SeqCst), before + 1);
}

// ---------------------------------------------------------------------------------------
// Preemption

fn bound(name: &str, milli_cpu: u32, priority: i32, node: &str, started: &str) -> Pod {
    let mut p = pod(name, milli_cpu, priority, false);
    p.spec.node_name = node.into();
    p.status.start_time = Some(started.into());
    p
}

#[test]
fn a_higher_priority_pod_preempts_the_fewest_least_important_pods() {
    let mut sch = scheduler(vec![node("n1", 4)]);
    sch.apply(
        ClusterEvent::add(bound("old", 2000, 0, "n1", "2026-11-20T10:00:00Z")),
        s(0),
    );
    sch.apply(
        ClusterEvent::add(bound("new", 2000, 0, "n1", "2026-11-21T10:00:00Z")),
        s(0),
    );
    sch.apply(ClusterEvent::add(pod("urgent", 2000, 100, false)), s(0));
    let victims = match sch.schedule_one(s(0)) {
        Step::Preempt {
            pod, node, victims, ..
        } => {
            assert_eq!((pod.as_str(), node.as_str()), ("default/urgent", "n1"));
            victims
        }
        other => panic!("{other:?}"),
    };
    // One is enough; the one started earlier is more important and is reprieved.
    assert_eq!(victims, ["default/new"]);
    assert_eq!(sch.nominated_node("default/urgent"), Some("n1"));
    // The snapshot is as it was: both pods still there until the caller deletes the victim.
    assert_eq!(sch.snapshot().pod_count(), 2);
    sch.apply(
        ClusterEvent::Delete(ObjectKey::pod(victims[0].clone())),
        s(1),
    );
    match sch.schedule_one(s(1)) {
        Step::Bind { pod, node, .. } => {
            assert_eq!((pod.as_str(), node.as_str()), ("default/urgent", "n1"))
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(sch.nominated_node("default/urgent"), None);
}

#[test]
fn preemption_picks_the_node_with_the_least_important_victims() {
    let mut sch = scheduler(vec![node("a", 2), node("b", 2)]);
    sch.apply(
        ClusterEvent::add(bound("on-a", 2000, 5, "a", "2026-11-20T10:00:00Z")),
        s(0),
    );
    sch.apply(
        ClusterEvent::add(bound("on-b", 2000, 1, "b", "2026-11-20T10:00:00Z")),
        s(0),
    );
    sch.apply(ClusterEvent::add(pod("urgent", 1500, 100, false)), s(0));
    match sch.schedule_one(s(0)) {
        Step::Preempt { node, victims, .. } => {
            assert_eq!(node, "b");
            assert_eq!(victims, ["default/on-b"]);
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn no_preemption_without_lower_priority_pods_or_when_the_pod_says_never() {
    let mut sch = scheduler(vec![node("n1", 2)]);
    sch.apply(
        ClusterEvent::add(bound("peer", 2000, 100, "n1", "2026-11-20T10:00:00Z")),
        s(0),
    );
    sch.apply(ClusterEvent::add(pod("same", 1000, 100, false)), s(0));
    assert!(matches!(sch.schedule_one(s(0)), Step::Unschedulable { .. }));
    let mut sch = scheduler(vec![node("n1", 2)]);
    sch.apply(
        ClusterEvent::add(bound("low", 2000, 0, "n1", "2026-11-20T10:00:00Z")),
        s(0),
    );
    let mut polite = pod("polite", 1000, 100, false);
    polite.spec.preemption_policy = Some("Never".into());
    sch.apply(ClusterEvent::add(polite), s(0));
    assert!(matches!(sch.schedule_one(s(0)), Step::Unschedulable { .. }));
    // A profile without DefaultPreemption does not preempt either.
    let snapshot = Snapshot::from_objects(
        vec![node("n1", 2)],
        vec![bound("low", 2000, 0, "n1", "2026-11-20T10:00:00Z")],
    )
    .unwrap();
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         profiles:\n- plugins:\n    postFilter:\n      disabled:\n      - name: DefaultPreemption\n",
    )
    .unwrap();
    let mut sch = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1).unwrap();
    sch.apply(ClusterEvent::add(pod("urgent", 1000, 100, false)), s(0));
    assert!(matches!(sch.schedule_one(s(0)), Step::Unschedulable { .. }));
}

/// The informer's report that one of our pods is bound is an add for the queue (kube's
/// AssignedPodAdd): a pod waiting for resources is not woken by it (another pod arriving can
/// only take resources), but it is by a bound pod's deletion.
#[test]
fn a_confirmed_binding_does_not_wake_pods_short_of_resources() {
    let mut sch = scheduler(vec![node("n1", 1)]);
    sch.apply(ClusterEvent::add(pod("big", 2000, 0, false)), s(0));
    assert!(matches!(sch.schedule_one(s(0)), Step::Unschedulable { .. }));
    sch.apply(ClusterEvent::add(pod("small", 100, 0, false)), s(0));
    let Step::Bind { pod: key, node, .. } = sch.schedule_one(s(0)) else {
        panic!("small fits")
    };
    sch.finish_binding(&key, Ok(()), s(0));
    let mut bound = pod("small", 100, 0, false);
    bound.spec.node_name = node;
    sch.apply(ClusterEvent::update(bound), s(0));
    assert_eq!(
        sch.queue().position("default/big"),
        Some(QueueName::Unschedulable)
    );
    sch.apply(ClusterEvent::Delete(ObjectKey::pod("default/small")), s(0));
    assert_eq!(
        sch.queue().position("default/big"),
        Some(QueueName::Backoff)
    );
}

/// Namespaces arrive as events: a pod whose affinity term selects namespaces by label waits
/// until a Namespace with that label exists (kube's InterPodAffinity registers Namespace
/// events), then lands beside the pod it asks for.
#[test]
fn a_namespace_label_wakes_a_pod_whose_affinity_selects_namespaces() {
    use sched_core::model::Namespace;
    let mut sch = scheduler(vec![node("n1", 4), node("n2", 4)]);
    let mut db: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "db", "namespace": "data", "labels": {"app": "db"}},
        "spec": {"nodeName": "n2", "containers": [{"name": "c", "image": "pause",
            "resources": {"requests": {"cpu": "100m"}}}]}
    }))
    .unwrap();
    db.spec.node_name = "n2".into();
    sch.apply(ClusterEvent::add(db), s(0));
    let web: Pod = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {
            "containers": [{"name": "c", "image": "pause",
                "resources": {"requests": {"cpu": "100m"}}}],
            "affinity": {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [{
                "labelSelector": {"matchLabels": {"app": "db"}},
                "namespaceSelector": {"matchLabels": {"team": "storage"}},
                "topologyKey": "kubernetes.io/hostname"
            }]}}
        }
    }))
    .unwrap();
    sch.apply(ClusterEvent::add(web), s(0));
    // No namespace has the label yet: no pod matches the term.
    assert!(matches!(sch.schedule_one(s(0)), Step::Unschedulable { .. }));
    let ns = |labels: serde_json::Value| -> Namespace {
        serde_json::from_value(serde_json::json!({"metadata": {"name": "data", "labels": labels}}))
            .unwrap()
    };
    // A Namespace added moves it (kube registers Namespace/Add); without the label it is
    // still unschedulable when tried again.
    sch.apply(ClusterEvent::add(ns(serde_json::json!({}))), s(0));
    assert_eq!(
        sch.queue().position("default/web"),
        Some(QueueName::Backoff)
    );
    assert!(matches!(sch.schedule_one(s(5)), Step::Unschedulable { .. }));
    // The same labels again change nothing: no move.
    sch.apply(ClusterEvent::update(ns(serde_json::json!({}))), s(5));
    assert_eq!(
        sch.queue().position("default/web"),
        Some(QueueName::Unschedulable)
    );
    sch.apply(
        ClusterEvent::update(ns(serde_json::json!({"team": "storage"}))),
        s(5),
    );
    assert_ne!(
        sch.queue().position("default/web"),
        Some(QueueName::Unschedulable)
    );
    match sch.schedule_one(s(10)) {
        Step::Bind { pod, node, .. } => {
            assert_eq!((pod.as_str(), node.as_str()), ("default/web", "n2"))
        }
        other => panic!("{other:?}"),
    }
    sch.apply(
        ClusterEvent::Delete(ObjectKey::Namespace("data".into())),
        s(10),
    );
    assert!(
        sch.snapshot()
            .namespace_labels()
            .labels_of("data")
            .is_none()
    );
}

fn reserves(ledger: &Ledger) -> (usize, usize) {
    (
        ledger.0.0.load(Ordering::SeqCst),
        ledger.0.1.load(Ordering::SeqCst),
    )
}

/// Schedules `name` (allowed by Permit) and takes its `Step::Bind`.
fn handed_out(sch: &mut Scheduler, name: &str) {
    sch.apply(ClusterEvent::add(pod(name, 100, 0, false)), s(0));
    assert!(matches!(sch.schedule_one(s(0)), Step::Bind { .. }));
}

#[test]
fn a_pod_deleted_while_its_bind_runs_is_unreserved_once() {
    let (mut sch, ledger) = hooked();
    handed_out(&mut sch, "p");
    sch.apply(ClusterEvent::Delete(ObjectKey::pod("default/p")), s(1));
    assert_eq!(reserves(&ledger), (1, 1));
    assert_eq!(sch.snapshot().pod_count(), 0);
    // The bind's result, when it comes, changes nothing more.
    sch.finish_binding("default/p", Err("pods \"p\" not found".into()), s(2));
    assert_eq!(reserves(&ledger), (1, 1));
    assert_eq!(sch.queue().position("default/p"), None);
}

#[test]
fn a_pod_deleted_after_permit_allowed_it_is_unreserved_once() {
    let (mut sch, ledger) = hooked();
    sch.apply(ClusterEvent::add(pod("gang-0", 100, 0, false)), s(0));
    assert!(matches!(sch.schedule_one(s(0)), Step::Waiting { .. }));
    assert!(sch.allow("default/gang-0", "Gang"));
    sch.apply(ClusterEvent::Delete(ObjectKey::pod("default/gang-0")), s(1));
    assert_eq!(reserves(&ledger), (1, 1));
    assert!(matches!(sch.schedule_one(s(2)), Step::Idle { .. }));
    sch.finish_binding("default/gang-0", Ok(()), s(3));
    assert_eq!(reserves(&ledger), (1, 1));
}

#[test]
fn a_pod_bound_elsewhere_while_its_bind_runs_is_unreserved_once() {
    let (mut sch, ledger) = hooked();
    sch.apply(ClusterEvent::add(node("n2", 4)), s(0));
    handed_out(&mut sch, "p");
    let placed = sch
        .snapshot()
        .node_of("default/p")
        .expect("assumed")
        .to_string();
    let other = if placed == "n1" { "n2" } else { "n1" };
    let mut elsewhere = pod("p", 100, 0, false);
    elsewhere.spec.node_name = other.into();
    sch.apply(ClusterEvent::update(elsewhere), s(1));
    assert_eq!(reserves(&ledger), (1, 1));
    assert_eq!(sch.snapshot().node_of("default/p"), Some(other));
    // Our bind lost: its error changes nothing more.
    sch.finish_binding("default/p", Err("conflict".into()), s(2));
    assert_eq!(reserves(&ledger), (1, 1));
    assert_eq!(sch.snapshot().node_of("default/p"), Some(other));
}

#[test]
fn a_pod_deleted_while_held_at_permit_is_unreserved_once() {
    let (mut sch, ledger) = hooked();
    sch.apply(ClusterEvent::add(pod("gang-0", 100, 0, false)), s(0));
    assert!(matches!(sch.schedule_one(s(0)), Step::Waiting { .. }));
    sch.apply(ClusterEvent::Delete(ObjectKey::pod("default/gang-0")), s(1));
    assert_eq!(reserves(&ledger), (1, 1));
    assert_eq!(sch.snapshot().pod_count(), 0);
    assert_eq!(sch.waiting().count(), 0);
    // Neither an allow nor the wait's end finds it again.
    assert!(!sch.allow("default/gang-0", "Gang"));
    assert!(matches!(
        sch.schedule_one(s(60)),
        Step::Idle { until: None }
    ));
    assert_eq!(reserves(&ledger), (1, 1));
}

#[test]
fn a_pod_held_at_permit_and_bound_elsewhere_is_unreserved_once() {
    let (mut sch, ledger) = hooked();
    sch.apply(ClusterEvent::add(node("n2", 4)), s(0));
    sch.apply(ClusterEvent::add(pod("gang-0", 100, 0, false)), s(0));
    let Step::Waiting { node: placed, .. } = sch.schedule_one(s(0)) else {
        panic!("held at Permit")
    };
    let other = if placed == "n1" { "n2" } else { "n1" };
    let mut elsewhere = pod("gang-0", 100, 0, false);
    elsewhere.spec.node_name = other.into();
    sch.apply(ClusterEvent::update(elsewhere), s(1));
    assert_eq!(reserves(&ledger), (1, 1));
    assert_eq!(sch.snapshot().node_of("default/gang-0"), Some(other));
    // The wait's end does not forget the pod bound elsewhere.
    assert!(matches!(
        sch.schedule_one(s(60)),
        Step::Idle { until: None }
    ));
    assert_eq!(reserves(&ledger), (1, 1));
    assert_eq!(sch.snapshot().node_of("default/gang-0"), Some(other));
}

#[test]
fn a_pod_bound_and_then_deleted_is_not_unreserved() {
    let (mut sch, ledger) = hooked();
    handed_out(&mut sch, "p");
    sch.finish_binding("default/p", Ok(()), s(1));
    sch.apply(ClusterEvent::Delete(ObjectKey::pod("default/p")), s(2));
    assert_eq!(reserves(&ledger), (1, 0));
}

/// kube keeps one start index (`nextStartNodeIndex`) for all its profiles: a pod of one
/// profile starts its search where the previous pod of any profile stopped.
#[test]
fn profiles_share_the_start_index() {
    let nodes: Vec<Node> = (0..250).map(|i| node(&format!("n{i:03}"), 8)).collect();
    let snapshot = Snapshot::from_objects(nodes, vec![]).unwrap();
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         percentageOfNodesToScore: 10\nprofiles:\n- schedulerName: default-scheduler\n\
         - schedulerName: other\n",
    )
    .unwrap();
    let mut sch = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 7).unwrap();
    // Every node fits: each search stops after this many nodes.
    let step = sched_core::profile::num_feasible_nodes_to_find(250, 10) as usize;
    assert!(step < 250);
    let mut starts = Vec::new();
    for (i, profile) in ["default-scheduler", "other", "default-scheduler"]
        .into_iter()
        .enumerate()
    {
        let mut p = pod(&format!("p{i}"), 100, 0, false);
        p.spec.scheduler_name = profile.into();
        sch.apply(ClusterEvent::add(p), s(0));
        assert!(matches!(sch.schedule_one(s(0)), Step::Bind { .. }));
        starts.push(sch.next_start_index());
    }
    assert_eq!(starts, [step, 2 * step % 250, 3 * step % 250]);
}
