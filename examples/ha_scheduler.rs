//! The main demo: three scheduler replicas, as separate OS processes, share one FileLock.
//!
//! ```sh
//! cargo run --release --example ha_scheduler            # 1,000 nodes, 2,000 pods, < 30 s
//! cargo run --release --example ha_scheduler -- --nodes 5000 --pods 20000 --rate 1000
//! ```
//!
//! The parent process starts three replicas of this binary (`--replica N`). They contend for
//! `leader.json` through lease-elect's [`FileLock`]. The leader takes pending pods from the
//! queue (a deterministic generator: pod `i` is always the same pod, so every replica agrees on
//! the queue without sharing it), schedules them with sched-core on a synthetic cluster using
//! `examples/data/policy-demo.json`, and appends each binding to `bindings.jsonl` together with
//! its fencing token. The binding log is the fenced resource: an append carrying a token lower
//! than one already seen is refused, so a deposed leader cannot write after its successor.
//!
//! Half way, the parent kills the leader with SIGKILL. Another replica takes over, rebuilds its
//! snapshot from the recorded bindings and carries on. At the end the parent prints who
//! scheduled what, the fail-over gap, pods per second, the unschedulable pods with kube's
//! explanation, and checks that no pod was bound twice and no binding carries a stale token.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use lease_elect::{
    ElectionConfig, FileLock, LeaderCallbacks, LeaderElector, LeaderGuard, ResourceLock,
};
use sched_core::bench_cluster::benchmark_cluster;
use sched_core::model::{
    Container, ContainerPort, LabelSelector, Pod, Quantity, Workload, WorkloadKind,
};
use sched_core::policy::Policy;
use sched_core::profile::{Profile, ScheduleError};
use sched_core::snapshot::Snapshot;
use serde::{Deserialize, Serialize};

const REPLICAS: usize = 3;
const POLICY: &str = include_str!("data/policy-demo.json");

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Settings {
    nodes: usize,
    pods: usize,
    rate: u64,
}

/// One line of `bindings.jsonl`.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct Binding {
    pod: usize,
    /// Chosen node, or `None` when the pod fits nowhere.
    node: Option<String>,
    /// kube's explanation for an unschedulable pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    why: Option<String>,
    replica: String,
    token: u64,
    /// Milliseconds since the Unix epoch.
    at_ms: u128,
    /// Time spent in `schedule` for this pod, in microseconds.
    #[serde(default)]
    sched_us: u64,
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

fn quantity(s: &str) -> Quantity {
    s.parse().expect("valid quantity literal")
}

/// The queue: pod `i`, the same in every process.
fn demo_pod(i: usize) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = format!("job-{i}");
    p.metadata.namespace = "demo".into();
    let app = ["web", "api", "batch"][i % 3];
    p.metadata.labels.insert("app".into(), app.into());
    let (cpu, mem) = match i % 5 {
        0 => ("250m", "512Mi"),
        1 => ("500m", "1Gi"),
        2 => ("1", "2Gi"),
        3 => ("2", "4Gi"),
        _ => ("100m", "256Mi"),
    };
    let mut c = Container {
        name: "main".into(),
        image: format!("registry.example/{app}:1"),
        ..Default::default()
    };
    c.resources.requests.insert("cpu".into(), quantity(cpu));
    c.resources.requests.insert("memory".into(), quantity(mem));
    if i % 50 == 7 {
        // A host port: at most one such pod per node.
        c.ports.push(ContainerPort {
            container_port: 9100,
            host_port: 9100,
            ..Default::default()
        });
    }
    if i % 40 == 3 {
        p.spec
            .node_selector
            .insert("topology.kubernetes.io/zone".into(), "zone-1".into());
    }
    if i % 400 == 199 {
        // Far bigger than any node: shows kube's explanation.
        c.resources.requests.insert("cpu".into(), quantity("48"));
    }
    p.spec.containers.push(c);
    p
}

fn demo_services() -> Vec<Workload> {
    ["web", "api", "batch"]
        .iter()
        .map(|app| {
            let mut sel = LabelSelector::default();
            sel.match_labels.insert("app".into(), (*app).into());
            Workload {
                kind: WorkloadKind::Service,
                namespace: "demo".into(),
                name: (*app).into(),
                selector: sel,
            }
        })
        .collect()
}

fn read_bindings(path: &Path) -> Vec<Binding> {
    let Ok(f) = File::open(path) else {
        return Vec::new();
    };
    BufReader::new(f)
        .lines()
        .map_while(Result::ok)
        .filter(|l| !l.trim().is_empty())
        .filter_map(|l| serde_json::from_str(&l).ok())
        .collect()
}

/// Appends a binding unless a higher fencing token has written before: the check and the
/// append happen under an exclusive OS lock on the log, so they are atomic across processes.
fn fenced_append(dir: &Path, b: &Binding) -> std::io::Result<bool> {
    let mut log = OpenOptions::new()
        .create(true)
        .read(true)
        .append(true)
        .open(dir.join("bindings.jsonl"))?;
    log.lock()?;
    let mut fence = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(dir.join("fence"))?;
    let mut text = String::new();
    fence.read_to_string(&mut text)?;
    let highest: u64 = text.trim().parse().unwrap_or(0);
    if b.token < highest {
        log.unlock()?;
        return Ok(false);
    }
    if b.token > highest {
        fence.set_len(0)?;
        fence.seek(SeekFrom::Start(0))?;
        write!(fence, "{}", b.token)?;
        fence.sync_data()?;
    }
    let mut line = serde_json::to_string(b).map_err(std::io::Error::other)?;
    line.push('\n');
    log.write_all(line.as_bytes())?;
    log.sync_data()?;
    log.unlock()?;
    Ok(true)
}

fn compile_profile() -> Profile {
    let policy = Policy::from_json(POLICY).expect("examples/data/policy-demo.json is valid");
    policy
        .builder()
        .and_then(|b| Ok(b.threads(1).seed(7).build()?))
        .expect("demo policy compiles")
}

/// The leader's work for one term.
struct Replica {
    dir: PathBuf,
    identity: String,
    settings: Settings,
}

impl Replica {
    fn lead(&self, guard: &LeaderGuard) {
        let token = guard.token().0;
        let started = Instant::now();
        let (nodes, running) = benchmark_cluster(self.settings.nodes);
        let mut snapshot = Snapshot::from_objects(nodes, running).expect("synthetic cluster");
        snapshot.set_workloads(demo_services());
        // Carry on from the recorded bindings.
        let mut done = HashSet::new();
        for b in read_bindings(&self.dir.join("bindings.jsonl")) {
            if let Some(node) = &b.node {
                snapshot
                    .assume(demo_pod(b.pod), node)
                    .expect("recorded binding applies");
            }
            done.insert(b.pod);
        }
        println!(
            "{} leads with fencing token {token}: {} pods already done, snapshot rebuilt in {} ms",
            self.identity,
            done.len(),
            started.elapsed().as_millis()
        );
        let profile = compile_profile();
        let mut cache = profile.create_cache();
        let period = Duration::from_secs_f64(1.0 / self.settings.rate.max(1) as f64);
        let mut next_at = Instant::now();
        let mut count = 0usize;
        for i in 0..self.settings.pods {
            if done.contains(&i) {
                continue;
            }
            if !guard.is_valid() {
                println!("{} lost leadership after {count} pods", self.identity);
                return;
            }
            let pod = demo_pod(i);
            let t = Instant::now();
            let outcome = profile.schedule_and_assume(&mut cache, &pod, &mut snapshot);
            let sched_us = t.elapsed().as_micros() as u64;
            let (node, why) = match outcome {
                Ok(r) => (Some(r.node), None),
                Err(ScheduleError::Unschedulable(fit)) => (None, Some(fit.to_string())),
                Err(e) => (None, Some(e.to_string())),
            };
            let b = Binding {
                pod: i,
                node,
                why,
                replica: self.identity.clone(),
                token,
                at_ms: now_ms(),
                sched_us,
            };
            match fenced_append(&self.dir, &b) {
                Ok(true) => count += 1,
                Ok(false) => {
                    println!(
                        "{}: binding refused, token {token} is stale; stepping down",
                        self.identity
                    );
                    return;
                }
                Err(e) => {
                    println!("{}: cannot write the binding log: {e}", self.identity);
                    return;
                }
            }
            next_at += period;
            if let Some(wait) = next_at.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        println!(
            "{} finished the queue ({count} pods this term)",
            self.identity
        );
    }
}

struct Callbacks(Arc<Replica>, Arc<AtomicBool>);

#[async_trait::async_trait]
impl LeaderCallbacks for Callbacks {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        let replica = self.0.clone();
        let finished = self.1.clone();
        let g = guard.clone();
        let _ = tokio::task::spawn_blocking(move || {
            replica.lead(&g);
            if g.is_valid() {
                finished.store(true, Ordering::SeqCst);
            }
        })
        .await;
    }

    fn on_new_leader(&self, identity: &str) {
        if identity != self.0.identity {
            println!("{} sees new leader {identity}", self.0.identity);
        }
    }
}

async fn run_replica(dir: PathBuf, id: usize, settings: Settings) {
    let identity = format!("replica-{id}");
    let lock = FileLock::new(dir.join("leader.json"), identity.clone())
        .with_poll_interval(Duration::from_millis(50));
    let config = ElectionConfig::builder()
        .lock(lock)
        .lease_duration(Duration::from_secs(2))
        .renew_deadline(Duration::from_millis(1500))
        .retry_period(Duration::from_millis(300))
        .release_on_cancel(true)
        .build()
        .expect("valid election config");
    let elector = LeaderElector::new(config);
    let finished = Arc::new(AtomicBool::new(false));
    let replica = Arc::new(Replica {
        dir: dir.clone(),
        identity,
        settings,
    });
    let callbacks = Callbacks(replica, finished.clone());
    // Stop when the queue is done (whoever finished it) or the parent says so.
    let stop = {
        let dir = dir.clone();
        async move {
            loop {
                if dir.join("stop").exists() {
                    break;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    elector.run(&callbacks, stop).await;
}

fn spawn_replica(exe: &Path, dir: &Path, id: usize, s: Settings) -> Child {
    Command::new(exe)
        .args(["--replica", &id.to_string(), "--dir"])
        .arg(dir)
        .args([
            "--nodes",
            &s.nodes.to_string(),
            "--pods",
            &s.pods.to_string(),
            "--rate",
            &s.rate.to_string(),
        ])
        .stdout(Stdio::inherit())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn replica")
}

async fn current_holder(dir: &Path) -> Option<String> {
    let lock = FileLock::new(dir.join("leader.json"), "observer");
    match lock.get().await {
        Ok(Some((r, _))) if !r.holder_identity.is_empty() => Some(r.holder_identity),
        _ => None,
    }
}

async fn orchestrate(dir: PathBuf, s: Settings) -> ExitCode {
    let started = Instant::now();
    println!(
        "ha_scheduler: {} replicas, {} nodes, {} pods at up to {} pods/s, state in {}",
        REPLICAS,
        s.nodes,
        s.pods,
        s.rate,
        dir.display()
    );
    let exe = std::env::current_exe().expect("current exe");
    let mut children: Vec<Child> = (0..REPLICAS)
        .map(|i| spawn_replica(&exe, &dir, i, s))
        .collect();
    let log = dir.join("bindings.jsonl");
    let deadline = started + Duration::from_secs(120);
    let mut killed: Option<(String, u128)> = None;
    loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let n = read_bindings(&log).len();
        if killed.is_none()
            && n >= s.pods / 2
            && let Some(holder) = current_holder(&dir).await
        {
            let id: usize = holder
                .trim_start_matches("replica-")
                .parse()
                .expect("replica id");
            children[id].kill().expect("SIGKILL the leader");
            let _ = children[id].wait();
            println!("ha_scheduler: killed leader {holder} with SIGKILL after {n} pods");
            killed = Some((holder, now_ms()));
        }
        let done: HashSet<usize> = read_bindings(&log).iter().map(|b| b.pod).collect();
        if done.len() >= s.pods || Instant::now() > deadline {
            break;
        }
    }
    fs::write(dir.join("stop"), b"stop").expect("write stop file");
    for c in &mut children {
        let _ = c.wait();
    }
    summarize(&read_bindings(&log), s, killed, started.elapsed())
}

fn summarize(
    bindings: &[Binding],
    s: Settings,
    killed: Option<(String, u128)>,
    wall: Duration,
) -> ExitCode {
    println!("\n=== summary ===");
    let mut per_replica: BTreeMap<&str, (usize, u64)> = BTreeMap::new();
    for b in bindings {
        let e = per_replica.entry(&b.replica).or_insert((0, b.token));
        e.0 += 1;
    }
    for (r, (n, token)) in &per_replica {
        println!("{r}: {n} pods (fencing token {token})");
    }
    let mut ok = true;
    // Fail-over gap: last write of the killed leader to the first write of the next one.
    if let Some((victim, _)) = &killed {
        let last = bindings
            .iter()
            .filter(|b| &b.replica == victim)
            .map(|b| b.at_ms)
            .max();
        let first_after = last.and_then(|l| {
            bindings
                .iter()
                .filter(|b| &b.replica != victim && b.at_ms >= l)
                .map(|b| b.at_ms)
                .min()
        });
        match (last, first_after) {
            (Some(l), Some(f)) => println!(
                "fail-over gap after SIGKILL of {victim}: {} ms (lease 2 s, retry 0.3 s)",
                f - l
            ),
            _ => {
                println!("fail-over: no binding after the kill");
                ok = false;
            }
        }
    }
    let first = bindings.iter().map(|b| b.at_ms).min().unwrap_or(0);
    let last = bindings.iter().map(|b| b.at_ms).max().unwrap_or(0);
    let secs = (last - first).max(1) as f64 / 1000.0;
    println!(
        "{} pods recorded in {:.1} s of scheduling ({:.0} pods/s including the fail-over; rate limit {}/s); wall time {:.1} s",
        bindings.len(),
        secs,
        bindings.len() as f64 / secs,
        s.rate,
        wall.as_secs_f64()
    );
    let mut lat: Vec<u64> = bindings.iter().map(|b| b.sched_us).collect();
    lat.sort_unstable();
    if !lat.is_empty() {
        println!(
            "scheduling latency per pod on {} nodes: median {} us, p99 {} us (one thread; the rest of each pod's time is the rate limit and the fsynced binding write)",
            s.nodes,
            lat[lat.len() / 2],
            lat[(lat.len() * 99 / 100).min(lat.len() - 1)]
        );
    }
    let unschedulable: Vec<&Binding> = bindings.iter().filter(|b| b.node.is_none()).collect();
    println!("unschedulable pods: {}", unschedulable.len());
    for b in unschedulable.iter().take(5) {
        println!("  demo/job-{}: {}", b.pod, b.why.as_deref().unwrap_or("?"));
    }
    // Checks.
    let mut seen: HashMap<usize, usize> = HashMap::new();
    for b in bindings {
        *seen.entry(b.pod).or_default() += 1;
    }
    let twice = seen.values().filter(|&&c| c > 1).count();
    let missing = (0..s.pods).filter(|i| !seen.contains_key(i)).count();
    let mut highest = 0;
    let mut stale = 0;
    for b in bindings {
        if b.token < highest {
            stale += 1;
        }
        highest = highest.max(b.token);
    }
    let mut holders_per_token: HashMap<u64, HashSet<&str>> = HashMap::new();
    for b in bindings {
        holders_per_token
            .entry(b.token)
            .or_default()
            .insert(&b.replica);
    }
    let shared_tokens = holders_per_token.values().filter(|h| h.len() > 1).count();
    for (what, bad) in [
        ("pods scheduled twice", twice),
        ("pods never handled", missing),
        ("bindings with a stale fencing token", stale),
        ("fencing tokens used by two replicas", shared_tokens),
    ] {
        println!(
            "check: {what}: {bad} {}",
            if bad == 0 { "OK" } else { "FAILED" }
        );
        ok &= bad == 0;
    }
    if ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

fn arg<T: std::str::FromStr>(args: &[String], name: &str) -> Option<T> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().collect();
    let settings = Settings {
        nodes: arg(&args, "--nodes").unwrap_or(1_000),
        pods: arg(&args, "--pods").unwrap_or(2_000),
        rate: arg(&args, "--rate").unwrap_or(250),
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    if let Some(id) = arg::<usize>(&args, "--replica") {
        let dir: PathBuf = arg(&args, "--dir").expect("--dir");
        rt.block_on(run_replica(dir, id, settings));
        return ExitCode::SUCCESS;
    }
    let dir: PathBuf = arg(&args, "--dir").unwrap_or_else(|| {
        std::env::temp_dir().join(format!("ha-scheduler-{}-{}", std::process::id(), now_ms()))
    });
    fs::create_dir_all(&dir).expect("state directory");
    for f in [
        "bindings.jsonl",
        "fence",
        "stop",
        "leader.json",
        "leader.json.lock",
    ] {
        let _ = fs::remove_file(dir.join(f));
    }
    rt.block_on(orchestrate(dir, settings))
}
