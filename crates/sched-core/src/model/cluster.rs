//! The objects of one or more loaded files, and the cluster they describe.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::Arc;

use super::load_error::{LoadError, LoadErrorKind, Position};
use super::{
    DraObjects, Namespace, Node, Pod, PodDisruptionBudget, PodGroup, Role, StorageObjects, Workload,
};

/// Where a loaded object came from: its file and index.
#[derive(Clone, Debug, Default)]
struct Origin {
    file: Option<Arc<str>>,
    index: Option<usize>,
}

/// The objects loaded from one or more files ([`load_file`](super::load_file),
/// [`load_bytes`](super::load_bytes)), by kind, in file order. Nothing is dropped: kinds this
/// crate does not read are counted in [`other_kinds`](Self::other_kinds).
/// [`ClusterObjects::into_cluster`] checks them and splits the pods.
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct ClusterObjects {
    /// The nodes.
    pub nodes: Vec<Node>,
    /// The pods, bound and pending.
    pub pods: Vec<Pod>,
    /// Services, ReplicationControllers, ReplicaSets and StatefulSets, as spreading reads them.
    pub workloads: Vec<Workload>,
    /// Namespaces, whose labels pod affinity's `namespaceSelector` reads.
    pub namespaces: Vec<Namespace>,
    /// PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers and
    /// CSIStorageCapacities, for the volume plugins.
    pub storage: StorageObjects,
    /// PodDisruptionBudgets, for preemption.
    pub pdbs: Vec<PodDisruptionBudget>,
    /// DeviceClasses, ResourceSlices, ResourceClaims and ResourceClaimTemplates, for dynamic
    /// resource allocation.
    pub dra: DraObjects,
    /// scheduler-plugins' PodGroups, for gang scheduling (Coscheduling).
    pub pod_groups: Vec<PodGroup>,
    /// How many objects of each other kind (ConfigMap, Deployment, ...) were read and left out.
    pub other_kinds: BTreeMap<String, usize>,
    node_origins: Vec<Origin>,
    pod_origins: Vec<Origin>,
    file: Option<Arc<str>>,
}

impl ClusterObjects {
    pub(crate) fn reserve(&mut self, role: Role, n: usize) {
        match role {
            Role::Nodes => {
                self.nodes.reserve(n);
                self.node_origins.reserve(n);
            }
            Role::Pods => {
                self.pods.reserve(n);
                self.pod_origins.reserve(n);
            }
            Role::Mixed => {}
        }
    }

    fn origin(&mut self, file: &str, index: Option<usize>) -> Origin {
        let file = match &self.file {
            Some(f) if &**f == file => f.clone(),
            _ => {
                let f: Arc<str> = Arc::from(file);
                self.file = Some(f.clone());
                f
            }
        };
        Origin {
            file: (!file.is_empty()).then_some(file),
            index,
        }
    }

    pub(crate) fn push_node(&mut self, node: Node, file: &str, index: Option<usize>) {
        let origin = self.origin(file, index);
        self.node_origins
            .resize_with(self.nodes.len(), Origin::default);
        self.nodes.push(node);
        self.node_origins.push(origin);
    }

    pub(crate) fn push_pod(&mut self, pod: Pod, file: &str, index: Option<usize>) {
        let origin = self.origin(file, index);
        self.pod_origins
            .resize_with(self.pods.len(), Origin::default);
        self.pods.push(pod);
        self.pod_origins.push(origin);
    }

    /// Adds the objects of another file after these (for a nodes file and a pods file, or
    /// several mixed files).
    pub fn extend(&mut self, other: ClusterObjects) {
        self.node_origins
            .resize_with(self.nodes.len(), Origin::default);
        self.pod_origins
            .resize_with(self.pods.len(), Origin::default);
        let mut node_origins = other.node_origins;
        node_origins.resize_with(other.nodes.len(), Origin::default);
        let mut pod_origins = other.pod_origins;
        pod_origins.resize_with(other.pods.len(), Origin::default);
        self.nodes.extend(other.nodes);
        self.node_origins.extend(node_origins);
        self.pods.extend(other.pods);
        self.pod_origins.extend(pod_origins);
        self.workloads.extend(other.workloads);
        self.namespaces.extend(other.namespaces);
        self.storage.extend(other.storage);
        self.pdbs.extend(other.pdbs);
        self.dra.extend(other.dra);
        self.pod_groups.extend(other.pod_groups);
        for (kind, n) in other.other_kinds {
            *self.other_kinds.entry(kind).or_default() += n;
        }
    }

    /// The cluster these objects describe, as kube-scheduler would see it: the nodes, the pods
    /// bound to them, the pending pods to schedule (in file order) and the workloads, with a
    /// [`LoadReport`] of every object left out and why.
    ///
    /// Left out, and reported: pods bound to a node that is not in the cluster, a pod listed
    /// again (the first is kept), finished pods (`Succeeded`, `Failed`; kube's cache skips
    /// them), pending pods being deleted (kube does not schedule them), objects of other kinds.
    ///
    /// ```
    /// use sched_core::model::{Role, load_bytes};
    /// let mut objects = load_bytes("nodes.json", br#"[{"metadata":{"name":"n1"}}]"#, Role::Nodes)?;
    /// objects.extend(load_bytes("pods.json", br#"[
    ///     {"metadata":{"name":"a","namespace":"ns"},"spec":{"nodeName":"n1"}},
    ///     {"metadata":{"name":"b","namespace":"ns"},"spec":{"nodeName":"gone"}},
    ///     {"metadata":{"name":"c","namespace":"ns"}}]"#, Role::Pods)?);
    /// let cluster = objects.into_cluster()?;
    /// assert_eq!((cluster.bound.len(), cluster.pending.len()), (1, 1));
    /// assert_eq!(
    ///     cluster.report.to_string(),
    ///     "warning: 1 pod bound to a node that is not in the cluster, left out: ns/b (node \"gone\")\n"
    /// );
    /// # Ok::<(), sched_core::model::LoadError>(())
    /// ```
    ///
    /// # Errors
    /// [`LoadErrorKind::DuplicateNode`] for a node name given twice (naming both places), and
    /// [`LoadErrorKind::EmptyName`] for an unnamed node or pod added by hand.
    pub fn into_cluster(self) -> Result<Cluster, LoadError> {
        let ClusterObjects {
            nodes,
            pods,
            workloads,
            namespaces,
            storage,
            pdbs,
            dra,
            pod_groups,
            other_kinds,
            node_origins,
            pod_origins,
            ..
        } = self;
        let origin_of = |origins: &[Origin], i: usize| -> (String, Position) {
            match origins.get(i) {
                Some(o) => (
                    o.file.as_deref().unwrap_or("").to_string(),
                    Position(o.index),
                ),
                None => (String::new(), Position(Some(i))),
            }
        };
        let mut names: HashMap<&str, usize> = HashMap::with_capacity(nodes.len());
        for (i, node) in nodes.iter().enumerate() {
            let (file, at) = origin_of(&node_origins, i);
            if node.metadata.name.is_empty() {
                return Err(LoadError::new(
                    &file,
                    LoadErrorKind::EmptyName { kind: "Node", at },
                ));
            }
            if let Some(&first) = names.get(node.metadata.name.as_str()) {
                let (first_file, first_at) = origin_of(&node_origins, first);
                return Err(LoadError::new(
                    &file,
                    LoadErrorKind::DuplicateNode {
                        name: super::load_error::short(&node.metadata.name),
                        at,
                        first_file: (first_file != file).then_some(first_file),
                        first_at,
                    },
                ));
            }
            names.insert(&node.metadata.name, i);
        }
        let mut report = LoadReport::default();
        let mut seen: HashSet<(String, String)> = HashSet::with_capacity(pods.len());
        let (mut bound, mut pending) = (Vec::new(), Vec::new());
        for (i, pod) in pods.into_iter().enumerate() {
            if pod.metadata.name.is_empty() {
                let (file, at) = origin_of(&pod_origins, i);
                return Err(LoadError::new(
                    &file,
                    LoadErrorKind::EmptyName { kind: "Pod", at },
                ));
            }
            let key = pod.key().to_string();
            if !seen.insert((pod.metadata.namespace.clone(), pod.metadata.name.clone())) {
                report.add(LeftOut::DuplicatePod, key);
                continue;
            }
            if matches!(pod.status.phase.as_str(), "Succeeded" | "Failed") {
                report.add(LeftOut::FinishedPod, key);
                continue;
            }
            if pod.spec.node_name.is_empty() {
                if pod.is_terminating() {
                    report.add(LeftOut::PendingPodBeingDeleted, key);
                } else {
                    pending.push(pod);
                }
            } else if names.contains_key(pod.spec.node_name.as_str()) {
                bound.push(pod);
            } else {
                let example = format!("{key} (node {:?})", pod.spec.node_name);
                report.add(LeftOut::UnknownNode, example);
            }
        }
        for (kind, n) in other_kinds {
            let entry = report.entry(LeftOut::OtherKind);
            entry.count += n;
            if entry.examples.len() < LoadReport::EXAMPLES {
                entry.examples.push(format!("{n} {kind}"));
            }
        }
        report.entries.sort_by_key(|e| e.reason);
        Ok(Cluster {
            nodes,
            bound,
            pending,
            workloads,
            namespaces,
            storage,
            pdbs,
            dra,
            pod_groups,
            report,
        })
    }
}

/// A loaded cluster ([`ClusterObjects::into_cluster`]): ready for
/// [`Snapshot::from_objects`](crate::snapshot::Snapshot::from_objects) (`nodes`, `bound`) and
/// for scheduling (`pending`).
#[derive(Clone, Debug, Default)]
#[non_exhaustive]
pub struct Cluster {
    /// The nodes, names unique.
    pub nodes: Vec<Node>,
    /// Pods bound to one of the nodes, not finished.
    pub bound: Vec<Pod>,
    /// Pods without a node, not finished and not being deleted, in file order.
    pub pending: Vec<Pod>,
    /// Services, ReplicationControllers, ReplicaSets and StatefulSets.
    pub workloads: Vec<Workload>,
    /// Namespaces (for [`NamespaceLabels`](crate::snapshot::NamespaceLabels)).
    pub namespaces: Vec<Namespace>,
    /// Storage objects (for [`Snapshot::set_storage`](crate::snapshot::Snapshot::set_storage)).
    pub storage: StorageObjects,
    /// PodDisruptionBudgets (for the scheduling engine's preemption,
    /// [`ClusterEvent::add`](crate::scheduler::ClusterEvent::add)).
    pub pdbs: Vec<PodDisruptionBudget>,
    /// Dynamic resource allocation objects.
    pub dra: DraObjects,
    /// scheduler-plugins' PodGroups (for the engine's Coscheduling,
    /// [`Object::PodGroup`](crate::scheduler::Object::PodGroup) events).
    pub pod_groups: Vec<PodGroup>,
    /// What was left out, and why.
    pub report: LoadReport,
}

/// Why objects were left out of a [`Cluster`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum LeftOut {
    /// A pod bound to a node that is not in the cluster (a warning: the files disagree).
    UnknownNode,
    /// A pod whose `namespace/name` was already listed; the first is kept (a warning).
    DuplicatePod,
    /// Objects of kinds this crate does not read (a warning: perhaps the wrong file).
    OtherKind,
    /// A pending pod being deleted (`metadata.deletionTimestamp`); kube does not schedule it.
    PendingPodBeingDeleted,
    /// A finished pod (`Succeeded` or `Failed`), which holds no resources.
    FinishedPod,
}

impl LeftOut {
    /// Whether this is worth a warning (`true`) or only a note.
    pub fn is_warning(self) -> bool {
        matches!(
            self,
            LeftOut::UnknownNode | LeftOut::DuplicatePod | LeftOut::OtherKind
        )
    }

    fn describe(self, count: usize) -> String {
        let s = if count == 1 { "" } else { "s" };
        match self {
            LeftOut::UnknownNode => {
                format!("{count} pod{s} bound to a node that is not in the cluster, left out")
            }
            LeftOut::DuplicatePod => {
                format!("{count} pod{s} listed again, the first kept")
            }
            LeftOut::OtherKind => {
                format!("{count} object{s} of kinds not read here, left out")
            }
            LeftOut::PendingPodBeingDeleted => {
                format!("{count} pending pod{s} being deleted, not scheduled (as kube)")
            }
            LeftOut::FinishedPod => format!("{count} finished pod{s} (Succeeded/Failed), left out"),
        }
    }
}

/// One reason with its count and the first few objects.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct ReportEntry {
    /// Why.
    pub reason: LeftOut,
    /// How many objects.
    pub count: usize,
    /// The first [`LoadReport::EXAMPLES`] (`namespace/name`, or `count kind` for other kinds).
    pub examples: Vec<String>,
}

/// What [`ClusterObjects::into_cluster`] left out: a count and the first names per reason.
/// Its `Display` is one line per reason (`warning: ...` or `note: ...`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct LoadReport {
    /// One entry per reason that occurred, warnings first.
    pub entries: Vec<ReportEntry>,
}

impl LoadReport {
    /// How many names each entry keeps.
    pub const EXAMPLES: usize = 3;

    /// Whether nothing was left out.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// The entry for a reason, if it occurred.
    pub fn get(&self, reason: LeftOut) -> Option<&ReportEntry> {
        self.entries.iter().find(|e| e.reason == reason)
    }

    /// Whether any entry is a warning.
    pub fn has_warnings(&self) -> bool {
        self.entries.iter().any(|e| e.reason.is_warning())
    }

    fn entry(&mut self, reason: LeftOut) -> &mut ReportEntry {
        let i = match self.entries.iter().position(|e| e.reason == reason) {
            Some(i) => i,
            None => {
                self.entries.push(ReportEntry {
                    reason,
                    count: 0,
                    examples: Vec::new(),
                });
                self.entries.len() - 1
            }
        };
        &mut self.entries[i]
    }

    fn add(&mut self, reason: LeftOut, example: String) {
        let e = self.entry(reason);
        e.count += 1;
        if e.examples.len() < Self::EXAMPLES {
            e.examples.push(super::load_error::short(&example));
        }
    }
}

impl fmt::Display for LoadReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for e in &self.entries {
            let level = if e.reason.is_warning() {
                "warning"
            } else {
                "note"
            };
            write!(
                f,
                "{level}: {}: {}",
                e.reason.describe(e.count),
                e.examples.join(", ")
            )?;
            if e.count > e.examples.len() && e.reason != LeftOut::OtherKind {
                write!(f, ", ...")?;
            }
            writeln!(f)?;
        }
        Ok(())
    }
}
