//! Active/standby on one machine: run this in two or three terminals; one process leads,
//! the others wait. Stop the leader with Ctrl-C (it releases the lease and another takes
//! over at once) or kill it with `kill -9` (another takes over within lease + 1.2 x retry).
//!
//! ```text
//! cargo run --example elector_file_lock -- /tmp/demo-leader.json node-1
//! ```

use std::time::Duration;

use lease_elect::{
    ElectionConfig, FileLock, LeaderCallbacks, LeaderElector, LeaderGuard, async_trait,
};

struct Controller;

#[async_trait]
impl LeaderCallbacks for Controller {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        println!(
            "{}: leading with fencing token {}",
            guard.identity(),
            guard.token()
        );
        // The leader's work: stop at a clean point once leadership is lost.
        loop {
            tokio::select! {
                biased; // the loss first: no work after the term's end
                () = guard.lost() => break,
                () = tokio::time::sleep(Duration::from_secs(1)) => {
                    // Pass guard.token() to whatever you write, so stale leaders are refused.
                    println!("working (token {})", guard.token());
                }
            }
        }
    }

    fn on_stopped_leading(&self) {
        println!("stopped leading");
    }

    fn on_new_leader(&self, identity: &str) {
        println!("leader is now {identity}");
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .unwrap_or_else(|| "/tmp/demo-leader.json".into());
    let identity = args
        .next()
        .unwrap_or_else(|| format!("pid-{}", std::process::id()));

    let config = ElectionConfig::builder()
        .lock(FileLock::new(path, identity))
        .lease_duration(Duration::from_secs(15))
        .renew_deadline(Duration::from_secs(10))
        .retry_period(Duration::from_secs(2))
        .release_on_cancel(true)
        .build()?;
    let elector = LeaderElector::new(config);

    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    let outcome = elector.run(&Controller, shutdown).await;
    println!("run ended: {outcome:?}");
    Ok(())
}
