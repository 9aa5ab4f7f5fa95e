//! sched-core: kube-scheduler's scheduling core without a Kubernetes client.

pub mod model;
pub mod plugins;
pub mod policy;
