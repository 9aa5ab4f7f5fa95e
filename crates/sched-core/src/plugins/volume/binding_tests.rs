//! kube v1.34 `volumebinding/volume_binding_test.go` TestVolumeBinding: every case's
//! PreFilter and Filter outcomes (its scores need the StorageCapacityScoring gate, off by
//! default, and are not ported); plus provisioning and selected-node cases of
//! `binder_test.go`'s kind; and `binder_test.go`'s TestCapacity (CSIStorageCapacity).

use super::*;
use crate::framework::KubeVersion::{V1_20, V1_34};
use crate::model::{
    AccessMode, CsiDriver, CsiStorageCapacity, LabelSelector, NodeSelector, NodeSelectorOperator,
    NodeSelectorRequirement, NodeSelectorTerm, Pod, StorageClass, StorageObjects,
    TopologySelectorLabelRequirement, VolumeNodeAffinity,
};
use crate::plugins::volume::testutil::*;

const HOSTNAME: &str = "kubernetes.io/hostname";

fn classes() -> Vec<StorageClass> {
    vec![
        class("immediate-sc", Some(VolumeBindingMode::Immediate)),
        class("wait-sc", Some(VolumeBindingMode::WaitForFirstConsumer)),
        class("wait-hdd-sc", Some(VolumeBindingMode::WaitForFirstConsumer)),
    ]
}

/// kube's `makePV(name, class)` with a phase, capacity and node affinity (`key In values`,
/// one term).
fn make_pv(
    name: &str,
    class: &str,
    phase: &str,
    capacity: &str,
    affinity: &[(&str, &str)],
) -> PersistentVolume {
    let mut v = pv(name, &[]);
    v.spec.storage_class_name = class.into();
    v.status.phase = phase.into();
    if !capacity.is_empty() {
        v.spec
            .capacity
            .insert("storage".into(), storage_quantity(capacity));
    }
    if !affinity.is_empty() {
        v.spec.node_affinity = Some(VolumeNodeAffinity {
            required: Some(NodeSelector {
                node_selector_terms: vec![NodeSelectorTerm {
                    match_expressions: affinity
                        .iter()
                        .map(|(k, v)| NodeSelectorRequirement {
                            key: k.to_string(),
                            operator: NodeSelectorOperator::In,
                            values: vec![v.to_string()],
                        })
                        .collect(),
                    match_fields: Vec::new(),
                }],
            }),
        });
    }
    v
}

/// kube's `makePVC(name, class)`, bound to `pv` (`withBoundPV`: with
/// `pv.kubernetes.io/bind-completed`) when not empty, requesting `request`.
fn make_pvc(name: &str, class: &str, pv: &str, request: &str) -> PersistentVolumeClaim {
    let mut c = pvc_of_class(name, Some(class));
    if !pv.is_empty() {
        c = pvc(name, pv);
        c.spec.storage_class_name = Some(class.into());
    }
    if !request.is_empty() {
        c.spec
            .resources
            .requests
            .insert("storage".into(), storage_quantity(request));
    }
    c
}

/// kube's `makeNode(name)`: labelled with its hostname, plus `extra`.
fn make_node(name: &str, extra: &[(&str, &str)]) -> Node {
    let mut n = node(name, extra);
    n.metadata.labels.insert(HOSTNAME.into(), name.into());
    n
}

type Outcome = Option<Vec<Result<(), Reason>>>;

/// None: PreFilter skips; else each node's outcome.
fn outcomes(
    pod: &Pod,
    nodes: Vec<Node>,
    pvcs: Vec<PersistentVolumeClaim>,
    pvs: Vec<PersistentVolume>,
    extra: Vec<StorageClass>,
    v: KubeVersion,
) -> Outcome {
    let mut s = StorageObjects::new();
    s.storage_classes = classes();
    s.storage_classes.extend(extra);
    s.persistent_volume_claims = pvcs;
    s.persistent_volumes = pvs;
    let snap = snapshot(nodes, vec![], s);
    let (skipped, res) = run(&VolumeBinding::new(), pod, &snap, v);
    (!skipped).then_some(res)
}

fn conflicts(bits: u8) -> Result<(), Reason> {
    Err(Reason::VolumeBinding(VolumeBindingConflicts(bits)))
}

const BIND: u8 = VolumeBindingConflicts::NO_VOLUME_TO_BIND;
const NODE: u8 = VolumeBindingConflicts::NODE_AFFINITY;

#[test]
fn volume_binding() {
    let node_a = || make_node("node-a", &[]);
    let pod = |claims: &[&str]| pod_with_claims("pod-a", claims);
    let problem = |p| Some(vec![Err(Reason::Volume(p))]);

    assert_eq!(
        outcomes(&pod(&[]), vec![node_a()], vec![], vec![], vec![], V1_34),
        None,
        "pod has not pvcs"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a"]),
            vec![node_a()],
            vec![make_pvc("pvc-a", "wait-sc", "pv-a", "")],
            vec![make_pv("pv-a", "wait-sc", "Available", "", &[])],
            vec![],
            V1_34
        ),
        Some(vec![Ok(())]),
        "all bound"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a", "pvc-b"]),
            vec![node_a()],
            vec![
                make_pvc("pvc-a", "wait-sc", "pv-a", ""),
                make_pvc("pvc-b", "wait-sc", "pv-b", "")
            ],
            vec![
                make_pv("pv-a", "wait-sc", "Bound", "", &[(HOSTNAME, "node-a")]),
                make_pv("pv-b", "wait-sc", "Bound", "", &[(HOSTNAME, "node-a")]),
            ],
            vec![],
            V1_34
        ),
        Some(vec![Ok(())]),
        "all bound with local volumes"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a"]),
            vec![node_a()],
            vec![],
            vec![],
            vec![],
            V1_34
        ),
        problem(VolumeProblem::ClaimNotFound),
        "PVC does not exist"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a", "pvc-b"]),
            vec![node_a()],
            vec![make_pvc("pvc-a", "wait-sc", "pv-a", "")],
            vec![],
            vec![],
            V1_34
        ),
        problem(VolumeProblem::ClaimNotFound),
        "Part of PVCs do not exist"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a"]),
            vec![node_a()],
            vec![make_pvc("pvc-a", "immediate-sc", "", "")],
            vec![],
            vec![],
            V1_34
        ),
        Some(vec![Err(Reason::UnboundImmediateClaims)]),
        "immediate claims not bound"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a"]),
            vec![node_a()],
            vec![make_pvc("pvc-a", "wait-sc", "", "")],
            vec![],
            vec![],
            V1_34
        ),
        Some(vec![conflicts(BIND)]),
        "unbound claims no matches"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a", "pvc-b"]),
            vec![make_node("node-a", &[("foo", "barbar")])],
            vec![
                make_pvc("pvc-a", "wait-sc", "pv-a", ""),
                make_pvc("pvc-b", "wait-sc", "", "")
            ],
            vec![make_pv(
                "pv-a",
                "wait-sc",
                "Available",
                "",
                &[("foo", "bar")]
            )],
            vec![],
            V1_34
        ),
        Some(vec![conflicts(NODE | BIND)]),
        "bound and unbound unsatisfied"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a"]),
            vec![node_a()],
            vec![make_pvc("pvc-a", "wait-sc", "pv-a", "")],
            vec![],
            vec![],
            V1_34
        ),
        Some(vec![conflicts(
            VolumeBindingConflicts::BOUND_TO_MISSING_VOLUME
        )]),
        "pv not found"
    );
    let mut lost = make_pvc("pvc-a", "wait-sc", "pv-a", "");
    lost.status.phase = "Lost".into();
    assert_eq!(
        outcomes(
            &pod(&["pvc-a"]),
            vec![node_a()],
            vec![lost],
            vec![],
            vec![],
            V1_34
        ),
        problem(VolumeProblem::ClaimLost),
        "pv not found claim lost"
    );

    let local = |name: &str, class: &str, cap: &str, host: &str| {
        make_pv(name, class, "Available", cap, &[(HOSTNAME, host)])
    };
    let three = || -> Vec<Node> {
        ["node-a", "node-b", "node-c"]
            .iter()
            .map(|n| make_node(n, &[]))
            .collect()
    };
    assert_eq!(
        outcomes(
            &pod(&["pvc-a"]),
            three(),
            vec![make_pvc("pvc-a", "wait-sc", "", "50Gi")],
            vec![
                local("pv-a-0", "wait-sc", "200Gi", "node-a"),
                local("pv-a-1", "wait-sc", "200Gi", "node-a"),
                local("pv-b-0", "wait-sc", "100Gi", "node-b"),
                local("pv-b-1", "wait-sc", "100Gi", "node-b"),
            ],
            vec![],
            V1_34
        ),
        Some(vec![Ok(()), Ok(()), conflicts(BIND)]),
        "local volumes with close capacity are preferred"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-0", "pvc-1"]),
            three(),
            vec![
                make_pvc("pvc-0", "wait-sc", "", "50Gi"),
                make_pvc("pvc-1", "wait-hdd-sc", "", "100Gi")
            ],
            vec![
                local("pv-a-0", "wait-sc", "200Gi", "node-a"),
                local("pv-a-1", "wait-sc", "200Gi", "node-a"),
                local("pv-a-2", "wait-hdd-sc", "200Gi", "node-a"),
                local("pv-a-3", "wait-hdd-sc", "200Gi", "node-a"),
                local("pv-b-0", "wait-sc", "100Gi", "node-b"),
                local("pv-b-1", "wait-sc", "100Gi", "node-b"),
                local("pv-b-2", "wait-hdd-sc", "100Gi", "node-b"),
                local("pv-b-3", "wait-hdd-sc", "100Gi", "node-b"),
            ],
            vec![],
            V1_34
        ),
        Some(vec![Ok(()), Ok(()), conflicts(BIND)]),
        "local volumes with close capacity are preferred (multiple pvcs)"
    );
    let zonal = |name: &str, cap: &str, region: &str, zone: &str| {
        make_pv(
            name,
            "wait-sc",
            "Available",
            cap,
            &[
                ("topology.kubernetes.io/region", region),
                ("topology.kubernetes.io/zone", zone),
            ],
        )
    };
    let zone_nodes = || -> Vec<Node> {
        ["a", "b", "c"]
            .iter()
            .flat_map(|z| {
                ["node-a", "node-b"].iter().map(move |n| {
                    make_node(
                        &format!("zone-{z}-{n}"),
                        &[
                            ("topology.kubernetes.io/region", &format!("region-{z}")),
                            ("topology.kubernetes.io/zone", &format!("zone-{z}")),
                        ],
                    )
                })
            })
            .collect()
    };
    let zonal_pvs = || {
        vec![
            zonal("pv-a-0", "200Gi", "region-a", "zone-a"),
            zonal("pv-a-1", "200Gi", "region-a", "zone-a"),
            zonal("pv-b-0", "100Gi", "region-b", "zone-b"),
            zonal("pv-b-1", "100Gi", "region-b", "zone-b"),
        ]
    };
    // "zonal volumes with close capacity are preferred" and its custom-shape twin.
    for name in ["zonal", "zonal (custom shape)"] {
        assert_eq!(
            outcomes(
                &pod(&["pvc-a"]),
                zone_nodes(),
                vec![make_pvc("pvc-a", "wait-sc", "", "50Gi")],
                zonal_pvs(),
                vec![],
                V1_34
            ),
            Some(vec![
                Ok(()),
                Ok(()),
                Ok(()),
                Ok(()),
                conflicts(BIND),
                conflicts(BIND)
            ]),
            "{name}"
        );
    }
    let mut out = Vec::new();
    Reason::VolumeBinding(VolumeBindingConflicts(NODE | BIND)).write_messages(
        V1_34,
        &Default::default(),
        &Node::default(),
        &mut |m| out.push(m.into_owned()),
    );
    assert_eq!(
        out,
        [
            "node(s) didn't match PersistentVolume's node affinity",
            "node(s) didn't find available persistent volumes to bind"
        ]
    );
    // Kind 4: v1.34's wording of a PV's node affinity; a legacy profile keeps v1.20's.
    assert_eq!(
        text(Reason::VolumeBinding(VolumeBindingConflicts(NODE)), V1_20),
        "node(s) had volume node affinity conflict"
    );
    assert_eq!(
        text(Reason::UnboundImmediateClaims, V1_34),
        "pod has unbound immediate PersistentVolumeClaims"
    );
}

/// Matching and provisioning rules of `FindMatchingVolume` and `checkVolumeProvisions`.
#[test]
fn matching_and_provisioning() {
    let n = || {
        vec![
            node("node-a", &[("zone", "z1")]),
            node("node-b", &[("zone", "z2")]),
        ]
    };
    let pod = pod_with_claims("pod-a", &["pvc-a"]);
    let claim = || {
        let mut c = make_pvc("pvc-a", "wait-sc", "", "10Gi");
        c.spec.access_modes = vec![AccessMode::ReadWriteOnce];
        c
    };
    let avail = |name: &str, cap: &str, modes: &[AccessMode], zone: &str| {
        let mut v = make_pv(name, "wait-sc", "Available", cap, &[("zone", zone)]);
        v.spec.access_modes = modes.to_vec();
        v
    };
    let rwo = [AccessMode::ReadWriteOnce];
    // Too small, wrong access modes, claimed by another claim: no match, no provisioner.
    let mut taken = avail("pv-taken", "20Gi", &rwo, "z1");
    taken.spec.claim_ref = Some(crate::model::ClaimReference {
        namespace: "default".into(),
        name: "other".into(),
        uid: String::new(),
    });
    assert_eq!(
        outcomes(
            &pod,
            n(),
            vec![claim()],
            vec![
                avail("pv-small", "5Gi", &rwo, "z1"),
                avail("pv-rox", "20Gi", &[AccessMode::ReadOnlyMany], "z1"),
                taken
            ],
            vec![],
            V1_34
        ),
        Some(vec![conflicts(BIND), conflicts(BIND)])
    );
    // A PV pre-bound to the claim is taken even when not Available.
    let mut pre = make_pv("pv-pre", "wait-sc", "Pending", "10Gi", &[("zone", "z2")]);
    pre.spec.claim_ref = Some(crate::model::ClaimReference {
        namespace: "default".into(),
        name: "pvc-a".into(),
        uid: String::new(),
    });
    assert_eq!(
        outcomes(&pod, n(), vec![claim()], vec![pre], vec![], V1_34),
        Some(vec![conflicts(BIND), Ok(())])
    );
    // Dynamic provisioning with allowedTopologies.
    let mut sc = class("dyn", Some(VolumeBindingMode::WaitForFirstConsumer));
    sc.provisioner = "ebs.csi.aws.com".into();
    sc.allowed_topologies = vec![TopologySelectorTerm {
        match_label_expressions: vec![TopologySelectorLabelRequirement {
            key: "zone".into(),
            values: vec!["z2".into()],
        }],
    }];
    let dyn_claim = make_pvc("pvc-a", "dyn", "", "1Gi");
    assert_eq!(
        outcomes(
            &pod,
            n(),
            vec![dyn_claim.clone()],
            vec![],
            vec![sc.clone()],
            V1_34
        ),
        Some(vec![conflicts(BIND), Ok(())])
    );
    let mut any = sc.clone();
    any.allowed_topologies.clear();
    assert_eq!(
        outcomes(
            &pod,
            n(),
            vec![dyn_claim.clone()],
            vec![],
            vec![any.clone()],
            V1_34
        ),
        Some(vec![Ok(()), Ok(())])
    );
    let mut static_sc = any;
    static_sc.provisioner = "kubernetes.io/no-provisioner".into();
    assert_eq!(
        outcomes(
            &pod,
            n(),
            vec![dyn_claim.clone()],
            vec![],
            vec![static_sc],
            V1_34
        ),
        Some(vec![conflicts(BIND), conflicts(BIND)])
    );
    // A claim given a node fits that node only.
    let mut selected = dyn_claim;
    selected.metadata.annotations = labels(&[("volume.kubernetes.io/selected-node", "node-a")]);
    let mut open = sc;
    open.allowed_topologies.clear();
    assert_eq!(
        outcomes(&pod, n(), vec![selected], vec![], vec![open], V1_34),
        Some(vec![Ok(()), conflicts(BIND)])
    );
    // A claim of a missing class is immediate; the same rules under v1.20.
    assert_eq!(
        outcomes(
            &pod,
            n(),
            vec![make_pvc("pvc-a", "nope", "", "")],
            vec![],
            vec![],
            V1_20
        ),
        Some(vec![Err(Reason::UnboundImmediateClaims); 2])
    );
}

/// `assume_volumes` reserves the matched PV for the plugin's binder (the next pod's claim
/// finds another one, or none) and pins a provisioned claim to the node; `forget_volumes`
/// gives them back. The informer's objects stay as they are, and a VolumeBinding with another
/// binder (another profile's) sees none of it.
#[test]
fn assume_and_forget_volumes() {
    let nodes = || vec![make_node("node-a", &[]), make_node("node-b", &[])];
    let local =
        |name: &str, host: &str| make_pv(name, "wait-sc", "Available", "10Gi", &[(HOSTNAME, host)]);
    let mut s = StorageObjects::new();
    s.storage_classes = classes();
    let mut dynamic = class("dyn", Some(VolumeBindingMode::WaitForFirstConsumer));
    dynamic.provisioner = "ebs.csi.aws.com".into();
    s.storage_classes.push(dynamic);
    s.persistent_volumes = vec![local("pv-a", "node-a")];
    s.persistent_volume_claims = vec![
        make_pvc("c1", "wait-sc", "", "1Gi"),
        make_pvc("c2", "wait-sc", "", "1Gi"),
        make_pvc("c3", "dyn", "", "1Gi"),
    ];
    let mut snap = snapshot(nodes(), vec![], s);
    let pvs_before: Vec<_> = snap.storage().pvs().to_vec();
    let c3_before = snap.storage().pvc("default", "c3").unwrap().clone();
    let p1 = pod_with_claims("p1", &["c1"]);
    let p2 = pod_with_claims("p2", &["c2"]);
    let p3 = pod_with_claims("p3", &["c3"]);
    let plugin = VolumeBinding::new();
    let other = VolumeBinding::new();
    let binder = plugin.binder();
    assert_ne!(binder, other.binder());
    assert_eq!(
        run(&plugin, &p2, &snap, V1_34).1,
        vec![Ok(()), conflicts(BIND)]
    );
    // Placing p1 on node-a takes pv-a: p2 fits nowhere now.
    assert_eq!(
        assume_volumes(&mut snap, binder, &p1, "node-b", V1_34),
        Err(Reason::VolumeBinding(VolumeBindingConflicts(BIND)))
    );
    let assumed = assume_volumes(&mut snap, binder, &p1, "node-a", V1_34).unwrap();
    assert_eq!(assumed.binder(), Some(binder));
    assert_eq!(assumed.bindings().len(), 1);
    let bound = snap.storage().pv_seen_by(binder, "pv-a").unwrap();
    assert_eq!(bound, &assumed.bindings()[0]);
    assert_eq!(bound.spec.claim_ref.as_ref().unwrap().name, "c1");
    assert_eq!(
        bound
            .metadata
            .annotations
            .get("pv.kubernetes.io/bound-by-controller")
            .map(String::as_str),
        Some("yes")
    );
    // The informer's objects, and the claim, are as they were.
    assert_eq!(snap.storage().pvs(), &pvs_before[..]);
    assert!(
        snap.storage()
            .pvc("default", "c1")
            .unwrap()
            .spec
            .volume_name
            .is_empty()
    );
    assert_eq!(
        run(&plugin, &p2, &snap, V1_34).1,
        vec![conflicts(BIND), conflicts(BIND)]
    );
    assert_eq!(
        run(&plugin, &p1, &snap, V1_34).1,
        vec![Ok(()), conflicts(BIND)]
    );
    // Another profile's VolumeBinding still finds pv-a available.
    assert_eq!(
        run(&other, &p2, &snap, V1_34).1,
        vec![Ok(()), conflicts(BIND)]
    );
    forget_volumes(&mut snap, assumed);
    assert!(snap.storage().assumed_pv(binder, "pv-a").is_none());
    assert_eq!(snap.storage().pvs(), &pvs_before[..]);
    assert_eq!(
        run(&plugin, &p2, &snap, V1_34).1,
        vec![Ok(()), conflicts(BIND)]
    );
    // A provisioned claim is pinned to its node, for the binder only.
    let assumed = assume_volumes(&mut snap, binder, &p3, "node-b", V1_34).unwrap();
    assert_eq!(assumed.provisions().len(), 1);
    assert_eq!(
        run(&plugin, &p3, &snap, V1_34).1,
        vec![conflicts(BIND), Ok(())]
    );
    assert_eq!(run(&other, &p3, &snap, V1_34).1, vec![Ok(()), Ok(())]);
    assert_eq!(snap.storage().pvc("default", "c3"), Some(&c3_before));
    forget_volumes(&mut snap, assumed);
    assert_eq!(run(&plugin, &p3, &snap, V1_34).1, vec![Ok(()), Ok(())]);
    assert!(
        snap.storage()
            .assumed_pvc(binder, "default", "c3")
            .is_none()
    );
}

/// kube v1.20's `volumebinding/volume_binding_test.go` TestVolumeBinding (CheckVolumeBinding):
/// every case. Its "pv not found" is an error status there (`could not find
/// v1.PersistentVolume "pv-a"`); here it is the later versions' reason.
#[test]
fn volume_binding_v1_20() {
    let n = |l: &[(&str, &str)]| vec![node("node-a", l)];
    let pod = |claims: &[&str]| pod_with_claims("pod-a", claims);
    let pv_a = || make_pv("pv-a", "", "", "", &[]);
    assert_eq!(
        outcomes(&pod(&[]), n(&[]), vec![], vec![], vec![], V1_20),
        None,
        "pod has not pvcs"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a"]),
            n(&[]),
            vec![make_pvc("pvc-a", "wait-sc", "pv-a", "")],
            vec![pv_a()],
            vec![],
            V1_20
        ),
        Some(vec![Ok(())]),
        "all bound"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a"]),
            n(&[]),
            vec![make_pvc("pvc-a", "immediate-sc", "", "")],
            vec![],
            vec![],
            V1_20
        ),
        Some(vec![Err(Reason::UnboundImmediateClaims)]),
        "immediate claims not bound"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a"]),
            n(&[]),
            vec![make_pvc("pvc-a", "wait-sc", "", "")],
            vec![],
            vec![],
            V1_20
        ),
        Some(vec![conflicts(BIND)]),
        "unbound claims no matches"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a", "pvc-b"]),
            n(&[("foo", "barbar")]),
            vec![
                make_pvc("pvc-a", "wait-sc", "pv-a", ""),
                make_pvc("pvc-b", "wait-sc", "", "")
            ],
            vec![make_pv("pv-a", "", "", "", &[("foo", "bar")])],
            vec![],
            V1_20
        ),
        Some(vec![conflicts(NODE | BIND)]),
        "bound and unbound unsatisfied"
    );
    assert_eq!(
        outcomes(&pod(&["pvc-a"]), n(&[]), vec![], vec![], vec![], V1_20),
        Some(vec![Err(Reason::Volume(VolumeProblem::ClaimNotFound))]),
        "pvc not found"
    );
    // kube v1.20's binder already asked for `pv.kubernetes.io/bind-completed`: a claim whose
    // binding is not complete is an unbound Immediate one.
    let mut prebound = make_pvc("pvc-a", "wait-sc", "pv-a", "");
    prebound.metadata.annotations.clear();
    assert_eq!(
        outcomes(
            &pod(&["pvc-a"]),
            n(&[]),
            vec![prebound],
            vec![pv_a()],
            vec![],
            V1_20
        ),
        Some(vec![Err(Reason::UnboundImmediateClaims)]),
        "prebound claim"
    );
    assert_eq!(
        outcomes(
            &pod(&["pvc-a"]),
            n(&[]),
            vec![make_pvc("pvc-a", "wait-sc", "pv-a", "")],
            vec![],
            vec![],
            V1_20
        ),
        Some(vec![conflicts(
            VolumeBindingConflicts::BOUND_TO_MISSING_VOLUME
        )]),
        "pv not found"
    );
}

/// kube's `makeCapacity(name, class, node, capacity, maximumVolumeSize)`: the node (by its
/// `nodeKey` label) or every node (an empty selector) when `node` is `None`; `""` leaves a
/// size unset.
fn make_capacity(
    name: &str,
    class: &str,
    node: Option<&str>,
    capacity: &str,
    max_size: &str,
) -> CsiStorageCapacity {
    let mut c = CsiStorageCapacity::default();
    c.metadata.name = name.into();
    c.storage_class_name = class.into();
    let mut topology = LabelSelector::default();
    if let Some(n) = node {
        topology.match_labels = labels(&[("nodeKey", n)]);
    }
    c.node_topology = Some(topology);
    c.capacity = (!capacity.is_empty()).then(|| storage_quantity(capacity));
    c.maximum_volume_size = (!max_size.is_empty()).then(|| storage_quantity(max_size));
    c
}

/// kube's `makeCSIDriver(name, storageCapacity)`.
fn make_csi_driver(name: &str, storage_capacity: bool) -> CsiDriver {
    let mut d = CsiDriver::default();
    d.metadata.name = name.into();
    d.spec.storage_capacity = Some(storage_capacity);
    d
}

/// binder_test.go's classes: `waitClassWithProvisioner` (provisioner `test-provisioner`,
/// allowed where `nodeKey` is `node1` or `reference-value`) and `waitClass` (no provisioner).
fn capacity_classes() -> Vec<StorageClass> {
    let mut with = class(
        "waitClassWithProvisioner",
        Some(VolumeBindingMode::WaitForFirstConsumer),
    );
    with.provisioner = "test-provisioner".into();
    with.allowed_topologies = vec![crate::model::TopologySelectorTerm {
        match_label_expressions: vec![TopologySelectorLabelRequirement {
            key: "nodeKey".into(),
            values: vec!["node1".into(), "reference-value".into()],
        }],
    }];
    let mut wait = class("waitClass", Some(VolumeBindingMode::WaitForFirstConsumer));
    wait.provisioner = "kubernetes.io/no-provisioner".into();
    vec![with, wait]
}

/// VolumeBinding's outcome on binder_test.go's `testNode` (`nodeKey: node1`) for a pod with
/// the claims, given the CSIDrivers and capacities; with the claims to provision when it fits.
fn capacity_outcome(
    claims: Vec<PersistentVolumeClaim>,
    drivers: Vec<CsiDriver>,
    capacities: Vec<CsiStorageCapacity>,
) -> (Result<(), Reason>, Vec<String>) {
    let names: Vec<String> = claims.iter().map(|c| c.metadata.name.clone()).collect();
    let refs: Vec<&str> = names.iter().map(String::as_str).collect();
    let pod = pod_with_claims("test-pod", &refs);
    let mut s = StorageObjects::new();
    s.storage_classes = capacity_classes();
    s.persistent_volume_claims = claims;
    s.csi_drivers = drivers;
    s.csi_storage_capacities = capacities;
    let mut snap = snapshot(vec![node("node1", &[("nodeKey", "node1")])], vec![], s);
    let (skipped, res) = run(&VolumeBinding::new(), &pod, &snap, V1_34);
    assert!(!skipped);
    let provisions = match assume_volumes(
        &mut snap,
        VolumeBinding::new().binder(),
        &pod,
        "node1",
        V1_34,
    ) {
        Ok(a) => a
            .provisions()
            .iter()
            .map(|c| c.metadata.name.clone())
            .collect(),
        Err(_) => Vec::new(),
    };
    (res[0], provisions)
}

/// binder_test.go's `provisionedPVC`: 1Gi of `waitClassWithProvisioner`.
fn provisioned_pvc() -> PersistentVolumeClaim {
    make_pvc("provisioned-pvc", "waitClassWithProvisioner", "", "1Gi")
}

const SPACE: u8 = VolumeBindingConflicts::NOT_ENOUGH_SPACE;

/// kube v1.34 `binder_test.go` TestCapacity: every scenario, with the CSIDriver opted in
/// (`storageCapacity: true`, the scenario's reasons) and out (`false`: no reasons, the claim
/// is provisioned).
#[test]
fn capacity() {
    const SC: &str = "waitClassWithProvisioner";
    let network_attached = || make_capacity("net", SC, None, "1Gi", "");
    let node1_capacity = || make_capacity("net", SC, Some("node1"), "1Gi", "");
    let node2_capacity = || make_capacity("net", SC, Some("node2"), "1Gi", "");
    // (name, capacities, fits when opted in)
    let scenarios: Vec<(&str, Vec<CsiStorageCapacity>, bool)> = vec![
        ("network-attached", vec![network_attached()], true),
        ("local-storage", vec![node1_capacity()], true),
        (
            "multiple",
            vec![
                network_attached(),
                make_capacity("net2", SC, Some("node2"), "1Gi", ""),
                make_capacity("net3", SC, Some("node1"), "1Gi", ""),
            ],
            true,
        ),
        ("no-storage", vec![], false),
        ("wrong-node", vec![node2_capacity()], false),
        (
            "wrong-storage-class",
            vec![make_capacity("net", "waitClass", Some("node1"), "1Gi", "")],
            false,
        ),
        (
            "insufficient-storage",
            vec![make_capacity("net", SC, Some("node1"), "1Mi", "")],
            false,
        ),
        (
            "insufficient-volume-size",
            vec![make_capacity("net", SC, Some("node1"), "1Gi", "1Mi")],
            false,
        ),
        (
            "zero-storage",
            vec![make_capacity("net", SC, Some("node1"), "0Mi", "")],
            false,
        ),
        (
            "zero-volume-size",
            vec![make_capacity("net", SC, Some("node1"), "", "0Mi")],
            false,
        ),
        (
            "nil-storage",
            vec![make_capacity("net", SC, Some("node1"), "", "")],
            false,
        ),
    ];
    assert_eq!(scenarios.len(), 11);
    for opt_in in [true, false] {
        for (name, capacities, fits) in &scenarios {
            let got = capacity_outcome(
                vec![provisioned_pvc()],
                vec![make_csi_driver("test-provisioner", opt_in)],
                capacities.clone(),
            );
            let want = if *fits || !opt_in {
                (Ok(()), vec!["provisioned-pvc".to_string()])
            } else {
                (conflicts(SPACE), vec![])
            };
            assert_eq!(got, want, "CSIDriver.StorageCapacity={opt_in}/{name}");
        }
    }
}

/// kube's `hasEnoughCapacity` beyond TestCapacity's table: no CSIDriver object, a claim with
/// no storage request, a capacity without `nodeTopology` (kube's `nodeHasAccess`: no node),
/// a `maximumVolumeSize` preferred over a larger `capacity`, a request of exactly the limit;
/// and `checkVolumeProvisions`: the first claim that cannot be provisioned decides.
#[test]
fn capacity_edges() {
    const SC: &str = "waitClassWithProvisioner";
    let driver = || vec![make_csi_driver("test-provisioner", true)];
    let pvc = provisioned_pvc;
    // No CSIDriver object: no check.
    assert_eq!(
        capacity_outcome(vec![pvc()], vec![], vec![]).0,
        Ok(()),
        "no CSIDriver"
    );
    // A driver of another name does not count.
    assert_eq!(
        capacity_outcome(vec![pvc()], vec![make_csi_driver("other", true)], vec![]).0,
        Ok(()),
        "another driver"
    );
    // Opted in, `storageCapacity` unset: false.
    let mut unset = make_csi_driver("test-provisioner", true);
    unset.spec.storage_capacity = None;
    assert_eq!(
        capacity_outcome(vec![pvc()], vec![unset], vec![]).0,
        Ok(()),
        "storageCapacity unset"
    );
    // No storage request: nothing to check.
    assert_eq!(
        capacity_outcome(
            vec![make_pvc("provisioned-pvc", SC, "", "")],
            driver(),
            vec![]
        )
        .0,
        Ok(()),
        "no request"
    );
    // No nodeTopology: reachable from no node.
    let mut unreachable = make_capacity("net", SC, None, "1Gi", "");
    unreachable.node_topology = None;
    assert_eq!(
        capacity_outcome(vec![pvc()], driver(), vec![unreachable]).0,
        conflicts(SPACE),
        "nil nodeTopology"
    );
    // maximumVolumeSize decides over a larger capacity; exactly the request is enough.
    assert_eq!(
        capacity_outcome(
            vec![pvc()],
            driver(),
            vec![make_capacity("net", SC, Some("node1"), "1Ti", "1Gi")]
        )
        .0,
        Ok(()),
        "maximumVolumeSize of exactly the request"
    );
    assert_eq!(
        capacity_outcome(
            vec![pvc()],
            driver(),
            vec![make_capacity("net", SC, Some("node1"), "1Ti", "1023Mi")]
        )
        .0,
        conflicts(SPACE),
        "maximumVolumeSize under the request"
    );
    // An invalid selector (kube's LabelSelectorAsSelector fails) reaches no node.
    let mut bad = make_capacity("net", SC, Some("node1"), "1Gi", "");
    bad.node_topology = Some(LabelSelector {
        match_expressions: vec![crate::model::LabelSelectorRequirement {
            key: "nodeKey".into(),
            operator: crate::model::LabelSelectorOperator::In,
            values: vec![],
        }],
        ..LabelSelector::default()
    });
    assert_eq!(
        capacity_outcome(vec![pvc()], driver(), vec![bad]).0,
        conflicts(SPACE),
        "invalid nodeTopology"
    );
    // Claims to provision in turn (smallest request first): the first that fails decides.
    let small_no_space = make_pvc("a-small", SC, "", "1Gi");
    let big_wrong_class = make_pvc("b-big", "waitClass", "", "2Gi");
    assert_eq!(
        capacity_outcome(vec![small_no_space, big_wrong_class], driver(), vec![]).0,
        conflicts(SPACE),
        "capacity fails first"
    );
    let small_wrong_class = make_pvc("a-small", "waitClass", "", "1Gi");
    let big_no_space = make_pvc("b-big", SC, "", "2Gi");
    assert_eq!(
        capacity_outcome(vec![small_wrong_class, big_no_space], driver(), vec![]).0,
        conflicts(BIND),
        "no provisioner first"
    );
}

/// The FitError summary of a node without free storage is kube's.
#[test]
fn not_enough_space_text() {
    assert_eq!(
        text(Reason::VolumeBinding(VolumeBindingConflicts(SPACE)), V1_34),
        "node(s) did not have enough free storage"
    );
    assert_eq!(
        text(
            Reason::VolumeBinding(VolumeBindingConflicts(
                NODE | SPACE | VolumeBindingConflicts::BOUND_TO_MISSING_VOLUME
            )),
            V1_34
        ),
        "node(s) didn't match PersistentVolume's node affinity; node(s) did not have enough \
         free storage; node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
    );
}

/// Kind 5, PreFilter rejections of the whole pod: kube v1.34's `wantPreFilterStatus` texts of
/// TestVolumeBinding (the claim named), and the other checks of `podHasPVCs` and
/// `GetPodVolumeClaims` with kube's wording. A v1.20 profile fails every node instead.
#[test]
fn pre_filter_rejections() {
    let rejected = |pod: &Pod,
                    pvcs: Vec<PersistentVolumeClaim>,
                    pvs: Vec<PersistentVolume>,
                    extra: Vec<StorageClass>,
                    v: KubeVersion| {
        let mut s = StorageObjects::new();
        s.storage_classes = classes();
        s.storage_classes.extend(extra);
        s.persistent_volume_claims = pvcs;
        s.persistent_volumes = pvs;
        let snap = snapshot(vec![make_node("node-a", &[])], vec![], s);
        rejection(&VolumeBinding::new(), pod, &snap, v)
    };
    let pod = |claims: &[&str]| pod_with_claims("pod-a", claims);
    let not_found = VolumeProblem::ClaimNotFound;
    assert_eq!(
        rejected(&pod(&["pvc-a"]), vec![], vec![], vec![], V1_34),
        Some((
            Reason::Volume(not_found),
            r#"persistentvolumeclaim "pvc-a" not found"#.to_string()
        )),
        "PVC does not exist"
    );
    assert_eq!(
        rejected(
            &pod(&["pvc-a", "pvc-b"]),
            vec![make_pvc("pvc-a", "wait-sc", "pv-a", "")],
            vec![],
            vec![],
            V1_34
        ),
        Some((
            Reason::Volume(not_found),
            r#"persistentvolumeclaim "pvc-b" not found"#.to_string()
        )),
        "Part of PVCs do not exist"
    );
    assert_eq!(
        rejected(
            &pod(&["pvc-a"]),
            vec![make_pvc("pvc-a", "immediate-sc", "", "")],
            vec![],
            vec![],
            V1_34
        ),
        Some((
            Reason::UnboundImmediateClaims,
            "pod has unbound immediate PersistentVolumeClaims".to_string()
        )),
        "immediate claims not bound"
    );
    let mut lost = make_pvc("pvc-a", "wait-sc", "pv-a", "");
    lost.status.phase = "Lost".into();
    assert_eq!(
        rejected(&pod(&["pvc-a"]), vec![lost.clone()], vec![], vec![], V1_34),
        Some((
            Reason::Volume(VolumeProblem::ClaimLost),
            r#"persistentvolumeclaim "pvc-a" bound to non-existent persistentvolume "pv-a""#
                .to_string()
        )),
        "pv not found claim lost"
    );
    // kube v1.34 rejects a Lost claim whether or not its volume exists.
    assert_eq!(
        rejected(
            &pod(&["pvc-a"]),
            vec![lost],
            vec![make_pv("pv-a", "wait-sc", "Bound", "", &[])],
            vec![],
            V1_34
        )
        .map(|r| r.0),
        Some(Reason::Volume(VolumeProblem::ClaimLost))
    );
    // A claim that names its volume but whose binding the PV controller has not completed
    // (no `pv.kubernetes.io/bind-completed`: kube's `isPVCFullyBound`) waits as an Immediate
    // one does, whether or not the volume is pre-bound to it.
    let mut prebound = make_pvc("pvc-a", "wait-sc", "pv-a", "");
    prebound.metadata.annotations.clear();
    let mut pv_a = make_pv("pv-a", "wait-sc", "Available", "", &[]);
    pv_a.spec.claim_ref = Some(crate::model::ClaimReference {
        namespace: "default".into(),
        name: "pvc-a".into(),
        uid: String::new(),
    });
    assert_eq!(
        rejected(&pod(&["pvc-a"]), vec![prebound], vec![pv_a], vec![], V1_34),
        Some((
            Reason::UnboundImmediateClaims,
            "pod has unbound immediate PersistentVolumeClaims".to_string()
        )),
        "prebound claim"
    );
    let mut deleting = make_pvc("pvc-a", "wait-sc", "pv-a", "");
    deleting.metadata.deletion_timestamp = Some("2025-01-01T00:00:00Z".into());
    assert_eq!(
        rejected(&pod(&["pvc-a"]), vec![deleting], vec![], vec![], V1_34).map(|r| r.1),
        Some(r#"persistentvolumeclaim "pvc-a" is being deleted"#.to_string())
    );
    // A missing claim is named before a problem of another claim's class (podHasPVCs runs
    // over every claim first).
    assert_eq!(
        rejected(
            &pod(&["pvc-a", "pvc-b"]),
            vec![make_pvc("pvc-a", "no-mode-sc", "", "")],
            vec![],
            vec![class("no-mode-sc", None)],
            V1_34
        )
        .map(|r| r.1),
        Some(r#"persistentvolumeclaim "pvc-b" not found"#.to_string())
    );
    // A class without a binding mode is an error in kube (the attempt fails, no FitError).
    let mut s = StorageObjects::new();
    s.storage_classes = vec![class("no-mode-sc", None)];
    s.persistent_volume_claims = vec![make_pvc("pvc-a", "no-mode-sc", "", "")];
    let snap = snapshot(vec![make_node("node-a", &[])], vec![], s);
    let e = VolumeBinding::new()
        .prepare(&CycleContext::for_version(&pod(&["pvc-a"]), &snap, V1_34))
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        r#"plugin VolumeBinding: invalid input: VolumeBindingMode not set for StorageClass "no-mode-sc""#
    );
    // v1.20: no rejection in PreFilter; every node fails with the reason (its FitError
    // counts them).
    assert_eq!(
        rejected(
            &pod(&["pvc-a"]),
            vec![make_pvc("pvc-a", "immediate-sc", "", "")],
            vec![],
            vec![],
            V1_20
        ),
        None
    );
}
