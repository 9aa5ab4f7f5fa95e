//! Temporary profiling driver.
use std::time::Instant;
use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::policy::Policy;
use sched_core::snapshot::Snapshot;

fn main() {
    let arg = std::env::args().nth(1).unwrap_or_default();
    let (n, p) = benchmark_cluster(5000);
    let base = Snapshot::from_objects(n, p).unwrap();
    let profile = if arg == "legacy" {
        let mut policy = Policy::kube_default();
        policy.percentage_of_nodes_to_score = Some(100);
        policy.builder().unwrap().threads(1).seed(42).build().unwrap()
    } else {
        let mut text = String::from("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\npercentageOfNodesToScore: 100\n");
        if !arg.is_empty() {
            text.push_str(&format!("profiles:\n- plugins:\n    multiPoint:\n      disabled:\n"));
            for a in arg.split(',') { text.push_str(&format!("      - name: {a}\n")); }
        }
        let c = SchedulerConfiguration::from_text(&text).unwrap();
        c.builders(&Registry::v1_34()).unwrap().remove(0).1.threads(1).seed(42).build().unwrap()
    };
    let mut best = f64::MAX;
    for round in 0..5 {
        let mut snapshot = base.clone();
        let mut cache = profile.create_cache();
        let t = Instant::now();
        for i in 0..2000 {
            let pod = benchmark_pod(round * 10000 + i);
            profile.schedule_and_assume(&mut cache, &pod, &mut snapshot).unwrap();
        }
        best = best.min(t.elapsed().as_secs_f64() / 2000.0 * 1e6);
    }
    println!("{arg}: {best:.1} us/pod");
}
