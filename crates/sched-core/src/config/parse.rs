//! Reading a `KubeSchedulerConfiguration`: YAML or JSON text to a JSON value, then one walk
//! over it that decodes, defaults and validates, collecting every problem with its path.

use serde_json::{Map, Value};

use super::args::{
    DefaultPreemptionArgs, DefaultingType, InterPodAffinityArgs, NodeAffinityArgs,
    NodeResourcesBalancedAllocationArgs, NodeResourcesFitArgs, PluginArgs, PodTopologySpreadArgs,
    ScoringStrategy, ScoringStrategyType, TYPED_ARGS, VolumeBindingArgs,
};
use super::compile::{DEFAULT_SCHEDULER_NAME, default_plugins};
use super::error::{ConfigError, ConfigProblem, ProblemKind};
use super::{
    API_VERSION, LeaderElectionConfig, PluginRef, PluginSet, Plugins, ProfileConfig,
    SchedulerConfiguration,
};
use crate::extender::{ExtenderConfig, ExtenderTlsConfig, parse_go_duration};
use crate::model::{NodeAffinity, NodeSelectorTerm, TopologySpreadConstraint};
use crate::plugins::resource::{ResourceSpec, UtilizationShapePoint};

/// The text as a JSON value: JSON when it starts with `{`, else YAML.
pub(super) fn to_value(text: &str) -> Result<Value, ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let syntax = |m: String| ConfigError::one("", ProblemKind::Syntax(m));
    if text.trim_start().starts_with('{') {
        serde_json::from_str(text).map_err(|e| {
            syntax(format!(
                "not valid JSON: {e} (line {}, column {})",
                e.line(),
                e.column()
            ))
        })
    } else {
        let v: Value =
            serde_saphyr::from_str(text).map_err(|e| syntax(format!("not valid YAML: {e}")))?;
        Ok(v)
    }
}

/// Collects problems while walking the document.
#[derive(Default)]
struct Walk {
    problems: Vec<ConfigProblem>,
}

fn child(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn index(path: &str, i: usize) -> String {
    format!("{path}[{i}]")
}

use crate::model::json_type_name as type_name;

/// A valid key close to `key`: the same letters in another case, or one edit away.
fn suggest(key: &str, valid: &[&'static str]) -> Option<&'static str> {
    if let Some(v) = valid.iter().find(|v| v.eq_ignore_ascii_case(key)) {
        return Some(v);
    }
    valid.iter().copied().find(|v| within_one_edit(key, v))
}

fn within_one_edit(a: &str, b: &str) -> bool {
    let (a, b): (Vec<char>, Vec<char>) = (a.chars().collect(), b.chars().collect());
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    if long.len() - short.len() > 1 {
        return false;
    }
    let mut i = 0;
    while i < short.len() && short[i] == long[i] {
        i += 1;
    }
    if short.len() == long.len() {
        // One substitution or one transposition.
        short[i + 1..] == long[i + 1..]
            || (i + 1 < short.len()
                && short[i] == long[i + 1]
                && short[i + 1] == long[i]
                && short[i + 2..] == long[i + 2..])
    } else {
        short[i..] == long[i + 1..]
    }
}

/// kube's rendering of a string value in field errors.
fn quoted(s: &str) -> String {
    format!("{s:?}")
}

impl Walk {
    fn push(&mut self, path: impl Into<String>, kind: ProblemKind) {
        self.problems.push(ConfigProblem::new(path, kind));
    }

    fn invalid(&mut self, path: impl Into<String>, value: impl Into<String>, detail: &str) {
        self.push(
            path,
            ProblemKind::Invalid {
                value: value.into(),
                detail: detail.to_string(),
            },
        );
    }

    fn wrong_type(&mut self, path: impl Into<String>, expected: &'static str, v: &Value) {
        self.push(
            path,
            ProblemKind::WrongType {
                expected,
                found: type_name(v),
            },
        );
    }

    /// The object at `path` (null: none), its unknown keys reported.
    fn object<'v>(
        &mut self,
        v: Option<&'v Value>,
        path: &str,
        fields: &[&'static str],
    ) -> Option<&'v Map<String, Value>> {
        match v? {
            Value::Null => None,
            Value::Object(m) => {
                for k in m.keys() {
                    if !fields.contains(&k.as_str()) {
                        self.push(
                            child(path, k),
                            ProblemKind::UnknownField {
                                suggestion: suggest(k, fields),
                            },
                        );
                    }
                }
                Some(m)
            }
            other => {
                self.wrong_type(path, "an object", other);
                None
            }
        }
    }

    fn list<'v>(
        &mut self,
        m: Option<&'v Map<String, Value>>,
        key: &str,
        path: &str,
    ) -> &'v [Value] {
        match m.and_then(|m| m.get(key)) {
            None | Some(Value::Null) => &[],
            Some(Value::Array(a)) => a,
            Some(other) => {
                self.wrong_type(child(path, key), "a list", other);
                &[]
            }
        }
    }

    fn int(
        &mut self,
        m: Option<&Map<String, Value>>,
        key: &str,
        path: &str,
        max_bits: u32,
    ) -> Option<i64> {
        match m.and_then(|m| m.get(key)) {
            None | Some(Value::Null) => None,
            Some(v @ Value::Number(n)) => {
                // The range of a signed `max_bits` integer (for 64 bits, all of i64).
                let limit = 1i128 << (max_bits - 1);
                match n.as_i64() {
                    Some(i) if i128::from(i) >= -limit && i128::from(i) < limit => Some(i),
                    Some(_) => {
                        self.invalid(child(path, key), n.to_string(), "out of range");
                        None
                    }
                    None => {
                        self.wrong_type(child(path, key), "an integer", v);
                        None
                    }
                }
            }
            Some(other) => {
                self.wrong_type(child(path, key), "an integer", other);
                None
            }
        }
    }

    fn int32(&mut self, m: Option<&Map<String, Value>>, key: &str, path: &str) -> Option<i32> {
        self.int(m, key, path, 32).map(|i| i as i32)
    }

    fn string(&mut self, m: Option<&Map<String, Value>>, key: &str, path: &str) -> Option<String> {
        match m.and_then(|m| m.get(key)) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.wrong_type(child(path, key), "a string", other);
                None
            }
        }
    }

    fn boolean(&mut self, m: Option<&Map<String, Value>>, key: &str, path: &str) -> Option<bool> {
        match m.and_then(|m| m.get(key)) {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                self.wrong_type(child(path, key), "a boolean", other);
                None
            }
        }
    }

    fn strings(
        &mut self,
        m: Option<&Map<String, Value>>,
        key: &str,
        path: &str,
    ) -> Vec<(String, String)> {
        let p = child(path, key);
        let items = self.list(m, key, path);
        let mut out = Vec::with_capacity(items.len());
        for (i, v) in items.iter().enumerate() {
            match v {
                Value::String(s) => out.push((index(&p, i), s.clone())),
                other => self.wrong_type(index(&p, i), "a string", other),
            }
        }
        out
    }

    /// Decodes a Kubernetes object type with serde, reporting its error at `path`.
    fn decode<T: serde::de::DeserializeOwned>(&mut self, v: &Value, path: &str) -> Option<T> {
        match serde_path_to_error::deserialize::<_, T>(v.clone()) {
            Ok(t) => Some(t),
            Err(e) => {
                let inner = e.path().to_string();
                let at = if inner == "." {
                    path.to_string()
                } else {
                    child(path, &inner)
                };
                self.invalid(at, compact(v), &e.into_inner().to_string());
                None
            }
        }
    }
}

/// A short rendering of a JSON value for messages.
fn compact(v: &Value) -> String {
    let s = v.to_string();
    if s.len() > 80 {
        let mut end = 77;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}...", &s[..end])
    } else {
        s
    }
}

const TOP_FIELDS: &[&str] = &[
    "apiVersion",
    "kind",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "enableProfiling",
    "enableContentionProfiling",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "profiles",
    "extenders",
    "delayCacheUntilActive",
];

const LEADER_ELECTION_FIELDS: &[&str] = &[
    "leaderElect",
    "leaseDuration",
    "renewDeadline",
    "retryPeriod",
    "resourceLock",
    "resourceName",
    "resourceNamespace",
];

const CLIENT_CONNECTION_FIELDS: &[&str] = &[
    "kubeconfig",
    "acceptContentTypes",
    "contentType",
    "qps",
    "burst",
];

const PROFILE_FIELDS: &[&str] = &[
    "schedulerName",
    "percentageOfNodesToScore",
    "plugins",
    "pluginConfig",
];

const POINTS: &[&str] = &[
    "multiPoint",
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
];

/// Decodes, defaults and validates a whole configuration.
pub(super) fn configuration(doc: &Value) -> Result<SchedulerConfiguration, ConfigError> {
    let mut w = Walk::default();
    let top = match doc {
        Value::Object(_) => w.object(Some(doc), "", TOP_FIELDS),
        other => {
            w.wrong_type("", "a KubeSchedulerConfiguration object", other);
            return Err(ConfigError::new(w.problems));
        }
    };
    let api_version = w.string(top, "apiVersion", "");
    let kind = w.string(top, "kind", "");
    match kind.as_deref() {
        Some("KubeSchedulerConfiguration") => {}
        Some("Policy") => w.invalid(
            "kind",
            quoted("Policy"),
            "a legacy scheduler Policy, not a KubeSchedulerConfiguration: load it with sched_core::policy::Policy",
        ),
        Some(other) => w.push(
            "kind",
            ProblemKind::NotSupported {
                value: quoted(other),
                supported: vec!["KubeSchedulerConfiguration".into()],
            },
        ),
        None => w.push("kind", ProblemKind::Required(String::new())),
    }
    match api_version.as_deref() {
        Some(API_VERSION) => {}
        Some(
            v @ ("kubescheduler.config.k8s.io/v1beta2"
            | "kubescheduler.config.k8s.io/v1beta3"
            | "kubescheduler.config.k8s.io/v1beta1"
            | "kubescheduler.config.k8s.io/v1alpha1"
            | "kubescheduler.config.k8s.io/v1alpha2"),
        ) => w.invalid(
            "apiVersion",
            quoted(v),
            "no longer served: kube-scheduler v1.34 reads kubescheduler.config.k8s.io/v1 only",
        ),
        Some(other) => w.push(
            "apiVersion",
            ProblemKind::NotSupported {
                value: quoted(other),
                supported: vec![API_VERSION.into()],
            },
        ),
        None => w.push("apiVersion", ProblemKind::Required(String::new())),
    }

    let leader_election = leader_election(&mut w, top);
    let cc = w.object(
        top.and_then(|t| t.get("clientConnection")),
        "clientConnection",
        CLIENT_CONNECTION_FIELDS,
    );
    for k in ["kubeconfig", "acceptContentTypes", "contentType"] {
        w.string(cc, k, "clientConnection");
    }
    w.int32(cc, "burst", "clientConnection");
    for k in [
        "enableProfiling",
        "enableContentionProfiling",
        "delayCacheUntilActive",
    ] {
        w.boolean(top, k, "");
    }

    let parallelism = w.int32(top, "parallelism", "").unwrap_or(16);
    if parallelism <= 0 {
        w.invalid(
            "parallelism",
            parallelism.to_string(),
            "should be an integer value greater than zero",
        );
    }
    let percentage = percentage(&mut w, top, "");

    let raw_profiles = w.list(top, "profiles", "");
    let mut profiles = Vec::with_capacity(raw_profiles.len().max(1));
    let single = raw_profiles.len() <= 1;
    if raw_profiles.is_empty() {
        profiles.push(profile(&mut w, None, "profiles[0]", true));
    }
    for (i, p) in raw_profiles.iter().enumerate() {
        profiles.push(profile(&mut w, Some(p), &index("profiles", i), single));
    }
    for i in 0..profiles.len() {
        let name = &profiles[i].scheduler_name;
        if name.is_empty() {
            continue;
        }
        if profiles[..i].iter().any(|p| &p.scheduler_name == name) {
            w.push(
                child(&index("profiles", i), "schedulerName"),
                ProblemKind::Duplicate(quoted(name)),
            );
        }
    }
    for i in 1..profiles.len() {
        if profiles[i].plugins.queue_sort != profiles[0].plugins.queue_sort {
            w.invalid(
                child(&index("profiles", i), "plugins.queueSort"),
                render_set(&profiles[i].plugins.queue_sort),
                "queueSort must be the same for all profiles",
            );
        }
    }
    if let Some(n) = profiles[0].plugins.queue_sort.enabled.len().checked_sub(2) {
        w.invalid(
            "profiles[0].plugins.queueSort.Enabled",
            (n + 2).to_string(),
            "only one queue sort plugin can be enabled",
        );
    }

    let initial = w
        .int32(top, "podInitialBackoffSeconds", "")
        .map_or(1, i64::from);
    let max = w
        .int32(top, "podMaxBackoffSeconds", "")
        .map_or(10, i64::from);
    if initial <= 0 {
        w.invalid(
            "podInitialBackoffSeconds",
            initial.to_string(),
            "must be greater than 0",
        );
    }
    if max < initial {
        w.invalid(
            "podMaxBackoffSeconds",
            max.to_string(),
            "must be greater than or equal to PodInitialBackoffSeconds",
        );
    }
    let extenders = extenders(&mut w, top);

    if !w.problems.is_empty() {
        return Err(ConfigError::new(w.problems));
    }
    // kube's buildExtenders: the resources extenders manage with `ignoredByScheduler` replace
    // every profile's NodeResourcesFit `ignoredResources`.
    let ignored: Vec<String> = extenders
        .iter()
        .flat_map(|e| &e.managed_resources)
        .filter(|r| r.ignored_by_scheduler)
        .map(|r| r.name.clone())
        .collect();
    if !ignored.is_empty() {
        for p in &mut profiles {
            for (name, args) in &mut p.plugin_config {
                if let (true, super::PluginArgs::NodeResourcesFit(a)) =
                    (name == "NodeResourcesFit", args)
                {
                    a.ignored_resources = ignored.clone();
                }
            }
        }
    }
    Ok(SchedulerConfiguration {
        parallelism,
        percentage_of_nodes_to_score: percentage,
        pod_initial_backoff_seconds: initial,
        pod_max_backoff_seconds: max,
        profiles,
        extenders,
        leader_election,
    })
}

/// `leaderElection`, defaulted (kube-scheduler's lock: the Lease `kube-system/kube-scheduler`,
/// client-go's 15 s / 10 s / 2 s) and validated as component-base's
/// `ValidateLeaderElectionConfiguration` does, plus kube-scheduler's rule that the lock is
/// a Lease.
fn leader_election(w: &mut Walk, top: Option<&Map<String, Value>>) -> LeaderElectionConfig {
    let le = w.object(
        top.and_then(|t| t.get("leaderElection")),
        "leaderElection",
        LEADER_ELECTION_FIELDS,
    );
    let mut out = LeaderElectionConfig::default();
    if let Some(b) = w.boolean(le, "leaderElect", "leaderElection") {
        out.leader_elect = b;
    }
    let lock = w
        .string(le, "resourceLock", "leaderElection")
        .unwrap_or_else(|| "leases".into());
    for (key, slot) in [
        ("leaseDuration", &mut out.lease_duration),
        ("renewDeadline", &mut out.renew_deadline),
        ("retryPeriod", &mut out.retry_period),
    ] {
        if let Some(t) = w.string(le, key, "leaderElection") {
            match parse_go_duration(&t) {
                Some(d) => *slot = d,
                None => w.invalid(
                    child("leaderElection", key),
                    quoted(&t),
                    "not a duration (Go's syntax, such as \"15s\", not negative)",
                ),
            }
        }
    }
    if let Some(n) = w.string(le, "resourceName", "leaderElection") {
        out.resource_name = n;
    }
    if let Some(n) = w.string(le, "resourceNamespace", "leaderElection") {
        out.resource_namespace = n;
    }
    if !out.leader_elect {
        return out;
    }
    for (key, d) in [
        ("leaseDuration", out.lease_duration),
        ("renewDeadline", out.renew_deadline),
        ("retryPeriod", out.retry_period),
    ] {
        if d.is_zero() {
            w.invalid(
                child("leaderElection", key),
                format!("{d:?}"),
                "must be greater than zero",
            );
        }
    }
    if out.lease_duration <= out.renew_deadline {
        w.invalid(
            "leaderElection.leaseDuration",
            format!("{:?}", out.renew_deadline),
            "must be greater than `RenewDeadline`",
        );
    }
    for (key, v) in [
        ("resourceNamespace", &out.resource_namespace),
        ("resourceName", &out.resource_name),
    ] {
        if v.is_empty() {
            w.push(
                child("leaderElection", key),
                ProblemKind::Required(String::new()),
            );
        }
    }
    if lock != "leases" {
        w.invalid(
            "leaderElection.resourceLock",
            quoted(&lock),
            "resourceLock value must be \"leases\"",
        );
    }
    out
}

fn render_set(s: &PluginSet) -> String {
    let names: Vec<&str> = s.enabled.iter().map(|p| p.name.as_str()).collect();
    format!("{{enabled: {names:?}, disabled: {:?}}}", s.disabled)
}

fn percentage(w: &mut Walk, m: Option<&Map<String, Value>>, path: &str) -> Option<u32> {
    let p = w.int32(m, "percentageOfNodesToScore", path)?;
    if !(0..=100).contains(&p) {
        w.invalid(
            child(path, "percentageOfNodesToScore"),
            p.to_string(),
            "not in valid range [0-100]",
        );
        return None;
    }
    Some(p as u32)
}

fn profile(w: &mut Walk, v: Option<&Value>, path: &str, single: bool) -> ProfileConfig {
    let m = w.object(v, path, PROFILE_FIELDS);
    let name = match w.string(m, "schedulerName", path) {
        Some(n) => n,
        None if single => DEFAULT_SCHEDULER_NAME.to_string(),
        None => String::new(),
    };
    if name.is_empty() {
        w.push(
            child(path, "schedulerName"),
            ProblemKind::Required(String::new()),
        );
    }
    let percentage = percentage(w, m, path);
    let plugins_path = child(path, "plugins");
    let pm = w.object(m.and_then(|m| m.get("plugins")), &plugins_path, POINTS);
    let mut custom = Plugins::default();
    for (key, set) in POINTS.iter().zip(custom.points_mut()) {
        *set = plugin_set(
            w,
            pm.and_then(|pm| pm.get(*key)),
            &child(&plugins_path, key),
        );
    }
    let plugins = merge(default_plugins(), custom);

    // pluginConfig: decoded, validated and defaulted; then defaults for every other plugin
    // of the profile that has arguments.
    let pc_path = child(path, "pluginConfig");
    let mut plugin_config: Vec<(String, PluginArgs)> = Vec::new();
    for (i, item) in w.list(m, "pluginConfig", path).iter().enumerate() {
        let ip = index(&pc_path, i);
        let im = w.object(Some(item), &ip, &["name", "args"]);
        let Some(name) = w.string(im, "name", &ip) else {
            if im.is_some() {
                w.push(child(&ip, "name"), ProblemKind::Required(String::new()));
            }
            continue;
        };
        if plugin_config.iter().any(|(n, _)| n == &name) {
            w.push(ip.clone(), ProblemKind::Duplicate(quoted(&name)));
            continue;
        }
        let args = plugin_args(
            w,
            &name,
            im.and_then(|m| m.get("args")),
            &child(&ip, "args"),
        );
        plugin_config.push((name, args));
    }
    let mut names: Vec<&str> = plugins
        .multi_point
        .enabled
        .iter()
        .chain(plugins.points().iter().flat_map(|(_, s)| s.enabled.iter()))
        .map(|p| p.name.as_str())
        .collect();
    names.dedup();
    for n in names {
        if !plugin_config.iter().any(|(c, _)| c == n)
            && let Some(a) = PluginArgs::default_for(n)
        {
            plugin_config.push((n.to_string(), a));
        }
    }
    ProfileConfig {
        scheduler_name: name,
        percentage_of_nodes_to_score: percentage,
        plugins,
        plugin_config,
    }
}

fn plugin_set(w: &mut Walk, v: Option<&Value>, path: &str) -> PluginSet {
    let m = w.object(v, path, &["enabled", "disabled"]);
    let mut set = PluginSet::default();
    let ep = child(path, "enabled");
    for (i, item) in w.list(m, "enabled", path).iter().enumerate() {
        let ip = index(&ep, i);
        let im = w.object(Some(item), &ip, &["name", "weight"]);
        let weight = w.int32(im, "weight", &ip);
        match w.string(im, "name", &ip) {
            Some(name) => set.enabled.push(PluginRef::new(name, weight)),
            None if im.is_some() => {
                w.push(child(&ip, "name"), ProblemKind::Required(String::new()))
            }
            None => {}
        }
    }
    let dp = child(path, "disabled");
    for (i, item) in w.list(m, "disabled", path).iter().enumerate() {
        let ip = index(&dp, i);
        let im = w.object(Some(item), &ip, &["name", "weight"]);
        w.int32(im, "weight", &ip);
        match w.string(im, "name", &ip) {
            Some(name) => set.disabled.push(name),
            None if im.is_some() => {
                w.push(child(&ip, "name"), ProblemKind::Required(String::new()))
            }
            None => {}
        }
    }
    set
}

/// kube's `mergePlugins`: each point of `custom` merged into the defaults.
pub(super) fn merge(mut defaults: Plugins, mut custom: Plugins) -> Plugins {
    for (d, c) in defaults.points_mut().into_iter().zip(custom.points_mut()) {
        *d = merge_set(std::mem::take(d), std::mem::take(c));
    }
    defaults
}

/// kube's `mergePluginSet`: defaults minus the disabled (all of them with `*`), a default
/// listed again replaced in place, then the other custom plugins in their order.
fn merge_set(default: PluginSet, custom: PluginSet) -> PluginSet {
    let mut disabled: Vec<String> = custom.disabled.clone();
    disabled.extend(default.disabled.iter().cloned());
    let all = disabled.iter().any(|d| d == "*");
    let mut replaced = vec![false; custom.enabled.len()];
    let mut enabled = Vec::new();
    if !all {
        for d in default.enabled {
            if disabled.contains(&d.name) {
                continue;
            }
            // kube keeps the last custom entry of that name (a map by name).
            match custom.enabled.iter().rposition(|c| c.name == d.name) {
                Some(i) => {
                    replaced[i] = true;
                    enabled.push(custom.enabled[i].clone());
                }
                None => enabled.push(d),
            }
        }
    }
    for (i, c) in custom.enabled.into_iter().enumerate() {
        if !replaced[i] {
            enabled.push(c);
        }
    }
    PluginSet { enabled, disabled }
}

/// Decodes, defaults and validates one plugin's arguments.
fn plugin_args(w: &mut Walk, plugin: &str, v: Option<&Value>, path: &str) -> PluginArgs {
    let Some(&(_, kind)) = TYPED_ARGS.iter().find(|(n, _)| *n == plugin) else {
        return PluginArgs::Other(v.cloned().unwrap_or(Value::Null));
    };
    let fields: &[&'static str] = match plugin {
        "NodeResourcesFit" => &[
            "apiVersion",
            "kind",
            "ignoredResources",
            "ignoredResourceGroups",
            "scoringStrategy",
        ],
        "NodeResourcesBalancedAllocation" => &["apiVersion", "kind", "resources"],
        "PodTopologySpread" => &["apiVersion", "kind", "defaultConstraints", "defaultingType"],
        "InterPodAffinity" => &[
            "apiVersion",
            "kind",
            "hardPodAffinityWeight",
            "ignorePreferredTermsOfExistingPods",
        ],
        "NodeAffinity" => &["apiVersion", "kind", "addedAffinity"],
        "DefaultPreemption" => &[
            "apiVersion",
            "kind",
            "minCandidateNodesPercentage",
            "minCandidateNodesAbsolute",
        ],
        _ => &["apiVersion", "kind", "bindTimeoutSeconds", "shape"],
    };
    let m = w.object(v, path, fields);
    if let Some(k) = w.string(m, "kind", path)
        && k != kind
    {
        w.invalid(
            path,
            format!("kind {}", quoted(&k)),
            "has to match plugin args",
        );
    }
    if let Some(a) = w.string(m, "apiVersion", path)
        && a != API_VERSION
    {
        w.push(
            child(path, "apiVersion"),
            ProblemKind::NotSupported {
                value: quoted(&a),
                supported: vec![API_VERSION.into()],
            },
        );
    }
    match plugin {
        "NodeResourcesFit" => PluginArgs::NodeResourcesFit(fit_args(w, m, path)),
        "NodeResourcesBalancedAllocation" => {
            let rp = child(path, "resources");
            let mut resources = resource_specs(w, m, "resources", path);
            if resources.is_empty() {
                resources = ResourceSpec::cpu_and_memory();
            }
            for (i, r) in resources.iter().enumerate() {
                if resources[..i].iter().any(|o| o.name == r.name) {
                    w.push(
                        child(&index(&rp, i), "name"),
                        ProblemKind::Duplicate(quoted(&r.name)),
                    );
                }
                if r.weight != 1 {
                    w.invalid(
                        child(&index(&rp, i), "weight"),
                        r.weight.to_string(),
                        "must be 1",
                    );
                }
            }
            PluginArgs::NodeResourcesBalancedAllocation(NodeResourcesBalancedAllocationArgs {
                resources,
            })
        }
        "PodTopologySpread" => PluginArgs::PodTopologySpread(spread_args(w, m, path)),
        "InterPodAffinity" => {
            let d = InterPodAffinityArgs::default();
            let weight = w
                .int32(m, "hardPodAffinityWeight", path)
                .unwrap_or(d.hard_pod_affinity_weight);
            if !(0..=100).contains(&weight) {
                w.invalid(
                    child(path, "hardPodAffinityWeight"),
                    weight.to_string(),
                    "not in valid range [0, 100]",
                );
            }
            let ignore = w
                .boolean(m, "ignorePreferredTermsOfExistingPods", path)
                .unwrap_or(false);
            PluginArgs::InterPodAffinity(InterPodAffinityArgs {
                hard_pod_affinity_weight: weight,
                ignore_preferred_terms_of_existing_pods: ignore,
            })
        }
        "NodeAffinity" => {
            let ap = child(path, "addedAffinity");
            let added = match m.and_then(|m| m.get("addedAffinity")) {
                None | Some(Value::Null) => None,
                Some(v) => w.decode::<NodeAffinity>(v, &ap),
            };
            if let Some(a) = &added {
                if let Some(req) = &a.required {
                    let tp = child(
                        &ap,
                        "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms",
                    );
                    for (i, t) in req.node_selector_terms.iter().enumerate() {
                        node_selector_term(w, t, &index(&tp, i));
                    }
                }
                let pp = child(&ap, "preferredDuringSchedulingIgnoredDuringExecution");
                for (i, t) in a.preferred.iter().enumerate() {
                    node_selector_term(w, &t.preference, &child(&index(&pp, i), "preference"));
                }
            }
            PluginArgs::NodeAffinity(NodeAffinityArgs {
                added_affinity: added,
            })
        }
        "DefaultPreemption" => {
            let d = DefaultPreemptionArgs::default();
            let pct = w
                .int32(m, "minCandidateNodesPercentage", path)
                .unwrap_or(d.min_candidate_nodes_percentage);
            let abs = w
                .int32(m, "minCandidateNodesAbsolute", path)
                .unwrap_or(d.min_candidate_nodes_absolute);
            let (pp, ap) = (
                child(path, "minCandidateNodesPercentage"),
                child(path, "minCandidateNodesAbsolute"),
            );
            if !(0..=100).contains(&pct) {
                w.invalid(pp.clone(), pct.to_string(), "not in valid range [0, 100]");
            }
            if abs < 0 {
                w.invalid(ap.clone(), abs.to_string(), "not in valid range [0, inf)");
            }
            if pct == 0 && abs == 0 {
                w.invalid(
                    pp,
                    "0",
                    "cannot be zero at the same time as minCandidateNodesAbsolute",
                );
                w.invalid(
                    ap,
                    "0",
                    "cannot be zero at the same time as minCandidateNodesPercentage",
                );
            }
            PluginArgs::DefaultPreemption(DefaultPreemptionArgs {
                min_candidate_nodes_percentage: pct,
                min_candidate_nodes_absolute: abs,
            })
        }
        _ => {
            let t = w.int(m, "bindTimeoutSeconds", path, 64).unwrap_or(600);
            if t < 0 {
                w.invalid(
                    child(path, "bindTimeoutSeconds"),
                    t.to_string(),
                    "invalid BindTimeoutSeconds, should not be a negative value",
                );
            }
            if let Some(s) = m.and_then(|m| m.get("shape")).filter(|s| !s.is_null()) {
                w.invalid(
                    child(path, "shape"),
                    compact(s),
                    "unexpected field `shape`, remove it or turn on the feature gate StorageCapacityScoring",
                );
            }
            PluginArgs::VolumeBinding(VolumeBindingArgs {
                bind_timeout_seconds: t,
            })
        }
    }
}

/// `[{name, weight}]`, a weight of 0 or none defaulted to 1 (kube's v1 defaulting).
fn resource_specs(
    w: &mut Walk,
    m: Option<&Map<String, Value>>,
    key: &str,
    path: &str,
) -> Vec<ResourceSpec> {
    let p = child(path, key);
    let mut out = Vec::new();
    for (i, item) in w.list(m, key, path).iter().enumerate() {
        let ip = index(&p, i);
        let im = w.object(Some(item), &ip, &["name", "weight"]);
        let weight = w.int(im, "weight", &ip, 64).unwrap_or(0);
        let name = w.string(im, "name", &ip).unwrap_or_default();
        out.push(ResourceSpec::new(
            name,
            if weight == 0 { 1 } else { weight },
        ));
    }
    out
}

fn fit_args(w: &mut Walk, m: Option<&Map<String, Value>>, path: &str) -> NodeResourcesFitArgs {
    let mut args = NodeResourcesFitArgs::default();
    for (p, r) in w.strings(m, "ignoredResources", path) {
        if let Some(msg) = qualified_name_problem(&r) {
            w.invalid(p, quoted(&r), &msg);
        }
        args.ignored_resources.push(r);
    }
    for (p, g) in w.strings(m, "ignoredResourceGroups", path) {
        if g.contains('/') {
            w.invalid(
                p.clone(),
                quoted(&g),
                "resource group name can't contain '/'",
            );
        }
        if let Some(msg) = qualified_name_problem(&g) {
            w.invalid(p, quoted(&g), &msg);
        }
        args.ignored_resource_groups.push(g);
    }
    let sp = child(path, "scoringStrategy");
    let sm = w.object(
        m.and_then(|m| m.get("scoringStrategy")),
        &sp,
        &["type", "resources", "requestedToCapacityRatio"],
    );
    if sm.is_none() {
        return args;
    }
    let kind = w.string(sm, "type", &sp).unwrap_or_default();
    let kind = match kind.as_str() {
        "LeastAllocated" => ScoringStrategyType::LeastAllocated,
        "MostAllocated" => ScoringStrategyType::MostAllocated,
        "RequestedToCapacityRatio" => ScoringStrategyType::RequestedToCapacityRatio,
        other => {
            w.push(
                child(&sp, "type"),
                ProblemKind::NotSupported {
                    value: quoted(other),
                    supported: vec![
                        "LeastAllocated".into(),
                        "MostAllocated".into(),
                        "RequestedToCapacityRatio".into(),
                    ],
                },
            );
            ScoringStrategyType::LeastAllocated
        }
    };
    let mut resources = resource_specs(w, sm, "resources", &sp);
    if resources.is_empty() {
        resources = ResourceSpec::cpu_and_memory();
    }
    let rp = child(&sp, "resources");
    for (i, r) in resources.iter().enumerate() {
        if r.weight <= 0 || r.weight > 100 {
            w.invalid(
                child(&index(&rp, i), "weight"),
                r.weight.to_string(),
                &format!("resource weight of {} not in valid range (0, 100]", r.name),
            );
        }
    }
    let rtc_path = child(&sp, "requestedToCapacityRatio");
    let rtc = w.object(
        sm.and_then(|m| m.get("requestedToCapacityRatio")),
        &rtc_path,
        &["shape"],
    );
    let mut shape = Vec::new();
    if let Some(rtc) = rtc {
        let shape_path = child(&sp, "shape"); // kube's path for these errors
        for (i, item) in w.list(Some(rtc), "shape", &rtc_path).iter().enumerate() {
            let ip = index(&child(&rtc_path, "shape"), i);
            let im = w.object(Some(item), &ip, &["utilization", "score"]);
            let u = w.int32(im, "utilization", &ip).unwrap_or(0);
            let s = w.int32(im, "score", &ip).unwrap_or(0);
            shape.push(UtilizationShapePoint::new(i64::from(u), i64::from(s)));
        }
        if shape.is_empty() {
            w.push(
                shape_path.clone(),
                ProblemKind::Required("at least one point must be specified".into()),
            );
        }
        if let Some(i) =
            (1..shape.len()).find(|&i| shape[i - 1].utilization >= shape[i].utilization)
        {
            w.invalid(
                child(&index(&shape_path, i), "utilization"),
                shape[i].utilization.to_string(),
                "values must be sorted in increasing order",
            );
        }
        for (i, p) in shape.iter().enumerate() {
            if !(0..=100).contains(&p.utilization) {
                w.invalid(
                    child(&index(&shape_path, i), "utilization"),
                    p.utilization.to_string(),
                    "not in valid range [0, 100]",
                );
            }
            if !(0..=10).contains(&p.score) {
                w.invalid(
                    child(&index(&shape_path, i), "score"),
                    p.score.to_string(),
                    "not in valid range [0, 10]",
                );
            }
        }
    } else if kind == ScoringStrategyType::RequestedToCapacityRatio {
        w.push(
            rtc_path,
            ProblemKind::Required("the RequestedToCapacityRatio strategy needs a shape".into()),
        );
    }
    args.scoring_strategy = ScoringStrategy {
        kind,
        resources,
        shape,
    };
    args
}

const TSC_FIELDS: &[&str] = &[
    "maxSkew",
    "topologyKey",
    "whenUnsatisfiable",
    "labelSelector",
    "minDomains",
    "nodeAffinityPolicy",
    "nodeTaintsPolicy",
    "matchLabelKeys",
];

fn spread_args(w: &mut Walk, m: Option<&Map<String, Value>>, path: &str) -> PodTopologySpreadArgs {
    let dt_path = child(path, "defaultingType");
    let defaulting = match w.string(m, "defaultingType", path).as_deref() {
        None | Some("System") => DefaultingType::System,
        Some("List") => DefaultingType::List,
        Some(other) => {
            w.push(
                dt_path.clone(),
                ProblemKind::NotSupported {
                    value: quoted(other),
                    supported: vec!["System".into(), "List".into()],
                },
            );
            DefaultingType::List
        }
    };
    let cp = child(path, "defaultConstraints");
    let items = w.list(m, "defaultConstraints", path);
    if defaulting == DefaultingType::System && !items.is_empty() {
        w.invalid(
            dt_path,
            quoted("System"),
            "when .defaultConstraints are not empty",
        );
    }
    let mut constraints: Vec<TopologySpreadConstraint> = Vec::new();
    let mut seen: Vec<(String, String)> = Vec::new();
    for (i, item) in items.iter().enumerate() {
        let ip = index(&cp, i);
        let before = w.problems.len();
        let im = w.object(Some(item), &ip, TSC_FIELDS);
        let skew = w.int32(im, "maxSkew", &ip).unwrap_or(0);
        if skew <= 0 {
            w.invalid(
                child(&ip, "maxSkew"),
                skew.to_string(),
                "not in valid range (0, inf)",
            );
        }
        let key = w.string(im, "topologyKey", &ip).unwrap_or_default();
        if key.is_empty() {
            w.push(
                child(&ip, "topologyKey"),
                ProblemKind::Required("can not be empty".into()),
            );
        } else if let Some(msg) = qualified_name_problem(&key) {
            w.invalid(child(&ip, "topologyKey"), quoted(&key), &msg);
        }
        let action = w.string(im, "whenUnsatisfiable", &ip).unwrap_or_default();
        match action.as_str() {
            "" => w.push(
                child(&ip, "whenUnsatisfiable"),
                ProblemKind::Required("can not be empty".into()),
            ),
            "DoNotSchedule" | "ScheduleAnyway" => {}
            other => w.push(
                child(&ip, "whenUnsatisfiable"),
                ProblemKind::NotSupported {
                    value: quoted(other),
                    supported: vec!["DoNotSchedule".into(), "ScheduleAnyway".into()],
                },
            ),
        }
        if im.is_some_and(|m| m.get("labelSelector").is_some_and(|s| !s.is_null())) {
            w.push(
                child(&ip, "labelSelector"),
                ProblemKind::Forbidden(
                    "constraint must not define a selector, as they deduced for each pod".into(),
                ),
            );
        }
        if seen.iter().any(|(k, a)| *k == key && *a == action) {
            w.push(
                ip.clone(),
                ProblemKind::Duplicate(format!("{{{key}, {action}}}")),
            );
        }
        seen.push((key, action));
        for k in ["nodeAffinityPolicy", "nodeTaintsPolicy"] {
            if let Some(v) = w.string(im, k, &ip)
                && v != "Honor"
                && v != "Ignore"
            {
                w.push(
                    child(&ip, k),
                    ProblemKind::NotSupported {
                        value: quoted(&v),
                        supported: vec!["Honor".into(), "Ignore".into()],
                    },
                );
            }
        }
        w.int32(im, "minDomains", &ip);
        w.strings(im, "matchLabelKeys", &ip);
        if w.problems.len() == before
            && let Some(c) = w.decode::<TopologySpreadConstraint>(item, &ip)
        {
            constraints.push(c);
        }
    }
    PodTopologySpreadArgs {
        default_constraints: constraints,
        defaulting_type: defaulting,
    }
}

/// kube's `nodeaffinity.NewNodeSelector` checks on one term's requirements.
fn node_selector_term(w: &mut Walk, t: &NodeSelectorTerm, path: &str) {
    use crate::model::NodeSelectorOperator as Op;
    let ep = child(path, "matchExpressions");
    for (i, r) in t.match_expressions.iter().enumerate() {
        let vp = child(&index(&ep, i), "values");
        match r.operator {
            Op::In | Op::NotIn if r.values.is_empty() => w.push(
                vp,
                ProblemKind::Required(
                    "must be specified when `operator` is 'In' or 'NotIn'".into(),
                ),
            ),
            Op::Exists | Op::DoesNotExist if !r.values.is_empty() => w.push(
                vp,
                ProblemKind::Forbidden(
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'".into(),
                ),
            ),
            Op::Gt | Op::Lt if r.values.len() != 1 => w.push(
                vp,
                ProblemKind::Required(
                    "must be specified single value when `operator` is 'Lt' or 'Gt'".into(),
                ),
            ),
            Op::Gt | Op::Lt if r.values[0].parse::<i64>().is_err() => {
                w.invalid(index(&vp, 0), quoted(&r.values[0]), "must be an integer")
            }
            _ => {}
        }
        if let Some(msg) = qualified_name_problem(&r.key) {
            w.invalid(child(&index(&ep, i), "key"), quoted(&r.key), &msg);
        }
    }
    let fp = child(path, "matchFields");
    for (i, r) in t.match_fields.iter().enumerate() {
        if r.key != "metadata.name" {
            w.push(
                child(&index(&fp, i), "key"),
                ProblemKind::NotSupported {
                    value: quoted(&r.key),
                    supported: vec!["metadata.name".into()],
                },
            );
        }
        if r.operator != Op::In && r.operator != Op::NotIn {
            w.push(
                child(&index(&fp, i), "operator"),
                ProblemKind::NotSupported {
                    value: quoted(&format!("{:?}", r.operator)),
                    supported: vec!["In".into(), "NotIn".into()],
                },
            );
        } else if r.values.len() != 1 {
            w.push(
                child(&index(&fp, i), "values"),
                ProblemKind::Required("must be only one value when `operator` is 'In' or 'NotIn' for node field selector".into()),
            );
        }
    }
}

/// Why `name` is not a Kubernetes qualified name (`[prefix/]name`), as
/// `validation.IsQualifiedName` words it; `None` when it is one.
fn qualified_name_problem(name: &str) -> Option<String> {
    let (prefix, local) = match name.split_once('/') {
        Some((p, l)) => (Some(p), l),
        None => (None, name),
    };
    if let Some(p) = prefix {
        let dns_ok = !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|l| {
                !l.is_empty()
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && l.as_bytes()[0].is_ascii_alphanumeric()
                    && l.as_bytes()[l.len() - 1].is_ascii_alphanumeric()
            });
        if !dns_ok {
            return Some("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character".into());
        }
    }
    if local.is_empty() {
        return Some("name part must be non-empty".into());
    }
    if local.len() > 63 {
        return Some("name part must be no more than 63 characters".into());
    }
    let b = local.as_bytes();
    let ok = b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|&c| c.is_ascii_alphanumeric() || c == b'-' || c == b'_' || c == b'.');
    (!ok).then(|| "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character".into())
}

const EXTENDER_FIELDS: &[&str] = &[
    "urlPrefix",
    "filterVerb",
    "preemptVerb",
    "prioritizeVerb",
    "weight",
    "bindVerb",
    "enableHTTPS",
    "tlsConfig",
    "httpTimeout",
    "nodeCacheCapable",
    "managedResources",
    "ignorable",
];

const TLS_FIELDS: &[&str] = &[
    "insecure",
    "serverName",
    "certFile",
    "keyFile",
    "caFile",
    "certData",
    "keyData",
    "caData",
];

/// A `[]byte` field: base64 text, as Go's JSON decoding of `[]byte` reads it.
fn bytes(w: &mut Walk, m: Option<&Map<String, Value>>, key: &str, path: &str) -> Vec<u8> {
    use base64::Engine;
    let Some(text) = w.string(m, key, path) else {
        return Vec::new();
    };
    match base64::engine::general_purpose::STANDARD.decode(text.as_bytes()) {
        Ok(b) => b,
        Err(e) => {
            w.invalid(
                child(path, key),
                "(base64 data)",
                &format!("not base64: {e}"),
            );
            Vec::new()
        }
    }
}

/// `tlsConfig` of an extender.
fn tls_config(
    w: &mut Walk,
    m: Option<&Map<String, Value>>,
    path: &str,
) -> Option<ExtenderTlsConfig> {
    let tp = child(path, "tlsConfig");
    let t = w.object(m.and_then(|m| m.get("tlsConfig")), &tp, TLS_FIELDS)?;
    let t = Some(t);
    let mut c = ExtenderTlsConfig::new();
    c.insecure = w.boolean(t, "insecure", &tp).unwrap_or(false);
    c.server_name = w.string(t, "serverName", &tp).unwrap_or_default();
    c.cert_file = w.string(t, "certFile", &tp).unwrap_or_default();
    c.key_file = w.string(t, "keyFile", &tp).unwrap_or_default();
    c.ca_file = w.string(t, "caFile", &tp).unwrap_or_default();
    c.cert_data = bytes(w, t, "certData", &tp);
    c.key_data = bytes(w, t, "keyData", &tp);
    c.ca_data = bytes(w, t, "caData", &tp);
    Some(c)
}

/// The extenders, read and checked with kube's `validateExtenders` (kube's v1 defaulting
/// leaves extenders as written; the HTTP client applies the 5-second timeout).
fn extenders(w: &mut Walk, top: Option<&Map<String, Value>>) -> Vec<ExtenderConfig> {
    let items = w.list(top, "extenders", "");
    let mut binders = 0;
    let mut managed: Vec<String> = Vec::new();
    let mut out = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let ip = index("extenders", i);
        let m = w.object(Some(item), &ip, EXTENDER_FIELDS);
        let mut e = ExtenderConfig::new(w.string(m, "urlPrefix", &ip).unwrap_or_default());
        e.filter_verb = w.string(m, "filterVerb", &ip).unwrap_or_default();
        e.preempt_verb = w.string(m, "preemptVerb", &ip).unwrap_or_default();
        e.prioritize_verb = w.string(m, "prioritizeVerb", &ip).unwrap_or_default();
        e.bind_verb = w.string(m, "bindVerb", &ip).unwrap_or_default();
        if let Some(t) = w.string(m, "httpTimeout", &ip) {
            match parse_go_duration(&t) {
                Some(d) => e.http_timeout = d,
                None => w.invalid(
                    child(&ip, "httpTimeout"),
                    quoted(&t),
                    "not a duration (Go's syntax, such as \"5s\" or \"1m30s\", not negative)",
                ),
            }
        }
        e.enable_https = w.boolean(m, "enableHTTPS", &ip).unwrap_or(false);
        e.node_cache_capable = w.boolean(m, "nodeCacheCapable", &ip).unwrap_or(false);
        e.ignorable = w.boolean(m, "ignorable", &ip).unwrap_or(false);
        e.tls_config = tls_config(w, m, &ip);
        e.weight = w.int(m, "weight", &ip, 64).unwrap_or(0);
        if !e.prioritize_verb.is_empty() && e.weight <= 0 {
            w.invalid(
                child(&ip, "weight"),
                e.weight.to_string(),
                "must have a positive weight applied to it",
            );
        }
        if !e.bind_verb.is_empty() {
            binders += 1;
        }
        let mp = child(&ip, "managedResources");
        for (j, r) in w.list(m, "managedResources", &ip).iter().enumerate() {
            let rp = index(&mp, j);
            let rm = w.object(Some(r), &rp, &["name", "ignoredByScheduler"]);
            let ignored = w.boolean(rm, "ignoredByScheduler", &rp).unwrap_or(false);
            let name = w.string(rm, "name", &rp).unwrap_or_default();
            let np = child(&rp, "name");
            if let Some(msg) = qualified_name_problem(&name) {
                w.invalid(np.clone(), quoted(&name), &msg);
            } else if !name.contains('/')
                || name.contains("kubernetes.io/")
                || name.starts_with("requests.")
            {
                w.invalid(
                    np.clone(),
                    quoted(&name),
                    "is an invalid extended resource name",
                );
            }
            if managed.contains(&name) {
                w.invalid(
                    np,
                    quoted(&name),
                    "duplicate extender managed resource name",
                );
            }
            managed.push(name.clone());
            e = e.managed_resource(name, ignored);
        }
        out.push(e);
    }
    if binders > 1 {
        w.invalid(
            "extenders",
            quoted(&format!("found {binders} extenders implementing bind")),
            "only one extender can implement bind",
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_edit_suggestions() {
        let valid = &["percentageOfNodesToScore", "profiles", "parallelism"];
        assert_eq!(suggest("profile", valid), Some("profiles"));
        assert_eq!(suggest("paralellism", valid), Some("parallelism"));
        assert_eq!(suggest("parallelsim", valid), Some("parallelism"));
        assert_eq!(suggest("Profiles", valid), Some("profiles"));
        assert_eq!(suggest("zzz", valid), None);
    }

    #[test]
    fn qualified_names() {
        assert_eq!(qualified_name_problem("example.com/foo"), None);
        assert_eq!(qualified_name_problem("topology.kubernetes.io/zone"), None);
        assert!(qualified_name_problem("Example.com/foo").is_some());
        assert!(qualified_name_problem("foo-").is_some());
        assert!(qualified_name_problem("").is_some());
    }
}
