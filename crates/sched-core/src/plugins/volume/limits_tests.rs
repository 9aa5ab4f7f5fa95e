//! kube's `nodevolumelimits/csi_test.go` TestCSILimits (every case but the one counting
//! VolumeAttachments, which are not modelled), with its fixtures (`getFakeCSIPVLister`,
//! `getFakeCSIPVCLister`, `getFakeCSIStorageClassLister`, `getNodeWithPodAndVolumeLimits`);
//! plus the legacy in-tree counts' limits.

use super::*;
use crate::framework::KubeVersion::{V1_20, V1_34};
use crate::framework::VolumeProblem;
use crate::model::{
    AwsElasticBlockStore, CsiNodeDriver, CsiPersistentVolumeSource, OwnerReference, StorageObjects,
    VolumeNodeResources,
};
use crate::plugins::volume::testutil::*;

const EBS_CSI: &str = "ebs.csi.aws.com";
const GCE_CSI: &str = "pd.csi.storage.gke.io";
const EBS_INTREE: &str = "kubernetes.io/aws-ebs";
const HOSTPATH: &str = "kubernetes.io/hostpath";
const SC: &str = "csi-sc";

/// `getFakeCSIPVLister`, `getFakeCSIPVCLister` and `getFakeCSIStorageClassLister`.
fn fixtures(drivers: &[&str]) -> StorageObjects {
    let mut s = StorageObjects::new();
    for d in drivers {
        for j in 0..4 {
            let name = format!("csi-{d}-{j}");
            let mut v = pv(&name, &[]);
            match *d {
                EBS_INTREE => {
                    v.spec.aws_elastic_block_store = Some(AwsElasticBlockStore {
                        volume_id: name.clone(),
                        read_only: false,
                    })
                }
                HOSTPATH => {}
                _ => {
                    v.spec.csi = Some(CsiPersistentVolumeSource {
                        driver: d.to_string(),
                        volume_handle: name.clone(),
                        read_only: false,
                    })
                }
            }
            s.persistent_volumes.push(v);
            s.persistent_volume_claims.push(pvc(&name, &name));
        }
    }
    s.persistent_volume_claims
        .push(pvc_of_class("csi-4", Some(SC)));
    s.persistent_volume_claims.push(pvc_of_class("csi-5", None));
    let mut missing = pvc_of_class("csi-6", Some(SC));
    missing.spec.volume_name = "missing-in-action".into();
    s.persistent_volume_claims.push(missing);
    let mut sc = class(SC, None);
    sc.provisioner = drivers[0].to_string();
    s.storage_classes.push(sc);
    s
}

#[derive(Clone, Copy)]
enum LimitSource {
    None,
    CsiNode,
    CsiNodeWithoutLimit,
}

fn csi_node(source: LimitSource, max: i32, drivers: &[&str]) -> Option<CsiNode> {
    let with_limit = match source {
        LimitSource::None => return None,
        LimitSource::CsiNode => true,
        LimitSource::CsiNodeWithoutLimit => false,
    };
    let mut cn = CsiNode::default();
    cn.metadata.name = "node-for-max-pd-test-1".into();
    cn.metadata.annotations =
        labels(&[("storage.alpha.kubernetes.io/migrated-plugins", EBS_INTREE)]);
    cn.spec.drivers = drivers
        .iter()
        .map(|d| CsiNodeDriver {
            name: d.to_string(),
            node_id: format!("node-for-max-pd-test-1-{d}"),
            allocatable: with_limit.then_some(VolumeNodeResources { count: Some(max) }),
            topology_keys: Vec::new(),
        })
        .collect();
    Some(cn)
}

fn claims_pod(claims: &[&str]) -> Pod {
    pod_with_claims("p", claims)
}

fn ephemeral_pod(name: &str, ns: &str, uid: &str, volumes: &[&str]) -> Pod {
    let mut p = pod_with(
        name,
        volumes
            .iter()
            .map(|v| Volume {
                name: v.to_string(),
                ephemeral: Some(Box::default()),
                ..Volume::default()
            })
            .collect(),
    );
    p.metadata.namespace = ns.into();
    p.metadata.uid = uid.into();
    p
}

fn ephemeral_claim(pod: &Pod, volume: &str, owned: bool) -> PersistentVolumeClaim {
    let mut c = pvc_of_class(&format!("{}-{volume}", pod.metadata.name), Some(SC));
    c.metadata.namespace = pod.metadata.namespace.clone();
    if owned {
        c.metadata.owner_references = vec![OwnerReference {
            kind: "Pod".into(),
            name: pod.metadata.name.clone(),
            uid: pod.metadata.uid.clone(),
            controller: Some(true),
            ..OwnerReference::default()
        }];
    }
    c
}

fn inline_ebs(id: &str) -> Volume {
    Volume {
        aws_elastic_block_store: Some(AwsElasticBlockStore {
            volume_id: id.into(),
            read_only: false,
        }),
        ..Volume::default()
    }
}

struct Case {
    test: &'static str,
    new_pod: Pod,
    existing: Vec<Pod>,
    extra_claims: Vec<PersistentVolumeClaim>,
    max: i32,
    drivers: Vec<&'static str>,
    source: LimitSource,
    /// None: PreFilter skips; Some(Ok) fits; Some(Err) fails.
    want: Option<Result<(), Reason>>,
}

fn check(c: Case, version: KubeVersion) {
    let mut storage = fixtures(&c.drivers);
    storage.persistent_volume_claims.extend(c.extra_claims);
    if let Some(cn) = csi_node(c.source, c.max, &c.drivers) {
        storage.csi_nodes.push(cn);
    }
    let existing: Vec<(usize, Pod)> = c
        .existing
        .into_iter()
        .enumerate()
        .map(|(i, mut p)| {
            p.metadata.name = format!("existing-{i}-{}", p.metadata.name);
            // Ephemeral claims are named after the pod: keep their names.
            if p.spec.volumes.iter().any(|v| v.ephemeral.is_some()) {
                p.metadata.name = p.metadata.name.rsplit('-').next().unwrap().to_string();
            }
            (0, p)
        })
        .collect();
    let snap = snapshot(vec![node("node-for-max-pd-test-1", &[])], existing, storage);
    let (skipped, res) = run(&NodeVolumeLimits::new(), &c.new_pod, &snap, version);
    let got = if skipped { None } else { Some(res[0]) };
    assert_eq!(got, c.want, "{}", c.test);
}

const FAIL: Option<Result<(), Reason>> = Some(Err(Reason::MaxVolumeCount));
const FITS: Option<Result<(), Reason>> = Some(Ok(()));

#[test]
fn csi_limits() {
    let running = claims_pod(&["csi-ebs.csi.aws.com-3"]);
    let pending = claims_pod(&["csi-4"]);
    let unbound2 = claims_pod(&["csi-4"]);
    let missing_pv = claims_pod(&["csi-6"]);
    let no_sc = claims_pod(&["csi-5"]);
    let gce_two = claims_pod(&["csi-pd.csi.storage.gke.io-1", "csi-pd.csi.storage.gke.io-2"]);
    let in_tree_one = claims_pod(&["csi-kubernetes.io/aws-ebs-0"]);
    let in_tree_two = claims_pod(&["csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2"]);
    let csi_one = claims_pod(&["csi-ebs.csi.aws.com-0"]);
    let csi_two = claims_pod(&["csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2"]);
    let hostpath_one = claims_pod(&["csi-kubernetes.io/hostpath-0"]);
    let eph = ephemeral_pod("abc", "test", "12345", &["xyz"]);
    let eph_claim = ephemeral_claim(&eph, "xyz", true);
    let conflicting = ephemeral_claim(&eph, "xyz", false);
    let eph_two = ephemeral_pod("abc", "test", "12345II", &["x", "y"]);
    let eph_x = ephemeral_claim(&eph_two, "x", true);
    let eph_y = ephemeral_claim(&eph_two, "y", true);
    let inline = pod_with("p", vec![inline_ebs("aws-inline1")]);
    let inline_same_id = pod_with("p", vec![inline_ebs("csi-ebs.csi.aws.com-1")]);
    let config = Volume {
        name: "configmap".into(),
        ..Volume::default()
    };
    let secret = Volume {
        name: "secret".into(),
        ..Volume::default()
    };
    let only_config = pod_with("p", vec![config.clone(), secret.clone()]);
    let pvc_with_config = pod_with(
        "p",
        vec![
            config.clone(),
            secret.clone(),
            pvc_volume("v", "csi-ebs.csi.aws.com-0"),
        ],
    );
    let mut eph_with_config = ephemeral_pod("abc", "test", "", &["xyz"]);
    eph_with_config.spec.volumes.insert(0, secret.clone());
    eph_with_config.spec.volumes.insert(0, config.clone());
    let inline_with_config = pod_with("p", vec![config, secret, inline_ebs("aws-inline1")]);

    use LimitSource::*;
    let ebs = vec![EBS_CSI];
    let migr = vec![EBS_INTREE, EBS_CSI];
    let case = |test,
                new_pod: &Pod,
                existing: Vec<&Pod>,
                max,
                drivers: &Vec<&'static str>,
                source,
                want| Case {
        test,
        new_pod: new_pod.clone(),
        existing: existing.into_iter().cloned().collect(),
        extra_claims: Vec::new(),
        max,
        drivers: drivers.clone(),
        source,
        want,
    };
    let cases = vec![
        case(
            "should schedule pod when VolumeAttachments count does not exceed limit",
            &csi_one,
            vec![],
            2,
            &ebs,
            CsiNode,
            FITS,
        ),
        case(
            "fits when node volume limit >= new pods CSI volume",
            &csi_one,
            vec![&running, &csi_two],
            4,
            &ebs,
            CsiNode,
            FITS,
        ),
        case(
            "doesn't when node volume limit <= pods CSI volume",
            &csi_one,
            vec![&running, &csi_two],
            2,
            &ebs,
            CsiNode,
            FAIL,
        ),
        case(
            "should when driver does not support volume limits",
            &csi_one,
            vec![&running, &csi_two],
            2,
            &ebs,
            CsiNodeWithoutLimit,
            FITS,
        ),
        case(
            "count pending PVCs towards volume limit <= pods CSI volume",
            &csi_one,
            vec![&pending, &csi_two],
            2,
            &ebs,
            CsiNode,
            FAIL,
        ),
        case(
            "count multiple pending pvcs towards volume limit >= pods CSI volume",
            &csi_one,
            vec![&pending, &unbound2, &csi_two],
            4,
            &ebs,
            CsiNode,
            FITS,
        ),
        case(
            "should count PVCs with invalid PV name but valid SC",
            &csi_one,
            vec![&missing_pv, &csi_two],
            2,
            &ebs,
            CsiNode,
            FAIL,
        ),
        case(
            "don't count pvcs with missing SC towards volume limit",
            &csi_one,
            vec![&running, &no_sc],
            2,
            &ebs,
            CsiNode,
            FITS,
        ),
        case(
            "count pvcs with the same type towards volume limit",
            &csi_one,
            vec![&gce_two, &csi_two],
            2,
            &vec![EBS_CSI, GCE_CSI],
            CsiNode,
            FAIL,
        ),
        case(
            "don't count pvcs with different type towards volume limit",
            &gce_two,
            vec![&csi_two, &running],
            2,
            &vec![EBS_CSI, GCE_CSI],
            CsiNode,
            FITS,
        ),
        case(
            "should count in-tree volumes if migration is enabled",
            &in_tree_one,
            vec![&in_tree_two],
            2,
            &migr,
            CsiNode,
            FAIL,
        ),
        case(
            "nil csi node",
            &inline,
            vec![&in_tree_two],
            0,
            &migr,
            None,
            FITS,
        ),
        case(
            "should count unbound in-tree volumes if migration is enabled",
            &pending,
            vec![&in_tree_two],
            2,
            &migr,
            CsiNode,
            FAIL,
        ),
        case(
            "should not limit pod if volume used does not report limits",
            &in_tree_one,
            vec![&in_tree_two],
            2,
            &migr,
            CsiNodeWithoutLimit,
            FITS,
        ),
        case(
            "should not count non-migratable in-tree volumes",
            &hostpath_one,
            vec![&csi_two],
            2,
            &vec![HOSTPATH, EBS_CSI],
            CsiNode,
            FITS,
        ),
        case(
            "should count in-tree inline volumes if migration is enabled",
            &inline,
            vec![&in_tree_two],
            2,
            &migr,
            CsiNode,
            FAIL,
        ),
        case(
            "should count in-tree and csi volumes if migration is enabled (when scheduling in-tree volumes)",
            &in_tree_one,
            vec![&csi_two],
            2,
            &migr,
            CsiNode,
            FAIL,
        ),
        case(
            "should count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
            &inline,
            vec![&csi_two, &in_tree_one],
            3,
            &migr,
            CsiNode,
            FAIL,
        ),
        case(
            "should not count in-tree, inline and csi volumes if migration is enabled (when scheduling in-tree volumes)",
            &inline_same_id,
            vec![&csi_two, &in_tree_one],
            3,
            &migr,
            CsiNode,
            FITS,
        ),
        case(
            "should count in-tree and csi volumes if migration is enabled (when scheduling csi volumes)",
            &csi_one,
            vec![&in_tree_two],
            2,
            &migr,
            CsiNode,
            FAIL,
        ),
        case(
            "ephemeral volume missing",
            &eph,
            vec![],
            0,
            &ebs,
            CsiNodeWithoutLimit,
            Some(Err(Reason::Volume(VolumeProblem::ClaimNotFound))),
        ),
        Case {
            extra_claims: vec![conflicting],
            ..case(
                "ephemeral volume not owned",
                &eph,
                vec![],
                0,
                &ebs,
                CsiNodeWithoutLimit,
                Some(Err(Reason::Volume(VolumeProblem::ClaimNotOwnedByPod))),
            )
        },
        Case {
            extra_claims: vec![eph_claim.clone()],
            ..case(
                "ephemeral volume unbound",
                &eph,
                vec![],
                0,
                &ebs,
                CsiNodeWithoutLimit,
                FITS,
            )
        },
        Case {
            extra_claims: vec![eph_claim.clone()],
            ..case(
                "ephemeral doesn't when node volume limit <= pods CSI volume",
                &eph,
                vec![&running, &csi_two],
                2,
                &ebs,
                CsiNode,
                FAIL,
            )
        },
        Case {
            extra_claims: vec![eph_x, eph_y],
            ..case(
                "ephemeral doesn't when node volume limit <= pods ephemeral CSI volume",
                &csi_one,
                vec![&running, &eph_two],
                2,
                &ebs,
                CsiNode,
                FAIL,
            )
        },
        Case {
            extra_claims: vec![eph_claim.clone()],
            ..case(
                "persistent doesn't when node volume limit <= pods ephemeral CSI volume + persistent volume",
                &csi_one,
                vec![&running, &eph, &csi_two],
                3,
                &ebs,
                CsiNode,
                FAIL,
            )
        },
        Case {
            extra_claims: vec![eph_claim.clone()],
            ..case(
                "persistent okay when node volume limit > pods ephemeral CSI volume + persistent volume",
                &csi_one,
                vec![&running, &eph, &csi_two],
                5,
                &ebs,
                CsiNode,
                FITS,
            )
        },
        case(
            "skip Filter when the pod only uses secrets and configmaps",
            &only_config,
            vec![],
            2,
            &ebs,
            CsiNode,
            Option::None,
        ),
        case(
            "don't skip Filter when the pod has pvcs",
            &pvc_with_config,
            vec![],
            2,
            &ebs,
            CsiNode,
            FITS,
        ),
        case(
            "don't skip Filter when the pod has ephemeral volumes",
            &eph_with_config,
            vec![],
            0,
            &ebs,
            CsiNodeWithoutLimit,
            Some(Err(Reason::Volume(VolumeProblem::ClaimNotFound))),
        ),
        case(
            "don't skip Filter when the pod has inline migratable volumes",
            &inline_with_config,
            vec![&in_tree_two],
            2,
            &migr,
            CsiNode,
            FAIL,
        ),
    ];
    for c in cases {
        check(c, V1_34);
    }
    assert_eq!(
        text(Reason::MaxVolumeCount, V1_34),
        "node(s) exceed max volume count"
    );
}

/// v1.20 counts claims only and migrates nothing: in-tree volumes are the in-tree
/// predicates' business, and a missing claim is not counted.
#[test]
fn csi_limits_v1_20() {
    let in_tree_one = claims_pod(&["csi-kubernetes.io/aws-ebs-0"]);
    let in_tree_two = claims_pod(&["csi-kubernetes.io/aws-ebs-1", "csi-kubernetes.io/aws-ebs-2"]);
    let csi_one = claims_pod(&["csi-ebs.csi.aws.com-0"]);
    let csi_two = claims_pod(&["csi-ebs.csi.aws.com-1", "csi-ebs.csi.aws.com-2"]);
    let mk =
        |test, new_pod: &Pod, existing: Vec<&Pod>, max, drivers: Vec<&'static str>, want| Case {
            test,
            new_pod: new_pod.clone(),
            existing: existing.into_iter().cloned().collect(),
            extra_claims: Vec::new(),
            max,
            drivers,
            source: LimitSource::CsiNode,
            want,
        };
    check(
        mk(
            "csi over the limit",
            &csi_one,
            vec![&csi_two],
            2,
            vec![EBS_CSI],
            FAIL,
        ),
        V1_20,
    );
    check(
        mk(
            "in-tree not migrated",
            &in_tree_one,
            vec![&in_tree_two],
            2,
            vec![EBS_INTREE, EBS_CSI],
            FITS,
        ),
        V1_20,
    );
    check(
        mk(
            "in-tree existing not counted",
            &csi_one,
            vec![&in_tree_two],
            1,
            vec![EBS_INTREE, EBS_CSI],
            FITS,
        ),
        V1_20,
    );
    check(
        mk(
            "missing claim skipped",
            &claims_pod(&["nope"]),
            vec![],
            1,
            vec![EBS_CSI],
            FITS,
        ),
        V1_20,
    );
}

fn in_tree_case(
    p: &InTreeVolumeLimits,
    new_ids: &[&str],
    existing_ids: &[&str],
    node_labels: &[(&str, &str)],
) -> Result<(), Reason> {
    let existing = pod_with("e", existing_ids.iter().map(|id| inline_ebs(id)).collect());
    let new = pod_with("p", new_ids.iter().map(|id| inline_ebs(id)).collect());
    let snap = snapshot(
        vec![node("n", node_labels)],
        vec![(0, existing)],
        StorageObjects::new(),
    );
    run(p, &new, &snap, V1_20).1[0]
}

/// kube v1.20 `non_csi_test.go`'s limits: the defaults (EBS 39, 25 on Nitro types), the
/// override, allocatable, and unique ids.
#[test]
fn in_tree_limits() {
    let ids: Vec<String> = (0..39).map(|i| format!("vol-{i}")).collect();
    let ids: Vec<&str> = ids.iter().map(|s| s.as_str()).collect();
    let ebs = InTreeVolumeLimits::ebs();
    assert_eq!(in_tree_case(&ebs, &["new"], &ids[..38], &[]), Ok(()));
    assert_eq!(
        in_tree_case(&ebs, &["new"], &ids, &[]),
        Err(Reason::MaxVolumeCount)
    );
    // The same volume again adds nothing.
    assert_eq!(in_tree_case(&ebs, &["vol-0"], &ids, &[]), Ok(()));
    let nitro = [("node.kubernetes.io/instance-type", "m5.large")];
    assert_eq!(in_tree_case(&ebs, &["new"], &ids[..24], &nitro), Ok(()));
    assert_eq!(
        in_tree_case(&ebs, &["new"], &ids[..25], &nitro),
        Err(Reason::MaxVolumeCount)
    );
    let t3 = [("beta.kubernetes.io/instance-type", "t3.medium")];
    assert_eq!(
        in_tree_case(&ebs, &["new"], &ids[..25], &t3),
        Err(Reason::MaxVolumeCount)
    );
    let small = InTreeVolumeLimits::ebs().with_max_volumes(2);
    assert_eq!(in_tree_case(&small, &["a"], &["b"], &[]), Ok(()));
    assert_eq!(
        in_tree_case(&small, &["a", "c"], &["b"], &[]),
        Err(Reason::MaxVolumeCount)
    );
    // Other kinds do not count EBS volumes.
    let gce = InTreeVolumeLimits::gce_pd().with_max_volumes(1);
    assert_eq!(in_tree_case(&gce, &["a", "c"], &["b"], &[]), Ok(()));
    // Allocatable wins over the default.
    let mut n = node("n", &[]);
    n.status
        .allocatable
        .insert("attachable-volumes-aws-ebs".into(), storage_quantity("1"));
    let existing = pod_with("e", vec![inline_ebs("b")]);
    let snap = snapshot(vec![n], vec![(0, existing)], StorageObjects::new());
    let new = pod_with("p", vec![inline_ebs("a")]);
    assert_eq!(
        run(&ebs, &new, &snap, V1_20).1[0],
        Err(Reason::MaxVolumeCount)
    );
}

/// kube's legacy `nodevolumelimits/ebs_test.go` TestEBSLimits (the era's `MaxEBSVolumeCount`),
/// every case, with its fixtures (`getFakePVCLister`, `getFakePVLister`, a StorageClass "EBS"
/// provisioned by `kubernetes.io/aws-ebs`, the node's limit in its allocatable).
#[test]
fn ebs_limits() {
    let ebs = |ids: &[&str]| pod_with("p", ids.iter().map(|id| inline_ebs(id)).collect());
    let host_path = || Volume {
        name: "host".into(),
        ..Volume::default()
    };
    let claims = |names: &[&str]| {
        let mut p = pod_with_claims("p", names);
        p.metadata.namespace = String::new();
        p
    };
    let one_vol = ebs(&["ovp"]);
    let two_vol = ebs(&["tvp1", "tvp2"]);
    let split_vols = pod_with("p", vec![host_path(), inline_ebs("svp")]);
    let non_applicable = pod_with("p", vec![host_path()]);
    let empty = pod_with("p", vec![]);
    let one_pvc = claims(&["someEBSVol"]);
    let split_pvc = claims(&["someNonEBSVol", "someEBSVol"]);
    let deleted_pvc = claims(&["deletedPVC"]);
    let two_deleted_pvc = claims(&["deletedPVC", "anotherDeletedPVC"]);
    let deleted_pv = claims(&["pvcWithDeletedPV"]);
    let another_deleted_pv = claims(&["anotherPVCWithDeletedPV"]);
    let unbound = claims(&["unboundPVC"]);
    let another_unbound = claims(&["anotherUnboundPVC"]);
    let invalid_sc = claims(&["unboundPVCwithInvalidSCPod"]);
    let default_sc = claims(&["unboundPVCwithDefaultSCPod"]);

    let mut storage = StorageObjects::new();
    let claim = |name: &str, volume: &str, class: &str| {
        let mut c = pvc(name, volume);
        c.metadata.namespace = String::new();
        c.spec.storage_class_name = Some(class.to_string());
        c
    };
    storage.persistent_volume_claims = vec![
        claim("someEBSVol", "someEBSVol", "EBS"),
        claim("someNonEBSVol", "someNonEBSVol", "EBS"),
        claim("pvcWithDeletedPV", "pvcWithDeletedPV", "EBS"),
        claim("anotherPVCWithDeletedPV", "anotherPVCWithDeletedPV", "EBS"),
        claim("unboundPVC", "", "EBS"),
        claim("anotherUnboundPVC", "", "EBS"),
        claim("unboundPVCwithDefaultSCPod", "", "standard-sc"),
        claim("unboundPVCwithInvalidSCPod", "", "invalid-sc"),
    ];
    let mut ebs_pv = pv("someEBSVol", &[]);
    ebs_pv.spec.aws_elastic_block_store = Some(AwsElasticBlockStore {
        volume_id: "ebsVol".into(),
        read_only: false,
    });
    storage.persistent_volumes = vec![ebs_pv, pv("someNonEBSVol", &[])];
    let mut sc = class("EBS", None);
    sc.provisioner = EBS_INTREE.into();
    storage.storage_classes = vec![sc];

    let cases: Vec<(&str, &Pod, Vec<&Pod>, i64, bool)> = vec![
        (
            "fits when node capacity >= new pod's EBS volumes",
            &one_vol,
            vec![&two_vol, &one_vol],
            4,
            true,
        ),
        (
            "doesn't fit when node capacity < new pod's EBS volumes",
            &two_vol,
            vec![&one_vol],
            2,
            false,
        ),
        (
            "new pod's count ignores non-EBS volumes",
            &split_vols,
            vec![&two_vol],
            3,
            true,
        ),
        (
            "existing pods' counts ignore non-EBS volumes",
            &two_vol,
            vec![&split_vols, &non_applicable, &empty],
            3,
            true,
        ),
        (
            "new pod's count considers PVCs backed by EBS volumes",
            &one_pvc,
            vec![&split_vols, &non_applicable, &empty],
            3,
            true,
        ),
        (
            "new pod's count ignores PVCs not backed by EBS volumes",
            &split_pvc,
            vec![&split_vols, &one_vol],
            3,
            true,
        ),
        (
            "existing pods' counts considers PVCs backed by EBS volumes",
            &two_vol,
            vec![&one_vol, &one_pvc],
            3,
            false,
        ),
        (
            "already-mounted EBS volumes are always ok to allow",
            &two_vol,
            vec![&one_vol, &two_vol, &one_pvc],
            4,
            true,
        ),
        (
            "the same EBS volumes are not counted multiple times",
            &split_vols,
            vec![&one_vol, &one_vol, &one_pvc],
            3,
            true,
        ),
        (
            "missing PVC is not counted towards the PV limit (1)",
            &one_pvc,
            vec![&one_vol, &deleted_pvc],
            1,
            false,
        ),
        (
            "missing PVC is not counted towards the PV limit (2)",
            &one_pvc,
            vec![&one_vol, &deleted_pvc],
            2,
            true,
        ),
        (
            "two missing PVCs are not counted towards the PV limit twice",
            &one_pvc,
            vec![&one_vol, &two_deleted_pvc],
            2,
            true,
        ),
        (
            "unbound PVC with invalid SC is not counted towards the PV limit",
            &invalid_sc,
            vec![&one_vol],
            1,
            true,
        ),
        (
            "unbound PVC from different provisioner is not counted towards the PV limit",
            &default_sc,
            vec![&one_vol],
            1,
            true,
        ),
        (
            "pod with missing PV is counted towards the PV limit (2)",
            &one_pvc,
            vec![&one_vol, &deleted_pv],
            2,
            false,
        ),
        (
            "pod with missing PV is counted towards the PV limit (3)",
            &one_pvc,
            vec![&one_vol, &deleted_pv],
            3,
            true,
        ),
        (
            "two pods missing the same PV are counted towards the PV limit only once",
            &deleted_pv,
            vec![&one_vol, &deleted_pv],
            2,
            true,
        ),
        (
            "two pods missing different PVs are counted towards the PV limit twice",
            &another_deleted_pv,
            vec![&one_vol, &deleted_pv],
            2,
            false,
        ),
        (
            "pod with unbound PVC is counted towards the PV limit (2)",
            &one_pvc,
            vec![&one_vol, &unbound],
            2,
            false,
        ),
        (
            "pod with unbound PVC is counted towards the PV limit (3)",
            &one_pvc,
            vec![&one_vol, &unbound],
            3,
            true,
        ),
        (
            "the same unbound PVC in multiple pods is counted towards the PV limit only once",
            &unbound,
            vec![&one_vol, &unbound],
            2,
            true,
        ),
        (
            "two different unbound PVCs are counted towards the PV limit as two volumes",
            &another_unbound,
            vec![&one_vol, &unbound],
            2,
            false,
        ),
    ];
    for (name, new_pod, existing, max, fits) in cases {
        let mut n = node("node-for-max-pd-test-1", &[]);
        n.status.allocatable.insert(
            "attachable-volumes-aws-ebs".into(),
            storage_quantity(&max.to_string()),
        );
        let existing: Vec<(usize, Pod)> = existing
            .into_iter()
            .enumerate()
            .map(|(i, p)| {
                let mut p = p.clone();
                p.metadata.name = format!("existing-{i}");
                (0, p)
            })
            .collect();
        let snap = snapshot(vec![n], existing, storage.clone());
        let got = run(&InTreeVolumeLimits::ebs(), new_pod, &snap, V1_20).1[0];
        let want = if fits {
            Ok(())
        } else {
            Err(Reason::MaxVolumeCount)
        };
        assert_eq!(got, want, "{name}");
    }
}

/// The pod's CSI volumes of `driver` with these handles, as `prepare` keeps them (on a node
/// without a CSINode), fingerprinted by `fp`.
fn new_csi(driver: &str, handles: &[&str], fp: fn(&str) -> u64) -> Vec<NewVolumes> {
    let list: Vec<Attachable> = handles
        .iter()
        .map(|h| Attachable::Csi {
            driver: driver.to_string(),
            handle: h.to_string(),
        })
        .collect();
    new_volumes(&list, None, fp)
}

/// A node's `Attached` with one limited driver and the volumes of these handles attached.
fn attached(driver: &str, limit: i64, handles: &[&str], fp: fn(&str) -> u64) -> Attached {
    let limits = HashMap::from([(driver.to_string(), limit)]);
    let ids = handles
        .iter()
        .map(|h| (format!("{driver}/{h}"), driver.to_string()))
        .collect();
    Attached::new(false, limits, ids, fp)
}

/// Every volume id has the same fingerprint: a volume of the pod whose fingerprint the node
/// has is still counted as new unless the node attaches that very volume.
#[test]
fn csi_limits_exact_under_fingerprint_collisions() {
    let same: fn(&str) -> u64 = |_| 7;
    let node = attached(EBS_CSI, 2, &["a"], same);
    assert_eq!(node.fingerprints.as_slice(), &[7]);
    // "b" shares "a"'s fingerprint but is new: 1 + 1 fits, 1 + 2 does not.
    assert!(!node.exceeds(&new_csi(EBS_CSI, &["b"], same)));
    assert!(node.exceeds(&new_csi(EBS_CSI, &["b", "c"], same)));
    // "a" is attached already: one new volume.
    assert!(!node.exceeds(&new_csi(EBS_CSI, &["a", "b"], same)));
    assert!(node.has(7, &format!("{EBS_CSI}/a")));
    assert!(!node.has(7, &format!("{EBS_CSI}/b")));
    // Another driver is not limited on the node.
    assert!(!node.exceeds(&new_csi(GCE_CSI, &["b", "c", "d"], same)));

    // More ids than kept in place (sorted on the heap, searched), colliding or not.
    let many: Vec<String> = (0..INLINE_IDS + 4).map(|i| format!("v{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let limit = many.len() as i64 + 2;
    for fp in [same, fingerprint as fn(&str) -> u64] {
        let node = attached(EBS_CSI, limit, &many, fp);
        assert!(!node.exceeds(&new_csi(EBS_CSI, &["v0", "v3", "x", "y"], fp)));
        assert!(node.exceeds(&new_csi(EBS_CSI, &["v0", "x", "y", "z"], fp)));
        assert!(!node.exceeds(&new_csi(EBS_CSI, &many, fp)));
    }
    let node = attached(EBS_CSI, limit, &many, fingerprint);
    assert_eq!(node.fingerprints.as_slice().len(), many.len());
    assert!(matches!(node.fingerprints, Few::Heap(_)));
}

/// Driver names longer than kept in place compare whole: one sharing the first
/// `INLINE_NAME` bytes is another driver.
#[test]
fn csi_limits_long_driver_names() {
    let long = format!("{}.example.com", "x".repeat(INLINE_NAME));
    let other = format!("{}.example.org", "x".repeat(INLINE_NAME));
    assert!(matches!(DriverName::new(&long), DriverName::Heap(_)));
    assert_ne!(DriverName::new(&long), DriverName::new(&other));
    let owned: String = EBS_CSI.chars().collect();
    assert_eq!(DriverName::new(EBS_CSI), DriverName::new(&owned));
    // The length is part of the value: a trailing zero byte is not padding.
    assert_ne!(DriverName::new("ebs"), DriverName::new("ebs\0"));
    assert_ne!(DriverName::new(EBS_CSI), DriverName::new(&EBS_CSI[1..]));
    let node = attached(&long, 1, &[], fingerprint);
    assert!(!node.exceeds(&new_csi(&long, &["a"], fingerprint)));
    assert!(node.exceeds(&new_csi(&long, &["a", "b"], fingerprint)));
    assert!(!node.exceeds(&new_csi(&other, &["a", "b"], fingerprint)));
}
