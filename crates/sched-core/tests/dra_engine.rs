//! DynamicResources in the scheduling engine (kube v1.34's default profile): pods with
//! ResourceClaims placed where their devices can be allocated, the allocation held in flight
//! from Reserve to the bind and handed to the caller in `Step::Bind`, released when the bind
//! fails, and pods rejected with kube's texts until the events that can help them arrive.

use std::time::Duration;

use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{DeviceClass, Node, Pod, ResourceClaim, ResourceSlice};
use sched_core::scheduler::{BindError, ClusterEvent, Scheduler, Step};
use sched_core::snapshot::Snapshot;
use serde_json::json;

const DRIVER: &str = "gpu.example.com";

fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap()
}

fn class() -> DeviceClass {
    serde_json::from_value(json!({
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": format!("device.driver == {DRIVER:?}")}}]}
    }))
    .unwrap()
}

/// A slice of `gpus` devices local to `node`, in a pool named after it.
fn slice(node: &str, gpus: usize) -> ResourceSlice {
    let devices: Vec<_> = (0..gpus)
        .map(|i| json!({"name": format!("gpu-{i}"), "attributes": {"model": {"string": "a100"}}}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": format!("{node}-{DRIVER}")},
        "spec": {"driver": DRIVER, "nodeName": node,
                 "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                 "devices": devices}
    }))
    .unwrap()
}

/// A claim for `count` GPUs of `class`.
fn claim(name: &str, count: i64, class: &str) -> ResourceClaim {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": class, "allocationMode": "ExactCount", "count": count}}]}}
    }))
    .unwrap()
}

/// A pod using the claims `claims` by name.
fn pod(name: &str, claims: &[&str]) -> Pod {
    let refs: Vec<_> = claims
        .iter()
        .map(|c| json!({"name": c, "resourceClaimName": c}))
        .collect();
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"containers": [{"name": "c", "image": "pause",
                 "resources": {"requests": {"cpu": "100m"}}}],
                 "resourceClaims": refs}
    }))
    .unwrap()
}

fn scheduler(nodes: &[&str], gpus: usize) -> Scheduler {
    let snapshot = Snapshot::from_objects(nodes.iter().map(|n| node(n)).collect(), vec![]).unwrap();
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         podInitialBackoffSeconds: 1\npodMaxBackoffSeconds: 10\n",
    )
    .unwrap();
    let mut s = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 7).unwrap();
    s.apply(ClusterEvent::add(class()), t(0));
    for n in nodes {
        s.apply(ClusterEvent::add(slice(n, gpus)), t(0));
    }
    s
}

fn t(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

/// Schedules one pod; returns the bind step's node and claims (asserting it is a bind).
fn bind_one(s: &mut Scheduler, now: Duration) -> (String, String, Vec<(String, Vec<String>)>) {
    match s.schedule_one(now) {
        Step::Bind {
            pod, node, claims, ..
        } => {
            let claims = claims
                .iter()
                .map(|c| {
                    let devices = c
                        .allocation
                        .as_ref()
                        .map(|a| {
                            a.devices
                                .results
                                .iter()
                                .map(|r| format!("{}/{}", r.pool, r.device))
                                .collect()
                        })
                        .unwrap_or_default();
                    (c.name.clone(), devices)
                })
                .collect();
            (pod.to_string(), node, claims)
        }
        other => panic!("expected a bind, got {other:?}"),
    }
}

/// kube's DynamicResources PreEnqueue keeps a pod whose claims do not resolve out of
/// scheduling: no attempt, no FitError (the differential case `dra-gpus-fill-and-share`
/// has kube's answer).
fn gated_message(s: &mut Scheduler, now: Duration) -> String {
    match s.schedule_one(now) {
        Step::Gated {
            plugin, message, ..
        } => {
            assert_eq!(plugin, "DynamicResources");
            message
        }
        other => panic!("expected gated, got {other:?}"),
    }
}

fn unschedulable_message(s: &mut Scheduler, now: Duration) -> String {
    match s.schedule_one(now) {
        Step::Unschedulable { error, .. } => error.to_string(),
        other => panic!("expected unschedulable, got {other:?}"),
    }
}

#[test]
fn gpus_are_allocated_once_each_and_the_rest_wait() {
    let mut s = scheduler(&["n1", "n2"], 2);
    for i in 0..5 {
        s.apply(ClusterEvent::add(claim(&format!("c{i}"), 1, "gpu")), t(0));
        s.apply(
            ClusterEvent::add(pod(&format!("p{i}"), &[&format!("c{i}")])),
            t(0),
        );
    }
    let mut devices = Vec::new();
    for _ in 0..4 {
        let (pod, node, claims) = bind_one(&mut s, t(1));
        assert_eq!(claims.len(), 1, "{pod}");
        let (_, d) = &claims[0];
        assert_eq!(d.len(), 1);
        assert!(
            d[0].starts_with(&format!("{node}/")),
            "{pod} on {node}: {d:?}"
        );
        devices.push(d[0].clone());
        s.finish_binding(&pod, Ok(()), t(1));
    }
    devices.sort();
    assert_eq!(devices, ["n1/gpu-0", "n1/gpu-1", "n2/gpu-0", "n2/gpu-1"]);
    let message = unschedulable_message(&mut s, t(1));
    // Unresolvable on every node (kube's DynamicResources rejects with
    // UnschedulableAndUnresolvable): preemption does not try.
    assert_eq!(
        message,
        "0/2 nodes are available: 2 cannot allocate all claims. still not schedulable, \
         preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
    );
    // The bound claims hold their allocations and name their pods.
    let c0 = s.snapshot().dra().claim("default", "c0").unwrap();
    assert!(c0.status.allocation.is_some());
    assert_eq!(c0.status.reserved_for.len(), 1);
    assert_eq!(c0.status.reserved_for[0].uid, "uid-p0");
    assert_eq!(c0.status.reserved_for[0].resource, "pods");
}

#[test]
fn a_failed_bind_frees_its_devices() {
    let mut s = scheduler(&["n1"], 1);
    for i in 0..2 {
        s.apply(ClusterEvent::add(claim(&format!("c{i}"), 1, "gpu")), t(0));
        s.apply(
            ClusterEvent::add(pod(&format!("p{i}"), &[&format!("c{i}")])),
            t(0),
        );
    }
    let (first, _, claims) = bind_one(&mut s, t(1));
    assert_eq!(claims[0].1, ["n1/gpu-0"]);
    // While the first pod's allocation is in flight, the only GPU is taken.
    let message = unschedulable_message(&mut s, t(1));
    assert!(message.contains("cannot allocate all claims"), "{message}");
    assert!(!s.snapshot().dra().allocated().is_empty());
    s.finish_binding(&first, Err(BindError::new("conflict")), t(1));
    assert!(s.snapshot().dra().allocated().is_empty());
    assert!(
        s.snapshot()
            .dra()
            .claim("default", &claims[0].0)
            .unwrap()
            .status
            .allocation
            .is_none()
    );
    // The freed GPU goes to a pod after the next events and backoffs.
    let mut bound = None;
    for secs in 2..40 {
        if let Step::Bind { pod, claims, .. } = s.schedule_one(t(secs)) {
            bound = Some((pod, claims));
            break;
        }
    }
    let (_, claims) = bound.expect("a pod bound to the freed GPU");
    assert_eq!(
        claims[0].allocation.as_ref().unwrap().devices.results[0].device,
        "gpu-0"
    );
}

#[test]
fn a_missing_claim_gates_the_pod_until_it_is_created() {
    let mut s = scheduler(&["n1"], 1);
    s.apply(ClusterEvent::add(pod("p", &["later"])), t(0));
    let message = gated_message(&mut s, t(1));
    assert_eq!(message, "could not find ResourceClaim \"default/later\"");
    s.apply(ClusterEvent::add(claim("later", 1, "gpu")), t(2));
    let mut bound = false;
    for secs in 2..20 {
        if matches!(s.schedule_one(t(secs)), Step::Bind { .. }) {
            bound = true;
            break;
        }
    }
    assert!(bound, "the claim's creation lets the pod be scheduled");
}

#[test]
fn prefilter_rejections_carry_kubes_texts() {
    let mut s = scheduler(&["n1"], 1);
    s.apply(ClusterEvent::add(claim("c", 1, "tpu")), t(0));
    s.apply(ClusterEvent::add(pod("p", &["c"])), t(0));
    let message = unschedulable_message(&mut s, t(1));
    assert!(
        message.contains("request gpu: device class tpu does not exist"),
        "{message}"
    );

    // A claim at the most consumers it may have, not reserved for the pod: in use.
    let mut s = scheduler(&["n1"], 1);
    let mut full = claim("full", 1, "gpu");
    full.status.allocation = Some(Default::default());
    full.status.reserved_for = (0..256)
        .map(|i| {
            serde_json::from_value(
                json!({"resource": "pods", "name": format!("o{i}"), "uid": format!("o{i}")}),
            )
            .unwrap()
        })
        .collect();
    s.apply(ClusterEvent::add(full), t(0));
    s.apply(ClusterEvent::add(pod("p", &["full"])), t(0));
    let message = unschedulable_message(&mut s, t(1));
    assert!(message.contains("resourceclaim in use"), "{message}");
}

#[test]
fn a_shared_claim_is_allocated_once_and_waits_while_in_flight() {
    let mut s = scheduler(&["n1", "n2"], 1);
    s.apply(ClusterEvent::add(claim("shared", 1, "gpu")), t(0));
    s.apply(ClusterEvent::add(pod("a", &["shared"])), t(0));
    s.apply(ClusterEvent::add(pod("b", &["shared"])), t(0));
    let (a, a_node, claims) = bind_one(&mut s, t(1));
    assert_eq!(claims[0].1.len(), 1);
    // b shares the claim while a's allocation of it is in flight.
    let message = unschedulable_message(&mut s, t(1));
    assert!(
        message.contains("resource claim default/shared is in the process of being allocated"),
        "{message}"
    );
    s.finish_binding(&a, Ok(()), t(1));
    // Once bound, the claim is allocated on a's node: b follows it there and adds itself to
    // reservedFor without a new allocation.
    s.apply(ClusterEvent::add(node("n3")), t(2));
    let mut got = None;
    for secs in 2..40 {
        if let Step::Bind {
            pod,
            node: n,
            claims,
            ..
        } = s.schedule_one(t(secs))
        {
            got = Some((pod, n, claims));
            break;
        }
    }
    let (pod, n, claims) = got.expect("b bound");
    assert_eq!(pod.to_string(), "default/b");
    assert_eq!(n, a_node, "b goes where the shared claim's devices are");
    assert_eq!(claims.len(), 1);
    assert!(claims[0].allocation.is_none());
    assert_eq!(claims[0].consumer.uid, "uid-b");
}

#[test]
fn a_pod_without_dynamic_resources_in_its_profile_is_refused() {
    let snapshot = Snapshot::from_objects(vec![node("n1")], vec![]).unwrap();
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         profiles:\n- schedulerName: default-scheduler\n  plugins:\n    multiPoint:\n      \
         disabled:\n      - name: DynamicResources\n",
    )
    .unwrap();
    let mut s = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 7).unwrap();
    s.apply(ClusterEvent::add(pod("p", &["c"])), t(0));
    match s.schedule_one(t(1)) {
        Step::Failed { error, .. } => {
            assert!(
                error.to_string().contains("does not run DynamicResources"),
                "{error}"
            )
        }
        other => panic!("{other:?}"),
    }
}

/// kube's resourceclaim controller makes the claim, then writes its name into the pod's
/// status: the pod's update (kube's UpdatePodGeneratedResourceClaim) moves it out of the
/// unschedulable pool at once, without waiting for another event.
#[test]
fn the_status_naming_a_template_claim_moves_the_pod() {
    let mut s = scheduler(&["n1"], 1);
    let mut p: Pod = serde_json::from_value(json!({
        "metadata": {"name": "p", "namespace": "default", "uid": "uid-p"},
        "spec": {"containers": [{"name": "c", "image": "pause"}],
                 "resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]}
    }))
    .unwrap();
    s.apply(ClusterEvent::add(p.clone()), t(0));
    let message = gated_message(&mut s, t(0));
    assert!(
        message.contains("pod \"default/p\": ResourceClaim not created yet"),
        "{message}"
    );
    let mut made = claim("p-gpu", 1, "gpu");
    made.metadata.owner_references = vec![
        serde_json::from_value(json!(
            {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "uid-p", "controller": true}
        ))
        .unwrap(),
    ];
    s.apply(ClusterEvent::add(made), t(0));
    // The claim's event alone wakes the pod; it fails again (no status yet) and waits.
    let _ = s.schedule_one(t(1));
    p.status.resource_claim_statuses =
        vec![serde_json::from_value(json!({"name": "gpu", "resourceClaimName": "p-gpu"})).unwrap()];
    s.apply(ClusterEvent::update(p), t(2));
    let mut bound = None;
    for secs in 2..12 {
        if let Step::Bind { pod, .. } = s.schedule_one(t(secs)) {
            bound = Some(secs);
            assert_eq!(pod.to_string(), "default/p");
            break;
        }
    }
    assert!(
        bound.is_some(),
        "bound within its backoff after the status update"
    );
}
