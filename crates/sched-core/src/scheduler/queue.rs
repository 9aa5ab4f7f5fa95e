//! kube-scheduler's scheduling queue (`PriorityQueue`): activeQ ordered by PrioritySort,
//! backoffQ, the unschedulable pool, and gated pods, with time passed in.

use std::cmp::Reverse;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;
use std::time::Duration;

use super::events::EventMask;
use crate::model::{Pod, PodKey};

/// The queue's timing (kube's `podInitialBackoffSeconds`, `podMaxBackoffSeconds` and
/// `podMaxInUnschedulablePodsDuration`) and its backoff behaviour (kube's
/// `SchedulerPopFromBackoffQ` feature).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueSettings {
    /// Backoff after the first failed attempt (kube's default 1 s).
    pub initial_backoff: Duration,
    /// Longest backoff (kube's default 10 s).
    pub max_backoff: Duration,
    /// Longest stay in the unschedulable pool without a helpful event (kube's 5 minutes).
    pub max_in_unschedulable: Duration,
    /// kube's `SchedulerPopFromBackoffQ` (beta and on by default since v1.33, so `true` here):
    /// a backoff ends on a 1-second ordering window (its end, the failure time plus the
    /// backoff, is truncated to a whole second, and the pod backs off until the window after
    /// it), pods ending in one window leave in PrioritySort order, and when activeQ is empty
    /// the next pod rejected by a plugin is popped from backoffQ before its backoff ends
    /// (pods that failed with an error still wait); and, as in v1.34, the backoff doubles with
    /// the errors in a row while there are any, else with the rejections ([`Tries`]). `false`
    /// gives kube v1.32's queue: the backoff doubles with the attempts and ends exactly at the
    /// failure time plus the backoff, and only activeQ is popped.
    /// Windows are whole seconds of the engine's clock (the `now` passed in), as kube's are of
    /// the wall clock.
    pub pop_from_backoff: bool,
}

impl Default for QueueSettings {
    fn default() -> Self {
        QueueSettings {
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(10),
            max_in_unschedulable: Duration::from_secs(300),
            pop_from_backoff: true,
        }
    }
}

impl QueueSettings {
    /// These backoff bounds, the 5-minute unschedulable limit.
    pub fn with_backoff(initial: Duration, max: Duration) -> QueueSettings {
        QueueSettings {
            initial_backoff: initial,
            max_backoff: max,
            ..QueueSettings::default()
        }
    }

    /// kube's `calculateBackoffDuration`: the initial backoff doubled for each failure after
    /// the first, capped at the maximum (no backoff before any failure).
    pub fn backoff(&self, failures: u32) -> Duration {
        if failures == 0 {
            return Duration::ZERO;
        }
        let mut d = self.initial_backoff;
        for _ in 1..failures {
            if d > self.max_backoff.saturating_sub(d) {
                return self.max_backoff;
            }
            d += d;
        }
        d.min(self.max_backoff)
    }

    /// kube v1.32's queue (no `SchedulerPopFromBackoffQ`): see
    /// [`QueueSettings::pop_from_backoff`].
    #[must_use]
    pub fn without_pop_from_backoff(mut self) -> QueueSettings {
        self.pop_from_backoff = false;
        self
    }
}

/// kube's `backoffQOrderingWindowDuration`.
const ORDERING_WINDOW: Duration = Duration::from_secs(1);

/// `t` truncated to a whole ordering window.
fn align_to_window(t: Duration) -> Duration {
    Duration::from_secs(t.as_secs())
}

/// What the queue counts of a pod across its attempts (kube's `QueuedPodInfo` counters); a
/// pod that leaves the queue for binding takes them along, and brings them back if it returns.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Tries {
    /// Scheduling attempts (pops).
    pub attempts: u32,
    /// Attempts that plugins rejected (kube's `UnschedulableCount`).
    pub unschedulable: u32,
    /// Attempts in a row that failed with an error (kube's `ConsecutiveErrorsCount`); a
    /// rejection resets it.
    pub consecutive_errors: u32,
}

impl Tries {
    /// `attempts` attempts, none of them rejected or failed yet (as for a pod that comes from
    /// elsewhere; the requeue adds the failure).
    #[must_use]
    pub fn with_attempts(attempts: u32) -> Tries {
        Tries {
            attempts,
            ..Tries::default()
        }
    }

    /// The count the backoff doubles with: kube v1.34 uses the consecutive errors while there
    /// are any, else the rejections; kube v1.32 (`v1_32`) the attempts.
    fn backoff_count(&self, v1_32: bool) -> u32 {
        if v1_32 {
            self.attempts
        } else if self.consecutive_errors > 0 {
            self.consecutive_errors
        } else {
            self.unschedulable
        }
    }
}

/// Where a queued pod is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum QueueName {
    /// Ready to be popped, in PrioritySort order.
    Active,
    /// Waiting for its backoff to end.
    Backoff,
    /// Rejected; waits for an event that can help, or the longest stay.
    Unschedulable,
    /// Held by scheduling gates (PreEnqueue) until they are removed.
    Gated,
    /// Popped, its attempt not yet finished.
    InFlight,
}

/// How many pods are in each queue.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueCounts {
    /// activeQ.
    pub active: usize,
    /// backoffQ.
    pub backoff: usize,
    /// The unschedulable pool.
    pub unschedulable: usize,
    /// Gated pods.
    pub gated: usize,
    /// Popped and being attempted.
    pub in_flight: usize,
}

#[derive(Clone, Debug)]
struct Entry {
    /// The pod, shared with the attempt that popped it.
    pod: Arc<Pod>,
    queue: QueueName,
    /// When the pod entered its current wait (kube's `Timestamp`).
    timestamp: Duration,
    /// Attempts so far, rejections and errors in a row.
    tries: Tries,
    /// Events that can make it schedulable (unschedulable pool only).
    waiting_for: EventMask,
    /// Order of entering activeQ (or the queue), for equal priorities and timestamps: a pod
    /// that comes (back) into activeQ goes behind the pods already there, as in kube's heap.
    seq: u64,
    /// Events that happened while the pod was in flight (kube's in-flight events): if one of
    /// them can help it when it is rejected, it is requeued at once instead of waiting.
    seen_in_flight: EventMask,
    /// The pod's spec or labels changed while it was in flight.
    updated_in_flight: bool,
}

impl Entry {
    /// Its last attempt failed with an error, not a plugin's rejection (a rejection resets
    /// the errors in a row): it backs off in kube's `podErrorBackoffQ`, which is never popped
    /// before the backoff ends.
    fn failed_with_error(&self) -> bool {
        self.tries.consecutive_errors > 0
    }
}

type ActiveKey = (Reverse<i32>, Duration, u64, PodKey);
/// When the backoff ends, then (with ordering windows, for pods rejected by a plugin)
/// PrioritySort's order: priority, timestamp, arrival.
type BackoffKey = (Duration, Reverse<i32>, Duration, u64, PodKey);

/// kube's scheduling queue for one scheduler (all its profiles share it, as kube requires one
/// queue sort for all profiles).
#[derive(Clone, Debug, Default)]
pub struct SchedulingQueue {
    settings: QueueSettings,
    pods: HashMap<PodKey, Entry>,
    active: BTreeSet<ActiveKey>,
    /// kube's `podBackoffQ`: pods rejected by a plugin.
    backoff: BTreeSet<BackoffKey>,
    /// kube's `podErrorBackoffQ`: pods whose attempt failed with an error.
    error_backoff: BTreeSet<BackoffKey>,
    seq: u64,
    /// Coscheduling's QueueSort instead of PrioritySort, when set.
    group_order: Option<GroupOrder>,
}

/// Coscheduling's QueueSort (scheduler-plugins' `Less`): priority, then the group's creation
/// time (a pod without a group: when it was first queued), then the pod's `namespace/name`.
#[derive(Clone, Debug, Default)]
struct GroupOrder {
    /// Creation time of each known group, by `namespace/name`.
    created: HashMap<String, Duration>,
    /// When each pod was first queued (kube's `InitialAttemptTimestamp` stand-in).
    first_queued: HashMap<PodKey, Duration>,
}

fn priority(pod: &Pod) -> i32 {
    pod.spec.priority.unwrap_or(0)
}

impl SchedulingQueue {
    /// An empty queue.
    pub fn new(settings: QueueSettings) -> SchedulingQueue {
        SchedulingQueue {
            settings,
            ..SchedulingQueue::default()
        }
    }

    /// The queue's timing.
    pub fn settings(&self) -> &QueueSettings {
        &self.settings
    }

    /// Changes the queue's timing and backoff behaviour; pods backing off are placed by the
    /// new settings at once.
    pub fn set_settings(&mut self, settings: QueueSettings) {
        self.settings = settings;
        self.backoff.clear();
        self.error_backoff.clear();
        let backing_off: Vec<(PodKey, Entry)> = self
            .pods
            .iter()
            .filter(|(_, e)| e.queue == QueueName::Backoff)
            .map(|(k, e)| (k.clone(), e.clone()))
            .collect();
        for (k, e) in backing_off {
            let key = self.backoff_key(&k, &e);
            self.backoff_queue(&e).insert(key);
        }
    }

    /// Where the pod `key` is, if queued.
    pub fn position(&self, key: &str) -> Option<QueueName> {
        self.pods.get(key).map(|e| e.queue)
    }

    /// Attempts made for the pod so far.
    pub fn attempts(&self, key: &str) -> Option<u32> {
        self.pods.get(key).map(|e| e.tries.attempts)
    }

    /// Pods per queue.
    pub fn counts(&self) -> QueueCounts {
        let mut c = QueueCounts::default();
        for e in self.pods.values() {
            match e.queue {
                QueueName::Active => c.active += 1,
                QueueName::Backoff => c.backoff += 1,
                QueueName::Unschedulable => c.unschedulable += 1,
                QueueName::Gated => c.gated += 1,
                QueueName::InFlight => c.in_flight += 1,
            }
        }
        c
    }

    /// Number of queued pods (in flight included).
    pub fn len(&self) -> usize {
        self.pods.len()
    }

    /// Whether nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.pods.is_empty()
    }

    /// The first instant at which the pod no longer backs off (kube's `isPodBackingoff` is
    /// false from then on). Without ordering windows: the failure time plus the backoff. With
    /// them: kube's `BackoffExpiration` is that time truncated to a window, and a pod backs off
    /// while its expiration is not before the current window, so until the next window starts.
    fn backoff_end(&self, e: &Entry) -> Duration {
        let end = e.timestamp + self.settings.backoff(self.backoff_count(e));
        if self.settings.pop_from_backoff {
            align_to_window(end) + ORDERING_WINDOW
        } else {
            end
        }
    }

    /// The count the entry's backoff doubles with (0: it does not back off).
    fn backoff_count(&self, e: &Entry) -> u32 {
        e.tries.backoff_count(!self.settings.pop_from_backoff)
    }

    /// The entry's place in its backoff queue.
    fn backoff_key(&self, key: &PodKey, e: &Entry) -> BackoffKey {
        let end = self.backoff_end(e);
        if self.settings.pop_from_backoff && !e.failed_with_error() {
            (
                end,
                Reverse(priority(&e.pod)),
                e.timestamp,
                e.seq,
                key.clone(),
            )
        } else {
            (end, Reverse(0), Duration::ZERO, e.seq, key.clone())
        }
    }

    fn backoff_queue(&mut self, e: &Entry) -> &mut BTreeSet<BackoffKey> {
        if e.failed_with_error() {
            &mut self.error_backoff
        } else {
            &mut self.backoff
        }
    }

    /// The entry's place in activeQ: PrioritySort's (priority, time queued, arrival), or
    /// Coscheduling's (priority, group creation or first queued, pod key).
    fn active_key(&self, key: &PodKey, e: &Entry) -> ActiveKey {
        match &self.group_order {
            None => (Reverse(priority(&e.pod)), e.timestamp, e.seq, key.clone()),
            Some(g) => {
                let time = crate::model::pod_group_of(&e.pod)
                    .and_then(|group| g.created.get(&group).copied())
                    .or_else(|| g.first_queued.get(&**key).copied())
                    .unwrap_or(e.timestamp);
                (Reverse(priority(&e.pod)), time, 0, key.clone())
            }
        }
    }

    /// Orders activeQ by Coscheduling's QueueSort from now on.
    pub(crate) fn use_group_order(&mut self) {
        let active: Vec<PodKey> = self
            .pods
            .iter()
            .filter(|(_, e)| e.queue == QueueName::Active)
            .map(|(k, _)| k.clone())
            .collect();
        let entries: Vec<(PodKey, Entry)> = active.iter().filter_map(|k| self.unlink(k)).collect();
        let mut order = GroupOrder::default();
        for (k, e) in self.pods.iter().chain(entries.iter().map(|(k, e)| (k, e))) {
            order.first_queued.insert(k.clone(), e.timestamp);
        }
        self.group_order = Some(order);
        for (k, e) in entries {
            self.link(k, e, QueueName::Active);
        }
    }

    /// The group `group` (`namespace/name`) was created at `created` (`None`: deleted): its
    /// pods in activeQ take their new place.
    pub(crate) fn set_group_created(&mut self, group: &str, created: Option<Duration>) {
        if self.group_order.is_none() {
            return;
        }
        let keys: Vec<PodKey> = self
            .pods
            .iter()
            .filter(|(_, e)| {
                e.queue == QueueName::Active
                    && crate::model::pod_group_of(&e.pod).as_deref() == Some(group)
            })
            .map(|(k, _)| k.clone())
            .collect();
        let entries: Vec<(PodKey, Entry)> = keys.iter().filter_map(|k| self.unlink(k)).collect();
        if let Some(g) = &mut self.group_order {
            match created {
                Some(t) => g.created.insert(group.to_string(), t),
                None => g.created.remove(group),
            };
        }
        for (k, e) in entries {
            self.link(k, e, QueueName::Active);
        }
    }

    /// Moves these pods from the unschedulable pool or backoffQ to activeQ (kube's
    /// `Activate`, which Coscheduling asks for a waiting member's siblings). Returns how many
    /// moved.
    pub(crate) fn activate<'a>(&mut self, keys: impl IntoIterator<Item = &'a str>) -> usize {
        let mut moved = 0;
        for key in keys {
            if matches!(
                self.pods.get(key).map(|e| e.queue),
                Some(QueueName::Unschedulable | QueueName::Backoff)
            ) && let Some((k, e)) = self.unlink(key)
            {
                self.link(k, e, QueueName::Active);
                moved += 1;
            }
        }
        moved
    }

    /// Takes the pod `key` out of the map and its queue: its stored key and its entry.
    fn unlink(&mut self, key: &str) -> Option<(PodKey, Entry)> {
        let (key, e) = self.pods.remove_entry(key)?;
        match e.queue {
            QueueName::Active => {
                let k = self.active_key(&key, &e);
                self.active.remove(&k);
            }
            QueueName::Backoff => {
                let k = self.backoff_key(&key, &e);
                self.backoff_queue(&e).remove(&k);
            }
            _ => {}
        }
        Some((key, e))
    }

    fn link(&mut self, key: PodKey, mut e: Entry, queue: QueueName) {
        if queue == QueueName::Active && e.queue != QueueName::Active {
            self.seq += 1;
            e.seq = self.seq;
        }
        e.queue = queue;
        match queue {
            QueueName::Active => {
                let k = self.active_key(&key, &e);
                self.active.insert(k);
            }
            QueueName::Backoff => {
                let k = self.backoff_key(&key, &e);
                self.backoff_queue(&e).insert(k);
            }
            _ => {}
        }
        self.pods.insert(key, e);
    }

    /// Adds a pending pod: gated pods wait in the gated set (kube's PreEnqueue with
    /// SchedulingGates), the others go to activeQ. A pod already queued is updated instead.
    pub fn add(&mut self, pod: Pod, now: Duration) {
        let key = pod.key();
        if self.pods.contains_key(&key) {
            self.update(pod, now);
            return;
        }
        if let Some(g) = &mut self.group_order {
            g.first_queued.entry(key.clone()).or_insert(now);
        }
        self.seq += 1;
        let queue = if pod.spec.scheduling_gates.is_empty() {
            QueueName::Active
        } else {
            QueueName::Gated
        };
        let e = Entry {
            pod: Arc::new(pod),
            queue,
            timestamp: now,
            tries: Tries::default(),
            waiting_for: EventMask::default(),
            seq: self.seq,
            seen_in_flight: EventMask::default(),
            updated_in_flight: false,
        };
        self.link(key, e, queue);
    }

    /// A queued pod changed: its object is replaced where it waits; a gated pod whose gates
    /// are gone moves to activeQ; an unschedulable pod whose spec or labels changed is tried
    /// again (backoffQ while its backoff lasts, else activeQ). Not queued: added.
    pub fn update(&mut self, pod: Pod, now: Duration) {
        let Some((key, mut e)) = self.unlink(&pod.key()) else {
            self.add(pod, now);
            return;
        };
        // A change of the claims made for it counts too (kube's
        // UpdatePodGeneratedResourceClaim, which DynamicResources waits for).
        let changed = e.pod.spec != pod.spec
            || e.pod.metadata.labels != pod.metadata.labels
            || e.pod.status.resource_claim_statuses != pod.status.resource_claim_statuses;
        e.pod = Arc::new(pod);
        let queue = match e.queue {
            QueueName::Gated if e.pod.spec.scheduling_gates.is_empty() => {
                e.timestamp = now;
                QueueName::Active
            }
            QueueName::Unschedulable if changed => self.active_or_backoff(&e, now),
            QueueName::InFlight => {
                e.updated_in_flight |= changed;
                QueueName::InFlight
            }
            q => q,
        };
        self.link(key, e, queue);
    }

    /// Removes a pod (deleted, or bound by someone else). Returns whether it was queued.
    pub fn delete(&mut self, key: &str) -> bool {
        let queued = self.unlink(key).is_some();
        if let Some(g) = &mut self.group_order {
            g.first_queued.remove(key);
        }
        queued
    }

    fn active_or_backoff(&self, e: &Entry, now: Duration) -> QueueName {
        if self.backoff_count(e) > 0 && self.backoff_end(e) > now {
            QueueName::Backoff
        } else {
            QueueName::Active
        }
    }

    /// Moves backed-off pods whose backoff ended to activeQ, and pods that stayed in the
    /// unschedulable pool longer than allowed to activeQ or backoffQ (kube's
    /// `flushBackoffQCompleted` and `flushUnschedulablePodsLeftover`).
    pub fn flush(&mut self, now: Duration) {
        // podBackoffQ, then podErrorBackoffQ, as kube's `popAllBackoffCompleted`.
        for errors in [false, true] {
            loop {
                let queue = if errors {
                    &self.error_backoff
                } else {
                    &self.backoff
                };
                let Some((end, _, _, _, key)) = queue.first().cloned() else {
                    break;
                };
                if end > now {
                    break;
                }
                if let Some((key, e)) = self.unlink(&key) {
                    self.link(key, e, QueueName::Active);
                }
            }
        }
        let limit = self.settings.max_in_unschedulable;
        let stale: Vec<PodKey> = self
            .pods
            .iter()
            .filter(|(_, e)| e.queue == QueueName::Unschedulable && now - e.timestamp > limit)
            .map(|(k, _)| k.clone())
            .collect();
        for key in stale {
            self.move_one(&key, now);
        }
    }

    fn move_one(&mut self, key: &str, now: Duration) {
        if let Some((key, e)) = self.unlink(key) {
            let q = self.active_or_backoff(&e, now);
            self.link(key, e, q);
        }
    }

    /// A cluster event of these kinds happened: unschedulable pods waiting for one of them
    /// move to activeQ, or to backoffQ while their backoff lasts (kube's
    /// `MoveAllToActiveOrBackoffQueue`); pods in flight remember it for when their attempt
    /// ends. Returns how many moved.
    pub fn on_event(&mut self, event: EventMask, now: Duration) -> usize {
        for e in self.pods.values_mut() {
            if e.queue == QueueName::InFlight {
                e.seen_in_flight = e.seen_in_flight | event;
            }
        }
        let keys: Vec<PodKey> = self
            .pods
            .iter()
            .filter(|(_, e)| e.queue == QueueName::Unschedulable && e.waiting_for.intersects(event))
            .map(|(k, _)| k.clone())
            .collect();
        for k in &keys {
            self.move_one(k, now);
        }
        keys.len()
    }

    /// Takes the next pod to schedule: backoffs and stays are flushed at `now` first, then
    /// the highest-priority, longest-waiting pod of activeQ is popped (its attempts counted),
    /// shared with the queue while it is in flight.
    /// With [`QueueSettings::pop_from_backoff`], an empty activeQ gives the first pod of
    /// backoffQ that a plugin rejected, its backoff not yet over (kube's `popBackoff`).
    pub fn pop(&mut self, now: Duration) -> Option<Arc<Pod>> {
        self.flush(now);
        let key = match self.active.pop_first() {
            Some((_, _, _, key)) => key,
            None if self.settings.pop_from_backoff => self.backoff.pop_first()?.4,
            None => return None,
        };
        let e = self
            .pods
            .get_mut(&key)
            .expect("queued entries are in the map");
        e.queue = QueueName::InFlight;
        e.tries.attempts += 1;
        e.seen_in_flight = EventMask::default();
        e.updated_in_flight = false;
        Some(e.pod.clone())
    }

    /// The popped pod `key` was placed: it leaves the queue. Returns its counts, for
    /// [`SchedulingQueue::requeue_with_backoff`] or [`SchedulingQueue::requeue_unschedulable`]
    /// if it comes back.
    pub fn done(&mut self, key: &str) -> Option<Tries> {
        self.unlink(key).map(|(_, e)| e.tries)
    }

    /// The pod `key` if it waits in activeQ, backoffQ or the unschedulable pool (not gated,
    /// not in flight).
    pub(crate) fn waiting_pod(&self, key: &str) -> Option<&Pod> {
        self.pods
            .get(key)
            .filter(|e| {
                matches!(
                    e.queue,
                    QueueName::Active | QueueName::Backoff | QueueName::Unschedulable
                )
            })
            .map(|e| &*e.pod)
    }

    /// The pod `key` if it is in flight (popped, its attempt not over), and whether its spec or
    /// labels changed since it was popped.
    pub(crate) fn in_flight(&self, key: &str) -> Option<(&Arc<Pod>, bool)> {
        self.pods
            .get(key)
            .filter(|e| e.queue == QueueName::InFlight)
            .map(|e| (&e.pod, e.updated_in_flight))
    }

    /// The pod `key`, in flight, is tried again (its attempt was dropped: it changed
    /// meanwhile): activeQ, or backoffQ while its backoff lasts.
    pub(crate) fn retry_in_flight(&mut self, key: &str, now: Duration) {
        if let Some((key, e)) = self.unlink(key) {
            let q = self.active_or_backoff(&e, now);
            self.link(key, e, q);
        }
    }

    /// The popped pod `key` fits nowhere: it waits in the unschedulable pool for one of
    /// `waiting_for`, or the longest stay. If one of them happened while it was in flight, or
    /// its spec or labels changed meanwhile, it goes to backoffQ (or activeQ) at once, as kube
    /// requeues a pod for in-flight events.
    pub fn unschedulable(&mut self, key: &str, waiting_for: EventMask, now: Duration) {
        if let Some((key, mut e)) = self.unlink(key) {
            e.timestamp = now;
            e.waiting_for = waiting_for;
            e.tries.unschedulable += 1;
            e.tries.consecutive_errors = 0;
            let queue = if e.queue == QueueName::InFlight
                && (e.updated_in_flight || e.seen_in_flight.intersects(waiting_for))
            {
                self.active_or_backoff(&e, now)
            } else {
                QueueName::Unschedulable
            };
            self.link(key, e, queue);
        }
    }

    /// The popped pod `key` failed with an error (a plugin error, a failed bind): it backs off.
    pub fn backoff_after_error(&mut self, key: &str, now: Duration) {
        if let Some((key, mut e)) = self.unlink(key) {
            e.timestamp = now;
            e.tries.consecutive_errors += 1;
            self.link(key, e, QueueName::Backoff);
        }
    }

    /// Puts back a pod that had left the queue (a failed bind: an error) into backoffQ, with
    /// the counts [`SchedulingQueue::done`] gave.
    pub fn requeue_with_backoff(&mut self, pod: Pod, mut tries: Tries, now: Duration) {
        tries.attempts = tries.attempts.max(1);
        tries.consecutive_errors += 1;
        let key = pod.key();
        self.unlink(&key);
        self.seq += 1;
        let e = Entry {
            pod: Arc::new(pod),
            queue: QueueName::Backoff,
            timestamp: now,
            tries,
            waiting_for: EventMask::default(),
            seq: self.seq,
            seen_in_flight: EventMask::default(),
            updated_in_flight: false,
        };
        self.link(key, e, QueueName::Backoff);
    }

    /// Puts back a pod that had left the queue (rejected after it was placed) into the
    /// unschedulable pool (a plugin's rejection), with the counts [`SchedulingQueue::done`]
    /// gave, waiting for `waiting_for`.
    pub fn requeue_unschedulable(
        &mut self,
        pod: Pod,
        mut tries: Tries,
        waiting_for: EventMask,
        now: Duration,
    ) {
        tries.attempts = tries.attempts.max(1);
        tries.unschedulable += 1;
        tries.consecutive_errors = 0;
        let key = pod.key();
        self.unlink(&key);
        self.seq += 1;
        let e = Entry {
            pod: Arc::new(pod),
            queue: QueueName::Unschedulable,
            timestamp: now,
            tries,
            waiting_for,
            seq: self.seq,
            seen_in_flight: EventMask::default(),
            updated_in_flight: false,
        };
        self.link(key, e, QueueName::Unschedulable);
    }

    /// When the queue next changes by itself: the earliest backoff end or longest-stay end;
    /// `None` when only an event can change it.
    pub fn next_wakeup(&self) -> Option<Duration> {
        let backoff = [&self.backoff, &self.error_backoff]
            .iter()
            .filter_map(|q| q.first().map(|k| k.0))
            .min();
        let stay = self
            .pods
            .values()
            .filter(|e| e.queue == QueueName::Unschedulable)
            .map(|e| e.timestamp + self.settings.max_in_unschedulable + Duration::from_nanos(1))
            .min();
        match (backoff, stay) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str, priority: i32) -> Pod {
        let mut p = Pod::default();
        p.metadata.name = name.into();
        p.metadata.namespace = "default".into();
        p.spec.priority = Some(priority);
        p
    }

    fn s(secs: u64) -> Duration {
        Duration::from_secs(secs)
    }

    // kube: TestBackoffDuration (scheduling_queue_test.go): 1s initial, 32s max in that test.
    #[test]
    fn backoff_doubles_per_attempt_up_to_the_maximum() {
        let q = QueueSettings::with_backoff(s(1), s(32));
        let got: Vec<u64> = (1..=8).map(|a| q.backoff(a).as_secs()).collect();
        assert_eq!(got, [1, 2, 4, 8, 16, 32, 32, 32]);
        let d = QueueSettings::default();
        let got: Vec<u64> = (1..=6).map(|a| d.backoff(a).as_secs()).collect();
        assert_eq!(got, [1, 2, 4, 8, 10, 10]);
    }

    #[test]
    fn active_q_pops_by_priority_then_age() {
        let mut q = SchedulingQueue::new(QueueSettings::default());
        q.add(pod("low-old", 1), s(0));
        q.add(pod("high", 10), s(1));
        q.add(pod("low-new", 1), s(2));
        let order: Vec<String> = std::iter::from_fn(|| q.pop(s(3)))
            .map(|p| p.metadata.name.clone())
            .collect();
        assert_eq!(order, ["high", "low-old", "low-new"]);
    }

    #[test]
    fn unschedulable_pods_move_only_for_their_events_or_after_five_minutes() {
        // kube v1.32's queue: backoffs end exactly, only activeQ is popped.
        let mut q = SchedulingQueue::new(QueueSettings::default().without_pop_from_backoff());
        q.add(pod("a", 0), s(0));
        let p = q.pop(s(0)).unwrap();
        q.unschedulable(&p.key(), EventMask::NODE_ADD, s(0));
        assert_eq!(q.position("default/a"), Some(QueueName::Unschedulable));
        // An unrelated event leaves it.
        assert_eq!(q.on_event(EventMask::ASSIGNED_POD_DELETE, s(5)), 0);
        assert_eq!(q.pop(s(5)), None);
        // A node add moves it; its backoff (1 s after the first attempt) is over at 5 s.
        assert_eq!(q.on_event(EventMask::NODE_ADD, s(5)), 1);
        assert_eq!(q.position("default/a"), Some(QueueName::Active));
        let p = q.pop(s(5)).unwrap();
        // Second failure: an event right away sends it to backoffQ (2 s).
        q.unschedulable(&p.key(), EventMask::NODE_ADD, s(6));
        q.on_event(EventMask::NODE_ADD, s(6));
        assert_eq!(q.position("default/a"), Some(QueueName::Backoff));
        assert_eq!(q.next_wakeup(), Some(s(8)));
        assert_eq!(q.pop(s(7)), None);
        assert!(q.pop(s(8)).is_some());
        // Without any event, five minutes release it.
        q.unschedulable("default/a", EventMask::NODE_ADD, s(10));
        assert_eq!(q.pop(s(310)), None);
        assert_eq!(q.next_wakeup(), Some(s(310) + Duration::from_nanos(1)));
        assert!(q.pop(s(311)).is_some());
    }

    #[test]
    fn backoffs_end_on_windows_and_an_idle_queue_pops_backoff_q() {
        let mut q = SchedulingQueue::new(QueueSettings::default());
        q.add(pod("a", 0), s(0));
        let p = q.pop(s(0)).unwrap();
        q.unschedulable(&p.key(), EventMask::NODE_ADD, Duration::from_millis(5_300));
        q.on_event(EventMask::NODE_ADD, Duration::from_millis(5_400));
        // 5.3 s + 1 s = 6.3 s, truncated to 6 s: backing off until the window after, 7 s.
        assert_eq!(q.position("default/a"), Some(QueueName::Backoff));
        assert_eq!(q.next_wakeup(), Some(s(7)));
        // activeQ is empty: the backing-off pod is popped anyway.
        assert!(q.pop(Duration::from_millis(5_500)).is_some());
        assert_eq!(q.attempts("default/a"), Some(2));
        // A pod that failed with an error waits out its backoff (kube's podErrorBackoffQ): the
        // first error in a row, 1 s, ending in the window of 11 s, so until 12 s.
        q.backoff_after_error("default/a", s(10));
        assert_eq!(q.pop(Duration::from_millis(11_999)), None);
        assert_eq!(q.next_wakeup(), Some(s(12)));
        assert!(q.pop(s(12)).is_some());
    }

    #[test]
    fn errors_and_rejections_back_off_by_their_own_counts() {
        // Three rejections, then an error: kube v1.34 backs off by the errors in a row (1 s),
        // v1.32 by the attempts (4 attempts: 8 s).
        for (settings, want) in [
            (QueueSettings::default(), s(1)),
            (QueueSettings::default().without_pop_from_backoff(), s(8)),
        ] {
            let mut q = SchedulingQueue::new(settings);
            q.add(pod("a", 0), s(0));
            let mut now = s(0);
            for _ in 0..3 {
                q.pop(now).unwrap();
                q.unschedulable("default/a", EventMask::NODE_ADD, now);
                now += s(400);
                q.flush(now);
            }
            q.pop(now).unwrap();
            let tries = q.done("default/a").unwrap();
            assert_eq!(
                (
                    tries.attempts,
                    tries.unschedulable,
                    tries.consecutive_errors
                ),
                (4, 3, 0)
            );
            // The bind fails: back with its counts, one error more.
            q.requeue_with_backoff(pod("a", 0), tries, now);
            let end = q.next_wakeup().unwrap() - now;
            let window = if settings.pop_from_backoff {
                s(1)
            } else {
                s(0)
            };
            assert_eq!(end, want + window, "{settings:?}");
            // A rejection resets the errors in a row.
            q.pop(now + end).unwrap();
            q.unschedulable("default/a", EventMask::NODE_ADD, now + end);
            q.on_event(EventMask::NODE_ADD, now + end);
            let again = q.next_wakeup().unwrap() - (now + end);
            let want = if settings.pop_from_backoff {
                s(8) + s(1) // fourth rejection: 8 s, plus the window
            } else {
                s(10) // sixth attempt: 32 s, capped at 10 s
            };
            assert_eq!(again, want, "{settings:?}");
        }
    }

    /// "low" (priority 1) and "high" (9), both rejected in the first second (at 0.1 s and
    /// 0.9 s), then a node add at 1 s sends them to backoffQ.
    fn two_rejected_in_one_window(settings: QueueSettings) -> SchedulingQueue {
        let mut q = SchedulingQueue::new(settings);
        for (name, prio) in [("low", 1), ("high", 9)] {
            q.add(pod(name, prio), s(0));
        }
        let high = q.pop(s(0)).unwrap();
        let low = q.pop(s(0)).unwrap();
        q.unschedulable(&low.key(), EventMask::NODE_ADD, Duration::from_millis(100));
        q.unschedulable(&high.key(), EventMask::NODE_ADD, Duration::from_millis(900));
        q.on_event(EventMask::NODE_ADD, s(1));
        q
    }

    #[test]
    fn a_window_of_ended_backoffs_leaves_in_priority_order() {
        // Both end in window 1 s (1.1 s and 1.9 s): priority decides, not the end.
        let mut q = two_rejected_in_one_window(QueueSettings::default());
        assert_eq!(q.pop(s(1)).unwrap().metadata.name, "high");
        assert_eq!(q.pop(s(1)).unwrap().metadata.name, "low");
        // Without windows, the earlier end leaves first.
        let mut q = two_rejected_in_one_window(QueueSettings::default().without_pop_from_backoff());
        let at = Duration::from_millis(1_500);
        assert_eq!(q.pop(at).unwrap().metadata.name, "low");
        assert_eq!(q.pop(at), None);
        assert_eq!(q.pop(s(2)).unwrap().metadata.name, "high");
    }

    #[test]
    fn gated_pods_wait_for_their_gates_to_go() {
        let mut q = SchedulingQueue::new(QueueSettings::default());
        let mut p = pod("gated", 0);
        p.spec.scheduling_gates =
            vec![serde_json::from_value(serde_json::json!({"name": "quota"})).unwrap()];
        q.add(p.clone(), s(0));
        assert_eq!(q.position("default/gated"), Some(QueueName::Gated));
        assert_eq!(q.pop(s(100)), None);
        assert_eq!(q.on_event(EventMask::ALL, s(100)), 0);
        p.spec.scheduling_gates.clear();
        q.update(p, s(101));
        assert_eq!(
            q.pop(s(101)).map(|p| p.metadata.name.clone()),
            Some("gated".into())
        );
    }

    #[test]
    fn updates_and_deletes_apply_in_place() {
        let mut q = SchedulingQueue::new(QueueSettings::default());
        q.add(pod("a", 1), s(0));
        q.add(pod("b", 2), s(0));
        q.update(pod("a", 5), s(1)); // raised priority, same place in time
        assert_eq!(q.counts().active, 2);
        assert!(q.delete("default/b"));
        assert!(!q.delete("default/b"));
        assert_eq!(q.pop(s(1)).unwrap().spec.priority, Some(5));
        assert!(q.is_empty() || q.counts().in_flight == 1);
    }
}
