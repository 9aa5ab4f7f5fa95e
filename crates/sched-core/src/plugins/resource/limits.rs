//! `ResourceLimitsPriority`.

use crate::framework::{CycleContext, PluginError, PreparedScore, Priority};
use crate::model::Pod;
use crate::snapshot::NodeRef;

/// `ResourceLimitsPriority`: a tie-breaker that gives 1 to nodes whose allocatable CPU or
/// memory can hold the pod's limit, 0 to the others.
///
/// kube 1.19-1.21's NodeResourceLimits (behind the `ResourceLimitsPriorityFunction` gate): the
/// pod's limits are the containers' limits summed, raised to any init container's (no pod
/// overhead); a resource satisfies the node when `limit != 0 && allocatable != 0 && limit <=
/// allocatable`; the node scores 1 if CPU or memory does. The 1 is the raw score on the
/// framework's 0..=100 scale (the plugin has no normalize step), just as the legacy priority
/// returned 1 on its 0..=10 scale. No argument.
#[derive(Clone, Copy, Debug, Default)]
pub struct ResourceLimitsPriority;

/// The pod's CPU (milli) and memory limits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct PodLimits {
    milli_cpu: i64,
    memory: i64,
}

impl ResourceLimitsPriority {
    /// The legacy Policy name.
    pub const NAME: &'static str = "ResourceLimitsPriority";

    /// The priority.
    pub fn new() -> ResourceLimitsPriority {
        ResourceLimitsPriority
    }
}

/// kube's `getResourceLimits` (CPU and memory only): sum over containers, max with each init
/// container, without overhead.
fn pod_limits(pod: &Pod) -> PodLimits {
    let (mut cpu, mut mem) = (0i64, 0i64);
    for c in &pod.spec.containers {
        if let Some(q) = c.resources.limits.get("cpu") {
            cpu = cpu.wrapping_add(q.milli_value());
        }
        if let Some(q) = c.resources.limits.get("memory") {
            mem = mem.wrapping_add(q.value());
        }
    }
    for c in &pod.spec.init_containers {
        if let Some(q) = c.resources.limits.get("cpu") {
            cpu = cpu.max(q.milli_value());
        }
        if let Some(q) = c.resources.limits.get("memory") {
            mem = mem.max(q.value());
        }
    }
    PodLimits {
        milli_cpu: cpu,
        memory: mem,
    }
}

/// kube's `computeScore`.
#[inline]
fn fits(limit: i64, allocatable: i64) -> bool {
    limit != 0 && allocatable != 0 && limit <= allocatable
}

impl Priority for ResourceLimitsPriority {
    type State = PodLimits;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        _feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        let limits = pod_limits(cx.pod());
        if limits.milli_cpu == 0 && limits.memory == 0 {
            // Neither resource can be satisfied anywhere: every node scores 0.
            return Ok(PreparedScore::Constant(0));
        }
        Ok(PreparedScore::Run(limits))
    }

    fn score(&self, _cx: &CycleContext<'_>, state: &Self::State, node: NodeRef<'_>) -> i64 {
        let limits = state;
        let s = node.summary();
        i64::from(fits(limits.milli_cpu, s.alloc_milli_cpu) || fits(limits.memory, s.alloc_memory))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Container;
    use crate::plugins::resource::testutil::*;

    fn limited(limits: &[(&str, &str)]) -> Container {
        let mut c = Container::default();
        c.resources.limits = list(limits);
        c
    }

    // kube: resource_limits_test.go TestResourceLimits.
    #[test]
    fn resource_limits_kube_table() {
        let p = ResourceLimitsPriority::new();
        let no_resources = pod_on("", vec![]);
        let cpu_only = pod_on(
            "",
            vec![
                limited(&[("cpu", "1000m"), ("memory", "0")]),
                limited(&[("cpu", "2000m"), ("memory", "0")]),
            ],
        );
        let mem_only = pod_on(
            "",
            vec![
                limited(&[("cpu", "0"), ("memory", "2000")]),
                limited(&[("cpu", "0"), ("memory", "3000")]),
            ],
        );
        let cpu_and_memory = pod_on(
            "",
            vec![
                limited(&[("cpu", "1000m"), ("memory", "2000")]),
                limited(&[("cpu", "2000m"), ("memory", "3000")]),
            ],
        );
        let cases = vec![
            (
                "pod does not specify its resource limits",
                &no_resources,
                vec![
                    node("m1", 4000, 10000),
                    node("m2", 4000, 0),
                    node("m3", 0, 10000),
                    node("m4", 0, 0),
                ],
                vec![0, 0, 0, 0],
            ),
            (
                "pod only specifies cpu limits",
                &cpu_only,
                vec![node("m1", 3000, 10000), node("m2", 2000, 10000)],
                vec![1, 0],
            ),
            (
                "pod only specifies mem limits",
                &mem_only,
                vec![node("m1", 4000, 4000), node("m2", 5000, 10000)],
                vec![0, 1],
            ),
            (
                "pod specifies both cpu and mem limits",
                &cpu_and_memory,
                vec![node("m1", 4000, 4000), node("m2", 5000, 10000)],
                vec![1, 1],
            ),
            (
                "node does not advertise its allocatables",
                &cpu_and_memory,
                vec![node("m1", 0, 0)],
                vec![0],
            ),
        ];
        for (name, pod, nodes, want) in cases {
            assert_eq!(run(&p, pod, nodes, vec![]), want, "{name}");
        }
    }

    #[test]
    fn init_containers_raise_limits_and_overhead_is_ignored() {
        let mut pod = pod_on("", vec![limited(&[("cpu", "1")])]);
        pod.spec.init_containers = vec![limited(&[("cpu", "3")])];
        pod.spec.overhead = list(&[("memory", "1")]);
        assert_eq!(
            pod_limits(&pod),
            PodLimits {
                milli_cpu: 3000,
                memory: 0
            }
        );
        let got = run(
            &ResourceLimitsPriority::new(),
            &pod,
            vec![node("a", 2000, 10), node("b", 3000, 10)],
            vec![],
        );
        assert_eq!(got, vec![0, 1]);
    }
}
