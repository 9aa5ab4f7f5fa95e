//! The plugin interface: [`Predicate`] (filter) and [`Priority`] (score), plus the per-pod
//! [`CycleContext`] they share and the [`Reason`] codes a failing node gets.
//!
//! Each plugin is called once per pod to `prepare` (kube's PreFilter/PreScore): it resolves the
//! pod's terms against the snapshot, and may say it has nothing to do for this pod, which is
//! how the scheduler avoids work for pods without tolerations, ports or affinity. Then `filter`
//! or `score` runs per node and must not allocate.
//!
//! A closure is enough for a simple predicate:
//!
//! ```
//! use sched_core::framework::{predicate_fn, Reason};
//! let gpu_only = predicate_fn("GpuNodesOnly", |_pod, node| {
//!     if node.node().metadata.labels.contains_key("gpu") { Ok(()) } else { Err(Reason::Custom(1)) }
//! });
//! # let _ = gpu_only;
//! ```

use std::any::Any;
use std::borrow::Cow;
use std::fmt;

use crate::dense::{DenseFilter, DenseScore};
use crate::model::{Node, Pod, Resources, pod_non_zero_requests, pod_requests};
use crate::snapshot::{NodeInfo, NodeRef, Snapshot};

/// A set of resources a node lacks: bit 0 CPU, 1 memory, 2 ephemeral storage, 3 pod count,
/// bit `4 + i` the pod's i-th scalar request (see [`CycleContext::requests`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceSet(pub u64);

impl ResourceSet {
    /// CPU.
    pub const CPU: u64 = 1;
    /// Memory.
    pub const MEMORY: u64 = 1 << 1;
    /// Ephemeral storage.
    pub const EPHEMERAL_STORAGE: u64 = 1 << 2;
    /// Pod count.
    pub const PODS: u64 = 1 << 3;

    /// The bit of the pod's i-th scalar request (indices past 59 share the last bit).
    pub fn scalar_bit(i: usize) -> u64 {
        1 << (4 + i.min(59))
    }
}

/// Why a node cannot take the pod. `Copy` and small, so the filter loop never builds text;
/// [`Reason::write_messages`] renders kube's wording on demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Reason {
    /// Not enough of these resources (one message per resource: "Insufficient cpu", ...,
    /// "Too many pods").
    Insufficient(ResourceSet),
    /// A requested host port is taken.
    PortsConflict,
    /// `spec.nodeName` names another node.
    NodeNameMismatch,
    /// nodeSelector or required node affinity does not match.
    NodeSelectorMismatch,
    /// A GCE PD, EBS, RBD or iSCSI volume conflicts with one in use.
    DiskConflict,
    /// The node's taint at this index of `spec.taints` is not tolerated.
    UntoleratedTaint(u16),
    /// The node is cordoned.
    Unschedulable,
    /// The Ready condition is not True.
    NotReady,
    /// The network is unavailable.
    NetworkUnavailable,
    /// Memory pressure.
    MemoryPressure,
    /// Disk pressure.
    DiskPressure,
    /// PID pressure.
    PidPressure,
    /// Labels required (or forbidden) by CheckNodeLabelPresence.
    LabelPresenceViolated,
    /// The pod's required pod affinity is not satisfied.
    PodAffinityRulesNotMatch,
    /// The pod's required pod anti-affinity is violated.
    PodAntiAffinityRulesNotMatch,
    /// An existing pod's required anti-affinity forbids the pod here.
    ExistingPodsAntiAffinityRulesNotMatch,
    /// Service affinity (CheckServiceAffinity) is violated.
    ServiceAffinityViolated,
    /// A custom predicate's code; its text comes from [`Predicate::explain`].
    Custom(u32),
}

impl Reason {
    /// Calls `out` with each of kube's messages for this reason. `requests` are the pod's
    /// effective requests (for scalar names) and `node` the node (for taints). Custom reasons
    /// are rendered by [`Predicate::explain`] instead, so this gives them a generic text.
    pub fn write_messages(
        &self,
        requests: &Resources,
        node: &Node,
        out: &mut dyn FnMut(Cow<'static, str>),
    ) {
        match *self {
            Reason::Insufficient(set) => {
                let bits = set.0;
                if bits & ResourceSet::PODS != 0 {
                    out("Too many pods".into());
                }
                if bits & ResourceSet::CPU != 0 {
                    out("Insufficient cpu".into());
                }
                if bits & ResourceSet::MEMORY != 0 {
                    out("Insufficient memory".into());
                }
                if bits & ResourceSet::EPHEMERAL_STORAGE != 0 {
                    out("Insufficient ephemeral-storage".into());
                }
                for (i, (name, _)) in requests.scalar.iter().enumerate() {
                    if bits & ResourceSet::scalar_bit(i) != 0 {
                        out(format!("Insufficient {name}").into());
                    }
                }
            }
            Reason::PortsConflict => {
                out("node(s) didn't have free ports for the requested pod ports".into())
            }
            Reason::NodeNameMismatch => out("node(s) didn't match the requested node name".into()),
            Reason::NodeSelectorMismatch => {
                out("node(s) didn't match Pod's node affinity/selector".into())
            }
            Reason::DiskConflict => out("node(s) had no available disk".into()),
            Reason::UntoleratedTaint(i) => match node.spec.taints.get(i as usize) {
                Some(t) => {
                    out(format!("node(s) had untolerated taint {{{}: {}}}", t.key, t.value).into())
                }
                None => out("node(s) had untolerated taint".into()),
            },
            Reason::Unschedulable => out("node(s) were unschedulable".into()),
            Reason::NotReady => out("node(s) were not ready".into()),
            Reason::NetworkUnavailable => out("node(s) had unavailable network".into()),
            Reason::MemoryPressure => out("node(s) had memory pressure".into()),
            Reason::DiskPressure => out("node(s) had disk pressure".into()),
            Reason::PidPressure => out("node(s) had pid pressure".into()),
            Reason::LabelPresenceViolated => out("node(s) didn't have the requested labels".into()),
            Reason::PodAffinityRulesNotMatch => {
                out("node(s) didn't match pod affinity rules".into())
            }
            Reason::PodAntiAffinityRulesNotMatch => {
                out("node(s) didn't match pod anti-affinity rules".into())
            }
            Reason::ExistingPodsAntiAffinityRulesNotMatch => {
                out("node(s) didn't satisfy existing pods anti-affinity rules".into())
            }
            Reason::ServiceAffinityViolated => out("node(s) didn't match service affinity".into()),
            Reason::Custom(code) => out(format!("custom reason {code}").into()),
        }
    }
}

/// What the scheduler knows about the pod being placed, computed once per cycle.
#[derive(Debug)]
pub struct CycleContext<'a> {
    pod: &'a Pod,
    snapshot: &'a Snapshot,
    requests: Resources,
    non_zero: (i64, i64),
}

impl<'a> CycleContext<'a> {
    /// The pod's requests and non-zero requests, for reuse once the cycle is over.
    pub(crate) fn into_requests(self) -> (Resources, (i64, i64)) {
        (self.requests, self.non_zero)
    }

    /// Precomputes the pod's requests.
    pub fn new(pod: &'a Pod, snapshot: &'a Snapshot) -> Self {
        CycleContext {
            pod,
            snapshot,
            requests: pod_requests(pod),
            non_zero: pod_non_zero_requests(pod),
        }
    }

    /// The pod being scheduled.
    #[inline]
    pub fn pod(&self) -> &'a Pod {
        self.pod
    }

    /// The cluster.
    #[inline]
    pub fn snapshot(&self) -> &'a Snapshot {
        self.snapshot
    }

    /// The pod's effective requests (see [`crate::model::pod_requests`]).
    #[inline]
    pub fn requests(&self) -> &Resources {
        &self.requests
    }

    /// The pod's non-zero CPU (milli) and memory (bytes) requests.
    #[inline]
    pub fn non_zero_requests(&self) -> (i64, i64) {
        self.non_zero
    }
}

/// Per-pod state a plugin computed in `prepare` and reads per node.
#[derive(Default)]
pub struct PluginState(Option<Box<dyn Any + Send + Sync>>);

impl PluginState {
    /// No state.
    pub fn none() -> Self {
        PluginState(None)
    }

    /// Wraps a value.
    pub fn new<T: Any + Send + Sync>(v: T) -> Self {
        PluginState(Some(Box::new(v)))
    }

    /// The value, if it is a `T`.
    #[inline]
    pub fn get<T: Any>(&self) -> Option<&T> {
        self.0.as_deref().and_then(|b| b.downcast_ref())
    }
}

impl fmt::Debug for PluginState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() {
            "PluginState(..)"
        } else {
            "PluginState(none)"
        })
    }
}

/// What a predicate will do for this pod.
#[derive(Debug)]
#[non_exhaustive]
pub enum Prepared {
    /// Every node passes: the pod gives this predicate nothing to check.
    Skip,
    /// Run `filter` on each node, with this state.
    Run(PluginState),
}

/// What a priority will do for this pod.
#[derive(Debug)]
#[non_exhaustive]
pub enum PreparedScore {
    /// Every node gets this final (normalized) score; `score` and `normalize` are not called.
    Constant(i64),
    /// Run `score` on each feasible node, then `normalize`, with this state.
    Run(PluginState),
}

/// A plugin failed to prepare (bad argument for this pod, inconsistent input). The pod is not
/// scheduled and the error is returned to the caller.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("plugin {plugin}: {message}")]
pub struct PluginError {
    /// Plugin name.
    pub plugin: String,
    /// What went wrong.
    pub message: String,
}

/// A filter: can the pod run on this node?
///
/// Implementations must be pure functions of their inputs (the scheduler may call `filter` on
/// several threads at once and relies on the same answer for the same node), and `filter`
/// must not allocate: resolve the pod's terms in `prepare`.
pub trait Predicate: Send + Sync {
    /// The name (kube's legacy name for built-ins).
    fn name(&self) -> &str;

    /// Per-pod preparation. The default runs `filter` on every node without state.
    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared, PluginError> {
        let _ = cx;
        Ok(Prepared::Run(PluginState::none()))
    }

    /// `Ok` if the node can take the pod, else the first reason it cannot.
    fn filter(
        &self,
        cx: &CycleContext<'_>,
        state: &PluginState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason>;

    /// Filters several nodes at once: `out[k]` gets what `filter` would return for the node at
    /// snapshot index `nodes[k]` (`out` is as long as `nodes`, and every element must be
    /// written). The scheduler calls this with chunks of nodes, so a predicate can look up its
    /// state once per chunk and read [`Snapshot::summaries`] directly; the default calls
    /// `filter` per node. It must give exactly the answers `filter` gives.
    fn filter_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &PluginState,
        nodes: &[u32],
        out: &mut [Result<(), Reason>],
    ) {
        let snapshot = cx.snapshot();
        for (o, &i) in out.iter_mut().zip(nodes) {
            *o = self.filter(cx, state, snapshot.node(i as usize));
        }
    }

    /// The summary-only form of this predicate for the prepared pod, if it has one (see
    /// [`crate::dense`]): the node passes `filter` exactly when it passes the dense filter.
    /// Only built-in predicates have one; the default is `None`.
    fn dense(&self, cx: &CycleContext<'_>, state: &PluginState) -> Option<DenseFilter> {
        let _ = (cx, state);
        None
    }

    /// Text of a [`Reason::Custom`] code this predicate returns.
    fn explain(&self, code: u32) -> Cow<'static, str> {
        Cow::Owned(format!("node(s) failed {} (code {code})", self.name()))
    }
}

/// A score: how good is this node for the pod, on the framework scale 0..=100 after
/// normalization.
///
/// `score` runs per feasible node and must not allocate; `normalize` then sees the raw scores
/// of all feasible nodes at once (index-aligned with the feasible list) and rewrites them.
pub trait Priority: Send + Sync {
    /// The name (kube's legacy name for built-ins).
    fn name(&self) -> &str;

    /// Per-pod preparation; `feasible` lists the snapshot indices of the nodes that passed
    /// filtering. The default scores every node without state.
    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        feasible: &[u32],
    ) -> Result<PreparedScore, PluginError> {
        let _ = (cx, feasible);
        Ok(PreparedScore::Run(PluginState::none()))
    }

    /// The raw score of a node.
    fn score(&self, cx: &CycleContext<'_>, state: &PluginState, node: NodeRef<'_>) -> i64;

    /// Scores several nodes at once: `out[k]` gets what `score` would return for the node at
    /// snapshot index `nodes[k]` (`out` is as long as `nodes`, and every element must be
    /// written). The scheduler scores all feasible nodes with one call, so a priority can look
    /// up its state once and read [`Snapshot::summaries`] directly; the default calls `score`
    /// per node. It must give exactly the scores `score` gives.
    fn score_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &PluginState,
        nodes: &[u32],
        out: &mut [i64],
    ) {
        let snapshot = cx.snapshot();
        for (o, &i) in out.iter_mut().zip(nodes) {
            *o = self.score(cx, state, snapshot.node(i as usize));
        }
    }

    /// The summary-only form of this priority for the prepared pod, if it has one (see
    /// [`crate::dense`]): it gives every node the score that `score` followed by `normalize`
    /// gives. Only built-in priorities have one; the default is `None`.
    fn dense(&self, cx: &CycleContext<'_>, state: &PluginState) -> Option<DenseScore> {
        let _ = (cx, state);
        None
    }

    /// Rewrites raw scores into 0..=100. The default leaves them as they are.
    fn normalize(&self, cx: &CycleContext<'_>, state: &PluginState, scores: &mut [i64]) {
        let _ = (cx, state, scores);
    }
}

/// A predicate from a closure over the pod and the node.
pub fn predicate_fn<F>(name: impl Into<String>, f: F) -> impl Predicate
where
    F: Fn(&Pod, &NodeInfo) -> Result<(), Reason> + Send + Sync,
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
    F: Fn(&Pod, &NodeInfo) -> Result<(), Reason> + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn filter(
        &self,
        cx: &CycleContext<'_>,
        _: &PluginState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        (self.f)(cx.pod(), node.info())
    }
}

/// A priority from a closure returning a score in 0..=100 for the pod on the node.
pub fn priority_fn<F>(name: impl Into<String>, f: F) -> impl Priority
where
    F: Fn(&Pod, &NodeInfo) -> i64 + Send + Sync,
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
    F: Fn(&Pod, &NodeInfo) -> i64 + Send + Sync,
{
    fn name(&self) -> &str {
        &self.name
    }
    fn score(&self, cx: &CycleContext<'_>, _: &PluginState, node: NodeRef<'_>) -> i64 {
        (self.f)(cx.pod(), node.info())
    }
}
