//! What the differential suite's generator covers: over the CI seed range every field it
//! promises appears (in the objects as written, so both schedulers read it).

use std::collections::BTreeMap;

use kube_reference::generator::{SECOND_PROFILE, generate, is_large};
use serde_json::Value;

fn has(v: &Value, path: &[&str]) -> bool {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    match cur {
        Value::Null => false,
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    }
}

#[test]
fn the_ci_seeds_cover_every_promised_field() {
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut count = |what: &'static str, yes: bool| {
        if yes {
            *seen.entry(what).or_default() += 1;
        }
    };
    for seed in 0..300 {
        let case = generate(seed);
        count("config", case.config.is_some());
        count("more than 100 nodes", case.nodes.len() > 100);
        count(
            "percentageOfNodesToScore",
            case.config
                .as_deref()
                .is_some_and(|c| c.contains("percentageOfNodesToScore")),
        );
        count(
            "second profile",
            case.config
                .as_deref()
                .is_some_and(|c| c.contains(SECOND_PROFILE)),
        );
        for node in &case.nodes {
            count("taints", has(node, &["spec", "taints"]));
            count(
                "zone label",
                has(node, &["metadata", "labels", "topology.kubernetes.io/zone"]),
            );
            count("images", has(node, &["status", "images"]));
            count(
                "extended resource",
                has(node, &["status", "allocatable", "nvidia.com/gpu"]),
            );
            count("unschedulable node", has(node, &["spec", "unschedulable"]));
        }
        for pod in &case.pods {
            let spec = &pod["spec"];
            let text = spec.to_string();
            count("init container", has(spec, &["initContainers"]));
            count(
                "sidecar",
                text.contains("\"restartPolicy\":\"Always\"") && has(spec, &["initContainers"]),
            );
            count("overhead", has(spec, &["overhead"]));
            count("pod-level resources", has(spec, &["resources"]));
            count(
                "resized in place",
                has(pod, &["status", "containerStatuses"])
                    && pod["status"].to_string().contains("allocatedResources"),
            );
            count("node selector", has(spec, &["nodeSelector"]));
            count("node affinity", has(spec, &["affinity", "nodeAffinity"]));
            count("matchFields", text.contains("matchFields"));
            count(
                "toleration beyond the defaults",
                spec["tolerations"].as_array().is_some_and(|t| t.len() > 2),
            );
            count("pod affinity", has(spec, &["affinity", "podAffinity"]));
            count(
                "pod anti-affinity",
                has(spec, &["affinity", "podAntiAffinity"]),
            );
            count("namespaceSelector", text.contains("namespaceSelector"));
            count("affinity namespaces", text.contains("\"namespaces\""));
            count("matchLabelKeys", text.contains("matchLabelKeys"));
            count("topology spread", has(spec, &["topologySpreadConstraints"]));
            count("minDomains", text.contains("minDomains"));
            count("nodeAffinityPolicy", text.contains("nodeAffinityPolicy"));
            count("nodeTaintsPolicy", text.contains("nodeTaintsPolicy"));
            count("ScheduleAnyway", text.contains("ScheduleAnyway"));
            count("host port", text.contains("hostPort"));
            count("scheduling gate", has(spec, &["schedulingGates"]));
            count("priority", spec["priority"].as_i64().is_some_and(|p| p > 0));
            count(
                "preemptionPolicy Never",
                text.contains("\"preemptionPolicy\":\"Never\""),
            );
            count("claim", text.contains("persistentVolumeClaim"));
            count("generic ephemeral volume", text.contains("\"ephemeral\""));
            count("in-tree EBS volume", text.contains("awsElasticBlockStore"));
            count(
                "owned by a workload",
                has(pod, &["metadata", "ownerReferences"]),
            );
            count(
                "other scheduler",
                spec["schedulerName"] != "default-scheduler",
            );
            count("nominated pod", has(pod, &["status", "nominatedNodeName"]));
            count(
                "victim terminating by preemption",
                has(pod, &["metadata", "deletionTimestamp"])
                    && pod.to_string().contains("PreemptionByScheduler"),
            );
            count(
                "negative priority",
                spec["priority"].as_i64().is_some_and(|p| p < 0),
            );
        }
        for o in &case.objects {
            count(
                match o["kind"].as_str().unwrap_or("") {
                    "Namespace" => "Namespace",
                    "Service" => "Service",
                    "ReplicaSet" => "ReplicaSet",
                    "StatefulSet" => "StatefulSet",
                    "PodDisruptionBudget" => "PodDisruptionBudget",
                    "PersistentVolume" => "PersistentVolume",
                    "PersistentVolumeClaim" => "PersistentVolumeClaim",
                    "StorageClass" => "StorageClass",
                    "CSINode" => "CSINode",
                    "CSIDriver" => "CSIDriver",
                    "CSIStorageCapacity" => "CSIStorageCapacity",
                    "DeviceClass" => "DeviceClass",
                    "ResourceSlice" => "ResourceSlice",
                    "ResourceClaim" => "ResourceClaim",
                    "ResourceClaimTemplate" => "ResourceClaimTemplate",
                    _ => "other kind",
                },
                true,
            );
            count("allowedTopologies", has(o, &["allowedTopologies"]));
            let text = o.to_string();
            count(
                "CEL capacity selector",
                text.contains(".compareTo(quantity("),
            );
            count(
                "CEL semver selector",
                text.contains("isGreaterThan(semver("),
            );
            count(
                "slice on a node",
                has(o, &["spec", "nodeName"]) && o["kind"] == "ResourceSlice",
            );
            count("slice with nodeSelector", has(o, &["spec", "nodeSelector"]));
            count("slice on all nodes", o["spec"]["allNodes"] == true);
            count(
                "pool of two slices",
                o["spec"]["pool"]["resourceSliceCount"] == 2,
            );
            count(
                "stale pool generation",
                o["spec"]["pool"]["generation"] == 2,
            );
            count("version attribute", text.contains("\"version\""));
            count("bool attribute", text.contains("\"bool\""));
            count(
                "allocationMode All",
                text.contains("\"allocationMode\":\"All\""),
            );
            count(
                "ExactCount above 1",
                text.contains("\"allocationMode\":\"ExactCount\",\"count\":3")
                    || text.contains("\"count\":4"),
            );
            count("firstAvailable", text.contains("firstAvailable"));
            count("matchAttribute", text.contains("matchAttribute"));
            count(
                "claim allocated",
                has(o, &["status", "allocation", "nodeSelector"]),
            );
            count(
                "claim reserved for two pods",
                o["status"]["reservedFor"]
                    .as_array()
                    .is_some_and(|r| r.len() == 2),
            );
            count(
                "allocated claim held by no pod",
                has(o, &["status", "allocation"]) && !has(o, &["status", "reservedFor"]),
            );
            count(
                "claim made from a template",
                o["kind"] == "ResourceClaim"
                    && text.contains("resource.kubernetes.io/pod-claim-name"),
            );
        }
        // Pending pods: sharing a claim, and a claim that does not exist or was not made yet.
        let claims: std::collections::BTreeSet<String> = case
            .objects
            .iter()
            .filter(|o| o["kind"] == "ResourceClaim")
            .map(|o| format!("{}/{}", o["metadata"]["namespace"], o["metadata"]["name"]))
            .collect();
        let mut users: BTreeMap<String, usize> = BTreeMap::new();
        for pod in &case.pods {
            for entry in pod["spec"]["resourceClaims"]
                .as_array()
                .into_iter()
                .flatten()
            {
                let ns = &pod["metadata"]["namespace"];
                if let Some(name) = entry["resourceClaimName"].as_str() {
                    let key = format!("{ns}/\"{name}\"");
                    count("pod claim missing", !claims.contains(&key));
                    *users.entry(key).or_default() += 1;
                } else {
                    let made = pod["status"]["resourceClaimStatuses"]
                        .as_array()
                        .is_some_and(|s| s.iter().any(|s| s["name"] == entry["name"]));
                    count("template claim made", made);
                    count("template claim not made yet", !made);
                }
            }
        }
        count("claim used by several pods", users.values().any(|&n| n > 1));
    }
    let promised = [
        "config",
        "second profile",
        "taints",
        "zone label",
        "images",
        "extended resource",
        "unschedulable node",
        "init container",
        "sidecar",
        "overhead",
        "pod-level resources",
        "node selector",
        "node affinity",
        "matchFields",
        "toleration beyond the defaults",
        "pod affinity",
        "pod anti-affinity",
        "namespaceSelector",
        "affinity namespaces",
        "matchLabelKeys",
        "topology spread",
        "minDomains",
        "nodeAffinityPolicy",
        "nodeTaintsPolicy",
        "ScheduleAnyway",
        "host port",
        "scheduling gate",
        "priority",
        "preemptionPolicy Never",
        "claim",
        "generic ephemeral volume",
        "in-tree EBS volume",
        "owned by a workload",
        "other scheduler",
        "nominated pod",
        "victim terminating by preemption",
        "negative priority",
        "Namespace",
        "Service",
        "ReplicaSet",
        "StatefulSet",
        "PodDisruptionBudget",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "StorageClass",
        "CSINode",
        "CSIDriver",
        "CSIStorageCapacity",
        "allowedTopologies",
        "more than 100 nodes",
        "percentageOfNodesToScore",
        "resized in place",
        "DeviceClass",
        "ResourceSlice",
        "ResourceClaim",
        "ResourceClaimTemplate",
        "CEL capacity selector",
        "CEL semver selector",
        "slice on a node",
        "slice with nodeSelector",
        "slice on all nodes",
        "pool of two slices",
        "stale pool generation",
        "version attribute",
        "bool attribute",
        "allocationMode All",
        "ExactCount above 1",
        "firstAvailable",
        "matchAttribute",
        "claim allocated",
        "claim reserved for two pods",
        "allocated claim held by no pod",
        "claim made from a template",
        "pod claim missing",
        "template claim made",
        "template claim not made yet",
        "claim used by several pods",
    ];
    let missing: Vec<&str> = promised
        .iter()
        .copied()
        .filter(|p| !seen.contains_key(p))
        .collect();
    assert!(
        missing.is_empty(),
        "never generated in seeds 0..300: {missing:?}\nseen: {seen:?}"
    );
    assert!(!seen.contains_key("other kind"), "{seen:?}");
}

/// The large cases: every 12th seed, more than 100 nodes (kube's minFeasibleNodesToFind), a
/// configuration setting the percentage of nodes to score, several pending pods in a row that
/// may not preempt; the other seeds stay at 60 nodes at most.
#[test]
fn large_cases_search_below_every_node() {
    for seed in 0..120 {
        let case = generate(seed);
        if !is_large(seed) {
            assert!(case.nodes.len() <= 60, "seed {seed}");
            continue;
        }
        assert!((101..=400).contains(&case.nodes.len()), "seed {seed}");
        let config = case.config.as_deref().expect("a configuration");
        assert!(config.contains("percentageOfNodesToScore: "), "seed {seed}");
        assert!(case.pending() >= 8, "seed {seed}");
        for pod in case.pods.iter().filter(|p| p["spec"]["nodeName"].is_null()) {
            assert_eq!(pod["spec"]["preemptionPolicy"], "Never", "seed {seed}");
        }
    }
}
