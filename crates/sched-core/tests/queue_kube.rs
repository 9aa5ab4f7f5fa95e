//! kube-scheduler's scheduling queue tests (`pkg/scheduler/backend/queue/scheduling_queue_test.go`,
//! read from the newest stored kubernetes/kubernetes version, which has the v1.34 tests plus a
//! few later ones; older versions have it under `pkg/scheduler/internal/queue`), ported through
//! the public [`SchedulingQueue`] API with kube's expected outcomes. Backoff follows v1.34's
//! `backoff_queue.go`: initial backoff doubled per attempt up to the maximum, from the time the
//! pod was requeued, with `SchedulerPopFromBackoffQ` (on by default, as in kube: 1 s ordering
//! windows, an empty activeQ pops backoffQ) and, for kube's cases that turn it off, without.
//! Time is a `Duration` from an arbitrary origin (kube's fake clock). Our queue approximates queueing hints by the events each
//! rejection reason registers ([`events_for`]): a plugin's `QueueingHint` returning `Queue` for
//! an event becomes "the pod waits for that event kind" ([`EventMask`]); kube's wildcard
//! `EventUnschedulableTimeout` becomes [`EventMask::ALL`]; a failure with no rejecting plugin
//! (an error) becomes [`SchedulingQueue::backoff_after_error`].
//!
//! | kube test | here |
//! |---|---|
//! | TestPriorityQueue_Add | ported (pop order; nominations through `Scheduler`) |
//! | TestPriorityQueue_AddWithReversePriorityLessFunc | ported (1) |
//! | Test_InFlightPods | skipped: checks kube's internal in-flight event list; the outcome it guards (an event seen in flight requeues the rejected pod) is ported under TestPriorityQueue_UpdateWhenInflight and TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff |
//! | TestPop | skipped: depends on `PendingPlugins` (requeue skipping backoff), which we don't have |
//! | TestPriorityQueue_AddUnschedulableIfNotPresent | ported (queue part; the nominator part is the nominator's, not the queue's) |
//! | TestPriorityQueue_AddUnschedulableIfNotPresent_Backoff | ported (1) |
//! | TestPriorityQueue_Pop | ported (2: PopFromBackoffQ disabled and enabled) |
//! | TestPriorityQueue_Update | ported 7 of 8 cases; "add a nominatedNodeName" through `Scheduler`; updates are label changes, not annotation changes (see the case); the QueueSkip case as "an update no rejecting reason cares about" |
//! | TestPriorityQueue_UpdateWhenInflight | ported (1) |
//! | TestPriorityQueue_Delete | ported (queue part; nominations through `Scheduler`) |
//! | TestPriorityQueue_Activate | skipped: no `Activate` (PodActivator) in our queue |
//! | TestPriorityQueue_moveToActiveQ, _moveToBackoffQ | skipped: custom PreEnqueue plugins; our only PreEnqueue is SchedulingGates (ported below) |
//! | TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint | ported 4 of 6: backing off -> backoffQ, not backing off -> activeQ, not interested -> unschedulable, gated by SchedulingGates -> stays gated; skipped: `PendingPlugins` -> activeQ, gated by a custom PreEnqueue plugin |
//! | TestPriorityQueue_MoveAllToActiveOrBackoffQueue (and ...WithoutQueueingHint, the same moves) | ported (1 scenario) |
//! | TestPriorityQueue_AssignedPodAdded_ | ported 3 of 5; skipped 2 "unrelated Pod" cases: kube pre-filters by a matching affinity term / same namespace, we move by event kind only |
//! | TestPriorityQueue_AssignedPodUpdated | ported 4 of 6; skipped 2 "unrelated Pod" cases (same reason) |
//! | TestPriorityQueue_NominatedPodsForNode, _NominatedPodDeleted, _UpdateNominatedPodForNode | skipped: the nominator, not the queue |
//! | TestPriorityQueue_PendingPods | ported (counts) |
//! | TestPriorityQueue_NewWithOptions | ported (1) |
//! | TestSchedulingQueue_Close | skipped: no blocking Pop / Close |
//! | TestRecentlyTriedPodsGoBack | ported (1) |
//! | TestPodFailedSchedulingMultipleTimesDoesNotBlockNewerPod | ported (1) |
//! | TestHighPriorityBackoff | ported (1) |
//! | TestHighPriorityFlushUnschedulablePodsLeftover (older versions: TestFlushUnschedulablePodsLeftover) | ported (1) |
//! | TestFlushUnschedulablePodsLeftoverSetsFlag | skipped: `WasFlushedFromUnschedulable` flag (after v1.34) |
//! | TestPriorityQueue_initPodMaxInUnschedulablePodsDuration | ported (2 cases: default 5 min, 30 s) |
//! | TestPodTimestamp | ported (3 cases) |
//! | TestPendingPodsMetric, TestIncomingPodsMetrics | skipped: metrics |
//! | TestPerPodSchedulingMetrics | ported 4 cases (attempt counts only; no initial-attempt timestamp) |
//! | TestBackOffFlow | ported (PopFromBackoffQ disabled and enabled, 7 steps each) |
//! | TestMoveAllToActiveOrBackoffQueue_PreEnqueueChecks | skipped: no pre-enqueue check callback |
//! | Test_isPodWorthRequeuing | skipped: queueing hint internals |
//! | Test_queuedPodInfo_gatedSetUponCreationAndUnsetUponUpdate | ported (1) |
//! | TestPriorityQueue_GetPod | ported (4 cases, via `position`) |
//! | TestPriorityQueue_MovePodsToActiveOrBackoffQueueForGangScheduling | skipped: gang scheduling (after v1.34) |
//! | TestPriorityQueue_UpdateWhileGated | not found in the stored kube versions; gate removal is ported above |

use std::time::Duration;

use sched_core::framework::{Reason, ResourceSet};
use sched_core::model::{Node, Pod};
use sched_core::scheduler::{
    ClusterEvent, EventMask, ObjectKey, QueueCounts, QueueName, QueueSettings, Scheduler,
    SchedulingQueue, Tries, events_for,
};
use sched_core::snapshot::Snapshot;

const LOW: i32 = 0;
const MID: i32 = 100;
const HIGH: i32 = 1000;
const MEDIUM: i32 = (LOW + HIGH) / 2;

fn pod(ns: &str, name: &str, priority: i32) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": ns},
        "spec": {"priority": priority, "containers": [{"name": "c", "image": "pause"}]}
    }))
    .unwrap()
}

fn nominated(mut p: Pod, node: &str) -> Pod {
    p.status.nominated_node_name = node.into();
    p
}

fn labelled(mut p: Pod, key: &str, value: &str) -> Pod {
    p.metadata.labels.insert(key.into(), value.into());
    p
}

// kube's fixtures.
fn hpp() -> Pod {
    pod("ns1", "hpp", HIGH)
}
fn mpp() -> Pod {
    nominated(pod("ns2", "mpp", MEDIUM), "node1")
}
fn up() -> Pod {
    nominated(pod("ns1", "up", LOW), "node1")
}

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// kube v1.34's queue (`SchedulerPopFromBackoffQ` on, as by default).
fn queue() -> SchedulingQueue {
    SchedulingQueue::new(QueueSettings::default())
}

/// The queue with `SchedulerPopFromBackoffQ` off (kube v1.32), for kube's cases that disable
/// the feature.
fn queue_without_pop_from_backoff() -> SchedulingQueue {
    SchedulingQueue::new(QueueSettings::default().without_pop_from_backoff())
}

fn pop_name(q: &mut SchedulingQueue, now: Duration) -> Option<String> {
    q.pop(now).map(|p| p.metadata.name.clone())
}

/// Adds `p` and pops it (kube's tests pop a pod before `AddUnschedulableIfNotPresent`).
fn add_and_pop(q: &mut SchedulingQueue, p: &Pod, now: Duration) {
    q.add(p.clone(), now);
    assert_eq!(pop_name(q, now).as_deref(), Some(p.metadata.name.as_str()));
}

/// kube's `AddUnschedulableIfNotPresent` with an unschedulable plugin that registers `events`.
fn reject(q: &mut SchedulingQueue, p: &Pod, events: EventMask, now: Duration) {
    q.unschedulable(&p.key(), events, now);
}

fn pos(q: &SchedulingQueue, p: &Pod) -> Option<QueueName> {
    q.position(&p.key())
}

fn counts(active: usize, backoff: usize, unschedulable: usize) -> QueueCounts {
    let mut c = QueueCounts::default();
    c.active = active;
    c.backoff = backoff;
    c.unschedulable = unschedulable;
    c
}

fn scheduler() -> Scheduler {
    let config = sched_core::config::SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n",
    )
    .unwrap();
    let nodes: Vec<Node> = vec![];
    let snapshot = Snapshot::from_objects(nodes, vec![]).unwrap();
    Scheduler::from_config(&config, &sched_core::config::Registry::v1_34(), snapshot, 1).unwrap()
}

// The event kinds standing in for kube's test plugins.
const FOO: EventMask = EventMask::NODE_ADD; // "fooPlugin": registers NodeAdd
const BAR: EventMask = EventMask::PV_ADD; // "barPlugin": not interested in NodeAdd

// ---------------------------------------------------------------------------------------------
// TestPriorityQueue_Add, TestPriorityQueue_AddWithReversePriorityLessFunc

#[test]
fn priority_queue_add() {
    let mut q = queue();
    q.add(mpp(), s(0));
    q.add(up(), s(0));
    q.add(hpp(), s(0));
    assert_eq!(pop_name(&mut q, s(0)).as_deref(), Some("hpp"));
    assert_eq!(pop_name(&mut q, s(0)).as_deref(), Some("mpp"));
    assert_eq!(pop_name(&mut q, s(0)).as_deref(), Some("up"));
}

#[test]
fn priority_queue_add_nominates_through_the_scheduler() {
    let mut sch = scheduler();
    for p in [mpp(), up(), hpp()] {
        sch.apply(ClusterEvent::add(p), s(0));
    }
    assert_eq!(sch.nominated_node("ns2/mpp"), Some("node1"));
    assert_eq!(sch.nominated_node("ns1/up"), Some("node1"));
    assert_eq!(sch.nominated_node("ns1/hpp"), None);
}

#[test]
fn priority_queue_add_with_reverse_priority_less_func() {
    let mut q = queue();
    q.add(mpp(), s(0));
    q.add(hpp(), s(0));
    assert_eq!(pop_name(&mut q, s(0)).as_deref(), Some("hpp"));
    assert_eq!(pop_name(&mut q, s(0)).as_deref(), Some("mpp"));
}

// ---------------------------------------------------------------------------------------------
// TestPriorityQueue_AddUnschedulableIfNotPresent(_Backoff)

#[test]
fn priority_queue_add_unschedulable_if_not_present() {
    let mut q = queue();
    let hpn = nominated(hpp(), "node1");
    add_and_pop(&mut q, &up(), s(0));
    q.add(hpn.clone(), s(0));
    reject(&mut q, &up(), FOO, s(0));
    assert_eq!(pop_name(&mut q, s(0)).as_deref(), Some("hpp"));
    // No event happened during its attempt: it waits in the unschedulable pool.
    assert_eq!(pos(&q, &up()), Some(QueueName::Unschedulable));
}

#[test]
fn priority_queue_add_unschedulable_if_not_present_backoff() {
    let mut q = queue();
    let pods: Vec<Pod> = (0..10)
        .map(|i| pod(&format!("ns{i}"), &format!("pod{i}"), i))
        .collect();
    for p in &pods {
        q.add(p.clone(), s(0));
    }
    // Pop all pods except the first one.
    for i in (1..10).rev() {
        assert_eq!(pop_name(&mut q, s(0)), Some(pods[i].metadata.name.clone()));
    }
    // A move request while they are being scheduled.
    q.on_event(EventMask::ALL, s(0));
    assert_eq!(pop_name(&mut q, s(0)).as_deref(), Some("pod0"));
    for p in &pods[1..] {
        reject(&mut q, p, EventMask::NODE_ADD, s(0));
    }
    // The move request came during their attempt: backoffQ, not the unschedulable pool.
    for p in &pods[1..] {
        assert_eq!(pos(&q, p), Some(QueueName::Backoff), "{}", p.metadata.name);
    }
}

// ---------------------------------------------------------------------------------------------
// TestPriorityQueue_Pop

/// mpp in activeQ, hpp backing off after a rejection, hpp2 backing off after an error, up in
/// the unschedulable pool.
fn pop_fixture(mut q: SchedulingQueue) -> SchedulingQueue {
    let hpp2 = pod("ns1", "hpp2", HIGH);
    add_and_pop(&mut q, &hpp(), s(0));
    reject(&mut q, &hpp(), FOO, s(0));
    q.on_event(FOO, s(0));
    add_and_pop(&mut q, &hpp2, s(0));
    q.backoff_after_error(&hpp2.key(), s(0));
    add_and_pop(&mut q, &up(), s(0));
    reject(&mut q, &up(), FOO, s(0));
    q.add(mpp(), s(0));
    assert_eq!(pos(&q, &hpp()), Some(QueueName::Backoff));
    assert_eq!(pos(&q, &hpp2), Some(QueueName::Backoff));
    assert_eq!(pos(&q, &up()), Some(QueueName::Unschedulable));
    q
}

#[test]
fn priority_queue_pop_only_from_active_q_when_pop_from_backoff_q_is_disabled() {
    let mut q = pop_fixture(queue_without_pop_from_backoff());
    assert_eq!(pop_name(&mut q, s(0)).as_deref(), Some("mpp"));
    assert_eq!(pop_name(&mut q, s(0)), None);
}

#[test]
fn priority_queue_pop_from_both_active_q_and_backoff_q() {
    // hpp2 failed with an error: it is not popped before its backoff ends.
    let mut q = pop_fixture(queue());
    assert_eq!(pop_name(&mut q, s(0)).as_deref(), Some("mpp"));
    assert_eq!(pop_name(&mut q, s(0)).as_deref(), Some("hpp"));
    assert_eq!(pop_name(&mut q, s(0)), None);
}

// ---------------------------------------------------------------------------------------------
// TestPriorityQueue_Update. kube's cases change an annotation and register a plugin whose hint
// queues the pod for any update; ours requeue an unschedulable pod when its spec or labels
// change (the pod-update events kube's default plugins register), so the updates here change
// a label. An annotation-only change stands for kube's "hint returns QueueSkip" case.

fn updated(p: &Pod, value: &str) -> Pod {
    labelled(p.clone(), "foo", value)
}

#[test]
fn priority_queue_update_pod_that_did_not_exist_in_the_queue() {
    let mut q = queue();
    q.update(updated(&mpp(), "test"), s(0));
    assert_eq!(pos(&q, &mpp()), Some(QueueName::Active));
    assert_eq!(q.pop(s(0)).as_deref(), Some(&updated(&mpp(), "test")));
}

#[test]
fn priority_queue_update_adds_a_nominated_node_name() {
    let mut sch = scheduler();
    sch.apply(ClusterEvent::update(nominated(hpp(), "node1")), s(0));
    assert_eq!(sch.queue().position("ns1/hpp"), Some(QueueName::Active));
    assert_eq!(sch.nominated_node("ns1/hpp"), Some("node1"));
    assert_eq!(sch.nominator().len(), 1);
}

#[test]
fn priority_queue_update_pod_in_active_q_stays_in_active_q() {
    let mut q = queue();
    q.add(hpp(), s(0));
    q.update(hpp(), s(0));
    assert_eq!(pos(&q, &hpp()), Some(QueueName::Active));
}

#[test]
fn priority_queue_update_pod_backing_off_stays_in_backoff_q() {
    let mut q = queue();
    add_and_pop(&mut q, &mpp(), s(0));
    q.backoff_after_error(&mpp().key(), s(0));
    q.update(updated(&mpp(), "test"), s(0));
    assert_eq!(pos(&q, &mpp()), Some(QueueName::Backoff));
    // Updated where it waits; after an error it waits out its backoff (1 s, ending in the
    // window of 1 s, so until 2 s), even with activeQ empty.
    assert_eq!(q.pop(s(1)), None);
    assert_eq!(q.pop(s(2)).as_deref(), Some(&updated(&mpp(), "test")));
}

#[test]
fn priority_queue_update_unschedulable_pod_still_backing_off_moves_to_backoff_q() {
    let mut q = queue();
    add_and_pop(&mut q, &mpp(), s(0));
    reject(&mut q, &mpp(), FOO, s(0));
    q.update(updated(&mpp(), "test"), s(0));
    assert_eq!(pos(&q, &mpp()), Some(QueueName::Backoff));
    assert_eq!(q.pop(s(1)).as_deref(), Some(&updated(&mpp(), "test")));
}

#[test]
fn priority_queue_update_unschedulable_pod_done_backing_off_moves_to_active_q() {
    let mut q = queue();
    add_and_pop(&mut q, &mpp(), s(0));
    reject(&mut q, &mpp(), FOO, s(0));
    // The clock moves by podMaxBackoffDuration.
    let now = q.settings().max_backoff;
    q.update(updated(&mpp(), "test1"), now);
    assert_eq!(pos(&q, &mpp()), Some(QueueName::Active));
    assert_eq!(q.pop(now).as_deref(), Some(&updated(&mpp(), "test1")));
}

#[test]
fn priority_queue_update_that_no_rejecting_reason_cares_about_stays_unschedulable() {
    let mut q = queue();
    add_and_pop(&mut q, &mpp(), s(0));
    reject(&mut q, &mpp(), FOO, s(0));
    let mut p = mpp();
    p.metadata.annotations.insert("foo".into(), "test1".into());
    q.update(p, s(0));
    assert_eq!(pos(&q, &mpp()), Some(QueueName::Unschedulable));
}

#[test]
fn priority_queue_update_in_flight_pod_is_not_added_to_any_queue() {
    let mut q = queue();
    add_and_pop(&mut q, &mpp(), s(0));
    q.update(updated(&mpp(), "bar"), s(0));
    assert_eq!(pos(&q, &mpp()), Some(QueueName::InFlight));
    let mut want = counts(0, 0, 0);
    want.in_flight = 1;
    assert_eq!(q.counts(), want);
}

// TestPriorityQueue_UpdateWhenInflight
#[test]
fn priority_queue_update_when_in_flight_requeues_the_rejected_pod() {
    let mut q = queue();
    let p = pod("test-ns", "test-pod", 0);
    add_and_pop(&mut q, &p, s(0));
    // Updated (tolerations added) while being scheduled.
    let mut u = p.clone();
    u.spec.tolerations = vec![
        serde_json::from_value(serde_json::json!({"key": "foo", "effect": "NoSchedule"})).unwrap(),
    ];
    q.update(u.clone(), s(0));
    // Rejected by a plugin that pod updates can help: the update may change the result.
    reject(&mut q, &p, EventMask::ALL, s(0));
    assert_eq!(pos(&q, &p), Some(QueueName::Backoff));
    assert_eq!(q.pop(s(1)).as_deref(), Some(&u));
}

// ---------------------------------------------------------------------------------------------
// TestPriorityQueue_Delete

#[test]
fn priority_queue_delete() {
    let mut q = queue();
    q.update(nominated(hpp(), "node1"), s(0));
    q.add(up(), s(0));
    assert!(q.delete(&hpp().key()));
    assert_eq!(pos(&q, &up()), Some(QueueName::Active));
    assert_eq!(pos(&q, &hpp()), None);
    assert!(q.delete(&up().key()));
    assert!(q.is_empty());
}

#[test]
fn priority_queue_delete_drops_nominations_through_the_scheduler() {
    let mut sch = scheduler();
    sch.apply(ClusterEvent::update(nominated(hpp(), "node1")), s(0));
    sch.apply(ClusterEvent::add(up()), s(0));
    sch.apply(ClusterEvent::Delete(ObjectKey::pod("ns1/hpp")), s(0));
    assert_eq!(sch.queue().position("ns1/up"), Some(QueueName::Active));
    assert_eq!(sch.queue().position("ns1/hpp"), None);
    assert_eq!(sch.nominator().len(), 1);
    sch.apply(ClusterEvent::Delete(ObjectKey::pod("ns1/up")), s(0));
    assert_eq!(sch.nominator().len(), 0);
}

// ---------------------------------------------------------------------------------------------
// TestPriorityQueue_MoveAllToActiveOrBackoffQueueWithQueueingHint

fn p1() -> Pod {
    labelled(pod("ns1", "pod1", 0), "foo", "bar")
}

#[test]
fn move_with_hint_queues_pod_to_backoff_q_if_backing_off() {
    let mut q = queue();
    add_and_pop(&mut q, &p1(), s(0));
    reject(&mut q, &p1(), FOO, s(0));
    q.on_event(EventMask::NODE_ADD, s(0));
    assert_eq!(pos(&q, &p1()), Some(QueueName::Backoff));
}

#[test]
fn move_with_hint_queues_pod_to_active_q_if_not_backing_off() {
    let mut q = queue();
    add_and_pop(&mut q, &p1(), s(0));
    reject(&mut q, &p1(), FOO, s(0));
    // DefaultPodInitialBackoffDuration + 1 s.
    q.on_event(EventMask::NODE_ADD, s(2));
    assert_eq!(pos(&q, &p1()), Some(QueueName::Active));
}

#[test]
fn move_with_hint_skip_keeps_pod_unschedulable() {
    let mut q = queue();
    add_and_pop(&mut q, &p1(), s(0));
    reject(&mut q, &p1(), BAR, s(0));
    q.on_event(EventMask::NODE_ADD, s(0));
    assert_eq!(pos(&q, &p1()), Some(QueueName::Unschedulable));
}

#[test]
fn move_with_hint_keeps_pod_gated_by_scheduling_gates() {
    let mut q = queue();
    let mut p = p1();
    p.spec.scheduling_gates =
        vec![serde_json::from_value(serde_json::json!({"name": "example.com/gate"})).unwrap()];
    q.add(p.clone(), s(0));
    assert_eq!(q.pop(s(0)), None);
    q.on_event(EventMask::NODE_ADD, s(0));
    assert_eq!(pos(&q, &p), Some(QueueName::Gated));
}

// ---------------------------------------------------------------------------------------------
// TestPriorityQueue_MoveAllToActiveOrBackoffQueue (fooPlugin registers NodeAdd; barPlugin
// nothing kube sends here; hpp1 fails with no plugin: an error)

#[test]
fn priority_queue_move_all_to_active_or_backoff_queue() {
    let mut q = queue();
    let max = q.settings().max_backoff;
    let hpp1 = pod("ns1", "hpp1", HIGH);
    let hpp2 = pod("ns1", "hpp2", HIGH);
    let t0 = s(0);
    add_and_pop(&mut q, &up(), t0);
    add_and_pop(&mut q, &hpp(), t0);
    reject(&mut q, &up(), FOO, t0);
    reject(&mut q, &hpp(), FOO, t0);
    add_and_pop(&mut q, &hpp1, t0);
    q.backoff_after_error(&hpp1.key(), t0);
    add_and_pop(&mut q, &hpp2, t0);
    reject(&mut q, &hpp2, BAR, t0);
    // NodeAdd moves up and hpp to backoffQ.
    q.on_event(EventMask::NODE_ADD, t0);
    q.add(mpp(), t0);
    assert_eq!(q.counts().active, 1);
    assert_eq!(pop_name(&mut q, t0).as_deref(), Some("mpp"));
    // hpp2 isn't moved.
    assert_eq!(q.counts().backoff, 3);
    assert_eq!(pos(&q, &hpp2), Some(QueueName::Unschedulable));

    // kube pops the backed-off pods out of backoffQ (they leave the queue) and adds them again.
    let t1 = t0 + max;
    for p in [&up(), &hpp(), &hpp1] {
        assert!(q.delete(&p.key()));
    }
    add_and_pop(&mut q, &up(), t1);
    add_and_pop(&mut q, &hpp(), t1);
    add_and_pop(&mut q, &hpp1, t1);
    reject(&mut q, &up(), FOO, t1);
    reject(&mut q, &hpp(), FOO, t1);
    q.backoff_after_error(&hpp1.key(), t1);
    // kube adds mpp to activeQ again while it is still in flight there; our queue takes an
    // add of an in-flight pod as an update, so its attempt ends first.
    q.done(&mpp().key());
    q.add(mpp(), t1);
    for p in [&up(), &hpp(), &hpp2] {
        assert_eq!(
            pos(&q, p),
            Some(QueueName::Unschedulable),
            "{}",
            p.metadata.name
        );
    }
    assert_eq!(pos(&q, &hpp1), Some(QueueName::Backoff));
    assert_eq!(q.counts().active, 1);

    // After podMaxBackoffDuration, flushing backoffQ moves hpp1 and NodeAdd moves up and hpp.
    let t2 = t1 + max;
    q.flush(t2);
    q.on_event(EventMask::NODE_ADD, t2);
    assert_eq!(q.counts().active, 4);
    assert_eq!(q.counts().backoff, 0);
    // hpp2 isn't moved regardless of its backoff timer.
    assert_eq!(q.counts().unschedulable, 1);
    assert_eq!(pos(&q, &hpp2), Some(QueueName::Unschedulable));
}

// ---------------------------------------------------------------------------------------------
// TestPriorityQueue_AssignedPodAdded_ / TestPriorityQueue_AssignedPodUpdated: the rejecting
// plugin is the one whose reason the pod got.

fn assigned_pod_event_requeues(reason: Reason, event: EventMask) -> bool {
    let mut q = queue();
    let p = pod("ns1", "afp", 0);
    add_and_pop(&mut q, &p, s(0));
    reject(&mut q, &p, events_for(&reason), s(0));
    // The clock moves past the backoff.
    q.on_event(event, s(2));
    pos(&q, &p) == Some(QueueName::Active)
}

#[test]
fn assigned_pod_added() {
    // Pod rejected by pod affinity is requeued with a matching Pod's add.
    assert!(assigned_pod_event_requeues(
        Reason::PodAffinityRulesNotMatch,
        EventMask::ASSIGNED_POD_ADD
    ));
    // Pod rejected by pod topology spread is requeued with a Pod's add in the same namespace.
    assert!(assigned_pod_event_requeues(
        Reason::TopologySpreadConstraintsNotMatch,
        EventMask::ASSIGNED_POD_ADD
    ));
    // Pod rejected by other plugins isn't requeued with any Pod's add.
    assert!(!assigned_pod_event_requeues(
        Reason::NodeSelectorMismatch,
        EventMask::ASSIGNED_POD_ADD
    ));
}

#[test]
fn assigned_pod_updated() {
    // Pod rejected by pod affinity is requeued with a matching Pod's update (label).
    assert!(assigned_pod_event_requeues(
        Reason::PodAffinityRulesNotMatch,
        EventMask::ASSIGNED_POD_UPDATE
    ));
    // Pod rejected by pod topology spread is requeued with a Pod's update in the same namespace.
    assert!(assigned_pod_event_requeues(
        Reason::TopologySpreadConstraintsNotMatch,
        EventMask::ASSIGNED_POD_UPDATE
    ));
    // Pod rejected by resource fit is requeued with an assigned Pod's scale down.
    assert!(assigned_pod_event_requeues(
        Reason::Insufficient(ResourceSet(ResourceSet::CPU)),
        EventMask::ASSIGNED_POD_UPDATE
    ));
    // Pod rejected by other plugins isn't requeued with any Pod's update.
    assert!(!assigned_pod_event_requeues(
        Reason::NodeSelectorMismatch,
        EventMask::ASSIGNED_POD_UPDATE
    ));
}

// ---------------------------------------------------------------------------------------------
// TestPriorityQueue_PendingPods

#[test]
fn priority_queue_pending_pods() {
    let mut q = queue();
    add_and_pop(&mut q, &up(), s(0));
    add_and_pop(&mut q, &hpp(), s(0));
    q.add(mpp(), s(0));
    reject(&mut q, &up(), FOO, s(0));
    reject(&mut q, &hpp(), FOO, s(0));
    assert_eq!(q.len(), 3);
    assert_eq!(q.counts(), counts(1, 0, 2));
    // Move all (EventUnschedulableTimeout): the same pods, now backing off.
    q.on_event(EventMask::ALL, s(0));
    assert_eq!(q.len(), 3);
    assert_eq!(q.counts(), counts(1, 2, 0));
}

// TestPriorityQueue_NewWithOptions
#[test]
fn priority_queue_new_with_options() {
    let q = SchedulingQueue::new(QueueSettings::with_backoff(s(2), s(20)));
    assert_eq!(q.settings().initial_backoff, s(2));
    assert_eq!(q.settings().max_backoff, s(20));
}

// ---------------------------------------------------------------------------------------------
// TestRecentlyTriedPodsGoBack

#[test]
fn recently_tried_pods_go_back() {
    let mut q = queue();
    let pods: Vec<Pod> = (0..5)
        .map(|i| nominated(pod("ns1", &format!("test-pod-{i}"), HIGH), "node1"))
        .collect();
    for p in &pods {
        q.add(p.clone(), s(0));
    }
    let t = Duration::from_micros(1);
    let p1 = q.pop(t).unwrap();
    reject(&mut q, &p1, FOO, t);
    let t = t + q.settings().max_backoff;
    q.on_event(EventMask::ALL, t);
    for i in 0..5 {
        let p = q.pop(t).unwrap();
        assert_eq!(i == 4, p.key() == p1.key(), "pop {i}: {}", p.metadata.name);
    }
}

// TestPodFailedSchedulingMultipleTimesDoesNotBlockNewerPod
#[test]
fn pod_failed_scheduling_multiple_times_does_not_block_newer_pod() {
    let mut q = queue();
    let unsched = nominated(pod("ns1", "test-pod-unscheduled", HIGH), "node1");
    add_and_pop(&mut q, &unsched, s(0));
    reject(&mut q, &unsched, FOO, s(0));
    // DefaultPodInitialBackoffDuration + 1 s.
    let t = s(2);
    q.on_event(EventMask::ALL, t);
    assert_eq!(pop_name(&mut q, t).as_deref(), Some("test-pod-unscheduled"));
    // A newer pod arrives while it is being scheduled; then it is rejected again.
    let newer = nominated(pod("ns1", "test-newer-pod", HIGH), "node1");
    q.add(newer, t);
    reject(&mut q, &unsched, FOO, t);
    // Its second backoff is 2 s: move all once it is over.
    let t = t + s(2);
    q.on_event(EventMask::ALL, t);
    // The newer pod goes first: it is the oldest tried one.
    assert_eq!(pop_name(&mut q, t).as_deref(), Some("test-newer-pod"));
}

// TestHighPriorityBackoff
#[test]
fn high_priority_backoff() {
    let mut q = queue();
    let mid = nominated(pod("ns1", "test-midpod", MID), "node1");
    let high = nominated(pod("ns1", "test-highpod", HIGH), "node1");
    q.add(mid, s(0));
    q.add(high.clone(), s(0));
    assert_eq!(pop_name(&mut q, s(0)).as_deref(), Some("test-highpod"));
    reject(&mut q, &high, FOO, s(0));
    q.on_event(EventMask::ALL, s(0));
    // The high-priority pod backs off; the mid one goes.
    assert_eq!(pop_name(&mut q, s(0)).as_deref(), Some("test-midpod"));
}

// TestHighPriorityFlushUnschedulablePodsLeftover
#[test]
fn high_priority_flush_unschedulable_pods_leftover() {
    let mut q = queue();
    let mid = nominated(pod("ns1", "test-midpod", MID), "node1");
    let high = nominated(pod("ns1", "test-highpod", HIGH), "node1");
    add_and_pop(&mut q, &high, s(0));
    add_and_pop(&mut q, &mid, s(0));
    reject(&mut q, &high, FOO, s(0));
    reject(&mut q, &mid, FOO, s(0));
    // DefaultPodMaxInUnschedulablePodsDuration + 1 s.
    let t = q.settings().max_in_unschedulable + s(1);
    q.flush(t);
    assert_eq!(pop_name(&mut q, t).as_deref(), Some("test-highpod"));
    assert_eq!(pop_name(&mut q, t).as_deref(), Some("test-midpod"));
}

// ---------------------------------------------------------------------------------------------
// TestPriorityQueue_initPodMaxInUnschedulablePodsDuration: pInfo1 entered the pool 1 s before
// "now", pInfo2 2 s before; the clock then moves by podMaxInUnschedulablePodsDuration.

fn init_pod_max_in_unschedulable(max: Option<Duration>) {
    let mut settings = QueueSettings::default();
    if let Some(max) = max {
        settings.max_in_unschedulable = max;
    }
    let mut q = SchedulingQueue::new(settings);
    let pod1 = nominated(pod("ns1", "test-pod-1", 0), "node1");
    let pod2 = nominated(pod("ns2", "test-pod-2", 0), "node2");
    let now = s(10);
    q.requeue_unschedulable(pod1, Tries::with_attempts(1), FOO, now - s(1));
    q.requeue_unschedulable(pod2, Tries::with_attempts(1), FOO, now - s(2));
    q.flush(now + settings.max_in_unschedulable);
    assert_eq!(q.counts().active, 2);
    let now = now + settings.max_in_unschedulable;
    assert_eq!(pop_name(&mut q, now).as_deref(), Some("test-pod-2"));
    assert_eq!(pop_name(&mut q, now).as_deref(), Some("test-pod-1"));
}

#[test]
fn init_pod_max_in_unschedulable_pods_duration_default() {
    init_pod_max_in_unschedulable(None);
}

#[test]
fn init_pod_max_in_unschedulable_pods_duration_user_defined() {
    init_pod_max_in_unschedulable(Some(s(30)));
}

// ---------------------------------------------------------------------------------------------
// TestPodTimestamp: pInfo1 at the clock's time, pInfo2 1 s later.

fn pod_timestamp_pods() -> (Pod, Pod) {
    (
        nominated(pod("ns1", "test-pod-1", 0), "node1"),
        nominated(pod("ns2", "test-pod-2", 0), "node2"),
    )
}

fn pop_all(q: &mut SchedulingQueue, now: Duration) -> Vec<String> {
    std::iter::from_fn(|| pop_name(q, now)).collect()
}

#[test]
fn pod_timestamp_two_pods_in_active_q_sorted_by_timestamp() {
    let (p1, p2) = pod_timestamp_pods();
    let mut q = queue();
    q.add(p2, s(11));
    q.add(p1, s(10));
    assert_eq!(q.counts().active, 2);
    assert_eq!(pop_all(&mut q, s(11)), ["test-pod-1", "test-pod-2"]);
}

#[test]
fn pod_timestamp_two_pods_moved_from_the_unschedulable_pool_sorted_by_timestamp() {
    let (p1, p2) = pod_timestamp_pods();
    let mut q = queue();
    q.requeue_unschedulable(p2, Tries::with_attempts(1), FOO, s(11));
    q.requeue_unschedulable(p1, Tries::with_attempts(1), FOO, s(10));
    // The clock moves 3 s, then move all.
    q.on_event(EventMask::ALL, s(13));
    assert_eq!(q.counts().active, 2);
    assert_eq!(pop_all(&mut q, s(13)), ["test-pod-1", "test-pod-2"]);
}

#[test]
fn pod_timestamp_one_pod_moved_from_backoff_q_to_active_q() {
    let (p1, p2) = pod_timestamp_pods();
    let mut q = queue();
    q.add(p2, s(11));
    q.requeue_with_backoff(p1, Tries::with_attempts(1), s(10));
    // flushBackoffQ (3 s later), then move all.
    q.flush(s(13));
    q.on_event(EventMask::ALL, s(13));
    assert_eq!(q.counts().active, 2);
    assert_eq!(pop_all(&mut q, s(13)), ["test-pod-1", "test-pod-2"]);
}

// ---------------------------------------------------------------------------------------------
// TestPerPodSchedulingMetrics (attempt counts)

#[test]
fn per_pod_scheduling_attempts() {
    let p = pod("test-ns", "test-pod", 0);
    let flush_at = QueueSettings::default().max_in_unschedulable + Duration::from_nanos(1);

    // Created and scheduled after 1 attempt.
    let mut q = queue();
    q.add(p.clone(), s(0));
    q.pop(s(0)).unwrap();
    assert_eq!(q.attempts(&p.key()), Some(1));

    // Add -> Pop -> unschedulable -> flushUnschedulablePodsLeftover -> Pop: 2 attempts.
    let mut q = queue();
    add_and_pop(&mut q, &p, s(0));
    reject(&mut q, &p, FOO, s(0));
    q.flush(flush_at);
    q.pop(flush_at).unwrap();
    assert_eq!(q.attempts(&p.key()), Some(2));

    // ... with an update before the second pop: still 2.
    let mut q = queue();
    add_and_pop(&mut q, &p, s(0));
    reject(&mut q, &p, FOO, s(0));
    q.flush(flush_at);
    // (kube bumps `metadata.generation`, which our model doesn't have: an annotation instead.)
    let mut u = p.clone();
    u.metadata
        .annotations
        .insert("generation".into(), "1".into());
    q.update(u, flush_at);
    q.pop(flush_at).unwrap();
    assert_eq!(q.attempts(&p.key()), Some(2));

    // A gated pod, scheduled after its gate is lifted: 1 attempt.
    let mut q = queue();
    let mut g = p.clone();
    g.spec.scheduling_gates =
        vec![serde_json::from_value(serde_json::json!({"name": "foo"})).unwrap()];
    q.add(g, s(0));
    assert_eq!(pos(&q, &p), Some(QueueName::Gated));
    q.update(p.clone(), s(60));
    q.pop(s(60)).unwrap();
    assert_eq!(q.attempts(&p.key()), Some(1));
}

// ---------------------------------------------------------------------------------------------
// TestBackOffFlow: each attempt's backoff (1, 2, 4, 8, 10, 10, 10 s), still backing off after
// an early flush, out of backoffQ once it is over.

const BACKOFFS: [u64; 7] = [1, 2, 4, 8, 10, 10, 10];

#[test]
fn back_off_flow_without_pop_from_backoff_q() {
    let mut q = queue_without_pop_from_backoff();
    let p = pod("test-ns", "test-pod", 0);
    let mut now = Duration::ZERO;
    q.add(p.clone(), now);
    for (i, want) in BACKOFFS.iter().enumerate() {
        let timestamp = now;
        let popped = q.pop(now).expect("popped");
        assert_eq!(popped.key(), p.key());
        assert_eq!(q.attempts(&p.key()), Some(i as u32 + 1));
        reject(&mut q, &p, FOO, now);
        // An event happens.
        q.on_event(EventMask::ALL, now);
        assert_eq!(pos(&q, &p), Some(QueueName::Backoff), "step {i}");
        // The backoff's end.
        assert_eq!(q.next_wakeup(), Some(timestamp + s(*want)), "step {i}");
        // Still in backoffQ after an early flush.
        now += ms(1);
        q.flush(now);
        assert_eq!(pos(&q, &p), Some(QueueName::Backoff), "step {i}");
        // Out of backoffQ after the backoff.
        now += s(*want);
        q.flush(now);
        assert_eq!(pos(&q, &p), Some(QueueName::Active), "step {i}");
    }
}

#[test]
fn back_off_flow_with_pop_from_backoff_q() {
    let mut q = queue();
    let p = pod("test-ns", "test-pod", 0);
    // Not on a window's start, as kube's clock (time.Now()) is not.
    let mut now = ms(300);
    q.add(p.clone(), now);
    for (i, want) in BACKOFFS.iter().enumerate() {
        let timestamp = now;
        q.pop(now).expect("popped");
        assert_eq!(q.attempts(&p.key()), Some(i as u32 + 1));
        reject(&mut q, &p, FOO, now);
        q.on_event(EventMask::ALL, now);
        assert_eq!(pos(&q, &p), Some(QueueName::Backoff), "step {i}");
        // kube's check: the backoff (expiration minus timestamp) truncated to the window,
        // plus one window, is the step's backoff. Our wake-up is the window after the
        // expiration.
        let until = q.next_wakeup().expect("backing off") - timestamp;
        assert_eq!(
            Duration::from_secs((until - s(1)).as_secs()) + s(1),
            s(*want),
            "step {i}"
        );
        // One ordering window (1 s) later: still backing off, even for a 1 s backoff.
        now += s(1);
        q.flush(now);
        assert_eq!(pos(&q, &p), Some(QueueName::Backoff), "step {i}");
        now += s(*want);
        q.flush(now);
        assert_eq!(pos(&q, &p), Some(QueueName::Active), "step {i}");
    }
}

// ---------------------------------------------------------------------------------------------
// Test_queuedPodInfo_gatedSetUponCreationAndUnsetUponUpdate

#[test]
fn gated_upon_creation_and_ungated_upon_update() {
    let mut q = queue();
    let p = pod("default", "gated", 0);
    let mut gated = p.clone();
    gated.spec.scheduling_gates =
        vec![serde_json::from_value(serde_json::json!({"name": "hello world"})).unwrap()];
    q.add(gated, s(0));
    assert_eq!(pos(&q, &p), Some(QueueName::Gated));
    q.update(p.clone(), s(0));
    let popped = q.pop(s(0)).expect("ungated pod pops");
    assert!(popped.spec.scheduling_gates.is_empty());
}

// TestPriorityQueue_GetPod
#[test]
fn priority_queue_get_pod() {
    let mut q = queue();
    let active = pod("default", "pod1", 0);
    let backoff = pod("default", "pod2", 0);
    let unsched = pod("default", "pod3", 0);
    add_and_pop(&mut q, &backoff, s(0));
    q.backoff_after_error(&backoff.key(), s(0));
    add_and_pop(&mut q, &unsched, s(0));
    reject(&mut q, &unsched, FOO, s(0));
    q.add(active, s(0));
    assert_eq!(q.position("default/pod1"), Some(QueueName::Active));
    assert_eq!(q.position("default/pod2"), Some(QueueName::Backoff));
    assert_eq!(q.position("default/pod3"), Some(QueueName::Unschedulable));
    assert_eq!(q.position("default/pod4"), None);
}
