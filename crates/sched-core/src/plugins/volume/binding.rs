//! VolumeBinding (legacy CheckVolumeBinding): bound claims' PersistentVolume node affinity,
//! and whether unbound `WaitForFirstConsumer` claims can be bound or provisioned on the node.

use crate::framework::{
    CycleContext, KubeVersion, PluginError, PluginErrorKind, Predicate, Prepared, Reason,
    Rejection, VolumeBindingConflicts, VolumeProblem,
};
use crate::model::{
    Node, PersistentVolume, PersistentVolumeClaim, StorageClass, TopologySelectorTerm,
    VolumeBindingMode,
};
use crate::snapshot::{NodeRef, StorageIndex};

use super::{claim_name, lookup_claim, not_found, owned_by, pv_class, pv_fits_node};

/// The annotation the scheduler puts on a claim it chose a node for.
const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The provisioner of statically provisioned classes.
const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// kube's `VolumeBinding` filter (legacy `CheckVolumeBinding`). Its arguments
/// (`bindTimeoutSeconds`, `shape`) concern binding and scoring, which sched-core does not do.
///
/// For the pod's `persistentVolumeClaim` (and, v1.34, generic ephemeral) volumes:
/// - a claim bound to a PersistentVolume fits a node the PV's required node affinity
///   matches ("node(s) didn't match PersistentVolume's node affinity", v1.20: "node(s) had
///   volume node affinity conflict"; a missing PV: "node(s)
///   unavailable due to one or more pvc(s) bound to non-existent pv(s)");
/// - unbound claims of a `WaitForFirstConsumer` class are matched, smallest request first, to
///   distinct available PersistentVolumes of their class on the node (capacity at least the
///   request, every access mode of the claim, the same volume mode, node affinity, not bound
///   to another claim; a PV pre-bound to the claim is taken as it is, the smallest fitting
///   otherwise); a claim left over must be provisionable on the node: its class has a
///   provisioner other than `kubernetes.io/no-provisioner` and `allowedTopologies` matching the
///   node's labels; a claim already given a node (`volume.kubernetes.io/selected-node`) fits
///   that node only ("node(s) didn't find available persistent volumes to bind");
/// - a claim to provision whose class's provisioner has a CSIDriver object with
///   `storageCapacity: true` also needs a CSIStorageCapacity of its class whose `nodeTopology`
///   selects the node (none selects no node) and whose `maximumVolumeSize`, else `capacity`,
///   is at least the claim's `storage` request (kube's `hasEnoughCapacity`; the claims to
///   provision are checked in turn and the first that fails decides): "node(s) did not have
///   enough free storage";
/// - an unbound claim of an `Immediate` class (or of a class that does not exist, or with no
///   class) rejects the pod: "pod has unbound immediate PersistentVolumeClaims".
///
/// Claims that cannot be resolved reject the pod with a [`Reason::Volume`]: in a v1.34 profile
/// before any node is filtered ([`Prepared::Reject`]), with kube's text naming the claim
/// (`persistentvolumeclaim "data" not found`, `... is being deleted`, `... bound to
/// non-existent persistentvolume "pv"`, a claim of an ephemeral volume not yet created or not
/// the pod's), and a claim's class without a binding mode fails the attempt with an error, as
/// in kube; a v1.20 profile fails every node with the reason instead. Not done: the
/// in-tree to CSI translation of bound PVs' node affinity and the PreFilter node set kube derives from bound
/// local PVs. The profile does not keep the chosen PVs for the next pods: call
/// [`assume_volumes`] after placing a pod (and [`forget_volumes`] to undo it).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeBinding {
    name: &'static str,
}

impl Default for VolumeBinding {
    fn default() -> Self {
        VolumeBinding::new()
    }
}

impl VolumeBinding {
    /// The plugin under its v1 name, `VolumeBinding`.
    pub fn new() -> Self {
        VolumeBinding {
            name: "VolumeBinding",
        }
    }

    /// The predicate under its legacy name, `CheckVolumeBinding`.
    pub fn legacy() -> Self {
        VolumeBinding {
            name: "CheckVolumeBinding",
        }
    }
}

/// An unbound `WaitForFirstConsumer` claim, with its class's PersistentVolumes.
#[derive(Debug)]
struct Unbound {
    claim: PersistentVolumeClaim,
    /// Indices in [`StorageIndex::pvs`] of the PVs of the claim's class.
    candidates: Vec<usize>,
}

/// Per-pod state: the bound claims' PVs and the unbound claims to match, or the reason every
/// node fails.
#[derive(Debug, Default)]
pub struct BindingState {
    /// Index in [`StorageIndex::pvs`] of each bound claim's PV (`None`: missing).
    bound: Vec<Option<usize>>,
    unbound: Vec<Unbound>,
    reject: Option<Reason>,
}

/// kube's `IsDelayBindingMode`.
fn delay_binding(storage: &StorageIndex, pvc: &PersistentVolumeClaim) -> Result<bool, Rejection> {
    let class = pvc.class();
    if class.is_empty() {
        return Ok(false);
    }
    let Some(sc) = storage.class(class) else {
        return Ok(false);
    };
    match sc.volume_binding_mode {
        None => Err(Rejection::new(
            Reason::Volume(VolumeProblem::BindingModeNotSet),
            format!("VolumeBindingMode not set for StorageClass \"{class}\""),
        )),
        Some(m) => Ok(m == VolumeBindingMode::WaitForFirstConsumer),
    }
}

/// kube v1.34's `podHasPVCs`, the first half of VolumeBinding's PreFilter: every claim of the
/// pod exists, is not `Lost`, is not being deleted and, for a generic ephemeral volume, is
/// the pod's own; else the rejection with kube's text.
fn check_claims_v1_34(storage: &StorageIndex, pod: &crate::model::Pod) -> Result<(), Rejection> {
    let problem = |p, message: String| Err(Rejection::new(Reason::Volume(p), message));
    for v in &pod.spec.volumes {
        let Some((name, ephemeral)) = claim_name(pod, v) else {
            continue;
        };
        let Some(pvc) = storage.pvc(&pod.metadata.namespace, &name) else {
            return problem(
                VolumeProblem::ClaimNotFound,
                if ephemeral {
                    format!(
                        "waiting for ephemeral volume controller to create the \
                         persistentvolumeclaim \"{name}\""
                    )
                } else {
                    not_found("persistentvolumeclaim", &name)
                },
            );
        };
        if pvc.status.phase == "Lost" {
            return problem(
                VolumeProblem::ClaimLost,
                format!(
                    "persistentvolumeclaim \"{name}\" bound to non-existent persistentvolume \
                     \"{}\"",
                    pvc.spec.volume_name
                ),
            );
        }
        if pvc.metadata.deletion_timestamp.is_some() {
            return problem(
                VolumeProblem::ClaimBeingDeleted,
                format!("persistentvolumeclaim \"{name}\" is being deleted"),
            );
        }
        if ephemeral && !owned_by(pvc, pod) {
            return problem(
                VolumeProblem::ClaimNotOwnedByPod,
                format!(
                    "PVC {}/{} was not created for pod {}/{} (pod is not owner)",
                    pvc.metadata.namespace,
                    pvc.metadata.name,
                    pod.metadata.namespace,
                    pod.metadata.name
                ),
            );
        }
    }
    Ok(())
}

/// The pod's claims resolved for VolumeBinding (`None`: the pod has none), or why the pod
/// fits nowhere, worded as kube v1.34 words it.
fn prepare_claims(
    storage: &StorageIndex,
    pod: &crate::model::Pod,
    v1_34: bool,
) -> Result<Option<BindingState>, Rejection> {
    if v1_34 {
        check_claims_v1_34(storage, pod)?;
    }
    let mut st = BindingState::default();
    let mut any = false;
    let mut immediate = false;
    for v in &pod.spec.volumes {
        let Some((name, ephemeral)) = claim_name(pod, v) else {
            continue;
        };
        if ephemeral && !v1_34 {
            continue;
        }
        any = true;
        let pvc = lookup_claim(storage, pod, &name, ephemeral)
            .map_err(|r| Rejection::new(r, not_found("persistentvolumeclaim", &name)))?;
        if pvc.metadata.deletion_timestamp.is_some() {
            return Err(Rejection::new(
                Reason::Volume(VolumeProblem::ClaimBeingDeleted),
                format!("persistentvolumeclaim \"{name}\" is being deleted"),
            ));
        }
        if !pvc.spec.volume_name.is_empty() {
            let pv = storage.pv_index(&pvc.spec.volume_name);
            if pv.is_none() && pvc.status.phase == "Lost" {
                return Err(Rejection::new(
                    Reason::Volume(VolumeProblem::ClaimLost),
                    format!(
                        "persistentvolumeclaim \"{name}\" bound to non-existent \
                         persistentvolume \"{}\"",
                        pvc.spec.volume_name
                    ),
                ));
            }
            st.bound.push(pv);
        } else if delay_binding(storage, pvc)? {
            let class = pvc.class();
            let candidates = storage
                .pvs()
                .iter()
                .enumerate()
                .filter(|(_, pv)| pv_class(pv) == class)
                .map(|(i, _)| i)
                .collect();
            st.unbound.push(Unbound {
                claim: pvc.clone(),
                candidates,
            });
        } else {
            immediate = true;
        }
    }
    if !any {
        return Ok(None);
    }
    if immediate {
        return Err(Rejection::new(
            Reason::UnboundImmediateClaims,
            "pod has unbound immediate PersistentVolumeClaims",
        ));
    }
    // kube matches the smallest requests first.
    st.unbound.sort_by_key(|u| u.claim.requested_storage());
    Ok(Some(st))
}

/// kube's `IsVolumeBoundToClaim`.
fn bound_to(pv: &PersistentVolume, claim: &PersistentVolumeClaim) -> bool {
    pv.spec.claim_ref.as_ref().is_some_and(|r| {
        r.name == claim.metadata.name
            && r.namespace == claim.metadata.namespace
            && (r.uid.is_empty() || r.uid == claim.metadata.uid)
    })
}

fn volume_mode(m: &str) -> &str {
    if m.is_empty() { "Filesystem" } else { m }
}

/// kube's `FindMatchingVolume` on the scheduler path (a node given, delay binding): the PV
/// pre-bound to the claim if it fits the node (else none), or the smallest available PV of
/// the claim's class whose labels match the claim's selector and that fits.
fn find_matching(
    pvs: &[PersistentVolume],
    candidates: &[usize],
    claim: &PersistentVolumeClaim,
    node: &Node,
    chosen: &[usize],
) -> Option<usize> {
    let requested = claim.requested_storage();
    let class = claim.class();
    let mut best: Option<(usize, i64)> = None;
    for &i in candidates {
        if chosen.contains(&i) {
            continue;
        }
        let pv = &pvs[i];
        let size = pv.storage();
        if size < requested {
            continue;
        }
        if volume_mode(&claim.spec.volume_mode) != volume_mode(&pv.spec.volume_mode) {
            continue;
        }
        if pv.metadata.deletion_timestamp.is_some() {
            continue;
        }
        let fits = pv_fits_node(pv, node);
        if bound_to(pv, claim) {
            return fits.then_some(i);
        }
        if pv.status.phase != "Available" || pv.spec.claim_ref.is_some() {
            continue;
        }
        if let Some(sel) = &claim.spec.selector
            && !crate::plugins::interpod::selector::matches(sel, &pv.metadata.labels)
        {
            continue;
        }
        if pv_class(pv) != class || !fits {
            continue;
        }
        if !claim
            .spec
            .access_modes
            .iter()
            .all(|m| pv.spec.access_modes.contains(m))
        {
            continue;
        }
        if best.is_none_or(|(_, s)| s > size) {
            best = Some((i, size));
        }
    }
    best.map(|(i, _)| i)
}

/// kube's `MatchTopologySelectorTerms`: no terms match every node.
fn topology_matches(terms: &[TopologySelectorTerm], node: &Node) -> bool {
    terms.is_empty()
        || terms.iter().any(|t| {
            t.match_label_expressions.iter().all(|r| {
                node.metadata
                    .labels
                    .get(&r.key)
                    .is_some_and(|v| r.values.contains(v))
            })
        })
}

/// kube's `checkVolumeProvisions`: the claims are checked in turn and the first that cannot be
/// provisioned on the node decides: its class has no provisioner or its `allowedTopologies`
/// exclude the node ([`VolumeBindingConflicts::NO_VOLUME_TO_BIND`]), or the storage capacity
/// its CSI driver publishes has no room for it reachable from the node
/// ([`VolumeBindingConflicts::NOT_ENOUGH_SPACE`]). 0 when every claim can be provisioned.
fn check_provisions(storage: &StorageIndex, claims: &[&PersistentVolumeClaim], node: &Node) -> u8 {
    for c in claims {
        let Some(sc) = storage.class(c.class()) else {
            return VolumeBindingConflicts::NO_VOLUME_TO_BIND;
        };
        if sc.provisioner.is_empty()
            || sc.provisioner == NOT_SUPPORTED_PROVISIONER
            || !topology_matches(&sc.allowed_topologies, node)
        {
            return VolumeBindingConflicts::NO_VOLUME_TO_BIND;
        }
        if !has_enough_capacity(storage, c, sc, node) {
            return VolumeBindingConflicts::NOT_ENOUGH_SPACE;
        }
    }
    0
}

/// kube's `hasEnoughCapacity`: a claim that requests no storage, or whose class's provisioner
/// has no CSIDriver object opted into capacity checks (`spec.storageCapacity: true`), always
/// has enough; otherwise some CSIStorageCapacity of the class must select the node's labels
/// (kube's `nodeHasAccess`: a missing `nodeTopology` selects no node) and have a
/// `maximumVolumeSize` (if set, else `capacity`) of at least the request (kube's
/// `capacitySufficient`: neither set is not enough).
fn has_enough_capacity(
    storage: &StorageIndex,
    claim: &PersistentVolumeClaim,
    class: &StorageClass,
    node: &Node,
) -> bool {
    let Some(size) = claim.storage_request() else {
        return true;
    };
    if !storage
        .csi_driver(&class.provisioner)
        .is_some_and(|d| d.storage_capacity())
    {
        return true;
    }
    storage.capacities().any(|cap| {
        cap.storage_class_name == class.metadata.name
            && cap.volume_limit().is_some_and(|q| q.value() >= size)
            && cap.node_topology.as_ref().is_some_and(|sel| {
                crate::plugins::interpod::selector::validate(sel).is_ok()
                    && crate::plugins::interpod::selector::matches(sel, &node.metadata.labels)
            })
    })
}

impl Predicate for VolumeBinding {
    type State = BindingState;

    fn name(&self) -> &str {
        self.name
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<BindingState>, PluginError> {
        let v1_34 = cx.kube_version() >= KubeVersion::V1_34;
        match prepare_claims(cx.snapshot().storage(), cx.pod(), v1_34) {
            Ok(None) => Ok(Prepared::Skip),
            Ok(Some(st)) => Ok(Prepared::Run(st)),
            // kube v1.34 fails the attempt with an error when a class has no binding mode.
            Err(r) if v1_34 && r.reason() == Reason::Volume(VolumeProblem::BindingModeNotSet) => {
                Err(PluginError::new(
                    self.name,
                    PluginErrorKind::InvalidInput(r.message().to_string()),
                ))
            }
            // kube v1.34 rejects the pod in PreFilter; v1.20 failed every node with it.
            Err(r) if v1_34 => Ok(Prepared::Reject(r)),
            Err(r) => Ok(Prepared::Run(BindingState {
                reject: Some(r.reason()),
                ..BindingState::default()
            })),
        }
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        st: &BindingState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        if let Some(r) = st.reject {
            return Err(r);
        }
        let conflicts = decide(cx.snapshot().storage(), st, node.node(), None);
        if conflicts == 0 {
            Ok(())
        } else {
            Err(Reason::VolumeBinding(VolumeBindingConflicts(conflicts)))
        }
    }
}

/// What binding the pod's unbound claims on a node takes: each claim matched to a PV
/// (`static_bindings`: claim index in the state, PV index) or to provision.
#[derive(Debug, Default)]
struct Decisions {
    static_bindings: Vec<(usize, usize)>,
    provisions: Vec<usize>,
}

/// kube's `FindPodVolumes` on one node: the conflicts (bits of [`VolumeBindingConflicts`]),
/// and, when `out` is given, the decisions.
fn decide(
    storage: &StorageIndex,
    st: &BindingState,
    node: &Node,
    out: Option<&mut Decisions>,
) -> u8 {
    let pvs = storage.pvs();
    let mut conflicts = 0u8;
    for pv in &st.bound {
        match pv {
            None => {
                conflicts |= VolumeBindingConflicts::BOUND_TO_MISSING_VOLUME;
                break;
            }
            Some(i) if !pv_fits_node(&pvs[*i], node) => {
                conflicts |= VolumeBindingConflicts::NODE_AFFINITY;
                break;
            }
            Some(_) => {}
        }
    }
    if st.unbound.is_empty() {
        return conflicts;
    }
    let mut to_provision: Vec<usize> = Vec::new();
    let mut to_match: Vec<usize> = Vec::new();
    for (k, u) in st.unbound.iter().enumerate() {
        match u.claim.metadata.annotations.get(ANN_SELECTED_NODE) {
            Some(n) if *n != node.metadata.name => {
                return conflicts | VolumeBindingConflicts::NO_VOLUME_TO_BIND;
            }
            Some(_) => to_provision.push(k),
            None => to_match.push(k),
        }
    }
    let mut chosen = Vec::new();
    let mut bindings = Vec::new();
    for k in to_match {
        let u = &st.unbound[k];
        match find_matching(pvs, &u.candidates, &u.claim, node, &chosen) {
            Some(i) => {
                chosen.push(i);
                bindings.push((k, i));
            }
            None => to_provision.push(k),
        }
    }
    let claims: Vec<&PersistentVolumeClaim> =
        to_provision.iter().map(|&k| &st.unbound[k].claim).collect();
    conflicts |= check_provisions(storage, &claims, node);
    if let Some(out) = out {
        out.static_bindings = bindings;
        out.provisions = to_provision;
    }
    conflicts
}

/// What [`assume_volumes`] changed in the snapshot's storage objects, for [`forget_volumes`],
/// and what the caller must write to the API server before binding the pod (kube's
/// VolumeBinding PreBind: each matched PersistentVolume's `claimRef`, each claim to provision
/// annotated with the selected node).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AssumedVolumes {
    /// The PersistentVolumes as they were before.
    pvs: Vec<PersistentVolume>,
    /// The claims as they were before.
    pvcs: Vec<PersistentVolumeClaim>,
    /// The PersistentVolumes as the assume wrote them.
    assumed_pvs: Vec<PersistentVolume>,
    /// The claims as the assume wrote them.
    assumed_pvcs: Vec<PersistentVolumeClaim>,
}

impl AssumedVolumes {
    /// Whether nothing was changed.
    pub fn is_empty(&self) -> bool {
        self.pvs.is_empty() && self.pvcs.is_empty()
    }

    /// The static bindings: each PersistentVolume (as assumed, its `claimRef` naming the
    /// claim) to bind to its claim.
    pub fn bindings(&self) -> &[PersistentVolume] {
        &self.assumed_pvs
    }

    /// The claims to provision: each (as assumed) carries the node in its
    /// `volume.kubernetes.io/selected-node` annotation.
    pub fn provisions(&self) -> &[PersistentVolumeClaim] {
        &self.assumed_pvcs
    }
}

/// kube's `AssumePodVolumes` once a pod is placed on `node`: each unbound
/// `WaitForFirstConsumer` claim VolumeBinding matched to a PersistentVolume there reserves it
/// (the PV's `claimRef` names the claim, so no other claim takes it), and each claim to
/// provision gets the node in its `volume.kubernetes.io/selected-node` annotation, in the
/// snapshot's storage objects. [`forget_volumes`] undoes it exactly. `version` is the profile's
/// (v1.20 ignores generic ephemeral volumes).
///
/// # Errors
/// The [`Reason`] the node fails VolumeBinding with, if it does (nothing is changed).
pub fn assume_volumes(
    snapshot: &mut crate::snapshot::Snapshot,
    pod: &crate::model::Pod,
    node: &str,
    version: KubeVersion,
) -> Result<AssumedVolumes, Reason> {
    let v1_34 = version >= KubeVersion::V1_34;
    let Some(info) = snapshot.get(node) else {
        return Ok(AssumedVolumes::default());
    };
    let st = match prepare_claims(snapshot.storage(), pod, v1_34).map_err(|r| r.reason())? {
        None => return Ok(AssumedVolumes::default()),
        Some(st) => st,
    };
    let mut d = Decisions::default();
    let conflicts = decide(snapshot.storage(), &st, info.node(), Some(&mut d));
    if conflicts != 0 {
        return Err(Reason::VolumeBinding(VolumeBindingConflicts(conflicts)));
    }
    if d.static_bindings.is_empty() && d.provisions.is_empty() {
        return Ok(AssumedVolumes::default());
    }
    let mut assumed = AssumedVolumes::default();
    let bound: Vec<PersistentVolume> = d
        .static_bindings
        .iter()
        .map(|&(k, i)| {
            let claim = &st.unbound[k].claim;
            let mut pv = snapshot.storage().pvs()[i].clone();
            assumed.pvs.push(pv.clone());
            pv.spec.claim_ref = Some(crate::model::ClaimReference {
                namespace: claim.metadata.namespace.clone(),
                name: claim.metadata.name.clone(),
                uid: claim.metadata.uid.clone(),
            });
            assumed.assumed_pvs.push(pv.clone());
            pv
        })
        .collect();
    let provisioned: Vec<PersistentVolumeClaim> = d
        .provisions
        .iter()
        .map(|&k| {
            let mut claim = st.unbound[k].claim.clone();
            assumed.pvcs.push(claim.clone());
            claim
                .metadata
                .annotations
                .insert(ANN_SELECTED_NODE.to_string(), node.to_string());
            assumed.assumed_pvcs.push(claim.clone());
            claim
        })
        .collect();
    let storage = snapshot.storage_mut();
    for pv in bound {
        storage.upsert_pv(pv);
    }
    for claim in provisioned {
        storage.upsert_pvc(claim);
    }
    Ok(assumed)
}

/// Undoes [`assume_volumes`] (for a pod that is forgotten or failed to bind), as kube's assume
/// cache restores: an object still as the assume wrote it goes back to its earlier version; one
/// that changed since (an informer's newer version replaced it, or it was deleted) is left as it
/// is, so a newer truth is never overwritten with an older one.
pub fn forget_volumes(snapshot: &mut crate::snapshot::Snapshot, assumed: AssumedVolumes) {
    if assumed.is_empty() {
        return;
    }
    let storage = snapshot.storage_mut();
    for (before, written) in assumed.pvs.into_iter().zip(&assumed.assumed_pvs) {
        if storage.pv(&written.metadata.name) == Some(written) {
            storage.upsert_pv(before);
        }
    }
    for (before, written) in assumed.pvcs.into_iter().zip(&assumed.assumed_pvcs) {
        let current = storage.pvc(&written.metadata.namespace, &written.metadata.name);
        if current == Some(written) {
            storage.upsert_pvc(before);
        }
    }
}

#[cfg(test)]
#[path = "binding_tests.rs"]
mod tests;
