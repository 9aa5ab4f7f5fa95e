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
//! assert_eq!(c.node, "n1");
//! assert_eq!(c.victim_keys(), ["ns/low"]);
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

mod light;

use super::gang::GroupBudgets;
use super::nominator::{Fit, Nominator};
use super::pdb::violation_flags;
use crate::fast_path::FastFilter;
use crate::framework::{CycleContext, KubeVersion, PodRequests, Reason, ResourceSet};
use crate::model::{Pod, PodDisruptionBudget, PodKey, Resources, pod_requests};
use crate::profile::{FitError, NodeFailure, Profile, ScheduleError};
use crate::snapshot::{NodeInfo, PodInfo, Snapshot};
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
    pub fn victim_keys(&self) -> Vec<PodKey> {
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
    groups: Option<&'a GroupBudgets>,
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
            groups: None,
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

    /// The PodGroups' budgets ([`GroupBudgets`]): on each node, the victims of a group beyond
    /// what it may lose are reprieved before the fit check (its most important members
    /// first), so no preemption takes more than its budget; by default there are none.
    #[must_use]
    pub fn groups(mut self, budgets: &'a GroupBudgets) -> Environment<'a> {
        self.groups = Some(budgets);
        self
    }

    /// The nominations preemption holds.
    pub fn nominator(&self) -> &'a Nominator {
        self.nominator
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

/// Whether the node `node` that rejected `pod` for `reason` could take it once pods are
/// removed, as kube `version` decides: [`resolvable`], except that from v1.34 on
/// NodeResourcesFit calls a node unresolvable when the pod asks for more of a resource than the
/// node has allocatable at all (no removal makes room; "Too many pods" stays resolvable).
/// `requests` are the pod's effective requests ([`crate::model::pod_requests`]).
pub fn resolvable_on(
    reason: &Reason,
    version: KubeVersion,
    requests: &Resources,
    node: &NodeInfo,
) -> bool {
    if !resolvable(reason) {
        return false;
    }
    let Reason::Insufficient(set) = reason else {
        return true;
    };
    if version < KubeVersion::V1_34 {
        return true;
    }
    let bits = set.0;
    let a = node.allocatable();
    let beyond = (bits & ResourceSet::CPU != 0 && requests.milli_cpu > a.milli_cpu)
        || (bits & ResourceSet::MEMORY != 0 && requests.memory > a.memory)
        || (bits & ResourceSet::EPHEMERAL_STORAGE != 0
            && requests.ephemeral_storage > a.ephemeral_storage)
        || requests.scalar.iter().enumerate().any(|(i, (name, want))| {
            bits & ResourceSet::scalar_bit(i) != 0 && *want > a.scalar(name)
        });
    !beyond
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

/// [`more_important`] of two pods in the snapshot, reading their priorities and whether they
/// started from their infos (the pods only when both started).
fn more_important_info(a: &PodInfo, b: &PodInfo) -> std::cmp::Ordering {
    b.priority()
        .cmp(&a.priority())
        .then_with(|| match (a.started(), b.started()) {
            (true, true) => start_key(a.pod()).cmp(&start_key(b.pod())),
            (x, y) => y.cmp(&x),
        })
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

/// The nodes (snapshot indices, in snapshot order) where removing pods could help `pod`, which
/// `error` says fits nowhere: those whose every reason is resolvable there under kube
/// `version` ([`resolvable_on`]; kube's nodes with status `Unschedulable`).
pub fn nodes_where_preemption_might_help(
    snapshot: &Snapshot,
    pod: &Pod,
    version: KubeVersion,
    error: &FitError,
) -> Vec<usize> {
    let mut requests: Option<Resources> = None;
    let mut nodes: Vec<usize> = Vec::new();
    let infos = snapshot.node_infos();
    // The error lists the nodes mostly in snapshot order: the one after the last is tried
    // first, by the node object's address (no lookup by name).
    let mut next = 0;
    error.for_each_node_object(&mut |name, node, reasons| {
        let guess = infos
            .get(next)
            .filter(|i| node.is_some_and(|n| std::ptr::eq(i.node(), n)));
        let Some(index) = guess.map(|_| next).or_else(|| snapshot.index_of(name)) else {
            return;
        };
        next = index + 1;
        let info = &infos[index];
        for r in reasons {
            let requests = requests.get_or_insert_with(|| pod_requests(pod));
            if !resolvable_on(r, version, requests, info) {
                return;
            }
        }
        nodes.push(index);
    });
    nodes.sort_unstable();
    nodes
}

/// Whether the node `name` rejected the pod of `error` for reasons all resolvable there.
fn resolvable_node(
    snapshot: &Snapshot,
    pod: &Pod,
    version: KubeVersion,
    error: &FitError,
    name: &str,
) -> bool {
    let Some(info) = snapshot.get(name) else {
        return false;
    };
    let mut found = None;
    error.for_each_node(&mut |node, reasons| {
        if found.is_none() && node == name {
            let requests = pod_requests(pod);
            let mut all = true;
            for r in reasons {
                all = all && resolvable_on(r, version, &requests, info);
            }
            found = Some(all);
        }
    });
    found.unwrap_or(false)
}

/// What the dry run found on one node.
enum OnNode {
    /// The victims (most important first) and how many of them violate a budget.
    Victims(Vec<Arc<Pod>>, usize),
    /// No pod there may be removed (kube: "No preemption victims found for incoming pod").
    NoVictims,
    /// The pod does not fit even with every removable pod gone: the failing predicates
    /// (indices) and their reasons.
    Unfit(Vec<(u16, Reason)>),
    /// As [`OnNode::Unfit`], found on the node's numbers ([`light`]): the reasons are asked
    /// of the predicates only if they are read.
    UnfitUnexplained,
}

/// kube's status of a node where preemption found no victims.
pub const NO_VICTIMS: &str = "No preemption victims found for incoming pod";

/// kube's status of a node the dry run did not try (preemption could not help there).
pub const NOT_HELPFUL: &str = "Preemption is not helpful for scheduling";

/// kube's `SelectVictimsOnNode` on the node at `index`: remove every pod of lower priority
/// (except protected ones), check the preemptor fits (beside the pods nominated there), then
/// put back as many as possible, most important first: first those whose deletion would
/// violate a PodDisruptionBudget, then the others. The snapshot is restored before returning.
/// [`OnNode::NoVictims`] when there is no pod to remove, [`OnNode::Unfit`] when the pod does
/// not fit even with all of them gone; else the victims.
fn victims_on(
    profile: &Profile,
    snapshot: &mut Snapshot,
    pod: &Pod,
    index: usize,
    env: &Environment<'_>,
    skipped: &[bool],
    requests: &PodRequests,
) -> Result<OnNode, ScheduleError> {
    let fits = |snapshot: &mut Snapshot| {
        env.nominator
            .fits_indexed_skipping(profile, snapshot, pod, index, skipped, Some(requests))
    };
    let removed = snapshot.take_pod_infos_where(index, |p| {
        priority(p.pod()) < priority(pod) && !env.is_protected(p.key())
    });
    let removed = match env.groups {
        Some(budgets) if !budgets.is_empty() => {
            keep_within_budgets(snapshot, index, removed, budgets)
        }
        _ => removed,
    };
    if removed.is_empty() {
        return Ok(OnNode::NoVictims);
    }
    match fits(snapshot) {
        Ok(Ok(())) => {}
        Ok(Err(reasons)) => {
            put_back(snapshot, index, removed);
            return Ok(OnNode::Unfit(reasons));
        }
        Err(e) => {
            put_back(snapshot, index, removed);
            return Err(e);
        }
    }
    let mut removed = removed;
    removed.sort_by(more_important_info);
    let violates = violation_flags(removed.iter().map(PodInfo::pod), env.pdbs);
    let (mut victims, failed) = reprieve(snapshot, index, removed, &violates, fits);
    let violations = victims.iter().filter(|(i, _)| violates[*i]).count();
    // Most important first (the sort order of `removed`), as kube lists them.
    victims.sort_by_key(|(i, _)| *i);
    let pods: Vec<Arc<Pod>> = victims.iter().map(|(_, v)| v.pod_arc().clone()).collect();
    // Restore the victims (the reprieved ones are back already).
    put_back(
        snapshot,
        index,
        victims.into_iter().map(|(_, v)| v).collect(),
    );
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(OnNode::Victims(pods, violations))
}

/// The PodGroups' budgets on the node at `index`: of the `removed` pods of each group, those
/// beyond what the group may lose go back at once, its most important members first (the
/// reprieve's order), so that at most its budget of its least important members can be
/// victims. The other removed pods are returned in their order.
fn keep_within_budgets(
    snapshot: &mut Snapshot,
    index: usize,
    removed: Vec<PodInfo>,
    budgets: &GroupBudgets,
) -> Vec<PodInfo> {
    let groups: Vec<Option<usize>> = removed.iter().map(|p| budgets.group_of(p.key())).collect();
    if groups.iter().all(Option::is_none) {
        return removed;
    }
    // Least important first: each group's budget goes to those.
    let mut order: Vec<usize> = (0..removed.len()).collect();
    order.sort_by(|&a, &b| more_important(removed[b].pod(), removed[a].pod()));
    // Per group: (its members removed here, how many it may lose, how many counted so far).
    let mut budget: std::collections::HashMap<usize, (usize, usize)> =
        std::collections::HashMap::new();
    for g in groups.iter().flatten() {
        budget.entry(*g).or_default().0 += 1;
    }
    for (g, (removed_here, allowed)) in &mut budget {
        *allowed = budgets.allowed(*g, snapshot, *removed_here);
    }
    let mut back = vec![false; removed.len()];
    let mut counted: std::collections::HashMap<usize, usize> = std::collections::HashMap::new();
    for &i in &order {
        let Some(g) = groups[i] else {
            continue;
        };
        let n = counted.entry(g).or_default();
        *n += 1;
        back[i] = *n > budget[&g].1;
    }
    let (mut keep, mut restore) = (Vec::new(), Vec::new());
    for (info, b) in removed.into_iter().zip(back) {
        if b {
            restore.push(info)
        } else {
            keep.push(info)
        }
    }
    put_back(snapshot, index, restore);
    keep
}

/// Puts pods taken off the node at `index` back as they were (no copies).
fn put_back(snapshot: &mut Snapshot, index: usize, infos: Vec<PodInfo>) {
    for i in infos {
        // Back where they were: this does not fail.
        let _ = snapshot.put_pod_info_at(i, index);
    }
}

/// The reprieve of kube's `SelectVictimsOnNode`: the `removed` pods (most important first,
/// `violates` marking those whose deletion breaks a PodDisruptionBudget) go back onto the node
/// at `index` one at a time, budget-violating ones first, and stay if the preemptor still
/// `fits`. Returns the victims (with their index in `removed`), out of the snapshot, and the
/// error of a fit check that failed (every pod after it is a victim).
fn reprieve(
    snapshot: &mut Snapshot,
    index: usize,
    removed: Vec<PodInfo>,
    violates: &[bool],
    fits: impl Fn(&mut Snapshot) -> Result<Fit, ScheduleError>,
) -> (Vec<(usize, PodInfo)>, Option<ScheduleError>) {
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
        let key = info.key().clone();
        if let Err(info) = snapshot.put_pod_info_at(info, index) {
            // It was there before, so this does not happen; it stays a victim.
            victims.push((i, *info));
            continue;
        }
        let fit = match fits(snapshot) {
            Ok(r) => r.is_ok(),
            Err(e) => {
                failed = Some(e);
                false
            }
        };
        if !fit && let Ok(info) = snapshot.take_pod_info(&key) {
            victims.push((i, info));
        }
    }
    (victims, failed)
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
    dry_run(
        profile,
        snapshot,
        pod,
        potential,
        offset,
        num_candidates,
        env,
    )
    .map(|(candidates, _)| candidates)
}

/// The nodes the dry run tried without finding a candidate: snapshot index, and why
/// ([`OnNode::NoVictims`], [`OnNode::Unfit`] or [`OnNode::UnfitUnexplained`]).
type Rejected = Vec<(usize, OnNode)>;

/// What the dry run keeps for every node it tries: kube's PreFilter skips (the cycle state it
/// clones), the pod's requests, and the predicates' combined fast filter when the nodes can be
/// decided on their numbers ([`Profile::preemption_plan`]).
struct Plan<'a> {
    profile: &'a Profile,
    pod: &'a Pod,
    env: &'a Environment<'a>,
    skipped: Vec<bool>,
    requests: PodRequests,
    fast: Option<FastFilter>,
    scratch: light::Scratch,
}

impl<'a> Plan<'a> {
    fn new(
        profile: &'a Profile,
        snapshot: &Snapshot,
        pod: &'a Pod,
        env: &'a Environment<'a>,
    ) -> Result<Plan<'a>, ScheduleError> {
        let requests =
            CycleContext::for_version(pod, snapshot, profile.kube_version()).pod_requests();
        let (skipped, fast) = profile.preemption_plan(pod, snapshot, &requests)?;
        // PodGroup budgets reprieve pods before the fit check: the snapshot's dry run does.
        let fast = fast.filter(|_| env.groups.is_none_or(GroupBudgets::is_empty));
        Ok(Plan {
            profile,
            pod,
            env,
            skipped,
            requests,
            fast,
            scratch: light::Scratch::default(),
        })
    }

    /// The victims on the node at `index`: on its numbers when the plan allows and no pod
    /// nominated there is held for the pod, else on the snapshot ([`victims_on`]).
    fn victims_on(
        &mut self,
        snapshot: &mut Snapshot,
        index: usize,
    ) -> Result<OnNode, ScheduleError> {
        if let Some(filter) = &self.fast
            && !self.env.nominator.holds_on(snapshot, self.pod, index)
        {
            let (pod, env) = (self.pod, self.env);
            return Ok(light::victims_on(
                snapshot,
                pod,
                index,
                env,
                filter,
                &mut self.scratch,
            ));
        }
        let (profile, pod, env) = (self.profile, self.pod, self.env);
        victims_on(
            profile,
            snapshot,
            pod,
            index,
            env,
            &self.skipped,
            &self.requests,
        )
    }
}

/// [`dry_run_preemption`], also returning the nodes tried that gave no candidate.
fn dry_run(
    profile: &Profile,
    snapshot: &mut Snapshot,
    pod: &Pod,
    potential: &[usize],
    offset: usize,
    num_candidates: usize,
    env: &Environment<'_>,
) -> Result<(Vec<Candidate>, Rejected), ScheduleError> {
    let (mut clean, mut violating) = (Vec::new(), Vec::new());
    let mut rejected = Vec::new();
    let mut error = None;
    let n = potential.len();
    if n == 0 {
        return Ok((clean, rejected));
    }
    let mut plan = Plan::new(profile, snapshot, pod, env)?;
    for i in 0..n {
        let index = potential[(offset + i) % n];
        match plan.victims_on(snapshot, index) {
            Ok(OnNode::Victims(victims, violations)) if !victims.is_empty() => {
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
            // It fits with nothing removed (the pods nominated there moved): kube counts it
            // as an error ("expected at least one victim pod on node").
            Ok(OnNode::Victims(..)) => {}
            Ok(why) => rejected.push((index, why)),
            Err(e) => {
                error.get_or_insert(e);
            }
        }
    }
    clean.extend(violating);
    match error {
        Some(e) if clean.is_empty() => Err(e),
        _ => Ok((clean, rejected)),
    }
}

/// kube's `SelectCandidate` (`pickOneNodeForPreemption`): the candidate with the fewest
/// PodDisruptionBudget violations, then the lowest highest-victim priority, then the lowest
/// sum of victim priorities (each shifted by 2^31 so that more negative victims never win),
/// then the fewest victims, then the latest earliest start among each node's
/// highest-priority victims (a victim not started counts as now), then the first in
/// `candidates` (kube takes the first of a map's random order): the first of
/// [`best_candidates`].
pub fn select_candidate(candidates: &[Candidate]) -> Option<&Candidate> {
    best_candidates(candidates).first().copied()
}

/// The candidates kube's `pickOneNodeForPreemption` finds equally good, in the order given:
/// those that tie on every criterion of [`select_candidate`]. kube picks one of them at random
/// (the first in a Go map's order); empty only when `candidates` is.
pub fn best_candidates(candidates: &[Candidate]) -> Vec<&Candidate> {
    let mut tied: Vec<&Candidate> = candidates.iter().collect();
    if tied.len() <= 1 {
        return tied;
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
    for f in scores {
        let Some(best) = tied.iter().map(|c| f(c)).max() else {
            return tied;
        };
        tied.retain(|c| f(c) == best);
        if tied.len() == 1 {
            return tied;
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
    let latest = tied.iter().map(|c| earliest(c)).max().flatten();
    tied.retain(|c| earliest(c) == latest);
    tied
}

/// Why preemption found no node for a pod: kube's FitError of DefaultPreemption, whose text
/// (`Display`) follows "preemption: " in kube's PostFilter message ("0/3 nodes are available:
/// 1 No preemption victims found for incoming pod, 2 Preemption is not helpful for
/// scheduling.").
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NoCandidate {
    /// The number of nodes in the snapshot.
    pub num_all_nodes: usize,
    /// The nodes the dry run tried, in snapshot order, each with why it gave no candidate:
    /// [`NO_VICTIMS`], or the reasons the pod does not fit there even with every
    /// lower-priority pod gone. The other nodes count as [`NOT_HELPFUL`].
    pub failures: Vec<NodeFailure>,
}

impl NoCandidate {
    /// Count of nodes per message, sorted as kube sorts the summary ("N message" as
    /// strings), the nodes not tried included.
    pub fn histogram(&self) -> Vec<(usize, String)> {
        let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
        for f in &self.failures {
            for m in &f.messages {
                *counts.entry(m).or_default() += 1;
            }
        }
        let absent = self.num_all_nodes.saturating_sub(self.failures.len());
        if absent > 0 {
            *counts.entry(NOT_HELPFUL).or_default() += absent;
        }
        let mut out: Vec<(String, usize, String)> = counts
            .into_iter()
            .map(|(m, n)| (format!("{n} {m}"), n, m.to_string()))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.into_iter().map(|(_, n, m)| (n, m)).collect()
    }
}

impl std::fmt::Display for NoCandidate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "0/{} nodes are available:", self.num_all_nodes)?;
        let h = self.histogram();
        for (i, (n, m)) in h.iter().enumerate() {
            let sep = if i == 0 { " " } else { ", " };
            write!(f, "{sep}{n} {m}")?;
        }
        if !h.is_empty() {
            f.write_str(".")?;
        }
        Ok(())
    }
}

/// What [`preempt`] decided.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum Outcome {
    /// The pod may not preempt (kube's message); its nomination stays as it is.
    NotEligible(&'static str),
    /// No node can take the pod even with victims gone (why, node by node); its nomination
    /// is cleared.
    NoCandidate(NoCandidate),
    /// The dry run found candidates but the extenders that preempt left none (kube's "no
    /// candidate node for preemption"); the nomination stays as it is.
    NoneLeft,
    /// Delete the candidate's victims; the pod is nominated to its node.
    Preempt(Candidate),
}

impl Outcome {
    /// kube's message for the outcome (DefaultPreemption's PostFilter status, which kube
    /// prefixes with "preemption: "), empty when the pod preempts.
    pub fn message(&self) -> String {
        match self {
            Outcome::NotEligible(why) => (*why).to_string(),
            Outcome::NoCandidate(n) => n.to_string(),
            Outcome::NoneLeft => "no candidate node for preemption".to_string(),
            Outcome::Preempt(_) => String::new(),
        }
    }
}

/// Why each node the dry run tried gave no candidate, in snapshot order: [`NO_VICTIMS`], or
/// the reasons the pod does not fit there with every removable pod gone (asked of the
/// predicates on the snapshot with those pods taken off, for the nodes decided on their
/// numbers).
///
/// # Errors
/// A plugin error on such a node.
fn explain_rejected(
    profile: &Profile,
    snapshot: &mut Snapshot,
    pod: &Pod,
    env: &Environment<'_>,
    mut rejected: Rejected,
) -> Result<Vec<NodeFailure>, ScheduleError> {
    rejected.sort_by_key(|(index, _)| *index);
    let mut plan: Option<Plan<'_>> = None;
    let mut failures = Vec::with_capacity(rejected.len());
    for (index, why) in rejected {
        let why = match why {
            OnNode::UnfitUnexplained => {
                let plan = match &mut plan {
                    Some(p) => p,
                    None => plan.insert(Plan::new(profile, snapshot, pod, env)?),
                };
                plan.fast = None;
                plan.victims_on(snapshot, index)?
            }
            why => why,
        };
        failures.push(match why {
            OnNode::Unfit(reasons) if !reasons.is_empty() => {
                profile.explain_node(pod, snapshot, index, &reasons)
            }
            _ => NodeFailure {
                node: snapshot.node_infos()[index].name().to_string(),
                codes: Vec::new(),
                messages: vec![NO_VICTIMS.to_string()],
            },
        });
    }
    Ok(failures)
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
    let version = profile.kube_version();
    let nominated = pod.status.nominated_node_name.as_str();
    let unresolvable =
        !nominated.is_empty() && !resolvable_node(snapshot, pod, version, error, nominated);
    if let Err(why) = pod_eligible_to_preempt_others(pod, snapshot, unresolvable) {
        return Ok(Outcome::NotEligible(why));
    }
    let potential = nodes_where_preemption_might_help(snapshot, pod, version, error);
    if potential.is_empty() {
        return Ok(Outcome::NoCandidate(NoCandidate {
            num_all_nodes: snapshot.len(),
            failures: Vec::new(),
        }));
    }
    let n = potential.len();
    let start = offset(n) % n;
    let wanted = num_candidates(n, percentage, absolute);
    let (candidates, rejected) = dry_run(profile, snapshot, pod, &potential, start, wanted, env)?;
    if candidates.is_empty() {
        let failures = explain_rejected(profile, snapshot, pod, env, rejected)?;
        return Ok(Outcome::NoCandidate(NoCandidate {
            num_all_nodes: snapshot.len(),
            failures,
        }));
    }
    let candidates = (env.candidates)(pod, snapshot, candidates)?;
    Ok(match select_candidate(&candidates) {
        Some(c) => Outcome::Preempt(c.clone()),
        None => Outcome::NoneLeft,
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
