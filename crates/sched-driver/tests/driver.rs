//! The driver over the engine: concurrent binders with delays and failures, Permit timeouts
//! and allows in simulated time, preemption through the victim deleter, shutdown draining,
//! fencing, blocking plugins, and the metrics after a run.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::model::{Node, PersistentVolume, PersistentVolumeClaim, Pod, PodKey, StorageClass};
use sched_core::plugins::dra::Deallocation;
use sched_core::scheduler::{
    ClusterEvent, ObjectKey, PermitDecision, PermitPlugin, QueueName, ReservePlugin, Scheduler,
    SchedulerEvent,
};
use sched_core::snapshot::Snapshot;
use sched_driver::metrics::SchedulerMetrics;
use sched_driver::{
    BindError, Binder, Binding, BuildError, ClaimDeallocator, DeleteError, Driver, DriverError,
    DriverEvent, DriverHandle, Preemption, StepTaken, VictimDeleter,
};
use tokio::time::Instant;

fn node(name: &str, cpu: u32) -> Node {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "status": {"allocatable": {"cpu": cpu.to_string(), "memory": "64Gi", "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}
    }))
    .unwrap()
}

fn pod(name: &str, milli_cpu: u32, priority: i32) -> Pod {
    serde_json::from_value(serde_json::json!({
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"priority": priority, "containers": [{"name": "c", "image": "pause",
            "resources": {"requests": {"cpu": format!("{milli_cpu}m"), "memory": "64Mi"}}}]}
    }))
    .unwrap()
}

fn scheduler(nodes: Vec<Node>) -> Scheduler {
    let snapshot = Snapshot::from_objects(nodes, vec![]).unwrap();
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
         podInitialBackoffSeconds: 1\npodMaxBackoffSeconds: 10\n",
    )
    .unwrap();
    Scheduler::from_config(&config, &Registry::v1_34(), snapshot, 7).unwrap()
}

/// A fake API server: binds after a random delay, refuses some, reports bound pods back
/// through the informer feed, deletes victims.
struct Api {
    handle: OnceLock<DriverHandle>,
    pods: Mutex<HashMap<PodKey, Pod>>,
    bound: Mutex<HashMap<PodKey, String>>,
    rng: Mutex<ChaCha8Rng>,
    max_delay_ms: u64,
    failure_rate: f64,
    confirm: bool,
    /// How long a bind call lingers after the informer reported the pod bound.
    linger: Duration,
    binds_ok: AtomicUsize,
    binds_failed: AtomicUsize,
    /// Unreserve calls, each for a pod whose bind failed and that is not bound.
    unreserved: AtomicUsize,
    in_flight: AtomicUsize,
    max_in_flight: AtomicUsize,
    deleted: Mutex<Vec<Preemption>>,
}

impl Api {
    fn new(seed: u64, max_delay_ms: u64, failure_rate: f64, confirm: bool) -> Arc<Api> {
        Arc::new(Api {
            handle: OnceLock::new(),
            pods: Mutex::new(HashMap::new()),
            bound: Mutex::new(HashMap::new()),
            rng: Mutex::new(ChaCha8Rng::seed_from_u64(seed)),
            max_delay_ms,
            failure_rate,
            confirm,
            linger: Duration::ZERO,
            binds_ok: AtomicUsize::new(0),
            binds_failed: AtomicUsize::new(0),
            unreserved: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
            max_in_flight: AtomicUsize::new(0),
            deleted: Mutex::new(Vec::new()),
        })
    }

    fn create(&self, p: Pod) {
        self.pods.lock().unwrap().insert(p.key(), p.clone());
        self.handle().apply(ClusterEvent::add(p)).unwrap();
    }

    fn handle(&self) -> &DriverHandle {
        self.handle.get().expect("handle set")
    }
}

struct ApiBinder(Arc<Api>);

#[sched_driver::async_trait]
impl Binder for ApiBinder {
    async fn bind(&self, b: &Binding) -> Result<(), BindError> {
        let api = &self.0;
        let n = api.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        api.max_in_flight.fetch_max(n, Ordering::SeqCst);
        let (delay, fail) = {
            let mut rng = api.rng.lock().unwrap();
            (
                rng.random_range(0..=api.max_delay_ms),
                rng.random_bool(api.failure_rate),
            )
        };
        tokio::time::sleep(Duration::from_millis(delay)).await;
        api.in_flight.fetch_sub(1, Ordering::SeqCst);
        if fail {
            api.binds_failed.fetch_add(1, Ordering::SeqCst);
            return Err(BindError::Refused("etcd leader changed".into()));
        }
        let mut p = {
            let mut bound = api.bound.lock().unwrap();
            assert!(
                bound.insert(b.pod.clone(), b.node.clone()).is_none(),
                "{} bound twice",
                b.pod
            );
            api.pods.lock().unwrap()[&b.pod].clone()
        };
        api.binds_ok.fetch_add(1, Ordering::SeqCst);
        if api.confirm {
            // The informer reports the pod bound.
            p.spec.node_name = b.node.clone();
            api.handle().apply(ClusterEvent::update(p)).unwrap();
        }
        tokio::time::sleep(api.linger).await;
        Ok(())
    }

    async fn unreserve(&self, b: &Binding, error: &BindError) {
        assert!(error.is_retryable(), "{error}");
        assert!(
            !self.0.bound.lock().unwrap().contains_key(&b.pod),
            "{} bound",
            b.pod
        );
        self.0.unreserved.fetch_add(1, Ordering::SeqCst);
    }
}

struct ApiDeleter(Arc<Api>);

#[sched_driver::async_trait]
impl VictimDeleter for ApiDeleter {
    async fn delete_victims(&self, p: &Preemption) -> Result<(), DeleteError> {
        self.0.deleted.lock().unwrap().push(p.clone());
        for v in &p.victims {
            self.0.bound.lock().unwrap().remove(v);
            self.0
                .handle()
                .apply(ClusterEvent::Delete(ObjectKey::pod(v.clone())))
                .unwrap();
        }
        Ok(())
    }
}

fn start(
    driver: Driver,
    api: &Arc<Api>,
) -> tokio::task::JoinHandle<Result<Scheduler, DriverError>> {
    api.handle.set(driver.handle()).unwrap();
    tokio::spawn(driver.run(std::future::pending()))
}

/// Polls the status until `f` holds (in simulated time, the polls cost nothing).
async fn wait_until(handle: &DriverHandle, f: impl Fn(&sched_driver::DriverStatus) -> bool) {
    for _ in 0..100_000 {
        if f(&handle.status()) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    panic!("status never reached: {:?}", handle.status());
}

#[tokio::test(start_paused = true)]
async fn a_concurrent_binder_with_delays_and_failures_binds_every_pod_exactly_once() {
    let nodes: Vec<Node> = (0..20).map(|i| node(&format!("n{i}"), 4)).collect();
    let api = Api::new(42, 50, 0.2, true);
    let driver = Driver::builder(scheduler(nodes))
        .binder(ApiBinder(api.clone()))
        .max_concurrent_binds(8)
        .steps_per_call(16)
        .build()
        .unwrap();
    let handle = driver.handle();
    let mut events = handle.subscribe();
    let run = start(driver, &api);
    for i in 0..300u32 {
        api.create(pod(&format!("p{i}"), 100 + (i % 3) * 100, (i % 2) as i32));
    }
    let status = handle.settled().await.unwrap();
    assert_eq!(status.queue.unschedulable, 0);
    handle.shutdown();
    let sched = run.await.unwrap().unwrap();
    let bound = api.bound.lock().unwrap().clone();
    assert_eq!(bound.len(), 300, "every pod bound");
    assert_eq!(
        api.binds_ok.load(Ordering::SeqCst),
        300,
        "each exactly once"
    );
    let failed = api.binds_failed.load(Ordering::SeqCst);
    assert!(failed > 20, "failures were injected and retried: {failed}");
    assert_eq!(
        api.unreserved.load(Ordering::SeqCst),
        failed,
        "each failed bind unreserved"
    );
    let max = api.max_in_flight.load(Ordering::SeqCst);
    assert!(
        (2..=8).contains(&max),
        "binds overlapped within the bound: {max}"
    );
    // The engine's view agrees with the API server's: every pod on its bound node,
    // nothing assumed or being bound.
    assert_eq!(sched.snapshot().pod_count(), 300);
    for (p, n) in &bound {
        assert_eq!(sched.snapshot().node_of(p), Some(n.as_str()), "{p}");
    }
    assert_eq!(sched.binding().count(), 0);
    // The events tell the same story.
    let (mut scheduled, mut binding_failed) = (0, 0);
    while let Ok(e) = events.try_recv() {
        match e {
            DriverEvent::Scheduler(SchedulerEvent::Scheduled { .. }) => scheduled += 1,
            DriverEvent::Scheduler(SchedulerEvent::BindingFailed { .. }) => binding_failed += 1,
            _ => {}
        }
    }
    assert_eq!((scheduled, binding_failed), (300, failed));
}

#[tokio::test(start_paused = true)]
async fn informer_reports_before_the_bind_result_still_close_every_binding() {
    // The informer reports each pod bound 1 s before its bind call returns: the engine must
    // see the bind's result first, or it never closes the binding (no `Scheduled`).
    let nodes: Vec<Node> = (0..10).map(|i| node(&format!("n{i}"), 8)).collect();
    let mut api = Api::new(7, 2, 0.0, true);
    Arc::get_mut(&mut api).unwrap().linger = Duration::from_secs(1);
    let driver = Driver::builder(scheduler(nodes))
        .binder(ApiBinder(api.clone()))
        .max_concurrent_binds(16)
        .build()
        .unwrap();
    let handle = driver.handle();
    let mut events = handle.subscribe();
    let run = start(driver, &api);
    for i in 0..200u32 {
        api.create(pod(&format!("p{i}"), 100, 0));
    }
    handle.settled().await.unwrap();
    handle.shutdown();
    let sched = run.await.unwrap().unwrap();
    assert_eq!(api.binds_ok.load(Ordering::SeqCst), 200);
    assert_eq!(sched.binding().count(), 0);
    let mut scheduled = 0;
    while let Ok(e) = events.try_recv() {
        if let DriverEvent::Scheduler(SchedulerEvent::Scheduled { .. }) = e {
            scheduled += 1;
        }
    }
    assert_eq!(scheduled, 200);
}

/// A binder that waits for a permit per binding.
struct GateBinder {
    gate: Arc<tokio::sync::Semaphore>,
    done: Arc<AtomicUsize>,
}

#[sched_driver::async_trait]
impl Binder for GateBinder {
    async fn bind(&self, _b: &Binding) -> Result<(), BindError> {
        self.gate.acquire().await.unwrap().forget();
        self.done.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn scheduling_goes_on_while_binds_run_up_to_the_concurrency_bound() {
    let gate = Arc::new(tokio::sync::Semaphore::new(0));
    let done = Arc::new(AtomicUsize::new(0));
    let driver = Driver::builder(scheduler(vec![node("n1", 32)]))
        .binder(GateBinder {
            gate: gate.clone(),
            done: done.clone(),
        })
        .max_concurrent_binds(3)
        .build()
        .unwrap();
    let handle = driver.handle();
    let run = tokio::spawn(driver.run(std::future::pending()));
    for i in 0..10 {
        handle
            .apply(ClusterEvent::add(pod(&format!("p{i}"), 100, 0)))
            .unwrap();
    }
    // Three placed and binding, the engine waits for a slot with seven still queued.
    wait_until(&handle, |s| s.binds_in_flight == 3 && s.queue.active == 7).await;
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(handle.status().binds_in_flight, 3);
    assert_eq!(done.load(Ordering::SeqCst), 0);
    // One finishes: one more is placed.
    gate.add_permits(1);
    wait_until(&handle, |s| s.queue.active == 6).await;
    assert_eq!(handle.status().binds_in_flight, 3);
    gate.add_permits(100);
    handle.settled().await.unwrap();
    assert_eq!(done.load(Ordering::SeqCst), 10);
    handle.shutdown();
    let sched = run.await.unwrap().unwrap();
    assert_eq!(sched.snapshot().pod_count(), 10);
}

/// Holds pods labelled `gang` at Permit for 10 s.
struct Gang;

impl PermitPlugin for Gang {
    fn name(&self) -> &str {
        "Gang"
    }
    fn permit(&self, pod: &Pod, _node: &str) -> PermitDecision {
        if pod.metadata.labels.contains_key("gang") {
            PermitDecision::Wait(Duration::from_secs(10))
        } else {
            PermitDecision::Allow
        }
    }
}

fn gang_pod(name: &str) -> Pod {
    let mut p = pod(name, 100, 0);
    p.metadata.labels.insert("gang".into(), "a".into());
    p
}

#[tokio::test(start_paused = true)]
async fn a_permit_wait_times_out_in_simulated_time() {
    let api = Api::new(1, 0, 0.0, true);
    let driver = Driver::builder(scheduler(vec![node("n1", 4)]).with_permit(Gang))
        .binder(ApiBinder(api.clone()))
        .build()
        .unwrap();
    let handle = driver.handle();
    let mut events = handle.subscribe();
    let run = start(driver, &api);
    let t0 = Instant::now();
    api.create(gang_pod("g"));
    let (waiting_at, until) = loop {
        if let DriverEvent::Step(StepTaken::Waiting { pod, until, .. }) =
            events.recv().await.unwrap()
        {
            assert_eq!(pod, "default/g");
            break (t0.elapsed(), until);
        }
    };
    assert_eq!(waiting_at, Duration::ZERO);
    assert_eq!(until, Duration::from_secs(10));
    wait_until(&handle, |s| s.waiting == 1).await;
    let rejected = loop {
        if let DriverEvent::Step(StepTaken::Rejected {
            pod,
            plugin,
            reason,
        }) = events.recv().await.unwrap()
        {
            break (pod.to_string(), plugin, reason, t0.elapsed());
        }
    };
    assert_eq!(
        rejected,
        (
            "default/g".to_string(),
            "Gang".to_string(),
            "rejected due to timeout after waiting at permit".to_string(),
            Duration::from_secs(10)
        )
    );
    handle.settled().await.unwrap();
    assert!(api.bound.lock().unwrap().is_empty());
    handle.shutdown();
    let sched = run.await.unwrap().unwrap();
    // Unreserved, forgotten, waiting in the unschedulable pool.
    assert_eq!(sched.snapshot().pod_count(), 0);
    assert_eq!(
        sched.queue().position("default/g"),
        Some(QueueName::Unschedulable)
    );
}

#[tokio::test(start_paused = true)]
async fn an_external_allow_ends_a_permit_wait_and_the_pod_is_bound() {
    let api = Api::new(1, 0, 0.0, true);
    let driver = Driver::builder(scheduler(vec![node("n1", 4)]).with_permit(Gang))
        .binder(ApiBinder(api.clone()))
        .build()
        .unwrap();
    let handle = driver.handle();
    let run = start(driver, &api);
    let t0 = Instant::now();
    api.create(gang_pod("g"));
    wait_until(&handle, |s| s.waiting == 1).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let allowed_at = t0.elapsed();
    assert!(!handle.allow("default/g", "Other").await.unwrap());
    assert!(handle.allow("default/g", "Gang").await.unwrap());
    handle.settled().await.unwrap();
    // Bound at once, well before the 10 s timeout.
    assert_eq!(t0.elapsed(), allowed_at);
    assert!(allowed_at < Duration::from_secs(4));
    assert_eq!(
        api.bound
            .lock()
            .unwrap()
            .get("default/g")
            .map(String::as_str),
        Some("n1")
    );
    // Nothing waits any more: a late allow or reject finds nothing.
    assert!(!handle.allow("default/g", "Gang").await.unwrap());
    assert!(!handle.reject("default/g", "Gang", "late").await.unwrap());
    handle.shutdown();
    run.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn an_external_reject_unreserves_the_waiting_pod() {
    let api = Api::new(1, 0, 0.0, true);
    let driver = Driver::builder(scheduler(vec![node("n1", 4)]).with_permit(Gang))
        .binder(ApiBinder(api.clone()))
        .build()
        .unwrap();
    let handle = driver.handle();
    let run = start(driver, &api);
    api.create(gang_pod("g"));
    wait_until(&handle, |s| s.waiting == 1).await;
    assert!(
        handle
            .reject("default/g", "Gang", "gang incomplete")
            .await
            .unwrap()
    );
    let status = handle.settled().await.unwrap();
    assert_eq!((status.waiting, status.queue.unschedulable), (0, 1));
    handle.shutdown();
    let sched = run.await.unwrap().unwrap();
    assert_eq!(sched.snapshot().pod_count(), 0);
}

#[tokio::test(start_paused = true)]
async fn victims_go_to_the_deleter_and_the_preemptor_is_bound_once_they_are_gone() {
    let api = Api::new(1, 10, 0.0, true);
    let driver = Driver::builder(scheduler(vec![node("n1", 1)]))
        .binder(ApiBinder(api.clone()))
        .victim_deleter(ApiDeleter(api.clone()))
        .build()
        .unwrap();
    let handle = driver.handle();
    let run = start(driver, &api);
    api.create(pod("low", 600, 1));
    handle.settled().await.unwrap();
    api.create(pod("high", 800, 100));
    handle.settled().await.unwrap();
    let deleted = api.deleted.lock().unwrap().clone();
    assert_eq!(deleted.len(), 1);
    assert_eq!(deleted[0].pod, "default/high");
    assert_eq!(deleted[0].node, "n1");
    assert_eq!(deleted[0].victims, ["default/low"]);
    let bound = api.bound.lock().unwrap().clone();
    assert_eq!(bound.len(), 1);
    assert_eq!(bound.get("default/high").map(String::as_str), Some("n1"));
    handle.shutdown();
    let sched = run.await.unwrap().unwrap();
    assert_eq!(sched.snapshot().node_of("default/low"), None);
    assert_eq!(sched.snapshot().node_of("default/high"), Some("n1"));
}

/// Binds after 5 s.
struct SlowBinder(Arc<AtomicUsize>);

#[sched_driver::async_trait]
impl Binder for SlowBinder {
    async fn bind(&self, _b: &Binding) -> Result<(), BindError> {
        tokio::time::sleep(Duration::from_secs(5)).await;
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn shutdown_drains_the_binds_in_flight() {
    let done = Arc::new(AtomicUsize::new(0));
    let driver = Driver::builder(scheduler(vec![node("n1", 4)]))
        .binder(SlowBinder(done.clone()))
        .build()
        .unwrap();
    let handle = driver.handle();
    let mut events = handle.subscribe();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let run = tokio::spawn(driver.run(async {
        let _ = stop_rx.await;
    }));
    for i in 0..5 {
        handle
            .apply(ClusterEvent::add(pod(&format!("p{i}"), 100, 0)))
            .unwrap();
    }
    wait_until(&handle, |s| s.binds_in_flight == 5).await;
    let t0 = Instant::now();
    stop_tx.send(()).unwrap();
    // A pod sent after the shutdown is applied but not scheduled.
    handle
        .apply(ClusterEvent::add(pod("late", 100, 0)))
        .unwrap();
    let sched = run.await.unwrap().unwrap();
    assert!(
        t0.elapsed() >= Duration::from_secs(4),
        "waited for the binds"
    );
    assert_eq!(done.load(Ordering::SeqCst), 5);
    assert_eq!(sched.binding().count(), 0, "every result applied");
    assert_eq!(sched.snapshot().pod_count(), 5);
    let mut scheduled = 0;
    while let Ok(e) = events.try_recv() {
        if let DriverEvent::Scheduler(SchedulerEvent::Scheduled { .. }) = e {
            scheduled += 1;
        }
    }
    assert_eq!(scheduled, 5);
    // The handle is dead once the driver returned.
    assert!(
        handle
            .apply(ClusterEvent::Delete(ObjectKey::pod("default/p0")))
            .is_err()
    );
}

/// Refuses every bind as fenced.
struct FencedBinder;

#[sched_driver::async_trait]
impl Binder for FencedBinder {
    async fn bind(&self, _b: &Binding) -> Result<(), BindError> {
        Err(BindError::Fenced("token 3 is older than 4".into()))
    }
}

#[tokio::test(start_paused = true)]
async fn a_fenced_binding_stops_the_driver() {
    let driver = Driver::builder(scheduler(vec![node("n1", 4)]))
        .binder(FencedBinder)
        .build()
        .unwrap();
    let handle = driver.handle();
    let run = tokio::spawn(driver.run(std::future::pending()));
    handle.apply(ClusterEvent::add(pod("p", 100, 0))).unwrap();
    match run.await.unwrap() {
        Err(DriverError::Fenced { pod, message }) => {
            assert_eq!(pod, "default/p");
            assert_eq!(message, "token 3 is older than 4");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_builder_refuses_missing_and_zero_settings() {
    let err = Driver::builder(scheduler(vec![])).build().unwrap_err();
    assert_eq!(err, BuildError::MissingBinder);
    let err = Driver::builder(scheduler(vec![]))
        .binder(FencedBinder)
        .max_concurrent_binds(0)
        .build()
        .unwrap_err();
    assert_eq!(err, BuildError::Zero("max_concurrent_binds"));
    assert_eq!(err.to_string(), "max_concurrent_binds must be at least 1");
}

/// A Reserve plugin that blocks its thread until the test releases it (a synchronous call
/// to an outside service).
struct Blocking {
    entered: Arc<AtomicBool>,
    release: Mutex<std::sync::mpsc::Receiver<()>>,
}

impl ReservePlugin for Blocking {
    fn name(&self) -> &str {
        "Blocking"
    }
    fn reserve(&self, _pod: &Pod, _node: &str) -> Result<(), sched_core::scheduler::ReserveError> {
        self.entered.store(true, Ordering::SeqCst);
        self.release
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(10))
            .map_err(|_| "never released: the runtime was blocked".into())
    }
    fn unreserve(&self, _pod: &Pod, _node: &str) {}
}

#[test]
fn a_blocking_plugin_does_not_block_the_runtime() {
    // One runtime thread: if the engine ran on it, the releasing task could never run.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let entered = Arc::new(AtomicBool::new(false));
        let (tx, rx) = std::sync::mpsc::channel();
        let plugin = Blocking {
            entered: entered.clone(),
            release: Mutex::new(rx),
        };
        let api = Api::new(1, 0, 0.0, true);
        let driver = Driver::builder(scheduler(vec![node("n1", 4)]).with_reserve(plugin))
            .binder(ApiBinder(api.clone()))
            .build()
            .unwrap();
        let handle = driver.handle();
        let run = start(driver, &api);
        api.create(pod("p", 100, 0));
        while !entered.load(Ordering::SeqCst) {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        tx.send(()).unwrap();
        handle.settled().await.unwrap();
        assert_eq!(api.bound.lock().unwrap().len(), 1);
        handle.shutdown();
        run.await.unwrap().unwrap();
    });
}

/// Binds after 1 s; refuses the first bind of `default/a`.
struct MetricsBinder(AtomicBool);

#[sched_driver::async_trait]
impl Binder for MetricsBinder {
    async fn bind(&self, b: &Binding) -> Result<(), BindError> {
        tokio::time::sleep(Duration::from_secs(1)).await;
        if b.pod == "default/a" && !self.0.swap(true, Ordering::SeqCst) {
            return Err(BindError::Refused("conflict".into()));
        }
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn the_metrics_count_kubes_attempts_after_a_run() {
    let metrics = SchedulerMetrics::new();
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    let driver = Driver::builder(scheduler(vec![node("n1", 2), node("n2", 2)]))
        .binder(MetricsBinder(AtomicBool::new(false)))
        .metrics(&metrics)
        .build()
        .unwrap();
    let handle = driver.handle();
    let run = tokio::spawn(driver.run(std::future::pending()));
    // a, b, c fit (priority 10, tried first); big fits nowhere and may preempt nobody.
    for (name, cpu, prio) in [
        ("a", 500, 10),
        ("b", 500, 10),
        ("c", 500, 10),
        ("big", 8000, 0),
    ] {
        handle
            .apply(ClusterEvent::add(pod(name, cpu, prio)))
            .unwrap();
    }
    handle.settled().await.unwrap();
    handle.shutdown();
    run.await.unwrap().unwrap();
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    let value = |line: &str| -> f64 {
        text.lines()
            .find_map(|l| l.strip_prefix(line)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{line} missing in\n{text}"))
    };
    let p = "profile=\"default-scheduler\"";
    // t=0: a, b, c placed, big unschedulable. t=1: b and c bound, a refused (error): the
    // freed cpu wakes big, unschedulable again; a failed with an error and backs off 1 s,
    // which ends in the window of 2 s, so until 3 s (kube v1.34's ordering windows). t=3: a
    // placed, t=4 bound.
    assert_eq!(
        value(&format!(
            "scheduler_schedule_attempts_total{{result=\"scheduled\",{p}}}"
        )),
        3.0
    );
    assert_eq!(
        value(&format!(
            "scheduler_schedule_attempts_total{{result=\"error\",{p}}}"
        )),
        1.0
    );
    assert_eq!(
        value(&format!(
            "scheduler_schedule_attempts_total{{result=\"unschedulable\",{p}}}"
        )),
        2.0
    );
    // Durations in simulated time: the two unschedulable attempts took no time, every
    // binding attempt 1 s.
    assert_eq!(
        value(&format!(
            "scheduler_scheduling_attempt_duration_seconds_sum{{result=\"scheduled\",{p}}}"
        )),
        3.0
    );
    assert_eq!(
        value(&format!(
            "scheduler_scheduling_attempt_duration_seconds_count{{result=\"unschedulable\",{p}}}"
        )),
        2.0
    );
    assert_eq!(value("scheduler_preemption_attempts_total"), 2.0);
    assert_eq!(value("scheduler_preemption_victims_count"), 0.0);
    assert_eq!(
        value("scheduler_pending_pods{queue=\"unschedulable\"}"),
        1.0
    );
    assert_eq!(value("scheduler_pending_pods{queue=\"active\"}"), 0.0);
    assert_eq!(value("scheduler_pending_pods{queue=\"backoff\"}"), 0.0);
    assert_eq!(value("scheduler_pending_pods{queue=\"gated\"}"), 0.0);
    // b and c in one attempt (1 s from queued to bound), a in two (4 s).
    assert_eq!(
        value("scheduler_pod_scheduling_sli_duration_seconds_count{attempts=\"1\"}"),
        2.0
    );
    assert_eq!(
        value("scheduler_pod_scheduling_sli_duration_seconds_sum{attempts=\"1\"}"),
        2.0
    );
    assert_eq!(
        value("scheduler_pod_scheduling_sli_duration_seconds_sum{attempts=\"2\"}"),
        4.0
    );
}

#[tokio::test(start_paused = true)]
async fn preemption_metrics_count_the_victims() {
    let metrics = SchedulerMetrics::new();
    let mut registry = prometheus_client::registry::Registry::default();
    metrics.register(&mut registry);
    let api = Api::new(1, 0, 0.0, true);
    let driver = Driver::builder(scheduler(vec![node("n1", 1)]))
        .binder(ApiBinder(api.clone()))
        .victim_deleter(ApiDeleter(api.clone()))
        .metrics(&metrics)
        .build()
        .unwrap();
    let handle = driver.handle();
    let run = start(driver, &api);
    api.create(pod("low-1", 300, 1));
    api.create(pod("low-2", 300, 1));
    handle.settled().await.unwrap();
    api.create(pod("high", 900, 100));
    handle.settled().await.unwrap();
    handle.shutdown();
    run.await.unwrap().unwrap();
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
    assert!(
        text.contains("scheduler_preemption_victims_sum 2.0"),
        "{text}"
    );
    assert!(
        text.contains("scheduler_preemption_victims_count 1\n"),
        "{text}"
    );
    assert!(
        text.contains("scheduler_preemption_attempts_total 1\n"),
        "{text}"
    );
}

/// Panics on the first bind, then binds.
struct PanicsOnce(AtomicBool);

#[sched_driver::async_trait]
impl Binder for PanicsOnce {
    async fn bind(&self, _b: &Binding) -> Result<(), BindError> {
        if !self.0.swap(true, Ordering::SeqCst) {
            panic!("binder bug");
        }
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_panicking_binder_fails_that_binding_and_the_pod_is_retried() {
    let driver = Driver::builder(scheduler(vec![node("n1", 4)]))
        .binder(PanicsOnce(AtomicBool::new(false)))
        .build()
        .unwrap();
    let handle = driver.handle();
    let mut events = handle.subscribe();
    let run = tokio::spawn(driver.run(std::future::pending()));
    handle.apply(ClusterEvent::add(pod("p", 100, 0))).unwrap();
    handle.settled().await.unwrap();
    handle.shutdown();
    let sched = run.await.unwrap().unwrap();
    assert_eq!(sched.snapshot().node_of("default/p"), Some("n1"));
    let mut seen = Vec::new();
    while let Ok(e) = events.try_recv() {
        if let DriverEvent::Scheduler(e) = e {
            seen.push(e);
        }
    }
    assert_eq!(
        seen,
        [
            SchedulerEvent::BindingFailed {
                pod: "default/p".into(),
                node: "n1".into(),
                message: "binding failed: hook panicked: binder bug".into()
            },
            SchedulerEvent::Scheduled {
                pod: "default/p".into(),
                node: "n1".into()
            }
        ]
    );
}

/// Fails every deletion, as fenced when told so.
struct FailingDeleter {
    fenced: bool,
}

#[sched_driver::async_trait]
impl VictimDeleter for FailingDeleter {
    async fn delete_victims(&self, _p: &Preemption) -> Result<(), DeleteError> {
        if self.fenced {
            Err(DeleteError::Fenced("token 1 is stale".into()))
        } else {
            Err(DeleteError::Failed("connection reset".into()))
        }
    }
}

#[tokio::test(start_paused = true)]
async fn failed_deletions_are_reported_and_a_fenced_one_stops_the_driver() {
    for fenced in [false, true] {
        let api = Api::new(1, 0, 0.0, true);
        let driver = Driver::builder(scheduler(vec![node("n1", 1)]))
            .binder(ApiBinder(api.clone()))
            .victim_deleter(FailingDeleter { fenced })
            .build()
            .unwrap();
        let handle = driver.handle();
        let mut events = handle.subscribe();
        let run = start(driver, &api);
        api.create(pod("low", 600, 1));
        handle.settled().await.unwrap();
        api.create(pod("high", 800, 100));
        let message = loop {
            if let DriverEvent::PreemptionFailed { pod, message } = events.recv().await.unwrap() {
                assert_eq!(pod, "default/high");
                break message;
            }
        };
        if fenced {
            assert_eq!(message, "fenced off: token 1 is stale");
            match run.await.unwrap() {
                Err(DriverError::Fenced { pod, .. }) => assert_eq!(pod, "default/high"),
                other => panic!("{other:?}"),
            }
        } else {
            assert_eq!(message, "deleting victims failed: connection reset");
            // The victim stays; the preemptor waits, nominated.
            let status = handle.settled().await.unwrap();
            assert_eq!(status.queue.unschedulable, 1);
            handle.shutdown();
            let sched = run.await.unwrap().unwrap();
            assert_eq!(sched.snapshot().node_of("default/low"), Some("n1"));
            assert_eq!(sched.nominated_node("default/high"), Some("n1"));
        }
    }
}

/// Records what each binding carried; binds nothing itself when an extender binds.
#[derive(Default)]
struct Records {
    volumes: Mutex<Vec<(String, Vec<String>)>>,
    bound_by_us: Mutex<Vec<PodKey>>,
    post_bound: Mutex<Vec<PodKey>>,
}

struct Recorder(Arc<Records>);

#[sched_driver::async_trait]
impl Binder for Recorder {
    async fn pre_bind(&self, b: &Binding) -> Result<(), BindError> {
        let pvs = b
            .volumes
            .bindings()
            .iter()
            .map(|pv| pv.metadata.name.clone())
            .collect();
        self.0
            .volumes
            .lock()
            .unwrap()
            .push((b.pod.to_string(), pvs));
        Ok(())
    }
    async fn bind(&self, b: &Binding) -> Result<(), BindError> {
        self.0.bound_by_us.lock().unwrap().push(b.pod.clone());
        Ok(())
    }
    async fn post_bind(&self, b: &Binding) {
        self.0.post_bound.lock().unwrap().push(b.pod.clone());
    }
}

/// An in-process binder extender interested in pods named `ext-*`.
struct BindingExtender(Arc<Mutex<Vec<String>>>);

impl sched_core::extender::Extender for BindingExtender {
    fn name(&self) -> &str {
        "binder"
    }
    fn is_interested(&self, pod: &Pod) -> bool {
        pod.metadata.name.starts_with("ext-")
    }
    fn is_binder(&self) -> bool {
        true
    }
    fn bind(
        &self,
        args: &sched_core::extender::wire::ExtenderBindingArgs,
    ) -> Result<(), sched_core::extender::ExtenderError> {
        self.0.lock().unwrap().push(args.pod_name.clone());
        Ok(())
    }
}

/// The binder gets VolumeBinding's decisions in `pre_bind` (kube's PreBind), and a pod a
/// binder extender is interested in is bound by the extender instead of `Binder::bind`.
#[tokio::test(start_paused = true)]
async fn bindings_carry_volume_decisions_and_extenders_bind_their_pods() {
    let by_extender = Arc::new(Mutex::new(Vec::new()));
    let sched = scheduler(vec![node("n1", 4)]).with_extender(BindingExtender(by_extender.clone()));
    let recorder = Arc::new(Records::default());
    let driver = Driver::builder(sched)
        .binder(Recorder(recorder.clone()))
        .build()
        .unwrap();
    let handle = driver.handle();
    let run = tokio::spawn(driver.run(std::future::pending()));
    let class: StorageClass = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "local"},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer"
    }))
    .unwrap();
    let pv: PersistentVolume = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "pv-1"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "storageClassName": "local", "local": {"path": "/mnt"},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}]}]}}},
        "status": {"phase": "Available"}
    }))
    .unwrap();
    let claim: PersistentVolumeClaim = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "data", "namespace": "default"},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                 "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .unwrap();
    handle.apply(ClusterEvent::add(class)).unwrap();
    handle.apply(ClusterEvent::add(pv)).unwrap();
    handle.apply(ClusterEvent::add(claim)).unwrap();
    let mut with_claim = pod("db", 100, 0);
    with_claim.spec.volumes = serde_json::from_value(serde_json::json!([
        {"name": "data", "persistentVolumeClaim": {"claimName": "data"}}
    ]))
    .unwrap();
    handle.apply(ClusterEvent::add(with_claim)).unwrap();
    handle
        .apply(ClusterEvent::add(pod("ext-a", 100, 0)))
        .unwrap();
    handle.settled().await.unwrap();
    let mut volumes = recorder.volumes.lock().unwrap().clone();
    volumes.sort();
    assert_eq!(
        volumes,
        vec![
            ("default/db".to_string(), vec!["pv-1".to_string()]),
            ("default/ext-a".to_string(), vec![]),
        ]
    );
    assert_eq!(*recorder.bound_by_us.lock().unwrap(), vec!["default/db"]);
    assert_eq!(*by_extender.lock().unwrap(), vec!["ext-a"]);
    let mut post = recorder.post_bound.lock().unwrap().clone();
    post.sort();
    assert_eq!(post, vec!["default/db", "default/ext-a"]);
    handle.shutdown();
    run.await.unwrap().unwrap();
}

/// Writes deallocations as an API server would, and reports the claim's update back.
struct ApiDeallocator {
    api: Arc<Api>,
    claims: Mutex<HashMap<String, sched_core::model::ResourceClaim>>,
    written: Arc<AtomicUsize>,
}

#[sched_driver::async_trait]
impl ClaimDeallocator for ApiDeallocator {
    async fn deallocate(&self, d: &Deallocation) -> Result<(), DeleteError> {
        let mut claims = self.claims.lock().unwrap();
        let Some(claim) = claims.get_mut(&d.name).filter(|c| d.still_applies(c)) else {
            return Ok(());
        };
        *claim = Deallocation::cleared(claim);
        self.written.fetch_add(1, Ordering::SeqCst);
        self.api
            .handle()
            .apply(ClusterEvent::update(claim.clone()))
            .unwrap();
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_claim_allocated_elsewhere_goes_to_the_deallocator_and_the_pod_is_then_bound() {
    let class: sched_core::model::DeviceClass = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "gpu"},
        "spec": {"selectors": [{"cel": {"expression": "device.driver == \"gpu.example.com\""}}]}
    }))
    .unwrap();
    let slice: sched_core::model::ResourceSlice = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "n1-gpus"},
        "spec": {"driver": "gpu.example.com", "nodeName": "n1",
                 "pool": {"name": "n1", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "gpu-0"}]}
    }))
    .unwrap();
    // Allocated on n0, which is gone, and reserved for nobody.
    let claim: sched_core::model::ResourceClaim = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "c", "namespace": "default", "uid": "c-1"},
        "spec": {"devices": {"requests": [{"name": "r", "exactly": {
            "deviceClassName": "gpu", "allocationMode": "ExactCount", "count": 1}}]}},
        "status": {"allocation": {
            "devices": {"results": [{"request": "r", "driver": "gpu.example.com",
                                     "pool": "n0", "device": "gpu-0"}]},
            "nodeSelector": {"nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": ["n0"]}]}]}}}
    }))
    .unwrap();
    let mut p = pod("p", 100, 0);
    p.metadata.uid = "p-1".into();
    p.spec.resource_claims = vec![
        serde_json::from_value(serde_json::json!({"name": "r", "resourceClaimName": "c"})).unwrap(),
    ];

    let api = Api::new(1, 10, 0.0, true);
    let written = Arc::new(AtomicUsize::new(0));
    let deallocator = ApiDeallocator {
        api: api.clone(),
        claims: Mutex::new(HashMap::from([("c".to_owned(), claim.clone())])),
        written: written.clone(),
    };
    let driver = Driver::builder(scheduler(vec![node("n1", 1)]))
        .binder(ApiBinder(api.clone()))
        .claim_deallocator(deallocator)
        .build()
        .unwrap();
    let handle = driver.handle();
    let mut events = handle.subscribe();
    let run = start(driver, &api);
    for e in [
        ClusterEvent::add(class),
        ClusterEvent::add(slice),
        ClusterEvent::add(claim),
    ] {
        handle.apply(e).unwrap();
    }
    api.create(p);
    handle.settled().await.unwrap();
    assert_eq!(written.load(Ordering::SeqCst), 1);
    let bound = api.bound.lock().unwrap().clone();
    assert_eq!(bound.get("default/p").map(String::as_str), Some("n1"));
    // The first attempt named the claim in its step.
    let mut named = None;
    while let Ok(e) = events.try_recv() {
        if let DriverEvent::Step(StepTaken::Unschedulable { deallocate, .. }) = e {
            named = deallocate;
        }
    }
    let named = named.expect("an unschedulable step with the deallocation");
    assert_eq!((named.name.as_str(), named.pod_uid.as_str()), ("c", "p-1"));
    handle.shutdown();
    run.await.unwrap().unwrap();
}
