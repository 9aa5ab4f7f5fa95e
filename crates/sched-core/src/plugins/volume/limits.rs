//! NodeVolumeLimits (legacy MaxCSIVolumeCount) and the legacy in-tree volume counts
//! (MaxEBSVolumeCount, MaxGCEPDVolumeCount, MaxAzureDiskVolumeCount, MaxCinderVolumeCount).

use std::collections::{HashMap, HashSet};

use crate::framework::{CycleContext, KubeVersion, PluginError, Predicate, Prepared, Reason};
use crate::model::{
    CsiNode, LABEL_FAILURE_DOMAIN_BETA_ZONE, LABEL_TOPOLOGY_ZONE, Node, PersistentVolume,
    PersistentVolumeClaim, Pod, Volume,
};
use crate::snapshot::{NodeRef, StorageIndex};

use super::{claim_name, lookup_claim};

/// The in-tree volume plugins whose volumes kube counts, with their CSI drivers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
enum InTree {
    AwsEbs,
    GcePd,
    AzureDisk,
    Cinder,
}

impl InTree {
    const ALL: [InTree; 4] = [
        InTree::AwsEbs,
        InTree::GcePd,
        InTree::AzureDisk,
        InTree::Cinder,
    ];

    /// The in-tree plugin's name (also its provisioner).
    fn plugin(self) -> &'static str {
        match self {
            InTree::AwsEbs => "kubernetes.io/aws-ebs",
            InTree::GcePd => "kubernetes.io/gce-pd",
            InTree::AzureDisk => "kubernetes.io/azure-disk",
            InTree::Cinder => "kubernetes.io/cinder",
        }
    }

    /// The CSI driver it migrates to.
    fn driver(self) -> &'static str {
        match self {
            InTree::AwsEbs => "ebs.csi.aws.com",
            InTree::GcePd => "pd.csi.storage.gke.io",
            InTree::AzureDisk => "disk.csi.azure.com",
            InTree::Cinder => "cinder.csi.openstack.org",
        }
    }

    /// The node allocatable key of its limit.
    fn limit_key(self) -> &'static str {
        match self {
            InTree::AwsEbs => "attachable-volumes-aws-ebs",
            InTree::GcePd => "attachable-volumes-gce-pd",
            InTree::AzureDisk => "attachable-volumes-azure-disk",
            InTree::Cinder => "attachable-volumes-cinder",
        }
    }

    fn from_provisioner(p: &str) -> Option<InTree> {
        InTree::ALL.into_iter().find(|k| k.plugin() == p)
    }

    /// The volume id of an inline volume of this plugin.
    fn inline_id(self, v: &Volume) -> Option<&str> {
        match self {
            InTree::AwsEbs => v
                .aws_elastic_block_store
                .as_ref()
                .map(|s| s.volume_id.as_str()),
            InTree::GcePd => v.gce_persistent_disk.as_ref().map(|s| s.pd_name.as_str()),
            InTree::AzureDisk => v.azure_disk.as_ref().map(|s| s.disk_name.as_str()),
            InTree::Cinder => v.cinder.as_ref().map(|s| s.volume_id.as_str()),
        }
    }

    /// The volume id of a PersistentVolume of this plugin.
    fn pv_id(self, pv: &PersistentVolume) -> Option<&str> {
        let s = &pv.spec;
        match self {
            InTree::AwsEbs => s
                .aws_elastic_block_store
                .as_ref()
                .map(|s| s.volume_id.as_str()),
            InTree::GcePd => s.gce_persistent_disk.as_ref().map(|s| s.pd_name.as_str()),
            InTree::AzureDisk => s.azure_disk.as_ref().map(|s| s.disk_name.as_str()),
            InTree::Cinder => s.cinder.as_ref().map(|s| s.volume_id.as_str()),
        }
    }

    fn of_inline(v: &Volume) -> Option<InTree> {
        InTree::ALL.into_iter().find(|k| k.inline_id(v).is_some())
    }

    fn of_pv(pv: &PersistentVolume) -> Option<InTree> {
        InTree::ALL.into_iter().find(|k| k.pv_id(pv).is_some())
    }
}

/// kube's `KubernetesVolumeIDToEBSVolumeID`: `aws://zone/vol-1` is `vol-1`.
fn ebs_volume_id(id: &str) -> &str {
    match id.strip_prefix("aws://") {
        Some(rest) => rest.trim_matches('/').rsplit('/').next().unwrap_or(rest),
        None => id,
    }
}

/// The CSI volume handle csi-translation-lib gives an in-tree volume (`pv` for a
/// PersistentVolume, `None` for an inline volume).
fn translated_handle(
    kind: InTree,
    pv: Option<&PersistentVolume>,
    v: Option<&Volume>,
) -> Option<String> {
    match kind {
        InTree::AwsEbs => {
            let id = pv
                .and_then(|p| kind.pv_id(p))
                .or(v.and_then(|v| kind.inline_id(v)))?;
            Some(ebs_volume_id(id).to_string())
        }
        InTree::GcePd => {
            let name = pv
                .and_then(|p| kind.pv_id(p))
                .or(v.and_then(|v| kind.inline_id(v)))?;
            let zone = pv.and_then(|p| {
                p.metadata
                    .labels
                    .get(LABEL_TOPOLOGY_ZONE)
                    .or_else(|| p.metadata.labels.get(LABEL_FAILURE_DOMAIN_BETA_ZONE))
            });
            Some(match zone.map(|z| z.split("__").collect::<Vec<_>>()) {
                Some(zs) if zs.len() == 1 => {
                    format!("projects/UNSPECIFIED/zones/{}/disks/{name}", zs[0])
                }
                Some(zs) if zs.len() > 1 => {
                    let region = zs[0].rsplit_once('-').map_or(zs[0], |(r, _)| r);
                    format!("projects/UNSPECIFIED/regions/{region}/disks/{name}")
                }
                _ => format!("projects/UNSPECIFIED/zones/UNSPECIFIED/disks/{name}"),
            })
        }
        InTree::AzureDisk => {
            let uri = pv
                .and_then(|p| p.spec.azure_disk.as_ref())
                .or(v.and_then(|v| v.azure_disk.as_deref()))
                .map(|d| d.disk_uri.clone())?;
            Some(uri)
        }
        InTree::Cinder => {
            let id = pv
                .and_then(|p| kind.pv_id(p))
                .or(v.and_then(|v| kind.inline_id(v)))?;
            Some(id.to_string())
        }
    }
}

/// A volume as NodeVolumeLimits counts it.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Attachable {
    /// A CSI volume: counted on every node.
    Csi { driver: String, handle: String },
    /// An in-tree volume migrated to CSI: counted only on nodes with a CSINode (kube's
    /// `isCSIMigrationOn`).
    Migrated { driver: String, handle: String },
}

/// kube's `getCSIDriverInfoFromSC`: an unbound claim counts under its class's provisioner,
/// with an id no bound volume has.
fn from_class(
    storage: &StorageIndex,
    pvc: &PersistentVolumeClaim,
    v1_34: bool,
) -> Option<Attachable> {
    let class = pvc.class();
    if class.is_empty() {
        return None;
    }
    let sc = storage.class(class)?;
    let handle = format!(
        "\u{0}unbound-{}/{}",
        pvc.metadata.namespace, pvc.metadata.name
    );
    match InTree::from_provisioner(&sc.provisioner) {
        Some(k) if v1_34 => Some(Attachable::Migrated {
            driver: k.driver().to_string(),
            handle,
        }),
        // v1.20: no in-tree plugin was migrated by default.
        Some(_) => None,
        None => Some(Attachable::Csi {
            driver: sc.provisioner.clone(),
            handle,
        }),
    }
}

/// kube's `getCSIDriverInfo` for a claim.
fn of_claim(
    storage: &StorageIndex,
    pvc: &PersistentVolumeClaim,
    v1_34: bool,
) -> Option<Attachable> {
    if pvc.spec.volume_name.is_empty() {
        return from_class(storage, pvc, v1_34);
    }
    let Some(pv) = storage.pv(&pvc.spec.volume_name) else {
        return from_class(storage, pvc, v1_34);
    };
    if let Some(csi) = &pv.spec.csi {
        return Some(Attachable::Csi {
            driver: csi.driver.clone(),
            handle: csi.volume_handle.clone(),
        });
    }
    if !v1_34 {
        return None;
    }
    let kind = InTree::of_pv(pv)?;
    Some(Attachable::Migrated {
        driver: kind.driver().to_string(),
        handle: translated_handle(kind, Some(pv), None)?,
    })
}

/// The pod's attachable volumes (kube's `filterAttachableVolumes`). For the pod being
/// scheduled (`new_pod`) under v1.34 a claim that cannot be resolved is a reason; otherwise
/// such a volume is not counted.
fn attachables(
    storage: &StorageIndex,
    pod: &Pod,
    new_pod: bool,
    v1_34: bool,
    out: &mut Vec<Attachable>,
) -> Result<(), Reason> {
    for v in &pod.spec.volumes {
        match claim_name(pod, v) {
            Some((_, true)) if !v1_34 => continue,
            Some((name, ephemeral)) => {
                if !v1_34 && name.is_empty() {
                    return Err(Reason::Volume(
                        crate::framework::VolumeProblem::ClaimWithoutName,
                    ));
                }
                let pvc = match lookup_claim(storage, pod, &name, ephemeral) {
                    Ok(pvc) => pvc,
                    Err(r) if new_pod && v1_34 => return Err(r),
                    Err(_) => continue,
                };
                if let Some(a) = of_claim(storage, pvc, v1_34) {
                    out.push(a);
                }
            }
            None if v1_34 => {
                if let Some(kind) = InTree::of_inline(v)
                    && let Some(handle) = translated_handle(kind, None, Some(v))
                {
                    out.push(Attachable::Migrated {
                        driver: kind.driver().to_string(),
                        handle,
                    });
                }
            }
            None => {}
        }
    }
    Ok(())
}

/// Counts unique volumes per driver on the node, as `attachables` gives them.
fn unique(list: &[Attachable], csi_node: Option<&CsiNode>, out: &mut HashMap<String, String>) {
    for a in list {
        match a {
            Attachable::Csi { driver, handle } => {
                out.insert(format!("{driver}/{handle}"), driver.clone());
            }
            Attachable::Migrated { driver, handle } if csi_node.is_some() => {
                out.insert(format!("{driver}/{handle}"), driver.clone());
            }
            Attachable::Migrated { .. } => {}
        }
    }
}

/// kube's `getVolumeLimits`: `attachable-volumes-csi-<driver>` in the node's allocatable, then
/// each CSINode driver's `allocatable.count`.
fn csi_limits(node: &Node, csi_node: Option<&CsiNode>) -> HashMap<String, i64> {
    let mut limits: HashMap<String, i64> = node
        .status
        .allocatable
        .iter()
        .filter_map(|(k, q)| {
            k.strip_prefix("attachable-volumes-csi-")
                .map(|d| (d.to_string(), q.value()))
        })
        .collect();
    if let Some(cn) = csi_node {
        for d in &cn.spec.drivers {
            if let Some(c) = d.allocatable.as_ref().and_then(|a| a.count) {
                limits.insert(d.name.clone(), i64::from(c));
            }
        }
    }
    limits
}

/// kube's `NodeVolumeLimits` filter (legacy `MaxCSIVolumeCountPred`). No argument.
///
/// Counts the unique CSI volumes (driver and volume handle) the pod would add to those the
/// node's pods already use, per driver, against the node's limit for that driver (its
/// CSINode's `allocatable.count`, or `attachable-volumes-csi-<driver>` in the node's
/// allocatable). A driver without a limit is not limited. Claims bound to a CSI volume count
/// under its driver; unbound claims under their StorageClass's provisioner. Failure:
/// "node(s) exceed max volume count".
///
/// v1.34 also counts generic ephemeral volumes and, on nodes with a CSINode, in-tree AWS EBS,
/// GCE PD, Azure Disk and Cinder volumes (inline or as PersistentVolumes) under the CSI driver
/// kube migrates them to, with csi-translation-lib's volume handles; a claim of the pod that
/// does not exist rejects every node. v1.20 counts claims only, skips a missing one and
/// migrates nothing (its migration feature gates were off by default).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeVolumeLimits {
    name: &'static str,
}

impl Default for NodeVolumeLimits {
    fn default() -> Self {
        NodeVolumeLimits::new()
    }
}

impl NodeVolumeLimits {
    /// The plugin under its v1 name, `NodeVolumeLimits`.
    pub fn new() -> Self {
        NodeVolumeLimits {
            name: "NodeVolumeLimits",
        }
    }

    /// The predicate under its legacy name, `MaxCSIVolumeCountPred`.
    pub fn legacy() -> Self {
        NodeVolumeLimits {
            name: "MaxCSIVolumeCountPred",
        }
    }
}

/// Per-pod state of [`NodeVolumeLimits`]: the pod's attachable volumes, or the reason every
/// node fails.
#[derive(Debug, Default)]
pub struct CsiLimitsState {
    /// The pod's unique volumes per driver, on a node without a CSINode (in-tree volumes are
    /// not migrated there) and on one with.
    new_plain: Vec<NewVolumes>,
    new_migrated: Vec<NewVolumes>,
    reject: Option<Reason>,
}

/// The pod's unique volumes of one CSI driver: the driver's name as a node's [`Attached`]
/// keeps it, and each volume's id (`driver/handle`, as `unique` keys it) with its
/// fingerprint, computed once per pod.
#[derive(Debug)]
struct NewVolumes {
    driver: DriverName,
    ids: Vec<(u64, String)>,
}

/// `unique` per driver, each volume id with its fingerprint under `fp`.
fn new_volumes(
    list: &[Attachable],
    csi_node: Option<&CsiNode>,
    fp: fn(&str) -> u64,
) -> Vec<NewVolumes> {
    let mut map = HashMap::new();
    unique(list, csi_node, &mut map);
    let mut v: Vec<(String, String)> = map.into_iter().collect();
    v.sort_unstable_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
    v.chunk_by(|a, b| a.1 == b.1)
        .map(|run| NewVolumes {
            driver: DriverName::new(&run[0].1),
            ids: run.iter().map(|(id, _)| (fp(id), id.clone())).collect(),
        })
        .collect()
}

/// The fingerprint of a volume id (`driver/handle`) that [`Attached`] keeps of the volumes a
/// node's pods attach: equal ids have equal fingerprints; different ids rarely do, and an
/// equal fingerprint is confirmed against the id itself, so a collision costs a lookup and
/// never changes an answer.
fn fingerprint(id: &str) -> u64 {
    use std::hash::BuildHasher;
    foldhash::fast::FixedState::with_seed(0x5eed_c51f_1a75).hash_one(id)
}

fn counts_for_limits(v: &Volume, v1_34: bool) -> bool {
    if v1_34 {
        v.persistent_volume_claim.is_some()
            || v.ephemeral.is_some()
            || InTree::of_inline(v).is_some()
    } else {
        v.persistent_volume_claim.is_some()
    }
}

impl Predicate for NodeVolumeLimits {
    type State = CsiLimitsState;

    fn name(&self) -> &str {
        self.name
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<CsiLimitsState>, PluginError> {
        let v1_34 = cx.kube_version() >= KubeVersion::V1_34;
        let pod = cx.pod();
        if !pod.spec.volumes.iter().any(|v| counts_for_limits(v, v1_34)) {
            return Ok(Prepared::Skip);
        }
        let mut st = CsiLimitsState::default();
        let mut volumes = Vec::new();
        if let Err(r) = attachables(cx.snapshot().storage(), pod, true, v1_34, &mut volumes) {
            st.reject = Some(r);
        }
        // `unique` reads only whether the node has a CSINode: both answers, once per pod.
        st.new_plain = new_volumes(&volumes, None, fingerprint);
        let any_csi_node = CsiNode::default();
        st.new_migrated = new_volumes(&volumes, Some(&any_csi_node), fingerprint);
        // As kube, a pod with claims runs the filter even when none of them counts (each node
        // then passes at once).
        Ok(Prepared::Run(st))
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        st: &CsiLimitsState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        if let Some(r) = st.reject {
            return Err(r);
        }
        let v1_34 = cx.kube_version() >= KubeVersion::V1_34;
        if st.new_plain.is_empty() && st.new_migrated.is_empty() {
            return Ok(());
        }
        // The node's limits and the volumes its pods attach: derived from the node, its pods
        // and the storage objects only, so kept in the node's memo until one changes.
        let storage = cx.snapshot().storage();
        let compute = || Attached::of(storage, node, v1_34, fingerprint);
        let slot = MEMO_CSI + usize::from(v1_34);
        let local;
        let attached = match node.info().memo(slot, compute) {
            Some(a) => a,
            None => {
                local = compute();
                &local
            }
        };
        let new = if attached.has_csi_node {
            &st.new_migrated
        } else {
            &st.new_plain
        };
        if attached.exceeds(new) {
            return Err(Reason::MaxVolumeCount);
        }
        Ok(())
    }
}

/// The node memo slots of the volume limits (`NodeInfo::memo`): NodeVolumeLimits at
/// `MEMO_CSI` (v1.20) and `MEMO_CSI + 1` (v1.34), the in-tree counts from `MEMO_IN_TREE`, one
/// per kind.
const MEMO_CSI: usize = 0;
const MEMO_IN_TREE: usize = 2;

/// A node's limited CSI drivers with their limits and how many unique volumes its pods attach
/// of each, whether it has a CSINode, and the unique volumes its pods attach (volume id to CSI
/// driver). The filter reads it for every node it visits, so what it reads there is kept in
/// place rather than behind pointers (each of which would miss the cache): the first
/// [`INLINE_DRIVERS`] limited drivers with their names (when short), and the fingerprints of
/// the first [`INLINE_IDS`] volume ids, sorted. Only a volume of the pod whose fingerprint the
/// node has is looked up in `ids` (the exact answer: two ids may share a fingerprint).
#[derive(Debug)]
struct Attached {
    has_csi_node: bool,
    fingerprints: Few<u64, INLINE_IDS>,
    limited: Few<DriverUse, INLINE_DRIVERS>,
    ids: HashMap<String, String>,
}

/// How many limited drivers and volume id fingerprints [`Attached`] keeps in place (a node
/// with more keeps them on the heap).
const INLINE_DRIVERS: usize = 2;
const INLINE_IDS: usize = 6;

/// A CSI driver with a limit on a node, and the unique volumes of it the node's pods attach.
#[derive(Clone, Debug, Default)]
struct DriverUse {
    driver: DriverName,
    limit: i64,
    count: i64,
}

/// How many bytes of a CSI driver's name [`DriverName`] keeps in place.
const INLINE_NAME: usize = 38;

/// A CSI driver's name, in place when it has at most [`INLINE_NAME`] bytes (the zero bytes
/// after it part of the value), on the heap otherwise: two names are equal exactly when
/// their strings are, and comparing short ones reads no other memory.
#[derive(Clone, Debug, PartialEq, Eq)]
enum DriverName {
    Inline { len: u8, bytes: [u8; INLINE_NAME] },
    Heap(Box<str>),
}

impl Default for DriverName {
    fn default() -> Self {
        DriverName::new("")
    }
}

impl DriverName {
    fn new(name: &str) -> DriverName {
        if name.len() > INLINE_NAME {
            return DriverName::Heap(name.into());
        }
        let mut bytes = [0; INLINE_NAME];
        bytes[..name.len()].copy_from_slice(name.as_bytes());
        DriverName::Inline {
            len: name.len() as u8,
            bytes,
        }
    }
}

/// Up to `N` values in place, more on the heap.
#[derive(Debug)]
enum Few<T, const N: usize> {
    Inline { len: u8, items: [T; N] },
    Heap(Box<[T]>),
}

impl<T: Clone + Default, const N: usize> Few<T, N> {
    fn from_vec(v: Vec<T>) -> Self {
        if v.len() > N {
            return Few::Heap(v.into_boxed_slice());
        }
        Few::Inline {
            len: v.len() as u8,
            items: std::array::from_fn(|i| v.get(i).cloned().unwrap_or_default()),
        }
    }

    fn as_slice(&self) -> &[T] {
        match self {
            Few::Inline { len, items } => &items[..usize::from(*len)],
            Few::Heap(items) => items,
        }
    }
}

impl Attached {
    /// The node's `Attached`, its volume ids fingerprinted by `fp` (the pod's must be too).
    fn of(storage: &StorageIndex, node: NodeRef<'_>, v1_34: bool, fp: fn(&str) -> u64) -> Attached {
        let csi_node = storage.csi_node(&node.node().metadata.name);
        let mut ids = HashMap::new();
        let mut list = Vec::new();
        for p in node.info().pods() {
            list.clear();
            // Existing pods' unresolvable claims are not counted (never an error).
            let _ = attachables(storage, p.pod(), false, v1_34, &mut list);
            unique(&list, csi_node, &mut ids);
        }
        Attached::new(
            csi_node.is_some(),
            csi_limits(node.node(), csi_node),
            ids,
            fp,
        )
    }

    fn new(
        has_csi_node: bool,
        limits: HashMap<String, i64>,
        ids: HashMap<String, String>,
        fp: fn(&str) -> u64,
    ) -> Attached {
        let limited = limits
            .into_iter()
            .map(|(driver, limit)| DriverUse {
                count: ids.values().filter(|d| **d == driver).count() as i64,
                driver: DriverName::new(&driver),
                limit,
            })
            .collect();
        let mut fingerprints: Vec<u64> = ids.keys().map(|id| fp(id)).collect();
        fingerprints.sort_unstable();
        fingerprints.dedup();
        Attached {
            has_csi_node,
            fingerprints: Few::from_vec(fingerprints),
            limited: Few::from_vec(limited),
            ids,
        }
    }

    /// Whether the node's pods attach the volume `id`, whose fingerprint is `fp`.
    fn has(&self, fp: u64, id: &str) -> bool {
        let fps = self.fingerprints.as_slice();
        let maybe = if fps.len() <= INLINE_IDS {
            fps.contains(&fp)
        } else {
            fps.binary_search(&fp).is_ok()
        };
        maybe && self.ids.contains_key(id)
    }

    /// Whether the pod's volumes `new` (for this node's CSINode or its absence) take a
    /// limited driver over its limit: per driver, the volumes not attached already.
    fn exceeds(&self, new: &[NewVolumes]) -> bool {
        let limited = self.limited.as_slice();
        if limited.is_empty() {
            return false;
        }
        for nv in new {
            let Some(d) = limited.iter().find(|d| d.driver == nv.driver) else {
                continue;
            };
            let n = nv.ids.iter().filter(|(fp, id)| !self.has(*fp, id)).count() as i64;
            if n > 0 && d.count + n > d.limit {
                return true;
            }
        }
        false
    }
}

/// kube v1.20's legacy in-tree volume counts: `MaxEBSVolumeCount`, `MaxGCEPDVolumeCount`,
/// `MaxAzureDiskVolumeCount` and `MaxCinderVolumeCount`. No argument.
///
/// Counts the unique volumes of one in-tree kind (inline, or through a claim's bound
/// PersistentVolume; an unbound claim, or one bound to a missing volume, counts when its
/// StorageClass's provisioner is the plugin's) that the pod adds to the node's, against the
/// node's limit: `attachable-volumes-<kind>` in its allocatable, else the
/// `KUBE_MAX_PD_VOLS`-style override ([`InTreeVolumeLimits::with_max_volumes`]), else the
/// era's default: EBS 39 (25 on Nitro instance types: `node.kubernetes.io/instance-type` or
/// the beta key matching `^[cmr]5.*|t3|z1d`), GCE PD 16, Azure Disk 16, Cinder 256. Missing
/// claims are not counted. Failure: "node(s) exceed max volume count".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InTreeVolumeLimits {
    kind: InTree,
    max_override: Option<i64>,
}

impl InTreeVolumeLimits {
    /// `MaxEBSVolumeCount`.
    pub fn ebs() -> Self {
        InTreeVolumeLimits {
            kind: InTree::AwsEbs,
            max_override: None,
        }
    }

    /// `MaxGCEPDVolumeCount`.
    pub fn gce_pd() -> Self {
        InTreeVolumeLimits {
            kind: InTree::GcePd,
            max_override: None,
        }
    }

    /// `MaxAzureDiskVolumeCount`.
    pub fn azure_disk() -> Self {
        InTreeVolumeLimits {
            kind: InTree::AzureDisk,
            max_override: None,
        }
    }

    /// `MaxCinderVolumeCount`.
    pub fn cinder() -> Self {
        InTreeVolumeLimits {
            kind: InTree::Cinder,
            max_override: None,
        }
    }

    /// The limit for nodes whose allocatable does not give one, instead of the default (kube
    /// reads it from the `KUBE_MAX_PD_VOLS` environment variable; values below 1 are ignored,
    /// as kube ignores them).
    #[must_use]
    pub fn with_max_volumes(mut self, max: i64) -> Self {
        self.max_override = (max > 0).then_some(max);
        self
    }

    fn default_max(&self, node: &Node) -> i64 {
        if let Some(m) = self.max_override {
            return m;
        }
        match self.kind {
            InTree::AwsEbs => {
                let labels = &node.metadata.labels;
                let it = labels
                    .get("node.kubernetes.io/instance-type")
                    .or_else(|| labels.get("beta.kubernetes.io/instance-type"))
                    .map_or("", |s| s.as_str());
                let nitro = ["c5", "m5", "r5"].iter().any(|p| it.starts_with(p))
                    || it.contains("t3")
                    || it.contains("z1d");
                if nitro { 25 } else { 39 }
            }
            InTree::GcePd | InTree::AzureDisk => 16,
            InTree::Cinder => 256,
        }
    }

    /// kube v1.20's `filterVolumes`: the ids of the pod's volumes of this kind.
    fn ids(
        &self,
        storage: &StorageIndex,
        pod: &Pod,
        out: &mut HashSet<String>,
    ) -> Result<(), Reason> {
        let ns = &pod.metadata.namespace;
        for v in &pod.spec.volumes {
            if let Some(id) = self.kind.inline_id(v) {
                out.insert(id.to_string());
                continue;
            }
            let Some(c) = &v.persistent_volume_claim else {
                continue;
            };
            if c.claim_name.is_empty() {
                return Err(Reason::Volume(
                    crate::framework::VolumeProblem::ClaimWithoutName,
                ));
            }
            let pv_id = format!("\u{0}claim-{ns}/{}", c.claim_name);
            let Some(pvc) = storage.pvc(ns, &c.claim_name) else {
                continue;
            };
            let matches_provisioner = || {
                pvc.spec.storage_class_name.as_deref().is_some_and(|class| {
                    storage
                        .class(class)
                        .is_some_and(|sc| sc.provisioner == self.kind.plugin())
                })
            };
            if pvc.spec.volume_name.is_empty() {
                if matches_provisioner() {
                    out.insert(pv_id);
                }
                continue;
            }
            match storage.pv(&pvc.spec.volume_name) {
                None => {
                    if matches_provisioner() {
                        out.insert(pv_id);
                    }
                }
                Some(pv) => {
                    if let Some(id) = self.kind.pv_id(pv) {
                        out.insert(id.to_string());
                    }
                }
            }
        }
        Ok(())
    }
}

/// Per-pod state of [`InTreeVolumeLimits`]: the pod's volume ids of the kind.
#[derive(Debug, Default)]
pub struct InTreeLimitsState {
    ids: HashSet<String>,
    reject: Option<Reason>,
}

impl Predicate for InTreeVolumeLimits {
    type State = InTreeLimitsState;

    fn name(&self) -> &str {
        match self.kind {
            InTree::AwsEbs => "MaxEBSVolumeCount",
            InTree::GcePd => "MaxGCEPDVolumeCount",
            InTree::AzureDisk => "MaxAzureDiskVolumeCount",
            InTree::Cinder => "MaxCinderVolumeCount",
        }
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<InTreeLimitsState>, PluginError> {
        let mut st = InTreeLimitsState::default();
        if let Err(r) = self.ids(cx.snapshot().storage(), cx.pod(), &mut st.ids) {
            st.reject = Some(r);
        } else if st.ids.is_empty() {
            return Ok(Prepared::Skip);
        }
        Ok(Prepared::Run(st))
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        st: &InTreeLimitsState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        if let Some(r) = st.reject {
            return Err(r);
        }
        let storage = cx.snapshot().storage();
        // The node's pods' volume ids of the kind, kept in the node's memo.
        let compute = || -> Result<HashSet<String>, Reason> {
            let mut existing = HashSet::new();
            for p in node.info().pods() {
                self.ids(storage, p.pod(), &mut existing)?;
            }
            Ok(existing)
        };
        let slot = MEMO_IN_TREE + self.kind as usize;
        let local;
        let existing = match node.info().memo(slot, compute) {
            Some(e) => e,
            None => {
                local = compute();
                &local
            }
        };
        let existing = existing.as_ref().map_err(|r| *r)?;
        let new = st.ids.iter().filter(|id| !existing.contains(*id)).count() as i64;
        let max = node
            .node()
            .status
            .allocatable
            .get(self.kind.limit_key())
            .map_or_else(|| self.default_max(node.node()), |q| q.value());
        if existing.len() as i64 + new > max {
            return Err(Reason::MaxVolumeCount);
        }
        Ok(())
    }
}

#[cfg(test)]
#[path = "limits_tests.rs"]
mod tests;
