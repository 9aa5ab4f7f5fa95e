//! A custom predicate next to kube's built-ins: keep `team=ml` pods on nodes of their team.
//!
//! ```sh
//! cargo run --example custom_predicate
//! ```

use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
use sched_core::framework::{Reason, predicate_fn};
use sched_core::policy::Policy;
use sched_core::profile::ScheduleError;
use sched_core::snapshot::Snapshot;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // 30 synthetic nodes; label every third one for the ML team.
    let (mut nodes, pods) = benchmark_cluster(30);
    for n in nodes.iter_mut().step_by(3) {
        n.metadata.labels.insert("team".into(), "ml".into());
    }
    let mut snapshot = Snapshot::from_objects(nodes, pods)?;

    // A closure is enough for a simple rule. Reason::Custom codes become text through the
    // predicate's `explain`; a closure predicate gets a generic text.
    let same_team = predicate_fn("SameTeam", |pod, node| {
        match (
            pod.metadata.labels.get("team"),
            node.node().metadata.labels.get("team"),
        ) {
            (Some(want), have) if have != Some(want) => Err(Reason::Custom(1)),
            _ => Ok(()),
        }
    });

    // kube's default policy plus the custom predicate.
    let profile = Policy::kube_default()
        .builder()?
        .predicate(same_team)
        .seed(1)
        .build()?;
    // What a scheduling worker writes (buffers, tie-breaking RNG, round-robin index).
    let mut cache = profile.create_cache();

    for i in 0..5 {
        let mut pod = benchmark_pod(i);
        pod.metadata.labels.insert("team".into(), "ml".into());
        let r = profile.schedule_and_assume(&mut cache, &pod, &mut snapshot)?;
        println!(
            "{} -> {} ({} feasible of {})",
            pod.key(),
            r.node,
            r.feasible_nodes,
            snapshot.len()
        );
    }

    // A pod no team node can hold gets kube's explanation.
    let mut huge = benchmark_pod(99);
    huge.metadata.labels.insert("team".into(), "ml".into());
    huge.spec.containers[0]
        .resources
        .requests
        .insert("cpu".into(), "30".parse()?);
    match profile.schedule(&mut cache, &huge, &snapshot) {
        Err(ScheduleError::Unschedulable(fit)) => println!("{}: {fit}", huge.key()),
        other => println!("unexpected: {other:?}"),
    }
    Ok(())
}
