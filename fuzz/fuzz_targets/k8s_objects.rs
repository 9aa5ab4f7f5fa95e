//! Kubernetes NodeList / PodList JSON, the snapshot built from them, and scheduling on it.
//!
//! The input is `<nodes JSON>\n---\n<pods JSON>[\n---\n<workloads JSON>]`: without a
//! separator the whole input is read as both nodes and pods; the optional third part is a JSON
//! array of `Workload`s (services and controllers, for the spreading priorities). Invariants
//! checked on every input:
//! - `load_node_list`, `load_pod_list`, `Snapshot::from_objects` and error formatting never
//!   panic;
//! - a snapshot holds every node, and every pod is either placed or counted as skipped;
//! - scheduling the pending pods one after the other (each assumed onto its node) with every
//!   built-in predicate and priority (a Policy listing them all, compiled) never panics, never
//!   yields an out-of-range score, picks a node of the snapshot that really passed
//!   filtering, and is deterministic for a seed.

#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sched_core::model::{Pod, Workload, load_node_list, load_pod_list};
use sched_core::policy::Policy;
use sched_core::profile::{Profile, ScheduleError, ScheduleResult};
use sched_core::snapshot::Snapshot;

/// Every built-in predicate and priority, those that take arguments with one.
const ALL_BUILTINS: &str = r#"{
  "kind": "Policy", "apiVersion": "v1",
  "alwaysCheckAllPredicates": true,
  "percentageOfNodesToScore": 100,
  "hardPodAffinitySymmetricWeight": 10,
  "predicates": [
    {"name": "CheckNodeCondition"}, {"name": "CheckNodeUnschedulable"},
    {"name": "GeneralPredicates"}, {"name": "NoDiskConflict"},
    {"name": "PodToleratesNodeTaints"}, {"name": "CheckNodeMemoryPressure"},
    {"name": "CheckNodePIDPressure"}, {"name": "CheckNodeDiskPressure"},
    {"name": "MatchInterPodAffinity"},
    {"name": "NoGPU", "argument": {"labelsPresence": {"labels": ["nvidia.com/gpu"], "presence": false}}},
    {"name": "HasOS", "argument": {"labelsPresence": {"labels": ["kubernetes.io/os"], "presence": true}}}
  ],
  "priorities": [
    {"name": "LeastRequestedPriority", "weight": 1},
    {"name": "MostRequestedPriority", "weight": 1},
    {"name": "BalancedResourceAllocation", "weight": 1},
    {"name": "SelectorSpreadPriority", "weight": 1},
    {"name": "ServiceSpreadingPriority", "weight": 1},
    {"name": "InterPodAffinityPriority", "weight": 1},
    {"name": "NodeAffinityPriority", "weight": 1},
    {"name": "TaintTolerationPriority", "weight": 1},
    {"name": "ImageLocalityPriority", "weight": 1},
    {"name": "NodePreferAvoidPodsPriority", "weight": 10000},
    {"name": "ResourceLimitsPriority", "weight": 1},
    {"name": "EqualPriority", "weight": 1},
    {"name": "PreferSSD", "weight": 2, "argument": {"labelPreference": {"label": "disktype", "presence": true}}},
    {"name": "AvoidSpot", "weight": 2, "argument": {"labelPreference": {"label": "spot", "presence": false}}},
    {"name": "SpreadZones", "weight": 3, "argument": {"serviceAntiAffinity": {"label": "topology.kubernetes.io/zone"}}},
    {"name": "RequestedToCapacityRatioPriority", "weight": 2, "argument": {"requestedToCapacityRatioArguments": {
      "shape": [{"utilization": 0, "score": 0}, {"utilization": 70, "score": 10}, {"utilization": 100, "score": 3}],
      "resources": [{"name": "cpu", "weight": 2}, {"name": "memory", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 5}]}}}
  ]
}"#;

fn policy() -> &'static Policy {
    static P: OnceLock<Policy> = OnceLock::new();
    P.get_or_init(|| Policy::from_json(ALL_BUILTINS).expect("the all-built-ins policy is valid"))
}

/// At most this many pending pods are scheduled per input.
const MAX_PENDING: usize = 4;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut parts = text.splitn(3, "\n---\n");
    let head = parts.next().unwrap_or_default();
    let (nodes_json, pods_json) = (head, parts.next().unwrap_or(head));
    let workloads: Vec<Workload> = match parts.next().map(serde_json::from_str) {
        None => Vec::new(),
        Some(Ok(w)) => w,
        Some(Err(_)) => return,
    };
    let nodes = load_node_list(nodes_json);
    let pods = load_pod_list(pods_json);
    let (nodes, pods) = match (nodes, pods) {
        (Ok(n), Ok(p)) => (n, p),
        (n, p) => {
            // Error messages name the object and field: formatting them must not panic.
            let _ = n.err().map(|e| e.to_string());
            let _ = p.err().map(|e| e.to_string());
            return;
        }
    };
    for n in &nodes {
        let _ = n.name();
    }
    let (node_count, pod_count) = (nodes.len(), pods.len());
    let pending: Vec<Pod> = pods
        .iter()
        .filter(|p| p.spec.node_name.is_empty())
        .take(MAX_PENDING)
        .cloned()
        .collect();
    let mut snapshot = match Snapshot::from_objects(nodes, pods) {
        Ok(s) => s,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    assert_eq!(snapshot.len(), node_count);
    assert_eq!(snapshot.pod_count() + snapshot.skipped_pods(), pod_count);
    snapshot.set_workloads(workloads);

    let first = schedule_all(snapshot.clone(), &pending);
    let second = schedule_all(snapshot, &pending);
    assert_eq!(
        first, second,
        "scheduling is not deterministic for one seed"
    );
});

/// Schedules and assumes the pods in order; returns each outcome (node, or error text).
fn schedule_all(mut snapshot: Snapshot, pods: &[Pod]) -> Vec<Result<ScheduleResult, String>> {
    let profile = profile();
    let mut cache = profile.create_cache();
    let mut out = Vec::new();
    for pod in pods {
        let before = snapshot.pod_count();
        match profile.schedule_and_assume(&mut cache, pod, &mut snapshot) {
            Ok(r) => {
                assert!(r.node_index < snapshot.len());
                assert_eq!(snapshot.node_infos()[r.node_index].name(), r.node);
                assert!(r.feasible_nodes >= 1 && r.feasible_nodes <= r.evaluated_nodes);
                assert!(r.evaluated_nodes <= snapshot.len());
                assert!(r.score >= 0);
                assert_eq!(snapshot.pod_count(), before + 1);
                out.push(Ok(r));
            }
            Err(ScheduleError::InvalidScore {
                plugin,
                node,
                score,
            }) => panic!("built-in priority {plugin} gave node {node} the score {score}"),
            Err(e) => {
                if let ScheduleError::Unschedulable(fit) = &e {
                    assert_eq!(fit.num_all_nodes, snapshot.len());
                    let _ = fit.histogram();
                }
                assert_eq!(snapshot.pod_count(), before, "a failed pod was assumed");
                out.push(Err(e.to_string()));
            }
        }
    }
    out
}

/// The all-built-ins profile, one thread, fixed seed.
fn profile() -> Profile {
    policy()
        .builder()
        .expect("the policy compiles")
        .threads(1)
        .seed(1)
        .build()
        .expect("a valid scheduler")
}
