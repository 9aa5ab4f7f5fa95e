//! A configuration's HTTP extender through the driver, against a real HTTP server (hyper, on
//! 127.0.0.1:0, on its own thread): the filter verb holds its reply for the pods it manages
//! until the test lets it go, and the pods it does not manage are bound meanwhile; then the
//! managed pod is placed with the extender's answer and bound by the extender's bind verb.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use serde_json::{Value, json};

use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{Node, Pod};
use sched_core::scheduler::Scheduler;
use sched_core::snapshot::Snapshot;
use sched_driver::{BindError, Binder, Binding, Driver, DriverEvent, StepTaken};
use tokio::sync::{mpsc, watch};

const GPU: &str = "example.com/gpu";

fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "8", "memory": "64Gi", "pods": "110", GPU: "4"},
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap()
}

fn pod(name: &str, gpu: bool) -> Pod {
    let mut requests = json!({"cpu": "100m", "memory": "64Mi"});
    if gpu {
        requests[GPU] = json!("1");
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"containers": [{"name": "c", "image": "pause",
            "resources": {"requests": requests, "limits": if gpu { json!({GPU: "1"}) } else { json!({}) }}}]}
    }))
    .unwrap()
}

/// The extender: `filter` tells the test it was called, then waits for `release` before
/// keeping every node but "a"; `prioritize` prefers "c"; `bind` records the binding.
struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
}

fn start_server(called: mpsc::UnboundedSender<String>, release: watch::Receiver<bool>) -> Server {
    let requests = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&requests);
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let (called, release, recorded) =
                    (called.clone(), release.clone(), Arc::clone(&recorded));
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                        let (called, mut release, recorded) =
                            (called.clone(), release.clone(), Arc::clone(&recorded));
                        async move {
                            let path = req.uri().path().to_string();
                            let bytes = req.into_body().collect().await?.to_bytes();
                            let body: Value = serde_json::from_slice(&bytes).unwrap();
                            recorded.lock().unwrap().push((path.clone(), body.clone()));
                            let _ = called.send(path.clone());
                            let reply = match path.as_str() {
                                "/scheduler/filter" => {
                                    // Slow: the reply waits until the test lets it go.
                                    let _ = release.wait_for(|go| *go).await;
                                    let kept: Vec<Value> = body["Nodes"]["items"]
                                        .as_array()
                                        .unwrap()
                                        .iter()
                                        .filter(|n| n["metadata"]["name"] != "a")
                                        .cloned()
                                        .collect();
                                    json!({"Nodes": {"items": kept},
                                           "FailedNodes": {"a": "a has no free GPU"}, "Error": ""})
                                }
                                // Agrees, answering with UIDs as kube's extenders do.
                                "/scheduler/preempt" => json!({
                                    "NodeNameToMetaVictims": body["NodeNameToMetaVictims"].clone()
                                }),
                                "/scheduler/prioritize" => {
                                    json!([{"Host": "b", "Score": 0}, {"Host": "c", "Score": 10}])
                                }
                                _ => json!({"Error": ""}),
                            };
                            Ok::<_, hyper::Error>(
                                Response::builder()
                                    .status(200)
                                    .body(Full::new(Bytes::from(
                                        serde_json::to_vec(&reply).unwrap(),
                                    )))
                                    .unwrap(),
                            )
                        }
                    });
                    let io = hyper_util::rt::TokioIo::new(stream);
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(io, service)
                        .await;
                });
            }
        });
    });
    Server {
        addr: rx.recv().unwrap(),
        requests,
    }
}

/// Reports each pod it binds.
struct ChannelBinder(mpsc::UnboundedSender<String>);

#[sched_driver::async_trait]
impl Binder for ChannelBinder {
    async fn bind(&self, b: &Binding) -> Result<(), BindError> {
        let _ = self.0.send(b.pod.to_string());
        Ok(())
    }
}

/// The next value of `rx`, failing the test rather than hanging if none comes.
async fn next<T>(rx: &mut mpsc::UnboundedReceiver<T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), rx.recv())
        .await
        .expect("nothing came in a minute")
        .expect("channel open")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_http_extender_does_not_delay_pods_it_does_not_manage() {
    let (called_tx, mut called) = mpsc::unbounded_channel();
    let (release_tx, release) = watch::channel(false);
    let server = start_server(called_tx, release);
    let config = SchedulerConfiguration::from_text(&format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         extenders:\n- urlPrefix: http://{}/scheduler\n  filterVerb: filter\n  \
         prioritizeVerb: prioritize\n  weight: 2\n  bindVerb: bind\n  httpTimeout: 120s\n  \
         managedResources: [{{name: {GPU}}}]\n",
        server.addr
    ))
    .unwrap();
    let snapshot =
        Snapshot::from_objects(vec![node("a"), node("b"), node("c")], Vec::new()).unwrap();
    let scheduler = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 7).unwrap();
    let (bound_tx, mut bound) = mpsc::unbounded_channel();
    let driver = Driver::builder(scheduler)
        .binder(ChannelBinder(bound_tx))
        .build()
        .unwrap();
    let handle = driver.handle();
    let mut events = handle.subscribe();
    let run = tokio::spawn(driver.run(std::future::pending()));

    // The GPU pod first: its filter call goes out and hangs.
    handle
        .apply(sched_core::scheduler::ClusterEvent::add(pod("gpu", true)))
        .unwrap();
    assert_eq!(next(&mut called).await, "/scheduler/filter");
    // Pods the extender does not manage, added after it, are bound while its call is out.
    for i in 0..3 {
        handle
            .apply(sched_core::scheduler::ClusterEvent::add(pod(
                &format!("plain-{i}"),
                false,
            )))
            .unwrap();
    }
    let mut plain: Vec<String> = Vec::new();
    for _ in 0..3 {
        plain.push(next(&mut bound).await);
    }
    plain.sort();
    assert_eq!(
        plain,
        ["default/plain-0", "default/plain-1", "default/plain-2"]
    );
    // The extender has still only been asked to filter (its reply is held).
    let paths: Vec<String> = server
        .requests
        .lock()
        .unwrap()
        .iter()
        .map(|(p, _)| p.clone())
        .collect();
    assert_eq!(paths, ["/scheduler/filter"]);

    // Let the filter answer: the GPU pod is scored with the extender and bound by it.
    release_tx.send(true).unwrap();
    assert_eq!(next(&mut called).await, "/scheduler/prioritize");
    assert_eq!(next(&mut called).await, "/scheduler/bind");
    let bind = server.requests.lock().unwrap()[2].1.clone();
    assert_eq!(
        bind,
        json!({"PodName": "gpu", "PodNamespace": "default", "PodUID": "uid-gpu", "Node": "c"})
    );
    // The plain pods' filter went nowhere near the extender; the caller's binder never saw
    // the GPU pod.
    let filter = server.requests.lock().unwrap()[0].1.clone();
    assert_eq!(filter["Pod"]["metadata"]["name"], "gpu");
    handle.settled().await.unwrap();
    assert!(bound.try_recv().is_err());

    // The driver's steps in order: the call handed out, the plain pods bound, then the
    // GPU pod bound.
    let mut steps = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let DriverEvent::Step(s) = e {
            steps.push(s);
        }
    }
    let order: Vec<String> = steps
        .iter()
        .filter_map(|s| match s {
            StepTaken::CallExtenders { pod, nodes } => Some(format!("call {pod} {nodes:?}")),
            StepTaken::Bind { pod, node, .. } if pod == "default/gpu" => {
                Some(format!("bind {pod} {node}"))
            }
            StepTaken::Bind { .. } => Some("bind plain".to_string()),
            _ => None,
        })
        .collect();
    assert_eq!(
        order,
        [
            r#"call default/gpu ["a", "b", "c"]"#,
            "bind plain",
            "bind plain",
            "bind plain",
            "bind default/gpu c"
        ]
    );
    handle.shutdown();
    run.await.unwrap().unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_preempt_verb_is_called_through_the_driver() {
    let (called_tx, mut called) = mpsc::unbounded_channel();
    let (_release_tx, release) = watch::channel(true);
    let server = start_server(called_tx, release);
    let config = SchedulerConfiguration::from_text(&format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         extenders:\n- urlPrefix: http://{}/scheduler\n  preemptVerb: preempt\n  \
         nodeCacheCapable: true\n",
        server.addr
    ))
    .unwrap();
    let low: Pod = serde_json::from_value(json!({
        "metadata": {"name": "low", "namespace": "default", "uid": "uid-low"},
        "spec": {"nodeName": "a", "priority": 0, "containers": [{"name": "c",
            "resources": {"requests": {"cpu": "7500m"}}}]}
    }))
    .unwrap();
    let high: Pod = serde_json::from_value(json!({
        "metadata": {"name": "high", "namespace": "default", "uid": "uid-high"},
        "spec": {"priority": 100, "containers": [{"name": "c",
            "resources": {"requests": {"cpu": "1"}}}]}
    }))
    .unwrap();
    let snapshot = Snapshot::from_objects(vec![node("a")], vec![low]).unwrap();
    let scheduler = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1).unwrap();
    let (bound_tx, _bound) = mpsc::unbounded_channel();
    let driver = Driver::builder(scheduler)
        .binder(ChannelBinder(bound_tx))
        .build()
        .unwrap();
    let handle = driver.handle();
    let mut events = handle.subscribe();
    let run = tokio::spawn(driver.run(std::future::pending()));
    handle
        .apply(sched_core::scheduler::ClusterEvent::add(high))
        .unwrap();
    assert_eq!(next(&mut called).await, "/scheduler/preempt");
    let preempt = loop {
        match tokio::time::timeout(Duration::from_secs(60), events.recv())
            .await
            .expect("an event in a minute")
            .unwrap()
        {
            DriverEvent::Step(StepTaken::Preempt { node, victims, .. }) => break (node, victims),
            _ => continue,
        }
    };
    assert_eq!(preempt, ("a".to_string(), vec!["default/low".into()]));
    let body = server.requests.lock().unwrap()[0].1.clone();
    assert_eq!(
        body["NodeNameToMetaVictims"],
        json!({"a": {"Pods": [{"UID": "uid-low"}], "NumPDBViolations": 0}})
    );
    handle.shutdown();
    run.await.unwrap().unwrap();
}

#[test]
fn unusable_tls_settings_fail_the_build() {
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         extenders:\n- urlPrefix: https://127.0.0.1:1\n  tlsConfig: {caFile: /nonexistent/ca.pem}\n",
    )
    .unwrap();
    let scheduler =
        Scheduler::from_config(&config, &Registry::v1_34(), Snapshot::new(), 1).unwrap();
    let (tx, _rx) = mpsc::unbounded_channel();
    let err = Driver::builder(scheduler)
        .binder(ChannelBinder(tx))
        .build()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("extender \"https://127.0.0.1:1\": reading the CA \"/nonexistent/ca.pem\""),
        "{err}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_does_not_wait_for_an_extender_call() {
    let (called_tx, mut called) = mpsc::unbounded_channel();
    // The filter never answers.
    let (_release_tx, release) = watch::channel(false);
    let server = start_server(called_tx, release);
    let config = SchedulerConfiguration::from_text(&format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         extenders:\n- urlPrefix: http://{}/scheduler\n  filterVerb: filter\n  \
         httpTimeout: 600s\n",
        server.addr
    ))
    .unwrap();
    let snapshot = Snapshot::from_objects(vec![node("a")], Vec::new()).unwrap();
    let scheduler = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 7).unwrap();
    let (bound_tx, _bound) = mpsc::unbounded_channel();
    let driver = Driver::builder(scheduler)
        .binder(ChannelBinder(bound_tx))
        .build()
        .unwrap();
    let handle = driver.handle();
    let run = tokio::spawn(driver.run(std::future::pending()));
    handle
        .apply(sched_core::scheduler::ClusterEvent::add(pod("slow", false)))
        .unwrap();
    assert_eq!(next(&mut called).await, "/scheduler/filter");
    handle.shutdown();
    let scheduler = tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the driver stops without the extender's reply")
        .unwrap()
        .unwrap();
    // The abandoned attempt is an error: the pod backs off, nothing stays parked.
    assert_eq!(scheduler.parked().count(), 0);
    assert_eq!(
        scheduler.queue().position("default/slow"),
        Some(sched_core::scheduler::QueueName::Backoff)
    );
}
