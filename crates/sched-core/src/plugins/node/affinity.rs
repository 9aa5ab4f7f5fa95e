//! MatchNodeSelector and NodeAffinityPriority: the pod's nodeSelector and node affinity,
//! compiled once per pod into interned label ids.

use crate::formulas::{MAX_NODE_SCORE, default_normalize};
use crate::framework::{
    CycleContext, KubeVersion, PluginError, PluginErrorKind, Predicate, Prepared, PreparedScore,
    Priority, Reason, Rejection,
};
use std::collections::BTreeSet;
use std::sync::Arc;

use crate::model::{
    NodeSelector, NodeSelectorOperator, NodeSelectorRequirement, NodeSelectorTerm,
    PreferredSchedulingTerm,
};
use crate::snapshot::NodeRef;
use crate::snapshot::{Interner, LabelIds, Snapshot, Sym};

use super::util::{is_qualified_name, is_valid_label_value, parse_int};

/// The field selector key kube supports in `matchFields`.
const NAME_FIELD: &str = "metadata.name";

/// One compiled requirement of a node selector term.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Req {
    /// The label (sorted value ids) is present with one of the values.
    In(Sym, Vec<Sym>),
    /// The label is absent or its value is none of these.
    NotIn(Sym, Vec<Sym>),
    /// The label is present.
    Exists(Sym),
    /// The label is absent.
    DoesNotExist(Sym),
    /// The label's value parses as an integer greater than this.
    Gt(Sym, i64),
    /// The label's value parses as an integer less than this.
    Lt(Sym, i64),
    /// The node is the one at this snapshot index (`None`: no node).
    NameIs(Option<usize>),
    /// The node is not the one at this snapshot index.
    NameIsNot(Option<usize>),
}

impl Req {
    #[inline]
    fn matches(&self, labels: &LabelIds, index: usize, interner: &Interner) -> bool {
        match self {
            Req::In(k, vals) => labels
                .get(*k)
                .is_some_and(|v| vals.binary_search(&v).is_ok()),
            Req::NotIn(k, vals) => labels
                .get(*k)
                .is_none_or(|v| vals.binary_search(&v).is_err()),
            Req::Exists(k) => labels.contains_key(*k),
            Req::DoesNotExist(k) => !labels.contains_key(*k),
            Req::Gt(k, bound) => labels
                .get(*k)
                .and_then(|v| parse_int(interner.resolve(v)))
                .is_some_and(|v| v > *bound),
            Req::Lt(k, bound) => labels
                .get(*k)
                .and_then(|v| parse_int(interner.resolve(v)))
                .is_some_and(|v| v < *bound),
            Req::NameIs(i) => *i == Some(index),
            Req::NameIsNot(i) => *i != Some(index),
        }
    }
}

/// A compiled node selector term: all requirements must hold.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Term(Vec<Req>);

impl Term {
    #[inline]
    fn matches(&self, node: NodeRef<'_>, interner: &Interner) -> bool {
        let labels = node.info().labels();
        self.0
            .iter()
            .all(|r| r.matches(labels, node.index(), interner))
    }
}

/// What compiling a term found.
enum Compiled {
    /// Matches the nodes that satisfy these requirements.
    Term(Term),
    /// Matches every node (all requirements hold whatever the node).
    All,
    /// Matches no node.
    Nothing,
}

/// A requirement resolved against the snapshot: decided for every node, or a check.
enum Resolved {
    Always,
    Never,
    Check(Req),
}

fn resolve_values(interner: &Interner, values: &[String]) -> Vec<Sym> {
    let mut ids: Vec<Sym> = values.iter().filter_map(|v| interner.get(v)).collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// kube's `labels.NewRequirement` validation, then resolution to ids. A label key or value
/// that was never interned is on no node, which decides In/Exists/Gt/Lt (never) and
/// NotIn/DoesNotExist (always) without a per-node check.
fn compile_label_req(r: &NodeSelectorRequirement, interner: &Interner) -> Result<Resolved, String> {
    use NodeSelectorOperator::*;
    if !is_qualified_name(&r.key) {
        return Err(format!("invalid label key {:?}", r.key));
    }
    match r.operator {
        In | NotIn if r.values.is_empty() => {
            return Err("for 'in', 'notin' operators, values set can't be empty".into());
        }
        Exists | DoesNotExist if !r.values.is_empty() => {
            return Err("values set must be empty for exists and does not exist".into());
        }
        Gt | Lt if r.values.len() != 1 => {
            return Err("for 'Gt', 'Lt' operators, exactly one value is required".into());
        }
        _ => {}
    }
    let bound = match r.operator {
        Gt | Lt => match parse_int(&r.values[0]) {
            Some(v) => v,
            None => return Err("for 'Gt', 'Lt' operators, the value must be an integer".into()),
        },
        _ => 0,
    };
    if let Some(v) = r.values.iter().find(|v| !is_valid_label_value(v)) {
        return Err(format!("invalid label value {v:?}"));
    }
    let key = interner.get(&r.key);
    Ok(match (r.operator, key) {
        (In | Exists | Gt | Lt, None) => Resolved::Never,
        (NotIn | DoesNotExist, None) => Resolved::Always,
        (In, Some(k)) => {
            let vals = resolve_values(interner, &r.values);
            if vals.is_empty() {
                Resolved::Never
            } else {
                Resolved::Check(Req::In(k, vals))
            }
        }
        (NotIn, Some(k)) => {
            let vals = resolve_values(interner, &r.values);
            if vals.is_empty() {
                Resolved::Always
            } else {
                Resolved::Check(Req::NotIn(k, vals))
            }
        }
        (Exists, Some(k)) => Resolved::Check(Req::Exists(k)),
        (DoesNotExist, Some(k)) => Resolved::Check(Req::DoesNotExist(k)),
        (Gt, Some(k)) => Resolved::Check(Req::Gt(k, bound)),
        (Lt, Some(k)) => Resolved::Check(Req::Lt(k, bound)),
    })
}

/// kube's `nodeSelectorRequirementsAsFieldSelector`: only In and NotIn with exactly one
/// value. Nodes have the single field `metadata.name`; any other field reads as empty.
fn compile_field_req(r: &NodeSelectorRequirement, snapshot: &Snapshot) -> Result<Resolved, String> {
    let value = match (r.operator, r.values.as_slice()) {
        (NodeSelectorOperator::In | NodeSelectorOperator::NotIn, [v]) => v,
        (NodeSelectorOperator::In | NodeSelectorOperator::NotIn, _) => {
            return Err("field selector values must have one element".into());
        }
        (op, _) => return Err(format!("field selector operator {op:?} is not supported")),
    };
    let is_in = r.operator == NodeSelectorOperator::In;
    if r.key == NAME_FIELD {
        let index = snapshot.index_of(value);
        return Ok(Resolved::Check(if is_in {
            Req::NameIs(index)
        } else {
            Req::NameIsNot(index)
        }));
    }
    Ok(if value.is_empty() == is_in {
        Resolved::Always
    } else {
        Resolved::Never
    })
}

/// Compiles a non-empty term; `Err` carries kube's parse error (the term then matches nothing
/// in a filter, and fails the pod in a score).
fn compile_term(term: &NodeSelectorTerm, snapshot: &Snapshot) -> Result<Compiled, String> {
    let interner = snapshot.interner();
    let mut reqs = Vec::new();
    let mut never = false;
    let resolved = term
        .match_expressions
        .iter()
        .map(|r| compile_label_req(r, interner))
        .chain(
            term.match_fields
                .iter()
                .map(|r| compile_field_req(r, snapshot)),
        );
    // Validate everything first: one bad requirement makes the whole term an error.
    for r in resolved {
        match r? {
            Resolved::Always => {}
            Resolved::Never => never = true,
            Resolved::Check(req) => reqs.push(req),
        }
    }
    Ok(if never {
        Compiled::Nothing
    } else if reqs.is_empty() {
        Compiled::All
    } else {
        Compiled::Term(Term(reqs))
    })
}

fn is_empty_term(t: &NodeSelectorTerm) -> bool {
    t.match_expressions.is_empty() && t.match_fields.is_empty()
}

/// The pod's nodeSelector and required node affinity, compiled.
#[derive(Debug, Default)]
pub struct RequiredState {
    /// No node can match.
    never: bool,
    /// nodeSelector pairs (key id, value id): each must be a label of the node.
    selector: Vec<(Sym, Sym)>,
    /// Required affinity terms (ORed); `None` when the pod has none or one always matches.
    terms: Option<Vec<Term>>,
}

impl RequiredState {
    /// Compiles the pod's nodeSelector and required node affinity, or `None` when it has
    /// neither (every node matches).
    pub(crate) fn compile(cx: &CycleContext<'_>) -> Option<RequiredState> {
        let pod = cx.pod();
        let snapshot = cx.snapshot();
        let interner = snapshot.interner();
        let required = pod
            .spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .and_then(|na| na.required.as_ref());
        if pod.spec.node_selector.is_empty() && required.is_none() {
            return None;
        }
        let mut st = RequiredState::default();
        for (k, v) in &pod.spec.node_selector {
            match (interner.get(k), interner.get(v)) {
                (Some(k), Some(v)) => st.selector.push((k, v)),
                _ => st.never = true,
            }
        }
        if let Some(required) = required {
            st.add_selector(required, snapshot);
        }
        Some(st)
    }

    /// A state for a node selector alone (the profile's added affinity).
    fn for_selector(selector: &NodeSelector, cx: &CycleContext<'_>) -> RequiredState {
        let mut st = RequiredState::default();
        st.add_selector(selector, cx.snapshot());
        st
    }

    fn add_selector(&mut self, required: &NodeSelector, snapshot: &Snapshot) {
        let st = self;
        {
            let mut terms = Vec::new();
            let mut all = false;
            for term in &required.node_selector_terms {
                if is_empty_term(term) {
                    continue;
                }
                // A term kube cannot parse matches no node (the filter ignores the error).
                match compile_term(term, snapshot) {
                    Ok(Compiled::Term(t)) => terms.push(t),
                    Ok(Compiled::All) => all = true,
                    Ok(Compiled::Nothing) | Err(_) => {}
                }
            }
            if !all {
                if terms.is_empty() {
                    st.never = true;
                }
                st.terms = Some(terms);
            }
        }
    }

    /// Whether the node matches.
    #[inline]
    pub(crate) fn matches(&self, cx: &CycleContext<'_>, node: NodeRef<'_>) -> bool {
        if self.never {
            return false;
        }
        let labels = node.info().labels();
        if !self.selector.iter().all(|&(k, v)| labels.get(k) == Some(v)) {
            return false;
        }
        match &self.terms {
            None => true,
            Some(terms) => {
                let interner = cx.snapshot().interner();
                terms.iter().any(|t| t.matches(node, interner))
            }
        }
    }
}

/// kube's `MatchNodeSelector` predicate (framework plugin `NodeAffinity`, filter part). No
/// argument.
///
/// The node must carry every `spec.nodeSelector` label, and, when the pod has required node
/// affinity, match one of its terms (terms are ORed, a term's requirements ANDed; an empty term
/// or a term kube cannot parse matches nothing; operators In, NotIn, Exists, DoesNotExist, and
/// Gt/Lt comparing the label value parsed as a base-10 integer; `matchFields` on
/// `metadata.name`). Failure: "node(s) didn't match Pod's node affinity/selector". A pod with
/// neither skips it.
///
/// With [`MatchNodeSelector::with_added_affinity`] (kube's `NodeAffinityArgs.addedAffinity`),
/// every node must first match that selector too: "node(s) didn't match scheduler-enforced
/// node affinity".
///
/// In a v1.34 profile, when every required term names nodes with `matchFields`
/// `metadata.name In [...]` (a DaemonSet's pods do), the pod is narrowed to those nodes
/// ([`Prepared::RunOn`], kube's `PreFilterResult`: the union over the terms of each term's
/// intersection of its `In` lists): only they are filtered, the others fail with "node(s)
/// didn't satisfy plugin(s) \[NodeAffinity\]". Terms whose lists have nothing in common reject
/// the pod: "pod affinity terms conflict".
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MatchNodeSelector {
    added: Option<Arc<NodeSelector>>,
}

impl MatchNodeSelector {
    /// The predicate.
    pub fn new() -> Self {
        MatchNodeSelector::default()
    }

    /// Also requires this node selector of every pod (a profile's added affinity).
    #[must_use]
    pub fn with_added_affinity(mut self, required: Option<NodeSelector>) -> Self {
        self.added = required.map(Arc::new);
        self
    }
}

/// The profile's added affinity and the pod's own, compiled.
#[derive(Debug, Default)]
pub struct SelectorState {
    added: Option<RequiredState>,
    pod: Option<RequiredState>,
}

impl Predicate for MatchNodeSelector {
    type State = SelectorState;

    fn name(&self) -> &str {
        "MatchNodeSelector"
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<Self::State>, PluginError> {
        let added = self
            .added
            .as_ref()
            .map(|s| RequiredState::for_selector(s, cx));
        let pod = RequiredState::compile(cx);
        if added.is_none() && pod.is_none() {
            return Ok(Prepared::Skip);
        }
        let state = SelectorState { added, pod };
        if cx.kube_version() >= KubeVersion::V1_34 {
            match required_node_names(cx.pod()) {
                NodeNames::All => {}
                NodeNames::Only(names) => return Ok(Prepared::RunOn(state, names)),
                NodeNames::Conflict => {
                    return Ok(Prepared::Reject(Rejection::new(
                        Reason::NodeSelectorMismatch,
                        "pod affinity terms conflict",
                    )));
                }
            }
        }
        Ok(Prepared::Run(state))
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        if let Some(added) = &state.added
            && !added.matches(cx, node)
        {
            return Err(Reason::EnforcedNodeAffinityMismatch);
        }
        match &state.pod {
            Some(st) if !st.matches(cx, node) => Err(Reason::NodeSelectorMismatch),
            _ => Ok(()),
        }
    }
}

/// The nodes a pod's required node affinity names by `metadata.name`.
#[derive(Debug, PartialEq, Eq)]
enum NodeNames {
    /// Any node may match (a term without a `metadata.name In` field requirement, or no
    /// required terms).
    All,
    /// Only these names can match.
    Only(BTreeSet<String>),
    /// No name can match: every term's `In` lists have nothing in common.
    Conflict,
}

/// kube v1.34's NodeAffinity PreFilter: the union over the required terms of each term's
/// `matchFields` `metadata.name In` lists intersected; any term without one allows every node.
fn required_node_names(pod: &crate::model::Pod) -> NodeNames {
    let Some(required) = pod
        .spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| na.required.as_ref())
    else {
        return NodeNames::All;
    };
    let mut names: Option<BTreeSet<String>> = None;
    for term in &required.node_selector_terms {
        let mut in_term: Option<BTreeSet<String>> = None;
        for r in &term.match_fields {
            if r.key == NAME_FIELD && r.operator == NodeSelectorOperator::In {
                let values: BTreeSet<String> = r.values.iter().cloned().collect();
                in_term = Some(match in_term {
                    None => values,
                    Some(prev) => prev.intersection(&values).cloned().collect(),
                });
            }
        }
        let Some(in_term) = in_term else {
            // The terms are ORed: this one may match any node.
            return NodeNames::All;
        };
        names.get_or_insert_with(BTreeSet::new).extend(in_term);
    }
    match names {
        None => NodeNames::All,
        Some(n) if n.is_empty() => NodeNames::Conflict,
        Some(n) => NodeNames::Only(n),
    }
}

/// The pod's preferred terms, compiled.
#[derive(Debug, Default)]
pub struct PreferredState {
    /// Sum of the weights of terms every node matches.
    base: i64,
    /// Weighted terms to check per node.
    terms: Vec<(i64, Term)>,
}

impl PreferredState {
    fn compile(
        cx: &CycleContext<'_>,
        added: &[PreferredSchedulingTerm],
    ) -> Result<PreferredState, String> {
        let mut st = PreferredState::default();
        let preferred = cx
            .pod()
            .spec
            .affinity
            .as_ref()
            .and_then(|a| a.node_affinity.as_ref())
            .map_or(&[][..], |na| na.preferred.as_slice());
        for p in added.iter().chain(preferred) {
            if p.weight == 0 || is_empty_term(&p.preference) {
                continue;
            }
            match compile_term(&p.preference, cx.snapshot())? {
                Compiled::Term(t) => st.terms.push((i64::from(p.weight), t)),
                Compiled::All => st.base += i64::from(p.weight),
                Compiled::Nothing => {}
            }
        }
        Ok(st)
    }

    fn score(&self, cx: &CycleContext<'_>, node: NodeRef<'_>) -> i64 {
        let interner = cx.snapshot().interner();
        self.base
            + self
                .terms
                .iter()
                .filter(|(_, t)| t.matches(node, interner))
                .map(|(w, _)| *w)
                .sum::<i64>()
    }
}

/// kube's `NodeAffinityPriority` (framework plugin `NodeAffinity`, score part). No argument.
///
/// A node's raw score is the sum of the weights of the pod's preferred node affinity terms it
/// matches (terms with weight 0 or no requirements are ignored), normalized with kube's
/// `DefaultNormalizeScore` to 0..=100 (the best node gets 100). A pod without preferred terms
/// gives every node 0. A preferred term kube cannot parse is an error for the pod, as in kube.
///
/// With [`NodeAffinityPriority::with_added_preferred`] (kube's `NodeAffinityArgs`
/// `addedAffinity` preferred terms), those terms count for every pod as if they were its own.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeAffinityPriority {
    added: Arc<[PreferredSchedulingTerm]>,
}

impl NodeAffinityPriority {
    /// The priority.
    pub fn new() -> Self {
        NodeAffinityPriority::default()
    }

    /// Adds these preferred terms to every pod's (a profile's added affinity).
    #[must_use]
    pub fn with_added_preferred(mut self, terms: Vec<PreferredSchedulingTerm>) -> Self {
        self.added = terms.into();
        self
    }
}

impl Priority for NodeAffinityPriority {
    type State = PreferredState;

    fn name(&self) -> &str {
        "NodeAffinityPriority"
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        _feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        let st = PreferredState::compile(cx, &self.added).map_err(|message| {
            PluginError::new(self.name(), PluginErrorKind::InvalidInput(message))
        })?;
        if st.terms.is_empty() {
            // Every node has the same raw score `base`; normalization maps a positive one to
            // 100 and leaves 0 (or a negative weight sum, which kube never normalizes) as is.
            let c = if st.base > 0 { MAX_NODE_SCORE } else { st.base };
            return Ok(PreparedScore::Constant(c));
        }
        Ok(PreparedScore::Run(st))
    }

    fn score(&self, cx: &CycleContext<'_>, state: &Self::State, node: NodeRef<'_>) -> i64 {
        {
            let st = state;
            st.score(cx, node)
        }
    }

    fn normalize(&self, _cx: &CycleContext<'_>, _state: &Self::State, scores: &mut [i64]) {
        default_normalize(MAX_NODE_SCORE, false, scores);
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::model::{Affinity, NodeAffinity, NodeSelector, Pod, PreferredSchedulingTerm};

    fn req(key: &str, op: NodeSelectorOperator, values: &[&str]) -> NodeSelectorRequirement {
        NodeSelectorRequirement {
            key: key.into(),
            operator: op,
            values: values.iter().map(|s| s.to_string()).collect(),
        }
    }

    fn exprs(reqs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: reqs,
            match_fields: vec![],
        }
    }

    fn fields(reqs: Vec<NodeSelectorRequirement>) -> NodeSelectorTerm {
        NodeSelectorTerm {
            match_expressions: vec![],
            match_fields: reqs,
        }
    }

    fn required(terms: Vec<NodeSelectorTerm>) -> Pod {
        let mut p = pod();
        p.spec.affinity = Some(Affinity {
            node_affinity: Some(NodeAffinity {
                required: Some(NodeSelector {
                    node_selector_terms: terms,
                }),
                preferred: vec![],
            }),
            ..Affinity::default()
        });
        p
    }

    fn selector(pairs: &[(&str, &str)]) -> Pod {
        let mut p = pod();
        p.spec.node_selector = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        p
    }

    fn check(pod: &Pod, name: &str, labels: &[(&str, &str)]) -> bool {
        // A second node makes the label strings of the pod known to the interner even when the
        // tested node lacks them, so both the id path and the "never interned" path are used.
        let snap = snapshot(vec![labeled(name, labels)], vec![]);
        let got = filter(&MatchNodeSelector::new(), pod, &snap, 0);
        if let Err(r) = got {
            // A node a `metadata.name` term leaves out is not filtered (v1.34's
            // PreFilterResult, `affinity_v1_34_tests`).
            assert!(
                matches!(
                    r,
                    Reason::NodeSelectorMismatch | Reason::OutsidePreFilterResult
                ),
                "{r:?}"
            );
        }
        let snap2 = snapshot(
            vec![
                labeled(name, labels),
                labeled(
                    "other",
                    &[
                        ("foo", "bar"),
                        ("GPU", "AMD"),
                        ("zone", "bar"),
                        ("kernel-version", "0206"),
                    ],
                ),
            ],
            vec![],
        );
        let got2 = filter(&MatchNodeSelector::new(), pod, &snap2, 0);
        assert_eq!(
            got.is_ok(),
            got2.is_ok(),
            "interning must not change the answer"
        );
        got.is_ok()
    }

    use NodeSelectorOperator::*;

    /// Name, pod, node name, node labels, whether the node fits.
    type FilterCase<'a> = (&'a str, Pod, &'a str, Vec<(&'a str, &'a str)>, bool);

    // kube: nodeaffinity/node_affinity_test.go TestNodeAffinity (the cases without added
    // affinity, which the legacy policy cannot express).
    #[test]
    fn node_affinity_filter() {
        let cases: Vec<FilterCase<'_>> = vec![
            (
                "missing labels",
                selector(&[("foo", "bar")]),
                "",
                vec![],
                false,
            ),
            (
                "same labels",
                selector(&[("foo", "bar")]),
                "",
                vec![("foo", "bar")],
                true,
            ),
            (
                "node labels are superset",
                selector(&[("foo", "bar")]),
                "",
                vec![("foo", "bar"), ("baz", "blah")],
                true,
            ),
            (
                "node labels are subset",
                selector(&[("foo", "bar"), ("baz", "blah")]),
                "",
                vec![("foo", "bar")],
                false,
            ),
            (
                "Pod with matchExpressions using In operator that matches the existing node",
                required(vec![exprs(vec![req("foo", In, &["bar", "value2"])])]),
                "",
                vec![("foo", "bar")],
                true,
            ),
            (
                "Pod with matchExpressions using Gt operator that matches the existing node",
                required(vec![exprs(vec![req("kernel-version", Gt, &["0204"])])]),
                "",
                vec![("kernel-version", "0206")],
                true,
            ),
            (
                "Pod with matchExpressions using NotIn operator that matches the existing node",
                required(vec![exprs(vec![req("mem-type", NotIn, &["DDR", "DDR2"])])]),
                "",
                vec![("mem-type", "DDR3")],
                true,
            ),
            (
                "Pod with matchExpressions using Exists operator that matches the existing node",
                required(vec![exprs(vec![req("GPU", Exists, &[])])]),
                "",
                vec![("GPU", "NVIDIA-GRID-K1")],
                true,
            ),
            (
                "Pod with affinity that don't match node's labels won't schedule onto the node",
                required(vec![exprs(vec![req("foo", In, &["value1", "value2"])])]),
                "",
                vec![("foo", "bar")],
                false,
            ),
            (
                "Pod with empty MatchExpressions is not a valid value will match no objects",
                required(vec![exprs(vec![])]),
                "",
                vec![("foo", "bar")],
                false,
            ),
            (
                "Pod with no Affinity will schedule onto a node",
                pod(),
                "",
                vec![("foo", "bar")],
                true,
            ),
            (
                "Pod with multiple matchExpressions ANDed that matches the existing node",
                required(vec![exprs(vec![
                    req("GPU", Exists, &[]),
                    req("GPU", NotIn, &["AMD", "INTER"]),
                ])]),
                "",
                vec![("GPU", "NVIDIA-GRID-K1")],
                true,
            ),
            (
                "Pod with multiple matchExpressions ANDed that doesn't match the existing node",
                required(vec![exprs(vec![
                    req("GPU", Exists, &[]),
                    req("GPU", In, &["AMD", "INTER"]),
                ])]),
                "",
                vec![("GPU", "NVIDIA-GRID-K1")],
                false,
            ),
            (
                "Pod with multiple NodeSelectorTerms ORed in affinity, matches the node's labels",
                required(vec![
                    exprs(vec![req("foo", In, &["bar", "value2"])]),
                    exprs(vec![req("diffkey", In, &["wrong", "value2"])]),
                ]),
                "",
                vec![("foo", "bar")],
                true,
            ),
            (
                "Pod with an invalid value in Affinity term won't be scheduled onto the node",
                required(vec![exprs(vec![req(
                    "foo",
                    NotIn,
                    &["invalid value: ___@#$%^"],
                )])]),
                "",
                vec![("foo", "bar")],
                false,
            ),
            (
                "Pod with matchFields using In operator that matches the existing node",
                required(vec![fields(vec![req(NAME_FIELD, In, &["node1"])])]),
                "node1",
                vec![],
                true,
            ),
            (
                "Pod with matchFields using In operator that does not match the existing node",
                required(vec![fields(vec![req(NAME_FIELD, In, &["node1"])])]),
                "node2",
                vec![],
                false,
            ),
            (
                "Pod with two terms: matchFields does not match, but matchExpressions matches",
                required(vec![
                    fields(vec![req(NAME_FIELD, In, &["node1"])]),
                    exprs(vec![req("foo", In, &["bar"])]),
                ]),
                "node2",
                vec![("foo", "bar")],
                true,
            ),
            (
                "Pod with one term: matchFields does not match, but matchExpressions matches",
                required(vec![NodeSelectorTerm {
                    match_expressions: vec![req("foo", In, &["bar"])],
                    match_fields: vec![req(NAME_FIELD, In, &["node1"])],
                }]),
                "node2",
                vec![("foo", "bar")],
                false,
            ),
            (
                "Pod with one term: both matchFields and matchExpressions match",
                required(vec![NodeSelectorTerm {
                    match_expressions: vec![req("foo", In, &["bar"])],
                    match_fields: vec![req(NAME_FIELD, In, &["node1"])],
                }]),
                "node1",
                vec![("foo", "bar")],
                true,
            ),
            (
                "Pod with two terms: both matchFields and matchExpressions do not match",
                required(vec![
                    fields(vec![req(NAME_FIELD, In, &["node1"])]),
                    exprs(vec![req("foo", In, &["not-match-to-bar"])]),
                ]),
                "node2",
                vec![("foo", "bar")],
                false,
            ),
            (
                "Pod with two terms of node.Name affinity",
                required(vec![
                    fields(vec![req(NAME_FIELD, In, &["node1"])]),
                    fields(vec![req(NAME_FIELD, In, &["node2"])]),
                ]),
                "node2",
                vec![],
                true,
            ),
            (
                "Pod with two conflicting mach field requirements",
                required(vec![fields(vec![
                    req(NAME_FIELD, In, &["node1"]),
                    req(NAME_FIELD, In, &["node2"]),
                ])]),
                "node2",
                vec![("foo", "bar")],
                false,
            ),
        ];
        for (name, pod, node_name, labels, want) in cases {
            let node_name = if node_name.is_empty() {
                "machine"
            } else {
                node_name
            };
            assert_eq!(check(&pod, node_name, &labels), want, "{name}");
        }
    }

    #[test]
    fn affinity_with_nil_required_skips() {
        let mut p = pod();
        p.spec.affinity = Some(Affinity {
            node_affinity: Some(NodeAffinity::default()),
            ..Affinity::default()
        });
        let snap = snapshot(vec![labeled("n", &[("foo", "bar")])], vec![]);
        assert!(skips(&MatchNodeSelector::new(), &p, &snap));
        assert!(skips(&MatchNodeSelector::new(), &pod(), &snap));
        // Required with no terms matches nothing.
        assert!(!check(&required(vec![]), "n", &[("foo", "bar")]));
        assert_eq!(
            messages(Reason::NodeSelectorMismatch, &p, &snap, 0),
            vec!["node(s) didn't match Pod's node affinity/selector"]
        );
    }

    // Operators and parse rules of labels.NewRequirement and Requirement.Matches.
    #[test]
    fn operators_follow_kube_labels() {
        let one = |r: NodeSelectorRequirement, labels: &[(&str, &str)]| {
            check(&required(vec![exprs(vec![r])]), "machine", labels)
        };
        // In / NotIn on a missing label.
        assert!(!one(req("foo", In, &["bar"]), &[]));
        assert!(one(req("foo", NotIn, &["bar"]), &[]));
        assert!(!one(req("foo", NotIn, &["bar"]), &[("foo", "bar")]));
        // DoesNotExist.
        assert!(one(req("foo", DoesNotExist, &[]), &[("x", "y")]));
        assert!(!one(req("foo", DoesNotExist, &[]), &[("foo", "")]));
        // Gt/Lt parse the node's value; a non-integer label never matches.
        assert!(one(req("n", Lt, &["10"]), &[("n", "9")]));
        assert!(!one(req("n", Lt, &["10"]), &[("n", "10")]));
        assert!(!one(req("n", Gt, &["10"]), &[("n", "ten")]));
        assert!(one(req("n", Gt, &["1"]), &[("n", "+5")]));
        assert!(one(req("n", Lt, &["1"]), &[("n", "-5")]));
        // A negative bound is not a valid label value, so kube rejects the requirement.
        assert!(!one(req("n", Gt, &["-1"]), &[("n", "5")]));
        assert!(!one(req("n", Gt, &["1"]), &[]));
        // Parse errors make the term match nothing.
        assert!(!one(req("n", Gt, &["1", "2"]), &[("n", "5")]));
        assert!(!one(req("n", Gt, &["x"]), &[("n", "5")]));
        assert!(!one(req("n", In, &[]), &[("n", "5")]));
        assert!(!one(req("n", NotIn, &[]), &[("n", "5")]));
        assert!(!one(req("n", Exists, &["5"]), &[("n", "5")]));
        assert!(!one(req("bad key!", DoesNotExist, &[]), &[]));
        // A bad term does not spoil a good one.
        let p = required(vec![
            exprs(vec![req("n", Gt, &["x"])]),
            exprs(vec![req("n", Exists, &[])]),
        ]);
        assert!(check(&p, "machine", &[("n", "5")]));
        // matchFields: only In/NotIn with one value; other fields read as empty.
        let f = |r: NodeSelectorRequirement| check(&required(vec![fields(vec![r])]), "node1", &[]);
        assert!(f(req(NAME_FIELD, NotIn, &["node2"])));
        assert!(!f(req(NAME_FIELD, NotIn, &["node1"])));
        assert!(!f(req(NAME_FIELD, In, &["node1", "node2"])));
        assert!(!f(req(NAME_FIELD, Exists, &[])));
        assert!(f(req("metadata.namespace", In, &[""])));
        assert!(!f(req("metadata.namespace", In, &["x"])));
        assert!(f(req("metadata.namespace", NotIn, &["x"])));
        // nodeSelector and affinity both apply.
        let mut p = required(vec![exprs(vec![req("foo", Exists, &[])])]);
        p.spec.node_selector = [("foo".to_string(), "bar".to_string())].into();
        assert!(check(&p, "machine", &[("foo", "bar")]));
        assert!(!check(&p, "machine", &[("foo", "barrrrrr")]));
    }

    fn preferred(terms: Vec<(i32, NodeSelectorTerm)>) -> Pod {
        let mut p = pod();
        p.spec.affinity = Some(Affinity {
            node_affinity: Some(NodeAffinity {
                required: None,
                preferred: terms
                    .into_iter()
                    .map(|(weight, preference)| PreferredSchedulingTerm { weight, preference })
                    .collect(),
            }),
            ..Affinity::default()
        });
        p
    }

    // kube: TestNodeAffinityPriority.
    #[test]
    fn node_affinity_priority() {
        let label1: &[(&str, &str)] = &[("foo", "bar")];
        let label2: &[(&str, &str)] = &[("key", "value")];
        let label3: &[(&str, &str)] = &[("az", "az1")];
        let label4: &[(&str, &str)] = &[("abc", "az11"), ("def", "az22")];
        let label5: &[(&str, &str)] = &[("foo", "bar"), ("key", "value"), ("az", "az1")];
        let affinity1 = || preferred(vec![(2, exprs(vec![req("foo", In, &["bar"])]))]);
        let affinity2 = || {
            preferred(vec![
                (2, exprs(vec![req("foo", In, &["bar"])])),
                (4, exprs(vec![req("key", In, &["value"])])),
                (
                    5,
                    exprs(vec![
                        req("foo", In, &["bar"]),
                        req("key", In, &["value"]),
                        req("az", In, &["az1"]),
                    ]),
                ),
            ])
        };
        let nodes = |ls: [&[(&str, &str)]; 3]| {
            snapshot(
                ls.iter()
                    .enumerate()
                    .map(|(i, l)| labeled(&format!("node{i}"), l))
                    .collect(),
                vec![],
            )
        };
        let p = NodeAffinityPriority::new();
        // All nodes are same priority as NodeAffinity is nil.
        let (s, constant) = scores_and_constant(&p, &pod(), &nodes([label1, label2, label3]));
        assert_eq!((s, constant), (vec![0, 0, 0], true));
        // No node matches the preferred scheduling requirements.
        assert_eq!(
            scores(&p, &affinity1(), &nodes([label4, label2, label3])),
            vec![0, 0, 0]
        );
        // Only node1 matches.
        assert_eq!(
            scores(&p, &affinity1(), &nodes([label1, label2, label3])),
            vec![100, 0, 0]
        );
        // All nodes match with different priorities.
        assert_eq!(
            scores(&p, &affinity2(), &nodes([label1, label5, label2])),
            vec![18, 100, 36]
        );
    }

    #[test]
    fn preferred_term_rules() {
        let p = NodeAffinityPriority::new();
        let snap = snapshot(
            vec![labeled("a", &[("foo", "bar")]), labeled("b", &[])],
            vec![],
        );
        // Weight 0 and empty terms are ignored, even when invalid.
        let pod0 = preferred(vec![
            (0, exprs(vec![req("foo", Gt, &["x"])])),
            (5, NodeSelectorTerm::default()),
        ]);
        assert_eq!(scores_and_constant(&p, &pod0, &snap), (vec![0, 0], true));
        // A term that matches every node alone: all get 100.
        let all = preferred(vec![(3, exprs(vec![req("zzz", DoesNotExist, &[])]))]);
        assert_eq!(scores_and_constant(&p, &all, &snap), (vec![100, 100], true));
        // A term matching all nodes still counts towards the raw sum.
        let mixed = preferred(vec![
            (1, exprs(vec![req("zzz", DoesNotExist, &[])])),
            (3, exprs(vec![req("foo", In, &["bar"])])),
        ]);
        assert_eq!(scores(&p, &mixed, &snap), vec![100, 25]);
        // matchFields count in preferred terms.
        let by_name = preferred(vec![(7, fields(vec![req(NAME_FIELD, In, &["b"])]))]);
        assert_eq!(scores(&p, &by_name, &snap), vec![0, 100]);
        // An invalid preferred term is an error for the pod.
        let bad = preferred(vec![(1, exprs(vec![req("foo", Gt, &["x"])]))]);
        let cx = CycleContext::new(&bad, &snap);
        assert!(p.prepare(&cx, &[0, 1]).is_err());
    }
}
