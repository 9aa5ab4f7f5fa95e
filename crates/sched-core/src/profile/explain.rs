//! Explanations: [`FitError`] (every rejected node's reasons and kube's summary line) and
//! [`ScoreTable`] (the scores of the last cycle).

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use super::Profile;
use super::cache::Cache;
use crate::framework::{CycleContext, ErasedState, KubeVersion, Prepared, Reason};
use crate::model::{Node, PodKey, Resources};

/// One rejected node and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NodeFailure {
    /// Node name.
    pub node: String,
    /// Failed predicates with their codes (the first only, unless alwaysCheckAllPredicates).
    pub codes: Vec<(String, Reason)>,
    /// kube's messages for those codes.
    pub messages: Vec<String>,
}

/// No node can take the pod: every node's reasons, and kube's summary as `Display`
/// ("0/5 nodes are available: 2 node(s) had untolerated taint(s), 3 Insufficient cpu.").
///
/// A profile's cycle records each rejected node compactly (the node, the predicate and its
/// reason); the [`NodeFailure`]s with their names and messages are built the first time
/// [`FitError::failures`] is read, and the summary counts the messages without building them.
///
/// ```
/// use sched_core::profile::{FitError, NodeFailure};
/// let error = FitError::new("ns/p", 2, vec![NodeFailure {
///     node: "n1".into(),
///     codes: vec![],
///     messages: vec!["Too many pods".into()],
/// }]);
/// assert_eq!(error.failures().len(), 1);
/// assert_eq!(error.to_string(), "0/2 nodes are available: 1 Too many pods.");
/// ```
#[derive(Clone)]
pub struct FitError {
    /// `namespace/name` of the pod.
    pub pod: PodKey,
    /// Number of nodes in the snapshot.
    pub num_all_nodes: usize,
    failures: Failures,
    /// When a predicate rejected the pod as a whole before any node was filtered
    /// ([`Prepared::Reject`](crate::framework::Prepared::Reject), kube v1.34's
    /// `Diagnosis.PreFilterMsg`): its message, which the summary prints alone ("0/3 nodes are
    /// available: pod has unbound immediate PersistentVolumeClaims."); every node of
    /// the failures has it as its reason. `None` otherwise, and in v1.20 profiles, whose
    /// summary counts it on every node.
    pub pre_filter_message: Option<String>,
    /// What the PostFilter plugins said (kube v1.34's `Diagnosis.PostFilterMsg`: for a pod that
    /// may not preempt or for which preemption found no node, "preemption: ..."), which the
    /// summary prints after the reasons. `None` when no PostFilter plugin ran (a profile alone
    /// runs none; the scheduling engine sets it for v1.34 profiles).
    pub post_filter_message: Option<String>,
}

/// The rejected nodes: built, or recorded compactly and built on first read.
#[derive(Clone)]
enum Failures {
    Built(Vec<NodeFailure>),
    Lazy(Arc<Compact>),
}

/// Each rejected node with the one predicate (index) that rejected it and its reason, and
/// what building their messages reads.
/// What [`FitError::for_each_node_object`] calls per rejected node: its name, the node
/// object when the error kept it, and its reasons.
pub(crate) type NodeVisitor<'a> =
    dyn FnMut(&str, Option<&Node>, &mut dyn Iterator<Item = &Reason>) + 'a;

struct Compact {
    nodes: Vec<(Arc<Node>, u16, Reason)>,
    /// Predicate names by index.
    names: Vec<String>,
    /// Messages of the predicates' own reason codes, by (predicate, code).
    custom: Vec<(u16, u32, String)>,
    version: KubeVersion,
    requests: Resources,
    built: OnceLock<Vec<NodeFailure>>,
}

impl Compact {
    /// kube's messages for node `i`'s reason.
    fn messages(&self, i: usize, out: &mut dyn FnMut(Cow<'_, str>)) {
        let (node, pi, reason) = &self.nodes[i];
        match reason {
            Reason::Custom(code) => {
                if let Some((_, _, m)) = self.custom.iter().find(|(p, c, _)| p == pi && c == code) {
                    out(Cow::Borrowed(m.as_str()));
                }
            }
            _ => reason.write_messages(self.version, &self.requests, node, &mut |m| out(m)),
        }
    }

    fn build(&self) -> Vec<NodeFailure> {
        (0..self.nodes.len())
            .map(|i| {
                let (node, pi, reason) = &self.nodes[i];
                let mut messages = Vec::new();
                self.messages(i, &mut |m| messages.push(m.into_owned()));
                NodeFailure {
                    node: node.metadata.name.clone(),
                    codes: vec![(self.names[*pi as usize].clone(), *reason)],
                    messages,
                }
            })
            .collect()
    }
}

impl FitError {
    /// The pod `pod` (`namespace/name`) fits none of the `num_all_nodes` nodes, rejected as
    /// `failures` say (in snapshot order); no PreFilter or PostFilter message.
    pub fn new(pod: impl Into<PodKey>, num_all_nodes: usize, failures: Vec<NodeFailure>) -> Self {
        FitError {
            pod: pod.into(),
            num_all_nodes,
            failures: Failures::Built(failures),
            pre_filter_message: None,
            post_filter_message: None,
        }
    }

    /// Each rejected node, in snapshot order.
    pub fn failures(&self) -> &[NodeFailure] {
        match &self.failures {
            Failures::Built(f) => f,
            Failures::Lazy(c) => c.built.get_or_init(|| c.build()),
        }
    }

    /// The rejected nodes, to change.
    pub fn failures_mut(&mut self) -> &mut Vec<NodeFailure> {
        if let Failures::Lazy(c) = &self.failures {
            let built = match c.built.get() {
                Some(b) => b.clone(),
                None => c.build(),
            };
            self.failures = Failures::Built(built);
        }
        match &mut self.failures {
            Failures::Built(f) => f,
            Failures::Lazy(_) => unreachable!("built above"),
        }
    }

    /// How many nodes rejected the pod.
    pub fn num_failures(&self) -> usize {
        match &self.failures {
            Failures::Built(f) => f.len(),
            Failures::Lazy(c) => c.nodes.len(),
        }
    }

    /// Calls `f` with each rejected node's name and its reasons, in snapshot order, without
    /// building the failures.
    pub fn for_each_node(&self, f: &mut dyn FnMut(&str, &mut dyn Iterator<Item = &Reason>)) {
        self.for_each_node_object(&mut |name, _, reasons| f(name, reasons));
    }

    /// [`FitError::for_each_node`], also with the node object the cycle rejected when the
    /// error kept it (the snapshot's own, which a caller can find by address).
    pub(crate) fn for_each_node_object(&self, f: &mut NodeVisitor<'_>) {
        match &self.failures {
            Failures::Built(all) => {
                for n in all {
                    f(&n.node, None, &mut n.codes.iter().map(|(_, r)| r));
                }
            }
            Failures::Lazy(c) => {
                for (node, _, reason) in &c.nodes {
                    f(
                        &node.metadata.name,
                        Some(node),
                        &mut std::iter::once(reason),
                    );
                }
            }
        }
    }

    /// Count of nodes per message, sorted as kube sorts the summary ("N message" as strings).
    pub fn histogram(&self) -> Vec<(usize, String)> {
        let mut counts: BTreeMap<Cow<'_, str>, usize> = BTreeMap::new();
        match &self.failures {
            Failures::Built(all) => {
                for f in all {
                    for m in &f.messages {
                        *counts.entry(Cow::Borrowed(m.as_str())).or_default() += 1;
                    }
                }
            }
            Failures::Lazy(c) => {
                for i in 0..c.nodes.len() {
                    c.messages(i, &mut |m| match counts.get_mut(m.as_ref()) {
                        Some(n) => *n += 1,
                        None => {
                            counts.insert(Cow::Owned(m.into_owned()), 1);
                        }
                    });
                }
            }
        }
        let mut out: Vec<(String, usize, String)> = counts
            .into_iter()
            .map(|(m, n)| (format!("{n} {m}"), n, m.into_owned()))
            .collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.into_iter().map(|(_, n, m)| (n, m)).collect()
    }
}

impl fmt::Debug for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FitError")
            .field("pod", &self.pod)
            .field("num_all_nodes", &self.num_all_nodes)
            .field("failures", &self.failures())
            .field("pre_filter_message", &self.pre_filter_message)
            .field("post_filter_message", &self.post_filter_message)
            .finish()
    }
}

impl PartialEq for FitError {
    fn eq(&self, other: &Self) -> bool {
        self.pod == other.pod
            && self.num_all_nodes == other.num_all_nodes
            && self.pre_filter_message == other.pre_filter_message
            && self.post_filter_message == other.post_filter_message
            && self.failures() == other.failures()
    }
}

impl Eq for FitError {}

impl fmt::Display for FitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0/{} nodes are available", self.num_all_nodes)?;
        if let Some(m) = &self.pre_filter_message {
            write!(f, ": {m}.")?;
        } else {
            let h = self.histogram();
            if !h.is_empty() {
                f.write_str(": ")?;
                for (i, (n, m)) in h.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{n} {m}")?;
                }
            }
            f.write_str(".")?;
        }
        match self.post_filter_message.as_deref() {
            Some(m) if !m.is_empty() => write!(f, " {m}"),
            _ => Ok(()),
        }
    }
}

impl std::error::Error for FitError {}

/// A view of the scores of the last successful cycle.
#[derive(Debug)]
pub struct ScoreTable<'a> {
    feasible: &'a [u32],
    table: &'a [i64],
    totals: &'a [i64],
    constants: &'a [Option<i64>],
    constant_total: i64,
    names: Vec<(&'a str, i64)>,
}

impl<'a> ScoreTable<'a> {
    pub(super) fn new(
        feasible: &'a [u32],
        table: &'a [i64],
        totals: &'a [i64],
        constants: &'a [Option<i64>],
        constant_total: i64,
        names: Vec<(&'a str, i64)>,
    ) -> ScoreTable<'a> {
        ScoreTable {
            feasible,
            table,
            totals,
            constants,
            constant_total,
            names,
        }
    }

    /// Priority names and weights, in pipeline order.
    pub fn priorities(&self) -> &[(&'a str, i64)] {
        &self.names
    }

    /// Number of scored nodes.
    pub fn len(&self) -> usize {
        self.feasible.len()
    }

    /// Whether no node was scored.
    pub fn is_empty(&self) -> bool {
        self.feasible.is_empty()
    }

    /// Whether priorities ran (they do not when exactly one node fits, as in kube).
    pub fn scored(&self) -> bool {
        !self.table.is_empty()
    }

    /// The `i`-th feasible node: snapshot index, weighted total, and each priority's normalized
    /// (unweighted) score in pipeline order (empty when scoring was skipped).
    pub fn row(&self, i: usize) -> (usize, i64, Vec<i64>) {
        let n = self.feasible.len();
        let per = if self.scored() {
            (0..self.names.len())
                .map(|p| {
                    self.constants
                        .get(p)
                        .copied()
                        .flatten()
                        .unwrap_or(self.table[p * n + i])
                })
                .collect()
        } else {
            Vec::new()
        };
        (
            self.feasible[i] as usize,
            self.totals[i] + self.constant_total,
            per,
        )
    }
}

impl Profile {
    /// The feasible nodes and scores of the last successful cycle run with `cache`.
    pub fn last_scores<'a>(&'a self, cache: &'a Cache) -> ScoreTable<'a> {
        let s = &cache.scratch;
        ScoreTable::new(
            &s.feasible,
            &s.table,
            &s.totals,
            &s.constants,
            s.constant_total,
            self.priorities
                .iter()
                .map(|(p, w)| (p.name(), *w))
                .collect(),
        )
    }

    /// The snapshot indices of the nodes the last cycle run with `cache` evaluated (kube's
    /// processed nodes: the feasible ones it kept and those its filters rejected, which
    /// decide where the next cycle starts), ascending. None when PreFilter rejected the pod.
    pub fn last_evaluated(&self, cache: &Cache) -> Vec<usize> {
        let s = &cache.scratch;
        let mut nodes: Vec<usize> = s
            .feasible
            .iter()
            .map(|&i| i as usize)
            .chain(s.failures.iter().map(|f| f.0 as usize))
            .collect();
        nodes.sort_unstable();
        nodes.dedup();
        nodes
    }

    /// The node at `index` rejected for `codes` (predicate indices and reasons), with kube's
    /// messages for them.
    fn node_failure(
        &self,
        cx: &CycleContext<'_>,
        index: usize,
        codes: &[(usize, Reason)],
    ) -> NodeFailure {
        let node_ref = cx.snapshot().node(index);
        let mut messages = Vec::new();
        for (i, r) in codes {
            match r {
                Reason::Custom(code) => {
                    messages.push(self.predicates[*i].explain(*code).into_owned())
                }
                _ => r.write_messages(
                    self.version,
                    cx.requests(),
                    node_ref.node(),
                    &mut |m: Cow<'static, str>| messages.push(m.into_owned()),
                ),
            }
        }
        NodeFailure {
            node: node_ref.info().name().to_string(),
            codes: codes
                .iter()
                .map(|(i, r)| (self.predicates[*i].name().to_string(), *r))
                .collect(),
            messages,
        }
    }

    /// `pod` rejected on the node at `index` of `snapshot` for `codes` (what
    /// [`Profile::fits_on_indexed`] returned), explained as a [`FitError`] explains a node.
    pub(crate) fn explain_node(
        &self,
        pod: &crate::model::Pod,
        snapshot: &crate::snapshot::Snapshot,
        index: usize,
        codes: &[(u16, Reason)],
    ) -> NodeFailure {
        let cx = CycleContext::for_version(pod, snapshot, self.version);
        let codes: Vec<(usize, Reason)> = codes.iter().map(|&(i, r)| (i as usize, r)).collect();
        self.node_failure(&cx, index, &codes)
    }

    pub(super) fn fit_error(&self, cache: &Cache, cx: &CycleContext<'_>) -> FitError {
        let snapshot = cx.snapshot();
        let mut failures: Vec<(u32, u16, Reason)> = cache.scratch.failures.clone();
        failures.sort_by_key(|f| f.0);
        let outside = self.outside_failures(cache, cx);
        if !self.always_check_all_predicates && outside.is_empty() {
            // One reason per node: recorded as it is, explained when read.
            let mut custom: Vec<(u16, u32, String)> = Vec::new();
            for &(_, pi, reason) in &failures {
                if let Reason::Custom(code) = reason
                    && !custom.iter().any(|(p, c, _)| *p == pi && *c == code)
                {
                    let m = self.predicates[pi as usize].explain(code).into_owned();
                    custom.push((pi, code, m));
                }
            }
            let nodes = failures
                .into_iter()
                .map(|(idx, pi, reason)| {
                    (
                        Arc::clone(snapshot.node_infos()[idx as usize].node_arc()),
                        pi,
                        reason,
                    )
                })
                .collect();
            return FitError {
                pod: cx.pod().key(),
                num_all_nodes: snapshot.len(),
                failures: Failures::Lazy(Arc::new(Compact {
                    nodes,
                    names: self
                        .predicates
                        .iter()
                        .map(|p| p.name().to_string())
                        .collect(),
                    custom,
                    version: self.version,
                    requests: cx.requests().clone(),
                    built: OnceLock::new(),
                })),
                pre_filter_message: None,
                post_filter_message: None,
            };
        }
        let mut prepared: Vec<Option<ErasedState>> = Vec::new();
        if self.always_check_all_predicates {
            for p in &self.predicates {
                prepared.push(match p.prepare(cx) {
                    // The failures filtered are in every narrowed set.
                    Ok(Prepared::Run(s) | Prepared::RunOn(s, _)) => Some(s),
                    _ => None,
                });
            }
        }
        let failures = failures.into_iter().map(|(idx, pi, reason)| {
            let node_ref = snapshot.node(idx as usize);
            let mut codes: Vec<(usize, Reason)> = vec![(pi as usize, reason)];
            if self.always_check_all_predicates {
                codes.clear();
                for (i, p) in self.predicates.iter().enumerate() {
                    if let Some(state) = &prepared[i]
                        && let Err(r) = p.filter(cx, state, node_ref)
                    {
                        codes.push((i, r));
                    }
                }
                if codes.is_empty() {
                    // Blocked by the pods nominated there: the recorded reason stands.
                    codes.push((pi as usize, reason));
                }
            }
            (idx, self.node_failure(cx, idx as usize, &codes))
        });
        // The nodes a predicate's narrowed set left out join them in snapshot order.
        let mut failures: Vec<(u32, NodeFailure)> = failures.collect();
        if !outside.is_empty() {
            failures.extend(outside);
            failures.sort_by_key(|(i, _)| *i);
        }
        FitError::new(
            cx.pod().key(),
            snapshot.len(),
            failures.into_iter().map(|(_, f)| f).collect(),
        )
    }
}
