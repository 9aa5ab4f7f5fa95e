//! The MatchInterPodAffinity predicate (kube 1.22 `interpodaffinity` PreFilter + Filter).

use std::collections::HashMap;
use std::sync::Arc;

use super::terms::{
    CompiledTerm, NO_LABELS, NamespaceLabels, PairCounts, compile_terms, existing_term_matches,
};
use crate::framework::{CycleContext, PluginError, Predicate, Prepared, Reason};
use crate::snapshot::NodeRef;
use crate::snapshot::Sym;

/// Legacy predicate `MatchInterPodAffinity` (no argument): the pod's required pod affinity and
/// anti-affinity, and existing pods' required anti-affinity against the pod.
///
/// Per pod, `prepare` counts, for each topology pair (label key, value) of the nodes:
/// - existing pods whose required anti-affinity terms match the pod (over the nodes holding
///   pods with required anti-affinity),
/// - existing pods that match all of the pod's required affinity terms,
/// - existing pods that match each of the pod's required anti-affinity terms.
///
/// Then `filter` only looks up the node's value of each topology key. A node fails with
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
}

/// Per-pod state.
#[derive(Debug, Default)]
pub struct State {
    /// Topology keys of the pod's required affinity terms (`None`: no node has the label).
    affinity_keys: Vec<Option<Sym>>,
    affinity_counts: PairCounts,
    /// Whether the pod matches all of its own affinity terms.
    matches_own_terms: bool,
    anti_keys: Vec<Option<Sym>>,
    anti_counts: PairCounts,
    existing_counts: PairCounts,
    /// Keys with a positive count in `existing_counts`.
    existing_keys: Vec<Sym>,
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

        let mut st = State {
            affinity_keys: affinity.iter().map(|t| t.topology_key).collect(),
            matches_own_terms: !affinity.is_empty() && affinity.iter().all(|t| t.matches_self),
            anti_keys: anti_affinity.iter().map(|t| t.topology_key).collect(),
            ..State::default()
        };

        // Existing pods' required anti-affinity against the pod.
        if snapshot.pods_with_required_anti_affinity() > 0 {
            // At most one pair per node and key: sized once rather than grown.
            st.existing_counts = PairCounts::with_capacity(
                snapshot
                    .pods_with_required_anti_affinity()
                    .min(snapshot.len()),
            );
            let ns_labels = namespaces
                .labels_of(&pod.metadata.namespace)
                .unwrap_or(&NO_LABELS);
            // Worked out once per distinct set of terms (pods of one workload share it).
            let mut memo: HashMap<Sym, Vec<Option<Sym>>, foldhash::fast::FixedState> =
                HashMap::default();
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
                            .filter(|t| {
                                existing_term_matches(t, &ep.metadata.namespace, pod, ns_labels)
                            })
                            .map(|t| interner.get(&t.topology_key))
                            .collect()
                    });
                    for &key in keys.iter() {
                        st.existing_counts.add(info.labels(), key, 1);
                    }
                }
            }
            st.existing_keys = st.existing_counts.positive_keys();
        }

        // Existing pods against the pod's own terms.
        if !affinity.is_empty() || !anti_affinity.is_empty() {
            let pairs = snapshot.pod_count().min(snapshot.len());
            if !affinity.is_empty() {
                st.affinity_counts = PairCounts::with_capacity(pairs);
            }
            if !anti_affinity.is_empty() {
                st.anti_counts = PairCounts::with_capacity(pairs);
            }
            for info in snapshot.node_infos() {
                for existing in info.pods() {
                    if matches_all(&affinity, existing) {
                        for t in &affinity {
                            st.affinity_counts.add(info.labels(), t.topology_key, 1);
                        }
                    }
                    for t in &anti_affinity {
                        if t.matches(existing) {
                            st.anti_counts.add(info.labels(), t.topology_key, 1);
                        }
                    }
                }
            }
        }
        if affinity.is_empty() && st.anti_counts.is_empty() && st.existing_keys.is_empty() {
            // Nothing can fail: no affinity terms, and no pod matches an anti-affinity term
            // either way.
            return Ok(Prepared::Skip);
        }
        Ok(Prepared::Run(st))
    }

    fn filter(
        &self,
        _cx: &CycleContext<'_>,
        state: &Self::State,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        let st = state;
        let labels = node.info().labels();

        // The pod's affinity.
        let mut pods_exist = true;
        for key in &st.affinity_keys {
            match key.and_then(|k| st.affinity_counts.for_node(labels, k)) {
                Some(c) => {
                    if c <= 0 {
                        pods_exist = false;
                    }
                }
                // All topology labels must exist on the node.
                None => return Err(Reason::PodAffinityRulesNotMatch),
            }
        }
        // This pod may be the first of a group with affinity to itself: with no matching pod
        // anywhere, it passes if it matches its own terms.
        let first_of_group = st.affinity_counts.is_empty() && st.matches_own_terms;
        if !pods_exist && !first_of_group {
            return Err(Reason::PodAffinityRulesNotMatch);
        }

        // The pod's anti-affinity.
        if !st.anti_counts.is_empty() {
            for key in st.anti_keys.iter().flatten() {
                if st.anti_counts.for_node(labels, *key).unwrap_or(0) > 0 {
                    return Err(Reason::PodAntiAffinityRulesNotMatch);
                }
            }
        }

        // Existing pods' anti-affinity.
        for key in &st.existing_keys {
            if st.existing_counts.for_node(labels, *key).unwrap_or(0) > 0 {
                return Err(Reason::ExistingPodsAntiAffinityRulesNotMatch);
            }
        }
        Ok(())
    }
}

/// kube's `podMatchesAllAffinityTerms`: false for no terms.
fn matches_all(terms: &[CompiledTerm], p: &crate::snapshot::PodInfo) -> bool {
    !terms.is_empty() && terms.iter().all(|t| t.matches(p))
}
