//! The driver: the engine's loop off tokio's workers, bindings and deletions on tasks, the
//! handle that feeds it.

use std::collections::{HashMap, HashSet, VecDeque};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use sched_core::config::DEFAULT_SCHEDULER_NAME;
use sched_core::model::PodKey;
use sched_core::plugins::dra::Deallocation;
use sched_core::scheduler::{ClusterEvent, Object, ObjectKey, QueueName, Scheduler, Step};
use tokio::runtime::Handle;
use tokio::sync::{Semaphore, broadcast, mpsc, oneshot, watch};
use tokio::task::{Id, JoinError, JoinSet};
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::events::{DriverEvent, DriverStatus, StepTaken};
use crate::hooks::{
    BindError, Binder, Binding, ClaimDeallocator, DeleteError, Preemption, VictimDeleter,
};
use crate::http::{BlockingTransport, ExtenderClients};
use crate::metrics::{Hooks, Outcome};
use sched_core::extender::ExtenderCall;

/// A builder setting was invalid.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[non_exhaustive]
pub enum BuildError {
    /// No [`Binder`] was given.
    #[error("a binder is required (DriverBuilder::binder)")]
    MissingBinder,
    /// A setting that must be at least 1 was 0.
    #[error("{0} must be at least 1")]
    Zero(&'static str),
    /// A remote extender's HTTP client could not be built (TLS settings, certificate files).
    #[error("{0}")]
    Extender(String),
}

/// Why [`Driver::run`] stopped other than by a shutdown.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The binder or the victim deleter said this scheduler may no longer write
    /// ([`BindError::Fenced`], [`DeleteError::Fenced`]). Scheduling stopped and the
    /// bindings in flight were drained first.
    #[error("fenced off while handling {pod}: {message}")]
    Fenced {
        /// The pod whose binding or preemption was refused.
        pod: PodKey,
        /// The hook's message.
        message: String,
    },
    /// The engine panicked (a plugin's bug); the scheduler is lost.
    #[error("the scheduling engine panicked: {0}")]
    EnginePanicked(String),
}

/// The driver stopped: the handle's request was not delivered.
#[derive(Clone, Copy, Debug, thiserror::Error, PartialEq, Eq)]
#[error("the scheduling driver has stopped")]
pub struct Stopped;

/// What a handle asks of the engine.
enum Command {
    Apply(Box<ClusterEvent>),
    Allow {
        pod: PodKey,
        plugin: String,
        reply: oneshot::Sender<bool>,
    },
    Reject {
        pod: PodKey,
        plugin: String,
        reason: String,
        reply: oneshot::Sender<bool>,
    },
}

/// Configures a [`Driver`]; see [`Driver::builder`].
#[must_use]
pub struct DriverBuilder {
    scheduler: Scheduler,
    binder: Option<Arc<dyn Binder>>,
    deleter: Option<Arc<dyn VictimDeleter>>,
    deallocator: Option<Arc<dyn ClaimDeallocator>>,
    max_concurrent_binds: usize,
    event_capacity: usize,
    steps_per_call: usize,
    hooks: Hooks,
}

impl DriverBuilder {
    /// The binder (required).
    pub fn binder(mut self, binder: impl Binder) -> Self {
        self.binder = Some(Arc::new(binder));
        self
    }

    /// Deletes the victims of preemptions. Without one, the victims are only named in the
    /// [`StepTaken::Preempt`] event, and deleting them is the subscriber's business.
    pub fn victim_deleter(mut self, deleter: impl VictimDeleter) -> Self {
        self.deleter = Some(Arc::new(deleter));
        self
    }

    /// Writes the claim deallocations of DynamicResources' PostFilter. Without one, the
    /// claim is only named in the [`StepTaken::Unschedulable`] or [`StepTaken::Preempt`]
    /// event, and writing it is the subscriber's business.
    pub fn claim_deallocator(mut self, deallocator: impl ClaimDeallocator) -> Self {
        self.deallocator = Some(Arc::new(deallocator));
        self
    }

    /// At most this many bindings run at once (default 64). When all run, the engine waits
    /// for one to finish before the next scheduling cycle (kube starts a goroutine per
    /// binding without a bound).
    pub fn max_concurrent_binds(mut self, n: usize) -> Self {
        self.max_concurrent_binds = n;
        self
    }

    /// How many events a subscriber may fall behind before it misses some (default 4096;
    /// a lagging receiver gets `RecvError::Lagged`).
    pub fn event_capacity(mut self, n: usize) -> Self {
        self.event_capacity = n;
        self
    }

    /// At most this many engine steps per call to the blocking pool (default 128): a larger
    /// batch costs fewer thread hand-offs, a smaller one applies bind results and events
    /// sooner.
    pub fn steps_per_call(mut self, n: usize) -> Self {
        self.steps_per_call = n;
        self
    }

    /// Reports to these metrics (feature `metrics`); see [`crate::metrics`].
    #[cfg(feature = "metrics")]
    pub fn metrics(mut self, metrics: &crate::metrics::SchedulerMetrics) -> Self {
        self.hooks.inner = Some(metrics.clone());
        self
    }

    /// Validates the settings.
    ///
    /// # Errors
    /// [`BuildError`]: no binder, or a setting of 0.
    pub fn build(self) -> Result<Driver, BuildError> {
        let binder = self.binder.ok_or(BuildError::MissingBinder)?;
        for (name, v) in [
            ("max_concurrent_binds", self.max_concurrent_binds),
            ("event_capacity", self.event_capacity),
            ("steps_per_call", self.steps_per_call),
        ] {
            if v == 0 {
                return Err(BuildError::Zero(name));
            }
        }
        let clients = Arc::new(
            ExtenderClients::new(self.scheduler.extenders().filter_map(|e| e.remote()))
                .map_err(|e| BuildError::Extender(e.to_string()))?,
        );
        // Preemption calls the preempt verbs within the attempt, on the engine's thread.
        let scheduler = self
            .scheduler
            .with_preempt_transport(Arc::new(BlockingTransport {
                clients: Arc::clone(&clients),
            }));
        let (tx, rx) = mpsc::unbounded_channel();
        let (events, _) = broadcast::channel(self.event_capacity);
        let (status_tx, status_rx) = watch::channel(DriverStatus::default());
        let handle = DriverHandle {
            tx,
            events: events.clone(),
            status: status_rx,
            sent: Arc::new(AtomicU64::new(0)),
            stop: CancellationToken::new(),
        };
        Ok(Driver {
            handle,
            engine: Engine {
                scheduler,
                clients,
                calls_in_flight: 0,
                commands: rx,
                commands_open: true,
                pending: VecDeque::new(),
                joined: Vec::new(),
                tasks: JoinSet::new(),
                task_of: HashMap::new(),
                binds_in_flight: 0,
                in_bind: HashSet::new(),
                deferred: HashMap::new(),
                slots: Arc::new(Semaphore::new(self.max_concurrent_binds)),
                binder,
                deleter: self.deleter,
                deallocator: self.deallocator,
                events,
                status: status_tx,
                hooks: self.hooks,
                pods: HashMap::new(),
                applied: 0,
                origin: None,
                stopping: false,
                fenced: None,
                steps_per_call: self.steps_per_call,
            },
        })
    }
}

/// kube-scheduler's `scheduleOne` loop around a [`Scheduler`] engine, on tokio: cluster events
/// come in through [`DriverHandle`]s, placed pods go to the [`Binder`] on tasks that run
/// concurrently with the next scheduling cycles, results go back to the engine, victims of
/// preemptions go to the [`VictimDeleter`], Permit waits and backoffs are timed.
///
/// The engine runs on tokio's blocking pool (`spawn_blocking`), a batch of steps at a time,
/// never on the async workers, so plugins may block (a slow Reserve, an in-process extender).
/// A configuration's extenders are called here, over HTTP on tasks, with each extender's
/// `httpTimeout` ([`Step::CallExtenders`]): a pod waiting for its extenders does not hold up
/// the others. The driver's clock is tokio's: the engine's time is the time since
/// [`Driver::run`] started, so a paused test runtime (`tokio::time::pause`) runs hours of
/// backoffs and Permit timeouts at once, and a blocking batch holds simulated time still
/// while it runs.
pub struct Driver {
    handle: DriverHandle,
    engine: Engine,
}

impl std::fmt::Debug for Driver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Driver").finish_non_exhaustive()
    }
}

impl Driver {
    /// A builder over the engine (events applied to it before [`Driver::run`] should use
    /// `Duration::ZERO` as their time, the driver's clock starts there).
    pub fn builder(scheduler: Scheduler) -> DriverBuilder {
        DriverBuilder {
            scheduler,
            binder: None,
            deleter: None,
            deallocator: None,
            max_concurrent_binds: 64,
            event_capacity: 4096,
            steps_per_call: 128,
            hooks: Hooks::default(),
        }
    }

    /// A handle to feed events, allow or reject waiting pods, subscribe and stop.
    pub fn handle(&self) -> DriverHandle {
        self.handle.clone()
    }

    /// Schedules until `shutdown` completes or [`DriverHandle::shutdown`] is called, then
    /// stops scheduling, waits for the bindings and deletions in flight, applies their results
    /// and the events already sent, and returns the engine. Extender calls in flight are
    /// abandoned (their pods back off in the engine returned), so a slow extender does not
    /// hold the shutdown up. Call it inside a tokio runtime.
    ///
    /// # Errors
    /// [`DriverError::Fenced`] when a hook said this scheduler may no longer write (after
    /// draining), [`DriverError::EnginePanicked`] when the engine panicked.
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<Scheduler, DriverError> {
        let Driver { handle, mut engine } = self;
        let stop = handle.stop.clone();
        drop(handle);
        engine.origin = Some(Instant::now());
        let rt = Handle::current();
        tokio::pin!(shutdown);
        loop {
            let (e, outcome) = call(engine, rt.clone(), |e, rt| e.batch(rt)).await?;
            engine = e;
            if engine.stopping {
                break;
            }
            let deadline = match outcome {
                Batch::More => continue,
                Batch::Idle(until) => until.map(|u| engine.instant(u)),
                Batch::SlotsFull => None,
            };
            tokio::select! {
                biased;
                () = stop.cancelled() => engine.stopping = true,
                () = &mut shutdown => engine.stopping = true,
                r = engine.tasks.join_next_with_id(), if !engine.tasks.is_empty() => {
                    if let Some(r) = r {
                        engine.joined.push(r);
                    }
                }
                c = engine.commands.recv(), if engine.commands_open => match c {
                    Some(c) => engine.pending.push_back(c),
                    None => engine.commands_open = false,
                },
                () = sleep_until(deadline) => {}
            }
            if engine.stopping {
                break;
            }
        }
        // Drain: no more scheduling; wait for every binding and deletion, apply their results
        // and the commands already sent.
        engine.stopping = true;
        // Extender calls are not waited for: their pods back off in the engine returned.
        for t in engine.task_of.values() {
            if let Task::Call(_, h) = t {
                h.abort();
            }
        }
        loop {
            let (e, ()) = call(engine, rt.clone(), |e, _| {
                e.absorb();
                e.publish();
            })
            .await?;
            engine = e;
            match engine.tasks.join_next_with_id().await {
                Some(r) => engine.joined.push(r),
                None => break,
            }
        }
        let (engine, ()) = call(engine, rt, |e, _| {
            e.absorb();
            e.publish();
        })
        .await?;
        match engine.fenced {
            Some((pod, message)) => Err(DriverError::Fenced { pod, message }),
            None => Ok(engine.scheduler),
        }
    }
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Runs `f` on the engine in tokio's blocking pool and gives the engine back.
async fn call<T: Send + 'static>(
    mut engine: Engine,
    rt: Handle,
    f: impl FnOnce(&mut Engine, &Handle) -> T + Send + 'static,
) -> Result<(Engine, T), DriverError> {
    tokio::task::spawn_blocking(move || {
        let t = f(&mut engine, &rt);
        (engine, t)
    })
    .await
    .map_err(|e| DriverError::EnginePanicked(panic_text(e)))
}

fn panic_text(e: JoinError) -> String {
    match e.try_into_panic() {
        Ok(p) => p
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| p.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic".into()),
        Err(e) => e.to_string(),
    }
}

/// A cloneable handle to a [`Driver`]: the informer's feed, Permit decisions, events and
/// status, shutdown.
#[derive(Clone, Debug)]
pub struct DriverHandle {
    tx: mpsc::UnboundedSender<Command>,
    events: broadcast::Sender<DriverEvent>,
    status: watch::Receiver<DriverStatus>,
    sent: Arc<AtomicU64>,
    stop: CancellationToken,
}

impl DriverHandle {
    fn send(&self, c: Command) -> Result<(), Stopped> {
        // Counted before sending, so that `settled` never sees the command applied first.
        self.sent.fetch_add(1, Ordering::SeqCst);
        self.tx.send(c).map_err(|_| {
            self.sent.fetch_sub(1, Ordering::SeqCst);
            Stopped
        })
    }

    /// Feeds a cluster change (an informer's add, update or delete) to the engine. Events
    /// are applied in the order sent, before the next scheduling cycle.
    ///
    /// # Errors
    /// [`Stopped`] once the driver has returned.
    pub fn apply(&self, event: ClusterEvent) -> Result<(), Stopped> {
        self.send(Command::Apply(Box::new(event)))
    }

    /// The Permit plugin `plugin` allows the waiting pod `pod`
    /// ([`Scheduler::allow`]); resolves to whether the pod was waiting on that plugin.
    ///
    /// # Errors
    /// [`Stopped`] once the driver has returned.
    pub async fn allow(&self, pod: &str, plugin: &str) -> Result<bool, Stopped> {
        let (reply, rx) = oneshot::channel();
        self.send(Command::Allow {
            pod: pod.into(),
            plugin: plugin.to_owned(),
            reply,
        })?;
        rx.await.map_err(|_| Stopped)
    }

    /// The Permit plugin `plugin` rejects the waiting pod `pod` ([`Scheduler::reject`]);
    /// resolves to whether the pod was waiting.
    ///
    /// # Errors
    /// [`Stopped`] once the driver has returned.
    pub async fn reject(&self, pod: &str, plugin: &str, reason: &str) -> Result<bool, Stopped> {
        let (reply, rx) = oneshot::channel();
        self.send(Command::Reject {
            pod: pod.into(),
            plugin: plugin.to_owned(),
            reason: reason.to_owned(),
            reply,
        })?;
        rx.await.map_err(|_| Stopped)
    }

    /// The driver's events from now on: every step the engine takes, the engine's events,
    /// failed deletions.
    pub fn subscribe(&self) -> broadcast::Receiver<DriverEvent> {
        self.events.subscribe()
    }

    /// The status as of the driver's last engine call.
    pub fn status(&self) -> DriverStatus {
        self.status.borrow().clone()
    }

    /// Resolves once every command sent so far is applied and the driver is
    /// [settled](DriverStatus::is_settled), or it stops.
    ///
    /// # Errors
    /// [`Stopped`] when the driver returned before settling.
    pub async fn settled(&self) -> Result<DriverStatus, Stopped> {
        let mut rx = self.status.clone();
        let sent = self.sent.load(Ordering::SeqCst);
        let s = rx
            .wait_for(|s| s.stopping || (s.commands_applied >= sent && s.is_settled()))
            .await
            .map_err(|_| Stopped)?
            .clone();
        if s.stopping && !(s.commands_applied >= sent && s.is_settled()) {
            return Err(Stopped);
        }
        Ok(s)
    }

    /// Asks the driver to stop (as the shutdown future given to [`Driver::run`] does).
    pub fn shutdown(&self) {
        self.stop.cancel();
    }
}

/// How a batch ended.
enum Batch {
    /// The engine is idle until then (or an event).
    Idle(Option<Duration>),
    /// Every binding slot is taken.
    SlotsFull,
    /// The batch's steps ran out; call again.
    More,
}

/// What a task reports.
enum Done {
    Bind(Box<Binding>, Result<(), BindError>),
    Delete(Preemption, Result<(), DeleteError>),
    Deallocate(PodKey, Deallocation, Result<(), DeleteError>),
    Call(Box<ExtenderCall>),
}

/// What the driver knows of a pending pod (for the metrics).
struct Tracked {
    profile: String,
    first_seen: Instant,
    attempts: u32,
    attempt_start: Instant,
    waiting: bool,
    /// Parked on an extender call: the attempt goes on when the call is back.
    calling: bool,
}

struct Engine {
    scheduler: Scheduler,
    /// The remote extenders' HTTP clients.
    clients: Arc<ExtenderClients>,
    /// Extender calls being sent.
    calls_in_flight: usize,
    commands: mpsc::UnboundedReceiver<Command>,
    commands_open: bool,
    /// Commands received while waiting, applied first.
    pending: VecDeque<Command>,
    /// Tasks that finished while waiting.
    joined: Vec<Result<(Id, Done), JoinError>>,
    tasks: JoinSet<Done>,
    /// What each running task is about, to recover from a panicking hook.
    task_of: HashMap<Id, Task>,
    binds_in_flight: usize,
    /// Pods being bound.
    in_bind: HashSet<PodKey>,
    /// Reports of pods bound, held until their binding's result is in.
    deferred: HashMap<PodKey, Vec<Command>>,
    slots: Arc<Semaphore>,
    binder: Arc<dyn Binder>,
    deleter: Option<Arc<dyn VictimDeleter>>,
    deallocator: Option<Arc<dyn ClaimDeallocator>>,
    events: broadcast::Sender<DriverEvent>,
    status: watch::Sender<DriverStatus>,
    hooks: Hooks,
    pods: HashMap<PodKey, Tracked>,
    applied: u64,
    origin: Option<Instant>,
    stopping: bool,
    fenced: Option<(PodKey, String)>,
    steps_per_call: usize,
}

enum Task {
    Bind(Box<Binding>),
    Delete(Preemption),
    /// DynamicResources' deallocation for this pod.
    Deallocate(PodKey, Deallocation),
    /// The extender call of this pod.
    Call(PodKey, tokio::task::AbortHandle),
}

impl Engine {
    fn origin(&self) -> Instant {
        self.origin.unwrap_or_else(Instant::now)
    }

    /// The engine's time now.
    fn now(&self) -> Duration {
        Instant::now().saturating_duration_since(self.origin())
    }

    /// The instant of an engine time.
    fn instant(&self, t: Duration) -> Instant {
        self.origin() + t
    }

    fn emit(&self, e: DriverEvent) {
        // No receiver is not an error.
        let _ = self.events.send(e);
    }

    fn emit_engine_events(&mut self) {
        for e in self.scheduler.drain_events() {
            self.emit(DriverEvent::Scheduler(e));
        }
    }

    /// Applies the commands and task results that arrived.
    fn absorb(&mut self) {
        let joined = std::mem::take(&mut self.joined);
        for r in joined {
            self.joined_one(r);
        }
        while let Some(r) = self.tasks.try_join_next_with_id() {
            self.joined_one(r);
        }
        while let Some(c) = self.pending.pop_front() {
            self.command(c);
        }
        while self.commands_open {
            match self.commands.try_recv() {
                Ok(c) => self.command(c),
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => self.commands_open = false,
            }
        }
        self.emit_engine_events();
    }

    fn command(&mut self, c: Command) {
        // The informer's report of a pod still being bound waits for the binding's result
        // (kube's reports arrive after the bind call returned), so that the engine closes the
        // binding first.
        if let Command::Apply(event) = &c
            && let ClusterEvent::Add(Object::Pod(p)) | ClusterEvent::Update(Object::Pod(p)) =
                event.as_ref()
            && !p.spec.node_name.is_empty()
            && self.in_bind.contains(&p.key())
        {
            self.deferred.entry(p.key()).or_default().push(c);
            return;
        }
        let now = self.now();
        match c {
            Command::Apply(event) => {
                self.track(&event);
                self.scheduler.apply(*event, now);
            }
            Command::Allow { pod, plugin, reply } => {
                let _ = reply.send(self.scheduler.allow(&pod, &plugin));
            }
            Command::Reject {
                pod,
                plugin,
                reason,
                reply,
            } => {
                let was = self.scheduler.reject(&pod, &plugin, &reason, now);
                if was {
                    self.emit(DriverEvent::Step(StepTaken::Rejected {
                        pod: pod.clone(),
                        plugin,
                        reason,
                    }));
                    self.wait_ended(&pod);
                }
                let _ = reply.send(was);
            }
        }
        self.applied += 1;
    }

    /// Keeps what the metrics need of pending pods.
    fn track(&mut self, event: &ClusterEvent) {
        match event {
            ClusterEvent::Add(Object::Pod(p)) | ClusterEvent::Update(Object::Pod(p)) => {
                let key = p.key();
                if p.spec.node_name.is_empty() && !p.is_terminating() {
                    let now = Instant::now();
                    self.pods.entry(key).or_insert_with(|| Tracked {
                        profile: profile_name(&p.spec.scheduler_name),
                        first_seen: now,
                        attempts: 0,
                        attempt_start: now,
                        waiting: false,
                        calling: false,
                    });
                } else {
                    self.pods.remove(&key);
                }
            }
            ClusterEvent::Delete(ObjectKey::Pod(key)) => {
                self.pods.remove(key);
            }
            _ => {}
        }
    }

    fn tracked(&mut self, pod: &PodKey, profile: Option<&str>) -> &mut Tracked {
        let now = Instant::now();
        self.pods.entry(pod.clone()).or_insert_with(|| Tracked {
            profile: profile.unwrap_or(DEFAULT_SCHEDULER_NAME).to_owned(),
            first_seen: now,
            attempts: 0,
            attempt_start: now,
            waiting: false,
            calling: false,
        })
    }

    /// A Permit wait ended without a bind (timed out or rejected): an unschedulable attempt.
    fn wait_ended(&mut self, pod: &PodKey) {
        let t = self.tracked(pod, None);
        t.waiting = false;
        let (profile, took) = (t.profile.clone(), t.attempt_start.elapsed());
        self.hooks.attempt(Outcome::Unschedulable, &profile, took);
    }

    /// Starts an attempt of `pod` (counted) at `start`; returns its profile.
    fn attempt(&mut self, pod: &PodKey, start: Instant, profile: Option<&str>) -> String {
        let t = self.tracked(pod, profile);
        if std::mem::take(&mut t.calling) {
            // The attempt began before its extender call.
            if let Some(p) = profile {
                p.clone_into(&mut t.profile);
            }
            return t.profile.clone();
        }
        t.attempts += 1;
        t.attempt_start = start;
        if let Some(p) = profile {
            p.clone_into(&mut t.profile);
        }
        t.profile.clone()
    }

    fn joined_one(&mut self, r: Result<(Id, Done), JoinError>) {
        let done = match r {
            Ok((id, done)) => {
                self.task_of.remove(&id);
                done
            }
            Err(e) => {
                // The hook panicked: its binding failed, its deletion did not happen.
                let id = e.id();
                let message = format!("hook panicked: {}", panic_text(e));
                match self.task_of.remove(&id) {
                    Some(Task::Bind(b)) => {
                        // Unreserve still runs (on its own task: the hook may panic again).
                        let binder = self.binder.clone();
                        let (task, error) = (b.clone(), BindError::Failed(message.clone().into()));
                        tokio::spawn(async move { binder.unreserve(&task, &error).await });
                        Done::Bind(b, Err(BindError::Failed(message.into())))
                    }
                    Some(Task::Delete(p)) => {
                        Done::Delete(p, Err(DeleteError::Failed(message.into())))
                    }
                    Some(Task::Deallocate(pod, d)) => Done::Deallocate(
                        pod,
                        d,
                        Err(DeleteError::DeallocationFailed(message.into())),
                    ),
                    Some(Task::Call(pod, _)) => {
                        self.calls_in_flight -= 1;
                        let now = self.now();
                        self.scheduler.extender_call_lost(&pod, now);
                        return;
                    }
                    None => return,
                }
            }
        };
        let now = self.now();
        match done {
            Done::Bind(b, result) => {
                self.binds_in_flight -= 1;
                let (outcome, engine_result) = match &result {
                    Ok(()) => (Outcome::Scheduled, Ok(())),
                    Err(e) => (
                        Outcome::Error,
                        Err(sched_core::scheduler::BindError::new(e.message())),
                    ),
                };
                if let Some(t) = self.pods.get(&b.pod) {
                    self.hooks
                        .attempt(outcome, &b.profile, t.attempt_start.elapsed());
                    if outcome == Outcome::Scheduled {
                        self.hooks.scheduled(t.attempts, t.first_seen.elapsed());
                    }
                }
                if outcome == Outcome::Scheduled {
                    self.pods.remove(&b.pod);
                }
                self.scheduler.finish_binding(&b.pod, engine_result, now);
                self.in_bind.remove(&b.pod);
                for c in self.deferred.remove(&b.pod).unwrap_or_default() {
                    self.command(c);
                }
                if let Err(BindError::Fenced(m)) = result {
                    self.fence(&b.pod, m);
                }
            }
            Done::Call(call) => {
                self.calls_in_flight -= 1;
                self.scheduler.extender_reply(*call);
            }
            Done::Delete(p, result) => match result {
                Ok(()) => {}
                Err(e) => {
                    self.emit(DriverEvent::PreemptionFailed {
                        pod: p.pod.clone(),
                        message: error_text(&e),
                    });
                    if let DeleteError::Fenced(m) = e {
                        self.fence(&p.pod, m);
                    }
                }
            },
            Done::Deallocate(pod, d, result) => {
                if let Err(e) = result {
                    self.emit(DriverEvent::DeallocationFailed {
                        pod: pod.clone(),
                        claim: format!("{}/{}", d.namespace, d.name),
                        message: error_text(&e),
                    });
                    if let DeleteError::Fenced(m) = e {
                        self.fence(&pod, m);
                    }
                }
            }
        }
    }

    fn fence(&mut self, pod: &PodKey, message: String) {
        self.stopping = true;
        if self.fenced.is_none() {
            self.fenced = Some((pod.clone(), message));
        }
    }

    fn publish(&mut self) {
        let counts = self.scheduler.queue().counts();
        self.hooks.pending(&counts);
        let deletions = self.task_of.len() - self.binds_in_flight - self.calls_in_flight;
        let s = DriverStatus {
            queue: counts,
            waiting: self.scheduler.waiting().count(),
            binds_in_flight: self.binds_in_flight,
            deletions_in_flight: deletions,
            commands_applied: self.applied,
            stopping: self.stopping,
        };
        self.status.send_replace(s);
    }

    /// Runs up to `steps_per_call` engine steps.
    fn batch(&mut self, rt: &Handle) -> Batch {
        self.absorb();
        let mut outcome = Batch::More;
        for _ in 0..self.steps_per_call {
            if self.stopping {
                outcome = Batch::Idle(None);
                break;
            }
            let Ok(permit) = self.slots.clone().try_acquire_owned() else {
                outcome = Batch::SlotsFull;
                break;
            };
            let start = Instant::now();
            let step = self.scheduler.schedule_one(self.now());
            // A summary costs kube's message for an unschedulable pod: only for listeners.
            if self.events.receiver_count() > 0
                && let Some(summary) = StepTaken::of(&step)
            {
                self.emit(DriverEvent::Step(summary));
            }
            match step {
                Step::Idle { until, .. } => {
                    outcome = Batch::Idle(until);
                    break;
                }
                Step::Bind {
                    pod,
                    uid,
                    node,
                    profile,
                    volumes,
                    claims,
                    extender_binder,
                    ..
                } => {
                    let waited = self.pods.get(&pod).is_some_and(|t| t.waiting);
                    if waited {
                        if let Some(t) = self.pods.get_mut(&pod) {
                            t.waiting = false;
                        }
                    } else {
                        self.attempt(&pod, start, Some(&profile));
                    }
                    let b = Binding {
                        pod,
                        uid,
                        node,
                        profile,
                        volumes,
                        claims,
                        extender_binder,
                    };
                    self.spawn_bind(b, permit, rt);
                }
                Step::Waiting { pod, .. } => {
                    self.attempt(&pod, start, None);
                    if let Some(t) = self.pods.get_mut(&pod) {
                        t.waiting = true;
                    }
                }
                Step::Unschedulable {
                    pod, deallocate, ..
                } => {
                    if let Some(d) = deallocate {
                        self.spawn_deallocate(pod.clone(), d, rt);
                    }
                    let profile = self.attempt(&pod, start, None);
                    self.hooks
                        .attempt(Outcome::Unschedulable, &profile, start.elapsed());
                    self.hooks.preemption(None);
                }
                Step::Preempt {
                    pod,
                    node,
                    victims,
                    unnominated,
                    deallocate,
                    ..
                } => {
                    if let Some(d) = deallocate {
                        self.spawn_deallocate(pod.clone(), d, rt);
                    }
                    let profile = self.attempt(&pod, start, None);
                    self.hooks
                        .attempt(Outcome::Unschedulable, &profile, start.elapsed());
                    self.hooks.preemption(Some(victims.len()));
                    let p = Preemption {
                        pod,
                        node,
                        victims,
                        unnominated,
                    };
                    self.spawn_delete(p, rt);
                }
                Step::Rejected { pod, .. } => {
                    if self.pods.get(&pod).is_some_and(|t| t.waiting) {
                        // A Permit wait timed out.
                        self.wait_ended(&pod);
                    } else {
                        let profile = self.attempt(&pod, start, None);
                        // A Reserve error backs off (kube: an error); a Permit rejection
                        // waits in the unschedulable pool (kube: unschedulable).
                        let outcome = match self.scheduler.queue().position(&pod) {
                            Some(QueueName::Backoff) => Outcome::Error,
                            _ => Outcome::Unschedulable,
                        };
                        self.hooks.attempt(outcome, &profile, start.elapsed());
                    }
                }
                Step::Failed { pod, .. } => {
                    let profile = self.attempt(&pod, start, None);
                    self.hooks
                        .attempt(Outcome::Error, &profile, start.elapsed());
                }
                Step::CallExtenders { call } => {
                    let pod = call.pod_key();
                    self.attempt(&pod, start, None);
                    if let Some(t) = self.pods.get_mut(&pod) {
                        t.calling = true;
                    }
                    self.spawn_call(call, rt);
                }
                _ => {}
            }
            self.absorb();
        }
        self.emit_engine_events();
        self.publish();
        outcome
    }

    fn spawn_bind(&mut self, b: Binding, permit: tokio::sync::OwnedSemaphorePermit, rt: &Handle) {
        let binder = self.binder.clone();
        let clients = Arc::clone(&self.clients);
        let task = b.clone();
        let h = self.tasks.spawn_on(
            async move {
                let result = match binder.pre_bind(&b).await {
                    Ok(()) => match b.extender_binder.clone() {
                        // A remote binder extender binds instead, over HTTP.
                        Some(ref ext) if let Some(r) = ext.remote() => {
                            match r.bind_request(ext.args()) {
                                Some(req) => clients
                                    .send(&req)
                                    .await
                                    .and_then(|reply| r.bind_reply(&reply))
                                    .map_err(|e| BindError::Failed(Box::new(e))),
                                None => Err(BindError::Failed(Box::new(
                                    sched_core::extender::ExtenderError::NotBinder(
                                        ext.name().to_string(),
                                    ),
                                ))),
                            }
                        }
                        // An in-process binder extender binds instead (blocking).
                        Some(ext) => tokio::task::spawn_blocking(move || ext.bind())
                            .await
                            .map_err(|e| BindError::Failed(Box::new(e)))
                            .and_then(|r| r.map_err(|e| BindError::Failed(Box::new(e)))),
                        None => binder.bind(&b).await,
                    },
                    Err(e) => Err(e),
                };
                match &result {
                    Ok(()) => binder.post_bind(&b).await,
                    Err(e) => binder.unreserve(&b, e).await,
                }
                drop(permit);
                Done::Bind(Box::new(b), result)
            },
            rt,
        );
        self.in_bind.insert(task.pod.clone());
        self.task_of.insert(h.id(), Task::Bind(Box::new(task)));
        self.binds_in_flight += 1;
    }

    /// Sends a parked pod's extender calls on a task; the finished call goes back to the
    /// engine.
    fn spawn_call(&mut self, mut call: Box<ExtenderCall>, rt: &Handle) {
        let clients = Arc::clone(&self.clients);
        let pod = call.pod_key();
        let h = self.tasks.spawn_on(
            async move {
                while let Some(request) = call.next_request() {
                    let reply = clients.send(&request).await;
                    call.answer(reply);
                }
                Done::Call(call)
            },
            rt,
        );
        self.task_of.insert(h.id(), Task::Call(pod, h));
        self.calls_in_flight += 1;
    }

    fn spawn_delete(&mut self, p: Preemption, rt: &Handle) {
        let Some(deleter) = self.deleter.clone() else {
            return;
        };
        let task = p.clone();
        let h = self.tasks.spawn_on(
            async move {
                let result = deleter.delete_victims(&p).await;
                Done::Delete(p, result)
            },
            rt,
        );
        self.task_of.insert(h.id(), Task::Delete(task));
    }

    fn spawn_deallocate(&mut self, pod: PodKey, d: Deallocation, rt: &Handle) {
        let Some(deallocator) = self.deallocator.clone() else {
            return;
        };
        let task = Task::Deallocate(pod.clone(), d.clone());
        let h = self.tasks.spawn_on(
            async move {
                let result = deallocator.deallocate(&d).await;
                Done::Deallocate(pod, d, result)
            },
            rt,
        );
        self.task_of.insert(h.id(), task);
    }
}

fn profile_name(scheduler_name: &str) -> String {
    if scheduler_name.is_empty() {
        DEFAULT_SCHEDULER_NAME.to_owned()
    } else {
        scheduler_name.to_owned()
    }
}

/// An error and its sources, `: `-separated.
fn error_text(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut source = e.source();
    while let Some(c) = source {
        s.push_str(": ");
        s.push_str(&c.to_string());
        source = c.source();
    }
    s
}
