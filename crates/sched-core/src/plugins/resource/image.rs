//! `ImageLocalityPriority`.

use crate::formulas::MAX_NODE_SCORE;
use crate::framework::{CycleContext, KubeVersion, PluginError, PreparedScore, Priority};
use crate::snapshot::NodeRef;
use crate::snapshot::{ImageCounts, Sym, flags};

const MB: i64 = 1024 * 1024;
/// Below this (scaled) sum of image sizes a node scores 0.
const MIN_THRESHOLD: i64 = 23 * MB;
/// Per container: at or above `this * containers` a node scores 100.
const MAX_CONTAINER_THRESHOLD: i64 = 1000 * MB;

/// kube's `normalizedImageName`: appends `:latest` when the reference has no tag (no `:` after
/// the last `/`). Digests (`name@sha256:...`) are left as they are.
///
/// ```
/// use sched_core::plugins::resource::normalized_image_name;
/// assert_eq!(normalized_image_name("gcr.io:5000/root"), "gcr.io:5000/root:latest");
/// assert_eq!(normalized_image_name("root:tag"), "root:tag");
/// ```
pub fn normalized_image_name(name: &str) -> String {
    let colon = name.rfind(':').map_or(-1, |i| i as i64);
    let slash = name.rfind('/').map_or(-1, |i| i as i64);
    if colon <= slash {
        format!("{name}:latest")
    } else {
        name.to_string()
    }
}

/// `ImageLocalityPriority`: favours nodes that already have the pod's container images.
///
/// kube's ImageLocality: for each of the pod's containers (a repeated image counts once per
/// container; init containers included in a [`KubeVersion::V1_34`] profile, excluded in a
/// [`KubeVersion::V1_20`] one) whose image, normalized with
/// [`normalized_image_name`], is on the node, add `int64(float64(size) * numNodes /
/// totalNodes)` where `numNodes` is how many nodes of the snapshot have the image (see
/// [`crate::snapshot::ImageCounts`]) and `size` the image's size as kube's cache keeps it, the
/// size the first node with the image reported ([`crate::snapshot::Snapshot::image_size`],
/// kube v1.20 and today alike); clamp the sum
/// to `[23 MiB, 1000 MiB * containers]` (init containers counted where their images are) and
/// map it linearly (integer arithmetic) onto 0..=100.
/// No argument.
#[derive(Clone, Copy, Debug, Default)]
pub struct ImageLocalityPriority;

/// Per pod: the images present somewhere, with their spread, and the container count.
#[derive(Debug, Default)]
pub struct PodImages {
    /// (interned image name, its size, nodes having it) for each container whose image is on
    /// some node.
    images: Vec<(Sym, i64, u32)>,
    counts: ImageCounts,
    total_nodes: usize,
    containers: usize,
}

impl ImageLocalityPriority {
    /// The legacy Policy name.
    pub const NAME: &'static str = "ImageLocalityPriority";

    /// The priority.
    pub fn new() -> ImageLocalityPriority {
        ImageLocalityPriority
    }
}

/// kube's `scaledImageScore`.
#[inline]
fn scaled_image_score(size: i64, num_nodes: u32, total_nodes: usize) -> i64 {
    let spread = f64::from(num_nodes) / total_nodes as f64;
    (size as f64 * spread) as i64
}

/// kube's `calculatePriority`.
#[inline]
pub(crate) fn calculate_priority(sum: i64, containers: usize) -> i64 {
    let max = MAX_CONTAINER_THRESHOLD.wrapping_mul(containers as i64);
    let sum = if sum < MIN_THRESHOLD {
        MIN_THRESHOLD
    } else if sum > max {
        max
    } else {
        sum
    };
    let range = max.wrapping_sub(MIN_THRESHOLD);
    if range == 0 {
        return 0;
    }
    MAX_NODE_SCORE
        .wrapping_mul(sum.wrapping_sub(MIN_THRESHOLD))
        .wrapping_div(range)
}

impl Priority for ImageLocalityPriority {
    type State = PodImages;

    fn name(&self) -> &str {
        Self::NAME
    }

    fn prepare(
        &self,
        cx: &CycleContext<'_>,
        _feasible: &[u32],
    ) -> Result<PreparedScore<Self::State>, PluginError> {
        let snapshot = cx.snapshot();
        let spec = &cx.pod().spec;
        // v1.34 scores init containers' images too, and counts them as containers
        // (`sumImageScores` over InitContainers and Containers, `calculatePriority(sum,
        // len(InitContainers)+len(Containers))`); v1.20 looks at the containers only.
        let init: &[_] = match cx.kube_version() {
            KubeVersion::V1_20 => &[],
            _ => &spec.init_containers,
        };
        let images: Vec<(Sym, i64, u32)> = init
            .iter()
            .chain(&spec.containers)
            .filter_map(|c| {
                let sym = snapshot.interner().get(&normalized_image_name(&c.image))?;
                let n = snapshot.image_node_count(sym);
                Some((sym, snapshot.image_size(sym)?, n))
            })
            .collect();
        if images.is_empty() {
            // No node has any of the images: every sum is 0, and calculatePriority(0, n) is 0.
            return Ok(PreparedScore::Constant(0));
        }
        Ok(PreparedScore::Run(PodImages {
            images,
            counts: snapshot.image_counts(),
            total_nodes: snapshot.len(),
            containers: init.len() + spec.containers.len(),
        }))
    }

    fn score(&self, _cx: &CycleContext<'_>, state: &Self::State, node: NodeRef<'_>) -> i64 {
        let pod = state;
        if !node.summary().has(flags::IMAGES) {
            return calculate_priority(0, pod.containers);
        }
        let info = node.info();
        let mut sum = 0i64;
        for &(sym, size, n) in &pod.images {
            let n = match pod.counts {
                ImageCounts::Current => info.image_size(sym).map(|_| n),
                ImageCounts::AsOfNodeUpdate => info.image_count_at_update(sym),
            };
            if let Some(n) = n {
                sum = sum.wrapping_add(scaled_image_score(size, n, pod.total_nodes));
            }
        }
        calculate_priority(sum, pod.containers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{Container, ContainerImage, Node, Pod};
    use crate::plugins::resource::testutil::*;
    use crate::snapshot::Snapshot;

    fn image_node(name: &str, images: &[(&[&str], i64)]) -> Node {
        let mut n = Node::default();
        n.metadata.name = name.to_string();
        n.status.images = images
            .iter()
            .map(|(names, mb)| ContainerImage {
                names: names.iter().map(|s| s.to_string()).collect(),
                size_bytes: mb * MB,
            })
            .collect();
        n
    }

    fn pod_with_images(images: &[&str]) -> Pod {
        pod_on(
            "",
            images
                .iter()
                .map(|i| Container {
                    image: i.to_string(),
                    ..Container::default()
                })
                .collect(),
        )
    }

    fn node_40_300_2000(name: &str) -> Node {
        image_node(
            name,
            &[
                (&["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
                (&["gcr.io/300:latest", "gcr.io/300:v1"], 300),
                (&["gcr.io/2000:latest"], 2000),
            ],
        )
    }
    fn node_250_10(name: &str) -> Node {
        image_node(
            name,
            &[
                (&["gcr.io/250:latest"], 250),
                (&["gcr.io/10:latest", "gcr.io/10:v1"], 10),
            ],
        )
    }
    fn node_600_40_900(name: &str) -> Node {
        image_node(
            name,
            &[
                (&["gcr.io/600:latest"], 600),
                (&["gcr.io/40:latest"], 40),
                (&["gcr.io/900:latest"], 900),
            ],
        )
    }
    fn node_300_600_900(name: &str) -> Node {
        image_node(
            name,
            &[
                (&["gcr.io/300:latest"], 300),
                (&["gcr.io/600:latest"], 600),
                (&["gcr.io/900:latest"], 900),
            ],
        )
    }
    fn node_4000_30(name: &str) -> Node {
        image_node(
            name,
            &[(&["gcr.io/4000:latest"], 4000), (&["gcr.io/30:latest"], 30)],
        )
    }
    fn node_20_30_40(name: &str) -> Node {
        image_node(
            name,
            &[
                (&["gcr.io/20:latest"], 20),
                (&["gcr.io/30:latest"], 30),
                (&["gcr.io/40:latest"], 40),
            ],
        )
    }

    // kube: image_locality_test.go TestImageLocalityPriority (container images; the
    // init-container case is newer than 1.22).
    #[test]
    fn image_locality_kube_table() {
        let p = ImageLocalityPriority::new();
        let cases: Vec<(&str, Pod, Vec<Node>, Vec<i64>)> = vec![
            (
                // node2: 100 * (250M/2 - 23M) / (1000M * 2 - 23M) = 5
                "two images spread on two nodes, prefer the larger image one",
                pod_with_images(&["gcr.io/40", "gcr.io/250"]),
                vec![node_40_300_2000("n1"), node_250_10("n2")],
                vec![0, 5],
            ),
            (
                // node1: 100 * ((40M + 300M)/2 - 23M) / (1000M * 2 - 23M) = 7
                "two images on one node, prefer this node",
                pod_with_images(&["gcr.io/40", "gcr.io/300"]),
                vec![node_40_300_2000("n1"), node_250_10("n2")],
                vec![7, 0],
            ),
            (
                // node1: 4000M * 1/2 >= 1000M * 2: max threshold.
                "if exceed limit, use limit",
                pod_with_images(&["gcr.io/10", "gcr.io/4000"]),
                vec![node_4000_30("n1"), node_250_10("n2")],
                vec![100, 0],
            ),
            (
                // node1: 100 * (4000M/3 - 23M) / (1000M * 2 - 23M) = 66
                "if exceed limit, use limit (with node which has no images present)",
                pod_with_images(&["gcr.io/10", "gcr.io/4000"]),
                vec![node_4000_30("n1"), node_250_10("n2"), image_node("n3", &[])],
                vec![66, 0, 0],
            ),
            (
                // node1: 100 * (600M * 2/3 + 900M * 2/3 - 23M) / (1000M * 3 - 23M) = 32
                // node2: 100 * (300M/3 + 600M * 2/3 + 900M * 2/3 - 23M) / (1000M * 3 - 23M) = 36
                "pod with multiple large images, node2 is preferred",
                pod_with_images(&["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
                vec![
                    node_600_40_900("n1"),
                    node_300_600_900("n2"),
                    image_node("n3", &[]),
                ],
                vec![32, 36, 0],
            ),
            (
                // node1: 100 * (30M + 40M/2 - 23M) / (1000M * 2 - 23M) = 1
                "pod with multiple small images",
                pod_with_images(&["gcr.io/30", "gcr.io/40"]),
                vec![node_20_30_40("n1"), node_4000_30("n2")],
                vec![1, 0],
            ),
        ];
        for (name, pod, nodes, want) in cases {
            assert_eq!(run(&p, &pod, nodes, vec![]), want, "{name}");
        }
    }

    // kube: TestNormalizedImageName.
    #[test]
    fn normalized_image_names() {
        let digest = "root@sha256:4813494d137e1631bba301d5acab6e7bb7aa74ce1185d456565ef51d737677b2";
        for (input, want) in [
            ("root", "root:latest"),
            ("gcr.io:5000/root", "gcr.io:5000/root:latest"),
            ("root:tag", "root:tag"),
            (digest, digest),
        ] {
            assert_eq!(normalized_image_name(input), want);
        }
    }

    #[test]
    fn absent_images_give_a_constant_zero() {
        let snap = crate::snapshot::Snapshot::from_objects(
            vec![node_40_300_2000("n1"), node_250_10("n2")],
            vec![],
        )
        .unwrap();
        let p = ImageLocalityPriority::new();
        // Not on any node, or only present without the implied ":latest" tag.
        assert_eq!(
            is_constant(&p, &pod_with_images(&["nginx"]), &snap),
            Some(0)
        );
        assert_eq!(is_constant(&p, &pod_with_images(&[]), &snap), Some(0));
        assert_eq!(
            is_constant(&p, &pod_with_images(&["gcr.io/40:v2"]), &snap),
            Some(0)
        );
        assert_eq!(
            run_on(&p, &pod_with_images(&["gcr.io/40:v1"]), &snap),
            vec![0, 0]
        );
    }

    #[test]
    fn repeated_image_counts_per_container_and_init_containers_only_in_v1_34() {
        // Two containers of the 2000M image on one of two nodes: 2 * 1000M = 2000M = max.
        let pod = pod_with_images(&["gcr.io/2000", "gcr.io/2000"]);
        let nodes = || vec![node_40_300_2000("n1"), node_250_10("n2")];
        assert_eq!(
            run(&ImageLocalityPriority, &pod, nodes(), vec![]),
            vec![100, 0]
        );
        let mut pod = pod_with_images(&["gcr.io/10"]);
        pod.spec.init_containers = vec![Container {
            image: "gcr.io/2000".into(),
            ..Container::default()
        }];
        let snap = Snapshot::from_objects(nodes(), vec![]).unwrap();
        // v1.20: the init container's image is ignored.
        assert_eq!(
            run_on_version(&ImageLocalityPriority, &pod, &snap, KubeVersion::V1_20),
            vec![0, 0]
        );
        // v1.34: 2000M on one of two nodes = 1000M; two containers: 100 * 977 / 1977 = 49.
        assert_eq!(
            run_on_version(&ImageLocalityPriority, &pod, &snap, KubeVersion::V1_34),
            vec![49, 0]
        );
    }

    #[test]
    fn calculate_priority_edges() {
        assert_eq!(calculate_priority(0, 0), 0);
        assert_eq!(calculate_priority(i64::MAX, 1), 100);
        assert_eq!(calculate_priority(MIN_THRESHOLD, 1), 0);
        assert_eq!(calculate_priority(-5, 3), 0);
        let _ = calculate_priority(i64::MAX, usize::MAX);
    }
}
