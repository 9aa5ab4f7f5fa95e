//! Taints and tolerations: PodToleratesNodeTaints, TaintTolerationPriority and
//! CheckNodeUnschedulable.

use crate::fast_path::{FastFilter, Sealed};
use crate::formulas::{MAX_NODE_SCORE, default_normalize};
use crate::framework::{
    CycleContext, PluginError, Predicate, Prepared, PreparedScore, Priority, Reason,
};
use crate::model::{Taint, TaintEffect, Toleration};
use crate::snapshot::NodeRef;
use crate::snapshot::flags;

use super::util::{tolerates_all_with_effect, tolerates_parts, tolerations_tolerate};

/// The taint key of cordoned nodes.
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

fn is_hard(effect: TaintEffect) -> bool {
    matches!(effect, TaintEffect::NoSchedule | TaintEffect::NoExecute)
}

/// kube's `PodToleratesNodeTaints` predicate (framework plugin `TaintToleration`, filter
/// part). No argument.
///
/// Every NoSchedule and NoExecute taint of the node must be tolerated by one of the pod's
/// tolerations (kube's `ToleratesTaint`: an empty toleration effect matches every effect, an
/// empty key with `Exists` matches every taint, `Equal` compares values). PreferNoSchedule
/// taints are ignored. The reason code keeps the first untolerated taint; kube v1.20 names it
/// ("node(s) had taint {key: value}, that the pod didn't tolerate"), kube v1.34 does not
/// ("node(s) had untolerated taint(s)"). A pod whose tolerations tolerate every taint skips it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PodToleratesNodeTaints;

impl PodToleratesNodeTaints {
    /// The predicate.
    pub fn new() -> Self {
        PodToleratesNodeTaints
    }
}

/// A taint's index in `spec.taints` as [`Reason::UntoleratedTaint`] keeps it. A node's taints
/// are far fewer than `u32::MAX` (each takes bytes of memory, and the API server caps an
/// object's size), so the conversion never saturates in practice.
fn taint_index(i: usize) -> u32 {
    u32::try_from(i).unwrap_or(u32::MAX)
}

/// Per-pod state: the tolerations that can match a NoSchedule or NoExecute taint.
#[derive(Debug, Default)]
pub struct TaintsState(Vec<Toleration>);

impl TaintsState {
    pub(crate) fn of(tolerations: &[Toleration]) -> TaintsState {
        TaintsState(
            tolerations
                .iter()
                .filter(|t| t.effect.is_none_or(is_hard))
                .cloned()
                .collect(),
        )
    }

    pub(crate) fn check(&self, node: NodeRef<'_>) -> Result<(), Reason> {
        if !node.summary().has(flags::HARD_TAINTS) {
            return Ok(());
        }
        for (i, taint) in node.node().spec.taints.iter().enumerate() {
            if is_hard(taint.effect) && !tolerations_tolerate(&self.0, taint) {
                return Err(Reason::UntoleratedTaint(taint_index(i)));
            }
        }
        Ok(())
    }
}

impl Predicate for PodToleratesNodeTaints {
    type State = TaintsState;

    fn name(&self) -> &str {
        "PodToleratesNodeTaints"
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<Self::State>, PluginError> {
        let tolerations = &cx.pod().spec.tolerations;
        let all = |effect| {
            tolerations
                .iter()
                .any(|t| tolerates_all_with_effect(t, effect))
        };
        // Nothing to check when the pod tolerates every hard taint or no node has one.
        if (all(TaintEffect::NoSchedule) && all(TaintEffect::NoExecute))
            || cx.snapshot().nodes_with_flag(flags::HARD_TAINTS) == 0
        {
            return Ok(Prepared::Skip);
        }
        Ok(Prepared::Run(TaintsState::of(tolerations)))
    }

    fn filter(
        &self,
        _cx: &CycleContext<'_>,
        state: &Self::State,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        {
            let st = state;
            st.check(node)
        }
    }

    fn fast_filter(
        &self,
        _cx: &CycleContext<'_>,
        state: &Self::State,
        _: Sealed,
    ) -> Option<FastFilter> {
        // Without tolerations any NoSchedule/NoExecute taint rejects the node.
        state
            .0
            .is_empty()
            .then(|| FastFilter::without_flags(flags::HARD_TAINTS))
    }

    fn filter_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        nodes: &[u32],
        out: &mut [Result<(), Reason>],
    ) {
        let st = state;
        let snapshot = cx.snapshot();
        let summaries = snapshot.summaries();
        if st.0.is_empty() {
            // No toleration can match a hard taint, so a node's first hard taint is the
            // untolerated one: dense data only, no taint list read.
            let first = snapshot.first_hard_taints();
            for (o, &i) in out.iter_mut().zip(nodes) {
                let i = i as usize;
                *o = if summaries[i].has(flags::HARD_TAINTS) {
                    Err(Reason::UntoleratedTaint(first[i]))
                } else {
                    Ok(())
                };
            }
            return;
        }
        for (o, &i) in out.iter_mut().zip(nodes) {
            // Most nodes have no NoSchedule/NoExecute taint: one flag test, no NodeInfo read.
            *o = if summaries[i as usize].has(flags::HARD_TAINTS) {
                st.check(snapshot.node(i as usize))
            } else {
                Ok(())
            };
        }
    }
}

/// kube's `TaintTolerationPriority` (framework plugin `TaintToleration`, score part). No
/// argument.
///
/// A node's raw score is the number of its PreferNoSchedule taints that none of the pod's
/// tolerations with an empty or PreferNoSchedule effect tolerates; kube's
/// `DefaultNormalizeScore` reversed turns that into 0..=100 (no intolerable taint: 100).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TaintTolerationPriority;

impl TaintTolerationPriority {
    /// The priority.
    pub fn new() -> Self {
        TaintTolerationPriority
    }
}

/// Per-pod state: the tolerations with an empty or PreferNoSchedule effect.
#[derive(Debug, Default)]
pub struct PreferState(Vec<Toleration>);

impl PreferState {
    fn of(tolerations: &[Toleration]) -> PreferState {
        PreferState(
            tolerations
                .iter()
                .filter(|t| t.effect.is_none_or(|e| e == TaintEffect::PreferNoSchedule))
                .cloned()
                .collect(),
        )
    }

    fn count(&self, node: NodeRef<'_>) -> i64 {
        let n = node.summary().prefer_no_schedule_taints;
        if n == 0 || self.0.is_empty() {
            return i64::from(n);
        }
        node.node()
            .spec
            .taints
            .iter()
            .filter(|t: &&Taint| {
                t.effect == TaintEffect::PreferNoSchedule && !tolerations_tolerate(&self.0, t)
            })
            .count() as i64
    }
}

impl Priority for TaintTolerationPriority {
    type State = PreferState;

    fn name(&self) -> &str {
        "TaintTolerationPriority"
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        let tolerations = &cx.pod().spec.tolerations;
        let snapshot = cx.snapshot();
        let summaries = snapshot.summaries();
        let tolerate_all = tolerations
            .iter()
            .any(|t| tolerates_all_with_effect(t, TaintEffect::PreferNoSchedule));
        // The snapshot counts the nodes with soft taints: with none, no feasible node has one
        // and there is no need to look at each.
        let any_soft_taint = snapshot.nodes_with_prefer_no_schedule_taints() > 0
            && feasible.iter().any(|&i| {
                summaries
                    .get(i as usize)
                    .is_some_and(|s| s.prefer_no_schedule_taints > 0)
            });
        if tolerate_all || !any_soft_taint {
            // Every raw score is 0, which the reversed normalization turns into 100.
            return Ok(PreparedScore::Constant(MAX_NODE_SCORE));
        }
        Ok(PreparedScore::Run(PreferState::of(tolerations)))
    }

    fn score(&self, _cx: &CycleContext<'_>, state: &Self::State, node: NodeRef<'_>) -> i64 {
        {
            let st = state;
            st.count(node)
        }
    }

    fn normalize(&self, _cx: &CycleContext<'_>, _state: &Self::State, scores: &mut [i64]) {
        default_normalize(MAX_NODE_SCORE, true, scores);
    }
}

/// kube's `CheckNodeUnschedulable` predicate (framework plugin `NodeUnschedulable`). No
/// argument.
///
/// A node with `spec.unschedulable` fails ("node(s) were unschedulable") unless the pod
/// tolerates the taint `node.kubernetes.io/unschedulable:NoSchedule`, in which case it skips
/// the check.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CheckNodeUnschedulable;

impl CheckNodeUnschedulable {
    /// The predicate.
    pub fn new() -> Self {
        CheckNodeUnschedulable
    }
}

/// Whether the tolerations tolerate `node.kubernetes.io/unschedulable:NoSchedule`.
fn tolerates_unschedulable(tolerations: &[Toleration]) -> bool {
    tolerations
        .iter()
        .any(|t| tolerates_parts(t, TAINT_NODE_UNSCHEDULABLE, "", TaintEffect::NoSchedule))
}

impl Predicate for CheckNodeUnschedulable {
    type State = ();

    fn name(&self) -> &str {
        "CheckNodeUnschedulable"
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<Self::State>, PluginError> {
        // Nothing to check when the pod tolerates cordoned nodes or no node is cordoned.
        if tolerates_unschedulable(&cx.pod().spec.tolerations)
            || cx.snapshot().nodes_with_flag(flags::UNSCHEDULABLE) == 0
        {
            return Ok(Prepared::Skip);
        }
        Ok(Prepared::Run(()))
    }

    fn filter(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        node: NodeRef<'_>,
    ) -> Result<(), Reason> {
        let _ = state;
        if node.summary().has(flags::UNSCHEDULABLE)
            && !tolerates_unschedulable(&cx.pod().spec.tolerations)
        {
            Err(Reason::Unschedulable)
        } else {
            Ok(())
        }
    }

    fn fast_filter(
        &self,
        cx: &CycleContext<'_>,
        _state: &Self::State,
        _: Sealed,
    ) -> Option<FastFilter> {
        Some(if tolerates_unschedulable(&cx.pod().spec.tolerations) {
            FastFilter::ALL
        } else {
            FastFilter::without_flags(flags::UNSCHEDULABLE)
        })
    }

    fn filter_batch(
        &self,
        cx: &CycleContext<'_>,
        _state: &Self::State,
        nodes: &[u32],
        out: &mut [Result<(), Reason>],
    ) {
        if tolerates_unschedulable(&cx.pod().spec.tolerations) {
            out.fill(Ok(()));
            return;
        }
        let summaries = cx.snapshot().summaries();
        for (o, &i) in out.iter_mut().zip(nodes) {
            *o = if summaries[i as usize].has(flags::UNSCHEDULABLE) {
                Err(Reason::Unschedulable)
            } else {
                Ok(())
            };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;
    use crate::model::TolerationOperator;
    use TaintEffect::*;
    use TolerationOperator::*;

    fn tol(
        key: &str,
        op: TolerationOperator,
        value: &str,
        effect: Option<TaintEffect>,
    ) -> Toleration {
        Toleration {
            key: key.into(),
            operator: op,
            value: value.into(),
            effect,
            toleration_seconds: None,
        }
    }

    fn run_filter(
        tolerations: Vec<Toleration>,
        taints: &[(&str, &str, TaintEffect)],
    ) -> Vec<String> {
        let pod = with_tolerations(tolerations);
        let snap = snapshot(vec![tainted("nodeA", taints)], vec![]);
        match filter(&PodToleratesNodeTaints, &pod, &snap, 0) {
            Ok(()) => vec![],
            Err(r) => messages(r, &pod, &snap, 0),
        }
    }

    // kube: tainttoleration/taint_toleration_test.go TestTaintTolerationFilter (the cases of
    // the legacy operators), with the message naming the taint.
    #[test]
    fn taint_toleration_filter() {
        // kube v1.34 names no taint in the message (taint_toleration_test.go wants
        // "node(s) had untolerated taint(s)"); which taint failed is kept in the reason code.
        let fail = |_k: &str, _v: &str| vec!["node(s) had untolerated taint(s)".to_string()];
        assert_eq!(
            run_filter(vec![], &[("dedicated", "user1", NoSchedule)]),
            fail("dedicated", "user1")
        );
        assert!(
            run_filter(
                vec![tol("dedicated", Equal, "user1", Some(NoSchedule))],
                &[("dedicated", "user1", NoSchedule)]
            )
            .is_empty()
        );
        assert_eq!(
            run_filter(
                vec![tol("dedicated", Equal, "user2", Some(NoSchedule))],
                &[("dedicated", "user1", NoSchedule)]
            ),
            fail("dedicated", "user1")
        );
        assert!(
            run_filter(
                vec![tol("foo", Exists, "", Some(NoSchedule))],
                &[("foo", "bar", NoSchedule)]
            )
            .is_empty()
        );
        assert!(
            run_filter(
                vec![
                    tol("dedicated", Equal, "user2", Some(NoSchedule)),
                    tol("foo", Exists, "", Some(NoSchedule))
                ],
                &[
                    ("dedicated", "user2", NoSchedule),
                    ("foo", "bar", NoSchedule)
                ]
            )
            .is_empty()
        );
        assert_eq!(
            run_filter(
                vec![tol("foo", Equal, "bar", Some(PreferNoSchedule))],
                &[("foo", "bar", NoSchedule)]
            ),
            fail("foo", "bar")
        );
        assert!(
            run_filter(
                vec![tol("foo", Equal, "bar", None)],
                &[("foo", "bar", NoSchedule)]
            )
            .is_empty()
        );
        assert!(
            run_filter(
                vec![tol("dedicated", Equal, "user2", Some(NoSchedule))],
                &[("dedicated", "user1", PreferNoSchedule)]
            )
            .is_empty()
        );
        assert!(run_filter(vec![], &[("dedicated", "user1", PreferNoSchedule)]).is_empty());
        // NoExecute taints count too; the first untolerated taint is reported.
        assert_eq!(
            run_filter(
                vec![tol("a", Exists, "", None)],
                &[
                    ("a", "1", NoExecute),
                    ("p", "x", PreferNoSchedule),
                    ("b", "2", NoExecute),
                    ("c", "3", NoSchedule)
                ]
            ),
            fail("b", "2")
        );
    }

    #[test]
    fn filter_skips_when_everything_is_tolerated() {
        let snap = snapshot(vec![tainted("n", &[("a", "b", NoSchedule)])], vec![]);
        let all = with_tolerations(vec![tol("", Exists, "", None)]);
        assert!(skips(&PodToleratesNodeTaints, &all, &snap));
        let both = with_tolerations(vec![
            tol("", Exists, "", Some(NoSchedule)),
            tol("", Exists, "", Some(NoExecute)),
        ]);
        assert!(skips(&PodToleratesNodeTaints, &both, &snap));
        let one = with_tolerations(vec![tol("", Exists, "", Some(NoSchedule))]);
        assert!(!skips(&PodToleratesNodeTaints, &one, &snap));
        assert_eq!(filter(&PodToleratesNodeTaints, &one, &snap, 0), Ok(()));
    }

    #[test]
    fn pod_without_tolerations_fails_on_the_first_hard_taint() {
        let snap = snapshot(
            vec![
                tainted(
                    "n",
                    &[
                        ("p", "x", PreferNoSchedule),
                        ("a", "1", NoExecute),
                        ("b", "2", NoSchedule),
                    ],
                ),
                tainted("m", &[("p", "x", PreferNoSchedule)]),
            ],
            vec![],
        );
        // filter_all also checks filter_batch (the summary-only path for no tolerations) against filter.
        assert_eq!(
            filter_all(&PodToleratesNodeTaints, &pod(), &snap),
            vec![Err(Reason::UntoleratedTaint(1)), Ok(())]
        );
    }

    #[test]
    fn filters_skip_when_no_node_has_what_they_reject() {
        let soft = snapshot(
            vec![
                tainted("n", &[("a", "b", PreferNoSchedule)]),
                labeled("m", &[]),
            ],
            vec![],
        );
        assert!(skips(&PodToleratesNodeTaints, &pod(), &soft));
        assert!(skips(&CheckNodeUnschedulable, &pod(), &soft));
        assert_eq!(
            filter_all(&PodToleratesNodeTaints, &pod(), &soft),
            vec![Ok(()), Ok(())]
        );
        assert_eq!(
            filter_all(&CheckNodeUnschedulable, &pod(), &soft),
            vec![Ok(()), Ok(())]
        );
    }

    // kube: TestTaintTolerationScore.
    #[test]
    fn taint_toleration_score() {
        let p = TaintTolerationPriority;
        let run = |tolerations: Vec<Toleration>, nodes: Vec<crate::model::Node>| {
            scores(&p, &with_tolerations(tolerations), &snapshot(nodes, vec![]))
        };
        // Node with taints tolerated by the pod gets a higher score.
        assert_eq!(
            run(
                vec![tol("foo", Equal, "bar", Some(PreferNoSchedule))],
                vec![
                    tainted("nodeA", &[("foo", "bar", PreferNoSchedule)]),
                    tainted("nodeB", &[("foo", "blah", PreferNoSchedule)]),
                ]
            ),
            vec![100, 0]
        );
        // The count of tolerated taints does not matter.
        assert_eq!(
            run(
                vec![
                    tol("cpu-type", Equal, "arm64", Some(PreferNoSchedule)),
                    tol("disk-type", Equal, "ssd", Some(PreferNoSchedule)),
                ],
                vec![
                    tainted("nodeA", &[]),
                    tainted("nodeB", &[("cpu-type", "arm64", PreferNoSchedule)]),
                    tainted(
                        "nodeC",
                        &[
                            ("cpu-type", "arm64", PreferNoSchedule),
                            ("disk-type", "ssd", PreferNoSchedule)
                        ]
                    ),
                ]
            ),
            vec![100, 100, 100]
        );
        // The more intolerable taints, the lower the score.
        assert_eq!(
            run(
                vec![tol("foo", Equal, "bar", Some(PreferNoSchedule))],
                vec![
                    tainted("nodeA", &[]),
                    tainted("nodeB", &[("cpu-type", "arm64", PreferNoSchedule)]),
                    tainted(
                        "nodeC",
                        &[
                            ("cpu-type", "arm64", PreferNoSchedule),
                            ("disk-type", "ssd", PreferNoSchedule)
                        ]
                    ),
                ]
            ),
            vec![100, 50, 0]
        );
        // Only PreferNoSchedule taints and tolerations count.
        assert_eq!(
            run(
                vec![
                    tol("cpu-type", Equal, "arm64", Some(NoSchedule)),
                    tol("disk-type", Equal, "ssd", Some(NoSchedule)),
                ],
                vec![
                    tainted("nodeA", &[]),
                    tainted("nodeB", &[("cpu-type", "arm64", NoSchedule)]),
                    tainted(
                        "nodeC",
                        &[
                            ("cpu-type", "arm64", PreferNoSchedule),
                            ("disk-type", "ssd", PreferNoSchedule)
                        ]
                    ),
                ]
            ),
            vec![100, 100, 0]
        );
        // Default: no taints and tolerations.
        assert_eq!(
            run(
                vec![],
                vec![
                    tainted("nodeA", &[]),
                    tainted("nodeB", &[("cpu-type", "arm64", PreferNoSchedule)])
                ]
            ),
            vec![100, 0]
        );
    }

    #[test]
    fn score_is_constant_when_exactly_equivalent() {
        let p = TaintTolerationPriority;
        let snap = snapshot(
            vec![
                tainted("a", &[("x", "y", NoSchedule)]),
                tainted("b", &[("p", "q", PreferNoSchedule)]),
            ],
            vec![],
        );
        // No feasible node with a PreferNoSchedule taint.
        let plain = pod();
        let cx = CycleContext::new(&plain, &snap);
        assert!(matches!(
            p.prepare(&cx, &[0]).unwrap(),
            PreparedScore::Constant(100)
        ));
        assert!(matches!(
            p.prepare(&cx, &[0, 1]).unwrap(),
            PreparedScore::Run(_)
        ));
        // A toleration of everything.
        let all = with_tolerations(vec![tol("", Exists, "", Some(PreferNoSchedule))]);
        assert_eq!(scores_and_constant(&p, &all, &snap), (vec![100, 100], true));
        // Same answers without the shortcut.
        let st = PreferState::of(&all.spec.tolerations);
        let cx = CycleContext::new(&all, &snap);
        let mut raw: Vec<i64> = (0..2).map(|i| p.score(&cx, &st, snap.node(i))).collect();
        p.normalize(&cx, &st, &mut raw);
        assert_eq!(raw, vec![100, 100]);
    }

    // kube: nodeunschedulable/node_unschedulable_test.go TestNodeUnschedulable.
    #[test]
    fn node_unschedulable() {
        let mut cordoned = node("a");
        cordoned.spec.unschedulable = true;
        let snap = snapshot(vec![cordoned, node("b")], vec![]);
        let p = CheckNodeUnschedulable;
        assert_eq!(
            filter_all(&p, &pod(), &snap),
            vec![Err(Reason::Unschedulable), Ok(())]
        );
        assert_eq!(
            messages(Reason::Unschedulable, &pod(), &snap, 0),
            vec!["node(s) were unschedulable"]
        );
        let tolerant = with_tolerations(vec![tol(
            TAINT_NODE_UNSCHEDULABLE,
            Equal,
            "",
            Some(NoSchedule),
        )]);
        assert!(skips(&p, &tolerant, &snap));
        let exists = with_tolerations(vec![tol(TAINT_NODE_UNSCHEDULABLE, Exists, "", None)]);
        assert!(skips(&p, &exists, &snap));
        let wrong_effect = with_tolerations(vec![tol(
            TAINT_NODE_UNSCHEDULABLE,
            Exists,
            "",
            Some(NoExecute),
        )]);
        assert_eq!(
            filter(&p, &wrong_effect, &snap, 0),
            Err(Reason::Unschedulable)
        );
    }
}
