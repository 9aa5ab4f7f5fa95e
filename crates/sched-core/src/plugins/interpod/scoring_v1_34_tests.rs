//! kube v1.34's `TestPreferredAffinity` cases with `IgnorePreferredTermsOfExistingPods`
//! (`pkg/scheduler/framework/plugins/interpodaffinity/scoring_test.go`) against
//! [`InterPodAffinityPriority::ignoring_preferred_terms_of_existing_pods`], with their exact
//! statuses and scores.
//!
//! Ported: "Ignore preferred terms of existing pods" (kube: PreScore returns Skip; ours: a
//! constant 0 for every node) and "Do not ignore preferred terms of existing pods" (the same
//! cluster with the argument off). No case with the argument is skipped.

use super::InterPodAffinityPriority;
use super::testutil::*;
use crate::model::{Node, Pod};

/// kube's `stayWithS1InRegionAwayFromS2InAz`.
fn stay_s1_region_away_s2_az(p: PodB) -> PodB {
    p.pref_aff(8, term_in("security", &["S1"], "region"))
        .pref_anti(5, term_in("security", &["S2"], "az"))
}

/// kube's `stayWithS2InRegion`.
fn stay_with_s2_in_region(p: PodB) -> PodB {
    p.pref_aff(6, term_in("security", &["S2"], "region"))
}

fn cluster() -> (Pod, Vec<Pod>, Vec<Node>) {
    let s1 = [("security", "S1")];
    let s2 = [("security", "S2")];
    (
        pod().labels(&s2).build(),
        vec![
            stay_s1_region_away_s2_az(pod().node("node1").labels(&s1)).build(),
            stay_with_s2_in_region(pod().node("node2").labels(&s2)).build(),
        ],
        vec![
            node("node1", &[("region", "China")]),
            node("node2", &[("region", "India")]),
        ],
    )
}

#[test]
fn preferred_affinity_ignore_preferred_terms_of_existing_pods() {
    let mut ran = 0;
    let cases = [
        // (name, ignorePreferredTermsOfExistingPods, skipped (constant), scores)
        (
            "Ignore preferred terms of existing pods",
            true,
            true,
            vec![0, 0],
        ),
        (
            "Do not ignore preferred terms of existing pods",
            false,
            false,
            vec![0, 100],
        ),
    ];
    for (name, ignore, skipped, want) in cases {
        let prio =
            InterPodAffinityPriority::new(1).ignoring_preferred_terms_of_existing_pods(ignore);
        let (pod, pods, nodes) = cluster();
        let snap = snapshot(nodes, pods);
        let (constant, got) = run_priority(&prio, &pod, &snap).unwrap();
        assert_eq!((constant, got), (skipped, want), "{name}");
        ran += 1;
    }
    assert_eq!(ran, 2, "cases run");
}
