//! Gang scheduling (scheduler-plugins' Coscheduling): the unit test tables of
//! kubernetes-sigs/scheduler-plugins (`pkg/coscheduling/coscheduling_test.go`,
//! `pkg/coscheduling/core/core_test.go`) ported with their expected values, the engine's
//! gang lifecycle, and a model-based property test.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use proptest::prelude::*;
use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{Node, Pod, PodGroup, Quantity, ResourceList};
use sched_core::scheduler::gang::{
    COSCHEDULING, Coscheduling, CoschedulingArgs, PermitStatus, check_cluster_resource,
};
use sched_core::scheduler::{ClusterEvent, ObjectKey, Scheduler, Step};
use sched_core::snapshot::Snapshot;

/// kube's `st.MakeNode().Capacity(...)`: these CPUs and 32 pods.
fn node(name: &str, cpu: &str) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"capacity": {"cpu": cpu, "pods": "32"},
                   "allocatable": {"cpu": cpu, "memory": "64Gi", "pods": "32"},
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap()
}

/// A pod in `ns`, in group `group` (if any), on `node` (if any), requesting `cpu` (if any).
fn pod(name: &str, ns: &str, group: Option<&str>, node: Option<&str>, cpu: Option<&str>) -> Pod {
    let mut v = serde_json::json!({
        "metadata": {"name": name, "namespace": ns, "uid": name},
        "spec": {"containers": [{"name": "c", "image": "pause"}]}
    });
    if let Some(g) = group {
        v["metadata"]["labels"] = serde_json::json!({"scheduling.x-k8s.io/pod-group": g});
    }
    if let Some(n) = node {
        v["spec"]["nodeName"] = serde_json::json!(n);
    }
    if let Some(c) = cpu {
        v["spec"]["containers"][0]["resources"] = serde_json::json!({"requests": {"cpu": c}});
    }
    serde_json::from_value(v).unwrap()
}

fn with_priority(mut p: Pod, priority: i32) -> Pod {
    p.spec.priority = Some(priority);
    p
}

/// scheduler-plugins' `tu.MakePodGroup()`.
fn pg(name: &str, ns: &str, min_member: i32, min_cpu: Option<&str>) -> PodGroup {
    let mut v = serde_json::json!({
        "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": ns},
        "spec": {"minMember": min_member}
    });
    if let Some(c) = min_cpu {
        v["spec"]["minResources"] = serde_json::json!({"cpu": c});
    }
    serde_json::from_value(v).unwrap()
}

fn s(secs: u64) -> Duration {
    Duration::from_secs(secs)
}

/// Coscheduling knowing these groups (created at 0) and these pods.
fn cosched(groups: &[PodGroup], pods: &[&Pod], args: CoschedulingArgs) -> Coscheduling {
    let mut c = Coscheduling::new(args);
    for g in groups {
        c.upsert_group(g.clone(), Duration::ZERO);
    }
    for p in pods {
        c.note_pod(p);
    }
    c
}

fn snapshot(nodes: Vec<Node>, pods: &[&Pod]) -> Snapshot {
    let bound = pods
        .iter()
        .filter(|p| !p.spec.node_name.is_empty())
        .map(|p| (*p).clone())
        .collect();
    Snapshot::from_objects(nodes, bound).unwrap()
}

// ---- core_test.go: TestPreFilter (7 cases) ----

#[test]
fn core_pre_filter() {
    let nodes = || vec![node("node-a", "4"), node("node-b", "4")];
    struct Case {
        name: &'static str,
        pod: Pod,
        pending: Vec<Pod>,
        pgs: Vec<PodGroup>,
        success: bool,
    }
    let cases = vec![
        Case {
            name: "pod does not belong to any pg",
            pod: pod("p", "", None, None, None),
            pending: vec![
                pod("p1", "ns", Some("pg1"), None, None),
                pod("p2", "ns", Some("pg2"), None, None),
            ],
            pgs: vec![pg("pg1", "ns", 1, None), pg("pg2", "ns", 1, None)],
            success: true,
        },
        Case {
            name: "pod belongs to a non-existent pg",
            pod: pod("p", "ns", Some("pg-non-existent"), None, None),
            pending: vec![],
            pgs: vec![pg("pg1", "ns", 1, None)],
            success: true,
        },
        Case {
            name: "pod count less than minMember",
            pod: pod("p", "ns", Some("pg1"), None, None),
            pending: vec![pod("pg2-1", "ns", Some("pg2"), None, None)],
            pgs: vec![pg("pg1", "ns", 2, None), pg("pg2", "ns", 2, None)],
            success: false,
        },
        Case {
            name: "pod count equal minMember",
            pod: pod("p1a", "ns", Some("pg1"), None, None),
            pending: vec![
                pod("p1b", "ns", Some("pg1"), None, None),
                pod("p1c", "ns", Some("pg1"), None, None),
            ],
            pgs: vec![pg("pg1", "ns", 2, None), pg("pg2", "ns", 2, None)],
            success: true,
        },
        Case {
            name: "pod count more than minMember",
            pod: pod("p1a", "ns", Some("pg1"), None, None),
            pending: vec![
                pod("p1b", "ns", Some("pg1"), None, None),
                pod("p1c", "ns", Some("pg1"), None, None),
            ],
            pgs: vec![pg("pg1", "ns", 2, None), pg("pg2", "ns", 2, None)],
            success: true,
        },
        Case {
            name: "cluster's resource satisfies minResource",
            pod: pod("p1a", "ns", Some("pg1"), None, None),
            pending: vec![
                pod("p1b", "ns", Some("pg1"), None, None),
                pod("p1c", "ns", Some("pg1"), None, None),
            ],
            pgs: vec![pg("pg1", "ns", 2, Some("6"))],
            success: true,
        },
        Case {
            name: "cluster's resource cannot satisfy minResource",
            pod: pod("p1a", "ns", Some("pg1"), None, None),
            pending: vec![
                pod("p1b", "ns", Some("pg1"), None, None),
                pod("p1c", "ns", Some("pg1"), None, None),
            ],
            pgs: vec![pg("pg1", "ns", 2, Some("10"))],
            success: false,
        },
    ];
    for c in cases {
        // As in the Go test, the pod lister holds the pending pods (not the pod itself).
        let pending: Vec<&Pod> = c.pending.iter().collect();
        let mut cs = cosched(&c.pgs, &pending, CoschedulingArgs::default());
        let snap = snapshot(nodes(), &pending);
        let got = cs.pre_filter(&c.pod, &snap, s(0));
        assert_eq!(got.is_ok(), c.success, "{}: {got:?}", c.name);
    }
}

// ---- core_test.go: TestPermit (4 cases) ----

#[test]
fn core_permit() {
    let cases = vec![
        (
            "pod does not belong to any pg",
            pod("p", "ns", None, None, None),
            vec![],
            PermitStatus::PodGroupNotSpecified,
        ),
        (
            "pod specifies a non-existent pg",
            pod("p", "ns", Some("pg-non-existent"), None, None),
            vec![],
            PermitStatus::PodGroupNotFound,
        ),
        (
            "pod belongs to a pg that doesn't have quorum",
            pod("p", "ns", Some("pg1"), None, None),
            vec![],
            PermitStatus::Wait,
        ),
        (
            "pod belongs to a pg that have quorum satisfied",
            pod("p1a", "ns", Some("pg1"), None, None),
            vec![pod("p1b", "ns", Some("pg1"), Some("node"), None)],
            PermitStatus::Success,
        ),
    ];
    for (name, p, existing, want) in cases {
        let mut all: Vec<&Pod> = existing.iter().collect();
        all.push(&p);
        let cs = cosched(
            &[pg("pg1", "ns", 2, None)],
            &all,
            CoschedulingArgs::default(),
        );
        let snap = snapshot(vec![node("node", "4")], &all);
        assert_eq!(cs.permit(&p, &snap).0, want, "{name}");
    }
}

// ---- core_test.go: TestCheckClusterResource (3 cases) ----

#[test]
fn core_check_cluster_resource() {
    let nodes = || vec![node("node-a", "3"), node("node-b", "3")];
    let cases = vec![
        (
            "Cluster resource enough",
            vec![pod("p1", "ns", None, Some("node-a"), Some("2"))],
            true,
        ),
        (
            "Cluster resource not enough",
            vec![
                pod("p1", "ns", None, Some("node-a"), Some("2")),
                pod("p2", "ns", None, Some("node-b"), Some("1")),
            ],
            false,
        ),
        (
            "Cluster resource enough as p1's resource needs to be excluded from minResources",
            vec![
                pod("p1", "ns", Some("pg1"), Some("node-a"), Some("2")),
                pod("p2", "ns", None, Some("node-b"), Some("1")),
            ],
            true,
        ),
    ];
    for (name, existing, want) in cases {
        let all: Vec<&Pod> = existing.iter().collect();
        let snap = snapshot(nodes(), &all);
        let mut request = ResourceList::new();
        request.insert("cpu".into(), Quantity::from_value(4));
        let got = check_cluster_resource(&snap, &request, "ns/pg1");
        assert_eq!(got.is_ok(), want, "{name}: {got:?}");
    }
}

// ---- coscheduling_test.go: TestPodGroupBackoffTime (1 case) ----

#[test]
fn coscheduling_pod_group_backoff_time() {
    let pods = [
        pod("pod1", "ns", Some("pg1"), None, None),
        pod("pod2", "ns", Some("pg1"), None, None),
        pod("pod3", "ns", Some("pg1"), None, None),
    ];
    let refs: Vec<&Pod> = pods.iter().collect();
    let args = CoschedulingArgs::default()
        .with_permit_waiting_time(s(10))
        .with_pod_group_backoff(s(1));
    let mut cs = cosched(&[pg("pg1", "ns", 3, None)], &refs, args);
    let snap = snapshot(vec![node("node", "4")], &[]);
    // Permit of pod1 waits and activates its siblings.
    let (status, activate) = cs.permit(&pods[0], &snap);
    assert_eq!(status, PermitStatus::Wait);
    assert!(activate);
    let siblings: Vec<&str> = cs
        .members("ns/pg1")
        .map(|k| k.as_str())
        .filter(|k| *k != "ns/pod1")
        .collect();
    assert_eq!(siblings, ["ns/pod2", "ns/pod3"]);
    // PostFilter of pod2 backs the group off; PreFilter of pod3 is refused (unresolvable).
    cs.post_filter(&pods[1], &snap, s(0));
    assert_eq!(
        cs.pre_filter(&pods[2], &snap, s(0)),
        Err("podGroup ns/pg1 failed recently".to_string())
    );
    // The backoff is over after a second.
    assert_eq!(cs.pre_filter(&pods[2], &snap, s(1)), Ok(()));
}

// ---- coscheduling_test.go: TestLess (13 cases) ----

#[test]
fn coscheduling_less() {
    let (low, high) = (10, 100);
    let now = s(1000);
    let at = |secs: u64| now + s(secs);
    // (name, p1, p1 queued, p2, p2 queued, groups with creation times, want)
    type P = (Pod, Duration);
    let p = |name: &str, ns: &str, prio: i32, group: Option<&str>, queued: Duration| -> P {
        (
            with_priority(pod(name, ns, group, None, None), prio),
            queued,
        )
    };
    // A pod without InitialAttemptTimestamp: the Go cases leave it nil where priorities differ.
    let z = Duration::ZERO;
    type Groups = Vec<(&'static str, &'static str, Duration)>;
    let cases: Vec<(&str, P, P, Groups, bool)> = vec![
        (
            "p1.priority less than p2.priority",
            p("p1", "ns1", low, None, z),
            p("p2", "ns2", high, None, z),
            vec![],
            false,
        ),
        (
            "p1.priority greater than p2.priority",
            p("p1", "ns1", high, None, z),
            p("p2", "ns2", low, None, z),
            vec![],
            true,
        ),
        (
            "equal priority. p1 is added to schedulingQ earlier than p2",
            p("p1", "ns1", high, None, at(1)),
            p("p2", "ns2", high, None, at(2)),
            vec![],
            true,
        ),
        (
            "equal priority. p2 is added to schedulingQ earlier than p1",
            p("p1", "ns1", high, None, at(2)),
            p("p2", "ns2", high, None, at(1)),
            vec![],
            false,
        ),
        (
            "p1.priority less than p2.priority, p1 belongs to pg1",
            p("p1", "ns1", low, Some("pg1"), z),
            p("p2", "ns2", high, None, z),
            vec![("pg1", "ns1", z)],
            false,
        ),
        (
            "p1.priority greater than p2.priority, p1 belongs to pg1",
            p("p1", "ns1", high, Some("pg1"), z),
            p("p2", "ns2", low, None, z),
            vec![("pg1", "ns1", z)],
            true,
        ),
        (
            "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to pg1",
            p("p1", "ns1", high, Some("pg1"), at(1)),
            p("p2", "ns2", high, None, at(2)),
            vec![("pg1", "ns1", at(1))],
            true,
        ),
        (
            "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to pg1",
            p("p1", "ns1", high, Some("pg1"), at(2)),
            p("p2", "ns2", high, None, at(1)),
            vec![("pg1", "ns1", at(2))],
            false,
        ),
        (
            "p1.priority less than p2.priority, p1 belongs to pg1 and p2 belongs to pg2",
            p("p1", "ns1", low, Some("pg1"), z),
            p("p2", "ns2", high, Some("pg2"), z),
            vec![("pg1", "ns1", at(1)), ("pg2", "ns2", at(2))],
            false,
        ),
        (
            "p1.priority greater than p2.priority, p1 belongs to pg1 and and p2 belongs to pg2",
            p("p1", "ns1", high, Some("pg1"), z),
            p("p2", "ns2", low, Some("pg1"), z),
            vec![("pg1", "ns1", at(1)), ("pg2", "ns2", at(2))],
            true,
        ),
        (
            "equal priority. p1 is added to schedulingQ earlier than p2, p1 belongs to pg1 and p2 belongs to pg2",
            p("p1", "ns1", high, Some("pg1"), at(1)),
            p("p2", "ns2", high, Some("pg2"), at(2)),
            vec![("pg1", "ns1", at(1)), ("pg2", "ns2", at(2))],
            true,
        ),
        (
            "equal priority. p2 is added to schedulingQ earlier than p1, p1 belongs to pg2 and p2 belongs to pg1",
            p("p1", "ns", low, Some("pg2"), at(1)),
            p("p2", "ns", high, Some("pg1"), at(2)),
            vec![("pg1", "ns", at(1)), ("pg2", "ns", at(2))],
            false,
        ),
        (
            "equal priority and creation time, p1 belongs pg1 and p2 belong to pg2",
            p("p1", "ns1", high, Some("pg2"), at(1)),
            p("p2", "ns2", high, Some("pg2"), at(1)),
            vec![("pg1", "ns1", at(1)), ("pg2", "ns2", at(2))],
            true,
        ),
        (
            "equal priority and creation time, and p2 belong to pg2",
            p("p1", "ns1", high, None, at(1)),
            p("p2", "ns2", high, Some("pg2"), at(1)),
            vec![("pg2", "ns2", at(2))],
            true,
        ),
    ];
    assert_eq!(cases.len(), 14);
    for (name, a, b, groups, want) in cases {
        let mut cs = Coscheduling::new(CoschedulingArgs::default());
        for (g, ns, created) in groups {
            cs.upsert_group(pg(g, ns, 0, None), created);
        }
        assert_eq!(cs.less((&a.0, a.1), (&b.0, b.1)), want, "{name}");
    }
}

// ---- coscheduling_test.go: TestPermit (3 cases) ----

#[test]
fn coscheduling_permit() {
    let groups = [pg("pg1", "ns", 1, None), pg("pg2", "ns", 2, None)];
    let cases = [
        (
            "pods do not belong to any podGroup",
            None,
            PermitStatus::PodGroupNotSpecified,
        ),
        (
            "pods belong to a pg1, but quorum not satisfied",
            Some("pg2"),
            PermitStatus::Wait,
        ),
        (
            "pods belong to a podGroup, and quorum satisfied",
            Some("pg1"),
            PermitStatus::Success,
        ),
    ];
    for (name, group, want) in cases {
        let p = pod("p", "ns", group, None, None);
        let cs = cosched(
            &groups,
            &[&p],
            CoschedulingArgs::default().with_permit_waiting_time(s(10)),
        );
        let snap = snapshot(vec![node("node", "4")], &[]);
        let (got, _) = cs.permit(&p, &snap);
        // Coscheduling's Permit: Success for no group and for a quorum, Wait otherwise.
        assert_eq!(got, want, "{name}");
    }
}

// ---- coscheduling_test.go: TestPostFilter (3 cases) ----

#[test]
fn coscheduling_post_filter() {
    let cases = [
        (
            "pod does not belong to any pod group",
            pod("p", "ns", None, None, None),
            vec![],
            2,
            "can not find pod group",
            false,
        ),
        (
            "enough pods assigned, do not reject all",
            pod("p", "ns", Some("pg1"), None, None),
            vec![pod("p1", "ns", Some("pg1"), Some("node"), None)],
            1,
            "",
            false,
        ),
        (
            "pod failed at filter phase, reject all pods",
            pod("p", "ns", Some("pg1"), None, None),
            vec![pod("p1", "ns", Some("pg1"), Some("node"), None)],
            2,
            "PodGroup ns/pg1 gets rejected due to Pod p is unschedulable even after PostFilter",
            true,
        ),
    ];
    for (name, p, existing, min, message, reject) in cases {
        let mut all: Vec<&Pod> = existing.iter().collect();
        all.push(&p);
        let mut cs = cosched(
            &[pg("pg1", "ns", min, None)],
            &all,
            CoschedulingArgs::default(),
        );
        let snap = snapshot(vec![node("node", "4")], &all);
        let got = cs.post_filter(&p, &snap, s(0));
        assert_eq!(got.message, message, "{name}");
        assert_eq!(got.reject_group.is_some(), reject, "{name}");
    }
}

// ---- The engine ----

fn engine(nodes: Vec<Node>, args: CoschedulingArgs) -> Scheduler {
    let snapshot = Snapshot::from_objects(nodes, vec![]).unwrap();
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         podInitialBackoffSeconds: 1\npodMaxBackoffSeconds: 10\n",
    )
    .unwrap();
    Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 7)
        .unwrap()
        .with_coscheduling(args)
}

/// What a run of the engine did.
#[derive(Default, Debug)]
struct Run {
    /// Pods bound, in order.
    bound: Vec<String>,
    /// Steps seen, as text.
    log: Vec<String>,
}

/// Schedules until idle (binding every pod handed out, the informer confirming it) or until
/// `limit`, advancing time to each wakeup.
fn run(sch: &mut Scheduler, now: &mut Duration, limit: Duration, out: &mut Run) {
    for _ in 0..100_000 {
        match sch.schedule_one(*now) {
            Step::Bind { pod, node, .. } => {
                sch.finish_binding(&pod, Ok(()), *now);
                let mut p = sch
                    .snapshot()
                    .get(&node)
                    .unwrap()
                    .pods()
                    .iter()
                    .find(|i| *i.key() == pod)
                    .unwrap()
                    .pod()
                    .clone();
                p.spec.node_name = node.clone();
                sch.apply(ClusterEvent::update(p), *now);
                out.log.push(format!("bind {pod}"));
                out.bound.push(pod.to_string());
            }
            Step::Preempt {
                pod, node, victims, ..
            } => {
                out.log
                    .push(format!("Preempt {pod} on {node}: {victims:?}"));
                for v in victims {
                    sch.apply(ClusterEvent::Delete(ObjectKey::pod(v)), *now);
                }
            }
            Step::Waiting { pod, .. } => out.log.push(format!("wait {pod}")),
            Step::Rejected { pod, reason, .. } => out.log.push(format!("reject {pod}: {reason}")),
            Step::Unschedulable { pod, .. } => out.log.push(format!("unschedulable {pod}")),
            Step::Idle { until: Some(t) } if t <= limit => *now = t.max(*now),
            Step::Idle { .. } => return,
            other => out.log.push(format!("{other:?}")),
        }
    }
    panic!(
        "no quiescence: {:?}",
        &out.log[out.log.len().saturating_sub(20)..]
    );
}

fn gang_pod(name: &str, group: &str, milli_cpu: u32) -> Pod {
    pod(
        name,
        "ns",
        Some(group),
        None,
        Some(&format!("{milli_cpu}m")),
    )
}

#[test]
fn a_gang_is_bound_only_once_min_member_are_assumed() {
    let mut sch = engine(
        vec![node("n1", "4"), node("n2", "4")],
        CoschedulingArgs::default(),
    );
    sch.apply(ClusterEvent::add(pg("job", "ns", 3, None)), s(0));
    for i in 0..3 {
        sch.apply(
            ClusterEvent::add(gang_pod(&format!("w{i}"), "job", 1000)),
            s(0),
        );
    }
    let first = sch.schedule_one(s(0));
    assert!(
        matches!(first, Step::Waiting { ref pod, .. } if pod == "ns/w0"),
        "{first:?}"
    );
    let second = sch.schedule_one(s(0));
    assert!(
        matches!(second, Step::Waiting { ref pod, .. } if pod == "ns/w1"),
        "{second:?}"
    );
    assert_eq!(sch.waiting().count(), 2);
    // The third reaches minMember: it is bound, and both waiting members are allowed.
    let third = sch.schedule_one(s(0));
    assert!(
        matches!(third, Step::Bind { ref pod, .. } if pod == "ns/w2"),
        "{third:?}"
    );
    assert_eq!(sch.waiting().count(), 0);
    let mut rest = Vec::new();
    while let Step::Bind { pod, .. } = sch.schedule_one(s(0)) {
        rest.push(pod);
    }
    assert_eq!(rest, ["ns/w0", "ns/w1"]);
}

#[test]
fn a_permit_timeout_releases_every_waiting_member() {
    let mut sch = engine(vec![node("n1", "8")], CoschedulingArgs::default());
    let mut group = pg("job", "ns", 3, None);
    group.spec.schedule_timeout_seconds = Some(5);
    sch.apply(ClusterEvent::add(group), s(0));
    sch.apply(ClusterEvent::add(gang_pod("w0", "job", 1000)), s(0));
    sch.apply(ClusterEvent::add(gang_pod("w1", "job", 1000)), s(0));
    // The third member is gated: it counts for minMember but is not scheduled.
    let mut gated = gang_pod("w2", "job", 1000);
    gated.spec.scheduling_gates =
        vec![serde_json::from_value(serde_json::json!({"name": "hold"})).unwrap()];
    sch.apply(ClusterEvent::add(gated), s(0));
    assert!(matches!(sch.schedule_one(s(0)), Step::Waiting { until, .. } if until == s(5)));
    assert!(matches!(sch.schedule_one(s(1)), Step::Waiting { until, .. } if until == s(6)));
    assert!(matches!(sch.schedule_one(s(2)), Step::Idle { until: Some(t) } if t == s(5)));
    // w0's wait runs out: it is rejected, and Unreserve rejects w1 with it.
    match sch.schedule_one(s(5)) {
        Step::Rejected {
            pod,
            plugin,
            reason,
        } => {
            assert_eq!(pod, "ns/w0");
            assert_eq!(plugin, COSCHEDULING);
            assert_eq!(reason, "rejected due to timeout after waiting at permit");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(sch.waiting().count(), 0);
    assert_eq!(sch.snapshot().pod_count(), 0);
}

#[test]
fn post_filter_rejects_the_waiting_members_when_one_fits_nowhere() {
    // Two nodes of 1 CPU: two members fit, the third does not.
    let mut sch = engine(
        vec![node("n1", "1"), node("n2", "1")],
        CoschedulingArgs::default(),
    );
    sch.apply(ClusterEvent::add(pg("job", "ns", 3, None)), s(0));
    for i in 0..3 {
        sch.apply(
            ClusterEvent::add(gang_pod(&format!("w{i}"), "job", 1000)),
            s(0),
        );
    }
    assert!(matches!(sch.schedule_one(s(0)), Step::Waiting { .. }));
    assert!(matches!(sch.schedule_one(s(0)), Step::Waiting { .. }));
    assert!(matches!(sch.schedule_one(s(0)), Step::Unschedulable { .. }));
    assert_eq!(
        sch.waiting().count(),
        0,
        "the waiting members were rejected"
    );
    assert_eq!(sch.snapshot().pod_count(), 0);
    let events = sch.drain_events();
    let rejected = events
        .iter()
        .filter(|e| format!("{e:?}").contains("optimistic rejection in PostFilter"))
        .count();
    assert_eq!(rejected, 2, "{events:?}");
}

#[test]
fn pre_filter_refuses_a_group_short_of_min_member_until_a_member_arrives() {
    let mut sch = engine(vec![node("n1", "4")], CoschedulingArgs::default());
    sch.apply(ClusterEvent::add(pg("job", "ns", 2, None)), s(0));
    sch.apply(ClusterEvent::add(gang_pod("w0", "job", 100)), s(0));
    match sch.schedule_one(s(0)) {
        Step::Unschedulable { error, .. } => assert_eq!(
            error.to_string(),
            "0/1 nodes are available: pre-filter pod w0 cannot find enough sibling pods, \
             current pods number: 1, minMember of group: 2."
        ),
        other => panic!("{other:?}"),
    }
    sch.apply(ClusterEvent::add(gang_pod("w1", "job", 100)), s(1));
    let mut now = s(1);
    let mut out = Run::default();
    run(&mut sch, &mut now, s(100), &mut out);
    assert_eq!(out.bound.len(), 2, "{:?}", out.log);
}

#[test]
fn the_queue_keeps_a_group_together() {
    let mut sch = engine(vec![node("n1", "16")], CoschedulingArgs::default());
    // Group a is created first; its pods arrive interleaved with group b's and a loner's.
    sch.apply(ClusterEvent::add(pg("a", "ns", 2, None)), s(0));
    sch.apply(ClusterEvent::add(pg("b", "ns", 2, None)), s(1));
    sch.apply(ClusterEvent::add(gang_pod("b0", "b", 100)), s(2));
    sch.apply(ClusterEvent::add(gang_pod("a0", "a", 100)), s(3));
    sch.apply(
        ClusterEvent::add(pod("solo", "ns", None, None, Some("100m"))),
        s(4),
    );
    sch.apply(ClusterEvent::add(gang_pod("b1", "b", 100)), s(5));
    sch.apply(ClusterEvent::add(gang_pod("a1", "a", 100)), s(6));
    let mut now = s(7);
    let mut out = Run::default();
    run(&mut sch, &mut now, s(100), &mut out);
    assert_eq!(out.bound, ["ns/a1", "ns/a0", "ns/b1", "ns/b0", "ns/solo"]);
}

// ---- Model-based property test ----

#[derive(Clone, Debug)]
struct GangSpec {
    size: usize,
    min_member: usize,
    milli_cpu: u32,
    priority: i32,
}

#[derive(Clone, Debug)]
enum Op {
    /// Schedule until idle or this many seconds pass.
    Run(u64),
    /// Delete the i-th pod (modulo the pods).
    Delete(usize),
    /// Add an ordinary pod of priority 1000 asking for this many millicores: it preempts.
    Urgent(u32),
}

fn gang_strategy() -> impl Strategy<Value = GangSpec> {
    (1usize..6, 500u32..2500, prop_oneof![Just(0), Just(100)]).prop_flat_map(
        |(size, cpu, priority)| {
            (1..=size).prop_map(move |min| GangSpec {
                size,
                min_member: min,
                milli_cpu: cpu,
                priority,
            })
        },
    )
}

/// Checks the gang invariants after each step: a member handed out for binding has at least
/// `minMember` members of its group assumed and not waiting with it; after a Permit timeout
/// no member of the group is still waiting.
fn check_step(sch: &Scheduler, step: &Step, min: &BTreeMap<String, usize>) -> Result<(), String> {
    let g = sch.coscheduling().unwrap();
    let waiting: BTreeSet<&str> = sch.waiting().map(|(k, _)| k).collect();
    match step {
        Step::Bind { pod, .. } => {
            if let Some(group) = g.group_of_pod(pod) {
                let placed = g
                    .members(group)
                    .filter(|k| {
                        sch.snapshot().node_of(k).is_some() && !waiting.contains(k.as_str())
                    })
                    .count();
                if placed < min[group] {
                    return Err(format!(
                        "{pod} bound with {placed} of {} placed",
                        min[group]
                    ));
                }
            }
        }
        // No preemption leaves a group that had `minMember` placed below it.
        Step::Preempt { victims, .. } => {
            for (group, &min_member) in min {
                let placed = g
                    .members(group)
                    .filter(|k| sch.snapshot().node_of(k).is_some())
                    .count();
                let taken = victims
                    .iter()
                    .filter(|v| g.group_of_pod(v) == Some(group.as_str()))
                    .count();
                if placed >= min_member && placed - taken < min_member {
                    return Err(format!(
                        "{group}: {taken} of {placed} placed taken, minMember {min_member}"
                    ));
                }
            }
        }
        Step::Rejected { pod, reason, .. } if reason.contains("timeout") => {
            if let Some(group) = g.group_of_pod(pod)
                && let Some(k) = g.members(group).find(|k| waiting.contains(k.as_str()))
            {
                return Err(format!("{k} still waiting after {pod} timed out"));
            }
        }
        _ => {}
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn gangs_are_all_or_nothing(
        nodes in proptest::collection::vec(1u32..5, 1..4),
        gangs in proptest::collection::vec(gang_strategy(), 1..4),
        loners in proptest::collection::vec(200u32..2000, 0..4),
        timeouts in proptest::collection::vec(prop_oneof![Just(None), (1i32..20).prop_map(Some)], 4),
        ops in proptest::collection::vec(prop_oneof![
            (1u64..120).prop_map(Op::Run),
            (0usize..32).prop_map(Op::Delete),
            (500u32..3000).prop_map(Op::Urgent),
        ], 1..12),
    ) {
        let nodes: Vec<Node> = nodes.iter().enumerate()
            .map(|(i, c)| node(&format!("n{i}"), &c.to_string())).collect();
        let mut sch = engine(nodes, CoschedulingArgs::default().with_permit_waiting_time(s(30)));
        let mut pods: Vec<String> = Vec::new();
        let mut min = BTreeMap::new();
        for (i, g) in gangs.iter().enumerate() {
            let mut group = pg(&format!("g{i}"), "ns", g.min_member as i32, None);
            group.spec.schedule_timeout_seconds = timeouts[i];
            min.insert(format!("ns/g{i}"), g.min_member);
            sch.apply(ClusterEvent::add(group), s(0));
            for j in 0..g.size {
                let name = format!("g{i}-{j}");
                let member = with_priority(gang_pod(&name, &format!("g{i}"), g.milli_cpu), g.priority);
                sch.apply(ClusterEvent::add(member), s(0));
                pods.push(format!("ns/{name}"));
            }
        }
        for (i, c) in loners.iter().enumerate() {
            let name = format!("solo{i}");
            sch.apply(ClusterEvent::add(pod(&name, "ns", None, None, Some(&format!("{c}m")))), s(0));
            pods.push(format!("ns/{name}"));
        }
        let mut now = s(0);
        for op in ops {
            match op {
                Op::Delete(i) => {
                    let key = pods[i % pods.len()].clone();
                    sch.apply(ClusterEvent::Delete(ObjectKey::pod(key)), now);
                }
                Op::Urgent(milli_cpu) => {
                    let name = format!("urgent{}", pods.len());
                    let p = with_priority(pod(&name, "ns", None, None, Some(&format!("{milli_cpu}m"))), 1000);
                    sch.apply(ClusterEvent::add(p), now);
                    pods.push(format!("ns/{name}"));
                }
                Op::Run(secs) => {
                    let limit = now + s(secs);
                    for _ in 0..10_000 {
                        let step = sch.schedule_one(now);
                        check_step(&sch, &step, &min).map_err(TestCaseError::fail)?;
                        match step {
                            Step::Bind { pod, node, .. } => {
                                sch.finish_binding(&pod, Ok(()), now);
                                let mut p = sch.snapshot().get(&node).unwrap().pods().iter()
                                    .find(|i| *i.key() == pod).unwrap().pod().clone();
                                p.spec.node_name = node;
                                sch.apply(ClusterEvent::update(p), now);
                            }
                            Step::Preempt { victims, .. } => {
                                for v in victims {
                                    sch.apply(ClusterEvent::Delete(ObjectKey::pod(v)), now);
                                }
                            }
                            Step::Idle { until: Some(t) } if t <= limit => now = t.max(now),
                            Step::Idle { .. } => break,
                            _ => {}
                        }
                    }
                    now = now.max(limit);
                }
            }
            // Never a waiting member past its group's deadline.
            for (k, _) in sch.waiting() {
                prop_assert!(sch.snapshot().node_of(k).is_some());
            }
        }
    }

    /// Two groups that fit only one at a time: one of them is eventually fully bound.
    #[test]
    fn two_groups_that_fit_one_at_a_time_do_not_deadlock(
        nodes in 1usize..4,
        per_node in 1u32..4,
        stagger in 0u64..3,
    ) {
        // Each group needs every CPU of the cluster.
        let total = nodes as u32 * per_node;
        let mut sch = engine(
            (0..nodes).map(|i| node(&format!("n{i}"), &per_node.to_string())).collect(),
            CoschedulingArgs::default().with_permit_waiting_time(s(10)),
        );
        for g in ["a", "b"] {
            sch.apply(ClusterEvent::add(pg(g, "ns", total as i32, None)), s(0));
        }
        // Members of both groups arrive interleaved.
        for j in 0..total {
            for g in ["a", "b"] {
                sch.apply(ClusterEvent::add(gang_pod(&format!("{g}{j}"), g, 1000)), s(stagger * u64::from(j)));
            }
        }
        let mut now = s(stagger * u64::from(total));
        let mut out = Run::default();
        run(&mut sch, &mut now, s(3600), &mut out);
        let a = out.bound.iter().filter(|k| k.starts_with("ns/a")).count();
        let b = out.bound.iter().filter(|k| k.starts_with("ns/b")).count();
        prop_assert!(
            (a == total as usize && b == 0) || (b == total as usize && a == 0),
            "a {} b {} of {}: {:?}", a, b, total, out.log
        );
    }
}

#[test]
fn preemption_takes_no_member_of_a_gang_at_its_min_member() {
    // One node of 2 CPUs, full with a bound gang of 2 (minMember 2) and, on another node,
    // an ordinary pod: a high-priority pod preempts the ordinary pod, never a gang member.
    let mut sch = engine(
        vec![node("n1", "2"), node("n2", "1")],
        CoschedulingArgs::default(),
    );
    sch.apply(ClusterEvent::add(pg("job", "ns", 2, None)), s(0));
    for i in 0..2 {
        let mut p = gang_pod(&format!("w{i}"), "job", 1000);
        p.spec.node_name = "n1".into();
        sch.apply(ClusterEvent::add(p), s(0));
    }
    let mut solo = pod("solo", "ns", None, None, Some("1000m"));
    solo.spec.node_name = "n2".into();
    sch.apply(ClusterEvent::add(solo), s(0));
    let high = with_priority(pod("high", "ns", None, None, Some("1000m")), 1000);
    sch.apply(ClusterEvent::add(high), s(0));
    match sch.schedule_one(s(0)) {
        Step::Preempt { node, victims, .. } => {
            assert_eq!(node, "n2");
            assert_eq!(victims, ["ns/solo"]);
        }
        other => panic!("{other:?}"),
    }
    // With the ordinary pod gone, nothing else can be taken: the gang stays whole.
    sch.apply(ClusterEvent::Delete(ObjectKey::pod("ns/solo")), s(0));
    let big = with_priority(pod("big", "ns", None, None, Some("2000m")), 1000);
    sch.apply(ClusterEvent::add(big), s(0));
    let mut now = s(0);
    let mut out = Run::default();
    run(&mut sch, &mut now, s(30), &mut out);
    assert!(
        !out.log.iter().any(|l| l.contains("Preempt")),
        "{:?}",
        out.log
    );
    assert_eq!(sch.snapshot().node_of("ns/w0"), Some("n1"));
    assert_eq!(sch.snapshot().node_of("ns/w1"), Some("n1"));
}

/// `count` members of `group` bound on the nodes given, one per entry, each asking for
/// `milli_cpu`.
fn bound_members(sch: &mut Scheduler, group: &str, nodes: &[&str], milli_cpu: u32) {
    for (i, n) in nodes.iter().enumerate() {
        let mut p = gang_pod(&format!("{group}{i}"), group, milli_cpu);
        p.spec.node_name = (*n).into();
        sch.apply(ClusterEvent::add(p), s(0));
    }
}

fn bound_pod(sch: &mut Scheduler, name: &str, node: &str, cpu: &str) {
    let mut p = pod(name, "ns", None, Some(node), Some(cpu));
    p.spec.priority = Some(0);
    sch.apply(ClusterEvent::add(p), s(0));
}

/// A gang of 10 placed with minMember 8, three of them on the only node a high-priority pod
/// fits: one preemption takes at most 2 of them.
#[test]
fn one_preemption_takes_at_most_a_gangs_members_beyond_min_member() {
    let setup = || {
        let mut sch = engine(
            vec![
                node("n1", "4"),
                node("n2", "2"),
                node("n3", "2"),
                node("n4", "2"),
                node("n5", "2"),
            ],
            CoschedulingArgs::default(),
        );
        sch.apply(ClusterEvent::add(pg("job", "ns", 8, None)), s(0));
        let nodes = ["n1", "n1", "n1", "n2", "n2", "n3", "n3", "n4", "n4", "n5"];
        bound_members(&mut sch, "job", &nodes, 1000);
        sch
    };
    let placed = |sch: &Scheduler| {
        (0..10)
            .filter(|i| sch.snapshot().node_of(&format!("ns/job{i}")).is_some())
            .count()
    };
    // 3 CPUs: the free one and two members' (the budget, 10 - 8).
    let mut sch = setup();
    sch.apply(
        ClusterEvent::add(with_priority(
            pod("high", "ns", None, None, Some("3")),
            1000,
        )),
        s(0),
    );
    match sch.schedule_one(s(0)) {
        Step::Preempt { node, victims, .. } => {
            assert_eq!(node, "n1");
            assert_eq!(victims.len(), 2, "{victims:?}");
            assert!(
                victims.iter().all(|v| v.starts_with("ns/job")),
                "{victims:?}"
            );
        }
        other => panic!("{other:?}"),
    }
    // 4 CPUs would need all three: n1 is no candidate, and nothing is taken.
    let mut sch = setup();
    sch.apply(
        ClusterEvent::add(with_priority(
            pod("high", "ns", None, None, Some("4")),
            1000,
        )),
        s(0),
    );
    let mut now = s(0);
    let mut out = Run::default();
    run(&mut sch, &mut now, s(30), &mut out);
    assert!(
        !out.log.iter().any(|l| l.contains("Preempt")),
        "{:?}",
        out.log
    );
    assert_eq!(placed(&sch), 10);
}

/// A gang of 4 (priority 100, minMember 4, each member a whole node) on 4 nodes each held by
/// a low-priority filler: its first member's preemption takes the fillers of all 4 nodes, and
/// the gang is then bound whole.
#[test]
fn a_gang_preempts_for_all_its_members_at_once() {
    let nodes = ["n0", "n1", "n2", "n3"];
    let mut sch = engine(
        nodes.iter().map(|n| node(n, "2")).collect(),
        CoschedulingArgs::default(),
    );
    for (i, n) in nodes.iter().enumerate() {
        bound_pod(&mut sch, &format!("filler{i}"), n, "2");
    }
    sch.apply(ClusterEvent::add(pg("hi", "ns", 4, None)), s(0));
    for i in 0..4 {
        let p = with_priority(gang_pod(&format!("hi{i}"), "hi", 2000), 100);
        sch.apply(ClusterEvent::add(p), s(0));
    }
    match sch.schedule_one(s(0)) {
        Step::Preempt { pod, victims, .. } => {
            assert_eq!(pod, "ns/hi0");
            let mut v = victims.clone();
            v.sort();
            assert_eq!(v, ["ns/filler0", "ns/filler1", "ns/filler2", "ns/filler3"]);
        }
        other => panic!("{other:?}"),
    }
    // The victims deleted, the gang is bound whole with no further preemption.
    for i in 0..4 {
        sch.apply(
            ClusterEvent::Delete(ObjectKey::pod(format!("ns/filler{i}"))),
            s(0),
        );
    }
    let mut now = s(0);
    let mut out = Run::default();
    run(&mut sch, &mut now, s(60), &mut out);
    let mut bound = out.bound.clone();
    bound.sort();
    assert_eq!(
        bound,
        ["ns/hi0", "ns/hi1", "ns/hi2", "ns/hi3"],
        "{:?}",
        out.log
    );
    assert!(
        !out.log.iter().any(|l| l.contains("Preempt")),
        "{:?}",
        out.log
    );
}

/// Two gangs and low-priority fillers: the high gang of 4 would need 4 nodes, but 2 of the 5
/// are held by a low gang at its minMember (which preemption never takes below): nothing is
/// preempted, and the member's message says the gang would not fit.
#[test]
fn a_gang_that_cannot_fit_even_with_every_victim_taken_preempts_nothing() {
    let nodes = ["n0", "n1", "n2", "n3", "n4"];
    let mut sch = engine(
        nodes.iter().map(|n| node(n, "2")).collect(),
        CoschedulingArgs::default(),
    );
    sch.apply(ClusterEvent::add(pg("lo", "ns", 2, None)), s(0));
    bound_members(&mut sch, "lo", &["n0", "n1"], 2000);
    for (i, n) in nodes[2..].iter().enumerate() {
        bound_pod(&mut sch, &format!("filler{i}"), n, "2");
    }
    sch.apply(ClusterEvent::add(pg("hi", "ns", 4, None)), s(0));
    for i in 0..4 {
        let p = with_priority(gang_pod(&format!("hi{i}"), "hi", 2000), 100);
        sch.apply(ClusterEvent::add(p), s(0));
    }
    match sch.schedule_one(s(0)) {
        Step::Unschedulable { pod, error, .. } => {
            assert_eq!(pod, "ns/hi0");
            let text = error.to_string();
            assert!(
                text.contains("preemption: the gang ns/hi would not fit: member ns/hi3"),
                "{text}"
            );
        }
        other => panic!("{other:?}"),
    }
    let mut now = s(0);
    let mut out = Run::default();
    run(&mut sch, &mut now, s(120), &mut out);
    assert!(
        !out.log.iter().any(|l| l.contains("Preempt")),
        "{:?}",
        out.log
    );
    assert!(out.bound.is_empty(), "{:?}", out.log);
    for name in ["ns/lo0", "ns/lo1", "ns/filler0", "ns/filler1", "ns/filler2"] {
        assert!(sch.snapshot().node_of(name).is_some(), "{name}");
    }
}

/// kube's Workload API (`scheduling.k8s.io/v1alpha1`, kube v1.35) read from kubectl JSON by
/// kind: its gang pod group becomes a Coscheduling group that pods join by `workloadRef`; its
/// basic pod group (`minMember` 0) is no gang.
#[test]
fn a_workloads_gang_pod_group_is_scheduled_all_together() {
    use sched_core::model::{Role, load_bytes};
    let pod_json = |name: &str, group: &str| {
        format!(
            r#"{{"kind":"Pod","metadata":{{"name":"{name}","namespace":"ml"}},
            "spec":{{"workloadRef":{{"name":"job","podGroup":"{group}"}},
            "containers":[{{"name":"c","image":"pause",
            "resources":{{"requests":{{"cpu":"1"}}}}}}]}}}}"#
        )
    };
    let json = format!(
        r#"{{"kind":"List","items":[
          {{"apiVersion":"scheduling.k8s.io/v1alpha1","kind":"Workload",
            "metadata":{{"name":"job","namespace":"ml"}},
            "spec":{{"podGroups":[{{"name":"train","policy":{{"gang":{{"minCount":3}}}}}},
                                {{"name":"driver","policy":{{"basic":{{}}}}}}]}}}},
          {}, {}, {}]}}"#,
        pod_json("t0", "train"),
        pod_json("t1", "train"),
        pod_json("d0", "driver")
    );
    let cluster = load_bytes("w.json", json.as_bytes(), Role::Mixed)
        .unwrap()
        .into_cluster()
        .unwrap();
    assert_eq!(cluster.pod_groups.len(), 2);
    assert_eq!(cluster.pod_groups[0].key(), "ml/job/train");
    assert_eq!(cluster.pod_groups[0].spec.min_member, 3);
    assert_eq!(cluster.pod_groups[1].key(), "ml/job/driver");
    assert_eq!(cluster.pod_groups[1].spec.min_member, 0);
    let mut sch = engine(vec![node("n1", "8")], CoschedulingArgs::default());
    for g in &cluster.pod_groups {
        sch.apply(ClusterEvent::add(g.clone()), s(0));
    }
    for p in &cluster.pending {
        sch.apply(ClusterEvent::add(p.clone()), s(0));
    }
    let mut now = s(0);
    let mut out = Run::default();
    run(&mut sch, &mut now, s(30), &mut out);
    // Two of three members: the gang waits; the basic pod group's pod is bound alone.
    assert_eq!(out.bound, ["ml/d0"], "{:?}", out.log);
    let third: Pod = serde_json::from_str(&pod_json("t2", "train")).unwrap();
    sch.apply(ClusterEvent::add(third), now);
    run(&mut sch, &mut now, s(60), &mut out);
    let mut train: Vec<&str> = out.bound[1..].iter().map(String::as_str).collect();
    train.sort();
    assert_eq!(train, ["ml/t0", "ml/t1", "ml/t2"], "{:?}", out.log);
}
