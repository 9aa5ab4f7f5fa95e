//! VolumeRestrictions (kube v1.34): NoDiskConflict's disk conflicts plus ReadWriteOncePod.

use crate::framework::{CycleContext, PluginError, Predicate, Prepared, Reason, VolumeProblem};
use crate::model::AccessMode;
use crate::plugins::node::{DiskState, NoDiskConflict};
use crate::snapshot::NodeRef;

/// kube v1.34's `VolumeRestrictions` filter. No argument.
///
/// The disk conflicts of [`NoDiskConflict`] ("node(s) had no available disk"), and
/// ReadWriteOncePod: when a `persistentVolumeClaim` volume of the pod names a claim with the
/// `ReadWriteOncePod` access mode that a pod in the snapshot (on any node) already uses, every
/// node fails with "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod
/// access mode already in-use by another pod". A claim of the pod that does not exist rejects
/// every node.
/// Pods without GCE PD, EBS, RBD or iSCSI volumes and without such a conflict skip it.
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

/// Per-pod state: the disk state, or the reason every node fails.
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
                return Ok(Prepared::Run(RestrictionsState {
                    disks: None,
                    reject: Some(Reason::Volume(VolumeProblem::ClaimNotFound)),
                }));
            };
            if pvc
                .spec
                .access_modes
                .contains(&AccessMode::ReadWriteOncePod)
            {
                rwop.push(c.claim_name.as_str());
            }
        }
        if !rwop.is_empty() {
            let used = cx.snapshot().node_infos().iter().any(|info| {
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
            if used {
                return Ok(Prepared::Run(RestrictionsState {
                    disks: None,
                    reject: Some(Reason::ReadWriteOncePodConflict),
                }));
            }
        }
        let disks = match self.disks.prepare(cx)? {
            Prepared::Run(d) => d,
            _ => return Ok(Prepared::Skip),
        };
        Ok(Prepared::Run(RestrictionsState {
            disks: Some(disks),
            reject: None,
        }))
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        st: &RestrictionsState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        if let Some(r) = st.reject {
            return Err(r);
        }
        match &st.disks {
            Some(d) => self.disks.filter(cx, d, node),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
#[path = "restrictions_tests.rs"]
mod tests;
