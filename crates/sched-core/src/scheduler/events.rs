//! Cluster events and which of them can make a rejected pod schedulable (kube's
//! `EventsToRegister` of each plugin, keyed here by the reason a node rejected the pod).

use crate::framework::Reason;
use crate::model::Workload;
use crate::model::{
    Cluster, CsiDriver, CsiNode, CsiStorageCapacity, DeviceClass, Namespace, Node,
    PersistentVolume, PersistentVolumeClaim, Pod, PodDisruptionBudget, PodGroup, PodKey,
    ResourceClaim, ResourceSlice, StorageClass,
};

/// A change to the cluster, as an informer reports it: an object added or changed (the whole
/// new object), or gone (its key).
///
/// ```
/// use sched_core::model::Node;
/// use sched_core::scheduler::{ClusterEvent, Object, ObjectKey};
///
/// let mut node = Node::default();
/// node.metadata.name = "n1".into();
/// let added = ClusterEvent::add(node.clone());
/// assert!(matches!(&added, ClusterEvent::Add(Object::Node(n)) if n.name() == "n1"));
/// let gone = ClusterEvent::Delete(ObjectKey::Node("n1".into()));
/// assert_eq!(ClusterEvent::deleted(&Object::Node(node)), gone);
/// ```
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub enum ClusterEvent {
    /// An object appeared. A pending pod (no `spec.nodeName`) of one of the scheduler's
    /// profiles is queued; a bound pod joins the snapshot.
    Add(Object),
    /// An object changed (the whole new object). An update of an object the scheduler does
    /// not know is an add.
    Update(Object),
    /// An object went away.
    Delete(ObjectKey),
}

impl ClusterEvent {
    /// `object` appeared.
    pub fn add(object: impl Into<Object>) -> ClusterEvent {
        ClusterEvent::Add(object.into())
    }

    /// `object` changed.
    pub fn update(object: impl Into<Object>) -> ClusterEvent {
        ClusterEvent::Update(object.into())
    }

    /// `object` went away (an informer's delete carries the last object it saw).
    pub fn deleted(object: &Object) -> ClusterEvent {
        ClusterEvent::Delete(object.key())
    }
}

/// Declares [`Object`] and [`ObjectKey`], one variant per kind, and what connects them.
macro_rules! objects {
    ($($kind:ident($t:ty) $key_doc:literal => |$o:ident| $key:expr;)*) => {
        /// An object the scheduler reads, as informers deliver it.
        // Unboxed, as the events were before: an event is built, moved into the engine and
        // taken apart once; the objects themselves are what the snapshot keeps.
        #[allow(clippy::large_enum_variant)]
        #[derive(Clone, Debug, PartialEq)]
        #[non_exhaustive]
        pub enum Object {
            $(
                #[doc = concat!("A ", stringify!($kind), ".")]
                $kind($t),
            )*
        }

        /// Which object went away: its kind and key.
        #[derive(Clone, Debug, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum ObjectKey {
            $(
                #[doc = concat!("A ", stringify!($kind), ", by ", $key_doc, ".")]
                $kind(key_type!($kind)),
            )*
        }

        impl Object {
            /// The object's kind and key.
            pub fn key(&self) -> ObjectKey {
                match self {
                    $(Object::$kind($o) => ObjectKey::$kind($key),)*
                }
            }
        }

        $(
            impl From<$t> for Object {
                fn from(o: $t) -> Object {
                    Object::$kind(o)
                }
            }
        )*
    };
}

/// The key type of a kind: pods have [`PodKey`]s, the rest their name or `namespace/name`.
macro_rules! key_type {
    (Pod) => {
        PodKey
    };
    ($other:ident) => {
        String
    };
}

objects! {
    Node(Node) "name" => |o| o.metadata.name.clone();
    Pod(Pod) "`namespace/name`" => |o| o.key();
    PersistentVolume(PersistentVolume) "name" => |o| o.metadata.name.clone();
    PersistentVolumeClaim(PersistentVolumeClaim) "`namespace/name`" => |o| o.key();
    StorageClass(StorageClass) "name" => |o| o.metadata.name.clone();
    CsiNode(CsiNode) "name (the node's)" => |o| o.metadata.name.clone();
    CsiDriver(CsiDriver) "name" => |o| o.metadata.name.clone();
    CsiStorageCapacity(CsiStorageCapacity) "`namespace/name`" => |o| o.key();
    Namespace(Namespace) "name" => |o| o.metadata.name.clone();
    PodDisruptionBudget(PodDisruptionBudget) "`namespace/name`" => |o| o.key();
    DeviceClass(DeviceClass) "name" => |o| o.metadata.name.clone();
    ResourceSlice(ResourceSlice) "name" => |o| o.metadata.name.clone();
    ResourceClaim(ResourceClaim) "`namespace/name`" => |o| format!("{}/{}", o.metadata.namespace, o.metadata.name);
    Workload(Workload) "`Kind/namespace/name` (a Service, ReplicationController, ReplicaSet or StatefulSet, as spreading reads it)" => |o| o.key();
    PodGroup(PodGroup) "`namespace/name` (scheduler-plugins' PodGroup: gang scheduling, see [`Scheduler::with_coscheduling`](super::Scheduler::with_coscheduling); ignored without it)" => |o| o.key();
}

impl ObjectKey {
    /// The pod `key` (`namespace/name`).
    pub fn pod(key: impl Into<PodKey>) -> ObjectKey {
        ObjectKey::Pod(key.into())
    }
}

impl ClusterEvent {
    /// What informers report when they first list `cluster`: every object but the pending
    /// pods, as add events, in this order: namespaces, nodes, bound pods, StorageClasses,
    /// PersistentVolumes, claims, CSINodes, CSIDrivers, CSIStorageCapacities,
    /// PodDisruptionBudgets, PodGroups, DeviceClasses, ResourceSlices, ResourceClaims (the
    /// ResourceClaimTemplates stay in `cluster`: the scheduler reads the claims made from
    /// them, not the templates). The objects are taken out of `cluster`; its pending pods stay
    /// there for the caller to add in its own order, and its workloads (which have no events)
    /// go to the snapshot ([`Snapshot::set_workloads`](crate::snapshot::Snapshot::set_workloads)).
    ///
    /// ```
    /// use sched_core::model::{load_node_list, Cluster};
    /// use sched_core::scheduler::{ClusterEvent, Object};
    ///
    /// let mut cluster = Cluster::default();
    /// cluster.nodes = load_node_list(r#"{"items": [{"metadata": {"name": "n1"}}]}"#)?;
    /// let events = ClusterEvent::listing(&mut cluster);
    /// assert!(matches!(&events[..], [ClusterEvent::Add(Object::Node(n))] if n.name() == "n1"));
    /// assert!(cluster.nodes.is_empty());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn listing(cluster: &mut Cluster) -> Vec<ClusterEvent> {
        let storage = std::mem::take(&mut cluster.storage);
        let mut events = Vec::new();
        events.extend(cluster.namespaces.drain(..).map(ClusterEvent::add));
        events.extend(cluster.nodes.drain(..).map(ClusterEvent::add));
        events.extend(cluster.bound.drain(..).map(ClusterEvent::add));
        events.extend(storage.storage_classes.into_iter().map(ClusterEvent::add));
        events.extend(
            storage
                .persistent_volumes
                .into_iter()
                .map(ClusterEvent::add),
        );
        events.extend(
            storage
                .persistent_volume_claims
                .into_iter()
                .map(ClusterEvent::add),
        );
        events.extend(storage.csi_nodes.into_iter().map(ClusterEvent::add));
        events.extend(storage.csi_drivers.into_iter().map(ClusterEvent::add));
        events.extend(
            storage
                .csi_storage_capacities
                .into_iter()
                .map(ClusterEvent::add),
        );
        events.extend(cluster.pdbs.drain(..).map(ClusterEvent::add));
        events.extend(cluster.pod_groups.drain(..).map(ClusterEvent::add));
        let dra = &mut cluster.dra;
        events.extend(dra.device_classes.drain(..).map(ClusterEvent::add));
        events.extend(dra.resource_slices.drain(..).map(ClusterEvent::add));
        events.extend(dra.resource_claims.drain(..).map(ClusterEvent::add));
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
    /// A PodGroup was added or changed, or a pod joined one (Coscheduling's events).
    pub const POD_GROUP: EventMask = EventMask(1 << 25);
    /// A ResourceClaim was added or changed.
    pub const RESOURCE_CLAIM: EventMask = EventMask(1 << 26);
    /// A ResourceSlice was added or changed.
    pub const RESOURCE_SLICE: EventMask = EventMask(1 << 27);
    /// A DeviceClass was added or changed.
    pub const DEVICE_CLASS: EventMask = EventMask(1 << 28);
    /// A DRA object was deleted (DynamicResources does not wait for it).
    pub const DRA_DELETE: EventMask = EventMask(1 << 29);
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

/// What wakes a pod short of resources: NodeResourcesFit's events.
const RESOURCES: EventMask = EventMask(
    EventMask::NODE_ADD.0
        | EventMask::NODE_ALLOCATABLE.0
        | EventMask::ASSIGNED_POD_DELETE.0
        | EventMask::ASSIGNED_POD_UPDATE.0,
);

/// InterPodAffinity's events for a pod whose affinity terms found no match (it also registers
/// Namespace add and label update, for `namespaceSelector`).
const POD_AFFINITY: EventMask = EventMask(
    EventMask::NODE_ADD.0
        | EventMask::NODE_LABEL.0
        | EventMask::ASSIGNED_POD_ADD.0
        | EventMask::ASSIGNED_POD_UPDATE.0
        | EventMask::NAMESPACE.0,
);

/// InterPodAffinity's events for an anti-affinity conflict.
const POD_ANTI_AFFINITY: EventMask = EventMask(
    EventMask::NODE_ADD.0
        | EventMask::NODE_LABEL.0
        | EventMask::ASSIGNED_POD_DELETE.0
        | EventMask::ASSIGNED_POD_UPDATE.0
        | EventMask::NAMESPACE.0,
);

/// PodTopologySpread's events.
const SPREAD: EventMask = EventMask(
    EventMask::NODE_ADD.0
        | EventMask::NODE_LABEL.0
        | EventMask::NODE_DELETE.0
        | EventMask::NODE_TAINT.0
        | EventMask::ASSIGNED_POD_ADD.0
        | EventMask::ASSIGNED_POD_UPDATE.0
        | EventMask::ASSIGNED_POD_DELETE.0,
);

/// VolumeZone's events: a new StorageClass, claim or PV (or a PV's labels), a node's labels.
const VOLUME_ZONE: EventMask = EventMask(
    EventMask::NODE_ADD.0
        | EventMask::NODE_LABEL.0
        | EventMask::NODE_TAINT.0
        | EventMask::STORAGE_CLASS_ADD.0
        | EventMask::PVC_ADD.0
        | EventMask::PVC_UPDATE.0
        | EventMask::PV_ADD.0
        | EventMask::PV_UPDATE.0,
);

/// VolumeBinding's events (and those of the claim problems its PreFilter finds): any storage
/// object added or changed, a node's labels, a CSINode, a CSIDriver changed, a
/// CSIStorageCapacity added or changed (kube registers CSIDriver Update only).
const VOLUME_BINDING: EventMask = EventMask(
    VOLUME_ZONE.0
        | EventMask::STORAGE_CLASS_UPDATE.0
        | EventMask::CSI_NODE_ADD.0
        | EventMask::CSI_NODE_UPDATE.0
        | EventMask::CSI_DRIVER_UPDATE.0
        | EventMask::CSI_STORAGE_CAPACITY_ADD.0
        | EventMask::CSI_STORAGE_CAPACITY_UPDATE.0,
);

/// NodeVolumeLimits' events: a CSINode's limits, a pod's volumes going away, a new claim.
const VOLUME_LIMITS: EventMask = EventMask(
    EventMask::NODE_ADD.0
        | EventMask::NODE_ALLOCATABLE.0
        | EventMask::CSI_NODE_ADD.0
        | EventMask::CSI_NODE_UPDATE.0
        | EventMask::ASSIGNED_POD_DELETE.0
        | EventMask::PVC_ADD.0,
);

/// DynamicResources' events (v1.34, with queueing hints on): a node added or its labels or
/// allocatable changed, a ResourceClaim, ResourceSlice or DeviceClass added or changed.
const DYNAMIC_RESOURCES: EventMask = EventMask(
    EventMask::NODE_ADD.0
        | EventMask::NODE_LABEL.0
        | EventMask::NODE_ALLOCATABLE.0
        | EventMask::RESOURCE_CLAIM.0
        | EventMask::RESOURCE_SLICE.0
        | EventMask::DEVICE_CLASS.0,
);

/// The events that can make a node that rejected a pod for `reason` accept it (the events the
/// rejecting plugin registers in kube). A pod rejected for several reasons waits for any of
/// their events. Custom reasons wait for any event.
pub fn events_for(reason: &Reason) -> EventMask {
    use EventMask as E;
    let node_add = E::NODE_ADD;
    match reason {
        Reason::Insufficient(_) => RESOURCES,
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
        Reason::PodAffinityRulesNotMatch => POD_AFFINITY,
        Reason::ServiceAffinityViolated => {
            node_add | E::NODE_LABEL | E::ASSIGNED_POD_ADD | E::ASSIGNED_POD_UPDATE
        }
        Reason::PodAntiAffinityRulesNotMatch | Reason::ExistingPodsAntiAffinityRulesNotMatch => {
            POD_ANTI_AFFINITY
        }
        Reason::TopologySpreadConstraintsNotMatch | Reason::TopologySpreadMissingLabel => SPREAD,
        Reason::VolumeZoneConflict => VOLUME_ZONE,
        Reason::VolumeBinding(_) | Reason::UnboundImmediateClaims | Reason::Volume(_) => {
            VOLUME_BINDING
        }
        Reason::MaxVolumeCount => VOLUME_LIMITS,
        Reason::DynamicResources(_) => DYNAMIC_RESOURCES,
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
