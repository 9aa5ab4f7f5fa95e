//! `KubeSchedulerConfiguration`: reading, kube's defaulting and merging, kube's validation
//! messages, compiling into profiles, and each default plugin's effect through a
//! configuration, on realistic objects.

use std::collections::BTreeMap;

use sched_core::config::{
    ConfigError, DefaultingType, PluginArgs, ProblemKind, Registry, SchedulerConfiguration,
};
use sched_core::framework::{BoxPredicate, Reason, predicate_fn};
use sched_core::model::{Namespace, Node, Pod, Workload, WorkloadKind, parse_pod};
use sched_core::profile::{Profile, ScheduleError};
use sched_core::snapshot::{NamespaceLabels, Snapshot};

const HEADER: &str =
    "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n";

fn config(body: &str) -> SchedulerConfiguration {
    SchedulerConfiguration::from_text(&format!("{HEADER}{body}")).unwrap_or_else(|e| panic!("{e}"))
}

fn problems(text: &str) -> Vec<String> {
    let err: ConfigError = SchedulerConfiguration::from_text(text).unwrap_err();
    err.problems().iter().map(ToString::to_string).collect()
}

fn compile_problems(body: &str, registry: &Registry) -> Vec<String> {
    let err = config(body).compile(registry).unwrap_err();
    err.problems().iter().map(ToString::to_string).collect()
}

fn profile(body: &str) -> Profile {
    let mut builders = config(body).builders(&Registry::v1_34()).unwrap();
    assert_eq!(builders.len(), 1);
    builders.remove(0).1.seed(7).build().unwrap()
}

fn filters(p: &Profile) -> Vec<&str> {
    p.predicate_names().collect()
}

fn scores(p: &Profile) -> Vec<(&str, i64)> {
    p.priority_weights().collect()
}

const DEFAULT_FILTERS: [&str; 13] = [
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
];

const DEFAULT_SCORES: [(&str, i64); 7] = [
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
];

// ---------------------------------------------------------------------------------------
// Reading and defaulting

#[test]
fn an_empty_configuration_is_kube_v1_34s_defaults() {
    let c = config("");
    assert_eq!(c, SchedulerConfiguration::v1_34_default());
    assert_eq!(c.parallelism, 16);
    assert_eq!(c.percentage_of_nodes_to_score, None);
    assert_eq!(
        (c.pod_initial_backoff_seconds, c.pod_max_backoff_seconds),
        (1, 10)
    );
    assert_eq!(c.profiles.len(), 1);
    let p = &c.profiles[0];
    assert_eq!(p.scheduler_name, "default-scheduler");
    let multi: Vec<(&str, Option<i32>)> = p
        .plugins
        .multi_point
        .enabled
        .iter()
        .map(|r| (r.name.as_str(), r.weight))
        .collect();
    assert_eq!(
        multi,
        [
            ("SchedulingGates", None),
            ("PrioritySort", None),
            ("NodeUnschedulable", None),
            ("NodeName", None),
            ("TaintToleration", Some(3)),
            ("NodeAffinity", Some(2)),
            ("NodePorts", None),
            ("NodeResourcesFit", Some(1)),
            ("VolumeRestrictions", None),
            ("NodeVolumeLimits", None),
            ("VolumeBinding", None),
            ("VolumeZone", None),
            ("PodTopologySpread", Some(2)),
            ("InterPodAffinity", Some(2)),
            ("DynamicResources", None),
            ("DefaultPreemption", None),
            ("NodeResourcesBalancedAllocation", Some(1)),
            ("ImageLocality", Some(1)),
            ("DefaultBinder", None),
        ]
    );
    // Every plugin with arguments gets kube's defaults.
    let names: Vec<&str> = p.plugin_config.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        [
            "NodeAffinity",
            "NodeResourcesFit",
            "VolumeBinding",
            "PodTopologySpread",
            "InterPodAffinity",
            "DefaultPreemption",
            "NodeResourcesBalancedAllocation"
        ]
    );
    match p.args("InterPodAffinity") {
        Some(PluginArgs::InterPodAffinity(a)) => assert_eq!(a.hard_pod_affinity_weight, 1),
        other => panic!("{other:?}"),
    }
    match p.args("PodTopologySpread") {
        Some(PluginArgs::PodTopologySpread(a)) => {
            assert_eq!(a.defaulting_type, DefaultingType::System);
            assert!(a.default_constraints.is_empty());
        }
        other => panic!("{other:?}"),
    }
    match p.args("DefaultPreemption") {
        Some(PluginArgs::DefaultPreemption(a)) => assert_eq!(
            (
                a.min_candidate_nodes_percentage,
                a.min_candidate_nodes_absolute
            ),
            (10, 100)
        ),
        other => panic!("{other:?}"),
    }
    let compiled = profile("");
    assert_eq!(filters(&compiled), DEFAULT_FILTERS);
    assert_eq!(scores(&compiled), DEFAULT_SCORES);
    assert_eq!(compiled.percentage_of_nodes_to_score(), 0);
}

#[test]
fn yaml_and_json_read_alike() {
    let yaml = config(
        "percentageOfNodesToScore: 30\nprofiles:\n- schedulerName: a\n  plugins:\n    score:\n      disabled:\n      - name: ImageLocality\n",
    );
    let json = SchedulerConfiguration::from_text(
        r#"{"apiVersion": "kubescheduler.config.k8s.io/v1", "kind": "KubeSchedulerConfiguration",
            "percentageOfNodesToScore": 30,
            "profiles": [{"schedulerName": "a",
                          "plugins": {"score": {"disabled": [{"name": "ImageLocality"}]}}}]}"#,
    )
    .unwrap();
    assert_eq!(yaml, json);
    let bom = SchedulerConfiguration::from_bytes(
        format!("\u{feff}{HEADER}percentageOfNodesToScore: 30\nprofiles:\n- schedulerName: a\n  plugins:\n    score:\n      disabled:\n      - name: ImageLocality\n").as_bytes(),
    )
    .unwrap();
    assert_eq!(bom, yaml);
}

#[test]
fn a_configuration_file_names_itself_in_errors() {
    let dir = std::env::temp_dir().join(format!("sched-core-config-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("scheduler.yaml");
    std::fs::write(&path, format!("{HEADER}parallelism: 0\n")).unwrap();
    let err = SchedulerConfiguration::from_file(&path).unwrap_err();
    assert_eq!(err.file(), Some(path.display().to_string().as_str()));
    assert!(err.to_string().ends_with(
        "scheduler.yaml: parallelism: Invalid value: 0: should be an integer value greater than zero"
    ));
    std::fs::remove_dir_all(&dir).unwrap();
}

// ---------------------------------------------------------------------------------------
// Merging with the defaults and multiPoint expansion (kube's mergePluginSet and
// expandMultiPointPlugins)

#[test]
fn disabling_a_default_in_multi_point_removes_it_everywhere() {
    let p = profile(
        "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: TaintToleration\n",
    );
    assert!(!filters(&p).contains(&"TaintToleration"));
    assert!(!scores(&p).iter().any(|(n, _)| *n == "TaintToleration"));
    assert_eq!(filters(&p).len(), DEFAULT_FILTERS.len() - 1);
}

#[test]
fn disabling_every_score_plugin_keeps_the_filters() {
    let p = profile("profiles:\n- plugins:\n    score:\n      disabled:\n      - name: '*'\n");
    assert_eq!(filters(&p), DEFAULT_FILTERS);
    assert!(scores(&p).is_empty());
}

#[test]
fn a_default_listed_again_replaces_it_in_place_weight_included() {
    let p = profile(
        "profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: NodeAffinity\n        weight: 5\n      - name: TaintToleration\n",
    );
    let mut want = DEFAULT_SCORES.to_vec();
    want[0].1 = 1; // no weight given: kube's nil, then 1
    want[1].1 = 5;
    assert_eq!(scores(&p), want);
    assert_eq!(filters(&p), DEFAULT_FILTERS);
}

#[test]
fn a_plugin_configured_at_the_score_point_comes_first_with_its_weight() {
    let p = profile(
        "profiles:\n- plugins:\n    score:\n      enabled:\n      - name: ImageLocality\n        weight: 7\n",
    );
    let mut want = vec![("ImageLocality", 7)];
    want.extend(DEFAULT_SCORES[..6].iter().copied());
    assert_eq!(scores(&p), want);
}

#[test]
fn custom_plugins_are_enabled_by_name() {
    let registry = Registry::v1_34().filter("NotNode1", |_| {
        Ok(BoxPredicate::new(predicate_fn("NotNode1", |_, n| {
            if n.name() == "node-1" {
                Err(Reason::Custom(1))
            } else {
                Ok(())
            }
        })))
    });
    let c =
        config("profiles:\n- plugins:\n    multiPoint:\n      enabled:\n      - name: NotNode1\n");
    let profiles = c.compile(&registry).unwrap();
    let p = profiles.get("default-scheduler").unwrap();
    assert_eq!(p.predicate_names().last(), Some("NotNode1"));
    let snapshot = nodes(&[node("node-0", "4", "8Gi"), node("node-1", "8", "16Gi")]);
    let placed = p
        .schedule(&mut p.create_cache(), &pod("web", "1", "1Gi"), &snapshot)
        .unwrap();
    assert_eq!(placed.node, "node-0");
}

#[test]
fn framework_errors_are_kubes() {
    let got = compile_problems(
        "profiles:\n- plugins:\n    filter:\n      enabled:\n      - name: ImageLocality\n      - name: NodePorts\n      - name: NodePorts\n    score:\n      enabled:\n      - name: SelectorSpread\n",
        &Registry::v1_34(),
    );
    assert_eq!(
        got,
        [
            r#"profiles[0].plugins.filter: plugin "ImageLocality" does not extend FilterPlugin"#,
            r#"profiles[0].plugins.filter: plugin "NodePorts" already registered as FilterPlugin"#,
            r#"profiles[0].plugins.score: ScorePlugin "SelectorSpread" does not exist (a plugin of older kube-scheduler versions; the legacy Policy path has it)"#,
        ]
    );
    let got = compile_problems(
        "profiles:\n- schedulerName: x\n  plugins:\n    queueSort:\n      disabled:\n      - name: '*'\n    bind:\n      disabled:\n      - name: DefaultBinder\n",
        &Registry::v1_34(),
    );
    assert_eq!(
        got,
        [
            r#"profiles[0].plugins: only one queue sort plugin required for profile with scheduler name "x", but got 0"#,
            r#"profiles[0].plugins: at least one bind plugin is needed for profile with scheduler name "x""#,
        ]
    );
}

#[test]
fn extenders_are_read_with_every_field() {
    let c = config(
        r#"extenders:
- urlPrefix: https://127.0.0.1:8888/scheduler
  filterVerb: filter
  preemptVerb: preempt
  prioritizeVerb: prioritize
  weight: 3
  bindVerb: bind
  enableHTTPS: true
  tlsConfig:
    insecure: true
    caData: LS0tLS1CRUdJTg==
    certFile: /etc/cert.pem
    keyFile: /etc/key.pem
  httpTimeout: 1m30s
  nodeCacheCapable: true
  managedResources:
  - name: example.com/gpu
    ignoredByScheduler: true
  ignorable: true
- urlPrefix: http://127.0.0.1:9999
"#,
    );
    assert_eq!(c.extenders.len(), 2);
    let e = &c.extenders[0];
    assert_eq!(e.url_prefix, "https://127.0.0.1:8888/scheduler");
    assert_eq!(
        (
            e.filter_verb.as_str(),
            e.preempt_verb.as_str(),
            e.prioritize_verb.as_str(),
            e.bind_verb.as_str()
        ),
        ("filter", "preempt", "prioritize", "bind")
    );
    assert_eq!(e.weight, 3);
    assert!(e.enable_https && e.node_cache_capable && e.ignorable);
    assert_eq!(e.http_timeout, std::time::Duration::from_secs(90));
    let tls = e.tls_config.as_ref().expect("tlsConfig");
    assert!(tls.insecure);
    assert_eq!(tls.ca_data, b"-----BEGIN");
    assert_eq!(
        (tls.cert_file.as_str(), tls.key_file.as_str()),
        ("/etc/cert.pem", "/etc/key.pem")
    );
    assert_eq!(e.managed_resource_names(), ["example.com/gpu"]);
    assert!(e.managed_resources[0].ignored_by_scheduler);
    // Nothing set: kube leaves the fields zero; the HTTP client's timeout is 5 seconds.
    let d = &c.extenders[1];
    assert_eq!(d.http_timeout, std::time::Duration::ZERO);
    assert_eq!(d.effective_timeout(), std::time::Duration::from_secs(5));
    assert!(d.filter_verb.is_empty() && d.tls_config.is_none() && !d.ignorable);
    // A bare profile would not call them: compiling refuses, the engine runs them.
    let got = compile_problems_of(&c);
    assert_eq!(
        got,
        [
            "extenders: not supported by sched-core: a profile alone does not call extenders; run them with scheduler::Scheduler::from_config, or clear `extenders` to build the profiles alone"
        ]
    );
    let snapshot = Snapshot::from_objects(Vec::new(), Vec::new()).unwrap();
    let mut runnable = c.clone();
    runnable.extenders[0].tls_config = None; // its CA data is not a certificate
    let s =
        sched_core::scheduler::Scheduler::from_config(&runnable, &Registry::v1_34(), snapshot, 1);
    #[cfg(feature = "http-extender")]
    assert_eq!(s.unwrap().extenders().count(), 2);
    #[cfg(not(feature = "http-extender"))]
    assert_eq!(
        s.unwrap_err().to_string(),
        "extenders: not supported by sched-core: calling HTTP extenders needs sched-core's `http-extender` feature"
    );
    let mut alone = c.clone();
    alone.extenders.clear();
    assert!(alone.compile(&Registry::v1_34()).is_ok());
}

fn compile_problems_of(c: &SchedulerConfiguration) -> Vec<String> {
    match c.compile(&Registry::v1_34()) {
        Ok(_) => Vec::new(),
        Err(e) => e.problems().iter().map(ToString::to_string).collect(),
    }
}

#[test]
fn resources_extenders_manage_for_the_scheduler_are_ignored_by_node_resources_fit() {
    let c = config(
        r#"profiles:
- schedulerName: a
- schedulerName: b
  pluginConfig:
  - name: NodeResourcesFit
    args: {ignoredResources: [example.com/other]}
extenders:
- urlPrefix: http://127.0.0.1:1
  managedResources:
  - {name: example.com/gpu, ignoredByScheduler: true}
  - {name: example.com/fpga}
"#,
    );
    // kube's buildExtenders replaces every profile's ignoredResources.
    for p in &c.profiles {
        match p.args("NodeResourcesFit") {
            Some(PluginArgs::NodeResourcesFit(a)) => {
                assert_eq!(
                    a.ignored_resources,
                    ["example.com/gpu"],
                    "{}",
                    p.scheduler_name
                )
            }
            other => panic!("{other:?}"),
        }
    }
    // A pod asking for the ignored resource fits a node without it; the other one does not.
    let mut c = c;
    c.extenders.clear();
    let profiles = c.compile(&Registry::v1_34()).unwrap();
    let node: Node = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "n"},
        "status": {"allocatable": {"cpu": "1", "memory": "1Gi", "pods": "10"}}
    }))
    .unwrap();
    let snapshot = Snapshot::from_objects(vec![node], Vec::new()).unwrap();
    let asking = |resource: &str| -> Pod {
        serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "default"},
            "spec": {"schedulerName": "a", "containers": [{"name": "c",
                "resources": {"requests": {resource: "1"}, "limits": {resource: "1"}}}]}
        }))
        .unwrap()
    };
    let profile = profiles.for_pod(&asking("example.com/gpu")).unwrap();
    let mut cache = profile.create_cache();
    assert!(
        profile
            .schedule(&mut cache, &asking("example.com/gpu"), &snapshot)
            .is_ok()
    );
    assert!(
        profile
            .schedule(&mut cache, &asking("example.com/fpga"), &snapshot)
            .is_err()
    );
}

#[test]
fn extender_durations_and_tls_data_are_checked() {
    let got = problems(&format!(
        "{HEADER}extenders:\n- urlPrefix: http://x\n  httpTimeout: '5'\n  tlsConfig: {{caData: '%%%', serverNam: x}}\n- urlPrefix: http://y\n  httpTimeout: '-1s'\n  managedResources: [{{name: example.com/a}}, {{name: example.com/a}}]\n"
    ));
    assert_eq!(
        got,
        [
            r#"extenders[0].httpTimeout: Invalid value: "5": not a duration (Go's syntax, such as "5s" or "1m30s", not negative)"#,
            r#"extenders[0].tlsConfig.serverNam: unknown field (did you mean "serverName"?)"#,
            "extenders[0].tlsConfig.caData: Invalid value: (base64 data): not base64: Invalid symbol 37, offset 0.",
            r#"extenders[1].httpTimeout: Invalid value: "-1s": not a duration (Go's syntax, such as "5s" or "1m30s", not negative)"#,
            r#"extenders[1].managedResources[1].name: Invalid value: "example.com/a": duplicate extender managed resource name"#,
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Validation: kube's rules and messages, every problem at once

#[test]
fn every_problem_is_reported_with_kubes_wording() {
    let text = format!(
        "{HEADER}parallelism: 0
percentageOfNodesToScore: 120
podInitialBackoffSeconds: 5
podMaxBackoffSeconds: 2
profiles:
- schedulerName: a
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: Fastest
        resources:
        - {{name: cpu, weight: 200}}
  - name: NodeResourcesFit
  - name: InterPodAffinity
    args: {{hardPodAffinityWeight: 101}}
- schedulerName: a
  percentageOfNodesToScore: -1
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints:
      - {{maxSkew: 0, topologyKey: '', whenUnsatisfiable: Sometimes, labelSelector: {{}}}}
  - name: NodeResourcesBalancedAllocation
    args: {{resources: [{{name: cpu, weight: 2}}, {{name: cpu, weight: 1}}]}}
  - name: DefaultPreemption
    args: {{minCandidateNodesPercentage: 0, minCandidateNodesAbsolute: 0}}
extenders:
- {{urlPrefix: 'http://x', prioritizeVerb: prioritize, weight: 0, bindVerb: b}}
- {{urlPrefix: 'http://y', bindVerb: b, managedResources: [{{name: cpu}}]}}
"
    );
    let got = problems(&text);
    let want = [
        "parallelism: Invalid value: 0: should be an integer value greater than zero",
        "percentageOfNodesToScore: Invalid value: 120: not in valid range [0-100]",
        r#"profiles[0].pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Fastest": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio""#,
        "profiles[0].pluginConfig[0].args.scoringStrategy.resources[0].weight: Invalid value: 200: resource weight of cpu not in valid range (0, 100]",
        r#"profiles[0].pluginConfig[1]: Duplicate value: "NodeResourcesFit""#,
        "profiles[0].pluginConfig[2].args.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]",
        "profiles[1].percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]",
        "profiles[1].pluginConfig[0].args.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)",
        "profiles[1].pluginConfig[0].args.defaultConstraints[0].topologyKey: Required value: can not be empty",
        r#"profiles[1].pluginConfig[0].args.defaultConstraints[0].whenUnsatisfiable: Unsupported value: "Sometimes": supported values: "DoNotSchedule", "ScheduleAnyway""#,
        "profiles[1].pluginConfig[0].args.defaultConstraints[0].labelSelector: Forbidden: constraint must not define a selector, as they deduced for each pod",
        "profiles[1].pluginConfig[1].args.resources[0].weight: Invalid value: 2: must be 1",
        r#"profiles[1].pluginConfig[1].args.resources[1].name: Duplicate value: "cpu""#,
        "profiles[1].pluginConfig[2].args.minCandidateNodesPercentage: Invalid value: 0: cannot be zero at the same time as minCandidateNodesAbsolute",
        "profiles[1].pluginConfig[2].args.minCandidateNodesAbsolute: Invalid value: 0: cannot be zero at the same time as minCandidateNodesPercentage",
        r#"profiles[1].schedulerName: Duplicate value: "a""#,
        "podMaxBackoffSeconds: Invalid value: 2: must be greater than or equal to PodInitialBackoffSeconds",
        "extenders[0].weight: Invalid value: 0: must have a positive weight applied to it",
        r#"extenders[1].managedResources[0].name: Invalid value: "cpu": is an invalid extended resource name"#,
        r#"extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind"#,
    ];
    assert_eq!(got, want);
}

#[test]
fn unknown_fields_and_wrong_types_are_named_with_a_suggestion() {
    let got = problems(&format!(
        "{HEADER}parallelism: '16'\nprofiles:\n- schedulerNam: x\n  plugins:\n    Score: {{}}\n"
    ));
    assert_eq!(
        got,
        [
            "parallelism: expected an integer, found a string",
            r#"profiles[0].schedulerNam: unknown field (did you mean "schedulerName"?)"#,
            r#"profiles[0].plugins.Score: unknown field (did you mean "score"?)"#,
        ]
    );
}

#[test]
fn several_profiles_need_names() {
    let got = problems(&format!(
        "{HEADER}profiles:\n- schedulerName: a\n- plugins: {{}}\n- schedulerName: ''\n"
    ));
    assert_eq!(
        got,
        [
            "profiles[1].schedulerName: Required value",
            "profiles[2].schedulerName: Required value",
        ]
    );
}

#[test]
fn queue_sort_must_agree_across_profiles() {
    let got = problems(&format!(
        "{HEADER}profiles:\n- schedulerName: a\n- schedulerName: b\n  plugins:\n    queueSort:\n      disabled:\n      - name: '*'\n"
    ));
    assert_eq!(
        got,
        [
            r#"profiles[1].plugins.queueSort: Invalid value: {enabled: [], disabled: ["*"]}: queueSort must be the same for all profiles"#
        ]
    );
}

#[test]
fn other_documents_are_named_for_what_they_are() {
    let got = problems(r#"{"kind": "Policy", "apiVersion": "v1", "predicates": []}"#);
    assert_eq!(got.len(), 3, "{got:?}");
    assert_eq!(got[0], r#"predicates: unknown field"#);
    assert!(got[1].starts_with(r#"kind: Invalid value: "Policy": a legacy scheduler Policy"#));
    let got = problems(
        "apiVersion: kubescheduler.config.k8s.io/v1beta3\nkind: KubeSchedulerConfiguration\n",
    );
    assert_eq!(
        got,
        [
            r#"apiVersion: Invalid value: "kubescheduler.config.k8s.io/v1beta3": no longer served: kube-scheduler v1.34 reads kubescheduler.config.k8s.io/v1 only"#
        ]
    );
    let got = problems("profiles: [\n");
    assert!(got[0].starts_with("not valid YAML"), "{got:?}");
    let got = problems("{\"kind\": ");
    assert!(got[0].starts_with("not valid JSON"), "{got:?}");
}

#[test]
fn plugin_args_of_the_wrong_kind_are_refused() {
    let got = problems(&format!(
        "{HEADER}profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      kind: NodeAffinityArgs\n      apiVersion: kubescheduler.config.k8s.io/v1\n"
    ));
    assert_eq!(
        got,
        [
            r#"profiles[0].pluginConfig[0].args: Invalid value: kind "NodeAffinityArgs": has to match plugin args"#
        ]
    );
}

#[test]
fn added_affinity_is_checked_as_kube_parses_it() {
    let got = problems(&format!(
        "{HEADER}profiles:
- pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {{key: zone, operator: In, values: []}}
            - {{key: cores, operator: Gt, values: [many]}}
"
    ));
    assert_eq!(
        got,
        [
            "profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
            r#"profiles[0].pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[1].values[0]: Invalid value: "many": must be an integer"#,
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Profiles by scheduler name

#[test]
fn pods_pick_their_profile_by_scheduler_name() {
    let c = config("profiles:\n- schedulerName: default-scheduler\n- schedulerName: gpu\n");
    let profiles = c.compile(&Registry::v1_34()).unwrap();
    let mut p = pod("web", "1", "1Gi");
    assert!(std::ptr::eq(
        profiles.for_pod(&p).unwrap(),
        profiles.get("default-scheduler").unwrap()
    ));
    p.spec.scheduler_name = "gpu".into();
    assert!(std::ptr::eq(
        profiles.for_pod(&p).unwrap(),
        profiles.get("gpu").unwrap()
    ));
    p.spec.scheduler_name = "volcano".into();
    let err = profiles.for_pod(&p).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"pod default/web asks for scheduler "volcano", which no profile has (profiles: default-scheduler, gpu)"#
    );
}

#[test]
fn percentage_of_nodes_to_score_per_profile_or_global() {
    let c = config(
        "percentageOfNodesToScore: 50\nprofiles:\n- schedulerName: a\n- schedulerName: b\n  percentageOfNodesToScore: 100\n",
    );
    let profiles = c.compile(&Registry::v1_34()).unwrap();
    assert_eq!(
        profiles.get("a").unwrap().percentage_of_nodes_to_score(),
        50
    );
    assert_eq!(
        profiles.get("b").unwrap().percentage_of_nodes_to_score(),
        100
    );
}

// ---------------------------------------------------------------------------------------
// Each default plugin, through a configuration

fn node(name: &str, cpu: &str, memory: &str) -> Node {
    node_with(name, cpu, memory, serde_json::json!({}))
}

fn node_with(name: &str, cpu: &str, memory: &str, extra: serde_json::Value) -> Node {
    let mut v = serde_json::json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {},
        "status": {"allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
                   "conditions": [{"type": "Ready", "status": "True"}]}
    });
    merge_json(&mut v, extra);
    serde_json::from_value(v).unwrap()
}

fn merge_json(into: &mut serde_json::Value, from: serde_json::Value) {
    match (into, from) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                merge_json(a.entry(k).or_insert(serde_json::Value::Null), v);
            }
        }
        (a, b) => *a = b,
    }
}

fn pod(name: &str, cpu: &str, memory: &str) -> Pod {
    pod_with(name, cpu, memory, serde_json::json!({}))
}

fn pod_with(name: &str, cpu: &str, memory: &str, extra: serde_json::Value) -> Pod {
    let mut v = serde_json::json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
        "spec": {"containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10",
                                 "resources": {"requests": {"cpu": cpu, "memory": memory}}}]}
    });
    merge_json(&mut v, extra);
    parse_pod(&v.to_string()).unwrap()
}

fn nodes(nodes: &[Node]) -> Snapshot {
    Snapshot::from_objects(nodes.to_vec(), vec![]).unwrap()
}

/// Each feasible node's per-plugin (unweighted) scores, by node name.
fn score_table(
    p: &Profile,
    pod: &Pod,
    snapshot: &Snapshot,
) -> BTreeMap<String, Vec<(String, i64)>> {
    let mut cache = p.create_cache();
    p.schedule(&mut cache, pod, snapshot).unwrap();
    let table = p.last_scores(&cache);
    let names: Vec<String> = table
        .priorities()
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    (0..table.len())
        .map(|i| {
            let (idx, _, per) = table.row(i);
            let name = snapshot.node(idx).info().name().to_string();
            (name, names.iter().cloned().zip(per).collect())
        })
        .collect()
}

fn plugin_score(table: &BTreeMap<String, Vec<(String, i64)>>, node: &str, plugin: &str) -> i64 {
    table[node]
        .iter()
        .find(|(n, _)| n == plugin)
        .unwrap_or_else(|| panic!("{plugin} not scored"))
        .1
}

fn fit_error(p: &Profile, pod: &Pod, snapshot: &Snapshot) -> String {
    match p.schedule(&mut p.create_cache(), pod, snapshot) {
        Err(ScheduleError::Unschedulable(e)) => e.to_string(),
        other => panic!("expected a fit error, got {other:?}"),
    }
}

#[test]
fn node_resources_fit_scores_by_its_strategy() {
    // "big" has 8 CPU, "small" 4: the pod's 1 CPU leaves more free on "big".
    let snapshot = nodes(&[node("big", "8", "16Gi"), node("small", "4", "8Gi")]);
    let p = pod("web", "1", "1Gi");
    let least = profile("");
    assert_eq!(
        least
            .schedule(&mut least.create_cache(), &p, &snapshot)
            .unwrap()
            .node,
        "big"
    );
    let t = score_table(&least, &p, &snapshot);
    // LeastAllocated: ((8000-1000)*100/8000 + (16-1)*100/16) / 2 = (87 + 93) / 2 = 90.
    assert_eq!(plugin_score(&t, "big", "NodeResourcesFit"), 90);
    assert_eq!(plugin_score(&t, "small", "NodeResourcesFit"), (75 + 87) / 2);
    let most = profile(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n",
    );
    let t = score_table(&most, &p, &snapshot);
    assert_eq!(plugin_score(&t, "big", "NodeResourcesFit"), (12 + 6) / 2);
    assert_eq!(plugin_score(&t, "small", "NodeResourcesFit"), (25 + 12) / 2);
    assert_eq!(
        most.schedule(&mut most.create_cache(), &p, &snapshot)
            .unwrap()
            .node,
        "small"
    );
    // Weights: memory only.
    let weighted = profile(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: MostAllocated\n        resources:\n        - {name: memory, weight: 3}\n",
    );
    let t = score_table(&weighted, &p, &snapshot);
    assert_eq!(plugin_score(&t, "small", "NodeResourcesFit"), 12);
    let ratio = profile(
        "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      scoringStrategy:\n        type: RequestedToCapacityRatio\n        requestedToCapacityRatio:\n          shape:\n          - {utilization: 0, score: 0}\n          - {utilization: 100, score: 10}\n",
    );
    let t = score_table(&ratio, &p, &snapshot);
    // Utilization 12.5% and 6.25% on "big": round(mean(12.5, 6.25)) = 9; "small" 25%, 12.5%.
    assert_eq!(plugin_score(&t, "big", "NodeResourcesFit"), 9);
    assert_eq!(plugin_score(&t, "small", "NodeResourcesFit"), 19);
}

#[test]
fn node_resources_fit_ignores_configured_extended_resources() {
    let snapshot = nodes(&[node("n", "4", "8Gi")]);
    let p = pod_with(
        "gpu-job",
        "1",
        "1Gi",
        serde_json::json!({"spec": {"containers": [{"name": "c", "image": "cuda",
            "resources": {"requests": {"cpu": "1", "memory": "1Gi", "example.com/fpga": "1"}}}]}}),
    );
    let plain = profile("");
    assert_eq!(
        fit_error(&plain, &p, &snapshot),
        "0/1 nodes are available: 1 Insufficient example.com/fpga."
    );
    for args in [
        "ignoredResources: [example.com/fpga]",
        "ignoredResourceGroups: [example.com]",
    ] {
        let ignoring = profile(&format!(
            "profiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args:\n      {args}\n"
        ));
        let placed = ignoring.schedule(&mut ignoring.create_cache(), &p, &snapshot);
        assert_eq!(placed.unwrap().node, "n", "{args}");
    }
}

#[test]
fn balanced_allocation_uses_actual_requests_and_skips_best_effort_pods() {
    // "a": 4 CPU / 8Gi with a pod requesting 2 CPU and nothing else;
    // "b": 4 CPU / 8Gi, empty.
    let nodes = vec![node("a", "4", "8Gi"), node("b", "4", "8Gi")];
    let running = vec![pod_with(
        "batch",
        "2",
        "0",
        serde_json::json!({"spec": {"nodeName": "a"}}),
    )];
    let snapshot = Snapshot::from_objects(nodes, running).unwrap();
    let p = profile("");
    let t = score_table(&p, &pod("web", "1", "2Gi"), &snapshot);
    // a: cpu 3/4 = 0.75, memory 2/8 = 0.25: (1 - 0.25) * 100 = 75.
    // b: cpu 1/4, memory 2/8: 100.
    assert_eq!(plugin_score(&t, "a", "NodeResourcesBalancedAllocation"), 75);
    assert_eq!(
        plugin_score(&t, "b", "NodeResourcesBalancedAllocation"),
        100
    );
    // A best-effort pod skips the plugin: 0 everywhere.
    let mut best_effort = pod("be", "0", "0");
    best_effort.spec.containers[0].resources.requests.clear();
    let t = score_table(&p, &best_effort, &snapshot);
    assert_eq!(plugin_score(&t, "a", "NodeResourcesBalancedAllocation"), 0);
    assert_eq!(plugin_score(&t, "b", "NodeResourcesBalancedAllocation"), 0);
}

#[test]
fn added_node_affinity_applies_to_every_pod_of_the_profile() {
    let snapshot = nodes(&[
        node_with(
            "gpu-a",
            "8",
            "16Gi",
            serde_json::json!({"metadata": {"labels": {"pool": "gpu", "disk": "ssd"}}}),
        ),
        node_with(
            "gpu-b",
            "8",
            "16Gi",
            serde_json::json!({"metadata": {"labels": {"pool": "gpu"}}}),
        ),
        node("general", "8", "16Gi"),
    ]);
    let p = profile(
        "profiles:
- pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms:
          - matchExpressions:
            - {key: pool, operator: In, values: [gpu]}
        preferredDuringSchedulingIgnoredDuringExecution:
        - weight: 10
          preference:
            matchExpressions:
            - {key: disk, operator: In, values: [ssd]}
",
    );
    let web = pod("web", "1", "1Gi");
    let t = score_table(&p, &web, &snapshot);
    assert_eq!(t.keys().collect::<Vec<_>>(), ["gpu-a", "gpu-b"]);
    assert_eq!(plugin_score(&t, "gpu-a", "NodeAffinity"), 100);
    assert_eq!(plugin_score(&t, "gpu-b", "NodeAffinity"), 0);
    // The pod's own selector and the added one both apply; each has its reason.
    let picky = pod_with(
        "picky",
        "1",
        "1Gi",
        serde_json::json!({"spec": {"nodeSelector": {"disk": "hdd"}}}),
    );
    assert_eq!(
        fit_error(&p, &picky, &snapshot),
        "0/3 nodes are available: 1 node(s) didn't match scheduler-enforced node affinity, 2 node(s) didn't match Pod's node affinity/selector."
    );
}

#[test]
fn taints_filter_and_score() {
    let snapshot = nodes(&[
        node_with(
            "tainted",
            "8",
            "16Gi",
            serde_json::json!({"spec": {"taints": [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}]}}),
        ),
        node_with(
            "soft",
            "8",
            "16Gi",
            serde_json::json!({"spec": {"taints": [{"key": "spot", "value": "true", "effect": "PreferNoSchedule"}]}}),
        ),
        node("plain", "8", "16Gi"),
    ]);
    let p = profile("");
    let t = score_table(&p, &pod("web", "1", "1Gi"), &snapshot);
    assert_eq!(t.keys().collect::<Vec<_>>(), ["plain", "soft"]);
    assert_eq!(plugin_score(&t, "plain", "TaintToleration"), 100);
    assert_eq!(plugin_score(&t, "soft", "TaintToleration"), 0);
    let cordoned = nodes(&[node_with(
        "c",
        "8",
        "16Gi",
        serde_json::json!({"spec": {"unschedulable": true}}),
    )]);
    assert_eq!(
        fit_error(&p, &pod("web", "1", "1Gi"), &cordoned),
        "0/1 nodes are available: 1 node(s) were unschedulable."
    );
}

#[test]
fn node_name_and_ports_filter() {
    let snapshot = Snapshot::from_objects(
        vec![node("a", "8", "16Gi"), node("b", "8", "16Gi")],
        vec![pod_with(
            "proxy",
            "100m",
            "64Mi",
            serde_json::json!({"spec": {"nodeName": "b", "containers": [{"name": "c", "image": "envoy",
                "ports": [{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}]}]}}),
        )],
    )
    .unwrap();
    let p = profile("");
    let pinned = pod_with(
        "pinned",
        "1",
        "1Gi",
        serde_json::json!({"spec": {"nodeName": "a"}}),
    );
    let t = score_table(&p, &pinned, &snapshot);
    assert_eq!(t.keys().collect::<Vec<_>>(), ["a"]);
    let ported = pod_with(
        "ported",
        "1",
        "1Gi",
        serde_json::json!({"spec": {"nodeName": "b", "containers": [{"name": "c", "image": "envoy",
            "ports": [{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}]}]}}),
    );
    assert_eq!(
        fit_error(&p, &ported, &snapshot),
        "0/2 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 1 node(s) didn't match the requested node name."
    );
}

fn zoned(name: &str, zone: &str) -> Node {
    node_with(
        name,
        "8",
        "16Gi",
        serde_json::json!({"metadata": {"labels": {"topology.kubernetes.io/zone": zone}}}),
    )
}

#[test]
fn pod_topology_spread_uses_the_configured_default_constraints() {
    // Two web pods in zone a (on a1 and a2), none in zone b; a Service selects app=web.
    let running: Vec<Pod> = ["a1", "a2"]
        .iter()
        .enumerate()
        .map(|(i, n)| {
            pod_with(
                &format!("web-{i}"),
                "100m",
                "64Mi",
                serde_json::json!({"metadata": {"labels": {"app": "web"}}, "spec": {"nodeName": n}}),
            )
        })
        .collect();
    let mut snapshot = Snapshot::from_objects(
        vec![
            zoned("a1", "a"),
            zoned("a2", "a"),
            zoned("b1", "b"),
            zoned("b2", "b"),
        ],
        running,
    )
    .unwrap();
    snapshot.set_workloads(vec![Workload {
        kind: WorkloadKind::Service,
        namespace: "default".into(),
        name: "web".into(),
        selector: serde_json::from_value(serde_json::json!({"matchLabels": {"app": "web"}}))
            .unwrap(),
    }]);
    let incoming = pod_with(
        "web-9",
        "100m",
        "64Mi",
        serde_json::json!({"metadata": {"labels": {"app": "web"}}}),
    );
    // kube's system defaults (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway) favour zone b.
    let system = score_table(&profile(""), &incoming, &snapshot);
    let spread =
        |t: &BTreeMap<String, Vec<(String, i64)>>, n: &str| plugin_score(t, n, "PodTopologySpread");
    assert!(spread(&system, "b1") > spread(&system, "a1"));
    // A List default on the hostname only: every node with a web pod scores lower, zone b's
    // empty nodes equal.
    let listed = profile(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n      defaultConstraints:\n      - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}\n",
    );
    let t = score_table(&listed, &incoming, &snapshot);
    assert_eq!(spread(&t, "b1"), spread(&t, "b2"));
    assert_eq!(spread(&t, "a1"), spread(&t, "a2"));
    assert!(spread(&t, "b1") > spread(&t, "a1"));
    // An empty List: no defaults, the plugin skips the pod (0 everywhere in v1.34).
    let none = profile(
        "profiles:\n- pluginConfig:\n  - name: PodTopologySpread\n    args:\n      defaultingType: List\n",
    );
    let t = score_table(&none, &incoming, &snapshot);
    assert!(["a1", "a2", "b1", "b2"].iter().all(|n| spread(&t, n) == 0));
    // The pod's own DoNotSchedule constraint filters.
    let hard = pod_with(
        "web-9",
        "100m",
        "64Mi",
        serde_json::json!({"metadata": {"labels": {"app": "web"}}, "spec": {"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app": "web"}}}]}}),
    );
    let t = score_table(&profile(""), &hard, &snapshot);
    assert_eq!(t.keys().collect::<Vec<_>>(), ["b1", "b2"]);
}

#[test]
fn inter_pod_affinity_can_ignore_existing_pods_preferred_terms() {
    let cache_pod = pod_with(
        "cache",
        "100m",
        "64Mi",
        serde_json::json!({"spec": {"nodeName": "a", "affinity": {"podAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [{"weight": 50, "podAffinityTerm": {
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "web"}}}}]}}}}),
    );
    let snapshot = Snapshot::from_objects(
        vec![node("a", "8", "16Gi"), node("b", "8", "16Gi")],
        vec![cache_pod],
    )
    .unwrap();
    let web = pod("web", "1", "1Gi");
    let t = score_table(&profile(""), &web, &snapshot);
    assert_eq!(plugin_score(&t, "a", "InterPodAffinity"), 100);
    assert_eq!(plugin_score(&t, "b", "InterPodAffinity"), 0);
    let ignoring = profile(
        "profiles:\n- pluginConfig:\n  - name: InterPodAffinity\n    args:\n      ignorePreferredTermsOfExistingPods: true\n",
    );
    let t = score_table(&ignoring, &web, &snapshot);
    assert_eq!(plugin_score(&t, "a", "InterPodAffinity"), 0);
    assert_eq!(plugin_score(&t, "b", "InterPodAffinity"), 0);
}

#[test]
fn image_locality_favours_nodes_with_the_images() {
    let snapshot = nodes(&[
        node_with(
            "warm",
            "8",
            "16Gi",
            serde_json::json!({"status": {"images": [
            {"names": ["registry.k8s.io/pause:3.10"], "sizeBytes": 500_000_000}]}}),
        ),
        node("cold", "8", "16Gi"),
    ]);
    let t = score_table(&profile(""), &pod("web", "1", "1Gi"), &snapshot);
    assert!(plugin_score(&t, "warm", "ImageLocality") > 0);
    assert_eq!(plugin_score(&t, "cold", "ImageLocality"), 0);
}

#[test]
fn volume_plugins_read_the_snapshots_storage_objects() {
    let mut a = node("a", "8", "16Gi");
    a.metadata
        .labels
        .insert("topology.kubernetes.io/zone".into(), "z1".into());
    let mut b = node("b", "8", "16Gi");
    b.metadata
        .labels
        .insert("topology.kubernetes.io/zone".into(), "z2".into());
    let mut snapshot = nodes(&[a, b]);
    let p = pod_with(
        "db-0",
        "1",
        "1Gi",
        serde_json::json!({"metadata": {"namespace": "default"}, "spec": {"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}]}}),
    );
    let profile_default = profile("");
    // The claim does not exist: the pod is rejected before any node is filtered, with
    // kube's text naming the claim.
    let err = profile_default
        .schedule(&mut profile_default.create_cache(), &p, &snapshot)
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "0/2 nodes are available: persistentvolumeclaim \"data-db-0\" not found."
    );
    // Bound to a PV in zone z2 (the PV controller's binding complete): only node b.
    let objects = sched_core::model::load_bytes(
        "storage.json",
        br#"{"kind": "List", "items": [
            {"kind": "PersistentVolumeClaim", "metadata": {"name": "data-db-0", "namespace": "default",
              "annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
             "spec": {"volumeName": "pv-1", "storageClassName": "ssd"}},
            {"kind": "PersistentVolume", "metadata": {"name": "pv-1", "labels": {"topology.kubernetes.io/zone": "z2"}},
             "spec": {"storageClassName": "ssd", "capacity": {"storage": "10Gi"}}}]}"#,
        sched_core::model::Role::Mixed,
    )
    .unwrap();
    snapshot.set_storage(objects.storage);
    for _ in 0..5 {
        assert_eq!(
            profile_default
                .schedule(&mut profile_default.create_cache(), &p, &snapshot)
                .unwrap()
                .node,
            "b"
        );
    }
    // A profile without the volume plugins ignores the volume (the user chose so).
    let without = profile(
        "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: NodeVolumeLimits\n      - name: VolumeBinding\n      - name: VolumeZone\n      - name: VolumeRestrictions\n",
    );
    snapshot.set_storage(Default::default());
    assert!(
        without
            .schedule(&mut without.create_cache(), &p, &snapshot)
            .is_ok()
    );
}

#[test]
fn gated_pods_are_never_placed_and_missing_claims_reject_the_pod() {
    let snapshot = nodes(&[node("n", "8", "16Gi")]);
    let p = profile("");
    let gated = pod_with(
        "gated",
        "1",
        "1Gi",
        serde_json::json!({"spec": {"schedulingGates": [{"name": "example.com/quota"}]}}),
    );
    assert!(matches!(
        p.schedule(&mut p.create_cache(), &gated, &snapshot),
        Err(ScheduleError::SchedulingGated { .. })
    ));
    let claims = pod_with(
        "dra",
        "1",
        "1Gi",
        serde_json::json!({"spec": {"resourceClaims": [{"name": "gpu", "resourceClaimName": "gpu-claim"}]}}),
    );
    // The default profile runs DynamicResources: a claim the snapshot does not have keeps
    // the pod out at PreEnqueue, with kube's text.
    match p.schedule(&mut p.create_cache(), &claims, &snapshot) {
        Err(ScheduleError::PreEnqueue {
            plugin, message, ..
        }) => {
            assert_eq!(plugin, "DynamicResources");
            assert_eq!(
                message,
                "could not find ResourceClaim \"default/gpu-claim\""
            );
        }
        other => panic!("{other:?}"),
    }
    // A profile without it refuses the pod rather than placing it without its devices.
    let without = profile(
        "profiles:\n- plugins:\n    multiPoint:\n      disabled:\n      - name: DynamicResources\n",
    );
    assert!(matches!(
        without.schedule(&mut without.create_cache(), &claims, &snapshot),
        Err(ScheduleError::Unsupported { .. })
    ));
}

#[test]
fn problem_kinds_are_typed() {
    let err = SchedulerConfiguration::from_text(&format!("{HEADER}parallelism: -2\n")).unwrap_err();
    assert!(matches!(
        err.problems()[0].kind(),
        ProblemKind::Invalid { value, .. } if value == "-2"
    ));
    assert_eq!(err.problems()[0].path(), "parallelism");
}

#[test]
fn the_example_configuration_compiles() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../examples/data/scheduler-config.yaml"
    );
    let c = SchedulerConfiguration::from_file(path).unwrap();
    let profiles = c.compile(&Registry::v1_34()).unwrap();
    assert_eq!(
        profiles.names().collect::<Vec<_>>(),
        ["default-scheduler", "bin-packing"]
    );
    let packing = profiles.get("bin-packing").unwrap();
    assert_eq!(
        packing.priority_weights().collect::<Vec<_>>(),
        [
            ("TaintToleration", 3),
            ("NodeAffinity", 2),
            ("NodeResourcesFit", 1),
            ("PodTopologySpread", 2),
            ("InterPodAffinity", 2)
        ]
    );
}

#[test]
fn namespace_selectors_read_the_snapshots_namespaces() {
    let db = pod_with(
        "db",
        "100m",
        "64Mi",
        serde_json::json!({"metadata": {"namespace": "payments"}, "spec": {"nodeName": "b"}}),
    );
    let mut snapshot = Snapshot::from_objects(
        vec![node("a", "8", "16Gi"), node("b", "8", "16Gi")],
        vec![db],
    )
    .unwrap();
    let web = pod_with(
        "web",
        "1",
        "1Gi",
        serde_json::json!({"spec": {"affinity": {"podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {"app": "db"}},
                "namespaceSelector": {"matchLabels": {"team": "payments"}}}]}}}}),
    );
    let p = profile("");
    // No Namespace objects: the selector selects no namespace, so no pod matches.
    assert_eq!(
        fit_error(&p, &web, &snapshot),
        "0/2 nodes are available: 2 node(s) didn't match pod affinity rules."
    );
    let namespaces: Vec<Namespace> = serde_json::from_value(serde_json::json!([
        {"metadata": {"name": "payments", "labels": {"team": "payments"}}},
        {"metadata": {"name": "default"}}
    ]))
    .unwrap();
    let mut labels = NamespaceLabels::new();
    labels.extend_from(&namespaces);
    snapshot.set_namespace_labels(labels);
    let placed = p.schedule(&mut p.create_cache(), &web, &snapshot).unwrap();
    assert_eq!(placed.node, "b");
}
