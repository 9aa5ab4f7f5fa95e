//! The coordinated-election check on a backend, in real time: candidates registered in the
//! backend's [`CandidateStore`], electors and an elected [`Coordinator`] on the backend's
//! locks.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;

use super::LockFactory;
use super::election::Timing;
use crate::coordinated::{Candidate, CandidateStore, CandidateVersion, Coordinator, Strategy};
use crate::{ElectionConfig, LeaderCallbacks, LeaderElector, LeaderGuard, RunOutcome, on_leading};

/// What [`upgrade_handover`] measured.
#[derive(Clone, Debug)]
pub struct CoordinatedReport {
    /// The identities that led, in order.
    pub leaders: Vec<String>,
    /// From the stop of the 1.33 leader to the start of the next term.
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

fn config(lock: Arc<dyn crate::ResourceLock>, timing: Timing) -> ElectionConfig {
    ElectionConfig::builder()
        .shared_lock(lock)
        .lease_duration(timing.lease)
        .renew_deadline(timing.renew)
        .retry_period(timing.retry)
        .release_on_cancel(true)
        .build()
        .expect("a valid timing")
}

/// A rolling upgrade under `OldestEmulationVersion` on a backend: `e1` and `e2` (binary 1.33)
/// run with an elected coordinator; once one leads, `e3` (1.34) joins; then the leader stops
/// (releasing and deregistering). Checks that the 1.33 replica left takes over within
/// `lease / 2 + slack` (the coordinator's pass plus a retry period, not a lease), that `e3`
/// never leads while a 1.33 candidate is registered, and that terms never overlap.
///
/// # Panics
/// When a check fails.
pub async fn upgrade_handover(
    factory: &impl LockFactory,
    candidates: Arc<dyn CandidateStore>,
    timing: Timing,
) -> CoordinatedReport {
    let name = super::unique_name("cle");
    let terms: Arc<Mutex<Vec<Term>>> = Arc::default();
    let violations: Arc<Mutex<Vec<String>>> = Arc::default();

    let coordinator_lock = format!("{name}-coord");
    let elector = LeaderElector::new(config(
        factory.open(&coordinator_lock, "coordinator-1").await,
        timing,
    ));
    let coordinator = Arc::new(Coordinator::new(
        factory.open(&name, "coordinator-1").await,
        Arc::clone(&candidates),
        Strategy::OldestEmulationVersion,
    ));
    let period = timing.retry / 2;
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

    let mut replicas = Vec::new();
    let start = |id: &'static str, version: &str, lock: Arc<dyn crate::ResourceLock>| {
        let version: CandidateVersion = version.parse().expect("a version");
        let candidate = Candidate {
            identity: id.to_owned(),
            emulation_version: "1.33".parse().expect("a version"),
            binary_version: version,
        };
        let watch = Watch {
            id: id.to_owned(),
            version,
            terms: Arc::clone(&terms),
            candidates: Arc::clone(&candidates),
            violations: Arc::clone(&violations),
        };
        let candidates = Arc::clone(&candidates);
        let elector = LeaderElector::new(config(lock, timing));
        let (stop, mut stopped) = tokio::sync::oneshot::channel::<()>();
        let task = tokio::spawn(async move {
            candidates
                .register(&candidate)
                .await
                .expect("register the candidate");
            loop {
                let outcome = elector
                    .run(&watch, async {
                        let _ = (&mut stopped).await;
                    })
                    .await;
                if outcome == RunOutcome::Cancelled {
                    break;
                }
            }
            candidates
                .deregister(&candidate.identity)
                .await
                .expect("deregister the candidate");
        });
        Replica { stop, task }
    };
    replicas.push(start("e1", "1.33", factory.open(&name, "e1").await));
    replicas.push(start("e2", "1.33", factory.open(&name, "e2").await));
    let settle = timing.lease * 2;
    tokio::time::sleep(settle).await;
    let first = crate::elector::locked(&terms)
        .last()
        .map(|t| t.0.clone())
        .expect("e1 or e2 leads");
    replicas.push(start("e3", "1.34", factory.open(&name, "e3").await));
    tokio::time::sleep(settle).await;

    // The leader stops.
    let before = crate::elector::locked(&terms).len();
    let index = if first == "e1" { 0 } else { 1 };
    let leader = replicas.remove(index);
    let _ = leader.stop.send(());
    leader.task.await.expect("the replica's task");
    let stopped = tokio::time::Instant::now();
    tokio::time::sleep(settle).await;

    for r in replicas {
        let _ = r.stop.send(());
        r.task.await.expect("the replica's task");
    }
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
    let other = if first == "e1" { "e2" } else { "e1" };
    assert!(
        !leaders.iter().any(|l| l == "e3"),
        "e3 (1.34) led: {leaders:?}"
    );
    assert_eq!(
        leaders.get(before).map(String::as_str),
        Some(other),
        "the 1.33 replica left leads next: {leaders:?}"
    );
    let handover = terms[before].1.saturating_duration_since(stopped);
    assert!(
        handover <= timing.lease / 2 + timing.slack,
        "hand-over took {handover:?}"
    );
    CoordinatedReport { leaders, handover }
}
