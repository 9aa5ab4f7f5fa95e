//! kube v1.34 `volumezone/volume_zone_test.go`: TestSingleZone, TestMultiZone and
//! TestWithBinding, with their expected PreFilter/Filter outcomes; plus v1.20's differences.

use super::*;
use crate::framework::KubeVersion::{V1_20, V1_34};
use crate::model::{Pod, StorageObjects, VolumeBindingMode};
use crate::plugins::volume::testutil::*;

const BZ: &str = LABEL_FAILURE_DOMAIN_BETA_ZONE;
const BR: &str = LABEL_FAILURE_DOMAIN_BETA_REGION;
const Z: &str = LABEL_TOPOLOGY_ZONE;
const R: &str = LABEL_TOPOLOGY_REGION;

/// What kube's test expects: PreFilter skip, Filter success, or Filter failure.
#[derive(Debug, PartialEq)]
enum Want {
    Skip,
    Pass,
    Fail(Reason),
}

fn outcome(
    storage: &StorageObjects,
    pod: Pod,
    node_labels: &[(&str, &str)],
    v: KubeVersion,
) -> Want {
    let snap = snapshot(vec![node("host1", node_labels)], vec![], storage.clone());
    let (skipped, res) = run(&VolumeZone::new(), &pod, &snap, v);
    match (skipped, res[0]) {
        (true, _) => Want::Skip,
        (false, Ok(())) => Want::Pass,
        (false, Err(r)) => Want::Fail(r),
    }
}

fn single_zone_storage() -> StorageObjects {
    let mut s = StorageObjects::new();
    s.persistent_volumes = vec![
        pv("Vol_1", &[(BZ, "us-west1-a")]),
        pv("Vol_2", &[(BR, "us-west1"), ("uselessLabel", "none")]),
        pv("Vol_3", &[(BR, "us-west1")]),
        pv("Vol_Stable_1", &[(Z, "us-west1-a")]),
        pv("Vol_Stable_2", &[(R, "us-west1"), ("uselessLabel", "none")]),
        pv("Vol_Stable_3", &[(Z, "us-west1-a"), (R, "us-west1-a")]),
    ];
    s.persistent_volume_claims = vec![
        pvc("PVC_1", "Vol_1"),
        pvc("PVC_2", "Vol_2"),
        pvc("PVC_3", "Vol_3"),
        pvc("PVC_4", "Vol_not_exist"),
        pvc("PVC_Stable_1", "Vol_Stable_1"),
        pvc("PVC_Stable_2", "Vol_Stable_2"),
        pvc("PVC_Stable_3", "Vol_Stable_3"),
    ];
    s
}

fn with(claim: &str) -> Pod {
    pod_with_claims("pod_1", &[claim])
}

/// (name, pod, node labels, expected outcome).
type Case<'a> = (&'a str, Pod, Vec<(&'a str, &'a str)>, Want);

const CONFLICT: Want = Want::Fail(Reason::VolumeZoneConflict);

#[test]
fn single_zone() {
    let s = single_zone_storage();
    let useless = ("uselessLabel", "none");
    let cases: Vec<Case> = vec![
        (
            "pod without volume",
            pod_with("pod_1", vec![]),
            vec![(BZ, "us-west1-a")],
            Want::Skip,
        ),
        ("node without labels", with("PVC_1"), vec![], Want::Pass),
        (
            "beta zone label matched",
            with("PVC_1"),
            vec![(BZ, "us-west1-a"), useless],
            Want::Pass,
        ),
        (
            "beta region label matched",
            with("PVC_2"),
            vec![(BR, "us-west1"), useless],
            Want::Pass,
        ),
        (
            "beta region label doesn't match",
            with("PVC_2"),
            vec![(BR, "no_us-west1"), useless],
            CONFLICT,
        ),
        (
            "beta zone label doesn't match",
            with("PVC_1"),
            vec![(BZ, "no_us-west1-a"), useless],
            CONFLICT,
        ),
        (
            "zone label matched",
            with("PVC_Stable_1"),
            vec![(Z, "us-west1-a"), useless],
            Want::Pass,
        ),
        (
            "region label matched",
            with("PVC_Stable_2"),
            vec![(R, "us-west1"), useless],
            Want::Pass,
        ),
        (
            "region label doesn't match",
            with("PVC_Stable_2"),
            vec![(R, "no_us-west1"), useless],
            CONFLICT,
        ),
        (
            "zone label doesn't match",
            with("PVC_Stable_1"),
            vec![(Z, "no_us-west1-a"), useless],
            CONFLICT,
        ),
        (
            "pv with zone and region, node with only zone",
            with("PVC_Stable_3"),
            vec![(Z, "us-west1-a")],
            CONFLICT,
        ),
        (
            "pv with zone,node with beta zone",
            with("PVC_Stable_1"),
            vec![(BZ, "us-west1-a")],
            CONFLICT,
        ),
        (
            "pv with beta label,node with ga label, matched",
            with("PVC_1"),
            vec![(Z, "us-west1-a")],
            Want::Pass,
        ),
        (
            "pv with beta label,node with ga label, don't match",
            with("PVC_1"),
            vec![(Z, "us-west1-b")],
            CONFLICT,
        ),
    ];
    for (name, pod, labels, want) in cases {
        assert_eq!(outcome(&s, pod, &labels, V1_34), want, "{name}");
    }
}

#[test]
fn multi_zone() {
    let mut s = StorageObjects::new();
    s.persistent_volumes = vec![
        pv("Vol_1", &[(BZ, "us-west1-a")]),
        pv("Vol_2", &[(BZ, "us-west1-b"), ("uselessLabel", "none")]),
        pv("Vol_3", &[(BZ, "us-west1-c__us-west1-a")]),
        pv("Vol_Stable_1", &[(Z, "us-west1-a")]),
        pv("Vol_Stable_2", &[(Z, "us-west1-c__us-west1-a")]),
    ];
    s.persistent_volume_claims = vec![
        pvc("PVC_1", "Vol_1"),
        pvc("PVC_2", "Vol_2"),
        pvc("PVC_3", "Vol_3"),
        pvc("PVC_4", "Vol_not_exist"),
        pvc("PVC_Stable_1", "Vol_Stable_1"),
        pvc("PVC_Stable_2", "Vol_Stable_2"),
    ];
    let useless = ("uselessLabel", "none");
    let cases: Vec<Case> = vec![
        ("node without labels", with("PVC_3"), vec![], Want::Pass),
        (
            "beta zone label matched",
            with("PVC_3"),
            vec![(BZ, "us-west1-a"), useless],
            Want::Pass,
        ),
        (
            "beta zone label doesn't match",
            with("PVC_1"),
            vec![(BZ, "us-west1-b"), useless],
            CONFLICT,
        ),
        (
            "zone label matched",
            with("PVC_Stable_2"),
            vec![(Z, "us-west1-a"), useless],
            Want::Pass,
        ),
        (
            "zone label doesn't match",
            with("PVC_Stable_1"),
            vec![(Z, "us-west1-b"), useless],
            CONFLICT,
        ),
    ];
    for (name, pod, labels, want) in cases {
        assert_eq!(outcome(&s, pod, &labels, V1_34), want, "{name}");
    }
}

#[test]
fn with_binding() {
    let mut s = StorageObjects::new();
    s.storage_classes = vec![
        class("Class_Immediate", None),
        class("Class_Wait", Some(VolumeBindingMode::WaitForFirstConsumer)),
    ];
    s.persistent_volumes = vec![pv("Vol_1", &[(BZ, "us-west1-a")])];
    s.persistent_volume_claims = vec![
        pvc("PVC_1", "Vol_1"),
        pvc_of_class("PVC_NoSC", Some("Class_0")),
        pvc_of_class("PVC_EmptySC", None),
        pvc_of_class("PVC_WaitSC", Some("Class_Wait")),
        pvc_of_class("PVC_ImmediateSC", Some("Class_Immediate")),
    ];
    let node_labels = [(BZ, "us-west1-a"), ("uselessLabel", "none")];
    let problem = |p| Want::Fail(Reason::Volume(p));
    let cases = [
        ("label zone failure domain matched", "PVC_1", Want::Pass),
        (
            "unbound volume empty storage class",
            "PVC_EmptySC",
            problem(VolumeProblem::NoVolumeNorClass),
        ),
        (
            "unbound volume no storage class",
            "PVC_NoSC",
            problem(VolumeProblem::StorageClassNotFound),
        ),
        (
            "unbound volume immediate binding mode",
            "PVC_ImmediateSC",
            problem(VolumeProblem::BindingModeNotSet),
        ),
        ("unbound volume wait binding mode", "PVC_WaitSC", Want::Skip),
    ];
    // Kind 5: kube's `wantPreFilterStatus`, a rejection of the whole pod. kube's test reads
    // objects through fake listers whose not-found errors name the plural resource
    // (`storageclasses.storage.k8s.io "Class_0" not found`); kube-scheduler's informer
    // listers, which these texts follow, name the singular one.
    let snap = snapshot(vec![node("host1", &node_labels)], vec![], s.clone());
    let rejected = |claim: &str| rejection(&VolumeZone::new(), &with(claim), &snap, V1_34);
    assert_eq!(
        rejected("PVC_EmptySC"),
        Some((
            Reason::Volume(VolumeProblem::NoVolumeNorClass),
            "PersistentVolumeClaim had no pv name and storageClass name".to_string()
        ))
    );
    assert_eq!(
        rejected("PVC_NoSC").map(|r| r.1),
        Some("storageclass.storage.k8s.io \"Class_0\" not found".to_string())
    );
    assert_eq!(
        rejected("PVC_ImmediateSC").map(|r| r.1),
        Some("VolumeBindingMode not set for StorageClass \"Class_Immediate\"".to_string())
    );
    assert_eq!(rejected("PVC_WaitSC"), None);
    assert_eq!(rejected("PVC_1"), None);
    assert_eq!(
        rejected("PVC_missing").map(|r| r.1),
        Some("persistentvolumeclaim \"PVC_missing\" not found".to_string())
    );
    for (name, claim, want) in cases {
        assert_eq!(
            outcome(&s, with(claim), &node_labels, V1_34),
            want,
            "{name}"
        );
    }
    assert_eq!(
        text(Reason::Volume(VolumeProblem::NoVolumeNorClass), V1_34),
        "PersistentVolumeClaim had no pv name and storageClass name"
    );
    assert_eq!(
        text(Reason::VolumeZoneConflict, V1_34),
        "node(s) had no available volume zone"
    );
}

/// v1.20 compares the same key only, and looks claims up only on labelled nodes.
#[test]
fn v1_20_semantics() {
    let s = single_zone_storage();
    assert_eq!(
        outcome(&s, with("PVC_1"), &[(Z, "us-west1-a")], V1_20),
        CONFLICT
    );
    assert_eq!(
        outcome(&s, with("PVC_1"), &[(BZ, "us-west1-a")], V1_20),
        Want::Pass
    );
    assert_eq!(outcome(&s, with("PVC_4"), &[], V1_20), Want::Pass);
    assert_eq!(
        outcome(&s, with("PVC_4"), &[(BZ, "us-west1-a")], V1_20),
        Want::Fail(Reason::Volume(VolumeProblem::VolumeNotFound))
    );
    assert_eq!(
        outcome(&s, with("PVC_4"), &[], V1_34),
        Want::Fail(Reason::Volume(VolumeProblem::VolumeNotFound))
    );
}

/// kube v1.20's `volumezone/volume_zone_test.go` (NoVolumeZoneConflict): TestSingleZone,
/// TestMultiZone and TestWithBinding, every case. Its Error statuses (an unresolvable claim)
/// are reasons here; a skip counts as a pass (v1.20's Filter returns success).
#[test]
fn v1_20_tables() {
    let pass = |w: Want| if w == Want::Skip { Want::Pass } else { w };
    let useless = ("uselessLabel", "none");
    let mut s = StorageObjects::new();
    s.persistent_volumes = vec![
        pv("Vol_1", &[(BZ, "us-west1-a")]),
        pv("Vol_2", &[(BR, "us-west1"), ("uselessLabel", "none")]),
        pv("Vol_3", &[(BR, "us-west1")]),
        pv("Vol_Stable_1", &[(Z, "us-west1-a")]),
        pv("Vol_Stable_2", &[(R, "us-west1"), ("uselessLabel", "none")]),
    ];
    s.persistent_volume_claims = vec![
        pvc("PVC_1", "Vol_1"),
        pvc("PVC_2", "Vol_2"),
        pvc("PVC_3", "Vol_3"),
        pvc("PVC_4", "Vol_not_exist"),
        pvc("PVC_Stable_1", "Vol_Stable_1"),
        pvc("PVC_Stable_2", "Vol_Stable_2"),
    ];
    let single: Vec<Case> = vec![
        (
            "pod without volume",
            pod_with("pod_1", vec![]),
            vec![(BZ, "us-west1-a")],
            Want::Pass,
        ),
        ("node without labels", with("PVC_1"), vec![], Want::Pass),
        (
            "beta zone label matched",
            with("PVC_1"),
            vec![(BZ, "us-west1-a"), useless],
            Want::Pass,
        ),
        (
            "beta region label matched",
            with("PVC_2"),
            vec![(BR, "us-west1"), useless],
            Want::Pass,
        ),
        (
            "beta region label doesn't match",
            with("PVC_2"),
            vec![(BR, "no_us-west1"), useless],
            CONFLICT,
        ),
        (
            "beta zone label doesn't match",
            with("PVC_1"),
            vec![(BZ, "no_us-west1-a"), useless],
            CONFLICT,
        ),
        (
            "zone label matched",
            with("PVC_Stable_1"),
            vec![(Z, "us-west1-a"), useless],
            Want::Pass,
        ),
        (
            "region label matched",
            with("PVC_Stable_2"),
            vec![(R, "us-west1"), useless],
            Want::Pass,
        ),
        (
            "region label doesn't match",
            with("PVC_Stable_2"),
            vec![(R, "no_us-west1"), useless],
            CONFLICT,
        ),
        (
            "zone label doesn't match",
            with("PVC_Stable_1"),
            vec![(Z, "no_us-west1-a"), useless],
            CONFLICT,
        ),
    ];
    for (name, pod, labels, want) in single {
        assert_eq!(
            pass(outcome(&s, pod, &labels, V1_20)),
            want,
            "single zone: {name}"
        );
    }
    s.persistent_volumes = vec![
        pv("Vol_1", &[(BZ, "us-west1-a")]),
        pv("Vol_2", &[(BZ, "us-west1-b"), ("uselessLabel", "none")]),
        pv("Vol_3", &[(BZ, "us-west1-c__us-west1-a")]),
        pv("Vol_Stable_1", &[(Z, "us-west1-a")]),
        pv("Vol_Stable_2", &[(Z, "us-west1-c__us-west1-a")]),
    ];
    let multi: Vec<Case> = vec![
        ("node without labels", with("PVC_3"), vec![], Want::Pass),
        (
            "beta zone label matched",
            with("PVC_3"),
            vec![(BZ, "us-west1-a"), useless],
            Want::Pass,
        ),
        (
            "beta zone label doesn't match",
            with("PVC_1"),
            vec![(BZ, "us-west1-b"), useless],
            CONFLICT,
        ),
        (
            "zone label matched",
            with("PVC_Stable_2"),
            vec![(Z, "us-west1-a"), useless],
            Want::Pass,
        ),
        (
            "zone label doesn't match",
            with("PVC_Stable_1"),
            vec![(Z, "us-west1-b"), useless],
            CONFLICT,
        ),
    ];
    for (name, pod, labels, want) in multi {
        assert_eq!(
            pass(outcome(&s, pod, &labels, V1_20)),
            want,
            "multi zone: {name}"
        );
    }
    let mut b = StorageObjects::new();
    b.storage_classes = vec![
        class("Class_Immediate", None),
        class("Class_Wait", Some(VolumeBindingMode::WaitForFirstConsumer)),
    ];
    b.persistent_volumes = vec![pv("Vol_1", &[(BZ, "us-west1-a")])];
    b.persistent_volume_claims = vec![
        pvc("PVC_1", "Vol_1"),
        pvc_of_class("PVC_NoSC", Some("Class_0")),
        pvc_of_class("PVC_EmptySC", None),
        pvc_of_class("PVC_WaitSC", Some("Class_Wait")),
        pvc_of_class("PVC_ImmediateSC", Some("Class_Immediate")),
    ];
    let node_labels = [(BZ, "us-west1-a"), useless];
    let problem = |p| Want::Fail(Reason::Volume(p));
    let binding = [
        ("label zone failure domain matched", "PVC_1", Want::Pass),
        (
            "unbound volume empty storage class",
            "PVC_EmptySC",
            problem(VolumeProblem::NoVolumeNorClass),
        ),
        (
            "unbound volume no storage class",
            "PVC_NoSC",
            problem(VolumeProblem::StorageClassNotFound),
        ),
        (
            "unbound volume immediate binding mode",
            "PVC_ImmediateSC",
            problem(VolumeProblem::BindingModeNotSet),
        ),
        ("unbound volume wait binding mode", "PVC_WaitSC", Want::Pass),
    ];
    for (name, claim, want) in binding {
        assert_eq!(
            pass(outcome(&b, with(claim), &node_labels, V1_20)),
            want,
            "with binding: {name}"
        );
    }
}
