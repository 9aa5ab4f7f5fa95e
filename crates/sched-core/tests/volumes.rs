//! The volume predicates end to end: the sample cluster with its stateful workload
//! (`examples/data/stateful.json`), through kube's default Policy (v1.20.2) and kube v1.34's
//! default configuration.

use std::path::PathBuf;

use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::framework::KubeVersion;
use sched_core::model::{Pod, Role, load_file};
use sched_core::plugins::volume;
use sched_core::policy::Policy;
use sched_core::profile::{Profile, ScheduleError};
use sched_core::snapshot::Snapshot;

fn example(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../examples/data")
        .join(name)
}

/// The sample cluster, its bound pods, the storage objects, and the stateful pods.
fn cluster() -> (Snapshot, Vec<Pod>) {
    let mut objects = load_file(example("cluster.json"), Role::Nodes).unwrap();
    objects.extend(load_file(example("pods.json"), Role::Pods).unwrap());
    objects.extend(load_file(example("stateful.json"), Role::Mixed).unwrap());
    let cluster = objects.into_cluster().unwrap();
    let mut snapshot = Snapshot::from_objects(cluster.nodes, cluster.bound).unwrap();
    snapshot.set_workloads(cluster.workloads);
    snapshot.set_storage(cluster.storage);
    let stateful = cluster
        .pending
        .into_iter()
        .filter(|p| ["db-0", "db-1", "cache-0", "report-job"].contains(&p.metadata.name.as_str()))
        .collect();
    (snapshot, stateful)
}

fn feasible(profile: &Profile, snapshot: &Snapshot, pod: &Pod) -> Vec<String> {
    let mut cache = profile.create_cache();
    match profile.schedule(&mut cache, pod, snapshot) {
        Ok(_) => {
            let table = profile.last_scores(&cache);
            let mut names: Vec<String> = (0..table.len())
                .map(|i| snapshot.node_infos()[table.row(i).0].name().to_string())
                .collect();
            names.sort();
            names
        }
        Err(ScheduleError::Unschedulable(_)) => Vec::new(),
        Err(e) => panic!("{}: {e}", pod.key()),
    }
}

#[test]
fn the_stateful_sample_lands_where_its_volumes_allow() {
    let legacy = Policy::kube_default()
        .builder()
        .unwrap()
        .percentage_of_nodes_to_score(100)
        .build()
        .unwrap();
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 100\n",
    )
    .unwrap()
    .compile(&Registry::v1_34())
    .unwrap();
    let v1_34 = config.for_pod(&Pod::default()).unwrap();
    for (profile, version) in [(&legacy, KubeVersion::V1_20), (v1_34, KubeVersion::V1_34)] {
        check(profile, version);
    }
}

fn check(profile: &Profile, version: KubeVersion) {
    let (mut snapshot, pods) = cluster();
    let by_name = |n: &str| pods.iter().find(|p| p.metadata.name == n).unwrap().clone();
    {
        // db-0's volume is in eu-west-1b: NoVolumeZoneConflict / VolumeZone and the PV's node
        // affinity leave the two zone-b nodes.
        assert_eq!(
            feasible(profile, &snapshot, &by_name("db-0")),
            ["ip-10-0-2-21", "ip-10-0-2-44"],
            "{version:?}"
        );
        // db-1's claim is provisioned within allowedTopologies (zones a and b).
        assert_eq!(
            feasible(profile, &snapshot, &by_name("db-1")),
            [
                "ip-10-0-1-12",
                "ip-10-0-1-37",
                "ip-10-0-2-21",
                "ip-10-0-2-44"
            ],
            "{version:?}"
        );
        // cache-0's only local volume is on ip-10-0-3-19.
        assert_eq!(
            feasible(profile, &snapshot, &by_name("cache-0")),
            ["ip-10-0-3-19"],
            "{version:?}"
        );
        // report-job's claim has no class and is unbound: an Immediate claim.
        let report = by_name("report-job");
        let mut cache = profile.create_cache();
        let err = profile
            .schedule(&mut cache, &report, &snapshot)
            .unwrap_err();
        assert!(
            err.to_string()
                .contains("pod has unbound immediate PersistentVolumeClaims"),
            "{err}"
        );
        // A second pod for cache-0's claim finds the local volume taken once cache-0 is placed.
        let cache0 = by_name("cache-0");
        let binder = profile.volume_binder().expect("VolumeBinding");
        let assumed =
            volume::assume_volumes(&mut snapshot, binder, &cache0, "ip-10-0-3-19", version)
                .unwrap();
        let mut twin = cache0.clone();
        twin.spec.volumes[0]
            .persistent_volume_claim
            .as_mut()
            .unwrap()
            .claim_name = "nvme-cache-1".into();
        let mut claim = snapshot
            .storage()
            .pvc("shop", "nvme-cache-0")
            .unwrap()
            .clone();
        claim.metadata.name = "nvme-cache-1".into();
        snapshot.storage_mut().upsert_pvc(claim);
        assert!(
            feasible(profile, &snapshot, &twin).is_empty(),
            "{version:?}"
        );
        volume::forget_volumes(&mut snapshot, assumed);
        assert_eq!(
            feasible(profile, &snapshot, &twin),
            ["ip-10-0-3-19"],
            "{version:?}"
        );
        snapshot.storage_mut().remove_pvc("shop", "nvme-cache-1");
    }
}
