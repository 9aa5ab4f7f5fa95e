//! A custom priority with its own normalization: prefer nodes with the fewest pods, weighted
//! against kube's LeastRequestedPriority.
//!
//! ```sh
//! cargo run --example custom_priority
//! ```

use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
use sched_core::formulas::default_normalize;
use sched_core::framework::{CycleContext, Priority};
use sched_core::plugins::resource::LeastRequestedPriority;
use sched_core::profile::Profile;
use sched_core::snapshot::NodeRef;
use sched_core::snapshot::Snapshot;

/// Raw score: the number of pods on the node; normalized in reverse so the emptiest node
/// scores 100. Reads the dense per-node summary, so it costs a few nanoseconds per node.
struct FewestPods;

impl Priority for FewestPods {
    type State = ();

    fn name(&self) -> &str {
        "FewestPods"
    }

    fn score(&self, _cx: &CycleContext<'_>, _: &(), node: NodeRef<'_>) -> i64 {
        i64::from(node.summary().pod_count)
    }

    fn normalize(&self, _cx: &CycleContext<'_>, _: &(), scores: &mut [i64]) {
        default_normalize(100, true, scores);
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (nodes, mut pods) = benchmark_cluster(8);
    // Node 5 runs only one pod.
    pods.retain(|p| p.spec.node_name != "node-5" || p.metadata.name.ends_with("-0"));
    let mut snapshot = Snapshot::from_objects(nodes, pods)?;
    let profile = Profile::builder()
        .priority(FewestPods, 2)
        .priority(LeastRequestedPriority::new(), 1)
        .seed(1)
        .build()?;
    let mut cache = profile.create_cache();
    for i in 0..3 {
        let pod = benchmark_pod(i);
        let r = profile.schedule_and_assume(&mut cache, &pod, &mut snapshot)?;
        let table = profile.last_scores(&cache);
        let best = (0..table.len()).map(|k| table.row(k)).max_by_key(|r| r.1);
        println!(
            "{} -> {} (score {}; best row {:?})",
            pod.key(),
            r.node,
            r.score,
            best
        );
    }
    Ok(())
}
