//! The request/allocatable arithmetic shared by the resource-allocation scorers (kube's
//! `resourceAllocationScorer`), and the least- and most-requested priorities built on it.

use crate::fast_path::{FastScore, Sealed};
use crate::formulas::MAX_NODE_SCORE;
use crate::formulas::average_of;
use crate::formulas::{
    least_requested_score, least_requested_score_fast, most_requested_score,
    most_requested_score_fast, most_requested_score_v1_20,
};
use crate::framework::{
    CycleContext, KubeVersion, PluginError, PluginErrorKind, PreparedScore, Priority,
};
use crate::snapshot::NodeRef;
use crate::snapshot::flags;

/// A resource and its weight, as kube's `ResourceSpec` (`{"name": "cpu", "weight": 1}`): the
/// one type of the plugins, the legacy Policy document and the configuration.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResourceSpec {
    /// Resource name: `cpu`, `memory`, `ephemeral-storage` or a scalar resource such as
    /// `nvidia.com/gpu`. Other names (for example `pods`) never contribute to a score.
    pub name: String,
    /// Weight of this resource in the node's weighted average (in a document, absent or 0
    /// means 1, as in kube).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub weight: i64,
}

fn is_zero(v: &i64) -> bool {
    *v == 0
}

impl ResourceSpec {
    /// A resource with a weight.
    pub fn new(name: impl Into<String>, weight: i64) -> ResourceSpec {
        ResourceSpec {
            name: name.into(),
            weight,
        }
    }

    /// kube's default resources for these scorers: `cpu` and `memory`, weight 1 each.
    pub fn cpu_and_memory() -> Vec<ResourceSpec> {
        vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", 1)]
    }
}

/// How a resource is looked up on a node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Cpu,
    Memory,
    EphemeralStorage,
    /// A scalar resource, by name.
    Scalar(String),
    /// A name kube does not score (`pods`, unknown native names): always (0, 0).
    Ignored,
}

/// Whether kube treats `name` as a scalar resource (extended, hugepages, attachable volumes,
/// prefixed native), as `v1helper.IsScalarResourceName`.
pub(crate) fn is_scalar_resource_name(name: &str) -> bool {
    if name.starts_with("hugepages-") || name.starts_with("attachable-volumes-") {
        return true;
    }
    if name.contains("kubernetes.io/") {
        return true;
    }
    name.contains('/') && !name.starts_with("requests.")
}

impl Kind {
    pub(crate) fn of(name: &str) -> Kind {
        match name {
            "cpu" => Kind::Cpu,
            "memory" => Kind::Memory,
            "ephemeral-storage" => Kind::EphemeralStorage,
            n if is_scalar_resource_name(n) => Kind::Scalar(n.to_string()),
            _ => Kind::Ignored,
        }
    }
}

/// The resources a scorer looks at, with weights, deduplicated by name as kube's
/// `resourceToWeightMap` (a later entry replaces an earlier one's weight).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct WeightedResources {
    items: Vec<(Kind, i64)>,
}

/// One resource of the pod being scheduled: which scorer item, its weight, and the pod's
/// request for it (non-zero defaults for CPU and memory).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PodResource {
    item: usize,
    pub(crate) weight: i64,
    pod_request: i64,
}

impl WeightedResources {
    pub(crate) fn from_specs(specs: &[ResourceSpec]) -> WeightedResources {
        let mut items: Vec<(Kind, i64)> = Vec::with_capacity(specs.len());
        for s in specs {
            let kind = Kind::of(&s.name);
            match items
                .iter_mut()
                .find(|(k, _)| *k == kind && kind != Kind::Ignored)
            {
                Some(e) => e.1 = s.weight,
                None => items.push((kind, s.weight)),
            }
        }
        WeightedResources { items }
    }

    /// The pod's side of kube's `calculateResourceAllocatableRequest`, resolved once per pod.
    /// Resources that give (0, 0) on every node for this pod (a scalar the pod does not
    /// request, a name kube does not score) are left out: kube drops them from the maps too.
    pub(crate) fn prepare(&self, cx: &CycleContext<'_>) -> Vec<PodResource> {
        self.pod_resources(cx, false)
    }

    /// Every resource of the scorer, those the pod does not request included (with a request
    /// of 0), as kube v1.20's scorers iterate over their whole weight map.
    pub(crate) fn prepare_every(&self, cx: &CycleContext<'_>) -> Vec<PodResource> {
        self.pod_resources(cx, true)
    }

    fn pod_resources(&self, cx: &CycleContext<'_>, every: bool) -> Vec<PodResource> {
        // These are NodeResourcesFit's scorers: without pod-level requests in v1.34.
        let (nz_cpu, nz_mem) = cx.fit_score_requests();
        let req = cx.requests();
        self.items
            .iter()
            .enumerate()
            .filter_map(|(item, (kind, weight))| {
                let pod_request = match kind {
                    Kind::Cpu => nz_cpu,
                    Kind::Memory => nz_mem,
                    Kind::EphemeralStorage => req.ephemeral_storage,
                    Kind::Scalar(name) => {
                        let v = req.scalar(name);
                        if v == 0 && !every {
                            return None;
                        }
                        v
                    }
                    Kind::Ignored if every => 0,
                    Kind::Ignored => return None,
                };
                Some(PodResource {
                    item,
                    weight: *weight,
                    pod_request,
                })
            })
            .collect()
    }

    /// (allocatable, requested including the pod) of one resource on a node. CPU and memory use
    /// the non-zero requested sums, as kube does.
    #[inline]
    pub(crate) fn alloc_and_request(&self, r: &PodResource, node: NodeRef<'_>) -> (i64, i64) {
        let s = node.summary();
        match &self.items[r.item].0 {
            Kind::Cpu => (
                s.alloc_milli_cpu,
                s.nz_milli_cpu.wrapping_add(r.pod_request),
            ),
            Kind::Memory => (s.alloc_memory, s.nz_memory.wrapping_add(r.pod_request)),
            Kind::EphemeralStorage => (
                s.alloc_ephemeral,
                s.req_ephemeral.wrapping_add(r.pod_request),
            ),
            Kind::Scalar(name) => {
                if !s.has(flags::SCALAR_RESOURCES) {
                    return (0, 0);
                }
                let info = node.info();
                (
                    info.allocatable().scalar(name),
                    info.requested().scalar(name).wrapping_add(r.pod_request),
                )
            }
            Kind::Ignored => (0, 0),
        }
    }

    /// kube 1.22's weighted average `sum(score_r * w) / sum(w)` over the resources the node
    /// has (allocatable != 0); 0 when there are none.
    #[inline]
    pub(crate) fn weighted_average(
        &self,
        pod: &[PodResource],
        node: NodeRef<'_>,
        resource_score: impl Fn(i64, i64) -> i64,
    ) -> i64 {
        let (mut sum, mut weights) = (0i64, 0i64);
        for r in pod {
            let (alloc, req) = self.alloc_and_request(r, node);
            if alloc == 0 {
                continue;
            }
            sum = sum.wrapping_add(resource_score(req, alloc).wrapping_mul(r.weight));
            weights = weights.wrapping_add(r.weight);
        }
        if weights == 0 {
            return 0;
        }
        sum.wrapping_div(weights)
    }
}

impl WeightedResources {
    /// Whether these are kube's default resources for the scorers: cpu and memory, weight 1
    /// each (then the pod's resources from [`WeightedResources::prepare`] are exactly those two,
    /// in that order).
    fn is_cpu_memory_unit(&self) -> bool {
        matches!(self.items.as_slice(), [(Kind::Cpu, 1), (Kind::Memory, 1)])
    }

    /// The pod's CPU and memory requests when the score needs only the dense numbers (kube's
    /// default resources, cpu and memory with weight 1).
    fn fast_requests(&self, state: &[PodResource]) -> Option<(i64, i64)> {
        match (state, self.is_cpu_memory_unit()) {
            ([cpu, memory], true) => Some((cpu.pod_request, memory.pod_request)),
            _ => None,
        }
    }

    /// Scores the nodes at `nodes` into `out`, exactly as [`WeightedResources::weighted_average`]
    /// with `resource_score` would. For kube's default resources (cpu and memory, weight 1)
    /// it reads the dense summaries directly and uses `fast_score`, which must equal
    /// `resource_score` for every input.
    #[inline]
    pub(crate) fn score_batch(
        &self,
        cx: &CycleContext<'_>,
        pod: &[PodResource],
        nodes: &[u32],
        out: &mut [i64],
        resource_score: impl Fn(i64, i64) -> i64 + Copy,
        fast_score: impl Fn(i64, i64) -> i64 + Copy,
    ) {
        let snapshot = cx.snapshot();
        if let ([cpu, memory], true) = (pod, self.is_cpu_memory_unit()) {
            let summaries = snapshot.summaries();
            let (pod_cpu, pod_memory) = (cpu.pod_request, memory.pod_request);
            for (o, &i) in out.iter_mut().zip(nodes) {
                let s = &summaries[i as usize];
                *o = average_of(
                    fast_score,
                    s.nz_milli_cpu.wrapping_add(pod_cpu),
                    s.alloc_milli_cpu,
                    s.nz_memory.wrapping_add(pod_memory),
                    s.alloc_memory,
                );
            }
            return;
        }
        for (o, &i) in out.iter_mut().zip(nodes) {
            *o = self.weighted_average(pod, snapshot.node(i as usize), resource_score);
        }
    }
}

/// Validates weights as kube's `validateResources` (1..=100 for least/most allocated).
fn validate_weights(specs: &[ResourceSpec]) -> Result<(), String> {
    for s in specs {
        if s.weight <= 0 {
            return Err(format!(
                "resource Weight of {} should be a positive value, got {}",
                s.name, s.weight
            ));
        }
        if s.weight > MAX_NODE_SCORE {
            return Err(format!(
                "resource Weight of {} should be less than 100, got {}",
                s.name, s.weight
            ));
        }
    }
    Ok(())
}

/// A least- or most-requested priority: its struct, kube's argument validation, and the
/// [`Priority`] over [`WeightedResources`] with one per-resource formula (and its `f64` form
/// for the summary-only loop, and its fast-path form).
macro_rules! requested_priority {
    (
        $(#[$doc:meta])*
        $ty:ident, $name:literal, $args:literal,
        $score:path, $score_fast:path, $fast_form:path, $score_v1_20:path, $fast_in_v1_20:literal
    ) => {
        $(#[$doc])*
        #[derive(Clone, Debug)]
        pub struct $ty {
            resources: WeightedResources,
        }

        impl $ty {
            /// The legacy Policy name.
            pub const NAME: &'static str = $name;

            /// With kube's default resources (cpu and memory, weight 1 each).
            pub fn new() -> $ty {
                $ty {
                    resources: WeightedResources::from_specs(&ResourceSpec::cpu_and_memory()),
                }
            }

            #[doc = concat!("With other resources and weights (", $args, "); each weight must be")]
            /// in 1..=100. The error text is kube's.
            pub fn with_resources(resources: &[ResourceSpec]) -> Result<$ty, PluginError> {
                validate_weights(resources).map_err(|message| {
                    PluginError::new(Self::NAME, PluginErrorKind::InvalidArgument(message))
                })?;
                Ok($ty {
                    resources: WeightedResources::from_specs(resources),
                })
            }
        }

        impl Default for $ty {
            fn default() -> Self {
                $ty::new()
            }
        }

        impl Priority for $ty {
            type State = Vec<PodResource>;

            fn name(&self) -> &str {
                Self::NAME
            }

            fn prepare(
                &self,
                cx: &CycleContext<'_>,
                _feasible: &[u32],
            ) -> Result<PreparedScore<Self::State>, PluginError> {
                let pod = self.resources.prepare(cx);
                if pod.is_empty() {
                    return Ok(PreparedScore::Constant(0));
                }
                Ok(PreparedScore::Run(pod))
            }

            fn score(&self, cx: &CycleContext<'_>, pod: &Self::State, node: NodeRef<'_>) -> i64 {
                match cx.kube_version() {
                    KubeVersion::V1_20 => self.resources.weighted_average(pod, node, $score_v1_20),
                    _ => self.resources.weighted_average(pod, node, $score),
                }
            }

            fn score_batch(
                &self,
                cx: &CycleContext<'_>,
                pod: &Self::State,
                nodes: &[u32],
                out: &mut [i64],
            ) {
                match cx.kube_version() {
                    KubeVersion::V1_20 => self.resources.score_batch(
                        cx,
                        pod,
                        nodes,
                        out,
                        $score_v1_20,
                        $score_v1_20,
                    ),
                    _ => self
                        .resources
                        .score_batch(cx, pod, nodes, out, $score, $score_fast),
                }
            }

            fn fast_score(
                &self,
                cx: &CycleContext<'_>,
                pod: &Self::State,
                _: Sealed,
            ) -> Option<FastScore> {
                // The fused kernel computes the current formulas; v1.20's most-requested formula
                // differs (an overcommitted resource scores 0), so it runs through `score_batch`.
                if cx.kube_version() == KubeVersion::V1_20 && !$fast_in_v1_20 {
                    return None;
                }
                let (cpu, memory) = self.resources.fast_requests(pod)?;
                Some($fast_form(cpu, memory))
            }
        }
    };
}

requested_priority!(
    /// `LeastRequestedPriority`: favours nodes with more unrequested CPU and memory.
    ///
    /// kube 1.22's NodeResourcesLeastAllocated with weights cpu:1, memory:1: per resource
    /// `(allocatable - requested) * 100 / allocatable` (0 when over capacity), where requested
    /// is the node's non-zero requests (100m / 200 MiB for containers without requests) plus
    /// the pod's; the node score is the weighted average with integer division over the
    /// resources the node has (a resource with zero allocatable is left out, as in 1.22). No
    /// argument in the Policy; [`LeastRequestedPriority::with_resources`] gives the plugin's
    /// `resources` argument.
    LeastRequestedPriority,
    "LeastRequestedPriority",
    "NodeResourcesLeastAllocatedArgs",
    least_requested_score,
    least_requested_score_fast,
    FastScore::least_requested,
    least_requested_score,
    true
);

requested_priority!(
    /// `MostRequestedPriority`: favours nodes with more requested CPU and memory (bin
    /// packing).
    ///
    /// kube's NodeResourcesMostAllocated with weights cpu:1, memory:1: per resource
    /// `min(requested, allocatable) * 100 / allocatable` (an overcommitted resource scores 100;
    /// in a [`KubeVersion::V1_20`] profile it scores 0, as v1.20.2 did), requested being the
    /// non-zero requests plus the pod's; the node score is the weighted average with integer division over the
    /// resources the node has. No argument in the Policy;
    /// [`MostRequestedPriority::with_resources`] gives the plugin's `resources` argument.
    MostRequestedPriority,
    "MostRequestedPriority",
    "NodeResourcesMostAllocatedArgs",
    most_requested_score,
    most_requested_score_fast,
    FastScore::most_requested,
    most_requested_score_v1_20,
    false
);

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

    fn no_resources() -> Pod {
        pod_on("", vec![])
    }

    // kube: least_allocated_test.go TestNodeResourcesLeastAllocated.
    #[test]
    fn least_requested_kube_table() {
        let p = LeastRequestedPriority::new();
        let cases: Vec<Case> = vec![
            (
                "nothing scheduled, nothing requested",
                no_resources(),
                vec![node("m1", 4000, 10000), node("m2", 4000, 10000)],
                vec![],
                vec![100, 100],
            ),
            (
                "nothing scheduled, resources requested, differently sized machines",
                cpu_and_memory(""),
                vec![node("m1", 4000, 10000), node("m2", 6000, 10000)],
                vec![],
                vec![37, 50],
            ),
            (
                "no resources requested, pods scheduled",
                no_resources(),
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
                no_resources(),
                vec![node("m1", 10000, 20000), node("m2", 10000, 20000)],
                vec![
                    cpu_only("m1"),
                    cpu_only("m1"),
                    cpu_only("m2"),
                    cpu_and_memory("m2"),
                ],
                vec![70, 57],
            ),
            (
                "resources requested, pods scheduled with resources",
                cpu_and_memory(""),
                vec![node("m1", 10000, 20000), node("m2", 10000, 20000)],
                vec![cpu_only("m1"), cpu_and_memory("m2")],
                vec![57, 45],
            ),
            (
                "resources requested, pods scheduled with resources, differently sized machines",
                cpu_and_memory(""),
                vec![node("m1", 10000, 20000), node("m2", 10000, 50000)],
                vec![cpu_only("m1"), cpu_and_memory("m2")],
                vec![57, 60],
            ),
            (
                "requested resources exceed node capacity",
                cpu_only(""),
                vec![node("m1", 4000, 10000), node("m2", 4000, 10000)],
                vec![cpu_only("m1"), cpu_and_memory("m2")],
                vec![50, 25],
            ),
            (
                "zero node resources, pods scheduled with resources",
                no_resources(),
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
    fn least_requested_weights() {
        // kube: "nothing scheduled, resources requested with different weight on CPU and memory".
        let p = LeastRequestedPriority::with_resources(&[
            ResourceSpec::new("memory", 2),
            ResourceSpec::new("cpu", 1),
        ])
        .unwrap();
        let got = run(
            &p,
            &cpu_and_memory(""),
            vec![node("m1", 4000, 10000), node("m2", 6000, 10000)],
            vec![],
        );
        assert_eq!(got, vec![41, 50]);
        for (w, msg) in [
            (
                -1,
                "resource Weight of memory should be a positive value, got -1",
            ),
            (
                0,
                "resource Weight of memory should be a positive value, got 0",
            ),
            (
                101,
                "resource Weight of memory should be less than 100, got 101",
            ),
        ] {
            let e = LeastRequestedPriority::with_resources(&[ResourceSpec::new("memory", w)])
                .unwrap_err();
            assert_eq!(e.kind(), &PluginErrorKind::InvalidArgument(msg.into()));
        }
    }

    #[test]
    fn least_requested_uses_non_zero_defaults() {
        // A container without requests counts 100m / 200 MiB.
        let mi = 1024 * 1024;
        let pod = pod_on("", vec![container(&[])]);
        let got = run(
            &LeastRequestedPriority::new(),
            &pod,
            vec![node("m1", 1000, 1000 * mi)],
            vec![pod_on("m1", vec![container(&[])])],
        );
        // cpu (1000-200)*100/1000 = 80, memory (1000-400)*100/1000 = 60 -> 70.
        assert_eq!(got, vec![70]);
    }

    #[test]
    fn zero_allocatable_resource_is_left_out() {
        // kube 1.22: a resource with zero allocatable is not in the average at all.
        let got = run(
            &LeastRequestedPriority::new(),
            &cpu_and_memory(""),
            vec![node("m1", 6000, 0), node("m2", 0, 10000)],
            vec![],
        );
        assert_eq!(got, vec![50, 50]);
        let got = run(
            &MostRequestedPriority::new(),
            &cpu_and_memory(""),
            vec![node("m1", 6000, 0), node("m2", 0, 10000)],
            vec![],
        );
        assert_eq!(got, vec![50, 50]);
    }

    // kube: most_allocated_test.go TestNodeResourcesMostAllocated (1.22 expectations).
    #[test]
    fn most_requested_kube_table() {
        let p = MostRequestedPriority::new();
        let big = pod_on(
            "",
            vec![
                container(&[("cpu", "2000m"), ("memory", "4000")]),
                container(&[("cpu", "3000m"), ("memory", "5000")]),
            ],
        );
        let cases: Vec<Case> = vec![
            (
                "nothing scheduled, nothing requested",
                no_resources(),
                vec![node("m1", 4000, 10000), node("m2", 4000, 10000)],
                vec![],
                vec![0, 0],
            ),
            (
                "nothing scheduled, resources requested, differently sized machines",
                cpu_and_memory(""),
                vec![node("m1", 4000, 10000), node("m2", 6000, 10000)],
                vec![],
                vec![62, 50],
            ),
            (
                "no resources requested, pods scheduled with resources",
                no_resources(),
                vec![node("m1", 10000, 20000), node("m2", 10000, 20000)],
                vec![
                    cpu_only("m1"),
                    cpu_only("m1"),
                    cpu_only("m2"),
                    cpu_and_memory("m2"),
                ],
                vec![30, 42],
            ),
            (
                "resources requested, pods scheduled with resources",
                cpu_and_memory(""),
                vec![node("m1", 10000, 20000), node("m2", 10000, 20000)],
                vec![cpu_only("m1"), cpu_and_memory("m2")],
                vec![42, 55],
            ),
            (
                "resources requested equal node capacity",
                big.clone(),
                vec![node("m1", 5000, 10000), node("m2", 10000, 9000)],
                vec![],
                vec![95, 75],
            ),
            (
                "resources requested with more than the node (overcommit scores 100 since 1.22)",
                big,
                vec![node("m1", 4000, 10000), node("m2", 10000, 8000)],
                vec![],
                vec![95, 75],
            ),
        ];
        for (name, pod, nodes, pods, want) in cases {
            assert_eq!(run(&p, &pod, nodes, pods), want, "{name}");
        }
        let p = MostRequestedPriority::with_resources(&[
            ResourceSpec::new("memory", 2),
            ResourceSpec::new("cpu", 1),
        ])
        .unwrap();
        let got = run(
            &p,
            &cpu_and_memory(""),
            vec![node("m1", 4000, 10000), node("m2", 6000, 10000)],
            vec![],
        );
        assert_eq!(got, vec![58, 50]);
    }

    #[test]
    fn extended_resources_follow_kube_1_22() {
        // kube: "bypass extended resource if the pod does not request" and "honor extended
        // resource if the pod requests" (least allocated, cpu:1 memory:1 foo:1).
        let specs = [
            ResourceSpec::new("cpu", 1),
            ResourceSpec::new("memory", 1),
            ResourceSpec::new("example.com/foo", 1),
        ];
        let p = LeastRequestedPriority::with_resources(&specs).unwrap();
        let nodes = || {
            vec![
                node_with(
                    "n1",
                    &[("cpu", "6"), ("memory", "10000"), ("example.com/foo", "4")],
                ),
                node_with(
                    "n2",
                    &[("cpu", "6"), ("memory", "10000"), ("example.com/foo", "10")],
                ),
            ]
        };
        let plain = pod_on(
            "",
            vec![
                container(&[("cpu", "1"), ("memory", "2000")]),
                container(&[("cpu", "2"), ("memory", "3000")]),
            ],
        );
        assert_eq!(run(&p, &plain, nodes(), vec![]), vec![50, 50]);
        let with_foo = pod_on(
            "",
            vec![
                container(&[("cpu", "1"), ("memory", "2000"), ("example.com/foo", "2")]),
                container(&[("cpu", "2"), ("memory", "3000")]),
            ],
        );
        assert_eq!(run(&p, &with_foo, nodes(), vec![]), vec![50, 60]);
    }
}
