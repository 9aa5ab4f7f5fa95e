//! The driver's hooks on the API server: [`KubeBinder`] (PreBind's volume writes, the
//! binding, the `Scheduled` Event), [`KubeVictimDeleter`] (kube's `PreemptPod` for each
//! victim, and the preemptor's `nominatedNodeName`) and [`KubeClaimDeallocator`]
//! (DynamicResources' PostFilter deallocation).

use std::sync::Arc;

use sched_core::plugins::dra::Deallocation;
use sched_driver::{
    BindError, Binder, Binding, ClaimDeallocator, DeleteError, Preemption, VictimDeleter,
};

use crate::feed::PodCache;
use crate::writes::{Condition, WriteError, Writer};

/// Binds through `pods/binding`.
pub(crate) struct KubeBinder {
    pub writer: Writer,
}

fn bind_error(e: WriteError) -> BindError {
    match e {
        WriteError::Fenced => BindError::Fenced(e.to_string()),
        WriteError::Refused { .. } => BindError::Refused(e.to_string()),
        WriteError::Failed(source) => BindError::Failed(Box::new(source)),
    }
}

fn delete_error(e: WriteError) -> DeleteError {
    match e {
        WriteError::Fenced => DeleteError::Fenced(e.to_string()),
        other => DeleteError::Failed(Box::new(other)),
    }
}

#[sched_driver::async_trait]
impl Binder for KubeBinder {
    async fn pre_bind(&self, b: &Binding) -> Result<(), BindError> {
        // Also before a binder extender binds (the driver calls it instead of `bind`).
        self.writer.check().map_err(bind_error)?;
        if !b.claims.is_empty() {
            self.writer
                .write_claims(&b.claims)
                .await
                .map_err(bind_error)?;
        }
        if !b.volumes.is_empty() {
            self.writer
                .write_volumes(&b.volumes)
                .await
                .map_err(bind_error)?;
        }
        Ok(())
    }

    async fn bind(&self, b: &Binding) -> Result<(), BindError> {
        // The UID the engine placed, not the watch's latest: a pod recreated under the same
        // name must not be bound where the old one was placed.
        self.writer
            .bind(&b.pod, &b.uid, &b.node)
            .await
            .map_err(bind_error)
    }

    async fn unreserve(&self, b: &Binding, _error: &BindError) {
        if b.claims.is_empty() || self.writer.check().is_err() {
            return;
        }
        if let Err(e) = self.writer.unreserve_claims(&b.claims, &b.uid).await {
            // kube logs it too: the pod's next attempt reserves the claims again.
            tracing::warn!(pod = %b.pod, error = %e, "cannot unreserve the pod's claims");
        }
    }

    async fn post_bind(&self, b: &Binding) {
        let uid = &b.uid;
        let note = format!(
            "Successfully assigned {}/{} to {}",
            b.pod.namespace(),
            b.pod.name(),
            b.node
        );
        if let Err(e) = self
            .writer
            .record(
                (&b.pod, uid),
                None,
                &b.profile,
                "Normal",
                "Scheduled",
                "Binding",
                &note,
            )
            .await
        {
            tracing::warn!(pod = %b.pod, error = %e, "cannot record the Scheduled event");
        }
    }
}

/// Deletes victims as kube's `PreemptPod` does.
pub(crate) struct KubeVictimDeleter {
    pub writer: Writer,
    pub pods: Arc<PodCache>,
}

/// At most this many victims are deleted at once (kube's parallelizer: 16 workers).
const DELETIONS_AT_ONCE: usize = 16;

#[sched_driver::async_trait]
impl VictimDeleter for KubeVictimDeleter {
    async fn delete_victims(&self, p: &Preemption) -> Result<(), DeleteError> {
        use futures_util::StreamExt as _;

        let preemptor = self.pods.get(&p.pod).unwrap_or_default();
        // kube's failure handler sets the nominated node with the PodScheduled condition.
        self.writer
            .patch_pod_status(&p.pod, None, Some(&p.node))
            .await
            .map_err(delete_error)?;
        // kube's prepareCandidate: lower-priority pods nominated there lose their nomination
        // (not critical: a failure is logged).
        for other in &p.unnominated {
            match self.writer.clear_nomination(other).await {
                Ok(()) => {}
                Err(WriteError::Fenced) => return Err(delete_error(WriteError::Fenced)),
                Err(e) => tracing::warn!(pod = %other, error = %e, "cannot clear the nomination"),
            }
        }
        // The victims in parallel, as kube's async preemption evicts them.
        let deletions: Vec<futures_util::future::BoxFuture<'_, Result<(), DeleteError>>> = p
            .victims
            .iter()
            .map(|victim| Box::pin(self.preempt(victim, p, &preemptor)) as _)
            .collect();
        let mut done = futures_util::stream::iter(deletions).buffer_unordered(DELETIONS_AT_ONCE);
        while let Some(result) = done.next().await {
            if let Err(e) = result {
                // The first error stops the rest (kube's SendErrorWithCancel); a term that
                // ended meanwhile is reported as such, whichever deletion failed first.
                return Err(match self.writer.check() {
                    Err(fenced) => delete_error(fenced),
                    Ok(()) => e,
                });
            }
        }
        Ok(())
    }
}

impl KubeVictimDeleter {
    /// kube's `PreemptPod` for one victim: the `DisruptionTarget` condition, the graceful
    /// deletion of the pod of that UID, and the `Preempted` event.
    async fn preempt(
        &self,
        victim: &sched_core::model::PodKey,
        p: &Preemption,
        preemptor: &crate::feed::PodInfo,
    ) -> Result<(), DeleteError> {
        let Some(info) = self.pods.get(victim) else {
            return Ok(()); // already gone
        };
        let message = format!(
            "{}: preempting to accommodate a higher priority pod",
            preemptor.scheduler_name
        );
        let disruption = Condition {
            type_: "DisruptionTarget",
            status: "True",
            reason: "PreemptionByScheduler",
            message: &message,
            since: None,
        };
        match self
            .writer
            .patch_pod_status(victim, Some(disruption), None)
            .await
        {
            Ok(()) | Err(WriteError::Refused { code: 404, .. }) => {}
            Err(e) => return Err(delete_error(e)),
        }
        let deleted = self
            .writer
            .delete_pod(victim, &info.uid)
            .await
            .map_err(delete_error)?;
        if !deleted {
            return Ok(());
        }
        let note = format!("Preempted by pod {} on node {}", preemptor.uid, p.node);
        if let Err(e) = self
            .writer
            .record(
                (victim, &info.uid),
                Some((&p.pod, &preemptor.uid)),
                &preemptor.scheduler_name,
                "Normal",
                "Preempted",
                "Preempting",
                &note,
            )
            .await
        {
            tracing::warn!(pod = %victim, error = %e, "cannot record the Preempted event");
        }
        Ok(())
    }
}

/// Writes DynamicResources' deallocations through the [`Writer`].
pub(crate) struct KubeClaimDeallocator {
    pub writer: Writer,
}

#[sched_driver::async_trait]
impl ClaimDeallocator for KubeClaimDeallocator {
    async fn deallocate(&self, d: &Deallocation) -> Result<(), DeleteError> {
        match self.writer.deallocate_claim(d).await {
            Ok(written) => {
                tracing::debug!(claim = %format!("{}/{}", d.namespace, d.name), written, "deallocation");
                Ok(())
            }
            Err(WriteError::Fenced) => Err(DeleteError::Fenced(WriteError::Fenced.to_string())),
            Err(e) => Err(DeleteError::DeallocationFailed(Box::new(e))),
        }
    }
}
