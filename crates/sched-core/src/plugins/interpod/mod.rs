//! Inter-pod affinity and anti-affinity: the `MatchInterPodAffinity` predicate
//! ([`MatchInterPodAffinity`]) and the `InterPodAffinityPriority` priority
//! ([`InterPodAffinityPriority`]), with kube-scheduler 1.22's semantics.
//!
//! Both resolve the pod's terms once per pod in `prepare` and read counts per topology domain
//! that the snapshot keeps current as pods and nodes change (`snapshot::affinity`), so that a
//! pod costs O(nodes + terms), not O(nodes x pods); per node they only look up the node's
//! domain of each topology key. Terms no existing pod has are matched against every pod
//! (selectors compiled to interned ids, counts per topology pair). [`selector`] holds the label-selector matching they share
//! with the spreading priorities.

mod filter;
mod score;
pub mod selector;
mod terms;

#[cfg(test)]
mod counts_tests;
#[cfg(test)]
mod reference_tests;
#[cfg(test)]
mod scoring_v1_34_tests;
#[cfg(test)]
mod tests;
#[cfg(test)]
pub(crate) mod testutil;

pub use filter::MatchInterPodAffinity;
pub use score::{DEFAULT_HARD_POD_AFFINITY_WEIGHT, InterPodAffinityPriority};
pub use terms::NamespaceLabels;
