//! kube v1.34's `TestNodeResourcesBalancedAllocation`
//! (`pkg/scheduler/framework/plugins/noderesources/balanced_allocation_test.go`) against
//! [`NodeResourcesBalancedAllocation`], with its exact expected scores.
//!
//! Ported: every case but the two below. "... if PreScore not called" is ported as it is: our
//! framework always prepares, so it is the same computation as its PreScore twin; kube's
//! `Skip` from PreScore (best-effort pod) is our `PreparedScore::Constant(0)`.
//!
//! Skipped (our model cannot express them):
//! - "include DRA resource on a node for balanced resource allocation" and its
//!   "if PreScore not called" twin: an extended resource backed by a DRA device class and
//!   a ResourceSlice (DRAExtendedResource gate); we have no DRA objects.

use super::testutil::*;
use super::{NodeResourcesBalancedAllocation, ResourceSpec};
use crate::model::{Node, Pod};
use crate::snapshot::Snapshot;

/// kube's test `makeNode(name, milliCPU, memory, extendedResource)` (pods: 100).
fn make_node(name: &str, milli_cpu: i64, memory: i64, gpu: Option<i64>) -> Node {
    let mut n = node(name, milli_cpu, memory);
    let mut extra = list(&[("pods", "100")]);
    if let Some(g) = gpu {
        extra.extend(list(&[("nvidia.com/gpu", &g.to_string())]));
    }
    n.status.capacity.extend(extra.clone());
    n.status.allocatable.extend(extra);
    n
}

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

fn cpu_and_memory_and_gpu(node: &str) -> Pod {
    pod_on(
        node,
        vec![
            container(&[("cpu", "1000m"), ("memory", "2000")]),
            container(&[
                ("cpu", "2000m"),
                ("memory", "3000"),
                ("nvidia.com/gpu", "3"),
            ]),
        ],
    )
}

fn with_gpu() -> NodeResourcesBalancedAllocation {
    NodeResourcesBalancedAllocation::with_resources(&[
        ResourceSpec::new("cpu", 1),
        ResourceSpec::new("memory", 1),
        ResourceSpec::new("nvidia.com/gpu", 1),
    ])
    .unwrap()
}

#[test]
fn node_resources_balanced_allocation() {
    let default =
        NodeResourcesBalancedAllocation::with_resources(&ResourceSpec::cpu_and_memory()).unwrap();
    let mut ran = 0;

    // "nothing scheduled, nothing requested, skip in PreScore": best effort, kube's Skip.
    let snap = Snapshot::from_objects(
        vec![
            make_node("node1", 4000, 10000, None),
            make_node("node2", 4000, 10000, None),
        ],
        vec![],
    )
    .unwrap();
    assert_eq!(is_constant(&default, &pod_on("", vec![]), &snap), Some(0));
    ran += 1;

    type Row = (
        &'static str,
        NodeResourcesBalancedAllocation,
        Pod,
        Vec<Node>,
        Vec<Pod>,
        Vec<i64>,
    );
    let cases: Vec<Row> = vec![
        (
            "nothing scheduled, resources requested, differently sized nodes",
            default.clone(),
            cpu_and_memory(""),
            vec![
                make_node("node1", 4000, 10000, None),
                make_node("node2", 6000, 10000, None),
            ],
            vec![],
            vec![87, 100],
        ),
        (
            "resources requested, pods scheduled with resources",
            default.clone(),
            cpu_and_memory(""),
            vec![
                make_node("node1", 10000, 20000, None),
                make_node("node2", 10000, 20000, None),
            ],
            vec![cpu_only("node1"), cpu_and_memory("node2")],
            vec![82, 95],
        ),
        (
            "resources requested, pods scheduled with resources, differently sized nodes",
            default.clone(),
            cpu_and_memory(""),
            vec![
                make_node("node1", 10000, 20000, None),
                make_node("node2", 10000, 50000, None),
            ],
            vec![cpu_only("node1"), cpu_and_memory("node2")],
            vec![82, 80],
        ),
        (
            "requested resources at node capacity",
            default.clone(),
            cpu_only(""),
            vec![
                make_node("node1", 6000, 10000, None),
                make_node("node2", 6000, 10000, None),
            ],
            vec![cpu_only("node1"), cpu_and_memory("node2")],
            vec![50, 75],
        ),
        (
            "include scalar resource on a node for balanced resource allocation",
            with_gpu(),
            pod_on(
                "",
                vec![container(&[("memory", "0"), ("nvidia.com/gpu", "1")])],
            ),
            vec![
                make_node("node1", 3500, 40000, Some(8)),
                make_node("node2", 3500, 40000, Some(8)),
            ],
            // cpuAndMemory is bound to node2, cpuAndMemoryAndGPU to node1.
            vec![cpu_and_memory("node2"), cpu_and_memory_and_gpu("node1")],
            vec![70, 65],
        ),
        (
            "node without the scalar resource should skip the scalar resource",
            with_gpu(),
            cpu_and_memory(""),
            vec![
                make_node("node1", 3500, 40000, Some(8)),
                make_node("node2", 3500, 40000, None),
            ],
            vec![],
            vec![63, 63],
        ),
        (
            "resources requested, pods scheduled with resources if PreScore not called",
            default.clone(),
            cpu_and_memory(""),
            vec![
                make_node("node1", 10000, 20000, None),
                make_node("node2", 10000, 20000, None),
            ],
            vec![cpu_only("node1"), cpu_and_memory("node2")],
            vec![82, 95],
        ),
    ];
    for (name, p, pod, nodes, pods, want) in cases {
        assert_eq!(run(&p, &pod, nodes, pods), want, "{name}");
        ran += 1;
    }
    assert_eq!(ran, 8, "cases run");
}
