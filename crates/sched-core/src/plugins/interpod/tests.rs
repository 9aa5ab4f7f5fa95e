//! kube 1.22 table tests for MatchInterPodAffinity (filtering_test.go) and
//! InterPodAffinityPriority (scoring_test.go), ported with their expected results.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::testutil::*;
use super::{InterPodAffinityPriority, MatchInterPodAffinity, NamespaceLabels};
use crate::framework::Reason;
use crate::model::{Node, Pod};

const AFF: Reason = Reason::PodAffinityRulesNotMatch;
const ANTI: Reason = Reason::PodAntiAffinityRulesNotMatch;
const EXISTING: Reason = Reason::ExistingPodsAntiAffinityRulesNotMatch;

/// kube's test namespaces: two teams with two sub-teams each.
fn namespaces() -> Arc<NamespaceLabels> {
    let team = |t: &str| BTreeMap::from([("team".to_string(), t.to_string())]);
    Arc::new(
        [
            ("subteam1.team1".to_string(), team("team1")),
            ("subteam2.team1".to_string(), team("team1")),
            ("subteam1.team2".to_string(), team("team2")),
            ("subteam2.team2".to_string(), team("team2")),
        ]
        .into_iter()
        .collect(),
    )
}

fn team1_ns_selector(mut t: serde_json::Value) -> serde_json::Value {
    t["namespaceSelector"] = sel(&[expr("team", "In", &["team1"])]);
    t
}

fn check_filter(name: &str, p: &Pod, pods: Vec<Pod>, nodes: Vec<Node>, want: &[Option<Reason>]) {
    let snap = snapshot(nodes, pods);
    let pred = MatchInterPodAffinity::new().with_namespace_labels(namespaces());
    let (_, got) = run_filter(&pred, p, &snap).unwrap_or_else(|e| panic!("{name}: {e}"));
    let want: Vec<Result<(), Reason>> = want.iter().map(|w| w.map_or(Ok(()), Err)).collect();
    assert_eq!(got, want, "{name}");
}

#[test]
fn required_affinity_single_node() {
    let pod_label = [("service", "securityscan")];
    let pod_label2 = [("security", "S1")];
    let node1 = || vec![node("node1", &[("region", "r1"), ("zone", "z11")])];
    let existing = || pod().labels(&pod_label).node("node1").build();
    let ok = None;
    let cases: Vec<(&str, Pod, Vec<Pod>, Option<Reason>)> = vec![
        (
            "no required pod affinity, no existing pods",
            pod().build(),
            vec![],
            ok,
        ),
        (
            "In operator matches the existing pod",
            pod()
                .labels(&pod_label2)
                .req_aff(term_in("service", &["securityscan", "value2"], "region"))
                .build(),
            vec![existing()],
            ok,
        ),
        (
            "NotIn operator matches the existing pod",
            pod()
                .labels(&pod_label2)
                .req_aff(term_not_in(
                    "service",
                    &["securityscan3", "value3"],
                    "region",
                ))
                .build(),
            vec![existing()],
            ok,
        ),
        (
            "diff namespace",
            pod()
                .labels(&pod_label2)
                .req_aff(serde_json::json!({
                    "labelSelector": sel(&[expr("service", "In", &["securityscan", "value2"])]),
                    "namespaces": ["DiffNameSpace"]}))
                .build(),
            vec![pod().ns("ns").labels(&pod_label).node("node1").build()],
            Some(AFF),
        ),
        (
            "unmatching labelSelector",
            pod()
                .labels(&pod_label)
                .req_aff(term_in("service", &["antivirusscan", "value2"], ""))
                .build(),
            vec![existing()],
            Some(AFF),
        ),
        (
            "different operators in multiple terms",
            pod()
                .labels(&pod_label2)
                .req_aff(term(
                    sel(&[
                        expr("service", "Exists", &[]),
                        expr("wrongkey", "DoesNotExist", &[]),
                    ]),
                    "region",
                ))
                .req_aff(term(
                    sel(&[
                        expr("service", "In", &["securityscan"]),
                        expr("service", "NotIn", &["WrongValue"]),
                    ]),
                    "region",
                ))
                .build(),
            vec![existing()],
            ok,
        ),
        (
            "matchExpressions are ANDed",
            pod()
                .labels(&pod_label2)
                .req_aff(term(
                    sel(&[
                        expr("service", "Exists", &[]),
                        expr("wrongkey", "DoesNotExist", &[]),
                    ]),
                    "region",
                ))
                .req_aff(term(
                    sel(&[
                        expr("service", "In", &["securityscan2"]),
                        expr("service", "NotIn", &["WrongValue"]),
                    ]),
                    "region",
                ))
                .build(),
            vec![existing()],
            Some(AFF),
        ),
        (
            "satisfies affinity and anti-affinity",
            pod()
                .labels(&pod_label2)
                .req_aff(term_in("service", &["securityscan", "value2"], "region"))
                .req_anti(term_in("service", &["antivirusscan", "value2"], "node"))
                .build(),
            vec![existing()],
            ok,
        ),
        (
            "satisfies affinity, anti-affinity and anti-affinity symmetry",
            pod()
                .labels(&pod_label2)
                .req_aff(term_in("service", &["securityscan", "value2"], "region"))
                .req_anti(term_in("service", &["antivirusscan", "value2"], "node"))
                .build(),
            vec![
                pod()
                    .labels(&pod_label)
                    .node("node1")
                    .req_anti(term_in("service", &["antivirusscan", "value2"], "node"))
                    .build(),
            ],
            ok,
        ),
        (
            "satisfies affinity but not anti-affinity",
            pod()
                .labels(&pod_label2)
                .req_aff(term_in("service", &["securityscan", "value2"], "region"))
                .req_anti(term_in("service", &["securityscan", "value2"], "zone"))
                .build(),
            vec![existing()],
            Some(ANTI),
        ),
        (
            "satisfies affinity and anti-affinity but not anti-affinity symmetry",
            pod()
                .labels(&pod_label)
                .req_aff(term_in("service", &["securityscan", "value2"], "region"))
                .req_anti(term_in("service", &["antivirusscan", "value2"], "node"))
                .build(),
            vec![
                pod()
                    .labels(&pod_label)
                    .node("node1")
                    .req_anti(term_in("service", &["securityscan", "value2"], "zone"))
                    .build(),
            ],
            Some(EXISTING),
        ),
        (
            "pod matches its own label in affinity and that matches the existing pod labels",
            pod()
                .labels(&pod_label)
                .req_aff(term_not_in(
                    "service",
                    &["securityscan", "value2"],
                    "region",
                ))
                .build(),
            vec![pod().labels(&pod_label).node("node2").build()],
            Some(AFF),
        ),
        (
            "existing pod's anti-affinity respected when the pod has none (violated)",
            pod().labels(&pod_label).build(),
            vec![
                pod()
                    .labels(&pod_label)
                    .node("node1")
                    .req_anti(term_in("service", &["securityscan", "value2"], "zone"))
                    .build(),
            ],
            Some(EXISTING),
        ),
        (
            "existing pod's anti-affinity respected when the pod has none (satisfied)",
            pod().labels(&pod_label).build(),
            vec![
                pod()
                    .labels(&pod_label)
                    .node("node1")
                    .req_anti(term_not_in("service", &["securityscan", "value2"], "zone"))
                    .build(),
            ],
            ok,
        ),
        (
            "satisfies anti-affinity with existing pod but not anti-affinity symmetry with incoming pod",
            pod()
                .labels(&pod_label)
                .req_anti(term_exists("service", "region"))
                .req_anti(term_exists("security", "region"))
                .build(),
            vec![
                pod()
                    .labels(&pod_label2)
                    .node("node1")
                    .req_anti(term_exists("security", "zone"))
                    .build(),
            ],
            Some(ANTI),
        ),
        (
            "symmetry a1",
            pod()
                .labels(&pod_label)
                .req_anti(term_exists("service", "zone"))
                .req_anti(term_exists("security", "zone"))
                .build(),
            vec![
                pod()
                    .labels(&pod_label2)
                    .node("node1")
                    .req_anti(term_exists("security", "zone"))
                    .build(),
            ],
            Some(ANTI),
        ),
        (
            "symmetry a2",
            pod()
                .labels(&pod_label2)
                .req_anti(term_exists("security", "zone"))
                .build(),
            vec![
                pod()
                    .labels(&pod_label)
                    .node("node1")
                    .req_anti(term_exists("service", "zone"))
                    .req_anti(term_exists("security", "zone"))
                    .build(),
            ],
            Some(EXISTING),
        ),
        (
            "symmetry b1",
            pod()
                .labels(&[("abc", ""), ("xyz", "")])
                .req_anti(term_exists("abc", "zone"))
                .req_anti(term_exists("def", "zone"))
                .build(),
            vec![
                pod()
                    .labels(&[("def", ""), ("xyz", "")])
                    .node("node1")
                    .req_anti(term_exists("abc", "zone"))
                    .req_anti(term_exists("def", "zone"))
                    .build(),
            ],
            Some(ANTI),
        ),
        (
            "symmetry b2",
            pod()
                .labels(&[("def", ""), ("xyz", "")])
                .req_anti(term_exists("abc", "zone"))
                .req_anti(term_exists("def", "zone"))
                .build(),
            vec![
                pod()
                    .labels(&[("abc", ""), ("xyz", "")])
                    .node("node1")
                    .req_anti(term_exists("abc", "zone"))
                    .req_anti(term_exists("def", "zone"))
                    .build(),
            ],
            Some(ANTI),
        ),
        (
            "affinity with namespaceSelector",
            pod()
                .labels(&pod_label2)
                .req_aff(team1_ns_selector(term_in(
                    "service",
                    &["securityscan", "value2"],
                    "region",
                )))
                .build(),
            vec![
                pod()
                    .ns("subteam1.team1")
                    .labels(&pod_label)
                    .node("node1")
                    .build(),
            ],
            ok,
        ),
        (
            "affinity with non-matching namespaceSelector",
            pod()
                .labels(&pod_label2)
                .req_aff(team1_ns_selector(term_in(
                    "service",
                    &["securityscan", "value2"],
                    "region",
                )))
                .build(),
            vec![
                pod()
                    .ns("subteam1.team2")
                    .labels(&pod_label)
                    .node("node1")
                    .build(),
            ],
            Some(AFF),
        ),
        (
            "anti-affinity with matching namespaceSelector",
            pod()
                .ns("subteam1.team1")
                .labels(&pod_label2)
                .req_anti(team1_ns_selector(term_in(
                    "service",
                    &["securityscan", "value2"],
                    "zone",
                )))
                .build(),
            vec![
                pod()
                    .ns("subteam2.team1")
                    .labels(&pod_label)
                    .node("node1")
                    .build(),
            ],
            Some(ANTI),
        ),
        (
            "anti-affinity with matching all namespaceSelector",
            pod()
                .ns("subteam1.team1")
                .labels(&pod_label2)
                .req_anti({
                    let mut t = term_in("service", &["securityscan", "value2"], "zone");
                    t["namespaceSelector"] = serde_json::json!({});
                    t
                })
                .build(),
            vec![
                pod()
                    .ns("subteam2.team1")
                    .labels(&pod_label)
                    .node("node1")
                    .build(),
            ],
            Some(ANTI),
        ),
        (
            "anti-affinity with non-matching namespaceSelector",
            pod()
                .ns("subteam1.team1")
                .labels(&pod_label2)
                .req_anti(team1_ns_selector(term_in(
                    "service",
                    &["securityscan", "value2"],
                    "zone",
                )))
                .build(),
            vec![
                pod()
                    .ns("subteam1.team2")
                    .labels(&pod_label)
                    .node("node1")
                    .build(),
            ],
            ok,
        ),
    ];
    let n = cases.len();
    for (name, p, pods, want) in cases {
        check_filter(name, &p, pods, node1(), &[want]);
    }
    assert_eq!(n, 24);
}

#[test]
fn invalid_selector_fails_prepare() {
    let snap = snapshot(vec![node("node1", &[("region", "r1")])], vec![]);
    let pred = MatchInterPodAffinity::new();
    for p in [
        pod()
            .labels(&[("service", "securityscan")])
            .req_aff(term_in("service", &["{{.bad-value.}}"], "region"))
            .req_aff(term_in("service", &["antivirusscan", "value2"], "node"))
            .build(),
        pod()
            .labels(&[("service", "securityscan")])
            .req_aff(term_in("service", &["foo"], "region"))
            .req_anti(term_in("service", &["{{.bad-value.}}"], "node"))
            .build(),
    ] {
        let err = run_filter(&pred, &p, &snap).unwrap_err();
        assert!(err.to_string().contains("{{.bad-value.}}"), "{err}");
    }
    let prio = InterPodAffinityPriority::default();
    let p = pod()
        .pref_aff(8, term_in("security", &["{{.bad-value.}}"], "region"))
        .build();
    assert!(run_priority(&prio, &p, &snap).is_err());
    let p = pod()
        .pref_anti(5, term_in("security", &["{{.bad-value.}}"], "az"))
        .build();
    assert!(run_priority(&prio, &p, &snap).is_err());
}

#[test]
fn required_affinity_multiple_nodes() {
    let china = [("region", "China")];
    let china_az1 = [("region", "China"), ("az", "az1")];
    let india = [("region", "India")];
    let rz = |n: &str, z: &str| node(n, &[("region", "r1"), ("zone", z), ("hostname", n)]);
    let three = || {
        vec![
            node("nodeA", &china),
            node("nodeB", &china_az1),
            node("nodeC", &india),
        ]
    };
    type Case = (&'static str, Pod, Vec<Pod>, Vec<Node>, Vec<Option<Reason>>);
    let cases: Vec<Case> = vec![
        (
            "all nodes with the same topology value as a matching pod",
            pod().req_aff(term_in("foo", &["bar"], "region")).build(),
            vec![
                pod()
                    .name("p1")
                    .node("nodeA")
                    .labels(&[("foo", "bar")])
                    .build(),
            ],
            three(),
            vec![None, None, Some(AFF)],
        ),
        (
            "first pod of a collection with affinity to itself",
            pod()
                .labels(&[("foo", "bar"), ("service", "securityscan")])
                .req_aff(term_in("foo", &["bar"], "zone"))
                .req_aff(term_in("service", &["securityscan"], "zone"))
                .build(),
            vec![
                pod()
                    .name("p1")
                    .node("nodeA")
                    .labels(&[("foo", "bar")])
                    .build(),
            ],
            vec![
                node("nodeA", &[("zone", "az1"), ("hostname", "h1")]),
                node("nodeB", &[("zone", "az2"), ("hostname", "h2")]),
            ],
            vec![None, None],
        ),
        (
            "first pod of a collection only on nodes with the topology keys",
            pod()
                .labels(&[("foo", "bar"), ("service", "securityscan")])
                .req_aff(term_in("foo", &["bar"], "zone"))
                .req_aff(term_in("service", &["securityscan"], "zone"))
                .build(),
            vec![
                pod()
                    .name("p1")
                    .node("nodeA")
                    .labels(&[("foo", "bar")])
                    .build(),
            ],
            vec![
                node("nodeA", &[("zoneLabel", "az1"), ("hostname", "h1")]),
                node("nodeB", &[("zoneLabel", "az2"), ("hostname", "h2")]),
            ],
            vec![Some(AFF), Some(AFF)],
        ),
        (
            "anti-affinity over a shared topology value",
            pod().req_anti(term_in("foo", &["abc"], "region")).build(),
            vec![pod().node("nodeA").labels(&[("foo", "abc")]).build()],
            vec![rz("nodeA", "z1"), rz("nodeB", "z1")],
            vec![Some(ANTI), Some(ANTI)],
        ),
        (
            "anti-affinity matches when any term matches",
            pod()
                .req_anti(term_in("foo", &["abc"], "region"))
                .req_anti(term_in("service", &["securityscan"], "zone"))
                .build(),
            vec![
                pod()
                    .node("nodeA")
                    .labels(&[("foo", "abc"), ("service", "securityscan")])
                    .build(),
            ],
            vec![rz("nodeA", "z1"), rz("nodeB", "z2")],
            vec![Some(ANTI), Some(ANTI)],
        ),
        (
            "anti-affinity leaves other regions",
            pod().req_anti(term_in("foo", &["abc"], "region")).build(),
            vec![pod().node("nodeA").labels(&[("foo", "abc")]).build()],
            three(),
            vec![Some(ANTI), Some(ANTI), None],
        ),
        (
            "existing pod's term in another namespace does not apply",
            pod()
                .ns("NS1")
                .labels(&[("foo", "123")])
                .req_anti(term_in("foo", &["bar"], "region"))
                .build(),
            vec![
                pod()
                    .node("nodeA")
                    .ns("NS1")
                    .labels(&[("foo", "bar")])
                    .build(),
                pod()
                    .node("nodeC")
                    .ns("NS2")
                    .req_anti(term_in("foo", &["123"], "region"))
                    .build(),
            ],
            three(),
            vec![Some(ANTI), Some(ANTI), None],
        ),
        (
            "existing pod's term with a topology key no node has",
            pod().labels(&[("foo", "")]).build(),
            vec![
                pod()
                    .node("nodeA")
                    .req_anti(term_exists("foo", "invalid-node-label"))
                    .build(),
            ],
            vec![rz("nodeA", "z1"), rz("nodeB", "z1")],
            vec![None, None],
        ),
        (
            "incoming pod's term with a topology key no node has",
            pod()
                .node("nodeA")
                .req_anti(term_exists("foo", "invalid-node-label"))
                .build(),
            vec![pod().node("nodeA").labels(&[("foo", "")]).build()],
            vec![rz("nodeA", "z1"), rz("nodeB", "z1")],
            vec![None, None],
        ),
        (
            "incoming pod violates each existing pod's terms on all nodes",
            pod().labels(&[("foo", ""), ("bar", "")]).build(),
            vec![
                pod()
                    .node("nodeA")
                    .req_anti(term_exists("foo", "zone"))
                    .build(),
                pod()
                    .node("nodeA")
                    .req_anti(term_exists("bar", "region"))
                    .build(),
            ],
            vec![rz("nodeA", "z1"), rz("nodeB", "z2")],
            vec![Some(EXISTING), Some(EXISTING)],
        ),
        (
            "incoming pod violates one of its own anti-affinity terms on each node",
            pod()
                .req_anti(term_exists("foo", "zone"))
                .req_anti(term_exists("bar", "region"))
                .build(),
            vec![
                pod().node("nodeA").labels(&[("foo", "")]).build(),
                pod().node("nodeB").labels(&[("bar", "")]).build(),
            ],
            vec![rz("nodeA", "z1"), rz("nodeB", "z2")],
            vec![Some(ANTI), Some(ANTI)],
        ),
        (
            "existing pod's terms: selector and topology key must both match (one invalid key)",
            pod().labels(&[("foo", ""), ("bar", "")]).build(),
            vec![
                pod()
                    .node("nodeA")
                    .req_anti(term_exists("foo", "invalid-node-label"))
                    .req_anti(term_exists("bar", "zone"))
                    .build(),
            ],
            vec![rz("nodeA", "z1"), rz("nodeB", "z2")],
            vec![Some(EXISTING), None],
        ),
        (
            "incoming pod's terms: selector and topology key must both match (one invalid key)",
            pod()
                .req_anti(term_exists("foo", "invalid-node-label"))
                .req_anti(term_exists("bar", "zone"))
                .build(),
            vec![
                pod()
                    .name("podA")
                    .node("nodeA")
                    .labels(&[("foo", ""), ("bar", "")])
                    .build(),
            ],
            vec![rz("nodeA", "z1"), rz("nodeB", "z2")],
            vec![Some(ANTI), None],
        ),
        (
            "existing pod's terms: all topology keys valid",
            pod().labels(&[("foo", ""), ("bar", "")]).build(),
            vec![
                pod()
                    .node("nodeA")
                    .req_anti(term_exists("foo", "region"))
                    .req_anti(term_exists("bar", "zone"))
                    .build(),
            ],
            vec![rz("nodeA", "z1"), rz("nodeB", "z2")],
            vec![Some(EXISTING), Some(EXISTING)],
        ),
        (
            "incoming pod's terms: all topology keys valid",
            pod()
                .req_anti(term_exists("foo", "region"))
                .req_anti(term_exists("bar", "zone"))
                .build(),
            vec![
                pod()
                    .node("nodeA")
                    .labels(&[("foo", ""), ("bar", "")])
                    .build(),
            ],
            vec![rz("nodeA", "z1"), rz("nodeB", "z2")],
            vec![Some(ANTI), Some(ANTI)],
        ),
        (
            "existing pods on two nodes each have a matching term",
            pod().labels(&[("foo", ""), ("bar", "")]).build(),
            vec![
                pod()
                    .node("nodeA")
                    .req_anti(term_exists("foo", "zone"))
                    .req_anti(term_exists("labelA", "zone"))
                    .build(),
                pod()
                    .node("nodeB")
                    .req_anti(term_exists("bar", "zone"))
                    .req_anti(term_exists("labelB", "zone"))
                    .build(),
            ],
            vec![rz("nodeA", "z1"), rz("nodeB", "z2"), rz("nodeC", "z3")],
            vec![Some(EXISTING), Some(EXISTING), None],
        ),
        (
            "affinity: all terms match one pod, then all topology keys",
            pod()
                .req_aff(term_exists("foo", "region"))
                .req_aff(term_exists("bar", "zone"))
                .build(),
            vec![
                pod()
                    .name("pod1")
                    .node("nodeA")
                    .labels(&[("foo", ""), ("bar", "")])
                    .build(),
            ],
            vec![rz("nodeA", "z1"), rz("nodeB", "z1")],
            vec![None, None],
        ),
        (
            "affinity: the terms must be satisfied by the same pod",
            pod()
                .req_aff(term_exists("foo", "region"))
                .req_aff(term_exists("bar", "zone"))
                .build(),
            vec![
                pod()
                    .name("pod1")
                    .node("nodeA")
                    .labels(&[("foo", "")])
                    .build(),
                pod()
                    .name("pod2")
                    .node("nodeB")
                    .labels(&[("bar", "")])
                    .build(),
            ],
            vec![rz("nodeA", "z1"), rz("nodeB", "z2")],
            vec![Some(AFF), Some(AFF)],
        ),
    ];
    assert_eq!(cases.len(), 18);
    for (name, p, pods, nodes, want) in cases {
        check_filter(name, &p, pods, nodes, &want);
    }
}

#[test]
fn filter_is_skipped_without_terms_anywhere() {
    let snap = snapshot(
        vec![node("n1", &[("zone", "a")])],
        vec![
            pod()
                .node("n1")
                .labels(&[("app", "x")])
                .pref_aff(5, term_exists("app", "zone"))
                .build(),
        ],
    );
    let (skipped, got) = run_filter(&MatchInterPodAffinity::new(), &pod().build(), &snap).unwrap();
    assert!(skipped);
    assert_eq!(got, vec![Ok(())]);
}

// ---- scoring ----

fn s1() -> [(&'static str, &'static str); 1] {
    [("security", "S1")]
}
fn s2() -> [(&'static str, &'static str); 1] {
    [("security", "S2")]
}
const CHINA: &[(&str, &str)] = &[("region", "China")];
const INDIA: &[(&str, &str)] = &[("region", "India")];
const AZ1: &[(&str, &str)] = &[("az", "az1")];
const AZ2: &[(&str, &str)] = &[("az", "az2")];
const CHINA_AZ1: &[(&str, &str)] = &[("region", "China"), ("az", "az1")];

fn stay_with_s1_in_region(p: PodB) -> PodB {
    p.pref_aff(5, term_in("security", &["S1"], "region"))
}
fn stay_with_s2_in_region(p: PodB) -> PodB {
    p.pref_aff(6, term_in("security", &["S2"], "region"))
}
fn affinity3(p: PodB) -> PodB {
    p.pref_aff(
        8,
        term(
            sel(&[
                expr("security", "NotIn", &["S1"]),
                expr("security", "In", &["S2"]),
            ]),
            "region",
        ),
    )
    .pref_aff(
        2,
        term(
            sel(&[
                expr("security", "Exists", &[]),
                expr("wrongkey", "DoesNotExist", &[]),
            ]),
            "region",
        ),
    )
}
fn hard_affinity(p: PodB) -> PodB {
    p.req_aff(term_in("security", &["S1", "value2"], "region"))
        .req_aff(term(
            sel(&[
                expr("security", "Exists", &[]),
                expr("wrongkey", "DoesNotExist", &[]),
            ]),
            "region",
        ))
}
fn away_from_s1_in_az(p: PodB) -> PodB {
    p.pref_anti(5, term_in("security", &["S1"], "az"))
}
fn away_from_s2_in_az(p: PodB) -> PodB {
    p.pref_anti(5, term_in("security", &["S2"], "az"))
}
fn stay_s1_region_away_s2_az(p: PodB) -> PodB {
    p.pref_aff(8, term_in("security", &["S1"], "region"))
        .pref_anti(5, term_in("security", &["S2"], "az"))
}
fn ns_selector_term() -> serde_json::Value {
    let mut t = team1_ns_selector(term_in("security", &["S1"], "region"));
    t["namespaces"] = serde_json::json!(["subteam2.team2"]);
    t
}
fn affinity_ns_selector(p: PodB) -> PodB {
    p.pref_aff(5, ns_selector_term())
}
fn anti_affinity_ns_selector(p: PodB) -> PodB {
    p.pref_anti(5, ns_selector_term())
}

fn nodes(spec: &[(&str, &[(&str, &str)])]) -> Vec<Node> {
    spec.iter().map(|(n, l)| node(n, l)).collect()
}

fn check_score(
    name: &str,
    prio: &InterPodAffinityPriority,
    p: &Pod,
    pods: Vec<Pod>,
    nodes: Vec<Node>,
    want: &[i64],
) {
    let snap = snapshot(nodes, pods);
    let (_, got) = run_priority(prio, p, &snap).unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(got, want, "{name}");
}

#[test]
fn preferred_affinity() {
    let prio = InterPodAffinityPriority::new(1).with_namespace_labels(namespaces());
    let on = |n: &str, l: &[(&str, &str)]| pod().node(n).labels(l);
    type Case = (&'static str, Pod, Vec<Pod>, Vec<Node>, Vec<i64>);
    let cases: Vec<Case> = vec![
        (
            "all nodes are same priority as Affinity is nil",
            pod().labels(&s1()).build(),
            vec![],
            nodes(&[("node1", CHINA), ("node2", INDIA), ("node3", AZ1)]),
            vec![0, 0, 0],
        ),
        (
            "affinity: topology key and pods match",
            stay_with_s1_in_region(pod().labels(&s1())).build(),
            vec![
                on("node1", &s1()).build(),
                on("node2", &s2()).build(),
                on("node3", &s1()).build(),
            ],
            nodes(&[("node1", CHINA), ("node2", INDIA), ("node3", AZ1)]),
            vec![100, 0, 0],
        ),
        (
            "all nodes with the same topology value as a matching pod get the same score",
            stay_with_s1_in_region(pod()).build(),
            vec![on("node1", &s1()).build()],
            nodes(&[("node1", CHINA), ("node2", CHINA_AZ1), ("node3", INDIA)]),
            vec![100, 100, 0],
        ),
        (
            "the region with more matches gets the high score",
            stay_with_s2_in_region(pod().labels(&s1())).build(),
            vec![
                on("node1", &s2()).build(),
                on("node1", &s2()).build(),
                on("node2", &s2()).build(),
                on("node3", &s2()).build(),
                on("node4", &s2()).build(),
                on("node5", &s2()).build(),
            ],
            nodes(&[
                ("node1", CHINA),
                ("node2", INDIA),
                ("node3", CHINA),
                ("node4", CHINA),
                ("node5", INDIA),
            ]),
            vec![100, 0, 100, 100, 0],
        ),
        (
            "different label operators, including match failures",
            affinity3(pod().labels(&s1())).build(),
            vec![
                on("node1", &s1()).build(),
                on("node2", &s2()).build(),
                on("node3", &s1()).build(),
            ],
            nodes(&[("node1", CHINA), ("node2", INDIA), ("node3", AZ1)]),
            vec![20, 100, 0],
        ),
        (
            "affinity symmetry: existing pods' preferred terms",
            pod().labels(&s2()).build(),
            vec![
                stay_with_s1_in_region(on("node1", &s1())).build(),
                stay_with_s2_in_region(on("node2", &s2())).build(),
            ],
            nodes(&[("node1", CHINA), ("node2", INDIA), ("node3", AZ1)]),
            vec![0, 100, 0],
        ),
        (
            "affinity symmetry with namespace selector",
            pod().ns("subteam1.team1").labels(&s1()).build(),
            vec![
                affinity_ns_selector(on("node1", &s1())).build(),
                stay_with_s2_in_region(on("node2", &s2())).build(),
            ],
            nodes(&[("node1", CHINA), ("node2", INDIA), ("node3", AZ1)]),
            vec![100, 0, 0],
        ),
        (
            "anti-affinity symmetry with namespace selector",
            pod().ns("subteam1.team1").labels(&s1()).build(),
            vec![
                anti_affinity_ns_selector(on("node1", &s1())).build(),
                stay_with_s2_in_region(on("node2", &s2())).build(),
            ],
            nodes(&[("node1", CHINA), ("node2", INDIA), ("node3", AZ1)]),
            vec![0, 100, 100],
        ),
        (
            "affinity symmetry: existing pods' required terms",
            pod().labels(&s1()).build(),
            vec![
                hard_affinity(on("node1", &s1())).build(),
                hard_affinity(on("node2", &s2())).build(),
            ],
            nodes(&[("node1", CHINA), ("node2", INDIA), ("node3", AZ1)]),
            vec![100, 100, 0],
        ),
        (
            "anti-affinity: pod that does not match existing pods in node gets high score",
            away_from_s1_in_az(pod().labels(&s1())).build(),
            vec![on("node1", &s1()).build(), on("node2", &s2()).build()],
            nodes(&[("node1", AZ1), ("node2", CHINA)]),
            vec![0, 100],
        ),
        (
            "anti-affinity: node without the topology key gets the higher score",
            away_from_s1_in_az(pod().labels(&s1())).build(),
            vec![on("node1", &s1()).build(), on("node2", &s1()).build()],
            nodes(&[("node1", AZ1), ("node2", CHINA)]),
            vec![0, 100],
        ),
        (
            "anti-affinity: the node with more matching pods gets the lower score",
            away_from_s1_in_az(pod().labels(&s1())).build(),
            vec![
                on("node1", &s1()).build(),
                on("node1", &s1()).build(),
                on("node2", &s2()).build(),
            ],
            nodes(&[("node1", AZ1), ("node2", INDIA)]),
            vec![0, 100],
        ),
        (
            "anti-affinity symmetry",
            pod().labels(&s2()).build(),
            vec![
                away_from_s2_in_az(on("node1", &s1())).build(),
                away_from_s1_in_az(on("node2", &s2())).build(),
            ],
            nodes(&[("node1", AZ1), ("node2", AZ2)]),
            vec![0, 100],
        ),
        (
            "affinity and anti-affinity",
            stay_s1_region_away_s2_az(pod().labels(&s1())).build(),
            vec![on("node1", &s1()).build(), on("node2", &s1()).build()],
            nodes(&[("node1", CHINA), ("node2", AZ1)]),
            vec![100, 0],
        ),
        (
            "affinity and anti-affinity with the same labels",
            stay_s1_region_away_s2_az(pod().labels(&s1())).build(),
            vec![
                on("node1", &s1()).build(),
                on("node1", &s1()).build(),
                on("node2", &s1()).build(),
                on("node3", &s1()).build(),
                on("node3", &s1()).build(),
                on("node4", &s1()).build(),
                on("node5", &s1()).build(),
            ],
            nodes(&[
                ("node1", CHINA_AZ1),
                ("node2", INDIA),
                ("node3", CHINA),
                ("node4", CHINA),
                ("node5", INDIA),
            ]),
            vec![100, 0, 100, 100, 0],
        ),
        (
            "affinity, anti-affinity and symmetry",
            stay_s1_region_away_s2_az(pod().labels(&s1())).build(),
            vec![
                on("node1", &s1()).build(),
                on("node2", &s2()).build(),
                stay_s1_region_away_s2_az(pod().node("node3")).build(),
                away_from_s1_in_az(pod().node("node4")).build(),
            ],
            nodes(&[
                ("node1", CHINA),
                ("node2", AZ1),
                ("node3", INDIA),
                ("node4", AZ2),
            ]),
            vec![100, 0, 100, 0],
        ),
        (
            "partial nodes in a topology without pods with affinity",
            pod().labels(&s1()).build(),
            vec![
                on("node1", &s1()).build(),
                stay_s1_region_away_s2_az(pod().node("node2")).build(),
            ],
            nodes(&[("node1", CHINA), ("node2", CHINA)]),
            vec![0, 0],
        ),
        (
            "affinity with pods matching the namespace selector",
            affinity_ns_selector(pod().ns("subteam1.team1").labels(&s1())).build(),
            vec![
                on("node1", &s1()).ns("subteam1.team1").build(),
                on("node1", &s1()).ns("subteam1.team1").build(),
                on("node1", &s1()).ns("subteam1.team2").build(),
                on("node2", &s1()).ns("subteam2.team1").build(),
            ],
            nodes(&[("node1", CHINA), ("node2", INDIA)]),
            vec![100, 0],
        ),
        (
            "affinity with pods matching both the namespace selector and namespaces",
            affinity_ns_selector(pod().ns("subteam1.team1").labels(&s1())).build(),
            vec![
                on("node1", &s1()).ns("subteam1.team1").build(),
                on("node1", &s1()).ns("subteam1.team1").build(),
                on("node1", &s1()).ns("subteam2.team2").build(),
                on("node2", &s1()).ns("subteam2.team1").build(),
            ],
            nodes(&[("node1", CHINA), ("node2", INDIA)]),
            vec![100, 0],
        ),
        (
            "anti-affinity with pods matching the namespace selector",
            anti_affinity_ns_selector(pod().ns("subteam1.team1").labels(&s1())).build(),
            vec![
                on("node1", &s1()).ns("subteam1.team1").build(),
                on("node1", &s1()).ns("subteam1.team1").build(),
                on("node1", &s1()).ns("subteam1.team2").build(),
                on("node2", &s1()).ns("subteam2.team1").build(),
            ],
            nodes(&[("node1", CHINA), ("node2", INDIA)]),
            vec![0, 100],
        ),
        (
            "anti-affinity with pods matching both the namespace selector and namespaces",
            anti_affinity_ns_selector(pod().ns("subteam1.team1").labels(&s1())).build(),
            vec![
                on("node1", &s1()).ns("subteam1.team1").build(),
                on("node1", &s1()).ns("subteam1.team1").build(),
                on("node1", &s1()).ns("subteam2.team2").build(),
                on("node2", &s1()).ns("subteam2.team1").build(),
            ],
            nodes(&[("node1", CHINA), ("node2", INDIA)]),
            vec![0, 100],
        ),
        (
            "existing pods' preferred terms are considered",
            pod().labels(&s2()).build(),
            vec![
                stay_s1_region_away_s2_az(on("node1", &s1())).build(),
                stay_with_s2_in_region(on("node2", &s2())).build(),
            ],
            nodes(&[("node1", CHINA), ("node2", INDIA)]),
            vec![0, 100],
        ),
    ];
    assert_eq!(cases.len(), 22);
    for (name, p, pods, nodes, want) in cases {
        check_score(name, &prio, &p, pods, nodes, &want);
    }
}

#[test]
fn preferred_affinity_with_hard_pod_affinity_symmetric_weight() {
    let service_s1 = [("service", "S1")];
    let hard = |n: &str| {
        let mut t = team1_ns_selector(term_in("service", &["S1"], "region"));
        t["namespaces"] = serde_json::json!(["", "subteam2.team2"]);
        pod().node(n).req_aff(t).build()
    };
    let three = || nodes(&[("node1", CHINA), ("node2", INDIA), ("node3", AZ1)]);
    let cases: Vec<(&str, i32, &str, Vec<i64>, bool)> = vec![
        ("with default weight", 1, "", vec![100, 100, 0], false),
        ("with zero weight", 0, "", vec![0, 0, 0], true),
        (
            "with no matching namespace",
            1,
            "subteam1.team2",
            vec![0, 0, 0],
            true,
        ),
        (
            "with matching namespace selector",
            1,
            "subteam1.team1",
            vec![100, 100, 0],
            false,
        ),
        (
            "with matching namespaces",
            1,
            "subteam2.team2",
            vec![100, 100, 0],
            false,
        ),
    ];
    for (name, weight, ns, want, constant) in cases {
        let prio = InterPodAffinityPriority::new(weight).with_namespace_labels(namespaces());
        let snap = snapshot(three(), vec![hard("node1"), hard("node2")]);
        let p = pod().ns(ns).labels(&service_s1).build();
        let (c, got) = run_priority(&prio, &p, &snap).unwrap();
        assert_eq!(got, want, "{name}");
        assert_eq!(c, constant, "{name}: constant");
    }
}

#[test]
fn priority_is_constant_without_terms_anywhere() {
    let snap = snapshot(
        nodes(&[("n1", CHINA), ("n2", INDIA)]),
        vec![pod().node("n1").labels(&s1()).build()],
    );
    let (c, got) = run_priority(
        &InterPodAffinityPriority::default(),
        &pod().labels(&s1()).build(),
        &snap,
    )
    .unwrap();
    assert!(c);
    assert_eq!(got, vec![0, 0]);
}

/// kube's PreFilter skips the plugin for the whole cycle only when the pod has no required
/// terms and no existing pod's anti-affinity term matches it; a pod whose terms match no pod
/// yet still runs the filter (`Pass` here: nothing fails on this snapshot, but the filter with
/// nominated pods and preemption's dry run prepare it again).
#[test]
fn skip_only_where_kube_skips() {
    use crate::framework::{CycleContext, Predicate, Prepared};
    let nodes = vec![node("n1", &[("zone", "z1")])];
    let running = pod()
        .name("db")
        .node("n1")
        .labels(&[("app", "db")])
        .req_anti(term_in("app", &["cache"], "zone"))
        .build();
    let snap = snapshot(nodes, vec![running]);
    let p = MatchInterPodAffinity::new();
    let prepared = |incoming: Pod| match p.prepare(&CycleContext::new(&incoming, &snap)) {
        Ok(Prepared::Skip) => "skip",
        Ok(Prepared::Pass) => "pass",
        Ok(Prepared::Run(_)) => "run",
        other => panic!("{other:?}"),
    };
    // No terms; the db pod's term does not match it.
    assert_eq!(prepared(pod().labels(&[("app", "web")]).build()), "skip");
    // No terms, but the db pod's term matches it.
    assert_eq!(prepared(pod().labels(&[("app", "cache")]).build()), "run");
    // Its anti-affinity term matches no pod.
    let lonely = pod().req_anti(term_in("app", &["trainer"], "zone")).build();
    assert_eq!(prepared(lonely), "pass");
    // Its anti-affinity term matches the db pod.
    let apart = pod().req_anti(term_in("app", &["db"], "zone")).build();
    assert_eq!(prepared(apart), "run");
}
