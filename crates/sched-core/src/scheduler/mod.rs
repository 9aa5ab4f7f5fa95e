//! kube-scheduler's scheduling cycle (`scheduleOne`) as a deterministic engine: cluster events
//! in, steps out, time passed in as a value (no clock, no threads, no async), so that hours
//! of scheduling run in milliseconds under a simulated clock, reproducibly from a seed.
//!
//! ```
//! use std::time::Duration;
//! use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
//! use sched_core::config::{Registry, SchedulerConfiguration};
//! use sched_core::scheduler::{ClusterEvent, Scheduler, Step};
//! use sched_core::snapshot::Snapshot;
//!
//! // kube-scheduler's --config file, and the cluster as the informers list it.
//! let config = SchedulerConfiguration::from_text(
//!     "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
//!      profiles:\n- schedulerName: default-scheduler\n",
//! )?;
//! let (nodes, running) = benchmark_cluster(10);
//! let snapshot = Snapshot::from_objects(nodes, running)?;
//! let mut scheduler = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1)?;
//! let mut now = Duration::ZERO;
//! for i in 0..3 {
//!     scheduler.apply(ClusterEvent::PodAdd(benchmark_pod(i)), now);
//! }
//! let mut bound = Vec::new();
//! loop {
//!     match scheduler.schedule_one(now) {
//!         Step::Bind { pod, node, .. } => {
//!             // Bind through the API server (your binder), then report the result; the
//!             // informer's report of the bound pod confirms it later.
//!             scheduler.finish_binding(&pod, Ok(()), now);
//!             bound.push((pod, node));
//!         }
//!         Step::Preempt { victims, .. } => {
//!             // Delete the victims; their deletion events wake the preemptor.
//!             for v in victims {
//!                 scheduler.apply(ClusterEvent::PodDelete(v), now);
//!             }
//!         }
//!         Step::Idle { until: Some(t) } => now = t, // a backoff ends then
//!         Step::Idle { until: None } => break,      // only an event can change anything
//!         _ => {} // unschedulable (it waits), rejected, waiting at Permit, failed
//!     }
//! }
//! assert_eq!(bound.len(), 3);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What it does, as kube does
//! - **Queue** ([`SchedulingQueue`]): activeQ in PrioritySort order (priority, then time
//!   queued), backoffQ (initial backoff doubled per attempt up to the maximum), the
//!   unschedulable pool (a pod waits for an event that can help it, chosen from the reasons
//!   its nodes gave, or 5 minutes), gated pods (scheduling gates) until their gates go. Pods of
//!   other schedulers and pods being deleted are not scheduled.
//! - **Profiles** by `spec.schedulerName`, one queue for all.
//! - **Assume and bind**: a placed pod is assumed into the snapshot at once and handed out as
//!   [`Step::Bind`]; the caller binds and calls [`Scheduler::finish_binding`]. A failed bind
//!   forgets the assumed pod exactly, requeues it with backoff, and lets pods waiting for
//!   freed resources try again. The informer's later report of the bound pod confirms it.
//!
//! - **Reserve and Permit** ([`ReservePlugin`], [`PermitPlugin`]): run after the assume; a
//!   Reserve error or a Permit rejection unreserves (every Reserve plugin, in reverse),
//!   forgets and requeues the pod; a Permit wait holds the pod assumed
//!   ([`Step::Waiting`]) until [`Scheduler::allow`], [`Scheduler::reject`] or its timeout
//!   (kube's "rejected due to timeout after waiting at permit"). A failed bind unreserves too.
//!
//! - **Namespaces** arrive as events ([`ClusterEvent::NamespaceAdd`], ...): their labels are
//!   what `namespaceSelector` in pod affinity terms reads; an added Namespace or changed labels
//!   wake pods rejected by inter-pod affinity, as kube's InterPodAffinity registers.
//! - **Volumes**: PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers and
//!   CSIStorageCapacities arrive as events
//!   ([`ClusterEvent::PersistentVolumeAdd`], ...) and wake the pods that wait for them (kube's
//!   events of VolumeBinding, VolumeZone, NodeVolumeLimits and VolumeRestrictions).
//!   VolumeBinding's Reserve assumes the PersistentVolumes it matched to a pod's unbound
//!   `WaitForFirstConsumer` claims and pins the claims to provision to the node, so no other
//!   pod counts on them; [`Step::Bind`] carries these bindings for the caller to write before
//!   binding the pod (kube's PreBind). An unreserve (a failed bind, a rejection, a deleted
//!   pod) gives them back, except objects the informer has replaced since.
//!
//! - **Preemption** (DefaultPreemption, [`preemption`], kube v1.34): when no node takes a pod
//!   that may preempt, a dry run goes through the nodes where removing lower-priority pods
//!   could help, from an offset the engine draws from its seeded generator
//!   ([`Scheduler::with_preemption_seed`]), until it has kube's number of candidates; on
//!   each node it finds the fewest victims (PodDisruptionBudget-violating victims reprieved
//!   first, then the others, most important first) and the node is chosen by kube's order
//!   (fewest budget violations first). [`Step::Preempt`] names the victims to delete; the
//!   pod is nominated to the node, where it is tried first next time, and lower-priority
//!   pods nominated there lose their nomination. A pod whose nominated node has a victim
//!   still terminating does not preempt again; one for which preemption finds nothing loses
//!   its nomination. Preemption runs as the profile's PostFilter plugins do ([`post_filter`]:
//!   a configuration's DynamicResources, then DefaultPreemption with its arguments; a profile
//!   given to [`Scheduler::new`] runs DefaultPreemption alone), and in a v1.34 profile the
//!   FitError of [`Step::Unschedulable`] and of [`SchedulerEvent::FailedScheduling`] ends with
//!   their message as kube's does ("... no new claims to deallocate, preemption: 0/3 nodes are
//!   available: 3 No preemption victims found for incoming pod.").
//! - **Nominated pods hold their node** ([`Nominator`], kube's nominator): pods nominated by
//!   preemption or by their `status.nominatedNodeName` count, on their node, as if they ran
//!   there when pods of lower or equal priority are filtered (kube's
//!   `RunFilterPluginsWithNominatedPods`: with them, then without them); a nomination goes
//!   when its pod is bound, assumed, deleted or nominated elsewhere. The engine behaves as if
//!   its status patches landed: an update that carries no `nominatedNodeName` keeps the
//!   nomination made here. Without nominated pods of at least the pod's priority the cycle
//!   runs exactly as before (one check of the nominator).
//! - **PodDisruptionBudgets** arrive as [`ClusterEvent::PdbAdd`], [`ClusterEvent::PdbUpdate`]
//!   and [`ClusterEvent::PdbDelete`] ([`pdb`] for kube's rule).
//!
//! - **Extenders** ([`crate::extender`], [`Scheduler::with_extender`] in the order added, a
//!   configuration's `extenders` in [`Scheduler::from_config`], ignorable ones last as kube
//!   orders them): after the filter plugins, each interested
//!   extender in order narrows the feasible nodes (its failed nodes join the fit error with
//!   its message; unresolvable ones are never preemption candidates); an ignorable
//!   extender's error is skipped ([`SchedulerEvent::ExtenderSkipped`]), another's fails the
//!   attempt; scores are added as score x weight x 10; a nominated node must pass them too;
//!   the first interested binder extender comes in [`Step::Bind`]'s `extender_binder`;
//!   extenders that preempt narrow preemption's candidates before the choice (kube's
//!   `callExtenders`).
//!
//! # Not yet
//! Queueing hints are approximated by the events each rejection
//! reason registers ([`events_for`]); preemption has no asynchronous mode (the victims are
//! handed out as a step), no custom victim eligibility or ordering hooks, and pods being
//! bound or held at Permit are never victims (kube rejects a waiting pod it preempts).

mod binding;
mod events;
mod extender;
mod hooks;
mod nominator;
pub mod pdb;
pub mod post_filter;
pub mod preemption;
mod queue;

use std::sync::Arc;
use std::time::Duration;

use binding::AssumedPods;
pub use events::{ClusterEvent, EventMask, events_for};
pub use extender::{ExtenderCycle, Skipped};
pub use hooks::{PermitDecision, PermitPlugin, ReservePlugin};
pub use nominator::Nominator;
use post_filter::PostFilterPlugins;
pub use queue::{QueueCounts, QueueName, QueueSettings, SchedulingQueue, Tries};

use crate::config::{ConfigError, DEFAULT_SCHEDULER_NAME, Registry, SchedulerConfiguration};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::extender::{Extender, ExtenderBinder};
use crate::framework::KubeVersion;
use crate::model::{Pod, PodDisruptionBudget};
use crate::plugins::volume::AssumedVolumes;
use crate::profile::{Cache, FitError, Profile, ScheduleError};
use crate::snapshot::Snapshot;

/// What the caller must do next.
#[derive(Debug)]
#[non_exhaustive]
pub enum Step {
    /// Bind the pod to the node (the pod is assumed there already), then call
    /// [`Scheduler::finish_binding`].
    Bind {
        /// `namespace/name`.
        pod: String,
        /// The node.
        node: String,
        /// The profile (scheduler name) that placed it.
        profile: String,
        /// The volume bindings to write before binding the pod (kube's VolumeBinding
        /// PreBind): PersistentVolumes reserved for its unbound `WaitForFirstConsumer` claims
        /// and claims to provision on the node. Empty for most pods.
        volumes: AssumedVolumes,
        /// The extender that binds the pod instead of the caller's binder (kube: the first
        /// binder extender interested in the pod): call [`ExtenderBinder::bind`] and report
        /// its result to [`Scheduler::finish_binding`]. `None`: the caller binds.
        extender_binder: Option<ExtenderBinder>,
    },
    /// No node fits the pod; it waits in the unschedulable pool (kube's FailedScheduling).
    Unschedulable {
        /// `namespace/name`.
        pod: String,
        /// Every node's reasons.
        error: FitError,
    },
    /// No node took the pod, but deleting these lower-priority pods makes room on `node`
    /// (kube's DefaultPreemption): delete the victims; the pod is nominated to the node and
    /// waits, and is tried there first once the deletions arrive. Victims already being
    /// deleted are not listed again.
    Preempt {
        /// `namespace/name` of the preemptor.
        pod: String,
        /// The node it is nominated to.
        node: String,
        /// `namespace/name` of the pods to delete, most important first.
        victims: Vec<String>,
    },
    /// A Reserve or Permit plugin refused the placement (or a Permit wait timed out): the
    /// pod was unreserved and forgotten; after a Reserve error it backs off, after a Permit
    /// rejection it waits in the unschedulable pool.
    Rejected {
        /// `namespace/name`.
        pod: String,
        /// The plugin that refused.
        plugin: String,
        /// Its reason.
        reason: String,
    },
    /// A Permit plugin holds the pod, assumed on `node`, until it is allowed
    /// ([`Scheduler::allow`]), rejected ([`Scheduler::reject`]) or `until` passes.
    Waiting {
        /// `namespace/name`.
        pod: String,
        /// The node it is assumed on.
        node: String,
        /// When the wait times out.
        until: Duration,
    },
    /// The attempt failed with an error (a plugin error, an unsupported pod); the pod backs
    /// off.
    Failed {
        /// `namespace/name`.
        pod: String,
        /// Why.
        error: ScheduleError,
    },
    /// Nothing to do: call again at `until` (a backoff or the longest unschedulable stay
    /// ends), or after the next event (`None`: only an event can change anything).
    Idle {
        /// When the queue next changes by itself.
        until: Option<Duration>,
    },
}

/// Something the scheduler did or refused, for logs and Kubernetes events.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchedulerEvent {
    /// The pod was bound (kube's `Scheduled` event).
    Scheduled {
        /// `namespace/name`.
        pod: String,
        /// The node.
        node: String,
    },
    /// No node fits (kube's `FailedScheduling`, with kube's message).
    FailedScheduling {
        /// `namespace/name`.
        pod: String,
        /// kube's message ("0/3 nodes are available: ...").
        message: String,
    },
    /// The binding failed; the assumed pod was forgotten and requeued.
    BindingFailed {
        /// `namespace/name`.
        pod: String,
        /// The node it was assumed on.
        node: String,
        /// The binder's error.
        message: String,
    },
    /// An extender failed and was passed over, as kube does (an ignorable extender's filter
    /// error, or any prioritize error): the attempt went on without it.
    ExtenderSkipped {
        /// `namespace/name` of the pod being scheduled.
        pod: String,
        /// The extender.
        extender: String,
        /// Its error.
        message: String,
    },
    /// An event could not be applied to the snapshot (a pod bound to an unknown node, ...);
    /// nothing was changed.
    Rejected {
        /// What the event was about.
        object: String,
        /// Why.
        message: String,
    },
}

/// One profile and its worker cache.
#[derive(Debug)]
struct Slot {
    name: String,
    profile: Profile,
    cache: Cache,
    /// The PostFilter plugins (DefaultPreemption with its arguments, DynamicResources).
    post_filter: PostFilterPlugins,
}

/// The configuration's extenders as HTTP extenders, the ignorable ones last (kube's
/// `buildExtenders`).
#[cfg(feature = "http-extender")]
fn http_extenders(config: &SchedulerConfiguration) -> Result<Vec<Arc<dyn Extender>>, ConfigError> {
    let mut out: Vec<Arc<dyn Extender>> = Vec::new();
    let mut ignorable: Vec<Arc<dyn Extender>> = Vec::new();
    let mut problems = Vec::new();
    for (i, e) in config.extenders.iter().enumerate() {
        match crate::extender::HttpExtender::new(e) {
            Ok(h) if e.ignorable => ignorable.push(Arc::new(h)),
            Ok(h) => out.push(Arc::new(h)),
            Err(err) => problems.push(crate::config::ConfigProblem::new(
                format!("extenders[{i}]"),
                crate::config::ProblemKind::Plugins(err.to_string()),
            )),
        }
    }
    if problems.is_empty() {
        out.extend(ignorable);
        Ok(out)
    } else {
        Err(ConfigError::new(problems))
    }
}

/// Without the `http-extender` feature a configuration's extenders cannot be called.
#[cfg(not(feature = "http-extender"))]
fn http_extenders(config: &SchedulerConfiguration) -> Result<Vec<Arc<dyn Extender>>, ConfigError> {
    if config.extenders.is_empty() {
        return Ok(Vec::new());
    }
    Err(ConfigError::new(vec![crate::config::ConfigProblem::new(
        "extenders",
        crate::config::ProblemKind::Unsupported(
            "calling HTTP extenders needs sched-core's `http-extender` feature".into(),
        ),
    )]))
}

/// The scheduling cycle for a set of profiles over one snapshot. See the module docs.
#[derive(Debug)]
pub struct Scheduler {
    snapshot: Snapshot,
    profiles: Vec<Slot>,
    queue: SchedulingQueue,
    /// Placed pods from their Reserve to the informer's report of them bound.
    assumed: AssumedPods,
    events: Vec<SchedulerEvent>,
    reserve: Vec<Arc<dyn ReservePlugin>>,
    permit: Vec<Arc<dyn PermitPlugin>>,
    /// Pods nominated to a node (kube's nominator).
    nominator: Nominator,
    /// PodDisruptionBudgets by `namespace/name`, in key order.
    pdbs: Vec<PodDisruptionBudget>,
    /// Draws the offset at which preemption's dry run starts.
    preemption_rng: ChaCha8Rng,
    /// Scheduler extenders, in order, for every profile.
    extenders: Vec<Arc<dyn Extender>>,
    /// kube's `nextStartNodeIndex`: one for every profile, carried into the cache of the
    /// profile that schedules the next pod and back out of it.
    next_start_index: usize,
}

impl std::fmt::Debug for dyn ReservePlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl std::fmt::Debug for dyn PermitPlugin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Scheduler {
    /// A scheduler with these profiles `(scheduler name, profile)` over `snapshot`.
    pub fn new(
        profiles: Vec<(String, Profile)>,
        snapshot: Snapshot,
        settings: QueueSettings,
    ) -> Scheduler {
        Scheduler {
            snapshot,
            profiles: profiles
                .into_iter()
                .map(|(name, profile)| Slot {
                    cache: profile.create_cache(),
                    name,
                    profile,
                    post_filter: PostFilterPlugins::default_preemption(),
                })
                .collect(),
            queue: SchedulingQueue::new(settings),
            assumed: AssumedPods::default(),
            events: Vec::new(),
            reserve: Vec::new(),
            permit: Vec::new(),
            nominator: Nominator::new(),
            pdbs: Vec::new(),
            preemption_rng: ChaCha8Rng::seed_from_u64(0),
            extenders: Vec::new(),
            next_start_index: 0,
        }
    }

    /// The round-robin index the next pod's search starts at, one for every profile as in
    /// kube-scheduler (`nextStartNodeIndex`); it matters when a percentage of nodes to score
    /// stops the search early.
    pub fn next_start_index(&self) -> usize {
        self.next_start_index
    }

    /// Seeds the generator of preemption's dry-run offset (kube's random
    /// `GetOffsetAndNumCandidates`); [`Scheduler::from_config`] seeds it with its `seed`,
    /// [`Scheduler::new`] with 0.
    #[must_use]
    pub fn with_preemption_seed(mut self, seed: u64) -> Scheduler {
        self.preemption_rng = ChaCha8Rng::seed_from_u64(seed);
        self
    }

    /// Adds a scheduler extender (called in the order added, for every profile, as kube
    /// calls a configuration's `extenders`; see [`crate::extender`]).
    #[must_use]
    pub fn with_extender(mut self, extender: impl Extender + 'static) -> Scheduler {
        self.extenders.push(Arc::new(extender));
        self
    }

    /// The extenders, in order.
    pub fn extenders(&self) -> impl Iterator<Item = &dyn Extender> {
        self.extenders.iter().map(|e| &**e)
    }

    /// Turns preemption off (or on, with kube's default arguments) for every profile.
    #[must_use]
    pub fn with_preemption(mut self, on: bool) -> Scheduler {
        for s in &mut self.profiles {
            s.post_filter.set_preemption(on);
        }
        self
    }

    /// The node `pod` is nominated to, if any (by preemption, or by its
    /// `status.nominatedNodeName`).
    pub fn nominated_node(&self, pod: &str) -> Option<&str> {
        self.nominator.node_of(pod)
    }

    /// The nominated pods.
    pub fn nominator(&self) -> &Nominator {
        &self.nominator
    }

    /// The PodDisruptionBudgets preemption respects, in `namespace/name` order.
    pub fn pdbs(&self) -> &[PodDisruptionBudget] {
        &self.pdbs
    }

    /// Adds a Reserve plugin (run in the order added, for every profile).
    #[must_use]
    pub fn with_reserve(mut self, plugin: impl ReservePlugin + 'static) -> Scheduler {
        self.reserve.push(Arc::new(plugin));
        self
    }

    /// Adds a Permit plugin (run in the order added, for every profile).
    #[must_use]
    pub fn with_permit(mut self, plugin: impl PermitPlugin + 'static) -> Scheduler {
        self.permit.push(Arc::new(plugin));
        self
    }

    /// A scheduler from a `KubeSchedulerConfiguration`: its profiles (one thread each, ties
    /// broken by an RNG seeded with `seed`) and its backoff settings.
    ///
    /// # Errors
    /// The configuration's compile errors.
    pub fn from_config(
        config: &SchedulerConfiguration,
        registry: &Registry,
        snapshot: Snapshot,
        seed: u64,
    ) -> Result<Scheduler, ConfigError> {
        let mut profiles = Vec::new();
        for (name, b) in config.profile_builders(registry)? {
            let profile = b.threads(1).seed(seed).build().map_err(|e| {
                ConfigError::new(vec![crate::config::ConfigProblem::new(
                    "profiles",
                    crate::config::ProblemKind::Plugins(e.to_string()),
                )])
            })?;
            profiles.push((name, profile));
        }
        let settings = QueueSettings::with_backoff(
            Duration::from_secs(config.pod_initial_backoff_seconds.max(0) as u64),
            Duration::from_secs(config.pod_max_backoff_seconds.max(0) as u64),
        );
        let mut scheduler = Scheduler::new(profiles, snapshot, settings).with_preemption_seed(seed);
        for (slot, p) in scheduler.profiles.iter_mut().zip(&config.profiles) {
            slot.post_filter = PostFilterPlugins::of(p, registry);
        }
        scheduler.extenders = http_extenders(config)?;
        Ok(scheduler)
    }

    /// The extender that binds `pod` on `node`, if any.
    fn binder_for(&self, pod: &Pod, node: &str) -> Option<ExtenderBinder> {
        extender::binder_for(&self.extenders, pod, node)
    }

    /// Records the extender errors an attempt passed over.
    fn note_skipped(&mut self, pod: &str, skipped: Vec<Skipped>) {
        for s in skipped {
            self.events.push(SchedulerEvent::ExtenderSkipped {
                pod: pod.to_string(),
                extender: s.extender,
                message: s.message,
            });
        }
    }

    /// The cluster as the scheduler sees it (assumed pods included).
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
    }

    /// The same engine with these queue settings (for instance kube v1.32's queue:
    /// `let q = *sched.queue().settings(); sched.with_queue_settings(q.without_pop_from_backoff())`).
    #[must_use]
    pub fn with_queue_settings(mut self, settings: QueueSettings) -> Scheduler {
        self.queue.set_settings(settings);
        self
    }

    /// The queue.
    pub fn queue(&self) -> &SchedulingQueue {
        &self.queue
    }

    /// The profile that schedules pods of this `schedulerName`.
    pub fn profile(&self, scheduler_name: &str) -> Option<&Profile> {
        self.profiles
            .iter()
            .find(|s| s.name == scheduler_name)
            .map(|s| &s.profile)
    }

    /// Takes the events recorded since the last call.
    pub fn drain_events(&mut self) -> Vec<SchedulerEvent> {
        std::mem::take(&mut self.events)
    }

    fn slot_of(&self, pod: &Pod) -> Option<usize> {
        let name = match pod.spec.scheduler_name.as_str() {
            "" => DEFAULT_SCHEDULER_NAME,
            n => n,
        };
        self.profiles.iter().position(|s| s.name == name)
    }

    fn reject_event(&mut self, object: String, message: impl ToString) {
        self.events.push(SchedulerEvent::Rejected {
            object,
            message: message.to_string(),
        });
    }

    /// Applies a cluster change to the snapshot and the queue, and moves the unschedulable
    /// pods it can help.
    pub fn apply(&mut self, event: ClusterEvent, now: Duration) {
        match event {
            ClusterEvent::NodeAdd(node) => {
                let name = node.metadata.name.clone();
                match self.snapshot.add_node(node) {
                    Ok(()) => {
                        self.queue.on_event(EventMask::NODE_ADD, now);
                    }
                    Err(e) => self.reject_event(format!("node {name}"), e),
                }
            }
            ClusterEvent::NodeUpdate(node) => {
                let name = node.metadata.name.clone();
                let Some(old) = self.snapshot.get(&name).map(|i| i.node().clone()) else {
                    return self.apply(ClusterEvent::NodeAdd(node), now);
                };
                let change = events::node_change(&old, &node);
                match self.snapshot.update_node(node) {
                    Ok(()) => {
                        self.queue.on_event(change, now);
                    }
                    Err(e) => self.reject_event(format!("node {name}"), e),
                }
            }
            ClusterEvent::NodeDelete(name) => match self.snapshot.remove_node(&name) {
                Ok(pods) => {
                    self.node_gone(&pods);
                    self.queue.on_event(EventMask::NODE_DELETE, now);
                }
                Err(e) => self.reject_event(format!("node {name}"), e),
            },
            ClusterEvent::PodAdd(pod) | ClusterEvent::PodUpdate(pod) => self.apply_pod(pod, now),
            ClusterEvent::PersistentVolumeAdd(pv) | ClusterEvent::PersistentVolumeUpdate(pv) => {
                let storage = self.snapshot.storage_mut();
                let mask = if storage.pv(&pv.metadata.name).is_some() {
                    EventMask::PV_UPDATE
                } else {
                    EventMask::PV_ADD
                };
                storage.upsert_pv(pv);
                self.queue.on_event(mask, now);
            }
            ClusterEvent::PersistentVolumeClaimAdd(pvc)
            | ClusterEvent::PersistentVolumeClaimUpdate(pvc) => {
                let storage = self.snapshot.storage_mut();
                let mask = if storage
                    .pvc(&pvc.metadata.namespace, &pvc.metadata.name)
                    .is_some()
                {
                    EventMask::PVC_UPDATE
                } else {
                    EventMask::PVC_ADD
                };
                storage.upsert_pvc(pvc);
                self.queue.on_event(mask, now);
            }
            ClusterEvent::StorageClassAdd(class) | ClusterEvent::StorageClassUpdate(class) => {
                let storage = self.snapshot.storage_mut();
                let mask = if storage.class(&class.metadata.name).is_some() {
                    EventMask::STORAGE_CLASS_UPDATE
                } else {
                    EventMask::STORAGE_CLASS_ADD
                };
                storage.upsert_class(class);
                self.queue.on_event(mask, now);
            }
            ClusterEvent::CsiNodeAdd(csi) | ClusterEvent::CsiNodeUpdate(csi) => {
                let storage = self.snapshot.storage_mut();
                let mask = if storage.csi_node(&csi.metadata.name).is_some() {
                    EventMask::CSI_NODE_UPDATE
                } else {
                    EventMask::CSI_NODE_ADD
                };
                storage.upsert_csi_node(csi);
                self.queue.on_event(mask, now);
            }
            ClusterEvent::PersistentVolumeDelete(name) => {
                self.snapshot.storage_mut().remove_pv(&name);
                self.queue.on_event(EventMask::STORAGE_DELETE, now);
            }
            ClusterEvent::PersistentVolumeClaimDelete(key) => {
                let (namespace, name) = key.split_once('/').unwrap_or(("", key.as_str()));
                self.snapshot.storage_mut().remove_pvc(namespace, name);
                self.queue.on_event(EventMask::STORAGE_DELETE, now);
            }
            ClusterEvent::StorageClassDelete(name) => {
                self.snapshot.storage_mut().remove_class(&name);
                self.queue.on_event(EventMask::STORAGE_DELETE, now);
            }
            ClusterEvent::NamespaceAdd(ns) | ClusterEvent::NamespaceUpdate(ns) => {
                let changed = self
                    .snapshot
                    .namespace_labels()
                    .labels_of(&ns.metadata.name)
                    != Some(&ns.metadata.labels);
                self.snapshot.upsert_namespace(&ns);
                if changed {
                    self.queue.on_event(EventMask::NAMESPACE, now);
                }
            }
            ClusterEvent::NamespaceDelete(name) => {
                self.snapshot.remove_namespace(&name);
            }
            ClusterEvent::CsiNodeDelete(name) => {
                self.snapshot.storage_mut().remove_csi_node(&name);
                self.queue.on_event(EventMask::STORAGE_DELETE, now);
            }
            ClusterEvent::CsiDriverAdd(driver) | ClusterEvent::CsiDriverUpdate(driver) => {
                let storage = self.snapshot.storage_mut();
                let mask = if storage.csi_driver(&driver.metadata.name).is_some() {
                    EventMask::CSI_DRIVER_UPDATE
                } else {
                    EventMask::CSI_DRIVER_ADD
                };
                storage.upsert_csi_driver(driver);
                self.queue.on_event(mask, now);
            }
            ClusterEvent::CsiDriverDelete(name) => {
                self.snapshot.storage_mut().remove_csi_driver(&name);
                self.queue.on_event(EventMask::STORAGE_DELETE, now);
            }
            ClusterEvent::CsiStorageCapacityAdd(cap)
            | ClusterEvent::CsiStorageCapacityUpdate(cap) => {
                let storage = self.snapshot.storage_mut();
                let mask = if storage
                    .capacity(&cap.metadata.namespace, &cap.metadata.name)
                    .is_some()
                {
                    EventMask::CSI_STORAGE_CAPACITY_UPDATE
                } else {
                    EventMask::CSI_STORAGE_CAPACITY_ADD
                };
                storage.upsert_capacity(cap);
                self.queue.on_event(mask, now);
            }
            ClusterEvent::CsiStorageCapacityDelete(key) => {
                let (namespace, name) = key.split_once('/').unwrap_or(("", key.as_str()));
                self.snapshot.storage_mut().remove_capacity(namespace, name);
                self.queue.on_event(EventMask::STORAGE_DELETE, now);
            }
            ClusterEvent::PdbAdd(pdb) | ClusterEvent::PdbUpdate(pdb) => {
                let key = pdb.key();
                match self.pdbs.binary_search_by(|p| p.key().cmp(&key)) {
                    Ok(i) => self.pdbs[i] = pdb,
                    Err(i) => self.pdbs.insert(i, pdb),
                }
            }
            ClusterEvent::PdbDelete(key) => {
                self.pdbs.retain(|p| p.key() != key);
            }
            ClusterEvent::PodDelete(key) => {
                self.queue.delete(&key);
                self.nominator.delete(&key);
                // Held at Permit, allowed, or handed out and its bind not finished: kube's
                // bind would fail and unreserve.
                self.leave(&key, now);
                if self.snapshot.node_of(&key).is_some() {
                    match self.snapshot.remove_pod(&key) {
                        Ok(_) => {
                            self.queue.on_event(EventMask::ASSIGNED_POD_DELETE, now);
                        }
                        Err(e) => self.reject_event(format!("pod {key}"), e),
                    }
                }
            }
        }
    }

    fn apply_pod(&mut self, pod: Pod, now: Duration) {
        let key = pod.key();
        if pod.spec.node_name.is_empty() {
            // Pending: queue it if one of our profiles schedules it; a pod being deleted is
            // not scheduled.
            if pod.is_terminating() || self.slot_of(&pod).is_none() {
                self.queue.delete(&key);
                self.nominator.delete(&key);
                return;
            }
            if self.snapshot.node_of(&key).is_some() {
                // Assumed by us and not yet bound in the API server: nothing to do.
                return;
            }
            // kube's AddNominatedPod / UpdateNominatedPod: the status's nominatedNodeName,
            // or the nomination made here when neither version has one.
            if !pod.status.nominated_node_name.is_empty() || self.nominator.node_of(&key).is_some()
            {
                self.nominator.update(pod.clone());
            }
            self.queue.add(pod, now);
            return;
        }
        // Bound.
        self.queue.delete(&key);
        self.nominator.delete(&key);
        let ours = self.reported_bound(&key, &pod.spec.node_name, now);
        let result = match self.snapshot.node_of(&key) {
            Some(node) if node == pod.spec.node_name => {
                // Our assumed pod confirmed, or a bound pod changed. The informer's first report
                // of a pod bound is an add for the queue (kube's AssignedPodAdd), even though
                // the snapshot had it assumed: it does not wake pods waiting for a pod's
                // update (a scale-down), such as pods short of resources.
                self.snapshot.update_pod(pod).map(|()| {
                    if ours {
                        EventMask::ASSIGNED_POD_ADD
                    } else {
                        EventMask::ASSIGNED_POD_UPDATE
                    }
                })
            }
            Some(_) => {
                // Bound elsewhere than assumed (another scheduler won): the truth replaces it.
                self.snapshot
                    .remove_pod(&key)
                    .and_then(|_| self.snapshot.add_pod(pod))
                    .map(|()| EventMask::ASSIGNED_POD_UPDATE | EventMask::ASSIGNED_POD_DELETE)
            }
            None => self
                .snapshot
                .add_pod(pod)
                .map(|()| EventMask::ASSIGNED_POD_ADD),
        };
        match result {
            Ok(mask) => {
                self.queue.on_event(mask, now);
            }
            Err(e) => self.reject_event(format!("pod {key}"), e),
        }
    }

    /// Runs one scheduling attempt: the next pod of the queue through its profile. A placed
    /// pod is assumed into the snapshot and returned as [`Step::Bind`].
    pub fn schedule_one(&mut self, now: Duration) -> Step {
        // Permit waits that ran out are rejections; pods every Permit plugin allowed go out.
        if let Some(step) = self.lifecycle_step(now) {
            return step;
        }
        loop {
            let Some(pod) = self.queue.pop(now) else {
                let until = match (self.queue.next_wakeup(), self.assumed.next_deadline()) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                return Step::Idle { until };
            };
            let key = pod.key();
            match self.slot_of(&pod) {
                Some(slot) if !pod.is_terminating() => return self.attempt(slot, key, pod, now),
                _ => {
                    self.queue.done(&key);
                }
            }
        }
    }

    /// One attempt for a popped pod of profile `slot`: its nominated node first, then every
    /// node; a placed pod goes on to Reserve and Permit.
    fn attempt(&mut self, slot: usize, key: String, pod: Pod, now: Duration) -> Step {
        if let Some(node) = self.nominated_fit(slot, &key, &pod) {
            return self.placed(slot, key, pod, node, now);
        }
        // Nodes where the pod does not fit beside the pods nominated there count as
        // infeasible (kube's RunFilterPluginsWithNominatedPods); none without nominations.
        let blocked = if self.nominator.holds_any(&pod) {
            self.nominator
                .blocked(&self.profiles[slot].profile, &mut self.snapshot, &pod)
        } else {
            Ok(Vec::new())
        };
        let s = &mut self.profiles[slot];
        s.cache.set_next_start_index(self.next_start_index);
        let mut skipped = Vec::new();
        let result = blocked.and_then(|blocked| {
            if self.extenders.is_empty() {
                s.profile.schedule_and_assume_blocking(
                    &mut s.cache,
                    &pod,
                    &mut self.snapshot,
                    &blocked,
                )
            } else {
                let mut ext = ExtenderCycle::new(&self.extenders);
                let r = s.profile.assume_after(
                    &mut s.cache,
                    &pod,
                    &mut self.snapshot,
                    &blocked,
                    Some(&mut ext),
                );
                skipped = ext.take_skipped();
                r
            }
        });
        self.note_skipped(&key, skipped);
        self.next_start_index = self.profiles[slot].cache.next_start_index();
        match result {
            Ok(r) => self.placed(slot, key, pod, r.node, now),
            Err(ScheduleError::Unschedulable(error)) => {
                self.unschedulable(slot, key, pod, error, now)
            }
            Err(error) => {
                self.queue.backoff_after_error(&key, now);
                self.events.push(SchedulerEvent::FailedScheduling {
                    pod: key.clone(),
                    message: error.to_string(),
                });
                Step::Failed { pod: key, error }
            }
        }
    }

    /// A nominated pod is tried on its node first (kube's evaluateNominatedNode), with the
    /// pods nominated there before it held: the node, with the pod assumed there, if it fits.
    fn nominated_fit(&mut self, slot: usize, key: &str, pod: &Pod) -> Option<String> {
        let node = self.nominator.node_of(key)?.to_string();
        let index = self.snapshot.index_of(&node)?;
        let fits = matches!(
            self.nominator.fits_indexed(
                &self.profiles[slot].profile,
                &mut self.snapshot,
                pod,
                index
            ),
            Ok(Ok(()))
        ) && (self.extenders.is_empty()
            || ExtenderCycle::new(&self.extenders).pass(pod, &self.snapshot, index));
        (fits && self.snapshot.assume(pod.clone(), &node).is_ok()).then_some(node)
    }

    /// The pod is assumed on `node`: it leaves the queue and its nomination, and goes on to
    /// Reserve and Permit.
    fn placed(&mut self, slot: usize, key: String, pod: Pod, node: String, now: Duration) -> Step {
        self.nominator.delete(&key);
        let tries = self.queue.done(&key).unwrap_or_default();
        let placement = binding::Placement {
            pod,
            node,
            profile: self.profiles[slot].name.clone(),
            tries,
            volumes: Default::default(),
        };
        self.reserve_and_permit(key, placement, now)
    }

    /// No node takes the pod: it waits for an event that can help it, and the profile's
    /// PostFilter plugins (preemption) may nominate it to a node.
    fn unschedulable(
        &mut self,
        slot: usize,
        key: String,
        pod: Pod,
        mut error: FitError,
        now: Duration,
    ) -> Step {
        let mut waiting_for = EventMask::default();
        for f in &error.failures {
            for (_, reason) in &f.codes {
                waiting_for = waiting_for | events_for(reason);
            }
        }
        if error.failures.is_empty() {
            // No node at all.
            waiting_for = EventMask::NODE_ADD;
        }
        self.queue.unschedulable(&key, waiting_for, now);
        if self.profiles[slot].post_filter.is_empty() {
            self.events.push(SchedulerEvent::FailedScheduling {
                pod: key.clone(),
                message: error.to_string(),
            });
            return Step::Unschedulable { pod: key, error };
        }
        let (step, message, skipped) = self.run_post_filter(slot, pod, &error, waiting_for, now);
        // kube v1.34 prints PostFilter's message after the reasons; v1.20 did not.
        if self.profiles[slot].profile.kube_version() >= KubeVersion::V1_34 {
            error.post_filter_message = Some(message);
        }
        self.events.push(SchedulerEvent::FailedScheduling {
            pod: key.clone(),
            message: error.to_string(),
        });
        self.note_skipped(&key, skipped);
        step.unwrap_or(Step::Unschedulable { pod: key, error })
    }

    /// The profile's PostFilter plugins (DefaultPreemption) for a pod no node takes:
    /// `Some(Step::Preempt)` when preemption nominated the pod to a node, kube's PostFilter
    /// message, and the extender errors passed over.
    fn run_post_filter(
        &mut self,
        slot: usize,
        pod: Pod,
        error: &FitError,
        waiting_for: EventMask,
        now: Duration,
    ) -> (Option<Step>, String, Vec<Skipped>) {
        let key = pod.key();
        // The pod as the API server has it once this scheduler's status patches landed.
        let landed = match self.nominator.node_of(&key) {
            Some(node) if node != pod.status.nominated_node_name => {
                let mut p = pod.clone();
                p.status.nominated_node_name = node.to_string();
                Some(p)
            }
            _ => None,
        };
        // Pods still being bound or held at Permit are not victims.
        let busy = self.assumed.busy();
        let protect = |k: &str| busy.contains(k);
        // kube's callExtenders: the extenders that preempt narrow the candidates.
        let skipped = std::cell::RefCell::new(Vec::new());
        let extenders = &self.extenders;
        let narrow = |p: &Pod, snapshot: &Snapshot, candidates| {
            extender::narrow_candidates(
                extenders,
                p,
                snapshot,
                candidates,
                &mut skipped.borrow_mut(),
            )
        };
        let env = preemption::Environment::new(&self.nominator)
            .pdbs(&self.pdbs)
            .protect(&protect)
            .candidates(&narrow);
        let rng = &mut self.preemption_rng;
        let out = post_filter::run_post_filter(
            &self.profiles[slot].post_filter,
            &self.profiles[slot].profile,
            &mut self.snapshot,
            landed.as_ref().unwrap_or(&pod),
            error,
            &mut |n| rng.random_range(0..n),
            &env,
        );
        let mut skipped = skipped.into_inner();
        if let Some(Err(ScheduleError::Extender { extender, source })) = &out.preemption {
            skipped.push(Skipped {
                extender: extender.clone(),
                message: source.to_string(),
            });
        }
        let step = match out.preemption {
            Some(Ok(preemption::Outcome::Preempt(c))) => {
                // Lower-priority pods nominated to that node may no longer fit there: their
                // nominations are cleared (kube's prepareCandidate).
                for other in self.nominator.lower_priority_on(&c.node, &pod) {
                    self.nominator.delete(&other);
                }
                self.nominator.add(pod, Some(&c.node));
                // The victims' deletion (an assigned pod deleted) wakes it.
                self.queue
                    .unschedulable(&key, waiting_for | EventMask::ASSIGNED_POD_DELETE, now);
                // Victims already being deleted need no second deletion (kube skips the API
                // call for them).
                let victims = c
                    .victims
                    .iter()
                    .filter(|v| !v.is_terminating())
                    .map(|v| v.key())
                    .collect();
                Some(Step::Preempt {
                    pod: key,
                    victims,
                    node: c.node,
                })
            }
            Some(Ok(preemption::Outcome::NoCandidate(_))) => {
                // kube clears the nomination when preemption cannot help.
                self.nominator.delete(&key);
                None
            }
            // Not eligible, no candidate left by the extenders, a plugin error, or no
            // preemption: the nomination stays as it is.
            _ => None,
        };
        (step, out.message, skipped)
    }
}
