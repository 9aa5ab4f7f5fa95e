//! A case folder: a cluster, the pods to schedule in order, and optionally the
//! `KubeSchedulerConfiguration` kube-scheduler ran with.
//!
//! ```text
//! nodes.json    a NodeList
//! pods.json     a PodList: pods with spec.nodeName run there, the others are pending and are
//!               scheduled in file order
//! objects.json  a List of other kinds (optional): Namespaces, Services, ReplicaSets,
//!               StatefulSets, ReplicationControllers, PersistentVolumes, claims,
//!               StorageClasses, CSINodes, CSIDrivers, CSIStorageCapacities,
//!               PodDisruptionBudgets
//! config.yaml   a KubeSchedulerConfiguration (optional: kube's defaults without it)
//! ```
//!
//! The files are read with sched-core's loader ([`load_file`]), so a bad value is an error
//! naming the file, the item and the field, as everywhere else. A generated case is built in
//! memory with [`Case::from_objects`] and replayed the same way.

use std::path::{Path, PathBuf};

use sched_core::config::{ConfigError, SchedulerConfiguration};
use sched_core::model::{Cluster, ClusterObjects, LoadError, Role, load_file};
use sched_core::snapshot::{NamespaceLabels, Snapshot, SnapshotError};

/// The nodes file of a case folder.
pub const NODES_FILE: &str = "nodes.json";
/// The pods file of a case folder.
pub const PODS_FILE: &str = "pods.json";
/// The file of other objects of a case folder (optional).
pub const OBJECTS_FILE: &str = "objects.json";
/// The configuration file of a case folder (optional).
pub const CONFIG_FILE: &str = "config.yaml";

/// A case: the cluster as kube-scheduler saw it at the start, and its configuration.
#[derive(Clone, Debug)]
pub struct Case {
    /// The case's name for reports (the folder's name for a folder).
    pub name: String,
    /// Nodes, bound pods, pending pods in the order they are scheduled, workloads,
    /// namespaces, storage objects and budgets, with what the loader left out.
    pub cluster: Cluster,
    /// The configuration, `None` for kube-scheduler v1.34's defaults.
    pub config: Option<SchedulerConfiguration>,
}

/// A case that could not be read or set up. Every variant names the file or the object at
/// fault.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CaseError {
    /// A file of the case could not be loaded (missing, not JSON, a bad value, an object of
    /// the wrong kind); the loader's error names the file, the item and the field.
    #[error("{source}")]
    Load {
        /// The file.
        file: PathBuf,
        /// Why.
        #[source]
        source: LoadError,
    },
    /// The objects do not form a cluster (a node name given twice, an unnamed object).
    #[error("{case}: {source}")]
    Cluster {
        /// The case.
        case: String,
        /// Why.
        #[source]
        source: LoadError,
    },
    /// `config.yaml` is not a valid `KubeSchedulerConfiguration`; the error lists every
    /// problem with its field path.
    #[error("{source}")]
    Config {
        /// The file.
        file: PathBuf,
        /// Why.
        #[source]
        source: ConfigError,
    },
    /// The snapshot refused the case's nodes or bound pods.
    #[error("{case}: building the snapshot: {source}")]
    Snapshot {
        /// The case.
        case: String,
        /// Why.
        #[source]
        source: SnapshotError,
    },
}

impl Case {
    /// Reads the case folder `dir` (its files are listed in the [module documentation](self)).
    ///
    /// # Errors
    /// A [`CaseError`] naming the file at fault: `nodes.json` or `pods.json` missing, a file
    /// that does not load, a node named twice, an invalid `config.yaml`.
    pub fn read(dir: impl AsRef<Path>) -> Result<Case, CaseError> {
        let dir = dir.as_ref();
        let load = |file: &str, role: Role| {
            let path = dir.join(file);
            load_file(&path, role).map_err(|source| CaseError::Load { file: path, source })
        };
        let mut objects = load(NODES_FILE, Role::Nodes)?;
        objects.extend(load(PODS_FILE, Role::Pods)?);
        if dir.join(OBJECTS_FILE).exists() {
            objects.extend(load(OBJECTS_FILE, Role::Mixed)?);
        }
        let config_path = dir.join(CONFIG_FILE);
        let config = if config_path.exists() {
            Some(
                SchedulerConfiguration::from_file(&config_path).map_err(|source| {
                    CaseError::Config {
                        file: config_path,
                        source,
                    }
                })?,
            )
        } else {
            None
        };
        let name = dir.file_name().map_or_else(
            || dir.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        Case::from_objects(name, objects, config)
    }

    /// A case from objects already loaded or generated: pods with `spec.nodeName` are bound,
    /// the others pending in their order.
    ///
    /// # Errors
    /// [`CaseError::Cluster`] when the objects do not form a cluster.
    pub fn from_objects(
        name: impl Into<String>,
        objects: ClusterObjects,
        config: Option<SchedulerConfiguration>,
    ) -> Result<Case, CaseError> {
        let name = name.into();
        let cluster = objects
            .into_cluster()
            .map_err(|source| CaseError::Cluster {
                case: name.clone(),
                source,
            })?;
        Ok(Case {
            name,
            cluster,
            config,
        })
    }

    /// The configuration kube-scheduler ran with: the case's, or v1.34's defaults.
    pub fn configuration(&self) -> SchedulerConfiguration {
        self.config
            .clone()
            .unwrap_or_else(SchedulerConfiguration::v1_34_default)
    }

    /// The cluster at the start, in file order: the nodes with their bound pods, the
    /// workloads spreading reads, the namespaces' labels and the storage objects.
    ///
    /// # Errors
    /// [`CaseError::Snapshot`] when the snapshot refuses a node or a pod.
    pub fn snapshot(&self) -> Result<Snapshot, CaseError> {
        self.snapshot_with_node_order(&[])
    }

    /// [`Case::snapshot`] with the nodes in `order` (kube's node tree order, which decides
    /// which nodes a search below 100 % evaluates) when it names every node of the case
    /// exactly once; in file order otherwise.
    ///
    /// # Errors
    /// [`CaseError::Snapshot`] when the snapshot refuses a node or a pod.
    pub fn snapshot_with_node_order(&self, order: &[String]) -> Result<Snapshot, CaseError> {
        let c = &self.cluster;
        let mut nodes = c.nodes.clone();
        if order.len() == nodes.len() {
            let rank: std::collections::HashMap<&str, usize> = order
                .iter()
                .enumerate()
                .map(|(i, n)| (n.as_str(), i))
                .collect();
            if rank.len() == nodes.len()
                && nodes
                    .iter()
                    .all(|n| rank.contains_key(n.metadata.name.as_str()))
            {
                nodes.sort_by_key(|n| rank[n.metadata.name.as_str()]);
            }
        }
        let mut snapshot = Snapshot::from_objects(nodes, c.bound.clone()).map_err(|source| {
            CaseError::Snapshot {
                case: self.name.clone(),
                source,
            }
        })?;
        snapshot.set_workloads(c.workloads.clone());
        let mut namespaces = NamespaceLabels::new();
        namespaces.extend_from(&c.namespaces);
        snapshot.set_namespace_labels(namespaces);
        snapshot.set_storage(c.storage.clone());
        snapshot.dra_mut().load(c.dra.clone());
        Ok(snapshot)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(case: &str) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/kube-v1.34")
            .join(case)
    }

    #[test]
    fn a_case_folder_reads_with_its_configuration_and_storage() {
        let case = Case::read(data("repro-wording-rwop-text")).unwrap();
        assert_eq!(case.name, "repro-wording-rwop-text");
        assert_eq!(case.cluster.nodes.len(), 1);
        assert_eq!(
            (case.cluster.bound.len(), case.cluster.pending.len()),
            (1, 1)
        );
        assert!(case.config.is_some());
        let snapshot = case.snapshot().unwrap();
        assert_eq!(snapshot.len(), 1);
        assert_eq!(snapshot.pod_count(), 1);
        assert!(snapshot.storage().pvs().len() == 1);
    }

    #[test]
    fn without_config_yaml_the_defaults_apply() {
        let case = Case::read(data("repro-scores-podlevel-fit")).unwrap();
        assert!(case.config.is_none());
        assert_eq!(
            case.configuration(),
            SchedulerConfiguration::v1_34_default()
        );
    }

    #[test]
    fn a_missing_file_is_an_error_naming_it() {
        let dir = std::env::temp_dir().join(format!("kube-reference-case-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(NODES_FILE), r#"{"kind":"NodeList","items":[]}"#).unwrap();
        let e = Case::read(&dir).unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        assert!(
            matches!(&e, CaseError::Load { file, .. } if file.ends_with(PODS_FILE)),
            "{e}"
        );
        assert!(e.to_string().contains(PODS_FILE), "{e}");
    }

    #[test]
    fn a_pod_in_the_nodes_file_is_an_error_naming_file_and_item() {
        let dir =
            std::env::temp_dir().join(format!("kube-reference-case-kind-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join(NODES_FILE),
            r#"{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"p","namespace":"ns"}}]}"#,
        )
        .unwrap();
        std::fs::write(dir.join(PODS_FILE), r#"{"kind":"PodList","items":[]}"#).unwrap();
        let e = Case::read(&dir).unwrap_err();
        let _ = std::fs::remove_dir_all(&dir);
        let text = e.to_string();
        assert!(
            text.contains(NODES_FILE) && text.contains("items[0]"),
            "{text}"
        );
    }
}
