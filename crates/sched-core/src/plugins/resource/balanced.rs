//! `BalancedResourceAllocation`.

use crate::fast_path::{FastScore, Sealed};
use crate::formulas::balanced_score;
use crate::framework::{CycleContext, Priority};
use crate::snapshot::NodeRef;

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
