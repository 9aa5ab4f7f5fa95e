//! The plugin traits with typed per-pod state, and plugins from closures.

use std::borrow::Cow;
use std::collections::BTreeSet;

use super::{CycleContext, PluginError, Reason};
use crate::fast_path::{FastFilter, FastScore, Sealed};
use crate::model::Pod;
use crate::snapshot::{NodeInfo, NodeRef, VolumeBinderId};

/// What a predicate will do for this pod (kube's PreFilter outcome).
#[derive(Debug)]
#[non_exhaustive]
pub enum Prepared<S> {
    /// Every node passes: the pod gives this predicate nothing to check (kube's PreFilter
    /// `Skip`). The skip holds for the whole cycle: where pods are added to a node later in
    /// it (the pods nominated there, preemption's dry run), the predicate is still not run.
    Skip,
    /// Every node passes on this snapshot, but the predicate does not skip the pod (kube runs
    /// its Filter): nothing the pod asks is met by a pod in the cluster, though a pod added to
    /// a node later in the cycle (one nominated there) may be. The profile treats it as
    /// [`Prepared::Skip`] on the snapshot it was prepared on, and prepares the predicate again
    /// where pods are added.
    Pass,
    /// Run `filter` on each node, with this state.
    Run(S),
    /// Run `filter` with this state on the nodes of these names only (kube's
    /// `PreFilterResult`). Every other node fails without being filtered, with "node(s) didn't
    /// satisfy plugin(s) [...]" naming the predicates that narrowed the nodes
    /// ([`Reason::OutsidePreFilterResult`]). The sets of several predicates intersect; an empty
    /// intersection rejects the pod as a whole ("node(s) didn't satisfy plugin X", or
    /// "plugin(s) [X Y] simultaneously"). Names of no node in the snapshot are ignored.
    RunOn(S, BTreeSet<String>),
    /// The pod fits on no node, whatever the node (kube's PreFilter returning
    /// `UnschedulableAndUnresolvable`): no further predicate is prepared and no node is
    /// filtered. Every node fails with the rejection's reason and message, and the FitError of
    /// a [`KubeVersion::V1_34`](super::KubeVersion) profile prints the message alone, without
    /// counting nodes ("0/3 nodes are available: pod has unbound immediate
    /// PersistentVolumeClaims."); v1.20 counted it on every node.
    Reject(Rejection),
}

/// A predicate's rejection of the pod as a whole, before any node is filtered
/// ([`Prepared::Reject`]): the reason every node gets (what preemption and the scheduling
/// queue read) and kube's message, which may name the objects at fault.
///
/// ```
/// use sched_core::framework::{Reason, Rejection};
/// let r = Rejection::new(Reason::UnboundImmediateClaims, "pod has unbound immediate PersistentVolumeClaims");
/// assert_eq!(r.reason(), Reason::UnboundImmediateClaims);
/// assert_eq!(r.message(), "pod has unbound immediate PersistentVolumeClaims");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rejection {
    reason: Reason,
    message: String,
}

impl Rejection {
    /// A rejection for `reason`, worded `message`.
    pub fn new(reason: Reason, message: impl Into<String>) -> Rejection {
        Rejection {
            reason,
            message: message.into(),
        }
    }

    /// The reason every node fails with.
    pub fn reason(&self) -> Reason {
        self.reason
    }

    /// kube's message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// What a priority will do for this pod.
#[derive(Debug)]
#[non_exhaustive]
pub enum PreparedScore<S> {
    /// Every node gets this final (normalized) score; `score` and `normalize` are not called.
    Constant(i64),
    /// Run `score` on each feasible node, then `normalize`, with this state.
    Run(S),
}

/// A filter: can the pod run on this node?
///
/// `prepare` runs once per pod and computes the plugin's [`Predicate::State`]; `filter` then
/// reads it for each node. Implementations must be pure functions of their inputs (the
/// profile may call `filter` on several threads at once and relies on the same answer for the
/// same node), and `filter` must not allocate: resolve the pod's terms in `prepare`.
///
/// ```
/// use sched_core::framework::{CycleContext, PluginError, Predicate, Prepared, Reason};
/// use sched_core::snapshot::NodeRef;
///
/// /// Nodes labelled with the pod's `team` label value only.
/// struct SameTeam;
///
/// impl Predicate for SameTeam {
///     type State = Option<String>; // the pod's team, resolved once per pod
///     fn name(&self) -> &str { "SameTeam" }
///     fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<Self::State>, PluginError> {
///         Ok(match cx.pod().metadata.labels.get("team") {
///             None => Prepared::Skip, // nothing to check for this pod
///             Some(team) => Prepared::Run(Some(team.clone())),
///         })
///     }
///     fn filter(&self, _: &CycleContext<'_>, team: &Option<String>, node: NodeRef<'_>) -> Result<(), Reason> {
///         match node.node().metadata.labels.get("team") {
///             Some(t) if Some(t) == team.as_ref() => Ok(()),
///             _ => Err(Reason::Custom(1)),
///         }
///     }
/// }
/// # let _ = SameTeam;
/// ```
pub trait Predicate: Send + Sync + 'static {
    /// What `prepare` computes for a pod and `filter` reads per node (`()` when nothing).
    type State: Default + Send + Sync + 'static;

    /// The name (kube's legacy name for built-ins).
    fn name(&self) -> &str;

    /// Per-pod preparation. The default runs `filter` on every node with the default state.
    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<Self::State>, PluginError> {
        let _ = cx;
        Ok(Prepared::Run(Self::State::default()))
    }

    /// `Ok` if the node can take the pod, else the first reason it cannot.
    fn filter(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        node: NodeRef<'_>,
    ) -> Result<(), Reason>;

    /// Filters several nodes at once: `out[k]` gets what `filter` would return for the node at
    /// snapshot index `nodes[k]` (`out` is as long as `nodes`, and every element must be
    /// written). The profile calls this with chunks of nodes, so a predicate can read
    /// [`crate::snapshot::Snapshot::summaries`] directly; the default calls `filter` per node.
    /// It must give exactly the answers `filter` gives.
    fn filter_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        nodes: &[u32],
        out: &mut [Result<(), Reason>],
    ) {
        let snapshot = cx.snapshot();
        for (o, &i) in out.iter_mut().zip(nodes) {
            *o = self.filter(cx, state, snapshot.node(i as usize));
        }
    }

    /// Text of a [`Reason::Custom`] code this predicate returns.
    fn explain(&self, code: u32) -> Cow<'static, str> {
        Cow::Owned(format!("node(s) failed {} (code {code})", self.name()))
    }

    /// The fast-path form of this predicate for the prepared pod (built-ins only; sealed).
    #[doc(hidden)]
    fn fast_filter(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        seal: Sealed,
    ) -> Option<FastFilter> {
        let _ = (cx, state, seal);
        None
    }

    /// The error behind a [`Reason`] for which [`Reason::is_error`] holds, which `filter`
    /// gave `node`: kube's Filter status `Error`, which fails the whole attempt (the pod backs
    /// off) instead of the node. Called only then, so it may redo the work to find the text.
    /// The default has none (the reason's message stands in). Only built-in reasons are
    /// errors today (DynamicResources' allocator errors), so only built-in plugins get here.
    fn filter_error(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        node: NodeRef<'_>,
    ) -> Option<String> {
        let _ = (cx, state, node);
        None
    }

    /// Whether `filter` may return a reason for which [`Reason::is_error`] holds (built-ins
    /// only; sealed). The filter pass may run a later predicate before this one on a node only
    /// when no predicate before it may give an error, since kube fails the attempt on the first
    /// error a node's filters give in order.
    #[doc(hidden)]
    fn may_error(&self, seal: Sealed) -> bool {
        let _ = seal;
        false
    }

    /// kube's PreEnqueue: `Err(message)` keeps the pod out of scheduling (it is not
    /// attempted, so it gets no FitError) until an event may change the answer. The default
    /// lets every pod in.
    fn pre_enqueue(&self, pod: &Pod, snapshot: &crate::snapshot::Snapshot) -> Result<(), String> {
        let _ = (pod, snapshot);
        Ok(())
    }

    /// The volume binder whose assumed PersistentVolumes and claims this predicate reads, for
    /// the profile's Reserve (built-in VolumeBinding only; sealed).
    #[doc(hidden)]
    fn volume_binder(&self, seal: Sealed) -> Option<VolumeBinderId> {
        let _ = seal;
        None
    }
}

/// A score: how good is this node for the pod, on the framework scale 0..=100 after
/// normalization.
///
/// `prepare` runs once per pod and computes the plugin's [`Priority::State`]; `score` runs per
/// feasible node and must not allocate; `normalize` then sees the raw scores of all feasible
/// nodes at once (index-aligned with the feasible list) and rewrites them.
pub trait Priority: Send + Sync + 'static {
    /// What `prepare` computes for a pod and `score` / `normalize` read (`()` when nothing).
    type State: Default + Send + Sync + 'static;

    /// The name (kube's legacy name for built-ins).
    fn name(&self) -> &str;

    /// Per-pod preparation; `feasible` lists the snapshot indices of the nodes that passed
    /// filtering. The default scores every node with the default state.
    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        let _ = (cx, feasible);
        Ok(PreparedScore::Run(Self::State::default()))
    }

    /// The raw score of a node.
    fn score(&self, cx: &CycleContext<'_>, state: &Self::State, node: NodeRef<'_>) -> i64;

    /// Scores several nodes at once: `out[k]` gets what `score` would return for the node at
    /// snapshot index `nodes[k]` (`out` is as long as `nodes`, and every element must be
    /// written). The profile scores the feasible nodes in chunks, so a priority can read
    /// [`crate::snapshot::Snapshot::summaries`] directly; the default calls `score` per node.
    /// It must give exactly the scores `score` gives.
    fn score_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        nodes: &[u32],
        out: &mut [i64],
    ) {
        let snapshot = cx.snapshot();
        for (o, &i) in out.iter_mut().zip(nodes) {
            *o = self.score(cx, state, snapshot.node(i as usize));
        }
    }

    /// Rewrites raw scores into 0..=100. The default leaves them as they are.
    fn normalize(&self, cx: &CycleContext<'_>, state: &Self::State, scores: &mut [i64]) {
        let _ = (cx, state, scores);
    }

    /// The fast-path form of this priority for the prepared pod (built-ins only; sealed): it
    /// gives every node the score that `score` followed by `normalize` gives.
    #[doc(hidden)]
    fn fast_score(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        seal: Sealed,
    ) -> Option<FastScore> {
        let _ = (cx, state, seal);
        None
    }
}

/// A predicate from a closure over the pod and the node.
///
/// ```
/// use sched_core::framework::{predicate_fn, Reason};
/// let gpu_only = predicate_fn("GpuNodesOnly", |_pod, node| {
///     if node.node().metadata.labels.contains_key("gpu") { Ok(()) } else { Err(Reason::Custom(1)) }
/// });
/// # let _ = gpu_only;
/// ```
pub fn predicate_fn<F>(name: impl Into<String>, f: F) -> impl Predicate
where
    F: Fn(&Pod, &NodeInfo) -> Result<(), Reason> + Send + Sync + 'static,
{
    FnPredicate {
        name: name.into(),
        f,
    }
}

struct FnPredicate<F> {
    name: String,
    f: F,
}

impl<F> Predicate for FnPredicate<F>
where
    F: Fn(&Pod, &NodeInfo) -> Result<(), Reason> + Send + Sync + 'static,
{
    type State = ();

    fn name(&self) -> &str {
        &self.name
    }

    fn filter(&self, cx: &CycleContext<'_>, _: &(), node: NodeRef<'_>) -> Result<(), Reason> {
        (self.f)(cx.pod(), node.info())
    }
}

/// A priority from a closure returning a score in 0..=100 for the pod on the node.
pub fn priority_fn<F>(name: impl Into<String>, f: F) -> impl Priority
where
    F: Fn(&Pod, &NodeInfo) -> i64 + Send + Sync + 'static,
{
    FnPriority {
        name: name.into(),
        f,
    }
}

struct FnPriority<F> {
    name: String,
    f: F,
}

impl<F> Priority for FnPriority<F>
where
    F: Fn(&Pod, &NodeInfo) -> i64 + Send + Sync + 'static,
{
    type State = ();

    fn name(&self) -> &str {
        &self.name
    }

    fn score(&self, cx: &CycleContext<'_>, _: &(), node: NodeRef<'_>) -> i64 {
        (self.f)(cx.pod(), node.info())
    }
}
