//! sched-driver: kube-scheduler's scheduling loop on tokio, around sched-core's deterministic
//! engine ([`sched_core::scheduler::Scheduler`]).
//!
//! # Start here
//! 1. Build the engine: a [`Scheduler`](sched_core::scheduler::Scheduler) from a
//!    `KubeSchedulerConfiguration` or from profiles, over a snapshot of the cluster.
//! 2. Implement a [`Binder`] (kube's PreBind, Bind and PostBind against your API server) and,
//!    for preemption, a [`VictimDeleter`].
//! 3. Build a [`Driver`] ([`Driver::builder`], validated once), take a [`DriverHandle`] for
//!    your informers (cluster events in, Permit allows and rejects, events out, status), and
//!    `run` it with a shutdown future.
//!
//! ```
//! use std::time::Duration;
//! use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
//! use sched_core::config::{Registry, SchedulerConfiguration};
//! use sched_core::scheduler::{ClusterEvent, Scheduler};
//! use sched_core::snapshot::Snapshot;
//! use sched_driver::{BindError, Binder, Binding, Driver};
//!
//! /// Binds by printing; a real binder posts a `pods/binding` and the informer reports back.
//! struct PrintBinder;
//!
//! #[sched_driver::async_trait]
//! impl Binder for PrintBinder {
//!     async fn bind(&self, b: &Binding) -> Result<(), BindError> {
//!         println!("{} -> {}", b.pod, b.node);
//!         Ok(())
//!     }
//! }
//!
//! # tokio::runtime::Builder::new_multi_thread().enable_all().build()?.block_on(async {
//! let (nodes, running) = benchmark_cluster(10);
//! let snapshot = Snapshot::from_objects(nodes, running)?;
//! let config = SchedulerConfiguration::v1_34_default();
//! let scheduler = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1)?;
//! let driver = Driver::builder(scheduler)
//!     .binder(PrintBinder)
//!     .max_concurrent_binds(16)
//!     .build()?;
//! let handle = driver.handle();
//! let running = tokio::spawn(driver.run(std::future::pending()));
//! for i in 0..3 {
//!     handle.apply(ClusterEvent::add(benchmark_pod(i)))?;
//! }
//! let status = handle.settled().await?;
//! assert_eq!(status.queue.active, 0);
//! handle.shutdown();
//! let scheduler = running.await??;
//! // Bound and assumed until the informer confirms them.
//! assert_eq!(scheduler.snapshot().pod_count(), 10 * 10 + 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! # })?;
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # As kube-scheduler runs it
//! - **The scheduling cycle never waits for a binding**: each [`Step::Bind`] goes to the
//!   [`Binder`] on its own task while the engine schedules the next pods; at most
//!   [`DriverBuilder::max_concurrent_binds`] run at once. Results go back through
//!   `finish_binding`: a failure forgets the assumed pod and backs it off, so it is bound
//!   again later, possibly elsewhere.
//! - **Preemption**: the victims of a [`Step::Preempt`] go to the [`VictimDeleter`] on a task
//!   (as kube's asynchronous preemption); their deletion, reported by the informer, frees the
//!   node and wakes the preemptor.
//! - **HTTP extenders** (a configuration's `extenders`): a pod one of them is interested in
//!   is parked by the engine ([`Step::CallExtenders`]); its filter and prioritize calls are
//!   sent on a task (hyper over rustls, each within its extender's `httpTimeout`, TLS as
//!   kube's `makeTransport`) and the replies go back to the engine, which finishes the
//!   attempt, so a slow extender does not hold up the pods it does not manage (kube's cycle
//!   waits). A binder extender binds over HTTP on the bind task; a preempt verb is called
//!   within the attempt, on the engine's blocking-pool thread.
//! - **Time**: [`Step::Idle`]'s `until` (a backoff or an unschedulable pod's longest stay) and
//!   Permit waits ([`Step::Waiting`]'s `until`) wake the engine, as does any event.
//! - **Blocking plugins are fine**: the engine runs on tokio's blocking pool, never on the
//!   async workers.
//! - **Shutdown drains**: scheduling stops, the bindings and deletions in flight finish and
//!   their results are applied before [`Driver::run`] returns the engine.
//! - **Fencing**: a hook's `Fenced` error (a lost lease, a stale fencing token) stops the
//!   driver at once ([`DriverError::Fenced`]).
//!
//! [`Step::Bind`]: sched_core::scheduler::Step::Bind
//! [`Step::Preempt`]: sched_core::scheduler::Step::Preempt
//! [`Step::Idle`]: sched_core::scheduler::Step::Idle
//! [`Step::CallExtenders`]: sched_core::scheduler::Step::CallExtenders
//! [`Step::Waiting`]: sched_core::scheduler::Step::Waiting
//!
//! # Metrics
//! With the `metrics` feature, `metrics::SchedulerMetrics` reports kube-scheduler's
//! `scheduler_schedule_attempts_total`, `scheduler_scheduling_attempt_duration_seconds`,
//! `scheduler_pending_pods`, `scheduler_preemption_attempts_total`,
//! `scheduler_preemption_victims` and `scheduler_pod_scheduling_sli_duration_seconds`.

mod driver;
mod events;
mod hooks;
mod http;
#[cfg(feature = "metrics")]
pub mod metrics;
#[cfg(not(feature = "metrics"))]
mod metrics;

/// Re-exported so implementations of [`Binder`] and [`VictimDeleter`] need no extra
/// dependency.
pub use async_trait::async_trait;
pub use driver::{BuildError, Driver, DriverBuilder, DriverError, DriverHandle, Stopped};
pub use events::{DriverEvent, DriverStatus, StepTaken};
pub use hooks::{
    BindError, Binder, Binding, BoxError, ClaimDeallocator, DeleteError, Preemption, VictimDeleter,
};
