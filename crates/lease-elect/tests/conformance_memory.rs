//! The conformance suite on [`MemoryLock`]: the contract, an election with a real clock, and
//! an outage (every handle failing, as if the store were down).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use lease_elect::testing::LockFactory;
use lease_elect::testing::election::{ServerControl, Timing, server_outage};
use lease_elect::{MemoryLock, MemoryStore, ResourceLock};

#[derive(Clone, Default)]
struct Factory {
    stores: Arc<Mutex<HashMap<String, MemoryStore>>>,
    handles: Arc<Mutex<Vec<MemoryLock>>>,
}

impl LockFactory for Factory {
    async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> {
        let store = self
            .stores
            .lock()
            .expect("stores")
            .entry(name.to_owned())
            .or_insert_with(|| MemoryStore::new(name))
            .clone();
        let lock = MemoryLock::new(&store, identity);
        self.handles.lock().expect("handles").push(lock.clone());
        Arc::new(lock)
    }

    fn time_precision(&self) -> Duration {
        Duration::from_nanos(1)
    }

    fn notifies_changes(&self) -> bool {
        true
    }
}

async fn factory() -> Option<Factory> {
    Some(Factory::default())
}

lease_elect::conformance_tests!(factory);

/// "Stops the server": every handle opened so far fails every call.
struct Outage(Factory);

impl ServerControl for Outage {
    async fn stop(&mut self) {
        for h in self.0.handles.lock().expect("handles").iter() {
            h.faults().fail_all(true);
        }
    }

    async fn start(&mut self) {
        for h in self.0.handles.lock().expect("handles").iter() {
            h.faults().fail_all(false);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fault_server_outage() {
    let factory = Factory::default();
    let mut outage = Outage(factory.clone());
    let timing = Timing::default();
    let report = server_outage(
        &factory,
        &mut outage,
        timing,
        timing.lease + Duration::from_secs(1),
        timing.crash_bound(),
    )
    .await;
    println!("{report:?}");
}
