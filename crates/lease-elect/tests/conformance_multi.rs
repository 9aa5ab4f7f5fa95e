//! The conformance suite on [`MultiLock`]: memory as primary with a file as secondary, and
//! the other way round; plus client-go's `MultiLock` cases (leaderelection_test.go's
//! `testTryAcquireOrRenewMultiLock` table) in simulated time.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lease_elect::testing::LockFactory;
use lease_elect::{FileLock, MemoryLock, MemoryStore, MultiLock, ResourceLock};

/// Opens a `MultiLock` over a memory lock and a file lock of the same name; `file_first`
/// makes the file the primary.
struct Factory {
    stores: Arc<Mutex<HashMap<String, MemoryStore>>>,
    dir: PathBuf,
    file_first: bool,
}

impl Factory {
    fn memory(&self, name: &str, identity: &str) -> MemoryLock {
        let store = self
            .stores
            .lock()
            .expect("stores")
            .entry(name.to_owned())
            .or_insert_with(|| MemoryStore::new(name))
            .clone();
        MemoryLock::new(&store, identity)
    }

    fn file(&self, name: &str, identity: &str) -> FileLock {
        FileLock::new(self.dir.join(format!("{name}.json")), identity)
            .with_poll_interval(Duration::from_millis(50))
    }
}

impl LockFactory for Factory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        let (memory, file) = (self.memory(name, identity), self.file(name, identity));
        if self.file_first {
            Arc::new(MultiLock::new(file, memory))
        } else {
            Arc::new(MultiLock::new(memory, file))
        }
    }

    /// The primary's: records are read from it.
    fn time_precision(&self) -> Duration {
        if self.file_first {
            Duration::from_secs(1)
        } else {
            Duration::from_nanos(1)
        }
    }

    fn notifies_changes(&self) -> bool {
        true
    }

    async fn corrupt(&self, name: &str) -> bool {
        // Only the file can be corrupted; it must be the primary for `get` to see it.
        if !self.file_first {
            return false;
        }
        std::fs::write(
            self.dir.join(format!("{name}.json")),
            b"{\"version\":99,\"record\":{\"holderIdentity\":",
        )
        .expect("write a torn file");
        true
    }
}

impl Drop for Factory {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn new_factory(file_first: bool) -> Factory {
    let dir = std::env::temp_dir().join(lease_elect::testing::unique_name("lease-elect-multi"));
    std::fs::create_dir_all(&dir).expect("create the test directory");
    Factory {
        stores: Arc::default(),
        dir,
        file_first,
    }
}

async fn memory_file() -> Option<Factory> {
    Some(new_factory(false))
}

async fn file_memory() -> Option<Factory> {
    Some(new_factory(true))
}

mod memory_then_file {
    lease_elect::conformance_tests!(super::memory_file);
}

mod file_then_memory {
    lease_elect::conformance_tests!(super::file_memory);
}

/// Two memory stores under a `MultiLock`; the outage fails every handle of one side.
#[derive(Clone, Default)]
struct TwoMemory {
    stores: Arc<Mutex<HashMap<(String, bool), MemoryStore>>>,
    handles: Arc<Mutex<Vec<(bool, MemoryLock)>>>,
}

impl TwoMemory {
    fn side(&self, name: &str, identity: &str, primary: bool) -> MemoryLock {
        let store = self
            .stores
            .lock()
            .expect("stores")
            .entry((name.to_owned(), primary))
            .or_insert_with(|| MemoryStore::new(name))
            .clone();
        let lock = MemoryLock::new(&store, identity);
        self.handles
            .lock()
            .expect("handles")
            .push((primary, lock.clone()));
        lock
    }
}

impl LockFactory for TwoMemory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        Arc::new(MultiLock::new(
            self.side(name, identity, true),
            self.side(name, identity, false),
        ))
    }

    fn time_precision(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn notifies_changes(&self) -> bool {
        true
    }
}

/// Fails every handle of the primary side (`true`) or the secondary side.
struct Outage(TwoMemory, bool);

impl lease_elect::testing::election::ServerControl for Outage {
    async fn stop(&mut self) {
        for (side, h) in self.0.handles.lock().expect("handles").iter() {
            if *side == self.1 {
                h.faults().fail_all(true);
            }
        }
    }

    async fn start(&mut self) {
        for (_, h) in self.0.handles.lock().expect("handles").iter() {
            h.faults().fail_all(false);
        }
    }
}

async fn outage(primary: bool) {
    use lease_elect::testing::election::{Timing, server_outage};
    let factory = TwoMemory::default();
    let mut control = Outage(factory.clone(), primary);
    let timing = Timing::default();
    let report = server_outage(
        &factory,
        &mut control,
        timing,
        timing.lease + Duration::from_secs(1),
        timing.crash_bound(),
    )
    .await;
    println!("{report:?}");
}

/// The suite's fault check with the primary down: nobody leads until it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_primary_outage() {
    outage(true).await;
}

/// The same with only the secondary down: the leader cannot renew (its writes to the
/// secondary fail), so it gives up by its renew deadline and nobody leads until it is back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_secondary_outage() {
    outage(false).await;
}
