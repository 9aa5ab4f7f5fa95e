//! Synthetic clusters for benchmarks, demos and tests.
//!
//! [`benchmark_cluster`] is the workload the project's benchmarks and README figures use:
//! every node allocates 32 CPU, 128 GiB and 110 pods, is labelled
//! `kubernetes.io/hostname=node-i` and `topology.kubernetes.io/zone=zone-(i % 3)`, every 10th
//! node is tainted `dedicated=gpu:NoSchedule`, and 10 pods requesting 1 CPU / 2 GiB each run on
//! every node. [`benchmark_pod`] is a new pod requesting 500m / 1 GiB with no affinity.

use crate::model::{Container, Node, NodeCondition, Pod, Quantity, Taint, TaintEffect};

fn quantity(s: &str) -> Quantity {
    // The literals below are valid quantities.
    s.parse().unwrap_or_else(|_| Quantity::from_value(0))
}

/// Node `i` of the benchmark cluster.
pub fn benchmark_node(i: usize) -> Node {
    let mut n = Node::default();
    n.metadata.name = format!("node-{i}");
    let labels = &mut n.metadata.labels;
    labels.insert("kubernetes.io/hostname".into(), format!("node-{i}"));
    labels.insert(
        "topology.kubernetes.io/zone".into(),
        format!("zone-{}", i % 3),
    );
    for (k, v) in [
        ("cpu", "32"),
        ("memory", "128Gi"),
        ("pods", "110"),
        ("ephemeral-storage", "100Gi"),
    ] {
        n.status.capacity.insert(k.into(), quantity(v));
        n.status.allocatable.insert(k.into(), quantity(v));
    }
    n.status.conditions.push(NodeCondition {
        type_: "Ready".into(),
        status: "True".into(),
    });
    if i.is_multiple_of(10) {
        n.spec.taints.push(Taint {
            key: "dedicated".into(),
            value: "gpu".into(),
            effect: TaintEffect::NoSchedule,
        });
    }
    n
}

fn pod_with(name: String, namespace: &str, cpu: &str, memory: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = name;
    p.metadata.namespace = namespace.into();
    p.metadata.labels.insert("app".into(), "bench".into());
    let mut c = Container {
        name: "main".into(),
        image: "registry.example/bench:1.0".into(),
        ..Default::default()
    };
    c.resources.requests.insert("cpu".into(), quantity(cpu));
    c.resources
        .requests
        .insert("memory".into(), quantity(memory));
    p.spec.containers.push(c);
    p
}

/// The benchmark cluster with `nodes` nodes and 10 running pods (1 CPU / 2 GiB) per node.
pub fn benchmark_cluster(nodes: usize) -> (Vec<Node>, Vec<Pod>) {
    let node_list: Vec<Node> = (0..nodes).map(benchmark_node).collect();
    let mut pods = Vec::with_capacity(nodes * 10);
    for i in 0..nodes {
        for j in 0..10 {
            let mut p = pod_with(format!("running-{i}-{j}"), "default", "1", "2Gi");
            p.spec.node_name = format!("node-{i}");
            p.status.phase = "Running".into();
            pods.push(p);
        }
    }
    (node_list, pods)
}

/// New pod `i` of the benchmark: requests 500m CPU and 1 GiB, no affinity, no tolerations.
pub fn benchmark_pod(i: usize) -> Pod {
    let mut p = pod_with(format!("new-{i}"), "default", "500m", "1Gi");
    p.status.phase = "Pending".into();
    p
}
