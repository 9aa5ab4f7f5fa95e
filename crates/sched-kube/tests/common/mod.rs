//! Helpers of the tests on a real kube-apiserver: objects, polling, a stand-in kubelet.

#![allow(dead_code)] // each test file uses a part

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, PostParams};
use kube::{Api, Client};
use lease_elect_kube::testing::apiserver::KubeApiServer;
use sched_core::config::SchedulerConfiguration;

pub const NS: &str = "default";

pub fn config(lease_name: &str) -> SchedulerConfiguration {
    SchedulerConfiguration::from_text(&format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         leaderElection:\n  leaseDuration: 3s\n  renewDeadline: 2s\n  retryPeriod: 250ms\n  \
         resourceNamespace: default\n  resourceName: {lease_name}\n\
         profiles:\n- schedulerName: sched-kube\n"
    ))
    .expect("valid configuration")
}

pub async fn create_node(client: &Client, name: &str, cpu: &str) {
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {
            "capacity": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "allocatable": {"cpu": cpu, "memory": "8Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }))
    .unwrap();
    Api::<Node>::all(client.clone())
        .create(&PostParams::default(), &node)
        .await
        .unwrap_or_else(|e| panic!("create node {name}: {e}"));
    // The API server taints a new node not-ready (TaintNodesByCondition); the node
    // lifecycle controller, which is not running, would lift it once the node is Ready.
    Api::<Node>::all(client.clone())
        .patch(
            name,
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(serde_json::json!({"spec": {"taints": null}})),
        )
        .await
        .unwrap_or_else(|e| panic!("untaint node {name}: {e}"));
}

pub async fn create_pod(
    client: &Client,
    name: &str,
    scheduler: &str,
    cpu: &str,
    class: Option<&str>,
) {
    create_labeled_pod(client, name, scheduler, cpu, class, &[]).await;
}

pub async fn create_labeled_pod(
    client: &Client,
    name: &str,
    scheduler: &str,
    cpu: &str,
    class: Option<&str>,
    labels: &[(&str, &str)],
) {
    let pod = pod_json(name, scheduler, cpu, class, labels);
    Api::<Pod>::namespaced(client.clone(), NS)
        .create(&PostParams::default(), &pod)
        .await
        .unwrap_or_else(|e| panic!("create pod {name}: {e}"));
}

pub fn pod_json(
    name: &str,
    scheduler: &str,
    cpu: &str,
    class: Option<&str>,
    labels: &[(&str, &str)],
) -> Pod {
    let labels: BTreeMap<&str, &str> = labels.iter().copied().collect();
    let mut pod = serde_json::json!({
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {
            "schedulerName": scheduler,
            "terminationGracePeriodSeconds": 30,
            "containers": [{"name": "c", "image": "pause",
                            "resources": {"requests": {"cpu": cpu}}}],
        },
    });
    if let Some(c) = class {
        pod["spec"]["priorityClassName"] = c.into();
    }
    serde_json::from_value(pod).unwrap()
}

pub async fn pods(client: &Client) -> BTreeMap<String, Pod> {
    Api::<Pod>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|p| (p.metadata.name.clone().unwrap_or_default(), p))
        .collect()
}

pub fn nominated(p: &Pod) -> Option<&str> {
    p.status.as_ref()?.nominated_node_name.as_deref()
}

pub fn node_of(p: &Pod) -> Option<&str> {
    p.spec.as_ref()?.node_name.as_deref()
}

pub fn condition<'a>(
    p: &'a Pod,
    type_: &str,
) -> Option<&'a k8s_openapi::api::core::v1::PodCondition> {
    p.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
}

/// Polls `check` every 100 ms until it returns `Some`, for at most `limit`.
pub async fn eventually<T, F, Fut>(limit: Duration, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let start = Instant::now();
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(start.elapsed() < limit, "not within {limit:?}: {what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub async fn events(client: &Client, reason: &str) -> Vec<Event> {
    Api::<Event>::namespaced(client.clone(), NS)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.reason.as_deref() == Some(reason))
        .collect()
}

/// The kubelet's part in a graceful deletion, for nodes without one: a pod whose deletion
/// began is removed at once.
pub fn kubelet_stand_in(client: Client) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let api = Api::<Pod>::namespaced(client, NS);
        loop {
            if let Ok(list) = api.list(&ListParams::default()).await {
                for p in list.items {
                    if p.metadata.deletion_timestamp.is_some() {
                        let name = p.metadata.name.unwrap_or_default();
                        let _ = api
                            .delete(&name, &DeleteParams::default().grace_period(0))
                            .await;
                    }
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
}

pub async fn create_priority_classes(client: &Client) {
    for (name, value) in [("low", 10), ("high", 1000)] {
        let pc: k8s_openapi::api::scheduling::v1::PriorityClass =
            serde_json::from_value(serde_json::json!({"metadata": {"name": name}, "value": value}))
                .unwrap();
        Api::<k8s_openapi::api::scheduling::v1::PriorityClass>::all(client.clone())
            .create(&PostParams::default(), &pc)
            .await
            .unwrap();
    }
}

pub async fn server() -> (KubeApiServer, Client) {
    let _ = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::INFO)
        .with_test_writer()
        .try_init();
    let server = KubeApiServer::start()
        .await
        .unwrap_or_else(|e| panic!("kube-apiserver: {e}"));
    let client = server
        .connection()
        .client(NS, Some(Duration::from_secs(10)))
        .await
        .unwrap();
    (server, client)
}

/// A client for the scheduler: without a read timeout, so that its watches stay open.
pub async fn scheduler_client(server: &KubeApiServer) -> Client {
    server.connection().client(NS, None).await.unwrap()
}

/// A scheduler running on a task until [`Running::stop`].
pub struct Running {
    stop: tokio_util::sync::CancellationToken,
    task: tokio::task::JoinHandle<Result<(), sched_kube::RunError>>,
}

impl Running {
    pub fn start(scheduler: sched_kube::KubeScheduler) -> Running {
        let stop = tokio_util::sync::CancellationToken::new();
        let token = stop.clone();
        let task = tokio::spawn(scheduler.run(async move { token.cancelled().await }));
        Running { stop, task }
    }

    /// Stops it (a leader releases its Lease) and expects a clean end.
    pub async fn stop(self) {
        self.stop.cancel();
        self.task.await.unwrap().unwrap();
    }
}

pub async fn http_get(addr: std::net::SocketAddr, path: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n").as_bytes())
        .await
        .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).await.unwrap();
    out.split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or(out)
}

/// kube's `resource.k8s.io/v1` kind `kind` (DeviceClass, ResourceSlice, ResourceClaim).
pub fn dra_resource(kind: &str, plural: &str) -> kube::api::ApiResource {
    kube::api::ApiResource {
        group: "resource.k8s.io".into(),
        version: "v1".into(),
        api_version: "resource.k8s.io/v1".into(),
        kind: kind.into(),
        plural: plural.into(),
    }
}

/// Creates the object `json` through `api`.
pub async fn create_dynamic(api: Api<kube::api::DynamicObject>, json: serde_json::Value) {
    let o: kube::api::DynamicObject = serde_json::from_value(json).unwrap();
    api.create(&PostParams::default(), &o).await.unwrap();
}

/// A DeviceClass `gpu.example.com`, a ResourceSlice of one GPU (`gpu-0`) on `node` and the
/// claim `claim` in [`NS`] for one GPU of that class; returns the claims' API.
pub async fn one_gpu_and_a_claim(
    client: &Client,
    node: &str,
    claim: &str,
) -> Api<kube::api::DynamicObject> {
    create_dynamic(
        Api::all_with(client.clone(), &dra_resource("DeviceClass", "deviceclasses")),
        serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
            "metadata": {"name": "gpu.example.com"},
            "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]},
        }),
    )
    .await;
    create_dynamic(
        Api::all_with(
            client.clone(),
            &dra_resource("ResourceSlice", "resourceslices"),
        ),
        serde_json::json!({
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": format!("{node}-gpus")},
            "spec": {"driver": "gpu.example.com", "nodeName": node,
                     "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
                     "devices": [{"name": "gpu-0"}]},
        }),
    )
    .await;
    let claims: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        NS,
        &dra_resource("ResourceClaim", "resourceclaims"),
    );
    create_dynamic(claims.clone(), serde_json::json!({
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
        "metadata": {"name": claim, "namespace": NS},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
            "deviceClassName": "gpu.example.com", "allocationMode": "ExactCount", "count": 1}}]}},
    }))
    .await;
    claims
}

/// Node n1 of 2 CPUs, a scheduler holding the Lease `lease` as `replica-a`, and the pods
/// `low-a` and `low-b` (priority class `low`, 1 CPU each) bound there.
pub async fn n1_full_of_low_pods(server: &KubeApiServer, client: &Client, lease: &str) -> Running {
    create_node(client, "n1", "2").await;
    let scheduler = sched_kube::KubeScheduler::new(
        scheduler_client(server).await,
        sched_kube::Options::new(config(lease), "replica-a"),
    )
    .unwrap();
    let running = Running::start(scheduler);
    create_pod(client, "low-a", "sched-kube", "1", Some("low")).await;
    create_pod(client, "low-b", "sched-kube", "1", Some("low")).await;
    eventually(Duration::from_secs(30), "the low pods bound", || {
        let client = client.clone();
        async move {
            let all = pods(&client).await;
            (all.values().filter(|p| node_of(p).is_some()).count() == 2).then_some(())
        }
    })
    .await;
    running
}
