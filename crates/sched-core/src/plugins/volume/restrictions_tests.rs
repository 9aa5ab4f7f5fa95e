//! kube v1.34 `volumerestrictions/volume_restrictions_test.go` TestAccessModeConflicts; the
//! disk conflict tables are NoDiskConflict's (`plugins::node::volumes`), checked here once
//! through this plugin.

use super::*;
use crate::framework::KubeVersion::V1_34;
use crate::model::{GcePersistentDisk, Pod, StorageObjects, Volume};
use crate::plugins::volume::testutil::*;

fn rwx_pvc(name: &str, mode: AccessMode) -> crate::model::PersistentVolumeClaim {
    let mut c = pvc(name, "");
    c.spec.access_modes = vec![mode];
    c
}

/// None: PreFilter skips; else the node's outcome.
fn outcome(
    pod: &Pod,
    existing: Vec<Pod>,
    pvcs: Vec<crate::model::PersistentVolumeClaim>,
) -> Option<Result<(), Reason>> {
    let mut s = StorageObjects::new();
    s.persistent_volume_claims = pvcs;
    let snap = snapshot(
        vec![node("node-1", &[])],
        existing.into_iter().map(|p| (0, p)).collect(),
        s,
    );
    let (skipped, res) = run(&VolumeRestrictions::new(), pod, &snap, V1_34);
    (!skipped).then(|| res[0])
}

#[test]
fn access_mode_conflicts() {
    let one = pod_with_claims("pod-with-one-pvc", &["claim-with-rwop-1"]);
    let two = pod_with_claims(
        "pod-with-two-pvcs",
        &["claim-with-rwop-1", "claim-with-rwop-2"],
    );
    let one_conflict = pod_with_claims("pod-with-one-conflict", &["claim-with-rwop-1"]);
    let two_conflicts = pod_with_claims(
        "pod-with-two-conflicts",
        &["claim-with-rwop-1", "claim-with-rwop-2"],
    );
    let rwx = pod_with_claims("pod-with-rwx", &["claim-with-rwx"]);
    let rwop1 = rwx_pvc("claim-with-rwop-1", AccessMode::ReadWriteOncePod);
    let rwop2 = rwx_pvc("claim-with-rwop-2", AccessMode::ReadWriteOncePod);
    let rwx_claim = rwx_pvc("claim-with-rwx", AccessMode::ReadWriteMany);

    assert_eq!(
        outcome(&pod_with("p", vec![]), vec![], vec![]),
        None,
        "nothing"
    );
    assert_eq!(
        outcome(&one, vec![], vec![]),
        Some(Err(Reason::Volume(VolumeProblem::ClaimNotFound))),
        "failed to get PVC"
    );
    // Kind 5: a PreFilter rejection of the whole pod, naming the claim.
    let snap = snapshot(vec![node("node-1", &[])], vec![], StorageObjects::new());
    assert_eq!(
        rejection(&VolumeRestrictions::new(), &one, &snap, V1_34),
        Some((
            Reason::Volume(VolumeProblem::ClaimNotFound),
            "persistentvolumeclaim \"claim-with-rwop-1\" not found".to_string()
        )),
        "failed to get PVC"
    );
    assert_eq!(
        outcome(
            &one,
            vec![rwx.clone()],
            vec![rwop1.clone(), rwx_claim.clone()]
        ),
        None,
        "no access mode conflict"
    );
    assert_eq!(
        outcome(
            &one_conflict,
            vec![one.clone(), rwx.clone()],
            vec![rwop1.clone(), rwx_claim.clone()]
        ),
        Some(Err(Reason::ReadWriteOncePodConflict)),
        "access mode conflict, unschedulable"
    );
    assert_eq!(
        outcome(
            &two_conflicts,
            vec![two, rwx],
            vec![rwop1, rwop2, rwx_claim]
        ),
        Some(Err(Reason::ReadWriteOncePodConflict)),
        "two conflicts, unschedulable"
    );
    // Kind 4: v1.34's wording (volume_restrictions.go's ErrReasonReadWriteOncePodConflict).
    assert_eq!(
        text(Reason::ReadWriteOncePodConflict, V1_34),
        "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode \
         already in-use by another pod"
    );
}

#[test]
fn disk_conflicts_still_apply() {
    let gce = |name: &str| {
        pod_with(
            name,
            vec![Volume {
                gce_persistent_disk: Some(GcePersistentDisk {
                    pd_name: "foo".into(),
                    read_only: false,
                }),
                ..Volume::default()
            }],
        )
    };
    assert_eq!(
        outcome(&gce("new"), vec![gce("old")], vec![]),
        Some(Err(Reason::DiskConflict))
    );
    assert_eq!(outcome(&gce("new"), vec![], vec![]), Some(Ok(())));
}
