//! kube-scheduler's `--config` file: `KubeSchedulerConfiguration`
//! (`kubescheduler.config.k8s.io/v1`) in YAML or JSON, defaulted, validated and compiled
//! into one [`Profile`](crate::profile::Profile) per `schedulerName`, with kube-scheduler
//! v1.34's plugins and formulas.
//!
//! ```
//! use sched_core::config::{Registry, SchedulerConfiguration};
//! use sched_core::bench_cluster::{benchmark_cluster, benchmark_pod};
//! use sched_core::snapshot::Snapshot;
//!
//! let config = SchedulerConfiguration::from_text(r#"
//! apiVersion: kubescheduler.config.k8s.io/v1
//! kind: KubeSchedulerConfiguration
//! profiles:
//! - schedulerName: default-scheduler
//! - schedulerName: bin-packing
//!   pluginConfig:
//!   - name: NodeResourcesFit
//!     args:
//!       scoringStrategy:
//!         type: MostAllocated
//! "#)?;
//! let profiles = config.compile(&Registry::v1_34())?;
//! assert_eq!(profiles.names().collect::<Vec<_>>(), ["default-scheduler", "bin-packing"]);
//!
//! let (nodes, running) = benchmark_cluster(10);
//! let snapshot = Snapshot::from_objects(nodes, running)?;
//! let mut pod = benchmark_pod(0);
//! pod.spec.scheduler_name = "bin-packing".into();
//! let profile = profiles.for_pod(&pod)?;
//! let mut cache = profile.create_cache();
//! let placed = profile.schedule(&mut cache, &pod, &snapshot)?;
//! assert!(placed.node.starts_with("node-"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # What is read
//! Every field of the v1 format is read and validated with kube's rules
//! (`pkg/scheduler/apis/config/validation`): `parallelism`, `percentageOfNodesToScore`
//! (global and per profile), `podInitialBackoffSeconds`, `podMaxBackoffSeconds`, `profiles`
//! (`schedulerName`, `plugins` for every extension point and `multiPoint`, `pluginConfig`),
//! `extenders`. Unknown fields are errors, as kube decodes strictly. Every problem is reported
//! at once, each with its field path.
//!
//! Defaulting is kube's (`pkg/scheduler/apis/config/v1/defaults.go`): a missing `profiles`
//! list gives one profile; a single profile without a name is `default-scheduler`; each
//! profile's plugins are merged into v1.34's default `multiPoint` set (a plugin listed again
//! replaces the default in place, weight included; `disabled` removes defaults, `*` all of
//! them); a score weight of 0 or none is 1; plugin arguments are defaulted per plugin.
//!
//! # What is used, and what is accepted but not acted on
//! - Decisions: the `filter` and `score` plugins each profile ends up with (after `multiPoint`
//!   expansion, kube's ordering and override rules), their arguments, and
//!   `percentageOfNodesToScore` (the profile's, else the global one, else adaptive).
//! - Validated but without effect on a decision function: `parallelism` (use
//!   [`ProfileBuilder::threads`](crate::profile::ProfileBuilder::threads)), the backoff
//!   seconds, `queueSort`/`preEnqueue`/`reserve`/`permit`/`preBind`/`bind`/`postBind` plugins
//!   (the scheduling cycle's), `DefaultPreemption`'s arguments, `clientConnection`,
//!   `leaderElection`, `enableProfiling`, `enableContentionProfiling`,
//!   `delayCacheUntilActive`.
//! - `SchedulingGates` is always in force: a gated pod is
//!   [`SchedulingGated`](crate::profile::ScheduleError::SchedulingGated), whatever the
//!   profile says. A profile that disables `DynamicResources` makes a pod with
//!   `resourceClaims` an explicit unsupported outcome rather than a placement without its
//!   devices.
//! - `extenders` ([`crate::extender::ExtenderConfig`]): read with kube's validation (a positive
//!   weight for a prioritizer, valid and distinct extended resource names, at most one
//!   binder; `httpTimeout` in Go's duration syntax, `tlsConfig`'s `*Data` fields in base64);
//!   resources managed with `ignoredByScheduler` replace every profile's NodeResourcesFit
//!   `ignoredResources` (kube's `buildExtenders`); the extenders are run by the scheduling
//!   engine ([`crate::scheduler::Scheduler::from_config`]). [`SchedulerConfiguration::compile`]
//!   and [`SchedulerConfiguration::builders`] refuse a configuration with extenders
//!   ([`ProblemKind::Unsupported`]), since a bare [`Profile`](crate::profile::Profile) does
//!   not call them and would place pods otherwise than kube; clear `extenders` to compile the
//!   profiles alone.
//! - Volume plugins (`VolumeBinding`, `VolumeZone`, `NodeVolumeLimits`): a pod with a
//!   PersistentVolumeClaim, ephemeral or CSI volume gets an explicit unsupported outcome
//!   from them; other pods pass. `VolumeRestrictions` checks in-tree disk conflicts.

mod args;
mod compile;
mod error;
mod parse;

pub use args::{
    DefaultPreemptionArgs, DefaultingType, InterPodAffinityArgs, NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs, PluginArgs, PodTopologySpreadArgs,
    ScoringStrategy, ScoringStrategyType, VolumeBindingArgs,
};
pub use compile::{DEFAULT_SCHEDULER_NAME, Profiles, Registry, UnknownProfile};
pub use error::{ConfigError, ConfigProblem, ProblemKind};

/// The `apiVersion` this module reads.
pub const API_VERSION: &str = "kubescheduler.config.k8s.io/v1";

/// A `KubeSchedulerConfiguration`, defaulted and validated as kube-scheduler does.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SchedulerConfiguration {
    /// `parallelism` (default 16). Validated; it does not change decisions.
    pub parallelism: i32,
    /// The global `percentageOfNodesToScore`; `None` is adaptive.
    pub percentage_of_nodes_to_score: Option<u32>,
    /// `podInitialBackoffSeconds` (default 1).
    pub pod_initial_backoff_seconds: i64,
    /// `podMaxBackoffSeconds` (default 10).
    pub pod_max_backoff_seconds: i64,
    /// The profiles, in document order.
    pub profiles: Vec<ProfileConfig>,
    /// `extenders`, in order (run by [`crate::scheduler::Scheduler::from_config`]).
    pub extenders: Vec<crate::extender::ExtenderConfig>,
    /// `leaderElection`: whether replicas elect a leader, and the Lease they use.
    pub leader_election: LeaderElectionConfig,
}

/// A configuration's `leaderElection`, with kube-scheduler's defaults: leader election on,
/// the Lease `kube-system/kube-scheduler`, a 15 s lease renewed within 10 s, tried every 2 s.
///
/// ```
/// use std::time::Duration;
/// use sched_core::config::SchedulerConfiguration;
///
/// let c = SchedulerConfiguration::from_text(
///     "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n\
///      leaderElection:\n  leaseDuration: 4s\n  renewDeadline: 3s\n  resourceName: my-scheduler\n",
/// )?;
/// let le = &c.leader_election;
/// assert!(le.leader_elect);
/// assert_eq!((le.lease_duration, le.retry_period), (Duration::from_secs(4), Duration::from_secs(2)));
/// assert_eq!((le.resource_namespace.as_str(), le.resource_name.as_str()), ("kube-system", "my-scheduler"));
/// # Ok::<(), sched_core::config::ConfigError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaderElectionConfig {
    /// `leaderElect` (default true).
    pub leader_elect: bool,
    /// `leaseDuration` (default 15 s).
    pub lease_duration: std::time::Duration,
    /// `renewDeadline` (default 10 s).
    pub renew_deadline: std::time::Duration,
    /// `retryPeriod` (default 2 s).
    pub retry_period: std::time::Duration,
    /// `resourceName`: the Lease's name (default `kube-scheduler`).
    pub resource_name: String,
    /// `resourceNamespace`: the Lease's namespace (default `kube-system`).
    pub resource_namespace: String,
}

impl Default for LeaderElectionConfig {
    fn default() -> Self {
        LeaderElectionConfig {
            leader_elect: true,
            lease_duration: std::time::Duration::from_secs(15),
            renew_deadline: std::time::Duration::from_secs(10),
            retry_period: std::time::Duration::from_secs(2),
            resource_name: "kube-scheduler".into(),
            resource_namespace: "kube-system".into(),
        }
    }
}

/// One profile: a scheduler name and its plugins, merged with v1.34's defaults.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct ProfileConfig {
    /// `schedulerName`: pods whose `spec.schedulerName` equals it use this profile.
    pub scheduler_name: String,
    /// The profile's own `percentageOfNodesToScore`, if set.
    pub percentage_of_nodes_to_score: Option<u32>,
    /// The plugins per extension point, after merging with the defaults.
    pub plugins: Plugins,
    /// `pluginConfig`, defaulted: the arguments of every plugin that has any.
    pub plugin_config: Vec<(String, PluginArgs)>,
}

impl ProfileConfig {
    /// The arguments configured for `plugin`, if any.
    pub fn args(&self, plugin: &str) -> Option<&PluginArgs> {
        self.plugin_config
            .iter()
            .find(|(n, _)| n == plugin)
            .map(|(_, a)| a)
    }
}

/// A profile's plugins per extension point (kube's `Plugins`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Plugins {
    /// `multiPoint`: each plugin at every point it implements.
    pub multi_point: PluginSet,
    /// `preEnqueue`.
    pub pre_enqueue: PluginSet,
    /// `queueSort`.
    pub queue_sort: PluginSet,
    /// `preFilter`.
    pub pre_filter: PluginSet,
    /// `filter`.
    pub filter: PluginSet,
    /// `postFilter`.
    pub post_filter: PluginSet,
    /// `preScore`.
    pub pre_score: PluginSet,
    /// `score`.
    pub score: PluginSet,
    /// `reserve`.
    pub reserve: PluginSet,
    /// `permit`.
    pub permit: PluginSet,
    /// `preBind`.
    pub pre_bind: PluginSet,
    /// `bind`.
    pub bind: PluginSet,
    /// `postBind`.
    pub post_bind: PluginSet,
}

impl Plugins {
    /// The extension points with their field names, in kube's order.
    pub fn points(&self) -> [(&'static str, &PluginSet); 12] {
        [
            ("preEnqueue", &self.pre_enqueue),
            ("queueSort", &self.queue_sort),
            ("preFilter", &self.pre_filter),
            ("filter", &self.filter),
            ("postFilter", &self.post_filter),
            ("preScore", &self.pre_score),
            ("score", &self.score),
            ("reserve", &self.reserve),
            ("permit", &self.permit),
            ("preBind", &self.pre_bind),
            ("bind", &self.bind),
            ("postBind", &self.post_bind),
        ]
    }

    fn points_mut(&mut self) -> [&mut PluginSet; 13] {
        [
            &mut self.multi_point,
            &mut self.pre_enqueue,
            &mut self.queue_sort,
            &mut self.pre_filter,
            &mut self.filter,
            &mut self.post_filter,
            &mut self.pre_score,
            &mut self.score,
            &mut self.reserve,
            &mut self.permit,
            &mut self.pre_bind,
            &mut self.bind,
            &mut self.post_bind,
        ]
    }
}

/// Plugins enabled and disabled at one extension point.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct PluginSet {
    /// Enabled plugins, in order.
    pub enabled: Vec<PluginRef>,
    /// Disabled plugin names (`*`: every default one).
    pub disabled: Vec<String>,
}

/// A plugin named in a [`PluginSet`], with its score weight if one was given.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginRef {
    /// The plugin's name.
    pub name: String,
    /// The score weight as written (`None` and 0 both mean 1 when the plugin scores).
    pub weight: Option<i32>,
}

impl PluginRef {
    /// A plugin with an optional weight.
    pub fn new(name: impl Into<String>, weight: Option<i32>) -> PluginRef {
        PluginRef {
            name: name.into(),
            weight,
        }
    }
}

impl SchedulerConfiguration {
    /// Reads a configuration from YAML or JSON text (JSON when it starts with `{`), applies
    /// kube's defaults and validates it.
    ///
    /// # Errors
    /// A [`ConfigError`] listing every problem, each with its field path.
    pub fn from_text(text: &str) -> Result<SchedulerConfiguration, ConfigError> {
        let value = parse::to_value(text)?;
        parse::configuration(&value)
    }

    /// [`SchedulerConfiguration::from_text`] over bytes (a UTF-8 byte order mark is skipped).
    ///
    /// # Errors
    /// As [`SchedulerConfiguration::from_text`]; text that is not UTF-8 is a syntax problem.
    pub fn from_bytes(bytes: &[u8]) -> Result<SchedulerConfiguration, ConfigError> {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        match std::str::from_utf8(bytes) {
            Ok(text) => SchedulerConfiguration::from_text(text),
            Err(e) => Err(ConfigError::one(
                "",
                ProblemKind::Syntax(format!(
                    "not UTF-8 text: invalid byte at offset {}",
                    e.valid_up_to()
                )),
            )),
        }
    }

    /// Reads the file at `path`; errors name the file.
    ///
    /// # Errors
    /// As [`SchedulerConfiguration::from_bytes`], or a syntax problem when the file cannot
    /// be read.
    pub fn from_file(
        path: impl AsRef<std::path::Path>,
    ) -> Result<SchedulerConfiguration, ConfigError> {
        let path = path.as_ref();
        let name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|e| {
            ConfigError::one("", ProblemKind::Syntax(format!("cannot read: {e}")))
                .in_file(name.clone())
        })?;
        SchedulerConfiguration::from_bytes(&bytes).map_err(|e| e.in_file(name))
    }

    /// kube's defaults with nothing configured: one `default-scheduler` profile with
    /// v1.34's default plugins.
    pub fn v1_34_default() -> SchedulerConfiguration {
        parse::configuration(&serde_json::json!({
            "apiVersion": API_VERSION,
            "kind": "KubeSchedulerConfiguration",
        }))
        .expect("the empty configuration is valid")
    }

    /// The profile named `scheduler_name`.
    pub fn profile(&self, scheduler_name: &str) -> Option<&ProfileConfig> {
        self.profiles
            .iter()
            .find(|p| p.scheduler_name == scheduler_name)
    }
}
