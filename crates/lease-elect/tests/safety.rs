//! The safety rules behind the fault tests (`crates/lease-elect-faults`), each checked
//! deterministically: a vanished record (also one known only from a lost `create`), sequences
//! that go backwards, a paused leader's
//! guard and its work after waking, the attempt timeout, and FileLock's floor, temporary file and OS-lock timeout.

use std::error::Error as _;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use lease_elect::{
    Clock, ConfigError, ElectionConfig, FileLock, Instant, LeaderElectionRecord, LeaderElector,
    LockBusy, LockError, MemoryLock, MemoryStore, ResourceLock, RunOutcome, SequenceRegression,
    SimClock, Sleep, on_leading,
};

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "lease-elect-safety-{name}-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("leader.json")
}

fn elector(lock: impl ResourceLock + 'static) -> LeaderElector {
    // These checks are about the rules that hold without the wait for a missing record (the
    // last holder's lease, a lost create, sequences); that wait has checks of its own below.
    waiting_elector(lock, false)
}

#[test]
fn attempt_timeout_defaults_to_the_renew_deadline_and_may_not_exceed_it() {
    let store = MemoryStore::new("timeout");
    let config = ElectionConfig::builder()
        .lock(MemoryLock::new(&store, "a"))
        .build()
        .unwrap();
    assert_eq!(config.attempt_timeout(), config.renew_deadline());
    let too_long = ElectionConfig::builder()
        .lock(MemoryLock::new(&store, "a"))
        .attempt_timeout(Duration::from_secs(11))
        .build();
    assert_eq!(
        too_long.err(),
        Some(ConfigError::AttemptTimeoutAboveRenewDeadline)
    );
}

#[tokio::test(start_paused = true)]
async fn a_vanished_record_is_not_taken_before_the_last_holders_lease_ran_out() {
    let store = MemoryStore::new("vanish");
    let a = elector(MemoryLock::new(&store, "a"));
    let b = elector(MemoryLock::new(&store, "b"));
    assert!(a.try_acquire_or_renew().await.unwrap());
    assert!(!b.try_acquire_or_renew().await.unwrap());
    store.clear();
    // a's guard is valid for its renew deadline; b waits out the whole lease it saw.
    SimClock::advance(Duration::from_millis(1500)).await;
    assert!(
        !b.try_acquire_or_renew().await.unwrap(),
        "taken while a's lease ran"
    );
    SimClock::advance(Duration::from_millis(600)).await;
    assert!(b.try_acquire_or_renew().await.unwrap());
}

/// `b`'s handle: its first `create` comes just after `a` took the lock, so it loses to a
/// record `b` never reads.
struct LosesFirstCreate {
    inner: MemoryLock,
    first: std::sync::Mutex<Option<LeaderElector>>,
}

#[lease_elect::async_trait]
impl ResourceLock for LosesFirstCreate {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, lease_elect::Version)>, LockError> {
        self.inner.get().await
    }

    async fn create(
        &self,
        record: &LeaderElectionRecord,
    ) -> Result<lease_elect::Version, LockError> {
        let first = self.first.lock().unwrap().take();
        if let Some(a) = first {
            assert!(a.try_acquire_or_renew().await.unwrap(), "a takes the lock");
        }
        self.inner.create(record).await
    }

    async fn update(
        &self,
        expected: &lease_elect::Version,
        record: &LeaderElectionRecord,
    ) -> Result<lease_elect::Version, LockError> {
        self.inner.update(expected, record).await
    }

    fn identity(&self) -> &str {
        self.inner.identity()
    }

    fn describe(&self) -> String {
        self.inner.describe()
    }
}

/// Seen on a real API server under load: a candidate whose `create` lost to a record it never
/// read (the record was deleted before its next read found it) created a new one at once,
/// while the holder's term still ran, with leaderTransitions 0, the holder's fencing token. A
/// lost `create` now counts as having seen a holder then.
#[tokio::test(start_paused = true)]
async fn a_record_only_known_from_a_lost_create_is_not_taken_before_a_lease_ran_out() {
    let store = MemoryStore::new("lost-create");
    let a = elector(MemoryLock::new(&store, "a"));
    let b = elector(LosesFirstCreate {
        inner: MemoryLock::new(&store, "b"),
        first: std::sync::Mutex::new(Some(a.clone())),
    });
    let lost = b.try_acquire_or_renew().await;
    assert!(lost.as_ref().is_err_and(LockError::is_conflict), "{lost:?}");
    assert!(a.is_leader());
    store.clear();
    SimClock::advance(Duration::from_millis(500)).await;
    assert!(
        !b.try_acquire_or_renew().await.unwrap(),
        "taken while a's term ran"
    );
    SimClock::advance(Duration::from_millis(1000)).await;
    assert!(!b.try_acquire_or_renew().await.unwrap());
    SimClock::advance(Duration::from_millis(600)).await;
    assert!(!a.is_leader());
    assert!(b.try_acquire_or_renew().await.unwrap());
}

#[tokio::test]
async fn a_sequence_that_went_backwards_starts_no_term() {
    let path = temp_path("regress");
    let a = elector(FileLock::new(&path, "a"));
    for _ in 0..3 {
        assert!(a.try_acquire_or_renew().await.unwrap());
    }
    a.release().await.unwrap();
    // The record and the floor both vanish: the counter starts again at 1.
    std::fs::remove_file(&path).unwrap();
    std::fs::remove_file(format!("{}.lock", path.display())).unwrap();
    let err = a.try_acquire_or_renew().await.unwrap_err();
    let LockError::Corrupt { source, .. } = &err else {
        panic!("expected a corrupt error, got {err}");
    };
    let regression = source
        .as_deref()
        .and_then(|s| s.downcast_ref::<SequenceRegression>())
        .expect("a SequenceRegression source");
    assert_eq!(regression.got, 1);
    assert!(regression.seen >= 4, "{regression:?}");
    assert!(!a.is_leader());
    assert!(err.source().is_some());
}

#[tokio::test]
async fn file_lock_versions_continue_above_the_floor_after_the_record_is_removed() {
    let path = temp_path("floor");
    let a = FileLock::new(&path, "a");
    let mut last = a.create(&rec("a")).await.unwrap();
    for _ in 0..3 {
        last = a.update(&last, &rec("a")).await.unwrap();
    }
    std::fs::remove_file(&path).unwrap();
    let recreated = a.create(&rec("a")).await.unwrap();
    assert!(
        recreated.sequence() > last.sequence(),
        "{recreated:?} after {last:?}"
    );
    // Only the record and its lock file remain: no temporary file.
    let names: Vec<String> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".tmp")), "{names:?}");
}

#[tokio::test]
async fn file_lock_held_by_another_process_gives_a_retryable_error_in_time() {
    let path = temp_path("busy");
    let a = FileLock::new(&path, "a").with_lock_timeout(Duration::from_millis(50));
    let v = a.create(&rec("a")).await.unwrap();
    let foreign = std::fs::OpenOptions::new()
        .write(true)
        .open(format!("{}.lock", path.display()))
        .unwrap();
    foreign.lock().unwrap();
    let started = std::time::Instant::now();
    let err = a.update(&v, &rec("a")).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1));
    assert!(err.is_retryable(), "{err}");
    assert!(err.source().unwrap().downcast_ref::<LockBusy>().is_some());
    foreign.unlock().unwrap();
    a.update(&v, &rec("a")).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_guard_reports_the_loss_at_its_deadline_even_if_the_elector_never_runs() {
    let store = MemoryStore::new("paused");
    let a = elector(MemoryLock::new(&store, "a"));
    assert!(a.try_acquire_or_renew().await.unwrap());
    let guard = a.guard().unwrap();
    let deadline = Duration::from_secs(1);
    // Nobody renews (a paused or starved elector): lost() resolves at the renew deadline.
    tokio::time::timeout(deadline + Duration::from_millis(1), guard.lost())
        .await
        .expect("lost() resolves at the deadline");
    assert!(!guard.is_valid());
}

fn rec(holder: &str) -> LeaderElectionRecord {
    LeaderElectionRecord::new(holder, 15, SystemTime::now())
}

#[test]
fn client_go_compatible_mode_refuses_a_margin_under_one_second() {
    let store = MemoryStore::new("margin");
    let build = |lease: u64, renew_ms: u64, retry_ms: u64, compatible: bool| {
        ElectionConfig::builder()
            .lock(MemoryLock::new(&store, "a"))
            .lease_duration(Duration::from_secs(lease))
            .renew_deadline(Duration::from_millis(renew_ms))
            .retry_period(Duration::from_millis(retry_ms))
            .client_go_compatible(compatible)
            .build()
            .err()
    };
    // The measured unsafe timing: lease 2 s, renew deadline 1.5 s, retry 0.2 s.
    assert_eq!(
        build(2, 1500, 200, true),
        Some(ConfigError::ClientGoMarginTooSmall)
    );
    assert_eq!(build(2, 1500, 200, false), None, "only a warning");
    assert_eq!(build(2, 1000, 200, true), None, "a margin of 1 s");
    assert_eq!(build(2, 1500, 1000, true), None, "a retry period of 1 s");
    assert_eq!(build(15, 10_000, 2000, true), None, "client-go's defaults");
}

/// A clock whose readings can jump ahead while the timers already set keep their old
/// instants: a process woken from SIGSTOP, whose timers have not fired yet when its first
/// task runs.
#[derive(Clone, Default)]
struct JumpingClock {
    inner: lease_elect::TokioClock,
    jumped: Arc<Mutex<Duration>>,
}

impl JumpingClock {
    fn jump(&self, by: Duration) {
        *self.jumped.lock().unwrap() += by;
    }
}

impl Clock for JumpingClock {
    fn now(&self) -> Instant {
        self.inner.now() + *self.jumped.lock().unwrap()
    }

    fn wall(&self) -> SystemTime {
        self.inner.wall() + *self.jumped.lock().unwrap()
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        // A timer for `deadline` fires after the time left now: a later jump does not make
        // it fire early.
        self.inner
            .sleep(deadline.saturating_duration_since(self.now()))
    }
}

#[tokio::test(start_paused = true)]
async fn a_leader_woken_after_its_deadline_does_not_poll_its_work_again() {
    let store = MemoryStore::new("woken");
    let clock = JumpingClock::default();
    let a = LeaderElector::new(
        ElectionConfig::builder()
            .lock(MemoryLock::new(&store, "a"))
            .clock(clock.clone())
            // The first term at once: this checks a leader woken after its deadline.
            .absent_record_wait(false)
            .lease_duration(Duration::from_secs(2))
            .renew_deadline(Duration::from_secs(1))
            .retry_period(Duration::from_millis(200))
            .build()
            .unwrap(),
    );
    // The leader's work writes once per message, without looking at its guard.
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<()>();
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let writes = Arc::new(Mutex::new(Vec::new()));
    let work = {
        let writes = Arc::clone(&writes);
        on_leading(move |guard| {
            let (rx, writes) = (Arc::clone(&rx), Arc::clone(&writes));
            async move {
                while rx.lock().await.recv().await.is_some() {
                    writes.lock().unwrap().push(guard.token());
                }
            }
        })
    };
    let run = tokio::spawn({
        let a = a.clone();
        async move { a.run(&work, std::future::pending()).await }
    });
    while !a.is_leader() {
        tokio::task::yield_now().await;
    }
    tx.send(()).unwrap();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        writes.lock().unwrap().len(),
        1,
        "the leader writes while it leads"
    );

    // The process sleeps past its renew deadline; on waking, the message is there before
    // any of its timers has fired.
    clock.jump(Duration::from_secs(3));
    tx.send(()).unwrap();
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        writes.lock().unwrap().len(),
        1,
        "no write after the term ended on the clock"
    );
    let outcome = tokio::time::timeout(Duration::from_millis(1), run)
        .await
        .expect("run returns on waking, before any timer")
        .unwrap();
    assert_eq!(outcome, RunOutcome::LostLeadership);
    assert!(!a.is_leader());
}

fn waiting_elector(lock: impl ResourceLock + 'static, wait: bool) -> LeaderElector {
    LeaderElector::new(
        ElectionConfig::builder()
            .lock(lock)
            .clock(SimClock::new())
            .lease_duration(Duration::from_secs(2))
            .renew_deadline(Duration::from_secs(1))
            .retry_period(Duration::from_millis(200))
            .absent_record_wait(wait)
            .build()
            .unwrap(),
    )
}

#[tokio::test(start_paused = true)]
async fn a_candidate_that_finds_no_record_creates_it_only_after_a_lease() {
    let store = MemoryStore::new("fresh");
    let a = waiting_elector(MemoryLock::new(&store, "a"), true);
    assert!(a.config().absent_record_wait(), "on by default");
    // The first election on a fresh lock: one lease.
    assert!(!a.try_acquire_or_renew().await.unwrap());
    SimClock::advance(Duration::from_millis(1900)).await;
    assert!(!a.try_acquire_or_renew().await.unwrap());
    SimClock::advance(Duration::from_millis(100)).await;
    assert!(a.try_acquire_or_renew().await.unwrap());

    // The record is deleted under the live leader; a process started afterwards never saw
    // a holder. Without the wait it would lead beside `a`.
    store.clear();
    let hasty = waiting_elector(MemoryLock::new(&store, "hasty"), false);
    let fresh = waiting_elector(MemoryLock::new(&store, "fresh"), true);
    assert!(!fresh.try_acquire_or_renew().await.unwrap());
    assert!(hasty.try_acquire_or_renew().await.unwrap());
    assert!(
        a.is_leader() && hasty.is_leader(),
        "two leaders without the wait"
    );
    hasty.release().await.unwrap();
    store.clear();
    // `a`'s renewal finds the record gone and ends its term; `fresh` waits its lease out
    // from its first read that found no record.
    SimClock::advance(Duration::from_millis(200)).await;
    assert!(!a.try_acquire_or_renew().await.unwrap());
    assert!(!a.is_leader());
    SimClock::advance(Duration::from_millis(1700)).await;
    assert!(
        !fresh.try_acquire_or_renew().await.unwrap(),
        "before its lease"
    );
    SimClock::advance(Duration::from_millis(100)).await;
    assert!(fresh.try_acquire_or_renew().await.unwrap());
}

#[tokio::test(start_paused = true)]
async fn a_candidate_waiting_for_a_missing_record_retries_at_the_retry_period() {
    let store = MemoryStore::new("absent-rate");
    store.force(LeaderElectionRecord::new("gone", 2, SystemTime::now()));
    let counted = Arc::new(lease_elect::testing::election::CountingLock::new(Arc::new(
        MemoryLock::new(&store, "b"),
    )));
    let b = LeaderElector::new(
        ElectionConfig::builder()
            .shared_lock(Arc::clone(&counted) as Arc<dyn ResourceLock>)
            .clock(SimClock::new())
            .lease_duration(Duration::from_secs(10))
            .renew_deadline(Duration::from_secs(6))
            .retry_period(Duration::from_millis(200))
            .seed(3)
            .build()
            .unwrap(),
    );
    let acquiring = tokio::spawn({
        let b = b.clone();
        async move { b.acquire(&on_leading(|_| async {})).await.token() }
    });
    // In steps, so that the acquire loop runs at each of its instants.
    let run_for = |d: Duration| async move {
        for _ in 0..d.as_millis() / 10 {
            SimClock::advance(Duration::from_millis(10)).await;
        }
    };
    run_for(Duration::from_millis(500)).await;
    assert_eq!(b.leader().as_deref(), Some("gone"));
    store.clear();
    let before = counted.requests();
    // Nine simulated seconds without a record (`b` creates it 10 s, its lease, after its
    // first read that found none): 45 retry periods, fewer with the jitter of up to 1.2 x.
    run_for(Duration::from_secs(9)).await;
    let sent = counted.requests() - before;
    assert!(
        (30..=50).contains(&sent),
        "{sent} requests in 9 s without a record at a 0.2 s retry period"
    );
    assert!(!b.is_leader());
    run_for(Duration::from_secs(2)).await;
    let token = tokio::time::timeout(Duration::from_secs(1), acquiring)
        .await
        .expect("b leads once the lease it saw and its wait ran out")
        .unwrap();
    assert!(
        token.0 > 1,
        "the token continues above the deleted record's"
    );
}
