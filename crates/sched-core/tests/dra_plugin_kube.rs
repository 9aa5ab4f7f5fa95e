//! Cases of kube v1.34's `TestPlugin` (`dynamicresources_test.go`) through the scheduling
//! engine with kube's fixtures (pod `default/my-pod` with the template claim `my-resource`,
//! made as `my-pod-my-resource`; class `my-resource-class`; driver `some-driver`; node
//! `worker`), each with kube's expected PreFilter or Filter status and PostFilter message, as
//! kube's FitError prints them. `wrong-topology`'s PostFilter deallocation is handed to the
//! caller with the step (`Step::Unschedulable::deallocate`).

use std::time::Duration;

use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{Node, Pod, ResourceClaim, ResourceSlice};
use sched_core::plugins::dra::ClaimBinding;
use sched_core::scheduler::{ClusterEvent, Scheduler, Step};
use sched_core::snapshot::Snapshot;
use serde_json::{Value, json};

fn worker() -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": "worker", "labels": {"kubernetes.io/hostname": "worker"}},
        "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap()
}

/// kube's `podWithClaimTemplateInStatus` (or without the status entry).
fn pod(with_status: bool) -> Pod {
    let mut v = json!({
        "metadata": {"name": "my-pod", "namespace": "default", "uid": "1234"},
        "spec": {"containers": [{"name": "c", "image": "pause"}],
                 "resourceClaims": [{"name": "my-resource", "resourceClaimTemplateName": "my-resource"}]}
    });
    if with_status {
        v["status"] = json!({"resourceClaimStatuses": [
            {"name": "my-resource", "resourceClaimName": "my-pod-my-resource"}]});
    }
    serde_json::from_value(v).unwrap()
}

/// kube's `claim`: one request `req-1` for one device of `my-resource-class`, owned by the pod.
fn claim() -> Value {
    json!({
        "metadata": {"name": "my-pod-my-resource", "namespace": "default", "uid": "1234",
                     "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "my-pod",
                                          "uid": "1234", "controller": true}]},
        "spec": {"devices": {"requests": [{"name": "req-1", "exactly": {
            "deviceClassName": "my-resource-class", "allocationMode": "ExactCount", "count": 1}}]}}
    })
}

/// An allocation of `some-driver`'s `instance-1` limited to the node named `on`.
fn allocation(on: &str) -> Value {
    json!({
        "devices": {"results": [{"request": "req-1", "driver": "some-driver",
                                 "pool": "worker", "device": "instance-1"}]},
        "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
            {"key": "metadata.name", "operator": "In", "values": [on]}]}]}
    })
}

fn class() -> Value {
    json!({"metadata": {"name": "my-resource-class"},
           "spec": {"selectors": [{"cel": {"expression": "device.driver == \"some-driver\""}}]}})
}

/// kube's `workerNodeSlice`: one device, `instance-1`, on `worker`.
fn slice() -> ResourceSlice {
    serde_json::from_value(json!({
        "metadata": {"name": "worker-some-driver"},
        "spec": {"driver": "some-driver", "nodeName": "worker",
                 "pool": {"name": "worker", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "instance-1"}]}
    }))
    .unwrap()
}

/// Runs one attempt of `pod` with these objects: `Ok(bind claims)`, or `Err` with the
/// FitError's text or, for a pod kept out by PreEnqueue, `PreEnqueue <plugin>: <message>`.
fn attempt(pod: Pod, objects: Vec<ClusterEvent>) -> Result<Vec<(String, bool)>, String> {
    attempt_on(vec![worker()], pod, objects)
}

/// [`attempt`] on these nodes.
fn attempt_on(
    nodes: Vec<Node>,
    pod: Pod,
    objects: Vec<ClusterEvent>,
) -> Result<Vec<(String, bool)>, String> {
    attempt_bindings(nodes, pod, objects).map(|claims| {
        claims
            .iter()
            .map(|c| (c.name.clone(), c.allocation.is_some()))
            .collect()
    })
}

/// [`attempt_on`], with the claims the bind writes as they are.
fn attempt_bindings(
    nodes: Vec<Node>,
    pod: Pod,
    objects: Vec<ClusterEvent>,
) -> Result<Vec<ClaimBinding>, String> {
    let snapshot = Snapshot::from_objects(nodes, vec![]).unwrap();
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n",
    )
    .unwrap();
    let mut s = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1).unwrap();
    let now = Duration::ZERO;
    for e in objects {
        s.apply(e, now);
    }
    s.apply(ClusterEvent::add(pod), now);
    match s.schedule_one(now) {
        Step::Bind { claims, .. } => Ok(claims),
        Step::Unschedulable { error, .. } => Err(error.to_string()),
        // A Filter error: the attempt fails.
        Step::Failed { error, .. } => Err(format!("Error: {error}")),
        // kube's `preenqueue` expectations.
        Step::Gated {
            plugin, message, ..
        } => Err(format!("PreEnqueue {plugin}: {message}")),
        other => panic!("{other:?}"),
    }
}

fn add_claim(v: Value) -> ClusterEvent {
    ClusterEvent::add(serde_json::from_value::<ResourceClaim>(v).unwrap())
}

fn add_class() -> ClusterEvent {
    ClusterEvent::add(serde_json::from_value::<sched_core::model::DeviceClass>(class()).unwrap())
}

/// kube's `preenqueue` status: the pod is kept out of scheduling.
fn preenqueue(message: &str) -> String {
    format!("PreEnqueue DynamicResources: {message}")
}

/// kube's FitError for a PreFilter rejection (`Diagnosis.PreFilterMsg`) and a PostFilter
/// message, preemption not helping (DynamicResources' rejections are unresolvable).
fn prefilter(message: &str, post: &str) -> String {
    format!(
        "0/1 nodes are available: {message}. {post}, preemption: 0/1 nodes are available: 1 \
         Preemption is not helpful for scheduling."
    )
}

/// kube's FitError for the one node failing Filter with `message`.
fn filter(message: &str, post: &str) -> String {
    format!(
        "0/1 nodes are available: 1 {message}. {post}, preemption: 0/1 nodes are available: 1 \
         Preemption is not helpful for scheduling."
    )
}

#[test]
fn missing_claim() {
    assert_eq!(
        attempt(pod(false), vec![add_class()]),
        Err(preenqueue(
            "pod \"default/my-pod\": ResourceClaim not created yet"
        ))
    );
}

#[test]
fn deleted_claim() {
    let mut c = claim();
    c["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    assert_eq!(
        attempt(pod(true), vec![add_class(), add_claim(c)]),
        Err(preenqueue(
            "resourceclaim \"my-pod-my-resource\" is being deleted"
        ))
    );
}

#[test]
fn wrong_claim() {
    let mut c = claim();
    c["metadata"]["ownerReferences"][0]["uid"] = json!("other");
    assert_eq!(
        attempt(pod(true), vec![add_class(), add_claim(c)]),
        Err(preenqueue(
            "ResourceClaim default/my-pod-my-resource was not created for pod default/my-pod \
             (pod is not owner)"
        ))
    );
}

#[test]
fn no_resources() {
    assert_eq!(
        attempt(pod(true), vec![add_class(), add_claim(claim())]),
        Err(filter(
            "cannot allocate all claims",
            "still not schedulable"
        ))
    );
}

#[test]
fn with_resources() {
    assert_eq!(
        attempt(
            pod(true),
            vec![add_class(), ClusterEvent::add(slice()), add_claim(claim())]
        ),
        Ok(vec![("my-pod-my-resource".to_string(), true)])
    );
}

#[test]
fn exhausted_resources() {
    // Another claim holds the only device.
    let other = other_allocated();
    assert_eq!(
        attempt(
            pod(true),
            vec![
                add_class(),
                ClusterEvent::add(slice()),
                add_claim(claim()),
                add_claim(other)
            ]
        ),
        Err(filter(
            "cannot allocate all claims",
            "still not schedulable"
        ))
    );
}

#[test]
fn missing_class() {
    assert_eq!(
        attempt(
            pod(true),
            vec![ClusterEvent::add(slice()), add_claim(claim())]
        ),
        Err(prefilter(
            "request req-1: device class my-resource-class does not exist",
            "no new claims to deallocate"
        ))
    );
}

#[test]
fn wrong_topology() {
    // kube: Filter "resourceclaim not available on the node", then PostFilter deallocates the
    // claim ("deallocation of ResourceClaim completed"; the claim loses its allocation).
    let mut c = claim();
    c["status"] = json!({"allocation": allocation("other-node")});
    assert_eq!(
        attempt(pod(true), vec![add_class(), add_claim(c)]),
        Err(filter(
            "resourceclaim not available on the node",
            "deallocation of ResourceClaim completed"
        ))
    );
}

#[test]
fn wrong_topology_deallocates_then_the_pod_is_placed() {
    let snapshot = Snapshot::from_objects(vec![worker()], vec![]).unwrap();
    let config = SchedulerConfiguration::v1_34_default();
    let mut s = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1).unwrap();
    let now = Duration::ZERO;
    let mut c = claim();
    c["status"] = json!({"allocation": allocation("other-node")});
    s.apply(add_class(), now);
    s.apply(add_claim(c), now);
    s.apply(ClusterEvent::add(slice()), now);
    s.apply(ClusterEvent::add(pod(true)), now);
    let Step::Unschedulable {
        deallocate: Some(d),
        ..
    } = s.schedule_one(now)
    else {
        panic!("no deallocation");
    };
    assert_eq!(
        (d.namespace.as_str(), d.name.as_str(), d.pod_uid.as_str()),
        ("default", "my-pod-my-resource", "1234")
    );
    // Nothing changes until the claim's update comes back: the pod waits.
    assert!(matches!(s.schedule_one(now), Step::Idle { .. }));
    let current = s
        .snapshot()
        .dra()
        .claim("default", "my-pod-my-resource")
        .unwrap();
    assert!(d.still_applies(current));
    let cleared = sched_core::plugins::dra::Deallocation::cleared(current);
    assert!(!d.still_applies(&cleared));
    s.apply(ClusterEvent::update(cleared), now);
    // The update wakes the pod; the device is allocated again, on the worker this time.
    let later = now + Duration::from_secs(1);
    match s.schedule_one(later) {
        Step::Bind { node, claims, .. } => {
            assert_eq!(node, "worker");
            assert_eq!(claims.len(), 1);
            let a = claims[0].allocation.as_ref().expect("allocated again");
            assert_eq!(a.devices.results[0].device, "instance-1");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_claim_reserved_for_another_pod_is_not_deallocated() {
    let mut c = claim();
    c["status"] = json!({"allocation": allocation("other-node"),
                         "reservedFor": [{"resource": "pods", "name": "other", "uid": "999"}]});
    assert_eq!(
        attempt(pod(true), vec![add_class(), add_claim(c)]),
        Err(filter(
            "resourceclaim not available on the node",
            "still not schedulable"
        ))
    );
}

#[test]
fn good_topology() {
    // Allocated for worker and not yet reserved: PreBind only adds the pod to reservedFor.
    let mut c = claim();
    c["status"] = json!({"allocation": allocation("worker")});
    assert_eq!(
        attempt(pod(true), vec![add_class(), add_claim(c)]),
        Ok(vec![("my-pod-my-resource".to_string(), false)])
    );
}

#[test]
fn reserved_okay() {
    // Allocated and already reserved for the pod: nothing to write.
    let mut c = claim();
    c["status"] = json!({"allocation": allocation("worker"),
                         "reservedFor": [{"resource": "pods", "name": "my-pod", "uid": "1234"}]});
    assert_eq!(
        attempt(pod(true), vec![add_class(), add_claim(c)]),
        Ok(vec![])
    );
}

/// kube's `brokenSelector`: an attribute that only `worker-2`'s device has.
const BROKEN: &str = "device.attributes[\"some-driver\"].healthy";

/// kube's `workerNode2` and its slice, whose device has the attribute `healthy`.
fn worker2() -> (Node, ResourceSlice) {
    let mut node = worker();
    node.metadata.name = "worker-2".into();
    node.metadata
        .labels
        .insert("kubernetes.io/hostname".into(), "worker-2".into());
    let slice = serde_json::from_value(json!({
        "metadata": {"name": "worker-2-some-driver"},
        "spec": {"driver": "some-driver", "nodeName": "worker-2",
                 "pool": {"name": "worker-2", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "instance-1",
                              "attributes": {"healthy": {"bool": true}}}]}
    }))
    .unwrap();
    (node, slice)
}

fn broken_claim() -> Value {
    let mut c = claim();
    c["spec"]["devices"]["requests"][0]["exactly"]["selectors"] =
        json!([{"cel": {"expression": BROKEN}}]);
    c
}

/// kube's Filter status for a CEL runtime error, as the attempt fails with it.
fn filter_error(message: &str) -> String {
    format!("Error: running \"DynamicResources\" filter plugin: {message}")
}

#[test]
fn claim_parameters_cel_runtime_error() {
    assert_eq!(
        attempt(
            pod(true),
            vec![
                add_class(),
                ClusterEvent::add(slice()),
                add_claim(broken_claim())
            ]
        ),
        Err(filter_error(
            "claim default/my-pod-my-resource: selector #0: CEL runtime error: no such key: healthy"
        ))
    );
}

#[test]
fn class_parameters_cel_runtime_error() {
    let mut class = class();
    class["spec"]["selectors"] = json!([{"cel": {"expression": BROKEN}}]);
    let class: sched_core::model::DeviceClass = serde_json::from_value(class).unwrap();
    assert_eq!(
        attempt(
            pod(true),
            vec![
                ClusterEvent::add(class),
                ClusterEvent::add(slice()),
                add_claim(claim())
            ]
        ),
        Err(filter_error(
            "class my-resource-class: selector #0: CEL runtime error: no such key: healthy"
        ))
    );
}

/// The error on one node keeps the pod pending although worker-2 could take it (kube's
/// "keeps pod pending because of CEL runtime errors").
#[test]
fn cel_runtime_error_for_one_of_two_nodes() {
    let (node2, slice2) = worker2();
    assert_eq!(
        attempt_on(
            vec![worker(), node2],
            pod(true),
            vec![
                add_class(),
                ClusterEvent::add(slice()),
                ClusterEvent::add(slice2),
                add_claim(broken_claim())
            ]
        ),
        Err(filter_error(
            "claim default/my-pod-my-resource: selector #0: CEL runtime error: no such key: healthy"
        ))
    );
}

/// kube's `adminAccess(pendingClaim)`: the request asks for admin access.
fn admin_access(mut c: Value) -> Value {
    c["spec"]["devices"]["requests"][0]["exactly"]["adminAccess"] = json!(true);
    c
}

/// kube's `otherAllocatedClaim`: another claim holding `instance-1`.
fn other_allocated() -> Value {
    let mut other = claim();
    other["metadata"]["name"] = json!("other");
    other["metadata"]["uid"] = json!("other");
    other["status"] = json!({"allocation": allocation("worker")});
    other
}

/// `request-admin-access-with-DRAAdminAccess-featuregate` (on by default in v1.34): a request
/// with admin access gets the device although another claim holds it, and the allocation
/// says so.
#[test]
fn request_admin_access() {
    let claims = attempt_bindings(
        vec![worker()],
        pod(true),
        vec![
            add_class(),
            ClusterEvent::add(slice()),
            add_claim(admin_access(claim())),
            add_claim(other_allocated()),
        ],
    )
    .unwrap();
    assert_eq!(claims.len(), 1);
    let a = claims[0].allocation.as_ref().expect("allocated");
    let r = &a.devices.results[0];
    assert_eq!(
        (r.request.as_str(), r.device.as_str(), r.admin_access),
        ("req-1", "instance-1", Some(true))
    );
}

/// `structured-ignore-allocated-admin-access`: a device another claim holds with admin access
/// is not in use, so a second claim may take it.
#[test]
fn structured_ignore_allocated_admin_access() {
    let mut other = other_allocated();
    other["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = json!(true);
    let claims = attempt_bindings(
        vec![worker()],
        pod(true),
        vec![
            add_class(),
            ClusterEvent::add(slice()),
            add_claim(claim()),
            add_claim(other),
        ],
    )
    .unwrap();
    let a = claims[0].allocation.as_ref().expect("allocated");
    let r = &a.devices.results[0];
    assert_eq!((r.device.as_str(), r.admin_access), ("instance-1", None));
}
