//! Cluster events and which of them can make a rejected pod schedulable (kube's
//! `EventsToRegister` of each plugin, keyed here by the reason a node rejected the pod).

use crate::framework::Reason;
use crate::model::{
    Cluster, CsiDriver, CsiNode, CsiStorageCapacity, Namespace, Node, PersistentVolume,
    PersistentVolumeClaim, Pod, PodDisruptionBudget, StorageClass,
};

/// A change to the cluster, as an informer reports it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ClusterEvent {
    /// A node appeared.
    NodeAdd(Node),
    /// A node changed (the whole new object).
    NodeUpdate(Node),
    /// A node went away (by name).
    NodeDelete(String),
    /// A pod appeared: pending (no `spec.nodeName`) pods of one of the scheduler's profiles
    /// are queued; bound pods join the snapshot.
    PodAdd(Pod),
    /// A pod changed (the whole new object).
    PodUpdate(Pod),
    /// A pod went away (by `namespace/name`).
    PodDelete(String),
    /// A PersistentVolume appeared.
    PersistentVolumeAdd(PersistentVolume),
    /// A PersistentVolume changed (the whole new object).
    PersistentVolumeUpdate(PersistentVolume),
    /// A PersistentVolume went away (by name).
    PersistentVolumeDelete(String),
    /// A PersistentVolumeClaim appeared.
    PersistentVolumeClaimAdd(PersistentVolumeClaim),
    /// A PersistentVolumeClaim changed (the whole new object).
    PersistentVolumeClaimUpdate(PersistentVolumeClaim),
    /// A PersistentVolumeClaim went away (by `namespace/name`).
    PersistentVolumeClaimDelete(String),
    /// A StorageClass appeared.
    StorageClassAdd(StorageClass),
    /// A StorageClass changed (the whole new object).
    StorageClassUpdate(StorageClass),
    /// A StorageClass went away (by name).
    StorageClassDelete(String),
    /// A CSINode appeared.
    CsiNodeAdd(CsiNode),
    /// A CSINode changed (the whole new object).
    CsiNodeUpdate(CsiNode),
    /// A CSINode went away (by name, the node's).
    CsiNodeDelete(String),
    /// A CSIDriver appeared.
    CsiDriverAdd(CsiDriver),
    /// A CSIDriver changed (the whole new object).
    CsiDriverUpdate(CsiDriver),
    /// A CSIDriver went away (by name).
    CsiDriverDelete(String),
    /// A CSIStorageCapacity appeared.
    CsiStorageCapacityAdd(CsiStorageCapacity),
    /// A CSIStorageCapacity changed (the whole new object).
    CsiStorageCapacityUpdate(CsiStorageCapacity),
    /// A CSIStorageCapacity went away (by `namespace/name`).
    CsiStorageCapacityDelete(String),
    /// A Namespace appeared (its labels are what `namespaceSelector` in pod affinity terms
    /// reads).
    NamespaceAdd(Namespace),
    /// A Namespace changed (the whole new object).
    NamespaceUpdate(Namespace),
    /// A Namespace went away (by name).
    NamespaceDelete(String),
    /// A PodDisruptionBudget appeared; preemption respects it.
    PdbAdd(PodDisruptionBudget),
    /// A PodDisruptionBudget changed (the whole new object, its status included).
    PdbUpdate(PodDisruptionBudget),
    /// A PodDisruptionBudget went away (by `namespace/name`).
    PdbDelete(String),
}

impl ClusterEvent {
    /// What informers report when they first list `cluster`: every object but the pending
    /// pods, as add events, in this order: namespaces, nodes, bound pods, StorageClasses,
    /// PersistentVolumes, claims, CSINodes, CSIDrivers, CSIStorageCapacities,
    /// PodDisruptionBudgets. The objects are taken out of `cluster`; its pending pods stay
    /// there for the caller to add in its own order, and its workloads (which have no events)
    /// go to the snapshot ([`Snapshot::set_workloads`](crate::snapshot::Snapshot::set_workloads)).
    ///
    /// ```
    /// use sched_core::model::{load_node_list, Cluster};
    /// use sched_core::scheduler::ClusterEvent;
    ///
    /// let mut cluster = Cluster::default();
    /// cluster.nodes = load_node_list(r#"{"items": [{"metadata": {"name": "n1"}}]}"#)?;
    /// let events = ClusterEvent::listing(&mut cluster);
    /// assert!(matches!(&events[..], [ClusterEvent::NodeAdd(n)] if n.name() == "n1"));
    /// assert!(cluster.nodes.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn listing(cluster: &mut Cluster) -> Vec<ClusterEvent> {
        let storage = std::mem::take(&mut cluster.storage);
        let mut events = Vec::new();
        events.extend(cluster.namespaces.drain(..).map(ClusterEvent::NamespaceAdd));
        events.extend(cluster.nodes.drain(..).map(ClusterEvent::NodeAdd));
        events.extend(cluster.bound.drain(..).map(ClusterEvent::PodAdd));
        events.extend(
            storage
                .storage_classes
                .into_iter()
                .map(ClusterEvent::StorageClassAdd),
        );
        events.extend(
            storage
                .persistent_volumes
                .into_iter()
                .map(ClusterEvent::PersistentVolumeAdd),
        );
        events.extend(
            storage
                .persistent_volume_claims
                .into_iter()
                .map(ClusterEvent::PersistentVolumeClaimAdd),
        );
        events.extend(storage.csi_nodes.into_iter().map(ClusterEvent::CsiNodeAdd));
        events.extend(
            storage
                .csi_drivers
                .into_iter()
                .map(ClusterEvent::CsiDriverAdd),
        );
        events.extend(
            storage
                .csi_storage_capacities
                .into_iter()
                .map(ClusterEvent::CsiStorageCapacityAdd),
        );
        events.extend(cluster.pdbs.drain(..).map(ClusterEvent::PdbAdd));
        events
    }
}

/// Kinds of cluster change, as bits (kube's `ClusterEvent` resource and action types).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EventMask(pub(crate) u32);

impl EventMask {
    /// A node was added.
    pub const NODE_ADD: EventMask = EventMask(1);
    /// A node was deleted.
    pub const NODE_DELETE: EventMask = EventMask(1 << 1);
    /// A node's allocatable resources changed.
    pub const NODE_ALLOCATABLE: EventMask = EventMask(1 << 2);
    /// A node's labels changed.
    pub const NODE_LABEL: EventMask = EventMask(1 << 3);
    /// A node's taints or `spec.unschedulable` changed.
    pub const NODE_TAINT: EventMask = EventMask(1 << 4);
    /// A node's conditions changed.
    pub const NODE_CONDITION: EventMask = EventMask(1 << 5);
    /// A node's images or other fields changed.
    pub const NODE_OTHER: EventMask = EventMask(1 << 6);
    /// A pod bound to a node was added.
    pub const ASSIGNED_POD_ADD: EventMask = EventMask(1 << 7);
    /// A pod bound to a node changed (labels, requests).
    pub const ASSIGNED_POD_UPDATE: EventMask = EventMask(1 << 8);
    /// A pod bound to a node was deleted.
    pub const ASSIGNED_POD_DELETE: EventMask = EventMask(1 << 9);
    /// A pod waited in the unschedulable pool for the longest time allowed (5 minutes).
    pub const UNSCHEDULABLE_TIMEOUT: EventMask = EventMask(1 << 10);
    /// A PersistentVolume was added.
    pub const PV_ADD: EventMask = EventMask(1 << 11);
    /// A PersistentVolume changed.
    pub const PV_UPDATE: EventMask = EventMask(1 << 12);
    /// A PersistentVolumeClaim was added.
    pub const PVC_ADD: EventMask = EventMask(1 << 13);
    /// A PersistentVolumeClaim changed.
    pub const PVC_UPDATE: EventMask = EventMask(1 << 14);
    /// A StorageClass was added.
    pub const STORAGE_CLASS_ADD: EventMask = EventMask(1 << 15);
    /// A StorageClass changed.
    pub const STORAGE_CLASS_UPDATE: EventMask = EventMask(1 << 16);
    /// A CSINode was added.
    pub const CSI_NODE_ADD: EventMask = EventMask(1 << 17);
    /// A CSINode changed.
    pub const CSI_NODE_UPDATE: EventMask = EventMask(1 << 18);
    /// A storage object was deleted (no plugin waits for it; kept for completeness).
    pub const STORAGE_DELETE: EventMask = EventMask(1 << 19);
    /// A Namespace was added or its labels changed.
    pub const NAMESPACE: EventMask = EventMask(1 << 20);
    /// A CSIDriver was added.
    pub const CSI_DRIVER_ADD: EventMask = EventMask(1 << 21);
    /// A CSIDriver changed.
    pub const CSI_DRIVER_UPDATE: EventMask = EventMask(1 << 22);
    /// A CSIStorageCapacity was added.
    pub const CSI_STORAGE_CAPACITY_ADD: EventMask = EventMask(1 << 23);
    /// A CSIStorageCapacity changed.
    pub const CSI_STORAGE_CAPACITY_UPDATE: EventMask = EventMask(1 << 24);
    /// Every kind.
    pub const ALL: EventMask = EventMask(u32::MAX);

    /// Whether the two masks share a kind.
    pub fn intersects(self, other: EventMask) -> bool {
        self.0 & other.0 != 0
    }

    /// The union.
    #[must_use]
    pub fn union(self, other: EventMask) -> EventMask {
        EventMask(self.0 | other.0)
    }

    /// Whether no kind is set.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
}

impl std::ops::BitOr for EventMask {
    type Output = EventMask;
    fn bitor(self, rhs: EventMask) -> EventMask {
        self.union(rhs)
    }
}

/// The events that can make a node that rejected a pod for `reason` accept it (the events the
/// rejecting plugin registers in kube). A pod rejected for several reasons waits for any of
/// their events. Custom reasons wait for any event.
pub fn events_for(reason: &Reason) -> EventMask {
    use EventMask as E;
    let node_add = E::NODE_ADD;
    match reason {
        Reason::Insufficient(_) => {
            node_add | E::NODE_ALLOCATABLE | E::ASSIGNED_POD_DELETE | E::ASSIGNED_POD_UPDATE
        }
        Reason::PortsConflict | Reason::DiskConflict => node_add | E::ASSIGNED_POD_DELETE,
        Reason::NodeNameMismatch => node_add,
        Reason::NodeSelectorMismatch
        | Reason::EnforcedNodeAffinityMismatch
        | Reason::LabelPresenceViolated => node_add | E::NODE_LABEL,
        Reason::UntoleratedTaint(_) | Reason::Unschedulable => node_add | E::NODE_TAINT,
        Reason::NotReady
        | Reason::NetworkUnavailable
        | Reason::MemoryPressure
        | Reason::DiskPressure
        | Reason::PidPressure => node_add | E::NODE_CONDITION | E::NODE_TAINT,
        // InterPodAffinity also registers Namespace add and label update (namespaceSelector).
        Reason::PodAffinityRulesNotMatch => {
            node_add | E::NODE_LABEL | E::ASSIGNED_POD_ADD | E::ASSIGNED_POD_UPDATE | E::NAMESPACE
        }
        Reason::ServiceAffinityViolated => {
            node_add | E::NODE_LABEL | E::ASSIGNED_POD_ADD | E::ASSIGNED_POD_UPDATE
        }
        Reason::PodAntiAffinityRulesNotMatch | Reason::ExistingPodsAntiAffinityRulesNotMatch => {
            node_add
                | E::NODE_LABEL
                | E::ASSIGNED_POD_DELETE
                | E::ASSIGNED_POD_UPDATE
                | E::NAMESPACE
        }
        Reason::TopologySpreadConstraintsNotMatch | Reason::TopologySpreadMissingLabel => {
            node_add
                | E::NODE_LABEL
                | E::NODE_DELETE
                | E::NODE_TAINT
                | E::ASSIGNED_POD_ADD
                | E::ASSIGNED_POD_UPDATE
                | E::ASSIGNED_POD_DELETE
        }
        // VolumeZone: a new StorageClass, claim or PV (or a PV's labels), a node's labels.
        Reason::VolumeZoneConflict => {
            node_add
                | E::NODE_LABEL
                | E::NODE_TAINT
                | E::STORAGE_CLASS_ADD
                | E::PVC_ADD
                | E::PVC_UPDATE
                | E::PV_ADD
                | E::PV_UPDATE
        }
        // VolumeBinding (and the claim problems its PreFilter finds): any storage object
        // added or changed, a node's labels, a CSINode, a CSIDriver changed, a
        // CSIStorageCapacity added or changed (kube registers CSIDriver Update only).
        Reason::VolumeBinding(_) | Reason::UnboundImmediateClaims | Reason::Volume(_) => {
            node_add
                | E::NODE_LABEL
                | E::NODE_TAINT
                | E::STORAGE_CLASS_ADD
                | E::STORAGE_CLASS_UPDATE
                | E::PVC_ADD
                | E::PVC_UPDATE
                | E::PV_ADD
                | E::PV_UPDATE
                | E::CSI_NODE_ADD
                | E::CSI_NODE_UPDATE
                | E::CSI_DRIVER_UPDATE
                | E::CSI_STORAGE_CAPACITY_ADD
                | E::CSI_STORAGE_CAPACITY_UPDATE
        }
        // NodeVolumeLimits: a CSINode's limits, a pod's volumes going away, a new claim.
        Reason::MaxVolumeCount => {
            node_add
                | E::NODE_ALLOCATABLE
                | E::CSI_NODE_ADD
                | E::CSI_NODE_UPDATE
                | E::ASSIGNED_POD_DELETE
                | E::PVC_ADD
        }
        // VolumeRestrictions (ReadWriteOncePod): the pod using the claim going away, claims.
        Reason::ReadWriteOncePodConflict => {
            node_add | E::ASSIGNED_POD_DELETE | E::PVC_ADD | E::PVC_UPDATE
        }
        // Any predicate may narrow the nodes (kube requeues on the events of the plugins
        // that did); which events can widen them is the predicate's own matter.
        Reason::OutsidePreFilterResult => E::ALL,
        _ => E::ALL,
    }
}

/// What changed between two versions of a node.
pub(crate) fn node_change(old: &Node, new: &Node) -> EventMask {
    let mut m = EventMask::default();
    if old.metadata.labels != new.metadata.labels {
        m = m | EventMask::NODE_LABEL;
    }
    if old.spec.taints != new.spec.taints || old.spec.unschedulable != new.spec.unschedulable {
        m = m | EventMask::NODE_TAINT;
    }
    if old.status.allocatable != new.status.allocatable {
        m = m | EventMask::NODE_ALLOCATABLE;
    }
    if old.status.conditions != new.status.conditions {
        m = m | EventMask::NODE_CONDITION;
    }
    if m.is_empty() && old != new {
        m = EventMask::NODE_OTHER;
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_label_change_is_told_from_a_taint_change() {
        let mut a = Node::default();
        a.metadata.name = "n".into();
        let mut b = a.clone();
        b.metadata.labels.insert("zone".into(), "a".into());
        assert_eq!(node_change(&a, &b), EventMask::NODE_LABEL);
        let mut c = a.clone();
        c.spec.unschedulable = true;
        assert_eq!(node_change(&a, &c), EventMask::NODE_TAINT);
        assert_eq!(node_change(&a, &a), EventMask::default());
        assert!(events_for(&Reason::Unschedulable).intersects(EventMask::NODE_TAINT));
        assert!(!events_for(&Reason::Unschedulable).intersects(EventMask::ASSIGNED_POD_DELETE));
    }

    #[test]
    fn volume_binding_waits_for_capacity_and_driver_changes() {
        let r = Reason::VolumeBinding(crate::framework::VolumeBindingConflicts(
            crate::framework::VolumeBindingConflicts::NOT_ENOUGH_SPACE,
        ));
        let m = events_for(&r);
        assert!(m.intersects(EventMask::CSI_STORAGE_CAPACITY_ADD));
        assert!(m.intersects(EventMask::CSI_STORAGE_CAPACITY_UPDATE));
        assert!(m.intersects(EventMask::CSI_DRIVER_UPDATE));
        assert!(!m.intersects(EventMask::CSI_DRIVER_ADD));
        assert!(!m.intersects(EventMask::STORAGE_DELETE));
        assert!(
            !events_for(&Reason::MaxVolumeCount).intersects(EventMask::CSI_STORAGE_CAPACITY_ADD)
        );
    }
}
