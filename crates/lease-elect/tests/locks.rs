//! MemoryLock and FileLock behaviour, and leader-for-life.

mod common;

use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use common::{Recorder, held_by};
use lease_elect::{
    Backoff, ElectionConfig, Faults, FileLock, LeaderElectionRecord, LeaderElector, LeaderForLife,
    LockError, MemoryLock, MemoryStore, ResourceLock, SimClock,
};

fn temp_path(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "lease-elect-{name}-{}-{}",
        std::process::id(),
        SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join("leader.json")
}

fn rec(holder: &str) -> LeaderElectionRecord {
    LeaderElectionRecord::new(holder, 15, SystemTime::now())
}

#[tokio::test]
async fn file_lock_compare_and_swap() {
    let path = temp_path("cas");
    let a = FileLock::new(&path, "a");
    let b = FileLock::new(&path, "b");
    assert!(a.get().await.unwrap().is_none());
    let v1 = a.create(&rec("a")).await.unwrap();
    assert!(matches!(
        b.create(&rec("b")).await,
        Err(LockError::Conflict(_))
    ));
    let (got, v) = b.get().await.unwrap().unwrap();
    assert_eq!(v, v1);
    assert_eq!(got.holder_identity, "a");
    let v2 = a.update(&v1, &rec("a")).await.unwrap();
    assert!(v2.sequence() > v1.sequence());
    assert!(matches!(
        b.update(&v1, &rec("b")).await,
        Err(LockError::Conflict(_))
    ));
    // Delete keeps the counter, so versions (and tokens) keep increasing.
    assert!(matches!(b.delete(&v1).await, Err(LockError::Conflict(_))));
    a.delete(&v2).await.unwrap();
    assert!(a.get().await.unwrap().is_none());
    assert!(matches!(
        a.update(&v2, &rec("a")).await,
        Err(LockError::Conflict(_))
    ));
    let v3 = b.create(&rec("b")).await.unwrap();
    assert!(v3.sequence() > v2.sequence());
    // The record in the file is client-go's JSON.
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(r#""record":{"holderIdentity":"b","leaseDurationSeconds":15"#),
        "{text}"
    );
    // No temporary files are left behind.
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().contains(".tmp."))
        .collect();
    assert!(leftovers.is_empty());
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn file_lock_concurrent_writers_one_wins() {
    let path = temp_path("race");
    let a = FileLock::new(&path, "a");
    let v = a.create(&rec("a")).await.unwrap();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let l = FileLock::new(&path, format!("n{i}"));
        let v = v.clone();
        tasks.push(tokio::spawn(async move {
            l.update(&v, &rec(&format!("n{i}"))).await.is_ok()
        }));
    }
    let mut wins = 0;
    for t in tasks {
        wins += usize::from(t.await.unwrap());
    }
    assert_eq!(
        wins, 1,
        "exactly one compare-and-swap from the same version wins"
    );
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn corrupt_file_is_an_error_never_a_takeover() {
    for garbage in [
        &b"{\"version\":3,\"record\":{\"holderIdentity\":"[..],
        b"",
        b"null",
        b"{\"record\":null}",
    ] {
        let path = temp_path("corrupt");
        std::fs::write(&path, garbage).unwrap();
        let lock = FileLock::new(&path, "a");
        assert!(matches!(lock.get().await, Err(LockError::Corrupt { .. })));
        assert!(matches!(
            lock.create(&rec("a")).await,
            Err(LockError::Corrupt { .. })
        ));
        let le = LeaderElector::new(ElectionConfig::builder().lock(lock).build().unwrap());
        let err = le.try_acquire_or_renew().await.unwrap_err();
        assert!(matches!(err, LockError::Corrupt { .. }), "{err}");
        assert!(!err.is_retryable());
        assert!(!le.is_leader());
        assert_eq!(std::fs::read(&path).unwrap(), garbage, "left untouched");
        let _ = std::fs::remove_dir_all(path.parent().unwrap());
    }
}

#[tokio::test]
async fn file_lock_release_is_handed_over_by_polling() {
    let path = temp_path("handover");
    let config = |id: &str| {
        ElectionConfig::builder()
            .lock(FileLock::new(&path, id).with_poll_interval(Duration::from_millis(20)))
            // The first term at once: this checks the hand-over after a release.
            .absent_record_wait(false)
            .build()
            .unwrap()
    };
    let a = LeaderElector::new(config("a"));
    let b = LeaderElector::new(config("b"));
    assert!(a.try_acquire_or_renew().await.unwrap());
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move { b.acquire(&Recorder::default()).await })
    };
    tokio::time::sleep(Duration::from_millis(100)).await;
    let released = std::time::Instant::now();
    a.release().await.unwrap();
    let guard = tokio::time::timeout(Duration::from_secs(2), waiter)
        .await
        .expect("handed over well within a retry period")
        .unwrap();
    assert!(released.elapsed() < Duration::from_millis(500));
    assert!(guard.token().0 > 1);
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test(start_paused = true)]
async fn memory_lock_lost_reply_applies_the_write() {
    let store = MemoryStore::new("t");
    let lock = MemoryLock::new(&store, "a");
    lock.faults().set(Faults {
        lost_reply_rate: 1.0,
        ..Faults::none()
    });
    assert!(lock.create(&rec("a")).await.unwrap_err().is_retryable());
    assert_eq!(store.peek().unwrap().0.holder_identity, "a");
    lock.faults().partition(true);
    assert!(lock.get().await.is_err());
    lock.faults().set(Faults {
        min_latency: Duration::from_millis(100),
        max_latency: Duration::from_millis(100),
        ..Faults::none()
    });
    let t = tokio::time::Instant::now();
    lock.get().await.unwrap();
    // Split between request and response; tokio's timers have millisecond resolution.
    let took = t.elapsed();
    assert!(
        took >= Duration::from_millis(100) && took <= Duration::from_millis(102),
        "{took:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn memory_lock_release_wakes_waiters_at_once() {
    let store = MemoryStore::new("t");
    let cfg = |id: &str| {
        ElectionConfig::builder()
            .lock(MemoryLock::new(&store, id))
            .clock(SimClock::new())
            // The first term at once: this checks the hand-over after a release.
            .absent_record_wait(false)
            .seed(5)
            .build()
            .unwrap()
    };
    let a = LeaderElector::new(cfg("a"));
    let b = LeaderElector::new(cfg("b"));
    assert!(a.try_acquire_or_renew().await.unwrap());
    let waiter = {
        let b = b.clone();
        tokio::spawn(async move { b.acquire(&Recorder::default()).await })
    };
    tokio::time::sleep(Duration::from_millis(700)).await;
    let released = tokio::time::Instant::now();
    a.release().await.unwrap();
    waiter.await.unwrap();
    assert_eq!(
        released.elapsed(),
        Duration::ZERO,
        "no simulated time passed"
    );
}

// ---- leader for life ----

#[test]
fn backoff_is_one_to_sixteen_seconds_with_jitter() {
    let b = Backoff::default();
    let s = Duration::from_secs;
    let plain: Vec<Duration> = (0..7).map(|n| b.delay(n, 0.0)).collect();
    assert_eq!(plain, [s(1), s(2), s(4), s(8), s(16), s(16), s(16)]);
    assert_eq!(b.delay(0, 0.999_999).as_millis(), 1_199);
    assert_eq!(b.delay(9, 0.5), Duration::from_millis(17_600));
}

#[tokio::test(start_paused = true)]
async fn leader_for_life_is_create_only_and_waits_for_the_holder_to_go() {
    let store = MemoryStore::new("lfl");
    let a = LeaderForLife::new(MemoryLock::new(&store, "a")).with_clock(SimClock::new());
    let b = LeaderForLife::new(MemoryLock::new(&store, "b"))
        .with_clock(SimClock::new())
        .with_seed(9);
    let (ga, va) = a.become_leader().await;
    let start = tokio::time::Instant::now();
    let waiter = tokio::spawn(async move {
        let (g, v) = b.become_leader().await;
        (g, v, b)
    });
    // Never renewed and never expires by time.
    tokio::time::sleep(Duration::from_secs(3600)).await;
    assert!(ga.is_valid());
    assert_eq!(store.peek().unwrap().0.holder_identity, "a");
    assert_eq!(store.peek().unwrap().1, va, "nobody wrote");
    assert!(!waiter.is_finished());
    // The holder goes away (the backend removes its record); b takes over on its next try.
    store.clear();
    let (gb, vb, b) = waiter.await.unwrap();
    assert!(start.elapsed() < Duration::from_secs(3600 + 20));
    assert!(gb.token() > ga.token());
    // Graceful step-down deletes only its own record.
    b.step_down(&gb, &vb).await.unwrap();
    assert!(store.peek().is_none());
    assert!(!gb.is_valid());
}

#[tokio::test(start_paused = true)]
async fn leader_for_life_adopts_its_own_record_after_a_restart() {
    let store = MemoryStore::new("lfl");
    store.force(held_by("a", 15));
    let old = store.peek().unwrap().1;
    let a = LeaderForLife::new(MemoryLock::new(&store, "a")).with_clock(SimClock::new());
    let (g, v) = a.become_leader().await;
    assert!(v.sequence() > old.sequence());
    assert_eq!(g.token().0, v.sequence().unwrap());
}

#[tokio::test(start_paused = true)]
async fn leader_for_life_run_steps_down_on_shutdown() {
    let store = MemoryStore::new("lfl");
    let a = LeaderForLife::new(MemoryLock::new(&store, "a")).with_clock(SimClock::new());
    let rec = Recorder::default();
    a.run(&rec, tokio::time::sleep(Duration::from_secs(60)))
        .await;
    assert!(store.peek().is_none());
    assert_eq!(rec.log(), ["new leader a", "started 1", "stopped", "ended"]);
}

#[tokio::test]
async fn leader_for_life_on_a_file_lock_follows_owner_liveness() {
    let path = temp_path("lfl-owner");
    let fast = Backoff::new(
        Duration::from_millis(20),
        Duration::from_millis(80),
        2.0,
        0.2,
    );
    let a = LeaderForLife::new(FileLock::new(&path, "a").with_owner_liveness());
    let (ga, _va) = a.become_leader().await;
    // A plain create on a live owner's record conflicts.
    let c = FileLock::new(&path, "c").with_owner_liveness();
    assert!(matches!(
        c.create(&rec("c")).await,
        Err(LockError::Conflict(_))
    ));
    let b = LeaderForLife::new(FileLock::new(&path, "b").with_owner_liveness()).with_backoff(fast);
    let waiter = tokio::spawn(async move {
        let (g, v) = b.become_leader().await;
        (g, v, b)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!waiter.is_finished(), "a is alive: b waits");
    // a's process "dies": its handle and the OS lock on <path>.owner go away.
    drop(a);
    let (gb, vb, b) = tokio::time::timeout(Duration::from_secs(5), waiter)
        .await
        .expect("b took over once a's owner lock was released")
        .unwrap();
    assert!(gb.token() > ga.token());
    assert_eq!(
        FileLock::new(&path, "x")
            .get()
            .await
            .unwrap()
            .unwrap()
            .0
            .holder_identity,
        "b"
    );
    // A graceful step-down deletes the record and frees the owner lock for the next one.
    b.step_down(&gb, &vb).await.unwrap();
    assert!(c.create(&rec("c")).await.is_ok());
    let _ = std::fs::remove_dir_all(path.parent().unwrap());
}

#[tokio::test]
async fn file_lock_version_counter_never_wraps() {
    // Found by fuzzing: a counter at u64::MAX must not wrap to 0 (tokens would go backwards).
    let path = temp_path("max-version");
    std::fs::write(
        &path,
        format!(r#"{{"version":{},"record":null}}"#, u64::MAX),
    )
    .unwrap();
    let lock = FileLock::new(&path, "a");
    let err = lock.create(&rec("a")).await.unwrap_err();
    assert!(matches!(err, LockError::Corrupt { .. }), "{err}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        text.contains(&u64::MAX.to_string()),
        "the file is left as it was: {text}"
    );
}
