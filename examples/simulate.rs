//! What-if simulator: where would kube-scheduler put these pending pods?
//!
//! ```sh
//! cargo run --release --example simulate -- \
//!     --cluster examples/data/cluster.json --pods examples/data/pods.json \
//!     [--objects MIXED.json]... \
//!     [--policy examples/data/policy-default.json | --config examples/data/scheduler-config.yaml] \
//!     [--format table|json] [--seed 1] [--top 3 | --cycle [--until 10m]]
//! ```
//!
//! `--cluster` holds nodes only (`kubectl get nodes -o json`) and `--pods` pods only
//! (`kubectl get pods -A -o json`); an item of another kind is an error naming the file and
//! the item. `--objects` (repeatable) takes a file of mixed kinds (`kubectl get
//! nodes,pods,services,replicasets,statefulsets,replicationcontrollers,namespaces -A -o json`):
//! its nodes and pods join the others, its workloads feed spreading, its namespaces' labels
//! feed pod affinity's `namespaceSelector`, its PersistentVolumes, PersistentVolumeClaims,
//! StorageClasses and CSINodes feed the volume predicates (`examples/data/stateful.json`: a
//! StatefulSet with a bound and an unbound claim, a local volume and an unbound claim without
//! a class), other kinds are counted. What the
//! load leaves out (pods bound to a missing node, a pod listed twice, finished pods, pending
//! pods being deleted, other kinds) is printed to stderr with counts and the first names.
//!
//! Pods bound to a node (spec.nodeName) form the starting state; pending pods are scheduled in
//! file order, each assumed onto its node before the next, with the given legacy Policy (kube's
//! default policy when none) as the one profile `default-scheduler` (as kube v1.20 runs it), or
//! with the profiles of a `KubeSchedulerConfiguration` (`--config`, kube-scheduler v1.34's
//! plugins): each pod uses the profile its `spec.schedulerName` names, and a name no profile
//! has is reported in the pod's place, naming the profiles there are. For each pod the output is the chosen node with the top nodes'
//! scores per priority, or why it fits nowhere: every node's reasons and kube's summary line.
//! A pod that cannot be scheduled for another reason is reported in its place and the run goes
//! on. Runs are deterministic for a given `--seed`. Exit status: 0, 1 when a pod failed with an
//! error or named no profile, 2 for bad arguments or files.
//!
//! `--cycle` runs the same objects through the scheduling engine
//! (`sched_core::scheduler::Scheduler`, from the `--config` file, or the Policy as the one
//! profile `default-scheduler`) instead, as an informer would report them at time 0: nodes,
//! bound pods, storage objects, PodDisruptionBudgets, then the pending pods in file order
//! (the queue takes them by priority, then arrival). Under a simulated clock it takes the
//! engine's steps as a caller does: a bind succeeds (`finish_binding`), then the informer
//! reports the PersistentVolumes and claims bound for it and the pod with `spec.nodeName`
//! set; a preemption's victims are deleted at once (`PodDelete`); when idle, the clock jumps
//! to the engine's next wake-up (a backoff's end). The run stops when nothing is left but
//! unschedulable and gated pods, or when the next wake-up is past `--until` (default 10m;
//! `500ms`, `90s`, `1.5h`). A pod whose attempt fails with an error (not "no node fits") is
//! reported and withdrawn rather than retried. Each step is printed in order (time, pod,
//! profile, result: bound to a node, unschedulable with kube's message, preemption with its
//! node and victims, a rejection by a plugin), gated pods and pods naming no profile as they
//! arrive, then a summary (counts, every pending pod's fate, every victim).
//! `examples/data/gpus.json` is a GPU cluster for DynamicResources (claims made from
//! ResourceClaimTemplates for pending pods, as kube's resourceclaim controller would).
//! `examples/data/cycle.json` with `--config examples/data/scheduler-config.yaml` shows queue
//! order, a gated pod, a preemption steered by a PodDisruptionBudget and two profiles.
//!
//! PodGroups (`scheduling.x-k8s.io/v1alpha1`) in the files turn on gang scheduling
//! (scheduler-plugins' Coscheduling, `sched_core::scheduler::gang`): members wait at Permit
//! (printed with their deadline) until `minMember` are placed, and the summary gives each group
//! as placed, waiting, timed out or not placed. `examples/data/gangs.json` shows a gang placed
//! together beside ordinary pods, one that times out waiting for a gated member, and one whose
//! `minResources` the cluster cannot hold.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::Duration;

use sched_core::config::{DEFAULT_SCHEDULER_NAME, Registry, SchedulerConfiguration};
use sched_core::framework::KubeVersion;
use sched_core::model::{
    Cluster, ClusterObjects, Pod, PodKey, ResourceClaim, Role, load_file, pod_group_of,
};
use sched_core::plugins::volume;
use sched_core::policy::Policy;
use sched_core::profile::{Cache, Profile, ScheduleError};
use sched_core::scheduler::gang::CoschedulingArgs;
use sched_core::scheduler::{
    BindError, ClusterEvent, ObjectKey, QueueSettings, Scheduler, SchedulerEvent, Step,
};
use sched_core::snapshot::{NamespaceLabels, Snapshot};
use serde_json::{Value, json};

struct Args {
    cluster: Option<String>,
    pods: Option<String>,
    objects: Vec<String>,
    policy: Option<String>,
    config: Option<String>,
    json: bool,
    seed: u64,
    top: usize,
    /// `--cycle`: run the pods through the scheduling engine.
    cycle: bool,
    /// `--until`: the simulated time limit of `--cycle`.
    until: Option<Duration>,
    /// `--feature-gates SchedulerPopFromBackoffQ=...` (kube's gate, on by default).
    pop_from_backoff: bool,
}

fn usage() -> String {
    "usage: simulate [--cluster NODES.json] [--pods PODS.json] [--objects MIXED.json]... \
     [--policy POLICY.json | --config KUBE_SCHEDULER_CONFIGURATION.yaml] \
     [--format table|json] [--seed N] [--top K | --cycle [--until DURATION] \
     [--feature-gates SchedulerPopFromBackoffQ=true|false]]"
        .into()
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut cluster, mut pods, mut policy, mut config) = (None, None, None, None);
    let mut objects = Vec::new();
    let (mut json, mut seed, mut top) = (false, 1u64, 3usize);
    let (mut top_given, mut cycle, mut until) = (false, false, None);
    let mut pop_from_backoff = None;
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .ok_or_else(|| format!("{name} needs a value\n{}", usage()))
        };
        match a.as_str() {
            "--cluster" => cluster = Some(value("--cluster")?),
            "--pods" => pods = Some(value("--pods")?),
            "--objects" => objects.push(value("--objects")?),
            "--policy" => policy = Some(value("--policy")?),
            "--config" => config = Some(value("--config")?),
            "--format" => match value("--format")?.as_str() {
                "table" => json = false,
                "json" => json = true,
                other => return Err(format!("--format must be table or json, not {other:?}")),
            },
            "--seed" => {
                let v = value("--seed")?;
                seed = v
                    .parse()
                    .map_err(|_| format!("--seed must be a number, not {v:?}"))?;
            }
            "--top" => {
                let v = value("--top")?;
                top = v
                    .parse()
                    .map_err(|_| format!("--top must be a number, not {v:?}"))?;
                top_given = true;
            }
            "--cycle" => cycle = true,
            "--until" => until = Some(parse_duration(&value("--until")?)?),
            "--feature-gates" => {
                pop_from_backoff = Some(parse_feature_gates(&value("--feature-gates")?)?)
            }
            "-h" | "--help" => return Err(usage()),
            other => return Err(format!("unknown argument {other:?}\n{}", usage())),
        }
    }
    if cluster.is_none() && objects.is_empty() {
        return Err(format!(
            "--cluster or --objects is required (the nodes)\n{}",
            usage()
        ));
    }
    if policy.is_some() && config.is_some() {
        return Err(format!(
            "--policy and --config exclude each other\n{}",
            usage()
        ));
    }
    if !cycle && until.is_some() {
        return Err(format!("--until needs --cycle\n{}", usage()));
    }
    if !cycle && pop_from_backoff.is_some() {
        return Err(format!(
            "--feature-gates sets the queue, which only --cycle uses\n{}",
            usage()
        ));
    }
    if cycle && top_given {
        return Err(format!(
            "--top shows scores, which --cycle does not print\n{}",
            usage()
        ));
    }
    Ok(Args {
        cluster,
        pods,
        objects,
        policy,
        config,
        json,
        seed,
        top,
        cycle,
        until,
        pop_from_backoff: pop_from_backoff.unwrap_or(true),
    })
}

/// kube-scheduler's `--feature-gates` list (`Name=bool,...`); the one gate the engine has is
/// `SchedulerPopFromBackoffQ`. Returns its value.
fn parse_feature_gates(v: &str) -> Result<bool, String> {
    let mut pop = true;
    for item in v.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (name, value) = item
            .split_once('=')
            .ok_or_else(|| format!("--feature-gates: {item:?} is not Name=true|false"))?;
        let on = match value.trim() {
            "true" => true,
            "false" => false,
            other => {
                return Err(format!(
                    "--feature-gates: {name} must be true or false, not {other:?}"
                ));
            }
        };
        match name.trim() {
            "SchedulerPopFromBackoffQ" => pop = on,
            other => {
                return Err(format!(
                    "--feature-gates: unknown gate {other:?} (known: SchedulerPopFromBackoffQ)"
                ));
            }
        }
    }
    Ok(pop)
}

/// A simulated duration: a number with a unit (`ms`, `s`, `m`, `h`; `90s`, `10m`, `1.5h`) or
/// a plain number of seconds.
fn parse_duration(v: &str) -> Result<Duration, String> {
    let bad =
        || format!("--until must be a duration such as 90s, 10m or 1h (ms, s, m, h), not {v:?}");
    let t = v.trim();
    let (number, unit) = match t.find(|c: char| c.is_ascii_alphabetic()) {
        Some(i) => t.split_at(i),
        None => (t, "s"),
    };
    let scale = match unit {
        "ms" => 0.001,
        "s" => 1.0,
        "m" => 60.0,
        "h" => 3600.0,
        _ => return Err(bad()),
    };
    let n: f64 = number.parse().map_err(|_| bad())?;
    if !n.is_finite() || n < 0.0 {
        return Err(bad());
    }
    Duration::try_from_secs_f64(n * scale).map_err(|_| bad())
}

/// How a run went: 0 all pods answered, 1 some pod failed with an error.
enum Outcome {
    Answered,
    PodErrors,
}

fn load(args: &Args) -> Result<ClusterObjects, String> {
    let mut objects = ClusterObjects::default();
    let files = args
        .cluster
        .iter()
        .map(|f| (f, Role::Nodes))
        .chain(args.pods.iter().map(|f| (f, Role::Pods)))
        .chain(args.objects.iter().map(|f| (f, Role::Mixed)));
    for (file, role) in files {
        objects.extend(load_file(file, role).map_err(|e| e.to_string())?);
    }
    Ok(objects)
}

/// The profile of `--policy` (kube's default policy when none).
fn policy_profile(args: &Args) -> Result<Profile, String> {
    let policy = match &args.policy {
        Some(p) => {
            let bytes = std::fs::read(p).map_err(|e| format!("{p}: {e}"))?;
            Policy::from_slice(&bytes).map_err(|e| format!("{p}: {e}"))?
        }
        None => Policy::kube_default(),
    };
    policy
        .builder()
        .and_then(|b| Ok(b.threads(1).seed(args.seed).build()?))
        .map_err(|e| format!("policy: {e}"))
}

fn run() -> Result<Outcome, String> {
    let args = parse_args()?;
    let mut cluster = load(&args)?.into_cluster().map_err(|e| e.to_string())?;
    let made = claims_from_templates(&mut cluster);
    if made > 0 {
        eprintln!(
            "simulate: made {made} ResourceClaims from ResourceClaimTemplates for pending pods"
        );
    }
    for line in cluster.report.to_string().lines() {
        eprintln!("simulate: {line}");
    }
    let dra = &cluster.dra;
    if !dra.is_empty() {
        eprintln!(
            "simulate: loaded {} DeviceClasses, {} ResourceSlices, {} ResourceClaims and {} \
             ResourceClaimTemplates (templates are not read: the claims made from them are)",
            dra.device_classes.len(),
            dra.resource_slices.len(),
            dra.resource_claims.len(),
            dra.resource_claim_templates.len()
        );
    }
    if args.cycle {
        return run_cycle(&args, cluster);
    }
    // (scheduler name, profile, its cache): one profile for a Policy, one per profile of a
    // configuration.
    let mut profiles: Vec<(String, Profile, Cache)> = Vec::new();
    if let Some(path) = &args.config {
        let config = SchedulerConfiguration::from_file(path).map_err(|e| e.to_string())?;
        for (name, b) in config
            .builders(&Registry::v1_34())
            .map_err(|e| format!("{path}: {e}"))?
        {
            let profile = b
                .threads(1)
                .seed(args.seed)
                .build()
                .map_err(|e| format!("{path}: {e}"))?;
            let cache = profile.create_cache();
            profiles.push((name, profile, cache));
        }
    } else {
        // A Policy is the default scheduler's one profile, as in kube v1.20: a pod naming
        // another scheduler is reported as with --config.
        let profile = policy_profile(&args)?;
        let cache = profile.create_cache();
        profiles.push((DEFAULT_SCHEDULER_NAME.to_string(), profile, cache));
    }
    let legacy = args.config.is_none();
    let pending = cluster.pending;
    let mut snapshot =
        Snapshot::from_objects(cluster.nodes, cluster.bound).map_err(|e| e.to_string())?;
    snapshot.set_workloads(cluster.workloads);
    let mut namespaces = NamespaceLabels::new();
    namespaces.extend_from(&cluster.namespaces);
    snapshot.set_namespace_labels(namespaces);
    // PersistentVolumes, claims, StorageClasses and CSINodes of the mixed files.
    snapshot.set_storage(cluster.storage);
    // DeviceClasses, ResourceSlices and ResourceClaims (dynamic resource allocation).
    snapshot.dra_mut().load(cluster.dra);
    let mut outcome = Outcome::Answered;
    let mut results = Vec::new();
    let mut text = String::new();
    let _ = writeln!(
        text,
        "{} nodes, {} running pods, {} pending pods; {}; seed {}\n",
        snapshot.len(),
        snapshot.pod_count(),
        pending.len(),
        profiles
            .iter()
            .map(|(name, p, _)| format!(
                "{}{} predicates, {} priorities",
                if legacy {
                    String::new()
                } else {
                    format!("profile {name}: ")
                },
                p.predicate_names().count(),
                p.priority_weights().count()
            ))
            .collect::<Vec<_>>()
            .join("; "),
        args.seed
    );
    for pod in &pending {
        let key = pod.key();
        let wanted = match pod.spec.scheduler_name.as_str() {
            "" => DEFAULT_SCHEDULER_NAME,
            n => n,
        };
        let Some((_, profile, cache)) = profiles.iter_mut().find(|(name, _, _)| name == wanted)
        else {
            let known: Vec<&str> = profiles.iter().map(|(n, _, _)| n.as_str()).collect();
            let e = format!(
                "asks for scheduler {wanted:?}, which no profile has (profiles: {})",
                known.join(", ")
            );
            let _ = writeln!(text, "{key} -> error: {e}");
            results.push(json!({"pod": key, "node": Value::Null, "error": e}));
            outcome = Outcome::PodErrors;
            continue;
        };
        let (profile, cache) = (&*profile, cache);
        match profile.schedule_and_assume(cache, pod, &mut snapshot) {
            Ok(r) => {
                // Reserve the PersistentVolumes the profile's VolumeBinding matched there, as
                // kube's AssumePodVolumes does, so its next pods do not count on them.
                let version = if legacy {
                    KubeVersion::V1_20
                } else {
                    KubeVersion::V1_34
                };
                if let Some(binder) = profile.volume_binder() {
                    let _ = volume::assume_volumes(&mut snapshot, binder, pod, &r.node, version);
                }
                // Allocate its ResourceClaims there and write them (DynamicResources' Reserve
                // and PreBind), so that its next pods do not count on the same devices.
                let claims = if profile.runs_dynamic_resources() {
                    bind_claims(&mut snapshot, pod, &r.node)
                } else {
                    Vec::new()
                };
                let table = profile.last_scores(cache);
                let mut rows: Vec<(usize, i64, Vec<i64>)> =
                    (0..table.len()).map(|i| table.row(i)).collect();
                rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
                rows.truncate(args.top);
                let names: Vec<(String, i64)> = table
                    .priorities()
                    .iter()
                    .map(|(n, w)| (n.to_string(), *w))
                    .collect();
                let _ = writeln!(
                    text,
                    "{key} -> {} (score {}, {} of {} nodes feasible, {} evaluated)",
                    r.node,
                    r.score,
                    r.feasible_nodes,
                    snapshot.len(),
                    r.evaluated_nodes
                );
                for c in &claims {
                    let _ = writeln!(text, "    claim {c}");
                }
                let mut top = Vec::new();
                for (idx, total, per) in &rows {
                    let name = snapshot.node_infos()[*idx].name();
                    let parts: Vec<String> = names
                        .iter()
                        .zip(per)
                        .map(|((n, w), s)| format!("{n}={s}x{w}"))
                        .collect();
                    let _ = writeln!(text, "    {name:<24} total {total:>6}  {}", parts.join(" "));
                    top.push(json!({
                        "node": name,
                        "total": total,
                        "scores": names.iter().zip(per).map(|((n, w), s)| json!({"priority": n, "weight": w, "score": s})).collect::<Vec<_>>(),
                    }));
                }
                results.push(json!({
                    "pod": key, "node": r.node, "score": r.score,
                    "feasibleNodes": r.feasible_nodes, "evaluatedNodes": r.evaluated_nodes, "top": top,
                    "claims": claims,
                }));
            }
            Err(ScheduleError::Unschedulable(fit)) => {
                let _ = writeln!(text, "{key} -> unschedulable: {fit}");
                let mut per_node = Vec::new();
                for f in fit.failures() {
                    let _ = writeln!(text, "    {:<24} {}", f.node, f.messages.join("; "));
                    per_node.push(json!({"node": f.node, "reasons": f.messages}));
                }
                results.push(json!({"pod": key, "node": Value::Null, "summary": fit.to_string(), "nodes": per_node}));
            }
            Err(e) => {
                let _ = writeln!(text, "{key} -> error: {e}");
                results.push(json!({"pod": key, "node": Value::Null, "error": e.to_string()}));
                outcome = Outcome::PodErrors;
            }
        }
    }
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({"seed": args.seed, "pods": results}))
                .unwrap_or_default()
        );
    } else {
        print!("{text}");
    }
    Ok(outcome)
}

/// The default simulated time limit of `--cycle`.
const DEFAULT_UNTIL: Duration = Duration::from_secs(600);

/// A guard against a run that never settles within its time limit (steps at one instant).
const MAX_STEPS: usize = 100_000;

/// What became of a pending pod in `--cycle`.
#[derive(Clone, Debug, PartialEq)]
enum Fate {
    /// Still queued (active or backing off) when the run stopped.
    Queued,
    Bound(String),
    Unschedulable(String),
    Gated,
    NoProfile,
    /// Failed with an error and was withdrawn from the run.
    Failed,
    /// Bound here, then preempted by a later pod.
    Preempted,
}

impl Fate {
    fn is_bound(&self) -> bool {
        matches!(self, Fate::Bound(_))
    }
}

/// Seconds, as the step lines print them.
fn secs(t: Duration) -> String {
    format!("{:.3}s", t.as_secs_f64())
}

/// `n thing` or `n things`.
fn plural(n: usize, thing: &str) -> String {
    if n == 1 {
        format!("{n} {thing}")
    } else {
        format!("{n} {thing}s")
    }
}

/// The steps of `--cycle`, printed and recorded.
struct Log {
    text: String,
    steps: Vec<Value>,
    /// Column widths: pod keys, profile names.
    pod_width: usize,
    profile_width: usize,
}

impl Log {
    fn step(&mut self, now: Duration, pod: &str, profile: &str, line: &str, record: Value) {
        let _ = writeln!(
            self.text,
            "{:>9}  {pod:<pw$}  {profile:<fw$}  {line}",
            secs(now),
            pw = self.pod_width,
            fw = self.profile_width
        );
        let mut record = record;
        if let Value::Object(m) = &mut record {
            m.insert("time".into(), json!(now.as_secs_f64()));
            m.insert("pod".into(), json!(pod));
            m.insert("profile".into(), json!(profile));
        }
        self.steps.push(record);
    }
}

/// The scheduler name a pod asks for.
fn wanted_profile(pod: &Pod) -> &str {
    match pod.spec.scheduler_name.as_str() {
        "" => DEFAULT_SCHEDULER_NAME,
        n => n,
    }
}

/// `--cycle`: every object goes to the scheduling engine as the informers would report it,
/// and the steps are taken as a caller takes them, under a simulated clock.
fn run_cycle(args: &Args, mut cluster: Cluster) -> Result<Outcome, String> {
    let limit = args.until.unwrap_or(DEFAULT_UNTIL);
    // Workloads have no events: the engine starts from a snapshot that holds them and no node.
    let mut snapshot = Snapshot::from_objects(Vec::new(), Vec::new()).map_err(|e| e.to_string())?;
    snapshot.set_workloads(std::mem::take(&mut cluster.workloads));
    let (scheduler, profiles) = match &args.config {
        Some(path) => {
            let config = SchedulerConfiguration::from_file(path).map_err(|e| e.to_string())?;
            let names: Vec<String> = config
                .profiles
                .iter()
                .map(|p| p.scheduler_name.clone())
                .collect();
            // The simulator has no asynchronous side: extenders are called in the engine.
            let scheduler =
                Scheduler::from_config(&config, &Registry::v1_34(), snapshot, args.seed)
                    .and_then(Scheduler::with_blocking_http_extenders)
                    .map_err(|e| format!("{path}: {e}"))?;
            (scheduler, names)
        }
        None => {
            // A Policy is the default scheduler's one profile, as in kube v1.20.
            let profile = policy_profile(args)?;
            let name = DEFAULT_SCHEDULER_NAME.to_string();
            let scheduler = Scheduler::new(
                vec![(name.clone(), profile)],
                snapshot,
                QueueSettings::default(),
            )
            .with_preemption_seed(args.seed);
            (scheduler, vec![name])
        }
    };

    let settings = *scheduler.queue().settings();
    let settings = if args.pop_from_backoff {
        settings
    } else {
        settings.without_pop_from_backoff()
    };
    let mut scheduler = scheduler.with_queue_settings(settings);
    // PodGroups turn gang scheduling (scheduler-plugins' Coscheduling) on.
    let groups: Vec<(String, i32)> = cluster
        .pod_groups
        .iter()
        .map(|g| (g.key(), g.spec.min_member))
        .collect();
    if !groups.is_empty() {
        scheduler = scheduler.with_coscheduling(CoschedulingArgs::default());
    }
    // Groups a member of which timed out at Permit.
    let mut timed_out: Vec<String> = Vec::new();
    let now = Duration::ZERO;
    let (nodes, bound, pdbs, pending) = (
        cluster.nodes.len(),
        cluster.bound.len(),
        cluster.pdbs.len(),
        cluster.pending.len(),
    );
    let pod_width = cluster
        .bound
        .iter()
        .chain(&cluster.pending)
        .map(|p| p.metadata.namespace.len() + 1 + p.metadata.name.len())
        .max()
        .unwrap_or(0)
        .clamp(3, 40);
    let profile_width = profiles
        .iter()
        .map(String::len)
        .chain(cluster.pending.iter().map(|p| wanted_profile(p).len()))
        .max()
        .unwrap_or(0)
        .clamp(7, 40);
    let mut log = Log {
        text: String::new(),
        steps: Vec::new(),
        pod_width,
        profile_width,
    };
    let _ = writeln!(
        log.text,
        "{}, {}, {}, {}; profiles: {}; seed {}; time limit {}\n",
        plural(nodes, "node"),
        plural(bound, "bound pod"),
        plural(pdbs, "PodDisruptionBudget"),
        plural(pending, "pending pod"),
        profiles.join(", "),
        args.seed,
        secs(limit)
    );
    let _ = writeln!(
        log.text,
        "{:>9}  {:<pod_width$}  {:<profile_width$}  result",
        "time", "pod", "profile"
    );
    // Namespaces, nodes, bound pods, storage objects and budgets, as informers list them.
    for event in ClusterEvent::listing(&mut cluster) {
        scheduler.apply(event, now);
    }
    // The pending pods arrive last, in file order: the queue orders them by priority, then
    // arrival. Gated pods and pods of a scheduler no profile has are reported as they arrive.
    let mut fates: Vec<(PodKey, Fate)> = Vec::new();
    let mut objects: HashMap<PodKey, Pod> = HashMap::new();
    let mut outcome = Outcome::Answered;
    for pod in cluster.pending {
        let key = pod.key();
        let wanted = wanted_profile(&pod).to_string();
        let fate = if !profiles.contains(&wanted) {
            let e = format!(
                "asks for scheduler {wanted:?}, which no profile has (profiles: {})",
                profiles.join(", ")
            );
            log.step(
                now,
                &key,
                &wanted,
                &format!("no profile: {e}"),
                json!({"result": "noProfile", "message": e}),
            );
            outcome = Outcome::PodErrors;
            Fate::NoProfile
        } else if !pod.spec.scheduling_gates.is_empty() {
            let gates: Vec<&str> = pod
                .spec
                .scheduling_gates
                .iter()
                .map(|g| g.name.as_str())
                .collect();
            log.step(
                now,
                &key,
                &wanted,
                &format!(
                    "gated: waits for its scheduling gates ({}), not scheduled",
                    gates.join(", ")
                ),
                json!({"result": "gated", "gates": gates}),
            );
            Fate::Gated
        } else {
            Fate::Queued
        };
        fates.push((key.clone(), fate));
        objects.insert(key, pod.clone());
        scheduler.apply(ClusterEvent::add(pod), now);
    }
    for e in scheduler.drain_events() {
        if let SchedulerEvent::Rejected { object, message } = e {
            eprintln!("simulate: {object} left out: {message}");
        }
    }

    let index: HashMap<PodKey, usize> = fates
        .iter()
        .enumerate()
        .map(|(i, (k, _))| (k.clone(), i))
        .collect();
    let set = |fates: &mut Vec<(PodKey, Fate)>, key: &str, fate: Fate| {
        if let Some(&i) = index.get(key) {
            fates[i].1 = fate;
        }
    };
    let profile_of = |key: &str| {
        objects
            .get(key)
            .map_or(DEFAULT_SCHEDULER_NAME, wanted_profile)
            .to_string()
    };
    let mut preemptions = 0usize;
    // (victim, preemptor, node), in order.
    let mut victims_all: Vec<(PodKey, PodKey, String)> = Vec::new();
    let mut now = now;
    let mut stop = String::new();
    let mut steps = 0usize;
    while stop.is_empty() {
        steps += 1;
        if steps > MAX_STEPS {
            stop = format!("stopped after {MAX_STEPS} steps");
            break;
        }
        match scheduler.schedule_one(now) {
            Step::Bind {
                pod,
                node,
                profile,
                volumes,
                claims,
                extender_binder,
                ..
            } => {
                // The simulated API server accepts the binding (or the binder extender
                // answers), and the informer reports the volumes, the claims and the pod bound.
                let result = match &extender_binder {
                    Some(b) => b.bind().map_err(|e| format!("extender {}: {e}", b.name())),
                    None => Ok(()),
                };
                scheduler.finish_binding(&pod, result.clone().map_err(BindError::new), now);
                if let Err(e) = result {
                    log.step(
                        now,
                        &pod,
                        &profile,
                        &format!("bind to {node} failed: {e}"),
                        json!({"result": "bindFailed", "node": node, "message": e}),
                    );
                    continue;
                }
                for pv in volumes.bindings() {
                    scheduler.apply(ClusterEvent::update(pv.clone()), now);
                }
                for pvc in volumes.provisions() {
                    scheduler.apply(ClusterEvent::update(pvc.clone()), now);
                }
                let mut allocated = Vec::new();
                for c in &claims {
                    let written = scheduler.snapshot().dra().claim(&c.namespace, &c.name);
                    if let Some(claim) = written.map(|c| ResourceClaim::clone(c)) {
                        allocated.push(describe_claim(&claim));
                        scheduler.apply(ClusterEvent::update(claim), now);
                    }
                }
                if let Some(obj) = objects.get(&pod) {
                    let mut confirmed = obj.clone();
                    confirmed.spec.node_name = node.clone();
                    scheduler.apply(ClusterEvent::update(confirmed), now);
                }
                log.step(
                    now,
                    &pod,
                    &profile,
                    &if allocated.is_empty() {
                        format!("bound to {node}")
                    } else {
                        format!("bound to {node}, claims {}", allocated.join("; "))
                    },
                    json!({"result": "bound", "node": node, "claims": allocated}),
                );
                set(&mut fates, &pod, Fate::Bound(node));
            }
            Step::Unschedulable {
                pod,
                error,
                deallocate,
            } => {
                deallocate_claim(&mut scheduler, deallocate, now);
                let message = error.to_string();
                log.step(
                    now,
                    &pod,
                    &profile_of(&pod),
                    &format!("unschedulable: {message}"),
                    json!({"result": "unschedulable", "message": message}),
                );
                set(&mut fates, &pod, Fate::Unschedulable(message));
            }
            Step::Preempt {
                pod,
                node,
                victims,
                deallocate,
                ..
            } => {
                deallocate_claim(&mut scheduler, deallocate, now);
                // The victims are deleted; the informer reports them gone.
                for v in &victims {
                    scheduler.apply(ClusterEvent::Delete(ObjectKey::pod(v.clone())), now);
                    set(&mut fates, v, Fate::Preempted);
                    victims_all.push((v.clone(), pod.clone(), node.clone()));
                }
                preemptions += 1;
                log.step(
                    now,
                    &pod,
                    &profile_of(&pod),
                    &format!("preempts on {node}: deletes {}", victims.join(", ")),
                    json!({"result": "preempt", "node": node, "victims": victims}),
                );
            }
            Step::Waiting { pod, node, until } => {
                log.step(
                    now,
                    &pod,
                    &profile_of(&pod),
                    &format!("waiting at Permit on {node} until {}", secs(until)),
                    json!({"result": "waiting", "node": node, "until": until.as_secs_f64()}),
                );
            }
            Step::Rejected {
                pod,
                plugin,
                reason,
            } => {
                if reason.contains("timeout")
                    && let Some(g) = objects.get(&pod).and_then(pod_group_of)
                    && !timed_out.contains(&g)
                {
                    timed_out.push(g);
                }
                log.step(
                    now,
                    &pod,
                    &profile_of(&pod),
                    &format!("rejected by {plugin}: {reason}"),
                    json!({"result": "rejected", "plugin": plugin, "message": reason}),
                );
            }
            Step::Failed { pod, error } => {
                // It would back off and fail again: it leaves the run, reported.
                let message = error.to_string();
                log.step(
                    now,
                    &pod,
                    &profile_of(&pod),
                    &format!("error: {message} (withdrawn)"),
                    json!({"result": "error", "message": message}),
                );
                scheduler.apply(ClusterEvent::Delete(ObjectKey::pod(pod.clone())), now);
                set(&mut fates, &pod, Fate::Failed);
                outcome = Outcome::PodErrors;
            }
            Step::Idle { until } => {
                let c = scheduler.queue().counts();
                let busy = c.active + c.backoff + c.in_flight > 0
                    || scheduler.binding().next().is_some()
                    || scheduler.waiting().next().is_some();
                match until {
                    _ if !busy => stop = "nothing left but unschedulable and gated pods".into(),
                    Some(t) if t <= limit => now = now.max(t),
                    Some(t) => {
                        stop = format!(
                            "time limit {} reached (next step due at {})",
                            secs(limit),
                            secs(t)
                        )
                    }
                    None => stop = "only a cluster event could change anything".into(),
                }
            }
            other => {
                // Permit waits need Permit plugins, which this simulator does not add.
                stop = format!("unexpected step {other:?}");
            }
        }
    }

    let count = |want: fn(&Fate) -> bool| fates.iter().filter(|(_, f)| want(f)).count();
    let bound_n = count(|f| matches!(f, Fate::Bound(_)));
    let unschedulable_n = count(|f| matches!(f, Fate::Unschedulable(_)));
    let gated_n = count(|f| *f == Fate::Gated);
    let no_profile_n = count(|f| *f == Fate::NoProfile);
    let failed_n = count(|f| *f == Fate::Failed);
    let queued_n = count(|f| *f == Fate::Queued);
    let preempted_n = count(|f| *f == Fate::Preempted);
    let _ = writeln!(log.text, "\nstopped at {}: {stop}", secs(now));
    let victims_n = victims_all.len();
    let _ = writeln!(
        log.text,
        "summary: {bound_n} bound, {unschedulable_n} unschedulable, {gated_n} gated, \
         {no_profile_n} without a profile, {failed_n} failed, {queued_n} still queued{}; {}, {}",
        if preempted_n > 0 {
            format!(", {preempted_n} bound then preempted")
        } else {
            String::new()
        },
        plural(preemptions, "preemption"),
        plural(victims_n, "victim")
    );
    for (key, fate) in &fates {
        let what = match fate {
            Fate::Queued => "still queued".to_string(),
            Fate::Bound(node) => format!("bound to {node}"),
            Fate::Unschedulable(m) => format!("unschedulable: {m}"),
            Fate::Gated => "gated".to_string(),
            Fate::NoProfile => "no profile".to_string(),
            Fate::Failed => "failed".to_string(),
            Fate::Preempted => "bound, then preempted".to_string(),
        };
        let _ = writeln!(log.text, "    {key:<pod_width$}  {what}");
    }
    // Each PodGroup: placed (minMember bound), waiting at Permit, timed out, or pending.
    let mut group_docs = Vec::new();
    for (key, min_member) in &groups {
        let members: Vec<&str> = fates
            .iter()
            .filter(|(k, _)| objects.get(k).and_then(pod_group_of).as_ref() == Some(key))
            .map(|(k, _)| k.as_str())
            .collect();
        let bound = members
            .iter()
            .filter(|k| fates[index[**k]].1.is_bound())
            .count();
        let waiting = scheduler
            .waiting()
            .filter(|(k, _)| members.contains(k))
            .count();
        let state = if bound as i64 >= i64::from(*min_member) && bound > 0 {
            "placed"
        } else if waiting > 0 {
            "waiting"
        } else if timed_out.contains(key) {
            "timed out"
        } else {
            "not placed"
        };
        let _ = writeln!(
            log.text,
            "    group {key}: {state} ({bound} of {} members bound, {waiting} waiting, \
             minMember {min_member})",
            members.len()
        );
        group_docs.push(
            json!({"group": key, "state": state, "members": members.len(),
            "bound": bound, "waiting": waiting, "minMember": min_member}),
        );
    }
    for (victim, by, node) in &victims_all {
        let _ = writeln!(
            log.text,
            "    {victim:<pod_width$}  deleted: preempted by {by} on {node}"
        );
    }
    if args.json {
        let pods: Vec<Value> = fates
            .iter()
            .map(|(key, fate)| match fate {
                Fate::Bound(node) => json!({"pod": key, "fate": "bound", "node": node}),
                Fate::Unschedulable(m) => {
                    json!({"pod": key, "fate": "unschedulable", "message": m})
                }
                Fate::Queued => json!({"pod": key, "fate": "queued"}),
                Fate::Gated => json!({"pod": key, "fate": "gated"}),
                Fate::NoProfile => json!({"pod": key, "fate": "noProfile"}),
                Fate::Failed => json!({"pod": key, "fate": "failed"}),
                Fate::Preempted => json!({"pod": key, "fate": "preempted"}),
            })
            .collect();
        let doc = json!({
            "seed": args.seed,
            "steps": log.steps,
            "stop": stop,
            "time": now.as_secs_f64(),
            "summary": {
                "bound": bound_n, "unschedulable": unschedulable_n, "gated": gated_n,
                "noProfile": no_profile_n, "failed": failed_n, "queued": queued_n,
                "preemptions": preemptions, "victims": victims_n,
                "preemptedHere": preempted_n,
            },
            "victims": victims_all.iter().map(|(v, by, node)| json!({"pod": v, "preemptor": by, "node": node})).collect::<Vec<_>>(),
            "pods": pods,
            "groups": group_docs,
        });
        println!("{}", serde_json::to_string_pretty(&doc).unwrap_or_default());
    } else {
        print!("{}", log.text);
    }
    Ok(outcome)
}

/// kube's resourceclaim controller, as far as scheduling needs it: each pending pod's
/// `resourceClaimTemplateName` without a claim in `status.resourceClaimStatuses` gets one,
/// named `<pod>-<claim>` (kube adds a random suffix), with the template's spec, controlled by
/// the pod. A template that does not exist is left alone: the scheduler reports the claim as
/// not created yet. Returns how many claims were made.
fn claims_from_templates(cluster: &mut Cluster) -> usize {
    let dra = &mut cluster.dra;
    let mut made = 0;
    for pod in &mut cluster.pending {
        let ns = pod.metadata.namespace.clone();
        for entry in &pod.spec.resource_claims {
            let Some(template) = &entry.resource_claim_template_name else {
                continue;
            };
            let has_status = pod
                .status
                .resource_claim_statuses
                .iter()
                .any(|s| s.name == entry.name);
            let Some(t) = dra
                .resource_claim_templates
                .iter()
                .find(|t| t.metadata.namespace == ns && t.metadata.name == *template)
            else {
                continue;
            };
            if has_status {
                continue;
            }
            let name = format!("{}-{}", pod.metadata.name, entry.name);
            let mut claim = ResourceClaim {
                metadata: t.spec.metadata.clone(),
                spec: t.spec.spec.clone(),
                ..ResourceClaim::default()
            };
            claim.metadata.name.clone_from(&name);
            claim.metadata.namespace.clone_from(&ns);
            claim.metadata.uid = format!("claim-{ns}-{name}");
            claim.metadata.owner_references = vec![sched_core::model::OwnerReference {
                api_version: "v1".into(),
                kind: "Pod".into(),
                name: pod.metadata.name.clone(),
                uid: pod.metadata.uid.clone(),
                controller: Some(true),
            }];
            dra.resource_claims.push(claim);
            let mut status = sched_core::model::PodResourceClaimStatus::default();
            status.name.clone_from(&entry.name);
            status.resource_claim_name = Some(name);
            pod.status.resource_claim_statuses.push(status);
            made += 1;
        }
    }
    made
}

/// DynamicResources' Reserve and PreBind for a pod placed on `node` outside the engine: its
/// claims are allocated there and written into the snapshot (allocation and `reservedFor`).
/// Returns each claim as [`describe_claim`] prints it.
fn bind_claims(snapshot: &mut Snapshot, pod: &Pod, node: &str) -> Vec<String> {
    let Ok(written) = sched_core::plugins::dra::assume_claims(snapshot, pod, node) else {
        return Vec::new();
    };
    written
        .iter()
        .filter_map(|key| {
            let (ns, name) = key.split_once('/')?;
            snapshot.dra().claim(ns, name).map(|c| describe_claim(c))
        })
        .collect()
}

/// DynamicResources' PostFilter deallocated a claim: written as the API server would take it,
/// and reported back to the engine as the claim's update (which wakes the pod).
fn deallocate_claim(
    scheduler: &mut Scheduler,
    deallocate: Option<sched_core::plugins::dra::Deallocation>,
    now: Duration,
) {
    let Some(d) = deallocate else { return };
    let claim = scheduler
        .snapshot()
        .dra()
        .claim(&d.namespace, &d.name)
        .cloned();
    if let Some(claim) = claim.filter(|c| d.still_applies(c)) {
        let cleared = sched_core::plugins::dra::Deallocation::cleared(&claim);
        scheduler.apply(ClusterEvent::update(cleared), now);
    }
}

/// `name: pool/device, ...` of an allocated claim.
fn describe_claim(claim: &ResourceClaim) -> String {
    let devices: Vec<String> = claim
        .status
        .allocation
        .iter()
        .flat_map(|a| &a.devices.results)
        .map(|r| format!("{}/{}", r.pool, r.device))
        .collect();
    format!("{}: {}", claim.metadata.name, devices.join(", "))
}

fn main() -> ExitCode {
    match run() {
        Ok(Outcome::Answered) => ExitCode::SUCCESS,
        Ok(Outcome::PodErrors) => ExitCode::from(1),
        Err(e) => {
            eprintln!("simulate: {e}");
            ExitCode::from(2)
        }
    }
}
