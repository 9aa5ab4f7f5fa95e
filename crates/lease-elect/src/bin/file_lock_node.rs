//! A small election node on a [`FileLock`], used by the multi-process test and handy for
//! trying failover by hand:
//!
//! ```text
//! file_lock_node <lock-file> <identity> [lease-secs renew-ms retry-ms]
//! ```
//!
//! It prints one line per event, with the wall-clock time in milliseconds:
//! `LEADING <token> <ms>` when a term starts, `VALID <token> <ms>` every 50 ms while the
//! term's guard is valid, `STOPPED <token> <ms>` when it ends, `LEADER <identity> <ms>` when
//! a new leader is observed.

use std::io::Write;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use lease_elect::{ElectionConfig, FileLock, LeaderCallbacks, LeaderElector, LeaderGuard};

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}

fn say(line: String) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line} {}", now_ms());
    let _ = out.flush();
}

struct Node;

#[lease_elect::async_trait]
impl LeaderCallbacks for Node {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        let token = guard.token();
        say(format!("LEADING {token}"));
        while guard.is_valid() {
            say(format!("VALID {token}"));
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
                () = guard.lost() => break,
            }
        }
        say(format!("STOPPED {token}"));
    }

    fn on_new_leader(&self, identity: &str) {
        say(format!("LEADER {identity}"));
    }
}

fn arg<T: std::str::FromStr>(args: &[String], i: usize, default: T) -> T {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() < 3 {
        eprintln!("usage: file_lock_node <lock-file> <identity> [lease-secs renew-ms retry-ms]");
        std::process::exit(2);
    }
    let lock =
        FileLock::new(&args[1], args[2].clone()).with_poll_interval(Duration::from_millis(50));
    let config = ElectionConfig::builder()
        .lock(lock)
        .lease_duration(Duration::from_secs(arg(&args, 3, 15)))
        .renew_deadline(Duration::from_millis(arg(&args, 4, 10_000)))
        .retry_period(Duration::from_millis(arg(&args, 5, 2_000)))
        .release_on_cancel(true)
        .build()?;
    let elector = LeaderElector::new(config);
    let shutdown = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    elector.run(&Node, shutdown).await;
    Ok(())
}
