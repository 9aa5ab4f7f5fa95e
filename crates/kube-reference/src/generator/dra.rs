//! Dynamic resource allocation in a share of the cases ([`is_dra`]): `resource.k8s.io/v1`
//! objects as the API server stores them, added to a case the rest of the generator made.
//!
//! Every draw comes from the case's own DRA stream (the seed xor'ed with [`DRA_STREAM`]), so a
//! case without DRA is byte for byte what it was before DRA came, and a DRA case is that same
//! case with its DRA objects, pods' claim entries and claim statuses added.
//!
//! - DeviceClasses selecting by driver, attribute (string, bool), capacity (`quantity`) and
//!   driver version (`semver`), one with two selectors;
//! - per node (most GPU nodes, some others, never all): a ResourceSlice of GPUs of one model
//!   (`spec.nodeName`, pool named after the node; attributes of every type, memory capacity,
//!   `resource.kubernetes.io/pcieRoot`), sometimes split in two slices of one pool or beside a
//!   stale slice of an older pool generation, sometimes with a slice of NICs;
//! - sometimes a pool of network-attached devices, on a zone's nodes (`nodeSelector`) or on
//!   all nodes (`allNodes`);
//! - ResourceClaims: `exactly` requests (ExactCount 1 to 4 or All, with or without CEL
//!   selectors), `firstAvailable` subrequests, `matchAttribute` constraints within a request
//!   and across a GPU and a NIC; standalone claims, some shared by several pods, and claims
//!   made from ResourceClaimTemplates as kube's resourceclaim controller makes them (generated
//!   name, the pod as controlling owner, the pod's `status.resourceClaimStatuses`);
//! - running pods holding allocated claims (`status.allocation` with free devices of their
//!   node and a node selector naming it, `status.reservedFor` listing the pods, some claims
//!   shared by two running pods), an allocated claim no pod holds any more;
//! - pending pods asking for claims (most tolerating the GPU nodes' taint), a few whose claim
//!   does not exist or was not created yet (kept out at DynamicResources' PreEnqueue).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::{GenCase, hex, is_large};

/// What the DRA stream's seed is the case's seed xor'ed with.
const DRA_STREAM: u64 = 0x5eed_d7a0_0000_0002;

/// The share of the cases (large ones left out) that get DRA objects.
const DRA_SHARE: f64 = 0.2;

/// The GPU driver.
pub const GPU_DRIVER: &str = "gpu.example.com";
const NIC_DRIVER: &str = "nic.example.com";
const FABRIC_DRIVER: &str = "fabric.example.com";
/// kube's standard attribute of a device's PCIe root complex.
const PCIE_ROOT: &str = "resource.kubernetes.io/pcieRoot";

/// GPU models: name, memory, whether NVLink connects them.
const MODELS: &[(&str, &str, bool)] = &[
    ("a100", "40Gi", true),
    ("a100", "80Gi", true),
    ("h100", "80Gi", true),
    ("t4", "16Gi", false),
    ("l4", "24Gi", false),
];
const DRIVER_VERSIONS: &[&str] = &["1.2.0", "1.4.2", "2.1.0"];

/// The DeviceClasses of the GPU driver (the first selects the driver only).
const GPU_CLASSES: &[&str] = &[
    "gpu.example.com",
    "a100.gpu.example.com",
    "large.gpu.example.com",
    "recent.gpu.example.com",
];

/// Whether the seed's case has DRA objects: about one in five, large cases left out.
pub fn is_dra(seed: u64) -> bool {
    !is_large(seed) && ChaCha8Rng::seed_from_u64(seed ^ DRA_STREAM).random_bool(DRA_SHARE)
}

/// A node's GPUs not yet allocated: node, pool, free device names.
struct NodeGpus {
    node: String,
    free: Vec<String>,
}

struct Dra {
    rng: ChaCha8Rng,
    objects: Vec<Value>,
    gpus: Vec<NodeGpus>,
    /// Standalone claims pending pods may share: (namespace, name).
    shareable: Vec<(String, String)>,
    /// ResourceClaimTemplates: (namespace, name, the claims' spec).
    templates: Vec<(String, String, Value)>,
}

/// Adds DRA to the case when its seed is one of [`is_dra`]'s.
pub(super) fn add(case: &mut GenCase) {
    let mut rng = ChaCha8Rng::seed_from_u64(case.seed ^ DRA_STREAM);
    if is_large(case.seed) || !rng.random_bool(DRA_SHARE) {
        return;
    }
    let mut d = Dra {
        rng,
        objects: Vec::new(),
        gpus: Vec::new(),
        shareable: Vec::new(),
        templates: Vec::new(),
    };
    d.classes();
    d.slices(&case.nodes);
    let namespaces: Vec<String> = case
        .objects
        .iter()
        .filter(|o| o["kind"] == "Namespace")
        .filter_map(|o| o["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    d.templates(&namespaces);
    for pod in case.pods.iter_mut() {
        if pod["spec"]["nodeName"]
            .as_str()
            .is_some_and(|n| !n.is_empty())
        {
            d.running(pod);
        }
    }
    d.shared_running(&mut case.pods);
    for pod in case.pods.iter_mut() {
        if pod["spec"]["nodeName"].as_str().is_none_or(str::is_empty) {
            d.pending(pod);
        }
    }
    case.objects.extend(d.objects);
}

fn cel(expression: String) -> Value {
    json!({"cel": {"expression": expression}})
}

fn driver_is(driver: &str) -> Value {
    cel(format!("device.driver == \"{driver}\""))
}

fn on_node(node: &str) -> Value {
    json!({"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]})
}

/// The template of the running pods' claims made from one.
const RUNTIME_TEMPLATE: &str = "gpu-runtime";

fn template(ns: &str, name: &str, spec: &Value) -> Value {
    json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": name, "namespace": ns, "uid": format!("rct-{ns}-{name}"),
                     "resourceVersion": "1", "creationTimestamp": "2026-11-20T09:00:00Z"},
        "spec": {"spec": spec}
    })
}

fn consumer(pod: &Value) -> Value {
    json!({"resource": "pods", "name": pod["metadata"]["name"], "uid": pod["metadata"]["uid"]})
}

impl Dra {
    fn chance(&mut self, p: f64) -> bool {
        self.rng.random_bool(p)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.rng.random_range(0..items.len())]
    }

    fn classes(&mut self) {
        let gpu = format!("device.attributes[\"{GPU_DRIVER}\"]");
        let classes = [
            ("gpu.example.com", vec![driver_is(GPU_DRIVER)]),
            (
                "a100.gpu.example.com",
                vec![
                    driver_is(GPU_DRIVER),
                    cel(format!("{gpu}.model == \"a100\"")),
                ],
            ),
            (
                "large.gpu.example.com",
                vec![cel(format!(
                    "device.driver == \"{GPU_DRIVER}\" && device.capacity[\"{GPU_DRIVER}\"].memory.compareTo(quantity(\"40Gi\")) >= 0"
                ))],
            ),
            (
                "recent.gpu.example.com",
                vec![cel(format!(
                    "device.driver == \"{GPU_DRIVER}\" && {gpu}.driverVersion.isGreaterThan(semver(\"1.2.0\"))"
                ))],
            ),
            ("nic.example.com", vec![driver_is(NIC_DRIVER)]),
            ("fpga.example.com", vec![driver_is(FABRIC_DRIVER)]),
        ];
        for (name, selectors) in classes {
            self.objects.push(json!({
                "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
                "metadata": {"name": name, "uid": format!("dc-{name}"), "resourceVersion": "1",
                             "creationTimestamp": "2026-11-01T09:00:00Z", "generation": 1},
                "spec": {"selectors": selectors}
            }));
        }
    }

    fn slice(&mut self, node: &str, driver: &str, pool: Value, devices: Vec<Value>) -> Value {
        let name = format!("{node}-{driver}-{}", hex(&mut self.rng, 5));
        json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": name, "uid": format!("rs-{name}"), "resourceVersion": "1",
                         "creationTimestamp": "2026-11-01T09:01:00Z", "generation": 1,
                         "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": node,
                                              "uid": format!("Node--{node}"), "controller": true}]},
            "spec": {"driver": driver, "nodeName": node, "pool": pool, "devices": devices}
        })
    }

    fn gpu_device(i: usize, model: (&str, &str, bool), version: &str) -> Value {
        json!({
            "name": format!("gpu-{i}"),
            "attributes": {
                "model": {"string": model.0},
                "index": {"int": i},
                "nvlink": {"bool": model.2},
                "driverVersion": {"version": version},
                PCIE_ROOT: {"string": format!("pci0000:{:02x}", i / 2)},
            },
            "capacity": {"memory": {"value": model.1}, "multiprocessors": {"value": "108"}}
        })
    }

    fn slices(&mut self, nodes: &[Value]) {
        let mut any = false;
        for (i, node) in nodes.iter().enumerate() {
            let name = node["metadata"]["name"].as_str().unwrap_or("").to_string();
            let gpu_node = node["metadata"]["labels"]["gpu"] == "true";
            let last_chance = i + 1 == nodes.len() && !any;
            if !(last_chance || self.chance(if gpu_node { 0.9 } else { 0.45 })) {
                continue;
            }
            any = true;
            let model = self.pick(MODELS);
            let version = self.pick(DRIVER_VERSIONS);
            let n = self.pick(&[1, 2, 2, 4, 4, 8]);
            let devices: Vec<Value> = (0..n).map(|k| Dra::gpu_device(k, model, version)).collect();
            let split = n > 1 && self.chance(0.15);
            let stale = self.chance(0.1);
            let generation = if stale { 2 } else { 1 };
            let count = if split { 2 } else { 1 };
            let pool = json!({"name": name, "generation": generation, "resourceSliceCount": count});
            if split {
                let (a, b) = devices.split_at(n / 2);
                let s = self.slice(&name, GPU_DRIVER, pool.clone(), a.to_vec());
                self.objects.push(s);
                let s = self.slice(&name, GPU_DRIVER, pool, b.to_vec());
                self.objects.push(s);
            } else {
                let s = self.slice(&name, GPU_DRIVER, pool, devices);
                self.objects.push(s);
            }
            if stale {
                // The driver's slice of the pool's previous generation, not deleted yet: the
                // allocator reads the newest generation only.
                let old = json!({"name": name, "generation": 1, "resourceSliceCount": 1});
                let devices = (0..4)
                    .map(|k| Dra::gpu_device(k + 10, ("a100", "80Gi", true), "2.1.0"))
                    .collect();
                let s = self.slice(&name, GPU_DRIVER, old, devices);
                self.objects.push(s);
            }
            self.gpus.push(NodeGpus {
                node: name.clone(),
                free: (0..n).map(|k| format!("gpu-{k}")).collect(),
            });
            if self.chance(0.4) {
                let nics: Vec<Value> = (0..self.rng.random_range(1..=2))
                    .map(|k| {
                        json!({"name": format!("nic-{k}"),
                               "attributes": {PCIE_ROOT: {"string": format!("pci0000:{k:02x}")},
                                              "rdma": {"bool": k == 0}},
                               "capacity": {"bandwidth": {"value": "100G"}}})
                    })
                    .collect();
                let pool = json!({"name": name, "generation": 1, "resourceSliceCount": 1});
                let s = self.slice(&name, NIC_DRIVER, pool, nics);
                self.objects.push(s);
            }
        }
        if self.chance(0.35) {
            // Network-attached FPGAs: on one zone's nodes, or on every node.
            let zone = nodes
                .iter()
                .filter_map(|n| n["metadata"]["labels"]["topology.kubernetes.io/zone"].as_str())
                .next()
                .map(str::to_string);
            let (pool, reach) = match zone {
                Some(z) if self.chance(0.6) => (
                    format!("fabric-{z}"),
                    json!({"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                        {"key": "topology.kubernetes.io/zone", "operator": "In", "values": [z]}]}]}}),
                ),
                _ => ("fabric".to_string(), json!({"allNodes": true})),
            };
            let devices: Vec<Value> = (0..self.rng.random_range(1..=3))
                .map(|k| {
                    json!({"name": format!("fpga-{k}"),
                           "attributes": {"family": {"string": if k == 0 { "agilex" } else { "stratix" }}},
                           "capacity": {"lanes": {"value": "4"}}})
                })
                .collect();
            let name = format!("{pool}-{FABRIC_DRIVER}-{}", hex(&mut self.rng, 5));
            let mut spec = json!({"driver": FABRIC_DRIVER,
                "pool": {"name": pool, "generation": 1, "resourceSliceCount": 1},
                "devices": devices});
            if let (Some(s), Some(r)) = (spec.as_object_mut(), reach.as_object()) {
                s.extend(r.clone());
            }
            self.objects.push(json!({
                "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
                "metadata": {"name": name, "uid": format!("rs-{name}"), "resourceVersion": "1",
                             "creationTimestamp": "2026-11-01T09:01:00Z", "generation": 1},
                "spec": spec
            }));
        }
    }

    /// An `exactly` request as the API server stores it (allocation mode and count defaulted).
    fn exactly(&mut self, class: &str, count: Option<i64>, selectors: Vec<Value>) -> Value {
        let mut e = json!({"deviceClassName": class});
        if !selectors.is_empty() {
            e["selectors"] = json!(selectors);
        }
        match count {
            Some(n) => {
                e["allocationMode"] = json!("ExactCount");
                e["count"] = json!(n);
            }
            None => e["allocationMode"] = json!("All"),
        }
        e
    }

    fn gpu_selector(&mut self) -> Vec<Value> {
        let gpu = format!("device.attributes[\"{GPU_DRIVER}\"]");
        let expression = match self.rng.random_range(0..8) {
            0 => {
                let (model, _, _) = self.pick(MODELS);
                format!("{gpu}.model == \"{model}\"")
            }
            1 => {
                let q = self.pick(&["24Gi", "40Gi", "64Gi"]);
                format!(
                    "device.capacity[\"{GPU_DRIVER}\"].memory.compareTo(quantity(\"{q}\")) >= 0"
                )
            }
            2 => format!("{gpu}.nvlink"),
            3 => format!("{gpu}.index < {}", self.rng.random_range(1..=4)),
            4 => format!("{gpu}.driverVersion.isGreaterThan(semver(\"1.4.0\"))"),
            _ => return Vec::new(),
        };
        vec![cel(expression)]
    }

    /// The devices part of a claim's spec.
    fn claim_spec(&mut self) -> Value {
        let devices = match self.rng.random_range(0..12) {
            0..=4 => {
                let class = if self.chance(0.6) {
                    GPU_CLASSES[0]
                } else {
                    self.pick(GPU_CLASSES)
                };
                let count = self.pick(&[1, 1, 1, 2, 2, 3, 4]);
                let selectors = self.gpu_selector();
                let e = self.exactly(class, Some(count), selectors);
                json!({"requests": [{"name": "gpu", "exactly": e}]})
            }
            5 => {
                let (model, _, _) = self.pick(MODELS);
                let selectors = vec![cel(format!(
                    "device.attributes[\"{GPU_DRIVER}\"].model == \"{model}\""
                ))];
                let e = self.exactly(GPU_CLASSES[0], None, selectors);
                json!({"requests": [{"name": "gpus", "exactly": e}]})
            }
            6 | 7 => {
                let big = vec![cel(format!(
                    "device.capacity[\"{GPU_DRIVER}\"].memory.compareTo(quantity(\"80Gi\")) >= 0"
                ))];
                let mut subs = vec![
                    json!({"name": "large", "deviceClassName": GPU_CLASSES[0], "selectors": big,
                           "allocationMode": "ExactCount", "count": self.pick(&[1, 2])}),
                    json!({"name": "any", "deviceClassName": GPU_CLASSES[0],
                           "allocationMode": "ExactCount", "count": 1}),
                ];
                if self.chance(0.3) {
                    subs.insert(
                        0,
                        json!({"name": "a100", "deviceClassName": "a100.gpu.example.com",
                               "allocationMode": "ExactCount", "count": 2}),
                    );
                }
                json!({"requests": [{"name": "gpu", "firstAvailable": subs}]})
            }
            8 => {
                let gpu = self.exactly(GPU_CLASSES[0], Some(1), Vec::new());
                let nic = self.exactly("nic.example.com", Some(1), Vec::new());
                json!({"requests": [{"name": "gpu", "exactly": gpu}, {"name": "nic", "exactly": nic}],
                       "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": PCIE_ROOT}]})
            }
            9 => {
                let e = self.exactly(GPU_CLASSES[0], Some(2), Vec::new());
                let attribute = if self.chance(0.5) {
                    format!("{GPU_DRIVER}/model")
                } else {
                    PCIE_ROOT.to_string()
                };
                json!({"requests": [{"name": "gpus", "exactly": e}],
                       "constraints": [{"matchAttribute": attribute}]})
            }
            _ => {
                let e = self.exactly("fpga.example.com", Some(1), Vec::new());
                json!({"requests": [{"name": "fpga", "exactly": e}]})
            }
        };
        json!({"devices": devices})
    }

    fn templates(&mut self, namespaces: &[String]) {
        for ns in namespaces {
            for _ in 0..self.rng.random_range(0..=2) {
                let name = format!(
                    "{}-{}",
                    self.pick(&["gpu", "trainer", "infer"]),
                    hex(&mut self.rng, 4)
                );
                let spec = self.claim_spec();
                self.objects.push(template(ns, &name, &spec));
                self.templates.push((ns.clone(), name, spec));
            }
        }
    }

    /// A ResourceClaim object.
    fn claim(&self, ns: &str, name: &str, spec: Value) -> Value {
        json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": name, "namespace": ns, "uid": format!("rc-{ns}-{name}"),
                         "resourceVersion": "1", "creationTimestamp": "2026-11-26T09:00:00Z"},
            "spec": spec, "status": {}
        })
    }

    /// The claim kube's resourceclaim controller makes from a template for the pod's entry.
    fn templated_claim(&mut self, pod: &Value, entry: &str, spec: Value) -> Value {
        let ns = pod["metadata"]["namespace"].as_str().unwrap_or("default");
        let pod_name = pod["metadata"]["name"].as_str().unwrap_or("");
        let name = format!("{pod_name}-{entry}-{}", hex(&mut self.rng, 5));
        let mut c = self.claim(ns, &name, spec);
        c["metadata"]["generateName"] = json!(format!("{pod_name}-{entry}-"));
        c["metadata"]["annotations"] = json!({"resource.kubernetes.io/pod-claim-name": entry});
        c["metadata"]["ownerReferences"] = json!([{"apiVersion": "v1", "kind": "Pod",
            "name": pod_name, "uid": pod["metadata"]["uid"], "controller": true, "blockOwnerDeletion": true}]);
        c
    }

    /// Adds the claim entry to the pod's spec (and its first container's claims), and the
    /// generated claim's name to its status when it came from a template.
    fn attach(pod: &mut Value, entry: Value, generated: Option<&str>) {
        let name = entry["name"].clone();
        match pod["spec"]["resourceClaims"].as_array_mut() {
            Some(list) => list.push(entry),
            None => pod["spec"]["resourceClaims"] = json!([entry]),
        }
        let c = &mut pod["spec"]["containers"][0]["resources"];
        if c.is_object() {
            match c["claims"].as_array_mut() {
                Some(list) => list.push(json!({"name": name})),
                None => c["claims"] = json!([{"name": name}]),
            }
        }
        if let Some(claim) = generated {
            let status = json!({"name": name, "resourceClaimName": claim});
            match pod["status"]["resourceClaimStatuses"].as_array_mut() {
                Some(list) => list.push(status),
                None => pod["status"]["resourceClaimStatuses"] = json!([status]),
            }
        }
    }

    /// A running pod on a node with free GPUs may hold an allocated claim of some of them.
    fn running(&mut self, pod: &mut Value) {
        let node = pod["spec"]["nodeName"].as_str().unwrap_or("").to_string();
        let Some(at) = self
            .gpus
            .iter()
            .position(|g| g.node == node && !g.free.is_empty())
        else {
            return;
        };
        if !self.chance(0.4) {
            return;
        }
        let free = self.gpus[at].free.len();
        let count = self.rng.random_range(1..=free.min(2));
        let taken: Vec<String> = self.gpus[at].free.drain(..count).collect();
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_string();
        let exactly = self.exactly(GPU_CLASSES[0], Some(count as i64), Vec::new());
        let spec = json!({"devices": {"requests": [{"name": "gpu", "exactly": exactly}]}});
        let templated = self.chance(0.5);
        if templated
            && !self
                .templates
                .iter()
                .any(|(n, t, _)| *n == ns && t == RUNTIME_TEMPLATE)
        {
            self.objects.push(template(&ns, RUNTIME_TEMPLATE, &spec));
            self.templates
                .push((ns.clone(), RUNTIME_TEMPLATE.into(), spec.clone()));
        }
        let mut claim = if templated {
            self.templated_claim(pod, "gpu", spec)
        } else {
            let name = format!(
                "{}-gpu-{}",
                pod["metadata"]["name"].as_str().unwrap_or(""),
                hex(&mut self.rng, 3)
            );
            self.claim(&ns, &name, spec)
        };
        let results: Vec<Value> = taken
            .iter()
            .map(|d| json!({"request": "gpu", "driver": GPU_DRIVER, "pool": node, "device": d}))
            .collect();
        claim["metadata"]["finalizers"] = json!(["resource.kubernetes.io/delete-protection"]);
        let gone = !templated && self.chance(0.15);
        claim["status"] = json!({
            "allocation": {"devices": {"results": results}, "nodeSelector": on_node(&node)},
            "reservedFor": if gone { json!([]) } else { json!([consumer(pod)]) },
        });
        let name = claim["metadata"]["name"].as_str().unwrap_or("").to_string();
        if gone {
            // Allocated for a pod that has finished: no one holds it, its devices stay taken
            // until the controller deallocates it; a pending pod may take it over.
            if let Some(s) = claim["status"].as_object_mut() {
                s.remove("reservedFor");
            }
            self.shareable.push((ns, name));
        } else if templated {
            let entry = json!({"name": "gpu", "resourceClaimTemplateName": RUNTIME_TEMPLATE});
            Dra::attach(pod, entry, Some(&name));
        } else {
            Dra::attach(pod, json!({"name": "gpu", "resourceClaimName": name}), None);
        }
        self.objects.push(claim);
    }

    /// Some standalone allocated claims are held by a second running pod of their node (a
    /// claim shared by the pods of a job).
    fn shared_running(&mut self, pods: &mut [Value]) {
        for i in 0..self.objects.len() {
            let o = self.objects[i].clone();
            if o["kind"] != "ResourceClaim"
                || o["metadata"]["ownerReferences"].is_array()
                || o["status"]["reservedFor"]
                    .as_array()
                    .is_none_or(Vec::is_empty)
            {
                continue;
            }
            if !self.chance(0.3) {
                continue;
            }
            let node =
                o["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"][0]["matchFields"][0]
                    ["values"][0]
                    .clone();
            let ns = o["metadata"]["namespace"].clone();
            let name = o["metadata"]["name"].clone();
            let holder = o["status"]["reservedFor"][0]["uid"].clone();
            let Some(other) = pods.iter_mut().find(|p| {
                p["spec"]["nodeName"] == node
                    && p["metadata"]["namespace"] == ns
                    && p["metadata"]["uid"] != holder
                    && p["spec"]["resourceClaims"].is_null()
            }) else {
                continue;
            };
            Dra::attach(
                other,
                json!({"name": "shared", "resourceClaimName": name}),
                None,
            );
            let entry = consumer(other);
            if let Some(list) = self.objects[i]["status"]["reservedFor"].as_array_mut() {
                list.push(entry);
            }
        }
    }

    /// A pending pod may ask for one or two claims.
    fn pending(&mut self, pod: &mut Value) {
        if !self.chance(0.5) {
            return;
        }
        let ns = pod["metadata"]["namespace"]
            .as_str()
            .unwrap_or("default")
            .to_string();
        // GPU workloads mostly tolerate the taint GPU nodes carry.
        if self.chance(0.7) {
            let toleration =
                json!({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"});
            match pod["spec"]["tolerations"].as_array_mut() {
                Some(list) if !list.contains(&toleration) => list.push(toleration),
                Some(_) => {}
                None => pod["spec"]["tolerations"] = json!([toleration]),
            }
        }
        let n = if self.chance(0.15) { 2 } else { 1 };
        for k in 0..n {
            let entry = format!("claim-{k}");
            let ns_templates: Vec<(String, Value)> = self
                .templates
                .iter()
                .filter(|(n, _, _)| *n == ns)
                .map(|(_, t, s)| (t.clone(), s.clone()))
                .collect();
            let ns_shared: Vec<String> = self
                .shareable
                .iter()
                .filter(|(n, _)| *n == ns)
                .map(|(_, c)| c.clone())
                .collect();
            match self.rng.random_range(0..20) {
                // From a template: the claim the controller made, or none yet.
                0..=7 if !ns_templates.is_empty() => {
                    let (template, spec) =
                        ns_templates[self.rng.random_range(0..ns_templates.len())].clone();
                    let e = json!({"name": entry, "resourceClaimTemplateName": template});
                    if self.chance(0.04) {
                        Dra::attach(pod, e, None);
                    } else {
                        let claim = self.templated_claim(pod, &entry, spec);
                        let name = claim["metadata"]["name"].as_str().unwrap_or("").to_string();
                        self.objects.push(claim);
                        Dra::attach(pod, e, Some(&name));
                    }
                }
                // A claim another pod uses or will use.
                8..=11 if !ns_shared.is_empty() => {
                    let name = ns_shared[self.rng.random_range(0..ns_shared.len())].clone();
                    if pod["spec"]["resourceClaims"]
                        .as_array()
                        .is_some_and(|l| l.iter().any(|e| e["resourceClaimName"] == name.as_str()))
                    {
                        continue;
                    }
                    Dra::attach(pod, json!({"name": entry, "resourceClaimName": name}), None);
                }
                // A claim that does not exist.
                12 if self.chance(0.4) => {
                    let name = format!("missing-{}", hex(&mut self.rng, 4));
                    Dra::attach(pod, json!({"name": entry, "resourceClaimName": name}), None);
                }
                // A claim of its own, which later pods may share.
                _ => {
                    let app = pod["metadata"]["labels"]["app"]
                        .as_str()
                        .unwrap_or("job")
                        .to_string();
                    let name = format!("{app}-{}", hex(&mut self.rng, 5));
                    let spec = self.claim_spec();
                    let claim = self.claim(&ns, &name, spec);
                    self.objects.push(claim);
                    self.shareable.push((ns.clone(), name.clone()));
                    Dra::attach(pod, json!({"name": entry, "resourceClaimName": name}), None);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn about_one_case_in_five_has_dra() {
        let n = (0..1000).filter(|&s| is_dra(s)).count();
        assert!((150..=250).contains(&n), "{n}");
        assert!((0..1000).filter(|&s| is_large(s)).all(|s| !is_dra(s)));
    }

    #[test]
    fn allocated_devices_exist_and_are_taken_once() {
        for seed in (0..400).filter(|&s| is_dra(s)) {
            let case = super::super::generate(seed);
            let mut slices = std::collections::BTreeSet::new();
            for o in case.objects.iter().filter(|o| o["kind"] == "ResourceSlice") {
                for d in o["spec"]["devices"].as_array().into_iter().flatten() {
                    slices.insert((o["spec"]["pool"]["name"].to_string(), d["name"].to_string()));
                }
            }
            let mut taken = std::collections::BTreeSet::new();
            for o in case.objects.iter().filter(|o| o["kind"] == "ResourceClaim") {
                for r in o["status"]["allocation"]["devices"]["results"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    let d = (r["pool"].to_string(), r["device"].to_string());
                    assert!(slices.contains(&d), "seed {seed}: {d:?}");
                    assert!(taken.insert(d), "seed {seed}: taken twice");
                }
            }
        }
    }
}
