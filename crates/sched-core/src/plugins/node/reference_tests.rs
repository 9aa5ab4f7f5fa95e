//! Differential tests: the interned, precompiled node affinity and label plugins against a
//! direct transcription of kube's rules over strings, on random pods and nodes.

use std::collections::BTreeMap;

use proptest::prelude::*;

use super::testutil::*;
use super::util::{is_qualified_name, is_valid_label_value, parse_int};
use super::{CheckNodeLabelPresence, MatchNodeSelector, NodeAffinityPriority, NodeLabelPriority};
use crate::formulas::default_normalize;
use crate::framework::{CycleContext, PreparedScore, Priority};
use crate::model::{
    Affinity, Node, NodeAffinity, NodeSelector, NodeSelectorOperator, NodeSelectorRequirement,
    NodeSelectorTerm, Pod, PreferredSchedulingTerm,
};

type Labels = BTreeMap<String, String>;

/// `labels.NewRequirement` then `Requirement.Matches`; `Err` for a parse error.
fn ref_label_req(r: &NodeSelectorRequirement, labels: &Labels) -> Result<bool, ()> {
    use NodeSelectorOperator::*;
    let mut bad = !is_qualified_name(&r.key);
    match r.operator {
        In | NotIn => bad |= r.values.is_empty(),
        Exists | DoesNotExist => bad |= !r.values.is_empty(),
        Gt | Lt => {
            bad |= r.values.len() != 1;
            bad |= r.values.iter().any(|v| parse_int(v).is_none());
        }
    }
    bad |= r.values.iter().any(|v| !is_valid_label_value(v));
    if bad {
        return Err(());
    }
    let got = labels.get(&r.key);
    Ok(match r.operator {
        In => got.is_some_and(|v| r.values.contains(v)),
        NotIn => got.is_none_or(|v| !r.values.contains(v)),
        Exists => got.is_some(),
        DoesNotExist => got.is_none(),
        Gt | Lt => match got.and_then(|v| parse_int(v)) {
            None => false,
            Some(v) => {
                let bound = parse_int(&r.values[0]).unwrap();
                if r.operator == Gt {
                    v > bound
                } else {
                    v < bound
                }
            }
        },
    })
}

/// `nodeSelectorRequirementsAsFieldSelector` then `Matches` on `{metadata.name: name}`.
fn ref_field_req(r: &NodeSelectorRequirement, name: &str) -> Result<bool, ()> {
    if r.values.len() != 1 {
        return Err(());
    }
    let field = if r.key == "metadata.name" { name } else { "" };
    match r.operator {
        NodeSelectorOperator::In => Ok(field == r.values[0]),
        NodeSelectorOperator::NotIn => Ok(field != r.values[0]),
        _ => Err(()),
    }
}

/// kube's `nodeSelectorTerm.match`: `Err` when the term does not parse.
fn ref_term(t: &NodeSelectorTerm, node: &Node) -> Result<bool, ()> {
    let mut ok = true;
    for r in &t.match_expressions {
        ok &= ref_label_req(r, &node.metadata.labels)?;
    }
    for r in &t.match_fields {
        ok &= ref_field_req(r, &node.metadata.name)?;
    }
    Ok(ok)
}

fn empty(t: &NodeSelectorTerm) -> bool {
    t.match_expressions.is_empty() && t.match_fields.is_empty()
}

/// kube's `RequiredNodeAffinity.Match`.
fn ref_required(pod: &Pod, node: &Node) -> bool {
    let labels = &node.metadata.labels;
    if !pod
        .spec
        .node_selector
        .iter()
        .all(|(k, v)| labels.get(k) == Some(v))
    {
        return false;
    }
    let required = pod
        .spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .and_then(|na| na.required.as_ref());
    match required {
        None => true,
        Some(sel) => sel
            .node_selector_terms
            .iter()
            .filter(|t| !empty(t))
            .any(|t| ref_term(t, node) == Ok(true)),
    }
}

/// kube's `PreferredSchedulingTerms.Score`, or `Err` when a counted term does not parse.
fn ref_preferred(pod: &Pod, node: &Node) -> Result<i64, ()> {
    let terms = pod
        .spec
        .affinity
        .as_ref()
        .and_then(|a| a.node_affinity.as_ref())
        .map_or(&[][..], |na| na.preferred.as_slice());
    let mut score = 0;
    for t in terms {
        if t.weight == 0 || empty(&t.preference) {
            continue;
        }
        if ref_term(&t.preference, node)? {
            score += i64::from(t.weight);
        }
    }
    Ok(score)
}

fn key() -> impl Strategy<Value = String> {
    prop::sample::select(vec!["a", "b", "zone", "example.com/c", "bad key", "unseen"])
        .prop_map(String::from)
}

fn value() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        "1",
        "2",
        "10",
        "x",
        "",
        "-1",
        "+3",
        "unseen",
        "bad value!",
    ])
    .prop_map(String::from)
}

fn op() -> impl Strategy<Value = NodeSelectorOperator> {
    use NodeSelectorOperator::*;
    prop::sample::select(vec![In, NotIn, Exists, DoesNotExist, Gt, Lt])
}

fn label_req() -> impl Strategy<Value = NodeSelectorRequirement> {
    (key(), op(), prop::collection::vec(value(), 0..3)).prop_map(|(key, operator, values)| {
        NodeSelectorRequirement {
            key,
            operator,
            values,
        }
    })
}

fn field_req() -> impl Strategy<Value = NodeSelectorRequirement> {
    let key = prop::sample::select(vec!["metadata.name", "metadata.namespace"]);
    let val = prop::sample::select(vec!["n0", "n1", "n9", ""]);
    (key, op(), prop::collection::vec(val, 0..3)).prop_map(|(key, operator, values)| {
        NodeSelectorRequirement {
            key: key.into(),
            operator,
            values: values.into_iter().map(String::from).collect(),
        }
    })
}

fn term() -> impl Strategy<Value = NodeSelectorTerm> {
    (
        prop::collection::vec(label_req(), 0..3),
        prop::collection::vec(field_req(), 0..2),
    )
        .prop_map(|(match_expressions, match_fields)| NodeSelectorTerm {
            match_expressions,
            match_fields,
        })
}

fn labels() -> impl Strategy<Value = Labels> {
    let k = prop::sample::select(vec!["a", "b", "zone", "example.com/c", "other"]);
    let v = prop::sample::select(vec!["1", "2", "10", "x", "", "-1", "+3", "y"]);
    prop::collection::btree_map(k.prop_map(String::from), v.prop_map(String::from), 0..4)
}

fn test_pod() -> impl Strategy<Value = Pod> {
    (
        prop::collection::btree_map(key(), value(), 0..2),
        prop::option::of(prop::collection::vec(term(), 0..3)),
        prop::collection::vec(((-1i32..6), term()), 0..3),
    )
        .prop_map(|(selector, required, preferred)| {
            let mut p = pod();
            p.spec.node_selector = selector;
            p.spec.affinity = Some(Affinity {
                node_affinity: Some(NodeAffinity {
                    required: required.map(|t| NodeSelector {
                        node_selector_terms: t,
                    }),
                    preferred: preferred
                        .into_iter()
                        .map(|(weight, preference)| PreferredSchedulingTerm { weight, preference })
                        .collect(),
                }),
                ..Affinity::default()
            });
            p
        })
}

fn nodes() -> impl Strategy<Value = Vec<Node>> {
    prop::collection::vec(labels(), 1..4).prop_map(|ls| {
        ls.into_iter()
            .enumerate()
            .map(|(i, l)| {
                let mut n = node(&format!("n{i}"));
                n.metadata.labels = l;
                n
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn match_node_selector_agrees_with_kube(pod in test_pod(), nodes in nodes()) {
        let snap = snapshot(nodes.clone(), vec![]);
        let got = filter_all(&MatchNodeSelector::new(), &pod, &snap);
        for (i, n) in nodes.iter().enumerate() {
            prop_assert_eq!(got[i].is_ok(), ref_required(&pod, n), "node {}", i);
        }
    }

    #[test]
    fn node_affinity_priority_agrees_with_kube(pod in test_pod(), nodes in nodes()) {
        let snap = snapshot(nodes.clone(), vec![]);
        let want: Result<Vec<i64>, ()> = nodes.iter().map(|n| ref_preferred(&pod, n)).collect();
        let cx = CycleContext::new(&pod, &snap);
        let feasible: Vec<u32> = (0..nodes.len() as u32).collect();
        match (NodeAffinityPriority::new().prepare(&cx, &feasible), want) {
            (Err(_), Err(())) => {}
            (Ok(prepared), Ok(mut want)) => {
                default_normalize(100, false, &mut want);
                let got = match prepared {
                    PreparedScore::Constant(c) => vec![c; nodes.len()],
                    PreparedScore::Run(st) => {
                        let mut s: Vec<i64> = (0..nodes.len())
                            .map(|i| NodeAffinityPriority::new().score(&cx, &st, snap.node(i)))
                            .collect();
                        NodeAffinityPriority::new().normalize(&cx, &st, &mut s);
                        s
                    }
                };
                prop_assert_eq!(got, want);
            }
            (got, want) => prop_assert!(false, "prepare {:?} but kube {:?}", got.is_ok(), want),
        }
    }

    #[test]
    fn label_plugins_agree_with_kube(
        present in prop::collection::vec(key(), 0..3),
        absent in prop::collection::vec(key(), 0..3),
        nodes in nodes(),
    ) {
        let snap = snapshot(nodes.clone(), vec![]);
        let filter = CheckNodeLabelPresence::from_lists(present.clone(), absent.clone());
        let got = filter_all(&filter, &pod(), &snap);
        let prio = NodeLabelPriority::from_lists(present.clone(), absent.clone());
        let got_scores = scores(&prio, &pod(), &snap);
        for (i, n) in nodes.iter().enumerate() {
            let l = &n.metadata.labels;
            let fits = present.iter().all(|k| l.contains_key(k)) && absent.iter().all(|k| !l.contains_key(k));
            prop_assert_eq!(got[i].is_ok(), fits);
            let count = (present.len() + absent.len()) as i64;
            let score = if count == 0 {
                0
            } else {
                (present.iter().filter(|k| l.contains_key(*k)).count() as i64 * 100
                    + absent.iter().filter(|k| !l.contains_key(*k)).count() as i64 * 100)
                    / count
            };
            prop_assert_eq!(got_scores[i], score);
        }
    }
}
