//! Helpers shared by the integration tests.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use lease_elect::{
    ElectionConfig, ElectionEvent, LeaderCallbacks, LeaderElectionRecord, LeaderGuard, LockError,
    MemoryLock, MemoryStore, ResourceLock, SimClock, Version,
};

type Hook = Box<dyn FnMut(&str, usize) -> Option<LockError> + Send>;

/// A lock that logs every call (like client-go's fake clientset actions) and can fail chosen
/// calls before they reach the store.
#[derive(Clone)]
pub struct CountingLock {
    pub inner: MemoryLock,
    pub calls: Arc<Mutex<Vec<String>>>,
    hook: Arc<Mutex<Option<Hook>>>,
    strip_sequences: bool,
}

impl CountingLock {
    pub fn new(store: &MemoryStore, identity: &str) -> Self {
        CountingLock {
            inner: MemoryLock::new(store, identity),
            calls: Arc::default(),
            hook: Arc::default(),
            strip_sequences: false,
        }
    }

    /// Versions without sequences, so tokens come from leaderTransitions.
    pub fn without_sequences(mut self) -> Self {
        self.strip_sequences = true;
        self
    }

    /// Fails calls for which `hook(verb, index of this verb's call)` returns an error.
    pub fn fail_when(&self, hook: impl FnMut(&str, usize) -> Option<LockError> + Send + 'static) {
        *self.hook.lock().unwrap() = Some(Box::new(hook));
    }

    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    pub fn clear_calls(&self) {
        self.calls.lock().unwrap().clear();
    }

    fn enter(&self, verb: &str) -> Result<(), LockError> {
        let n = {
            let mut calls = self.calls.lock().unwrap();
            let n = calls.iter().filter(|c| *c == verb).count();
            calls.push(verb.to_owned());
            n
        };
        match self.hook.lock().unwrap().as_mut() {
            Some(h) => h(verb, n).map_or(Ok(()), Err),
            None => Ok(()),
        }
    }

    fn out(&self, v: Version) -> Version {
        if self.strip_sequences {
            Version::new(format!("rv-{}", v.tag()))
        } else {
            v
        }
    }

    fn back(&self, v: &Version) -> Version {
        if self.strip_sequences {
            Version::from_sequence(v.tag().trim_start_matches("rv-").parse().unwrap_or(0))
        } else {
            v.clone()
        }
    }
}

#[async_trait]
impl ResourceLock for CountingLock {
    async fn get(&self) -> Result<Option<(LeaderElectionRecord, Version)>, LockError> {
        self.enter("get")?;
        Ok(self.inner.get().await?.map(|(r, v)| (r, self.out(v))))
    }
    async fn create(&self, record: &LeaderElectionRecord) -> Result<Version, LockError> {
        self.enter("create")?;
        self.inner.create(record).await.map(|v| self.out(v))
    }
    async fn update(
        &self,
        expected: &Version,
        record: &LeaderElectionRecord,
    ) -> Result<Version, LockError> {
        self.enter("update")?;
        self.inner
            .update(&self.back(expected), record)
            .await
            .map(|v| self.out(v))
    }
    async fn delete(&self, expected: &Version) -> Result<(), LockError> {
        self.enter("delete")?;
        self.inner.delete(&self.back(expected)).await
    }
    async fn wait_for_change(&self, seen: Option<&Version>) {
        let seen = seen.map(|v| self.back(v));
        self.inner.wait_for_change(seen.as_ref()).await;
    }
    fn identity(&self) -> &str {
        self.inner.identity()
    }
    fn describe(&self) -> String {
        self.inner.describe()
    }
    fn record_event(&self, event: &ElectionEvent) {
        self.inner.record_event(event);
    }
}

/// A config on `lock` with a simulated clock and client-go's test timings.
pub fn sim_config(lock: impl ResourceLock + 'static, lease: u64) -> ElectionConfig {
    ElectionConfig::builder()
        .lock(lock)
        .clock(SimClock::new())
        // client-go creates a missing record at once, as the ported tests expect (the wait
        // for a missing record, on by default, is checked in tests/safety.rs).
        .absent_record_wait(false)
        .lease_duration(Duration::from_secs(lease))
        .renew_deadline(Duration::from_secs(lease * 2 / 3))
        .retry_period(Duration::from_secs(lease / 7).max(Duration::from_secs(1)))
        .seed(7)
        .build()
        .expect("valid config")
}

/// A record held by `holder`.
pub fn held_by(holder: &str, lease_secs: u32) -> LeaderElectionRecord {
    LeaderElectionRecord {
        holder_identity: holder.to_owned(),
        lease_duration_seconds: lease_secs,
        ..Default::default()
    }
}

/// Callbacks that log what happened.
#[derive(Clone, Default)]
pub struct Recorder {
    pub log: Arc<Mutex<Vec<String>>>,
    pub tokens: Arc<Mutex<Vec<u64>>>,
}

impl Recorder {
    pub fn log(&self) -> Vec<String> {
        self.log.lock().unwrap().clone()
    }
}

#[async_trait]
impl LeaderCallbacks for Recorder {
    async fn on_started_leading(&self, guard: LeaderGuard) {
        self.tokens.lock().unwrap().push(guard.token().0);
        self.log
            .lock()
            .unwrap()
            .push(format!("started {}", guard.token()));
        guard.lost().await;
        self.log.lock().unwrap().push("work saw loss".into());
    }
    fn on_stopped_leading(&self) {
        self.log.lock().unwrap().push("stopped".into());
    }
    fn on_new_leader(&self, identity: &str) {
        self.log
            .lock()
            .unwrap()
            .push(format!("new leader {identity}"));
    }
    fn on_run_ended(&self) {
        self.log.lock().unwrap().push("ended".into());
    }
}
