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
        Step::Unschedulable { pod, error, .. } => {
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

/// Counts Reserve and Unreserve calls per pod.
#[derive(Clone, Default)]
struct Ledger(std::sync::Arc<std::sync::Mutex<std::collections::BTreeMap<String, (usize, usize)>>>);

impl sched_core::scheduler::ReservePlugin for Ledger {
    fn name(&self) -> &str {
        "Ledger"
    }
    fn reserve(&self, pod: &Pod, _: &str) -> Result<(), sched_core::scheduler::ReserveError> {
        self.0
            .lock()
            .unwrap()
            .entry(pod.key().to_string())
            .or_default()
            .0 += 1;
        Ok(())
    }
    fn unreserve(&self, pod: &Pod, _: &str) {
        self.0
            .lock()
            .unwrap()
            .entry(pod.key().to_string())
            .or_default()
            .1 += 1;
    }
}

#[derive(Clone, Debug)]
enum Action {
    Add { id: u8, gpu: bool, milli_cpu: u32 },
    Delete { id: u8 },
    Relabel { id: u8 },
    Schedule,
    Answer { pick: usize, keep: u8 },
    FinishBind { ok: bool },
}

fn actions() -> impl proptest::strategy::Strategy<Value = Vec<Action>> {
    use proptest::prelude::*;
    let a = prop_oneof![
        (0u8..8, any::<bool>(), 100u32..700).prop_map(|(id, gpu, milli_cpu)| Action::Add {
            id,
            gpu,
            milli_cpu
        }),
        (0u8..8).prop_map(|id| Action::Delete { id }),
        (0u8..8).prop_map(|id| Action::Relabel { id }),
        Just(Action::Schedule),
        Just(Action::Schedule),
        (any::<usize>(), 0u8..4).prop_map(|(pick, keep)| Action::Answer { pick, keep }),
        any::<bool>().prop_map(|ok| Action::FinishBind { ok }),
    ];
    proptest::collection::vec(a, 1..60)
}

/// Answers `call` keeping the nodes of `keep` (bit 0: a, bit 1: b) and scoring b.
fn answer_with(call: &mut ExtenderCall, keep: u8) {
    let names: Vec<&str> = [(1, "a"), (2, "b")]
        .into_iter()
        .filter(|(bit, _)| keep & bit != 0)
        .map(|(_, n)| n)
        .collect();
    answer(call, &names, json!({}), json!([{"Host": "b", "Score": 10}]));
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]

    /// Pods parked on calls that come back late, out of order, for pods deleted, changed or
    /// re-added meanwhile: no pod is bound twice, none is lost, nothing stays parked, every
    /// Reserve has one Unreserve or one bind.
    #[test]
    fn parked_pods_are_never_lost_nor_bound_twice(actions in actions()) {
        use std::collections::{BTreeMap, BTreeSet};
        let ledger = Ledger::default();
        let mut s = engine(gpu_extender()).with_reserve(ledger.clone());
        let now = Duration::ZERO;
        let mut pods: BTreeSet<String> = BTreeSet::new();
        let mut calls: Vec<Box<ExtenderCall>> = Vec::new();
        let mut binding: Vec<(String, String)> = Vec::new();
        let mut bound: BTreeMap<String, String> = BTreeMap::new();
        let mut relabels = 0u32;
        let mut binds_ok: BTreeMap<String, usize> = BTreeMap::new();
        let take = |step: Step,
                    calls: &mut Vec<Box<ExtenderCall>>,
                    binding: &mut Vec<(String, String)>,
                    bound: &BTreeMap<String, String>|
         -> Result<bool, proptest::test_runner::TestCaseError> {
            match step {
                Step::CallExtenders { call } => {
                    proptest::prop_assert!(call.pod().spec.containers[0].resources.requests.contains_key(GPU));
                    calls.push(call);
                }
                Step::Bind { pod, node, .. } => {
                    let pod = pod.to_string();
                    proptest::prop_assert!(!bound.contains_key(&pod), "{} bound twice", pod);
                    proptest::prop_assert!(!binding.iter().any(|(p, _)| *p == pod), "{} handed out twice", pod);
                    binding.push((pod, node));
                }
                Step::Idle { .. } => return Ok(false),
                _ => {}
            }
            Ok(true)
        };
        for a in &actions {
            match a {
                Action::Add { id, gpu, milli_cpu } => {
                    let key = format!("default/p{id}");
                    if pods.insert(key) {
                        s.apply(ClusterEvent::add(pod(&format!("p{id}"), &format!("{milli_cpu}m"), *gpu, "")), now);
                    }
                }
                Action::Delete { id } => {
                    let key = format!("default/p{id}");
                    if pods.remove(&key) {
                        bound.remove(&key);
                        // A bind in flight fails with the pod; its result is not reported.
                        binding.retain(|(p, _)| *p != key);
                        s.apply(ClusterEvent::Delete(ObjectKey::Pod(key.as_str().into())), now);
                    }
                }
                Action::Relabel { id } => {
                    // A parked pod changes (its labels) while its call is out.
                    let key = format!("default/p{id}");
                    if let Some(c) = calls.iter().find(|c| c.pod_key() == key && pods.contains(&key)) {
                        let mut p = c.pod().clone();
                        relabels += 1;
                        p.metadata.labels.insert("v".into(), relabels.to_string());
                        s.apply(ClusterEvent::update(p), now);
                    }
                }
                Action::Schedule => {
                    let step = s.schedule_one(now);
                    take(step, &mut calls, &mut binding, &bound)?;
                }
                Action::Answer { pick, keep } => {
                    if !calls.is_empty() {
                        let mut call = calls.remove(pick % calls.len());
                        answer_with(&mut call, *keep);
                        s.extender_reply(*call);
                    }
                }
                Action::FinishBind { ok } => {
                    if !binding.is_empty() {
                        let (pod, node) = binding.remove(0);
                        let result = if *ok { Ok(()) } else { Err(sched_core::scheduler::BindError::new("refused")) };
                        s.finish_binding(&pod, result, now);
                        if *ok {
                            *binds_ok.entry(pod.clone()).or_default() += 1;
                            bound.insert(pod, node);
                        }
                    }
                }
            }
        }
        // Drain: every call answered keeping both nodes, every bind succeeds.
        for _ in 0..200 {
            for mut call in calls.drain(..) {
                answer_with(&mut call, 3);
                s.extender_reply(*call);
            }
            loop {
                let step = s.schedule_one(now);
                if !take(step, &mut calls, &mut binding, &bound)? {
                    break;
                }
            }
            for (pod, node) in binding.drain(..) {
                s.finish_binding(&pod, Ok(()), now);
                *binds_ok.entry(pod.clone()).or_default() += 1;
                bound.insert(pod, node);
            }
            if calls.is_empty() {
                break;
            }
        }
        proptest::prop_assert_eq!(s.parked().count(), 0);
        proptest::prop_assert_eq!(s.queue().counts().in_flight, 0);
        for key in &pods {
            match bound.get(key) {
                Some(node) => proptest::prop_assert_eq!(s.snapshot().node_of(key), Some(node.as_str())),
                None => {
                    proptest::prop_assert!(s.snapshot().node_of(key).is_none());
                    proptest::prop_assert!(s.queue().position(key).is_some(), "{} lost", key);
                }
            }
        }
        proptest::prop_assert_eq!(s.snapshot().pod_count(), bound.len());
        for (key, (reserves, unreserves)) in ledger.0.lock().unwrap().iter() {
            let binds = binds_ok.get(key).copied().unwrap_or(0);
            proptest::prop_assert!(
                *reserves == unreserves + binds,
                "{}: {} reserves, {} unreserves, {} binds", key, reserves, unreserves, binds
            );
        }
    }
}
