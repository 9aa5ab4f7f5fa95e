//! Builders and a runner for the table tests ported from kube.

use std::sync::atomic::{AtomicUsize, Ordering};

use crate::framework::{CycleContext, KubeVersion, PreparedScore, Priority};
use crate::model::{Container, Node, Pod, Quantity, ResourceList};
use crate::snapshot::Snapshot;

/// A resource list from `(name, quantity)` pairs.
pub fn list(pairs: &[(&str, &str)]) -> ResourceList {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.parse::<Quantity>().unwrap()))
        .collect()
}

/// kube's test `makeNode(name, milliCPU, memory)`: capacity = allocatable.
pub fn node(name: &str, milli_cpu: i64, memory: i64) -> Node {
    let mut n = Node::default();
    n.metadata.name = name.to_string();
    let mut l = ResourceList::new();
    l.insert("cpu".into(), Quantity::from_milli(milli_cpu));
    l.insert("memory".into(), Quantity::from_value(memory));
    n.status.capacity = l.clone();
    n.status.allocatable = l;
    n
}

/// A node with allocatable (and capacity) from quantity strings.
pub fn node_with(name: &str, alloc: &[(&str, &str)]) -> Node {
    let mut n = Node::default();
    n.metadata.name = name.to_string();
    n.status.capacity = list(alloc);
    n.status.allocatable = list(alloc);
    n
}

/// A container with these requests.
pub fn container(requests: &[(&str, &str)]) -> Container {
    let mut c = Container::default();
    c.resources.requests = list(requests);
    c
}

/// A table row: name, pod to schedule, nodes, pods on them, expected final scores.
pub type Case = (&'static str, Pod, Vec<Node>, Vec<Pod>, Vec<i64>);

static NEXT: AtomicUsize = AtomicUsize::new(0);

/// A pod with a unique name, bound to `node` (empty: pending).
pub fn pod_on(node: &str, containers: Vec<Container>) -> Pod {
    let mut p = Pod::default();
    p.metadata.namespace = "default".into();
    p.metadata.name = format!("pod-{}", NEXT.fetch_add(1, Ordering::Relaxed));
    p.spec.node_name = node.to_string();
    p.spec.containers = containers;
    p
}

/// Final scores of `priority` for `pod` on every node (all nodes feasible), as the scheduler
/// computes them: a constant, or score then normalize.
pub fn run(priority: &impl Priority, pod: &Pod, nodes: Vec<Node>, pods: Vec<Pod>) -> Vec<i64> {
    let snapshot = Snapshot::from_objects(nodes, pods).unwrap();
    run_on(priority, pod, &snapshot)
}

/// [`run`] on an existing snapshot.
pub fn run_on(priority: &impl Priority, pod: &Pod, snapshot: &Snapshot) -> Vec<i64> {
    run_on_version(priority, pod, snapshot, KubeVersion::V1_34)
}

/// [`run_on`] in a cycle of this kube version.
pub fn run_on_version(
    priority: &impl Priority,
    pod: &Pod,
    snapshot: &Snapshot,
    version: KubeVersion,
) -> Vec<i64> {
    let cx = CycleContext::for_version(pod, snapshot, version);
    let n = snapshot.len();
    let feasible: Vec<u32> = (0..n as u32).collect();
    match priority.prepare(&cx, &feasible).unwrap() {
        PreparedScore::Constant(c) => vec![c; n],
        PreparedScore::Run(state) => {
            let mut v: Vec<i64> = (0..n)
                .map(|i| priority.score(&cx, &state, snapshot.node(i)))
                .collect();
            // The scheduler scores through `score_batch`: it must agree with `score`.
            let mut batch = vec![i64::MIN; n];
            priority.score_batch(&cx, &state, &feasible, &mut batch);
            assert_eq!(
                batch,
                v,
                "{}: score_batch differs from score",
                priority.name()
            );
            priority.normalize(&cx, &state, &mut v);
            v
        }
    }
}

/// Whether `prepare` answers with a constant for this pod.
pub fn is_constant(priority: &impl Priority, pod: &Pod, snapshot: &Snapshot) -> Option<i64> {
    let cx = CycleContext::new(pod, snapshot);
    let feasible: Vec<u32> = (0..snapshot.len() as u32).collect();
    match priority.prepare(&cx, &feasible).unwrap() {
        PreparedScore::Constant(c) => Some(c),
        _ => None,
    }
}
