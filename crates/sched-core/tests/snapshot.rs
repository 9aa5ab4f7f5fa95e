//! Snapshot invariants: assume/forget are exact inverses, sums equal the sum over pods.

use proptest::prelude::*;
use sched_core::model::{
    Container, ContainerPort, Node, Pod, Quantity, Resources, pod_non_zero_requests, pod_requests,
};
use sched_core::snapshot::{NodeSummary, Snapshot, SnapshotError};

fn q(s: &str) -> Quantity {
    s.parse().unwrap()
}

fn node(i: usize) -> Node {
    let mut n = Node::default();
    n.metadata.name = format!("node-{i}");
    n.metadata.labels.insert(
        "topology.kubernetes.io/zone".into(),
        format!("zone-{}", i % 3),
    );
    n.status.allocatable.insert("cpu".into(), q("32"));
    n.status.allocatable.insert("memory".into(), q("128Gi"));
    n.status.allocatable.insert("pods".into(), q("110"));
    n.status.allocatable.insert("nvidia.com/gpu".into(), q("4"));
    n
}

#[derive(Clone, Debug)]
struct PodSpec {
    cpu_m: Option<u32>,
    mem_mi: Option<u32>,
    gpu: u32,
    init_cpu_m: Option<u32>,
    host_port: Option<u16>,
}

fn pod_strategy() -> impl Strategy<Value = PodSpec> {
    (
        proptest::option::of(0u32..4000),
        proptest::option::of(0u32..8000),
        0u32..3,
        proptest::option::of(0u32..6000),
        proptest::option::of(8000u16..8010),
    )
        .prop_map(|(cpu_m, mem_mi, gpu, init_cpu_m, host_port)| PodSpec {
            cpu_m,
            mem_mi,
            gpu,
            init_cpu_m,
            host_port,
        })
}

fn make_pod(i: usize, s: &PodSpec) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = format!("pod-{i}");
    p.metadata.namespace = "ns".into();
    p.metadata
        .labels
        .insert("app".into(), format!("a{}", i % 4));
    let mut c = Container::default();
    if let Some(v) = s.cpu_m {
        c.resources
            .requests
            .insert("cpu".into(), q(&format!("{v}m")));
    }
    if let Some(v) = s.mem_mi {
        c.resources
            .requests
            .insert("memory".into(), q(&format!("{v}Mi")));
    }
    if s.gpu > 0 {
        c.resources
            .requests
            .insert("nvidia.com/gpu".into(), q(&s.gpu.to_string()));
    }
    if let Some(port) = s.host_port {
        c.ports.push(ContainerPort {
            container_port: 80,
            host_port: i32::from(port),
            ..Default::default()
        });
    }
    p.spec.containers.push(c);
    if let Some(v) = s.init_cpu_m {
        let mut ic = Container::default();
        ic.resources
            .requests
            .insert("cpu".into(), q(&format!("{v}m")));
        p.spec.init_containers.push(ic);
    }
    p
}

fn assert_sums_match(s: &Snapshot) {
    for (info, summary) in s.node_infos().iter().zip(s.summaries()) {
        let mut req = Resources::default();
        let (mut cpu, mut mem) = (0, 0);
        let mut ports = 0;
        for p in info.pods() {
            req.add(&pod_requests(p.pod()));
            let (c, m) = pod_non_zero_requests(p.pod());
            cpu += c;
            mem += m;
            ports += p.pod().host_ports().count();
        }
        assert_eq!(
            info.requested().normalized(),
            req.normalized(),
            "{}",
            info.name()
        );
        assert_eq!(info.non_zero_requested(), (cpu, mem));
        assert_eq!(info.used_ports().len(), ports);
        assert_eq!(*summary, NodeSummary::of(info), "summary is current");
        assert_eq!(summary.pod_count as usize, info.pods().len());
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn assume_then_forget_restores_every_node(
        existing in proptest::collection::vec((0usize..6, pod_strategy()), 0..30),
        new in pod_strategy(),
        target in 0usize..6,
    ) {
        let nodes: Vec<Node> = (0..6).map(node).collect();
        let pods: Vec<Pod> = existing
            .iter()
            .enumerate()
            .map(|(i, (n, spec))| {
                let mut p = make_pod(i, spec);
                p.spec.node_name = format!("node-{n}");
                p
            })
            .collect();
        let mut s = Snapshot::from_objects(nodes, pods).unwrap();
        assert_sums_match(&s);
        let before_infos = s.node_infos().to_vec();
        let before_summaries = s.summaries().to_vec();
        let pending = make_pod(999, &new);
        s.assume(pending.clone(), &format!("node-{target}")).unwrap();
        assert_sums_match(&s);
        let target_name = format!("node-{target}");
        prop_assert_eq!(s.node_of("ns/pod-999"), Some(target_name.as_str()));
        let back = s.forget("ns/pod-999").unwrap();
        prop_assert_eq!(back, pending);
        prop_assert_eq!(s.node_infos(), &before_infos[..]);
        prop_assert_eq!(s.summaries(), &before_summaries[..]);
        assert_sums_match(&s);
    }

    #[test]
    fn sums_hold_through_random_updates(
        ops in proptest::collection::vec((0u8..4, 0usize..6, 0usize..20, pod_strategy()), 1..60),
    ) {
        let mut s = Snapshot::from_objects((0..6).map(node).collect(), vec![]).unwrap();
        for (op, n, i, spec) in ops {
            let key = format!("ns/pod-{i}");
            match op {
                0 | 1 => { let _ = s.assume(make_pod(i, &spec), &format!("node-{n}")); }
                2 => { let _ = s.forget(&key); }
                _ => {
                    let mut p = make_pod(i, &spec);
                    p.spec.node_name = format!("node-{n}");
                    let _ = s.update_pod(p);
                }
            }
            assert_sums_match(&s);
        }
    }
}

#[test]
fn incremental_node_changes_keep_order_and_index() {
    let mut s = Snapshot::from_objects((0..4).map(node).collect(), vec![]).unwrap();
    let mut p = make_pod(
        1,
        &PodSpec {
            cpu_m: Some(500),
            mem_mi: None,
            gpu: 0,
            init_cpu_m: None,
            host_port: None,
        },
    );
    p.spec.node_name = "node-3".into();
    s.add_pod(p).unwrap();
    let pods = s.remove_node("node-1").unwrap();
    assert!(pods.is_empty());
    let names: Vec<&str> = s.node_infos().iter().map(|n| n.name()).collect();
    assert_eq!(names, ["node-0", "node-2", "node-3"]);
    assert_eq!(s.index_of("node-3"), Some(2));
    assert_eq!(s.node_of("ns/pod-1"), Some("node-3"));
    let mut cordoned = node(2);
    cordoned.spec.unschedulable = true;
    s.update_node(cordoned).unwrap();
    assert!(s.summaries()[1].has(sched_core::snapshot::flags::UNSCHEDULABLE));
    assert_eq!(
        s.add_node(node(0)),
        Err(SnapshotError::DuplicateNode("node-0".into()))
    );
    assert!(matches!(
        s.forget("ns/missing"),
        Err(SnapshotError::UnknownPod(_))
    ));
    assert!(matches!(
        s.assume(Pod::default(), "nope"),
        Err(SnapshotError::UnknownNode(_))
    ));
}

#[test]
fn nodes_with_prefer_no_schedule_taints_are_counted_through_updates() {
    use sched_core::model::{Taint, TaintEffect};
    let soft = |i: usize, taints: &[TaintEffect]| {
        let mut n = node(i);
        for (k, e) in taints.iter().enumerate() {
            n.spec.taints.push(Taint {
                key: format!("t{k}"),
                value: String::new(),
                effect: *e,
            });
        }
        n
    };
    let count = |s: &Snapshot| {
        s.summaries()
            .iter()
            .filter(|x| x.prefer_no_schedule_taints > 0)
            .count()
    };
    let mut s = Snapshot::from_objects(
        vec![
            soft(
                0,
                &[TaintEffect::PreferNoSchedule, TaintEffect::PreferNoSchedule],
            ),
            soft(1, &[TaintEffect::NoSchedule]),
            soft(2, &[]),
        ],
        vec![],
    )
    .unwrap();
    assert_eq!(s.nodes_with_prefer_no_schedule_taints(), 1);
    s.update_node(soft(2, &[TaintEffect::PreferNoSchedule]))
        .unwrap();
    assert_eq!(s.nodes_with_prefer_no_schedule_taints(), 2);
    s.update_node(soft(0, &[TaintEffect::NoExecute])).unwrap();
    assert_eq!(s.nodes_with_prefer_no_schedule_taints(), 1);
    s.add_node(soft(3, &[TaintEffect::PreferNoSchedule]))
        .unwrap();
    assert_eq!(s.nodes_with_prefer_no_schedule_taints(), 2);
    s.remove_node("node-2").unwrap();
    assert_eq!(s.nodes_with_prefer_no_schedule_taints(), 1);
    assert_eq!(s.nodes_with_prefer_no_schedule_taints(), count(&s));
    for bit in 0..32 {
        let flag = 1u32 << bit;
        let expected = s.summaries().iter().filter(|x| x.has(flag)).count();
        assert_eq!(s.nodes_with_flag(flag), expected, "flag bit {bit}");
    }
    assert_eq!(
        s.nodes_with_flag(sched_core::snapshot::flags::HARD_TAINTS),
        2
    );
    assert_eq!(
        s.nodes_with_flag(sched_core::snapshot::flags::ANY_TAINTS),
        3
    );
}
