//! The main demo: three scheduler replicas, as separate OS processes, share one FileLock; the
//! leader runs sched-core's scheduling engine through sched-driver.
//!
//! ```sh
//! cargo run --release --example ha_scheduler            # 150 nodes, 2,000 pods, < 30 s
//! cargo run --release --example ha_scheduler -- --nodes 500 --pods 8000 --rate 1000  # ~18 s
//! ```
//!
//! The parent process starts three replicas of this binary (`--replica N`). They contend for
//! `leader.json` through lease-elect's [`FileLock`]. The leader rebuilds the cluster from the
//! binding log (a synthetic cluster plus the recorded bindings and evictions), runs a
//! [`Driver`] over a [`Scheduler`] compiled from `examples/data/policy-demo.json`, and feeds it
//! pods as an informer would (a deterministic generator: pod `i` is the same pod in every
//! process): two priorities (batch pods that never preempt, critical pods that may), some held
//! by a scheduling gate that a later update removes. Its [`Binder`] appends each binding to
//! `bindings.jsonl` with the term's fencing token, and reports the pod bound back to the
//! driver; its [`VictimDeleter`] records each preemption's victims in the same log and reports
//! them deleted. The log is the fenced resource: an append carrying a token lower than one
//! already seen is refused, and the refusal stops the driver.
//!
//! Each replica serves Prometheus metrics (the driver's and the elector's) on a loopback port.
//! Half way, the parent kills the leader with SIGKILL; another replica takes over, rebuilds
//! and carries on. When the leader has settled (every pod bound, evicted or unschedulable) it
//! records the pending pods; the parent scrapes the leader's metrics, prints a summary and
//! checks that no pod was bound twice, none was lost, every victim had a lower priority than
//! its preemptor, and no record carries a stale fencing token. It exits non-zero when a check
//! fails.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::convert::Infallible;
use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, Read, Seek, SeekFrom, Write};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use lease_elect::{
    ElectionConfig, ElectionMetrics, FileLock, LeaderCallbacks, LeaderElector, LeaderGuard,
    ResourceLock,
};
use prometheus_client::registry::Registry;
use sched_core::bench_cluster::benchmark_cluster;
use sched_core::config::DEFAULT_SCHEDULER_NAME;
use sched_core::model::{
    Container, ContainerPort, LabelSelector, Pod, PodSchedulingGate, Quantity, Workload,
    WorkloadKind,
};
use sched_core::policy::Policy;
use sched_core::profile::Profile;
use sched_core::scheduler::{ClusterEvent, ObjectKey, QueueSettings, Scheduler, SchedulerEvent};
use sched_core::snapshot::Snapshot;
use sched_driver::metrics::SchedulerMetrics;
use sched_driver::{
    BindError, Binder, Binding, DeleteError, Driver, DriverError, DriverEvent, DriverHandle,
    Preemption, VictimDeleter,
};
use serde::{Deserialize, Serialize};

const REPLICAS: usize = 3;
const POLICY: &str = include_str!("data/policy-demo.json");
/// Priority of batch pods (they never preempt) and of critical pods (they may).
const BATCH: i32 = 100;
const CRITICAL: i32 = 1000;
/// A gated pod's gate is removed once the feed is this many pods further.
const GATE_LAG: usize = 100;

#[derive(Clone, Copy, Debug, Serialize, Deserialize)]
struct Settings {
    nodes: usize,
    pods: usize,
    rate: u64,
}

/// One line of `bindings.jsonl`.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Record {
    /// A pod bound to a node.
    Bind {
        pod: String,
        node: String,
        replica: String,
        token: u64,
        /// Milliseconds since the Unix epoch.
        at_ms: u64,
    },
    /// A preemption: `victims` deleted so that `preemptor` fits on `node`.
    Evict {
        preemptor: String,
        node: String,
        victims: Vec<String>,
        replica: String,
        token: u64,
        at_ms: u64,
    },
    /// The leader settled: these pods are pending, with kube's last explanation.
    Finished {
        pending: Vec<(String, String)>,
        replica: String,
        token: u64,
        at_ms: u64,
    },
}

impl Record {
    fn token(&self) -> u64 {
        match self {
            Record::Bind { token, .. }
            | Record::Evict { token, .. }
            | Record::Finished { token, .. } => *token,
        }
    }
    fn replica(&self) -> &str {
        match self {
            Record::Bind { replica, .. }
            | Record::Evict { replica, .. }
            | Record::Finished { replica, .. } => replica,
        }
    }
    fn at_ms(&self) -> u64 {
        match self {
            Record::Bind { at_ms, .. }
            | Record::Evict { at_ms, .. }
            | Record::Finished { at_ms, .. } => *at_ms,
        }
    }
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn quantity(s: &str) -> Quantity {
    s.parse().expect("valid quantity literal")
}

fn pod_key(i: usize) -> String {
    format!("demo/job-{i}")
}

fn demo_index(key: &str) -> Option<usize> {
    key.strip_prefix("demo/job-")?.parse().ok()
}

/// The priority of any pod of the demo's cluster: the generator's for demo pods, 0 for the
/// synthetic cluster's running pods.
fn priority_of(key: &str) -> i32 {
    demo_index(key)
        .and_then(|i| demo_pod(i).spec.priority)
        .unwrap_or(0)
}

/// Pod `i`, the same in every process: one in five is critical, one in ten starts gated.
fn demo_pod(i: usize) -> Pod {
    let mut p = Pod::default();
    p.metadata.name = format!("job-{i}");
    p.metadata.namespace = "demo".into();
    let app = ["web", "api", "batch"][i % 3];
    p.metadata.labels.insert("app".into(), app.into());
    let (cpu, mem) = match i % 5 {
        0 => ("500m", "1Gi"),
        1 => ("1", "2Gi"),
        2 => ("2", "4Gi"),
        3 => ("4", "8Gi"),
        _ => ("250m", "512Mi"),
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
    if i % 5 == 2 {
        p.spec.priority = Some(CRITICAL);
    } else {
        p.spec.priority = Some(BATCH);
        p.spec.preemption_policy = Some("Never".into());
    }
    if i % 10 == 4 {
        p.spec.scheduling_gates.push(PodSchedulingGate {
            name: "demo.example/quota".into(),
        });
    }
    p.status.phase = "Pending".into();
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

fn read_log(path: &Path) -> Vec<Record> {
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

/// Appends a record unless a higher fencing token has written before: the check and the
/// append happen under an exclusive OS lock on the log, so they are atomic across processes.
fn fenced_append(dir: &Path, r: &Record) -> std::io::Result<bool> {
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
    if r.token() < highest {
        log.unlock()?;
        return Ok(false);
    }
    if r.token() > highest {
        fence.set_len(0)?;
        fence.seek(SeekFrom::Start(0))?;
        write!(fence, "{}", r.token())?;
        fence.sync_data()?;
    }
    let mut line = serde_json::to_string(r).map_err(std::io::Error::other)?;
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

/// One leadership term: the "API server" the binder and the deleter write to.
struct Term {
    dir: PathBuf,
    identity: String,
    token: u64,
    guard: LeaderGuard,
    handle: OnceLock<DriverHandle>,
    bound: Mutex<HashSet<String>>,
    evicted: Mutex<HashSet<String>>,
}

impl Term {
    fn handle(&self) -> &DriverHandle {
        self.handle.get().expect("set before the driver runs")
    }

    /// Appends `r` to the fenced log off the async workers.
    async fn append(&self, r: Record) -> Result<(), String> {
        if !self.guard.is_valid() {
            return Err(format!("{} no longer leads", self.identity));
        }
        let dir = self.dir.clone();
        match tokio::task::spawn_blocking(move || fenced_append(&dir, &r)).await {
            Ok(Ok(true)) => Ok(()),
            Ok(Ok(false)) => Err(format!("fencing token {} is stale", self.token)),
            Ok(Err(e)) => Err(format!("cannot write the binding log: {e}")),
            Err(e) => Err(e.to_string()),
        }
    }
}

struct LogBinder(Arc<Term>);

#[sched_driver::async_trait]
impl Binder for LogBinder {
    async fn bind(&self, b: &Binding) -> Result<(), BindError> {
        let t = &self.0;
        let i = demo_index(&b.pod).ok_or_else(|| BindError::Refused("not a demo pod".into()))?;
        t.append(Record::Bind {
            pod: b.pod.to_string(),
            node: b.node.clone(),
            replica: t.identity.clone(),
            token: t.token,
            at_ms: now_ms(),
        })
        .await
        .map_err(BindError::Fenced)?;
        t.bound.lock().expect("lock").insert(b.pod.to_string());
        // The informer reports the pod bound.
        let mut p = demo_pod(i);
        p.spec.scheduling_gates.clear();
        p.spec.node_name = b.node.clone();
        p.status.phase = "Running".into();
        let _ = t.handle().apply(ClusterEvent::update(p));
        Ok(())
    }
}

struct LogDeleter(Arc<Term>);

#[sched_driver::async_trait]
impl VictimDeleter for LogDeleter {
    async fn delete_victims(&self, p: &Preemption) -> Result<(), DeleteError> {
        let t = &self.0;
        t.append(Record::Evict {
            preemptor: p.pod.to_string(),
            node: p.node.clone(),
            victims: p.victims.iter().map(|v| v.to_string()).collect(),
            replica: t.identity.clone(),
            token: t.token,
            at_ms: now_ms(),
        })
        .await
        .map_err(DeleteError::Fenced)?;
        for v in &p.victims {
            t.bound.lock().expect("lock").remove(v.as_str());
            t.evicted.lock().expect("lock").insert(v.to_string());
            // The informer reports the victim deleted.
            let _ = t
                .handle()
                .apply(ClusterEvent::Delete(ObjectKey::pod(v.clone())));
        }
        Ok(())
    }
}

/// A replica: its identity, settings and metrics.
struct Replica {
    dir: PathBuf,
    identity: String,
    settings: Settings,
    metrics: SchedulerMetrics,
}

impl Replica {
    /// Rebuilds the cluster from the log: the synthetic cluster, less the evicted pods, plus
    /// the bound demo pods. Returns the snapshot and the demo pods already done.
    fn rebuild(&self) -> (Snapshot, HashSet<usize>) {
        let records = read_log(&self.dir.join("bindings.jsonl"));
        let mut bound: HashMap<String, String> = HashMap::new();
        let mut evicted: HashSet<String> = HashSet::new();
        for r in &records {
            match r {
                Record::Bind { pod, node, .. } => {
                    bound.insert(pod.clone(), node.clone());
                }
                Record::Evict { victims, .. } => evicted.extend(victims.iter().cloned()),
                Record::Finished { .. } => {}
            }
        }
        let (nodes, running) = benchmark_cluster(self.settings.nodes);
        let mut pods: Vec<Pod> = running
            .into_iter()
            .filter(|p| !evicted.contains(p.key().as_str()))
            .collect();
        let mut done = HashSet::new();
        for (key, node) in &bound {
            let Some(i) = demo_index(key) else { continue };
            done.insert(i);
            if evicted.contains(key) {
                continue;
            }
            let mut p = demo_pod(i);
            p.spec.scheduling_gates.clear();
            p.spec.node_name = node.clone();
            p.status.phase = "Running".into();
            pods.push(p);
        }
        done.extend(evicted.iter().filter_map(|k| demo_index(k)));
        let mut snapshot = Snapshot::from_objects(nodes, pods).expect("synthetic cluster");
        snapshot.set_workloads(demo_services());
        (snapshot, done)
    }

    async fn lead(self: Arc<Self>, guard: LeaderGuard) {
        let token = guard.token().0;
        let started = Instant::now();
        let me = self.clone();
        let (snapshot, done) = tokio::task::spawn_blocking(move || me.rebuild())
            .await
            .expect("rebuild");
        println!(
            "{} leads with fencing token {token}: {} pods already done, cluster rebuilt in {} ms",
            self.identity,
            done.len(),
            started.elapsed().as_millis()
        );
        let scheduler = Scheduler::new(
            vec![(DEFAULT_SCHEDULER_NAME.to_string(), compile_profile())],
            snapshot,
            QueueSettings::default(),
        );
        let term = Arc::new(Term {
            dir: self.dir.clone(),
            identity: self.identity.clone(),
            token,
            guard: guard.clone(),
            handle: OnceLock::new(),
            bound: Mutex::new(HashSet::new()),
            evicted: Mutex::new(HashSet::new()),
        });
        let driver = Driver::builder(scheduler)
            .binder(LogBinder(term.clone()))
            .victim_deleter(LogDeleter(term.clone()))
            .max_concurrent_binds(16)
            .event_capacity(1 << 16)
            .metrics(&self.metrics)
            .build()
            .expect("valid driver settings");
        let handle = driver.handle();
        let _ = term.handle.set(handle.clone());
        // kube's last explanation per pending pod.
        let mut events = handle.subscribe();
        let why: Arc<Mutex<HashMap<String, String>>> = Arc::default();
        let why_writer = why.clone();
        tokio::spawn(async move {
            while let Ok(e) = events.recv().await {
                if let DriverEvent::Scheduler(SchedulerEvent::FailedScheduling { pod, message }) = e
                {
                    why_writer
                        .lock()
                        .expect("lock")
                        .insert(pod.to_string(), message);
                }
            }
        });
        let lost = guard.clone();
        let run = tokio::spawn(driver.run(async move { lost.lost().await }));
        self.feed(&handle, &done).await;
        let settled = tokio::select! {
            biased;
            () = guard.lost() => false,
            s = handle.settled() => s.is_ok(),
        };
        if settled {
            let bound = term.bound.lock().expect("lock").clone();
            let evicted = term.evicted.lock().expect("lock").clone();
            let why = why.lock().expect("lock").clone();
            let pending: Vec<(String, String)> = (0..self.settings.pods)
                .filter(|i| !done.contains(i))
                .map(pod_key)
                .filter(|k| !bound.contains(k) && !evicted.contains(k))
                .map(|k| {
                    let w = why.get(&k).cloned().unwrap_or_default();
                    (k, w)
                })
                .collect();
            let n = pending.len();
            let r = Record::Finished {
                pending,
                replica: self.identity.clone(),
                token,
                at_ms: now_ms(),
            };
            match term.append(r).await {
                Ok(()) => println!(
                    "{} settled: {} pods bound and {} evicted this term, {n} pending",
                    self.identity,
                    bound.len(),
                    evicted.len()
                ),
                Err(e) => println!("{}: {e}", self.identity),
            }
        }
        match run.await {
            Ok(Ok(_)) => println!("{} stopped leading", self.identity),
            Ok(Err(DriverError::Fenced { message, .. })) => {
                println!("{} stepped down: {message}", self.identity);
            }
            Ok(Err(e)) => println!("{}: {e}", self.identity),
            Err(e) => println!("{}: driver task: {e}", self.identity),
        }
    }

    /// The informer: pods arrive at `rate` per second; a gated pod's gate goes once the feed
    /// is [`GATE_LAG`] pods further (or at the end).
    async fn feed(&self, handle: &DriverHandle, done: &HashSet<usize>) {
        let period = Duration::from_secs_f64(1.0 / self.settings.rate.max(1) as f64);
        let mut next_at = tokio::time::Instant::now();
        let ungate = |i: usize| {
            let mut p = demo_pod(i);
            p.spec.scheduling_gates.clear();
            let _ = handle.apply(ClusterEvent::update(p));
        };
        let gated = |i: usize| i % 10 == 4 && !done.contains(&i);
        for i in 0..self.settings.pods {
            if i >= GATE_LAG && gated(i - GATE_LAG) {
                ungate(i - GATE_LAG);
            }
            if done.contains(&i) {
                continue;
            }
            if handle.apply(ClusterEvent::add(demo_pod(i))).is_err() {
                return;
            }
            next_at += period;
            tokio::time::sleep_until(next_at).await;
        }
        for i in self.settings.pods.saturating_sub(GATE_LAG)..self.settings.pods {
            if gated(i) {
                ungate(i);
            }
        }
    }
}

struct Callbacks(Arc<Replica>);

#[lease_elect::async_trait]
impl LeaderCallbacks for Callbacks {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        self.0.clone().lead(guard).await;
    }

    fn on_new_leader(&self, identity: &str) {
        if identity != self.0.identity {
            println!("{} sees new leader {identity}", self.0.identity);
        }
    }
}

/// Serves `registry` as `/metrics` on a loopback port; returns the port.
async fn serve_metrics(registry: Arc<Registry>) -> std::io::Result<u16> {
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let port = listener.local_addr()?.port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let registry = registry.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    let registry = registry.clone();
                    async move {
                        let mut text = String::new();
                        let status = if req.uri().path() == "/metrics"
                            && prometheus_client::encoding::text::encode(&mut text, &registry)
                                .is_ok()
                        {
                            200
                        } else {
                            404
                        };
                        Ok::<_, Infallible>(
                            Response::builder()
                                .status(status)
                                .header(
                                    "content-type",
                                    "application/openmetrics-text; version=1.0.0; charset=utf-8",
                                )
                                .body(Full::new(Bytes::from(text)))
                                .expect("valid response"),
                        )
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(port)
}

/// GET `/metrics` from a loopback port.
async fn scrape(port: u16) -> Result<String, Box<dyn std::error::Error + Send + Sync>> {
    let stream = tokio::net::TcpStream::connect(("127.0.0.1", port)).await?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let req = Request::get("/metrics")
        .header("host", format!("127.0.0.1:{port}"))
        .body(Empty::<Bytes>::new())?;
    let res = sender.send_request(req).await?;
    if !res.status().is_success() {
        return Err(format!("HTTP {}", res.status()).into());
    }
    let body = res.into_body().collect().await?.to_bytes();
    Ok(String::from_utf8(body.to_vec())?)
}

async fn run_replica(dir: PathBuf, id: usize, settings: Settings) {
    let identity = format!("replica-{id}");
    let mut registry = Registry::default();
    let election_metrics = ElectionMetrics::new();
    election_metrics.register(&mut registry);
    let scheduler_metrics = SchedulerMetrics::new();
    scheduler_metrics.register(&mut registry);
    let port = serve_metrics(Arc::new(registry))
        .await
        .expect("metrics listener");
    fs::write(dir.join(format!("{identity}.port")), port.to_string()).expect("port file");
    let lock = FileLock::new(dir.join("leader.json"), identity.clone())
        .with_poll_interval(Duration::from_millis(50));
    let config = ElectionConfig::builder()
        .lock(lock)
        .name("ha-scheduler")
        .lease_duration(Duration::from_secs(2))
        .renew_deadline(Duration::from_millis(1500))
        .retry_period(Duration::from_millis(300))
        .release_on_cancel(true)
        .metrics(&election_metrics)
        .build()
        .expect("valid election config");
    let elector = LeaderElector::new(config);
    let replica = Arc::new(Replica {
        dir: dir.clone(),
        identity,
        settings,
        metrics: scheduler_metrics,
    });
    let callbacks = Callbacks(replica);
    let stop = {
        let dir = dir.clone();
        async move {
            while !dir.join("stop").exists() {
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

fn binds(records: &[Record]) -> usize {
    records
        .iter()
        .filter(|r| matches!(r, Record::Bind { .. }))
        .count()
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
    let mut killed: Option<String> = None;
    let finisher = loop {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let records = read_log(&log);
        let n = binds(&records);
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
            println!("ha_scheduler: killed leader {holder} with SIGKILL after {n} bindings");
            killed = Some(holder);
        }
        let highest = records.iter().map(Record::token).max().unwrap_or(0);
        let finisher = records.iter().find_map(|r| match r {
            Record::Finished { replica, token, .. } if *token == highest => Some(replica.clone()),
            _ => None,
        });
        if (killed.is_some() && finisher.is_some()) || Instant::now() > deadline {
            break finisher;
        }
    };
    // Scrape the replicas still running, as Prometheus would.
    let mut metrics = Vec::new();
    for id in 0..REPLICAS {
        let name = format!("replica-{id}");
        if Some(&name) == killed.as_ref() {
            continue;
        }
        let port: Option<u16> = fs::read_to_string(dir.join(format!("{name}.port")))
            .ok()
            .and_then(|p| p.trim().parse().ok());
        if let Some(port) = port {
            match scrape(port).await {
                Ok(text) => metrics.push((name, port, text)),
                Err(e) => println!("ha_scheduler: scraping {name} on port {port}: {e}"),
            }
        }
    }
    fs::write(dir.join("stop"), b"stop").expect("write stop file");
    for c in &mut children {
        let _ = c.wait();
    }
    summarize(
        &read_log(&log),
        s,
        killed,
        finisher,
        &metrics,
        started.elapsed(),
    )
}

fn summarize(
    records: &[Record],
    s: Settings,
    killed: Option<String>,
    finisher: Option<String>,
    metrics: &[(String, u16, String)],
    wall: Duration,
) -> ExitCode {
    println!("\n=== summary ===");
    let mut per_replica: BTreeMap<&str, (usize, usize, u64)> = BTreeMap::new();
    for r in records {
        let e = per_replica.entry(r.replica()).or_insert((0, 0, r.token()));
        match r {
            Record::Bind { .. } => e.0 += 1,
            Record::Evict { .. } => e.1 += 1,
            Record::Finished { .. } => {}
        }
    }
    for (r, (b, p, token)) in &per_replica {
        println!("{r}: {b} bindings, {p} preemptions (fencing token {token})");
    }
    let mut ok = true;
    // Fail-over gap: last write of the killed leader to the first write of the next one.
    if let Some(victim) = &killed {
        let last = records
            .iter()
            .filter(|r| r.replica() == victim)
            .map(Record::at_ms)
            .max();
        let first_after = last.and_then(|l| {
            records
                .iter()
                .filter(|r| r.replica() != victim && r.at_ms() >= l)
                .map(Record::at_ms)
                .min()
        });
        match (last, first_after) {
            (Some(l), Some(f)) => println!(
                "fail-over gap after SIGKILL of {victim}: {} ms (lease 2 s, retry 0.3 s)",
                f - l
            ),
            _ => {
                println!("fail-over: no record after the kill");
                ok = false;
            }
        }
    }
    let first = records.iter().map(Record::at_ms).min().unwrap_or(0);
    let last = records.iter().map(Record::at_ms).max().unwrap_or(0);
    let secs = (last - first).max(1) as f64 / 1000.0;
    let n_binds = binds(records);
    println!(
        "{n_binds} pods bound in {secs:.1} s ({:.0} bindings/s including the fail-over; feed rate {}/s); wall time {:.1} s",
        n_binds as f64 / secs,
        s.rate,
        wall.as_secs_f64()
    );
    let preemptions: Vec<(&String, &Vec<String>)> = records
        .iter()
        .filter_map(|r| match r {
            Record::Evict {
                preemptor, victims, ..
            } => Some((preemptor, victims)),
            _ => None,
        })
        .collect();
    let victims: usize = preemptions.iter().map(|(_, v)| v.len()).sum();
    println!(
        "preemptions: {} by critical pods, {victims} victims deleted ({} of them demo pods)",
        preemptions.len(),
        preemptions
            .iter()
            .flat_map(|(_, v)| v.iter())
            .filter(|v| demo_index(v).is_some())
            .count()
    );
    let pending: Vec<(String, String)> = records
        .iter()
        .rev()
        .find_map(|r| match r {
            Record::Finished { pending, .. } => Some(pending.clone()),
            _ => None,
        })
        .unwrap_or_default();
    println!("pods left pending (unschedulable): {}", pending.len());
    for (pod, why) in pending.iter().take(3) {
        println!("  {pod}: {why}");
    }
    // The scrape.
    for (name, port, text) in metrics {
        let leader = Some(name) == finisher.as_ref();
        println!(
            "metrics of {name} (http://127.0.0.1:{port}/metrics){}:",
            if leader { ", the leader" } else { "" }
        );
        for l in text.lines().filter(|l| {
            l.starts_with("leader_election_master_status")
                || (leader
                    && (l.starts_with("scheduler_schedule_attempts_total")
                        || l.starts_with("scheduler_preemption_attempts_total")
                        || l.starts_with("scheduler_preemption_victims_count")
                        || l.starts_with("scheduler_pending_pods")))
        }) {
            println!("  {l}");
        }
    }
    // Checks.
    let mut bound_count: HashMap<&str, usize> = HashMap::new();
    let mut bound_at: HashMap<&str, usize> = HashMap::new();
    for (at, r) in records.iter().enumerate() {
        if let Record::Bind { pod, .. } = r {
            *bound_count.entry(pod).or_default() += 1;
            bound_at.entry(pod).or_insert(at);
        }
    }
    let twice = bound_count.values().filter(|&&c| c > 1).count();
    let evicted: HashSet<&str> = preemptions
        .iter()
        .flat_map(|(_, v)| v.iter().map(String::as_str))
        .collect();
    let pending_set: HashSet<&str> = pending.iter().map(|(p, _)| p.as_str()).collect();
    let missing = (0..s.pods)
        .map(pod_key)
        .filter(|k| {
            !bound_count.contains_key(k.as_str())
                && !evicted.contains(k.as_str())
                && !pending_set.contains(k.as_str())
        })
        .count();
    let not_lower = preemptions
        .iter()
        .map(|(p, v)| {
            v.iter()
                .filter(|v| priority_of(v) >= priority_of(p))
                .count()
        })
        .sum::<usize>();
    // A demo pod evicted must have been bound, before its eviction.
    let mut never_running = 0;
    for (at, r) in records.iter().enumerate() {
        if let Record::Evict { victims, .. } = r {
            never_running += victims
                .iter()
                .filter(|v| {
                    demo_index(v).is_some() && bound_at.get(v.as_str()).is_none_or(|b| *b > at)
                })
                .count();
        }
    }
    let mut highest = 0;
    let mut stale = 0;
    for r in records {
        if r.token() < highest {
            stale += 1;
        }
        highest = highest.max(r.token());
    }
    let mut holders_per_token: HashMap<u64, HashSet<&str>> = HashMap::new();
    for r in records {
        holders_per_token
            .entry(r.token())
            .or_default()
            .insert(r.replica());
    }
    let shared_tokens = holders_per_token.values().filter(|h| h.len() > 1).count();
    let unfinished = usize::from(finisher.is_none());
    for (what, bad) in [
        ("pods bound twice (across the fail-over)", twice),
        ("pods never handled", missing),
        (
            "victims not of lower priority than their preemptor",
            not_lower,
        ),
        ("victims evicted before they were bound", never_running),
        ("records with a stale fencing token", stale),
        ("fencing tokens used by two replicas", shared_tokens),
        ("runs without a settled leader at the end", unfinished),
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
        nodes: arg(&args, "--nodes").unwrap_or(150),
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
