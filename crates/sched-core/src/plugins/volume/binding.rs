//! VolumeBinding (legacy CheckVolumeBinding): bound claims' PersistentVolume node affinity,
//! and whether unbound `WaitForFirstConsumer` claims can be bound or provisioned on the node;
//! its Reserve ([`assume_volumes`]) and Unreserve ([`forget_volumes`]).

use crate::fast_path::Sealed;
use crate::framework::{
    CycleContext, KubeVersion, PluginError, PluginErrorKind, Predicate, Prepared, Reason,
    Rejection, VolumeBindingConflicts, VolumeProblem,
};
use crate::model::{
    ClaimReference, Node, PersistentVolume, PersistentVolumeClaim, StorageClass,
    TopologySelectorTerm, VolumeBindingMode,
};
use crate::snapshot::{NodeRef, Snapshot, StorageIndex, VolumeBinderId};

use super::{claim_name, lookup_claim, not_found, owned_by, pv_class, pv_fits_node};

/// The annotation the scheduler puts on a claim it chose a node for.
const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The annotation the PV controller puts on a claim once its binding is complete.
const ANN_BIND_COMPLETED: &str = "pv.kubernetes.io/bind-completed";
/// The annotation on a PersistentVolume a controller (the scheduler too) bound to its claim,
/// rather than a user pre-bound.
const ANN_BOUND_BY_CONTROLLER: &str = "pv.kubernetes.io/bound-by-controller";
/// The provisioner of statically provisioned classes.
const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// kube's `VolumeBinding` filter (legacy `CheckVolumeBinding`). Its arguments
/// (`bindTimeoutSeconds`, `shape`) concern binding and scoring, which sched-core does not do.
///
/// For the pod's `persistentVolumeClaim` (and, v1.34, generic ephemeral) volumes:
/// - a fully bound claim (`spec.volumeName` set and the PV controller's
///   `pv.kubernetes.io/bind-completed` annotation, kube's `isPVCFullyBound`) fits a node its
///   PersistentVolume's required node affinity matches ("node(s) didn't match
///   PersistentVolume's node affinity", v1.20: "node(s) had volume node affinity conflict"; a
///   missing PV: "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)");
/// - unbound claims of a `WaitForFirstConsumer` class are matched, smallest request first, to
///   distinct available PersistentVolumes of their class on the node (capacity at least the
///   request, every access mode of the claim, the same volume mode, node affinity, not bound
///   to another claim; a PV pre-bound to the claim by its `claimRef` is taken as it is if it
///   fits the node, and then no other PV is, the smallest fitting otherwise: kube's
///   `FindMatchingVolume`); a claim left over must be provisionable on the node: its class has
///   a provisioner other than `kubernetes.io/no-provisioner` and `allowedTopologies` matching
///   the node's labels; a claim already given a node (`volume.kubernetes.io/selected-node`)
///   fits that node only ("node(s) didn't find available persistent volumes to bind");
/// - a claim to provision whose class's provisioner has a CSIDriver object with
///   `storageCapacity: true` also needs a CSIStorageCapacity of its class whose `nodeTopology`
///   selects the node (none selects no node) and whose `maximumVolumeSize`, else `capacity`,
///   is at least the claim's `storage` request (kube's `hasEnoughCapacity`; the claims to
///   provision are checked in turn and the first that fails decides): "node(s) did not have
///   enough free storage";
/// - an unbound claim of an `Immediate` class (or of a class that does not exist, or with no
///   class), and a claim that names its volume but whose binding is not complete (kube's
///   pre-bound claims, which the PV controller binds), reject the pod: "pod has unbound
///   immediate PersistentVolumeClaims".
///
/// Claims that cannot be resolved reject the pod with a [`Reason::Volume`]: in a v1.34 profile
/// before any node is filtered ([`Prepared::Reject`]), with kube's text naming the claim
/// (`persistentvolumeclaim "data" not found`, `... is being deleted`, `... bound to
/// non-existent persistentvolume "pv"`, a claim of an ephemeral volume not yet created or not
/// the pod's), and a claim's class without a binding mode fails the attempt with an error, as
/// in kube; a v1.20 profile fails every node with the reason instead. Not done: the
/// in-tree to CSI translation of bound PVs' node affinity and the PreFilter node set kube derives from bound
/// local PVs.
///
/// Each `VolumeBinding` has its own volume binder ([`VolumeBinding::binder`]; a clone shares
/// it), as each of kube's VolumeBinding plugins, so each profile, has its own: it reads the
/// PersistentVolumes and claims as its binder sees them, with what that binder assumed
/// ([`StorageIndex::pv_seen_by`]). The profile does not keep the chosen PVs for the next pods:
/// call [`assume_volumes`] with the binder after placing a pod (kube's Reserve) and
/// [`forget_volumes`] to undo it (Unreserve).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VolumeBinding {
    name: &'static str,
    binder: VolumeBinderId,
}

impl Default for VolumeBinding {
    fn default() -> Self {
        VolumeBinding::new()
    }
}

impl VolumeBinding {
    /// The plugin under its v1 name, `VolumeBinding`, with a new volume binder.
    pub fn new() -> Self {
        VolumeBinding {
            name: "VolumeBinding",
            binder: VolumeBinderId::unique(),
        }
    }

    /// The predicate under its legacy name, `CheckVolumeBinding`, with a new volume binder.
    pub fn legacy() -> Self {
        VolumeBinding {
            name: "CheckVolumeBinding",
            binder: VolumeBinderId::unique(),
        }
    }

    /// Its volume binder: whose assumed PersistentVolumes and claims it reads, and what
    /// [`assume_volumes`] assumes for it.
    pub fn binder(&self) -> VolumeBinderId {
        self.binder
    }
}

/// A PersistentVolume as a volume binder sees it: the informer's (its position in
/// [`StorageIndex::pvs`]) or the binder's assumed version (in [`StorageIndex::assumed_pvs`]).
/// Valid while the storage objects do not change (one scheduling cycle).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum PvRef {
    Informer(usize),
    Assumed(usize),
}

/// The PersistentVolumes as one volume binder sees them.
#[derive(Clone, Copy)]
struct Pvs<'a> {
    informer: &'a [PersistentVolume],
    assumed: &'a [PersistentVolume],
}

impl<'a> Pvs<'a> {
    fn of(storage: &'a StorageIndex, binder: VolumeBinderId) -> Pvs<'a> {
        Pvs {
            informer: storage.pvs(),
            assumed: storage.assumed_pvs(binder),
        }
    }

    fn get(&self, r: PvRef) -> &'a PersistentVolume {
        match r {
            PvRef::Informer(i) => &self.informer[i],
            PvRef::Assumed(i) => &self.assumed[i],
        }
    }
}

/// The PersistentVolume of this name as `binder` sees it (kube's `pvCache.GetPV`).
fn pv_ref(storage: &StorageIndex, binder: VolumeBinderId, name: &str) -> Option<PvRef> {
    match storage.assumed_pv_index(binder, name) {
        Some(j) => Some(PvRef::Assumed(j)),
        None => storage.pv_index(name).map(PvRef::Informer),
    }
}

/// An unbound `WaitForFirstConsumer` claim, with its class's PersistentVolumes.
#[derive(Debug)]
struct Unbound {
    claim: PersistentVolumeClaim,
    /// The PVs of the claim's class (kube's `pvCache.ListPVs(class)`), in the storage
    /// objects' order.
    candidates: Vec<PvRef>,
}

/// Per-pod state: the bound claims' PVs and the unbound claims to match, or the reason every
/// node fails.
#[derive(Debug, Default)]
pub struct BindingState {
    /// Each fully bound claim's PV (`None`: missing).
    bound: Vec<Option<PvRef>>,
    /// The unbound `WaitForFirstConsumer` claims, in the pod's order.
    unbound: Vec<Unbound>,
    /// The claims of `unbound` already given a node (kube provisions them there), in the
    /// pod's order.
    selected: Vec<usize>,
    /// The other claims of `unbound`, smallest request first (kube's `byPVCSize`): matched
    /// to PVs in this order.
    to_match: Vec<usize>,
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

/// kube's `isPVCFullyBound`: the claim names its volume and the PV controller completed the
/// binding.
fn fully_bound(pvc: &PersistentVolumeClaim) -> bool {
    !pvc.spec.volume_name.is_empty() && pvc.metadata.annotations.contains_key(ANN_BIND_COMPLETED)
}

/// kube v1.34's `podHasPVCs`, the first half of VolumeBinding's PreFilter: every claim of the
/// pod exists, is not `Lost`, is not being deleted and, for a generic ephemeral volume, is
/// the pod's own; else the rejection with kube's text. It reads the informer's claims (kube's
/// lister).
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

/// kube's `GetPodVolumeClaims` through volume binder `binder`: the pod's claims resolved for
/// VolumeBinding (`None`: the pod has none), or why the pod fits nowhere, worded as kube v1.34
/// words it.
fn prepare_claims(
    storage: &StorageIndex,
    binder: VolumeBinderId,
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
        let informer = lookup_claim(storage, pod, &name, ephemeral)
            .map_err(|r| Rejection::new(r, not_found("persistentvolumeclaim", &name)))?;
        // The claim as the binder sees it (kube's `pvcCache.GetPVC`): a claim it chose a node
        // for carries the node.
        let pvc = storage
            .pvc_seen_by(binder, &pod.metadata.namespace, &name)
            .unwrap_or(informer);
        if pvc.metadata.deletion_timestamp.is_some() {
            return Err(Rejection::new(
                Reason::Volume(VolumeProblem::ClaimBeingDeleted),
                format!("persistentvolumeclaim \"{name}\" is being deleted"),
            ));
        }
        let pv = (!pvc.spec.volume_name.is_empty())
            .then(|| pv_ref(storage, binder, &pvc.spec.volume_name))
            .flatten();
        if !pvc.spec.volume_name.is_empty() && pv.is_none() && pvc.status.phase == "Lost" {
            return Err(Rejection::new(
                Reason::Volume(VolumeProblem::ClaimLost),
                format!(
                    "persistentvolumeclaim \"{name}\" bound to non-existent \
                     persistentvolume \"{}\"",
                    pvc.spec.volume_name
                ),
            ));
        }
        if fully_bound(pvc) {
            st.bound.push(pv);
            continue;
        }
        // kube asks every claim not fully bound for its class's binding mode; a pre-bound
        // claim (a volume named, the binding not complete) waits for the PV controller as an
        // Immediate one does.
        if delay_binding(storage, pvc)? && pvc.spec.volume_name.is_empty() {
            let class = pvc.class();
            let pvs = Pvs::of(storage, binder);
            let candidates = storage
                .pvs()
                .iter()
                .enumerate()
                .map(|(i, pv)| {
                    if pvs.assumed.is_empty() {
                        PvRef::Informer(i)
                    } else {
                        storage
                            .assumed_pv_index(binder, &pv.metadata.name)
                            .map_or(PvRef::Informer(i), PvRef::Assumed)
                    }
                })
                .filter(|&r| pv_class(pvs.get(r)) == class)
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
    for (k, u) in st.unbound.iter().enumerate() {
        if u.claim.metadata.annotations.contains_key(ANN_SELECTED_NODE) {
            st.selected.push(k);
        } else {
            st.to_match.push(k);
        }
    }
    // kube matches the smallest requests first (a stable sort: kube's sort of a pod's few
    // claims keeps the order of equal ones).
    st.to_match
        .sort_by_key(|&k| st.unbound[k].claim.requested_storage());
    Ok(Some(st))
}

/// kube's `IsVolumeBoundToClaim`: the PV's `claimRef` names the claim (and its uid, when it
/// has one).
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

/// kube's `FindMatchingVolume` on the scheduler path (a node given, delay binding) over the
/// PVs as the binder sees them, `chosen` excluded: the PV pre-bound to the claim (its
/// `claimRef` names it) if it fits the node, else none at all; or the smallest available PV
/// of the claim's class whose labels match the claim's selector and that fits. Of several
/// such PVs of the smallest size, the one named `prefer` if it is one of them, else the first
/// (kube takes the first in its assume cache's order, a Go map's).
fn find_matching(
    pvs: Pvs<'_>,
    candidates: &[PvRef],
    claim: &PersistentVolumeClaim,
    node: &Node,
    chosen: &[Option<PvRef>],
    prefer: Option<&str>,
) -> Option<PvRef> {
    let requested = claim.requested_storage();
    let class = claim.class();
    let mut best: Option<(PvRef, i64)> = None;
    for &r in candidates {
        if chosen.contains(&Some(r)) {
            continue;
        }
        let pv = pvs.get(r);
        if pv.spec.claim_ref.is_some() && !bound_to(pv, claim) {
            continue;
        }
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
            // A PV pre-bound to the claim is the claim's, on this node or on none.
            return fits.then_some(r);
        }
        if pv.status.phase != "Available" {
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
        if best.is_none_or(|(_, s)| s > size)
            || (prefer == Some(pv.metadata.name.as_str()) && best.is_some_and(|(_, s)| s == size))
        {
            best = Some((r, size));
        }
    }
    best.map(|(r, _)| r)
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
fn check_provisions<'a>(
    storage: &StorageIndex,
    claims: impl Iterator<Item = &'a PersistentVolumeClaim>,
    node: &Node,
) -> u8 {
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
        match prepare_claims(cx.snapshot().storage(), self.binder, cx.pod(), v1_34) {
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
        let conflicts = decide(cx.snapshot().storage(), self.binder, st, node.node(), None);
        if conflicts == 0 {
            Ok(())
        } else {
            Err(Reason::VolumeBinding(VolumeBindingConflicts(conflicts)))
        }
    }

    fn volume_binder(&self, _: Sealed) -> Option<VolumeBinderId> {
        Some(self.binder)
    }
}

/// What binding the pod's unbound claims on a node takes (kube's `PodVolumes`): claims matched
/// to PVs (`static_bindings`: claim index in the state, the PV) and claims to provision, in
/// kube's order. `pick`, when set, names the PV to take for a claim among the smallest that
/// fit ([`assume_volumes_picking`]).
#[derive(Default)]
struct Decisions<'a> {
    static_bindings: Vec<(usize, PvRef)>,
    provisions: Vec<usize>,
    pick: Option<Pick<'a>>,
}

/// Which PersistentVolume to take for a claim where several of the smallest fit equally
/// well: its name, or `None` for the first in the binder's order.
pub type Pick<'a> = &'a dyn Fn(&PersistentVolumeClaim) -> Option<&'a str>;

/// How many claims to match a node filters without allocating.
const INLINE_CLAIMS: usize = 8;

/// kube's `FindPodVolumes` on one node through volume binder `binder`: the conflicts (bits of
/// [`VolumeBindingConflicts`]), and, when `out` is given, the decisions. Allocates nothing
/// for pods with at most [`INLINE_CLAIMS`] claims to match, unless `out` is given.
fn decide(
    storage: &StorageIndex,
    binder: VolumeBinderId,
    st: &BindingState,
    node: &Node,
    out: Option<&mut Decisions>,
) -> u8 {
    let pvs = Pvs::of(storage, binder);
    let mut conflicts = 0u8;
    for pv in &st.bound {
        match pv {
            None => {
                conflicts |= VolumeBindingConflicts::BOUND_TO_MISSING_VOLUME;
                break;
            }
            Some(r) if !pv_fits_node(pvs.get(*r), node) => {
                conflicts |= VolumeBindingConflicts::NODE_AFFINITY;
                break;
            }
            Some(_) => {}
        }
    }
    if st.unbound.is_empty() {
        return conflicts;
    }
    for &k in &st.selected {
        if st.unbound[k]
            .claim
            .metadata
            .annotations
            .get(ANN_SELECTED_NODE)
            != Some(&node.metadata.name)
        {
            return conflicts | VolumeBindingConflicts::NO_VOLUME_TO_BIND;
        }
    }
    let n = st.to_match.len();
    let mut inline = [None; INLINE_CLAIMS];
    let mut heap = Vec::new();
    let matched: &mut [Option<PvRef>] = if n <= INLINE_CLAIMS {
        &mut inline[..n]
    } else {
        heap.resize(n, None);
        &mut heap
    };
    let pick = out.as_ref().and_then(|d| d.pick);
    for (m, &k) in st.to_match.iter().enumerate() {
        let u = &st.unbound[k];
        let (chosen, rest) = matched.split_at_mut(m);
        let prefer = pick.and_then(|f| f(&u.claim));
        rest[0] = find_matching(pvs, &u.candidates, &u.claim, node, chosen, prefer);
    }
    let matched = &*matched;
    // kube provisions the claims given a node, then those no PV was found for.
    let provisions = || {
        st.selected.iter().copied().chain(
            st.to_match
                .iter()
                .zip(matched)
                .filter(|(_, r)| r.is_none())
                .map(|(&k, _)| k),
        )
    };
    let provisioning = check_provisions(storage, provisions().map(|k| &st.unbound[k].claim), node);
    if let Some(out) = out {
        out.static_bindings = st
            .to_match
            .iter()
            .zip(matched)
            .filter_map(|(&k, r)| r.map(|r| (k, r)))
            .collect();
        // kube keeps no claim to provision when one of them cannot be.
        out.provisions = if provisioning == 0 {
            provisions().collect()
        } else {
            Vec::new()
        };
    }
    conflicts | provisioning
}

/// What VolumeBinding's Reserve ([`assume_volumes`]) assumed for a pod, for the caller's
/// PreBind and for [`forget_volumes`]: kube's `PodVolumes` after `AssumePodVolumes`. The
/// caller writes them to the API server before binding the pod (kube's VolumeBinding
/// PreBind): each matched PersistentVolume with its `claimRef`, each claim to provision with
/// the selected node.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct AssumedVolumes {
    /// The volume binder that assumed them (`None`: nothing was).
    binder: Option<VolumeBinderId>,
    /// The PersistentVolumes bound to their claims.
    bindings: Vec<PersistentVolume>,
    /// The claims to provision, annotated with the node.
    provisions: Vec<PersistentVolumeClaim>,
}

impl AssumedVolumes {
    /// Whether nothing is to be bound or provisioned.
    pub fn is_empty(&self) -> bool {
        self.bindings.is_empty() && self.provisions.is_empty()
    }

    /// The static bindings: each PersistentVolume as the binding writes it (its `claimRef`
    /// naming the claim; `pv.kubernetes.io/bound-by-controller` set unless the PV was
    /// already pre-bound to the claim), in the order of the claims, smallest request first.
    pub fn bindings(&self) -> &[PersistentVolume] {
        &self.bindings
    }

    /// The claims to provision: each carries the node in its
    /// `volume.kubernetes.io/selected-node` annotation.
    pub fn provisions(&self) -> &[PersistentVolumeClaim] {
        &self.provisions
    }

    /// The volume binder whose assumptions these are.
    pub fn binder(&self) -> Option<VolumeBinderId> {
        self.binder
    }
}

/// kube's `GetBindVolumeToClaim`: the PersistentVolume bound to the claim (its `claimRef`
/// naming the claim, and `pv.kubernetes.io/bound-by-controller: "yes"` unless it was
/// already bound to the claim), and whether that changed anything.
fn bind_volume_to_claim(
    pv: &PersistentVolume,
    claim: &PersistentVolumeClaim,
) -> (PersistentVolume, bool) {
    let by_controller = !bound_to(pv, claim);
    let mut bound = pv.clone();
    let mut dirty = false;
    let same = pv.spec.claim_ref.as_ref().is_some_and(|r| {
        r.name == claim.metadata.name
            && r.namespace == claim.metadata.namespace
            && r.uid == claim.metadata.uid
    });
    if !same {
        bound.spec.claim_ref = Some(ClaimReference {
            namespace: claim.metadata.namespace.clone(),
            name: claim.metadata.name.clone(),
            uid: claim.metadata.uid.clone(),
        });
        dirty = true;
    }
    if by_controller
        && !bound
            .metadata
            .annotations
            .contains_key(ANN_BOUND_BY_CONTROLLER)
    {
        bound
            .metadata
            .annotations
            .insert(ANN_BOUND_BY_CONTROLLER.to_string(), "yes".to_string());
        dirty = true;
    }
    (bound, dirty)
}

/// kube's VolumeBinding Reserve (`AssumePodVolumes`) once a pod is placed on `node`, for the
/// VolumeBinding of volume binder `binder` (its profile's: [`crate::profile::Profile::volume_binder`]):
/// the decisions its filter takes there, assumed for that binder only. Each unbound
/// `WaitForFirstConsumer` claim matched to a PersistentVolume binds it (the PV's `claimRef`
/// names the claim, so no other claim takes it, and a PV pre-bound to the claim stays the
/// claim's); each claim to provision gets the node in its `volume.kubernetes.io/selected-node`
/// annotation. The claims themselves are not marked bound: they stay unbound until the API
/// server's versions arrive. A pod whose claims are all fully bound assumes nothing.
/// [`forget_volumes`] undoes it. `version` is the profile's (v1.20 ignores generic ephemeral
/// volumes).
///
/// # Errors
/// The [`Reason`] the node fails VolumeBinding with, if it does (nothing is assumed).
pub fn assume_volumes(
    snapshot: &mut Snapshot,
    binder: VolumeBinderId,
    pod: &crate::model::Pod,
    node: &str,
    version: KubeVersion,
) -> Result<AssumedVolumes, Reason> {
    assume_volumes_picking(snapshot, binder, pod, node, version, &|_| None)
}

/// [`assume_volumes`] where, of the smallest PersistentVolumes that fit a claim, `pick` may
/// name the one to take (a name that is not one of them changes nothing). kube-scheduler
/// takes the first in the order its assume cache lists them, a Go map's, so the same cluster
/// may see it take any of them; sched-core takes the first in its own order unless told.
/// Which PVs were taken is in [`AssumedVolumes::bindings`].
///
/// # Errors
/// As [`assume_volumes`].
pub fn assume_volumes_picking<'a>(
    snapshot: &mut Snapshot,
    binder: VolumeBinderId,
    pod: &crate::model::Pod,
    node: &str,
    version: KubeVersion,
    pick: Pick<'a>,
) -> Result<AssumedVolumes, Reason> {
    let v1_34 = version >= KubeVersion::V1_34;
    let Some(info) = snapshot.get(node) else {
        return Ok(AssumedVolumes::default());
    };
    let storage = snapshot.storage();
    let st = match prepare_claims(storage, binder, pod, v1_34).map_err(|r| r.reason())? {
        None => return Ok(AssumedVolumes::default()),
        Some(st) => st,
    };
    let mut d = Decisions {
        pick: Some(pick),
        ..Decisions::default()
    };
    let conflicts = decide(storage, binder, &st, info.node(), Some(&mut d));
    if conflicts != 0 {
        return Err(Reason::VolumeBinding(VolumeBindingConflicts(conflicts)));
    }
    if d.static_bindings.is_empty() && d.provisions.is_empty() {
        return Ok(AssumedVolumes::default());
    }
    let pvs = Pvs::of(storage, binder);
    let mut to_assume = Vec::new();
    let bindings: Vec<PersistentVolume> = d
        .static_bindings
        .iter()
        .map(|&(k, r)| {
            let (pv, dirty) = bind_volume_to_claim(pvs.get(r), &st.unbound[k].claim);
            if dirty {
                to_assume.push(pv.clone());
            }
            pv
        })
        .collect();
    let provisions: Vec<PersistentVolumeClaim> = d
        .provisions
        .iter()
        .map(|&k| {
            let mut claim = st.unbound[k].claim.clone();
            claim
                .metadata
                .annotations
                .insert(ANN_SELECTED_NODE.to_string(), node.to_string());
            claim
        })
        .collect();
    // The objects come from the storage index, so each is there to assume over.
    for pv in to_assume {
        snapshot.assume_volume(binder, pv);
    }
    for claim in &provisions {
        snapshot.assume_claim(binder, claim.clone());
    }
    Ok(AssumedVolumes {
        binder: Some(binder),
        bindings,
        provisions,
    })
}

/// kube's VolumeBinding Unreserve (`RevertAssumedPodVolumes`, for a pod that is forgotten or
/// failed to bind): the binder sees the informer's version again of each PersistentVolume and
/// claim [`assume_volumes`] gave it, as kube's assume caches restore them. An object the
/// informer replaced since (or deleted) already shows the informer's version, which stays.
pub fn forget_volumes(snapshot: &mut Snapshot, assumed: AssumedVolumes) {
    let Some(binder) = assumed.binder else {
        return;
    };
    for pv in &assumed.bindings {
        snapshot.restore_volume(binder, &pv.metadata.name);
    }
    for claim in &assumed.provisions {
        snapshot.restore_claim(binder, &claim.metadata.namespace, &claim.metadata.name);
    }
}

#[cfg(test)]
#[path = "binding_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "binder_tests.rs"]
mod binder_tests;
