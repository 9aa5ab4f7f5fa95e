//! sched-core: kube-scheduler's placement core (filter, score, select) without a Kubernetes
//! client: kube's legacy predicates and priorities with their exact arithmetic, kube's legacy
//! Policy JSON, and kube's explanations, fast enough to run per pod on thousands of nodes.
//!
//! # Start here
//! 1. Load or build nodes and pods ([`model`]): `kubectl get nodes,pods -o json` output
//!    deserializes directly ([`model::load_node_list`], [`model::load_pod_list`]).
//! 2. Put them in a [`snapshot::Snapshot`] (bound pods land on their nodes; `assume` and
//!    `forget` place and remove pending ones).
//! 3. Compile a [`policy::Policy`] (kube's legacy JSON, or [`policy::Policy::kube_default`])
//!    into a [`scheduler::Scheduler`], adding your own [`framework::Predicate`] or
//!    [`framework::Priority`] (a closure is enough: [`framework::predicate_fn`]).
//! 4. Call [`scheduler::Scheduler::schedule`]: the chosen node, or a
//!    [`scheduler::FitError`] that explains every node with kube's summary text.
//!
//! ```
//! use sched_core::framework::{Reason, predicate_fn};
//! use sched_core::policy::Policy;
//! use sched_core::snapshot::Snapshot;
//! use sched_core::synth::{benchmark_cluster, benchmark_pod};
//!
//! let (nodes, running) = benchmark_cluster(20); // or load_node_list / load_pod_list
//! let mut snapshot = Snapshot::from_objects(nodes, running)?;
//! let not_node_3 = predicate_fn("NotNode3", |_pod, node| {
//!     if node.name() == "node-3" { Err(Reason::Custom(1)) } else { Ok(()) }
//! });
//! let mut scheduler = Policy::kube_default().builder()?.predicate(not_node_3).seed(1).build()?;
//! let placed = scheduler.schedule_and_assume(&benchmark_pod(0), &mut snapshot)?;
//! assert_ne!(placed.node, "node-3");
//! assert_eq!(placed.evaluated_nodes, 20);
//!
//! let mut huge = benchmark_pod(1);
//! huge.spec.containers[0].resources.requests.insert("cpu".into(), "64".parse()?);
//! let err = scheduler.schedule(&huge, &snapshot).unwrap_err();
//! assert!(err.to_string().starts_with("0/20 nodes are available:"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Performance: per-pod `prepare` resolves the pod's terms to interned ids once, plugins with
//! nothing to do for the pod are skipped, filters and scores read a dense per-node
//! [`snapshot::NodeSummary`], and built-ins whose work needs only a node's numbers run as
//! fused passes over compact node arrays (see [`dense`]); scheduling allocates nothing per
//! node.

pub mod dense;
pub mod formulas;
pub mod framework;
pub mod model;
pub mod plugins;
pub mod policy;
pub mod scheduler;
pub mod select;
pub mod snapshot;
pub mod synth;
