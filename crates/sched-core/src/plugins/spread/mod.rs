//! Spreading and service affinity: the legacy `CheckServiceAffinity` ([`ServiceAffinity`]),
//! `SelectorSpreadPriority` ([`SelectorSpreadPriority`], which the legacy name
//! `ServiceSpreadingPriority` also runs), the legacy `ServiceAntiAffinity`
//! ([`ServiceAntiAffinity`]) and kube's `PodTopologySpread` ([`PodTopologySpread`], the legacy
//! `EvenPodsSpread` and `EvenPodsSpreadPriority`), with kube-scheduler's formulas.
//!
//! They count, per node or per topology domain, the pods of the same namespace selected by the
//! Services, controllers and stateful sets ([`crate::model::Workload`]s of the snapshot) that
//! select the pod being scheduled, or by the pod's own spread constraints, and favour (or
//! require) places with fewer of them.

mod selector_spread;
mod service_affinity;
mod service_anti_affinity;
mod topology;
mod zone;

#[cfg(test)]
mod tests;

pub use selector_spread::SelectorSpreadPriority;
pub use service_affinity::ServiceAffinity;
pub use service_anti_affinity::ServiceAntiAffinity;
pub use topology::{DefaultConstraints, PodTopologySpread};
