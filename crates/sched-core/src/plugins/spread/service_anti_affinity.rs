//! The legacy ServiceAntiAffinity priority (kube's `CalculateAntiAffinityPriorityMap/Reduce`).

use std::collections::HashMap;

use super::selector_spread::pod_services;
use crate::formulas::MAX_NODE_SCORE;
use crate::framework::{CycleContext, PluginError, PreparedScore, Priority};
use crate::plugins::interpod::selector::CompiledSelector;
use crate::snapshot::NodeRef;
use crate::snapshot::Sym;

/// Legacy priority `ServiceAntiAffinity`, from a policy priority with the argument
/// `{"serviceAntiAffinity": {"label": "<node label>"}}`: spreads the pods of the pod's first
/// Service across the values of a node label.
///
/// Raw score: the pods of the pod's namespace on the node selected by the first Service (in
/// snapshot order) that selects the pod; 0 without such a Service. Normalized over the feasible
/// nodes: with `total` the sum of the raw scores and `count(v)` the sum over the feasible nodes
/// whose label has value `v`, a node with the label scores
/// `int64(100 * float(total - count(v)) / float(total))` (100 when `total` is 0) and a node
/// without the label scores 0.
#[derive(Clone, Debug)]
pub struct ServiceAntiAffinity {
    name: String,
    label: String,
}

impl ServiceAntiAffinity {
    /// The priority spreading over the values of node label `label`, named
    /// `ServiceAntiAffinity`.
    pub fn new(label: impl Into<String>) -> Self {
        ServiceAntiAffinity {
            name: "ServiceAntiAffinity".to_string(),
            label: label.into(),
        }
    }

    /// Uses another name (a policy names each custom priority).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The node label spread over.
    pub fn label(&self) -> &str {
        &self.label
    }
}

/// Per-pod state.
#[derive(Debug, Default)]
pub struct State {
    /// The first Service's selector, if a Service selects the pod.
    selector: Option<CompiledSelector>,
    namespace: String,
    label: Sym,
    feasible: Vec<u32>,
}

impl Priority for ServiceAntiAffinity {
    type State = State;

    fn name(&self) -> &str {
        &self.name
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        let snapshot = cx.snapshot();
        let interner = snapshot.interner();
        let Some(label) = interner.get(&self.label) else {
            // No node has the label: every node scores 0.
            return Ok(PreparedScore::Constant(0));
        };
        let selector = pod_services(cx.pod(), snapshot.workloads())
            .next()
            .map(|s| CompiledSelector::from_map(&s.selector.match_labels, interner));
        Ok(PreparedScore::Run(State {
            selector,
            namespace: cx.pod().metadata.namespace.clone(),
            label,
            feasible: feasible.to_vec(),
        }))
    }

    fn score(&self, _cx: &CycleContext<'_>, state: &Self::State, node: NodeRef<'_>) -> i64 {
        let st = state;
        let Some(sel) = st.selector.as_ref().filter(|s| !s.is_empty()) else {
            return 0;
        };
        node.info()
            .pods()
            .iter()
            .filter(|p| p.pod().metadata.namespace == st.namespace && sel.matches(p.labels()))
            .count() as i64
    }

    fn normalize(&self, cx: &CycleContext<'_>, state: &Self::State, scores: &mut [i64]) {
        let st = state;
        let infos = cx.snapshot().node_infos();
        let values: Vec<Option<Sym>> = (0..scores.len())
            .map(|i| {
                st.feasible
                    .get(i)
                    .and_then(|&n| infos.get(n as usize))
                    .and_then(|info| info.labels().get(st.label))
            })
            .collect();
        let mut total = 0i64;
        let mut per_value: HashMap<Sym, i64> = HashMap::new();
        for (s, v) in scores.iter().zip(&values) {
            total += *s;
            if let Some(v) = v {
                *per_value.entry(*v).or_insert(0) += *s;
            }
        }
        let max = MAX_NODE_SCORE as f64;
        for (s, v) in scores.iter_mut().zip(&values) {
            let Some(v) = v else {
                *s = 0;
                continue;
            };
            let mut f = max;
            if total > 0 {
                let count = per_value.get(v).copied().unwrap_or(0);
                f = max * ((total - count) as f64 / total as f64);
            }
            // kube divides by the number of labels, which the policy API fixes to one.
            *s = (f / 1.0) as i64;
        }
    }
}
