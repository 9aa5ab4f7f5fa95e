//! kube-scheduler's extenders: services the scheduling cycle asks, after the filter plugins,
//! to filter the feasible nodes, to add their scores, and to bind the pod (kube's
//! `pkg/scheduler/extender.go`, wire format `k8s.io/kube-scheduler/extender/v1`).
//!
//! - [`Extender`]: the synchronous trait the scheduling engine calls
//!   ([`crate::scheduler::Scheduler::with_extender`]); an in-process extender implements it.
//! - [`RemoteExtender`]: a configuration's `extenders` entry ([`ExtenderConfig`]) as the
//!   engine knows it. The engine never calls it: a pod it is interested in is parked and its
//!   calls go out as [`crate::scheduler::Step::CallExtenders`] ([`ExtenderCall`], sequenced
//!   without I/O), to be sent by the caller (sched-driver: asynchronously, with each
//!   extender's `httpTimeout`) and given back with
//!   [`crate::scheduler::Scheduler::extender_reply`].
//! - `HttpExtender` (feature `http-extender`, off by default): kube's HTTP extender over a
//!   blocking client (ureq, rustls), for a caller that runs the engine by hand and accepts
//!   that a call blocks it for up to its `httpTimeout`
//!   (`Scheduler::with_blocking_http_extenders`).
//! - [`wire`]: kube's JSON types, as kube sends and reads them.
//!
//! ```
//! use sched_core::extender::{Extender, ExtenderError, FilterResult};
//! use sched_core::model::{Node, Pod};
//!
//! /// Keeps nodes labelled `gpu=true`.
//! struct GpuNodes;
//! impl Extender for GpuNodes {
//!     fn name(&self) -> &str { "gpu-nodes" }
//!     fn is_filter(&self) -> bool { true }
//!     fn filter(&self, _pod: &Pod, nodes: &[&Node]) -> Result<FilterResult, ExtenderError> {
//!         let mut r = FilterResult::default();
//!         for n in nodes {
//!             if n.metadata.labels.get("gpu").map(String::as_str) == Some("true") {
//!                 r.feasible.push(n.metadata.name.clone());
//!             } else {
//!                 r.failed.insert(n.metadata.name.clone(), "no GPU".into());
//!             }
//!         }
//!         Ok(r)
//!     }
//! }
//! let mut gpu = Node::default();
//! gpu.metadata.name = "a".into();
//! gpu.metadata.labels.insert("gpu".into(), "true".into());
//! let mut plain = Node::default();
//! plain.metadata.name = "b".into();
//! let r = GpuNodes.filter(&Pod::default(), &[&gpu, &plain])?;
//! assert_eq!(r.feasible, ["a"]);
//! assert_eq!(r.failed["b"], "no GPU");
//! # Ok::<(), ExtenderError>(())
//! ```
//!
//! # Semantics (kube's, applied by [`crate::scheduler`])
//! Extenders are called in configuration order, each only for pods it
//! [is interested in](Extender::is_interested). Filtering narrows the feasible nodes extender
//! by extender; `failedNodes` become unschedulable nodes of the fit error with the
//! extender's message, `failedAndUnresolvableNodes` unresolvable ones (preemption does not
//! pick them); an error skips an [ignorable](Extender::is_ignorable) extender and fails the
//! attempt otherwise. Scores are added to the plugins' weighted totals as
//! `score x weight x (MAX_NODE_SCORE / MAX_EXTENDER_PRIORITY)`, in integers; a
//! prioritize error only drops that extender's scores. Extenders that preempt
//! ([`Extender::process_preemption`]) narrow preemption's candidates before the choice: they
//! may drop nodes and add victims. The
//! first binder extender interested in the pod binds it instead of the caller's binder.

/// The [`Extender`] methods an extender built from an [`ExtenderConfig`] answers from it
/// (its `config` and `managed` fields): name, interest, ignorable and the verbs it has.
macro_rules! configured_extender {
    () => {
        fn name(&self) -> &str {
            &self.config.url_prefix
        }

        fn is_interested(&self, pod: &Pod) -> bool {
            interested_in(&self.managed, pod)
        }

        fn is_ignorable(&self) -> bool {
            self.config.ignorable
        }

        fn is_filter(&self) -> bool {
            !self.config.filter_verb.is_empty()
        }

        fn is_prioritizer(&self) -> bool {
            !self.config.prioritize_verb.is_empty()
        }

        fn is_binder(&self) -> bool {
            !self.config.bind_verb.is_empty()
        }
    };
}

mod config;
#[cfg(feature = "http-extender")]
mod http;
mod remote;
pub mod wire;

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

pub(crate) use config::parse_go_duration;
pub use config::{ExtenderConfig, ExtenderTlsConfig, ManagedResource};
#[cfg(feature = "http-extender")]
pub use http::HttpExtender;
pub use remote::{ExtenderCall, ExtenderCallId, ExtenderRequest, RemoteExtender, Transport};
pub use wire::{ExtenderBindingArgs, HostPriority, MetaVictims, Victims};

use crate::model::{Node, Pod};
use crate::snapshot::Snapshot;

/// Node name to the victims preempting a pod there would delete.
pub type NodeVictims = BTreeMap<String, Victims>;

/// The highest score an extender gives (kube's `MaxExtenderPriority`).
pub const MAX_EXTENDER_PRIORITY: i64 = 10;
/// The lowest score an extender gives (kube's `MinExtenderPriority`).
pub const MIN_EXTENDER_PRIORITY: i64 = 0;
/// The timeout of an HTTP extender whose `httpTimeout` is zero or unset (kube's
/// `DefaultExtenderTimeout`).
pub const DEFAULT_EXTENDER_TIMEOUT: Duration = Duration::from_secs(5);

/// Node name to failure message (kube's `FailedNodesMap`).
pub type FailedNodesMap = BTreeMap<String, String>;

/// What an extender's filter decided.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct FilterResult {
    /// Names of the nodes that pass, a subset of the nodes given.
    pub feasible: Vec<String>,
    /// Rejected nodes that preemption might help, with the extender's message.
    pub failed: FailedNodesMap,
    /// Rejected nodes preemption cannot help; they take precedence over `failed`.
    pub failed_and_unresolvable: FailedNodesMap,
}

impl FilterResult {
    /// Every node given passes.
    pub fn all(nodes: &[&Node]) -> FilterResult {
        FilterResult {
            feasible: nodes.iter().map(|n| n.metadata.name.clone()).collect(),
            ..FilterResult::default()
        }
    }
}

/// Why a call to an extender failed. Transport failures and timeouts are worth retrying (the
/// next scheduling attempt does); the others repeat until the extender changes.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ExtenderError {
    /// The request could not be sent or its reply read (connection refused, reset, TLS).
    /// Retryable.
    #[error("{verb} with extender at URL {url}: {message}")]
    Transport {
        /// The verb called.
        verb: String,
        /// The URL.
        url: String,
        /// What failed.
        message: String,
    },
    /// No complete reply within `httpTimeout`. Retryable.
    #[error("{verb} with extender at URL {url}: no reply within {timeout:?}")]
    Timeout {
        /// The verb called.
        verb: String,
        /// The URL.
        url: String,
        /// The timeout.
        timeout: Duration,
    },
    /// The extender answered with another status than 200 OK (kube's wording).
    #[error("failed {verb} with extender at URL {url}, code {code}")]
    Status {
        /// The verb called.
        verb: String,
        /// The URL.
        url: String,
        /// The HTTP status code.
        code: u16,
    },
    /// The reply is not the JSON kube expects for the verb.
    #[error("{verb} with extender at URL {url}: malformed reply: {source}")]
    Decode {
        /// The verb called.
        verb: String,
        /// The URL.
        url: String,
        /// The decoding error.
        #[source]
        source: wire::WireError,
    },
    /// The extender replied with its own error (the reply's `Error` field).
    #[error("{0}")]
    Reply(String),
    /// The extender's filter returned a node it was not given (kube's wording).
    #[error(
        "extender {extender:?} claims a filtered node {node:?} which is not found in the input node list"
    )]
    UnknownNode {
        /// The extender's name.
        extender: String,
        /// The node it named.
        node: String,
    },
    /// The extender's preempt reply names a pod that is not on the node (kube's wording).
    #[error(
        "extender: {extender} claims to preempt pod (UID: {uid}) on node: {node}, but the pod is not found on that node"
    )]
    UnknownVictim {
        /// The extender's name.
        extender: String,
        /// The pod's UID.
        uid: String,
        /// The node.
        node: String,
    },
    /// `bind` was called on an extender that does not bind.
    #[error("extender {0:?} does not bind")]
    NotBinder(String),
    /// The configuration cannot be used by this client (an unsupported TLS setting, an
    /// unreadable certificate file).
    #[error("extender {extender:?}: {message}")]
    Config {
        /// The extender's URL prefix.
        extender: String,
        /// What is wrong.
        message: String,
    },
    /// An in-process extender's own failure.
    #[error("{0}")]
    Other(String),
}

/// A scheduler extender, called synchronously by the scheduling engine. Every method has
/// kube's default behaviour, so an extender implements only what it does.
///
/// To be correct, an implementation must: return from [`Extender::filter`] only names of
/// nodes it was given; and be `Send + Sync` (the engine may be driven from any thread, and
/// a binder is handed out in [`crate::scheduler::Step::Bind`] to be called elsewhere).
pub trait Extender: Send + Sync {
    /// A name for messages and events (an HTTP extender's URL prefix).
    fn name(&self) -> &str;

    /// Whether the pod concerns this extender (kube: it requests or limits one of the
    /// managed resources, or none are configured). Default: every pod.
    fn is_interested(&self, pod: &Pod) -> bool {
        let _ = pod;
        true
    }

    /// Whether an error of this extender is skipped instead of failing the attempt.
    fn is_ignorable(&self) -> bool {
        false
    }

    /// Whether [`Extender::filter`] filters (kube's `IsFilter`: a profile without scoring
    /// and without filtering extenders stops at the first feasible node).
    fn is_filter(&self) -> bool {
        false
    }

    /// Whether [`Extender::prioritize`] scores (kube's `IsPrioritizer`).
    fn is_prioritizer(&self) -> bool {
        false
    }

    /// Whether [`Extender::bind`] binds (kube's `IsBinder`).
    fn is_binder(&self) -> bool {
        false
    }

    /// Filters `nodes` (the feasible nodes so far) for `pod`. Default: every node passes.
    ///
    /// # Errors
    /// Any failure; the engine skips an ignorable extender and fails the attempt otherwise.
    fn filter(&self, pod: &Pod, nodes: &[&Node]) -> Result<FilterResult, ExtenderError> {
        let _ = pod;
        Ok(FilterResult::all(nodes))
    }

    /// Scores `nodes` for `pod` from 0 to [`MAX_EXTENDER_PRIORITY`], and the weight the
    /// scores are multiplied by. Default: no scores (weight 0).
    ///
    /// # Errors
    /// Any failure; the engine then adds no score from this extender.
    fn prioritize(
        &self,
        pod: &Pod,
        nodes: &[&Node],
    ) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
        let _ = (pod, nodes);
        Ok((Vec::new(), 0))
    }

    /// Binds the pod to the node.
    ///
    /// # Errors
    /// The binding failed; by default, [`ExtenderError::NotBinder`].
    fn bind(&self, binding: &ExtenderBindingArgs) -> Result<(), ExtenderError> {
        let _ = binding;
        Err(ExtenderError::NotBinder(self.name().to_string()))
    }

    /// Whether [`Extender::process_preemption`] takes part in preemption (kube's
    /// `SupportsPreemption`).
    fn supports_preemption(&self) -> bool {
        false
    }

    /// Given the nodes where preemption would place `pod` and the victims on each, returns the
    /// nodes the extender accepts, each with its victims (it may drop nodes and add victims;
    /// kube's `ProcessPreemption`). `snapshot` resolves pods it names. Default: all of them,
    /// unchanged.
    ///
    /// # Errors
    /// Any failure; an ignorable extender's is skipped, another's abandons the preemption.
    fn process_preemption(
        &self,
        pod: &Pod,
        victims: &NodeVictims,
        snapshot: &Snapshot,
    ) -> Result<NodeVictims, ExtenderError> {
        let _ = (pod, snapshot);
        Ok(victims.clone())
    }

    /// `Some` for an extender the engine does not call itself ([`RemoteExtender`]): its filter
    /// and prioritize calls go out as [`crate::scheduler::Step::CallExtenders`] and its bind
    /// as [`ExtenderBinder::remote`]. Default: `None` (called in the engine, synchronously).
    fn remote(&self) -> Option<&RemoteExtender> {
        None
    }
}

impl<T: Extender + ?Sized> Extender for Arc<T> {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn is_interested(&self, pod: &Pod) -> bool {
        (**self).is_interested(pod)
    }
    fn is_ignorable(&self) -> bool {
        (**self).is_ignorable()
    }
    fn is_filter(&self) -> bool {
        (**self).is_filter()
    }
    fn is_prioritizer(&self) -> bool {
        (**self).is_prioritizer()
    }
    fn is_binder(&self) -> bool {
        (**self).is_binder()
    }
    fn filter(&self, pod: &Pod, nodes: &[&Node]) -> Result<FilterResult, ExtenderError> {
        (**self).filter(pod, nodes)
    }
    fn prioritize(
        &self,
        pod: &Pod,
        nodes: &[&Node],
    ) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
        (**self).prioritize(pod, nodes)
    }
    fn bind(&self, binding: &ExtenderBindingArgs) -> Result<(), ExtenderError> {
        (**self).bind(binding)
    }
    fn supports_preemption(&self) -> bool {
        (**self).supports_preemption()
    }
    fn process_preemption(
        &self,
        pod: &Pod,
        victims: &NodeVictims,
        snapshot: &Snapshot,
    ) -> Result<NodeVictims, ExtenderError> {
        (**self).process_preemption(pod, victims, snapshot)
    }
    fn remote(&self) -> Option<&RemoteExtender> {
        (**self).remote()
    }
}

impl std::fmt::Debug for dyn Extender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// An extender that binds a pod in place of the caller's binder, as handed out in
/// [`crate::scheduler::Step::Bind`]: call [`ExtenderBinder::bind`] (on any thread), then
/// report the result with [`crate::scheduler::Scheduler::finish_binding`].
#[derive(Clone, Debug)]
pub struct ExtenderBinder {
    extender: Arc<dyn Extender>,
    args: ExtenderBindingArgs,
}

impl ExtenderBinder {
    /// The binder `extender` for `args`.
    pub fn new(extender: Arc<dyn Extender>, args: ExtenderBindingArgs) -> ExtenderBinder {
        ExtenderBinder { extender, args }
    }

    /// The extender's name.
    pub fn name(&self) -> &str {
        self.extender.name()
    }

    /// What is sent: pod name, namespace, UID and node.
    pub fn args(&self) -> &ExtenderBindingArgs {
        &self.args
    }

    /// The extender, when the engine's caller sends its bind verb itself
    /// ([`RemoteExtender::bind_request`], [`RemoteExtender::bind_reply`]): [`ExtenderBinder::bind`]
    /// would fail.
    pub fn remote(&self) -> Option<&RemoteExtender> {
        self.extender.remote()
    }

    /// Asks the extender to bind (in the calling thread).
    ///
    /// # Errors
    /// The extender's error.
    pub fn bind(&self) -> Result<(), ExtenderError> {
        self.extender.bind(&self.args)
    }
}

/// kube's `convertToVictims`: each node's victims named by UID, resolved to the pods on that
/// node in `snapshot`.
///
/// # Errors
/// A node not in the snapshot ([`ExtenderError::Other`], kube's lister message), or a UID of
/// no pod on its node ([`ExtenderError::UnknownVictim`]).
pub fn convert_to_victims(
    meta: &BTreeMap<String, MetaVictims>,
    snapshot: &Snapshot,
    extender: &str,
) -> Result<NodeVictims, ExtenderError> {
    let mut out = NodeVictims::new();
    for (node, mv) in meta {
        let info = snapshot.get(node).ok_or_else(|| {
            ExtenderError::Other(format!("nodeinfo not found for node name {node:?}"))
        })?;
        let mut victims = Victims {
            pods: Vec::with_capacity(mv.pods.len()),
            num_pdb_violations: mv.num_pdb_violations,
        };
        for mp in &mv.pods {
            let pod = info
                .pods()
                .iter()
                .map(|p| p.pod())
                .find(|p| p.metadata.uid == mp.uid)
                .ok_or_else(|| ExtenderError::UnknownVictim {
                    extender: extender.to_string(),
                    uid: mp.uid.clone(),
                    node: node.clone(),
                })?;
            victims.pods.push(pod.clone());
        }
        out.insert(node.clone(), victims);
    }
    Ok(out)
}

/// Whether a container or init container of `pod` requests or limits one of `managed` (kube's
/// `IsInterested` of an HTTP extender; an empty set means every pod).
///
/// ```
/// use sched_core::extender::interested_in;
/// use sched_core::model::Pod;
/// let pod = Pod::default();
/// assert!(interested_in(&[], &pod));
/// assert!(!interested_in(&["example.com/gpu".to_string()], &pod));
/// ```
pub fn interested_in(managed: &[String], pod: &Pod) -> bool {
    if managed.is_empty() {
        return true;
    }
    pod.spec
        .containers
        .iter()
        .chain(pod.spec.init_containers.iter())
        .any(|c| {
            c.resources
                .requests
                .keys()
                .chain(c.resources.limits.keys())
                .any(|name| managed.iter().any(|m| m == name))
        })
}
