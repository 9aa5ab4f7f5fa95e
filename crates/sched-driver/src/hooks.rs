//! What the driver calls out to: the [`Binder`] (kube's PreBind, Bind and PostBind) and the
//! [`VictimDeleter`] (the API calls that delete a preemption's victims).

use std::error::Error;

use sched_core::extender::ExtenderBinder;
use sched_core::model::PodKey;
use sched_core::plugins::dra::Deallocation;
use sched_core::plugins::volume::AssumedVolumes;

/// A boxed error from the caller's API client.
pub type BoxError = Box<dyn Error + Send + Sync + 'static>;

/// A pod the engine placed and assumed on a node, to be bound.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct Binding {
    /// `namespace/name`.
    pub pod: PodKey,
    /// The placed pod's UID (`metadata.uid`, empty if it had none): a `pods/binding` carries
    /// it, so that a pod deleted and created again under the same name is not bound in its
    /// place.
    pub uid: String,
    /// The node.
    pub node: String,
    /// The profile (scheduler name) that placed it.
    pub profile: String,
    /// The volume bindings VolumeBinding decided (kube's PreBind writes them: each
    /// PersistentVolume's `claimRef`, each claim to provision annotated with the node); write
    /// them in [`Binder::pre_bind`]. Empty for most pods.
    pub volumes: AssumedVolumes,
    /// The ResourceClaims DynamicResources decided (kube's PreBind writes them: each claim's
    /// new allocation, with the `resource.kubernetes.io/delete-protection` finalizer, and the
    /// pod in its `status.reservedFor`); write them in [`Binder::pre_bind`]. Empty for pods
    /// without claims.
    pub claims: Vec<sched_core::plugins::dra::ClaimBinding>,
    /// The extender that binds this pod (kube: the first binder extender interested in it).
    /// When set, the driver calls it (on the blocking pool) instead of [`Binder::bind`];
    /// [`Binder::pre_bind`] and [`Binder::post_bind`] still run.
    pub extender_binder: Option<ExtenderBinder>,
}

/// Why a binding did not happen.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// The API server refused the binding (a conflict, a node that went away). Retryable: the
    /// engine forgets the assumed pod and tries it again after its backoff.
    #[error("binding refused: {0}")]
    Refused(String),
    /// The request failed (a timeout, a lost connection). Retryable, as
    /// [`BindError::Refused`].
    #[error("binding failed")]
    Failed(#[source] BoxError),
    /// This scheduler may no longer write: its lease is lost or its fencing token is stale.
    /// Not retryable: the driver stops scheduling, drains the binds in flight and
    /// [`Driver::run`](crate::Driver::run) returns
    /// [`DriverError::Fenced`](crate::DriverError::Fenced).
    #[error("fenced off: {0}")]
    Fenced(String),
}

impl BindError {
    /// Whether the pod is tried again (everything but [`BindError::Fenced`]).
    pub fn is_retryable(&self) -> bool {
        !matches!(self, BindError::Fenced(_))
    }

    /// The message handed to the engine (`finish_binding`), with the source's text.
    pub(crate) fn message(&self) -> String {
        match self {
            BindError::Failed(source) => format!("binding failed: {source}"),
            other => other.to_string(),
        }
    }
}

/// kube's binding cycle, the caller's side: the pod is assumed on the node already; make it so
/// in the API server (a `pods/binding` subresource, a row in a database, a line in a log).
///
/// The driver runs each binding on its own task, concurrently with the next scheduling
/// cycles and with other bindings (at most
/// [`DriverBuilder::max_concurrent_binds`](crate::DriverBuilder::max_concurrent_binds) at
/// once). To ensure correctness:
/// - `bind` is called at most once per handed-out placement; a retried pod is a new
///   placement, possibly on another node.
/// - Return `Ok` only once the binding is durable. The engine keeps the pod assumed on the
///   node until the informer reports it bound ([`DriverHandle::apply`](crate::DriverHandle::apply)
///   with the bound pod), so feed that report back.
/// - An error undoes the placement (the engine's Unreserve, forget, backoff), so a failed
///   bind must have left nothing behind.
///
/// ```
/// use sched_driver::{Binder, BindError, Binding};
///
/// struct LogBinder;
///
/// #[sched_driver::async_trait]
/// impl Binder for LogBinder {
///     async fn bind(&self, b: &Binding) -> Result<(), BindError> {
///         println!("bind {} to {}", b.pod, b.node);
///         Ok(())
///     }
/// }
/// ```
#[async_trait::async_trait]
pub trait Binder: Send + Sync + 'static {
    /// kube's PreBind: work before the binding (provision a volume, set up the network). An
    /// error fails the binding as `bind`'s would, and `bind` is not called.
    ///
    /// # Errors
    /// As for [`Binder::bind`].
    async fn pre_bind(&self, binding: &Binding) -> Result<(), BindError> {
        let _ = binding;
        Ok(())
    }

    /// Binds the pod to the node.
    ///
    /// # Errors
    /// [`BindError`]: retryable ones requeue the pod, [`BindError::Fenced`] stops the driver.
    async fn bind(&self, binding: &Binding) -> Result<(), BindError>;

    /// kube's PostBind: told after a successful binding (informational: cleanup, logs).
    async fn post_bind(&self, binding: &Binding) {
        let _ = binding;
    }

    /// kube's Unreserve, the caller's side: `pre_bind` or the binding failed with `error`;
    /// undo what `pre_bind` may have written (kube's DynamicResources removes the pod from its
    /// claims' `status.reservedFor`). Called before the engine forgets the placement and
    /// requeues the pod, also after [`BindError::Fenced`] (write nothing then). Best effort:
    /// a failure here is the implementation's to log; the pod is tried again either way.
    async fn unreserve(&self, binding: &Binding, error: &BindError) {
        let _ = (binding, error);
    }
}

/// A preemption the engine decided: delete `victims` so that `pod` fits on `node`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Preemption {
    /// `namespace/name` of the preemptor, nominated to `node`.
    pub pod: PodKey,
    /// The node.
    pub node: String,
    /// `namespace/name` of the pods to delete, most important first.
    pub victims: Vec<PodKey>,
    /// Lower-priority pods whose nomination to `node` the engine cleared (kube's
    /// `prepareCandidate` clears their `status.nominatedNodeName` through the API).
    pub unnominated: Vec<PodKey>,
}

/// Why the victims of a preemption were not (all) deleted, or a claim was not deallocated.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DeleteError {
    /// A deletion failed. The preemptor stays nominated and is tried again when pods are
    /// deleted or after its longest stay in the unschedulable pool; it may preempt again.
    #[error("deleting victims failed")]
    Failed(#[source] BoxError),
    /// A claim's deallocation failed ([`ClaimDeallocator`]): the pod waits as unschedulable
    /// and deallocates again on its next attempt if the claim still needs it.
    #[error("deallocating the claim failed")]
    DeallocationFailed(#[source] BoxError),
    /// This scheduler may no longer write (as [`BindError::Fenced`]): the driver stops.
    #[error("fenced off: {0}")]
    Fenced(String),
}

/// Deletes the victims of a [`Preemption`] (kube's `PreemptPod`: an API delete per victim),
/// on its own task, as kube's asynchronous preemption does. The engine frees the victims'
/// resources only when the informer reports them deleted
/// ([`ClusterEvent::Delete`](sched_core::scheduler::ClusterEvent::Delete) of an [`ObjectKey::Pod`](sched_core::scheduler::ObjectKey::Pod)) through
/// [`DriverHandle::apply`](crate::DriverHandle::apply)); that report also wakes the preemptor.
#[async_trait::async_trait]
pub trait VictimDeleter: Send + Sync + 'static {
    /// Deletes `preemption.victims`.
    ///
    /// # Errors
    /// [`DeleteError`]; [`DeleteError::Fenced`] stops the driver.
    async fn delete_victims(&self, preemption: &Preemption) -> Result<(), DeleteError>;
}

/// Writes the claim deallocations of DynamicResources' PostFilter (kube: an `UpdateStatus` of
/// the claim with its allocation and `reservedFor` cleared), on its own task. The engine sees
/// the claim deallocated only when the informer reports the claim's update through
/// [`DriverHandle::apply`](crate::DriverHandle::apply); that report also wakes the pod.
#[async_trait::async_trait]
pub trait ClaimDeallocator: Send + Sync + 'static {
    /// Deallocates the claim, if [`Deallocation::still_applies`] to it as it is now (otherwise
    /// it does nothing and succeeds).
    ///
    /// # Errors
    /// [`DeleteError`]; [`DeleteError::Fenced`] stops the driver.
    async fn deallocate(&self, claim: &Deallocation) -> Result<(), DeleteError>;
}
