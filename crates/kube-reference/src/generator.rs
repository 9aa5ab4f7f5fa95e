//! Random realistic clusters, from a seed: the inputs of the differential suite.
//!
//! A case is what `kubectl get -o json` would give for a small cluster (1 to 60 nodes): nodes
//! with zones, instance types, taints, images and extended resources; running pods and pending
//! pods with today's pod fields (requests and limits, init and sidecar containers, overhead,
//! pod-level resources, host ports, node selectors and node affinity with `matchFields`,
//! tolerations, inter-pod affinity with namespaces, `namespaceSelector` and `matchLabelKeys`,
//! topology spread constraints with every option, scheduling gates, priorities and preemption
//! policies, volumes); and the objects around them (namespaces with labels, Services,
//! ReplicaSets and StatefulSets owning pods, PodDisruptionBudgets, PersistentVolumes, claims,
//! StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities), sometimes with a
//! `KubeSchedulerConfiguration` of one or two profiles. Objects are written as the API server
//! stores them (defaults applied: requests copied from limits, priorities resolved, overhead
//! set from the runtime class), so both sides read the same thing.
//!
//! About a third of the cases are about preemption: most nodes filled with running pods of
//! low priority (some of high priority, a few system-critical ones), pending pods of high
//! priority that need room (a fifth of them with `preemptionPolicy: Never`), more
//! PodDisruptionBudgets, pending pods nominated to a node by an earlier preemption
//! (`status.nominatedNodeName`), and victims of it still terminating there.
//!
//! About one case in five ([`is_dra`], large cases left out) gets dynamic resource allocation
//! (`resource.k8s.io/v1`, module `dra`): DeviceClasses with CEL selectors on driver, attributes,
//! capacity and driver version; ResourceSlices of GPUs (and NICs) per node, some pools split in
//! two slices or beside a stale older generation, network-attached devices on a zone's nodes
//! or on all nodes; ResourceClaims with `exactly` requests (ExactCount or All, with selectors),
//! `firstAvailable` subrequests and `matchAttribute` constraints, standalone, shared, or made
//! from ResourceClaimTemplates for their pod as kube's controller makes them; running pods
//! holding allocated claims (one or two pods each), an allocated claim no pod holds, and
//! pending pods whose claim does not exist or was not created yet. Those draws come from a
//! stream of their own, so the cases without DRA are what they were before it came.
//!
//! The same seed gives the same case, byte for byte.

use std::collections::BTreeMap;
use std::io;
use std::path::Path;

use rand::seq::IndexedRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Map, Value, json};

mod dra;

pub use dra::{GPU_DRIVER, is_dra};

/// A generated case: the objects of each file and the configuration, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct GenCase {
    /// The seed it came from.
    pub seed: u64,
    /// `nodes.json`'s items.
    pub nodes: Vec<Value>,
    /// `pods.json`'s items: running pods (with `spec.nodeName`) and pending pods, in the order
    /// they are scheduled.
    pub pods: Vec<Value>,
    /// `objects.json`'s items.
    pub objects: Vec<Value>,
    /// `config.yaml`, when the case has one.
    pub config: Option<String>,
}

impl GenCase {
    /// Writes the case folder (created if missing): `nodes.json`, `pods.json`, `objects.json`
    /// as kubectl's `List`s, and `config.yaml` when there is one (an old one is removed).
    pub fn write(&self, dir: &Path) -> io::Result<()> {
        std::fs::create_dir_all(dir)?;
        let list = |items: &[Value]| {
            let doc = json!({"apiVersion": "v1", "kind": "List", "metadata": {}, "items": items});
            serde_json::to_string_pretty(&doc).map(|s| s + "\n")
        };
        std::fs::write(dir.join("nodes.json"), list(&self.nodes)?)?;
        std::fs::write(dir.join("pods.json"), list(&self.pods)?)?;
        std::fs::write(dir.join("objects.json"), list(&self.objects)?)?;
        let config = dir.join("config.yaml");
        match &self.config {
            Some(text) => std::fs::write(config, text)?,
            None if config.exists() => std::fs::remove_file(config)?,
            None => {}
        }
        Ok(())
    }

    /// The number of pending pods (pods without `spec.nodeName`).
    pub fn pending(&self) -> usize {
        self.pods
            .iter()
            .filter(|p| p["spec"]["nodeName"].as_str().is_none_or(str::is_empty))
            .count()
    }
}

/// The case of a seed.
pub fn generate(seed: u64) -> GenCase {
    Gen::new(seed).case()
}

/// Names of the second profile and of a scheduler no profile serves.
pub const SECOND_PROFILE: &str = "batch-scheduler";
const UNKNOWN_SCHEDULER: &str = "other-scheduler";

const APPS: &[&str] = &[
    "web", "api", "cache", "db", "worker", "search", "batch", "trainer",
];
const NAMESPACES: &[&str] = &["default", "data", "ml", "shop"];
const TEAMS: &[&str] = &["core", "data", "ml"];
/// Images with their sizes, around ImageLocality's thresholds (23 MB and 1000 MB).
const IMAGES: &[(&str, i64)] = &[
    ("registry.k8s.io/pause:3.10", 514_000),
    ("nginx:1.27", 72_000_000),
    ("redis:7.4", 117_000_000),
    ("postgres:16", 432_000_000),
    ("busybox:1.36", 4_270_000),
    ("python:3.12", 1_020_000_000),
    ("example.com/ml/trainer:v2", 2_300_000_000),
    ("example.com/shop/api:1.8.3", 31_000_000),
];
const CPU: &[&str] = &["50m", "100m", "250m", "500m", "1", "1500m", "2", "3"];
const MEMORY: &[&str] = &[
    "64Mi", "128Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi", "6Gi",
];
const GPU: &str = "nvidia.com/gpu";
const FPGA: &str = "example.com/fpga";

struct Universe {
    provider: &'static str,
    zones: Vec<String>,
    region: String,
    namespaces: Vec<&'static str>,
    /// Whether the case has a second profile, and its name.
    second_profile: bool,
    /// CSI driver of the storage objects.
    driver: &'static str,
    /// Whether the case is about preemption: nodes filled with running pods, mostly of low
    /// priority, and pending pods of high priority that need room (some that may not
    /// preempt), with more PodDisruptionBudgets.
    pressure: bool,
    /// Whether the case is a large one ([`is_large`]): more than 100 nodes, a configuration
    /// that sets the percentage of nodes to score, and pending pods in a row that may not
    /// preempt.
    large: bool,
}

/// What a pod must be, beyond what the generator draws.
#[derive(Clone, Copy, Default)]
struct PodOpts {
    /// The pod's cpu request in millicores (its first container's; the others request none).
    cpu: Option<i64>,
    /// The pod's priority class: (name, value), and whether it may preempt.
    priority: Option<(&'static str, i32, bool)>,
    /// A pending pod's `status.nominatedNodeName` (the index of the node).
    nominated: Option<usize>,
}

/// One seed in this many gives a large case ([`is_large`]).
pub const LARGE_EVERY: u64 = 12;

/// What `aux`'s seed is the case's seed xor'ed with.
const AUX_STREAM: u64 = 0x5eed_a0c5_0000_0001;

/// Whether the seed's case is a large one: every [`LARGE_EVERY`]th seed (11, 23, 35, ...)
/// gives 101 to 400 nodes, kube's adaptive percentage of nodes to score (50 - nodes/125 %,
/// at least 100 nodes) or a percentage the configuration sets (globally or for the profile),
/// and 8 to 24 pending pods in a row, so kube's rotating start index decides which nodes each
/// pod's search evaluates. Their pending pods may not preempt (kube's dry run on more than
/// 100 nodes starts at a random node).
pub fn is_large(seed: u64) -> bool {
    seed % LARGE_EVERY == LARGE_EVERY - 1
}

/// Priority classes of preemption cases: (name, value).
const LOW_CLASSES: &[(&str, i32)] = &[("", 0), ("low", 100), ("best-effort", -10)];

struct Gen {
    rng: ChaCha8Rng,
    /// A second stream for what later versions of the generator added, so that adding it left
    /// the earlier draws, and the cases without it, as they were.
    aux: ChaCha8Rng,
    seed: u64,
    u: Universe,
    node_names: Vec<String>,
    /// Node name -> labels (for selectors that match something).
    node_labels: Vec<Map<String, Value>>,
    /// Running pods' cpu requests per node (to keep most nodes within capacity).
    node_cpu_free: Vec<i64>,
    objects: Vec<Value>,
    /// Claims pods may use: (namespace, name).
    claims: Vec<(String, String)>,
    /// `ReadWriteOncePod` claims: (namespace, name), and whether a running pod uses it (only
    /// one pod may).
    rwop: Vec<(String, String, bool)>,
    /// Nodes where a victim of an earlier preemption is still terminating.
    preempting: Vec<usize>,
    /// Workloads owning pods: (namespace, app, kind, name).
    owners: Vec<(String, String, &'static str, String)>,
    serial: usize,
}

fn hex(rng: &mut ChaCha8Rng, n: usize) -> String {
    (0..n)
        .map(|_| char::from_digit(rng.random_range(0..16), 16).unwrap_or('0'))
        .collect()
}

fn cpu_millis(q: &str) -> i64 {
    match q.strip_suffix('m') {
        Some(m) => m.parse().unwrap_or(0),
        None => q.parse::<i64>().map(|c| c * 1000).unwrap_or(0),
    }
}

impl Gen {
    fn new(seed: u64) -> Gen {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let provider = *["aws", "gke", "plain"].choose(&mut rng).unwrap_or(&"plain");
        let (region, zone_names): (&str, &[&str]) = match provider {
            "aws" => ("us-east-1", &["us-east-1a", "us-east-1b", "us-east-1c"]),
            "gke" => (
                "europe-west1",
                &["europe-west1-b", "europe-west1-c", "europe-west1-d"],
            ),
            _ => ("dc1", &["rack-1", "rack-2", "rack-3"]),
        };
        let nzones = rng.random_range(1..=zone_names.len());
        let zones = zone_names[..nzones].iter().map(|z| z.to_string()).collect();
        let count = rng.random_range(1..=NAMESPACES.len());
        let namespaces = NAMESPACES[..count].to_vec();
        let driver = if provider == "gke" {
            "pd.csi.storage.gke.io"
        } else {
            "ebs.csi.aws.com"
        };
        let second_profile = rng.random_bool(0.15);
        let pressure = rng.random_bool(0.35);
        // A large case is not about preemption: kube's dry run on more than 100 nodes starts
        // at a random node (and the replay cannot follow a random pick).
        let large = is_large(seed);
        let pressure = pressure && !large;
        // The draws of large cases come from their own stream, so the other seeds' cases stay
        // what they were.
        let aux = ChaCha8Rng::seed_from_u64(seed ^ AUX_STREAM);
        Gen {
            aux,
            rng,
            seed,
            u: Universe {
                provider,
                zones,
                region: region.into(),
                namespaces,
                second_profile,
                driver,
                pressure,
                large,
            },
            node_names: Vec::new(),
            node_labels: Vec::new(),
            node_cpu_free: Vec::new(),
            objects: Vec::new(),
            claims: Vec::new(),
            rwop: Vec::new(),
            preempting: Vec::new(),
            owners: Vec::new(),
            serial: 0,
        }
    }

    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        let i = self.rng.random_range(0..items.len());
        &items[i]
    }

    fn case(mut self) -> GenCase {
        let nodes = self.nodes();
        self.namespaces();
        self.workloads();
        self.storage();
        let config = self.config();
        let mut pods = Vec::new();
        if self.u.pressure {
            self.fill(&mut pods);
        }
        let bound = match self.rng.random_range(0..10) {
            _ if self.u.large => self.aux.random_range(0..=nodes.len()),
            0 => 0,
            1..=6 => self.rng.random_range(0..=nodes.len() * 2),
            _ => self.rng.random_range(nodes.len()..=nodes.len() * 4),
        };
        for _ in 0..bound {
            let node = self.rng.random_range(0..nodes.len());
            pods.push(self.pod(Some(node)));
        }
        let mut pending = self.rng.random_range(1..=16);
        if self.u.large {
            pending = self.aux.random_range(8..=24);
        }
        for _ in 0..pending {
            let mut opts = if self.u.pressure && self.chance(0.6) {
                self.preemptor()
            } else {
                PodOpts::default()
            };
            if self.u.large && self.aux.random_bool(0.15) {
                // Nominated earlier: kube tries that node first, and counts it as processed
                // when it does not fit there, whether or not the search reaches it.
                opts.nominated = Some(self.aux.random_range(0..nodes.len()));
            }
            let mut pod = self.pod_with(None, opts);
            if self.u.large {
                pod["spec"]["preemptionPolicy"] = json!("Never");
            }
            pods.push(pod);
        }
        self.pdbs();
        let mut case = GenCase {
            seed: self.seed,
            nodes,
            pods,
            objects: self.objects,
            config,
        };
        dra::add(&mut case);
        case
    }

    // ----- preemption ----------------------------------------------------------------------

    /// Fills most nodes with running pods (one to four each) that leave little cpu free,
    /// mostly of low priority, some of high priority and a few system-critical ones that no
    /// pod may preempt.
    fn fill(&mut self, pods: &mut Vec<Value>) {
        for node in 0..self.node_names.len() {
            if !self.chance(0.8) {
                continue;
            }
            let slack = *self.pick(&[0, 0, 100, 250, 500]);
            let mut room = self.node_cpu_free[node] - slack;
            let count = self.rng.random_range(1..=4);
            // An earlier preemption on this node: its victim (a low-priority pod) is still
            // terminating, and its preemptor (a pending pod) is nominated here.
            let mut terminating = self.chance(0.15);
            for k in 0..count {
                if room < 100 {
                    break;
                }
                let cpu = if k + 1 == count {
                    room
                } else {
                    (room * self.rng.random_range(20..=60) / 100).max(100)
                };
                room -= cpu;
                let priority = match self.rng.random_range(0..20) {
                    0..=13 => {
                        let (class, value) = *self.pick(LOW_CLASSES);
                        (class, value, true)
                    }
                    14..=18 => ("high", 1000, true),
                    _ => ("system-cluster-critical", 2_000_000_000, true),
                };
                let opts = PodOpts {
                    cpu: Some(cpu),
                    priority: Some(priority),
                    nominated: None,
                };
                let mut pod = self.pod_with(Some(node), opts);
                if terminating && priority.1 < 1000 {
                    terminating = false;
                    pod["metadata"]["deletionTimestamp"] = json!("2026-11-27T10:59:30Z");
                    pod["metadata"]["deletionGracePeriodSeconds"] = json!(30);
                    if let Some(c) = pod["status"]["conditions"].as_array_mut() {
                        c.push(json!({"type": "DisruptionTarget", "status": "True",
                            "reason": "PreemptionByScheduler",
                            "message": "default-scheduler: preempting to accommodate a higher priority pod",
                            "lastTransitionTime": "2026-11-27T10:59:30Z"}));
                    }
                    self.preempting.push(node);
                }
                pods.push(pod);
            }
        }
    }

    /// A pending pod that needs room: high priority (some may not preempt), and a request
    /// that a full node does not have free.
    fn preemptor(&mut self) -> PodOpts {
        let (class, value) = *self.pick(&[("high", 1000), ("high", 1000), ("critical", 100_000)]);
        let may_preempt = !self.chance(0.2);
        // Nominated by an earlier preemption: where a victim is still terminating, or
        // anywhere (its victims gone since).
        let nominated = if !self.chance(0.25) {
            None
        } else if !self.preempting.is_empty() && self.chance(0.6) {
            Some(*self.pick(&self.preempting.clone()))
        } else {
            Some(self.rng.random_range(0..self.node_names.len()))
        };
        PodOpts {
            cpu: Some(*self.pick(&[250, 500, 1000, 1500, 2000, 3000])),
            priority: Some((class, value, may_preempt)),
            nominated,
        }
    }

    // ----- nodes -------------------------------------------------------------------------

    fn node_name(&mut self, i: usize) -> String {
        match self.u.provider {
            "aws" => format!(
                "ip-10-{}-{}-{}.ec2.internal",
                self.rng.random_range(0..4),
                self.rng.random_range(0..256),
                10 + i
            ),
            "gke" => format!(
                "gke-prod-pool-{}-{}",
                ["a", "b"][i % 2],
                hex(&mut self.rng, 4)
            ),
            _ => format!("node-{i:02}"),
        }
    }

    fn nodes(&mut self) -> Vec<Value> {
        let drawn = self.rng.random_range(0..20);
        let n = match drawn {
            _ if self.u.large => self.aux.random_range(101..=400),
            0 => 1,
            1..=10 => self.rng.random_range(2..=8),
            11..=17 => self.rng.random_range(9..=24),
            _ => self.rng.random_range(25..=60),
        };
        (0..n).map(|i| self.node(i)).collect()
    }

    fn node(&mut self, i: usize) -> Value {
        let mut name = self.node_name(i);
        // Random parts can repeat (GKE's four hex digits among hundreds of nodes): draw again.
        while self.node_names.contains(&name) {
            name = self.node_name(i);
        }
        let zone = self.u.zones[i % self.u.zones.len()].clone();
        let mut labels = Map::new();
        labels.insert("kubernetes.io/hostname".into(), json!(name));
        labels.insert("kubernetes.io/os".into(), json!("linux"));
        labels.insert("kubernetes.io/arch".into(), json!("amd64"));
        if !self.chance(0.05) {
            labels.insert("topology.kubernetes.io/zone".into(), json!(zone));
            labels.insert("topology.kubernetes.io/region".into(), json!(self.u.region));
        }
        let gpu = self.chance(0.2);
        let itype = if gpu {
            "g5.2xlarge"
        } else {
            self.pick(&["m5.large", "m5.xlarge", "c5.2xlarge", "r5.4xlarge"])
        };
        labels.insert("node.kubernetes.io/instance-type".into(), json!(itype));
        labels.insert("pool".into(), json!(["a", "b"][i % 2]));
        if gpu {
            labels.insert("gpu".into(), json!("true"));
        }
        if self.chance(0.6) {
            labels.insert("disktype".into(), json!(self.pick(&["ssd", "hdd"])));
        }
        if self.chance(0.5) {
            labels.insert(
                "cpu-generation".into(),
                json!(self.rng.random_range(3..=7).to_string()),
            );
        }
        let cpu = *self.pick(&["2", "4", "8", "16", "3920m", "7910m", "15890m"]);
        let memory = *self.pick(&[
            "4Gi",
            "8Gi",
            "16Gi",
            "32Gi",
            "64Gi",
            "15358888Ki",
            "31584924Ki",
        ]);
        let storage = *self.pick(&["20Gi", "100Gi", "95551679124", "8Gi"]);
        let pods = *self.pick(&["110", "110", "58", "29", "8"]);
        let mut allocatable = json!({
            "cpu": cpu, "memory": memory, "ephemeral-storage": storage, "pods": pods,
            "hugepages-2Mi": "0",
        });
        if gpu {
            allocatable[GPU] = json!(self.pick(&["1", "4", "8"]).to_string());
        }
        if self.chance(0.05) {
            allocatable[FPGA] = json!("2");
        }
        let mut capacity = allocatable.clone();
        capacity["cpu"] = json!(match cpu {
            "3920m" => "4",
            "7910m" => "8",
            "15890m" => "16",
            c => c,
        });
        let mut taints = Vec::new();
        if gpu && self.chance(0.7) {
            taints.push(json!({"key": GPU, "value": "present", "effect": "NoSchedule"}));
        }
        if self.chance(0.12) {
            taints.push(json!({"key": "dedicated", "value": self.pick(&["infra", "db"]), "effect": "NoSchedule"}));
        }
        if self.chance(0.08) {
            taints.push(json!({"key": "spot", "value": "true", "effect": "PreferNoSchedule"}));
        }
        if self.chance(0.04) {
            taints.push(json!({"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "2026-11-01T10:00:00Z"}));
        }
        let mut spec = json!({});
        if self.chance(0.04) {
            spec["unschedulable"] = json!(true);
            taints.push(json!({"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule", "timeAdded": "2026-11-01T10:00:00Z"}));
        }
        if !taints.is_empty() {
            spec["taints"] = json!(taints);
        }
        let mut images = Vec::new();
        for (image, size) in IMAGES {
            if self.chance(0.35) {
                let repo = image.split(':').next().unwrap_or(image);
                let digest = format!("{repo}@sha256:{}", hex(&mut self.rng, 16));
                images.push(json!({"names": [digest, image], "sizeBytes": size}));
            }
        }
        self.node_names.push(name.clone());
        self.node_labels.push(labels.clone());
        self.node_cpu_free.push(cpu_millis(cpu));
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels, "creationTimestamp": "2026-11-01T09:00:00Z"},
            "spec": spec,
            "status": {
                "capacity": capacity, "allocatable": allocatable, "images": images,
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                "nodeInfo": {"kubeletVersion": "v1.34.4", "operatingSystem": "linux", "architecture": "amd64"}
            }
        })
    }

    // ----- cluster objects ---------------------------------------------------------------

    fn namespaces(&mut self) {
        for &ns in &self.u.namespaces.clone() {
            let mut labels = Map::new();
            labels.insert("kubernetes.io/metadata.name".into(), json!(ns));
            labels.insert("team".into(), json!(self.pick(TEAMS)));
            if self.chance(0.5) {
                labels.insert("env".into(), json!(self.pick(&["prod", "dev"])));
            }
            self.objects.push(json!({
                "apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": ns, "labels": labels}, "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"}
            }));
        }
    }

    fn workloads(&mut self) {
        for &ns in &self.u.namespaces.clone() {
            for &app in APPS {
                if !self.chance(0.3) {
                    continue;
                }
                if self.chance(0.5) {
                    self.objects.push(json!({
                        "apiVersion": "v1", "kind": "Service",
                        "metadata": {"name": app, "namespace": ns},
                        "spec": {"selector": {"app": app}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}], "type": "ClusterIP"}
                    }));
                }
                let stateful = matches!(app, "db" | "cache" | "search") && self.chance(0.6);
                if stateful {
                    self.objects.push(json!({
                        "apiVersion": "apps/v1", "kind": "StatefulSet",
                        "metadata": {"name": app, "namespace": ns, "uid": format!("ss-{ns}-{app}")},
                        "spec": {"selector": {"matchLabels": {"app": app}}, "serviceName": app, "replicas": 3,
                                 "template": {"metadata": {"labels": {"app": app}}, "spec": {"containers": [{"name": "c", "image": "redis:7.4"}]}}}
                    }));
                    self.owners
                        .push((ns.into(), app.into(), "StatefulSet", app.into()));
                } else {
                    let hash = hex(&mut self.rng, 10);
                    let name = format!("{app}-{hash}");
                    self.objects.push(json!({
                        "apiVersion": "apps/v1", "kind": "ReplicaSet",
                        "metadata": {"name": name, "namespace": ns, "uid": format!("rs-{ns}-{name}"), "labels": {"app": app, "pod-template-hash": hash}},
                        "spec": {"selector": {"matchLabels": {"app": app, "pod-template-hash": hash}}, "replicas": 3,
                                 "template": {"metadata": {"labels": {"app": app, "pod-template-hash": hash}}, "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]}}}
                    }));
                    self.owners
                        .push((ns.into(), app.into(), "ReplicaSet", name));
                }
            }
        }
    }

    fn pdbs(&mut self) {
        let chance = if self.u.pressure { 0.6 } else { 0.3 };
        for (ns, app, _, _) in self.owners.clone() {
            if self.chance(chance) {
                let allowed = self.rng.random_range(0..=1);
                self.objects.push(json!({
                    "apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                    "metadata": {"name": format!("{app}-pdb"), "namespace": ns},
                    "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": app}}},
                    "status": {"disruptionsAllowed": allowed, "currentHealthy": 2, "desiredHealthy": 1, "expectedPods": 3, "observedGeneration": 1}
                }));
            }
        }
    }

    fn storage(&mut self) {
        if !self.chance(0.5) {
            return;
        }
        let driver = self.u.driver;
        let capacity_tracked = self.chance(0.4);
        self.objects.push(json!({
            "apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver",
            "metadata": {"name": driver},
            "spec": {"attachRequired": true, "podInfoOnMount": false, "storageCapacity": capacity_tracked,
                     "volumeLifecycleModes": ["Persistent"], "fsGroupPolicy": "ReadWriteOnceWithFSType"}
        }));
        let topology_key = if driver == "ebs.csi.aws.com" {
            "topology.ebs.csi.aws.com/zone"
        } else {
            "topology.gke.io/zone"
        };
        let mut classes = vec![
            ("standard", "WaitForFirstConsumer", driver),
            ("fast", "Immediate", driver),
        ];
        if self.chance(0.5) {
            classes.push((
                "local",
                "WaitForFirstConsumer",
                "kubernetes.io/no-provisioner",
            ));
        }
        for (name, mode, provisioner) in &classes {
            let mut sc = json!({
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                "metadata": {"name": name}, "provisioner": provisioner,
                "reclaimPolicy": "Delete", "volumeBindingMode": mode,
            });
            if *name == "standard" && self.chance(0.3) {
                let zone = self.pick(&self.u.zones.clone()).clone();
                sc["allowedTopologies"] =
                    json!([{"matchLabelExpressions": [{"key": topology_key, "values": [zone]}]}]);
            }
            self.objects.push(sc);
        }
        // CSINodes: the driver on most nodes, with a volume limit.
        for i in 0..self.node_names.len() {
            if !self.chance(0.8) {
                continue;
            }
            let zone = self.node_labels[i]
                .get("topology.kubernetes.io/zone")
                .cloned()
                .unwrap_or(json!(""));
            let count = *self.pick(&[1, 2, 25, 39]);
            self.objects.push(json!({
                "apiVersion": "storage.k8s.io/v1", "kind": "CSINode",
                "metadata": {"name": self.node_names[i]},
                "spec": {"drivers": [{"name": driver, "nodeID": format!("i-{}", hex(&mut self.rng, 8)),
                                      "topologyKeys": [topology_key], "allocatable": {"count": count}}]}
            }));
            let _ = zone;
        }
        if capacity_tracked {
            for zone in self.u.zones.clone() {
                let capacity = *self.pick(&["10Gi", "100Gi", "0"]);
                self.objects.push(json!({
                    "apiVersion": "storage.k8s.io/v1", "kind": "CSIStorageCapacity",
                    "metadata": {"name": format!("csisc-{}", hex(&mut self.rng, 5)), "namespace": "kube-system"},
                    "storageClassName": "standard",
                    "nodeTopology": {"matchLabels": {topology_key: zone}},
                    "capacity": capacity,
                }));
            }
        }
        // PersistentVolumes and claims.
        let nclaims = self.rng.random_range(1..=6);
        for k in 0..nclaims {
            let ns = self.pick(&self.u.namespaces.clone()).to_string();
            let claim = format!("data-{k}-{}", hex(&mut self.rng, 4));
            let size = *self.pick(&["1Gi", "5Gi", "20Gi"]);
            let access = if self.chance(0.15) {
                "ReadWriteOncePod"
            } else {
                "ReadWriteOnce"
            };
            let kind = self.rng.random_range(0..4);
            let mut pvc = json!({
                "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                "metadata": {"name": claim, "namespace": ns, "uid": format!("pvc-{ns}-{claim}")},
                "spec": {"accessModes": [access], "resources": {"requests": {"storage": size}}, "volumeMode": "Filesystem"},
                "status": {"phase": "Pending"}
            });
            match kind {
                // Bound to a PV with zone affinity (or none).
                0 | 1 => {
                    let pv = format!("pvc-{}", hex(&mut self.rng, 12));
                    let class = if kind == 0 { "standard" } else { "fast" };
                    pvc["spec"]["storageClassName"] = json!(class);
                    pvc["spec"]["volumeName"] = json!(pv);
                    pvc["metadata"]["annotations"] =
                        json!({"pv.kubernetes.io/bind-completed": "yes"});
                    pvc["status"] = json!({"phase": "Bound", "accessModes": [access], "capacity": {"storage": size}});
                    let mut pv_obj = self.pv(&pv, class, size, access);
                    pv_obj["spec"]["claimRef"] = json!({"kind": "PersistentVolumeClaim", "namespace": ns, "name": claim, "uid": format!("pvc-{ns}-{claim}"), "apiVersion": "v1"});
                    pv_obj["status"] = json!({"phase": "Bound"});
                    self.objects.push(pv_obj);
                }
                // Unbound, WaitForFirstConsumer: matched to an available PV or provisioned.
                2 => {
                    let class = if classes.len() > 2 && self.chance(0.5) {
                        "local"
                    } else {
                        "standard"
                    };
                    pvc["spec"]["storageClassName"] = json!(class);
                    if class == "local" || self.chance(0.5) {
                        let pv = format!("local-pv-{}", hex(&mut self.rng, 6));
                        let pv_obj = self.pv(&pv, class, "20Gi", "ReadWriteOnce");
                        self.objects.push(pv_obj);
                    }
                }
                // Unbound, Immediate: the pod waits for the PV controller.
                _ => {
                    pvc["spec"]["storageClassName"] = json!("fast");
                }
            }
            self.objects.push(pvc);
            if access == "ReadWriteOncePod" {
                self.rwop.push((ns.clone(), claim.clone(), false));
            }
            self.claims.push((ns, claim));
        }
        // Available PVs no claim asked for.
        if self.chance(0.3) {
            let pv = format!("spare-pv-{}", hex(&mut self.rng, 6));
            let pv_obj = self.pv(&pv, "standard", "50Gi", "ReadWriteOnce");
            self.objects.push(pv_obj);
        }
    }

    /// A PersistentVolume of a class; local volumes are tied to one node, CSI volumes to a zone.
    fn pv(&mut self, name: &str, class: &str, size: &str, access: &str) -> Value {
        let mut pv = json!({
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": name},
            "spec": {"capacity": {"storage": size}, "accessModes": [access], "storageClassName": class,
                     "persistentVolumeReclaimPolicy": "Delete", "volumeMode": "Filesystem"},
            "status": {"phase": "Available"}
        });
        if class == "local" {
            let node = self.pick(&self.node_names.clone()).clone();
            pv["spec"]["local"] = json!({"path": "/mnt/disks/ssd1"});
            pv["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}});
        } else {
            let driver = self.u.driver;
            pv["spec"]["csi"] = json!({"driver": driver, "volumeHandle": format!("vol-{}", hex(&mut self.rng, 12)), "fsType": "ext4"});
            if self.u.provider == "gke" && self.aux.random_bool(0.3) {
                // An in-tree GCE PD volume (migrated to the CSI driver for volume limits).
                let handle = pv["spec"]["csi"]["volumeHandle"].clone();
                if let Some(spec) = pv["spec"].as_object_mut() {
                    spec.remove("csi");
                }
                pv["spec"]["gcePersistentDisk"] = json!({"pdName": handle, "fsType": "ext4"});
            }
            if self.chance(0.8) {
                let zone = self.pick(&self.u.zones.clone()).clone();
                pv["spec"]["nodeAffinity"] = json!({"required": {"nodeSelectorTerms": [{"matchExpressions": [{"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]}]}]}});
                pv["metadata"]["labels"] = json!({"topology.kubernetes.io/zone": zone});
            }
        }
        pv
    }

    /// A running pod resized in place (kube v1.34's InPlacePodVerticalScaling, on by default):
    /// its containers' statuses report the resources they run with and were allocated, which
    /// differ from the spec's requests (a resize up still in progress, one done down, one the
    /// kubelet deferred or found infeasible: the `PodResizePending` condition), and so do its
    /// sidecars'. The node's requests count the larger of spec, status and allocation (for
    /// an infeasible resize, of status and allocation).
    fn resized(&mut self, spec: &Value, status: &mut Value) {
        let entry = |rng: &mut ChaCha8Rng, c: &Value| -> Value {
            let requests = &c["resources"]["requests"];
            let mut actual = Map::new();
            let mut allocated = Map::new();
            for (name, unit) in [("cpu", "m"), ("memory", "Mi")] {
                let spec_q = match name {
                    "cpu" => requests[name].as_str().map(cpu_millis),
                    _ => requests[name].as_str().map(mebibytes),
                };
                let base = spec_q.unwrap_or(if name == "cpu" { 100 } else { 128 });
                // Smaller, equal or larger than the spec's, for the status and the allocation.
                let pick = |rng: &mut ChaCha8Rng| -> i64 {
                    let factor = *[1, 2, 2, 4, 4, 4, 8].choose(rng).unwrap_or(&4);
                    (base * factor / 4).max(1)
                };
                if spec_q.is_some() || rng.random_bool(0.3) {
                    actual.insert(name.into(), json!(format!("{}{unit}", pick(rng))));
                }
                if rng.random_bool(0.8) {
                    allocated.insert(name.into(), json!(format!("{}{unit}", pick(rng))));
                }
            }
            let mut e = json!({"name": c["name"], "ready": true, "restartCount": 0,
                "image": c["image"], "imageID": "", "started": true,
                "state": {"running": {"startedAt": "2026-11-26T10:00:00Z"}}});
            if rng.random_bool(0.9) {
                e["resources"] = json!({"requests": actual});
            }
            if !allocated.is_empty() {
                e["allocatedResources"] = json!(allocated);
            }
            e
        };
        let containers: Vec<Value> = spec["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| entry(&mut self.aux, c))
            .collect();
        let sidecars: Vec<Value> = spec["initContainers"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["restartPolicy"] == "Always")
            .map(|c| entry(&mut self.aux, c))
            .collect();
        status["containerStatuses"] = json!(containers);
        if !sidecars.is_empty() {
            status["initContainerStatuses"] = json!(sidecars);
        }
        if let Some(reason) = *[None, None, Some("Deferred"), Some("Infeasible")]
            .choose(&mut self.aux)
            .unwrap_or(&None)
            && let Some(c) = status["conditions"].as_array_mut()
        {
            c.push(
                json!({"type": "PodResizePending", "status": "True", "reason": reason,
                "lastTransitionTime": "2026-11-26T10:05:00Z"}),
            );
        }
    }

    // ----- configuration -----------------------------------------------------------------

    fn config(&mut self) -> Option<String> {
        if !self.u.second_profile && !self.chance(0.35) && !self.u.large {
            return None;
        }
        let mut plugin_config = Vec::new();
        match self.rng.random_range(0..8) {
            0 => plugin_config.push(
                "  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n        resources:\n        - name: cpu\n          weight: 1\n        - name: memory\n          weight: 1\n".to_string(),
            ),
            1 => plugin_config.push(
                "  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n        resources:\n        - name: cpu\n          weight: 2\n        - name: memory\n          weight: 1\n        - name: nvidia.com/gpu\n          weight: 3\n        requestedToCapacityRatio:\n          shape:\n          - utilization: 0\n            score: 0\n          - utilization: 100\n            score: 10\n".to_string(),
            ),
            2 => plugin_config.push(
                "  - name: NodeResourcesBalancedAllocation\n    args:\n      resources:\n      - name: cpu\n        weight: 1\n      - name: memory\n        weight: 1\n      - name: nvidia.com/gpu\n        weight: 1\n".to_string(),
            ),
            3 => plugin_config.push(
                "  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:\n      - maxSkew: 1\n        topologyKey: topology.kubernetes.io/zone\n        whenUnsatisfiable: ScheduleAnyway\n".to_string(),
            ),
            4 => plugin_config.push(
                "  - name: InterPodAffinity\n    args:\n      hardPodAffinityWeight: 5\n      ignorePreferredTermsOfExistingPods: true\n".to_string(),
            ),
            5 => plugin_config.push(
                "  - name: NodeAffinity\n    args:\n      addedAffinity:\n        preferredDuringSchedulingIgnoredDuringExecution:\n        - weight: 40\n          preference:\n            matchExpressions:\n            - key: disktype\n              operator: In\n              values: [ssd]\n".to_string(),
            ),
            6 => plugin_config.push(
                "  - name: NodeResourcesFit\n    args:\n      ignoredResources: [example.com/fpga]\n".to_string(),
            ),
            _ => {}
        }
        let mut plugins = String::new();
        if self.chance(0.3) {
            let w = self.rng.random_range(1..=5);
            plugins = format!(
                "  plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        weight: {w}\n      disabled:\n      - name: {}\n",
                self.pick(&[
                    "NodeResourcesBalancedAllocation",
                    "TaintToleration",
                    "InterPodAffinity"
                ])
            );
        }
        let mut text = String::from(
            "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n",
        );
        if self.u.large {
            // Mostly kube's adaptive percentage; some a fixed one, globally or for the profile.
            let global = *[0, 0, 0, 0, 10, 30, 60].choose(&mut self.aux).unwrap_or(&0);
            text += &format!("percentageOfNodesToScore: {global}\n");
        }
        text += "profiles:\n- schedulerName: default-scheduler\n";
        if self.u.large && self.aux.random_bool(0.2) {
            let own = *[20, 40, 70].choose(&mut self.aux).unwrap_or(&40);
            text += &format!("  percentageOfNodesToScore: {own}\n");
        }
        text += &plugins;
        if !plugin_config.is_empty() {
            text += "  pluginConfig:\n";
            for c in &plugin_config {
                text += c;
            }
        }
        if self.u.second_profile {
            text += &format!(
                "- schedulerName: {SECOND_PROFILE}\n  pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n"
            );
        }
        Some(text)
    }

    // ----- pods --------------------------------------------------------------------------

    fn resources(&mut self, big: bool) -> Value {
        let mode = self.rng.random_range(0..20);
        if mode < 3 {
            return json!({});
        }
        let mut requests = Map::new();
        let cpu = if big {
            self.pick(&["2", "3", "4", "6"])
        } else {
            self.pick(CPU)
        };
        if self.chance(0.9) {
            requests.insert("cpu".into(), json!(cpu));
        }
        if self.chance(0.9) {
            requests.insert("memory".into(), json!(self.pick(MEMORY)));
        }
        if self.chance(0.15) {
            requests.insert(
                "ephemeral-storage".into(),
                json!(self.pick(&["1Gi", "5Gi", "30Gi"])),
            );
        }
        if self.chance(0.1) {
            requests.insert(GPU.into(), json!(self.pick(&["1", "2"])));
        }
        if self.chance(0.02) {
            requests.insert(FPGA.into(), json!("1"));
        }
        let extended = |m: &Map<String, Value>| -> Map<String, Value> {
            m.iter()
                .filter(|(k, _)| k.contains('/'))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        match mode {
            // Requests only (extended resources need equal limits).
            3..=12 => {
                let limits = extended(&requests);
                if limits.is_empty() {
                    json!({"requests": requests})
                } else {
                    json!({"requests": requests, "limits": limits})
                }
            }
            // Requests and limits (limits at least the requests).
            13..=16 => {
                let mut limits = requests.clone();
                if let Some(c) = limits.get_mut("cpu") {
                    *c = json!(format!("{}m", cpu_millis(c.as_str().unwrap_or("0")) * 2));
                }
                json!({"requests": requests, "limits": limits})
            }
            // Limits only: the API server copies them into the requests.
            _ => json!({"requests": requests.clone(), "limits": requests}),
        }
    }

    fn container(&mut self, name: &str, ports: bool) -> Value {
        let (image, _) = *self.pick(IMAGES);
        let mut c = json!({
            "name": name, "image": image, "imagePullPolicy": "IfNotPresent",
            "resources": self.resources(false),
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        });
        if ports && self.chance(0.12) {
            let port = *self.pick(&[80, 443, 8080, 9100]);
            let mut p = json!({"containerPort": port, "hostPort": port, "protocol": self.pick(&["TCP", "TCP", "UDP"])});
            if self.chance(0.2) {
                p["hostIP"] = json!(self.pick(&["127.0.0.1", "0.0.0.0", "10.0.0.1"]));
            }
            c["ports"] = json!([p]);
        } else if ports {
            c["ports"] = json!([{"containerPort": 8080, "protocol": "TCP"}]);
        }
        c
    }

    fn label_selector(&mut self, ns_apps: &[&str]) -> Value {
        let app = *self.pick(ns_apps);
        match self.rng.random_range(0..4) {
            0 => {
                json!({"matchExpressions": [{"key": "app", "operator": "In", "values": [app, self.pick(APPS)]}]})
            }
            1 => {
                json!({"matchLabels": {"app": app}, "matchExpressions": [{"key": "tier", "operator": "Exists"}]})
            }
            _ => json!({"matchLabels": {"app": app}}),
        }
    }

    fn node_selector_requirement(&mut self) -> Value {
        match self.rng.random_range(0..8) {
            0 => json!({"key": "disktype", "operator": "In", "values": ["ssd"]}),
            1 => json!({"key": "gpu", "operator": "DoesNotExist"}),
            2 => {
                json!({"key": "cpu-generation", "operator": self.pick(&["Gt", "Lt"]), "values": [self.rng.random_range(3..=6).to_string()]})
            }
            3 => json!({"key": "pool", "operator": "NotIn", "values": ["b"]}),
            4 => json!({"key": "node.kubernetes.io/instance-type", "operator": "Exists"}),
            _ => {
                let zone = self.pick(&self.u.zones.clone()).clone();
                json!({"key": "topology.kubernetes.io/zone", "operator": "In", "values": [zone]})
            }
        }
    }

    /// A pod's node affinity. `match_fields`: whether terms may name nodes (`matchFields` on
    /// `metadata.name`); a pod nominated to a node by preemption passed its node affinity
    /// there, so its terms name no nodes (preemption never nominates a node outside the
    /// pod's named ones).
    fn node_affinity(&mut self, match_fields: bool) -> Value {
        let mut na = json!({});
        if self.chance(0.7) {
            let terms: Vec<Value> = (0..self.rng.random_range(1..=2))
                .map(|_| {
                    if self.chance(0.12) && match_fields {
                        let k = self.rng.random_range(1..=2.min(self.node_names.len()));
                        let names: Vec<String> = (0..k)
                            .map(|_| self.pick(&self.node_names.clone()).clone())
                            .collect();
                        let op = if self.chance(0.8) { "In" } else { "NotIn" };
                        json!({"matchFields": [{"key": "metadata.name", "operator": op, "values": names}]})
                    } else {
                        let exprs: Vec<Value> = (0..self.rng.random_range(1..=2))
                            .map(|_| self.node_selector_requirement())
                            .collect();
                        json!({"matchExpressions": exprs})
                    }
                })
                .collect();
            na["requiredDuringSchedulingIgnoredDuringExecution"] =
                json!({"nodeSelectorTerms": terms});
        }
        if self.chance(0.5) {
            let prefs: Vec<Value> = (0..self.rng.random_range(1..=2))
                .map(|_| json!({"weight": self.rng.random_range(1..=100), "preference": {"matchExpressions": [self.node_selector_requirement()]}}))
                .collect();
            na["preferredDuringSchedulingIgnoredDuringExecution"] = json!(prefs);
        }
        na
    }

    fn affinity_term(&mut self, ns_apps: &[&str]) -> Value {
        let key = if self.chance(0.6) {
            "kubernetes.io/hostname"
        } else {
            "topology.kubernetes.io/zone"
        };
        let mut term = json!({"labelSelector": self.label_selector(ns_apps), "topologyKey": key});
        match self.rng.random_range(0..6) {
            0 => term["namespaces"] = json!([self.pick(&self.u.namespaces.clone())]),
            1 => term["namespaceSelector"] = json!({}),
            2 => term["namespaceSelector"] = json!({"matchLabels": {"team": self.pick(TEAMS)}}),
            _ => {}
        }
        if self.chance(0.1) {
            term["matchLabelKeys"] = json!(["pod-template-hash"]);
        }
        term
    }

    fn pod_affinity(&mut self, anti: bool) -> Value {
        let apps: Vec<&str> = APPS.to_vec();
        let mut a = json!({});
        if self.chance(0.5) {
            a["requiredDuringSchedulingIgnoredDuringExecution"] =
                json!([self.affinity_term(&apps)]);
        }
        if self.chance(0.6) || a.as_object().is_some_and(Map::is_empty) {
            let prefs: Vec<Value> = (0..self.rng.random_range(1..=2))
                .map(|_| json!({"weight": self.rng.random_range(1..=100), "podAffinityTerm": self.affinity_term(&apps)}))
                .collect();
            a["preferredDuringSchedulingIgnoredDuringExecution"] = json!(prefs);
        }
        let _ = anti;
        a
    }

    fn spread(&mut self, app: &str) -> Value {
        let key = if self.chance(0.6) {
            "topology.kubernetes.io/zone"
        } else {
            "kubernetes.io/hostname"
        };
        let hard = self.chance(0.5);
        let mut c = json!({
            "maxSkew": self.rng.random_range(1..=3),
            "topologyKey": key,
            "whenUnsatisfiable": if hard { "DoNotSchedule" } else { "ScheduleAnyway" },
            "labelSelector": {"matchLabels": {"app": app}},
        });
        if hard && self.chance(0.2) {
            c["minDomains"] = json!(self.rng.random_range(2..=4));
        }
        if self.chance(0.2) {
            c["nodeAffinityPolicy"] = json!(self.pick(&["Honor", "Ignore"]));
        }
        if self.chance(0.2) {
            c["nodeTaintsPolicy"] = json!(self.pick(&["Honor", "Ignore"]));
        }
        if self.chance(0.15) {
            c["matchLabelKeys"] = json!(["pod-template-hash"]);
        }
        c
    }

    fn toleration(&mut self) -> Value {
        match self.rng.random_range(0..7) {
            0 => json!({"key": GPU, "operator": "Exists", "effect": "NoSchedule"}),
            1 => {
                json!({"key": "dedicated", "operator": "Equal", "value": self.pick(&["infra", "db"]), "effect": "NoSchedule"})
            }
            2 => json!({"key": "spot", "operator": "Exists"}),
            3 => json!({"operator": "Exists"}),
            4 => {
                json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
            }
            5 => {
                json!({"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"})
            }
            _ => json!({"key": "dedicated", "operator": "Exists"}),
        }
    }

    fn volumes(&mut self, ns: &str, pod: &str, pending: bool) -> (Vec<Value>, Vec<Value>) {
        let mut vols = vec![
            json!({"name": "kube-api-access", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}], "defaultMode": 420}}),
        ];
        let mut claims_made = Vec::new();
        if self.chance(0.15) {
            vols.push(json!({"name": "scratch", "emptyDir": {}}));
        }
        if self.chance(0.1) {
            vols.push(json!({"name": "config", "secret": {"secretName": "app-config"}}));
        }
        // A ReadWriteOncePod claim runs in one pod at most.
        let ns_claims: Vec<String> = self
            .claims
            .iter()
            .filter(|(n, c)| {
                n == ns
                    && (pending
                        || !self
                            .rwop
                            .iter()
                            .any(|(rn, rc, used)| rn == n && rc == c && *used))
            })
            .map(|(_, c)| c.clone())
            .collect();
        if !ns_claims.is_empty() && self.chance(if pending { 0.35 } else { 0.15 }) {
            let claim = self.pick(&ns_claims).clone();
            if !pending {
                for (rn, rc, used) in &mut self.rwop {
                    if rn == ns && *rc == claim {
                        *used = true;
                    }
                }
            }
            vols.push(json!({"name": "data", "persistentVolumeClaim": {"claimName": claim}}));
        } else if pending && self.chance(0.03) {
            vols.push(json!({"name": "data", "persistentVolumeClaim": {"claimName": format!("missing-{}", hex(&mut self.rng, 4))}}));
        }
        if pending && self.objects.iter().any(|o| o["kind"] == "StorageClass") && self.chance(0.06)
        {
            let claim = format!("{pod}-scratch");
            vols.push(json!({"name": "scratch-eph", "ephemeral": {"volumeClaimTemplate": {"spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard", "resources": {"requests": {"storage": "1Gi"}}}}}}));
            if self.chance(0.8) {
                claims_made.push(json!({
                    "apiVersion": "v1", "kind": "PersistentVolumeClaim",
                    "metadata": {"name": claim, "namespace": ns, "uid": format!("pvc-{ns}-{claim}"),
                                 "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": pod, "uid": format!("Pod-{ns}-{pod}"), "controller": true, "blockOwnerDeletion": true}]},
                    "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard", "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
                    "status": {"phase": "Pending"}
                }));
            }
        }
        if self.u.provider == "aws" && self.chance(0.05) {
            vols.push(json!({"name": "ebs", "awsElasticBlockStore": {"volumeID": format!("vol-{}", self.rng.random_range(0..3)), "fsType": "ext4"}}));
        }
        if self.aux.random_bool(0.08) {
            // Other in-tree volumes, a few disks shared among pods (VolumeRestrictions:
            // read-only or not; NodeVolumeLimits through CSI migration).
            let k = self.aux.random_range(0..3);
            let ro = self.aux.random_bool(0.35);
            vols.push(match self.aux.random_range(0..4) {
                0 => json!({"name": "pd", "gcePersistentDisk": {"pdName": format!("pd-{k}"), "fsType": "ext4", "readOnly": ro}}),
                1 => json!({"name": "rbd", "rbd": {"monitors": ["10.0.0.1:6789"], "image": format!("img-{k}"), "pool": "rbd", "user": "admin", "keyring": "/etc/ceph/keyring", "readOnly": ro}}),
                2 => json!({"name": "iscsi", "iscsi": {"targetPortal": "10.0.0.2:3260", "iqn": "iqn.2026-11.com.example:storage", "lun": k, "iscsiInterface": "default", "fsType": "ext4", "readOnly": ro}}),
                _ => json!({"name": "azure", "azureDisk": {"diskName": format!("disk-{k}"), "diskURI": format!("/subscriptions/s/resourceGroups/g/providers/Microsoft.Compute/disks/disk-{k}"), "kind": "Managed", "cachingMode": "ReadWrite", "fsType": "ext4", "readOnly": ro}}),
            });
        }
        (vols, claims_made)
    }

    fn pod(&mut self, node: Option<usize>) -> Value {
        self.pod_with(node, PodOpts::default())
    }

    fn pod_with(&mut self, node: Option<usize>, opts: PodOpts) -> Value {
        self.serial += 1;
        let pending = node.is_none();
        let ns = self.pick(&self.u.namespaces.clone()).to_string();
        let app = self.pick(APPS).to_string();
        let owner = self
            .owners
            .iter()
            .filter(|(n, a, _, _)| *n == ns && *a == app)
            .cloned()
            .collect::<Vec<_>>();
        let owner = owner.first().cloned().filter(|_| self.rng.random_bool(0.8));
        let name = match &owner {
            Some((_, _, "StatefulSet", ss)) => format!("{ss}-{}", self.serial),
            Some((_, _, _, rs)) => format!("{rs}-{}", hex(&mut self.rng, 5)),
            None => format!(
                "{}-{}-{}",
                if pending { "pending" } else { &app },
                self.serial,
                hex(&mut self.rng, 4)
            ),
        };
        let mut labels = Map::new();
        labels.insert("app".into(), json!(app));
        if self.chance(0.5) {
            labels.insert("tier".into(), json!(self.pick(&["frontend", "backend"])));
        }
        let mut meta = json!({"name": name, "namespace": ns, "uid": format!("Pod-{ns}-{name}"),
                              "creationTimestamp": format!("2026-11-27T10:{:02}:{:02}Z", self.serial / 60 % 60, self.serial % 60)});
        if let Some((_, _, kind, owner_name)) = &owner {
            if *kind == "ReplicaSet" {
                let hash = owner_name.rsplit('-').next().unwrap_or("").to_string();
                labels.insert("pod-template-hash".into(), json!(hash));
            }
            let api = "apps/v1";
            meta["ownerReferences"] = json!([{"apiVersion": api, "kind": kind, "name": owner_name,
                "uid": format!("{}-{ns}-{owner_name}", if *kind == "ReplicaSet" { "rs" } else { "ss" }),
                "controller": true, "blockOwnerDeletion": true}]);
        }
        meta["labels"] = Value::Object(labels);

        let ncontainers = *self.pick(&[1, 1, 1, 2, 3]);
        let mut containers: Vec<Value> = (0..ncontainers)
            .map(|i| self.container(&format!("c{i}"), i == 0))
            .collect();
        if let Some(cpu) = opts.cpu {
            for (i, c) in containers.iter_mut().enumerate() {
                let r = &mut c["resources"];
                if i == 0 {
                    r["requests"]["cpu"] = json!(format!("{cpu}m"));
                    if r["limits"].get("cpu").is_some() {
                        r["limits"]["cpu"] = json!(format!("{}m", cpu * 2));
                    }
                } else {
                    for part in ["requests", "limits"] {
                        if let Some(m) = r[part].as_object_mut() {
                            m.remove("cpu");
                        }
                    }
                }
            }
        }
        let mut spec = json!({
            "containers": containers,
            "restartPolicy": "Always", "dnsPolicy": "ClusterFirst", "serviceAccountName": "default",
            "terminationGracePeriodSeconds": 30, "enableServiceLinks": true,
            "securityContext": {},
            "schedulerName": "default-scheduler",
        });
        if self.chance(0.12) {
            let mut init = vec![];
            if self.chance(0.6) {
                let mut c = self.container("init", false);
                let big = self.chance(0.3);
                c["resources"] = self.resources(big);
                init.push(c);
            }
            if self.chance(0.6) {
                let mut c = self.container("sidecar", false);
                c["restartPolicy"] = json!("Always");
                init.push(c);
            }
            if !init.is_empty() {
                spec["initContainers"] = json!(init);
            }
        }
        if self.chance(0.06) {
            spec["runtimeClassName"] = json!("kata");
            spec["overhead"] = json!({"cpu": "250m", "memory": "120Mi"});
        }
        if self.chance(0.08) {
            // Pod-level resources: at least the containers' sum (the API server's rule).
            let (mut cpu, mut mem) = (0i64, 0i64);
            for c in spec["containers"].as_array().into_iter().flatten() {
                cpu += cpu_millis(c["resources"]["requests"]["cpu"].as_str().unwrap_or("0"));
                mem += mebibytes(c["resources"]["requests"]["memory"].as_str().unwrap_or("0"));
            }
            let extra = *self.pick(&[0, 500, 1000]);
            spec["resources"] = json!({"requests": {"cpu": format!("{}m", cpu + extra), "memory": format!("{}Mi", mem + extra)}});
            if self.chance(0.5) {
                spec["resources"]["limits"] = json!({"cpu": format!("{}m", (cpu + extra) * 2), "memory": format!("{}Mi", (mem + extra) * 2)});
            }
        }
        if self.chance(0.12) {
            let mut sel = Map::new();
            match self.rng.random_range(0..3) {
                0 => {
                    sel.insert("disktype".into(), json!("ssd"));
                }
                1 => {
                    let zone = self.pick(&self.u.zones.clone()).clone();
                    sel.insert("topology.kubernetes.io/zone".into(), json!(zone));
                }
                _ => {
                    sel.insert("kubernetes.io/os".into(), json!("linux"));
                }
            }
            spec["nodeSelector"] = Value::Object(sel);
        }
        let mut affinity = json!({});
        if self.chance(0.25) {
            affinity["nodeAffinity"] = self.node_affinity(opts.nominated.is_none());
        }
        if self.chance(0.15) {
            affinity["podAffinity"] = self.pod_affinity(false);
        }
        if self.chance(0.2) {
            affinity["podAntiAffinity"] = self.pod_affinity(true);
        }
        if affinity.as_object().is_some_and(|m| !m.is_empty()) {
            spec["affinity"] = affinity;
        }
        let mut tolerations = vec![
            json!({"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
            json!({"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}),
        ];
        if self.chance(0.3) {
            for _ in 0..self.rng.random_range(1..=2) {
                tolerations.push(self.toleration());
            }
        }
        spec["tolerations"] = json!(tolerations);
        if self.chance(0.22) {
            let constraints: Vec<Value> = (0..self.rng.random_range(1..=2))
                .map(|_| self.spread(&app))
                .collect();
            spec["topologySpreadConstraints"] = json!(constraints);
        }
        let drawn = self.rng.random_range(0..10);
        match (opts.priority, drawn) {
            (Some((class, value, may_preempt)), _) => {
                if !class.is_empty() {
                    spec["priorityClassName"] = json!(class);
                }
                spec["priority"] = json!(value);
                if !may_preempt {
                    spec["preemptionPolicy"] = json!("Never");
                }
            }
            (None, 0) => {
                spec["priorityClassName"] = json!("low");
                spec["priority"] = json!(100);
            }
            (None, 1 | 2) => {
                spec["priorityClassName"] = json!("high");
                spec["priority"] = json!(1000);
                if self.chance(0.3) {
                    spec["preemptionPolicy"] = json!("Never");
                } else {
                    spec["preemptionPolicy"] = json!("PreemptLowerPriority");
                }
            }
            (None, 3) if !pending => {
                spec["priorityClassName"] = json!("system-cluster-critical");
                spec["priority"] = json!(2_000_000_000);
            }
            (None, _) => {
                spec["priority"] = json!(0);
            }
        }
        if spec.get("preemptionPolicy").is_none() {
            spec["preemptionPolicy"] = json!("PreemptLowerPriority");
        }
        let (volumes, claims) = self.volumes(&ns, &name, pending);
        spec["volumes"] = json!(volumes);
        self.objects.extend(claims);

        let mut status = json!({"phase": "Pending", "qosClass": "Burstable"});
        if let Some(n) = node {
            // Most running pods fit their node's cpu; some nodes are over-committed.
            let want = spec["containers"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|c| cpu_millis(c["resources"]["requests"]["cpu"].as_str().unwrap_or("0")))
                .sum::<i64>();
            let mut target = n;
            if want > self.node_cpu_free[n]
                && self.rng.random_bool(0.85)
                && let Some(fit) =
                    (0..self.node_names.len()).find(|&i| self.node_cpu_free[i] >= want)
            {
                target = fit;
            }
            self.node_cpu_free[target] -= want;
            spec["nodeName"] = json!(self.node_names[target]);
            status = json!({"phase": "Running", "qosClass": "Burstable",
                            "startTime": format!("2026-11-26T{:02}:{:02}:00Z", self.serial / 60 % 24, self.serial % 60),
                            "conditions": [{"type": "PodScheduled", "status": "True"}, {"type": "Ready", "status": "True"}]});
            if self.aux.random_bool(0.12) {
                self.resized(&spec, &mut status);
            }
        } else {
            if let Some(n) = opts.nominated {
                status["nominatedNodeName"] = json!(self.node_names[n]);
            }
            if self.chance(0.05) {
                spec["schedulingGates"] = json!([{"name": "example.com/quota"}]);
            }
            if self.u.second_profile && self.chance(0.3) {
                spec["schedulerName"] = json!(SECOND_PROFILE);
            } else if self.chance(0.02) {
                spec["schedulerName"] = json!(UNKNOWN_SCHEDULER);
            }
        }
        let mut pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec, "status": status});
        apply_label_keys(&mut pod);
        pod
    }
}

/// What kube-apiserver v1.34 does to a pod's `matchLabelKeys` when it creates the pod
/// (`applyMatchLabelKeysAndMismatchLabelKeys` and `applyMatchLabelKeys` in
/// pkg/registry/core/pod/strategy.go): each key the pod has a label for becomes a
/// `key In (value)` requirement of the term's or constraint's label selector.
fn apply_label_keys(pod: &mut Value) {
    let labels = pod["metadata"]["labels"].clone();
    let merge = |holder: &mut Value| {
        let keys: Vec<String> = holder["matchLabelKeys"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|k| k.as_str().map(str::to_string))
            .collect();
        for key in keys {
            if let Some(value) = labels.get(&key) {
                let selector = &mut holder["labelSelector"];
                if !selector["matchExpressions"].is_array() {
                    selector["matchExpressions"] = json!([]);
                }
                if let Some(exprs) = selector["matchExpressions"].as_array_mut() {
                    exprs.push(json!({"key": key, "operator": "In", "values": [value]}));
                }
            }
        }
    };
    for kind in ["podAffinity", "podAntiAffinity"] {
        let a = &mut pod["spec"]["affinity"][kind];
        if a.is_null() {
            continue;
        }
        for term in a["requiredDuringSchedulingIgnoredDuringExecution"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            merge(term);
        }
        for weighted in a["preferredDuringSchedulingIgnoredDuringExecution"]
            .as_array_mut()
            .into_iter()
            .flatten()
        {
            merge(&mut weighted["podAffinityTerm"]);
        }
    }
    for c in pod["spec"]["topologySpreadConstraints"]
        .as_array_mut()
        .into_iter()
        .flatten()
    {
        merge(c);
    }
    // Indexing a Value creates nulls on the way; take them out again.
    if let Some(a) = pod["spec"]["affinity"].as_object_mut() {
        a.retain(|_, v| !v.is_null());
    }
    let empty = pod["spec"]["affinity"]
        .as_object()
        .is_none_or(Map::is_empty);
    if empty && let Some(s) = pod["spec"].as_object_mut() {
        s.remove("affinity");
    }
}

/// A memory quantity in MiB (the generator's own quantities only).
fn mebibytes(q: &str) -> i64 {
    if let Some(m) = q.strip_suffix("Mi") {
        m.parse().unwrap_or(0)
    } else if let Some(g) = q.strip_suffix("Gi") {
        g.parse::<i64>().map(|g| g * 1024).unwrap_or(0)
    } else {
        0
    }
}

/// How many cases of each shape a seed range gives: for reports.
pub fn describe(case: &GenCase) -> BTreeMap<&'static str, usize> {
    let mut m = BTreeMap::new();
    m.insert("nodes", case.nodes.len());
    m.insert("pods", case.pods.len());
    m.insert("pending", case.pending());
    m.insert("objects", case.objects.len());
    m.insert("config", usize::from(case.config.is_some()));
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_case() {
        assert_eq!(generate(7), generate(7));
        assert_ne!(generate(7), generate(8));
    }

    #[test]
    fn every_case_has_nodes_and_pending_pods() {
        for seed in 0..200 {
            let c = generate(seed);
            assert!(!c.nodes.is_empty(), "seed {seed}");
            assert!(c.pending() >= 1, "seed {seed}");
        }
    }
}
