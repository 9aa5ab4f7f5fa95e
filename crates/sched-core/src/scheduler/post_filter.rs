//! kube v1.34's PostFilter point for a pod no node takes (`RunPostFilterPlugins`): the
//! profile's PostFilter plugins in order, each one's status, and kube's message that joins
//! them, which kube's FitError prints after the reasons (`Diagnosis.PostFilterMsg`).
//!
//! kube v1.34's default profile runs DynamicResources' PostFilter before DefaultPreemption's
//! ([`preemption`]). For a pod without claims DynamicResources has no claim to deallocate ("no
//! new claims to deallocate"); for one with an allocated claim that is not available on a
//! node and that no other pod uses, it deallocates that claim ("deallocation of ResourceClaim
//! completed", [`PostFilterOutcome::deallocate`]: the caller writes it); otherwise "still not
//! schedulable". DefaultPreemption runs next. But when a PreFilter plugin before
//! DynamicResources rejected the pod, DynamicResources' PreFilter never ran, its PostFilter
//! finds no state and fails with kube's "not found" error, and DefaultPreemption does not run.
//!
//! ```
//! use sched_core::config::{Registry, SchedulerConfiguration};
//! use sched_core::model::{Node, Pod};
//! use sched_core::profile::ScheduleError;
//! use sched_core::scheduler::Nominator;
//! use sched_core::scheduler::post_filter::{Code, PostFilterPlugins, run_post_filter};
//! use sched_core::scheduler::preemption::Environment;
//! use sched_core::snapshot::Snapshot;
//!
//! // kube's default profile, one node for one pod, taken by a pod of the same priority.
//! let config = SchedulerConfiguration::v1_34_default();
//! let plugins = PostFilterPlugins::of(&config.profiles[0], &Registry::v1_34());
//! let profiles = config.compile(&Registry::v1_34())?;
//! let profile = profiles.get("default-scheduler").unwrap();
//! let node: Node = serde_json::from_str(
//!     r#"{"metadata":{"name":"n1"},"status":{"allocatable":{"pods":"1"}}}"#)?;
//! let running: Pod = serde_json::from_str(
//!     r#"{"metadata":{"name":"a","namespace":"ns"},"spec":{"nodeName":"n1"}}"#)?;
//! let pod: Pod = serde_json::from_str(r#"{"metadata":{"name":"b","namespace":"ns"}}"#)?;
//! let mut snapshot = Snapshot::from_objects(vec![node], vec![running])?;
//! let Err(ScheduleError::Unschedulable(error)) =
//!     profile.schedule(&mut profile.create_cache(), &pod, &snapshot)
//! else { unreachable!() };
//! let nominator = Nominator::new();
//! let out = run_post_filter(&plugins, &profile, &mut snapshot, &pod, &error, &mut |_| 0,
//!     &Environment::new(&nominator));
//! assert_eq!(out.code, Code::Unschedulable);
//! assert_eq!(out.message, "no new claims to deallocate, preemption: 0/1 nodes are \
//!     available: 1 No preemption victims found for incoming pod.");
//! assert_eq!(out.explain(&error).to_string(), "0/1 nodes are available: 1 Too many pods. \
//!     no new claims to deallocate, preemption: 0/1 nodes are available: 1 No preemption \
//!     victims found for incoming pod.");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::fmt;

use super::preemption::{self, Environment, Outcome};
use crate::config::{PluginArgs, ProfileConfig, Registry};
use crate::model::Pod;
use crate::plugins::dra::Deallocation;
use crate::profile::{FitError, Profile, ScheduleError};
use crate::snapshot::Snapshot;

/// A PostFilter plugin of kube v1.34 that sched-core runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PostFilterPlugin {
    /// `DynamicResources`: deallocates a claim of the pod so that it may fit elsewhere.
    DynamicResources,
    /// `DefaultPreemption` with its arguments.
    DefaultPreemption {
        /// `minCandidateNodesPercentage` (kube's default 10).
        min_candidate_nodes_percentage: i32,
        /// `minCandidateNodesAbsolute` (kube's default 100).
        min_candidate_nodes_absolute: i32,
    },
}

/// kube's default DefaultPreemption arguments (10 %, at least 100 nodes).
const DEFAULT_PREEMPTION: PostFilterPlugin = PostFilterPlugin::DefaultPreemption {
    min_candidate_nodes_percentage: 10,
    min_candidate_nodes_absolute: 100,
};

/// A profile's PostFilter plugins in kube's order, and what tells whether DynamicResources'
/// PreFilter ran for a pod (its PostFilter reads the state that PreFilter writes).
///
/// ```
/// use sched_core::config::{Registry, SchedulerConfiguration};
/// use sched_core::scheduler::post_filter::PostFilterPlugins;
///
/// let config = SchedulerConfiguration::from_text(
///     "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
///      profiles:\n- plugins:\n    postFilter:\n      disabled:\n      - name: '*'\n",
/// )?;
/// let plugins = PostFilterPlugins::of(&config.profiles[0], &Registry::v1_34());
/// assert!(plugins.is_empty());
/// assert_eq!(plugins.preemption_args(), None);
/// let defaults = SchedulerConfiguration::v1_34_default();
/// let plugins = PostFilterPlugins::of(&defaults.profiles[0], &Registry::v1_34());
/// assert_eq!(plugins.preemption_args(), Some((10, 100)));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PostFilterPlugins {
    plugins: Vec<PostFilterPlugin>,
    /// The PreFilter plugins before DynamicResources' PreFilter, when the profile runs it.
    before_dynamic_resources: Option<Vec<String>>,
}

impl PostFilterPlugins {
    /// No PostFilter plugin: nothing runs, and the FitError gets no PostFilter message.
    pub fn none() -> PostFilterPlugins {
        PostFilterPlugins::default()
    }

    /// DefaultPreemption alone, with kube's default arguments (what a profile built without a
    /// configuration, or from a legacy Policy, runs in the scheduling engine).
    pub fn default_preemption() -> PostFilterPlugins {
        PostFilterPlugins {
            plugins: vec![DEFAULT_PREEMPTION],
            before_dynamic_resources: None,
        }
    }

    /// The PostFilter plugins of a configured profile (after `multiPoint` expansion), with
    /// DefaultPreemption's `pluginConfig` arguments.
    pub fn of(profile: &ProfileConfig, registry: &Registry) -> PostFilterPlugins {
        let mut plugins = Vec::new();
        for name in profile.plugins_at(registry, "postFilter") {
            match name.as_str() {
                "DynamicResources" => plugins.push(PostFilterPlugin::DynamicResources),
                "DefaultPreemption" => plugins.push(match profile.args(&name) {
                    Some(PluginArgs::DefaultPreemption(a)) => PostFilterPlugin::DefaultPreemption {
                        min_candidate_nodes_percentage: a.min_candidate_nodes_percentage,
                        min_candidate_nodes_absolute: a.min_candidate_nodes_absolute,
                    },
                    _ => DEFAULT_PREEMPTION,
                }),
                // The registry has no other PostFilter plugin.
                _ => {}
            }
        }
        let pre_filter = profile.plugins_at(registry, "preFilter");
        let before_dynamic_resources = pre_filter
            .iter()
            .position(|n| n == "DynamicResources")
            .map(|i| pre_filter[..i].to_vec());
        PostFilterPlugins {
            plugins,
            before_dynamic_resources,
        }
    }

    /// The plugins, in the order they run.
    pub fn plugins(&self) -> &[PostFilterPlugin] {
        &self.plugins
    }

    /// Whether there is no PostFilter plugin.
    pub fn is_empty(&self) -> bool {
        self.plugins.is_empty()
    }

    /// DefaultPreemption's (`minCandidateNodesPercentage`, `minCandidateNodesAbsolute`), when
    /// the profile runs it.
    pub fn preemption_args(&self) -> Option<(i32, i32)> {
        self.plugins.iter().find_map(|p| match *p {
            PostFilterPlugin::DefaultPreemption {
                min_candidate_nodes_percentage,
                min_candidate_nodes_absolute,
            } => Some((min_candidate_nodes_percentage, min_candidate_nodes_absolute)),
            PostFilterPlugin::DynamicResources => None,
        })
    }

    /// Adds DefaultPreemption with kube's default arguments (at the end) unless the profile
    /// runs it already, or removes it.
    pub(crate) fn set_preemption(&mut self, on: bool) {
        let has = self.preemption_args().is_some();
        if on && !has {
            self.plugins.push(DEFAULT_PREEMPTION);
        } else if !on {
            self.plugins
                .retain(|p| !matches!(p, PostFilterPlugin::DefaultPreemption { .. }));
        }
    }

    /// Whether DynamicResources' PreFilter ran for the pod of `error`: the profile runs it and
    /// no PreFilter plugin before it rejected the pod as a whole (kube stops PreFilter at an
    /// unresolvable rejection; the plugin that ends it is the last one a node's codes name:
    /// the rejecting one, or the narrowing plugin whose node set left none).
    fn dynamic_resources_prepared(&self, error: &FitError) -> bool {
        let Some(before) = &self.before_dynamic_resources else {
            return false;
        };
        if error.pre_filter_message.is_none() {
            return true;
        }
        let culprit = error
            .failures()
            .first()
            .and_then(|f| f.codes.last())
            .map(|(name, _)| name.as_str());
        culprit.is_none_or(|c| !before.iter().any(|b| b == c))
    }
}

/// DynamicResources' PostFilter for a pod whose PreFilter ran: without claims (or when its
/// PreFilter rejected the pod before keeping them) "no new claims to deallocate"; with an
/// allocated claim that Filter found unavailable on a node and that no other pod uses, that
/// claim deallocated ("deallocation of ResourceClaim completed",
/// [`claim_to_deallocate`]); otherwise "still not schedulable".
fn dynamic_resources_post_filter(
    snapshot: &Snapshot,
    pod: &Pod,
    error: &FitError,
) -> (&'static str, Option<Deallocation>) {
    let kept_claims = error.pre_filter_message.is_none()
        && !pod.spec.resource_claims.is_empty()
        && crate::plugins::dra::pod_claims(pod, snapshot.dra()).is_ok_and(|c| !c.is_empty());
    if !kept_claims {
        return ("no new claims to deallocate", None);
    }
    match claim_to_deallocate(snapshot, pod, error) {
        Some(d) => ("deallocation of ResourceClaim completed", Some(d)),
        None => ("still not schedulable", None),
    }
}

/// kube's DynamicResources PostFilter for `pod`, whose cycle `error` says fits nowhere: the
/// first of its allocated claims whose node selector failed a node at Filter ("resourceclaim
/// not available on the node") and which is reserved for nobody or for the pod alone. kube
/// picks one of these claims at random (a map's iteration order); this takes the first in
/// `spec.resourceClaims` order.
fn claim_to_deallocate(snapshot: &Snapshot, pod: &Pod, error: &FitError) -> Option<Deallocation> {
    let claims = crate::plugins::dra::pod_claims(pod, snapshot.dra()).ok()?;
    let mut unavailable = vec![false; claims.len()];
    error.for_each_node(&mut |name, reasons| {
        let mut not_on_node = false;
        for r in reasons {
            not_on_node |= matches!(
                r,
                crate::framework::Reason::DynamicResources(
                    crate::framework::DraProblem::ClaimNotOnNode
                )
            );
        }
        let Some(info) = not_on_node.then(|| snapshot.get(name)).flatten() else {
            return;
        };
        let target = crate::dra::allocator::TargetNode::from(info.node());
        for (i, claim) in claims.iter().enumerate() {
            let selector = claim
                .status
                .allocation
                .as_ref()
                .and_then(|a| a.node_selector.as_ref());
            if let Some(selector) = selector
                && !crate::dra::allocator::node_selector_matches(selector, target).unwrap_or(false)
            {
                unavailable[i] = true;
            }
        }
    });
    claims
        .iter()
        .zip(unavailable)
        .find_map(|(claim, unavailable)| {
            if !unavailable {
                return None;
            }
            let d = Deallocation {
                namespace: claim.metadata.namespace.clone(),
                name: claim.metadata.name.clone(),
                uid: claim.metadata.uid.clone(),
                pod_uid: pod.metadata.uid.clone(),
            };
            d.still_applies(claim).then_some(d)
        })
}

/// kube's status codes, as a PostFilter point ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Code {
    /// A plugin made room: the pod is nominated.
    Success,
    /// Nothing helped this time.
    Unschedulable,
    /// A plugin failed (kube logs it; the pod's nomination stays as it is).
    Error,
}

impl Code {
    /// kube's name of the code (`Code.String()`).
    pub fn as_str(self) -> &'static str {
        match self {
            Code::Success => "Success",
            Code::Unschedulable => "Unschedulable",
            Code::Error => "Error",
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the PostFilter point decided for a pod.
#[derive(Debug)]
#[non_exhaustive]
pub struct PostFilterOutcome {
    /// kube's status code.
    pub code: Code,
    /// kube's status message: the plugins' messages joined with ", " ("no new claims to
    /// deallocate, preemption: not eligible due to preemptionPolicy=Never."); empty on
    /// success.
    pub message: String,
    /// DefaultPreemption's decision, when it ran (not when the profile has none or an earlier
    /// plugin failed).
    pub preemption: Option<Result<Outcome, ScheduleError>>,
    /// The claim DynamicResources deallocates, when it found one: the caller writes it (kube's
    /// PostFilter does, before DefaultPreemption runs).
    pub deallocate: Option<Deallocation>,
}

impl PostFilterOutcome {
    /// The pod's FitError as kube reports it after PostFilter: `error` with this outcome's
    /// message (kube's `Diagnosis.PostFilterMsg`).
    pub fn explain(&self, error: &FitError) -> FitError {
        let mut e = error.clone();
        e.post_filter_message = Some(self.message.clone());
        e
    }
}

/// kube v1.34's `RunPostFilterPlugins` for `pod`, which `error` says fits nowhere: each of
/// `plugins` in order until one succeeds or fails (DefaultPreemption through
/// [`preemption::preempt`] with `offset` and `env`); the statuses of those that leave the pod
/// unschedulable are joined. The snapshot is left as it was.
pub fn run_post_filter(
    plugins: &PostFilterPlugins,
    profile: &Profile,
    snapshot: &mut Snapshot,
    pod: &Pod,
    error: &FitError,
    offset: &mut dyn FnMut(usize) -> usize,
    env: &Environment<'_>,
) -> PostFilterOutcome {
    let mut reasons: Vec<String> = Vec::new();
    let mut preemption = None;
    let mut deallocate = None;
    for plugin in &plugins.plugins {
        match *plugin {
            PostFilterPlugin::DynamicResources => {
                if !plugins.dynamic_resources_prepared(error) {
                    // Its PreFilter never wrote the cycle state it reads.
                    return PostFilterOutcome {
                        code: Code::Error,
                        message: "not found".to_string(),
                        preemption: None,
                        deallocate: None,
                    };
                }
                let (message, found) = dynamic_resources_post_filter(snapshot, pod, error);
                reasons.push(message.to_string());
                deallocate = found;
            }
            PostFilterPlugin::DefaultPreemption {
                min_candidate_nodes_percentage,
                min_candidate_nodes_absolute,
            } => {
                let outcome = preemption::preempt(
                    profile,
                    snapshot,
                    pod,
                    error,
                    (min_candidate_nodes_percentage, min_candidate_nodes_absolute),
                    offset,
                    env,
                );
                match &outcome {
                    Ok(Outcome::Preempt(_)) => {
                        return PostFilterOutcome {
                            code: Code::Success,
                            message: String::new(),
                            preemption: Some(outcome),
                            deallocate,
                        };
                    }
                    Ok(o) => reasons.push(format!("preemption: {}", o.message())),
                    Err(e) => {
                        return PostFilterOutcome {
                            code: Code::Error,
                            message: format!("preemption: {e}"),
                            preemption: Some(outcome),
                            deallocate,
                        };
                    }
                }
                preemption = Some(outcome);
            }
        }
    }
    PostFilterOutcome {
        code: Code::Unschedulable,
        message: reasons.join(", "),
        preemption,
        deallocate,
    }
}
