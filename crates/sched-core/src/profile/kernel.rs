//! The fused scoring pass of the fast path: the fast scores of all feasible nodes in one
//! branch-free kernel over the snapshot's load columns, compiled for the exact set of formulas
//! present and, where the CPU has AVX2, for four nodes per instruction.

use std::ops::Range;

use rand::RngCore;

use crate::fast_path::{FastScore, FormulaKind, balanced_v1_34_general, general_scores};
use crate::formulas::out_of_range_bits;
use crate::select::Reservoir;
use crate::snapshot::{EXACT_REQUEST, LoadColumns, NodeSummary};

/// A pod's non-zero CPU and memory requests as one `f64` pair, and whether they are in the
/// exact range (`0..=2^52`, so that a node's requests plus the pod's stay exact).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Requests {
    pair: [f64; 2],
    exact: bool,
}

impl Requests {
    pub(crate) fn of(milli_cpu: i64, memory: i64) -> Requests {
        Requests {
            pair: [milli_cpu as f64, memory as f64],
            exact: (0..=EXACT_REQUEST).contains(&milli_cpu)
                && (0..=EXACT_REQUEST).contains(&memory),
        }
    }
}

/// Adding 1.5 * 2^52 to an `f64` of magnitude below 2^51 rounds it to the nearest integer.
const ROUND: f64 = 6_755_399_441_055_744.0;

/// `v` rounded to the nearest integer (ties to even), for `|v| < 2^51`, as an `f64` and as an
/// integer from the same sum: the integer is the low bits of `v + 1.5 * 2^52`, which equals
/// `round(v) + 1.5 * 2^52` exactly.
#[inline(always)]
fn rounded(v: f64) -> (f64, i64) {
    let sum = v + ROUND;
    (
        sum - ROUND,
        (sum.to_bits() as i64).wrapping_sub(ROUND.to_bits() as i64),
    )
}

/// How close to an integer a balanced-score estimate may come before kube's exact divisions
/// decide: the estimate and kube's own `f64` result are each within 10^-13 of the real
/// value, so farther from an integer all three truncate alike.
const NEAR_INTEGER: f64 = 1e-9;

/// The kernel's results, indexed by node (reused from cycle to cycle).
#[derive(Clone, Debug, Default)]
pub(crate) struct KernelOut {
    /// Scores in `i32` (they are in 0..=100 wherever `unsure` is 0): half the memory traffic.
    least: Vec<i32>,
    most: Vec<i32>,
    balanced: Vec<i32>,
    /// 1 when the exact forms cannot decide (node or pod out of the exact range, or a
    /// balanced estimate too near an integer): kube's formulas give that node's scores.
    unsure: Vec<i32>,
}

impl KernelOut {
    /// Room for `n` nodes.
    pub(crate) fn prepare(&mut self, n: usize) {
        for v in [
            &mut self.least,
            &mut self.most,
            &mut self.balanced,
            &mut self.unsure,
        ] {
            if v.len() < n {
                v.resize(n, 0);
            }
        }
    }
}

/// The least-requested, most-requested and balanced scores (those asked for) of the nodes
/// `range`, flagging in `out.unsure` the nodes the exact forms cannot decide.
///
/// kube divides: `requested / allocatable` in `f64` for BalancedResourceAllocation, integer
/// quotients for the least- and most-requested scores. Here each resource's ratio is
/// estimated by multiplying with the node's reciprocal (within 2.3 * 10^-16 of the real
/// ratio), and each score made exact from it:
/// - least requested, `floor((alloc - req) * 100 / alloc)`: the estimate `100 - 100 * ratio`
///   is within 10^-13 of the real quotient, so rounding it gives the quotient or the one
///   above, and one exact comparison (`q * alloc > numerator`, products below 2^53) settles
///   which; 0 when the request exceeds the capacity. Most requested likewise from `100 *
///   ratio`, 100 at or above the capacity.
/// - balanced: a fraction is at least 1 exactly when the request is at least the capacity
///   (below it the ratio is at most 1 - 2^-46, which rounds below 1); otherwise the score
///   `(1 - |cpu - memory|) * 100` lies in (0, 100], and unless its estimate is within
///   [`NEAR_INTEGER`] of an integer its integer part is kube's.
///
/// Comparisons come from sign bits of exact differences (`x - x` is +0.0, so equality has
/// sign 0) and apply as integer masks: no branch, so the loop runs over consecutive nodes in
/// SIMD lanes, and the quotient corrections (about half apply, in no predictable order)
/// cannot mispredict.
#[inline(always)]
///
/// With `V1_34`, the balanced score is kube v1.34's instead: fractions of the *actual*
/// requests (`loads.req` plus `actual`, the pod's actual requests), each capped at 1, and
/// `(1 - |cpu - memory| / 2) * 100`, with the same near-integer rule.
pub(crate) fn kernel<
    const LEAST: bool,
    const MOST: bool,
    const BALANCED: bool,
    const V1_34: bool,
>(
    loads: &LoadColumns,
    range: Range<usize>,
    pod: &Requests,
    actual: &Requests,
    out: &mut KernelOut,
) {
    fn cols(c: &[Vec<f64>; 2], range: Range<usize>) -> [&[f64]; 2] {
        [&c[0][range.clone()], &c[1][range]]
    }
    let (nz, req, alloc, inv) = (
        cols(&loads.nz, range.clone()),
        cols(&loads.req, range.clone()),
        cols(&loads.alloc, range.clone()),
        cols(&loads.inv, range.clone()),
    );
    let len = range.len();
    let (least, most, balanced, unsure) = (
        &mut out.least[range.clone()],
        &mut out.most[range.clone()],
        &mut out.balanced[range.clone()],
        &mut out.unsure[range],
    );
    assert!(
        nz.iter()
            .chain(&req)
            .chain(&alloc)
            .chain(&inv)
            .all(|c| c.len() == len)
    );
    assert!(least.len() == len && most.len() == len && balanced.len() == len);
    assert!(unsure.len() == len);
    let pod_unsure = i64::from(!pod.exact) | i64::from(V1_34 && !actual.exact);
    for j in 0..len {
        let (mut l, mut m, mut ratio, mut full) = ([0i64; 2], [0i64; 2], [0.0; 2], [0i64; 2]);
        let mut capped = [0.0f64; 2];
        let mut out_of_range = pod_unsure;
        for r in 0..2 {
            let (a, requested) = (alloc[r][j], nz[r][j] + pod.pair[r]);
            out_of_range |= negative(a); // -1 marks a node out of the exact range
            ratio[r] = requested * inv[r][j];
            let free = a - requested;
            let over = negative(free); // requested > alloc
            full[r] = 1 - negative(requested - a); // requested >= alloc
            if LEAST {
                let (q, qi) = rounded(100.0 - 100.0 * ratio[r]);
                let q = qi.wrapping_sub(negative(free * 100.0 - q * a));
                l[r] = q & (over - 1);
            }
            if MOST {
                let (q, qi) = rounded(100.0 * ratio[r]);
                let q = qi.wrapping_sub(negative(requested * 100.0 - q * a));
                let keep = full[r] - 1; // all ones unless full
                m[r] = (q & keep) | (100 & !keep);
            }
            if BALANCED && V1_34 {
                let used = req[r][j] + actual.pair[r];
                let at_capacity = 1 - negative(used - a); // used >= alloc: fraction 1
                let estimate = used * inv[r][j];
                let mask = at_capacity.wrapping_neg() as u64; // all ones when at capacity
                capped[r] =
                    f64::from_bits((estimate.to_bits() & !mask) | (1.0f64.to_bits() & mask));
            }
        }
        // Both capacities are positive and every score is in 0..=100: plain halving. (Lanes
        // out of the exact range hold garbage, flagged below; the arithmetic wraps.)
        if LEAST {
            least[j] = (l[0].wrapping_add(l[1]) >> 1) as i32;
        }
        if MOST {
            most[j] = (m[0].wrapping_add(m[1]) >> 1) as i32;
        }
        if BALANCED && V1_34 {
            let estimate = (1.0 - ((capped[0] - capped[1]) / 2.0).abs()) * 100.0;
            let (nearest, ni) = rounded(estimate);
            let near = i64::from((estimate - nearest).abs() < NEAR_INTEGER);
            balanced[j] = ni.wrapping_sub(negative(estimate - nearest)) as i32;
            out_of_range |= near;
        } else if BALANCED {
            let keep = (full[0] | full[1]) - 1; // all ones unless a resource is full
            let estimate = (1.0 - (ratio[0] - ratio[1]).abs()) * 100.0;
            let (nearest, ni) = rounded(estimate);
            let near = i64::from((estimate - nearest).abs() < NEAR_INTEGER);
            balanced[j] = (ni.wrapping_sub(negative(estimate - nearest)) & keep) as i32;
            out_of_range |= near & keep;
        }
        unsure[j] = out_of_range as i32;
    }
}

/// 1 if `v` is negative (its sign bit), else 0.
#[inline(always)]
fn negative(v: f64) -> i64 {
    (v.to_bits() >> 63) as i64
}

/// Where one fast priority's scores go: its row in the score table and its weight.
#[derive(Clone, Copy, Debug)]
struct Output {
    row: usize,
    weight: i64,
}

/// The fast priorities of one cycle, arranged so that a node's scores share their ratios
/// and the loop over nodes is compiled for the exact set of formulas present (no per-node
/// dispatch on the kind).
#[derive(Clone, Copy, Debug)]
pub(crate) struct FastScorer {
    milli_cpu: i64,
    memory: i64,
    least: Option<Output>,
    most: Option<Output>,
    balanced: Option<Output>,
    /// The balanced score is kube v1.34's, for a pod with these actual requests.
    balanced_v1_34: Option<(i64, i64)>,
}

impl FastScorer {
    /// Arranges the fast priorities `(index, form, weight)` of a cycle; the scores of priority
    /// `index` go to table row `index`. `None` when they do not share one pod request or a
    /// formula appears twice (never the case for the built-ins; such a cycle scores node by
    /// node with [`FastScore::score`]).
    pub(crate) fn new(fast: &[(usize, FastScore, i64)]) -> Option<FastScorer> {
        fast.first()?;
        let mut scorer = FastScorer {
            milli_cpu: 0,
            memory: 0,
            least: None,
            most: None,
            balanced: None,
            balanced_v1_34: None,
        };
        let mut pair = None;
        for &(row, d, weight) in fast {
            if d.kind == FormulaKind::BalancedV1_34 {
                scorer.balanced_v1_34 = Some((d.milli_cpu, d.memory));
            } else if *pair.get_or_insert((d.milli_cpu, d.memory)) != (d.milli_cpu, d.memory) {
                return None;
            }
            let slot = match d.kind {
                FormulaKind::LeastRequested => &mut scorer.least,
                FormulaKind::MostRequested => &mut scorer.most,
                FormulaKind::Balanced | FormulaKind::BalancedV1_34 => &mut scorer.balanced,
            };
            if slot.replace(Output { row, weight }).is_some() {
                return None;
            }
        }
        (scorer.milli_cpu, scorer.memory) = pair.unwrap_or((0, 0));
        Some(scorer)
    }

    /// Scores all feasible nodes: each score goes to `table[row * f + k]` (`f =
    /// feasible.len()`) and its weighted value is added to `totals[k]`; with `select`, the
    /// totals are offered to it in order. Returns the OR of [`out_of_range_bits`] over the
    /// scores kube's general formulas gave (the exact forms are in 0..=100 by construction).
    ///
    /// The kernel runs over the span of node indices the feasible nodes lie in (one range, or
    /// two when evaluation wrapped around), rejected nodes included: consecutive nodes are
    /// what lets it use SIMD lanes. The results are then gathered in feasible order.
    pub(crate) fn run(
        &self,
        nodes: (&LoadColumns, &[NodeSummary]),
        feasible: &[u32],
        out: &mut KernelOut,
        table: &mut [i64],
        totals: &mut [i64],
        select: Option<(&mut Reservoir, &mut dyn RngCore)>,
    ) -> i64 {
        let args = (nodes, feasible, out, table, totals);
        if let Some((reservoir, rng)) = select {
            return self.run_for(args, |totals, k| reservoir.offer_all(totals, k, rng));
        }
        self.run_for(args, |_, _| {})
    }

    /// [`FastScorer::run`], calling `each(totals, k)` with the weighted totals of the nodes
    /// at `k..` once they are complete.
    ///
    /// The pass is compiled for the widest vectors the CPU has: with AVX2 (x86-64), the
    /// kernel scores four nodes per instruction instead of two. The results are the same bit
    /// for bit: the pass uses only IEEE-exact `f64` operations (add, subtract, multiply,
    /// absolute value) and integer operations, and Rust never fuses a multiply and an add
    /// (tested: `avx2_pass_matches_baseline`).
    #[inline(always)]
    fn run_for(&self, args: RunArgs<'_>, each: impl FnMut(&[i64], usize)) -> i64 {
        #[cfg(target_arch = "x86_64")]
        if std::is_x86_feature_detected!("avx2") {
            // The crate's only `unsafe`: calling a function compiled for AVX2 needs it.
            // Measured on the benchmark (5,000 nodes): 5.7 µs per pod instead of 6.8 at the
            // adaptive percentage, 30 µs instead of 41 with every node scored.
            // SAFETY: `run_avx2` requires AVX2 and nothing else, and the CPU has it (checked
            // just above; the check includes the OS's support for the wider registers).
            #[allow(unsafe_code)]
            return unsafe { self.run_avx2(args, each) };
        }
        self.run_any(args, each)
    }

    /// [`FastScorer::run_any`] with AVX2 enabled.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn run_avx2(&self, args: RunArgs<'_>, each: impl FnMut(&[i64], usize)) -> i64 {
        self.run_any(args, each)
    }

    /// The pass compiled for the formulas present.
    #[inline(always)]
    fn run_any(&self, args: RunArgs<'_>, each: impl FnMut(&[i64], usize)) -> i64 {
        match (
            self.least.is_some(),
            self.most.is_some(),
            self.balanced.is_some(),
            self.balanced_v1_34.is_some(),
        ) {
            (true, false, true, false) => self.run_with::<true, false, true, false>(args, each),
            (true, false, true, true) => self.run_with::<true, false, true, true>(args, each),
            (true, false, false, _) => self.run_with::<true, false, false, false>(args, each),
            (false, true, true, false) => self.run_with::<false, true, true, false>(args, each),
            (false, true, true, true) => self.run_with::<false, true, true, true>(args, each),
            (false, true, false, _) => self.run_with::<false, true, false, false>(args, each),
            (false, false, true, false) => self.run_with::<false, false, true, false>(args, each),
            (false, false, true, true) => self.run_with::<false, false, true, true>(args, each),
            (true, true, true, false) => self.run_with::<true, true, true, false>(args, each),
            (true, true, true, true) => self.run_with::<true, true, true, true>(args, each),
            (true, true, false, _) => self.run_with::<true, true, false, false>(args, each),
            (false, false, false, _) => 0,
        }
    }

    #[inline(always)]
    fn run_with<const LEAST: bool, const MOST: bool, const BALANCED: bool, const V1_34: bool>(
        &self,
        ((loads, summaries), feasible, out, table, totals): RunArgs<'_>,
        mut each: impl FnMut(&[i64], usize),
    ) -> i64 {
        let f = feasible.len();
        let (Some(&first), Some(&last)) = (feasible.first(), feasible.last()) else {
            return 0;
        };
        let (first, last) = (first as usize, last as usize);
        let pod = Requests::of(self.milli_cpu, self.memory);
        let (actual_cpu, actual_memory) = self.balanced_v1_34.unwrap_or((0, 0));
        let actual = Requests::of(actual_cpu, actual_memory);
        out.prepare(loads.len());
        if first <= last {
            kernel::<LEAST, MOST, BALANCED, V1_34>(loads, first..last + 1, &pod, &actual, out);
        } else {
            // Evaluation wrapped around the end of the node list.
            kernel::<LEAST, MOST, BALANCED, V1_34>(loads, first..loads.len(), &pod, &actual, out);
            kernel::<LEAST, MOST, BALANCED, V1_34>(loads, 0..last + 1, &pod, &actual, out);
        }
        let unused = Output {
            row: usize::MAX,
            weight: 0,
        };
        let (least, most, balanced) = (
            self.least.unwrap_or(unused),
            self.most.unwrap_or(unused),
            self.balanced.unwrap_or(unused),
        );
        // The table rows this pass writes (an absent formula's stays empty).
        let mut rows: [&mut [i64]; 3] = [&mut [], &mut [], &mut []];
        for (r, row) in table.chunks_exact_mut(f).enumerate() {
            let slot = match r {
                _ if r == least.row => 0,
                _ if r == most.row => 1,
                _ if r == balanced.row => 2,
                _ => continue,
            };
            rows[slot] = row;
        }
        let [least_row, most_row, balanced_row] = rows;
        assert!(!LEAST || least_row.len() == f);
        assert!(!MOST || most_row.len() == f);
        assert!(!BALANCED || balanced_row.len() == f);
        let totals = &mut totals[..f];
        let weights = [least.weight, most.weight, balanced.weight];
        let mut rows = [least_row, most_row, balanced_row];
        let unsure = gather::<LEAST, MOST, BALANCED>(out, feasible, weights, &mut rows, totals);
        let mut bad = 0i64;
        if unsure != 0 {
            // Nodes the kernel was unsure of (none on most clusters): kube's formulas, in
            // place of the kernel's numbers.
            for (j, &i) in feasible.iter().enumerate() {
                let i = i as usize;
                if out.unsure[i] == 0 {
                    continue;
                }
                let mut scores = general_scores::<LEAST, MOST, false>(
                    &summaries[i],
                    self.milli_cpu,
                    self.memory,
                );
                if BALANCED && V1_34 {
                    scores[2] = balanced_v1_34_general(&summaries[i], actual_cpu, actual_memory);
                } else if BALANCED {
                    scores[2] = general_scores::<false, false, true>(
                        &summaries[i],
                        self.milli_cpu,
                        self.memory,
                    )[2];
                }
                bad |= scores.iter().fold(0, |acc, &v| acc | out_of_range_bits(v));
                for (k, on) in [LEAST, MOST, BALANCED].into_iter().enumerate() {
                    if on {
                        let w = weights[k];
                        totals[j] = totals[j]
                            .wrapping_sub(rows[k][j].wrapping_mul(w))
                            .wrapping_add(scores[k].wrapping_mul(w));
                        rows[k][j] = scores[k];
                    }
                }
            }
        }
        each(totals, 0);
        bad
    }
}

/// Copies the kernel's scores of the feasible nodes into the table rows (in feasible order)
/// and adds their weighted sum to `totals`; returns the OR of their `unsure` flags.
#[inline(always)]
fn gather<const LEAST: bool, const MOST: bool, const BALANCED: bool>(
    out: &KernelOut,
    feasible: &[u32],
    weights: [i64; 3],
    rows: &mut [&mut [i64]; 3],
    totals: &mut [i64],
) -> i32 {
    let n = out.unsure.len();
    if n == 0 {
        return 0;
    }
    let (ol, om, ob, ou) = (
        &out.least[..n],
        &out.most[..n],
        &out.balanced[..n],
        &out.unsure[..n],
    );
    let f = totals.len();
    let [lr, mr, br] = rows;
    let (lr, mr, br) = (
        &mut lr[..if LEAST { f } else { 0 }],
        &mut mr[..if MOST { f } else { 0 }],
        &mut br[..if BALANCED { f } else { 0 }],
    );
    let mut unsure = 0;
    for (j, (&i, total)) in feasible[..f].iter().zip(totals.iter_mut()).enumerate() {
        // Feasible indices are below `n`; the `min` lets the compiler drop bounds checks.
        let i = (i as usize).min(n - 1);
        unsure |= ou[i];
        let mut t = *total;
        if LEAST {
            let v = i64::from(ol[i]);
            lr[j] = v;
            t = t.wrapping_add(v.wrapping_mul(weights[0]));
        }
        if MOST {
            let v = i64::from(om[i]);
            mr[j] = v;
            t = t.wrapping_add(v.wrapping_mul(weights[1]));
        }
        if BALANCED {
            let v = i64::from(ob[i]);
            br[j] = v;
            t = t.wrapping_add(v.wrapping_mul(weights[2]));
        }
        *total = t;
    }
    unsure
}

type RunArgs<'a> = (
    (&'a LoadColumns, &'a [NodeSummary]),
    &'a [u32],
    &'a mut KernelOut,
    &'a mut [i64],
    &'a mut [i64],
);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formulas::{
        average_of, balanced_score, balanced_score_v1_34, least_requested_score,
        most_requested_score,
    };
    use proptest::prelude::*;

    fn load(cpu: i64, cpu_alloc: i64, memory: i64, memory_alloc: i64) -> NodeSummary {
        NodeSummary {
            nz_milli_cpu: cpu,
            nz_memory: memory,
            req_milli_cpu: cpu,
            req_memory: memory,
            alloc_milli_cpu: cpu_alloc,
            alloc_memory: memory_alloc,
            ..NodeSummary::default()
        }
    }

    /// kube's formulas, as the plugins compute them node by node.
    fn reference(kind: FormulaKind, c: i64, ca: i64, m: i64, ma: i64) -> i64 {
        match kind {
            FormulaKind::LeastRequested => average_of(least_requested_score, c, ca, m, ma),
            FormulaKind::MostRequested => average_of(most_requested_score, c, ca, m, ma),
            FormulaKind::Balanced => balanced_score(c, ca, m, ma),
            FormulaKind::BalancedV1_34 => balanced_score_v1_34(c, ca, m, ma),
        }
    }

    /// A node's score through the kernel, or kube's formulas where it is unsure (as the
    /// scheduler does).
    fn kernel_score(d: &FastScore, s: &NodeSummary) -> i64 {
        let mut loads = LoadColumns::default();
        loads.push(s);
        let mut out = KernelOut::default();
        out.prepare(1);
        let pod = Requests::of(d.milli_cpu, d.memory);
        if d.kind == FormulaKind::BalancedV1_34 {
            kernel::<false, false, true, true>(&loads, 0..1, &Requests::of(0, 0), &pod, &mut out);
        } else {
            kernel::<true, true, true, false>(&loads, 0..1, &pod, &Requests::of(0, 0), &mut out);
        }
        if out.unsure[0] != 0 {
            return d.score(s);
        }
        i64::from(match d.kind {
            FormulaKind::LeastRequested => out.least[0],
            FormulaKind::MostRequested => out.most[0],
            FormulaKind::Balanced | FormulaKind::BalancedV1_34 => out.balanced[0],
        })
    }

    fn check(c: i64, ca: i64, m: i64, ma: i64, pod_c: i64, pod_m: i64) {
        let n = load(c, ca, m, ma);
        for (kind, d) in [
            (
                FormulaKind::LeastRequested,
                FastScore::least_requested(pod_c, pod_m),
            ),
            (
                FormulaKind::MostRequested,
                FastScore::most_requested(pod_c, pod_m),
            ),
            (FormulaKind::Balanced, FastScore::balanced(pod_c, pod_m)),
        ] {
            let want = reference(kind, c.wrapping_add(pod_c), ca, m.wrapping_add(pod_m), ma);
            assert_eq!(
                kernel_score(&d, &n),
                want,
                "{kind:?} ({c}+{pod_c})/{ca} ({m}+{pod_m})/{ma}"
            );
        }
        // kube v1.34's balanced score reads the actual requests, not the non-zero ones.
        for (rc, rm) in [(c, m), (c / 2, m / 3)] {
            let mut n = load(c, ca, m, ma);
            (n.req_milli_cpu, n.req_memory) = (rc, rm);
            let want = reference(
                FormulaKind::BalancedV1_34,
                rc.wrapping_add(pod_c),
                ca,
                rm.wrapping_add(pod_m),
                ma,
            );
            let d = FastScore::balanced_v1_34(pod_c, pod_m);
            assert_eq!(
                kernel_score(&d, &n),
                want,
                "v1.34 ({rc}+{pod_c})/{ca} ({rm}+{pod_m})/{ma}"
            );
        }
    }

    #[test]
    fn scores_on_exact_integers_and_boundaries() {
        // Real scores that are integers, where a multiplied estimate could land either side.
        for (c, ca, m, ma) in [
            (6000, 10000, 5000, 20000), // kube's 65.000000000000002 -> 65
            (16000, 32000, 32, 128),    // 75 exactly
            (1, 3, 0, 5),
            (0, 1, 0, 1),
            (999, 1000, 1, 1000),
            (1000, 1000, 0, 10), // full: balanced 0
            (0, 0, 0, 0),
            (5, 0, 5, 7),
            (-5, 10, 3, 10), // negative requests: kube's general formulas
            (1 << 46, 1 << 46, 1, 1 << 46),
            ((1 << 46) - 1, 1 << 46, 1, (1 << 46) + 1),
            (i64::MAX - 10, 100, 5, 100),
            (3, 7, 3, 7),
            (700, 7000, 3, 30),
        ] {
            check(c, ca, m, ma, 0, 0);
            check(c, ca, m, ma, 100, 1 << 20);
        }
        // Every pair of fractions k/ca, j/ma on small capacities: many integer scores.
        for ca in [1, 2, 3, 4, 5, 8, 10, 20, 25, 40, 64, 100, 128, 1000] {
            for ma in [1, 3, 4, 10, 16, 50, 100, 256, 1024] {
                for c in 0..=ca + 1 {
                    for m in [0, 1, ma / 4, ma / 3, ma / 2, ma - 1, ma, ma + 1] {
                        check(c, ca, m, ma, 0, 0);
                    }
                }
            }
        }
    }

    proptest! {
        #[test]
        fn scores_match_kubes_formulas(
            ca in prop_oneof![0i64..=4, 1i64..=100_000, 1i64..=(1 << 46), ((1i64 << 46) - 3)..((1i64 << 46) + 3), any::<i64>()],
            ma in prop_oneof![0i64..=4, 1i64..=(1 << 40), 1i64..=(1 << 46), any::<i64>()],
            cf in prop_oneof![0.0f64..1.2, Just(0.5), Just(0.25), Just(1.0)],
            mf in prop_oneof![0.0f64..1.2, Just(0.5), Just(0.75), Just(1.0)],
            raw in prop::bool::weighted(0.1),
            any_c: i64, any_m: i64,
            pod_c in prop_oneof![Just(0i64), 0i64..=4000, any::<i64>()],
            pod_m in prop_oneof![Just(0i64), 0i64..=(1 << 32), any::<i64>()],
        ) {
            // Requests mostly as fractions of the capacity (where rounding matters), sometimes
            // anything at all.
            let (c, m) = if raw {
                (any_c, any_m)
            } else {
                ((ca as f64 * cf) as i64, (ma as f64 * mf) as i64)
            };
            check(c, ca, m, ma, pod_c, pod_m);
        }

        /// The scoring pass as the CPU runs it (the AVX2 build where the CPU has AVX2) gives
        /// the same rows, totals, pick and draws, bit for bit, as the baseline build; and
        /// every row holds kube's score for its node. Runs of nodes are long enough for full
        /// vectors and their remainders; evaluation may wrap around the node list.
        #[test]
        fn avx2_pass_matches_baseline(
            nodes in prop::collection::vec(
                (
                    prop_oneof![1i64..=64_000, 0i64..=4, any::<i64>()],
                    prop_oneof![1i64..=(1 << 40), 0i64..=4, any::<i64>()],
                    0.0f64..1.3,
                    0.0f64..1.3,
                    prop::bool::weighted(0.8),
                ),
                1..40,
            ),
            pod_c in prop_oneof![0i64..=4000, any::<i64>()],
            pod_m in prop_oneof![0i64..=(1 << 32), any::<i64>()],
            start in 0usize..40,
            formulas in 1usize..8,
            weights in prop::array::uniform3(1i64..=10),
            seed: u64,
            v1_34: bool,
        ) {
            let n = nodes.len();
            let summaries: Vec<NodeSummary> = nodes
                .iter()
                .map(|&(ca, ma, cf, mf, _)| load((ca as f64 * cf) as i64, ca, (ma as f64 * mf) as i64, ma))
                .collect();
            let mut loads = LoadColumns::default();
            summaries.iter().for_each(|s| loads.push(s));
            let start = start % n;
            let feasible: Vec<u32> = (start..n)
                .chain(0..start)
                .filter(|&i| nodes[i].4)
                .map(|i| i as u32)
                .collect();
            let kinds = [
                (FormulaKind::LeastRequested, FastScore::least_requested(pod_c, pod_m)),
                (FormulaKind::MostRequested, FastScore::most_requested(pod_c, pod_m)),
                if v1_34 {
                    (FormulaKind::BalancedV1_34, FastScore::balanced_v1_34(pod_c, pod_m))
                } else {
                    (FormulaKind::Balanced, FastScore::balanced(pod_c, pod_m))
                },
            ];
            let fast: Vec<(usize, FastScore, i64)> = (0..3)
                .filter(|k| formulas & (1 << k) != 0)
                .map(|k| (k, kinds[k].1, weights[k]))
                .collect();
            let scorer = FastScorer::new(&fast).expect("one request, distinct formulas");
            let f = feasible.len();
            let pass = |wide: bool| {
                let (mut out, mut table, mut totals) = (KernelOut::default(), vec![0; 3 * f], vec![0; f]);
                let mut reservoir = crate::select::Reservoir::EMPTY;
                let mut rng = <rand_chacha::ChaCha8Rng as rand::SeedableRng>::seed_from_u64(seed);
                let args = ((&loads, &summaries[..]), &feasible[..], &mut out, &mut table[..], &mut totals[..]);
                let each = |t: &[i64], k| reservoir.offer_all(t, k, &mut rng);
                let bad = if wide {
                    #[cfg(target_arch = "x86_64")]
                    if std::is_x86_feature_detected!("avx2") {
                        // SAFETY: the CPU has AVX2, checked just above.
                        #[allow(unsafe_code)]
                        unsafe {
                            scorer.run_avx2(args, each)
                        }
                    } else {
                        scorer.run_for(args, each)
                    }
                    #[cfg(not(target_arch = "x86_64"))]
                    scorer.run_for(args, each)
                } else {
                    scorer.run_any(args, each)
                };
                (table, totals, bad, reservoir.selected, rand::RngCore::next_u64(&mut rng))
            };
            let (base, wide) = (pass(false), pass(true));
            prop_assert_eq!(&base, &wide);
            let (table, totals, bad, ..) = base;
            for (j, &i) in feasible.iter().enumerate() {
                let s = &summaries[i as usize];
                let (rc, rm) = (s.nz_milli_cpu.wrapping_add(pod_c), s.nz_memory.wrapping_add(pod_m));
                let mut total = 0i64;
                for &(k, _, w) in &fast {
                    let want = reference(kinds[k].0, rc, s.alloc_milli_cpu, rm, s.alloc_memory);
                    prop_assert_eq!(table[k * f + j], want, "{:?} node {}", kinds[k].0, i);
                    total = total.wrapping_add(want.wrapping_mul(w));
                }
                prop_assert_eq!(totals[j], total);
            }
            let any_out_of_range = (0..3 * f).any(|x| formulas & (1 << (x / f.max(1))) != 0 && !(0..=100).contains(&table[x]));
            prop_assert_eq!(bad != 0, any_out_of_range);
        }
    }
}
