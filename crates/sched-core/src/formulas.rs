//! The node-score scale and kube's per-node formulas, shared by the plugins and the scheduler's
//! fused scoring pass. A leaf: it imports nothing else from the crate.

/// The framework's highest node score.
pub const MAX_NODE_SCORE: i64 = 100;

/// kube's `DefaultNormalizeScore`: scale so the largest raw score becomes `max`; with
/// `reverse`, subtract from `max`. All zeros stay zero (or all `max` when reversed).
pub fn default_normalize(max: i64, reverse: bool, scores: &mut [i64]) {
    let top = scores.iter().copied().max().unwrap_or(0).max(0);
    if top == 0 {
        if reverse {
            scores.iter_mut().for_each(|s| *s = max);
        }
        return;
    }
    for s in scores.iter_mut() {
        let v = max * *s / top;
        *s = if reverse { max - v } else { v };
    }
}

/// Zero exactly when `v` is a valid node score (0..=100): neither `v` nor `v + 27` may have a
/// bit above the low 7 (negative values have the high bits set, 101..=127 reach bit 7 with
/// the 27 added).
#[inline]
pub(crate) fn out_of_range_bits(v: i64) -> i64 {
    const HIGH: i64 = !127;
    const _: () = assert!(MAX_NODE_SCORE + 27 == 127);
    (v & HIGH) | (v.wrapping_add(27) & HIGH)
}

/// Capacities up to this bound let [`quotient_to_100`] divide in `f64` exactly.
const F64_EXACT_CAPACITY: i64 = 1 << 46;

/// `numerator / capacity` with integer (truncating) division, for `0 <= numerator <=
/// 100 * capacity` and `0 < capacity <= 2^46`, computed with one `f64` division (several times
/// the throughput of a 64-bit integer division).
///
/// Exact: both operands are below 2^53, so they convert exactly. Let `q` be the true quotient
/// (0..=100). If `numerator / capacity` is an integer, the correctly rounded division returns
/// it exactly. Otherwise the real quotient lies at least `1 / capacity` below `q + 1`, while
/// the rounding error is at most half an ulp of a value <= 100, i.e. <= 100 * 2^-53 <
/// 2^-46 <= 1 / capacity: the result stays below `q + 1` (and, rounding being monotone, not
/// below `q`), so truncation gives `q`.
#[inline]
fn quotient_to_100(numerator: i64, capacity: i64) -> i64 {
    (numerator as f64 / capacity as f64) as i64
}

/// [`least_requested_score`] with an `f64` division where that is exact (see
/// [`quotient_to_100`]); the integer formula otherwise.
#[inline]
pub(crate) fn least_requested_score_fast(requested: i64, capacity: i64) -> i64 {
    if capacity > 0 && capacity <= F64_EXACT_CAPACITY && requested >= 0 {
        if requested > capacity {
            return 0;
        }
        return quotient_to_100((capacity - requested) * MAX_NODE_SCORE, capacity);
    }
    least_requested_score(requested, capacity)
}

/// [`most_requested_score`] with an `f64` division where that is exact (see
/// [`quotient_to_100`]); the integer formula otherwise.
#[inline]
pub(crate) fn most_requested_score_fast(requested: i64, capacity: i64) -> i64 {
    if capacity > 0 && capacity <= F64_EXACT_CAPACITY && requested >= 0 {
        return quotient_to_100(requested.min(capacity) * MAX_NODE_SCORE, capacity);
    }
    most_requested_score(requested, capacity)
}

/// kube's `leastRequestedScore`: the unused share of a resource on 0..=100; 0 when the node
/// has none or the requests exceed it.
#[inline]
pub fn least_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    capacity
        .wrapping_sub(requested)
        .wrapping_mul(MAX_NODE_SCORE)
        .wrapping_div(capacity)
}

/// kube v1.20's `mostRequestedScore`: the used share of a resource on 0..=100, and 0 when the
/// requests exceed the capacity (possible with the non-zero defaults; later versions count
/// such a resource as full).
#[inline]
pub fn most_requested_score_v1_20(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 || requested > capacity {
        return 0;
    }
    requested
        .wrapping_mul(MAX_NODE_SCORE)
        .wrapping_div(capacity)
}

/// kube's `mostRequestedScore` (1.22): the used share of a resource on 0..=100; requests above
/// the capacity (possible with the non-zero defaults) count as the full capacity.
#[inline]
pub fn most_requested_score(requested: i64, capacity: i64) -> i64 {
    if capacity == 0 {
        return 0;
    }
    requested
        .min(capacity)
        .wrapping_mul(MAX_NODE_SCORE)
        .wrapping_div(capacity)
}

/// kube's `fractionOfCapacity`.
#[inline]
fn fraction_of_capacity(requested: i64, capacity: i64) -> f64 {
    if capacity == 0 {
        return 1.0;
    }
    requested as f64 / capacity as f64
}

/// The legacy balanced-allocation score of a node from its requested and allocatable CPU and
/// memory.
#[inline]
pub fn balanced_score(cpu_req: i64, cpu_alloc: i64, mem_req: i64, mem_alloc: i64) -> i64 {
    let cpu = fraction_of_capacity(cpu_req, cpu_alloc);
    let mem = fraction_of_capacity(mem_req, mem_alloc);
    if cpu >= 1.0 || mem >= 1.0 {
        return 0;
    }
    let diff = (cpu - mem).abs();
    ((1.0 - diff) * MAX_NODE_SCORE as f64) as i64
}

/// kube v1.34's `balancedResourceScorer` over the fractions of the resources scored (each
/// already capped at 1): `int64((1 - deviation) * 100)`, the deviation being `|f1 - f2| / 2`
/// for two fractions, the population standard deviation for more, 0 for fewer.
pub fn balanced_std_score(fractions: &[f64]) -> i64 {
    let std = match fractions {
        [a, b] => ((a - b) / 2.0).abs(),
        [] | [_] => 0.0,
        many => {
            let total: f64 = many.iter().sum();
            let mean = total / many.len() as f64;
            let mut sum = 0.0;
            for f in many {
                sum += (f - mean) * (f - mean);
            }
            (sum / many.len() as f64).sqrt()
        }
    };
    ((1.0 - std) * MAX_NODE_SCORE as f64) as i64
}

/// kube v1.34's balanced-allocation score of a node over CPU and memory: each fraction
/// `min(1, requested / allocatable)`, a resource with zero allocatable left out.
#[inline]
pub fn balanced_score_v1_34(cpu_req: i64, cpu_alloc: i64, mem_req: i64, mem_alloc: i64) -> i64 {
    let fraction = |r: i64, a: i64| (r as f64 / a as f64).min(1.0);
    match (cpu_alloc != 0, mem_alloc != 0) {
        (true, true) => {
            balanced_std_score(&[fraction(cpu_req, cpu_alloc), fraction(mem_req, mem_alloc)])
        }
        (true, false) => balanced_std_score(&[fraction(cpu_req, cpu_alloc)]),
        (false, true) => balanced_std_score(&[fraction(mem_req, mem_alloc)]),
        (false, false) => balanced_std_score(&[]),
    }
}

/// A per-resource score of CPU and of memory, averaged over the resources the node has.
#[inline(always)]
pub(crate) fn average_of(
    score: impl Fn(i64, i64) -> i64,
    cpu: i64,
    cpu_alloc: i64,
    memory: i64,
    mem_alloc: i64,
) -> i64 {
    average(
        score(cpu, cpu_alloc),
        score(memory, mem_alloc),
        cpu_alloc,
        mem_alloc,
    )
}

/// The weighted average (weights 1) over the resources the node has, with integer division.
#[inline(always)]
fn average(cpu: i64, memory: i64, cpu_alloc: i64, mem_alloc: i64) -> i64 {
    match (cpu_alloc != 0, mem_alloc != 0) {
        (true, true) => cpu.wrapping_add(memory).wrapping_div(2),
        (true, false) => cpu,
        (false, true) => memory,
        (false, false) => 0,
    }
}

#[cfg(test)]
#[test]
fn out_of_range_bits_match_the_score_range() {
    let edges = [i64::MIN, i64::MIN + 1, -(1 << 40), i64::MAX - 26, i64::MAX];
    for v in (-1000..=1000).chain(edges) {
        assert_eq!(
            out_of_range_bits(v) == 0,
            (0..=MAX_NODE_SCORE).contains(&v),
            "{v}"
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formulas_never_panic() {
        for (r, c) in [
            (i64::MAX, 1),
            (1, i64::MAX),
            (-5, -1),
            (i64::MIN, -1),
            (0, 0),
        ] {
            let _ = least_requested_score(r, c);
            let _ = most_requested_score(r, c);
        }
    }

    mod f64_division {
        use super::*;
        use proptest::prelude::*;

        /// Capacities around the f64 bound and small ones, where rounding is most delicate.
        fn capacity() -> impl Strategy<Value = i64> {
            prop_oneof![
                1i64..=1_000,
                1i64..=F64_EXACT_CAPACITY,
                (F64_EXACT_CAPACITY - 1_000)..=F64_EXACT_CAPACITY,
                (F64_EXACT_CAPACITY - 1_000)..=(F64_EXACT_CAPACITY + 1_000),
            ]
        }

        #[test]
        fn quotient_is_exact_around_every_integer_at_the_bound() {
            for cap in [
                1,
                3,
                7,
                99,
                101,
                32_000,
                137_438_953_472,
                F64_EXACT_CAPACITY - 1,
                F64_EXACT_CAPACITY,
            ] {
                for k in 0..=100i64 {
                    for d in -2..=2i64 {
                        let n = k * cap + d;
                        if (0..=100 * cap).contains(&n) {
                            assert_eq!(quotient_to_100(n, cap), n / cap, "{n} / {cap}");
                        }
                    }
                }
            }
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(20_000))]

            #[test]
            fn quotient_matches_integer_division(cap in capacity(), k in 0i64..=100, d in -3i64..=3, any_n in 0i64..=i64::MAX) {
                let cap = cap.min(F64_EXACT_CAPACITY);
                for n in [k * cap + d, any_n % (100 * cap + 1)] {
                    if (0..=100 * cap).contains(&n) {
                        prop_assert_eq!(quotient_to_100(n, cap), n / cap);
                    }
                }
            }

            #[test]
            fn fast_scores_match_kubes_integer_formulas(cap in capacity(), req in -10i64..=(F64_EXACT_CAPACITY + 10), near in -3i64..=3, any_req: i64, any_cap: i64) {
                for (r, c) in [(req, cap), ((cap + near).max(0), cap), (cap - cap / 3 + near, cap), (any_req, any_cap), (any_req, cap), (req, any_cap)] {
                    prop_assert_eq!(least_requested_score_fast(r, c), least_requested_score(r, c), "least {} {}", r, c);
                    prop_assert_eq!(most_requested_score_fast(r, c), most_requested_score(r, c), "most {} {}", r, c);
                }
            }
        }
    }
}
