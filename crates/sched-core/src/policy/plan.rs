//! Validation: a [`Policy`] document resolved into a [`PolicyPlan`], the list of built-ins to
//! construct with their arguments and weights.

use super::FeatureGates;
use super::PolicyError;
use super::document::{
    LabelPreference, LabelsPresence, Policy, PredicateArgument, PredicatePolicy, PriorityArgument,
    PriorityPolicy, RequestedToCapacityRatioArguments,
};
use super::names::{
    DEFAULT_PREDICATES, DEFAULT_PRIORITIES, KNOWN_PREDICATES, KNOWN_PRIORITIES,
    MANDATORY_PREDICATES, PredicateKind, PriorityKind, UNSUPPORTED_PREDICATES,
    UNSUPPORTED_PRIORITIES,
};
use super::schema::{PREDICATE_ARGUMENT_FIELDS, PRIORITY_ARGUMENT_FIELDS};
use crate::formulas::MAX_NODE_SCORE;

/// The maximum score of a point of a requestedToCapacityRatio shape in the legacy Policy
/// (kube's `MaxCustomPriorityScore`); scores are multiplied by
/// `MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE` when the priority is built.
pub use crate::plugins::resource::MAX_CUSTOM_PRIORITY_SCORE;

/// A validated Policy: the predicates in the order they run (mandatory ones added) and the
/// priorities with their weights, ready to be turned into built-in plugins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PolicyPlan {
    predicates: Vec<PredicateSpec>,
    priorities: Vec<PrioritySpec>,
    always_check_all_predicates: bool,
    hard_pod_affinity_symmetric_weight: i32,
    percentage_of_nodes_to_score: u8,
    spread_system_defaults: bool,
}

impl PolicyPlan {
    /// Whether `EvenPodsSpreadPriority` spreads pods without constraints of their own over
    /// kube's system default constraints (what `SelectorSpreadPriority` becomes under the
    /// `DefaultPodTopologySpread` gate).
    pub fn spread_system_defaults(&self) -> bool {
        self.spread_system_defaults
    }

    /// The predicates, in execution order (kube's predicate ordering; custom predicates of one
    /// kind in document order).
    pub fn predicates(&self) -> &[PredicateSpec] {
        &self.predicates
    }

    /// The priorities, in document order (or kube's default order).
    pub fn priorities(&self) -> &[PrioritySpec] {
        &self.priorities
    }

    /// Whether every predicate runs on a node even after one failed.
    pub fn always_check_all_predicates(&self) -> bool {
        self.always_check_all_predicates
    }

    /// The weight of the implicit preferred term of existing pods' required affinity terms
    /// (1 unless the Policy sets 1..=100).
    pub fn hard_pod_affinity_symmetric_weight(&self) -> i32 {
        self.hard_pod_affinity_symmetric_weight
    }

    /// Percentage of nodes to score, 0 meaning adaptive.
    pub fn percentage_of_nodes_to_score(&self) -> u8 {
        self.percentage_of_nodes_to_score
    }

    /// Sum over priorities of weight x [`MAX_NODE_SCORE`]: the largest total a node can get.
    pub fn max_total_score(&self) -> i64 {
        // Cannot overflow: validation checked it.
        self.priorities
            .iter()
            .map(|p| p.weight * MAX_NODE_SCORE)
            .sum()
    }
}

/// One predicate to build.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PredicateSpec {
    /// A built-in that takes no argument.
    Builtin(PredicateKind),
    /// `CheckNodeLabelPresence` or a custom predicate with `labelsPresence`.
    LabelsPresence {
        /// The name in the Policy.
        name: String,
        /// Label keys, non-empty.
        labels: Vec<String>,
        /// Whether the labels must be present (`true`) or absent.
        presence: bool,
    },
    /// `CheckServiceAffinity` or a custom predicate with `serviceAffinity`: every such entry
    /// adds its labels to the first one, as kube v1.20 builds one ServiceAffinity filter.
    ServiceAffinity {
        /// The name in the Policy (of the first entry).
        name: String,
        /// Node label keys (empty for a bare `CheckServiceAffinity`: every node fits).
        labels: Vec<String>,
    },
}

impl PredicateSpec {
    /// The built-in that implements it.
    pub fn kind(&self) -> PredicateKind {
        match self {
            PredicateSpec::Builtin(k) => *k,
            PredicateSpec::LabelsPresence { .. } => PredicateKind::CheckNodeLabelPresence,
            PredicateSpec::ServiceAffinity { .. } => PredicateKind::CheckServiceAffinity,
        }
    }

    /// The name it has in the Policy (a built-in's canonical name for built-ins).
    pub fn name(&self) -> &str {
        match self {
            PredicateSpec::Builtin(k) => k.name(),
            PredicateSpec::LabelsPresence { name, .. } => name,
            PredicateSpec::ServiceAffinity { name, .. } => name,
        }
    }
}

/// One priority to build.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct PrioritySpec {
    /// The name in the Policy.
    pub name: String,
    /// The built-in that implements it.
    pub kind: PriorityKind,
    /// Its weight, > 0.
    pub weight: i64,
    /// Its argument.
    pub argument: PriorityArgs,
}

/// The argument of a priority, validated.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PriorityArgs {
    /// No argument.
    None,
    /// `labelPreference`.
    LabelPreference {
        /// Label key, non-empty.
        label: String,
        /// Prefer nodes with (`true`) or without the label.
        presence: bool,
    },
    /// `serviceAntiAffinity`.
    ServiceAntiAffinity {
        /// Label key, non-empty.
        label: String,
    },
    /// `requestedToCapacityRatioArguments`.
    RequestedToCapacityRatio(RequestedToCapacityRatioSpec),
}

/// A validated requestedToCapacityRatio function.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestedToCapacityRatioSpec {
    /// `(utilization, score)` points as written: utilization 0..=100 strictly increasing, score
    /// 0..=[`MAX_CUSTOM_PRIORITY_SCORE`].
    pub shape: Vec<(i64, i64)>,
    /// `(resource, weight)`, weight >= 1; `cpu` and `memory` with weight 1 when the Policy
    /// lists none.
    pub resources: Vec<(String, i64)>,
}

impl RequestedToCapacityRatioSpec {
    /// The shape on the framework scale: scores multiplied by
    /// `MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE`, as kube does when it builds the plugin.
    pub fn scaled_shape(&self) -> Vec<(i64, i64)> {
        self.shape
            .iter()
            .map(|&(u, s)| (u, s * (MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE)))
            .collect()
    }
}

fn entry(list: &str, i: usize) -> String {
    format!("{list}[{i}]")
}

/// Validates a Policy and resolves it into a plan, under these feature gates.
pub(crate) fn plan(policy: &Policy, gates: FeatureGates) -> Result<PolicyPlan, PolicyError> {
    plan_indexed(policy, gates, None, None)
}

/// [`plan`], every problem reported; `predicate_index` and `priority_index` give each list
/// entry's index in the document (entries that failed to parse are not in the lists).
pub(crate) fn plan_indexed(
    policy: &Policy,
    gates: FeatureGates,
    predicate_index: Option<&[usize]>,
    priority_index: Option<&[usize]>,
) -> Result<PolicyPlan, PolicyError> {
    let mut problems = Vec::new();
    if let Some(kind) = &policy.kind
        && kind != "Policy"
    {
        problems.push(PolicyError::WrongKind {
            found: crate::model::short_name(kind),
        });
    }
    if let Some(v) = &policy.api_version
        && v != "v1"
    {
        problems.push(PolicyError::WrongApiVersion {
            found: crate::model::short_name(v),
        });
    }
    if let Some(ext) = &policy.extenders
        && !ext.is_empty()
    {
        problems.push(PolicyError::ExtendersUnsupported { count: ext.len() });
    }
    let hard_weight = match policy.hard_pod_affinity_symmetric_weight {
        None | Some(0) => 1,
        Some(v) => i32::try_from(v)
            .ok()
            .filter(|w| (0..=100).contains(w))
            .unwrap_or_else(|| {
                problems.push(PolicyError::HardPodAffinityWeightOutOfRange { value: v });
                1
            }),
    };
    let percentage = match policy.percentage_of_nodes_to_score {
        None => 0,
        Some(v) => u8::try_from(v)
            .ok()
            .filter(|p| *p <= 100)
            .unwrap_or_else(|| {
                problems.push(PolicyError::PercentageOutOfRange { value: v });
                0
            }),
    };

    let predicates = match &policy.predicates {
        None => DEFAULT_PREDICATES
            .iter()
            .map(|k| PredicateSpec::Builtin(*k))
            .collect(),
        Some(list) => plan_predicates(list, predicate_index, &mut problems),
    };
    let priorities = match &policy.priorities {
        None => DEFAULT_PRIORITIES
            .iter()
            .map(|&(kind, weight)| PrioritySpec {
                name: kind.name().to_string(),
                kind,
                weight,
                argument: PriorityArgs::None,
            })
            .collect(),
        Some(list) => plan_priorities(list, priority_index, &mut problems),
    };
    if !problems.is_empty() {
        return Err(PolicyError::from_problems(problems));
    }
    let (priorities, spread_system_defaults) = as_kube_v1_20_runs(priorities, gates);
    Ok(PolicyPlan {
        predicates,
        priorities,
        always_check_all_predicates: policy.always_check_all_predicates.unwrap_or(false),
        hard_pod_affinity_symmetric_weight: hard_weight,
        percentage_of_nodes_to_score: percentage,
        spread_system_defaults,
    })
}

/// The priorities as kube v1.20.2 runs a Policy's list: `EqualPriority` is skipped, and
/// `ServiceSpreadingPriority` is `SelectorSpreadPriority` (its Services and its controllers);
/// when both are listed they are one priority, at the place of the first, with the weight of
/// the last (kube keys its priorities by name, so a later entry's weight replaces an earlier
/// one's). Under `DefaultPodTopologySpread`, `SelectorSpreadPriority` runs as
/// `EvenPodsSpreadPriority` (kube's PodTopologySpread plugin) with the system default
/// constraints, one priority with the larger weight when both are listed (kube keeps the
/// larger weight of a plugin configured twice); the second value says whether that happened.
fn as_kube_v1_20_runs(specs: Vec<PrioritySpec>, gates: FeatureGates) -> (Vec<PrioritySpec>, bool) {
    let mut out: Vec<PrioritySpec> = Vec::with_capacity(specs.len());
    for mut spec in specs {
        match spec.kind {
            PriorityKind::EqualPriority => continue,
            PriorityKind::ServiceSpreadingPriority => {
                spec.kind = PriorityKind::SelectorSpreadPriority;
                spec.name = PriorityKind::SelectorSpreadPriority.name().to_string();
            }
            _ => {}
        }
        match out
            .iter_mut()
            .find(|s| s.kind == PriorityKind::SelectorSpreadPriority && spec.kind == s.kind)
        {
            Some(first) => first.weight = spec.weight,
            None => out.push(spec),
        }
    }
    let selector_spread = out
        .iter()
        .any(|s| s.kind == PriorityKind::SelectorSpreadPriority);
    if !gates.default_pod_topology_spread || !selector_spread {
        return (out, false);
    }
    let mut merged: Vec<PrioritySpec> = Vec::with_capacity(out.len());
    for mut spec in out {
        if spec.kind == PriorityKind::SelectorSpreadPriority {
            spec.kind = PriorityKind::EvenPodsSpreadPriority;
            spec.name = PriorityKind::EvenPodsSpreadPriority.name().to_string();
        }
        match merged
            .iter_mut()
            .find(|s| s.kind == PriorityKind::EvenPodsSpreadPriority && spec.kind == s.kind)
        {
            Some(first) => first.weight = first.weight.max(spec.weight),
            None => merged.push(spec),
        }
    }
    (merged, true)
}

/// The predicates to build. kube v1.20 keeps a Policy's predicates as a set of names: a name
/// listed again with the same argument is the same predicate (merged here); with another
/// argument it is refused as a contradiction.
fn plan_predicates(
    list: &[PredicatePolicy],
    index: Option<&[usize]>,
    problems: &mut Vec<PolicyError>,
) -> Vec<PredicateSpec> {
    let mut specs: Vec<(usize, PredicateSpec)> = Vec::with_capacity(list.len() + 2);
    for (pos, p) in list.iter().enumerate() {
        let i = index.and_then(|m| m.get(pos).copied()).unwrap_or(pos);
        let path = entry("predicates", i);
        let spec = match resolve_predicate(&path, p) {
            Ok(spec) => spec,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        if let PredicateSpec::ServiceAffinity { labels, .. } = &spec
            && let Some((_, PredicateSpec::ServiceAffinity { labels: all, .. })) = specs
                .iter_mut()
                .find(|(_, s)| matches!(s, PredicateSpec::ServiceAffinity { .. }))
        {
            all.extend(labels.iter().cloned());
            continue;
        }
        if let Some((first, first_spec)) = specs.iter().find(|(_, s)| s.name() == spec.name()) {
            if *first_spec != spec {
                problems.push(PolicyError::ConflictingDuplicate {
                    path: format!("{path}.argument"),
                    what: "predicate",
                    name: p.name.clone(),
                    first: entry("predicates", *first),
                });
            }
            continue;
        }
        specs.push((i, spec));
    }
    for m in MANDATORY_PREDICATES {
        if !specs.iter().any(|(_, s)| s.kind() == *m) {
            specs.push((usize::MAX, PredicateSpec::Builtin(*m)));
        }
    }
    // Stable: custom predicates of one kind keep their document order.
    specs.sort_by_key(|(i, s)| (s.kind(), *i));
    specs.into_iter().map(|(_, s)| s).collect()
}

fn set_members<const N: usize>(
    present: [bool; N],
    names: &'static [&'static str],
) -> Vec<&'static str> {
    names
        .iter()
        .zip(present)
        .filter_map(|(n, p)| p.then_some(*n))
        .collect()
}

fn predicate_argument_member(
    path: &str,
    arg: &PredicateArgument,
) -> Result<&'static str, PolicyError> {
    let found = set_members(
        [
            arg.service_affinity.is_some(),
            arg.labels_presence.is_some(),
        ],
        PREDICATE_ARGUMENT_FIELDS,
    );
    match found.as_slice() {
        [one] => Ok(one),
        _ => Err(PolicyError::ArgumentCount {
            path: path.to_string(),
            found,
            allowed: PREDICATE_ARGUMENT_FIELDS,
        }),
    }
}

fn check_labels(path: &str, labels: &[String]) -> Result<(), PolicyError> {
    if labels.is_empty() {
        return Err(PolicyError::InvalidArgument {
            path: path.to_string(),
            message: "must list at least one label".into(),
        });
    }
    for (j, l) in labels.iter().enumerate() {
        if l.is_empty() {
            return Err(PolicyError::InvalidArgument {
                path: format!("{path}[{j}]"),
                message: "label must not be empty".into(),
            });
        }
    }
    Ok(())
}

fn check_label(path: &str, label: &str) -> Result<(), PolicyError> {
    if label.is_empty() {
        return Err(PolicyError::InvalidArgument {
            path: path.to_string(),
            message: "label must not be empty".into(),
        });
    }
    Ok(())
}

fn resolve_predicate(path: &str, p: &PredicatePolicy) -> Result<PredicateSpec, PolicyError> {
    let member = match &p.argument {
        Some(arg) => Some(predicate_argument_member(path, arg)?),
        None => None,
    };
    let builtin = PredicateKind::from_name(&p.name);
    if builtin.is_none()
        && let Some((_, reason)) = UNSUPPORTED_PREDICATES.iter().find(|(n, _)| *n == p.name)
    {
        return Err(PolicyError::Unsupported {
            path: format!("{path}.name"),
            what: "predicate",
            name: p.name.clone(),
            reason,
        });
    }
    match (builtin, member) {
        // kube v1.20 accepts the bare name: a ServiceAffinity filter without labels.
        (Some(PredicateKind::CheckServiceAffinity), None) => Ok(PredicateSpec::ServiceAffinity {
            name: p.name.clone(),
            labels: Vec::new(),
        }),
        (Some(kind), None) => match kind.argument() {
            None => Ok(PredicateSpec::Builtin(kind)),
            Some(expected) => Err(PolicyError::MissingArgument {
                path: path.to_string(),
                name: p.name.clone(),
                expected,
            }),
        },
        (Some(kind), Some(found)) => match kind.argument() {
            None => Err(PolicyError::UnexpectedArgument {
                path: path.to_string(),
                name: p.name.clone(),
            }),
            Some(expected) if expected != found => Err(PolicyError::WrongArgument {
                path: path.to_string(),
                name: p.name.clone(),
                expected,
                found,
            }),
            Some(_) => custom_predicate(path, p),
        },
        (None, Some(_)) => custom_predicate(path, p),
        (None, None) => Err(PolicyError::UnknownPredicate {
            path: path.to_string(),
            name: p.name.clone(),
            known: KNOWN_PREDICATES,
        }),
    }
}

/// A predicate defined by its (single) argument member.
fn custom_predicate(path: &str, p: &PredicatePolicy) -> Result<PredicateSpec, PolicyError> {
    if p.name.is_empty() {
        return Err(PolicyError::InvalidArgument {
            path: format!("{path}.name"),
            message: "name must not be empty".into(),
        });
    }
    let arg = p.argument.as_ref();
    if let Some(LabelsPresence { labels, presence }) = arg.and_then(|a| a.labels_presence.as_ref())
    {
        check_labels(&format!("{path}.argument.labelsPresence.labels"), labels)?;
        return Ok(PredicateSpec::LabelsPresence {
            name: p.name.clone(),
            labels: labels.clone(),
            presence: *presence,
        });
    }
    if let Some(sa) = arg.and_then(|a| a.service_affinity.as_ref()) {
        check_labels(
            &format!("{path}.argument.serviceAffinity.labels"),
            &sa.labels,
        )?;
        return Ok(PredicateSpec::ServiceAffinity {
            name: p.name.clone(),
            labels: sa.labels.clone(),
        });
    }
    // Unreachable after predicate_argument_member, but never panic on input.
    Err(PolicyError::ArgumentCount {
        path: path.to_string(),
        found: Vec::new(),
        allowed: PREDICATE_ARGUMENT_FIELDS,
    })
}

fn priority_argument_member(
    path: &str,
    arg: &PriorityArgument,
) -> Result<&'static str, PolicyError> {
    let found = set_members(
        [
            arg.service_anti_affinity.is_some(),
            arg.label_preference.is_some(),
            arg.requested_to_capacity_ratio_arguments.is_some(),
        ],
        PRIORITY_ARGUMENT_FIELDS,
    );
    match found.as_slice() {
        [one] => Ok(one),
        _ => Err(PolicyError::ArgumentCount {
            path: path.to_string(),
            found,
            allowed: PRIORITY_ARGUMENT_FIELDS,
        }),
    }
}

fn kind_for_member(member: &str) -> PriorityKind {
    match member {
        "serviceAntiAffinity" => PriorityKind::ServiceAntiAffinity,
        "labelPreference" => PriorityKind::NodeLabelPriority,
        _ => PriorityKind::RequestedToCapacityRatioPriority,
    }
}

/// The priorities to build, as kube v1.20 reads the list: a map from name to weight, so a
/// name listed again with the same argument is one priority with the last weight; a
/// labelPreference or serviceAntiAffinity entry listed again counts again (kube appends its
/// label to the plugin's list once per entry); the same name with another argument is refused.
fn plan_priorities(
    list: &[PriorityPolicy],
    index: Option<&[usize]>,
    problems: &mut Vec<PolicyError>,
) -> Vec<PrioritySpec> {
    let mut specs: Vec<(usize, PrioritySpec)> = Vec::with_capacity(list.len());
    for (pos, p) in list.iter().enumerate() {
        let i = index.and_then(|m| m.get(pos).copied()).unwrap_or(pos);
        let path = entry("priorities", i);
        let spec = match resolve_priority(&path, p) {
            Ok(spec) => spec,
            Err(e) => {
                problems.push(e);
                continue;
            }
        };
        if p.weight <= 0 {
            problems.push(PolicyError::NonPositiveWeight {
                path,
                name: p.name.clone(),
                weight: p.weight,
            });
            continue;
        }
        if let Some((first, first_spec)) = specs.iter_mut().find(|(_, s)| s.name == spec.name) {
            if first_spec.argument != spec.argument {
                problems.push(PolicyError::ConflictingDuplicate {
                    path: format!("{path}.argument"),
                    what: "priority",
                    name: p.name.clone(),
                    first: entry("priorities", *first),
                });
                continue;
            }
            if matches!(spec.argument, PriorityArgs::None) {
                // kube: priorityKeys[name] = weight; the last weight wins.
                first_spec.weight = spec.weight;
                continue;
            }
        }
        match &spec.argument {
            PriorityArgs::RequestedToCapacityRatio(_) => {
                if let Some((_, first)) = specs
                    .iter()
                    .find(|(_, s)| matches!(s.argument, PriorityArgs::RequestedToCapacityRatio(_)))
                {
                    problems.push(PolicyError::Redeclared {
                        path,
                        name: p.name.clone(),
                        kind: "RequestedToCapacityRatio",
                        first: first.name.clone(),
                    });
                    continue;
                }
            }
            PriorityArgs::LabelPreference { .. } | PriorityArgs::ServiceAntiAffinity { .. } => {
                let same_kind = |s: &&(usize, PrioritySpec)| {
                    std::mem::discriminant(&s.1.argument) == std::mem::discriminant(&spec.argument)
                };
                if let Some((_, first)) = specs.iter().find(same_kind)
                    && first.weight != spec.weight
                {
                    let kind = match spec.argument {
                        PriorityArgs::LabelPreference { .. } => "labelPreference",
                        _ => "serviceAntiAffinity",
                    };
                    problems.push(PolicyError::DifferentWeights {
                        path,
                        name: p.name.clone(),
                        kind,
                        weight: spec.weight,
                        first: first.name.clone(),
                        first_weight: first.weight,
                    });
                    continue;
                }
            }
            PriorityArgs::None => {}
        }
        specs.push((i, spec));
    }
    let mut total: i64 = 0;
    for (i, s) in &specs {
        match s
            .weight
            .checked_mul(MAX_NODE_SCORE)
            .and_then(|w| total.checked_add(w))
        {
            Some(t) => total = t,
            None => {
                problems.push(PolicyError::WeightOverflow {
                    path: entry("priorities", *i),
                    name: s.name.clone(),
                    weight: s.weight,
                });
                break;
            }
        }
    }
    specs.into_iter().map(|(_, s)| s).collect()
}

fn resolve_priority(path: &str, p: &PriorityPolicy) -> Result<PrioritySpec, PolicyError> {
    let member = match &p.argument {
        Some(arg) => Some(priority_argument_member(path, arg)?),
        None => None,
    };
    let builtin = PriorityKind::from_name(&p.name);
    if builtin.is_none()
        && let Some((_, reason)) = UNSUPPORTED_PRIORITIES.iter().find(|(n, _)| *n == p.name)
    {
        return Err(PolicyError::Unsupported {
            path: format!("{path}.name"),
            what: "priority",
            name: p.name.clone(),
            reason,
        });
    }
    let kind = match (builtin, member) {
        (Some(kind), None) => match kind.argument() {
            None => {
                return Ok(PrioritySpec {
                    name: kind.name().to_string(),
                    kind,
                    weight: p.weight,
                    argument: PriorityArgs::None,
                });
            }
            Some(expected) => {
                return Err(PolicyError::MissingArgument {
                    path: path.to_string(),
                    name: p.name.clone(),
                    expected,
                });
            }
        },
        (Some(kind), Some(found)) => match kind.argument() {
            None => {
                return Err(PolicyError::UnexpectedArgument {
                    path: path.to_string(),
                    name: p.name.clone(),
                });
            }
            Some(expected) if expected != found => {
                return Err(PolicyError::WrongArgument {
                    path: path.to_string(),
                    name: p.name.clone(),
                    expected,
                    found,
                });
            }
            Some(_) => kind,
        },
        (None, Some(found)) => kind_for_member(found),
        (None, None) => {
            return Err(PolicyError::UnknownPriority {
                path: path.to_string(),
                name: p.name.clone(),
                known: KNOWN_PRIORITIES,
            });
        }
    };
    if p.name.is_empty() {
        return Err(PolicyError::InvalidArgument {
            path: format!("{path}.name"),
            message: "name must not be empty".into(),
        });
    }
    let arg = p.argument.as_ref();
    let argument = if let Some(LabelPreference { label, presence }) =
        arg.and_then(|a| a.label_preference.as_ref())
    {
        check_label(&format!("{path}.argument.labelPreference.label"), label)?;
        PriorityArgs::LabelPreference {
            label: label.clone(),
            presence: *presence,
        }
    } else if let Some(sa) = arg.and_then(|a| a.service_anti_affinity.as_ref()) {
        check_label(
            &format!("{path}.argument.serviceAntiAffinity.label"),
            &sa.label,
        )?;
        PriorityArgs::ServiceAntiAffinity {
            label: sa.label.clone(),
        }
    } else if let Some(r) = arg.and_then(|a| a.requested_to_capacity_ratio_arguments.as_ref()) {
        PriorityArgs::RequestedToCapacityRatio(check_ratio(
            &format!("{path}.argument.requestedToCapacityRatioArguments"),
            r,
        )?)
    } else {
        return Err(PolicyError::ArgumentCount {
            path: path.to_string(),
            found: Vec::new(),
            allowed: PRIORITY_ARGUMENT_FIELDS,
        });
    };
    Ok(PrioritySpec {
        name: p.name.clone(),
        kind,
        weight: p.weight,
        argument,
    })
}

fn check_ratio(
    path: &str,
    r: &RequestedToCapacityRatioArguments,
) -> Result<RequestedToCapacityRatioSpec, PolicyError> {
    let bad = |path: String, message: String| PolicyError::InvalidShape { path, message };
    if r.shape.is_empty() {
        return Err(bad(
            format!("{path}.shape"),
            "at least one point must be specified".into(),
        ));
    }
    for (i, point) in r.shape.iter().enumerate() {
        if !(0..=100).contains(&point.utilization) {
            return Err(bad(
                format!("{path}.shape[{i}].utilization"),
                format!("{} not in valid range [0, 100]", point.utilization),
            ));
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&point.score) {
            return Err(bad(
                format!("{path}.shape[{i}].score"),
                format!(
                    "{} not in valid range [0, {MAX_CUSTOM_PRIORITY_SCORE}]",
                    point.score
                ),
            ));
        }
        if i > 0 && r.shape[i - 1].utilization >= point.utilization {
            return Err(bad(
                format!("{path}.shape[{i}].utilization"),
                format!(
                    "utilization values must be strictly increasing, found {} after {}",
                    point.utilization,
                    r.shape[i - 1].utilization
                ),
            ));
        }
    }
    let mut resources: Vec<(String, i64)> = Vec::with_capacity(r.resources.len().max(2));
    let mut weight_sum: i64 = 0;
    for (i, res) in r.resources.iter().enumerate() {
        if res.name.is_empty() {
            return Err(bad(
                format!("{path}.resources[{i}].name"),
                "resource name must not be empty".into(),
            ));
        }
        if resources.iter().any(|(n, _)| *n == res.name) {
            return Err(bad(
                format!("{path}.resources[{i}].name"),
                format!("duplicate resource {:?}", res.name),
            ));
        }
        if res.weight < 0 {
            return Err(bad(
                format!("{path}.resources[{i}].weight"),
                format!(
                    "weight of {:?} must be positive, found {}",
                    res.name, res.weight
                ),
            ));
        }
        let weight = res.weight.max(1);
        weight_sum = weight_sum
            .checked_add(weight)
            .filter(|s| s.checked_mul(MAX_NODE_SCORE).is_some())
            .ok_or_else(|| {
                bad(
                    format!("{path}.resources[{i}].weight"),
                    format!(
                        "weight {} makes the weighted score overflow i64",
                        res.weight
                    ),
                )
            })?;
        resources.push((res.name.clone(), weight));
    }
    if resources.is_empty() {
        resources.push(("cpu".into(), 1));
        resources.push(("memory".into(), 1));
    }
    Ok(RequestedToCapacityRatioSpec {
        shape: r.shape.iter().map(|p| (p.utilization, p.score)).collect(),
        resources,
    })
}
