//! `RequestedToCapacityRatioPriority`.

use super::allocation::{PodResource, ResourceSpec, WeightedResources};
use crate::formulas::MAX_NODE_SCORE;
use crate::framework::{CycleContext, KubeVersion, PluginError, PreparedScore, Priority};
use crate::snapshot::NodeRef;

/// The highest score of a shape point in the legacy Policy (`MaxCustomPriorityScore`); points
/// are scaled by `100 / 10` to the framework's 0..=100.
pub const MAX_CUSTOM_PRIORITY_SCORE: i64 = 10;

/// Utilization in percent where the function's value is 100 whatever the shape.
const MAX_UTILIZATION: i64 = 100;

/// A point of the scoring function: at `utilization` percent (0..=100) the resource scores
/// `score` (0..=10, the legacy Policy scale). JSON: `{"utilization": 50, "score": 5}`.
/// The one type of the plugin, the legacy Policy document and the configuration.
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(deny_unknown_fields)]
pub struct UtilizationShapePoint {
    /// Utilization in percent, 0..=100.
    pub utilization: i64,
    /// Score at that utilization, 0..=10 (kube's legacy scale, multiplied by 10 when scoring).
    pub score: i64,
}

impl UtilizationShapePoint {
    /// A point.
    pub fn new(utilization: i64, score: i64) -> UtilizationShapePoint {
        UtilizationShapePoint { utilization, score }
    }
}

/// An invalid `requestedToCapacityRatioArguments`. The texts are kube's (field path, value,
/// detail); the first problem found is reported, in kube's order.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum RatioArgsError {
    /// The shape has no point.
    #[error("shape: Required value: at least one point must be specified")]
    EmptyShape,
    /// Utilization does not strictly increase at this point.
    #[error(
        "shape[{index}].utilization: Invalid value: {value}: utilization values must be sorted in increasing order"
    )]
    UnsortedUtilization {
        /// Index of the point.
        index: usize,
        /// Its utilization.
        value: i64,
    },
    /// A utilization outside 0..=100.
    #[error("shape[{index}].utilization: Invalid value: {value}: not in valid range [0, 100]")]
    UtilizationOutOfRange {
        /// Index of the point.
        index: usize,
        /// Its utilization.
        value: i64,
    },
    /// A score outside 0..=10.
    #[error("shape[{index}].score: Invalid value: {value}: not in valid range [0, 10]")]
    ScoreOutOfRange {
        /// Index of the point.
        index: usize,
        /// Its score.
        value: i64,
    },
    /// A negative resource weight (0 means the default, 1).
    #[error(
        "resources[{index}].weight: Invalid value: {weight}: resource weight of {name} not in valid range [1, inf)"
    )]
    InvalidWeight {
        /// Index of the resource.
        index: usize,
        /// Resource name.
        name: String,
        /// The weight given.
        weight: i64,
    },
}

/// `RequestedToCapacityRatioPriority`: scores each resource's utilization after placing the
/// pod with a piecewise-linear function of the user's shape, then takes the weighted average.
///
/// Argument (legacy Policy `requestedToCapacityRatioArguments`):
/// `{"shape": [{"utilization": 0, "score": 0}, {"utilization": 100, "score": 10}],
/// "resources": [{"name": "cpu", "weight": 1}, ...]}`. Shape: at least one point, utilization
/// strictly increasing within 0..=100, scores within 0..=10 (scaled by 10 to 0..=100).
/// Resources: kube's defaulting applies (none given means cpu and memory with weight 1; a
/// weight of 0 means 1), then weights must be >= 1.
///
/// Per resource (kube 1.22's RequestedToCapacityRatio): allocatable and requested as the other
/// resource scorers (non-zero requests for CPU and memory; a scalar resource only when the pod
/// requests it; resources with zero allocatable left out); `f(100)` when requested exceeds
/// allocatable, else `f(requested * 100 / allocatable)`, `f` being the broken-linear function
/// with kube's integer arithmetic. Resources scoring 0 are left out of the average; the node
/// score is `round(sum(score * weight) / sum(weight))` (0 when nothing is left).
///
/// In a [`KubeVersion::V1_20`] profile, v1.20.2's rules: every resource of the argument is
/// scored, those the pod does not request too; one the node lacks (zero allocatable) scores
/// `f(100)`; and utilization is `100 - (allocatable - requested) * 100 / allocatable`.
#[derive(Clone, Debug)]
pub struct RequestedToCapacityRatioPriority {
    /// (utilization, score scaled to 0..=100).
    shape: Vec<(i64, i64)>,
    resources: WeightedResources,
}

impl RequestedToCapacityRatioPriority {
    /// The legacy Policy name.
    pub const NAME: &'static str = "RequestedToCapacityRatioPriority";

    /// Validates the argument and builds the priority.
    pub fn new(
        shape: &[UtilizationShapePoint],
        resources: &[ResourceSpec],
    ) -> Result<RequestedToCapacityRatioPriority, RatioArgsError> {
        validate_shape(shape)?;
        let mut specs: Vec<ResourceSpec> = if resources.is_empty() {
            ResourceSpec::cpu_and_memory()
        } else {
            resources.to_vec()
        };
        for (index, s) in specs.iter_mut().enumerate() {
            if s.weight == 0 {
                s.weight = 1;
            }
            if s.weight < 1 {
                return Err(RatioArgsError::InvalidWeight {
                    index,
                    name: s.name.clone(),
                    weight: s.weight,
                });
            }
        }
        let scale = MAX_NODE_SCORE / MAX_CUSTOM_PRIORITY_SCORE;
        Ok(RequestedToCapacityRatioPriority {
            shape: shape
                .iter()
                .map(|p| (p.utilization, p.score * scale))
                .collect(),
            resources: WeightedResources::from_specs(&specs),
        })
    }
}

/// kube's `validateFunctionShape`.
fn validate_shape(shape: &[UtilizationShapePoint]) -> Result<(), RatioArgsError> {
    if shape.is_empty() {
        return Err(RatioArgsError::EmptyShape);
    }
    for i in 1..shape.len() {
        if shape[i - 1].utilization >= shape[i].utilization {
            return Err(RatioArgsError::UnsortedUtilization {
                index: i,
                value: shape[i].utilization,
            });
        }
    }
    for (index, p) in shape.iter().enumerate() {
        if !(0..=100).contains(&p.utilization) {
            return Err(RatioArgsError::UtilizationOutOfRange {
                index,
                value: p.utilization,
            });
        }
        if !(0..=MAX_CUSTOM_PRIORITY_SCORE).contains(&p.score) {
            return Err(RatioArgsError::ScoreOutOfRange {
                index,
                value: p.score,
            });
        }
    }
    Ok(())
}

/// kube's `BuildBrokenLinearFunction` applied to `p`: the first point at or right of `p` decides;
/// between points the value is interpolated with integer division (truncating toward zero, as
/// Go); left of the first point its score, right of the last point the last score.
pub(crate) fn broken_linear(shape: &[(i64, i64)], p: i64) -> i64 {
    for i in 0..shape.len() {
        let (u, s) = shape[i];
        if p <= u {
            if i == 0 {
                return s;
            }
            let (u0, s0) = shape[i - 1];
            return s0.wrapping_add(
                s.wrapping_sub(s0)
                    .wrapping_mul(p.wrapping_sub(u0))
                    .wrapping_div(u - u0),
            );
        }
    }
    shape.last().map_or(0, |&(_, s)| s)
}

impl Priority for RequestedToCapacityRatioPriority {
    type State = Vec<PodResource>;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        _feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        let pod = match cx.kube_version() {
            KubeVersion::V1_20 => self.resources.prepare_every(cx),
            _ => self.resources.prepare(cx),
        };
        if pod.is_empty() {
            // Nothing to weigh on any node (only scalar resources the pod does not request).
            return Ok(PreparedScore::Constant(0));
        }
        Ok(PreparedScore::Run(pod))
    }

    fn score(&self, cx: &CycleContext<'_>, state: &Self::State, node: NodeRef<'_>) -> i64 {
        let v1_20 = cx.kube_version() == KubeVersion::V1_20;
        let (mut sum, mut weights) = (0i64, 0i64);
        for r in state {
            let (alloc, req) = self.resources.alloc_and_request(r, node);
            if alloc == 0 && !v1_20 {
                continue;
            }
            let utilization = if alloc == 0 || req > alloc {
                MAX_UTILIZATION
            } else if v1_20 {
                // v1.20: `100 - (capacity - requested) * 100 / capacity`, which rounds up.
                MAX_UTILIZATION.wrapping_sub(
                    alloc
                        .wrapping_sub(req)
                        .wrapping_mul(MAX_UTILIZATION)
                        .wrapping_div(alloc),
                )
            } else {
                req.wrapping_mul(MAX_UTILIZATION).wrapping_div(alloc)
            };
            let s = broken_linear(&self.shape, utilization);
            if s > 0 {
                sum = sum.wrapping_add(s.wrapping_mul(r.weight));
                weights = weights.wrapping_add(r.weight);
            }
        }
        if weights == 0 {
            return 0;
        }
        (sum as f64 / weights as f64).round() as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Node;
    use crate::plugins::resource::testutil::*;

    /// (shape, [(utilization, expected)]).
    type ShapeCase = (Vec<(i64, i64)>, Vec<(i64, i64)>);
    /// (shape, resources, error text).
    type ArgsCase = (Vec<(i32, i32)>, Vec<ResourceSpec>, &'static str);

    fn pts(v: &[(i32, i32)]) -> Vec<UtilizationShapePoint> {
        v.iter()
            .map(|&(u, s)| UtilizationShapePoint::new(i64::from(u), i64::from(s)))
            .collect()
    }

    // kube: TestBrokenLinearFunction (raw points, no scaling).
    #[test]
    fn broken_linear_kube_table() {
        let cases: Vec<ShapeCase> = vec![
            (
                vec![(10, 1), (90, 9)],
                vec![
                    (-10, 1),
                    (0, 1),
                    (9, 1),
                    (10, 1),
                    (15, 1),
                    (19, 1),
                    (20, 2),
                    (89, 8),
                    (90, 9),
                    (99, 9),
                    (100, 9),
                    (110, 9),
                ],
            ),
            (
                vec![(0, 2), (40, 10), (100, 0)],
                vec![
                    (-10, 2),
                    (0, 2),
                    (20, 6),
                    (30, 8),
                    (40, 10),
                    (70, 5),
                    (100, 0),
                    (110, 0),
                ],
            ),
            (
                vec![(0, 2), (40, 2), (100, 2)],
                vec![
                    (-10, 2),
                    (0, 2),
                    (20, 2),
                    (30, 2),
                    (40, 2),
                    (70, 2),
                    (100, 2),
                    (110, 2),
                ],
            ),
        ];
        for (shape, asserts) in cases {
            for (p, want) in asserts {
                assert_eq!(broken_linear(&shape, p), want, "{shape:?} at {p}");
            }
        }
        // Decreasing segments truncate toward zero like Go: 100 + (-100 * 7) / 100 = 93.
        assert_eq!(broken_linear(&[(0, 100), (100, 0)], 7), 93);
        assert_eq!(broken_linear(&[(0, 100), (30, 0)], 1), 97);
    }

    // kube: TestRequestedToCapacityRatioScoringStrategy.
    #[test]
    fn ratio_cpu_memory_kube_table() {
        let p = RequestedToCapacityRatioPriority::new(&pts(&[(0, 10), (100, 0)]), &[]).unwrap();
        let two = || {
            pod_on(
                "",
                vec![
                    container(&[("cpu", "1000m"), ("memory", "2000")]),
                    container(&[("cpu", "2000m"), ("memory", "3000")]),
                ],
            )
        };
        let cases: Vec<Case> = vec![
            (
                "nothing scheduled, nothing requested",
                pod_on("", vec![]),
                vec![node("n1", 4000, 10000), node("n2", 4000, 10000)],
                vec![pod_on("n1", vec![]), pod_on("n1", vec![])],
                vec![100, 100],
            ),
            (
                "nothing scheduled, resources requested, differently sized nodes",
                two(),
                vec![node("n1", 4000, 10000), node("n2", 6000, 10000)],
                vec![pod_on("n1", vec![]), pod_on("n1", vec![])],
                vec![38, 50],
            ),
            (
                "no resources requested, pods scheduled with resources",
                pod_on("", vec![]),
                vec![node("n1", 4000, 10000), node("n2", 6000, 10000)],
                vec![
                    pod_on(
                        "n1",
                        vec![container(&[("cpu", "3000m"), ("memory", "5000")])],
                    ),
                    pod_on(
                        "n2",
                        vec![container(&[("cpu", "3000m"), ("memory", "5000")])],
                    ),
                ],
                vec![38, 50],
            ),
        ];
        for (name, pod, nodes, pods, want) in cases {
            assert_eq!(run(&p, &pod, nodes, pods), want, "{name}");
        }
    }

    fn ext_node(name: &str, res: &[(&str, &str)]) -> Node {
        let mut all = vec![("cpu", "4"), ("memory", "10000Mi")];
        all.extend_from_slice(res);
        node_with(name, &all)
    }

    // kube: TestResourceBinPackingSingleExtended.
    #[test]
    fn bin_packing_single_extended() {
        let p = RequestedToCapacityRatioPriority::new(
            &pts(&[(0, 0), (100, 1)]),
            &[ResourceSpec::new("intel.com/foo", 1)],
        )
        .unwrap();
        let nodes = || {
            vec![
                ext_node("n1", &[("intel.com/foo", "8")]),
                ext_node("n2", &[("intel.com/foo", "4")]),
            ]
        };
        let foo = |n: &str, v: &str| pod_on(n, vec![container(&[("intel.com/foo", v)])]);
        let none = pod_on("", vec![]);
        let snap = crate::snapshot::Snapshot::from_objects(nodes(), vec![]).unwrap();
        assert_eq!(is_constant(&p, &none, &snap), Some(0));
        assert_eq!(run(&p, &none, nodes(), vec![]), vec![0, 0]);
        assert_eq!(
            run(&p, &foo("", "2"), nodes(), vec![pod_on("", vec![])]),
            vec![2, 5]
        );
        assert_eq!(
            run(&p, &foo("", "2"), nodes(), vec![foo("n2", "2")]),
            vec![2, 10]
        );
        assert_eq!(run(&p, &foo("", "4"), nodes(), vec![]), vec![5, 10]);
    }

    // kube: TestResourceBinPackingMultipleExtended.
    #[test]
    fn bin_packing_multiple_extended() {
        let p = RequestedToCapacityRatioPriority::new(
            &pts(&[(0, 0), (100, 1)]),
            &[
                ResourceSpec::new("intel.com/foo", 3),
                ResourceSpec::new("intel.com/bar", 5),
            ],
        )
        .unwrap();
        let nodes = || {
            vec![
                ext_node("n1", &[("intel.com/foo", "8"), ("intel.com/bar", "4")]),
                ext_node("n2", &[("intel.com/foo", "4"), ("intel.com/bar", "8")]),
            ]
        };
        let req = |n: &str, foo: &str, bar: &str| {
            pod_on(
                n,
                vec![container(&[("intel.com/foo", foo), ("intel.com/bar", bar)])],
            )
        };
        assert_eq!(run(&p, &pod_on("", vec![]), nodes(), vec![]), vec![0, 0]);
        assert_eq!(run(&p, &req("", "2", "2"), nodes(), vec![]), vec![4, 3]);
        assert_eq!(
            run(&p, &req("", "2", "2"), nodes(), vec![req("n2", "4", "2")]),
            vec![4, 7]
        );
        assert_eq!(run(&p, &req("", "4", "2"), nodes(), vec![]), vec![5, 5]);
    }

    #[test]
    fn zero_scores_leave_the_average() {
        // Shape going to 0 at full use: a full resource drops out instead of pulling down.
        let p = RequestedToCapacityRatioPriority::new(&pts(&[(0, 10), (100, 0)]), &[]).unwrap();
        let pod = pod_on("", vec![container(&[("cpu", "1000m"), ("memory", "0")])]);
        // cpu full (score 0, left out), memory empty (100): round(100 / 1) = 100.
        assert_eq!(run(&p, &pod, vec![node("n", 1000, 10)], vec![]), vec![100]);
    }

    #[test]
    fn argument_validation() {
        let ok = RequestedToCapacityRatioPriority::new(&pts(&[(0, 0), (100, 10)]), &[]);
        assert!(ok.is_ok());
        let cases: Vec<ArgsCase> = vec![
            (
                vec![],
                vec![],
                "shape: Required value: at least one point must be specified",
            ),
            (
                vec![(10, 1), (10, 2)],
                vec![],
                "shape[1].utilization: Invalid value: 10: utilization values must be sorted in increasing order",
            ),
            (
                vec![(50, 1), (20, 2)],
                vec![],
                "shape[1].utilization: Invalid value: 20: utilization values must be sorted in increasing order",
            ),
            (
                vec![(-10, 1), (100, 2)],
                vec![],
                "shape[0].utilization: Invalid value: -10: not in valid range [0, 100]",
            ),
            (
                vec![(10, 1), (101, 2)],
                vec![],
                "shape[1].utilization: Invalid value: 101: not in valid range [0, 100]",
            ),
            (
                vec![(10, -1), (100, 2)],
                vec![],
                "shape[0].score: Invalid value: -1: not in valid range [0, 10]",
            ),
            (
                vec![(10, 1), (100, 11)],
                vec![],
                "shape[1].score: Invalid value: 11: not in valid range [0, 10]",
            ),
            (
                vec![(10, 1)],
                vec![ResourceSpec::new("cpu", 1), ResourceSpec::new("memory", -2)],
                "resources[1].weight: Invalid value: -2: resource weight of memory not in valid range [1, inf)",
            ),
        ];
        for (shape, res, want) in cases {
            let e = RequestedToCapacityRatioPriority::new(&pts(&shape), &res).unwrap_err();
            assert_eq!(e.to_string(), want);
        }
        // Weight 0 defaults to 1.
        let p = RequestedToCapacityRatioPriority::new(
            &pts(&[(0, 0), (100, 10)]),
            &[ResourceSpec::new("cpu", 0)],
        )
        .unwrap();
        let pod = pod_on("", vec![container(&[("cpu", "500m")])]);
        assert_eq!(run(&p, &pod, vec![node("n", 1000, 10)], vec![]), vec![50]);
    }

    #[test]
    fn single_point_shape_is_constant_over_utilization() {
        let p = RequestedToCapacityRatioPriority::new(&pts(&[(50, 7)]), &[]).unwrap();
        let pod = pod_on("", vec![container(&[("cpu", "100m"), ("memory", "1")])]);
        let got = run(
            &p,
            &pod,
            vec![node("a", 1000, 10), node("b", 100, 1), node("c", 10, 1)],
            vec![],
        );
        assert_eq!(got, vec![70, 70, 70]);
    }
}
