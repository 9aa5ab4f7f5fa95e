//! The snapshot's counts per topology domain under random churn: they equal a recount after
//! every change (pods added, removed, assumed and forgotten, taken off and put back as
//! preemption does; nodes added, removed and relabelled; pods marked as being deleted), assume
//! and forget are exact inverses, and the plugins that read them (InterPodAffinity, and
//! PodTopologySpread through the spread constraints' counts) decide as by matching every
//! existing pod (their direct form), in kube v1.20's and v1.34's forms.

use proptest::prelude::*;
use serde_json::{Value, json};

use super::{InterPodAffinityPriority, MatchInterPodAffinity};
use crate::framework::{
    CycleContext, KubeVersion, Predicate, Prepared, PreparedScore, Priority, Reason,
};
use crate::model::{Node, Pod};
use crate::plugins::spread::PodTopologySpread;
use crate::snapshot::Snapshot;

const KEYS: [&str; 4] = ["kubernetes.io/hostname", "zone", "rack", "missing"];

/// A term: selector kind, topology key, namespace mode.
type TermSpec = (u8, u8, u8);

/// A spread constraint: selector kind, topology key, maxSkew, whether `ScheduleAnyway`,
/// whether `matchLabelKeys: [app]`.
type SpreadSpec = (u8, u8, u8, bool, bool);

/// A pod: namespace, app label, and terms as (kind: 0 required affinity, 1 required anti, 2
/// preferred affinity, 3 preferred anti; weight; term), and spread constraints.
#[derive(Clone, Debug)]
struct PodSpec {
    ns: u8,
    app: u8,
    terms: Vec<(u8, u8, TermSpec)>,
    spread: Vec<SpreadSpec>,
}

fn spread(c: SpreadSpec) -> Value {
    let (sel, key, skew, anyway, keys) = c;
    let mut v = json!({
        "maxSkew": 1 + skew % 3,
        "topologyKey": KEYS[key as usize % 4],
        "whenUnsatisfiable": if anyway { "ScheduleAnyway" } else { "DoNotSchedule" },
    });
    match sel % 7 {
        5 => {}
        6 => v["labelSelector"] = json!({}),
        k => v["labelSelector"] = term((k, 0, 0))["labelSelector"].clone(),
    }
    if keys {
        v["matchLabelKeys"] = json!(["app"]);
    }
    v
}

fn term(t: TermSpec) -> Value {
    let (sel, key, ns) = t;
    let selector = match sel % 5 {
        0 => json!({"matchLabels": {"app": "a"}}),
        1 => json!({"matchLabels": {"app": "b"}}),
        2 => json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["a", "c"]}]}),
        3 => json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["a"]}]}),
        _ => json!({"matchExpressions": [{"key": "app", "operator": "Exists"}]}),
    };
    let mut t = json!({"labelSelector": selector, "topologyKey": KEYS[key as usize % 4]});
    match ns % 6 {
        0 => {}
        1 => t["namespaces"] = json!(["ns-0"]),
        2 => t["namespaces"] = json!(["ns-0", "ns-1"]),
        3 => t["namespaceSelector"] = json!({}),
        4 => t["namespaceSelector"] = json!({"matchLabels": {"team": "x"}}),
        _ => {
            t["namespaces"] = json!(["ns-1"]);
            t["namespaceSelector"] =
                json!({"matchExpressions": [{"key": "team", "operator": "In", "values": ["x"]}]});
        }
    }
    t
}

fn pod(name: &str, s: &PodSpec) -> Pod {
    let mut aff = json!({});
    for &(kind, weight, t) in &s.terms {
        let (side, when, v) = match kind % 4 {
            0 => (
                "podAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                term(t),
            ),
            1 => (
                "podAntiAffinity",
                "requiredDuringSchedulingIgnoredDuringExecution",
                term(t),
            ),
            2 => (
                "podAffinity",
                "preferredDuringSchedulingIgnoredDuringExecution",
                json!({"weight": 1 + weight % 100, "podAffinityTerm": term(t)}),
            ),
            _ => (
                "podAntiAffinity",
                "preferredDuringSchedulingIgnoredDuringExecution",
                json!({"weight": 1 + weight % 100, "podAffinityTerm": term(t)}),
            ),
        };
        let list = aff[side][when].as_array().cloned().unwrap_or_default();
        let mut list = list;
        list.push(v);
        aff[side][when] = Value::Array(list);
    }
    let apps = ["a", "b", "c"];
    let mut v = json!({
        "metadata": {"name": name, "namespace": format!("ns-{}", s.ns % 2),
                     "labels": {"app": apps[s.app as usize % 3]}},
        "spec": {},
    });
    if !s.terms.is_empty() {
        v["spec"]["affinity"] = aff;
    }
    if !s.spread.is_empty() {
        v["spec"]["topologySpreadConstraints"] =
            Value::Array(s.spread.iter().map(|&c| spread(c)).collect());
    }
    serde_json::from_value(v).expect("test pod")
}

fn node(i: usize, zone: Option<u8>, rack: Option<u8>) -> Node {
    let mut labels = json!({"kubernetes.io/hostname": format!("n{i}")});
    if let Some(z) = zone {
        labels["zone"] = json!(format!("z{}", z % 3));
    }
    if let Some(r) = rack {
        labels["rack"] = json!(format!("r{}", r % 2));
    }
    serde_json::from_value(json!({"metadata": {"name": format!("n{i}"), "labels": labels}}))
        .expect("test node")
}

#[derive(Clone, Debug)]
enum Op {
    Add(u8, PodSpec),
    Remove(u16),
    Assume(u8, PodSpec),
    Forget(u16),
    AddNode(Option<u8>, Option<u8>),
    RemoveNode(u8),
    /// A bound pod gets a deletion timestamp.
    Terminate(u16),
    /// Namespace `ns-{0}` labelled `team: x` (`Some(true)`), `team: y`, or deleted.
    Namespace(u8, Option<bool>),
    Relabel(u8, Option<u8>, Option<u8>),
}

fn term_spec() -> impl Strategy<Value = (u8, u8, TermSpec)> {
    (0u8..4, 0u8..100, (0u8..5, 0u8..4, 0u8..6))
}

fn pod_spec() -> impl Strategy<Value = PodSpec> {
    (
        0u8..2,
        0u8..3,
        prop::collection::vec(term_spec(), 0..3),
        prop::collection::vec((0u8..7, 0u8..4, 0u8..3, any::<bool>(), any::<bool>()), 0..3),
    )
        .prop_map(|(ns, app, terms, spread)| PodSpec {
            ns,
            app,
            terms,
            spread,
        })
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (any::<u8>(), pod_spec()).prop_map(|(n, s)| Op::Add(n, s)),
        2 => any::<u16>().prop_map(Op::Remove),
        2 => (any::<u8>(), pod_spec()).prop_map(|(n, s)| Op::Assume(n, s)),
        1 => any::<u16>().prop_map(Op::Forget),
        1 => (any::<Option<u8>>(), any::<Option<u8>>()).prop_map(|(z, r)| Op::AddNode(z, r)),
        1 => any::<u8>().prop_map(Op::RemoveNode),
        1 => any::<u16>().prop_map(Op::Terminate),
        1 => (0u8..2, any::<Option<bool>>()).prop_map(|(n, l)| Op::Namespace(n, l)),
        1 => (any::<u8>(), any::<Option<u8>>(), any::<Option<u8>>())
            .prop_map(|(n, z, r)| Op::Relabel(n, z, r)),
    ]
}

/// Applies the ops, checking the counts after each; returns the snapshot.
fn churn(ops: &[Op]) -> Result<Snapshot, TestCaseError> {
    let nodes: Vec<Node> = (0..4)
        .map(|i| node(i, Some(i as u8), Some(i as u8)))
        .collect();
    let mut snap = Snapshot::from_objects(nodes, Vec::new()).expect("snapshot");
    let mut next_node = 4;
    let mut bound: Vec<crate::model::PodKey> = Vec::new();
    let mut assumed: Vec<crate::model::PodKey> = Vec::new();
    for (k, o) in ops.iter().enumerate() {
        let names: Vec<String> = snap
            .node_infos()
            .iter()
            .map(|i| i.name().to_string())
            .collect();
        match o {
            Op::Add(n, s) if !names.is_empty() => {
                let mut p = pod(&format!("p{k}"), s);
                p.spec.node_name = names[*n as usize % names.len()].clone();
                bound.push(p.key());
                snap.add_pod(p).expect("add");
            }
            Op::Assume(n, s) if !names.is_empty() => {
                let p = pod(&format!("p{k}"), s);
                let node = &names[*n as usize % names.len()];
                // Assume then forget leaves the counts as they were.
                let before = snap.affinity_index_contents();
                snap.assume(p.clone(), node).expect("assume");
                snap.check_affinity_index().map_err(TestCaseError::fail)?;
                let back = snap.forget(&p.key()).expect("forget");
                prop_assert_eq!(&back, &p);
                prop_assert_eq!(snap.affinity_index_contents(), before);
                snap.assume(p.clone(), node).expect("assume");
                assumed.push(p.key());
            }
            Op::Remove(w) if !bound.is_empty() => {
                let key = bound.remove(*w as usize % bound.len());
                // Preemption's dry run takes several pods of a node off at once, put back in another order: the
                // counts return (node flags may go to other counts; the recount checks them).
                let node = snap.node_of(&key).map(str::to_string);
                if let Some(i) = node.and_then(|n| snap.index_of(&n)) {
                    let counts = snap.affinity_index_counts();
                    let taken = snap.take_pod_infos_where(i, |p| p.key() <= &key);
                    prop_assert!(!taken.is_empty());
                    snap.check_affinity_index().map_err(TestCaseError::fail)?;
                    for info in taken.into_iter().rev() {
                        prop_assert!(snap.put_pod_info_at(info, i).is_ok());
                    }
                    snap.check_affinity_index().map_err(TestCaseError::fail)?;
                    prop_assert_eq!(snap.affinity_index_counts(), counts);
                }
                // ... or one pod, and puts it back: the index returns exactly.
                let before = snap.affinity_index_contents();
                if let Ok(info) = snap.take_pod_info(&key) {
                    snap.check_affinity_index().map_err(TestCaseError::fail)?;
                    prop_assert!(snap.put_pod_info(info).is_ok());
                    prop_assert_eq!(snap.affinity_index_contents(), before);
                }
                // The pod may have left with its node.
                let _ = snap.remove_pod(&key);
            }
            Op::Terminate(w) if !bound.is_empty() => {
                let key = &bound[*w as usize % bound.len()];
                let pod = snap
                    .node_infos()
                    .iter()
                    .flat_map(|i| i.pods())
                    .find(|p| p.key() == key.as_str())
                    .map(|p| p.pod().clone());
                if let Some(mut pod) = pod {
                    pod.metadata.deletion_timestamp = Some("2026-01-01T00:00:00Z".into());
                    snap.update_pod(pod).expect("update");
                }
            }
            Op::Namespace(n, labels) => {
                let name = format!("ns-{n}");
                match labels {
                    Some(x) => {
                        let team = if *x { "x" } else { "y" };
                        let ns: crate::model::Namespace = serde_json::from_value(
                            json!({"metadata": {"name": name, "labels": {"team": team}}}),
                        )
                        .expect("namespace");
                        snap.upsert_namespace(&ns);
                    }
                    None => {
                        snap.remove_namespace(&name);
                    }
                }
            }
            Op::Forget(w) if !assumed.is_empty() => {
                let key = assumed.remove(*w as usize % assumed.len());
                let _ = snap.forget(&key);
            }
            Op::AddNode(z, r) => {
                snap.add_node(node(next_node, *z, *r)).expect("node");
                next_node += 1;
            }
            Op::RemoveNode(w) if names.len() > 1 => {
                snap.remove_node(&names[*w as usize % names.len()])
                    .expect("remove node");
            }
            Op::Relabel(w, z, r) if !names.is_empty() => {
                let name = &names[*w as usize % names.len()];
                let i: usize = name[1..].parse().expect("node number");
                snap.update_node(node(i, *z, *r)).expect("update");
            }
            _ => {}
        }
        snap.check_affinity_index()
            .map_err(|e| TestCaseError::fail(format!("after op {k} {o:?}: {e}")))?;
    }
    Ok(snap)
}

/// The predicate's answer per node (`None`: skipped; every node passes where it prepares
/// [`Prepared::Pass`]), and whether its fast form agrees.
fn filter_all<P: Predicate>(
    p: &P,
    cx: &CycleContext<'_>,
    snap: &Snapshot,
) -> Result<Option<Vec<Result<(), Reason>>>, TestCaseError> {
    let state = match p.prepare(cx) {
        Ok(Prepared::Skip) => return Ok(None),
        Ok(Prepared::Pass) => return Ok(Some(vec![Ok(()); snap.len()])),
        Ok(Prepared::Run(s)) => s,
        Ok(_) => unreachable!("neither plugin narrows nor rejects in PreFilter"),
        Err(e) => return Ok(Some(vec![Err(Reason::Custom(e.to_string().len() as u32))])),
    };
    let out: Vec<_> = (0..snap.len())
        .map(|i| p.filter(cx, &state, snap.node(i)))
        .collect();
    if let Some(f) = p.fast_filter(cx, &state, crate::fast_path::SEALED) {
        for (i, o) in out.iter().enumerate() {
            prop_assert_eq!(
                f.passes(&snap.free()[i]),
                o.is_ok(),
                "fast filter, node {}",
                i
            );
        }
    }
    Ok(Some(out))
}

/// The priority's normalized scores over all nodes, and whether it was a constant.
fn score_all<P: Priority>(p: &P, cx: &CycleContext<'_>, snap: &Snapshot) -> String {
    let feasible: Vec<u32> = (0..snap.len() as u32).collect();
    match p.prepare(cx, &feasible) {
        Ok(PreparedScore::Constant(c)) => format!("constant {c}"),
        Ok(PreparedScore::Run(state)) => {
            let mut scores: Vec<i64> = feasible
                .iter()
                .map(|&i| p.score(cx, &state, snap.node(i as usize)))
                .collect();
            // The batch form gives the same raw scores, over any subset of the nodes.
            let odd: Vec<u32> = feasible.iter().copied().filter(|i| i % 2 == 1).collect();
            let mut batch = vec![-1; odd.len()];
            p.score_batch(cx, &state, &odd, &mut batch);
            let from_single: Vec<i64> = odd.iter().map(|&i| scores[i as usize]).collect();
            if batch != from_single {
                return format!("score_batch {batch:?}, score {from_single:?}");
            }
            p.normalize(cx, &state, &mut scores);
            format!("{scores:?}")
        }
        Err(e) => format!("error {e}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn counts_stay_exact_and_plugins_decide_as_directly(
        ops in prop::collection::vec(op(), 1..40),
        incoming in prop::collection::vec(pod_spec(), 1..4),
        copy_of in any::<u16>(),
        hard in 0i32..3,
        ignore in any::<bool>(),
        pinned in any::<u8>(),
    ) {
        let snap = churn(&ops)?;
        // Incoming pods: random ones, and a replica of an existing pod (same terms, so the
        // snapshot's matchers are read).
        let mut pods: Vec<Pod> = incoming
            .iter()
            .enumerate()
            .map(|(i, s)| pod(&format!("in-{i}"), s))
            .collect();
        let existing: Vec<&Pod> = snap
            .node_infos()
            .iter()
            .flat_map(|i| i.pods())
            .map(|p| p.pod())
            .collect();
        if !existing.is_empty() {
            let mut p = existing[copy_of as usize % existing.len()].clone();
            p.metadata.name = "replica".into();
            p.spec.node_name.clear();
            pods.push(p);
        }
        // Some pods with a node selector (the spread counts hold only for pods without one).
        for (i, p) in pods.iter_mut().enumerate() {
            if pinned & (1 << (i % 8)) != 0 {
                p.spec.node_selector.insert("zone".into(), format!("z{}", i % 3));
            }
        }
        let counted = MatchInterPodAffinity::new();
        let direct = MatchInterPodAffinity::new().direct();
        let priority = InterPodAffinityPriority::new(hard)
            .ignoring_preferred_terms_of_existing_pods(ignore);
        let priority_direct = InterPodAffinityPriority::new(hard)
            .ignoring_preferred_terms_of_existing_pods(ignore)
            .direct();
        let spread = PodTopologySpread::new();
        let spread_direct = PodTopologySpread::new().direct();
        for p in &pods {
            for version in [KubeVersion::V1_20, KubeVersion::V1_34] {
                let cx = CycleContext::for_version(p, &snap, version);
                prop_assert_eq!(
                    filter_all(&counted, &cx, &snap)?,
                    filter_all(&direct, &cx, &snap)?,
                    "filter, pod {:?}", p.metadata.name
                );
                prop_assert_eq!(
                    score_all(&priority, &cx, &snap),
                    score_all(&priority_direct, &cx, &snap),
                    "score, pod {:?}", p.metadata.name
                );
                prop_assert_eq!(
                    filter_all(&spread, &cx, &snap)?,
                    filter_all(&spread_direct, &cx, &snap)?,
                    "spread filter, pod {:?}", p.metadata.name
                );
                prop_assert_eq!(
                    score_all(&spread, &cx, &snap),
                    score_all(&spread_direct, &cx, &snap),
                    "spread score, pod {:?}", p.metadata.name
                );
            }
        }
    }
}

/// A replica of a workload with required anti-affinity reads the snapshot's counts, through
/// the fused filter pass (a test that the fast form is taken, not only that it is right).
#[test]
fn replicas_read_the_counts_through_node_flags() {
    let spec = PodSpec {
        ns: 0,
        app: 0,
        terms: vec![(1, 0, (0, 0, 2))],
        spread: Vec::new(),
    };
    let nodes: Vec<Node> = (0..3).map(|i| node(i, Some(0), None)).collect();
    let mut existing = pod("p0", &spec);
    existing.spec.node_name = "n1".into();
    let snap = Snapshot::from_objects(nodes, vec![existing]).expect("snapshot");
    snap.check_affinity_index().expect("counts");
    let incoming = pod("p1", &spec);
    let cx = CycleContext::new(&incoming, &snap);
    let p = MatchInterPodAffinity::new();
    let Ok(Prepared::Run(state)) = p.prepare(&cx) else {
        panic!("the predicate runs for a replica with anti-affinity");
    };
    let f = p
        .fast_filter(&cx, &state, crate::fast_path::SEALED)
        .expect("a fast form");
    let passes: Vec<bool> = snap.free().iter().map(|r| f.passes(r)).collect();
    assert_eq!(passes, [true, false, true]);
    assert_eq!(
        p.filter(&cx, &state, snap.node(1)),
        Err(Reason::PodAntiAffinityRulesNotMatch)
    );
}

/// A replica of a workload with a spread constraint reads the snapshot's counts (a test that
/// the counts are taken, not only that they are right), and a pod with a required node
/// selector, whose counts they are not, counts node by node.
#[test]
fn spread_replicas_read_the_counts() {
    let spec = PodSpec {
        ns: 0,
        app: 0,
        terms: Vec::new(),
        spread: vec![(0, 1, 0, false, true)],
    };
    let nodes: Vec<Node> = (0..3).map(|i| node(i, Some(i as u8), None)).collect();
    let mut existing = pod("p0", &spec);
    existing.spec.node_name = "n1".into();
    let snap = Snapshot::from_objects(nodes, vec![existing]).expect("snapshot");
    snap.check_affinity_index().expect("counts");
    let plugin = PodTopologySpread::new();
    let incoming = pod("p1", &spec);
    let cx = CycleContext::new(&incoming, &snap);
    let Ok(Prepared::Run(state)) = Predicate::prepare(&plugin, &cx) else {
        panic!("the filter runs for a pod with a DoNotSchedule constraint");
    };
    assert!(state.is_indexed());
    // maxSkew 1: the zone with the replica is full until the others catch up.
    let passes: Vec<bool> = (0..3)
        .map(|i| plugin.filter(&cx, &state, snap.node(i)).is_ok())
        .collect();
    assert_eq!(passes, [true, false, true]);
    let mut pinned = pod("p2", &spec);
    pinned.spec.node_selector.insert("zone".into(), "z1".into());
    let cx = CycleContext::new(&pinned, &snap);
    let Ok(Prepared::Run(state)) = Predicate::prepare(&plugin, &cx) else {
        panic!("the filter runs");
    };
    assert!(!state.is_indexed());
}

/// Constraints on two keys count only the nodes with both: a node without the second key
/// keeps its pods out of the first key's counts, so the snapshot's counts (over every node with
/// the key) are not read while some node lacks one.
#[test]
fn spread_counts_on_two_keys_leave_out_nodes_without_both() {
    let spec = PodSpec {
        ns: 0,
        app: 0,
        terms: Vec::new(),
        // zone and rack, DoNotSchedule, maxSkew 1, app = a.
        spread: vec![(0, 1, 0, false, false), (0, 2, 0, false, false)],
    };
    let nodes = vec![
        node(0, Some(0), Some(0)),
        node(1, Some(0), None),
        node(2, Some(1), Some(1)),
    ];
    let existing: Vec<Pod> = (0..2)
        .map(|i| {
            let mut p = pod(&format!("p{i}"), &spec);
            p.spec.node_name = "n1".into();
            p
        })
        .collect();
    let snap = Snapshot::from_objects(nodes, existing).expect("snapshot");
    snap.check_affinity_index().expect("counts");
    let plugin = PodTopologySpread::new();
    let incoming = pod("in", &spec);
    let cx = CycleContext::new(&incoming, &snap);
    let Ok(Prepared::Run(state)) = Predicate::prepare(&plugin, &cx) else {
        panic!("the filter runs");
    };
    assert!(!state.is_indexed());
    let outcome: Vec<Result<(), Reason>> = (0..3)
        .map(|i| plugin.filter(&cx, &state, snap.node(i)))
        .collect();
    assert_eq!(
        outcome,
        [Ok(()), Err(Reason::TopologySpreadMissingLabel), Ok(())]
    );
}
