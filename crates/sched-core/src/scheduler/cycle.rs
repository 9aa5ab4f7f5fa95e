//! One scheduling attempt ([`Scheduler::schedule_one`]): the lifecycle's due steps first,
//! then the next pod of the queue through its profile (its nominated node first, the
//! extenders, every node), and the profile's PostFilter plugins (preemption) when no node
//! takes it.

use std::sync::Arc;
use std::time::Duration;

use rand::Rng;

use super::{
    EventMask, ExtenderCycle, Parked, Scheduler, SchedulerEvent, Skipped, Step, Tries, binding,
    events_for, extender, gang_preemption, post_filter, preemption,
};
use crate::extender::{ExtenderCall, ExtenderCallId};
use crate::framework::KubeVersion;
use crate::model::{Pod, PodKey};
use crate::plugins::dra::Deallocation;
use crate::profile::{FitError, ScheduleError, Unassumed};
use crate::snapshot::Snapshot;

/// What the PostFilter point leaves besides a step: kube's message, the extenders passed over
/// and DynamicResources' deallocation.
struct PostFilterReport {
    message: String,
    skipped: Vec<Skipped>,
    deallocate: Option<Deallocation>,
}

impl Scheduler {
    /// Runs one scheduling attempt: the next pod of the queue through its profile. A placed
    /// pod is assumed into the snapshot and returned as [`Step::Bind`].
    pub fn schedule_one(&mut self, now: Duration) -> Step {
        // Permit waits that ran out are rejections; pods every Permit plugin allowed go out.
        if let Some(step) = self.lifecycle_step(now) {
            return step;
        }
        // Remote extenders' replies given back finish their pods' attempts.
        while let Some(call) = self.replies.pop_front() {
            if let Some(step) = self.resume(call, now) {
                return step;
            }
        }
        loop {
            let Some(pod) = self.queue.pop(now) else {
                let until = match (self.queue.next_wakeup(), self.assumed.next_deadline()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                return Step::Idle { until };
            };
            let key = pod.key();
            match self.slot_of(&pod) {
                Some(slot) if !pod.is_terminating() => return self.attempt(slot, key, pod, now),
                _ => {
                    self.queue.done(&key);
                }
            }
        }
    }

    /// One attempt for a popped pod of profile `slot`: its nominated node first, then every
    /// node; a placed pod goes on to Reserve and Permit. A pod a remote extender is
    /// interested in is parked after the filter plugins, its extenders' calls handed out.
    fn attempt(&mut self, slot: usize, key: PodKey, pod: Arc<Pod>, now: Duration) -> Step {
        // Coscheduling's PreFilter: a refused group member is unresolvable (no preemption).
        if let Some(g) = &mut self.gang
            && let Err(message) = g.pre_filter(&pod, &self.snapshot, now)
        {
            return self.gang_refused(key, &pod, message, now);
        }
        let remote = !self.extenders.is_empty() && self.needs_call(&pod);
        // A parked pod's nominated node is not tried on its own (it would need a call of
        // its own): the whole search covers it.
        if !remote && let Some(node) = self.nominated_fit(slot, &key, &pod) {
            let tries = self.queue.done(&key).unwrap_or_default();
            let mut pod = Arc::unwrap_or_clone(pod);
            pod.spec.node_name.clone_from(&node);
            return self.placed(slot, key, Arc::new(pod), node, tries, now);
        }
        let start_index = self.next_start_index;
        let mode = if remote { Pass::Record } else { Pass::Plain };
        let (result, skipped, recorded) = self.run_cycle(slot, &pod, mode);
        self.note_skipped(&key, skipped);
        if let Some(nodes) = recorded {
            return self.park(key, Arc::unwrap_or_clone(pod), &nodes, start_index);
        }
        self.finish_attempt(slot, key, pod, result, now)
    }

    /// The profile's cycle for `pod` with the extenders in `pass`: the result, the extender
    /// errors passed over, and the nodes a recording pass kept.
    fn run_cycle(
        &mut self,
        slot: usize,
        pod: &Pod,
        pass: Pass<'_>,
    ) -> (
        Result<Unassumed, ScheduleError>,
        Vec<Skipped>,
        Option<Vec<u32>>,
    ) {
        // Nodes where the pod does not fit beside the pods nominated there count as
        // infeasible (kube's RunFilterPluginsWithNominatedPods); none without nominations.
        let blocked = if self.nominator.holds_any(pod) {
            self.nominator
                .blocked(&self.profiles[slot].profile, &mut self.snapshot, pod)
        } else {
            Ok(Vec::new())
        };
        let s = &mut self.profiles[slot];
        s.cache.set_next_start_index(self.next_start_index);
        let mut skipped = Vec::new();
        let mut recorded = None;
        let extenders = &self.extenders;
        let result = blocked.and_then(|blocked| {
            let mut ext = match pass {
                _ if extenders.is_empty() => None,
                Pass::Plain => Some(ExtenderCycle::new(extenders)),
                Pass::Record => Some(ExtenderCycle::record(extenders)),
                Pass::Replay(call) => Some(ExtenderCycle::replay(extenders, call)),
            };
            let r = match ext.as_mut() {
                None => {
                    s.profile
                        .schedule_unassumed(&mut s.cache, pod, &self.snapshot, &blocked, None)
                }
                Some(e) => s.profile.schedule_unassumed(
                    &mut s.cache,
                    pod,
                    &self.snapshot,
                    &blocked,
                    Some(e),
                ),
            };
            if let Some(mut e) = ext {
                skipped = e.take_skipped();
                recorded = e.recorded();
            }
            r
        });
        self.next_start_index = self.profiles[slot].cache.next_start_index();
        (result, skipped, recorded)
    }

    /// The attempt's result: placed (Reserve and Permit), unschedulable (PostFilter), or an
    /// error (backoff).
    fn finish_attempt(
        &mut self,
        slot: usize,
        key: PodKey,
        pod: Arc<Pod>,
        result: Result<Unassumed, ScheduleError>,
        now: Duration,
    ) -> Step {
        match result {
            Ok(u) => {
                // The queue lets go of the pod first, so that it moves into the snapshot
                // uncopied; the placement shares it.
                let tries = self.queue.done(&key).unwrap_or_default();
                let pod = Arc::unwrap_or_clone(pod);
                let index = u.result.node_index;
                match self.snapshot.assume_at(pod, index, u.requests, u.non_zero) {
                    Ok(pod) => self.placed(slot, key, pod, u.result.node, tries, now),
                    Err(refused) => {
                        self.queue.requeue_with_backoff(*refused.pod, tries, now);
                        self.failed_event(key, ScheduleError::Assume(refused.error))
                    }
                }
            }
            Err(ScheduleError::Unschedulable(error)) => {
                self.unschedulable(slot, key, Arc::unwrap_or_clone(pod), error, now)
            }
            Err(ScheduleError::PreEnqueue {
                plugin, message, ..
            }) => {
                // Only DynamicResources has a PreEnqueue check: its claims decide.
                self.queue
                    .unschedulable(&key, EventMask::RESOURCE_CLAIM, now);
                Step::Gated {
                    pod: key,
                    plugin,
                    message,
                }
            }
            Err(error) => {
                self.queue.backoff_after_error(&key, now);
                self.failed_event(key, error)
            }
        }
    }

    /// The attempt failed with an error that is not the pod's (it backs off): the event and
    /// the step.
    fn failed_event(&mut self, key: PodKey, error: ScheduleError) -> Step {
        self.events.push(SchedulerEvent::FailedScheduling {
            pod: key.clone(),
            message: error.to_string(),
        });
        Step::Failed { pod: key, error }
    }

    /// Parks `pod` (it stays in flight) on a call of the remote extenders interested in it,
    /// over the nodes that passed the filter plugins.
    fn park(&mut self, key: PodKey, pod: Pod, nodes: &[u32], start_index: usize) -> Step {
        self.last_call += 1;
        let id = ExtenderCallId(self.last_call);
        let nodes = nodes
            .iter()
            .map(|&i| self.snapshot.node(i as usize).node().clone())
            .collect();
        let extenders = self
            .extenders
            .iter()
            .enumerate()
            .filter_map(|(i, e)| {
                let r = e.remote()?;
                ((e.is_filter() || e.is_prioritizer()) && e.is_interested(&pod))
                    .then(|| (i, r.clone()))
            })
            .collect();
        self.parked.insert(
            key,
            Parked {
                call: id,
                start_index,
            },
        );
        Step::CallExtenders {
            call: Box::new(ExtenderCall::new(id, pod, nodes, extenders)),
        }
    }

    /// A call given back: the parked pod's attempt runs again on the current snapshot, the
    /// remote extenders answering from the replies. `None` when the reply is dropped: the
    /// pod was deleted, bound elsewhere or parked again since, or it changed (then it is
    /// tried again).
    fn resume(&mut self, mut call: ExtenderCall, now: Duration) -> Option<Step> {
        let key = call.pod_key();
        if self.parked.get(&key).map(|p| p.call) != Some(call.id()) {
            return None;
        }
        let parked = self.parked.remove(&key)?;
        let (pod, changed) = self.queue.in_flight(&key)?;
        if changed {
            self.queue.retry_in_flight(&key, now);
            return None;
        }
        let pod = pod.clone();
        let slot = match self.slot_of(&pod) {
            Some(slot) if !pod.is_terminating() => slot,
            _ => {
                self.queue.done(&key);
                return None;
            }
        };
        // The second pass starts where the first did, so that it meets the same nodes; the
        // round-robin index stays where the first left it.
        let index = std::mem::replace(&mut self.next_start_index, parked.start_index);
        let (result, skipped, _) = self.run_cycle(slot, &pod, Pass::Replay(&mut call));
        self.next_start_index = index;
        self.note_skipped(&key, skipped);
        Some(self.finish_attempt(slot, key, pod, result, now))
    }

    /// Coscheduling's PreFilter refused the pod: it waits for a PodGroup or pod event (or the
    /// longest stay), and Coscheduling's PostFilter runs (kube runs PostFilter after an
    /// unresolvable PreFilter too), which may reject and back off its group.
    fn gang_refused(&mut self, key: PodKey, pod: &Pod, message: String, now: Duration) -> Step {
        self.queue.unschedulable(&key, super::gang::EVENTS, now);
        self.gang_post_filter(pod, now);
        let mut error = FitError::new(key.clone(), self.snapshot.len(), Vec::new());
        error.pre_filter_message = Some(message);
        self.events.push(SchedulerEvent::FailedScheduling {
            pod: key.clone(),
            message: error.to_string(),
        });
        Step::Unschedulable {
            pod: key,
            error,
            deallocate: None,
        }
    }

    /// Coscheduling's PostFilter for a pod no node takes: it may reject every waiting member
    /// of the pod's group.
    fn gang_post_filter(&mut self, pod: &Pod, now: Duration) {
        let Some(g) = &mut self.gang else {
            return;
        };
        if g.group_of_pod(&pod.key()).is_none() {
            return;
        }
        let status = g.post_filter(pod, &self.snapshot, now);
        if let Some(group) = status.reject_group {
            self.reject_group(&group, "optimistic rejection in PostFilter", now);
        }
    }

    /// A nominated pod is tried on its node first (kube's evaluateNominatedNode), with the
    /// pods nominated there before it held: the node, with the pod assumed there, if it fits.
    fn nominated_fit(&mut self, slot: usize, key: &str, pod: &Pod) -> Option<String> {
        let node = self.nominator.node_of(key)?.to_string();
        let index = self.snapshot.index_of(&node)?;
        let fits = matches!(
            self.nominator.fits_indexed(
                &self.profiles[slot].profile,
                &mut self.snapshot,
                pod,
                index
            ),
            Ok(Ok(()))
        ) && (self.extenders.is_empty()
            || ExtenderCycle::new(&self.extenders).pass(pod, &self.snapshot, index));
        (fits && self.snapshot.assume(pod.clone(), &node).is_ok()).then_some(node)
    }

    /// The pod is assumed on `node`: it leaves the queue and its nomination, and goes on to
    /// Reserve and Permit.
    fn placed(
        &mut self,
        slot: usize,
        key: PodKey,
        pod: Arc<Pod>,
        node: String,
        tries: Tries,
        now: Duration,
    ) -> Step {
        self.nominator.delete(&key);
        let placement = binding::Placement {
            pod,
            node,
            profile: self.profiles[slot].name.clone(),
            tries,
            volumes: Default::default(),
            claims: Vec::new(),
        };
        self.reserve_and_permit(key, placement, now)
    }

    /// No node takes the pod: it waits for an event that can help it, and the profile's
    /// PostFilter plugins (preemption) may nominate it to a node.
    fn unschedulable(
        &mut self,
        slot: usize,
        key: PodKey,
        pod: Pod,
        mut error: FitError,
        now: Duration,
    ) -> Step {
        let mut waiting_for = EventMask::default();
        error.for_each_node(&mut |_, reasons| {
            for reason in reasons {
                waiting_for = waiting_for | events_for(reason);
            }
        });
        if error.num_failures() == 0 {
            // No node at all.
            waiting_for = EventMask::NODE_ADD;
        }
        self.queue.unschedulable(&key, waiting_for, now);
        if self.profiles[slot].post_filter.is_empty() {
            self.gang_post_filter(&pod, now);
            self.events.push(SchedulerEvent::FailedScheduling {
                pod: key.clone(),
                message: error.to_string(),
            });
            return Step::Unschedulable {
                pod: key,
                error,
                deallocate: None,
            };
        }
        // Coscheduling's PostFilter after preemption's, when preemption nominated nothing
        // (kube stops at the first PostFilter plugin that succeeds; preemption runs on the
        // cycle's snapshot, where the group's waiting members still are).
        let gang_pod = self.gang.is_some().then(|| pod.clone());
        let (step, post) = self.run_post_filter(slot, pod, &error, waiting_for, now);
        if let Some(p) = gang_pod
            && step.is_none()
        {
            self.gang_post_filter(&p, now);
        }
        // kube v1.34 prints PostFilter's message after the reasons; v1.20 did not.
        if self.profiles[slot].profile.kube_version() >= KubeVersion::V1_34 {
            error.post_filter_message = Some(post.message);
        }
        self.events.push(SchedulerEvent::FailedScheduling {
            pod: key.clone(),
            message: error.to_string(),
        });
        self.note_skipped(&key, post.skipped);
        let mut step = step.unwrap_or(Step::Unschedulable {
            pod: key,
            error,
            deallocate: None,
        });
        // DynamicResources' deallocation rides on whichever step PostFilter ended with.
        if let Step::Preempt { deallocate, .. } | Step::Unschedulable { deallocate, .. } = &mut step
        {
            *deallocate = post.deallocate;
        }
        step
    }

    /// The profile's PostFilter plugins (DefaultPreemption) for a pod no node takes:
    /// `Some(Step::Preempt)` when preemption nominated the pod to a node, kube's PostFilter
    /// message, and the extender errors passed over.
    fn run_post_filter(
        &mut self,
        slot: usize,
        pod: Pod,
        error: &FitError,
        waiting_for: EventMask,
        now: Duration,
    ) -> (Option<Step>, PostFilterReport) {
        let key = pod.key();
        let landed = self.landed(&key, &pod);
        // The members a gang still needs besides this one: it preempts only for them all.
        let missing = self.missing_members(&pod);
        // Pods still being bound or held at Permit are not victims.
        let busy = self.assumed.busy();
        // A gang loses at most its members beyond `minMember` (Coscheduling's budgets).
        let budgets = self
            .gang
            .as_ref()
            .map(super::gang::Coscheduling::budgets)
            .unwrap_or_default();
        let protect = |k: &str| busy.contains(k);
        // kube's callExtenders: the extenders that preempt narrow the candidates.
        let skipped = std::cell::RefCell::new(Vec::new());
        let extenders = &self.extenders;
        let narrow = |p: &Pod, snapshot: &Snapshot, candidates| {
            extender::narrow_candidates(
                extenders,
                p,
                snapshot,
                candidates,
                &mut skipped.borrow_mut(),
            )
        };
        let env = preemption::Environment::new(&self.nominator)
            .pdbs(&self.pdbs)
            .protect(&protect)
            .groups(&budgets)
            .candidates(&narrow);
        let rng = &mut self.preemption_rng;
        let mut out = post_filter::run_post_filter(
            &self.profiles[slot].post_filter,
            &self.profiles[slot].profile,
            &mut self.snapshot,
            landed.as_ref().unwrap_or(&pod),
            error,
            &mut |n| rng.random_range(0..n),
            &env,
        );
        // A gang's member: the victims of the whole gang's plan, or none.
        let others = match &missing {
            Some(missing) => gang_preemption::apply(
                &self.profiles[slot],
                &self.snapshot,
                landed.as_ref().unwrap_or(&pod),
                missing,
                &mut |n| rng.random_range(0..n),
                &env,
                &mut out,
            ),
            None => Vec::new(),
        };
        let mut skipped = skipped.into_inner();
        if let Some(Err(ScheduleError::Extender { extender, source })) = &out.preemption {
            skipped.push(Skipped {
                extender: extender.clone(),
                message: source.to_string(),
            });
        }
        let report = PostFilterReport {
            message: out.message,
            skipped,
            deallocate: out.deallocate,
        };
        let step = self.post_filter_step(key, pod, out.preemption, &others, waiting_for, now);
        (step, report)
    }

    /// The pod as the API server has it once this scheduler's status patches landed (its
    /// nomination), when that differs from the pod as given.
    fn landed(&self, key: &str, pod: &Pod) -> Option<Pod> {
        match self.nominator.node_of(key) {
            Some(node) if node != pod.status.nominated_node_name => {
                let mut p = pod.clone();
                p.status.nominated_node_name = node.to_string();
                Some(p)
            }
            _ => None,
        }
    }

    /// What PostFilter's preemption outcome makes of the pod: nominated with its victims
    /// (the room planned for a gang's other members, `others`, is theirs too), or its
    /// nomination cleared when preemption cannot help.
    fn post_filter_step(
        &mut self,
        key: PodKey,
        pod: Pod,
        preemption: Option<Result<preemption::Outcome, ScheduleError>>,
        others: &[(PodKey, String)],
        waiting_for: EventMask,
        now: Duration,
    ) -> Option<Step> {
        match preemption {
            Some(Ok(preemption::Outcome::Preempt(c))) => {
                // Lower-priority pods nominated where the gang's other members are planned
                // lose their nomination, as on the preemptor's node.
                let mut unnominated = Vec::new();
                for (_, node) in others {
                    for other in self.nominator.lower_priority_on(node, &pod) {
                        self.nominator.delete(&other);
                        unnominated.push(other);
                    }
                }
                Some(self.nominate(key, pod, c, unnominated, waiting_for, now))
            }
            Some(Ok(preemption::Outcome::NoCandidate(_))) => {
                // kube clears the nomination when preemption cannot help.
                self.nominator.delete(&key);
                None
            }
            // Not eligible, no candidate left by the extenders, a plugin error, or no
            // preemption: the nomination stays as it is.
            _ => None,
        }
    }

    /// Preemption chose node `c.node` for `pod`: the pod is nominated there and waits for its
    /// victims' deletion, handed out as [`Step::Preempt`].
    fn nominate(
        &mut self,
        key: PodKey,
        pod: Pod,
        c: preemption::Candidate,
        mut unnominated: Vec<PodKey>,
        waiting_for: EventMask,
        now: Duration,
    ) -> Step {
        // Lower-priority pods nominated to that node may no longer fit there: their
        // nominations are cleared (kube's prepareCandidate).
        for other in self.nominator.lower_priority_on(&c.node, &pod) {
            self.nominator.delete(&other);
            unnominated.push(other);
        }
        self.nominator.add(pod, Some(&c.node));
        // The victims' deletion (an assigned pod deleted) wakes it.
        self.queue
            .unschedulable(&key, waiting_for | EventMask::ASSIGNED_POD_DELETE, now);
        // Victims already being deleted need no second deletion (kube skips the API call for
        // them).
        let victims = c
            .victims
            .iter()
            .filter(|v| !v.is_terminating())
            .map(|v| v.key())
            .collect();
        Step::Preempt {
            pod: key,
            victims,
            node: c.node,
            unnominated,
            deallocate: None,
        }
    }
}

impl Scheduler {
    /// The pending members the group of `pod` needs besides it to reach `minMember`, when it
    /// needs any (Coscheduling on, the group known): [`gang_preemption`]'s input.
    fn missing_members(&self, pod: &Pod) -> Option<gang_preemption::Missing> {
        let g = self.gang.as_ref()?;
        let key = pod.key();
        let group = g.group_of_pod(&key)?;
        let min_member = usize::try_from(g.group(group)?.spec.min_member.max(0)).unwrap_or(0);
        let assigned = g.assigned(group, &self.snapshot, Some(&key));
        let needed = min_member.saturating_sub(assigned + 1);
        if needed == 0 {
            return None;
        }
        let mut pending: Vec<&Pod> = g
            .members(group)
            .filter(|k| **k != key && self.snapshot.node_of(k).is_none())
            .filter_map(|k| self.queue.waiting_pod(k))
            .collect();
        pending.sort_by_cached_key(|p| g.sort_key(p, Duration::ZERO));
        Some(gang_preemption::Missing {
            group: group.to_string(),
            needed,
            pending: pending.into_iter().cloned().collect(),
        })
    }
}

/// How an attempt's cycle runs the extenders.
enum Pass<'a> {
    /// Every extender called in the engine.
    Plain,
    /// The first pass of a pod a remote extender is interested in.
    Record,
    /// The second pass, with the remote extenders' replies.
    Replay(&'a mut ExtenderCall),
}
