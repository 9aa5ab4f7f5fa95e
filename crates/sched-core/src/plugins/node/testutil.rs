//! Builders and runners shared by the node plugin tests.

use crate::framework::{CycleContext, Predicate, Prepared, PreparedScore, Priority, Reason};
use crate::model::{Container, Node, Pod, Quantity, ResourceList, Taint, TaintEffect, Toleration};
use crate::snapshot::Snapshot;

pub(crate) fn list(pairs: &[(&str, &str)]) -> ResourceList {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.parse::<Quantity>().unwrap()))
        .collect()
}

pub(crate) fn node(name: &str) -> Node {
    let mut n = Node::default();
    n.metadata.name = name.into();
    n
}

pub(crate) fn labeled(name: &str, labels: &[(&str, &str)]) -> Node {
    let mut n = node(name);
    n.metadata.labels = labels
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    n
}

pub(crate) fn tainted(name: &str, taints: &[(&str, &str, TaintEffect)]) -> Node {
    let mut n = node(name);
    n.spec.taints = taints
        .iter()
        .map(|(k, v, e)| Taint {
            key: k.to_string(),
            value: v.to_string(),
            effect: *e,
        })
        .collect();
    n
}

pub(crate) fn pod() -> Pod {
    let mut p = Pod::default();
    p.metadata.name = "pod".into();
    p.metadata.namespace = "default".into();
    p
}

pub(crate) fn container(requests: &[(&str, &str)]) -> Container {
    let mut c = Container::default();
    c.resources.requests = list(requests);
    c
}

pub(crate) fn with_tolerations(tolerations: Vec<Toleration>) -> Pod {
    let mut p = pod();
    p.spec.tolerations = tolerations;
    p
}

/// A snapshot of `nodes` with `pods[i]` bound to `nodes[pods[i].0]` (pods are renamed to be
/// unique).
pub(crate) fn snapshot(nodes: Vec<Node>, pods: Vec<(usize, Pod)>) -> Snapshot {
    let names: Vec<String> = nodes.iter().map(|n| n.metadata.name.clone()).collect();
    let pods = pods
        .into_iter()
        .enumerate()
        .map(|(i, (n, mut p))| {
            p.metadata.name = format!("existing-{i}");
            p.metadata.namespace = "default".into();
            p.spec.node_name = names[n].clone();
            p
        })
        .collect();
    Snapshot::from_objects(nodes, pods).unwrap()
}

/// Prepares `p` for `pod` and filters node `i` (a skipped predicate passes).
pub(crate) fn filter(
    p: &impl Predicate,
    pod: &Pod,
    snap: &Snapshot,
    i: usize,
) -> Result<(), Reason> {
    filter_all(p, pod, snap)[i]
}

/// Prepares `p` for `pod` and filters every node.
pub(crate) fn filter_all(
    p: &impl Predicate,
    pod: &Pod,
    snap: &Snapshot,
) -> Vec<Result<(), Reason>> {
    let cx = CycleContext::new(pod, snap);
    let (state, names) = match p.prepare(&cx).unwrap() {
        Prepared::Skip | Prepared::Pass => return vec![Ok(()); snap.len()],
        // Every node fails with the rejection's reason, as the profile reports it.
        Prepared::Reject(r) => return vec![Err(r.reason()); snap.len()],
        Prepared::Run(state) => (state, None),
        Prepared::RunOn(state, names) => (state, Some(names)),
    };
    let one: Vec<Result<(), Reason>> = (0..snap.len())
        .map(|i| p.filter(&cx, &state, snap.node(i)))
        .collect();
    // The scheduler filters through `filter_batch`: it must agree with `filter`.
    let nodes: Vec<u32> = (0..snap.len() as u32).collect();
    let mut batch = vec![Err(Reason::Custom(u32::MAX)); snap.len()];
    p.filter_batch(&cx, &state, &nodes, &mut batch);
    assert_eq!(batch, one, "{}: filter_batch differs from filter", p.name());
    // Nodes outside a narrowed set are not filtered: they fail as the profile reports them.
    match names {
        None => one,
        Some(names) => one
            .into_iter()
            .enumerate()
            .map(|(i, o)| {
                if names.contains(snap.node(i).info().name()) {
                    o
                } else {
                    Err(Reason::OutsidePreFilterResult)
                }
            })
            .collect(),
    }
}

/// Whether `p` skips for `pod`.
pub(crate) fn skips(p: &impl Predicate, pod: &Pod, snap: &Snapshot) -> bool {
    let cx = CycleContext::new(pod, snap);
    matches!(p.prepare(&cx).unwrap(), Prepared::Skip)
}

/// Final scores of every node (all feasible), and whether they came from a constant.
pub(crate) fn scores_and_constant(
    p: &impl Priority,
    pod: &Pod,
    snap: &Snapshot,
) -> (Vec<i64>, bool) {
    let cx = CycleContext::new(pod, snap);
    let feasible: Vec<u32> = (0..snap.len() as u32).collect();
    match p.prepare(&cx, &feasible).unwrap() {
        PreparedScore::Constant(c) => (vec![c; snap.len()], true),
        PreparedScore::Run(state) => {
            let mut s: Vec<i64> = (0..snap.len())
                .map(|i| p.score(&cx, &state, snap.node(i)))
                .collect();
            p.normalize(&cx, &state, &mut s);
            (s, false)
        }
    }
}

/// Final scores of every node (all feasible).
pub(crate) fn scores(p: &impl Priority, pod: &Pod, snap: &Snapshot) -> Vec<i64> {
    scores_and_constant(p, pod, snap).0
}

/// kube's text for a reason on node `i`.
pub(crate) fn messages(reason: Reason, pod: &Pod, snap: &Snapshot, i: usize) -> Vec<String> {
    let cx = CycleContext::new(pod, snap);
    let mut out = Vec::new();
    reason.write_messages(
        crate::framework::KubeVersion::V1_34,
        cx.requests(),
        snap.node(i).node(),
        &mut |m| out.push(m.into_owned()),
    );
    out
}
