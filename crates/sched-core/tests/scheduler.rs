//! Behaviour of the scheduling cycle with user-defined plugins: selection, bounded work,
//! round-robin fairness, parallel filtering and explanations.

use std::collections::HashMap;

use proptest::prelude::*;
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
mod common;
use common::BuildWorker;
use sched_core::framework::{Reason, ResourceSet, predicate_fn, priority_fn};
use sched_core::model::{Node, Pod, Quantity, Taint, TaintEffect};
use sched_core::profile::{FitError, Profile, ScheduleError, num_feasible_nodes_to_find};
use sched_core::select::select_host;
use sched_core::snapshot::Snapshot;

fn node(name: &str, cpu: &str) -> Node {
    let mut n = Node::default();
    n.metadata.name = name.into();
    n.status
        .allocatable
        .insert("cpu".into(), cpu.parse::<Quantity>().unwrap());
    n.status
        .allocatable
        .insert("memory".into(), "8Gi".parse::<Quantity>().unwrap());
    n.status
        .allocatable
        .insert("pods".into(), "110".parse::<Quantity>().unwrap());
    n
}

fn pod(name: &str) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = name.into();
    p.metadata.namespace = "default".into();
    p
}

fn cluster(n: usize) -> Snapshot {
    Snapshot::from_objects(
        (0..n).map(|i| node(&format!("node-{i}"), "4")).collect(),
        vec![],
    )
    .unwrap()
}

/// A deterministic pseudo-random verdict per node name, so filtering results vary by node.
fn hashed_fit(seed: u64) -> impl Fn(&Pod, &sched_core::snapshot::NodeInfo) -> Result<(), Reason> {
    move |_, n| {
        let h = n.name().bytes().fold(seed ^ 0xcbf2_9ce4_8422_2325, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        if h % 3 == 0 {
            Err(Reason::Custom((h % 5) as u32))
        } else {
            Ok(())
        }
    }
}

#[test]
fn feasible_node_counts_follow_kube() {
    // Values from kube-scheduler's TestNumFeasibleNodesToFind.
    assert_eq!(num_feasible_nodes_to_find(10, 0), 10);
    assert_eq!(num_feasible_nodes_to_find(10, 40), 10);
    assert_eq!(num_feasible_nodes_to_find(1000, 0), 420);
    assert_eq!(num_feasible_nodes_to_find(1000, 40), 400);
    assert_eq!(num_feasible_nodes_to_find(6000, 0), 300);
    assert_eq!(num_feasible_nodes_to_find(6000, 40), 2400);
    assert_eq!(num_feasible_nodes_to_find(500, 1), 100);
    assert_eq!(num_feasible_nodes_to_find(20_000, 0), 1000);
}

#[test]
fn select_host_on_empty_is_an_error() {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    assert!(select_host(&[], &mut rng).is_err());
}

proptest! {
    #[test]
    fn select_host_returns_a_best_score(scores in proptest::collection::vec(0i64..5, 1..40), seed: u64) {
        let mut rng = ChaCha8Rng::seed_from_u64(seed);
        let i = select_host(&scores, &mut rng).unwrap();
        prop_assert_eq!(scores[i], *scores.iter().max().unwrap());
    }
}

#[test]
fn select_host_is_uniform_among_ties() {
    // 8 tied nodes among lower ones; chi-square with 7 degrees of freedom, p = 0.001 -> 24.32.
    let scores = [5, 9, 1, 9, 9, 3, 9, 9, 0, 9, 9, 9, 2];
    let ties: Vec<usize> = (0..scores.len()).filter(|&i| scores[i] == 9).collect();
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let draws = 80_000;
    let mut counts: HashMap<usize, u32> = HashMap::new();
    for _ in 0..draws {
        *counts
            .entry(select_host(&scores, &mut rng).unwrap())
            .or_default() += 1;
    }
    assert_eq!(counts.len(), ties.len(), "only tied best nodes are chosen");
    let expected = draws as f64 / ties.len() as f64;
    let chi2: f64 = ties
        .iter()
        .map(|i| {
            let d = f64::from(counts[i]) - expected;
            d * d / expected
        })
        .sum();
    assert!(chi2 < 24.32, "chi-square {chi2} too large: {counts:?}");
}

#[test]
fn round_robin_gives_every_node_a_turn() {
    // 1,000 nodes, adaptive: 420 nodes evaluated per cycle, start index advances by that.
    let snapshot = cluster(1000);
    let mut s = Profile::builder()
        .predicate(predicate_fn("AlwaysFits", |_, _| Ok(())))
        .priority(priority_fn("Zero", |_, _| 0), 1)
        .threads(1)
        .seed(1)
        .build_worker()
        .unwrap();
    let mut chosen_from = vec![false; 1000];
    let mut starts = vec![];
    for c in 0..3 {
        starts.push(s.next_start_index());
        let r = s.schedule(&pod(&format!("p{c}")), &snapshot).unwrap();
        assert_eq!(r.evaluated_nodes, 420);
        assert_eq!(r.feasible_nodes, 420);
        let table = s.last_scores();
        for i in 0..table.len() {
            chosen_from[table.row(i).0] = true;
        }
    }
    assert_eq!(starts, vec![0, 420, 840]);
    assert!(
        chosen_from.iter().all(|&b| b),
        "every node was considered within 3 cycles"
    );
    assert_eq!(s.next_start_index(), 260);
}

/// kube v1.34's findNodesThatPassFilters stops at the first feasible node beyond the
/// `numFeasibleNodesToFind` it needs (and drops it), so the nodes rejected before that one are
/// processed too: they are explained, counted as evaluated and advance the start index.
#[test]
fn the_search_ends_at_the_first_feasible_node_too_many() {
    // 300 nodes, adaptive: 48 % = 144 feasible nodes to find; the even nodes fit.
    let snapshot = cluster(300);
    let mut s = Profile::builder()
        .predicate(predicate_fn("EvenNodes", |_, n| {
            let i: usize = n.name()["node-".len()..].parse().unwrap();
            if i.is_multiple_of(2) {
                Ok(())
            } else {
                Err(Reason::Custom(1))
            }
        }))
        .priority(priority_fn("Zero", |_, _| 0), 1)
        .threads(1)
        .seed(1)
        .build_worker()
        .unwrap();
    // node-0 .. node-286 hold the 144 even nodes; node-288 is one too many, so node-287 is the
    // last node processed: 144 feasible and 144 rejected.
    let r = s.schedule(&pod("p0"), &snapshot).unwrap();
    assert_eq!((r.feasible_nodes, r.evaluated_nodes), (144, 288));
    assert_eq!(s.next_start_index(), 288);
    // From node-288: the 6 even nodes up to node-298, then node-0 .. node-274; node-276 is
    // one too many.
    let r = s.schedule(&pod("p1"), &snapshot).unwrap();
    assert_eq!((r.feasible_nodes, r.evaluated_nodes), (144, 288));
    assert_eq!(s.next_start_index(), 276);
}

#[test]
fn one_feasible_node_skips_scoring() {
    let snapshot = cluster(5);
    let mut s = Profile::builder()
        .predicate(predicate_fn("OnlyNode3", |_, n| {
            if n.name() == "node-3" {
                Ok(())
            } else {
                Err(Reason::Custom(7))
            }
        }))
        .priority(priority_fn("Bad", |_, _| 1000), 1)
        .seed(3)
        .build_worker()
        .unwrap();
    let r = s.schedule(&pod("p"), &snapshot).unwrap();
    assert_eq!(
        (r.node.as_str(), r.evaluated_nodes, r.feasible_nodes),
        ("node-3", 5, 1)
    );
}

#[test]
fn out_of_range_score_is_an_error() {
    let snapshot = cluster(3);
    let mut s = Profile::builder()
        .priority(priority_fn("TooBig", |_, _| 101), 1)
        .seed(3)
        .build_worker()
        .unwrap();
    let err = s.schedule(&pod("p"), &snapshot).unwrap_err();
    assert!(
        matches!(err, ScheduleError::InvalidScore { score: 101, .. }),
        "{err}"
    );
}

#[test]
fn weighted_scores_pick_the_best_node() {
    let snapshot = cluster(50);
    let mut s = Profile::builder()
        .priority(
            priority_fn(
                "PreferNode7",
                |_, n| if n.name() == "node-7" { 100 } else { 10 },
            ),
            3,
        )
        .priority(priority_fn("Flat", |_, _| 50), 2)
        .seed(9)
        .build_worker()
        .unwrap();
    let r = s.schedule(&pod("p"), &snapshot).unwrap();
    assert_eq!(r.node, "node-7");
    assert_eq!(r.score, 3 * 100 + 2 * 50);
}

#[test]
fn fit_error_summarizes_like_kube() {
    let mut nodes: Vec<Node> = (0..5).map(|i| node(&format!("n{i}"), "1")).collect();
    for n in nodes.iter_mut().take(2) {
        n.spec.taints.push(Taint {
            key: "dedicated".into(),
            value: "gpu".into(),
            effect: TaintEffect::NoSchedule,
        });
    }
    let snapshot = Snapshot::from_objects(nodes, vec![]).unwrap();
    let mut s = Profile::builder()
        .predicate(predicate_fn("Taints", |_, n| {
            if n.node().spec.taints.is_empty() {
                Ok(())
            } else {
                Err(Reason::UntoleratedTaint(0))
            }
        }))
        .predicate(predicate_fn("Cpu", |_, _| {
            Err(Reason::Insufficient(ResourceSet(ResourceSet::CPU)))
        }))
        .seed(1)
        .build_worker()
        .unwrap();
    let err = s.schedule(&pod("big"), &snapshot).unwrap_err();
    let ScheduleError::Unschedulable(fit) = err else {
        panic!("expected a FitError")
    };
    assert_eq!(
        fit.to_string(),
        "0/5 nodes are available: 2 node(s) had untolerated taint(s), 3 Insufficient cpu."
    );
    assert_eq!(fit.failures().len(), 5);
    assert_eq!(fit.failures()[0].codes[0].0, "Taints");
    // The recorded failures summarize and compare as the same failures written out.
    let written = FitError::new(fit.pod.clone(), fit.num_all_nodes, fit.failures().to_vec());
    assert_eq!(fit.histogram(), written.histogram());
    assert_eq!(fit.to_string(), written.to_string());
    assert_eq!(fit, written);
    let mut nodes = Vec::new();
    fit.for_each_node(&mut |n, reasons| nodes.push((n.to_string(), reasons.count())));
    let listed: Vec<(String, usize)> = written
        .failures()
        .iter()
        .map(|f| (f.node.clone(), f.codes.len()))
        .collect();
    assert_eq!(nodes, listed);
    assert_eq!(fit.num_failures(), 5);

    // With alwaysCheckAllPredicates every reason of every node is counted.
    let mut all = Profile::builder()
        .predicate(predicate_fn("Taints", |_, n| {
            if n.node().spec.taints.is_empty() {
                Ok(())
            } else {
                Err(Reason::UntoleratedTaint(0))
            }
        }))
        .predicate(predicate_fn("Cpu", |_, _| {
            Err(Reason::Insufficient(ResourceSet(
                ResourceSet::CPU | ResourceSet::MEMORY,
            )))
        }))
        .always_check_all_predicates(true)
        .seed(1)
        .build_worker()
        .unwrap();
    let ScheduleError::Unschedulable(fit) = all.schedule(&pod("big"), &snapshot).unwrap_err()
    else {
        panic!("expected a FitError")
    };
    assert_eq!(
        fit.to_string(),
        "0/5 nodes are available: 2 node(s) had untolerated taint(s), 5 Insufficient cpu, 5 Insufficient memory."
    );
}

#[test]
fn custom_reasons_use_the_predicate_text() {
    struct NeedsLabel;
    impl sched_core::framework::Predicate for NeedsLabel {
        type State = ();
        fn name(&self) -> &str {
            "NeedsLabel"
        }
        fn filter(
            &self,
            _: &sched_core::framework::CycleContext<'_>,
            _: &(),
            _: sched_core::snapshot::NodeRef<'_>,
        ) -> Result<(), Reason> {
            Err(Reason::Custom(1))
        }
        fn explain(&self, _: u32) -> std::borrow::Cow<'static, str> {
            "node(s) lacked the team label".into()
        }
    }
    let snapshot = cluster(3);
    let mut s = Profile::builder()
        .predicate(NeedsLabel)
        .seed(1)
        .build_worker()
        .unwrap();
    let err = s.schedule(&pod("p"), &snapshot).unwrap_err();
    assert_eq!(
        err.to_string(),
        "0/3 nodes are available: 3 node(s) lacked the team label."
    );
}

#[test]
fn no_nodes_is_an_error() {
    let mut s = Profile::builder().seed(1).build_worker().unwrap();
    assert!(matches!(
        s.schedule(&pod("p"), &Snapshot::new()),
        Err(ScheduleError::NoNodes)
    ));
}

#[test]
fn builder_validates() {
    assert!(
        Profile::builder()
            .percentage_of_nodes_to_score(101)
            .build_worker()
            .is_err()
    );
    assert!(Profile::builder().threads(0).build_worker().is_err());
    assert!(
        Profile::builder()
            .priority(priority_fn("A", |_, _| 0), 0)
            .build_worker()
            .is_err()
    );
    assert!(
        Profile::builder()
            .priority(priority_fn("A", |_, _| 0), i64::MAX / 100)
            .priority(priority_fn("B", |_, _| 0), 1)
            .build_worker()
            .is_err()
    );
    assert!(
        Profile::builder()
            .predicate(predicate_fn("A", |_, _| Ok(())))
            .predicate(predicate_fn("A", |_, _| Ok(())))
            .build_worker()
            .is_err()
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]
    #[test]
    fn one_and_many_threads_agree(nodes in 50usize..3000, seed: u64, pct in prop_oneof![Just(0u32), Just(100u32), 1u32..100], cycles in 1usize..4) {
        let snapshot = cluster(nodes);
        let build = |threads| Profile::builder()
            .predicate(predicate_fn("Hashed", hashed_fit(seed)))
            .priority(priority_fn("ByName", |_, n| (n.name().len() % 7) as i64 * 10), 1)
            .percentage_of_nodes_to_score(pct)
            .threads(threads)
            .parallel_threshold(0)
            .seed(seed)
            .build_worker()
            .unwrap();
        let (mut one, mut many) = (build(1), build(4));
        for c in 0..cycles {
            let p = pod(&format!("p{c}"));
            let a = one.schedule(&p, &snapshot);
            let b = many.schedule(&p, &snapshot);
            match (a, b) {
                (Ok(a), Ok(b)) => prop_assert_eq!(a, b),
                (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
                (a, b) => prop_assert!(false, "differ: {:?} vs {:?}", a, b),
            }
            prop_assert_eq!(one.next_start_index(), many.next_start_index());
        }
    }
}

#[test]
fn score_table_of_a_single_feasible_node_has_no_priority_rows() {
    let snapshot = cluster(4);
    let mut s = Profile::builder()
        .predicate(predicate_fn("OnlyNode2", |_, n| {
            if n.name() == "node-2" {
                Ok(())
            } else {
                Err(Reason::Custom(1))
            }
        }))
        .priority(priority_fn("Flat", |_, _| 50), 1)
        .seed(1)
        .build_worker()
        .unwrap();
    s.schedule(&pod("p"), &snapshot).unwrap();
    let t = s.last_scores();
    assert!(!t.scored());
    assert_eq!(t.len(), 1);
    assert_eq!(t.row(0), (2, 0, vec![]));
}

/// One `Profile` shared by two threads, each with its own `Cache`: each thread's decisions are
/// exactly those of the same cache used alone, so workers never disturb each other.
#[test]
fn one_profile_two_caches_on_two_threads() {
    use std::sync::Arc;
    let (nodes, running) = sched_core::bench_cluster::benchmark_cluster(300);
    let snapshot = Snapshot::from_objects(nodes, running).unwrap();
    let profile = Arc::new(
        sched_core::policy::Policy::kube_default()
            .builder()
            .unwrap()
            .threads(1)
            .build()
            .unwrap(),
    );
    let run = |profile: &Profile, seed: u64, snapshot: &mut Snapshot| -> Vec<String> {
        let mut cache = sched_core::profile::Cache::seeded(seed);
        (0..200)
            .map(|i| {
                let pod = sched_core::bench_cluster::benchmark_pod(i + seed as usize * 1000);
                profile
                    .schedule_and_assume(&mut cache, &pod, snapshot)
                    .unwrap()
                    .node
            })
            .collect()
    };
    let alone: Vec<Vec<String>> = (1..=2)
        .map(|seed| run(&profile, seed, &mut snapshot.clone()))
        .collect();
    let threads: Vec<_> = (1..=2u64)
        .map(|seed| {
            let (profile, mut snapshot) = (Arc::clone(&profile), snapshot.clone());
            std::thread::spawn(move || run(&profile, seed, &mut snapshot))
        })
        .collect();
    let together: Vec<Vec<String>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(together, alone);
    assert_ne!(alone[0], alone[1], "different seeds break ties differently");
}
