//! The Kubernetes objects scheduling reads, with Kubernetes' own JSON field names.
//!
//! Only the fields the scheduler looks at are modelled; unknown fields in input JSON are ignored
//! and `null` reads as an absent field, so `kubectl get nodes -o json` and `kubectl get pods -A
//! -o json` output deserializes directly. [`load_file`] and [`load_bytes`] read such files by
//! kind ([`Role`]) into [`ClusterObjects`]; [`ClusterObjects::into_cluster`] checks them and
//! splits the pods, reporting what it leaves out ([`LoadReport`]). PodDisruptionBudgets
//! ([`PodDisruptionBudget`]) are read from mixed files for preemption.
//! Quantities ("500m", "1Gi", "1.5", "2e3") are parsed by [`Quantity`].

mod cluster;
mod dra;
mod key;
mod load;
mod load_error;
mod namespace;
mod objects;
mod pdb;
mod pod_group;
pub(crate) mod quantity;
mod resources;
mod scheduling_workload;
mod storage;

pub use cluster::{Cluster, ClusterObjects, LeftOut, LoadReport, ReportEntry};
pub use dra::*;
pub use key::PodKey;
pub use load::{Role, load_bytes, load_file, load_node_list, load_pod_list, parse_node, parse_pod};
pub(crate) use load_error::short as short_name;
pub use load_error::{LoadError, LoadErrorKind, Position};
pub use namespace::Namespace;
pub(crate) use objects::volume_claim;
pub use objects::*;
pub use pdb::{PodDisruptionBudget, PodDisruptionBudgetSpec, PodDisruptionBudgetStatus};
pub use pod_group::{POD_GROUP_LABEL, PodGroup, PodGroupSpec, PodGroupStatus, pod_group_of};
pub use quantity::{Quantity, QuantityError};
pub(crate) use resources::has_pod_level_requests;
pub use resources::{
    DEFAULT_MEMORY_REQUEST, DEFAULT_MILLI_CPU_REQUEST, ResourceName, Resources,
    pod_container_non_zero_requests, pod_limits, pod_non_zero_requests, pod_requests,
};
pub use scheduling_workload::{
    BasicSchedulingPolicy, GangSchedulingPolicy, PodGroupPolicy, SchedulingWorkload,
    WorkloadPodGroup, WorkloadReference, WorkloadSpec, workload_group_of,
};
pub use storage::*;

/// How a JSON value's type is named in error messages ("a string", "a list", ...).
pub(crate) fn json_type_name(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}
