//! kube's DefaultPreemption (PostFilter) for a pod no node takes, as kube v1.34 runs it
//! (`framework/preemption` and `plugins/defaultpreemption`): whether the pod may preempt
//! ([`pod_eligible_to_preempt_others`]), the nodes where removing pods could help
//! ([`nodes_where_preemption_might_help`]), a dry run on some of them from an offset
//! ([`dry_run_preemption`]: the fewest victims per node, PodDisruptionBudget-violating victims
//! reprieved first, the pods nominated to the node held there), and kube's choice among the
//! candidates ([`select_candidate`]). [`preempt`] runs them in kube's order.
//!
//! ```
//! use sched_core::model::{Node, Pod};
//! use sched_core::plugins::node::PodFitsResources;
//! use sched_core::profile::{Profile, ScheduleError};
//! use sched_core::scheduler::Nominator;
//! use sched_core::scheduler::preemption::{Environment, Outcome, preempt};
//! use sched_core::snapshot::Snapshot;
//!
//! // One node for one pod, taken by a pod of priority 0.
//! let node: Node = serde_json::from_str(
//!     r#"{"metadata":{"name":"n1"},"status":{"allocatable":{"pods":"1"}}}"#)?;
//! let low: Pod = serde_json::from_str(
//!     r#"{"metadata":{"name":"low","namespace":"ns"},"spec":{"nodeName":"n1","priority":0}}"#)?;
//! let high: Pod = serde_json::from_str(
//!     r#"{"metadata":{"name":"high","namespace":"ns"},"spec":{"priority":1000}}"#)?;
//! let mut snapshot = Snapshot::from_objects(vec![node], vec![low])?;
//! let profile = Profile::builder().predicate(PodFitsResources::new()).build()?;
//! let mut cache = profile.create_cache();
//! let Err(ScheduleError::Unschedulable(error)) = profile.schedule(&mut cache, &high, &snapshot)
//! else { unreachable!() };
//! let nominator = Nominator::new();
//! let env = Environment::new(&nominator);
//! let outcome = preempt(&profile, &mut snapshot, &high, &error, (10, 100), &mut |_| 0, &env)?;
//! let Outcome::Preempt(c) = outcome else { unreachable!() };
//! assert_eq!((c.node.as_str(), c.victim_keys()), ("n1", vec!["ns/low".to_string()]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The offset
//! kube starts the dry run at a random node among the potential ones
//! (`GetOffsetAndNumCandidates`) and stops once it has `numCandidates` candidates, at least one
//! of them violating no budget. Here the caller gives the offset: the scheduling engine draws
//! it from its own generator, seeded with the scheduler's seed ([`Scheduler::from_config`]'s
//! `seed`, 0 for [`Scheduler::new`]), so runs repeat; tests pass it directly. The dry run goes
//! through the nodes one by one (kube's with parallelism 1), so its result is deterministic.
//!
//! [`Scheduler::from_config`]: super::Scheduler::from_config
//! [`Scheduler::new`]: super::Scheduler::new

use super::nominator::Nominator;
use super::pdb::violation_flags;
use crate::framework::Reason;
use crate::model::{Pod, PodDisruptionBudget};
use crate::profile::{FitError, Profile, ScheduleError};
use crate::snapshot::{PodInfo, Snapshot};
use std::sync::Arc;

/// A node and the pods to delete there so that the preemptor fits (kube's `Candidate` with
/// its `Victims`).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Candidate {
    /// The node.
    pub node: String,
    /// The victims, most important first (shared with the snapshot's copies).
    pub victims: Vec<Arc<Pod>>,
    /// How many victims violate a PodDisruptionBudget (kube's `NumPDBViolations`).
    pub num_pdb_violations: usize,
}

impl Candidate {
    /// `namespace/name` of the victims, most important first.
    pub fn victim_keys(&self) -> Vec<String> {
        self.victims.iter().map(|p| p.key()).collect()
    }
}

/// What preemption reads besides the profile, the snapshot and the pod: the
/// PodDisruptionBudgets, the nominated pods, and the pods that may not be victims.
///
/// ```
/// use sched_core::scheduler::Nominator;
/// use sched_core::scheduler::preemption::Environment;
/// let nominator = Nominator::new();
/// let binding = |key: &str| key == "ns/binding";
/// let env = Environment::new(&nominator).pdbs(&[]).protect(&binding);
/// assert!(env.is_protected("ns/binding"));
/// ```
#[derive(Clone, Copy)]
pub struct Environment<'a> {
    pdbs: &'a [PodDisruptionBudget],
    nominator: &'a Nominator,
    protected: &'a dyn Fn(&str) -> bool,
    candidates: &'a CandidateFilter<'a>,
}

/// What narrows the candidates before the choice (kube's `callExtenders`: the extenders that
/// preempt may drop nodes and add victims): the preemptor, the snapshot and the dry run's
/// candidates in, the remaining candidates out.
pub type CandidateFilter<'a> =
    dyn Fn(&Pod, &Snapshot, Vec<Candidate>) -> Result<Vec<Candidate>, ScheduleError> + 'a;

fn keep_candidates(
    _: &Pod,
    _: &Snapshot,
    candidates: Vec<Candidate>,
) -> Result<Vec<Candidate>, ScheduleError> {
    Ok(candidates)
}

impl std::fmt::Debug for Environment<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Environment")
            .field("pdbs", &self.pdbs.len())
            .field("nominated", &self.nominator.len())
            .finish()
    }
}

fn nothing_protected(_: &str) -> bool {
    false
}

impl<'a> Environment<'a> {
    /// No budgets, no protected pods, the nominations of `nominator`.
    pub fn new(nominator: &'a Nominator) -> Environment<'a> {
        Environment {
            pdbs: &[],
            nominator,
            protected: &nothing_protected,
            candidates: &keep_candidates,
        }
    }

    /// What narrows the dry run's candidates before the choice (the engine's extenders);
    /// by default they are kept.
    #[must_use]
    pub fn candidates(mut self, filter: &'a CandidateFilter<'a>) -> Environment<'a> {
        self.candidates = filter;
        self
    }

    /// The PodDisruptionBudgets to respect.
    #[must_use]
    pub fn pdbs(mut self, pdbs: &'a [PodDisruptionBudget]) -> Environment<'a> {
        self.pdbs = pdbs;
        self
    }

    /// Pods (by `namespace/name`) that are never victims: the engine protects the pods it is
    /// binding or holding at Permit.
    #[must_use]
    pub fn protect(mut self, protected: &'a dyn Fn(&str) -> bool) -> Environment<'a> {
        self.protected = protected;
        self
    }

    /// Whether `pod` may not be a victim.
    pub fn is_protected(&self, pod: &str) -> bool {
        (self.protected)(pod)
    }
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
            | Reason::ReadWriteOncePodConflict
            | Reason::Custom(_)
            | Reason::Extender {
                unresolvable: false
            }
    )
}

fn priority(p: &Pod) -> i32 {
    p.spec.priority.unwrap_or(0)
}

/// kube's `MoreImportantPod`: higher priority first, then the one started earlier; a pod not
/// started yet counts as starting now (after every start time). Start times are RFC 3339
/// strings compared as the API server writes them (one format, UTC).
fn more_important(a: &Pod, b: &Pod) -> std::cmp::Ordering {
    priority(b)
        .cmp(&priority(a))
        .then_with(|| start_key(a).cmp(&start_key(b)))
}

/// A start time as an ordered key: `None` (not started) is later than any time.
fn start_key(p: &Pod) -> (bool, Option<&str>) {
    match &p.status.start_time {
        Some(t) => (false, Some(t.as_str())),
        None => (true, None),
    }
}

/// Whether a pod may preempt (`preemptionPolicy` other than `Never`).
pub fn may_preempt(pod: &Pod) -> bool {
    pod.spec.preemption_policy.as_deref() != Some("Never")
}

/// Whether `p` is being deleted by the scheduler's preemption: a deletion timestamp and a
/// `DisruptionTarget` condition with reason `PreemptionByScheduler`, status `True` (kube's
/// `podTerminatingByPreemption`).
fn terminating_by_preemption(p: &Pod) -> bool {
    if !p.is_terminating() {
        return false;
    }
    p.status
        .conditions
        .iter()
        .find(|c| c.type_ == "DisruptionTarget")
        .is_some_and(|c| c.status == "True" && c.reason == "PreemptionByScheduler")
}

/// kube's `PodEligibleToPreemptOthers`: `Err` with kube's reason when `pod` may not preempt.
/// A pod with `preemptionPolicy: Never` may not; a pod already nominated to a node
/// (`status.nominatedNodeName`) may not while a lower-priority pod there is being deleted by
/// preemption, unless the filters found that node unresolvable for it
/// (`nominated_node_unresolvable`: kube's `UnschedulableAndUnresolvable` status of the node),
/// when it may preempt again.
///
/// # Errors
/// kube's message ("not eligible due to preemptionPolicy=Never.", "not eligible due to a
/// terminating pod on the nominated node.").
pub fn pod_eligible_to_preempt_others(
    pod: &Pod,
    snapshot: &Snapshot,
    nominated_node_unresolvable: bool,
) -> Result<(), &'static str> {
    if !may_preempt(pod) {
        return Err("not eligible due to preemptionPolicy=Never.");
    }
    let node = pod.status.nominated_node_name.as_str();
    if !node.is_empty() {
        if nominated_node_unresolvable {
            return Ok(());
        }
        if let Some(info) = snapshot.get(node)
            && info.pods().iter().any(|p| {
                let p = p.pod();
                priority(p) < priority(pod) && terminating_by_preemption(p)
            })
        {
            return Err("not eligible due to a terminating pod on the nominated node.");
        }
    }
    Ok(())
}

/// The nodes (snapshot indices, in snapshot order) where removing pods could help `error`'s
/// pod: those whose every reason is resolvable (kube's nodes with status `Unschedulable`).
pub fn nodes_where_preemption_might_help(snapshot: &Snapshot, error: &FitError) -> Vec<usize> {
    let mut nodes: Vec<usize> = error
        .failures
        .iter()
        .filter(|f| f.codes.iter().all(|(_, r)| resolvable(r)))
        .filter_map(|f| snapshot.index_of(&f.node))
        .collect();
    nodes.sort_unstable();
    nodes
}

/// A node's victims (most important first) and how many of them violate a budget.
type NodeVictims = (Vec<Arc<Pod>>, usize);

/// kube's `SelectVictimsOnNode` on the node at `index`: remove every pod of lower priority
/// (except protected ones), check the preemptor fits (beside the pods nominated there), then
/// put back as many as possible, most important first: first those whose deletion would
/// violate a PodDisruptionBudget, then the others. The snapshot is restored before returning.
/// `None` when there is no pod to remove or the pod does not fit even with all of them gone;
/// else the victims (most important first) and how many of them violate a budget.
fn victims_on(
    profile: &Profile,
    snapshot: &mut Snapshot,
    pod: &Pod,
    index: usize,
    env: &Environment<'_>,
) -> Result<Option<NodeVictims>, ScheduleError> {
    // The pods move out of the snapshot and back as they are (no copies).
    let restore = |snapshot: &mut Snapshot, infos: Vec<PodInfo>| {
        for i in infos {
            // Back where they were: this does not fail.
            let _ = snapshot.put_pod_info_at(i, index);
        }
    };
    let removed = snapshot.take_pod_infos_where(index, |p| {
        priority(p.pod()) < priority(pod) && !env.is_protected(p.key())
    });
    if removed.is_empty() {
        // kube: "No preemption victims found for incoming pod".
        return Ok(None);
    }
    match env.nominator.fits_indexed(profile, snapshot, pod, index) {
        Ok(Ok(())) => {}
        Ok(Err(_)) => {
            restore(snapshot, removed);
            return Ok(None);
        }
        Err(e) => {
            restore(snapshot, removed);
            return Err(e);
        }
    }
    let mut removed = removed;
    removed.sort_by(|a, b| more_important(a.pod(), b.pod()));
    let violates = violation_flags(removed.iter().map(PodInfo::pod), env.pdbs);
    // Budget-violating pods are reprieved first, then the others, each most important first.
    let order: Vec<usize> = (0..removed.len())
        .filter(|&i| violates[i])
        .chain((0..removed.len()).filter(|&i| !violates[i]))
        .collect();
    let mut slots: Vec<Option<PodInfo>> = removed.into_iter().map(Some).collect();
    let mut victims: Vec<(usize, PodInfo)> = Vec::new();
    let mut failed: Option<ScheduleError> = None;
    for i in order {
        let Some(info) = slots[i].take() else {
            continue;
        };
        if failed.is_some() {
            victims.push((i, info));
            continue;
        }
        // Reprieve: keep it if the preemptor still fits with it back.
        let key = Arc::clone(info.key_arc());
        if let Err(info) = snapshot.put_pod_info_at(info, index) {
            // It was there before, so this does not happen; it stays a victim.
            victims.push((i, *info));
            continue;
        }
        let fits = match env.nominator.fits_indexed(profile, snapshot, pod, index) {
            Ok(r) => r.is_ok(),
            Err(e) => {
                failed = Some(e);
                false
            }
        };
        if !fits && let Ok(info) = snapshot.take_pod_info(&key) {
            victims.push((i, info));
        }
    }
    let violations = victims.iter().filter(|(i, _)| violates[*i]).count();
    // Most important first (the sort order of `removed`), as kube lists them.
    victims.sort_by_key(|(i, _)| *i);
    let pods: Vec<Arc<Pod>> = victims.iter().map(|(_, v)| v.pod_arc().clone()).collect();
    // Restore the victims (the reprieved ones are back already).
    restore(snapshot, victims.into_iter().map(|(_, v)| v).collect());
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(Some((pods, violations)))
}

/// kube's `calculateNumCandidates`: `nodes x percentage / 100`, at least `absolute`, at most
/// `nodes`.
pub fn num_candidates(nodes: usize, percentage: i32, absolute: i32) -> usize {
    let mut n = nodes * usize::try_from(percentage.max(0)).unwrap_or(0) / 100;
    let absolute = usize::try_from(absolute.max(0)).unwrap_or(0);
    if n < absolute {
        n = absolute;
    }
    n.min(nodes)
}

/// kube's `DryRunPreemption` with parallelism 1: the nodes `potential` (snapshot indices) are
/// tried from position `offset` on, wrapping around; each node whose victims make room is a
/// candidate. It stops once it holds `num_candidates` candidates, at least one of them
/// violating no PodDisruptionBudget (so it looks past `num_candidates` while every candidate
/// violates one). Returns the candidates that violate no budget, in the order found, then the
/// others (each list at most `num_candidates` long). The snapshot is left as it was.
///
/// # Errors
/// A plugin error on a node, when no node gave a candidate.
pub fn dry_run_preemption(
    profile: &Profile,
    snapshot: &mut Snapshot,
    pod: &Pod,
    potential: &[usize],
    offset: usize,
    num_candidates: usize,
    env: &Environment<'_>,
) -> Result<Vec<Candidate>, ScheduleError> {
    let (mut clean, mut violating) = (Vec::new(), Vec::new());
    let mut error = None;
    let n = potential.len();
    for i in 0..n {
        let index = potential[(offset + i) % n];
        match victims_on(profile, snapshot, pod, index, env) {
            Ok(Some((victims, violations))) if !victims.is_empty() => {
                let c = Candidate {
                    node: snapshot.node_infos()[index].name().to_string(),
                    victims,
                    num_pdb_violations: violations,
                };
                let list = if violations == 0 {
                    &mut clean
                } else {
                    &mut violating
                };
                if list.len() < num_candidates {
                    list.push(c);
                }
                if !clean.is_empty() && clean.len() + violating.len() >= num_candidates {
                    break;
                }
            }
            Ok(_) => {}
            Err(e) => {
                error.get_or_insert(e);
            }
        }
    }
    clean.extend(violating);
    match error {
        Some(e) if clean.is_empty() => Err(e),
        _ => Ok(clean),
    }
}

/// kube's `SelectCandidate` (`pickOneNodeForPreemption`): the candidate with the fewest
/// PodDisruptionBudget violations, then the lowest highest-victim priority, then the lowest
/// sum of victim priorities (each shifted by 2^31 so that more negative victims never win),
/// then the fewest victims, then the latest earliest start among each node's
/// highest-priority victims (a victim not started counts as now), then the first in
/// `candidates` (kube takes the first of a map's random order).
pub fn select_candidate(candidates: &[Candidate]) -> Option<&Candidate> {
    if candidates.len() <= 1 {
        return candidates.first();
    }
    type Key = i64;
    let scores: [&dyn Fn(&Candidate) -> Key; 4] = [
        &|c| -(c.num_pdb_violations as i64),
        &|c| -i64::from(c.victims.first().map_or(i32::MIN, |p| priority(p))),
        &|c| {
            -c.victims
                .iter()
                .map(|p| i64::from(priority(p)) + i64::from(i32::MAX) + 1)
                .sum::<i64>()
        },
        &|c| -(c.victims.len() as i64),
    ];
    let mut tied: Vec<&Candidate> = candidates.iter().collect();
    for f in scores {
        let best = tied.iter().map(|c| f(c)).max()?;
        tied.retain(|c| f(c) == best);
        if tied.len() == 1 {
            return tied.first().copied();
        }
    }
    // The latest earliest start time among the highest-priority victims.
    fn earliest(c: &Candidate) -> Option<(bool, Option<&str>)> {
        let top = c.victims.first().map_or(i32::MIN, |p| priority(p));
        c.victims
            .iter()
            .filter(|p| priority(p) == top)
            .map(|p| start_key(p))
            .min()
    }
    let latest = tied.iter().map(|c| earliest(c)).max()?;
    tied.into_iter().find(|c| earliest(c) == latest)
}

/// What [`preempt`] decided.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// The pod may not preempt (kube's message); its nomination stays as it is.
    NotEligible(&'static str),
    /// No node can take the pod even with victims gone; its nomination is cleared.
    NoCandidate,
    /// Delete the candidate's victims; the pod is nominated to its node.
    Preempt(Candidate),
}

/// kube's `Evaluator.Preempt` for `pod`, which `error` says fits nowhere: eligibility, the
/// potential nodes, a dry run from `offset(potential nodes)` (a number below its argument) for
/// kube's `minCandidateNodesPercentage` / `minCandidateNodesAbsolute` (`args`) of the
/// potential nodes, and the choice among the candidates. The snapshot is left as it was.
///
/// # Errors
/// A plugin error during the dry run, when no node gave a candidate.
pub fn preempt(
    profile: &Profile,
    snapshot: &mut Snapshot,
    pod: &Pod,
    error: &FitError,
    (percentage, absolute): (i32, i32),
    offset: &mut dyn FnMut(usize) -> usize,
    env: &Environment<'_>,
) -> Result<Outcome, ScheduleError> {
    let nominated = pod.status.nominated_node_name.as_str();
    let unresolvable = !nominated.is_empty()
        && error
            .failures
            .iter()
            .find(|f| f.node == nominated)
            .is_none_or(|f| !f.codes.iter().all(|(_, r)| resolvable(r)));
    if let Err(why) = pod_eligible_to_preempt_others(pod, snapshot, unresolvable) {
        return Ok(Outcome::NotEligible(why));
    }
    let potential = nodes_where_preemption_might_help(snapshot, error);
    if potential.is_empty() {
        return Ok(Outcome::NoCandidate);
    }
    let n = potential.len();
    let start = offset(n) % n;
    let wanted = num_candidates(n, percentage, absolute);
    let candidates = dry_run_preemption(profile, snapshot, pod, &potential, start, wanted, env)?;
    let candidates = (env.candidates)(pod, snapshot, candidates)?;
    Ok(match select_candidate(&candidates) {
        Some(c) => Outcome::Preempt(c.clone()),
        None => Outcome::NoCandidate,
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
        assert_eq!(num_candidates(5, 40, 1), 2);
    }
}
