//! Policy documents: kube's own examples parse and resolve as kube would, every kind of
//! malformed document gets an error naming the offending field and value.

mod common;
use common::{BuildWorker, Worker};
use sched_core::model::{Node, Pod, parse_node, parse_pod};
use sched_core::policy::{
    DEFAULT_PREDICATES, DEFAULT_PRIORITIES, FeatureGates, KNOWN_PREDICATES, KNOWN_PRIORITIES,
    MANDATORY_PREDICATES, Policy, PolicyError, PredicateKind, PredicatePolicy, PredicateSpec,
    PriorityArgs, PriorityKind, PriorityPolicy,
};
use sched_core::profile::{Profile, ScheduleError};
use sched_core::snapshot::Snapshot;

/// The gates these list tests read a Policy under: `DefaultPodTopologySpread` off, so the
/// priorities keep the names the Policy gives them (the gate's merge has its own test).
fn gates_off() -> FeatureGates {
    FeatureGates::default().default_pod_topology_spread(false)
}

fn predicate_names(p: &Policy) -> Vec<String> {
    p.plan_with(gates_off())
        .unwrap()
        .predicates()
        .iter()
        .map(|s| s.name().to_string())
        .collect()
}

fn priority_weights(p: &Policy) -> Vec<(String, i64)> {
    p.plan_with(gates_off())
        .unwrap()
        .priorities()
        .iter()
        .map(|s| (s.name.clone(), s.weight))
        .collect()
}

/// Parses, expecting an error; returns it with its message.
fn reject(json: &str) -> (PolicyError, String) {
    match Policy::from_json(json) {
        Ok(p) => panic!("accepted: {p:?}"),
        Err(e) => {
            let msg = e.to_string();
            (e, msg)
        }
    }
}

fn assert_mentions(msg: &str, parts: &[&str]) {
    for part in parts {
        assert!(msg.contains(part), "{msg:?} does not mention {part:?}");
    }
}

/// kubernetes/examples/scheduler-policy-config.json.
const KUBE_EXAMPLE: &str = r#"{
"kind" : "Policy",
"apiVersion" : "v1",
"predicates" : [
	{"name" : "PodFitsPorts"},
	{"name" : "PodFitsResources"},
	{"name" : "NoDiskConflict"},
	{"name" : "MatchNodeSelector"},
	{"name" : "HostName"}
	],
"priorities" : [
	{"name" : "LeastRequestedPriority", "weight" : 1},
	{"name" : "BalancedResourceAllocation", "weight" : 1},
	{"name" : "ServiceSpreadingPriority", "weight" : 1},
	{"name" : "EqualPriority", "weight" : 1}
	]
}
"#;

#[test]
fn kube_example_policy_resolves_in_kube_order_with_mandatory_predicates() {
    let p = Policy::from_json(KUBE_EXAMPLE).unwrap();
    assert_eq!(
        predicate_names(&p),
        [
            "CheckNodeUnschedulable",
            "HostName",
            "PodFitsHostPorts",
            "MatchNodeSelector",
            "PodFitsResources",
            "NoDiskConflict",
            "PodToleratesNodeTaints",
        ]
    );
    // kube v1.20 (pkg/scheduler/factory.go, checked by factory_test.go TestCreateFromConfig and
    // the v1 compatibility tests): EqualPriority is skipped and ServiceSpreadingPriority runs as
    // SelectorSpread.
    assert_eq!(
        priority_weights(&p),
        [
            ("LeastRequestedPriority".to_string(), 1),
            ("BalancedResourceAllocation".to_string(), 1),
            ("SelectorSpreadPriority".to_string(), 1),
        ]
    );
    let plan = p.plan().unwrap();
    assert!(!plan.always_check_all_predicates());
    assert_eq!(plan.hard_pod_affinity_symmetric_weight(), 1);
    assert_eq!(plan.percentage_of_nodes_to_score(), 0);
    assert_eq!(plan.max_total_score(), 300);
}

/// kube's scheduler factory test "policy with arguments", verbatim.
const KUBE_ARGUMENTS_EXAMPLE: &str = r#"{
    "kind" : "Policy",
    "apiVersion" : "v1",
    "predicates" : [
        {"name" : "TestZoneAffinity", "argument" : {"serviceAffinity" : {"labels" : ["zone"]}}},
        {"name" : "TestZoneAffinity", "argument" : {"serviceAffinity" : {"labels" : ["foo"]}}},
        {"name" : "TestRequireZone", "argument" : {"labelsPresence" : {"labels" : ["zone"], "presence" : true}}},
        {"name" : "TestNoFooLabel", "argument" : {"labelsPresence" : {"labels" : ["foo"], "presence" : false}}}
    ],
    "priorities" : [
        {"name" : "RackSpread", "weight" : 3, "argument" : {"serviceAntiAffinity" : {"label" : "rack"}}},
        {"name" : "ZoneSpread", "weight" : 3, "argument" : {"serviceAntiAffinity" : {"label" : "zone"}}},
        {
            "name": "RequestedToCapacityRatioPriority",
            "weight": 2,
            "argument": {
                "requestedToCapacityRatioArguments": {
                    "shape": [
                        {"utilization": 0,  "score": 0},
                        {"utilization": 50, "score": 7}
                    ]
                }
            }
        },
        {"name" : "LabelPreference1", "weight" : 3, "argument" : {"labelPreference" : {"label" : "l1", "presence": true}}},
        {"name" : "LabelPreference2", "weight" : 3, "argument" : {"labelPreference" : {"label" : "l2", "presence": false}}},
        {"name" : "NodeAffinityPriority", "weight" : 2},
        {"name" : "InterPodAffinityPriority", "weight" : 1}
    ]
}"#;

/// kube's example without its two `serviceAffinity` predicates (sched-core has no
/// ServiceAffinity filter).
fn kube_arguments_example_supported() -> String {
    let mut doc: serde_json::Value = serde_json::from_str(KUBE_ARGUMENTS_EXAMPLE).unwrap();
    let preds = doc["predicates"].as_array_mut().unwrap();
    preds.retain(|p| p["argument"].get("serviceAffinity").is_none());
    assert_eq!(preds.len(), 2);
    doc.to_string()
}

#[test]
fn kube_policy_with_arguments_merges_its_service_affinity_entries() {
    // kube v1.20 adds every serviceAffinity entry's labels to one ServiceAffinity filter,
    // whatever the entries' names.
    let p = Policy::from_json(KUBE_ARGUMENTS_EXAMPLE).unwrap();
    let plan = p.plan().unwrap();
    let affinity: Vec<&PredicateSpec> = plan
        .predicates()
        .iter()
        .filter(|s| s.kind() == PredicateKind::CheckServiceAffinity)
        .collect();
    assert_eq!(affinity.len(), 1, "{affinity:?}");
    assert!(
        matches!(affinity[0], PredicateSpec::ServiceAffinity { name, labels } if name == "TestZoneAffinity" && labels == &["zone", "foo"]),
        "{affinity:?}"
    );
    assert!(p.compile().is_ok());
    let bare = Policy::from_json(r#"{"predicates": [{"name": "CheckServiceAffinity"}]}"#)
        .unwrap()
        .plan()
        .unwrap();
    assert!(
        bare.predicates().iter().any(
            |s| matches!(s, PredicateSpec::ServiceAffinity { labels, .. } if labels.is_empty())
        )
    );
    let (_, msg) = reject(
        r#"{"predicates": [{"name": "Zones", "argument": {"serviceAffinity": {"labels": []}}}]}"#,
    );
    assert_mentions(&msg, &["serviceAffinity.labels", "at least one label"]);
}

#[test]
fn kube_policy_with_arguments_resolves_every_custom_kind() {
    let p = Policy::from_json(&kube_arguments_example_supported()).unwrap();
    let plan = p.plan().unwrap();
    assert_eq!(
        plan.predicates(),
        [
            PredicateSpec::Builtin(PredicateKind::CheckNodeUnschedulable),
            PredicateSpec::Builtin(PredicateKind::PodToleratesNodeTaints),
            PredicateSpec::LabelsPresence {
                name: "TestRequireZone".into(),
                labels: vec!["zone".into()],
                presence: true
            },
            PredicateSpec::LabelsPresence {
                name: "TestNoFooLabel".into(),
                labels: vec!["foo".into()],
                presence: false
            },
        ]
    );
    let pr = plan.priorities();
    assert_eq!(pr.len(), 7);
    assert_eq!(pr[0].kind, PriorityKind::ServiceAntiAffinity);
    assert_eq!(
        pr[1].argument,
        PriorityArgs::ServiceAntiAffinity {
            label: "zone".into()
        }
    );
    assert_eq!(pr[2].kind, PriorityKind::RequestedToCapacityRatioPriority);
    let PriorityArgs::RequestedToCapacityRatio(r) = &pr[2].argument else {
        panic!("{:?}", pr[2].argument)
    };
    assert_eq!(r.shape, [(0, 0), (50, 7)]);
    assert_eq!(r.scaled_shape(), [(0, 0), (50, 70)]);
    assert_eq!(
        r.resources,
        [("cpu".to_string(), 1), ("memory".to_string(), 1)]
    );
    assert_eq!(pr[3].kind, PriorityKind::NodeLabelPriority);
    assert_eq!(
        pr[4].argument,
        PriorityArgs::LabelPreference {
            label: "l2".into(),
            presence: false
        }
    );
    assert_eq!(plan.max_total_score(), (3 + 3 + 2 + 3 + 3 + 2 + 1) * 100);
}

/// Every built-in name, every argument member and every top-level field at once.
const EVERYTHING: &str = r#"{
    "kind": "Policy",
    "apiVersion": "v1",
    "predicates": [
        {"name": "MatchInterPodAffinity"},
        {"name": "CheckNodeCondition"},
        {"name": "CheckNodeUnschedulable"},
        {"name": "GeneralPredicates"},
        {"name": "HostName"},
        {"name": "PodFitsPorts"},
        {"name": "MatchNodeSelector"},
        {"name": "PodFitsResources"},
        {"name": "NoDiskConflict"},
        {"name": "PodToleratesNodeTaints"},
        {"name": "CheckNodeLabelPresence", "argument": {"labelsPresence": {"labels": ["ssd"], "presence": true}}},
        {"name": "NoGpu", "argument": {"labelsPresence": {"labels": ["gpu"]}}},
        {"name": "CheckServiceAffinity", "argument": {"serviceAffinity": {"labels": ["zone"]}}},
        {"name": "NoVolumeZoneConflict"},
        {"name": "MaxEBSVolumeCount"},
        {"name": "MaxGCEPDVolumeCount"},
        {"name": "MaxAzureDiskVolumeCount"},
        {"name": "MaxCinderVolumeCount"},
        {"name": "MaxCSIVolumeCountPred"},
        {"name": "CheckVolumeBinding"},
        {"name": "CheckNodeMemoryPressure"},
        {"name": "CheckNodePIDPressure"},
        {"name": "CheckNodeDiskPressure"},
        {"name": "EvenPodsSpread"}
    ],
    "priorities": [
        {"name": "LeastRequestedPriority", "weight": 1},
        {"name": "MostRequestedPriority", "weight": 2},
        {"name": "BalancedResourceAllocation", "weight": 3},
        {"name": "SelectorSpreadPriority", "weight": 4},
        {"name": "ServiceSpreadingPriority", "weight": 5},
        {"name": "InterPodAffinityPriority", "weight": 6},
        {"name": "NodeAffinityPriority", "weight": 7},
        {"name": "TaintTolerationPriority", "weight": 8},
        {"name": "ImageLocalityPriority", "weight": 9},
        {"name": "NodePreferAvoidPodsPriority", "weight": 10000},
        {"name": "RequestedToCapacityRatioPriority", "weight": 2, "argument": {"requestedToCapacityRatioArguments": {
            "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}],
            "resources": [{"name": "cpu", "weight": 2}, {"name": "nvidia.com/gpu"}]}}},
        {"name": "ResourceLimitsPriority", "weight": 1},
        {"name": "NodeLabelPriority", "weight": 2, "argument": {"labelPreference": {"label": "ssd", "presence": true}}},
        {"name": "PreferNoSpot", "weight": 2, "argument": {"labelPreference": {"label": "spot"}}},
        {"name": "ServiceAntiAffinity", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "zone"}}},
        {"name": "EqualPriority", "weight": 1},
        {"name": "EvenPodsSpreadPriority", "weight": 2}
    ],
    "extenders": [],
    "hardPodAffinitySymmetricWeight": 10,
    "alwaysCheckAllPredicates": true,
    "percentageOfNodesToScore": 50
}"#;

#[test]
fn a_policy_using_every_name_and_argument() {
    let p = Policy::from_json(EVERYTHING).unwrap();
    let plan = p.plan_with(gates_off()).unwrap();
    let kinds: Vec<PredicateKind> = plan.predicates().iter().map(|s| s.kind()).collect();
    let mut sorted = kinds.clone();
    sorted.sort();
    assert_eq!(kinds, sorted, "predicates run in kube's order");
    for k in PredicateKind::ALL {
        assert!(kinds.contains(k), "{k:?} missing");
    }
    assert_eq!(plan.predicates().len(), PredicateKind::ALL.len() + 1);
    for k in PriorityKind::ALL {
        // kube v1.20 skips EqualPriority and runs ServiceSpreadingPriority as
        // SelectorSpreadPriority.
        if matches!(
            k,
            PriorityKind::EqualPriority | PriorityKind::ServiceSpreadingPriority
        ) {
            continue;
        }
        assert!(
            plan.priorities().iter().any(|s| s.kind == *k),
            "{k:?} missing"
        );
    }
    let Some(PriorityArgs::RequestedToCapacityRatio(r)) = plan
        .priorities()
        .iter()
        .map(|p| &p.argument)
        .find(|a| matches!(a, PriorityArgs::RequestedToCapacityRatio(_)))
    else {
        panic!()
    };
    assert_eq!(r.scaled_shape(), [(0, 100), (100, 0)]);
    assert_eq!(
        r.resources,
        [("cpu".to_string(), 2), ("nvidia.com/gpu".to_string(), 1)]
    );
    assert!(plan.always_check_all_predicates());
    assert_eq!(plan.hard_pod_affinity_symmetric_weight(), 10);
    assert_eq!(plan.percentage_of_nodes_to_score(), 50);
}

#[test]
fn omitted_lists_mean_kube_defaults() {
    let p = Policy::from_json(r#"{"kind": "Policy", "apiVersion": "v1"}"#).unwrap();
    let plan = p.plan_with(gates_off()).unwrap();
    let kinds: Vec<PredicateKind> = plan.predicates().iter().map(|s| s.kind()).collect();
    assert_eq!(kinds, DEFAULT_PREDICATES);
    let prios: Vec<(PriorityKind, i64)> = plan
        .priorities()
        .iter()
        .map(|s| (s.kind, s.weight))
        .collect();
    assert_eq!(prios, DEFAULT_PRIORITIES);
    // An entirely empty document is the same.
    assert_eq!(
        Policy::from_json("{}")
            .unwrap()
            .plan_with(gates_off())
            .unwrap(),
        plan
    );
}

#[test]
fn null_lists_mean_kube_defaults_too() {
    // Go decodes `null` into a nil slice, which kube treats as omitted.
    let p = Policy::from_json(r#"{"predicates": null, "priorities": null}"#).unwrap();
    assert_eq!(p.plan().unwrap(), Policy::default().plan().unwrap());
}

#[test]
fn empty_predicate_list_means_only_the_mandatory_ones() {
    let p = Policy::from_json(r#"{"predicates": [], "priorities": []}"#).unwrap();
    let plan = p.plan().unwrap();
    let kinds: Vec<PredicateKind> = plan.predicates().iter().map(|s| s.kind()).collect();
    assert_eq!(kinds, MANDATORY_PREDICATES);
    assert!(plan.priorities().is_empty());
    assert_eq!(plan.max_total_score(), 0);
}

#[test]
fn mandatory_predicates_are_not_added_twice() {
    let p = Policy::from_json(
        r#"{"predicates": [{"name": "PodToleratesNodeTaints"}, {"name": "CheckNodeUnschedulable"}]}"#,
    )
    .unwrap();
    assert_eq!(
        predicate_names(&p),
        ["CheckNodeUnschedulable", "PodToleratesNodeTaints"]
    );
}

#[test]
fn kube_default_written_out_resolves_like_omitted_lists() {
    let explicit = Policy::kube_default();
    assert_eq!(explicit.plan().unwrap(), Policy::default().plan().unwrap());
    let round_trip = Policy::from_json(&explicit.to_json_pretty()).unwrap();
    assert_eq!(round_trip, explicit);
}

#[test]
fn a_policy_built_in_code_validates_like_json() {
    let mut p = Policy {
        predicates: Some(vec![PredicatePolicy::new("PodFitsResources")]),
        priorities: Some(vec![PriorityPolicy::new("LeastRequestedPriority", 0)]),
        ..Policy::default()
    };
    assert!(matches!(
        p.plan(),
        Err(PolicyError::NonPositiveWeight { weight: 0, .. })
    ));
    p.priorities = Some(vec![PriorityPolicy::new("LeastRequestedPriority", 2)]);
    assert_eq!(p.plan().unwrap().max_total_score(), 200);
}

#[test]
fn example_data_files_parse() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/data");
    let demo = std::fs::read_to_string(format!("{dir}/policy-demo.json")).unwrap();
    let demo = Policy::from_json(&demo).unwrap();
    assert_eq!(demo, Policy::from_json(KUBE_EXAMPLE).unwrap());
    let default = std::fs::read_to_string(format!("{dir}/policy-default.json")).unwrap();
    assert_eq!(Policy::from_json(&default).unwrap(), Policy::kube_default());
}

// ---- malformed documents -------------------------------------------------------------------

#[test]
fn bad_json_reports_line_and_column() {
    let (e, msg) = reject("{\n  \"predicates\": [\n    {\"name\": \"HostName\",}\n  ]\n}");
    assert!(matches!(e, PolicyError::Json { line: 3, .. }), "{e:?}");
    assert_mentions(&msg, &["not valid JSON", "line 3"]);
    let (e, _) = reject("");
    assert!(matches!(e, PolicyError::Json { .. }));
}

#[test]
fn a_document_that_is_not_an_object() {
    let (e, msg) = reject("[]");
    assert!(matches!(e, PolicyError::InvalidValue { .. }));
    assert_mentions(&msg, &["JSON object", "an array", "top level"]);
}

#[test]
fn unknown_top_level_key_lists_the_valid_ones() {
    let (e, msg) = reject(r#"{"kind": "Policy", "predicate": []}"#);
    assert!(
        matches!(&e, PolicyError::UnknownField { path, field, .. } if path.is_empty() && field == "predicate"),
        "{e:?}"
    );
    assert_mentions(
        &msg,
        &[
            "`predicate`",
            "top level",
            "kind, apiVersion, predicates, priorities, extenders, hardPodAffinitySymmetricWeight, alwaysCheckAllPredicates, percentageOfNodesToScore",
        ],
    );
}

#[test]
fn key_differing_only_in_case_gets_a_suggestion() {
    let (_, msg) = reject(r#"{"Priorities": []}"#);
    assert_mentions(&msg, &["`Priorities`", "did you mean `priorities`?"]);
}

#[test]
fn unknown_key_inside_a_predicate() {
    let (e, msg) = reject(
        r#"{"predicates": [{"name": "HostName"}, {"name": "PodFitsResources", "weight": 1}]}"#,
    );
    assert!(
        matches!(&e, PolicyError::UnknownField { path, field, .. } if path == "predicates[1]" && field == "weight"),
        "{e:?}"
    );
    assert_mentions(
        &msg,
        &[
            "`weight`",
            "`predicates[1]`",
            "valid fields: name, argument",
        ],
    );
}

#[test]
fn unknown_key_inside_an_argument() {
    let (_, msg) = reject(
        r#"{"priorities": [{"name": "P", "weight": 1, "argument": {"labelPreference": {"label": "a", "present": true}}}]}"#,
    );
    assert_mentions(
        &msg,
        &[
            "`present`",
            "`priorities[0].argument.labelPreference`",
            "valid fields: label, presence",
        ],
    );
    let (_, msg) =
        reject(r#"{"predicates": [{"name": "P", "argument": {"nodeLabel": {"labels": ["a"]}}}]}"#);
    assert_mentions(
        &msg,
        &[
            "`nodeLabel`",
            "`predicates[0].argument`",
            "serviceAffinity, labelsPresence",
        ],
    );
}

#[test]
fn missing_name_or_weight() {
    let (e, msg) = reject(r#"{"predicates": [{"argument": null}]}"#);
    assert_eq!(
        e,
        PolicyError::MissingField {
            path: "predicates[0]".into(),
            field: "name"
        }
    );
    assert_mentions(&msg, &["missing field `name`", "`predicates[0]`"]);
    let (e, _) = reject(r#"{"priorities": [{"name": "EqualPriority"}]}"#);
    assert_eq!(
        e,
        PolicyError::MissingField {
            path: "priorities[0]".into(),
            field: "weight"
        }
    );
}

#[test]
fn unknown_predicate_name_lists_the_known_ones() {
    let (e, msg) = reject(r#"{"predicates": [{"name": "HostName"}, {"name": "PodFitsGPU"}]}"#);
    assert!(
        matches!(&e, PolicyError::UnknownPredicate { path, name, .. } if path == "predicates[1]" && name == "PodFitsGPU"),
        "{e:?}"
    );
    assert_mentions(&msg, &["\"PodFitsGPU\"", "`predicates[1].name`"]);
    for known in KNOWN_PREDICATES {
        assert_mentions(&msg, &[known]);
    }
}

#[test]
fn unknown_priority_name_lists_the_known_ones() {
    let (e, msg) = reject(r#"{"priorities": [{"name": "LeastRequested", "weight": 1}]}"#);
    assert!(
        matches!(&e, PolicyError::UnknownPriority { name, .. } if name == "LeastRequested"),
        "{e:?}"
    );
    assert_mentions(&msg, &["\"LeastRequested\"", "`priorities[0].name`"]);
    for known in KNOWN_PRIORITIES {
        assert_mentions(&msg, &[known]);
    }
}

#[test]
fn kube_names_we_do_not_implement_say_why() {
    let (e, msg) = reject(r#"{"predicates": [{"name": "PodToleratesNodeNoExecuteTaints"}]}"#);
    assert!(
        matches!(
            e,
            PolicyError::Unsupported {
                what: "predicate",
                ..
            }
        ),
        "{e:?}"
    );
    assert_mentions(&msg, &["\"PodToleratesNodeNoExecuteTaints\"", "NoExecute"]);
}

#[test]
fn the_volume_predicates_are_accepted_by_their_legacy_names() {
    for name in [
        "NoVolumeZoneConflict",
        "MaxEBSVolumeCount",
        "MaxGCEPDVolumeCount",
        "MaxAzureDiskVolumeCount",
        "MaxCinderVolumeCount",
        "MaxCSIVolumeCountPred",
        "CheckVolumeBinding",
    ] {
        let policy = Policy::from_json(&format!(r#"{{"predicates": [{{"name": "{name}"}}]}}"#))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        assert!(policy.builder().is_ok(), "{name}");
    }
}

#[test]
fn zero_or_negative_weight() {
    for w in [0, -1, i64::MIN] {
        let (e, msg) = reject(&format!(
            r#"{{"priorities": [{{"name": "EqualPriority", "weight": 1}}, {{"name": "LeastRequestedPriority", "weight": {w}}}]}}"#
        ));
        assert!(
            matches!(&e, PolicyError::NonPositiveWeight { path, weight, .. } if path == "priorities[1]" && *weight == w),
            "{e:?}"
        );
        assert_mentions(
            &msg,
            &[
                "`priorities[1].weight`",
                "\"LeastRequestedPriority\"",
                &w.to_string(),
            ],
        );
    }
}

#[test]
fn total_weight_overflow() {
    // One weight alone: weight x 100 overflows.
    let (e, msg) = reject(&format!(
        r#"{{"priorities": [{{"name": "EqualPriority", "weight": {}}}]}}"#,
        i64::MAX / 100 + 1
    ));
    assert!(matches!(e, PolicyError::WeightOverflow { .. }), "{e:?}");
    assert_mentions(&msg, &["`priorities[0].weight`", "overflow"]);
    // Each fits, the sum does not.
    let w = i64::MAX / 100 / 2 + 1;
    let (e, msg) = reject(&format!(
        r#"{{"priorities": [{{"name": "EqualPriority", "weight": {w}}}, {{"name": "ImageLocalityPriority", "weight": {w}}}]}}"#
    ));
    assert!(
        matches!(&e, PolicyError::WeightOverflow { path, .. } if path == "priorities[1]"),
        "{e:?}"
    );
    assert_mentions(&msg, &["\"ImageLocalityPriority\"", &w.to_string()]);
    // The largest total that fits is accepted.
    let ok = format!(
        r#"{{"priorities": [{{"name": "EqualPriority", "weight": {}}}]}}"#,
        i64::MAX / 100
    );
    assert!(Policy::from_json(&ok).is_ok());
    // A weight beyond i64 is a value error.
    let (e, msg) =
        reject(r#"{"priorities": [{"name": "EqualPriority", "weight": 9223372036854775808}]}"#);
    assert!(matches!(e, PolicyError::InvalidValue { .. }), "{e:?}");
    assert_mentions(&msg, &["`priorities[0].weight`"]);
}

#[test]
fn missing_argument() {
    for (list, name, expected) in [
        ("predicates", "CheckNodeLabelPresence", "labelsPresence"),
        ("priorities", "NodeLabelPriority", "labelPreference"),
        ("priorities", "ServiceAntiAffinity", "serviceAntiAffinity"),
        (
            "priorities",
            "RequestedToCapacityRatioPriority",
            "requestedToCapacityRatioArguments",
        ),
    ] {
        let weight = if list == "priorities" {
            r#", "weight": 1"#
        } else {
            ""
        };
        let (e, msg) = reject(&format!(r#"{{"{list}": [{{"name": "{name}"{weight}}}]}}"#));
        assert!(matches!(e, PolicyError::MissingArgument { .. }), "{e:?}");
        assert_mentions(&msg, &[&format!("`{list}[0].argument`"), name, expected]);
    }
}

#[test]
fn argument_for_a_builtin_that_takes_none() {
    let (e, msg) = reject(
        r#"{"predicates": [{"name": "HostName", "argument": {"labelsPresence": {"labels": ["a"]}}}]}"#,
    );
    assert!(matches!(e, PolicyError::UnexpectedArgument { .. }), "{e:?}");
    assert_mentions(
        &msg,
        &["\"HostName\" takes no argument", "`predicates[0].argument`"],
    );
}

#[test]
fn argument_of_the_wrong_kind() {
    let (e, msg) = reject(
        r#"{"predicates": [{"name": "CheckNodeLabelPresence", "argument": {"serviceAffinity": {"labels": ["a"]}}}]}"#,
    );
    assert!(matches!(e, PolicyError::WrongArgument { .. }), "{e:?}");
    assert_mentions(
        &msg,
        &["requires `labelsPresence`", "found `serviceAffinity`"],
    );
    let (_, msg) = reject(
        r#"{"priorities": [{"name": "NodeLabelPriority", "weight": 1, "argument": {"serviceAntiAffinity": {"label": "a"}}}]}"#,
    );
    assert_mentions(
        &msg,
        &["requires `labelPreference`", "found `serviceAntiAffinity`"],
    );
}

#[test]
fn argument_must_set_exactly_one_member() {
    let (e, msg) = reject(
        r#"{"predicates": [{"name": "Both", "argument": {"serviceAffinity": {"labels": ["a"]}, "labelsPresence": {"labels": ["b"]}}}]}"#,
    );
    assert!(matches!(e, PolicyError::ArgumentCount { .. }), "{e:?}");
    assert_mentions(
        &msg,
        &["exactly one of", "found serviceAffinity, labelsPresence"],
    );
    let (_, msg) = reject(r#"{"priorities": [{"name": "Nothing", "weight": 1, "argument": {}}]}"#);
    assert_mentions(&msg, &["`priorities[0].argument`", "found none"]);
}

#[test]
fn wrong_argument_shape() {
    let (e, msg) = reject(
        r#"{"predicates": [{"name": "P", "argument": {"labelsPresence": {"labels": "zone", "presence": true}}}]}"#,
    );
    assert!(
        matches!(&e, PolicyError::InvalidValue { path, .. } if path == "predicates[0].argument.labelsPresence.labels"),
        "{e:?}"
    );
    assert_mentions(&msg, &["\"zone\"", "expected a sequence"]);
    let (_, msg) = reject(r#"{"priorities": [{"name": "EqualPriority", "weight": "1"}]}"#);
    assert_mentions(&msg, &["`priorities[0].weight`", "expected i64"]);
    let (_, msg) = reject(r#"{"priorities": [{"name": "EqualPriority", "weight": 1.5}]}"#);
    assert_mentions(&msg, &["`priorities[0].weight`", "1.5"]);
    let (_, msg) = reject(r#"{"predicates": {"name": "HostName"}}"#);
    assert_mentions(
        &msg,
        &[
            "`predicates`",
            "expected a list of objects with fields name, argument",
            "found an object",
        ],
    );
    let (e, msg) = reject(r#"{"predicates": [{"name": "HostName"}, "NoDiskConflict"]}"#);
    assert!(
        matches!(&e, PolicyError::InvalidValue { path, .. } if path == "predicates[1]"),
        "{e:?}"
    );
    assert_mentions(
        &msg,
        &[
            "expected an object with fields name, argument",
            "found a string",
        ],
    );
    let (_, msg) =
        reject(r#"{"priorities": [{"name": "P", "weight": 1, "argument": ["labelPreference"]}]}"#);
    assert_mentions(
        &msg,
        &[
            "`priorities[0].argument`",
            "serviceAntiAffinity, labelPreference, requestedToCapacityRatioArguments",
            "found an array",
        ],
    );
    let (_, msg) = reject(r#"{"alwaysCheckAllPredicates": "yes"}"#);
    assert_mentions(&msg, &["`alwaysCheckAllPredicates`", "expected a boolean"]);
    let (e, msg) = reject(
        r#"{"predicates": [{"name": "P", "argument": {"labelsPresence": {"labels": []}}}]}"#,
    );
    assert!(matches!(e, PolicyError::InvalidArgument { .. }), "{e:?}");
    assert_mentions(
        &msg,
        &[
            "`predicates[0].argument.labelsPresence.labels`",
            "at least one label",
        ],
    );
    let (_, msg) = reject(
        r#"{"priorities": [{"name": "P", "weight": 1, "argument": {"serviceAntiAffinity": {"label": ""}}}]}"#,
    );
    assert_mentions(
        &msg,
        &[
            "`priorities[0].argument.serviceAntiAffinity.label`",
            "empty",
        ],
    );
}

#[test]
fn bad_percentage_of_nodes_to_score() {
    for v in [101, -1, 1000] {
        let (e, msg) = reject(&format!(r#"{{"percentageOfNodesToScore": {v}}}"#));
        assert_eq!(e, PolicyError::PercentageOutOfRange { value: v });
        assert_mentions(
            &msg,
            &["percentageOfNodesToScore", &v.to_string(), "0..=100"],
        );
    }
    for v in [0, 1, 100] {
        let p = Policy::from_json(&format!(r#"{{"percentageOfNodesToScore": {v}}}"#)).unwrap();
        assert_eq!(
            i64::from(p.plan().unwrap().percentage_of_nodes_to_score()),
            v
        );
    }
}

#[test]
fn bad_hard_pod_affinity_symmetric_weight() {
    let (e, msg) = reject(r#"{"hardPodAffinitySymmetricWeight": 101}"#);
    assert_eq!(
        e,
        PolicyError::HardPodAffinityWeightOutOfRange { value: 101 }
    );
    assert_mentions(&msg, &["hardPodAffinitySymmetricWeight", "101"]);
    let (e, _) = reject(r#"{"hardPodAffinitySymmetricWeight": -5}"#);
    assert_eq!(
        e,
        PolicyError::HardPodAffinityWeightOutOfRange { value: -5 }
    );
    // 0 keeps kube's default of 1.
    let p = Policy::from_json(r#"{"hardPodAffinitySymmetricWeight": 0}"#).unwrap();
    assert_eq!(p.plan().unwrap().hard_pod_affinity_symmetric_weight(), 1);
}

#[test]
fn wrong_kind_or_api_version() {
    let (e, msg) = reject(r#"{"kind": "Scheduler", "apiVersion": "v1"}"#);
    assert_eq!(
        e,
        PolicyError::WrongKind {
            found: "Scheduler".into()
        }
    );
    assert_mentions(&msg, &["`kind`", "\"Scheduler\""]);
    let (e, msg) = reject(r#"{"kind": "Policy", "apiVersion": "kubescheduler.config.k8s.io/v1"}"#);
    assert!(matches!(e, PolicyError::WrongApiVersion { .. }));
    assert_mentions(
        &msg,
        &["`apiVersion`", "\"kubescheduler.config.k8s.io/v1\""],
    );
}

/// A KubeSchedulerConfiguration given as a Policy is named as such (instead of the old
/// `kind` message).
#[test]
fn kube_scheduler_configuration_is_named() {
    let (e, msg) = reject(
        r#"{"apiVersion": "kubescheduler.config.k8s.io/v1beta1", "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "default-scheduler"}]}"#,
    );
    assert!(matches!(e, PolicyError::NotAPolicy { .. }), "{e:?}");
    assert_mentions(
        &msg,
        &[
            "KubeSchedulerConfiguration",
            "not a legacy scheduler Policy",
        ],
    );
    assert!(!msg.contains("unknown field"), "{msg}");
    let (e, _) = reject(r#"{"profiles": []}"#);
    assert!(matches!(e, PolicyError::NotAPolicy { .. }), "{e:?}");
}

#[test]
fn duplicate_names_merge_as_kube_merges_them() {
    let policy = Policy::from_json(
        r#"{"predicates": [{"name": "HostName"}, {"name": "NoDiskConflict"}, {"name": "HostName"}]}"#,
    )
    .unwrap();
    let plan = policy.plan().unwrap();
    let names: Vec<&str> = plan.predicates().iter().map(|p| p.name()).collect();
    assert_eq!(names.iter().filter(|n| **n == "HostName").count(), 1);
    // An alias counts as its target.
    let plan = Policy::from_json(
        r#"{"predicates": [{"name": "PodFitsHostPorts"}, {"name": "PodFitsPorts"}]}"#,
    )
    .unwrap()
    .plan()
    .unwrap();
    assert_eq!(
        plan.predicates()
            .iter()
            .filter(|p| p.name() == "PodFitsHostPorts")
            .count(),
        1
    );
    // A priority listed twice: one priority, the last weight (kube's map from name to weight).
    let plan = Policy::from_json(
        r#"{"priorities": [{"name": "LeastRequestedPriority", "weight": 1},
            {"name": "ImageLocalityPriority", "weight": 1},
            {"name": "LeastRequestedPriority", "weight": 5}]}"#,
    )
    .unwrap()
    .plan()
    .unwrap();
    let weights: Vec<(&str, i64)> = plan
        .priorities()
        .iter()
        .map(|p| (p.name.as_str(), p.weight))
        .collect();
    assert_eq!(
        weights,
        [("LeastRequestedPriority", 5), ("ImageLocalityPriority", 1)]
    );
    // A custom name twice with the same argument is one predicate.
    let plan = Policy::from_json(
        r#"{"predicates": [
            {"name": "Zone", "argument": {"labelsPresence": {"labels": ["zone"], "presence": true}}},
            {"name": "Zone", "argument": {"labelsPresence": {"labels": ["zone"], "presence": true}}}]}"#,
    )
    .unwrap()
    .plan()
    .unwrap();
    assert_eq!(
        plan.predicates()
            .iter()
            .filter(|p| p.name() == "Zone")
            .count(),
        1
    );
    // The same custom name with another argument is a contradiction.
    let (e, msg) = reject(
        r#"{"predicates": [
            {"name": "Zone", "argument": {"labelsPresence": {"labels": ["zone"]}}},
            {"name": "Zone", "argument": {"labelsPresence": {"labels": ["foo"]}}}]}"#,
    );
    assert_eq!(
        e,
        PolicyError::ConflictingDuplicate {
            path: "predicates[1].argument".into(),
            what: "predicate",
            name: "Zone".into(),
            first: "predicates[0]".into()
        }
    );
    assert_mentions(&msg, &["\"Zone\"", "another argument", "`predicates[0]`"]);
    // EqualPriority twice is EqualPriority (which v1.20 skips).
    Policy::from_json(
        r#"{"priorities": [{"name": "EqualPriority", "weight": 1}, {"name": "EqualPriority", "weight": 2}]}"#,
    )
    .unwrap();
}

#[test]
fn kube_rules_for_repeated_custom_priorities() {
    let ratio =
        r#"{"requestedToCapacityRatioArguments": {"shape": [{"utilization": 0, "score": 0}]}}"#;
    let (e, msg) = reject(&format!(
        r#"{{"priorities": [{{"name": "A", "weight": 1, "argument": {ratio}}}, {{"name": "B", "weight": 1, "argument": {ratio}}}]}}"#
    ));
    assert!(matches!(e, PolicyError::Redeclared { .. }), "{e:?}");
    assert_mentions(&msg, &["\"B\"", "RequestedToCapacityRatio", "\"A\""]);
    let (e, msg) = reject(
        r#"{"priorities": [
            {"name": "L1", "weight": 1, "argument": {"labelPreference": {"label": "a"}}},
            {"name": "L2", "weight": 2, "argument": {"labelPreference": {"label": "b"}}}]}"#,
    );
    assert!(matches!(e, PolicyError::DifferentWeights { .. }), "{e:?}");
    assert_mentions(
        &msg,
        &[
            "`priorities[1].weight`",
            "\"L2\"",
            "\"L1\"",
            "labelPreference",
        ],
    );
}

#[test]
fn bad_requested_to_capacity_ratio_shape() {
    let doc = |args: &str| {
        format!(
            r#"{{"priorities": [{{"name": "RequestedToCapacityRatioPriority", "weight": 1, "argument": {{"requestedToCapacityRatioArguments": {args}}}}}]}}"#
        )
    };
    let base = "priorities[0].argument.requestedToCapacityRatioArguments";
    for (args, field, words) in [
        (
            r#"{"shape": []}"#,
            "shape".to_string(),
            "at least one point",
        ),
        (
            r#"{"shape": [{"utilization": 50, "score": 1}, {"utilization": 50, "score": 2}]}"#,
            "shape[1].utilization".to_string(),
            "strictly increasing",
        ),
        (
            r#"{"shape": [{"utilization": 60, "score": 1}, {"utilization": 20, "score": 2}]}"#,
            "shape[1].utilization".to_string(),
            "found 20 after 60",
        ),
        (
            r#"{"shape": [{"utilization": 101, "score": 1}]}"#,
            "shape[0].utilization".to_string(),
            "101 not in valid range [0, 100]",
        ),
        (
            r#"{"shape": [{"utilization": -1, "score": 1}]}"#,
            "shape[0].utilization".to_string(),
            "-1 not in valid range",
        ),
        (
            r#"{"shape": [{"utilization": 0, "score": 11}]}"#,
            "shape[0].score".to_string(),
            "11 not in valid range [0, 10]",
        ),
        (
            r#"{"shape": [{"utilization": 0, "score": -1}]}"#,
            "shape[0].score".to_string(),
            "-1 not in valid range",
        ),
        (
            r#"{"shape": [{"utilization": 0, "score": 0}], "resources": [{"name": "cpu"}, {"name": "cpu", "weight": 2}]}"#,
            "resources[1].name".to_string(),
            "duplicate resource \"cpu\"",
        ),
        (
            r#"{"shape": [{"utilization": 0, "score": 0}], "resources": [{"name": "cpu", "weight": -3}]}"#,
            "resources[0].weight".to_string(),
            "-3",
        ),
        (
            r#"{"shape": [{"utilization": 0, "score": 0}], "resources": [{"name": ""}]}"#,
            "resources[0].name".to_string(),
            "empty",
        ),
    ] {
        let (e, msg) = reject(&doc(args));
        let want = format!("{base}.{field}");
        assert!(
            matches!(&e, PolicyError::InvalidShape { path, .. } if *path == want),
            "{args}: {e:?}"
        );
        assert_mentions(&msg, &[&want, words]);
    }
    // A point without its score is a missing key; a shape that is not a list a value error.
    let (e, _) = reject(&doc(r#"{"shape": [{"utilization": 0}]}"#));
    assert_eq!(
        e,
        PolicyError::MissingField {
            path: format!("{base}.shape[0]"),
            field: "score"
        }
    );
    let (e, _) = reject(&doc(r#"{"shape": {"utilization": 0, "score": 0}}"#));
    assert!(
        matches!(&e, PolicyError::InvalidValue { path, .. } if *path == format!("{base}.shape")),
        "{e:?}"
    );
}

#[test]
fn extenders_are_rejected_unless_empty() {
    let (e, msg) = reject(
        r#"{"extenders": [{"urlPrefix": "http://127.0.0.1:8888", "filterVerb": "filter"}]}"#,
    );
    assert_eq!(e, PolicyError::ExtendersUnsupported { count: 1 });
    assert_mentions(&msg, &["`extenders`", "not supported"]);
    assert!(Policy::from_json(r#"{"extenders": []}"#).is_ok());
}

// ---- compilation into a scheduler ----------------------------------------------------------

fn compiled(json: &str) -> Worker {
    Policy::from_json(json)
        .unwrap()
        .builder()
        .unwrap()
        .threads(1)
        .seed(7)
        .build_worker()
        .unwrap()
}

fn names_of(s: &Profile) -> Vec<&str> {
    s.predicate_names().collect()
}

fn weights_of(s: &Profile) -> Vec<(&str, i64)> {
    s.priority_weights().collect()
}

#[test]
fn kube_example_compiles_to_the_listed_plugins() {
    let s = Policy::from_json(KUBE_EXAMPLE)
        .unwrap()
        .builder_with(gates_off())
        .unwrap()
        .build()
        .unwrap();
    assert_eq!(
        names_of(&s),
        [
            "CheckNodeUnschedulable",
            "HostName",
            "PodFitsHostPorts",
            "MatchNodeSelector",
            "PodFitsResources",
            "NoDiskConflict",
            "PodToleratesNodeTaints",
        ]
    );
    // kube v1.20 skips EqualPriority and runs ServiceSpreadingPriority as SelectorSpread.
    assert_eq!(
        weights_of(&s),
        [
            ("LeastRequestedPriority", 1),
            ("BalancedResourceAllocation", 1),
            ("SelectorSpreadPriority", 1),
        ]
    );
}

#[test]
fn default_policy_compiles_to_kube_defaults() {
    let off = |p: Policy| p.builder_with(gates_off()).unwrap().build().unwrap();
    let on = |p: Policy| p.compile().unwrap();
    let predicates = [
        "CheckNodeUnschedulable",
        "GeneralPredicates",
        "NoDiskConflict",
        "PodToleratesNodeTaints",
        "MaxEBSVolumeCount",
        "MaxGCEPDVolumeCount",
        "MaxCSIVolumeCountPred",
        "MaxAzureDiskVolumeCount",
        "CheckVolumeBinding",
        "NoVolumeZoneConflict",
        "EvenPodsSpread",
        "MatchInterPodAffinity",
    ];
    for s in [off(Policy::default()), off(Policy::kube_default())] {
        assert_eq!(names_of(&s), predicates);
        assert_eq!(
            weights_of(&s),
            [
                ("SelectorSpreadPriority", 1),
                ("InterPodAffinityPriority", 1),
                ("LeastRequestedPriority", 1),
                ("BalancedResourceAllocation", 1),
                ("NodePreferAvoidPodsPriority", 10000),
                ("NodeAffinityPriority", 1),
                ("TaintTolerationPriority", 1),
                ("ImageLocalityPriority", 1),
                ("EvenPodsSpreadPriority", 2),
            ]
        );
    }
    // v1.20's default gates: DefaultPodTopologySpread turns SelectorSpreadPriority into
    // PodTopologySpread with the system defaults, one plugin with the larger weight.
    for s in [on(Policy::default()), on(Policy::kube_default())] {
        assert_eq!(names_of(&s), predicates);
        assert_eq!(
            weights_of(&s),
            [
                ("EvenPodsSpreadPriority", 2),
                ("InterPodAffinityPriority", 1),
                ("LeastRequestedPriority", 1),
                ("BalancedResourceAllocation", 1),
                ("NodePreferAvoidPodsPriority", 10000),
                ("NodeAffinityPriority", 1),
                ("TaintTolerationPriority", 1),
                ("ImageLocalityPriority", 1),
            ]
        );
    }
    assert!(
        Policy::kube_default()
            .plan()
            .unwrap()
            .spread_system_defaults()
    );
}

#[test]
fn general_predicates_cover_their_parts_and_split_when_all_reasons_are_wanted() {
    let doc = r#"{"predicates": [{"name": "HostName"}, {"name": "GeneralPredicates"},
        {"name": "PodFitsResources"}, {"name": "NoDiskConflict"}], "priorities": []}"#;
    assert_eq!(
        names_of(&compiled(doc)),
        [
            "CheckNodeUnschedulable",
            "GeneralPredicates",
            "NoDiskConflict",
            "PodToleratesNodeTaints"
        ]
    );
    let all = doc.replace(
        "\"priorities\": []",
        "\"priorities\": [], \"alwaysCheckAllPredicates\": true",
    );
    assert_eq!(
        names_of(&compiled(&all)),
        [
            "CheckNodeUnschedulable",
            "PodFitsResources",
            "HostName",
            "PodFitsHostPorts",
            "MatchNodeSelector",
            "NoDiskConflict",
            "PodToleratesNodeTaints"
        ]
    );
}

#[test]
fn kube_policy_with_arguments_compiles_like_kube() {
    let s = compiled(&kube_arguments_example_supported());
    // The labelsPresence predicates form one NodeLabel filter.
    assert_eq!(
        names_of(&s),
        [
            "CheckNodeUnschedulable",
            "PodToleratesNodeTaints",
            "CheckNodeLabelPresence"
        ]
    );
    // The labelPreference priorities form one NodeLabel score with weight 2 x 3, and the
    // serviceAntiAffinity ones one ServiceAffinity score with weight 2 x 3: kube v1.20's
    // factory_test.go TestCreateFromConfig expects exactly these weights (ServiceAffinity 6,
    // NodeLabel 6).
    assert_eq!(
        weights_of(&s),
        [
            ("ServiceAntiAffinity", 6),
            ("RequestedToCapacityRatioPriority", 2),
            ("NodeLabelPriority", 6),
            ("NodeAffinityPriority", 2),
            ("InterPodAffinityPriority", 1),
        ]
    );
}

#[test]
fn a_policy_using_every_name_and_argument_compiles() {
    let s = compiled(EVERYTHING);
    let names = names_of(&s);
    assert_eq!(
        names,
        [
            "CheckNodeCondition",
            "CheckNodeUnschedulable",
            "PodFitsResources",
            "HostName",
            "PodFitsHostPorts",
            "MatchNodeSelector",
            "NoDiskConflict",
            "PodToleratesNodeTaints",
            "CheckNodeLabelPresence",
            "CheckServiceAffinity",
            "MaxEBSVolumeCount",
            "MaxGCEPDVolumeCount",
            "MaxCSIVolumeCountPred",
            "MaxAzureDiskVolumeCount",
            "MaxCinderVolumeCount",
            "CheckVolumeBinding",
            "NoVolumeZoneConflict",
            "CheckNodeMemoryPressure",
            "CheckNodePIDPressure",
            "CheckNodeDiskPressure",
            "EvenPodsSpread",
            "MatchInterPodAffinity",
        ]
    );
    // alwaysCheckAllPredicates: GeneralPredicates runs as its four parts.
    assert!(!names.contains(&"GeneralPredicates"));
    let weights = weights_of(&s);
    // Every priority but EqualPriority (skipped by kube v1.20) and ServiceSpreadingPriority
    // (SelectorSpreadPriority in v1.20, listed once).
    assert_eq!(weights.len(), 13, "{weights:?}");
    assert!(weights.contains(&("NodeLabelPriority", 4)));
    assert!(weights.contains(&("ServiceAntiAffinity", 1)));
    assert!(weights.contains(&("RequestedToCapacityRatioPriority", 2)));
}

#[test]
fn example_data_files_compile() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../examples/data");
    for file in ["policy-demo.json", "policy-default.json"] {
        let text = std::fs::read_to_string(format!("{dir}/{file}")).unwrap();
        let s = Policy::from_json(&text).unwrap().compile();
        assert!(s.is_ok(), "{file}: {s:?}");
    }
}

fn node(name: &str, labels: &str, extra_spec: &str) -> Node {
    parse_node(&format!(
        r#"{{"metadata": {{"name": "{name}", "labels": {{{labels}}}}},
            "spec": {{{extra_spec}}},
            "status": {{"allocatable": {{"cpu": "4", "memory": "8Gi", "pods": "110"}},
                        "capacity": {{"cpu": "4", "memory": "8Gi", "pods": "110"}}}}}}"#
    ))
    .unwrap()
}

fn pod(name: &str) -> Pod {
    parse_pod(&format!(
        r#"{{"metadata": {{"name": "{name}", "namespace": "default"}},
            "spec": {{"containers": [{{"name": "c", "resources": {{"requests": {{"cpu": "100m", "memory": "100Mi"}}}}}}]}}}}"#
    ))
    .unwrap()
}

fn cluster() -> Snapshot {
    Snapshot::from_objects(
        vec![
            node("ssd-1", r#""ssd": "true""#, ""),
            node("plain", "", r#""unschedulable": true"#),
            node(
                "ssd-gpu",
                r#""ssd": "true""#,
                r#""taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]"#,
            ),
        ],
        Vec::new(),
    )
    .unwrap()
}

#[test]
fn compiled_policy_filters_and_scores_as_written() {
    let snapshot = cluster();
    // Only mandatory predicates plus an ssd requirement: "plain" lacks the label and is
    // unschedulable, "ssd-gpu" is tainted.
    let doc = r#"{"predicates": [{"name": "NeedSsd", "argument": {"labelsPresence": {"labels": ["ssd"], "presence": true}}}],
                  "priorities": [{"name": "PreferSsd", "weight": 5, "argument": {"labelPreference": {"label": "ssd", "presence": true}}}]}"#;
    let mut s = compiled(doc);
    let r = s.schedule(&pod("p"), &snapshot).unwrap();
    assert_eq!(
        (r.node.as_str(), r.feasible_nodes, r.evaluated_nodes),
        ("ssd-1", 1, 3)
    );

    // A pod nothing fits: the first failing predicate per node...
    let snapshot = Snapshot::from_objects(
        vec![
            node("plain", "", r#""unschedulable": true"#),
            node(
                "ssd-gpu",
                r#""ssd": "true""#,
                r#""taints": [{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}]"#,
            ),
        ],
        Vec::new(),
    )
    .unwrap();
    let Err(ScheduleError::Unschedulable(fit)) = s.schedule(&pod("p"), &snapshot) else {
        panic!("scheduled")
    };
    let plain = &fit.failures()[0];
    assert_eq!(plain.node, "plain");
    assert_eq!(plain.codes.len(), 1);
    // ...or every one with alwaysCheckAllPredicates.
    let all = doc.replacen('{', r#"{"alwaysCheckAllPredicates": true, "#, 1);
    let mut s = compiled(&all);
    let Err(ScheduleError::Unschedulable(fit)) = s.schedule(&pod("p"), &snapshot) else {
        panic!("scheduled")
    };
    let plain = &fit.failures()[0];
    let failed: Vec<&str> = plain.codes.iter().map(|(p, _)| p.as_str()).collect();
    assert_eq!(failed, ["CheckNodeUnschedulable", "CheckNodeLabelPresence"]);
    assert_eq!(fit.num_all_nodes, 2);
    assert!(
        fit.to_string().starts_with("0/2 nodes are available: "),
        "{fit}"
    );
}

#[test]
fn compiled_priorities_decide_between_feasible_nodes() {
    let snapshot = Snapshot::from_objects(
        vec![node("plain", "", ""), node("ssd", r#""ssd": "true""#, "")],
        Vec::new(),
    )
    .unwrap();
    for (presence, want) in [(true, "ssd"), (false, "plain")] {
        let doc = format!(
            r#"{{"predicates": [], "priorities": [{{"name": "NodeLabelPriority", "weight": 5,
                "argument": {{"labelPreference": {{"label": "ssd", "presence": {presence}}}}}}}]}}"#
        );
        let mut s = compiled(&doc);
        for _ in 0..10 {
            let r = s.schedule(&pod("p"), &snapshot).unwrap();
            assert_eq!(r.node, want);
            assert_eq!(r.score, 500);
            assert_eq!(r.feasible_nodes, 2);
        }
    }
}

#[test]
fn percentage_of_nodes_to_score_reaches_the_scheduler() {
    let nodes: Vec<Node> = (0..300).map(|i| node(&format!("n{i}"), "", "")).collect();
    let snapshot = Snapshot::from_objects(nodes, Vec::new()).unwrap();
    let mut s = compiled(r#"{"percentageOfNodesToScore": 50, "priorities": []}"#);
    assert_eq!(
        s.schedule(&pod("p"), &snapshot).unwrap().feasible_nodes,
        150
    );
    let mut s = compiled(r#"{"percentageOfNodesToScore": 100, "priorities": []}"#);
    assert_eq!(
        s.schedule(&pod("p"), &snapshot).unwrap().feasible_nodes,
        300
    );
    // Adaptive: 50 - 300/125 = 48 %, but never fewer than 100 nodes.
    let mut s = compiled(r#"{"priorities": []}"#);
    assert_eq!(
        s.schedule(&pod("p"), &snapshot).unwrap().feasible_nodes,
        144
    );
}

// ---- properties ----------------------------------------------------------------------------

mod properties {
    use proptest::prelude::*;
    use sched_core::policy::{
        LabelPreference, LabelsPresence, Policy, PolicyError, PredicateArgument, PredicateKind,
        PredicatePolicy, PriorityArgument, PriorityKind, PriorityPolicy,
    };

    fn builtin_predicates() -> impl Strategy<Value = Vec<PredicatePolicy>> {
        let names: Vec<&'static str> = PredicateKind::ALL
            .iter()
            .filter(|k| k.argument().is_none())
            .map(|k| k.name())
            .collect();
        proptest::sample::subsequence(names.clone(), 0..=names.len()).prop_flat_map(|v| {
            Just(v)
                .prop_shuffle()
                .prop_map(|v| v.into_iter().map(PredicatePolicy::new).collect())
        })
    }

    fn builtin_priorities() -> impl Strategy<Value = Vec<PriorityPolicy>> {
        let names: Vec<&'static str> = PriorityKind::ALL
            .iter()
            .filter(|k| k.argument().is_none())
            .map(|k| k.name())
            .collect();
        let n = names.len();
        (
            proptest::sample::subsequence(names, 0..=n),
            proptest::collection::vec(1i64..=10_000, n),
        )
            .prop_map(|(names, weights)| {
                names
                    .into_iter()
                    .zip(weights)
                    .map(|(name, w)| PriorityPolicy::new(name, w))
                    .collect()
            })
    }

    fn policies() -> impl Strategy<Value = Policy> {
        (
            proptest::option::of(builtin_predicates()),
            proptest::option::of(builtin_priorities()),
            proptest::option::of(proptest::collection::vec(
                ("[a-z]{1,8}", any::<bool>()),
                1..3,
            )),
            proptest::option::of(0i64..=100),
            proptest::option::of(0i64..=100),
            proptest::option::of(any::<bool>()),
        )
            .prop_map(|(preds, prios, labels, pct, hard, all)| {
                let mut preds = preds;
                let mut prios = prios;
                if let Some(labels) = labels {
                    for (i, (l, presence)) in labels.into_iter().enumerate() {
                        preds.get_or_insert_with(Vec::new).push(
                            PredicatePolicy::new(format!("Labels{i}")).with_argument(
                                PredicateArgument {
                                    labels_presence: Some(LabelsPresence {
                                        labels: vec![l.clone()],
                                        presence,
                                    }),
                                    ..PredicateArgument::default()
                                },
                            ),
                        );
                        prios.get_or_insert_with(Vec::new).push(
                            PriorityPolicy::new(format!("Prefer{i}"), 3).with_argument(
                                PriorityArgument {
                                    label_preference: Some(LabelPreference { label: l, presence }),
                                    ..PriorityArgument::default()
                                },
                            ),
                        );
                    }
                }
                Policy {
                    kind: Some("Policy".into()),
                    api_version: Some("v1".into()),
                    predicates: preds,
                    priorities: prios,
                    percentage_of_nodes_to_score: pct,
                    hard_pod_affinity_symmetric_weight: hard,
                    always_check_all_predicates: all,
                    ..Policy::default()
                }
            })
    }

    proptest! {
        #[test]
        fn valid_policies_round_trip_and_compile(p in policies()) {
            let json = p.to_json_pretty();
            let parsed = Policy::from_json(&json).unwrap();
            prop_assert_eq!(&parsed, &p);
            let plan = parsed.plan().unwrap();
            let kinds: Vec<PredicateKind> = plan.predicates().iter().map(|s| s.kind()).collect();
            let mut sorted = kinds.clone();
            sorted.sort();
            prop_assert_eq!(&kinds, &sorted);
            prop_assert!(kinds.contains(&PredicateKind::CheckNodeUnschedulable));
            prop_assert!(kinds.contains(&PredicateKind::PodToleratesNodeTaints));
            let s = parsed.builder().unwrap().threads(1).build().unwrap();
            let total: i64 = s.priority_weights().map(|(_, w)| w * 100).sum();
            prop_assert_eq!(total, plan.max_total_score());
        }

        #[test]
        fn an_inserted_unknown_key_is_always_named(p in policies(), key in "[a-z]{3,10}X", at in any::<proptest::sample::Index>()) {
            // Insert the key into one of the objects of the document.
            let mut doc: serde_json::Value = serde_json::from_str(&p.to_json_pretty()).unwrap();
            let count = count_objects(&doc);
            let mut n = 0;
            insert_nth(&mut doc, at.index(count), &key, &mut n);
            let err = Policy::from_json(&doc.to_string()).unwrap_err();
            prop_assert!(matches!(&err, PolicyError::UnknownField { field, .. } if *field == key), "{:?}", err);
            prop_assert!(err.to_string().contains("valid fields: "));
        }

        #[test]
        fn arbitrary_text_never_panics(s in "\\PC{0,200}") {
            let _ = Policy::from_json(&s);
        }

        #[test]
        fn arbitrary_json_never_panics(v in arb_json()) {
            let _ = Policy::from_json(&v.to_string());
            if let Ok(p) = Policy::from_json(&v.to_string()) {
                prop_assert!(p.compile().is_ok());
            }
        }
    }

    fn count_objects(v: &serde_json::Value) -> usize {
        match v {
            serde_json::Value::Object(m) => 1 + m.values().map(count_objects).sum::<usize>(),
            serde_json::Value::Array(a) => a.iter().map(count_objects).sum(),
            _ => 0,
        }
    }

    fn insert_nth(v: &mut serde_json::Value, target: usize, key: &str, n: &mut usize) -> bool {
        match v {
            serde_json::Value::Object(m) => {
                if *n == target {
                    m.insert(key.to_string(), serde_json::Value::Bool(true));
                    return true;
                }
                *n += 1;
                m.iter_mut().any(|(_, c)| insert_nth(c, target, key, n))
            }
            serde_json::Value::Array(a) => a.iter_mut().any(|c| insert_nth(c, target, key, n)),
            _ => false,
        }
    }

    /// JSON shaped like a Policy, with names and values drawn from plausible pools.
    fn arb_json() -> impl Strategy<Value = serde_json::Value> {
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::Bool),
            (-200i64..20_000).prop_map(|n| serde_json::json!(n)),
            proptest::sample::select(vec![
                "HostName",
                "PodFitsPorts",
                "GeneralPredicates",
                "EqualPriority",
                "Policy",
                "v1",
                "cpu",
                "zone",
                "",
                "NodeLabelPriority",
                "CheckNodeLabelPresence",
            ])
            .prop_map(|s| serde_json::json!(s)),
        ];
        let keys = proptest::sample::select(vec![
            "kind",
            "apiVersion",
            "predicates",
            "priorities",
            "name",
            "weight",
            "argument",
            "labelsPresence",
            "labelPreference",
            "labels",
            "label",
            "presence",
            "shape",
            "utilization",
            "score",
            "resources",
            "requestedToCapacityRatioArguments",
            "serviceAntiAffinity",
            "percentageOfNodesToScore",
            "hardPodAffinitySymmetricWeight",
            "alwaysCheckAllPredicates",
            "extenders",
        ]);
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
                proptest::collection::btree_map(keys.clone(), inner, 0..4).prop_map(|m| {
                    serde_json::Value::Object(
                        m.into_iter().map(|(k, v)| (k.to_string(), v)).collect(),
                    )
                }),
            ]
        })
    }
}

/// A pending pod `ns/name` asking for `scheduler` (none: the API server's default).
fn pod_of_scheduler(ns: &str, name: &str, scheduler: &str) -> Pod {
    let mut pod = Pod::default();
    pod.metadata.namespace = ns.into();
    pod.metadata.name = name.into();
    pod.spec.scheduler_name = scheduler.into();
    pod.spec.containers.push(Default::default());
    pod
}

#[test]
fn a_policy_serves_only_the_default_scheduler_and_reports_other_pods_as_a_configuration_does() {
    use sched_core::config::{
        DEFAULT_SCHEDULER_NAME, Profiles, Registry, SchedulerConfiguration, UnknownProfile,
    };
    let profiles = Policy::kube_default().profiles().unwrap();
    assert_eq!(
        profiles.names().collect::<Vec<_>>(),
        [DEFAULT_SCHEDULER_NAME]
    );
    // kube v1.20 schedules the pods of its own scheduler name; the API server gives a pod
    // without one `default-scheduler`.
    let snapshot =
        Snapshot::from_objects(vec![parse_node(r#"{"metadata": {"name": "n1"}, "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}}"#).unwrap()], vec![]).unwrap();
    for scheduler in ["", DEFAULT_SCHEDULER_NAME] {
        let pod = pod_of_scheduler("shop", "web", scheduler);
        let profile = profiles.for_pod(&pod).unwrap();
        let mut cache = profile.create_cache();
        assert_eq!(
            profile.schedule(&mut cache, &pod, &snapshot).unwrap().node,
            "n1"
        );
    }
    // A pod of another scheduler is not placed: it is reported, naming the profile there is.
    let gpu = pod_of_scheduler("ml", "train", "gpu-scheduler");
    let err = profiles.for_pod(&gpu).unwrap_err();
    assert_eq!(
        err,
        UnknownProfile {
            pod: "ml/train".into(),
            scheduler: "gpu-scheduler".into(),
            known: vec![DEFAULT_SCHEDULER_NAME.into()],
        }
    );
    // In the words of a configuration with the one default profile.
    let config = SchedulerConfiguration::from_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n",
    )
    .unwrap()
    .compile(&Registry::v1_34())
    .unwrap();
    assert_eq!(
        err.to_string(),
        config.for_pod(&gpu).unwrap_err().to_string()
    );
    assert_eq!(
        err.to_string(),
        "pod ml/train asks for scheduler \"gpu-scheduler\", which no profile has (profiles: default-scheduler)"
    );

    // A profile built from the Policy's builder, under the scheduler name kube was given.
    let profile = Policy::kube_default()
        .builder()
        .unwrap()
        .seed(1)
        .build()
        .unwrap();
    let batch = Profiles::single("batch-scheduler", profile);
    assert!(
        batch
            .for_pod(&pod_of_scheduler("b", "job", "batch-scheduler"))
            .is_ok()
    );
    let err = batch
        .for_pod(&pod_of_scheduler("shop", "web", ""))
        .unwrap_err();
    assert_eq!(err.scheduler, DEFAULT_SCHEDULER_NAME);
    assert_eq!(err.known, ["batch-scheduler"]);
}
