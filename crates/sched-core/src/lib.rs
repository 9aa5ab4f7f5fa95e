//! sched-core: kube-scheduler's scheduling core without a Kubernetes client.

pub mod framework;
pub mod model;
pub mod plugins;
pub mod policy;
pub mod scheduler;
pub mod snapshot;
pub mod synth;
