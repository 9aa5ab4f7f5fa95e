//! The plugin interface: [`Predicate`] (filter) and [`Priority`] (score), plus the per-pod
//! [`CycleContext`] they share and the [`Reason`] codes a failing node gets.
//!
//! Each plugin is called once per pod to `prepare` (kube's PreFilter/PreScore): it resolves the
//! pod's terms against the snapshot into its own typed `State`, and may say it has nothing to
//! do for this pod, which is how the scheduler avoids work for pods without tolerations, ports
//! or affinity. Then `filter` or `score` runs per node with that state and must not allocate.
//! A profile holds plugins of different types as [`BoxPredicate`] and [`BoxPriority`].
//!
//! A closure is enough for a simple predicate:
//!
//! ```
//! use sched_core::framework::{predicate_fn, Reason};
//! let gpu_only = predicate_fn("GpuNodesOnly", |_pod, node| {
//!     if node.node().metadata.labels.contains_key("gpu") { Ok(()) } else { Err(Reason::Custom(1)) }
//! });
//! # let _ = gpu_only;
//! ```

mod boxed;
mod error;
mod plugin;

use std::borrow::Cow;

pub use boxed::{BoxPredicate, BoxPriority};
pub(crate) use boxed::{ErasedState, PreparedScoring};
pub use error::{PluginError, PluginErrorKind};
pub use plugin::{
    Predicate, Prepared, PreparedScore, Priority, Rejection, predicate_fn, priority_fn,
};

use crate::model::{
    Node, Pod, Resources, has_pod_level_requests, pod_container_non_zero_requests,
    pod_non_zero_requests, pod_requests,
};
use crate::snapshot::Snapshot;

/// A set of resources a node lacks: bit 0 CPU, 1 memory, 2 ephemeral storage, 3 pod count,
/// bit `4 + i` the pod's i-th scalar request (see [`CycleContext::requests`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceSet(pub u64);

impl ResourceSet {
    /// CPU.
    pub const CPU: u64 = 1;
    /// Memory.
    pub const MEMORY: u64 = 1 << 1;
    /// Ephemeral storage.
    pub const EPHEMERAL_STORAGE: u64 = 1 << 2;
    /// Pod count.
    pub const PODS: u64 = 1 << 3;

    /// The bit of the pod's i-th scalar request (indices past 59 share the last bit).
    pub fn scalar_bit(i: usize) -> u64 {
        1 << (4 + i.min(59))
    }
}

/// Which kube-scheduler release a profile reproduces where releases differ: reason texts, and
/// the formulas of the plugins that changed (each plugin takes the version it follows). The
/// legacy Policy path is pinned to v1.20.2, the last release of the Policy era with the
/// `DefaultPodTopologySpread` gate; `KubeSchedulerConfiguration` profiles follow v1.34.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum KubeVersion {
    /// kube-scheduler v1.20.2.
    V1_20,
    /// kube-scheduler v1.34.
    #[default]
    V1_34,
}

/// Why a node cannot take the pod. `Copy` and small, so the filter loop never builds text;
/// [`Reason::write_messages`] renders kube's wording on demand.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Reason {
    /// Not enough of these resources (one message per resource: "Insufficient cpu", ...,
    /// "Too many pods").
    Insufficient(ResourceSet),
    /// A requested host port is taken.
    PortsConflict,
    /// `spec.nodeName` names another node.
    NodeNameMismatch,
    /// nodeSelector or required node affinity does not match.
    NodeSelectorMismatch,
    /// The node affinity the profile adds to every pod (`NodeAffinityArgs.addedAffinity`)
    /// does not match.
    EnforcedNodeAffinityMismatch,
    /// A GCE PD, EBS, RBD or iSCSI volume conflicts with one in use.
    DiskConflict,
    /// The node's taint at this index of `spec.taints` is not tolerated (the first such
    /// NoSchedule or NoExecute taint, as kube names it).
    UntoleratedTaint(u32),
    /// The node is cordoned.
    Unschedulable,
    /// The Ready condition is not True.
    NotReady,
    /// The network is unavailable.
    NetworkUnavailable,
    /// Memory pressure.
    MemoryPressure,
    /// Disk pressure.
    DiskPressure,
    /// PID pressure.
    PidPressure,
    /// Labels required (or forbidden) by CheckNodeLabelPresence.
    LabelPresenceViolated,
    /// The pod's required pod affinity is not satisfied.
    PodAffinityRulesNotMatch,
    /// The pod's required pod anti-affinity is violated.
    PodAntiAffinityRulesNotMatch,
    /// An existing pod's required anti-affinity forbids the pod here.
    ExistingPodsAntiAffinityRulesNotMatch,
    /// Service affinity (CheckServiceAffinity) is violated.
    ServiceAffinityViolated,
    /// Placing the pod here would break a `DoNotSchedule` topology spread constraint.
    TopologySpreadConstraintsNotMatch,
    /// The node lacks the topology key of a `DoNotSchedule` topology spread constraint.
    TopologySpreadMissingLabel,
    /// A bound PersistentVolume's zone or region label does not match the node's (VolumeZone,
    /// NoVolumeZoneConflict).
    VolumeZoneConflict,
    /// The node cannot attach that many more volumes (NodeVolumeLimits, Max*VolumeCount).
    MaxVolumeCount,
    /// VolumeBinding's conflicts on the node, each reported with its own text as kube does.
    VolumeBinding(VolumeBindingConflicts),
    /// The pod has an unbound claim of an `Immediate` StorageClass (VolumeBinding).
    UnboundImmediateClaims,
    /// A `ReadWriteOncePod` claim of the pod is in use by another pod (VolumeRestrictions).
    ReadWriteOncePodConflict,
    /// A volume of the pod cannot be resolved before any node is looked at (kube's PreFilter
    /// rejections of the volume plugins): in a v1.34 profile the pod is rejected as a whole
    /// ([`Prepared::Reject`], whose message names the object), in a v1.20 profile every node
    /// fails with it.
    Volume(VolumeProblem),
    /// kube's DynamicResources rejected the node or the pod (every one of its rejections is
    /// `UnschedulableAndUnresolvable`: preemption does not help).
    DynamicResources(DraProblem),
    /// A predicate narrowed the pod's nodes to others ([`Prepared::RunOn`], kube's
    /// `PreFilterResult`): the node was not filtered. The profile's explanation names the
    /// predicates that narrowed the nodes ("node(s) didn't satisfy plugin(s) \[NodeAffinity\]").
    OutsidePreFilterResult,
    /// A custom predicate's code; its text comes from [`Predicate::explain`].
    Custom(u32),
    /// A scheduler extender rejected the node (its message is in the fit error's
    /// [`NodeFailure`](crate::profile::NodeFailure)): `failedNodes`, or with `unresolvable`
    /// `failedAndUnresolvableNodes`, which preemption does not consider.
    Extender {
        /// kube's `UnschedulableAndUnresolvable`.
        unresolvable: bool,
    },
}

/// The conflicts VolumeBinding finds on a node (bits, reported in kube's order).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VolumeBindingConflicts(pub u8);

impl VolumeBindingConflicts {
    /// A bound PersistentVolume's node affinity does not match the node: "node(s) didn't
    /// match PersistentVolume's node affinity" (v1.20: "node(s) had volume node affinity
    /// conflict").
    pub const NODE_AFFINITY: u8 = 1;
    /// An unbound `WaitForFirstConsumer` claim finds no PersistentVolume on the node and cannot
    /// be provisioned there: "node(s) didn't find available persistent volumes to bind".
    pub const NO_VOLUME_TO_BIND: u8 = 1 << 1;
    /// A claim is bound to a PersistentVolume that does not exist.
    pub const BOUND_TO_MISSING_VOLUME: u8 = 1 << 2;
    /// A claim to provision finds no CSIStorageCapacity reachable from the node with room for
    /// it (its class's CSIDriver opted into capacity checks): "node(s) did not have enough
    /// free storage".
    pub const NOT_ENOUGH_SPACE: u8 = 1 << 3;

    /// Whether no conflict is set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

/// Why kube's DynamicResources rejects a node, or the pod before any node is filtered.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DraProblem {
    /// The pod's claims that need an allocation cannot all be allocated on the node.
    CannotAllocate,
    /// An allocated claim of the pod is for other nodes (its allocation's node selector).
    ClaimNotOnNode,
    /// The allocator failed on the node (a selector that does not evaluate, a malformed
    /// slice): kube fails the whole attempt with an error; here the node fails with it.
    AllocatorError,
    /// PreFilter rejected the pod (a claim missing, in use, being allocated, a device class
    /// missing): the [`Rejection`] carries kube's text.
    PodRejected,
}

impl DraProblem {
    fn text(self) -> &'static str {
        match self {
            DraProblem::CannotAllocate => "cannot allocate all claims",
            DraProblem::ClaimNotOnNode => "resourceclaim not available on the node",
            DraProblem::AllocatorError => "node(s) failed to allocate devices with an error",
            DraProblem::PodRejected => "dynamic resource allocation rejected the pod",
        }
    }
}

/// Why the volume plugins reject a pod on every node: a claim, volume or class it names cannot
/// be resolved. kube's texts name the object (`persistentvolumeclaim "data" not found`); a
/// [`Reason`] carries no text, so these name the kind only, and a v1.34 profile's
/// [`Rejection`] carries kube's text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum VolumeProblem {
    /// A `persistentVolumeClaim` volume with an empty `claimName`.
    ClaimWithoutName,
    /// The claim does not exist.
    ClaimNotFound,
    /// The claim is being deleted.
    ClaimBeingDeleted,
    /// A generic ephemeral volume's claim is not owned by the pod.
    ClaimNotOwnedByPod,
    /// The bound PersistentVolume does not exist.
    VolumeNotFound,
    /// The StorageClass does not exist.
    StorageClassNotFound,
    /// An unbound claim names no StorageClass (VolumeZone).
    NoVolumeNorClass,
    /// An unbound claim's StorageClass has no `volumeBindingMode`.
    BindingModeNotSet,
    /// An unbound claim of an `Immediate` class (VolumeZone's wording).
    UnboundVolume,
    /// A `Lost` claim whose PersistentVolume does not exist.
    ClaimLost,
}

impl VolumeProblem {
    fn text(self) -> &'static str {
        match self {
            VolumeProblem::ClaimWithoutName => "PersistentVolumeClaim had no name",
            VolumeProblem::ClaimNotFound => "persistentvolumeclaim not found",
            VolumeProblem::ClaimBeingDeleted => "persistentvolumeclaim is being deleted",
            VolumeProblem::ClaimNotOwnedByPod => "PVC was not created for pod (pod is not owner)",
            VolumeProblem::VolumeNotFound => "persistentvolume not found",
            VolumeProblem::StorageClassNotFound => "storageclass.storage.k8s.io not found",
            VolumeProblem::NoVolumeNorClass => {
                "PersistentVolumeClaim had no pv name and storageClass name"
            }
            VolumeProblem::BindingModeNotSet => "VolumeBindingMode not set for StorageClass",
            VolumeProblem::UnboundVolume => "PersistentVolume had no name",
            VolumeProblem::ClaimLost => {
                "persistentvolumeclaim bound to non-existent persistentvolume"
            }
        }
    }
}

impl Reason {
    /// Whether this reason stands for a Filter error (kube's status `Error`), which fails the
    /// whole attempt instead of the node ([`Predicate::filter_error`] gives its text): an
    /// allocator error of DynamicResources (a CEL runtime error in a selector, ...).
    pub fn is_error(&self) -> bool {
        matches!(self, Reason::DynamicResources(DraProblem::AllocatorError))
    }

    /// Calls `out` with each of kube's messages for this reason, worded as `version` words
    /// them. `requests` are the pod's effective requests (for scalar names) and `node` the node
    /// (for taints). Custom reasons are rendered by [`Predicate::explain`] instead, so this
    /// gives them a generic text.
    pub fn write_messages(
        &self,
        version: KubeVersion,
        requests: &Resources,
        node: &Node,
        out: &mut dyn FnMut(Cow<'static, str>),
    ) {
        match *self {
            Reason::Insufficient(set) => {
                let bits = set.0;
                if bits & ResourceSet::PODS != 0 {
                    out("Too many pods".into());
                }
                if bits & ResourceSet::CPU != 0 {
                    out("Insufficient cpu".into());
                }
                if bits & ResourceSet::MEMORY != 0 {
                    out("Insufficient memory".into());
                }
                if bits & ResourceSet::EPHEMERAL_STORAGE != 0 {
                    out("Insufficient ephemeral-storage".into());
                }
                for (i, (name, _)) in requests.scalar.iter().enumerate() {
                    if bits & ResourceSet::scalar_bit(i) != 0 {
                        out(format!("Insufficient {name}").into());
                    }
                }
            }
            Reason::PortsConflict => {
                out("node(s) didn't have free ports for the requested pod ports".into())
            }
            Reason::NodeNameMismatch => out("node(s) didn't match the requested node name".into()),
            Reason::NodeSelectorMismatch => out(match version {
                KubeVersion::V1_20 => "node(s) didn't match Pod's node affinity".into(),
                KubeVersion::V1_34 => "node(s) didn't match Pod's node affinity/selector".into(),
            }),
            Reason::EnforcedNodeAffinityMismatch => {
                out("node(s) didn't match scheduler-enforced node affinity".into())
            }
            Reason::DiskConflict => out("node(s) had no available disk".into()),
            Reason::UntoleratedTaint(i) => match (node.spec.taints.get(i as usize), version) {
                (Some(t), KubeVersion::V1_20) => out(format!(
                    "node(s) had taint {{{}: {}}}, that the pod didn't tolerate",
                    t.key, t.value
                )
                .into()),
                // kube v1.34's TaintToleration names no taint (ErrReasonNotMatch).
                (_, KubeVersion::V1_34) => out("node(s) had untolerated taint(s)".into()),
                (None, KubeVersion::V1_20) => out("node(s) had untolerated taint".into()),
            },
            Reason::Unschedulable => out("node(s) were unschedulable".into()),
            Reason::NotReady => out("node(s) were not ready".into()),
            Reason::NetworkUnavailable => out("node(s) had unavailable network".into()),
            Reason::MemoryPressure => out("node(s) had memory pressure".into()),
            Reason::DiskPressure => out("node(s) had disk pressure".into()),
            Reason::PidPressure => out("node(s) had pid pressure".into()),
            Reason::LabelPresenceViolated => out("node(s) didn't have the requested labels".into()),
            Reason::PodAffinityRulesNotMatch
            | Reason::PodAntiAffinityRulesNotMatch
            | Reason::ExistingPodsAntiAffinityRulesNotMatch => {
                if version == KubeVersion::V1_20 {
                    // v1.20's InterPodAffinity adds a generic reason to each specific one.
                    out("node(s) didn't match pod affinity/anti-affinity".into());
                }
                out(match *self {
                    Reason::PodAffinityRulesNotMatch => {
                        "node(s) didn't match pod affinity rules".into()
                    }
                    Reason::PodAntiAffinityRulesNotMatch => {
                        "node(s) didn't match pod anti-affinity rules".into()
                    }
                    _ => "node(s) didn't satisfy existing pods anti-affinity rules".into(),
                })
            }
            Reason::ServiceAffinityViolated => out("node(s) didn't match service affinity".into()),
            Reason::TopologySpreadConstraintsNotMatch => {
                out("node(s) didn't match pod topology spread constraints".into())
            }
            Reason::TopologySpreadMissingLabel => out(
                "node(s) didn't match pod topology spread constraints (missing required label)"
                    .into(),
            ),
            Reason::VolumeZoneConflict => out("node(s) had no available volume zone".into()),
            Reason::MaxVolumeCount => out("node(s) exceed max volume count".into()),
            Reason::VolumeBinding(c) => {
                if c.0 & VolumeBindingConflicts::NODE_AFFINITY != 0 {
                    out(match version {
                        KubeVersion::V1_20 => "node(s) had volume node affinity conflict".into(),
                        KubeVersion::V1_34 => {
                            "node(s) didn't match PersistentVolume's node affinity".into()
                        }
                    });
                }
                if c.0 & VolumeBindingConflicts::NO_VOLUME_TO_BIND != 0 {
                    out("node(s) didn't find available persistent volumes to bind".into());
                }
                if c.0 & VolumeBindingConflicts::NOT_ENOUGH_SPACE != 0 {
                    out("node(s) did not have enough free storage".into());
                }
                if c.0 & VolumeBindingConflicts::BOUND_TO_MISSING_VOLUME != 0 {
                    // v1.20 failed the pod with an error here; this is the later versions' text.
                    out(
                        "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"
                            .into(),
                    );
                }
            }
            Reason::UnboundImmediateClaims => {
                out("pod has unbound immediate PersistentVolumeClaims".into())
            }
            Reason::ReadWriteOncePodConflict => out(match version {
                // ReadWriteOncePod came after v1.20; a legacy profile keeps the first wording.
                KubeVersion::V1_20 => "node has pod using PersistentVolumeClaim with the same \
                                       name and ReadWriteOncePod access mode"
                    .into(),
                KubeVersion::V1_34 => "node(s) unavailable due to PersistentVolumeClaim with \
                                       ReadWriteOncePod access mode already in-use by another pod"
                    .into(),
            }),
            Reason::Volume(problem) => out(problem.text().into()),
            Reason::DynamicResources(problem) => out(problem.text().into()),
            // The profile names the predicates (see `Reason::OutsidePreFilterResult`).
            Reason::OutsidePreFilterResult => out("node(s) didn't satisfy plugin(s)".into()),
            Reason::Custom(code) => out(format!("custom reason {code}").into()),
            Reason::Extender { .. } => out("node(s) were rejected by an extender".into()),
        }
    }
}

/// A pod's requests as a [`CycleContext`] of one kube version computes them.
#[derive(Clone, Debug)]
pub(crate) struct PodRequests {
    requests: Resources,
    non_zero: (i64, i64),
    fit_score: (i64, i64),
    version: KubeVersion,
}

/// What the scheduler knows about the pod being placed, computed once per cycle.
#[derive(Debug)]
pub struct CycleContext<'a> {
    pod: &'a Pod,
    snapshot: &'a Snapshot,
    requests: Resources,
    non_zero: (i64, i64),
    /// `non_zero` as NodeResourcesFit's scorers read it (see
    /// [`CycleContext::fit_score_requests`]).
    fit_score: (i64, i64),
    version: KubeVersion,
}

impl<'a> CycleContext<'a> {
    /// The pod's requests and non-zero requests as a node counts them, for the assume once
    /// the cycle is over (v1.20's overhead quirk is a scoring matter only: kube's node sums add
    /// the overhead's milli-CPU).
    pub(crate) fn into_requests(self) -> (Resources, (i64, i64)) {
        let non_zero =
            if self.version == KubeVersion::V1_20 && self.pod.spec.overhead.contains_key("cpu") {
                pod_non_zero_requests(self.pod)
            } else {
                self.non_zero
            };
        (self.requests, non_zero)
    }

    /// Precomputes the pod's requests, for a profile that follows the current kube-scheduler
    /// ([`KubeVersion::V1_34`]).
    pub fn new(pod: &'a Pod, snapshot: &'a Snapshot) -> Self {
        CycleContext::for_version(pod, snapshot, KubeVersion::V1_34)
    }

    /// Precomputes the pod's requests as `version` computes them: v1.20's scoring adds a pod
    /// overhead's CPU as its `Quantity.Value()`, whole cores rounded up, to the pod's
    /// milli-CPU (250m of overhead adds 1, not 250), a kube quirk reproduced here; later
    /// versions add the milli-CPU.
    pub fn for_version(pod: &'a Pod, snapshot: &'a Snapshot, version: KubeVersion) -> Self {
        let mut non_zero = pod_non_zero_requests(pod);
        if version == KubeVersion::V1_20
            && let Some(q) = pod.spec.overhead.get("cpu")
        {
            non_zero.0 = non_zero
                .0
                .wrapping_sub(q.milli_value())
                .wrapping_add(q.value());
        }
        // kube v1.34 builds NodeResourcesFit's scorer without pod-level resources.
        let fit_score = if version >= KubeVersion::V1_34 && has_pod_level_requests(pod) {
            pod_container_non_zero_requests(pod)
        } else {
            non_zero
        };
        CycleContext {
            pod,
            snapshot,
            requests: pod_requests(pod),
            non_zero,
            fit_score,
            version,
        }
    }

    /// The pod's requests as this context computed them, to build further contexts for the
    /// same pod and version without computing them again ([`CycleContext::with_requests`]).
    pub(crate) fn pod_requests(&self) -> PodRequests {
        PodRequests {
            requests: self.requests.clone(),
            non_zero: self.non_zero,
            fit_score: self.fit_score,
            version: self.version,
        }
    }

    /// [`CycleContext::for_version`] with the requests `requests` computed for the same pod.
    pub(crate) fn with_requests(
        pod: &'a Pod,
        snapshot: &'a Snapshot,
        requests: &PodRequests,
    ) -> Self {
        CycleContext {
            pod,
            snapshot,
            requests: requests.requests.clone(),
            non_zero: requests.non_zero,
            fit_score: requests.fit_score,
            version: requests.version,
        }
    }

    /// The kube-scheduler release the profile follows (plugins whose formulas changed read it).
    #[inline]
    pub fn kube_version(&self) -> KubeVersion {
        self.version
    }

    /// The pod being scheduled.
    #[inline]
    pub fn pod(&self) -> &'a Pod {
        self.pod
    }

    /// The cluster.
    #[inline]
    pub fn snapshot(&self) -> &'a Snapshot {
        self.snapshot
    }

    /// The pod's effective requests (see [`crate::model::pod_requests`]).
    #[inline]
    pub fn requests(&self) -> &Resources {
        &self.requests
    }

    /// The pod's non-zero CPU (milli) and memory (bytes) requests.
    #[inline]
    pub fn non_zero_requests(&self) -> (i64, i64) {
        self.non_zero
    }

    /// The pod's non-zero CPU (milli) and memory (bytes) requests as NodeResourcesFit's
    /// scorers read them (LeastAllocated, MostAllocated, RequestedToCapacityRatio): kube v1.34
    /// builds that scorer without pod-level resources, so a pod's `spec.resources` requests
    /// are not applied here ([`crate::model::pod_container_non_zero_requests`]), while the
    /// filter and NodeResourcesBalancedAllocation apply them. Under v1.20 the same as
    /// [`CycleContext::non_zero_requests`].
    #[inline]
    pub fn fit_score_requests(&self) -> (i64, i64) {
        self.fit_score
    }
}
