//! kube's own gang scheduling objects: the Workload API (`scheduling.k8s.io/v1alpha1`
//! `Workload`, alpha and off by default in kube v1.35 behind the `GenericWorkload` feature
//! gate) and a pod's `spec.workloadRef`, as KEP-4671 defines them for v1.35. A Workload's
//! pod groups become [`PodGroup`]s for the engine's Coscheduling: the pod group `train` of
//! the Workload `job` in namespace `ml` is the PodGroup `ml/job/train` (a name with a slash,
//! which no PodGroup object can have), with `minMember` its gang's `minCount` (0 for a basic
//! pod group: no gang); a pod joins it by a `workloadRef` naming that Workload and pod group
//! ([`workload_group_of`]). Replicas of a pod group (`podGroupReplicaKey`) are not told
//! apart: all the pods of a pod group form one gang.
//!
//! ```
//! use sched_core::model::{Pod, SchedulingWorkload, pod_group_of};
//! let w: SchedulingWorkload = serde_json::from_str(r#"{
//!   "apiVersion": "scheduling.k8s.io/v1alpha1", "kind": "Workload",
//!   "metadata": {"name": "job", "namespace": "ml"},
//!   "spec": {"podGroups": [
//!     {"name": "train", "policy": {"gang": {"minCount": 4}}},
//!     {"name": "driver", "policy": {"basic": {}}}]}
//! }"#)?;
//! let groups = w.pod_groups();
//! assert_eq!(groups[0].key(), "ml/job/train");
//! assert_eq!(groups[0].spec.min_member, 4);
//! assert_eq!(groups[1].spec.min_member, 0); // basic: no gang
//! let pod: Pod = serde_json::from_str(r#"{"metadata": {"name": "w0", "namespace": "ml"},
//!   "spec": {"workloadRef": {"name": "job", "podGroup": "train"}}}"#)?;
//! assert_eq!(pod_group_of(&pod).as_deref(), Some("ml/job/train"));
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::{Deserialize, Serialize};

use super::objects::nullable;
use super::{ObjectMeta, Pod, PodGroup};

/// A `scheduling.k8s.io/v1alpha1` Workload (kube v1.35; no status in that version).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SchedulingWorkload {
    /// Name and namespace.
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    /// Its pod groups.
    #[serde(deserialize_with = "nullable")]
    pub spec: WorkloadSpec,
}

/// `spec` of a [`SchedulingWorkload`] (its `controllerRef` is not read).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadSpec {
    /// The pod groups (at most 8 in v1.35).
    #[serde(deserialize_with = "nullable")]
    pub pod_groups: Vec<WorkloadPodGroup>,
}

/// One of a Workload's `spec.podGroups`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadPodGroup {
    /// Its name, unique in the Workload.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// How its pods are scheduled.
    #[serde(deserialize_with = "nullable")]
    pub policy: PodGroupPolicy,
}

/// A pod group's `policy`: exactly one of `basic` and `gang` is set.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodGroupPolicy {
    /// Pod by pod, as kube schedules any pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub basic: Option<BasicSchedulingPolicy>,
    /// All or nothing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gang: Option<GangSchedulingPolicy>,
}

/// `policy.basic` (empty in v1.35).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BasicSchedulingPolicy {}

/// `policy.gang`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GangSchedulingPolicy {
    /// The fewest pods that must be schedulable or scheduled together for the group to be
    /// admitted.
    #[serde(deserialize_with = "nullable")]
    pub min_count: i32,
}

/// A pod's `spec.workloadRef`: the Workload and pod group it belongs to.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WorkloadReference {
    /// The Workload, in the pod's namespace.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// The pod group of the Workload.
    #[serde(deserialize_with = "nullable")]
    pub pod_group: String,
    /// Which replica of the pod group the pod is in (read, not told apart: see the README).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub pod_group_replica_key: String,
}

impl SchedulingWorkload {
    /// Its pod groups as Coscheduling [`PodGroup`]s: named `<workload>/<pod group>` in its
    /// namespace, `minMember` a gang's `minCount`, and 0 for a basic pod group (no gang:
    /// Coscheduling's Permit allows each of its pods at once, and preemption does not guard
    /// them).
    pub fn pod_groups(&self) -> Vec<PodGroup> {
        self.spec
            .pod_groups
            .iter()
            .map(|g| {
                let mut pg = PodGroup::default();
                pg.metadata.namespace = self.metadata.namespace.clone();
                pg.metadata.name = format!("{}/{}", self.metadata.name, g.name);
                pg.spec.min_member = g.policy.gang.as_ref().map_or(0, |gang| gang.min_count);
                pg
            })
            .collect()
    }
}

/// The `namespace/workload/pod group` key of the group a pod's `spec.workloadRef` names;
/// `None` without one (or with an empty name or pod group).
pub fn workload_group_of(pod: &Pod) -> Option<String> {
    let r = pod.spec.workload_ref.as_ref()?;
    if r.name.is_empty() || r.pod_group.is_empty() {
        return None;
    }
    Some(format!(
        "{}/{}/{}",
        pod.metadata.namespace, r.name, r.pod_group
    ))
}
