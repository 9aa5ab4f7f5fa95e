//! The MatchInterPodAffinity predicate (kube 1.22 `interpodaffinity` PreFilter + Filter).

use std::collections::HashMap;
use std::sync::Arc;

use super::terms::{
    CompiledTerm, CountedHere, NO_LABELS, NamespaceLabels, PairCounts, compile_terms,
    existing_term_matches,
};
use crate::fast_path::{FastFilter, Sealed};
use crate::framework::{CycleContext, PluginError, Predicate, Prepared, Reason};
use crate::snapshot::{AffinityIndex, CountsRef, LabelIds, NodeRef, Sym};

/// Legacy predicate `MatchInterPodAffinity` (no argument): the pod's required pod affinity and
/// anti-affinity, and existing pods' required anti-affinity against the pod.
///
/// Per topology domain (a value of a term's topology key), the filter reads:
/// - existing pods whose required anti-affinity terms match the pod: the snapshot counts the
///   pods of each group with the same terms per domain, and `prepare` decides once per group
///   whether a term matches the pod;
/// - existing pods that match all of the pod's required affinity terms, and those that match
///   each of its required anti-affinity terms: the snapshot's counts when an existing pod has
///   the same terms (replicas of a workload), else counted in `prepare` by matching every pod.
///
/// Then `filter` only looks up the node's domain of each topology key. When every count it
/// reads has a node flag in the snapshot's filter rows, it runs in the fused filter pass. A node fails with
/// [`Reason::PodAffinityRulesNotMatch`] when it lacks a topology label of an affinity term or no
/// matching pod is in its domain (unless no pod anywhere matches and the pod matches its own
/// terms: the first pod of a group with affinity to itself), with
/// [`Reason::PodAntiAffinityRulesNotMatch`] when a pod matching an anti-affinity term is in its
/// domain, and with [`Reason::ExistingPodsAntiAffinityRulesNotMatch`] when an existing pod's
/// anti-affinity forbids the pod in the domain. Checked in that order.
///
/// Namespaces: a term without `namespaces` and `namespaceSelector` covers the pod's own
/// namespace; `namespaceSelector` is evaluated against [`NamespaceLabels`] (see
/// [`MatchInterPodAffinity::with_namespace_labels`]).
///
/// The predicate is skipped when the pod has no required affinity terms and no anti-affinity
/// term matches (the pod's own against existing pods, or existing pods' against the pod). A selector Kubernetes would reject in the pod's terms is a
/// [`PluginError`] (kube fails the pod with "parsing pod").
#[derive(Clone, Debug, Default)]
pub struct MatchInterPodAffinity {
    namespaces: Arc<NamespaceLabels>,
    /// Match every existing pod instead of reading the snapshot's counts (the reference
    /// the tests compare with).
    direct: bool,
}

impl MatchInterPodAffinity {
    /// The predicate, with no namespace labels known.
    pub fn new() -> Self {
        MatchInterPodAffinity::default()
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
}

/// Existing pods counted per topology domain, as the snapshot keeps them (`dense`) or as
/// counted for this pod (`pairs`, looked up by the node's value of each of `keys`).
#[derive(Debug, Default)]
struct Lookups {
    dense: Vec<CountsRef>,
    keys: Vec<Sym>,
    pairs: PairCounts,
}

impl Lookups {
    /// Whether no pod was counted anywhere.
    fn is_empty(&self) -> bool {
        self.dense.is_empty() && self.pairs.is_empty()
    }

    /// Whether a counted pod is in the node's domain of some key.
    #[inline]
    fn any_on(&self, index: &AffinityIndex, node: usize, labels: &LabelIds) -> bool {
        self.dense
            .iter()
            .any(|&c| index.count(c, node).is_some_and(|n| n > 0))
            || (!self.pairs.is_empty()
                && self
                    .keys
                    .iter()
                    .any(|&k| self.pairs.for_node(labels, k).unwrap_or(0) > 0))
    }
}

/// Per-pod state.
#[derive(Debug, Default)]
pub struct State {
    /// Topology keys of the pod's required affinity terms (`None`: no node has the label).
    affinity_keys: Vec<Option<Sym>>,
    /// The snapshot's counts of the pods matching all the affinity terms, one per term (when
    /// it keeps them), else `affinity_counts`.
    affinity_dense: Option<Vec<CountsRef>>,
    affinity_counts: PairCounts,
    /// No pod matches all the affinity terms and the pod matches them itself: it may be the
    /// first of its group.
    first_of_group: bool,
    /// Pods matching each of the pod's required anti-affinity terms.
    anti: Lookups,
    /// Existing pods whose required anti-affinity terms match the pod.
    existing: Lookups,
}

impl Predicate for MatchInterPodAffinity {
    type State = State;

    fn name(&self) -> &str {
        "MatchInterPodAffinity"
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<Self::State>, PluginError> {
        let pod = cx.pod();
        let snapshot = cx.snapshot();
        let interner = snapshot.interner();
        let index = snapshot.affinity_index();
        let (aff, anti) = pod.spec.affinity.as_ref().map_or((None, None), |a| {
            (a.pod_affinity.as_ref(), a.pod_anti_affinity.as_ref())
        });
        let aff_terms = aff.map_or(&[][..], |p| &p.required[..]);
        let anti_terms = anti.map_or(&[][..], |p| &p.required[..]);
        if aff_terms.is_empty()
            && anti_terms.is_empty()
            && snapshot.pods_with_required_anti_affinity() == 0
        {
            return Ok(Prepared::Skip);
        }
        // The snapshot's counts follow the snapshot's namespace labels.
        let by_snapshot_labels = self.namespaces.is_empty();
        // The plugin's own namespace labels, else the snapshot's.
        let namespaces: &NamespaceLabels = if self.namespaces.is_empty() {
            snapshot.namespace_labels()
        } else {
            &self.namespaces
        };
        let affinity = compile_terms(
            self.name(),
            "requiredAffinityTerms",
            pod,
            aff_terms.iter().map(|t| (1, t)),
            interner,
            namespaces,
        )?;
        let anti_affinity = compile_terms(
            self.name(),
            "requiredAntiAffinityTerms",
            pod,
            anti_terms.iter().map(|t| (1, t)),
            interner,
            namespaces,
        )?;
        let own_ns = pod.metadata.namespace.as_str();
        let mut st = State {
            affinity_keys: affinity.iter().map(|t| t.topology_key).collect(),
            ..State::default()
        };

        // Existing pods' required anti-affinity against the pod.
        if snapshot.pods_with_required_anti_affinity() > 0 {
            let ns_labels = namespaces.labels_of(own_ns).unwrap_or(&NO_LABELS);
            if self.direct {
                st.existing.pairs = existing_anti_counts(snapshot, pod, ns_labels);
                st.existing.keys = st.existing.pairs.positive_keys();
            } else {
                // Once per group of pods with the same terms; the snapshot counts the group's
                // pods per domain.
                for g in index.groups() {
                    let Some(terms) = g.anti_affinity().map(|a| &a.required) else {
                        continue;
                    };
                    for t in terms {
                        if existing_term_matches(t, g.namespace(), pod, ns_labels)
                            && let Some(c) = g.counts(interner.get(&t.topology_key))
                            && index.total(c) > 0
                            && !st.existing.dense.contains(&c)
                        {
                            st.existing.dense.push(c);
                        }
                    }
                }
            }
        }

        // Existing pods against the pod's own affinity terms: the snapshot's counts when an
        // existing pod has the same terms, else counted here.
        if !affinity.is_empty() {
            let dense = if self.direct {
                None
            } else {
                affinity
                    .iter()
                    .map(|t| {
                        index.matcher_counts(aff_terms, own_ns, t.topology_key, by_snapshot_labels)
                    })
                    .collect::<Option<Vec<_>>>()
            };
            let none_match = match &dense {
                Some(d) => d.iter().all(|&c| index.total(c) == 0),
                None => {
                    st.affinity_counts =
                        PairCounts::with_capacity(snapshot.pod_count().min(snapshot.len()));
                    for info in snapshot.node_infos() {
                        for existing in info.pods() {
                            if matches_all(&affinity, existing) {
                                for t in &affinity {
                                    st.affinity_counts.add(info.labels(), t.topology_key, 1);
                                }
                            }
                        }
                    }
                    st.affinity_counts.is_empty()
                }
            };
            st.affinity_dense = dense;
            st.first_of_group = none_match && affinity.iter().all(|t| t.matches_self);
        }

        // Existing pods against the pod's anti-affinity terms, likewise.
        let mut here = CountedHere::default();
        for (k, (t, written)) in anti_affinity.iter().zip(anti_terms).enumerate() {
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
                Some(c) => {
                    if index.total(c) > 0 && !st.anti.dense.contains(&c) {
                        st.anti.dense.push(c);
                    }
                }
                None => here.add(k),
            }
        }
        if !here.is_empty() {
            let counted = || {
                anti_affinity
                    .iter()
                    .enumerate()
                    .filter(|&(k, _)| here.contains(k))
                    .map(|(_, t)| t)
            };
            st.anti.pairs = PairCounts::with_capacity(snapshot.pod_count().min(snapshot.len()));
            for info in snapshot.node_infos() {
                for existing in info.pods() {
                    for t in counted() {
                        if t.matches(existing) {
                            st.anti.pairs.add(info.labels(), t.topology_key, 1);
                        }
                    }
                }
            }
            st.anti.keys = counted().filter_map(|t| t.topology_key).collect();
        }
        if affinity.is_empty() && st.anti.is_empty() && st.existing.is_empty() {
            // Nothing can fail here: no affinity terms, and no pod matches an anti-affinity
            // term either way. kube's Skip when the pod has no required terms of its own (no
            // existing pod's term matches it: kube counts none); else it runs the filter, and a
            // pod nominated to a node may still match one of the pod's terms there.
            return Ok(if aff_terms.is_empty() && anti_terms.is_empty() {
                Prepared::Skip
            } else {
                Prepared::Pass
            });
        }
        Ok(Prepared::Run(st))
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        let st = state;
        let labels = node.info().labels();
        let index = cx.snapshot().affinity_index();
        let i = node.index();

        // The pod's affinity.
        if !st.affinity_keys.is_empty() {
            let mut pods_exist = true;
            match &st.affinity_dense {
                Some(dense) => {
                    for &c in dense {
                        match index.count(c, i) {
                            Some(n) => pods_exist &= n > 0,
                            // All topology labels must exist on the node.
                            None => return Err(Reason::PodAffinityRulesNotMatch),
                        }
                    }
                }
                None => {
                    for key in &st.affinity_keys {
                        match key.and_then(|k| st.affinity_counts.for_node(labels, k)) {
                            Some(c) => pods_exist &= c > 0,
                            None => return Err(Reason::PodAffinityRulesNotMatch),
                        }
                    }
                }
            }
            // This pod may be the first of a group with affinity to itself: with no matching
            // pod anywhere, it passes if it matches its own terms.
            if !pods_exist && !st.first_of_group {
                return Err(Reason::PodAffinityRulesNotMatch);
            }
        }

        // The pod's anti-affinity.
        if st.anti.any_on(index, i, labels) {
            return Err(Reason::PodAntiAffinityRulesNotMatch);
        }

        // Existing pods' anti-affinity.
        if st.existing.any_on(index, i, labels) {
            return Err(Reason::ExistingPodsAntiAffinityRulesNotMatch);
        }
        Ok(())
    }

    /// When every count the pod reads has a node flag in the snapshot's filter rows: the
    /// nodes must have the flags of the affinity counts (a matching pod in their domain) and
    /// none of the anti-affinity ones.
    fn fast_filter(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        _: Sealed,
    ) -> Option<FastFilter> {
        let st = state;
        let index = cx.snapshot().affinity_index();
        if !st.anti.pairs.is_empty() || !st.existing.pairs.is_empty() {
            return None;
        }
        let mut with = 0;
        if !st.affinity_keys.is_empty() {
            // The first pod of a group passes on nodes with the topology labels, which no
            // flag says.
            if st.first_of_group {
                return None;
            }
            for &c in st.affinity_dense.as_ref()? {
                let f = index.flag(c);
                if f == 0 {
                    return None;
                }
                with |= f;
            }
        }
        let mut without = 0;
        for &c in st.anti.dense.iter().chain(&st.existing.dense) {
            let f = index.flag(c);
            if f == 0 {
                return None;
            }
            without |= f;
        }
        if with & without != 0 {
            // A count both required and forbidden: no node passes; the filter says why.
            return None;
        }
        Some(FastFilter::without_flags(without).and(FastFilter::with_flags(with)))
    }
}

/// Existing pods' required anti-affinity terms that match `pod`, counted per topology pair by
/// matching every such pod (the direct form of what the snapshot's groups give).
fn existing_anti_counts(
    snapshot: &crate::snapshot::Snapshot,
    pod: &crate::model::Pod,
    ns_labels: &std::collections::BTreeMap<String, String>,
) -> PairCounts {
    let interner = snapshot.interner();
    // At most one pair per node and key: sized once rather than grown.
    let mut counts = PairCounts::with_capacity(
        snapshot
            .pods_with_required_anti_affinity()
            .min(snapshot.len()),
    );
    // Worked out once per distinct set of terms (pods of one workload share it).
    let mut memo: HashMap<Sym, Vec<Option<Sym>>, foldhash::fast::FixedState> = HashMap::default();
    for info in snapshot.node_infos() {
        for existing in info.pods_with_required_anti_affinity() {
            let keys = memo.entry(existing.affinity_id()).or_insert_with(|| {
                let ep = existing.pod();
                let terms = ep
                    .spec
                    .affinity
                    .as_ref()
                    .and_then(|a| a.pod_anti_affinity.as_ref())
                    .map_or(&[][..], |p| &p.required[..]);
                terms
                    .iter()
                    .filter(|t| existing_term_matches(t, &ep.metadata.namespace, pod, ns_labels))
                    .map(|t| interner.get(&t.topology_key))
                    .collect()
            });
            for &key in keys.iter() {
                counts.add(info.labels(), key, 1);
            }
        }
    }
    counts
}

/// kube's `podMatchesAllAffinityTerms`: false for no terms.
fn matches_all(terms: &[CompiledTerm], p: &crate::snapshot::PodInfo) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(p))
}
