//! The leader elector: client-go's algorithm over a [`ResourceLock`](crate::ResourceLock) and a [`Clock`].

use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::Poll;
use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use crate::config::JITTER_FACTOR;
use crate::{
    Clock, ElectionConfig, ElectionEvent, FencingToken, Instant, LeaderElectionRecord, LockError,
    Version,
};

pub(crate) fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What the elector knows about leadership, published on [`LeaderElector::watch`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Leadership {
    /// The holder of the last observed record (`None`: nobody holds it, or nothing seen yet).
    pub leader: Option<String>,
    /// This elector's fencing token while it leads; `None` when it does not.
    pub token: Option<FencingToken>,
}

impl Leadership {
    /// Whether this elector leads.
    #[must_use]
    pub fn is_self(&self) -> bool {
        self.token.is_some()
    }
}

/// The elector is unhealthy: it believes it leads but has not renewed for longer than the
/// lease duration plus the tolerance (client-go's `HealthzAdaptor`). The message is
/// client-go's; the time since the last renewal is in [`since_renew`](Self::since_renew).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("failed election to renew leadership on lease {name}")]
pub struct HealthError {
    /// The election's name.
    pub name: String,
    /// Time since the last successful renewal.
    pub since_renew: Duration,
}

/// A write that would start a new term returned a version sequence that is not above
/// every sequence the elector saw before: the lock's counter went backwards (a server that
/// lost its data, a recreated file), so the term's fencing token would not exceed an earlier
/// term's. Reported as the source of a [`LockError::Corrupt`]; the elector does not lead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("the lock's version sequence went backwards: wrote {got}, but {seen} was seen before")]
pub struct SequenceRegression {
    /// The largest sequence seen before.
    pub seen: u64,
    /// The sequence the new term's write returned.
    pub got: u64,
}

/// How [`LeaderElector::run`] ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum RunOutcome {
    /// The shutdown future resolved (before or while leading).
    Cancelled,
    /// The elector led and then lost leadership (renew deadline passed or deposed).
    LostLeadership,
}

#[derive(Debug)]
pub(crate) struct Term {
    pub(crate) token: FencingToken,
    pub(crate) valid_until: Mutex<Instant>,
    pub(crate) last_renew: Mutex<Instant>,
    pub(crate) lost: CancellationToken,
}

impl Term {
    pub(crate) fn new(token: FencingToken, start: Instant, valid_until: Instant) -> Arc<Term> {
        Arc::new(Term {
            token,
            valid_until: Mutex::new(valid_until),
            last_renew: Mutex::new(start),
            lost: CancellationToken::new(),
        })
    }

    fn valid_at(&self, now: Instant) -> bool {
        !self.lost.is_cancelled() && now < *locked(&self.valid_until)
    }
}

/// Proof of leadership for one term, handed to
/// [`LeaderCallbacks::on_started_leading`]. Cheap to clone.
///
/// Carries the term's [`FencingToken`]; [`is_valid`](LeaderGuard::is_valid) says whether the
/// term still holds at this instant (judged by the elector's clock, so it turns false at the
/// renew deadline even if the elector's task is starved); [`lost`](LeaderGuard::lost) resolves
/// when the term ends.
#[derive(Clone)]
pub struct LeaderGuard {
    term: Arc<Term>,
    clock: Arc<dyn Clock>,
    identity: Arc<str>,
}

impl std::fmt::Debug for LeaderGuard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderGuard")
            .field("identity", &self.identity)
            .field("token", &self.term.token)
            .field("valid", &self.is_valid())
            .finish()
    }
}

impl LeaderGuard {
    pub(crate) fn new(term: Arc<Term>, clock: Arc<dyn Clock>, identity: Arc<str>) -> Self {
        LeaderGuard {
            term,
            clock,
            identity,
        }
    }

    pub(crate) fn end(&self) {
        self.term.lost.cancel();
    }

    /// The term's fencing token, strictly greater than any earlier term's on this lock.
    #[must_use]
    pub fn token(&self) -> FencingToken {
        self.term.token
    }

    /// The leader's identity.
    #[must_use]
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// Whether this term still holds now.
    #[must_use]
    pub fn is_valid(&self) -> bool {
        self.term.valid_at(self.clock.now())
    }

    /// The instant (on the elector's clock) at which the term ends unless renewed.
    #[must_use]
    pub fn valid_until(&self) -> Instant {
        *locked(&self.term.valid_until)
    }

    /// Resolves when leadership of this term is lost (or given up), and at the latest at
    /// the term's deadline on the elector's clock ([`valid_until`](Self::valid_until) as
    /// renewals move it), even if the elector's task has not run since (a paused process,
    /// a starved executor).
    ///
    /// Put it first in a `biased` `tokio::select!` next to the work, so that after a pause
    /// that let both become ready the loss wins:
    /// ```ignore
    /// tokio::select! {
    ///     biased;
    ///     () = guard.lost() => return,
    ///     () = next_tick => write(guard.token()),
    /// }
    /// ```
    pub async fn lost(&self) {
        loop {
            // Checked before any timer: a timer may not have fired yet after a pause.
            if !self.term.valid_at(self.clock.now()) {
                return;
            }
            let until = *locked(&self.term.valid_until);
            tokio::select! {
                biased;
                () = self.term.lost.cancelled() => return,
                () = self.clock.sleep_until(until) => {
                    if !self.term.valid_at(self.clock.now()) {
                        return;
                    }
                }
            }
        }
    }

    /// A cancellation token cancelled when this term ends (a child: cancelling it does not
    /// end the term). It is cancelled when the elector ends the term, which needs the
    /// elector's task to run; after a pause prefer [`lost`](Self::lost) or
    /// [`is_valid`](Self::is_valid), which judge the deadline by the clock.
    #[must_use]
    pub fn cancellation_token(&self) -> CancellationToken {
        self.term.lost.child_token()
    }
}

/// What to do on leadership transitions (client-go's `LeaderCallbacks`).
///
/// `on_started_leading` returns the leader's work as a future. [`LeaderElector::run`] polls
/// it next to the renew loop and drops it when the term ends, so the work cannot outlive
/// leadership: before every poll of the work it checks the term against the clock, so a
/// leader woken after its renew deadline (a stopped process, a starved executor) does not
/// poll its work again even when the renew loop's timer has not fired yet. Await
/// [`LeaderGuard::lost`] to stop at a clean point first. If the work finishes early, the
/// elector keeps leading until cancelled or deposed.
#[async_trait]
pub trait LeaderCallbacks: Send + Sync {
    /// This elector started leading; run the leader's work.
    async fn on_started_leading(&self, guard: LeaderGuard);

    /// This elector stopped leading. Called only after it led, once per term.
    fn on_stopped_leading(&self) {}

    /// A new holder was observed (the first one included). Called once per change of a
    /// non-empty holder; a release (empty holder) is not reported.
    fn on_new_leader(&self, identity: &str) {
        let _ = identity;
    }

    /// `run` is about to return, whether or not this elector led.
    fn on_run_ended(&self) {}
}

/// [`LeaderCallbacks`] from a closure that runs the leader's work; the other hooks do
/// nothing. Made by [`on_leading`].
#[derive(Clone, Copy, Debug)]
pub struct OnLeading<F>(F);

/// Callbacks from a closure: `f(guard)` is the leader's work.
///
/// ```
/// use lease_elect::{ElectionConfig, LeaderElector, MemoryLock, MemoryStore, SimClock, on_leading};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build()?.block_on(async {
/// let store = MemoryStore::new("closure");
/// let elector = LeaderElector::new(
///     ElectionConfig::builder().lock(MemoryLock::new(&store, "a")).clock(SimClock::new()).build()?,
/// );
/// let work = on_leading(|guard| async move {
///     println!("leading with token {}", guard.token());
///     guard.lost().await;
/// });
/// // Simulated time: the first term starts after one lease (15 s) without a record.
/// elector.run(&work, tokio::time::sleep(std::time::Duration::from_secs(20))).await;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn on_leading<F, Fut>(f: F) -> OnLeading<F>
where
    F: Fn(LeaderGuard) -> Fut + Send + Sync,
    Fut: Future<Output = ()> + Send,
{
    OnLeading(f)
}

#[async_trait]
impl<F, Fut> LeaderCallbacks for OnLeading<F>
where
    F: Fn(LeaderGuard) -> Fut + Send + Sync,
    Fut: Future<Output = ()> + Send,
{
    async fn on_started_leading(&self, guard: LeaderGuard) {
        (self.0)(guard).await;
    }
}

#[derive(Debug, Default)]
struct State {
    observed: Option<LeaderElectionRecord>,
    observed_version: Option<Version>,
    observed_time: Instant,
    /// When this elector's `create` lost to a record it has not read since: a holder exists
    /// that it knows nothing of (cleared by the next record it reads or writes).
    create_lost_at: Option<Instant>,
    /// When a read of this elector first found no record since the last record it read or
    /// wrote: the record is absent (cleared by the next record it reads or writes). The state
    /// a wait for a change starts from then is "no record", not the last version seen.
    absent_since: Option<Instant>,
    max_transitions: Option<u64>,
    /// The largest version sequence this elector has seen (read or written).
    max_sequence: Option<u64>,
    term: Option<Arc<Term>>,
    reported_leader: Option<String>,
}

struct Inner {
    config: ElectionConfig,
    identity: Arc<str>,
    state: Mutex<State>,
    attempt: tokio::sync::Mutex<()>,
    rng: Mutex<SmallRng>,
    watch: watch::Sender<Leadership>,
}

/// A leader election client with client-go's semantics over any [`ResourceLock`](crate::ResourceLock).
///
/// Cheap to clone; clones share state (give one to a health endpoint).
///
/// ```
/// use std::time::Duration;
/// use lease_elect::{ElectionConfig, LeaderElector, MemoryLock, MemoryStore};
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
/// let store = MemoryStore::new("example");
/// let elector = LeaderElector::new(
///     ElectionConfig::builder()
///         .lock(MemoryLock::new(&store, "a"))
///         // Create the missing record at once (by default a candidate waits a lease first).
///         .absent_record_wait(false)
///         .build()?,
/// );
/// assert!(elector.try_acquire_or_renew().await?);
/// assert!(elector.is_leader());
/// assert_eq!(elector.leader().as_deref(), Some("a"));
/// elector.release().await?;
/// assert!(!elector.is_leader());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct LeaderElector {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for LeaderElector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderElector")
            .field("config", &self.inner.config)
            .field("leadership", &*self.inner.watch.borrow())
            .finish()
    }
}

enum Mode {
    /// May start a new term.
    Acquire,
    /// Renew the current term only.
    Renew,
}

/// What one attempt works with: when it started (monotonic and wall clock), the lease in
/// whole seconds, and whether it may start a new term.
struct Attempt {
    start: Instant,
    wall: std::time::SystemTime,
    lease_secs: u32,
    mode: Mode,
}

impl LeaderElector {
    /// An elector for a validated configuration.
    #[must_use]
    pub fn new(config: ElectionConfig) -> Self {
        let seed = config.seed.unwrap_or_else(rand::random);
        let identity: Arc<str> = config.lock.identity().into();
        config.hooks.leading(false);
        LeaderElector {
            inner: Arc::new(Inner {
                identity,
                config,
                state: Mutex::new(State::default()),
                attempt: tokio::sync::Mutex::new(()),
                rng: Mutex::new(SmallRng::seed_from_u64(seed)),
                watch: watch::channel(Leadership::default()).0,
            }),
        }
    }

    /// The configuration.
    #[must_use]
    pub fn config(&self) -> &ElectionConfig {
        &self.inner.config
    }

    /// This participant's identity.
    #[must_use]
    pub fn identity(&self) -> &str {
        &self.inner.identity
    }

    /// Whether this elector leads now (holds a term whose renew deadline has not passed).
    #[must_use]
    pub fn is_leader(&self) -> bool {
        let now = self.clock().now();
        locked(&self.inner.state)
            .term
            .as_ref()
            .is_some_and(|t| t.valid_at(now))
    }

    /// The holder of the last observed record, `None` when nobody holds it or nothing was
    /// observed yet (client-go's `GetLeader`).
    #[must_use]
    pub fn leader(&self) -> Option<String> {
        locked(&self.inner.state)
            .observed
            .as_ref()
            .filter(|r| r.is_held())
            .map(|r| r.holder_identity.clone())
    }

    /// A watch of [`Leadership`]: the observed holder and whether this elector leads.
    #[must_use]
    pub fn watch(&self) -> watch::Receiver<Leadership> {
        self.inner.watch.subscribe()
    }

    /// The guard of the current term, if this elector leads.
    #[must_use]
    pub fn guard(&self) -> Option<LeaderGuard> {
        let now = self.clock().now();
        let term = locked(&self.inner.state).term.clone()?;
        term.valid_at(now).then(|| self.guard_for(term))
    }

    /// The health check of client-go's `HealthzAdaptor`: an error only when this elector
    /// believes it leads but has not renewed for longer than the lease duration plus
    /// `max_tolerable_expired_lease` (its renew loop is stuck).
    ///
    /// # Errors
    /// [`HealthError`] in that case.
    pub fn check(&self, max_tolerable_expired_lease: Duration) -> Result<(), HealthError> {
        let Some(term) = locked(&self.inner.state).term.clone() else {
            return Ok(());
        };
        if term.lost.is_cancelled() {
            return Ok(());
        }
        let since = self
            .clock()
            .now()
            .saturating_duration_since(*locked(&term.last_renew));
        if since > self.inner.config.lease_duration + max_tolerable_expired_lease {
            return Err(HealthError {
                name: self.inner.config.name.clone(),
                since_renew: since,
            });
        }
        Ok(())
    }

    /// One attempt to acquire the lease, or renew it when this elector leads.
    ///
    /// - No record: create one naming this elector.
    /// - Leading: the fast path updates the last observed version without reading; if that
    ///   fails, fall back to a read and a compare-and-swap.
    /// - Held by another: `Ok(false)` until this elector has seen the record unchanged for
    ///   the record's `leaseDurationSeconds` on its own monotonic clock; then take it over
    ///   (`leaderTransitions` + 1).
    /// - Held by this identity but no current term (restart, lost reply, expired term): a new
    ///   term at once.
    /// - `preferredHolder` (coordinated leader election) names another identity: a holder
    ///   stops leading and releases the lease at once (keeping `strategy` and
    ///   `preferredHolder`); other candidates leave a released record to the preferred one for
    ///   its lease duration (1 s after such a release) and take it over when the preferred one
    ///   did not. Acquisition and renewal keep `preferredHolder` when it names this elector
    ///   and clear it otherwise (client-go's electors always clear it).
    /// - [Coordinated](crate::ElectionConfigBuilder::coordinated): no record, or a record
    ///   held by another, free or expired, is `Ok(false)`: the coordinator assigns the lease.
    ///   The elector writes only a record that names it (as holder and not expired on its
    ///   clock since the record last changed, or as `preferredHolder` of a released record).
    ///
    /// `Ok(true)` means this elector leads after the call.
    ///
    /// # Errors
    /// The lock's error; [`LockError::Conflict`] when another writer won a race.
    pub async fn try_acquire_or_renew(&self) -> Result<bool, LockError> {
        self.attempt(Mode::Acquire).await
    }

    /// Gives the lease up: stops leading, then blanks the holder with a compare-and-swap
    /// that succeeds only if the stored record still names this elector (retried on
    /// conflicts while it does). Never blanks another holder.
    ///
    /// Returns `Ok(true)` when the record no longer names this elector.
    ///
    /// # Errors
    /// The lock's error when reading or writing fails.
    pub async fn release(&self) -> Result<bool, LockError> {
        let _attempt = self.inner.attempt.lock().await;
        self.end_term("released");
        let lock = &self.inner.config.lock;
        let mut cached = {
            let st = locked(&self.inner.state);
            st.observed.clone().zip(st.observed_version.clone())
        };
        for _ in 0..5 {
            let (current, version) = match cached.take() {
                Some(c) => c,
                None => match lock.get().await? {
                    Some((r, v)) => {
                        self.observe(r.clone(), v.clone());
                        (r, v)
                    }
                    None => return Ok(true),
                },
            };
            if current.holder_identity != *self.inner.identity {
                return Ok(true);
            }
            let now = self.clock().wall();
            let released = LeaderElectionRecord {
                holder_identity: String::new(),
                lease_duration_seconds: 1,
                acquire_time: Some(now),
                renew_time: Some(now),
                leader_transitions: current.leader_transitions,
                strategy: current.strategy.clone(),
                preferred_holder: current.preferred_holder.clone(),
            };
            match lock.update(&version, &released).await {
                Ok(v2) => {
                    self.observe(released, v2);
                    tracing::info!(
                        lock = %lock.describe(),
                        identity = %self.inner.identity,
                        "released leader lease"
                    );
                    lock.record_event(&ElectionEvent::Released);
                    return Ok(true);
                }
                Err(e) if e.is_conflict() => {
                    tracing::debug!(error = %e, identity = %self.inner.identity, "release conflicted; reading again");
                }
                Err(e) => {
                    tracing::warn!(error = %e, lock = %lock.describe(), identity = %self.inner.identity, "failed to release lock");
                    return Err(e);
                }
            }
        }
        Err(LockError::Conflict(
            "release kept conflicting with concurrent writes".into(),
        ))
    }

    /// Runs the election: acquire (retrying every retry period with jitter, waking at the
    /// exact expiry of an observed lease and on lock change notifications), lead (polling
    /// `on_started_leading`'s future) while renewing, and return when leadership is lost or
    /// `shutdown` resolves. With release-on-cancel, a cancelled leader releases the lock.
    pub async fn run<C: LeaderCallbacks + ?Sized>(
        &self,
        callbacks: &C,
        shutdown: impl Future<Output = ()>,
    ) -> RunOutcome {
        let mut shutdown = pin!(shutdown);
        let lock = &self.inner.config.lock;
        tracing::info!(lock = %lock.describe(), identity = %self.inner.identity, "attempting to acquire leader lease");
        let guard = tokio::select! {
            g = self.acquire(callbacks) => g,
            () = &mut shutdown => {
                callbacks.on_run_ended();
                return RunOutcome::Cancelled;
            }
        };
        let shutdown = shutdown.as_mut();
        let outcome = self.lead(&guard, callbacks, shutdown).await;
        self.step_down(outcome).await;
        callbacks.on_stopped_leading();
        callbacks.on_run_ended();
        outcome
    }

    /// `run`'s leading step: polls the leader's work next to the renew loop until the term
    /// is lost or `shutdown` resolves.
    ///
    /// Every poll of the work is preceded by a look at the term on the clock: after any
    /// await (a paused process, a starved executor) the renew loop's timer may not have fired
    /// yet though the renew deadline has passed, and the work then gets no further poll.
    async fn lead<C: LeaderCallbacks + ?Sized>(
        &self,
        guard: &LeaderGuard,
        callbacks: &C,
        mut shutdown: Pin<&mut impl Future<Output = ()>>,
    ) -> RunOutcome {
        let work = callbacks.on_started_leading(guard.clone());
        let mut work = pin!(work);
        let mut work_done = false;
        let renew = self.renew_loop(guard, callbacks);
        let mut renew = pin!(renew);
        std::future::poll_fn(|cx| {
            // The loss first: after a pause that made several branches ready, the work must
            // not get another poll.
            if renew.as_mut().poll(cx).is_ready() {
                return Poll::Ready(RunOutcome::LostLeadership);
            }
            if !guard.is_valid() {
                self.end_term_if(&guard.term, "renew deadline passed");
                return Poll::Ready(RunOutcome::LostLeadership);
            }
            if !work_done && work.as_mut().poll(cx).is_ready() {
                work_done = true;
            }
            if shutdown.as_mut().poll(cx).is_ready() {
                return Poll::Ready(RunOutcome::Cancelled);
            }
            Poll::Pending
        })
        .await
    }

    /// `run`'s last step: ends the term, and releases the lock after a cancellation when so
    /// configured.
    async fn step_down(&self, outcome: RunOutcome) {
        self.end_term(match outcome {
            RunOutcome::Cancelled => "cancelled",
            RunOutcome::LostLeadership => "lost",
        });
        if outcome == RunOutcome::Cancelled
            && self.inner.config.release_on_cancel
            && let Err(e) = self.release().await
        {
            tracing::warn!(error = %e, identity = %self.inner.identity, "release on cancel failed");
        }
    }

    /// Retries [`try_acquire_or_renew`](Self::try_acquire_or_renew) until this elector
    /// leads, and returns the term's guard. Waits between attempts: a jittered retry period
    /// (uniform in [1, 1.2] x retry period), cut short at the exact local instant an observed
    /// lease expires and when the lock reports a change. Cancel by dropping the future.
    pub async fn acquire<C: LeaderCallbacks + ?Sized>(&self, callbacks: &C) -> LeaderGuard {
        let clock = self.clock().clone();
        let lock = self.inner.config.lock.clone();
        loop {
            let result = self.attempt_bounded(Mode::Acquire).await;
            self.report_new_leader(callbacks);
            match &result {
                Ok(true) => {
                    if let Some(guard) = self.guard() {
                        return guard;
                    }
                }
                Ok(false) => {}
                Err(e) => {
                    tracing::debug!(error = %e, lock = %lock.describe(), identity = %self.inner.identity, "failed to acquire lease");
                }
            }
            let now = clock.now();
            let factor = 1.0 + locked(&self.inner.rng).random::<f64>() * (JITTER_FACTOR - 1.0);
            let mut wake = now + self.inner.config.retry_period.mul_f64(factor);
            for expiry in [self.observed_expiry(), self.absent_expiry()]
                .into_iter()
                .flatten()
            {
                if expiry > now && expiry < wake {
                    wake = expiry;
                }
            }
            // The state the wait starts from: no record when the last read found none (a wait
            // on the version seen before would return at once, the record being gone).
            let seen = {
                let st = locked(&self.inner.state);
                if st.absent_since.is_some() {
                    None
                } else {
                    st.observed_version.clone()
                }
            };
            let use_hint = matches!(result, Ok(false));
            tokio::select! {
                () = clock.sleep_until(wake) => {}
                () = lock.wait_for_change(seen.as_ref()), if use_hint => {}
            }
        }
    }

    async fn renew_loop<C: LeaderCallbacks + ?Sized>(&self, guard: &LeaderGuard, callbacks: &C) {
        let clock = self.clock().clone();
        let term = guard.term.clone();
        let cfg = &self.inner.config;
        let mut failing = false;
        loop {
            let start = clock.now();
            let valid_until = *locked(&term.valid_until);
            if start >= valid_until || term.lost.is_cancelled() {
                self.end_term_if(&term, "renew deadline passed");
                return;
            }
            let deadline = (start + cfg.attempt_timeout).min(valid_until);
            let mut attempt = pin!(self.attempt(Mode::Renew));
            let result = match poll_once(attempt.as_mut()).await {
                Poll::Ready(r) => Some(r),
                Poll::Pending => tokio::select! {
                    r = attempt => Some(r),
                    () = clock.sleep_until(deadline) => None,
                },
            };
            self.report_new_leader(callbacks);
            if term.lost.is_cancelled() {
                return;
            }
            match result {
                Some(Ok(true)) => {
                    cfg.hooks
                        .renewed(clock.now().saturating_duration_since(start));
                    if failing {
                        tracing::info!(lock = %cfg.lock.describe(), identity = %self.inner.identity, "renewed lease after failures");
                    }
                    failing = false;
                }
                Some(Ok(false)) => {
                    cfg.hooks.renew_failed();
                    return;
                }
                Some(Err(e)) => {
                    cfg.hooks.renew_failed();
                    failing = true;
                    tracing::warn!(error = %e, lock = %cfg.lock.describe(), identity = %self.inner.identity, "failed to renew lease");
                }
                None => {
                    cfg.hooks.renew_failed();
                    failing = true;
                    tracing::warn!(lock = %cfg.lock.describe(), identity = %self.inner.identity, "lease renewal timed out");
                }
            }
            let valid_until = *locked(&term.valid_until);
            let next = (start + cfg.retry_period).min(valid_until);
            tokio::select! {
                () = clock.sleep_until(next) => {}
                () = term.lost.cancelled() => return,
            }
        }
    }

    async fn attempt_bounded(&self, mode: Mode) -> Result<bool, LockError> {
        let clock = self.clock().clone();
        let deadline = clock.now() + self.inner.config.attempt_timeout;
        let mut attempt = pin!(self.attempt(mode));
        // Most attempts on a fast lock finish at once: no timer needed then.
        if let Poll::Ready(r) = poll_once(attempt.as_mut()).await {
            return r;
        }
        tokio::select! {
            r = attempt => r,
            () = clock.sleep_until(deadline) => Err(LockError::Timeout),
        }
    }

    /// One attempt, in named steps: end an expired term, the leader's fast renewal, read the
    /// record (or create it when there is none), wait out another holder's lease, then the
    /// compare-and-swap that renews the term or starts a new one.
    async fn attempt(&self, mode: Mode) -> Result<bool, LockError> {
        let _attempt = self.inner.attempt.lock().await;
        let clock = self.clock();
        let at = Attempt {
            start: clock.now(),
            wall: clock.wall(),
            lease_secs: u32::try_from(self.inner.config.lease_duration.as_secs())
                .unwrap_or(u32::MAX),
            mode,
        };
        let term = self.current_term(at.start);
        if term.is_none() && matches!(at.mode, Mode::Renew) {
            return Ok(false);
        }
        if let Some(term) = &term
            && let Some(renewed) = self.fast_renew(term, &at).await
        {
            return Ok(renewed);
        }
        let Some((current, version)) = self.inner.config.lock.get().await? else {
            self.observe_absent();
            return self.create_record(&at).await;
        };
        self.observe(current.clone(), version.clone());
        if current.holder_identity == *self.inner.identity
            && let Some(preferred) = preferred_other(&current, &self.inner.identity)
        {
            return self.yield_to(preferred, &current, &version, &at).await;
        }
        if self.inner.config.coordinated && !self.coordinator_allows(&current, term.as_ref(), &at) {
            return Ok(false);
        }
        if self.must_wait(&current, term.as_ref(), &at) {
            return Ok(false);
        }
        self.compare_and_swap(&current, &version, term.as_ref(), &at)
            .await
    }

    /// The record names this elector as holder and another identity as `preferredHolder`
    /// (coordinated leader election's request to step down): end the term at once and
    /// release the lease, keeping `strategy` and `preferredHolder`, so that the preferred
    /// candidate takes it over without waiting for it to expire.
    async fn yield_to(
        &self,
        preferred: &str,
        current: &LeaderElectionRecord,
        version: &Version,
        at: &Attempt,
    ) -> Result<bool, LockError> {
        self.end_term("the record prefers another holder");
        tracing::info!(lock = %self.inner.config.lock.describe(), identity = %self.inner.identity, preferred, "stepping down for the preferred holder");
        let released = LeaderElectionRecord {
            holder_identity: String::new(),
            lease_duration_seconds: 1,
            acquire_time: Some(at.wall),
            renew_time: Some(at.wall),
            ..current.clone()
        };
        let v2 = self.inner.config.lock.update(version, &released).await?;
        self.observe(released, v2);
        self.inner
            .config
            .lock
            .record_event(&ElectionEvent::Released);
        Ok(false)
    }

    /// Coordinated mode (client-go's `tryCoordinatedRenew`): whether this elector may write
    /// the record it read. Only a record that names it may be written: as holder (its own
    /// term, or a record the coordinator assigned to it that has not expired on this
    /// elector's clock since it changed), or as `preferredHolder` of a released record. A
    /// free, released or expired record of another is left to the coordinator; a term ends
    /// when the record names another holder.
    fn coordinator_allows(
        &self,
        current: &LeaderElectionRecord,
        term: Option<&Arc<Term>>,
        at: &Attempt,
    ) -> bool {
        let id = &*self.inner.identity;
        if current.holder_identity == id {
            if term.is_some() {
                return true;
            }
            let observed_time = locked(&self.inner.state).observed_time;
            return at.start < observed_time + current.lease_duration();
        }
        if term.is_some() {
            self.end_term("another holder took the lease");
        }
        !current.is_held() && current.preferred_holder.as_deref() == Some(id)
    }

    /// Step 0: the current term, ended first when its deadline has passed.
    fn current_term(&self, start: Instant) -> Option<Arc<Term>> {
        let term = locked(&self.inner.state).term.clone();
        match term {
            Some(t) if t.valid_at(start) => Some(t),
            Some(_) => {
                self.end_term("renew deadline passed");
                None
            }
            None => None,
        }
    }

    /// Step 1, client-go's fast path: the leader updates the version it last wrote, without
    /// a read. `None`: not possible or failed; fall back to a read.
    async fn fast_renew(&self, term: &Arc<Term>, at: &Attempt) -> Option<bool> {
        let id = &*self.inner.identity;
        let (observed, version) = {
            let st = locked(&self.inner.state);
            (st.observed.clone(), st.observed_version.clone())
        };
        let (Some(obs), Some(v)) = (observed, version) else {
            return None;
        };
        if obs.holder_identity != id {
            return None;
        }
        let record = LeaderElectionRecord {
            holder_identity: id.to_owned(),
            lease_duration_seconds: at.lease_secs,
            renew_time: Some(at.wall),
            ..obs
        };
        match self.inner.config.lock.update(&v, &record).await {
            Ok(v2) => {
                self.observe(record, v2);
                Some(self.extend(term, at.start))
            }
            Err(e) => {
                tracing::debug!(error = %e, identity = %id, "optimistic renew failed; falling back to a read");
                None
            }
        }
    }

    /// Step 2b: there is no record. A leader's term ends; a candidate creates the record,
    /// but not before the lease of the holder it saw last has run out on its own clock (a
    /// holder it never read, whose record made its own `create` fail, counts as seen then,
    /// with this elector's lease duration).
    async fn create_record(&self, at: &Attempt) -> Result<bool, LockError> {
        // A term cannot be renewed without its record: it ends, in every mode.
        self.end_term("the record was deleted");
        if matches!(at.mode, Mode::Renew) || self.inner.config.coordinated {
            // In a coordinated election only the coordinator creates the record.
            return Ok(false);
        }
        // A record that disappears does not end the lease of the holder this elector saw
        // last: wait until that lease has run out on this elector's clock.
        if let Some(expiry) = self.observed_expiry()
            && at.start < expiry
        {
            return Ok(false);
        }
        // A record this elector finds missing may have been deleted under a live leader it
        // never saw (or whose last renewals it missed): that leader's term runs until its
        // next renewal fails, at most its renew deadline after its last one, which came
        // before the delete. Create it only after finding it missing for a whole lease.
        if let Some(expiry) = self.absent_expiry()
            && at.start < expiry
        {
            return Ok(false);
        }
        // The same for a record this elector only knows from its lost `create`: it may have
        // been deleted before any read of this elector found it, while its holder still leads
        // (its term runs until its renewal fails), and its transitions, the fencing token
        // where versions carry no sequence, are unknown here.
        if let Some(lost) = locked(&self.inner.state).create_lost_at
            && at.start < lost + self.inner.config.lease_duration
        {
            return Ok(false);
        }
        let transitions = locked(&self.inner.state)
            .max_transitions
            .map_or(0, |t| t.saturating_add(1));
        let record = LeaderElectionRecord {
            leader_transitions: transitions,
            ..LeaderElectionRecord::new(&*self.inner.identity, at.lease_secs, at.wall)
        };
        let v = match self.inner.config.lock.create(&record).await {
            Ok(v) => v,
            Err(e) => {
                if e.is_conflict() {
                    locked(&self.inner.state).create_lost_at = Some(self.clock().now());
                }
                return Err(e);
            }
        };
        self.check_sequence(&v)?;
        let token = token_for(&v, &record);
        self.observe(record, v);
        self.start_term(token, at.start);
        Ok(true)
    }

    /// Step 3: whether to leave a record held by another alone: always while leading (the
    /// term ends; a renewal stops there), else until this elector has seen it unchanged for
    /// its lease duration.
    fn must_wait(
        &self,
        current: &LeaderElectionRecord,
        term: Option<&Arc<Term>>,
        at: &Attempt,
    ) -> bool {
        if current.holder_identity == *self.inner.identity {
            return false;
        }
        if term.is_some() {
            self.end_term("another holder took the lease");
            if matches!(at.mode, Mode::Renew) {
                return true;
            }
        }
        if current.is_held() || preferred_other(current, &self.inner.identity).is_some() {
            // A released record that prefers another candidate is left to it for the
            // record's lease duration (1 s after a step-down), as a held one is.
            let observed_time = locked(&self.inner.state).observed_time;
            if self.clock().now() < observed_time + current.lease_duration() {
                return true;
            }
        }
        false
    }

    /// Step 4: the compare-and-swap that renews this elector's term or starts a new one.
    async fn compare_and_swap(
        &self,
        current: &LeaderElectionRecord,
        version: &Version,
        term: Option<&Arc<Term>>,
        at: &Attempt,
    ) -> Result<bool, LockError> {
        let id = &*self.inner.identity;
        let renewing = term.is_some() && current.holder_identity == id;
        if renewing {
            // client-go's slow path: the leader renews after a read.
            self.inner.config.hooks.slowpath();
        }
        let record = LeaderElectionRecord {
            holder_identity: id.to_owned(),
            lease_duration_seconds: at.lease_secs,
            acquire_time: if renewing {
                current.acquire_time
            } else {
                Some(at.wall)
            },
            renew_time: Some(at.wall),
            leader_transitions: if renewing {
                current.leader_transitions
            } else {
                current.leader_transitions.saturating_add(1)
            },
            strategy: current.strategy.clone(),
            // Kept while it names this elector (a coordinator's pick stays until it changes
            // it); cleared when it named another that did not take the lease in time.
            preferred_holder: current
                .preferred_holder
                .clone()
                .filter(|p| p.as_str() == id),
        };
        let v2 = self.inner.config.lock.update(version, &record).await?;
        if !renewing {
            self.check_sequence(&v2)?;
        }
        let token = token_for(&v2, &record);
        self.observe(record, v2);
        match (term, renewing) {
            (Some(t), true) => Ok(self.extend(t, at.start)),
            _ => {
                self.start_term(token, at.start);
                Ok(true)
            }
        }
    }

    /// Refuses a new term whose version sequence is not above every sequence this elector
    /// has seen: its fencing token would not exceed an earlier term's (a store that lost its
    /// data, a counter that was reset).
    fn check_sequence(&self, written: &Version) -> Result<(), LockError> {
        let Some(got) = written.sequence() else {
            return Ok(());
        };
        let seen = locked(&self.inner.state).max_sequence;
        match seen {
            Some(seen) if got <= seen => {
                let error = SequenceRegression { seen, got };
                tracing::error!(lock = %self.inner.config.lock.describe(), identity = %self.inner.identity, %error, "refusing a new term");
                Err(LockError::Corrupt {
                    detail: error.to_string(),
                    source: Some(Box::new(error)),
                })
            }
            _ => Ok(()),
        }
    }

    fn clock(&self) -> &Arc<dyn Clock> {
        &self.inner.config.clock
    }

    fn guard_for(&self, term: Arc<Term>) -> LeaderGuard {
        LeaderGuard::new(term, self.clock().clone(), self.inner.identity.clone())
    }

    /// When this elector may create a record it found missing: one lease duration after its
    /// first read that found none ([`ElectionConfigBuilder::absent_record_wait`]).
    ///
    /// [`ElectionConfigBuilder::absent_record_wait`]: crate::ElectionConfigBuilder::absent_record_wait
    fn absent_expiry(&self) -> Option<Instant> {
        if !self.inner.config.absent_record_wait {
            return None;
        }
        let since = locked(&self.inner.state).absent_since?;
        Some(since + self.inner.config.lease_duration)
    }

    fn observed_expiry(&self) -> Option<Instant> {
        let st = locked(&self.inner.state);
        let rec = st.observed.as_ref()?;
        ((rec.is_held() && rec.holder_identity != *self.inner.identity)
            || preferred_other(rec, &self.inner.identity).is_some())
        .then(|| st.observed_time + rec.lease_duration())
    }

    /// Records that a read found no record (the first such read since a record was seen
    /// starts the absence).
    fn observe_absent(&self) {
        let now = self.clock().now();
        let mut st = locked(&self.inner.state);
        st.absent_since.get_or_insert(now);
    }

    /// Records what was read or written; the observed time moves only when the version
    /// changes (expiry runs from the last change this elector saw).
    fn observe(&self, record: LeaderElectionRecord, version: Version) {
        let now = self.clock().now();
        let mut st = locked(&self.inner.state);
        st.create_lost_at = None;
        st.absent_since = None;
        if let Some(seq) = version.sequence() {
            st.max_sequence = Some(st.max_sequence.map_or(seq, |m| m.max(seq)));
        }
        st.max_transitions = Some(st.max_transitions.map_or(record.leader_transitions, |m| {
            m.max(record.leader_transitions)
        }));
        if st.observed_version.as_ref() != Some(&version) {
            st.observed_version = Some(version);
            st.observed_time = now;
        }
        let holder_changed =
            st.observed.as_ref().map(|r| &r.holder_identity) != Some(&record.holder_identity);
        st.observed = Some(record);
        if holder_changed {
            let leader = st
                .observed
                .as_ref()
                .filter(|r| r.is_held())
                .map(|r| r.holder_identity.clone());
            let token = st.term.as_ref().map(|t| t.token);
            drop(st);
            self.inner.watch.send_if_modified(|l| {
                let new = Leadership {
                    leader: leader.clone(),
                    token,
                };
                let changed = *l != new;
                *l = new;
                changed
            });
        }
    }

    /// Extends `term` after a renewal that started at `start`. A term that ended while the
    /// write was in flight stays ended: validity is one contiguous interval.
    fn extend(&self, term: &Arc<Term>, start: Instant) -> bool {
        if !term.valid_at(self.clock().now()) {
            self.end_term_if(term, "renew deadline passed during the renewal");
            return false;
        }
        *locked(&term.valid_until) = start + self.inner.config.renew_deadline;
        *locked(&term.last_renew) = start;
        true
    }

    fn start_term(&self, token: FencingToken, start: Instant) {
        let term = Term::new(token, start, start + self.inner.config.renew_deadline);
        let lock = &self.inner.config.lock;
        {
            let mut st = locked(&self.inner.state);
            st.term = Some(term);
        }
        self.inner.watch.send_replace(Leadership {
            leader: Some(self.inner.identity.to_string()),
            token: Some(token),
        });
        self.inner.config.hooks.leading(true);
        self.inner.config.hooks.transition();
        tracing::info!(lock = %lock.describe(), identity = %self.inner.identity, token = token.0, "successfully acquired lease");
        lock.record_event(&ElectionEvent::BecameLeader { token });
    }

    /// Ends `term` if it is still the current one.
    fn end_term_if(&self, term: &Arc<Term>, reason: &str) {
        let current = locked(&self.inner.state)
            .term
            .as_ref()
            .is_some_and(|t| Arc::ptr_eq(t, term));
        if current {
            self.end_term(reason);
        }
    }

    fn end_term(&self, reason: &str) {
        let term = locked(&self.inner.state).term.take();
        if let Some(term) = term {
            term.lost.cancel();
            self.inner.config.hooks.leading(false);
            let lock = &self.inner.config.lock;
            self.inner.watch.send_modify(|l| l.token = None);
            tracing::info!(lock = %lock.describe(), identity = %self.inner.identity, token = term.token.0, reason, "stopped leading");
            lock.record_event(&ElectionEvent::StoppedLeading);
        }
    }

    fn report_new_leader<C: LeaderCallbacks + ?Sized>(&self, callbacks: &C) {
        let holder = {
            let mut st = locked(&self.inner.state);
            let Some(holder) = st
                .observed
                .as_ref()
                .filter(|r| r.is_held())
                .map(|r| r.holder_identity.clone())
            else {
                return;
            };
            if st.reported_leader.as_deref() == Some(holder.as_str()) {
                return;
            }
            st.reported_leader = Some(holder.clone());
            holder
        };
        tracing::info!(lock = %self.inner.config.lock.describe(), identity = %self.inner.identity, leader = %holder, "new leader observed");
        callbacks.on_new_leader(&holder);
    }
}

/// Polls `fut` once.
async fn poll_once<F: Future>(mut fut: Pin<&mut F>) -> Poll<F::Output> {
    std::future::poll_fn(|cx| Poll::Ready(fut.as_mut().poll(cx))).await
}

/// The record's `preferredHolder` when it names somebody other than `identity`.
fn preferred_other<'r>(record: &'r LeaderElectionRecord, identity: &str) -> Option<&'r str> {
    record
        .preferred_holder
        .as_deref()
        .filter(|p| !p.is_empty() && *p != identity)
}

/// The fencing token of a term that started with a write returning `version` of `record`.
pub(crate) fn token_for(version: &Version, record: &LeaderElectionRecord) -> FencingToken {
    FencingToken(version.sequence().unwrap_or(record.leader_transitions))
}
