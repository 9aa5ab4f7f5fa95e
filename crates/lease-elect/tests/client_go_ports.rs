//! Ports of client-go's tools/leaderelection tests (leaderelection_test.go and
//! healthzadaptor_test.go), in simulated time. Identity "baz" competes with "bing", as there.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{CountingLock, Recorder, held_by, sim_config};
use lease_elect::{
    ConfigError, ElectionConfig, ElectionEvent, LeaderElectionRecord, LeaderElector, LockError,
    MemoryLock, MemoryStore, ResourceLock, RunOutcome, SimClock,
};

fn elector(store: &MemoryStore) -> (LeaderElector, CountingLock) {
    let lock = CountingLock::new(store, "baz");
    (LeaderElector::new(sim_config(lock.clone(), 10)), lock)
}

// ---- the tryAcquireOrRenew table ----

#[tokio::test(start_paused = true)]
async fn acquire_from_no_object() {
    let store = MemoryStore::new("t");
    let (le, lock) = elector(&store);
    assert!(le.try_acquire_or_renew().await.unwrap());
    assert_eq!(lock.calls(), ["get", "create"]);
    let (rec, _) = store.peek().unwrap();
    assert_eq!(rec.holder_identity, "baz");
    assert_eq!(rec.leader_transitions, 0, "no transition on create");
    assert_eq!(le.leader().as_deref(), Some("baz"));
    assert!(le.is_leader());
}

#[tokio::test(start_paused = true)]
async fn acquire_from_unled_object() {
    // Also client-go's "object without annotations": an all-default record.
    let store = MemoryStore::new("t");
    store.force(LeaderElectionRecord::default());
    let (le, lock) = elector(&store);
    assert!(le.try_acquire_or_renew().await.unwrap());
    assert_eq!(lock.calls(), ["get", "update"]);
    let (rec, _) = store.peek().unwrap();
    assert_eq!(rec.holder_identity, "baz");
    assert_eq!(rec.leader_transitions, 1);
}

#[tokio::test(start_paused = true)]
async fn acquire_from_led_object_after_the_records_lease_duration() {
    let store = MemoryStore::new("t");
    store.force(held_by("bing", 3));
    let (le, lock) = elector(&store);
    assert!(!le.try_acquire_or_renew().await.unwrap());
    assert_eq!(le.leader().as_deref(), Some("bing"));
    // The record's 3 s, not our configured 10 s, decides.
    SimClock::advance(Duration::from_secs(3)).await;
    assert!(le.try_acquire_or_renew().await.unwrap());
    assert_eq!(lock.calls(), ["get", "get", "update"]);
    let (rec, _) = store.peek().unwrap();
    assert_eq!(rec.holder_identity, "baz");
    assert_eq!(rec.leader_transitions, 1);
    assert_eq!(rec.lease_duration_seconds, 10);
}

#[tokio::test(start_paused = true)]
async fn acquire_from_led_unacked_object() {
    let store = MemoryStore::new("t");
    store.force(held_by("bing", 10));
    let (le, _lock) = elector(&store);
    assert!(!le.try_acquire_or_renew().await.unwrap());
    SimClock::advance(Duration::from_millis(9_999)).await;
    assert!(!le.try_acquire_or_renew().await.unwrap(), "not yet expired");
    SimClock::advance(Duration::from_millis(1)).await;
    assert!(le.try_acquire_or_renew().await.unwrap());
    assert_eq!(store.peek().unwrap().0.leader_transitions, 1);
}

#[tokio::test(start_paused = true)]
async fn acquire_from_empty_led_acked_object() {
    let store = MemoryStore::new("t");
    store.force(held_by("", 10));
    let (le, lock) = elector(&store);
    assert!(le.try_acquire_or_renew().await.unwrap());
    assert_eq!(lock.calls(), ["get", "update"]);
    assert_eq!(store.peek().unwrap().0.leader_transitions, 1);
}

#[tokio::test(start_paused = true)]
async fn dont_acquire_from_led_acked_object() {
    let store = MemoryStore::new("t");
    store.force(held_by("bing", 10));
    let (le, lock) = elector(&store);
    assert!(!le.try_acquire_or_renew().await.unwrap());
    assert_eq!(lock.calls(), ["get"]);
    assert_eq!(le.leader().as_deref(), Some("bing"));
    assert!(!le.is_leader());
    // A renewal by bing restarts our expiry timer.
    SimClock::advance(Duration::from_secs(8)).await;
    let v = store.peek().unwrap().1;
    let renewed = LeaderElectionRecord {
        renew_time: Some(std::time::SystemTime::now()),
        ..held_by("bing", 10)
    };
    lock.inner.update(&v, &renewed).await.unwrap();
    assert!(!le.try_acquire_or_renew().await.unwrap());
    SimClock::advance(Duration::from_secs(8)).await;
    assert!(
        !le.try_acquire_or_renew().await.unwrap(),
        "16 s after first sight, 8 s after the renewal"
    );
    SimClock::advance(Duration::from_secs(2)).await;
    assert!(le.try_acquire_or_renew().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn renew_already_acquired_object_uses_the_fast_path() {
    let store = MemoryStore::new("t");
    let (le, lock) = elector(&store);
    assert!(le.try_acquire_or_renew().await.unwrap());
    let first = store.peek().unwrap().0;
    lock.clear_calls();
    SimClock::advance(Duration::from_secs(2)).await;
    assert!(le.try_acquire_or_renew().await.unwrap());
    assert_eq!(lock.calls(), ["update"], "the leader renews without a get");
    let (rec, _) = store.peek().unwrap();
    assert_eq!(rec.holder_identity, "baz");
    assert_eq!(rec.leader_transitions, 0, "renewal is not a transition");
    assert_eq!(
        rec.acquire_time, first.acquire_time,
        "acquireTime kept on renew"
    );
}

#[tokio::test(start_paused = true)]
async fn fast_path_falls_back_to_get_on_failure() {
    let store = MemoryStore::new("t");
    let (le, lock) = elector(&store);
    assert!(le.try_acquire_or_renew().await.unwrap());
    let token = le.guard().unwrap().token();
    lock.clear_calls();
    lock.fail_when(|verb, n| {
        (verb == "update" && n == 0).then(|| LockError::retryable("injected"))
    });
    assert!(le.try_acquire_or_renew().await.unwrap());
    assert_eq!(lock.calls(), ["update", "get", "update"]);
    assert_eq!(le.guard().unwrap().token(), token, "same term");
}

#[tokio::test(start_paused = true)]
async fn fast_path_conflict_after_lost_reply_falls_back_and_keeps_leading() {
    let store = MemoryStore::new("t");
    let lock = MemoryLock::new(&store, "baz");
    let le = LeaderElector::new(sim_config(lock.clone(), 10));
    assert!(le.try_acquire_or_renew().await.unwrap());
    let token = le.guard().unwrap().token();
    // The next write is applied but its reply is lost.
    lock.faults().set(lease_elect::Faults {
        lost_reply_rate: 1.0,
        ..Default::default()
    });
    assert!(le.try_acquire_or_renew().await.is_err());
    lock.faults().set(lease_elect::Faults::none());
    // Our cached version is stale now: the fast path conflicts, the slow path renews.
    assert!(le.try_acquire_or_renew().await.unwrap());
    assert_eq!(le.guard().unwrap().token(), token);
    assert_eq!(store.peek().unwrap().0.leader_transitions, 0);
}

#[tokio::test(start_paused = true)]
async fn deposed_leader_stops_leading_when_it_sees_another_holder() {
    let store = MemoryStore::new("t");
    let (le, _lock) = elector(&store);
    assert!(le.try_acquire_or_renew().await.unwrap());
    let guard = le.guard().unwrap();
    store.force(held_by("bing", 10));
    assert!(!le.try_acquire_or_renew().await.unwrap());
    assert!(!le.is_leader());
    assert!(!guard.is_valid());
    tokio::time::timeout(Duration::from_millis(1), guard.lost())
        .await
        .expect("loss signalled");
}

// ---- release ----

#[tokio::test(start_paused = true)]
async fn release_acquired_lock_from_no_object() {
    let store = MemoryStore::new("t");
    let (le, lock) = elector(&store);
    assert!(le.try_acquire_or_renew().await.unwrap());
    assert!(le.release().await.unwrap());
    assert_eq!(lock.calls(), ["get", "create", "update"]);
    let (rec, _) = store.peek().unwrap();
    assert_eq!(rec.holder_identity, "");
    assert_eq!(rec.leader_transitions, 0);
    assert_eq!(rec.lease_duration_seconds, 1);
    assert_eq!(le.leader(), None);
    assert!(!le.is_leader());
    assert_eq!(
        lock.inner.events(),
        [
            ElectionEvent::BecameLeader {
                token: lease_elect::FencingToken(1)
            },
            ElectionEvent::StoppedLeading,
            ElectionEvent::Released
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn release_retries_on_conflict_while_the_record_still_names_us() {
    let store = MemoryStore::new("t");
    let (le, lock) = elector(&store);
    assert!(le.try_acquire_or_renew().await.unwrap());
    // Our own write landed without us knowing (a lost reply): the cached version is stale.
    let (mine, _) = store.peek().unwrap();
    store.force(mine);
    lock.clear_calls();
    assert!(le.release().await.unwrap());
    assert_eq!(lock.calls(), ["update", "get", "update"]);
    assert_eq!(store.peek().unwrap().0.holder_identity, "");
}

#[tokio::test(start_paused = true)]
async fn release_never_blanks_another_holder() {
    let store = MemoryStore::new("t");
    let (le, lock) = elector(&store);
    assert!(le.try_acquire_or_renew().await.unwrap());
    // bing took over (our lease expired while we were paused).
    store.force(held_by("bing", 10));
    lock.clear_calls();
    assert!(le.release().await.unwrap());
    assert_eq!(
        lock.calls(),
        ["update", "get"],
        "CAS failed, read, left alone"
    );
    assert_eq!(store.peek().unwrap().0.holder_identity, "bing");
}

#[tokio::test(start_paused = true)]
async fn release_on_cancellation_while_renewing() {
    let store = MemoryStore::new("t");
    let lock = CountingLock::new(&store, "baz");
    let config = ElectionConfig::builder()
        .lock(lock.clone())
        .clock(SimClock::new())
        // client-go creates a missing record at once, as this port expects (the wait
        // for a missing record, on by default, is checked in tests/safety.rs).
        .absent_record_wait(false)
        .lease_duration(Duration::from_secs(15))
        .renew_deadline(Duration::from_secs(2))
        .retry_period(Duration::from_secs(1))
        .release_on_cancel(true)
        .build()
        .unwrap();
    let le = LeaderElector::new(config);
    let rec = Recorder::default();
    // The first renewal hangs; we cancel while it is in flight.
    lock.inner.faults().set(lease_elect::Faults {
        min_latency: Duration::from_millis(400),
        max_latency: Duration::from_millis(400),
        ..Default::default()
    });
    let outcome = le
        .run(&rec, tokio::time::sleep(Duration::from_millis(2_000)))
        .await;
    assert_eq!(outcome, RunOutcome::Cancelled);
    assert_eq!(store.peek().unwrap().0.holder_identity, "", "released");
    assert_eq!(
        rec.log(),
        ["new leader baz", "started 1", "stopped", "ended"]
    );
    let events = lock.inner.events();
    assert!(matches!(events[0], ElectionEvent::BecameLeader { .. }));
    assert_eq!(
        events[1..],
        [ElectionEvent::StoppedLeading, ElectionEvent::Released]
    );
}

#[tokio::test(start_paused = true)]
async fn no_release_on_cancellation_when_not_configured() {
    let store = MemoryStore::new("t");
    let (le, _lock) = elector(&store);
    let rec = Recorder::default();
    le.run(&rec, tokio::time::sleep(Duration::from_secs(5)))
        .await;
    assert_eq!(store.peek().unwrap().0.holder_identity, "baz");
}

// ---- run and callbacks ----

#[tokio::test(start_paused = true)]
async fn stopped_leading_is_only_called_after_leading() {
    let store = MemoryStore::new("t");
    store.force(held_by("bing", 10));
    let (le, _lock) = elector(&store);
    let rec = Recorder::default();
    let outcome = le
        .run(&rec, tokio::time::sleep(Duration::from_secs(5)))
        .await;
    assert_eq!(outcome, RunOutcome::Cancelled);
    assert_eq!(rec.log(), ["new leader bing", "ended"]);
}

#[tokio::test(start_paused = true)]
async fn leader_loses_leadership_at_the_renew_deadline() {
    let store = MemoryStore::new("t");
    let lock = MemoryLock::new(&store, "baz");
    let clock = SimClock::new();
    let config = ElectionConfig::builder()
        .lock(lock.clone())
        .clock(clock.clone())
        // client-go creates a missing record at once, as this port expects (the wait
        // for a missing record, on by default, is checked in tests/safety.rs).
        .absent_record_wait(false)
        .seed(1)
        .build()
        .unwrap();
    let le = LeaderElector::new(config);
    let rec = Recorder::default();
    let faults = lock.faults().clone();
    let run = {
        let le = le.clone();
        let rec = rec.clone();
        tokio::spawn(async move { le.run(&rec, std::future::pending()).await })
    };
    tokio::time::sleep(Duration::from_secs(3)).await;
    let guard = le.guard().expect("leading");
    faults.partition(true);
    let cut = tokio::time::Instant::now();
    guard.lost().await;
    let lost_after = cut.elapsed();
    // Last successful renewal started at 2 s; the deadline is 10 s after it.
    assert_eq!(
        lost_after,
        Duration::from_secs(9),
        "lost at renewal start + renew deadline"
    );
    assert!(!guard.is_valid());
    assert_eq!(run.await.unwrap(), RunOutcome::LostLeadership);
    assert_eq!(
        rec.log(),
        ["new leader baz", "started 1", "stopped", "ended"]
    );
}

#[tokio::test(start_paused = true)]
async fn new_leader_is_reported_once_per_change() {
    let store = MemoryStore::new("t");
    store.force(held_by("bing", 10));
    let (le, _lock) = elector(&store);
    let rec = Recorder::default();
    let store2 = store.clone();
    let churn = async move {
        tokio::time::sleep(Duration::from_secs(3)).await;
        let v = store2.peek().unwrap().1;
        let _ = MemoryLock::new(&store2, "bing")
            .update(&v, &held_by("bing", 10))
            .await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        store2.force(held_by("other", 10));
        tokio::time::sleep(Duration::from_secs(3)).await;
        store2.force(held_by("", 10));
        tokio::time::sleep(Duration::from_secs(30)).await;
    };
    le.run(&rec, churn).await;
    let log = rec.log();
    assert_eq!(
        log[..3],
        ["new leader bing", "new leader other", "new leader baz"]
    );
}

#[tokio::test(start_paused = true)]
async fn watch_reports_leadership_changes() {
    let store = MemoryStore::new("t");
    let (le, _lock) = elector(&store);
    let mut rx = le.watch();
    assert!(!rx.borrow().is_self());
    assert!(le.try_acquire_or_renew().await.unwrap());
    assert!(rx.has_changed().unwrap());
    let l = rx.borrow_and_update().clone();
    assert_eq!(l.leader.as_deref(), Some("baz"));
    assert!(l.is_self());
    le.release().await.unwrap();
    let l = rx.borrow_and_update().clone();
    assert_eq!(l.leader, None);
    assert!(!l.is_self());
}

// ---- expiry never trusts remote timestamps ----

#[tokio::test(start_paused = true)]
async fn remote_timestamps_do_not_decide_expiry() {
    let store = MemoryStore::new("t");
    let epoch = std::time::SystemTime::UNIX_EPOCH;
    // renewTime far in the past (a holder whose wall clock is wrong): still not expired.
    store.force(LeaderElectionRecord {
        renew_time: Some(epoch),
        acquire_time: Some(epoch),
        ..held_by("bing", 10)
    });
    let (le, _lock) = elector(&store);
    assert!(!le.try_acquire_or_renew().await.unwrap());
    // renewTime far in the future: expires on our clock anyway.
    store.force(LeaderElectionRecord {
        renew_time: Some(epoch + Duration::from_secs(100 * 365 * 86_400)),
        ..held_by("bing", 10)
    });
    assert!(!le.try_acquire_or_renew().await.unwrap());
    SimClock::advance(Duration::from_secs(10)).await;
    assert!(le.try_acquire_or_renew().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn candidate_wakes_at_the_exact_expiry_instant() {
    let store = MemoryStore::without_notifications("t");
    store.force(held_by("bing", 15));
    let lock = MemoryLock::new(&store, "baz");
    let le = LeaderElector::new(
        ElectionConfig::builder()
            .lock(lock)
            .clock(SimClock::new())
            // client-go creates a missing record at once, as this port expects (the wait
            // for a missing record, on by default, is checked in tests/safety.rs).
            .absent_record_wait(false)
            .seed(3)
            .build()
            .unwrap(),
    );
    let start = tokio::time::Instant::now();
    let guard = le.acquire(&Recorder::default()).await;
    assert_eq!(start.elapsed(), Duration::from_secs(15));
    assert_eq!(guard.token().0, 2);
}

// ---- fencing tokens ----

#[tokio::test(start_paused = true)]
async fn tokens_increase_when_the_same_identity_acquires_again() {
    for strip in [false, true] {
        let store = MemoryStore::new("t");
        let lock = CountingLock::new(&store, "baz");
        let lock = if strip {
            lock.without_sequences()
        } else {
            lock
        };
        let le = LeaderElector::new(sim_config(lock, 10));
        let mut tokens = Vec::new();
        for _ in 0..3 {
            assert!(le.try_acquire_or_renew().await.unwrap());
            let t = le.guard().unwrap().token();
            assert!(le.try_acquire_or_renew().await.unwrap(), "renewal");
            assert_eq!(le.guard().unwrap().token(), t, "renewal keeps the token");
            tokens.push(t.0);
            le.release().await.unwrap();
        }
        // Expiry while the record still names us: a new term, a bigger token.
        assert!(le.try_acquire_or_renew().await.unwrap());
        SimClock::advance(Duration::from_secs(7)).await; // renew deadline 6 s passed
        assert!(!le.is_leader());
        assert!(le.try_acquire_or_renew().await.unwrap());
        tokens.push(le.guard().unwrap().token().0);
        assert!(
            tokens.windows(2).all(|w| w[0] < w[1]),
            "{strip}: {tokens:?}"
        );
        if strip {
            assert_eq!(tokens, [0, 1, 2, 4]);
        }
    }
}

// ---- config validation (client-go's order and messages) ----

#[test]
fn config_validation_in_client_go_order() {
    let store = MemoryStore::new("t");
    let s = Duration::from_secs;
    type Case = (
        u64,
        u64,
        Duration,
        Option<&'static str>,
        ConfigError,
        &'static str,
    );
    let cases: Vec<Case> = vec![
        (
            10,
            10,
            s(2),
            Some("a"),
            ConfigError::LeaseNotAboveRenewDeadline,
            "leaseDuration must be greater than renewDeadline",
        ),
        (
            15,
            10,
            s(9),
            Some("a"),
            ConfigError::RenewDeadlineNotAboveJitteredRetry,
            "renewDeadline must be greater than retryPeriod*JitterFactor",
        ),
        (
            15,
            12,
            s(10),
            Some("a"),
            ConfigError::RenewDeadlineNotAboveJitteredRetry,
            "renewDeadline must be greater than retryPeriod*JitterFactor",
        ),
        (
            0,
            0,
            s(0),
            Some("a"),
            ConfigError::LeaseNotAboveRenewDeadline,
            "leaseDuration must be greater than renewDeadline",
        ),
        (
            1,
            0,
            s(0),
            Some("a"),
            ConfigError::RenewDeadlineNotAboveJitteredRetry,
            "renewDeadline must be greater than retryPeriod*JitterFactor",
        ),
        (
            15,
            10,
            s(0),
            Some("a"),
            ConfigError::ZeroRetryPeriod,
            "retryPeriod must be greater than zero",
        ),
        (
            15,
            10,
            s(2),
            None,
            ConfigError::MissingLock,
            "Lock must not be nil.",
        ),
        (
            15,
            10,
            s(2),
            Some(""),
            ConfigError::EmptyIdentity,
            "Lock identity is empty",
        ),
    ];
    for (lease, renew, retry, id, want, msg) in cases {
        let mut b = ElectionConfig::builder()
            .lease_duration(s(lease))
            .renew_deadline(s(renew))
            .retry_period(retry);
        if let Some(id) = id {
            b = b.lock(MemoryLock::new(&store, id));
        }
        let err = b.build().unwrap_err();
        assert_eq!(err, want);
        assert_eq!(err.to_string(), msg);
    }
    let frac = ElectionConfig::builder()
        .lock(MemoryLock::new(&store, "a"))
        .lease_duration(Duration::from_millis(15_500))
        .build()
        .unwrap_err();
    assert_eq!(frac, ConfigError::FractionalLeaseDuration);
    let ok = ElectionConfig::builder()
        .lock(MemoryLock::new(&store, "a"))
        .build()
        .unwrap();
    assert_eq!(
        (ok.lease_duration(), ok.renew_deadline(), ok.retry_period()),
        (s(15), s(10), s(2))
    );
    // renew deadline exactly 1.2 x retry is rejected, just above is fine.
    assert!(
        ElectionConfig::builder()
            .lock(MemoryLock::new(&store, "a"))
            .renew_deadline(Duration::from_millis(2_400))
            .build()
            .is_err()
    );
    assert!(
        ElectionConfig::builder()
            .lock(MemoryLock::new(&store, "a"))
            .renew_deadline(Duration::from_millis(2_401))
            .build()
            .is_ok()
    );
}

// ---- healthz adaptor ----

#[tokio::test(start_paused = true)]
async fn health_check_cases() {
    let tolerance = Duration::from_secs(20);
    // Not the leader: healthy whatever the time.
    let store = MemoryStore::new("t");
    store.force(held_by("bing", 10));
    let (follower, _) = elector(&store);
    follower.try_acquire_or_renew().await.unwrap();
    SimClock::advance(Duration::from_secs(3600)).await;
    assert!(follower.check(tolerance).is_ok());

    // Leader that renewed recently: healthy. Leader whose renew loop is stuck: unhealthy
    // once lease (10 s) + tolerance (20 s) passed since the last renewal.
    let store = MemoryStore::new("t2");
    let (leader, _) = elector(&store);
    assert!(leader.try_acquire_or_renew().await.unwrap());
    assert!(leader.check(tolerance).is_ok());
    SimClock::advance(Duration::from_secs(30)).await;
    assert!(leader.check(tolerance).is_ok(), "exactly at the limit");
    SimClock::advance(Duration::from_secs(1)).await;
    let err = leader.check(tolerance).unwrap_err();
    // client-go's message exactly; the time since the renewal is a field.
    assert_eq!(
        err.to_string(),
        "failed election to renew leadership on lease memory:t2"
    );
    assert!(err.since_renew > Duration::from_secs(30));
    // After a release it no longer believes it leads.
    leader.release().await.unwrap();
    assert!(leader.check(tolerance).is_ok());
}

#[tokio::test(start_paused = true)]
async fn shared_lock_can_be_chosen_at_run_time() {
    let store = MemoryStore::new("t");
    let lock: Arc<dyn lease_elect::ResourceLock> = Arc::new(MemoryLock::new(&store, "dyn"));
    let le = LeaderElector::new(
        ElectionConfig::builder()
            .shared_lock(lock)
            .clock(SimClock::new())
            // client-go creates a missing record at once, as this port expects (the wait
            // for a missing record, on by default, is checked in tests/safety.rs).
            .absent_record_wait(false)
            .build()
            .unwrap(),
    );
    assert!(le.try_acquire_or_renew().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn deposed_leader_reports_the_new_leader_and_stops() {
    let store = MemoryStore::new("t");
    let (le, _lock) = elector(&store);
    let rec = Recorder::default();
    let s2 = store.clone();
    let run = {
        let le = le.clone();
        let rec = rec.clone();
        tokio::spawn(async move { le.run(&rec, std::future::pending()).await })
    };
    tokio::time::sleep(Duration::from_secs(3)).await;
    s2.force(held_by("bing", 10));
    assert_eq!(run.await.unwrap(), RunOutcome::LostLeadership);
    assert_eq!(
        rec.log(),
        [
            "new leader baz",
            "started 1",
            "new leader bing",
            "stopped",
            "ended"
        ]
    );
}
