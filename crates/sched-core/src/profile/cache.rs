//! [`Cache`]: what a scheduling cycle writes, owned by one worker.

use std::fmt;
use std::sync::Mutex;

use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::kernel::KernelOut;
use crate::fast_path::FastScore;
use crate::framework::{ErasedState, PreparedScoring, Reason};
use crate::select::{EmptyScores, select_host};

/// The tie-breaking RNG. The built-in ChaCha8 is kept with its concrete type so that
/// `select_host`, which may draw several times per pod, inlines its generator instead of
/// calling through a `dyn RngCore` per draw; the stream is the same.
enum TieRng {
    ChaCha(Box<ChaCha8Rng>),
    Custom(Box<dyn RngCore + Send + Sync>),
}

/// A worker's scratch space for scheduling with a [`super::Profile`]: reused buffers (so the
/// hot path allocates nothing per node), the tie-breaking RNG and the round-robin start
/// index. Cheap to keep, not shared: one per scheduling thread. The results of the last cycle
/// stay readable through [`super::Profile::last_scores`].
pub struct Cache {
    rng: TieRng,
    pub(super) next_start_index: usize,
    pub(super) scratch: Scratch,
}

impl fmt::Debug for Cache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Cache")
            .field("next_start_index", &self.next_start_index)
            .finish_non_exhaustive()
    }
}

impl Default for Cache {
    fn default() -> Self {
        Cache::new()
    }
}

impl Cache {
    /// A cache whose tie-breaking RNG (ChaCha8) is seeded from the OS.
    pub fn new() -> Cache {
        Cache::with_tie_rng(TieRng::ChaCha(Box::new(ChaCha8Rng::from_os_rng())))
    }

    /// A cache whose tie-breaking RNG (ChaCha8) starts from `seed`: runs are reproducible.
    pub fn seeded(seed: u64) -> Cache {
        Cache::with_tie_rng(TieRng::ChaCha(Box::new(ChaCha8Rng::seed_from_u64(seed))))
    }

    /// A cache that breaks ties with this RNG.
    pub fn with_rng(rng: impl RngCore + Send + Sync + 'static) -> Cache {
        Cache::with_tie_rng(TieRng::Custom(Box::new(rng)))
    }

    fn with_tie_rng(rng: TieRng) -> Cache {
        Cache {
            rng,
            next_start_index: 0,
            scratch: Scratch::default(),
        }
    }

    /// The round-robin index the next cycle starts filtering at.
    pub fn next_start_index(&self) -> usize {
        self.next_start_index
    }

    /// Sets the round-robin index the next cycle starts filtering at (kube keeps one index
    /// for all its profiles: a scheduler with several caches carries it from one to the next).
    pub(crate) fn set_next_start_index(&mut self, index: usize) {
        self.next_start_index = index;
    }

    /// Counts the node at snapshot index `index`, rejected for predicate `predicate` and
    /// `reason` before the last cycle's search (a pod's nominated node, which kube tries
    /// first), as processed by that cycle when the search did not reach it: kube's processed
    /// nodes are the feasible ones plus every node with a status, so the next cycle starts
    /// one node further (of `n` in the snapshot). Returns whether it was counted.
    pub(crate) fn count_tried_first(
        &mut self,
        n: usize,
        index: usize,
        predicate: u16,
        reason: Reason,
    ) -> bool {
        let s = &mut self.scratch;
        let idx = index as u32;
        if n == 0 || s.feasible.contains(&idx) || s.failures.iter().any(|f| f.0 == idx) {
            return false;
        }
        s.failures.push((idx, predicate, reason));
        self.next_start_index = (self.next_start_index + 1) % n;
        true
    }

    /// The scratch buffers and the tie-breaking RNG, for a pass that selects as it scores.
    pub(super) fn scratch_and_rng(&mut self) -> (&mut Scratch, &mut dyn RngCore) {
        let rng: &mut dyn RngCore = match &mut self.rng {
            TieRng::ChaCha(rng) => rng.as_mut(),
            TieRng::Custom(rng) => rng.as_mut(),
        };
        (&mut self.scratch, rng)
    }

    /// Selects among the totals of the last scoring pass (kube's `selectHost`).
    pub(super) fn select_host(&mut self) -> Result<usize, EmptyScores> {
        match &mut self.rng {
            TieRng::ChaCha(rng) => select_host(&self.scratch.totals, rng.as_mut()),
            TieRng::Custom(rng) => select_host(&self.scratch.totals, rng),
        }
    }
}

/// A node's filtering outcome: passed, or the index of the first failing predicate and its
/// reason.
pub(super) type Outcome = Result<(), (u16, Reason)>;

/// The buffers of one cycle.
#[derive(Default)]
pub(super) struct Scratch {
    /// Snapshot indices of feasible nodes, in evaluation order.
    pub(super) feasible: Vec<u32>,
    /// Rejected nodes: (snapshot index, predicate index, first reason).
    pub(super) failures: Vec<(u32, u16, Reason)>,
    /// Per-chunk buffers for parallel filtering.
    pub(super) chunks: Vec<Mutex<ChunkBuf>>,
    /// Per chunk of a parallel filtering: 0 while it is not done, else 1 + its feasible
    /// nodes.
    pub(super) chunk_found: Vec<std::sync::atomic::AtomicUsize>,
    /// Buffers for sequential filtering.
    pub(super) seq: ChunkBuf,
    /// Per priority, per feasible node, final scores (priority-major).
    pub(super) table: Vec<i64>,
    /// Weighted totals aligned with `feasible`, without `constant_total`.
    pub(super) totals: Vec<i64>,
    /// Per priority: `Some(score)` when it gave every node the same score.
    pub(super) constants: Vec<Option<i64>>,
    /// Sum of weight x score over the constant priorities (the same for every node).
    pub(super) constant_total: i64,
    /// The priorities scored through their fast form: index, form, weight.
    pub(super) fast: Vec<(usize, FastScore, i64)>,
    /// The scoring kernel's per-node results.
    pub(super) kernel: KernelOut,
    /// The active predicates of the cycle with their states.
    pub(super) active: Vec<(u16, ErasedState)>,
    /// The predicates that narrowed the cycle's nodes (kube's `PreFilterResult`), by index;
    /// empty when none did.
    pub(super) narrowing: Vec<u16>,
    /// The nodes they narrowed it to that are in the snapshot: snapshot indices, ascending.
    pub(super) narrowed: Vec<u32>,
    /// The priorities' prepared forms of the cycle.
    pub(super) prepared: Vec<PreparedScoring>,
    /// The predicate the filter pass runs first (see [`super::Profile::lead_position`]),
    /// learned from the nodes it rejected and kept from cycle to cycle.
    pub(super) lead: Option<u16>,
    /// Failures per predicate index of the last batch (lead learning).
    pub(super) lead_counts: Vec<u32>,
}

impl Scratch {
    /// Takes the `blocked` nodes (snapshot index, predicate index, reason) out of a filter
    /// pass that started at `start` over `n` nodes and processed `processed` positions: a
    /// blocked node that passed becomes a failure with its blocked reason, one that failed
    /// takes its blocked reason (kube's filter with nominated pods fails first). Then, when
    /// more than `to_find` feasible nodes are left, the first one too many ends the search as
    /// it ends kube's (which drops that node): only the first `to_find` feasible nodes in
    /// evaluation order are kept, with the failures before the dropped one. Returns the
    /// positions processed before it (kube's processed nodes), or `processed` when the
    /// search found no node too many.
    pub(super) fn apply_blocked(
        &mut self,
        blocked: &[(u32, u16, Reason)],
        start: usize,
        n: usize,
        to_find: usize,
        processed: usize,
    ) -> usize {
        let find = |idx: u32| blocked.iter().find(|b| b.0 == idx).copied();
        for f in &mut self.failures {
            if let Some(b) = find(f.0) {
                *f = b;
            }
        }
        let failures = &mut self.failures;
        self.feasible.retain(|&i| match find(i) {
            Some(b) => {
                failures.push(b);
                false
            }
            None => true,
        });
        if self.feasible.len() <= to_find || to_find == 0 {
            return processed;
        }
        let pos = |idx: u32| (idx as usize + n - start) % n;
        let cut = pos(self.feasible[to_find]);
        self.feasible.truncate(to_find);
        self.failures.retain(|f| pos(f.0) < cut);
        cut
    }
}

/// Reusable buffers for filtering one chunk of nodes predicate by predicate.
#[derive(Default)]
pub(super) struct ChunkBuf {
    /// Snapshot indices of the chunk's nodes, in evaluation order.
    pub(super) nodes: Vec<u32>,
    /// Outcome per node of the chunk.
    pub(super) out: Vec<Outcome>,
    /// Nodes still passing: snapshot indices and positions in the chunk.
    pub(super) alive: Vec<u32>,
    pub(super) alive_pos: Vec<u32>,
    /// One predicate's answers for `alive`.
    pub(super) res: Vec<Result<(), Reason>>,
}
