//! Node label presence: CheckNodeLabelPresence and NodeLabelPriority.

use crate::formulas::MAX_NODE_SCORE;
use crate::framework::{
    CycleContext, PluginError, Predicate, Prepared, PreparedScore, Priority, Reason,
};
use crate::snapshot::NodeRef;
use crate::snapshot::{Interner, Sym};

/// kube's `CheckNodeLabelPresence` predicate (framework plugin `NodeLabel`, filter part).
///
/// Argument (legacy policy `labelsPresence`): `labels` and `presence`. With `presence`, the
/// node must have every label key; without, it must have none of them (values do not matter).
/// Failure: "node(s) didn't have the requested labels". [`CheckNodeLabelPresence::from_lists`]
/// takes kube's later `NodeLabelArgs` shape (present and absent lists, both checked), which is
/// how several legacy entries combine.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CheckNodeLabelPresence {
    present: Vec<String>,
    absent: Vec<String>,
}

impl CheckNodeLabelPresence {
    /// The legacy argument: these `labels` must all be present (`presence`) or all absent.
    pub fn new(labels: impl IntoIterator<Item = String>, presence: bool) -> Self {
        let labels: Vec<String> = labels.into_iter().collect();
        if presence {
            Self::from_lists(labels, Vec::new())
        } else {
            Self::from_lists(Vec::new(), labels)
        }
    }

    /// Labels that must be present and labels that must be absent.
    pub fn from_lists(present: Vec<String>, absent: Vec<String>) -> Self {
        CheckNodeLabelPresence { present, absent }
    }
}

/// Per-pod state: the label keys as ids.
#[derive(Debug, Default)]
pub struct PresenceState {
    /// A required label was never interned: no node has it.
    never: bool,
    present: Vec<Sym>,
    absent: Vec<Sym>,
}

impl PresenceState {
    fn of(p: &CheckNodeLabelPresence, interner: &Interner) -> PresenceState {
        let mut st = PresenceState::default();
        for l in &p.present {
            match interner.get(l) {
                Some(k) => st.present.push(k),
                None => st.never = true,
            }
        }
        // A key that was never interned is absent from every node.
        st.absent = p.absent.iter().filter_map(|l| interner.get(l)).collect();
        st
    }

    fn check(&self, node: NodeRef<'_>) -> Result<(), Reason> {
        let labels = node.info().labels();
        if self.never
            || !self.present.iter().all(|&k| labels.contains_key(k))
            || self.absent.iter().any(|&k| labels.contains_key(k))
        {
            Err(Reason::LabelPresenceViolated)
        } else {
            Ok(())
        }
    }
}

impl Predicate for CheckNodeLabelPresence {
    type State = PresenceState;

    fn name(&self) -> &str {
        "CheckNodeLabelPresence"
    }

    fn prepare(&self, cx: &CycleContext<'_>) -> Result<Prepared<Self::State>, PluginError> {
        let st = PresenceState::of(self, cx.snapshot().interner());
        if !st.never && st.present.is_empty() && st.absent.is_empty() {
            return Ok(Prepared::Skip);
        }
        Ok(Prepared::Run(st))
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
}

/// kube's `NodeLabelPriority` (framework plugin `NodeLabel`, score part).
///
/// Argument (legacy policy `labelPreference`): `label` and `presence`. A node scores 100 when
/// it has the label key (`presence`) or lacks it (not `presence`), else 0. No normalization.
/// [`NodeLabelPriority::from_lists`] takes kube's later shape: the score is the average over
/// all listed labels of 100 per satisfied preference (integer division, as kube).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct NodeLabelPriority {
    present: Vec<String>,
    absent: Vec<String>,
}

impl NodeLabelPriority {
    /// The legacy argument: prefer nodes with (`presence`) or without `label`.
    pub fn new(label: impl Into<String>, presence: bool) -> Self {
        let label = vec![label.into()];
        if presence {
            Self::from_lists(label, Vec::new())
        } else {
            Self::from_lists(Vec::new(), label)
        }
    }

    /// Labels preferred present and labels preferred absent.
    pub fn from_lists(present: Vec<String>, absent: Vec<String>) -> Self {
        NodeLabelPriority { present, absent }
    }
}

/// Per-pod state for NodeLabelPriority.
#[derive(Debug, Default)]
pub struct PreferenceState {
    /// Points every node gets (absent-preferred labels no node has).
    base: i64,
    present: Vec<Sym>,
    absent: Vec<Sym>,
    count: i64,
}

impl PreferenceState {
    fn of(p: &NodeLabelPriority, interner: &Interner) -> PreferenceState {
        let mut st = PreferenceState {
            count: (p.present.len() + p.absent.len()) as i64,
            ..PreferenceState::default()
        };
        // Present-preferred labels no node has score 0 everywhere.
        st.present = p.present.iter().filter_map(|l| interner.get(l)).collect();
        for l in &p.absent {
            match interner.get(l) {
                Some(k) => st.absent.push(k),
                None => st.base += MAX_NODE_SCORE,
            }
        }
        st
    }

    fn score(&self, node: NodeRef<'_>) -> i64 {
        if self.count == 0 {
            return 0;
        }
        let labels = node.info().labels();
        let hits = self
            .present
            .iter()
            .filter(|&&k| labels.contains_key(k))
            .count()
            + self
                .absent
                .iter()
                .filter(|&&k| !labels.contains_key(k))
                .count();
        (self.base + hits as i64 * MAX_NODE_SCORE) / self.count
    }
}

impl Priority for NodeLabelPriority {
    type State = PreferenceState;

    fn name(&self) -> &str {
        "NodeLabelPriority"
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        _feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        let st = PreferenceState::of(self, cx.snapshot().interner());
        if st.count == 0 {
            return Ok(PreparedScore::Constant(0));
        }
        if st.present.is_empty() && st.absent.is_empty() {
            return Ok(PreparedScore::Constant(st.base / st.count));
        }
        Ok(PreparedScore::Run(st))
    }

    fn score(&self, _cx: &CycleContext<'_>, state: &Self::State, node: NodeRef<'_>) -> i64 {
        {
            let st = state;
            st.score(node)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    // kube: nodelabel/node_label_test.go TestNodeLabelFilter.
    #[test]
    fn node_label_filter() {
        let snap = snapshot(
            vec![labeled("n", &[("foo", "any value"), ("bar", "any value")])],
            vec![],
        );
        let cases: &[(&str, &[&str], &[&str], bool)] = &[
            ("present label does not match", &["baz"], &[], false),
            ("absent label does not match", &[], &["baz"], true),
            (
                "one of two present labels matches",
                &["foo", "baz"],
                &[],
                false,
            ),
            (
                "one of two absent labels matches",
                &[],
                &["foo", "baz"],
                false,
            ),
            ("all present labels match", &["foo", "bar"], &[], true),
            ("all absent labels match", &[], &["foo", "bar"], false),
            (
                "both present and absent label matches",
                &["foo"],
                &["bar"],
                false,
            ),
            (
                "neither present nor absent label matches",
                &["foz"],
                &["baz"],
                false,
            ),
            (
                "present label matches and absent label doesn't match",
                &["foo"],
                &["baz"],
                true,
            ),
            (
                "present label doesn't match and absent label matches",
                &["foz"],
                &["bar"],
                false,
            ),
            ("no label", &[], &[], true),
        ];
        for (name, present, absent, ok) in cases {
            let p = CheckNodeLabelPresence::from_lists(strings(present), strings(absent));
            let got = filter(&p, &pod(), &snap, 0);
            assert_eq!(got.is_ok(), *ok, "{name}");
            if let Err(r) = got {
                assert_eq!(r, Reason::LabelPresenceViolated);
            }
        }
        assert_eq!(
            messages(Reason::LabelPresenceViolated, &pod(), &snap, 0),
            vec!["node(s) didn't have the requested labels"]
        );
        // The legacy argument shape.
        let p = CheckNodeLabelPresence::new(strings(&["foo", "bar"]), true);
        assert_eq!(filter(&p, &pod(), &snap, 0), Ok(()));
        let p = CheckNodeLabelPresence::new(strings(&["foo"]), false);
        assert_eq!(
            filter(&p, &pod(), &snap, 0),
            Err(Reason::LabelPresenceViolated)
        );
        assert!(skips(
            &CheckNodeLabelPresence::new(vec![], true),
            &pod(),
            &snap
        ));
    }

    // kube: TestNodeLabelScore (node labels foo and bar, empty values).
    #[test]
    fn node_label_score() {
        let snap = snapshot(
            vec![labeled("machine1", &[("foo", ""), ("bar", "")])],
            vec![],
        );
        let cases: &[(&[&str], &[&str], i64)] = &[
            (&["foo"], &[], 100),
            (&["somelabel"], &[], 0),
            (&["foo", "bar"], &[], 100),
            (&["somelabel1", "somelabel2"], &[], 0),
            (&["foo", "somelabel"], &[], 50),
            (&[], &["foo"], 0),
            (&[], &["somelabel"], 100),
            (&[], &["foo", "bar"], 0),
            (&[], &["somelabel1", "somelabel2"], 100),
            (&[], &["foo", "somelabel"], 50),
            (&["foo", "bar"], &["somelabel1", "somelabel2"], 100),
            (&["somelabel1", "somelabel2"], &["foo", "bar"], 0),
            (&["foo", "somelabel"], &["somelabel1", "somelabel2"], 75),
            (&[], &[], 0),
        ];
        for (i, (present, absent, want)) in cases.iter().enumerate() {
            let p = NodeLabelPriority::from_lists(strings(present), strings(absent));
            assert_eq!(scores(&p, &pod(), &snap), vec![*want], "case {i}");
        }
        // The legacy argument shape, on two nodes.
        let snap = snapshot(
            vec![labeled("a", &[("ssd", "")]), labeled("b", &[])],
            vec![],
        );
        assert_eq!(
            scores(&NodeLabelPriority::new("ssd", true), &pod(), &snap),
            vec![100, 0]
        );
        assert_eq!(
            scores(&NodeLabelPriority::new("ssd", false), &pod(), &snap),
            vec![0, 100]
        );
        assert_eq!(
            scores_and_constant(&NodeLabelPriority::new("hdd", false), &pod(), &snap),
            (vec![100, 100], true)
        );
    }

    // kube (legacy): predicates_test.go TestNodeLabelPresence.
    #[test]
    fn legacy_node_label_presence() {
        let snap = snapshot(
            vec![labeled("machine1", &[("foo", "bar"), ("bar", "foo")])],
            vec![],
        );
        let cases: &[(&[&str], bool, bool)] = &[
            (&["baz"], true, false),
            (&["baz"], false, true),
            (&["foo", "baz"], true, false),
            (&["foo", "baz"], false, false),
            (&["foo", "bar"], true, true),
            (&["foo", "bar"], false, false),
        ];
        for (i, (labels, presence, fits)) in cases.iter().enumerate() {
            let p = CheckNodeLabelPresence::new(strings(labels), *presence);
            assert_eq!(filter(&p, &pod(), &snap, 0).is_ok(), *fits, "case {i}");
        }
    }

    // kube (legacy): priorities/node_label_test.go TestNewNodeLabelPriority, on the framework
    // scale (MaxPriority 10 becomes 100).
    #[test]
    fn legacy_node_label_priority() {
        let snap = snapshot(
            vec![
                labeled("machine1", &[("foo", "bar")]),
                labeled("machine2", &[("bar", "foo")]),
                labeled("machine3", &[("bar", "baz")]),
            ],
            vec![],
        );
        let cases: &[(&str, bool, [i64; 3])] = &[
            ("baz", true, [0, 0, 0]),
            ("baz", false, [100, 100, 100]),
            ("foo", true, [100, 0, 0]),
            ("foo", false, [0, 100, 100]),
            ("bar", true, [0, 100, 100]),
            ("bar", false, [100, 0, 0]),
        ];
        for (label, presence, want) in cases {
            let p = NodeLabelPriority::new(*label, *presence);
            assert_eq!(
                scores(&p, &pod(), &snap),
                want.to_vec(),
                "{label} {presence}"
            );
        }
    }
}
