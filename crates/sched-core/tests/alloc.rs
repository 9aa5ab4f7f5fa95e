//! The hot path allocates nothing per node: scheduling one pod makes the same number of heap
//! allocations on 200 nodes as on 2,000 (all nodes filtered and scored, one thread), for pods
//! that exercise every default predicate and priority.

mod common;
use common::{BuildWorker, Worker};
use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{
    Affinity, ContainerPort, LabelSelector, NodeAffinity, NodeSelectorOperator,
    NodeSelectorRequirement, NodeSelectorTerm, Pod, PodAffinity, PodAffinityTerm,
    PreferredSchedulingTerm, TaintEffect, Toleration, TolerationOperator, WeightedPodAffinityTerm,
};
use sched_core::policy::Policy;
use sched_core::snapshot::Snapshot;

fn v1_34_scheduler() -> Worker {
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         percentageOfNodesToScore: 100\n",
    )
    .expect("valid");
    let mut builders = config.builders(&Registry::v1_34()).expect("compiles");
    builders
        .remove(0)
        .1
        .threads(1)
        .seed(5)
        .build_worker()
        .expect("builds")
}

fn scheduler() -> Worker {
    let mut policy = Policy::kube_default();
    policy.percentage_of_nodes_to_score = Some(100);
    policy
        .builder()
        .expect("default policy")
        .threads(1)
        .seed(5)
        .build_worker()
        .expect("builds")
}

fn pods() -> Vec<(&'static str, Pod)> {
    let plain = benchmark_pod(1);

    let mut rich = benchmark_pod(2);
    rich.spec.tolerations.push(Toleration {
        key: "dedicated".into(),
        operator: TolerationOperator::Equal,
        value: "gpu".into(),
        effect: Some(TaintEffect::NoSchedule),
        toleration_seconds: None,
    });
    rich.spec.containers[0].ports.push(ContainerPort {
        container_port: 8080,
        host_port: 8080,
        ..Default::default()
    });
    rich.spec
        .node_selector
        .insert("topology.kubernetes.io/zone".into(), "zone-1".into());
    rich.spec.affinity = Some(Affinity {
        node_affinity: Some(NodeAffinity {
            required: None,
            preferred: vec![PreferredSchedulingTerm {
                weight: 10,
                preference: NodeSelectorTerm {
                    match_expressions: vec![NodeSelectorRequirement {
                        key: "kubernetes.io/hostname".into(),
                        operator: NodeSelectorOperator::In,
                        values: vec!["node-3".into(), "node-4".into()],
                    }],
                    match_fields: vec![],
                },
            }],
        }),
        pod_affinity: None,
        pod_anti_affinity: None,
    });

    let mut anti = benchmark_pod(3);
    let mut selector = LabelSelector::default();
    selector
        .match_labels
        .insert("app".into(), "nothing-runs-this".into());
    anti.spec.affinity = Some(Affinity {
        node_affinity: None,
        pod_affinity: None,
        pod_anti_affinity: Some(PodAffinity {
            required: vec![PodAffinityTerm {
                label_selector: Some(selector.clone()),
                topology_key: "kubernetes.io/hostname".into(),
                ..Default::default()
            }],
            preferred: vec![WeightedPodAffinityTerm {
                weight: 5,
                pod_affinity_term: PodAffinityTerm {
                    label_selector: Some(selector),
                    topology_key: "topology.kubernetes.io/zone".into(),
                    ..Default::default()
                },
            }],
        }),
    });
    vec![
        ("plain", plain),
        ("tolerations+ports+selector+node affinity", rich),
        ("pod anti-affinity", anti),
    ]
}

fn allocations(nodes: usize, pod: &Pod, build: fn() -> Worker) -> (u64, usize) {
    let (n, p) = benchmark_cluster(nodes);
    let snapshot = Snapshot::from_objects(n, p).expect("snapshot");
    let mut s = build();
    // Warm up: scratch buffers grow to the cluster size once.
    for _ in 0..3 {
        s.schedule(pod, &snapshot).expect("fits");
    }
    let mut evaluated = 0;
    let info = allocation_counter::measure(|| {
        evaluated = s.schedule(pod, &snapshot).expect("fits").evaluated_nodes;
    });
    (info.count_total, evaluated)
}

#[test]
fn scheduling_allocates_nothing_per_node() {
    type Build = fn() -> Worker;
    let profiles: [(&str, Build); 2] = [
        ("legacy default Policy", scheduler),
        ("v1.34 default configuration", v1_34_scheduler),
    ];
    for (profile, build) in profiles {
        for (what, pod) in pods() {
            let (small, e_small) = allocations(200, &pod, build);
            let (large, e_large) = allocations(2_000, &pod, build);
            assert_eq!(
                (e_small, e_large),
                (200, 2_000),
                "{profile}, {what}: every node evaluated"
            );
            assert_eq!(
                small, large,
                "{profile}, {what}: {small} allocations at 200 nodes but {large} at 2,000"
            );
            assert!(small < 64, "{profile}, {what}: {small} allocations per pod");
            println!(
                "{profile}, {what}: {small} allocations per scheduled pod at 200 and 2,000 nodes"
            );
        }
    }
}
