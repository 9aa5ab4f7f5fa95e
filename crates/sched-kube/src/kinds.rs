//! The kinds the scheduler watches: where the API server serves each, and how one of its
//! objects becomes an engine object (through sched-core's loader, so a watched object is read
//! exactly as the same object in a kubectl file).

use kube::core::{ApiResource, DynamicObject};
use sched_core::model::{ClusterObjects, LoadError, PodKey, Role, load_bytes};
use sched_core::scheduler::{Object, ObjectKey};

/// One kind the scheduler watches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct WatchedKind {
    /// The kind, as objects and kubectl name it (`Node`, `CSIStorageCapacity`).
    pub kind: &'static str,
    /// The API group (empty for the core group).
    pub group: &'static str,
    /// The version served.
    pub version: &'static str,
    /// The resource (the URL's plural).
    pub plural: &'static str,
    /// Whether objects live in namespaces.
    pub namespaced: bool,
}

const fn kind(
    kind: &'static str,
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> WatchedKind {
    WatchedKind {
        kind,
        group,
        version,
        plural,
        namespaced,
    }
}

/// Every kind watched, in the order an initial listing is applied (what a pod refers to
/// first, pods last): kube-scheduler's informers, with the workloads whose selectors
/// spreading's system defaults read (Services, ReplicationControllers, ReplicaSets,
/// StatefulSets).
pub const WATCHED: &[WatchedKind] = &[
    kind("Namespace", "", "v1", "namespaces", false),
    kind("Node", "", "v1", "nodes", false),
    kind(
        "StorageClass",
        "storage.k8s.io",
        "v1",
        "storageclasses",
        false,
    ),
    kind("PersistentVolume", "", "v1", "persistentvolumes", false),
    kind(
        "PersistentVolumeClaim",
        "",
        "v1",
        "persistentvolumeclaims",
        true,
    ),
    kind("CSINode", "storage.k8s.io", "v1", "csinodes", false),
    kind("CSIDriver", "storage.k8s.io", "v1", "csidrivers", false),
    kind(
        "CSIStorageCapacity",
        "storage.k8s.io",
        "v1",
        "csistoragecapacities",
        true,
    ),
    kind(
        "PodDisruptionBudget",
        "policy",
        "v1",
        "poddisruptionbudgets",
        true,
    ),
    kind(
        "DeviceClass",
        "resource.k8s.io",
        "v1",
        "deviceclasses",
        false,
    ),
    kind(
        "ResourceSlice",
        "resource.k8s.io",
        "v1",
        "resourceslices",
        false,
    ),
    kind(
        "ResourceClaim",
        "resource.k8s.io",
        "v1",
        "resourceclaims",
        true,
    ),
    kind("Service", "", "v1", "services", true),
    kind(
        "ReplicationController",
        "",
        "v1",
        "replicationcontrollers",
        true,
    ),
    kind("ReplicaSet", "apps", "v1", "replicasets", true),
    kind("StatefulSet", "apps", "v1", "statefulsets", true),
    kind("Pod", "", "v1", "pods", true),
];

impl WatchedKind {
    /// The kind as kube-rs addresses it.
    pub fn api_resource(&self) -> ApiResource {
        let api_version = if self.group.is_empty() {
            self.version.to_owned()
        } else {
            format!("{}/{}", self.group, self.version)
        };
        ApiResource {
            group: self.group.to_owned(),
            version: self.version.to_owned(),
            api_version,
            kind: self.kind.to_owned(),
            plural: self.plural.to_owned(),
        }
    }

    /// The engine's key of an object of this kind.
    pub fn key(&self, name: &str, namespace: &str) -> ObjectKey {
        let ns_name = || format!("{namespace}/{name}");
        match self.kind {
            "Pod" => ObjectKey::Pod(PodKey::new(namespace, name)),
            "Node" => ObjectKey::Node(name.to_owned()),
            "Namespace" => ObjectKey::Namespace(name.to_owned()),
            "StorageClass" => ObjectKey::StorageClass(name.to_owned()),
            "PersistentVolume" => ObjectKey::PersistentVolume(name.to_owned()),
            "PersistentVolumeClaim" => ObjectKey::PersistentVolumeClaim(ns_name()),
            "CSINode" => ObjectKey::CsiNode(name.to_owned()),
            "CSIDriver" => ObjectKey::CsiDriver(name.to_owned()),
            "CSIStorageCapacity" => ObjectKey::CsiStorageCapacity(ns_name()),
            "PodDisruptionBudget" => ObjectKey::PodDisruptionBudget(ns_name()),
            "DeviceClass" => ObjectKey::DeviceClass(name.to_owned()),
            "ResourceSlice" => ObjectKey::ResourceSlice(name.to_owned()),
            "ResourceClaim" => ObjectKey::ResourceClaim(ns_name()),
            "Service" | "ReplicationController" | "ReplicaSet" | "StatefulSet" => {
                ObjectKey::Workload(format!("{}/{namespace}/{name}", self.kind))
            }
            other => unreachable!("{other} is not in WATCHED"),
        }
    }

    /// The key of a watched object.
    pub fn key_of(&self, object: &DynamicObject) -> ObjectKey {
        self.key(
            object.metadata.name.as_deref().unwrap_or_default(),
            object.metadata.namespace.as_deref().unwrap_or_default(),
        )
    }

    /// Reads a watched object as sched-core reads it from a kubectl file: bad fields are a
    /// [`LoadError`] naming the kind, the object and the field.
    ///
    /// # Errors
    /// The loader's error for a malformed object.
    pub fn to_object(&self, object: &DynamicObject) -> Result<Object, LoadError> {
        let mut value = serde_json::to_value(object).unwrap_or_default();
        if let Some(m) = value.as_object_mut() {
            m.insert("kind".into(), self.kind.into());
            m.insert("apiVersion".into(), self.api_resource().api_version.into());
        }
        let name = object.metadata.name.as_deref().unwrap_or_default();
        let label = match object.metadata.namespace.as_deref() {
            Some(ns) if self.namespaced => format!("{} {ns}/{name}", self.kind),
            _ => format!("{} {name}", self.kind),
        };
        let bytes = serde_json::to_vec(&value).unwrap_or_default();
        let objects = load_bytes(&label, &bytes, Role::Mixed)?;
        Ok(single(objects).expect("every watched kind is one the loader keeps"))
    }
}

/// The one object a single-object load produced.
fn single(mut o: ClusterObjects) -> Option<Object> {
    let s = &mut o.storage;
    let d = &mut o.dra;
    o.pods
        .pop()
        .map(Object::from)
        .or_else(|| o.nodes.pop().map(Object::from))
        .or_else(|| o.namespaces.pop().map(Object::from))
        .or_else(|| s.storage_classes.pop().map(Object::from))
        .or_else(|| s.persistent_volumes.pop().map(Object::from))
        .or_else(|| s.persistent_volume_claims.pop().map(Object::from))
        .or_else(|| s.csi_nodes.pop().map(Object::from))
        .or_else(|| s.csi_drivers.pop().map(Object::from))
        .or_else(|| s.csi_storage_capacities.pop().map(Object::from))
        .or_else(|| o.pdbs.pop().map(Object::from))
        .or_else(|| d.device_classes.pop().map(Object::from))
        .or_else(|| d.resource_slices.pop().map(Object::from))
        .or_else(|| d.resource_claims.pop().map(Object::from))
        .or_else(|| o.workloads.pop().map(Object::from))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dynamic(json: serde_json::Value) -> DynamicObject {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn every_watched_kind_reads_into_its_engine_object() {
        for k in WATCHED {
            let mut meta = serde_json::json!({"name": "a", "uid": "u1"});
            if k.namespaced {
                meta["namespace"] = "ns".into();
            }
            let o = dynamic(serde_json::json!({"metadata": meta}));
            let object = k
                .to_object(&o)
                .unwrap_or_else(|e| panic!("{}: {e}", k.kind));
            assert_eq!(object.key(), k.key_of(&o), "{}", k.kind);
        }
    }

    #[test]
    fn a_malformed_object_is_an_error_naming_it_and_the_field() {
        let o = dynamic(serde_json::json!({
            "metadata": {"name": "n1"},
            "status": {"allocatable": {"cpu": "lots"}}
        }));
        let kind = WATCHED.iter().find(|k| k.kind == "Node").unwrap();
        let e = kind.to_object(&o).unwrap_err().to_string();
        assert!(e.starts_with("Node n1: "), "{e}");
        assert!(e.contains("status.allocatable"), "{e}");
        let pods = WATCHED.iter().find(|k| k.kind == "Pod").unwrap();
        let p = dynamic(serde_json::json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": []}}}]}
        }));
        let e = pods.to_object(&p).unwrap_err().to_string();
        assert!(e.starts_with("Pod ns/p: "), "{e}");
    }
}
