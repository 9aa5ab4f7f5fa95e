//! Builders and runners shared by the volume plugin tests.

use crate::framework::{CycleContext, KubeVersion, Predicate, Prepared, Reason};
use crate::model::{
    Node, PersistentVolume, PersistentVolumeClaim, PersistentVolumeClaimSource, Pod, Quantity,
    StorageClass, StorageObjects, Volume, VolumeBindingMode,
};
use crate::snapshot::Snapshot;

pub(crate) fn labels(pairs: &[(&str, &str)]) -> std::collections::BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

pub(crate) fn node(name: &str, l: &[(&str, &str)]) -> Node {
    let mut n = Node::default();
    n.metadata.name = name.into();
    n.metadata.labels = labels(l);
    n
}

pub(crate) fn pvc_volume(name: &str, claim: &str) -> Volume {
    Volume {
        name: name.into(),
        persistent_volume_claim: Some(PersistentVolumeClaimSource {
            claim_name: claim.into(),
            read_only: false,
        }),
        ..Volume::default()
    }
}

pub(crate) fn pod_with(name: &str, volumes: Vec<Volume>) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = name.into();
    p.metadata.namespace = "default".into();
    p.metadata.uid = format!("{name}-uid");
    p.spec.volumes = volumes;
    p
}

/// A pod in `default` using the claims.
pub(crate) fn pod_with_claims(name: &str, claims: &[&str]) -> Pod {
    pod_with(
        name,
        claims
            .iter()
            .enumerate()
            .map(|(i, c)| pvc_volume(&format!("vol{i}"), c))
            .collect(),
    )
}

pub(crate) fn pv(name: &str, l: &[(&str, &str)]) -> PersistentVolume {
    let mut pv = PersistentVolume::default();
    pv.metadata.name = name.into();
    pv.metadata.labels = labels(l);
    pv
}

/// A claim in `default`; bound to `volume` (with the PV controller's
/// `pv.kubernetes.io/bind-completed`, as kube's `withBoundPV`) when that is not empty.
pub(crate) fn pvc(name: &str, volume: &str) -> PersistentVolumeClaim {
    let mut c = PersistentVolumeClaim::default();
    c.metadata.name = name.into();
    c.metadata.namespace = "default".into();
    c.spec.volume_name = volume.into();
    if !volume.is_empty() {
        c.metadata
            .annotations
            .insert("pv.kubernetes.io/bind-completed".into(), "true".into());
    }
    c
}

pub(crate) fn pvc_of_class(name: &str, class: Option<&str>) -> PersistentVolumeClaim {
    let mut c = pvc(name, "");
    c.spec.storage_class_name = class.map(str::to_string);
    c
}

pub(crate) fn class(name: &str, mode: Option<VolumeBindingMode>) -> StorageClass {
    let mut sc = StorageClass::default();
    sc.metadata.name = name.into();
    sc.volume_binding_mode = mode;
    sc
}

pub(crate) fn storage_quantity(q: &str) -> Quantity {
    q.parse().unwrap()
}

/// A snapshot of `nodes`, `pods[i]` bound to `nodes[pods[i].0]`, and the storage objects.
pub(crate) fn snapshot(
    nodes: Vec<Node>,
    pods: Vec<(usize, Pod)>,
    storage: StorageObjects,
) -> Snapshot {
    let names: Vec<String> = nodes.iter().map(|n| n.metadata.name.clone()).collect();
    let pods = pods
        .into_iter()
        .map(|(n, mut p)| {
            p.spec.node_name = names[n].clone();
            p
        })
        .collect();
    let mut s = Snapshot::from_objects(nodes, pods).unwrap();
    s.set_storage(storage);
    s
}

/// Prepares `p` for `pod` under `version` and filters every node (a skip passes every node;
/// the bool says whether it skipped).
pub(crate) fn run(
    p: &impl Predicate,
    pod: &Pod,
    snap: &Snapshot,
    version: KubeVersion,
) -> (bool, Vec<Result<(), Reason>>) {
    let cx = CycleContext::for_version(pod, snap, version);
    match p.prepare(&cx).unwrap() {
        Prepared::Skip | Prepared::Pass => (true, vec![Ok(()); snap.len()]),
        Prepared::Run(state) => (
            false,
            (0..snap.len())
                .map(|i| p.filter(&cx, &state, snap.node(i)))
                .collect(),
        ),
        // A rejection of the pod: every node fails with its reason, as the profile reports
        // it (`rejection` gives the message).
        Prepared::Reject(r) => (false, vec![Err(r.reason()); snap.len()]),
        Prepared::RunOn(..) => unreachable!("the volume plugins do not narrow the nodes"),
    }
}

/// kube's text for a reason.
pub(crate) fn text(r: Reason, version: KubeVersion) -> String {
    let mut out = Vec::new();
    r.write_messages(version, &Default::default(), &Node::default(), &mut |m| {
        out.push(m.into_owned())
    });
    out.join("; ")
}

/// The pod's rejection by `p` in PreFilter under `version`, if any: reason and kube's text.
pub(crate) fn rejection(
    p: &impl Predicate,
    pod: &Pod,
    snap: &Snapshot,
    version: KubeVersion,
) -> Option<(Reason, String)> {
    let cx = CycleContext::for_version(pod, snap, version);
    match p.prepare(&cx).unwrap() {
        Prepared::Reject(r) => Some((r.reason(), r.message().to_string())),
        _ => None,
    }
}
