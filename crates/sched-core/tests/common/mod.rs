//! Test support: a profile with one cache, for tests that schedule on one thread.

#![allow(dead_code)]

use sched_core::model::Pod;
use sched_core::profile::{
    BuildError, Cache, Profile, ProfileBuilder, ScheduleError, ScheduleResult, ScoreTable,
};
use sched_core::snapshot::Snapshot;

/// A profile and the cache one worker schedules with.
pub struct Worker {
    pub profile: Profile,
    pub cache: Cache,
}

impl From<Profile> for Worker {
    fn from(profile: Profile) -> Worker {
        let cache = profile.create_cache();
        Worker { profile, cache }
    }
}

impl std::ops::Deref for Worker {
    type Target = Profile;
    fn deref(&self) -> &Profile {
        &self.profile
    }
}

impl Worker {
    pub fn schedule(
        &mut self,
        pod: &Pod,
        snapshot: &Snapshot,
    ) -> Result<ScheduleResult, ScheduleError> {
        self.profile.schedule(&mut self.cache, pod, snapshot)
    }

    pub fn schedule_and_assume(
        &mut self,
        pod: &Pod,
        snapshot: &mut Snapshot,
    ) -> Result<ScheduleResult, ScheduleError> {
        self.profile
            .schedule_and_assume(&mut self.cache, pod, snapshot)
    }

    pub fn last_scores(&self) -> ScoreTable<'_> {
        self.profile.last_scores(&self.cache)
    }

    pub fn next_start_index(&self) -> usize {
        self.cache.next_start_index()
    }
}

/// Builds a worker from a profile builder.
pub trait BuildWorker {
    fn build_worker(self) -> Result<Worker, BuildError>;
}

impl BuildWorker for ProfileBuilder {
    fn build_worker(self) -> Result<Worker, BuildError> {
        self.build().map(Worker::from)
    }
}
