//! What-if simulator: where would kube-scheduler put these pending pods?
//!
//! ```sh
//! cargo run --release --example simulate -- \
//!     --cluster examples/data/cluster.json --pods examples/data/pods.json \
//!     [--objects MIXED.json]... \
//!     [--policy examples/data/policy-default.json | --config examples/data/scheduler-config.yaml] \
//!     [--format table|json] [--seed 1] [--top 3]
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
//! default policy when none), or with the profiles of a `KubeSchedulerConfiguration`
//! (`--config`, kube-scheduler v1.34's plugins): each pod then uses the profile its
//! `spec.schedulerName` names, and a name no profile has is reported in the pod's place,
//! naming the profiles there are. For each pod the output is the chosen node with the top nodes'
//! scores per priority, or why it fits nowhere: every node's reasons and kube's summary line.
//! A pod that cannot be scheduled for another reason is reported in its place and the run goes
//! on. Runs are deterministic for a given `--seed`. Exit status: 0, 1 when a pod failed with an
//! error, 2 for bad arguments or files.

use std::fmt::Write as _;
use std::process::ExitCode;

use sched_core::config::{DEFAULT_SCHEDULER_NAME, Registry, SchedulerConfiguration};
use sched_core::framework::KubeVersion;
use sched_core::model::{ClusterObjects, Role, load_file};
use sched_core::plugins::volume;
use sched_core::policy::Policy;
use sched_core::profile::{Cache, Profile, ScheduleError};
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
}

fn usage() -> String {
    "usage: simulate [--cluster NODES.json] [--pods PODS.json] [--objects MIXED.json]... \
     [--policy POLICY.json | --config KUBE_SCHEDULER_CONFIGURATION.yaml] \
     [--format table|json] [--seed N] [--top K]"
        .into()
}

fn parse_args() -> Result<Args, String> {
    let mut it = std::env::args().skip(1);
    let (mut cluster, mut pods, mut policy, mut config) = (None, None, None, None);
    let mut objects = Vec::new();
    let (mut json, mut seed, mut top) = (false, 1u64, 3usize);
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
    Ok(Args {
        cluster,
        pods,
        objects,
        policy,
        config,
        json,
        seed,
        top,
    })
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

fn run() -> Result<Outcome, String> {
    let args = parse_args()?;
    let cluster = load(&args)?.into_cluster().map_err(|e| e.to_string())?;
    for line in cluster.report.to_string().lines() {
        eprintln!("simulate: {line}");
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
        let policy = match &args.policy {
            Some(p) => {
                let bytes = std::fs::read(p).map_err(|e| format!("{p}: {e}"))?;
                Policy::from_slice(&bytes).map_err(|e| format!("{p}: {e}"))?
            }
            None => Policy::kube_default(),
        };
        let profile = policy
            .builder()
            .and_then(|b| Ok(b.threads(1).seed(args.seed).build()?))
            .map_err(|e| format!("policy: {e}"))?;
        let cache = profile.create_cache();
        profiles.push((String::new(), profile, cache));
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
                if name.is_empty() {
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
        let Some((_, profile, cache)) = profiles
            .iter_mut()
            .find(|(name, _, _)| legacy || name == wanted)
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
                // Reserve the PersistentVolumes VolumeBinding matched there, as kube's
                // AssumePodVolumes does, so the next pods do not count on them.
                let version = if legacy {
                    KubeVersion::V1_20
                } else {
                    KubeVersion::V1_34
                };
                let _ = volume::assume_volumes(&mut snapshot, pod, &r.node, version);
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
                }));
            }
            Err(ScheduleError::Unschedulable(fit)) => {
                let _ = writeln!(text, "{key} -> unschedulable: {fit}");
                let mut per_node = Vec::new();
                for f in &fit.failures {
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
