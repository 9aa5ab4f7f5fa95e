//! sched-kube against a real kube-apiserver v1.34 (started by the test from the binaries
//! `scripts/reference.sh` builds; a missing binary fails the test). Nodes are API objects
//! only: no kubelet runs, so a stand-in force-deletes pods whose graceful deletion began.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::DeleteParams;
use sched_kube::{KubeScheduler, Options};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binds_the_pods_of_its_profile_and_reports_the_rest_as_kube_does() {
    let (server, client) = server().await;
    for n in ["n1", "n2", "n3"] {
        create_node(&client, n, "4").await;
    }
    // One pod before the scheduler starts (found by the initial listing), the rest after.
    create_pod(&client, "early", "sched-kube", "1", None).await;
    create_pod(&client, "foreign", "another-scheduler", "1", None).await;
    let scheduler = KubeScheduler::new(
        scheduler_client(&server).await,
        Options::new(config("binds"), "replica-a"),
    )
    .unwrap();
    let addr = scheduler
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let running = Running::start(scheduler);
    for i in 0..11 {
        create_pod(&client, &format!("p{i}"), "sched-kube", "1", None).await;
    }
    create_pod(&client, "too-big", "sched-kube", "1", None).await;

    // 12 pods of 1 CPU fill three 4-CPU nodes; the 13th does not fit.
    let all = eventually(Duration::from_secs(30), "12 pods bound", || {
        let client = client.clone();
        async move {
            let all = pods(&client).await;
            let bound = all.values().filter(|p| node_of(p).is_some()).count();
            (bound == 12).then_some(all)
        }
    })
    .await;
    let mut per_node: BTreeMap<&str, usize> = BTreeMap::new();
    for p in all.values() {
        if let Some(n) = node_of(p) {
            *per_node.entry(n).or_default() += 1;
        }
    }
    assert_eq!(
        per_node.values().copied().collect::<Vec<_>>(),
        vec![4, 4, 4]
    );
    assert!(
        node_of(&all["foreign"]).is_none(),
        "another scheduler's pod was bound"
    );
    let unbound: Vec<&String> = all
        .iter()
        .filter(|(_, p)| {
            node_of(p).is_none()
                && p.spec.as_ref().unwrap().scheduler_name.as_deref() == Some("sched-kube")
        })
        .map(|(n, _)| n)
        .collect();
    assert_eq!(unbound.len(), 1, "{unbound:?}");
    let last = unbound[0].clone();

    // kube's failure handler: the condition and the event, with kube's message.
    let want = "0/3 nodes are available: 3 Insufficient cpu. no new claims to deallocate, \
                preemption: 0/3 nodes are available: 3 No preemption victims found for incoming \
                pod.";
    let cond = eventually(Duration::from_secs(10), "PodScheduled=False", || {
        let client = client.clone();
        let last = last.clone();
        async move {
            let all = pods(&client).await;
            condition(&all[&last], "PodScheduled").cloned()
        }
    })
    .await;
    assert_eq!(cond.status, "False");
    assert_eq!(cond.reason.as_deref(), Some("Unschedulable"));
    assert_eq!(cond.message.as_deref(), Some(want));
    let failed = events(&client, "FailedScheduling").await;
    assert!(
        failed.iter().any(|e| e.note.as_deref() == Some(want)
            && e.type_.as_deref() == Some("Warning")
            && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(last.as_str())
            && e.reporting_controller.as_deref() == Some("sched-kube")),
        "{failed:?}"
    );
    // A new message while the pod stays unschedulable keeps the time it became so (kube's
    // `UpdatePodCondition`); the times have seconds, so a second passes first.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    create_node(&client, "n4", "500m").await;
    let later = eventually(Duration::from_secs(30), "the message for 4 nodes", || {
        let client = client.clone();
        let last = last.clone();
        async move {
            condition(&pods(&client).await[&last], "PodScheduled")
                .filter(|c| {
                    c.message
                        .as_deref()
                        .is_some_and(|m| m.starts_with("0/4 nodes"))
                })
                .cloned()
        }
    })
    .await;
    assert_eq!(later.status, "False");
    assert_eq!(later.last_transition_time, cond.last_transition_time);

    let scheduled = events(&client, "Scheduled").await;
    assert_eq!(scheduled.len(), 12, "one Scheduled event per bound pod");
    let p0 = &all["p0"];
    let note = format!(
        "Successfully assigned default/p0 to {}",
        node_of(p0).unwrap()
    );
    assert!(
        scheduled
            .iter()
            .any(|e| e.note.as_deref() == Some(note.as_str()))
    );

    // Health and metrics.
    let body = http_get(addr, "/metrics").await;
    assert!(body.contains("scheduler_schedule_attempts_total"), "{body}");
    assert!(http_get(addr, "/readyz").await.starts_with("ok"));
    assert!(http_get(addr, "/healthz").await.starts_with("ok"));

    // A freed node wakes the pending pod: it binds where room was made.
    let victim = all
        .iter()
        .find(|(_, p)| node_of(p).is_some())
        .map(|(n, p)| (n.clone(), node_of(p).unwrap().to_owned()))
        .unwrap();
    Api::<Pod>::namespaced(client.clone(), NS)
        .delete(&victim.0, &DeleteParams::default().grace_period(0))
        .await
        .unwrap();
    let node = eventually(Duration::from_secs(20), "the pending pod bound", || {
        let client = client.clone();
        let last = last.clone();
        async move { node_of(&pods(&client).await[&last]).map(str::to_owned) }
    })
    .await;
    assert_eq!(node, victim.1);

    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn preempts_lower_priority_pods_as_kube_does() {
    let (server, client) = server().await;
    let kubelet = kubelet_stand_in(client.clone());
    create_priority_classes(&client).await;
    let running = n1_full_of_low_pods(&server, &client, "preempt").await;
    let uid = |all: &BTreeMap<String, Pod>, n: &str| all[n].metadata.uid.clone().unwrap();
    let before = pods(&client).await;
    let low_a = uid(&before, "low-a");
    create_pod(&client, "high", "sched-kube", "2", Some("high")).await;
    let all = eventually(Duration::from_secs(30), "the high pod bound", || {
        let client = client.clone();
        async move {
            let all = pods(&client).await;
            all.get("high").and_then(node_of).is_some().then_some(all)
        }
    })
    .await;
    assert_eq!(node_of(&all["high"]), Some("n1"));
    assert!(
        !all.contains_key("low-a") && !all.contains_key("low-b"),
        "victims deleted"
    );
    assert_eq!(
        nominated(&all["high"]),
        Some("n1"),
        "the preemptor was nominated"
    );
    let preempted = events(&client, "Preempted").await;
    let high = uid(&all, "high");
    let note = format!("Preempted by pod {high} on node n1");
    assert!(
        preempted
            .iter()
            .any(|e| e.note.as_deref() == Some(note.as_str())
                && e.regarding.as_ref().and_then(|r| r.uid.as_deref()) == Some(low_a.as_str())),
        "{preempted:?}"
    );
    running.stop().await;
    kubelet.abort();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn honours_scheduling_gates_and_writes_volume_bindings_before_binding() {
    use k8s_openapi::api::core::v1::{PersistentVolume, PersistentVolumeClaim};
    use k8s_openapi::api::storage::v1::StorageClass;
    use kube::api::{Patch, PatchParams, PostParams};

    let (server, client) = server().await;
    create_node(&client, "n1", "4").await;
    create_node(&client, "n2", "4").await;
    // A local volume on n2 only, and a claim that waits for its first consumer.
    let sc: StorageClass = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    }))
    .unwrap();
    Api::<StorageClass>::all(client.clone())
        .create(&PostParams::default(), &sc)
        .await
        .unwrap();
    let pv: PersistentVolume = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "pv-n2"},
        "spec": {
            "capacity": {"storage": "1Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "local",
            "local": {"path": "/data"},
            "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n2"]}]}]}},
        },
    }))
    .unwrap();
    let pvs = Api::<PersistentVolume>::all(client.clone());
    pvs.create(&PostParams::default(), &pv).await.unwrap();
    // The PersistentVolume controller's part: a new volume becomes Available (kube's
    // matching skips volumes in any other phase).
    pvs.patch_status(
        "pv-n2",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"status": {"phase": "Available"}})),
    )
    .await
    .unwrap();
    let pvc: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "data", "namespace": NS},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                 "resources": {"requests": {"storage": "1Gi"}}},
    }))
    .unwrap();
    Api::<PersistentVolumeClaim>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &pvc)
        .await
        .unwrap();

    let scheduler = KubeScheduler::new(
        scheduler_client(&server).await,
        Options::new(config("gates"), "r"),
    )
    .unwrap();
    let running = Running::start(scheduler);

    // A gated pod stays pending until its gate is removed.
    let mut gated = pod_json("gated", "sched-kube", "1", None, &[]);
    gated.spec.as_mut().unwrap().scheduling_gates = Some(vec![
        serde_json::from_value(serde_json::json!({"name": "example.com/wait"})).unwrap(),
    ]);
    let pods_api = Api::<Pod>::namespaced(client.clone(), NS);
    pods_api
        .create(&PostParams::default(), &gated)
        .await
        .unwrap();
    let mut with_volume = pod_json("with-volume", "sched-kube", "1", None, &[]);
    with_volume.spec.as_mut().unwrap().volumes = Some(vec![
        serde_json::from_value(serde_json::json!({
            "name": "data", "persistentVolumeClaim": {"claimName": "data"},
        }))
        .unwrap(),
    ]);
    pods_api
        .create(&PostParams::default(), &with_volume)
        .await
        .unwrap();

    // The volume's pod goes where its volume is, with the PV's claimRef written first.
    let node = eventually(Duration::from_secs(30), "with-volume bound", || {
        let client = client.clone();
        async move { node_of(&pods(&client).await["with-volume"]).map(str::to_owned) }
    })
    .await;
    assert_eq!(node, "n2");
    let pv = Api::<PersistentVolume>::all(client.clone())
        .get("pv-n2")
        .await
        .unwrap();
    let claim_ref = pv
        .spec
        .unwrap()
        .claim_ref
        .expect("claimRef written at PreBind");
    assert_eq!(
        (claim_ref.namespace.as_deref(), claim_ref.name.as_deref()),
        (Some(NS), Some("data"))
    );
    assert!(
        pv.metadata
            .annotations
            .unwrap_or_default()
            .contains_key("pv.kubernetes.io/bound-by-controller")
    );

    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        node_of(&pods(&client).await["gated"]).is_none(),
        "a gated pod was bound"
    );
    pods_api
        .patch(
            "gated",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"schedulingGates": null}})),
        )
        .await
        .unwrap();
    eventually(Duration::from_secs(30), "gated bound once ungated", || {
        let client = client.clone();
        async move { node_of(&pods(&client).await["gated"]).map(str::to_owned) }
    })
    .await;
    running.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn allocates_devices_and_writes_the_claims_before_binding() {
    use kube::api::{DynamicObject, PostParams};

    let (server, client) = server().await;
    create_node(&client, "n1", "4").await;
    create_node(&client, "n2", "4").await;
    let classes = Api::all_with(
        client.clone(),
        &dra_resource("DeviceClass", "deviceclasses"),
    );
    create_dynamic(classes, serde_json::json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]},
    }))
    .await;
    // Two GPUs, on n2 only.
    let slices = Api::all_with(
        client.clone(),
        &dra_resource("ResourceSlice", "resourceslices"),
    );
    create_dynamic(
        slices,
        serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "n2-gpus"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n2",
                     "pool": {"name": "n2", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]},
        }),
    )
    .await;
    let claims_api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        NS,
        &dra_resource("ResourceClaim", "resourceclaims"),
    );
    for c in ["gpu-a", "gpu-b", "gpu-c"] {
        create_dynamic(claims_api.clone(), serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
            "metadata": {"name": c, "namespace": NS},
            "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]}},
        }))
        .await;
    }

    let scheduler = KubeScheduler::new(
        scheduler_client(&server).await,
        Options::new(config("dra"), "r"),
    )
    .unwrap();
    let running = Running::start(scheduler);
    let pods_api = Api::<Pod>::namespaced(client.clone(), NS);
    for (pod, claim) in [("pa", "gpu-a"), ("pb", "gpu-b"), ("pc", "gpu-c")] {
        let mut p = pod_json(pod, "sched-kube", "1", None, &[]);
        let spec = p.spec.as_mut().unwrap();
        spec.resource_claims = Some(vec![
            serde_json::from_value(serde_json::json!({"name": "gpu", "resourceClaimName": claim}))
                .unwrap(),
        ]);
        pods_api.create(&PostParams::default(), &p).await.unwrap();
        if pod == "pb" {
            // The third pod comes once both GPUs are taken.
            eventually(Duration::from_secs(30), "pa and pb bound", || {
                let client = client.clone();
                async move {
                    let all = pods(&client).await;
                    (node_of(&all["pa"]).is_some() && node_of(&all["pb"]).is_some()).then_some(())
                }
            })
            .await;
        }
    }
    let all = pods(&client).await;
    assert_eq!(
        (node_of(&all["pa"]), node_of(&all["pb"])),
        (Some("n2"), Some("n2"))
    );
    let mut devices = Vec::new();
    for (claim, pod) in [("gpu-a", "pa"), ("gpu-b", "pb")] {
        let c = claims_api.get(claim).await.unwrap();
        let status = &c.data["status"];
        let results = &status["allocation"]["devices"]["results"];
        assert_eq!(
            results.as_array().map(Vec::len),
            Some(1),
            "{claim}: {status}"
        );
        assert_eq!(results[0]["pool"], "n2");
        devices.push(results[0]["device"].as_str().unwrap().to_owned());
        let uid = all[pod].metadata.uid.clone().unwrap();
        assert_eq!(
            status["reservedFor"][0]["uid"],
            uid.as_str(),
            "{claim}: {status}"
        );
        assert_eq!(status["reservedFor"][0]["name"], pod);
        let finalizers = c.metadata.finalizers.unwrap_or_default();
        assert!(finalizers.contains(&"resource.kubernetes.io/delete-protection".to_owned()));
    }
    devices.sort();
    assert_eq!(devices, ["gpu-0", "gpu-1"]);
    // No GPU left: the third pod waits, told why.
    let cond = eventually(Duration::from_secs(20), "pc reported", || {
        let client = client.clone();
        async move { condition(&pods(&client).await["pc"], "PodScheduled").cloned() }
    })
    .await;
    assert_eq!(cond.reason.as_deref(), Some("Unschedulable"));
    assert!(
        cond.message
            .as_deref()
            .unwrap_or_default()
            .starts_with("0/2 nodes are available: 2 cannot allocate all claims."),
        "{cond:?}"
    );

    // DynamicResources' PostFilter: a claim allocated on n1 (as an earlier, failed attempt
    // could leave it) for a pod that may only run on n3 is deallocated, then allocated again
    // on n3.
    create_node(&client, "n3", "4").await;
    create_dynamic(
        Api::all_with(
            client.clone(),
            &dra_resource("ResourceSlice", "resourceslices"),
        ),
        serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": "n3-gpus"},
            "spec": {"driver": "gpu.example.com", "nodeName": "n3",
                     "pool": {"name": "n3", "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0"}, {"name": "gpu-1"}]},
        }),
    )
    .await;
    eventually(Duration::from_secs(30), "pc bound on n3", || {
        let client = client.clone();
        async move { (node_of(&pods(&client).await["pc"]) == Some("n3")).then_some(()) }
    })
    .await;
    create_dynamic(claims_api.clone(), serde_json::json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": "gpu-d", "namespace": NS},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]}},
    }))
    .await;
    claims_api
        .patch_status(
            "gpu-d",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"status": {"allocation": {
                "devices": {"results": [{"request": "gpu", "driver": "gpu.example.com",
                                         "pool": "n1", "device": "gpu-9"}]},
                "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["n1"]}]}]},
            }}})),
        )
        .await
        .unwrap();
    let mut p = pod_json("pd", "sched-kube", "1", None, &[]);
    let spec = p.spec.as_mut().unwrap();
    spec.node_selector = Some([("kubernetes.io/hostname".to_owned(), "n3".to_owned())].into());
    spec.resource_claims = Some(vec![
        serde_json::from_value(serde_json::json!({"name": "gpu", "resourceClaimName": "gpu-d"}))
            .unwrap(),
    ]);
    pods_api.create(&PostParams::default(), &p).await.unwrap();
    eventually(Duration::from_secs(30), "pd bound on n3", || {
        let client = client.clone();
        async move { (node_of(&pods(&client).await["pd"]) == Some("n3")).then_some(()) }
    })
    .await;
    let d = claims_api.get("gpu-d").await.unwrap();
    let result = &d.data["status"]["allocation"]["devices"]["results"][0];
    assert_eq!(result["pool"], "n3", "{}", d.data["status"]);
    let messages: Vec<String> = events(&client, "FailedScheduling")
        .await
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("pd"))
        .filter_map(|e| e.note)
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("deallocation of ResourceClaim completed")),
        "{messages:?}"
    );
    running.stop().await;
}

/// kube's DynamicResources Unreserve: a binding refused after PreBind wrote the claim removes
/// the pod from the claim's `reservedFor` (the allocation stays); the next attempt reserves it
/// again and binds once bindings are allowed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_binding_takes_the_pod_out_of_its_claims_reserved_for() {
    use futures_util::StreamExt as _;
    use kube::api::{DynamicObject, PostParams, WatchEvent, WatchParams};

    let (server, client) = server().await;
    create_node(&client, "n1", "4").await;
    let claims_api = one_gpu_and_a_claim(&client, "n1", "gpu").await;
    refuse_bindings_of(&client, "refused").await;

    // Every state of the claim, in order, from before the scheduler starts.
    let mut watch = claims_api
        .watch(&WatchParams::default().fields("metadata.name=gpu"), "0")
        .await
        .unwrap()
        .boxed();
    let scheduler = KubeScheduler::new(
        scheduler_client(&server).await,
        Options::new(config("unreserve"), "r"),
    )
    .unwrap();
    let running = Running::start(scheduler);
    let pods_api = Api::<Pod>::namespaced(client.clone(), NS);
    let mut p = pod_json("refused", "sched-kube", "1", None, &[]);
    p.spec.as_mut().unwrap().resource_claims = Some(vec![
        serde_json::from_value(serde_json::json!({"name": "gpu", "resourceClaimName": "gpu"}))
            .unwrap(),
    ]);
    let uid = pods_api
        .create(&PostParams::default(), &p)
        .await
        .unwrap()
        .metadata
        .uid
        .unwrap();

    // Reserved by PreBind, then no longer reserved once the binding is refused, still allocated.
    let reserved = |c: &DynamicObject| {
        c.data["status"]["reservedFor"]
            .as_array()
            .is_some_and(|r| r.iter().any(|e| e["uid"] == uid.as_str()))
    };
    let allocated = |c: &DynamicObject| c.data["status"]["allocation"].is_object();
    let mut seen = Vec::new();
    let unreserved = tokio::time::timeout(Duration::from_secs(60), async {
        let mut was_reserved = false;
        while let Some(event) = watch.next().await {
            let (WatchEvent::Added(c) | WatchEvent::Modified(c)) = event.unwrap() else {
                continue;
            };
            seen.push(c.data["status"].to_string());
            if reserved(&c) {
                was_reserved = true;
            } else if was_reserved && allocated(&c) {
                return c;
            }
        }
        panic!("the watch ended");
    })
    .await
    .unwrap_or_else(|_| panic!("not within 60s: the pod unreserved; claim states: {seen:#?}"));
    assert_eq!(
        unreserved.data["status"]["allocation"]["devices"]["results"][0]["device"],
        "gpu-0"
    );
    let cond = eventually(Duration::from_secs(20), "the refusal reported", || {
        let client = client.clone();
        async move {
            condition(&pods(&client).await["refused"], "PodScheduled")
                .filter(|c| c.reason.as_deref() == Some("SchedulerError"))
                .cloned()
        }
    })
    .await;
    assert!(
        cond.message
            .as_deref()
            .unwrap_or_default()
            .contains("bindings of refused are refused"),
        "{cond:?}"
    );

    // Bindings allowed again: the next attempt reserves the claim again and binds.
    let bindings: Api<DynamicObject> = Api::all_with(client.clone(), &policy_binding_resource());
    bindings
        .delete("refuse-binding", &DeleteParams::default())
        .await
        .unwrap();
    eventually(Duration::from_secs(60), "the pod bound", || {
        let client = client.clone();
        async move { (node_of(&pods(&client).await["refused"]) == Some("n1")).then_some(()) }
    })
    .await;
    let c = claims_api.get("gpu").await.unwrap();
    assert!(reserved(&c) && allocated(&c), "{}", c.data["status"]);
    running.stop().await;
}

fn policy_binding_resource() -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: "admissionregistration.k8s.io".into(),
        version: "v1".into(),
        api_version: "admissionregistration.k8s.io/v1".into(),
        kind: "ValidatingAdmissionPolicyBinding".into(),
        plural: "validatingadmissionpolicybindings".into(),
    }
}

/// A ValidatingAdmissionPolicy that refuses every `pods/binding` of a pod named `name`, in
/// force once this returns (checked with a pod of that name in another namespace).
async fn refuse_bindings_of(client: &kube::Client, name: &str) {
    use k8s_openapi::api::core::v1::Namespace;
    use kube::api::PostParams;

    let policy = kube::api::ApiResource {
        kind: "ValidatingAdmissionPolicy".into(),
        plural: "validatingadmissionpolicies".into(),
        ..policy_binding_resource()
    };
    create_dynamic(
        Api::all_with(client.clone(), &policy),
        serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "refuse-binding"},
            "spec": {
                "failurePolicy": "Fail",
                "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"],
                    "operations": ["CREATE"], "resources": ["pods/binding"]}]},
                "validations": [{"expression": format!("object.metadata.name != '{name}'"),
                                 "message": format!("bindings of {name} are refused")}],
            },
        }),
    )
    .await;
    create_dynamic(
        Api::all_with(client.clone(), &policy_binding_resource()),
        serde_json::json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": "refuse-binding"},
            "spec": {"policyName": "refuse-binding", "validationActions": ["Deny"]},
        }),
    )
    .await;
    let probe_ns: Namespace =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "probe"}})).unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &probe_ns)
        .await
        .unwrap();
    let probes = Api::<Pod>::namespaced(client.clone(), "probe");
    let binding = serde_json::json!({
        "apiVersion": "v1", "kind": "Binding",
        "metadata": {"name": name, "namespace": "probe"},
        "target": {"apiVersion": "v1", "kind": "Node", "name": "n1"},
    });
    for _ in 0..100 {
        let mut p = pod_json(name, "nobody", "1", None, &[]);
        p.metadata.namespace = Some("probe".into());
        probes.create(&PostParams::default(), &p).await.unwrap();
        let bound = probes
            .create_subresource::<_, serde_json::Value>(
                "binding",
                name,
                &PostParams::default(),
                &binding,
            )
            .await;
        probes
            .delete(name, &DeleteParams::default().grace_period(0))
            .await
            .unwrap();
        // Gone before the next probe is created (or the test's pod).
        eventually(Duration::from_secs(20), "the probe deleted", || {
            let probes = probes.clone();
            async move { probes.get_opt(name).await.unwrap().is_none().then_some(()) }
        })
        .await;
        if bound.is_err() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("the ValidatingAdmissionPolicy never refused a binding of {name}");
}

/// kube's `prepareCandidate`: a preemptor nominated to a node clears the nomination of a
/// lower-priority pod nominated there before it (through the API, not only in the engine).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_preemptor_clears_lower_priority_nominations_to_its_node() {
    use kube::api::PostParams;

    // No kubelet stand-in: victims stay terminating, so the nominations last.
    let (server, client) = server().await;
    create_priority_classes(&client).await;
    let mid: k8s_openapi::api::scheduling::v1::PriorityClass =
        serde_json::from_value(serde_json::json!({"metadata": {"name": "mid"}, "value": 500}))
            .unwrap();
    Api::<k8s_openapi::api::scheduling::v1::PriorityClass>::all(client.clone())
        .create(&PostParams::default(), &mid)
        .await
        .unwrap();
    let running = n1_full_of_low_pods(&server, &client, "unnominate").await;
    create_pod(&client, "mid", "sched-kube", "2", Some("mid")).await;
    eventually(Duration::from_secs(30), "mid nominated to n1", || {
        let client = client.clone();
        async move { (nominated(&pods(&client).await["mid"]) == Some("n1")).then_some(()) }
    })
    .await;
    create_pod(&client, "high", "sched-kube", "2", Some("high")).await;
    let all = eventually(Duration::from_secs(30), "high nominated to n1", || {
        let client = client.clone();
        async move {
            let all = pods(&client).await;
            (nominated(&all["high"]) == Some("n1")).then_some(all)
        }
    })
    .await;
    let mid_cleared = eventually(Duration::from_secs(10), "mid's nomination cleared", || {
        let client = client.clone();
        async move {
            let all = pods(&client).await;
            nominated(&all["mid"]).is_none().then_some(all)
        }
    })
    .await;
    assert_eq!(node_of(&mid_cleared["mid"]), None);
    assert!(all["low-a"].metadata.deletion_timestamp.is_some());

    // The victims go: the preemptor binds where it was nominated, the other pod waits.
    let pods_api = Api::<Pod>::namespaced(client.clone(), NS);
    for victim in ["low-a", "low-b"] {
        pods_api
            .delete(victim, &DeleteParams::default().grace_period(0))
            .await
            .unwrap();
    }
    let all = eventually(Duration::from_secs(30), "high bound", || {
        let client = client.clone();
        async move {
            let all = pods(&client).await;
            node_of(&all["high"]).is_some().then_some(all)
        }
    })
    .await;
    assert_eq!(node_of(&all["high"]), Some("n1"));
    assert_eq!(node_of(&all["mid"]), None);
    running.stop().await;
}
