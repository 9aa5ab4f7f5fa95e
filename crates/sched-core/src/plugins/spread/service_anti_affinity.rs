//! The legacy ServiceAntiAffinity priority (kube's `CalculateAntiAffinityPriorityMap/Reduce`).

use std::collections::HashMap;

use super::selector_spread::pod_services;
use crate::formulas::MAX_NODE_SCORE;
use crate::framework::{CycleContext, PluginError, PreparedScore, Priority};
use crate::plugins::interpod::selector::CompiledSelector;
use crate::snapshot::NodeRef;
use crate::snapshot::Sym;

/// Legacy priority `ServiceAntiAffinity` (kube's ServiceAffinity score plugin), from the
/// policy priorities with the argument `{"serviceAntiAffinity": {"label": "<node label>"}}`:
/// spreads the pods of the pod's first Service across the values of node labels.
///
/// Raw score: the pods of the pod's namespace on the node selected by the first Service (in
/// snapshot order) that selects the pod, pods being deleted left out; 0 without such a
/// Service. Normalized over the feasible nodes, per label: with `total` the sum of the raw
/// scores and `count(v)` the sum over the feasible nodes whose label has value `v`, a node with
/// the label gets `100 * float(total - count(v)) / float(total)` (100 when `total` is 0) and a
/// node without it 0; the node's score is the float sum over the labels of those values
/// divided by the number of labels, truncated to an integer (kube runs every
/// `serviceAntiAffinity` priority of a Policy as one plugin over all their labels, weight
/// n x w).
#[derive(Clone, Debug)]
pub struct ServiceAntiAffinity {
    name: String,
    labels: Vec<String>,
}

impl ServiceAntiAffinity {
    /// The priority spreading over the values of node label `label`, named
    /// `ServiceAntiAffinity`.
    pub fn new(label: impl Into<String>) -> Self {
        ServiceAntiAffinity::over_labels(vec![label.into()])
    }

    /// The priority spreading over the values of each of these node labels, averaged.
    pub fn over_labels(labels: Vec<String>) -> Self {
        ServiceAntiAffinity {
            name: "ServiceAntiAffinity".to_string(),
            labels,
        }
    }

    /// Uses another name.
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The node labels spread over.
    pub fn labels(&self) -> &[String] {
        &self.labels
    }
}

/// Per-pod state.
#[derive(Debug, Default)]
pub struct State {
    /// The first Service's selector, if a Service selects the pod.
    selector: Option<CompiledSelector>,
    namespace: String,
    /// The labels' ids (`None`: no node has the label).
    labels: Vec<Option<Sym>>,
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
        let labels: Vec<Option<Sym>> = self.labels.iter().map(|l| interner.get(l)).collect();
        if labels.iter().all(Option::is_none) {
            // No node has any of the labels: every node scores 0.
            return Ok(PreparedScore::Constant(0));
        }
        let selector = pod_services(cx.pod(), snapshot.workloads())
            .next()
            .map(|s| CompiledSelector::from_map(&s.selector.match_labels, interner));
        Ok(PreparedScore::Run(State {
            selector,
            namespace: cx.pod().metadata.namespace.clone(),
            labels,
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
            .filter(|p| {
                let pod = p.pod();
                pod.metadata.namespace == st.namespace
                    && !pod.is_terminating()
                    && sel.matches(p.labels())
            })
            .count() as i64
    }

    fn normalize(&self, cx: &CycleContext<'_>, state: &Self::State, scores: &mut [i64]) {
        let st = state;
        let infos = cx.snapshot().node_infos();
        let total: i64 = scores.iter().sum();
        let max = MAX_NODE_SCORE as f64;
        let n = st.labels.len() as f64;
        let mut sums = vec![0.0f64; scores.len()];
        let mut per_value: HashMap<Sym, i64> = HashMap::new();
        for label in &st.labels {
            let values: Vec<Option<Sym>> = (0..scores.len())
                .map(|i| {
                    let key = (*label)?;
                    st.feasible
                        .get(i)
                        .and_then(|&node| infos.get(node as usize))
                        .and_then(|info| info.labels().get(key))
                })
                .collect();
            per_value.clear();
            for (s, v) in scores.iter().zip(&values) {
                if let Some(v) = v {
                    *per_value.entry(*v).or_insert(0) += *s;
                }
            }
            for (sum, v) in sums.iter_mut().zip(&values) {
                let Some(v) = v else { continue };
                let mut f = max;
                if total > 0 {
                    let count = per_value.get(v).copied().unwrap_or(0);
                    f = max * ((total - count) as f64 / total as f64);
                }
                *sum += f / n;
            }
        }
        for (s, sum) in scores.iter_mut().zip(sums) {
            *s = sum as i64;
        }
    }
}
