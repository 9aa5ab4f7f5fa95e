//! The differential suite: random realistic clusters (seeds 0..300, or `DIFFERENTIAL_SEEDS=A..B`)
//! through kube-scheduler v1.34.4 in process (the oracle that `scripts/reference.sh` builds)
//! and through sched-core's v1.34 path, following kube's placements. Every pending pod must get
//! the same answer (feasible nodes, every score plugin's score per node, totals, tie set, or
//! FitError text and every node's reasons), or differ only as a documented difference does
//! (`kube_reference::documented`, each with its own test in `tests/documented.rs`).
//!
//! Without the oracle the test fails under `CI`, and elsewhere says loudly that it did not run.

use std::io::Write as _;
use std::path::Path;

use kube_reference::differential::{self, Settings};
use kube_reference::oracle::Oracle;

fn seeds() -> std::ops::Range<u64> {
    let v = std::env::var("DIFFERENTIAL_SEEDS").unwrap_or_else(|_| "0..300".into());
    let (a, b) = v.split_once("..").expect("DIFFERENTIAL_SEEDS is A..B");
    a.parse().expect("a seed")..b.parse().expect("a seed")
}

#[test]
fn random_clusters_match_kube_v1_34() {
    let oracle = match Oracle::locate() {
        Ok(o) => o,
        Err(e) => {
            let ci = std::env::var("CI").is_ok_and(|v| !v.is_empty() && v != "false" && v != "0");
            assert!(
                !ci,
                "{e}; CI is set, so the differential suite fails instead of skipping"
            );
            let _ = writeln!(
                std::io::stderr().lock(),
                "\n*** NOT RUN: {e}. Run `bash scripts/reference.sh` first (CI=1 makes this fail). ***"
            );
            return;
        }
    };
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("differential");
    let settings = Settings {
        seeds: seeds(),
        dir,
        percentage: 100,
        workers: std::thread::available_parallelism().map_or(2, |n| n.get()),
    };
    let summary = differential::run(&oracle, &settings).expect("the cases are written");
    let _ = writeln!(std::io::stderr().lock(), "{summary}");
    assert!(
        summary.pods >= 5 * summary.cases,
        "too few pods compared ({} in {} cases): the generator or the oracle lost pods",
        summary.pods,
        summary.cases
    );
    assert!(summary.clean(), "{summary}");
}
