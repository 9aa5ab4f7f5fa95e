//! Inter-pod affinity on a snapshot that pods joined and left in any order decides exactly as
//! on a snapshot built afresh from the pods that remain: the per-pod ids of affinity terms and
//! the counts per topology domain the snapshot keeps for them stay right through assume,
//! forget and update.

use proptest::prelude::*;
use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
use sched_core::model::Pod;
use sched_core::policy::Policy;
use sched_core::profile::Profile;
use sched_core::snapshot::Snapshot;

fn profile() -> Profile {
    let mut policy = Policy::kube_default();
    policy.percentage_of_nodes_to_score = Some(100);
    policy
        .builder()
        .unwrap()
        .threads(1)
        .seed(3)
        .build()
        .unwrap()
}

/// A pod of one of a few workloads: app label, namespace and affinity terms vary together, so
/// that many pods share a set of terms and some do not.
fn workload_pod(i: usize, app: u8, ns: u8, kind: u8) -> Pod {
    let mut p = benchmark_pod(i);
    p.metadata.namespace = format!("ns-{ns}");
    p.metadata.labels.insert("app".into(), format!("app-{app}"));
    let selector = serde_json::json!({"matchLabels": {"app": format!("app-{}", (app + 1) % 3)}});
    let mut term = serde_json::json!({
        "labelSelector": selector,
        "topologyKey": if kind.is_multiple_of(2) { "topology.kubernetes.io/zone" } else { "kubernetes.io/hostname" },
    });
    // Without `namespaces` a term covers its own pod's namespace only.
    if app == 1 {
        term["namespaces"] = serde_json::json!(["ns-0", "ns-1"]);
    }
    let affinity = match kind {
        0 => {
            serde_json::json!({"podAntiAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 10, "podAffinityTerm": term}]}})
        }
        1 => {
            serde_json::json!({"podAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 5, "podAffinityTerm": term}]}})
        }
        2 => {
            serde_json::json!({"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
        }
        3 => {
            serde_json::json!({"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}})
        }
        _ => serde_json::Value::Null,
    };
    p.spec.affinity = serde_json::from_value(affinity).unwrap();
    p
}

#[derive(Clone, Debug)]
enum Op {
    Place { app: u8, ns: u8, kind: u8 },
    Forget(usize),
    Relabel(usize, u8),
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        prop_oneof![
            3 => (0u8..3, 0u8..2, 0u8..6).prop_map(|(app, ns, kind)| Op::Place { app, ns, kind }),
            1 => any::<usize>().prop_map(Op::Forget),
            1 => (any::<usize>(), 0u8..3).prop_map(|(i, app)| Op::Relabel(i, app)),
        ],
        1..40,
    )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn churned_and_fresh_snapshots_decide_alike(nodes in 3usize..12, ops in ops(), probe in (0u8..3, 0u8..2, 0u8..6)) {
        let p = profile();
        let (ns, running) = benchmark_cluster(nodes);
        let mut churned = Snapshot::from_objects(ns.clone(), running.clone()).unwrap();
        let mut cache = p.create_cache();
        let mut placed: Vec<sched_core::model::PodKey> = Vec::new();
        for (i, op) in ops.iter().enumerate() {
            match op {
                Op::Place { app, ns, kind } => {
                    let pod = workload_pod(i, *app, *ns, *kind);
                    if p.schedule_and_assume(&mut cache, &pod, &mut churned).is_ok() {
                        placed.push(pod.key());
                    }
                }
                Op::Forget(k) if !placed.is_empty() => {
                    let key = placed.remove(k % placed.len());
                    churned.forget(&key).unwrap();
                }
                Op::Relabel(k, app) if !placed.is_empty() => {
                    let key = &placed[k % placed.len()];
                    let node = churned.node_of(key).unwrap().to_string();
                    let info = churned.get(&node).unwrap();
                    let mut pod = info.pods().iter().find(|q| q.key() == key).unwrap().pod().clone();
                    pod.metadata.labels.insert("app".into(), format!("app-{app}"));
                    churned.update_pod(pod).unwrap();
                }
                _ => {}
            }
        }
        // The same pods, placed afresh.
        let mut pods = running;
        for info in churned.node_infos() {
            for q in info.pods() {
                if placed.iter().any(|k| k == q.key()) {
                    pods.push(q.pod().clone());
                }
            }
        }
        let fresh = Snapshot::from_objects(ns, pods).unwrap();
        let probe = workload_pod(10_000, probe.0, probe.1, probe.2);
        let (mut ca, mut cb) = (p.create_cache(), p.create_cache());
        let a = p.schedule(&mut ca, &probe, &churned).map_err(|e| e.to_string());
        let b = p.schedule(&mut cb, &probe, &fresh).map_err(|e| e.to_string());
        prop_assert_eq!(&a, &b);
        if a.is_ok() {
            let (ta, tb) = (p.last_scores(&ca), p.last_scores(&cb));
            let rows_a: Vec<_> = (0..ta.len()).map(|j| ta.row(j)).collect();
            let rows_b: Vec<_> = (0..tb.len()).map(|j| tb.row(j)).collect();
            prop_assert_eq!(rows_a, rows_b);
        }
    }
}
