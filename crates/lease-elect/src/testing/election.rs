//! Elections over a backend with a real clock: three electors, one leader, hand-over on a
//! graceful release and on a crash, fencing tokens that never go backwards, and the behaviour
//! while the server is down ([`server_outage`]).
//!
//! Every elector runs [`LeaderElector::run`] on a handle of its own
//! ([`LockFactory::open`]), wrapped in a [`CountingLock`] so the checks can report how many
//! requests the leader and the candidates send. All electors share one [`TokioClock`], so
//! the instants of their terms can be compared: a term lasts from the moment the elector
//! started leading until its guard turned invalid (renew deadline passed, released, or
//! lost), and no two terms may overlap.

use std::io::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::{LockFactory, unique_name};
use crate::{
    Clock, ElectionConfig, ElectionEvent, FencingToken, Instant, LeaderCallbacks,
    LeaderElectionRecord, LeaderElector, LeaderGuard, LockError, ResourceLock, RunOutcome,
    TokioClock, Version,
};

/// The election's durations and the tolerance for backend and scheduling latency.
#[derive(Clone, Copy, Debug)]
pub struct Timing {
    /// Lease duration (whole seconds; the record stores seconds).
    pub lease: Duration,
    /// Renew deadline.
    pub renew: Duration,
    /// Retry period.
    pub retry: Duration,
    /// Added to every bound for backend latency and scheduling on a busy machine.
    pub slack: Duration,
}

impl Default for Timing {
    /// 2 s / 1 s / 0.2 s, with 1 s of slack (a loaded 2-core machine running the whole test
    /// suite has taken over 0.5 s to hand a file-backed lock over).
    fn default() -> Self {
        Timing {
            lease: Duration::from_secs(2),
            renew: Duration::from_secs(1),
            retry: Duration::from_millis(200),
            slack: Duration::from_secs(1),
        }
    }
}

impl Timing {
    /// client-go's jittered retry period: 1.2 x retry.
    #[must_use]
    pub fn jittered_retry(&self) -> Duration {
        self.retry.mul_f64(crate::JITTER_FACTOR)
    }

    /// The bound on fail-over after a crash: lease + 1.2 x retry + slack.
    #[must_use]
    pub fn crash_bound(&self) -> Duration {
        self.lease + self.jittered_retry() + self.slack
    }

    /// The bound on hand-over after a graceful release: 1.2 x retry + slack.
    #[must_use]
    pub fn release_bound(&self) -> Duration {
        self.jittered_retry() + self.slack
    }
}

/// What an [`election`] measured.
#[derive(Clone, Debug)]
pub struct ElectionReport {
    /// From the start of three electors on a fresh lock until one led.
    pub first_leader: Duration,
    /// From the leader's release (its `run` returned) until another elector led.
    pub release_handover: Duration,
    /// From the leader's crash (its task aborted) until another elector led.
    pub crash_failover: Duration,
    /// Lock requests per second the leader sent while leading steadily.
    pub leader_requests_per_sec: f64,
    /// Lock requests per second each candidate sent meanwhile.
    pub candidate_requests_per_sec: Vec<f64>,
    /// The fencing tokens of the terms, in order.
    pub tokens: Vec<FencingToken>,
}

/// Counts the requests one participant sends to its lock.
pub struct CountingLock {
    inner: Arc<dyn ResourceLock>,
    requests: AtomicU64,
}

impl CountingLock {
    /// Wraps `inner`.
    #[must_use]
    pub fn new(inner: Arc<dyn ResourceLock>) -> Self {
        CountingLock {
            inner,
            requests: AtomicU64::new(0),
        }
    }

    /// Requests (`get`, `create`, `update`, `delete`) sent so far.
    #[must_use]
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    fn count(&self) {
        self.requests.fetch_add(1, Ordering::Relaxed);
    }
}

#[async_trait]
impl ResourceLock for CountingLock {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        self.count();
        self.inner.get().await
    }
    async fn create(&self, record: &LeaderElectionRecord) -> Result<Version, LockError> {
        self.count();
        self.inner.create(record).await
    }
    async fn update(
        &self,
        expected: &Version,
        record: &LeaderElectionRecord,
    ) -> Result<Version, LockError> {
        self.count();
        self.inner.update(expected, record).await
    }
    async fn delete(&self, expected: &Version) -> Result<(), LockError> {
        self.count();
        self.inner.delete(expected).await
    }
    async fn wait_for_change(&self, seen: Option<&Version>) {
        self.inner.wait_for_change(seen).await;
    }
    fn identity(&self) -> &str {
        self.inner.identity()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn record_event(&self, event: &ElectionEvent) {
        self.inner.record_event(event);
    }
}

/// One leadership term as the suite saw it.
#[derive(Clone)]
pub struct TermRecord {
    /// The leader.
    pub identity: String,
    /// The term's fencing token.
    pub token: FencingToken,
    /// When `on_started_leading` was called (shared clock).
    pub started: Instant,
    /// When the term's guard was seen to end (`lost` resolved), if it was.
    pub lost_at: Option<Instant>,
    guard: LeaderGuard,
}

impl std::fmt::Debug for TermRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Term")
            .field("identity", &self.identity)
            .field("token", &self.token.0)
            .field("started", &self.started.since_origin())
            .field("lost_at", &self.lost_at.map(Instant::since_origin))
            .field("valid_until", &self.guard.valid_until().since_origin())
            .finish()
    }
}

impl TermRecord {
    /// The instant the term stopped being valid: when it was lost, or its renew deadline.
    #[must_use]
    pub fn ended(&self) -> Instant {
        let until = self.guard.valid_until();
        self.lost_at.map_or(until, |l| l.min(until))
    }
}

type Terms = Arc<Mutex<Vec<TermRecord>>>;

fn lock_terms(terms: &Terms) -> std::sync::MutexGuard<'_, Vec<TermRecord>> {
    terms
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

struct Recorder {
    identity: String,
    clock: Arc<dyn Clock>,
    terms: Terms,
}

#[async_trait]
impl LeaderCallbacks for Recorder {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        let index = {
            let mut terms = lock_terms(&self.terms);
            terms.push(TermRecord {
                identity: self.identity.clone(),
                token: guard.token(),
                started: self.clock.now(),
                lost_at: None,
                guard: guard.clone(),
            });
            terms.len() - 1
        };
        // Notes the end of the term even when `run` drops this future first.
        let (terms, clock, g) = (
            Arc::clone(&self.terms),
            Arc::clone(&self.clock),
            guard.clone(),
        );
        tokio::spawn(async move {
            g.lost().await;
            lock_terms(&terms)[index].lost_at = Some(clock.now());
        });
        guard.lost().await;
    }
}

/// One running elector.
pub struct Participant {
    /// Its identity.
    pub identity: String,
    /// The elector.
    pub elector: LeaderElector,
    /// Its lock handle, counting requests.
    pub lock: Arc<CountingLock>,
    shutdown: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<RunOutcome>>,
}

impl Participant {
    /// Cancels `run` (the elector releases the lock if it leads) and waits until it returned.
    pub async fn shutdown(&mut self) -> Option<RunOutcome> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        match self.task.take() {
            Some(task) => task.await.ok(),
            None => None,
        }
    }

    /// Aborts `run` as a crash would: no release, no more renewals. The shutdown signal is
    /// kept (dropping it would resolve `run`'s shutdown future, which could start a release
    /// that a client library sends on before the abort takes effect).
    pub fn crash(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl Drop for Participant {
    fn drop(&mut self) {
        self.crash();
    }
}

/// Electors on one lock with a shared clock and a shared log of terms.
pub struct Election<'f, F: LockFactory> {
    factory: &'f F,
    /// The lock's name.
    pub name: String,
    /// The election's durations.
    pub timing: Timing,
    /// The shared real clock.
    pub clock: Arc<dyn Clock>,
    /// Every term seen so far, in the order they started.
    pub terms: Terms,
    /// The participants, in the order they joined.
    pub participants: Vec<Participant>,
}

impl<'f, F: LockFactory> Election<'f, F> {
    /// An election on a fresh lock, with nobody in it yet.
    pub fn new(factory: &'f F, timing: Timing) -> Self {
        Election {
            factory,
            name: unique_name("election"),
            timing,
            clock: Arc::new(TokioClock::new()),
            terms: Arc::new(Mutex::new(Vec::new())),
            participants: Vec::new(),
        }
    }

    /// Starts an elector named `identity` (release on cancel on).
    pub async fn join(&mut self, identity: &str) {
        let lock = Arc::new(CountingLock::new(
            self.factory.open(&self.name, identity).await,
        ));
        let config = ElectionConfig::builder()
            .shared_lock(Arc::clone(&lock) as Arc<dyn ResourceLock>)
            .shared_clock(Arc::clone(&self.clock))
            .lease_duration(self.timing.lease)
            .renew_deadline(self.timing.renew)
            .retry_period(self.timing.retry)
            .release_on_cancel(true)
            .build()
            .expect("the suite's election config is valid");
        let elector = LeaderElector::new(config);
        let recorder = Recorder {
            identity: identity.to_owned(),
            clock: Arc::clone(&self.clock),
            terms: Arc::clone(&self.terms),
        };
        let (tx, rx) = oneshot::channel::<()>();
        let e = elector.clone();
        let task = tokio::spawn(async move {
            e.run(&recorder, async move {
                let _ = rx.await;
            })
            .await
        });
        self.participants.push(Participant {
            identity: identity.to_owned(),
            elector,
            lock,
            shutdown: Some(tx),
            task: Some(task),
        });
    }

    /// The indices of the participants that lead now.
    #[must_use]
    pub fn leaders(&self) -> Vec<usize> {
        self.participants
            .iter()
            .enumerate()
            .filter(|(_, p)| p.task.is_some() && p.elector.is_leader())
            .map(|(i, _)| i)
            .collect()
    }

    /// Waits (polling every 5 ms) until exactly one running participant leads, at most
    /// `limit`; returns it and the time waited.
    ///
    /// # Panics
    /// When nobody leads within `limit`, or when two lead at once.
    pub async fn await_single_leader(&self, limit: Duration, what: &str) -> (usize, Duration) {
        let start = std::time::Instant::now();
        loop {
            let leaders = self.leaders();
            assert!(
                leaders.len() <= 1,
                "{what}: {} electors lead at once: {:?}",
                leaders.len(),
                leaders
                    .iter()
                    .map(|&i| &self.participants[i].identity)
                    .collect::<Vec<_>>()
            );
            if let [leader] = leaders[..] {
                let found = start.elapsed();
                // `is_leader` turns true a moment before `on_started_leading` records the
                // term (a task wake-up; longer on a busy machine): wait for the record too.
                let identity = &self.participants[leader].identity;
                let recorded_by = std::time::Instant::now() + Duration::from_secs(1);
                while !lock_terms(&self.terms)
                    .last()
                    .is_some_and(|t| &t.identity == identity && t.lost_at.is_none())
                {
                    assert!(
                        std::time::Instant::now() <= recorded_by,
                        "{what}: {identity} leads but its term was not recorded within 1 s"
                    );
                    tokio::time::sleep(Duration::from_millis(2)).await;
                }
                return (leader, found);
            }
            assert!(
                start.elapsed() <= limit,
                "{what}: no leader within {limit:?} on {}",
                self.name
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Checks the log of terms: no two terms overlap, tokens strictly increase.
    ///
    /// # Panics
    /// When a term started before the previous one ended, or a token did not increase.
    pub fn check_terms(&self) -> Vec<FencingToken> {
        let terms = lock_terms(&self.terms).clone();
        for pair in terms.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            assert!(
                b.token > a.token,
                "fencing tokens must strictly increase: {} ({}) then {} ({})",
                a.token,
                a.identity,
                b.token,
                b.identity
            );
            // A term that ran to its renew deadline (a crash, an outage) ended exactly at
            // `valid_until`. A term that was given up (release, lost race) ended when its
            // guard was cancelled, which happened before the write that let the next leader
            // in; the suite notices the cancellation a little late (a task wake-up), so it
            // allows a few milliseconds there.
            let tolerance = if a.lost_at.is_some_and(|l| l < a.guard.valid_until()) {
                Duration::from_millis(20)
            } else {
                Duration::ZERO
            };
            assert!(
                b.started + tolerance >= a.ended(),
                "two terms overlap: {} led until {} but {} started at {}; all terms: {:#?}",
                a.identity,
                a.ended(),
                b.identity,
                b.started,
                terms
            );
        }
        terms.iter().map(|t| t.token).collect()
    }

    /// Stops every participant (the leader releases the lock): signals all first, so the
    /// lock is not handed around while they stop, then waits for each.
    pub async fn stop_all(&mut self) {
        for p in &mut self.participants {
            if let Some(tx) = p.shutdown.take() {
                let _ = tx.send(());
            }
        }
        for p in &mut self.participants {
            p.shutdown().await;
        }
        // Let the tasks that note the end of each term run.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Three electors on a fresh lock: one leader emerges and stays; the leader releases and
/// another takes over within 1.2 x retry period (+ slack); the new leader crashes and
/// another takes over within lease + 1.2 x retry period (+ slack); no two terms overlap and
/// fencing tokens strictly increase. Returns what it measured.
///
/// # Panics
/// When a rule is broken.
pub async fn election(factory: &impl LockFactory, timing: Timing) -> ElectionReport {
    let mut e = Election::new(factory, timing);
    for id in ["e0", "e1", "e2"] {
        e.join(id).await;
    }
    let (leader, first_leader) = e
        .await_single_leader(timing.lease + timing.crash_bound(), "first election")
        .await;

    // Steady state: the same leader keeps leading; count requests.
    let before: Vec<u64> = e.participants.iter().map(|p| p.lock.requests()).collect();
    let window = Duration::from_secs(2);
    let start = std::time::Instant::now();
    while start.elapsed() < window {
        let leaders = e.leaders();
        assert_eq!(
            leaders,
            vec![leader],
            "the leader must keep leading while nothing fails"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let secs = start.elapsed().as_secs_f64();
    let rates: Vec<f64> = e
        .participants
        .iter()
        .zip(&before)
        .map(|(p, b)| (p.lock.requests() - b) as f64 / secs)
        .collect();
    let leader_requests_per_sec = rates[leader];
    let candidate_requests_per_sec = rates
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != leader)
        .map(|(_, r)| *r)
        .collect();

    // Graceful release.
    let outcome = e.participants[leader].shutdown().await;
    assert_eq!(outcome, Some(RunOutcome::Cancelled));
    let released_at = std::time::Instant::now();
    let (second, _) = e
        .await_single_leader(timing.release_bound(), "hand-over after a graceful release")
        .await;
    let release_handover = released_at.elapsed();
    assert_ne!(second, leader);
    e.join("e3").await;

    // Crash.
    tokio::time::sleep(timing.retry * 3).await;
    assert_eq!(
        e.leaders(),
        vec![second],
        "the new leader must keep leading"
    );
    e.participants[second].crash();
    let crashed_at = std::time::Instant::now();
    let (third, _) = e
        .await_single_leader(timing.crash_bound(), "fail-over after a crash")
        .await;
    let crash_failover = crashed_at.elapsed();
    assert_ne!(third, second);

    let tokens = e.check_terms();
    assert!(
        tokens.len() >= 3,
        "expected three terms: {:?}",
        lock_terms(&e.terms)
    );
    if tokens.len() > 3 {
        // A leader lost a renewal (a slow server on a busy machine) and won again: allowed,
        // terms still never overlap, but worth seeing.
        let _ = writeln!(
            std::io::stderr().lock(),
            "note: {} terms where 3 were expected: {:?}",
            tokens.len(),
            lock_terms(&e.terms)
        );
    }
    let reader = factory.open(&e.name, "reader").await;
    let (record, _) = reader
        .get()
        .await
        .expect("get after the election")
        .expect("a record after the election");
    assert_eq!(record.holder_identity, e.participants[third].identity);
    e.stop_all().await;
    e.check_terms();
    ElectionReport {
        first_leader,
        release_handover,
        crash_failover,
        leader_requests_per_sec,
        candidate_requests_per_sec,
        tokens,
    }
}

/// `get`, retried on retryable errors (a handle's first call after the server restarted
/// may fail while it reconnects), at most 10 times, 100 ms apart.
async fn get_retrying(
    lock: &dyn ResourceLock,
) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
    let mut tries = 0;
    loop {
        match lock.get().await {
            Err(e) if e.is_retryable() && tries < 10 => {
                tries += 1;
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
            r => return r,
        }
    }
}

/// Stops and starts the server a backend talks to (for [`server_outage`]).
pub trait ServerControl: Send {
    /// Stops the server (returns once it is down).
    fn stop(&mut self) -> impl Future<Output = ()> + Send;
    /// Starts it again with its data (returns once it accepts connections).
    fn start(&mut self) -> impl Future<Output = ()> + Send;
}

/// What a [`server_outage`] measured.
#[derive(Clone, Debug)]
pub struct OutageReport {
    /// From stopping the server until the leader's term ended.
    pub leader_gave_up_after: Duration,
    /// From starting the server again until a leader was elected.
    pub leader_again_after: Duration,
}

/// The server is stopped while a leader holds the lock, kept down for `down` (at least the
/// lease duration), then started again. The leader must give up by its renew deadline (+
/// slack), nobody may lead while the server is down, a leader must be elected within
/// `recovery` after the server is back, the record must still read (never corrupt), and
/// fencing tokens must strictly increase across the outage.
///
/// # Panics
/// When a rule is broken.
pub async fn server_outage(
    factory: &impl LockFactory,
    server: &mut impl ServerControl,
    timing: Timing,
    down: Duration,
    recovery: Duration,
) -> OutageReport {
    let mut e = Election::new(factory, timing);
    for id in ["f0", "f1", "f2"] {
        e.join(id).await;
    }
    let (leader, _) = e
        .await_single_leader(
            timing.lease + timing.crash_bound(),
            "election before the outage",
        )
        .await;
    let reader = factory.open(&e.name, "reader").await;
    let (before, _) = reader
        .get()
        .await
        .expect("get before the outage")
        .expect("a record before the outage");
    tokio::time::sleep(timing.retry * 2).await;

    server.stop().await;
    let stopped = std::time::Instant::now();
    // The leader must give up by the renew deadline.
    let mut leader_gave_up_after = None;
    while stopped.elapsed() < down {
        let leaders = e.leaders();
        if leaders.is_empty() {
            leader_gave_up_after.get_or_insert(stopped.elapsed());
        } else {
            assert!(
                leader_gave_up_after.is_none(),
                "nobody may lead while the server is down, but {:?} does",
                leaders
                    .iter()
                    .map(|&i| &e.participants[i].identity)
                    .collect::<Vec<_>>()
            );
            assert_eq!(leaders, vec![leader]);
            assert!(
                stopped.elapsed() <= timing.renew + timing.slack,
                "the leader must give up by the renew deadline ({:?}) after the server stopped",
                timing.renew
            );
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let leader_gave_up_after =
        leader_gave_up_after.expect("the leader must give up while the server is down");

    server.start().await;
    let started = std::time::Instant::now();
    let (_, leader_again_after) = e
        .await_single_leader(recovery, "election after the server came back")
        .await;
    let _ = started;
    let (after, _) = get_retrying(&*reader)
        .await
        .expect("the record must read after the outage (never corrupt)")
        .expect("the record must survive the outage");
    assert!(
        after.leader_transitions >= before.leader_transitions,
        "leaderTransitions went back across the outage: {} then {}",
        before.leader_transitions,
        after.leader_transitions
    );
    e.stop_all().await;
    e.check_terms();
    OutageReport {
        leader_gave_up_after,
        leader_again_after,
    }
}

/// [`server_outage`] as the backends with a server that restarts run it: the default
/// [`Timing`], the server down for the lease and a second more, and a leader again within
/// [`Timing::crash_bound`] and a second more (for the restart and the clients' reconnects).
/// Prints the report and returns it.
///
/// # Panics
/// When a rule is broken.
pub async fn server_restart_outage(
    factory: &impl LockFactory,
    server: &mut impl ServerControl,
) -> OutageReport {
    let timing = Timing::default();
    let report = server_outage(
        factory,
        server,
        timing,
        timing.lease + Duration::from_secs(1),
        timing.crash_bound() + Duration::from_secs(1),
    )
    .await;
    println!("{report:?}");
    report
}

/// What an [`absent_record`] check measured.
#[derive(Clone, Debug)]
pub struct AbsentReport {
    /// Lock requests per second of each waiting candidate while the record was held.
    pub held_requests_per_sec: Vec<f64>,
    /// Lock requests per second of each waiting candidate while the record was absent.
    pub absent_requests_per_sec: Vec<f64>,
    /// From the delete until a new leader led.
    pub new_leader_after: Duration,
    /// `false` when the backend does not support `delete` (nothing was checked).
    pub checked: bool,
}

/// The record deleted under a live leader while two candidates wait: the leader's term ends at
/// its next renewal, nobody creates the record before the lease it last saw ran out, the
/// candidates meanwhile send requests at the retry rate (at most twice the number of retry
/// periods in the window, plus two), not in a loop, and one of them leads within
/// [`Timing::crash_bound`] (plus a lease, for the elector's wait for an absent record).
/// Terms never overlap, tokens strictly increase.
///
/// Requests are the calls the electors make through [`ResourceLock`] (`get`, `create`,
/// `update`, `delete`), counted by [`CountingLock`]; a backend's own reads inside
/// `wait_for_change` are not counted.
///
/// # Panics
/// When a rule is broken.
pub async fn absent_record(factory: &impl LockFactory, timing: Timing) -> AbsentReport {
    let mut e = Election::new(factory, timing);
    for id in ["a0", "a1", "a2"] {
        e.join(id).await;
    }
    let (leader, _) = e
        .await_single_leader(timing.lease + timing.crash_bound(), "first election")
        .await;
    let candidates: Vec<usize> = (0..e.participants.len()).filter(|&i| i != leader).collect();
    let counts = |e: &Election<'_, _>| -> Vec<u64> {
        candidates
            .iter()
            .map(|&i| e.participants[i].lock.requests())
            .collect()
    };
    let rates = |before: &[u64], after: &[u64], secs: f64| -> Vec<f64> {
        before
            .iter()
            .zip(after)
            .map(|(b, a)| (a - b) as f64 / secs)
            .collect()
    };

    // While the record is held.
    let window = timing.lease.saturating_sub(timing.retry * 2);
    let before = counts(&e);
    let start = std::time::Instant::now();
    tokio::time::sleep(window).await;
    let held_requests_per_sec = rates(&before, &counts(&e), start.elapsed().as_secs_f64());

    // Delete the record under the live leader (retried while renewals move its version).
    let reader = factory.open(&e.name, "deleter").await;
    let mut tries = 0;
    loop {
        let (_, version) = get_retrying(reader.as_ref())
            .await
            .expect("get before the delete")
            .expect("a record before the delete");
        match reader.delete(&version).await {
            Ok(()) => break,
            Err(LockError::Unsupported(_)) => {
                e.stop_all().await;
                return AbsentReport {
                    held_requests_per_sec,
                    absent_requests_per_sec: Vec::new(),
                    new_leader_after: Duration::ZERO,
                    checked: false,
                };
            }
            Err(err) => {
                tries += 1;
                assert!(tries < 20, "the delete kept failing: {err}");
            }
        }
    }
    let deleted_at = std::time::Instant::now();

    // While the record is absent: nobody may lead before the candidates' wait ran out, and
    // nobody may send requests in a loop.
    let before = counts(&e);
    let start = std::time::Instant::now();
    while start.elapsed() < window {
        let terms = lock_terms(&e.terms).len();
        assert!(
            e.leaders().iter().all(|&i| i == leader) && terms == 1,
            "a new term started {:?} after the record was deleted under a live leader: {:?}",
            deleted_at.elapsed(),
            lock_terms(&e.terms)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let secs = start.elapsed().as_secs_f64();
    let after = counts(&e);
    let absent_requests_per_sec = rates(&before, &after, secs);
    let periods = secs / timing.retry.as_secs_f64();
    for ((&i, b), a) in candidates.iter().zip(&before).zip(&after) {
        let sent = a - b;
        assert!(
            (sent as f64) <= 2.0 * periods + 2.0,
            "{} sent {sent} requests in {secs:.2} s while the record was absent: more than twice \
             the {periods:.1} retry periods (held: {held_requests_per_sec:?} per second)",
            e.participants[i].identity
        );
    }

    let (next, _) = e
        .await_single_leader(
            timing.lease + timing.crash_bound(),
            "a leader after the delete",
        )
        .await;
    let new_leader_after = deleted_at.elapsed();
    assert_ne!(next, leader, "the deposed leader ran out of its `run`");
    e.stop_all().await;
    e.check_terms();
    AbsentReport {
        held_requests_per_sec,
        absent_requests_per_sec,
        new_leader_after,
        checked: true,
    }
}
