//! The scheduling engine's extenders: kube's `findNodesThatPassExtenders`, the extender part
//! of `prioritizeNodes`, and the choice of a binder extender, run over a
//! [`crate::profile::CycleExtension`].
//!
//! Remote extenders ([`crate::extender::RemoteExtender`]) are not called here. A pod one of
//! them is interested in goes through the cycle twice: first [`ExtenderCycle::record`] keeps
//! the nodes that passed the filter plugins and stops the attempt (the engine parks the pod
//! and hands out the call); when the replies are in, [`ExtenderCycle::replay`] runs the
//! attempt again on the current snapshot, the remote extenders answering from the replies
//! (a node they were not sent fails) and the in-process ones called as usual.

use std::collections::HashMap;
use std::sync::Arc;

use super::preemption::Candidate;
use crate::extender::{
    Extender, ExtenderBinder, ExtenderBindingArgs, ExtenderCall, ExtenderError, FilterResult,
    MAX_EXTENDER_PRIORITY, NodeVictims, Victims,
};
use crate::formulas::MAX_NODE_SCORE;
use crate::framework::Reason;
use crate::model::{Node, Pod};
use crate::profile::{CycleExtension, NodeFailure, ScheduleError};
use crate::snapshot::Snapshot;

/// An extender error kube logs and goes on past: an ignorable extender's filter error, or
/// any prioritize error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    /// The extender's name.
    pub extender: String,
    /// Its error.
    pub message: String,
}

/// Extenders run over one scheduling attempt with kube's semantics (see [`crate::extender`]),
/// as a [`CycleExtension`]: what [`crate::scheduler::Scheduler`] gives
/// [`Profile::schedule_and_assume_with`](crate::profile::Profile::schedule_and_assume_with),
/// usable with a bare profile too.
///
/// ```
/// use std::sync::Arc;
/// use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
/// use sched_core::extender::{Extender, HostPriority};
/// use sched_core::model::{Node, Pod};
/// use sched_core::policy::Policy;
/// use sched_core::scheduler::ExtenderCycle;
/// use sched_core::snapshot::Snapshot;
///
/// /// Gives node-7 the top score.
/// struct Likes7;
/// impl Extender for Likes7 {
///     fn name(&self) -> &str { "likes-7" }
///     fn is_prioritizer(&self) -> bool { true }
///     fn prioritize(&self, _: &Pod, nodes: &[&Node])
///         -> Result<(Vec<HostPriority>, i64), sched_core::extender::ExtenderError> {
///         let score = |n: &Node| if n.metadata.name == "node-7" { 10 } else { 0 };
///         Ok((nodes.iter().map(|n| HostPriority { host: n.metadata.name.clone(), score: score(n) }).collect(), 100))
///     }
/// }
/// let (nodes, running) = benchmark_cluster(10);
/// let mut snapshot = Snapshot::from_objects(nodes, running)?;
/// let profile = Policy::kube_default().builder()?.seed(1).build()?;
/// let extenders: Vec<Arc<dyn Extender>> = vec![Arc::new(Likes7)];
/// let mut cycle = ExtenderCycle::new(&extenders);
/// let mut cache = profile.create_cache();
/// let placed = profile.schedule_and_assume_with(&mut cache, &benchmark_pod(0), &mut snapshot, &mut cycle)?;
/// assert_eq!(placed.node, "node-7");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct ExtenderCycle<'a> {
    list: &'a [Arc<dyn Extender>],
    skipped: Vec<Skipped>,
    mode: Mode<'a>,
}

/// How the remote extenders take part.
enum Mode<'a> {
    /// Every extender is called here (a remote one fails: it is not called in the engine).
    Inline,
    /// The nodes that passed the filter plugins are kept and the attempt stops.
    Record(Option<Vec<u32>>),
    /// The remote extenders answer from the call's replies.
    Replay(&'a mut ExtenderCall),
}

impl std::fmt::Debug for ExtenderCycle<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExtenderCycle")
            .field("extenders", &self.list)
            .field("skipped", &self.skipped)
            .finish()
    }
}

impl<'a> ExtenderCycle<'a> {
    /// The extenders `list`, in order, for one attempt.
    pub fn new(list: &'a [Arc<dyn Extender>]) -> ExtenderCycle<'a> {
        ExtenderCycle {
            list,
            skipped: Vec::new(),
            mode: Mode::Inline,
        }
    }

    /// The first pass of a pod a remote extender is interested in: the filter point keeps the
    /// nodes that passed the filter plugins ([`ExtenderCycle::recorded`]) and stops the
    /// attempt with an error the engine does not report.
    pub(crate) fn record(list: &'a [Arc<dyn Extender>]) -> ExtenderCycle<'a> {
        ExtenderCycle {
            list,
            skipped: Vec::new(),
            mode: Mode::Record(None),
        }
    }

    /// The second pass: the remote extenders answer from `call`'s replies.
    pub(crate) fn replay(
        list: &'a [Arc<dyn Extender>],
        call: &'a mut ExtenderCall,
    ) -> ExtenderCycle<'a> {
        ExtenderCycle {
            list,
            skipped: Vec::new(),
            mode: Mode::Replay(call),
        }
    }

    /// The nodes a recording pass kept, if it reached the extenders.
    pub(crate) fn recorded(&mut self) -> Option<Vec<u32>> {
        match &mut self.mode {
            Mode::Record(r) => r.take(),
            _ => None,
        }
    }

    /// A remote extender's filter result as replayed (`None` when not replaying). Nodes it
    /// was not sent (they passed the filter plugins only now) fail.
    fn replayed_filter(
        &mut self,
        position: usize,
        ext: &dyn Extender,
        snapshot: &Snapshot,
        feasible: &[u32],
    ) -> Option<Result<FilterResult, ExtenderError>> {
        let Mode::Replay(call) = &mut self.mode else {
            return None;
        };
        let sent = call.sent_names();
        let current: std::collections::HashSet<&str> = feasible
            .iter()
            .map(|&i| snapshot.node(i as usize).info().name())
            .collect();
        let unsent: Vec<String> = feasible
            .iter()
            .map(|&i| snapshot.node(i as usize).info().name())
            .filter(|n| !sent.contains(n))
            .map(str::to_string)
            .collect();
        let reply = call.reply_of(position).and_then(|r| r.filter.take());
        Some(match reply {
            Some(Ok(mut r)) => {
                // Nodes that no longer pass the filter plugins have their failures already.
                r.feasible.retain(|n| current.contains(n.as_str()));
                for n in unsent {
                    r.failed
                        .insert(n, "node(s) were not sent to the extender".to_string());
                }
                Ok(r)
            }
            Some(Err(e)) => Err(e),
            None => Err(ExtenderError::Other(format!(
                "no reply from extender {}",
                ext.name()
            ))),
        })
    }

    /// Takes the errors passed over so far (kube logs them).
    pub fn take_skipped(&mut self) -> Vec<Skipped> {
        std::mem::take(&mut self.skipped)
    }

    /// kube's `findNodesThatPassExtenders` on `feasible`, without the engine's bookkeeping:
    /// the extenders in order, each interested one narrowing the nodes.
    fn run_filters(
        &mut self,
        pod: &Pod,
        snapshot: &Snapshot,
        feasible: &mut Vec<u32>,
        failures: &mut Vec<(u32, NodeFailure)>,
    ) -> Result<(), ScheduleError> {
        if let Mode::Record(r) = &mut self.mode {
            *r = Some(feasible.clone());
            return Err(ScheduleError::NoNodes);
        }
        let list = self.list;
        for (position, ext) in list.iter().enumerate() {
            if feasible.is_empty() {
                break;
            }
            if !ext.is_interested(pod) {
                continue;
            }
            let nodes: Vec<&Node> = feasible
                .iter()
                .map(|&i| snapshot.node(i as usize).node())
                .collect();
            let replayed = if ext.remote().is_some() {
                if !ext.is_filter() {
                    continue;
                }
                self.replayed_filter(position, &**ext, snapshot, feasible)
            } else {
                None
            };
            let result = replayed
                .unwrap_or_else(|| ext.filter(pod, &nodes))
                .and_then(|r| only_given(ext.name(), r, &nodes));
            let r = match result {
                Ok(r) => r,
                Err(e) if ext.is_ignorable() => {
                    self.skipped.push(Skipped {
                        extender: ext.name().to_string(),
                        message: e.to_string(),
                    });
                    continue;
                }
                Err(e) => {
                    return Err(ScheduleError::Extender {
                        extender: ext.name().to_string(),
                        source: Box::new(e),
                    });
                }
            };
            let kept: std::collections::HashSet<&str> =
                r.feasible.iter().map(String::as_str).collect();
            record_failures(ext.name(), &r, &kept, snapshot, feasible, failures);
            feasible.retain(|&i| kept.contains(snapshot.node(i as usize).info().name()));
        }
        Ok(())
    }

    /// Whether the node at `index`, which passed the filter plugins, passes the extenders
    /// too (kube's `evaluateNominatedNode`; an error means it does not).
    pub(crate) fn pass(&mut self, pod: &Pod, snapshot: &Snapshot, index: usize) -> bool {
        let mut feasible = vec![index as u32];
        let mut failures = Vec::new();
        self.run_filters(pod, snapshot, &mut feasible, &mut failures)
            .is_ok()
            && !feasible.is_empty()
    }
}

impl CycleExtension for ExtenderCycle<'_> {
    fn filters(&self) -> bool {
        self.list.iter().any(|e| e.is_filter())
    }

    fn prioritizes(&self) -> bool {
        self.list.iter().any(|e| e.is_prioritizer())
    }

    fn filter(
        &mut self,
        pod: &Pod,
        snapshot: &Snapshot,
        feasible: &mut Vec<u32>,
        failures: &mut Vec<(u32, NodeFailure)>,
    ) -> Result<(), ScheduleError> {
        self.run_filters(pod, snapshot, feasible, failures)
    }

    fn score(&mut self, pod: &Pod, snapshot: &Snapshot, feasible: &[u32], totals: &mut [i64]) {
        let nodes: Vec<&Node> = feasible
            .iter()
            .map(|&i| snapshot.node(i as usize).node())
            .collect();
        let position: HashMap<&str, usize> = nodes
            .iter()
            .enumerate()
            .map(|(k, n)| (n.metadata.name.as_str(), k))
            .collect();
        let list = self.list;
        for (at, ext) in list.iter().enumerate() {
            if !ext.is_interested(pod) {
                continue;
            }
            let reply = match (&mut self.mode, ext.remote()) {
                (_, None) => ext.prioritize(pod, &nodes),
                (Mode::Replay(call), Some(_)) => {
                    match call.reply_of(at).and_then(|r| r.prioritize.take()) {
                        Some(r) => r,
                        None => continue,
                    }
                }
                (_, Some(_)) => continue,
            };
            match reply {
                Err(e) => self.skipped.push(Skipped {
                    extender: ext.name().to_string(),
                    message: e.to_string(),
                }),
                Ok((scores, weight)) => {
                    for hp in scores {
                        // kube: score x weight x (MaxNodeScore / MaxExtenderPriority), in
                        // int64 (Go's arithmetic wraps).
                        let add = hp
                            .score
                            .wrapping_mul(weight)
                            .wrapping_mul(MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY);
                        if let Some(&k) = position.get(hp.host.as_str()) {
                            totals[k] = totals[k].wrapping_add(add);
                        }
                    }
                }
            }
        }
    }
}

/// The extender that binds `pod` instead of the caller (kube: the first binder interested in
/// the pod), with what it is sent.
pub(crate) fn binder_for(
    list: &[Arc<dyn Extender>],
    pod: &Pod,
    node: &str,
) -> Option<ExtenderBinder> {
    list.iter()
        .find(|e| e.is_binder() && e.is_interested(pod))
        .map(|e| ExtenderBinder::new(Arc::clone(e), ExtenderBindingArgs::new(pod, node)))
}

/// kube's `callExtenders` in preemption: each interested extender that supports preemption
/// narrows the candidate nodes and their victims in turn. An ignorable extender's error is
/// skipped (pushed to `skipped`), another's is returned; a node an extender leaves without
/// victims is dropped (ignorable) or an error, as in kube.
pub(crate) fn preemption_candidates(
    list: &[Arc<dyn Extender>],
    pod: &Pod,
    mut victims: NodeVictims,
    snapshot: &Snapshot,
    skipped: &mut Vec<Skipped>,
) -> Result<NodeVictims, Skipped> {
    for ext in list {
        if victims.is_empty() {
            break;
        }
        if !ext.supports_preemption() || !ext.is_interested(pod) {
            continue;
        }
        let fail = |message: String| Skipped {
            extender: ext.name().to_string(),
            message,
        };
        let mut result = match ext.process_preemption(pod, &victims, snapshot) {
            Ok(r) => r,
            Err(e) if ext.is_ignorable() => {
                skipped.push(fail(e.to_string()));
                continue;
            }
            Err(e) => return Err(fail(e.to_string())),
        };
        let empty: Vec<String> = result
            .iter()
            .filter(|(_, v)| v.pods.is_empty())
            .map(|(n, _)| n.clone())
            .collect();
        for node in empty {
            if !ext.is_ignorable() {
                return Err(fail(format!(
                    "expected at least one victim pod on node {node:?}"
                )));
            }
            result.remove(&node);
        }
        victims = result;
    }
    Ok(victims)
}

/// kube's `callExtenders` over the dry run's candidates: their victims go to the extenders
/// that preempt ([`preemption_candidates`]); the candidates left keep their order, nodes an
/// extender adds come after them in name order.
///
/// # Errors
/// A non-ignorable extender's failure ([`ScheduleError::Extender`]).
pub(crate) fn narrow_candidates(
    list: &[Arc<dyn Extender>],
    pod: &Pod,
    snapshot: &Snapshot,
    candidates: Vec<Candidate>,
    skipped: &mut Vec<Skipped>,
) -> Result<Vec<Candidate>, ScheduleError> {
    if candidates.is_empty() || !list.iter().any(|e| e.supports_preemption()) {
        return Ok(candidates);
    }
    let victims: NodeVictims = candidates
        .iter()
        .map(|c| {
            let v = Victims {
                pods: c.victims.iter().map(|p| Pod::clone(p)).collect(),
                num_pdb_violations: c.num_pdb_violations as i64,
            };
            (c.node.clone(), v)
        })
        .collect();
    let mut left = preemption_candidates(list, pod, victims, snapshot, skipped).map_err(|s| {
        ScheduleError::Extender {
            extender: s.extender,
            source: Box::new(ExtenderError::Other(s.message)),
        }
    })?;
    let to_candidate = |node: String, v: Victims| Candidate {
        node,
        victims: v.pods.into_iter().map(std::sync::Arc::new).collect(),
        num_pdb_violations: usize::try_from(v.num_pdb_violations).unwrap_or(0),
    };
    let mut out = Vec::with_capacity(left.len());
    for c in candidates {
        if let Some(v) = left.remove(&c.node) {
            out.push(to_candidate(c.node, v));
        }
    }
    out.extend(left.into_iter().map(|(n, v)| to_candidate(n, v)));
    Ok(out)
}

/// An extender's filter result, refused when it keeps a node it was not given (kube checks
/// names for node-cache-capable extenders; an in-process extender is held to the same rule).
fn only_given(
    extender: &str,
    r: FilterResult,
    nodes: &[&Node],
) -> Result<FilterResult, ExtenderError> {
    match r
        .feasible
        .iter()
        .find(|n| !nodes.iter().any(|x| x.metadata.name == **n))
    {
        Some(n) => Err(ExtenderError::UnknownNode {
            extender: extender.to_string(),
            node: n.clone(),
        }),
        None => Ok(r),
    }
}

/// Records the status of each node in `feasible` the extender did not keep: unresolvable
/// ones take precedence (kube); only nodes the extender was given and did not keep get one.
fn record_failures(
    extender: &str,
    r: &FilterResult,
    kept: &std::collections::HashSet<&str>,
    snapshot: &Snapshot,
    feasible: &[u32],
    failures: &mut Vec<(u32, NodeFailure)>,
) {
    let given: HashMap<&str, u32> = feasible
        .iter()
        .map(|&i| (snapshot.node(i as usize).info().name(), i))
        .collect();
    let statuses = r
        .failed_and_unresolvable
        .iter()
        .map(|(n, m)| (n, m, true))
        .chain(
            r.failed
                .iter()
                .filter(|(n, _)| !r.failed_and_unresolvable.contains_key(*n))
                .map(|(n, m)| (n, m, false)),
        );
    for (name, message, unresolvable) in statuses {
        if kept.contains(name.as_str()) {
            continue;
        }
        if let Some(&index) = given.get(name.as_str()) {
            failures.push((
                index,
                NodeFailure {
                    node: name.clone(),
                    codes: vec![(extender.to_string(), Reason::Extender { unresolvable })],
                    messages: vec![message.clone()],
                },
            ));
        }
    }
}
