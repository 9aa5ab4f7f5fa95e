//! An in-process lock with fault injection, for tests and single-process use.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use async_trait::async_trait;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use tokio::sync::watch;

use crate::{Clock, ElectionEvent, LeaderElectionRecord, LockError, ResourceLock, Version};

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[derive(Debug, Default)]
struct Stored {
    record: Option<(LeaderElectionRecord, u64)>,
    sequence: u64,
}

#[derive(Debug)]
struct StoreInner {
    name: String,
    stored: Mutex<Stored>,
    changed: watch::Sender<(Option<u64>, Option<String>)>,
    notify: bool,
}

/// The shared storage behind [`MemoryLock`] handles: one record, a write sequence and a
/// change notification. Cheap to clone (all clones share the record).
#[derive(Clone, Debug)]
pub struct MemoryStore {
    inner: Arc<StoreInner>,
}

impl MemoryStore {
    /// An empty store; `name` appears in [`ResourceLock::describe`].
    #[must_use]
    pub fn new(name: impl Into<String>) -> Self {
        Self::build(name.into(), true)
    }

    /// An empty store whose locks do not wake waiting candidates on changes (they then
    /// find out on their next tick, like a lock without a watch).
    #[must_use]
    pub fn without_notifications(name: impl Into<String>) -> Self {
        Self::build(name.into(), false)
    }

    fn build(name: String, notify: bool) -> Self {
        let (changed, _) = watch::channel((None, None));
        MemoryStore {
            inner: Arc::new(StoreInner {
                name,
                stored: Mutex::new(Stored::default()),
                changed,
                notify,
            }),
        }
    }

    /// The stored record and its version, read directly (no faults).
    #[must_use]
    pub fn peek(&self) -> Option<(LeaderElectionRecord, Version)> {
        locked(&self.inner.stored)
            .record
            .as_ref()
            .map(|(r, s)| (r.clone(), Version::from_sequence(*s)))
    }

    /// Deletes the record whatever its version, as a backend does when a leader-for-life
    /// holder dies (owner gone, TTL) or an operator removes the lock.
    pub fn clear(&self) {
        let mut st = locked(&self.inner.stored);
        if st.record.take().is_some() {
            st.sequence += 1;
            drop(st);
            self.inner.changed.send_replace((None, None));
        }
    }

    /// Overwrites the record unconditionally (a foreign writer, for tests).
    pub fn force(&self, record: LeaderElectionRecord) -> Version {
        let mut st = locked(&self.inner.stored);
        st.sequence += 1;
        let seq = st.sequence;
        let holder = record.holder_identity.clone();
        st.record = Some((record, seq));
        drop(st);
        self.inner.changed.send_replace((Some(seq), Some(holder)));
        Version::from_sequence(seq)
    }

    fn current(&self) -> (Option<u64>, Option<String>) {
        let st = locked(&self.inner.stored);
        match &st.record {
            Some((r, s)) => (Some(*s), Some(r.holder_identity.clone())),
            None => (None, None),
        }
    }
}

/// Faults a [`MemoryLock`] handle injects into its calls; change them at any time through
/// [`MemoryLock::faults`]. Latencies are slept on tokio time (simulated under paused time), or
/// on the clock given to [`MemoryLock::with_clock`].
///
/// Build one with struct update syntax: `Faults { error_rate: 0.1, ..Faults::none() }`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Faults {
    /// Probability that a call fails with a retryable error before reaching the store.
    pub error_rate: f64,
    /// Probability that a successful write's response is lost: the write is applied but the
    /// caller gets a retryable error.
    pub lost_reply_rate: f64,
    /// Smallest added latency per call (split between request and response).
    pub min_latency: Duration,
    /// Largest added latency per call.
    pub max_latency: Duration,
    /// When set, every call waits its latency and fails: the handle cannot reach the store.
    pub partitioned: bool,
}

impl Faults {
    /// No faults.
    #[must_use]
    pub fn none() -> Self {
        Faults::default()
    }
}

#[derive(Debug)]
struct FaultState {
    faults: Faults,
    rng: SmallRng,
}

/// A fault-injection handle shared between a [`MemoryLock`] and the test that drives it.
#[derive(Clone, Debug)]
pub struct FaultInjector {
    state: Arc<Mutex<FaultState>>,
}

impl FaultInjector {
    /// Replaces the faults.
    pub fn set(&self, faults: Faults) {
        locked(&self.state).faults = faults;
    }

    /// The current faults.
    #[must_use]
    pub fn get(&self) -> Faults {
        locked(&self.state).faults.clone()
    }

    /// Cuts the handle off from the store (`true`) or heals the partition (`false`).
    pub fn partition(&self, partitioned: bool) {
        locked(&self.state).faults.partitioned = partitioned;
    }

    /// Makes every call fail (`true`) or succeed (`false`) before reaching the store.
    pub fn fail_all(&self, fail: bool) {
        locked(&self.state).faults.error_rate = if fail { 1.0 } else { 0.0 };
    }

    fn plan(&self) -> Plan {
        let mut st = locked(&self.state);
        let FaultState { faults, rng } = &mut *st;
        if *faults == Faults::none() {
            return Plan {
                before: Duration::ZERO,
                after: Duration::ZERO,
                fail: false,
                lose_reply: false,
            };
        }
        let total = if faults.max_latency > faults.min_latency {
            let span = (faults.max_latency - faults.min_latency).as_nanos() as u64;
            faults.min_latency + Duration::from_nanos(rng.random_range(0..=span))
        } else {
            faults.min_latency
        };
        let before = total.mul_f64(rng.random::<f64>());
        Plan {
            before,
            after: total - before,
            fail: faults.partitioned || rng.random::<f64>() < faults.error_rate,
            lose_reply: rng.random::<f64>() < faults.lost_reply_rate,
        }
    }
}

struct Plan {
    before: Duration,
    after: Duration,
    fail: bool,
    lose_reply: bool,
}

async fn pause(clock: Option<&Arc<dyn Clock>>, d: Duration) {
    if d.is_zero() {
        return;
    }
    match clock {
        Some(c) => c.sleep(d).await,
        None => tokio::time::sleep(d).await,
    }
}

/// One participant's handle on a [`MemoryStore`]: a [`ResourceLock`] for electors in one
/// process, with fault injection for tests. Versions carry sequences, so fencing tokens are
/// write sequence numbers. Candidates waiting on it are woken at once when the holder changes,
/// a release in particular (unless the store was made
/// [without notifications](MemoryStore::without_notifications)); renewals do not wake them.
///
/// ```
/// use lease_elect::{MemoryLock, MemoryStore, ResourceLock, LeaderElectionRecord, LockError};
/// use std::time::SystemTime;
///
/// # tokio::runtime::Builder::new_current_thread().enable_time().build()?.block_on(async {
/// let store = MemoryStore::new("demo");
/// let a = MemoryLock::new(&store, "a");
/// let v1 = a.create(&LeaderElectionRecord::new("a", 15, SystemTime::now())).await?;
/// let v2 = a.update(&v1, &LeaderElectionRecord::new("a", 15, SystemTime::now())).await?;
/// let stale = a.update(&v1, &LeaderElectionRecord::new("a", 15, SystemTime::now())).await;
/// assert!(matches!(stale, Err(LockError::Conflict(_))));
/// assert!(v2.sequence() > v1.sequence());
/// # Ok::<(), LockError>(())
/// # })?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct MemoryLock {
    store: MemoryStore,
    identity: String,
    faults: FaultInjector,
    events: Arc<Mutex<Vec<ElectionEvent>>>,
    clock: Option<Arc<dyn Clock>>,
}

impl std::fmt::Debug for MemoryLock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryLock")
            .field("store", &self.store.inner.name)
            .field("identity", &self.identity)
            .field("faults", &self.faults.get())
            .finish_non_exhaustive()
    }
}

impl MemoryLock {
    /// A handle on `store` for the participant `identity`, without faults.
    #[must_use]
    pub fn new(store: &MemoryStore, identity: impl Into<String>) -> Self {
        MemoryLock {
            store: store.clone(),
            identity: identity.into(),
            faults: FaultInjector {
                state: Arc::new(Mutex::new(FaultState {
                    faults: Faults::none(),
                    rng: SmallRng::seed_from_u64(0),
                })),
            },
            events: Arc::default(),
            clock: None,
        }
    }

    /// Seeds the fault injector's random numbers (default 0), for reproducible faults.
    #[must_use]
    pub fn with_seed(self, seed: u64) -> Self {
        locked(&self.faults.state).rng = SmallRng::seed_from_u64(seed);
        self
    }

    /// Sleeps injected latency on `clock` instead of tokio's timers (for simulations that
    /// drive time themselves).
    #[must_use]
    pub fn with_clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(Arc::new(clock));
        self
    }

    /// The fault injector of this handle.
    #[must_use]
    pub fn faults(&self) -> &FaultInjector {
        &self.faults
    }

    /// The store.
    #[must_use]
    pub fn store(&self) -> &MemoryStore {
        &self.store
    }

    /// The events recorded through this handle so far.
    #[must_use]
    pub fn events(&self) -> Vec<ElectionEvent> {
        locked(&self.events).clone()
    }

    async fn call<T>(
        &self,
        is_write: bool,
        op: impl FnOnce(&mut Stored) -> Result<T, LockError>,
    ) -> Result<T, LockError> {
        let plan = self.faults.plan();
        pause(self.clock.as_ref(), plan.before).await;
        if plan.fail {
            pause(self.clock.as_ref(), plan.after).await;
            return Err(LockError::retryable("injected fault: store unreachable"));
        }
        let (result, changed) = {
            let mut st = locked(&self.store.inner.stored);
            let before = st.sequence;
            let result = op(&mut st);
            let changed = (st.sequence != before).then(|| match &st.record {
                Some((r, s)) => (Some(*s), Some(r.holder_identity.clone())),
                None => (None, None),
            });
            (result, changed)
        };
        if let Some(current) = changed {
            self.store.inner.changed.send_replace(current);
        }
        pause(self.clock.as_ref(), plan.after).await;
        if is_write && plan.lose_reply && result.is_ok() {
            return Err(LockError::retryable(
                "injected fault: response lost after the write",
            ));
        }
        result
    }
}

#[async_trait]
impl ResourceLock for MemoryLock {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        self.call(false, |st| {
            Ok(st
                .record
                .as_ref()
                .map(|(r, s)| (r.clone(), Version::from_sequence(*s))))
        })
        .await
    }

    async fn create(&self, record: &LeaderElectionRecord) -> Result<Version, LockError> {
        self.call(true, |st| {
            if st.record.is_some() {
                return Err(LockError::Conflict("record already exists".into()));
            }
            st.sequence += 1;
            st.record = Some((record.clone(), st.sequence));
            Ok(Version::from_sequence(st.sequence))
        })
        .await
    }

    async fn update(
        &self,
        expected: &Version,
        record: &LeaderElectionRecord,
    ) -> Result<Version, LockError> {
        self.call(true, |st| {
            match &st.record {
                None => return Err(LockError::Conflict("no record to update".into())),
                Some((_, s)) if Some(*s) != expected.sequence() => {
                    return Err(LockError::Conflict(format!(
                        "expected version {expected}, found {s}"
                    )));
                }
                Some(_) => {}
            }
            st.sequence += 1;
            st.record = Some((record.clone(), st.sequence));
            Ok(Version::from_sequence(st.sequence))
        })
        .await
    }

    async fn delete(&self, expected: &Version) -> Result<(), LockError> {
        self.call(true, |st| match &st.record {
            Some((_, s)) if Some(*s) == expected.sequence() => {
                st.record = None;
                st.sequence += 1;
                Ok(())
            }
            _ => Err(LockError::Conflict("record changed or gone".into())),
        })
        .await
    }

    async fn wait_for_change(&self, seen: Option<&Version>) {
        if !self.store.inner.notify {
            std::future::pending::<()>().await;
        }
        let seen = seen.and_then(Version::sequence);
        let mut rx = self.store.inner.changed.subscribe();
        let (current, holder) = self.store.current();
        if current != seen {
            return;
        }
        // Renewals are not worth a wake-up; a change of holder (a release, a takeover, a
        // delete) is. The sender lives as long as the store we hold.
        let _ = rx.wait_for(|(_, h)| *h != holder).await;
    }

    fn identity(&self) -> &str {
        &self.identity
    }

    fn describe(&self) -> String {
        format!("memory:{}", self.store.inner.name)
    }

    fn record_event(&self, event: &ElectionEvent) {
        locked(&self.events).push(event.clone());
    }
}
