//! `examples/simulate.rs` under a legacy Policy: the Policy is the one profile
//! `default-scheduler` (as kube v1.20 runs it), so a pod naming another scheduler is reported
//! in the words `--config` uses, not placed.

mod common;

use common::simulate;

/// `examples/data/cycle.json` has a pod for `bin-packing` (batch/etl) and one for
/// `gpu-scheduler` (ml/train); the others ask for `default-scheduler`.
const SAMPLE: &[&str] = &[
    "--objects",
    "examples/data/cycle.json",
    "--policy",
    "examples/data/policy-default.json",
];

#[test]
fn pods_of_other_schedulers_are_reported_under_a_policy() {
    let out = simulate(SAMPLE);
    let stdout = String::from_utf8(out.stdout).unwrap();
    let stderr = String::from_utf8(out.stderr).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    for line in [
        "batch/etl -> error: asks for scheduler \"bin-packing\", which no profile has (profiles: default-scheduler)",
        "ml/train -> error: asks for scheduler \"gpu-scheduler\", which no profile has (profiles: default-scheduler)",
    ] {
        assert!(stdout.lines().any(|l| l == line), "{line:?} in\n{stdout}");
    }
    // The default scheduler's pods are still placed (or told why not).
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("shop/report -> ") && !l.starts_with("shop/report -> error")),
        "{stdout}"
    );

    let out = simulate(&[SAMPLE, &["--format", "json"]].concat());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let train = doc["pods"]
        .as_array()
        .expect("a list of pods")
        .iter()
        .find(|r| r["pod"] == "ml/train")
        .expect("ml/train reported");
    assert_eq!(train["node"], serde_json::Value::Null);
    assert_eq!(
        train["error"],
        "asks for scheduler \"gpu-scheduler\", which no profile has (profiles: default-scheduler)"
    );
}

#[test]
fn the_policy_and_the_configuration_report_a_pod_of_another_scheduler_alike() {
    let line = |args: &[&str]| -> String {
        let out = simulate(args);
        let stdout = String::from_utf8(out.stdout).unwrap();
        assert_eq!(out.status.code(), Some(1), "{stdout}");
        stdout
            .lines()
            .find(|l| l.starts_with("ml/train -> "))
            .unwrap_or_else(|| panic!("no line for ml/train in\n{stdout}"))
            .to_string()
    };
    let policy = line(SAMPLE);
    let config = line(&[
        "--objects",
        "examples/data/cycle.json",
        "--config",
        "examples/data/scheduler-config.yaml",
    ]);
    // The same words; only the profiles there are differ.
    assert_eq!(
        policy.replace(
            "(profiles: default-scheduler)",
            "(profiles: default-scheduler, bin-packing)"
        ),
        config
    );
}

#[test]
fn cycle_under_a_policy_reports_them_too() {
    let out = simulate(&[SAMPLE, &["--cycle"]].concat());
    let stdout = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    let steps: Vec<String> = stdout
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect();
    assert!(
        steps.iter().any(|l| l
            == "0.000s ml/train gpu-scheduler no profile: asks for scheduler \"gpu-scheduler\", \
                which no profile has (profiles: default-scheduler)"),
        "{stdout}"
    );
}
