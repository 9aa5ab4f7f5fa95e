//! Building an engine: from profiles ([`Scheduler::new`]) or from a
//! `KubeSchedulerConfiguration` ([`Scheduler::from_config`]), and the builder methods that add
//! hooks, extenders and settings.

use std::sync::Arc;
use std::time::Duration;

use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

use super::binding::AssumedPods;
use super::hooks::ReserveHook;
use super::post_filter::PostFilterPlugins;
use super::{
    Nominator, PermitPlugin, QueueSettings, ReservePlugin, Scheduler, SchedulingQueue, Slot,
};
use crate::config::{ConfigError, Registry, SchedulerConfiguration};
use crate::extender::{Extender, RemoteExtender, Transport};
use crate::profile::Profile;
use crate::snapshot::Snapshot;

/// The configuration's extenders as remote extenders, the ignorable ones last (kube's
/// `buildExtenders`): the engine hands their calls out ([`super::Step::CallExtenders`]).
fn remote_extenders(config: &SchedulerConfiguration) -> Vec<Arc<dyn Extender>> {
    let (ignorable, required): (Vec<_>, Vec<_>) =
        config.extenders.iter().partition(|e| e.ignorable);
    required
        .into_iter()
        .chain(ignorable)
        .map(|e| Arc::new(RemoteExtender::new(e)) as Arc<dyn Extender>)
        .collect()
}

impl Scheduler {
    /// A scheduler with these profiles `(scheduler name, profile)` over `snapshot`.
    pub fn new(
        profiles: Vec<(String, Profile)>,
        snapshot: Snapshot,
        settings: QueueSettings,
    ) -> Scheduler {
        Scheduler {
            snapshot,
            profiles: profiles
                .into_iter()
                .map(|(name, profile)| Slot {
                    cache: profile.create_cache(),
                    name,
                    profile,
                    post_filter: PostFilterPlugins::default_preemption(),
                })
                .collect(),
            queue: SchedulingQueue::new(settings),
            assumed: AssumedPods::default(),
            events: Vec::new(),
            reserve: Arc::from([ReserveHook::VolumeBinding, ReserveHook::DynamicResources]),
            permit: Vec::new(),
            nominator: Nominator::new(),
            pdbs: Vec::new(),
            preemption_rng: ChaCha8Rng::seed_from_u64(0),
            extenders: Vec::new(),
            next_start_index: 0,
            parked: Default::default(),
            replies: Default::default(),
            last_call: 0,
            gang: None,
        }
    }

    /// Turns gang scheduling on: scheduler-plugins' Coscheduling ([`super::gang`]) for every
    /// profile, its QueueSort ordering the queue. PodGroups come as
    /// [`Object::PodGroup`](super::Object::PodGroup) events.
    #[must_use]
    pub fn with_coscheduling(mut self, args: super::gang::CoschedulingArgs) -> Scheduler {
        self.gang = Some(super::gang::Coscheduling::new(args));
        self.queue.use_group_order();
        self
    }

    /// Seeds the generator of preemption's dry-run offset (kube's random
    /// `GetOffsetAndNumCandidates`); [`Scheduler::from_config`] seeds it with its `seed`,
    /// [`Scheduler::new`] with 0.
    #[must_use]
    pub fn with_preemption_seed(mut self, seed: u64) -> Scheduler {
        self.preemption_rng = ChaCha8Rng::seed_from_u64(seed);
        self
    }

    /// Adds a scheduler extender (called in the order added, for every profile, as kube
    /// calls a configuration's `extenders`; see [`crate::extender`]).
    #[must_use]
    pub fn with_extender(mut self, extender: impl Extender + 'static) -> Scheduler {
        self.extenders.push(Arc::new(extender));
        self
    }

    /// Turns preemption off (or on, with kube's default arguments) for every profile.
    #[must_use]
    pub fn with_preemption(mut self, on: bool) -> Scheduler {
        for s in &mut self.profiles {
            s.post_filter.set_preemption(on);
        }
        self
    }

    /// Adds a Reserve plugin (run in the order added, for every profile).
    #[must_use]
    pub fn with_reserve(mut self, plugin: impl ReservePlugin + 'static) -> Scheduler {
        let mut hooks = self.reserve.to_vec();
        hooks.push(ReserveHook::Plugin(Arc::new(plugin)));
        self.reserve = hooks.into();
        self
    }

    /// Adds a Permit plugin (run in the order added, for every profile).
    #[must_use]
    pub fn with_permit(mut self, plugin: impl PermitPlugin + 'static) -> Scheduler {
        self.permit.push(Arc::new(plugin));
        self
    }

    /// A scheduler from a `KubeSchedulerConfiguration`: its profiles (one thread each, ties
    /// broken by an RNG seeded with `seed`) and its backoff settings.
    ///
    /// # Errors
    /// The configuration's compile errors.
    pub fn from_config(
        config: &SchedulerConfiguration,
        registry: &Registry,
        snapshot: Snapshot,
        seed: u64,
    ) -> Result<Scheduler, ConfigError> {
        let mut profiles = Vec::new();
        for (name, b) in config.profile_builders(registry)? {
            let profile = b.threads(1).seed(seed).build().map_err(|e| {
                ConfigError::new(vec![crate::config::ConfigProblem::new(
                    "profiles",
                    crate::config::ProblemKind::Plugins(e.to_string()),
                )])
            })?;
            profiles.push((name, profile));
        }
        let settings = QueueSettings::with_backoff(
            Duration::from_secs(config.pod_initial_backoff_seconds.max(0) as u64),
            Duration::from_secs(config.pod_max_backoff_seconds.max(0) as u64),
        );
        let mut scheduler = Scheduler::new(profiles, snapshot, settings).with_preemption_seed(seed);
        for (slot, p) in scheduler.profiles.iter_mut().zip(&config.profiles) {
            slot.post_filter = PostFilterPlugins::of(p, registry);
        }
        scheduler.extenders = remote_extenders(config);
        Ok(scheduler)
    }

    /// The remote extenders' preempt verbs go through `transport` (preemption calls them
    /// synchronously, within the attempt); without one, a remote extender's preempt verb
    /// fails (skipped when ignorable, else preemption is abandoned).
    #[must_use]
    pub fn with_preempt_transport(mut self, transport: Arc<dyn Transport>) -> Scheduler {
        for e in &mut self.extenders {
            if let Some(r) = e.remote()
                && e.supports_preemption()
            {
                let r = r.clone().with_preempt_transport(Arc::clone(&transport));
                *e = Arc::new(r);
            }
        }
        self
    }

    /// Replaces the remote extenders (a configuration's) by blocking [`HttpExtender`]s called
    /// in the engine, as kube does: each call holds the engine up for up to its `httpTimeout`.
    /// For a caller that runs the engine by hand with no way to send
    /// [`super::Step::CallExtenders`].
    ///
    /// [`HttpExtender`]: crate::extender::HttpExtender
    ///
    /// # Errors
    /// TLS settings the blocking client cannot use or certificate files it cannot read.
    #[cfg(feature = "http-extender")]
    pub fn with_blocking_http_extenders(mut self) -> Result<Scheduler, ConfigError> {
        let mut problems = Vec::new();
        for (i, e) in self.extenders.iter_mut().enumerate() {
            let Some(r) = e.remote() else { continue };
            match crate::extender::HttpExtender::new(r.config()) {
                Ok(h) => *e = Arc::new(h),
                Err(err) => problems.push(crate::config::ConfigProblem::new(
                    format!("extenders[{i}]"),
                    crate::config::ProblemKind::Plugins(err.to_string()),
                )),
            }
        }
        if problems.is_empty() {
            Ok(self)
        } else {
            Err(ConfigError::new(problems))
        }
    }

    /// The same engine with these queue settings (for instance kube v1.32's queue:
    /// `let q = *sched.queue().settings(); sched.with_queue_settings(q.without_pop_from_backoff())`).
    #[must_use]
    pub fn with_queue_settings(mut self, settings: QueueSettings) -> Scheduler {
        self.queue.set_settings(settings);
        self
    }
}
