//! `deploy/sched-kube.yaml` on a real kube-apiserver v1.34.4 (RBAC on): every object of the
//! manifest is accepted, and the scheduler, holding only its ServiceAccount's token, watches
//! everything, binds, reports, preempts and writes DynamicResources' claims without one
//! refused request.

mod common;

use std::time::Duration;

use common::*;
use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, PostParams};
use sched_core::config::SchedulerConfiguration;
use sched_kube::{KubeScheduler, Options};

fn resource(api_version: &str, kind: &str) -> (ApiResource, bool) {
    let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
    let (plural, namespaced) = match kind {
        "ServiceAccount" => ("serviceaccounts", true),
        "ConfigMap" => ("configmaps", true),
        "ClusterRole" => ("clusterroles", false),
        "ClusterRoleBinding" => ("clusterrolebindings", false),
        "Role" => ("roles", true),
        "RoleBinding" => ("rolebindings", true),
        "Deployment" => ("deployments", true),
        other => panic!("the manifest has a {other}: add it here"),
    };
    let ar = ApiResource {
        group: group.into(),
        version: version.into(),
        api_version: api_version.into(),
        kind: kind.into(),
        plural: plural.into(),
    };
    (ar, namespaced)
}

/// A DeviceClass, a slice of one GPU on n2, a claim for it and a pod using the claim;
/// returns the claims' API.
async fn dra_pod(admin: &kube::Client) -> Api<DynamicObject> {
    let claims = one_gpu_and_a_claim(admin, "n2", "gpu").await;
    let mut p = pod_json("gpu", "sched-kube", "100m", None, &[]);
    p.spec.as_mut().unwrap().resource_claims = Some(vec![
        serde_json::from_value(serde_json::json!({"name": "gpu", "resourceClaimName": "gpu"}))
            .unwrap(),
    ]);
    Api::<k8s_openapi::api::core::v1::Pod>::namespaced(admin.clone(), NS)
        .create(&PostParams::default(), &p)
        .await
        .unwrap();
    claims
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_with_only_the_permissions_its_manifest_grants() {
    let (server, admin) = server().await;
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/sched-kube.yaml");
    let text = std::fs::read_to_string(path).unwrap();
    let manifest: serde_json::Value = serde_saphyr::from_str(&text).unwrap();
    for item in manifest["items"].as_array().unwrap() {
        let (ar, namespaced) = resource(
            item["apiVersion"].as_str().unwrap(),
            item["kind"].as_str().unwrap(),
        );
        let object: DynamicObject = serde_json::from_value(item.clone()).unwrap();
        let api: Api<DynamicObject> = if namespaced {
            Api::namespaced_with(
                admin.clone(),
                item["metadata"]["namespace"].as_str().unwrap(),
                &ar,
            )
        } else {
            Api::all_with(admin.clone(), &ar)
        };
        api.create(&PostParams::default(), &object)
            .await
            .unwrap_or_else(|e| panic!("{} {}: {e}", ar.kind, item["metadata"]["name"]));
    }

    // The ServiceAccount's token, and a client holding only that.
    let request = serde_json::json!({
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
        "spec": {"expirationSeconds": 3600},
    });
    let token: serde_json::Value = Api::<ServiceAccount>::namespaced(admin.clone(), "kube-system")
        .create_subresource("token", "sched-kube", &PostParams::default(), &request)
        .await
        .unwrap();
    let token = token["status"]["token"].as_str().unwrap();
    let connection = lease_elect_kube::testing::apiserver::Connection {
        token: token.to_owned(),
        ..server.connection().clone()
    };
    let client = connection.client(NS, None).await.unwrap();

    // The configuration the manifest mounts, with a short lease for the test.
    let cm = Api::<ConfigMap>::namespaced(admin.clone(), "kube-system")
        .get("sched-kube")
        .await
        .unwrap();
    let text = &cm.data.unwrap()["config.yaml"];
    let mut config = SchedulerConfiguration::from_text(text).unwrap();
    config.leader_election.lease_duration = Duration::from_secs(2);
    config.leader_election.renew_deadline = Duration::from_millis(1500);
    config.leader_election.retry_period = Duration::from_millis(250);

    create_priority_classes(&admin).await;
    create_node(&admin, "n1", "2").await;
    let kubelet = kubelet_stand_in(admin.clone());
    let scheduler = KubeScheduler::new(client, Options::new(config, "rbac")).unwrap();
    let addr = scheduler
        .serve("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let running = Running::start(scheduler);
    create_pod(&admin, "low", "sched-kube", "2", Some("low")).await;
    eventually(Duration::from_secs(30), "low bound", || {
        let admin = admin.clone();
        async move { node_of(&pods(&admin).await["low"]).map(str::to_owned) }
    })
    .await;
    create_pod(&admin, "too-big", "sched-kube", "3", Some("low")).await;
    create_pod(&admin, "high", "sched-kube", "2", Some("high")).await;
    // Preemption: the low pod deleted, the high pod bound; the big one told why not.
    let all = eventually(
        Duration::from_secs(30),
        "high bound, too-big reported",
        || {
            let admin = admin.clone();
            async move {
                let all = pods(&admin).await;
                let done = node_of(&all["high"]).is_some()
                    && condition(&all["too-big"], "PodScheduled").is_some();
                done.then_some(all)
            }
        },
    )
    .await;
    assert!(!all.contains_key("low"));
    assert_eq!(nominated(&all["high"]), Some("n1"));
    // DynamicResources' writes (the claim's finalizer, allocation and reservedFor).
    create_node(&admin, "n2", "1").await;
    let claim = dra_pod(&admin).await;
    eventually(Duration::from_secs(30), "the claim's pod bound", || {
        let admin = admin.clone();
        async move { node_of(&pods(&admin).await["gpu"]).map(str::to_owned) }
    })
    .await;
    let status = claim.get("gpu").await.unwrap().data["status"].clone();
    assert_eq!(status["allocation"]["devices"]["results"][0]["pool"], "n2");
    for reason in ["Scheduled", "FailedScheduling", "Preempted"] {
        assert!(
            !events(&admin, reason).await.is_empty(),
            "no {reason} event"
        );
    }
    let metrics = http_get(addr, "/metrics").await;
    assert!(
        metrics.contains("sched_kube_watch_errors_total 0\n"),
        "a watch was refused: {}",
        metrics
            .lines()
            .filter(|l| l.starts_with("sched_kube"))
            .collect::<Vec<_>>()
            .join("\n")
    );
    running.stop().await;
    kubelet.abort();
}
