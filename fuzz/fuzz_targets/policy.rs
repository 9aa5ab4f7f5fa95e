//! kube's legacy Policy JSON: `Policy::from_json`, `Policy::plan`, `Policy::builder` (compile).
//!
//! Invariants checked on every input:
//! - parsing, validation and error formatting never panic;
//! - a document `from_json` accepts plans, and its plan is well formed: every mandatory
//!   predicate present, no name twice, weights > 0 whose total score fits in an i64,
//!   percentage in 0..=100, symmetric weight in 1..=100, ratio shapes in range;
//! - an accepted document survives `to_json_pretty` and `from_json` unchanged, with the same
//!   plan;
//! - an accepted document compiles into a scheduler, and that scheduler schedules the pending
//!   pods of a small fixed cluster without panicking or producing an out-of-range score;
//! - any document serde alone decodes (skipping the strict key checks) plans or fails cleanly,
//!   and when it plans, the plan is well formed too.

#![no_main]

use std::collections::HashSet;
use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sched_core::formulas::{MAX_NODE_SCORE};
use sched_core::model::{Pod, Workload, load_node_list, load_pod_list};
use sched_core::policy::{
    MANDATORY_PREDICATES, MAX_CUSTOM_PRIORITY_SCORE, Policy, PolicyPlan, PriorityArgs,
};
use sched_core::profile::ScheduleError;
use sched_core::snapshot::Snapshot;

/// Three nodes (zones, a taint, a GPU, an image), two running pods, three pending ones.
const NODES: &str = r#"{"kind":"NodeList","items":[
 {"metadata":{"name":"a","labels":{"topology.kubernetes.io/zone":"z1","kubernetes.io/os":"linux","disktype":"ssd"}},
  "status":{"allocatable":{"cpu":"4","memory":"8Gi","pods":"110"},
  "images":[{"names":["nginx:1.25"],"sizeBytes":187000000}]}},
 {"metadata":{"name":"b","labels":{"topology.kubernetes.io/zone":"z2","nvidia.com/gpu":"true","rack":"r1"}},
  "spec":{"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]},
  "status":{"allocatable":{"cpu":"8","memory":"32Gi","pods":"110","nvidia.com/gpu":"2"}}},
 {"metadata":{"name":"c","labels":{"topology.kubernetes.io/zone":"z1","spot":"true","rack":"r2"}},
  "status":{"allocatable":{"cpu":"2","memory":"4Gi","pods":"10"},
  "conditions":[{"type":"Ready","status":"True"},{"type":"MemoryPressure","status":"True"}]}}]}"#;
const PODS: &str = r#"{"kind":"PodList","items":[
 {"metadata":{"name":"web-1","namespace":"default","labels":{"app":"web"}},
  "spec":{"nodeName":"a","containers":[{"name":"c","image":"nginx:1.25","resources":{"requests":{"cpu":"500m","memory":"512Mi"}},"ports":[{"containerPort":80,"hostPort":8080}]}]},
  "status":{"phase":"Running"}},
 {"metadata":{"name":"train-1","namespace":"ml","labels":{"app":"train"}},
  "spec":{"nodeName":"b","containers":[{"name":"c","resources":{"requests":{"cpu":"2","nvidia.com/gpu":"1"},"limits":{"nvidia.com/gpu":"1"}}}],
  "tolerations":[{"key":"dedicated","operator":"Equal","value":"gpu","effect":"NoSchedule"}]},
  "status":{"phase":"Running"}},
 {"metadata":{"name":"web-2","namespace":"default","labels":{"app":"web"}},
  "spec":{"containers":[{"name":"c","image":"nginx:1.25","resources":{"requests":{"cpu":"500m","memory":"512Mi"}},"ports":[{"containerPort":80,"hostPort":8080}]}],
  "affinity":{"podAntiAffinity":{"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":100,"podAffinityTerm":{"labelSelector":{"matchLabels":{"app":"web"}},"topologyKey":"kubernetes.io/hostname"}}]}}}},
 {"metadata":{"name":"train-2","namespace":"ml","labels":{"app":"train"}},
  "spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"1","memory":"2Gi","nvidia.com/gpu":"1"}}}],
  "tolerations":[{"operator":"Exists"}],
  "affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"nvidia.com/gpu","operator":"Exists"}]}]}},
   "podAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[{"labelSelector":{"matchLabels":{"app":"train"}},"topologyKey":"topology.kubernetes.io/zone"}]}}}},
 {"metadata":{"name":"tiny","namespace":"default"},"spec":{"containers":[{"name":"c"}]}}]}"#;
const WORKLOADS: &str = r#"[{"kind":"Service","namespace":"default","name":"web","selector":{"matchLabels":{"app":"web"}}},
 {"kind":"ReplicaSet","namespace":"ml","name":"train","selector":{"matchLabels":{"app":"train"}}}]"#;

/// The fixed cluster and its pending pods.
fn cluster() -> &'static (Snapshot, Vec<Pod>) {
    static C: OnceLock<(Snapshot, Vec<Pod>)> = OnceLock::new();
    C.get_or_init(|| {
        let pods = load_pod_list(PODS).expect("fixed pods");
        let pending = pods
            .iter()
            .filter(|p| p.spec.node_name.is_empty())
            .cloned()
            .collect();
        let mut snapshot =
            Snapshot::from_objects(load_node_list(NODES).expect("fixed nodes"), pods)
                .expect("fixed snapshot");
        let workloads: Vec<Workload> = serde_json::from_str(WORKLOADS).expect("fixed workloads");
        snapshot.set_workloads(workloads);
        (snapshot, pending)
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Policy::from_json(text) {
        Ok(policy) => {
            let plan = policy
                .plan()
                .unwrap_or_else(|e| panic!("from_json accepted a policy plan() refuses: {e}"));
            check_plan(&plan);
            let pretty = policy.to_json_pretty();
            let again = Policy::from_json(&pretty)
                .unwrap_or_else(|e| panic!("{pretty}\ndoes not parse again: {e}"));
            assert_eq!(again, policy, "to_json_pretty round trip");
            assert_eq!(again.plan().unwrap(), plan);
            schedule_with(&policy);
        }
        Err(e) => {
            let _ = e.to_string();
            let _ = format!("{e:?}");
        }
    }
    // Documents built in code skip the strict key checks: plan() must stand on its own.
    if let Ok(policy) = serde_json::from_str::<Policy>(text) {
        match policy.plan() {
            Ok(plan) => {
                check_plan(&plan);
                schedule_with(&policy);
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
});

/// Compiles the policy (one thread, fixed seed) and schedules the fixed pending pods.
fn schedule_with(policy: &Policy) {
    let profile = policy
        .builder()
        .unwrap_or_else(|e| panic!("a policy that plans does not compile: {e}"))
        .threads(1)
        .seed(1)
        .build()
        .unwrap_or_else(|e| panic!("a compiled policy does not build: {e}"));
    let mut cache = profile.create_cache();
    let (snapshot, pending) = cluster();
    let mut snapshot = snapshot.clone();
    for pod in pending {
        match profile.schedule_and_assume(&mut cache, pod, &mut snapshot) {
            Ok(r) => assert!(r.score >= 0 && r.node_index < snapshot.len()),
            Err(ScheduleError::InvalidScore {
                plugin,
                node,
                score,
            }) => panic!("priority {plugin} gave node {node} the score {score}"),
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
}

fn check_plan(plan: &PolicyPlan) {
    let names: Vec<&str> = plan.predicates().iter().map(|p| p.name()).collect();
    for m in MANDATORY_PREDICATES {
        assert!(
            plan.predicates().iter().any(|p| p.kind() == *m),
            "mandatory predicate {} missing from {names:?}",
            m.name()
        );
    }
    let mut seen = HashSet::new();
    for n in &names {
        assert!(seen.insert(*n), "predicate {n} listed twice in {names:?}");
    }
    let mut seen = HashSet::new();
    let mut total: i64 = 0;
    for p in plan.priorities() {
        // A repeated labelPreference or serviceAntiAffinity entry counts again, as in kube.
        let counts_again = matches!(
            p.argument,
            PriorityArgs::LabelPreference { .. } | PriorityArgs::ServiceAntiAffinity { .. }
        );
        assert!(
            seen.insert(p.name.as_str()) || counts_again,
            "priority {} listed twice",
            p.name
        );
        assert!(p.weight > 0, "priority {} has weight {}", p.name, p.weight);
        total = p
            .weight
            .checked_mul(MAX_NODE_SCORE)
            .and_then(|w| total.checked_add(w))
            .unwrap_or_else(|| panic!("total weight overflows at priority {}", p.name));
        if let PriorityArgs::RequestedToCapacityRatio(r) = &p.argument {
            assert!(!r.shape.is_empty());
            for w in r.shape.windows(2) {
                assert!(w[0].0 < w[1].0, "utilization not increasing: {:?}", r.shape);
            }
            for &(u, s) in &r.shape {
                assert!((0..=100).contains(&u) && (0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&s));
            }
            for (name, weight) in &r.resources {
                assert!(*weight >= 1, "resource {name} has weight {weight}");
            }
            let _ = r.scaled_shape();
        }
    }
    assert_eq!(plan.max_total_score(), total);
    assert!(plan.percentage_of_nodes_to_score() <= 100);
    assert!((1..=100).contains(&plan.hard_pod_affinity_symmetric_weight()));
}
