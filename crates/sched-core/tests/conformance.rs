//! The legacy Policy path against kube-scheduler v1.20.2's own answers.
//!
//! `tests/data/conformance/kube-v1.20.2/` holds cases recorded from the real kube-scheduler
//! v1.20.2 (its README gives the format). Each case is replayed as kube's was recorded: the
//! pending pods are scheduled in order with the case's Policy, every node scored
//! (percentageOfNodesToScore 100), and after each pod the pod is placed on kube's `chosen` node,
//! so both sides stay in step. For every pod the feasible node set, each score plugin's
//! weighted score on every node, the totals and the set of nodes tied at the top must equal
//! kube's exactly, and when nothing fits each node's reasons must equal kube's as sets.
//!
//! kube reports scores per framework plugin (v1.20 runs a Policy as plugins); the legacy
//! priorities this crate runs are mapped to kube's plugin names by [`plugin_of`].

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use sched_core::model::{
    LabelSelector, Pod, Workload, WorkloadKind, load_node_list, load_pod_list,
};
use sched_core::policy::{FeatureGates, Policy};
use sched_core::profile::ScheduleError;
use sched_core::snapshot::{ImageCounts, Snapshot};
use serde_json::Value;

fn cases_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/conformance/kube-v1.20.2")
}

/// kube v1.20's score plugin for a legacy priority of this crate.
fn plugin_of(priority: &str) -> &str {
    match priority {
        "LeastRequestedPriority" => "NodeResourcesLeastAllocated",
        "MostRequestedPriority" => "NodeResourcesMostAllocated",
        "BalancedResourceAllocation" => "NodeResourcesBalancedAllocation",
        "SelectorSpreadPriority" => "SelectorSpread",
        "ServiceAntiAffinity" => "ServiceAffinity",
        "InterPodAffinityPriority" => "InterPodAffinity",
        "NodeAffinityPriority" => "NodeAffinity",
        "TaintTolerationPriority" => "TaintToleration",
        "ImageLocalityPriority" => "ImageLocality",
        "NodePreferAvoidPodsPriority" => "NodePreferAvoidPods",
        "RequestedToCapacityRatioPriority" => "RequestedToCapacityRatio",
        "ResourceLimitsPriority" => "NodeResourceLimits",
        "NodeLabelPriority" => "NodeLabel",
        "EvenPodsSpreadPriority" => "PodTopologySpread",
        other => other,
    }
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Services, ReplicaSets, ReplicationControllers and StatefulSets of `workloads.json`.
fn workloads(path: &Path) -> Vec<Workload> {
    if !path.exists() {
        return Vec::new();
    }
    let doc = read_json(path);
    let items = doc["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .map(|item| {
            let kind = match item["kind"].as_str().unwrap_or("") {
                "Service" => WorkloadKind::Service,
                "ReplicaSet" => WorkloadKind::ReplicaSet,
                "ReplicationController" => WorkloadKind::ReplicationController,
                "StatefulSet" => WorkloadKind::StatefulSet,
                other => panic!("{}: unexpected kind {other:?}", path.display()),
            };
            let selector = match kind {
                WorkloadKind::Service | WorkloadKind::ReplicationController => {
                    let mut s = LabelSelector::default();
                    if let Some(m) = item["spec"]["selector"].as_object() {
                        for (k, v) in m {
                            s.match_labels
                                .insert(k.clone(), v.as_str().unwrap_or("").to_string());
                        }
                    }
                    s
                }
                _ => serde_json::from_value(item["spec"]["selector"].clone()).unwrap_or_default(),
            };
            Workload {
                kind,
                namespace: item["metadata"]["namespace"]
                    .as_str()
                    .unwrap_or("default")
                    .to_string(),
                name: item["metadata"]["name"].as_str().unwrap_or("").to_string(),
                selector,
            }
        })
        .collect()
}

/// One difference between this crate and kube on one pod of one case.
fn replay(dir: &Path) -> Vec<String> {
    let name = dir
        .strip_prefix(cases_dir())
        .unwrap_or(dir)
        .display()
        .to_string();
    let read = |f: &str| {
        std::fs::read_to_string(dir.join(f)).unwrap_or_else(|e| panic!("{name}/{f}: {e}"))
    };
    let oracle = read_json(&dir.join("oracle.json"));
    let nodes = load_node_list(&read("nodes.json")).unwrap_or_else(|e| panic!("{name}: {e}"));
    let pods = load_pod_list(&read("pods.json")).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut policy =
        Policy::from_json(&read("policy.json")).unwrap_or_else(|e| panic!("{name}: {e}"));
    policy.percentage_of_nodes_to_score = Some(100);
    // The feature gates kube ran with (DefaultPodTopologySpread off unless the case says).
    let gates = FeatureGates::default().default_pod_topology_spread(
        oracle["meta"]["defaultPodTopologySpread"].as_bool() == Some(true),
    );
    let profile = policy
        .builder_with(gates)
        .unwrap_or_else(|e| panic!("{name}: {e}"))
        .threads(1)
        .seed(1)
        .build()
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut cache = profile.create_cache();
    let (pending, bound): (Vec<Pod>, Vec<Pod>) =
        pods.into_iter().partition(|p| p.spec.node_name.is_empty());
    let mut snapshot =
        Snapshot::from_objects(nodes, bound).unwrap_or_else(|e| panic!("{name}: {e}"));
    snapshot.set_workloads(workloads(&dir.join("workloads.json")));
    // Cases recorded with `--refresh-nodes=false`: kube's cache never updated the nodes after
    // adding them, so each node's image summary kept the counts of that moment.
    let case = dir.join("case.json");
    if case.exists()
        && read_json(&case)["oracleArgs"]
            .to_string()
            .contains("--refresh-nodes=false")
    {
        snapshot.set_image_counts(ImageCounts::AsOfNodeUpdate);
    }

    let mut diffs = Vec::new();
    let entries = oracle["pods"].as_array().cloned().unwrap_or_default();
    let by_key: BTreeMap<sched_core::model::PodKey, &Pod> =
        pending.iter().map(|p| (p.key(), p)).collect();
    for want in &entries {
        let key = want["pod"].as_str().unwrap_or_default().to_string();
        let Some(pod) = by_key.get(key.as_str()) else {
            diffs.push(format!("{name} {key}: not a pending pod of pods.json"));
            continue;
        };
        let nondeterministic = want.get("nondeterministic").is_some();
        let mut diff = |what: String| {
            if !nondeterministic {
                diffs.push(format!("{name} {key}: {what}"));
            }
        };
        let want_feasible: BTreeSet<String> = strings(&want["feasible"]);
        match profile.schedule(&mut cache, pod, &snapshot) {
            Ok(_) => {
                let table = profile.last_scores(&cache);
                let names = table.priorities().to_vec();
                let mut feasible = BTreeSet::new();
                let mut totals: BTreeMap<String, i64> = BTreeMap::new();
                let mut plugins: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
                for k in 0..table.len() {
                    let (idx, total, per) = table.row(k);
                    let node = snapshot.node_infos()[idx].name().to_string();
                    feasible.insert(node.clone());
                    totals.insert(node.clone(), total);
                    let mut m = BTreeMap::new();
                    for ((prio, w), s) in names.iter().zip(&per) {
                        *m.entry(plugin_of(prio).to_string()).or_insert(0) += s * w;
                    }
                    plugins.insert(node, m);
                }
                if feasible != want_feasible {
                    diff(format!("feasible {feasible:?}, kube {want_feasible:?}"));
                } else if want["scored"].as_bool() == Some(true) {
                    for (node, w) in want["scores"].as_object().into_iter().flatten() {
                        let want_plugins: BTreeMap<String, i64> = w["plugins"]
                            .as_object()
                            .into_iter()
                            .flatten()
                            .map(|(p, s)| (p.clone(), s.as_i64().unwrap_or(i64::MIN)))
                            .collect();
                        let got = plugins.get(node).cloned().unwrap_or_default();
                        if got != want_plugins {
                            diff(format!("{node}: scores {got:?}, kube {want_plugins:?}"));
                        }
                        if totals.get(node).copied() != w["total"].as_i64() {
                            diff(format!(
                                "{node}: total {:?}, kube {}",
                                totals.get(node),
                                w["total"]
                            ));
                        }
                    }
                    let max = totals.values().copied().max().unwrap_or(0);
                    let tied: BTreeSet<String> = totals
                        .iter()
                        .filter(|&(_, &t)| t == max)
                        .map(|(n, _)| n.clone())
                        .collect();
                    let want_tied = strings(&want["tied"]);
                    if tied != want_tied {
                        diff(format!("tied {tied:?}, kube {want_tied:?}"));
                    }
                }
            }
            Err(ScheduleError::Unschedulable(fit)) => {
                if !want_feasible.is_empty() {
                    diff(format!(
                        "unschedulable ({fit}), kube found {want_feasible:?}"
                    ));
                } else {
                    let got: BTreeMap<String, BTreeSet<String>> = fit
                        .failures()
                        .iter()
                        .map(|f| (f.node.clone(), f.messages.iter().cloned().collect()))
                        .collect();
                    let want_reasons: BTreeMap<String, BTreeSet<String>> = want["reasons"]
                        .as_object()
                        .into_iter()
                        .flatten()
                        .map(|(n, r)| (n.clone(), strings(r)))
                        .collect();
                    if got != want_reasons {
                        diff(format!("reasons {got:?}, kube {want_reasons:?}"));
                    }
                }
            }
            Err(e) => diff(format!("error {e}")),
        }
        // Keep in step with kube: the pod goes where kube put it.
        if let Some(chosen) = want["chosen"].as_str().filter(|c| !c.is_empty()) {
            let mut placed = (*pod).clone();
            placed.spec.node_name = chosen.to_string();
            if let Err(e) = snapshot.assume(placed, chosen) {
                diffs.push(format!("{name} {key}: assume on {chosen}: {e}"));
            }
        }
    }
    diffs
}

fn strings(v: &Value) -> BTreeSet<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

fn case_dirs() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for group in ["repro", "generated"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(cases_dir().join(group))
            .unwrap_or_else(|e| panic!("{group}: {e}"))
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.join("oracle.json").exists())
            .collect();
        found.sort();
        dirs.extend(found);
    }
    dirs
}

#[test]
fn every_case_matches_kube_v1_20_2() {
    let dirs = case_dirs();
    assert_eq!(dirs.len(), 33, "the 33 recorded cases");
    let mut failed = Vec::new();
    let mut pods = 0;
    for dir in &dirs {
        pods += read_json(&dir.join("oracle.json"))["pods"]
            .as_array()
            .map_or(0, Vec::len);
        let diffs = replay(dir);
        if !diffs.is_empty() {
            failed.push((dir.clone(), diffs));
        }
    }
    let mut report = String::new();
    for (dir, diffs) in &failed {
        report += &format!("\n{} ({} differences)\n", dir.display(), diffs.len());
        for d in diffs.iter().take(6) {
            report += &format!("  {d}\n");
        }
    }
    assert!(
        failed.is_empty(),
        "{} of {} cases ({pods} pods) differ from kube v1.20.2:{report}",
        failed.len(),
        dirs.len()
    );
}
