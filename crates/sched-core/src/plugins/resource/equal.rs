//! `EqualPriority`.

use crate::framework::{CycleContext, PluginError, PreparedScore, Priority};
use crate::snapshot::NodeRef;

/// `EqualPriority`: every node scores 1.
///
/// kube's `EqualPriorityMap` returned `Score: 1` for every node, and kept returning 1 when the
/// priority scale moved from 0..10 to the framework's 0..100 (it was never rescaled); since
/// 1.18 kube-scheduler gives every node the same 1 when no score plugin is configured. So the
/// framework-scale value is 1, not 10 or 100. Being the same for every node it never changes
/// which node wins; it only adds `weight` to every total. No argument.
#[derive(Clone, Copy, Debug, Default)]
pub struct EqualPriority;

impl EqualPriority {
    /// The legacy Policy name.
    pub const NAME: &'static str = "EqualPriority";

    /// The score every node gets.
    pub const SCORE: i64 = 1;

    /// The priority.
    pub fn new() -> EqualPriority {
        EqualPriority
    }
}

impl Priority for EqualPriority {
    type State = ();

    fn name(&self) -> &str {
        Self::NAME
    }

    fn prepare(
        &self,
        _cx: &CycleContext<'_>,
        _feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        Ok(PreparedScore::Constant(Self::SCORE))
    }

    fn score(&self, _cx: &CycleContext<'_>, _state: &Self::State, _node: NodeRef<'_>) -> i64 {
        Self::SCORE
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::plugins::resource::testutil::*;

    #[test]
    fn every_node_scores_one() {
        let got = run(
            &EqualPriority::new(),
            &pod_on("", vec![container(&[("cpu", "1")])]),
            vec![node("a", 1000, 10), node("b", 0, 0), node("c", 5, 5)],
            vec![],
        );
        assert_eq!(got, vec![1, 1, 1]);
        assert_eq!(EqualPriority.name(), "EqualPriority");
    }
}
