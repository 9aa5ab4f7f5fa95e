//! PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers and CSIStorageCapacities,
//! indexed by name, as the volume plugins look them up (kube's listers).

use std::collections::{BTreeMap, HashMap};

use crate::model::{
    CsiDriver, CsiNode, CsiStorageCapacity, PersistentVolume, PersistentVolumeClaim, StorageClass,
    StorageObjects,
};

/// The storage objects the volume plugins read, indexed by name: kube's PV, PVC, StorageClass,
/// CSINode, CSIDriver and CSIStorageCapacity listers. Built from [`StorageObjects`]; an object given twice keeps the last.
#[derive(Clone, Debug, Default)]
pub struct StorageIndex {
    pvs: Vec<PersistentVolume>,
    pv_by_name: HashMap<String, usize>,
    pvcs: HashMap<(String, String), PersistentVolumeClaim>,
    classes: HashMap<String, StorageClass>,
    csi_nodes: HashMap<String, CsiNode>,
    csi_drivers: HashMap<String, CsiDriver>,
    /// By `(namespace, name)`, in that order (a stable order for the capacity check).
    capacities: BTreeMap<(String, String), CsiStorageCapacity>,
}

impl StorageIndex {
    /// Indexes the objects.
    pub fn new(objects: StorageObjects) -> StorageIndex {
        let mut ix = StorageIndex::default();
        for pv in objects.persistent_volumes {
            ix.upsert_pv(pv);
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
        for d in objects.csi_drivers {
            ix.upsert_csi_driver(d);
        }
        for c in objects.csi_storage_capacities {
            ix.upsert_capacity(c);
        }
        ix
    }

    /// Adds a PersistentVolume, or replaces the one with its name.
    pub fn upsert_pv(&mut self, pv: PersistentVolume) {
        match self.pv_by_name.get(&pv.metadata.name) {
            Some(&i) => self.pvs[i] = pv,
            None => {
                self.pv_by_name
                    .insert(pv.metadata.name.clone(), self.pvs.len());
                self.pvs.push(pv);
            }
        }
    }

    /// Removes a PersistentVolume (the last one takes its position in [`StorageIndex::pvs`]).
    pub fn remove_pv(&mut self, name: &str) -> Option<PersistentVolume> {
        let i = self.pv_by_name.remove(name)?;
        let pv = self.pvs.swap_remove(i);
        if let Some(moved) = self.pvs.get(i) {
            self.pv_by_name.insert(moved.metadata.name.clone(), i);
        }
        Some(pv)
    }

    /// Adds a claim, or replaces the one with its namespace and name.
    pub fn upsert_pvc(&mut self, pvc: PersistentVolumeClaim) {
        self.pvcs.insert(
            (pvc.metadata.namespace.clone(), pvc.metadata.name.clone()),
            pvc,
        );
    }

    /// Removes a claim.
    pub fn remove_pvc(&mut self, namespace: &str, name: &str) -> Option<PersistentVolumeClaim> {
        self.pvcs.remove(&(namespace.to_string(), name.to_string()))
    }

    /// Adds a StorageClass, or replaces the one with its name.
    pub fn upsert_class(&mut self, class: StorageClass) {
        self.classes.insert(class.metadata.name.clone(), class);
    }

    /// Removes a StorageClass.
    pub fn remove_class(&mut self, name: &str) -> Option<StorageClass> {
        self.classes.remove(name)
    }

    /// Adds a CSINode, or replaces the one with its name.
    pub fn upsert_csi_node(&mut self, csi_node: CsiNode) {
        self.csi_nodes
            .insert(csi_node.metadata.name.clone(), csi_node);
    }

    /// Removes a CSINode.
    pub fn remove_csi_node(&mut self, name: &str) -> Option<CsiNode> {
        self.csi_nodes.remove(name)
    }

    /// Adds a CSIDriver, or replaces the one with its name.
    pub fn upsert_csi_driver(&mut self, driver: CsiDriver) {
        self.csi_drivers
            .insert(driver.metadata.name.clone(), driver);
    }

    /// Removes a CSIDriver.
    pub fn remove_csi_driver(&mut self, name: &str) -> Option<CsiDriver> {
        self.csi_drivers.remove(name)
    }

    /// Adds a CSIStorageCapacity, or replaces the one with its namespace and name.
    pub fn upsert_capacity(&mut self, capacity: CsiStorageCapacity) {
        self.capacities.insert(
            (
                capacity.metadata.namespace.clone(),
                capacity.metadata.name.clone(),
            ),
            capacity,
        );
    }

    /// Removes a CSIStorageCapacity.
    pub fn remove_capacity(&mut self, namespace: &str, name: &str) -> Option<CsiStorageCapacity> {
        self.capacities
            .remove(&(namespace.to_string(), name.to_string()))
    }

    /// Whether no object is held.
    pub fn is_empty(&self) -> bool {
        self.pvs.is_empty()
            && self.pvcs.is_empty()
            && self.classes.is_empty()
            && self.csi_nodes.is_empty()
            && self.csi_drivers.is_empty()
            && self.capacities.is_empty()
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

    /// A CSIDriver by name.
    pub fn csi_driver(&self, name: &str) -> Option<&CsiDriver> {
        self.csi_drivers.get(name)
    }

    /// A CSIStorageCapacity by namespace and name.
    pub fn capacity(&self, namespace: &str, name: &str) -> Option<&CsiStorageCapacity> {
        self.capacities
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// Every CSIStorageCapacity, by namespace and name.
    pub fn capacities(&self) -> impl Iterator<Item = &CsiStorageCapacity> {
        self.capacities.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pv(name: &str) -> PersistentVolume {
        let mut pv = PersistentVolume::default();
        pv.metadata.name = name.into();
        pv
    }

    #[test]
    fn updates_keep_the_name_index() {
        let mut ix = StorageIndex::new(StorageObjects {
            persistent_volumes: vec![pv("a"), pv("b"), pv("c")],
            ..StorageObjects::default()
        });
        assert_eq!(ix.remove_pv("a").unwrap().metadata.name, "a");
        assert!(ix.pv("a").is_none());
        assert_eq!(ix.pv("c").unwrap().metadata.name, "c");
        assert_eq!(ix.pvs()[ix.pv_index("c").unwrap()].metadata.name, "c");
        assert_eq!(ix.pvs()[ix.pv_index("b").unwrap()].metadata.name, "b");
        let mut b = pv("b");
        b.status.phase = "Bound".into();
        ix.upsert_pv(b);
        assert_eq!(ix.pvs().len(), 2);
        assert_eq!(ix.pv("b").unwrap().status.phase, "Bound");
        assert!(ix.remove_pv("a").is_none());
        let mut claim = PersistentVolumeClaim::default();
        claim.metadata.namespace = "ns".into();
        claim.metadata.name = "c".into();
        ix.upsert_pvc(claim);
        assert!(ix.pvc("ns", "c").is_some());
        assert!(ix.remove_pvc("ns", "c").is_some());
        let mut d = CsiDriver::default();
        d.metadata.name = "d".into();
        ix.upsert_csi_driver(d);
        assert!(!ix.csi_driver("d").unwrap().storage_capacity());
        assert!(ix.remove_csi_driver("d").is_some());
        let mut c = CsiStorageCapacity::default();
        c.metadata.namespace = "ns".into();
        c.metadata.name = "c".into();
        ix.upsert_capacity(c.clone());
        c.storage_class_name = "sc".into();
        ix.upsert_capacity(c);
        assert_eq!(ix.capacities().count(), 1);
        assert_eq!(ix.capacity("ns", "c").unwrap().storage_class_name, "sc");
        assert!(ix.remove_capacity("ns", "c").is_some());
        assert!(ix.capacity("ns", "c").is_none());
    }
}
