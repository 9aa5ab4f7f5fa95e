//! kube-scheduler's scheduler_perf workloads (test/integration/scheduler_perf in
//! kubernetes/kubernetes) on sched-core, as `../shared/bench/scheduler-perf-workloads.md` describes
//! them: node templates, labelling strategies, pod templates, namespaces and counts.
//!
//! Each workload builds its nodes, schedules the init pods one by one with
//! `Profile::schedule_and_assume` (untimed), then times the measured pods one by one through
//! `schedule_and_assume`. One criterion iteration is one measured pod; after the last measured
//! pod the snapshot goes back to its state after the init pods (untimed) and the measured pods
//! start again. Every timed pod is recorded, the pass that criterion leaves unfinished is
//! completed, and at the end a table gives per workload the median and p99 per pod and pods/s
//! (pods divided by the summed scheduling time) over whole passes of the measured pods.
//!
//! Profiles: kube v1.20.2's default legacy Policy (`Policy::kube_default()`) and kube v1.34's
//! default profile (a `KubeSchedulerConfiguration` with `Registry::v1_34()`), one thread,
//! percentageOfNodesToScore 0 (adaptive, as scheduler_perf runs) and 100 (all nodes).
//!
//! Filter as usual: `cargo bench --bench scheduler_perf -- SchedulingBasic/5000Nodes`.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{
    CsiNode, Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageObjects,
};
use sched_core::policy::Policy;
use sched_core::profile::{Profile, ScheduleError};
use sched_core::scheduler::{ClusterEvent, QueueName, QueueSettings, Scheduler, Step};
use sched_core::snapshot::Snapshot;
use serde_json::{Value, json};

/// The zone key of the `labelNodePrepareStrategy` that the affinity templates name
/// (`failure-domain.beta.kubernetes.io/zone` in pod-affinity and node-affinity).
const ZONE_BETA: &str = "failure-domain.beta.kubernetes.io/zone";
const ZONE: &str = "topology.kubernetes.io/zone";
const HOSTNAME: &str = "kubernetes.io/hostname";
const SETUP: &str = "sched-setup";
const TEST: &str = "sched-test";
/// Namespace of pods whose workload names none.
const DEFAULT_NS: &str = "default";

// ---------------------------------------------------------------------------------------------
// Nodes

/// How nodes are labelled (`createNodes` strategies).
#[derive(Clone, Copy)]
enum NodeLabels {
    /// No strategy: the default node only.
    None,
    /// `uniqueNodeLabelStrategy(key)`: `key=<node name>`.
    Unique(&'static str),
    /// `labelNodePrepareStrategy(key, values)`: `key=<value>`, cycling through the values.
    Cycle(&'static str, &'static [&'static str]),
}

/// The default node (`node-default.yaml`): pods 110, cpu 4, memory 32Gi, Ready; with `csi`,
/// `nodeAllocatableStrategy`'s `attachable-volumes-csi-ebs.csi.aws.com: 39` too.
fn node(i: usize, labels: NodeLabels, csi: Csi) -> Node {
    let name = format!("scheduler-perf-{i}");
    let mut label_map = serde_json::Map::new();
    match labels {
        NodeLabels::None => {}
        NodeLabels::Unique(key) => {
            label_map.insert(key.into(), Value::String(name.clone()));
        }
        NodeLabels::Cycle(key, values) => {
            label_map.insert(key.into(), Value::String(values[i % values.len()].into()));
        }
    }
    let mut resources = json!({"pods": "110", "cpu": "4", "memory": "32Gi"});
    if !matches!(csi, Csi::None) {
        resources[EBS_ATTACHABLE] = json!("39");
    }
    let v = json!({
        "metadata": {"name": name, "labels": label_map},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    });
    let node: Node = serde_json::from_value(v).expect("node deserializes");
    assert_eq!(node.metadata.labels.len(), label_map_len(labels));
    assert_eq!(
        node.status.allocatable.len(),
        if matches!(csi, Csi::None) { 3 } else { 4 }
    );
    node
}

/// `nodeAllocatableStrategy`'s CSINode of node `i`: driver `ebs.csi.aws.com` with an attach
/// limit of 39, and with `Csi::Migrated` the in-tree AWS EBS plugin named migrated.
fn csi_node(i: usize, csi: Csi) -> Option<CsiNode> {
    let name = format!("scheduler-perf-{i}");
    let mut v = json!({
        "metadata": {"name": name},
        "spec": {"drivers": [
            {"name": EBS_CSI, "nodeID": name, "allocatable": {"count": 39}},
        ]},
    });
    match csi {
        Csi::None => return None,
        Csi::Driver => {}
        Csi::Migrated => {
            v["metadata"]["annotations"] =
                json!({"storage.alpha.kubernetes.io/migrated-plugins": "kubernetes.io/aws-ebs"});
        }
    }
    let c: CsiNode = serde_json::from_value(v).expect("csinode deserializes");
    assert_eq!(c.limit_of(EBS_CSI), Some(39));
    Some(c)
}

/// The CSI part of a workload's nodes.
#[derive(Clone, Copy)]
enum Csi {
    /// No CSINode, no attachable allocatable.
    None,
    /// `nodeAllocatableStrategy` with the EBS CSI driver (SchedulingCSIPVs).
    Driver,
    /// The same, with `migratedPlugins: [kubernetes.io/aws-ebs]` (SchedulingMigratedInTreePVs).
    Migrated,
}

const EBS_CSI: &str = "ebs.csi.aws.com";
const EBS_ATTACHABLE: &str = "attachable-volumes-csi-ebs.csi.aws.com";

fn label_map_len(labels: NodeLabels) -> usize {
    usize::from(!matches!(labels, NodeLabels::None))
}

// ---------------------------------------------------------------------------------------------
// Pods

/// The pod templates of scheduler_perf that these workloads use.
#[derive(Clone, Copy, Debug)]
enum Template {
    Default,
    PodAffinity,
    PodAntiAffinity,
    PreferredPodAffinity,
    PreferredPodAntiAffinity,
    NodeAffinity,
    TopologySpreading,
    PreferredTopologySpreading,
    SecretVolume,
    /// `pod-low-priority.yaml`: cpu 900m (requests = limits), terminationGracePeriodSeconds 0.
    LowPriority,
    /// `pod-high-priority.yaml`: cpu 3000m (requests = limits), priority 10.
    HighPriority,
    /// `pod-large-cpu.yaml`: requests cpu 9, memory 500Mi, no limits (fits no default node).
    LargeCpu,
}

fn affinity_term(color: &str, topology_key: &str) -> Value {
    json!({
        "labelSelector": {"matchLabels": {"color": color}},
        "topologyKey": topology_key,
        "namespaces": [TEST, SETUP],
    })
}

fn spread(when: &str) -> Value {
    json!([{"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": when}])
}

/// One pod of `template`: one container `k8s.gcr.io/pause:3.2`, port 80, requests = limits =
/// cpu 100m, memory 500Mi, plus what the template adds.
fn pod(template: Template, namespace: &str, name: &str) -> Pod {
    let resources = json!({"cpu": "100m", "memory": "500Mi"});
    let mut v = json!({
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"containers": [{
            "name": "pause",
            "image": "k8s.gcr.io/pause:3.2",
            "ports": [{"containerPort": 80}],
            "resources": {"requests": resources, "limits": resources},
        }]},
    });
    let (labels, affinity, spec_extra): (Option<Value>, Option<Value>, Option<(&str, Value)>) =
        match template {
            Template::Default => (None, None, None),
            Template::PodAffinity => (
                Some(json!({"color": "blue"})),
                Some(json!({"podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution":
                        [affinity_term("blue", ZONE_BETA)],
                }})),
                None,
            ),
            Template::PodAntiAffinity => (
                Some(json!({"color": "green"})),
                Some(json!({"podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution":
                        [affinity_term("green", HOSTNAME)],
                }})),
                None,
            ),
            Template::PreferredPodAffinity => (
                Some(json!({"color": "red"})),
                Some(json!({"podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 1,
                        "podAffinityTerm": affinity_term("red", HOSTNAME),
                    }],
                }})),
                None,
            ),
            Template::PreferredPodAntiAffinity => (
                Some(json!({"color": "yellow"})),
                Some(json!({"podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [{
                        "weight": 1,
                        "podAffinityTerm": affinity_term("yellow", HOSTNAME),
                    }],
                }})),
                None,
            ),
            Template::NodeAffinity => (
                None,
                Some(json!({"nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [{"matchExpressions": [{
                            "key": ZONE_BETA,
                            "operator": "In",
                            "values": ["zone1", "zone2"],
                        }]}],
                    },
                }})),
                None,
            ),
            Template::TopologySpreading => (
                None,
                None,
                Some(("topologySpreadConstraints", spread("DoNotSchedule"))),
            ),
            Template::PreferredTopologySpreading => (
                None,
                None,
                Some(("topologySpreadConstraints", spread("ScheduleAnyway"))),
            ),
            Template::SecretVolume => (
                None,
                None,
                Some((
                    "volumes",
                    json!([{"name": "secret", "secret": {"secretName": "secret"}}]),
                )),
            ),
            Template::LowPriority | Template::HighPriority | Template::LargeCpu => {
                (None, None, None)
            }
        };
    let container = &mut v["spec"]["containers"][0]["resources"];
    match template {
        Template::LowPriority => {
            let r = json!({"cpu": "900m", "memory": "500Mi"});
            *container = json!({"requests": r, "limits": r});
            v["spec"]["terminationGracePeriodSeconds"] = json!(0);
        }
        Template::HighPriority => {
            let r = json!({"cpu": "3000m", "memory": "500Mi"});
            *container = json!({"requests": r, "limits": r});
            v["spec"]["priority"] = json!(10);
        }
        Template::LargeCpu => {
            *container = json!({"requests": {"cpu": "9", "memory": "500Mi"}});
        }
        _ => {}
    }
    if let Some(l) = &labels {
        v["metadata"]["labels"] = l.clone();
    }
    if let Some(a) = &affinity {
        v["spec"]["affinity"] = a.clone();
    }
    if let Some((k, e)) = &spec_extra {
        v["spec"][*k] = e.clone();
    }
    let pod: Pod = serde_json::from_value(v).expect("pod deserializes");
    // What the template sets must have survived deserialization (the model's structs ignore
    // unknown fields, so a misspelt field would silently vanish).
    let back = serde_json::to_value(&pod).expect("pod serializes");
    if let Some(l) = labels {
        assert_eq!(back["metadata"]["labels"], l, "{template:?} labels");
    }
    if let Some(a) = affinity {
        assert_eq!(back["spec"]["affinity"], a, "{template:?} affinity");
    }
    match (template, spec_extra) {
        // The model keeps a volume's name; a secret volume is nothing scheduling looks at
        // (as in kube, where no default filter reads secret volumes).
        (Template::SecretVolume, _) => {
            assert_eq!(back["spec"]["volumes"][0]["name"], "secret");
        }
        (_, Some((k, e))) => assert_eq!(back["spec"][k], e, "{template:?} {k}"),
        (_, None) => {}
    }
    assert_eq!(pod.spec.containers[0].resources.requests.len(), 2);
    let limits = if matches!(template, Template::LargeCpu) {
        0
    } else {
        2
    };
    assert_eq!(pod.spec.containers[0].resources.limits.len(), limits);
    if matches!(template, Template::HighPriority) {
        assert_eq!(pod.spec.priority, Some(10));
    }
    pod
}

// ---------------------------------------------------------------------------------------------
// Workloads

/// A `createPods` step: count pods of a template in a namespace.
struct PodOp {
    template: Template,
    namespace: &'static str,
    count: usize,
    /// `persistentVolumeTemplatePath` + `persistentVolumeClaimTemplatePath`: each pod gets its
    /// own PV and a claim bound to it.
    pvs: Pvs,
}

fn op(template: Template, namespace: &'static str, count: usize) -> PodOp {
    PodOp {
        template,
        namespace,
        count,
        pvs: Pvs::None,
    }
}

fn pv_op(namespace: &'static str, count: usize, pvs: Pvs) -> PodOp {
    PodOp {
        template: Template::Default,
        namespace,
        count,
        pvs,
    }
}

/// The PersistentVolume template of a `createPods` step.
#[derive(Clone, Copy, PartialEq)]
enum Pvs {
    None,
    /// `pv-aws.yaml`: an in-tree `awsElasticBlockStore` volume.
    Aws,
    /// `pv-csi.yaml`: a CSI volume of driver `ebs.csi.aws.com`.
    Csi,
}

/// kube's `CreatePodWithPersistentVolume` for pod `i` of a step in `namespace`: PV
/// `<namespace>-vol-<i>` (ReadOnlyMany, 1Gi, Retain; the AWS volume ID `vol-<i>`, the CSI
/// volume handle the PV's name), bound to claim `pvc-<i>` (`pvc.yaml`: ReadOnlyMany, 1Gi,
/// `pv.kubernetes.io/bind-completed`) and the claim bound to it.
fn pv_and_claim(pvs: Pvs, namespace: &str, i: usize) -> (PersistentVolume, PersistentVolumeClaim) {
    let pv_name = format!("{namespace}-vol-{i}");
    let claim_name = format!("pvc-{i}");
    let mut pv = json!({
        "metadata": {"name": pv_name},
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "capacity": {"storage": "1Gi"},
            "persistentVolumeReclaimPolicy": "Retain",
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "namespace": namespace,
                "name": claim_name,
                "apiVersion": "v1",
            },
        },
        "status": {"phase": "Bound"},
    });
    match pvs {
        Pvs::Aws => {
            pv["spec"]["awsElasticBlockStore"] = json!({"volumeID": format!("vol-{i}")});
        }
        Pvs::Csi => {
            pv["spec"]["csi"] = json!({"driver": EBS_CSI, "volumeHandle": pv_name});
        }
        Pvs::None => unreachable!("no PV template"),
    }
    let claim = json!({
        "metadata": {
            "name": claim_name,
            "namespace": namespace,
            "annotations": {"pv.kubernetes.io/bind-completed": "true"},
        },
        "spec": {
            "accessModes": ["ReadOnlyMany"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": pv_name,
        },
        "status": {"phase": "Bound"},
    });
    let pv_model: PersistentVolume = serde_json::from_value(pv.clone()).expect("pv");
    let claim_model: PersistentVolumeClaim = serde_json::from_value(claim).expect("pvc");
    // The volume source must have survived deserialization.
    let back = serde_json::to_value(&pv_model).expect("pv serializes");
    let source = if pvs == Pvs::Aws {
        "awsElasticBlockStore"
    } else {
        "csi"
    };
    let id = if pvs == Pvs::Aws {
        "volumeID"
    } else {
        "driver"
    };
    assert_eq!(back["spec"][source][id], pv["spec"][source][id], "{source}");
    assert_eq!(claim_model.spec.volume_name, pv_name);
    (pv_model, claim_model)
}

/// `pod` with the volume `vol` of claim `claim` (as `CreatePodWithPersistentVolume` sets it).
fn with_claim(pod: Pod, claim: &str) -> Pod {
    let mut v = serde_json::to_value(&pod).expect("pod serializes");
    let volumes = json!([{"name": "vol", "persistentVolumeClaim": {"claimName": claim}}]);
    v["spec"]["volumes"] = volumes.clone();
    let pod: Pod = serde_json::from_value(v).expect("pod deserializes");
    let back = serde_json::to_value(&pod).expect("pod serializes");
    assert_eq!(
        back["spec"]["volumes"][0]["persistentVolumeClaim"]["claimName"],
        claim
    );
    pod
}

/// One workload variant: nodes, init pods (in order) and measured pods.
struct Workload {
    name: &'static str,
    variant: &'static str,
    nodes: usize,
    labels: NodeLabels,
    csi: Csi,
    init: Vec<PodOp>,
    measured: PodOp,
}

const ZONE1: NodeLabels = NodeLabels::Cycle(ZONE_BETA, &["zone1"]);
const MOON: NodeLabels = NodeLabels::Cycle(ZONE, &["moon-1", "moon-2", "moon-3"]);
const UNIQUE_HOST: NodeLabels = NodeLabels::Unique(HOSTNAME);

/// The workloads whose features sched-core has. `five_thousand` selects the 5000Nodes variants (counts
/// from the workload description) or the 500Nodes ones (counts from kube's
/// performance-config.yaml, 500Nodes params).
fn workloads(five_thousand: bool) -> Vec<Workload> {
    use Template::*;
    let (variant, nodes) = if five_thousand {
        ("5000Nodes", 5000)
    } else {
        ("500Nodes", 500)
    };
    // (init, measured) counts of the simple workloads per variant.
    let c = |big: (usize, usize), small: (usize, usize)| if five_thousand { big } else { small };
    let mut w = Vec::new();
    let basic = c((1000, 1000), (500, 1000));
    w.push(Workload {
        name: "SchedulingBasic",
        variant,
        nodes,
        csi: Csi::None,
        labels: NodeLabels::None,
        init: vec![op(Default, DEFAULT_NS, basic.0)],
        measured: op(Default, DEFAULT_NS, basic.1),
    });
    if five_thousand {
        // 500 nodes in both variants; one entry (named after the 5000Nodes variant).
        w.push(Workload {
            name: "SchedulingPodAntiAffinity",
            variant,
            nodes: 500,
            csi: Csi::None,
            labels: UNIQUE_HOST,
            init: vec![op(PodAntiAffinity, SETUP, 100)],
            measured: op(PodAntiAffinity, TEST, 400),
        });
        // Not in the workload description: the counts that kube's performance-config.yaml gives
        // its 5000Nodes variant (5000 nodes, 1000 init pods, 1000 measured), with the same
        // hostname labelling, so that figures measured on kube at 5000 nodes have a peer.
        w.push(Workload {
            name: "SchedulingPodAntiAffinity",
            variant: "5000NodesKubeCounts",
            nodes: 5000,
            csi: Csi::None,
            labels: UNIQUE_HOST,
            init: vec![op(PodAntiAffinity, SETUP, 1000)],
            measured: op(PodAntiAffinity, TEST, 1000),
        });
    }
    let secrets = c((5000, 1000), (500, 1000));
    w.push(Workload {
        name: "SchedulingSecrets",
        variant,
        nodes,
        csi: Csi::None,
        labels: NodeLabels::None,
        init: vec![op(SecretVolume, DEFAULT_NS, secrets.0)],
        measured: op(SecretVolume, DEFAULT_NS, secrets.1),
    });
    let aff = c((5000, 1000), (500, 1000));
    w.push(Workload {
        name: "SchedulingPodAffinity",
        variant,
        nodes,
        csi: Csi::None,
        labels: ZONE1,
        init: vec![op(PodAffinity, SETUP, aff.0)],
        measured: op(PodAffinity, TEST, aff.1),
    });
    w.push(Workload {
        name: "SchedulingPreferredPodAffinity",
        variant,
        nodes,
        csi: Csi::None,
        labels: UNIQUE_HOST,
        init: vec![op(PreferredPodAffinity, SETUP, aff.0)],
        measured: op(PreferredPodAffinity, TEST, aff.1),
    });
    w.push(Workload {
        name: "SchedulingPreferredPodAntiAffinity",
        variant,
        nodes,
        csi: Csi::None,
        labels: UNIQUE_HOST,
        init: vec![op(PreferredPodAntiAffinity, SETUP, aff.0)],
        measured: op(PreferredPodAntiAffinity, TEST, aff.1),
    });
    w.push(Workload {
        name: "SchedulingNodeAffinity",
        variant,
        nodes,
        csi: Csi::None,
        labels: ZONE1,
        init: vec![op(NodeAffinity, DEFAULT_NS, aff.0)],
        measured: op(NodeAffinity, DEFAULT_NS, aff.1),
    });
    let spreading = c((5000, 2000), (1000, 1000));
    w.push(Workload {
        name: "TopologySpreading",
        variant,
        nodes,
        csi: Csi::None,
        labels: MOON,
        init: vec![op(Default, DEFAULT_NS, spreading.0)],
        measured: op(TopologySpreading, DEFAULT_NS, spreading.1),
    });
    w.push(Workload {
        name: "PreferredTopologySpreading",
        variant,
        nodes,
        csi: Csi::None,
        labels: MOON,
        init: vec![op(Default, DEFAULT_NS, spreading.0)],
        measured: op(PreferredTopologySpreading, DEFAULT_NS, spreading.1),
    });
    // The volume workloads: each pod with its own PV and bound claim; pods of the init step
    // in `namespace-1`, measured ones in `namespace-2` (scheduler_perf names a step's
    // namespace after its index).
    let pvs = c((5000, 1000), (500, 1000));
    for (name, csi, kind) in [
        ("SchedulingInTreePVs", Csi::None, Pvs::Aws),
        ("SchedulingMigratedInTreePVs", Csi::Migrated, Pvs::Aws),
        ("SchedulingCSIPVs", Csi::Driver, Pvs::Csi),
    ] {
        w.push(Workload {
            name,
            variant,
            nodes,
            labels: NodeLabels::None,
            csi,
            init: vec![pv_op("namespace-1", pvs.0, kind)],
            measured: pv_op("namespace-2", pvs.1, kind),
        });
    }
    let mixed = if five_thousand { 2000 } else { 200 };
    w.push(Workload {
        name: "MixedSchedulingBasePod",
        variant,
        nodes,
        csi: Csi::None,
        labels: ZONE1,
        init: [
            Default,
            PodAffinity,
            PodAntiAffinity,
            PreferredPodAffinity,
            PreferredPodAntiAffinity,
        ]
        .into_iter()
        .map(|t| op(t, SETUP, mixed))
        .collect(),
        measured: op(Default, DEFAULT_NS, 1000),
    });
    w
}

// ---------------------------------------------------------------------------------------------
// Profiles

/// kube v1.20.2's default legacy Policy, single-threaded (as `benches/sched_core.rs`).
fn legacy_profile(percentage: u32) -> Profile {
    let mut policy = Policy::kube_default();
    policy.percentage_of_nodes_to_score = Some(i64::from(percentage));
    policy
        .builder()
        .and_then(|b| Ok(b.threads(1).seed(42).build()?))
        .expect("default policy compiles")
}

/// kube-scheduler v1.34's default profile from a `KubeSchedulerConfiguration`, single-threaded.
fn v1_34_profile(percentage: u32) -> Profile {
    let config = SchedulerConfiguration::from_text(&format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         percentageOfNodesToScore: {percentage}\n"
    ))
    .expect("valid configuration");
    let mut builders = config.builders(&Registry::v1_34()).expect("compiles");
    builders
        .remove(0)
        .1
        .threads(1)
        .seed(42)
        .build()
        .expect("builds")
}

/// Builds a profile for a percentageOfNodesToScore.
type MakeProfile = fn(u32) -> Profile;

const PROFILES: [(&str, MakeProfile); 2] = [("legacy", legacy_profile), ("v1_34", v1_34_profile)];
const PERCENTAGES: [(&str, u32); 2] = [("adaptive", 0), ("all", 100)];

// ---------------------------------------------------------------------------------------------
// Running a workload

/// The cluster after the init pods, and the measured pods in order.
struct Prepared {
    after_init: Snapshot,
    measured: Vec<Pod>,
    init_unschedulable: usize,
    init_time: Duration,
}

/// Pod `i` of a step (with its claim when the step creates volumes).
fn step_pod(o: &PodOp, name: &str, i: usize) -> Pod {
    let p = pod(o.template, o.namespace, name);
    match o.pvs {
        Pvs::None => p,
        _ => with_claim(p, &format!("pvc-{i}")),
    }
}

fn prepare(w: &Workload, profile: &Profile, cache: &mut sched_core::profile::Cache) -> Prepared {
    let nodes: Vec<Node> = (0..w.nodes).map(|i| node(i, w.labels, w.csi)).collect();
    let mut snapshot = Snapshot::from_objects(nodes, Vec::new()).expect("snapshot");
    // The storage objects of every step exist before its pods are scheduled.
    let mut storage = StorageObjects::new();
    storage.csi_nodes = (0..w.nodes).filter_map(|i| csi_node(i, w.csi)).collect();
    for o in w.init.iter().chain([&w.measured]) {
        if o.pvs != Pvs::None {
            for i in 0..o.count {
                let (pv, claim) = pv_and_claim(o.pvs, o.namespace, i);
                storage.persistent_volumes.push(pv);
                storage.persistent_volume_claims.push(claim);
            }
        }
    }
    if !(storage.csi_nodes.is_empty() && storage.persistent_volumes.is_empty()) {
        snapshot.set_storage(storage);
    }
    let start = Instant::now();
    let mut init_unschedulable = 0;
    for (k, o) in w.init.iter().enumerate() {
        for i in 0..o.count {
            let p = step_pod(o, &format!("init-{k}-{i}"), i);
            match profile.schedule_and_assume(cache, &p, &mut snapshot) {
                Ok(_) => {}
                Err(ScheduleError::Unschedulable(_)) => init_unschedulable += 1,
                Err(e) => panic!("{} init pod {i}: {e}", w.name),
            }
        }
    }
    let init_time = start.elapsed();
    let measured = (0..w.measured.count)
        .map(|i| step_pod(&w.measured, &format!("measured-{i}"), i))
        .collect();
    Prepared {
        after_init: snapshot,
        measured,
        init_unschedulable,
        init_time,
    }
}

/// The measured pods scheduled so far: the current pass and every timing.
struct Run {
    prepared: Prepared,
    snapshot: Snapshot,
    cache: sched_core::profile::Cache,
    next: usize,
    durations: Vec<Duration>,
    /// Measured pods that fit nowhere, in the first pass.
    unschedulable_first_pass: usize,
    passes: usize,
}

impl Run {
    /// Schedules the next measured pod, timed; starts a new pass from the init state (untimed)
    /// after the last one.
    fn step(&mut self, profile: &Profile) -> Duration {
        if self.next == self.prepared.measured.len() {
            self.snapshot = self.prepared.after_init.clone();
            self.next = 0;
            self.passes += 1;
        }
        let pod = &self.prepared.measured[self.next];
        let t = Instant::now();
        let r = profile.schedule_and_assume(&mut self.cache, pod, &mut self.snapshot);
        let d = t.elapsed();
        match r {
            Ok(r) => {
                std::hint::black_box(r);
            }
            Err(ScheduleError::Unschedulable(_)) => {
                if self.passes == 0 {
                    self.unschedulable_first_pass += 1;
                }
            }
            Err(e) => panic!("measured pod {}: {e}", self.next),
        }
        self.next += 1;
        self.durations.push(d);
        d
    }
}

/// One line of the final table.
struct Row {
    workload: String,
    profile: &'static str,
    percentage: &'static str,
    nodes: usize,
    pods_timed: usize,
    passes: usize,
    median: Duration,
    p99: Duration,
    pods_per_sec: f64,
    init_pods: usize,
    init_unschedulable: usize,
    init_time: Duration,
    unschedulable: usize,
}

static ROWS: Mutex<Vec<Row>> = Mutex::new(Vec::new());

/// The nearest-rank percentile of sorted durations.
fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn bench_workload(c: &mut Criterion, w: &Workload) {
    let mut group = c.benchmark_group(format!("{}/{}", w.name, w.variant));
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_secs(1));
    for (pname, make) in PROFILES {
        for (pct_name, pct) in PERCENTAGES {
            let profile = make(pct);
            let mut run: Option<Run> = None;
            group.bench_function(format!("{pname}/{pct_name}"), |b| {
                let run = run.get_or_insert_with(|| {
                    let mut cache = profile.create_cache();
                    let prepared = prepare(w, &profile, &mut cache);
                    let snapshot = prepared.after_init.clone();
                    Run {
                        prepared,
                        snapshot,
                        cache,
                        next: 0,
                        durations: Vec::new(),
                        unschedulable_first_pass: 0,
                        passes: 0,
                    }
                });
                b.iter_custom(|iters| (0..iters).map(|_| run.step(&profile)).sum());
            });
            let Some(mut run) = run else { continue };
            // Complete the pass criterion left unfinished, so every measured pod is timed as
            // often as every other.
            while run.next < run.prepared.measured.len() {
                run.step(&profile);
            }
            let passes = run.passes + 1;
            let mut sorted = run.durations.clone();
            sorted.sort_unstable();
            let total: Duration = sorted.iter().sum();
            ROWS.lock().expect("rows").push(Row {
                workload: format!("{}/{}", w.name, w.variant),
                profile: pname,
                percentage: pct_name,
                nodes: w.nodes,
                pods_timed: sorted.len(),
                passes,
                median: percentile(&sorted, 50.0),
                p99: percentile(&sorted, 99.0),
                pods_per_sec: sorted.len() as f64 / total.as_secs_f64(),
                init_pods: w.init.iter().map(|o| o.count).sum(),
                init_unschedulable: run.prepared.init_unschedulable,
                init_time: run.prepared.init_time,
                unschedulable: run.unschedulable_first_pass,
            });
        }
    }
    group.finish();
}

fn fmt(d: Duration) -> String {
    let us = d.as_secs_f64() * 1e6;
    if us >= 1000.0 {
        format!("{:.2} ms", us / 1000.0)
    } else {
        format!("{us:.1} us")
    }
}

fn five_thousand_nodes(c: &mut Criterion) {
    for w in workloads(true) {
        bench_workload(c, &w);
    }
}

fn five_hundred_nodes(c: &mut Criterion) {
    for w in workloads(false) {
        bench_workload(c, &w);
    }
}

/// Prints the per-pod figures of every workload that ran.
fn report(_: &mut Criterion) {
    let rows = ROWS.lock().expect("rows");
    if rows.is_empty() {
        return;
    }
    println!();
    println!("scheduler_perf per measured pod (schedule_and_assume, one thread), whole passes:");
    println!(
        "| workload | nodes | profile | score | median | p99 | pods/s | timed pods (passes) | \
         init pods (unschedulable, time) | measured unschedulable |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in rows.iter() {
        println!(
            "| {} | {} | {} | {} | {} | {} | {:.0} | {} ({}) | {} ({}, {:.1} s) | {} |",
            r.workload,
            r.nodes,
            r.profile,
            r.percentage,
            fmt(r.median),
            fmt(r.p99),
            r.pods_per_sec,
            r.pods_timed,
            r.passes,
            r.init_pods,
            r.init_unschedulable,
            r.init_time.as_secs_f64(),
            r.unschedulable,
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The scheduling cycle end to end

/// A workload run through the scheduling engine (`Scheduler`): every pod enters as an informer
/// event, each step is taken as a caller takes it (a binder that only records: the bind
/// succeeds at once and the informer's report of the bound pod follows; preemption victims are
/// deleted at once), and the simulated clock jumps to the next backoff end when the engine is
/// idle. One criterion iteration is one measured pod, from its arrival until it is bound (or
/// found unschedulable); `clock_step` of simulated time passes between measured pods, so that
/// the queue's timers (backoff, the 5-minute stay of unschedulable pods) run as they would.
struct CycleWorkload {
    name: &'static str,
    variant: &'static str,
    nodes: usize,
    init: PodOp,
    measured: PodOp,
}

fn cycle_workloads() -> Vec<CycleWorkload> {
    use Template::*;
    vec![
        CycleWorkload {
            name: "SchedulingBasic",
            variant: "5000Nodes",
            nodes: 5000,
            init: op(Default, DEFAULT_NS, 1000),
            measured: op(Default, DEFAULT_NS, 1000),
        },
        CycleWorkload {
            name: "Preemption",
            variant: "500Nodes",
            nodes: 500,
            init: op(LowPriority, DEFAULT_NS, 2000),
            measured: op(HighPriority, DEFAULT_NS, 500),
        },
        CycleWorkload {
            name: "Preemption",
            variant: "5000Nodes",
            nodes: 5000,
            init: op(LowPriority, DEFAULT_NS, 20000),
            measured: op(HighPriority, DEFAULT_NS, 5000),
        },
        CycleWorkload {
            name: "Unschedulable",
            variant: "5000Nodes",
            nodes: 5000,
            init: op(LargeCpu, DEFAULT_NS, 200),
            measured: op(Default, DEFAULT_NS, 5000),
        },
        CycleWorkload {
            name: "Unschedulable",
            variant: "5000Nodes_2000Init",
            nodes: 5000,
            init: op(LargeCpu, DEFAULT_NS, 2000),
            measured: op(Default, DEFAULT_NS, 5000),
        },
    ]
}

/// Simulated time between two measured pods.
const CLOCK_STEP: Duration = Duration::from_millis(100);

/// Builds a scheduling engine over the workload's nodes with one profile: the legacy default
/// Policy or v1.34's default configuration, adaptive percentage, one thread.
fn cycle_scheduler(w: &CycleWorkload, profile: &str) -> Scheduler {
    let nodes: Vec<Node> = (0..w.nodes)
        .map(|i| node(i, NodeLabels::None, Csi::None))
        .collect();
    let snapshot = Snapshot::from_objects(nodes, Vec::new()).expect("snapshot");
    match profile {
        "legacy" => Scheduler::new(
            vec![("default-scheduler".to_string(), legacy_profile(0))],
            snapshot,
            QueueSettings::default(),
        ),
        _ => {
            let config = SchedulerConfiguration::from_text(
                "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
                 percentageOfNodesToScore: 0\n",
            )
            .expect("valid configuration");
            Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 42).expect("compiles")
        }
    }
}

/// The engine and the pods it has been given, driven as a caller drives it.
struct Cycle {
    sched: Scheduler,
    now: Duration,
    /// Pending pods by key, to report them bound.
    pending: std::collections::HashMap<String, Pod>,
    victims: usize,
    preemptions: usize,
    /// Scheduling attempts of pods other than the one being measured.
    other_attempts: usize,
}

impl Cycle {
    fn new(sched: Scheduler) -> Cycle {
        Cycle {
            sched,
            now: Duration::ZERO,
            pending: std::collections::HashMap::new(),
            victims: 0,
            preemptions: 0,
            other_attempts: 0,
        }
    }

    /// Adds `pod` and takes steps until it is bound (`true`), found unschedulable with nothing
    /// left to try (`false`), or the engine has nothing to do.
    fn run_pod(&mut self, pod: Pod) -> bool {
        let key = pod.key();
        self.pending.insert(key.clone(), pod.clone());
        self.sched.apply(ClusterEvent::PodAdd(pod), self.now);
        loop {
            match self.sched.schedule_one(self.now) {
                Step::Bind { pod, node, .. } => {
                    self.sched.finish_binding(&pod, Ok(()), self.now);
                    if let Some(mut p) = self.pending.remove(&pod) {
                        p.spec.node_name = node;
                        self.sched.apply(ClusterEvent::PodUpdate(p), self.now);
                    }
                    if pod == key {
                        return true;
                    }
                    self.other_attempts += 1;
                }
                Step::Preempt { pod, victims, .. } => {
                    if pod != key {
                        self.other_attempts += 1;
                    }
                    self.preemptions += 1;
                    self.victims += victims.len();
                    for v in victims {
                        self.sched.apply(ClusterEvent::PodDelete(v), self.now);
                    }
                }
                Step::Unschedulable { pod, .. } => {
                    if pod == key {
                        return false;
                    }
                    self.other_attempts += 1;
                }
                Step::Idle { until: Some(t) }
                    if self.sched.queue().position(&key) == Some(QueueName::Backoff) =>
                {
                    // The pod waits for a backoff: jump the simulated clock to it.
                    self.now = self.now.max(t);
                }
                Step::Idle { .. } => return false,
                other => panic!("unexpected step {other:?}"),
            }
        }
    }
}

/// The state after the init pods, the measured pods, and every timing.
struct CycleRun {
    cycle: Cycle,
    measured: Vec<Pod>,
    next: usize,
    durations: Vec<Duration>,
    passes: usize,
    unschedulable_first_pass: usize,
    victims_first_pass: usize,
    other_attempts_first_pass: usize,
    init_time: Duration,
}

fn cycle_prepare(w: &CycleWorkload, profile: &str) -> (Cycle, Duration) {
    let mut cycle = Cycle::new(cycle_scheduler(w, profile));
    let start = Instant::now();
    for i in 0..w.init.count {
        let p = pod(w.init.template, w.init.namespace, &format!("init-{i}"));
        cycle.run_pod(p);
    }
    cycle.victims = 0;
    cycle.preemptions = 0;
    cycle.other_attempts = 0;
    (cycle, start.elapsed())
}

impl CycleRun {
    fn step(&mut self, w: &CycleWorkload, profile: &str) -> Duration {
        if self.next == self.measured.len() {
            if self.passes == 0 {
                self.victims_first_pass = self.cycle.victims;
                self.other_attempts_first_pass = self.cycle.other_attempts;
            }
            self.cycle = cycle_prepare(w, profile).0;
            self.next = 0;
            self.passes += 1;
        }
        let pod = self.measured[self.next].clone();
        self.cycle.now += CLOCK_STEP;
        let t = Instant::now();
        let bound = self.cycle.run_pod(pod);
        let d = t.elapsed();
        if !bound && self.passes == 0 {
            self.unschedulable_first_pass += 1;
        }
        self.next += 1;
        self.durations.push(d);
        d
    }
}

/// One line of the cycle table.
struct CycleRow {
    workload: String,
    profile: &'static str,
    pods_timed: usize,
    passes: usize,
    median: Duration,
    p99: Duration,
    pods_per_sec: f64,
    victims_per_pod: f64,
    other_attempts: usize,
    init_pods: usize,
    init_time: Duration,
    unschedulable: usize,
}

static CYCLE_ROWS: Mutex<Vec<CycleRow>> = Mutex::new(Vec::new());

fn bench_cycle(c: &mut Criterion, w: &CycleWorkload) {
    let mut group = c.benchmark_group(format!("cycle/{}/{}", w.name, w.variant));
    group.sample_size(10);
    group.warm_up_time(Duration::from_millis(300));
    group.measurement_time(Duration::from_secs(1));
    for profile in ["legacy", "v1_34"] {
        let mut run: Option<CycleRun> = None;
        group.bench_function(profile, |b| {
            let run = run.get_or_insert_with(|| {
                let (cycle, init_time) = cycle_prepare(w, profile);
                let measured = (0..w.measured.count)
                    .map(|i| {
                        pod(
                            w.measured.template,
                            w.measured.namespace,
                            &format!("measured-{i}"),
                        )
                    })
                    .collect();
                CycleRun {
                    cycle,
                    measured,
                    next: 0,
                    durations: Vec::new(),
                    passes: 0,
                    unschedulable_first_pass: 0,
                    victims_first_pass: 0,
                    other_attempts_first_pass: 0,
                    init_time,
                }
            });
            b.iter_custom(|iters| (0..iters).map(|_| run.step(w, profile)).sum());
        });
        let Some(mut run) = run else { continue };
        while run.next < run.measured.len() {
            run.step(w, profile);
        }
        if run.passes == 0 {
            run.victims_first_pass = run.cycle.victims;
            run.other_attempts_first_pass = run.cycle.other_attempts;
        }
        let mut sorted = run.durations.clone();
        sorted.sort_unstable();
        let total: Duration = sorted.iter().sum();
        CYCLE_ROWS.lock().expect("rows").push(CycleRow {
            workload: format!("{}/{}", w.name, w.variant),
            profile,
            pods_timed: sorted.len(),
            passes: run.passes + 1,
            median: percentile(&sorted, 50.0),
            p99: percentile(&sorted, 99.0),
            pods_per_sec: sorted.len() as f64 / total.as_secs_f64(),
            victims_per_pod: run.victims_first_pass as f64 / w.measured.count as f64,
            other_attempts: run.other_attempts_first_pass,
            init_pods: w.init.count,
            init_time: run.init_time,
            unschedulable: run.unschedulable_first_pass,
        });
    }
    group.finish();
}

fn scheduling_cycle(c: &mut Criterion) {
    for w in cycle_workloads() {
        bench_cycle(c, &w);
    }
}

/// Prints the end-to-end figures of every cycle workload that ran.
fn cycle_report(_: &mut Criterion) {
    let rows = CYCLE_ROWS.lock().expect("rows");
    if rows.is_empty() {
        return;
    }
    println!();
    println!(
        "scheduling cycle end to end per measured pod (Scheduler::apply + schedule_one + \
         finish_binding, one thread), whole passes:"
    );
    println!(
        "| workload | profile | median | p99 | pods/s | victims per pod | other pods' attempts | \
         timed pods (passes) | init pods (time) | measured unschedulable |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for r in rows.iter() {
        println!(
            "| {} | {} | {} | {} | {:.0} | {:.2} | {} | {} ({}) | {} ({:.1} s) | {} |",
            r.workload,
            r.profile,
            fmt(r.median),
            fmt(r.p99),
            r.pods_per_sec,
            r.victims_per_pod,
            r.other_attempts,
            r.pods_timed,
            r.passes,
            r.init_pods,
            r.init_time.as_secs_f64(),
            r.unschedulable,
        );
    }
}

criterion_group!(
    benches,
    five_thousand_nodes,
    five_hundred_nodes,
    scheduling_cycle,
    report,
    cycle_report
);
criterion_main!(benches);
