//! kube's Reserve and Permit extension points, as traits the caller implements.

use std::sync::Arc;
use std::time::Duration;

use crate::model::{Pod, PodKey};

/// One Reserve step of the engine, run in order at Reserve and in reverse at Unreserve:
/// kube's VolumeBinding and DynamicResources of the pod's profile (built in, first, in the
/// order of kube's default profiles), then the caller's plugins in the order added.
#[derive(Clone, Debug)]
pub(super) enum ReserveHook {
    /// VolumeBinding's Reserve: the PersistentVolumes and claims matched at Filter are
    /// assumed in the snapshot's storage index; Unreserve forgets them.
    VolumeBinding,
    /// DynamicResources' Reserve: the pod's claims are allocated on the node and the
    /// allocations held in flight in the snapshot's DRA index; Unreserve drops them.
    DynamicResources,
    /// A caller's [`ReservePlugin`].
    Plugin(Arc<dyn ReservePlugin>),
}

impl ReserveHook {
    /// The name kube's messages give the hook.
    pub(super) fn name(&self) -> &str {
        match self {
            ReserveHook::VolumeBinding => "VolumeBinding",
            ReserveHook::DynamicResources => crate::plugins::dra::NAME,
            ReserveHook::Plugin(p) => p.name(),
        }
    }
}

/// kube's Reserve/Unreserve: told when a pod is assumed onto a node, and when that is undone
/// (a later Reserve or Permit plugin refused, the wait timed out, or the bind failed).
pub trait ReservePlugin: Send + Sync {
    /// The plugin's name (in messages).
    fn name(&self) -> &str;

    /// The pod was assumed onto `node`. An error undoes the placement: every Reserve plugin
    /// is told to unreserve (in reverse order), the pod is forgotten and backs off.
    ///
    /// # Errors
    /// Why the pod may not stay there.
    fn reserve(&self, pod: &Pod, node: &str) -> Result<(), ReserveError>;

    /// Undoes [`ReservePlugin::reserve`]; must be idempotent, as kube requires.
    fn unreserve(&self, pod: &Pod, node: &str);
}

/// Why a [`ReservePlugin`] refused a placement: its reason, which [`Step::Rejected`] carries
/// and kube's FailedScheduling message ends with.
///
/// [`Step::Rejected`]: super::Step::Rejected
///
/// ```
/// use sched_core::scheduler::ReserveError;
/// let e = ReserveError::new("over quota");
/// assert_eq!(e.reason(), "over quota");
/// assert_eq!(ReserveError::from("over quota"), e);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{reason}")]
pub struct ReserveError {
    reason: String,
}

impl ReserveError {
    /// A refusal with this reason.
    pub fn new(reason: impl Into<String>) -> ReserveError {
        ReserveError {
            reason: reason.into(),
        }
    }

    /// The reason.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl From<String> for ReserveError {
    fn from(reason: String) -> ReserveError {
        ReserveError::new(reason)
    }
}

impl From<&str> for ReserveError {
    fn from(reason: &str) -> ReserveError {
        ReserveError::new(reason)
    }
}

/// What a Permit plugin says about a reserved pod.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PermitDecision {
    /// Bind it.
    Allow,
    /// Do not bind it: it is unreserved, forgotten and waits in the unschedulable pool.
    Reject(String),
    /// Hold it (assumed) until [`Scheduler::allow`](super::Scheduler::allow) or
    /// [`Scheduler::reject`](super::Scheduler::reject), at most this long.
    Wait(Duration),
    /// Bind it, and allow these waiting pods (`namespace/name`) on this plugin, as kube's
    /// `IterateOverWaitingPods(... Allow)` does for a gang's last member. Pods not waiting on
    /// the plugin are passed over.
    AllowWith(Vec<PodKey>),
}

/// kube's Permit: the last word before binding (gang scheduling, quotas, approvals).
pub trait PermitPlugin: Send + Sync {
    /// The plugin's name (used to allow a waiting pod).
    fn name(&self) -> &str;

    /// Whether `pod`, reserved on `node`, may be bound.
    fn permit(&self, pod: &Pod, node: &str) -> PermitDecision;
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
