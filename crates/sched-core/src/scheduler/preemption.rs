//! kube's DefaultPreemption (PostFilter) for a pod no node takes: the nodes where removing
//! lower-priority pods could help, the fewest victims on each (reprieving all it can, most
//! important first), and kube's choice of node.

use crate::framework::Reason;
use crate::model::Pod;
use crate::profile::{FitError, Profile};
use crate::snapshot::Snapshot;

/// A node and the pods to delete there so that the preemptor fits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    /// The node.
    pub node: String,
    /// `namespace/name` of the victims, most important first.
    pub victims: Vec<String>,
}

/// Whether a node that rejected a pod for `reason` could take it once pods are removed
/// (kube's `Unschedulable`, against `UnschedulableAndUnresolvable`).
pub fn resolvable(reason: &Reason) -> bool {
    matches!(
        reason,
        Reason::Insufficient(_)
            | Reason::PortsConflict
            | Reason::DiskConflict
            | Reason::PodAntiAffinityRulesNotMatch
            | Reason::ExistingPodsAntiAffinityRulesNotMatch
            | Reason::TopologySpreadConstraintsNotMatch
            | Reason::MaxVolumeCount
            | Reason::Custom(_)
            | Reason::Extender {
                unresolvable: false
            }
    )
}

fn priority(p: &Pod) -> i32 {
    p.spec.priority.unwrap_or(0)
}

/// kube's `MoreImportantPod`: higher priority first, then the one started earlier.
fn more_important(a: &Pod, b: &Pod) -> std::cmp::Ordering {
    priority(b).cmp(&priority(a)).then_with(|| {
        match (&a.status.start_time, &b.status.start_time) {
            // RFC 3339 times of one format compare as strings.
            (Some(x), Some(y)) => x.cmp(y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => std::cmp::Ordering::Equal,
        }
    })
}

/// Whether a pod may preempt (`preemptionPolicy` other than `Never`).
pub fn may_preempt(pod: &Pod) -> bool {
    pod.spec.preemption_policy.as_deref() != Some("Never")
}

/// kube's `SelectVictimsOnNode` on the node at `index`: remove every pod of lower priority
/// (except `protected` ones, such as pods still being bound), check the preemptor fits, then
/// put back as many as possible, most important first. The snapshot is restored before
/// returning. `None` when the pod does not fit even with all of them gone.
fn victims_on(
    profile: &Profile,
    snapshot: &mut Snapshot,
    pod: &Pod,
    index: usize,
    protected: &dyn Fn(&str) -> bool,
) -> Option<Vec<Pod>> {
    let info = &snapshot.node_infos()[index];
    let mut potential: Vec<Pod> = info
        .pods()
        .iter()
        .map(|p| p.pod())
        .filter(|p| priority(p) < priority(pod) && !protected(&p.key()))
        .cloned()
        .collect();
    if potential.is_empty() {
        // Nothing to remove: a candidate without victims if the pod fits as the node is.
        return matches!(profile.fits_on(pod, snapshot, index), Ok(Ok(()))).then(Vec::new);
    }
    potential.sort_by(more_important);
    let mut removed = Vec::with_capacity(potential.len());
    for p in &potential {
        if snapshot.remove_pod(&p.key()).is_ok() {
            removed.push(p.clone());
        }
    }
    if removed.len() != potential.len() {
        for p in removed {
            let _ = snapshot.add_pod(p);
        }
        return None;
    }
    let fits = matches!(profile.fits_on(pod, snapshot, index), Ok(Ok(())));
    let mut victims = Vec::new();
    if fits {
        for p in &potential {
            // Reprieve: keep it if the preemptor still fits with it back.
            if snapshot.add_pod(p.clone()).is_err() {
                victims.push(p.clone());
                continue;
            }
            if !matches!(profile.fits_on(pod, snapshot, index), Ok(Ok(()))) {
                let _ = snapshot.remove_pod(&p.key());
                victims.push(p.clone());
            }
        }
    }
    // Restore the victims (the reprieved ones are back already).
    for v in if fits { &victims } else { &potential } {
        let _ = snapshot.add_pod(v.clone());
    }
    fits.then_some(victims)
}

/// kube's `calculateNumCandidates`.
fn num_candidates(nodes: usize, percentage: i32, absolute: i32) -> usize {
    let mut n = nodes * usize::try_from(percentage.max(0)).unwrap_or(0) / 100;
    let absolute = usize::try_from(absolute.max(0)).unwrap_or(0);
    if n < absolute {
        n = absolute;
    }
    n.min(nodes)
}

/// The node to preempt on for `pod`, which `error` says fits nowhere: the candidates among
/// the nodes whose every reason is resolvable (at most kube's `minCandidateNodesPercentage`
/// / `minCandidateNodesAbsolute` of them, in node order), chosen as kube's
/// `pickOneNodeForPreemption` does: fewest PodDisruptionBudget violations (none are modelled),
/// lowest highest-victim priority, lowest sum of victim priorities, fewest victims, latest
/// start among the highest-priority victims, then the first. `None` when no node can help.
pub fn preempt(
    profile: &Profile,
    snapshot: &mut Snapshot,
    pod: &Pod,
    error: &FitError,
    (percentage, absolute): (i32, i32),
    protected: &dyn Fn(&str) -> bool,
) -> Option<Candidate> {
    if !may_preempt(pod) {
        return None;
    }
    let potential: Vec<usize> = error
        .failures
        .iter()
        .filter(|f| f.codes.iter().all(|(_, r)| resolvable(r)))
        .filter_map(|f| snapshot.index_of(&f.node))
        .collect();
    let wanted = num_candidates(snapshot.len(), percentage, absolute);
    let mut candidates: Vec<(String, Vec<Pod>)> = Vec::new();
    for index in potential {
        if candidates.len() >= wanted {
            break;
        }
        let node = snapshot.node_infos()[index].name().to_string();
        if let Some(victims) = victims_on(profile, snapshot, pod, index, protected) {
            if victims.is_empty() {
                return Some(Candidate {
                    node,
                    victims: Vec::new(),
                });
            }
            candidates.push((node, victims));
        }
    }
    let key = |(_, v): &(String, Vec<Pod>)| {
        let highest = priority(&v[0]);
        let sum: i64 = v
            .iter()
            .map(|p| i64::from(priority(p)) + i64::from(i32::MAX) + 1)
            .sum();
        (highest, sum, v.len())
    };
    let best = candidates.iter().map(key).min()?;
    let mut tied: Vec<&(String, Vec<Pod>)> = candidates.iter().filter(|c| key(c) == best).collect();
    if tied.len() > 1 {
        // The latest start among each node's highest-priority victims wins; pods without a
        // start time count as earliest.
        let earliest = |v: &[Pod]| {
            let top = priority(&v[0]);
            v.iter()
                .filter(|p| priority(p) == top)
                .filter_map(|p| p.status.start_time.clone())
                .min()
        };
        let latest = tied.iter().map(|c| earliest(&c.1)).max().flatten();
        tied.retain(|c| earliest(&c.1) == latest);
    }
    let (node, victims) = tied[0];
    Some(Candidate {
        node: node.clone(),
        victims: victims.iter().map(Pod::key).collect(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidate_counts_follow_kubes_rule() {
        // n = nodes * percentage / 100, at least the absolute number, at most every node.
        assert_eq!(num_candidates(10, 5, 0), 0);
        assert_eq!(num_candidates(100, 5, 3), 5);
        assert_eq!(num_candidates(1000, 10, 100), 100);
        assert_eq!(num_candidates(5000, 10, 100), 500);
        assert_eq!(num_candidates(50, 10, 100), 50);
    }
}
