//! kube v1.34 `volumebinding/binder_test.go` with kube's objects and expected values:
//! TestFindPodVolumesWithoutProvisioning and TestFindPodVolumesWithProvisioning (each with no
//! CSIDriver, one with capacity tracking and one without), TestAssumePodVolumes,
//! TestRevertAssumedPodVolumes and TestFindAssumeVolumes; and the volume binder of each
//! VolumeBinding, as kube's per-plugin assume caches behave.

use super::*;
use crate::model::{
    CsiDriver, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm,
    OwnerReference, Pod, StorageObjects, TopologySelectorLabelRequirement, Volume,
    VolumeNodeAffinity,
};
use crate::plugins::volume::testutil::{class, node, pvc_volume, snapshot, storage_quantity};

const NS: &str = "testns";
const NODE_KEY: &str = "nodeKey";
const PROVISIONER: &str = "test-provisioner";
const WAIT: &str = "waitClass";
const IMMEDIATE: &str = "immediateClass";
const WAIT_PROVISIONER: &str = "waitClassWithProvisioner";
const TOPO_MISMATCH: &str = "topoMismatchClass";

const BIND: u8 = VolumeBindingConflicts::NO_VOLUME_TO_BIND;
const NODE: u8 = VolumeBindingConflicts::NODE_AFFINITY;
const SPACE: u8 = VolumeBindingConflicts::NOT_ENOUGH_SPACE;
const PV_NOT_EXIST: u8 = VolumeBindingConflicts::BOUND_TO_MISSING_VOLUME;

/// kube's `pvcBoundState`.
#[derive(Clone, Copy, PartialEq, Eq)]
enum State {
    Unbound,
    Prebound,
    Bound,
    SelectedNode,
}

/// kube's `makeTestPVC`: in `testns`, uid `pvc-uid`, `Filesystem`.
fn test_pvc(
    name: &str,
    size: &str,
    node: &str,
    state: State,
    pv: &str,
    class: &str,
) -> PersistentVolumeClaim {
    let mut c = PersistentVolumeClaim::default();
    c.metadata.name = name.into();
    c.metadata.namespace = NS.into();
    c.metadata.uid = "pvc-uid".into();
    c.spec
        .resources
        .requests
        .insert("storage".into(), storage_quantity(size));
    c.spec.storage_class_name = Some(class.into());
    c.spec.volume_mode = "Filesystem".into();
    match state {
        State::SelectedNode => {
            c.metadata
                .annotations
                .insert(ANN_SELECTED_NODE.into(), node.into());
        }
        State::Bound => {
            c.metadata
                .annotations
                .insert(ANN_BIND_COMPLETED.into(), "yes".into());
            c.spec.volume_name = pv.into();
        }
        State::Prebound => c.spec.volume_name = pv.into(),
        State::Unbound => {}
    }
    c
}

/// kube's `makeTestPV`: `Available`, `Filesystem`, on the node (`nodeKey In [node]`) when
/// given, bound to the claim (its `claimRef` and `bound-by-controller`) when given.
fn test_pv(
    name: &str,
    node: &str,
    capacity: &str,
    bound_to: Option<&PersistentVolumeClaim>,
    class: &str,
) -> PersistentVolume {
    let mut v = PersistentVolume::default();
    v.metadata.name = name.into();
    v.spec
        .capacity
        .insert("storage".into(), storage_quantity(capacity));
    v.spec.storage_class_name = class.into();
    v.spec.volume_mode = "Filesystem".into();
    v.status.phase = "Available".into();
    if !node.is_empty() {
        v.spec.node_affinity = Some(VolumeNodeAffinity {
            required: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: vec![NodeSelectorRequirement {
                        key: NODE_KEY.into(),
                        operator: NodeSelectorOperator::In,
                        values: vec![node.into()],
                    }],
                    match_fields: Vec::new(),
                }],
            }),
        });
    }
    if let Some(c) = bound_to {
        v.spec.claim_ref = Some(ClaimReference {
            namespace: c.metadata.namespace.clone(),
            name: c.metadata.name.clone(),
            uid: c.metadata.uid.clone(),
        });
        v.metadata
            .annotations
            .insert(ANN_BOUND_BY_CONTROLLER.into(), "yes".into());
    }
    v
}

fn unbound_pvc() -> PersistentVolumeClaim {
    test_pvc("unbound-pvc", "1G", "", State::Unbound, "", WAIT)
}
fn unbound_pvc2() -> PersistentVolumeClaim {
    test_pvc("unbound-pvc2", "5G", "", State::Unbound, "", WAIT)
}
fn prebound_pvc() -> PersistentVolumeClaim {
    test_pvc("prebound-pvc", "1G", "", State::Prebound, "pv-node1a", WAIT)
}
fn bound_pvc() -> PersistentVolumeClaim {
    test_pvc("bound-pvc", "1G", "", State::Bound, "pv-bound", WAIT)
}
fn immediate_unbound_pvc() -> PersistentVolumeClaim {
    test_pvc(
        "immediate-unbound-pvc",
        "1G",
        "",
        State::Unbound,
        "",
        IMMEDIATE,
    )
}
fn immediate_bound_pvc() -> PersistentVolumeClaim {
    test_pvc(
        "immediate-bound-pvc",
        "1G",
        "",
        State::Bound,
        "pv-bound-immediate",
        IMMEDIATE,
    )
}
fn provisioned_pvc() -> PersistentVolumeClaim {
    test_pvc(
        "provisioned-pvc",
        "1Gi",
        "",
        State::Unbound,
        "",
        WAIT_PROVISIONER,
    )
}
fn no_provisioner_pvc() -> PersistentVolumeClaim {
    test_pvc("no-provisioner-pvc", "1Gi", "", State::Unbound, "", WAIT)
}
fn topo_mismatch_pvc() -> PersistentVolumeClaim {
    test_pvc(
        "topo-mismatch-pvc",
        "1Gi",
        "",
        State::Unbound,
        "",
        TOPO_MISMATCH,
    )
}
fn selected_node_pvc() -> PersistentVolumeClaim {
    test_pvc(
        "provisioned-pvc",
        "1Gi",
        "node1",
        State::SelectedNode,
        "",
        WAIT_PROVISIONER,
    )
}

fn pv_node1a() -> PersistentVolume {
    test_pv("pv-node1a", "node1", "5G", None, WAIT)
}
fn pv_node1b() -> PersistentVolume {
    test_pv("pv-node1b", "node1", "10G", None, WAIT)
}
/// kube's `pvNode1c`: named `pv-node1b`, 5G.
fn pv_node1c() -> PersistentVolume {
    test_pv("pv-node1b", "node1", "5G", None, WAIT)
}
fn pv_node2() -> PersistentVolume {
    test_pv("pv-node2", "node2", "1G", None, WAIT)
}
fn pv_bound() -> PersistentVolume {
    test_pv("pv-bound", "node1", "1G", Some(&bound_pvc()), WAIT)
}
fn pv_node1a_bound() -> PersistentVolume {
    test_pv("pv-node1a", "node1", "5G", Some(&unbound_pvc()), WAIT)
}
fn pv_node1b_bound() -> PersistentVolume {
    test_pv("pv-node1b", "node1", "10G", Some(&unbound_pvc2()), WAIT)
}
fn pv_bound_immediate() -> PersistentVolume {
    test_pv(
        "pv-bound-immediate",
        "node1",
        "1G",
        Some(&immediate_bound_pvc()),
        IMMEDIATE,
    )
}
fn pv_bound_immediate_node2() -> PersistentVolume {
    test_pv(
        "pv-bound-immediate",
        "node2",
        "1G",
        Some(&immediate_bound_pvc()),
        IMMEDIATE,
    )
}

/// kube's `makeGenericEphemeralPVC("test-volume", owned)`: the claim of `test-pod`'s
/// ephemeral volume `test-volume`, bound, of the Immediate class.
fn generic_pvc(owned: bool) -> PersistentVolumeClaim {
    let mut c = test_pvc(
        "test-pod-test-volume",
        "1G",
        "",
        State::Bound,
        "pv-bound",
        IMMEDIATE,
    );
    if owned {
        c.metadata.owner_references = vec![OwnerReference {
            name: "test-pod".into(),
            controller: Some(true),
            ..OwnerReference::default()
        }];
    }
    c
}

/// newTestBinder's classes.
fn binder_classes() -> Vec<StorageClass> {
    let topology = |values: &[&str]| {
        vec![TopologySelectorTerm {
            match_label_expressions: vec![TopologySelectorLabelRequirement {
                key: NODE_KEY.into(),
                values: values.iter().map(|v| v.to_string()).collect(),
            }],
        }]
    };
    let mut with = class(
        WAIT_PROVISIONER,
        Some(VolumeBindingMode::WaitForFirstConsumer),
    );
    with.provisioner = PROVISIONER.into();
    with.allowed_topologies = topology(&["node1", "reference-value"]);
    let immediate = class(IMMEDIATE, Some(VolumeBindingMode::Immediate));
    let mut wait = class(WAIT, Some(VolumeBindingMode::WaitForFirstConsumer));
    wait.provisioner = NOT_SUPPORTED_PROVISIONER.into();
    let mut mismatch = class(TOPO_MISMATCH, Some(VolumeBindingMode::WaitForFirstConsumer));
    mismatch.provisioner = PROVISIONER.into();
    mismatch.allowed_topologies = topology(&["reference-value"]);
    vec![with, immediate, wait, mismatch]
}

/// kube's `makePod("test-pod").withNamespace("testns")`, with the claims as volumes.
fn test_pod(claims: &[PersistentVolumeClaim]) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = "test-pod".into();
    p.metadata.namespace = NS.into();
    p.spec.volumes = claims
        .iter()
        .enumerate()
        .map(|(i, c)| pvc_volume(&format!("vol{i}"), &c.metadata.name))
        .collect();
    p
}

/// `test-pod` with one generic ephemeral volume.
fn ephemeral_pod(volume: &str) -> Pod {
    let mut p = test_pod(&[]);
    p.spec.volumes = vec![Volume {
        name: volume.into(),
        ephemeral: Some(Box::default()),
        ..Volume::default()
    }];
    p
}

/// The binder test's `testNode`.
fn test_node() -> Node {
    node("node1", &[(NODE_KEY, "node1")])
}

fn make_driver(storage_capacity: bool) -> CsiDriver {
    let mut d = CsiDriver::default();
    d.metadata.name = PROVISIONER.into();
    d.spec.storage_capacity = Some(storage_capacity);
    d
}

fn test_snapshot(
    claims: Vec<PersistentVolumeClaim>,
    pvs: Vec<PersistentVolume>,
    driver: Option<CsiDriver>,
) -> Snapshot {
    let mut s = StorageObjects::new();
    s.storage_classes = binder_classes();
    s.persistent_volume_claims = claims;
    s.persistent_volumes = pvs;
    s.csi_drivers = driver.into_iter().collect();
    snapshot(vec![test_node()], vec![], s)
}

/// What `findPodVolumes` gives: an error (or a rejection of the pod), or the reasons with the
/// static bindings (claim, PV) and the claims to provision.
#[derive(Debug, PartialEq, Eq)]
enum Found {
    Fails,
    Volumes {
        reasons: u8,
        bindings: Vec<(String, String)>,
        provisions: Vec<String>,
    },
}

fn found(reasons: u8, bindings: &[(&str, &str)], provisions: &[&str]) -> Found {
    Found::Volumes {
        reasons,
        bindings: bindings
            .iter()
            .map(|(c, v)| (c.to_string(), v.to_string()))
            .collect(),
        provisions: provisions.iter().map(|c| c.to_string()).collect(),
    }
}

/// GetPodVolumeClaims and FindPodVolumes of one volume binder on `testNode`.
fn find_pod_volumes(snap: &Snapshot, binder: VolumeBinderId, pod: &Pod) -> Found {
    let storage = snap.storage();
    match prepare_claims(storage, binder, pod, true) {
        Err(_) => Found::Fails,
        Ok(None) => found(0, &[], &[]),
        Ok(Some(st)) => {
            let mut d = Decisions::default();
            let reasons = decide(storage, binder, &st, snap.node(0).node(), Some(&mut d));
            let pvs = Pvs::of(storage, binder);
            Found::Volumes {
                reasons,
                bindings: d
                    .static_bindings
                    .iter()
                    .map(|&(k, r)| {
                        (
                            st.unbound[k].claim.metadata.name.clone(),
                            pvs.get(r).metadata.name.clone(),
                        )
                    })
                    .collect(),
                provisions: d
                    .provisions
                    .iter()
                    .map(|&k| st.unbound[k].claim.metadata.name.clone())
                    .collect(),
            }
        }
    }
}

/// One scenario of the FindPodVolumes tables.
struct Scenario {
    name: &'static str,
    pod_pvcs: Vec<PersistentVolumeClaim>,
    /// The claims in the cache, when not the pod's.
    cache_pvcs: Option<Vec<PersistentVolumeClaim>>,
    pvs: Vec<PersistentVolume>,
    /// The pod, when not `test-pod` with the pod's claims.
    pod: Option<Pod>,
    want: Found,
    /// Provisioning needs capacity: with a CSIDriver that tracks it (and no
    /// CSIStorageCapacity), kube adds "not enough space" and provisions nothing.
    needs_capacity: bool,
}

fn scenario(
    name: &'static str,
    pod_pvcs: Vec<PersistentVolumeClaim>,
    pvs: Vec<PersistentVolume>,
    want: Found,
) -> Scenario {
    Scenario {
        name,
        pod_pvcs,
        cache_pvcs: None,
        pvs,
        pod: None,
        want,
        needs_capacity: false,
    }
}

fn run_scenarios(scenarios: Vec<Scenario>) {
    for driver in [None, Some(make_driver(true)), Some(make_driver(false))] {
        let tracks = driver.as_ref().is_some_and(|d| d.storage_capacity());
        for s in &scenarios {
            let claims = s.cache_pvcs.clone().unwrap_or_else(|| s.pod_pvcs.clone());
            let snap = test_snapshot(claims, s.pvs.clone(), driver.clone());
            let pod = s.pod.clone().unwrap_or_else(|| test_pod(&s.pod_pvcs));
            let want = match &s.want {
                Found::Volumes {
                    reasons, bindings, ..
                } if s.needs_capacity && tracks => Found::Volumes {
                    reasons: reasons | SPACE,
                    bindings: bindings.clone(),
                    provisions: Vec::new(),
                },
                Found::Fails => Found::Fails,
                Found::Volumes {
                    reasons,
                    bindings,
                    provisions,
                } => Found::Volumes {
                    reasons: *reasons,
                    bindings: bindings.clone(),
                    provisions: provisions.clone(),
                },
            };
            assert_eq!(
                find_pod_volumes(&snap, VolumeBinding::new().binder(), &pod),
                want,
                "{} ({driver:?})",
                s.name
            );
        }
    }
}

#[test]
fn find_pod_volumes_without_provisioning() {
    let ok = || found(0, &[], &[]);
    let mut empty_dir = test_pod(&[]);
    // An emptyDir: the model keeps no source the volume plugins do not read.
    empty_dir.spec.volumes = vec![Volume {
        name: "scratch".into(),
        ..Volume::default()
    }];
    run_scenarios(vec![
        Scenario {
            pod: Some(test_pod(&[])),
            ..scenario("no-volumes", vec![], vec![], ok())
        },
        Scenario {
            pod: Some(empty_dir),
            ..scenario("no-pvcs", vec![], vec![], ok())
        },
        Scenario {
            cache_pvcs: Some(vec![]),
            ..scenario("pvc-not-found", vec![bound_pvc()], vec![], Found::Fails)
        },
        scenario("bound-pvc", vec![bound_pvc()], vec![pv_bound()], ok()),
        scenario(
            "bound-pvc,pv-not-exists",
            vec![bound_pvc()],
            vec![],
            found(PV_NOT_EXIST, &[], &[]),
        ),
        scenario(
            "prebound-pvc",
            vec![prebound_pvc()],
            vec![pv_node1a_bound()],
            Found::Fails,
        ),
        scenario(
            "unbound-pvc,pv-same-node",
            vec![unbound_pvc()],
            vec![pv_node2(), pv_node1a(), pv_node1b()],
            found(0, &[("unbound-pvc", "pv-node1a")], &[]),
        ),
        scenario(
            "unbound-pvc,pv-different-node",
            vec![unbound_pvc()],
            vec![pv_node2()],
            found(BIND, &[], &[]),
        ),
        scenario(
            "two-unbound-pvcs",
            vec![unbound_pvc(), unbound_pvc2()],
            vec![pv_node1a(), pv_node1b()],
            found(
                0,
                &[("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")],
                &[],
            ),
        ),
        scenario(
            "two-unbound-pvcs,order-by-size",
            vec![unbound_pvc2(), unbound_pvc()],
            vec![pv_node1a(), pv_node1b()],
            found(
                0,
                &[("unbound-pvc", "pv-node1a"), ("unbound-pvc2", "pv-node1b")],
                &[],
            ),
        ),
        scenario(
            "two-unbound-pvcs,partial-match",
            vec![unbound_pvc(), unbound_pvc2()],
            vec![pv_node1a()],
            found(BIND, &[("unbound-pvc", "pv-node1a")], &[]),
        ),
        scenario(
            "one-bound,one-unbound",
            vec![unbound_pvc(), bound_pvc()],
            vec![pv_bound(), pv_node1a()],
            found(0, &[("unbound-pvc", "pv-node1a")], &[]),
        ),
        scenario(
            "one-bound,one-unbound,no-match",
            vec![unbound_pvc(), bound_pvc()],
            vec![pv_bound(), pv_node2()],
            found(BIND, &[], &[]),
        ),
        scenario(
            "one-prebound,one-unbound",
            vec![unbound_pvc(), prebound_pvc()],
            vec![pv_node1a(), pv_node1b()],
            Found::Fails,
        ),
        scenario(
            "immediate-bound-pvc",
            vec![immediate_bound_pvc()],
            vec![pv_bound_immediate()],
            ok(),
        ),
        scenario(
            "immediate-bound-pvc-wrong-node",
            vec![immediate_bound_pvc()],
            vec![pv_bound_immediate_node2()],
            found(NODE, &[], &[]),
        ),
        scenario(
            "immediate-unbound-pvc",
            vec![immediate_unbound_pvc()],
            vec![],
            Found::Fails,
        ),
        scenario(
            "immediate-unbound-pvc,delayed-mode-bound",
            vec![immediate_unbound_pvc(), bound_pvc()],
            vec![pv_bound()],
            Found::Fails,
        ),
        scenario(
            "immediate-unbound-pvc,delayed-mode-unbound",
            vec![immediate_unbound_pvc(), unbound_pvc()],
            vec![],
            Found::Fails,
        ),
        Scenario {
            pod: Some(ephemeral_pod("no-such-pvc")),
            ..scenario("generic-ephemeral,no-pvc", vec![], vec![], Found::Fails)
        },
        Scenario {
            pod: Some(ephemeral_pod("test-volume")),
            cache_pvcs: Some(vec![generic_pvc(true)]),
            ..scenario(
                "generic-ephemeral,with-pvc",
                vec![],
                vec![test_pv(
                    "pv-bound",
                    "node1",
                    "1G",
                    Some(&generic_pvc(true)),
                    WAIT,
                )],
                ok(),
            )
        },
        Scenario {
            pod: Some(ephemeral_pod("test-volume")),
            cache_pvcs: Some(vec![generic_pvc(false)]),
            ..scenario(
                "generic-ephemeral,wrong-pvc",
                vec![],
                vec![test_pv(
                    "pv-bound",
                    "node1",
                    "1G",
                    Some(&generic_pvc(true)),
                    WAIT,
                )],
                Found::Fails,
            )
        },
    ]);
}

#[test]
fn find_pod_volumes_with_provisioning() {
    let needs_capacity = |s: Scenario| Scenario {
        needs_capacity: true,
        ..s
    };
    run_scenarios(vec![
        needs_capacity(scenario(
            "one-provisioned",
            vec![provisioned_pvc()],
            vec![],
            found(0, &[], &["provisioned-pvc"]),
        )),
        needs_capacity(scenario(
            "two-unbound-pvcs,one-matched,one-provisioned",
            vec![unbound_pvc(), provisioned_pvc()],
            vec![pv_node1a()],
            found(0, &[("unbound-pvc", "pv-node1a")], &["provisioned-pvc"]),
        )),
        needs_capacity(scenario(
            "one-bound,one-provisioned",
            vec![bound_pvc(), provisioned_pvc()],
            vec![pv_bound()],
            found(0, &[], &["provisioned-pvc"]),
        )),
        needs_capacity(scenario(
            "one-binding,one-selected-node",
            vec![bound_pvc(), selected_node_pvc()],
            vec![pv_bound()],
            found(0, &[], &["provisioned-pvc"]),
        )),
        scenario(
            "immediate-unbound-pvc",
            vec![immediate_unbound_pvc()],
            vec![],
            Found::Fails,
        ),
        needs_capacity(scenario(
            "one-immediate-bound,one-provisioned",
            vec![immediate_bound_pvc(), provisioned_pvc()],
            vec![pv_bound_immediate()],
            found(0, &[], &["provisioned-pvc"]),
        )),
        scenario(
            "invalid-provisioner",
            vec![no_provisioner_pvc()],
            vec![],
            found(BIND, &[], &[]),
        ),
        scenario(
            "volume-topology-unsatisfied",
            vec![topo_mismatch_pvc()],
            vec![],
            found(BIND, &[], &[]),
        ),
    ]);
}

/// Reserve on `node1` for `test-pod` with the claims, through a new VolumeBinding's binder.
fn assume_on_node1(
    pod_pvcs: Vec<PersistentVolumeClaim>,
    pvs: Vec<PersistentVolume>,
) -> (Snapshot, VolumeBinderId, AssumedVolumes) {
    let pod = test_pod(&pod_pvcs);
    let mut snap = test_snapshot(pod_pvcs, pvs, None);
    let binder = VolumeBinding::new().binder();
    let assumed = assume_volumes(&mut snap, binder, &pod, "node1", KubeVersion::V1_34).unwrap();
    (snap, binder, assumed)
}

/// TestAssumePodVolumes, the scenarios whose bindings FindPodVolumes gives on `node1`
/// (sched-core's Reserve takes its own filter's decisions; kube's "tmpupdate-failed"
/// scenarios hand AssumePodVolumes a PV missing from the cache or a claim of an older
/// `resourceVersion`, which cannot arise from them).
#[test]
fn assume_pod_volumes() {
    // all-bound: nothing to assume.
    let (snap, binder, assumed) = assume_on_node1(vec![bound_pvc()], vec![pv_bound()]);
    assert!(assumed.is_empty());
    assert!(snap.storage().assumed_pvs(binder).is_empty());

    // one-binding: the PV is bound to the claim in the binder's cache.
    let (snap, binder, assumed) = assume_on_node1(vec![unbound_pvc()], vec![pv_node1a()]);
    assert_eq!(assumed.bindings(), &[pv_node1a_bound()]);
    assert!(assumed.provisions().is_empty());
    assert_eq!(
        snap.storage().pv_seen_by(binder, "pv-node1a"),
        Some(&pv_node1a_bound())
    );
    assert_eq!(snap.storage().pv("pv-node1a"), Some(&pv_node1a()));

    // two-bindings.
    let (snap, binder, assumed) = assume_on_node1(
        vec![unbound_pvc(), unbound_pvc2()],
        vec![pv_node1a(), pv_node1b()],
    );
    assert_eq!(assumed.bindings(), &[pv_node1a_bound(), pv_node1b_bound()]);
    assert_eq!(
        snap.storage().pv_seen_by(binder, "pv-node1b"),
        Some(&pv_node1b_bound())
    );

    // pv-already-bound: the binding stays for PreBind, with nothing to assume.
    let (snap, binder, assumed) = assume_on_node1(vec![unbound_pvc()], vec![pv_node1a_bound()]);
    assert_eq!(assumed.bindings(), &[pv_node1a_bound()]);
    assert!(snap.storage().assumed_pv(binder, "pv-node1a").is_none());

    // one-binding, one-pvc-provisioned.
    let (snap, binder, assumed) =
        assume_on_node1(vec![unbound_pvc(), provisioned_pvc()], vec![pv_node1a()]);
    assert_eq!(assumed.bindings(), &[pv_node1a_bound()]);
    assert_eq!(assumed.provisions(), &[selected_node_pvc()]);
    assert_eq!(
        snap.storage().pvc_seen_by(binder, NS, "provisioned-pvc"),
        Some(&selected_node_pvc())
    );
    // The claims stay unbound: PreBind's API calls and the PV controller bind them.
    assert_eq!(
        snap.storage().pvc_seen_by(binder, NS, "unbound-pvc"),
        Some(&unbound_pvc())
    );
    assert_eq!(
        snap.storage().pvc(NS, "provisioned-pvc"),
        Some(&provisioned_pvc())
    );
}

#[test]
fn revert_assumed_pod_volumes() {
    let (mut snap, binder, assumed) =
        assume_on_node1(vec![unbound_pvc(), provisioned_pvc()], vec![pv_node1a()]);
    assert_eq!(assumed.bindings(), &[pv_node1a_bound()]);
    assert_eq!(assumed.provisions(), &[selected_node_pvc()]);
    forget_volumes(&mut snap, assumed);
    assert_eq!(
        snap.storage().pv_seen_by(binder, "pv-node1a"),
        Some(&pv_node1a())
    );
    let claim = snap
        .storage()
        .pvc_seen_by(binder, NS, "provisioned-pvc")
        .unwrap();
    assert!(!claim.metadata.annotations.contains_key(ANN_SELECTED_NODE));
}

/// TestFindAssumeVolumes: once assumed, the PV bound to the claim is the claim's, whatever
/// other PV would fit as well.
#[test]
fn find_assume_volumes() {
    let claims = vec![unbound_pvc()];
    let pod = test_pod(&claims);
    let mut snap = test_snapshot(claims, vec![pv_node2(), pv_node1a(), pv_node1c()], None);
    let binder = VolumeBinding::new().binder();
    let want = found(0, &[("unbound-pvc", "pv-node1a")], &[]);
    assert_eq!(find_pod_volumes(&snap, binder, &pod), want);
    let assumed = assume_volumes(&mut snap, binder, &pod, "node1", KubeVersion::V1_34).unwrap();
    assert_eq!(assumed.bindings(), &[pv_node1a_bound()]);
    for _ in 0..3 {
        assert_eq!(find_pod_volumes(&snap, binder, &pod), want);
    }
    // Found again, the binding is the assumed PV (PreBind writes it unchanged).
    let again = assume_volumes(&mut snap, binder, &pod, "node1", KubeVersion::V1_34).unwrap();
    assert_eq!(again.bindings(), &[pv_node1a_bound()]);
}

/// Two node1 PVs, one per node of `node1` and `node2`, and the claim `unbound-pvc` two pods
/// use: kube's shrunk differential case. What one VolumeBinding's Reserve assumed, its own
/// filter sees (the PV pre-bound to the claim: the claim goes to its node or nowhere), and
/// another VolumeBinding (another profile's) does not.
#[test]
fn each_volume_binding_sees_its_own_assumptions() {
    let claims = vec![unbound_pvc()];
    let mut s = StorageObjects::new();
    s.storage_classes = binder_classes();
    s.persistent_volume_claims = claims.clone();
    s.persistent_volumes = vec![pv_node1a(), test_pv("pv-node2", "node2", "5G", None, WAIT)];
    let mut snap = snapshot(
        vec![test_node(), node("node2", &[(NODE_KEY, "node2")])],
        vec![],
        s,
    );
    let pod1 = test_pod(&claims);
    let mut pod2 = test_pod(&claims);
    pod2.metadata.name = "test-pod-2".into();
    let (a, b) = (VolumeBinding::new(), VolumeBinding::new());
    let run = |p: &VolumeBinding, snap: &Snapshot| {
        crate::plugins::volume::testutil::run(p, &pod2, snap, KubeVersion::V1_34).1
    };
    assert_eq!(run(&a, &snap), vec![Ok(()), Ok(())]);
    let assumed =
        assume_volumes(&mut snap, a.binder(), &pod1, "node1", KubeVersion::V1_34).unwrap();
    let bind = Err(Reason::VolumeBinding(VolumeBindingConflicts(BIND)));
    assert_eq!(run(&a, &snap), vec![Ok(()), bind]);
    assert_eq!(run(&b, &snap), vec![Ok(()), Ok(())]);
    // The other profile reserves node2's PV for the same claim, in its own binder.
    let other = assume_volumes(&mut snap, b.binder(), &pod2, "node2", KubeVersion::V1_34).unwrap();
    assert_eq!(other.bindings()[0].metadata.name, "pv-node2");
    assert_eq!(run(&a, &snap), vec![Ok(()), bind]);
    assert_eq!(run(&b, &snap), vec![bind, Ok(())]);
    forget_volumes(&mut snap, assumed);
    assert_eq!(run(&a, &snap), vec![Ok(()), Ok(())]);
    assert_eq!(run(&b, &snap), vec![bind, Ok(())]);
}

/// kube's assume cache takes a newer version from the informer over an assumed one: an
/// upsert or a removal of the object ends every binder's assumption of it, and the undo
/// leaves the informer's version.
#[test]
fn the_informer_s_versions_replace_assumed_ones() {
    let (mut snap, binder, assumed) =
        assume_on_node1(vec![unbound_pvc(), provisioned_pvc()], vec![pv_node1a()]);
    let generation = snap.generation();
    assert!(snap.storage().assumed_pv(binder, "pv-node1a").is_some());
    // The PV controller bound the PV to another claim.
    let mut newer = pv_node1a();
    newer.spec.claim_ref = Some(ClaimReference {
        namespace: NS.into(),
        name: "other".into(),
        uid: String::new(),
    });
    snap.storage_mut().upsert_pv(newer.clone());
    assert!(snap.generation() > generation);
    assert_eq!(snap.storage().pv_seen_by(binder, "pv-node1a"), Some(&newer));
    let mut claim = provisioned_pvc();
    claim.metadata.labels.insert("new".into(), "yes".into());
    snap.storage_mut().upsert_pvc(claim.clone());
    assert_eq!(
        snap.storage().pvc_seen_by(binder, NS, "provisioned-pvc"),
        Some(&claim)
    );
    forget_volumes(&mut snap, assumed);
    assert_eq!(snap.storage().pv("pv-node1a"), Some(&newer));
    assert_eq!(snap.storage().pv_seen_by(binder, "pv-node1a"), Some(&newer));
    // A removal ends an assumption too.
    let (mut snap, binder, _assumed) = assume_on_node1(vec![unbound_pvc()], vec![pv_node1a()]);
    snap.storage_mut().remove_pv("pv-node1a");
    assert!(snap.storage().pv_seen_by(binder, "pv-node1a").is_none());
    assert!(snap.storage().assumed_pvs(binder).is_empty());
}

/// Of two PVs of the smallest size that fits, a pick takes the one it names (kube takes either,
/// in its assume cache's order); a pick that names a larger PV, or none, changes nothing.
#[test]
fn a_pick_chooses_among_the_smallest_pvs_only() {
    let taken = |pvs: Vec<PersistentVolume>, pick: Option<&'static str>| {
        let pod = test_pod(&[unbound_pvc()]);
        let mut snap = test_snapshot(vec![unbound_pvc()], pvs, None);
        let binder = VolumeBinding::new().binder();
        let by_name = move |_: &PersistentVolumeClaim| pick;
        let assumed = assume_volumes_picking(
            &mut snap,
            binder,
            &pod,
            "node1",
            KubeVersion::V1_34,
            &by_name,
        )
        .unwrap();
        let names: Vec<String> = assumed
            .bindings()
            .iter()
            .map(|pv| pv.metadata.name.clone())
            .collect();
        let seen = snap.storage().pv_seen_by(binder, &names[0]).cloned();
        assert_eq!(
            seen.and_then(|pv| pv.spec.claim_ref).map(|r| r.name),
            Some("unbound-pvc".to_string())
        );
        names
    };
    // pv-node1a and kube's pvNode1c (named pv-node1b) are both 5G.
    assert_eq!(taken(vec![pv_node1a(), pv_node1c()], None), ["pv-node1a"]);
    assert_eq!(
        taken(vec![pv_node1a(), pv_node1c()], Some("pv-node1b")),
        ["pv-node1b"]
    );
    assert_eq!(
        taken(vec![pv_node1c(), pv_node1a()], Some("pv-node1a")),
        ["pv-node1a"]
    );
    // pv-node1b of 10G is larger: the pick is not one of the smallest.
    assert_eq!(
        taken(vec![pv_node1a(), pv_node1b()], Some("pv-node1b")),
        ["pv-node1a"]
    );
}
