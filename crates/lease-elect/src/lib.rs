//! lease-elect: client-go's leader election over a generic async lock, with an injectable
//! clock, fencing tokens and backends beyond Kubernetes.
//!
//! # Start here
//! 1. Pick a [`ResourceLock`]: [`FileLock`] for several processes on one machine,
//!    [`MemoryLock`] for one process and tests, or a backend crate (PostgreSQL, etcd, Redis,
//!    Kubernetes Lease, ConfigMap and Endpoints). Records interoperate with client-go
//!    ([`LeaderElectionRecord`]). [`MultiLock`] writes two locks and reads one, to move an
//!    election from one lock to another without downtime.
//! 2. Build an [`ElectionConfig`] (validated once, client-go's rules and defaults).
//! 3. Run a [`LeaderElector`] with your [`LeaderCallbacks`]; the leader's work receives a
//!    [`LeaderGuard`] with a strictly increasing [`FencingToken`].
//!
//! ```
//! use std::time::Duration;
//! use lease_elect::{
//!     ElectionConfig, LeaderCallbacks, LeaderElector, LeaderGuard, MemoryLock, MemoryStore,
//! };
//!
//! struct Worker;
//!
//! #[async_trait::async_trait]
//! impl LeaderCallbacks for Worker {
//!     async fn on_started_leading(&self, guard: LeaderGuard) {
//!         println!("leading with token {}", guard.token());
//!         guard.lost().await;
//!     }
//!     fn on_stopped_leading(&self) {
//!         println!("stopped leading");
//!     }
//!     fn on_new_leader(&self, identity: &str) {
//!         println!("leader is now {identity}");
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_current_thread().enable_time().start_paused(true).build()?.block_on(async {
//! let store = MemoryStore::new("example");
//! let config = ElectionConfig::builder()
//!     .lock(MemoryLock::new(&store, "node-a"))
//!     .release_on_cancel(true)
//!     .build()?;
//! let elector = LeaderElector::new(config);
//! // Lead for a minute, then shut down (and release the lease).
//! elector.run(&Worker, tokio::time::sleep(Duration::from_secs(60))).await;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Simulated time
//! Give each elector a [`SimClock`] (its own rate, offset and wall-clock error) and run the
//! test on a paused tokio runtime: time then moves only when every task waits, straight to the
//! next timer, so an hour of election takes milliseconds. Any other driver works too: the
//! crate's own property tests implement [`Clock`] over a small discrete-event executor and run
//! hundreds of such hours with latency, errors, lost replies, crashes and partitions injected
//! through [`MemoryLock::faults`] (with [`MemoryLock::with_clock`] for the latency).
//!
//! # Seeds
//! Everything random can be seeded for reproducible tests, with one vocabulary: a builder takes
//! `seed(u64)` ([`ElectionConfigBuilder::seed`]: the candidates' jitter), and a type configured
//! in place takes `with_seed(u64)` ([`LeaderForLife::with_seed`]: the backoff's jitter;
//! [`MemoryLock::with_seed`]: the injected faults). Without a seed, the elector and leader for
//! life draw one from the OS; a `MemoryLock` uses 0.
//!
//! # Safety and its assumptions
//! A candidate takes over only after it has seen the record unchanged for the lease
//! duration on its own monotonic clock; a leader stops leading once no renewal started within
//! the renew deadline succeeded. Two electors therefore never lead at once as long as clock
//! *rates* differ by less than a factor lease duration / renew deadline (1.5 at the defaults)
//! and the lock honours the [`ResourceLock`] contract. Wall clocks may be arbitrarily wrong:
//! remote timestamps are never compared with local time.

mod change;
mod clock;
mod config;
pub mod coordinated;
mod elector;
mod file;
mod leader_for_life;
mod lock;
mod memory;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(not(feature = "metrics"))]
mod metrics;
mod multi;
mod record;

#[cfg(feature = "testing")]
pub mod testing;

/// Re-exported so implementations of [`LeaderCallbacks`] and [`ResourceLock`] need no extra
/// dependency.
pub use async_trait::async_trait;
pub use change::ChangeFeed;
pub use clock::{Clock, Instant, SimClock, Sleep, TokioClock};
pub use config::{
    CLIENT_GO_MARGIN, ConfigError, ElectionConfig, ElectionConfigBuilder, JITTER_FACTOR,
};
pub use elector::{
    HealthError, LeaderCallbacks, LeaderElector, LeaderGuard, Leadership, OnLeading, RunOutcome,
    SequenceRegression, on_leading,
};
pub use file::{FileLock, LockBusy};
pub use leader_for_life::{Backoff, LeaderForLife};
pub use lock::{BoxError, ElectionEvent, FencingToken, LockError, ResourceLock, Version};
pub use memory::{FaultInjector, Faults, MemoryLock, MemoryStore};
#[cfg(feature = "metrics")]
pub use metrics::ElectionMetrics;
pub use multi::{MultiLock, MultiLockError, UNKNOWN_LEADER};
pub use record::{LeaderElectionRecord, format_rfc3339, parse_rfc3339};
