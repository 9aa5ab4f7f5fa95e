//! PersistentVolumes, claims, StorageClasses, CSINodes, CSIDrivers and CSIStorageCapacities,
//! indexed by name, as the volume plugins look them up (kube's listers), and what each
//! VolumeBinding plugin assumed over them (kube's per-plugin PV and PVC assume caches).

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::model::{
    CsiDriver, CsiNode, CsiStorageCapacity, PersistentVolume, PersistentVolumeClaim, StorageClass,
    StorageObjects,
};

/// One VolumeBinding plugin's volume binder: the key of the PersistentVolumes and claims that
/// plugin assumed in a [`StorageIndex`]. kube builds a volume binder, with its own PV and PVC
/// assume caches, for each VolumeBinding plugin, so for each profile: what one profile's Reserve
/// assumed, another profile's VolumeBinding does not see until the API server's update arrives.
///
/// ```
/// use sched_core::snapshot::VolumeBinderId;
/// assert_ne!(VolumeBinderId::unique(), VolumeBinderId::unique());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VolumeBinderId(u64);

impl VolumeBinderId {
    /// An id that no other call in this process returns.
    pub fn unique() -> VolumeBinderId {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        VolumeBinderId(NEXT.fetch_add(1, Ordering::Relaxed))
    }
}

/// What one volume binder assumed: kube's `latestObj` where it differs from the informer's.
#[derive(Clone, Debug)]
struct Assumed {
    binder: VolumeBinderId,
    pvs: Vec<PersistentVolume>,
    pv_by_name: HashMap<String, usize>,
    pvcs: HashMap<(String, String), PersistentVolumeClaim>,
}

impl Assumed {
    fn new(binder: VolumeBinderId) -> Assumed {
        Assumed {
            binder,
            pvs: Vec::new(),
            pv_by_name: HashMap::new(),
            pvcs: HashMap::new(),
        }
    }

    /// Forgets the assumed version of a PersistentVolume; `false` if there was none.
    fn drop_pv(&mut self, name: &str) -> bool {
        let Some(i) = self.pv_by_name.remove(name) else {
            return false;
        };
        self.pvs.swap_remove(i);
        if let Some(moved) = self.pvs.get(i) {
            self.pv_by_name.insert(moved.metadata.name.clone(), i);
        }
        true
    }
}

/// The storage objects the volume plugins read, indexed by name: kube's PV, PVC, StorageClass,
/// CSINode, CSIDriver and CSIStorageCapacity listers. Built from [`StorageObjects`]; an object given twice keeps the last.
///
/// Over the PersistentVolumes and claims, each VolumeBinding plugin ([`VolumeBinderId`]) may
/// hold assumed versions (kube's assume caches): the PVs its Reserve bound to a claim and the
/// claims it chose a node for ([`crate::snapshot::Snapshot::assume_volume`],
/// [`crate::snapshot::Snapshot::assume_claim`]). Only that plugin reads them
/// ([`StorageIndex::pv_seen_by`], [`StorageIndex::pvc_seen_by`]); every other reader, and
/// [`StorageIndex::pv`] and [`StorageIndex::pvc`], sees the informer's objects. A new version of
/// an object from the informer (an upsert or a removal) replaces every assumed version of it.
#[derive(Clone, Debug, Default)]
pub struct StorageIndex {
    pvs: Vec<PersistentVolume>,
    pv_by_name: HashMap<String, usize>,
    pvcs: HashMap<(String, String), PersistentVolumeClaim>,
    /// The claims whose `spec.volumeName` names each PersistentVolume (bound or about to
    /// be): whose users a change of that volume concerns.
    claims_of_volume: HashMap<String, Vec<(String, String)>>,
    classes: HashMap<String, StorageClass>,
    csi_nodes: HashMap<String, CsiNode>,
    csi_drivers: HashMap<String, CsiDriver>,
    /// By `(namespace, name)`, in that order (a stable order for the capacity check).
    capacities: BTreeMap<(String, String), CsiStorageCapacity>,
    /// Per volume binder that assumed something, what it assumed.
    assumed: Vec<Assumed>,
}

impl StorageIndex {
    /// Indexes the objects.
    pub fn new(objects: StorageObjects) -> StorageIndex {
        let mut ix = StorageIndex::default();
        for pv in objects.persistent_volumes {
            ix.upsert_pv(pv);
        }
        for pvc in objects.persistent_volume_claims {
            ix.upsert_pvc(pvc);
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

    /// Adds a PersistentVolume, or replaces the one with its name (and every volume binder's
    /// assumed version of it).
    pub fn upsert_pv(&mut self, pv: PersistentVolume) {
        for a in &mut self.assumed {
            a.drop_pv(&pv.metadata.name);
        }
        match self.pv_by_name.get(&pv.metadata.name) {
            Some(&i) => self.pvs[i] = pv,
            None => {
                self.pv_by_name
                    .insert(pv.metadata.name.clone(), self.pvs.len());
                self.pvs.push(pv);
            }
        }
    }

    /// Removes a PersistentVolume (the last one takes its position in [`StorageIndex::pvs`]),
    /// and every volume binder's assumed version of it.
    pub fn remove_pv(&mut self, name: &str) -> Option<PersistentVolume> {
        for a in &mut self.assumed {
            a.drop_pv(name);
        }
        let i = self.pv_by_name.remove(name)?;
        let pv = self.pvs.swap_remove(i);
        if let Some(moved) = self.pvs.get(i) {
            self.pv_by_name.insert(moved.metadata.name.clone(), i);
        }
        Some(pv)
    }

    /// Adds a claim, or replaces the one with its namespace and name (and every volume
    /// binder's assumed version of it).
    pub fn upsert_pvc(&mut self, pvc: PersistentVolumeClaim) {
        let key = (pvc.metadata.namespace.clone(), pvc.metadata.name.clone());
        for a in &mut self.assumed {
            a.pvcs.remove(&key);
        }
        let volume = pvc.spec.volume_name.clone();
        if let Some(old) = self.pvcs.insert(key.clone(), pvc) {
            self.unname_volume(&old.spec.volume_name, &key);
        }
        if !volume.is_empty() {
            self.claims_of_volume.entry(volume).or_default().push(key);
        }
    }

    /// `claim` no longer names `volume` (empty: it named none).
    fn unname_volume(&mut self, volume: &str, claim: &(String, String)) {
        if let Some(claims) = self.claims_of_volume.get_mut(volume) {
            claims.retain(|c| c != claim);
            if claims.is_empty() {
                self.claims_of_volume.remove(volume);
            }
        }
    }

    /// The claims (namespace, name) whose `spec.volumeName` is `volume`.
    pub fn claims_naming_volume(&self, volume: &str) -> &[(String, String)] {
        self.claims_of_volume.get(volume).map_or(&[], Vec::as_slice)
    }

    /// Removes a claim, and every volume binder's assumed version of it.
    pub fn remove_pvc(&mut self, namespace: &str, name: &str) -> Option<PersistentVolumeClaim> {
        let key = (namespace.to_string(), name.to_string());
        for a in &mut self.assumed {
            a.pvcs.remove(&key);
        }
        let old = self.pvcs.remove(&key)?;
        self.unname_volume(&old.spec.volume_name, &key);
        Some(old)
    }

    fn assumed_by(&self, binder: VolumeBinderId) -> Option<&Assumed> {
        self.assumed.iter().find(|a| a.binder == binder)
    }

    fn assumed_by_mut(&mut self, binder: VolumeBinderId) -> &mut Assumed {
        match self.assumed.iter().position(|a| a.binder == binder) {
            Some(i) => &mut self.assumed[i],
            None => {
                self.assumed.push(Assumed::new(binder));
                self.assumed.last_mut().expect("just pushed")
            }
        }
    }

    /// kube's `AssumeCache.Assume` for a PersistentVolume: `binder` sees `pv` instead of the
    /// informer's version of it until [`StorageIndex::restore_pv`] or a new version from the
    /// informer. `false` (nothing assumed) when no PersistentVolume has its name.
    pub(crate) fn assume_pv(&mut self, binder: VolumeBinderId, pv: PersistentVolume) -> bool {
        if !self.pv_by_name.contains_key(&pv.metadata.name) {
            return false;
        }
        let a = self.assumed_by_mut(binder);
        match a.pv_by_name.get(&pv.metadata.name) {
            Some(&i) => a.pvs[i] = pv,
            None => {
                a.pv_by_name.insert(pv.metadata.name.clone(), a.pvs.len());
                a.pvs.push(pv);
            }
        }
        true
    }

    /// kube's `AssumeCache.Assume` for a claim; `false` (nothing assumed) when no claim has its
    /// namespace and name.
    pub(crate) fn assume_pvc(
        &mut self,
        binder: VolumeBinderId,
        pvc: PersistentVolumeClaim,
    ) -> bool {
        let key = (pvc.metadata.namespace.clone(), pvc.metadata.name.clone());
        if !self.pvcs.contains_key(&key) {
            return false;
        }
        self.assumed_by_mut(binder).pvcs.insert(key, pvc);
        true
    }

    /// kube's `AssumeCache.Restore` for a PersistentVolume: `binder` sees the informer's
    /// version again. `false` if it had assumed none.
    pub(crate) fn restore_pv(&mut self, binder: VolumeBinderId, name: &str) -> bool {
        let Some(i) = self.assumed.iter().position(|a| a.binder == binder) else {
            return false;
        };
        let restored = self.assumed[i].drop_pv(name);
        self.drop_if_empty(i);
        restored
    }

    /// kube's `AssumeCache.Restore` for a claim. `false` if `binder` had assumed none.
    pub(crate) fn restore_pvc(
        &mut self,
        binder: VolumeBinderId,
        namespace: &str,
        name: &str,
    ) -> bool {
        let Some(i) = self.assumed.iter().position(|a| a.binder == binder) else {
            return false;
        };
        let restored = self.assumed[i]
            .pvcs
            .remove(&(namespace.to_string(), name.to_string()))
            .is_some();
        self.drop_if_empty(i);
        restored
    }

    fn drop_if_empty(&mut self, i: usize) {
        if self.assumed[i].pvs.is_empty() && self.assumed[i].pvcs.is_empty() {
            self.assumed.swap_remove(i);
        }
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

    /// A PersistentVolume as the volume binder `binder` sees it (kube's `pvCache.GetPV`): its
    /// assumed version, else the informer's.
    pub fn pv_seen_by(&self, binder: VolumeBinderId, name: &str) -> Option<&PersistentVolume> {
        self.assumed_pv(binder, name).or_else(|| self.pv(name))
    }

    /// A claim as the volume binder `binder` sees it (kube's `pvcCache.GetPVC`): its assumed
    /// version, else the informer's.
    pub fn pvc_seen_by(
        &self,
        binder: VolumeBinderId,
        namespace: &str,
        name: &str,
    ) -> Option<&PersistentVolumeClaim> {
        match self.assumed_by(binder) {
            Some(a) => {
                let key = (namespace.to_string(), name.to_string());
                a.pvcs.get(&key).or_else(|| self.pvcs.get(&key))
            }
            None => self.pvc(namespace, name),
        }
    }

    /// The version of a PersistentVolume `binder` assumed, if it assumed one.
    pub fn assumed_pv(&self, binder: VolumeBinderId, name: &str) -> Option<&PersistentVolume> {
        let a = self.assumed_by(binder)?;
        a.pv_by_name.get(name).map(|&i| &a.pvs[i])
    }

    /// The version of a claim `binder` assumed, if it assumed one.
    pub fn assumed_pvc(
        &self,
        binder: VolumeBinderId,
        namespace: &str,
        name: &str,
    ) -> Option<&PersistentVolumeClaim> {
        self.assumed_by(binder)?
            .pvcs
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// Every PersistentVolume `binder` assumed, in no particular order; the position of one in
    /// this slice is [`StorageIndex::assumed_pv_index`]'s, until the next change.
    pub fn assumed_pvs(&self, binder: VolumeBinderId) -> &[PersistentVolume] {
        self.assumed_by(binder).map_or(&[], |a| &a.pvs)
    }

    /// The position in [`StorageIndex::assumed_pvs`] of the PersistentVolume `binder` assumed
    /// under this name.
    pub fn assumed_pv_index(&self, binder: VolumeBinderId, name: &str) -> Option<usize> {
        self.assumed_by(binder)?.pv_by_name.get(name).copied()
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
