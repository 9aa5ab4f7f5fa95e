//! Node-level predicates and priorities: resources fit, ports, host name, node affinity, taints, conditions, labels, disks.
//!
//! Each built-in is a small struct named after kube-scheduler's legacy predicate or priority:
//!
//! | struct | legacy name(s) | argument |
//! |---|---|---|
//! | [`PodFitsResources`] | `PodFitsResources` | optional ignored extended resources |
//! | [`PodFitsHostPorts`] | `PodFitsHostPorts`, `PodFitsPorts` | none |
//! | [`HostName`] | `HostName` | none |
//! | [`MatchNodeSelector`] | `MatchNodeSelector` | none |
//! | [`NoDiskConflict`] | `NoDiskConflict` | none |
//! | [`PodToleratesNodeTaints`] | `PodToleratesNodeTaints` | none |
//! | [`CheckNodeUnschedulable`] | `CheckNodeUnschedulable` | none |
//! | [`CheckNodeCondition`] | `CheckNodeCondition` | none |
//! | [`CheckNodeMemoryPressure`] | `CheckNodeMemoryPressure` | none |
//! | [`CheckNodeDiskPressure`] | `CheckNodeDiskPressure` | none |
//! | [`CheckNodePIDPressure`] | `CheckNodePIDPressure` | none |
//! | [`CheckNodeLabelPresence`] | `CheckNodeLabelPresence` | `labelsPresence`: labels, presence |
//! | [`GeneralPredicates`] | `GeneralPredicates` | none |
//! | [`NodeAffinityPriority`] | `NodeAffinityPriority` | none |
//! | [`TaintTolerationPriority`] | `TaintTolerationPriority` | none |
//! | [`NodeLabelPriority`] | `NodeLabelPriority` | `labelPreference`: label, presence |
//!
//! Everything that depends only on the pod is computed once in `prepare` (the pod's label
//! requirements become interned ids, its tolerations are narrowed to the effects that matter,
//! its host ports and disks are collected), and a plugin skips (or gives a constant score) when
//! the pod leaves it nothing to decide. Per node the plugins read the [`NodeSummary`] numbers
//! and flags and the interned label ids, and only touch strings where kube's rule needs them
//! (taints on tainted nodes, host IPs on nodes with used ports, disks on nodes with disks).
//!
//! ```
//! use sched_core::framework::{CycleContext, Predicate, Prepared};
//! use sched_core::model::{Node, Pod};
//! use sched_core::plugins::node::MatchNodeSelector;
//! use sched_core::snapshot::Snapshot;
//!
//! let mut node = Node::default();
//! node.metadata.name = "n1".into();
//! node.metadata.labels.insert("disk".into(), "ssd".into());
//! let snapshot = Snapshot::from_objects(vec![node], vec![])?;
//! let mut pod = Pod::default();
//! pod.spec.node_selector.insert("disk".into(), "ssd".into());
//! let cx = CycleContext::new(&pod, &snapshot);
//! let Prepared::Run(state) = MatchNodeSelector::new().prepare(&cx)? else { unreachable!() };
//! assert!(MatchNodeSelector::new().filter(&cx, &state, snapshot.node(0)).is_ok());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! [`NodeSummary`]: crate::snapshot::NodeSummary

mod affinity;
mod conditions;
mod general;
mod host_name;
mod labels;
mod ports;
mod resources;
mod taints;
mod util;
mod volumes;

#[cfg(test)]
mod affinity_v1_34_tests;
#[cfg(test)]
mod fit_v1_34_tests;
#[cfg(test)]
mod reference_tests;
#[cfg(test)]
mod scheduler_tests;
#[cfg(test)]
mod taints_v1_34_tests;
#[cfg(test)]
mod testutil;

pub(crate) use affinity::RequiredState;
pub use affinity::{MatchNodeSelector, NodeAffinityPriority};
pub use conditions::{
    CheckNodeCondition, CheckNodeDiskPressure, CheckNodeMemoryPressure, CheckNodePIDPressure,
};
pub use general::GeneralPredicates;
pub use host_name::HostName;
pub use labels::{CheckNodeLabelPresence, NodeLabelPriority};
pub use ports::PodFitsHostPorts;
pub use resources::PodFitsResources;
pub(crate) use taints::TaintsState;
pub use taints::{
    CheckNodeUnschedulable, PodToleratesNodeTaints, TAINT_NODE_UNSCHEDULABLE,
    TaintTolerationPriority,
};
pub use volumes::{ClaimedVolumesUnsupported, DiskState, NoDiskConflict};
