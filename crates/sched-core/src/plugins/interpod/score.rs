//! The InterPodAffinityPriority priority (kube 1.22 `interpodaffinity` PreScore, Score and
//! NormalizeScore).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use super::terms::{
    CountedHere, NO_LABELS, NamespaceLabels, PairCounts, compile_terms, existing_term_matches,
};
use crate::formulas::MAX_NODE_SCORE;
use crate::framework::{CycleContext, KubeVersion, PluginError, PreparedScore, Priority};
use crate::model::{Pod, PodAffinity, PodAffinityTerm, WeightedPodAffinityTerm};
use crate::snapshot::{AffinityIndex, CountsRef, Interner, NodeRef, Sym};

/// kube's default `hardPodAffinitySymmetricWeight`.
pub const DEFAULT_HARD_POD_AFFINITY_WEIGHT: i32 = 1;

/// Legacy priority `InterPodAffinityPriority`; its only parameter is the policy's top-level
/// `hardPodAffinitySymmetricWeight` (default 1; 0 or less disables it).
///
/// For every existing pod, on the topology pair (key, value of the existing pod's node) of each
/// term, it adds:
/// - the weight of each of the pod's preferred affinity terms the existing pod matches,
/// - minus the weight of each of the pod's preferred anti-affinity terms it matches,
/// - `hardPodAffinitySymmetricWeight` for each of the existing pod's required affinity terms
///   the pod matches,
/// - the weight of each of the existing pod's preferred affinity terms the pod matches, minus
///   the weight of each of its preferred anti-affinity terms the pod matches.
///
/// The sums per topology domain come from the snapshot's counts (per group of pods with the
/// same terms, and per term selection some existing pod has), weighed in `prepare`; terms
/// no existing pod has are matched against every pod. A node's raw score is the sum over
/// topology keys of the entry for its value; normalization
/// maps the range to 0..=100: `int64(100 * (float(s - min) / float(max - min)))`, all 0 when
/// every node has the same score. When nothing was added, every node scores 0 (returned as a
/// constant, as is the case of a pod without preferred terms in a snapshot without pods with
/// affinity).
#[derive(Clone, Debug)]
pub struct InterPodAffinityPriority {
    hard_pod_affinity_weight: i32,
    namespaces: Arc<NamespaceLabels>,
    ignore_existing_preferred: bool,
    /// Match every existing pod instead of reading the snapshot's counts (the reference
    /// the tests compare with).
    direct: bool,
}

impl Default for InterPodAffinityPriority {
    fn default() -> Self {
        InterPodAffinityPriority::new(DEFAULT_HARD_POD_AFFINITY_WEIGHT)
    }
}

impl InterPodAffinityPriority {
    /// The priority with this `hardPodAffinitySymmetricWeight`.
    pub fn new(hard_pod_affinity_weight: i32) -> Self {
        InterPodAffinityPriority {
            hard_pod_affinity_weight,
            namespaces: Arc::default(),
            ignore_existing_preferred: false,
            direct: false,
        }
    }

    /// kube's `ignorePreferredTermsOfExistingPods`: when set, a pod without preferred terms
    /// of its own skips this priority (every node 0), so existing pods' terms are not looked
    /// at for it.
    #[must_use]
    pub fn ignoring_preferred_terms_of_existing_pods(mut self, ignore: bool) -> Self {
        self.ignore_existing_preferred = ignore;
        self
    }

    /// Uses these namespace labels for `namespaceSelector`.
    #[must_use]
    pub fn with_namespace_labels(mut self, namespaces: Arc<NamespaceLabels>) -> Self {
        self.namespaces = namespaces;
        self
    }

    /// Matches every existing pod for every pod scheduled, ignoring the snapshot's counts per
    /// topology domain: the direct computation the tests compare the counts with.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn direct(mut self) -> Self {
        self.direct = true;
        self
    }

    /// The `hardPodAffinitySymmetricWeight`.
    pub fn hard_pod_affinity_weight(&self) -> i32 {
        self.hard_pod_affinity_weight
    }
}

/// Per-pod state: weights per topology domain, from the snapshot's counts (`dense`: counts and
/// the weight each counted pod adds) and counted for this pod (`weights` per topology pair,
/// with the keys to look up per node).
#[derive(Debug, Default)]
pub struct State {
    dense: Vec<(CountsRef, i64)>,
    weights: PairCounts,
    keys: Vec<Sym>,
}

fn weighted(terms: &[WeightedPodAffinityTerm]) -> impl Iterator<Item = (i64, &PodAffinityTerm)> {
    terms
        .iter()
        .map(|t| (i64::from(t.weight), &t.pod_affinity_term))
}

/// The pod being scheduled, as existing pods' terms see it.
struct Incoming<'a> {
    pod: &'a Pod,
    ns_labels: &'a BTreeMap<String, String>,
    /// `hardPodAffinitySymmetricWeight`.
    hard: i64,
    interner: &'a Interner,
}

impl Incoming<'_> {
    /// What an existing pod's terms (the pod lives in `owner_ns`) add on its topology domains
    /// when this pod is scheduled: each matching term's topology key (as interned) and weight.
    fn existing_adds(
        &self,
        affinity: Option<&PodAffinity>,
        anti_affinity: Option<&PodAffinity>,
        owner_ns: &str,
        mut add: impl FnMut(Option<Sym>, i64),
    ) {
        let mut apply = |t: &PodAffinityTerm, w: i64| {
            if existing_term_matches(t, owner_ns, self.pod, self.ns_labels) {
                add(self.interner.get(&t.topology_key), w);
            }
        };
        if let Some(pa) = affinity {
            if self.hard > 0 {
                for t in &pa.required {
                    apply(t, self.hard);
                }
            }
            for t in &pa.preferred {
                apply(&t.pod_affinity_term, i64::from(t.weight));
            }
        }
        if let Some(pa) = anti_affinity {
            for t in &pa.preferred {
                apply(&t.pod_affinity_term, -i64::from(t.weight));
            }
        }
    }
}

impl Priority for InterPodAffinityPriority {
    type State = State;

    fn name(&self) -> &str {
        "InterPodAffinityPriority"
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        _feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        let pod = cx.pod();
        let snapshot = cx.snapshot();
        let interner = snapshot.interner();
        let index = snapshot.affinity_index();
        let (aff, anti) = pod.spec.affinity.as_ref().map_or((None, None), |a| {
            (a.pod_affinity.as_ref(), a.pod_anti_affinity.as_ref())
        });
        let pref_aff = aff.map_or(&[][..], |p| &p.preferred[..]);
        let pref_anti = anti.map_or(&[][..], |p| &p.preferred[..]);
        let has_constraints = !pref_aff.is_empty() || !pref_anti.is_empty();
        if !has_constraints
            && (self.ignore_existing_preferred || snapshot.pods_with_affinity() == 0)
        {
            return Ok(PreparedScore::Constant(0));
        }
        let name = self.name();
        // The snapshot's counts follow the snapshot's namespace labels.
        let by_snapshot_labels = self.namespaces.is_empty();
        // The plugin's own namespace labels, else the snapshot's.
        let ns: &NamespaceLabels = if self.namespaces.is_empty() {
            snapshot.namespace_labels()
        } else {
            &self.namespaces
        };
        let aff_terms = compile_terms(
            name,
            "preferredAffinityTerms",
            pod,
            weighted(pref_aff),
            interner,
            ns,
        )?;
        let anti_terms = compile_terms(
            name,
            "preferredAntiAffinityTerms",
            pod,
            weighted(pref_anti),
            interner,
            ns,
        )?;
        let own_ns = pod.metadata.namespace.as_str();
        let ns_labels = ns.labels_of(own_ns).unwrap_or(&NO_LABELS);
        let incoming = Incoming {
            pod,
            ns_labels,
            hard: i64::from(self.hard_pod_affinity_weight),
            interner,
        };
        let mut st = State::default();

        // The pod's own terms: the snapshot's counts when an existing pod has the same term,
        // else counted here.
        let own = || {
            aff_terms
                .iter()
                .zip(weighted(pref_aff))
                .map(|(t, (_, w))| (t, w, t.weight))
                .chain(
                    anti_terms
                        .iter()
                        .zip(weighted(pref_anti))
                        .map(|(t, (_, w))| (t, w, -t.weight)),
                )
        };
        let mut here = CountedHere::default();
        for (k, (t, written, weight)) in own().enumerate() {
            let dense = if self.direct || k >= CountedHere::MAX {
                None
            } else {
                index.matcher_counts(
                    std::slice::from_ref(written),
                    own_ns,
                    t.topology_key,
                    by_snapshot_labels,
                )
            };
            match dense {
                Some(c) => add_dense(&mut st.dense, index, c, weight),
                None => here.add(k),
            }
        }
        if !here.is_empty() {
            // At most one pair per node and key: sized once rather than grown.
            st.weights = PairCounts::with_capacity(snapshot.pod_count().min(snapshot.len()));
            for info in snapshot.node_infos() {
                for existing in info.pods() {
                    for (k, (t, _, w)) in own().enumerate() {
                        if here.contains(k) && t.matches(existing) {
                            st.weights.add(info.labels(), t.topology_key, w);
                        }
                    }
                }
            }
        }

        // Existing pods' terms against the pod: worked out once per group of pods with the
        // same terms; the snapshot counts the group's pods per domain.
        if self.direct {
            if st.weights.is_empty() {
                st.weights =
                    PairCounts::with_capacity(snapshot.pods_with_affinity().min(snapshot.len()));
            }
            let mut memo: HashMap<Sym, Vec<(Option<Sym>, i64)>, foldhash::fast::FixedState> =
                HashMap::default();
            for info in snapshot.node_infos() {
                for existing in info.pods_with_affinity() {
                    let adds = memo.entry(existing.affinity_id()).or_insert_with(|| {
                        let ep = existing.pod();
                        let ea = ep.spec.affinity.as_ref();
                        let mut adds = Vec::new();
                        incoming.existing_adds(
                            ea.and_then(|a| a.pod_affinity.as_ref()),
                            ea.and_then(|a| a.pod_anti_affinity.as_ref()),
                            &ep.metadata.namespace,
                            |k, w| adds.push((k, w)),
                        );
                        adds
                    });
                    for &(key, w) in adds.iter() {
                        st.weights.add(info.labels(), key, w);
                    }
                }
            }
        } else if snapshot.pods_with_affinity() > 0 {
            for g in index.groups() {
                incoming.existing_adds(g.affinity(), g.anti_affinity(), g.namespace(), |k, w| {
                    if let Some(c) = g.counts(k) {
                        add_dense(&mut st.dense, index, c, w);
                    }
                });
            }
        }
        if st.dense.is_empty() && st.weights.is_empty() {
            return Ok(PreparedScore::Constant(0));
        }
        st.keys = st.weights.keys();
        Ok(PreparedScore::Run(st))
    }

    fn score(&self, cx: &CycleContext<'_>, state: &Self::State, node: NodeRef<'_>) -> i64 {
        let st = state;
        let index = cx.snapshot().affinity_index();
        let i = node.index();
        let mut s: i64 = st
            .dense
            .iter()
            .map(|&(c, w)| w * i64::from(index.count(c, i).unwrap_or(0)))
            .sum();
        if !st.keys.is_empty() {
            let labels = node.info().labels();
            s += st
                .keys
                .iter()
                .filter_map(|&k| st.weights.for_node(labels, k))
                .sum::<i64>();
        }
        s
    }

    fn score_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        nodes: &[u32],
        out: &mut [i64],
    ) {
        let st = state;
        let snapshot = cx.snapshot();
        if !st.keys.is_empty() {
            for (o, &i) in out.iter_mut().zip(nodes) {
                *o = self.score(cx, st, snapshot.node(i as usize));
            }
            return;
        }
        // Only the snapshot's counts: per entry, one pass over the nodes reading two columns
        // (a node without the key, or a domain past the counts, reads 0).
        out.fill(0);
        let index = snapshot.affinity_index();
        for &(c, w) in &st.dense {
            let (domains, counts) = index.columns(c);
            for (o, &i) in out.iter_mut().zip(nodes) {
                let n = counts
                    .get(domains[i as usize] as usize)
                    .copied()
                    .unwrap_or(0);
                *o += w * i64::from(n);
            }
        }
    }

    fn normalize(&self, cx: &CycleContext<'_>, _state: &Self::State, scores: &mut [i64]) {
        match cx.kube_version() {
            KubeVersion::V1_20 => normalize_from_zero(scores),
            _ => normalize_min_max(scores),
        }
    }
}

/// Adds `weight` per pod counted by `c` (merged with an earlier entry for the same counts);
/// counts with no pod in any domain add nothing and are left out.
fn add_dense(dense: &mut Vec<(CountsRef, i64)>, index: &AffinityIndex, c: CountsRef, weight: i64) {
    if index.total(c) == 0 {
        return;
    }
    match dense.iter_mut().find(|(d, _)| *d == c) {
        Some((_, w)) => *w += weight,
        None => dense.push((c, weight)),
    }
}

/// kube 1.21+ InterPodAffinity NormalizeScore: `int64(100 * (float(s - min) / float(max - min)))`
/// with the true minimum and maximum; all 0 when they are equal.
pub(crate) fn normalize_min_max(scores: &mut [i64]) {
    let (Some(&min), Some(&max)) = (scores.iter().min(), scores.iter().max()) else {
        return;
    };
    normalize_between(scores, min, max);
}

/// kube v1.20 InterPodAffinity NormalizeScore: the same with the minimum and maximum taken
/// from 0 (`minCount` and `maxCount` start at 0), so raw scores 20 and 10 give 100 and 50.
pub(crate) fn normalize_from_zero(scores: &mut [i64]) {
    let min = scores.iter().copied().min().unwrap_or(0).min(0);
    let max = scores.iter().copied().max().unwrap_or(0).max(0);
    normalize_between(scores, min, max);
}

fn normalize_between(scores: &mut [i64], min: i64, max: i64) {
    let diff = max.saturating_sub(min);
    if diff == 0 {
        scores.fill(0);
        return;
    }
    // Few distinct raw scores (the usual case): kube's formula once per value, then a lookup.
    const TABLE: usize = 128;
    if diff < TABLE as i64 {
        let mut table = [0i64; TABLE];
        for (v, t) in table.iter_mut().enumerate().take(diff as usize + 1) {
            *t = (MAX_NODE_SCORE as f64 * (v as f64 / diff as f64)) as i64;
        }
        for s in scores.iter_mut() {
            // In range (min <= s <= max) by the callers; anything else takes the formula.
            *s = match table.get(s.wrapping_sub(min) as usize) {
                Some(&t) => t,
                None => {
                    (MAX_NODE_SCORE as f64 * (s.saturating_sub(min) as f64 / diff as f64)) as i64
                }
            };
        }
        return;
    }
    for s in scores.iter_mut() {
        let mut f = 0.0f64;
        if diff > 0 {
            f = MAX_NODE_SCORE as f64 * (s.saturating_sub(min) as f64 / diff as f64);
        }
        *s = f as i64;
    }
}

#[cfg(test)]
mod tests {
    use super::{normalize_from_zero, normalize_min_max};
    use crate::formulas::MAX_NODE_SCORE;

    #[test]
    fn the_lookup_table_gives_kubes_formula() {
        for diff in 1i64..300 {
            for min in [-diff, -3, 0, 7] {
                let mut scores: Vec<i64> = (min..=min + diff).collect();
                normalize_min_max(&mut scores);
                for (v, s) in scores.iter().enumerate() {
                    let want = (MAX_NODE_SCORE as f64 * (v as f64 / diff as f64)) as i64;
                    assert_eq!(*s, want, "diff {diff}, value {v}");
                }
            }
        }
    }

    #[test]
    fn v1_20_normalizes_from_zero() {
        let mut s = [20, 10];
        normalize_from_zero(&mut s);
        assert_eq!(s, [100, 50]);
        let mut s = [-10, -4, 0];
        normalize_from_zero(&mut s);
        assert_eq!(s, [0, 60, 100]);
        let mut s = [0, 0];
        normalize_from_zero(&mut s);
        assert_eq!(s, [0, 0]);
    }

    #[test]
    fn normalize_uses_true_min_and_max() {
        let mut s = [5, 10, 7];
        normalize_min_max(&mut s);
        assert_eq!(s, [0, 100, 40]);
        let mut s = [-10, -4, -5];
        normalize_min_max(&mut s);
        assert_eq!(s, [0, 100, 83]);
        let mut s = [3, 3];
        normalize_min_max(&mut s);
        assert_eq!(s, [0, 0]);
        let mut s: [i64; 0] = [];
        normalize_min_max(&mut s);
    }
}
