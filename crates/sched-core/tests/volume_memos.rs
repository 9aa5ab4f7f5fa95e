//! The node memos of the volume limits are dropped exactly where a storage change can reach
//! them (`Snapshot::storage_mut_for`): after random claim, volume, CSINode and pod changes, the
//! volume limits judge every node as on a copy of the snapshot with every memo dropped, and
//! the snapshot's index of the pods using each claim matches a recount.

use proptest::prelude::*;
use sched_core::framework::KubeVersion;
use sched_core::model::{CsiNode, Node, PersistentVolume, PersistentVolumeClaim, Pod};
use sched_core::plugins::volume::{InTreeVolumeLimits, NodeVolumeLimits};
use sched_core::profile::{Profile, ProfileBuilder, ScheduleError};
use sched_core::snapshot::{Snapshot, StorageObjectRef};
use serde_json::json;

const NODES: usize = 3;
const CLAIMS: u8 = 6;
const VOLUMES: u8 = 5;

fn node(i: usize) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": format!("n{i}")},
        "status": {"allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110",
                                   "attachable-volumes-aws-ebs": "2"}}
    }))
    .unwrap()
}

fn csi_node(i: usize, limit: u8) -> CsiNode {
    serde_json::from_value(json!({
        "metadata": {"name": format!("n{i}")},
        "spec": {"drivers": [{"name": "d.csi.k8s.io", "nodeID": format!("n{i}"),
                              "allocatable": {"count": limit}}]}
    }))
    .unwrap()
}

/// A volume: CSI (`handle` picks one of three handles, so two volumes can be the same
/// attachment) or, for odd `handle`s above 2, an in-tree AWS EBS disk.
fn volume(v: u8, handle: u8) -> PersistentVolume {
    let source = if handle > 2 {
        json!({"awsElasticBlockStore": {"volumeID": format!("vol-{}", handle % 3)}})
    } else {
        json!({"csi": {"driver": "d.csi.k8s.io", "volumeHandle": format!("h{handle}")}})
    };
    let mut spec = json!({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]});
    spec.as_object_mut()
        .unwrap()
        .extend(source.as_object().unwrap().clone());
    serde_json::from_value(json!({
        "metadata": {"name": format!("pv-{v}")},
        "spec": spec,
        "status": {"phase": "Bound"}
    }))
    .unwrap()
}

fn claim(c: u8, volume: Option<u8>) -> PersistentVolumeClaim {
    let volume_name = volume.map(|v| format!("pv-{v}")).unwrap_or_default();
    serde_json::from_value(json!({
        "metadata": {"name": format!("c{c}"), "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "volumeName": volume_name,
                 "storageClassName": "",
                 "resources": {"requests": {"storage": "1Gi"}}},
        "status": {"phase": if volume.is_some() { "Bound" } else { "Pending" }}
    }))
    .unwrap()
}

fn pod(name: &str, node: Option<usize>, claims: &[u8]) -> Pod {
    let volumes: Vec<_> = claims
        .iter()
        .map(|c| json!({"name": format!("v{c}"), "persistentVolumeClaim": {"claimName": format!("c{c}")}}))
        .collect();
    let node_name = node.map(|n| format!("n{n}")).unwrap_or_default();
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"nodeName": node_name, "volumes": volumes,
                 "containers": [{"name": "c"}]}
    }))
    .unwrap()
}

#[derive(Clone, Debug)]
enum Op {
    Claim { c: u8, volume: Option<u8> },
    DeleteClaim { c: u8 },
    Volume { v: u8, handle: u8 },
    DeleteVolume { v: u8 },
    CsiNode { n: usize, limit: u8 },
    DeleteCsiNode { n: usize },
    AddPod { id: u16, n: usize, claims: Vec<u8> },
    RemovePod { which: u16 },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (0..CLAIMS, proptest::option::of(0..VOLUMES))
            .prop_map(|(c, volume)| Op::Claim { c, volume }),
        1 => (0..CLAIMS).prop_map(|c| Op::DeleteClaim { c }),
        3 => (0..VOLUMES, 0u8..5).prop_map(|(v, handle)| Op::Volume { v, handle }),
        1 => (0..VOLUMES).prop_map(|v| Op::DeleteVolume { v }),
        1 => (0..NODES, 1u8..4).prop_map(|(n, limit)| Op::CsiNode { n, limit }),
        1 => (0..NODES).prop_map(|n| Op::DeleteCsiNode { n }),
        3 => (any::<u16>(), 0..NODES, proptest::collection::vec(0..CLAIMS, 1..3))
            .prop_map(|(id, n, claims)| Op::AddPod { id, n, claims }),
        2 => any::<u16>().prop_map(|which| Op::RemovePod { which }),
    ]
}

fn apply(snapshot: &mut Snapshot, placed: &mut Vec<String>, op: &Op) {
    match op {
        Op::Claim { c, volume } => {
            let name = format!("c{c}");
            let object = StorageObjectRef::Claim {
                namespace: "default",
                name: &name,
            };
            snapshot
                .storage_mut_for(object)
                .upsert_pvc(claim(*c, *volume));
        }
        Op::DeleteClaim { c } => {
            let name = format!("c{c}");
            let object = StorageObjectRef::Claim {
                namespace: "default",
                name: &name,
            };
            snapshot
                .storage_mut_for(object)
                .remove_pvc("default", &name);
        }
        Op::Volume { v, handle } => {
            let name = format!("pv-{v}");
            snapshot
                .storage_mut_for(StorageObjectRef::Volume(&name))
                .upsert_pv(volume(*v, *handle));
        }
        Op::DeleteVolume { v } => {
            let name = format!("pv-{v}");
            snapshot
                .storage_mut_for(StorageObjectRef::Volume(&name))
                .remove_pv(&name);
        }
        Op::CsiNode { n, limit } => {
            let name = format!("n{n}");
            snapshot
                .storage_mut_for(StorageObjectRef::CsiNode(&name))
                .upsert_csi_node(csi_node(*n, *limit));
        }
        Op::DeleteCsiNode { n } => {
            let name = format!("n{n}");
            snapshot
                .storage_mut_for(StorageObjectRef::CsiNode(&name))
                .remove_csi_node(&name);
        }
        Op::AddPod { id, n, claims } => {
            let p = pod(&format!("p{id}"), Some(*n), claims);
            let key = p.key().to_string();
            if snapshot.add_pod(p).is_ok() {
                placed.push(key);
            }
        }
        Op::RemovePod { which } => {
            if !placed.is_empty() {
                let key = placed.remove(*which as usize % placed.len());
                snapshot.remove_pod(&key).unwrap();
            }
        }
    }
}

/// The nodes `profile` finds feasible for `pod`, or the error.
fn judged(profile: &Profile, snapshot: &Snapshot, pod: &Pod) -> Result<Vec<String>, String> {
    let mut cache = profile.create_cache();
    match profile.schedule(&mut cache, pod, snapshot) {
        Ok(_) => {
            let table = profile.last_scores(&cache);
            let mut names: Vec<String> = (0..table.len())
                .map(|i| snapshot.node_infos()[table.row(i).0].name().to_string())
                .collect();
            names.sort();
            Ok(names)
        }
        Err(ScheduleError::Unschedulable(e)) => Err(e.to_string()),
        Err(e) => Err(e.to_string()),
    }
}

fn limits(version: KubeVersion) -> Profile {
    ProfileBuilder::new()
        .predicate(NodeVolumeLimits::new())
        .predicate(InTreeVolumeLimits::ebs())
        .kube_version(version)
        .build()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn targeted_memo_drops_judge_as_a_snapshot_without_memos(
        ops in proptest::collection::vec(op(), 1..40),
    ) {
        let profiles = [limits(KubeVersion::V1_20), limits(KubeVersion::V1_34)];
        let mut snapshot = Snapshot::from_objects((0..NODES).map(node).collect(), vec![]).unwrap();
        let mut placed = Vec::new();
        let probes: Vec<Pod> = (0..CLAIMS).map(|c| pod("probe", None, &[c])).collect();
        for (step, op) in ops.iter().enumerate() {
            apply(&mut snapshot, &mut placed, op);
            snapshot.check_claim_index().map_err(TestCaseError::fail)?;
            let mut fresh = snapshot.clone();
            // Every memo dropped: the volume limits compute each node anew.
            fresh.storage_mut();
            for profile in &profiles {
                for probe in &probes {
                    // The live snapshot fills its memos here, for the next step to keep or drop.
                    prop_assert_eq!(
                        judged(profile, &snapshot, probe),
                        judged(profile, &fresh, probe),
                        "step {} ({:?}), probe {:?}", step, op, probe.spec.volumes[0].name
                    );
                }
            }
        }
    }
}
