//! VolumeRestrictions (kube v1.34): NoDiskConflict's disk conflicts plus ReadWriteOncePod.

use crate::framework::{
    CycleContext, PluginError, Predicate, Prepared, Reason, Rejection, VolumeProblem,
};
use crate::model::AccessMode;
use crate::plugins::node::{DiskState, NoDiskConflict};
use crate::snapshot::NodeRef;

use super::not_found;

/// kube v1.34's `VolumeRestrictions` filter. No argument.
///
/// The disk conflicts of [`NoDiskConflict`] ("node(s) had no available disk"), and
/// ReadWriteOncePod: when a `persistentVolumeClaim` volume of the pod names a claim with the
/// `ReadWriteOncePod` access mode that a pod in the snapshot (on any node) already uses, every
/// node fails with "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod
/// access mode already in-use by another pod" (after the disk conflicts, as kube checks them).
/// A claim of the pod that does not exist rejects the pod before any node is filtered
/// ([`Prepared::Reject`]): `persistentvolumeclaim "data" not found`. Pods without GCE PD,
/// EBS, RBD or iSCSI volumes and without such a conflict skip it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VolumeRestrictions {
    disks: NoDiskConflict,
}

impl VolumeRestrictions {
    /// The plugin.
    pub fn new() -> Self {
        VolumeRestrictions::default()
    }
}

/// Per-pod state: the disk state, and whether a ReadWriteOncePod claim is in use.
#[derive(Debug, Default)]
pub struct RestrictionsState {
    disks: Option<DiskState>,
    reject: Option<Reason>,
}

impl Predicate for VolumeRestrictions {
    type State = RestrictionsState;

    fn name(&self) -> &str {
        "VolumeRestrictions"
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<RestrictionsState>, PluginError> {
        let pod = cx.pod();
        let storage = cx.snapshot().storage();
        let ns = &pod.metadata.namespace;
        let mut rwop = Vec::new();
        for v in &pod.spec.volumes {
            let Some(c) = &v.persistent_volume_claim else {
                continue;
            };
            let Some(pvc) = storage.pvc(ns, &c.claim_name) else {
                return Ok(Prepared::Reject(Rejection::new(
                    Reason::Volume(VolumeProblem::ClaimNotFound),
                    not_found("persistentvolumeclaim", &c.claim_name),
                )));
            };
            if pvc
                .spec
                .access_modes
                .contains(&AccessMode::ReadWriteOncePod)
            {
                rwop.push(c.claim_name.as_str());
            }
        }
        let used = !rwop.is_empty()
            && cx.snapshot().node_infos().iter().any(|info| {
                info.pods().iter().any(|p| {
                    let p = p.pod();
                    p.metadata.namespace == *ns
                        && p.spec.volumes.iter().any(|v| {
                            v.persistent_volume_claim
                                .as_ref()
                                .is_some_and(|c| rwop.contains(&c.claim_name.as_str()))
                        })
                })
            });
        let disks = match self.disks.prepare(cx)? {
            Prepared::Run(d) => Some(d),
            _ => None,
        };
        if disks.is_none() && !used {
            return Ok(Prepared::Skip);
        }
        Ok(Prepared::Run(RestrictionsState {
            disks,
            reject: used.then_some(Reason::ReadWriteOncePodConflict),
        }))
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        st: &RestrictionsState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        // kube checks the disk conflicts first, then ReadWriteOncePod.
        if let Some(d) = &st.disks {
            self.disks.filter(cx, d, node)?;
        }
        match st.reject {
            Some(r) => Err(r),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "restrictions_tests.rs"]
mod tests;
