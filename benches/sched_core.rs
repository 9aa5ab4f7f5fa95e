//! sched-core benchmarks: one pod per iteration on the benchmark cluster (see
//! `sched_core::bench_cluster`), with kube's default predicates and priorities, all nodes scored and
//! adaptive; building a snapshot of 15,000 nodes and 150,000 pods; and the engine's whole
//! cycle per pod (`cycle/`).

use std::time::{Duration, Instant};

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::policy::Policy;
use sched_core::profile::Profile;
use sched_core::snapshot::Snapshot;

/// kube's default policy compiled into a single-threaded profile.
fn default_profile(percentage: u32) -> Profile {
    let mut policy = Policy::kube_default();
    policy.percentage_of_nodes_to_score = Some(i64::from(percentage));
    policy
        .builder()
        .and_then(|b| Ok(b.threads(1).seed(42).build()?))
        .expect("default policy compiles")
}

/// kube-scheduler v1.34's default plugins from a `KubeSchedulerConfiguration`, single-threaded.
fn v1_34_profile(percentage: u32) -> Profile {
    let config = SchedulerConfiguration::from_text(&format!(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         percentageOfNodesToScore: {percentage}\n"
    ))
    .expect("valid configuration");
    let mut builders = config.builders(&Registry::v1_34()).expect("compiles");
    builders
        .remove(0)
        .1
        .threads(1)
        .seed(42)
        .build()
        .expect("builds")
}

/// One pod per iteration with `profile`, placed pods leaving again so the cluster never fills.
fn bench_profile(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    id: BenchmarkId,
    base: &Snapshot,
    profile: &Profile,
    nodes: usize,
) {
    let mut snapshot = base.clone();
    let mut cache = profile.create_cache();
    let mut next = 0usize;
    let mut placed: std::collections::VecDeque<sched_core::model::PodKey> = Default::default();
    group.bench_with_input(id, &nodes, |b, _| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let pod = benchmark_pod(next);
                next += 1;
                let t = Instant::now();
                let r = profile
                    .schedule_and_assume(&mut cache, &pod, &mut snapshot)
                    .expect("fits");
                total += t.elapsed();
                std::hint::black_box(r);
                placed.push_back(pod.key());
                // Keep the cluster from filling up over millions of iterations: the
                // oldest placed pods leave again (untimed).
                if placed.len() > nodes * 4 {
                    let key = placed.pop_front().expect("non-empty");
                    snapshot.forget(&key).expect("placed pod");
                }
            }
            total
        })
    });
}

fn schedule(c: &mut Criterion) {
    let mut group = c.benchmark_group("schedule_one_pod");
    group.sample_size(30);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    for &nodes in &[100usize, 1_000, 5_000, 15_000] {
        let (node_list, pods) = benchmark_cluster(nodes);
        let base = Snapshot::from_objects(node_list, pods).expect("snapshot");
        for (label, pct) in [("all_nodes", 100u32), ("adaptive", 0u32)] {
            let profile = default_profile(pct);
            bench_profile(
                &mut group,
                BenchmarkId::new(label, nodes),
                &base,
                &profile,
                nodes,
            );
        }
    }
    group.finish();
}

/// The legacy default Policy and kube-scheduler v1.34's default profile, one after the other
/// in the same run, at 5,000 nodes with every node scored.
fn v1_34_default(c: &mut Criterion) {
    let mut group = c.benchmark_group("default_profiles_5000_nodes_all_scored");
    group.sample_size(30);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(3));
    let nodes = 5_000;
    let (node_list, pods) = benchmark_cluster(nodes);
    let base = Snapshot::from_objects(node_list, pods).expect("snapshot");
    for round in 0..2 {
        for (label, profile) in [
            ("legacy_policy", default_profile(100)),
            ("v1_34_config", v1_34_profile(100)),
        ] {
            bench_profile(
                &mut group,
                BenchmarkId::new(label, round),
                &base,
                &profile,
                nodes,
            );
        }
    }
    group.finish();
}

fn snapshot_build(c: &mut Criterion) {
    let mut group = c.benchmark_group("snapshot_build");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(8));
    let (nodes, pods) = benchmark_cluster(15_000);
    group.bench_function("15000_nodes_150000_pods", |b| {
        b.iter_batched(
            || (nodes.clone(), pods.clone()),
            |(n, p)| Snapshot::from_objects(n, p).expect("snapshot"),
            criterion::BatchSize::LargeInput,
        )
    });
    group.finish();
}

/// The engine's whole cycle per pod at 1,000 nodes with kube v1.34's default profile: the pod's
/// add event, `schedule_one`, the bind's result, the informer's report of it bound, and its
/// deletion (so the cluster never fills).
fn cycle(c: &mut Criterion) {
    use sched_core::scheduler::{ClusterEvent, ObjectKey, Scheduler, Step};
    let mut group = c.benchmark_group("cycle");
    group.sample_size(30);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));
    let nodes = 1_000;
    let (node_list, pods) = benchmark_cluster(nodes);
    let snapshot = Snapshot::from_objects(node_list, pods).expect("snapshot");
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n",
    )
    .expect("valid configuration");
    let mut sched =
        Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 42).expect("compiles");
    let now = Duration::ZERO;
    let mut next = 0usize;
    group.bench_function("engine_1000_nodes", |b| {
        b.iter(|| {
            let mut pod = benchmark_pod(next);
            next += 1;
            sched.apply(ClusterEvent::add(pod.clone()), now);
            let Step::Bind { pod: key, node, .. } = sched.schedule_one(now) else {
                panic!("the benchmark cluster takes every pod");
            };
            sched.finish_binding(&key, Ok(()), now);
            pod.spec.node_name = node;
            sched.apply(ClusterEvent::update(pod), now);
            sched.apply(ClusterEvent::Delete(ObjectKey::pod(key)), now);
        })
    });
    group.finish();
}

criterion_group!(benches, schedule, v1_34_default, snapshot_build, cycle);
criterion_main!(benches);
