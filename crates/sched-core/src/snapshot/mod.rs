//! Cluster state for scheduling: [`NodeInfo`] per node, in a stable order, with a name index.
//!
//! A [`Snapshot`] is built once from nodes and pods and then updated incrementally. Besides the
//! full objects it keeps, for each node, a [`NodeSummary`] of dense numbers and interned ids:
//! that is what built-in plugins read on every pod, so filtering never touches label strings.

mod affinity;
mod claims;
mod columns;
mod dra;
mod intern;
mod namespaces;
mod node_info;
mod selector;
mod storage;

use std::collections::HashMap;
use std::sync::Arc;

pub use dra::{DraIndex, FilterAnswer, FilterAnswers};
pub use intern::{Interner, LabelIds, Sym};
pub use namespaces::NamespaceLabels;
pub use node_info::{HostPort, MEMO_SLOTS, NodeInfo, NodeSummary, PodInfo, Protocol, flags};
pub use selector::CompiledSelector;
pub use storage::{StorageIndex, VolumeBinderId};

use crate::model::{Node, Pod, PodKey, Resources, TaintEffect, Workload};
pub(crate) use affinity::{AffinityIndex, CountsRef};
pub(crate) use columns::{EXACT_REQUEST, LoadColumns, NodeFree};

/// Why a snapshot update was refused. The snapshot is unchanged after an error.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SnapshotError {
    /// A node with this name is already in the snapshot.
    #[error("node {0:?} is already in the snapshot")]
    DuplicateNode(String),
    /// No node with this name.
    #[error("node {0:?} is not in the snapshot")]
    UnknownNode(String),
    /// A pod with this `namespace/name` is already in the snapshot.
    #[error("pod {0:?} is already in the snapshot")]
    DuplicatePod(PodKey),
    /// No pod with this `namespace/name`.
    #[error("pod {0:?} is not in the snapshot")]
    UnknownPod(PodKey),
    /// The pod has no `spec.nodeName`, so it cannot be placed on a node.
    #[error("pod {0:?} has no spec.nodeName")]
    Unbound(PodKey),
    /// The node has no name.
    #[error("a node has an empty metadata.name")]
    UnnamedNode,
    /// Adding the pod would push the node's summed requests past the int64 maximum (requests
    /// near it are absurd; they are refused rather than wrapped into a small sum).
    #[error("pod {pod:?} on node {node:?}: the node's summed requests would overflow int64")]
    RequestOverflow {
        /// The pod's `namespace/name`.
        pod: PodKey,
        /// The node.
        node: String,
    },
}

/// The storage object a [`Snapshot::storage_mut_for`] caller adds, replaces or removes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StorageObjectRef<'a> {
    /// A PersistentVolumeClaim.
    Claim {
        /// Its namespace.
        namespace: &'a str,
        /// Its name.
        name: &'a str,
    },
    /// A PersistentVolume, by name.
    Volume(&'a str),
    /// A CSINode, by name (its node's).
    CsiNode(&'a str),
    /// A StorageClass, CSIDriver or CSIStorageCapacity (what many nodes' memos may read).
    Other,
}

/// All nodes with their pods, in a stable order, plus a name index and the shared tables the
/// built-in plugins use (interned strings, image spread, workloads for spreading).
///
/// ```
/// use sched_core::model::{Node, Pod};
/// use sched_core::snapshot::Snapshot;
/// let mut node = Node::default();
/// node.metadata.name = "n1".into();
/// let mut snapshot = Snapshot::from_objects(vec![node], vec![])?;
/// let mut pod = Pod::default();
/// pod.metadata.name = "p".into();
/// pod.metadata.namespace = "default".into();
/// snapshot.assume(pod.clone(), "n1")?;
/// assert_eq!(snapshot.node_of("default/p"), Some("n1"));
/// assert_eq!(snapshot.forget("default/p")?, pod);
/// # Ok::<(), sched_core::snapshot::SnapshotError>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    infos: Vec<NodeInfo>,
    summaries: Vec<NodeSummary>,
    /// [`NodeFree::of`] each summary, index-aligned.
    free: Vec<NodeFree>,
    /// Each summary's load numbers, as columns.
    loads: LoadColumns,
    /// Node name to index (foldhash, as the interner: looked up on every pod placed).
    by_name: HashMap<String, usize, foldhash::fast::RandomState>,
    /// Pod key to node index.
    pod_node: HashMap<PodKey, usize, foldhash::fast::RandomState>,
    /// The pods using each claim: whose node memos a claim or volume change concerns.
    claims: claims::ClaimUsers,
    interner: Interner,
    /// Per image: the size the first node that reported it gave, and on how many nodes it is.
    images: HashMap<Sym, ImageState>,
    image_counts: ImageCounts,
    zone_nodes: HashMap<Sym, u32>,
    workloads: Vec<Workload>,
    namespaces: NamespaceLabels,
    storage: Arc<StorageIndex>,
    /// DeviceClasses, ResourceSlices, ResourceClaims and the devices in use.
    dra: Arc<DraIndex>,
    skipped_pods: usize,
    affinity_pods: usize,
    required_anti_affinity_pods: usize,
    soft_taint_nodes: usize,
    /// Per bit of [`flags`], how many nodes' summaries have it set.
    flag_nodes: [usize; 32],
    /// Per node, the index in `spec.taints` of its first NoSchedule/NoExecute taint
    /// (`u32::MAX` when none), so that a pod without tolerations is judged from dense data.
    first_hard_taint: Vec<u32>,
    /// Counts per topology domain for pod affinity terms.
    affinity: AffinityIndex,
    generation: u64,
}

/// An image as kube-scheduler's cache knows it: one size per image name, the size the first
/// node reporting the name gave (kept until no node has it), and how many nodes have it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct ImageState {
    size: i64,
    nodes: u32,
}

/// Which count of nodes having an image `ImageLocality` reads.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImageCounts {
    /// The current count (kube's steady state, once every node was updated after the last
    /// node change; kube v1.21+ always).
    #[default]
    Current,
    /// The count when each node was last added or updated, as kube v1.20's cache keeps it in
    /// the node's image summary: with nodes added one after another and never updated, the
    /// first node with an image sees 1, the second 2, and so on.
    AsOfNodeUpdate,
}

/// Whether kube-scheduler's cache would hold this pod: terminated pods are not counted.
fn is_active(pod: &Pod) -> bool {
    !matches!(pod.status.phase.as_str(), "Succeeded" | "Failed")
}

impl Snapshot {
    /// An empty snapshot.
    pub fn new() -> Snapshot {
        Snapshot::default()
    }

    /// Builds a snapshot from nodes and pods. Pods with `spec.nodeName` land on that node;
    /// pending pods (no node name), terminated pods (Succeeded/Failed) and pods bound to a node
    /// that is not in the list are left out (counted by [`Snapshot::skipped_pods`]).
    pub fn from_objects(nodes: Vec<Node>, pods: Vec<Pod>) -> Result<Snapshot, SnapshotError> {
        let mut s = Snapshot::new();
        s.infos.reserve(nodes.len());
        s.summaries.reserve(nodes.len());
        s.free.reserve(nodes.len());
        s.loads.reserve(nodes.len());
        for n in nodes {
            s.add_node(n)?;
        }
        for p in pods {
            if p.spec.node_name.is_empty()
                || !is_active(&p)
                || !s.by_name.contains_key(&p.spec.node_name)
            {
                s.skipped_pods += 1;
                continue;
            }
            s.add_pod(p)?;
        }
        Ok(s)
    }

    /// Number of nodes.
    pub fn len(&self) -> usize {
        self.infos.len()
    }

    /// Whether there are no nodes.
    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }

    /// All NodeInfos in the snapshot's stable order.
    pub fn node_infos(&self) -> &[NodeInfo] {
        &self.infos
    }

    /// The dense summaries, index-aligned with [`Snapshot::node_infos`].
    pub fn summaries(&self) -> &[NodeSummary] {
        &self.summaries
    }

    /// What each node has free, index-aligned with [`Snapshot::summaries`] (the fast path's
    /// filter rows).
    pub(crate) fn free(&self) -> &[NodeFree] {
        &self.free
    }

    /// What each node has requested and allocatable, index-aligned with
    /// [`Snapshot::summaries`] (the fast path's scoring columns).
    pub(crate) fn loads(&self) -> &LoadColumns {
        &self.loads
    }

    /// The node at `index`.
    pub fn node(&self, index: usize) -> NodeRef<'_> {
        NodeRef::new(index, &self.infos[index], &self.summaries[index])
    }

    /// The position of a node by name.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    /// A node by name.
    pub fn get(&self, name: &str) -> Option<&NodeInfo> {
        self.index_of(name).map(|i| &self.infos[i])
    }

    /// The name of the node a pod (`namespace/name`) is on.
    pub fn node_of(&self, pod_key: &str) -> Option<&str> {
        self.pod_node.get(pod_key).map(|&i| self.infos[i].name())
    }

    /// The string table of label keys and values, zone keys and image names.
    pub fn interner(&self) -> &Interner {
        &self.interner
    }

    /// The size of an image (interned name) as kube's cache knows it: the size reported by the
    /// first node (in the order nodes were added) that has the image, kept while any node has
    /// it.
    pub fn image_size(&self, image: Sym) -> Option<i64> {
        self.images.get(&image).map(|s| s.size)
    }

    /// Which image counts `ImageLocality` reads (default [`ImageCounts::Current`]).
    pub fn image_counts(&self) -> ImageCounts {
        self.image_counts
    }

    /// Chooses which image counts `ImageLocality` reads: [`ImageCounts::AsOfNodeUpdate`]
    /// reproduces a kube v1.20 scheduler whose nodes were not updated since they were added.
    pub fn set_image_counts(&mut self, counts: ImageCounts) {
        self.image_counts = counts;
        self.generation += 1;
    }

    /// On how many nodes an image (interned name) is present.
    pub fn image_node_count(&self, image: Sym) -> u32 {
        self.images.get(&image).map_or(0, |s| s.nodes)
    }

    /// How many nodes are in each zone (interned zone key).
    pub fn zone_node_counts(&self) -> &HashMap<Sym, u32> {
        &self.zone_nodes
    }

    /// Services, controllers and stateful sets, for spreading.
    pub fn workloads(&self) -> &[Workload] {
        &self.workloads
    }

    /// Replaces the namespaces' labels (from `kubectl get namespaces -o json`: see
    /// [`NamespaceLabels::extend_from`]). Pod affinity terms with a `namespaceSelector` select
    /// among these namespaces; a plugin given its own labels
    /// (`with_namespace_labels`) reads those instead.
    pub fn set_namespace_labels(&mut self, namespaces: NamespaceLabels) {
        self.namespaces = namespaces;
        self.namespaces_changed();
    }

    /// Terms that select namespaces by their labels cover other namespaces now.
    fn namespaces_changed(&mut self) {
        self.affinity
            .relabel_namespaces(&self.infos, &self.namespaces, &mut self.interner);
        self.sync_affinity_flags();
        self.generation += 1;
    }

    /// Adds a Namespace or replaces its labels (an informer's add or update).
    pub fn upsert_namespace(&mut self, namespace: &crate::model::Namespace) {
        self.namespaces.insert(
            namespace.metadata.name.clone(),
            namespace.metadata.labels.clone(),
        );
        self.namespaces_changed();
    }

    /// Forgets a deleted Namespace; `false` if it was not known.
    pub fn remove_namespace(&mut self, name: &str) -> bool {
        let known = self.namespaces.remove(name).is_some();
        self.namespaces_changed();
        known
    }

    /// The namespaces' labels (what `namespaceSelector` in pod affinity terms reads).
    pub fn namespace_labels(&self) -> &NamespaceLabels {
        &self.namespaces
    }

    /// Replaces the PersistentVolumes, claims, StorageClasses and CSINodes the volume plugins
    /// read (from mixed kubectl files: [`crate::model::Cluster::storage`]).
    pub fn set_storage(&mut self, objects: crate::model::StorageObjects) {
        self.storage = Arc::new(StorageIndex::new(objects));
        self.generation += 1;
        self.clear_memos();
    }

    /// Drops every node's memo (values derived from the storage objects).
    fn clear_memos(&mut self) {
        for info in &mut self.infos {
            info.clear_memo();
        }
    }

    /// The storage objects, indexed by name.
    pub fn storage(&self) -> &StorageIndex {
        &self.storage
    }

    /// The dynamic resource allocation objects and the devices in use.
    pub fn dra(&self) -> &DraIndex {
        &self.dra
    }

    /// The dynamic resource allocation objects, to change (copied first if a clone of this
    /// snapshot shares them).
    pub fn dra_mut(&mut self) -> &mut DraIndex {
        self.generation += 1;
        Arc::make_mut(&mut self.dra)
    }

    /// The storage objects, to add, replace or remove single objects as they change (copied
    /// first if a clone of this snapshot shares them). Every node's memo is dropped;
    /// [`Snapshot::storage_mut_for`] drops only those a named object can concern.
    pub fn storage_mut(&mut self) -> &mut StorageIndex {
        self.generation += 1;
        self.clear_memos();
        Arc::make_mut(&mut self.storage)
    }

    /// The storage objects, to add, replace or remove the object `object` names (copied
    /// first if a clone of this snapshot shares them). Only the node memos that object can
    /// concern are dropped: for a claim, the memos of the nodes of the pods using it; for a
    /// PersistentVolume, those of the nodes of the pods using a claim whose `spec.volumeName`
    /// names it; for a CSINode, its node's; for any other object, every node's (as
    /// [`Snapshot::storage_mut`]).
    ///
    /// A memo derives from its node, the node's pods and what their volumes reach (their
    /// claims, the volumes those name, StorageClasses, CSI drivers) and the node's CSINode:
    /// a claim's own change, or a change of the volume it names, reaches exactly these nodes.
    /// A claim changing the volume it names is itself a claim change. Change only the named
    /// object through the reference.
    pub fn storage_mut_for(&mut self, object: StorageObjectRef<'_>) -> &mut StorageIndex {
        self.generation += 1;
        match object {
            StorageObjectRef::Claim { namespace, name } => {
                self.clear_memos_of_claim(namespace, name);
            }
            StorageObjectRef::Volume(name) => {
                let storage = Arc::clone(&self.storage);
                for (namespace, claim) in storage.claims_naming_volume(name) {
                    self.clear_memos_of_claim(namespace, claim);
                }
            }
            StorageObjectRef::CsiNode(name) => {
                if let Some(i) = self.index_of(name) {
                    self.infos[i].clear_memo();
                }
            }
            StorageObjectRef::Other => self.clear_memos(),
        }
        Arc::make_mut(&mut self.storage)
    }

    /// Drops the memos of the nodes of the pods using the claim `namespace/name`.
    fn clear_memos_of_claim(&mut self, namespace: &str, name: &str) {
        for key in self.claims.users(namespace, name) {
            if let Some(&i) = self.pod_node.get(key) {
                self.infos[i].clear_memo();
            }
        }
    }

    /// Checks the claim index against a recount from the pods (for tests).
    #[doc(hidden)]
    pub fn check_claim_index(&self) -> Result<(), String> {
        let pods = self.infos.iter().flat_map(|i| i.pods()).map(|p| p.pod());
        let recount = claims::ClaimUsers::recount(pods);
        let kept = self.claims.normalized();
        if kept == recount {
            Ok(())
        } else {
            Err(format!("claim index {kept:?}, recount {recount:?}"))
        }
    }

    /// kube's PV assume cache's `Assume`: the VolumeBinding plugin of volume binder `binder`
    /// sees `pv` in place of the informer's PersistentVolume of its name (VolumeBinding's
    /// Reserve binding it to a claim), until [`Snapshot::restore_volume`] or the informer's
    /// next version of it; nothing else sees it. `false` (nothing assumed) when the storage
    /// objects have no PersistentVolume of its name.
    pub fn assume_volume(
        &mut self,
        binder: VolumeBinderId,
        pv: crate::model::PersistentVolume,
    ) -> bool {
        // What other plugins derive from the storage objects (the nodes' memos) reads the
        // informer's objects only: it stays.
        self.generation += 1;
        Arc::make_mut(&mut self.storage).assume_pv(binder, pv)
    }

    /// kube's PVC assume cache's `Assume` ([`Snapshot::assume_volume`] for a claim:
    /// VolumeBinding's Reserve choosing a node to provision it on). `false` (nothing assumed)
    /// when the storage objects have no claim of its namespace and name.
    pub fn assume_claim(
        &mut self,
        binder: VolumeBinderId,
        pvc: crate::model::PersistentVolumeClaim,
    ) -> bool {
        self.generation += 1;
        Arc::make_mut(&mut self.storage).assume_pvc(binder, pvc)
    }

    /// kube's PV assume cache's `Restore`: `binder` sees the informer's PersistentVolume of
    /// this name again. `false` if it had assumed none.
    pub fn restore_volume(&mut self, binder: VolumeBinderId, name: &str) -> bool {
        self.generation += 1;
        Arc::make_mut(&mut self.storage).restore_pv(binder, name)
    }

    /// kube's PVC assume cache's `Restore`: `binder` sees the informer's claim again. `false`
    /// if it had assumed none.
    pub fn restore_claim(&mut self, binder: VolumeBinderId, namespace: &str, name: &str) -> bool {
        self.generation += 1;
        Arc::make_mut(&mut self.storage).restore_pvc(binder, namespace, name)
    }

    /// Replaces the workloads used for spreading.
    pub fn set_workloads(&mut self, workloads: Vec<Workload>) {
        self.workloads = workloads;
        self.generation += 1;
    }

    /// Adds a workload, or replaces the one of its kind, namespace and name.
    ///
    /// ```
    /// use sched_core::model::{LabelSelector, Workload, WorkloadKind};
    /// use sched_core::snapshot::Snapshot;
    ///
    /// let mut s = Snapshot::new();
    /// let web = Workload {
    ///     kind: WorkloadKind::Service,
    ///     namespace: "shop".into(),
    ///     name: "web".into(),
    ///     selector: LabelSelector::default(),
    /// };
    /// s.upsert_workload(web.clone());
    /// s.upsert_workload(web.clone());
    /// assert_eq!(s.workloads(), [web]);
    /// assert!(s.remove_workload("Service/shop/web"));
    /// assert!(s.workloads().is_empty());
    /// ```
    pub fn upsert_workload(&mut self, workload: Workload) {
        let same = |w: &Workload| {
            w.kind == workload.kind && w.namespace == workload.namespace && w.name == workload.name
        };
        match self.workloads.iter().position(same) {
            Some(i) => self.workloads[i] = workload,
            None => self.workloads.push(workload),
        }
        self.generation += 1;
    }

    /// Removes the workload of this key ([`Workload::key`]); whether there was one.
    pub fn remove_workload(&mut self, key: &str) -> bool {
        let before = self.workloads.len();
        self.workloads.retain(|w| w.key() != key);
        self.generation += 1;
        self.workloads.len() != before
    }

    /// The counts per topology domain that InterPodAffinity reads.
    pub(crate) fn affinity_index(&self) -> &AffinityIndex {
        &self.affinity
    }

    /// Number of pods in the whole snapshot with pod affinity or anti-affinity terms.
    pub fn pods_with_affinity(&self) -> usize {
        self.affinity_pods
    }

    /// Number of pods in the whole snapshot with required anti-affinity terms.
    pub fn pods_with_required_anti_affinity(&self) -> usize {
        self.required_anti_affinity_pods
    }

    /// Number of nodes whose summary has the [`flags`] bit `flag` set (one bit), so a plugin
    /// can tell in O(1) that no node is, say, cordoned.
    pub fn nodes_with_flag(&self, flag: u32) -> usize {
        if flag.count_ones() != 1 {
            return self
                .summaries
                .iter()
                .filter(|s| s.flags & flag != 0)
                .count();
        }
        self.flag_nodes[flag.trailing_zeros() as usize]
    }

    fn count_flags(&mut self, flags: u32, add: bool) {
        let mut bits = flags;
        while bits != 0 {
            let b = bits.trailing_zeros() as usize;
            if add {
                self.flag_nodes[b] += 1;
            } else {
                self.flag_nodes[b] -= 1;
            }
            bits &= bits - 1;
        }
    }

    /// Number of nodes with at least one PreferNoSchedule taint.
    pub fn nodes_with_prefer_no_schedule_taints(&self) -> usize {
        self.soft_taint_nodes
    }

    /// Pods that [`Snapshot::from_objects`] left out (pending, terminated, or on unknown nodes).
    pub fn skipped_pods(&self) -> usize {
        self.skipped_pods
    }

    /// Number of pods placed on nodes.
    pub fn pod_count(&self) -> usize {
        self.pod_node.len()
    }

    /// Increases on every change; equal generations mean equal contents.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Per node (index-aligned with [`Snapshot::summaries`]), the index in `spec.taints` of
    /// the first NoSchedule or NoExecute taint, `u32::MAX` when there is none.
    pub(crate) fn first_hard_taints(&self) -> &[u32] {
        &self.first_hard_taint
    }

    fn refresh(&mut self, i: usize) {
        let summary = NodeSummary::of(&self.infos[i]);
        self.first_hard_taint[i] = self.infos[i]
            .node()
            .spec
            .taints
            .iter()
            .position(|t| matches!(t.effect, TaintEffect::NoSchedule | TaintEffect::NoExecute))
            .map_or(u32::MAX, |p| u32::try_from(p).unwrap_or(u32::MAX));
        self.soft_taint_nodes -= usize::from(self.summaries[i].prefer_no_schedule_taints > 0);
        self.soft_taint_nodes += usize::from(summary.prefer_no_schedule_taints > 0);
        if self.summaries[i].flags != summary.flags {
            self.count_flags(self.summaries[i].flags, false);
            self.count_flags(summary.flags, true);
        }
        self.free[i] = NodeFree::of(&summary);
        self.free[i].flags |= self.affinity.node_flags(i);
        self.loads.set(i, &summary);
        self.summaries[i] = summary;
        self.generation += 1;
    }

    /// Checks the affinity index against a recount from the nodes and pods.
    #[cfg(test)]
    pub(crate) fn check_affinity_index(&self) -> Result<(), String> {
        affinity::tests::check(
            &self.affinity,
            &self.infos,
            &self.namespaces,
            &self.interner,
            |n| self.free[n].flags,
        )
    }

    /// The affinity index's contents, by content (for comparing states).
    #[cfg(test)]
    pub(crate) fn affinity_index_contents(&self) -> String {
        affinity::tests::canonical(&self.affinity, &self.interner)
    }

    /// [`Snapshot::affinity_index_contents`] without which counts hold node flags.
    #[cfg(test)]
    pub(crate) fn affinity_index_counts(&self) -> String {
        affinity::tests::canonical_with(&self.affinity, &self.interner, false)
    }

    /// Copies the affinity index's node flags that changed into the filter rows.
    fn sync_affinity_flags(&mut self) {
        let dirty = self.affinity.take_dirty();
        for &n in &dirty {
            let n = n as usize;
            if n < self.free.len() {
                self.free[n].flags = self.summaries[n].flags | self.affinity.node_flags(n);
            }
        }
        self.affinity.give_back(dirty);
    }

    fn count_node_tables(&mut self, i: usize, delta: i64) {
        for k in 0..self.infos[i].images().len() {
            let (img, size) = self.infos[i].images()[k];
            let state = self
                .images
                .entry(img)
                .or_insert(ImageState { size, nodes: 0 });
            state.nodes = (i64::from(state.nodes) + delta) as u32;
            let nodes = state.nodes;
            if nodes == 0 {
                self.images.remove(&img);
            }
            if delta > 0 {
                self.infos[i].set_image_count(k, nodes);
            }
        }
        let info = &self.infos[i];
        let zone = info.zone();
        if zone != Sym::NONE {
            let c = self.zone_nodes.entry(zone).or_insert(0);
            *c = (*c as i64 + delta) as u32;
            if *c == 0 {
                self.zone_nodes.remove(&zone);
            }
        }
    }

    /// Adds a node (with no pods) at the end of the order.
    pub fn add_node(&mut self, node: Node) -> Result<(), SnapshotError> {
        if node.metadata.name.is_empty() {
            return Err(SnapshotError::UnnamedNode);
        }
        if self.by_name.contains_key(&node.metadata.name) {
            return Err(SnapshotError::DuplicateNode(node.metadata.name));
        }
        let i = self.infos.len();
        self.by_name.insert(node.metadata.name.clone(), i);
        self.infos
            .push(NodeInfo::new(Arc::new(node), &mut self.interner));
        self.summaries.push(NodeSummary::default());
        self.free.push(NodeFree::default());
        self.loads.push(&NodeSummary::default());
        self.first_hard_taint.push(u32::MAX);
        self.affinity.add_node(&self.infos[i]);
        self.count_node_tables(i, 1);
        self.refresh(i);
        Ok(())
    }

    /// Replaces a node object (same name), keeping its pods and its place in the order.
    pub fn update_node(&mut self, node: Node) -> Result<(), SnapshotError> {
        let i = self
            .index_of(&node.metadata.name)
            .ok_or_else(|| SnapshotError::UnknownNode(node.metadata.name.clone()))?;
        self.count_node_tables(i, -1);
        let old_labels = self.infos[i].labels().clone();
        self.infos[i].set_node(Arc::new(node), &mut self.interner);
        if *self.infos[i].labels() != old_labels {
            self.affinity.relabel_node(i, &self.infos[i]);
            self.sync_affinity_flags();
        }
        self.count_node_tables(i, 1);
        self.refresh(i);
        Ok(())
    }

    /// Removes a node and returns its pods (which leave the snapshot with it).
    pub fn remove_node(&mut self, name: &str) -> Result<Vec<Pod>, SnapshotError> {
        let i = self
            .index_of(name)
            .ok_or_else(|| SnapshotError::UnknownNode(name.to_string()))?;
        self.count_node_tables(i, -1);
        for p in self.infos[i].pods() {
            self.affinity.remove_pod(p, i, &self.interner);
        }
        self.sync_affinity_flags();
        self.affinity.remove_node(i);
        let info = self.infos.remove(i);
        let summary = self.summaries.remove(i);
        self.free.remove(i);
        self.loads.remove(i);
        self.first_hard_taint.remove(i);
        self.soft_taint_nodes -= usize::from(summary.prefer_no_schedule_taints > 0);
        self.count_flags(summary.flags, false);
        self.by_name.remove(name);
        for v in self.by_name.values_mut() {
            if *v > i {
                *v -= 1;
            }
        }
        let mut pods = Vec::with_capacity(info.pods().len());
        for p in info.pods() {
            self.pod_node.remove(p.key());
            self.claims.remove(p.pod(), p.key());
            self.affinity_pods -= usize::from(p.has_affinity());
            self.required_anti_affinity_pods -= usize::from(p.has_required_anti_affinity());
            pods.push(p.pod().clone());
        }
        for v in self.pod_node.values_mut() {
            if *v > i {
                *v -= 1;
            }
        }
        self.generation += 1;
        Ok(pods)
    }

    /// Adds a bound pod (its `spec.nodeName` names the node).
    pub fn add_pod(&mut self, pod: Pod) -> Result<(), SnapshotError> {
        if pod.spec.node_name.is_empty() {
            return Err(SnapshotError::Unbound(pod.key()));
        }
        let i = self
            .index_of(&pod.spec.node_name)
            .ok_or_else(|| SnapshotError::UnknownNode(pod.spec.node_name.clone()))?;
        self.add_pod_at(pod, i)
    }

    /// Adds a pod bound to the node at index `i` (its `spec.nodeName`).
    fn add_pod_at(&mut self, pod: Pod, i: usize) -> Result<(), SnapshotError> {
        let info = PodInfo::new(Arc::new(pod), &mut self.interner);
        self.add_info_at(info, i)
    }

    /// Adds a pod's info to the node at index `i`.
    fn add_info_at(&mut self, info: PodInfo, i: usize) -> Result<(), SnapshotError> {
        self.check_add(&info, i)?;
        self.commit_add(info, i);
        Ok(())
    }

    /// Adds a pod's info that [`Snapshot::check_add`] accepted.
    fn commit_add(&mut self, info: PodInfo, i: usize) {
        self.pod_node.insert(info.key().clone(), i);
        self.claims.add(info.pod(), info.key());
        self.affinity_pods += usize::from(info.has_affinity());
        self.required_anti_affinity_pods += usize::from(info.has_required_anti_affinity());
        self.affinity
            .add_pod(&info, i, &self.infos, &self.namespaces, &mut self.interner);
        self.sync_affinity_flags();
        self.infos[i].add_pod(info);
        self.refresh(i);
    }

    /// Why a pod's info cannot join the node at index `i`, if it cannot.
    fn check_add(&self, info: &PodInfo, i: usize) -> Result<(), SnapshotError> {
        let node = &self.infos[i];
        let (cpu, memory) = node.non_zero_requested();
        let (pod_cpu, pod_memory) = info.non_zero_requests();
        if node.requested().would_overflow(info.requests())
            || cpu.checked_add(pod_cpu).is_none()
            || memory.checked_add(pod_memory).is_none()
        {
            return Err(SnapshotError::RequestOverflow {
                pod: info.key().clone(),
                node: node.name().to_string(),
            });
        }
        if self.pod_node.contains_key(info.key()) {
            return Err(SnapshotError::DuplicatePod(info.key().clone()));
        }
        Ok(())
    }

    /// Removes a pod by `namespace/name` and returns it.
    pub fn remove_pod(&mut self, key: &str) -> Result<Pod, SnapshotError> {
        let info = self.take_pod_info(key)?;
        Ok(Arc::unwrap_or_clone(info.into_pod_arc()))
    }

    /// Removes a pod and hands back its [`PodInfo`] as it was (no copy of the pod, no
    /// interning), for [`Snapshot::put_pod_info_at`]: the dry runs of preemption take pods off
    /// a node and put them back many times.
    pub(crate) fn take_pod_info(&mut self, key: &str) -> Result<PodInfo, SnapshotError> {
        let i = *self
            .pod_node
            .get(key)
            .ok_or_else(|| SnapshotError::UnknownPod(key.into()))?;
        let info = self.infos[i]
            .remove_pod(key)
            .ok_or_else(|| SnapshotError::UnknownPod(key.into()))?;
        self.pod_node.remove(key);
        self.claims.remove(info.pod(), key);
        self.affinity.remove_pod(&info, i, &self.interner);
        self.sync_affinity_flags();
        self.affinity_pods -= usize::from(info.has_affinity());
        self.required_anti_affinity_pods -= usize::from(info.has_required_anti_affinity());
        self.refresh(i);
        Ok(info)
    }

    /// Takes every pod on the node at `i` that `take` selects, in the node's order, as
    /// [`Snapshot::take_pod_info`] takes one (the node's sums and the affinity counts follow;
    /// the node's summary is refreshed once).
    pub(crate) fn take_pod_infos_where(
        &mut self,
        i: usize,
        mut take: impl FnMut(&PodInfo) -> bool,
    ) -> Vec<PodInfo> {
        let mut taken = Vec::new();
        let mut k = 0;
        while k < self.infos[i].pods().len() {
            if !take(&self.infos[i].pods()[k]) {
                k += 1;
                continue;
            }
            let info = self.infos[i].remove_pod_at(k);
            self.pod_node.remove(info.key());
            self.claims.remove(info.pod(), info.key());
            self.affinity.remove_pod(&info, i, &self.interner);
            self.affinity_pods -= usize::from(info.has_affinity());
            self.required_anti_affinity_pods -= usize::from(info.has_required_anti_affinity());
            taken.push(info);
        }
        if !taken.is_empty() {
            self.sync_affinity_flags();
            self.refresh(i);
        }
        taken
    }

    /// Puts back a pod [`Snapshot::take_pod_info`] took, on its node (`spec.nodeName`); hands
    /// the info back if it cannot go there.
    #[cfg(test)]
    pub(crate) fn put_pod_info(&mut self, info: PodInfo) -> Result<(), Box<PodInfo>> {
        let Some(i) = self.index_of(&info.pod().spec.node_name) else {
            return Err(Box::new(info));
        };
        self.put_pod_info_at(info, i)
    }

    /// Puts back a pod [`Snapshot::take_pod_info`] took onto the node at index `i`, which must
    /// be its node (`spec.nodeName`); hands the info back if it cannot go there.
    pub(crate) fn put_pod_info_at(&mut self, info: PodInfo, i: usize) -> Result<(), Box<PodInfo>> {
        if i >= self.infos.len() || self.infos[i].name() != info.pod().spec.node_name {
            return Err(Box::new(info));
        }
        if self.check_add(&info, i).is_err() {
            return Err(Box::new(info));
        }
        self.commit_add(info, i);
        Ok(())
    }

    /// Replaces a pod (same key), possibly moving it to another node.
    pub fn update_pod(&mut self, pod: Pod) -> Result<(), SnapshotError> {
        let key = pod.key();
        let old = self.remove_pod(&key)?;
        if let Err(e) = self.add_pod(pod) {
            // Restore: the old pod was valid where it was.
            self.add_pod(old).ok();
            return Err(e);
        }
        Ok(())
    }

    /// Places a pending pod on a node as if bound (kube's "assume"), so the next scheduling
    /// cycle sees its requests. [`Snapshot::forget`] is the exact inverse.
    pub fn assume(&mut self, mut pod: Pod, node: &str) -> Result<(), SnapshotError> {
        let i = self
            .index_of(node)
            .ok_or_else(|| SnapshotError::UnknownNode(node.to_string()))?;
        pod.spec.node_name = node.to_string();
        self.add_pod_at(pod, i)
    }

    /// [`Snapshot::assume`] onto the node at `index` (which the caller got from this
    /// snapshot).
    /// The pod's effective and non-zero requests come precomputed (the scheduling cycle has
    /// them). Returns the assumed pod (its node name set), shared with the snapshot; a
    /// refused pod comes back as it was given.
    pub(crate) fn assume_at(
        &mut self,
        mut pod: Pod,
        index: usize,
        requests: Resources,
        non_zero: (i64, i64),
    ) -> Result<Arc<Pod>, Refused> {
        let Some(info) = self.infos.get(index) else {
            let error =
                SnapshotError::UnknownNode(format!("index {index} of {}", self.infos.len()));
            return Err(Refused {
                error,
                pod: Box::new(pod),
            });
        };
        pod.spec.node_name = info.name().to_string();
        let pod = Arc::new(pod);
        let info = PodInfo::with_requests(pod.clone(), requests, non_zero, &mut self.interner);
        if let Err(error) = self.check_add(&info, index) {
            drop(info);
            let mut pod = Arc::unwrap_or_clone(pod);
            pod.spec.node_name.clear();
            return Err(Refused {
                error,
                pod: Box::new(pod),
            });
        }
        self.commit_add(info, index);
        Ok(pod)
    }

    /// Takes an assumed pod off its node and returns it as it was before [`Snapshot::assume`]
    /// (with no node name).
    pub fn forget(&mut self, pod_key: &str) -> Result<Pod, SnapshotError> {
        let mut pod = self.remove_pod(pod_key)?;
        pod.spec.node_name.clear();
        Ok(pod)
    }
}

/// A pod [`Snapshot::assume_at`] refused, given back with the reason.
#[derive(Debug)]
pub(crate) struct Refused {
    /// Why the pod cannot be assumed there.
    pub(crate) error: SnapshotError,
    /// The pod, as it was given.
    pub(crate) pod: Box<Pod>,
}

/// A node as plugins see it: its position in the snapshot, the full [`NodeInfo`] and the
/// dense [`NodeSummary`].
#[derive(Clone, Copy, Debug)]
pub struct NodeRef<'a> {
    index: usize,
    info: &'a NodeInfo,
    summary: &'a NodeSummary,
}

impl<'a> NodeRef<'a> {
    pub(crate) fn new(index: usize, info: &'a NodeInfo, summary: &'a NodeSummary) -> Self {
        NodeRef {
            index,
            info,
            summary,
        }
    }

    /// Position in [`Snapshot::node_infos`].
    #[inline]
    pub fn index(&self) -> usize {
        self.index
    }

    /// The full NodeInfo.
    #[inline]
    pub fn info(&self) -> &'a NodeInfo {
        self.info
    }

    /// The dense numbers.
    #[inline]
    pub fn summary(&self) -> &'a NodeSummary {
        self.summary
    }

    /// The node object.
    #[inline]
    pub fn node(&self) -> &'a Node {
        self.info.node()
    }
}
