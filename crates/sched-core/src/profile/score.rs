//! Scoring: each priority's prepared form, the fast priorities in one fused kernel pass (which
//! also selects the host as it goes when nothing else scores), the others through their
//! `score_batch` in chunks, normalization, weights and the range check.

use super::cache::Cache;
use super::kernel::FastScorer;
use super::{Profile, ScheduleError};
use crate::fast_path::FastScore;
use crate::formulas::{MAX_NODE_SCORE, out_of_range_bits};
use crate::framework::{CycleContext, PreparedScore, PreparedScoring};
use crate::select::Reservoir;
use crate::snapshot::NodeSummary;

/// Nodes per batch in scoring: their summaries stay in the L1 cache across priorities.
const SCORE_CHUNK: usize = 256;

/// Scores the feasible nodes at positions `range` with every fast priority, node by node
/// (when [`FastScorer`] cannot arrange them): writes each score into its row of `table`
/// (priority-major, rows as long as `feasible`) and adds the weighted scores to `totals`.
/// Returns the OR of [`out_of_range_bits`] over the scores.
fn score_each(
    fast: &[(usize, FastScore, i64)],
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
        for &(pi, d, w) in fast {
            let v = d.score(node);
            out_of_range |= out_of_range_bits(v);
            table[pi * f + k] = v;
            total = total.wrapping_add(v.wrapping_mul(w));
        }
        totals[k] = total;
    }
    out_of_range
}

impl Profile {
    /// Scores the feasible nodes into `scratch.totals` (and the table). When every priority
    /// is constant or fast, the fused pass also selects the host as it goes (the same offers
    /// in the same order as [`select_host`] over the totals, so the same pick) and its index
    /// is returned.
    pub(super) fn prioritize(
        &self,
        cache: &mut Cache,
        cx: &CycleContext<'_>,
    ) -> Result<Option<usize>, ScheduleError> {
        let s = &mut cache.scratch;
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
        let result = self.prioritize_with(cache, cx, &mut prepared);
        prepared.clear();
        cache.scratch.prepared = prepared;
        result
    }

    fn prioritize_with(
        &self,
        cache: &mut Cache,
        cx: &CycleContext<'_>,
        prepared: &mut Vec<PreparedScoring>,
    ) -> Result<Option<usize>, ScheduleError> {
        let (s, rng) = cache.scratch_and_rng();
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
        // Priorities with a fast form are computed here, all in one loop (below); the others
        // through their `score_batch`.
        s.fast.clear();
        for (pi, prep) in prepared.iter().enumerate() {
            if !self.fast_path {
                break;
            }
            if let PreparedScore::Run(state) = prep
                && let Some(d) = self.priorities[pi].0.fast_score(cx, state)
            {
                s.fast.push((pi, d, self.priorities[pi].1));
            }
        }
        let scorer = FastScorer::new(&s.fast);
        let fuse_select = scorer.is_some()
            && prepare_error.is_none()
            && prepared.iter().enumerate().all(|(pi, p)| {
                matches!(p, PreparedScore::Constant(_)) || s.fast.iter().any(|d| d.0 == pi)
            });
        let mut reservoir = Reservoir::EMPTY;
        let mut fast_out_of_range = 0i64;
        // Score chunk by chunk, every running priority on one chunk of nodes while the chunk's
        // summaries are in the L1 cache, instead of streaming all of them once per priority.
        for lo in (0..f).step_by(SCORE_CHUNK) {
            let hi = (lo + SCORE_CHUNK).min(f);
            for (pi, prep) in prepared.iter().enumerate() {
                if let PreparedScore::Run(state) = prep
                    && !s.fast.iter().any(|d| d.0 == pi)
                {
                    self.priorities[pi].0.score_batch(
                        cx,
                        state,
                        &s.feasible[lo..hi],
                        &mut s.table[pi * f + lo..pi * f + hi],
                    );
                }
            }
            if scorer.is_none() && !s.fast.is_empty() {
                fast_out_of_range |= score_each(
                    &s.fast,
                    cx.snapshot().summaries(),
                    &s.feasible,
                    lo..hi,
                    &mut s.table,
                    &mut s.totals,
                );
            }
        }
        // The fast priorities in one pass over all feasible nodes.
        if let Some(scorer) = &scorer {
            fast_out_of_range |= scorer.run(
                (cx.snapshot().loads(), cx.snapshot().summaries()),
                &s.feasible,
                &mut s.kernel,
                &mut s.table,
                &mut s.totals,
                fuse_select.then_some((&mut reservoir, &mut *rng)),
            );
        }
        if fast_out_of_range != 0 {
            // Fast scores are always in range; were one not, report it as the general path
            // would (scanning the rows below).
            s.fast.clear();
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
                PreparedScore::Run(_) if s.fast.iter().any(|d| d.0 == pi) => {
                    // Scored, weighed and added by the fused pass.
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
}
