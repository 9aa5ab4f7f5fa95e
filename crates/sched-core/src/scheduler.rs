//! The scheduling cycle: filter, score, select (kube-scheduler's `genericScheduler`).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use rand::{RngCore, SeedableRng};

use rand_chacha::ChaCha8Rng;

use crate::dense::{DenseFilter, DenseScore, DenseScorer, KernelOut};
use crate::formulas::MAX_NODE_SCORE;
use crate::formulas::out_of_range_bits;
use crate::framework::{
    CycleContext, PluginError, PluginState, Predicate, Prepared, PreparedScore, Priority, Reason,
};
use crate::model::Pod;
use crate::select::{Reservoir, select_host};
use crate::snapshot::{NodeSummary, Snapshot};

/// kube's floor on how many feasible nodes to look for before stopping.
pub const MIN_FEASIBLE_NODES_TO_FIND: usize = 100;
/// kube's floor on the adaptive percentage of nodes to score.
pub const MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND: usize = 5;

/// How many feasible nodes to find before scoring, as kube-scheduler's
/// `numFeasibleNodesToFind`: all nodes below 100 nodes or at 100 %; `percentage` 0 means
/// adaptive (50 - nodes/125, at least 5 %); never fewer than 100 nodes.
///
/// ```
/// use sched_core::scheduler::num_feasible_nodes_to_find;
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

/// Why a scheduler could not be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// A priority weight is zero or negative.
    #[error("priority {name:?} has weight {weight}; weights must be > 0")]
    NonPositiveWeight {
        /// Priority name.
        name: String,
        /// The weight given.
        weight: i64,
    },
    /// The sum of weight x 100 over all priorities overflows.
    #[error(
        "total priority weight overflows: the sum of weight x {MAX_NODE_SCORE} must fit in i64"
    )]
    WeightOverflow,
    /// percentageOfNodesToScore outside 0..=100.
    #[error("percentageOfNodesToScore {0} is out of range 0..=100")]
    Percentage(u32),
    /// Zero threads.
    #[error("threads must be at least 1")]
    ZeroThreads,
    /// Two plugins with one name.
    #[error("{kind} {name:?} is listed twice")]
    Duplicate {
        /// `predicate` or `priority`.
        kind: &'static str,
        /// The name.
        name: String,
    },
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
}

/// One rejected node and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeFailure {
    /// Node name.
    pub node: String,
    /// Failed predicates with their codes (the first only, unless alwaysCheckAllPredicates).
    pub codes: Vec<(String, Reason)>,
    /// kube's messages for those codes.
    pub messages: Vec<String>,
}

/// No node can take the pod: every node's reasons, and kube's summary as `Display`
/// ("0/5 nodes are available: 2 node(s) had untolerated taint {dedicated: gpu}, 3 Insufficient cpu.").
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FitError {
    /// `namespace/name` of the pod.
    pub pod: String,
    /// Number of nodes in the snapshot.
    pub num_all_nodes: usize,
    /// Each rejected node, in snapshot order.
    pub failures: Vec<NodeFailure>,
}

impl FitError {
    /// Count of nodes per message, sorted as kube sorts the summary ("N message" as strings).
    pub fn histogram(&self) -> Vec<(usize, String)> {
        let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
        for f in &self.failures {
            for m in &f.messages {
                *counts.entry(m).or_default() += 1;
            }
        }
        let mut out: Vec<(String, usize, String)> = counts
            .into_iter()
            .map(|(m, n)| (format!("{n} {m}"), n, m.to_string()))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.into_iter().map(|(_, n, m)| (n, m)).collect()
    }
}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0/{} nodes are available", self.num_all_nodes)?;
        let h = self.histogram();
        if !h.is_empty() {
            f.write_str(": ")?;
            for (i, (n, m)) in h.iter().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{n} {m}")?;
            }
        }
        f.write_str(".")
    }
}

impl std::error::Error for FitError {}

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

/// Builds a [`Scheduler`] in code; [`crate::policy`] builds one from a Policy document.
#[must_use]
pub struct SchedulerBuilder {
    predicates: Vec<Arc<dyn Predicate>>,
    priorities: Vec<(Arc<dyn Priority>, i64)>,
    always_check_all_predicates: bool,
    percentage_of_nodes_to_score: u32,
    threads: usize,
    parallel_threshold: usize,
    dense: bool,
    rng: Option<TieRng>,
}

impl fmt::Debug for SchedulerBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SchedulerBuilder")
            .field(
                "predicates",
                &self
                    .predicates
                    .iter()
                    .map(|p| p.name().to_string())
                    .collect::<Vec<_>>(),
            )
            .field(
                "priorities",
                &self
                    .priorities
                    .iter()
                    .map(|(p, w)| (p.name().to_string(), *w))
                    .collect::<Vec<_>>(),
            )
            .field(
                "always_check_all_predicates",
                &self.always_check_all_predicates,
            )
            .field(
                "percentage_of_nodes_to_score",
                &self.percentage_of_nodes_to_score,
            )
            .field("threads", &self.threads)
            .finish()
    }
}

impl Default for SchedulerBuilder {
    fn default() -> Self {
        SchedulerBuilder {
            predicates: Vec::new(),
            priorities: Vec::new(),
            always_check_all_predicates: false,
            percentage_of_nodes_to_score: 0,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            parallel_threshold: 2_000,
            dense: true,
            rng: None,
        }
    }
}

impl SchedulerBuilder {
    /// An empty pipeline (no predicates, no priorities), adaptive percentage, one thread per core.
    pub fn new() -> Self {
        SchedulerBuilder::default()
    }

    /// Adds a predicate; predicates run in the order added.
    pub fn predicate(self, p: impl Predicate + 'static) -> Self {
        self.predicate_arc(Arc::new(p))
    }

    /// Adds a shared predicate.
    pub fn predicate_arc(mut self, p: Arc<dyn Predicate>) -> Self {
        self.predicates.push(p);
        self
    }

    /// Adds a priority with a weight (> 0).
    pub fn priority(self, p: impl Priority + 'static, weight: i64) -> Self {
        self.priority_arc(Arc::new(p), weight)
    }

    /// Adds a shared priority with a weight (> 0).
    pub fn priority_arc(mut self, p: Arc<dyn Priority>, weight: i64) -> Self {
        self.priorities.push((p, weight));
        self
    }

    /// Check every predicate on a node even after one failed (kube's alwaysCheckAllPredicates),
    /// so explanations list every reason.
    pub fn always_check_all_predicates(mut self, on: bool) -> Self {
        self.always_check_all_predicates = on;
        self
    }

    /// percentageOfNodesToScore: 0 = adaptive, 100 = all nodes.
    pub fn percentage_of_nodes_to_score(mut self, pct: u32) -> Self {
        self.percentage_of_nodes_to_score = pct;
        self
    }

    /// Number of filtering threads (default: available cores).
    pub fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }

    /// Clusters smaller than this are filtered on the calling thread only (thread hand-off
    /// costs more than it saves there). Default 2,000 nodes.
    pub fn parallel_threshold(mut self, nodes: usize) -> Self {
        self.parallel_threshold = nodes;
        self
    }

    /// Whether built-in plugins may run through their dense forms (see [`crate::dense`]);
    /// default on. Off, every plugin runs through its `filter` and `score`: the decisions are
    /// the same, only slower (tests compare the two).
    pub fn dense(mut self, on: bool) -> Self {
        self.dense = on;
        self
    }

    /// Seeds the tie-breaking RNG (ChaCha8), making runs reproducible.
    pub fn seed(mut self, seed: u64) -> Self {
        self.rng = Some(TieRng::ChaCha(Box::new(ChaCha8Rng::seed_from_u64(seed))));
        self
    }

    /// Uses this RNG for tie-breaking.
    pub fn rng(mut self, rng: impl RngCore + Send + Sync + 'static) -> Self {
        self.rng = Some(TieRng::Custom(Box::new(rng)));
        self
    }

    /// Validates and builds.
    pub fn build(self) -> Result<Scheduler, BuildError> {
        if self.percentage_of_nodes_to_score > 100 {
            return Err(BuildError::Percentage(self.percentage_of_nodes_to_score));
        }
        if self.threads == 0 {
            return Err(BuildError::ZeroThreads);
        }
        let mut total: i64 = 0;
        for (p, w) in &self.priorities {
            if *w <= 0 {
                return Err(BuildError::NonPositiveWeight {
                    name: p.name().to_string(),
                    weight: *w,
                });
            }
            total = w
                .checked_mul(MAX_NODE_SCORE)
                .and_then(|x| total.checked_add(x))
                .ok_or(BuildError::WeightOverflow)?;
        }
        for (i, p) in self.predicates.iter().enumerate() {
            if self.predicates[..i].iter().any(|q| q.name() == p.name()) {
                return Err(BuildError::Duplicate {
                    kind: "predicate",
                    name: p.name().to_string(),
                });
            }
        }
        for (i, (p, _)) in self.priorities.iter().enumerate() {
            if self.priorities[..i]
                .iter()
                .any(|(q, _)| q.name() == p.name())
            {
                return Err(BuildError::Duplicate {
                    kind: "priority",
                    name: p.name().to_string(),
                });
            }
        }
        let pool = if self.threads > 1 {
            rayon::ThreadPoolBuilder::new()
                .num_threads(self.threads)
                .thread_name(|i| format!("sched-filter-{i}"))
                .build()
                .ok()
                .map(Arc::new)
        } else {
            None
        };
        Ok(Scheduler {
            predicates: self.predicates,
            priorities: self.priorities,
            always_check_all_predicates: self.always_check_all_predicates,
            percentage_of_nodes_to_score: self.percentage_of_nodes_to_score,
            threads: self.threads,
            parallel_threshold: self.parallel_threshold,
            dense: self.dense,
            pool,
            rng: self
                .rng
                .unwrap_or_else(|| TieRng::ChaCha(Box::new(ChaCha8Rng::from_os_rng()))),
            next_start_index: 0,
            scratch: Scratch::default(),
        })
    }
}

type Outcome = Result<(), (u16, Reason)>;

/// The predicate index of a failure whose reason is not computed yet (see
/// [`Scheduler::filter_dense`]).
const PENDING: u16 = u16::MAX;

/// The tie-breaking RNG. The built-in ChaCha8 is kept with its concrete type so that `select_host`, which
/// may draw once per tied node (thousands of times per pod on a uniform cluster), inlines its
/// generator instead of calling through a `dyn RngCore` per draw; the stream is the same.
enum TieRng {
    ChaCha(Box<ChaCha8Rng>),
    Custom(Box<dyn RngCore + Send + Sync>),
}

#[derive(Default)]
struct Scratch {
    /// Snapshot indices of feasible nodes, in evaluation order.
    feasible: Vec<u32>,
    /// Rejected nodes: (snapshot index, predicate index, first reason).
    failures: Vec<(u32, u16, Reason)>,
    /// Per-chunk buffers for parallel filtering.
    chunks: Vec<Mutex<ChunkBuf>>,
    /// Buffers for sequential filtering.
    seq: ChunkBuf,
    /// Per priority, per feasible node, final scores (priority-major).
    table: Vec<i64>,
    /// Weighted totals aligned with `feasible`, without `constant_total`.
    totals: Vec<i64>,
    /// Per priority: `Some(score)` when it gave every node the same score.
    constants: Vec<Option<i64>>,
    /// Sum of weight x score over the constant priorities (the same for every node).
    constant_total: i64,
    /// The priorities scored through their dense form: index, form, weight.
    dense: Vec<(usize, DenseScore, i64)>,
    /// The dense kernel's per-node results.
    kernel: KernelOut,
    /// The active predicates of the cycle with their states.
    active: Vec<(u16, PluginState)>,
    /// The priorities' prepared forms of the cycle.
    prepared: Vec<PreparedScore>,
}

/// A compiled scheduling pipeline: predicates, weighted priorities, and the cycle settings.
///
/// `schedule` takes `&mut self`: it keeps the round-robin start index, the RNG and scratch
/// buffers that make the hot path allocation-free. Build one per scheduling thread.
pub struct Scheduler {
    predicates: Vec<Arc<dyn Predicate>>,
    priorities: Vec<(Arc<dyn Priority>, i64)>,
    always_check_all_predicates: bool,
    percentage_of_nodes_to_score: u32,
    threads: usize,
    parallel_threshold: usize,
    dense: bool,
    pool: Option<Arc<rayon::ThreadPool>>,
    rng: TieRng,
    next_start_index: usize,
    scratch: Scratch,
}

impl fmt::Debug for Scheduler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scheduler")
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
            .field("next_start_index", &self.next_start_index)
            .finish()
    }
}

const CHUNK: usize = 256;

/// Nodes per batch in scoring: their summaries stay in the L1 cache across priorities.
const SCORE_CHUNK: usize = 256;

/// Nodes per batch in sequential filtering (fewer when fewer feasible nodes are still needed,
/// so early stop wastes little work).
const SEQ_BATCH: usize = 128;

/// Reusable buffers for filtering one chunk of nodes predicate by predicate.
#[derive(Default)]
struct ChunkBuf {
    /// Snapshot indices of the chunk's nodes, in evaluation order.
    nodes: Vec<u32>,
    /// Outcome per node of the chunk.
    out: Vec<Outcome>,
    /// Nodes still passing: snapshot indices and positions in the chunk.
    alive: Vec<u32>,
    alive_pos: Vec<u32>,
    /// One predicate's answers for `alive`.
    res: Vec<Result<(), Reason>>,
}

impl ChunkBuf {
    /// Filters `self.nodes` into `self.out`. Without alwaysCheckAllPredicates each predicate
    /// runs (through `filter_batch`) on the nodes that passed the ones before it, so every
    /// node gets exactly the first failing predicate's reason, as the node-by-node loop gives.
    fn filter(
        &mut self,
        predicates: &[Arc<dyn Predicate>],
        active: &[(u16, PluginState)],
        always_all: bool,
        cx: &CycleContext<'_>,
    ) {
        self.out.clear();
        if always_all {
            self.out.extend(
                self.nodes
                    .iter()
                    .map(|&i| Scheduler::check_node(predicates, active, true, cx, i as usize)),
            );
            return;
        }
        self.out.resize(self.nodes.len(), Ok(()));
        self.alive.clear();
        self.alive.extend_from_slice(&self.nodes);
        self.alive_pos.clear();
        self.alive_pos.extend(0..self.nodes.len() as u32);
        for (j, (pi, state)) in active.iter().enumerate() {
            if self.alive.is_empty() {
                break;
            }
            self.res.clear();
            self.res.resize(self.alive.len(), Ok(()));
            predicates[*pi as usize].filter_batch(cx, state, &self.alive, &mut self.res);
            if j + 1 == active.len() {
                // The last predicate: record failures, no survivors to keep.
                for (r, &at) in self.res.iter().zip(&self.alive_pos) {
                    if let Err(r) = *r {
                        self.out[at as usize] = Err((*pi, r));
                    }
                }
                break;
            }
            if self.res.iter().all(Result::is_ok) {
                continue;
            }
            // Keep the passing nodes in order (written unconditionally, advanced on pass).
            let mut kept = 0;
            for k in 0..self.alive.len() {
                let (node, at) = (self.alive[k], self.alive_pos[k]);
                self.alive[kept] = node;
                self.alive_pos[kept] = at;
                match self.res[k] {
                    Ok(()) => kept += 1,
                    Err(r) => self.out[at as usize] = Err((*pi, r)),
                }
            }
            self.alive.truncate(kept);
            self.alive_pos.truncate(kept);
        }
    }
}

/// Scores the feasible nodes at positions `range` with every dense priority, node by node
/// (when [`DenseScorer`] cannot arrange them): writes each score into its row of `table`
/// (priority-major, rows as long as `feasible`) and adds the weighted scores to `totals`.
/// Returns the OR of [`out_of_range_bits`] over the scores.
fn score_each(
    dense: &[(usize, DenseScore, i64)],
    nodes: &[NodeSummary],
    feasible: &[u32],
    range: std::ops::Range<usize>,
    table: &mut [i64],
    totals: &mut [i64],
) -> i64 {
    let f = feasible.len();
    let mut out_of_range = 0i64;
    for k in range {
        let node = &nodes[feasible[k] as usize];
        let mut total = totals[k];
        for &(pi, d, w) in dense {
            let v = d.score(node);
            out_of_range |= out_of_range_bits(v);
            table[pi * f + k] = v;
            total = total.wrapping_add(v.wrapping_mul(w));
        }
        totals[k] = total;
    }
    out_of_range
}

/// Replaces `nodes` with the node indices at evaluation positions `pos..pos + len` when
/// evaluation starts at `start` (`pos + len <= n`): at most two plain ranges.
fn fill_positions(nodes: &mut Vec<u32>, start: usize, pos: usize, len: usize, n: usize) {
    nodes.clear();
    let first = wrap(start, pos, n);
    let straight = len.min(n - first);
    nodes.extend((first..first + straight).map(|i| i as u32));
    nodes.extend((0..len - straight).map(|i| i as u32));
}

/// The node index at evaluation position `pos` when evaluation starts at `start` (both < n).
#[inline]
fn wrap(start: usize, pos: usize, n: usize) -> usize {
    if pos < n - start {
        start + pos
    } else {
        pos - (n - start)
    }
}

/// A view of the scores of the last successful cycle.
#[derive(Debug)]
pub struct ScoreTable<'a> {
    feasible: &'a [u32],
    table: &'a [i64],
    totals: &'a [i64],
    constants: &'a [Option<i64>],
    constant_total: i64,
    names: Vec<(&'a str, i64)>,
}

impl<'a> ScoreTable<'a> {
    /// Priority names and weights, in pipeline order.
    pub fn priorities(&self) -> &[(&'a str, i64)] {
        &self.names
    }

    /// Number of scored nodes.
    pub fn len(&self) -> usize {
        self.feasible.len()
    }

    /// Whether no node was scored.
    pub fn is_empty(&self) -> bool {
        self.feasible.is_empty()
    }

    /// Whether priorities ran (they do not when exactly one node fits, as in kube).
    pub fn scored(&self) -> bool {
        !self.table.is_empty()
    }

    /// The `i`-th feasible node: snapshot index, weighted total, and each priority's normalized
    /// (unweighted) score in pipeline order (empty when scoring was skipped).
    pub fn row(&self, i: usize) -> (usize, i64, Vec<i64>) {
        let n = self.feasible.len();
        let per = if self.scored() {
            (0..self.names.len())
                .map(|p| {
                    self.constants
                        .get(p)
                        .copied()
                        .flatten()
                        .unwrap_or(self.table[p * n + i])
                })
                .collect()
        } else {
            Vec::new()
        };
        (
            self.feasible[i] as usize,
            self.totals[i] + self.constant_total,
            per,
        )
    }
}

impl Scheduler {
    /// Starts a builder.
    pub fn builder() -> SchedulerBuilder {
        SchedulerBuilder::new()
    }

    /// Predicate names in order.
    pub fn predicate_names(&self) -> impl Iterator<Item = &str> {
        self.predicates.iter().map(|p| p.name())
    }

    /// Priority names with weights in order.
    pub fn priority_weights(&self) -> impl Iterator<Item = (&str, i64)> {
        self.priorities.iter().map(|(p, w)| (p.name(), *w))
    }

    /// The round-robin index the next cycle starts filtering at.
    pub fn next_start_index(&self) -> usize {
        self.next_start_index
    }

    /// The feasible nodes and scores of the last successful cycle.
    pub fn last_scores(&self) -> ScoreTable<'_> {
        ScoreTable {
            feasible: &self.scratch.feasible,
            table: &self.scratch.table,
            totals: &self.scratch.totals,
            constants: &self.scratch.constants,
            constant_total: self.scratch.constant_total,
            names: self
                .priorities
                .iter()
                .map(|(p, w)| (p.name(), *w))
                .collect(),
        }
    }

    /// Schedules one pod: filter (at most `numFeasibleNodesToFind` feasible nodes, starting at
    /// the round-robin index), score when more than one node fits, and select a best node.
    pub fn schedule(
        &mut self,
        pod: &Pod,
        snapshot: &Snapshot,
    ) -> Result<ScheduleResult, ScheduleError> {
        self.schedule_in(&CycleContext::new(pod, snapshot))
    }

    fn schedule_in(&mut self, cx: &CycleContext<'_>) -> Result<ScheduleResult, ScheduleError> {
        // The per-pod plugin states live in vectors kept from cycle to cycle.
        let mut active = std::mem::take(&mut self.scratch.active);
        let result = self.schedule_with(cx, &mut active);
        active.clear();
        self.scratch.active = active;
        result
    }

    fn schedule_with(
        &mut self,
        cx: &CycleContext<'_>,
        active: &mut Vec<(u16, PluginState)>,
    ) -> Result<ScheduleResult, ScheduleError> {
        let snapshot = cx.snapshot();
        let n = snapshot.len();
        if n == 0 {
            return Err(ScheduleError::NoNodes);
        }
        active.clear();
        for (i, p) in self.predicates.iter().enumerate() {
            match p.prepare(cx)? {
                Prepared::Skip => {}
                Prepared::Run(state) => active.push((i as u16, state)),
            }
        }
        let to_find = num_feasible_nodes_to_find(n, self.percentage_of_nodes_to_score);
        let start = self.next_start_index % n;
        let dense = if !self.dense || self.always_check_all_predicates || active.is_empty() {
            None
        } else {
            active
                .iter()
                .try_fold(DenseFilter::ALL, |acc, (pi, state)| {
                    Some(acc.and(self.predicates[*pi as usize].dense(cx, state)?))
                })
        };
        let processed = if let Some(filter) = dense {
            self.filter_dense(cx, filter, start, to_find)
        } else if self.pool.is_some() && n >= self.parallel_threshold && !active.is_empty() {
            self.filter_parallel(cx, active, start, to_find)
        } else {
            self.filter_sequential(cx, active, start, to_find)
        };
        self.next_start_index = (start + processed) % n;

        if self.scratch.feasible.is_empty() {
            self.resolve_pending(cx, active);
        }
        let feasible = self.scratch.feasible.len();
        let evaluated = feasible + self.scratch.failures.len();
        if feasible == 0 {
            return Err(ScheduleError::Unschedulable(self.fit_error(cx)));
        }
        if feasible == 1 {
            let idx = self.scratch.feasible[0] as usize;
            self.scratch.table.clear();
            self.scratch.constants.clear();
            self.scratch.constant_total = 0;
            self.scratch.totals.clear();
            self.scratch.totals.push(0);
            return Ok(ScheduleResult {
                node: snapshot.node_infos()[idx].name().to_string(),
                node_index: idx,
                evaluated_nodes: evaluated,
                feasible_nodes: 1,
                score: 0,
            });
        }
        let selected = self.prioritize(cx)?;
        let pick = match (selected, &mut self.rng) {
            (Some(pick), _) => pick,
            (None, TieRng::ChaCha(rng)) => select_host(&self.scratch.totals, rng.as_mut())
                .map_err(|_| ScheduleError::NoNodes)?,
            (None, TieRng::Custom(rng)) => {
                select_host(&self.scratch.totals, rng).map_err(|_| ScheduleError::NoNodes)?
            }
        };
        let idx = self.scratch.feasible[pick] as usize;
        Ok(ScheduleResult {
            node: snapshot.node_infos()[idx].name().to_string(),
            node_index: idx,
            evaluated_nodes: evaluated,
            feasible_nodes: feasible,
            score: self.scratch.totals[pick] + self.scratch.constant_total,
        })
    }

    /// Schedules the pod and, on success, assumes it onto the chosen node in the snapshot.
    pub fn schedule_and_assume(
        &mut self,
        pod: &Pod,
        snapshot: &mut Snapshot,
    ) -> Result<ScheduleResult, ScheduleError> {
        let cx = CycleContext::new(pod, snapshot);
        let r = self.schedule_in(&cx)?;
        let (requests, non_zero) = cx.into_requests();
        snapshot
            .assume_at(pod.clone(), r.node_index, requests, non_zero)
            .map_err(|e| PluginError {
                plugin: "assume".into(),
                message: e.to_string(),
            })?;
        Ok(r)
    }

    #[inline]
    fn check_node(
        predicates: &[Arc<dyn Predicate>],
        active: &[(u16, PluginState)],
        always_all: bool,
        cx: &CycleContext<'_>,
        idx: usize,
    ) -> Outcome {
        let node = cx.snapshot().node(idx);
        let mut first: Option<(u16, Reason)> = None;
        for (pi, state) in active {
            if let Err(r) = predicates[*pi as usize].filter(cx, state, node) {
                if first.is_none() {
                    first = Some((*pi, r));
                }
                if !always_all {
                    break;
                }
            }
        }
        match first {
            None => Ok(()),
            Some(f) => Err(f),
        }
    }

    /// Filters with the predicates' combined [`DenseFilter`] (every active predicate has one),
    /// in one pass over the dense node array. A node that fails is recorded with
    /// [`PENDING`] for its reason: reasons are only read when no node fits, and then
    /// [`Scheduler::resolve_pending`] asks the predicates' own `filter`. Same result as
    /// [`Scheduler::filter_sequential`].
    fn filter_dense(
        &mut self,
        cx: &CycleContext<'_>,
        filter: DenseFilter,
        start: usize,
        to_find: usize,
    ) -> usize {
        const _: () = assert!(SEQ_BATCH.is_power_of_two());
        let fit = cx.snapshot().free();
        let n = fit.len();
        let s = &mut self.scratch;
        s.feasible.clear();
        s.failures.clear();
        // Batches of nodes into buffers on the stack, whose counts stay in registers (pushing
        // to the scratch vectors node by node reloads their lengths from memory).
        let mut passed = [0u32; SEQ_BATCH];
        let mut failed = [0u32; SEQ_BATCH];
        let mut pos = 0;
        for range in [start..n, 0..start] {
            let mut base = range.start;
            while base < range.end {
                // No more nodes than still needed (at least 8), so an early stop wastes little.
                let needed = to_find - s.feasible.len();
                let batch = &fit[base..base + needed.clamp(8, SEQ_BATCH).min(range.end - base)];
                let (mut ok, mut bad) = (0usize, 0usize);
                for (j, node) in batch.iter().enumerate() {
                    let i = (base + j) as u32;
                    // The counts stay below the batch length; the masks let the compiler
                    // see it.
                    if filter.passes(node) {
                        passed[ok & (SEQ_BATCH - 1)] = i;
                        ok += 1;
                    } else {
                        failed[bad & (SEQ_BATCH - 1)] = i;
                        bad += 1;
                    }
                }
                let mut len = batch.len();
                if ok >= needed {
                    // Stop right after the `to_find`-th feasible node.
                    let last = passed[needed - 1];
                    ok = needed;
                    bad = failed[..bad].partition_point(|&i| i < last);
                    len = (last as usize - base) + 1;
                }
                s.feasible.extend_from_slice(&passed[..ok]);
                s.failures.extend(
                    failed[..bad]
                        .iter()
                        .map(|&i| (i, PENDING, Reason::Custom(0))),
                );
                pos += len;
                if s.feasible.len() >= to_find {
                    return pos;
                }
                base += len;
            }
        }
        pos
    }

    /// Gives the failures recorded by [`Scheduler::filter_dense`] their reasons: the first
    /// failing predicate and its reason, from the predicates' `filter`.
    fn resolve_pending(&mut self, cx: &CycleContext<'_>, active: &[(u16, PluginState)]) {
        let s = &mut self.scratch;
        let mut kept = 0;
        for k in 0..s.failures.len() {
            let (idx, pi, _) = s.failures[k];
            if pi != PENDING {
                s.failures[kept] = s.failures[k];
                kept += 1;
                continue;
            }
            match Self::check_node(&self.predicates, active, false, cx, idx as usize) {
                Err((pi, r)) => {
                    s.failures[kept] = (idx, pi, r);
                    kept += 1;
                }
                // Dense forms match their predicates exactly (tested), so this does not
                // happen; were it to, the predicates' answer wins.
                Ok(()) => s.feasible.push(idx),
            }
        }
        s.failures.truncate(kept);
    }

    fn filter_sequential(
        &mut self,
        cx: &CycleContext<'_>,
        active: &[(u16, PluginState)],
        start: usize,
        to_find: usize,
    ) -> usize {
        let n = cx.snapshot().len();
        let s = &mut self.scratch;
        s.feasible.clear();
        s.failures.clear();
        if active.is_empty() {
            // No filter to run: kube takes the first `to_find` nodes from the start index.
            s.feasible
                .extend((start..n).chain(0..start).take(to_find).map(|i| i as u32));
            return to_find;
        }
        // Positions start..n, then 0..start, in batches filtered predicate by predicate.
        let buf = &mut s.seq;
        let mut pos = 0;
        while pos < n {
            let needed = to_find - s.feasible.len();
            let len = needed.clamp(8, SEQ_BATCH).min(n - pos);
            fill_positions(&mut buf.nodes, start, pos, len, n);
            buf.filter(
                &self.predicates,
                active,
                self.always_check_all_predicates,
                cx,
            );
            for (&idx, o) in buf.nodes.iter().zip(&buf.out) {
                pos += 1;
                match *o {
                    Ok(()) => {
                        s.feasible.push(idx);
                        if s.feasible.len() >= to_find {
                            return pos;
                        }
                    }
                    Err((pi, r)) => s.failures.push((idx, pi, r)),
                }
            }
        }
        n
    }

    /// Filters on the pool. Workers take chunks of positions in increasing order; a chunk is
    /// skipped only when earlier chunks already hold `to_find` feasible nodes, so the merged
    /// result (feasible nodes in position order, cut at `to_find`) equals the sequential one.
    fn filter_parallel(
        &mut self,
        cx: &CycleContext<'_>,
        active: &[(u16, PluginState)],
        start: usize,
        to_find: usize,
    ) -> usize {
        let n = cx.snapshot().len();
        let chunks = n.div_ceil(CHUNK);
        while self.scratch.chunks.len() < chunks {
            self.scratch.chunks.push(Mutex::new(ChunkBuf::default()));
        }
        let next = AtomicUsize::new(0);
        let found = AtomicUsize::new(0);
        let done = AtomicUsize::new(0);
        {
            let predicates = &self.predicates;
            let always_all = self.always_check_all_predicates;
            let slots = &self.scratch.chunks[..chunks];
            let work = || {
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= chunks {
                        break;
                    }
                    let mut buf = slots[k].lock().unwrap_or_else(|e| e.into_inner());
                    buf.out.clear();
                    if found.load(Ordering::Acquire) >= to_find {
                        // Enough feasible nodes in earlier chunks: leave this one unevaluated.
                        continue;
                    }
                    let lo = k * CHUNK;
                    let hi = (lo + CHUNK).min(n);
                    fill_positions(&mut buf.nodes, start, lo, hi - lo, n);
                    buf.filter(predicates, active, always_all, cx);
                    let ok = buf.out.iter().filter(|o| o.is_ok()).count();
                    found.fetch_add(ok, Ordering::AcqRel);
                    done.fetch_add(1, Ordering::Relaxed);
                }
            };
            let threads = self.threads.min(chunks);
            match &self.pool {
                Some(pool) => pool.scope(|sc| {
                    for _ in 1..threads {
                        sc.spawn(|_| work());
                    }
                    work();
                }),
                None => work(),
            }
        }
        let s = &mut self.scratch;
        s.feasible.clear();
        s.failures.clear();
        for k in 0..chunks {
            let buf = s.chunks[k].lock().unwrap_or_else(|e| e.into_inner());
            for (j, o) in buf.out.iter().enumerate() {
                let pos = k * CHUNK + j;
                let idx = wrap(start, pos, n) as u32;
                match o {
                    Ok(()) => {
                        s.feasible.push(idx);
                        if s.feasible.len() >= to_find {
                            return pos + 1;
                        }
                    }
                    Err((pi, r)) => s.failures.push((idx, *pi, *r)),
                }
            }
        }
        n
    }

    /// Scores the feasible nodes into `scratch.totals` (and the table). When every priority
    /// is constant or dense, the dense pass also selects the host as it goes (the same offers
    /// in the same order as [`select_host`] over the totals, so the same pick) and its index
    /// is returned.
    fn prioritize(&mut self, cx: &CycleContext<'_>) -> Result<Option<usize>, ScheduleError> {
        let s = &mut self.scratch;
        let f = s.feasible.len();
        s.totals.clear();
        s.constants.clear();
        s.constant_total = 0;
        if self.priorities.is_empty() {
            // kube: with no priorities every node scores 1.
            s.table.clear();
            s.totals.resize(f, 1);
            return Ok(None);
        }
        s.totals.resize(f, 0);
        // No clearing: every row of a priority that runs is overwritten by `score_batch`, and
        // the rows of constant priorities are never read (`ScoreTable::row` takes their
        // constant), so zeroing the whole table per pod would be wasted memory traffic.
        s.table.resize(f * self.priorities.len(), 0);
        // Prepare every priority in order, up to the first that fails; its error is returned
        // after the priorities before it were checked, as when each was prepared just before
        // being scored.
        let mut prepared = std::mem::take(&mut s.prepared);
        prepared.clear();
        let result = self.prioritize_with(cx, &mut prepared);
        prepared.clear();
        self.scratch.prepared = prepared;
        result
    }

    fn prioritize_with(
        &mut self,
        cx: &CycleContext<'_>,
        prepared: &mut Vec<PreparedScore>,
    ) -> Result<Option<usize>, ScheduleError> {
        let s = &mut self.scratch;
        let f = s.feasible.len();
        let mut prepare_error = None;
        for (p, _) in &self.priorities {
            match p.prepare(cx, &s.feasible) {
                Ok(x) => prepared.push(x),
                Err(e) => {
                    prepare_error = Some(e);
                    break;
                }
            }
        }
        // Priorities with a dense form are computed here, all in one loop (below); the others
        // through their `score_batch`.
        s.dense.clear();
        for (pi, prep) in prepared.iter().enumerate() {
            if !self.dense {
                break;
            }
            if let PreparedScore::Run(state) = prep
                && let Some(d) = self.priorities[pi].0.dense(cx, state)
            {
                s.dense.push((pi, d, self.priorities[pi].1));
            }
        }
        let scorer = DenseScorer::new(&s.dense);
        let fuse_select = scorer.is_some()
            && prepare_error.is_none()
            && prepared.iter().enumerate().all(|(pi, p)| {
                matches!(p, PreparedScore::Constant(_)) || s.dense.iter().any(|d| d.0 == pi)
            });
        let mut reservoir = Reservoir::EMPTY;
        let rng: &mut dyn RngCore = match &mut self.rng {
            TieRng::ChaCha(rng) => rng.as_mut(),
            TieRng::Custom(rng) => rng.as_mut(),
        };
        let mut dense_out_of_range = 0i64;
        // Score chunk by chunk, every running priority on one chunk of nodes while the chunk's
        // summaries are in the L1 cache, instead of streaming all of them once per priority.
        for lo in (0..f).step_by(SCORE_CHUNK) {
            let hi = (lo + SCORE_CHUNK).min(f);
            for (pi, prep) in prepared.iter().enumerate() {
                if let PreparedScore::Run(state) = prep
                    && !s.dense.iter().any(|d| d.0 == pi)
                {
                    self.priorities[pi].0.score_batch(
                        cx,
                        state,
                        &s.feasible[lo..hi],
                        &mut s.table[pi * f + lo..pi * f + hi],
                    );
                }
            }
            if scorer.is_none() && !s.dense.is_empty() {
                dense_out_of_range |= score_each(
                    &s.dense,
                    cx.snapshot().summaries(),
                    &s.feasible,
                    lo..hi,
                    &mut s.table,
                    &mut s.totals,
                );
            }
        }
        // The dense priorities in one pass over all feasible nodes.
        if let Some(scorer) = &scorer {
            dense_out_of_range |= scorer.run(
                (cx.snapshot().loads(), cx.snapshot().summaries()),
                &s.feasible,
                &mut s.kernel,
                &mut s.table,
                &mut s.totals,
                fuse_select.then_some((&mut reservoir, &mut *rng)),
            );
        }
        if dense_out_of_range != 0 {
            // Dense scores are always in range; were one not, report it as the general path
            // would (scanning the rows below).
            s.dense.clear();
        }
        for (pi, ((p, w), prep)) in self.priorities.iter().zip(prepared.iter()).enumerate() {
            match prep {
                // The same score on every node: one addition instead of a pass over the nodes.
                &PreparedScore::Constant(c) => {
                    if !(0..=MAX_NODE_SCORE).contains(&c) {
                        return Err(ScheduleError::InvalidScore {
                            plugin: p.name().to_string(),
                            node: cx.snapshot().node_infos()[s.feasible[0] as usize]
                                .name()
                                .to_string(),
                            score: c,
                        });
                    }
                    s.constants.push(Some(c));
                    s.constant_total += c * w;
                }
                PreparedScore::Run(_) if s.dense.iter().any(|d| d.0 == pi) => {
                    // Scored, weighed and added by the dense pass.
                    s.constants.push(None);
                }
                PreparedScore::Run(state) => {
                    s.constants.push(None);
                    let row = &mut s.table[pi * f..(pi + 1) * f];
                    p.normalize(cx, state, row);
                    // One branch-free pass: add the weighted scores and remember whether any
                    // was out of range; only then look for the offending node.
                    // OR-ing `out_of_range_bits` over the row vectorizes, unlike per-value
                    // range compares.
                    let mut out_of_range = 0i64;
                    if *w == 1 {
                        for (&v, t) in row.iter().zip(s.totals.iter_mut()) {
                            out_of_range |= out_of_range_bits(v);
                            *t = t.wrapping_add(v);
                        }
                    } else {
                        for (&v, t) in row.iter().zip(s.totals.iter_mut()) {
                            out_of_range |= out_of_range_bits(v);
                            *t = t.wrapping_add(v.wrapping_mul(*w));
                        }
                    }
                    if out_of_range != 0 {
                        let (i, &v) = row
                            .iter()
                            .enumerate()
                            .find(|(_, v)| !(0..=MAX_NODE_SCORE).contains(*v))
                            .unwrap_or((0, &0));
                        return Err(ScheduleError::InvalidScore {
                            plugin: p.name().to_string(),
                            node: cx.snapshot().node_infos()[s.feasible[i] as usize]
                                .name()
                                .to_string(),
                            score: v,
                        });
                    }
                }
            }
        }
        match prepare_error {
            Some(e) => Err(e.into()),
            None => Ok(fuse_select.then_some(reservoir.selected)),
        }
    }

    fn fit_error(&self, cx: &CycleContext<'_>) -> FitError {
        let snapshot = cx.snapshot();
        let mut failures: Vec<(u32, u16, Reason)> = self.scratch.failures.clone();
        failures.sort_by_key(|f| f.0);
        let mut prepared: Vec<Option<PluginState>> = Vec::new();
        if self.always_check_all_predicates {
            for p in &self.predicates {
                prepared.push(match p.prepare(cx) {
                    Ok(Prepared::Run(s)) => Some(s),
                    _ => None,
                });
            }
        }
        let failures = failures
            .into_iter()
            .map(|(idx, pi, reason)| {
                let node_ref = snapshot.node(idx as usize);
                let mut codes: Vec<(usize, Reason)> = vec![(pi as usize, reason)];
                if self.always_check_all_predicates {
                    codes.clear();
                    for (i, p) in self.predicates.iter().enumerate() {
                        if let Some(state) = &prepared[i]
                            && let Err(r) = p.filter(cx, state, node_ref)
                        {
                            codes.push((i, r));
                        }
                    }
                }
                let mut messages = Vec::new();
                for (i, r) in &codes {
                    match r {
                        Reason::Custom(code) => {
                            messages.push(self.predicates[*i].explain(*code).into_owned())
                        }
                        _ => r.write_messages(
                            cx.requests(),
                            node_ref.node(),
                            &mut |m: Cow<'static, str>| messages.push(m.into_owned()),
                        ),
                    }
                }
                NodeFailure {
                    node: node_ref.info().name().to_string(),
                    codes: codes
                        .into_iter()
                        .map(|(i, r)| (self.predicates[i].name().to_string(), r))
                        .collect(),
                    messages,
                }
            })
            .collect();
        FitError {
            pod: cx.pod().key(),
            num_all_nodes: snapshot.len(),
            failures,
        }
    }
}
