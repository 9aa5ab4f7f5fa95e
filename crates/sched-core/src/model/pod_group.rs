//! scheduler-plugins' `PodGroup` (`scheduling.x-k8s.io/v1alpha1`), the group of pods that
//! Coscheduling places all together or not at all. Pods join a group by the
//! [`POD_GROUP_LABEL`] label, in the group's namespace.

use serde::{Deserialize, Serialize};

use super::objects::nullable;
use super::{ObjectMeta, Pod, ResourceList};

/// The label by which a pod joins the PodGroup of that name in its namespace
/// (scheduler-plugins' `v1alpha1.PodGroupLabel`).
pub const POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";

/// A `scheduling.x-k8s.io/v1alpha1` PodGroup, as scheduler-plugins defines it
/// (`apis/scheduling/v1alpha1/types.go`).
///
/// ```
/// use sched_core::model::PodGroup;
/// let pg: PodGroup = serde_json::from_str(r#"{
///   "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
///   "metadata": {"name": "train", "namespace": "ml"},
///   "spec": {"minMember": 4, "minResources": {"cpu": "8"}, "scheduleTimeoutSeconds": 30},
///   "status": {"phase": "Pending", "scheduled": 1}
/// }"#)?;
/// assert_eq!(pg.key(), "ml/train");
/// assert_eq!(pg.spec.min_member, 4);
/// assert_eq!(pg.spec.schedule_timeout_seconds, Some(30));
/// assert_eq!(pg.status.scheduled, 1);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodGroup {
    /// Name and namespace.
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    /// What the group needs.
    #[serde(deserialize_with = "nullable")]
    pub spec: PodGroupSpec,
    /// What the PodGroup controller observed.
    #[serde(deserialize_with = "nullable")]
    pub status: PodGroupStatus,
}

/// `spec` of a [`PodGroup`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodGroupSpec {
    /// The fewest members that must be placed together; fewer are not started at all.
    #[serde(deserialize_with = "nullable")]
    pub min_member: i32,
    /// The least resources the group needs to start (checked against the cluster's free
    /// resources in PreFilter); absent: no check.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_resources: Option<ResourceList>,
    /// How long members wait at Permit for the others; absent: the plugin's
    /// `permitWaitingTimeSeconds`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_timeout_seconds: Option<i32>,
}

/// `status` of a [`PodGroup`] (written by scheduler-plugins' PodGroup controller; the
/// scheduler does not read it).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodGroupStatus {
    /// `Pending`, `Running`, `Scheduling`, `Unknown`, `Finished`, `Failed` or `Scheduled`.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub phase: String,
    /// The UID of the workload that occupies the group.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub occupied_by: String,
    /// Members scheduled.
    #[serde(deserialize_with = "nullable")]
    pub scheduled: i32,
    /// Members running.
    #[serde(deserialize_with = "nullable")]
    pub running: i32,
    /// Members succeeded.
    #[serde(deserialize_with = "nullable")]
    pub succeeded: i32,
    /// Members failed.
    #[serde(deserialize_with = "nullable")]
    pub failed: i32,
    /// When the group's scheduling started (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schedule_start_time: Option<String>,
}

impl PodGroup {
    /// `namespace/name` (scheduler-plugins' group full name).
    pub fn key(&self) -> String {
        format!("{}/{}", self.metadata.namespace, self.metadata.name)
    }
}

/// The `namespace/name` of the PodGroup `pod` belongs to by its [`POD_GROUP_LABEL`]
/// (scheduler-plugins' `GetPodGroupFullName`), else the `namespace/workload/pod group` its
/// `spec.workloadRef` names (kube's Workload API); `None` without either.
///
/// ```
/// use sched_core::model::{Pod, POD_GROUP_LABEL, pod_group_of};
/// let mut pod = Pod::default();
/// pod.metadata.namespace = "ml".into();
/// assert_eq!(pod_group_of(&pod), None);
/// pod.metadata.labels.insert(POD_GROUP_LABEL.into(), "train".into());
/// assert_eq!(pod_group_of(&pod).as_deref(), Some("ml/train"));
/// ```
pub fn pod_group_of(pod: &Pod) -> Option<String> {
    match pod.metadata.labels.get(POD_GROUP_LABEL) {
        Some(name) if !name.is_empty() => Some(format!("{}/{}", pod.metadata.namespace, name)),
        // Without the label, the Workload API's reference ([`super::workload_group_of`]).
        _ => super::workload_group_of(pod),
    }
}

#[cfg(test)]
mod tests {
    use crate::model::{LoadErrorKind, Role, load_bytes};

    #[test]
    fn mixed_files_read_pod_groups_and_name_bad_fields() {
        let json = br#"{"kind":"List","items":[
          {"apiVersion":"scheduling.x-k8s.io/v1alpha1","kind":"PodGroup",
           "metadata":{"name":"pg1","namespace":"ns"},"spec":{"minMember":3}},
          {"kind":"Pod","metadata":{"name":"p","namespace":"ns",
           "labels":{"scheduling.x-k8s.io/pod-group":"pg1"}}}]}"#;
        let objects = load_bytes("f.json", json, Role::Mixed).unwrap();
        assert_eq!(objects.pod_groups.len(), 1);
        assert_eq!(objects.pod_groups[0].spec.min_member, 3);
        let cluster = objects.into_cluster().unwrap();
        assert_eq!(cluster.pod_groups.len(), 1);
        assert_eq!(cluster.pending.len(), 1);

        let bad = br#"[{"kind":"PodGroup","metadata":{"name":"pg1","namespace":"ns"},
            "spec":{"minMember":"three"}}]"#;
        let e = load_bytes("f.json", bad, Role::Mixed).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("spec.minMember"), "{text}");
        assert!(matches!(e.kind(), LoadErrorKind::Field { .. }), "{e:?}");

        let unnamed = br#"[{"kind":"PodGroup","metadata":{"namespace":"ns"}}]"#;
        let e = load_bytes("f.json", unnamed, Role::Mixed).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                LoadErrorKind::EmptyName {
                    kind: "PodGroup",
                    ..
                }
            ),
            "{e:?}"
        );
    }
}
