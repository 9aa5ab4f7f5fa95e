//! Dynamic resource allocation (kube v1.34's `resource.k8s.io/v1`): what evaluates the
//! objects the model reads
//! ([`crate::model::DeviceClass`], [`crate::model::ResourceSlice`], [`crate::model::ResourceClaim`]).
//!
//! It sits right above the model and below the snapshot: it reads DeviceClasses,
//! ResourceSlices and ResourceClaims and knows nothing of nodes' pods or the engine.

pub mod allocator;
pub mod cel;
pub mod selectors;
