//! `examples/simulate.rs --cycle`: the sample `examples/data/cycle.json` through the
//! scheduling engine with the two profiles of `examples/data/scheduler-config.yaml`, and the
//! usage errors of the mode.

mod common;

use common::simulate;

const CYCLE: &[&str] = &[
    "--objects",
    "examples/data/cycle.json",
    "--config",
    "examples/data/scheduler-config.yaml",
    "--cycle",
];

/// The step lines (time, pod, profile, result), whitespace collapsed.
fn steps(stdout: &str) -> Vec<String> {
    stdout
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("time"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect()
}

#[test]
fn cycle_runs_the_sample_through_the_engine() {
    let out = simulate(CYCLE);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    // A pod naming no configured profile is a pod error: exit status 1, as without --cycle.
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.starts_with(
            "3 nodes, 6 bound pods, 1 PodDisruptionBudget, 5 pending pods; \
             profiles: default-scheduler, bin-packing; seed 1"
        ),
        "{stdout}"
    );
    // Gated and profile-less pods are reported as they arrive; then the queue's order:
    // the high-priority checkout (last in the file) first, then report before etl (equal
    // priority, file order). The cache's budget allows no disruption, so the preemption
    // takes node-c's two crawlers rather than a cache pod. The crawlers' deletion sends
    // checkout to backoffQ; activeQ is empty once etl is bound, so checkout is popped from
    // backoffQ at once (kube v1.34's SchedulerPopFromBackoffQ) and binds there.
    assert_eq!(
        steps(&stdout),
        [
            "0.000s shop/canary default-scheduler gated: waits for its scheduling gates \
             (example.com/approval), not scheduled",
            "0.000s ml/train gpu-scheduler no profile: asks for scheduler \"gpu-scheduler\", \
             which no profile has (profiles: default-scheduler, bin-packing)",
            "0.000s shop/checkout default-scheduler preempts on node-c: deletes \
             batch/crawler-c1, batch/crawler-c2",
            "0.000s shop/report default-scheduler unschedulable: 0/3 nodes are available: \
             3 Insufficient cpu. no new claims to deallocate, preemption: 0/3 nodes are \
             available: 3 No preemption victims found for incoming pod.",
            "0.000s batch/etl bin-packing bound to node-a",
            "0.000s shop/checkout default-scheduler bound to node-c",
        ],
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "stopped at 0.000s: nothing left but unschedulable and gated pods\n\
             summary: 2 bound, 1 unschedulable, 1 gated, 1 without a profile, 0 failed, \
             0 still queued; 1 preemption, 2 victims\n"
        ),
        "{stdout}"
    );
    let fates: Vec<String> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("summary:"))
        .skip(1)
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert_eq!(
        fates,
        [
            "shop/report unschedulable: 0/3 nodes are available: 3 Insufficient cpu. no new \
             claims to deallocate, preemption: 0/3 nodes are available: 3 No preemption \
             victims found for incoming pod.",
            "shop/canary gated",
            "batch/etl bound to node-a",
            "ml/train no profile",
            "shop/checkout bound to node-c",
            "batch/crawler-c1 deleted: preempted by shop/checkout on node-c",
            "batch/crawler-c2 deleted: preempted by shop/checkout on node-c",
        ]
    );
}

#[test]
fn cycle_json_names_victims_and_counts() {
    let mut args = CYCLE.to_vec();
    args.extend(["--format", "json"]);
    let out = simulate(&args);
    assert_eq!(out.status.code(), Some(1));
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(
        doc["summary"],
        serde_json::json!({
            "bound": 2, "unschedulable": 1, "gated": 1, "noProfile": 1, "failed": 0,
            "queued": 0, "preemptions": 1, "victims": 2, "preemptedHere": 0,
        })
    );
    let preempt = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["result"] == "preempt")
        .expect("a preemption step");
    assert_eq!(preempt["pod"], "shop/checkout");
    assert_eq!(preempt["node"], "node-c");
    assert_eq!(
        preempt["victims"],
        serde_json::json!(["batch/crawler-c1", "batch/crawler-c2"])
    );
}

#[test]
fn time_limit_stops_before_the_preemptor_binds() {
    // kube v1.32's queue: checkout waits out its one-second backoff.
    let mut args = CYCLE.to_vec();
    args.extend([
        "--until",
        "500ms",
        "--feature-gates",
        "SchedulerPopFromBackoffQ=false",
    ]);
    let out = simulate(&args);
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert!(
        stdout.contains(
            "stopped at 0.000s: time limit 0.500s reached (next step due at 1.000s)\n\
             summary: 1 bound, 1 unschedulable, 1 gated, 1 without a profile, 0 failed, \
             1 still queued; 1 preemption, 2 victims\n"
        ),
        "{stdout}"
    );
}

#[test]
fn usage_errors_exit_2() {
    for (extra, message) in [
        (&["--until", "5x"][..], "--until must be a duration"),
        (&["--until", "-1s"][..], "--until must be a duration"),
        (&["--until"][..], "--until needs a value"),
        (
            &["--top", "2"][..],
            "--top shows scores, which --cycle does not print",
        ),
        (
            &["--feature-gates", "SchedulerQueueingHints=true"][..],
            "unknown gate \"SchedulerQueueingHints\"",
        ),
        (
            &["--feature-gates", "SchedulerPopFromBackoffQ=no"][..],
            "must be true or false",
        ),
    ] {
        let mut args = CYCLE.to_vec();
        args.extend(extra);
        let out = simulate(&args);
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(2), "{extra:?}: {stderr}");
        assert!(stderr.contains(message), "{extra:?}: {stderr}");
    }
    let out = simulate(&["--objects", "examples/data/cycle.json", "--until", "5s"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8(out.stderr)
            .unwrap()
            .contains("--until needs --cycle")
    );
}

#[test]
fn without_the_budget_preemption_takes_a_cache_pod() {
    // The same sample without its PodDisruptionBudget: every node needs two victims, and
    // kube's later tie-breakers pick a node with a cache pod.
    let sample: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/data/cycle.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let mut items = sample["items"].as_array().unwrap().clone();
    items.retain(|i| i["kind"] != "PodDisruptionBudget");
    let path = std::env::temp_dir().join(format!("simulate-cycle-{}.json", std::process::id()));
    std::fs::write(
        &path,
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items}).to_string(),
    )
    .unwrap();
    let out = simulate(&[
        "--objects",
        path.to_str().unwrap(),
        "--config",
        "examples/data/scheduler-config.yaml",
        "--cycle",
        "--format",
        "json",
    ]);
    let _ = std::fs::remove_file(&path);
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(doc["summary"]["preemptions"], 1);
    let victims: Vec<&str> = doc["victims"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["pod"].as_str().unwrap())
        .collect();
    assert_eq!(victims.len(), 2, "{victims:?}");
    assert!(
        victims.iter().any(|v| v.starts_with("batch/cache-")),
        "{victims:?}"
    );
    assert!(
        !victims.iter().any(|v| v.starts_with("batch/crawler-c")),
        "{victims:?}"
    );
}

/// `examples/data/gpus.json`: two nodes of eight GPUs (one ResourceSlice each), a DeviceClass,
/// two ResourceClaimTemplates (one GPU; four GPUs of one model with at least 40Gi each) and
/// eleven pods using them. Both modes place ten pods, each GPU allocated once, and report the
/// eleventh with kube's DynamicResources text.
#[test]
fn gpus_are_allocated_through_claim_templates() {
    for cycle in [false, true] {
        let mut args = vec![
            "--objects",
            "examples/data/gpus.json",
            "--config",
            "examples/data/scheduler-config.yaml",
        ];
        if cycle {
            args.push("--cycle");
        }
        let out = simulate(&args);
        let stdout = String::from_utf8(out.stdout).unwrap();
        let stderr = String::from_utf8(out.stderr).unwrap();
        assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
        assert!(
            stderr.contains("made 11 ResourceClaims from ResourceClaimTemplates"),
            "{stderr}"
        );
        let mut devices: Vec<&str> = stdout
            .split([' ', ',', '\n'])
            .filter(|w| w.starts_with("gpu-node-") && w.contains("/gpu-"))
            .collect();
        let n = devices.len();
        devices.sort_unstable();
        devices.dedup();
        assert_eq!((n, devices.len()), (16, 16), "every GPU once: {stdout}");
        for train in ["train-0-gpu:", "train-1-gpu:"] {
            let line = stdout.lines().find(|l| l.contains(train)).unwrap();
            let node = line.split(train).nth(1).unwrap().trim();
            let first = node.split('/').next().unwrap();
            assert_eq!(
                line.matches(&format!("{first}/gpu-")).count(),
                4,
                "four GPUs of one node: {line}"
            );
        }
        assert!(
            stdout.contains(
                "ml/infer-8 -> unschedulable: 0/2 nodes are available: 2 cannot allocate all claims."
            ) || stdout.contains(
                "unschedulable: 0/2 nodes are available: 2 cannot allocate all claims. still not \
                 schedulable, preemption: 0/2 nodes are available: 2 Preemption is not helpful \
                 for scheduling."
            ),
            "{stdout}"
        );
    }
}
