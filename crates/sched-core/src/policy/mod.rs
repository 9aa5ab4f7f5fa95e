//! kube-scheduler's legacy Policy JSON, compiled once into a profile.
//!
//! Start here: [`Policy::from_json`] parses and validates a document, [`Policy::compile`] builds
//! the [`Profile`](crate::profile::Profile) (or [`Policy::builder`] returns the
//! [`ProfileBuilder`](crate::profile::ProfileBuilder) to set threads, a seed or extra
//! plugins first), and [`Policy::plan`] shows what will be built ([`PolicyPlan`]).
//!
//! ```
//! use sched_core::policy::Policy;
//!
//! let policy = Policy::from_json(r#"{
//!     "kind": "Policy", "apiVersion": "v1",
//!     "predicates": [{"name": "PodFitsResources"}, {"name": "PodFitsPorts"}],
//!     "priorities": [{"name": "LeastRequestedPriority", "weight": 1}]
//! }"#)?;
//! let profile = policy.builder()?.seed(42).build()?;
//! assert_eq!(profile.priority_weights().count(), 1);
//! let plan = policy.plan()?;
//! // The mandatory predicates are always added, and predicates run in kube's order.
//! let names: Vec<&str> = plan.predicates().iter().map(|p| p.name()).collect();
//! assert_eq!(
//!     names,
//!     ["CheckNodeUnschedulable", "PodFitsHostPorts", "PodFitsResources", "PodToleratesNodeTaints"]
//! );
//! Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # The format
//!
//! The document is kube's `Policy` (`k8s.io/kube-scheduler/config/v1`), with kube's JSON field
//! names, plus `percentageOfNodesToScore` (a `KubeSchedulerConfiguration` field in kube):
//!
//! - `predicates` omitted: kube's default predicates ([`DEFAULT_PREDICATES`]); an empty list: only
//!   the mandatory ones ([`MANDATORY_PREDICATES`]), which are added to every list.
//! - `priorities` omitted: kube's default priorities ([`DEFAULT_PRIORITIES`]); an empty list: no
//!   scoring.
//! - a name that is not built in defines a custom predicate or priority through its `argument`,
//!   which must set exactly one member (`labelsPresence`, `labelPreference`,
//!   `serviceAntiAffinity`, `requestedToCapacityRatioArguments`; kube's `serviceAffinity` is
//!   parsed but not supported), as in kube.
//! - aliases: `PodFitsPorts` is `PodFitsHostPorts`.
//!
//! Parsing is strict where kube's is lenient: an unknown key at any level is an error that names
//! its path and lists the valid keys (Go's decoder ignores unknown keys and matches keys
//! case-insensitively), an unknown name is an error listing the known ones, and a name given
//! twice is an error (kube merges repeated custom predicate names and keeps the last weight of a
//! repeated priority).
//!
//! # Validation (kube's rules)
//!
//! `kind` must be `Policy` and `apiVersion` `v1` when present; weights must be > 0 and the sum of
//! weight x 100 must fit in an i64; `percentageOfNodesToScore` and
//! `hardPodAffinitySymmetricWeight` must be in 0..=100; requestedToCapacityRatio shapes need at
//! least one point, utilization strictly increasing in 0..=100, scores in 0..=10; only one
//! requestedToCapacityRatio priority; labelPreference priorities all with one weight, and
//! serviceAntiAffinity priorities too; `extenders` must be empty (no HTTP client here).
//!
//! # Differences from kube-scheduler
//!
//! - Not implemented, rejected with the reason: the volume predicates (NoVolumeZoneConflict,
//!   MaxEBSVolumeCount, MaxGCEPDVolumeCount, MaxAzureDiskVolumeCount, MaxCinderVolumeCount,
//!   MaxCSIVolumeCountPred, CheckVolumeBinding), EvenPodsSpread / EvenPodsSpreadPriority,
//!   CheckServiceAffinity and `serviceAffinity` predicates, HTTP extenders. The defaults leave the
//!   volume and topology-spread entries out (see [`DEFAULT_PREDICATES`]).
//! - `EqualPriority` is kept as a priority that gives every node 1 (kube 1.18+ drops it from a
//!   Policy). It never changes the chosen node; it adds its weight to every total.
//! - `ServiceSpreadingPriority` is kube's legacy services-only spreading, not an alias of
//!   `SelectorSpreadPriority` as in kube 1.18+.
//! - Each `serviceAntiAffinity` priority scores on its own (kube up to 1.17); all
//!   `labelPreference` priorities form one NodeLabel score averaged over the labels (kube 1.18+).
//!   With one label of each kind, as almost every Policy has, the versions agree.

mod compile;
mod document;
mod error;
mod names;
mod plan;
mod schema;

pub use document::{
    LabelPreference, LabelsPresence, Policy, PredicateArgument, PredicatePolicy, PriorityArgument,
    PriorityPolicy, RequestedToCapacityRatioArguments, ResourceSpec, ServiceAffinity,
    ServiceAntiAffinity, UtilizationShapePoint,
};
pub use error::PolicyError;
pub use names::{
    DEFAULT_PREDICATES, DEFAULT_PRIORITIES, KNOWN_PREDICATES, KNOWN_PRIORITIES,
    MANDATORY_PREDICATES, PredicateKind, PriorityKind,
};
pub use plan::{
    MAX_CUSTOM_PRIORITY_SCORE, PolicyPlan, PredicateSpec, PriorityArgs, PrioritySpec,
    RequestedToCapacityRatioSpec,
};

use std::str::FromStr;

/// The kube-scheduler v1.20 feature gates that change how a Policy runs. The default is
/// v1.20.2's.
///
/// ```
/// use sched_core::policy::{FeatureGates, Policy};
/// let policy = Policy::kube_default();
/// // Under the gate (v1.20's default) SelectorSpreadPriority runs as PodTopologySpread.
/// let on = policy.plan()?;
/// assert!(on.spread_system_defaults());
/// let off = policy.plan_with(FeatureGates::default().default_pod_topology_spread(false))?;
/// assert!(!off.spread_system_defaults());
/// # Ok::<(), sched_core::policy::PolicyError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct FeatureGates {
    /// `DefaultPodTopologySpread` (beta, on by default in v1.20): `SelectorSpreadPriority` runs
    /// as `EvenPodsSpreadPriority` (PodTopologySpread) over kube's system default constraints.
    pub default_pod_topology_spread: bool,
}

impl Default for FeatureGates {
    fn default() -> Self {
        FeatureGates {
            default_pod_topology_spread: true,
        }
    }
}

impl FeatureGates {
    /// Sets `DefaultPodTopologySpread`.
    #[must_use]
    pub fn default_pod_topology_spread(mut self, on: bool) -> Self {
        self.default_pod_topology_spread = on;
        self
    }
}

impl Policy {
    /// Parses and validates a Policy document.
    ///
    /// # Errors
    /// A [`PolicyError`] naming the offending field and value: bad JSON, unknown or missing key,
    /// wrong value type, unknown name, bad weight, bad argument (see the variants).
    pub fn from_json(json: &str) -> Result<Policy, PolicyError> {
        let value: serde_json::Value = serde_json::from_str(json).map_err(|e| {
            let mut message = e.to_string();
            if let Some(at) = message.rfind(" at line ") {
                message.truncate(at);
            }
            PolicyError::Json {
                message,
                line: e.line(),
                column: e.column(),
            }
        })?;
        if !value.is_object() {
            return Err(PolicyError::InvalidValue {
                path: String::new(),
                message: format!(
                    "a Policy is a JSON object, found {}",
                    schema::json_type(&value)
                ),
            });
        }
        schema::check_keys(&value)?;
        let policy: Policy = serde_path_to_error::deserialize(value).map_err(|e| {
            let path = e.path().to_string();
            PolicyError::InvalidValue {
                path: if path == "." { String::new() } else { path },
                message: e.into_inner().to_string(),
            }
        })?;
        policy.plan()?;
        Ok(policy)
    }

    /// Validates the Policy and resolves it into the built-ins to construct, in order, with
    /// kube v1.20's default feature gates.
    ///
    /// # Errors
    /// A [`PolicyError`] for the first rule the document breaks.
    pub fn plan(&self) -> Result<PolicyPlan, PolicyError> {
        self.plan_with(FeatureGates::default())
    }

    /// [`Policy::plan`] under these feature gates.
    ///
    /// # Errors
    /// A [`PolicyError`] for the first rule the document breaks.
    pub fn plan_with(&self, gates: FeatureGates) -> Result<PolicyPlan, PolicyError> {
        plan::plan(self, gates)
    }

    /// kube's default Policy written out: [`DEFAULT_PREDICATES`] and [`DEFAULT_PRIORITIES`] as
    /// explicit lists (it compiles to the same profile as a Policy that omits both lists).
    pub fn kube_default() -> Policy {
        Policy {
            kind: Some("Policy".into()),
            api_version: Some("v1".into()),
            predicates: Some(
                DEFAULT_PREDICATES
                    .iter()
                    .map(|k| PredicatePolicy::new(k.name()))
                    .collect(),
            ),
            priorities: Some(
                DEFAULT_PRIORITIES
                    .iter()
                    .map(|(k, w)| PriorityPolicy::new(k.name(), *w))
                    .collect(),
            ),
            ..Policy::default()
        }
    }

    /// The document as pretty-printed JSON (absent fields left out).
    pub fn to_json_pretty(&self) -> String {
        // Serializing these plain structs cannot fail; fall back to compact form regardless.
        serde_json::to_string_pretty(self).unwrap_or_default()
    }
}

impl FromStr for Policy {
    type Err = PolicyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Policy::from_json(s)
    }
}
