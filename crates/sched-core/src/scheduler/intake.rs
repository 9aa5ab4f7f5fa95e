//! Event intake: a [`ClusterEvent`] applied to the snapshot, the lifecycle and the queue,
//! which then moves the unschedulable pods the change can help.

use std::time::Duration;

use super::{ClusterEvent, EventMask, Object, ObjectKey, Scheduler, events};
use crate::model::{
    CsiDriver, CsiNode, CsiStorageCapacity, Node, PersistentVolume, PersistentVolumeClaim, Pod,
    StorageClass,
};
use crate::snapshot::{StorageIndex, StorageObjectRef};

impl Scheduler {
    /// Applies a cluster change to the snapshot and the queue, and moves the unschedulable
    /// pods it can help.
    pub fn apply(&mut self, event: ClusterEvent, now: Duration) {
        match event {
            ClusterEvent::Add(Object::Node(node)) => self.add_node(node, now),
            ClusterEvent::Update(Object::Node(node)) => self.update_node(node, now),
            ClusterEvent::Add(object) | ClusterEvent::Update(object) => self.upsert(object, now),
            ClusterEvent::Delete(key) => self.delete(key, now),
        }
    }

    fn add_node(&mut self, node: Node, now: Duration) {
        let name = node.metadata.name.clone();
        match self.snapshot.add_node(node) {
            Ok(()) => {
                self.queue.on_event(EventMask::NODE_ADD, now);
            }
            Err(e) => self.reject_event(format!("node {name}"), e),
        }
    }

    fn update_node(&mut self, node: Node, now: Duration) {
        let name = node.metadata.name.clone();
        let Some(old) = self.snapshot.get(&name).map(|i| i.node().clone()) else {
            return self.add_node(node, now);
        };
        let change = events::node_change(&old, &node);
        match self.snapshot.update_node(node) {
            Ok(()) => {
                self.queue.on_event(change, now);
            }
            Err(e) => self.reject_event(format!("node {name}"), e),
        }
    }

    /// An object other than a node added or changed.
    fn upsert(&mut self, object: Object, now: Duration) {
        match object {
            Object::Pod(pod) => self.apply_pod(pod, now),
            Object::Node(node) => self.update_node(node, now),
            Object::PersistentVolume(o) => self.upsert_storage(o, now),
            Object::PersistentVolumeClaim(o) => self.upsert_storage(o, now),
            Object::StorageClass(o) => self.upsert_storage(o, now),
            Object::CsiNode(o) => self.upsert_storage(o, now),
            Object::CsiDriver(o) => self.upsert_storage(o, now),
            Object::CsiStorageCapacity(o) => self.upsert_storage(o, now),
            Object::Namespace(ns) => {
                let labels = self.snapshot.namespace_labels();
                let changed = labels.labels_of(&ns.metadata.name) != Some(&ns.metadata.labels);
                self.snapshot.upsert_namespace(&ns);
                if changed {
                    self.queue.on_event(EventMask::NAMESPACE, now);
                }
            }
            Object::PodDisruptionBudget(pdb) => {
                let key = pdb.key();
                match self.pdbs.binary_search_by(|p| p.key().cmp(&key)) {
                    Ok(i) => self.pdbs[i] = pdb,
                    Err(i) => self.pdbs.insert(i, pdb),
                }
            }
            Object::DeviceClass(o) => {
                self.snapshot.dra_mut().upsert_class(o);
                self.queue.on_event(EventMask::DEVICE_CLASS, now);
            }
            Object::ResourceSlice(o) => {
                self.snapshot.dra_mut().upsert_slice(o);
                self.queue.on_event(EventMask::RESOURCE_SLICE, now);
            }
            Object::ResourceClaim(o) => {
                self.snapshot.dra_mut().upsert_claim(o);
                self.queue.on_event(EventMask::RESOURCE_CLAIM, now);
            }
            // Spreading reads workloads when it scores; no pod waits for one (kube registers
            // no event for them).
            Object::Workload(w) => self.snapshot.upsert_workload(w),
            Object::PodGroup(pg) => {
                if let Some(g) = &mut self.gang {
                    let key = pg.key();
                    if g.upsert_group(pg, now) {
                        self.queue.set_group_created(&key, Some(now));
                    }
                    self.queue.on_event(EventMask::POD_GROUP, now);
                }
            }
        }
    }

    /// An object went away.
    fn delete(&mut self, key: ObjectKey, now: Duration) {
        match key {
            ObjectKey::Node(name) => match self.snapshot.remove_node(&name) {
                Ok(pods) => {
                    self.node_gone(&pods);
                    self.queue.on_event(EventMask::NODE_DELETE, now);
                }
                Err(e) => self.reject_event(format!("node {name}"), e),
            },
            ObjectKey::Pod(key) => self.delete_pod(&key, now),
            ObjectKey::PersistentVolume(name) => {
                let s = self.storage_for(StorageObjectRef::Volume(&name));
                drop(s.remove_pv(&name));
                self.queue.on_event(EventMask::STORAGE_DELETE, now);
            }
            ObjectKey::PersistentVolumeClaim(key) => {
                let (namespace, name) = split_key(&key);
                let s = self.storage_for(StorageObjectRef::Claim { namespace, name });
                drop(s.remove_pvc(namespace, name));
                self.queue.on_event(EventMask::STORAGE_DELETE, now);
            }
            ObjectKey::StorageClass(name) => {
                drop(
                    self.storage_for(StorageObjectRef::Other)
                        .remove_class(&name),
                );
                self.queue.on_event(EventMask::STORAGE_DELETE, now);
            }
            ObjectKey::CsiNode(name) => {
                let s = self.storage_for(StorageObjectRef::CsiNode(&name));
                drop(s.remove_csi_node(&name));
                self.queue.on_event(EventMask::STORAGE_DELETE, now);
            }
            ObjectKey::CsiDriver(name) => {
                drop(
                    self.storage_for(StorageObjectRef::Other)
                        .remove_csi_driver(&name),
                );
                self.queue.on_event(EventMask::STORAGE_DELETE, now);
            }
            ObjectKey::CsiStorageCapacity(key) => {
                let (namespace, name) = split_key(&key);
                let s = self.storage_for(StorageObjectRef::Other);
                drop(s.remove_capacity(namespace, name));
                self.queue.on_event(EventMask::STORAGE_DELETE, now);
            }
            ObjectKey::DeviceClass(name) => {
                drop(self.snapshot.dra_mut().remove_class(&name));
                self.queue.on_event(EventMask::DRA_DELETE, now);
            }
            ObjectKey::ResourceSlice(name) => {
                drop(self.snapshot.dra_mut().remove_slice(&name));
                self.queue.on_event(EventMask::DRA_DELETE, now);
            }
            ObjectKey::ResourceClaim(key) => {
                let (namespace, name) = split_key(&key);
                drop(self.snapshot.dra_mut().remove_claim(namespace, name));
                self.queue.on_event(EventMask::DRA_DELETE, now);
            }
            ObjectKey::Namespace(name) => drop(self.snapshot.remove_namespace(&name)),
            ObjectKey::PodDisruptionBudget(key) => self.pdbs.retain(|p| p.key() != key),
            ObjectKey::Workload(key) => drop(self.snapshot.remove_workload(&key)),
            ObjectKey::PodGroup(key) => {
                if let Some(g) = &mut self.gang
                    && g.remove_group(&key)
                {
                    self.queue.set_group_created(&key, None);
                }
            }
        }
    }

    /// A pod went away: out of the queue, the nominator and the lifecycle (held at Permit,
    /// allowed, or handed out and its bind not finished: kube's bind would fail and
    /// unreserve), and out of the snapshot.
    fn delete_pod(&mut self, key: &str, now: Duration) {
        if let Some(g) = &mut self.gang {
            g.forget_pod(key);
        }
        self.queue.delete(key);
        self.parked.remove(key);
        self.nominator.delete(key);
        self.leave(key, now);
        if self.snapshot.node_of(key).is_some() {
            match self.snapshot.remove_pod(key) {
                Ok(_) => {
                    self.queue.on_event(EventMask::ASSIGNED_POD_DELETE, now);
                }
                Err(e) => self.reject_event(format!("pod {key}"), e),
            }
        }
    }

    /// A storage object added or changed: the queue hears an add or an update, as the
    /// snapshot knew it or not.
    fn upsert_storage<T: StorageObject>(&mut self, object: T, now: Duration) {
        let mask = if object.known(self.snapshot.storage()) {
            T::UPDATE
        } else {
            T::ADD
        };
        let storage = self.snapshot.storage_mut_for(object.object_ref());
        object.upsert(storage);
        self.queue.on_event(mask, now);
    }

    /// The storage index, to change `object` in.
    fn storage_for(&mut self, object: StorageObjectRef<'_>) -> &mut StorageIndex {
        self.snapshot.storage_mut_for(object)
    }

    fn apply_pod(&mut self, pod: Pod, now: Duration) {
        let key = pod.key();
        // Coscheduling counts a group's pods, pending and bound, by their label.
        let joined = match &mut self.gang {
            Some(g) => {
                let before = g.group_of_pod(&key).is_some();
                g.note_pod(&pod);
                !before && g.group_of_pod(&key).is_some()
            }
            None => false,
        };
        if joined {
            self.queue.on_event(EventMask::POD_GROUP, now);
        }
        if pod.spec.node_name.is_empty() {
            // Pending: queue it if one of our profiles schedules it; a pod being deleted is
            // not scheduled.
            if pod.is_terminating() || self.slot_of(&pod).is_none() {
                self.queue.delete(&key);
                self.parked.remove(&key);
                self.nominator.delete(&key);
                return;
            }
            if self.snapshot.node_of(&key).is_some() {
                // Assumed by us and not yet bound in the API server: nothing to do.
                return;
            }
            // kube's AddNominatedPod / UpdateNominatedPod: the status's nominatedNodeName,
            // or the nomination made here when neither version has one.
            if !pod.status.nominated_node_name.is_empty() || self.nominator.node_of(&key).is_some()
            {
                self.nominator.update(pod.clone());
            }
            self.queue.add(pod, now);
            return;
        }
        // Bound.
        self.queue.delete(&key);
        self.parked.remove(&key);
        self.nominator.delete(&key);
        let ours = self.reported_bound(&key, &pod.spec.node_name, now);
        let result = match self.snapshot.node_of(&key) {
            Some(node) if node == pod.spec.node_name => {
                // Our assumed pod confirmed, or a bound pod changed. The informer's first report
                // of a pod bound is an add for the queue (kube's AssignedPodAdd), even though
                // the snapshot had it assumed: it does not wake pods waiting for a pod's
                // update (a scale-down), such as pods short of resources.
                self.snapshot.update_pod(pod).map(|()| {
                    if ours {
                        EventMask::ASSIGNED_POD_ADD
                    } else {
                        EventMask::ASSIGNED_POD_UPDATE
                    }
                })
            }
            Some(_) => {
                // Bound elsewhere than assumed (another scheduler won): the truth replaces it.
                self.snapshot
                    .remove_pod(&key)
                    .and_then(|_| self.snapshot.add_pod(pod))
                    .map(|()| EventMask::ASSIGNED_POD_UPDATE | EventMask::ASSIGNED_POD_DELETE)
            }
            None => self
                .snapshot
                .add_pod(pod)
                .map(|()| EventMask::ASSIGNED_POD_ADD),
        };
        match result {
            Ok(mask) => {
                self.queue.on_event(mask, now);
            }
            Err(e) => self.reject_event(format!("pod {key}"), e),
        }
    }
}

/// `namespace/name` split (a key without `/` is a name in no namespace).
fn split_key(key: &str) -> (&str, &str) {
    key.split_once('/').unwrap_or(("", key))
}

/// A storage object the snapshot's [`StorageIndex`] keeps: the queue events its add and its
/// update are, whether the index has it, and its upsert.
trait StorageObject {
    /// The queue event of an add.
    const ADD: EventMask;
    /// The queue event of an update.
    const UPDATE: EventMask;
    /// Whether the index has an object of this name.
    fn known(&self, storage: &StorageIndex) -> bool;
    /// The object, for the node memos it concerns.
    fn object_ref(&self) -> StorageObjectRef<'_>;
    /// Adds or replaces it.
    fn upsert(self, storage: &mut StorageIndex);
}

/// Implements [`StorageObject`] for a type: its events, how it is found, its upsert.
macro_rules! storage_object {
    (
        $t:ty,
        $add:ident,
        $update:ident,
        |$o:ident, $s:ident| $known:expr,
        |$r:ident| $object_ref:expr,
        $upsert:ident
    ) => {
        impl StorageObject for $t {
            const ADD: EventMask = EventMask::$add;
            const UPDATE: EventMask = EventMask::$update;
            fn known(&self, $s: &StorageIndex) -> bool {
                let $o = self;
                $known
            }
            fn object_ref(&self) -> StorageObjectRef<'_> {
                let $r = self;
                $object_ref
            }
            fn upsert(self, storage: &mut StorageIndex) {
                storage.$upsert(self);
            }
        }
    };
}

storage_object!(
    PersistentVolume,
    PV_ADD,
    PV_UPDATE,
    |o, s| s.pv(&o.metadata.name).is_some(),
    |o| StorageObjectRef::Volume(&o.metadata.name),
    upsert_pv
);
storage_object!(
    PersistentVolumeClaim,
    PVC_ADD,
    PVC_UPDATE,
    |o, s| s.pvc(&o.metadata.namespace, &o.metadata.name).is_some(),
    |o| StorageObjectRef::Claim {
        namespace: &o.metadata.namespace,
        name: &o.metadata.name
    },
    upsert_pvc
);
storage_object!(
    StorageClass,
    STORAGE_CLASS_ADD,
    STORAGE_CLASS_UPDATE,
    |o, s| s.class(&o.metadata.name).is_some(),
    |_o| StorageObjectRef::Other,
    upsert_class
);
storage_object!(
    CsiNode,
    CSI_NODE_ADD,
    CSI_NODE_UPDATE,
    |o, s| s.csi_node(&o.metadata.name).is_some(),
    |o| StorageObjectRef::CsiNode(&o.metadata.name),
    upsert_csi_node
);
storage_object!(
    CsiDriver,
    CSI_DRIVER_ADD,
    CSI_DRIVER_UPDATE,
    |o, s| s.csi_driver(&o.metadata.name).is_some(),
    |_o| StorageObjectRef::Other,
    upsert_csi_driver
);
storage_object!(
    CsiStorageCapacity,
    CSI_STORAGE_CAPACITY_ADD,
    CSI_STORAGE_CAPACITY_UPDATE,
    |o, s| s
        .capacity(&o.metadata.namespace, &o.metadata.name)
        .is_some(),
    |_o| StorageObjectRef::Other,
    upsert_capacity
);
