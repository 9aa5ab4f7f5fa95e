//! Pod fields of current clusters, as `kubectl get pod -o json` writes them: native sidecars,
//! pod-level resources, scheduling gates, resource claims and topology spread constraints. Each
//! case is a placement the legacy-era model got wrong.

use sched_core::model::{
    Pod, load_node_list, load_pod_list, parse_pod, pod_non_zero_requests, pod_requests,
};
use sched_core::policy::Policy;
use sched_core::profile::{ScheduleError, ScheduleResult};
use sched_core::snapshot::Snapshot;

/// Two nodes with 1 CPU, one already running a pod requesting 988m: 12m left there.
fn cluster() -> Snapshot {
    let nodes = load_node_list(
        r#"{"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "small", "labels": {"kubernetes.io/hostname": "small", "topology.kubernetes.io/zone": "a"}},
         "status": {"allocatable": {"cpu": "1", "memory": "4Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}]}},
        {"apiVersion": "v1", "kind": "Node",
         "metadata": {"name": "other", "labels": {"kubernetes.io/hostname": "other", "topology.kubernetes.io/zone": "b"}},
         "status": {"allocatable": {"cpu": "1", "memory": "4Gi", "pods": "110"},
                    "conditions": [{"type": "Ready", "status": "True"}]}}
    ]}"#,
    )
    .unwrap();
    let pods = load_pod_list(
        r#"{"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "busy", "namespace": "default"},
         "spec": {"nodeName": "small", "containers": [{"name": "c", "image": "busybox",
                  "resources": {"requests": {"cpu": "988m", "memory": "100Mi"}}}]},
         "status": {"phase": "Running"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "busy2", "namespace": "default"},
         "spec": {"nodeName": "other", "containers": [{"name": "c", "image": "busybox",
                  "resources": {"requests": {"cpu": "990m", "memory": "100Mi"}}}]},
         "status": {"phase": "Running"}}
    ]}"#,
    )
    .unwrap();
    Snapshot::from_objects(nodes, pods).unwrap()
}

/// An application pod with an Istio-style native sidecar, as the API server returns it.
const WITH_SIDECAR: &str = r#"{
  "apiVersion": "v1", "kind": "Pod",
  "metadata": {"name": "web-7f9c", "namespace": "default", "labels": {"app": "web"}},
  "spec": {
    "initContainers": [
      {"name": "istio-proxy", "image": "istio/proxyv2:1.24.0", "restartPolicy": "Always",
       "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}
    ],
    "containers": [
      {"name": "web", "image": "nginx:1.27", "resources": {"requests": {"cpu": "5m", "memory": "8Mi"}}}
    ],
    "restartPolicy": "Always", "schedulerName": "default-scheduler"
  },
  "status": {"phase": "Pending", "qosClass": "Burstable"}
}"#;

fn schedule(pod: &Pod) -> Result<ScheduleResult, ScheduleError> {
    let snapshot = cluster();
    let profile = Policy::kube_default()
        .builder()
        .unwrap()
        .seed(1)
        .build()
        .unwrap();
    profile.schedule(&mut profile.create_cache(), pod, &snapshot)
}

#[test]
fn a_native_sidecar_counts_beside_the_containers() {
    let pod = parse_pod(WITH_SIDECAR).unwrap();
    let r = pod_requests(&pod);
    // The sidecar keeps running beside the container: 5m + 10m, 8Mi + 16Mi (as an ordinary
    // init container it would count only as max(5m, 10m) = 10m, 16Mi).
    assert_eq!((r.milli_cpu, r.memory), (15, 24 * 1024 * 1024));
    assert_eq!(pod_non_zero_requests(&pod), (15, 24 * 1024 * 1024));
    // 12m free on "small", 10m on "other": 15m fits nowhere.
    let err = schedule(&pod).unwrap_err();
    assert_eq!(
        err.to_string(),
        "0/2 nodes are available: 2 Insufficient cpu."
    );
}

#[test]
fn an_init_container_after_a_sidecar_runs_beside_it() {
    let mut pod = parse_pod(WITH_SIDECAR).unwrap();
    pod.spec.init_containers.push(
        serde_json::from_str(
            r#"{"name": "migrate", "image": "app:1", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}"#,
        )
        .unwrap(),
    );
    let r = pod_requests(&pod);
    // migrate runs while the sidecar runs: 100m + 10m; the containers' phase needs 15m.
    assert_eq!(r.milli_cpu, 110);
    assert_eq!(r.memory, 80 * 1024 * 1024);
}

#[test]
fn pod_level_resources_replace_the_containers_sums() {
    let pod = parse_pod(
        r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
        "spec": {"resources": {"requests": {"cpu": "500m", "memory": "1Gi"}},
                 "containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y",
                   "resources": {"requests": {"cpu": "5m"}}}]}}"#,
    )
    .unwrap();
    let r = pod_requests(&pod);
    assert_eq!((r.milli_cpu, r.memory), (500, 1024 * 1024 * 1024));
    assert_eq!(pod_non_zero_requests(&pod), (500, 1024 * 1024 * 1024));
    // 500m fits on neither node.
    assert!(matches!(
        schedule(&pod),
        Err(ScheduleError::Unschedulable(_))
    ));
}

#[test]
fn a_gated_pod_is_not_placed() {
    let pod = parse_pod(
        r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "batch-0", "namespace": "jobs"},
        "spec": {"schedulingGates": [{"name": "example.com/quota"}],
                 "containers": [{"name": "a", "image": "x"}]},
        "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}}"#,
    )
    .unwrap();
    let err = schedule(&pod).unwrap_err();
    assert!(
        matches!(&err, ScheduleError::SchedulingGated { gates, .. } if gates == &["example.com/quota"]),
        "{err:?}"
    );
}

#[test]
fn a_pod_with_resource_claims_is_an_explicit_unsupported_outcome() {
    let pod = parse_pod(
        r#"{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gpu-job", "namespace": "ml"},
        "spec": {"resourceClaims": [{"name": "gpu", "resourceClaimTemplateName": "single-gpu"}],
                 "containers": [{"name": "a", "image": "x", "resources": {"claims": [{"name": "gpu"}]}}]}}"#,
    )
    .unwrap();
    let err = schedule(&pod).unwrap_err();
    assert!(
        matches!(
            err,
            ScheduleError::Unsupported {
                what: "DynamicResources",
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_do_not_schedule_spread_constraint_keeps_the_pod_off_the_node_that_breaks_it() {
    // Two zones; zone a already runs two "api" pods, zone b none. maxSkew 1: placing a third
    // in zone a would make the skew 3, so only zone b is feasible.
    let nodes = load_node_list(
        r#"{"kind": "NodeList", "items": [
        {"metadata": {"name": "a1", "labels": {"topology.kubernetes.io/zone": "a"}},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
        {"metadata": {"name": "a2", "labels": {"topology.kubernetes.io/zone": "a"}},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}},
        {"metadata": {"name": "b1", "labels": {"topology.kubernetes.io/zone": "b"}},
         "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "2"}}}]}"#,
    )
    .unwrap();
    let api = |name: &str, node: &str| {
        format!(
            r#"{{"metadata": {{"name": "{name}", "namespace": "default", "labels": {{"app": "api"}}}},
               "spec": {{"nodeName": "{node}", "containers": [{{"name": "c", "image": "api"}}]}}}}"#
        )
    };
    let pods = load_pod_list(&format!("[{}, {}]", api("api-0", "a1"), api("api-1", "a2"))).unwrap();
    let snapshot = Snapshot::from_objects(nodes, pods).unwrap();
    let pod = parse_pod(
        r#"{"metadata": {"name": "api-2", "namespace": "default", "labels": {"app": "api"}},
        "spec": {"containers": [{"name": "c", "image": "api"}],
                 "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                   "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {"app": "api"}}}]}}"#,
    )
    .unwrap();
    let profile = Policy::kube_default()
        .builder()
        .unwrap()
        .seed(3)
        .build()
        .unwrap();
    let mut cache = profile.create_cache();
    for _ in 0..20 {
        let r = profile.schedule(&mut cache, &pod, &snapshot).unwrap();
        assert_eq!((r.node.as_str(), r.feasible_nodes), ("b1", 1));
    }
    // With zone b full (two other pods on b1, which allows two), nothing fits, and kube's
    // reasons say why.
    let mut full = snapshot.clone();
    for i in 0..2 {
        let mut p = parse_pod(&api(&format!("b-{i}"), "b1")).unwrap();
        p.metadata.labels.clear();
        full.add_pod(p).unwrap();
    }
    let err = profile.schedule(&mut cache, &pod, &full).unwrap_err();
    assert_eq!(
        err.to_string(),
        "0/3 nodes are available: 1 Too many pods, 2 node(s) didn't match pod topology spread constraints."
    );
}
