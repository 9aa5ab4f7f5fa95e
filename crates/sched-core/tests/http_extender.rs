//! The HTTP extender against a real HTTP server (hyper, on 127.0.0.1:0, started by each test)
//! that speaks kube's wire format: filter, prioritize and bind through the scheduling engine
//! built from a `KubeSchedulerConfiguration`; node names for a `nodeCacheCapable` extender
//! and replies with other key cases; an ignorable extender that is down; a timeout; malformed
//! replies, error statuses and the reply's own error, each a typed error.
#![cfg(feature = "http-extender")]

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use serde_json::{Value, json};

use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::extender::{Extender, ExtenderConfig, ExtenderError, HttpExtender};
use sched_core::model::{Node, Pod, PodKey};
use sched_core::profile::ScheduleError;
use sched_core::scheduler::{ClusterEvent, Scheduler, SchedulerEvent, Step};
use sched_core::snapshot::Snapshot;

/// What the test server answers.
struct Reply {
    status: u16,
    body: Vec<u8>,
    delay: Duration,
}

impl Reply {
    fn json(v: Value) -> Reply {
        Reply {
            status: 200,
            body: serde_json::to_vec(&v).unwrap(),
            delay: Duration::ZERO,
        }
    }
}

type Handler = dyn Fn(&str, &Value) -> Reply + Send + Sync;

/// A server on 127.0.0.1:0 that records every request (path, JSON body) and answers with
/// `handler`.
struct Server {
    addr: SocketAddr,
    requests: Arc<Mutex<Vec<(String, Value)>>>,
}

impl Server {
    fn start(handler: impl Fn(&str, &Value) -> Reply + Send + Sync + 'static) -> Server {
        let handler: Arc<Handler> = Arc::new(handler);
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (tx, rx) = std::sync::mpsc::channel();
        let recorded = Arc::clone(&requests);
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
                    let (handler, recorded) = (Arc::clone(&handler), Arc::clone(&recorded));
                    tokio::spawn(async move {
                        let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                            let (handler, recorded) = (Arc::clone(&handler), Arc::clone(&recorded));
                            async move {
                                let path = req.uri().path().to_string();
                                let bytes = req.into_body().collect().await?.to_bytes();
                                let body: Value =
                                    serde_json::from_slice(&bytes).unwrap_or(Value::Null);
                                let reply = handler(&path, &body);
                                recorded.lock().unwrap().push((path, body));
                                if !reply.delay.is_zero() {
                                    tokio::time::sleep(reply.delay).await;
                                }
                                Ok::<_, hyper::Error>(
                                    Response::builder()
                                        .status(reply.status)
                                        .header("Content-Type", "application/json")
                                        .body(Full::new(Bytes::from(reply.body)))
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

    fn url(&self) -> String {
        format!("http://{}/scheduler", self.addr)
    }

    fn requests(&self) -> Vec<(String, Value)> {
        self.requests.lock().unwrap().clone()
    }
}

fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                   "capacity": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    }))
    .unwrap()
}

fn pod(name: &str) -> Pod {
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"),
                     "labels": {"app": "web"}},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}
    }))
    .unwrap()
}

fn scheduler(extenders_yaml: &str) -> Scheduler {
    let config = SchedulerConfiguration::from_text(&format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n{extenders_yaml}"
    ))
    .unwrap();
    let snapshot =
        Snapshot::from_objects(vec![node("a"), node("b"), node("c")], Vec::new()).unwrap();
    Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 7)
        .and_then(Scheduler::with_blocking_http_extenders)
        .unwrap()
}

fn names(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

fn item_names(v: &Value) -> Vec<String> {
    v["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn filter_prioritize_and_bind_through_the_engine() {
    let server = Server::start(|path, body| match path {
        // Keeps every node but "a", answering with a NodeList as kube's types write it.
        "/scheduler/filter" => {
            let kept: Vec<Value> = body["Nodes"]["items"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|n| n["metadata"]["name"] != "a")
                .cloned()
                .collect();
            Reply::json(
                json!({"Nodes": {"metadata": {}, "items": kept}, "NodeNames": null,
                               "FailedNodes": {"a": "a is draining"}, "Error": ""}),
            )
        }
        "/scheduler/prioritize" => Reply::json(json!([
            {"Host": "b", "Score": 0}, {"Host": "c", "Score": 10}])),
        "/scheduler/bind" => Reply::json(json!({"Error": ""})),
        _ => Reply {
            status: 404,
            body: Vec::new(),
            delay: Duration::ZERO,
        },
    });
    let mut s = scheduler(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  prioritizeVerb: prioritize\n  weight: 2\n  bindVerb: bind\n  httpTimeout: 5s\n",
        server.url()
    ));
    let now = Duration::ZERO;
    s.apply(ClusterEvent::add(pod("web-1")), now);
    match s.schedule_one(now) {
        Step::Bind {
            pod,
            node,
            extender_binder: Some(binder),
            ..
        } => {
            // The extender's 10 x 2 x 10 = 200 decides between two equal nodes.
            assert_eq!((pod.as_str(), node.as_str()), ("default/web-1", "c"));
            binder.bind().unwrap();
            s.finish_binding(&pod, Ok(()), now);
        }
        other => panic!("{other:?}"),
    }
    let requests = server.requests();
    let paths: Vec<&str> = requests.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(
        paths,
        [
            "/scheduler/filter",
            "/scheduler/prioritize",
            "/scheduler/bind"
        ]
    );
    // kube's request: the Go field names, the pod's Kubernetes JSON, a NodeList.
    let filter = &requests[0].1;
    let keys: Vec<&str> = filter
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["NodeNames", "Nodes", "Pod"]);
    assert!(filter["NodeNames"].is_null());
    assert_eq!(filter["Pod"]["metadata"]["name"], "web-1");
    assert_eq!(filter["Pod"]["metadata"]["uid"], "uid-web-1");
    assert_eq!(
        filter["Pod"]["spec"]["containers"][0]["resources"]["requests"]["cpu"],
        "100m"
    );
    assert_eq!(filter["Nodes"]["metadata"], json!({}));
    assert_eq!(item_names(&filter["Nodes"]), ["a", "b", "c"]);
    assert_eq!(
        filter["Nodes"]["items"][0]["status"]["allocatable"]["cpu"],
        "4"
    );
    // Prioritize sees only what the filter kept; bind gets kube's binding arguments.
    assert_eq!(item_names(&requests[1].1["Nodes"]), ["b", "c"]);
    assert_eq!(
        requests[2].1,
        json!({"PodName": "web-1", "PodNamespace": "default", "PodUID": "uid-web-1", "Node": "c"})
    );
    assert!(
        s.drain_events()
            .iter()
            .any(|e| matches!(e, SchedulerEvent::Scheduled { node, .. } if node == "c"))
    );
}

#[test]
fn node_cache_capable_extenders_get_names_and_may_answer_in_any_key_case() {
    let server = Server::start(|_, body| {
        let all = names(&body["NodeNames"]);
        // An extender written with its own lower-case JSON tags, as many are.
        Reply::json(json!({
            "nodenames": all.iter().filter(|n| *n != "b").collect::<Vec<_>>(),
            "failedAndUnresolvableNodes": {"b": "b has no licence"},
            "error": ""
        }))
    });
    let mut s = scheduler(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  nodeCacheCapable: true\n",
        server.url()
    ));
    let now = Duration::ZERO;
    s.apply(ClusterEvent::add(pod("web-1")), now);
    let Step::Bind { node, .. } = s.schedule_one(now) else {
        panic!("not bound")
    };
    assert_ne!(node, "b");
    let request = &server.requests()[0].1;
    assert!(request["Nodes"].is_null());
    assert_eq!(names(&request["NodeNames"]), ["a", "b", "c"]);
}

#[test]
fn nodes_every_extender_rejects_are_explained_with_its_messages() {
    let server = Server::start(|_, _| {
        Reply::json(
            json!({"NodeNames": [], "FailedNodes": {"a": "no GPU", "b": "no GPU"},
                           "FailedAndUnresolvableNodes": {"c": "wrong zone"}}),
        )
    });
    let mut s = scheduler(&format!(
        "- urlPrefix: {}\n  filterVerb: filter\n  nodeCacheCapable: true\n",
        server.url()
    ));
    let now = Duration::ZERO;
    s.apply(ClusterEvent::add(pod("web-1")), now);
    match s.schedule_one(now) {
        // Nothing to delete anywhere: DefaultPreemption has no candidate (kube's dry run
        // keeps only nodes with victims).
        Step::Unschedulable { error, .. } => assert_eq!(error.failures().len(), 3),
        other => panic!("{other:?}"),
    }
    let message = s
        .drain_events()
        .into_iter()
        .find_map(|e| match e {
            SchedulerEvent::FailedScheduling { message, .. } => Some(message),
            _ => None,
        })
        .unwrap();
    // Preemption tries the nodes the extender failed (nothing to remove there), not the one
    // it failed as unresolvable; kube v1.34 prints its message after the reasons.
    assert_eq!(
        message,
        "0/3 nodes are available: 1 wrong zone, 2 no GPU. no new claims to deallocate, \
         preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, \
         2 No preemption victims found for incoming pod."
    );
}

/// An address nothing listens on.
fn closed_port() -> String {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    drop(l);
    format!("http://{addr}/scheduler")
}

#[test]
fn an_ignorable_extender_that_is_down_is_skipped_and_a_required_one_fails_the_attempt() {
    let now = Duration::ZERO;
    let down = closed_port();
    let mut s = scheduler(&format!(
        "- urlPrefix: {down}\n  filterVerb: filter\n  ignorable: true\n  httpTimeout: 2s\n"
    ));
    s.apply(ClusterEvent::add(pod("web-1")), now);
    assert!(matches!(s.schedule_one(now), Step::Bind { .. }));
    let skipped: Vec<String> = s
        .drain_events()
        .into_iter()
        .filter_map(|e| match e {
            SchedulerEvent::ExtenderSkipped {
                extender, message, ..
            } => {
                assert_eq!(extender, down);
                Some(message)
            }
            _ => None,
        })
        .collect();
    assert_eq!(skipped.len(), 1);
    assert!(skipped[0].starts_with(&format!("filter with extender at URL {down}/filter: ")));

    let mut s = scheduler(&format!(
        "- urlPrefix: {down}\n  filterVerb: filter\n  httpTimeout: 2s\n"
    ));
    s.apply(ClusterEvent::add(pod("web-1")), now);
    match s.schedule_one(now) {
        Step::Failed {
            error: ScheduleError::Extender { extender, source },
            ..
        } => {
            assert_eq!(extender, down);
            assert!(matches!(
                source.downcast_ref::<ExtenderError>(),
                Some(ExtenderError::Transport { .. })
            ));
        }
        other => panic!("{other:?}"),
    }
}

fn http(url: &str, timeout: Duration) -> HttpExtender {
    HttpExtender::new(
        &ExtenderConfig::new(url)
            .filter_verb("filter")
            .prioritize_verb("prioritize", 1)
            .bind_verb("bind")
            .node_cache_capable(true)
            .http_timeout(timeout),
    )
    .unwrap()
}

#[test]
fn http_timeout_is_honoured() {
    let server = Server::start(|_, _| Reply {
        delay: Duration::from_secs(3),
        ..Reply::json(json!({}))
    });
    let ext = http(&server.url(), Duration::from_millis(300));
    let n = node("a");
    let start = Instant::now();
    let err = ext.filter(&pod("p"), &[&n]).unwrap_err();
    let took = start.elapsed();
    assert!(
        matches!(err, ExtenderError::Timeout { timeout, .. } if timeout == Duration::from_millis(300)),
        "{err:?}"
    );
    assert!(took < Duration::from_secs(2), "{took:?}");
}

#[test]
fn bad_replies_are_typed_errors() {
    let server = Server::start(|path, _| match path {
        "/scheduler/filter" => Reply {
            status: 200,
            body: b"<html>oops</html>".to_vec(),
            delay: Duration::ZERO,
        },
        "/scheduler/prioritize" => Reply::json(json!([{"Host": "a", "Score": "high"}])),
        "/scheduler/bind" => Reply::json(json!({"Error": "node a is gone"})),
        _ => Reply {
            status: 500,
            body: b"boom".to_vec(),
            delay: Duration::ZERO,
        },
    });
    let ext = http(&server.url(), Duration::from_secs(5));
    let n = node("a");
    let p = pod("p");
    let err = ext.filter(&p, &[&n]).unwrap_err();
    assert!(matches!(err, ExtenderError::Decode { .. }), "{err:?}");
    assert!(
        err.to_string().contains("malformed reply: not JSON"),
        "{err}"
    );
    let err = ext.prioritize(&p, &[&n]).unwrap_err();
    assert!(
        err.to_string()
            .ends_with("malformed reply: [0].Score: expected a number, found a string"),
        "{err}"
    );
    let args = sched_core::extender::ExtenderBindingArgs::new(&p, "a");
    let err = ext.bind(&args).unwrap_err();
    assert!(
        matches!(&err, ExtenderError::Reply(m) if m == "node a is gone"),
        "{err:?}"
    );

    let other = HttpExtender::new(
        &ExtenderConfig::new(format!("http://{}/other/", server.addr)).filter_verb("filter"),
    )
    .unwrap();
    let err = other.filter(&p, &[&n]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "failed filter with extender at URL http://{}/other/filter, code 500",
            server.addr
        )
    );
}

#[test]
fn a_node_the_extender_was_not_given_is_an_error() {
    let server = Server::start(|_, _| Reply::json(json!({"NodeNames": ["a", "zzz"]})));
    let ext = http(&server.url(), Duration::from_secs(5));
    let n = node("a");
    let err = ext.filter(&pod("p"), &[&n]).unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "extender {:?} claims a filtered node \"zzz\" which is not found in the input node list",
            server.url()
        )
    );
}

#[test]
fn unsupported_tls_settings_are_refused_when_building() {
    let mut tls = sched_core::extender::ExtenderTlsConfig::new();
    tls.server_name = "extender.example".into();
    let err = HttpExtender::new(&ExtenderConfig::new("https://127.0.0.1:1").https(Some(tls)))
        .unwrap_err();
    assert!(matches!(err, ExtenderError::Config { .. }));
    assert_eq!(
        err.to_string(),
        "extender \"https://127.0.0.1:1\": tlsConfig.serverName is not supported by this client"
    );
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n- urlPrefix: https://127.0.0.1:1\n  tlsConfig: {caFile: /nonexistent/ca.pem}\n",
    )
    .unwrap();
    let err = Scheduler::from_config(&config, &Registry::v1_34(), Snapshot::new(), 1)
        .and_then(Scheduler::with_blocking_http_extenders)
        .unwrap_err();
    assert!(
        err.to_string().contains(
            "extenders[0]: extender \"https://127.0.0.1:1\": reading the CA \"/nonexistent/ca.pem\""
        ),
        "{err}"
    );
}

#[test]
fn a_configurations_ignorable_extenders_are_called_last() {
    let s = scheduler(
        "- {urlPrefix: 'http://127.0.0.1:1/a', ignorable: true}\n- {urlPrefix: 'http://127.0.0.1:1/b'}\n- {urlPrefix: 'http://127.0.0.1:1/c', ignorable: true}\n- {urlPrefix: 'http://127.0.0.1:1/d'}\n",
    );
    let order: Vec<&str> = s.extenders().map(|e| e.name()).collect();
    assert_eq!(
        order,
        [
            "http://127.0.0.1:1/b",
            "http://127.0.0.1:1/d",
            "http://127.0.0.1:1/a",
            "http://127.0.0.1:1/c"
        ]
    );
}

#[test]
fn the_preempt_verb_gets_victims_as_uids_and_its_answer_is_resolved_on_the_snapshot() {
    let server = Server::start(|_, body| {
        // Agrees, answering with UIDs as kube's extenders always do.
        Reply::json(json!({"NodeNameToMetaVictims": body["NodeNameToMetaVictims"].clone()}))
    });
    let config = SchedulerConfiguration::from_text(&format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nextenders:\n- urlPrefix: {}\n  preemptVerb: preempt\n  nodeCacheCapable: true\n",
        server.url()
    ))
    .unwrap();
    let low: Pod = serde_json::from_value(json!({
        "metadata": {"name": "low", "namespace": "default", "uid": "uid-low"},
        "spec": {"nodeName": "a", "priority": 0, "containers": [{"name": "c",
            "resources": {"requests": {"cpu": "3500m"}}}]}
    }))
    .unwrap();
    let high: Pod = serde_json::from_value(json!({
        "metadata": {"name": "high", "namespace": "default", "uid": "uid-high"},
        "spec": {"priority": 100, "containers": [{"name": "c",
            "resources": {"requests": {"cpu": "1"}}}]}
    }))
    .unwrap();
    let snapshot = Snapshot::from_objects(vec![node("a")], vec![low]).unwrap();
    let mut s = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1)
        .and_then(Scheduler::with_blocking_http_extenders)
        .unwrap();
    let now = Duration::ZERO;
    s.apply(ClusterEvent::add(high), now);
    match s.schedule_one(now) {
        Step::Preempt { node, victims, .. } => {
            assert_eq!(
                (node.as_str(), victims),
                ("a", vec![PodKey::from("default/low")])
            )
        }
        other => panic!("{other:?}"),
    }
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let (path, body) = &requests[0];
    assert_eq!(path, "/scheduler/preempt");
    assert_eq!(body["Pod"]["metadata"]["name"], "high");
    assert!(body["NodeNameToVictims"].is_null());
    assert_eq!(
        body["NodeNameToMetaVictims"],
        json!({"a": {"Pods": [{"UID": "uid-low"}], "NumPDBViolations": 0}})
    );
}
