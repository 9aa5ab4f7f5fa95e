//! Profiling driver (not documented in the README): schedules pods on the benchmark cluster.
//!
//! `profile_schedule [nodes] [pods] [percentage]`, defaults 5000 nodes, 2000 pods, 100 %.
//! Prints the mean wall time per pod, the CPU time per pod (less sensitive to other processes
//! on a shared machine) and the best mean over batches of 100 pods, plus a checksum of the
//! decisions (equal checksums: the same nodes and scores were chosen).
use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
use sched_core::policy::Policy;
use sched_core::snapshot::Snapshot;
use std::time::{Duration, Instant};

/// User plus system CPU time of this process, from /proc (Linux; zero elsewhere).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = after
        .split_whitespace()
        .skip(11)
        .take(2)
        .filter_map(|s| s.parse().ok())
        .collect();
    Duration::from_millis(f.iter().sum::<u64>() * 10)
}

fn main() {
    let arg = |i: usize, d: usize| {
        std::env::args()
            .nth(i)
            .and_then(|s| s.parse().ok())
            .unwrap_or(d)
    };
    let (nodes, pods, pct) = (arg(1, 5000), arg(2, 2000), arg(3, 100));
    let (n, p) = benchmark_cluster(nodes);
    let mut snapshot = Snapshot::from_objects(n, p).unwrap();
    let mut policy = Policy::kube_default();
    policy.percentage_of_nodes_to_score = Some(pct as i64);
    let profile = policy
        .builder()
        .unwrap()
        .threads(1)
        .seed(1)
        .build()
        .unwrap();
    let mut cache = profile.create_cache();
    let mut checksum = 0usize;
    let (mut best, mut batch) = (Duration::MAX, Duration::ZERO);
    let (t, cpu) = (Instant::now(), cpu_time());
    for i in 0..pods {
        let pod = benchmark_pod(i);
        let t = Instant::now();
        let r = profile
            .schedule_and_assume(&mut cache, &pod, &mut snapshot)
            .unwrap();
        batch += t.elapsed();
        if i % 100 == 99 {
            best = best.min(batch / 100);
            batch = Duration::ZERO;
        }
        checksum = checksum
            .wrapping_mul(31)
            .wrapping_add(r.node_index ^ r.score as usize);
    }
    println!(
        "{:?} per pod, cpu {:?}, best batch {:?} ({nodes} nodes, {pct} %, checksum {checksum:x})",
        t.elapsed() / pods as u32,
        (cpu_time() - cpu) / pods as u32,
        best,
    );
}
