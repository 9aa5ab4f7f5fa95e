//! The placed pod's lifecycle: from the assume to the informer's confirmation, one map of
//! assumed pods with a typed [`Stage`], and the one release of a placement.
//!
//! A pod the cycle placed is assumed into the snapshot at once, then goes through these stages
//! (kube's Reserve, Permit, binding cycle and assume cache):
//!
//! ```text
//! Reserve ok ──> Waiting (Permit holds it, until a deadline) ──allowed──> Ready ──┐
//!      └─ every Permit plugin allows ──────────────────────────────────────────> Binding
//! Binding ──bind ok──> Bound (until the informer reports it bound) ──> gone
//! ```
//!
//! Whatever ends a placement that this scheduler will not bind (a Reserve error, a Permit
//! rejection or timeout, a failed bind, the pod deleted while waiting, ready or binding, or
//! bound elsewhere meanwhile) goes through one release ([`Scheduler::release`]): every Reserve
//! plugin unreserves it, in reverse order, and VolumeBinding's assumed volumes are forgotten.
//! The entry leaves the map before its release, so that a bind result arriving later finds
//! nothing to release again: each Reserve has exactly one unreserve or one successful bind.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use super::gang::{COSCHEDULING, PermitStatus};
use super::hooks::ReserveHook;
use super::{EventMask, PermitDecision, Scheduler, SchedulerEvent, Step, Tries};
use crate::model::{Pod, PodKey};
use crate::plugins::dra::{ClaimBinding, allocate_on};
use crate::plugins::volume::{AssumedVolumes, assume_volumes, forget_volumes};

/// Why the caller's bind of a placed pod failed (the binder's or the API server's message),
/// reported to [`Scheduler::finish_binding`]: the placement is released and forgotten and the
/// pod backs off ([`SchedulerEvent::BindingFailed`] carries the message).
///
/// ```
/// use sched_core::scheduler::BindError;
/// let e = BindError::new("pods \"p\" not found");
/// assert_eq!(e.message(), "pods \"p\" not found");
/// assert_eq!(BindError::from("conflict").to_string(), "conflict");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BindError {
    message: String,
}

impl BindError {
    /// A failed bind with this message.
    pub fn new(message: impl Into<String>) -> BindError {
        BindError {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl From<String> for BindError {
    fn from(message: String) -> BindError {
        BindError::new(message)
    }
}

impl From<&str> for BindError {
    fn from(message: &str) -> BindError {
        BindError::new(message)
    }
}

/// A pod assumed on a node, as the cycle placed it: what a release or a requeue needs.
#[derive(Clone, Debug)]
pub(super) struct Placement {
    /// The assumed pod (its node name set), shared with the snapshot; requeued without the
    /// node name ([`Placement::into_pod`]) if the placement is undone.
    pub(super) pod: Arc<Pod>,
    /// The node it is assumed on.
    pub(super) node: String,
    /// The profile (scheduler name) that placed it.
    pub(super) profile: String,
    /// The queue's counts for the pod, to requeue it with them.
    pub(super) tries: Tries,
    /// What VolumeBinding's Reserve changed in the snapshot's storage objects.
    pub(super) volumes: AssumedVolumes,
    /// What DynamicResources' Reserve allocated, for PreBind to write.
    pub(super) claims: Vec<ClaimBinding>,
}

impl Placement {
    /// The pod as it was queued (no node name), to requeue it: no copy once the snapshot
    /// forgot it.
    pub(super) fn into_pod(pod: Arc<Pod>) -> Pod {
        let mut pod = Arc::unwrap_or_clone(pod);
        pod.spec.node_name.clear();
        pod
    }
}

/// Where an assumed pod is between its Reserve and the informer's report of it bound.
#[derive(Clone, Debug)]
pub(super) enum Stage {
    /// Permit plugins hold it until each allows it, or `deadline` passes.
    Waiting {
        /// The placement.
        placement: Placement,
        /// Permit plugins that have not allowed it yet.
        on: Vec<String>,
        /// When the wait times out.
        deadline: Duration,
    },
    /// Every Permit plugin allowed it: to be handed out as [`Step::Bind`], in `order`.
    Ready {
        /// The placement.
        placement: Placement,
        /// Allowed pods are handed out in the order they were allowed.
        order: u64,
    },
    /// Handed out as [`Step::Bind`]; its bind's result has not come back.
    Binding {
        /// The placement.
        placement: Placement,
    },
    /// Bound by the caller; the informer has not reported it bound yet.
    Bound {
        /// The node it is bound to.
        node: String,
    },
}

impl Stage {
    /// The placement a release would give back: `None` once the pod is bound.
    fn into_placement(self) -> Option<Placement> {
        match self {
            Stage::Waiting { placement, .. }
            | Stage::Ready { placement, .. }
            | Stage::Binding { placement } => Some(placement),
            Stage::Bound { .. } => None,
        }
    }

    /// The node the pod is assumed (or bound) on.
    fn node(&self) -> &str {
        match self {
            Stage::Waiting { placement, .. }
            | Stage::Ready { placement, .. }
            | Stage::Binding { placement } => &placement.node,
            Stage::Bound { node } => node,
        }
    }
}

/// The assumed pods by `namespace/name`, each in one [`Stage`].
#[derive(Debug, Default)]
pub(super) struct AssumedPods {
    pods: HashMap<PodKey, Stage>,
    /// The [`Stage::Waiting`] pods by deadline, and the [`Stage::Ready`] pods by order, so
    /// that the next timeout and the next allowed pod are found without a scan (a gang
    /// holds members waiting while thousands of bound pods await their confirmation).
    deadlines: BTreeSet<(Duration, PodKey)>,
    ready: BTreeSet<(u64, PodKey)>,
    /// The order the next allowed pod gets.
    next_order: u64,
}

impl AssumedPods {
    fn index(&mut self, key: &PodKey, stage: &Stage, up: bool) {
        match stage {
            Stage::Waiting { deadline, .. } => {
                let k = (*deadline, key.clone());
                if up {
                    self.deadlines.insert(k);
                } else {
                    self.deadlines.remove(&k);
                }
            }
            Stage::Ready { order, .. } => {
                let k = (*order, key.clone());
                if up {
                    self.ready.insert(k);
                } else {
                    self.ready.remove(&k);
                }
            }
            _ => {}
        }
    }

    /// Puts `key` in `stage` (replacing what it had).
    pub(super) fn insert(&mut self, key: PodKey, stage: Stage) {
        if let Some(old) = self.pods.remove(&key) {
            self.index(&key, &old, false);
        }
        self.index(&key, &stage, true);
        self.pods.insert(key, stage);
    }

    /// Takes `key` out, in whatever stage.
    pub(super) fn remove(&mut self, key: &str) -> Option<Stage> {
        let (key, stage) = self.pods.remove_entry(key)?;
        self.index(&key, &stage, false);
        Some(stage)
    }

    /// Takes `key` out if its stage is one `pick` picks.
    pub(super) fn remove_if(&mut self, key: &str, pick: impl Fn(&Stage) -> bool) -> Option<Stage> {
        if !pick(self.pods.get(key)?) {
            return None;
        }
        self.remove(key)
    }

    /// The stage of `key`.
    pub(super) fn get(&self, key: &str) -> Option<&Stage> {
        self.pods.get(key)
    }

    /// Pods in a stage `f` picks, with the node each is assumed on.
    pub(super) fn in_stage(
        &self,
        f: impl Fn(&Stage) -> bool,
    ) -> impl Iterator<Item = (&str, &str)> {
        self.pods
            .iter()
            .filter(move |(_, s)| f(s))
            .map(|(k, s)| (k.as_str(), s.node()))
    }

    /// The Permit wait that ran out first (then by key), if any ran out by `now`.
    fn expired(&self, now: Duration) -> Option<PodKey> {
        let (deadline, key) = self.deadlines.first()?;
        (*deadline <= now).then(|| key.clone())
    }

    /// When the first Permit wait runs out.
    pub(super) fn next_deadline(&self) -> Option<Duration> {
        self.deadlines.first().map(|(d, _)| *d)
    }

    /// The pod allowed first, moved to [`Stage::Binding`].
    fn next_ready(&mut self) -> Option<PodKey> {
        let (_, key) = self.ready.first()?.clone();
        let placement = self.remove(&key)?.into_placement()?;
        self.insert(key.clone(), Stage::Binding { placement });
        Some(key)
    }

    /// Pods Permit holds, allowed, or being bound: never preemption victims.
    pub(super) fn busy(&self) -> std::collections::HashSet<&str> {
        self.in_stage(|s| !matches!(s, Stage::Bound { .. }))
            .map(|(k, _)| k)
            .collect()
    }

    /// Permit plugin `plugin` allows `key`; once nothing holds it, it is ready. Whether it
    /// was waiting on that plugin.
    fn allow(&mut self, key: &str, plugin: &str) -> bool {
        let Some(Stage::Waiting { on, .. }) = self.pods.get_mut(key) else {
            return false;
        };
        let Some(i) = on.iter().position(|p| p == plugin) else {
            return false;
        };
        on.remove(i);
        if on.is_empty()
            && let Some(placement) = self.remove(key).and_then(Stage::into_placement)
        {
            let order = self.next_order;
            self.next_order += 1;
            self.insert(key.into(), Stage::Ready { placement, order });
        }
        true
    }
}

/// A placement refused by `plugin`.
fn rejected(key: PodKey, plugin: String, reason: String) -> Step {
    Step::Rejected {
        pod: key,
        plugin,
        reason,
    }
}

impl Scheduler {
    /// Runs the Reserve plugins, then the Permit plugins, for a pod just assumed.
    pub(super) fn reserve_and_permit(
        &mut self,
        key: PodKey,
        mut p: Placement,
        now: Duration,
    ) -> Step {
        let hooks = Arc::clone(&self.reserve);
        for hook in hooks.iter() {
            if let Err(reason) = self.reserve_one(hook, &mut p) {
                let plugin = hook.name().to_string();
                self.undo(p, &key, &plugin, &reason, false, now);
                return rejected(key, plugin, reason);
            }
        }
        let mut on = Vec::new();
        let mut timeout: Option<Duration> = None;
        let permit = self.permit.clone();
        for plugin in &permit {
            match plugin.permit(&p.pod, &p.node) {
                PermitDecision::Allow => {}
                PermitDecision::Reject(reason) => {
                    let plugin = plugin.name().to_string();
                    self.undo(p, &key, &plugin, &reason, true, now);
                    return rejected(key, plugin, reason);
                }
                PermitDecision::Wait(d) => {
                    on.push(plugin.name().to_string());
                    timeout = Some(timeout.map_or(d, |t| t.min(d)));
                }
                PermitDecision::AllowWith(others) => {
                    for other in &others {
                        self.assumed.allow(other, plugin.name());
                    }
                }
            }
        }
        match self.gang_permit(&p) {
            Ok(None) => {}
            Ok(Some(d)) => {
                on.push(COSCHEDULING.to_string());
                timeout = Some(timeout.map_or(d, |t| t.min(d)));
            }
            Err(reason) => {
                self.undo(p, &key, COSCHEDULING, &reason, true, now);
                return rejected(key, COSCHEDULING.to_string(), reason);
            }
        }
        match timeout {
            None => self.hand_out(key, p),
            Some(t) => {
                let node = p.node.clone();
                let until = now + t;
                let stage = Stage::Waiting {
                    placement: p,
                    on,
                    deadline: until,
                };
                self.assumed.insert(key.clone(), stage);
                Step::Waiting {
                    pod: key,
                    node,
                    until,
                }
            }
        }
    }

    /// One Reserve hook for the placement; on failure, the reason for kube's message.
    fn reserve_one(&mut self, hook: &ReserveHook, p: &mut Placement) -> Result<(), String> {
        match hook {
            ReserveHook::VolumeBinding => self.reserve_volumes(p),
            ReserveHook::DynamicResources => self.reserve_claims(p),
            ReserveHook::Plugin(r) => r
                .reserve(&p.pod, &p.node)
                .map_err(|e| e.reason().to_string()),
        }
    }

    /// One Unreserve hook for the placement (idempotent: a hook that never reserved, or
    /// already unreserved, does nothing).
    fn unreserve_one(&mut self, hook: &ReserveHook, p: &mut Placement, now: Duration) {
        match hook {
            ReserveHook::VolumeBinding => self.unreserve_volumes(p, now),
            ReserveHook::DynamicResources => self.unreserve_claims(p),
            ReserveHook::Plugin(r) => r.unreserve(&p.pod, &p.node),
        }
    }

    /// Coscheduling's Permit for a placement: `Ok(None)` to go on, `Ok(Some(wait))` to hold it
    /// (the first member to wait moves its siblings to activeQ), `Err` to reject it. On
    /// success every waiting member of the group is allowed.
    fn gang_permit(&mut self, p: &Placement) -> Result<Option<Duration>, String> {
        let Some(g) = &self.gang else {
            return Ok(None);
        };
        let (status, first) = g.permit(&p.pod, &self.snapshot);
        let group = g.group_of_pod(&p.pod.key()).map(str::to_string);
        match status {
            PermitStatus::PodGroupNotFound => Err("PodGroup not found".to_string()),
            PermitStatus::Wait => {
                let wait = g.wait_time(group.as_deref().and_then(|k| g.group(k)));
                if first && let Some(group) = &group {
                    let me = p.pod.key();
                    let siblings: Vec<PodKey> =
                        g.members(group).filter(|k| **k != me).cloned().collect();
                    self.queue.activate(siblings.iter().map(PodKey::as_str));
                }
                Ok(Some(wait))
            }
            PermitStatus::Success => {
                if let Some(group) = &group {
                    for k in self.waiting_members(group) {
                        self.assumed.allow(&k, COSCHEDULING);
                    }
                }
                Ok(None)
            }
            _ => Ok(None),
        }
    }

    /// The members of `group` held at Permit.
    fn waiting_members(&self, group: &str) -> Vec<PodKey> {
        let Some(g) = &self.gang else {
            return Vec::new();
        };
        g.members(group)
            .filter(|k| matches!(self.assumed.get(k), Some(Stage::Waiting { .. })))
            .cloned()
            .collect()
    }

    /// Rejects every member of `group` held at Permit (Coscheduling's `waitingPod.Reject`):
    /// each is released, forgotten and waits in the unschedulable pool. All leave the map
    /// before the first release, so that their releases find none of them waiting.
    pub(super) fn reject_group(&mut self, group: &str, reason: &str, now: Duration) {
        let waiting = self.waiting_members(group);
        let placements: Vec<(PodKey, Placement)> = waiting
            .into_iter()
            .filter_map(|k| {
                let p = self.assumed.remove(&k).and_then(Stage::into_placement)?;
                Some((k, p))
            })
            .collect();
        for (k, p) in placements {
            self.undo(p, &k, COSCHEDULING, reason, true, now);
        }
    }

    /// VolumeBinding's Reserve: the matched PVs and claims to provision are assumed, for the
    /// profile's VolumeBinding (kube's volume binder of that profile) only. On failure,
    /// kube's message.
    fn reserve_volumes(&mut self, p: &mut Placement) -> Result<(), String> {
        let binder = self
            .profiles
            .iter()
            .find(|s| s.name == p.profile)
            .and_then(|s| Some((s.profile.kube_version(), s.profile.volume_binder()?)));
        let Some((version, binder)) = binder else {
            return Ok(());
        };
        match assume_volumes(&mut self.snapshot, binder, &p.pod, &p.node, version) {
            Ok(v) => {
                p.volumes = v;
                Ok(())
            }
            Err(reason) => {
                let mut messages = Vec::new();
                if let Some(info) = self.snapshot.get(&p.node) {
                    reason.write_messages(
                        version,
                        &crate::model::Resources::default(),
                        info.node(),
                        &mut |m| messages.push(m.into_owned()),
                    );
                }
                Err(messages.join(", "))
            }
        }
    }

    /// DynamicResources' Reserve, for a profile that runs it: the pod's claims are allocated
    /// on the node again (the Filter's answer for the node, the snapshot unchanged since) and
    /// the new allocations held in flight, so that no other pod's cycle takes their devices
    /// or allocates the claims again. On failure, kube's message.
    fn reserve_claims(&mut self, p: &mut Placement) -> Result<(), String> {
        if p.pod.spec.resource_claims.is_empty()
            || !self
                .profiles
                .iter()
                .any(|s| s.name == p.profile && s.profile.runs_dynamic_resources())
        {
            return Ok(());
        }
        let Some(info) = self.snapshot.get(&p.node) else {
            return Ok(());
        };
        let claims = allocate_on(self.snapshot.dra(), &p.pod, info.node())?;
        if claims.iter().any(|c| c.allocation.is_some()) {
            let dra = self.snapshot.dra_mut();
            for c in &claims {
                if let Some(a) = &c.allocation {
                    dra.set_pending(&c.namespace, &c.name, a.clone());
                }
            }
        }
        p.claims = claims;
        Ok(())
    }

    /// DynamicResources' Unreserve: the allocations held in flight for the placement are
    /// dropped (idempotent: the placement forgets them).
    fn unreserve_claims(&mut self, p: &mut Placement) {
        let claims = std::mem::take(&mut p.claims);
        if claims.iter().any(|c| c.allocation.is_some()) {
            let dra = self.snapshot.dra_mut();
            for c in &claims {
                if c.allocation.is_some() {
                    dra.clear_pending(&c.namespace, &c.name);
                }
            }
        }
    }

    /// After the bind (kube's `AssumeClaimAfterAPICall`): the claims hold what PreBind wrote,
    /// their allocations and the pod in `status.reservedFor`, until the informer reports them.
    fn confirm_claims(&mut self, p: &Placement) {
        if p.claims.is_empty() {
            return;
        }
        let dra = self.snapshot.dra_mut();
        for c in &p.claims {
            dra.confirm(
                &c.namespace,
                &c.name,
                c.allocation.clone(),
                c.consumer.clone(),
            );
        }
    }

    /// Hands a placement out as [`Step::Bind`]; it is binding until its result comes.
    fn hand_out(&mut self, key: PodKey, p: Placement) -> Step {
        let step = self.bind_step(key.clone(), &p);
        self.assumed.insert(key, Stage::Binding { placement: p });
        step
    }

    fn bind_step(&self, pod: PodKey, p: &Placement) -> Step {
        Step::Bind {
            pod,
            uid: p.pod.metadata.uid.clone(),
            node: p.node.clone(),
            profile: p.profile.clone(),
            volumes: p.volumes.clone(),
            claims: p.claims.clone(),
            extender_binder: self.binder_for(&p.pod, &p.node),
        }
    }

    /// What the lifecycle has to do before the queue is looked at: a Permit wait that ran out
    /// is a rejection; a pod every Permit plugin allowed is handed out.
    pub(super) fn lifecycle_step(&mut self, now: Duration) -> Option<Step> {
        if let Some(key) = self.assumed.expired(now) {
            let Some(Stage::Waiting { placement, on, .. }) = self.assumed.remove(&key) else {
                return None;
            };
            let plugin = on.first().cloned().unwrap_or_default();
            let reason = "rejected due to timeout after waiting at permit".to_string();
            self.undo(placement, &key, &plugin, &reason, true, now);
            return Some(rejected(key, plugin, reason));
        }
        let key = self.assumed.next_ready()?;
        match self.assumed.get(&key) {
            Some(Stage::Binding { placement }) => Some(self.bind_step(key, placement)),
            _ => None,
        }
    }

    /// Pods held by Permit plugins, with the node each is assumed on.
    pub fn waiting(&self) -> impl Iterator<Item = (&str, &str)> {
        self.assumed
            .in_stage(|s| matches!(s, Stage::Waiting { .. }))
    }

    /// Pods allowed by Permit or handed out for binding, whose bind has not finished, with
    /// the node each is assumed on.
    pub fn binding(&self) -> impl Iterator<Item = (&str, &str)> {
        self.assumed
            .in_stage(|s| matches!(s, Stage::Ready { .. } | Stage::Binding { .. }))
    }

    /// The Permit plugin `plugin` allows the waiting pod `pod`; once every plugin that made it
    /// wait has allowed it, the next [`Scheduler::schedule_one`] hands it out as
    /// [`Step::Bind`]. Returns whether the pod was waiting on that plugin.
    pub fn allow(&mut self, pod: &str, plugin: &str) -> bool {
        self.assumed.allow(pod, plugin)
    }

    /// The Permit plugin `plugin` rejects the waiting pod `pod`: it is unreserved, forgotten
    /// and waits in the unschedulable pool. Returns whether the pod was waiting.
    pub fn reject(&mut self, pod: &str, plugin: &str, reason: &str, now: Duration) -> bool {
        let waiting = |s: &Stage| matches!(s, Stage::Waiting { .. });
        let Some(placement) = self
            .assumed
            .remove_if(pod, waiting)
            .and_then(Stage::into_placement)
        else {
            return false;
        };
        self.undo(placement, pod, plugin, reason, true, now);
        true
    }

    /// The caller's bind of `pod` finished. On success the assumed pod stays (confirmed
    /// when the informer reports it bound). On failure it is forgotten, requeued with
    /// backoff, and pods waiting for freed resources may try again (kube's
    /// `handleBindingCycleError`). Unknown pods are ignored.
    pub fn finish_binding(&mut self, pod: &str, result: Result<(), BindError>, now: Duration) {
        let binding = |s: &Stage| matches!(s, Stage::Ready { .. } | Stage::Binding { .. });
        let Some(p) = self
            .assumed
            .remove_if(pod, binding)
            .and_then(Stage::into_placement)
        else {
            return;
        };
        match result {
            Ok(()) => {
                self.confirm_claims(&p);
                let node = p.node;
                let stage = Stage::Bound { node: node.clone() };
                let key = PodKey::from(pod);
                self.assumed.insert(key.clone(), stage);
                self.events
                    .push(SchedulerEvent::Scheduled { pod: key, node });
            }
            Err(error) => {
                let mut p = p;
                self.release(&mut p, now);
                // Forget the assumed pod; it is gone already when its node was deleted.
                self.forget(pod);
                self.queue
                    .requeue_with_backoff(Placement::into_pod(p.pod), p.tries, now);
                self.events.push(SchedulerEvent::BindingFailed {
                    pod: pod.into(),
                    node: p.node,
                    message: error.message,
                });
                self.queue.on_event(EventMask::ASSIGNED_POD_DELETE, now);
            }
        }
    }

    /// The pod was deleted, or the informer reported it bound elsewhere than assumed: it
    /// leaves the lifecycle, released unless this scheduler bound it (a bind of ours still
    /// running fails, as kube's would, and unreserves).
    pub(super) fn leave(&mut self, key: &str, now: Duration) {
        if let Some(mut p) = self.assumed.remove(key).and_then(Stage::into_placement) {
            self.release(&mut p, now);
        }
    }

    /// The informer reported `key` bound to `node`. Where it is assumed, the bind happened:
    /// it leaves the lifecycle without a release (a pod held at Permit stays held). Elsewhere
    /// (another scheduler won), it leaves as a deleted pod does: a bind of ours still running
    /// will fail, as kube's would, and the placement is released. Whether this scheduler
    /// placed it there (allowed, being bound or bound by it).
    pub(super) fn reported_bound(&mut self, key: &str, node: &str, now: Duration) -> bool {
        match self.assumed.get(key) {
            None => false,
            Some(stage) if stage.node() == node => {
                let Some(stage) = self
                    .assumed
                    .remove_if(key, |s| !matches!(s, Stage::Waiting { .. }))
                else {
                    return false;
                };
                if let Some(p) = stage.into_placement() {
                    // Bound before its bind reported back: PreBind wrote the claims.
                    self.confirm_claims(&p);
                }
                true
            }
            Some(_) => {
                self.leave(key, now);
                false
            }
        }
    }

    /// The node `node` went away with these pods: those bound by this scheduler leave the
    /// lifecycle; pods still being bound there wait for their bind's result.
    pub(super) fn node_gone(&mut self, pods: &[Pod]) {
        for p in pods {
            self.assumed
                .remove_if(&p.key(), |s| matches!(s, Stage::Bound { .. }));
        }
    }

    /// Gives back what a placement's Reserve took: every Reserve plugin unreserves it (in
    /// reverse order) and VolumeBinding's assumed volumes are forgotten (the one release; see
    /// the module docs).
    fn release(&mut self, p: &mut Placement, now: Duration) {
        let hooks = Arc::clone(&self.reserve);
        for hook in hooks.iter().rev() {
            self.unreserve_one(hook, p, now);
        }
        // Coscheduling's Unreserve: the group's waiting members go too.
        if let Some(group) = self.gang.as_mut().and_then(|g| g.unreserve(&p.pod)) {
            self.reject_group(&group, "rejection in Unreserve", now);
        }
    }

    /// VolumeBinding's Unreserve: the PVs and claims assumed for the placement are free again.
    fn unreserve_volumes(&mut self, p: &mut Placement, now: Duration) {
        if p.volumes.is_empty() {
            return;
        }
        // The PVs and claims are free again, which can help pods that found no volume (kube
        // waits for the next storage event there).
        forget_volumes(&mut self.snapshot, std::mem::take(&mut p.volumes));
        self.queue
            .on_event(EventMask::PV_UPDATE | EventMask::PVC_UPDATE, now);
    }

    /// Forgets an assumed pod, if the snapshot still has it.
    fn forget(&mut self, key: &str) {
        if self.snapshot.node_of(key).is_some()
            && let Err(e) = self.snapshot.forget(key)
        {
            self.reject_event(format!("pod {key}"), e);
        }
    }

    /// Releases and forgets a placement refused before its bind, and requeues the pod: into
    /// the unschedulable pool (a Permit rejection) or with backoff (a Reserve error).
    fn undo(
        &mut self,
        mut p: Placement,
        key: &str,
        plugin: &str,
        reason: &str,
        unschedulable: bool,
        now: Duration,
    ) {
        self.release(&mut p, now);
        self.forget(key);
        self.events.push(SchedulerEvent::FailedScheduling {
            pod: key.into(),
            message: format!("{plugin}: {reason}"),
        });
        // What the pod held is free again (for the others: the pod itself is requeued after).
        self.queue.on_event(EventMask::ASSIGNED_POD_DELETE, now);
        if unschedulable {
            // A pod Coscheduling rejected waits for the events it registers (a pod added, a
            // PodGroup added or changed), as kube requeues by the rejecting plugin's events.
            let waiting_for = if plugin == COSCHEDULING {
                super::gang::EVENTS
            } else {
                EventMask::ALL
            };
            self.queue
                .requeue_unschedulable(Placement::into_pod(p.pod), p.tries, waiting_for, now);
        } else {
            self.queue
                .requeue_with_backoff(Placement::into_pod(p.pod), p.tries, now);
        }
    }
}
