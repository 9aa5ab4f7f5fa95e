//! kube-scheduler's volume plugins over the snapshot's storage objects
//! ([`crate::snapshot::Snapshot::set_storage`]): [`VolumeZone`] (NoVolumeZoneConflict),
//! [`NodeVolumeLimits`] (MaxCSIVolumeCount) and the legacy in-tree counts
//! ([`InTreeVolumeLimits`]: MaxEBSVolumeCount, MaxGCEPDVolumeCount, MaxAzureDiskVolumeCount,
//! MaxCinderVolumeCount), [`VolumeBinding`] (CheckVolumeBinding) and [`VolumeRestrictions`]
//! (disk conflicts and ReadWriteOncePod).
//!
//! Each follows the kube version of the profile it is in ([`crate::framework::KubeVersion`]):
//! v1.20.2 under a legacy Policy, v1.34 under a configuration.

mod binding;
mod limits;
mod restrictions;
mod zone;

#[cfg(test)]
mod testutil;

pub use binding::{
    AssumedVolumes, Pick, VolumeBinding, assume_volumes, assume_volumes_picking, forget_volumes,
};
pub use limits::{InTreeVolumeLimits, NodeVolumeLimits};
pub use restrictions::VolumeRestrictions;
pub use zone::VolumeZone;

use crate::framework::{Reason, VolumeProblem};
use crate::model::{Node, NodeSelector, PersistentVolume, PersistentVolumeClaim, Pod};
use crate::snapshot::StorageIndex;

/// kube's lister error for a missing object (`persistentvolumeclaim "data" not found`), the
/// text kube's volume plugins reject a pod with.
pub(crate) fn not_found(resource: &str, name: &str) -> String {
    format!("{resource} \"{name}\" not found")
}

pub(crate) use crate::model::volume_claim as claim_name;

/// kube's `ephemeral.VolumeIsForPod`: the claim's controller is the pod.
pub(crate) fn owned_by(pvc: &PersistentVolumeClaim, pod: &Pod) -> bool {
    pvc.metadata.is_controlled_by(&pod.metadata.uid)
}

/// Looks up the claim of a pod volume as kube v1.34's plugins do: a missing name, a missing
/// claim and an ephemeral claim the pod does not own are problems.
pub(crate) fn lookup_claim<'a>(
    storage: &'a StorageIndex,
    pod: &Pod,
    name: &str,
    ephemeral: bool,
) -> Result<&'a PersistentVolumeClaim, Reason> {
    if name.is_empty() {
        return Err(Reason::Volume(VolumeProblem::ClaimWithoutName));
    }
    let pvc = storage
        .pvc(&pod.metadata.namespace, name)
        .ok_or(Reason::Volume(VolumeProblem::ClaimNotFound))?;
    if ephemeral && !owned_by(pvc, pod) {
        return Err(Reason::Volume(VolumeProblem::ClaimNotOwnedByPod));
    }
    Ok(pvc)
}
/// A PersistentVolume's class as kube's `GetPersistentVolumeClass` reads it: the beta
/// annotation, then `spec.storageClassName`.
pub(crate) fn pv_class(pv: &PersistentVolume) -> &str {
    pv.metadata
        .annotations
        .get(crate::model::ANNOTATION_BETA_STORAGE_CLASS)
        .map_or(pv.spec.storage_class_name.as_str(), |s| s.as_str())
}

/// kube's `MatchNodeSelectorTerms`: the terms are ORed, a term's requirements ANDed, an empty
/// term matches nothing; `matchFields` reads `metadata.name`.
pub(crate) fn node_selector_matches(sel: &NodeSelector, node: &Node) -> bool {
    sel.node_selector_terms.iter().any(|t| {
        if t.match_expressions.is_empty() && t.match_fields.is_empty() {
            return false;
        }
        t.match_expressions
            .iter()
            .all(|r| r.matches_value(node.metadata.labels.get(&r.key).map(|s| s.as_str())))
            && t.match_fields.iter().all(|r| {
                let v = (r.key == "metadata.name").then_some(node.metadata.name.as_str());
                r.key == "metadata.name" && r.matches_value(v)
            })
    })
}

/// kube's `CheckNodeAffinity(pv, node)`: a PV without required node affinity fits every node.
pub(crate) fn pv_fits_node(pv: &PersistentVolume, node: &Node) -> bool {
    match pv
        .spec
        .node_affinity
        .as_ref()
        .and_then(|a| a.required.as_ref())
    {
        None => true,
        Some(sel) => node_selector_matches(sel, node),
    }
}
