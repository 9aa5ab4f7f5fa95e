//! The conformance suite on [`FileLock`]: the contract (corruption included) and an election
//! with a real clock. Each check uses a temporary directory of its own.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use lease_elect::testing::LockFactory;
use lease_elect::{FileLock, ResourceLock};

struct Factory {
    dir: PathBuf,
}

impl LockFactory for Factory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        Arc::new(
            FileLock::new(self.dir.join(format!("{name}.json")), identity)
                .with_poll_interval(Duration::from_millis(50)),
        )
    }

    fn notifies_changes(&self) -> bool {
        true
    }

    async fn corrupt(&self, name: &str) -> bool {
        std::fs::write(
            self.dir.join(format!("{name}.json")),
            b"{\"version\":99,\"record\":{\"holderIdentity\":",
        )
        .expect("write a torn file");
        true
    }
}

/// A directory of its own for each test, removed when the test ends.
async fn factory() -> Option<Factory> {
    let dir = std::env::temp_dir().join(lease_elect::testing::unique_name("lease-elect-file"));
    std::fs::create_dir_all(&dir).expect("create the test directory");
    Some(Factory { dir })
}

impl Drop for Factory {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

lease_elect::conformance_tests!(factory);
