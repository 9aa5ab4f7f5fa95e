//! lease-elect benchmarks.
//!
//! 1. Failover delay, measured in simulated time (paused tokio clock) with client-go's
//!    15 s / 10 s / 2 s settings, for this crate's elector and for client-go's algorithm
//!    (candidates retry only on their jittered tick: retry period x [1, 2.2]), after a leader
//!    crash and after a graceful release. Printed as a table before the criterion runs.
//! 2. Criterion: one `try_acquire_or_renew` on MemoryLock and FileLock, as leader (renewal)
//!    and as candidate (lease held by another).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use criterion::{Criterion, criterion_group};
use lease_elect::{
    ElectionConfig, FileLock, LeaderCallbacks, LeaderElector, LeaderGuard, MemoryLock, MemoryStore,
    SimClock, async_trait,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const LEASE: Duration = Duration::from_secs(15);
const RENEW: Duration = Duration::from_secs(10);
const RETRY: Duration = Duration::from_secs(2);
const RUNS: u64 = 300;

#[derive(Clone, Copy, PartialEq)]
enum Candidates {
    /// This crate's `LeaderElector::run`.
    Ours,
    /// client-go's loop: try, then sleep retry x (1 + U x 1.2), nothing else.
    ClientGo,
}

#[derive(Clone, Copy, PartialEq)]
enum Failure {
    Crash,
    Release,
}

struct Stamp(Arc<Mutex<Option<tokio::time::Instant>>>);

#[async_trait]
impl LeaderCallbacks for Stamp {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        self.0
            .lock()
            .unwrap()
            .get_or_insert(tokio::time::Instant::now());
        guard.lost().await;
    }
}

struct Quiet;

#[async_trait]
impl LeaderCallbacks for Quiet {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        guard.lost().await;
    }
}

fn config(store: &MemoryStore, id: &str, seed: u64, release: bool) -> ElectionConfig {
    ElectionConfig::builder()
        .lock(MemoryLock::new(store, id))
        .clock(SimClock::new())
        .lease_duration(LEASE)
        .renew_deadline(RENEW)
        .retry_period(RETRY)
        .release_on_cancel(release)
        .seed(seed)
        .build()
        .unwrap()
}

/// One failover in simulated time; returns the delay from the failure to the next leader.
fn failover(
    seed: u64,
    candidates: Candidates,
    failure: Failure,
    notify: bool,
    count: usize,
) -> Duration {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .unwrap();
    rt.block_on(async move {
        let mut rng = StdRng::seed_from_u64(seed);
        let store = if notify {
            MemoryStore::new("bench")
        } else {
            MemoryStore::without_notifications("bench")
        };
        let leader = LeaderElector::new(config(&store, "leader", rng.random(), true));
        assert!(leader.try_acquire_or_renew().await.unwrap());
        let stop = shutdown_token();
        let leader_task = {
            let leader = leader.clone();
            let stop = stop.clone();
            tokio::spawn(async move { leader.run(&Quiet, stop.wait()).await })
        };
        let stamp = Arc::new(Mutex::new(None));
        // Candidates start at random phases.
        for i in 0..count {
            let c = LeaderElector::new(config(&store, &format!("c{i}"), rng.random(), false));
            let stamp = Stamp(stamp.clone());
            let delay = Duration::from_millis(rng.random_range(0..2_000));
            let mut crng = StdRng::seed_from_u64(rng.random());
            tokio::spawn(async move {
                tokio::time::sleep(delay).await;
                match candidates {
                    Candidates::Ours => {
                        c.run(&stamp, std::future::pending()).await;
                    }
                    Candidates::ClientGo => loop {
                        if c.try_acquire_or_renew().await.unwrap_or(false) {
                            stamp
                                .0
                                .lock()
                                .unwrap()
                                .get_or_insert(tokio::time::Instant::now());
                            return;
                        }
                        let f = 1.0 + crng.random::<f64>() * 1.2;
                        tokio::time::sleep(RETRY.mul_f64(f)).await;
                    },
                }
            });
        }
        // Fail at a random phase of the leader's renewal cycle.
        let at = Duration::from_secs(60) + Duration::from_millis(rng.random_range(0..4_000));
        tokio::time::sleep(at).await;
        let failed_at = match failure {
            Failure::Crash => {
                leader_task.abort();
                tokio::time::Instant::now()
            }
            Failure::Release => {
                // The release write happens at this instant (the lock has no latency).
                let now = tokio::time::Instant::now();
                stop.fire();
                leader_task.await.unwrap();
                now
            }
        };
        loop {
            if let Some(t) = *stamp.lock().unwrap() {
                return t.saturating_duration_since(failed_at);
            }
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    })
}

/// A tiny one-shot shutdown signal.
#[derive(Clone)]
struct Token(Arc<tokio::sync::Notify>, Arc<Mutex<bool>>);

fn shutdown_token() -> Token {
    Token(Arc::default(), Arc::default())
}

impl Token {
    fn fire(&self) {
        *self.1.lock().unwrap() = true;
        self.0.notify_waiters();
    }
    fn wait(&self) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        let t = self.clone();
        Box::pin(async move {
            loop {
                let notified = t.0.notified();
                if *t.1.lock().unwrap() {
                    return;
                }
                notified.await;
            }
        })
    }
}

fn stats(mut v: Vec<Duration>) -> (f64, f64, f64) {
    v.sort();
    let s = |d: Duration| d.as_secs_f64();
    (
        s(v[v.len() / 2]),
        s(v[v.len() * 99 / 100]),
        s(*v.last().unwrap()),
    )
}

fn failover_table() {
    println!("failover delay in simulated time, 15/10/2 s, {RUNS} runs each (seconds):");
    println!("| case | median | p99 | max |");
    println!("|---|---|---|---|");
    let rows = [
        (
            "lease-elect, crash, 2 candidates, lock without notifications",
            Candidates::Ours,
            Failure::Crash,
            false,
            2,
        ),
        (
            "lease-elect, crash, 2 candidates, MemoryLock (notifies holder changes)",
            Candidates::Ours,
            Failure::Crash,
            true,
            2,
        ),
        (
            "lease-elect, crash, 1 candidate, lock without notifications",
            Candidates::Ours,
            Failure::Crash,
            false,
            1,
        ),
        (
            "client-go algorithm, crash, 2 candidates",
            Candidates::ClientGo,
            Failure::Crash,
            false,
            2,
        ),
        (
            "client-go algorithm, crash, 1 candidate",
            Candidates::ClientGo,
            Failure::Crash,
            false,
            1,
        ),
        (
            "lease-elect, release, 2 candidates, lock without notifications",
            Candidates::Ours,
            Failure::Release,
            false,
            2,
        ),
        (
            "lease-elect, release, 1 candidate, lock without notifications",
            Candidates::Ours,
            Failure::Release,
            false,
            1,
        ),
        (
            "lease-elect, release, 2 candidates, MemoryLock (wakes waiters)",
            Candidates::Ours,
            Failure::Release,
            true,
            2,
        ),
        (
            "client-go algorithm, release, 2 candidates",
            Candidates::ClientGo,
            Failure::Release,
            false,
            2,
        ),
        (
            "client-go algorithm, release, 1 candidate",
            Candidates::ClientGo,
            Failure::Release,
            false,
            1,
        ),
    ];
    for (name, c, f, notify, count) in rows {
        let delays: Vec<Duration> = (0..RUNS)
            .map(|seed| failover(seed, c, f, notify, count))
            .collect();
        let (med, p99, max) = stats(delays);
        println!("| {name} | {med:.2} | {p99:.2} | {max:.2} |");
    }
}

/// Real time: a FileLock release handed over to a waiting candidate (default 100 ms poll).
fn file_release_handover() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let dir = temp_dir("handover");
    let path = dir.join("leader.json");
    let mut delays = Vec::new();
    let mut rng = StdRng::seed_from_u64(1);
    for i in 0..20 {
        let cfg = |id: String| {
            ElectionConfig::builder()
                .lock(FileLock::new(&path, id))
                .build()
                .unwrap()
        };
        let a = LeaderElector::new(cfg(format!("a{i}")));
        let b = LeaderElector::new(cfg(format!("b{i}")));
        let wait = Duration::from_millis(rng.random_range(50..400));
        let d = rt.block_on(async move {
            while !a.try_acquire_or_renew().await.unwrap_or(false) {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            let waiter = tokio::spawn(async move { b.acquire(&Quiet).await });
            tokio::time::sleep(wait).await;
            let t0 = std::time::Instant::now();
            a.release().await.unwrap();
            let guard = waiter.await.unwrap();
            let d = t0.elapsed();
            drop(guard);
            d
        });
        delays.push(d);
    }
    let (med, p99, max) = stats(delays);
    println!(
        "| lease-elect, release, FileLock (100 ms poll, real time, 20 runs) | {med:.2} | {p99:.2} | {max:.2} |"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

fn temp_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "lease-elect-bench-{name}-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn try_acquire_or_renew(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("try_acquire_or_renew");

    let store = MemoryStore::new("bench");
    let leader = LeaderElector::new(
        ElectionConfig::builder()
            .lock(MemoryLock::new(&store, "leader"))
            .build()
            .unwrap(),
    );
    let candidate = LeaderElector::new(
        ElectionConfig::builder()
            .lock(MemoryLock::new(&store, "candidate"))
            .build()
            .unwrap(),
    );
    assert!(rt.block_on(leader.try_acquire_or_renew()).unwrap());
    group.bench_function("memory/leader_renew", |b| {
        b.iter(|| rt.block_on(leader.try_acquire_or_renew()).unwrap())
    });
    group.bench_function("memory/candidate_held", |b| {
        b.iter(|| rt.block_on(candidate.try_acquire_or_renew()).unwrap())
    });

    let dir = temp_dir("ops");
    let path = dir.join("leader.json");
    let fleader = LeaderElector::new(
        ElectionConfig::builder()
            .lock(FileLock::new(&path, "leader"))
            .build()
            .unwrap(),
    );
    let fcandidate = LeaderElector::new(
        ElectionConfig::builder()
            .lock(FileLock::new(&path, "candidate"))
            .build()
            .unwrap(),
    );
    assert!(rt.block_on(fleader.try_acquire_or_renew()).unwrap());
    group.bench_function("file/leader_renew", |b| {
        b.iter(|| rt.block_on(fleader.try_acquire_or_renew()).unwrap())
    });
    group.bench_function("file/candidate_held", |b| {
        b.iter(|| rt.block_on(fcandidate.try_acquire_or_renew()).unwrap())
    });
    group.finish();
    let _ = std::fs::remove_dir_all(&dir);
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(30)
        .measurement_time(Duration::from_secs(2))
        .warm_up_time(Duration::from_millis(500));
    targets = try_acquire_or_renew
}

fn main() {
    // `cargo test --benches` runs this binary with `--bench` absent: keep that quick.
    let benchmarking = std::env::args().any(|a| a == "--bench");
    if benchmarking {
        failover_table();
        file_release_handover();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
