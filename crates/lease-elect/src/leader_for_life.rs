//! Leader for life (operator-sdk's mode): a create-only lock, never renewed.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::elector::{Term, locked, token_for};
use crate::{
    Clock, ElectionEvent, Instant, LeaderCallbacks, LeaderElectionRecord, LeaderGuard, LockError,
    ResourceLock, RunOutcome, TokioClock, Version,
};

/// Exponential backoff with jitter: the n-th wait is `min(initial * factor^n, max)` times a
/// uniform factor in `[1, 1 + jitter]`.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub struct Backoff {
    /// The first wait.
    pub initial: Duration,
    /// The largest wait (before jitter).
    pub max: Duration,
    /// The growth factor.
    pub factor: f64,
    /// The jitter factor.
    pub jitter: f64,
}

impl Default for Backoff {
    /// operator-sdk's: 1 s doubling to 16 s, jitter 0.2.
    fn default() -> Self {
        Backoff {
            initial: Duration::from_secs(1),
            max: Duration::from_secs(16),
            factor: 2.0,
            jitter: 0.2,
        }
    }
}

impl Backoff {
    /// A backoff from `initial` growing by `factor` up to `max`, each wait stretched by a
    /// uniform factor in `[1, 1 + jitter]`.
    #[must_use]
    pub fn new(initial: Duration, max: Duration, factor: f64, jitter: f64) -> Self {
        Backoff {
            initial,
            max,
            factor,
            jitter,
        }
    }

    /// The wait before attempt `n + 1`, for a uniform random `u` in `[0, 1)`.
    #[must_use]
    pub fn delay(&self, n: u32, u: f64) -> Duration {
        let exp = i32::try_from(n.min(64)).unwrap_or(64);
        let base = self.initial.as_secs_f64() * self.factor.powi(exp);
        let capped = base.min(self.max.as_secs_f64());
        Duration::from_secs_f64(capped * (1.0 + self.jitter * u))
    }
}

/// Leader for life: the first participant to create the record leads until it stops; the
/// lease is never renewed and never expires by time.
///
/// It tries [`ResourceLock::create`] with [`Backoff`] (1 s to 16 s, jitter 0.2) until it
/// succeeds. If the existing record already names this identity (the process restarted), it
/// adopts it with a compare-and-swap, which also gives a new fencing token. On shutdown it
/// deletes the record it created ([`ResourceLock::delete`]). When a holder dies without
/// deleting, the backend must remove the record (owner liveness, TTL) or an operator must:
/// for [`FileLock`](crate::FileLock) use
/// [`with_owner_liveness`](crate::FileLock::with_owner_liveness); for
/// [`MemoryLock`](crate::MemoryLock), [`MemoryStore::clear`](crate::MemoryStore::clear).
///
/// Fencing tokens are strictly increasing only on locks whose versions carry sequences
/// ([`Version::sequence`]), since each term starts from a fresh record.
pub struct LeaderForLife {
    lock: Arc<dyn ResourceLock>,
    clock: Arc<dyn Clock>,
    backoff: Backoff,
    rng: Mutex<SmallRng>,
}

impl std::fmt::Debug for LeaderForLife {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LeaderForLife")
            .field("lock", &self.lock.describe())
            .field("identity", &self.lock.identity())
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

impl LeaderForLife {
    /// A leader-for-life participant on `lock`, with the real clock and default backoff.
    #[must_use]
    pub fn new(lock: impl ResourceLock + 'static) -> Self {
        LeaderForLife {
            lock: Arc::new(lock),
            clock: Arc::new(TokioClock::new()),
            backoff: Backoff::default(),
            rng: Mutex::new(SmallRng::seed_from_u64(rand::random())),
        }
    }

    /// Sets the clock.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Sets the backoff.
    #[must_use]
    pub fn with_backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    /// Seeds the jitter's random numbers (for deterministic tests).
    #[must_use]
    pub fn with_seed(self, seed: u64) -> Self {
        *locked(&self.rng) = SmallRng::seed_from_u64(seed);
        self
    }

    /// Retries until this participant holds the lock; returns the guard and the version it
    /// wrote (pass it to [`LeaderForLife::step_down`]).
    pub async fn become_leader(&self) -> (LeaderGuard, Version) {
        let id = self.lock.identity().to_owned();
        let mut attempt = 0u32;
        loop {
            match self.try_once(&id).await {
                Ok(Some(won)) => return won,
                Ok(None) => {
                    tracing::debug!(lock = %self.lock.describe(), identity = %id, "lock held by another; backing off")
                }
                Err(e) => {
                    tracing::warn!(error = %e, lock = %self.lock.describe(), identity = %id, "leader-for-life attempt failed")
                }
            }
            let u = locked(&self.rng).random::<f64>();
            let wait = self.backoff.delay(attempt, u);
            attempt = attempt.saturating_add(1);
            self.clock.sleep(wait).await;
        }
    }

    async fn try_once(&self, id: &str) -> Result<Option<(LeaderGuard, Version)>, LockError> {
        let record = LeaderElectionRecord {
            // Never expires by time; i32::MAX keeps the value valid for a Kubernetes Lease.
            lease_duration_seconds: i32::MAX.unsigned_abs(),
            ..LeaderElectionRecord::new(id, 0, self.clock.wall())
        };
        let version = match self.lock.create(&record).await {
            Ok(v) => v,
            Err(e) if e.is_conflict() => match self.lock.get().await? {
                Some((existing, v)) if existing.holder_identity == id => {
                    tracing::info!(lock = %self.lock.describe(), identity = %id, "found a record with my identity; adopting it after a restart");
                    let adopted = LeaderElectionRecord {
                        leader_transitions: existing.leader_transitions.saturating_add(1),
                        ..record.clone()
                    };
                    self.lock.update(&v, &adopted).await?
                }
                _ => return Ok(None),
            },
            Err(e) => return Err(e),
        };
        let token = token_for(&version, &record);
        let start = self.clock.now();
        let term = Term::new(token, start, Instant::from_origin(Duration::MAX));
        tracing::info!(lock = %self.lock.describe(), identity = %id, token = token.0, "became leader for life");
        self.lock
            .record_event(&ElectionEvent::BecameLeader { token });
        let guard = LeaderGuard::new(term, self.clock.clone(), id.into());
        Ok(Some((guard, version)))
    }

    /// Ends the term of `guard` and deletes the record written at `version` (a
    /// compare-and-swap delete: a record somebody else wrote is left alone).
    ///
    /// # Errors
    /// The lock's error; `Unsupported` if it cannot delete.
    pub async fn step_down(&self, guard: &LeaderGuard, version: &Version) -> Result<(), LockError> {
        guard.end();
        self.lock.record_event(&ElectionEvent::StoppedLeading);
        self.lock.delete(version).await?;
        tracing::info!(lock = %self.lock.describe(), identity = %self.lock.identity(), "leader for life stepped down and deleted the record");
        self.lock.record_event(&ElectionEvent::Released);
        Ok(())
    }

    /// Becomes leader, polls `on_started_leading` until `shutdown` resolves, then steps
    /// down (deletes the record) and calls `on_stopped_leading` and `on_run_ended`.
    pub async fn run<C: LeaderCallbacks + ?Sized>(
        &self,
        callbacks: &C,
        shutdown: impl Future<Output = ()>,
    ) -> RunOutcome {
        let mut shutdown = pin!(shutdown);
        let (guard, version) = tokio::select! {
            won = self.become_leader() => won,
            () = &mut shutdown => {
                callbacks.on_run_ended();
                return RunOutcome::Cancelled;
            }
        };
        callbacks.on_new_leader(self.lock.identity());
        {
            let work = callbacks.on_started_leading(guard.clone());
            let mut work = pin!(work);
            let mut done = false;
            loop {
                tokio::select! {
                    () = &mut work, if !done => done = true,
                    () = &mut shutdown => break,
                }
            }
        }
        if let Err(e) = self.step_down(&guard, &version).await {
            tracing::warn!(error = %e, identity = %self.lock.identity(), "leader for life could not delete its record");
        }
        callbacks.on_stopped_leading();
        callbacks.on_run_ended();
        RunOutcome::Cancelled
    }
}
