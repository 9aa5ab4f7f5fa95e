//! Gang scheduling through the engine: 1,000 gangs of 8 pods (PodGroups with `minMember` 8,
//! scheduler-plugins' Coscheduling) placed on the 5,000-node benchmark cluster, every pod
//! through PreFilter, the profile, Permit (7 members wait, the 8th allows them all) and the
//! bind. One iteration places every gang; the throughput is in pods. Beside it, the same pods
//! without groups and without Coscheduling (`plain`), for the cost of gang scheduling. Set
//! `GANG_BENCH_GANGS` and `GANG_BENCH_NODES` for other sizes.

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_main};
use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{POD_GROUP_LABEL, PodGroup};
use sched_core::scheduler::gang::CoschedulingArgs;
use sched_core::scheduler::{ClusterEvent, Scheduler, Step};
use sched_core::snapshot::Snapshot;

const GANG: usize = 8;

fn env(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The engine over `nodes` nodes with `gangs` groups of 8 pending pods queued (`gang`), or
/// the same pods without groups and without Coscheduling.
fn setup(nodes: usize, gangs: usize, gang: bool) -> Scheduler {
    let (node_list, running) = benchmark_cluster(nodes);
    let snapshot = Snapshot::from_objects(node_list, running).expect("benchmark cluster");
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         profiles:\n- schedulerName: default-scheduler\n",
    )
    .expect("config");
    let mut s =
        Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1).expect("scheduler");
    if gang {
        s = s.with_coscheduling(CoschedulingArgs::default());
    }
    let now = Duration::ZERO;
    for g in 0..gangs {
        let pg: PodGroup = serde_json::from_value(serde_json::json!({
            "metadata": {"name": format!("gang-{g}"), "namespace": "default"},
            "spec": {"minMember": GANG}
        }))
        .expect("pod group");
        if gang {
            s.apply(ClusterEvent::add(pg), now);
        }
        for m in 0..GANG {
            let mut p = benchmark_pod(g * GANG + m);
            if gang {
                p.metadata
                    .labels
                    .insert(POD_GROUP_LABEL.into(), format!("gang-{g}"));
            }
            s.apply(ClusterEvent::add(p), now);
        }
    }
    s
}

/// Places every gang: binds each pod handed out. Returns the pods bound.
fn place(s: &mut Scheduler) -> usize {
    let now = Duration::ZERO;
    let mut bound = 0;
    loop {
        match s.schedule_one(now) {
            Step::Bind { pod, .. } => {
                s.finish_binding(&pod, Ok(()), now);
                bound += 1;
            }
            Step::Waiting { .. } => {}
            Step::Idle { .. } => return bound,
            other => panic!("unexpected step {other:?}"),
        }
    }
}

fn gangs(c: &mut Criterion) {
    let nodes = env("GANG_BENCH_NODES", 5_000);
    let gangs = env("GANG_BENCH_GANGS", 1_000);
    let pods = gangs * GANG;
    // One timed run of each, reported in the terms of the issue.
    for gang in [true, false] {
        let mut s = setup(nodes, gangs, gang);
        let start = Instant::now();
        assert_eq!(place(&mut s), pods);
        let took = start.elapsed();
        println!(
            "gang_place ({}): {gangs} x {GANG} pods on {nodes} nodes: {:.3} s, {:.0} pods/s, {:.3} ms per group of {GANG}",
            if gang { "gangs" } else { "plain" },
            took.as_secs_f64(),
            pods as f64 / took.as_secs_f64(),
            took.as_secs_f64() * 1e3 / gangs as f64
        );
    }
    let mut g = c.benchmark_group("gang_place");
    g.sample_size(10);
    g.throughput(Throughput::Elements(pods as u64));
    for (name, gang) in [("gangs", true), ("plain", false)] {
        g.bench_function(format!("{name}_{gangs}x{GANG}_on_{nodes}"), |b| {
            b.iter_custom(|iters| {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let mut s = setup(nodes, gangs, gang);
                    let start = Instant::now();
                    assert_eq!(place(&mut s), pods);
                    total += start.elapsed();
                }
                total
            })
        });
    }
    g.finish();
}

fn benches() {
    let mut c = Criterion::default().configure_from_args();
    gangs(&mut c);
}

criterion_main!(benches);
