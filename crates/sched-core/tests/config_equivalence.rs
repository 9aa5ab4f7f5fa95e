//! The v1.34 default profile built from a `KubeSchedulerConfiguration` and the same plugins
//! put together by hand agree on every placement, score and explanation.

use proptest::prelude::*;
use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
use sched_core::config::SchedulerConfiguration;
use sched_core::framework::{BoxPredicate, BoxPriority, KubeVersion};
use sched_core::model::{
    Affinity, LabelSelector, Pod, PodAffinity, PodAffinityTerm, Toleration,
    TopologySpreadConstraint, WeightedPodAffinityTerm,
};
use sched_core::plugins::{interpod, node, resource, spread, volume};
use sched_core::profile::{Profile, ProfileBuilder};
use sched_core::snapshot::Snapshot;

/// kube-scheduler v1.34's default filters and scores, written out.
fn by_hand(seed: u64) -> Profile {
    let f = |p: BoxPredicate, n: &str| p.with_name(n);
    let s = |p: BoxPriority, n: &str| p.with_name(n);
    ProfileBuilder::new()
        .kube_version(KubeVersion::V1_34)
        .predicate(f(
            BoxPredicate::new(node::CheckNodeUnschedulable::new()),
            "NodeUnschedulable",
        ))
        .predicate(f(BoxPredicate::new(node::HostName::new()), "NodeName"))
        .predicate(f(
            BoxPredicate::new(node::PodToleratesNodeTaints::new()),
            "TaintToleration",
        ))
        .predicate(f(
            BoxPredicate::new(node::MatchNodeSelector::new()),
            "NodeAffinity",
        ))
        .predicate(f(
            BoxPredicate::new(node::PodFitsHostPorts::new()),
            "NodePorts",
        ))
        .predicate(f(
            BoxPredicate::new(node::PodFitsResources::new()),
            "NodeResourcesFit",
        ))
        .predicate(f(
            BoxPredicate::new(volume::VolumeRestrictions::new()),
            "VolumeRestrictions",
        ))
        .predicate(f(
            BoxPredicate::new(volume::NodeVolumeLimits::new()),
            "NodeVolumeLimits",
        ))
        .predicate(f(
            BoxPredicate::new(volume::VolumeBinding::new()),
            "VolumeBinding",
        ))
        .predicate(f(
            BoxPredicate::new(volume::VolumeZone::new()),
            "VolumeZone",
        ))
        .predicate(f(
            BoxPredicate::new(spread::PodTopologySpread::new()),
            "PodTopologySpread",
        ))
        .predicate(f(
            BoxPredicate::new(interpod::MatchInterPodAffinity::new()),
            "InterPodAffinity",
        ))
        .predicate(f(
            BoxPredicate::new(sched_core::plugins::dra::DynamicResources::new()),
            "DynamicResources",
        ))
        .priority(
            s(
                BoxPriority::new(node::TaintTolerationPriority::new()),
                "TaintToleration",
            ),
            3,
        )
        .priority(
            s(
                BoxPriority::new(node::NodeAffinityPriority::new()),
                "NodeAffinity",
            ),
            2,
        )
        .priority(
            s(
                BoxPriority::new(resource::LeastRequestedPriority::new()),
                "NodeResourcesFit",
            ),
            1,
        )
        .priority(
            s(
                BoxPriority::new(spread::PodTopologySpread::new()),
                "PodTopologySpread",
            ),
            2,
        )
        .priority(
            s(
                BoxPriority::new(interpod::InterPodAffinityPriority::new(1)),
                "InterPodAffinity",
            ),
            2,
        )
        .priority(
            s(
                BoxPriority::new(resource::NodeResourcesBalancedAllocation::new()),
                "NodeResourcesBalancedAllocation",
            ),
            1,
        )
        .priority(
            s(
                BoxPriority::new(resource::ImageLocalityPriority::new()),
                "ImageLocality",
            ),
            1,
        )
        .seed(seed)
        .build()
        .unwrap()
}

fn from_config(seed: u64) -> Profile {
    let mut b = SchedulerConfiguration::v1_34_default()
        .builders(&sched_core::config::Registry::v1_34())
        .unwrap();
    b.remove(0).1.seed(seed).build().unwrap()
}

#[derive(Debug, Clone)]
struct PodShape {
    milli_cpu: u32,
    mib: u32,
    zone_selector: Option<u8>,
    tolerates_gpu: bool,
    spread: bool,
    prefers_apart: bool,
}

fn shapes() -> impl Strategy<Value = Vec<PodShape>> {
    prop::collection::vec(
        (
            prop_oneof![Just(0u32), 100u32..40_000],
            prop_oneof![Just(0u32), 64u32..200_000],
            prop::option::of(0u8..4),
            any::<bool>(),
            any::<bool>(),
            any::<bool>(),
        )
            .prop_map(
                |(milli_cpu, mib, zone_selector, tolerates_gpu, spread, prefers_apart)| PodShape {
                    milli_cpu,
                    mib,
                    zone_selector,
                    tolerates_gpu,
                    spread,
                    prefers_apart,
                },
            ),
        1..12,
    )
}

fn make_pod(i: usize, s: &PodShape) -> Pod {
    let mut p = benchmark_pod(i);
    let r = &mut p.spec.containers[0].resources.requests;
    r.clear();
    if s.milli_cpu > 0 {
        r.insert("cpu".into(), format!("{}m", s.milli_cpu).parse().unwrap());
    }
    if s.mib > 0 {
        r.insert("memory".into(), format!("{}Mi", s.mib).parse().unwrap());
    }
    if let Some(z) = s.zone_selector {
        p.spec
            .node_selector
            .insert("topology.kubernetes.io/zone".into(), format!("zone-{z}"));
    }
    if s.tolerates_gpu {
        p.spec.tolerations.push(Toleration {
            key: "dedicated".into(),
            value: "gpu".into(),
            ..Default::default()
        });
    }
    let bench: LabelSelector =
        serde_json::from_value(serde_json::json!({"matchLabels": {"app": "bench"}})).unwrap();
    if s.spread {
        p.spec
            .topology_spread_constraints
            .push(TopologySpreadConstraint {
                max_skew: 1,
                topology_key: "topology.kubernetes.io/zone".into(),
                when_unsatisfiable: serde_json::from_value(serde_json::json!("ScheduleAnyway"))
                    .unwrap(),
                label_selector: Some(bench.clone()),
                ..Default::default()
            });
    }
    if s.prefers_apart {
        p.spec.affinity = Some(Affinity {
            pod_anti_affinity: Some(PodAffinity {
                preferred: vec![WeightedPodAffinityTerm {
                    weight: 10,
                    pod_affinity_term: PodAffinityTerm {
                        label_selector: Some(bench),
                        topology_key: "kubernetes.io/hostname".into(),
                        ..Default::default()
                    },
                }],
                ..Default::default()
            }),
            ..Default::default()
        });
    }
    p
}

/// Schedules the pods one after the other with both profiles on the benchmark cluster of
/// `nodes` nodes: the same placements or errors, and the same score tables.
fn same_decisions(
    a: &Profile,
    b: &Profile,
    nodes: usize,
    pods: &[PodShape],
) -> Result<(), TestCaseError> {
    let (ns, running) = benchmark_cluster(nodes);
    let mut sa = Snapshot::from_objects(ns.clone(), running.clone()).unwrap();
    let mut sb = Snapshot::from_objects(ns, running).unwrap();
    let (mut ca, mut cb) = (a.create_cache(), b.create_cache());
    for (i, shape) in pods.iter().enumerate() {
        let pod = make_pod(i, shape);
        let ra = a
            .schedule_and_assume(&mut ca, &pod, &mut sa)
            .map_err(|e| e.to_string());
        let rb = b
            .schedule_and_assume(&mut cb, &pod, &mut sb)
            .map_err(|e| e.to_string());
        prop_assert_eq!(&ra, &rb, "pod {} {:?}", i, shape);
        if ra.is_ok() {
            let (ta, tb) = (a.last_scores(&ca), b.last_scores(&cb));
            let rows_a: Vec<_> = (0..ta.len()).map(|j| ta.row(j)).collect();
            let rows_b: Vec<_> = (0..tb.len()).map(|j| tb.row(j)).collect();
            prop_assert_eq!(rows_a, rows_b);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn the_default_configuration_is_the_documented_plugin_set(
        nodes in 1usize..30,
        seed in any::<u64>(),
        pods in shapes(),
    ) {
        let (a, b) = (from_config(seed), by_hand(seed));
        prop_assert_eq!(a.predicate_names().collect::<Vec<_>>(), b.predicate_names().collect::<Vec<_>>());
        prop_assert_eq!(a.priority_weights().collect::<Vec<_>>(), b.priority_weights().collect::<Vec<_>>());
        same_decisions(&a, &b, nodes, &pods)?;
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The v1.34 profile's fast path (the fused kernel, with v1.34's balanced allocation over
    /// actual requests) gives what its plugins give node by node.
    #[test]
    fn the_v1_34_fast_path_is_exact(
        nodes in 1usize..30,
        seed in any::<u64>(),
        pods in shapes(),
    ) {
        let build = |fast: bool| {
            let mut b = SchedulerConfiguration::v1_34_default()
                .builders(&sched_core::config::Registry::v1_34())
                .unwrap();
            b.remove(0).1.fast_path(fast).seed(seed).build().unwrap()
        };
        let (a, b) = (build(true), build(false));
        same_decisions(&a, &b, nodes, &pods)?;
    }
}
