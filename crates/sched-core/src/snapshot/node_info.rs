//! A node with its pods and the sums scheduling reads.

use std::any::Any;
use std::sync::{Arc, OnceLock};

use crate::model::{
    Node, Pod, PodKey, Resources, TaintEffect, pod_non_zero_requests, pod_requests,
};

use super::intern::{Interner, LabelIds, Sym};

/// Transport protocol of a host port.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Protocol {
    /// TCP (the default when a port names none).
    Tcp,
    /// UDP.
    Udp,
    /// SCTP.
    Sctp,
}

impl Protocol {
    /// Parses a Kubernetes protocol name; empty means TCP. Unknown names are kept apart from
    /// the three known ones by returning `None`.
    pub fn parse(s: &str) -> Option<Protocol> {
        match s {
            "" | "TCP" => Some(Protocol::Tcp),
            "UDP" => Some(Protocol::Udp),
            "SCTP" => Some(Protocol::Sctp),
            _ => None,
        }
    }
}

/// A host port in use: IP (empty in the pod spec means `0.0.0.0`), protocol and port.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HostPort {
    /// Host IP; `0.0.0.0` conflicts with every IP.
    pub ip: String,
    /// Protocol.
    pub protocol: Protocol,
    /// Port number.
    pub port: i32,
}

impl HostPort {
    /// The host ports a pod asks for, with kube's defaults applied.
    pub fn of_pod(pod: &Pod) -> Vec<HostPort> {
        pod.host_ports()
            .map(|p| HostPort {
                ip: if p.host_ip.is_empty() {
                    "0.0.0.0".to_string()
                } else {
                    p.host_ip.clone()
                },
                protocol: Protocol::parse(&p.protocol).unwrap_or(Protocol::Tcp),
                port: p.host_port,
            })
            .collect()
    }

    /// Whether two host ports cannot both be bound (same protocol and port, and the same IP or
    /// either is `0.0.0.0`).
    pub fn conflicts_with(&self, other: &HostPort) -> bool {
        self.protocol == other.protocol
            && self.port == other.port
            && (self.ip == other.ip || self.ip == "0.0.0.0" || other.ip == "0.0.0.0")
    }
}

/// A pod as a NodeInfo keeps it: the object plus what scheduling computes from it once.
#[derive(Clone, Debug, PartialEq)]
pub struct PodInfo {
    pod: Arc<Pod>,
    /// `namespace/name`, shared with the snapshot's index of pods (no copy per add).
    key: PodKey,
    requests: Resources,
    non_zero: (i64, i64),
    labels: LabelIds,
    ports: Vec<HostPort>,
    has_affinity: bool,
    has_required_anti_affinity: bool,
    /// The pod's affinity terms (and namespace, when a term covers it by default), interned:
    /// pods with equal ids have terms that select the same pods ([`Sym::NONE`] without pod
    /// affinity terms).
    affinity_id: Sym,
    /// The pod's namespace, interned.
    namespace_id: Sym,
    /// `spec.priority` (0 when unset), read without reaching the pod.
    priority: i32,
    /// Whether `status.startTime` is set.
    started: bool,
}

/// The id under which a pod's namespace and pod (anti-)affinity are interned.
fn affinity_id(pod: &Pod, interner: &mut Interner) -> Sym {
    if !pod.has_pod_affinity_terms() {
        return Sym::NONE;
    }
    let Some(a) = pod.spec.affinity.as_ref() else {
        return Sym::NONE;
    };
    // The node affinity plays no part; only the pod terms, and the namespace they live in
    // when a term covers it by default (no `namespaces`, no `namespaceSelector`).
    let terms = (&a.pod_affinity, &a.pod_anti_affinity);
    let own_namespace = [&a.pod_affinity, &a.pod_anti_affinity]
        .into_iter()
        .flatten()
        .flat_map(|p| {
            p.required
                .iter()
                .chain(p.preferred.iter().map(|t| &t.pod_affinity_term))
        })
        .any(|t| t.namespaces.is_empty() && t.namespace_selector.is_none());
    let ns = if own_namespace {
        pod.metadata.namespace.as_str()
    } else {
        ""
    };
    let json = serde_json::to_string(&terms).unwrap_or_else(|_| format!("{terms:?}"));
    interner.intern(&format!("affinity\u{0}{ns}\u{0}{json}"))
}

impl PodInfo {
    /// Precomputes a pod's requests, interned labels and ports.
    pub(crate) fn new(pod: Arc<Pod>, interner: &mut Interner) -> PodInfo {
        let (requests, non_zero) = (pod_requests(&pod), pod_non_zero_requests(&pod));
        PodInfo::with_requests(pod, requests, non_zero, interner)
    }

    /// [`PodInfo::new`] with the pod's requests already computed.
    pub(crate) fn with_requests(
        pod: Arc<Pod>,
        requests: Resources,
        non_zero: (i64, i64),
        interner: &mut Interner,
    ) -> PodInfo {
        PodInfo {
            key: pod.key(),
            requests,
            non_zero,
            labels: LabelIds::intern(interner, &pod.metadata.labels),
            ports: HostPort::of_pod(&pod),
            has_affinity: pod.has_pod_affinity_terms(),
            has_required_anti_affinity: pod.has_required_anti_affinity(),
            affinity_id: affinity_id(&pod, interner),
            namespace_id: interner.intern(&pod.metadata.namespace),
            priority: pod.spec.priority.unwrap_or(0),
            started: pod.status.start_time.is_some(),
            pod,
        }
    }

    /// The pod's priority (`spec.priority`, 0 when unset), kept beside its requests so that
    /// preemption's dry run reads it without reaching the pod.
    pub(crate) fn priority(&self) -> i32 {
        self.priority
    }

    /// Whether the pod has a start time (`status.startTime`).
    pub(crate) fn started(&self) -> bool {
        self.started
    }

    /// The pod's namespace, interned.
    pub fn namespace_id(&self) -> Sym {
        self.namespace_id
    }

    /// The interned identity of the pod's pod affinity terms, with its namespace when a term
    /// covers the pod's own namespace by default (no `namespaces`, no `namespaceSelector`): two
    /// pods with the same id have terms that say the same about any other pod, so that is
    /// worked out once. [`Sym::NONE`] for a pod without pod affinity terms.
    pub fn affinity_id(&self) -> Sym {
        self.affinity_id
    }

    /// The pod.
    pub fn pod(&self) -> &Pod {
        &self.pod
    }

    /// The shared pod object.
    pub fn pod_arc(&self) -> &Arc<Pod> {
        &self.pod
    }

    /// The pod, shared, taking the info apart.
    pub(crate) fn into_pod_arc(self) -> Arc<Pod> {
        self.pod
    }

    /// `namespace/name`.
    pub fn key(&self) -> &PodKey {
        &self.key
    }

    /// Effective requests (see [`crate::model::pod_requests`]).
    pub fn requests(&self) -> &Resources {
        &self.requests
    }

    /// Non-zero CPU (milli) and memory (bytes) requests.
    pub fn non_zero_requests(&self) -> (i64, i64) {
        self.non_zero
    }

    /// Interned labels.
    pub fn labels(&self) -> &LabelIds {
        &self.labels
    }

    /// Host ports in use.
    pub fn host_ports(&self) -> &[HostPort] {
        &self.ports
    }

    /// Whether the pod has pod affinity or anti-affinity terms.
    pub fn has_affinity(&self) -> bool {
        self.has_affinity
    }

    /// Whether the pod has required anti-affinity terms.
    pub fn has_required_anti_affinity(&self) -> bool {
        self.has_required_anti_affinity
    }
}

/// One node, the pods on it, and precomputed sums, as kube-scheduler's `NodeInfo`.
///
/// Invariant: every sum equals the sum over [`NodeInfo::pods`]; adding or removing a pod updates
/// them in O(size of the pod).
#[derive(Clone, Debug, PartialEq)]
pub struct NodeInfo {
    node: Arc<Node>,
    pods: Vec<PodInfo>,
    requested: Resources,
    non_zero_requested: (i64, i64),
    allocatable: Resources,
    used_ports: Vec<HostPort>,
    labels: LabelIds,
    images: Vec<(Sym, i64)>,
    /// Per image (aligned with `images`): on how many nodes of the snapshot it was when this
    /// node was last added or updated, counting this node (kube v1.20's cache keeps that count
    /// in the node's image summary until the node is next updated).
    image_counts: Vec<u32>,
    zone: Sym,
    affinity_pods: usize,
    required_anti_affinity_pods: usize,
    disk_volume_pods: usize,
    /// The [`flags`] that depend on the node object only, and its number of
    /// PreferNoSchedule taints: computed when the node is set, not on every pod change.
    node_flags: u32,
    soft_taints: u32,
    memo: NodeMemo,
}

/// How many values [`NodeInfo::memo`] keeps per node.
pub const MEMO_SLOTS: usize = 8;

/// Values that plugins derive from a node's pods and the snapshot's storage objects (the
/// volumes its pods attach, say), computed on first use and dropped whenever the node's pods
/// change or a storage change can reach them (see `Snapshot::storage_mut_for`). Derived data:
/// two memos always compare equal.
#[derive(Clone, Debug, Default)]
pub(crate) struct NodeMemo {
    slots: [OnceLock<Arc<dyn Any + Send + Sync>>; MEMO_SLOTS],
}

impl NodeMemo {
    pub(crate) fn clear(&mut self) {
        for s in &mut self.slots {
            s.take();
        }
    }
}

impl PartialEq for NodeMemo {
    fn eq(&self, _: &NodeMemo) -> bool {
        true
    }
}

/// kube's zone key (`utilnode.GetZoneKey`): region and zone, the beta `failure-domain` labels
/// first, then the GA `topology.kubernetes.io` ones.
fn zone_key(node: &Node) -> Option<String> {
    let l = &node.metadata.labels;
    let zone = l
        .get("failure-domain.beta.kubernetes.io/zone")
        .or_else(|| l.get("topology.kubernetes.io/zone"))
        .map_or("", String::as_str);
    let region = l
        .get("failure-domain.beta.kubernetes.io/region")
        .or_else(|| l.get("topology.kubernetes.io/region"))
        .map_or("", String::as_str);
    if zone.is_empty() && region.is_empty() {
        None
    } else {
        Some(format!("{region}:\x00:{zone}"))
    }
}

pub(crate) fn has_disk_volumes(pod: &Pod) -> bool {
    pod.spec.volumes.iter().any(|v| {
        v.gce_persistent_disk.is_some()
            || v.aws_elastic_block_store.is_some()
            || v.rbd.is_some()
            || v.iscsi.is_some()
    })
}

impl NodeInfo {
    /// A node with no pods.
    pub(crate) fn new(node: Arc<Node>, interner: &mut Interner) -> NodeInfo {
        let mut info = NodeInfo {
            node: node.clone(),
            pods: Vec::new(),
            requested: Resources::default(),
            non_zero_requested: (0, 0),
            allocatable: Resources::default(),
            used_ports: Vec::new(),
            labels: LabelIds::default(),
            images: Vec::new(),
            image_counts: Vec::new(),
            zone: Sym::NONE,
            affinity_pods: 0,
            required_anti_affinity_pods: 0,
            disk_volume_pods: 0,
            node_flags: 0,
            soft_taints: 0,
            memo: NodeMemo::default(),
        };
        info.set_node(node, interner);
        info
    }

    /// Replaces the node object (labels, taints, allocatable...), keeping the pods.
    pub(crate) fn set_node(&mut self, node: Arc<Node>, interner: &mut Interner) {
        self.allocatable = Resources::from_list(&node.status.allocatable);
        self.labels = LabelIds::intern(interner, &node.metadata.labels);
        self.zone = zone_key(&node).map_or(Sym::NONE, |z| interner.intern(&z));
        let mut images: Vec<(Sym, i64)> = node
            .status
            .images
            .iter()
            .flat_map(|img| img.names.iter().map(move |n| (n, img.size_bytes)))
            .map(|(n, size)| (interner.intern(n), size))
            .collect();
        images.sort_unstable();
        images.dedup_by_key(|(s, _)| *s);
        self.image_counts = vec![0; images.len()];
        self.images = images;
        (self.node_flags, self.soft_taints) = NodeSummary::node_flags(&node);
        self.node = node;
        self.memo.clear();
    }

    /// Adds a pod and updates the sums.
    pub(crate) fn add_pod(&mut self, pod: PodInfo) {
        self.requested.add(&pod.requests);
        self.non_zero_requested.0 = self.non_zero_requested.0.wrapping_add(pod.non_zero.0);
        self.non_zero_requested.1 = self.non_zero_requested.1.wrapping_add(pod.non_zero.1);
        for port in &pod.ports {
            let at = self.used_ports.partition_point(|p| p <= port);
            self.used_ports.insert(at, port.clone());
        }
        self.affinity_pods += usize::from(pod.has_affinity);
        self.required_anti_affinity_pods += usize::from(pod.has_required_anti_affinity);
        self.disk_volume_pods += usize::from(has_disk_volumes(&pod.pod));
        self.pods.push(pod);
        self.memo.clear();
    }

    /// Removes the pod with `key` and updates the sums; `None` if it is not here.
    pub(crate) fn remove_pod(&mut self, key: &str) -> Option<PodInfo> {
        let i = self.pods.iter().position(|p| &*p.key == key)?;
        Some(self.remove_pod_at(i))
    }

    /// Removes the pod at position `i` of [`NodeInfo::pods`] and updates the sums.
    ///
    /// # Panics
    /// When `i` is out of range.
    pub(crate) fn remove_pod_at(&mut self, i: usize) -> PodInfo {
        let pod = self.pods.remove(i);
        self.requested.sub(&pod.requests);
        self.non_zero_requested.0 = self.non_zero_requested.0.wrapping_sub(pod.non_zero.0);
        self.non_zero_requested.1 = self.non_zero_requested.1.wrapping_sub(pod.non_zero.1);
        for port in &pod.ports {
            if let Ok(j) = self.used_ports.binary_search(port) {
                self.used_ports.remove(j);
            }
        }
        self.affinity_pods -= usize::from(pod.has_affinity);
        self.required_anti_affinity_pods -= usize::from(pod.has_required_anti_affinity);
        self.disk_volume_pods -= usize::from(has_disk_volumes(&pod.pod));
        self.memo.clear();
        pod
    }

    /// The value in memo slot `slot` (below [`MEMO_SLOTS`]), computed by `compute` on first use
    /// since the node's pods last changed or a storage change reached the node: a change of a
    /// claim its pods use or of the volume such a claim names, of its CSINode, or of any other
    /// storage object (StorageClass, CSIDriver, capacity), as
    /// [`Snapshot::storage_mut_for`](super::Snapshot::storage_mut_for) describes. `compute`
    /// may read the node, its pods and the storage objects those reach. Each slot holds one
    /// type; `None` when `slot` is out of range or holds another type (the caller then
    /// computes the value itself).
    pub fn memo<T: Any + Send + Sync>(
        &self,
        slot: usize,
        compute: impl FnOnce() -> T,
    ) -> Option<&T> {
        self.memo
            .slots
            .get(slot)?
            .get_or_init(|| Arc::new(compute()))
            .downcast_ref::<T>()
    }

    pub(crate) fn clear_memo(&mut self) {
        self.memo.clear();
    }

    /// The node.
    pub fn node(&self) -> &Node {
        &self.node
    }

    /// The node, shared.
    pub(crate) fn node_arc(&self) -> &Arc<Node> {
        &self.node
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.node.metadata.name
    }

    /// The pods on the node, in the order they were added.
    pub fn pods(&self) -> &[PodInfo] {
        &self.pods
    }

    /// Pods with pod affinity or anti-affinity terms.
    pub fn pods_with_affinity(&self) -> impl Iterator<Item = &PodInfo> {
        let any = self.affinity_pods > 0;
        self.pods.iter().filter(move |p| any && p.has_affinity)
    }

    /// Pods with required anti-affinity terms.
    pub fn pods_with_required_anti_affinity(&self) -> impl Iterator<Item = &PodInfo> {
        let any = self.required_anti_affinity_pods > 0;
        self.pods
            .iter()
            .filter(move |p| any && p.has_required_anti_affinity)
    }

    /// Sum of the pods' effective requests.
    pub fn requested(&self) -> &Resources {
        &self.requested
    }

    /// Sum of the pods' non-zero CPU (milli) and memory (bytes) requests.
    pub fn non_zero_requested(&self) -> (i64, i64) {
        self.non_zero_requested
    }

    /// The node's allocatable resources.
    pub fn allocatable(&self) -> &Resources {
        &self.allocatable
    }

    /// Host ports used by the pods (one entry per pod port), sorted.
    pub fn used_ports(&self) -> &[HostPort] {
        &self.used_ports
    }

    /// Interned node labels.
    pub fn labels(&self) -> &LabelIds {
        &self.labels
    }

    /// Size of the image named `name` (interned) on this node, if present.
    pub fn image_size(&self, name: Sym) -> Option<i64> {
        self.images
            .binary_search_by(|(s, _)| s.cmp(&name))
            .ok()
            .map(|i| self.images[i].1)
    }

    /// On how many nodes the image was when this node was last added or updated (see
    /// [`super::ImageCounts::AsOfNodeUpdate`]), if the node has it.
    pub fn image_count_at_update(&self, name: Sym) -> Option<u32> {
        self.images
            .binary_search_by(|(s, _)| s.cmp(&name))
            .ok()
            .map(|i| self.image_counts[i])
    }

    /// Records the image counts seen when this node was added or updated.
    pub(crate) fn set_image_count(&mut self, k: usize, count: u32) {
        self.image_counts[k] = count;
    }

    /// Interned image names on the node with their sizes, sorted by id.
    pub fn images(&self) -> &[(Sym, i64)] {
        &self.images
    }

    /// The interned zone key (region and zone), or [`Sym::NONE`].
    pub fn zone(&self) -> Sym {
        self.zone
    }

    /// Number of pods that use a GCE PD, AWS EBS, RBD or iSCSI volume.
    pub fn disk_volume_pods(&self) -> usize {
        self.disk_volume_pods
    }
}

/// Bit flags of a [`NodeSummary`] (bits 0 to 15; the snapshot's crate-private filter rows use
/// bits 16 to 31 for inter-pod affinity).
pub mod flags {
    /// `spec.unschedulable` is set.
    pub const UNSCHEDULABLE: u32 = 1;
    /// The node has a NoSchedule or NoExecute taint.
    pub const HARD_TAINTS: u32 = 1 << 1;
    /// The Ready condition is not True (or missing).
    pub const NOT_READY: u32 = 1 << 2;
    /// NetworkUnavailable is True.
    pub const NETWORK_UNAVAILABLE: u32 = 1 << 3;
    /// MemoryPressure is True.
    pub const MEMORY_PRESSURE: u32 = 1 << 4;
    /// DiskPressure is True.
    pub const DISK_PRESSURE: u32 = 1 << 5;
    /// PIDPressure is True.
    pub const PID_PRESSURE: u32 = 1 << 6;
    /// The node has the `scheduler.alpha.kubernetes.io/preferAvoidPods` annotation.
    pub const PREFER_AVOID_PODS: u32 = 1 << 7;
    /// Allocatable or requested has scalar (extended) resources.
    pub const SCALAR_RESOURCES: u32 = 1 << 8;
    /// Some pod uses a host port.
    pub const USED_PORTS: u32 = 1 << 9;
    /// Some pod uses a disk-conflict volume kind.
    pub const DISK_VOLUMES: u32 = 1 << 10;
    /// The node lists images.
    pub const IMAGES: u32 = 1 << 11;
    /// The node has taints of any effect.
    pub const ANY_TAINTS: u32 = 1 << 12;
}

/// The dense per-node numbers the built-in plugins read on every pod, kept current by the
/// [`crate::snapshot::Snapshot`] as a pure function of the [`NodeInfo`] (so it never disagrees
/// with it). One cache-friendly array of these is what makes filtering thousands of nodes cheap.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NodeSummary {
    /// Allocatable milli-CPU.
    pub alloc_milli_cpu: i64,
    /// Allocatable memory bytes.
    pub alloc_memory: i64,
    /// Allocatable ephemeral storage bytes.
    pub alloc_ephemeral: i64,
    /// Allocatable pod count.
    pub alloc_pods: i64,
    /// Requested milli-CPU.
    pub req_milli_cpu: i64,
    /// Requested memory bytes.
    pub req_memory: i64,
    /// Requested ephemeral storage bytes.
    pub req_ephemeral: i64,
    /// Non-zero requested milli-CPU (100m for containers without a CPU request).
    pub nz_milli_cpu: i64,
    /// Non-zero requested memory (200 MiB for containers without a memory request).
    pub nz_memory: i64,
    /// Pods on the node.
    pub pod_count: u32,
    /// [`flags`] bits.
    pub flags: u32,
    /// Number of PreferNoSchedule taints.
    pub prefer_no_schedule_taints: u32,
    /// Interned zone key or [`Sym::NONE`].
    pub zone: Sym,
}

impl NodeSummary {
    /// The flags that depend on the node object only, and its number of PreferNoSchedule
    /// taints.
    fn node_flags(node: &Node) -> (u32, u32) {
        let cond = |t: &str| {
            node.status
                .conditions
                .iter()
                .find(|c| c.type_ == t)
                .map(|c| c.status.as_str())
        };
        let mut f = 0u32;
        if node.spec.unschedulable {
            f |= flags::UNSCHEDULABLE;
        }
        if node
            .spec
            .taints
            .iter()
            .any(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
        {
            f |= flags::HARD_TAINTS;
        }
        if !node.spec.taints.is_empty() {
            f |= flags::ANY_TAINTS;
        }
        if cond("Ready") != Some("True") {
            f |= flags::NOT_READY;
        }
        if cond("NetworkUnavailable") == Some("True") {
            f |= flags::NETWORK_UNAVAILABLE;
        }
        if cond("MemoryPressure") == Some("True") {
            f |= flags::MEMORY_PRESSURE;
        }
        if cond("DiskPressure") == Some("True") {
            f |= flags::DISK_PRESSURE;
        }
        if cond("PIDPressure") == Some("True") {
            f |= flags::PID_PRESSURE;
        }
        if node
            .metadata
            .annotations
            .contains_key("scheduler.alpha.kubernetes.io/preferAvoidPods")
        {
            f |= flags::PREFER_AVOID_PODS;
        }
        let soft = node
            .spec
            .taints
            .iter()
            .filter(|t| t.effect == TaintEffect::PreferNoSchedule)
            .count() as u32;
        (f, soft)
    }

    /// Computes the summary of a NodeInfo.
    pub fn of(info: &NodeInfo) -> NodeSummary {
        let mut f = info.node_flags;
        if !info.allocatable.scalar.is_empty() || !info.requested.scalar.is_empty() {
            f |= flags::SCALAR_RESOURCES;
        }
        if !info.used_ports.is_empty() {
            f |= flags::USED_PORTS;
        }
        if info.disk_volume_pods > 0 {
            f |= flags::DISK_VOLUMES;
        }
        if !info.images.is_empty() {
            f |= flags::IMAGES;
        }
        NodeSummary {
            alloc_milli_cpu: info.allocatable.milli_cpu,
            alloc_memory: info.allocatable.memory,
            alloc_ephemeral: info.allocatable.ephemeral_storage,
            alloc_pods: info.allocatable.allowed_pod_number,
            req_milli_cpu: info.requested.milli_cpu,
            req_memory: info.requested.memory,
            req_ephemeral: info.requested.ephemeral_storage,
            nz_milli_cpu: info.non_zero_requested.0,
            nz_memory: info.non_zero_requested.1,
            pod_count: info.pods.len() as u32,
            flags: f,
            prefer_no_schedule_taints: info.soft_taints,
            zone: info.zone,
        }
    }

    /// Whether the flag bit(s) are set.
    #[inline]
    pub fn has(&self, flag: u32) -> bool {
        self.flags & flag != 0
    }
}
