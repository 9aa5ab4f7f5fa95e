//! PodTopologySpread (kube's `podtopologyspread`): the filter for `DoNotSchedule` constraints
//! and the score for `ScheduleAnyway` ones, with kube's default constraints.

use std::collections::HashMap;

use crate::formulas::MAX_NODE_SCORE;
use crate::framework::{
    CycleContext, KubeVersion, PluginError, PluginErrorKind, Predicate, Prepared, PreparedScore,
    Priority, Reason,
};
use crate::model::{
    LabelSelector, NodeInclusionPolicy, Pod, TopologySpreadConstraint, WhenUnsatisfiable,
};
use crate::plugins::interpod::selector::{self, CompiledSelector};
use crate::plugins::node::{RequiredState, TaintsState};
use crate::snapshot::{CountsRef, LabelIds, NodeRef, Snapshot, Sym};

use super::selector_spread::default_selector;

/// `kubernetes.io/hostname`: per-node counts are taken on the node itself.
const HOSTNAME: &str = "kubernetes.io/hostname";

/// Where a pod without constraints of its own gets spread constraints from.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum DefaultConstraints {
    /// kube's system defaults (`defaultingType: System`): `kubernetes.io/hostname` with
    /// maxSkew 3 and `topology.kubernetes.io/zone` with maxSkew 5, both `ScheduleAnyway`,
    /// over the pods of the Services and controllers that select the pod.
    System,
    /// These constraints (`defaultingType: List`), their selector replaced by the Services'
    /// and controllers'; an empty list means none.
    List(Vec<TopologySpreadConstraint>),
}

/// kube's `PodTopologySpread` plugin, filter and score. Also the legacy predicate
/// `EvenPodsSpread` and priority `EvenPodsSpreadPriority` (no default constraints in a
/// Policy, unless `DefaultPodTopologySpread` turns `SelectorSpreadPriority` into this plugin
/// with the system defaults).
///
/// **Filter** (`DoNotSchedule` constraints): over the nodes that have every constraint's
/// topology key (and, by the constraint's `nodeAffinityPolicy` / `nodeTaintsPolicy`, match the
/// pod's required node affinity / tolerate its NoSchedule and NoExecute taints), count per
/// domain the pods of the pod's namespace that the constraint's selector matches (pods being
/// deleted left out); a node fails when `count(its domain) + (1 if the pod itself matches) -
/// global minimum > maxSkew`, the global minimum being 0 when fewer domains than `minDomains`
/// exist; a node without the topology key fails with "(missing required label)".
///
/// **Score** (`ScheduleAnyway` constraints): each constraint adds
/// `count(domain) * ln(domains + 2) + (maxSkew - 1)` (per node for `kubernetes.io/hostname`),
/// rounded; normalized to `100 * (max + min - score) / max` over the nodes with every key (100
/// everywhere when all scores are 0, 0 on the nodes without the keys).
///
/// In a [`KubeVersion::V1_20`] profile, v1.20.2's rules: no `minDomains`, `matchLabelKeys` or
/// node inclusion policies (the pod's node affinity always limits the nodes counted, taints
/// never), the score truncated instead of rounded, every score 100 when the pod has no
/// constraint (v1.34 skips the plugin then: 0), and an empty `labelSelector: {}` counting every
/// pod of the namespace (v1.34 counts none; it also ignores `matchLabelKeys` when the
/// `labelSelector` is absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodTopologySpread {
    defaults: DefaultConstraints,
    /// The default constraints as a list (the system ones written out), built once.
    default_list: Vec<TopologySpreadConstraint>,
    /// Count every node's pods even where the snapshot's counts would do (the tests).
    direct: bool,
}

impl Default for PodTopologySpread {
    fn default() -> Self {
        PodTopologySpread::new()
    }
}

impl PodTopologySpread {
    /// The legacy predicate name.
    pub const PREDICATE_NAME: &'static str = "EvenPodsSpread";
    /// The legacy priority name.
    pub const PRIORITY_NAME: &'static str = "EvenPodsSpreadPriority";

    /// With kube's system default constraints (kube's default arguments).
    pub fn new() -> PodTopologySpread {
        PodTopologySpread::with_defaults(DefaultConstraints::System)
    }

    /// With these default constraints.
    pub fn with_defaults(defaults: DefaultConstraints) -> PodTopologySpread {
        let default_list = match &defaults {
            DefaultConstraints::System => system_defaults(),
            DefaultConstraints::List(list) => list.clone(),
        };
        PodTopologySpread {
            defaults,
            default_list,
            direct: false,
        }
    }

    /// Counts every node's pods for every pod scheduled, ignoring the snapshot's counts: the
    /// direct computation the tests compare the counts with.
    #[cfg(test)]
    #[must_use]
    pub(crate) fn direct(mut self) -> Self {
        self.direct = true;
        self
    }

    /// The snapshot's counts for the constraints, unless counting directly ([`indexed`]).
    fn indexed(
        &self,
        cx: &CycleContext<'_>,
        constraints: &[Constraint],
        eligibility: &Eligibility,
    ) -> Option<Vec<CountsRef>> {
        if self.direct {
            return None;
        }
        indexed(cx, constraints, eligibility)
    }

    /// Without default constraints: only the pod's own constraints count.
    pub fn without_defaults() -> PodTopologySpread {
        PodTopologySpread::with_defaults(DefaultConstraints::List(Vec::new()))
    }

    /// The default constraints.
    pub fn defaults(&self) -> &DefaultConstraints {
        &self.defaults
    }

    /// The constraints of `action` that apply to the pod: its own, or (when it has none) the
    /// defaults with the Services' and controllers' selector. Each is resolved against the
    /// snapshot.
    fn constraints(
        &self,
        cx: &CycleContext<'_>,
        action: WhenUnsatisfiable,
    ) -> Result<Vec<Constraint>, PluginError> {
        let pod = cx.pod();
        let version = cx.kube_version();
        let snapshot = cx.snapshot();
        if !pod.spec.topology_spread_constraints.is_empty() {
            let mut out = Vec::new();
            for (i, c) in pod.spec.topology_spread_constraints.iter().enumerate() {
                if c.when_unsatisfiable != action {
                    continue;
                }
                if let Some(sel) = &c.label_selector
                    && let Err(e) = selector::validate(sel)
                {
                    return Err(PluginError::new(
                        self.name_for(action),
                        PluginErrorKind::InvalidInput(format!(
                            "pod {}: spec.topologySpreadConstraints[{i}].labelSelector: {e}",
                            pod.key()
                        )),
                    )
                    .with_source(e));
                }
                let sel = if version != KubeVersion::V1_20 && !c.match_label_keys.is_empty() {
                    c.selector_for(pod)
                } else {
                    c.label_selector.clone()
                };
                let mut constraint = Constraint::new(c, sel.as_ref(), pod, snapshot, version);
                constraint.selection = sel;
                out.push(constraint);
            }
            return Ok(out);
        }
        let mut defaults = self
            .default_list
            .iter()
            .filter(|c| c.when_unsatisfiable == action)
            .peekable();
        if defaults.peek().is_none() {
            return Ok(Vec::new());
        }
        let sel = default_selector(pod, snapshot.workloads(), version);
        if selector::is_empty(&sel) {
            return Ok(Vec::new());
        }
        Ok(defaults
            .map(|c| Constraint::new(c, Some(&sel), pod, snapshot, version))
            .collect())
    }

    fn name_for(&self, action: WhenUnsatisfiable) -> &'static str {
        match action {
            WhenUnsatisfiable::DoNotSchedule => Self::PREDICATE_NAME,
            WhenUnsatisfiable::ScheduleAnyway => Self::PRIORITY_NAME,
        }
    }
}

/// kube's system default constraints.
fn system_defaults() -> Vec<TopologySpreadConstraint> {
    [(HOSTNAME, 3), ("topology.kubernetes.io/zone", 5)]
        .into_iter()
        .map(|(key, max_skew)| TopologySpreadConstraint {
            max_skew,
            topology_key: key.to_string(),
            when_unsatisfiable: WhenUnsatisfiable::ScheduleAnyway,
            ..TopologySpreadConstraint::default()
        })
        .collect()
}

/// One constraint resolved for the pod.
#[derive(Debug, Default)]
struct Constraint {
    max_skew: i64,
    /// The topology key; `None` when no node has it.
    key: Option<Sym>,
    hostname: bool,
    /// The pods counted.
    selector: CompiledSelector,
    /// Whether the pod itself matches the selector.
    self_match: bool,
    min_domains: usize,
    honor_affinity: bool,
    honor_taints: bool,
    /// The selector as written on the pod (merged with `matchLabelKeys` where the version
    /// does), by which the snapshot's counts are found; `None` for default constraints.
    selection: Option<LabelSelector>,
    /// The constraint's topology key and resolved selector, as given, for the tests.
    #[cfg(test)]
    source: (String, Option<LabelSelector>),
}

impl Constraint {
    fn new(
        c: &TopologySpreadConstraint,
        sel: Option<&LabelSelector>,
        pod: &Pod,
        snapshot: &Snapshot,
        version: KubeVersion,
    ) -> Constraint {
        let current = version != KubeVersion::V1_20;
        let mut selector = CompiledSelector::compile(sel, snapshot.interner());
        // kube v1.27+ counts no pod for a selector without requirements (`{}`):
        // `countPodsMatchSelector` returns 0 when `selector.Empty()`. The pod itself still
        // matches it.
        if current && selector.is_empty() {
            selector = CompiledSelector::nothing();
        }
        Constraint {
            max_skew: i64::from(c.max_skew),
            key: snapshot.interner().get(&c.topology_key),
            hostname: c.topology_key == HOSTNAME,
            selector,
            self_match: sel.is_some_and(|s| selector::matches(s, &pod.metadata.labels)),
            // v1.20 has no minDomains: the minimum is never forced to 0.
            min_domains: match c.min_domains {
                _ if !current => 0,
                Some(n) if n > 0 => n as usize,
                _ => 1,
            },
            honor_affinity: !current || c.node_affinity_policy != Some(NodeInclusionPolicy::Ignore),
            honor_taints: current && c.node_taints_policy == Some(NodeInclusionPolicy::Honor),
            selection: None,
            #[cfg(test)]
            source: (c.topology_key.clone(), sel.cloned()),
        }
    }
}

/// The pods on the node in `namespace` that `selector` matches, pods being deleted left out
/// (kube's `countPodsMatchSelector`).
fn count_matching(node: NodeRef<'_>, selector: &CompiledSelector, namespace: &str) -> i64 {
    if selector.is_nothing() {
        return 0;
    }
    node.info()
        .pods()
        .iter()
        .filter(|p| {
            let pod = p.pod();
            !pod.is_terminating()
                && pod.metadata.namespace == namespace
                && selector.matches(p.labels())
        })
        .count() as i64
}

fn has_all_keys(labels: &LabelIds, constraints: &[Constraint]) -> bool {
    constraints
        .iter()
        .all(|c| c.key.is_some_and(|k| labels.contains_key(k)))
}

/// Which nodes count for a constraint: the pod's required node affinity and the node's hard
/// taints, as the constraint's policies say.
struct Eligibility {
    affinity: Option<RequiredState>,
    taints: TaintsState,
}

impl Eligibility {
    fn of(cx: &CycleContext<'_>) -> Eligibility {
        Eligibility {
            affinity: RequiredState::compile(cx),
            taints: TaintsState::of(&cx.pod().spec.tolerations),
        }
    }

    fn counts(&self, cx: &CycleContext<'_>, c: &Constraint, node: NodeRef<'_>) -> bool {
        (!c.honor_affinity || self.affinity.as_ref().is_none_or(|a| a.matches(cx, node)))
            && (!c.honor_taints || self.taints.check(node).is_ok())
    }
}

/// The snapshot's counts for every constraint ([`Snapshot::affinity_index`]: the pods of
/// the pod's namespace its selector matches, pods being deleted left out, per domain of its
/// key, kept current as pods come and go), when they are exactly what counting every node's
/// pods would give: every node with the key counts (the pod has no required node affinity,
/// or the constraint ignores it; the constraint ignores taints), a node with one constraint's
/// key has the others' (one key, or every node has every key), and some pod in the snapshot
/// has a constraint with the same selection and key (replicas of one workload). `None`
/// otherwise: the plugin counts node by node.
fn indexed(
    cx: &CycleContext<'_>,
    constraints: &[Constraint],
    eligibility: &Eligibility,
) -> Option<Vec<CountsRef>> {
    let snapshot = cx.snapshot();
    let index = snapshot.affinity_index();
    let namespace = &cx.pod().metadata.namespace;
    let mut out = Vec::with_capacity(constraints.len());
    for c in constraints {
        if c.selector.is_nothing()
            || c.honor_taints
            || (c.honor_affinity && eligibility.affinity.is_some())
        {
            return None;
        }
        out.push(index.spread_counts(c.selection.as_ref()?, namespace, c.key)?);
    }
    let one_key = constraints.iter().all(|c| c.key == constraints[0].key);
    if !one_key
        && out
            .iter()
            .any(|&r| index.nodes_with_key(r) != snapshot.len())
    {
        return None;
    }
    Some(out)
}

/// Matching pods per domain of one constraint.
#[derive(Debug)]
enum Counts {
    /// Counted node by node, by domain value.
    Counted(HashMap<Sym, i64>),
    /// The snapshot's counts ([`indexed`]).
    Indexed(CountsRef),
}

/// What the filter computed for a pod.
#[derive(Debug, Default)]
pub struct FilterState {
    constraints: Vec<Constraint>,
    /// Per constraint: matching pods per domain.
    counts: Vec<Counts>,
    /// Per constraint: the global minimum the skew is measured from.
    minimum: Vec<i64>,
}

impl Predicate for PodTopologySpread {
    type State = FilterState;

    fn name(&self) -> &str {
        Self::PREDICATE_NAME
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<FilterState>, PluginError> {
        let constraints = self.constraints(cx, WhenUnsatisfiable::DoNotSchedule)?;
        if constraints.is_empty() {
            return Ok(Prepared::Skip);
        }
        let eligibility = Eligibility::of(cx);
        let (counts, minimum) = match self.indexed(cx, &constraints, &eligibility) {
            Some(refs) => indexed_minimum(cx, &constraints, refs),
            None => counted_minimum(cx, &constraints, &eligibility),
        };
        Ok(Prepared::Run(FilterState {
            constraints,
            counts,
            minimum,
        }))
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        st: &FilterState,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        let labels = node.info().labels();
        for (i, c) in st.constraints.iter().enumerate() {
            let Some(value) = c.key.and_then(|k| labels.get(k)) else {
                return Err(Reason::TopologySpreadMissingLabel);
            };
            let matching = match &st.counts[i] {
                Counts::Counted(counts) => counts.get(&value).copied().unwrap_or(0),
                Counts::Indexed(r) => cx
                    .snapshot()
                    .affinity_index()
                    .count(*r, node.index())
                    .map_or(0, i64::from),
            };
            let skew = matching + i64::from(c.self_match) - st.minimum[i];
            if skew > c.max_skew {
                return Err(Reason::TopologySpreadConstraintsNotMatch);
            }
        }
        Ok(())
    }
}

/// The global minimum of a constraint over its domains' counts: 0 with fewer domains than
/// `minDomains`, `i32::MAX` without any domain (kube's initial value).
fn global_minimum(c: &Constraint, domains: usize, min: Option<i64>) -> i64 {
    if domains < c.min_domains {
        0
    } else {
        min.unwrap_or(i64::from(i32::MAX))
    }
}

/// The filter's counts and minimums from the snapshot's counts.
fn indexed_minimum(
    cx: &CycleContext<'_>,
    constraints: &[Constraint],
    refs: Vec<CountsRef>,
) -> (Vec<Counts>, Vec<i64>) {
    let index = cx.snapshot().affinity_index();
    let minimum = constraints
        .iter()
        .zip(&refs)
        .map(|(c, &r)| {
            let (mut domains, mut min) = (0, None::<i64>);
            for (_, n) in index.domains(r) {
                domains += 1;
                min = Some(min.map_or(i64::from(n), |m| m.min(i64::from(n))));
            }
            global_minimum(c, domains, min)
        })
        .collect();
    (refs.into_iter().map(Counts::Indexed).collect(), minimum)
}

/// The filter's counts and minimums, counting the pods of every node that counts (kube's
/// PreFilter).
fn counted_minimum(
    cx: &CycleContext<'_>,
    constraints: &[Constraint],
    eligibility: &Eligibility,
) -> (Vec<Counts>, Vec<i64>) {
    let snapshot = cx.snapshot();
    let namespace = &cx.pod().metadata.namespace;
    let mut counts: Vec<HashMap<Sym, i64>> = vec![HashMap::new(); constraints.len()];
    for i in 0..snapshot.len() {
        let node = snapshot.node(i);
        let labels = node.info().labels();
        if !has_all_keys(labels, constraints) {
            continue;
        }
        for (c, counts) in constraints.iter().zip(counts.iter_mut()) {
            if !eligibility.counts(cx, c, node) {
                continue;
            }
            let Some(value) = c.key.and_then(|k| labels.get(k)) else {
                continue;
            };
            *counts.entry(value).or_insert(0) += count_matching(node, &c.selector, namespace);
        }
    }
    let minimum = constraints
        .iter()
        .zip(&counts)
        .map(|(c, counts)| global_minimum(c, counts.len(), counts.values().copied().min()))
        .collect();
    (counts.into_iter().map(Counts::Counted).collect(), minimum)
}

#[cfg(test)]
impl FilterState {
    /// Whether every constraint reads the snapshot's counts.
    pub(crate) fn is_indexed(&self) -> bool {
        self.counts.iter().all(|c| matches!(c, Counts::Indexed(_)))
    }

    /// For the tests: per constraint, the constraint and its matching pods per domain (domain
    /// names resolved), and the global minimum the skew is measured from.
    fn view(
        &self,
        snapshot: &Snapshot,
    ) -> Vec<(&Constraint, std::collections::BTreeMap<String, i64>, i64)> {
        self.constraints
            .iter()
            .zip(&self.counts)
            .zip(&self.minimum)
            .map(|((c, counts), &min)| {
                let counts = match counts {
                    Counts::Counted(counts) => resolve_counts(counts, snapshot),
                    Counts::Indexed(r) => snapshot
                        .affinity_index()
                        .domains(*r)
                        .map(|(v, n)| (snapshot.interner().resolve(v).to_string(), i64::from(n)))
                        .collect(),
                };
                (c, counts, min)
            })
            .collect()
    }
}

#[cfg(test)]
fn resolve_counts(
    counts: &HashMap<Sym, i64>,
    snapshot: &Snapshot,
) -> std::collections::BTreeMap<String, i64> {
    counts
        .iter()
        .map(|(&v, &n)| (snapshot.interner().resolve(v).to_string(), n))
        .collect()
}

/// What the score computed for a pod.
#[derive(Debug, Default)]
pub struct ScoreState {
    constraints: Vec<Constraint>,
    /// Per constraint: matching pods per domain of the feasible nodes (not per node for
    /// `kubernetes.io/hostname`, counted at score time).
    counts: Vec<HashMap<Sym, i64>>,
    /// Per constraint: kube's `ln(domains + 2)`.
    weights: Vec<f64>,
    /// Per feasible node (in feasible order): scored at 0 and left out of the normalization.
    ignored: Vec<bool>,
    /// Whether nodes must have every topology key to be scored.
    require_all: bool,
    namespace: String,
}

#[cfg(test)]
impl ScoreState {
    /// For the tests: per constraint, the constraint, its matching pods per domain and its
    /// normalizing weight; and per feasible node whether it is ignored.
    #[allow(clippy::type_complexity)]
    fn view(
        &self,
        snapshot: &Snapshot,
    ) -> (
        Vec<(&Constraint, std::collections::BTreeMap<String, i64>, f64)>,
        &[bool],
    ) {
        let per = self
            .constraints
            .iter()
            .zip(&self.counts)
            .zip(&self.weights)
            .map(|((c, counts), &w)| (c, resolve_counts(counts, snapshot), w))
            .collect();
        (per, &self.ignored)
    }
}

impl Priority for PodTopologySpread {
    type State = ScoreState;

    fn name(&self) -> &str {
        Self::PRIORITY_NAME
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        feasible: &[u32],
    ) -> Result<PreparedScore<ScoreState>, PluginError> {
        let v1_20 = cx.kube_version() == KubeVersion::V1_20;
        let constraints = self.constraints(cx, WhenUnsatisfiable::ScheduleAnyway)?;
        if constraints.is_empty() {
            // v1.20 normalizes all-zero scores to 100; v1.34 skips the plugin (0).
            return Ok(PreparedScore::Constant(if v1_20 {
                MAX_NODE_SCORE
            } else {
                0
            }));
        }
        let snapshot = cx.snapshot();
        // Nodes must have every topology key, except with the system defaults after v1.20
        // (a node without a zone still gets hostname spreading).
        let require_all = v1_20
            || !cx.pod().spec.topology_spread_constraints.is_empty()
            || self.defaults != DefaultConstraints::System;
        // kube reads a missing label as the empty value: one domain with the nodes labelled "".
        let empty = snapshot.interner().get("").unwrap_or(Sym::NONE);
        let mut counts: Vec<HashMap<Sym, i64>> = vec![HashMap::new(); constraints.len()];
        let mut ignored = Vec::with_capacity(feasible.len());
        for &i in feasible {
            let labels = snapshot.node(i as usize).info().labels();
            let skip = require_all && !has_all_keys(labels, &constraints);
            ignored.push(skip);
            if skip {
                continue;
            }
            for (c, counts) in constraints.iter().zip(counts.iter_mut()) {
                if c.hostname {
                    continue;
                }
                let value = c.key.and_then(|k| labels.get(k)).unwrap_or(empty);
                counts.entry(value).or_insert(0);
            }
        }
        let scored = ignored.iter().filter(|&&x| !x).count();
        let weights = constraints
            .iter()
            .zip(&counts)
            .map(|(c, counts)| {
                let size = if c.hostname { scored } else { counts.len() };
                ((size + 2) as f64).ln()
            })
            .collect();
        let eligibility = Eligibility::of(cx);
        let namespace = cx.pod().metadata.namespace.clone();
        // Default constraints have no selection, so `indexed` holds only with every key
        // required.
        match self.indexed(cx, &constraints, &eligibility) {
            Some(refs) => {
                let index = snapshot.affinity_index();
                for ((c, counts), r) in constraints.iter().zip(counts.iter_mut()).zip(refs) {
                    if c.hostname {
                        continue;
                    }
                    for (&value, n) in counts.iter_mut() {
                        *n += index.count_of_value(r, value).map_or(0, i64::from);
                    }
                }
            }
            None => {
                for i in 0..snapshot.len() {
                    let node = snapshot.node(i);
                    let labels = node.info().labels();
                    if require_all && !has_all_keys(labels, &constraints) {
                        continue;
                    }
                    for (c, counts) in constraints.iter().zip(counts.iter_mut()) {
                        if c.hostname || !eligibility.counts(cx, c, node) {
                            continue;
                        }
                        let value = c.key.and_then(|k| labels.get(k)).unwrap_or(empty);
                        if let Some(n) = counts.get_mut(&value) {
                            *n += count_matching(node, &c.selector, &namespace);
                        }
                    }
                }
            }
        }
        Ok(PreparedScore::Run(ScoreState {
            constraints,
            counts,
            weights,
            ignored,
            require_all,
            namespace,
        }))
    }

    fn score(&self, cx: &CycleContext<'_>, st: &ScoreState, node: NodeRef<'_>) -> i64 {
        let labels = node.info().labels();
        if st.require_all && !has_all_keys(labels, &st.constraints) {
            return 0;
        }
        let mut score = 0.0f64;
        for (i, c) in st.constraints.iter().enumerate() {
            let Some(value) = c.key.and_then(|k| labels.get(k)) else {
                continue;
            };
            // Per node, as kube counts it (not per domain: two nodes may share a hostname).
            let count = if c.hostname {
                count_matching(node, &c.selector, &st.namespace)
            } else {
                st.counts[i].get(&value).copied().unwrap_or(0)
            };
            score += count as f64 * st.weights[i] + (c.max_skew - 1) as f64;
        }
        match cx.kube_version() {
            KubeVersion::V1_20 => score as i64,
            _ => score.round() as i64,
        }
    }

    fn normalize(&self, _cx: &CycleContext<'_>, st: &ScoreState, scores: &mut [i64]) {
        let (mut min, mut max) = (i64::MAX, 0i64);
        for (s, &ignored) in scores.iter().zip(&st.ignored) {
            if !ignored {
                min = min.min(*s);
                max = max.max(*s);
            }
        }
        for (s, &ignored) in scores.iter_mut().zip(&st.ignored) {
            *s = if ignored {
                0
            } else if max == 0 {
                MAX_NODE_SCORE
            } else {
                MAX_NODE_SCORE * (max + min - *s) / max
            };
        }
    }
}

#[cfg(test)]
#[path = "topology_tests.rs"]
mod topology_tests;
