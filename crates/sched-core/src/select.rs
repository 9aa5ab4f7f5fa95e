//! Selecting the node with the highest score, uniformly among ties (kube's `selectHost`).

use rand::RngCore;
#[cfg(test)]
use rand_chacha::ChaCha8Rng;

/// `select_host` was given no scores.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("empty priority list: no node to select")]
pub struct EmptyScores;

/// Picks the index of a highest score in one pass, choosing uniformly among ties by reservoir
/// sampling with the given RNG (kube's `selectHost`).
///
/// kube draws a random number for every tie, which on a uniform cluster means thousands of
/// draws per pod. This pass draws only when the pick changes: holding the `t`-th tie, the next
/// replacement comes at the `m`-th tie with `P(later than m) = t / m`, exactly the chance that
/// reservoir sampling keeps its pick through ties `t + 1..=m`, so the pick is uniform over the
/// ties as in kube, with about `ln(ties) + 1` draws. The chance is computed from one 64-bit
/// draw (`floor(t * 2^64 / (r + 1))`), which is within `2^-64` of it. Scores are taken in
/// blocks of 64: a block with nothing above the best is settled by one scan that counts its
/// ties, looking node by node only where a replacement falls (the same pick and draws as
/// taking the scores one at a time).
///
/// ```
/// use rand::SeedableRng;
/// let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
/// let i = sched_core::select::select_host(&[3, 9, 1, 9], &mut rng)?;
/// assert!(i == 1 || i == 3);
/// # Ok::<(), sched_core::select::EmptyScores>(())
/// ```
pub fn select_host<R: RngCore + ?Sized>(scores: &[i64], rng: &mut R) -> Result<usize, EmptyScores> {
    if scores.is_empty() {
        return Err(EmptyScores);
    }
    let mut pick = Reservoir::EMPTY;
    pick.offer_all(scores, 0, rng);
    Ok(pick.selected)
}

/// One-pass selection of a highest score, uniform among ties (see [`select_host`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Reservoir {
    best: i64,
    /// The pick so far (meaningless while `ties` is 0).
    pub(crate) selected: usize,
    /// Ties of `best` seen so far.
    ties: u64,
    /// The tie count at which the pick is replaced next; 0 = not drawn yet.
    next: u64,
}

impl Reservoir {
    /// Before the first offer.
    pub(crate) const EMPTY: Reservoir = Reservoir {
        best: i64::MIN,
        selected: 0,
        ties: 0,
        next: 0,
    };

    /// Offers the score of the node at `index` (offered in increasing order).
    ///
    /// Branch-free on the common outcomes (lower, tie, new best), whose order on a loaded
    /// cluster is unpredictable: only a tie that replaces the pick, or needs the first draw
    /// after a new best, takes a branch, about `ln(ties)` times per pass.
    #[inline(always)]
    pub(crate) fn offer<R: RngCore + ?Sized>(&mut self, score: i64, index: usize, rng: &mut R) {
        let higher = (score > self.best) | (self.ties == 0);
        let tie = (score == self.best) & !higher;
        self.best = if higher { score } else { self.best };
        self.selected = if higher { index } else { self.selected };
        self.ties = if higher {
            1
        } else {
            self.ties + u64::from(tie)
        };
        self.next = if higher { 0 } else { self.next };
        if tie & ((self.next == 0) | (self.ties == self.next)) {
            self.draw(index, rng);
        }
    }

    /// Offers `scores`, the scores of the nodes at `base..`, exactly as offering them one by
    /// one would (the same pick and the same draws), but in blocks: a block below the best is
    /// skipped after one maximum, and a block that only ties it is settled by counting its
    /// ties, unless a replacement falls inside it. A block that raises the best is split at
    /// its first maximum (see [`Reservoir::offer_raising`]). Node by node go only the nodes
    /// where a replacement falls (about `ln(ties)` in a pass).
    #[inline(never)]
    pub(crate) fn offer_all<R: RngCore + ?Sized>(
        &mut self,
        scores: &[i64],
        base: usize,
        rng: &mut R,
    ) {
        const BLOCK: usize = 64;
        for (b, block) in scores.chunks(BLOCK).enumerate() {
            self.offer_block(block, base + b * BLOCK, rng, 0);
        }
    }

    /// Offers one block (the nodes at `at..`); `depth` counts the splits above it.
    #[inline]
    fn offer_block<R: RngCore + ?Sized>(
        &mut self,
        block: &[i64],
        at: usize,
        rng: &mut R,
        depth: u32,
    ) {
        if self.ties > 0 {
            // One pass, no dependency between elements: does anything beat the best, and how
            // many tie it?
            let (mut higher, mut ties) = (false, 0u64);
            for &s in block {
                higher |= s > self.best;
                ties += u64::from(s == self.best);
            }
            if !higher {
                if ties > 0 {
                    self.settle_ties(block, at, ties, rng);
                }
                return;
            }
        }
        self.offer_raising(block, at, rng, depth);
    }

    /// Offers a non-empty block that raises the best (or holds the first offer): its first
    /// maximum `m`, at `p`, becomes the best whatever comes before it, since everything
    /// before it is lower. So the block is offered as the part before `p` (a smaller block,
    /// which may raise the best in its turn and draw for its ties), then `m`, then the rest,
    /// which holds nothing above `m` and is settled by counting its ties. Scores that keep
    /// rising split again and again; after a few splits the part before is offered node by
    /// node, which bounds the work at a few scans of the block.
    fn offer_raising<R: RngCore + ?Sized>(
        &mut self,
        block: &[i64],
        at: usize,
        rng: &mut R,
        depth: u32,
    ) {
        const MAX_SPLITS: u32 = 3;
        let m = block.iter().copied().fold(i64::MIN, i64::max);
        let p = block.iter().position(|&s| s == m).unwrap_or(0);
        if depth >= MAX_SPLITS {
            for (j, &s) in block[..p].iter().enumerate() {
                self.offer(s, at + j, rng);
            }
        } else if p > 0 {
            self.offer_block(&block[..p], at, rng, depth + 1);
        }
        self.offer(m, at + p, rng);
        let rest = &block[p + 1..];
        let ties = rest.iter().map(|&s| u64::from(s == m)).sum::<u64>();
        if ties > 0 {
            self.settle_ties(rest, at + p + 1, ties, rng);
        }
    }

    /// Offers a block that holds `ties` ties of the best and nothing higher. Offered one by
    /// one, its lower scores change nothing, its first tie draws the replacement point if
    /// none is drawn, and each replacement draws the next: so only the ties where a
    /// replacement falls are looked for, by counting.
    fn settle_ties<R: RngCore + ?Sized>(
        &mut self,
        block: &[i64],
        at: usize,
        mut ties: u64,
        rng: &mut R,
    ) {
        if self.next == 0 {
            self.next = next_replacement(self.ties, rng);
        }
        let mut from = 0;
        while self.ties + ties >= self.next {
            // The replacement falls on the `need`-th tie from `from`.
            let need = self.next - self.ties;
            let mut seen = 0;
            let mut j = from;
            loop {
                seen += u64::from(block[j] == self.best);
                if seen == need {
                    break;
                }
                j += 1;
            }
            self.ties = self.next;
            self.selected = at + j;
            self.next = next_replacement(self.ties, rng);
            ties -= need;
            from = j + 1;
        }
        self.ties += ties;
    }

    /// The `ties`-th tie just arrived at `index`: draws the replacement point if this best
    /// has none yet, and replaces the pick when it is due.
    #[cold]
    fn draw<R: RngCore + ?Sized>(&mut self, index: usize, rng: &mut R) {
        if self.next == 0 {
            self.next = next_replacement(self.ties - 1, rng);
        }
        if self.ties == self.next {
            self.selected = index;
            self.next = next_replacement(self.ties, rng);
        }
    }
}

/// Holding the `t`-th tie, the tie count of the next replacement: `floor(t / u) + 1` for `u`
/// uniform in (0, 1], so that `P(> m) = t / m` for `m >= t`. With `u = d / 2^64`, `d = r + 1`
/// for a 64-bit draw `r`, that is `floor(t * 2^64 / d) + 1`.
///
/// Computed without a 128-bit division (a slow library call, and a pod can make a dozen
/// draws): a pass has fewer than 2^32 nodes (indices are `u32`), so a replacement point at
/// 2^32 or beyond is never reached and is returned as `u64::MAX`; below that, an `f64`
/// estimate of the quotient is within 2^-19 of it and one exact 128-bit comparison corrects
/// its integer part.
#[cold]
fn next_replacement<R: RngCore + ?Sized>(t: u64, rng: &mut R) -> u64 {
    let d = u128::from(rng.next_u64()) + 1;
    let n = u128::from(t) << 64;
    if d <= u128::from(t) << 32 {
        // The quotient is at least 2^32.
        return u64::MAX;
    }
    const TWO_64: f64 = 18_446_744_073_709_551_616.0;
    let mut q = (t as f64 * (TWO_64 / d as f64)) as u128;
    if (q + 1) * d <= n {
        q += 1;
    } else if q * d > n {
        q -= 1;
    }
    q as u64 + 1
}

#[cfg(test)]
#[test]
fn next_replacement_matches_the_128_bit_division() {
    use rand::SeedableRng;
    // A "generator" that returns a fixed value, to test chosen draws.
    struct Fixed(u64);
    impl RngCore for Fixed {
        fn next_u32(&mut self) -> u32 {
            self.0 as u32
        }
        fn next_u64(&mut self) -> u64 {
            self.0
        }
        fn fill_bytes(&mut self, dst: &mut [u8]) {
            dst.fill(0)
        }
    }
    let exact = |t: u64, r: u64| {
        let q = (u128::from(t) << 64) / (u128::from(r) + 1);
        if q >= 1 << 32 { u64::MAX } else { q as u64 + 1 }
    };
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let mut cases: Vec<(u64, u64)> = Vec::new();
    for t in [
        1u64,
        2,
        3,
        7,
        100,
        4_095,
        1 << 20,
        (1 << 31) + 7,
        u32::MAX as u64,
    ] {
        for r in [
            0u64,
            1,
            2,
            t.wrapping_sub(1),
            t,
            t + 1,
            (t << 32) - 1,
            t << 32,
            (t << 32) + 1,
            u64::MAX - 1,
            u64::MAX,
        ] {
            cases.push((t, r));
        }
        for _ in 0..2_000 {
            cases.push((t, rng.next_u64()));
            cases.push((t, rng.next_u64() >> (rng.next_u32() % 64)));
        }
    }
    for (t, r) in cases {
        assert_eq!(
            next_replacement(t, &mut Fixed(r)),
            exact(t, r),
            "t {t} r {r}"
        );
    }
}

#[cfg(test)]
mod reservoir_tests {
    use super::Reservoir;
    use proptest::prelude::*;
    use rand::{RngCore, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    proptest! {
        /// Offering in blocks gives the same pick and leaves the RNG in the same state as
        /// offering one by one, wherever the blocks start.
        #[test]
        fn blocks_offer_like_single_offers(
            scores in prop_oneof![
                // Many ties of few values.
                prop::collection::vec(prop_oneof![3 => 0i64..4, 1 => Just(3i64)], 1..700),
                // Many distinct values.
                prop::collection::vec(0i64..300, 1..700),
                // Runs that keep rising (a new best at every node) or fall.
                prop::collection::vec((0i64..5, 1usize..90, any::<bool>()), 1..12).prop_map(|runs| {
                    runs.into_iter()
                        .flat_map(|(step, len, up)| {
                            (0..len as i64).map(move |k| if up { k * step } else { 500 - k * step })
                        })
                        .collect()
                }),
            ],
            splits in prop::collection::vec(0usize..700, 0..4),
            seed: u64,
        ) {
            let mut one = ChaCha8Rng::seed_from_u64(seed);
            let mut blocks = one.clone();
            let mut a = Reservoir::EMPTY;
            for (i, &s) in scores.iter().enumerate() {
                a.offer(s, i, &mut one);
            }
            let mut b = Reservoir::EMPTY;
            let mut cuts: Vec<usize> = splits.into_iter().map(|c| c % scores.len()).collect();
            cuts.push(0);
            cuts.push(scores.len());
            cuts.sort_unstable();
            for w in cuts.windows(2) {
                b.offer_all(&scores[w[0]..w[1]], w[0], &mut blocks);
            }
            prop_assert_eq!(a.selected, b.selected);
            prop_assert_eq!((a.best, a.ties, a.next), (b.best, b.ties, b.next));
            prop_assert_eq!(one.next_u64(), blocks.next_u64());
        }
    }
}
