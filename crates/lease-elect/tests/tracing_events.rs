//! Tracing events for every transition. Alone in its own test binary: a scoped subscriber
//! (`set_default`) races with tests on other threads that cache a callsite's interest as
//! "never" before the subscriber registers, which made this test flaky beside the others.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{CountingLock, Recorder, held_by, sim_config};
use lease_elect::{LeaderElector, MemoryStore};

fn elector(store: &MemoryStore) -> (LeaderElector, CountingLock) {
    let lock = CountingLock::new(store, "baz");
    (LeaderElector::new(sim_config(lock.clone(), 10)), lock)
}

#[derive(Clone, Default)]
struct Captured(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn transitions_emit_tracing_events_with_lock_and_identity() {
    let out = Captured::default();
    let writer = out.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_ansi(false)
        .with_max_level(tracing::Level::INFO)
        .with_writer(move || writer.clone())
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);

    let store = MemoryStore::new("obs");
    store.force(held_by("bing", 10));
    let (le, lock) = elector(&store);
    let rec = Recorder::default();
    // Observe bing, take over after expiry, fail renewals for a while, recover, release.
    let faults = lock.inner.faults().clone();
    let driver = async {
        tokio::time::sleep(Duration::from_secs(12)).await;
        faults.fail_all(true);
        tokio::time::sleep(Duration::from_secs(2)).await;
        faults.fail_all(false);
        tokio::time::sleep(Duration::from_secs(3)).await;
    };
    le.run(&rec, driver).await;
    le.release().await.unwrap();
    let text = String::from_utf8(out.0.lock().unwrap().clone()).unwrap();
    for needle in [
        "attempting to acquire leader lease",
        "new leader observed",
        "leader=bing",
        "successfully acquired lease",
        "failed to renew lease",
        "renewed lease after failures",
        "stopped leading",
        "released leader lease",
    ] {
        assert!(text.contains(needle), "missing {needle:?} in:\n{text}");
    }
    for line in text.lines() {
        assert!(line.contains("identity=baz"), "{line}");
        assert!(
            line.contains("lock=memory:obs") || line.contains("release"),
            "{line}"
        );
    }
}
