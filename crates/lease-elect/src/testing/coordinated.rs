//! The coordinated-election check on a backend, in real time: candidates registered in the
//! backend's [`CandidateStore`], coordinated electors and an elected [`Coordinator`] on the
//! backend's locks.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::LockFactory;
use super::election::Timing;
use crate::coordinated::{Candidate, CandidateStore, CandidateVersion, Coordinator};
use crate::{ElectionConfig, LeaderCallbacks, LeaderElector, LeaderGuard, on_leading};

/// What [`coordinated_election`] measured.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct CoordinatedReport {
    /// The identities that led, in order.
    pub leaders: Vec<String>,
    /// From the coordinator's start to the first term (nobody led before).
    pub first_term: Duration,
    /// From the crash of the first leader (no release, no deregistration) to the next term.
    pub crash_takeover: Duration,
    /// From the graceful stop of the second leader to the next term.
    pub handover: Duration,
}

type Term = (String, tokio::time::Instant, Option<tokio::time::Instant>);

struct Watch {
    id: String,
    version: CandidateVersion,
    terms: Arc<Mutex<Vec<Term>>>,
    candidates: Arc<dyn CandidateStore>,
    violations: Arc<Mutex<Vec<String>>>,
}

#[async_trait]
impl LeaderCallbacks for Watch {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        if let Ok(live) = self.candidates.candidates().await
            && live.iter().any(|c| c.binary_version < self.version)
        {
            crate::elector::locked(&self.violations).push(format!(
                "{} ({}) leads beside older candidates {live:?}",
                self.id, self.version
            ));
        }
        crate::elector::locked(&self.terms).push((
            self.id.clone(),
            tokio::time::Instant::now(),
            None,
        ));
        guard.lost().await;
    }

    fn on_stopped_leading(&self) {
        let mut t = crate::elector::locked(&self.terms);
        if let Some(term) = t.iter_mut().rev().find(|t| t.0 == self.id && t.2.is_none()) {
            term.2 = Some(tokio::time::Instant::now());
        }
    }
}

struct Replica {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

fn config(lock: Arc<dyn crate::ResourceLock>, timing: Timing, coordinated: bool) -> ElectionConfig {
    ElectionConfig::builder()
        .shared_lock(lock)
        .lease_duration(timing.lease)
        .renew_deadline(timing.renew)
        .retry_period(timing.retry)
        .release_on_cancel(true)
        .coordinated(coordinated)
        // The coordinator's own election on a fresh lock at once: this check times the
        // coordinated election, not a first election.
        .absent_record_wait(false)
        .build()
        .expect("a valid timing")
}

/// Polls every 5 ms until `terms` holds more than `n` terms, or `bound` passed.
async fn wait_for_term(terms: &Mutex<Vec<Term>>, n: usize, bound: Duration) {
    let until = tokio::time::Instant::now() + bound;
    while crate::elector::locked(terms).len() <= n && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Coordinated leader election under `OldestEmulationVersion` on a backend, with coordinated
/// electors ([`ElectionConfigBuilder::coordinated`](crate::ElectionConfigBuilder::coordinated))
/// registering in `candidates` every `registration_ttl / 4` (`registration_ttl` is the
/// registry's time to live, at most the lease):
///
/// 1. `e2` then `e1` (1.33) start without a coordinator: for a lease nobody leads and no
///    record is written (electors never create it);
/// 2. the coordinator (elected on a lock of its own) starts: `e1` leads first (equal
///    versions, smallest identity), though `e2` registered first;
/// 3. `e3` (1.34) joins; `e1` crashes (no release, no deregistration): `e2` (1.33) leads
///    next, never `e3`, within two leases + slack (the coordinator waits for the record to
///    stay unchanged for the lease and for `e1`'s registration to expire);
/// 4. `e2` stops (deregisters, then releases, as
///    [`run_candidate`](crate::coordinated::run_candidate) leaves): `e3` leads within the
///    hand-over bound (a coordinator pass and a retry period).
///
/// Throughout: `e3` never leads while a 1.33 candidate is live, and terms never overlap.
///
/// # Panics
/// When a check fails.
pub async fn coordinated_election(
    factory: &impl LockFactory,
    candidates: Arc<dyn CandidateStore>,
    registration_ttl: Duration,
    timing: Timing,
) -> CoordinatedReport {
    let name = super::unique_name("cle");
    let terms: Arc<Mutex<Vec<Term>>> = Arc::default();
    let violations: Arc<Mutex<Vec<String>>> = Arc::default();
    let every = registration_ttl / 4;

    let start = |id: &'static str, version: &str, lock: Arc<dyn crate::ResourceLock>| {
        let version: CandidateVersion = version.parse().expect("a version");
        let candidate = Candidate::new(id, "1.33".parse().expect("a version"), version);
        let watch = Watch {
            id: id.to_owned(),
            version,
            terms: Arc::clone(&terms),
            candidates: Arc::clone(&candidates),
            violations: Arc::clone(&violations),
        };
        let candidates = Arc::clone(&candidates);
        let elector = LeaderElector::new(config(lock, timing, true));
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            let clock = crate::TokioClock::new();
            let shutdown = async {
                let _ = stopped.await;
            };
            crate::coordinated::run_candidate(
                &elector,
                &watch,
                &*candidates,
                &candidate,
                &clock,
                every,
                shutdown,
            )
            .await
            .expect("deregister the candidate");
        });
        Replica { stop, task }
    };

    // 1. No coordinator: nobody leads, nothing is written.
    let mut e2 = Some(start("e2", "1.33", factory.open(&name, "e2").await));
    tokio::time::sleep(Duration::from_millis(100)).await;
    let e1 = start("e1", "1.33", factory.open(&name, "e1").await);
    tokio::time::sleep(timing.lease + timing.slack).await;
    let probe = factory.open(&name, "probe").await;
    assert!(
        crate::elector::locked(&terms).is_empty(),
        "a coordinated elector led without a coordinator"
    );
    assert_eq!(
        probe.get().await.expect("read the record").map(|r| r.0),
        None,
        "a coordinated elector created the record"
    );

    // 2. The coordinator starts.
    let coordinator_lock = format!("{name}-coord");
    let elector = LeaderElector::new(config(
        factory.open(&coordinator_lock, "coordinator-1").await,
        timing,
        false,
    ));
    let coordinator = Arc::new(
        Coordinator::new(
            factory.open(&name, "coordinator-1").await,
            Arc::clone(&candidates),
        )
        .with_lease_duration(timing.lease)
        .expect("whole seconds"),
    );
    let period = timing.retry / 2;
    let coordinator_started = tokio::time::Instant::now();
    let coordinator_task = tokio::spawn(async move {
        let clock = crate::TokioClock::new();
        let work = on_leading(move |guard| {
            let coordinator = Arc::clone(&coordinator);
            async move { coordinator.run(&guard, &clock, period).await }
        });
        loop {
            elector.run(&work, std::future::pending::<()>()).await;
        }
    });
    wait_for_term(&terms, 0, timing.lease * 2 + timing.slack).await;
    let first_term = crate::elector::locked(&terms)
        .first()
        .map(|t| t.1.saturating_duration_since(coordinator_started))
        .expect("a leader after the coordinator started");

    // 3. e3 (1.34) joins; the leader e1 crashes.
    let e3 = start("e3", "1.34", factory.open(&name, "e3").await);
    tokio::time::sleep(timing.lease).await;
    let before = crate::elector::locked(&terms).len();
    e1.task.abort();
    let _ = e1.task.await;
    let crashed = tokio::time::Instant::now();
    {
        // The crash ended e1's work: its term ends here.
        let mut t = crate::elector::locked(&terms);
        if let Some(term) = t.iter_mut().rev().find(|t| t.0 == "e1" && t.2.is_none()) {
            term.2 = Some(crashed);
        }
    }
    wait_for_term(&terms, before, timing.lease * 3 + timing.slack).await;
    let crash_takeover = crate::elector::locked(&terms)
        .get(before)
        .map(|t| t.1.saturating_duration_since(crashed))
        .expect("a leader after the crash");

    // 4. e2 stops gracefully.
    tokio::time::sleep(timing.lease / 2).await;
    let before = crate::elector::locked(&terms).len();
    let replica = e2.take().expect("e2 runs");
    let _ = replica.stop.send(());
    replica.task.await.expect("the replica's task");
    let stopped = tokio::time::Instant::now();
    wait_for_term(&terms, before, timing.lease * 2).await;
    let handover = crate::elector::locked(&terms)
        .get(before)
        .map(|t| t.1.saturating_duration_since(stopped))
        .expect("a leader after the graceful stop");
    tokio::time::sleep(timing.lease / 2).await;

    let _ = e3.stop.send(());
    e3.task.await.expect("the replica's task");
    coordinator_task.abort();

    let violations = crate::elector::locked(&violations).clone();
    assert!(violations.is_empty(), "{violations:?}");
    let terms = crate::elector::locked(&terms).clone();
    for pair in terms.windows(2) {
        assert!(
            pair[0].2.is_some_and(|end| end <= pair[1].1),
            "terms overlap: {pair:?}"
        );
    }
    let leaders: Vec<String> = terms.iter().map(|t| t.0.clone()).collect();
    assert_eq!(
        leaders,
        ["e1", "e2", "e3"],
        "the strategy's choices, in order"
    );
    assert!(
        first_term <= period + timing.jittered_retry() + timing.slack,
        "the first term started {first_term:?} after the coordinator"
    );
    assert!(
        crash_takeover <= timing.lease * 2 + timing.jittered_retry() + timing.slack,
        "the take-over after the crash took {crash_takeover:?}"
    );
    assert!(
        handover <= timing.lease / 2 + timing.slack,
        "hand-over took {handover:?}"
    );
    CoordinatedReport {
        leaders,
        first_term,
        crash_takeover,
        handover,
    }
}
