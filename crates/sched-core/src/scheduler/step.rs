//! What the engine hands out: the [`Step`] the caller must take next, and the
//! [`SchedulerEvent`]s it records for logs and Kubernetes events.

use std::time::Duration;

use crate::extender::{ExtenderBinder, ExtenderCall};
use crate::model::PodKey;
use crate::plugins::dra::{ClaimBinding, Deallocation};
use crate::plugins::volume::AssumedVolumes;
use crate::profile::{FitError, ScheduleError};

/// What the caller must do next.
#[derive(Debug)]
#[non_exhaustive]
pub enum Step {
    /// Bind the pod to the node (the pod is assumed there already), then call
    /// [`Scheduler::finish_binding`](super::Scheduler::finish_binding).
    Bind {
        /// `namespace/name`.
        pod: PodKey,
        /// The UID of the pod the engine placed (`metadata.uid`; empty if it had none): a
        /// binding carries it as a precondition, so that a new pod of the same name is not
        /// bound where the old one was placed.
        uid: String,
        /// The node.
        node: String,
        /// The profile (scheduler name) that placed it.
        profile: String,
        /// The volume bindings to write before binding the pod (kube's VolumeBinding
        /// PreBind): PersistentVolumes reserved for its unbound `WaitForFirstConsumer` claims
        /// and claims to provision on the node. Empty for most pods.
        volumes: AssumedVolumes,
        /// The ResourceClaims to write before binding the pod (kube's DynamicResources
        /// PreBind): each claim's new allocation, if the cycle allocated it, and the pod added
        /// to its `status.reservedFor`. Empty for pods without claims.
        claims: Vec<ClaimBinding>,
        /// The extender that binds the pod instead of the caller's binder (kube: the first
        /// binder extender interested in the pod): call [`ExtenderBinder::bind`] and report
        /// its result to [`Scheduler::finish_binding`](super::Scheduler::finish_binding). `None`: the caller binds.
        extender_binder: Option<ExtenderBinder>,
    },
    /// No node fits the pod; it waits in the unschedulable pool (kube's FailedScheduling).
    Unschedulable {
        /// `namespace/name`.
        pod: PodKey,
        /// Every node's reasons.
        error: FitError,
        /// A claim of the pod that DynamicResources' PostFilter deallocates (kube writes it
        /// in PostFilter): clear its allocation and `reservedFor`, then report the claim's
        /// update; that update wakes the pod. `None` for almost every pod.
        deallocate: Option<Deallocation>,
    },
    /// No node took the pod, but deleting these lower-priority pods makes room on `node`
    /// (kube's DefaultPreemption): delete the victims; the pod is nominated to the node and
    /// waits, and is tried there first once the deletions arrive. Victims already being
    /// deleted are not listed again.
    Preempt {
        /// `namespace/name` of the preemptor.
        pod: PodKey,
        /// The node it is nominated to.
        node: String,
        /// `namespace/name` of the pods to delete, most important first.
        victims: Vec<PodKey>,
        /// Lower-priority pods that were nominated to `node` (or to a node planned for the
        /// preemptor's gang) and no longer are: they may not fit there any more. kube's
        /// `prepareCandidate` clears their `status.nominatedNodeName`; the engine has
        /// forgotten their nominations already.
        unnominated: Vec<PodKey>,
        /// As [`Step::Unschedulable`]'s: DynamicResources' PostFilter, which runs before
        /// DefaultPreemption, deallocated a claim of the pod.
        deallocate: Option<Deallocation>,
    },
    /// A PreEnqueue plugin keeps the pod out of scheduling (kube records no attempt and no
    /// FitError for it): it waits in the unschedulable pool until an event its plugin cares
    /// about (DynamicResources: a ResourceClaim added or changed) or its longest stay.
    Gated {
        /// `namespace/name`.
        pod: PodKey,
        /// The plugin.
        plugin: String,
        /// Its message (kube's status message, such as `could not find ResourceClaim
        /// "ns/name"`).
        message: String,
    },
    /// A Reserve or Permit plugin refused the placement (or a Permit wait timed out): the
    /// pod was unreserved and forgotten; after a Reserve error it backs off, after a Permit
    /// rejection it waits in the unschedulable pool.
    Rejected {
        /// `namespace/name`.
        pod: PodKey,
        /// The plugin that refused.
        plugin: String,
        /// Its reason.
        reason: String,
    },
    /// A Permit plugin holds the pod, assumed on `node`, until it is allowed
    /// ([`Scheduler::allow`](super::Scheduler::allow)), rejected ([`Scheduler::reject`](super::Scheduler::reject)) or `until` passes.
    Waiting {
        /// `namespace/name`.
        pod: PodKey,
        /// The node it is assumed on.
        node: String,
        /// When the wait times out.
        until: Duration,
    },
    /// The attempt failed with an error (a plugin error, an unsupported pod); the pod backs
    /// off.
    Failed {
        /// `namespace/name`.
        pod: PodKey,
        /// Why.
        error: ScheduleError,
    },
    /// A remote extender is interested in the pod: it passed the filter plugins on
    /// [`ExtenderCall::nodes`] and is parked (in flight, not assumed) until the extenders
    /// answer. Send the call's requests ([`ExtenderCall::next_request`],
    /// [`ExtenderCall::answer`]) without holding the engine up, then give it back with
    /// [`Scheduler::extender_reply`](super::Scheduler::extender_reply); the engine finishes
    /// the attempt on the snapshot of that moment. Other pods schedule meanwhile.
    CallExtenders {
        /// The calls to make.
        call: Box<ExtenderCall>,
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
        pod: PodKey,
        /// The node.
        node: String,
    },
    /// No node fits (kube's `FailedScheduling`, with kube's message).
    FailedScheduling {
        /// `namespace/name`.
        pod: PodKey,
        /// kube's message ("0/3 nodes are available: ...").
        message: String,
    },
    /// The binding failed; the assumed pod was forgotten and requeued.
    BindingFailed {
        /// `namespace/name`.
        pod: PodKey,
        /// The node it was assumed on.
        node: String,
        /// The binder's error.
        message: String,
    },
    /// An extender failed and was passed over, as kube does (an ignorable extender's filter
    /// error, or any prioritize error): the attempt went on without it.
    ExtenderSkipped {
        /// `namespace/name` of the pod being scheduled.
        pod: PodKey,
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
