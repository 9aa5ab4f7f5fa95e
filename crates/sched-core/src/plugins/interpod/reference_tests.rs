//! Differential tests: the precomputed, interned implementation against a direct reading of
//! kube's rules over strings, on random small clusters.

use std::collections::BTreeMap;
use std::sync::Arc;

use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{Value, json};

use super::selector;
use super::terms::existing_term_matches;
use super::testutil::*;
use super::{InterPodAffinityPriority, MatchInterPodAffinity, NamespaceLabels};
use crate::framework::Reason;
use crate::model::{Node, Pod, PodAffinityTerm};

const KEYS: &[&str] = &["a", "b", "c"];
const VALUES: &[&str] = &["1", "2", ""];
const TOPOLOGY: &[&str] = &["zone", "region", "host", "missing"];
const NAMESPACES: &[&str] = &["", "ns1", "ns2"];

fn namespace_labels() -> Arc<NamespaceLabels> {
    let team = |t: &str| BTreeMap::from([("team".to_string(), t.to_string())]);
    Arc::new(
        [
            ("ns1".to_string(), team("x")),
            ("ns2".to_string(), team("y")),
        ]
        .into_iter()
        .collect(),
    )
}

fn pick<'a>(rng: &mut ChaCha8Rng, from: &[&'a str]) -> &'a str {
    from[rng.random_range(0..from.len())]
}

fn random_term(rng: &mut ChaCha8Rng) -> Value {
    let mut exprs = Vec::new();
    for _ in 0..rng.random_range(0..3) {
        let key = pick(rng, KEYS);
        exprs.push(match rng.random_range(0..4) {
            0 => expr(key, "In", &[pick(rng, VALUES), pick(rng, VALUES)]),
            1 => expr(key, "NotIn", &[pick(rng, VALUES)]),
            2 => expr(key, "Exists", &[]),
            _ => expr(key, "DoesNotExist", &[]),
        });
    }
    let mut t = term(sel(&exprs), pick(rng, TOPOLOGY));
    if rng.random_bool(0.1) {
        t["labelSelector"] = Value::Null;
    }
    match rng.random_range(0..6) {
        0 => t["namespaces"] = json!([pick(rng, NAMESPACES)]),
        1 => t["namespaceSelector"] = json!({}),
        2 => t["namespaceSelector"] = sel(&[expr("team", "In", &["x"])]),
        3 => t["namespaceSelector"] = sel(&[expr("team", "DoesNotExist", &[])]),
        _ => {}
    }
    t
}

fn random_pod(rng: &mut ChaCha8Rng, node: Option<&str>, affinity: f64) -> Pod {
    let mut p = pod().ns(pick(rng, NAMESPACES));
    if let Some(n) = node {
        p = p.node(n);
    }
    for k in KEYS {
        if rng.random_bool(0.5) {
            p = p.labels(&[(k, pick(rng, VALUES))]);
        }
    }
    if rng.random_bool(affinity) {
        for _ in 0..rng.random_range(0..3) {
            p = match rng.random_range(0..4) {
                0 => p.req_aff(random_term(rng)),
                1 => p.req_anti(random_term(rng)),
                2 => p.pref_aff(rng.random_range(1..10), random_term(rng)),
                _ => p.pref_anti(rng.random_range(1..10), random_term(rng)),
            };
        }
    }
    p.build()
}

fn random_cluster(seed: u64) -> (Vec<Node>, Vec<Pod>, Vec<Pod>) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let n_nodes = rng.random_range(1..6);
    let nodes: Vec<Node> = (0..n_nodes)
        .map(|i| {
            let name = format!("n{i}");
            let mut labels: Vec<(&str, String)> = vec![];
            if rng.random_bool(0.8) {
                labels.push(("zone", pick(&mut rng, &["z1", "z2"]).to_string()));
            }
            if rng.random_bool(0.7) {
                labels.push(("region", "r1".to_string()));
            }
            if rng.random_bool(0.8) {
                labels.push(("host", name.clone()));
            }
            let l: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
            node(&name, &l)
        })
        .collect();
    // Some existing pods are replicas of a few workloads: the same labels and terms, in any
    // namespace (what the plugins work out once per distinct set of terms must still depend on
    // the namespace).
    let templates: Vec<Pod> = (0..2).map(|_| random_pod(&mut rng, None, 0.9)).collect();
    let pods = (0..rng.random_range(0..10))
        .enumerate()
        .map(|(i, _)| {
            let n = format!("n{}", rng.random_range(0..n_nodes));
            if rng.random_bool(0.5) {
                let mut p = templates[rng.random_range(0..templates.len())].clone();
                p.metadata.name = format!("replica-{i}");
                p.metadata.namespace = pick(&mut rng, NAMESPACES).to_string();
                p.spec.node_name = n;
                p
            } else {
                random_pod(&mut rng, Some(&n), 0.4)
            }
        })
        .collect();
    let incoming = (0..4).map(|_| random_pod(&mut rng, None, 0.9)).collect();
    (nodes, pods, incoming)
}

fn req(p: &Pod, anti: bool) -> &[PodAffinityTerm] {
    let a = p.spec.affinity.as_ref();
    let pa = if anti {
        a.and_then(|a| a.pod_anti_affinity.as_ref())
    } else {
        a.and_then(|a| a.pod_affinity.as_ref())
    };
    pa.map_or(&[][..], |p| &p.required[..])
}

/// Whether the incoming pod's term matches `other` (namespace selector merged over `ns`).
fn incoming_matches(t: &PodAffinityTerm, owner: &Pod, other: &Pod, ns: &NamespaceLabels) -> bool {
    let names_ok = if t.namespaces.is_empty() && t.namespace_selector.is_none() {
        other.metadata.namespace == owner.metadata.namespace
    } else {
        t.namespaces.contains(&other.metadata.namespace)
    };
    let sel_ok = t.namespace_selector.as_ref().is_some_and(|s| {
        selector::is_empty(s)
            || ns
                .labels_of(&other.metadata.namespace)
                .is_some_and(|l| selector::matches(s, l))
    });
    (names_ok || sel_ok) && selector::matches_opt(t.label_selector.as_ref(), &other.metadata.labels)
}

fn label<'a>(n: &'a Node, k: &str) -> Option<&'a String> {
    n.metadata.labels.get(k)
}

/// kube's rules, read directly: every existing pod is checked per node.
fn reference_filter(
    p: &Pod,
    nodes: &[Node],
    placed: &[(usize, Pod)],
    ns: &NamespaceLabels,
) -> Vec<Result<(), Reason>> {
    let aff = req(p, false);
    let anti = req(p, true);
    let no_labels = BTreeMap::new();
    let p_ns_labels = ns.labels_of(&p.metadata.namespace).unwrap_or(&no_labels);
    let matches_all =
        |e: &Pod| !aff.is_empty() && aff.iter().all(|t| incoming_matches(t, p, e, ns));
    let any_affinity_count = placed.iter().any(|(m, e)| {
        matches_all(e)
            && aff
                .iter()
                .any(|t| label(&nodes[*m], &t.topology_key).is_some())
    });
    nodes
        .iter()
        .map(|n| {
            let mut pods_exist = true;
            for t in aff {
                let Some(v) = label(n, &t.topology_key) else {
                    return Err(Reason::PodAffinityRulesNotMatch);
                };
                if !placed
                    .iter()
                    .any(|(m, e)| label(&nodes[*m], &t.topology_key) == Some(v) && matches_all(e))
                {
                    pods_exist = false;
                }
            }
            let first_of_group =
                !any_affinity_count && aff.iter().all(|t| incoming_matches(t, p, p, ns));
            if !pods_exist && !first_of_group {
                return Err(Reason::PodAffinityRulesNotMatch);
            }
            for t in anti {
                if let Some(v) = label(n, &t.topology_key)
                    && placed.iter().any(|(m, e)| {
                        label(&nodes[*m], &t.topology_key) == Some(v)
                            && incoming_matches(t, p, e, ns)
                    })
                {
                    return Err(Reason::PodAntiAffinityRulesNotMatch);
                }
            }
            for (m, e) in placed {
                for t in req(e, true) {
                    if existing_term_matches(t, &e.metadata.namespace, p, p_ns_labels)
                        && label(&nodes[*m], &t.topology_key).is_some()
                        && label(&nodes[*m], &t.topology_key) == label(n, &t.topology_key)
                    {
                        return Err(Reason::ExistingPodsAntiAffinityRulesNotMatch);
                    }
                }
            }
            Ok(())
        })
        .collect()
}

/// kube's scoring, read directly, then its 1.22 normalization.
fn reference_score(
    p: &Pod,
    nodes: &[Node],
    placed: &[(usize, Pod)],
    ns: &NamespaceLabels,
    hard: i64,
) -> Vec<i64> {
    let no_labels = BTreeMap::new();
    let p_ns_labels = ns.labels_of(&p.metadata.namespace).unwrap_or(&no_labels);
    // (topology key, value of the existing pod's node, weight)
    let mut contributions: Vec<(String, String, i64)> = vec![];
    let a = p.spec.affinity.as_ref();
    let pref = |anti: bool, q: &Pod| {
        let a = q.spec.affinity.as_ref();
        let pa = if anti {
            a.and_then(|a| a.pod_anti_affinity.as_ref())
        } else {
            a.and_then(|a| a.pod_affinity.as_ref())
        };
        pa.map_or(vec![], |p| p.preferred.clone())
    };
    let _ = a;
    for (m, e) in placed {
        let node = &nodes[*m];
        let mut add = |t: &PodAffinityTerm, w: i64| {
            if let Some(v) = label(node, &t.topology_key) {
                contributions.push((t.topology_key.clone(), v.clone(), w));
            }
        };
        for t in pref(false, p) {
            if incoming_matches(&t.pod_affinity_term, p, e, ns) {
                add(&t.pod_affinity_term, i64::from(t.weight));
            }
        }
        for t in pref(true, p) {
            if incoming_matches(&t.pod_affinity_term, p, e, ns) {
                add(&t.pod_affinity_term, -i64::from(t.weight));
            }
        }
        let own =
            |t: &PodAffinityTerm| existing_term_matches(t, &e.metadata.namespace, p, p_ns_labels);
        if hard > 0 {
            for t in req(e, false) {
                if own(t) {
                    add(t, hard);
                }
            }
        }
        for t in pref(false, e) {
            if own(&t.pod_affinity_term) {
                add(&t.pod_affinity_term, i64::from(t.weight));
            }
        }
        for t in pref(true, e) {
            if own(&t.pod_affinity_term) {
                add(&t.pod_affinity_term, -i64::from(t.weight));
            }
        }
    }
    let mut scores: Vec<i64> = nodes
        .iter()
        .map(|n| {
            contributions
                .iter()
                .filter(|(k, v, _)| label(n, k) == Some(v))
                .map(|(_, _, w)| w)
                .sum()
        })
        .collect();
    if contributions.is_empty() {
        return vec![0; nodes.len()];
    }
    super::score::normalize_min_max(&mut scores);
    scores
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(400))]

    #[test]
    fn interned_implementation_agrees_with_reference(seed in any::<u64>()) {
        let (nodes, pods, incoming) = random_cluster(seed);
        let placed: Vec<(usize, Pod)> = pods
            .iter()
            .map(|p| (nodes.iter().position(|n| n.metadata.name == p.spec.node_name).unwrap_or(0), p.clone()))
            .collect();
        let snap = snapshot(nodes.clone(), pods);
        let ns = namespace_labels();
        let pred = MatchInterPodAffinity::new().with_namespace_labels(ns.clone());
        for hard in [0, 1, 3] {
            let prio = InterPodAffinityPriority::new(hard).with_namespace_labels(ns.clone());
            for p in &incoming {
                let (_, got) = run_filter(&pred, p, &snap).unwrap();
                prop_assert_eq!(&got, &reference_filter(p, &nodes, &placed, &ns), "filter, pod {:?}", p);
                let (_, got) = run_priority(&prio, p, &snap).unwrap();
                prop_assert_eq!(&got, &reference_score(p, &nodes, &placed, &ns, hard as i64), "score, pod {:?}", p);
            }
        }
    }
}
