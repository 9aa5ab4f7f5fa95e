//! kube-scheduler's answers for the recorded cases: every pod of every case of
//! `tests/data/kube-v1.34/` (answered by kube v1.34.1) and of `tests/data/kube-v1.34.4/`
//! (answered by kube v1.34.4) must replay through sched-core's v1.34 path with no difference.

use std::path::{Path, PathBuf};

use kube_reference::case::Case;
use kube_reference::oracle::OracleFile;
use kube_reference::replay::{Class, replay};

/// The folders of recorded cases, one per kube release that answered them.
const RELEASES: [&str; 2] = ["kube-v1.34", "kube-v1.34.4"];

fn cases_dir(release: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(release)
}

fn case_dirs(release: &str) -> Vec<PathBuf> {
    let dir = cases_dir(release);
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("oracle.json").exists())
        .collect();
    dirs.sort();
    dirs
}

/// Replays every case of `dirs` and returns (pods, differing pods, the report of the
/// differences); every case's oracle must have been answered by `version`.
fn replay_all(dirs: &[PathBuf], version: &str) -> (usize, usize, String) {
    let mut report = String::new();
    let (mut pods, mut differing) = (0, 0);
    for dir in dirs {
        let case = Case::read(dir).unwrap_or_else(|e| panic!("{e}"));
        let oracle = OracleFile::read(&dir.join("oracle.json")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(oracle.meta.version, version, "{}", case.name);
        let results = replay(&case, &oracle).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(results.len(), oracle.pods.len(), "{}", case.name);
        for r in &results {
            pods += 1;
            if !r.class.agrees() {
                differing += 1;
                report += &format!("\n{}: {r}", case.name);
            }
        }
    }
    (pods, differing, report)
}

#[test]
fn every_recorded_case_replays_as_kube_v1_34_answered() {
    let dirs = case_dirs("kube-v1.34");
    assert_eq!(dirs.len(), 9, "the nine recorded cases");
    let (pods, differing, report) = replay_all(&dirs, "v1.34.1");
    assert!(
        differing == 0,
        "{differing} of {pods} pods differ from kube v1.34.1:{report}"
    );
}

#[test]
fn every_recorded_case_replays_as_kube_v1_34_4_answered() {
    let dirs = case_dirs("kube-v1.34.4");
    assert!(!dirs.is_empty(), "no case under tests/data/kube-v1.34.4");
    let (pods, differing, report) = replay_all(&dirs, "v1.34.4");
    assert!(pods > 0, "the cases have no pending pod");
    assert!(
        differing == 0,
        "{differing} of {pods} pods differ from kube v1.34.4:{report}"
    );
}

#[test]
fn the_recorded_classes_are_the_replay_s_classes() {
    // Each case says which class of difference it was shrunk for; the replay's names are the
    // same, so a report reads against the cases.
    for dir in RELEASES.iter().flat_map(|r| case_dirs(r)) {
        let text = std::fs::read_to_string(dir.join("case.json")).unwrap();
        let meta: serde_json::Value = serde_json::from_str(&text).unwrap();
        let class = meta["class"].as_str().unwrap_or_default();
        assert!(
            [
                Class::Feasible,
                Class::Scores,
                Class::TieSet,
                Class::Wording,
                Class::Preemption
            ]
            .iter()
            .any(|c| c.as_str() == class),
            "{}: class {class:?}",
            dir.display()
        );
    }
}

/// kube took pv-b of two equally small PersistentVolumes for the first pod's claim (a Go map's
/// order decides), which leaves the second pod's claim (it selects pv-b's labels) nothing:
/// the replay follows kube's pick; without it, sched-core's own pick (pv-a) would leave the
/// second pod a node; and a pick that is not one of the smallest PVs that fit is reported.
#[test]
fn the_replay_takes_the_persistent_volumes_kube_took() {
    let dir = cases_dir("kube-v1.34.4").join("volume-binding-picks-among-equal-pvs");
    let case = Case::read(&dir).unwrap();
    let oracle = OracleFile::read(&dir.join("oracle.json")).unwrap();
    let classes = |oracle: &OracleFile| -> Vec<(Class, Vec<String>)> {
        replay(&case, oracle)
            .unwrap()
            .into_iter()
            .map(|r| (r.class, r.details))
            .collect()
    };
    assert_eq!(
        oracle.pods[0].volumes.as_ref().unwrap()["default/first"],
        "pv-b"
    );
    let got = classes(&oracle);
    assert!(got.iter().all(|(c, _)| *c == Class::Exact), "{got:?}");

    // Without kube's pick (an older file): sched-core binds pv-a, and p2 fits.
    let mut unpicked = oracle.clone();
    unpicked.pods[0].volumes = None;
    let got = classes(&unpicked);
    assert_eq!(got[0].0, Class::Exact);
    assert_eq!(got[1].0, Class::Feasible, "{got:?}");

    // A PV that is not among the smallest that fit (there is none of that name).
    let mut wrong = oracle.clone();
    wrong.pods[0].volumes = Some(
        [("default/first".to_string(), "pv-z".to_string())]
            .into_iter()
            .collect(),
    );
    let got = classes(&wrong);
    assert_eq!(got[0].0, Class::Error, "{got:?}");
    assert_eq!(
        got[0].1,
        [
            "VolumeBinding's Reserve on node-1: kube bound {\"default/first\": \"pv-z\"}, \
             sched-core {\"default/first\": \"pv-a\"}"
        ]
    );
}
