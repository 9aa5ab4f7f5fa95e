//! The differences from kube-scheduler v1.34 that sched-core keeps on purpose, each written in
//! the README and pinned by a test (`tests/documented.rs`) that names it. The differential
//! suite sets apart a pod whose difference one of these explains; any other difference fails
//! the suite.

use std::collections::{BTreeSet, HashMap};

use sched_core::model::{Pod, PodKey};

use crate::case::Case;
use crate::oracle::PodAnswer;
use crate::replay::{Class, PodResult};

/// A documented difference.
#[derive(Debug)]
pub struct Documented {
    /// Its name, as the README and its test give it.
    pub id: &'static str,
    /// What differs and why, in a sentence.
    pub summary: &'static str,
    /// Whether it explains this pod's difference.
    pub applies: fn(&PodResult, &PodAnswer, &Case) -> bool,
}

/// Every documented difference.
pub const DOCUMENTED: &[Documented] = &[Documented {
    id: UNSTARTED_VICTIMS_ORDER,
    summary: "Preemption reprieves a node's pods most important first; among pods of one \
              priority that have not started (no status.startTime: pods just placed), kube \
              reads time.Now() for each side of every comparison of its sort, so their order \
              follows the sort's sequence of comparisons (in practice the reverse of its \
              cache's pod order for up to 12 pods), the clock's resolution and the order its \
              informers delivered the pods; sched-core keeps them in the node's order. When \
              not all of them can stay, the victims on the nominated node can be different \
              pods of that priority, as many.",
    applies: unstarted_victims_order,
}];

/// The id of the difference in the order of victims that have not started.
pub const UNSTARTED_VICTIMS_ORDER: &str = "unstarted-victims-order";

/// The documented difference that explains a pod's difference, if one does.
pub fn explain(result: &PodResult, answer: &PodAnswer, case: &Case) -> Option<&'static Documented> {
    DOCUMENTED
        .iter()
        .find(|d| (d.applies)(result, answer, case))
}

/// kube nominated one of the nodes sched-core finds equally good, and the only difference is
/// the victims there: as many on both sides, and those that differ all without a start time
/// and of one priority.
fn unstarted_victims_order(result: &PodResult, answer: &PodAnswer, case: &Case) -> bool {
    if result.class != Class::Preemption {
        return false;
    }
    let Some(pf) = &answer.post_filter else {
        return false;
    };
    let Some(node) = pf.nominated_node.as_deref() else {
        return false;
    };
    let Some(ours) = result.nominations.get(node) else {
        return false;
    };
    let prefix = format!("{node}: victims ");
    if result.details.is_empty() || !result.details.iter().all(|d| d.starts_with(&prefix)) {
        return false;
    }
    let ours: BTreeSet<&str> = ours.iter().map(String::as_str).collect();
    let kube: BTreeSet<&str> = pf.victims.iter().map(String::as_str).collect();
    if ours.len() != kube.len() {
        return false;
    }
    let pods: HashMap<PodKey, &Pod> = case
        .cluster
        .bound
        .iter()
        .chain(&case.cluster.pending)
        .map(|p| (p.key(), p))
        .collect();
    let mut priorities = BTreeSet::new();
    for key in ours.symmetric_difference(&kube) {
        match pods.get(*key) {
            Some(p) if p.status.start_time.is_none() => {
                priorities.insert(p.spec.priority.unwrap_or(0));
            }
            _ => return false,
        }
    }
    priorities.len() == 1
}
