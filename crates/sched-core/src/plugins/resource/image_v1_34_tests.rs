//! kube v1.34's `TestImageLocalityPriority`
//! (`pkg/scheduler/framework/plugins/imagelocality/image_locality_test.go`) against
//! [`ImageLocalityPriority`] in a v1.34 cycle, with its exact expected scores: thresholds
//! 23 MiB and 1000 MiB per container, init containers counted (their images and in the
//! number of containers).
//!
//! Every case is ported (7). `TestNormalizedImageName` is covered by the doc test of
//! [`super::normalized_image_name`] and the existing unit tests.

use super::ImageLocalityPriority;
use super::testutil::*;
use crate::model::{Container, ContainerImage, Node, Pod};

const MB: i64 = 1024 * 1024;

fn image_node(name: &str, images: &[(&[&str], i64)]) -> Node {
    let mut n = node(name, 0, 0);
    n.status.capacity.clear();
    n.status.allocatable.clear();
    n.status.images = images
        .iter()
        .map(|(names, mb)| ContainerImage {
            names: names.iter().map(|s| s.to_string()).collect(),
            size_bytes: mb * MB,
        })
        .collect();
    n
}

fn containers(images: &[&str]) -> Vec<Container> {
    images
        .iter()
        .map(|i| Container {
            image: i.to_string(),
            ..Container::default()
        })
        .collect()
}

fn pod_with(images: &[&str], init: &[&str]) -> Pod {
    let mut p = pod_on("", containers(images));
    p.spec.init_containers = containers(init);
    p
}

#[test]
fn image_locality_priority() {
    let node403002000 = |n: &str| {
        image_node(
            n,
            &[
                (&["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
                (&["gcr.io/300:latest", "gcr.io/300:v1"], 300),
                (&["gcr.io/2000:latest"], 2000),
            ],
        )
    };
    let node25010 = |n: &str| {
        image_node(
            n,
            &[
                (&["gcr.io/250:latest"], 250),
                (&["gcr.io/10:latest", "gcr.io/10:v1"], 10),
            ],
        )
    };
    let node60040900 = |n: &str| {
        image_node(
            n,
            &[
                (&["gcr.io/600:latest"], 600),
                (&["gcr.io/40:latest"], 40),
                (&["gcr.io/900:latest"], 900),
            ],
        )
    };
    let node300600900 = |n: &str| {
        image_node(
            n,
            &[
                (&["gcr.io/300:latest"], 300),
                (&["gcr.io/600:latest"], 600),
                (&["gcr.io/900:latest"], 900),
            ],
        )
    };
    let node400030 = |n: &str| {
        image_node(
            n,
            &[(&["gcr.io/4000:latest"], 4000), (&["gcr.io/30:latest"], 30)],
        )
    };
    let node203040 = |n: &str| {
        image_node(
            n,
            &[
                (&["gcr.io/20:latest"], 20),
                (&["gcr.io/30:latest"], 30),
                (&["gcr.io/40:latest"], 40),
            ],
        )
    };
    let no_images = |n: &str| image_node(n, &[]);

    let test40250 = pod_with(&["gcr.io/40", "gcr.io/250"], &[]);
    let test40300 = pod_with(&["gcr.io/40", "gcr.io/300"], &[]);
    let test_min_max = pod_with(&["gcr.io/10", "gcr.io/4000"], &[]);
    let test300600900 = pod_with(&["gcr.io/300", "gcr.io/600", "gcr.io/900"], &[]);
    let test3040 = pod_with(&["gcr.io/30", "gcr.io/40"], &[]);
    let test30_init300 = pod_with(&["gcr.io/30"], &["gcr.io/300"]);

    let cases: Vec<(&str, Pod, Vec<Node>, Vec<i64>)> = vec![
        (
            "two images spread on two nodes, prefer the larger image one",
            test40250,
            vec![node403002000("node1"), node25010("node2")],
            vec![0, 5],
        ),
        (
            "two images on one node, prefer this node",
            test40300,
            vec![node403002000("node1"), node25010("node2")],
            vec![7, 0],
        ),
        (
            "if exceed limit, use limit",
            test_min_max.clone(),
            vec![node400030("node1"), node25010("node2")],
            vec![100, 0],
        ),
        (
            "if exceed limit, use limit (with node which has no images present)",
            test_min_max,
            vec![node400030("node1"), node25010("node2"), no_images("node3")],
            vec![66, 0, 0],
        ),
        (
            "pod with multiple large images, node2 is preferred",
            test300600900,
            vec![
                node60040900("node1"),
                node300600900("node2"),
                no_images("node3"),
            ],
            vec![32, 36, 0],
        ),
        (
            "pod with multiple small images",
            test3040,
            vec![node203040("node1"), node400030("node2")],
            vec![1, 0],
        ),
        (
            "include InitContainers: two images spread on two nodes, prefer the larger image one",
            test30_init300,
            vec![node403002000("node1"), node203040("node2")],
            vec![6, 0],
        ),
    ];
    let mut ran = 0;
    for (name, pod, nodes, want) in cases {
        assert_eq!(
            run(&ImageLocalityPriority, &pod, nodes, vec![]),
            want,
            "{name}"
        );
        ran += 1;
    }
    assert_eq!(ran, 7, "cases run");
}
