//! The benchmark peer's sched-core side on kube's scheduler_perf workloads, exported by
//! `reference/cmd/perf export` into `tests/data/perf/<TestCase>_<workload>/`, each beside
//! `kube.json`: what `perf time` (kube-scheduler v1.34.4 in process, parallelism 1) answered
//! on that folder. On kube's DRA workloads (`dra/performance-config.yaml` of kube v1.34.4),
//! sched-core must place every measured pod on the node kube chose, leave the same pods
//! unschedulable and write as many claims; on a workload with pod churn, let the same churn
//! pods in and place as many of them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use kube_reference::perf::{RunOptions, Timings, run, run_with};

fn folder(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/perf")
        .join(name)
}

/// sched-core's timings and kube's recorded ones on the folder `name`.
fn both(name: &str) -> (Timings, Timings) {
    let dir = folder(name);
    let ours = run(&dir, 0, None).unwrap_or_else(|e| panic!("{name}: {e}"));
    (ours, kube_timings(name))
}

/// kube's recorded timings on the folder `name`.
fn kube_timings(name: &str) -> Timings {
    let text = std::fs::read_to_string(folder(name).join("kube.json"))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn assert_agree(name: &str, ours: &Timings, kube: &Timings) {
    assert_eq!(
        ours.placements, kube.placements,
        "{name}: nodes of the measured pods"
    );
    assert_eq!(ours.unschedulable, kube.unschedulable, "{name}");
    assert_eq!(ours.claims_written, kube.claims_written, "{name}");
}

/// Both sides on folder `name` agree, and placed all `pods` measured pods on the one node
/// with devices, each writing its claim.
fn all_on_the_device_node(name: &str, pods: usize) {
    let (ours, kube) = both(name);
    assert_agree(name, &ours, &kube);
    assert_eq!(ours.placements, vec!["scheduler-perf-dra-00001"; pods]);
    assert_eq!(ours.claims_written, pods);
}

/// `SchedulingWithResourceClaimTemplate/fast`: one node without the test driver, one with ten
/// devices, ten pods each with a claim made from the template (as kube's resourceclaim
/// controller makes it). kube put all ten on the node with devices.
#[test]
fn claim_template_fast_agrees_with_kube() {
    all_on_the_device_node("SchedulingWithResourceClaimTemplate_fast", 10);
}

/// The same folder with an eleventh pod and claim: the node's ten devices are taken by the
/// first ten pods' written allocations, so kube left the eleventh unschedulable.
#[test]
fn claim_template_beyond_the_devices_agrees_with_kube() {
    let name = "SchedulingWithResourceClaimTemplate_fast_11pods";
    let (ours, kube) = both(name);
    assert_agree(name, &ours, &kube);
    assert_eq!(ours.unschedulable, 1);
    assert_eq!(ours.placements.last().map(String::as_str), Some(""));
}

/// `SchedulingWithResourceClaim/fast`: two claims, each shared by five pods, on a node with
/// two devices. Every pod is added to its claim's `reservedFor` (ten claim writes, two of
/// them with an allocation).
#[test]
fn shared_claims_fast_agrees_with_kube() {
    all_on_the_device_node("SchedulingWithResourceClaim_fast", 10);
}

/// `SteadyStateClusterResourceClaimTemplate/fast`, its first 30 measured pods: each pod is
/// deleted with its claim once placed (kube's steady-state `createPods`), so the one node
/// with ten devices takes all thirty, one after another. kube placed all thirty there.
#[test]
fn steady_state_frees_each_pods_devices_as_kube_does() {
    all_on_the_device_node("SteadyStateClusterResourceClaimTemplate_fast_30pods", 30);
}

/// `SteadyStateClusterResourceClaimTemplate/fast` with kube's `allocResourceClaims` op run
/// on 5 init claims (as the `half_*` workloads run it, here on the one node's ten devices),
/// its first 30 measured pods: the exporter allocated the five claims with kube's structured
/// allocator, so each pod takes one of the five devices left, and kube placed all thirty.
#[test]
fn steady_state_on_half_allocated_devices_agrees_with_kube() {
    all_on_the_device_node(
        "SteadyStateClusterResourceClaimTemplate_fast_30pods_5allocated",
        30,
    );
}

/// The same with all ten devices allocated to init claims (as the `full_*` workloads leave a
/// cluster): no measured pod fits, on either side.
#[test]
fn steady_state_on_fully_allocated_devices_agrees_with_kube() {
    let name = "SteadyStateClusterResourceClaimTemplate_fast_30pods_10allocated";
    let (ours, kube) = both(name);
    assert_agree(name, &ours, &kube);
    assert_eq!(ours.unschedulable, 30);
    assert_eq!(ours.claims_written, 0);
}

/// `Unschedulable/5Nodes/1Init/10Pods_QueueingHintsEnabled` (kube's misc workload with pod
/// churn: every 200 ms a priority-10 pod asking for 9 CPUs, which no 4-CPU node holds), its
/// churn file cut to 20 ticks. Both sides ran it with a 1 ns churn interval (kube's
/// `perf time -churn-interval 1ns`): every churn pod enters after the first measured pod, so
/// both let in all 20, place none, and say the file ran out. kube tries each churn pod once
/// (its queueing hints do not requeue a pod NodeResourcesFit rejected as unresolvable when
/// other pods are bound); sched-core's queue must not try them again either while the
/// measured pods bind.
#[test]
fn churn_pods_enter_and_stay_unschedulable_as_in_kube() {
    let name = "Unschedulable_5Nodes_1Init_10Pods_QueueingHintsEnabled";
    let dir = folder(name);
    let mut options = RunOptions::new(0, None);
    options.churn_interval = Some(Duration::from_nanos(1));
    let ours = run_with(&dir, &options).unwrap_or_else(|e| panic!("{name}: {e}"));
    let kube = kube_timings(name);
    assert_eq!((kube.churn_pods, kube.churn_placed), (20, 0), "kube.json");
    assert_eq!(
        (ours.churn_pods, ours.churn_placed, ours.churn_exhausted),
        (kube.churn_pods, kube.churn_placed, kube.churn_exhausted)
    );
    assert_eq!(ours.requeued_cycles, 0, "churn pods tried again");
    // kube breaks score ties at random: every measured pod placed, on both sides.
    assert_eq!(ours.unschedulable, kube.unschedulable);
    assert_eq!(ours.placements.len(), 10);
    assert!(
        ours.placements.iter().all(|n| !n.is_empty()),
        "{:?}",
        ours.placements
    );
    // At the workload's own 200 ms, ten pods take far less: no churn pod enters.
    let plain = run(&dir, 0, None).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!((plain.churn_pods, plain.churn_exhausted), (0, false));
}

/// `PreemptionAsync/5Nodes_QueueingHintsEnabled` (kube's misc workload with preempting churn:
/// five 4-CPU nodes, each holding four low-priority pods of 0.9 CPU; every 200 ms a
/// priority-10 pod asking for 3 CPUs), its churn file cut to 8 ticks, both sides at a 1 ns
/// churn interval. kube placed five churn pods, each preempting three pods on its own node
/// (15 victims), left the other three unschedulable, then placed the five measured pods.
#[test]
fn preempting_churn_pods_place_and_preempt_as_in_kube() {
    let name = "PreemptionAsync_5Nodes_QueueingHintsEnabled";
    let mut options = RunOptions::new(0, None);
    options.churn_interval = Some(Duration::from_nanos(1));
    let ours = run_with(&folder(name), &options).unwrap_or_else(|e| panic!("{name}: {e}"));
    let kube = kube_timings(name);
    assert_eq!(
        (
            kube.churn_pods,
            kube.churn_placed,
            kube.preemptions,
            kube.victims
        ),
        (8, 5, 5, 15),
        "kube.json"
    );
    assert_eq!(
        (
            ours.churn_pods,
            ours.churn_placed,
            ours.preemptions,
            ours.victims
        ),
        (
            kube.churn_pods,
            kube.churn_placed,
            kube.preemptions,
            kube.victims
        )
    );
    assert_eq!(ours.unschedulable, kube.unschedulable);
    assert!(
        ours.placements.iter().all(|n| !n.is_empty()),
        "{:?}",
        ours.placements
    );
}
