//! The benchmark peer's sched-core side on kube's DRA scheduler_perf workloads
//! (`dra/performance-config.yaml` of kube v1.34.4), exported by `reference/cmd/perf export`
//! into `tests/data/perf/<TestCase>_<workload>/`, each beside `kube.json`: what
//! `perf time` (kube-scheduler v1.34.4 in process, parallelism 1) answered on that folder.
//! sched-core must place every measured pod on the node kube chose, leave the same pods
//! unschedulable and write as many claims.

use std::path::{Path, PathBuf};

use kube_reference::perf::{Timings, run};

fn folder(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/perf")
        .join(name)
}

/// sched-core's timings and kube's recorded ones on the folder `name`.
fn both(name: &str) -> (Timings, Timings) {
    let dir = folder(name);
    let ours = run(&dir, 0, None).unwrap_or_else(|e| panic!("{name}: {e}"));
    let text = std::fs::read_to_string(dir.join("kube.json")).unwrap_or_else(|e| panic!("{e}"));
    let kube: Timings = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
    (ours, kube)
}

fn assert_agree(name: &str, ours: &Timings, kube: &Timings) {
    assert_eq!(
        ours.placements, kube.placements,
        "{name}: nodes of the measured pods"
    );
    assert_eq!(ours.unschedulable, kube.unschedulable, "{name}");
    assert_eq!(ours.claims_written, kube.claims_written, "{name}");
}

/// `SchedulingWithResourceClaimTemplate/fast`: one node without the test driver, one with ten
/// devices, ten pods each with a claim made from the template (as kube's resourceclaim
/// controller makes it). kube put all ten on the node with devices.
#[test]
fn claim_template_fast_agrees_with_kube() {
    let name = "SchedulingWithResourceClaimTemplate_fast";
    let (ours, kube) = both(name);
    assert_agree(name, &ours, &kube);
    assert_eq!(ours.placements, vec!["scheduler-perf-dra-00001"; 10]);
    assert_eq!(ours.claims_written, 10);
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
    let name = "SchedulingWithResourceClaim_fast";
    let (ours, kube) = both(name);
    assert_agree(name, &ours, &kube);
    assert_eq!(ours.placements, vec!["scheduler-perf-dra-00001"; 10]);
    assert_eq!(ours.claims_written, 10);
}

/// `SteadyStateClusterResourceClaimTemplate/fast`, its first 30 measured pods: each pod is
/// deleted with its claim once placed (kube's steady-state `createPods`), so the one node
/// with ten devices takes all thirty, one after another. kube placed all thirty there.
#[test]
fn steady_state_frees_each_pods_devices_as_kube_does() {
    let name = "SteadyStateClusterResourceClaimTemplate_fast_30pods";
    let (ours, kube) = both(name);
    assert_agree(name, &ours, &kube);
    assert_eq!(ours.placements, vec!["scheduler-perf-dra-00001"; 30]);
    assert_eq!(ours.claims_written, 30);
}
