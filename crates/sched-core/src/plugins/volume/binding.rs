//! VolumeBinding (legacy CheckVolumeBinding): bound claims' PersistentVolume node affinity,
//! and whether unbound `WaitForFirstConsumer` claims can be bound or provisioned on the node.

use crate::framework::{
    CycleContext, KubeVersion, PluginError, Predicate, Prepared, Reason, VolumeBindingConflicts,
    VolumeProblem,
};
use crate::model::{
    Node, PersistentVolume, PersistentVolumeClaim, TopologySelectorTerm, VolumeBindingMode,
};
use crate::snapshot::{NodeRef, StorageIndex};

use super::{claim_name, lookup_claim, pv_class, pv_fits_node};

/// The annotation the scheduler puts on a claim it chose a node for.
const ANN_SELECTED_NODE: &str = "volume.kubernetes.io/selected-node";
/// The provisioner of statically provisioned classes.
const NOT_SUPPORTED_PROVISIONER: &str = "kubernetes.io/no-provisioner";

/// kube's `VolumeBinding` filter (legacy `CheckVolumeBinding`). Its arguments
/// (`bindTimeoutSeconds`, `shape`) concern binding and scoring, which sched-core does not do.
///
/// For the pod's `persistentVolumeClaim` (and, v1.34, generic ephemeral) volumes:
/// - a claim bound to a PersistentVolume fits a node the PV's required node affinity
///   matches ("node(s) had volume node affinity conflict"; a missing PV: "node(s)
///   unavailable due to one or more pvc(s) bound to non-existent pv(s)");
/// - unbound claims of a `WaitForFirstConsumer` class are matched, smallest request first, to
///   distinct available PersistentVolumes of their class on the node (capacity at least the
///   request, every access mode of the claim, the same volume mode, node affinity, not bound
///   to another claim; a PV pre-bound to the claim is taken as it is, the smallest fitting
///   otherwise); a claim left over must be provisionable on the node: its class has a
///   provisioner other than `kubernetes.io/no-provisioner` and `allowedTopologies` matching the
///   node's labels; a claim already given a node (`volume.kubernetes.io/selected-node`) fits
///   that node only ("node(s) didn't find available persistent volumes to bind");
/// - an unbound claim of an `Immediate` class (or of a class that does not exist, or with no
///   class) rejects every node: "pod has unbound immediate PersistentVolumeClaims".
///
/// Claims that cannot be resolved reject every node with a [`Reason::Volume`]. Not done:
/// claims' label selectors, storage capacity (CSIStorageCapacity), the in-tree to CSI
/// translation of bound PVs' node affinity, the PreFilter node set kube derives from bound
/// local PVs, and keeping the chosen PVs for the next pods (each pod is matched against the
/// PVs as the snapshot holds them).
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
fn delay_binding(storage: &StorageIndex, pvc: &PersistentVolumeClaim) -> Result<bool, Reason> {
    let class = pvc.class();
    if class.is_empty() {
        return Ok(false);
    }
    let Some(sc) = storage.class(class) else {
        return Ok(false);
    };
    match sc.volume_binding_mode {
        None => Err(Reason::Volume(VolumeProblem::BindingModeNotSet)),
        Some(m) => Ok(m == VolumeBindingMode::WaitForFirstConsumer),
    }
}

fn prepare_claims(
    storage: &StorageIndex,
    pod: &crate::model::Pod,
    v1_34: bool,
) -> Result<Option<BindingState>, Reason> {
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
        let pvc = lookup_claim(storage, pod, &name, ephemeral)?;
        if pvc.metadata.deletion_timestamp.is_some() {
            return Err(Reason::Volume(VolumeProblem::ClaimBeingDeleted));
        }
        if !pvc.spec.volume_name.is_empty() {
            let pv = storage.pv_index(&pvc.spec.volume_name);
            if pv.is_none() && pvc.status.phase == "Lost" {
                return Err(Reason::Volume(VolumeProblem::ClaimLost));
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
        return Err(Reason::UnboundImmediateClaims);
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
/// the claim's class that fits.
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

/// kube's `checkVolumeProvisions`: whether every claim can be provisioned on the node.
fn provisionable(storage: &StorageIndex, claims: &[&PersistentVolumeClaim], node: &Node) -> bool {
    claims.iter().all(|c| {
        let Some(sc) = storage.class(c.class()) else {
            return false;
        };
        !sc.provisioner.is_empty()
            && sc.provisioner != NOT_SUPPORTED_PROVISIONER
            && topology_matches(&sc.allowed_topologies, node)
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
            Err(r) => Ok(Prepared::Run(BindingState {
                reject: Some(r),
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
        let storage = cx.snapshot().storage();
        let pvs = storage.pvs();
        let node = node.node();
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
        if !st.unbound.is_empty() {
            let mut to_provision: Vec<&PersistentVolumeClaim> = Vec::new();
            let mut to_match: Vec<&Unbound> = Vec::new();
            let mut elsewhere = false;
            for u in &st.unbound {
                match u.claim.metadata.annotations.get(ANN_SELECTED_NODE) {
                    Some(n) if *n != node.metadata.name => {
                        elsewhere = true;
                        break;
                    }
                    Some(_) => to_provision.push(&u.claim),
                    None => to_match.push(u),
                }
            }
            if elsewhere {
                conflicts |= VolumeBindingConflicts::NO_VOLUME_TO_BIND;
            } else {
                let mut chosen = Vec::new();
                for u in to_match {
                    match find_matching(pvs, &u.candidates, &u.claim, node, &chosen) {
                        Some(i) => chosen.push(i),
                        None => to_provision.push(&u.claim),
                    }
                }
                if !provisionable(storage, &to_provision, node) {
                    conflicts |= VolumeBindingConflicts::NO_VOLUME_TO_BIND;
                }
            }
        }
        if conflicts == 0 {
            Ok(())
        } else {
            Err(Reason::VolumeBinding(VolumeBindingConflicts(conflicts)))
        }
    }
}

#[cfg(test)]
#[path = "binding_tests.rs"]
mod tests;
