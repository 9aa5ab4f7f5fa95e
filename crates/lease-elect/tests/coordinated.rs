//! Coordinated leader election in simulated time: a rolling upgrade of three coordinated
//! electors from 1.33 to 1.34 under `OldestEmulationVersion`, with the coordinator elected on
//! a lock of its own. Nobody leads before the coordinator runs, the first leader is the
//! strategy's pick, an upgraded (1.34) elector never leads while a 1.33 candidate is
//! registered, the leader hands over at once when the strategy moves, a leader that crashes
//! without deregistering is replaced by the strategy's pick, and terms never overlap.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use lease_elect::coordinated::{
    Candidate, CandidateStore, CandidateVersion, Coordinator, MemoryCandidates, run_candidate,
};
use lease_elect::{
    Clock, ElectionConfig, Instant, LeaderCallbacks, LeaderElector, LeaderGuard, MemoryLock,
    MemoryStore, SimClock, on_leading,
};

/// A term: identity, binary version, start, end.
type Term = (String, CandidateVersion, Instant, Option<Instant>);

#[derive(Clone, Default)]
struct Terms(Arc<Mutex<Vec<Term>>>);

struct Watch {
    id: String,
    version: CandidateVersion,
    terms: Terms,
    clock: SimClock,
    candidates: MemoryCandidates,
}

#[async_trait]
impl LeaderCallbacks for Watch {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        // The invariant: no 1.34 leader while a 1.33 candidate is registered.
        let live = self.candidates.candidates().await.unwrap();
        if self.version == v("1.34") {
            assert!(
                live.iter().all(|c| c.binary_version == v("1.34")),
                "{} (1.34) leads beside 1.33 candidates {live:?}",
                self.id
            );
        }
        self.terms
            .0
            .lock()
            .unwrap()
            .push((self.id.clone(), self.version, self.clock.now(), None));
        guard.lost().await;
    }

    fn on_stopped_leading(&self) {
        let mut t = self.terms.0.lock().unwrap();
        if let Some(term) = t.iter_mut().rev().find(|t| t.0 == self.id && t.3.is_none()) {
            term.3 = Some(self.clock.now());
        }
    }
}

fn v(s: &str) -> CandidateVersion {
    s.parse().unwrap()
}

fn config(lock: MemoryLock, clock: &SimClock, coordinated: bool) -> ElectionConfig {
    ElectionConfig::builder()
        .lock(lock)
        .coordinated(coordinated)
        // The coordinators' own election on a fresh lock at once: these tests time the
        // coordinated election, not a first election.
        .absent_record_wait(false)
        .shared_clock(Arc::new(clock.clone()))
        .lease_duration(Duration::from_secs(10))
        .renew_deadline(Duration::from_secs(6))
        .retry_period(Duration::from_secs(1))
        .release_on_cancel(true)
        .seed(11)
        .build()
        .unwrap()
}

/// One replica: registers as a candidate (again every second), runs a coordinated election
/// until stopped, then releases and deregisters. Aborting its task is a crash: no release, no
/// deregistration.
struct Replica {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

fn start_replica(
    store: &MemoryStore,
    id: &str,
    version: &str,
    clock: &SimClock,
    candidates: &MemoryCandidates,
    terms: &Terms,
) -> Replica {
    let registry = Arc::new(candidates.clone());
    start_replica_in(store, id, version, clock, candidates, registry, terms)
}

/// [`start_replica`] registering through `registry` (`candidates` or a wrapper of it).
fn start_replica_in(
    store: &MemoryStore,
    id: &str,
    version: &str,
    clock: &SimClock,
    candidates: &MemoryCandidates,
    registry: Arc<dyn CandidateStore>,
    terms: &Terms,
) -> Replica {
    let candidate = Candidate::new(id, v("1.33"), v(version));
    let elector = LeaderElector::new(config(MemoryLock::new(store, id), clock, true));
    let watch = Watch {
        id: id.to_owned(),
        version: v(version),
        terms: terms.clone(),
        clock: clock.clone(),
        candidates: candidates.clone(),
    };
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let clock = clock.clone();
    let task = tokio::spawn(async move {
        let shutdown = async {
            let _ = stopped.await;
        };
        let every = Duration::from_secs(1);
        run_candidate(
            &elector, &watch, &*registry, &candidate, &clock, every, shutdown,
        )
        .await
        .unwrap();
    });
    Replica { stop, task }
}

/// Two coordinators elected on a lock of their own; the leader reconciles `store`'s record
/// every 200 ms.
fn start_coordinators(
    store: &MemoryStore,
    candidates: &MemoryCandidates,
    clock: &SimClock,
) -> Vec<tokio::task::JoinHandle<()>> {
    let coordinator_store = MemoryStore::new("coordinator");
    let mut coordinators = Vec::new();
    for id in ["coord-1", "coord-2"] {
        let elector = LeaderElector::new(config(
            MemoryLock::new(&coordinator_store, id),
            clock,
            false,
        ));
        let coordinator = Arc::new(
            Coordinator::new(
                Arc::new(MemoryLock::new(store, id)),
                Arc::new(candidates.clone()),
            )
            .with_clock(Arc::new(clock.clone()))
            .with_lease_duration(Duration::from_secs(10))
            .unwrap(),
        );
        let clock = clock.clone();
        coordinators.push(tokio::spawn(async move {
            let work = on_leading(move |guard| {
                let coordinator = Arc::clone(&coordinator);
                let clock = clock.clone();
                async move {
                    coordinator
                        .run(&guard, &clock, Duration::from_millis(200))
                        .await
                }
            });
            loop {
                elector.run(&work, std::future::pending::<()>()).await;
            }
        }));
    }
    coordinators
}

async fn stop_replica(replica: Replica) {
    let _ = replica.stop.send(());
    replica.task.await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn rolling_upgrade_under_oldest_emulation_version() {
    let clock = SimClock::new();
    let store = MemoryStore::new("kube-scheduler");
    // Registrations live 3 s; replicas renew them every second.
    let candidates = MemoryCandidates::new(Arc::new(clock.clone()), Duration::from_secs(3));
    let terms = Terms::default();

    // Three 1.33 replicas start; e3 first, e1 last. No coordinator yet: nobody leads and no
    // record is written, however long they wait (they never create it themselves).
    let mut replicas: Vec<Option<Replica>> = Vec::new();
    for id in ["e3", "e2", "e1"] {
        replicas.push(Some(start_replica(
            &store,
            id,
            "1.33",
            &clock,
            &candidates,
            &terms,
        )));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    replicas.reverse(); // replicas[i] is e(i+1)
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(leaders(&terms).is_empty());
    assert!(store.peek().is_none(), "an elector created the record");

    // The coordinators' own election: two coordinators, one leads and reconciles every 200 ms.
    let coordinators_start = clock.now();
    let coordinators = start_coordinators(&store, &candidates, &clock);
    tokio::time::sleep(Duration::from_secs(20)).await;
    // The strategy's pick (equal versions: the smallest identity) leads first, though it
    // registered last, within a coordinator pass and a retry period.
    assert_eq!(leaders(&terms), ["e1"]);
    let first = terms.0.lock().unwrap()[0].2;
    assert!(
        first.saturating_duration_since(coordinators_start) < Duration::from_millis(1_500),
        "the first term started {:?} after the coordinators",
        first.saturating_duration_since(coordinators_start)
    );
    let record = store.peek().unwrap().0;
    assert_eq!(record.holder_identity, "e1");
    assert_eq!(record.preferred_holder, None);
    assert_eq!(record.strategy.as_deref(), Some("OldestEmulationVersion"));

    // Upgrade the followers one by one, then the leader: each replica stops (releasing what
    // it holds, deregistering) and starts again as 1.34.
    for (i, id) in [(2, "e3"), (1, "e2"), (0, "e1")] {
        stop_replica(replicas[i].take().unwrap()).await;
        replicas[i] = Some(start_replica(
            &store,
            id,
            "1.34",
            &clock,
            &candidates,
            &terms,
        ));
        tokio::time::sleep(Duration::from_secs(20)).await;
    }
    // e1 (1.33) led until it was upgraded. With all three on 1.34 the strategy's last
    // tie-break, the smallest identity, picks e1 again. While e1 was away (deregistered, not
    // yet registered again) the coordinator may have given the released lease to e2, the
    // pick then; e1 took it back as soon as it was registered again. No 1.34 replica led while
    // a 1.33 one was registered (checked at every start of a term).
    let t = terms.0.lock().unwrap().clone();
    let led: Vec<(&str, CandidateVersion)> = t.iter().map(|t| (t.0.as_str(), t.1)).collect();
    assert!(
        led == [("e1", v("1.33")), ("e1", v("1.34"))]
            || led == [("e1", v("1.33")), ("e2", v("1.34")), ("e1", v("1.34"))],
        "{led:?}"
    );
    let (old_end, new_start) = (t[0].3.expect("e1 stopped"), t[1].2);
    assert!(
        new_start.saturating_duration_since(old_end) < Duration::from_millis(1_500),
        "hand-over took {:?}",
        new_start.saturating_duration_since(old_end)
    );
    let n = t.len();

    // A 1.33 replica joins (a rollback): the coordinator prefers it, the 1.34 leader steps
    // down at its next renewal and the 1.33 replica takes over at once.
    let joined = clock.now();
    replicas.push(Some(start_replica(
        &store,
        "e4",
        "1.33",
        &clock,
        &candidates,
        &terms,
    )));
    tokio::time::sleep(Duration::from_secs(20)).await;
    let t = terms.0.lock().unwrap().clone();
    let led: Vec<&str> = t[n - 1..].iter().map(|t| t.0.as_str()).collect();
    assert_eq!(led, ["e1", "e4"]);
    let (e1_end, e4_start) = (t[n - 1].3.expect("e1 stepped down"), t[n].2);
    assert!(
        e4_start.saturating_duration_since(joined) < Duration::from_millis(1_500),
        "e4 led {:?} after joining",
        e4_start.saturating_duration_since(joined)
    );
    assert!(e1_end <= e4_start);

    // e4 crashes: no release, no deregistration. Its registration expires after 3 s, its
    // lease after 10 s without a change (on the coordinator's clock); then the coordinator
    // gives the lease to the strategy's pick among the live candidates, e1, and to no one
    // before.
    let crashed = clock.now();
    let e4 = replicas.pop().flatten().unwrap();
    e4.task.abort();
    let _ = e4.task.await;
    tokio::time::sleep(Duration::from_secs(30)).await;
    let t = terms.0.lock().unwrap().clone();
    let led: Vec<&str> = t[n..].iter().map(|t| t.0.as_str()).collect();
    assert_eq!(led, ["e4", "e1"]);
    let takeover = t[n + 1].2.saturating_duration_since(crashed);
    assert!(
        takeover >= Duration::from_secs(6) && takeover < Duration::from_secs(12),
        "e1 led {takeover:?} after the crash (e4's term ends 6 s after its last renewal; the coordinator waits 10 s without a change)"
    );
    for pair in t.windows(2) {
        let end = pair[0].3.unwrap_or(crashed + Duration::from_secs(6));
        assert!(end <= pair[1].2, "overlap: {pair:?}");
    }
    for r in replicas.into_iter().flatten() {
        stop_replica(r).await;
    }
    for c in coordinators {
        c.abort();
    }
}

/// Candidates that disagree on the strategy (two at the newest binary version asking for
/// different ones): the coordinator writes nothing and nobody leads, as in kube.
#[tokio::test(start_paused = true)]
async fn candidates_that_disagree_on_the_strategy_elect_nobody() {
    let clock = SimClock::new();
    let store = MemoryStore::new("kube-scheduler");
    let candidates = MemoryCandidates::new(Arc::new(clock.clone()), Duration::from_secs(60));
    candidates
        .register(&Candidate::new("a", v("1.33"), v("1.34")))
        .await
        .unwrap();
    candidates
        .register(
            &Candidate::new("b", v("1.33"), v("1.34"))
                .with_strategy("example.com/other")
                .unwrap(),
        )
        .await
        .unwrap();
    candidates
        .register(&Candidate::new("c", v("1.32"), v("1.33")))
        .await
        .unwrap();
    let coordinator = Coordinator::new(
        Arc::new(MemoryLock::new(&store, "coordinator")),
        Arc::new(candidates.clone()),
    );
    let err = coordinator.reconcile().await.unwrap_err();
    assert_eq!(
        err.to_string(),
        "candidates \"a\", \"b\" at same binary version but received differing strategies OldestEmulationVersion, example.com/other"
    );
    assert!(store.peek().is_none());

    // b moves to the common strategy: the oldest emulation version, c, is picked.
    candidates
        .register(&Candidate::new("b", v("1.33"), v("1.34")))
        .await
        .unwrap();
    assert_eq!(coordinator.reconcile().await.unwrap().as_deref(), Some("c"));
    assert_eq!(store.peek().unwrap().0.holder_identity, "c");

    // A strategy this crate does not implement, asked by the newest binary: the record's
    // strategy follows, no holder is assigned, the current one stays.
    candidates
        .register(
            &Candidate::new("d", v("1.33"), v("1.35"))
                .with_strategy("example.com/other")
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(coordinator.reconcile().await.unwrap(), None);
    let record = store.peek().unwrap().0;
    assert_eq!(record.strategy.as_deref(), Some("example.com/other"));
    assert_eq!(record.holder_identity, "c");
}

/// A registry whose deregistration takes a second (a slow backend).
struct SlowDeregistration(MemoryCandidates);

#[async_trait]
impl CandidateStore for SlowDeregistration {
    async fn register(&self, candidate: &Candidate) -> Result<(), lease_elect::LockError> {
        self.0.register(candidate).await
    }
    async fn deregister(&self, identity: &str) -> Result<(), lease_elect::LockError> {
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.0.deregister(identity).await
    }
    async fn candidates(&self) -> Result<Vec<Candidate>, lease_elect::LockError> {
        self.0.candidates().await
    }
}

/// A leader that stops gracefully hands over at once even when its deregistration is slow:
/// `run_candidate` deregisters before it releases, so the coordinator never sees the
/// released lease while the leaving candidate is still registered (it would give the lease
/// back to it, and the next leader would wait the whole 10 s lease).
#[tokio::test(start_paused = true)]
async fn a_graceful_stop_hands_over_at_once_with_a_slow_registry() {
    let clock = SimClock::new();
    let store = MemoryStore::new("kube-scheduler");
    let candidates = MemoryCandidates::new(Arc::new(clock.clone()), Duration::from_secs(3));
    let terms = Terms::default();
    let slow = Arc::new(SlowDeregistration(candidates.clone()));
    let e1 = start_replica_in(&store, "e1", "1.33", &clock, &candidates, slow, &terms);
    let e2 = start_replica(&store, "e2", "1.33", &clock, &candidates, &terms);
    let coordinators = start_coordinators(&store, &candidates, &clock);
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(leaders(&terms), ["e1"]);

    stop_replica(e1).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(leaders(&terms), ["e1", "e2"]);
    let t = terms.0.lock().unwrap().clone();
    let gap = t[1]
        .2
        .saturating_duration_since(t[0].3.expect("e1 stopped"));
    assert!(
        gap <= Duration::from_millis(1_500),
        "hand-over took {gap:?}"
    );
    stop_replica(e2).await;
    for c in coordinators {
        c.abort();
    }
}

fn leaders(terms: &Terms) -> Vec<String> {
    terms
        .0
        .lock()
        .unwrap()
        .iter()
        .map(|t| t.0.clone())
        .collect()
}

/// The backend check of `lease_elect::testing::coordinated` on `MemoryLock` with
/// `MemoryCandidates`, in real time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinated_election_on_memory() {
    use lease_elect::ResourceLock;
    use lease_elect::testing::LockFactory;

    #[derive(Default)]
    struct Factory(Mutex<std::collections::HashMap<String, MemoryStore>>);

    impl LockFactory for Factory {
        async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
            let store = self
                .0
                .lock()
                .unwrap()
                .entry(name.to_owned())
                .or_insert_with(|| MemoryStore::new(name))
                .clone();
            Arc::new(MemoryLock::new(&store, identity))
        }
    }

    let ttl = Duration::from_secs(2);
    let candidates = MemoryCandidates::new(Arc::new(lease_elect::TokioClock::new()), ttl);
    let report = lease_elect::testing::coordinated::coordinated_election(
        &Factory::default(),
        Arc::new(candidates),
        ttl,
        lease_elect::testing::election::Timing::default(),
    )
    .await;
    println!("{report:?}");
}

/// The backend check on `FileLock` with `FileCandidates`, in real time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn coordinated_election_on_files() {
    use lease_elect::testing::LockFactory;
    use lease_elect::{FileLock, ResourceLock};

    struct Factory(std::path::PathBuf);

    impl LockFactory for Factory {
        async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
            Arc::new(
                FileLock::new(self.0.join(format!("{name}.json")), identity)
                    .with_poll_interval(Duration::from_millis(50)),
            )
        }
    }

    let dir = std::env::temp_dir().join(lease_elect::testing::unique_name("cle-files"));
    std::fs::create_dir_all(&dir).unwrap();
    let ttl = Duration::from_secs(2);
    let candidates = lease_elect::coordinated::FileCandidates::new(dir.join("candidates"), ttl);
    let report = lease_elect::testing::coordinated::coordinated_election(
        &Factory(dir.clone()),
        Arc::new(candidates),
        ttl,
        lease_elect::testing::election::Timing::default(),
    )
    .await;
    println!("{report:?}");
    let _ = std::fs::remove_dir_all(&dir);
}
