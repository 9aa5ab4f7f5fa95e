//! kube's pod nominator (`backend/queue`'s `nominator`): which pending pods are nominated to
//! which node, and kube's `RunFilterPluginsWithNominatedPods`, which counts the pods nominated
//! to a node, of the incoming pod's priority or higher, as if they ran there.

use std::collections::HashMap;

use crate::framework::{PodRequests, Reason};
use crate::model::{Pod, PodKey};
use crate::profile::{Cache, Profile, ScheduleError, ScheduleResult};
use crate::snapshot::Snapshot;

/// `Ok(())` when the pod fits, else the failing predicates (indices) and their reasons.
pub(super) type Fit = Result<(), Vec<(u16, Reason)>>;

fn priority(p: &Pod) -> i32 {
    p.spec.priority.unwrap_or(0)
}

/// Whether `a` and `b` have the same `namespace/name` (without building the keys).
fn same_pod(a: &Pod, b: &Pod) -> bool {
    a.metadata.name == b.metadata.name && a.metadata.namespace == b.metadata.namespace
}

/// Pending pods nominated to nodes, by preemption (the engine's own nominations) or by the
/// pods' `status.nominatedNodeName` as the informer reports them.
///
/// kube's rules: adding a pod replaces its earlier nomination; a nomination given by the
/// scheduler (`Some(node)` in [`Nominator::add`], kube's `ModeOverride`) wins over the pod's
/// status, otherwise the status decides (`ModeNoop`), and an empty node removes it; an update
/// whose old and new pod both have no `nominatedNodeName` keeps the nomination the scheduler
/// made in memory; a pod that is deleted, bound or assumed loses its nomination. Pods keep the
/// order in which they were nominated to a node.
///
/// ```
/// use sched_core::model::Pod;
/// use sched_core::scheduler::Nominator;
///
/// let mut pod = Pod::default();
/// pod.metadata.namespace = "default".into();
/// pod.metadata.name = "p".into();
/// let mut nominator = Nominator::default();
/// nominator.add(pod.clone(), Some("node1")); // preemption chose node1
/// assert_eq!(nominator.node_of("default/p"), Some("node1"));
/// nominator.update(pod.clone()); // an update without a nominatedNodeName keeps it
/// assert_eq!(nominator.pods_on("node1").len(), 1);
/// pod.status.nominated_node_name = "node2".into();
/// nominator.update(pod); // the status moved it
/// assert_eq!(nominator.node_of("default/p"), Some("node2"));
/// nominator.delete("default/p");
/// assert!(nominator.is_empty());
/// ```
#[derive(Clone, Debug, Default)]
pub struct Nominator {
    /// Node name to the pods nominated there, in the order nominated.
    by_node: HashMap<String, Vec<Pod>>,
    /// Pod key to its node.
    by_pod: HashMap<PodKey, String>,
}

impl Nominator {
    /// An empty nominator.
    pub fn new() -> Nominator {
        Nominator::default()
    }

    /// Whether no pod is nominated.
    pub fn is_empty(&self) -> bool {
        self.by_pod.is_empty()
    }

    /// How many pods are nominated.
    pub fn len(&self) -> usize {
        self.by_pod.len()
    }

    /// The node `pod` (`namespace/name`) is nominated to.
    pub fn node_of(&self, pod: &str) -> Option<&str> {
        self.by_pod.get(pod).map(String::as_str)
    }

    /// Every nomination: (`namespace/name`, node), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.by_pod.iter().map(|(p, n)| (p.as_str(), n.as_str()))
    }

    /// The pods nominated to `node`, in the order nominated.
    pub fn pods_on(&self, node: &str) -> &[Pod] {
        self.by_node.get(node).map_or(&[], Vec::as_slice)
    }

    /// Nominates `pod` (kube's `AddNominatedPod`): to `node` when given (the scheduler's
    /// decision), else to its `status.nominatedNodeName`; an empty node name only removes the
    /// pod's nomination. A pod bound to a node (`spec.nodeName`) is not nominated.
    pub fn add(&mut self, pod: Pod, node: Option<&str>) {
        let key = pod.key();
        self.delete(&key);
        let node = match node {
            Some(n) => n.to_string(),
            None => pod.status.nominated_node_name.clone(),
        };
        if node.is_empty() || !pod.spec.node_name.is_empty() {
            return;
        }
        self.by_pod.insert(key, node.clone());
        self.by_node.entry(node).or_default().push(pod);
    }

    /// A nominated or pending pod changed (kube's `UpdateNominatedPod`): the new object
    /// replaces the old one; when neither has a `nominatedNodeName`, the scheduler's own
    /// nomination stays, otherwise the new status decides.
    pub fn update(&mut self, pod: Pod) {
        let key = pod.key();
        let mut keep: Option<String> = None;
        if let Some(node) = self.by_pod.get(&key) {
            let old_status = self
                .pods_on(node)
                .iter()
                .find(|p| p.key() == key)
                .map(|p| p.status.nominated_node_name.is_empty())
                .unwrap_or(true);
            if old_status && pod.status.nominated_node_name.is_empty() {
                keep = Some(node.clone());
            }
        }
        self.add(pod, keep.as_deref());
    }

    /// Removes the nomination of `pod` (`namespace/name`); returns the node it had.
    pub fn delete(&mut self, pod: &str) -> Option<String> {
        let node = self.by_pod.remove(pod)?;
        if let Some(pods) = self.by_node.get_mut(&node) {
            pods.retain(|p| p.key() != pod);
            if pods.is_empty() {
                self.by_node.remove(&node);
            }
        }
        Some(node)
    }

    /// The pods nominated to `node` with a priority of at least `pod`'s, other than `pod`
    /// (what kube's `addGENominatedPods` adds).
    fn holding(&self, node: &str, pod: &Pod) -> Vec<&Pod> {
        self.pods_on(node)
            .iter()
            .filter(|p| priority(p) >= priority(pod) && !same_pod(p, pod))
            .collect()
    }

    /// The pods nominated to `node` with a priority below `pod`'s (kube's
    /// `getLowerPriorityNominatedPods`).
    pub fn lower_priority_on(&self, node: &str, pod: &Pod) -> Vec<PodKey> {
        self.pods_on(node)
            .iter()
            .filter(|p| priority(p) < priority(pod))
            .map(Pod::key)
            .collect()
    }

    /// Whether any node holds a pod nominated there for `pod` (see [`Nominator::fits`]).
    pub fn holds_any(&self, pod: &Pod) -> bool {
        self.by_node
            .values()
            .flatten()
            .any(|p| priority(p) >= priority(pod) && !same_pod(p, pod))
    }

    /// kube's `RunFilterPluginsWithNominatedPods` for `pod` on the node at `index`: the
    /// profile's predicates with the pods nominated there (priority at least the pod's, not
    /// the pod itself) added to the node, then, if that passes and there were any, without
    /// them (a nominated pod may satisfy pod affinity without being there yet). The snapshot
    /// is restored before returning. `Ok(Ok(()))` when the pod fits, else the failing
    /// predicates (indices) and reasons.
    ///
    /// # Errors
    /// A plugin that fails to prepare for the pod.
    pub fn fits(
        &self,
        profile: &Profile,
        snapshot: &mut Snapshot,
        pod: &Pod,
        index: usize,
    ) -> Result<Result<(), Vec<(String, Reason)>>, ScheduleError> {
        let names = |r: Vec<(u16, Reason)>| -> Vec<(String, Reason)> {
            let all: Vec<&str> = profile.predicate_names().collect();
            r.into_iter()
                .map(|(i, r)| (all[i as usize].to_string(), r))
                .collect()
        };
        Ok(self
            .fits_indexed(profile, snapshot, pod, index)?
            .map_err(names))
    }

    pub(crate) fn fits_indexed(
        &self,
        profile: &Profile,
        snapshot: &mut Snapshot,
        pod: &Pod,
        index: usize,
    ) -> Result<Fit, ScheduleError> {
        if !self.holds_on(snapshot, pod, index) {
            // Nothing held there: one pass, as kube's loop breaks after it.
            return profile.fits_on_indexed(pod, snapshot, index);
        }
        let skipped = profile.skipped_predicates(pod, snapshot)?;
        self.fits_indexed_skipping(profile, snapshot, pod, index, &skipped, None)
    }

    /// [`Nominator::fits_indexed`] where the predicates `skipped` marks (those that skipped
    /// the pod at the start of its cycle, [`Profile::skipped_predicates`]) stay skipped,
    /// whatever the pods added or removed since make their prepare say: kube keeps the
    /// PreFilter's skips in the cycle state for the whole cycle, preemption's dry run
    /// included. `requests`: the pod's, when the caller computed them for the profile.
    pub(crate) fn fits_indexed_skipping(
        &self,
        profile: &Profile,
        snapshot: &mut Snapshot,
        pod: &Pod,
        index: usize,
        skipped: &[bool],
        requests: Option<&PodRequests>,
    ) -> Result<Fit, ScheduleError> {
        match self.fits_with_held(profile, snapshot, pod, index, skipped, requests)? {
            // Nothing held there: one pass, as kube's loop breaks after it.
            None | Some(Ok(())) => {
                profile.fits_on_skipping(pod, snapshot, index, skipped, requests)
            }
            Some(Err(reasons)) => Ok(Err(reasons)),
        }
    }

    /// Whether pods nominated to the node at `index` are held there for `pod`.
    pub(crate) fn holds_on(&self, snapshot: &Snapshot, pod: &Pod, index: usize) -> bool {
        !self.by_node.is_empty()
            && snapshot
                .node_infos()
                .get(index)
                .is_some_and(|i| !self.holding(i.name(), pod).is_empty())
    }

    /// The profile's predicates for `pod` on the node at `index` with the pods nominated
    /// there (priority at least the pod's, not the pod itself) assumed onto it, then forgotten
    /// again; the predicates `skipped` marks stay skipped. `None` when no such pod could be
    /// added (nothing is held there for `pod`).
    fn fits_with_held(
        &self,
        profile: &Profile,
        snapshot: &mut Snapshot,
        pod: &Pod,
        index: usize,
        skipped: &[bool],
        requests: Option<&PodRequests>,
    ) -> Result<Option<Fit>, ScheduleError> {
        // Nothing nominated anywhere, or nothing held on this node: no copies, no lookups.
        if self.by_node.is_empty() {
            return Ok(None);
        }
        let Some(name) = snapshot.node_infos().get(index).map(|i| i.name()) else {
            return Ok(None);
        };
        let held = self.holding(name, pod);
        if held.is_empty() {
            return Ok(None);
        }
        let node = name.to_string();
        let mut added = Vec::new();
        for p in held {
            // A nominated pod the snapshot cannot take (already there, or past int64) is
            // left out.
            if snapshot.node_of(&p.key()).is_none() && snapshot.assume(p.clone(), &node).is_ok() {
                added.push(p.key());
            }
        }
        if added.is_empty() {
            return Ok(None);
        }
        let with = profile.fits_on_skipping(pod, snapshot, index, skipped, requests);
        for k in &added {
            let _ = snapshot.forget(k);
        }
        with.map(Some)
    }

    /// [`Profile::schedule`] for `pod` with the pods nominated to nodes held there (kube's
    /// filter with nominated pods, `RunFilterPluginsWithNominatedPods`, over every node): a
    /// node where the pod does not fit beside the pods nominated there of at least its
    /// priority is infeasible, for the reason it fails with. kube tries a pod's own nominated
    /// node first; this is the search after that, and a nominated node in the snapshot where
    /// the pod does not fit counts as processed by it (kube's start index moves past it too,
    /// and [`Profile::last_evaluated`] lists it) even when the search stops before reaching
    /// it. The pod is not assumed; the snapshot is left as it was, and the cache's score table
    /// is the cycle's ([`Profile::last_scores`]).
    ///
    /// # Errors
    /// As [`Profile::schedule`].
    pub fn schedule(
        &self,
        profile: &Profile,
        cache: &mut Cache,
        pod: &Pod,
        snapshot: &mut Snapshot,
    ) -> Result<ScheduleResult, ScheduleError> {
        let blocked = if self.holds_any(pod) {
            self.blocked(profile, snapshot, pod)?
        } else {
            Vec::new()
        };
        let mut result = profile.schedule_blocked(cache, pod, snapshot, &blocked);
        // kube's evaluateNominatedNode left the nominated node's status in the cycle's
        // diagnosis (after PreFilter passed: the search ran and evaluated something; a gated
        // pod never gets there).
        if matches!(&result, Ok(_) | Err(ScheduleError::Unschedulable(_)))
            && let Some(index) = snapshot.index_of(&pod.status.nominated_node_name)
            && !profile.last_evaluated(cache).is_empty()
            && let Ok(Err(reasons)) = self.fits_indexed(profile, snapshot, pod, index)
            && let Some(&(predicate, reason)) = reasons.first()
            && cache.count_tried_first(snapshot.len(), index, predicate, reason)
            && let Ok(r) = &mut result
        {
            r.evaluated_nodes += 1;
        }
        result
    }

    /// The nodes where `pod` does not fit beside the pods nominated there, each with its
    /// first failing predicate and reason: what the filter pass must treat as infeasible.
    pub(crate) fn blocked(
        &self,
        profile: &Profile,
        snapshot: &mut Snapshot,
        pod: &Pod,
    ) -> Result<Vec<(u32, u16, Reason)>, ScheduleError> {
        let key = pod.key();
        let mut nodes: Vec<usize> = self
            .by_node
            .iter()
            .filter(|(_, pods)| {
                pods.iter()
                    .any(|p| priority(p) >= priority(pod) && p.key() != key)
            })
            .filter_map(|(n, _)| snapshot.index_of(n))
            .collect();
        nodes.sort_unstable();
        let mut out = Vec::new();
        if nodes.is_empty() {
            return Ok(out);
        }
        let skipped = profile.skipped_predicates(pod, snapshot)?;
        for index in nodes {
            if let Some(Err(reasons)) =
                self.fits_with_held(profile, snapshot, pod, index, &skipped, None)?
            {
                let (pi, r) = reasons[0];
                out.push((index as u32, pi, r));
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, priority: i32, nnn: &str) -> Pod {
        let mut p = Pod::default();
        p.metadata.namespace = "ns".into();
        p.metadata.name = name.into();
        p.spec.priority = Some(priority);
        p.status.nominated_node_name = nnn.into();
        p
    }

    /// Nodes held by nominated pods count as infeasible while the filter looks for
    /// `numFeasibleNodesToFind` nodes: it goes on past them, and the round-robin index moves
    /// past the last node it needed (kube's filter with nominated pods, node by node).
    #[test]
    fn held_nodes_do_not_count_towards_the_nodes_to_find() {
        use crate::plugins::node::PodFitsResources;
        use crate::profile::ProfileBuilder;
        let nodes: Vec<crate::model::Node> = (0..150)
            .map(|i| {
                serde_json::from_value(serde_json::json!({"metadata": {"name": format!("n{i:03}")},
                    "status": {"allocatable": {"pods": "1"}}}))
                .unwrap()
            })
            .collect();
        for fast in [true, false] {
            let mut snapshot = Snapshot::from_objects(nodes.clone(), vec![]).unwrap();
            let profile = ProfileBuilder::new()
                .predicate(PodFitsResources::new())
                .percentage_of_nodes_to_score(50)
                .fast_path(fast)
                .build()
                .unwrap();
            let mut n = Nominator::new();
            for i in 0..10 {
                n.add(pod(&format!("held{i}"), 10, ""), Some(&format!("n{i:03}")));
            }
            let incoming = pod("new", 0, "");
            let blocked = n.blocked(&profile, &mut snapshot, &incoming).unwrap();
            assert_eq!(blocked.len(), 10);
            let mut cache = profile.create_cache();
            let r = profile
                .assume_after(&mut cache, &incoming, &mut snapshot, &blocked, None)
                .unwrap();
            // 150 nodes at 50%: 100 nodes to find; the 10 held ones are evaluated too.
            assert_eq!(
                (r.feasible_nodes, r.evaluated_nodes),
                (100, 110),
                "fast {fast}"
            );
            assert!(r.node.as_str() >= "n010", "{}", r.node);
            assert_eq!(cache.next_start_index(), 110);
            // A pod of higher priority than the held ones is not held back.
            let _ = snapshot.forget("ns/new");
            let high = pod("high", 11, "");
            assert!(
                n.blocked(&profile, &mut snapshot, &high)
                    .unwrap()
                    .is_empty()
            );
            assert!(!n.holds_any(&high));
        }
    }

    fn snapshot_of(n: &Nominator) -> Vec<(String, String)> {
        let mut v: Vec<(String, String)> = n
            .by_pod
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        v.sort();
        for (node, pods) in &n.by_node {
            for p in pods {
                assert_eq!(n.node_of(&p.key()), Some(node.as_str()));
            }
        }
        v
    }

    /// kube's TestPriorityQueue_UpdateNominatedPodForNode (backend/queue), without the step
    /// that nominates a pod the informer no longer has (the engine removes a nomination when
    /// the pod's deletion arrives).
    #[test]
    fn kube_update_nominated_pod_for_node() {
        let mut mpp = pod("mpp", 2, "node1");
        mpp.metadata.namespace = "ns2".into();
        let up = pod("up", 0, "node1");
        let hpp = pod("hpp", 3, "");
        let mut n = Nominator::new();
        n.add(mpp.clone(), None);
        n.add(up.clone(), Some("node5"));
        n.add(hpp.clone(), Some("node2"));
        let want = |v: &[(&str, &str)]| -> Vec<(String, String)> {
            v.iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect()
        };
        assert_eq!(
            snapshot_of(&n),
            want(&[
                ("ns/hpp", "node2"),
                ("ns/up", "node5"),
                ("ns2/mpp", "node1")
            ])
        );
        // Nominating again moves it.
        n.add(hpp.clone(), Some("node4"));
        assert_eq!(
            snapshot_of(&n),
            want(&[
                ("ns/hpp", "node4"),
                ("ns/up", "node5"),
                ("ns2/mpp", "node1")
            ])
        );
        assert!(n.pods_on("node2").is_empty());
        // A scheduled pod is not nominated: nothing changes.
        let mut sp = pod("sp", 0, "");
        sp.spec.node_name = "foo".into();
        n.add(sp, Some("node1"));
        assert_eq!(n.len(), 3);
        // Deleting a nominated pod without a nominatedNodeName in its object.
        n.delete("ns/hpp");
        assert_eq!(
            snapshot_of(&n),
            want(&[("ns/up", "node5"), ("ns2/mpp", "node1")])
        );
    }

    #[test]
    fn kube_nominator_rules() {
        let mut n = Nominator::new();
        // ModeNoop with no status: nothing.
        n.add(pod("a", 1, ""), None);
        assert!(n.is_empty());
        // From the status.
        n.add(pod("a", 1, "n1"), None);
        assert_eq!(n.node_of("ns/a"), Some("n1"));
        // Override wins; the old entry goes.
        n.add(pod("a", 1, "n1"), Some("n2"));
        assert_eq!(n.node_of("ns/a"), Some("n2"));
        assert!(n.pods_on("n1").is_empty());
        // Status cleared by someone else: old status had n1, new has none -> removed.
        n.add(pod("b", 1, "n1"), None);
        n.update(pod("b", 1, ""));
        assert_eq!(n.node_of("ns/b"), None);
        // Override ""clears.
        n.add(pod("a", 1, ""), Some(""));
        assert_eq!(n.node_of("ns/a"), None);
        // A bound pod is not nominated.
        let mut bound = pod("c", 1, "n1");
        bound.spec.node_name = "n1".into();
        n.add(bound, None);
        assert_eq!(n.node_of("ns/c"), None);
        // Order on a node is the order nominated; lower priorities listed.
        n.add(pod("x", 5, ""), Some("n3"));
        n.add(pod("y", 1, ""), Some("n3"));
        let names: Vec<_> = n
            .pods_on("n3")
            .iter()
            .map(|p| p.metadata.name.clone())
            .collect();
        assert_eq!(names, ["x", "y"]);
        assert_eq!(n.lower_priority_on("n3", &pod("z", 3, "")), ["ns/y"]);
        assert!(n.holds_any(&pod("z", 3, "")));
        assert!(!n.holds_any(&pod("z", 6, "")));
        assert_eq!(n.len(), 2);
    }
}
