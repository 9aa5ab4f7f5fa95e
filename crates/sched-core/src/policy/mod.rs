//! kube-scheduler's legacy Policy JSON, compiled once into a profile.
//!
//! Start here: [`Policy::from_json`] parses and validates a document, [`Policy::compile`] builds
//! the [`Profile`](crate::profile::Profile) (or [`Policy::builder`] returns the
//! [`ProfileBuilder`](crate::profile::ProfileBuilder) to set threads, a seed or extra
//! plugins first), and [`Policy::plan`] shows what will be built ([`PolicyPlan`]).
//! [`Policy::profiles`] gives the profile as kube v1.20 runs it, the one profile of
//! `default-scheduler`: [`Profiles::for_pod`](crate::config::Profiles::for_pod) reports a pod
//! whose `spec.schedulerName` names another scheduler rather than placing it.
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
//! its path, lists the valid keys and suggests the one probably meant (Go's decoder ignores
//! unknown keys and matches keys case-insensitively), and an unknown name is an error listing
//! the known ones. Every problem of a document is reported at once, in document order
//! ([`PolicyError::problems`]); the message of many problems stays short: one line each for the
//! first [`MAX_LISTED_PROBLEMS`] and a count of the rest, the known names listed once.
//!
//! A name listed twice is merged as kube v1.20 merges it: predicates are a set (the same name
//! with the same argument is one predicate), priorities a map from name to weight (the last
//! weight wins); a labelPreference or serviceAntiAffinity entry listed again counts again, as
//! kube appends its label once per entry. Only the same name with a different argument is
//! refused ([`PolicyError::ConflictingDuplicate`]).
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
//! # Which kube: v1.20.2
//!
//! A Policy runs as kube-scheduler v1.20.2 runs it (the last release of the Policy era with
//! the `DefaultPodTopologySpread` gate; [`FeatureGates`] sets the gates, v1.20's defaults when
//! not given): the compiled profile is a [`KubeVersion::V1_20`](crate::framework::KubeVersion)
//! profile, so v1.20's formulas, skip rules and reason texts apply, and the priority list is
//! turned into plugins as v1.20's legacy registry does (`EqualPriority` skipped,
//! `ServiceSpreadingPriority` as `SelectorSpreadPriority`, all `serviceAntiAffinity` priorities
//! one score averaged over their labels with weight n x w, all `labelPreference` ones likewise,
//! `SelectorSpreadPriority` as `EvenPodsSpreadPriority` with the system defaults under
//! `DefaultPodTopologySpread`). `tests/conformance.rs` replays 33 recorded cases (200 pending
//! pods) against kube-scheduler v1.20.2's own answers and requires every feasible set, score,
//! total, tie set and reason to match.
//!
//! # Differences from kube-scheduler v1.20.2
//!
//! - Not implemented, rejected with the reason: HTTP extenders.
//! - CheckServiceAffinity takes the Service's first pod in the snapshot's node order, where
//!   kube takes it in its own node list's order (they differ only when the Service's pods
//!   already run on nodes with different label values).
//! - The volume predicates (NoVolumeZoneConflict, MaxEBSVolumeCount, MaxGCEPDVolumeCount,
//!   MaxAzureDiskVolumeCount, MaxCinderVolumeCount, MaxCSIVolumeCountPred, CheckVolumeBinding)
//!   read the snapshot's storage objects ([`crate::snapshot::Snapshot::set_storage`]); a claim,
//!   PersistentVolume or StorageClass that does not exist rejects every node with a reason
//!   where v1.20 failed the pod with an error, reason texts that name an object in kube name only its kind here, and
//!   `KUBE_MAX_PD_VOLS` is a setting
//!   ([`crate::plugins::volume::InTreeVolumeLimits::with_max_volumes`]) that a Policy cannot
//!   give, so a Policy gets the era's defaults.
//! - One reason per predicate, where kube's CheckNodeCondition and GeneralPredicates can report
//!   several (`alwaysCheckAllPredicates` splits GeneralPredicates into its parts, so every
//!   reason is listed there).
//! - When two Services select a pod, `ServiceAntiAffinity` takes the first in snapshot order;
//!   kube takes the first of its lister's list, whose order changes from run to run.

mod compile;
mod document;
mod error;
mod names;
mod parse;
mod plan;
mod schema;

pub use document::{
    LabelPreference, LabelsPresence, Policy, PredicateArgument, PredicatePolicy, PriorityArgument,
    PriorityPolicy, RequestedToCapacityRatioArguments, ResourceSpec, ServiceAffinity,
    ServiceAntiAffinity, UtilizationShapePoint,
};
pub use error::{MAX_LISTED_PROBLEMS, PolicyError};
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
    /// Parses and validates a Policy document (a leading byte order mark is skipped).
    ///
    /// Every problem is reported at once, in document order, each with its JSON path: one
    /// problem is returned as itself, several as [`PolicyError::Multiple`] (see
    /// [`PolicyError::problems`]).
    ///
    /// ```
    /// use sched_core::policy::{Policy, PolicyError};
    /// let err = Policy::from_json(r#"{"predicates": [{"name": "HostName"}, {"nmae": "x"}],
    ///     "priorities": [{"name": "LeastRequestedPriority", "weight": 0}]}"#).unwrap_err();
    /// let paths: Vec<String> = err.problems().iter().map(PolicyError::path).collect();
    /// assert_eq!(paths, ["predicates[1]", "predicates[1].nmae", "priorities[0]"]);
    /// assert!(err.to_string().contains("did you mean `name`?"));
    /// ```
    ///
    /// # Errors
    /// A [`PolicyError`] naming the offending field and value: bad JSON, unknown or missing key,
    /// wrong value type, unknown name, bad weight, bad argument (see the variants), or a
    /// `KubeSchedulerConfiguration` given as a Policy ([`PolicyError::NotAPolicy`]).
    pub fn from_json(json: &str) -> Result<Policy, PolicyError> {
        parse::parse(json.strip_prefix('\u{feff}').unwrap_or(json))
    }

    /// [`Policy::from_json`] on the bytes of a file: a UTF-8 byte order mark is skipped, a
    /// UTF-16 one and invalid UTF-8 are errors of their own.
    ///
    /// # Errors
    /// As [`Policy::from_json`], plus [`PolicyError::Utf16`] and [`PolicyError::InvalidUtf8`].
    pub fn from_slice(bytes: &[u8]) -> Result<Policy, PolicyError> {
        let (body, skipped) = match bytes {
            [0xEF, 0xBB, 0xBF, rest @ ..] => (rest, 3),
            [0xFE, 0xFF, ..] | [0xFF, 0xFE, ..] => {
                return Err(PolicyError::Utf16 {
                    big_endian: bytes[0] == 0xFE,
                });
            }
            _ => (bytes, 0),
        };
        let text = std::str::from_utf8(body).map_err(|e| {
            let at = e.valid_up_to();
            PolicyError::InvalidUtf8 {
                offset: at + skipped,
                line: body[..at].iter().filter(|b| **b == b'\n').count() + 1,
            }
        })?;
        parse::parse(text)
    }

    /// Validates the Policy and resolves it into the built-ins to construct, in order, with
    /// kube v1.20's default feature gates.
    ///
    /// # Errors
    /// A [`PolicyError`] for every rule the document breaks.
    pub fn plan(&self) -> Result<PolicyPlan, PolicyError> {
        self.plan_with(FeatureGates::default())
    }

    /// [`Policy::plan`] under these feature gates.
    ///
    /// # Errors
    /// A [`PolicyError`] for every rule the document breaks.
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
