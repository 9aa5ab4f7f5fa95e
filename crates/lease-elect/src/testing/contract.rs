//! The contract checks: one `pub async fn` per rule of the
//! [`ResourceLock`] contract. Each panics with a message naming the rule
//! when the backend breaks it.

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::{LockFactory, truncate_time, unique_name};
use crate::{LeaderElectionRecord, LockError, ResourceLock, Version};

/// A record with sub-second times (2026-11-21T12:00:00.123456789Z and 1.5 s later), so a
/// backend that stores less precision than it documents is caught.
#[must_use]
pub fn sample_record(holder: &str) -> LeaderElectionRecord {
    let acquire = UNIX_EPOCH + Duration::new(1_795_262_400, 123_456_789);
    LeaderElectionRecord {
        holder_identity: holder.to_owned(),
        lease_duration_seconds: 15,
        acquire_time: Some(acquire),
        renew_time: Some(acquire + Duration::from_millis(1_500)),
        leader_transitions: 3,
        strategy: None,
        preferred_holder: None,
    }
}

/// `record` as the backend returns it: times truncated to the factory's precision.
#[must_use]
pub fn as_stored(record: &LeaderElectionRecord, precision: Duration) -> LeaderElectionRecord {
    let mut r = record.clone();
    r.acquire_time = r.acquire_time.map(|t| truncate_time(t, precision));
    r.renew_time = r.renew_time.map(|t| truncate_time(t, precision));
    r
}

async fn must_get(lock: &dyn ResourceLock, what: &str) -> (LeaderElectionRecord, Version) {
    match lock.get().await {
        Ok(Some(found)) => found,
        Ok(None) => panic!("{}: get returned no record {what}", lock.describe()),
        Err(e) => panic!("{}: get failed {what}: {e}", lock.describe()),
    }
}

async fn must_create(lock: &dyn ResourceLock, record: &LeaderElectionRecord) -> Version {
    lock.create(record)
        .await
        .unwrap_or_else(|e| panic!("{}: create on a fresh lock failed: {e}", lock.describe()))
}

fn assert_conflict<T: std::fmt::Debug>(result: Result<T, LockError>, rule: &str) {
    match result {
        Err(LockError::Conflict(_)) => {}
        Err(e) => panic!("{rule}: expected LockError::Conflict, got the error {e}"),
        Ok(v) => panic!("{rule}: expected LockError::Conflict, but the call succeeded ({v:?})"),
    }
}

/// `get` on a lock nobody created returns `Ok(None)`.
pub async fn get_missing(factory: &impl LockFactory) {
    let lock = factory.open(&unique_name("missing"), "a").await;
    match lock.get().await {
        Ok(None) => {}
        Ok(Some((r, v))) => panic!("get on a missing lock returned {r:?} at {v:?}"),
        Err(e) => panic!("get on a missing lock failed: {e}"),
    }
}

/// `create` then `create` again (from another handle): the second gives `Conflict` and the
/// first record stays, with the version `create` returned.
pub async fn create_twice_conflicts(factory: &impl LockFactory) {
    let name = unique_name("create");
    let a = factory.open(&name, "a").await;
    let b = factory.open(&name, "b").await;
    let ra = sample_record("a");
    let va = must_create(&*a, &ra).await;
    assert_conflict(
        b.create(&sample_record("b")).await,
        "create on an existing lock",
    );
    assert_conflict(a.create(&ra).await, "create again by the creator");
    let (got, v) = must_get(&*b, "after create").await;
    assert_eq!(v, va, "get must return the version create returned");
    assert_eq!(
        got,
        as_stored(&ra, factory.time_precision()),
        "the first record must stay after a conflicting create"
    );
}

/// `update` with a version somebody already replaced gives `Conflict`, and the newer record
/// stays.
pub async fn stale_update_conflicts(factory: &impl LockFactory) {
    let name = unique_name("stale");
    let a = factory.open(&name, "a").await;
    let b = factory.open(&name, "b").await;
    let v1 = must_create(&*a, &sample_record("a")).await;
    let mut rb = sample_record("b");
    rb.leader_transitions = 4;
    let v2 = b
        .update(&v1, &rb)
        .await
        .unwrap_or_else(|e| panic!("update from the current version failed: {e}"));
    assert_ne!(v1, v2, "an update must return a new version");
    assert_conflict(
        a.update(&v1, &sample_record("a")).await,
        "update from a stale version",
    );
    assert_conflict(
        b.update(&v1, &rb).await,
        "update from a stale version (same writer)",
    );
    let (got, v) = must_get(&*a, "after a stale update").await;
    assert_eq!(
        v, v2,
        "get must return the version of the last successful write"
    );
    assert_eq!(got, as_stored(&rb, factory.time_precision()));
    // The current version still works.
    let v3 = a
        .update(&v2, &sample_record("a"))
        .await
        .unwrap_or_else(|e| panic!("update from the current version failed: {e}"));
    assert!(v3 != v1 && v3 != v2, "versions must never be reused");
}

/// `update` on a lock that does not exist gives `Conflict` (and creates nothing), whatever
/// the expected version.
pub async fn update_missing_conflicts(factory: &impl LockFactory) {
    // A version taken from another lock of the same backend, so it is well formed.
    let other = factory.open(&unique_name("other"), "a").await;
    let v = must_create(&*other, &sample_record("a")).await;
    let lock = factory.open(&unique_name("absent"), "a").await;
    assert_conflict(
        lock.update(&v, &sample_record("a")).await,
        "update of a missing lock",
    );
    assert!(
        matches!(lock.get().await, Ok(None)),
        "an update of a missing lock must not create it"
    );
}

/// `n` handles update concurrently from the same version: exactly one wins, all others get
/// `Conflict`, and the stored record is the winner's.
pub async fn concurrent_updates_one_wins(factory: &impl LockFactory) {
    const N: usize = 8;
    let name = unique_name("race");
    let mut locks = Vec::with_capacity(N);
    for i in 0..N {
        locks.push(factory.open(&name, &format!("p{i}")).await);
    }
    let v1 = must_create(&*locks[0], &sample_record("p0")).await;
    for round in 0..3u64 {
        let (_, base) = must_get(&*locks[0], "before the race").await;
        if round == 0 {
            assert_eq!(base, v1);
        }
        let mut tasks = Vec::new();
        for (i, lock) in locks.iter().enumerate() {
            let lock = Arc::clone(lock);
            let base = base.clone();
            let mut record = sample_record(&format!("p{i}"));
            record.leader_transitions = 10 * round + i as u64;
            tasks.push(tokio::spawn(async move {
                let r = lock.update(&base, &record).await;
                (record, r)
            }));
        }
        let mut winners = Vec::new();
        for t in tasks {
            let (record, r) = t.await.expect("update task panicked");
            match r {
                Ok(v) => winners.push((record, v)),
                Err(LockError::Conflict(_)) => {}
                Err(e) => panic!("a racing update failed with a non-conflict error: {e}"),
            }
        }
        assert_eq!(
            winners.len(),
            1,
            "exactly one of {N} concurrent updates from one version must win (round {round})"
        );
        let (record, v) = winners.pop().expect("one winner");
        let (got, gv) = must_get(&*locks[1], "after the race").await;
        assert_eq!(gv, v, "the stored version must be the winner's");
        assert_eq!(got, as_stored(&record, factory.time_precision()));
    }
}

/// `n` handles create the same lock concurrently: exactly one wins.
pub async fn concurrent_creates_one_wins(factory: &impl LockFactory) {
    const N: usize = 8;
    let name = unique_name("create-race");
    let mut tasks = Vec::new();
    for i in 0..N {
        let lock = factory.open(&name, &format!("p{i}")).await;
        tasks.push(tokio::spawn(async move {
            let record = sample_record(&format!("p{i}"));
            let r = lock.create(&record).await;
            (record, r)
        }));
    }
    let mut winners = Vec::new();
    for t in tasks {
        let (record, r) = t.await.expect("create task panicked");
        match r {
            Ok(v) => winners.push((record, v)),
            Err(LockError::Conflict(_)) => {}
            Err(e) => panic!("a racing create failed with a non-conflict error: {e}"),
        }
    }
    assert_eq!(
        winners.len(),
        1,
        "exactly one of {N} concurrent creates must win"
    );
    let lock = factory.open(&name, "reader").await;
    let (got, v) = must_get(&*lock, "after the create race").await;
    assert_eq!(v, winners[0].1);
    assert_eq!(got, as_stored(&winners[0].0, factory.time_precision()));
}

/// Records round-trip exactly (times to the backend's precision): sub-second times, absent
/// times, a released (empty) holder, large counters, client-go's optional fields, non-ASCII
/// identities.
pub async fn record_round_trips(factory: &impl LockFactory) {
    let precision = factory.time_precision();
    let as_stored = |r: &LeaderElectionRecord, precision| {
        let mut r = as_stored(r, precision);
        if !factory.keeps_newer_fields() {
            r.strategy = None;
            r.preferred_holder = None;
        }
        r
    };
    let name = unique_name("roundtrip");
    let lock = factory.open(&name, "a").await;
    let mut records = vec![sample_record("a")];
    let mut released = sample_record("");
    released.acquire_time = None;
    released.renew_time = None;
    released.lease_duration_seconds = 1;
    records.push(released);
    let mut big = sample_record("ünïcode-ĥolder/with spaces:and\"quotes");
    big.leader_transitions = u64::from(i32::MAX.unsigned_abs());
    big.lease_duration_seconds = 3600;
    big.strategy = Some("OldestEmulationVersion".to_owned());
    big.preferred_holder = Some("b".to_owned());
    records.push(big);
    let mut now = sample_record("now");
    let t = SystemTime::now();
    now.acquire_time = Some(t);
    now.renew_time = Some(t + Duration::from_nanos(999_999_999));
    records.push(now);
    let mut old = sample_record("old");
    old.acquire_time = Some(UNIX_EPOCH + Duration::new(1, 500_000_000));
    old.renew_time = Some(UNIX_EPOCH + Duration::from_secs(946_684_800)); // 2000-01-01
    records.push(old);

    let mut version = must_create(&*lock, &records[0]).await;
    let (got, _) = must_get(&*lock, "after create").await;
    assert_eq!(
        got,
        as_stored(&records[0], precision),
        "record must round-trip through create (precision {precision:?})"
    );
    for r in &records[1..] {
        version = lock
            .update(&version, r)
            .await
            .unwrap_or_else(|e| panic!("update with {r:?} failed: {e}"));
        let (got, v) = must_get(&*lock, "after update").await;
        assert_eq!(v, version);
        assert_eq!(
            got,
            as_stored(r, precision),
            "record must round-trip through update (precision {precision:?})"
        );
    }
}

/// Every write that changes the record returns a version never seen before; an update that
/// writes the stored record unchanged returns either a fresh version or the stored one (a
/// Kubernetes API server skips such a write). When versions carry a sequence, it is present on
/// all of them and strictly increases.
pub async fn versions_fresh_and_sequences_monotonic(factory: &impl LockFactory) {
    let name = unique_name("versions");
    let lock = factory.open(&name, "a").await;
    let mut seen = HashSet::new();
    let mut v = must_create(&*lock, &sample_record("a")).await;
    let has_sequence = v.sequence().is_some();
    seen.insert(v.clone());
    let mut previous = sample_record("a");
    for i in 0..10u64 {
        let mut r = sample_record("a");
        // Every other update rewrites the stored record unchanged.
        r.leader_transitions = i / 2;
        let identical = r == previous;
        previous = r.clone();
        let next = lock
            .update(&v, &r)
            .await
            .unwrap_or_else(|e| panic!("update failed: {e}"));
        if identical && next == v {
            continue;
        }
        assert!(
            seen.insert(next.clone()),
            "version {next:?} was reused (identical rewrite: {identical})"
        );
        assert_eq!(
            next.sequence().is_some(),
            has_sequence,
            "sequences must be on all versions of a lock or on none"
        );
        if let (Some(a), Some(b)) = (v.sequence(), next.sequence()) {
            assert!(b > a, "sequence must strictly increase: {a} then {b}");
        }
        v = next;
    }
}

/// `delete` (when supported): a stale version gives `Conflict`; the current one removes the
/// record; a later `create` gets a version never seen before (and a larger sequence).
pub async fn delete(factory: &impl LockFactory) {
    let name = unique_name("delete");
    let lock = factory.open(&name, "a").await;
    let v1 = must_create(&*lock, &sample_record("a")).await;
    // A changed record, so the version must change (an identical one may keep it).
    let mut changed = sample_record("a");
    changed.leader_transitions += 1;
    let v2 = lock
        .update(&v1, &changed)
        .await
        .unwrap_or_else(|e| panic!("update failed: {e}"));
    match lock.delete(&v1).await {
        Err(LockError::Unsupported(_)) => return,
        r => assert_conflict(r, "delete from a stale version"),
    }
    lock.delete(&v2)
        .await
        .unwrap_or_else(|e| panic!("delete from the current version failed: {e}"));
    assert!(
        matches!(lock.get().await, Ok(None)),
        "get after delete must return None"
    );
    assert_conflict(lock.delete(&v2).await, "delete of a missing lock");
    assert_conflict(
        lock.update(&v2, &sample_record("a")).await,
        "update after delete",
    );
    let v3 = must_create(&*lock, &sample_record("b")).await;
    assert!(v3 != v1 && v3 != v2, "a version was reused after delete");
    if let (Some(a), Some(b)) = (v2.sequence(), v3.sequence()) {
        assert!(b > a, "sequence must increase across delete: {a} then {b}");
    }
}

/// `describe` is non-empty, the same on every call and for every handle of one lock, and
/// does not depend on the identity; `identity` is the one the handle was opened with.
pub async fn describe_stable_identity_kept(factory: &impl LockFactory) {
    let name = unique_name("describe");
    let a = factory.open(&name, "alpha").await;
    let b = factory.open(&name, "beta").await;
    assert_eq!(a.identity(), "alpha");
    assert_eq!(b.identity(), "beta");
    let d = a.describe();
    assert!(!d.is_empty(), "describe must not be empty");
    let _ = a.get().await;
    assert_eq!(a.describe(), d, "describe must be stable");
    assert_eq!(
        b.describe(),
        d,
        "all handles of one lock must describe it alike"
    );
    let other = factory.open(&unique_name("describe"), "alpha").await;
    assert_ne!(
        other.describe(),
        d,
        "two locks must not have the same description"
    );
}

/// Locks of different names do not see each other's records.
pub async fn names_independent(factory: &impl LockFactory) {
    let a = factory.open(&unique_name("indep"), "a").await;
    let b = factory.open(&unique_name("indep"), "a").await;
    must_create(&*a, &sample_record("a")).await;
    assert!(
        matches!(b.get().await, Ok(None)),
        "a record of one lock name was visible under another"
    );
    must_create(&*b, &sample_record("b")).await;
    assert_eq!(must_get(&*a, "").await.0.holder_identity, "a");
}

/// A record made unreadable (by [`LockFactory::corrupt`]) is reported as
/// `LockError::Corrupt`, never as a missing record; writes from old versions still conflict.
pub async fn corrupt_is_error(factory: &impl LockFactory) {
    let name = unique_name("corrupt");
    let lock = factory.open(&name, "a").await;
    let v = must_create(&*lock, &sample_record("a")).await;
    if !factory.corrupt(&name).await {
        return;
    }
    match lock.get().await {
        Err(LockError::Corrupt { .. }) => {}
        Err(e) => panic!("get of a corrupt record must give LockError::Corrupt, got {e}"),
        Ok(r) => panic!("get of a corrupt record must give LockError::Corrupt, got {r:?}"),
    }
    // A corrupt record exists: create must not replace it (Conflict, or Corrupt itself).
    match lock.create(&sample_record("a")).await {
        Err(LockError::Conflict(_) | LockError::Corrupt { .. }) => {}
        other => panic!("create over a corrupt record must fail: {other:?}"),
    }
    match lock.update(&v, &sample_record("a")).await {
        Err(LockError::Conflict(_) | LockError::Corrupt { .. }) => {}
        other => panic!("update from a version older than the corruption must fail: {other:?}"),
    }
}

/// When the factory says the backend notifies changes: `wait_for_change(seen)` resolves soon
/// after another handle writes, and at once when the record already differs from `seen`.
pub async fn wait_for_change(factory: &impl LockFactory) {
    if !factory.notifies_changes() {
        return;
    }
    let limit = Duration::from_secs(2);
    let name = unique_name("notify");
    let waiter = factory.open(&name, "waiter").await;
    let writer = factory.open(&name, "writer").await;

    // Missing record, then created by somebody else.
    let w = Arc::clone(&waiter);
    let wait = tokio::spawn(async move { w.wait_for_change(None).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let v1 = must_create(&*writer, &sample_record("writer")).await;
    tokio::time::timeout(limit, wait)
        .await
        .expect("wait_for_change(None) must resolve after a create")
        .expect("wait task panicked");

    // Held record, then released by its holder.
    let w = Arc::clone(&waiter);
    let seen = v1.clone();
    let wait = tokio::spawn(async move { w.wait_for_change(Some(&seen)).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let v2 = writer
        .update(&v1, &sample_record(""))
        .await
        .unwrap_or_else(|e| panic!("update failed: {e}"));
    tokio::time::timeout(limit, wait)
        .await
        .expect("wait_for_change must resolve after an update")
        .expect("wait task panicked");

    // Already changed since `seen`: resolves at once.
    tokio::time::timeout(limit, waiter.wait_for_change(Some(&v1)))
        .await
        .expect("wait_for_change on an outdated version must resolve at once");
    let _ = v2;
}
