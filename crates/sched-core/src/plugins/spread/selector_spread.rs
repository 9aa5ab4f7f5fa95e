//! SelectorSpreadPriority (kube's `selectorspread`; v1.20's rules in a v1.20 profile).

use std::collections::{BTreeMap, HashMap};

use super::zone::ZoneKeys;
use crate::formulas::MAX_NODE_SCORE;
use crate::framework::{CycleContext, KubeVersion, PluginError, PreparedScore, Priority};
use crate::model::{
    LabelSelector, LabelSelectorOperator, LabelSelectorRequirement, Pod, Workload, WorkloadKind,
};
use crate::plugins::interpod::selector::{self, CompiledSelector};
use crate::snapshot::NodeRef;
use crate::snapshot::Sym;

/// With zones, 2/3 of the score comes from zone spreading and 1/3 from node spreading.
const ZONE_WEIGHTING: f64 = 2.0 / 3.0;

const MAX: f64 = MAX_NODE_SCORE as f64;

/// The normalized score of every node when no pod matches anywhere (all raw counts 0): 100,
/// or `100 * (1 - 2/3) + 2/3 * 100` on zoned nodes, which kube's float arithmetic also makes
/// exactly 100 (checked by a test).
const ALL_ZERO_SCORE: i64 = MAX_NODE_SCORE;
#[cfg(test)]
pub(crate) const ALL_ZERO_ZONED_SCORE: i64 =
    (MAX * (1.0 - ZONE_WEIGHTING) + ZONE_WEIGHTING * MAX) as i64;

/// Whether a Service (or ReplicationController) map selector selects these labels; an empty map
/// selects nothing (see [`Workload`]).
pub(crate) fn map_selects(
    map: &BTreeMap<String, String>,
    labels: &BTreeMap<String, String>,
) -> bool {
    !map.is_empty() && map.iter().all(|(k, v)| labels.get(k) == Some(v))
}

/// The Services in the pod's namespace whose selector selects the pod, in snapshot order. As
/// kube's lister, a pod without a namespace sees the Services of all namespaces.
pub(crate) fn pod_services<'a>(
    pod: &'a Pod,
    workloads: &'a [Workload],
) -> impl Iterator<Item = &'a Workload> {
    let ns = &pod.metadata.namespace;
    workloads.iter().filter(move |w| {
        w.kind == WorkloadKind::Service
            && (ns.is_empty() || w.namespace == *ns)
            && map_selects(&w.selector.match_labels, &pod.metadata.labels)
    })
}

/// kube's `helper.DefaultSelector` as `version` has it, as one [`LabelSelector`] (the
/// requirements kube ANDs): an empty selector when nothing selects the pod.
///
/// - v1.20: the merged selectors of the Services and ReplicationControllers in the pod's
///   namespace whose selectors select the pod, then the requirements of every ReplicaSet and
///   StatefulSet there whose (non-empty, valid) selector selects it. Controllers are found by
///   their selectors, whoever owns the pod; a pod without labels has none.
/// - later versions: the merged selectors of the Services selecting the pod, then the pod's
///   controller (owner reference with `controller: true`): a `v1` ReplicationController merges
///   its map, an `apps/v1` ReplicaSet or StatefulSet adds its requirements. Controllers are
///   found by name in the pod's namespace.
pub(crate) fn default_selector(
    pod: &Pod,
    workloads: &[Workload],
    version: KubeVersion,
) -> LabelSelector {
    let mut out = LabelSelector::default();
    for s in pod_services(pod, workloads) {
        merge_map(&mut out, &s.selector.match_labels);
    }
    let labels = &pod.metadata.labels;
    if version == KubeVersion::V1_20 {
        let in_namespace = |kind: WorkloadKind| {
            workloads.iter().filter(move |w| {
                w.kind == kind && w.namespace == pod.metadata.namespace && !labels.is_empty()
            })
        };
        for rc in in_namespace(WorkloadKind::ReplicationController) {
            if map_selects(&rc.selector.match_labels, labels) {
                merge_map(&mut out, &rc.selector.match_labels);
            }
        }
        for kind in [WorkloadKind::ReplicaSet, WorkloadKind::StatefulSet] {
            for w in in_namespace(kind) {
                if !selector::is_empty(&w.selector)
                    && selector::validate(&w.selector).is_ok()
                    && selector::matches(&w.selector, labels)
                {
                    add_requirements(&mut out, &w.selector);
                }
            }
        }
        return out;
    }
    let Some(owner) = pod.controller_ref() else {
        return out;
    };
    let (group, version) = match owner.api_version.split_once('/') {
        Some((g, v)) if !v.contains('/') => (g, v),
        Some(_) => return out,
        None => ("", owner.api_version.as_str()),
    };
    let kind = match (group, version, owner.kind.as_str()) {
        ("", "v1", "ReplicationController") => WorkloadKind::ReplicationController,
        ("apps", "v1", "ReplicaSet") => WorkloadKind::ReplicaSet,
        ("apps", "v1", "StatefulSet") => WorkloadKind::StatefulSet,
        _ => return out,
    };
    let Some(w) = workloads
        .iter()
        .find(|w| w.kind == kind && w.namespace == pod.metadata.namespace && w.name == owner.name)
    else {
        return out;
    };
    if kind == WorkloadKind::ReplicationController {
        merge_map(&mut out, &w.selector.match_labels);
    } else if selector::validate(&w.selector).is_ok() {
        add_requirements(&mut out, &w.selector);
    }
    out
}

/// kube's `labels.Merge` into the selector's exact pairs (a later value wins).
fn merge_map(out: &mut LabelSelector, map: &BTreeMap<String, String>) {
    out.match_labels
        .extend(map.iter().map(|(k, v)| (k.clone(), v.clone())));
}

/// kube's `selector.Add(other.Requirements()...)`: `other`'s exact pairs become `In`
/// requirements beside the merged map.
fn add_requirements(out: &mut LabelSelector, other: &LabelSelector) {
    for (k, v) in &other.match_labels {
        out.match_expressions.push(LabelSelectorRequirement {
            key: k.clone(),
            operator: LabelSelectorOperator::In,
            values: vec![v.clone()],
        });
    }
    out.match_expressions
        .extend(other.match_expressions.iter().cloned());
}

/// Per-pod state.
#[derive(Debug, Default)]
pub struct State {
    selector: CompiledSelector,
    namespace: String,
    feasible: Vec<u32>,
    zones: ZoneKeys,
}

/// kube's `countMatchingPods`: pods on the node in `namespace` matching a non-empty selector.
fn count_matching(st: &State, node: NodeRef<'_>) -> i64 {
    if st.selector.is_empty() {
        return 0;
    }
    node.info()
        .pods()
        .iter()
        .filter(|p| {
            let pod = p.pod();
            pod.metadata.namespace == st.namespace
                && !pod.is_terminating()
                && st.selector.matches(p.labels())
        })
        .count() as i64
}

fn prepare(cx: &CycleContext<'_>, feasible: &[u32]) -> PreparedScore<State> {
    if !cx.pod().spec.topology_spread_constraints.is_empty() {
        // kube's skipSelectorSpread: a pod with spread constraints of its own is left to
        // PodTopologySpread; every node scores 0.
        return PreparedScore::Constant(0);
    }
    let snapshot = cx.snapshot();
    let selector = CompiledSelector::compile(
        Some(&default_selector(
            cx.pod(),
            snapshot.workloads(),
            cx.kube_version(),
        )),
        snapshot.interner(),
    );
    if selector.is_empty() || selector.is_nothing() {
        // Every count is 0, so every node gets the top score, zoned or not.
        return PreparedScore::Constant(ALL_ZERO_SCORE);
    }
    PreparedScore::Run(State {
        selector,
        namespace: cx.pod().metadata.namespace.clone(),
        feasible: feasible.to_vec(),
        zones: ZoneKeys::new(snapshot.interner()),
    })
}

/// kube 1.22 `SelectorSpread.NormalizeScore`.
fn normalize(cx: &CycleContext<'_>, st: &State, scores: &mut [i64]) {
    let snapshot = cx.snapshot();
    let mut zone_index: HashMap<(Sym, Sym), usize> = HashMap::new();
    let mut counts_by_zone: Vec<i64> = Vec::new();
    let mut node_zone: Vec<Option<usize>> = Vec::with_capacity(scores.len());
    let mut max_by_node = 0i64;
    for (i, &s) in scores.iter().enumerate() {
        max_by_node = max_by_node.max(s);
        let zone = st
            .feasible
            .get(i)
            .and_then(|&n| snapshot.node_infos().get(n as usize))
            .and_then(|info| st.zones.zone_of(info.labels()));
        let z = zone.map(|z| {
            let next = counts_by_zone.len();
            let idx = *zone_index.entry(z).or_insert(next);
            if idx == next {
                counts_by_zone.push(0);
            }
            counts_by_zone[idx] += s;
            idx
        });
        node_zone.push(z);
    }
    let max_by_zone = counts_by_zone.iter().copied().max().unwrap_or(0).max(0);
    let have_zones = !counts_by_zone.is_empty();
    for (i, s) in scores.iter_mut().enumerate() {
        let mut f = MAX;
        if max_by_node > 0 {
            f = MAX * ((max_by_node - *s) as f64 / max_by_node as f64);
        }
        if have_zones && let Some(z) = node_zone[i] {
            let mut zone_score = MAX;
            if max_by_zone > 0 {
                zone_score = MAX * ((max_by_zone - counts_by_zone[z]) as f64 / max_by_zone as f64);
            }
            f = (f * (1.0 - ZONE_WEIGHTING)) + (ZONE_WEIGHTING * zone_score);
        }
        *s = f as i64;
    }
}

/// Legacy priority `SelectorSpreadPriority` (no argument): spreads the pods selected by the
/// Services, ReplicationControllers, ReplicaSets and StatefulSets of the pod (kube's
/// `DefaultSelector`: all Services selecting the pod, plus its controller by owner reference)
/// across nodes and zones.
///
/// Raw score: the pods of the pod's namespace on the node that the selector matches. Normalized:
/// `100 * (maxNode - count) / maxNode` (100 when no node has any), and, when some feasible node
/// has a zone (kube's `GetZoneKey`: region and zone, `failure-domain.beta.kubernetes.io` labels
/// first, then `topology.kubernetes.io`), on zoned nodes
/// `score * 1/3 + 2/3 * 100 * (maxZone - zoneCount) / maxZone`, in float64 and truncated.
///
/// A pod no Service or controller selects gets 100 on every node (returned as a constant).
///
/// Pods being deleted (`metadata.deletionTimestamp` set) are not counted, and a pod with
/// `topologySpreadConstraints` of its own scores 0 everywhere (kube leaves it to
/// PodTopologySpread).
///
/// In a v1.20 profile the pod's controllers are found as kube v1.20 found them (by their
/// selectors, see `default_selector`); the legacy name `ServiceSpreadingPriority` runs as this
/// priority, as in kube 1.18+.
#[derive(Clone, Copy, Debug, Default)]
pub struct SelectorSpreadPriority;

impl SelectorSpreadPriority {
    /// The priority.
    pub fn new() -> Self {
        SelectorSpreadPriority
    }
}

impl Priority for SelectorSpreadPriority {
    type State = State;

    fn name(&self) -> &str {
        "SelectorSpreadPriority"
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        Ok(prepare(cx, feasible))
    }

    fn score(&self, _cx: &CycleContext<'_>, state: &Self::State, node: NodeRef<'_>) -> i64 {
        count_matching(state, node)
    }

    fn normalize(&self, cx: &CycleContext<'_>, state: &Self::State, scores: &mut [i64]) {
        normalize(cx, state, scores);
    }
}
