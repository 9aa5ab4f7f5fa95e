//! A compiled scheduling profile: filter, score and select (kube-scheduler's `genericScheduler`
//! under one profile).
//!
//! A [`Profile`] is compiled once (from a [`crate::policy::Policy`] or a [`ProfileBuilder`]) and
//! never changes: it is `Send + Sync`, so several workers share one behind an `Arc`. What a
//! cycle writes lives in a [`Cache`] that each worker owns: scratch buffers, the tie-breaking
//! RNG and the round-robin start index. The same profile and an equal cache give the same
//! decisions.
//!
//! ```
//! use std::sync::Arc;
//! use sched_core::policy::Policy;
//! use sched_core::snapshot::Snapshot;
//! use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
//!
//! let (nodes, running) = benchmark_cluster(20);
//! let snapshot = Snapshot::from_objects(nodes, running)?;
//! let profile = Arc::new(Policy::kube_default().builder()?.seed(1).build()?);
//! let workers: Vec<_> = (0..2)
//!     .map(|w| {
//!         let (profile, snapshot) = (Arc::clone(&profile), snapshot.clone());
//!         std::thread::spawn(move || {
//!             let mut cache = profile.create_cache();
//!             profile.schedule(&mut cache, &benchmark_pod(w), &snapshot).map(|r| r.node)
//!         })
//!     })
//!     .collect();
//! for w in workers {
//!     assert!(w.join().unwrap()?.starts_with("node-"));
//! }
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod builder;
mod cache;
mod explain;
mod extension;
mod filter;
pub(crate) mod kernel;
mod prefilter;
mod score;

use crate::framework::Reason;
use std::fmt;
use std::sync::Arc;

pub use builder::{BuildError, ProfileBuilder};
pub use cache::Cache;
pub use explain::{FitError, NodeFailure, ScoreTable};
pub use extension::CycleExtension;

use crate::fast_path::FastFilter;
use crate::formulas::MAX_NODE_SCORE;
use crate::framework::{
    BoxPredicate, BoxPriority, CycleContext, ErasedState, KubeVersion, PluginError,
};
use crate::model::{Pod, PodKey, Resources};
use crate::snapshot::{Snapshot, SnapshotError};

/// kube's floor on how many feasible nodes to look for before stopping.
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// kube's floor on the adaptive percentage of nodes to score.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: usize = 5;

/// How many feasible nodes to find before scoring, as kube-scheduler's
/// `numFeasibleNodesToFind`: all nodes below 100 nodes or at 100 %; `percentage` 0 means
/// adaptive (50 - nodes/125, at least 5 %); never fewer than 100 nodes.
///
/// ```
/// use sched_core::profile::num_feasible_nodes_to_find;
/// assert_eq!(num_feasible_nodes_to_find(5_000, 0), 500); // 10 %
/// assert_eq!(num_feasible_nodes_to_find(15_000, 0), 750); // floor of 5 %
/// assert_eq!(num_feasible_nodes_to_find(150, 0), 100);
/// assert_eq!(num_feasible_nodes_to_find(5_000, 100), 5_000);
/// ```
pub fn num_feasible_nodes_to_find(num_all_nodes: usize, percentage: u32) -> usize {
    if num_all_nodes < MIN_FEASIBLE_NODES_TO_FIND || percentage >= 100 {
        return num_all_nodes;
    }
    let mut pct = percentage as i64;
    if pct <= 0 {
        pct = 50 - (num_all_nodes / 125) as i64;
        if pct < MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND as i64 {
            pct = MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND as i64;
        }
    }
    let n = (num_all_nodes as i64 * pct / 100) as usize;
    n.max(MIN_FEASIBLE_NODES_TO_FIND)
}

/// Why a pod was not scheduled.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScheduleError {
    /// The snapshot has no nodes.
    #[error("no nodes available to schedule pods")]
    NoNodes,
    /// No node passed filtering; the error explains every node.
    #[error(transparent)]
    Unschedulable(#[from] FitError),
    /// A plugin failed while preparing for the pod.
    #[error(transparent)]
    Plugin(#[from] PluginError),
    /// A filter plugin failed with an error on a node (kube's Filter status `Error`, such as
    /// DynamicResources' CEL runtime error in a selector): the attempt fails, whatever other
    /// nodes found, and the pod backs off.
    #[error("running {plugin:?} filter plugin: {message}")]
    Filter {
        /// The plugin.
        plugin: String,
        /// The node it failed on (the first found).
        node: String,
        /// Its error.
        message: String,
    },
    /// A priority gave a normalized score outside 0..=100.
    #[error(
        "priority {plugin:?} gave node {node:?} the score {score}, outside 0..={MAX_NODE_SCORE}"
    )]
    InvalidScore {
        /// Priority name.
        plugin: String,
        /// Node name.
        node: String,
        /// The score.
        score: i64,
    },
    /// A node was chosen, but the snapshot refused to assume the pod onto it (the pod is
    /// already in the snapshot, say); the snapshot is unchanged.
    #[error("assuming the pod onto the chosen node: {0}")]
    Assume(#[source] SnapshotError),
    /// A scheduler extender failed (and is not ignorable); the attempt fails as in kube.
    #[error("extender {extender}: {source}")]
    Extender {
        /// The extender's name.
        extender: String,
        /// Its error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    /// The pod has scheduling gates (`spec.schedulingGates`): kube keeps it out of scheduling
    /// (its status says `SchedulingGated`) until every gate is removed.
    #[error("pod {pod} is waiting for its scheduling gates: {}", gates.join(", "))]
    SchedulingGated {
        /// `namespace/name` of the pod.
        pod: PodKey,
        /// The gates' names.
        gates: Vec<String>,
    },
    /// A PreEnqueue plugin keeps the pod out of scheduling (kube: the pod waits in the
    /// unschedulable pool, unattempted, until an event may change the plugin's answer);
    /// DynamicResources does when a claim of the pod cannot be resolved.
    #[error("{plugin}: {message}")]
    PreEnqueue {
        /// `namespace/name` of the pod.
        pod: PodKey,
        /// The plugin.
        plugin: String,
        /// Its message (kube's status message).
        message: String,
    },
    /// The pod needs something this crate does not evaluate, so no placement is made rather
    /// than a wrong one (a pod with `resourceClaims` needs kube's DynamicResources plugin,
    /// which a legacy Policy profile, or one that disables it, does not run).
    #[error("pod {pod}: {what} is not supported: {reason}")]
    Unsupported {
        /// `namespace/name` of the pod.
        pod: PodKey,
        /// The kube plugin that would be needed.
        what: &'static str,
        /// Why the pod needs it.
        reason: String,
    },
}

/// Where the pod goes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleResult {
    /// The chosen node's name.
    pub node: String,
    /// The chosen node's index in the snapshot.
    pub node_index: usize,
    /// Nodes filtered in this cycle (feasible plus rejected).
    pub evaluated_nodes: usize,
    /// Nodes that passed filtering.
    pub feasible_nodes: usize,
    /// The chosen node's weighted total score (0 when only one node was feasible and scoring
    /// was skipped, as kube does).
    pub score: i64,
}

/// A cycle's choice before the pod is assumed ([`Profile::schedule_unassumed`]).
#[derive(Debug)]
pub(crate) struct Unassumed {
    /// The chosen node and the cycle's counts.
    pub(crate) result: ScheduleResult,
    /// The pod's effective requests, as [`Snapshot::assume_at`] takes them.
    pub(crate) requests: Resources,
    /// The pod's non-zero CPU and memory requests.
    pub(crate) non_zero: (i64, i64),
}

/// A compiled, immutable scheduling pipeline: predicates, weighted priorities and the cycle
/// settings. `Send + Sync`; share it with `Arc` and give each worker its own [`Cache`]
/// ([`Profile::create_cache`]).
pub struct Profile {
    predicates: Vec<BoxPredicate>,
    priorities: Vec<(BoxPriority, i64)>,
    always_check_all_predicates: bool,
    percentage_of_nodes_to_score: u32,
    threads: usize,
    parallel_threshold: usize,
    fast_path: bool,
    filter_lead: bool,
    pool: Option<Arc<rayon::ThreadPool>>,
    seed: Option<u64>,
    version: KubeVersion,
}

impl fmt::Debug for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Profile")
            .field("predicates", &self.predicate_names().collect::<Vec<_>>())
            .field("priorities", &self.priority_weights().collect::<Vec<_>>())
            .field(
                "always_check_all_predicates",
                &self.always_check_all_predicates,
            )
            .field(
                "percentage_of_nodes_to_score",
                &self.percentage_of_nodes_to_score,
            )
            .field("threads", &self.threads)
            .field("fast_path", &self.fast_path)
            .field("filter_lead", &self.filter_lead)
            .field("seed", &self.seed)
            .field("version", &self.version)
            .finish()
    }
}

impl Profile {
    /// Starts a builder.
    pub fn builder() -> ProfileBuilder {
        ProfileBuilder::new()
    }

    /// Predicate names in order.
    pub fn predicate_names(&self) -> impl Iterator<Item = &str> {
        self.predicates.iter().map(|p| p.name())
    }

    /// Priority names with weights in order.
    pub fn priority_weights(&self) -> impl Iterator<Item = (&str, i64)> {
        self.priorities.iter().map(|(p, w)| (p.name(), *w))
    }

    /// The kube-scheduler release whose reason texts this profile uses.
    pub fn kube_version(&self) -> KubeVersion {
        self.version
    }

    /// The volume binder of the profile's VolumeBinding predicate (kube builds one per
    /// profile, with its own assumed PersistentVolumes and claims): what its Reserve
    /// ([`crate::plugins::volume::assume_volumes`]) assumes for a placed pod. `None` when the
    /// profile has no VolumeBinding: kube's Reserve then assumes nothing.
    pub fn volume_binder(&self) -> Option<crate::snapshot::VolumeBinderId> {
        self.predicates.iter().find_map(|p| p.volume_binder())
    }

    /// Whether the profile runs kube's DynamicResources (its Filter, and so its Reserve and
    /// PreBind).
    pub fn runs_dynamic_resources(&self) -> bool {
        self.predicates
            .iter()
            .any(|p| p.name() == "DynamicResources")
    }

    /// percentageOfNodesToScore (0 = adaptive).
    pub fn percentage_of_nodes_to_score(&self) -> u32 {
        self.percentage_of_nodes_to_score
    }

    /// A new cache for one worker: tie-breaking seeded with the builder's seed when it had
    /// one (so every cache made from this profile draws the same sequence), else from the OS.
    pub fn create_cache(&self) -> Cache {
        match self.seed {
            Some(seed) => Cache::seeded(seed),
            None => Cache::new(),
        }
    }

    /// Schedules one pod: filter (at most `numFeasibleNodesToFind` feasible nodes, starting at
    /// the cache's round-robin index), score when more than one node fits, and select a best
    /// node.
    pub fn schedule(
        &self,
        cache: &mut Cache,
        pod: &Pod,
        snapshot: &Snapshot,
    ) -> Result<ScheduleResult, ScheduleError> {
        self.schedule_in(
            cache,
            &CycleContext::for_version(pod, snapshot, self.version),
            None,
        )
    }

    /// Schedules the pod and, on success, assumes it onto the chosen node in the snapshot.
    pub fn schedule_and_assume(
        &self,
        cache: &mut Cache,
        pod: &Pod,
        snapshot: &mut Snapshot,
    ) -> Result<ScheduleResult, ScheduleError> {
        self.assume_after(cache, pod, snapshot, &[], None)
    }

    /// [`Profile::schedule_and_assume`] with `extension` run between filtering and selection
    /// (kube's extenders: the scheduling engine passes its extenders here).
    ///
    /// # Errors
    /// As [`Profile::schedule_and_assume`], and the extension's filter errors.
    pub fn schedule_and_assume_with(
        &self,
        cache: &mut Cache,
        pod: &Pod,
        snapshot: &mut Snapshot,
        extension: &mut dyn CycleExtension,
    ) -> Result<ScheduleResult, ScheduleError> {
        self.assume_after(cache, pod, snapshot, &[], Some(extension))
    }

    /// [`Profile::schedule_and_assume`] where the nodes of `blocked` fail with the given
    /// predicate and reason before any filter runs on them (the scheduling engine's nominated
    /// pods: nodes where the pod does not fit beside the pods nominated there). They count as
    /// infeasible when finding `numFeasibleNodesToFind` nodes, as kube's filter does.
    /// `extension` runs between filtering and selection, as in
    /// [`Profile::schedule_and_assume_with`].
    pub(crate) fn assume_after(
        &self,
        cache: &mut Cache,
        pod: &Pod,
        snapshot: &mut Snapshot,
        blocked: &[(u32, u16, Reason)],
        extension: Option<&mut dyn CycleExtension>,
    ) -> Result<ScheduleResult, ScheduleError> {
        let placed = self.schedule_unassumed(cache, pod, snapshot, blocked, extension)?;
        snapshot
            .assume_at(
                pod.clone(),
                placed.result.node_index,
                placed.requests,
                placed.non_zero,
            )
            .map_err(|refused| ScheduleError::Assume(refused.error))?;
        Ok(placed.result)
    }

    /// [`Profile::assume_after`] up to the assume: the node chosen and the pod's requests as
    /// the cycle computed them, for a caller that owns the pod to move it into the snapshot
    /// with [`Snapshot::assume_at`] (the scheduling engine: no copy of the pod).
    pub(crate) fn schedule_unassumed(
        &self,
        cache: &mut Cache,
        pod: &Pod,
        snapshot: &Snapshot,
        blocked: &[(u32, u16, Reason)],
        extension: Option<&mut dyn CycleExtension>,
    ) -> Result<Unassumed, ScheduleError> {
        let cx = CycleContext::for_version(pod, snapshot, self.version);
        let result = self.schedule_blocking(cache, &cx, blocked, extension)?;
        let (requests, non_zero) = cx.into_requests();
        Ok(Unassumed {
            result,
            requests,
            non_zero,
        })
    }

    fn schedule_in(
        &self,
        cache: &mut Cache,
        cx: &CycleContext<'_>,
        extension: Option<&mut dyn CycleExtension>,
    ) -> Result<ScheduleResult, ScheduleError> {
        self.schedule_blocking(cache, cx, &[], extension)
    }

    fn schedule_blocking(
        &self,
        cache: &mut Cache,
        cx: &CycleContext<'_>,
        blocked: &[(u32, u16, Reason)],
        extension: Option<&mut dyn CycleExtension>,
    ) -> Result<ScheduleResult, ScheduleError> {
        // The per-pod plugin states live in a vector kept from cycle to cycle.
        let mut active = std::mem::take(&mut cache.scratch.active);
        let result = self.schedule_with(cache, cx, &mut active, blocked, extension);
        active.clear();
        cache.scratch.active = active;
        result
    }

    /// Whether `pod` passes every predicate on the node at `index` of `snapshot` (kube's
    /// PreFilter and Filter for one node, as preemption and nominated nodes use them): `Ok(())`
    /// when it fits, else each failing predicate's name and reason (the first only, unless
    /// `alwaysCheckAllPredicates`).
    ///
    /// # Errors
    /// A plugin that fails to prepare for the pod.
    pub fn fits_on(
        &self,
        pod: &Pod,
        snapshot: &Snapshot,
        index: usize,
    ) -> Result<Result<(), Vec<(String, Reason)>>, ScheduleError> {
        Ok(self
            .fits_on_indexed(pod, snapshot, index)?
            .map_err(|reasons| {
                reasons
                    .into_iter()
                    .map(|(i, r)| (self.predicates[i as usize].name().to_string(), r))
                    .collect()
            }))
    }

    /// [`Profile::fits_on`] with the failing predicates' indices instead of their names.
    pub(crate) fn fits_on_indexed(
        &self,
        pod: &Pod,
        snapshot: &Snapshot,
        index: usize,
    ) -> Result<Result<(), Vec<(u16, Reason)>>, ScheduleError> {
        // No predicate skipped beforehand: each one's prepare decides on this snapshot.
        self.fits_on_skipping(pod, snapshot, index, &[], None)
    }

    fn schedule_with(
        &self,
        cache: &mut Cache,
        cx: &CycleContext<'_>,
        active: &mut Vec<(u16, ErasedState)>,
        blocked: &[(u32, u16, Reason)],
        mut extension: Option<&mut dyn CycleExtension>,
    ) -> Result<ScheduleResult, ScheduleError> {
        let snapshot = cx.snapshot();
        let pod = cx.pod();
        if !pod.spec.scheduling_gates.is_empty() {
            return Err(ScheduleError::SchedulingGated {
                pod: pod.key(),
                gates: pod
                    .spec
                    .scheduling_gates
                    .iter()
                    .map(|g| g.name.clone())
                    .collect(),
            });
        }
        if !pod.spec.resource_claims.is_empty() && !self.runs_dynamic_resources() {
            return Err(ScheduleError::Unsupported {
                pod: pod.key(),
                what: "DynamicResources",
                reason: format!(
                    "the pod has {} resourceClaims (dynamic resource allocation) and the profile does not run DynamicResources",
                    pod.spec.resource_claims.len()
                ),
            });
        }
        for p in &self.predicates {
            if let Err(message) = p.pre_enqueue(pod, snapshot) {
                return Err(ScheduleError::PreEnqueue {
                    pod: pod.key(),
                    plugin: p.name().to_owned(),
                    message,
                });
            }
        }
        let n = snapshot.len();
        if n == 0 {
            return Err(ScheduleError::NoNodes);
        }
        self.pre_filter(cache, cx, active)?;
        // kube's numFeasibleNodesToFind over the nodes searched (all, or the narrowed ones).
        let to_find = |searched: usize| {
            if let Some(e) = extension.as_deref()
                && self.version == KubeVersion::V1_34
                && self.priorities.is_empty()
                && !e.prioritizes()
                && !e.filters()
            {
                // kube v1.34: neither scoring nor filtering extenders, so one node is enough.
                return 1.min(searched);
            }
            num_feasible_nodes_to_find(searched, self.percentage_of_nodes_to_score)
        };
        let start = cache.next_start_index % n;
        if Profile::narrowed(cache) {
            // Only the nodes a predicate narrowed the pod to are searched (kube's
            // PreFilterResult); the others fail in the explanation.
            let to_find = to_find(cache.scratch.narrowed.len());
            let processed = self.filter_narrowed(cache, cx, active, to_find, blocked);
            cache.next_start_index = (start + processed) % n;
        } else {
            let to_find = to_find(n);
            // kube's search goes on until it finds one feasible node more than it needs, which
            // it drops: the nodes rejected before that one count as processed (and explained).
            // Blocked nodes are filtered like the others, then taken out: look for as many
            // more feasible nodes as there are blocked ones, and cut before the
            // `to_find + 1`-th one left.
            let find = (to_find + 1 + blocked.len()).min(n);
            let fast = if !self.fast_path || self.always_check_all_predicates || active.is_empty() {
                None
            } else {
                active.iter().try_fold(FastFilter::ALL, |acc, (pi, state)| {
                    Some(acc.and(self.predicates[*pi as usize].fast_filter(cx, state)?))
                })
            };
            let mut processed = if let Some(filter) = fast {
                self.filter_fast(cache, cx, filter, start, find)
            } else if self.pool.is_some() && n >= self.parallel_threshold && !active.is_empty() {
                self.filter_parallel(cache, cx, active, start, find)
            } else {
                self.filter_sequential(cache, cx, active, start, find)
            };
            processed = cache
                .scratch
                .apply_blocked(blocked, start, n, to_find, processed);
            cache.next_start_index = (start + processed) % n;
        }

        if cache.scratch.feasible.is_empty() {
            self.resolve_pending(cache, cx, active);
        }
        // kube: a Filter error on any node fails the attempt.
        if let Some(e) = self.filter_error(cache, cx, active) {
            return Err(e);
        }
        // kube's findNodesThatPassExtenders.
        let mut extension_failures = Vec::new();
        if let Some(e) = extension.as_deref_mut()
            && !cache.scratch.feasible.is_empty()
        {
            e.filter(
                pod,
                snapshot,
                &mut cache.scratch.feasible,
                &mut extension_failures,
            )?;
            if cache.scratch.feasible.is_empty() {
                self.resolve_pending(cache, cx, active);
            }
        }
        let s = &mut cache.scratch;
        let feasible = s.feasible.len();
        let evaluated = feasible + s.failures.len() + extension_failures.len();
        if feasible == 0 {
            let mut error = self.fit_error(cache, cx);
            if !extension_failures.is_empty() {
                let mut all: Vec<(usize, NodeFailure)> = std::mem::take(error.failures_mut())
                    .into_iter()
                    .map(|f| (snapshot.index_of(&f.node).unwrap_or(usize::MAX), f))
                    .chain(extension_failures.into_iter().map(|(i, f)| (i as usize, f)))
                    .collect();
                all.sort_by_key(|(i, _)| *i);
                *error.failures_mut() = all.into_iter().map(|(_, f)| f).collect();
            }
            return Err(ScheduleError::Unschedulable(error));
        }
        if feasible == 1 {
            let idx = s.feasible[0] as usize;
            s.table.clear();
            s.constants.clear();
            s.constant_total = 0;
            s.totals.clear();
            s.totals.push(0);
            return Ok(ScheduleResult {
                node: snapshot.node_infos()[idx].name().to_string(),
                node_index: idx,
                evaluated_nodes: evaluated,
                feasible_nodes: 1,
                score: 0,
            });
        }
        let mut selected = self.prioritize(cache, cx)?;
        if let Some(e) = extension {
            // kube's prioritizeNodes: the extenders' scores join the plugins' totals, and
            // without score plugins the totals start at 0 rather than 1.
            let s = &mut cache.scratch;
            if self.priorities.is_empty() {
                s.totals.fill(0);
            }
            e.score(pod, snapshot, &s.feasible, &mut s.totals);
            selected = None;
        }
        let pick = match selected {
            Some(pick) => pick,
            None => cache.select_host().map_err(|_| ScheduleError::NoNodes)?,
        };
        let s = &cache.scratch;
        let idx = s.feasible[pick] as usize;
        Ok(ScheduleResult {
            node: snapshot.node_infos()[idx].name().to_string(),
            node_index: idx,
            evaluated_nodes: evaluated,
            feasible_nodes: feasible,
            score: s.totals[pick] + s.constant_total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn profile_is_send_and_sync() {
        fn shared<T: Send + Sync>() {}
        shared::<Profile>();
        shared::<Arc<Profile>>();
        fn owned<T: Send>() {}
        owned::<Cache>();
    }
}
