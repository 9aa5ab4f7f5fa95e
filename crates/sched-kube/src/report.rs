//! kube's failure handler on the API server: a pod that did not schedule gets a
//! `FailedScheduling` Event and the `PodScheduled=False` condition with kube's message, the
//! reason `Unschedulable` (no node fits) or `SchedulerError` (the attempt failed).
//!
//! As kube's `updatePod`, the status is patched only when the condition changes; Events are
//! written for every attempt.

use std::collections::{HashMap, HashSet};

type LastConditions = HashMap<PodKey, (String, &'static str)>;
use std::sync::Arc;

use sched_core::model::PodKey;
use sched_core::scheduler::SchedulerEvent;
use sched_driver::{DriverEvent, StepTaken};
use tokio::sync::broadcast;

use crate::feed::PodCache;
use crate::writes::{Condition, Writer};

/// Writes what `events` reports until the driver stops.
pub(crate) async fn run(
    mut events: broadcast::Receiver<DriverEvent>,
    writer: Writer,
    pods: Arc<PodCache>,
) {
    let mut errored: HashSet<PodKey> = HashSet::new();
    let mut last = LastConditions::new();
    loop {
        let event = match events.recv().await {
            Ok(e) => e,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                tracing::warn!(
                    missed = n,
                    "scheduling events fell behind; some not reported"
                );
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => return,
        };
        match event {
            DriverEvent::Step(StepTaken::Failed { pod, .. }) => {
                errored.insert(pod);
            }
            DriverEvent::Scheduler(SchedulerEvent::Scheduled { pod, .. }) => {
                last.remove(&pod);
            }
            DriverEvent::Scheduler(SchedulerEvent::FailedScheduling { pod, message }) => {
                let reason = if errored.remove(&pod) {
                    "SchedulerError"
                } else {
                    "Unschedulable"
                };
                failed(&writer, &pods, &mut last, pod, message, reason).await;
            }
            DriverEvent::Scheduler(SchedulerEvent::BindingFailed { pod, node, message }) => {
                // kube's binding-cycle failure: an error, reported as such.
                tracing::warn!(%pod, node, message, "binding failed; the pod is retried");
                failed(&writer, &pods, &mut last, pod, message, "SchedulerError").await;
            }
            DriverEvent::Scheduler(SchedulerEvent::Rejected { object, message }) => {
                tracing::error!(object, message, "the engine refused a watched change");
            }
            DriverEvent::PreemptionFailed { pod, message } => {
                tracing::warn!(%pod, message, "preemption failed");
            }
            _ => {}
        }
    }
}

/// kube's failure handler for one pod: the `FailedScheduling` event, and the
/// `PodScheduled=False` condition when it changes.
async fn failed(
    writer: &Writer,
    pods: &PodCache,
    last: &mut LastConditions,
    pod: PodKey,
    message: String,
    reason: &'static str,
) {
    let Some(info) = pods.get(&pod) else {
        last.remove(&pod);
        return;
    };
    if let Err(e) = writer
        .record(
            (&pod, &info.uid),
            None,
            &info.scheduler_name,
            "Warning",
            "FailedScheduling",
            "Scheduling",
            &message,
        )
        .await
    {
        tracing::warn!(%pod, error = %e, "cannot record FailedScheduling");
    }
    let condition = (message, reason);
    if last.get(&pod) == Some(&condition) {
        return;
    }
    let patched = writer
        .patch_pod_status(
            &pod,
            Some(Condition {
                type_: "PodScheduled",
                status: "False",
                reason,
                message: &condition.0,
                // The status stays False: kube keeps the time it became False.
                since: info.unschedulable_since.as_deref(),
            }),
            None,
        )
        .await;
    match patched {
        Ok(()) => {
            // Pods that went away leave their entries; drop them when the map has doubled.
            if last.len() >= 4096 && last.len().is_power_of_two() {
                last.retain(|p, _| pods.get(p).is_some());
            }
            last.insert(pod, condition);
        }
        Err(e) => tracing::warn!(%pod, error = %e, "cannot update PodScheduled"),
    }
}
