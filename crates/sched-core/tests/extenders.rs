//! Scheduler extenders in the scheduling cycle. Ported from kube-scheduler
//! (`pkg/scheduler/extender_test.go`, the newest stored version, whose `SchedulePod` is v1.34's
//! cycle with the `numNodesToFind` rule of `hasExtenderFilters` / `hasScoring`):
//! `TestSchedulerWithExtenders` (all 11 cases, with kube's fake extender
//! `pkg/scheduler/testing/framework/fake_extender.go`: its predicates, prioritizers and
//! messages) and `TestIsInterested` (all 5 cases). kube's table only says "an error" for
//! the failing cases; the outcome each must be (an extender error or a fit error with the
//! extender's messages) is checked here too. Then the engine: unresolvable nodes and
//! preemption, the binder hand-off, skipped errors as events, nominated nodes.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use sched_core::extender::{
    Extender, ExtenderBindingArgs, ExtenderError, FilterResult, HostPriority,
};
#[cfg(feature = "http-extender")]
use sched_core::extender::{ExtenderConfig, HttpExtender};
use sched_core::framework::{Reason, predicate_fn, priority_fn};
use sched_core::model::{Node, Pod, PodKey};
use sched_core::plugins::node::PodFitsResources;
use sched_core::profile::{Profile, ProfileBuilder, ScheduleError, ScheduleResult};
use sched_core::scheduler::{
    ClusterEvent, ExtenderCycle, QueueSettings, Scheduler, SchedulerEvent, Step,
};
use sched_core::snapshot::Snapshot;

// ---------------------------------------------------------------------------------------
// kube's fake extender (pkg/scheduler/testing/framework/fake_extender.go)

/// A fit predicate's status: kube's `Success`, `Unschedulable`, `UnschedulableAndUnresolvable`
/// or `Error`.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Status {
    Success,
    Unschedulable,
    Unresolvable,
    Error,
}

type FitPredicate = fn(&Node) -> Status;
type PriorityFunc = fn(&[&Node]) -> Result<Vec<(String, i64)>, String>;

fn true_predicate(_: &Node) -> Status {
    Status::Success
}
fn false_predicate(_: &Node) -> Status {
    Status::Unschedulable
}
fn error_predicate(_: &Node) -> Status {
    Status::Error
}
fn node1_predicate(n: &Node) -> Status {
    if n.metadata.name == "node1" {
        Status::Success
    } else {
        Status::Unschedulable
    }
}
fn node2_predicate(n: &Node) -> Status {
    if n.metadata.name == "node2" {
        Status::Success
    } else {
        Status::Unschedulable
    }
}
fn error_prioritizer(_: &[&Node]) -> Result<Vec<(String, i64)>, String> {
    Err("some error".into())
}
/// 10 for node1, 1 for the others.
fn node1_prioritizer(nodes: &[&Node]) -> Result<Vec<(String, i64)>, String> {
    Ok(nodes
        .iter()
        .map(|n| {
            let s = if n.metadata.name == "node1" { 10 } else { 1 };
            (n.metadata.name.clone(), s)
        })
        .collect())
}
/// 10 for node2, 1 for the others.
fn node2_prioritizer(nodes: &[&Node]) -> Result<Vec<(String, i64)>, String> {
    Ok(nodes
        .iter()
        .map(|n| {
            let s = if n.metadata.name == "node2" { 10 } else { 1 };
            (n.metadata.name.clone(), s)
        })
        .collect())
}

#[derive(Default)]
struct FakeExtender {
    name: &'static str,
    predicates: Vec<FitPredicate>,
    prioritizers: Vec<(PriorityFunc, i64)>,
    weight: i64,
    un_interested: bool,
    ignorable: bool,
    /// What `Bind` returns; `None`: kube's default (success when the node was filtered in).
    binder: Option<fn() -> Result<(), String>>,
    /// The nodes its last filter kept, and the bindings it made.
    filtered: Mutex<Vec<String>>,
    bound: Mutex<Vec<ExtenderBindingArgs>>,
}

impl FakeExtender {
    fn run_predicate(&self, node: &Node) -> Status {
        self.predicates
            .iter()
            .map(|p| p(node))
            .find(|s| *s != Status::Success)
            .unwrap_or(Status::Success)
    }
}

impl Extender for FakeExtender {
    fn name(&self) -> &str {
        self.name
    }
    fn is_ignorable(&self) -> bool {
        self.ignorable
    }
    fn is_interested(&self, _: &Pod) -> bool {
        !self.un_interested
    }
    fn is_filter(&self) -> bool {
        !self.predicates.is_empty()
    }
    fn is_prioritizer(&self) -> bool {
        !self.prioritizers.is_empty()
    }
    fn is_binder(&self) -> bool {
        true
    }
    fn filter(&self, _: &Pod, nodes: &[&Node]) -> Result<FilterResult, ExtenderError> {
        let mut r = FilterResult::default();
        for n in nodes {
            let name = n.metadata.name.clone();
            match self.run_predicate(n) {
                Status::Success => r.feasible.push(name),
                Status::Unschedulable => {
                    r.failed
                        .insert(name.clone(), format!("FakeExtender: node {name:?} failed"));
                }
                Status::Unresolvable => {
                    r.failed_and_unresolvable.insert(
                        name.clone(),
                        format!("FakeExtender: node {name:?} failed and unresolvable"),
                    );
                }
                Status::Error => return Err(ExtenderError::Other("some error".into())),
            }
        }
        *self.filtered.lock().unwrap() = r.feasible.clone();
        Ok(r)
    }
    fn prioritize(
        &self,
        _: &Pod,
        nodes: &[&Node],
    ) -> Result<(Vec<HostPriority>, i64), ExtenderError> {
        let mut combined: BTreeMap<String, i64> = BTreeMap::new();
        for (f, weight) in &self.prioritizers {
            if *weight == 0 {
                continue;
            }
            for (host, score) in f(nodes).map_err(ExtenderError::Other)? {
                *combined.entry(host).or_default() += score * weight;
            }
        }
        let list = combined
            .into_iter()
            .map(|(host, score)| HostPriority { host, score })
            .collect();
        Ok((list, self.weight))
    }
    fn bind(&self, binding: &ExtenderBindingArgs) -> Result<(), ExtenderError> {
        self.bound.lock().unwrap().push(binding.clone());
        if let Some(b) = self.binder {
            return b().map_err(ExtenderError::Other);
        }
        let mut filtered = self.filtered.lock().unwrap();
        if filtered.is_empty() || filtered.contains(&binding.node) {
            filtered.clear();
            Ok(())
        } else {
            let msg = format!("Node {} not in filtered nodes {:?}", binding.node, filtered);
            filtered.clear();
            Err(ExtenderError::Other(msg))
        }
    }
}

// ---------------------------------------------------------------------------------------
// TestSchedulerWithExtenders

fn node(name: &str) -> Node {
    let mut n = Node::default();
    n.metadata.name = name.into();
    n
}

fn named_pod(name: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = name.into();
    p.metadata.namespace = "default".into();
    p.metadata.uid = format!("uid-{name}");
    p
}

/// kube's plugins of the table: TrueFilter, EqualPrioritizerPlugin (1 everywhere) and
/// Node2Prioritizer (100 on node2, 10 elsewhere).
enum Plugin {
    TrueFilter,
    EqualPrioritizer(i64),
    Node2Prioritizer(i64),
}

fn profile(plugins: &[Plugin]) -> Profile {
    let mut b = ProfileBuilder::new().threads(1).seed(1);
    for p in plugins {
        b = match *p {
            Plugin::TrueFilter => b.predicate(predicate_fn("TrueFilter", |_, _| Ok(()))),
            Plugin::EqualPrioritizer(w) => {
                b.priority(priority_fn("EqualPrioritizerPlugin", |_, _| 1), w)
            }
            Plugin::Node2Prioritizer(w) => b.priority(
                priority_fn("Node2Prioritizer", |_, n| {
                    if n.name() == "node2" { 100 } else { 10 }
                }),
                w,
            ),
        };
    }
    b.build().unwrap()
}

fn schedule(
    plugins: &[Plugin],
    extenders: Vec<FakeExtender>,
    nodes: &[&str],
) -> Result<ScheduleResult, ScheduleError> {
    let mut snapshot =
        Snapshot::from_objects(nodes.iter().map(|n| node(n)).collect(), Vec::new()).unwrap();
    let profile = profile(plugins);
    let list: Vec<Arc<dyn Extender>> = extenders
        .into_iter()
        .map(|e| Arc::new(e) as Arc<dyn Extender>)
        .collect();
    let mut cycle = ExtenderCycle::new(&list);
    let mut cache = profile.create_cache();
    profile.schedule_and_assume_with(&mut cache, &named_pod("ignored"), &mut snapshot, &mut cycle)
}

fn ext(name: &'static str, predicates: Vec<FitPredicate>) -> FakeExtender {
    FakeExtender {
        name,
        predicates,
        ..FakeExtender::default()
    }
}

#[track_caller]
fn expect(r: Result<ScheduleResult, ScheduleError>, host: &str, evaluated: usize, feasible: usize) {
    let r = r.unwrap_or_else(|e| panic!("unexpected error: {e}"));
    assert_eq!(
        (r.node.as_str(), r.evaluated_nodes, r.feasible_nodes),
        (host, evaluated, feasible)
    );
}

use Plugin::*;

#[test]
fn test_1_a_filter_error_fails_the_attempt() {
    let r = schedule(
        &[TrueFilter],
        vec![
            ext("FakeExtender1", vec![true_predicate]),
            ext("FakeExtender2", vec![error_predicate]),
        ],
        &["node1", "node2"],
    );
    match r {
        Err(ScheduleError::Extender { extender, source }) => {
            assert_eq!(extender, "FakeExtender2");
            assert_eq!(source.to_string(), "some error");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn test_2_every_node_failed_by_an_extender_is_a_fit_error() {
    let r = schedule(
        &[TrueFilter],
        vec![
            ext("FakeExtender1", vec![true_predicate]),
            ext("FakeExtender2", vec![false_predicate]),
        ],
        &["node1", "node2"],
    );
    let Err(ScheduleError::Unschedulable(e)) = r else {
        panic!("{r:?}")
    };
    assert_eq!(
        e.to_string(),
        r#"0/2 nodes are available: 1 FakeExtender: node "node1" failed, 1 FakeExtender: node "node2" failed."#
    );
    assert_eq!(
        e.failures()[0].codes,
        [(
            "FakeExtender2".to_string(),
            Reason::Extender {
                unresolvable: false
            }
        )]
    );
}

#[test]
fn test_3() {
    let r = schedule(
        &[TrueFilter, EqualPrioritizer(1)],
        vec![
            ext("FakeExtender1", vec![true_predicate]),
            ext("FakeExtender2", vec![node1_predicate]),
        ],
        &["node1", "node2"],
    );
    expect(r, "node1", 2, 1);
}

#[test]
fn test_4_extenders_narrow_one_after_the_other() {
    let r = schedule(
        &[TrueFilter],
        vec![
            ext("FakeExtender1", vec![node2_predicate]),
            ext("FakeExtender2", vec![node1_predicate]),
        ],
        &["node1", "node2"],
    );
    let Err(ScheduleError::Unschedulable(e)) = r else {
        panic!("{r:?}")
    };
    // node1 fails the first extender, node2 the second (which only sees node2).
    assert_eq!(
        e.failures()
            .iter()
            .map(|f| (f.node.as_str(), f.codes[0].0.as_str()))
            .collect::<Vec<_>>(),
        [("node1", "FakeExtender1"), ("node2", "FakeExtender2")]
    );
}

#[test]
fn test_5_one_feasible_node_is_not_prioritized() {
    let r = schedule(
        &[TrueFilter],
        vec![FakeExtender {
            prioritizers: vec![(error_prioritizer, 10)],
            weight: 1,
            ..ext("FakeExtender1", vec![true_predicate])
        }],
        &["node1"],
    );
    expect(r, "node1", 1, 1);
}

#[test]
fn test_6_extender_scores_are_weighted() {
    let r = schedule(
        &[TrueFilter],
        vec![
            FakeExtender {
                prioritizers: vec![(node1_prioritizer, 10)],
                weight: 1,
                ..ext("FakeExtender1", vec![true_predicate])
            },
            FakeExtender {
                prioritizers: vec![(node2_prioritizer, 10)],
                weight: 5,
                ..ext("FakeExtender2", vec![true_predicate])
            },
        ],
        &["node1", "node2"],
    );
    // node1: 100 x 1 x 10 + 10 x 5 x 10 = 1500; node2: 10 x 1 x 10 + 100 x 5 x 10 = 5100
    // (kube's arithmetic; no score plugins, so the totals start at 0).
    let r = r.unwrap();
    assert_eq!(r.score, 5100);
    expect(Ok(r), "node2", 2, 2);
}

#[test]
fn test_7_plugin_and_extender_scores_add_up() {
    let r = schedule(
        &[TrueFilter, Node2Prioritizer(20)],
        vec![FakeExtender {
            prioritizers: vec![(node1_prioritizer, 10)],
            weight: 1,
            ..ext("FakeExtender1", vec![true_predicate])
        }],
        &["node1", "node2"],
    );
    // node1: 10 x 20 + 1000 = 1200; node2: 100 x 20 + 100 = 2100.
    let r = r.unwrap();
    assert_eq!(r.score, 2100);
    expect(Ok(r), "node2", 2, 2);
}

#[test]
fn test_8_an_uninterested_extender_is_not_called() {
    let r = schedule(
        &[TrueFilter, Node2Prioritizer(1)],
        vec![FakeExtender {
            prioritizers: vec![(error_prioritizer, 10)],
            un_interested: true,
            ..ext("FakeExtender1", vec![error_predicate])
        }],
        &["node1", "node2"],
    );
    expect(r, "node2", 2, 2);
}

#[test]
fn test_9_an_ignorable_extenders_error_is_skipped() {
    let r = schedule(
        &[TrueFilter, EqualPrioritizer(1)],
        vec![
            FakeExtender {
                ignorable: true,
                ..ext("FakeExtender1", vec![error_predicate])
            },
            ext("FakeExtender2", vec![node1_predicate]),
        ],
        &["node1", "node2"],
    );
    expect(r, "node1", 2, 1);
}

#[test]
fn test_10_no_scoring_extender_filters_configured_multiple_feasible_nodes_are_evaluated() {
    let r = schedule(
        &[TrueFilter],
        vec![
            ext("FakeExtender1", vec![true_predicate]),
            ext("FakeExtender2", vec![node1_predicate]),
        ],
        &["node1", "node2"],
    );
    expect(r, "node1", 2, 1);
}

#[test]
fn test_11_no_scoring_no_prefilters_or_extender_filters_configured_a_single_feasible_node_is_evaluated()
 {
    let r = schedule(
        &[],
        vec![FakeExtender {
            binder: Some(|| Ok(())),
            ..ext("FakeExtender1", vec![])
        }],
        &["node1", "node2"],
    );
    expect(r, "node1", 1, 1);
}

// ---------------------------------------------------------------------------------------
// TestIsInterested (an HTTP extender managing "memory")

#[cfg(feature = "http-extender")]
fn http_managing(resources: &[&str]) -> HttpExtender {
    let mut c = ExtenderConfig::new("http://127.0.0.1:1");
    for r in resources {
        c = c.managed_resource(*r, false);
    }
    HttpExtender::new(&c).unwrap()
}

#[cfg(feature = "http-extender")]
fn pod_json(spec: serde_json::Value) -> Pod {
    serde_json::from_value(serde_json::json!({"metadata": {"name": "p"}, "spec": spec})).unwrap()
}

#[cfg(feature = "http-extender")]
#[test]
fn is_interested() {
    let mem = http_managing(&["memory"]);
    let cases = [
        (
            "Empty managed resources",
            http_managing(&[]),
            Pod::default(),
            true,
        ),
        (
            "Managed memory, empty resources",
            http_managing(&["memory"]),
            pod_json(serde_json::json!({"containers": [{"name": "app"}]})),
            false,
        ),
        (
            "Managed memory, container memory with Requests",
            http_managing(&["memory"]),
            pod_json(serde_json::json!({"containers": [{"name": "c",
                "resources": {"requests": {"memory": "0"}}}]})),
            true,
        ),
        (
            "Managed memory, container memory with Limits",
            http_managing(&["memory"]),
            pod_json(serde_json::json!({"containers": [{"name": "c",
                "resources": {"limits": {"memory": "0"}}}]})),
            true,
        ),
        (
            "Managed memory, init container memory",
            http_managing(&["memory"]),
            pod_json(serde_json::json!({"containers": [{"name": "app"}],
                "initContainers": [{"name": "i", "resources": {"requests": {"memory": "0"}}}]})),
            true,
        ),
    ];
    for (label, extender, pod, want) in cases {
        assert_eq!(extender.is_interested(&pod), want, "{label}");
    }
    assert!(!mem.is_interested(&Pod::default()));
}

// ---------------------------------------------------------------------------------------
// The engine

fn resource_node(name: &str) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name},
        "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}
    }))
    .unwrap()
}

fn resource_pod(name: &str, cpu: &str, priority: i32, node: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}")},
        "spec": {"nodeName": node, "priority": priority, "containers": [{"name": "c",
            "resources": {"requests": {"cpu": cpu}}}]}
    }))
    .unwrap()
}

fn engine(nodes: &[&str], pods: Vec<Pod>, extenders: Vec<FakeExtender>) -> Scheduler {
    let snapshot =
        Snapshot::from_objects(nodes.iter().map(|n| resource_node(n)).collect(), pods).unwrap();
    let profile = ProfileBuilder::new()
        .predicate(PodFitsResources::new())
        .threads(1)
        .seed(1)
        .build()
        .unwrap();
    let mut s = Scheduler::new(
        vec![("default-scheduler".into(), profile)],
        snapshot,
        QueueSettings::default(),
    );
    for e in extenders {
        s = s.with_extender(e);
    }
    s
}

fn unresolvable_on_node1(n: &Node) -> Status {
    if n.metadata.name == "node1" {
        Status::Unresolvable
    } else {
        Status::Unschedulable
    }
}

#[test]
fn preemption_never_considers_a_node_an_extender_calls_unresolvable() {
    use sched_core::framework::KubeVersion;
    use sched_core::scheduler::preemption::{nodes_where_preemption_might_help, resolvable};
    assert!(resolvable(&Reason::Extender {
        unresolvable: false
    }));
    assert!(!resolvable(&Reason::Extender { unresolvable: true }));
    // Both nodes fit the plugins; the extender rejects node1 as unresolvable, node2 as
    // resolvable: only node2 is a node where preemption might help.
    let mut s = engine(
        &["node1", "node2"],
        vec![],
        vec![ext("E", vec![unresolvable_on_node1])],
    );
    let now = Duration::ZERO;
    s.apply(
        ClusterEvent::add(resource_pod("high", "100m", 100, "")),
        now,
    );
    let Step::Unschedulable { error, .. } = s.schedule_one(now) else {
        panic!("expected a fit error")
    };
    // Preemption tries node2 alone (nothing to remove there) and not node1 (kube v1.34 prints
    // its message after the reasons).
    assert_eq!(
        error.to_string(),
        concat!(
            r#"0/2 nodes are available: 1 FakeExtender: node "node1" failed and unresolvable, 1 FakeExtender: node "node2" failed."#,
            " preemption: 0/2 nodes are available: 1 No preemption victims found for incoming pod, 1 Preemption is not helpful for scheduling."
        )
    );
    assert_eq!(
        error.failures()[0].codes,
        [("E".to_string(), Reason::Extender { unresolvable: true })]
    );
    let pod = resource_pod("high", "100m", 100, "");
    let potential =
        nodes_where_preemption_might_help(s.snapshot(), &pod, KubeVersion::V1_34, &error);
    let names: Vec<&str> = potential
        .iter()
        .map(|&i| s.snapshot().node_infos()[i].name())
        .collect();
    assert_eq!(names, ["node2"]);
}

/// Rejects the nodes listed (resolvable), changeable between attempts.
struct Rejects(Mutex<Vec<&'static str>>);

impl Extender for Rejects {
    fn name(&self) -> &str {
        "Rejects"
    }
    fn is_filter(&self) -> bool {
        true
    }
    fn filter(&self, _: &Pod, nodes: &[&Node]) -> Result<FilterResult, ExtenderError> {
        let rejected = self.0.lock().unwrap();
        let mut r = FilterResult::default();
        for n in nodes {
            let name = n.metadata.name.clone();
            if rejected.contains(&name.as_str()) {
                r.failed.insert(name, "rejected".into());
            } else {
                r.feasible.push(name);
            }
        }
        Ok(r)
    }
}

#[test]
fn a_nominated_node_must_pass_the_extenders_too() {
    let now = Duration::ZERO;
    let mut nominated = resource_pod("high", "100m", 100, "");
    nominated.status.nominated_node_name = "node1".into();
    // Without extenders the pod goes to its nominated node1.
    let mut plain = engine(&["node1", "node2"], vec![], vec![]);
    plain.apply(ClusterEvent::add(nominated.clone()), now);
    assert_eq!(plain.nominated_node("default/high"), Some("node1"));
    assert!(matches!(plain.schedule_one(now), Step::Bind { ref node, .. } if node == "node1"));
    // node1 passes the plugins but not the extender: the full cycle places it on node2.
    let rejects = Arc::new(Rejects(Mutex::new(vec!["node1"])));
    let mut s = engine(&["node1", "node2"], vec![], vec![]).with_extender(Arc::clone(&rejects));
    s.apply(ClusterEvent::add(nominated), now);
    match s.schedule_one(now) {
        Step::Bind { pod, node, .. } => {
            assert_eq!((pod.as_str(), node.as_str()), ("default/high", "node2"))
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_binder_extender_binds_instead_of_the_caller() {
    let now = Duration::ZERO;
    let binder = Arc::new(FakeExtender {
        binder: Some(|| Ok(())),
        ..ext("Binder", vec![true_predicate])
    });
    let mut s = engine(&["node1"], vec![], vec![]).with_extender(Arc::clone(&binder));
    s.apply(ClusterEvent::add(resource_pod("p", "100m", 0, "")), now);
    match s.schedule_one(now) {
        Step::Bind {
            pod,
            node,
            extender_binder: Some(b),
            ..
        } => {
            assert_eq!(
                (pod.as_str(), node.as_str(), b.name()),
                ("default/p", "node1", "Binder")
            );
            b.bind().unwrap();
            s.finish_binding(&pod, Ok(()), now);
        }
        other => panic!("{other:?}"),
    }
    let bound = binder.bound.lock().unwrap().clone();
    assert_eq!(bound.len(), 1);
    assert_eq!(
        (
            bound[0].pod_name.as_str(),
            bound[0].pod_namespace.as_str(),
            bound[0].pod_uid.as_str(),
            bound[0].node.as_str()
        ),
        ("p", "default", "uid-p", "node1")
    );
    // An uninterested binder leaves binding to the caller.
    let mut s = engine(
        &["node1"],
        vec![],
        vec![FakeExtender {
            un_interested: true,
            ..ext("Binder", vec![])
        }],
    );
    s.apply(ClusterEvent::add(resource_pod("q", "100m", 0, "")), now);
    assert!(matches!(
        s.schedule_one(now),
        Step::Bind {
            extender_binder: None,
            ..
        }
    ));
}

#[test]
fn skipped_extender_errors_are_events_and_a_hard_error_backs_off() {
    let now = Duration::ZERO;
    let mut s = engine(
        &["node1", "node2"],
        vec![],
        vec![
            FakeExtender {
                ignorable: true,
                ..ext("Flaky", vec![error_predicate])
            },
            FakeExtender {
                prioritizers: vec![(error_prioritizer, 1)],
                weight: 1,
                ..ext("BadScores", vec![node1_predicate, true_predicate])
            },
        ],
    );
    s.apply(ClusterEvent::add(resource_pod("p", "100m", 0, "")), now);
    assert!(matches!(s.schedule_one(now), Step::Bind { ref node, .. } if node == "node1"));
    let skipped: Vec<_> = s
        .drain_events()
        .into_iter()
        .filter_map(|e| match e {
            SchedulerEvent::ExtenderSkipped {
                extender, message, ..
            } => Some((extender, message)),
            _ => None,
        })
        .collect();
    // Only node1 is feasible after the second extender, so nothing is prioritized.
    assert_eq!(skipped, [("Flaky".to_string(), "some error".to_string())]);

    let mut s = engine(
        &["node1"],
        vec![],
        vec![ext("Broken", vec![error_predicate])],
    );
    s.apply(ClusterEvent::add(resource_pod("p", "100m", 0, "")), now);
    match s.schedule_one(now) {
        Step::Failed {
            error: ScheduleError::Extender { extender, .. },
            ..
        } => {
            assert_eq!(extender, "Broken")
        }
        other => panic!("{other:?}"),
    }
}

// ---------------------------------------------------------------------------------------
// Preemption: TestConvertToMetaVictims and TestConvertToVictims (one case each in kube),
// and extenders narrowing the preemption the engine chose

fn uid_pod(name: &str, uid: &str, node: &str) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default", "uid": uid},
        "spec": {"nodeName": node}
    }))
    .unwrap()
}

#[test]
fn convert_to_meta_victims_transfers_num_pdb_violations() {
    use sched_core::extender::wire::{MetaPod, convert_to_meta_victims};
    use sched_core::extender::{MetaVictims, Victims};
    let victims: BTreeMap<String, Victims> = [
        (
            "node1".to_string(),
            Victims {
                pods: vec![uid_pod("pod1", "uid1", ""), uid_pod("pod3", "uid3", "")],
                num_pdb_violations: 1,
            },
        ),
        (
            "node2".to_string(),
            Victims {
                pods: vec![uid_pod("pod2", "uid2", ""), uid_pod("pod4", "uid4", "")],
                num_pdb_violations: 2,
            },
        ),
    ]
    .into();
    let uids = |u: &[&str]| u.iter().map(|u| MetaPod { uid: u.to_string() }).collect();
    let want: BTreeMap<String, MetaVictims> = [
        (
            "node1".to_string(),
            MetaVictims {
                pods: uids(&["uid1", "uid3"]),
                num_pdb_violations: 1,
            },
        ),
        (
            "node2".to_string(),
            MetaVictims {
                pods: uids(&["uid2", "uid4"]),
                num_pdb_violations: 2,
            },
        ),
    ]
    .into();
    assert_eq!(convert_to_meta_victims(&victims), want);
}

#[test]
fn convert_to_victims_transfers_num_pdb_violations() {
    use sched_core::extender::wire::MetaPod;
    use sched_core::extender::{MetaVictims, convert_to_victims};
    // node1 holds pod1 and pod3, node2 pod2 and pod4 (kube's podsInNodeList[i], [i+2]).
    let pods = vec![
        uid_pod("pod1", "uid1", "node1"),
        uid_pod("pod3", "uid3", "node1"),
        uid_pod("pod2", "uid2", "node2"),
        uid_pod("pod4", "uid4", "node2"),
    ];
    let snapshot = Snapshot::from_objects(vec![node("node1"), node("node2")], pods).unwrap();
    let meta = |u: &[&str], n| MetaVictims {
        pods: u.iter().map(|u| MetaPod { uid: u.to_string() }).collect(),
        num_pdb_violations: n,
    };
    let input: BTreeMap<String, MetaVictims> = [
        ("node1".to_string(), meta(&["uid1", "uid3"], 1)),
        ("node2".to_string(), meta(&["uid2", "uid4"], 2)),
    ]
    .into();
    let got = convert_to_victims(&input, &snapshot, "ext").unwrap();
    let names = |n: &str| -> (Vec<String>, i64) {
        let v = &got[n];
        (
            v.pods.iter().map(|p| p.metadata.name.clone()).collect(),
            v.num_pdb_violations,
        )
    };
    assert_eq!(names("node1"), (vec!["pod1".into(), "pod3".into()], 1));
    assert_eq!(names("node2"), (vec!["pod2".into(), "pod4".into()], 2));
    // A UID not on its node, and a node not in the snapshot, are errors.
    let bad: BTreeMap<String, MetaVictims> = [("node1".to_string(), meta(&["uid2"], 0))].into();
    assert_eq!(
        convert_to_victims(&bad, &snapshot, "ext")
            .unwrap_err()
            .to_string(),
        "extender: ext claims to preempt pod (UID: uid2) on node: node1, but the pod is not found on that node"
    );
    let gone: BTreeMap<String, MetaVictims> = [("node9".to_string(), meta(&[], 0))].into();
    assert_eq!(
        convert_to_victims(&gone, &snapshot, "ext")
            .unwrap_err()
            .to_string(),
        r#"nodeinfo not found for node name "node9""#
    );
}

/// A preempting extender: adds `add` to the victims, or drops every node.
struct Preempts {
    add: Option<&'static str>,
    veto: bool,
    fail: bool,
}

impl Extender for Preempts {
    fn name(&self) -> &str {
        "Preempts"
    }
    fn supports_preemption(&self) -> bool {
        true
    }
    fn process_preemption(
        &self,
        _: &Pod,
        victims: &sched_core::extender::NodeVictims,
        snapshot: &Snapshot,
    ) -> Result<sched_core::extender::NodeVictims, ExtenderError> {
        if self.fail {
            return Err(ExtenderError::Other("preemption service down".into()));
        }
        if self.veto {
            return Ok(Default::default());
        }
        let mut out = victims.clone();
        if let Some(add) = self.add {
            for (node, v) in out.iter_mut() {
                let info = snapshot.get(node).unwrap();
                let extra = info
                    .pods()
                    .iter()
                    .map(|p| p.pod())
                    .find(|p| p.metadata.name == add);
                v.pods.push(extra.unwrap().clone());
            }
        }
        Ok(out)
    }
}

#[test]
fn extenders_narrow_the_preemption_the_engine_chose() {
    let now = Duration::ZERO;
    let outcome = |ext: Preempts| {
        let mut s = engine(
            &["node1"],
            vec![
                resource_pod("low1", "600m", 0, "node1"),
                resource_pod("low2", "300m", 0, "node1"),
            ],
            vec![],
        )
        .with_extender(ext);
        s.apply(
            ClusterEvent::add(resource_pod("high", "500m", 100, "")),
            now,
        );
        let step = s.schedule_one(now);
        (step, s.drain_events())
    };
    // Alone, DefaultPreemption deletes low1 (low2 is reprieved).
    match outcome(Preempts {
        add: None,
        veto: false,
        fail: false,
    })
    .0
    {
        Step::Preempt { victims, .. } => assert_eq!(victims, ["default/low1"]),
        other => panic!("{other:?}"),
    }
    // The extender adds low2.
    match outcome(Preempts {
        add: Some("low2"),
        veto: false,
        fail: false,
    })
    .0
    {
        Step::Preempt { node, victims, .. } => {
            assert_eq!(
                (node.as_str(), victims),
                (
                    "node1",
                    vec![PodKey::from("default/low1"), "default/low2".into()]
                )
            )
        }
        other => panic!("{other:?}"),
    }
    // The extender rules the node out: no preemption.
    assert!(matches!(
        outcome(Preempts {
            add: None,
            veto: true,
            fail: false
        })
        .0,
        Step::Unschedulable { .. }
    ));
    // It fails: no preemption, and the failure is an event.
    let (step, events) = outcome(Preempts {
        add: None,
        veto: false,
        fail: true,
    });
    assert!(matches!(step, Step::Unschedulable { .. }));
    assert!(events.iter().any(|e| matches!(e,
        SchedulerEvent::ExtenderSkipped { extender, message, .. }
            if extender == "Preempts" && message == "preemption service down")));
}
