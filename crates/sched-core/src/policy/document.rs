//! The Policy document itself: kube-scheduler's legacy `Policy` JSON, field for field.

use serde::{Deserialize, Serialize};

/// kube-scheduler's legacy Policy document (`kind: Policy`, `apiVersion: v1`), plus
/// `percentageOfNodesToScore`.
///
/// Field names are Kubernetes' own. `None` for [`predicates`](Self::predicates) or
/// [`priorities`](Self::priorities) means "kube's defaults"; an empty list means "none" (for
/// predicates: only the mandatory ones). Build one from JSON with [`Policy::from_json`], or in
/// code, and turn it into a scheduler with [`Policy::compile`]; both validate.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct Policy {
    /// `"Policy"` when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// `"v1"` when present.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// The fit predicates (filters). `None`: kube's defaults. Empty: only the mandatory ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicates: Option<Vec<PredicatePolicy>>,
    /// The priority functions (scores). `None`: kube's defaults. Empty: no scoring.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priorities: Option<Vec<PriorityPolicy>>,
    /// HTTP extenders. Accepted only when empty: this crate has no extender client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extenders: Option<Vec<serde_json::Value>>,
    /// Weight of the implicit preferred affinity term that every required pod-affinity term of
    /// an existing pod carries (0..=100; 0 or absent keeps kube's default of 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hard_pod_affinity_symmetric_weight: Option<i64>,
    /// Run every predicate on a node even after one failed (all reasons get reported).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always_check_all_predicates: Option<bool>,
    /// Percentage of nodes to find feasible before scoring (0..=100; 0 or absent: adaptive).
    /// A `KubeSchedulerConfiguration` field in kube, accepted here so one document says it all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub percentage_of_nodes_to_score: Option<i64>,
}

/// One entry of `predicates`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PredicatePolicy {
    /// A built-in predicate name, or any name for a custom predicate defined by `argument`.
    pub name: String,
    /// Parameters; required for `CheckNodeLabelPresence`, `CheckServiceAffinity` and custom names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<PredicateArgument>,
}

impl PredicatePolicy {
    /// A predicate entry without argument.
    pub fn new(name: impl Into<String>) -> Self {
        PredicatePolicy {
            name: name.into(),
            argument: None,
        }
    }

    /// A predicate entry with an argument.
    #[must_use]
    pub fn with_argument(mut self, argument: PredicateArgument) -> Self {
        self.argument = Some(argument);
        self
    }
}

/// Parameters of a predicate; exactly one member must be set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PredicateArgument {
    /// Pods of a service must land on nodes whose values for these labels equal those of the
    /// nodes already running the service's pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_affinity: Option<ServiceAffinity>,
    /// Nodes must have (or must not have) all these labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels_presence: Option<LabelsPresence>,
}

/// `argument.serviceAffinity`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceAffinity {
    /// Node labels that identify node groups.
    pub labels: Vec<String>,
}

/// `argument.labelsPresence`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelsPresence {
    /// Node label keys.
    pub labels: Vec<String>,
    /// `true`: every label must be present; `false` (the default): every label must be absent.
    #[serde(default)]
    pub presence: bool,
}

/// One entry of `priorities`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PriorityPolicy {
    /// A built-in priority name, or any name for a custom priority defined by `argument`.
    pub name: String,
    /// Multiplier of the node score (0..=100); must be > 0.
    pub weight: i64,
    /// Parameters; required for `NodeLabelPriority`, `ServiceAntiAffinity`,
    /// `RequestedToCapacityRatioPriority` and custom names.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub argument: Option<PriorityArgument>,
}

impl PriorityPolicy {
    /// A priority entry without argument.
    pub fn new(name: impl Into<String>, weight: i64) -> Self {
        PriorityPolicy {
            name: name.into(),
            weight,
            argument: None,
        }
    }

    /// A priority entry with an argument.
    #[must_use]
    pub fn with_argument(mut self, argument: PriorityArgument) -> Self {
        self.argument = Some(argument);
        self
    }
}

/// Parameters of a priority; exactly one member must be set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct PriorityArgument {
    /// Spread a service's pods across the values of one node label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_anti_affinity: Option<ServiceAntiAffinity>,
    /// Prefer nodes that have (or lack) one label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_preference: Option<LabelPreference>,
    /// Score by a piecewise-linear function of requested / capacity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_to_capacity_ratio_arguments: Option<RequestedToCapacityRatioArguments>,
}

/// `argument.serviceAntiAffinity`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceAntiAffinity {
    /// The node label whose values form the groups to spread over.
    pub label: String,
}

/// `argument.labelPreference`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LabelPreference {
    /// Node label key.
    pub label: String,
    /// `true`: prefer nodes with the label; `false` (the default): prefer nodes without it.
    #[serde(default)]
    pub presence: bool,
}

/// `argument.requestedToCapacityRatioArguments`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequestedToCapacityRatioArguments {
    /// Points of the scoring function, utilization strictly increasing.
    pub shape: Vec<UtilizationShapePoint>,
    /// Resources and their weights; empty means cpu and memory, weight 1 each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<ResourceSpec>,
}

pub use crate::plugins::resource::{ResourceSpec, UtilizationShapePoint};
