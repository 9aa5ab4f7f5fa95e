//! sched-core: kube-scheduler's placement core (filter, score, select) without a Kubernetes
//! client: kube's legacy predicates and priorities with their exact arithmetic, kube's legacy
//! Policy JSON, and kube's explanations, fast enough to run per pod on thousands of nodes.
//!
//! # Start here
//! Data flows one way: **model -> snapshot -> profile**, and no module imports one above it.
//! 1. Load or build nodes and pods ([`model`]): [`model::load_file`] reads what kubectl
//!    writes, by kind (`kubectl get nodes -o json`, `kubectl get pods -A -o json`, or a mixed
//!    `kubectl get nodes,pods,services -A -o json`), and
//!    [`model::ClusterObjects::into_cluster`] splits bound and pending pods, reporting what it
//!    leaves out.
//! 2. Put them in a [`snapshot::Snapshot`] (bound pods land on their nodes; `assume` and
//!    `forget` place and remove pending ones).
//! 3. Compile a [`policy::Policy`] (kube's legacy JSON, or [`policy::Policy::kube_default`])
//!    into a [`profile::Profile`], adding your own [`framework::Predicate`] or
//!    [`framework::Priority`] (a closure is enough: [`framework::predicate_fn`]). A profile is
//!    immutable and `Send + Sync`: share it between workers with `Arc`.
//! 4. Give each worker a [`profile::Cache`] ([`profile::Profile::create_cache`]) and call
//!    [`profile::Profile::schedule`]: the chosen node, or a [`profile::FitError`] that
//!    explains every node with kube's summary text.
//!
//! ```
//! use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
//! use sched_core::framework::{Reason, predicate_fn};
//! use sched_core::policy::Policy;
//! use sched_core::snapshot::Snapshot;
//!
//! let (nodes, running) = benchmark_cluster(20); // or model::load_file(..)?.into_cluster()
//! let mut snapshot = Snapshot::from_objects(nodes, running)?;
//! let not_node_3 = predicate_fn("NotNode3", |_pod, node| {
//!     if node.name() == "node-3" { Err(Reason::Custom(1)) } else { Ok(()) }
//! });
//! let profile = Policy::kube_default().builder()?.predicate(not_node_3).seed(1).build()?;
//! let mut cache = profile.create_cache();
//! let placed = profile.schedule_and_assume(&mut cache, &benchmark_pod(0), &mut snapshot)?;
//! assert_ne!(placed.node, "node-3");
//! assert_eq!(placed.evaluated_nodes, 20);
//!
//! let mut huge = benchmark_pod(1);
//! huge.spec.containers[0].resources.requests.insert("cpu".into(), "64".parse()?);
//! let err = profile.schedule(&mut cache, &huge, &snapshot).unwrap_err();
//! assert!(err.to_string().starts_with("0/20 nodes are available:"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Modules, bottom up
//! - [`model`]: Kubernetes objects and their JSON; [`snapshot`]: the cluster state, with the
//!   per-node columns the fast path reads;
//! - [`formulas`] (kube's per-node formulas and the score scale) and [`select`]
//!   (`select_host`): leaves;
//! - [`framework`]: the plugin traits; [`plugins`]: kube's built-ins; [`policy`]: kube's
//!   legacy Policy JSON;
//! - [`profile`]: the compiled pipeline and its per-worker cache;
//! - [`extender`]: kube's scheduler extenders (the trait, kube's wire format, an HTTP client);
//! - [`config`]: kube's `KubeSchedulerConfiguration`; [`scheduler`]: the scheduling cycle as
//!   a deterministic engine (queue, profiles, preemption, extenders, binding hand-off);
//! - [`bench_cluster`]: the synthetic clusters of the benchmarks, demos and tests.
//!
//! Performance: per-pod `prepare` resolves the pod's terms to interned ids once, plugins with
//! nothing to do for the pod are skipped, filters and scores read a dense per-node
//! [`snapshot::NodeSummary`], and built-ins whose work needs only a node's numbers run as
//! fused passes over compact per-node columns (the fast path); scheduling allocates nothing
//! per node.

pub mod bench_cluster;
pub mod config;
pub mod dra;
pub mod extender;
mod fast_path;
pub mod formulas;
pub mod framework;
pub mod model;
pub mod plugins;
pub mod policy;
pub mod profile;
pub mod scheduler;
pub mod select;
pub mod snapshot;
