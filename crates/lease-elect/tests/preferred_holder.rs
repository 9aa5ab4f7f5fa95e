//! Electors honour `preferredHolder` (coordinated leader election's request to step down), in
//! simulated time: the holder stops leading and releases at once, the preferred candidate takes
//! the lease over at once, the others (the one that stepped down included) leave it to the
//! preferred one for the released record's lease (1 s) and take over when the preferred one
//! does not come. Leadership never overlaps.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use lease_elect::{
    Clock, Instant, LeaderCallbacks, LeaderElectionRecord, LeaderElector, LeaderGuard, MemoryLock,
    MemoryStore, ResourceLock, SimClock,
};

/// A term: identity, start, end.
type Term = (String, Instant, Option<Instant>);

/// Terms on one simulated clock.
#[derive(Clone, Default)]
struct Terms(Arc<Mutex<Vec<Term>>>);

struct Watch {
    id: String,
    terms: Terms,
    clock: SimClock,
}

#[async_trait]
impl LeaderCallbacks for Watch {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        let index = {
            let mut t = self.terms.0.lock().unwrap();
            t.push((self.id.clone(), self.clock.now(), None));
            t.len() - 1
        };
        let _ = index;
        guard.lost().await;
    }

    /// The term's end (`run` drops the work future when the term ends, so the end is
    /// recorded here).
    fn on_stopped_leading(&self) {
        let mut t = self.terms.0.lock().unwrap();
        if let Some(term) = t.iter_mut().rev().find(|t| t.0 == self.id && t.2.is_none()) {
            term.2 = Some(self.clock.now());
        }
    }
}

impl Terms {
    fn leaders(&self) -> Vec<String> {
        self.0.lock().unwrap().iter().map(|t| t.0.clone()).collect()
    }

    /// No two terms overlap.
    fn check_no_overlap(&self) {
        let t = self.0.lock().unwrap();
        for (i, a) in t.iter().enumerate() {
            for b in &t[i + 1..] {
                let a_end =
                    a.2.expect("a later term starts only after an earlier one ended");
                assert!(a_end <= b.1, "terms overlap: {a:?} and {b:?}");
            }
        }
    }
}

/// A coordinator's write: the current record with `preferredHolder` set.
async fn prefer(store: &MemoryStore, who: &str) {
    let lock = MemoryLock::new(store, "coordinator");
    let (mut record, version): (LeaderElectionRecord, _) =
        lock.get().await.unwrap().expect("a record");
    record.preferred_holder = Some(who.to_owned());
    lock.update(&version, &record).await.unwrap();
}

/// Runs one elector per identity on `store`, all on `clock`, each `run` again after it
/// returns; "a" starts first and leads.
async fn start(
    store: &MemoryStore,
    ids: &[&str],
    terms: &Terms,
    clock: &SimClock,
) -> Vec<(LeaderElector, tokio::task::JoinHandle<()>)> {
    let mut out = Vec::new();
    for id in ids {
        let clock = clock.clone();
        let config = lease_elect::ElectionConfig::builder()
            .lock(MemoryLock::new(store, *id))
            .shared_clock(Arc::new(clock.clone()))
            .lease_duration(Duration::from_secs(10))
            .renew_deadline(Duration::from_secs(6))
            .retry_period(Duration::from_secs(1))
            .seed(7)
            .build()
            .unwrap();
        let elector = LeaderElector::new(config);
        let watch = Watch {
            id: (*id).to_owned(),
            terms: terms.clone(),
            clock,
        };
        let e = elector.clone();
        let task = tokio::spawn(async move {
            loop {
                e.run(&watch, std::future::pending::<()>()).await;
            }
        });
        out.push((elector, task));
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    out
}

#[tokio::test(start_paused = true)]
async fn the_holder_steps_down_and_the_preferred_candidate_takes_over_at_once() {
    let store = MemoryStore::new("cle");
    let terms = Terms::default();
    let clock = SimClock::new();
    let electors = start(&store, &["a", "b", "c"], &terms, &clock).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(terms.leaders(), ["a"]);
    let asked = clock.now();
    prefer(&store, "c").await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert_eq!(terms.leaders(), ["a", "c"], "b never leads");
    let t = terms.0.lock().unwrap().clone();
    let a_end = t[0].2.expect("a stepped down");
    let c_start = t[1].1;
    // a notices at its next renewal (retry period 1 s); c wakes on the released record.
    assert!(
        a_end.saturating_duration_since(asked) <= Duration::from_secs(1),
        "a stepped down within a retry period: {:?}",
        a_end.saturating_duration_since(asked)
    );
    assert!(
        c_start.saturating_duration_since(a_end) < Duration::from_millis(10),
        "c took over at once: {:?}",
        c_start.saturating_duration_since(a_end)
    );
    terms.check_no_overlap();
    let (record, _) = store.peek().unwrap();
    assert_eq!(record.holder_identity, "c");
    assert_eq!(
        record.preferred_holder.as_deref(),
        Some("c"),
        "kept while it names the holder"
    );
    assert_eq!(record.leader_transitions, 1);
    for (_, task) in electors {
        task.abort();
    }
}

#[tokio::test(start_paused = true)]
async fn without_the_preferred_candidate_a_candidate_takes_over_after_the_released_lease() {
    let store = MemoryStore::new("cle");
    let terms = Terms::default();
    let clock = SimClock::new();
    let electors = start(&store, &["a", "b"], &terms, &clock).await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let asked = clock.now();
    prefer(&store, "gone").await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    // Any candidate, the one that stepped down included, may lead next.
    assert_eq!(terms.leaders().len(), 2, "{:?}", terms.leaders());
    let t = terms.0.lock().unwrap().clone();
    let next_start = t[1].1;
    // a steps down within 1 s; the candidates wait out the released record's 1 s lease (plus
    // at most a jittered retry period).
    let gap = next_start.saturating_duration_since(asked);
    assert!(
        gap >= Duration::from_secs(1) && gap <= Duration::from_millis(3_300),
        "{gap:?}"
    );
    terms.check_no_overlap();
    assert_eq!(store.peek().unwrap().0.preferred_holder, None, "overridden");
    for (_, task) in electors {
        task.abort();
    }
}
