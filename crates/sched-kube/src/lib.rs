//! sched-kube: sched-core's scheduling engine as a second scheduler on a Kubernetes API
//! server, run as kube-scheduler runs, for the pods that name its profiles
//! (`spec.schedulerName`).
//!
//! # Start here
//! ```no_run
//! use sched_core::config::SchedulerConfiguration;
//! use sched_kube::{KubeScheduler, Options};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let client = kube::Client::try_default().await?; // in-cluster or ~/.kube/config
//! let config = SchedulerConfiguration::from_file("scheduler.yaml")?;
//! let scheduler = KubeScheduler::new(client, Options::new(config, "replica-a"))?;
//! let addr = scheduler.serve("0.0.0.0:10251".parse()?).await?; // /healthz, /readyz, /metrics
//! scheduler.run(async { tokio::signal::ctrl_c().await.ok(); }).await?;
//! # let _ = addr; Ok(()) }
//! ```
//! The binary `sched-kube-scheduler` does the same from flags (`--config`, `--kubeconfig`,
//! `--identity`, `--address`).
//!
//! # What a term of leadership does
//! 1. **Elect** (the configuration's `leaderElection`, on by default): replicas share the
//!    Lease `resourceNamespace/resourceName` through lease-elect-kube; only the leader
//!    schedules, and every write it makes checks that its term is still valid first
//!    ([`writes::Fence`]). A replica that loses its lease stops: [`KubeScheduler::run`]
//!    returns [`RunError::LeadershipLost`] (kube-scheduler exits too).
//! 2. **Rebuild from the watches**: one kube-rs watcher per [`kinds::WATCHED`] kind (list,
//!    watch, relist on expiry, backoff while the API server is away), started with the run,
//!    before the election (kube-scheduler's default): a standby keeps each object's latest
//!    state, and a new leader builds its engine from it at once. Nothing is scheduled until
//!    every kind is listed (kube's cache sync); the listing is applied in dependency order,
//!    pending pods last. A malformed object is logged, counted
//!    (`sched_kube_malformed_objects_total`) and skipped.
//! 3. **Schedule** with sched-driver: bindings through `pods/binding` with the pod's UID as a
//!    precondition, at most [`Options::max_concurrent_binds`] at once; a refused or failed
//!    binding unreserves the pod (DynamicResources takes it out of its claims'
//!    `reservedFor`, as kube's Unreserve) and requeues it; assumed pods are confirmed when the watch
//!    reports them bound. PreBind writes VolumeBinding's decisions (PersistentVolume
//!    `claimRef`s, the `selected-node` annotation of claims to provision) and
//!    DynamicResources' (each claim's allocation and `reservedFor`).
//! 4. **Report as kube does**: `Scheduled`, `FailedScheduling` and `Preempted` Events
//!    (`events.k8s.io/v1`), the `PodScheduled=False` condition with kube's message,
//!    `nominatedNodeName` for a preemptor (lower-priority pods nominated to its node lose
//!    theirs), `DisruptionTarget` on a victim before its (graceful) deletion, victims
//!    deleted in parallel.
//!
//! # Differences from kube-scheduler
//! - PreBind does not wait for the PersistentVolume controller to finish volume bindings
//!   (kube waits up to `bindTimeoutSeconds`).
//! - A bound pod whose node the engine does not know yet is refused by the engine (kube's
//!   cache keeps it on a placeholder node); each watch lists on its own, so this can happen
//!   only when a pod's watch relists before its node's does.
//! - After a failed binding, Unreserve takes the pod out of the `reservedFor` of the claims
//!   its binding wrote; a claim that was reserved for the pod before the cycle keeps it
//!   (kube removes the pod from every allocated claim reserved for it).
//! - Events are not aggregated into series as client-go's recorder does, and the
//!   `PodScheduled` condition's `observedGeneration` is not written.
//!
//! # Permissions
//! The service account needs kube-scheduler's (`system:kube-scheduler`): get, list, watch of
//! every watched kind; create of `pods/binding` and `events.k8s.io` events; patch of
//! `pods/status`, persistentvolumes and persistentvolumeclaims; delete of pods; and the
//! Lease permissions of lease-elect-kube.

pub mod kinds;
pub mod writes;

mod feed;
mod hooks;
mod report;
mod serve;

use std::net::SocketAddr;
use std::pin::pin;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use kube::Client;
use lease_elect::{
    ElectionConfig, ElectionMetrics, LeaderCallbacks, LeaderElector, LeaderGuard, RunOutcome,
};
use lease_elect_kube::LeaseLock;
use sched_core::config::{ConfigError, Registry, SchedulerConfiguration};
use sched_core::scheduler::Scheduler;
use sched_core::snapshot::Snapshot;
use sched_driver::metrics::SchedulerMetrics;
use sched_driver::{BuildError, Driver, DriverError};
use tokio_util::sync::CancellationToken;

use crate::feed::{Feed, FeedMsg, FeedStats};
use crate::hooks::{KubeBinder, KubeClaimDeallocator, KubeVictimDeleter};
use crate::serve::Health;
use crate::writes::{Fence, Writer};

/// How a [`KubeScheduler`] runs.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Options {
    /// The `KubeSchedulerConfiguration`: profiles, extenders, `leaderElection`.
    pub config: SchedulerConfiguration,
    /// This replica's identity in the Lease and in Events (kube: the hostname and a UUID).
    pub identity: String,
    /// At most this many bindings in flight (default 64).
    pub max_concurrent_binds: usize,
    /// Seeds the tie-breaking among equally scored nodes.
    pub seed: u64,
}

impl Options {
    /// Options with the defaults.
    pub fn new(config: SchedulerConfiguration, identity: impl Into<String>) -> Options {
        Options {
            config,
            identity: identity.into(),
            max_concurrent_binds: 64,
            seed: 0,
        }
    }
}

/// Why [`KubeScheduler`] stopped or did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RunError {
    /// The configuration's profiles did not compile.
    #[error("configuration: {0}")]
    Config(#[from] ConfigError),
    /// The leader election settings were refused.
    #[error("leader election: {0}")]
    Election(String),
    /// The driver's settings were refused.
    #[error("driver: {0}")]
    Build(#[from] BuildError),
    /// The driver stopped with an error (fenced off, a panicking plugin).
    #[error("driver: {0}")]
    Driver(#[from] DriverError),
    /// A watch stopped (its task panicked, or the engine's feed closed): the term ends
    /// rather than schedule on a kind that no longer changes.
    #[error("a watch stopped")]
    WatchEnded,
    /// A watch task panicked.
    #[error("a watch panicked: {0}")]
    WatchPanicked(String),
    /// This replica led and lost its lease (kube-scheduler exits: "leaderelection lost").
    #[error("leaderelection lost")]
    LeadershipLost,
}

/// The scheduler on an API server; see the crate's docs.
pub struct KubeScheduler {
    client: Client,
    options: Options,
    metrics: SchedulerMetrics,
    election_metrics: ElectionMetrics,
    stats: FeedStats,
    health: Arc<Health>,
    /// The watches while this replica waits to lead.
    standby: Mutex<Option<Standby>>,
}

/// A standby replica's watches, on their task until a term takes them (dropped: stopped).
struct Standby {
    /// Cancelled when a term takes the watches.
    handover: CancellationToken,
    /// Keeps the watches' view and returns it, or the error of a watch that stopped.
    task: tokio::task::JoinHandle<Result<Feed, RunError>>,
}

impl Drop for Standby {
    fn drop(&mut self) {
        // A run dropped while standing by stops its watches (a finished task: no effect).
        self.task.abort();
    }
}

impl KubeScheduler {
    /// A scheduler for `client`'s API server; its profiles are compiled once here to report
    /// configuration errors before anything runs.
    ///
    /// # Errors
    /// [`RunError::Config`].
    pub fn new(client: Client, options: Options) -> Result<KubeScheduler, RunError> {
        Scheduler::from_config(&options.config, &Registry::v1_34(), Snapshot::new(), 0)?;
        let metrics = SchedulerMetrics::new();
        let election_metrics = ElectionMetrics::new();
        let stats = FeedStats::default();
        let mut registry = prometheus_client::registry::Registry::default();
        metrics.register(&mut registry);
        election_metrics.register(&mut registry);
        stats.register(&mut registry);
        Ok(KubeScheduler {
            client,
            options,
            metrics,
            election_metrics,
            stats,
            health: Arc::new(Health {
                registry,
                ready: false.into(),
                leading: false.into(),
                elector: OnceLock::new(),
            }),
            standby: Mutex::new(None),
        })
    }

    /// Serves `/healthz`, `/readyz` and `/metrics` on `addr` (port 0 picks one); returns the
    /// address bound.
    ///
    /// # Errors
    /// The listener's.
    pub async fn serve(&self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        serve::serve(addr, self.health.clone()).await
    }

    /// Runs until `shutdown` resolves (then a leader releases its Lease) or this replica
    /// loses its lease.
    ///
    /// # Errors
    /// [`RunError::LeadershipLost`], or the driver's error.
    pub async fn run(self, shutdown: impl Future<Output = ()> + Send) -> Result<(), RunError> {
        let this = Arc::new(self);
        let le = this.options.config.leader_election.clone();
        if !le.leader_elect {
            return this.lead(Fence::unfenced(), shutdown).await;
        }
        let lock = LeaseLock::new(
            this.client.clone(),
            &le.resource_namespace,
            &le.resource_name,
            &this.options.identity,
        );
        let config = ElectionConfig::builder()
            .lock(lock)
            .name(&le.resource_name)
            .lease_duration(le.lease_duration)
            .renew_deadline(le.renew_deadline)
            .retry_period(le.retry_period)
            .release_on_cancel(true)
            .metrics(&this.election_metrics)
            .build()
            .map_err(|e| RunError::Election(e.to_string()))?;
        let elector = LeaderElector::new(config);
        let health = this.health.clone();
        let _ = health.elector.set(elector.clone());
        let failed = CancellationToken::new();
        this.start_standby(failed.clone());
        let shutting_down = CancellationToken::new();
        let callbacks = Callbacks {
            scheduler: this.clone(),
            result: Mutex::new(None),
            failed: failed.clone(),
            shutting_down: shutting_down.clone(),
            term_over: Mutex::new(None),
        };
        // The elector releases the Lease when this resolves: on a shutdown, only after the
        // term (if one runs) has drained its bindings, so that nothing is cut half-way.
        let stop = async {
            tokio::select! {
                () = shutdown => {}
                () = failed.cancelled() => return,
            }
            shutting_down.cancel();
            let term_over = callbacks
                .term_over
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone();
            if let Some(t) = term_over {
                t.cancelled().await;
            }
        };
        let outcome = elector.run(&callbacks, stop).await;
        health.leading.store(false, Ordering::Relaxed);
        // A replica that never led stops its watches (dropping them), or reports the one
        // that stopped.
        let standby = this
            .standby
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(mut s) = standby
            && s.task.is_finished()
            && let Ok(Err(e)) = (&mut s.task).await
        {
            return Err(e);
        }
        let result = callbacks
            .result
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match (outcome, result) {
            (_, Some(Err(e))) => Err(e),
            (RunOutcome::LostLeadership, _) => Err(RunError::LeadershipLost),
            _ => Ok(()),
        }
    }

    /// Starts the watches before the election: a standby keeps the cluster's latest state
    /// until a term takes it ([`KubeScheduler::feed_for_term`]). A watch that stops while
    /// standing by stops the others and cancels `failed` (the run ends with its error).
    fn start_standby(&self, failed: CancellationToken) {
        let mut feed = Feed::start(&self.client, &self.stats);
        let handover = CancellationToken::new();
        let taken = handover.clone();
        let task = tokio::spawn(async move {
            loop {
                tokio::select! {
                    r = feed.absorb_next() => if let Err(ended) = r {
                        drop(feed);
                        failed.cancel();
                        return Err(watch_ended(ended));
                    },
                    () = taken.cancelled() => return Ok(feed),
                }
            }
        });
        *self.standby.lock().unwrap_or_else(PoisonError::into_inner) =
            Some(Standby { handover, task });
    }

    /// The standby's watches (or new ones, when none run).
    async fn feed_for_term(&self) -> Result<Feed, RunError> {
        let standby = self
            .standby
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let Some(mut standby) = standby else {
            return Ok(Feed::start(&self.client, &self.stats));
        };
        standby.handover.cancel();
        match (&mut standby.task).await {
            Ok(taken) => taken,
            Err(join) => Err(RunError::WatchPanicked(join.to_string())),
        }
    }

    /// One term: take the watches' view (kube's cache sync: every kind listed first), then
    /// schedule until `stop`.
    async fn lead(&self, fence: Fence, stop: impl Future<Output = ()>) -> Result<(), RunError> {
        let health = &self.health;
        health.leading.store(true, Ordering::Relaxed);
        let mut stop = pin!(stop);
        let mut feed = self.feed_for_term().await?;
        while !feed.is_synced() {
            tokio::select! {
                r = feed.absorb_next() => r.map_err(watch_ended)?,
                () = &mut stop => return Ok(()),
            }
        }
        let listing = feed.take_listing();
        let Feed {
            pods,
            mut rx,
            mut watches,
            ..
        } = feed;
        let scheduler = Scheduler::from_config(
            &self.options.config,
            &Registry::v1_34(),
            Snapshot::new(),
            self.options.seed,
        )?;
        let writer = Writer::new(self.client.clone(), fence.clone(), &self.options.identity);
        let driver = Driver::builder(scheduler)
            .binder(KubeBinder {
                writer: writer.clone(),
            })
            .victim_deleter(KubeVictimDeleter {
                writer: writer.clone(),
                pods: pods.clone(),
            })
            .claim_deallocator(KubeClaimDeallocator {
                writer: writer.clone(),
            })
            .max_concurrent_binds(self.options.max_concurrent_binds)
            .event_capacity(1 << 16)
            .metrics(&self.metrics)
            .build()?;
        let handle = driver.handle();
        for e in listing {
            if handle.apply(e).is_err() {
                return Ok(());
            }
        }
        tokio::spawn(report::run(handle.subscribe(), writer, pods.clone()));
        let driver_stop = CancellationToken::new();
        // The elector drops this future when the term is lost: the driver stops with it.
        let _stop_driver_on_drop = driver_stop.clone().drop_guard();
        let mut run = {
            let stop = driver_stop.clone();
            tokio::spawn(driver.run(async move { stop.cancelled().await }))
        };
        health.ready.store(true, Ordering::Relaxed);
        tracing::info!(identity = %self.options.identity, "watches synced; scheduling");
        let mut failure = None;
        let ended = loop {
            tokio::select! {
                m = rx.recv() => match m {
                    Some(FeedMsg::Event(_, e)) => {
                        if handle.apply(e).is_err() {
                            break None;
                        }
                    }
                    Some(FeedMsg::Synced(_)) => {}
                    None => break None,
                },
                Some(ended) = watches.join_next() => {
                    // A watch that stopped leaves its kind frozen: end the term.
                    failure = Some(watch_ended(ended));
                    break None;
                }
                r = &mut run => break Some(r),
                () = &mut stop => break None,
            }
        };
        health.ready.store(false, Ordering::Relaxed);
        watches.abort_all();
        let result = match ended {
            Some(r) => r,
            None => {
                driver_stop.cancel();
                // Bindings in flight finish (or are fenced off) before the term ends.
                tokio::time::timeout(Duration::from_secs(30), &mut run)
                    .await
                    .unwrap_or_else(|_| {
                        run.abort();
                        Ok(Err(DriverError::EnginePanicked(
                            "did not drain in 30 s".into(),
                        )))
                    })
            }
        };
        if let Some(f) = failure {
            return Err(f);
        }
        match result {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(e)) => Err(e.into()),
            Err(join) => Err(DriverError::EnginePanicked(join.to_string()).into()),
        }
    }
}

/// The error for a watch task that ended (they run until aborted).
fn watch_ended(ended: Result<(), tokio::task::JoinError>) -> RunError {
    match ended {
        Err(e) if e.is_panic() => RunError::WatchPanicked(e.to_string()),
        _ => RunError::WatchEnded,
    }
}

/// The elector's callbacks: a term runs [`KubeScheduler::lead`].
struct Callbacks {
    scheduler: Arc<KubeScheduler>,
    result: Mutex<Option<Result<(), RunError>>>,
    /// Cancelled when a term ends with an error: the run ends.
    failed: CancellationToken,
    /// Cancelled on shutdown: the running term drains and ends.
    shutting_down: CancellationToken,
    /// The running term's: cancelled when it has ended (drained).
    term_over: Mutex<Option<CancellationToken>>,
}

#[lease_elect::async_trait]
impl LeaderCallbacks for Callbacks {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        tracing::info!(identity = %self.scheduler.options.identity, token = guard.token().0, "leading");
        let term_over = CancellationToken::new();
        let _over_when_dropped = term_over.clone().drop_guard();
        *self
            .term_over
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(term_over);
        let lost = guard.clone();
        let shutting_down = self.shutting_down.clone();
        let stop = async move {
            tokio::select! {
                () = lost.lost() => {}
                () = shutting_down.cancelled() => {}
            }
        };
        let result = self
            .scheduler
            .lead(Fence::leader(guard.clone()), stop)
            .await;
        // A term that ended while its lease is still valid (an error, or a shutdown) ends
        // the run, so that another replica can lead.
        if result.is_err() || guard.is_valid() {
            self.failed.cancel();
        }
        *self.result.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
    }

    fn on_new_leader(&self, identity: &str) {
        tracing::info!(leader = identity, "new leader");
    }
}
