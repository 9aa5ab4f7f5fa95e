//! The filter pass led by a selective predicate (`ProfileBuilder::filter_lead`) against the
//! pass that runs every node's predicates in order: the same pipelines, built once with the
//! lead and once without, must make the same decisions with the same explanations (each
//! rejected node's first failing predicate in order), cycle after cycle, sequentially and on
//! the thread pool.

use proptest::prelude::*;
mod common;
use common::{BuildWorker, Worker};
use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{Node, Pod};
use sched_core::snapshot::Snapshot;
use serde_json::json;

const CPUS: &[&str] = &["1", "2", "4", "8", "64"];
const ZONES: &[&str] = &["a", "b", "c"];

#[derive(Clone, Debug)]
struct NodeSpec {
    cpu: usize,
    zone: usize,
    tainted: bool,
    cordoned: bool,
    /// Pods of app `web` running there, each asking 1 CPU.
    web: usize,
}

#[derive(Clone, Debug)]
enum Want {
    /// CPU only (index into `POD_CPUS`).
    Cpu(usize),
    /// A zone through a node selector.
    Zone(usize),
    /// No node that runs a `web` pod (required anti-affinity on the hostname).
    AwayFromWeb,
}

const POD_CPUS: &[&str] = &["100m", "3", "6", "40"];

#[derive(Clone, Debug)]
struct PodSpec {
    want: Want,
    tolerate: bool,
    web: bool,
}

fn node_spec() -> impl Strategy<Value = NodeSpec> {
    (
        // Mostly small nodes, so that a large pod's NodeResourcesFit rejects most of them.
        prop_oneof![6 => Just(0usize), 2 => Just(1), 1 => Just(2), 1 => Just(3), 1 => Just(4)],
        prop_oneof![8 => Just(0usize), 1 => Just(1), 1 => Just(2)],
        prop::bool::weighted(0.08),
        prop::bool::weighted(0.05),
        prop_oneof![2 => Just(0usize), 3 => Just(1), 1 => Just(2)],
    )
        .prop_map(|(cpu, zone, tainted, cordoned, web)| NodeSpec {
            cpu,
            zone,
            tainted,
            cordoned,
            web,
        })
}

fn pod_spec() -> impl Strategy<Value = PodSpec> {
    (
        prop_oneof![
            2 => (0..POD_CPUS.len()).prop_map(Want::Cpu),
            2 => Just(Want::Cpu(3)),
            1 => (0..ZONES.len()).prop_map(Want::Zone),
            1 => Just(Want::AwayFromWeb),
        ],
        prop::bool::weighted(0.3),
        prop::bool::weighted(0.3),
    )
        .prop_map(|(want, tolerate, web)| PodSpec {
            want,
            tolerate,
            web,
        })
}

fn pod(name: &str, node: Option<&str>, spec: &PodSpec) -> Pod {
    let cpu = match spec.want {
        Want::Cpu(i) => POD_CPUS[i],
        _ => "1",
    };
    let mut v = json!({
        "metadata": {"name": name, "namespace": "default", "labels": {}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": cpu}}}]},
    });
    if spec.web {
        v["metadata"]["labels"]["app"] = json!("web");
    }
    if let Some(node) = node {
        v["spec"]["nodeName"] = json!(node);
    }
    if spec.tolerate {
        v["spec"]["tolerations"] = json!([{"key": "dedicated", "operator": "Exists"}]);
    }
    match spec.want {
        Want::Zone(z) => v["spec"]["nodeSelector"] = json!({"zone": ZONES[z]}),
        Want::AwayFromWeb => {
            v["spec"]["affinity"] = json!({"podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [{
                    "labelSelector": {"matchLabels": {"app": "web"}},
                    "topologyKey": "kubernetes.io/hostname",
                }],
            }});
        }
        Want::Cpu(_) => {}
    }
    serde_json::from_value(v).unwrap()
}

fn cluster(nodes: &[NodeSpec]) -> Snapshot {
    let mut node_list = Vec::new();
    let mut pods = Vec::new();
    for (i, spec) in nodes.iter().enumerate() {
        let name = format!("node-{i}");
        let mut v = json!({
            "metadata": {"name": name, "labels": {
                "zone": ZONES[spec.zone], "kubernetes.io/hostname": name}},
            "spec": {"unschedulable": spec.cordoned},
            "status": {
                "allocatable": {"cpu": CPUS[spec.cpu], "memory": "64Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}],
            },
        });
        if spec.tainted {
            v["spec"]["taints"] =
                json!([{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]);
        }
        node_list.push(serde_json::from_value::<Node>(v).unwrap());
        let web = PodSpec {
            want: Want::Cpu(0),
            tolerate: true,
            web: true,
        };
        for j in 0..spec.web {
            pods.push(pod(&format!("web-{i}-{j}"), Some(&name), &web));
        }
    }
    Snapshot::from_objects(node_list, pods).unwrap()
}

fn worker(pct: u32, lead: bool, parallel: bool, dense: bool, seed: u64) -> Worker {
    let (_, builder) = SchedulerConfiguration::v1_34_default()
        .builders(&Registry::v1_34())
        .unwrap()
        .into_iter()
        .next()
        .unwrap();
    builder
        .threads(if parallel { 2 } else { 1 })
        .parallel_threshold(if parallel { 1 } else { usize::MAX })
        .seed(seed)
        .percentage_of_nodes_to_score(pct)
        .fast_path(dense)
        .filter_lead(lead)
        .build_worker()
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]
    #[test]
    fn led_and_ordered_filter_passes_decide_alike(
        nodes in prop::collection::vec(node_spec(), 1..300),
        pods in prop::collection::vec(pod_spec(), 1..24),
        pct in prop_oneof![Just(0u32), Just(100u32), 1u32..100],
        parallel: bool,
        dense: bool,
        seed: u64,
    ) {
        let mut led = worker(pct, true, parallel, dense, seed);
        let mut ordered = worker(pct, false, parallel, dense, seed);
        let (mut a, mut b) = (cluster(&nodes), cluster(&nodes));
        for (i, spec) in pods.iter().enumerate() {
            let p = pod(&format!("new-{i}"), None, spec);
            match (led.schedule_and_assume(&p, &mut a), ordered.schedule_and_assume(&p, &mut b)) {
                (Ok(x), Ok(y)) => prop_assert_eq!(&x, &y),
                (Err(x), Err(y)) => {
                    prop_assert_eq!(x.to_string(), y.to_string());
                    prop_assert_eq!(format!("{x:?}"), format!("{y:?}"));
                }
                (x, y) => prop_assert!(false, "differ: {:?} vs {:?}", x, y),
            }
            prop_assert_eq!(led.next_start_index(), ordered.next_start_index());
            prop_assert_eq!(
                led.profile.last_evaluated(&led.cache),
                ordered.profile.last_evaluated(&ordered.cache)
            );
        }
    }
}

/// A large pod on a cluster where most nodes are too small and some are tainted: the lead
/// (NodeResourcesFit) is learned, the pod lands where the ordered pass puts it, and a pod
/// that fits nowhere gets each node's first failing predicate (TaintToleration before
/// NodeResourcesFit on a tainted small node), as kube words it.
#[test]
fn a_learned_lead_keeps_kubes_first_failing_predicate() {
    let small = |tainted| NodeSpec {
        cpu: 0,
        zone: 0,
        tainted,
        cordoned: false,
        web: 0,
    };
    let mut nodes: Vec<NodeSpec> = (0..300).map(|i| small(i % 10 == 0)).collect();
    nodes[251].cpu = 3;
    let big = PodSpec {
        want: Want::Cpu(3),
        tolerate: false,
        web: false,
    };
    let mid = PodSpec {
        want: Want::Cpu(2),
        tolerate: false,
        web: false,
    };
    let mut led = worker(0, true, false, false, 7);
    let mut ordered = worker(0, false, false, false, 7);
    let (mut a, mut b) = (cluster(&nodes), cluster(&nodes));
    for (i, spec) in [&mid, &big, &mid].into_iter().enumerate() {
        let p = pod(&format!("p-{i}"), None, spec);
        let (x, y) = (
            led.schedule_and_assume(&p, &mut a),
            ordered.schedule_and_assume(&p, &mut b),
        );
        match i {
            0 => assert_eq!(x.as_ref().unwrap().node, "node-251"),
            _ => {
                let message = x.as_ref().unwrap_err().to_string();
                assert!(
                    message.contains(
                        "0/300 nodes are available: 270 Insufficient cpu, \
                         30 node(s) had untolerated taint(s)."
                    ),
                    "{message}"
                );
            }
        }
        assert_eq!(format!("{x:?}"), format!("{y:?}"));
        assert_eq!(
            led.profile.filter_lead(&led.cache),
            Some("NodeResourcesFit")
        );
        assert_eq!(ordered.profile.filter_lead(&ordered.cache), None);
    }
}
