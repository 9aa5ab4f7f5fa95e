//! Each documented difference of `kube_reference::documented::DOCUMENTED` pinned by a test of
//! its own, named after it: a small case with kube-scheduler v1.34.4's recorded answer
//! (`tests/data/documented/<id>/`), replayed, and the difference asserted to be exactly what
//! the entry says, and explained by that entry alone.

use std::path::{Path, PathBuf};

use kube_reference::case::Case;
use kube_reference::documented::{self, DOCUMENTED, UNSTARTED_VICTIMS_ORDER};
use kube_reference::oracle::OracleFile;
use kube_reference::replay::{Class, PodResult, replay};

/// The ids the tests below pin.
const TESTED: &[&str] = &[UNSTARTED_VICTIMS_ORDER];

fn case_dir(id: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/documented")
        .join(id)
}

/// The case of a documented difference, kube's answers and the replay's results.
fn load(id: &str) -> (Case, OracleFile, Vec<PodResult>) {
    let dir = case_dir(id);
    let case = Case::read(&dir).unwrap_or_else(|e| panic!("{e}"));
    let oracle = OracleFile::read(&dir.join("oracle.json")).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(oracle.meta.version, "v1.34.4", "{id}");
    let results = replay(&case, &oracle).unwrap_or_else(|e| panic!("{e}"));
    (case, oracle, results)
}

#[test]
fn every_documented_difference_has_its_test() {
    let ids: Vec<&str> = DOCUMENTED.iter().map(|d| d.id).collect();
    assert_eq!(ids, TESTED, "each entry of DOCUMENTED needs a test here");
    for d in DOCUMENTED {
        assert!(case_dir(d.id).join("oracle.json").exists(), "{}", d.id);
        assert!(!d.summary.is_empty(), "{}", d.id);
    }
}

/// Two pods without a start time, of one priority, on the node; one of them must go. kube
/// reprieves the one placed second and evicts the first; sched-core reprieves the first (the
/// node's order) and evicts the second: the same node, as many victims, of the same priority.
#[test]
fn unstarted_victims_order() {
    let (mut case, oracle, results) = load(UNSTARTED_VICTIMS_ORDER);
    assert_eq!(results.len(), 3);
    // The two placements agree.
    for r in &results[..2] {
        assert_eq!(r.class, Class::Exact, "{r}");
    }
    let (result, answer) = (&results[2], &oracle.pods[2]);
    assert_eq!(result.pod, "default/preemptor");
    assert_eq!(result.class, Class::Preemption, "{result}");
    let kube = answer.post_filter.as_ref().expect("kube's PostFilter");
    assert_eq!(
        (kube.code.as_str(), kube.nominated_node.as_deref()),
        ("Success", Some("node-1"))
    );
    assert_eq!(kube.victims, ["default/first"]);
    // sched-core nominates the same node, with the other pod as its victim.
    assert_eq!(
        result.nominations.get("node-1").map(Vec::as_slice),
        Some(&["default/second".to_string()][..])
    );
    assert_eq!(
        result.details,
        ["node-1: victims ours default/second, kube default/first"]
    );
    let doc = documented::explain(result, answer, &case).expect("documented");
    assert_eq!(doc.id, UNSTARTED_VICTIMS_ORDER);

    // Had the victims started, their order would be their start times on both sides: the
    // entry does not explain a difference among started pods.
    for p in case.cluster.pending.iter_mut() {
        p.status.start_time = Some("2026-11-26T10:00:00Z".into());
    }
    assert!(documented::explain(result, answer, &case).is_none());
}
