//! kube-scheduler v1.34.1's answers for the recorded cases of `tests/data/kube-v1.34/`: every
//! pod of every case must replay through sched-core's v1.34 path with no difference.

use std::path::{Path, PathBuf};

use kube_reference::case::Case;
use kube_reference::oracle::OracleFile;
use kube_reference::replay::{Class, replay};

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kube-v1.34")
}

fn case_dirs() -> Vec<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(cases_dir())
        .unwrap_or_else(|e| panic!("{}: {e}", cases_dir().display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("oracle.json").exists())
        .collect();
    dirs.sort();
    dirs
}

#[test]
fn every_recorded_case_replays_as_kube_v1_34_answered() {
    let dirs = case_dirs();
    assert_eq!(dirs.len(), 9, "the nine recorded cases");
    let mut report = String::new();
    let (mut pods, mut differing) = (0, 0);
    for dir in &dirs {
        let case = Case::read(dir).unwrap_or_else(|e| panic!("{e}"));
        let oracle = OracleFile::read(&dir.join("oracle.json")).unwrap_or_else(|e| panic!("{e}"));
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
    assert!(
        differing == 0,
        "{differing} of {pods} pods differ from kube v1.34.1:{report}"
    );
}

#[test]
fn the_recorded_classes_are_the_replay_s_classes() {
    // Each case says which class of difference it was shrunk for; the replay's names are the
    // same, so a report reads against the cases.
    for dir in case_dirs() {
        let text = std::fs::read_to_string(dir.join("case.json")).unwrap();
        let meta: serde_json::Value = serde_json::from_str(&text).unwrap();
        let class = meta["class"].as_str().unwrap_or_default();
        assert!(
            [
                Class::Feasible,
                Class::Scores,
                Class::TieSet,
                Class::Wording
            ]
            .iter()
            .any(|c| c.as_str() == class),
            "{}: class {class:?}",
            dir.display()
        );
    }
}
