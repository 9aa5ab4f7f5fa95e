//! `BalancedResourceAllocation`.

use crate::fast_path::{FastScore, Sealed};
use crate::formulas::{balanced_score, balanced_score_v1_34, balanced_std_score};
use crate::framework::{CycleContext, PluginError, PluginErrorKind, PreparedScore, Priority};
use crate::snapshot::{NodeRef, NodeSummary, flags};

use super::ResourceSpec;
use super::allocation::Kind;

/// `BalancedResourceAllocation`: favours nodes whose CPU and memory would be used in the same
/// proportion after placing the pod.
///
/// The legacy formula (kube's `balancedResourceScorer` from 1.6 through 1.21, and again in the
/// last 1.20/1.21 patches): with `cpu = requested / allocatable` and `mem` likewise, where
/// requested is the node's non-zero requests (100m / 200 MiB for containers without
/// requests) plus the pod's, and a zero allocatable counting as a fraction of 1:
/// `0` if either fraction is `>= 1`, else `int64((1 - |cpu - mem|) * 100)` in `float64`.
/// No argument.
#[derive(Clone, Copy, Debug, Default)]
pub struct BalancedResourceAllocation;

impl BalancedResourceAllocation {
    /// The legacy Policy name.
    pub const NAME: &'static str = "BalancedResourceAllocation";

    /// The priority.
    pub fn new() -> BalancedResourceAllocation {
        BalancedResourceAllocation
    }
}

impl Priority for BalancedResourceAllocation {
    type State = ();

    fn name(&self) -> &str {
        Self::NAME
    }

    fn score(&self, cx: &CycleContext<'_>, _state: &Self::State, node: NodeRef<'_>) -> i64 {
        // The pod's non-zero requests are precomputed by the cycle context.
        let (cpu, memory) = cx.non_zero_requests();
        let s = node.summary();
        balanced_score(
            s.nz_milli_cpu.wrapping_add(cpu),
            s.alloc_milli_cpu,
            s.nz_memory.wrapping_add(memory),
            s.alloc_memory,
        )
    }

    fn score_batch(
        &self,
        cx: &CycleContext<'_>,
        _state: &Self::State,
        nodes: &[u32],
        out: &mut [i64],
    ) {
        let (cpu, memory) = cx.non_zero_requests();
        let summaries = cx.snapshot().summaries();
        for (o, &i) in out.iter_mut().zip(nodes) {
            let s = &summaries[i as usize];
            *o = balanced_score(
                s.nz_milli_cpu.wrapping_add(cpu),
                s.alloc_milli_cpu,
                s.nz_memory.wrapping_add(memory),
                s.alloc_memory,
            );
        }
    }

    fn fast_score(
        &self,
        cx: &CycleContext<'_>,
        _state: &Self::State,
        _: Sealed,
    ) -> Option<FastScore> {
        let (cpu, memory) = cx.non_zero_requests();
        Some(FastScore::balanced(cpu, memory))
    }
}

/// kube-scheduler v1.34's `NodeResourcesBalancedAllocation` (score only): favours nodes
/// whose resources would be used in the same proportion after placing the pod.
///
/// For each configured resource (default cpu and memory) the node's fraction is
/// `min(1, (requested + pod's request) / allocatable)` in `f64`, where requested is the
/// node's *actual* requests (no 100m / 200 MiB defaults for containers without requests, unlike
/// [`BalancedResourceAllocation`]) and the pod's request is its actual request; resources the
/// node does not have (allocatable 0) and extended resources the pod does not request are left
/// out. With two fractions the deviation is `|f1 - f2| / 2`, with more the population
/// standard deviation, with fewer 0; the score is `int64((1 - deviation) * 100)`. A pod that
/// requests none of the resources (best effort) skips the plugin: every node 0.
#[derive(Clone, Debug)]
pub struct NodeResourcesBalancedAllocation {
    resources: Vec<Kind>,
}

impl NodeResourcesBalancedAllocation {
    /// The plugin name.
    pub const NAME: &'static str = "NodeResourcesBalancedAllocation";

    /// With kube's default resources (cpu and memory).
    pub fn new() -> Self {
        NodeResourcesBalancedAllocation {
            resources: vec![Kind::Cpu, Kind::Memory],
        }
    }

    /// With these resources; each weight must be 1 and each name appear once (kube's
    /// validation; the error text is kube's).
    pub fn with_resources(resources: &[ResourceSpec]) -> Result<Self, PluginError> {
        let invalid = |m: String| PluginError::new(Self::NAME, PluginErrorKind::InvalidArgument(m));
        for (i, r) in resources.iter().enumerate() {
            if resources[..i].iter().any(|o| o.name == r.name) {
                return Err(invalid(format!(
                    "resources[{i}].name: Duplicate value: {:?}",
                    r.name
                )));
            }
            if r.weight != 1 {
                return Err(invalid(format!(
                    "resources[{i}].weight: Invalid value: {}: must be 1",
                    r.weight
                )));
            }
        }
        Ok(NodeResourcesBalancedAllocation {
            resources: resources.iter().map(|r| Kind::of(&r.name)).collect(),
        })
    }

    fn is_cpu_memory(&self) -> bool {
        matches!(self.resources.as_slice(), [Kind::Cpu, Kind::Memory])
    }
}

impl Default for NodeResourcesBalancedAllocation {
    fn default() -> Self {
        NodeResourcesBalancedAllocation::new()
    }
}

fn fraction(requested: i64, allocatable: i64) -> f64 {
    (requested as f64 / allocatable as f64).min(1.0)
}

/// The CPU and memory score from a node's summary (the default resources).
#[inline]
fn cpu_memory_score(s: &NodeSummary, cpu: i64, memory: i64) -> i64 {
    balanced_score_v1_34(
        s.req_milli_cpu.wrapping_add(cpu),
        s.alloc_milli_cpu,
        s.req_memory.wrapping_add(memory),
        s.alloc_memory,
    )
}

impl Priority for NodeResourcesBalancedAllocation {
    /// The pod's request per configured resource (in order).
    type State = Vec<i64>;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        _feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        let req = cx.requests();
        let requests: Vec<i64> = self
            .resources
            .iter()
            .map(|k| match k {
                Kind::Cpu => req.milli_cpu,
                Kind::Memory => req.memory,
                Kind::EphemeralStorage => req.ephemeral_storage,
                Kind::Scalar(name) => req.scalar(name),
                Kind::Ignored => 0,
            })
            .collect();
        if requests.iter().all(|&r| r == 0) {
            return Ok(PreparedScore::Constant(0));
        }
        Ok(PreparedScore::Run(requests))
    }

    fn score(&self, _cx: &CycleContext<'_>, state: &Self::State, node: NodeRef<'_>) -> i64 {
        let s = node.summary();
        if self.is_cpu_memory() {
            return cpu_memory_score(s, state[0], state[1]);
        }
        let mut fractions = Vec::with_capacity(self.resources.len());
        for (k, &pod) in self.resources.iter().zip(state) {
            let (alloc, requested) = match k {
                Kind::Cpu => (s.alloc_milli_cpu, s.req_milli_cpu.wrapping_add(pod)),
                Kind::Memory => (s.alloc_memory, s.req_memory.wrapping_add(pod)),
                Kind::EphemeralStorage => (s.alloc_ephemeral, s.req_ephemeral.wrapping_add(pod)),
                Kind::Scalar(_) if pod == 0 || !s.has(flags::SCALAR_RESOURCES) => (0, 0),
                Kind::Scalar(name) => {
                    let info = node.info();
                    (
                        info.allocatable().scalar(name),
                        info.requested().scalar(name).wrapping_add(pod),
                    )
                }
                Kind::Ignored => (0, 0),
            };
            if alloc != 0 {
                fractions.push(fraction(requested, alloc));
            }
        }
        balanced_std_score(&fractions)
    }

    fn score_batch(
        &self,
        cx: &CycleContext<'_>,
        state: &Self::State,
        nodes: &[u32],
        out: &mut [i64],
    ) {
        if !self.is_cpu_memory() {
            let snapshot = cx.snapshot();
            for (o, &i) in out.iter_mut().zip(nodes) {
                *o = self.score(cx, state, snapshot.node(i as usize));
            }
            return;
        }
        let summaries = cx.snapshot().summaries();
        let (cpu, memory) = (state[0], state[1]);
        for (o, &i) in out.iter_mut().zip(nodes) {
            *o = cpu_memory_score(&summaries[i as usize], cpu, memory);
        }
    }

    fn fast_score(
        &self,
        _cx: &CycleContext<'_>,
        state: &Self::State,
        _: Sealed,
    ) -> Option<FastScore> {
        self.is_cpu_memory()
            .then(|| FastScore::balanced_v1_34(state[0], state[1]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Pod;
    use crate::plugins::resource::testutil::*;

    fn cpu_only(node: &str) -> Pod {
        pod_on(
            node,
            vec![
                container(&[("cpu", "1000m"), ("memory", "0")]),
                container(&[("cpu", "2000m"), ("memory", "0")]),
            ],
        )
    }

    fn cpu_and_memory(node: &str) -> Pod {
        pod_on(
            node,
            vec![
                container(&[("cpu", "1000m"), ("memory", "2000")]),
                container(&[("cpu", "2000m"), ("memory", "3000")]),
            ],
        )
    }

    // kube: balanced_allocation_test.go TestNodeResourcesBalancedAllocation (legacy formula).
    #[test]
    fn balanced_kube_table() {
        let p = BalancedResourceAllocation::new();
        let none = || pod_on("", vec![]);
        let cases: Vec<Case> = vec![
            (
                "nothing scheduled, nothing requested",
                none(),
                vec![node("m1", 4000, 10000), node("m2", 4000, 10000)],
                vec![],
                vec![100, 100],
            ),
            (
                "nothing scheduled, resources requested, differently sized machines",
                cpu_and_memory(""),
                vec![node("m1", 4000, 10000), node("m2", 6000, 10000)],
                vec![],
                vec![75, 100],
            ),
            (
                "no resources requested, pods scheduled",
                none(),
                vec![node("m1", 4000, 10000), node("m2", 4000, 10000)],
                vec![
                    pod_on("m1", vec![]),
                    pod_on("m1", vec![]),
                    pod_on("m2", vec![]),
                    pod_on("m2", vec![]),
                ],
                vec![100, 100],
            ),
            (
                "no resources requested, pods scheduled with resources",
                none(),
                vec![node("m1", 10000, 20000), node("m2", 10000, 20000)],
                vec![
                    cpu_only("m1"),
                    cpu_only("m1"),
                    cpu_only("m2"),
                    cpu_and_memory("m2"),
                ],
                vec![40, 65],
            ),
            (
                "resources requested, pods scheduled with resources",
                cpu_and_memory(""),
                vec![node("m1", 10000, 20000), node("m2", 10000, 20000)],
                vec![cpu_only("m1"), cpu_and_memory("m2")],
                vec![65, 90],
            ),
            (
                "resources requested, pods scheduled with resources, differently sized machines",
                cpu_and_memory(""),
                vec![node("m1", 10000, 20000), node("m2", 10000, 50000)],
                vec![cpu_only("m1"), cpu_and_memory("m2")],
                vec![65, 60],
            ),
            (
                "requested resources exceed node capacity",
                cpu_only(""),
                vec![node("m1", 4000, 10000), node("m2", 4000, 10000)],
                vec![cpu_only("m1"), cpu_and_memory("m2")],
                vec![0, 0],
            ),
            (
                "zero node resources, pods scheduled with resources",
                none(),
                vec![node("m1", 0, 0), node("m2", 0, 0)],
                vec![cpu_only("m1"), cpu_and_memory("m2")],
                vec![0, 0],
            ),
        ];
        for (name, pod, nodes, pods, want) in cases {
            assert_eq!(run(&p, &pod, nodes, pods), want, "{name}");
        }
    }

    #[test]
    fn fraction_of_one_scores_zero_and_float_truncates() {
        // Exactly full on one resource: never preferred.
        assert_eq!(balanced_score(1000, 1000, 0, 10), 0);
        // (1 - |0.6 - 0.25|) * 100 = 65.000000000000002 -> 65; (1 - 0.1) * 100 -> 90.
        assert_eq!(balanced_score(6000, 10000, 5000, 20000), 65);
        assert_eq!(balanced_score(6000, 10000, 10000, 20000), 90);
        // 1/3 vs 0: (1 - 0.333..) * 100 = 66.66.. -> 66.
        assert_eq!(balanced_score(1, 3, 0, 5), 66);
        // Non-zero defaults can push a node past its capacity: 0, not negative.
        assert_eq!(balanced_score(300, 200, 0, 10), 0);
    }
}
