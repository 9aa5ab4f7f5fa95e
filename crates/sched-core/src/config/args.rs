//! The arguments of the default plugins (`pluginConfig[].args`), with kube's v1 defaults.

use crate::model::{NodeAffinity, TopologySpreadConstraint};
use crate::plugins::resource::{ResourceSpec, UtilizationShapePoint};

/// How `NodeResourcesFit` scores (`scoringStrategy.type`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ScoringStrategyType {
    /// Favour nodes with the most free resources (the default).
    LeastAllocated,
    /// Favour nodes with the least free resources (bin packing).
    MostAllocated,
    /// A piecewise-linear function of utilization.
    RequestedToCapacityRatio,
}

impl ScoringStrategyType {
    /// kube's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ScoringStrategyType::LeastAllocated => "LeastAllocated",
            ScoringStrategyType::MostAllocated => "MostAllocated",
            ScoringStrategyType::RequestedToCapacityRatio => "RequestedToCapacityRatio",
        }
    }
}

/// `NodeResourcesFitArgs.scoringStrategy`, defaulted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ScoringStrategy {
    /// The strategy.
    pub kind: ScoringStrategyType,
    /// Resources and weights (default: cpu and memory, weight 1).
    pub resources: Vec<ResourceSpec>,
    /// `requestedToCapacityRatio.shape` (only for that strategy).
    pub shape: Vec<UtilizationShapePoint>,
}

impl Default for ScoringStrategy {
    fn default() -> Self {
        ScoringStrategy {
            kind: ScoringStrategyType::LeastAllocated,
            resources: ResourceSpec::cpu_and_memory(),
            shape: Vec::new(),
        }
    }
}

/// `NodeResourcesFitArgs`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeResourcesFitArgs {
    /// Extended resources the filter ignores.
    pub ignored_resources: Vec<String>,
    /// Extended resource groups (the part before `/`) the filter ignores.
    pub ignored_resource_groups: Vec<String>,
    /// How nodes are scored.
    pub scoring_strategy: ScoringStrategy,
}

/// `NodeResourcesBalancedAllocationArgs`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct NodeResourcesBalancedAllocationArgs {
    /// The resources balanced (default cpu and memory; every weight must be 1).
    pub resources: Vec<ResourceSpec>,
}

impl Default for NodeResourcesBalancedAllocationArgs {
    fn default() -> Self {
        NodeResourcesBalancedAllocationArgs {
            resources: ResourceSpec::cpu_and_memory(),
        }
    }
}

/// `PodTopologySpreadArgs.defaultingType`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum DefaultingType {
    /// kube's built-in default constraints (the v1 default).
    #[default]
    System,
    /// The constraints of `defaultConstraints`.
    List,
}

/// `PodTopologySpreadArgs`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PodTopologySpreadArgs {
    /// Constraints for pods without their own (with `defaultingType: List`).
    pub default_constraints: Vec<TopologySpreadConstraint>,
    /// Where the defaults come from.
    pub defaulting_type: DefaultingType,
}

/// `InterPodAffinityArgs`.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct InterPodAffinityArgs {
    /// Score weight of existing pods' required affinity terms the pod matches (0..=100,
    /// default 1).
    pub hard_pod_affinity_weight: i32,
    /// Skip scoring pods without preferred terms of their own (existing pods' terms are then
    /// not looked at).
    pub ignore_preferred_terms_of_existing_pods: bool,
}

impl Default for InterPodAffinityArgs {
    fn default() -> Self {
        InterPodAffinityArgs {
            hard_pod_affinity_weight: 1,
            ignore_preferred_terms_of_existing_pods: false,
        }
    }
}

/// `NodeAffinityArgs`.
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct NodeAffinityArgs {
    /// Node affinity every pod of the profile gets in addition to its own.
    pub added_affinity: Option<NodeAffinity>,
}

/// `DefaultPreemptionArgs` (validated; preemption is not run by a decision function).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct DefaultPreemptionArgs {
    /// Default 10.
    pub min_candidate_nodes_percentage: i32,
    /// Default 100.
    pub min_candidate_nodes_absolute: i32,
}

impl Default for DefaultPreemptionArgs {
    fn default() -> Self {
        DefaultPreemptionArgs {
            min_candidate_nodes_percentage: 10,
            min_candidate_nodes_absolute: 100,
        }
    }
}

/// `VolumeBindingArgs` (validated).
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct VolumeBindingArgs {
    /// Default 600.
    pub bind_timeout_seconds: i64,
}

impl Default for VolumeBindingArgs {
    fn default() -> Self {
        VolumeBindingArgs {
            bind_timeout_seconds: 600,
        }
    }
}

/// The arguments of one plugin.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum PluginArgs {
    /// `NodeResourcesFit`.
    NodeResourcesFit(NodeResourcesFitArgs),
    /// `NodeResourcesBalancedAllocation`.
    NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs),
    /// `PodTopologySpread`.
    PodTopologySpread(PodTopologySpreadArgs),
    /// `InterPodAffinity`.
    InterPodAffinity(InterPodAffinityArgs),
    /// `NodeAffinity`.
    NodeAffinity(NodeAffinityArgs),
    /// `DefaultPreemption`.
    DefaultPreemption(DefaultPreemptionArgs),
    /// `VolumeBinding`.
    VolumeBinding(VolumeBindingArgs),
    /// A plugin without typed arguments here (a custom plugin's, or `DynamicResources`'):
    /// the JSON as written, handed to the plugin's factory.
    Other(serde_json::Value),
}

/// The names of the plugins with typed arguments, and their `kind`.
pub(crate) const TYPED_ARGS: [(&str, &str); 7] = [
    ("NodeResourcesFit", "NodeResourcesFitArgs"),
    (
        "NodeResourcesBalancedAllocation",
        "NodeResourcesBalancedAllocationArgs",
    ),
    ("PodTopologySpread", "PodTopologySpreadArgs"),
    ("InterPodAffinity", "InterPodAffinityArgs"),
    ("NodeAffinity", "NodeAffinityArgs"),
    ("DefaultPreemption", "DefaultPreemptionArgs"),
    ("VolumeBinding", "VolumeBindingArgs"),
];

impl PluginArgs {
    /// kube's defaults for `plugin`, if it has typed arguments.
    pub fn default_for(plugin: &str) -> Option<PluginArgs> {
        Some(match plugin {
            "NodeResourcesFit" => PluginArgs::NodeResourcesFit(Default::default()),
            "NodeResourcesBalancedAllocation" => {
                PluginArgs::NodeResourcesBalancedAllocation(Default::default())
            }
            "PodTopologySpread" => PluginArgs::PodTopologySpread(Default::default()),
            "InterPodAffinity" => PluginArgs::InterPodAffinity(Default::default()),
            "NodeAffinity" => PluginArgs::NodeAffinity(Default::default()),
            "DefaultPreemption" => PluginArgs::DefaultPreemption(Default::default()),
            "VolumeBinding" => PluginArgs::VolumeBinding(Default::default()),
            _ => return None,
        })
    }
}
