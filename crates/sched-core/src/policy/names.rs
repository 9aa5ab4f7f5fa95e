//! The built-in predicate and priority names, kube's defaults and the mandatory predicates.

/// A built-in predicate. The declaration order is the order predicates run in (kube's
/// `predicatesOrdering`), whatever order the Policy lists them in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum PredicateKind {
    /// `CheckNodeCondition`: the node is Ready and its network available.
    CheckNodeCondition,
    /// `CheckNodeUnschedulable` (mandatory): `spec.unschedulable` unless tolerated.
    CheckNodeUnschedulable,
    /// `GeneralPredicates`: PodFitsResources, HostName, PodFitsHostPorts, MatchNodeSelector.
    GeneralPredicates,
    /// `HostName`: `spec.nodeName`, when set, names the node.
    HostName,
    /// `PodFitsHostPorts` (alias `PodFitsPorts`): no host port conflict.
    PodFitsHostPorts,
    /// `MatchNodeSelector`: nodeSelector and required node affinity.
    MatchNodeSelector,
    /// `PodFitsResources`: requests fit in allocatable minus requested.
    PodFitsResources,
    /// `NoDiskConflict`: no conflicting GCE PD / EBS / RBD / ISCSI volume.
    NoDiskConflict,
    /// `PodToleratesNodeTaints` (mandatory): NoSchedule and NoExecute taints are tolerated.
    PodToleratesNodeTaints,
    /// `CheckNodeLabelPresence`: labels present (or absent); needs `labelsPresence`.
    CheckNodeLabelPresence,
    /// `CheckServiceAffinity`: a Service's pods on nodes with the same values of labels; the
    /// labels come from `serviceAffinity` arguments (every such entry adds to one predicate).
    CheckServiceAffinity,
    /// `MaxEBSVolumeCount`: AWS EBS volumes per node (default 39, 25 on Nitro instances).
    MaxEBSVolumeCount,
    /// `MaxGCEPDVolumeCount`: GCE PD volumes per node (default 16).
    MaxGCEPDVolumeCount,
    /// `MaxCSIVolumeCountPred`: CSI volumes per node and driver (CSINode limits).
    MaxCSIVolumeCountPred,
    /// `MaxAzureDiskVolumeCount`: Azure Disk volumes per node (default 16).
    MaxAzureDiskVolumeCount,
    /// `MaxCinderVolumeCount`: Cinder volumes per node (default 256).
    MaxCinderVolumeCount,
    /// `CheckVolumeBinding`: bound PVs' node affinity, unbound claims bindable or provisionable.
    CheckVolumeBinding,
    /// `NoVolumeZoneConflict`: bound PVs' zone and region labels match the node's.
    NoVolumeZoneConflict,
    /// `CheckNodeMemoryPressure`: no MemoryPressure for BestEffort pods.
    CheckNodeMemoryPressure,
    /// `CheckNodePIDPressure`: no PIDPressure.
    CheckNodePIDPressure,
    /// `CheckNodeDiskPressure`: no DiskPressure.
    CheckNodeDiskPressure,
    /// `EvenPodsSpread`: `DoNotSchedule` topology spread constraints (PodTopologySpread).
    EvenPodsSpread,
    /// `MatchInterPodAffinity`: required pod affinity and anti-affinity.
    MatchInterPodAffinity,
}

impl PredicateKind {
    /// Every built-in predicate, in execution order.
    pub const ALL: &'static [PredicateKind] = &[
        PredicateKind::CheckNodeCondition,
        PredicateKind::CheckNodeUnschedulable,
        PredicateKind::GeneralPredicates,
        PredicateKind::HostName,
        PredicateKind::PodFitsHostPorts,
        PredicateKind::MatchNodeSelector,
        PredicateKind::PodFitsResources,
        PredicateKind::NoDiskConflict,
        PredicateKind::PodToleratesNodeTaints,
        PredicateKind::CheckNodeLabelPresence,
        PredicateKind::CheckServiceAffinity,
        PredicateKind::MaxEBSVolumeCount,
        PredicateKind::MaxGCEPDVolumeCount,
        PredicateKind::MaxCSIVolumeCountPred,
        PredicateKind::MaxAzureDiskVolumeCount,
        PredicateKind::MaxCinderVolumeCount,
        PredicateKind::CheckVolumeBinding,
        PredicateKind::NoVolumeZoneConflict,
        PredicateKind::CheckNodeMemoryPressure,
        PredicateKind::CheckNodePIDPressure,
        PredicateKind::CheckNodeDiskPressure,
        PredicateKind::EvenPodsSpread,
        PredicateKind::MatchInterPodAffinity,
    ];

    /// kube's name.
    pub const fn name(self) -> &'static str {
        match self {
            PredicateKind::CheckNodeCondition => "CheckNodeCondition",
            PredicateKind::CheckNodeUnschedulable => "CheckNodeUnschedulable",
            PredicateKind::GeneralPredicates => "GeneralPredicates",
            PredicateKind::HostName => "HostName",
            PredicateKind::PodFitsHostPorts => "PodFitsHostPorts",
            PredicateKind::MatchNodeSelector => "MatchNodeSelector",
            PredicateKind::PodFitsResources => "PodFitsResources",
            PredicateKind::NoDiskConflict => "NoDiskConflict",
            PredicateKind::PodToleratesNodeTaints => "PodToleratesNodeTaints",
            PredicateKind::CheckNodeLabelPresence => "CheckNodeLabelPresence",
            PredicateKind::CheckServiceAffinity => "CheckServiceAffinity",
            PredicateKind::MaxEBSVolumeCount => "MaxEBSVolumeCount",
            PredicateKind::MaxGCEPDVolumeCount => "MaxGCEPDVolumeCount",
            PredicateKind::MaxCSIVolumeCountPred => "MaxCSIVolumeCountPred",
            PredicateKind::MaxAzureDiskVolumeCount => "MaxAzureDiskVolumeCount",
            PredicateKind::MaxCinderVolumeCount => "MaxCinderVolumeCount",
            PredicateKind::CheckVolumeBinding => "CheckVolumeBinding",
            PredicateKind::NoVolumeZoneConflict => "NoVolumeZoneConflict",
            PredicateKind::CheckNodeMemoryPressure => "CheckNodeMemoryPressure",
            PredicateKind::CheckNodePIDPressure => "CheckNodePIDPressure",
            PredicateKind::CheckNodeDiskPressure => "CheckNodeDiskPressure",
            PredicateKind::EvenPodsSpread => "EvenPodsSpread",
            PredicateKind::MatchInterPodAffinity => "MatchInterPodAffinity",
        }
    }

    /// The built-in with that name; aliases (`PodFitsPorts`) resolve to their target.
    pub fn from_name(name: &str) -> Option<PredicateKind> {
        if name == "PodFitsPorts" {
            return Some(PredicateKind::PodFitsHostPorts);
        }
        Self::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// The argument member this predicate needs, if any.
    pub const fn argument(self) -> Option<&'static str> {
        match self {
            PredicateKind::CheckNodeLabelPresence => Some("labelsPresence"),
            PredicateKind::CheckServiceAffinity => Some("serviceAffinity"),
            _ => None,
        }
    }
}

/// A built-in priority.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum PriorityKind {
    /// `LeastRequestedPriority`.
    LeastRequestedPriority,
    /// `MostRequestedPriority`.
    MostRequestedPriority,
    /// `BalancedResourceAllocation`.
    BalancedResourceAllocation,
    /// `SelectorSpreadPriority`: spread pods of the same services, RCs, RSs and StatefulSets.
    SelectorSpreadPriority,
    /// `ServiceSpreadingPriority`: kube's older name for selector spreading.
    ServiceSpreadingPriority,
    /// `InterPodAffinityPriority`.
    InterPodAffinityPriority,
    /// `NodeAffinityPriority`.
    NodeAffinityPriority,
    /// `TaintTolerationPriority`.
    TaintTolerationPriority,
    /// `ImageLocalityPriority`.
    ImageLocalityPriority,
    /// `NodePreferAvoidPodsPriority`.
    NodePreferAvoidPodsPriority,
    /// `RequestedToCapacityRatioPriority`; needs `requestedToCapacityRatioArguments`.
    RequestedToCapacityRatioPriority,
    /// `ResourceLimitsPriority`.
    ResourceLimitsPriority,
    /// `NodeLabelPriority`; needs `labelPreference`.
    NodeLabelPriority,
    /// `ServiceAntiAffinity`; needs `serviceAntiAffinity`.
    ServiceAntiAffinity,
    /// `EqualPriority`: the same score for every node (kube v1.20 skips it).
    EqualPriority,
    /// `EvenPodsSpreadPriority`: `ScheduleAnyway` topology spread constraints
    /// (PodTopologySpread).
    EvenPodsSpreadPriority,
}

impl PriorityKind {
    /// Every built-in priority.
    pub const ALL: &'static [PriorityKind] = &[
        PriorityKind::LeastRequestedPriority,
        PriorityKind::MostRequestedPriority,
        PriorityKind::BalancedResourceAllocation,
        PriorityKind::SelectorSpreadPriority,
        PriorityKind::ServiceSpreadingPriority,
        PriorityKind::InterPodAffinityPriority,
        PriorityKind::NodeAffinityPriority,
        PriorityKind::TaintTolerationPriority,
        PriorityKind::ImageLocalityPriority,
        PriorityKind::NodePreferAvoidPodsPriority,
        PriorityKind::RequestedToCapacityRatioPriority,
        PriorityKind::ResourceLimitsPriority,
        PriorityKind::NodeLabelPriority,
        PriorityKind::ServiceAntiAffinity,
        PriorityKind::EqualPriority,
        PriorityKind::EvenPodsSpreadPriority,
    ];

    /// kube's name.
    pub const fn name(self) -> &'static str {
        match self {
            PriorityKind::LeastRequestedPriority => "LeastRequestedPriority",
            PriorityKind::MostRequestedPriority => "MostRequestedPriority",
            PriorityKind::BalancedResourceAllocation => "BalancedResourceAllocation",
            PriorityKind::SelectorSpreadPriority => "SelectorSpreadPriority",
            PriorityKind::ServiceSpreadingPriority => "ServiceSpreadingPriority",
            PriorityKind::InterPodAffinityPriority => "InterPodAffinityPriority",
            PriorityKind::NodeAffinityPriority => "NodeAffinityPriority",
            PriorityKind::TaintTolerationPriority => "TaintTolerationPriority",
            PriorityKind::ImageLocalityPriority => "ImageLocalityPriority",
            PriorityKind::NodePreferAvoidPodsPriority => "NodePreferAvoidPodsPriority",
            PriorityKind::RequestedToCapacityRatioPriority => "RequestedToCapacityRatioPriority",
            PriorityKind::ResourceLimitsPriority => "ResourceLimitsPriority",
            PriorityKind::NodeLabelPriority => "NodeLabelPriority",
            PriorityKind::ServiceAntiAffinity => "ServiceAntiAffinity",
            PriorityKind::EqualPriority => "EqualPriority",
            PriorityKind::EvenPodsSpreadPriority => "EvenPodsSpreadPriority",
        }
    }

    /// The built-in with that name.
    pub fn from_name(name: &str) -> Option<PriorityKind> {
        Self::ALL.iter().copied().find(|k| k.name() == name)
    }

    /// The argument member this priority needs, if any.
    pub const fn argument(self) -> Option<&'static str> {
        match self {
            PriorityKind::RequestedToCapacityRatioPriority => {
                Some("requestedToCapacityRatioArguments")
            }
            PriorityKind::NodeLabelPriority => Some("labelPreference"),
            PriorityKind::ServiceAntiAffinity => Some("serviceAntiAffinity"),
            _ => None,
        }
    }
}

/// Every predicate name a Policy may use without defining it by an argument (aliases included).
pub const KNOWN_PREDICATES: &[&str] = &[
    "CheckNodeCondition",
    "CheckNodeUnschedulable",
    "GeneralPredicates",
    "HostName",
    "PodFitsHostPorts",
    "PodFitsPorts",
    "MatchNodeSelector",
    "PodFitsResources",
    "NoDiskConflict",
    "PodToleratesNodeTaints",
    "CheckNodeLabelPresence",
    "CheckServiceAffinity",
    "MaxEBSVolumeCount",
    "MaxGCEPDVolumeCount",
    "MaxCSIVolumeCountPred",
    "MaxAzureDiskVolumeCount",
    "MaxCinderVolumeCount",
    "CheckVolumeBinding",
    "NoVolumeZoneConflict",
    "CheckNodeMemoryPressure",
    "CheckNodePIDPressure",
    "CheckNodeDiskPressure",
    "EvenPodsSpread",
    "MatchInterPodAffinity",
];

/// Every priority name a Policy may use without defining it by an argument.
pub const KNOWN_PRIORITIES: &[&str] = &[
    "LeastRequestedPriority",
    "MostRequestedPriority",
    "BalancedResourceAllocation",
    "SelectorSpreadPriority",
    "ServiceSpreadingPriority",
    "InterPodAffinityPriority",
    "NodeAffinityPriority",
    "TaintTolerationPriority",
    "ImageLocalityPriority",
    "NodePreferAvoidPodsPriority",
    "RequestedToCapacityRatioPriority",
    "ResourceLimitsPriority",
    "NodeLabelPriority",
    "ServiceAntiAffinity",
    "EqualPriority",
    "EvenPodsSpreadPriority",
];

/// Predicates kube adds to every Policy, even to an empty predicate list (kube 1.17+:
/// TaintNodesByCondition turned node conditions into taints, so these two carry them).
pub const MANDATORY_PREDICATES: &[PredicateKind] = &[
    PredicateKind::CheckNodeUnschedulable,
    PredicateKind::PodToleratesNodeTaints,
];

/// The predicates used when a Policy omits `predicates`: kube v1.20's legacy defaults, in
/// execution order.
pub const DEFAULT_PREDICATES: &[PredicateKind] = &[
    PredicateKind::CheckNodeUnschedulable,
    PredicateKind::GeneralPredicates,
    PredicateKind::NoDiskConflict,
    PredicateKind::PodToleratesNodeTaints,
    PredicateKind::MaxEBSVolumeCount,
    PredicateKind::MaxGCEPDVolumeCount,
    PredicateKind::MaxCSIVolumeCountPred,
    PredicateKind::MaxAzureDiskVolumeCount,
    PredicateKind::CheckVolumeBinding,
    PredicateKind::NoVolumeZoneConflict,
    PredicateKind::EvenPodsSpread,
    PredicateKind::MatchInterPodAffinity,
];

/// The priorities (with weights) used when a Policy omits `priorities`: kube v1.20's legacy
/// defaults.
pub const DEFAULT_PRIORITIES: &[(PriorityKind, i64)] = &[
    (PriorityKind::SelectorSpreadPriority, 1),
    (PriorityKind::InterPodAffinityPriority, 1),
    (PriorityKind::LeastRequestedPriority, 1),
    (PriorityKind::BalancedResourceAllocation, 1),
    (PriorityKind::NodePreferAvoidPodsPriority, 10000),
    (PriorityKind::NodeAffinityPriority, 1),
    (PriorityKind::TaintTolerationPriority, 1),
    (PriorityKind::ImageLocalityPriority, 1),
    (PriorityKind::EvenPodsSpreadPriority, 2),
];

/// kube-scheduler predicates sched-core does not implement, with the reason.
pub(crate) const UNSUPPORTED_PREDICATES: &[(&str, &str)] = &[(
    "PodToleratesNodeNoExecuteTaints",
    "it checked NoExecute taints only and is gone from kube-scheduler's legacy registry; PodToleratesNodeTaints checks NoExecute taints as well",
)];

/// kube-scheduler priorities sched-core does not implement, with the reason.
pub(crate) const UNSUPPORTED_PRIORITIES: &[(&str, &str)] = &[];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for k in PredicateKind::ALL {
            assert_eq!(PredicateKind::from_name(k.name()), Some(*k));
            assert!(KNOWN_PREDICATES.contains(&k.name()));
        }
        for k in PriorityKind::ALL {
            assert_eq!(PriorityKind::from_name(k.name()), Some(*k));
            assert!(KNOWN_PRIORITIES.contains(&k.name()));
        }
        assert_eq!(
            PredicateKind::from_name("PodFitsPorts"),
            Some(PredicateKind::PodFitsHostPorts)
        );
        assert_eq!(KNOWN_PREDICATES.len(), PredicateKind::ALL.len() + 1);
        assert_eq!(KNOWN_PRIORITIES.len(), PriorityKind::ALL.len());
    }

    #[test]
    fn all_is_in_execution_order() {
        let mut sorted = PredicateKind::ALL.to_vec();
        sorted.sort();
        assert_eq!(sorted, PredicateKind::ALL);
        let mut d = DEFAULT_PREDICATES.to_vec();
        d.sort();
        assert_eq!(d, DEFAULT_PREDICATES);
    }

    #[test]
    fn defaults_contain_the_mandatory_predicates() {
        for m in MANDATORY_PREDICATES {
            assert!(DEFAULT_PREDICATES.contains(m));
        }
    }
}
