//! Remote extenders driven by hand, without HTTP: the engine parks a pod a remote extender is
//! interested in and hands out `Step::CallExtenders`; other pods schedule meanwhile; the
//! replies, given back, finish the attempt on the snapshot of that moment (a node that filled
//! up meanwhile is filtered again); a reply for a pod deleted or changed meanwhile is dropped.

use std::time::Duration;

use serde_json::{Value, json};

use sched_core::extender::{ExtenderCall, ExtenderConfig, ExtenderError, RemoteExtender};
use sched_core::model::{Node, Pod};
use sched_core::plugins::node::PodFitsResources;
use sched_core::profile::ProfileBuilder;
use sched_core::scheduler::{
    ClusterEvent, ObjectKey, QueueSettings, Scheduler, SchedulerEvent, Step,
};
use sched_core::snapshot::Snapshot;

const GPU: &str = "example.com/gpu";

fn node(name: &str) -> Node {
    serde_json::from_value(json!({
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10", GPU: "4"}}
    }))
    .unwrap()
}

/// A pod asking for `cpu`, and for a GPU (which the extender manages) when `gpu`.
fn pod(name: &str, cpu: &str, gpu: bool, node: &str) -> Pod {
    let mut requests = json!({"cpu": cpu});
    if gpu {
        requests[GPU] = json!("1");
    }
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"nodeName": node, "containers": [{"name": "c",
            "resources": {"requests": requests}}]}
    }))
    .unwrap()
}

fn engine(config: ExtenderConfig) -> Scheduler {
    let snapshot = Snapshot::from_objects(vec![node("a"), node("b")], Vec::new()).unwrap();
    let profile = ProfileBuilder::new()
        .predicate(PodFitsResources::new())
        .threads(1)
        .seed(1)
        .build()
        .unwrap();
    Scheduler::new(
        vec![("default-scheduler".into(), profile)],
        snapshot,
        QueueSettings::default(),
    )
    .with_extender(RemoteExtender::new(&config))
}

fn gpu_extender() -> ExtenderConfig {
    ExtenderConfig::new("http://gpu.example/scheduler")
        .filter_verb("filter")
        .prioritize_verb("prioritize", 1)
        .managed_resource(GPU, false)
}

/// Answers every request of `call` with `filter` (kept nodes and failed nodes) and `scores`.
fn answer(call: &mut ExtenderCall, keep: &[&str], failed: Value, scores: Value) -> Vec<String> {
    let mut verbs = Vec::new();
    while let Some(request) = call.next_request() {
        verbs.push(request.verb.clone());
        let body: Value = serde_json::from_slice(&request.body).unwrap();
        let reply = match request.verb.as_str() {
            "filter" => {
                let kept: Vec<Value> = body["Nodes"]["items"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|n| keep.contains(&n["metadata"]["name"].as_str().unwrap()))
                    .cloned()
                    .collect();
                json!({"Nodes": {"items": kept}, "FailedNodes": failed, "Error": ""})
            }
            _ => scores.clone(),
        };
        call.answer(Ok(serde_json::to_vec(&reply).unwrap()));
    }
    assert!(call.is_done());
    verbs
}

fn expect_call(step: Step) -> Box<ExtenderCall> {
    match step {
        Step::CallExtenders { call } => call,
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_pod_parked_on_an_extender_call_does_not_hold_up_other_pods() {
    let mut s = engine(gpu_extender());
    let now = Duration::ZERO;
    s.apply(ClusterEvent::add(pod("gpu", "100m", true, "")), now);
    s.apply(ClusterEvent::add(pod("plain", "100m", false, "")), now);
    // The GPU pod passed the filter plugins on both nodes and waits for its extender.
    let mut call = expect_call(s.schedule_one(now));
    assert_eq!(call.pod_key(), "default/gpu");
    let sent: Vec<&str> = call
        .nodes()
        .iter()
        .map(|n| n.metadata.name.as_str())
        .collect();
    assert_eq!(sent, ["a", "b"]);
    assert_eq!(s.parked().collect::<Vec<_>>(), ["default/gpu"]);
    assert!(s.snapshot().node_of("default/gpu").is_none());
    // Meanwhile the plain pod, which the extender does not manage, is placed and bound.
    match s.schedule_one(now) {
        Step::Bind { pod, .. } => {
            assert_eq!(pod, "default/plain");
            s.finish_binding(&pod, Ok(()), now);
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(s.schedule_one(now), Step::Idle { until: None }));
    // The extender keeps both nodes and prefers b.
    let verbs = answer(
        &mut call,
        &["a", "b"],
        json!({}),
        json!([{"Host": "a", "Score": 0}, {"Host": "b", "Score": 10}]),
    );
    assert_eq!(verbs, ["filter", "prioritize"]);
    s.extender_reply(*call);
    match s.schedule_one(now) {
        Step::Bind { pod, node, .. } => {
            assert_eq!((pod.as_str(), node.as_str()), ("default/gpu", "b"));
            s.finish_binding(&pod, Ok(()), now);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.parked().count(), 0);
    assert!(matches!(s.schedule_one(now), Step::Idle { until: None }));
}

#[test]
fn a_node_the_extender_approved_that_filled_up_meanwhile_is_filtered_again() {
    let mut s = engine(gpu_extender());
    let now = Duration::ZERO;
    s.apply(ClusterEvent::add(pod("gpu", "600m", true, "")), now);
    let mut call = expect_call(s.schedule_one(now));
    // While the call is out, a pod bound elsewhere fills node a.
    s.apply(ClusterEvent::add(pod("filler", "800m", false, "a")), now);
    // The extender approves a only, rejecting b.
    answer(
        &mut call,
        &["a"],
        json!({"b": "b has no free GPU"}),
        json!([]),
    );
    s.extender_reply(*call);
    match s.schedule_one(now) {
        Step::Unschedulable { pod, error } => {
            assert_eq!(pod, "default/gpu");
            let text = error.to_string();
            assert!(text.contains("1 Insufficient cpu"), "{text}");
            assert!(text.contains("1 b has no free GPU"), "{text}");
        }
        other => panic!("{other:?}"),
    }
    assert!(s.snapshot().node_of("default/gpu").is_none());
    assert_eq!(s.parked().count(), 0);
}

#[test]
fn a_reply_for_a_pod_deleted_or_changed_meanwhile_is_dropped() {
    let mut s = engine(gpu_extender());
    let now = Duration::ZERO;
    // Deleted while its call is out: the reply is dropped, nothing stays parked or queued.
    s.apply(ClusterEvent::add(pod("gone", "100m", true, "")), now);
    let mut call = expect_call(s.schedule_one(now));
    s.apply(
        ClusterEvent::Delete(ObjectKey::Pod("default/gone".into())),
        now,
    );
    assert_eq!(s.parked().count(), 0);
    answer(&mut call, &["a", "b"], json!({}), json!([]));
    s.extender_reply(*call);
    assert!(matches!(s.schedule_one(now), Step::Idle { until: None }));
    assert!(s.queue().is_empty());
    assert!(s.snapshot().node_of("default/gone").is_none());

    // Changed while its call is out: the reply is dropped and the pod is tried again with
    // a call of its own.
    s.apply(ClusterEvent::add(pod("moved", "100m", true, "")), now);
    let mut old = expect_call(s.schedule_one(now));
    let mut changed = pod("moved", "200m", true, "");
    changed.metadata.labels.insert("v".into(), "2".into());
    s.apply(ClusterEvent::update(changed), now);
    answer(&mut old, &["a"], json!({}), json!([]));
    s.extender_reply(*old);
    let mut new = expect_call(s.schedule_one(now));
    assert_eq!(new.pod_key(), "default/moved");
    assert_eq!(new.pod().metadata.labels["v"], "2");
    answer(&mut new, &["b"], json!({"a": "no"}), json!([]));
    s.extender_reply(*new);
    match s.schedule_one(now) {
        Step::Bind { pod, node, .. } => {
            assert_eq!((pod.as_str(), node.as_str()), ("default/moved", "b"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn extender_errors_follow_kube_when_replayed() {
    // A required extender that times out fails the attempt; the pod backs off.
    let mut s = engine(gpu_extender());
    let now = Duration::ZERO;
    s.apply(ClusterEvent::add(pod("gpu", "100m", true, "")), now);
    let mut call = expect_call(s.schedule_one(now));
    let request = call.next_request().unwrap();
    call.answer(Err(ExtenderError::Timeout {
        verb: request.verb.clone(),
        url: request.url.clone(),
        timeout: request.timeout,
    }));
    assert!(call.next_request().is_none() && call.is_done());
    s.extender_reply(*call);
    match s.schedule_one(now) {
        Step::Failed { pod, error } => {
            assert_eq!(pod, "default/gpu");
            assert!(error.to_string().contains("no reply within 5s"), "{error}");
        }
        other => panic!("{other:?}"),
    }
    // An ignorable one is skipped, with an event, and the pod is placed without it.
    let mut s = engine(gpu_extender().ignorable(true));
    s.apply(ClusterEvent::add(pod("gpu", "100m", true, "")), now);
    let mut call = expect_call(s.schedule_one(now));
    let _ = call.next_request().unwrap();
    call.answer(Err(ExtenderError::Other("connection refused".into())));
    // The prioritize verb is still asked, over both nodes.
    let request = call.next_request().unwrap();
    assert_eq!(request.verb, "prioritize");
    call.answer(Ok(br#"[{"Host": "a", "Score": 10}]"#.to_vec()));
    s.extender_reply(*call);
    match s.schedule_one(now) {
        Step::Bind { node, .. } => assert_eq!(node, "a"),
        other => panic!("{other:?}"),
    }
    assert!(s.drain_events().iter().any(|e| matches!(e,
        SchedulerEvent::ExtenderSkipped { message, .. } if message == "connection refused")));
}
