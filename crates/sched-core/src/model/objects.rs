//! Node, Pod and the objects inside them.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, de};

use super::{PodKey, Quantity};

/// A resource list such as `requests`, `limits`, `capacity` or `allocatable`: resource name to quantity.
pub type ResourceList = BTreeMap<String, Quantity>;

/// Object metadata (`metadata`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ObjectMeta {
    /// Object name.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// Namespace (empty for cluster-scoped objects such as nodes).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub namespace: String,
    /// Unique id.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub uid: String,
    /// Labels.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub labels: BTreeMap<String, String>,
    /// Annotations.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub annotations: BTreeMap<String, String>,
    /// Owner references (the controller of a pod, for spreading and prefer-avoid-pods).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub owner_references: Vec<OwnerReference>,
    /// When the object is being deleted, the time its deletion was requested (RFC 3339, as
    /// the API server writes it); `None` for a live object. Spreading skips pods being deleted,
    /// as kube does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deletion_timestamp: Option<String>,
}

impl ObjectMeta {
    /// Whether a controller owner reference names `owner_uid` (kube's `metav1.IsControlledBy`:
    /// a pod's generic ephemeral volume claim, or its ResourceClaim made from a template).
    pub fn is_controlled_by(&self, owner_uid: &str) -> bool {
        self.owner_references
            .iter()
            .any(|o| o.controller == Some(true) && o.uid == owner_uid)
    }
}

/// An owner reference (`metadata.ownerReferences[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct OwnerReference {
    /// API version of the owner.
    #[serde(deserialize_with = "nullable")]
    pub api_version: String,
    /// Kind of the owner (`ReplicaSet`, `ReplicationController`, `StatefulSet`, ...).
    #[serde(deserialize_with = "nullable")]
    pub kind: String,
    /// Name of the owner.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// UID of the owner.
    #[serde(deserialize_with = "nullable")]
    pub uid: String,
    /// Whether this owner is the managing controller.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub controller: Option<bool>,
}

/// A Kubernetes Node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Node {
    /// Metadata: name and labels matter most.
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    /// Spec: taints and the unschedulable flag.
    #[serde(deserialize_with = "nullable")]
    pub spec: NodeSpec,
    /// Status: capacity, allocatable, conditions, images.
    #[serde(deserialize_with = "nullable")]
    pub status: NodeStatus,
}

/// `node.spec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSpec {
    /// Cordoned: no new pods unless they tolerate `node.kubernetes.io/unschedulable`.
    #[serde(deserialize_with = "nullable")]
    pub unschedulable: bool,
    /// Taints.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub taints: Vec<Taint>,
}

/// `node.status`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeStatus {
    /// Total resources of the node.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub capacity: ResourceList,
    /// Resources available for pods (what scheduling uses).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub allocatable: ResourceList,
    /// Conditions (Ready, MemoryPressure, DiskPressure, PIDPressure, NetworkUnavailable...).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<NodeCondition>,
    /// Container images present on the node.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ContainerImage>,
}

/// A node condition (`status.conditions[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeCondition {
    /// Condition type, e.g. `Ready`, `MemoryPressure`.
    #[serde(deserialize_with = "nullable", rename = "type")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(deserialize_with = "nullable")]
    pub status: String,
}

/// An image on a node (`status.images[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerImage {
    /// Names (tags and digests) of the image.
    #[serde(deserialize_with = "nullable")]
    pub names: Vec<String>,
    /// Size in bytes.
    #[serde(deserialize_with = "nullable")]
    pub size_bytes: i64,
}

/// Taint effect.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum TaintEffect {
    /// Do not schedule new pods that do not tolerate it.
    NoSchedule,
    /// Try not to schedule pods that do not tolerate it.
    PreferNoSchedule,
    /// Evict running pods that do not tolerate it (and do not schedule new ones).
    NoExecute,
}

impl TaintEffect {
    /// The effect's Kubernetes name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaintEffect::NoSchedule => "NoSchedule",
            TaintEffect::PreferNoSchedule => "PreferNoSchedule",
            TaintEffect::NoExecute => "NoExecute",
        }
    }
}

/// A node taint (`spec.taints[]`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Taint {
    /// Taint key.
    pub key: String,
    /// Taint value (may be empty).
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub value: String,
    /// Effect.
    pub effect: TaintEffect,
}

/// Toleration operator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize)]
pub enum TolerationOperator {
    /// Key and value must be equal (the default).
    #[default]
    Equal,
    /// Any value of the key (an empty key with Exists tolerates everything).
    Exists,
}

impl<'de> Deserialize<'de> for TolerationOperator {
    /// `Equal`, `Exists`, or (as the API server defaults them) `""` and `null` for `Equal`.
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s: Option<Cow<'de, str>> = Option::deserialize(d)?;
        match s.as_deref() {
            None | Some("" | "Equal") => Ok(TolerationOperator::Equal),
            Some("Exists") => Ok(TolerationOperator::Exists),
            Some(other) => Err(de::Error::unknown_variant(other, &["Equal", "Exists"])),
        }
    }
}

/// A toleration's effect: `""` and `null` (any effect, as the API server reads them) are `None`.
fn empty_effect_is_none<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TaintEffect>, D::Error> {
    let s: Option<Cow<'de, str>> = Option::deserialize(d)?;
    match s.as_deref() {
        None | Some("") => Ok(None),
        Some("NoSchedule") => Ok(Some(TaintEffect::NoSchedule)),
        Some("PreferNoSchedule") => Ok(Some(TaintEffect::PreferNoSchedule)),
        Some("NoExecute") => Ok(Some(TaintEffect::NoExecute)),
        Some(other) => Err(de::Error::unknown_variant(
            other,
            &["NoSchedule", "PreferNoSchedule", "NoExecute"],
        )),
    }
}

/// A field the API server accepts as `null`: `null` reads as the type's default (Go leaves
/// the zero value), as an absent field does.
pub(crate) fn nullable<'de, D, T>(d: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de> + Default,
{
    Ok(Option::<T>::deserialize(d)?.unwrap_or_default())
}

/// Container statuses, without those that report no resources (which pod requests ignore).
fn resized<'de, D>(d: D) -> Result<Vec<ContainerStatus>, D::Error>
where
    D: Deserializer<'de>,
{
    let mut statuses: Vec<ContainerStatus> = nullable(d)?;
    statuses.retain(|s| s.resources.is_some() || !s.allocated_resources.is_empty());
    if statuses.is_empty() {
        // Gives the buffer back.
        return Ok(Vec::new());
    }
    statuses.shrink_to_fit();
    Ok(statuses)
}

/// A pod toleration (`spec.tolerations[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Toleration {
    /// Key to match (empty with `Exists` matches all keys).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub key: String,
    /// Operator; `Equal` when absent.
    #[serde(deserialize_with = "nullable")]
    pub operator: TolerationOperator,
    /// Value to match with `Equal`.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub value: String,
    /// Effect to match; `None` (empty) matches all effects.
    #[serde(
        deserialize_with = "empty_effect_is_none",
        skip_serializing_if = "Option::is_none"
    )]
    pub effect: Option<TaintEffect>,
    /// For NoExecute: how long the pod stays bound after the taint appears.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub toleration_seconds: Option<i64>,
}

/// A Kubernetes Pod.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Pod {
    /// Metadata: name, namespace, labels, owner references.
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    /// Spec: what the pod asks for.
    #[serde(deserialize_with = "nullable")]
    pub spec: PodSpec,
    /// Status: the phase.
    #[serde(deserialize_with = "nullable")]
    pub status: PodStatus,
}

/// `pod.status` (only the phase matters here).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodStatus {
    /// `Pending`, `Running`, `Succeeded`, `Failed` or `Unknown`.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub phase: String,
    /// The node preemption nominated for the pending pod (kube's `nominatedNodeName`).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub nominated_node_name: String,
    /// When the kubelet started the pod (RFC 3339), which preemption compares.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// Conditions; preemption reads `DisruptionTarget` (a victim the scheduler is deleting),
    /// and the requests `PodResizePending` (a resize the kubelet found `Infeasible`).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<PodCondition>,
    /// The containers' statuses: with in-place resize (on by default since kube v1.33), the
    /// resources a running container has and was allocated, which count in its node's
    /// requests ([`crate::model::pod_requests`]).
    /// Only the statuses that report resources are kept (most pods have none: loading a
    /// cluster keeps nothing of them).
    #[serde(deserialize_with = "resized", skip_serializing_if = "Vec::is_empty")]
    pub container_statuses: Vec<ContainerStatus>,
    /// The init containers' statuses (a sidecar's resources, as the containers'), kept as
    /// `container_statuses` are.
    #[serde(deserialize_with = "resized", skip_serializing_if = "Vec::is_empty")]
    pub init_container_statuses: Vec<ContainerStatus>,
    /// The claims made from templates for the pod's `spec.resourceClaims`.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub resource_claim_statuses: Vec<PodResourceClaimStatus>,
}

/// A container's status (`status.containerStatuses[]`): what the scheduler reads of it, the
/// resources of an in-place resize.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerStatus {
    /// The container's name.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// The resources the container runs with (`None` when the kubelet reports none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// The resources the node allocated to the container.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub allocated_resources: ResourceList,
}

/// A pod condition (`status.conditions[]`): its type, status and reason.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodCondition {
    /// `PodScheduled`, `Ready`, `DisruptionTarget`, ...
    #[serde(rename = "type", deserialize_with = "nullable")]
    pub type_: String,
    /// `True`, `False` or `Unknown`.
    #[serde(deserialize_with = "nullable")]
    pub status: String,
    /// Machine-readable reason (`PreemptionByScheduler`, ...).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub reason: String,
}

/// `pod.spec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodSpec {
    /// The node the pod is bound to (empty while pending).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub node_name: String,
    /// Node selector: every pair must be a label of the node.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub node_selector: BTreeMap<String, String>,
    /// Node affinity, pod affinity and pod anti-affinity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub affinity: Option<Affinity>,
    /// Tolerations.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub tolerations: Vec<Toleration>,
    /// Containers.
    #[serde(deserialize_with = "nullable")]
    pub containers: Vec<Container>,
    /// Init containers (run one at a time before the containers).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub init_containers: Vec<Container>,
    /// Pod overhead (added to the requests).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub overhead: ResourceList,
    /// Volumes.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<Volume>,
    /// Priority value.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i32>,
    /// `Never` keeps the pod from preempting others (kube's default `PreemptLowerPriority`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preemption_policy: Option<String>,
    /// Scheduler name.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub scheduler_name: String,
    /// How the pod's group spreads across topology domains.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub topology_spread_constraints: Vec<TopologySpreadConstraint>,
    /// Pod-level requests and limits (CPU and memory), which replace the containers' sums.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Gates that keep the pod out of scheduling while any is present.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub scheduling_gates: Vec<PodSchedulingGate>,
    /// The Workload and pod group the pod belongs to (kube v1.35's alpha Workload API).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workload_ref: Option<super::WorkloadReference>,
    /// Dynamic resource claims (DRA); see [`crate::model::DraObjects`] for the objects they
    /// name.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub resource_claims: Vec<PodResourceClaim>,
}

/// A scheduling gate (`spec.schedulingGates[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct PodSchedulingGate {
    /// The gate's name.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
}

/// A dynamic resource claim of the pod (`spec.resourceClaims[]`): exactly one of a claim's
/// name and a template's name is set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodResourceClaim {
    /// The claim's name in the pod.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// A ResourceClaim of the pod's namespace the pod uses (shared with other pods).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
    /// A ResourceClaimTemplate of the pod's namespace; a claim of the pod's own is made from
    /// it and named in `status.resourceClaimStatuses`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_claim_template_name: Option<String>,
}

/// The claim made for a pod's [`PodResourceClaim`] from a template
/// (`status.resourceClaimStatuses[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodResourceClaimStatus {
    /// The claim's name in the pod.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// The ResourceClaim made for it; none when no claim was needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_claim_name: Option<String>,
}

/// What to do with a pod that would break a [`TopologySpreadConstraint`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum WhenUnsatisfiable {
    /// A filter: nodes that would break the constraint are not feasible.
    #[default]
    DoNotSchedule,
    /// A score: nodes that keep the spread even score higher.
    ScheduleAnyway,
}

/// Whether a node property counts when spreading (`nodeAffinityPolicy`, `nodeTaintsPolicy`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeInclusionPolicy {
    /// Only nodes that satisfy the pod's node affinity (or tolerate the taints) count.
    Honor,
    /// All nodes count.
    Ignore,
}

/// A topology spread constraint (`spec.topologySpreadConstraints[]`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopologySpreadConstraint {
    /// The largest difference allowed between the matching pods of two domains.
    #[serde(deserialize_with = "nullable")]
    pub max_skew: i32,
    /// The node label whose values are the domains.
    #[serde(deserialize_with = "nullable")]
    pub topology_key: String,
    /// Filter (`DoNotSchedule`) or score (`ScheduleAnyway`).
    #[serde(deserialize_with = "nullable")]
    pub when_unsatisfiable: WhenUnsatisfiable,
    /// The pods counted; absent counts none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// The fewest domains there must be; fewer make the global minimum 0.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub min_domains: Option<i32>,
    /// Keys of the pod's labels whose values are added to the selector.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub match_label_keys: Vec<String>,
    /// Whether the pod's node affinity limits the nodes counted (absent: `Honor`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity_policy: Option<NodeInclusionPolicy>,
    /// Whether the node's taints limit the nodes counted (absent: `Ignore`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_taints_policy: Option<NodeInclusionPolicy>,
}

impl TopologySpreadConstraint {
    /// The selector kube v1.34 counts pods with for `pod`'s constraint: the `labelSelector`
    /// with a `key In (value)` requirement for each of `matchLabelKeys` the pod has a label
    /// for (kube's `mergeLabelSetWithSelector`). An absent selector stays absent (kube's
    /// `labels.Nothing()` has no requirements to merge), so the keys are ignored then.
    pub(crate) fn selector_for(&self, pod: &Pod) -> Option<LabelSelector> {
        let mut merged = self.label_selector.clone()?;
        for k in &self.match_label_keys {
            if let Some(v) = pod.metadata.labels.get(k) {
                merged.match_expressions.push(LabelSelectorRequirement {
                    key: k.clone(),
                    operator: LabelSelectorOperator::In,
                    values: vec![v.clone()],
                });
            }
        }
        Some(merged)
    }
}

/// A container (`spec.containers[]` or `spec.initContainers[]`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Container {
    /// Container name.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// Image reference.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub image: String,
    /// Requests and limits.
    #[serde(deserialize_with = "nullable")]
    pub resources: ResourceRequirements,
    /// Ports (host ports matter for scheduling).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<ContainerPort>,
    /// `Always` on an init container makes it a native sidecar (a restartable init container
    /// that keeps running beside the containers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub restart_policy: Option<String>,
}

impl Container {
    /// Whether this init container is a native sidecar (`restartPolicy: Always`).
    pub fn is_restartable(&self) -> bool {
        self.restart_policy.as_deref() == Some("Always")
    }
}

/// `resources` of a container.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ResourceRequirements {
    /// Requests.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub requests: ResourceList,
    /// Limits.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub limits: ResourceList,
}

/// A container port.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ContainerPort {
    /// Port name.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub name: String,
    /// Port in the container.
    #[serde(deserialize_with = "nullable")]
    pub container_port: i32,
    /// Port on the host (0 = none).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "is_zero")]
    pub host_port: i32,
    /// `TCP` (default), `UDP` or `SCTP`.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub protocol: String,
    /// Host IP to bind (empty = 0.0.0.0).
    #[serde(
        deserialize_with = "nullable",
        rename = "hostIP",
        skip_serializing_if = "String::is_empty"
    )]
    pub host_ip: String,
}

fn is_zero(v: &i32) -> bool {
    *v == 0
}

/// A pod volume; only the kinds the volume plugins look at are modelled.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Volume {
    /// Volume name.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// GCE persistent disk.
    #[serde(rename = "gcePersistentDisk", skip_serializing_if = "Option::is_none")]
    pub gce_persistent_disk: Option<GcePersistentDisk>,
    /// AWS EBS volume.
    #[serde(
        rename = "awsElasticBlockStore",
        skip_serializing_if = "Option::is_none"
    )]
    pub aws_elastic_block_store: Option<AwsElasticBlockStore>,
    /// Ceph RBD volume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rbd: Option<RbdVolume>,
    /// iSCSI volume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub iscsi: Option<IscsiVolume>,
    /// A claim (not a disk conflict source, kept for completeness).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub persistent_volume_claim: Option<PersistentVolumeClaimSource>,
    /// A generic ephemeral volume (its claim is `<pod name>-<volume name>`). The rarely present
    /// sources are boxed, so that a pod's volumes stay small.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ephemeral: Option<Box<super::EphemeralVolumeSource>>,
    /// An inline CSI volume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csi: Option<Box<super::CsiVolumeSource>>,
    /// Azure disk.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub azure_disk: Option<Box<super::AzureDiskVolume>>,
    /// OpenStack Cinder volume.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cinder: Option<Box<super::CinderVolume>>,
}

/// `gcePersistentDisk` volume source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct GcePersistentDisk {
    /// Disk name.
    #[serde(deserialize_with = "nullable", rename = "pdName")]
    pub pd_name: String,
    /// Read-only mount.
    #[serde(deserialize_with = "nullable")]
    pub read_only: bool,
}

/// `awsElasticBlockStore` volume source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AwsElasticBlockStore {
    /// Volume id.
    #[serde(deserialize_with = "nullable", rename = "volumeID")]
    pub volume_id: String,
    /// Read-only mount.
    #[serde(deserialize_with = "nullable")]
    pub read_only: bool,
}

/// `rbd` volume source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct RbdVolume {
    /// Ceph monitors.
    #[serde(deserialize_with = "nullable")]
    pub monitors: Vec<String>,
    /// Pool (default `rbd`).
    #[serde(deserialize_with = "nullable")]
    pub pool: String,
    /// Image name.
    #[serde(deserialize_with = "nullable")]
    pub image: String,
    /// Read-only mount.
    #[serde(deserialize_with = "nullable")]
    pub read_only: bool,
}

/// `iscsi` volume source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct IscsiVolume {
    /// Target portal.
    #[serde(deserialize_with = "nullable")]
    pub target_portal: String,
    /// iSCSI qualified name.
    #[serde(deserialize_with = "nullable")]
    pub iqn: String,
    /// LUN.
    #[serde(deserialize_with = "nullable")]
    pub lun: i32,
    /// Read-only mount.
    #[serde(deserialize_with = "nullable")]
    pub read_only: bool,
}

/// `persistentVolumeClaim` volume source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeClaimSource {
    /// Claim name.
    #[serde(deserialize_with = "nullable")]
    pub claim_name: String,
    /// Read-only mount.
    #[serde(deserialize_with = "nullable")]
    pub read_only: bool,
}

/// `spec.affinity`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Affinity {
    /// Node affinity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<NodeAffinity>,
    /// Pod affinity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_affinity: Option<PodAffinity>,
    /// Pod anti-affinity.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pod_anti_affinity: Option<PodAffinity>,
}

/// Node affinity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeAffinity {
    /// Hard requirement: a node must match one of the terms.
    #[serde(
        rename = "requiredDuringSchedulingIgnoredDuringExecution",
        skip_serializing_if = "Option::is_none"
    )]
    pub required: Option<NodeSelector>,
    /// Soft preferences, weighted.
    #[serde(
        rename = "preferredDuringSchedulingIgnoredDuringExecution",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(deserialize_with = "nullable")]
    pub preferred: Vec<PreferredSchedulingTerm>,
}

/// A node selector: the terms are ORed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSelector {
    /// Terms; a node matches if it matches any term.
    #[serde(deserialize_with = "nullable")]
    pub node_selector_terms: Vec<NodeSelectorTerm>,
}

/// A node selector term: the requirements are ANDed. An empty term matches no node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct NodeSelectorTerm {
    /// Requirements on node labels.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<NodeSelectorRequirement>,
    /// Requirements on node fields (only `metadata.name` is supported, as in Kubernetes).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub match_fields: Vec<NodeSelectorRequirement>,
}

/// Operator of a node selector requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum NodeSelectorOperator {
    /// The label's value is in the set.
    In,
    /// The label is absent or its value is not in the set.
    NotIn,
    /// The label is present.
    Exists,
    /// The label is absent.
    DoesNotExist,
    /// The label's value, as an integer, is greater than the single value.
    Gt,
    /// The label's value, as an integer, is less than the single value.
    Lt,
}

/// A requirement in a node selector term.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NodeSelectorRequirement {
    /// Label key (or field name for matchFields).
    pub key: String,
    /// Operator.
    pub operator: NodeSelectorOperator,
    /// Values.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub values: Vec<String>,
}

impl NodeSelectorRequirement {
    /// Whether a label's value (`None`: the label is absent) meets the requirement, as kube's
    /// `labels.Requirement.Matches` judges it: `Gt` and `Lt` compare integers and fail on
    /// anything else.
    pub fn matches_value(&self, value: Option<&str>) -> bool {
        let listed = |v: &str| self.values.iter().any(|x| x == v);
        match self.operator {
            NodeSelectorOperator::In => value.is_some_and(listed),
            NodeSelectorOperator::NotIn => !value.is_some_and(listed),
            NodeSelectorOperator::Exists => value.is_some(),
            NodeSelectorOperator::DoesNotExist => value.is_none(),
            NodeSelectorOperator::Gt | NodeSelectorOperator::Lt => {
                let (Some(v), [bound]) = (value, self.values.as_slice()) else {
                    return false;
                };
                let (Ok(v), Ok(bound)) = (v.parse::<i64>(), bound.parse::<i64>()) else {
                    return false;
                };
                if self.operator == NodeSelectorOperator::Gt {
                    v > bound
                } else {
                    v < bound
                }
            }
        }
    }
}

/// A weighted node selector term.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PreferredSchedulingTerm {
    /// Weight 1..=100.
    #[serde(deserialize_with = "nullable")]
    pub weight: i32,
    /// The term.
    #[serde(deserialize_with = "nullable")]
    pub preference: NodeSelectorTerm,
}

/// Pod affinity or anti-affinity.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodAffinity {
    /// Hard terms: all must hold.
    #[serde(
        rename = "requiredDuringSchedulingIgnoredDuringExecution",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(deserialize_with = "nullable")]
    pub required: Vec<PodAffinityTerm>,
    /// Soft terms, weighted.
    #[serde(
        rename = "preferredDuringSchedulingIgnoredDuringExecution",
        skip_serializing_if = "Vec::is_empty"
    )]
    #[serde(deserialize_with = "nullable")]
    pub preferred: Vec<WeightedPodAffinityTerm>,
}

/// A pod affinity term: pods matching the selector in the namespaces, within a topology domain.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PodAffinityTerm {
    /// Which pods (none = no pods).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub label_selector: Option<LabelSelector>,
    /// Namespaces of those pods (empty = the pod's own namespace, unless a namespace selector is set).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub namespaces: Vec<String>,
    /// Selects namespaces by label; an empty selector selects all namespaces.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace_selector: Option<LabelSelector>,
    /// Node label that defines the topology domain (e.g. `kubernetes.io/hostname`).
    #[serde(deserialize_with = "nullable")]
    pub topology_key: String,
}

/// A weighted pod affinity term.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct WeightedPodAffinityTerm {
    /// Weight 1..=100.
    #[serde(deserialize_with = "nullable")]
    pub weight: i32,
    /// The term.
    #[serde(deserialize_with = "nullable")]
    pub pod_affinity_term: PodAffinityTerm,
}

/// A label selector (`matchLabels` and `matchExpressions`, ANDed). An empty selector matches everything.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct LabelSelector {
    /// Exact label pairs.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub match_labels: BTreeMap<String, String>,
    /// Expressions.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

impl LabelSelector {
    /// Whether these labels satisfy every requirement (an empty selector matches everything):
    /// kube's `LabelSelectorAsSelector(...).Matches`.
    pub(crate) fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.match_labels
            .iter()
            .all(|(k, v)| labels.get(k) == Some(v))
            && self.match_expressions.iter().all(|r| {
                let got = labels.get(&r.key);
                match r.operator {
                    LabelSelectorOperator::In => got.is_some_and(|v| r.values.contains(v)),
                    LabelSelectorOperator::NotIn => got.is_none_or(|v| !r.values.contains(v)),
                    LabelSelectorOperator::Exists => got.is_some(),
                    LabelSelectorOperator::DoesNotExist => got.is_none(),
                }
            })
    }
}

/// Operator of a label selector requirement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum LabelSelectorOperator {
    /// Value in the set.
    In,
    /// Label absent or value not in the set.
    NotIn,
    /// Label present.
    Exists,
    /// Label absent.
    DoesNotExist,
}

/// A label selector requirement.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelectorRequirement {
    /// Label key.
    pub key: String,
    /// Operator.
    pub operator: LabelSelectorOperator,
    /// Values.
    #[serde(
        default,
        deserialize_with = "nullable",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub values: Vec<String>,
}

/// A Service, ReplicationController, ReplicaSet or StatefulSet as spreading sees it: a namespace
/// and a selector over pod labels.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Workload {
    /// What kind of object selects the pods.
    pub kind: WorkloadKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Selector over pod labels. Services and ReplicationControllers use plain maps; an empty map
    /// selects nothing for them.
    pub selector: LabelSelector,
}

impl Workload {
    /// `Kind/namespace/name`: the workload's key in the engine's events.
    pub fn key(&self) -> String {
        format!("{}/{}/{}", self.kind.as_str(), self.namespace, self.name)
    }
}

impl WorkloadKind {
    /// The kind as objects name it (`Service`, `ReplicaSet`).
    pub fn as_str(self) -> &'static str {
        match self {
            WorkloadKind::Service => "Service",
            WorkloadKind::ReplicationController => "ReplicationController",
            WorkloadKind::ReplicaSet => "ReplicaSet",
            WorkloadKind::StatefulSet => "StatefulSet",
        }
    }
}

/// The kinds of [`Workload`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[non_exhaustive]
pub enum WorkloadKind {
    /// A Service.
    Service,
    /// A ReplicationController.
    ReplicationController,
    /// A ReplicaSet.
    ReplicaSet,
    /// A StatefulSet.
    StatefulSet,
}

/// The claim a pod volume uses: `persistentVolumeClaim.claimName`, or `<pod>-<volume>` for a
/// generic ephemeral volume (the bool). `None` for other volumes.
pub(crate) fn volume_claim(pod: &Pod, v: &Volume) -> Option<(String, bool)> {
    if let Some(c) = &v.persistent_volume_claim {
        return Some((c.claim_name.clone(), false));
    }
    if v.ephemeral.is_some() {
        return Some((format!("{}-{}", pod.metadata.name, v.name), true));
    }
    None
}

impl Pod {
    /// Whether the pod is being deleted (`metadata.deletionTimestamp` is set).
    pub fn is_terminating(&self) -> bool {
        self.metadata.deletion_timestamp.is_some()
    }

    /// `namespace/name`, the key kube uses for a pod.
    pub fn key(&self) -> PodKey {
        PodKey::new(&self.metadata.namespace, &self.metadata.name)
    }

    /// The controller owner reference, if any.
    pub fn controller_ref(&self) -> Option<&OwnerReference> {
        self.metadata
            .owner_references
            .iter()
            .find(|o| o.controller == Some(true))
    }

    /// Whether the pod has pod affinity or anti-affinity terms (required or preferred).
    pub fn has_pod_affinity_terms(&self) -> bool {
        self.spec.affinity.as_ref().is_some_and(|a| {
            a.pod_affinity
                .as_ref()
                .is_some_and(|p| !p.required.is_empty() || !p.preferred.is_empty())
                || a.pod_anti_affinity
                    .as_ref()
                    .is_some_and(|p| !p.required.is_empty() || !p.preferred.is_empty())
        })
    }

    /// Whether the pod has required anti-affinity terms.
    pub fn has_required_anti_affinity(&self) -> bool {
        self.spec
            .affinity
            .as_ref()
            .and_then(|a| a.pod_anti_affinity.as_ref())
            .is_some_and(|p| !p.required.is_empty())
    }

    /// All containers' host ports that are set (host port != 0).
    pub fn host_ports(&self) -> impl Iterator<Item = &ContainerPort> {
        self.spec
            .containers
            .iter()
            .flat_map(|c| c.ports.iter())
            .filter(|p| p.host_port != 0)
    }
}

impl Node {
    /// The node's name.
    pub fn name(&self) -> &str {
        &self.metadata.name
    }
}
