//! kube's table tests for SelectorSpread (1.22 selector_spread_test.go) and the legacy
//! ServiceAntiAffinity priority (serviceaffinity TestServiceAffinityScore), with their expected
//! scores.

use super::selector_spread::ALL_ZERO_ZONED_SCORE;
use super::{SelectorSpreadPriority, ServiceAntiAffinity};
use crate::framework::Priority;
use crate::model::{Node, Pod, Workload, WorkloadKind};
use crate::plugins::interpod::testutil::*;

const RC: (&str, &str) = ("v1", "ReplicationController");
const RS: (&str, &str) = ("apps/v1", "ReplicaSet");
const SS: (&str, &str) = ("apps/v1", "StatefulSet");

const LABELS1: &[(&str, &str)] = &[("foo", "bar"), ("baz", "blah")];
const LABELS2: &[(&str, &str)] = &[("bar", "foo"), ("baz", "blah")];

fn svc(ns: &str, sel: &[(&str, &str)]) -> Workload {
    workload(WorkloadKind::Service, ns, "s1", sel)
}

fn controller(kind: (&str, &str), name: &str, sel: &[(&str, &str)]) -> Workload {
    let k = match kind.1 {
        "ReplicationController" => WorkloadKind::ReplicationController,
        "ReplicaSet" => WorkloadKind::ReplicaSet,
        _ => WorkloadKind::StatefulSet,
    };
    workload(k, "default", name, sel)
}

fn owned(p: PodB, kind: (&str, &str), name: &str) -> PodB {
    p.owner(kind.0, kind.1, name)
}

fn run(
    prio: &impl Priority,
    p: &Pod,
    pods: Vec<Pod>,
    nodes: Vec<Node>,
    workloads: Vec<Workload>,
) -> Vec<i64> {
    let mut snap = snapshot(nodes, pods);
    snap.set_workloads(workloads);
    run_priority(prio, p, &snap).expect("priority").1
}

#[test]
fn selector_spread_score() {
    let two = || vec![node("node1", &[]), node("node2", &[])];
    let on = |n: &str, l: &[(&str, &str)]| pod().node(n).labels(l);
    let dflt = |n: &str, l: &[(&str, &str)]| pod().node(n).ns("default").labels(l);
    type Case = (&'static str, Pod, Vec<Pod>, Vec<Workload>, [i64; 2]);
    let mut cases: Vec<Case> = vec![
        (
            "nothing scheduled",
            pod().build(),
            vec![],
            vec![],
            [100, 100],
        ),
        (
            "no services",
            pod().labels(LABELS1).build(),
            vec![pod().node("node1").build()],
            vec![],
            [100, 100],
        ),
        (
            "different services",
            pod().labels(LABELS1).build(),
            vec![on("node1", LABELS2).build()],
            vec![svc("default", &[("key", "value")])],
            [100, 100],
        ),
        (
            "two pods, one service pod",
            pod().labels(LABELS1).build(),
            vec![on("node1", LABELS2).build(), on("node2", LABELS1).build()],
            vec![svc("default", LABELS1)],
            [100, 0],
        ),
        (
            "five pods, one service pod in no namespace",
            pod().labels(LABELS1).build(),
            vec![
                on("node1", LABELS2).build(),
                dflt("node1", LABELS1).build(),
                on("node1", LABELS1).ns("ns1").build(),
                on("node2", LABELS1).build(),
                on("node2", LABELS2).build(),
            ],
            vec![svc("default", LABELS1)],
            [100, 0],
        ),
        (
            "four pods, one service pod in default namespace",
            pod().labels(LABELS1).ns("default").build(),
            vec![
                on("node1", LABELS1).build(),
                on("node1", LABELS1).ns("ns1").build(),
                dflt("node2", LABELS1).build(),
                on("node2", LABELS2).build(),
            ],
            vec![svc("default", LABELS1)],
            [100, 0],
        ),
        (
            "five pods, one service pod in specific namespace",
            pod().labels(LABELS1).ns("ns1").build(),
            vec![
                on("node1", LABELS2).build(),
                dflt("node1", LABELS1).build(),
                on("node1", LABELS1).ns("ns2").build(),
                on("node2", LABELS1).ns("ns1").build(),
                on("node2", LABELS2).build(),
            ],
            vec![svc("ns1", LABELS1)],
            [100, 0],
        ),
        (
            "three pods, two service pods on different nodes",
            pod().labels(LABELS1).build(),
            vec![
                on("node1", LABELS2).build(),
                on("node1", LABELS1).build(),
                on("node2", LABELS1).build(),
            ],
            vec![svc("default", LABELS1)],
            [0, 0],
        ),
        (
            "four pods, three service pods",
            pod().labels(LABELS1).build(),
            vec![
                on("node1", LABELS2).build(),
                on("node1", LABELS1).build(),
                on("node2", LABELS1).build(),
                on("node2", LABELS1).build(),
            ],
            vec![svc("default", LABELS1)],
            [50, 0],
        ),
        (
            "service with partial pod label matches",
            pod().labels(LABELS1).build(),
            vec![
                on("node1", LABELS2).build(),
                on("node1", LABELS1).build(),
                on("node2", LABELS1).build(),
            ],
            vec![svc("default", &[("baz", "blah")])],
            [0, 50],
        ),
    ];
    let three = || {
        vec![
            dflt("node1", LABELS2).build(),
            dflt("node1", LABELS1).build(),
            dflt("node2", LABELS1).build(),
        ]
    };
    // Service plus a controller with partial matches: selector baz=blah AND foo=bar.
    for kind in [RC, RS, SS] {
        cases.push((
            "service with partial pod label matches with service and controller",
            owned(pod().ns("default").labels(LABELS1), kind, "c1").build(),
            three(),
            vec![
                controller(kind, "c1", &[("foo", "bar")]),
                controller(kind, "c2", &[("bar", "foo")]),
                svc("default", &[("baz", "blah")]),
            ],
            [0, 0],
        ));
    }
    // Disjoint service and controller select no pod.
    for kind in [RC, RS, SS] {
        cases.push((
            "disjoined service and controller matches no pods",
            owned(
                pod()
                    .ns("default")
                    .labels(&[("foo", "bar"), ("bar", "foo")]),
                kind,
                "c3",
            )
            .build(),
            vec![
                owned(dflt("node1", LABELS2), kind, "c2").build(),
                owned(dflt("node1", LABELS1), kind, "c1").build(),
                owned(dflt("node2", LABELS1), kind, "c1").build(),
            ],
            vec![
                controller(kind, "c3", &[("foo", "bar")]),
                svc("default", &[("bar", "foo")]),
            ],
            [100, 100],
        ));
    }
    // Controller alone, partial matches.
    for kind in [RC, RS, SS] {
        cases.push((
            "controller with partial pod label matches",
            owned(pod().ns("default").labels(LABELS1), kind, "c1").build(),
            vec![
                owned(dflt("node1", LABELS2), kind, "c2").build(),
                owned(dflt("node1", LABELS1), kind, "c1").build(),
                owned(dflt("node2", LABELS1), kind, "c1").build(),
            ],
            vec![controller(kind, "c1", &[("foo", "bar")])],
            [0, 0],
        ));
    }
    for kind in [RC, RS, SS] {
        cases.push((
            "another controller with partial pod label matches",
            owned(pod().ns("default").labels(LABELS1), kind, "c3").build(),
            vec![
                owned(dflt("node1", LABELS2), kind, "c2").build(),
                owned(dflt("node1", LABELS1), kind, "c1").build(),
                owned(dflt("node2", LABELS1), kind, "c1").build(),
            ],
            vec![controller(kind, "c3", &[("baz", "blah")])],
            [0, 50],
        ));
    }
    assert_eq!(cases.len(), 22);
    for (name, p, pods, workloads, want) in cases {
        assert_eq!(
            run(&SelectorSpreadPriority::new(), &p, pods, two(), workloads),
            want,
            "{name}"
        );
    }
}

const M1Z1: &str = "node1.zone1";
const M1Z2: &str = "node1.zone2";
const M2Z2: &str = "node2.zone2";
const M1Z3: &str = "node1.zone3";
const M2Z3: &str = "node2.zone3";
const M3Z3: &str = "node3.zone3";

fn zoned_nodes() -> Vec<Node> {
    [
        (M1Z1, "zone1"),
        (M1Z2, "zone2"),
        (M2Z2, "zone2"),
        (M1Z3, "zone3"),
        (M2Z3, "zone3"),
        (M3Z3, "zone3"),
    ]
    .iter()
    .map(|(n, z)| node(n, &[("topology.kubernetes.io/zone", z)]))
    .collect()
}

#[test]
fn zone_selector_spread_priority() {
    let l1: &[(&str, &str)] = &[("label1", "l1"), ("baz", "blah")];
    let l2: &[(&str, &str)] = &[("label2", "l2"), ("baz", "blah")];
    let bp = |n: &str, l: &[(&str, &str)]| pod().ns("default").node(n).labels(l).build();
    let incoming = || pod().ns("default").labels(l1);
    let service = || vec![svc("default", l1)];
    type Case = (&'static str, Pod, Vec<Pod>, Vec<Workload>, [i64; 6]);
    let cases: Vec<Case> = vec![
        ("nothing scheduled", pod().build(), vec![], vec![], [100; 6]),
        (
            "no services",
            incoming().build(),
            vec![pod().ns("default").node(M1Z1).build()],
            vec![],
            [100; 6],
        ),
        (
            "different services",
            incoming().build(),
            vec![bp(M1Z1, l2)],
            vec![svc("default", &[("key", "value")])],
            [100; 6],
        ),
        (
            "two pods, 0 matching",
            incoming().build(),
            vec![bp(M1Z1, l2), bp(M1Z2, l2)],
            service(),
            [100; 6],
        ),
        (
            "two pods, 1 matching (in z2)",
            incoming().build(),
            vec![bp(M1Z1, l2), bp(M1Z2, l1)],
            service(),
            [100, 0, 33, 100, 100, 100],
        ),
        (
            "five pods, 3 matching (z2=2, z3=1)",
            incoming().build(),
            vec![
                bp(M1Z1, l2),
                bp(M1Z2, l1),
                bp(M2Z2, l1),
                bp(M1Z3, l2),
                bp(M2Z3, l1),
            ],
            service(),
            [100, 0, 0, 66, 33, 66],
        ),
        (
            "four pods, 3 matching (z1=1, z2=1, z3=1)",
            incoming().build(),
            vec![bp(M1Z1, l1), bp(M1Z2, l1), bp(M2Z2, l2), bp(M1Z3, l1)],
            service(),
            [0, 0, 33, 0, 33, 33],
        ),
        (
            "five pods, 4 matching (z1=1, z2=2, z3=1)",
            incoming().build(),
            vec![
                bp(M1Z1, l1),
                bp(M1Z2, l1),
                bp(M2Z2, l1),
                bp(M2Z2, l2),
                bp(M1Z3, l1),
            ],
            service(),
            [33, 0, 0, 33, 66, 66],
        ),
        (
            "replication controller spreading (z1=0, z2=1, z3=2)",
            owned(incoming(), RC, "rc1").build(),
            vec![bp(M1Z3, l1), bp(M1Z2, l1), bp(M1Z3, l1)],
            vec![controller(RC, "rc1", l1)],
            [100, 50, 66, 0, 33, 33],
        ),
    ];
    for (name, p, pods, workloads, want) in cases {
        assert_eq!(
            run(
                &SelectorSpreadPriority::new(),
                &p,
                pods,
                zoned_nodes(),
                workloads
            ),
            want,
            "{name}"
        );
    }
}

#[test]
fn all_zero_counts_score_100_with_or_without_zones() {
    assert_eq!(ALL_ZERO_ZONED_SCORE, 100);
    // Runs the full normalization (a Service selects the pod, but no pod matches) and checks
    // it agrees with the constant returned when nothing selects the pod.
    let p = pod().ns("default").labels(&[("app", "web")]).build();
    let got = run(
        &SelectorSpreadPriority::new(),
        &p,
        vec![
            pod()
                .ns("default")
                .node(M1Z1)
                .labels(&[("app", "db")])
                .build(),
        ],
        zoned_nodes(),
        vec![svc("default", &[("app", "web")])],
    );
    assert_eq!(got, [100; 6]);
}

#[test]
fn zone_key_prefers_the_beta_labels() {
    // Same GA zone, different beta zones: kube's GetZoneKey sees two zones.
    let nodes = vec![
        node(
            "a",
            &[
                ("topology.kubernetes.io/zone", "z"),
                ("failure-domain.beta.kubernetes.io/zone", "b1"),
            ],
        ),
        node(
            "b",
            &[
                ("topology.kubernetes.io/zone", "z"),
                ("failure-domain.beta.kubernetes.io/zone", "b2"),
            ],
        ),
        node(
            "c",
            &[
                ("topology.kubernetes.io/zone", "z"),
                ("failure-domain.beta.kubernetes.io/zone", "b2"),
            ],
        ),
    ];
    let p = pod().ns("default").labels(&[("app", "web")]).build();
    let pods = vec![
        pod()
            .ns("default")
            .node("a")
            .labels(&[("app", "web")])
            .build(),
    ];
    let got = run(
        &SelectorSpreadPriority::new(),
        &p,
        pods,
        nodes,
        vec![svc("default", &[("app", "web")])],
    );
    // a: node 0, zone b1 has 1 => 0; b, c: node 100, zone b2 has 0 => 100.
    assert_eq!(got, [0, 100, 100]);
}

/// kube v1.20's DefaultSelector finds ReplicaSets, ReplicationControllers and StatefulSets by
/// their selectors (the pod needs no owner reference); later versions follow the owner
/// reference only.
#[test]
fn v1_20_finds_controllers_by_selector() {
    use super::selector_spread::default_selector;
    use crate::framework::KubeVersion;
    let p = pod().ns("default").labels(LABELS1).build();
    let workloads = vec![
        controller(RS, "rs1", LABELS1),
        controller(RC, "rc9", &[("nothing", "matches")]),
    ];
    let v1_20 = default_selector(&p, &workloads, KubeVersion::V1_20);
    let current = default_selector(&p, &workloads, KubeVersion::V1_34);
    assert_eq!(
        v1_20.match_expressions.len(),
        2,
        "the ReplicaSet's two pairs"
    );
    assert!(crate::plugins::interpod::selector::matches(
        &v1_20,
        &p.metadata.labels
    ));
    assert_eq!(
        current,
        Default::default(),
        "no owner reference, no Service"
    );
    // A pod without labels has no controllers in v1.20.
    let bare = pod().ns("default").build();
    assert_eq!(
        default_selector(&bare, &workloads, KubeVersion::V1_20),
        Default::default()
    );
}

#[test]
fn service_anti_affinity_score() {
    let nozone: &[(&str, &str)] = &[("name", "value")];
    let zone1: &[(&str, &str)] = &[("zone", "zone1")];
    let zone2: &[(&str, &str)] = &[("zone", "zone2")];
    let nodes = || {
        vec![
            node("machine11", zone1),
            node("machine12", zone1),
            node("machine21", zone2),
            node("machine22", zone2),
            node("machine01", nozone),
            node("machine02", nozone),
        ]
    };
    let z0 = |l: &[(&str, &str)]| pod().node("machine01").labels(l);
    let z1 = |l: &[(&str, &str)]| pod().node("machine11").labels(l);
    let z2 = |l: &[(&str, &str)]| pod().node("machine21").labels(l);
    let s = |sel: &[(&str, &str)]| vec![svc("", sel)];
    type Case = (&'static str, Pod, Vec<Pod>, Vec<Workload>, [i64; 6]);
    let cases: Vec<Case> = vec![
        (
            "nothing scheduled",
            pod().build(),
            vec![],
            vec![],
            [100, 100, 100, 100, 0, 0],
        ),
        (
            "no services",
            pod().labels(LABELS1).build(),
            vec![pod().node("machine11").build()],
            vec![],
            [100, 100, 100, 100, 0, 0],
        ),
        (
            "different services",
            pod().labels(LABELS1).build(),
            vec![z1(LABELS2).build()],
            s(&[("key", "value")]),
            [100, 100, 100, 100, 0, 0],
        ),
        (
            "three pods, one service pod",
            pod().labels(LABELS1).build(),
            vec![
                z0(LABELS2).build(),
                z1(LABELS2).build(),
                z2(LABELS1).build(),
            ],
            s(LABELS1),
            [100, 100, 0, 0, 0, 0],
        ),
        (
            "three pods, two service pods on different machines",
            pod().labels(LABELS1).build(),
            vec![
                z1(LABELS2).build(),
                z1(LABELS1).build(),
                z2(LABELS1).build(),
            ],
            s(LABELS1),
            [50, 50, 50, 50, 0, 0],
        ),
        (
            "three service label match pods in different namespaces",
            pod().labels(LABELS1).ns("default").build(),
            vec![
                z1(LABELS1).build(),
                z1(LABELS1).ns("default").build(),
                z2(LABELS1).build(),
                z2(LABELS1).ns("ns1").build(),
            ],
            vec![svc("default", LABELS1)],
            [0, 0, 100, 100, 0, 0],
        ),
        (
            "four pods, three service pods",
            pod().labels(LABELS1).build(),
            vec![
                z1(LABELS2).build(),
                z1(LABELS1).build(),
                z2(LABELS1).build(),
                z2(LABELS1).build(),
            ],
            s(LABELS1),
            [66, 66, 33, 33, 0, 0],
        ),
        (
            "service with partial pod label matches",
            pod().labels(LABELS1).build(),
            vec![
                z1(LABELS2).build(),
                z1(LABELS1).build(),
                z2(LABELS1).build(),
            ],
            s(&[("baz", "blah")]),
            [33, 33, 66, 66, 0, 0],
        ),
        (
            "service pod on non-zoned node",
            pod().labels(LABELS1).build(),
            vec![
                z0(LABELS1).build(),
                z1(LABELS1).build(),
                z2(LABELS1).build(),
                z2(LABELS1).build(),
            ],
            s(LABELS1),
            [75, 75, 50, 50, 0, 0],
        ),
    ];
    let prio = ServiceAntiAffinity::new("zone");
    for (name, p, pods, workloads, want) in cases {
        assert_eq!(run(&prio, &p, pods, nodes(), workloads), want, "{name}");
    }
    // A label no node has: every node scores 0.
    let (constant, got) = run_priority(
        &ServiceAntiAffinity::new("rack"),
        &pod().build(),
        &snapshot(nodes(), vec![]),
    )
    .unwrap();
    assert!(constant);
    assert_eq!(got, [0; 6]);
    assert_eq!(
        ServiceAntiAffinity::new("zone")
            .with_name("zoneSpread")
            .name(),
        "zoneSpread"
    );
}

#[test]
fn scores_only_the_feasible_nodes() {
    // Normalization sees only the feasible nodes, as kube's NormalizeScore sees the filtered list.
    let nodes = vec![
        node("n1", &[("zone", "a")]),
        node("n2", &[("zone", "b")]),
        node("n3", &[("zone", "b")]),
    ];
    let pods = vec![
        pod().node("n1").labels(LABELS1).build(),
        pod().node("n2").labels(LABELS1).build(),
        pod().node("n2").labels(LABELS1).build(),
    ];
    let mut snap = snapshot(nodes, pods);
    snap.set_workloads(vec![svc("", LABELS1)]);
    let p = pod().labels(LABELS1).build();
    let (_, got) = run_priority_on(&ServiceAntiAffinity::new("zone"), &p, &snap, &[0, 2]).unwrap();
    // Total over n1 and n3 is 1 (n1), so zone a scores 0 and zone b 100.
    assert_eq!(got, [0, 100]);
    let (_, got) = run_priority_on(&SelectorSpreadPriority::new(), &p, &snap, &[0, 2]).unwrap();
    assert_eq!(got, [0, 100]);
}
