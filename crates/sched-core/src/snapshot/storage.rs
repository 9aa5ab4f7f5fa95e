//! PersistentVolumes, claims, StorageClasses and CSINodes, indexed by name, as the volume
//! plugins look them up (kube's listers).

use std::collections::HashMap;

use crate::model::{
    CsiNode, PersistentVolume, PersistentVolumeClaim, StorageClass, StorageObjects,
};

/// The storage objects the volume plugins read, indexed by name: kube's PV, PVC, StorageClass
/// and CSINode listers. Built from [`StorageObjects`]; an object given twice keeps the last.
#[derive(Clone, Debug, Default)]
pub struct StorageIndex {
    pvs: Vec<PersistentVolume>,
    pv_by_name: HashMap<String, usize>,
    pvcs: HashMap<(String, String), PersistentVolumeClaim>,
    classes: HashMap<String, StorageClass>,
    csi_nodes: HashMap<String, CsiNode>,
}

impl StorageIndex {
    /// Indexes the objects.
    pub fn new(objects: StorageObjects) -> StorageIndex {
        let mut ix = StorageIndex::default();
        for pv in objects.persistent_volumes {
            match ix.pv_by_name.get(&pv.metadata.name) {
                Some(&i) => ix.pvs[i] = pv,
                None => {
                    ix.pv_by_name.insert(pv.metadata.name.clone(), ix.pvs.len());
                    ix.pvs.push(pv);
                }
            }
        }
        for pvc in objects.persistent_volume_claims {
            ix.pvcs.insert(
                (pvc.metadata.namespace.clone(), pvc.metadata.name.clone()),
                pvc,
            );
        }
        for sc in objects.storage_classes {
            ix.classes.insert(sc.metadata.name.clone(), sc);
        }
        for cn in objects.csi_nodes {
            ix.csi_nodes.insert(cn.metadata.name.clone(), cn);
        }
        ix
    }

    /// Whether no object is held.
    pub fn is_empty(&self) -> bool {
        self.pvs.is_empty()
            && self.pvcs.is_empty()
            && self.classes.is_empty()
            && self.csi_nodes.is_empty()
    }

    /// A PersistentVolume by name.
    pub fn pv(&self, name: &str) -> Option<&PersistentVolume> {
        self.pv_by_name.get(name).map(|&i| &self.pvs[i])
    }

    /// The position in [`StorageIndex::pvs`] of a PersistentVolume.
    pub fn pv_index(&self, name: &str) -> Option<usize> {
        self.pv_by_name.get(name).copied()
    }

    /// Every PersistentVolume, in the order first given.
    pub fn pvs(&self) -> &[PersistentVolume] {
        &self.pvs
    }

    /// A claim by namespace and name.
    pub fn pvc(&self, namespace: &str, name: &str) -> Option<&PersistentVolumeClaim> {
        // One lookup key built per call: claims are looked up in `prepare`, once per pod.
        self.pvcs.get(&(namespace.to_string(), name.to_string()))
    }

    /// A StorageClass by name.
    pub fn class(&self, name: &str) -> Option<&StorageClass> {
        self.classes.get(name)
    }

    /// The CSINode of a node.
    pub fn csi_node(&self, node: &str) -> Option<&CsiNode> {
        self.csi_nodes.get(node)
    }
}
