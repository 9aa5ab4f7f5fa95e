//! Spreading priorities: `SelectorSpreadPriority` ([`SelectorSpreadPriority`]),
//! `ServiceSpreadingPriority` ([`SelectorSpreadPriority::service_spreading`]) and the legacy `ServiceAntiAffinity`
//! ([`ServiceAntiAffinity`]), with kube-scheduler's formulas.
//!
//! They count, per node, the pods of the same namespace selected by the Services, controllers
//! and stateful sets ([`crate::model::Workload`]s of the snapshot) that select the pod being
//! scheduled, and favour nodes (and zones, or values of a label) with fewer of them.

mod selector_spread;
mod service_anti_affinity;
mod topology;
mod zone;

#[cfg(test)]
mod tests;

pub use selector_spread::SelectorSpreadPriority;
pub use service_anti_affinity::ServiceAntiAffinity;
pub use topology::{DefaultConstraints, PodTopologySpread};
