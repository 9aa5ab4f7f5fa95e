//! A small deterministic discrete-event executor for the simulation: one thread, virtual
//! time that jumps to the next timer whenever no task can make progress, and a `Clock` per
//! elector (rate, offset, wall-clock error) over that virtual time.
//!
//! It is much cheaper per timer than tokio's paused clock in a debug build, which is what
//! lets hundreds of simulated hours run in seconds. Everything the elector uses besides time
//! (tokio's sync primitives, `select!`, cancellation tokens) is executor-agnostic.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::time::{Duration, SystemTime};

use lease_elect::{Clock, Instant, Sleep};

/// Virtual time and the timers waiting on it. Shared (Send + Sync) so clocks can hold it.
#[derive(Default)]
pub struct Time {
    now_nanos: AtomicU64,
    timers: Mutex<Timers>,
}

/// Timers in a heap of (deadline, slot, generation); a slot holds the waker of its current
/// generation, so cancelled entries are recognised and skipped without hashing.
#[derive(Default)]
struct Timers {
    heap: BinaryHeap<Reverse<(u64, u32, u32)>>,
    slots: Vec<(u32, Option<Waker>)>,
    free: Vec<u32>,
}

impl Timers {
    fn live(&self, slot: u32, generation: u32) -> bool {
        let (g, w) = &self.slots[slot as usize];
        *g == generation && w.is_some()
    }

    fn take(&mut self, slot: u32, generation: u32) -> Option<Waker> {
        if !self.live(slot, generation) {
            return None;
        }
        self.free.push(slot);
        self.slots[slot as usize].1.take()
    }
}

impl Time {
    /// Virtual time since the start.
    pub fn now(&self) -> Duration {
        Duration::from_nanos(self.now_nanos.load(Ordering::Relaxed))
    }

    fn register(&self, deadline: u64, waker: Waker) -> (u32, u32) {
        let mut t = self.timers.lock().unwrap();
        let slot = match t.free.pop() {
            Some(s) => s,
            None => {
                t.slots.push((0, None));
                u32::try_from(t.slots.len() - 1).unwrap()
            }
        };
        let entry = &mut t.slots[slot as usize];
        entry.0 = entry.0.wrapping_add(1);
        entry.1 = Some(waker);
        let generation = entry.0;
        t.heap.push(Reverse((deadline, slot, generation)));
        (slot, generation)
    }

    /// Replaces the waker of a pending timer; false if it already fired or was cancelled.
    fn update(&self, (slot, generation): (u32, u32), waker: &Waker) -> bool {
        let mut t = self.timers.lock().unwrap();
        if !t.live(slot, generation) {
            return false;
        }
        let w = t.slots[slot as usize].1.as_mut().unwrap();
        if !w.will_wake(waker) {
            *w = waker.clone();
        }
        true
    }

    fn cancel(&self, (slot, generation): (u32, u32)) {
        self.timers.lock().unwrap().take(slot, generation);
    }

    /// Advances to the earliest pending timer (not beyond `limit`) and wakes every timer due
    /// then. Returns false when no timer is due by `limit` (time is then set to `limit`).
    fn advance(&self, limit: u64) -> bool {
        let mut t = self.timers.lock().unwrap();
        while let Some(&Reverse((deadline, slot, generation))) = t.heap.peek() {
            if !t.live(slot, generation) {
                t.heap.pop(); // cancelled
                continue;
            }
            if deadline > limit {
                break;
            }
            let now = deadline.max(self.now_nanos.load(Ordering::Relaxed));
            self.now_nanos.store(now, Ordering::Relaxed);
            while let Some(&Reverse((d, slot, generation))) = t.heap.peek() {
                if d > now {
                    break;
                }
                t.heap.pop();
                if let Some(w) = t.take(slot, generation) {
                    w.wake();
                }
            }
            return true;
        }
        let now = limit.max(self.now_nanos.load(Ordering::Relaxed));
        self.now_nanos.store(now, Ordering::Relaxed);
        false
    }

    /// A future that resolves once virtual time reaches `deadline`.
    pub fn sleep_until(self: &Arc<Self>, deadline: Duration) -> SleepUntil {
        SleepUntil {
            time: self.clone(),
            deadline: u64::try_from(deadline.as_nanos()).unwrap_or(u64::MAX),
            timer: None,
        }
    }
}

/// See [`Time::sleep_until`].
pub struct SleepUntil {
    time: Arc<Time>,
    deadline: u64,
    timer: Option<(u32, u32)>,
}

impl Future for SleepUntil {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.time.now_nanos.load(Ordering::Relaxed) >= self.deadline {
            self.timer = None;
            return Poll::Ready(());
        }
        if let Some(timer) = self.timer
            && self.time.update(timer, cx.waker())
        {
            return Poll::Pending;
        }
        let timer = self.time.register(self.deadline, cx.waker().clone());
        self.timer = Some(timer);
        Poll::Pending
    }
}

impl Drop for SleepUntil {
    fn drop(&mut self) {
        if let Some(timer) = self.timer.take() {
            self.time.cancel(timer);
        }
    }
}

/// One elector's view of virtual time: `local = offset + rate * virtual`.
#[derive(Clone)]
pub struct VirtualClock {
    pub time: Arc<Time>,
    pub rate: f64,
    pub offset: Duration,
    pub wall_start: SystemTime,
}

impl VirtualClock {
    fn local(&self, global: Duration) -> Duration {
        if self.rate == 1.0 {
            global
        } else {
            Duration::from_nanos((global.as_nanos() as f64 * self.rate).floor() as u64)
        }
    }
}

impl Clock for VirtualClock {
    fn now(&self) -> Instant {
        Instant::from_origin(self.offset + self.local(self.time.now()))
    }

    fn wall(&self) -> SystemTime {
        self.wall_start + self.local(self.time.now())
    }

    fn sleep_until(&self, deadline: Instant) -> Sleep {
        let local = deadline.since_origin().saturating_sub(self.offset);
        let mut global = if self.rate == 1.0 {
            local
        } else {
            Duration::from_nanos((local.as_nanos() as f64 / self.rate).ceil() as u64)
        };
        while self.local(global) < local {
            global += Duration::from_nanos(1);
        }
        Box::pin(self.time.sleep_until(global))
    }
}

type Task = Pin<Box<dyn Future<Output = ()>>>;

struct TaskWaker {
    id: usize,
    queued: AtomicBool,
    ready: Arc<Mutex<VecDeque<usize>>>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref();
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if !self.queued.swap(true, Ordering::AcqRel) {
            self.ready.lock().unwrap().push_back(self.id);
        }
    }
}

/// The executor: tasks, a ready queue, and the virtual time they share.
pub struct Executor {
    pub time: Arc<Time>,
    tasks: Vec<Option<(Task, Arc<TaskWaker>, Waker)>>,
    ready: Arc<Mutex<VecDeque<usize>>>,
}

/// A spawned task's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaskId(usize);

impl Executor {
    pub fn new() -> Self {
        Executor {
            time: Arc::default(),
            tasks: Vec::new(),
            ready: Arc::default(),
        }
    }

    pub fn spawn(&mut self, fut: impl Future<Output = ()> + 'static) -> TaskId {
        let id = self.tasks.len();
        let flag = Arc::new(TaskWaker {
            id,
            queued: AtomicBool::new(true),
            ready: self.ready.clone(),
        });
        let waker = Waker::from(flag.clone());
        self.tasks.push(Some((Box::pin(fut), flag, waker)));
        self.ready.lock().unwrap().push_back(id);
        TaskId(id)
    }

    /// Drops a task (a crash).
    pub fn abort(&mut self, id: TaskId) {
        self.tasks[id.0] = None;
    }

    pub fn is_finished(&self, id: TaskId) -> bool {
        self.tasks[id.0].is_none()
    }

    /// Runs every task that can make progress, advancing virtual time as needed, until time
    /// reaches `until` (since the start).
    pub fn run_until(&mut self, until: Duration) {
        let limit = u64::try_from(until.as_nanos()).unwrap_or(u64::MAX);
        loop {
            self.run_ready();
            if !self.time.advance(limit) {
                self.run_ready();
                return;
            }
        }
    }

    fn run_ready(&mut self) {
        loop {
            let next = self.ready.lock().unwrap().pop_front();
            let Some(id) = next else { return };
            let Some((task, flag, waker)) = self.tasks[id].as_mut() else {
                continue;
            };
            flag.queued.store(false, Ordering::Release);
            let waker = waker.clone();
            let mut cx = Context::from_waker(&waker);
            if task.as_mut().poll(&mut cx).is_ready() {
                self.tasks[id] = None;
            }
        }
    }
}
