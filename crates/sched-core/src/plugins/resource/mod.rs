//! Resource and node-preference priorities: least/most requested, balanced allocation,
//! requested-to-capacity ratio, resource limits, image locality, prefer-avoid-pods, equal.
//!
//! Each priority carries kube-scheduler's legacy Policy name ([`Priority::name`] and an
//! associated `NAME` constant) and reproduces the framework plugin kube 1.22 ran for that name,
//! with kube's integer arithmetic (and `float64` where kube uses it), on the framework scale
//! (node scores 0..=100). Per node they read the dense [`NodeSummary`] (allocatable,
//! requested and non-zero requested CPU and memory); what depends only on the pod is computed
//! once in `prepare`.
//!
//! | legacy name | struct | argument | kube plugin |
//! |---|---|---|---|
//! | `LeastRequestedPriority` | [`LeastRequestedPriority`] | none | NodeResourcesLeastAllocated (cpu:1, memory:1) |
//! | `MostRequestedPriority` | [`MostRequestedPriority`] | none | NodeResourcesMostAllocated (cpu:1, memory:1) |
//! | `BalancedResourceAllocation` | [`BalancedResourceAllocation`] | none | NodeResourcesBalancedAllocation |
//! | `RequestedToCapacityRatioPriority` | [`RequestedToCapacityRatioPriority`] | `requestedToCapacityRatioArguments` | RequestedToCapacityRatio |
//! | `ResourceLimitsPriority` | [`ResourceLimitsPriority`] | none | NodeResourceLimits |
//! | `ImageLocalityPriority` | [`ImageLocalityPriority`] | none | ImageLocality |
//! | `NodePreferAvoidPodsPriority` | [`NodePreferAvoidPodsPriority`] | none | NodePreferAvoidPods |
//! | `EqualPriority` | [`EqualPriority`] | none | (constant 1) |
//!
//! [`Priority::name`]: crate::framework::Priority::name
//! [`NodeSummary`]: crate::snapshot::NodeSummary

mod allocation;
mod avoid;
mod balanced;
#[cfg(test)]
mod balanced_v1_34_tests;
mod equal;
#[cfg(test)]
mod fit_score_v1_34_tests;
mod image;
#[cfg(test)]
mod image_v1_34_tests;
mod limits;
mod ratio;
#[cfg(test)]
mod testutil;

pub use allocation::{LeastRequestedPriority, MostRequestedPriority, ResourceSpec};
pub use avoid::{NodePreferAvoidPodsPriority, PREFER_AVOID_PODS_ANNOTATION};
pub use balanced::{BalancedResourceAllocation, NodeResourcesBalancedAllocation};
pub use equal::EqualPriority;
pub use image::{ImageLocalityPriority, normalized_image_name};
pub use limits::ResourceLimitsPriority;
pub use ratio::{
    MAX_CUSTOM_PRIORITY_SCORE, RatioArgsError, RequestedToCapacityRatioPriority,
    UtilizationShapePoint,
};
