//! kube's PreFilter in a profile: the node sets predicates narrow a pod to (kube's
//! `PreFilterResult`, kind 3: NodeAffinity's `matchFields` on `metadata.name`) and rejections
//! of the whole pod before any node is filtered (kind 5: a missing claim, an unbound
//! `Immediate` claim), on the fast path and the plugin path alike.

mod common;

use std::collections::BTreeSet;

use common::{BuildWorker, Worker};
use sched_core::config::{Registry, SchedulerConfiguration};
use sched_core::framework::{
    CycleContext, PluginError, Predicate, Prepared, Reason, VolumeProblem, predicate_fn,
};
use sched_core::model::{
    Node, PersistentVolumeClaim, Pod, StorageClass, StorageObjects, parse_node, parse_pod,
};
use sched_core::policy::Policy;
use sched_core::profile::{Profile, ScheduleError};
use sched_core::snapshot::{NodeRef, Snapshot};
use serde_json::json;

fn node(name: &str, cordoned: bool) -> Node {
    parse_node(
        &json!({
            "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
            "spec": {"unschedulable": cordoned},
            "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
        })
        .to_string(),
    )
    .unwrap()
}

fn pod(name: &str, spec: serde_json::Value) -> Pod {
    let mut spec = spec;
    spec["containers"] = json!([{"name": "c", "resources": {"requests": {"cpu": "100m"}}}]);
    parse_pod(
        &json!({
            "kind": "Pod",
            "metadata": {"name": name, "namespace": "default"},
            "spec": spec
        })
        .to_string(),
    )
    .unwrap()
}

/// A pod whose required node affinity names nodes with `matchFields` (as a DaemonSet's does).
fn pinned(names: &[&str]) -> Pod {
    pod(
        "pinned",
        json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [
                {"key": "metadata.name", "operator": "In", "values": names}
            ]}]
        }}}}),
    )
}

fn with_claim(claim: &str) -> Pod {
    pod(
        "with-claim",
        json!({"volumes": [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]}),
    )
}

/// Three nodes, `node-b` cordoned when asked.
fn cluster(cordon_b: bool) -> Snapshot {
    Snapshot::from_objects(
        vec![
            node("node-a", false),
            node("node-b", cordon_b),
            node("node-c", false),
        ],
        vec![],
    )
    .unwrap()
}

/// kube-scheduler v1.34's default profile, every node scored.
fn v1_34(fast_path: bool) -> Worker {
    let (_, builder) = SchedulerConfiguration::v1_34_default()
        .builders(&Registry::v1_34())
        .unwrap()
        .remove(0);
    builder
        .threads(1)
        .seed(1)
        .percentage_of_nodes_to_score(100)
        .fast_path(fast_path)
        .build_worker()
        .unwrap()
}

fn unschedulable(
    r: Result<sched_core::profile::ScheduleResult, ScheduleError>,
) -> (String, Vec<(String, Vec<String>)>) {
    match r {
        Err(ScheduleError::Unschedulable(fit)) => (
            fit.to_string(),
            fit.failures()
                .iter()
                .map(|f| (f.node.clone(), f.messages.clone()))
                .collect(),
        ),
        other => panic!("expected a FitError, got {other:?}"),
    }
}

/// Kind 3: only the named node is filtered; the others are reported as outside
/// NodeAffinity's PreFilterResult, not with their first failing filter.
#[test]
fn pre_filter_result_narrows_the_nodes() {
    for fast_path in [true, false] {
        let mut w = v1_34(fast_path);
        let r = w.schedule(&pinned(&["node-b"]), &cluster(false)).unwrap();
        assert_eq!(
            (r.node.as_str(), r.evaluated_nodes, r.feasible_nodes),
            ("node-b", 1, 1)
        );
        // kube's round robin advances by the nodes processed.
        assert_eq!(w.next_start_index(), 1);

        let (text, reasons) = unschedulable(w.schedule(&pinned(&["node-b"]), &cluster(true)));
        assert_eq!(
            text,
            "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't satisfy \
             plugin(s) [NodeAffinity].",
            "fast path {fast_path}"
        );
        let outside = vec!["node(s) didn't satisfy plugin(s) [NodeAffinity]".to_string()];
        assert_eq!(
            reasons,
            vec![
                ("node-a".to_string(), outside.clone()),
                (
                    "node-b".to_string(),
                    vec!["node(s) were unschedulable".to_string()]
                ),
                ("node-c".to_string(), outside),
            ]
        );

        // Names of no node: nothing is filtered, every node is outside.
        let (text, _) = unschedulable(w.schedule(&pinned(&["node-x"]), &cluster(false)));
        assert_eq!(
            text,
            "0/3 nodes are available: 3 node(s) didn't satisfy plugin(s) [NodeAffinity]."
        );

        // Conflicting names reject the pod in PreFilter.
        let conflicting = pod(
            "conflicting",
            json!({"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [
                    {"key": "metadata.name", "operator": "In", "values": ["node-a"]},
                    {"key": "metadata.name", "operator": "In", "values": ["node-b"]}
                ]}]
            }}}}),
        );
        let (text, reasons) = unschedulable(w.schedule(&conflicting, &cluster(false)));
        assert_eq!(
            text,
            "0/3 nodes are available: pod affinity terms conflict."
        );
        assert!(
            reasons
                .iter()
                .all(|(_, m)| m == &["pod affinity terms conflict".to_string()])
        );
    }
}

/// Kind 3, on the legacy path: kube v1.20 had no PreFilterResult; every node is filtered.
#[test]
fn legacy_profiles_filter_every_node() {
    let mut w: Worker = Policy::kube_default()
        .builder()
        .unwrap()
        .threads(1)
        .seed(1)
        .build_worker()
        .unwrap();
    let (text, _) = unschedulable(w.schedule(&pinned(&["node-b"]), &cluster(true)));
    assert_eq!(
        text,
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't match Pod's \
         node affinity."
    );
}

/// A predicate that narrows the pod to a fixed set of node names.
struct Narrow(&'static str, &'static [&'static str]);

impl Predicate for Narrow {
    type State = ();

    fn name(&self) -> &str {
        self.0
    }

    fn prepare(&self, _: &CycleContext<'_>) -> Result<Prepared<()>, PluginError> {
        Ok(Prepared::RunOn(
            (),
            self.1
                .iter()
                .map(|n| n.to_string())
                .collect::<BTreeSet<_>>(),
        ))
    }

    fn filter(&self, _: &CycleContext<'_>, _: &(), _: NodeRef<'_>) -> Result<(), Reason> {
        Ok(())
    }
}

fn narrowed_by(predicates: Vec<Narrow>) -> Profile {
    let mut b = Profile::builder().threads(1).seed(1);
    for p in predicates {
        b = b.predicate(p);
    }
    b.build().unwrap()
}

/// Kind 3 as a mechanism: several predicates' sets intersect; an empty intersection rejects
/// the pod with kube's wording, naming the predicates sorted.
#[test]
fn narrowed_sets_intersect() {
    let snapshot = cluster(false);
    let p = pod("p", json!({}));
    let profile = narrowed_by(vec![
        Narrow("Zeta", &["node-a", "node-b"]),
        Narrow("Alpha", &["node-b", "node-c"]),
    ]);
    let mut cache = profile.create_cache();
    let r = profile.schedule(&mut cache, &p, &snapshot).unwrap();
    assert_eq!((r.node.as_str(), r.evaluated_nodes), ("node-b", 1));
    // A node outside a predicate's set fails that predicate in fits_on (node-a is outside
    // Alpha's).
    assert_eq!(
        profile.fits_on(&p, &snapshot, 0).unwrap(),
        Err(vec![("Alpha".to_string(), Reason::OutsidePreFilterResult)])
    );
    assert_eq!(profile.fits_on(&p, &snapshot, 1).unwrap(), Ok(()));

    let profile = narrowed_by(vec![
        Narrow("Zeta", &["node-a"]),
        Narrow("Alpha", &["node-c"]),
    ]);
    let (text, reasons) = unschedulable(profile.schedule(&mut cache, &p, &snapshot));
    assert_eq!(
        text,
        "0/3 nodes are available: node(s) didn't satisfy plugin(s) [Alpha Zeta] simultaneously."
    );
    assert_eq!(reasons.len(), 3);

    let profile = narrowed_by(vec![Narrow("Only", &[])]);
    let (text, _) = unschedulable(profile.schedule(&mut cache, &p, &snapshot));
    assert_eq!(
        text,
        "0/3 nodes are available: node(s) didn't satisfy plugin Only."
    );

    // A node left out by two predicates names both; a node in their sets is filtered.
    let profile2 = Profile::builder()
        .threads(1)
        .predicate(Narrow("Zeta", &["node-b"]))
        .predicate(Narrow("Alpha", &["node-b", "node-c"]))
        .predicate(predicate_fn("NoB", |_, n| {
            if n.name() == "node-b" {
                Err(Reason::Unschedulable)
            } else {
                Ok(())
            }
        }))
        .build()
        .unwrap();
    let (text, reasons) = unschedulable(profile2.schedule(&mut cache, &p, &snapshot));
    assert_eq!(
        text,
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 node(s) didn't satisfy \
         plugin(s) [Alpha Zeta]."
    );
    assert_eq!(
        reasons[0].1,
        vec!["node(s) didn't satisfy plugin(s) [Alpha Zeta]"]
    );
}

fn storage(claims: Vec<PersistentVolumeClaim>) -> StorageObjects {
    let mut s = StorageObjects::new();
    s.storage_classes = vec![
        serde_json::from_value::<StorageClass>(json!({
            "kind": "StorageClass",
            "metadata": {"name": "fast"},
            "provisioner": "example.com/fast",
            "volumeBindingMode": "Immediate"
        }))
        .unwrap(),
    ];
    s.persistent_volume_claims = claims;
    s
}

fn unbound_claim(name: &str) -> PersistentVolumeClaim {
    serde_json::from_value(json!({
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"storageClassName": "fast", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}
    }))
    .unwrap()
}

/// Kind 5: a missing claim or an unbound `Immediate` claim rejects the pod before any filter
/// runs: every node gets the message (not the cordoned node's own reason), and the summary
/// prints it without a count.
#[test]
fn pre_filter_rejects_the_whole_pod() {
    for fast_path in [true, false] {
        let mut w = v1_34(fast_path);
        let mut snapshot = cluster(true);
        snapshot.set_storage(storage(vec![unbound_claim("scratch")]));

        let r = w.schedule(&with_claim("data"), &snapshot);
        let Err(ScheduleError::Unschedulable(fit)) = &r else {
            panic!("{r:?}");
        };
        assert_eq!(
            fit.pre_filter_message.as_deref(),
            Some("persistentvolumeclaim \"data\" not found")
        );
        assert_eq!(
            fit.failures()[1].codes,
            vec![(
                "VolumeRestrictions".to_string(),
                Reason::Volume(VolumeProblem::ClaimNotFound)
            )]
        );
        let (text, reasons) = unschedulable(r);
        assert_eq!(
            text,
            "0/3 nodes are available: persistentvolumeclaim \"data\" not found."
        );
        assert!(
            reasons
                .iter()
                .all(|(_, m)| m == &["persistentvolumeclaim \"data\" not found".to_string()])
        );

        let (text, reasons) = unschedulable(w.schedule(&with_claim("scratch"), &snapshot));
        assert_eq!(
            text,
            "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims."
        );
        assert_eq!(reasons.len(), 3);
        // The round robin does not move when PreFilter rejects.
        assert_eq!(w.next_start_index(), 0);
        // Preemption's dry run sees the rejection on any node.
        assert_eq!(
            w.fits_on(&with_claim("scratch"), &snapshot, 0).unwrap(),
            Err(vec![(
                "VolumeBinding".to_string(),
                Reason::UnboundImmediateClaims
            )])
        );
    }
}

/// Kind 5 on the legacy path: kube v1.20 counted a PreFilter rejection on every node, after
/// the filters before it.
#[test]
fn legacy_profiles_count_the_rejection_per_node() {
    let policy = Policy::from_json(
        r#"{"kind": "Policy", "apiVersion": "v1",
            "predicates": [{"name": "CheckNodeUnschedulable"}, {"name": "CheckVolumeBinding"}],
            "priorities": []}"#,
    )
    .unwrap();
    let mut w: Worker = policy
        .builder()
        .unwrap()
        .threads(1)
        .seed(1)
        .build_worker()
        .unwrap();
    let mut snapshot = cluster(true);
    snapshot.set_storage(storage(vec![unbound_claim("scratch")]));
    let r = w.schedule(&with_claim("scratch"), &snapshot);
    let Err(ScheduleError::Unschedulable(fit)) = &r else {
        panic!("{r:?}");
    };
    assert_eq!(fit.pre_filter_message, None);
    assert_eq!(
        fit.to_string(),
        "0/3 nodes are available: 1 node(s) were unschedulable, 2 pod has unbound immediate \
         PersistentVolumeClaims."
    );
}
