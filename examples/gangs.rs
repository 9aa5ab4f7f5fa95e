//! Gang scheduling through sched-driver: 20 gangs of 8 (`minMember` 8) beside ordinary pods
//! on 300 nodes, bound by an in-memory binder.
//!
//! - 16 small gangs (8 x 1 CPU) fit at once.
//! - 3 big gangs (8 x 3 CPU) fit nowhere at first: every node runs a 2-CPU workload. When the
//!   workloads of 40 nodes finish (their pods deleted), the big gangs are placed.
//! - 1 gang has a member held by a scheduling gate: its other 7 wait at Permit for 1 s
//!   (`scheduleTimeoutSeconds`) and are released together when the wait runs out.
//!
//! Prints each gang's fate (placed, waiting, timed out, not placed) and the time from its
//! submission to its last member bound, and exits non-zero if any gang is partly bound.
//!
//! ```sh
//! cargo run --release --example gangs
//! ```

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{Node, Pod, PodGroup};
use sched_core::scheduler::gang::CoschedulingArgs;
use sched_core::scheduler::{ClusterEvent, ObjectKey, Scheduler};
use sched_core::snapshot::Snapshot;
use sched_driver::{BindError, Binder, Binding, Driver, DriverEvent, StepTaken};

const NODES: usize = 300;
const GANG_SIZE: usize = 8;
const SMALL_GANGS: usize = 16;
const BIG_GANGS: usize = 3;
const FREED_NODES: usize = 40;

fn node(i: usize) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": format!("node-{i:03}"),
                     "labels": {"kubernetes.io/hostname": format!("node-{i:03}")}},
        "status": {"allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .expect("a valid node")
}

fn pod(name: &str, milli_cpu: u32, group: Option<&str>, node: Option<&str>) -> Pod {
    let mut v = serde_json::json!({
        "metadata": {"name": name, "namespace": "batch", "uid": name},
        "spec": {"containers": [{"name": "c", "image": "pause",
            "resources": {"requests": {"cpu": format!("{milli_cpu}m"), "memory": "256Mi"}}}]}
    });
    if let Some(g) = group {
        v["metadata"]["labels"] = serde_json::json!({"scheduling.x-k8s.io/pod-group": g});
    }
    if let Some(n) = node {
        v["spec"]["nodeName"] = serde_json::json!(n);
    }
    serde_json::from_value(v).expect("a valid pod")
}

fn pod_group(name: &str, timeout_seconds: i32) -> PodGroup {
    serde_json::from_value(serde_json::json!({
        "apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
        "metadata": {"name": name, "namespace": "batch"},
        "spec": {"minMember": GANG_SIZE, "scheduleTimeoutSeconds": timeout_seconds}
    }))
    .expect("a valid PodGroup")
}

/// The API server's side of binding, in memory: when each pod was bound, and where.
#[derive(Clone, Default)]
struct MemoryBinder {
    bound: Arc<Mutex<HashMap<String, (String, Instant)>>>,
}

#[sched_driver::async_trait]
impl Binder for MemoryBinder {
    async fn bind(&self, b: &Binding) -> Result<(), BindError> {
        let mut bound = self.bound.lock().expect("not poisoned");
        bound.insert(b.pod.to_string(), (b.node.clone(), Instant::now()));
        Ok(())
    }
}

/// The gangs whose members a Permit timeout released, from the driver's events.
type TimedOut = Arc<Mutex<BTreeSet<String>>>;

fn gang_of(pod: &str) -> Option<String> {
    let name = pod.strip_prefix("batch/")?;
    name.starts_with("gang-")
        .then(|| name.rsplit_once('-').map(|(g, _)| g.to_string()))
        .flatten()
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let started = Instant::now();
    // Every node runs a 2-CPU workload.
    let nodes: Vec<Node> = (0..NODES).map(node).collect();
    let running: Vec<Pod> = (0..NODES)
        .map(|i| {
            pod(
                &format!("workload-{i:03}"),
                2000,
                None,
                Some(&format!("node-{i:03}")),
            )
        })
        .collect();
    let snapshot = Snapshot::from_objects(nodes, running)?;
    let config = SchedulerConfiguration::v1_34_default();
    let scheduler = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1)?
        .with_coscheduling(CoschedulingArgs::default());
    let binder = MemoryBinder::default();
    let driver = Driver::builder(scheduler)
        .binder(binder.clone())
        .event_capacity(1 << 16)
        .build()?;
    let handle = driver.handle();
    let timed_out = TimedOut::default();
    let mut events = handle.subscribe();
    let watcher = {
        let timed_out = timed_out.clone();
        tokio::spawn(async move {
            while let Ok(event) = events.recv().await {
                if let DriverEvent::Step(StepTaken::Rejected { pod, reason, .. }) = event
                    && reason.contains("timeout")
                    && let Some(g) = gang_of(&pod)
                {
                    timed_out.lock().expect("not poisoned").insert(g);
                }
            }
        })
    };
    let running = tokio::spawn(driver.run(std::future::pending()));

    // The batch: gangs, then ordinary pods, all at once.
    let submitted = Instant::now();
    let mut gangs: Vec<(String, u32)> = Vec::new();
    for i in 0..SMALL_GANGS {
        gangs.push((format!("gang-small{i:02}"), 1000));
    }
    for i in 0..BIG_GANGS {
        gangs.push((format!("gang-big{i}"), 3000));
    }
    gangs.push(("gang-gated".to_string(), 1000));
    for (name, milli_cpu) in &gangs {
        handle.apply(ClusterEvent::add(pod_group(name, 1)))?;
        for j in 0..GANG_SIZE {
            let mut p = pod(&format!("{name}-{j}"), *milli_cpu, Some(name), None);
            if name == "gang-gated" && j == GANG_SIZE - 1 {
                p.spec.scheduling_gates =
                    vec![serde_json::from_value(serde_json::json!({"name": "hold"}))?];
            }
            handle.apply(ClusterEvent::add(p))?;
        }
    }
    for i in 0..100 {
        handle.apply(ClusterEvent::add(pod(
            &format!("web-{i:03}"),
            500,
            None,
            None,
        )))?;
    }
    handle.settled().await?;
    let first_wave = binder.bound.lock().expect("not poisoned").len();

    // The workloads of 40 nodes finish: room for the big gangs.
    for i in 0..FREED_NODES {
        handle.apply(ClusterEvent::Delete(ObjectKey::pod(format!(
            "batch/workload-{i:03}"
        ))))?;
    }
    let freed = Instant::now();
    handle.settled().await?;
    handle.shutdown();
    let scheduler = running.await??;
    watcher.abort();

    let bound = binder.bound.lock().expect("not poisoned");
    let timed_out = timed_out.lock().expect("not poisoned");
    let mut waiting: BTreeMap<String, usize> = BTreeMap::new();
    for (pod, _) in scheduler.waiting() {
        if let Some(g) = gang_of(pod) {
            *waiting.entry(g).or_default() += 1;
        }
    }
    let mut partly = Vec::new();
    println!(
        "{:<16} {:>6} {:>8}  {:<10} time to place (from submission, big gangs from the \
         workloads' end)",
        "gang", "bound", "waiting", "state"
    );
    for (name, _) in &gangs {
        let members: Vec<&(String, Instant)> = (0..GANG_SIZE)
            .filter_map(|j| bound.get(&format!("batch/{name}-{j}")))
            .collect();
        let waiting = waiting.get(name).copied().unwrap_or(0);
        let state = match members.len() {
            n if n == GANG_SIZE => "placed",
            0 if waiting > 0 => "waiting",
            0 if timed_out.contains(name) => "timed out",
            0 => "not placed",
            _ => "PARTIAL",
        };
        if state == "PARTIAL" {
            partly.push(name.clone());
        }
        let time = members
            .iter()
            .map(|(_, t)| {
                let since = if name.starts_with("gang-big") {
                    freed
                } else {
                    submitted
                };
                t.duration_since(since)
            })
            .max()
            .filter(|_| members.len() == GANG_SIZE)
            .map_or("-".to_string(), |d: Duration| {
                format!("{:.1} ms", d.as_secs_f64() * 1e3)
            });
        println!(
            "{name:<16} {:>6} {waiting:>8}  {state:<10} {time}",
            members.len()
        );
    }
    let ordinary = bound.keys().filter(|k| k.starts_with("batch/web-")).count();
    println!(
        "ordinary pods bound: {ordinary}/100; pods bound before the workloads ended: \
         {first_wave}, after: {}; total {:.2} s",
        bound.len(),
        started.elapsed().as_secs_f64()
    );
    if !partly.is_empty() {
        eprintln!("partly bound gangs: {partly:?}");
        std::process::exit(1);
    }
    Ok(())
}
