//! Inter-pod affinity and anti-affinity: the `MatchInterPodAffinity` predicate
//! ([`MatchInterPodAffinity`]) and the `InterPodAffinityPriority` priority
//! ([`InterPodAffinityPriority`]), with kube-scheduler 1.22's semantics.
//!
//! Both resolve the pod's terms once per pod in `prepare` (selectors compiled to interned ids,
//! counts per topology pair `(label key, label value)`), so that per node they only look up the
//! node's value of each topology key. [`selector`] holds the label-selector matching they share
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
