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
