//! The benchmark peer's sched-core side: a workload of kube's scheduler_perf, exported by
//! `reference/cmd/perf export` as a case folder (the objects kube's own files describe, in
//! kube's order), through sched-core's scheduling engine, timed the way `perf time` times
//! kube-scheduler on the same folder.
//!
//! The engine starts from the case's objects as informers list them, one thread. The init pods
//! go through it untimed. Each measured pod is then added (untimed) and timed through its
//! scheduling cycles: [`Scheduler::schedule_one`] until it is bound, with the bind confirmed
//! untimed; a preemption's victims are deleted untimed (kube's informer would report them) and
//! the pod's retry on its nominated node is timed too. kube's side times its SchedulePod,
//! assume, Reserve and Permit, PostFilter and retry; neither side times the queue's waits or the
//! binding. A bound pod's ResourceClaims (DynamicResources' [`Step::Bind`] `claims`) are
//! confirmed in the engine's snapshot by [`Scheduler::finish_binding`], with their allocations
//! and the pod in `reservedFor`, as kube's PreBind writes them (untimed on both sides). In a
//! steady-state workload ([`WorkloadMeta::steady_state`]) each placed measured pod is then
//! deleted with its claims, untimed, on both sides. With pod churn ([`WorkloadMeta::churn`],
//! kube's `churn` op), churn pods enter on each side's own clock and are scheduled and timed
//! as the measured pods, their time counted in the next measured pod's. Each
//! measured pod's node is recorded ([`Timings::placements`]) so that the two sides can be
//! compared.

use std::path::Path;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use sched_core::config::Registry;
use sched_core::model::{Pod, PodKey, Role, load_file};
use sched_core::scheduler::{ClusterEvent, ObjectKey, QueueName, Scheduler, Step};
use sched_core::snapshot::Snapshot;

use crate::case::Case;

/// `workload.json` of an exported workload.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkloadMeta {
    /// kube's test case (`SchedulingBasic`).
    pub test_case: String,
    /// The workload (`5000Nodes`).
    pub workload: String,
    /// The performance-config.yaml it came from, relative to scheduler_perf.
    #[serde(default)]
    pub file: String,
    /// Pending pods scheduled untimed first.
    pub init_pods: usize,
    /// Pending pods timed after them.
    pub measured_pods: usize,
    /// Ops of the workload the export does not reproduce.
    #[serde(default)]
    pub unsupported: Vec<String>,
    /// The measured pods come from kube's steady-state `createPods`: each is deleted, with
    /// the claims made for it, once placed (untimed), so the cluster stays as the init ops
    /// left it.
    #[serde(default)]
    pub steady_state: bool,
    /// Pods entering while the measured pods are scheduled (kube's churn op of pods), if
    /// any; the pods are in [`CHURN_FILE`].
    #[serde(default)]
    pub churn: Option<ChurnMeta>,
}

/// The file of a case folder holding its churn pods, in the order they enter.
pub const CHURN_FILE: &str = "churn.json";

/// `workload.json`'s `churn`: every `interval_millis` of a side's scheduling time, the next
/// `pods_per_tick` pods of [`CHURN_FILE`] enter; the file holds `ticks` ticks.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChurnMeta {
    /// Milliseconds between two ticks (kube's `intervalMilliseconds`).
    pub interval_millis: u64,
    /// Pods entering at each tick (one per template).
    pub pods_per_tick: usize,
    /// Ticks the file holds.
    pub ticks: usize,
}

/// The timings of one side on one workload (the JSON both `perf time` and [`run`] write).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Timings {
    /// `kube-scheduler` or `sched-core`.
    pub side: String,
    /// `TestCase/Workload`.
    pub workload: String,
    /// Threads the side scheduled with (kube: its parallelism).
    pub parallelism: usize,
    /// Percentage of nodes to score (0: adaptive).
    pub percentage: u32,
    /// Nodes.
    pub nodes: usize,
    /// Init pods.
    pub init_pods: usize,
    /// Seconds the init pods took.
    pub init_seconds: f64,
    /// Each measured pod's time, in nanoseconds.
    pub nanos: Vec<u64>,
    /// Measured pods left unschedulable.
    pub unschedulable: usize,
    /// Preemptions among the measured pods.
    pub preemptions: usize,
    /// Victims of those preemptions.
    pub victims: usize,
    /// The node of each measured pod, in order (empty for a pod left unschedulable).
    #[serde(default)]
    pub placements: Vec<String>,
    /// ResourceClaims written for placed pods, init and measured (kube's PreBind: allocation
    /// and `reservedFor`).
    #[serde(default)]
    pub claims_written: usize,
    /// Churn pods that entered while the measured pods were scheduled.
    #[serde(default)]
    pub churn_pods: usize,
    /// How many of them were placed.
    #[serde(default)]
    pub churn_placed: usize,
    /// The clock reached a tick past the last of the churn file's pods.
    #[serde(default)]
    pub churn_exhausted: bool,
    /// Cycles of pods tried again while a later pod was being run, requeued by the events
    /// the runs brought (with kube's queueing hints, a churn pod that fits no node is not
    /// requeued by pods being bound). kube's side runs no queue: 0 there.
    #[serde(default)]
    pub requeued_cycles: usize,
}

/// How [`run_with`] runs a workload.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct RunOptions {
    /// Percentage of nodes to score where the configuration sets none (0: adaptive).
    pub percentage: u32,
    /// Measured pods to run at most (all with `None`).
    pub measure: Option<usize>,
    /// The churn interval instead of the workload's (tests: a tiny one lets the churn pods
    /// in deterministically, all of them after the first measured pod).
    pub churn_interval: Option<Duration>,
}

impl RunOptions {
    /// Options with `percentage` and `measure`, the workload's churn interval.
    pub fn new(percentage: u32, measure: Option<usize>) -> RunOptions {
        RunOptions {
            percentage,
            measure,
            churn_interval: None,
        }
    }
}

/// A workload that could not be run.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PerfError {
    /// The folder could not be read.
    #[error("{0}")]
    Read(String),
    /// The engine could not be built from the configuration.
    #[error("configuration: {0}")]
    Config(String),
    /// The engine did something a workload pod cannot lead to.
    #[error("{pod}: {what}")]
    Unexpected {
        /// The pod.
        pod: PodKey,
        /// What happened.
        what: String,
    },
}

/// Reads an exported workload's `workload.json`.
pub fn read_meta(dir: &Path) -> Result<WorkloadMeta, PerfError> {
    let path = dir.join("workload.json");
    let text = std::fs::read_to_string(&path)
        .map_err(|e| PerfError::Read(format!("{}: {e}", path.display())))?;
    serde_json::from_str(&text).map_err(|e| PerfError::Read(format!("{}: {e}", path.display())))
}

/// Simulated time between two measured pods.
const CLOCK_STEP: Duration = Duration::from_millis(10);

/// The engine and the pods it holds, driven as a caller drives it.
struct Driver {
    sched: Scheduler,
    now: Duration,
    /// Pods added and not yet bound, by key.
    pending: std::collections::HashMap<PodKey, Pod>,
    preemptions: usize,
    victims: usize,
    /// ResourceClaims the binds wrote.
    claims_written: usize,
    /// Cycles of other pods than the one being run (requeued ones).
    requeued_cycles: usize,
}

/// How one pod's scheduling went.
struct PodRun {
    /// The node it was bound to, if any.
    node: Option<String>,
    timed: Duration,
}

impl Driver {
    /// Adds `pod` (untimed) and steps the engine until the pod is bound or left
    /// unschedulable. Time spent in [`Scheduler::schedule_one`] is timed; binds, deletions of
    /// victims and the clock's jumps over backoffs are not.
    fn run(&mut self, pod: Pod) -> Result<PodRun, PerfError> {
        let key = pod.key();
        self.pending.insert(key.clone(), pod.clone());
        self.sched.apply(ClusterEvent::add(pod), self.now);
        let mut timed = Duration::ZERO;
        loop {
            let start = Instant::now();
            let step = self.sched.schedule_one(self.now);
            timed += start.elapsed();
            match step {
                Step::Bind {
                    pod, node, claims, ..
                } => {
                    // The bind succeeded: the engine confirms the claims' allocations and
                    // `reservedFor` in its snapshot, as kube's PreBind writes them and its
                    // assume cache holds them (`AssumeClaimAfterAPICall`).
                    self.claims_written += claims.len();
                    self.sched.finish_binding(&pod, Ok(()), self.now);
                    if let Some(mut p) = self.pending.remove(&pod) {
                        p.spec.node_name.clone_from(&node);
                        self.sched.apply(ClusterEvent::update(p), self.now);
                    }
                    if pod == key {
                        return Ok(PodRun {
                            node: Some(node),
                            timed,
                        });
                    }
                    self.requeued_cycles += 1;
                }
                Step::Preempt { victims, .. } => {
                    self.preemptions += 1;
                    self.victims += victims.len();
                    for v in victims {
                        self.sched
                            .apply(ClusterEvent::Delete(ObjectKey::pod(v)), self.now);
                    }
                }
                Step::Unschedulable { pod, .. } if pod == key => {
                    return Ok(PodRun { node: None, timed });
                }
                Step::Unschedulable { .. } => self.requeued_cycles += 1,
                Step::Idle { until: Some(t) }
                    if self.sched.queue().position(&key) == Some(QueueName::Backoff) =>
                {
                    // The pod waits out a backoff: the simulated clock jumps there.
                    self.now = self.now.max(t);
                }
                Step::Idle { .. } => {
                    return Ok(PodRun { node: None, timed });
                }
                other => {
                    return Err(PerfError::Unexpected {
                        pod: key,
                        what: format!("{other:?}"),
                    });
                }
            }
        }
    }
}

/// kube's churn op of pods on the side's own clock, as `perf time` runs it: the summed time
/// of the measured and churn pods since the first measured pod. Whenever that clock passes the
/// next tick (every `interval_millis`, the first one interval in, as kube's ticker), the
/// tick's pods enter and are scheduled at once (kube's churn pods outrank the measured ones),
/// their time counted in the next measured pod's. Binding and the API are left out of the
/// clock on both sides, so both see fewer ticks than a live run would.
struct Churner {
    meta: Option<ChurnMeta>,
    /// [`RunOptions::churn_interval`].
    interval: Option<Duration>,
    pods: std::vec::IntoIter<Pod>,
    clock: Duration,
    ticks: usize,
    entered: usize,
    placed: usize,
    exhausted: bool,
}

impl Churner {
    fn new(meta: Option<ChurnMeta>, interval: Option<Duration>, pods: Vec<Pod>) -> Churner {
        Churner {
            meta,
            interval,
            pods: pods.into_iter(),
            clock: Duration::ZERO,
            ticks: 0,
            entered: 0,
            placed: 0,
            exhausted: false,
        }
    }

    /// Schedules the churn pods whose tick the clock has reached; their time.
    fn due(&mut self, driver: &mut Driver) -> Result<Duration, PerfError> {
        let Some(meta) = &self.meta else {
            return Ok(Duration::ZERO);
        };
        let interval = Duration::from_millis(meta.interval_millis);
        let mut spent = Duration::ZERO;
        let interval = self.interval.unwrap_or(interval);
        while self.clock >= interval * u32::try_from(self.ticks + 1).unwrap_or(u32::MAX) {
            if self.ticks >= meta.ticks {
                // The file's pods are all in: the run says so (the script refuses it).
                self.exhausted = true;
                break;
            }
            for pod in self.pods.by_ref().take(meta.pods_per_tick) {
                let r = driver.run(pod)?;
                self.entered += 1;
                self.placed += usize::from(r.node.is_some());
                spent += r.timed;
                self.clock += r.timed;
            }
            self.ticks += 1;
        }
        Ok(spent)
    }
}

/// What deleting a placed pod of a steady-state workload brings the engine (untimed): the
/// pod's deletion and that of the claims kube's resourceclaim controller made for it (owned
/// by the pod, deleted with it), which frees their devices.
fn steady_state_deletions(pod: &Pod) -> Vec<ClusterEvent> {
    let namespace = &pod.metadata.namespace;
    let claims = pod
        .status
        .resource_claim_statuses
        .iter()
        .filter_map(|s| s.resource_claim_name.as_ref())
        .map(|name| ClusterEvent::Delete(ObjectKey::ResourceClaim(format!("{namespace}/{name}"))));
    std::iter::once(ClusterEvent::Delete(ObjectKey::pod(pod.key())))
        .chain(claims)
        .collect()
}

/// Runs sched-core on an exported workload: `percentage` of nodes to score where the
/// configuration sets none (0: adaptive), one thread, at most `measure` measured pods (all
/// with `None`).
pub fn run(dir: &Path, percentage: u32, measure: Option<usize>) -> Result<Timings, PerfError> {
    run_with(dir, &RunOptions::new(percentage, measure))
}

/// [`run`] with [`RunOptions`].
pub fn run_with(dir: &Path, options: &RunOptions) -> Result<Timings, PerfError> {
    let (percentage, measure) = (options.percentage, options.measure);
    let meta = read_meta(dir)?;
    let case = Case::read(dir).map_err(|e| PerfError::Read(e.to_string()))?;
    let mut config = case.configuration();
    if config.percentage_of_nodes_to_score.is_none() {
        config.percentage_of_nodes_to_score = Some(percentage);
    }
    let mut cluster = case.cluster;
    let mut snapshot = Snapshot::from_objects(Vec::new(), Vec::new())
        .map_err(|e| PerfError::Read(e.to_string()))?;
    snapshot.set_workloads(std::mem::take(&mut cluster.workloads));
    let sched = Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 1)
        .map_err(|e| PerfError::Config(e.to_string()))?;
    let mut driver = Driver {
        sched,
        now: Duration::ZERO,
        pending: std::collections::HashMap::new(),
        preemptions: 0,
        victims: 0,
        claims_written: 0,
        requeued_cycles: 0,
    };
    let nodes = cluster.nodes.len();
    for event in ClusterEvent::listing(&mut cluster) {
        driver.sched.apply(event, driver.now);
    }
    let churn_pods = match &meta.churn {
        Some(_) => {
            let path = dir.join(CHURN_FILE);
            load_file(&path, Role::Pods)
                .map_err(|e| PerfError::Read(e.to_string()))?
                .pods
        }
        None => Vec::new(),
    };
    let mut churn = Churner::new(meta.churn.clone(), options.churn_interval, churn_pods);
    let mut pending = cluster.pending.into_iter();
    let start = Instant::now();
    for pod in pending.by_ref().take(meta.init_pods) {
        driver.now += CLOCK_STEP;
        driver.run(pod)?;
    }
    let init_seconds = start.elapsed().as_secs_f64();
    driver.preemptions = 0;
    driver.victims = 0;
    driver.requeued_cycles = 0;
    let mut timings = Timings {
        side: "sched-core".into(),
        workload: format!("{}/{}", meta.test_case, meta.workload),
        parallelism: 1,
        percentage,
        nodes,
        init_pods: meta.init_pods,
        init_seconds,
        ..Timings::default()
    };
    for pod in pending.take(measure.unwrap_or(usize::MAX)) {
        driver.now += CLOCK_STEP;
        let gone = meta.steady_state.then(|| steady_state_deletions(&pod));
        let before = churn.due(&mut driver)?;
        let r = driver.run(pod)?;
        churn.clock += r.timed;
        if let (Some(events), Some(_)) = (gone, &r.node) {
            for e in events {
                driver.sched.apply(e, driver.now);
            }
        }
        timings
            .nanos
            .push(u64::try_from((before + r.timed).as_nanos()).unwrap_or(u64::MAX));
        if r.node.is_none() {
            timings.unschedulable += 1;
        }
        timings.placements.push(r.node.unwrap_or_default());
    }
    timings.preemptions = driver.preemptions;
    timings.victims = driver.victims;
    timings.claims_written = driver.claims_written;
    timings.churn_pods = churn.entered;
    timings.churn_placed = churn.placed;
    timings.churn_exhausted = churn.exhausted;
    timings.requeued_cycles = driver.requeued_cycles;
    Ok(timings)
}
