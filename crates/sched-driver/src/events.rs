//! What the driver reports: the steps the engine took, the engine's own events, and the
//! driver's status.

use std::time::Duration;

use sched_core::model::PodKey;
use sched_core::plugins::dra::Deallocation;
use sched_core::profile::FitError;
use sched_core::scheduler::{QueueCounts, SchedulerEvent, Step};

/// A step the engine took: [`Step`]'s values, cloneable for every subscriber (a failed
/// attempt's error as its text, since a [`ScheduleError`](sched_core::profile::ScheduleError)
/// may hold a source that is not `Clone`; a bind without its volumes and extender binder, which
/// the driver acts on itself).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepTaken {
    /// The pod was placed and handed to the binder.
    Bind {
        /// `namespace/name`.
        pod: PodKey,
        /// The node.
        node: String,
        /// The profile that placed it.
        profile: String,
    },
    /// No node fits the pod.
    Unschedulable {
        /// `namespace/name`.
        pod: PodKey,
        /// Every node's reasons, as [`Step::Unschedulable`] has them (its `Display` is kube's
        /// "0/3 nodes are available: ..." message).
        error: FitError,
        /// The claim DynamicResources' PostFilter deallocates (written by the driver's
        /// [`ClaimDeallocator`](crate::ClaimDeallocator), if it has one).
        deallocate: Option<Deallocation>,
    },
    /// The pod preempts: `victims` are to be deleted, the pod is nominated to `node`.
    Preempt {
        /// `namespace/name` of the preemptor.
        pod: PodKey,
        /// The node.
        node: String,
        /// `namespace/name` of the victims.
        victims: Vec<PodKey>,
        /// As [`StepTaken::Unschedulable`]'s.
        deallocate: Option<Deallocation>,
    },
    /// A Reserve or Permit plugin refused the placement, or a Permit wait ended without
    /// an allow (timed out or rejected).
    Rejected {
        /// `namespace/name`.
        pod: PodKey,
        /// The plugin.
        plugin: String,
        /// Its reason (kube's "rejected due to timeout after waiting at permit" on a
        /// timeout).
        reason: String,
    },
    /// A Permit plugin holds the pod on `node` until it is allowed or `until` passes
    /// (the driver's clock: time since [`Driver::run`](crate::Driver::run) started).
    Waiting {
        /// `namespace/name`.
        pod: PodKey,
        /// The node.
        node: String,
        /// When the wait times out.
        until: Duration,
    },
    /// A PreEnqueue plugin keeps the pod out of scheduling (no attempt is counted); it
    /// waits for an event its plugin cares about.
    Gated {
        /// `namespace/name`.
        pod: PodKey,
        /// The plugin.
        plugin: String,
        /// Its message.
        message: String,
    },
    /// The attempt failed with an error; the pod backs off.
    Failed {
        /// `namespace/name`.
        pod: PodKey,
        /// The error's text.
        message: String,
    },
    /// A remote extender is interested in the pod: it is parked while the driver calls the
    /// extenders over HTTP.
    CallExtenders {
        /// `namespace/name`.
        pod: PodKey,
        /// The nodes sent (those that passed the filter plugins).
        nodes: Vec<String>,
    },
    /// A step this version of the driver does not know, in its `Debug` form.
    Other(String),
}

impl StepTaken {
    /// The summary of an engine step; `None` for [`Step::Idle`].
    pub fn of(step: &Step) -> Option<StepTaken> {
        Some(match step {
            Step::Bind {
                pod, node, profile, ..
            } => StepTaken::Bind {
                pod: pod.clone(),
                node: node.clone(),
                profile: profile.clone(),
            },
            Step::Unschedulable {
                pod,
                error,
                deallocate,
                ..
            } => StepTaken::Unschedulable {
                pod: pod.clone(),
                error: error.clone(),
                deallocate: deallocate.clone(),
            },
            Step::Preempt {
                pod,
                node,
                victims,
                deallocate,
                ..
            } => StepTaken::Preempt {
                pod: pod.clone(),
                node: node.clone(),
                victims: victims.clone(),
                deallocate: deallocate.clone(),
            },
            Step::Rejected {
                pod,
                plugin,
                reason,
                ..
            } => StepTaken::Rejected {
                pod: pod.clone(),
                plugin: plugin.clone(),
                reason: reason.clone(),
            },
            Step::Waiting {
                pod, node, until, ..
            } => StepTaken::Waiting {
                pod: pod.clone(),
                node: node.clone(),
                until: *until,
            },
            Step::Gated {
                pod,
                plugin,
                message,
            } => StepTaken::Gated {
                pod: pod.clone(),
                plugin: plugin.clone(),
                message: message.clone(),
            },
            Step::Failed { pod, error, .. } => StepTaken::Failed {
                pod: pod.clone(),
                message: error.to_string(),
            },
            Step::CallExtenders { call } => StepTaken::CallExtenders {
                pod: call.pod_key(),
                nodes: call
                    .nodes()
                    .iter()
                    .map(|n| n.metadata.name.clone())
                    .collect(),
            },
            Step::Idle { .. } => return None,
            other => StepTaken::Other(format!("{other:?}")),
        })
    }
}

/// Something the driver did or saw, as sent to the receivers of
/// [`DriverHandle::subscribe`](crate::DriverHandle::subscribe).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DriverEvent {
    /// The engine took a step.
    Step(StepTaken),
    /// The engine reported an event (kube's `Scheduled`, `FailedScheduling`, a failed
    /// binding, an event it could not apply).
    Scheduler(SchedulerEvent),
    /// The victim deleter failed for the preemption by `pod`.
    PreemptionFailed {
        /// `namespace/name` of the preemptor.
        pod: PodKey,
        /// The deleter's error.
        message: String,
    },
    /// The claim deallocator failed for DynamicResources' deallocation of `claim`, asked by
    /// `pod`'s attempt.
    DeallocationFailed {
        /// `namespace/name` of the pod.
        pod: PodKey,
        /// `namespace/name` of the claim.
        claim: String,
        /// The deallocator's error.
        message: String,
    },
}

/// Where the driver stands, as of its last engine call.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct DriverStatus {
    /// Pods per queue.
    pub queue: QueueCounts,
    /// Pods held at Permit.
    pub waiting: usize,
    /// Bindings running (PreBind, Bind, PostBind).
    pub binds_in_flight: usize,
    /// Victim deletions and claim deallocations running.
    pub deletions_in_flight: usize,
    /// Commands (events, allows, rejects) sent through handles and applied to the engine.
    pub commands_applied: u64,
    /// Whether the driver stopped scheduling (shutting down, fenced off or stopped).
    pub stopping: bool,
}

impl DriverStatus {
    /// Nothing will happen without a new event: no pod is active, backing off, being
    /// attempted, held at Permit, being bound, and no deletion runs. Unschedulable and gated
    /// pods may remain (an unschedulable pod is retried by itself after 5 minutes).
    pub fn is_settled(&self) -> bool {
        self.queue.active == 0
            && self.queue.backoff == 0
            && self.queue.in_flight == 0
            && self.waiting == 0
            && self.binds_in_flight == 0
            && self.deletions_in_flight == 0
    }
}
