//! NoDiskConflict: a disk that allows one writer is not mounted twice on a node.

use crate::framework::{CycleContext, PluginError, Predicate, Prepared, Reason};
use crate::model::{Pod, Volume};
use crate::snapshot::NodeRef;
use crate::snapshot::flags;

/// kube's `NoDiskConflict` predicate (framework plugin `VolumeRestrictions`, disk part). No
/// argument.
///
/// The pod conflicts with a pod already on the node when they share a GCE persistent disk
/// (same `pdName`) unless both mount it read-only, an AWS EBS volume (same `volumeID`, even
/// read-only), an iSCSI volume (same `iqn`) unless both are read-only, or a Ceph RBD image
/// (a common monitor, same pool and image) unless both are read-only. An empty RBD pool is
/// the API default `rbd`. Failure: "node(s) had no available disk". Pods without such volumes
/// skip it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NoDiskConflict;

impl NoDiskConflict {
    /// The predicate.
    pub fn new() -> Self {
        NoDiskConflict
    }
}

/// A stand-in for a volume plugin that is not available (`Registry::v1_34()` no longer uses it:
/// the volume plugins are in [`crate::plugins::volume`]): a pod with a
/// PersistentVolumeClaim, generic ephemeral or inline CSI volume gets an explicit
/// [`PluginErrorKind::Unsupported`](crate::framework::PluginErrorKind::Unsupported) error
/// instead of a placement that ignores its volumes; every other pod skips it (as kube's
/// plugins skip pods without such volumes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedVolumesUnsupported {
    name: String,
}

impl ClaimedVolumesUnsupported {
    /// The stand-in for the plugin `name`.
    pub fn new(name: impl Into<String>) -> Self {
        ClaimedVolumesUnsupported { name: name.into() }
    }
}

impl Predicate for ClaimedVolumesUnsupported {
    type State = ();

    fn name(&self) -> &str {
        &self.name
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<()>, PluginError> {
        let claimed = cx.pod().spec.volumes.iter().find(|v| {
            v.persistent_volume_claim.is_some() || v.ephemeral.is_some() || v.csi.is_some()
        });
        match claimed {
            None => Ok(Prepared::Skip),
            Some(v) => Err(PluginError::new(
                self.name.clone(),
                crate::framework::PluginErrorKind::Unsupported(format!(
                    "volume {:?} needs PersistentVolumes, claims and CSI drivers, which are not modelled yet",
                    v.name
                )),
            )),
        }
    }

    fn filter(&self, _: &CycleContext<'_>, _: &(), _: NodeRef<'_>) -> Result<(), Reason> {
        Ok(())
    }
}

fn is_disk(v: &Volume) -> bool {
    v.gce_persistent_disk.is_some()
        || v.aws_elastic_block_store.is_some()
        || v.rbd.is_some()
        || v.iscsi.is_some()
}

fn rbd_pool(pool: &str) -> &str {
    if pool.is_empty() { "rbd" } else { pool }
}

fn have_overlap(a: &[String], b: &[String]) -> bool {
    a.iter().any(|x| b.contains(x))
}

/// kube's `isVolumeConflict(volume, existingPod)`.
pub(crate) fn is_volume_conflict(volume: &Volume, existing: &Pod) -> bool {
    existing.spec.volumes.iter().any(|ev| {
        if let (Some(d), Some(e)) = (&volume.gce_persistent_disk, &ev.gce_persistent_disk)
            && d.pd_name == e.pd_name
            && !(d.read_only && e.read_only)
        {
            return true;
        }
        if let (Some(d), Some(e)) = (&volume.aws_elastic_block_store, &ev.aws_elastic_block_store)
            && d.volume_id == e.volume_id
        {
            return true;
        }
        if let (Some(d), Some(e)) = (&volume.iscsi, &ev.iscsi)
            && d.iqn == e.iqn
            && !(d.read_only && e.read_only)
        {
            return true;
        }
        if let (Some(d), Some(e)) = (&volume.rbd, &ev.rbd)
            && have_overlap(&d.monitors, &e.monitors)
            && rbd_pool(&d.pool) == rbd_pool(&e.pool)
            && d.image == e.image
            && !(d.read_only && e.read_only)
        {
            return true;
        }
        false
    })
}

/// Per-pod state: the pod's disk volumes.
#[derive(Debug, Default)]
pub struct DiskState(Vec<Volume>);

impl DiskState {
    fn of(pod: &Pod) -> DiskState {
        DiskState(
            pod.spec
                .volumes
                .iter()
                .filter(|v| is_disk(v))
                .cloned()
                .collect(),
        )
    }

    fn check(&self, node: NodeRef<'_>) -> Result<(), Reason> {
        if self.0.is_empty() || !node.summary().has(flags::DISK_VOLUMES) {
            return Ok(());
        }
        let pods = node.info().pods();
        if self
            .0
            .iter()
            .any(|v| pods.iter().any(|p| is_volume_conflict(v, p.pod())))
        {
            Err(Reason::DiskConflict)
        } else {
            Ok(())
        }
    }
}

impl Predicate for NoDiskConflict {
    type State = DiskState;

    fn name(&self) -> &str {
        "NoDiskConflict"
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<Self::State>, PluginError> {
        let st = DiskState::of(cx.pod());
        if st.0.is_empty() {
            return Ok(Prepared::Skip);
        }
        Ok(Prepared::Run(st))
    }

    fn filter(
        &self,
        _cx: &CycleContext<'_>,
        state: &Self::State,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        {
            let st = state;
            st.check(node)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::model::{AwsElasticBlockStore, GcePersistentDisk, IscsiVolume, RbdVolume};

    fn with_volume(v: Volume) -> Pod {
        let mut p = pod();
        p.spec.volumes = vec![v];
        p
    }

    fn gce(name: &str, read_only: bool) -> Pod {
        with_volume(Volume {
            gce_persistent_disk: Some(GcePersistentDisk {
                pd_name: name.into(),
                read_only,
            }),
            ..Volume::default()
        })
    }

    fn aws(id: &str, read_only: bool) -> Pod {
        with_volume(Volume {
            aws_elastic_block_store: Some(AwsElasticBlockStore {
                volume_id: id.into(),
                read_only,
            }),
            ..Volume::default()
        })
    }

    fn rbd(monitors: &[&str], pool: &str, image: &str, read_only: bool) -> Pod {
        with_volume(Volume {
            rbd: Some(RbdVolume {
                monitors: monitors.iter().map(|s| s.to_string()).collect(),
                pool: pool.into(),
                image: image.into(),
                read_only,
            }),
            ..Volume::default()
        })
    }

    fn iscsi(iqn: &str, read_only: bool) -> Pod {
        with_volume(Volume {
            iscsi: Some(IscsiVolume {
                target_portal: "127.0.0.1:3260".into(),
                iqn: iqn.into(),
                lun: 0,
                read_only,
            }),
            ..Volume::default()
        })
    }

    /// kube's four-case table: nothing, one state, same state, different state.
    fn table(state: Pod, state2: Pod) {
        let p = NoDiskConflict;
        let empty = snapshot(vec![node("n")], vec![]);
        assert_eq!(filter(&p, &pod(), &empty, 0), Ok(()), "nothing");
        let one = snapshot(vec![node("n")], vec![(0, state.clone())]);
        assert_eq!(filter(&p, &pod(), &one, 0), Ok(()), "one state");
        assert_eq!(
            filter(&p, &state, &one, 0),
            Err(Reason::DiskConflict),
            "same state"
        );
        assert_eq!(filter(&p, &state2, &one, 0), Ok(()), "different state");
    }

    // kube: volumerestrictions/volume_restrictions_test.go TestGCEDiskConflicts,
    // TestAWSDiskConflicts, TestRBDDiskConflicts, TestISCSIDiskConflicts.
    #[test]
    fn disk_conflicts() {
        table(gce("foo", false), gce("bar", false));
        table(aws("foo", false), aws("bar", false));
        table(
            rbd(&["a", "b"], "foo", "bar", false),
            rbd(&["c", "d"], "foo", "bar", false),
        );
        table(
            iscsi("iqn.2016-12.server:storage.target01", false),
            iscsi("iqn.2017-12.server:storage.target01", false),
        );
    }

    #[test]
    fn read_only_rules() {
        let p = NoDiskConflict;
        let check = |new: Pod, existing: Pod| {
            let snap = snapshot(vec![node("n")], vec![(0, existing)]);
            filter(&p, &new, &snap, 0)
        };
        assert_eq!(check(gce("foo", true), gce("foo", true)), Ok(()));
        assert_eq!(
            check(gce("foo", true), gce("foo", false)),
            Err(Reason::DiskConflict)
        );
        // EBS conflicts even when both are read-only.
        assert_eq!(
            check(aws("foo", true), aws("foo", true)),
            Err(Reason::DiskConflict)
        );
        assert_eq!(check(iscsi("x", true), iscsi("x", true)), Ok(()));
        assert_eq!(
            check(iscsi("x", false), iscsi("x", true)),
            Err(Reason::DiskConflict)
        );
        assert_eq!(
            check(rbd(&["a"], "p", "i", true), rbd(&["a"], "p", "i", true)),
            Ok(())
        );
        assert_eq!(
            check(
                rbd(&["a", "b"], "p", "i", false),
                rbd(&["b", "c"], "p", "i", true)
            ),
            Err(Reason::DiskConflict)
        );
        assert_eq!(
            check(rbd(&["a"], "p", "i", false), rbd(&["a"], "q", "i", false)),
            Ok(())
        );
        assert_eq!(
            check(rbd(&["a"], "p", "i", false), rbd(&["a"], "p", "j", false)),
            Ok(())
        );
        assert_eq!(
            check(rbd(&["a"], "", "i", false), rbd(&["a"], "rbd", "i", false)),
            Err(Reason::DiskConflict)
        );
        // Different kinds never conflict.
        assert_eq!(check(gce("foo", false), aws("foo", false)), Ok(()));
        let snap = snapshot(vec![node("n")], vec![]);
        assert!(skips(&p, &pod(), &snap));
        assert_eq!(
            messages(Reason::DiskConflict, &pod(), &snap, 0),
            vec!["node(s) had no available disk"]
        );
    }
}
