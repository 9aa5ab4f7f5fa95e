//! kube-scheduler's scheduling cycle (`scheduleOne`) as a deterministic engine: cluster events
//! in, steps out, time passed in as a value (no clock, no threads, no async), so that hours
//! of scheduling run in milliseconds under a simulated clock, reproducibly from a seed.
//!
//! ```
//! use std::time::Duration;
//! use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
//! use sched_core::config::{Registry, SchedulerConfiguration};
//! use sched_core::scheduler::{ClusterEvent, ObjectKey, Scheduler, Step};
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
//!     scheduler.apply(ClusterEvent::add(benchmark_pod(i)), now);
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
//!                 scheduler.apply(ClusterEvent::Delete(ObjectKey::Pod(v)), now);
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
//! - **Namespaces** arrive as events ([`Object::Namespace`]): their labels are
//!   what `namespaceSelector` in pod affinity terms reads; an added Namespace or changed labels
//!   wake pods rejected by inter-pod affinity, as kube's InterPodAffinity registers.
//! - **Volumes**: PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers and
//!   CSIStorageCapacities arrive as events
//!   ([`Object::PersistentVolume`], ...) and wake the pods that wait for them (kube's
//!   events of VolumeBinding, VolumeZone, NodeVolumeLimits and VolumeRestrictions).
//!   VolumeBinding's Reserve assumes the PersistentVolumes it matched to a pod's unbound
//!   `WaitForFirstConsumer` claims and pins the claims to provision to the node, so no other
//!   pod counts on them; [`Step::Bind`] carries these bindings for the caller to write before
//!   binding the pod (kube's PreBind). An unreserve (a failed bind, a rejection, a deleted
//!   pod) gives them back, except objects the informer has replaced since.
//! - **Dynamic resources**: DeviceClasses, ResourceSlices and ResourceClaims arrive as events
//!   ([`Object::ResourceClaim`], ...) into the snapshot's
//!   [`DraIndex`](crate::snapshot::DraIndex). DynamicResources' Reserve allocates the pod's
//!   claims on the chosen node and holds the allocations in flight, so no other cycle takes
//!   their devices; [`Step::Bind`] carries the claims to write (allocation and
//!   `reservedFor`, kube's PreBind), and an unreserve drops what is in flight.
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
//! - **Gang scheduling** ([`gang`], [`Scheduler::with_coscheduling`]): scheduler-plugins'
//!   Coscheduling over PodGroups ([`Object::PodGroup`], [`ObjectKey::PodGroup`]): its
//!   QueueSort, PreFilter, Permit (members held until `minMember` are assumed, then allowed
//!   together), Unreserve (every waiting member released with one) and PostFilter; beyond
//!   it, preemption takes no group below `minMember` and a gang member preempts only if the
//!   whole gang then fits (see [`gang`]).
//! - **PodDisruptionBudgets** arrive as events ([`Object::PodDisruptionBudget`],
//!   [`ObjectKey::PodDisruptionBudget`]; [`pdb`] for kube's rule).
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
//!   `callExtenders`). A configuration's extenders are remote
//!   ([`crate::extender::RemoteExtender`]) and never block the engine, unlike kube's cycle: a
//!   pod one of them is interested in is parked after the filter plugins (in flight, not
//!   assumed) and its calls go out as [`Step::CallExtenders`]; the caller sends them and gives
//!   them back ([`Scheduler::extender_reply`]), and the next [`Scheduler::schedule_one`] runs
//!   the attempt again on the snapshot of that moment with the replies (the filter plugins
//!   decide again; a node the extenders were not sent fails). Other pods schedule meanwhile;
//!   a reply for a pod deleted or changed since is dropped (a changed pod is tried again).
//!   In-process extenders, a remote extender's preempt verb (through
//!   [`Scheduler::with_preempt_transport`]) and the nominated-node check stay synchronous; a
//!   pod that needs a call is not tried on its nominated node alone.
//!
//! # Where it lives
//! The engine's state is [`Scheduler`] (here); its work is split by concept: `build`
//! (constructors and builder methods), `intake` ([`Scheduler::apply`]: a [`ClusterEvent`] into
//! the snapshot, the lifecycle and the queue), `cycle` ([`Scheduler::schedule_one`]: one attempt
//! and its PostFilter), `binding` (the placed pod's lifecycle from Reserve to the informer's
//! confirmation: one map of assumed pods with a typed stage, and the one release), `step`
//! ([`Step`] and [`SchedulerEvent`], what the engine hands out), and the modules listed below.
//!
//! # Not yet
//! Queueing hints are approximated by the events each rejection
//! reason registers ([`events_for`]); preemption has no asynchronous mode (the victims are
//! handed out as a step), no custom victim eligibility or ordering hooks, and pods being
//! bound or held at Permit are never victims (kube rejects a waiting pod it preempts).

mod binding;
mod build;
mod cycle;
mod events;
mod extender;
pub mod gang;
mod gang_preemption;
mod hooks;
mod intake;
mod nominator;
pub mod pdb;
pub mod post_filter;
pub mod preemption;
mod queue;
mod step;

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use binding::AssumedPods;
pub use binding::BindError;
pub use events::{ClusterEvent, EventMask, Object, ObjectKey, events_for};
pub use extender::{ExtenderCycle, Skipped};
use hooks::ReserveHook;
pub use hooks::{PermitDecision, PermitPlugin, ReserveError, ReservePlugin};
pub use nominator::Nominator;
use post_filter::PostFilterPlugins;
pub use queue::{QueueCounts, QueueName, QueueSettings, SchedulingQueue, Tries};
pub use step::{SchedulerEvent, Step};

use rand_chacha::ChaCha8Rng;

use crate::config::DEFAULT_SCHEDULER_NAME;
use crate::extender::{Extender, ExtenderBinder, ExtenderCall, ExtenderCallId};
use crate::model::{Pod, PodDisruptionBudget, PodKey};
use crate::profile::{Cache, Profile};
use crate::snapshot::Snapshot;

/// One profile and its worker cache.
#[derive(Debug)]
struct Slot {
    name: String,
    profile: Profile,
    cache: Cache,
    /// The PostFilter plugins (DefaultPreemption with its arguments, DynamicResources).
    post_filter: PostFilterPlugins,
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
    reserve: Arc<[ReserveHook]>,
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
    /// Pods parked on a remote extender call, by key (the queue has them in flight).
    parked: HashMap<PodKey, Parked>,
    /// Finished calls given back, handled by the next [`Scheduler::schedule_one`]s.
    replies: VecDeque<ExtenderCall>,
    /// The last call's identity.
    last_call: u64,
    /// Gang scheduling (scheduler-plugins' Coscheduling), when on.
    gang: Option<gang::Coscheduling>,
}

/// A pod parked on a remote extender call.
#[derive(Debug)]
struct Parked {
    call: ExtenderCallId,
    /// The round-robin index its first pass started at, for the second.
    start_index: usize,
}

impl Scheduler {
    /// The round-robin index the next pod's search starts at, one for every profile as in
    /// kube-scheduler (`nextStartNodeIndex`); it matters when a percentage of nodes to score
    /// stops the search early.
    pub fn next_start_index(&self) -> usize {
        self.next_start_index
    }

    /// The extenders, in order.
    pub fn extenders(&self) -> impl Iterator<Item = &dyn Extender> {
        self.extenders.iter().map(|e| &**e)
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

    /// The extender that binds `pod` on `node`, if any.
    fn binder_for(&self, pod: &Pod, node: &str) -> Option<ExtenderBinder> {
        extender::binder_for(&self.extenders, pod, node)
    }

    /// Whether a remote extender that filters or scores is interested in `pod` (its attempt
    /// then goes through [`Step::CallExtenders`]).
    fn needs_call(&self, pod: &Pod) -> bool {
        self.extenders.iter().any(|e| {
            e.remote().is_some() && (e.is_filter() || e.is_prioritizer()) && e.is_interested(pod)
        })
    }

    /// The pods parked on a remote extender call.
    pub fn parked(&self) -> impl Iterator<Item = &str> {
        self.parked.keys().map(PodKey::as_str)
    }

    /// Gives back a finished [`Step::CallExtenders`] call: the next
    /// [`Scheduler::schedule_one`] finishes the pod's attempt with the replies. A reply for a
    /// pod deleted or changed (spec or labels) since is dropped; a changed pod is tried
    /// again.
    pub fn extender_reply(&mut self, call: ExtenderCall) {
        self.replies.push_back(call);
    }

    /// The call of the parked pod `pod` is lost (the task sending it failed): the pod backs
    /// off as after an error. Nothing happens if it is not parked.
    pub fn extender_call_lost(&mut self, pod: &str, now: std::time::Duration) {
        if self.parked.remove(pod).is_some() {
            self.queue.backoff_after_error(pod, now);
        }
    }

    /// Records the extender errors an attempt passed over.
    fn note_skipped(&mut self, pod: &PodKey, skipped: Vec<Skipped>) {
        for s in skipped {
            self.events.push(SchedulerEvent::ExtenderSkipped {
                pod: pod.clone(),
                extender: s.extender,
                message: s.message,
            });
        }
    }

    /// Gang scheduling's state (PodGroups, their members), when
    /// [`Scheduler::with_coscheduling`] turned it on.
    pub fn coscheduling(&self) -> Option<&gang::Coscheduling> {
        self.gang.as_ref()
    }

    /// The cluster as the scheduler sees it (assumed pods included).
    pub fn snapshot(&self) -> &Snapshot {
        &self.snapshot
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
}
