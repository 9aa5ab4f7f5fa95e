//! The conformance suite every [`ResourceLock`] backend runs
//! (feature `testing`).
//!
//! It checks the contract written in the trait's docs: compare-and-swap on create and
//! update, fresh versions, faithful records, corruption reported as an error, monotonic
//! sequences, and an election on the backend with a real clock.
//!
//! # Start here
//! A backend implements [`LockFactory`] (how to open a handle on a named lock for one
//! participant) and calls the suite from its own `tests/`:
//!
//! ```ignore
//! struct MyFactory { /* a client, a server address */ }
//!
//! impl lease_elect::testing::LockFactory for MyFactory {
//!     async fn open(&self, name: &str, identity: &str) -> Arc<dyn ResourceLock> { /* ... */ }
//! }
//!
//! async fn factory() -> Option<MyFactory> { /* connect, or report the missing server */ }
//!
//! // One #[tokio::test] per check of the contract, and an election:
//! lease_elect::conformance_tests!(factory);
//! ```
//!
//! Every check opens locks under a fresh, unique name, so checks can run in parallel on one
//! server and leave no state that matters to a later run. A failed check panics with a message
//! that says which rule broke.
//!
//! The checks are also plain `pub async fn`s in [`contract`] and [`election`] so a backend
//! can call them one by one, with its own setup around them; [`election::server_outage`]
//! (the fault check) needs a way to stop and start the server
//! ([`election::ServerControl`]), so backends call it themselves
//! ([`election::server_restart_outage`] with the default timing). [`process`] starts test
//! servers as child processes that never outlive the test.

pub mod contract;
pub mod coordinated;
pub mod election;
pub mod process;

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use crate::ResourceLock;

/// How the suite opens locks on a backend.
///
/// Handles opened with the same `name` must refer to the same stored record (as two
/// processes on two hosts would); different names must not interfere.
pub trait LockFactory: Send + Sync {
    /// Opens a handle on lock `name` for the participant `identity`.
    ///
    /// Panic when the backend cannot be reached: the suite is about the lock's behaviour, and
    /// a missing server must fail the test, never pass it.
    fn open(
        &self,
        name: &str,
        identity: &str,
    ) -> impl Future<Output = Arc<dyn ResourceLock>> + Send;

    /// The precision to which the backend stores the record's times (`acquireTime`,
    /// `renewTime`); times read back equal the written ones truncated toward the past to a
    /// multiple of this. Default: one second, client-go's JSON precision.
    fn time_precision(&self) -> Duration {
        Duration::from_secs(1)
    }

    /// Whether [`ResourceLock::wait_for_change`] of this backend resolves after another
    /// handle writes the record (the suite then checks that it does, within a second).
    /// Default: `false`.
    fn notifies_changes(&self) -> bool {
        false
    }

    /// Whether the backend stores client-go's newer optional fields (`strategy`,
    /// `preferredHolder`). A Kubernetes API server older than 1.31 drops them; the suite then
    /// checks that they read back unset and that everything else round-trips. Default: `true`.
    fn keeps_newer_fields(&self) -> bool {
        true
    }

    /// Makes the stored record of lock `name` unreadable (bad JSON, a value out of range),
    /// so the suite can check that `get` reports [`LockError::Corrupt`](crate::LockError).
    /// Returns `false` when the backend cannot do that (the check is then skipped).
    /// Default: `false`.
    fn corrupt(&self, name: &str) -> impl Future<Output = bool> + Send {
        let _ = name;
        async { false }
    }
}

/// A lock name that no earlier check or run used: `prefix`, the process id, the wall-clock
/// time in nanoseconds and a counter. Only ASCII letters, digits and `-`, at most 63 bytes,
/// so it is a valid key, table row, Redis key and Kubernetes object name.
#[must_use]
pub fn unique_name(prefix: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let prefix: String = prefix
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '-')
        .take(20)
        .collect::<String>()
        .to_ascii_lowercase();
    format!(
        "{prefix}-{}-{:x}-{n}",
        std::process::id(),
        nanos % (1 << 48)
    )
}

/// Truncates `time` toward the past to a multiple of `precision` since the Unix epoch.
#[must_use]
pub fn truncate_time(time: SystemTime, precision: Duration) -> SystemTime {
    let p = precision.as_nanos().max(1);
    match time.duration_since(UNIX_EPOCH) {
        Ok(d) => {
            let n = d.as_nanos() / p * p;
            UNIX_EPOCH + nanos_to_duration(n)
        }
        Err(e) => {
            let n = e.duration().as_nanos().div_ceil(p) * p;
            UNIX_EPOCH - nanos_to_duration(n)
        }
    }
}

fn nanos_to_duration(n: u128) -> Duration {
    let secs = u64::try_from(n / 1_000_000_000).unwrap_or(u64::MAX);
    let sub = u32::try_from(n % 1_000_000_000).unwrap_or(0);
    Duration::new(secs, sub)
}

/// Generates the whole suite for a backend: [`contract_tests!`](crate::contract_tests) plus
/// `conformance_election`, which runs [`election::election`] with the default
/// [`election::Timing`] and prints what it measured, and `conformance_absent_record`, which
/// runs [`election::absent_record`] (the record deleted under a live leader: no request
/// storm, no second leader) the same way.
///
/// ```ignore
/// lease_elect::conformance_tests!(my_factory);
/// ```
#[macro_export]
macro_rules! conformance_tests {
    ($factory:path) => {
        $crate::contract_tests!($factory);

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn conformance_election() {
            let Some(factory) = $factory().await else {
                return;
            };
            let report = $crate::testing::election::election(
                &factory,
                $crate::testing::election::Timing::default(),
            )
            .await;
            println!("{report:?}");
        }

        #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn conformance_absent_record() {
            let Some(factory) = $factory().await else {
                return;
            };
            let report = $crate::testing::election::absent_record(
                &factory,
                $crate::testing::election::Timing::default(),
            )
            .await;
            println!("{report:?}");
        }
    };
}

/// Generates one `#[tokio::test]` per check of [`contract`] for a backend.
///
/// `$factory` is a path to an `async fn() -> Option<impl LockFactory>` (called once per
/// test); `None` skips the test, for a factory that found no server and reported it with
/// [`process::server_missing`] (which fails instead under `CI`). The
/// calling crate needs `tokio` (with `macros` and `rt-multi-thread`) among its
/// dev-dependencies.
///
/// ```ignore
/// lease_elect::contract_tests!(my_factory);
/// ```
#[macro_export]
macro_rules! contract_tests {
    ($factory:path) => {
        $crate::contract_tests!(@tests $factory;
            contract_get_missing => get_missing,
            contract_create_twice_conflicts => create_twice_conflicts,
            contract_stale_update_conflicts => stale_update_conflicts,
            contract_update_missing_conflicts => update_missing_conflicts,
            contract_concurrent_updates_one_wins => concurrent_updates_one_wins,
            contract_concurrent_creates_one_wins => concurrent_creates_one_wins,
            contract_record_round_trips => record_round_trips,
            contract_versions_fresh_and_sequences_monotonic => versions_fresh_and_sequences_monotonic,
            contract_delete => delete,
            contract_describe_stable_identity_kept => describe_stable_identity_kept,
            contract_names_independent => names_independent,
            contract_corrupt_is_error => corrupt_is_error,
            contract_wait_for_change => wait_for_change,
        );
    };
    (@tests $factory:path; $($test:ident => $check:ident),* $(,)?) => {
        $(
            #[::tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $test() {
                let Some(factory) = $factory().await else {
                    return;
                };
                $crate::testing::contract::$check(&factory).await;
            }
        )*
    };
}
