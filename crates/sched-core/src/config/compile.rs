//! From a [`SchedulerConfiguration`] to one [`Profile`] per scheduler name: the plugin
//! registry (v1.34's built-ins and custom plugins by name), kube's `multiPoint` expansion and
//! its checks, and the profiles keyed by `schedulerName`.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::args::{DefaultingType, PluginArgs, ScoringStrategyType};
use super::error::{ConfigError, ConfigProblem, ProblemKind};
use super::{PluginRef, PluginSet, Plugins, ProfileConfig, SchedulerConfiguration};
use crate::framework::{BoxPredicate, BoxPriority, KubeVersion, PluginError, PluginErrorKind};
use crate::model::Pod;
use crate::plugins::interpod::NamespaceLabels;
use crate::plugins::spread::DefaultConstraints;
use crate::plugins::{interpod, node, resource, spread};
use crate::profile::{Profile, ProfileBuilder};

/// The scheduler name of a pod that names none, and of a single unnamed profile.
pub const DEFAULT_SCHEDULER_NAME: &str = "default-scheduler";

/// kube-scheduler v1.34's default plugins (`getDefaultPlugins`, with `DynamicResources`,
/// enabled by default since v1.34, before `DefaultPreemption`).
pub(crate) fn default_plugins() -> Plugins {
    let p = |name: &str, weight: Option<i32>| PluginRef::new(name, weight);
    Plugins {
        multi_point: PluginSet {
            enabled: vec![
                p("SchedulingGates", None),
                p("PrioritySort", None),
                p("NodeUnschedulable", None),
                p("NodeName", None),
                p("TaintToleration", Some(3)),
                p("NodeAffinity", Some(2)),
                p("NodePorts", None),
                p("NodeResourcesFit", Some(1)),
                p("VolumeRestrictions", None),
                p("NodeVolumeLimits", None),
                p("VolumeBinding", None),
                p("VolumeZone", None),
                p("PodTopologySpread", Some(2)),
                p("InterPodAffinity", Some(2)),
                p("DynamicResources", None),
                p("DefaultPreemption", None),
                p("NodeResourcesBalancedAllocation", Some(1)),
                p("ImageLocality", Some(1)),
                p("DefaultBinder", None),
            ],
            disabled: Vec::new(),
        },
        ..Plugins::default()
    }
}

/// Extension points, as bits.
mod point {
    pub const PRE_ENQUEUE: u16 = 1;
    pub const QUEUE_SORT: u16 = 1 << 1;
    pub const PRE_FILTER: u16 = 1 << 2;
    pub const FILTER: u16 = 1 << 3;
    pub const POST_FILTER: u16 = 1 << 4;
    pub const PRE_SCORE: u16 = 1 << 5;
    pub const SCORE: u16 = 1 << 6;
    pub const RESERVE: u16 = 1 << 7;
    pub const PERMIT: u16 = 1 << 8;
    pub const PRE_BIND: u16 = 1 << 9;
    pub const BIND: u16 = 1 << 10;
    pub const POST_BIND: u16 = 1 << 11;

    /// The points in [`super::Plugins::points`] order, with kube's interface names.
    pub const ALL: [(u16, &str); 12] = [
        (PRE_ENQUEUE, "PreEnqueuePlugin"),
        (QUEUE_SORT, "QueueSortPlugin"),
        (PRE_FILTER, "PreFilterPlugin"),
        (FILTER, "FilterPlugin"),
        (POST_FILTER, "PostFilterPlugin"),
        (PRE_SCORE, "PreScorePlugin"),
        (SCORE, "ScorePlugin"),
        (RESERVE, "ReservePlugin"),
        (PERMIT, "PermitPlugin"),
        (PRE_BIND, "PreBindPlugin"),
        (BIND, "BindPlugin"),
        (POST_BIND, "PostBindPlugin"),
    ];
}

type FilterFactory = Arc<dyn Fn(&PluginArgs) -> Result<BoxPredicate, PluginError> + Send + Sync>;
type ScoreFactory = Arc<dyn Fn(&PluginArgs) -> Result<BoxPriority, PluginError> + Send + Sync>;

#[derive(Clone)]
struct Entry {
    points: u16,
    filter: Option<FilterFactory>,
    score: Option<ScoreFactory>,
}

/// The plugins a configuration can name: kube-scheduler v1.34's built-ins
/// ([`Registry::v1_34`]) and custom plugins registered by name. Plugins are built per
/// profile from their arguments (`pluginConfig`).
///
/// ```
/// use sched_core::config::{Registry, SchedulerConfiguration};
/// use sched_core::framework::{BoxPredicate, Reason, predicate_fn};
///
/// let registry = Registry::v1_34().filter("NotNode3", |_args| {
///     Ok(BoxPredicate::new(predicate_fn("NotNode3", |_pod, node| {
///         if node.name() == "node-3" { Err(Reason::Custom(1)) } else { Ok(()) }
///     })))
/// });
/// let config = SchedulerConfiguration::from_text(
///     "apiVersion: kubescheduler.config.k8s.io/v1\n\
///      kind: KubeSchedulerConfiguration\n\
///      profiles:\n\
///      - plugins:\n    multiPoint:\n      enabled:\n      - name: NotNode3\n",
/// )?;
/// let profiles = config.compile(&registry)?;
/// assert!(profiles.get("default-scheduler").is_some());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Registry {
    entries: BTreeMap<String, Entry>,
    namespaces: Arc<NamespaceLabels>,
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("plugins", &self.entries.keys().collect::<Vec<_>>())
            .finish()
    }
}

fn fit_args(a: &PluginArgs) -> super::NodeResourcesFitArgs {
    match a {
        PluginArgs::NodeResourcesFit(a) => a.clone(),
        _ => Default::default(),
    }
}

impl Registry {
    /// No plugins.
    pub fn empty() -> Registry {
        Registry {
            entries: BTreeMap::new(),
            namespaces: Arc::default(),
        }
    }

    /// kube-scheduler v1.34's in-tree plugins, under their v1 names, with v1.34's formulas.
    pub fn v1_34() -> Registry {
        use point::*;
        let mut r = Registry::empty();
        r.put("SchedulingGates", PRE_ENQUEUE, None, None);
        r.put("PrioritySort", QUEUE_SORT, None, None);
        r.put("DefaultBinder", BIND, None, None);
        r.put("DefaultPreemption", POST_FILTER, None, None);
        r.put(
            "DynamicResources",
            PRE_ENQUEUE | PRE_FILTER | FILTER | POST_FILTER | RESERVE | PRE_BIND,
            Some(Arc::new(|_| {
                Ok(BoxPredicate::new(
                    crate::plugins::dra::DynamicResources::new(),
                ))
            })),
            None,
        );
        r = r
            .filter("NodeUnschedulable", |_| {
                Ok(BoxPredicate::new(node::CheckNodeUnschedulable::new()))
            })
            .filter("NodeName", |_| Ok(BoxPredicate::new(node::HostName::new())))
            .filter("NodePorts", |_| {
                Ok(BoxPredicate::new(node::PodFitsHostPorts::new()))
            })
            .filter("VolumeRestrictions", |_| {
                Ok(BoxPredicate::new(
                    crate::plugins::volume::VolumeRestrictions::new(),
                ))
            })
            .filter("NodeVolumeLimits", |_| {
                Ok(BoxPredicate::new(
                    crate::plugins::volume::NodeVolumeLimits::new(),
                ))
            })
            .filter("VolumeBinding", |_| {
                Ok(BoxPredicate::new(
                    crate::plugins::volume::VolumeBinding::new(),
                ))
            })
            .filter("VolumeZone", |_| {
                Ok(BoxPredicate::new(crate::plugins::volume::VolumeZone::new()))
            });
        r = r
            .plugin(
                "TaintToleration",
                |_| Ok(BoxPredicate::new(node::PodToleratesNodeTaints::new())),
                |_| Ok(BoxPriority::new(node::TaintTolerationPriority::new())),
            )
            .plugin(
                "NodeAffinity",
                |a| {
                    let added = match a {
                        PluginArgs::NodeAffinity(a) => a.added_affinity.clone(),
                        _ => None,
                    };
                    let required = added.and_then(|a| a.required);
                    Ok(BoxPredicate::new(
                        node::MatchNodeSelector::new().with_added_affinity(required),
                    ))
                },
                |a| {
                    let preferred = match a {
                        PluginArgs::NodeAffinity(a) => a
                            .added_affinity
                            .as_ref()
                            .map(|a| a.preferred.clone())
                            .unwrap_or_default(),
                        _ => Vec::new(),
                    };
                    Ok(BoxPriority::new(
                        node::NodeAffinityPriority::new().with_added_preferred(preferred),
                    ))
                },
            )
            .plugin(
                "NodeResourcesFit",
                |a| {
                    let a = fit_args(a);
                    Ok(BoxPredicate::new(
                        node::PodFitsResources::new()
                            .with_ignored_resources(a.ignored_resources)
                            .with_ignored_resource_groups(a.ignored_resource_groups),
                    ))
                },
                |a| {
                    let s = fit_args(a).scoring_strategy;
                    Ok(match s.kind {
                        ScoringStrategyType::LeastAllocated => BoxPriority::new(
                            resource::LeastRequestedPriority::with_resources(&s.resources)?,
                        ),
                        ScoringStrategyType::MostAllocated => BoxPriority::new(
                            resource::MostRequestedPriority::with_resources(&s.resources)?,
                        ),
                        ScoringStrategyType::RequestedToCapacityRatio => BoxPriority::new(
                            resource::RequestedToCapacityRatioPriority::new(&s.shape, &s.resources)
                                .map_err(|e| {
                                    PluginError::new(
                                        "NodeResourcesFit",
                                        PluginErrorKind::InvalidArgument(e.to_string()),
                                    )
                                })?,
                        ),
                    })
                },
            )
            .plugin(
                "PodTopologySpread",
                |a| Ok(BoxPredicate::new(topology_spread(a))),
                |a| Ok(BoxPriority::new(topology_spread(a))),
            )
            .score("NodeResourcesBalancedAllocation", |a| {
                let resources = match a {
                    PluginArgs::NodeResourcesBalancedAllocation(a) => a.resources.clone(),
                    _ => resource::ResourceSpec::cpu_and_memory(),
                };
                Ok(BoxPriority::new(
                    resource::NodeResourcesBalancedAllocation::with_resources(&resources)?,
                ))
            })
            .score("ImageLocality", |_| {
                Ok(BoxPriority::new(resource::ImageLocalityPriority::new()))
            });
        r.put(
            "InterPodAffinity",
            FILTER | SCORE | PRE_FILTER | PRE_SCORE,
            None,
            None,
        );
        // The filter and score points of the built-ins also have PreFilter / PreScore.
        for (name, e) in r.entries.iter_mut() {
            if e.filter.is_some() && !matches!(name.as_str(), "NodeUnschedulable" | "NodeName") {
                e.points |= PRE_FILTER;
            }
            if e.score.is_some() && name != "ImageLocality" {
                e.points |= PRE_SCORE;
            }
        }
        for name in ["VolumeBinding"] {
            if let Some(e) = r.entries.get_mut(name) {
                e.points |= RESERVE | PRE_BIND;
            }
        }
        r
    }

    fn put(
        &mut self,
        name: &str,
        points: u16,
        filter: Option<FilterFactory>,
        score: Option<ScoreFactory>,
    ) {
        let e = self.entries.entry(name.to_string()).or_insert(Entry {
            points: 0,
            filter: None,
            score: None,
        });
        e.points |= points;
        if filter.is_some() {
            e.filter = filter;
            e.points |= point::FILTER;
        }
        if score.is_some() {
            e.score = score;
            e.points |= point::SCORE;
        }
    }

    /// Registers (or replaces) a filter plugin: `factory` builds it from the profile's
    /// `pluginConfig` arguments ([`PluginArgs::Other`] with the JSON as written, `null` when
    /// none).
    #[must_use]
    pub fn filter<F>(mut self, name: &str, factory: F) -> Registry
    where
        F: Fn(&PluginArgs) -> Result<BoxPredicate, PluginError> + Send + Sync + 'static,
    {
        self.put(name, 0, Some(Arc::new(factory)), None);
        self
    }

    /// Registers (or replaces) a score plugin, as [`Registry::filter`].
    #[must_use]
    pub fn score<F>(mut self, name: &str, factory: F) -> Registry
    where
        F: Fn(&PluginArgs) -> Result<BoxPriority, PluginError> + Send + Sync + 'static,
    {
        self.put(name, 0, None, Some(Arc::new(factory)));
        self
    }

    /// Registers a plugin that filters and scores.
    #[must_use]
    pub fn plugin<F, S>(self, name: &str, filter: F, score: S) -> Registry
    where
        F: Fn(&PluginArgs) -> Result<BoxPredicate, PluginError> + Send + Sync + 'static,
        S: Fn(&PluginArgs) -> Result<BoxPriority, PluginError> + Send + Sync + 'static,
    {
        self.filter(name, filter).score(name, score)
    }

    /// The Namespace labels `InterPodAffinity` evaluates `namespaceSelector` against.
    #[must_use]
    pub fn with_namespace_labels(mut self, namespaces: Arc<NamespaceLabels>) -> Registry {
        self.namespaces = namespaces;
        self
    }

    /// The registered names.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.entries.keys().map(String::as_str)
    }

    fn interpod(&self, args: &PluginArgs) -> (BoxPredicate, BoxPriority) {
        let a = match args {
            PluginArgs::InterPodAffinity(a) => a.clone(),
            _ => Default::default(),
        };
        (
            BoxPredicate::new(
                interpod::MatchInterPodAffinity::new()
                    .with_namespace_labels(self.namespaces.clone()),
            ),
            BoxPriority::new(
                interpod::InterPodAffinityPriority::new(a.hard_pod_affinity_weight)
                    .with_namespace_labels(self.namespaces.clone())
                    .ignoring_preferred_terms_of_existing_pods(
                        a.ignore_preferred_terms_of_existing_pods,
                    ),
            ),
        )
    }
}

fn topology_spread(a: &PluginArgs) -> spread::PodTopologySpread {
    match a {
        PluginArgs::PodTopologySpread(a) => match a.defaulting_type {
            DefaultingType::System => spread::PodTopologySpread::new(),
            DefaultingType::List => spread::PodTopologySpread::with_defaults(
                DefaultConstraints::List(a.default_constraints.clone()),
            ),
        },
        _ => spread::PodTopologySpread::new(),
    }
}

/// A pod's `spec.schedulerName` names no profile.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("pod {pod} asks for scheduler {scheduler:?}, which no profile has (profiles: {})", known.join(", "))]
pub struct UnknownProfile {
    /// The pod, as `namespace/name`.
    pub pod: String,
    /// The scheduler name it asks for.
    pub scheduler: String,
    /// The profiles' names.
    pub known: Vec<String>,
}

/// Compiled profiles keyed by scheduler name, in the configuration's order.
#[derive(Debug)]
pub struct Profiles {
    profiles: Vec<(String, Profile)>,
}

impl Profiles {
    /// One profile serving the pods of `scheduler_name`: how kube-scheduler v1.20 runs a
    /// legacy Policy (the profile of its `--scheduler-name`, [`DEFAULT_SCHEDULER_NAME`] unless
    /// set). [`Profiles::for_pod`] then reports a pod naming another scheduler, as for a
    /// configuration's profiles; kube leaves such a pod to the scheduler it names.
    /// [`Policy::profiles`](crate::policy::Policy::profiles) builds it from a Policy with the
    /// default name.
    ///
    /// ```
    /// use sched_core::config::Profiles;
    /// use sched_core::model::Pod;
    /// use sched_core::policy::Policy;
    ///
    /// let profile = Policy::kube_default().builder()?.seed(1).build()?;
    /// let profiles = Profiles::single("batch-scheduler", profile);
    /// let mut pod = Pod::default();
    /// pod.spec.scheduler_name = "batch-scheduler".into();
    /// assert!(profiles.for_pod(&pod).is_ok());
    /// pod.spec.scheduler_name = String::new(); // default-scheduler
    /// assert!(profiles.for_pod(&pod).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn single(scheduler_name: impl Into<String>, profile: Profile) -> Profiles {
        Profiles {
            profiles: vec![(scheduler_name.into(), profile)],
        }
    }

    /// The profile named `scheduler_name`.
    pub fn get(&self, scheduler_name: &str) -> Option<&Profile> {
        self.profiles
            .iter()
            .find(|(n, _)| n == scheduler_name)
            .map(|(_, p)| p)
    }

    /// The profile of the pod's `spec.schedulerName` ([`DEFAULT_SCHEDULER_NAME`] when empty,
    /// as the API server defaults it).
    ///
    /// # Errors
    /// [`UnknownProfile`], naming the profiles there are.
    pub fn for_pod(&self, pod: &Pod) -> Result<&Profile, UnknownProfile> {
        let name = match pod.spec.scheduler_name.as_str() {
            "" => DEFAULT_SCHEDULER_NAME,
            n => n,
        };
        self.get(name).ok_or_else(|| UnknownProfile {
            pod: format!("{}/{}", pod.metadata.namespace, pod.metadata.name),
            scheduler: name.to_string(),
            known: self.names().map(str::to_string).collect(),
        })
    }

    /// The scheduler names, in the configuration's order.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.profiles.iter().map(|(n, _)| n.as_str())
    }

    /// `(scheduler name, profile)` pairs.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &Profile)> {
        self.profiles.iter().map(|(n, p)| (n.as_str(), p))
    }
}

/// The plugins of one extension point after kube's `multiPoint` expansion: the plugins of
/// the point's own list that `multiPoint` also names (in the point's order), then the
/// `multiPoint` ones, then the rest of the point's own list.
fn expand(
    registry: &Registry,
    multi: &PluginSet,
    own: &PluginSet,
    bit: u16,
    kind: &str,
    path: &str,
    problems: &mut Vec<ConfigProblem>,
) -> Vec<String> {
    let mut own_names: Vec<&str> = Vec::new();
    for p in &own.enabled {
        match registry.entries.get(&p.name) {
            None => problems.push(ConfigProblem::new(
                path,
                ProblemKind::Plugins(format!(
                    "{kind} {:?} does not exist{}",
                    p.name,
                    hint(&p.name)
                )),
            )),
            Some(e) if e.points & bit == 0 => problems.push(ConfigProblem::new(
                path,
                ProblemKind::Plugins(format!("plugin {:?} does not extend {kind}", p.name)),
            )),
            Some(_) if own_names.contains(&p.name.as_str()) => problems.push(ConfigProblem::new(
                path,
                ProblemKind::Plugins(format!("plugin {:?} already registered as {kind}", p.name)),
            )),
            Some(_) => own_names.push(&p.name),
        }
    }
    if own.disabled.iter().any(|d| d == "*") {
        return own_names.into_iter().map(str::to_string).collect();
    }
    let mut from_multi: Vec<&str> = Vec::new();
    let mut overridden: Vec<&str> = Vec::new();
    for p in &multi.enabled {
        let Some(e) = registry.entries.get(&p.name) else {
            continue; // reported once, by the caller
        };
        if e.points & bit == 0 || own.disabled.contains(&p.name) {
            continue;
        }
        if own_names.contains(&p.name.as_str()) {
            overridden.push(&p.name);
            continue;
        }
        if from_multi.contains(&p.name.as_str()) {
            problems.push(ConfigProblem::new(
                path,
                ProblemKind::Plugins(format!("plugin {:?} already registered as {kind}", p.name)),
            ));
            continue;
        }
        from_multi.push(&p.name);
    }
    let mut out: Vec<String> = Vec::new();
    out.extend(
        own_names
            .iter()
            .filter(|n| overridden.contains(n))
            .map(|n| n.to_string()),
    );
    out.extend(from_multi.iter().map(|n| n.to_string()));
    out.extend(
        own_names
            .iter()
            .filter(|n| !overridden.contains(n))
            .map(|n| n.to_string()),
    );
    out
}

impl ProfileConfig {
    /// The plugins this profile runs at the extension point `point` (its field name in the
    /// configuration: `"preFilter"`, `"postFilter"`, ...), in kube's order after `multiPoint`
    /// expansion; empty for an unknown point. Plugins that `registry` does not have or that do
    /// not extend the point are left out (compiling the configuration reports them).
    ///
    /// ```
    /// use sched_core::config::{Registry, SchedulerConfiguration};
    /// let config = SchedulerConfiguration::v1_34_default();
    /// let post_filter = config.profiles[0].plugins_at(&Registry::v1_34(), "postFilter");
    /// assert_eq!(post_filter, ["DynamicResources", "DefaultPreemption"]);
    /// ```
    pub fn plugins_at(&self, registry: &Registry, point: &str) -> Vec<String> {
        let Some(i) = self
            .plugins
            .points()
            .iter()
            .position(|(key, _)| *key == point)
        else {
            return Vec::new();
        };
        let (bit, kind) = point::ALL[i];
        let own = self.plugins.points()[i].1;
        let mut problems = Vec::new();
        expand(
            registry,
            &self.plugins.multi_point,
            own,
            bit,
            kind,
            point,
            &mut problems,
        )
    }
}

/// A pointer for names of the legacy era.
fn hint(name: &str) -> &'static str {
    match name {
        "SelectorSpread"
        | "NodeResourcesLeastAllocated"
        | "NodeResourcesMostAllocated"
        | "RequestedToCapacityRatio"
        | "NodeLabel"
        | "ServiceAffinity"
        | "NodePreferAvoidPods"
        | "NodeResourceLimits"
        | "EBSLimits"
        | "GCEPDLimits"
        | "AzureDiskLimits"
        | "CinderLimits" => {
            " (a plugin of older kube-scheduler versions; the legacy Policy path has it)"
        }
        _ => "",
    }
}

impl SchedulerConfiguration {
    /// A [`ProfileBuilder`] per profile, with its filters, scores and weights, as kube-scheduler
    /// v1.34 would build its framework, so that threads, the seed or more plugins can be set
    /// before building.
    ///
    /// # Errors
    /// A [`ConfigError`] listing every problem: plugins that do not exist, are registered twice
    /// or are enabled at a point they do not implement; a missing queue-sort or bind plugin;
    /// plugin arguments a plugin refuses; `extenders`, which a bare profile does not call
    /// (placements would differ from kube's): the scheduling engine runs them
    /// ([`crate::scheduler::Scheduler::from_config`]), or clear `extenders` to build the
    /// profiles alone.
    pub fn builders(
        &self,
        registry: &Registry,
    ) -> Result<Vec<(String, ProfileBuilder)>, ConfigError> {
        if !self.extenders.is_empty() {
            let mut problems = vec![ConfigProblem::new(
                "extenders",
                ProblemKind::Unsupported(
                    "a profile alone does not call extenders; run them with scheduler::Scheduler::from_config, or clear `extenders` to build the profiles alone".into(),
                ),
            )];
            if let Err(e) = self.profile_builders(registry) {
                problems.extend(e.problems().iter().cloned());
            }
            return Err(ConfigError::new(problems));
        }
        self.profile_builders(registry)
    }

    /// [`SchedulerConfiguration::builders`] without the extenders (the scheduling engine runs
    /// them itself).
    pub(crate) fn profile_builders(
        &self,
        registry: &Registry,
    ) -> Result<Vec<(String, ProfileBuilder)>, ConfigError> {
        let mut problems = Vec::new();
        let mut out = Vec::with_capacity(self.profiles.len());
        for (i, p) in self.profiles.iter().enumerate() {
            let path = format!("profiles[{i}]");
            if let Some(b) = self.profile_builder(registry, p, &path, &mut problems) {
                out.push((p.scheduler_name.clone(), b));
            }
        }
        if problems.is_empty() {
            Ok(out)
        } else {
            Err(ConfigError::new(problems))
        }
    }

    /// [`SchedulerConfiguration::builders`], built (default threads, RNG seeded from the OS).
    ///
    /// # Errors
    /// As [`SchedulerConfiguration::builders`].
    pub fn compile(&self, registry: &Registry) -> Result<Profiles, ConfigError> {
        let mut profiles = Vec::new();
        for (name, b) in self.builders(registry)? {
            let profile = b.build().map_err(|e| {
                ConfigError::one(
                    format!("profiles[{}]", profiles.len()),
                    ProblemKind::Plugins(e.to_string()),
                )
            })?;
            profiles.push((name, profile));
        }
        Ok(Profiles { profiles })
    }

    fn profile_builder(
        &self,
        registry: &Registry,
        p: &ProfileConfig,
        path: &str,
        problems: &mut Vec<ConfigProblem>,
    ) -> Option<ProfileBuilder> {
        let before = problems.len();
        let plugins_path = format!("{path}.plugins");
        for r in &p.plugins.multi_point.enabled {
            if !registry.entries.contains_key(&r.name) {
                problems.push(ConfigProblem::new(
                    format!("{plugins_path}.multiPoint"),
                    ProblemKind::Plugins(format!(
                        "plugin {:?} does not exist{}",
                        r.name,
                        hint(&r.name)
                    )),
                ));
            }
        }
        let mut per_point: Vec<Vec<String>> = Vec::new();
        for ((bit, kind), (key, own)) in point::ALL.iter().zip(p.plugins.points()) {
            per_point.push(expand(
                registry,
                &p.plugins.multi_point,
                own,
                *bit,
                kind,
                &format!("{plugins_path}.{key}"),
                problems,
            ));
        }
        let queue_sort = per_point[1].len();
        if queue_sort != 1 {
            problems.push(ConfigProblem::new(
                plugins_path.clone(),
                ProblemKind::Plugins(format!(
                    "only one queue sort plugin required for profile with scheduler name {:?}, but got {queue_sort}",
                    p.scheduler_name
                )),
            ));
        }
        if per_point[10].is_empty() {
            problems.push(ConfigProblem::new(
                plugins_path.clone(),
                ProblemKind::Plugins(format!(
                    "at least one bind plugin is needed for profile with scheduler name {:?}",
                    p.scheduler_name
                )),
            ));
        }
        let args_of = |name: &str| {
            p.args(name)
                .cloned()
                .unwrap_or(PluginArgs::Other(serde_json::Value::Null))
        };
        let arg_path = |name: &str| {
            p.plugin_config
                .iter()
                .position(|(n, _)| n == name)
                .map_or_else(
                    || plugins_path.clone(),
                    |i| format!("{path}.pluginConfig[{i}].args"),
                )
        };
        let percentage = p
            .percentage_of_nodes_to_score
            .or(self.percentage_of_nodes_to_score)
            .unwrap_or(0);
        let mut b = ProfileBuilder::new()
            .kube_version(KubeVersion::V1_34)
            .percentage_of_nodes_to_score(percentage);
        let interpod = registry.interpod(&args_of("InterPodAffinity"));
        for name in &per_point[3] {
            if name == "InterPodAffinity" {
                b = b.predicate(interpod.0.clone().with_name(name.as_str()));
                continue;
            }
            let Some(f) = registry.entries.get(name).and_then(|e| e.filter.as_ref()) else {
                continue; // a filter point the decision function has nothing to run for
            };
            match f(&args_of(name)) {
                Ok(pred) => b = b.predicate(pred.with_name(name.as_str())),
                Err(e) => problems.push(ConfigProblem::new(
                    arg_path(name),
                    ProblemKind::Plugins(e.to_string()),
                )),
            }
        }
        // Score weights: the score point's own entries first, then multiPoint's (kube's
        // getScoreWeights); 0 or none is 1.
        let weight_of = |name: &str| {
            p.plugins
                .score
                .enabled
                .iter()
                .chain(&p.plugins.multi_point.enabled)
                .find(|r| r.name == name)
                .and_then(|r| r.weight)
                .filter(|&w| w != 0)
                .unwrap_or(1)
        };
        for name in &per_point[6] {
            let weight = i64::from(weight_of(name));
            if weight < 0 {
                problems.push(ConfigProblem::new(
                    format!("{plugins_path}.score"),
                    ProblemKind::Invalid {
                        value: weight.to_string(),
                        detail: format!("score weight of {name} must not be negative"),
                    },
                ));
                continue;
            }
            if name == "InterPodAffinity" {
                b = b.priority(interpod.1.clone().with_name(name.as_str()), weight);
                continue;
            }
            let Some(f) = registry.entries.get(name).and_then(|e| e.score.as_ref()) else {
                continue;
            };
            match f(&args_of(name)) {
                Ok(prio) => b = b.priority(prio.with_name(name.as_str()), weight),
                Err(e) => problems.push(ConfigProblem::new(
                    arg_path(name),
                    ProblemKind::Plugins(e.to_string()),
                )),
            }
        }
        (problems.len() == before).then_some(b)
    }
}
