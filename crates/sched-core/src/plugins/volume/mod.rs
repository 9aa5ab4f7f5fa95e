//! kube-scheduler's volume plugins over the snapshot's storage objects
//! ([`crate::snapshot::Snapshot::set_storage`]): [`VolumeZone`] (NoVolumeZoneConflict),
//! [`NodeVolumeLimits`] (MaxCSIVolumeCount) and the legacy in-tree counts
//! ([`InTreeVolumeLimits`]: MaxEBSVolumeCount, MaxGCEPDVolumeCount, MaxAzureDiskVolumeCount,
//! MaxCinderVolumeCount) and [`VolumeRestrictions`] (disk conflicts and ReadWriteOncePod).
//!
//! Each follows the kube version of the profile it is in ([`crate::framework::KubeVersion`]):
//! v1.20.2 under a legacy Policy, v1.34 under a configuration.

mod limits;
mod restrictions;
mod zone;

#[cfg(test)]
mod testutil;

pub use limits::{InTreeVolumeLimits, NodeVolumeLimits};
pub use restrictions::VolumeRestrictions;
pub use zone::VolumeZone;

use crate::framework::{Reason, VolumeProblem};
use crate::model::{PersistentVolumeClaim, Pod, Volume};
use crate::snapshot::StorageIndex;

/// The claim a pod volume uses: `persistentVolumeClaim.claimName`, or `<pod>-<volume>` for a
/// generic ephemeral volume (the bool). `None` for other volumes.
pub(crate) fn claim_name(pod: &Pod, v: &Volume) -> Option<(String, bool)> {
    if let Some(c) = &v.persistent_volume_claim {
        return Some((c.claim_name.clone(), false));
    }
    if v.ephemeral.is_some() {
        return Some((format!("{}-{}", pod.metadata.name, v.name), true));
    }
    None
}

/// kube's `ephemeral.VolumeIsForPod`: the claim's controller is the pod.
pub(crate) fn owned_by(pvc: &PersistentVolumeClaim, pod: &Pod) -> bool {
    pvc.metadata
        .owner_references
        .iter()
        .any(|o| o.controller == Some(true) && o.uid == pod.metadata.uid)
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
