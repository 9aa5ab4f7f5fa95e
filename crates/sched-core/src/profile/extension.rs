//! [`CycleExtension`]: what a scheduling cycle runs beside the profile's plugins, between
//! filtering and selection (kube-scheduler's extenders, which [`crate::scheduler`] runs
//! through it).

use super::{NodeFailure, ScheduleError};
use crate::model::Pod;
use crate::snapshot::Snapshot;

/// Work a scheduling cycle does beside the profile's plugins: filtering the nodes that passed
/// the filter plugins, and adding scores to the plugins' weighted totals before a node is
/// selected, as kube-scheduler's `findNodesThatPassExtenders` and `prioritizeNodes` do with
/// extenders. Given to [`super::Profile::schedule_and_assume_with`].
pub trait CycleExtension {
    /// Whether [`CycleExtension::filter`] may remove nodes (kube's `hasExtenderFilters`).
    /// With neither filtering nor scoring (plugins or extension), a v1.34 profile stops at
    /// the first feasible node, as kube does.
    fn filters(&self) -> bool;

    /// Whether [`CycleExtension::score`] gives scores (kube's `IsPrioritizer` of any
    /// extender). [`CycleExtension::score`] is called either way, and with an extension the
    /// plugins' totals start at 0 even without score plugins (kube gives every node 1 only
    /// when there are neither score plugins nor extenders).
    fn prioritizes(&self) -> bool;

    /// Called with the nodes that passed the filter plugins (snapshot indices, in evaluation
    /// order; never empty): keeps the nodes that pass and pushes each node it rejects, with
    /// its snapshot index, to `failures`.
    ///
    /// # Errors
    /// Fails the attempt (kube: a non-ignorable extender's error).
    fn filter(
        &mut self,
        pod: &Pod,
        snapshot: &Snapshot,
        feasible: &mut Vec<u32>,
        failures: &mut Vec<(u32, NodeFailure)>,
    ) -> Result<(), ScheduleError>;

    /// Adds its scores to `totals` (aligned with `feasible`), when more than one node is
    /// feasible.
    fn score(&mut self, pod: &Pod, snapshot: &Snapshot, feasible: &[u32], totals: &mut [i64]);
}
