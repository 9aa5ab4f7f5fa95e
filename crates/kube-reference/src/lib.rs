//! kube itself as sched-core's reference, the Rust half of it (the Go half is `reference/` at the
//! top of the workspace: kube-scheduler v1.34.4 in process as an oracle, kube's scheduler_perf
//! workloads, kube-apiserver and etcd).
//!
//! - [`oracle`]: what kube-scheduler answered for a case (`oracle.json`), and running the oracle;
//! - [`case`]: a case folder (nodes, pods in order, other objects, an optional
//!   `KubeSchedulerConfiguration`), read and written;
//! - [`replay`]: the same case through sched-core, following kube's placements, every pending pod
//!   compared with kube's answer and classified.

pub mod case;
pub mod differential;
pub mod documented;
pub mod generator;
pub mod oracle;
pub mod perf;
pub mod replay;
