//! Election configuration, validated once.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::{Clock, ResourceLock, TokioClock};

/// client-go's jitter factor (`JitterFactor = 1.2`). client-go's candidates wait between 1
/// and 2.2 retry periods between attempts (`wait.JitterUntil` adds up to factor x period to
/// the period); this crate's candidates wait between 1 and 1.2 retry periods (and wake early
/// at an observed lease's expiry). In both, the renew deadline must exceed 1.2 retry periods.
pub const JITTER_FACTOR: f64 = 1.2;

/// The margin by which the lease duration must exceed the renew deadline when electors of this
/// crate share a lock with client-go electors and the retry period is under one second.
///
/// client-go decides whether the record changed by comparing it, serialized with times in
/// whole seconds, with the last one it saw. A leader that renews more than once a second can
/// then look unchanged for up to a second, and a client-go candidate counts its lease from up
/// to a second too early. It could take the lease up to about a second before this crate's
/// leader gives up (reported from a real API server at lease 2 s / renew deadline 1.5 s /
/// retry 0.2 s: a client-go candidate took over 94 ms before the cut-off leader's term ended,
/// in 1 of 10 rounds; this project's tests have no real API server). Safe for mixed
/// deployments: a retry period of at least one second, or a lease duration at least
/// `renew deadline + CLIENT_GO_MARGIN` (client-go's defaults, 15 s / 10 s / 2 s, satisfy both).
pub const CLIENT_GO_MARGIN: Duration = Duration::from_secs(1);

/// Why an [`ElectionConfig`] is invalid. Checked in client-go's order; each message is
/// client-go's where client-go has one.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The lease duration is not longer than the renew deadline.
    #[error("leaseDuration must be greater than renewDeadline")]
    LeaseNotAboveRenewDeadline,
    /// The renew deadline is not longer than 1.2 retry periods.
    #[error("renewDeadline must be greater than retryPeriod*JitterFactor")]
    RenewDeadlineNotAboveJitteredRetry,
    /// The lease duration is zero.
    #[error("leaseDuration must be greater than zero")]
    ZeroLeaseDuration,
    /// The renew deadline is zero.
    #[error("renewDeadline must be greater than zero")]
    ZeroRenewDeadline,
    /// The retry period is zero.
    #[error("retryPeriod must be greater than zero")]
    ZeroRetryPeriod,
    /// The lease duration has a fraction of a second; the record stores whole seconds, so
    /// other candidates would expire the lease early.
    #[error("leaseDuration must be a whole number of seconds (the record stores seconds)")]
    FractionalLeaseDuration,
    /// The per-attempt timeout is zero.
    #[error("attemptTimeout must be greater than zero")]
    ZeroAttemptTimeout,
    /// The per-attempt timeout is longer than the renew deadline: a renewal could then
    /// still be in flight when the term must already have ended.
    #[error("attemptTimeout must not be greater than renewDeadline")]
    AttemptTimeoutAboveRenewDeadline,
    /// In [client-go compatible mode](ElectionConfigBuilder::client_go_compatible): the retry
    /// period is under one second and the lease duration exceeds the renew deadline by less
    /// than [`CLIENT_GO_MARGIN`], so a client-go candidate could take the lease while this
    /// elector's term still runs.
    #[error(
        "leaseDuration must exceed renewDeadline by at least 1s when retryPeriod is under 1s (client-go electors see record changes at one-second granularity)"
    )]
    ClientGoMarginTooSmall,
    /// No lock was given.
    #[error("Lock must not be nil.")]
    MissingLock,
    /// The lock's identity is empty.
    #[error("Lock identity is empty")]
    EmptyIdentity,
}

/// A validated election configuration: the lock, the timings, the clock and the options.
/// Build it with [`ElectionConfig::builder`].
///
/// ```
/// use std::time::Duration;
/// use lease_elect::{ElectionConfig, MemoryLock, MemoryStore};
///
/// let store = MemoryStore::new("example");
/// let config = ElectionConfig::builder()
///     .lock(MemoryLock::new(&store, "node-a"))
///     .lease_duration(Duration::from_secs(15))
///     .renew_deadline(Duration::from_secs(10))
///     .retry_period(Duration::from_secs(2))
///     .release_on_cancel(true)
///     .build()?;
/// assert_eq!(config.identity(), "node-a");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct ElectionConfig {
    pub(crate) lock: Arc<dyn ResourceLock>,
    pub(crate) clock: Arc<dyn Clock>,
    pub(crate) lease_duration: Duration,
    pub(crate) renew_deadline: Duration,
    pub(crate) retry_period: Duration,
    pub(crate) attempt_timeout: Duration,
    pub(crate) release_on_cancel: bool,
    pub(crate) coordinated: bool,
    pub(crate) absent_record_wait: bool,
    pub(crate) name: String,
    pub(crate) seed: Option<u64>,
    pub(crate) hooks: crate::metrics::Hooks,
}

impl fmt::Debug for ElectionConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElectionConfig")
            .field("lock", &self.lock.describe())
            .field("identity", &self.lock.identity())
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .field("attempt_timeout", &self.attempt_timeout)
            .field("release_on_cancel", &self.release_on_cancel)
            .field("absent_record_wait", &self.absent_record_wait)
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl ElectionConfig {
    /// A builder with client-go's defaults: 15 s lease, 10 s renew deadline, 2 s retry
    /// period, the real [`TokioClock`], no release on cancel.
    pub fn builder() -> ElectionConfigBuilder {
        ElectionConfigBuilder::default()
    }

    /// The lock.
    #[must_use]
    pub fn lock(&self) -> &Arc<dyn ResourceLock> {
        &self.lock
    }

    /// The clock.
    #[must_use]
    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// This participant's identity (the lock's).
    #[must_use]
    pub fn identity(&self) -> &str {
        self.lock.identity()
    }

    /// How long candidates wait without seeing the record change before taking over.
    #[must_use]
    pub fn lease_duration(&self) -> Duration {
        self.lease_duration
    }

    /// How long the leader keeps trying to renew before it gives up leadership.
    #[must_use]
    pub fn renew_deadline(&self) -> Duration {
        self.renew_deadline
    }

    /// The period between attempts.
    #[must_use]
    pub fn retry_period(&self) -> Duration {
        self.retry_period
    }

    /// The bound on one lock attempt (get plus write).
    #[must_use]
    pub fn attempt_timeout(&self) -> Duration {
        self.attempt_timeout
    }

    /// Whether `run` releases the lock when it is cancelled while leading.
    #[must_use]
    pub fn release_on_cancel(&self) -> bool {
        self.release_on_cancel
    }

    /// Whether the elector takes part in a coordinated election (see
    /// [`ElectionConfigBuilder::coordinated`]).
    #[must_use]
    pub fn coordinated(&self) -> bool {
        self.coordinated
    }

    /// Whether a candidate waits one lease duration before it creates a record it found
    /// missing (see [`ElectionConfigBuilder::absent_record_wait`]).
    #[must_use]
    pub fn absent_record_wait(&self) -> bool {
        self.absent_record_wait
    }

    /// The election's name, for logs (defaults to the lock's description).
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// Builds an [`ElectionConfig`]; see [`ElectionConfig::builder`].
#[derive(Clone)]
#[must_use]
pub struct ElectionConfigBuilder {
    lock: Option<Arc<dyn ResourceLock>>,
    clock: Option<Arc<dyn Clock>>,
    lease_duration: Duration,
    renew_deadline: Duration,
    retry_period: Duration,
    attempt_timeout: Option<Duration>,
    release_on_cancel: bool,
    coordinated: bool,
    absent_record_wait: bool,
    name: Option<String>,
    seed: Option<u64>,
    client_go_compatible: bool,
    #[cfg(feature = "metrics")]
    metrics: Option<crate::ElectionMetrics>,
}

impl Default for ElectionConfigBuilder {
    fn default() -> Self {
        ElectionConfigBuilder {
            lock: None,
            clock: None,
            lease_duration: Duration::from_secs(15),
            renew_deadline: Duration::from_secs(10),
            retry_period: Duration::from_secs(2),
            attempt_timeout: None,
            release_on_cancel: false,
            coordinated: false,
            absent_record_wait: true,
            name: None,
            seed: None,
            client_go_compatible: false,
            #[cfg(feature = "metrics")]
            metrics: None,
        }
    }
}

impl fmt::Debug for ElectionConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ElectionConfigBuilder")
            .field("lease_duration", &self.lease_duration)
            .field("renew_deadline", &self.renew_deadline)
            .field("retry_period", &self.retry_period)
            .finish_non_exhaustive()
    }
}

impl ElectionConfigBuilder {
    /// The lock to compete for (required). Its identity is this participant's.
    pub fn lock(mut self, lock: impl ResourceLock + 'static) -> Self {
        self.lock = Some(Arc::new(lock));
        self
    }

    /// The lock, already shared.
    pub fn shared_lock(mut self, lock: Arc<dyn ResourceLock>) -> Self {
        self.lock = Some(lock);
        self
    }

    /// The clock (default: [`TokioClock`]).
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// The clock, already shared.
    pub fn shared_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = Some(clock);
        self
    }

    /// Lease duration (default 15 s): how long candidates wait without seeing the record
    /// change before they take over. Whole seconds.
    pub fn lease_duration(mut self, d: Duration) -> Self {
        self.lease_duration = d;
        self
    }

    /// Renew deadline (default 10 s): the leader gives up leadership when no renewal
    /// started within this long before succeeded.
    pub fn renew_deadline(mut self, d: Duration) -> Self {
        self.renew_deadline = d;
        self
    }

    /// Retry period (default 2 s): between renewals, and (times a jitter in [1, 1.2]; client-go
    /// uses [1, 2.2]) between acquire attempts.
    pub fn retry_period(mut self, d: Duration) -> Self {
        self.retry_period = d;
        self
    }

    /// Bound on each lock attempt, a read plus a write (default: the renew deadline, as
    /// client-go bounds an attempt). It must not exceed the renew deadline. A bound near the
    /// retry period is too tight for slow links: with 300 ms per round trip, an attempt of
    /// two round trips needs 0.6 s, more than a 0.2 s retry period, and nobody would lead.
    /// A renewal is additionally cut at the term's deadline, whatever this bound.
    pub fn attempt_timeout(mut self, d: Duration) -> Self {
        self.attempt_timeout = Some(d);
        self
    }

    /// Release the lock when `run` is cancelled while leading (default false). Only set it
    /// when the guarded work has stopped by the time you cancel.
    pub fn release_on_cancel(mut self, yes: bool) -> Self {
        self.release_on_cancel = yes;
        self
    }

    /// Coordinated leader election (default off; client-go's `Coordinated`, KEP-4355): the
    /// elector never creates the record and never takes over a free or expired lease by
    /// itself. It leads only when the record names it as holder (written by a
    /// [`Coordinator`](crate::coordinated::Coordinator) for it, or its own lease it renews), or
    /// when a released record names it as `preferredHolder`; it steps down when
    /// `preferredHolder` names another. Without a running coordinator nobody leads.
    pub fn coordinated(mut self, yes: bool) -> Self {
        self.coordinated = yes;
        self
    }

    /// Wait one lease duration before creating a missing record (default on).
    ///
    /// A candidate that finds no record creates it only after its reads have found none for
    /// one lease duration (and after the lease of the last holder it saw ran out), waking
    /// on lock changes and at the retry period meanwhile. The record may have been deleted
    /// under a live leader this candidate never saw (a process started after the delete) or
    /// whose last renewals it missed; that leader's term ends at its next renewal, which
    /// fails, and at the latest at its renew deadline, which is shorter than the lease. So a
    /// deleted record cannot give two leaders at once, with electors whose clocks run at the
    /// same rate and who share the lease duration.
    ///
    /// The price of that safety: the first election on a lock that has no record yet takes
    /// one lease duration (plus up to a retry period), as does a new election after a
    /// delete. Turn it off (client-go's behaviour: create at once) only when nothing can
    /// delete the record while a leader runs, or when the first election must be instant
    /// and two leaders for a moment are acceptable.
    pub fn absent_record_wait(mut self, yes: bool) -> Self {
        self.absent_record_wait = yes;
        self
    }

    /// A name for logs (default: the lock's description).
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Seed for the jitter's random numbers (default: from the OS), for deterministic
    /// simulations.
    pub fn seed(mut self, seed: u64) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Reports this elector's metrics to `metrics` (feature `metrics`), labelled with the
    /// election's [name](Self::name). See [`crate::metrics`].
    #[cfg(feature = "metrics")]
    pub fn metrics(mut self, metrics: &crate::ElectionMetrics) -> Self {
        self.metrics = Some(metrics.clone());
        self
    }

    /// Client-go compatible mode (default off): the lock is shared with client-go electors, so
    /// a timing that leaves less than [`CLIENT_GO_MARGIN`] is a validation error
    /// ([`ConfigError::ClientGoMarginTooSmall`]) instead of a `tracing` warning.
    pub fn client_go_compatible(mut self, yes: bool) -> Self {
        self.client_go_compatible = yes;
        self
    }

    /// Validates in client-go's order and builds the configuration.
    ///
    /// # Errors
    /// The first rule broken, as a [`ConfigError`].
    pub fn build(self) -> Result<ElectionConfig, ConfigError> {
        let ElectionConfigBuilder {
            lock,
            clock,
            lease_duration,
            renew_deadline,
            retry_period,
            attempt_timeout,
            release_on_cancel,
            coordinated,
            absent_record_wait,
            name,
            seed,
            client_go_compatible,
            #[cfg(feature = "metrics")]
            metrics,
        } = self;
        if lease_duration <= renew_deadline {
            return Err(ConfigError::LeaseNotAboveRenewDeadline);
        }
        if renew_deadline <= retry_period.mul_f64(JITTER_FACTOR) {
            return Err(ConfigError::RenewDeadlineNotAboveJitteredRetry);
        }
        if lease_duration.is_zero() {
            return Err(ConfigError::ZeroLeaseDuration);
        }
        if renew_deadline.is_zero() {
            return Err(ConfigError::ZeroRenewDeadline);
        }
        if retry_period.is_zero() {
            return Err(ConfigError::ZeroRetryPeriod);
        }
        if lease_duration.subsec_nanos() != 0 {
            return Err(ConfigError::FractionalLeaseDuration);
        }
        let attempt_timeout = attempt_timeout.unwrap_or(renew_deadline);
        if attempt_timeout.is_zero() {
            return Err(ConfigError::ZeroAttemptTimeout);
        }
        if attempt_timeout > renew_deadline {
            return Err(ConfigError::AttemptTimeoutAboveRenewDeadline);
        }
        if retry_period < Duration::from_secs(1)
            && lease_duration < renew_deadline + CLIENT_GO_MARGIN
        {
            if client_go_compatible {
                return Err(ConfigError::ClientGoMarginTooSmall);
            }
            tracing::warn!(
                ?lease_duration,
                ?renew_deadline,
                ?retry_period,
                "unsafe beside client-go electors: with a retry period under 1s, leaseDuration should exceed renewDeadline by at least 1s"
            );
        }
        let lock = lock.ok_or(ConfigError::MissingLock)?;
        if lock.identity().is_empty() {
            return Err(ConfigError::EmptyIdentity);
        }
        let name = name.unwrap_or_else(|| lock.describe());
        #[cfg(feature = "metrics")]
        let hooks = crate::metrics::Hooks::new(metrics, &name);
        #[cfg(not(feature = "metrics"))]
        let hooks = crate::metrics::Hooks::default();
        Ok(ElectionConfig {
            lock,
            clock: clock.unwrap_or_else(|| Arc::new(TokioClock::new())),
            lease_duration,
            renew_deadline,
            retry_period,
            attempt_timeout,
            release_on_cancel,
            coordinated,
            absent_record_wait,
            name,
            seed,
            hooks,
        })
    }
}
