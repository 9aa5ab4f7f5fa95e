//! The scheduling engine with volumes: storage objects arrive as events, VolumeBinding's
//! Reserve assumes the PersistentVolumes it matched (so two pending pods never count on the
//! same one), a failed bind or a rejection gives them back exactly, and storage events wake
//! the pods that waited for a volume (or for storage capacity).

use std::time::Duration;

use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{
    Node, PersistentVolume, PersistentVolumeClaim, Pod, StorageClass, parse_node, parse_pod,
};
use sched_core::scheduler::{
    ClusterEvent, ObjectKey, PermitDecision, PermitPlugin, QueueName, Scheduler, Step,
};
use sched_core::snapshot::Snapshot;
use serde_json::json;

const T0: Duration = Duration::ZERO;
const SECOND: Duration = Duration::from_secs(1);

fn node(name: &str) -> Node {
    parse_node(
        &json!({
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "status": {
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True"}]
            }
        })
        .to_string(),
    )
    .unwrap()
}

/// A pod with one claim.
fn pod(name: &str, claim: &str) -> Pod {
    parse_pod(
        &json!({
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": {
                "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m"}}}],
                "volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
            }
        })
        .to_string(),
    )
    .unwrap()
}

/// A local PersistentVolume of class `local` on `node`.
fn local_pv(name: &str, node: &str) -> PersistentVolume {
    serde_json::from_value(json!({
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "10Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "local": {"path": "/mnt/disk"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}
            ]}]}}
        },
        "status": {"phase": "Available"}
    }))
    .unwrap()
}

/// An unbound claim of class `local`.
fn claim(name: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "resources": {"requests": {"storage": "5Gi"}}
        },
        "status": {"phase": "Pending"}
    }))
    .unwrap()
}

fn wait_for_first_consumer() -> StorageClass {
    serde_json::from_value(json!({
        "kind": "StorageClass",
        "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer"
    }))
    .unwrap()
}

/// Two nodes, the class, one PV on node-a and claims `c1`, `c2`, all through events.
fn scheduler() -> Scheduler {
    let snapshot = Snapshot::from_objects(vec![node("node-a"), node("node-b")], vec![]).unwrap();
    let config = SchedulerConfiguration::v1_34_default();
    let mut s = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1).unwrap();
    s.apply(ClusterEvent::add(wait_for_first_consumer()), T0);
    s.apply(ClusterEvent::add(local_pv("pv-1", "node-a")), T0);
    s.apply(ClusterEvent::add(claim("c1")), T0);
    s.apply(ClusterEvent::add(claim("c2")), T0);
    s
}

/// The claim `pv` is bound to as the default profile's VolumeBinding sees it (with what its
/// Reserve assumed).
fn claim_ref(s: &Scheduler, pv: &str) -> Option<String> {
    let binder = s
        .profile("default-scheduler")
        .and_then(|p| p.volume_binder())
        .expect("VolumeBinding");
    let pv = s
        .snapshot()
        .storage()
        .pv_seen_by(binder, pv)
        .expect("pv held");
    pv.spec
        .claim_ref
        .as_ref()
        .map(|r| format!("{}/{}", r.namespace, r.name))
}

/// Places p1 (claim c1) and returns the step.
fn place_p1(s: &mut Scheduler) {
    s.apply(ClusterEvent::add(pod("p1", "c1")), T0);
    match s.schedule_one(T0) {
        Step::Bind {
            pod, node, volumes, ..
        } => {
            assert_eq!((pod.as_str(), node.as_str()), ("default/p1", "node-a"));
            let bound: Vec<(&str, Option<&str>)> = volumes
                .bindings()
                .iter()
                .map(|pv| {
                    (
                        pv.metadata.name.as_str(),
                        pv.spec.claim_ref.as_ref().map(|r| r.name.as_str()),
                    )
                })
                .collect();
            assert_eq!(bound, vec![("pv-1", Some("c1"))]);
            assert!(volumes.provisions().is_empty());
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(claim_ref(s, "pv-1").as_deref(), Some("default/c1"));
}

#[test]
fn a_reserved_volume_is_not_counted_twice_and_comes_back_when_the_bind_fails() {
    let mut s = scheduler();
    place_p1(&mut s);
    // p2 needs a PV too: the only one is reserved for c1.
    s.apply(ClusterEvent::add(pod("p2", "c2")), T0);
    match s.schedule_one(T0) {
        Step::Unschedulable { pod, error, .. } => {
            assert_eq!(pod, "default/p2");
            let message = error.to_string();
            assert!(
                message.contains("didn't find available persistent volumes to bind"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    // p1's bind fails: the PV is free again, and p2 (waiting for a volume) is woken: it moves
    // to the backoff queue (its one-second backoff from the first attempt), as kube moves it.
    s.finish_binding("default/p1", Err("conflict".into()), T0);
    assert_eq!(claim_ref(&s, "pv-1"), None);
    assert_eq!(s.queue().position("default/p2"), Some(QueueName::Backoff));
    // p1 is deleted meanwhile; p2 takes the PV once its backoff ends.
    s.apply(ClusterEvent::Delete(ObjectKey::pod("default/p1")), T0);
    match s.schedule_one(SECOND) {
        Step::Bind {
            pod, node, volumes, ..
        } => {
            assert_eq!((pod.as_str(), node.as_str()), ("default/p2", "node-a"));
            assert_eq!(volumes.bindings()[0].metadata.name, "pv-1");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(claim_ref(&s, "pv-1").as_deref(), Some("default/c2"));
}

#[test]
fn a_new_volume_wakes_the_pod_that_waited_for_one() {
    let mut s = scheduler();
    place_p1(&mut s);
    s.finish_binding("default/p1", Ok(()), T0);
    s.apply(ClusterEvent::add(pod("p2", "c2")), T0);
    assert!(matches!(s.schedule_one(T0), Step::Unschedulable { .. }));
    assert!(matches!(s.schedule_one(T0), Step::Idle { .. }));
    // It waits in the unschedulable pool until a new PV (on node-b) arrives.
    assert_eq!(
        s.queue().position("default/p2"),
        Some(QueueName::Unschedulable)
    );
    s.apply(ClusterEvent::add(local_pv("pv-2", "node-b")), T0);
    assert_eq!(s.queue().position("default/p2"), Some(QueueName::Backoff));
    match s.schedule_one(SECOND) {
        Step::Bind {
            pod, node, volumes, ..
        } => {
            assert_eq!((pod.as_str(), node.as_str()), ("default/p2", "node-b"));
            assert_eq!(volumes.bindings()[0].metadata.name, "pv-2");
        }
        other => panic!("{other:?}"),
    }
}

/// A permit plugin that holds every pod.
struct Hold;

impl PermitPlugin for Hold {
    fn name(&self) -> &str {
        "Hold"
    }
    fn permit(&self, _pod: &Pod, _node: &str) -> PermitDecision {
        PermitDecision::Wait(Duration::from_secs(30))
    }
}

#[test]
fn a_rejected_or_deleted_waiting_pod_gives_its_volume_back() {
    let snapshot = Snapshot::from_objects(vec![node("node-a")], vec![]).unwrap();
    let config = SchedulerConfiguration::v1_34_default();
    let mut s = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1)
        .unwrap()
        .with_permit(Hold);
    s.apply(ClusterEvent::add(wait_for_first_consumer()), T0);
    s.apply(ClusterEvent::add(local_pv("pv-1", "node-a")), T0);
    s.apply(ClusterEvent::add(claim("c1")), T0);
    s.apply(ClusterEvent::add(pod("p1", "c1")), T0);
    assert!(matches!(s.schedule_one(T0), Step::Waiting { .. }));
    assert_eq!(claim_ref(&s, "pv-1").as_deref(), Some("default/c1"));
    assert!(s.reject("default/p1", "Hold", "no", T0));
    assert_eq!(claim_ref(&s, "pv-1"), None);

    // Waiting again (after the 5-minute stay), then deleted: the volume comes back too.
    let later = Duration::from_secs(301);
    assert!(matches!(s.schedule_one(later), Step::Waiting { .. }));
    assert_eq!(claim_ref(&s, "pv-1").as_deref(), Some("default/c1"));
    s.apply(ClusterEvent::Delete(ObjectKey::pod("default/p1")), later);
    assert_eq!(claim_ref(&s, "pv-1"), None);
}

#[test]
fn a_newer_volume_from_the_informer_is_not_overwritten_by_the_undo() {
    let mut s = scheduler();
    place_p1(&mut s);
    // The informer reports the PV bound to another claim (someone else's binding won).
    let mut newer = local_pv("pv-1", "node-a");
    newer.spec.claim_ref = serde_json::from_value(json!({"namespace": "other", "name": "x"})).ok();
    s.apply(ClusterEvent::update(newer), T0);
    s.finish_binding("default/p1", Err("conflict".into()), T0);
    assert_eq!(claim_ref(&s, "pv-1").as_deref(), Some("other/x"));
}

#[test]
fn storage_objects_come_and_go_through_events() {
    let mut s = scheduler();
    assert!(s.snapshot().storage().class("local").is_some());
    s.apply(
        ClusterEvent::Delete(ObjectKey::StorageClass("local".into())),
        T0,
    );
    s.apply(
        ClusterEvent::Delete(ObjectKey::PersistentVolume("pv-1".into())),
        T0,
    );
    s.apply(
        ClusterEvent::Delete(ObjectKey::PersistentVolumeClaim("default/c1".into())),
        T0,
    );
    let st = s.snapshot().storage();
    assert!(st.class("local").is_none());
    assert!(st.pv("pv-1").is_none());
    assert!(st.pvc("default", "c1").is_none());
    assert!(st.pvc("default", "c2").is_some());
}

/// A CSI volume `name` of driver `ebs.csi.aws.com`, bound to claim `name` in `default`, and
/// the claim.
fn csi_volume(name: &str) -> (PersistentVolume, PersistentVolumeClaim) {
    let pv = serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "csi": {"driver": "ebs.csi.aws.com", "volumeHandle": name},
            "claimRef": {"namespace": "default", "name": name}
        },
        "status": {"phase": "Bound"}
    }))
    .unwrap();
    let claim = serde_json::from_value(json!({
        "metadata": {
            "name": name,
            "namespace": "default",
            "annotations": {"pv.kubernetes.io/bind-completed": "yes"}
        },
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "resources": {"requests": {"storage": "1Gi"}},
            "volumeName": name
        },
        "status": {"phase": "Bound"}
    }))
    .unwrap();
    (pv, claim)
}

fn csi_node(name: &str, limit: i32) -> sched_core::model::CsiNode {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "spec": {"drivers": [
            {"name": "ebs.csi.aws.com", "nodeID": name, "allocatable": {"count": limit}}
        ]}
    }))
    .unwrap()
}

/// NodeVolumeLimits keeps each node's attached volumes between pods; the count must follow
/// every change: a pod placed, a pod deleted, a CSINode's limit raised.
#[test]
fn volume_limits_follow_pods_and_csinodes() {
    let snapshot = Snapshot::from_objects(vec![node("node-a")], vec![]).unwrap();
    let config = SchedulerConfiguration::v1_34_default();
    let mut s = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1).unwrap();
    s.apply(ClusterEvent::add(csi_node("node-a", 2)), T0);
    for i in 1..=4 {
        let (pv, claim) = csi_volume(&format!("v{i}"));
        s.apply(ClusterEvent::add(pv), T0);
        s.apply(ClusterEvent::add(claim), T0);
    }
    let bind = |s: &mut Scheduler, name: &str, claim: &str, now: Duration| {
        s.apply(ClusterEvent::add(pod(name, claim)), now);
        match s.schedule_one(now) {
            Step::Bind { pod, .. } => s.finish_binding(&pod, Ok(()), now),
            other => panic!("{name}: {other:?}"),
        }
    };
    bind(&mut s, "p1", "v1", T0);
    bind(&mut s, "p2", "v2", T0);
    // The node attaches two volumes, its limit: a third does not fit.
    s.apply(ClusterEvent::add(pod("p3", "v3")), T0);
    match s.schedule_one(T0) {
        Step::Unschedulable { error, .. } => {
            assert!(
                error.to_string().contains("exceed max volume count"),
                "{error}"
            );
        }
        other => panic!("{other:?}"),
    }
    // p1 goes away: p3 fits.
    s.apply(ClusterEvent::Delete(ObjectKey::pod("default/p1")), T0);
    match s.schedule_one(SECOND) {
        Step::Bind { pod, .. } => {
            assert_eq!(pod, "default/p3");
            s.finish_binding(&pod, Ok(()), SECOND);
        }
        other => panic!("{other:?}"),
    }
    // Full again; the CSINode's limit rises to 3: p4 fits.
    s.apply(ClusterEvent::add(pod("p4", "v4")), SECOND);
    assert!(matches!(s.schedule_one(SECOND), Step::Unschedulable { .. }));
    s.apply(ClusterEvent::update(csi_node("node-a", 3)), SECOND);
    match s.schedule_one(3 * SECOND) {
        Step::Bind { pod, .. } => assert_eq!(pod, "default/p4"),
        other => panic!("{other:?}"),
    }
}

/// A claim's label selector limits the PersistentVolumes it may be matched to (kube's
/// `FindMatchingVolume`): the claim asks for `tier: slow`, so only node-b's PV fits, though
/// node-a's is as good otherwise.
#[test]
fn a_claim_selector_picks_the_volume() {
    let mut s = scheduler();
    let mut slow = local_pv("pv-slow", "node-b");
    slow.metadata.labels.insert("tier".into(), "slow".into());
    s.apply(ClusterEvent::add(slow), T0);
    let mut c = claim("c3");
    c.spec.selector = serde_json::from_value(json!({"matchLabels": {"tier": "slow"}})).ok();
    assert!(c.spec.selector.is_some());
    s.apply(ClusterEvent::add(c), T0);
    s.apply(ClusterEvent::add(pod("p3", "c3")), T0);
    match s.schedule_one(T0) {
        Step::Bind {
            pod, node, volumes, ..
        } => {
            assert_eq!((pod.as_str(), node.as_str()), ("default/p3", "node-b"));
            assert_eq!(volumes.bindings()[0].metadata.name, "pv-slow");
        }
        other => panic!("{other:?}"),
    }
    // Without a matching PV the claim finds none: pv-1 (node-a) has no `tier` label.
    let mut c = claim("c4");
    c.spec.selector = serde_json::from_value(json!({"matchLabels": {"tier": "slow"}})).ok();
    s.apply(ClusterEvent::add(c), T0);
    s.apply(ClusterEvent::add(pod("p4", "c4")), T0);
    assert!(matches!(s.schedule_one(T0), Step::Unschedulable { .. }));
}

/// A class whose CSI driver publishes storage capacity, a driver opted in, and a claim of 5Gi
/// to provision.
fn capacity_scheduler() -> Scheduler {
    let snapshot = Snapshot::from_objects(vec![node("node-a"), node("node-b")], vec![]).unwrap();
    let config = SchedulerConfiguration::v1_34_default();
    let mut s = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1).unwrap();
    s.apply(
        ClusterEvent::add(
            serde_json::from_value::<sched_core::model::StorageClass>(json!({
                "kind": "StorageClass",
                "metadata": {"name": "local"},
                "provisioner": "hostpath.csi.k8s.io",
                "volumeBindingMode": "WaitForFirstConsumer"
            }))
            .unwrap(),
        ),
        T0,
    );
    s.apply(
        ClusterEvent::add(
            serde_json::from_value::<sched_core::model::CsiDriver>(json!({
                "kind": "CSIDriver",
                "metadata": {"name": "hostpath.csi.k8s.io"},
                "spec": {"storageCapacity": true}
            }))
            .unwrap(),
        ),
        T0,
    );
    s.apply(ClusterEvent::add(claim("c1")), T0);
    s
}

/// Capacity of class `local` reachable from `node`.
fn capacity(name: &str, node: &str, size: &str) -> sched_core::model::CsiStorageCapacity {
    serde_json::from_value(json!({
        "kind": "CSIStorageCapacity",
        "metadata": {"name": name, "namespace": "kube-system"},
        "storageClassName": "local",
        "nodeTopology": {"matchLabels": {"kubernetes.io/hostname": node}},
        "capacity": size
    }))
    .unwrap()
}

#[test]
fn new_storage_capacity_wakes_the_pod_that_had_no_room() {
    let mut s = capacity_scheduler();
    // Too small on node-a, none on node-b.
    s.apply(ClusterEvent::add(capacity("cap-a", "node-a", "1Gi")), T0);
    s.apply(ClusterEvent::add(pod("p1", "c1")), T0);
    match s.schedule_one(T0) {
        Step::Unschedulable { pod, error, .. } => {
            assert_eq!(pod, "default/p1");
            // kube v1.34 prints PostFilter's message after the reasons: nothing to deallocate,
            // and storage is nothing preemption can free.
            assert_eq!(
                error.to_string(),
                "0/2 nodes are available: 2 node(s) did not have enough free storage. no new \
                 claims to deallocate, preemption: 0/2 nodes are available: 2 Preemption is not \
                 helpful for scheduling."
            );
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(s.schedule_one(T0), Step::Idle { .. }));
    assert_eq!(
        s.queue().position("default/p1"),
        Some(QueueName::Unschedulable)
    );
    // A driver added, a capacity deleted: kube's VolumeBinding waits for neither.
    s.apply(
        ClusterEvent::add(
            serde_json::from_value::<sched_core::model::CsiDriver>(json!({
                "kind": "CSIDriver",
                "metadata": {"name": "other.csi.k8s.io"}
            }))
            .unwrap(),
        ),
        T0,
    );
    s.apply(
        ClusterEvent::Delete(ObjectKey::CsiStorageCapacity("kube-system/none".into())),
        T0,
    );
    assert_eq!(
        s.queue().position("default/p1"),
        Some(QueueName::Unschedulable)
    );
    // Room on node-b arrives.
    s.apply(ClusterEvent::add(capacity("cap-b", "node-b", "10Gi")), T0);
    assert_eq!(s.queue().position("default/p1"), Some(QueueName::Backoff));
    match s.schedule_one(SECOND) {
        Step::Bind {
            pod, node, volumes, ..
        } => {
            assert_eq!((pod.as_str(), node.as_str()), ("default/p1", "node-b"));
            assert_eq!(volumes.provisions()[0].metadata.name, "c1");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_driver_that_stops_publishing_capacity_wakes_the_pod() {
    let mut s = capacity_scheduler();
    s.apply(ClusterEvent::add(pod("p1", "c1")), T0);
    assert!(matches!(s.schedule_one(T0), Step::Unschedulable { .. }));
    assert!(matches!(s.schedule_one(T0), Step::Idle { .. }));
    s.apply(
        ClusterEvent::update(
            serde_json::from_value::<sched_core::model::CsiDriver>(json!({
                "kind": "CSIDriver",
                "metadata": {"name": "hostpath.csi.k8s.io"},
                "spec": {"storageCapacity": false}
            }))
            .unwrap(),
        ),
        T0,
    );
    assert_eq!(s.queue().position("default/p1"), Some(QueueName::Backoff));
    assert!(matches!(s.schedule_one(SECOND), Step::Bind { .. }));
    // Deleting the driver leaves nothing to check either.
    s.apply(
        ClusterEvent::Delete(ObjectKey::CsiDriver("hostpath.csi.k8s.io".into())),
        SECOND,
    );
    assert!(
        s.snapshot()
            .storage()
            .csi_driver("hostpath.csi.k8s.io")
            .is_none()
    );
}

/// `pod` with this `schedulerName`.
fn pod_of(name: &str, claim: &str, scheduler: &str) -> Pod {
    let mut p = pod(name, claim);
    p.spec.scheduler_name = scheduler.into();
    p
}

/// The nodes where the profile serving `scheduler` finds `pod` feasible now.
fn feasible(s: &Scheduler, scheduler: &str, pod: &Pod) -> Vec<String> {
    let profile = s.profile(scheduler).expect("profile");
    let mut cache = profile.create_cache();
    match profile.schedule(&mut cache, pod, s.snapshot()) {
        Ok(_) => {
            let table = profile.last_scores(&cache);
            let mut names: Vec<String> = (0..table.len())
                .map(|i| s.snapshot().node_infos()[table.row(i).0].name().to_string())
                .collect();
            names.sort();
            names
        }
        Err(_) => Vec::new(),
    }
}

/// kube builds a VolumeBinding, and with it a volume binder and its assume caches, per
/// profile: what one profile's Reserve assumed, another profile's VolumeBinding does not see
/// until the informer brings the API server's version (kube v1.34.4's answers in the recorded
/// case `claim-shared-after-reserve`), and a profile without VolumeBinding reserves nothing.
#[test]
fn each_profile_reserves_volumes_for_its_own_volume_binding() {
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         profiles:\n- schedulerName: default-scheduler\n- schedulerName: batch\n\
         - schedulerName: plain\n  plugins:\n    multiPoint:\n      disabled:\n\
         \x20     - name: VolumeBinding\n",
    )
    .unwrap();
    let snapshot = Snapshot::from_objects(vec![node("node-a"), node("node-b")], vec![]).unwrap();
    let mut s = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1).unwrap();
    let binders: Vec<_> = ["default-scheduler", "batch"]
        .iter()
        .map(|n| s.profile(n).unwrap().volume_binder().unwrap())
        .collect();
    assert_ne!(binders[0], binders[1]);
    assert!(s.profile("plain").unwrap().volume_binder().is_none());
    s.apply(ClusterEvent::add(wait_for_first_consumer()), T0);
    s.apply(ClusterEvent::add(local_pv("pv-1", "node-a")), T0);
    s.apply(ClusterEvent::add(claim("c1")), T0);
    place_p1(&mut s);
    s.apply(ClusterEvent::add(local_pv("pv-2", "node-b")), T0);
    // p1's profile sees pv-1 pre-bound to c1: c1 goes to node-a or nowhere. The batch
    // profile sees both volumes available.
    let twin = |scheduler| pod_of("p2", "c1", scheduler);
    assert_eq!(
        feasible(&s, "default-scheduler", &twin("default-scheduler")),
        ["node-a"]
    );
    assert_eq!(feasible(&s, "batch", &twin("batch")), ["node-a", "node-b"]);
    // A profile without VolumeBinding places the pod and reserves no volume.
    s.apply(ClusterEvent::add(pod_of("p3", "c1", "plain")), T0);
    match s.schedule_one(T0) {
        Step::Bind { pod, volumes, .. } => {
            assert_eq!(pod, "default/p3");
            assert!(volumes.is_empty());
        }
        other => panic!("{other:?}"),
    }
    // p1's binding written, the informer's version reaches every profile.
    let mut bound = local_pv("pv-1", "node-a");
    bound.spec.claim_ref =
        serde_json::from_value(json!({"namespace": "default", "name": "c1"})).ok();
    s.apply(ClusterEvent::update(bound), T0);
    assert_eq!(feasible(&s, "batch", &twin("batch")), ["node-a"]);
    assert!(s.snapshot().storage().assumed_pvs(binders[0]).is_empty());
}
