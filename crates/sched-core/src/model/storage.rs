//! Storage objects the volume plugins read: PersistentVolume, PersistentVolumeClaim,
//! StorageClass, CSINode, CSIDriver and CSIStorageCapacity, with Kubernetes' own JSON field
//! names.

use serde::{Deserialize, Serialize};

use super::objects::nullable;
use super::{
    AwsElasticBlockStore, GcePersistentDisk, LabelSelector, NodeSelector, ObjectMeta, Quantity,
    ResourceList,
};

/// The GA zone label (`topology.kubernetes.io/zone`).
pub const LABEL_TOPOLOGY_ZONE: &str = "topology.kubernetes.io/zone";
/// The GA region label (`topology.kubernetes.io/region`).
pub const LABEL_TOPOLOGY_REGION: &str = "topology.kubernetes.io/region";
/// The deprecated beta zone label (`failure-domain.beta.kubernetes.io/zone`).
pub const LABEL_FAILURE_DOMAIN_BETA_ZONE: &str = "failure-domain.beta.kubernetes.io/zone";
/// The deprecated beta region label (`failure-domain.beta.kubernetes.io/region`).
pub const LABEL_FAILURE_DOMAIN_BETA_REGION: &str = "failure-domain.beta.kubernetes.io/region";
/// The beta annotation that names a claim's StorageClass before `spec.storageClassName`.
pub const ANNOTATION_BETA_STORAGE_CLASS: &str = "volume.beta.kubernetes.io/storage-class";

/// A volume access mode.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum AccessMode {
    /// Read-write by one node.
    ReadWriteOnce,
    /// Read-only by many nodes.
    ReadOnlyMany,
    /// Read-write by many nodes.
    ReadWriteMany,
    /// Read-write by one pod.
    ReadWriteOncePod,
}

/// A reference to the claim a PersistentVolume is bound to (`spec.claimRef`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct ClaimReference {
    /// The claim's namespace.
    #[serde(deserialize_with = "nullable")]
    pub namespace: String,
    /// The claim's name.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// The claim's uid, when set.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub uid: String,
}

/// `spec.nodeAffinity` of a PersistentVolume.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeNodeAffinity {
    /// The nodes the volume can be reached from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub required: Option<NodeSelector>,
}

/// `azureDisk` volume source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct AzureDiskVolume {
    /// Disk name.
    #[serde(deserialize_with = "nullable")]
    pub disk_name: String,
    /// Disk URI.
    #[serde(rename = "diskURI", deserialize_with = "nullable")]
    pub disk_uri: String,
    /// Read-only mount.
    #[serde(deserialize_with = "nullable")]
    pub read_only: bool,
}

/// `cinder` volume source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CinderVolume {
    /// Volume id.
    #[serde(rename = "volumeID", deserialize_with = "nullable")]
    pub volume_id: String,
    /// Read-only mount.
    #[serde(deserialize_with = "nullable")]
    pub read_only: bool,
}

/// `csi` source of a PersistentVolume.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiPersistentVolumeSource {
    /// The CSI driver's name.
    #[serde(deserialize_with = "nullable")]
    pub driver: String,
    /// The volume's id for the driver.
    #[serde(deserialize_with = "nullable")]
    pub volume_handle: String,
    /// Read-only mount.
    #[serde(deserialize_with = "nullable")]
    pub read_only: bool,
}

/// A PersistentVolume's `spec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeSpec {
    /// `capacity` (`storage`).
    #[serde(deserialize_with = "nullable")]
    pub capacity: ResourceList,
    /// Access modes.
    #[serde(deserialize_with = "nullable")]
    pub access_modes: Vec<AccessMode>,
    /// StorageClass name (`""`: no class).
    #[serde(deserialize_with = "nullable")]
    pub storage_class_name: String,
    /// The claim the volume is bound to (or reserved for).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub claim_ref: Option<ClaimReference>,
    /// The nodes the volume can be reached from.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_affinity: Option<VolumeNodeAffinity>,
    /// `Filesystem` (the default) or `Block`.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub volume_mode: String,
    /// AWS EBS source.
    #[serde(
        rename = "awsElasticBlockStore",
        skip_serializing_if = "Option::is_none"
    )]
    pub aws_elastic_block_store: Option<AwsElasticBlockStore>,
    /// GCE PD source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub gce_persistent_disk: Option<GcePersistentDisk>,
    /// Azure disk source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub azure_disk: Option<AzureDiskVolume>,
    /// OpenStack Cinder source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cinder: Option<CinderVolume>,
    /// CSI source.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub csi: Option<CsiPersistentVolumeSource>,
}

/// A PersistentVolume's `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeStatus {
    /// `Pending`, `Available`, `Bound`, `Released` or `Failed`.
    #[serde(deserialize_with = "nullable")]
    pub phase: String,
}

/// A PersistentVolume (`kubectl get pv -o json` items).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolume {
    /// Name and labels (zone and region labels included).
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(deserialize_with = "nullable")]
    pub spec: PersistentVolumeSpec,
    /// Status.
    #[serde(deserialize_with = "nullable")]
    pub status: PersistentVolumeStatus,
}

impl PersistentVolume {
    /// The capacity's `storage` in bytes (0 when absent).
    pub fn storage(&self) -> i64 {
        self.spec.capacity.get("storage").map_or(0, |q| q.value())
    }
}

/// A claim's `spec.resources`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeResourceRequirements {
    /// `requests` (`storage`).
    #[serde(deserialize_with = "nullable")]
    pub requests: ResourceList,
}

/// A PersistentVolumeClaim's `spec` (also the spec of an ephemeral volume's claim template).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeClaimSpec {
    /// Access modes.
    #[serde(deserialize_with = "nullable")]
    pub access_modes: Vec<AccessMode>,
    /// Requested resources.
    #[serde(deserialize_with = "nullable")]
    pub resources: VolumeResourceRequirements,
    /// StorageClass name: `None` when not set (the default class applies), `Some("")` for no
    /// class.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// The bound PersistentVolume's name (`""` while unbound).
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub volume_name: String,
    /// Labels a PersistentVolume must have to be bound to the claim.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub selector: Option<crate::model::LabelSelector>,
    /// `Filesystem` (the default) or `Block`.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "String::is_empty"
    )]
    pub volume_mode: String,
}

/// A PersistentVolumeClaim's `status`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeClaimStatus {
    /// `Pending`, `Bound` or `Lost`.
    #[serde(deserialize_with = "nullable")]
    pub phase: String,
}

/// A PersistentVolumeClaim (`kubectl get pvc -A -o json` items).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeClaim {
    /// Namespace, name and annotations.
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(deserialize_with = "nullable")]
    pub spec: PersistentVolumeClaimSpec,
    /// Status.
    #[serde(deserialize_with = "nullable")]
    pub status: PersistentVolumeClaimStatus,
}

impl PersistentVolumeClaim {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.metadata.namespace, self.metadata.name)
    }

    /// The claim's class as kube's `GetPersistentVolumeClaimClass` reads it: the beta
    /// annotation first, then `spec.storageClassName`, else `""`.
    pub fn class(&self) -> &str {
        if let Some(c) = self.metadata.annotations.get(ANNOTATION_BETA_STORAGE_CLASS) {
            return c;
        }
        self.spec.storage_class_name.as_deref().unwrap_or("")
    }

    /// The requested `storage` in bytes, `None` when the claim requests none.
    pub fn storage_request(&self) -> Option<i64> {
        self.spec
            .resources
            .requests
            .get("storage")
            .map(|q| q.value())
    }

    /// The requested `storage` in bytes (0 when absent).
    pub fn requested_storage(&self) -> i64 {
        self.spec
            .resources
            .requests
            .get("storage")
            .map_or(0, |q| q.value())
    }
}

/// When a StorageClass's claims are bound.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum VolumeBindingMode {
    /// At once, without regard to the pod (the default).
    #[default]
    Immediate,
    /// When the first pod using the claim is scheduled.
    WaitForFirstConsumer,
}

/// A requirement of a topology selector term.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopologySelectorLabelRequirement {
    /// Label key.
    #[serde(deserialize_with = "nullable")]
    pub key: String,
    /// Allowed values.
    #[serde(deserialize_with = "nullable")]
    pub values: Vec<String>,
}

/// A topology selector term (`allowedTopologies[]`): the requirements are ANDed.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct TopologySelectorTerm {
    /// Requirements.
    #[serde(deserialize_with = "nullable")]
    pub match_label_expressions: Vec<TopologySelectorLabelRequirement>,
}

/// A StorageClass (`kubectl get storageclass -o json` items).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct StorageClass {
    /// Name.
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    /// The provisioner (`kubernetes.io/no-provisioner` for statically provisioned classes).
    #[serde(deserialize_with = "nullable")]
    pub provisioner: String,
    /// When claims are bound (`None`: Immediate).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_binding_mode: Option<VolumeBindingMode>,
    /// Where provisioned volumes may be (empty: anywhere).
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub allowed_topologies: Vec<TopologySelectorTerm>,
}

impl StorageClass {
    /// The binding mode, `Immediate` when unset.
    pub fn binding_mode(&self) -> VolumeBindingMode {
        self.volume_binding_mode.unwrap_or_default()
    }
}

/// A CSI driver's allocatable resources on a node.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct VolumeNodeResources {
    /// How many of the driver's volumes the node can attach (`None`: no limit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
}

/// One driver of a CSINode.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiNodeDriver {
    /// Driver name.
    #[serde(deserialize_with = "nullable")]
    pub name: String,
    /// The node's id for the driver.
    #[serde(rename = "nodeID", deserialize_with = "nullable")]
    pub node_id: String,
    /// Allocatable volumes.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub allocatable: Option<VolumeNodeResources>,
    /// Topology keys the driver reports.
    #[serde(deserialize_with = "nullable", skip_serializing_if = "Vec::is_empty")]
    pub topology_keys: Vec<String>,
}

/// A CSINode's `spec`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiNodeSpec {
    /// The node's CSI drivers.
    #[serde(deserialize_with = "nullable")]
    pub drivers: Vec<CsiNodeDriver>,
}

/// A CSINode (`kubectl get csinodes -o json` items); named after its node.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiNode {
    /// Name (the node's) and annotations (`storage.alpha.kubernetes.io/migrated-plugins`).
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(deserialize_with = "nullable")]
    pub spec: CsiNodeSpec,
}

impl CsiNode {
    /// The attach limit of a driver on this node, if it reports one.
    pub fn limit_of(&self, driver: &str) -> Option<i64> {
        self.spec
            .drivers
            .iter()
            .find(|d| d.name == driver)
            .and_then(|d| d.allocatable.as_ref())
            .and_then(|a| a.count)
            .map(i64::from)
    }
}

/// A CSIDriver's `spec` (only what the scheduler reads).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiDriverSpec {
    /// Whether the driver publishes CSIStorageCapacity objects the scheduler must check
    /// (`None`: false).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub storage_capacity: Option<bool>,
}

/// A CSIDriver (`kubectl get csidrivers -o json` items); named after the driver, which is
/// the provisioner of its StorageClasses.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiDriver {
    /// Name (the driver's).
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    /// Spec.
    #[serde(deserialize_with = "nullable")]
    pub spec: CsiDriverSpec,
}

impl CsiDriver {
    /// Whether the driver opted into storage capacity checks (`spec.storageCapacity`).
    pub fn storage_capacity(&self) -> bool {
        self.spec.storage_capacity.unwrap_or(false)
    }
}

/// A CSIStorageCapacity (`storage.k8s.io/v1`, `kubectl get csistoragecapacities -A -o json`
/// items): the storage a class can still provision in a topology segment.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiStorageCapacity {
    /// Namespace and name.
    #[serde(deserialize_with = "nullable")]
    pub metadata: ObjectMeta,
    /// The StorageClass the capacity is for.
    #[serde(deserialize_with = "nullable")]
    pub storage_class_name: String,
    /// The nodes that can reach the storage (`None`: none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node_topology: Option<LabelSelector>,
    /// The capacity left (`None`: unknown).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<Quantity>,
    /// The largest volume that can be created (`None`: unknown; `capacity` applies).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub maximum_volume_size: Option<Quantity>,
}

impl CsiStorageCapacity {
    /// `namespace/name`.
    pub fn key(&self) -> String {
        format!("{}/{}", self.metadata.namespace, self.metadata.name)
    }

    /// kube's `volumeLimit`: `maximumVolumeSize` when set, else `capacity`.
    pub fn volume_limit(&self) -> Option<&Quantity> {
        self.maximum_volume_size.as_ref().or(self.capacity.as_ref())
    }
}

/// `csi` (inline, ephemeral) pod volume source.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct CsiVolumeSource {
    /// The CSI driver's name.
    #[serde(deserialize_with = "nullable")]
    pub driver: String,
    /// Read-only mount.
    #[serde(deserialize_with = "nullable")]
    pub read_only: bool,
    /// Driver attributes.
    #[serde(
        deserialize_with = "nullable",
        skip_serializing_if = "std::collections::BTreeMap::is_empty"
    )]
    pub volume_attributes: std::collections::BTreeMap<String, String>,
}

/// An ephemeral volume's claim template (its metadata is not read).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct PersistentVolumeClaimTemplate {
    /// The claim's spec.
    #[serde(deserialize_with = "nullable")]
    pub spec: PersistentVolumeClaimSpec,
}

/// `ephemeral` (generic ephemeral) pod volume source: its claim is named
/// `<pod name>-<volume name>`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct EphemeralVolumeSource {
    /// The claim template.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub volume_claim_template: Option<PersistentVolumeClaimTemplate>,
}

/// The storage objects of a cluster, as read from kubectl files (mixed Lists route them here).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct StorageObjects {
    /// PersistentVolumes.
    pub persistent_volumes: Vec<PersistentVolume>,
    /// PersistentVolumeClaims.
    pub persistent_volume_claims: Vec<PersistentVolumeClaim>,
    /// StorageClasses.
    pub storage_classes: Vec<StorageClass>,
    /// CSINodes.
    pub csi_nodes: Vec<CsiNode>,
    /// CSIDrivers.
    pub csi_drivers: Vec<CsiDriver>,
    /// CSIStorageCapacities.
    pub csi_storage_capacities: Vec<CsiStorageCapacity>,
}

impl StorageObjects {
    /// No objects.
    pub fn new() -> Self {
        StorageObjects::default()
    }

    /// Whether there are no objects.
    pub fn is_empty(&self) -> bool {
        self.persistent_volumes.is_empty()
            && self.persistent_volume_claims.is_empty()
            && self.storage_classes.is_empty()
            && self.csi_nodes.is_empty()
            && self.csi_drivers.is_empty()
            && self.csi_storage_capacities.is_empty()
    }

    /// Appends another set's objects after these.
    pub fn extend(&mut self, other: StorageObjects) {
        self.persistent_volumes.extend(other.persistent_volumes);
        self.persistent_volume_claims
            .extend(other.persistent_volume_claims);
        self.storage_classes.extend(other.storage_classes);
        self.csi_nodes.extend(other.csi_nodes);
        self.csi_drivers.extend(other.csi_drivers);
        self.csi_storage_capacities
            .extend(other.csi_storage_capacities);
    }
}
